"""TopK (torch.topk) trains like PyTorch, on one rank, under data and tensor parallelism.

    test_topk.py --shardc PATH --shardrun PATH --work DIR

A mixture-of-experts router as MoE layers write it: router logits, torch.topk of 2 of 5
experts per row, a softmax over the chosen logits weighting the chosen experts' outputs
(torch.gather at the top-k indices), then a classifier; beside it a top-3 of the smallest
activations of a second branch along the feature axis (largest=False), summed into the
features. The gradient reaches the router only through the top-k values, the experts only at
the chosen indices. Exported with and without dynamic_axes (the export must hold TopK), it
trains 10 AdamW and 10 SGD steps on 2 batches of 8 rows: on one rank within 1e-5 (relative) of
PyTorch's losses on the same weights and batches, and on dp=2, ZeRO-3 and tp=2 within 1e-5 too.
Ties are broken as PyTorch's CPU topk does here: the data has none. Prints PASS/FAIL per case
and `N passed, M failed`.
"""

import contextlib
import os
import shutil
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "models"))
import e2e_util  # noqa: E402
import export_util  # noqa: E402

ROWS, STEPS, LR = 8, 10, 1e-2
EXPERTS, CHOSEN, HIDDEN = 5, 2, 4
CONFIGS = [("one", []), ("dp2", ["--gpus", "2", "--strategy", "dp"]),
           ("zero3", ["--gpus", "2", "--strategy", "zero3"]),
           ("tp2", ["--gpus", "2", "--strategy", "tp=2"])]


class TopKRouter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.router = nn.Linear(6, EXPERTS)
        self.experts = nn.Linear(6, EXPERTS * HIDDEN)
        self.side = nn.Linear(6, 8)
        self.head = nn.Linear(HIDDEN, 3)

    def forward(self, x, labels):
        values, index = torch.topk(self.router(x), CHOSEN, dim=-1)
        weights = torch.softmax(values, dim=-1)
        outputs = self.experts(x).view(-1, EXPERTS, HIDDEN)
        chosen = torch.gather(outputs, 1, index.unsqueeze(-1).expand(-1, -1, HIDDEN))
        h = (weights.unsqueeze(-1) * chosen).sum(dim=1)
        smallest, _ = torch.topk(self.side(x), 3, dim=1, largest=False)
        h = h + smallest.sum(dim=1, keepdim=True)
        return F.cross_entropy(self.head(torch.tanh(h)), labels)


def build():
    torch.manual_seed(0)
    return TopKRouter()


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, timeout=300))
    args.work = os.path.abspath(args.work)
    shutil.rmtree(args.work, ignore_errors=True)
    g = torch.Generator().manual_seed(1)
    data = {"x": torch.randn(2 * ROWS, 6, generator=g),
            "labels": torch.randint(0, 3, (2 * ROWS,), generator=g)}
    expected = {name: e2e_util.pytorch_losses(build(), list(data.values()), ROWS, STEPS, LR, name)
                for name in ("adamw", "sgd")}

    def case(style):
        out = os.path.join(args.work, style)
        names = list(data)
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            proto = export_util.export_model(
                build(), tuple(t[:ROWS] for t in data.values()), names, ["loss"], out,
                dynamic_axes={n: {0: "batch"} for n in names} if style == "dynamic" else None,
                keep_symbolic=True)
        if "TopK" not in {n.op_type for n in proto.graph.node}:
            return "the export has no TopK"
        data_dir = os.path.join(out, "data")
        os.makedirs(data_dir)
        for n, t in data.items():
            np.save(os.path.join(data_dir, e2e_util.npy_name(n)), t.numpy())
        return e2e_util.train_against_pytorch(args, out, data_dir, CONFIGS, expected, STEPS,
                                              LR)

    e2e_util.run_cases([(f"topk_router_{style}", lambda style=style: case(style))
                        for style in ("static", "dynamic")])


if __name__ == "__main__":
    main()
