"""`--cluster`: the cost model's prediction of any plan and `--strategy auto`'s choice by it.

    test_cost_model.py --shardc PATH --shardrun PATH --work DIR

On the deep test GPT (8 blocks, global batch 8) and the BERT-like encoder, both export styles:
  * an explicit plan (dp=2,tp=2 and dp=2,pp=2 with 4 microbatches, on a100-80g-8x) gets plan.json
    `prediction` with its eight keys, positive where they must be, and plan.txt's "Predicted
    step"; the same plan predicted with --predict-only gives the same numbers and writes no
    program;
  * `--strategy auto --cluster a100-80g-8x --gpus 8` compiles its choice: the bundle's strategy is
    the "chose" line's, the five alternatives are predicted no faster, and the bundle trains (2
    steps, finite losses); `auto,tp=2` keeps tp=2; on 16 devices the 8-row batch is named too
    small, with the best plan per device on fewer devices;
  * `shardc calibrate` writes a cluster that `--cluster FILE` reads (and `--cluster cpu` from
    $SHARDC_CLUSTER_DIR);
  * refused in one line: an unknown cluster, a cluster file missing a field, `--cluster cpu`
    before any calibration, --predict-only without --cluster, auto's fixed axes without
    --cluster or not dividing --gpus.
Prints PASS/FAIL per case and `N passed, M failed`.
"""

import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "models"))
import e2e_util  # noqa: E402
import train_reference  # noqa: E402

KEYS = ["step_seconds", "tokens_per_second", "model_flops_per_device", "mfu", "bubble_fraction",
        "exposed_comm_seconds", "recompute_seconds", "peak_bytes"]


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, timeout=300.0))
    models = {}
    for name in ("deep_gpt", "bert_encoder"):
        for style in ("dynamic", "static"):
            out = os.path.join(args.work, f"{name}_{style}")
            model_dir = e2e_util.export_test_model(name, out,
                                                   static_batch=8 if style == "static" else None)
            onnx_path = os.path.join(model_dir, "model.onnx")
            if style == "dynamic":
                import export_util
                onnx_path = export_util.with_global_batch(onnx_path, 8)
            models[(name, style)] = onnx_path

    def shardc(onnx_path, tag, flags, env=None):
        out = os.path.join(args.work, tag)
        shutil.rmtree(out, ignore_errors=True)
        argv = [args.shardc, onnx_path, "-o", out, *flags]
        if env:
            old = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
        try:
            res = e2e_util.run_tool(argv, args.timeout)
        finally:
            if env:
                for k, v in old.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
        return res, out

    cases = []

    def explicit_case(key, strategy, extra):
        def case():
            name, style = key
            tag = f"{name}_{style}_{strategy.replace('=', '').replace(',', '_')}"
            flags = ["--gpus", "4", "--strategy", strategy, *extra, "--cluster", "a100-80g-8x"]
            res, out = shardc(models[key], tag, flags)
            if not res.ok:
                return f"shardc failed: {res.stderr.strip()}"
            plan = json.load(open(os.path.join(out, "plan.json")))
            p = plan.get("prediction")
            if not p or sorted(p) != sorted(KEYS):
                return f"plan.json prediction is {p}"
            if not all(p[k] > 0 for k in ("step_seconds", "tokens_per_second",
                                          "model_flops_per_device", "mfu", "peak_bytes")):
                return f"non-positive prediction {p}"
            if "pp=" in strategy and not p["bubble_fraction"] > 0:
                return f"a pipeline without a bubble: {p}"
            text = open(os.path.join(out, "plan.txt")).read()
            if "== Predicted step" not in text:
                return "plan.txt has no Predicted step section"
            res2, out2 = shardc(models[key], tag + "_predict_only", flags + ["--predict-only"])
            if not res2.ok:
                return f"--predict-only failed: {res2.stderr.strip()}"
            if os.path.exists(os.path.join(out2, "program.pb")):
                return "--predict-only wrote a program"
            q = json.load(open(os.path.join(out2, "prediction.json")))["prediction"]
            if q != p:
                return f"--predict-only predicts {q}, the compile {p}"
            return None, (f"step {p['step_seconds'] * 1e3:.3f} ms, MFU {100 * p['mfu']:.3f}%, "
                          f"bubble {100 * p['bubble_fraction']:.1f}%")
        return case

    def auto_case(key):
        def case():
            name, style = key
            res, out = shardc(models[key], f"{name}_{style}_auto",
                              ["--gpus", "8", "--cluster", "a100-80g-8x"])
            if not res.ok:
                return f"shardc failed: {res.stderr.strip()}"
            plan = json.load(open(os.path.join(out, "plan.json")))
            decision = plan["strategy_decision"]
            chose = next((d for d in decision if d.startswith("chose ")), None)
            if not chose:
                return f"no 'chose' line in {decision}"
            chosen = chose[len("chose "):].split(" ")[0]
            if plan["strategy"] != chosen:
                return f"compiled {plan['strategy']}, the decision chose {chosen}"
            alternatives = [d for d in decision if d.startswith("alternative ")]
            if not alternatives or any("(-" in d for d in alternatives):
                return f"alternatives faster than the choice or none: {alternatives}"
            data_dir = os.path.join(args.work, f"{name}_data")
            if not os.path.isdir(data_dir):
                module = __import__(f"export_{name}")
                data = train_reference.make_data(name, module, 2, 8,
                                                 __import__("numpy").random.default_rng(0))
                os.makedirs(data_dir, exist_ok=True)
                import numpy as np
                for k, v in data.items():
                    np.save(os.path.join(data_dir, k + ".npy"), v)
            metrics = out + ".jsonl"
            run = e2e_util.run_tool([args.shardrun, out, "--steps", "2", "--data", data_dir,
                                     "--threads", "1", "--metrics", metrics], args.timeout)
            if not run.ok:
                return f"shardrun failed: {run.stderr.strip()[-300:]}"
            losses = [json.loads(line)["loss"] for line in open(metrics)]
            if len(losses) != 2 or not all(abs(x) < 1e6 for x in losses):
                return f"losses {losses}"
            return None, f"{chose.split(':')[0]}; {len(alternatives)} alternatives; losses {losses}"
        return case

    def fixed_case():
        res, out = shardc(models[("deep_gpt", "static")], "auto_tp2",
                          ["--gpus", "8", "--strategy", "auto,tp=2", "--cluster", "h100-80g-8x"])
        if not res.ok:
            return f"shardc failed: {res.stderr.strip()}"
        plan = json.load(open(os.path.join(out, "plan.json")))
        if ",tp=2" not in plan["strategy"]:
            return f"auto,tp=2 compiled {plan['strategy']}"
        return None, plan["strategy"]

    def small_batch_case():
        res, out = shardc(models[("deep_gpt", "static")], "auto16",
                          ["--gpus", "16", "--cluster", "a100-80g-8x", "--predict-only"])
        if not res.ok:
            return f"shardc failed: {res.stderr.strip()}"
        decision = json.load(open(os.path.join(out, "prediction.json")))["strategy_decision"]
        line = next((d for d in decision if "too small" in d), None)
        if not line:
            return f"no 'too small' line in {decision}"
        return None, line

    def calibrate_case():
        cluster_dir = os.path.join(args.work, "cluster")
        shutil.rmtree(cluster_dir, ignore_errors=True)
        env = {"SHARDC_CLUSTER_DIR": cluster_dir}
        res, _ = shardc(models[("deep_gpt", "static")], "cpu_uncalibrated",
                        ["--gpus", "2", "--strategy", "dp=2", "--cluster", "cpu"], env)
        expected = f"--cluster cpu: this machine is not calibrated (no {cluster_dir}/cpu.json)"
        if res.returncode != 1 or expected not in res.stderr:
            return f"uncalibrated: exit {res.returncode}: {res.stderr.strip()}"
        cal = e2e_util.run_tool([args.shardc, "calibrate", "-o",
                                 os.path.join(cluster_dir, "cpu.json")], args.timeout)
        if not cal.ok:
            return f"calibrate failed: {cal.stderr.strip()}"
        cluster = json.load(open(os.path.join(cluster_dir, "cpu.json")))
        res, out = shardc(models[("deep_gpt", "static")], "cpu_calibrated",
                          ["--gpus", "2", "--strategy", "dp=2", "--cluster", "cpu"], env)
        if not res.ok:
            return f"--cluster cpu failed: {res.stderr.strip()}"
        p = json.load(open(os.path.join(out, "plan.json")))["prediction"]
        return None, (f"fp32 peak {cluster['device']['peak_flops']['fp32'] / 1e9:.1f} GFLOP/s, "
                      f"{cluster['device']['memory_bandwidth'] / 1e9:.1f} GB/s; dp=2 step "
                      f"{p['step_seconds'] * 1e3:.2f} ms")

    def refusal_case(tag, flags, code, expected, write_file=None):
        def case():
            if write_file:
                path, text = write_file
                with open(path, "w") as f:
                    f.write(text)
            res, _ = shardc(models[("deep_gpt", "static")], "refused_" + tag, flags)
            lines = [line for line in res.stderr.splitlines() if line.startswith("shardc: error:")]
            if res.returncode != code or len(lines) != 1 or expected not in lines[0]:
                return f"exit {res.returncode}, stderr {res.stderr.strip()!r}"
            return None, lines[0]
        return case

    for key in models:
        cases.append((f"{key[0]}_{key[1]}_predicts_dp2_tp2",
                      explicit_case(key, "dp=2,tp=2", [])))
        cases.append((f"{key[0]}_{key[1]}_predicts_dp2_pp2",
                      explicit_case(key, "dp=2,pp=2", ["--micro-batches", "2"])))
        cases.append((f"{key[0]}_{key[1]}_auto_chooses_and_trains", auto_case(key)))
    cases.append(("auto_keeps_fixed_tp", fixed_case))
    cases.append(("auto_names_a_batch_too_small", small_batch_case))
    cases.append(("calibrate_then_cluster_cpu", calibrate_case))
    bad = os.path.join(args.work, "bad_cluster.json")
    cases += [
        ("refused_unknown_cluster",
         refusal_case("unknown", ["--gpus", "2", "--strategy", "dp=2", "--cluster", "a200"], 1,
                      "--cluster a200: neither a preset")),
        ("refused_cluster_file_without_a_field",
         refusal_case("badfile", ["--gpus", "2", "--strategy", "dp=2", "--cluster", bad], 1,
                      f"{bad}: device: missing \"memory_bandwidth\"",
                      (bad, json.dumps({"devices_per_node": 8, "device": {
                          "memory_bytes": 1e9, "peak_flops": {"fp32": 1e12}},
                          "links": {}})))),
        ("refused_predict_only_without_cluster",
         refusal_case("predict", ["--gpus", "2", "--predict-only"], 2,
                      "--predict-only predicts the step on a cluster; give --cluster")),
        ("refused_fixed_axes_without_cluster",
         refusal_case("fixed", ["--gpus", "8", "--strategy", "auto,tp=2"], 2,
                      "fixing axes of auto needs the cost model (--cluster)")),
        ("refused_fixed_axes_not_dividing",
         refusal_case("notdividing", ["--gpus", "8", "--strategy", "auto,tp=3", "--cluster",
                                      "a100-80g-8x"], 2, "tp=3 x pp=1 does not divide --gpus 8")),
    ]
    e2e_util.run_cases(cases)


if __name__ == "__main__":
    main()
