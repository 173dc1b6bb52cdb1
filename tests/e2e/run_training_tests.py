"""Training equivalence with PyTorch: shardc's training step, run step by step, must follow
torch's loss curve and end at the same parameters.

    run_training_tests.py --shardc PATH --shardrun PATH --work DIR [--steps 30]

For each configuration the model is exported, PyTorch trains it (tests/models/train_reference.py,
from the ONNX weights, on the same batches), and shardc compiles `--mode train`. shardrun then
runs one step per call: this script feeds every input of the step (the batch, trained
parameters, optimizer state, step, lr) and takes the updated values back from the outputs.
Checks: at every step |loss - loss_torch| / |loss_torch| <= 1e-5, and after the last step
every trained parameter's max |p - p_torch| / max |p_torch| <= 1e-4 over its elements with a
real gradient. Elements whose PyTorch gradient never rose above float32 rounding noise
(< 1e-7 of the model's largest gradient at every step; e.g. attention key biases, whose exact
gradient is zero) are reported separately: Adam turns that noise into steps of up to lr in
both implementations, so for them only |p - p_torch| <= 2 * steps * lr is checked.
Prints one PASS/FAIL line per configuration and `N passed, M failed`.
"""

import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402

LOSS_RTOL = 1e-5
PARAM_RTOL = 1e-4
LR = 1e-3
DROPOUT_SEED = 20261122  # shardrun's --seed for the masks of training-mode dropout

# name, model, extra flags for shardc and train_reference.py
CONFIGS = [
    ("mlp_adamw", "mlp_classifier", []),
    ("mlp_sgd_nesterov", "mlp_classifier", ["--optimizer", "sgd", "--momentum", "0.9",
                                             "--nesterov"]),
    ("mlp_adamw_clip1", "mlp_classifier", ["--grad-clip", "1.0"]),
    # 1.0 is above this MLP's gradient norms; 0.05 makes the clipping act at every step.
    ("mlp_adamw_clip005", "mlp_classifier", ["--grad-clip", "0.05"]),
    ("tiny_gpt_adamw", "tiny_gpt", []),
    ("tied_gpt_adamw", "tied_gpt", []),
    # 7 training-mode Dropout nodes (p = 0.1); the reference draws shardc's Philox masks.
    ("dropout_gpt_adamw", "dropout_gpt", []),
    ("bert_encoder_adamw", "bert_encoder", []),
    # Its causal masks are registered buffers holding -inf, added to the scores: not trained.
    ("llama_decoder_adamw", "llama_decoder", []),
]


def export(model, work):
    return e2e_util.export_test_model(model, os.path.join(work, model))


def read_bindings(bundle):
    """(input names, output names) from plan.txt's inputs:/outputs: sections."""
    names = {"inputs:": [], "outputs:": []}
    section = None
    for line in open(os.path.join(bundle, "plan.txt")):
        if line.strip() in names:
            section = line.strip()
        elif section and line.startswith("  ") and ": %" in line:
            names[section].append(line.strip().split(": %")[0])
        elif section and not line.startswith("  "):
            section = None
    return names["inputs:"], names["outputs:"]


def run_config(name, model, flags, args):
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    model_dir = export(model, args.work)
    ref = os.path.join(work, "torch")
    e2e_util.train_reference(model, model_dir, ref, args.steps, "--make-data", "4", "--lr",
                             str(LR), "--dropout-seed", str(DROPOUT_SEED), *flags)
    bundle = os.path.join(work, "model.shard")
    res = e2e_util.run_tool([args.shardc, os.path.join(model_dir, "model.onnx"), "--mode",
                             "train", "-o", bundle, *e2e_util.input_shape_flags(model_dir), *flags],
                            args.timeout)
    if not res.ok:
        return f"compile: {res.describe()}"
    inputs, outputs = read_bindings(bundle)

    proto = onnx.load_model(os.path.join(model_dir, "model.onnx"))
    params = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    data_dir = os.path.join(ref, "data")
    data = {f[:-4]: np.load(os.path.join(data_dir, f)) for f in os.listdir(data_dir)}
    batch = min(len(v) for v in data.values()) // 4
    state = {}
    for n in inputs:
        if n in params:
            state[n] = params[n].astype(np.float32)
        elif n.endswith((".exp_avg", ".exp_avg_sq", ".momentum_buffer")):
            state[n] = np.zeros_like(params[n.rsplit(".", 1)[0]], dtype=np.float32)
    state["step"] = np.array(0, dtype=np.int64)
    if "seed" in inputs:
        state["seed"] = np.array(DROPOUT_SEED, dtype=np.int64)

    torch_losses = [json.loads(line)["loss"] for line in open(os.path.join(ref, "losses.jsonl"))]
    worst_loss = 0.0
    step_dir, out_dir = os.path.join(work, "step_in"), os.path.join(work, "step_out")
    os.makedirs(step_dir, exist_ok=True)
    for k in range(1, args.steps + 1):
        rows = [r % len(next(iter(data.values()))) for r in range((k - 1) * batch, k * batch)]
        feed = dict(state, lr=np.array(LR, dtype=np.float32))
        for n in inputs:
            if n not in feed:
                feed[n] = data[e2e_util.npy_name(n)][rows]
        for n in inputs:
            np.save(os.path.join(step_dir, e2e_util.npy_name(n) + ".npy"), feed[n])
        res = e2e_util.run_tool([args.shardrun, bundle, "--data", step_dir, "--outputs", out_dir],
                                args.timeout)
        if not res.ok:
            return f"step {k}: {res.describe()}"
        for n in outputs:
            value, err = e2e_util.load_output(out_dir, n)
            if err:
                return f"step {k}: {err}"
            if n == "loss":
                loss = float(value)
            else:
                state[n] = value
        rel = abs(loss - torch_losses[k - 1]) / abs(torch_losses[k - 1])
        worst_loss = max(worst_loss, rel)
        if rel > LOSS_RTOL:
            return (f"step {k}: loss {loss:.9g} vs torch {torch_losses[k - 1]:.9g} "
                    f"(relative difference {rel:.3g} > {LOSS_RTOL})")

    absmax = {n: np.load(os.path.join(ref, "grad_absmax", e2e_util.npy_name(n) + ".npy"))
              for n in outputs if n in params}
    noise_level = 1e-7 * max(float(g.max()) for g in absmax.values())
    worst_param, worst_name, noise_elems, worst_noise = 0.0, "", 0, 0.0
    for n, g in absmax.items():
        ref_value = np.load(os.path.join(ref, "params", e2e_util.npy_name(n) + ".npy"))
        diff = np.abs(state[n] - ref_value)
        real = g > noise_level
        rel = float(np.max(diff[real], initial=0.0) / np.max(np.abs(ref_value)))
        if rel > worst_param:
            worst_param, worst_name = rel, n
        noise_elems += int(np.count_nonzero(~real))
        worst_noise = max(worst_noise, float(np.max(diff[~real], initial=0.0)))
    summary = (f"{args.steps} steps, max loss rel diff {worst_loss:.3g}, "
               f"max param rel diff {worst_param:.3g} ({worst_name}), final loss {loss:.9g}")
    if noise_elems:
        summary += (f"; {noise_elems} elements with noise-level gradients, max |diff| "
                    f"{worst_noise:.3g}")
    if worst_param > PARAM_RTOL:
        return "parameters diverged: " + summary
    if worst_noise > 2 * args.steps * LR:
        return "noise-gradient elements moved more than Adam can: " + summary
    print(f"  {name}: {summary}")
    return None


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, steps=30, timeout=120))
    e2e_util.run_cases([(name, lambda name=name, model=model, flags=flags:
                         run_config(name, model, flags, args)) for name, model, flags in CONFIGS])


if __name__ == "__main__":
    main()
