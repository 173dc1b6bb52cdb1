"""torch.repeat_interleave trains like PyTorch, one rank and two, in both export styles.

    test_repeat_interleave.py --shardc PATH --shardrun PATH --work DIR

With dynamic_axes, torch.onnx.export writes repeat_interleave over a dynamic length as a Loop
whose body reads one slice of a SplitToSequence and appends it, repeated, to a sequence that a
ConcatFromSequence joins (Hugging Face GPT-J's rotary tables come out this way). shardc unrolls
such a Loop at import once --input-shape gives the length, and resolves the sequences to lists
of values. The model repeats a projection of its input along the sequence (dim 1) and along
the batch (dim 0: a loop over the rows, whose split under data parallelism the partitioner
must keep whole or reshard), then reduces both into a loss. It trains 10 AdamW and 10 SGD steps
on 2 batches of 4 rows, on one rank, dp=2 and ZeRO-1: every step's loss within 1e-5 (relative)
of PyTorch's on the same weights and batches. The dynamic export must hold the Loop. Prints
PASS/FAIL per case and `N passed, M failed`.
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

ROWS, SEQ, FEATURES, STEPS, LR = 4, 5, 6, 10, 1e-2
CONFIGS = [("one", []), ("dp2", ["--gpus", "2", "--strategy", "dp"]),
           ("zero1", ["--gpus", "2", "--strategy", "zero1"])]


class Repeats(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(FEATURES, FEATURES)
        self.mix = torch.nn.Linear(FEATURES, 3)

    def forward(self, x):
        h = torch.tanh(self.proj(x))                      # [B, T, F]
        along_seq = torch.repeat_interleave(h, 2, dim=1)  # [B, 2T, F]
        along_batch = torch.repeat_interleave(h, 3, dim=0)  # [3B, T, F]
        return (self.mix(along_seq).pow(2).mean() +
                self.mix(along_batch).sigmoid().mean())


def build():
    torch.manual_seed(0)
    return Repeats()


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, timeout=300))
    args.work = os.path.abspath(args.work)
    shutil.rmtree(args.work, ignore_errors=True)
    data = torch.randn(2 * ROWS, SEQ, FEATURES, generator=torch.Generator().manual_seed(1))
    expected = {name: e2e_util.pytorch_losses(build(), [data], ROWS, STEPS, LR, name)
                for name in ("adamw", "sgd")}

    def case(style):
        out = os.path.join(args.work, style)
        dynamic = style == "dynamic"
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            proto = export_util.export_model(
                build(), (data[:ROWS],), ["x"], ["loss"], out,
                dynamic_axes={"x": {0: "batch", 1: "seq"}} if dynamic else None)
        ops = {n.op_type for n in proto.graph.node}
        if dynamic and not {"Loop", "SplitToSequence", "ConcatFromSequence"} <= ops:
            return f"the dynamic export has no Loop over sequences (ops: {sorted(ops)})"
        data_dir = os.path.join(out, "data")
        os.makedirs(data_dir)
        np.save(os.path.join(data_dir, "x.npy"), data.numpy())
        return e2e_util.train_against_pytorch(args, out, data_dir, CONFIGS, expected, STEPS, LR)

    e2e_util.run_cases([(f"repeats_{style}", lambda style=style: case(style))
                        for style in ("static", "dynamic")])


if __name__ == "__main__":
    main()
