"""Pipeline parallelism end to end: stages, schedules and 3D meshes follow the single-rank run.

    test_pipeline_parallel.py --shardc PATH --shardrun PATH --work DIR [--mpirun PATH]

The deep test GPT (8 blocks), the tied-embedding GPT and the BERT-like encoder, both export
styles, a global batch of 8 rows as in test_data_parallel.py, train 30 AdamW steps with
`shardrun` (ranks as threads). Checked per case, against a single-rank run of the same export on
the same data:
  * every step's loss within 1e-5 (relative) and the final parameters (`--outputs`, gathered
    from every stage) within 1e-4 of the single-rank run with the same --micro-batches (the
    same sums in the same order: a pipelined run is expected bit-identical to it), as
    test_data_parallel.py checks them (naive, one microbatch: the single-rank run itself,
    whose sums the stages compute; every run on one OpenBLAS thread, see RUN_FLAGS); the drift
    from the single-rank run without microbatches
    (float reassociation of the gradient sums) is printed beside it; shardrun itself checks
    that each rank's planned peak memory equals its measured one and the bytes each rank's
    communicators counted equal the plan's (it exits 1 otherwise);
  * deep GPT: pp in {2, 4} x schedule in {gpipe, 1f1b, zb-h1} x micro-batches in {4, 8},
    interleaved with 2 chunks per rank and m in {p, 4, 8} microbatches (m > p: its transfers
    posted, the plan saying so), and naive (one microbatch) on 2 and 4 stages; 3D on the static export: dp=2,tp=2,pp=2 with zero 0 and 1, with sp=1, with
    --remat full, with zb-h1, and with --precision bf16 (against dp=2,tp=2,zero=1 bf16 without the pp
    axis: bf16 rounds the partial sums dp and tp make, test_mixed_precision.py's 5e-3 against
    one rank); pp=2 with --remat full (also under zb-h1), with bf16 (against the single-rank bf16 run) and with
    --fuse-attention on (against one rank fusing);
    dp=2,pp=2 with zero 2 and 3; --grad-clip with SGD on pp=2, dp=2,pp=2 (zero 1 and 3) and
    tp=2,pp=2;
  * the tied GPT (the token embedding on the first stage is the output projection on the last)
    and the BERT-like encoder (its attention mask, computed from an input, read on every
    stage), two layers each, both export styles: pp=2 under gpipe, 1f1b and zb-h1 with 4 and
    8 microbatches, and naive; the tied GPT also under dp=2,pp=2,zero=1, the embedding one
    tensor in the outputs;
  * memory: on the first stage 1F1B and ZB-H1 hold at most p microbatches' activations where
    GPipe holds m (plan.json's pipeline lines), and 1F1B's planned peak is lower when m > p;
  * the plan prints the predicted idle share of the step beside (p-1)/(m+p-1);
  * resuming across plans: a pp=2 checkpoint (15 steps) resumes under 1 rank, dp=4,zero=3 and
    tp=2,pp=4, and a single-rank one under pp=2, each following the single-rank run;
  * refused in one line: more stages than layers, naive with several microbatches, interleaved
    with micro-batches not a multiple of pp, --virtual-stages not dividing the layers or
    without interleaved, --schedule without pp, ZeRO-3 of a tied parameter across stages;
  * with --mpirun: `mpirun -np 8` under dp=2,tp=2,pp=2 gives bit-identical losses to 8 local
    ranks, its mesh ranks renumbered so that each tp group is consecutive MPI ranks; 4 stages under mpirun with `shardrun --trace` (1f1b, zb-h1 and interleaved with 2
    chunks, whose transfers are posted, 8 microbatches): the local ranks' losses, and each
    rank's "pipeline steps" in the trace are its steps in the plan's order; one stage's
    process killed mid-run ends the job within 60 s, non-zero, with a message naming a rank.
Prints PASS/FAIL per case and `N passed, M failed`.
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402
from test_data_parallel import LOSS_RTOL, LR, STEPS, Model, compare  # noqa: E402

SCHEDULES = ["gpipe", "1f1b", "zb-h1"]
# Every run multiplies matrices on one OpenBLAS thread, as ranks sharing the machine's cores do:
# OpenBLAS's products round differently on other thread counts, so only runs on the same count
# can be expected bit-identical (test_pipeline_zoo.py measures what the count alone changes).
RUN_FLAGS = ["--threads", "1"]


def pipeline_flags(ranks, strategy, micro_batches, schedule=None, extra=()):
    flags = ["--gpus", str(ranks), "--strategy", strategy, "--micro-batches", str(micro_batches)]
    if schedule:
        flags += ["--schedule", schedule]
    return flags + list(extra)


def first_stage_line(plan):
    """plan.json's line of stage 0, and how many microbatches' activations it holds."""
    for line in plan.get("pipeline", []):
        if line.startswith("stage 0:"):
            m = re.search(r"activations of at most (\d+) microbatch", line)
            return line, int(m.group(1)) if m else None
    return None, None


def rank0_planned_peak(stderr):
    m = re.search(r"rank 0: planned peak (\d+) bytes", stderr)
    return int(m.group(1)) if m else None


def idle_line(plan):
    for line in plan.get("pipeline", []):
        if line.startswith("schedule "):
            return line
    return None


def main():
    p = e2e_util.argument_parser(__doc__, timeout=300.0)
    p.add_argument("--mpirun")
    args = e2e_util.parse_args(p)
    cases = []
    models = {}

    def model(name, style):
        if (name, style) not in models:
            models[(name, style)] = Model(name, style, args, RUN_FLAGS)
        return models[(name, style)]

    # The single-rank runs compared with: by flags (--micro-batches K, --precision).
    references = {}

    def reference_of(m, flags, lr=None):
        key = (m.name, m.work, tuple(flags), lr)
        if key not in references:
            tag = "ref_" + "_".join(f.strip("-").replace("=", "").replace(",", "_") for f in flags)
            references[key] = m.run(tag, flags, lr=lr) if flags else m.reference
        return references[key]

    def equivalence(name, style, tag, flags, reference_flags=(), lr=None, posted=None):
        """The run against the single-rank run with the same microbatches (the same sums, in
        the same order: gradient accumulation is part of the step's math, not of the plan) and
        reference_flags; the drift from the run without microbatches is reported too. With
        `posted` (True/False), whether the plan says its transfers are posted."""
        def case():
            m = model(name, style)
            result = m.run(tag, flags, lr=lr)
            if isinstance(result, str):
                return result
            if posted is not None:
                says = any(line.startswith("transfers posted")
                           for line in result[2].get("pipeline", []))
                if says != posted:
                    return (f"the plan {'does not say' if posted else 'says'} its transfers "
                            f"are posted")
            k = flags[flags.index("--micro-batches") + 1] if "--micro-batches" in flags else "1"
            ref_flags = (["--micro-batches", k] if k != "1" else []) + list(reference_flags)
            ref = reference_of(m, ref_flags, lr)
            if isinstance(ref, str):
                return f"single-rank run {ref_flags}: {ref}"
            saved = m.reference
            m.reference = ref
            err, detail = compare(m, result)
            m.reference = saved
            if err:
                return err
            detail = f"vs {' '.join(ref_flags) or '1 rank'}: {detail}"
            if ref_flags and not reference_flags:
                plain = max(abs(a - b) / abs(b) for a, b in zip(result[0], m.reference[0]))
                detail += f"; vs 1 rank without microbatches: loss rel {plain:.2g}"
            line = idle_line(result[2])
            if line:
                detail += "; " + line.split(": ", 1)[1].split(" (")[0]
            return None, detail
        return case

    # The deep GPT: every schedule on 2 and 4 stages, both export styles.
    for style in ["static", "dynamic"]:
        for pp in [2, 4]:
            cases.append((f"deep_gpt_{style}_pp{pp}_naive",
                          equivalence("deep_gpt", style, f"pp{pp}_naive",
                                      pipeline_flags(pp, f"pp={pp}", 1, "naive"))))
            for schedule in SCHEDULES:
                for k in [4, 8]:
                    cases.append((f"deep_gpt_{style}_pp{pp}_{schedule}_mb{k}",
                                  equivalence("deep_gpt", style, f"pp{pp}_{schedule}_mb{k}",
                                              pipeline_flags(pp, f"pp={pp}", k, schedule))))

    # Interleaved 1F1B: 2 chunks per rank (the 8 blocks cut into 4 or 8 virtual stages), with
    # as many microbatches as ranks (rendezvous transfers) and more (a steady state: posted).
    for style in ["static", "dynamic"]:
        for pp in [2, 4]:
            for k in sorted({pp, 4, 8}):
                cases.append((f"deep_gpt_{style}_pp{pp}_interleaved_v2_mb{k}",
                              equivalence("deep_gpt", style, f"pp{pp}_interleaved_v2_mb{k}",
                                          pipeline_flags(pp, f"pp={pp}", k, "interleaved",
                                                         ["--virtual-stages", "2"]),
                                          posted=k > pp)))

    # 3D and the other axes, on the static export.
    for tag, flags, reference in [
            ("dp2_tp2_pp2_zero0", pipeline_flags(8, "dp=2,tp=2,pp=2,zero=0", 2), ()),
            ("dp2_tp2_pp2_zero1", pipeline_flags(8, "dp=2,tp=2,pp=2,zero=1", 2), ()),
            ("dp2_tp2_pp2_zero1_sp", pipeline_flags(8, "dp=2,tp=2,pp=2,zero=1,sp=1", 2), ()),
            ("dp2_pp2_zero2", pipeline_flags(4, "dp=2,pp=2,zero=2", 2), ()),
            ("dp2_pp2_zero3", pipeline_flags(4, "dp=2,pp=2,zero=3", 2), ()),
            ("pp2_remat_full", pipeline_flags(2, "pp=2", 4, extra=["--remat", "full"]), ()),
            ("dp2_tp2_pp2_zero1_remat_full", pipeline_flags(8, "dp=2,tp=2,pp=2,zero=1", 2,
                                                            extra=["--remat", "full"]), ()),
            ("dp2_tp2_pp2_zero1_zb-h1", pipeline_flags(8, "dp=2,tp=2,pp=2,zero=1", 4, "zb-h1"),
             ()),
            ("pp2_zb-h1_remat_full", pipeline_flags(2, "pp=2", 4, "zb-h1", ["--remat", "full"]),
             ()),
            # Fused attention (one op per attention, the causal flag): against one rank fusing.
            ("pp2_fused_attention", pipeline_flags(2, "pp=2", 4, extra=["--fuse-attention", "on"]),
             ("--fuse-attention", "on")),
            ("pp2_bf16", pipeline_flags(2, "pp=2", 4, extra=["--precision", "bf16"]),
             ("--precision", "bf16")),
            # bf16 rounds the partial sums dp and tp make (test_mixed_precision.py allows 5e-3
            # against one rank): the mesh without its pp axis is the run to follow.
            ("dp2_tp2_pp2_bf16", pipeline_flags(8, "dp=2,tp=2,pp=2,zero=1", 2,
                                                extra=["--precision", "bf16"]),
             ("--gpus", "4", "--strategy", "dp=2,tp=2,zero=1", "--precision", "bf16"))]:
        cases.append((f"deep_gpt_static_{tag}",
                      equivalence("deep_gpt", "static", tag, flags, reference)))

    # Global-norm clipping: every stage's squared gradient norms summed over the pp axis (and
    # dp/tp), one scale for all stages. SGD with momentum at a learning rate where the clip
    # binds on every step.
    clip = ["--grad-clip", "0.05", "--optimizer", "sgd", "--momentum", "0.9"]
    for tag, ranks, strategy in [("pp2", 2, "pp=2"), ("dp2_pp2_zero1", 4, "dp=2,pp=2,zero=1"),
                                 ("dp2_pp2_zero3", 4, "dp=2,pp=2,zero=3"),
                                 ("tp2_pp2", 4, "tp=2,pp=2")]:
        cases.append((f"deep_gpt_static_grad_clip_{tag}",
                      equivalence("deep_gpt", "static", f"clip_{tag}",
                                  pipeline_flags(ranks, strategy, 2, extra=clip), clip, lr=0.1)))

    # The tied GPT and the encoder.
    # (two layers each: two stages)
    for name in ["tied_gpt", "bert_encoder"]:
        for style in ["static", "dynamic"]:
            for schedule in SCHEDULES:
                for k in [4, 8]:
                    cases.append((f"{name}_{style}_pp2_{schedule}_mb{k}",
                                  equivalence(name, style, f"pp2_{schedule}_mb{k}",
                                              pipeline_flags(2, "pp=2", k, schedule))))
            cases.append((f"{name}_{style}_pp2_naive",
                          equivalence(name, style, "pp2_naive",
                                      pipeline_flags(2, "pp=2", 1, "naive"))))
    cases.append(("tied_gpt_static_dp2_pp2_zero1",
                  equivalence("tied_gpt", "static", "dp2_pp2_zero1",
                              pipeline_flags(4, "dp=2,pp=2,zero=1", 2))))

    # Memory: the first stage's activations under 1F1B and GPipe (4 stages, 8 microbatches).
    def memory_case():
        m = model("deep_gpt", "static")
        held, peaks = {}, {}
        for schedule in SCHEDULES:
            result = m.run(f"memory_{schedule}", pipeline_flags(4, "pp=4", 8, schedule))
            if isinstance(result, str):
                return result
            line, held[schedule] = first_stage_line(result[2])
            peaks[schedule] = rank0_planned_peak(result[3])
        if held["1f1b"] != 4 or held["zb-h1"] != 4 or held["gpipe"] != 8:
            return (f"stage 0 holds {held} microbatches' activations, expected 1f1b and zb-h1 "
                    f"4 (p), gpipe 8 (m)")
        if not peaks["1f1b"] or not peaks["gpipe"] or peaks["1f1b"] >= peaks["gpipe"]:
            return f"stage 0's planned peak under 1f1b {peaks['1f1b']} is not below gpipe's {peaks['gpipe']}"
        return None, (f"stage 0 holds 1f1b {held['1f1b']} (p = 4) and zb-h1 {held['zb-h1']} vs "
                      f"gpipe {held['gpipe']} (m = 8) microbatches' activations; planned peak "
                      f"{peaks['1f1b']} (zb-h1 {peaks['zb-h1']}) vs {peaks['gpipe']} B")
    cases.append(("memory_1f1b_vs_gpipe_first_stage", memory_case))

    # Resuming across plans.
    def train(m, tag, flags, steps, run_flags):
        out = os.path.join(m.work, tag)
        os.makedirs(out, exist_ok=True)
        bundle = os.path.join(out, "model.shard")
        res = e2e_util.run_tool([args.shardc, m.onnx, "-o", bundle, *m.shape_flags, *flags],
                                args.timeout)
        if not res.ok:
            return f"compile: {res.describe()}"
        metrics = os.path.join(out, "m.jsonl")
        if os.path.exists(metrics):
            os.remove(metrics)
        res = e2e_util.run_tool([args.shardrun, bundle, "--steps", str(steps), "--data", m.data,
                                 "--lr", str(LR), "--metrics", metrics, *run_flags, *RUN_FLAGS],
                                args.timeout)
        if not res.ok:
            return f"shardrun: {res.describe()}"
        return [json.loads(line)["loss"] for line in open(metrics)]

    def resume_case(saved_tag, save_flags, resume_tag, resume_flags):
        def case():
            m = model("deep_gpt", "static")
            saved = os.path.join(m.work, f"ckpt_{saved_tag}")
            if not os.path.isdir(saved):
                res = train(m, f"save_{saved_tag}", save_flags, 15, ["--save", saved])
                if isinstance(res, str):
                    return res
            res = train(m, f"resume_{saved_tag}_{resume_tag}", resume_flags, STEPS,
                        ["--resume", saved])
            if isinstance(res, str):
                return res
            ref = m.reference[0][15:]
            if len(res) != len(ref):
                return f"{len(res)} losses after resuming, expected {len(ref)}"
            worst = max(abs(a - b) / abs(b) for a, b in zip(res, ref))
            if worst > LOSS_RTOL:
                return f"steps 16-30 after resuming: max loss rel diff {worst:.3g}"
            return None, f"steps 16-30 follow the single-rank run, max loss rel {worst:.2g}"
        return case

    pp2 = pipeline_flags(2, "pp=2", 4, "1f1b")
    for tag, flags in [("1rank", []), ("dp4_zero3", ["--gpus", "4", "--strategy", "dp=4,zero=3"]),
                       ("tp2_pp4", pipeline_flags(8, "tp=2,pp=4", 2))]:
        cases.append((f"resume_pp2_under_{tag}", resume_case("pp2", pp2, tag, flags)))
    cases.append(("resume_1rank_under_pp2", resume_case("1rank", [], "pp2", pp2)))

    # Refusals: one line each.
    def refusal_case(name, style, flags, code, expected):
        def case():
            m = model(name, style)
            out = os.path.join(m.work, "refused.shard")
            status, lines = e2e_util.refusal([args.shardc, m.onnx, "-o", out, *m.shape_flags,
                                              *flags])
            if status != code or len(lines) != 1 or expected not in lines[0] or \
                    not lines[0].startswith("shardc: error: "):
                return f"exit {status}, {lines!r}; expected exit {code} and one line with {expected!r}"
            return None, lines[0]
        return case

    for tag, name, flags, code, expected in [
            ("more_stages_than_layers", "tied_gpt", pipeline_flags(4, "pp=4", 4), 1,
             "the model has 2 repeated layers"),
            ("naive_with_microbatches", "deep_gpt", pipeline_flags(2, "pp=2", 4, "naive"), 1,
             "--schedule naive runs one microbatch"),
            ("interleaved_microbatches", "deep_gpt",
             pipeline_flags(4, "pp=4", 2, "interleaved", ["--virtual-stages", "2"]), 1,
             "--schedule interleaved runs microbatches in groups of pp = 4; got --micro-batches 2"),
            ("virtual_stages_not_dividing_layers", "deep_gpt",
             pipeline_flags(2, "pp=2", 4, "interleaved", ["--virtual-stages", "3"]), 1,
             "--virtual-stages 3 does not divide the model's 8 repeated layers"),
            ("virtual_stages_without_interleaved", "deep_gpt",
             pipeline_flags(2, "pp=2", 4, "1f1b", ["--virtual-stages", "2"]), 2,
             "--virtual-stages applies to --schedule interleaved"),
            ("schedule_without_pp", "deep_gpt", ["--gpus", "2", "--strategy", "dp=2",
                                                 "--schedule", "1f1b"], 2,
             "--schedule applies to pipeline parallelism"),
            ("bad_cut_prefix", "deep_gpt", pipeline_flags(2, "pp=2", 2, extra=["--pp-cuts",
                                                                                "/nowhere"]), 1,
             "--pp-cuts: '/nowhere' starts no repeated layer"),
            ("tied_zero3", "tied_gpt", pipeline_flags(4, "dp=2,pp=2,zero=3", 2), 1,
             "ZeRO-3 of a parameter shared by stages is not supported yet")]:
        cases.append((f"refused_{tag}", refusal_case(name, "static", flags, code, expected)))

    # --pp-cuts moves the cut where the user says.
    def cuts_case():
        m = model("deep_gpt", "static")
        result = m.run("pp2_cuts", pipeline_flags(2, "pp=2", 2, extra=["--pp-cuts", "/blocks.2"]))
        if isinstance(result, str):
            return result
        err, detail = compare(m, result)
        if err:
            return err
        line, _ = first_stage_line(result[2])
        if not line or "layers /blocks.0 .. /blocks.1," not in line:
            return f"stage 0 is {line!r}, not /blocks.0 .. /blocks.1"
        return None, detail + "; " + line.split(";")[0]
    cases.append(("deep_gpt_static_pp2_pp_cuts", cuts_case))

    if args.mpirun:
        def mpi_case():
            m = model("deep_gpt", "static")
            flags = pipeline_flags(8, "dp=2,tp=2,pp=2", 2)
            local = m.run("mpi_local", flags)
            if isinstance(local, str):
                return local
            bundle = os.path.join(m.work, "mpi_local", "model.shard")
            metrics = os.path.join(m.work, "mpi.jsonl")
            stderr = []
            losses = e2e_util.mpirun_losses(args.mpirun, args.shardrun, bundle, 8, m.data, LR,
                                            STEPS, metrics, args.timeout, RUN_FLAGS, stderr)
            if isinstance(losses, str):
                return losses
            if losses != local[0]:
                return f"mpirun losses {losses[:3]}... differ from local {local[0][:3]}..."
            # Each tp group on consecutive MPI ranks: mesh (d, t, p) runs on MPI (d, p, t).
            order = "mesh ranks 0..7 run on MPI ranks 0 2 1 3 4 6 5 7"
            if order not in stderr[0]:
                return f"no '{order}' on stderr: {stderr[0].strip()[-300:]}"
            return None, f"{STEPS} losses bit-identical to 8 local ranks; {order}"
        cases.append(("mpirun_dp2_tp2_pp2_same_as_local", mpi_case))

        def trace_case(schedule, extra=()):
            """4 stages under mpirun with --trace: each rank's "pipeline steps" thread holds the
            schedule's steps in the plan's order (a step whose ops are all elsewhere, such as
            zb-h1's empty B on the first stage, has no span), and the losses are the local
            ranks' bit for bit."""
            def case():
                m = model("deep_gpt", "static")
                local = m.run(f"trace_{schedule}", pipeline_flags(4, "pp=4", 8, schedule, extra))
                if isinstance(local, str):
                    return local
                bundle = os.path.join(m.work, f"trace_{schedule}", "model.shard")
                trace = os.path.join(m.work, f"trace_{schedule}.json")
                losses = e2e_util.mpirun_losses(args.mpirun, args.shardrun, bundle, 4, m.data, LR,
                                                2, os.path.join(m.work, "trace.jsonl"),
                                                args.timeout, RUN_FLAGS + ["--trace", trace])
                if isinstance(losses, str):
                    return losses
                if losses != local[0][:2]:
                    return f"mpirun losses {losses} differ from local {local[0][:2]}"
                events = json.load(open(trace))["traceEvents"]
                planned = {}
                for line in local[2]["pipeline"]:
                    found = re.match(r"stage (\d+): .*; steps ([^(]*) \(", line)
                    if found:
                        planned[int(found.group(1))] = found.group(2).split()
                shown = []
                for rank in range(4):
                    measured = [e["name"] for e in sorted(
                        (e for e in events if e.get("pid") == rank and
                         e.get("cat") == "pipeline step" and e["args"]["run"] == 1),
                        key=lambda e: e["ts"])]
                    if not measured or any(step not in planned[rank] for step in measured):
                        return f"rank {rank}'s traced steps {measured} are not the plan's {planned[rank]}"
                    order = [step for step in planned[rank] if step in measured]
                    if measured != order:
                        return f"rank {rank} ran {measured}, the plan says {planned[rank]}"
                    # Only zb-h1's B steps on the first stage have no ops (it sends no gradient).
                    missing = [step for step in planned[rank] if step not in measured]
                    if any(not (schedule == "zb-h1" and rank == 0 and step.startswith("B"))
                           for step in missing):
                        return f"rank {rank}'s trace lacks steps {missing} of {planned[rank]}"
                    shown.append(f"rank {rank}: {' '.join(measured[:6])} ...")
                return None, "; ".join(shown)
            return case
        for schedule in ["1f1b", "zb-h1"]:
            cases.append((f"mpirun_pp4_{schedule}_trace_shows_the_schedule", trace_case(schedule)))
        # Interleaved with 8 microbatches on 4 ranks: its transfers posted (MPI_Isend).
        cases.append(("mpirun_pp4_interleaved_v2_mb8_trace_shows_the_schedule",
                      trace_case("interleaved", ["--virtual-stages", "2"])))

        def killed_stage():
            """A stage's process killed mid-run: its neighbours, waiting on its transfers, end
            the job within 60 s with a message naming a rank."""
            m = model("deep_gpt", "static")
            bundle = os.path.join(m.work, "trace_1f1b", "model.shard")
            if not os.path.isdir(bundle):
                built = m.run("trace_1f1b", pipeline_flags(4, "pp=4", 8, "1f1b"))
                if isinstance(built, str):
                    return built
            return e2e_util.mpirun_kill_one_rank(args.mpirun, args.shardrun, bundle, 4, m.data,
                                                 os.path.join(m.work, "killed.jsonl"))
        cases.append(("mpirun_pp4_killed_stage_ends_the_job", killed_stage))

    e2e_util.run_cases(cases)


if __name__ == "__main__":
    main()
