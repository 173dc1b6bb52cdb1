"""The cost model against measured CPU steps: predicted vs measured step time on this machine.

    /usr/bin/python3 tools/bench/cost_model_cpu.py --shardc build/tools/shardc/shardc \
        --shardrun build/tools/shardrun/shardrun --work /tmp/costcpu [--steps 12]

Calibrates the machine (`shardc calibrate -o WORK/cpu.json`), then for two models, the test
GPT (tests/models/export_tiny_gpt.py: d=256, 4 layers, 4 heads, 128 tokens, 8 rows) and the
BERT-like encoder (tests/models/export_bert_encoder.py: d=256, 4 layers, 64 tokens, 16 rows),
compiles plans on 1, 2, 4 and 8 local ranks (dp, tp, pp, ZeRO, remat, microbatches) with
`--cluster WORK/cpu.json`, reads each plan's predicted step (plan.json `prediction`), and runs
`--steps` steps of it with shardrun (every rank on one thread, `--threads 1`: ranks beyond the
cores take turns, as the calibration's cores_per_node tells the model), taking the median step
time after 3 warm-up steps. Then `--strategy auto --cluster` on 2, 4 and 8 devices: its pick
is run too and compared with the fastest measured plan of that size.

Prints per plan predicted, measured and the error; the median absolute error, Spearman's rank
correlation, and per size auto's pick against the fastest. Exit 1 when the median error is
above 20%, the correlation below 0.8 or a pick more than 10% slower than the fastest.
Timings on a shared machine are noisy: run it on a quiet one.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, os.pardir, os.pardir, "tests", "models")
sys.path.insert(0, MODELS)
import train_reference  # noqa: E402

WARMUP = 3
LR = 1e-3

PLANS = [
    (1, "dp", []),
    (1, "dp", ["--micro-batches", "2"]),
    (2, "dp=2", []),
    (2, "dp=2,zero=1", []),
    (2, "dp=2", ["--remat", "full"]),
    (2, "tp=2", []),
    (2, "pp=2", ["--micro-batches", "4", "--schedule", "1f1b"]),
    (4, "dp=4", []),
    (4, "dp=4,zero=3", []),
    (4, "dp=2,tp=2", []),
    (4, "dp=2,pp=2", ["--micro-batches", "2"]),
    (4, "tp=2,pp=2", ["--micro-batches", "4"]),
    (8, "dp=8", []),
    (8, "dp=4,tp=2", []),
    (8, "dp=2,tp=2,pp=2", ["--micro-batches", "2"]),
]


def export_gpt(work):
    import export_tiny_gpt as gpt
    gpt.VOCAB, gpt.BLOCK, gpt.D_MODEL, gpt.N_LAYER, gpt.N_HEAD = 2048, 128, 256, 4, 4
    gpt.BATCH, gpt.SEQ = 8, 128
    out = os.path.join(work, "gpt")
    gpt.export_gpt(gpt.TinyGPT, argparse.Namespace(out=out, static_batch=None))
    return out, train_reference.make_data("tiny_gpt", gpt, 4, gpt.BATCH, np.random.default_rng(0))


def export_bert(work):
    import export_bert_encoder as bert
    bert.VOCAB, bert.MAX_POS, bert.D_MODEL, bert.D_FF, bert.N_LAYER = 2048, 64, 256, 1024, 4
    bert.N_HEAD, bert.BATCH, bert.SEQ = 4, 16, 64
    out = os.path.join(work, "bert")
    argv = sys.argv
    sys.argv = ["export_bert_encoder.py", "--out", out]
    try:
        bert.main()
    finally:
        sys.argv = argv
    return out, train_reference.make_data("bert_encoder", bert, 4, bert.BATCH,
                                          np.random.default_rng(0))


def input_shapes(model_dir):
    path = os.path.join(model_dir, "input_shapes.txt")
    flags = []
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line:
                flags += ["--input-shape", line]
    return flags


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shardc", required=True)
    ap.add_argument("--shardrun", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    cluster = os.path.join(args.work, "cpu.json")
    subprocess.run([args.shardc, "calibrate", "-o", cluster], check=True)

    rows = []
    picks = []
    for name, export in [("gpt", export_gpt), ("bert", export_bert)]:
        model_dir, data = export(args.work)
        data_dir = os.path.join(args.work, name + "_data")
        os.makedirs(data_dir, exist_ok=True)
        for key, value in data.items():
            np.save(os.path.join(data_dir, key + ".npy"), value)
        model = os.path.join(model_dir, "model.onnx")
        shapes = input_shapes(model_dir)

        def measure(tag, gpus, flags):
            bundle = os.path.join(args.work, f"{name}_{tag}.shard")
            res = subprocess.run([args.shardc, model, *shapes, "--gpus", str(gpus), *flags,
                                  "--cluster", cluster, "-o", bundle],
                                 capture_output=True, text=True)
            if res.returncode != 0:
                return None, None, res.stderr.strip().splitlines()[-1]
            plan = json.load(open(os.path.join(bundle, "plan.json")))
            predicted = plan["prediction"]["step_seconds"]
            metrics = bundle + ".jsonl"
            res = subprocess.run([args.shardrun, bundle, "--steps", str(args.steps), "--data",
                                  data_dir, "--lr", str(LR), "--threads", "1", "--metrics",
                                  metrics], capture_output=True, text=True)
            if res.returncode != 0:
                return predicted, None, res.stderr.strip().splitlines()[-1]
            times = [json.loads(line)["step_time_ms"] / 1000.0 for line in open(metrics)]
            return predicted, statistics.median(times[WARMUP:]), plan["strategy"]

        measured = {}
        for gpus, strategy, extra in PLANS:
            tag = f"{gpus}_{strategy}_{'_'.join(extra)}".replace("=", "").replace(",", "_") \
                .replace("--", "").replace(" ", "")
            predicted, seconds, note = measure(tag, gpus, ["--strategy", strategy, *extra])
            text = f"{strategy} {' '.join(extra)}".strip()
            if seconds is None:
                print(f"{name:5} {gpus} {text:40} failed: {note}", flush=True)
                continue
            err = predicted / seconds - 1
            rows.append((name, gpus, text, predicted, seconds))
            measured.setdefault(gpus, []).append((seconds, text))
            print(f"{name:5} {gpus} {text:40} predicted {predicted * 1e3:8.2f} ms  measured "
                  f"{seconds * 1e3:8.2f} ms  {100 * err:+6.1f}%", flush=True)
        for gpus in [2, 4, 8]:
            predicted, seconds, note = measure(f"{gpus}_auto", gpus, ["--strategy", "auto"])
            if seconds is None:
                print(f"{name:5} {gpus} auto failed: {note}")
                continue
            plan = json.load(open(os.path.join(args.work, f"{name}_{gpus}_auto.shard",
                                               "plan.json")))
            chosen = next((line for line in plan["strategy_decision"]
                           if line.startswith("chose ")), "")
            fastest = min(measured.get(gpus, [(seconds, "auto")]) + [(seconds, "auto")])
            ratio = seconds / fastest[0]
            picks.append((name, gpus, chosen.split(":")[0], seconds, fastest, ratio))
            print(f"{name:5} {gpus} auto: {chosen.split(':')[0]}: predicted {predicted * 1e3:.2f} "
                  f"ms, measured {seconds * 1e3:.2f} ms; fastest measured {fastest[1]} "
                  f"{fastest[0] * 1e3:.2f} ms: {ratio:.3f}x", flush=True)

    errors = [abs(p / m - 1) for _, _, _, p, m in rows]
    predicted = np.array([p for *_, p, m in rows])
    measured_s = np.array([m for *_, p, m in rows])

    def ranks(v):
        order = np.argsort(v)
        r = np.empty(len(v))
        r[order] = np.arange(len(v))
        return r
    spearman = float(np.corrcoef(ranks(predicted), ranks(measured_s))[0, 1]) if rows else 0.0
    median_error = statistics.median(errors) if errors else 1.0
    worst_pick = max((r for *_, r in picks), default=1.0)
    print(f"{len(rows)} plans: median absolute error {100 * median_error:.1f}%, Spearman "
          f"{spearman:.3f}; auto's picks at most {worst_pick:.3f}x the fastest measured")
    print(json.dumps({"plans": [{"model": n, "gpus": g, "plan": t, "predicted": p,
                                 "measured": m} for n, g, t, p, m in rows],
                      "median_abs_error": median_error, "spearman": spearman,
                      "auto": [{"model": n, "gpus": g, "chosen": c, "measured": s,
                                "fastest": f[1], "fastest_measured": f[0], "ratio": r}
                               for n, g, c, s, f, r in picks]}, indent=1))
    ok = median_error <= 0.20 and spearman >= 0.8 and worst_pick <= 1.10
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
