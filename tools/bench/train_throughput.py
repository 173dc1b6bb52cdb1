"""Training-step throughput of shardc against PyTorch on CPU, side by side in one run.

    /usr/bin/python3 tools/bench/train_throughput.py --shardc build/tools/shardc/shardc \
        --shardrun build/tools/shardrun/shardrun --work /tmp/bench [--steps 20] [--threads 2] \
        [--bf16] [--fused] [--seq T]

Model: the test GPT (tests/models/export_tiny_gpt.py) at d=256, 4 layers, 4 heads, T=128
(--seq), B=8, vocabulary 2048; AdamW (PyTorch defaults, lr 1e-3); the same weights (read from the ONNX
export) and the same batches on both sides. PyTorch runs in this process with
torch.set_num_threads(THREADS); shardrun runs `--steps` with `--threads THREADS` and reports
each step's time in its metrics. The first WARMUP steps are excluded; medians are reported,
with the ratio ours/PyTorch in tokens per second (above 1: shardc is faster).
With --bf16 the same run also times `shardc --precision bf16` and PyTorch under CPU autocast
(torch.autocast("cpu", dtype=torch.bfloat16): its matrix products in bf16, the rest f32), and
reports the four side by side: bf16 against PyTorch's bf16, and each side's bf16 against its
own fp32.
With --fused the same run also times `shardc --fuse-attention on` (fp32; the GPT's causal mask
buffer becomes the fused op's causal flag) against shardc's unfused step.
Not a test: timings on a shared machine are noisy, run it on a quiet one.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, os.pardir, os.pardir, "tests", "models")
sys.path.insert(0, MODELS)
sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "tests", "e2e"))
import e2e_util  # noqa: E402
import export_tiny_gpt as gpt  # noqa: E402
import train_reference  # noqa: E402

WARMUP = 3
LR = 1e-3


def configure_model(seq=128):
    # The test GPT reads its sizes from module constants when it is built: set the
    # benchmark's before building it.
    gpt.VOCAB, gpt.BLOCK, gpt.D_MODEL, gpt.N_LAYER, gpt.N_HEAD = 2048, seq, 256, 4, 4
    gpt.BATCH, gpt.SEQ = 8, seq


def export_model_and_data(work):
    """Exports the benchmark GPT as configured (gpt.BATCH rows a step) into WORK/model and
    writes 4 batches of train_reference.py's data for it into WORK/data; returns (the model's
    directory, the data's directory, the data by input name)."""
    model_dir = os.path.join(work, "model")
    data_dir = os.path.join(work, "data")
    os.makedirs(data_dir, exist_ok=True)
    gpt.export_gpt(gpt.TinyGPT, argparse.Namespace(out=model_dir, static_batch=None))
    data = train_reference.make_data("tiny_gpt", gpt, 4, gpt.BATCH, np.random.default_rng(0))
    for name, value in data.items():
        np.save(os.path.join(data_dir, name + ".npy"), value)
    return model_dir, data_dir, data


def torch_step_times(model_dir, data, steps, threads, bf16=False):
    torch.set_num_threads(threads)
    model = gpt.TinyGPT()
    train_reference.load_onnx_weights(model, os.path.join(model_dir, "model.onnx"))
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    times, losses = [], []
    n = len(data["idx"])
    for k in range(1, steps + 1):
        rows = [r % n for r in range((k - 1) * gpt.BATCH, k * gpt.BATCH)]
        idx, targets = torch.from_numpy(data["idx"][rows]), torch.from_numpy(data["targets"][rows])
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(idx, targets)[0]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - start)
        losses.append(loss.item())
    return times, losses


def main():
    p = e2e_util.argument_parser(__doc__, steps=20)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--bf16", action="store_true",
                   help="also time shardc --precision bf16 and PyTorch's CPU autocast bf16")
    p.add_argument("--fused", action="store_true",
                   help="also time shardc --fuse-attention on (fp32)")
    p.add_argument("--seq", type=int, default=128, help="sequence length T")
    args = e2e_util.parse_args(p)
    configure_model(args.seq)
    model_dir, data_dir, data = export_model_and_data(args.work)

    runs = {}  # name -> (step times after the warm-up, losses)

    def time_shardc(name, flags):
        bundle = os.path.join(args.work, name.replace(" ", "_") + ".shard")
        subprocess.run([args.shardc, os.path.join(model_dir, "model.onnx"), "--mode", "train",
                        *flags, "-o", bundle], check=True)
        metrics = bundle + ".jsonl"
        subprocess.run([args.shardrun, bundle, "--steps", str(args.steps), "--data", data_dir,
                        "--lr", str(LR), "--threads", str(args.threads), "--metrics", metrics],
                       check=True)
        ours = [json.loads(line) for line in open(metrics)]
        runs[name] = ([m["step_time_ms"] / 1000.0 for m in ours][WARMUP:],
                      [m["loss"] for m in ours])

    for precision in ["fp32"] + (["bf16"] if args.bf16 else []):
        time_shardc(f"shardc {precision}", ["--precision", precision])
        times, losses = torch_step_times(model_dir, data, args.steps, args.threads,
                                         bf16=precision == "bf16")
        runs[f"PyTorch {precision}"] = (times[WARMUP:], losses)
    if args.fused:
        time_shardc("shardc fused", ["--fuse-attention", "on"])

    tokens = gpt.BATCH * gpt.SEQ
    tps = {name: tokens / statistics.median(times) for name, (times, _) in runs.items()}
    print(f"GPT d=256 L=4 H=4 T={gpt.SEQ} B=8 V=2048, AdamW, {args.steps} steps "
          f"({WARMUP} warm-up excluded), {args.threads} threads")
    for name, (times, _) in runs.items():
        print(f"  {name:13s}: median step {statistics.median(times) * 1e3:8.1f} ms, "
              f"{tps[name]:8.0f} tokens/s")

    def drift(a, b):
        return max(abs(x - y) / y for x, y in zip(runs[a][1], runs[b][1]))

    print(f"  ratio shardc fp32 / PyTorch fp32 (tokens/s): "
          f"{tps['shardc fp32'] / tps['PyTorch fp32']:.3f}; max loss relative difference "
          f"{drift('shardc fp32', 'PyTorch fp32'):.2e}")
    if args.bf16:
        print(f"  ratio shardc bf16 / PyTorch autocast bf16: "
              f"{tps['shardc bf16'] / tps['PyTorch bf16']:.3f}; max loss relative difference "
              f"{drift('shardc bf16', 'PyTorch bf16'):.2e} (the policies differ: under autocast "
              f"the ops that read a product's bf16 result, such as GELU, run in bf16; "
              f"shardc widens it to f32)")
        print(f"  ratio bf16 / fp32: shardc {tps['shardc bf16'] / tps['shardc fp32']:.3f}, "
              f"PyTorch {tps['PyTorch bf16'] / tps['PyTorch fp32']:.3f}")
    if args.fused:
        print(f"  ratio shardc fused / shardc fp32: {tps['shardc fused'] / tps['shardc fp32']:.3f}"
              f"; against PyTorch fp32 {tps['shardc fused'] / tps['PyTorch fp32']:.3f}; max loss "
              f"relative difference from the unfused step {drift('shardc fused', 'shardc fp32'):.2e}")


if __name__ == "__main__":
    main()
