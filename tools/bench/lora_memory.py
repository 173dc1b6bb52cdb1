"""Planned memory of full fine-tuning, LoRA and QLoRA on large shapes, side by side with the
formulas (no weights needed: `shardc --no-weights` plans from the graph alone).

    lora_memory.py --shardc PATH --work DIR [--shape 7b|65b ...]

Shapes (the project's test GPT, tests/models/export_tiny_gpt.py: pre-norm blocks with a 4d
MLP, exported at a small width and widened to d, compile_scale.py's export):
  7b    32 layers, d 4096, 32 heads, vocabulary 32000, sequence 512: Llama-2-7B's sizes
        (6.6e9 parameters here: a 4d GELU MLP where Llama has a 3-matrix 11008 one)
  65b   80 layers, d 8192, 64 heads, vocabulary 32000, sequence 512: Llama-65B's sizes
Per shape, batch 1 on one device: full fine-tuning (AdamW over every parameter), LoRA r=8 on
the attention projection (c_attn) and on every linear layer (c_attn|c_proj|mlp.0|mlp.2), and
the latter with the base in nf4 (QLoRA), each with --remat full; the 65b QLoRA plan is also
compiled with `--remat auto --gpu-memory 48GiB` (the least recomputation that fits one 48 GiB
device, or shardc's refusal). For each plan: shardc's planned peak per rank and its parts
(plan.json's model_state and arena), against the formulas
    full   16 P + 4 M                            (f32 weight, gradient, AdamW m and v)
    LoRA   4 P + 4 M + 16 A                      (the frozen base, the adapters' 4 buffers)
    QLoRA  (0.5 + 4/64) Q + 4 (P - Q) + 4 M + 16 A   (nf4 codes and one f32 absmax per 64)
P the parameters, M the blocks' causal-mask buffers (one f32 [seq, seq] each, frozen), A the
adapters' elements, Q the quantized base's elements (every product weight but lm_head). The
rest of the peak is what lives beside the model state at the plan's peak (activations,
recomputed ones, workspace; in full fine-tuning the peak comes at the update, when the
gradients of every parameter are held and few activations are).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compile_scale  # noqa: E402

SHAPES = {"7b": dict(layers=32, d_model=4096, heads=32),
          "65b": dict(layers=80, d_model=8192, heads=64)}
VOCAB, SEQ, RANK = 32000, 512, 8
ALL_LINEAR = "c_attn|c_proj|mlp.0|mlp.2"


def exported(work, name):
    shape = SHAPES[name]
    out = os.path.join(work, f"gpt_{name}")
    path = os.path.join(out, "model.onnx")
    if os.path.exists(path):
        return path
    # Exported at head size 3 (PyTorch traces it in seconds), widened to d (compile_scale's
    # widen scales the parameters' dimensions that are 1, 3 or 4 times the export width).
    args = argparse.Namespace(vocab=VOCAB, seq=SEQ, export_width=3 * shape["heads"], **shape)
    t0 = time.time()
    compile_scale.export(args, out)
    for f in os.listdir(out):
        if f != "model.onnx":
            os.remove(os.path.join(out, f))
    print(f"exported the {name} shape in {time.time() - t0:.0f} s", flush=True)
    return path


def formula_sizes(shape):
    """P, the base's product weights Q (lm_head excluded), and A per target set."""
    L, d = shape["layers"], shape["d_model"]
    per_layer_linear = {"c_attn": (d, 3 * d), "c_proj": (d, d), "mlp.0": (d, 4 * d),
                        "mlp.2": (4 * d, d)}
    biases = L * (3 * d + d + 4 * d + d)
    norms = L * 4 * d + 2 * d
    Q = L * sum(i * o for i, o in per_layer_linear.values())
    P = Q + biases + norms + VOCAB * d + SEQ * d + VOCAB * d  # + wte, wpe, lm_head
    adapters = {
        "c_attn": L * RANK * (d + 3 * d),
        ALL_LINEAR: L * RANK * sum(i + o for i, o in per_layer_linear.values()),
    }
    return P, Q, adapters


def plan(shardc, model, out, flags):
    shutil.rmtree(out, ignore_errors=True)
    argv = [shardc, model, "--no-weights", "--input-shape", f"idx=1x{SEQ}", "--input-shape",
            f"targets=1x{SEQ}", "-o", out, *flags]
    t0 = time.time()
    res = subprocess.run(argv, capture_output=True, text=True)
    if res.returncode != 0:
        return None, res.stderr.strip().splitlines()[-1] if res.stderr.strip() else "failed"
    memory = json.load(open(os.path.join(out, "plan.json")))["memory_per_rank"][0]
    memory["seconds"] = time.time() - t0
    return memory, None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shardc", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--shape", action="append", choices=sorted(SHAPES))
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rows = []
    gb = 1e9
    for name in args.shape or ["7b", "65b"]:
        model = exported(args.work, name)
        P, Q, adapters = formula_sizes(SHAPES[name])
        base = P  # LoRA freezes every model parameter
        masks = 4 * SHAPES[name]["layers"] * SEQ * SEQ
        cases = [
            ("full", ["--remat", "full"], 16 * P),
            ("LoRA c_attn", ["--lora", f"r={RANK},alpha=16,targets=c_attn", "--remat", "full"],
             4 * base + 16 * adapters["c_attn"]),
            ("LoRA all linear", ["--lora", f"r={RANK},alpha=16,targets={ALL_LINEAR}", "--remat",
                                 "full"], 4 * base + 16 * adapters[ALL_LINEAR]),
            ("QLoRA nf4 all linear", ["--lora", f"r={RANK},alpha=16,targets={ALL_LINEAR}",
                                      "--base-dtype", "nf4", "--remat", "full"],
             (0.5 + 4 / 64) * Q + 4 * (base - Q) + 16 * adapters[ALL_LINEAR]),
        ]
        cases = [(label, flags, formula + masks) for label, flags, formula in cases]
        if name == "65b":
            cases.append(("QLoRA nf4, --remat auto --gpu-memory 48GiB",
                          ["--lora", f"r={RANK},alpha=16,targets={ALL_LINEAR}", "--base-dtype",
                           "nf4", "--remat", "auto", "--gpu-memory", "48GiB"],
                          (0.5 + 4 / 64) * Q + 4 * (base - Q) + 16 * adapters[ALL_LINEAR] +
                          masks))
        print(f"\n{name}: P = {P / 1e9:.3f}e9 parameters, Q = {Q / 1e9:.3f}e9 quantized by nf4, "
              f"adapters {adapters['c_attn'] / 1e6:.2f}M (c_attn) / "
              f"{adapters[ALL_LINEAR] / 1e6:.2f}M (all linear)")
        print(f"  {'plan':44} {'planned peak':>13} {'model state':>12} {'formula':>9} "
              f"{'rest of peak':>15}")
        for label, flags, formula in cases:
            tag = label.split(",")[0].replace(" ", "_")
            memory, error = plan(args.shardc, model, os.path.join(args.work, f"{name}_{tag}.shard"),
                                 flags)
            if error:
                print(f"  {label:44} refused: {error}")
                rows.append({"shape": name, "plan": label, "error": error})
                continue
            state = memory["model_state"]
            held = (state["trained_parameter_bytes"] + state["frozen_parameter_bytes"] +
                    state["whole_gradient_bytes"] + state["optimizer_state_bytes"])
            peak = memory["planned_peak_bytes"]
            print(f"  {label:44} {peak / gb:10.2f} GB {held / gb:9.2f} GB {formula / gb:6.2f} GB "
                  f"{(peak - held) / gb:12.2f} GB   ({memory['seconds']:.0f} s)", flush=True)
            rows.append({"shape": name, "plan": label, "planned_peak_bytes": peak,
                         "model_state_bytes": held, "formula_bytes": int(formula),
                         "model_state": state})
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
