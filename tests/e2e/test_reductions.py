"""The Reduce* ops shardc composes of others train like PyTorch, one rank and two.

    test_reductions.py --shardc PATH --shardrun PATH --work DIR

A model written with what PyTorch exports as them: `nn.utils.weight_norm` (ReduceL2 over the
weight's rows), `torch.norm(p=1)` (ReduceL1), `torch.norm(p=2)` of a vector (ReduceL2 over
all axes), `torch.logsumexp` (ReduceLogSumExp), `torch.amin` (ReduceMin) and `x.pow(2).sum`
spelt `torch.sum(x * x)` (a Mul and ReduceSum). Exported with and without dynamic_axes, it
trains 10 AdamW steps and 10 SGD steps on 2 batches of 8 rows, on one rank, on dp=2, ZeRO-1,
ZeRO-3 and dp=2 with 2 microbatches; every step's loss must be within 1e-5 (relative) of
PyTorch's on the same weights and batches. Its loss adds the output weight's norm, which does
not depend on the batch, to a mean over it: the partitioner sums the batch part first, and the
data-parallel passes must not sum the whole loss and gradient again.
The export must hold the ops named above, so that a change of the exporter cannot make the
test pass without them. Prints PASS/FAIL per case and `N passed, M failed`.
"""

import contextlib
import os
import shutil
import sys

import numpy as np
import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "models"))
import e2e_util  # noqa: E402
import export_util  # noqa: E402

ROWS, STEPS, LR = 8, 10, 1e-2
# The loss adds a term of the weights alone (the output weight's norm) to a mean over the
# batch: its gradient and the loss are whole before the data-parallel reduction, which must
# then not sum them again (SGD shows a gradient summed twice; AdamW would hide it).
CONFIGS = [("one", []), ("dp2", ["--gpus", "2", "--strategy", "dp"]),
           ("zero1", ["--gpus", "2", "--strategy", "zero1"]),
           ("zero3", ["--gpus", "2", "--strategy", "zero3"]),
           ("dp2_mb2", ["--gpus", "2", "--strategy", "dp", "--micro-batches", "2"])]
EXPECTED_OPS = {"ReduceL2", "ReduceL1", "ReduceLogSumExp", "ReduceMin"}


class Norms(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.utils.weight_norm(torch.nn.Linear(8, 16))
        self.out = torch.nn.Linear(16, 4)

    def forward(self, x):
        h = torch.tanh(self.hidden(x))
        h = h / (torch.norm(h, p=1, dim=1, keepdim=True) + 1.0)
        z = self.out(h)
        spread = torch.logsumexp(z, dim=1) - 0.5 * torch.amin(z, dim=1)
        return spread.mean() + 1e-3 * torch.norm(self.out.weight.flatten(), p=2)


def build():
    torch.manual_seed(0)
    return Norms()


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, timeout=300))
    args.work = os.path.abspath(args.work)
    shutil.rmtree(args.work, ignore_errors=True)
    data = torch.randn(2 * ROWS, 8, generator=torch.Generator().manual_seed(1))
    expected = {name: e2e_util.pytorch_losses(build(), [data], ROWS, STEPS, LR, name)
                for name in ("adamw", "sgd")}

    def case(style):
        out = os.path.join(args.work, style)
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            proto = export_util.export_model(
                build(), (data[:ROWS],), ["x"], ["loss"], out,
                dynamic_axes={"x": {0: "batch"}} if style == "dynamic" else None)
        missing = EXPECTED_OPS - {n.op_type for n in proto.graph.node}
        if missing:
            return f"the export has no {sorted(missing)}"
        data_dir = os.path.join(out, "data")
        os.makedirs(data_dir)
        np.save(os.path.join(data_dir, "x.npy"), data.numpy())
        return e2e_util.train_against_pytorch(args, out, data_dir, CONFIGS, expected, STEPS,
                                              LR)

    e2e_util.run_cases([(f"norms_{style}", lambda style=style: case(style))
                        for style in ("static", "dynamic")])


if __name__ == "__main__":
    main()
