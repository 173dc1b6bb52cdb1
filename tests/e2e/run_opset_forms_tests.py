"""End-to-end tests of the operator forms of ONNX opsets 18 to 20 that shardc claims.

    python3 run_opset_forms_tests.py --shardc PATH --shardrun PATH --work DIR [--filter REGEX]

The onnx package of Debian 12 (1.12) knows opsets up to 17, so its backend node tests never
exercise the newer forms: Gelu (20), Reduce* axes as an input (ReduceMean/ReduceMax, 18),
Split's num_outputs (18), and the opset 19/20 versions of Reshape, Shape, Cast, Identity and
ConstantOfShape. Each case here builds a small model with onnx.helper declaring opset 18, 19 or
20 (onnx 1.12's checker does not know these opsets, so it is not run), compiles it with
`shardc --mode forward`, runs it with shardrun and compares every output with a reference
computed independently in NumPy: floats with np.allclose(rtol=1e-5, atol=1e-6), everything else
exactly; shapes and dtypes exactly. Cases for ops that shardc does not support (at that opset)
must instead fail to compile with exit status 1 and one `shardc: error: ... unsupported ops`
line naming the op and the node.

Prints one PASS/FAIL line per case and `N passed, M failed`; exit status 1 if any case fails.
"""

import argparse
import math
import os
import re
import shutil
import sys
import traceback

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402
from e2e_util import npy_name  # noqa: E402

RTOL = 1e-5
ATOL = 1e-6
TOOL_TIMEOUT_S = 120

# The IR version ONNX pairs with each opset (13: IR 7, 18: IR 8, 19 and 20: IR 9).
IR_VERSION = {13: 7, 18: 8, 19: 9, 20: 9}


class Case:
    """One model and what must happen to it.

    nodes: onnx NodeProtos; inputs: [(name, array)] fed as graph inputs; outputs: [(name,
    reference array)] (shape and dtype of the declared graph outputs come from the reference);
    initializers: [(name, array)]; unsupported: for a model shardc must refuse, the op types
    its error must name (then outputs only declare the graph outputs).
    """

    def __init__(self, name, opset, nodes, inputs, outputs, initializers=(), unsupported=None):
        self.name = name
        self.opset = opset
        self.nodes = nodes
        self.inputs = inputs
        self.outputs = outputs
        self.initializers = list(initializers)
        self.unsupported = unsupported

    def model(self):
        def value_info(name, array):
            elem = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.asarray(array).dtype]
            return helper.make_tensor_value_info(name, elem, list(np.shape(array)))

        graph = helper.make_graph(
            self.nodes, self.name,
            [value_info(n, a) for n, a in self.inputs],
            [value_info(n, a) for n, a in self.outputs],
            [numpy_helper.from_array(np.asarray(a), n) for n, a in self.initializers])
        # No onnx.checker: onnx 1.12 has no schemas for these opsets.
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                 ir_version=IR_VERSION[self.opset])


def node(op, inputs, outputs, name=None, **attrs):
    return helper.make_node(op, inputs, outputs, name=name or outputs[0], **attrs)


def rng(seed):
    return np.random.default_rng(seed)


def floats(seed, shape, low=-3.0, high=3.0):
    return rng(seed).uniform(low, high, size=shape).astype(np.float32)


def ints(seed, shape, low=-50, high=50):
    return rng(seed).integers(low, high, size=shape, dtype=np.int64)


I64 = np.int64


# ---- references (NumPy, float64 internally) --------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu_ref(x, approximate):
    x64 = x.astype(np.float64)
    if approximate == "none":
        y = 0.5 * x64 * (1.0 + _erf(x64 / math.sqrt(2.0)))
    else:
        inner = math.sqrt(2.0 / math.pi) * (x64 + 0.044715 * x64 ** 3)
        y = 0.5 * x64 * (1.0 + np.tanh(inner))
    return y.astype(np.float32)


def reduce_ref(fn, x, axes, keepdims):
    """fn over `axes` (None: all axes) of x, in float64 for floats."""
    axis = None if axes is None else tuple(int(a) % x.ndim for a in axes)
    data = x.astype(np.float64) if x.dtype.kind == "f" else x
    return np.asarray(fn(data, axis=axis, keepdims=bool(keepdims))).astype(x.dtype)


def split_ref(x, axis, sizes):
    bounds = np.cumsum(sizes)[:-1]
    return np.split(x, bounds, axis=axis)


# ---- cases ------------------------------------------------------------------------------------

def gelu_cases():
    x = floats(1, (4, 7), -5.0, 5.0)
    x[0, :3] = [0.0, -0.0, 1e-3]
    x[3, :4] = [-30.0, -10.0, 10.0, 30.0]  # saturated tails
    cases = []
    for label, attrs, approx in (("none", {"approximate": "none"}, "none"),
                                 ("tanh", {"approximate": "tanh"}, "tanh"),
                                 ("default", {}, "none")):
        cases.append(Case(f"gelu20_{label}", 20, [node("Gelu", ["x"], ["y"], **attrs)],
                          [("x", x)], [("y", gelu_ref(x, approx))]))
    # Gelu inside a graph: its output feeds another op and a 3-D input.
    x3 = floats(2, (2, 3, 5))
    cases.append(Case("gelu20_tanh_chain", 20,
                      [node("Gelu", ["x"], ["g"], approximate="tanh"),
                       node("Mul", ["g", "x"], ["y"])],
                      [("x", x3)], [("y", gelu_ref(x3, "tanh") * x3)]))
    return cases


def reduce18_cases():
    x = floats(3, (3, 4, 5))
    xi = ints(4, (3, 4, 5))
    cases = []
    for op, fn in (("ReduceMean", np.mean), ("ReduceMax", np.max)):
        short = op[len("Reduce"):].lower()
        for keepdims in (1, 0):
            axes = np.array([2, 0], I64)
            cases.append(Case(
                f"{short}18_axes_input_keepdims{keepdims}", 18,
                [node(op, ["x", "axes"], ["y"], keepdims=keepdims)],
                [("x", x)], [("y", reduce_ref(fn, x, axes, keepdims))],
                [("axes", axes)]))
        axes = np.array([-1], I64)
        cases.append(Case(f"{short}18_negative_axis_default_keepdims", 18,
                          [node(op, ["x", "axes"], ["y"])],
                          [("x", x)], [("y", reduce_ref(fn, x, axes, 1))], [("axes", axes)]))
        for keepdims in (1, 0):
            cases.append(Case(f"{short}18_no_axes_keepdims{keepdims}", 18,
                              [node(op, ["x"], ["y"], keepdims=keepdims)],
                              [("x", x)], [("y", reduce_ref(fn, x, None, keepdims))]))
        # An empty axes input without noop_with_empty_axes also reduces everything.
        empty = np.zeros(0, I64)
        cases.append(Case(f"{short}18_empty_axes_reduce_all", 18,
                          [node(op, ["x", "axes"], ["y"], keepdims=0)],
                          [("x", x)], [("y", reduce_ref(fn, x, None, 0))], [("axes", empty)]))
        # noop_with_empty_axes=1 with empty axes: the identity (then a Neg, so that the
        # output is computed) and as the graph output directly.
        cases.append(Case(f"{short}18_noop_empty_axes", 18,
                          [node(op, ["x", "axes"], ["r"], noop_with_empty_axes=1),
                           node("Neg", ["r"], ["y"])],
                          [("x", x)], [("y", -x)], [("axes", empty)]))
        cases.append(Case(f"{short}18_noop_empty_axes_is_output", 18,
                          [node(op, ["x", "axes"], ["y"], noop_with_empty_axes=1)],
                          [("x", x)], [("y", x.copy())], [("axes", empty)]))
        cases.append(Case(f"{short}18_noop_absent_axes", 18,
                          [node(op, ["x"], ["r"], noop_with_empty_axes=1),
                           node("Neg", ["r"], ["y"])],
                          [("x", x)], [("y", -x)]))
        # noop_with_empty_axes=1 does nothing when axes are given.
        axes = np.array([1], I64)
        cases.append(Case(f"{short}18_noop_with_axes", 18,
                          [node(op, ["x", "axes"], ["y"], noop_with_empty_axes=1)],
                          [("x", x)], [("y", reduce_ref(fn, x, axes, 1))], [("axes", axes)]))
        # Axes from a Constant node rather than an initializer.
        axes_t = numpy_helper.from_array(np.array([0, 1], I64), "axes_value")
        cases.append(Case(f"{short}18_axes_from_constant_node", 18,
                          [node("Constant", [], ["axes"], value=axes_t),
                           node(op, ["x", "axes"], ["y"], keepdims=0)],
                          [("x", x)], [("y", reduce_ref(fn, x, [0, 1], 0))]))
    axes = np.array([1, -1], I64)
    cases.append(Case("max18_int64", 18, [node("ReduceMax", ["x", "axes"], ["y"], keepdims=0)],
                      [("x", xi)], [("y", reduce_ref(np.max, xi, axes, 0))], [("axes", axes)]))
    return cases


def reduce_sum13_cases():
    x = floats(5, (3, 4, 5))
    xi = ints(6, (2, 3, 4))
    cases = []
    for keepdims in (1, 0):
        axes = np.array([0, -1], I64)
        cases.append(Case(f"sum13_axes_input_keepdims{keepdims}", 13,
                          [node("ReduceSum", ["x", "axes"], ["y"], keepdims=keepdims)],
                          [("x", x)], [("y", reduce_ref(np.sum, x, axes, keepdims))],
                          [("axes", axes)]))
    cases.append(Case("sum13_no_axes", 13, [node("ReduceSum", ["x"], ["y"], keepdims=0)],
                      [("x", x)], [("y", reduce_ref(np.sum, x, None, 0))]))
    cases.append(Case("sum13_noop_empty_axes", 13,
                      [node("ReduceSum", ["x", "axes"], ["r"], noop_with_empty_axes=1),
                       node("Neg", ["r"], ["y"])],
                      [("x", x)], [("y", -x)], [("axes", np.zeros(0, I64))]))
    axes = np.array([1], I64)
    cases.append(Case("sum13_int64", 13, [node("ReduceSum", ["x", "axes"], ["y"])],
                      [("x", xi)], [("y", reduce_ref(np.sum, xi, axes, 1))], [("axes", axes)]))
    # The same ReduceSum at opset 18 (its form did not change).
    cases.append(Case("sum18_axes_input", 18,
                      [node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
                      [("x", x)], [("y", reduce_ref(np.sum, x, [1], 0))],
                      [("axes", np.array([1], I64))]))
    return cases


def split18_cases():
    cases = []

    def split_case(name, x, axis, sizes, attrs, split_input=None):
        outs = [f"y{i}" for i in range(len(sizes))]
        ins = ["x"] + (["split"] if split_input is not None else [])
        inits = [("split", split_input)] if split_input is not None else []
        refs = split_ref(x, axis, sizes)
        return Case(name, 18, [node("Split", ins, outs, name="split", **attrs)],
                    [("x", x)], list(zip(outs, refs)), inits)

    x7 = floats(7, (7, 4))
    cases.append(split_case("split18_num_outputs_uneven", x7, 0, [3, 3, 1], {"num_outputs": 3}))
    x10 = floats(8, (2, 10))
    cases.append(split_case("split18_num_outputs_uneven_4", x10, 1, [3, 3, 3, 1],
                            {"axis": -1, "num_outputs": 4}))
    # 4 into 3: chunks of ceil(4 / 3) = 2, so the last chunk is empty.
    x4 = floats(11, (4, 3))
    cases.append(split_case("split18_num_outputs_empty_last", x4, 0, [2, 2, 0],
                            {"num_outputs": 3}))
    x6 = floats(9, (3, 6, 2))
    cases.append(split_case("split18_num_outputs_even", x6, 1, [3, 3],
                            {"axis": 1, "num_outputs": 2}))
    x5i = ints(10, (5, 3))
    cases.append(split_case("split18_num_outputs_int64", x5i, 0, [3, 2], {"num_outputs": 2}))
    cases.append(split_case("split18_split_input", x7, 0, [2, 5], {},
                            split_input=np.array([2, 5], I64)))
    cases.append(split_case("split18_split_input_axis_neg", x10, 1, [1, 6, 3], {"axis": -1},
                            split_input=np.array([1, 6, 3], I64)))
    cases.append(split_case("split18_equal_parts", x6, 1, [2, 2, 2], {"axis": 1}))
    return cases


def shape_family_cases():
    cases = []
    for opset in (19, 20):
        x = floats(11 + opset, (2, 3, 4))
        # Reshape: 0 copies the input dim, -1 is inferred.
        cases.append(Case(f"reshape{opset}", opset,
                          [node("Reshape", ["x", "shape"], ["y"])],
                          [("x", x)], [("y", x.reshape(2, 4, 3))],
                          [("shape", np.array([0, -1, 3], I64))]))
        # Shape with start/end as a graph output, and Shape feeding a Reshape.
        cases.append(Case(f"shape{opset}_start_end", opset,
                          [node("Shape", ["x"], ["s"], start=1),
                           node("Shape", ["x"], ["t"], start=-2, end=-1),
                           node("Shape", ["x"], ["u"])],
                          [("x", x)],
                          [("s", np.array([3, 4], I64)), ("t", np.array([3], I64)),
                           ("u", np.array([2, 3, 4], I64))]))
        cases.append(Case(f"shape{opset}_into_reshape", opset,
                          [node("Shape", ["x"], ["s"], end=1),
                           node("Concat", ["s", "minus1"], ["shape"], axis=0),
                           node("Reshape", ["x", "shape"], ["y"])],
                          [("x", x)], [("y", x.reshape(2, 12))],
                          [("minus1", np.array([-1], I64))]))
        # Cast in both directions, to bool and back; saturate (19) set explicitly.
        xc = (floats(13 + opset, (3, 5), -7.0, 7.0) * 1.5).astype(np.float32)
        xc[0, :4] = [0.0, -0.0, 2.5, -2.5]
        n = ints(15 + opset, (3, 5), -1000, 1000)
        cases.append(Case(f"cast{opset}", opset,
                          [node("Cast", ["x"], ["to_i64"], to=onnx.TensorProto.INT64),
                           node("Cast", ["x"], ["to_i32"], to=onnx.TensorProto.INT32,
                                saturate=1),
                           node("Cast", ["x"], ["to_bool"], to=onnx.TensorProto.BOOL),
                           node("Cast", ["to_bool"], ["bool_to_f"], to=onnx.TensorProto.FLOAT),
                           node("Cast", ["n"], ["n_to_f"], to=onnx.TensorProto.FLOAT),
                           node("Cast", ["n"], ["n_to_i32"], to=onnx.TensorProto.INT32)],
                          [("x", xc), ("n", n)],
                          [("to_i64", np.trunc(xc).astype(np.int64)),
                           ("to_i32", np.trunc(xc).astype(np.int32)),
                           ("to_bool", xc != 0),
                           ("bool_to_f", (xc != 0).astype(np.float32)),
                           ("n_to_f", n.astype(np.float32)),
                           ("n_to_i32", n.astype(np.int32))]))
        # Identity on a float and an int tensor, feeding another op and as an output.
        cases.append(Case(f"identity{opset}", opset,
                          [node("Identity", ["x"], ["i"]),
                           node("Exp", ["i"], ["y"]),
                           node("Identity", ["n"], ["m"])],
                          [("x", x), ("n", n)],
                          [("y", np.exp(x.astype(np.float64)).astype(np.float32)),
                           ("m", n.copy())]))
        # ConstantOfShape: default value (float 0), an int64 value and a float value, each
        # combined with a graph input so that the result is used by a kernel.
        shape = np.array([2, 3, 4], I64)
        cases.append(Case(f"constant_of_shape{opset}", opset,
                          [node("ConstantOfShape", ["shape"], ["zeros"]),
                           node("ConstantOfShape", ["shape"], ["sevens"],
                                value=numpy_helper.from_array(np.array([7], I64), "v")),
                           node("ConstantOfShape", ["shape"], ["halves"],
                                value=numpy_helper.from_array(np.array([0.5], np.float32), "h")),
                           node("Add", ["x", "zeros"], ["a"]),
                           node("Mul", ["x", "halves"], ["b"]),
                           node("Cast", ["sevens"], ["c"], to=onnx.TensorProto.FLOAT),
                           node("Sub", ["x", "c"], ["d"]),
                           node("Shape", ["x"], ["xs"]),
                           node("ConstantOfShape", ["xs"], ["ones_i"],
                                value=numpy_helper.from_array(np.array([1], I64), "o"))],
                          [("x", x)],
                          [("a", x.copy()), ("b", (x * np.float32(0.5)).astype(np.float32)),
                           ("d", (x - np.float32(7)).astype(np.float32)),
                           ("ones_i", np.ones((2, 3, 4), I64))],
                          [("shape", shape)]))
    return cases


def pad_cases():
    """Pad, constant mode: every dim with a crop (opset 13), opset 18's axes in a given order
    (pads follow it) with a value, and int64 labels padded with an ignore_index (as Hugging
    Face's causal-LM loss pads its labels)."""
    x = floats(30, (2, 3, 4))
    labels = np.arange(12, dtype=I64).reshape(2, 6)
    return [
        Case("pad13_pad_and_crop", 13,
             [node("Pad", ["x", "pads"], ["y"], name="pad")], [("x", x)],
             [("y", np.pad(x, ((1, 0), (0, 2), (0, 0)))[:, :, 1:3])],
             [("pads", np.array([1, 0, -1, 0, 2, -1], I64))]),
        Case("pad18_axes_and_value", 18,
             [node("Pad", ["x", "pads", "value", "axes"], ["y"], name="pad")], [("x", x)],
             [("y", np.pad(x, ((0, 0), (2, 0), (0, 1)), constant_values=3.5))],
             [("pads", np.array([0, 2, 1, 0], I64)), ("value", np.array(3.5, np.float32)),
              ("axes", np.array([-1, 1], I64))]),
        Case("pad19_int64_labels", 19,
             [node("Pad", ["labels", "pads", "value"], ["y"], name="pad")],
             [("labels", labels)],
             [("y", np.pad(labels, ((0, 0), (0, 1)), constant_values=-100))],
             [("pads", np.array([0, 0, 0, 1], I64)), ("value", np.array(-100, I64))]),
    ]


def unsupported_cases():
    x = floats(20, (1, 2, 3))
    cases = [
        Case("hardmax18_unsupported", 18, [node("Hardmax", ["x"], ["y"], name="the_hardmax")],
             [("x", x)], [("y", np.zeros((1, 2, 3), np.float32))],
             unsupported=["Hardmax"]),
        Case("hardmax19_unsupported_beside_supported", 19,
             [node("Relu", ["x"], ["r"], name="relu"),
              node("Hardmax", ["r"], ["y"], name="hardmax_after_relu")],
             [("x", x)], [("y", np.zeros((1, 2, 3), np.float32))],
             unsupported=["Hardmax"]),
        Case("groupnorm18_and_mish18_unsupported", 18,
             [node("GroupNormalization", ["x", "s", "b"], ["g"], name="gn", num_groups=1),
              node("Mish", ["g"], ["y"], name="mish")],
             [("x", x)], [("y", np.zeros((1, 2, 3), np.float32))],
             [("s", np.ones(1, np.float32)), ("b", np.zeros(1, np.float32))],
             unsupported=["GroupNormalization", "Mish"]),
        # Gelu exists only from opset 20.
        Case("gelu19_unsupported", 19, [node("Gelu", ["x"], ["y"], name="early_gelu")],
             [("x", x)], [("y", x.copy())], unsupported=["Gelu"]),
    ]
    return cases


def all_cases():
    return (gelu_cases() + reduce18_cases() + reduce_sum13_cases() + split18_cases() +
            shape_family_cases() + pad_cases() + unsupported_cases())


# ---- running ----------------------------------------------------------------------------------

def run_case(case, args):
    """Returns None when the case passed, else what went wrong."""
    case_dir = os.path.join(args.work, case.name)
    shutil.rmtree(case_dir, ignore_errors=True)
    os.makedirs(case_dir)
    model_path = os.path.join(case_dir, "model.onnx")
    onnx.save_model(case.model(), model_path)
    bundle = os.path.join(case_dir, "model.shard")
    res = e2e_util.run_tool([args.shardc, model_path, "--mode", "forward", "-o", bundle],
                            args.timeout)

    if case.unsupported is not None:
        return check_unsupported(case, res, model_path)
    if not res.ok:
        return res.describe()

    data_dir = os.path.join(case_dir, "data")
    out_dir = os.path.join(case_dir, "outputs")
    os.makedirs(data_dir)
    os.makedirs(out_dir)
    for name, value in case.inputs:
        np.save(os.path.join(data_dir, npy_name(name) + ".npy"), value)
    res = e2e_util.run_tool([args.shardrun, bundle, "--data", data_dir, "--outputs", out_dir],
                            args.timeout)
    if not res.ok:
        return res.describe()

    errors = e2e_util.compare_outputs(out_dir, case.outputs, RTOL, ATOL)
    return "; ".join(errors) or None


def check_unsupported(case, res, model_path):
    """shardc must refuse the model: exit 1, one `shardc: error:` line listing every
    unsupported op type (and no supported one) and naming a node of each."""
    if res.timed_out or res.returncode is None or res.returncode < 0:
        return res.describe()
    problems = []
    if res.returncode != 1:
        problems.append(f"exit status {res.returncode}, expected 1")
    message = res.stderr.rstrip("\n")
    if "\n" in message:
        problems.append(f"{len(message.splitlines())} lines on stderr, expected one")
    if not message.startswith("shardc: error: "):
        problems.append("message does not start with 'shardc: error: '")
    text = message.replace(model_path, "")  # the path holds the case name
    if "unsupported ops" not in text:
        problems.append("message does not say 'unsupported ops'")
    for op in case.unsupported:
        if not re.search(rf"\b{re.escape(op)}\b", text):
            problems.append(f"message does not name {op}")
        names = [n.name for n in case.nodes if n.op_type == op]
        if not any(f"'{name}'" in text for name in names):
            problems.append(f"message names no {op} node ({', '.join(names)})")
    for n in case.nodes:
        if n.op_type not in case.unsupported and re.search(rf"\b{n.op_type}\b", text):
            problems.append(f"message lists the supported op {n.op_type}")
    if problems:
        return "; ".join(problems) + f"; stderr: {res.stderr.strip()!r}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shardc", required=True, help="path of the shardc binary")
    parser.add_argument("--shardrun", required=True, help="path of the shardrun binary")
    parser.add_argument("--work", required=True, help="scratch directory")
    parser.add_argument("--filter", help="only cases whose name matches this regex (re.search)")
    parser.add_argument("--timeout", type=int, default=TOOL_TIMEOUT_S,
                        help="seconds allowed per shardc/shardrun call (default %(default)s)")
    args = parser.parse_args()
    args.work = os.path.abspath(args.work)
    os.makedirs(args.work, exist_ok=True)

    cases = all_cases()
    names = [c.name for c in cases]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        print(f"error: duplicate case names: {', '.join(duplicates)}", file=sys.stderr)
        return 1
    if args.filter:
        cases = [c for c in cases if re.search(args.filter, c.name)]
    if not cases:
        print("error: no case selected", file=sys.stderr)
        return 1

    passed = failed = 0
    for case in cases:
        try:
            problem = run_case(case, args)
        except Exception:  # a harness bug must show up as a failure, not stop the run
            problem = "harness error: " + traceback.format_exc().strip().replace("\n", " | ")
        if problem:
            failed += 1
            print(f"FAIL {case.name}: {problem}", flush=True)
        else:
            passed += 1
            print(f"PASS {case.name}", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
