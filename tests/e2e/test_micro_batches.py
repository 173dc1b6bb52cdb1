"""`shardc --micro-batches K` (gradient accumulation) against the same step without it, end to end.

    test_micro_batches.py --shardc PATH --shardrun PATH --work DIR [--steps 30]

Each device runs its rows as K microbatches one after another, adding up the gradients and the
loss before the reduction and the update; the step's math is the whole batch's. For the tiny
GPT, the GPT with dropout, the BERT-like encoder and the MLP classifier, in both export styles
(batch baked in at 8 rows, and the export's own dynamic_axes form; the tiny GPT's also given 8
rows, for ZeRO-3), shardrun trains 30 AdamW steps from the same weights on the same batches.
Checks:

  follows   every step's loss within 1e-6 (relative) of the 1-rank run without microbatches:
            K = 2, 4 and 8 on one device, K = 2 on dp=2, dp=2,zero=3 and dp=2,tp=2,zero=1, and
            K = 1, 2 and 4 on dp=2,zero=3 (dropout masks keyed on each microbatch's rows: the
            same mask as without them)
  memory    on every run, shardrun's measured peak equals the planned peak; on one device and
            under ZeRO-3 the activations at the planned peak (plan.txt) shrink as K grows (ZeRO-3
            gathers each unit again for every microbatch's forward and backward pass rather
            than holding it whole across the loop); plan.txt and plan.json state the
            microbatches
  refused   rows that do not divide into K microbatches, a model whose batch cannot be split
            (a loss over every pair of rows, x·xᵀ over the batch): one line,
            exit 1; --micro-batches 0 and --mode forward --micro-batches 2: one usage line,
            exit 2
Prints PASS/FAIL per case with the worst differences and the memory, and `N passed, M failed`.
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "models"))
import e2e_util  # noqa: E402
import export_util  # noqa: E402

RTOL = 1e-6
LR = 1e-3
STATIC_BATCH = 8
# (model, style, [(name, shardc flags)]): the runs compared with the 1-rank run without
# microbatches of the same export.
CASES = [
    ("tiny_gpt", "static", [("k2", ["--micro-batches", "2"]), ("k4", ["--micro-batches", "4"]),
                            ("k8", ["--micro-batches", "8"]),
                            ("dp2_k2", ["--gpus", "2", "--strategy", "dp=2",
                                        "--micro-batches", "2"]),
                            ("dp2_zero3", ["--gpus", "2", "--strategy", "dp=2,zero=3"]),
                            ("dp2_zero3_k2", ["--gpus", "2", "--strategy", "dp=2,zero=3",
                                              "--micro-batches", "2"]),
                            ("dp2_zero3_k4", ["--gpus", "2", "--strategy", "dp=2,zero=3",
                                              "--micro-batches", "4"])]),
    ("tiny_gpt", "dynamic", [("k2", ["--micro-batches", "2"])]),
    # The dynamic export given 8 rows (--input-shape idx=8x16, data of 8 rows a step), so that
    # ZeRO-3 with microbatches runs on that export style too.
    ("tiny_gpt", "dynamic8", [("dp2_zero3", ["--gpus", "2", "--strategy", "dp=2,zero=3"]),
                              ("dp2_zero3_k2", ["--gpus", "2", "--strategy", "dp=2,zero=3",
                                                "--micro-batches", "2"]),
                              ("dp2_zero3_k4", ["--gpus", "2", "--strategy", "dp=2,zero=3",
                                                "--micro-batches", "4"])]),
    ("dropout_gpt", "static", [("k4", ["--micro-batches", "4"]),
                               ("dp2_zero3_k2", ["--gpus", "2", "--strategy", "dp=2,zero=3",
                                                 "--micro-batches", "2"]),
                               ("dp2_tp2_zero1_k2", ["--gpus", "4", "--strategy",
                                                     "dp=2,tp=2,zero=1", "--micro-batches",
                                                     "2"])]),
    ("bert_encoder", "static", [("k2", ["--micro-batches", "2"]),
                                ("k4", ["--micro-batches", "4"])]),
    ("bert_encoder", "dynamic", [("k2", ["--micro-batches", "2"])]),
    ("mlp_classifier", "static", [("k4", ["--micro-batches", "4"])]),
    ("mlp_classifier", "dynamic", [("k4", ["--micro-batches", "4"])]),
]


def losses(path):
    return [json.loads(line)["loss"] for line in open(path)]


def worst(a, b):
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


def train(args, model_dir, bundle, data, flags):
    """Compiles and trains; returns (losses, peaks, activation bytes, plan.txt, plan.json) or an
    error string."""
    out, err = e2e_util.compile_and_train(args.shardc, args.shardrun, model_dir, bundle, data,
                                          flags, args.steps, LR)
    if err:
        return err
    metrics = bundle + ".jsonl"
    peaks = e2e_util.memory_peaks(out)
    plan = open(os.path.join(bundle, "plan.txt")).read()
    activations = re.search(r"\n    activations: (\d+) bytes", plan)
    return (losses(metrics), peaks, int(activations.group(1)) if activations else None, plan,
            json.load(open(os.path.join(bundle, "plan.json"))))


def check_model(model, style, runs, args, results):
    work = os.path.join(args.work, f"{model}_{style}")
    model_dir = e2e_util.export_test_model(
        model, os.path.join(work, "model"),
        static_batch=STATIC_BATCH if style == "static" else None)
    batch = None
    if style == "dynamic8":
        # The dynamic export (its shapes computed in the graph) with its inputs given 8 rows
        # instead of the 2 it was traced with.
        batch = STATIC_BATCH
        rebatched = export_util.with_global_batch(os.path.join(model_dir, "model.onnx"), batch)
        os.replace(rebatched, os.path.join(model_dir, "model.onnx"))
    data = e2e_util.reference_data(model, model_dir, os.path.join(work, "reference"), batch=batch)
    base = train(args, model_dir, os.path.join(work, "k1.shard"), data, [])
    if isinstance(base, str):
        results.append((False, f"{model}_{style} k1: {base}"))
        return
    base_losses, _, base_activations, _, _ = base
    # Activations at the planned peak, per strategy (the flags but the microbatches) and K.
    activations = {"1 device": {1: base_activations}}
    for name, flags in runs:
        got = train(args, model_dir, os.path.join(work, f"{name}.shard"), data, flags)
        if isinstance(got, str):
            results.append((False, f"{model}_{style} {name}: {got}"))
            continue
        run_losses, peaks, acts, plan, plan_json = got
        k, strategy = 1, flags
        if "--micro-batches" in flags:
            at = flags.index("--micro-batches")
            k, strategy = int(flags[at + 1]), flags[:at] + flags[at + 2:]
        diff = worst(run_losses, base_losses)
        peaks_equal = bool(peaks) and all(p == m for p, m in peaks)
        stated = (k == 1 or f"\nmicro-batches: {k} per rank" in plan) and \
            plan_json.get("micro_batches", 1) == k
        if "zero=3" in strategy and k > 1:
            # ZeRO-3 gathers each unit again for every microbatch's forward and backward pass.
            stated = stated and all(f"'{p}/mb{k - 1}/" in plan for p in ("forward", "backward"))
        ok = (len(run_losses) == args.steps and diff <= RTOL and peaks_equal and stated)
        results.append((ok, f"{model}_{style} {name}: worst {diff:.2e} (<= {RTOL:g}) over "
                            f"{len(run_losses)} steps; planned = measured peak on "
                            f"{len(peaks)} rank(s): {peaks_equal}"
                            + (f" ({peaks[0][0]} bytes)" if peaks else "")
                            + f"; plan states the microbatches: {stated}"))
        activations.setdefault(" ".join(strategy) or "1 device", {})[k] = acts
    for strategy, by_k in activations.items():
        ks = sorted(by_k)
        if len(ks) < 2 or ks[0] != 1:
            continue
        shrinking = all(by_k[a] is not None and by_k[b] is not None and by_k[b] < by_k[a]
                        for a, b in zip(ks, ks[1:]))
        results.append((shrinking, f"{model}_{style} {strategy}: activations at the planned "
                        "peak by K: " + ", ".join(f"K={k}: {by_k[k]} B" for k in ks)))


def pairwise_model(path):
    """h = x·W, loss = mean(h·hᵀ): every row meets every other, so no microbatch has its part."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.full((4, 4), 0.1, np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="project"),
             helper.make_node("Transpose", ["h"], ["ht"], name="transpose", perm=[1, 0]),
             helper.make_node("MatMul", ["h", "ht"], ["pairs"], name="pairs"),
             helper.make_node("ReduceMean", ["pairs"], ["loss"], name="loss", keepdims=0)]
    graph = helper.make_graph(nodes, "pairwise",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 4])],
                              [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], [w])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return os.path.dirname(path)


def check_refusals(args, results):
    tiny = e2e_util.export_test_model("tiny_gpt",
                                      os.path.join(args.work, "tiny_gpt_static", "model"),
                                      static_batch=STATIC_BATCH)
    pairwise = pairwise_model(os.path.join(args.work, "pairwise", "model.onnx"))
    cases = [
        ("rows do not divide", tiny, ["--micro-batches", "3"], 1,
         "do not divide into 3 equal microbatches"),
        ("dp rows do not divide", tiny, ["--gpus", "2", "--strategy", "dp=2",
                                          "--micro-batches", "3"], 1,
         "do not divide into 3 equal microbatches"),
        ("rows paired with each other", pairwise, ["--micro-batches", "2"], 1,
         "--micro-batches 2: node 'pairs' (matmul) needs the whole batch"),
        ("zero microbatches", tiny, ["--micro-batches", "0"], 2, "--micro-batches needs"),
        ("forward mode", tiny, ["--mode", "forward", "--micro-batches", "2"], 2,
         "applies to training"),
    ]
    for name, model_dir, flags, code, expected in cases:
        out = os.path.join(args.work, "refused.shard")
        status, lines = e2e_util.refusal([args.shardc, os.path.join(model_dir, "model.onnx"),
                                          "-o", out, *e2e_util.input_shape_flags(model_dir),
                                          *flags])
        ok = (status == code and len(lines) == 1 and expected in lines[0] and
              lines[0].startswith("shardc: error: "))
        results.append((ok, f"refused ({name}): exit {status}, {lines!r}"))


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, steps=30))
    results = []
    for model, style, runs in CASES:
        check_model(model, style, runs, args, results)
    check_refusals(args, results)
    return e2e_util.report(results)


if __name__ == "__main__":
    sys.exit(main())
