"""Writes the seed corpus of onnx_import_fuzzer.

    python3 make_seed_corpus.py OUT_DIR

Small valid models (every supported op, the attribute/input forms of opsets 13 to 20, shape
subgraphs as torch exports them, external data), followed by truncated and byte-mutated copies.
Also writes `fuzz.weights` into the current directory: the fuzzer resolves external data
relative to it. Deterministic: the same seeds every run.
"""

import os
import random
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

F, I64, I32, B = T.FLOAT, T.INT64, T.INT32, T.BOOL
WEIGHTS = "fuzz.weights"


def vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def const(name, values, dtype=np.int64):
    return nh.from_array(np.array(values, dtype), name)


def model(nodes, inputs, outputs, inits=(), opset=17):
    graph = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8 if opset <= 18 else 9
    return m


def elementwise():
    nodes, prev = [], "x"
    for i, op in enumerate(["Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal",
                            "Neg", "Abs", "Erf", "Identity"]):
        nodes.append(h.make_node(op, [prev], [f"u{i}"]))
        prev = f"u{i}"
    nodes += [
        h.make_node("Add", [prev, "b"], ["a"]), h.make_node("Sub", ["a", "b"], ["s"]),
        h.make_node("Mul", ["s", "b"], ["m"]), h.make_node("Div", ["m", "b"], ["d"]),
        h.make_node("Pow", ["d", "e"], ["p"]), h.make_node("Max", ["p", "b", "x"], ["mx"]),
        h.make_node("Min", ["mx"], ["mn"]), h.make_node("Clip", ["mn", "", "hi"], ["c"]),
        h.make_node("Less", ["c", "b"], ["l"]), h.make_node("Greater", ["c", "b"], ["g"]),
        h.make_node("Equal", ["l", "g"], ["eq"]), h.make_node("Or", ["eq", "l"], ["o"]),
        h.make_node("And", ["o", "g"], ["an"]), h.make_node("Not", ["an"], ["n"]),
        h.make_node("Where", ["n", "c", "b"], ["w"]), h.make_node("Cast", ["w"], ["y"], to=I64),
    ]
    inits = [const("b", [0.5, 2.0, 3.0], np.float32), const("e", 2, np.int64),
             const("hi", 4.0, np.float32)]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", I64, [2, 3])], inits)


def linalg(opset):
    nodes = [
        h.make_node("MatMul", ["x", "w"], ["mm"]),
        h.make_node("Gemm", ["mm", "w2", "c"], ["gm"], transB=1, alpha=0.5),
        h.make_node("LayerNormalization", ["gm", "s", "bias"], ["ln", "mean", "isd"], axis=-1),
        h.make_node("Softmax", ["ln"], ["sm"], axis=0), h.make_node("LogSoftmax", ["sm"], ["y"]),
    ]
    inits = [const("w", np.ones((3, 4)), np.float32), const("w2", np.ones((5, 4)), np.float32),
             const("c", [1.0], np.float32), const("s", np.ones(5), np.float32),
             const("bias", np.zeros(5), np.float32)]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 5]), vi("mean", F, [2, 1])],
                 inits, opset)


def reductions(opset):
    if opset >= 18:
        nodes = [h.make_node("ReduceMean", ["x", "ax"], ["a"], keepdims=0),
                 h.make_node("ReduceMax", ["x"], ["b"], noop_with_empty_axes=1),
                 h.make_node("ReduceSum", ["b", "ax"], ["c"])]
    else:
        nodes = [h.make_node("ReduceMean", ["x"], ["a"], axes=[-1], keepdims=0),
                 h.make_node("ReduceMax", ["x"], ["b"]),
                 h.make_node("ReduceSum", ["x", "ax"], ["c"])]
    b_shape = [2, 3, 4] if opset >= 18 else [1, 1, 1]
    return model(nodes, [vi("x", F, [2, 3, 4])],
                 [vi("a", F, [2, 3]), vi("b", F, b_shape), vi("c", F, [2, 3, 1])],
                 [const("ax", [-1])], opset)


def shapes(opset):
    nodes = [
        h.make_node("Shape", ["x"], ["sh"], start=0, end=-1),
        h.make_node("Gather", ["sh", "i0"], ["d0"], axis=0),
        h.make_node("Unsqueeze", ["d0", "a0"], ["u0"]),
        h.make_node("Concat", ["u0", "m1"], ["shp"], axis=0),
        h.make_node("Reshape", ["x", "shp"], ["r"]),
        h.make_node("Flatten", ["r"], ["f"], axis=1),
        h.make_node("ConstantOfShape", ["two"], ["ones"], value=const("v", [1])),
        h.make_node("Expand", ["f", "shp2"], ["e"]),
        h.make_node("Unsqueeze", ["e", "a0"], ["ue"]),
        h.make_node("Squeeze", ["ue"], ["y"]),
        h.make_node("Range", ["r0", "r1", "r2"], ["rg"]),
        h.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
    ]
    inits = [const("i0", 0), const("a0", [0]), const("m1", [-1]), const("two", [2]),
             const("shp2", [2, 1]), const("r0", 0), const("r1", 7), const("r2", 2)]
    return model(nodes, [vi("x", F, [2, 3, 4])],
                 [vi("y", F, [2, 12]), vi("rg", I64, [4]), vi("t", F, [4, 2, 3]),
                  vi("ones", I64, [2])],
                 inits, opset)


def data_movement(opset):
    split = (h.make_node("Split", ["x"], ["p", "q", "r"], axis=-1, num_outputs=3)
             if opset >= 18 else h.make_node("Split", ["x", "sp"], ["p", "q", "r"], axis=-1))
    nodes = [
        split,
        h.make_node("Slice", ["x", "st", "en", "ax", "stp"], ["s"]),
        h.make_node("Gather", ["x", "idx"], ["g"], axis=1),
        h.make_node("Trilu", ["sq", "k"], ["tr"], upper=0),
        h.make_node("Concat", ["p", "q", "r"], ["c"], axis=2),
    ]
    inits = [const("sp", [3, 3, 1]), const("st", [-1, 2 ** 63 - 1]), const("en", [-2 ** 63, 1]),
             const("ax", [1, -1]), const("stp", [-1, -2]), const("idx", [[0, -1]]),
             const("k", 1), const("sq", np.ones((3, 3)), np.float32)]
    return model(nodes, [vi("x", F, [2, 3, 7])],
                 [vi("s", F, [2, 3, 3]), vi("g", F, [2, 1, 2, 7]), vi("tr", F, [3, 3]),
                  vi("c", F, [2, 3, 7])],
                 inits, opset)


def losses():
    nodes = [
        h.make_node("Dropout", ["x", "ratio", "train"], ["d", "mask"]),
        h.make_node("SoftmaxCrossEntropyLoss", ["d", "lab"], ["loss", "lp"], ignore_index=-1),
        h.make_node("NegativeLogLikelihoodLoss", ["lp", "lab", "w"], ["nll"], reduction="sum"),
        h.make_node("Constant", [], ["k1"], value_floats=[1.0, 2.0]),
        h.make_node("Constant", [], ["k2"], value_int=3),
        h.make_node("Constant", [], ["k3"], value=const("t", [True, False], np.bool_)),
    ]
    inits = [const("ratio", 0.1, np.float32), const("train", False, np.bool_),
             const("w", [1.0, 2.0, 0.5], np.float32)]
    return model(nodes, [vi("x", F, [4, 3]), vi("lab", I64, [4])],
                 [vi("loss", F, []), vi("nll", F, []), vi("mask", B, [4, 3]),
                  vi("k1", F, [2]), vi("k2", I64, []), vi("k3", B, [2])], inits, 13)


def vision():
    """Conv (bias, SAME_UPPER, groups), BatchNormalization in training mode, the pools and the
    hard activations, with a record of the trained parameters."""
    nodes = [
        h.make_node("Conv", ["x", "w", "b"], ["c"], strides=[2, 2], auto_pad="SAME_UPPER",
                    group=2),
        h.make_node("BatchNormalization", ["c", "g", "bb", "rm", "rv"], ["n", "nm", "nv"],
                    training_mode=1, momentum=0.9),
        h.make_node("HardSwish", ["n"], ["hs"]),
        h.make_node("MaxPool", ["hs"], ["mp"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        h.make_node("AveragePool", ["mp"], ["ap"], kernel_shape=[2, 2], pads=[1, 1, 0, 0],
                    count_include_pad=1),
        h.make_node("HardSigmoid", ["ap"], ["hg"], alpha=0.3, beta=0.4),
        h.make_node("GlobalAveragePool", ["hg"], ["ga"]),
        h.make_node("GlobalMaxPool", ["hg"], ["gm"]),
    ]
    inits = [const("w", np.ones((4, 1, 3, 3)), np.float32), const("b", np.zeros(4), np.float32),
             const("g", np.ones(4), np.float32), const("bb", np.zeros(4), np.float32),
             const("rm", np.zeros(4), np.float32), const("rv", np.ones(4), np.float32)]
    m = model(nodes, [vi("x", F, [2, 2, 7, 7])],
              [vi("ga", F, [2, 4, 1, 1]), vi("gm", F, [2, 4, 1, 1])], inits)
    entry = m.metadata_props.add()
    entry.key, entry.value = "shardc.trainable", '["w", "b", "g", "bb"]'
    return m


def scatter_cumsum_if():
    """CumSum, ScatterND, Pad and an If whose condition folds to a constant."""
    then_graph = h.make_graph([h.make_node("Identity", ["p"], ["t"])], "then", [],
                              [vi("t", F, [2, 5])])
    else_graph = h.make_graph([h.make_node("Neg", ["p"], ["e"])], "else", [],
                              [vi("e", F, [2, 5])])
    nodes = [
        h.make_node("CumSum", ["x", "ax"], ["cs"], exclusive=1, reverse=1),
        h.make_node("ScatterND", ["cs", "ind", "upd"], ["sc"]),
        h.make_node("Pad", ["sc", "pads"], ["p"]),
        h.make_node("Shape", ["x"], ["shape"]),
        h.make_node("ReduceMax", ["shape"], ["big"], keepdims=0),
        h.make_node("Equal", ["big", "three"], ["cond"]),
        h.make_node("If", ["cond"], ["y"], then_branch=then_graph, else_branch=else_graph),
    ]
    inits = [const("ax", 1), const("ind", [[0, 1], [1, 2]]),
             const("upd", [5.0, 6.0], np.float32), const("pads", [0, 1, 0, 1]),
             const("three", 3)]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 5])], inits)


def loop_sequences():
    """A Loop over Shape(x)[1] reading columns of a SplitToSequence, appending to a carried
    sequence, with a scan output; then ConcatFromSequence (torch.repeat_interleave's export)."""
    body = h.make_graph(
        [h.make_node("SequenceAt", ["cols", "i"], ["c"]),
         h.make_node("SequenceInsert", ["acc", "c"], ["acc2"]),
         h.make_node("Identity", ["cin"], ["cout"]),
         h.make_node("Identity", ["c"], ["scan"])],
        "body", [vi("i", T.INT64, []), vi("cin", T.BOOL, []),
                 h.make_tensor_sequence_value_info("acc", F, None)],
        [vi("cout", T.BOOL, []), h.make_tensor_sequence_value_info("acc2", F, None),
         vi("scan", F, [2, 1])])
    nodes = [
        h.make_node("Shape", ["x"], ["shape"]),
        h.make_node("Gather", ["shape", "one"], ["trips"], axis=0),
        h.make_node("SplitToSequence", ["x"], ["cols"], axis=1),
        h.make_node("SequenceEmpty", [], ["empty"]),
        h.make_node("Loop", ["trips", "go", "empty"], ["seq", "scans"], body=body),
        h.make_node("ConcatFromSequence", ["seq"], ["y"], axis=1),
        h.make_node("SequenceLength", ["seq"], ["n"]),
    ]
    inits = [const("one", 1), nh.from_array(np.array(True), "go")]
    return model(nodes, [vi("x", F, [2, 3])],
                 [vi("y", F, [2, 3]), vi("scans", F, [3, 2, 1]), vi("n", T.INT64, [])], inits)


def gelu20():
    nodes = [h.make_node("Gelu", ["x"], ["a"], approximate="tanh"), h.make_node("Gelu", ["a"], ["y"])]
    return model(nodes, [vi("x", F, [2, 4])], [vi("y", F, [2, 4])], opset=20)


def external_data():
    """A model whose initializers live in WEIGHTS (written next to the working directory)."""
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    s = np.array([4, 3], np.int64)
    with open(WEIGHTS, "wb") as f:
        f.write(w.tobytes())
        f.write(s.tobytes())
    tensors = []
    for name, arr, offset in (("w", w, 0), ("s", s, w.nbytes)):
        t = nh.from_array(arr, name)
        t.ClearField("raw_data")
        t.data_location = T.EXTERNAL
        for key, value in (("location", WEIGHTS), ("offset", str(offset)),
                           ("length", str(arr.nbytes))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        tensors.append(t)
    nodes = [h.make_node("MatMul", ["x", "w"], ["m"]), h.make_node("Reshape", ["m", "s"], ["y"])]
    return model(nodes, [vi("x", F, [3, 3])], [vi("y", F, [4, 3])], tensors)


def write_seed_and_variants(out, name, suffix, data, rng):
    """OUT/NAME+SUFFIX holding `data`, plus 2 truncated and 3 byte-mutated copies of it."""
    with open(os.path.join(out, name + suffix), "wb") as f:
        f.write(data)
    for i in range(2):
        cut = rng.randrange(1, len(data))
        with open(os.path.join(out, f"{name}.trunc{i}"), "wb") as f:
            f.write(data[:cut])
    for i in range(3):
        mutated = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        with open(os.path.join(out, f"{name}.mut{i}"), "wb") as f:
            f.write(bytes(mutated))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {
        "elementwise": elementwise(), "linalg17": linalg(17), "linalg20": linalg(20),
        "reduce13": reductions(13), "reduce18": reductions(18),
        "shapes15": shapes(15), "shapes19": shapes(19),
        "data14": data_movement(14), "data18": data_movement(18),
        "losses": losses(), "gelu20": gelu20(), "external": external_data(),
        "vision": vision(), "scatter_cumsum_if": scatter_cumsum_if(),
        "loop_sequences": loop_sequences(),
    }
    rng = random.Random(0)
    for name, m in seeds.items():
        write_seed_and_variants(out, name, ".onnx", m.SerializeToString(), rng)
    print(f"wrote {len(seeds) * 6} seeds to {out}")


if __name__ == "__main__":
    main()
