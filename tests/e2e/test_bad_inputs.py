"""Checks that shardc and shardrun reject bad inputs cleanly.

    python3 test_bad_inputs.py --shardc PATH --shardrun PATH --work DIR

Every case builds its bad input under DIR and runs one tool on it. The tool must exit with
status 1 (2 is accepted for command-line usage errors), not 0 and not by a signal, and print
exactly one line on stderr, starting with `shardc: error:` (or `shardrun: error:`), that names
what is wrong: the file, the node/op, the input, or the flag.

Prints one PASS/FAIL line per case and `N passed, M failed`; exit status 1 if any case fails.
"""

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402

MODELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "models")
TOOL_TIMEOUT_S = 120
BERT_INPUTS = ("input_ids", "token_type_ids", "attention_mask", "labels")


class Case:
    """One bad-input case.

    argv: the command; tool: "shardc" or "shardrun" (the expected stderr prefix); codes: the
    accepted exit statuses; names: strings the message must contain, each given as a tuple of
    alternatives (any one suffices); extra: optional function(message) -> error text or None.
    """

    def __init__(self, name, argv, tool, names, codes=(1,), extra=None):
        self.name = name
        self.argv = argv
        self.tool = tool
        self.names = [n if isinstance(n, tuple) else (n,) for n in names]
        self.codes = codes
        self.extra = extra


def check(case, timeout):
    """Runs a case; returns None when the tool behaved, else what was wrong."""
    res = e2e_util.run_tool(case.argv, timeout)
    if res.timed_out:
        return f"timed out after {timeout} s"
    if res.returncode < 0:
        return res.describe()
    problems = []
    if res.returncode not in case.codes:
        want = " or ".join(str(c) for c in case.codes)
        problems.append(f"exit status {res.returncode}, expected {want}")
    message = res.stderr.rstrip("\n")
    if not message:
        problems.append("nothing on stderr")
    elif "\n" in message:
        problems.append(f"{len(message.splitlines())} lines on stderr, expected one")
    else:
        prefix = f"{case.tool}: error: "
        if not message.startswith(prefix):
            problems.append(f"message does not start with {prefix!r}")
        for alternatives in case.names:
            if not any(a in message for a in alternatives):
                problems.append("message does not name " + " or ".join(map(repr, alternatives)))
        if case.extra:
            err = case.extra(message)
            if err:
                problems.append(err)
    if problems:
        return "; ".join(problems) + f"\n    stderr: {res.stderr.strip()!r}"
    return None


# ---- fixtures --------------------------------------------------------------------------------

def save(model, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save_model(model, path)
    return path


def relu_model(opset):
    """x -> Relu -> y, declaring the given default-domain opset."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    # IR 8 is the newest this onnx writes; the opset is what the case is about.
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def rows_model(rows):
    """loss = sum(x @ w) whose one input x has `rows` rows (f32[rows x 4])."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 2], [1.0] * 8)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
         helper.make_node("ReduceSum", ["h"], ["loss"], name="sum", keepdims=0)], "zero_rows",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 4])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def unsupported_ops_model():
    """Two LpPool nodes and one Hardmax (none supported) around a supported Relu."""
    nodes = [
        helper.make_node("LpPool", ["x"], ["c1"], name="first_lp_pool", kernel_shape=[3, 3]),
        helper.make_node("LpPool", ["c1"], ["c2"], name="second_lp_pool", kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c2"], ["r"], name="relu"),
        helper.make_node("Hardmax", ["r"], ["y"], name="the_hardmax"),
    ]
    graph = helper.make_graph(
        nodes, "unsupported", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [1, 1, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 1, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    return model


def pad_mode_model(mode):
    """x -> Pad(mode) -> y."""
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads"], ["y"], name="the_pad", mode=mode)], "pad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5])],
        [numpy_helper.from_array(np.array([1, 1], np.int64), "pads")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def runtime_model():
    """A small valid model for the shardrun cases: inputs `features` (float32 [3,4]) and
    `class_ids` (int64 [3]); outputs `loss` and `scores`."""
    w = numpy_helper.from_array(np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5), "w")
    nodes = [
        helper.make_node("MatMul", ["features", "w"], ["scores"], name="scores"),
        helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "class_ids"], ["loss"],
                         name="loss", reduction="mean"),
    ]
    graph = helper.make_graph(
        nodes, "runtime",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [3, 4]),
         helper.make_tensor_value_info("class_ids", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [3, 5])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    return model


def export_bert(work):
    """Exports the BERT test model (batch dim symbolic) into work/bert; returns its dir."""
    out = os.path.join(work, "bert")
    script = os.path.join(MODELS_DIR, "export_bert_encoder.py")
    proc = subprocess.run([sys.executable, script, "--out", out], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise RuntimeError("exporting the BERT model failed:\n" +
                           proc.stdout.decode(errors="replace"))
    return out


def bert_shapes(bert_dir):
    """The NAME=AxB lines of the export's input_shapes.txt."""
    with open(os.path.join(bert_dir, "input_shapes.txt")) as f:
        return [line.strip() for line in f if line.strip()]


def shape_flags(shapes):
    return [arg for shape in shapes for arg in ("--input-shape", shape)]


def truncated_copy(src, dst):
    """Writes the first half of src to dst, shortened further if needed until protobuf itself
    rejects it (a cut exactly at a field boundary would still parse)."""
    with open(src, "rb") as f:
        data = f.read()
    cut = len(data) // 2
    while cut > 1:
        try:
            onnx.ModelProto().ParseFromString(data[:cut])
        except Exception:
            break
        cut -= 1
    with open(dst, "wb") as f:
        f.write(data[:cut])
    return dst


def count_mentioned(model_path, count):
    """Extra check: the unsupported-op message states the Conv count (2) as a number of its own
    (the file path is removed first, its digits do not count)."""
    def check_count(message):
        text = message.replace(model_path, "").replace(os.path.basename(model_path), "")
        if not re.search(rf"(?<!\d){count}(?!\d)", text):
            return f"message does not give the count {count}"
        return None
    return check_count


def opset_mentioned(version):
    def check_opset(message):
        if "opset" not in message.lower() or not re.search(rf"(?<!\d){version}(?!\d)", message):
            return f"message does not mention opset {version}"
        return None
    return check_opset


def build_cases(args):
    work = args.work
    shardc, shardrun = args.shardc, args.shardrun
    cases = []

    def compile_argv(model_path, *extra):
        bundle = os.path.join(os.path.dirname(model_path), "out.shard")
        return [shardc, model_path, "--mode", "forward", "-o", bundle, *extra]

    # --- shardc: unreadable models
    bert = export_bert(work)
    bert_model = os.path.join(bert, "model.onnx")
    shapes = bert_shapes(bert)
    bert_flags = shape_flags(shapes)

    path = truncated_copy(bert_model, os.path.join(bert, "truncated.onnx"))
    cases.append(Case("truncated_onnx", compile_argv(path, *bert_flags), "shardc",
                      ["truncated.onnx"]))

    path = os.path.join(work, "png", "picture.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:  # a PNG signature and IHDR chunk, not a protobuf
        f.write(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06"
                b"\x00\x00\x00\x1f\xf3\xffa")
    cases.append(Case("not_onnx_png", compile_argv(path), "shardc", ["picture.onnx"]))

    path = os.path.join(work, "text", "notes.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("This is a text file, not an ONNX model.\n")
    cases.append(Case("not_onnx_text", compile_argv(path), "shardc", ["notes.onnx"]))

    # Special files: a device reads without end and opening a named pipe waits for a writer;
    # both are refused at once (each case runs under the harness's timeout).
    cases.append(Case("model_is_a_device", compile_argv("/dev/zero"), "shardc",
                      ["/dev/zero", "not a regular file"]))
    fifo = os.path.join(work, "fifo", "model.onnx")
    os.makedirs(os.path.dirname(fifo), exist_ok=True)
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    cases.append(Case("model_is_a_named_pipe", compile_argv(fifo), "shardc",
                      ["model.onnx", "not a regular file"]))

    path = os.path.join(work, "missing", "does_not_exist.onnx")
    cases.append(Case("model_file_missing", compile_argv(path), "shardc",
                      ["does_not_exist.onnx"]))

    # --- shardc: optimizer options PyTorch would refuse, or that the optimizer ignores
    for name, flags, named in [
            ("beta2_one", ["--beta2", "1"], "--beta2 1"),
            ("beta1_two", ["--beta1", "2"], "--beta1 2"),
            ("nesterov_without_momentum", ["--optimizer", "sgd", "--nesterov"], "--nesterov"),
            ("momentum_with_adamw", ["--momentum", "0.9"], "--momentum"),
            ("betas_with_sgd", ["--optimizer", "sgd", "--beta1", "0.5"], "--beta1")]:
        cases.append(Case(f"optimizer_{name}", [shardc, bert_model, "--mode", "train", "-o",
                                                os.path.join(work, "opt.shard"), *bert_flags,
                                                *flags], "shardc", [named], codes=(2,)))

    # A batch of 0 rows on 2 ranks: auto says why data parallelism is refused (it once said
    # the compiler refused every candidate, or that the model had no inputs), naming the input.
    path = save(rows_model(0), os.path.join(work, "zero_rows", "zero.onnx"))
    cases.append(Case("zero_row_input_on_2_gpus",
                      [shardc, path, "--gpus", "2", "-o", os.path.join(work, "zero.shard")],
                      "shardc", ["zero.onnx", "input 'x'", "size 0"]))
    # A --gpu-memory below 1 MiB is printed in bytes (it was "0.00 MiB").
    path = save(rows_model(4), os.path.join(work, "four_rows", "four.onnx"))
    cases.append(Case("gpu_memory_one_byte",
                      [shardc, path, "--gpus", "2", "--gpu-memory", "1", "-o",
                       os.path.join(work, "four.shard")],
                      "shardc", ["four.onnx", "--gpu-memory 1 byte on 2 ranks"]))

    # --- shardc: models it must refuse
    path = save(unsupported_ops_model(), os.path.join(work, "unsupported", "pools.onnx"))
    cases.append(Case("unsupported_ops", compile_argv(path), "shardc",
                      ["pools.onnx", "LpPool", "Hardmax", ("first_lp_pool", "second_lp_pool"),
                       "the_hardmax"], extra=count_mentioned(path, 2)))

    path = save(pad_mode_model("reflect"), os.path.join(work, "pad_reflect", "pad.onnx"))
    cases.append(Case("pad_mode_reflect", compile_argv(path), "shardc",
                      ["pad.onnx", "the_pad", "mode 'reflect' is not supported"]))

    for opset in (12, 21):
        path = save(relu_model(opset), os.path.join(work, f"opset{opset}", "relu.onnx"))
        cases.append(Case(f"opset_{opset}", compile_argv(path), "shardc", ["relu.onnx"],
                          extra=opset_mentioned(opset)))

    cases.append(Case("symbolic_dim_without_input_shape", compile_argv(bert_model), "shardc",
                      ["model.onnx", BERT_INPUTS, "batch"]))

    # --- shardc: bad --input-shape flags (usage errors may exit 2)
    others = [s for s in shapes if not s.startswith("input_ids=")]
    for name, value in (("input_shape_not_a_number", "input_ids=4xabc"),
                        ("input_shape_no_equals", "input_ids"),
                        ("input_shape_negative", "input_ids=-4x12")):
        argv = compile_argv(bert_model, *shape_flags(others + [value]))
        cases.append(Case(name, argv, "shardc", ["--input-shape"], codes=(1, 2)))
    argv = compile_argv(bert_model, *bert_flags, "--input-shape", "no_such_input=4x12")
    cases.append(Case("input_shape_unknown_input", argv, "shardc", ["no_such_input"],
                      codes=(1, 2)))

    # --- shardc: external data file missing
    nodata = os.path.join(work, "bert_no_weights")
    shutil.rmtree(nodata, ignore_errors=True)
    os.makedirs(nodata)
    shutil.copy(bert_model, nodata)
    cases.append(Case("external_data_missing",
                      compile_argv(os.path.join(nodata, "model.onnx"), *bert_flags), "shardc",
                      ["model.weights"]))

    # --- shardc: external data that is a symbolic link leading out of the model's directory
    # (the location's text stays inside; the file it resolves to does not)
    linked = os.path.join(work, "bert_linked_weights")
    shutil.rmtree(linked, ignore_errors=True)
    os.makedirs(linked)
    shutil.copy(bert_model, linked)
    outside = os.path.join(work, "outside.weights")
    shutil.copy(os.path.join(os.path.dirname(bert_model), "model.weights"), outside)
    os.symlink(outside, os.path.join(linked, "model.weights"))
    cases.append(Case("external_data_symlink_outside",
                      compile_argv(os.path.join(linked, "model.onnx"), *bert_flags), "shardc",
                      ["model.weights", "outside the model's directory"]))

    # --- planning only: with --no-weights the same model compiles, and shardrun refuses the
    # weightless bundle with a clear error instead of running on zeros.
    planned = os.path.join(nodata, "planned.shard")
    shutil.rmtree(planned, ignore_errors=True)
    res = e2e_util.run_tool([shardc, os.path.join(nodata, "model.onnx"), "--mode", "forward",
                             "-o", planned, "--no-weights", *bert_flags], args.timeout)
    if not res.ok:
        return cases, [f"--no-weights did not compile {nodata}/model.onnx: {res.describe()}"]
    with open(os.path.join(planned, "plan.txt")) as f:
        if "weights: absent" not in f.read():
            return cases, [f"{planned}/plan.txt does not say that the weights are absent"]
    cases.append(Case("run_planning_only_bundle",
                      [shardrun, planned, "--data", nodata, "--outputs", planned + "_out"],
                      "shardrun", ["planned.shard", "weights"]))

    # --- shardrun: bad data for a model that compiles
    rt_model = save(runtime_model(), os.path.join(work, "runtime", "model.onnx"))
    bundle = os.path.join(work, "runtime", "model.shard")
    shutil.rmtree(bundle, ignore_errors=True)
    res = e2e_util.run_tool([shardc, rt_model, "--mode", "forward", "-o", bundle],
                            args.timeout)
    if not res.ok:
        # The shardrun cases cannot run; report them as failures with the reason.
        return cases, [f"shardrun fixture {rt_model} did not compile: {res.describe()}"]
    good = {"features": np.arange(12, dtype=np.float32).reshape(3, 4) / 10,
            "class_ids": np.array([0, 4, 2], dtype=np.int64)}

    def data_dir(name, **changes):
        d = os.path.join(work, "runtime", name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for key, value in {**good, **changes}.items():
            if value is None:
                continue
            if isinstance(value, bytes):
                with open(os.path.join(d, key + ".npy"), "wb") as f:
                    f.write(value)
            else:
                np.save(os.path.join(d, key + ".npy"), value)
        return d

    def run_argv(d):
        out = d + "_out"
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        return [shardrun, bundle, "--data", d, "--outputs", out]

    cases.append(Case("npy_wrong_shape", run_argv(data_dir(
        "wrong_shape", features=np.zeros((3, 5), np.float32))), "shardrun", ["features"]))
    cases.append(Case("npy_wrong_dtype", run_argv(data_dir(
        "wrong_dtype", features=np.zeros((3, 4), np.float64))), "shardrun", ["features"]))
    cases.append(Case("npy_missing", run_argv(data_dir("missing", class_ids=None)), "shardrun",
                      ["class_ids"]))
    piped = data_dir("named_pipe", class_ids=None)
    if not os.path.exists(os.path.join(piped, "class_ids.npy")):
        os.mkfifo(os.path.join(piped, "class_ids.npy"))
    cases.append(Case("npy_named_pipe", run_argv(piped), "shardrun",
                      ["class_ids.npy", "not a regular file"]))
    cases.append(Case("npy_not_npy", run_argv(data_dir(
        "not_npy", class_ids=b"not a .npy file\n")), "shardrun", ["class_ids"]))
    argv = run_argv(data_dir("no_bundle"))
    argv[1] = os.path.join(work, "runtime", "no_such_bundle.shard")
    cases.append(Case("bundle_missing", argv, "shardrun", ["no_such_bundle.shard"]))
    return cases, []


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, timeout=TOOL_TIMEOUT_S))
    args.work = os.path.abspath(args.work)

    cases, fixture_errors = build_cases(args)
    passed = failed = 0
    for case in cases:
        problem = check(case, args.timeout)
        if problem:
            failed += 1
            print(f"FAIL {case.name}: {problem}")
        else:
            passed += 1
            print(f"PASS {case.name}")
    for err in fixture_errors:
        failed += 1
        print(f"FAIL {err}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
