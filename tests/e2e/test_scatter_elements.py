"""ScatterElements (torch's scatter and scatter_add) trains like PyTorch, one rank and two.

    test_scatter_elements.py --shardc PATH --shardrun PATH --work DIR

A model that writes a projection of each row into positions of another (`Tensor.scatter` along
dim 1, exported as ScatterElements with reduction none) and adds a third into zeros
(`scatter_add`, reduction add; in the dynamic export a scatter into zeros), with float data and float updates both depending on trained
weights, so that both gradients of the scatter (data: dy with the written positions zeroed;
updates: dy at them) reach the loss. Exported with and without dynamic_axes, it trains 10 AdamW
and 10 SGD steps on 2 batches of 8 rows, on one rank and on dp=2 (ZeRO-1 too): every step's
loss within 1e-5 (relative) of PyTorch's on the same weights and batches. The export must hold
ScatterElements. Prints PASS/FAIL per case and `N passed, M failed`.
"""

import contextlib
import os
import shutil
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "models"))
import e2e_util  # noqa: E402
import export_util  # noqa: E402

ROWS, STEPS, LR = 8, 10, 1e-2
CONFIGS = [("one", []), ("dp2", ["--gpus", "2", "--strategy", "dp"]),
           ("zero1", ["--gpus", "2", "--strategy", "zero1"])]


class Scatters(torch.nn.Module):
    """`additive`: the second scatter as scatter_add (reduction add); else as scatter into the
    zeros, the same values at distinct positions (torch 1.13 exports scatter_add only with
    static index sizes, so the dynamic export takes this form)."""

    def __init__(self, additive=True):
        super().__init__()
        self.additive = additive
        self.hidden = torch.nn.Linear(5, 6)
        self.write = torch.nn.Linear(5, 3)
        self.add = torch.nn.Linear(5, 3)
        self.out = torch.nn.Linear(6, 2)
        # Distinct positions in a row (a write twice to one place has no defined winner), the
        # same for every row: the exporter's scatter_add wants the index's sizes known, which
        # expand to the batch keeps in the dynamic export.
        self.register_buffer("where", torch.tensor([[4, 0, 3]]))

    def forward(self, x):
        h = torch.tanh(self.hidden(x))
        where = self.where.expand(x.shape[0], 3)
        written = h.scatter(1, where, self.write(x))
        gate = torch.sigmoid(self.add(x))
        added = (torch.zeros_like(h).scatter_add(1, where, gate) if self.additive
                 else torch.zeros_like(h).scatter(1, where, gate))
        return self.out(written + added).pow(2).mean()


def build(additive=True):
    torch.manual_seed(0)
    return Scatters(additive)


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, timeout=300))
    args.work = os.path.abspath(args.work)
    shutil.rmtree(args.work, ignore_errors=True)
    data = torch.randn(2 * ROWS, 5, generator=torch.Generator().manual_seed(1))
    expected = {name: e2e_util.pytorch_losses(build(), [data], ROWS, STEPS, LR, name)
                for name in ("adamw", "sgd")}

    def case(style):
        out = os.path.join(args.work, style)
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            proto = export_util.export_model(
                build(additive=style == "static"), (data[:ROWS],), ["x"], ["loss"], out,
                dynamic_axes={"x": {0: "batch"}} if style == "dynamic" else None)
        if "ScatterElements" not in {n.op_type for n in proto.graph.node}:
            return "the export has no ScatterElements"
        data_dir = os.path.join(out, "data")
        os.makedirs(data_dir)
        np.save(os.path.join(data_dir, "x.npy"), data.numpy())
        return e2e_util.train_against_pytorch(args, out, data_dir, CONFIGS, expected, STEPS,
                                              LR)

    e2e_util.run_cases([(f"scatters_{style}", lambda style=style: case(style))
                        for style in ("static", "dynamic")])


if __name__ == "__main__":
    main()
