"""Builds the small ONNX models of the importer lit tests.

    python3 make_model.py NAME OUT.onnx

NAME selects one builder below (see MODELS). Models at opset <= 17 are run through onnx's
checker first (full check, with shape inference), so that shardc is fed models that onnx
accepts; only the models with an out-of-range opset skip it. onnx 1.12's checker does not know
opsets 18-20, so those models are not checked.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT
I64 = TensorProto.INT64
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def model(nodes, inputs, outputs, initializers=(), opset=17, check=True):
    graph = helper.make_graph(nodes, "test", inputs, outputs, list(initializers))
    # IR 8 is the newest onnx 1.12 writes; it accepts every opset up to 17.
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    if check and opset <= 17:
        onnx.checker.check_model(m, full_check=True)
    return m


# ---- arguments: graph inputs, float initializers, int initializers --------------------------

def params_and_constants():
    """Graph inputs x (f32) and ids (i64); float initializers w and b (parameters, in
    initializer order); int64 initializer `cols` used as Gather indices (a graph.constant);
    int64 initializer `k` that is also listed as a graph input (a parameter); float
    initializers r0/r1/rd read as Range's compile-time inputs (constants, folded)."""
    w = const("w", np.linspace(-1, 1, 12).reshape(3, 4), np.float32)
    b = const("b", np.ones(4), np.float32)
    cols = const("cols", [3, 0])
    k = const("k", [1, 2, 3, 4, 5])
    ranges = [const("r0", 0.0, np.float32), const("r1", 1.5, np.float32),
              const("rd", 0.5, np.float32)]
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["xw"], name="matmul"),
        helper.make_node("Add", ["xw", "b"], ["y"], name="bias"),
        helper.make_node("Gather", ["y", "cols"], ["picked"], name="pick", axis=1),
        helper.make_node("Add", ["ids", "k"], ["ids_k"], name="add_k"),
        helper.make_node("Range", ["r0", "r1", "rd"], ["steps"], name="range"),
    ]
    return model(nodes, [vi("x", F32, [2, 3]), vi("k", I64, [5]), vi("ids", I64, [5])],
                 [vi("picked", F32, [2, 2]), vi("ids_k", I64, [5]), vi("steps", F32, [3])],
                 [w, b, cols, k] + ranges)


# ---- torch's shape subgraph -------------------------------------------------------------------

def shape_chain():
    """x.view(B, T, 4, 4) as torch exports it: Shape -> Gather -> Unsqueeze -> Concat ->
    Reshape."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "i0"], ["b"], name="gather_b", axis=0),
        helper.make_node("Gather", ["s", "i1"], ["t"], name="gather_t", axis=0),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["bu"], name="unsq_b"),
        helper.make_node("Unsqueeze", ["t", "ax0"], ["tu"], name="unsq_t"),
        helper.make_node("Concat", ["bu", "tu", "heads"], ["shape4"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "shape4"], ["y"], name="view"),
    ]
    inits = [const("i0", 0), const("i1", 1), const("ax0", [0]), const("heads", [4, 4])]
    return model(nodes, [vi("x", F32, [2, 8, 16])], [vi("y", F32, [2, 8, 4, 4])], inits)


# ---- negative axes ----------------------------------------------------------------------------

def negative_axes():
    nodes = [
        helper.make_node("Softmax", ["x"], ["sm"], name="softmax", axis=-1),
        helper.make_node("Concat", ["x", "x"], ["cat"], name="concat", axis=-1),
        helper.make_node("Gather", ["x", "idx"], ["g"], name="gather", axis=-1),
        helper.make_node("Transpose", ["x"], ["t"], name="transpose"),
    ]
    return model(nodes, [vi("x", F32, [2, 3, 4])],
                 [vi("sm", F32, [2, 3, 4]), vi("cat", F32, [2, 3, 8]), vi("g", F32, [2, 3, 2]),
                  vi("t", F32, [4, 3, 2])], [const("idx", [-1, 1])])


# ---- Slice ------------------------------------------------------------------------------------

def slice_forms():
    """x: [4, 6, 5].
    s1: axes [-1, 0], starts [-1, 1], ends [INT64_MIN, INT64_MAX], steps [-2, 1]
        -> dim 2 reversed every 2nd from 4 (4, 2, 0), dim 0 from 1 to the end.
    s2: only starts/ends (axes default 0.., steps 1), ends beyond the dim and negative.
    s3: whole-dim reversal, step -1 from INT64_MAX to INT64_MIN on axis 1."""
    nodes = [
        helper.make_node("Slice", ["x", "st1", "en1", "ax1", "sp1"], ["s1"], name="slice1"),
        helper.make_node("Slice", ["x", "st2", "en2"], ["s2"], name="slice2"),
        helper.make_node("Slice", ["x", "st3", "en3", "ax3", "sp3"], ["s3"], name="slice3"),
    ]
    inits = [
        const("st1", [-1, 1]), const("en1", [INT64_MIN, INT64_MAX]), const("ax1", [-1, 0]),
        const("sp1", [-2, 1]),
        const("st2", [1, -4]), const("en2", [100, -1]),
        const("st3", [INT64_MAX]), const("en3", [INT64_MIN]), const("ax3", [1]),
        const("sp3", [-1]),
    ]
    return model(nodes, [vi("x", F32, [4, 6, 5])],
                 [vi("s1", F32, [3, 6, 3]), vi("s2", F32, [3, 3, 5]), vi("s3", F32, [4, 6, 5])],
                 inits)


# ---- Reduce -----------------------------------------------------------------------------------

def reduce_opset13():
    """Opset 13: ReduceMean/ReduceMax take axes as an attribute, ReduceSum as an input."""
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["mean"], name="mean", axes=[-1, 0], keepdims=1),
        helper.make_node("ReduceMax", ["x"], ["max"], name="max", axes=[1], keepdims=0),
        helper.make_node("ReduceSum", ["x", "sum_axes"], ["sum"], name="sum", keepdims=0),
        helper.make_node("ReduceMean", ["x"], ["mean_all"], name="mean_all"),
        helper.make_node("ReduceSum", ["x"], ["sum_noop"], name="sum_noop",
                         noop_with_empty_axes=1),
        helper.make_node("ReduceSum", ["x", "no_axes"], ["sum_empty"], name="sum_empty",
                         keepdims=0),
    ]
    inits = [const("sum_axes", [2, -3]), const("no_axes", np.zeros(0, np.int64))]
    return model(nodes, [vi("x", F32, [2, 3, 4])],
                 [vi("mean", F32, [1, 3, 1]), vi("max", F32, [2, 4]), vi("sum", F32, [3]),
                  vi("mean_all", F32, [1, 1, 1]), vi("sum_noop", F32, [2, 3, 4]),
                  vi("sum_empty", F32, [])], inits, opset=13)


def reduce_opset18():
    """Opset 18: ReduceMean/ReduceMax take axes as a (constant) input."""
    nodes = [
        helper.make_node("ReduceMean", ["x", "axes"], ["mean"], name="mean", keepdims=0),
        helper.make_node("ReduceMax", ["x", "axes"], ["max"], name="max"),
        helper.make_node("ReduceMax", ["x", "no_axes"], ["max_noop"], name="max_noop",
                         noop_with_empty_axes=1),
    ]
    inits = [const("axes", [-1, 1]), const("no_axes", np.zeros(0, np.int64))]
    return model(nodes, [vi("x", F32, [2, 3, 4])],
                 [vi("mean", F32, [2]), vi("max", F32, [2, 1, 1]),
                  vi("max_noop", F32, [2, 3, 4])], inits, opset=18)


def reduce_composed():
    """Opset 18 reductions composed of others: ReduceL2, ReduceLogSumExp (keepdims 0), ReduceMin
    and ReduceL1 over axis 1 of x: [2, 3]."""
    nodes = [
        helper.make_node("ReduceL2", ["x", "axes"], ["l2"], name="l2"),
        helper.make_node("ReduceLogSumExp", ["x", "axes"], ["lse"], name="lse", keepdims=0),
        helper.make_node("ReduceMin", ["x", "axes"], ["min"], name="min"),
        helper.make_node("ReduceL1", ["x", "axes"], ["l1"], name="l1"),
    ]
    return model(nodes, [vi("x", F32, [2, 3])],
                 [vi("l2", F32, [2, 1]), vi("lse", F32, [2]), vi("min", F32, [2, 1]),
                  vi("l1", F32, [2, 1])], [const("axes", [1])], opset=18)


def reduce_attr_at_18():
    """An opset-13 style axes attribute in an opset-18 model: must be refused."""
    nodes = [helper.make_node("ReduceMean", ["x"], ["y"], name="old_mean", axes=[1])]
    return model(nodes, [vi("x", F32, [2, 3])], [vi("y", F32, [2, 1])], opset=18)


# ---- Clip, Gemm, Max, Dropout -----------------------------------------------------------------

def clip_bounds():
    """Clip with only max (min input empty), and with only min; f32 and i64."""
    nodes = [
        helper.make_node("Clip", ["x", "", "hi"], ["y"], name="clip_max"),
        helper.make_node("Clip", ["n", "lo"], ["m"], name="clip_min"),
    ]
    inits = [const("hi", 6.0, np.float32), const("lo", 0)]
    return model(nodes, [vi("x", F32, [2, 3]), vi("n", I64, [4])],
                 [vi("y", F32, [2, 3]), vi("m", I64, [4])], inits)


def gemm_forms():
    """Gemm with transB, alpha, beta and C; and without C."""
    nodes = [
        helper.make_node("Gemm", ["a", "wt", "c"], ["y"], name="gemm_c", transB=1, alpha=0.5,
                         beta=2.0),
        helper.make_node("Gemm", ["at", "w"], ["z"], name="gemm_no_c", transA=1),
    ]
    inits = [const("wt", np.ones((5, 4)), np.float32), const("c", np.ones(5), np.float32),
             const("w", np.ones((4, 5)), np.float32)]
    return model(nodes, [vi("a", F32, [3, 4]), vi("at", F32, [4, 3])],
                 [vi("y", F32, [3, 5]), vi("z", F32, [3, 5])], inits)


def max3():
    nodes = [helper.make_node("Max", ["a", "b", "c"], ["y"], name="max3")]
    return model(nodes, [vi("a", F32, [2, 3]), vi("b", F32, [3]), vi("c", F32, [1, 1])],
                 [vi("y", F32, [2, 3])])


def dropout():
    """Dropout with ratio and both outputs, feeding an Exp."""
    nodes = [
        helper.make_node("Dropout", ["x", "ratio"], ["d", "mask"], name="dropout"),
        helper.make_node("Exp", ["d"], ["y"], name="exp"),
    ]
    return model(nodes, [vi("x", F32, [4])], [vi("y", F32, [4]), vi("mask", TensorProto.BOOL, [4])],
                 [const("ratio", 0.25, np.float32)])


def dropout_training():
    """Two training-mode Dropouts (ratio 0.1, training_mode true) and one in inference mode,
    feeding a sum: the loss of a training step."""
    nodes = [
        helper.make_node("Dropout", ["x", "ratio", "on"], ["d0"], name="drop0"),
        helper.make_node("Dropout", ["d0", "ratio", "off"], ["d1"], name="drop1"),
        helper.make_node("Dropout", ["d1", "ratio", "on"], ["d2", "mask"], name="drop2"),
        helper.make_node("Mul", ["d2", "w"], ["h"], name="mul"),
        helper.make_node("ReduceSum", ["h"], ["loss"], name="sum", keepdims=0),
    ]
    inits = [const("ratio", 0.1, np.float32), const("on", True, np.bool_),
             const("off", False, np.bool_), const("w", np.ones(4), np.float32)]
    return model(nodes, [vi("x", F32, [4])], [vi("loss", F32, []),
                 vi("mask", TensorProto.BOOL, [4])], inits)


def dropout_bad_ratio():
    """A training-mode Dropout with ratio 1 (ONNX allows [0, 1) only)."""
    nodes = [helper.make_node("Dropout", ["x", "ratio", "on"], ["y"], name="drop_all")]
    inits = [const("ratio", 1.0, np.float32), const("on", True, np.bool_)]
    return model(nodes, [vi("x", F32, [4])], [vi("y", F32, [4])], inits)


def split_forms():
    """Opset 18 Split on x: [7, 4]: num_outputs=3 (chunks of 3, last one smaller), sizes from
    the `split` input, and no split information (equal parts, one per output) on axis -1."""
    nodes = [
        helper.make_node("Split", ["x"], ["a0", "a1", "a2"], name="split_num", num_outputs=3),
        helper.make_node("Split", ["x", "sizes"], ["b0", "b1"], name="split_sizes", axis=0),
        helper.make_node("Split", ["x"], ["c0", "c1"], name="split_equal", axis=-1),
    ]
    outs = [vi("a0", F32, [3, 4]), vi("a1", F32, [3, 4]), vi("a2", F32, [1, 4]),
            vi("b0", F32, [2, 4]), vi("b1", F32, [5, 4]),
            vi("c0", F32, [7, 2]), vi("c1", F32, [7, 2])]
    return model(nodes, [vi("x", F32, [7, 4])], outs, [const("sizes", [2, 5])], opset=18)


def gelu_forms():
    """Opset 20 Gelu with the default approximate and with "tanh"."""
    nodes = [
        helper.make_node("Gelu", ["x"], ["exact"], name="gelu_default"),
        helper.make_node("Gelu", ["x"], ["approx"], name="gelu_tanh", approximate="tanh"),
    ]
    return model(nodes, [vi("x", F32, [2, 3])], [vi("exact", F32, [2, 3]),
                                                 vi("approx", F32, [2, 3])], opset=20)


# ---- symbolic dimensions ----------------------------------------------------------------------

def symbolic_dim():
    """x: [batch, 3] with `batch` symbolic."""
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", F32, ["batch", 3])], [vi("y", F32, ["batch", 3])])


# ---- error cases ------------------------------------------------------------------------------

def unsupported_ops():
    """Two LpPool nodes and a Hardmax (none supported) around a supported Relu."""
    nodes = [
        helper.make_node("LpPool", ["x"], ["c1"], name="lp_pool_a", kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c1"], ["r"], name="relu"),
        helper.make_node("LpPool", ["r"], ["c2"], name="lp_pool_b", kernel_shape=[1, 1]),
        helper.make_node("Hardmax", ["c2"], ["y"], name="the_hardmax"),
    ]
    return model(nodes, [vi("x", F32, [1, 1, 3, 3])], [vi("y", F32, [1, 1, 3, 3])])


def refused_vision(kind):
    """Conv-family nodes shardc refuses: training-mode BatchNormalization over one value per
    channel (PyTorch refuses it too), MaxPool with its Indices output, a dilated AveragePool."""
    def build():
        x = vi("x", F32, [1, 2, 1, 1] if kind == "bn_one_value" else [1, 2, 4, 4])
        inits = []
        if kind == "bn_one_value":
            nodes = [helper.make_node("BatchNormalization", ["x", "g", "b", "m", "v"],
                                      ["y", "nm", "nv"], name="bn", training_mode=1)]
            inits = [const(n, np.ones(2) if n in ("g", "v") else np.zeros(2), np.float32)
                     for n in ("g", "b", "m", "v")]
            out = vi("y", F32, [1, 2, 1, 1])
        elif kind == "maxpool_indices":
            nodes = [helper.make_node("MaxPool", ["x"], ["y", "i"], name="pool",
                                      kernel_shape=[2, 2])]
            out = vi("y", F32, [1, 2, 3, 3])
        else:
            nodes = [helper.make_node("AveragePool", ["x"], ["y"], name="pool",
                                      kernel_shape=[2, 2], dilations=[2, 2])]
            out = vi("y", F32, [1, 2, 2, 2])
        return model(nodes, [x], [out], inits, opset=19 if kind == "avgpool_dilated" else 17,
                     check=False)
    return build


def relu_at(opset):
    def build():
        nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
        return model(nodes, [vi("x", F32, [2])], [vi("y", F32, [2])], opset=opset,
                     check=False)
    return build


def dynamic_reshape():
    """Reshape whose shape is a graph input: not a compile-time constant."""
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="dyn_reshape")]
    return model(nodes, [vi("x", F32, [2, 6]), vi("shape", I64, [2])], [vi("y", F32, [3, 4])])


def double_constants(refused):
    """y = x * float(c) with c a float64 Constant feeding only a Cast to float32, as torch
    exports a Python float scalar (0.1 is not a float32 value: the Cast rounds it). With
    `refused`, c also feeds a Cast to int64: it stays float64, which shardc does not support."""
    c = numpy_helper.from_array(np.array(0.1, dtype=np.float64), "c")
    nodes = [helper.make_node("Constant", [], ["c"], value=c, name="scale64"),
             helper.make_node("Cast", ["c"], ["c32"], to=TensorProto.FLOAT, name="to_f32"),
             helper.make_node("Mul", ["x", "c32"], ["y"], name="scale")]
    outputs = [vi("y", F32, [2, 3])]
    if refused:
        nodes.append(helper.make_node("Cast", ["c"], ["n"], to=TensorProto.INT64, name="to_i64"))
        outputs.append(vi("n", I64, []))
    return model(nodes, [vi("x", F32, [2, 3])], outputs)


def double_where():
    """y = where(x > 0, x, min) with min a float64 Constant (finfo(float32).min, as Gemma2's
    exporter writes torch.where(mask, python_float, tensor)): PyTorch computes it in float32."""
    c = numpy_helper.from_array(np.array(-3.4028234663852886e38, dtype=np.float64), "m")
    zero = numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero")
    nodes = [helper.make_node("Constant", [], ["m"], value=c, name="min64"),
             helper.make_node("Constant", [], ["zero"], value=zero, name="zero"),
             helper.make_node("Greater", ["x", "zero"], ["keep"], name="positive"),
             helper.make_node("Where", ["keep", "x", "m"], ["y"], name="fill")]
    # The branches' types differ, as in the exporter's output: onnx's checker would refuse it.
    return model(nodes, [vi("x", F32, [2, 3])], [vi("y", F32, [2, 3])], check=False)


def double_region(escapes):
    """y = float(softmax(double(x) + m)) with m a float64 [2, 3] Constant: a float64 region
    between a Cast to float64 and one back (Gemma2's attention scores). With `escapes`, the
    region's sum also leaves the graph as float64: it cannot be narrowed."""
    m = numpy_helper.from_array(np.array([[0.0, -1.0, 0.5], [2.0, 0.0, -3.0]]), "m")
    nodes = [helper.make_node("Constant", [], ["m"], value=m, name="mask64"),
             helper.make_node("Cast", ["x"], ["x64"], to=TensorProto.DOUBLE, name="widen"),
             helper.make_node("Add", ["x64", "m"], ["s"], name="scores"),
             helper.make_node("Softmax", ["s"], ["p"], axis=1, name="softmax"),
             helper.make_node("Cast", ["p"], ["y"], to=TensorProto.FLOAT, name="narrow")]
    outputs = [vi("y", F32, [2, 3])]
    if escapes:
        outputs.append(helper.make_tensor_value_info("s", TensorProto.DOUBLE, [2, 3]))
    return model(nodes, [vi("x", F32, [2, 3])], outputs)


def scatter_elements():
    """y = ScatterElements(x [2, 3], indices [[1, 0], [2, 1]], u [2, 2], axis 1, reduction add)."""
    idx = numpy_helper.from_array(np.array([[1, 0], [2, 1]], dtype=np.int64), "idx")
    nodes = [helper.make_node("ScatterElements", ["x", "idx", "u"], ["y"], axis=1,
                              reduction="add", name="scatter")]
    return model(nodes, [vi("x", F32, [2, 3]), vi("u", F32, [2, 2])], [vi("y", F32, [2, 3])],
                 initializers=[idx])


def instance_norm():
    """InstanceNormalization of x [2, 3, 4] (epsilon 1e-3) with per-channel scale and bias."""
    scale = numpy_helper.from_array(np.array([1.0, 2.0, 0.5], dtype=np.float32), "scale")
    bias = numpy_helper.from_array(np.array([0.0, 0.1, -0.2], dtype=np.float32), "bias")
    nodes = [helper.make_node("InstanceNormalization", ["x", "scale", "bias"], ["y"],
                              epsilon=1e-3, name="inorm")]
    return model(nodes, [vi("x", F32, [2, 3, 4])], [vi("y", F32, [2, 3, 4])],
                 initializers=[scale, bias])


def buffer_like_initializers():
    """loss = sum((emb[ids] + pos[0..3]) @ w + zero_bias): `pos` a sinusoidal position table and
    `zero_bias` a [1, 5] matrix of zeros (buffers PyTorch keeps fixed, whose values say so),
    `emb` and `w` random (trained)."""
    rng = np.random.default_rng(0)
    p = np.arange(8)[:, None]
    freq = 1.0 / (100.0 ** (np.arange(2)[None, :] / 2))
    pos = np.concatenate([np.sin(p * freq), np.cos(p * freq)], axis=1).astype(np.float32)
    inits = [numpy_helper.from_array(pos, "pos"),
             numpy_helper.from_array(rng.normal(0, 0.02, (10, 4)).astype(np.float32), "emb"),
             numpy_helper.from_array(rng.normal(0, 0.02, (4, 5)).astype(np.float32), "w"),
             numpy_helper.from_array(np.zeros((1, 5), np.float32), "zero_bias"),
             numpy_helper.from_array(np.arange(4, dtype=np.int64), "positions")]
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["e"], name="embed"),
             helper.make_node("Gather", ["pos", "positions"], ["pe"], name="position"),
             helper.make_node("Add", ["e", "pe"], ["h"], name="add_position"),
             helper.make_node("MatMul", ["h", "w"], ["z"], name="project"),
             helper.make_node("Add", ["z", "zero_bias"], ["logits"], name="bias"),
             helper.make_node("ReduceSum", ["logits"], ["loss"], keepdims=0, name="loss")]
    return model(nodes, [vi("ids", I64, [2, 4])], [vi("loss", F32, [])], initializers=inits)


def tile_forms():
    """Tile of x: [2, 3] by repeats [2, 1] (whole copies along dim 0), [1, 1] (a copy) and
    [3, 2]."""
    nodes = [
        helper.make_node("Constant", [], ["r0"], value=const("r0", [2, 1]), name="r0"),
        helper.make_node("Constant", [], ["r1"], value=const("r1", [1, 1]), name="r1"),
        helper.make_node("Constant", [], ["r2"], value=const("r2", [3, 2]), name="r2"),
        helper.make_node("Tile", ["x", "r0"], ["y0"], name="tile_rows"),
        helper.make_node("Tile", ["x", "r1"], ["y1"], name="tile_none"),
        helper.make_node("Tile", ["x", "r2"], ["y2"], name="tile_both"),
    ]
    return model(nodes, [vi("x", F32, [2, 3])],
                 [vi("y0", F32, [4, 3]), vi("y1", F32, [2, 3]), vi("y2", F32, [6, 6])])



def gather_elements_forms():
    """GatherElements of x: [3, 4] with indices i0: [2, 4] along axis 0 and i1: [3, 2] along
    axis -1."""
    nodes = [
        helper.make_node("GatherElements", ["x", "i0"], ["y0"], name="rows", axis=0),
        helper.make_node("GatherElements", ["x", "i1"], ["y1"], name="cols", axis=-1),
    ]
    return model(nodes, [vi("x", F32, [3, 4]), vi("i0", I64, [2, 4]), vi("i1", I64, [3, 2])],
                 [vi("y0", F32, [2, 4]), vi("y1", F32, [3, 2])])

def linear_classifier():
    """loss = cross_entropy(x @ w + b, y): x f32[4, 3], y i64[4], w f32[3, 5], b f32[5]; the
    training step whose memory plan tests/lit/passes/lowering/shardc-plan-memory-report.test
    checks."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["xw"], name="matmul"),
        helper.make_node("Add", ["xw", "b"], ["logits"], name="bias"),
        helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "y"], ["loss"], name="xent",
                         reduction="mean"),
    ]
    inits = [const("w", np.linspace(-1, 1, 15).reshape(3, 5), np.float32),
             const("b", np.zeros(5), np.float32)]
    return model(nodes, [vi("x", F32, [4, 3]), vi("y", I64, [4])], [vi("loss", F32, [])], inits)


def tp_mlp_head(head):
    """loss = mean(relu(x @ w1) @ w2 [@ w3]): x f32[4, 6], w1 [6, 8], w2 [8, 6] (a column then a
    row-parallel product under tp=2), and with `head` w3 [6, 5], whose 5 columns tp=2 does not
    divide and whose rows are the replicated stream: 30 of the 126 trained elements whole."""
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="up"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["o"], name="down"),
    ]
    inits = [const("w1", np.linspace(-1, 1, 48).reshape(6, 8), np.float32),
             const("w2", np.linspace(-1, 1, 48).reshape(8, 6), np.float32)]
    last = "o"
    if head:
        nodes.append(helper.make_node("MatMul", ["o", "w3"], ["z"], name="head"))
        inits.append(const("w3", np.linspace(-1, 1, 30).reshape(6, 5), np.float32))
        last = "z"
    nodes.append(helper.make_node("ReduceMean", [last], ["loss"], name="mean", keepdims=0))
    return model(nodes, [vi("x", F32, [4, 6])], [vi("loss", F32, [])], inits)


def masked_scores():
    """loss = mean(softmax(x @ w + mask)): the float mask initializer holds -inf above the
    diagonal (PyTorch's generate_square_subsequent_mask, registered as a buffer)."""
    mask = np.triu(np.full((3, 3), -np.inf), 1)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["s"], name="scores"),
        helper.make_node("Add", ["s", "mask"], ["m"], name="masked"),
        helper.make_node("Softmax", ["m"], ["p"], name="softmax", axis=-1),
        helper.make_node("ReduceMean", ["p"], ["loss"], name="mean", keepdims=0),
    ]
    inits = [const("w", np.linspace(-1, 1, 9).reshape(3, 3), np.float32),
             const("mask", mask, np.float32)]
    return model(nodes, [vi("x", F32, [3, 3])], [vi("loss", F32, [])], inits)


def conv_pool_bn():
    """x [2,3,7,7] -> Conv (bias, stride 2, SAME_UPPER) -> BatchNormalization (training mode,
    running statistics as initializers) -> MaxPool (ceil mode) -> AveragePool (pads, counting
    them) -> GlobalAveragePool -> loss = mean. producer_name "pytorch": the running variance is
    updated with the unbiased batch variance, as PyTorch does."""
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", strides=[2, 2],
                         auto_pad="SAME_UPPER"),
        helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"],
                         ["n", "new_mean", "new_var"], name="bn", training_mode=1,
                         momentum=0.9),
        helper.make_node("MaxPool", ["n"], ["p"], name="max_pool", kernel_shape=[2, 2],
                         strides=[2, 2], ceil_mode=1),
        helper.make_node("AveragePool", ["p"], ["a"], name="avg_pool", kernel_shape=[2, 2],
                         pads=[1, 1, 0, 0], count_include_pad=1),
        helper.make_node("GlobalAveragePool", ["a"], ["g"], name="gap"),
        helper.make_node("ReduceMean", ["g"], ["loss"], name="mean_loss", keepdims=0),
    ]
    inits = [const("w", np.linspace(-1, 1, 4 * 3 * 3 * 3).reshape(4, 3, 3, 3), np.float32),
             const("b", np.zeros(4), np.float32), const("gamma", np.ones(4), np.float32),
             const("beta", np.zeros(4), np.float32), const("mean", np.zeros(4), np.float32),
             const("var", np.ones(4), np.float32)]
    m = model(nodes, [vi("x", F32, [2, 3, 7, 7])], [vi("loss", F32, [])], inits)
    m.producer_name = "pytorch"
    return m


def if_squeeze(data_dependent=False):
    """The exporter's guarded squeeze: If(Equal(Shape(x)[1], 1)) then Squeeze(x, 1) else x,
    then a Relu after it. With x [2, 1, 3] the condition is a compile-time constant. The
    data-dependent variant tests x's first element instead."""
    def build():
        then_graph = helper.make_graph(
            [helper.make_node("Squeeze", ["x", "one_axis"], ["squeezed"], name="squeeze")],
            "then", [], [vi("squeezed", F32, [2, 3])])
        else_graph = helper.make_graph(
            [helper.make_node("Reshape", ["x", "flat_shape"], ["kept"], name="keep")],
            "else", [], [vi("kept", F32, [2, 3])])
        if data_dependent:
            cond_nodes = [
                helper.make_node("ReduceMax", ["x"], ["m"], name="max", keepdims=0),
                helper.make_node("Constant", [], ["zero"], name="zero",
                                 value=helper.make_tensor("zero", F32, [], [0.0])),
                helper.make_node("Greater", ["m", "zero"], ["cond"], name="positive")]
        else:
            cond_nodes = [
                helper.make_node("Shape", ["x"], ["shape"], name="shape"),
                helper.make_node("Gather", ["shape", "index1"], ["dim1"], name="dim1", axis=0),
                helper.make_node("Equal", ["dim1", "one"], ["cond"], name="is_one")]
        nodes = cond_nodes + [
            helper.make_node("If", ["cond"], ["y0"], name="guard", then_branch=then_graph,
                             else_branch=else_graph),
            helper.make_node("Relu", ["y0"], ["y"], name="relu")]
        inits = [const("one_axis", np.array([1]), np.int64),
                 const("flat_shape", np.array([2, 3]), np.int64),
                 const("index1", np.array(1), np.int64), const("one", np.array(1), np.int64)]
        return model(nodes, [vi("x", F32, [2, 1, 3])], [vi("y", F32, [2, 3])], inits)
    return build


def recorded_trainable():
    """masked_scores plus a float initializer `scale` the loss depends on, with the record of
    the trained parameters (shardc.trainable metadata) naming only w."""
    m = masked_scores()
    m.graph.node[-1].output[0] = "mean_p"
    m.graph.node.append(helper.make_node("Mul", ["mean_p", "scale"], ["loss"], name="scaled"))
    m.graph.initializer.append(const("scale", np.array(2.0), np.float32))
    entry = m.metadata_props.add()
    entry.key, entry.value = "shardc.trainable", '["w"]'
    return m


def padding_row(record):
    """loss = sum(emb[ids] * w): an embedding whose row 0 is its padding row. With `record`
    ("good", "bad", "outside" or "none"), the shardc.padding_idx metadata names it, holds a
    negative row, a row outside the table, or is absent."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(0, 1, (5, 3)).astype(np.float32), "emb"),
             numpy_helper.from_array(rng.normal(0, 1, (3,)).astype(np.float32), "w")]
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["e"], name="lookup"),
             helper.make_node("Mul", ["e", "w"], ["p"], name="weigh"),
             helper.make_node("ReduceSum", ["p"], ["loss"], keepdims=0, name="loss")]
    m = model(nodes, [vi("ids", I64, [2, 4])], [vi("loss", F32, [])], initializers=inits)
    if record == "none":
        return m
    value = {"good": '{"emb": 0}', "bad": '{"emb": -1}', "outside": '{"emb": 5}'}[record]
    entry = m.metadata_props.add()
    entry.key, entry.value = "shardc.padding_idx", value
    return m


def loop_sequences(form="ok"):
    """torch.repeat_interleave(x, 2, dim=1) as the exporter writes it with a dynamic length:
    x [2, 3] split into a sequence of columns, a Loop over Shape(x)[1] whose body reads column i
    (SequenceAt), appends it twice side by side (SequenceInsert), adds it to a carried sum and
    emits it as a scan output; then ConcatFromSequence and SequenceLength. `form` "data" takes
    the trip count from x's values, "huge" gives 10^6 iterations, "tensor_op" feeds the sequence
    to a Relu."""
    def build():
        body = helper.make_graph(
            [helper.make_node("SequenceAt", ["columns", "i"], ["col"], name="pick"),
             helper.make_node("Concat", ["col", "col"], ["twice"], name="twice", axis=1),
             helper.make_node("SequenceInsert", ["acc_in", "twice"], ["acc_out"], name="append"),
             helper.make_node("Add", ["sum_in", "col"], ["sum_out"], name="accumulate"),
             helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
             helper.make_node("Identity", ["col"], ["col_out"], name="emit")],
            "body",
            [vi("i", I64, []), vi("cond_in", TensorProto.BOOL, []),
             helper.make_tensor_sequence_value_info("acc_in", F32, None),
             vi("sum_in", F32, [2, 1])],
            [vi("cond_out", TensorProto.BOOL, []),
             helper.make_tensor_sequence_value_info("acc_out", F32, None),
             vi("sum_out", F32, [2, 1]), vi("col_out", F32, [2, 1])])
        if form == "data":
            trip = [helper.make_node("ReduceMax", ["x"], ["m"], name="max", keepdims=0),
                    helper.make_node("Cast", ["m"], ["trips"], name="count", to=I64)]
        elif form == "huge":
            trip = [helper.make_node("Constant", [], ["trips"], name="count",
                                     value=helper.make_tensor("c", I64, [], [1000000]))]
        else:
            trip = [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
                    helper.make_node("Gather", ["shape", "one"], ["trips"], name="count",
                                     axis=0)]
        nodes = trip + [
            helper.make_node("SplitToSequence", ["x"], ["columns"], name="split", axis=1),
            helper.make_node("SequenceEmpty", [], ["empty"], name="empty", dtype=F32),
            helper.make_node("Constant", [], ["go"], name="go",
                             value=helper.make_tensor("t", TensorProto.BOOL, [], [True])),
            helper.make_node("Loop", ["trips", "go", "empty", "zeros"],
                             ["repeated", "sum", "cols"], name="loop", body=body),
            helper.make_node("ConcatFromSequence", ["repeated"], ["y"], name="join", axis=1),
            helper.make_node("SequenceLength", ["repeated"], ["n"], name="length")]
        outputs = [vi("y", F32, [2, 6]), vi("sum", F32, [2, 1]), vi("cols", F32, [3, 2, 1]),
                   vi("n", I64, [])]
        if form == "tensor_op":
            nodes.append(helper.make_node("Relu", ["columns"], ["r"], name="relu"))
        inits = [const("one", np.array(1), np.int64),
                 const("zeros", np.zeros((2, 1)), np.float32)]
        return model(nodes, [vi("x", F32, [2, 3])], outputs, inits, check=form != "tensor_op")
    return build


def sequence_forms():
    """The other sequence forms on x [2, 3]: x's rows without their axis (keepdims 0), a
    constant row inserted at the front, the last element erased, the rest stacked along a new
    axis 1 (torch.stack of x.unbind()); x cut into pieces of 2 columns (the last one smaller)
    and joined again along axis -1."""
    nodes = [
        helper.make_node("SplitToSequence", ["x"], ["rows"], name="unbind", axis=0, keepdims=0),
        helper.make_node("SequenceInsert", ["rows", "c", "front"], ["with_c"], name="insert"),
        helper.make_node("SequenceErase", ["with_c"], ["kept"], name="erase"),
        helper.make_node("ConcatFromSequence", ["kept"], ["stacked"], name="stack", axis=1,
                         new_axis=1),
        helper.make_node("SplitToSequence", ["x", "two"], ["pieces"], name="chunks", axis=1),
        helper.make_node("ConcatFromSequence", ["pieces"], ["joined"], name="join", axis=-1),
    ]
    inits = [const("c", np.array([7, 8, 9]), np.float32), const("front", np.array(0), np.int64),
             const("two", np.array(2), np.int64)]
    return model(nodes, [vi("x", F32, [2, 3])],
                 [vi("stacked", F32, [3, 2]), vi("joined", F32, [2, 3])], inits)


def sequence_output():
    """A graph output that is a sequence (x's rows)."""
    nodes = [helper.make_node("SplitToSequence", ["x"], ["rows"], name="unbind", axis=0)]
    return model(nodes, [vi("x", F32, [2, 3])],
                 [helper.make_tensor_sequence_value_info("rows", F32, None)])


MODELS = {
    "bn_one_value": refused_vision("bn_one_value"),
    "maxpool_indices": refused_vision("maxpool_indices"),
    "avgpool_dilated": refused_vision("avgpool_dilated"),
    "if_squeeze": if_squeeze(),
    "if_data_dependent": if_squeeze(data_dependent=True),
    "loop_sequences": loop_sequences(),
    "loop_data_trip_count": loop_sequences("data"),
    "loop_huge_trip_count": loop_sequences("huge"),
    "loop_sequence_to_tensor_op": loop_sequences("tensor_op"),
    "sequence_forms": sequence_forms,
    "sequence_output": sequence_output,
    "conv_pool_bn": conv_pool_bn,
    "recorded_trainable": recorded_trainable,
    "masked_scores": masked_scores,
    "tp_mlp": lambda: tp_mlp_head(False),
    "tp_mlp_head": lambda: tp_mlp_head(True),
    "params_and_constants": params_and_constants,
    "shape_chain": shape_chain,
    "negative_axes": negative_axes,
    "slice_forms": slice_forms,
    "reduce_opset13": reduce_opset13,
    "reduce_opset18": reduce_opset18,
    "reduce_composed": reduce_composed,
    "reduce_attr_at_18": reduce_attr_at_18,
    "clip_bounds": clip_bounds,
    "gemm_forms": gemm_forms,
    "max3": max3,
    "dropout": dropout,
    "dropout_training": dropout_training,
    "dropout_bad_ratio": dropout_bad_ratio,
    "split_forms": split_forms,
    "gelu_forms": gelu_forms,
    "symbolic_dim": symbolic_dim,
    "unsupported_ops": unsupported_ops,
    "opset12": relu_at(12),
    "opset21": relu_at(21),
    "dynamic_reshape": dynamic_reshape,
    "linear_classifier": linear_classifier,
    "tile_forms": tile_forms,
    "tile_zero": lambda: model(
        [helper.make_node("Constant", [], ["r"], value=const("r", [0, 1]), name="r"),
         helper.make_node("Tile", ["x", "r"], ["y"], name="tile_empty")],
        [vi("x", F32, [2, 3])], [vi("y", F32, [0, 3])]),
    "gather_elements_forms": gather_elements_forms,
    "gather_elements_rank": lambda: model(
        [helper.make_node("GatherElements", ["x", "i"], ["y"], name="gather_rank", axis=0)],
        [vi("x", F32, [3, 4]), vi("i", I64, [2])], [vi("y", F32, [2])]),
    "softplus_mod_argmax": lambda: model(
        [helper.make_node("Softplus", ["x"], ["sp"], name="softplus"),
         helper.make_node("Mod", ["x", "d"], ["fm"], name="fmod", fmod=1),
         helper.make_node("Mod", ["ids", "k"], ["pm"], name="python_mod"),
         helper.make_node("ArgMax", ["x"], ["am"], name="argmax", axis=-1, keepdims=0),
         helper.make_node("ArgMax", ["ids"], ["am_last"], name="argmax_last", axis=0,
                          select_last_index=1)],
        [vi("x", F32, [2, 3]), vi("d", F32, [3]), vi("ids", I64, [2, 3]), vi("k", I64, [])],
        [vi("sp", F32, [2, 3]), vi("fm", F32, [2, 3]), vi("pm", I64, [2, 3]),
         vi("am", I64, [2]), vi("am_last", I64, [1, 3])]),
    "mod_float_python": lambda: model(
        [helper.make_node("Mod", ["x", "x"], ["y"], name="float_mod")],
        [vi("x", F32, [3])], [vi("y", F32, [3])], check=False),
    "argmax_bad_axis": lambda: model(
        [helper.make_node("ArgMax", ["x"], ["y"], name="argmax_axis", axis=2)],
        [vi("x", F32, [2, 3])], [vi("y", I64, [2, 1])], check=False),
    "double_constants": lambda: double_constants(False),
    "double_constants_refused": lambda: double_constants(True),
    "double_where": double_where,
    "instance_norm": instance_norm,
    "scatter_elements": scatter_elements,
    "double_region": lambda: double_region(False),
    "double_region_escapes": lambda: double_region(True),
    "buffer_like_initializers": buffer_like_initializers,
    "padding_row": lambda: padding_row("good"),
    "padding_row_negative": lambda: padding_row("bad"),
    "padding_row_outside": lambda: padding_row("outside"),
    "padding_row_unrecorded": lambda: padding_row("none"),
}


def main(argv):
    if len(argv) != 3 or argv[1] not in MODELS:
        sys.exit(f"usage: {argv[0]} {{{','.join(sorted(MODELS))}}} OUT.onnx")
    onnx.save_model(MODELS[argv[1]](), argv[2])


if __name__ == "__main__":
    main(sys.argv)
