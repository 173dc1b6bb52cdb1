"""Runs killed with SIGKILL at random points resume from their last complete checkpoint.

    test_fault_injection.py --shardc PATH --shardrun PATH --work DIR [--mpirun PATH]
                            [--runs N] [--seed S]

The MLP classifier (global batch 8) compiled for 4 data-parallel ranks with ZeRO-3, so that
every checkpoint gathers sharded state. The uninterrupted run trains STEPS steps saving every
step and keeping every checkpoint: its losses and its checkpoint of each step are the reference.

Each of N runs (half with 4 local ranks, threads of one process; half under `mpirun -np 4`, one
process per rank, when --mpirun is given) trains the same STEPS steps with `--save-every 1` into
a fresh directory and is killed with SIGKILL at a random moment of its run (uniform over the
the run): the whole job, or under mpirun every other time
one rank only (the job must then end by itself within 60 s). The moment is drawn as a step
(uniform over 0..STEPS-1) and a delay after that step's metrics line appears (uniform over two
steps' time, the median step of the uninterrupted run), so that kills land in every step, in saves as in computation, and (step 0) during
the start. Then, for each run:
  - the directory's manifest names the checkpoint of the last step whose save completed (the
    killed run's metrics end at that step or one later: it writes a step's metrics before its
    save), or none when the run was killed before its first save completed;
  - that checkpoint's data files are byte for byte the uninterrupted run's of the same step;
  - `--resume DIR --save DIR` (a fresh run when there was no checkpoint) runs to STEPS, exit 0,
    and every resumed step's loss is string-equal (so bit-identical) to the uninterrupted run's.
Prints PASS/FAIL per run, where the kills landed, and `N passed, M failed`.
"""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402
from test_data_parallel import Model  # noqa: E402

RANKS = 4
STEPS = 20
LR = "1e-3"


metric_lines = e2e_util.metric_lines
field = e2e_util.metrics_field


def checkpoint_files(ckpt, entry):
    return [entry["files"][kind]["name"] for kind in ("params", "optimizer")]


class Harness:
    def __init__(self, args):
        self.args = args
        self.model = Model("mlp_classifier", "static", args)
        self.bundle = os.path.join(args.work, "zero3.shard")
        res = e2e_util.run_tool([args.shardc, self.model.onnx, "-o", self.bundle, "--gpus",
                                 str(RANKS), "--strategy", "zero3"], args.timeout)
        if not res.ok:
            raise SystemExit(f"compile: {res.describe()}")
        # The uninterrupted run, per launch mode: its losses, its checkpoints, its duration.
        self.reference = {}
        for mode in self.modes():
            out = os.path.join(args.work, f"reference_{mode}")
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            # Watched as the killed runs will be: when each step's metrics line appears.
            metrics = os.path.join(out, "m.jsonl")
            start = time.time()
            proc = subprocess.Popen(self.argv(mode, os.path.join(out, "ckpt"), metrics,
                                              resume=False, keep=STEPS),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            seen = [start]
            while proc.poll() is None and time.time() < start + args.timeout:
                if len(metric_lines(metrics)) >= len(seen):
                    seen.append(time.time())
                time.sleep(0.0005)
            stderr = proc.communicate()[1]
            lines = metric_lines(metrics)
            if proc.returncode != 0 or len(lines) != STEPS:
                raise SystemExit(f"uninterrupted run ({mode}): exit {proc.returncode}, "
                                 f"{len(lines)} metrics lines: {stderr}")
            # A step's time (its computation, metrics and save), the median over the run.
            gaps = sorted(b - a for a, b in zip(seen[1:], seen[2:]))
            step_time = gaps[len(gaps) // 2] if gaps else 0.01
            self.reference[mode] = (os.path.join(out, "ckpt"), lines, seen[1] - start, step_time)
        ref_local, ref_mpi = self.reference["local"][1], self.reference.get("mpirun", [None])[1]
        if ref_mpi is not None and [field(a, "loss") for a in ref_local] != \
                [field(b, "loss") for b in ref_mpi]:
            raise SystemExit("the uninterrupted runs of 4 local ranks and of mpirun differ")

    def modes(self):
        return ["local", "mpirun"] if self.args.mpirun else ["local"]

    def argv(self, mode, ckpt, metrics, resume, keep=None):
        run = [self.args.shardrun, self.bundle, "--steps", str(STEPS), "--data",
               self.model.data, "--lr", LR, "--metrics", metrics, "--save", ckpt,
               "--save-every", "1"]
        if keep:
            run += ["--keep-checkpoints", str(keep)]
        if resume:
            run += ["--resume", ckpt]
        if mode == "mpirun":
            return [self.args.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(RANKS),
                    *run]
        return run

    def kill_run(self, mode, ckpt, metrics, step, delay, one_rank):
        """Starts a run and kills it `delay` seconds after its metrics reach `step` (after its
        start for step 0); returns where the kill landed."""
        proc = subprocess.Popen(self.argv(mode, ckpt, metrics, resume=False),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = time.time() + self.args.timeout
        while step > 0 and len(metric_lines(metrics)) < step and proc.poll() is None and \
                time.time() < deadline:
            time.sleep(0.001)
        pattern = f"^{self.args.shardrun} .*--save {ckpt} "
        # The ranks, looked up before the delay (pgrep takes longer than a step), once they run.
        pids = subprocess.run(["pgrep", "-f", pattern], capture_output=True,
                              text=True).stdout.split() if one_rank and step > 0 else []
        time.sleep(delay)
        if proc.poll() is not None:
            return "the run ended before the kill"
        delay = f"{delay:.3f} s after step {step}'s metrics" if step else f"{delay:.3f} s"
        if one_rank:
            pids = pids or subprocess.run(["pgrep", "-f", pattern], capture_output=True,
                                          text=True).stdout.split()
            if pids:
                victim = random.choice(pids)
                try:
                    os.kill(int(victim), signal.SIGKILL)
                except ProcessLookupError:
                    pass
                try:
                    proc.wait(timeout=60)
                    how = f"one rank killed {delay}; the job ended by itself"
                except subprocess.TimeoutExpired:
                    how = None  # reported below
                self.kill_group(proc, ckpt)
                return how or "HUNG: one rank killed, the others still ran after 60 s"
        self.kill_group(proc, ckpt)
        return f"killed {delay}"

    def kill_group(self, proc, ckpt):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        # Ranks that left the process group, if any, go too, before the directory is looked at.
        pattern = f"^{self.args.shardrun} .*--save {ckpt} "
        deadline = time.time() + 30
        while subprocess.run(["pkill", "-9", "-f", pattern]).returncode == 0 and \
                time.time() < deadline:
            time.sleep(0.05)

    def trial(self, index, mode, one_rank):
        ref_dir, ref_lines, start_time, step_time = self.reference[mode]
        out = os.path.join(self.args.work, f"run{index:02d}_{mode}")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        ckpt, killed_metrics = os.path.join(out, "ckpt"), os.path.join(out, "killed.jsonl")
        step = random.randrange(STEPS)
        # Step 0: anywhere in the start, until the first step's metrics.
        delay = random.uniform(0.0, start_time if step == 0 else 2 * step_time)
        how = self.kill_run(mode, ckpt, killed_metrics, step, delay, one_rank)
        if how.startswith("HUNG"):
            return how
        ran = len(metric_lines(killed_metrics))
        manifest_path = os.path.join(ckpt, "manifest.json")
        saved = 0
        if os.path.exists(manifest_path):
            manifest = json.load(open(manifest_path))
            saved = manifest["step"]
            if not ran - 1 <= saved <= ran:
                return f"{how}: the metrics end at step {ran} but the checkpoint is of step {saved}"
            ref_manifest = json.load(open(os.path.join(ref_dir, "manifest.json")))
            ref_entry = next(e for e in [ref_manifest] + ref_manifest.get("older", [])
                             if e["step"] == saved)
            for name, ref_name in zip(checkpoint_files(ckpt, manifest),
                                      checkpoint_files(ref_dir, ref_entry)):
                with open(os.path.join(ckpt, name), "rb") as a, \
                        open(os.path.join(ref_dir, ref_name), "rb") as b:
                    if a.read() != b.read():
                        return f"{how}: {name} differs from the uninterrupted run's"
        elif ran > 1:
            return f"{how}: the metrics reach step {ran} but no checkpoint was committed"
        resumed_metrics = os.path.join(out, "resumed.jsonl")
        res = e2e_util.run_tool(self.argv(mode, ckpt, resumed_metrics, resume=saved > 0),
                                self.args.timeout)
        if not res.ok:
            return f"{how} at step {saved}: resuming: {res.describe()}"
        lines = metric_lines(resumed_metrics)
        mismatch = e2e_util.resumed_mismatch(lines, ref_lines[saved:])
        if mismatch:
            return f"{how}: {mismatch}"
        where = f"checkpoint of step {saved}" if saved else "no checkpoint yet"
        return None, f"{how}: {where} (metrics to step {ran}), resumed {len(lines)} steps " \
                     "bit-identical"


def main():
    p = e2e_util.argument_parser(__doc__, timeout=300.0)
    p.add_argument("--mpirun")
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--seed", type=int, default=int(time.time()))
    args = e2e_util.parse_args(p)
    args.shardrun = os.path.abspath(args.shardrun)
    print(f"kill times drawn with --seed {args.seed}", flush=True)
    random.seed(args.seed)
    harness = Harness(args)
    modes = harness.modes()
    cases = []
    for index in range(args.runs):
        mode = modes[index % len(modes)]
        one_rank = mode == "mpirun" and (index // len(modes)) % 2 == 1
        cases.append((f"run{index:02d}_{mode}{'_one_rank' if one_rank else ''}",
                      lambda i=index, m=mode, o=one_rank: harness.trial(i, m, o)))
    e2e_util.run_cases(cases)


if __name__ == "__main__":
    main()
