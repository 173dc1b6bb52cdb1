"""The cost model against Megatron-LM's published weak-scaling table (GPT, A100s).

    megatron_table.py --shardc PATH --work DIR [--csv data/megatron_weak_scaling.csv]
                      [--rows 1.7,18.4,...] [--cluster a100-80g-8x]

data/megatron_weak_scaling.csv is Table 1 of Narayanan et al., "Efficient Large-Scale Language
Model Training on GPU Clusters Using Megatron-LM" (SC'21): 10 GPT configurations from 1.7B
parameters on 32 A100s to 1T on 3072, with the tensor- and pipeline-parallel sizes and batch
Megatron used and the TFLOP/s per GPU it achieved. Per row the test GPT
(tests/models/export_tiny_gpt.py) is exported with 2 blocks at width 2 x heads, vocabulary
51200 and sequence 2048, deepened to the row's layers and widened to its hidden size
(compile_scale.py's deepen and widen: the graph a direct export would give, without weights),
and costed by `shardc --predict-only --no-weights --cluster a100-80g-8x --precision bf16
--fuse-attention on` (Megatron runs fused softmax kernels: no sequence x sequence tensor goes
through memory in fp32):

  * Megatron's plan: `--strategy auto,tp=T,pp=P,zero=0 --remat full` (its tp and pp, activation
    recomputation and plain data parallelism as Megatron ran them: the paper's Megatron-LM keeps
    the optimizer state on every data-parallel rank; the microbatches and the schedule the cost
    model's best for them). Its predicted step gives TFLOP/s per GPU by the paper's own count,
    96 B s l h^2 (1 + s/(6h) + V/(16 l h)) FLOPs per step (forward, backward and
    recomputation), against the published value;
  * auto: `--strategy auto` (everything free): its plan, predicted TFLOP/s by the same count,
    and its step against Megatron's plan's.

Prints the table (published, predicted, error) and a JSON summary; exit 1 when fewer than 8
of the rows come within 15%.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compile_scale  # noqa: E402

VOCAB, SEQ = 51200, 2048


def read_rows(path):
    with open(path) as f:
        lines = [line for line in f if not line.startswith("#")]
    return list(csv.DictReader(lines))


def megatron_flops(batch, layers, hidden):
    """The paper's FLOPs per step: forward, backward and recomputation of the GEMMs."""
    s, l, h, B = SEQ, layers, hidden, batch
    return 96 * B * s * l * h * h * (1 + s / (6 * h) + VOCAB / (16 * l * h))


def exported(work, row):
    """The row's model (exported once, reused by later runs)."""
    heads, hidden, layers = int(row["attention_heads"]), int(row["hidden_size"]), int(row["layers"])
    out = os.path.join(work, f"gpt_{row['params_billion']}B")
    path = os.path.join(out, "model.onnx")
    marker = os.path.join(out, "sizes.json")
    sizes = {"heads": heads, "hidden": hidden, "layers": layers}
    if os.path.exists(marker) and json.load(open(marker)) == sizes:
        return path
    width = 2 * heads
    args = argparse.Namespace(export_width=width, d_model=width, vocab=VOCAB, seq=SEQ,
                              layers=2, heads=heads)
    path, _ = compile_scale.export(args, out)
    import onnx
    names = {t.name for t in onnx.load_model(path, load_external_data=False).graph.initializer
             if t.name.startswith(("blocks.", "wte", "wpe", "ln_f", "lm_head", "tok", "pos"))}
    names = compile_scale.deepen(path, layers, names)
    compile_scale.widen(path, width, hidden, heads, names)
    json.dump(sizes, open(marker, "w"))
    return path


def predict(shardc, path, row, strategy, extra, out):
    batch = int(row["batch_size"])
    argv = [shardc, path, "--no-weights", "--predict-only", "--precision", "bf16",
            "--fuse-attention", "on",
            "--input-shape", f"idx={batch}x{SEQ}", "--input-shape", f"targets={batch}x{SEQ}",
            "--gpus", row["gpus"], "--strategy", strategy, "--cluster", CLUSTER, "-o", out] + extra
    start = time.time()
    res = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.time() - start
    if res.returncode != 0:
        return None, seconds, (res.stderr or res.stdout).strip().splitlines()[-1:]
    return json.load(open(os.path.join(out, "prediction.json"))), seconds, None


def plan_text(p):
    text = f"{p['strategy']} mb={p['micro_batches']}"
    if p["schedule"]:
        text += f" {p['schedule']}" + (f" v={p['virtual_stages']}" if p["virtual_stages"] > 1 else "")
    if p["remat"] != "none":
        text += f" remat={p['remat']}"
    return text


CLUSTER = "a100-80g-8x"


def main():
    global CLUSTER
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shardc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--csv", default=os.path.join(HERE, "data", "megatron_weak_scaling.csv"))
    ap.add_argument("--rows", default="", help="params_billion values to run (default: all)")
    ap.add_argument("--cluster", default=CLUSTER)
    args = ap.parse_args()
    CLUSTER = args.cluster
    rows = read_rows(args.csv)
    if args.rows:
        wanted = set(args.rows.split(","))
        rows = [r for r in rows if r["params_billion"] in wanted]
    results = []
    header = (f"{'params':>8} {'tp':>3} {'pp':>3} {'gpus':>5} {'batch':>5} {'published':>9} "
              f"{'predicted':>9} {'error':>7}  plan (Megatron's tp/pp) | auto: plan, TFLOP/s, step vs Megatron's")
    print(header)
    within = 0
    for row in rows:
        path = exported(args.work, row)
        tp, pp = int(row["tensor_parallel"]), int(row["pipeline_parallel"])
        flops = megatron_flops(int(row["batch_size"]), int(row["layers"]), int(row["hidden_size"]))
        gpus = int(row["gpus"])
        out = os.path.join(args.work, f"pred_{row['params_billion']}B")
        meg, meg_s, err = predict(args.shardc, path, row, f"auto,tp={tp},pp={pp},zero=0",
                                  ["--remat", "full"], out + "_megatron")
        if meg is None:
            print(f"{row['params_billion']:>8}: Megatron's plan: {err}")
            results.append({"params_billion": row["params_billion"], "error": err})
            continue
        predicted = flops / (meg["prediction"]["step_seconds"] * gpus) / 1e12
        published = float(row["achieved_tflops_per_gpu"])
        error = predicted / published - 1
        within += abs(error) <= 0.15
        auto, auto_s, auto_err = predict(args.shardc, path, row, "auto", [], out + "_auto")
        if auto is None:
            auto_text = f"auto failed: {auto_err}"
            auto_tflops = None
        else:
            auto_tflops = flops / (auto["prediction"]["step_seconds"] * gpus) / 1e12
            ratio = auto["prediction"]["step_seconds"] / meg["prediction"]["step_seconds"]
            auto_text = (f"{plan_text(auto)}, {auto_tflops:.0f}, {ratio:.3f}x "
                         f"({auto_s:.1f} s)")
        print(f"{row['params_billion']:>8} {tp:>3} {pp:>3} {gpus:>5} {row['batch_size']:>5} "
              f"{published:>9.0f} {predicted:>9.1f} {100 * error:>+6.1f}%  {plan_text(meg)} "
              f"({meg_s:.1f} s) | {auto_text}", flush=True)
        results.append({"params_billion": row["params_billion"], "tp": tp, "pp": pp,
                        "gpus": gpus, "published_tflops": published,
                        "predicted_tflops": predicted, "error": error,
                        "megatron_plan": plan_text(meg), "megatron_prediction": meg["prediction"],
                        "megatron_breakdown": meg["breakdown"], "seconds": meg_s,
                        "auto_plan": auto and plan_text(auto), "auto_tflops": auto_tflops,
                        "auto_prediction": auto and auto["prediction"], "auto_seconds": auto_s})
    print(f"{within} of {len(rows)} rows within 15% of the published TFLOP/s per GPU")
    print(json.dumps({"cluster": CLUSTER, "within_15_percent": within, "rows": results}, indent=1))
    return 0 if within >= min(8, len(rows)) else 1


if __name__ == "__main__":
    sys.exit(main())
