"""Runs torch.optim.AdamW, torch.optim.SGD and torch.nn.utils.clip_grad_norm_ (torch 1.13, CPU)
for a few steps on fixed tensors and writes every input and result as .npy files, so that
optimizer_torch_test.cpp can check the shardc kernels against real torch bit for bit.

Usage: optimizer_reference.py OUTPUT_DIR. Exits 77 (ctest's skip code) when torch is missing.

The hyperparameters and learning rates are float32-representable (the kernels take them as f32
attributes and an f32 lr tensor), so torch and the kernels compute from identical values. One
AdamW run with torch's usual Python-float hyperparameters (0.9, 0.999, 1e-8, 1e-2, lr 1e-3) is
also written, to measure what f32 attributes cost against a stock torch configuration.
"""
import os
import sys

import numpy as np

try:
    import torch
except ImportError:
    print("torch is not available; skipping")
    sys.exit(77)

STEPS = 5
# 1037 elements: several of torch's 16-element vector chunks plus a scalar tail.
NUMEL = 1037


def f32(x):
    """The double value of x rounded to float32, as the kernels receive it."""
    return float(np.float32(x))


LRS = [f32(x) for x in (1e-3, 2e-3, 3e-3, 2e-3, 1e-3)]
# SGD takes larger steps than AdamW.
SGD_LRS = [f32(x) for x in (0.1, 0.2, 0.3, 0.2, 0.1)]


def save(out_dir, name, array):
    np.save(os.path.join(out_dir, name + ".npy"), np.ascontiguousarray(array))


def run_adamw(out_dir, name, lrs, betas, eps, weight_decay, param0, grads):
    param = torch.nn.Parameter(torch.from_numpy(param0.copy()))
    opt = torch.optim.AdamW([param], lr=lrs[0], betas=betas, eps=eps,
                            weight_decay=weight_decay, foreach=False)
    params, exp_avgs, exp_avg_sqs = [], [], []
    for step in range(STEPS):
        for group in opt.param_groups:
            group["lr"] = lrs[step]
        param.grad = torch.from_numpy(grads[step].copy())
        opt.step()
        state = opt.state[param]
        params.append(param.detach().numpy().copy())
        exp_avgs.append(state["exp_avg"].numpy().copy())
        exp_avg_sqs.append(state["exp_avg_sq"].numpy().copy())
    save(out_dir, name + "_param", np.stack(params))
    save(out_dir, name + "_exp_avg", np.stack(exp_avgs))
    save(out_dir, name + "_exp_avg_sq", np.stack(exp_avg_sqs))


# (momentum, dampening, weight_decay, nesterov), the order optimizer_torch_test.cpp expects.
SGD_CONFIGS = [
    (0.9, 0.0, 0.01, False),
    (0.9, 0.0, 0.01, True),
    (0.0, 0.0, 0.0, False),
    (0.0, 0.0, 0.01, False),
    (0.9, 0.1, 0.0, False),
]


def run_sgd(out_dir, index, config, param0, grads):
    momentum, dampening, weight_decay, nesterov = (f32(config[0]), f32(config[1]),
                                                   f32(config[2]), config[3])
    param = torch.nn.Parameter(torch.from_numpy(param0.copy()))
    opt = torch.optim.SGD([param], lr=SGD_LRS[0], momentum=momentum, dampening=dampening,
                          weight_decay=weight_decay, nesterov=nesterov, foreach=False)
    params, buffers = [], []
    for step in range(STEPS):
        for group in opt.param_groups:
            group["lr"] = SGD_LRS[step]
        param.grad = torch.from_numpy(grads[step].copy())
        opt.step()
        params.append(param.detach().numpy().copy())
        buf = opt.state[param].get("momentum_buffer")
        buffers.append(np.zeros_like(param0) if buf is None else buf.numpy().copy())
    save(out_dir, "sgd%d_param" % index, np.stack(params))
    save(out_dir, "sgd%d_buffer" % index, np.stack(buffers))


# Gradient sizes around torch's 8-lane and 4-element groupings of the norm's sum of squares.
CLIP_SIZES = [15, 37, 1000, 7, 12, 1, 4]
# max_norm below the total norm (clipping active) and above it (inactive).
CLIP_MAX_NORMS = [f32(1.0), f32(1000.0)]


def run_clip(out_dir, grads):
    for index, max_norm in enumerate(CLIP_MAX_NORMS):
        params = []
        for g in grads:
            p = torch.nn.Parameter(torch.zeros(g.shape))
            p.grad = torch.from_numpy(g.copy())
            params.append(p)
        total = torch.nn.utils.clip_grad_norm_(params, max_norm)
        save(out_dir, "clip%d_total_norm" % index, total.numpy().reshape(()))
        save(out_dir, "clip%d_grads" % index,
             np.concatenate([p.grad.numpy().reshape(-1) for p in params]))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: optimizer_reference.py OUTPUT_DIR")
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(1234)
    param0 = (torch.randn(NUMEL) * 0.5).numpy()
    # Gradients of mixed magnitude, including exact zeros.
    grads = (torch.randn(STEPS, NUMEL) * torch.rand(STEPS, NUMEL) * 4).numpy()
    grads[:, ::97] = 0.0
    save(out_dir, "param0", param0)
    save(out_dir, "grads", grads)
    save(out_dir, "lrs", np.array(LRS, dtype=np.float32))
    save(out_dir, "sgd_lrs", np.array(SGD_LRS, dtype=np.float32))

    run_adamw(out_dir, "adamw", LRS, (f32(0.9), f32(0.999)), f32(1e-8), f32(1e-2), param0, grads)
    # Stock Python-float hyperparameters (what a torch user writes), for the comparison only.
    run_adamw(out_dir, "adamw_stock", [1e-3, 2e-3, 3e-3, 2e-3, 1e-3], (0.9, 0.999), 1e-8, 1e-2,
              param0, grads)
    for index, config in enumerate(SGD_CONFIGS):
        run_sgd(out_dir, index, config, param0, grads)

    clip_grads = [(torch.randn(n) * 0.7).numpy() for n in CLIP_SIZES]
    save(out_dir, "clip_inputs", np.concatenate(clip_grads))
    run_clip(out_dir, clip_grads)
    print("wrote torch %s optimizer references to %s" % (torch.__version__, out_dir))


if __name__ == "__main__":
    main()
