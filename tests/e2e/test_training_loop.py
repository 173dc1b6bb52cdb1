"""The training loop inside shardrun, end to end on the MLP classifier.

    test_training_loop.py --shardc PATH --shardrun PATH --work DIR

Cases:
  matches_torch     `shardrun --steps 30 --data D --metrics m.jsonl --outputs P`: every step's
                    loss within 1e-5 (relative) of tests/models/train_reference.py's, final
                    parameters within 1e-4 (max |diff| / max |ref| per parameter)
  resume_identical  checkpoint at step 10 (--save-every 10), --resume to 30: the losses of
                    steps 11..30 are string-equal (hence bit-identical) to the uninterrupted run's
  damaged_checkpoint  a truncated and an altered checkpoint file are each rejected with one
                    `shardrun: error:` line and exit code 1
  dropout_seed      the tiny GPT with 7 training-mode Dropout nodes, `--seed 7`: 20 steps follow
                    PyTorch drawing shardc's Philox masks (train_reference.py --dropout-seed 7)
                    within 1e-5; saved at 10 and resumed to 20, the losses are bit-identical;
                    `--seed 8` draws other masks (a different step-1 loss)
  nonfinite_stops   a run that diverges (--lr 1e6, saving every step into the directory it
                    resumed from) stops with one error line naming the step and the first
                    non-finite value, exit 1, and leaves the last finite checkpoint, which
                    resumes; a NaN feature is named as input 'x' at step 1, on 1 and 2 ranks
  resume_at_final_step  --resume from the checkpoint of step 10 with --steps 10: no step runs,
                    the parameters are written, exit 0 (no peak to compare with the plan)
  destinations_checked_first  a --save or --outputs that is a file, or cannot be created, fails
                    with one error line before the first step
  checkpoint_ownership  one writer per checkpoint directory (a second run fails at start, the
                    lock dies with a killed holder), no silent replacing of a checkpoint the run
                    did not resume from (--overwrite), files a save did not write survive (but a
                    data file named as a save names one, left by an interrupted save, goes)
  keep_checkpoints  --save-every 5 keeps the 2 latest checkpoints by default (3 with
                    --keep-checkpoints 3), only their files; a damaged latest one is refused
                    naming the older step kept, and --resume-step resumes from that one with
                    losses bit-identical to the uninterrupted run; an absent step is refused
                    naming the steps kept
  skip_step         --on-nonfinite skip-step over a data set with a NaN in one of its 4 batches:
                    those steps are skipped and counted, the rest train, exit 0, finite
                    parameters; saved at 10 and resumed, bit-identical losses
  cosine_schedule   --schedule cosine --warmup-steps 5 --min-lr 1e-4: the lr of every step in the
                    metrics equals the formula of runtime/training/lr_schedule.h (computed here in
                    double, rounded to f32)
Prints PASS/FAIL per case and `N passed, M failed`.
"""

import glob
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402

STEPS = 30
LR = 1e-3
LOSS_RTOL = 1e-5
PARAM_RTOL = 1e-4


class Setup:
    """The exported model, PyTorch's reference run and the compiled training bundle."""

    def __init__(self, args):
        self.args = args
        self.work = args.work
        model_dir = os.path.join(self.work, "mlp_classifier")
        e2e_util.export_test_model("mlp_classifier", model_dir)
        self.ref = os.path.join(self.work, "torch")
        self.torch_losses = e2e_util.train_reference("mlp_classifier", model_dir, self.ref, STEPS,
                                                     "--make-data", "4", "--lr", str(LR))
        self.data = os.path.join(self.ref, "data")
        self.bundle = os.path.join(self.work, "model.shard")
        res = e2e_util.run_tool([args.shardc, os.path.join(model_dir, "model.onnx"), "--mode",
                                 "train", "-o", self.bundle], args.timeout)
        if not res.ok:
            raise SystemExit(f"compile: {res.describe()}")
        self.full_metrics = None  # lines of the uninterrupted run, set by matches_torch

    def shardrun(self, *flags):
        return e2e_util.run_tool([self.args.shardrun, self.bundle, *flags], self.args.timeout)

    def fresh_dir(self, name):
        """WORK/name, emptied of what an earlier run left there."""
        path = os.path.join(self.work, name)
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        return path


metric_lines = e2e_util.metric_lines
field = e2e_util.metrics_field


def case_matches_torch(s):
    out = s.fresh_dir("full")
    metrics = os.path.join(out, "m.jsonl")
    res = s.shardrun("--steps", str(STEPS), "--data", s.data, "--metrics", metrics,
                     "--outputs", os.path.join(out, "params"))
    if not res.ok:
        return f"shardrun: {res.describe()}"
    lines = metric_lines(metrics)
    if len(lines) != STEPS:
        return f"{len(lines)} metrics lines, expected {STEPS}"
    worst = 0.0
    for k, line in enumerate(lines, 1):
        entry = json.loads(line)
        if entry["step"] != k:
            return f"line {k} has step {entry['step']}"
        ref = s.torch_losses[k - 1]
        rel = abs(entry["loss"] - ref) / abs(ref)
        worst = max(worst, rel)
        if rel > LOSS_RTOL:
            return f"step {k}: loss {entry['loss']:.9g} vs torch {ref:.9g} (rel {rel:.3g})"
    s.full_metrics = lines
    worst_param, worst_name = 0.0, ""
    ref_files = sorted(glob.glob(os.path.join(s.ref, "params", "*.npy")))
    for ref_file in ref_files:
        name = os.path.basename(ref_file)
        mine = os.path.join(out, "params", name)
        if not os.path.exists(mine):
            return f"--outputs wrote no {name}"
        ref_value, value = np.load(ref_file), np.load(mine)
        rel = float(np.max(np.abs(value - ref_value)) / np.max(np.abs(ref_value)))
        if rel > worst_param:
            worst_param, worst_name = rel, name[:-4]
    if worst_param > PARAM_RTOL:
        return f"parameters diverged: max rel diff {worst_param:.3g} ({worst_name})"
    summary = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else ""
    return (None, f"{STEPS} steps, max loss rel diff {worst:.3g}, max param rel diff "
                  f"{worst_param:.3g} ({worst_name}), {len(ref_files)} params; {summary}")


def case_resume_identical(s):
    if s.full_metrics is None:
        return "needs the uninterrupted run of matches_torch"
    out = s.fresh_dir("resume")
    ckpt = os.path.join(out, "ckpt")
    first = os.path.join(out, "first.jsonl")
    res = s.shardrun("--steps", "10", "--data", s.data, "--metrics", first, "--save", ckpt,
                     "--save-every", "10")
    if not res.ok:
        return f"first 10 steps: {res.describe()}"
    manifest = json.load(open(os.path.join(ckpt, "manifest.json")))
    if manifest.get("step") != 10:
        return f"checkpoint manifest says step {manifest.get('step')}, expected 10"
    # Keep a pristine copy for damaged_checkpoint.
    shutil.copytree(ckpt, os.path.join(s.work, "ckpt10"), dirs_exist_ok=True)
    second = os.path.join(out, "second.jsonl")
    res = s.shardrun("--steps", str(STEPS), "--data", s.data, "--metrics", second, "--resume",
                     ckpt)
    if not res.ok:
        return f"resume: {res.describe()}"
    lines = metric_lines(first) + metric_lines(second)
    if len(lines) != STEPS:
        return f"{len(lines)} metrics lines over both runs, expected {STEPS}"
    for k, (a, b) in enumerate(zip(lines, s.full_metrics), 1):
        if field(a, "step") != str(k) or field(a, "loss") != field(b, "loss"):
            return f"step {k}: resumed {a} vs uninterrupted {b}"
    return (None, f"steps 11..{STEPS} bit-identical to the uninterrupted run")


def case_damaged_checkpoint(s):
    pristine = os.path.join(s.work, "ckpt10")
    if not os.path.isdir(pristine):
        return "needs the checkpoint of resume_identical"
    details = []
    for how in ("truncated", "altered"):
        ckpt = os.path.join(s.work, f"ckpt_{how}")
        shutil.rmtree(ckpt, ignore_errors=True)
        shutil.copytree(pristine, ckpt)
        target = glob.glob(os.path.join(ckpt, "params-*.safetensors"))[0]
        data = bytearray(open(target, "rb").read())
        if how == "truncated":
            data = data[:len(data) // 2]
        else:
            data[-5] ^= 0x40  # one bit of one parameter value
        open(target, "wb").write(bytes(data))
        res = s.shardrun("--steps", str(STEPS), "--data", s.data, "--resume", ckpt)
        lines = res.stderr.strip().splitlines()
        if res.timed_out or res.returncode != 1:
            return f"{how}: expected exit 1, {res.describe()}"
        if len(lines) != 1 or not lines[0].startswith("shardrun: error: "):
            return f"{how}: expected one 'shardrun: error:' line, got {res.stderr!r}"
        expected = "truncated" if how == "truncated" else "checksum mismatch"
        if expected not in lines[0] or os.path.basename(target) not in lines[0]:
            return f"{how}: error does not name the file and the damage: {lines[0]}"
        details.append(lines[0].split(": ", 2)[2])
    return (None, "; ".join(details))


def last_error(res):
    """The run's last stderr line when it exited 1 with one `shardrun: error:` line, else None."""
    lines = res.stderr.strip().splitlines()
    if res.timed_out or res.returncode != 1 or not lines or \
            not lines[-1].startswith("shardrun: error: ") or \
            sum(line.startswith("shardrun: error:") for line in lines) != 1:
        return None
    return lines[-1]


def case_nonfinite_stops(s):
    pristine = os.path.join(s.work, "ckpt10")
    if not os.path.isdir(pristine):
        return "needs the checkpoint of resume_identical"
    details = []
    # 1. A diverging run (--lr 1e6) saving every step into the directory it resumed from:
    # it stops at the first non-finite loss or state, and the checkpoint left is the last
    # finite one, which resumes.
    ckpt = os.path.join(s.work, "ckpt_diverging")
    shutil.rmtree(ckpt, ignore_errors=True)
    shutil.copytree(pristine, ckpt)
    res = s.shardrun("--steps", str(STEPS), "--data", s.data, "--resume", ckpt, "--save", ckpt,
                     "--save-every", "1", "--lr", "1e6")
    line = last_error(res)
    if line is None:
        return f"--lr 1e6: expected exit 1 with one error line, {res.describe()}"
    if not ("the loss is nan" in line or "the loss is inf" in line or
            "not finite after the update" in line) or "step " not in line:
        return f"--lr 1e6: the error names no step and non-finite value: {line}"
    saved = json.load(open(os.path.join(ckpt, "manifest.json")))["step"]
    if f"the last checkpoint is step {saved} in {ckpt}" not in line:
        return f"--lr 1e6: the error does not name the checkpoint left (step {saved}): {line}"
    # The two latest checkpoints are kept (--keep-checkpoints' default): both finite ones.
    params = sorted(glob.glob(os.path.join(ckpt, "params-*.safetensors")))
    if [os.path.basename(p) for p in params] != \
            [f"params-{step:08d}.safetensors" for step in (saved - 1, saved)]:
        return f"--lr 1e6: expected the files of steps {saved - 1} and {saved}, found {params}"
    metrics = os.path.join(s.work, "after_divergence.jsonl")
    res = s.shardrun("--steps", str(saved + 1), "--data", s.data, "--resume", ckpt,
                     "--metrics", metrics)
    if not res.ok or not math.isfinite(float(field(metric_lines(metrics)[-1], "loss"))):
        return f"the checkpoint left (step {saved}) does not resume to a finite loss: " \
               f"{res.describe()}"
    details.append(line.split(": ", 2)[2])
    # 2. A NaN feature: named as the input that holds it, at step 1.
    nan_data = os.path.join(s.work, "nan_data")
    shutil.rmtree(nan_data, ignore_errors=True)
    shutil.copytree(s.data, nan_data)
    x = np.load(os.path.join(nan_data, "x.npy"))
    x.flat[5] = np.nan
    np.save(os.path.join(nan_data, "x.npy"), x)
    res = s.shardrun("--steps", "3", "--data", nan_data)
    line = last_error(res)
    if line is None or "step 1: the loss is nan: rank 0's input 'x' already holds one" not in line:
        return f"NaN feature: expected one error line naming step 1 and input 'x', " \
               f"{res.describe()}"
    details.append(line.split(": ", 2)[2])
    # 3. Two ranks: they stop together, naming the same first site.
    bundle2 = os.path.join(s.work, "model2.shard")
    res = e2e_util.run_tool([s.args.shardc, os.path.join(s.work, "mlp_classifier", "model.onnx"),
                             "--mode", "train", "--gpus", "2", "-o", bundle2], s.args.timeout)
    if not res.ok:
        return f"compile --gpus 2: {res.describe()}"
    res = e2e_util.run_tool([s.args.shardrun, bundle2, "--steps", "3", "--data", nan_data],
                            s.args.timeout)
    line = last_error(res)
    if line is None or "step 1: the loss is nan: rank " not in line or \
            "input 'x' already holds one" not in line:
        return f"2 ranks, NaN feature: {res.describe()}"
    details.append(line.split(": ", 2)[2])
    return (None, " | ".join(details))


def case_resume_at_final_step(s):
    pristine = os.path.join(s.work, "ckpt10")
    if not os.path.isdir(pristine):
        return "needs the checkpoint of resume_identical"
    out = os.path.join(s.work, "final_outputs")
    shutil.rmtree(out, ignore_errors=True)
    res = s.shardrun("--steps", "10", "--data", s.data, "--resume", pristine, "--outputs", out)
    if not res.ok:
        return f"resuming at the final step: expected exit 0, {res.describe()}"
    if "trained 0 steps" not in res.stderr or "no step ran" not in res.stderr:
        return f"expected 'trained 0 steps' and 'no step ran': {res.stderr!r}"
    if len(glob.glob(os.path.join(out, "*.npy"))) != 8:
        return f"expected the 8 parameters in {out}"
    return None


def case_destinations_checked_first(s):
    """--save and --outputs that cannot be written fail before the first step, not after the
    last (a regular file where a directory goes, a directory that cannot be created)."""
    afile = os.path.join(s.work, "a_regular_file")
    open(afile, "w").write("not a directory\n")
    details = []
    for flag, path, cause in [("--save", afile, "is a file, not a directory"),
                              ("--outputs", afile, "is a file, not a directory"),
                              ("--save", "/proc/shardc-no-such-dir", "cannot create"),
                              ("--outputs", "/proc/shardc-no-such-dir", "cannot create")]:
        metrics = os.path.join(s.work, "destinations.jsonl")
        if os.path.exists(metrics):
            os.remove(metrics)
        res = s.shardrun("--steps", str(STEPS), "--data", s.data, "--metrics", metrics,
                         flag, path)
        line = last_error(res)
        if line is None or f"{flag} {path}: {cause}" not in line:
            return f"{flag} {path}: expected one error line saying '{cause}', {res.describe()}"
        if os.path.exists(metrics) and metric_lines(metrics):
            return f"{flag} {path}: {len(metric_lines(metrics))} steps ran before the error"
        details.append(line.split(": ", 2)[2])
    return (None, "; ".join(details))


def case_checkpoint_ownership(s):
    """A checkpoint directory has one writer and keeps what is not its own: a second run saving
    into it while the first does fails at its start; a fresh run refuses to replace a
    checkpoint it did not resume from unless given --overwrite; files a user put there survive
    the saves, but a data file named exactly as a save names one that no manifest names (what
    an interrupted save left) is removed by the next save."""
    ckpt = s.fresh_dir("ckpt_owned")
    user_file = os.path.join(ckpt, "params-final.safetensors")
    open(user_file, "wb").write(b"a user's copy")
    orphan = os.path.join(ckpt, "params-00000099.safetensors")
    open(orphan, "wb").write(b"what an interrupted save left")
    res = s.shardrun("--steps", "5", "--data", s.data, "--save", ckpt)
    if not res.ok:
        return f"first run: {res.describe()}"
    if os.path.exists(orphan):
        return f"the save left {orphan}, which no manifest names"
    # A fresh run into it: refused, naming the checkpoint and the ways out.
    res = s.shardrun("--steps", "8", "--data", s.data, "--save", ckpt)
    line = last_error(res)
    if line is None or "holds the checkpoint of step 5" not in line or "--overwrite" not in line:
        return f"fresh run into a checkpoint: expected a refusal, {res.describe()}"
    details = [line.split(": ", 2)[2]]
    # Resuming from it into it, and --overwrite, are fine.
    res = s.shardrun("--steps", "8", "--data", s.data, "--save", ckpt, "--resume", ckpt)
    if not res.ok:
        return f"resume into the same directory: {res.describe()}"
    res = s.shardrun("--steps", "4", "--data", s.data, "--save", ckpt, "--overwrite")
    if not res.ok or json.load(open(os.path.join(ckpt, "manifest.json")))["step"] != 4:
        return f"--overwrite: {res.describe()}"
    if open(user_file, "rb").read() != b"a user's copy":
        return "the saves deleted or changed a file they did not write"
    # Two writers: the second fails at its start while the first holds the directory.
    first = subprocess.Popen([s.args.shardrun, s.bundle, "--steps", "400000", "--data", s.data,
                              "--save", ckpt, "--resume", ckpt, "--save-every", "1000"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        import time
        deadline = time.time() + 30
        # The first run holds the lock once its first save has replaced step 4's manifest.
        while time.time() < deadline and \
                json.load(open(os.path.join(ckpt, "manifest.json")))["step"] == 4:
            time.sleep(0.05)
        res = s.shardrun("--steps", "8", "--data", s.data, "--save", ckpt, "--resume", ckpt)
        line = last_error(res)
        if line is None or "another run is saving into this directory" not in line:
            return f"second writer: expected a refusal at start, {res.describe()}"
        details.append(line.split(": ", 2)[2])
    finally:
        first.kill()
        first.wait()
    # Killed mid-run, the directory still resumes (its manifest is a commit point), and the
    # lock died with its holder.
    res = s.shardrun("--steps", str(json.load(open(os.path.join(ckpt, "manifest.json")))["step"]
                                    + 1), "--data", s.data, "--save", ckpt, "--resume", ckpt)
    if not res.ok:
        return f"after killing the first writer: {res.describe()}"
    return (None, " | ".join(details))


def case_keep_checkpoints(s):
    if s.full_metrics is None:
        return "needs the uninterrupted run of matches_torch"
    out = s.fresh_dir("keep")
    details = []
    for keep, expected in ((None, [20, 15]), ("3", [20, 15, 10])):
        ckpt = os.path.join(out, f"ckpt_keep{keep or 'default'}")
        flags = ["--keep-checkpoints", keep] if keep else []
        res = s.shardrun("--steps", "20", "--data", s.data, "--save", ckpt, "--save-every", "5",
                         *flags)
        if not res.ok:
            return f"keep {keep}: {res.describe()}"
        manifest = json.load(open(os.path.join(ckpt, "manifest.json")))
        steps = [manifest["step"]] + [older["step"] for older in manifest.get("older", [])]
        if steps != expected:
            return f"keep {keep}: checkpoints of steps {steps}, expected {expected}"
        files = sorted(f for f in os.listdir(ckpt) if f.endswith(".safetensors"))
        wanted = sorted(f"{kind}-{step:08d}.safetensors" for step in expected
                        for kind in ("params", "optimizer"))
        if files != wanted:
            return f"keep {keep}: files {files}, expected {wanted}"
    details.append("kept steps 20, 15 (default) and 20, 15, 10 (--keep-checkpoints 3)")

    ckpt = os.path.join(out, "ckpt_keepdefault")
    latest = os.path.join(ckpt, "params-00000020.safetensors")
    data = bytearray(open(latest, "rb").read())
    data[-5] ^= 0x40
    open(latest, "wb").write(bytes(data))
    res = s.shardrun("--steps", str(STEPS), "--data", s.data, "--resume", ckpt)
    line = last_error(res)
    if line is None or "checksum mismatch" not in line or \
            "also keeps the checkpoint of step 15 (--resume-step N)" not in line:
        return f"damaged latest: expected a refusal naming step 15, {res.describe()}"
    details.append(line.split(": ", 2)[2])
    metrics = os.path.join(out, "from15.jsonl")
    res = s.shardrun("--steps", str(STEPS), "--data", s.data, "--resume", ckpt, "--resume-step",
                     "15", "--metrics", metrics)
    if not res.ok:
        return f"--resume-step 15: {res.describe()}"
    lines = metric_lines(metrics)
    if [field(line, "step") for line in lines] != [str(k) for k in range(16, STEPS + 1)]:
        return f"--resume-step 15 ran steps {[field(line, 'step') for line in lines]}"
    for line, full in zip(lines, s.full_metrics[15:]):
        if field(line, "loss") != field(full, "loss"):
            return f"--resume-step 15: {line} vs uninterrupted {full}"
    details.append(f"--resume-step 15: steps 16..{STEPS} bit-identical")
    res = s.shardrun("--steps", str(STEPS), "--data", s.data, "--resume", ckpt, "--resume-step",
                     "7")
    line = last_error(res)
    if line is None or "holds no checkpoint of step 7 (it keeps steps 20, 15)" not in line:
        return f"--resume-step 7: expected a refusal naming the steps kept, {res.describe()}"
    for flags in (["--keep-checkpoints", "0", "--save", ckpt], ["--resume-step", "15"]):
        res = s.shardrun("--steps", "5", "--data", s.data, *flags)
        if res.timed_out or res.returncode != 2:
            return f"{' '.join(flags)}: expected a usage error, {res.describe()}"
    return (None, " | ".join(details))


def case_skip_step(s):
    """--on-nonfinite skip-step: a NaN in the rows of the 2nd of the 4 batches makes steps 2, 6,
    10, ... non-finite; each is skipped (its update discarded, counted in the metrics), the
    others train, the run ends with exit 0 and finite parameters, and a run saved at step 10
    and resumed to the end has bit-identical losses to the uninterrupted one."""
    data = os.path.join(s.work, "skip_data")
    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(s.data, data)
    x = np.load(os.path.join(data, "x.npy"))
    batch = x.shape[0] // 4
    x[batch + 1, 3] = np.nan  # a row of batch 2
    np.save(os.path.join(data, "x.npy"), x)
    out = s.fresh_dir("skip")
    full = os.path.join(out, "full.jsonl")
    params = os.path.join(out, "params")
    res = s.shardrun("--steps", str(STEPS), "--data", data, "--metrics", full, "--outputs",
                     params, "--on-nonfinite", "skip-step")
    if not res.ok:
        return f"skip-step run: {res.describe()}"
    lines = metric_lines(full)
    skipped = [k for k, line in enumerate(lines, 1) if field(line, "loss") == "null"]
    want = list(range(2, STEPS + 1, 4))
    if skipped != want:
        return f"skipped steps {skipped}, expected {want}"
    if field(lines[-1], "skipped_steps") != str(len(want)):
        return f"the last metrics line counts {field(lines[-1], 'skipped_steps')} skips"
    for f in glob.glob(os.path.join(params, "*.npy")):
        if not np.isfinite(np.load(f)).all():
            return f"{os.path.basename(f)} is not finite after the run"
    if f"{len(want)} step(s) skipped" not in res.stderr:
        return f"the summary does not count the skips: {res.stderr!r}"
    # Saved at 10, resumed to the end: the same losses, bit for bit.
    ckpt = os.path.join(out, "ckpt")
    first, second = os.path.join(out, "first.jsonl"), os.path.join(out, "second.jsonl")
    res = s.shardrun("--steps", "10", "--data", data, "--metrics", first, "--save", ckpt,
                     "--on-nonfinite", "skip-step")
    if not res.ok:
        return f"first 10 steps: {res.describe()}"
    manifest = json.load(open(os.path.join(ckpt, "manifest.json")))
    if (manifest["step"], manifest["data_position"]) != (10 - 3, 10):
        return f"checkpoint step/data position {manifest['step']}/{manifest['data_position']}, " \
               "expected 7 updates of 10 steps"
    res = s.shardrun("--steps", str(STEPS), "--data", data, "--metrics", second, "--resume", ckpt,
                     "--on-nonfinite", "skip-step")
    if not res.ok:
        return f"resume: {res.describe()}"
    resumed = metric_lines(first) + metric_lines(second)
    for k, (a, b) in enumerate(zip(resumed, lines), 1):
        if field(a, "loss") != field(b, "loss"):
            return f"step {k}: resumed {a} vs uninterrupted {b}"
    return (None, f"skipped {skipped}; resumed at step 10 (7 updates) bit-identical")


def cosine_lr(k, lr, min_lr, warmup, total):
    """runtime/training/lr_schedule.h's cosine schedule (nanoGPT's get_lr at it = k)."""
    if warmup > 0 and k < warmup:
        return lr * k / warmup
    if total <= warmup:
        return lr
    if k >= total:
        return min_lr
    ratio = (k - warmup) / (total - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


def case_cosine_schedule(s):
    out = s.fresh_dir("cosine")
    metrics = os.path.join(out, "m.jsonl")
    lr, min_lr, warmup = 3e-3, 1e-4, 5
    res = s.shardrun("--steps", str(STEPS), "--data", s.data, "--metrics", metrics, "--lr",
                     str(lr), "--schedule", "cosine", "--warmup-steps", str(warmup), "--min-lr",
                     str(min_lr))
    if not res.ok:
        return f"shardrun: {res.describe()}"
    lines = metric_lines(metrics)
    if len(lines) != STEPS:
        return f"{len(lines)} metrics lines, expected {STEPS}"
    for k, line in enumerate(lines, 1):
        got = np.float32(json.loads(line)["lr"])
        want = np.float32(cosine_lr(k, lr, min_lr, warmup, STEPS))
        if got != want and abs(float(got) - float(want)) > 1e-7 * float(want):
            return f"step {k}: lr {got!r}, formula gives {want!r}"
        if not math.isfinite(json.loads(line)["loss"]):
            return f"step {k}: loss is not finite"
    first, peak, last = (json.loads(lines[i])["lr"] for i in (0, warmup - 1, STEPS - 1))
    return (None, f"lr step 1 {first:.4g}, step {warmup} {peak:.4g}, step {STEPS} {last:.4g}")


def case_dropout_seed(s):
    steps, seed = 20, 7
    work = os.path.join(s.work, "dropout")
    shutil.rmtree(work, ignore_errors=True)
    model_dir = os.path.join(work, "dropout_gpt")
    e2e_util.export_test_model("dropout_gpt", model_dir)  # a fresh export: `work` was emptied
    ref = os.path.join(work, "torch")
    torch_losses = e2e_util.train_reference("dropout_gpt", model_dir, ref, steps, "--make-data",
                                            "4", "--lr", str(LR), "--dropout-seed", str(seed))
    bundle = os.path.join(work, "model.shard")
    res = e2e_util.run_tool([s.args.shardc, os.path.join(model_dir, "model.onnx"), "-o", bundle],
                            s.args.timeout)
    if not res.ok:
        return f"compile: {res.describe()}"

    def run(*flags):
        return e2e_util.run_tool([s.args.shardrun, bundle, "--data", os.path.join(ref, "data"),
                                  *flags], s.args.timeout)

    full = os.path.join(work, "full.jsonl")
    res = run("--steps", str(steps), "--seed", str(seed), "--metrics", full)
    if not res.ok:
        return f"shardrun: {res.describe()}"
    lines = metric_lines(full)
    worst = 0.0
    for k, line in enumerate(lines, 1):
        loss, ref_loss = json.loads(line)["loss"], torch_losses[k - 1]
        rel = abs(loss - ref_loss) / abs(ref_loss)
        worst = max(worst, rel)
        if rel > LOSS_RTOL:
            return f"step {k}: loss {loss:.9g} vs torch {ref_loss:.9g} (rel {rel:.3g})"
    ckpt = os.path.join(work, "ckpt")
    shutil.rmtree(ckpt, ignore_errors=True)  # a fresh run: the last test run's is not its own
    first, second = os.path.join(work, "first.jsonl"), os.path.join(work, "second.jsonl")
    res = run("--steps", "10", "--seed", str(seed), "--metrics", first, "--save", ckpt)
    if not res.ok:
        return f"first 10 steps: {res.describe()}"
    res = run("--steps", str(steps), "--metrics", second, "--resume", ckpt)
    if not res.ok:
        return f"resume: {res.describe()}"
    for k, (a, b) in enumerate(zip(metric_lines(first) + metric_lines(second), lines), 1):
        if field(a, "loss") != field(b, "loss"):
            return f"step {k}: resumed {a} vs uninterrupted {b}"
    other = os.path.join(work, "other.jsonl")
    res = run("--steps", "1", "--seed", str(seed + 1), "--metrics", other)
    if not res.ok:
        return f"--seed {seed + 1}: {res.describe()}"
    if field(metric_lines(other)[0], "loss") == field(lines[0], "loss"):
        return f"--seed {seed + 1} gave the same step-1 loss as --seed {seed}"
    return (None, f"{steps} steps, max loss rel diff {worst:.3g}; resumed steps 11..{steps} "
                  f"bit-identical; another seed, another loss")


CASES = [
    ("matches_torch", case_matches_torch),
    ("resume_identical", case_resume_identical),
    ("damaged_checkpoint", case_damaged_checkpoint),
    ("dropout_seed", case_dropout_seed),
    ("cosine_schedule", case_cosine_schedule),
    ("nonfinite_stops", case_nonfinite_stops),
    ("resume_at_final_step", case_resume_at_final_step),
    ("destinations_checked_first", case_destinations_checked_first),
    ("checkpoint_ownership", case_checkpoint_ownership),
    ("keep_checkpoints", case_keep_checkpoints),
    ("skip_step", case_skip_step),
]


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, timeout=120))
    setup = Setup(args)
    e2e_util.run_cases([(name, lambda case=case: case(setup)) for name, case in CASES])


if __name__ == "__main__":
    main()
