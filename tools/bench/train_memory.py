"""Peak memory of a training run, shardrun against PyTorch on CPU, side by side in one run.

    /usr/bin/python3 tools/bench/train_memory.py --shardc build/tools/shardc/shardc \
        --shardrun build/tools/shardrun/shardrun --work /tmp/bench_memory [--steps 3] \
        [--shape gpt2-124m|small] [--threads 2]

Model: the test GPT (tests/models/export_tiny_gpt.py) at GPT-2 124M's shape (12 layers,
d=768, 12 heads, vocabulary 50257, 1024 positions; B=4, T=128), fp32, AdamW, one rank
(`--shape small`: d=256, 4 layers, vocabulary 2048, for a quick check). Each side trains
`--steps` steps in a process of its own, whose peak resident set (ru_maxrss, from wait4) is
reported; shardrun also prints the planned peak of its program and the peak its memory
tracker measured (arena, weights, workspace, step inputs and outputs: what the plan counts),
which must be equal. PyTorch's process builds the model (same shape, its own random weights:
the data do not change the memory), AdamW with default settings, and steps
zero_grad(set_to_none=True), forward, backward, step.
Not a test: it takes minutes and gigabytes at the 124M shape.
"""

import argparse
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, os.pardir, os.pardir, "tests", "models")
sys.path.insert(0, MODELS)
sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "tests", "e2e"))
import e2e_util  # noqa: E402

LR = 1e-3
SHAPES = {
    # vocab, positions, d_model, layers, heads, batch, seq
    "gpt2-124m": (50257, 1024, 768, 12, 12, 4, 128),
    "small": (2048, 128, 256, 4, 4, 8, 128),
}


def configure(gpt, shape):
    gpt.VOCAB, gpt.BLOCK, gpt.D_MODEL, gpt.N_LAYER, gpt.N_HEAD, gpt.BATCH, gpt.SEQ = SHAPES[shape]


def measured(command):
    """Runs `command` as the only child of a fresh Python process, which reports the child's
    peak resident set (ru_maxrss of RUSAGE_CHILDREN, KiB on Linux) on its last stderr line.
    Returns (exit status, stdout, stderr, peak RSS in bytes)."""
    wrapper = ("import resource, subprocess, sys\n"
               "r = subprocess.run(sys.argv[1:])\n"
               "kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
               "sys.stderr.write(f'\\nPEAK_RSS_KIB {kib}\\n')\n"
               "sys.exit(r.returncode)\n")
    proc = subprocess.run([sys.executable, "-c", wrapper] + command, capture_output=True,
                          text=True)
    peak = re.search(r"PEAK_RSS_KIB (\d+)", proc.stderr)
    return proc.returncode, proc.stdout, proc.stderr, int(peak.group(1)) * 1024 if peak else None


TORCH_TRAIN = """
import sys, torch
sys.path.insert(0, {models!r})
import export_tiny_gpt as gpt
gpt.VOCAB, gpt.BLOCK, gpt.D_MODEL, gpt.N_LAYER, gpt.N_HEAD, gpt.BATCH, gpt.SEQ = {shape!r}
torch.set_num_threads({threads})
torch.manual_seed(0)
model = gpt.TinyGPT()
model.train()
opt = torch.optim.AdamW(model.parameters(), lr={lr})
for step in range({steps}):
    idx = torch.randint(0, gpt.VOCAB, (gpt.BATCH, gpt.SEQ))
    targets = torch.randint(0, gpt.VOCAB, (gpt.BATCH, gpt.SEQ))
    opt.zero_grad(set_to_none=True)
    loss = model(idx, targets)[0]
    loss.backward()
    opt.step()
    print(f"step {{step + 1}} loss {{loss.item():.4f}}", flush=True)
"""


def gib(n):
    return f"{n / 2**30:6.2f} GiB" if n is not None else "     n/a"


def main():
    p = e2e_util.argument_parser(__doc__, steps=3)
    p.add_argument("--shape", choices=sorted(SHAPES), default="gpt2-124m")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--shardc-flags", default="", help="extra shardc flags, space-separated")
    args = e2e_util.parse_args(p)

    import export_tiny_gpt as gpt  # noqa: E402 (after sys.path)
    import train_reference  # noqa: E402
    configure(gpt, args.shape)
    model_dir = os.path.join(args.work, "model")
    data_dir = os.path.join(args.work, "data")
    os.makedirs(data_dir, exist_ok=True)
    if not os.path.exists(os.path.join(model_dir, "model.onnx")):
        gpt.export_gpt(gpt.TinyGPT, argparse.Namespace(out=model_dir, static_batch=None))
    data = train_reference.make_data("tiny_gpt", gpt, args.steps, gpt.BATCH,
                                     np.random.default_rng(0))
    for name, value in data.items():
        np.save(os.path.join(data_dir, name + ".npy"), value)

    bundle = os.path.join(args.work, "model.shard")
    subprocess.run([args.shardc, os.path.join(model_dir, "model.onnx"), "--mode", "train",
                    "-o", bundle] + args.shardc_flags.split(), check=True)
    code, _, err, ours_rss = measured(
        [args.shardrun, bundle, "--steps", str(args.steps), "--data", data_dir, "--lr", str(LR),
         "--threads", str(args.threads)])
    if code != 0:
        sys.exit(f"shardrun failed:\n{err}")
    memory = re.search(r"memory: planned peak (\d+) bytes, measured peak (\d+) bytes \(([^)]*)\)",
                       err)
    planned, tracked = (int(memory.group(1)), int(memory.group(2))) if memory else (None, None)

    script = TORCH_TRAIN.format(models=MODELS, shape=SHAPES[args.shape], threads=args.threads,
                                lr=LR, steps=args.steps)
    code, _, err, torch_rss = measured([sys.executable, "-c", script])
    if code != 0:
        sys.exit(f"PyTorch failed:\n{err}")

    vocab, positions, d, layers, heads, batch, seq = SHAPES[args.shape]
    print(f"GPT ({args.shape}): L={layers} d={d} H={heads} V={vocab} positions={positions}, "
          f"B={batch} T={seq}, AdamW, 1 rank, {args.steps} steps, {args.threads} threads; "
          f"shardc flags: {args.shardc_flags or '(none: fp32)'}; PyTorch: fp32")
    print(f"  shardrun: peak RSS {gib(ours_rss)}; plan {gib(planned)}, "
          f"measured by its tracker {gib(tracked)}"
          + (f" ({memory.group(3)})" if memory else ""))
    print(f"  PyTorch : peak RSS {gib(torch_rss)}")
    if ours_rss and torch_rss:
        print(f"  ratio shardrun/PyTorch (peak RSS): {ours_rss / torch_rss:.3f}")


if __name__ == "__main__":
    main()
