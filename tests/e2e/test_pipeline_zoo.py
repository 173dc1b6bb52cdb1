"""Pipeline parallelism on models written by others: Hugging Face GPT-2 and Llama in stages.

    test_pipeline_zoo.py --shardc PATH --shardrun PATH --work DIR [--models gpt2,llama]

Runs under the Python of tools/setup.sh's .venv (transformers). GPT2LMHeadModel and
LlamaForCausalLM (grouped-query attention, rotary embeddings, SwiGLU) are built as
test_model_zoo.py builds them (hidden 64, 4 heads, vocabulary 256, the model's own loss) but
with 4 layers, so that they cut into 2 and 4 stages, and a batch of 8 rows of 16 tokens, so
that it splits into 4 and 8 microbatches; each is exported in both styles as test_model_zoo.py
exports it (static: plain torch.onnx.export, batch and sequence baked into the graph; dynamic:
tools/export/shardc_export.py, both symbolic). Per model and style, 30 AdamW steps on the batch:
  * pp in {2, 4} x --schedule in {gpipe, 1f1b, zb-h1} x --micro-batches in {4, 8}: every
    step's loss within 1e-5 (relative) and the final parameters (--outputs, gathered from
    every stage) within 1e-4 of the single-rank run with the same --micro-batches (the same sums: expected
    bit-identical), as test_pipeline_parallel.py checks the test models; every step's loss
    within the model's tolerance of the single-rank run without microbatches;
  * interleaved with 2 chunks per rank (4 virtual stages of one layer) on 2 ranks, 2, 4 and
    8 microbatches (more than 2: its transfers posted): the same;
  * naive (one microbatch) on 2 and 4 stages: the same against the single-rank run (whose
    sums it computes: the stages keep the batch whole);
  the model's tolerance is test_model_zoo.py's, max(1e-5, twice the worst difference between
  PyTorch's float32 and float64 runs of the same 30 steps), measured here with PyTorch's
  float32 run on 1 and on 2 threads (GPT-2 with 4 layers turns float32 rounding into visible
  differences: PyTorch's float32 runs part from float64 by 2.1e-6 on 1 thread and 3.4e-5 on
  2; Llama's stay within 1e-5);
  * dp=2,tp=2,pp=2,zero=1 with 2 microbatches (8 ranks): the same against dp=2,tp=2,zero=1
    with 2 microbatches (4 ranks; tensor parallelism's partial sums round differently from one
    rank's whole sums, which the pp axis must not change), and every step's loss within the
    model's tolerance of the single-rank run.
  * `--strategy auto --cluster h100-80g-8x` on 4 devices (the cost model's search on a model
    written by others): the bundle's strategy is the decision's "chose" line, plan.json has
    the prediction and predicted_trace.json the chosen plan's timeline, and every step's loss
    is within the model's tolerance of the single-rank run.
Every run multiplies matrices on one OpenBLAS thread (--threads 1), as ranks that share a
machine's cores do: OpenBLAS's products round differently with other thread counts, and
AdamW turns that into parameter differences above 1e-4 on these models (one rank on 1 against
2 threads: 2.6e-4 on Llama after 30 steps; printed per model), so only runs on the same
thread count can be expected bit-identical.
test_model_zoo.py checks the single-rank runs of these models against PyTorch.
Prints PASS/FAIL per case and `N passed, M failed`.
"""

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402
import test_model_zoo as zoo  # noqa: E402
from test_data_parallel import LOSS_RTOL, STEPS, compare  # noqa: E402

LAYERS, ROWS = 4, 8
SCHEDULES = ["gpipe", "1f1b", "zb-h1"]


def rows8():
    return zoo.token_batch(ROWS)


MODELS = {
    "gpt2": zoo.Spec(lambda: zoo.hf_gpt2(LAYERS), rows8, zoo.TOKENS_DYNAMIC),
    "llama": zoo.hf_decoder("LlamaConfig", "LlamaForCausalLM", layers=LAYERS, inputs=rows8),
}


def main():
    p = e2e_util.argument_parser(__doc__, timeout=300)
    p.add_argument("--models", default=",".join(MODELS))
    args = e2e_util.parse_args(p)
    args.shardc_flag = []
    import transformers
    print(f"transformers {transformers.__version__}", flush=True)
    names = args.models.split(",")
    for name in names:
        zoo.MODELS[f"{name}_pp"] = MODELS[name]
    runner = zoo.Zoo(args)
    exports = {}  # (name, style) -> (onnx path, data dir, shape flags, work dir)
    runs = {}  # (name, style, tag) -> (losses, params) or an error

    tolerances = {}  # name -> the loss tolerance against runs of other sums

    def export(name, style):
        if (name, style) not in exports:
            module, batch, path, _, flags = runner.export(f"{name}_pp", style)
            work = os.path.dirname(path)
            exports[(name, style)] = (path, os.path.join(work, "data"), flags, work)
            if name not in tolerances:
                # As test_model_zoo.py: PyTorch's float32 and float64 runs bound what float32
                # sums in another order can promise; its float32 runs on 1 and on 2 threads
                # (which sum in other orders) both count.
                f64 = runner.torch_run(f"{name}_pp", module, batch, 1e-3, STEPS,
                                       zoo.torch.float64)[0]
                threads, floor = zoo.torch.get_num_threads(), 0.0
                for n in (1, 2):
                    zoo.torch.set_num_threads(n)
                    f32 = runner.torch_run(f"{name}_pp", module, batch, 1e-3, STEPS,
                                           zoo.torch.float32)[0]
                    floor = max(floor, zoo.worst_relative(f32, f64))
                zoo.torch.set_num_threads(threads)
                tolerances[name] = (max(LOSS_RTOL, 2 * floor), floor)
        return exports[(name, style)]

    def run(name, style, tag, flags, threads="1"):
        if (name, style, tag) in runs:
            return runs[(name, style, tag)]
        path, data, shape_flags, work = export(name, style)
        bundle = os.path.join(work, f"{tag}.shard")
        outputs = os.path.join(work, f"{tag}_params")
        err = runner.compile(path, bundle, shape_flags, *flags)
        result = err or runner.train(bundle, data, os.path.join(work, f"{tag}.jsonl"), 1e-3,
                                     STEPS, "--outputs", outputs, "--threads", threads)
        if not isinstance(result, str):
            params = {f[:-4]: np.load(os.path.join(outputs, f)) for f in os.listdir(outputs)}
            plan = json.load(open(os.path.join(bundle, "plan.json")))
            result = (result, params, plan)
        runs[(name, style, tag)] = result
        return result

    def case(name, style, tag, flags, micro_batches, same_math=None):
        """The run against `same_math` (tag, flags: the run computing the same sums, by default
        one rank with the same microbatches) and the single-rank run without microbatches."""
        def check():
            result = run(name, style, tag, flags)
            if isinstance(result, str):
                return result
            ref_flags = ["--micro-batches", str(micro_batches)] if micro_batches > 1 else []
            ref_tag, ref_run_flags = same_math or (f"single_mb{micro_batches}", ref_flags)
            ref = run(name, style, ref_tag, ref_run_flags)
            plain = run(name, style, "single_mb1", [])
            for r in (ref, plain):
                if isinstance(r, str):
                    return f"single-rank run: {r}"
            tolerance, floor = tolerances[name]
            # The same sums: losses within 1e-5, parameters within 1e-4.
            err, detail = compare(argparse.Namespace(reference=ref), result)
            if err:
                return err
            drift = max(abs(a - b) / abs(b) for a, b in zip(result[0], plain[0]))
            if drift > tolerance:
                return (f"losses part from the single-rank run without microbatches by "
                        f"{drift:.3g} > {tolerance:.2g}")
            idle = next((line.split(": ", 1)[1].split(" (")[0]
                         for line in result[2].get("pipeline", [])
                         if line.startswith("schedule ")), "")
            return None, (f"vs {' '.join(ref_run_flags) or '1 rank'}: {detail}; vs 1 rank without "
                          f"microbatches: loss rel {drift:.2g} (tolerance {tolerance:.2g}, "
                          f"PyTorch float32 vs float64 {floor:.2g})" +
                          (f"; {idle}" if idle else ""))
        return check

    def auto_case(name, style):
        """--strategy auto by the cost model (4 devices of an h100-80g-8x node): the bundle runs
        the plan the decision names, carries the prediction and its timeline, and trains as one
        rank does (within the model's tolerance: its sums may be tp's)."""
        def check():
            tag = "auto_cluster"
            result = run(name, style, tag, ["--gpus", "4", "--strategy", "auto",
                                            "--cluster", "h100-80g-8x"])
            if isinstance(result, str):
                return result
            plain = run(name, style, "single_mb1", [])
            if isinstance(plain, str):
                return f"single-rank run: {plain}"
            plan = result[2]
            chose = next((line for line in plan.get("strategy_decision", [])
                          if line.startswith("chose ")), "")
            if not chose.startswith(f"chose {plan['strategy']}"):
                return f"bundle strategy {plan['strategy']!r} is not the decision's: {chose!r}"
            if plan.get("prediction", {}).get("step_seconds", 0) <= 0:
                return "plan.json has no prediction"
            bundle = os.path.join(export(name, style)[3], f"{tag}.shard")
            trace = json.load(open(os.path.join(bundle, "predicted_trace.json")))
            if not trace["otherData"]["plan"].startswith(plan["strategy"]):
                return f"predicted_trace.json is of {trace['otherData']['plan']!r}"
            tolerance, _ = tolerances[name]
            drift = max(abs(a - b) / abs(b) for a, b in zip(result[0], plain[0]))
            if drift > tolerance:
                return f"losses part from one rank by {drift:.3g} > {tolerance:.2g}"
            return None, f"{chose.split(':')[0]}; vs 1 rank: loss rel {drift:.2g}"
        return check

    cases = []
    for name in names:
        for style in ("static", "dynamic"):
            for pp in (2, 4):
                cases.append((f"{name}_{style}_pp{pp}_naive",
                              case(name, style, f"pp{pp}_naive",
                                   ["--gpus", str(pp), "--strategy", f"pp={pp}",
                                    "--schedule", "naive"], 1)))
                for schedule in SCHEDULES:
                    for k in (4, 8):
                        cases.append((f"{name}_{style}_pp{pp}_{schedule}_mb{k}",
                                      case(name, style, f"pp{pp}_{schedule}_mb{k}",
                                           ["--gpus", str(pp), "--strategy", f"pp={pp}",
                                            "--schedule", schedule, "--micro-batches", str(k)],
                                           k)))
            for k in (2, 4, 8):
                cases.append((f"{name}_{style}_pp2_interleaved_v2_mb{k}",
                              case(name, style, f"pp2_interleaved_v2_mb{k}",
                                   ["--gpus", "2", "--strategy", "pp=2", "--schedule",
                                    "interleaved", "--virtual-stages", "2", "--micro-batches",
                                    str(k)], k)))
            cases.append((f"{name}_{style}_dp2_tp2_pp2_zero1",
                          case(name, style, "dp2_tp2_pp2_zero1",
                               ["--gpus", "8", "--strategy", "dp=2,tp=2,pp=2,zero=1",
                                "--micro-batches", "2"], 2,
                               ("dp2_tp2_zero1", ["--gpus", "4", "--strategy", "dp=2,tp=2,zero=1",
                                                  "--micro-batches", "2"]))))
            cases.append((f"{name}_{style}_auto_cluster", auto_case(name, style)))

        def thread_floor(name=name):
            """What OpenBLAS's thread count alone does to one rank's training (context for
            the runs above, which all use one thread)."""
            one = run(name, "static", "single_mb1", [])
            two = run(name, "static", "single_mb1_threads2", [], threads="2")
            for r in (one, two):
                if isinstance(r, str):
                    return r
            loss = max(abs(a - b) / abs(b) for a, b in zip(one[0], two[0]))
            param = max(float(np.max(np.abs(one[1][k] - two[1][k])) /
                              max(float(np.max(np.abs(two[1][k]))), 1e-30)) for k in one[1])
            return None, (f"one rank on 1 vs 2 OpenBLAS threads: loss rel {loss:.2g}, "
                          f"param rel {param:.2g}")
        cases.append((f"{name}_static_single_rank_thread_floor", thread_floor))
    e2e_util.run_cases(cases)


if __name__ == "__main__":
    main()
