"""Code shared by the end-to-end test scripts (node conformance, models, bad inputs, training)
and the benchmarks of tools/bench."""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import xxhash  # python3-xxhash (tools/setup.sh)

# The test models' export scripts and PyTorch's reference training (tests/models).
MODELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "models")

# ONNX ops (default domain) that shardc compiles.
SUPPORTED_OPS = frozenset("""
    Add Sub Mul Div Pow Sqrt Reciprocal Neg Exp Log Tanh Erf Sin Cos Sigmoid Relu Gelu Abs Max
    Min Clip Where Equal Less Greater Not And Or Cast MatMul Gemm LayerNormalization Softmax
    LogSoftmax ReduceMean ReduceSum ReduceMax ReduceMin ReduceSumSquare ReduceL1 ReduceL2 ReduceLogSum
    ReduceLogSumExp Reshape Transpose Unsqueeze Squeeze Flatten Concat
    Split Slice Pad Gather GatherElements Expand Tile Shape ConstantOfShape Range Trilu Identity Constant
    SoftmaxCrossEntropyLoss
    NegativeLogLikelihoodLoss Dropout Conv MaxPool AveragePool GlobalAveragePool GlobalMaxPool
    BatchNormalization InstanceNormalization ScatterND ScatterElements If HardSigmoid HardSwish
    CumSum Softplus Mod EyeLike
    ArgMax OneHot TopK
    Loop SequenceEmpty SequenceConstruct SplitToSequence SequenceAt SequenceInsert SequenceErase
    SequenceLength ConcatFromSequence
""".split())

# Default-domain opsets shardc accepts.
MIN_OPSET = 13
MAX_OPSET = 20

# Element types shardc supports, by onnx.TensorProto enum value.
SUPPORTED_DTYPES = {1: "float32", 7: "int64", 6: "int32", 9: "bool"}

# Operand positions whose *values* shardc needs at compile time, per op type. Every tensor must
# have a static shape, so operands that determine a shape must be constants (initializers,
# Constant nodes, or computed from those and from static shapes). Dropout's ratio and
# training_mode are included because they decide at compile time whether Dropout is a copy.
COMPILE_TIME_OPERANDS = {
    "Loop": (0, 1),
    "SplitToSequence": (1,),
    "SequenceAt": (1,),
    "SequenceInsert": (2,),
    "SequenceErase": (1,),
    "Reshape": (1,),
    "Expand": (1,),
    "Tile": (1,),
    "Slice": (1, 2, 3, 4),
    "Pad": (1, 2, 3),
    "Unsqueeze": (1,),
    "Squeeze": (1,),
    "ReduceMean": (1,),
    "ReduceSum": (1,),
    "ReduceMax": (1,),
    "ReduceMin": (1,),
    "ReduceSumSquare": (1,),
    "ReduceL1": (1,),
    "ReduceL2": (1,),
    "ReduceLogSum": (1,),
    "ReduceLogSumExp": (1,),
    "OneHot": (1, 2),
    "TopK": (1,),
    "Split": (1,),
    "Trilu": (1,),
    "Range": (0, 1, 2),
    "If": (0,),
    "CumSum": (1,),
    "ConstantOfShape": (0,),
    "Dropout": (1, 2),
}


def npy_name(tensor_name):
    """File name (without .npy) shardrun uses for a tensor: characters outside [A-Za-z0-9._-]
    become `_`."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", tensor_name)


def argument_parser(doc, *, shardrun=True, steps=None, timeout=None):
    """The command line every end-to-end script starts from, described by the first line of its
    `doc`: --shardc, --shardrun (unless `shardrun` is false) and --work (its scratch directory);
    with `steps`, --steps (an int, that default); with `timeout`, --timeout (seconds allowed per
    tool call, of the type and default of `timeout`: 120 is an int, 300.0 a float). The script
    adds its own options and passes the parser to parse_args."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--shardc", required=True)
    if shardrun:
        parser.add_argument("--shardrun", required=True)
    parser.add_argument("--work", required=True, help="scratch directory")
    if steps is not None:
        parser.add_argument("--steps", type=int, default=steps)
    if timeout is not None:
        parser.add_argument("--timeout", type=type(timeout), default=timeout,
                            help="seconds allowed per tool call")
    return parser


def parse_args(parser):
    """The parsed command line of `parser`, its --work directory created."""
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    return args


def refusal(cmd):
    """Runs `cmd`, which is to refuse its input: (its exit status, the lines of its stderr)."""
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return res.returncode, res.stderr.strip().splitlines()


class ToolResult:
    """Outcome of one shardc/shardrun invocation."""

    def __init__(self, argv, returncode, stdout, stderr, timed_out=False):
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out

    @property
    def ok(self):
        return not self.timed_out and self.returncode == 0

    def describe(self):
        """One-paragraph description of a failed run for reports."""
        tool = os.path.basename(self.argv[0])
        if self.timed_out:
            status = f"{tool} timed out"
        elif self.returncode < 0:
            try:
                name = signal.Signals(-self.returncode).name
            except ValueError:
                name = str(-self.returncode)
            status = f"{tool} killed by signal {name}"
        else:
            status = f"{tool} exited {self.returncode}"
        text = self.stderr.strip() or self.stdout.strip()
        if len(text) > 2000:
            text = text[:2000] + " [...]"
        return f"{status}: {text}" if text else status


def run_tool(argv, timeout):
    """Runs argv, capturing text output; never raises for a failing or hanging tool."""
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        return ToolResult(argv, None, _text(exc.stdout), _text(exc.stderr), timed_out=True)
    return ToolResult(argv, proc.returncode, _text(proc.stdout), _text(proc.stderr))


def _text(data):
    if data is None:
        return ""
    return data.decode("utf-8", errors="replace")


def compare_output(name, actual, expected, rtol, atol):
    """Compares one output with its reference.

    Floats: np.allclose(rtol, atol, equal_nan=True); every other dtype exactly. Shape and dtype
    must match exactly. Returns (error message or None, max abs error, max relative error); the
    errors are None for non-float outputs.
    """
    if actual.dtype != expected.dtype:
        return f"output {name}: dtype {actual.dtype} != expected {expected.dtype}", None, None
    if actual.shape != expected.shape:
        return (f"output {name}: shape {list(actual.shape)} != expected "
                f"{list(expected.shape)}"), None, None
    if expected.dtype.kind != "f":
        if np.array_equal(actual, expected):
            return None, None, None
        bad = int(np.count_nonzero(actual != expected))
        first = np.argwhere(actual != expected)[0] if expected.ndim else ()
        idx = tuple(int(i) for i in first)
        return (f"output {name}: {bad}/{expected.size} elements differ, e.g. at {list(idx)}: "
                f"{actual[idx]!r} != expected {expected[idx]!r}"), None, None
    max_abs, max_rel = float_errors(actual, expected)
    if np.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True):
        return None, max_abs, max_rel
    close = np.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    bad = int(np.count_nonzero(~close))
    idx = tuple(int(i) for i in np.argwhere(~close)[0]) if expected.ndim else ()
    return (f"output {name}: {bad}/{expected.size} elements outside rtol={rtol} atol={atol} "
            f"(max abs err {max_abs:.3g}, max rel err {max_rel:.3g}), e.g. at {list(idx)}: "
            f"{actual[idx]!r} vs expected {expected[idx]!r}"), max_abs, max_rel


def float_errors(actual, expected):
    """Max absolute and max relative error over the elements that are finite in both (NaN/inf
    positions are judged by allclose's equal_nan/exact-inf rules instead)."""
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    finite = np.isfinite(a) & np.isfinite(e)
    if not finite.any():
        return 0.0, 0.0
    diff = np.abs(a[finite] - e[finite])
    ref = np.abs(e[finite])
    nonzero = ref > 0
    max_rel = float((diff[nonzero] / ref[nonzero]).max()) if nonzero.any() else 0.0
    return float(diff.max()), max_rel


def load_output(out_dir, name):
    """Loads the .npy shardrun wrote for graph output `name`: (array, None) or (None, error)."""
    path = os.path.join(out_dir, npy_name(name) + ".npy")
    if not os.path.exists(path):
        return None, f"output {name}: shardrun wrote no {os.path.basename(path)}"
    try:
        return np.load(path, allow_pickle=False), None
    except Exception as exc:  # a damaged file is a failure of the tool, not of the harness
        return None, f"output {name}: unreadable {os.path.basename(path)}: {exc}"


def compare_outputs(out_dir, expected_outputs, rtol, atol):
    """Compares every (name, expected array) with what shardrun wrote; returns the errors."""
    errors = []
    for name, expected in expected_outputs:
        actual, err = load_output(out_dir, name)
        if err is None:
            err, _, _ = compare_output(name, actual, np.asarray(expected), rtol, atol)
        if err:
            errors.append(err)
    return errors


def export_test_model(model, out_dir, static_batch=None):
    """Runs tests/models/export_MODEL.py into out_dir unless it already holds model.onnx;
    with `static_batch`, exported without dynamic_axes from that many rows."""
    if not os.path.exists(os.path.join(out_dir, "model.onnx")):
        extra = ["--static-batch", str(static_batch)] if static_batch else []
        subprocess.run([sys.executable, os.path.join(MODELS_DIR, f"export_{model}.py"), "--out",
                        out_dir, *extra], check=True, stdout=subprocess.DEVNULL)
    return out_dir


def input_shape_flags(model_dir):
    """`--input-shape NAME=DIMS` flags from an export's input_shapes.txt (symbolic dims)."""
    path = os.path.join(model_dir, "input_shapes.txt")
    if not os.path.exists(path):
        return []
    flags = []
    for line in open(path).read().split():
        flags += ["--input-shape", line]
    return flags


def write_program_checksum(bundle):
    """Re-signs BUNDLE/program.pb after a test edited it on purpose (program.pb.xxh3_64: XXH3-64
    as 16 hex digits and a newline, as shardc writes it), so that what the edit is about is what
    the loader meets."""
    data = open(os.path.join(bundle, "program.pb"), "rb").read()
    with open(os.path.join(bundle, "program.pb.xxh3_64"), "w") as f:
        f.write(xxhash.xxh3_64_hexdigest(data) + "\n")


def metric_lines(path):
    """The lines of a --metrics file (none when it does not exist), without newlines."""
    if not os.path.exists(path):
        return []
    return [line.rstrip("\n") for line in open(path)]


def metrics_field(line, name):
    """The raw text of a field in a metrics line, so floats are compared as written (equal
    text: bit-identical values)."""
    start = line.index(f'"{name}": ') + len(name) + 4
    end = min(i for i in (line.find(",", start), line.find("}", start)) if i >= 0)
    return line[start:end]


def resumed_mismatch(lines, expected):
    """None when the metrics `lines` of a resumed run have the steps of `expected` (the
    uninterrupted run's lines from the same step on) and string-equal (so bit-identical) losses;
    else what differs first."""
    steps = [metrics_field(line, "step") for line in lines]
    if steps != [metrics_field(line, "step") for line in expected]:
        return f"resumed steps {steps}"
    for line, ref in zip(lines, expected):
        if metrics_field(line, "loss") != metrics_field(ref, "loss"):
            return f"step {metrics_field(line, 'step')}: loss {metrics_field(line, 'loss')}, " \
                   f"uninterrupted {metrics_field(ref, 'loss')}"
    return None


def memory_peaks(shardrun_output):
    """(planned, measured) peak bytes of each rank, from shardrun's memory lines."""
    return [(int(p), int(m)) for p, m in
            re.findall(r"planned peak (\d+) bytes, measured peak (\d+) bytes", shardrun_output)]


def pytorch_losses(model, inputs, rows, steps, lr, optimizer_name):
    """Trains `model` `steps` steps with torch.optim.AdamW (weight decay 0.01) or plain SGD
    (`optimizer_name` "adamw" or "sgd") at `lr`, step k on the k-th block of `rows` rows of every
    tensor of `inputs` (cycling through the blocks, as shardrun reads a data set); returns the
    loss of each step."""
    import torch
    optimizer = (torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
                 if optimizer_name == "adamw" else torch.optim.SGD(model.parameters(), lr=lr))
    blocks = len(inputs[0]) // rows
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        block = slice((step % blocks) * rows, (step % blocks + 1) * rows)
        loss = model(*(t[block] for t in inputs))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def train_against_pytorch(args, model_dir, data_dir, configs, expected, steps, lr, rtol=1e-5):
    """Compiles the export in `model_dir` under each (name, shardc flags) of `configs` for each
    optimizer of `expected` ({"adamw": PyTorch's losses, ...}) and trains it `steps` steps on
    `data_dir`; returns (None, detail) when every step's loss is within `rtol` (relative) of
    PyTorch's, else an error string naming the first that is not."""
    details = []
    for optimizer, reference in expected.items():
        for name, flags in configs:
            bundle = os.path.join(model_dir, f"{name}_{optimizer}.shard")
            _, err = compile_and_train(args.shardc, args.shardrun, model_dir, bundle, data_dir,
                                       ["--optimizer", optimizer, *flags], steps, lr)
            if err:
                return err
            losses = [json.loads(line)["loss"] for line in open(bundle + ".jsonl")]
            worst = max((abs(a - b) / abs(b) for a, b in zip(losses, reference)), default=0.0)
            if len(losses) != steps or worst > rtol:
                return f"{name} {optimizer}: losses {losses}, PyTorch {reference}"
            details.append(f"{name} {optimizer} {worst:.2g}")
    return None, "losses against PyTorch: " + ", ".join(details)


def run_cases(cases):
    """Runs each (name, fn) of `cases` and exits with the verdict.

    fn returns None (pass), an error string, or (error or None, detail). A harness exception
    fails its case, not the whole run. Prints PASS/FAIL per case and `N passed, M failed`.
    SHARDC_E2E_CASES (a regular expression) runs only the cases whose names it matches, for
    working on a few of a long script's cases.
    """
    only = os.environ.get("SHARDC_E2E_CASES")
    if only:
        cases = [(name, case) for name, case in cases if re.search(only, name)]
    failed = 0
    for name, case in cases:
        try:
            result = case()
        except Exception as exc:  # a harness error fails the case, not the whole run
            result = f"{type(exc).__name__}: {exc}"
        err, info = (result[0], result[1]) if isinstance(result, tuple) else (result, "")
        if err:
            print(f"FAIL {name}: {err}")
            failed += 1
        else:
            print(f"PASS {name}" + (f": {info}" if info else ""))
    print(f"{len(cases) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


def train_reference(model, model_dir, out, steps, *flags):
    """PyTorch trains the test model exported in `model_dir` `steps` steps with
    train_reference.py and its `flags` (the data: --make-data N, written into OUT/data, or
    --data DIR); returns the loss of each step, from the OUT/losses.jsonl it writes."""
    subprocess.run([sys.executable, os.path.join(MODELS_DIR, "train_reference.py"), "--model",
                    model, "--model-dir", model_dir, "--out", out, "--steps", str(steps),
                    *flags], check=True, stdout=subprocess.DEVNULL)
    return [json.loads(line)["loss"] for line in open(os.path.join(out, "losses.jsonl"))]


def reference_data(model, model_dir, out, batches=4, batch=None):
    """Writes `batches` batches of train_reference.py's deterministic data for the test model
    exported in `model_dir` (at its batch, or `batch` rows a step) into OUT/data, and returns
    that directory."""
    train_reference(model, model_dir, out, 1, "--make-data", str(batches),
                    *(["--batch", str(batch)] if batch else []))
    return os.path.join(out, "data")


def report(results):
    """Prints PASS/FAIL and the text of each (ok, text) of `results`, then `N passed, M
    failed`; returns the exit status."""
    for ok, text in results:
        print(("PASS " if ok else "FAIL ") + text, flush=True)
    failed = sum(1 for ok, _ in results if not ok)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


def compile_and_train(shardc, shardrun, model_dir, bundle, data, flags, steps, lr,
                      run_flags=()):
    """Compiles MODEL_DIR/model.onnx into `bundle` with `flags` (and the export's
    --input-shape flags) and trains it `steps` steps on `data`, metrics in BUNDLE.jsonl.
    Returns (shardrun's output, stdout and stderr together; None) or (None, an error string
    naming the tool and its exit)."""
    def run(cmd):
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    res = run([shardc, os.path.join(model_dir, "model.onnx"), "-o", bundle,
               *input_shape_flags(model_dir), *flags])
    if res.returncode != 0:
        return None, f"shardc {' '.join(flags)}: exit {res.returncode}: {res.stdout.strip()}"
    res = run([shardrun, bundle, "--steps", str(steps), "--data", data, "--lr", str(lr),
               "--metrics", bundle + ".jsonl", *run_flags])
    if res.returncode != 0:
        return None, f"shardrun {bundle}: exit {res.returncode}: {res.stdout.strip()[-400:]}"
    return res.stdout, None


def mpirun_kill_one_rank(mpirun, shardrun, bundle, ranks, data, metrics, victim=2):
    """Trains `bundle` as `ranks` processes under mpirun until it has written a metrics line,
    then kills rank process number `victim` (SIGKILL); the job must end by itself within 60 s,
    with a non-zero exit and a message naming a rank. Returns an error string, or (None,
    what happened)."""
    if os.path.exists(metrics):  # a previous run's: the job has not started until it is new
        os.remove(metrics)
    proc = subprocess.Popen([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(ranks),
                             shardrun, bundle, "--steps", "100000000", "--data", data,
                             "--metrics", metrics],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline and not (os.path.exists(metrics) and
                                          os.path.getsize(metrics) > 0):
        time.sleep(0.1)
    pids = subprocess.run(["pgrep", "-f", f"{shardrun} {bundle}"],
                          capture_output=True, text=True).stdout.split()
    pids = [int(pid) for pid in pids if int(pid) != proc.pid]
    if len(pids) < ranks:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return f"found {len(pids)} rank processes, expected {ranks}"
    os.kill(pids[victim], signal.SIGKILL)
    killed = time.time()
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "the job still ran 60 s after a rank was killed"
    took = time.time() - killed
    if proc.returncode == 0:
        return "the job exited 0 after a rank was killed"
    lines = [line for line in err.splitlines() if "rank" in line and
             ("exited on signal" in line or "shardrun: error" in line)]
    if not lines:
        return f"no message naming the rank; stderr: {err[-400:]}"
    return None, f"ended after {took:.1f} s, exit {proc.returncode}: {lines[0].strip()}"


def mpirun_losses(mpirun, shardrun, bundle, ranks, data, lr, steps, metrics, timeout,
                  run_flags=(), stderr=None):
    """Trains `bundle` for `steps` steps as `ranks` processes under mpirun (with more shardrun
    flags `run_flags`); the losses of its metrics file, or an error string. With a list
    `stderr`, the job's standard error is appended to it."""
    res = run_tool([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(ranks),
                    shardrun, bundle, "--steps", str(steps), "--data", data, "--lr", str(lr),
                    "--metrics", metrics, *run_flags], timeout)
    if stderr is not None:
        stderr.append(res.stderr)
    if not res.ok:
        return f"mpirun: {res.describe()}"
    return [json.loads(line)["loss"] for line in open(metrics)]

