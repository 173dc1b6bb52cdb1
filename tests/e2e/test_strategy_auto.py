"""`shardc --strategy auto` picks the cheapest strategy that fits in --gpu-memory.

    test_strategy_auto.py --shardc PATH --work DIR

auto scores each candidate from its partitioned, memory-planned IR without lowering it; the
ground truth here comes from lowering every candidate instead: the tiny GPT (global batch 8,
exported with dynamic axes and without them) is compiled explicitly under each strategy on 4
ranks, and each bundle's largest planned peak per rank and bytes sent per rank per step are
read from plan.json. The policy (compiler/include/shardc/Parallel/AutoStrategy.h): dp, zero1, zero2, zero3 in
order, the first that fits; only if none fits, tp=2 then tp=4, each with and without sp and
(while dp > 1) ZeRO 0-3, the fitting one that sends the fewest bytes (ties: in that order);
only if none of those fits, pipeline stages: pp=2 beside tp=1 then tp=2, then pp=4 (refused:
the tiny GPT has 2 layers), with ZeRO 0-3 while dp > 1, the same way.
For a memory limit at and one byte below every candidate's peak, auto must choose what the
policy picks from the lowered peaks (so the IR scores equal them at the byte), record the
rejected candidates in plan.json's strategy decision, and, when nothing fits, exit 1 with one
`shardc: error:` line naming --gpu-memory. The same sweep on a global batch of 2 rows, which
leaves no data-parallel candidate on 4 ranks (fewer rows than ranks): auto must say so once per
mesh and choose among the tensor-parallel ones, whose IR scores are so checked too. Prints PASS/FAIL per case and `N passed, M failed`.
"""

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
DATA_PARALLEL = ["dp", "zero1", "zero2", "zero3"]


def tensor_parallel_candidates(tp):
    """The candidates of one tp in the policy's order, by their canonical spelling."""
    dp = RANKS // tp
    out = []
    for sp in (0, 1):
        for zero in range(4 if dp > 1 else 1):
            out.append(f"dp={dp},tp={tp}" + (",sp=1" if sp else "") + f",zero={zero}")
    return out


def pipeline_candidates(pp, tp):
    """The candidates of pp stages beside tp tensor-parallel devices, in the policy's order."""
    dp = RANKS // (pp * tp)
    return [f"dp={dp}" + (f",tp={tp}" if tp > 1 else "") + f",pp={pp},zero={zero}"
            for zero in range(4 if dp > 1 else 1)]


# (pp, tp) in the policy's order: the fewest stages, then the fewest tp devices.
PIPELINE_MESHES = [(2, 1), (2, 2), (4, 1)]


def canonical(name):
    if name in DATA_PARALLEL:
        return f"dp={RANKS},zero={DATA_PARALLEL.index(name)}"
    return name


def size_text(n):
    """How auto prints a size: bytes below 1 MiB, else MiB with two decimals."""
    return f"{n} bytes" if n < 2**20 else f"{n / 2**20:.2f} MiB"


def largest_peak(plan):
    return max(m["planned_peak_bytes"] for m in plan["memory_per_rank"])


def largest_comm(plan):
    return max(p["planned_comm_bytes"] for p in plan["programs"])


def compile_bundle(args, onnx_path, tag, flags):
    out = os.path.join(args.work, tag + ".shard")
    shutil.rmtree(out, ignore_errors=True)
    res = e2e_util.run_tool([args.shardc, onnx_path, "-o", out, "--gpus", str(RANKS), *flags],
                            args.timeout)
    plan = json.load(open(os.path.join(out, "plan.json"))) if res.ok else None
    return res, plan


def mesh_label(name):
    """How auto names a refused mesh: its strategy without the ZeRO stage."""
    spelled = canonical(name)
    mesh = spelled[:spelled.rindex(",zero=")]
    return mesh + (" (every ZeRO stage)" if not mesh.startswith("dp=1,") else "")


def expected_decision(scores, limit):
    """The policy, applied to the lowered peaks and bytes (None: the compiler refused the
    candidate): the chosen name or None, and the rejections in order."""
    rejected, refused = [], set()

    def fits(name):
        if scores[name] is None:
            if mesh_label(name) not in refused:
                refused.add(mesh_label(name))
                rejected.append(mesh_label(name))
            return False
        if scores[name][0] > limit:
            rejected.append(name)
            return False
        return True

    for name in DATA_PARALLEL:
        if fits(name):
            return name, rejected
    for tp in (2, 4):
        order = tensor_parallel_candidates(tp)
        fitting = [n for n in order if fits(n)]
        if fitting:
            return min(fitting, key=lambda n: (scores[n][1], order.index(n))), rejected
    for pp, tp in PIPELINE_MESHES:
        order = pipeline_candidates(pp, tp)
        fitting = [n for n in order if fits(n)]
        if fitting:
            return min(fitting, key=lambda n: (scores[n][1], order.index(n))), rejected
    return None, rejected


def memory_limit_cases(args, tag, onnx_path):
    scores = {}  # name -> (largest planned peak, largest bytes sent), None when refused
    pipeline = [n for pp, tp in PIPELINE_MESHES for n in pipeline_candidates(pp, tp)]
    for name in (DATA_PARALLEL + tensor_parallel_candidates(2) + tensor_parallel_candidates(4) +
                 pipeline):
        res, plan = compile_bundle(args, onnx_path, f"{tag}_{name}",
                                   ["--strategy", canonical(name)])
        if not res.ok and (res.returncode != 1 or len(res.stderr.strip().splitlines()) != 1):
            raise SystemExit(f"{tag} {name}: {res.describe()}")
        scores[name] = (largest_peak(plan), largest_comm(plan)) if res.ok else None

    # At and one byte below every candidate's peak, and one below them all.
    peaks = [score[0] for score in scores.values() if score]
    limits = sorted({p + d for p in peaks for d in (0, -1)} | {min(peaks) // 2})
    cases = []
    for limit in limits:
        def case(limit=limit):
            expected, want = expected_decision(scores, limit)
            res, plan = compile_bundle(args, onnx_path, f"{tag}_auto",
                                       ["--strategy", "auto", "--gpu-memory", str(limit)])
            if expected is None:
                lines = res.stderr.strip().splitlines()
                if res.returncode != 1 or len(lines) != 1 or \
                        not lines[0].startswith("shardc: error:") or "--gpu-memory" not in lines[0]:
                    return f"expected one error line naming --gpu-memory, got {res.describe()}"
                return None, lines[0].split("ranks; ", 1)[-1]
            if not res.ok:
                return f"expected {expected}, got {res.describe()}"
            if plan["strategy"] != canonical(expected):
                return f"chose {plan['strategy']}, expected {expected} (scores {scores})"
            if (largest_peak(plan), largest_comm(plan)) != scores[expected]:
                return f"peak/bytes {largest_peak(plan)}/{largest_comm(plan)} differ from the " \
                       f"explicit {expected}'s {scores[expected]}"
            decision = plan["strategy_decision"]
            chose = [line for line in decision if line.startswith("chose ")]
            if len(chose) != 1 or not chose[0].startswith(f"chose {expected}"):
                return f"strategy decision does not say it chose {expected}: {decision}"
            # The score auto printed is the lowered peak and bytes.
            score = f"peak {size_text(scores[expected][0])} per rank, sends " \
                    f"{scores[expected][1]} bytes"
            if score not in chose[0]:
                return f"decision's score differs from the lowered {score}: {chose[0]}"
            rejected = [line.split(":")[0] for line in decision if line.startswith("rejected")]
            if rejected != [f"rejected {n}" for n in want]:
                return f"rejections {rejected}, expected {want}"
            return None, f"limit {limit}: {expected} (peak {scores[expected][0]})"
        cases.append((f"{tag}_limit_{limit}", case))
    return cases


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, shardrun=False, timeout=300.0))
    cases = []
    for style in ("dynamic", "static"):
        if style == "dynamic":
            model_dir = e2e_util.export_test_model("tiny_gpt", os.path.join(args.work, style))
            onnx_path = export_util.with_global_batch(os.path.join(model_dir, "model.onnx"), 8)
            small = export_util.with_global_batch(os.path.join(model_dir, "model.onnx"), 2)
        else:
            model_dir = e2e_util.export_test_model("tiny_gpt", os.path.join(args.work, style),
                                                   static_batch=8)
            onnx_path = os.path.join(model_dir, "model.onnx")
            small_dir = e2e_util.export_test_model("tiny_gpt", os.path.join(args.work, "static2"),
                                                   static_batch=2)
            small = os.path.join(small_dir, "model.onnx")
        cases += memory_limit_cases(args, style, onnx_path)
        cases += memory_limit_cases(args, style + "_batch2", small)
    e2e_util.run_cases(cases)


if __name__ == "__main__":
    main()
