"""shardrun under mpirun: one process per rank, the `mpi` backend.

    test_mpi_launch.py --shardc PATH --shardrun PATH --mpirun PATH --work DIR

Cases (the MLP classifier, global batch 8, 4 ranks, 30 AdamW steps):
  same_as_local   for dp and zero3: `mpirun -np 4 shardrun` gives the losses of 4 local ranks
                  (threads) within 1e-6 relative (both run the same ring algorithm, so they are
                  expected to be bit-identical)
  killed_rank     one of the 4 processes is killed (SIGKILL) mid-run: the job ends with a
                  non-zero exit and a message naming the rank within 60 s
Prints PASS/FAIL per case and `N passed, M failed`.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402
from test_data_parallel import Model  # noqa: E402

RANKS = 4


def mpirun_argv(args, *rest):
    # Root in containers needs the explicit allowance; --oversubscribe lets 4 ranks share
    # fewer cores.
    return [args.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(RANKS), *rest]


def main():
    p = e2e_util.argument_parser(__doc__, timeout=300.0)
    p.add_argument("--mpirun", required=True)
    args = e2e_util.parse_args(p)
    model = Model("mlp_classifier", "static", args)

    def same_as_local(strategy):
        local = model.run(f"local_{strategy}", ["--gpus", str(RANKS), "--strategy", strategy])
        if isinstance(local, str):
            return local
        bundle = os.path.join(model.work, f"local_{strategy}", "model.shard")
        metrics = os.path.join(model.work, f"mpi_{strategy}.jsonl")
        res = e2e_util.run_tool(mpirun_argv(args, args.shardrun, bundle, "--steps", "30",
                                            "--data", model.data, "--lr", "1e-3",
                                            "--metrics", metrics), args.timeout)
        if not res.ok:
            return f"mpirun: {res.describe()}"
        losses = [json.loads(line)["loss"] for line in open(metrics)]
        if len(losses) != len(local[0]):
            return f"{len(losses)} losses under mpirun, {len(local[0])} locally"
        worst = max(abs(a - b) / abs(b) for a, b in zip(losses, local[0]))
        if worst > 1e-6:
            return f"max loss rel diff {worst:.3g} > 1e-6"
        return None, f"30 steps, max loss rel diff {worst:.3g} against 4 local ranks"

    def killed_rank():
        bundle = os.path.join(model.work, "local_dp", "model.shard")
        return e2e_util.mpirun_kill_one_rank(args.mpirun, args.shardrun, bundle, RANKS,
                                             model.data, os.path.join(model.work, "killed.jsonl"))

    e2e_util.run_cases([("same_as_local_dp", lambda: same_as_local("dp")),
                        ("same_as_local_zero3", lambda: same_as_local("zero3")),
                        ("killed_rank", killed_rank)])


if __name__ == "__main__":
    main()
