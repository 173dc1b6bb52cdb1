"""Asynchronous collectives and `shardrun --trace`, end to end.

    test_comm_overlap.py --shardc PATH --shardrun PATH --work DIR [--steps 10]

shardc makes every collective with other ops between it and its first reader asynchronous
(plan.txt: "asynchronous: overlaps #i..#j"); shardrun runs those on each rank's communication
thread while the rank's own thread goes on. For the tiny GPT and the BERT-like encoder in both
export styles (batch baked in, dynamic_axes), and the GPT with dropout, on dp=2 (bucketed
gradient all-reduces, small buckets so that several overlap the backward pass) and
dp=2,tp=2,zero=3 (4 ranks as threads). Checks:

  same      the losses of every step are bit-identical with `--comm-overlap off` (shardrun: the
            same bundle, collectives in program order) and with a bundle compiled with
            `shardc --comm-overlap off` (no asynchronous collective, another memory plan), and
            within 1e-5 (relative) of the 1-rank run
  planned   plan.txt lists asynchronous collectives and a communication workspace; shardrun's
            measured peak equals the planned peak on every rank, with and without overlap
  trace     `--trace FILE` is a Chrome trace (JSON) with one process per rank, whose
            communication thread holds every collective of every step, and on at
            least one rank a collective span overlaps in time a kernel span of the rank's own
            thread (the overlap itself; which ranks show it depends on their timing, and on a
            machine busy with other work the threads may take turns: the traced run is
            repeated, up to 3 runs, until one shows it)
  refused   a bad --comm-overlap value (shardc and shardrun), --trace without --steps: one line
Prints PASS/FAIL per case and `N passed, M failed`.
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402

RTOL = 1e-5
LR = 1e-3
STATIC_BATCH = 8
STRATEGIES = [
    ("dp2", ["--gpus", "2", "--strategy", "dp=2", "--bucket-mb", "0.05"]),
    ("dp2_tp2_zero3", ["--gpus", "4", "--strategy", "dp=2,tp=2,zero=3"]),
]
MODELS = [("tiny_gpt", "static"), ("tiny_gpt", "dynamic"), ("bert_encoder", "static"),
          ("bert_encoder", "dynamic"), ("dropout_gpt", "static")]


def losses(path):
    return [json.loads(line)["loss"] for line in open(path)]


def worst(a, b):
    return max(abs(x - y) / max(abs(y), 1e-30) for x, y in zip(a, b))


def train(args, model_dir, bundle, data, flags, run_flags=()):
    """(losses, shardrun output) or an error string."""
    out, err = e2e_util.compile_and_train(args.shardc, args.shardrun, model_dir, bundle, data,
                                          flags, args.steps, LR, run_flags)
    if err:
        return err
    return losses(bundle + ".jsonl"), out


def overlapping_ranks(trace, ranks):
    """The ranks on which a collective span of the communication thread overlaps in time a
    kernel span of the rank's own thread; and the count of collective spans per rank."""
    spans = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    overlapped, comm_spans = set(), {r: 0 for r in range(ranks)}
    for rank in range(ranks):
        comm = [(e["ts"], e["ts"] + e["dur"]) for e in spans
                if e["pid"] == rank and e["tid"] == 1]
        compute = sorted((e["ts"], e["ts"] + e["dur"]) for e in spans
                         if e["pid"] == rank and e["tid"] == 0 and e["cat"] == "compute")
        comm_spans[rank] = len(comm)
        for start, end in comm:
            if any(s < end and start < e for s, e in compute):
                overlapped.add(rank)
                break
    return overlapped, comm_spans


def check(model, style, args, results):
    work = os.path.join(args.work, f"{model}_{style}")
    model_dir = e2e_util.export_test_model(
        model, os.path.join(work, "model"),
        static_batch=STATIC_BATCH if style == "static" else None)
    data = e2e_util.reference_data(model, model_dir, os.path.join(work, "reference"))
    one = train(args, model_dir, os.path.join(work, "one.shard"), data, [])
    if isinstance(one, str):
        results.append((False, f"{model}_{style} 1 rank: {one}"))
        return
    for name, flags in STRATEGIES:
        label = f"{model}_{style} {name}"
        bundle = os.path.join(work, f"{name}.shard")
        trace_path = os.path.join(work, f"{name}.trace.json")
        overlapped = train(args, model_dir, bundle, data, flags, ["--trace", trace_path])
        if isinstance(overlapped, str):
            results.append((False, f"{label}: {overlapped}"))
            continue
        in_order = train(args, model_dir, bundle, data, flags, ["--comm-overlap", "off"])
        compiled_off = train(args, model_dir, os.path.join(work, f"{name}_off.shard"), data,
                             flags + ["--comm-overlap", "off"])
        if isinstance(in_order, str) or isinstance(compiled_off, str):
            results.append((False, f"{label}: {in_order if isinstance(in_order, str) else ''}"
                                   f"{compiled_off if isinstance(compiled_off, str) else ''}"))
            continue
        ranks = int(flags[flags.index("--gpus") + 1])
        same = overlapped[0] == in_order[0] == compiled_off[0]
        diff = worst(overlapped[0], one[0])
        peaks = [e2e_util.memory_peaks(run[1]) for run in (overlapped, in_order, compiled_off)]
        # One memory line for all ranks when they agree ("each of the 4 ranks"), else one each.
        peaks_equal = all(p and all(a == b for a, b in p) for p in peaks)
        plan = open(os.path.join(bundle, "plan.txt")).read()
        plan_off = open(os.path.join(work, f"{name}_off.shard", "plan.txt")).read()
        asynchronous = len(re.findall(r"\(asynchronous: overlaps #", plan))
        planned = (asynchronous > 0 and "communication workspace: " in plan and
                   "asynchronous" not in plan_off)
        results.append((same and diff <= RTOL and peaks_equal and planned,
                        f"{label}: overlapped == in order == compiled in order: {same}; worst "
                        f"{diff:.2e} vs 1 rank (<= {RTOL:g}); planned = measured peak on every "
                        f"rank of the 3 runs: {peaks_equal}; {asynchronous} asynchronous "
                        f"collectives in rank 0's plan, none with --comm-overlap off: {planned}"))
        try:
            trace = json.load(open(trace_path))
        except (OSError, ValueError) as e:
            results.append((False, f"{label} trace: {e}"))
            continue
        overlap, comm_spans = overlapping_ranks(trace, ranks)
        runs = 1
        while not overlap and runs < 3:
            again = train(args, model_dir, bundle, data, flags, ["--trace", trace_path])
            if isinstance(again, str):
                break
            runs += 1
            trace = json.load(open(trace_path))
            overlap, comm_spans = overlapping_ranks(trace, ranks)
        names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
                 if e.get("ph") == "M" and e["name"] == "process_name"}
        # Every collective of the rank's program (plan.json), every step: the communication
        # thread runs all of them, so that they keep their order.
        expected = {}
        for program in json.load(open(os.path.join(bundle, "plan.json")))["programs"]:
            count = sum(1 for op in program["ops"]
                        if op["kernel"] in ("all_reduce", "reduce_scatter", "all_gather"))
            for rank in program["ranks"]:
                expected[rank] = count * args.steps
        # The overlap itself depends on timing: a rank whose peers are already waiting finishes
        # its collectives at once. Some rank shows it in every case (every rank in most).
        ok = sorted(names) == list(range(ranks)) and overlap and comm_spans == expected
        results.append((ok, f"{label} trace: {len(trace['traceEvents'])} events, ranks "
                            f"{sorted(names)}; collective spans per rank {comm_spans} "
                            f"(expected {expected}); a collective overlaps a kernel on ranks "
                            f"{sorted(overlap)} (traced runs: {runs})"))


def check_refusals(args, results):
    tiny = e2e_util.export_test_model("tiny_gpt",
                                      os.path.join(args.work, "tiny_gpt_static", "model"),
                                      static_batch=STATIC_BATCH)
    bundle = os.path.join(args.work, "tiny_gpt_static", "dp2.shard")
    cases = [
        ("--comm-overlap maybe", [args.shardc, os.path.join(tiny, "model.onnx"), "-o",
                                  os.path.join(args.work, "refused.shard"),
                                  "--comm-overlap", "maybe"], 2,
         "shardc: error: --comm-overlap 'maybe': expected on or off"),
        ("shardrun --comm-overlap maybe", [args.shardrun, bundle, "--steps", "1",
                                           "--comm-overlap", "maybe"], 2, "--comm-overlap"),
        ("--trace without --steps", [args.shardrun, bundle, "--data", "x", "--outputs", "y",
                                     "--trace", "t.json"], 2,
         "--trace applies to the training loop"),
    ]
    for name, cmd, code, expected in cases:
        status, lines = e2e_util.refusal(cmd)
        ok = status == code and len(lines) == 1 and expected in lines[0]
        results.append((ok, f"refused ({name}): exit {status}, {lines!r}"))


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, steps=10))
    results = []
    for model, style in MODELS:
        check(model, style, args, results)
    check_refusals(args, results)
    return e2e_util.report(results)


if __name__ == "__main__":
    sys.exit(main())
