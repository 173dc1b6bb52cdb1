"""`shardc --fuse-attention on` (scaled dot-product attention as one op) end to end.

    test_fused_attention.py --shardc PATH --shardrun PATH --work DIR [--steps 30]

For the tiny GPT (masked_fill causal mask, Mul scale), the BERT-like encoder (additive padding
mask, Div scale), the Llama-style decoder (RoPE, grouped-query heads expanded, additive causal
mask) and torch's own nn.Transformer (sequence-first, nn.MultiheadAttention), in both export
styles (batch baked in at 8 rows, and the export's dynamic_axes form), shardc compiles the
model with and without --fuse-attention and shardrun trains 30 AdamW steps from the same
weights on the same batches. Checks:

  fused     plan.txt's program has one `attention` and one `attention_grad` call per
            attention layer of the model, and no `softmax` left where every layer was fused
  causal    the GPT's and the Llama's causal masks (a buffer sliced and compared, an additive
            -inf buffer) become the attention op's causal flag (no mask operand; the kernels
            skip the hidden keys); BERT's padding mask stays a mask (shardc --emit=mlir)
  pytorch   every step's loss within 1e-5 (relative) of PyTorch's (train_reference.py), the
            training tests' tolerance
  unfused   every step's loss within 1e-5 (relative) of the unfused step's
  memory    measured peak = planned peak; at T = 256 (head dim 16) the fused plan's planned
            peak is below the unfused one's by at least each layer's probabilities
            [B, H, S, S] (the scores, probabilities and their gradients are gone)
  sharded   the tiny GPT (static) fused at dp=2,tp=2,zero=1 (heads split on tp) and at
            tp=2,sp=1 (query rows split, keys gathered): every step within 1e-5 of 1 rank
  bf16      the tiny GPT (static) fused with --precision bf16: within 1e-2 of the unfused
            bf16 run (the fused op rounds q, k, v and its output to bf16, not the scores and
            probabilities in between, which the unfused products round)
  left      the GPT with attention dropout (between the softmax and V) is not fused: no
            attention call, and losses bit-identical to the run without the flag
  refused   --fuse-attention with a value other than on or off: one usage line, exit 2
Prints PASS/FAIL per case and `N passed, M failed`.
"""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, os.pardir, "models")
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402

LR = 1e-3
STATIC_BATCH = 8
RTOL = 1e-5
# (model, attention layers, whether its mask is the causal rule)
MODELS_FUSED = [("tiny_gpt", 2, True), ("bert_encoder", 2, False), ("llama_decoder", 2, True)]


def losses_of(path):
    return [float(e2e_util.metrics_field(line, "loss")) for line in e2e_util.metric_lines(path)]


def worst_rel(a, b):
    if len(a) != len(b) or not a:
        return float("inf")
    return max(abs(x - y) / max(abs(y), 1e-30) for x, y in zip(a, b))


def kernel_counts(bundle):
    """Calls per kernel in plan.txt's program listing (lines '#N kernel 'name'...')."""
    counts = {}
    for kernel in re.findall(r"^\s*#\d+ (\w+) ", open(os.path.join(bundle, "plan.txt")).read(),
                             re.M):
        counts[kernel] = counts.get(kernel, 0) + 1
    return counts


def train(args, model_dir, bundle, data, flags):
    out, err = e2e_util.compile_and_train(args.shardc, args.shardrun, model_dir, bundle, data,
                                          flags, args.steps, LR)
    if err:
        return err
    return {"losses": losses_of(bundle + ".jsonl"), "peaks": e2e_util.memory_peaks(out),
            "kernels": kernel_counts(bundle),
            "loss_text": [e2e_util.metrics_field(line, "loss")
                          for line in e2e_util.metric_lines(bundle + ".jsonl")]}


def torch_losses(args, model, model_dir, out, batch):
    losses = e2e_util.train_reference(model, model_dir, out, args.steps, "--make-data", "4",
                                      "--lr", str(LR), *(["--batch", str(batch)] if batch else []))
    return losses, os.path.join(out, "data")


def planned(run):
    return max(p for p, _ in run["peaks"]) if run["peaks"] else None


def measured_is_planned(run):
    return bool(run["peaks"]) and all(p == m for p, m in run["peaks"])


def attention_flags(args, model_dir):
    """(causal, masked) counts of the fused graph's attention ops (shardc --emit=mlir)."""
    res = subprocess.run([args.shardc, os.path.join(model_dir, "model.onnx"), "--emit=mlir",
                          "--fuse-attention", "on", *e2e_util.input_shape_flags(model_dir)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ops = re.findall(r"graph\.attention (%[^{]*)\{causal = (true|false)", res.stdout)
    return (sum(causal == "true" for _, causal in ops),
            sum(operands.count("%") == 4 for operands, _ in ops))


def check_model(model, layers, causal, style, args, results):
    name = f"{model}_{style}"
    work = os.path.join(args.work, name)
    model_dir = e2e_util.export_test_model(
        model, os.path.join(work, "model"),
        static_batch=STATIC_BATCH if style == "static" else None)
    reference, data = torch_losses(args, model, model_dir, os.path.join(work, "torch"),
                                   STATIC_BATCH if style == "static" else None)
    plain = train(args, model_dir, os.path.join(work, "plain.shard"), data, [])
    fused = train(args, model_dir, os.path.join(work, "fused.shard"), data,
                  ["--fuse-attention", "on"])
    for label, run in [("unfused", plain), ("fused", fused)]:
        if isinstance(run, str):
            results.append((False, f"{name} {label}: {run}"))
            return None
    k = fused["kernels"]
    ok = (k.get("attention", 0) == layers and k.get("attention_grad", 0) == layers and
          k.get("softmax", 0) == 0)
    results.append((ok, f"{name} fused: attention {k.get('attention', 0)}, attention_grad "
                        f"{k.get('attention_grad', 0)}, softmax {k.get('softmax', 0)} calls "
                        f"(expected {layers}, {layers}, 0)"))
    # The causal masks (a buffer sliced to the sequence and compared, an additive -inf
    # buffer) become the op's causal flag and no mask operand; a padding mask stays a mask.
    causal_ops, masked_ops = attention_flags(args, model_dir)
    expected = (layers, 0) if causal else (0, layers)
    results.append(((causal_ops, masked_ops) == expected,
                    f"{name} causal: {causal_ops} causal attention ops, {masked_ops} with a mask "
                    f"operand (expected {expected[0]}, {expected[1]})"))
    vs_torch, vs_plain = worst_rel(fused["losses"], reference), worst_rel(fused["losses"],
                                                                           plain["losses"])
    results.append((vs_torch <= RTOL and len(fused["losses"]) == args.steps,
                    f"{name} fused vs PyTorch: worst relative loss difference {vs_torch:.3g} "
                    f"over {len(fused['losses'])} steps (unfused: "
                    f"{worst_rel(plain['losses'], reference):.3g})"))
    results.append((vs_plain <= RTOL, f"{name} fused vs unfused: worst {vs_plain:.3g}"))
    # At these sizes (S = 16 = D) the fused op keeps as much as the probabilities it drops
    # (a K copy [.., S, D] and the mask against P [.., S, S]): check_long_sequence checks the
    # saving where S > D.
    ok = measured_is_planned(fused) and measured_is_planned(plain)
    results.append((ok, f"{name} memory: planned peak unfused {planned(plain)}, fused "
                        f"{planned(fused)} bytes ({planned(fused) / planned(plain):.3f}); "
                        f"measured = planned: {measured_is_planned(fused)}"))
    return model_dir, data, fused


def check_sharded(args, model_dir, data, one_rank, results):
    work = os.path.join(args.work, "tiny_gpt_static")
    for label, flags in [("dp2_tp2_zero1", ["--gpus", "4", "--strategy", "dp=2,tp=2,zero=1"]),
                         ("tp2_sp", ["--gpus", "2", "--strategy", "tp=2,sp=1"])]:
        run = train(args, model_dir, os.path.join(work, f"fused_{label}.shard"), data,
                    [*flags, "--fuse-attention", "on"])
        if isinstance(run, str):
            results.append((False, f"tiny_gpt_static fused {label}: {run}"))
            continue
        worst = worst_rel(run["losses"], one_rank["losses"])
        calls = run["kernels"].get("attention", 0)
        results.append((worst <= RTOL and calls > 0 and measured_is_planned(run),
                        f"tiny_gpt_static fused {label}: worst {worst:.3g} against 1 rank; "
                        f"rank 0 runs {calls} attention calls; measured = planned: "
                        f"{measured_is_planned(run)}"))


def check_bf16(args, model_dir, data, results):
    work = os.path.join(args.work, "tiny_gpt_static")
    runs = {}
    for label, flags in [("unfused", []), ("fused", ["--fuse-attention", "on"])]:
        run = train(args, model_dir, os.path.join(work, f"bf16_{label}.shard"), data,
                    [*flags, "--precision", "bf16"])
        if isinstance(run, str):
            results.append((False, f"tiny_gpt_static bf16 {label}: {run}"))
            return
        runs[label] = run
    worst = worst_rel(runs["fused"]["losses"], runs["unfused"]["losses"])
    results.append((worst <= 1e-2 and measured_is_planned(runs["fused"]),
                    f"tiny_gpt_static bf16 fused vs unfused bf16: worst {worst:.3g}"))


def check_long_sequence(args, results):
    """The tiny GPT at T = 256 (head dim 16, 8 rows): the planned peak with and without
    fusion, against the bytes of the probabilities the unfused step keeps per layer."""
    sys.path.insert(0, MODELS)
    import export_tiny_gpt as gpt  # noqa: E402
    import export_util  # noqa: E402
    import torch  # noqa: E402
    gpt.BLOCK = gpt.SEQ = 256
    work = os.path.join(args.work, "tiny_gpt_t256")
    torch.manual_seed(0)
    model = gpt.TinyGPT()
    idx = torch.randint(0, gpt.VOCAB, (STATIC_BATCH, gpt.SEQ))
    export_util.export_model(model, (idx, idx.clone()), ["idx", "targets"], ["loss", "logits"],
                             os.path.join(work, "model"))
    peaks = {}
    for label, flags in [("unfused", []), ("fused", ["--fuse-attention", "on"])]:
        res = subprocess.run([args.shardc, os.path.join(work, "model", "model.onnx"), "-o",
                              os.path.join(work, f"{label}.shard"), *flags],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        found = re.search(r"planned peak (\d+) bytes per rank", res.stdout)
        if res.returncode != 0 or not found:
            results.append((False, f"tiny_gpt_t256 {label}: exit {res.returncode}: "
                                   f"{res.stdout.strip()[-300:]}"))
            return
        peaks[label] = int(found.group(1))
    probs = STATIC_BATCH * gpt.N_HEAD * gpt.SEQ * gpt.SEQ * 4
    saved = peaks["unfused"] - peaks["fused"]
    results.append((saved >= probs * gpt.N_LAYER,
                    f"tiny_gpt_t256 memory: planned peak unfused {peaks['unfused']}, fused "
                    f"{peaks['fused']} bytes ({peaks['fused'] / peaks['unfused']:.3f}); saved "
                    f"{saved} bytes, at least the {gpt.N_LAYER} layers' probabilities "
                    f"({probs} bytes each)"))


def check_left_alone(args, results):
    work = os.path.join(args.work, "dropout_gpt_static")
    model_dir = e2e_util.export_test_model("dropout_gpt", os.path.join(work, "model"),
                                           static_batch=STATIC_BATCH)
    data = e2e_util.reference_data("dropout_gpt", model_dir, os.path.join(work, "reference"))
    plain = train(args, model_dir, os.path.join(work, "plain.shard"), data, [])
    flagged = train(args, model_dir, os.path.join(work, "flagged.shard"), data,
                    ["--fuse-attention", "on"])
    if isinstance(plain, str) or isinstance(flagged, str):
        results.append((False, f"dropout_gpt_static: {plain if isinstance(plain, str) else flagged}"))
        return
    # A flag value other than on or off: one usage line, exit 2, nothing written.
    code, lines = e2e_util.refusal([args.shardc, os.path.join(model_dir, "model.onnx"), "-o",
                                    os.path.join(work, "bad.shard"), "--fuse-attention", "yes"])
    results.append((code == 2 and len(lines) == 1 and
                    "--fuse-attention 'yes': expected on or off" in lines[0] and
                    not os.path.exists(os.path.join(work, "bad.shard")),
                    f"--fuse-attention yes: exit {code}, {lines!r}"))
    ok = flagged["kernels"].get("attention", 0) == 0 and flagged["loss_text"] == plain["loss_text"]
    results.append((ok, f"dropout_gpt_static (attention dropout): "
                        f"{flagged['kernels'].get('attention', 0)} attention calls, losses "
                        f"bit-identical to the run without the flag: "
                        f"{flagged['loss_text'] == plain['loss_text']}"))


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, steps=30))
    results = []
    for model, layers, causal in MODELS_FUSED:
        for style in ["static", "dynamic"]:
            got = check_model(model, layers, causal, style, args, results)
            if got and model == "tiny_gpt" and style == "static":
                model_dir, data, fused = got
                check_sharded(args, model_dir, data, fused, results)
                check_bf16(args, model_dir, data, results)
    check_long_sequence(args, results)
    check_left_alone(args, results)
    return e2e_util.report(results)


if __name__ == "__main__":
    sys.exit(main())
