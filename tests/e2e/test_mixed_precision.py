"""`shardc --precision bf16` against PyTorch applying the same cast policy, end to end.

    test_mixed_precision.py --shardc PATH --shardrun PATH --work DIR [--steps 30]

For the MLP classifier (Gemm products), the tiny GPT and the BERT-like encoder, each exported
in both styles (with dynamic_axes and with the batch baked in): PyTorch trains the model 30
AdamW steps in fp32 and under the bf16 policy (tests/models/bf16_policy.py: matrix products
on bf16-rounded operands with bf16-rounded results, f32 accumulation, everything else f32,
f32 master weights), from the ONNX weights on the same batches; shardc compiles the step with
`--precision fp32` and `--precision bf16` and shardrun trains each 30 steps. Checks:

  bf16      every step's loss within 5e-3 (relative) of PyTorch's bf16 loss; the fp32 run
            within 1e-5 of PyTorch's fp32 loss; both implementations' fp32-vs-bf16 gaps are
            printed side by side (each must be above float32 noise, 1e-6: bf16 is really used)
  storage   --half-storage on (the default: the rounded values live in 16-bit buffers, products
            read and write them, ZeRO-3 gathers bf16 weights) against off (the same values kept
            as f32 copies): losses string-equal (bit-identical), a smaller planned arena, and
            measured = planned on every rank; for each model and style, and sharded
  sharded   the tiny GPT with bf16 on 4 ranks, dp=2,tp=2,zero=1 and dp=2,tp=2,zero=3, with the
            gradients reduced in f32 and in bf16 (--reduce-dtype): every step within 5e-3 of
            the 1-rank bf16 run, the bf16 reductions sending half the bytes; the same with SGD
            (which, unlike AdamW, follows the gradient's scale)
  ir        the bf16 bundle's plan states its precision and lists bf16 buffers (the casts'
            results); the fp32 one neither
  native    the bf16 bundle trained again with shardrun's default --bf16-products auto (the
            runs above ask for exact products, which the storage check's bit-identity needs):
            the summary line names native oneDNN products exactly where /proc/cpuinfo lists
            avx512_bf16 or amx_bf16, and every loss is within 5e-3 of PyTorch's bf16 loss (on
            other CPUs auto takes the exact path: the losses then equal the exact run's)
  fp16      --precision fp16 with dynamic loss scaling (the tiny GPT) against PyTorch under the
            same policy in float16 with GradScaler's rule (train_reference.py's LossScaler):
            from a scale of 2^30 the first steps overflow and are skipped, from 65536 with a
            growth interval of 5 the scale grows until a step overflows; the same steps are
            skipped, the scales equal, every loss within 5e-3. Sharded, each of 2 data-parallel
            ranks rounds its half's gradient (as PyTorch DDP does), so dp=2 ZeRO-1, dp=2,tp=2
            ZeRO-3 and 1 rank with 2 microbatches are checked the same way against PyTorch on
            the batch run as two accumulated halves
  refused   --precision fp16/bf16 --mode forward, a loss scale that is not a power of two,
            loss-scale flags without fp16, --reduce-dtype without its precision or without
            16-bit storage, a bad --half-storage: one usage error line, exit 2

Why 5e-3 and not 1e-5: a bf16 rounding step is 2^-8 of the value, so two implementations whose
f32 sums differ in the last bit round a few elements to neighbouring bf16 values; the loss
curves then differ by about the bf16 effect itself, not by float32 noise.
Prints PASS/FAIL per case with the worst differences, and `N passed, M failed`.
"""

import importlib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, os.pardir, "models")
sys.path.insert(0, HERE)
sys.path.insert(0, MODELS)
import e2e_util  # noqa: E402

# Every run but the native check's multiplies bf16 operands exactly (cpu/matmul.cpp): the
# bit-identity of 16-bit storage and f32 copies holds for the exact path on every CPU.
EXACT_PRODUCTS = ("--bf16-products", "exact")
BF16_RTOL = 5e-3
FP32_RTOL = 1e-5
USED_ABOVE = 1e-6
LR = 1e-3
DATA_BATCHES = 4
MODELS_UNDER_TEST = ["mlp_classifier", "tiny_gpt", "bert_encoder"]
SHARDED = ["dp=2,tp=2,zero=1", "dp=2,tp=2,zero=3"]
PEAKS = {}  # bundle -> [(planned, measured) peak bytes per rank]


def losses(path):
    return [json.loads(line)["loss"] for line in open(path)]


def worst(a, b):
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


def reference(model, model_dir, out, precision, args, data=None):
    return e2e_util.train_reference(
        model, model_dir, out, args.steps, "--precision", precision,
        *(["--data", data] if data else ["--make-data", str(DATA_BATCHES)]))


def train(args, model_dir, bundle, data, metrics, flags):
    """Compiles with `flags` and trains with exact bf16 products; returns the losses. The
    metrics land in `metrics`, shardrun's planned and measured peaks per rank in
    PEAKS[bundle]."""
    out, error = e2e_util.compile_and_train(args.shardc, args.shardrun, model_dir, bundle, data,
                                            flags, args.steps, LR, EXACT_PRODUCTS)
    if error:
        raise RuntimeError(error)
    os.replace(bundle + ".jsonl", metrics)
    PEAKS[bundle] = e2e_util.memory_peaks(out)
    return losses(metrics)


def cpu_has_native_bf16():
    """Whether the kernel lists an instruction set that multiplies bf16 (oneDNN's test)."""
    try:
        flags = open("/proc/cpuinfo").read().split()
    except OSError:
        return None
    return "avx512_bf16" in flags or "amx_bf16" in flags


def check_native_products(name, bundle, data, exact_losses, torch_bf16, args, results):
    """Trains `bundle` again with --bf16-products auto: the path the summary line names, and
    the losses against PyTorch's bf16 ones (and the exact run's, when the path is exact)."""
    metrics = bundle + ".auto.jsonl"
    res = e2e_util.run_tool([args.shardrun, bundle, "--steps", str(args.steps), "--data", data,
                             "--lr", str(LR), "--metrics", metrics], 600)
    if not res.ok:
        results.append((False, f"{name} --bf16-products auto: {res.describe()}"))
        return
    summary = res.stdout + res.stderr
    native = "bf16 x bf16 products native on oneDNN" in summary
    exact = "no native bf16 products" in summary
    expected = cpu_has_native_bf16()
    auto = losses(metrics)
    diff = worst(auto, torch_bf16)
    path_ok = native != exact and (expected is None or native == expected)
    results.append((path_ok and diff <= BF16_RTOL and (native or auto == exact_losses),
                    f"{name} --bf16-products auto: {'native' if native else 'exact'} products "
                    f"(/proc/cpuinfo: native bf16 {expected}); vs PyTorch bf16 worst "
                    f"{diff:.2e} (<= {BF16_RTOL:g}), vs the exact run worst "
                    f"{worst(auto, exact_losses):.2e}"))


def loss_texts(path):
    """Each step's loss as shardrun printed it: equal texts are equal bits."""
    return [e2e_util.metrics_field(line, "loss") for line in e2e_util.metric_lines(path)]


def arena_bytes(bundle):
    """The largest planned arena of the bundle's ranks: where the step's values live."""
    plan = json.load(open(os.path.join(bundle, "plan.json")))
    return max(r["arena"]["bytes"] for r in plan["memory_per_rank"])


def check_storage(name, bundle_on, bundle_off, metrics_on, metrics_off, results):
    """--half-storage on against off (the same values kept as f32 copies): string-equal
    losses, a smaller planned arena (the values; the peak also counts the CPU GEMMs' workspace,
    where they widen 16-bit operands, which on a model as small as the MLP outweighs what the
    values save now that fused chains keep no f32 copies between ops), and measured = planned
    on every rank of both."""
    same = loss_texts(metrics_on) == loss_texts(metrics_off)
    peak_on, peak_off = PEAKS[bundle_on], PEAKS[bundle_off]
    equal = bool(peak_on) and bool(peak_off) and all(p == m for p, m in peak_on + peak_off)
    on, off = max(p for p, _ in peak_on), max(p for p, _ in peak_off)
    arena_on, arena_off = arena_bytes(bundle_on), arena_bytes(bundle_off)
    results.append((same and equal and arena_on < arena_off,
                    f"{name} 16-bit storage: losses bit-identical to --half-storage off: {same}; "
                    f"planned arena {arena_on} bytes against {arena_off} "
                    f"({arena_on / arena_off:.3f}), peak {on} against {off} ({on / off:.3f}); "
                    f"measured = planned on every rank: {equal}"))


def check_model(model, style, args, results):
    work = os.path.join(args.work, f"{model}_{style}")
    batch = importlib.import_module(f"export_{model}").BATCH
    model_dir = e2e_util.export_test_model(
        model, os.path.join(work, "model"), static_batch=None if style == "dynamic" else batch)
    torch_bf16 = reference(model, model_dir, os.path.join(work, "torch_bf16"), "bf16", args)
    data = os.path.join(work, "torch_bf16", "data")
    torch_fp32 = reference(model, model_dir, os.path.join(work, "torch_fp32"), "fp32", args, data)
    ours = {}
    for precision in ("fp32", "bf16"):
        ours[precision] = train(args, model_dir, os.path.join(work, f"{precision}.shard"), data,
                                os.path.join(work, f"{precision}.jsonl"),
                                ["--precision", precision])
    train(args, model_dir, os.path.join(work, "bf16_f32copies.shard"), data,
          os.path.join(work, "bf16_f32copies.jsonl"), ["--precision", "bf16", "--half-storage",
                                                       "off"])
    check_storage(f"{model}_{style}", os.path.join(work, "bf16.shard"),
                  os.path.join(work, "bf16_f32copies.shard"), os.path.join(work, "bf16.jsonl"),
                  os.path.join(work, "bf16_f32copies.jsonl"), results)
    check_native_products(f"{model}_{style}", os.path.join(work, "bf16.shard"), data,
                          ours["bf16"], torch_bf16, args, results)
    bf16_diff = worst(ours["bf16"], torch_bf16)
    fp32_diff = worst(ours["fp32"], torch_fp32)
    gap_ours, gap_torch = worst(ours["bf16"], ours["fp32"]), worst(torch_bf16, torch_fp32)
    ok = (bf16_diff <= BF16_RTOL and fp32_diff <= FP32_RTOL and gap_ours > USED_ABOVE and
          gap_torch > USED_ABOVE)
    results.append((ok, f"{model}_{style}: bf16 vs PyTorch bf16 worst {bf16_diff:.2e} "
                        f"(<= {BF16_RTOL:g}); fp32 vs PyTorch fp32 worst {fp32_diff:.2e}; "
                        f"fp32-vs-bf16 gap: shardc {gap_ours:.2e}, PyTorch {gap_torch:.2e}"))

    plan = open(os.path.join(work, "bf16.shard", "plan.txt")).read()
    plan32 = open(os.path.join(work, "fp32.shard", "plan.txt")).read()
    bf16_buffers = len(re.findall(r"%\d+ bf16\[", plan))
    results.append((bf16_buffers > 0 and "bf16[" not in plan32 and
                    "\nprecision: bf16: " in plan and "\nprecision:" not in plan32,
                    f"{model}_{style} ir: {bf16_buffers} bf16 buffer mentions in the bf16 plan, "
                    f"{plan32.count('bf16[')} in the fp32 plan"))
    if model != "tiny_gpt" or style != "dynamic":
        return
    for strategy in SHARDED:
        name = strategy.replace(",", "_").replace("=", "")
        runs = {}
        for reduce in ("fp32", "bf16"):
            bundle = os.path.join(work, f"bf16_{name}_reduce_{reduce}.shard")
            runs[reduce] = (bundle, train(args, model_dir, bundle, data, bundle + ".metrics",
                                          ["--precision", "bf16", "--gpus", "4", "--strategy",
                                           strategy, "--reduce-dtype", reduce]))
            diff = worst(runs[reduce][1], ours["bf16"])
            results.append((diff <= BF16_RTOL,
                            f"{model} bf16 {strategy} --reduce-dtype {reduce} vs 1 rank bf16: "
                            f"worst {diff:.2e} (<= {BF16_RTOL:g})"))
        # ZeRO's mixed-precision accounting: 2Ψ + 2Ψ + 12Ψ split by stage; the f32 master
        # weights are sharded with the AdamW state (exactly 12Ψ_rank/N of them on this rank).
        zero = json.load(open(os.path.join(runs["bf16"][0], "plan.json")))["zero_accounting"]
        stage = zero["formulas"][zero["stage"]]
        expected = {1: "4Ψ_rank + 12Ψ_rank/N", 3: "16Ψ_rank/N"}[zero["stage"]]
        results.append((zero["mixed_precision"] and stage["formula"] == expected and
                        zero["actual"]["optimizer_state_bytes"] == stage["optimizer_state_bytes"]
                        == 12 * zero["psi_rank"] // zero["ranks"],
                        f"{model} bf16 {strategy} --reduce-dtype bf16 ZeRO accounting: "
                        f"{stage['formula']} (expected {expected}), master weights and state "
                        f"{zero['actual']['optimizer_state_bytes']} bytes against "
                        f"{stage['optimizer_state_bytes']}; working parameters "
                        f"{zero['actual']['parameter_bytes']} against "
                        f"{stage['parameter_bytes']} (f32-read ones at 4 bytes)"))
        # The gradients' reductions move half the bytes in bf16; nothing else changes.
        sent = {r: gradient_reduction_bytes(b) for r, (b, _) in runs.items()}
        results.append((sent["bf16"] * 2 == sent["fp32"] > 0,
                        f"{model} bf16 {strategy}: gradient reductions send {sent['fp32']} bytes "
                        f"per rank in f32, {sent['bf16']} with --reduce-dtype bf16"))
        # AdamW hardly sees a gradient off by a constant factor; SGD follows it, so a
        # reduction that sums a gradient twice (or misses a rank) cannot pass here.
        sgd = {}
        for gpus, strategy_flags in (("1", []), ("4", ["--strategy", strategy])):
            bundle = os.path.join(work, f"bf16_sgd_{name}_{gpus}.shard")
            sgd[gpus] = train(args, model_dir, bundle, data, bundle + ".metrics",
                              ["--precision", "bf16", "--optimizer", "sgd", "--gpus", gpus,
                               *strategy_flags])
        diff = worst(sgd["4"], sgd["1"])
        results.append((diff <= BF16_RTOL, f"{model} bf16 SGD {strategy} vs 1 rank bf16 SGD: "
                                           f"worst {diff:.2e} (<= {BF16_RTOL:g})"))
        off = os.path.join(work, f"bf16_{name}_f32copies.shard")
        train(args, model_dir, off, data, off + ".metrics",
              ["--precision", "bf16", "--gpus", "4", "--strategy", strategy, "--half-storage",
               "off"])
        check_storage(f"{model} bf16 {strategy}", runs["fp32"][0], off,
                      runs["fp32"][0] + ".metrics", off + ".metrics", results)


def gradient_reduction_bytes(bundle):
    """Bytes rank 0 sends in the data-parallel gradient reductions (plan.json)."""
    plan = json.load(open(os.path.join(bundle, "plan.json")))
    return sum(c["bytes_sent"] for c in plan["communication"]["collectives"]
               if c["name"].startswith("gradients/") and c["group"] == "dp")


def check_refusals(args, results):
    model_dir = e2e_util.export_test_model("mlp_classifier",
                                           os.path.join(args.work, "mlp_classifier_dynamic",
                                                        "model"))
    for flags, expected in [(["--precision", "fp16", "--mode", "forward"],
                             "--precision fp16: applies to training"),
                            (["--precision", "bf16", "--mode", "forward"],
                             "--precision bf16: applies to training"),
                            (["--precision", "fp16", "--loss-scale-init", "1000"],
                             "--loss-scale-init needs a power of two"),
                            (["--precision", "bf16", "--loss-scale-init", "1024"],
                             "apply to --precision fp16"),
                            (["--reduce-dtype", "bf16"], "--reduce-dtype bf16 needs --precision "
                                                         "bf16 (the gradients are fp32)"),
                            (["--precision", "fp16", "--reduce-dtype", "bf16"],
                             "--reduce-dtype bf16 needs --precision bf16"),
                            (["--precision", "bf16", "--reduce-dtype", "bf16", "--half-storage",
                              "off"], "needs --half-storage on"),
                            (["--precision", "bf16", "--half-storage", "maybe"],
                             "--half-storage needs on or off")]:
        r = subprocess.run([args.shardc, os.path.join(model_dir, "model.onnx"), "-o",
                            os.path.join(args.work, "refused.shard"), *flags],
                           capture_output=True, text=True)
        first = r.stderr.splitlines()[0] if r.stderr else ""
        results.append((r.returncode == 2 and expected in first,
                        f"refused {' '.join(flags)}: exit {r.returncode}: {first}"))


def check_fp16(args, results):
    """fp16 with dynamic loss scaling against the reference's GradScaler rule, from a scale
    that overflows (2^30) so the first steps are skipped, and from the default 65536 with a
    growth interval of 5 so the scale grows until it overflows; then sharded against 1 rank."""
    model = "tiny_gpt"
    work = os.path.join(args.work, "fp16")
    model_dir = e2e_util.export_test_model(model, os.path.join(work, "model"))
    for init in (2 ** 30, 65536):
        name = f"init{init}"
        flags = ["--precision", "fp16", "--loss-scale-init", str(init),
                 "--loss-scale-growth-interval", "5"]
        out = os.path.join(work, f"torch_{name}")
        e2e_util.train_reference(model, model_dir, out, args.steps, *flags, "--make-data",
                                 str(DATA_BATCHES))
        torch_log = [json.loads(line) for line in open(os.path.join(out, "losses.jsonl"))]
        data = os.path.join(out, "data")
        runs = {"1 rank": []}
        if init == 65536:
            # 16-bit storage against f32 copies of the same f16 values, with loss scaling:
            # the same bits, the same skipped steps.
            runs["1 rank, --half-storage off"] = ["--half-storage", "off"]
        if init == 2 ** 30:
            # Two data-parallel ranks each round the gradient of their half of the batch to
            # fp16 before the reduction adds the halves (as PyTorch DDP does), so which steps
            # overflow follows the halves: the reference is GradScaler's rule on the batch run
            # as two accumulated halves, which the 1-rank run with 2 microbatches also is.
            e2e_util.train_reference(model, model_dir, out + "_halves", args.steps, *flags,
                                     "--data", data, "--micro-batches", "2")
            halves_log = [json.loads(line)
                          for line in open(os.path.join(out + "_halves", "losses.jsonl"))]
            runs["1 rank, 2 microbatches"] = ["--micro-batches", "2"]
            runs["dp=2,zero=1"] = ["--gpus", "2", "--strategy", "dp=2,zero=1"]
            runs["dp=2,tp=2,zero=3"] = ["--gpus", "4", "--strategy", "dp=2,tp=2,zero=3"]
        for run_name, extra in runs.items():
            metrics = os.path.join(work, f"{name}_{run_name.replace(',', '_').replace('=', '')}"
                                         ".jsonl").replace(" ", "_")
            train(args, model_dir, metrics.replace(".jsonl", ".shard"), data, metrics,
                  flags + extra)
            ours = [json.loads(line) for line in open(metrics)]
            skipped = [r["step"] for r in ours if r["overflow"]]
            if run_name == "1 rank, --half-storage off":
                plain = os.path.join(work, f"{name}_1_rank.jsonl")
                same = metrics != plain and loss_texts(metrics) == loss_texts(plain)
                results.append((same, f"fp16 {name} 16-bit storage: losses (and so skipped "
                                      f"steps) bit-identical to --half-storage off: {same}"))
                continue
            ref = torch_log if run_name == "1 rank" else halves_log
            what = "PyTorch's GradScaler rule" + ("" if run_name == "1 rank" else
                                                  " on the batch as two accumulated halves")
            ref_skipped = [r["step"] for r in ref if r["overflow"]]
            scales_match = all(abs(a["loss_scale"] - b["loss_scale"]) <= 1e-7 * b["loss_scale"]
                               for a, b in zip(ours, ref))
            diff = max(abs(a["loss"] - b["loss"]) / abs(b["loss"]) for a, b in zip(ours, ref))
            ok = (len(ours) == args.steps and skipped and skipped == ref_skipped and
                  scales_match and diff <= BF16_RTOL)
            results.append((ok, f"fp16 {name} {run_name} vs {what}: skipped steps {skipped} "
                                f"(reference {ref_skipped}), loss scales equal: {scales_match}, "
                                f"final scale {ours[-1]['loss_scale']:g}, worst loss {diff:.2e} "
                                f"(<= {BF16_RTOL:g})"))


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, steps=30))
    results = []
    for model in MODELS_UNDER_TEST:
        for style in ("dynamic", "static"):
            check_model(model, style, args, results)
    check_fp16(args, results)
    check_refusals(args, results)
    sys.exit(e2e_util.report(results))


if __name__ == "__main__":
    main()
