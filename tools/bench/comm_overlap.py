"""Step time of data-parallel training with the collectives overlapped and in order, side by side.

    /usr/bin/python3 tools/bench/comm_overlap.py --shardc build/tools/shardc/shardc \
        --shardrun build/tools/shardrun/shardrun --work /tmp/bench_overlap [--steps 30] \
        [--ranks 2] [--strategy dp=2] [--bucket-mb 1] [--mpirun mpirun] [--rounds 3]

Model: the benchmark GPT of train_throughput.py (d=256, 4 layers, 4 heads, T=128, vocabulary
2048) with a global batch of 8 rows per rank; AdamW. One bundle, compiled with --comm-overlap
on (the default: gradient buckets reduced on each rank's communication thread while the
backward pass goes on), trained by shardrun with `--comm-overlap on` and `--comm-overlap off`
(the same collectives in program order on the rank's thread), alternating for --rounds rounds
so that both see the same machine. Ranks are threads (the local backend), or processes under
--mpirun. Each rank's kernels use one thread (--threads 1). Reports the median step time of each
(the first WARMUP steps of each run excluded), the ratio, and checks that the losses are
bit-identical. Not a test: timings on a shared machine are noisy, run it on a quiet one.
"""

import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "tests", "models"))
sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "tests", "e2e"))
import e2e_util  # noqa: E402
import export_tiny_gpt as gpt  # noqa: E402
from train_throughput import LR, WARMUP, configure_model, export_model_and_data  # noqa: E402


def main():
    p = e2e_util.argument_parser(__doc__, steps=30)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--strategy", default="dp=2")
    p.add_argument("--bucket-mb", default="1")
    p.add_argument("--mpirun", help="run the ranks as processes under this mpirun")
    p.add_argument("--rounds", type=int, default=3)
    args = e2e_util.parse_args(p)
    configure_model()
    gpt.BATCH = 8 * args.ranks
    model_dir, data_dir, _ = export_model_and_data(args.work)
    bundle = os.path.join(args.work, "model.shard")
    subprocess.run([args.shardc, os.path.join(model_dir, "model.onnx"), "--mode", "train",
                    "--gpus", str(args.ranks), "--strategy", args.strategy, "--bucket-mb",
                    args.bucket_mb, *e2e_util.input_shape_flags(model_dir), "-o", bundle],
                   check=True)
    plan = open(os.path.join(bundle, "plan.txt")).read()
    asynchronous = plan.count("(asynchronous: overlaps #")

    times = {"on": [], "off": []}
    losses = {}
    for round_index in range(args.rounds):
        for overlap in ("on", "off"):
            metrics = os.path.join(args.work, f"metrics_{overlap}_{round_index}.jsonl")
            launcher = [args.mpirun, "--allow-run-as-root", "--oversubscribe", "-np",
                        str(args.ranks)] if args.mpirun else []
            subprocess.run(launcher + [args.shardrun, bundle, "--steps", str(args.steps),
                                       "--data", data_dir, "--lr", str(LR), "--threads", "1",
                                       "--comm-overlap", overlap, "--metrics", metrics],
                           check=True, stdout=subprocess.DEVNULL)
            steps = [json.loads(line) for line in open(metrics)]
            times[overlap] += [s["step_time_ms"] for s in steps][WARMUP:]
            losses.setdefault(overlap, [s["loss"] for s in steps])
    median = {k: statistics.median(v) for k, v in times.items()}
    print(f"GPT d=256 L=4 H=4 T=128 V=2048, global batch {gpt.BATCH}, AdamW; "
          f"{args.strategy} on {args.ranks} ranks "
          f"({'mpirun processes' if args.mpirun else 'threads'}), --bucket-mb {args.bucket_mb}, "
          f"{asynchronous} asynchronous collectives in rank 0's program; {args.rounds} rounds "
          f"of {args.steps} steps each ({WARMUP} warm-up excluded)")
    for overlap in ("on", "off"):
        print(f"  --comm-overlap {overlap:3s}: median step {median[overlap]:8.2f} ms "
              f"over {len(times[overlap])} steps")
    print(f"  ratio off / on (above 1: overlap is faster): {median['off'] / median['on']:.3f}; "
          f"losses bit-identical: {losses['on'] == losses['off']}")


if __name__ == "__main__":
    main()
