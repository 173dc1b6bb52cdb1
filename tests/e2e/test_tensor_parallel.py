"""Tensor parallelism end to end: dp x tp meshes follow the single-rank run.

    test_tensor_parallel.py --shardc PATH --shardrun PATH --work DIR [--mpirun PATH]
                            [--models mlp_classifier,tiny_gpt,...] [--styles dynamic,static]

Each model (the test models of tests/models, among them the tiny GPT and the LLaMA-style decoder
with training dropout 0.1, the decoder's on tensors tp splits (attention probabilities, SwiGLU
hidden), both export styles, a global batch of 8 rows as in test_data_parallel.py) trains 30 AdamW steps with `shardrun` (ranks as threads) under
--strategy tp=2 and tp=4 (dp=1), dp x tp = 2x2 with zero in {0, 1, 3}, 4x2 zero 3 and 2x4
zero 1, and with sequence parallelism (sp=1) under tp=2, dp x tp = 2x2 zero 1 and 2x4 zero 3. Checked per
case, against a single-rank run of the same export on the same data:
  * every step's loss within 1e-5 (relative), the final parameters (`--outputs`, gathered from
    the ranks' tensor-parallel blocks and ZeRO shards) within 1e-4, as test_data_parallel.py
    checks them;
  * shardrun's own checks: planned peak memory == measured, and planned bytes sent per step ==
    what its communicators counted, on every rank (it exits 1 otherwise);
  * the tp layout split something (every model has a column -> row parallel pair), and the
    output projections are vocab-parallel: the tied GPT's wte (embedding and output at once,
    still one tensor) and the decoders' lm_head are split along the vocabulary, so the
    cross-entropy runs on each device's block of the logits;
  * communication theory for the models whose every attention and MLP block is tensor
    parallel (llama_decoder, bert_encoder, and tiny_gpt, whose fused QKV is split strided,
    while tp divides its heads): the bytes the tp group sends per step are
    L layers x 4 all-reduces (2 forward: after the attention output and the MLP's row-parallel
    projection; 2 backward: the input gradients of the column-parallel projections) of
    b x s x h floats, each 2 S (t - 1) / t bytes for S bytes on t ranks, plus the model's small
    extras (named below), with b the rows of one data-parallel rank. With sp=1 the tp group
    runs reduce-scatters and all-gathers, and those two decoders send the same plus what
    SP_THEORY names (one all-gather of b x s x h, and the norm and bias gradients' all-reduces
    of h).
shardc also refuses sp=1 without tp.
shardc refuses, in one line naming the flag, a dp x tp that is not --gpus, a --shard
override that matches nothing or names an axis other than tp, and a tp that divides no
parameter dimension (every device would compute the whole model). Then, on the static LLaMA-style
decoder:
  * checkpoints are plan-independent: a checkpoint saved at step 15 under dp=2,tp=2,zero=1
    resumes under 1 rank, dp=4,zero=3 and tp=4, and each run's steps 16-30 follow the
    single-rank curve within 1e-5;
  * with --mpirun: `mpirun -np 4` under dp=2,tp=2 (and dp=2,tp=2,zero=1,sp=1) gives
    bit-identical losses to 4 local ranks;
  * gradient clipping composes with tp and ZeRO: with --grad-clip (SGD with momentum at a
    learning rate where the clip scales every step, so a norm that missed the other devices'
    blocks, or counted a replicated gradient twice, fails within a few steps) tp=2 and
    dp x tp = 2x2 zero 1, 2x4 zero 3 follow the single-rank run with the same clipping;
  * the bundle stores each distinct program once: under dp=8,tp=2,zero=1 (16 ranks, one
    program) program.pb is within 5% of tp=2's (2 ranks) and weights.bin the same size, and
    plan.txt says ranks 1-15 run rank 0's program.
Prints PASS/FAIL per case and `N passed, M failed`.
"""

import argparse
import json
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402
from test_data_parallel import GLOBAL_BATCH, LR, LOSS_RTOL, STEPS, Model, compare  # noqa: E402

# (dp, tp, zero): every ZeRO stage on the 2x2 mesh, and the 8-device meshes (the costliest runs
# on a 2-core machine) once each, with the stages that shard most.
PLANS = [(1, 2, 0), (1, 4, 0), (2, 2, 0), (2, 2, 1), (2, 2, 3), (4, 2, 3), (2, 4, 1)]
# Sequence parallelism on: (dp, tp, zero, sp).
SP_PLANS = [(1, 2, 0), (2, 2, 1), (2, 4, 3)]
# Per model: (layers, hidden size h, sequence s, the bytes the tp group sends per step beyond
# the 4 all-reduces per layer of b x s x h, given b = rows per data-parallel rank and t = tp).
THEORY = {
    # The causal mask is a PyTorch buffer holding -inf: not trained, so no gradient of it is
    # summed over the heads. The output projection is vocab-parallel (column-parallel over
    # the vocabulary): its input gradient is all-reduced (b x s x h), and the cross-entropy
    # never gathers the logits: the row maxima are all-gathered (b x s per rank), the sums of
    # exponentials all-reduced (b x s) and the loss all-reduced (1). The embedding (96 x 32 =
    # 3072 elements) stays replicated: a lookup table no larger than its lookups' partial sums
    # (8 x 16 x 32).
    "llama_decoder": (2, 32, 16, lambda b, t: (allreduce_bytes(b * 16 * 32, t) +
                                               allgather_bytes(b * 16, t) +
                                               allreduce_bytes(b * 16, t) +
                                               allreduce_bytes(1, t))),
    # The pooler is column-parallel and the classifier row-parallel: the logits (b x 3)
    # forward, the pooler's input gradient (b x h) backward. The word and position embeddings
    # are vocab-parallel lookups: their partial sums, added, are all-reduced once (b x s x h).
    "bert_encoder": (2, 32, 12, lambda b, t: (allreduce_bytes(b * 3, t) +
                                              allreduce_bytes(b * 32, t) +
                                              allreduce_bytes(b * 12 * 32, t))),
    # GPT-2's fused QKV projection, cut by Split: its heads are split strided (3 groups of h),
    # so attention costs the same 2 + 2 all-reduces as separate projections. The output
    # projection and cross-entropy are vocab-parallel, as for llama_decoder; the causal mask
    # buffer is not trained.
    "tiny_gpt": (2, 32, 16, lambda b, t: (allreduce_bytes(b * 16 * 32, t) +
                                          allgather_bytes(b * 16, t) +
                                          allreduce_bytes(b * 16, t) +
                                          allreduce_bytes(1, t))),
}
# Heads per attention block, where tp may exceed them: attention then stays replicated and a
# layer runs only the MLP's 2 all-reduces (tiny_gpt has 2 heads: split at tp=2, not at tp=4).
HEADS = {"tiny_gpt": 2}


# With sequence parallelism, the bytes the tp group sends beyond the tensor-parallel theory:
# every all-reduce of b x s x h becomes a reduce-scatter and an all-gather of the same bytes
# (a ring all-reduce is both), plus one all-gather of b x s x h (the gradient the embedding
# lookup reads whole: it leaves the region without a reduce-scatter to pair with), plus an
# all-reduce of h per replicated norm weight or bias and per bias after a row-parallel
# product, whose gradients now sum over each device's block of the sequence.
SP_THEORY = {
    # 2 layers x 2 RMSNorm weights + the final norm's: 5 vectors of h.
    "llama_decoder": lambda b, t: allgather_bytes(b * 16 * 32 // t, t) + 5 * allreduce_bytes(32, t),
    # 5 LayerNorms (weight and bias) + the 2 row-parallel biases of each of 2 layers: 14 of h.
    "bert_encoder": lambda b, t: allgather_bytes(b * 12 * 32 // t, t) + 14 * allreduce_bytes(32, t),
}


# The LLaMA-style decoder with training dropout on its attention probabilities and SwiGLU
# hidden features, both split on tp (each device draws its block of the whole tensor's mask):
# the layout, and so the communication, of the decoder without dropout.
THEORY["dropout_llama"] = THEORY["llama_decoder"]
SP_THEORY["dropout_llama"] = SP_THEORY["llama_decoder"]


# The output projection of each language model, split along its vocabulary dimension.
VOCAB_PARALLEL = {
    "tiny_gpt": ("lm_head.weight", "[{tp}, {}]"),
    "tied_gpt": ("wte.weight", "[{tp}, {}]"),
    "llama_decoder": ("lm_head.weight", "[{tp}, {}]"),
    "dropout_llama": ("lm_head.weight", "[{tp}, {}]"),
}


def allreduce_bytes(elements, ranks):
    """A ring all-reduce: 2 (t - 1) chunks of ceil(n / t) floats sent per rank."""
    return 2 * (ranks - 1) * -(-elements // ranks) * 4


def allgather_bytes(elements_per_rank, ranks):
    """A ring all-gather: t - 1 chunks of each rank's n floats sent per rank."""
    return (ranks - 1) * elements_per_rank * 4


def tp_bytes_sent(stderr):
    m = re.search(r"by group: dp \d+, tp (\d+)", stderr)
    return int(m.group(1)) if m else None


def strategy(dp, tp, zero, sp=False):
    return f"dp={dp},tp={tp},zero={zero}" + (",sp=1" if sp else "")


def main():
    p = e2e_util.argument_parser(__doc__, timeout=300.0)
    p.add_argument("--mpirun")
    p.add_argument("--models",
                   default="mlp_classifier,tiny_gpt,tied_gpt,dropout_gpt,bert_encoder,"
                           "llama_decoder,dropout_llama")
    p.add_argument("--styles", default="dynamic,static")
    args = e2e_util.parse_args(p)
    cases = []
    models = {}
    for name, style in [(m, s) for m in args.models.split(",") for s in args.styles.split(",")]:
        model = models[(name, style)] = Model(name, style, args)
        for dp, tp, zero, sp in [(*p, False) for p in PLANS] + [(*p, True) for p in SP_PLANS]:
            def case(model=model, name=name, dp=dp, tp=tp, zero=zero, sp=sp):  # noqa: E306
                result = model.run(f"dp{dp}_tp{tp}_zero{zero}" + ("_sp" if sp else ""),
                                   ["--gpus", str(dp * tp), "--strategy",
                                    strategy(dp, tp, zero, sp), "--bucket-mb", "0.01"])
                if isinstance(result, str):
                    return result
                err, detail = compare(model, result)
                if err:
                    return err
                vocab = VOCAB_PARALLEL.get(name)
                if vocab:
                    specs = {p["name"]: p["sharding_spec"] for p in result[2]["parameters"]}
                    if not specs.get(vocab[0], "").startswith(vocab[1]):
                        return f"{vocab[0]} is {specs.get(vocab[0])}, not vocab-parallel {vocab[1]}"
                sent = tp_bytes_sent(result[3])
                if not sent:
                    return f"the tp group sent {sent} bytes: nothing was split on tp"
                detail += f"; tp sent {sent} B/step"
                if sp:
                    # The sequence regions: entered by reduce-scatters, left by all-gathers.
                    kinds = {c["kind"] for c in result[2]["communication"]["collectives"]
                             if c["group"] == "tp"}
                    if not {"reduce_scatter", "all_gather"} <= kinds:
                        return f"sp=1 but the tp group runs only {sorted(kinds)}"
                if name in THEORY and (not sp or name in SP_THEORY):
                    layers, h, s, extra = THEORY[name]
                    b = GLOBAL_BATCH // dp
                    per_layer = 4 if HEADS.get(name, tp) % tp == 0 else 2
                    theory = layers * per_layer * allreduce_bytes(b * s * h, tp) + extra(b, tp)
                    if sp:
                        theory += SP_THEORY[name](b, tp)
                    if sent != theory:
                        return f"the tp group sent {sent} bytes per step, theory {theory}"
                    detail += (f" = theory {layers} layers x {per_layer} x 2(t-1)/t x {b}x{s}x{h} x 4 B"
                               + (" as reduce-scatters + all-gathers" if sp else "") + " + extras")
                return None, detail
            cases.append((f"{name}_{style}_{strategy(dp, tp, zero, sp)}", case))

    llama = models.get(("llama_decoder", "static"))
    if llama:
        # Written by the first resume case of this run: one left by an earlier run may come from
        # another build (another trained set).
        shutil.rmtree(os.path.join(llama.work, "ckpt_dp2_tp2_zero1"), ignore_errors=True)

        def resume_case(dp, tp, zero):
            saved = os.path.join(llama.work, "ckpt_dp2_tp2_zero1")

            def case():
                if not os.path.isdir(saved):
                    res = train(llama, "save", 2, 2, 1, 15, ["--save", saved])
                    if isinstance(res, str):
                        return res
                res = train(llama, f"resume_dp{dp}_tp{tp}_zero{zero}", dp, tp, zero, STEPS,
                            ["--resume", saved])
                if isinstance(res, str):
                    return res
                losses = res
                ref = llama.reference[0][15:]
                if len(losses) != len(ref):
                    return f"{len(losses)} losses after resuming, expected {len(ref)}"
                worst = max(abs(a - b) / abs(b) for a, b in zip(losses, ref))
                if worst > LOSS_RTOL:
                    return f"steps 16-30 after resuming: max loss rel diff {worst:.3g}"
                return None, f"steps 16-30 follow the single-rank run, max loss rel {worst:.2g}"
            return case

        for plan in [(1, 1, 0), (4, 1, 3), (1, 4, 0)]:
            cases.append((f"resume_dp2_tp2_zero1_under_{strategy(*plan)}", resume_case(*plan)))

        clip_flags = ["--grad-clip", "0.05", "--optimizer", "sgd", "--momentum", "0.9"]
        clip_lr = 0.1
        clip_reference = []

        def clip_case(dp, tp, zero):
            def case():
                if not clip_reference:
                    ref = llama.run("clip_single", clip_flags, lr=clip_lr)
                    if isinstance(ref, str):
                        return f"single rank: {ref}"
                    clip_reference.append(ref)
                result = llama.run(f"clip_dp{dp}_tp{tp}_zero{zero}",
                                   ["--gpus", str(dp * tp), "--strategy", strategy(dp, tp, zero),
                                    *clip_flags], lr=clip_lr)
                if isinstance(result, str):
                    return result
                err, detail = compare(argparse.Namespace(reference=clip_reference[0]), result)
                return err or (None, detail)
            return case

        for plan in [(1, 2, 0), (2, 2, 1), (2, 4, 3)]:
            cases.append((f"grad_clip_{strategy(*plan)}", clip_case(*plan)))

        def padded_case():
            """tp=5 divides none of the decoder's sizes: its vocabulary (96) and SwiGLU's inner
            features (64) are padded to 100 and 65 (TensorParallelPadding.h) and split; the
            losses follow one rank."""
            result = llama.run("tp5_padded", ["--gpus", "5", "--strategy", "tp=5"])
            if isinstance(result, str):
                return result
            layout = result[2]["tp_layout"]
            padded = sorted(line.split(" along ")[0] for line in layout
                            if line.startswith("padded "))
            if padded != ["padded 64 to 65", "padded 64 to 65", "padded 96 to 100"]:
                return f"tp=5 pads {padded}, expected 64 to 65 (twice) and 96 to 100"
            err, detail = compare(llama, result)
            return err or (None, f"{', '.join(padded)}; {detail}")
        cases.append(("llama_decoder_static_tp5_padded", padded_case))

        if args.mpirun:
            def mpi_case(plan):
                tag = plan.replace("=", "").replace(",", "_")
                local = llama.run(f"mpi_local_{tag}", ["--gpus", "4", "--strategy", plan])
                if isinstance(local, str):
                    return local
                bundle = os.path.join(llama.work, f"mpi_local_{tag}", "model.shard")
                metrics = os.path.join(llama.work, f"mpi_{tag}.jsonl")
                losses = e2e_util.mpirun_losses(args.mpirun, args.shardrun, bundle, 4, llama.data,
                                                LR, STEPS, metrics, args.timeout)
                if isinstance(losses, str):
                    return losses
                if losses != local[0]:
                    return f"mpirun losses {losses[:3]}... differ from local {local[0][:3]}..."
                return None, f"{STEPS} losses bit-identical to 4 local ranks"
            cases.append(("mpirun_dp2_tp2_same_as_local", lambda: mpi_case("dp=2,tp=2")))
            cases.append(("mpirun_dp2_tp2_sp_same_as_local",
                          lambda: mpi_case("dp=2,tp=2,zero=1,sp=1")))

        def placed_case():
            """A bundle holds each distinct program once: 16 ranks cost what 2 do."""
            sizes = {}
            for dp, tp in [(1, 2), (8, 2)]:
                bundle = os.path.join(llama.work, f"placed_dp{dp}_tp{tp}", "model.shard")
                os.makedirs(os.path.dirname(bundle), exist_ok=True)
                res = e2e_util.run_tool([args.shardc, llama.onnx, "-o", bundle,
                                         *llama.shape_flags, "--gpus", str(dp * tp),
                                         "--strategy", strategy(dp, tp, 1)], args.timeout)
                if not res.ok:
                    return f"compile dp={dp},tp={tp}: {res.describe()}"
                sizes[dp * tp] = [os.path.getsize(os.path.join(bundle, f))
                                  for f in ("program.pb", "weights.bin")]
                plan = open(os.path.join(bundle, "plan.txt")).read()
                same = (f"(ranks 1-{dp * tp - 1} run the same program" if dp * tp > 2
                        else "(rank 1 runs the same program")
                if same not in plan:
                    return f"dp={dp},tp={tp}: plan.txt lacks {same!r}"
            (p2, w2), (p16, w16) = sizes[2], sizes[16]
            if p16 > 1.05 * p2 or w16 != w2:
                return (f"program.pb {p2} -> {p16} bytes, weights.bin {w2} -> {w16} bytes "
                        "from 2 to 16 ranks")
            return None, (f"2 ranks: program.pb {p2} B, weights.bin {w2} B; 16 ranks: "
                          f"{p16} B, {w16} B")
        cases.append(("placed_bundle_16_ranks_as_small_as_2", placed_case))

    # Inputs shardc must refuse, each in one line naming the flag, with exit 1 or 2.
    first = next(iter(models.values()), None)
    refusals = [
        (first, "dp_times_tp_not_gpus", ["--gpus", "4", "--strategy", "dp=3,tp=2"],
         "--strategy 'dp=3,tp=2': dp=3 x tp=2 x pp=1 = 6 devices, but --gpus is 4"),
        (first, "shard_matches_nothing",
         ["--gpus", "2", "--strategy", "tp", "--shard", "nomatch=replicated"],
         "--shard 'nomatch=replicated': the regex matches no trained parameter"),
        (first, "shard_bad_spec", ["--gpus", "2", "--strategy", "tp", "--shard", ".*=[{dp}]"],
         "unknown axis 'dp'"),
        # tp=97 divides none of the decoder's sizes (16, 32, 64, 96) and padding any of them to
        # 97 would leave devices only padding: every device would compute the whole model.
        (llama, "tp_that_splits_nothing", ["--gpus", "97", "--strategy", "tp=97"],
         "--strategy tp=97: no parameter dimension can be split on tp"),
        (first, "sp_without_tp", ["--gpus", "2", "--strategy", "dp=2,sp=1"],
         "sp=1 splits the sequence on the tp axis and needs tp of at least 2"),
    ]
    for model, tag, flags, message in refusals:
        if model is None:
            continue

        def refusal(model=model, flags=flags, message=message, tag=tag):  # noqa: E306
            res = e2e_util.run_tool([args.shardc, model.onnx, "-o",
                                     os.path.join(model.work, f"refused_{tag}"),
                                     *model.shape_flags, *flags], args.timeout)
            lines = [line for line in res.stderr.splitlines() if line.strip()]
            if res.returncode not in (1, 2) or len(lines) != 1 or message not in lines[0]:
                return f"expected one error line with {message!r}, got {res.describe()}"
            return None, lines[0]
        cases.append((f"refused_{tag}", refusal))

    def train(model, tag, dp, tp, zero, steps, flags):
        """Compiles `model` for the plan and trains to `steps`; the losses, or an error."""
        out = os.path.join(model.work, tag)
        os.makedirs(out, exist_ok=True)
        bundle = os.path.join(out, "model.shard")
        compile_flags = ["--gpus", str(dp * tp)]
        if dp * tp > 1:
            compile_flags += ["--strategy", strategy(dp, tp, zero)]
        res = e2e_util.run_tool([args.shardc, model.onnx, "-o", bundle, *model.shape_flags,
                                 *compile_flags], args.timeout)
        if not res.ok:
            return f"compile: {res.describe()}"
        metrics = os.path.join(out, "m.jsonl")
        if os.path.exists(metrics):
            os.remove(metrics)
        res = e2e_util.run_tool([args.shardrun, bundle, "--steps", str(steps), "--data",
                                 model.data, "--lr", str(LR), "--metrics", metrics, *flags],
                                args.timeout)
        if not res.ok:
            return f"shardrun: {res.describe()}"
        return [json.loads(line)["loss"] for line in open(metrics)]

    e2e_util.run_cases(cases)


if __name__ == "__main__":
    main()
