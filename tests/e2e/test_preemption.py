"""Runs preempted with SIGTERM save their last finished step and resume bit-identically.

    test_preemption.py --shardc PATH --shardrun PATH --work DIR [--mpirun PATH] [--runs N]
                       [--seed S]

The MLP classifier (global batch 8), compiled for 4 data-parallel ranks with ZeRO-3 (4 local
ranks, threads of one process) and for 2 (under `mpirun -np 2`, when --mpirun is given). The
uninterrupted run of each trains STEPS steps (200 local, 2000 under mpirun) with `--save-every 5 --keep-checkpoints 2`: its
losses are the reference. Each of N runs (alternating local and mpirun) trains the same steps
into a fresh directory and gets SIGTERM at a random moment (uniform over the uninterrupted
run's time from start to exit; one that comes during the setup stops the run after its first
step). Then, for each run:
  - it exits 143 and its last stderr line is "shardrun: stopped by SIGTERM after step K:
    checkpoint at step K in DIR" with K the last step in its metrics (or it had trained every
    step when the signal came); under mpirun every rank exits 143, and mpirun, which got the
    signal, exits 143 or 1 (and may print lines of its own after shardrun's); a signal that
    comes before any rank has started (mpirun still launching them) ends the job by the
    signal's default action, and is accepted only with nothing trained, nothing saved and
    nothing printed;
  - the manifest's latest checkpoint is of step K, and DIR holds the files of at most
    --keep-checkpoints checkpoints (no leftover of a save);
  - `--resume DIR` to STEPS exits 0 and every resumed step's loss is string-equal (so
    bit-identical) to the uninterrupted run's.
Prints PASS/FAIL per run and `N passed, M failed`.
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

# Steps per launch mode: two processes under MPI run a step of this small model much faster than
# four threads, and mpirun forwards the signal with some delay, so they run more of them for the
# signal to land inside the run.
STEPS = {"local": 200, "mpirun": 2000}
KEEP = 2
LR = "0.01"


metric_lines = e2e_util.metric_lines


class Preemption:
    def __init__(self, args):
        self.args = args
        self.model = Model("mlp_classifier", "static", args)
        self.bundles = {}
        for mode, ranks in self.modes().items():
            bundle = os.path.join(args.work, f"{mode}.shard")
            res = e2e_util.run_tool([args.shardc, self.model.onnx, "-o", bundle, "--gpus",
                                     str(ranks), "--strategy", "zero3"], args.timeout)
            if not res.ok:
                raise SystemExit(f"compile for {ranks} ranks: {res.describe()}")
            self.bundles[mode] = bundle
        self.reference = {}
        for mode in self.modes():
            out = os.path.join(args.work, f"reference_{mode}")
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            metrics = os.path.join(out, "m.jsonl")
            proc = subprocess.Popen(self.argv(mode, os.path.join(out, "ckpt"), metrics, False),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            # Its time from start to exit, over which the signals are spread.
            start = time.time()
            try:
                stderr = proc.communicate(timeout=args.timeout)[1]
            except subprocess.TimeoutExpired:
                proc.kill()
                raise SystemExit(f"uninterrupted run ({mode}): timed out")
            if proc.returncode != 0 or len(metric_lines(metrics)) != STEPS[mode]:
                raise SystemExit(f"uninterrupted run ({mode}): exit {proc.returncode}: {stderr}")
            self.reference[mode] = (metric_lines(metrics), time.time() - start)
            print(f"uninterrupted run ({mode}): {STEPS[mode]} steps in "
                  f"{self.reference[mode][1]:.3f} s from start to exit")

    def modes(self):
        return {"local": 4, "mpirun": 2} if self.args.mpirun else {"local": 4}

    def argv(self, mode, ckpt, metrics, resume):
        run = [self.args.shardrun, self.bundles[mode], "--steps", str(STEPS[mode]), "--data",
               self.model.data, "--lr", LR, "--metrics", metrics, "--save", ckpt,
               "--save-every", "5", "--keep-checkpoints", str(KEEP)]
        if resume:
            run += ["--resume", ckpt]
        if mode == "mpirun":
            return [self.args.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", *run]
        return run

    def trial(self, index, mode):
        ref_lines, duration = self.reference[mode]
        out = os.path.join(self.args.work, f"run{index:02d}_{mode}")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        ckpt, metrics = os.path.join(out, "ckpt"), os.path.join(out, "killed.jsonl")
        proc = subprocess.Popen(self.argv(mode, ckpt, metrics, False), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        delay = random.uniform(0.0, duration)
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        try:
            _, stderr = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return f"SIGTERM {delay:.3f} s after the start: still running 60 s later"
        ran = len(metric_lines(metrics))
        how = f"SIGTERM {delay:.3f} s after the start"
        last = stderr.strip().split("\n")[-1] if stderr.strip() else ""
        steps = STEPS[mode]
        started = os.path.exists(os.path.join(ckpt, "manifest.json"))
        if ran == steps and f"shardrun: trained {steps} steps" in stderr:
            # The signal came after the last step (mpirun may then exit non-zero for it).
            how += " (the run had finished)"
            saved = steps
        elif ran == 0 and not started and not stderr.strip() and \
                proc.returncode in ((-signal.SIGTERM,) if mode == "local" else (1, 143, -15)):
            # The signal came before any rank had started (mpirun still launching them, or the
            # process not yet past exec): the default action ended it, with nothing trained and
            # nothing saved, so nothing was lost.
            return None, f"{how}: ended before any rank started (nothing trained or saved)"
        else:
            want = (f"shardrun: stopped by SIGTERM after step {ran}: checkpoint at step {ran} "
                    f"in {ckpt}")
            # Each rank exits 143; mpirun, signalled itself, reports the job's end its own way,
            # and may add lines of its own (libevent's warnings) after shardrun's.
            codes = (143,) if mode == "local" else (143, 1)
            said = last == want if mode == "local" else want in stderr.split("\n")
            if proc.returncode not in codes or not said:
                return f"{how}: exit {proc.returncode}, last line {last!r}; expected 143, {want!r}"
            saved = ran
        manifest = json.load(open(os.path.join(ckpt, "manifest.json")))
        if manifest["step"] != saved:
            return f"{how}: the manifest's latest checkpoint is of step {manifest['step']}, " \
                   f"not {saved}"
        data_files = [f for f in os.listdir(ckpt) if f.endswith(".safetensors")]
        if len(data_files) > 2 * KEEP or any(".tmp." in f for f in os.listdir(ckpt)):
            return f"{how}: {ckpt} holds {sorted(os.listdir(ckpt))}"
        if saved == steps:
            return None, how
        resumed = os.path.join(out, "resumed.jsonl")
        res = e2e_util.run_tool(self.argv(mode, ckpt, resumed, True), self.args.timeout)
        if not res.ok:
            return f"{how}: resuming from step {saved}: {res.describe()}"
        lines = metric_lines(resumed)
        mismatch = e2e_util.resumed_mismatch(lines, ref_lines[saved:])
        if mismatch:
            return f"{how}: {mismatch}"
        return None, f"{how}: stopped after step {saved}, resumed {len(lines)} steps " \
                     "bit-identical"


def main():
    p = e2e_util.argument_parser(__doc__, timeout=300.0)
    p.add_argument("--mpirun")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--seed", type=int, default=None)
    args = e2e_util.parse_args(p)
    args.work = os.path.abspath(args.work)
    os.makedirs(args.work, exist_ok=True)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    random.seed(seed)
    print(f"seed {seed}")
    preemption = Preemption(args)
    modes = list(preemption.modes())
    failed = 0
    for i in range(args.runs):
        mode = modes[i % len(modes)]
        result = preemption.trial(i, mode)
        if isinstance(result, tuple):
            print(f"PASS run {i} ({mode}): {result[1]}")
        else:
            failed += 1
            print(f"FAIL run {i} ({mode}): {result}")
    print(f"{args.runs - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
