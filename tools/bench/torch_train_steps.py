"""PyTorch's side of train_throughput.py: times training steps of the test GPT under one PyTorch.

    python torch_train_steps.py --config JSON --model-dir DIR --data DIR --steps N --threads T \
        --modes eager,compile,autocast --out FILE

Runs in the benchmark's own virtual environment (PyTorch 2.x from PyPI), not in the test
environment: train_throughput.py starts it there. The model is the test GPT built with the
sizes of --config (a JSON object of export_tiny_gpt's module constants) and loaded with the ONNX
export's initializers, so both sides start from the same weights; step k reads rows
[(k-1)B, kB) of DIR's idx.npy/targets.npy, as shardrun does. Modes: `eager` (fp32), `compile`
(torch.compile of the model's forward, fp32; the backward runs through AOTAutograd's compiled
graph), `autocast` (eager under torch.autocast("cpu", bfloat16): matrix products in bf16).
Writes FILE: {"torch": version, "modes": {mode: {"step_seconds": [...], "losses": [...]}}}.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "tests", "models"))
import export_tiny_gpt as gpt  # noqa: E402
import train_reference  # noqa: E402

LR = 1e-3


def step_times(model_dir, data, rows, steps, mode):
    model = gpt.TinyGPT()
    train_reference.load_onnx_weights(model, os.path.join(model_dir, "model.onnx"))
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    forward = torch.compile(model) if mode == "compile" else model
    times, losses = [], []
    n = len(data["idx"])
    for k in range(1, steps + 1):
        picked = [r % n for r in range((k - 1) * rows, k * rows)]
        idx = torch.from_numpy(data["idx"][picked])
        targets = torch.from_numpy(data["targets"][picked])
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "autocast"):
            loss = forward(idx, targets)[0]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - start)
        losses.append(loss.item())
    return times, losses


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True)
    p.add_argument("--model-dir", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--modes", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    for name, value in json.loads(args.config).items():
        setattr(gpt, name, value)
    torch.set_num_threads(args.threads)
    data = {name: np.load(os.path.join(args.data, name + ".npy")) for name in ("idx", "targets")}
    result = {"torch": torch.__version__, "modes": {}}
    for mode in args.modes.split(","):
        print(f"torch_train_steps: PyTorch {torch.__version__} {mode}, {args.steps} steps",
              file=sys.stderr, flush=True)
        times, losses = step_times(args.model_dir, data, gpt.BATCH, args.steps, mode)
        result["modes"][mode] = {"step_seconds": times, "losses": losses}
    with open(args.out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
