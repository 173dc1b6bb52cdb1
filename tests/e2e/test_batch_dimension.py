"""A model whose batch is not dim 0 is split along its real batch, never along another.

    test_batch_dimension.py --shardc PATH --shardrun PATH --work DIR

PyTorch's nn.TransformerEncoder with its default batch_first=False takes [seq, batch] inputs
(tests/models/export_seq_first_transformer.py, a language model), exported with dynamic_axes
and without. nn.MultiheadAttention merges the batch into the minor part of [seq * batch,
embed]; the batch is found along dim 1 all the same, and the data set is 4 batches of
[seq, 8] stacked along dim 0. Each of these runs must follow the single-rank run (every step's
loss within 1e-5 relative, 10 AdamW steps on the same data): --gpus 2 with dp=2 (each rank
reads its 4 columns of every batch: the program's inputs say their batch is dim 1),
dp=2,zero=3, --micro-batches 2 on one device, and tensor parallelism alone (--strategy tp=2,
and tp=2,sp=1: every device takes the whole batch). Splitting dim 0 (the sequence) as if it
were the batch trains a different model, which the comparison catches. Prints PASS/FAIL per
case and `N passed, M failed`.
"""

import json
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "models"))
import e2e_util  # noqa: E402
import export_seq_first_transformer as model  # noqa: E402
import export_util  # noqa: E402

STEPS = 10
ROWS = 8


def run(args, onnx_path, data, tag, flags):
    out = os.path.join(args.work, tag)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    bundle = os.path.join(out, "m.shard")
    res = e2e_util.run_tool([args.shardc, onnx_path, "-o", bundle, *flags], args.timeout)
    if not res.ok:
        return res
    metrics = os.path.join(out, "m.jsonl")
    res = e2e_util.run_tool([args.shardrun, bundle, "--steps", str(STEPS), "--data", data,
                             "--lr", "1e-3", "--metrics", metrics], args.timeout)
    if not res.ok:
        raise RuntimeError(f"shardrun: {res.describe()}")
    return [json.loads(line)["loss"] for line in open(metrics)]


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, timeout=300.0))

    # Batches along the data set's dim 0 (the sequence positions of the step), as shardrun cuts
    # them: every input is [SEQ * batches, ROWS].
    rng = np.random.default_rng(7)
    data = os.path.join(args.work, "data")
    os.makedirs(data, exist_ok=True)
    for name in ("src", "targets"):
        np.save(os.path.join(data, name + ".npy"),
                rng.integers(0, model.VOCAB, (model.SEQ * 4, ROWS)))

    cases = []
    for style in ("dynamic", "static"):
        def case(style=style):
            export = os.path.join(args.work, f"export_{style}")
            e2e_util.export_test_model("seq_first_transformer", export,
                                       static_batch=ROWS if style == "static" else None)
            onnx_path = os.path.join(export, "model.onnx")
            if style == "dynamic":
                onnx_path = export_util.with_global_batch(onnx_path, ROWS, model.BATCH_DIM)
            single = run(args, onnx_path, data, f"{style}_single", [])
            if not isinstance(single, list):
                return f"single rank: {single.describe()}"
            details = []
            for tag, flags in (("dp2", ["--gpus", "2", "--strategy", "dp"]),
                               ("dp2_zero3", ["--gpus", "2", "--strategy", "dp=2,zero=3"]),
                               ("mb2", ["--micro-batches", "2"]),
                               ("tp2", ["--gpus", "2", "--strategy", "tp=2"]),
                               ("tp2_sp", ["--gpus", "2", "--strategy", "tp=2,sp=1"])):
                res = run(args, onnx_path, data, f"{style}_{tag}", flags)
                if not isinstance(res, list):
                    return f"{' '.join(flags)}: {res.describe()}"
                worst = max(abs(a - b) / abs(b) for a, b in zip(res, single))
                if len(res) != STEPS or worst > 1e-5:
                    return f"{' '.join(flags)}: worst loss rel diff {worst:.3g}"
                details.append(f"{tag} {worst:.2g}")
            return None, "follow the single rank: " + ", ".join(details)
        cases.append((f"seq_first_transformer_{style}", case))
    e2e_util.run_cases(cases)


if __name__ == "__main__":
    main()
