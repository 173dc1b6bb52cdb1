"""Training-step throughput of shardc against PyTorch 2.x on CPU, side by side in one run.

    python3 tools/bench/train_throughput.py --shardc build/tools/shardc/shardc \
        --shardrun build/tools/shardrun/shardrun --work /tmp/bench [--rows small,gpt2] \
        [--steps 12] [--threads 2] [--torch-venv DIR]

Rows (the test GPT, tests/models/export_tiny_gpt.py, at two sizes; GELU in its erf form):
  small: d=192, 4 layers, 3 heads, T=128, batch 16, vocabulary 4096
  gpt2:  GPT-2 124M's shape: d=768, 12 layers, 12 heads, T=128, batch 4, vocabulary 50257
AdamW (PyTorch's defaults, lr 1e-3); the same weights (the ONNX export's initializers) and the
same batches on both sides. Each row times, in this order and on the same machine:
  - shardc fp32 and shardc bf16 (`--precision bf16`): shardrun --threads T, its per-step times;
  - PyTorch 2.x eager fp32, torch.compile fp32 and eager under CPU autocast bf16, in a virtual
    environment of their own (--torch-venv, default .venv-bench beside the repository's .venv),
    which holds PyPI's torch and is created on first use: PyPI's torch brings several GB of CUDA
    libraries, so it is never part of the project's setup or tests.
The first WARMUP steps of each run are excluded (torch.compile compiles in its first step);
medians are reported, with the ratios PyTorch/shardc of the medians (above 1: shardc is faster),
then shardc fp32's top kernels from a second run with --trace, and the CPU's model and vector
flags. Not a test: timings on a shared machine are noisy, run it on a quiet one.
"""

import argparse
import collections
import json
import os
import platform
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, os.pardir, os.pardir))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import e2e_util  # noqa: E402
import export_tiny_gpt as gpt  # noqa: E402
import train_reference  # noqa: E402

WARMUP = 3
LR = 1e-3
ROWS = {
    "small": dict(VOCAB=4096, BLOCK=128, D_MODEL=192, N_LAYER=4, N_HEAD=3, BATCH=16, SEQ=128),
    "gpt2": dict(VOCAB=50257, BLOCK=128, D_MODEL=768, N_LAYER=12, N_HEAD=12, BATCH=4, SEQ=128),
}
TORCH_PACKAGES = ["torch>=2.1", "numpy", "onnx"]


def torch_venv_python(venv):
    """The interpreter of the benchmark's PyTorch 2.x environment, created on first use."""
    python = os.path.join(venv, "bin", "python")
    if os.path.exists(python) and subprocess.run(
            [python, "-c", "import torch, onnx, numpy; assert int(torch.__version__[0]) >= 2"],
            capture_output=True).returncode == 0:
        return python
    print(f"train_throughput: creating {venv} with {' '.join(TORCH_PACKAGES)} from PyPI "
          f"(once; several GB)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    *TORCH_PACKAGES], check=True)
    return python


def export_row(work, config):
    """Exports the GPT of `config` into WORK/model and writes 4 batches of data into WORK/data."""
    for name, value in config.items():
        setattr(gpt, name, value)
    model_dir, data_dir = os.path.join(work, "model"), os.path.join(work, "data")
    os.makedirs(data_dir, exist_ok=True)
    gpt.export_gpt(gpt.TinyGPT, argparse.Namespace(out=model_dir, static_batch=None))
    data = train_reference.make_data("tiny_gpt", gpt, 4, gpt.BATCH, np.random.default_rng(0))
    for name, value in data.items():
        np.save(os.path.join(data_dir, name + ".npy"), value)
    return model_dir, data_dir


def shardc_compile(args, work, model_dir, precision):
    """The training bundle of the exported model at `precision`."""
    bundle = os.path.join(work, f"{precision}.shard")
    subprocess.run([args.shardc, os.path.join(model_dir, "model.onnx"), "--mode", "train",
                    "--precision", precision, "-o", bundle], check=True, stdout=subprocess.DEVNULL)
    return bundle


def shardc_run(args, bundle, data_dir, trace=None):
    """(step seconds, losses, shardrun's summary line) of `--steps` steps of `bundle`."""
    metrics = bundle + ".jsonl"
    cmd = [args.shardrun, bundle, "--steps", str(args.steps), "--data", data_dir, "--lr", str(LR),
           "--threads", str(args.threads), "--metrics", metrics]
    if trace:
        cmd += ["--trace", trace]
    res = subprocess.run(cmd, check=True, capture_output=True, text=True)
    ours = [json.loads(line) for line in open(metrics)]
    summary = [line for line in res.stdout.splitlines() + res.stderr.splitlines()
               if line.startswith("shardrun: trained")]
    return ([m["step_time_ms"] / 1000.0 for m in ours], [m["loss"] for m in ours],
            summary[0] if summary else "")


def top_kernels(trace_path, count=8):
    """shardc's kernels by total time in a --trace file: [(kernel, total microseconds, share of
    all kernels' time, calls)]."""
    events = json.load(open(trace_path))
    events = events["traceEvents"] if isinstance(events, dict) else events
    total, calls = collections.Counter(), collections.Counter()
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "compute" and "kernel" in e.get("args", {}):
            total[e["args"]["kernel"]] += e["dur"]
            calls[e["args"]["kernel"]] += 1
    whole = sum(total.values()) or 1
    return [(k, us, us / whole, calls[k]) for k, us in total.most_common(count)]


def cpu_description():
    model, flags = platform.processor(), set()
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name") and model in ("", "x86_64"):
            model = line.split(":", 1)[1].strip()
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
    wanted = ["avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "amx_bf16",
              "amx_tile"]
    return model, [f for f in wanted if f in flags]


def main():
    p = e2e_util.argument_parser(__doc__, steps=12)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rows", default="small,gpt2")
    p.add_argument("--torch-venv", default=os.path.join(ROOT, ".venv-bench"))
    args = e2e_util.parse_args(p)
    python = torch_venv_python(args.torch_venv)
    model, flags = cpu_description()
    print(f"CPU: {model}; flags: {' '.join(flags)}; {args.threads} threads; {args.steps} steps, "
          f"{WARMUP} warm-up excluded; OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE', '(unset)')}", flush=True)
    for row in args.rows.split(","):
        config = ROWS[row]
        work = os.path.join(args.work, row)
        model_dir, data_dir = export_row(work, config)
        runs, summaries, bundles = {}, {}, {}
        for precision in ("fp32", "bf16"):
            bundles[precision] = shardc_compile(args, work, model_dir, precision)
            times, losses, summaries[precision] = shardc_run(args, bundles[precision], data_dir)
            runs[f"shardc {precision}"] = (times[WARMUP:], losses)
        out = os.path.join(work, "torch.json")
        subprocess.run([python, os.path.join(HERE, "torch_train_steps.py"), "--config",
                        json.dumps(config), "--model-dir", model_dir, "--data", data_dir,
                        "--steps", str(args.steps), "--threads", str(args.threads),
                        "--modes", "eager,compile,autocast", "--out", out], check=True)
        theirs = json.load(open(out))
        label = {"eager": "eager fp32", "compile": "compile fp32", "autocast": "autocast bf16"}
        for mode, result in theirs["modes"].items():
            runs[f"PyTorch {label[mode]}"] = (result["step_seconds"][WARMUP:], result["losses"])
        med = {name: statistics.median(times) for name, (times, _) in runs.items()}
        c = config
        print(f"\n{row}: GPT d={c['D_MODEL']} L={c['N_LAYER']} H={c['N_HEAD']} T={c['SEQ']} "
              f"B={c['BATCH']} V={c['VOCAB']}, AdamW; PyTorch {theirs['torch']}")
        for name, m in med.items():
            print(f"  {name:22s} median {m * 1e3:9.1f} ms/step")
        ours32, ours16 = med["shardc fp32"], med["shardc bf16"]
        print(f"  ratios (PyTorch median / shardc median; above 1: shardc faster):")
        for name in ("PyTorch eager fp32", "PyTorch compile fp32"):
            print(f"    {name} / shardc fp32: {med[name] / ours32:.3f}")
        print(f"    PyTorch autocast bf16 / shardc bf16: {med['PyTorch autocast bf16'] / ours16:.3f}")
        print(f"    shardc fp32 / shardc bf16: {ours32 / ours16:.3f}")
        drift = max(abs(x - y) / abs(y) for x, y in
                    zip(runs["shardc fp32"][1], runs["PyTorch eager fp32"][1]))
        print(f"  loss, shardc fp32 against PyTorch eager: max relative difference {drift:.2e}")
        for precision in ("fp32", "bf16"):
            print(f"  shardc {precision}: {summaries[precision]}")
        trace = os.path.join(work, "fp32.trace.json")
        shardc_run(args, bundles["fp32"], data_dir, trace=trace)
        print("  shardc fp32 top kernels (--trace):")
        for kernel, us, share, calls in top_kernels(trace):
            print(f"    {kernel:20s} {us / 1e3 / args.steps:8.1f} ms/step {share * 100:5.1f}% "
                  f"{calls // args.steps:5d} calls/step")


if __name__ == "__main__":
    main()
