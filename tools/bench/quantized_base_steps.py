"""Step time and planned memory of LoRA training with the frozen base in fp32, bf16, int8 and
nf4 (shardc --base-dtype), measured side by side on this machine.

    quantized_base_steps.py --shardc PATH --shardrun PATH --work DIR
                            [--layers 12 --d-model 768 --heads 12 --seq 256 --batch 4]
                            [--steps 6 --rounds 2]

The test GPT (tests/models/export_tiny_gpt.py, compile_scale.py's export, with its weights;
vocabulary 32000) with LoRA r=8 on every linear layer (c_attn|c_proj|mlp.0|mlp.2), --remat none,
one rank on every core. The four bundles run in turn, --rounds times (ABCD ABCD), --steps steps
each on one random batch; the first step of each run is left out. Prints each dtype's median
step time over the rounds, its ratio to fp32's, and the planned peak and weights region.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compile_scale  # noqa: E402

DTYPES = ("fp32", "bf16", "int8", "nf4")
TARGETS = "c_attn|c_proj|mlp.0|mlp.2"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shardc", required=True)
    p.add_argument("--shardrun", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--d-model", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    model_dir = os.path.join(args.work, "model")
    model = os.path.join(model_dir, "model.onnx")
    if not os.path.exists(model):
        export = argparse.Namespace(vocab=32000, seq=args.seq, export_width=None,
                                    layers=args.layers, d_model=args.d_model, heads=args.heads)
        compile_scale.export(export, model_dir)
    data = os.path.join(args.work, "data")
    os.makedirs(data, exist_ok=True)
    rng = np.random.default_rng(0)
    for name in ("idx", "targets"):
        np.save(os.path.join(data, f"{name}.npy"),
                rng.integers(0, 32000, (args.batch, args.seq)).astype(np.int64))
    shape = f"{args.batch}x{args.seq}"
    plans = {}
    for dtype in DTYPES:
        bundle = os.path.join(args.work, f"{dtype}.shard")
        subprocess.run([args.shardc, model, "--input-shape", f"idx={shape}", "--input-shape",
                        f"targets={shape}", "-o", bundle, "--lora", f"r=8,alpha=16,targets={TARGETS}",
                        "--base-dtype", dtype, "--remat", "none"], check=True,
                       capture_output=True, text=True)
        memory = json.load(open(os.path.join(bundle, "plan.json")))["memory_per_rank"][0]
        plans[dtype] = (memory["planned_peak_bytes"], memory["weights"]["bytes"])
    times = {dtype: [] for dtype in DTYPES}
    for _ in range(args.rounds):
        for dtype in DTYPES:
            bundle = os.path.join(args.work, f"{dtype}.shard")
            metrics = bundle + ".jsonl"
            subprocess.run([args.shardrun, bundle, "--data", data, "--steps", str(args.steps),
                            "--lr", "1e-4", "--metrics", metrics], check=True,
                           capture_output=True, text=True)
            times[dtype] += [json.loads(line)["step_time_ms"] for line in open(metrics)][1:]
    base = statistics.median(times["fp32"])
    print(f"LoRA r=8 on {TARGETS}, {args.layers} layers, d {args.d_model}, seq {args.seq}, "
          f"batch {args.batch}; median of {len(times['fp32'])} steps per dtype")
    for dtype in DTYPES:
        median = statistics.median(times[dtype])
        peak, weights = plans[dtype]
        print(f"  {dtype:5} {median:8.1f} ms/step  {median / base:5.3f}x fp32   planned peak "
              f"{peak / 1e6:8.1f} MB, weights region {weights / 1e6:7.1f} MB")


if __name__ == "__main__":
    main()
