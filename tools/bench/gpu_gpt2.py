"""GPT-2 124M training throughput on one GPU: shardrun --device cuda against PyTorch eager
(scaled_dot_product_attention) and torch.compile of the same model, side by side in one run.

Two stages, because the GPU machine has neither MLIR nor this build (tools/gpu_check.sh's
packaging, likewise):

    # where shardc is built (PyTorch with ONNX export):
    /usr/bin/python3 tools/bench/gpu_gpt2.py prepare --shardc build/tools/shardc/shardc \
        --work DIR [--batch 8]
    # on the GPU machine (PyTorch with CUDA), DIR copied over with shardrun and its libraries:
    python3 tools/bench/gpu_gpt2.py run --shardrun BIN/shardrun --work DIR [--steps 20]

Model: the test GPT (tests/models/export_tiny_gpt.py) at GPT-2 124M's sizes: 12 layers, d=768,
12 heads, T=1024, vocabulary 50257, pre-LayerNorm blocks, exact GELU, and an lm_head of its
own (not tied to the token embedding: 163M parameters). bf16 (shardc --precision bf16: matrix
products in bf16 with f32 accumulation, f32 master weights; PyTorch: torch.autocast bf16), AdamW
(lr 1e-4), the same batch of random tokens every step. prepare exports the model without
dynamic axes and compiles it; its weights repeat every 4096 values of each parameter (the
model's own initialisation, first 4096 values, tiled) so that the bundle packs small: the
arithmetic, and so the timing, does not depend on the values. Both sides start from those
weights. Two bundles are compiled and timed: without and with --fuse-attention on.

Reported: median step time after WARMUP steps, tokens/s, and MFU: model FLOPs per token (6 per
weight of every matrix product, plus 12 * layers * T * d for attention's two products, the
count of the PaLM paper and llm.c) times tokens/s over the bf16 dense peak of the GPU (989 TFLOP/s
for an H100/H200 SXM, the vendor's figure).
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, os.pardir, os.pardir, "tests", "models")
sys.path.insert(0, MODELS)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import export_tiny_gpt as gpt  # noqa: E402

WARMUP = 3
LR = 1e-4
PERIOD = 4096
PEAK_BF16 = 989e12
# The bundles prepare compiles and run times: without and with shardc-fuse-attention.
BUNDLES = {"gpt2.shard": [], "gpt2_fused.shard": ["--fuse-attention", "on"]}


def configure(batch):
    gpt.VOCAB, gpt.BLOCK, gpt.D_MODEL, gpt.N_LAYER, gpt.N_HEAD = 50257, 1024, 768, 12, 12
    gpt.BATCH, gpt.SEQ = batch, 1024


def periodic_model():
    torch.manual_seed(0)
    model = gpt.TinyGPT()
    with torch.no_grad():
        for p in model.parameters():
            flat = p.detach().reshape(-1)
            block = flat[:PERIOD].clone()
            reps = math.ceil(flat.numel() / block.numel())
            p.copy_(block.repeat(reps)[:flat.numel()].reshape(p.shape))
    return model


def matmul_weights(model):
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


def prepare(args):
    import export_util  # noqa: E402 (needs onnx: only where the model is exported)
    configure(args.batch)
    os.makedirs(args.work, exist_ok=True)
    model = periodic_model()
    rng = np.random.default_rng(0)
    idx = rng.integers(0, gpt.VOCAB, (gpt.BATCH, gpt.SEQ), dtype=np.int64)
    targets = rng.integers(0, gpt.VOCAB, (gpt.BATCH, gpt.SEQ), dtype=np.int64)
    data = os.path.join(args.work, "data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "idx.npy"), idx)
    np.save(os.path.join(data, "targets.npy"), targets)
    model_dir = os.path.join(args.work, "model")
    export_util.export_model(model, (torch.from_numpy(idx), torch.from_numpy(targets)),
                             ["idx", "targets"], ["loss", "logits"], model_dir)
    for bundle, flags in BUNDLES.items():
        subprocess.run([args.shardc, os.path.join(model_dir, "model.onnx"), "--precision", "bf16",
                        *flags, "-o", os.path.join(args.work, bundle)], check=True)
    with open(os.path.join(args.work, "config.json"), "w") as f:
        json.dump({"batch": args.batch}, f)


class SdpaAttention(gpt.CausalSelfAttention):
    """The same attention through torch's fused scaled_dot_product_attention."""

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


def torch_run(compiled, steps, idx, targets):
    gpt.CausalSelfAttention = SdpaAttention  # Block builds its attention from this name
    model = periodic_model().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, fused=True)
    fn = torch.compile(model) if compiled else model
    times, losses = [], []
    for _ in range(steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss, _ = fn(idx, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
        losses.append(loss.item())
    del model, opt, fn
    torch.cuda.empty_cache()
    return times[WARMUP:], losses


def run(args):
    with open(os.path.join(args.work, "config.json")) as f:
        configure(json.load(f)["batch"])
    tokens = gpt.BATCH * gpt.SEQ
    flops_per_token = (6 * matmul_weights(periodic_model())
                       + 12 * gpt.N_LAYER * gpt.SEQ * gpt.D_MODEL)
    runs = {}
    for bundle, flags in BUNDLES.items():
        if not os.path.isdir(os.path.join(args.work, bundle)):
            continue
        metrics = os.path.join(args.out or args.work, bundle.replace(".shard", ".jsonl"))
        start = time.perf_counter()
        done = subprocess.run([args.shardrun, os.path.join(args.work, bundle), "--device",
                               "cuda", "--steps", str(args.steps), "--data",
                               os.path.join(args.work, "data"), "--lr", str(LR), "--metrics",
                               metrics])
        print(f"shardrun {bundle}: exit {done.returncode}, "
              f"{time.perf_counter() - start:.1f} s in all", flush=True)
        if done.returncode == 0:
            ours = [json.loads(line) for line in open(metrics)]
            runs[f"shardc {' '.join(flags) or '(unfused)'}"] = (
                [m["step_time_ms"] / 1e3 for m in ours][WARMUP:], [m["loss"] for m in ours])
    idx = torch.from_numpy(np.load(os.path.join(args.work, "data", "idx.npy"))).cuda()
    targets = torch.from_numpy(np.load(os.path.join(args.work, "data", "targets.npy"))).cuda()
    runs["PyTorch eager (sdpa)"] = torch_run(False, args.steps, idx, targets)
    if not args.no_compile:
        start = time.perf_counter()
        runs["torch.compile"] = torch_run(True, args.steps, idx, targets)
        print(f"torch.compile: {time.perf_counter() - start:.1f} s in all", flush=True)

    print(f"GPT-2 124M shapes (163M parameters, untied head), bf16, AdamW, B={gpt.BATCH} "
          f"T={gpt.SEQ}, {args.steps} steps ({WARMUP} warm-up excluded), "
          f"{torch.cuda.get_device_name()}; {flops_per_token / 1e9:.3f} GFLOP/token")
    base = None
    for name, (times, losses) in runs.items():
        step = statistics.median(times)
        tps = tokens / step
        base = base or tps
        print(f"  {name:32s} median step {step * 1e3:8.1f} ms  {tps:9.0f} tokens/s  "
              f"MFU {tps * flops_per_token / PEAK_BF16 * 100:5.1f}%  "
              f"(first / this: {base / tps:.3f}); loss {losses[0]:.4f} -> {losses[-1]:.4f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="stage", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--shardc", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--batch", type=int, default=8)
    r = sub.add_parser("run")
    r.add_argument("--shardrun", required=True)
    r.add_argument("--work", required=True)
    r.add_argument("--steps", type=int, default=20)
    r.add_argument("--out", help="directory for shardrun's metrics (default: --work)")
    r.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = parser.parse_args()
    prepare(args) if args.stage == "prepare" else run(args)


if __name__ == "__main__":
    main()
