"""`shardc --strategy auto` picks the cheapest data-parallel strategy that fits in --gpu-memory.

    test_strategy_auto.py --shardc PATH --work DIR

The ground truth comes from compiling the tiny GPT (global batch 8) explicitly under dp, zero1,
zero2 and zero3 on 4 ranks and reading each bundle's largest planned peak per rank from
plan.json. For memory limits around those peaks, auto must choose the first strategy in the
order dp, zero1, zero2, zero3 whose peak fits (the same bundle as the explicit compile: same
strategy and peak), say so in plan.json's strategy decision, and, when nothing fits, exit 1
with one `shardc: error:` line naming --gpu-memory. Prints PASS/FAIL per case and
`N passed, M failed`.
"""

import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "models"))
import e2e_util  # noqa: E402
import export_util  # noqa: E402

RANKS = 4
STRATEGIES = ["dp", "zero1", "zero2", "zero3"]


def largest_peak(plan):
    return max(m["planned_peak_bytes"] for m in plan["memory_per_rank"])


def compile_bundle(args, onnx_path, tag, flags):
    out = os.path.join(args.work, tag + ".shard")
    shutil.rmtree(out, ignore_errors=True)
    res = e2e_util.run_tool([args.shardc, onnx_path, "-o", out, "--gpus", str(RANKS), *flags],
                            args.timeout)
    plan = json.load(open(os.path.join(out, "plan.json"))) if res.ok else None
    return res, plan


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shardc", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--timeout", type=float, default=300)
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    model_dir = e2e_util.export_test_model("tiny_gpt", os.path.join(args.work, "export"))
    onnx_path = export_util.with_global_batch(os.path.join(model_dir, "model.onnx"), 8)

    peaks = {}
    for strategy in STRATEGIES:
        res, plan = compile_bundle(args, onnx_path, strategy, ["--strategy", strategy])
        if not res.ok:
            raise SystemExit(f"{strategy}: {res.describe()}")
        peaks[strategy] = largest_peak(plan)

    def expected_choice(limit):
        for strategy in STRATEGIES:
            if peaks[strategy] <= limit:
                return strategy
        return None

    # Limits just at, just below and between the peaks, and one below them all.
    limits = sorted({peaks[s] + d for s in STRATEGIES for d in (0, -1)} | {min(peaks.values()) // 2})
    cases = []
    for limit in limits:
        def case(limit=limit):
            expected = expected_choice(limit)
            res, plan = compile_bundle(args, onnx_path, f"auto_{limit}",
                                       ["--strategy", "auto", "--gpu-memory", str(limit)])
            if expected is None:
                lines = res.stderr.strip().splitlines()
                if res.returncode != 1 or len(lines) != 1 or \
                        not lines[0].startswith("shardc: error:") or "--gpu-memory" not in lines[0]:
                    return f"expected one error line naming --gpu-memory, got {res.describe()}"
                return None, lines[0].split("ranks; ", 1)[-1]
            if not res.ok:
                return f"expected {expected}, got {res.describe()}"
            stage = STRATEGIES.index(expected)
            if plan["zero_stage"] != stage or plan["strategy"] != f"dp={RANKS},zero={stage}":
                return f"chose {plan['strategy']}, expected {expected} (peaks {peaks})"
            if largest_peak(plan) != peaks[expected]:
                return f"peak {largest_peak(plan)} differs from the explicit {expected}'s"
            decision = plan["strategy_decision"]
            if not any(line.startswith(f"chose {expected} ") for line in decision):
                return f"strategy decision does not say it chose {expected}: {decision}"
            rejected = [line.split(":")[0] for line in decision if line.startswith("rejected")]
            if rejected != [f"rejected {s}" for s in STRATEGIES[:stage]]:
                return f"rejections {rejected}, expected the {stage} cheaper strategies"
            return None, f"limit {limit}: {expected} (peak {peaks[expected]})"
        cases.append((f"auto_limit_{limit}", case))
    e2e_util.run_cases(cases)


if __name__ == "__main__":
    main()
