"""Every op's sharding rule gives the single-rank answer, in every layout shardc accepts.

    test_sharding_rules.py --shardc PATH --shardrun PATH --work DIR [--draws N] [--jobs N]

For each op form in OPS a tiny model is written by hand with onnx.helper (opset 17): a graph
input `x` (float32, a batch of 4 or 8 rows in dim 0; int64 ids `ids` for the embedding lookup),
the op with float32 initializers as its trained parameter operands, and the scalar loss
ReduceSum(y * C * s): C a random float32 initializer of y's shape with a size of 1 along the
batch (the same for every row, so that data parallelism can split the batch), s a frozen scalar
0.5 / sqrt(y's size), which keeps the loss, its terms and each SGD step small. Ops without a
parameter operand (Tanh, Softmax, Transpose, ...) read a projection h = x @ W0 (W0 trained),
which is also what tensor parallelism can split, since every device reads `x` whole; GELU is
its opset-17 export, 0.5 * h * (1 + Erf(h / sqrt(2))). The sizes come from a NumPy generator
seeded per op and draw (2 to 8, even where a split or a reshape needs it), --draws shape draws
per op. Each drawn model is written twice: with C a frozen buffer (the metadata
`shardc.trainable` names the other parameters), and with C trained as well, since a frozen C
is the same on every device and so keeps y's dimensions whole on tp.

Each model trains 3 SGD steps (lr 0.5, weight decay 0) on 3 batches of random rows, compiled
as: one rank; dp=2; dp=4; ZeRO-3 on 2 ranks; tp=2 with `--shard` putting {tp} on one
dimension of one trained parameter, for every dimension of every trained parameter; tp=2 with
no override; dp=2,tp=2 on 4 ranks. Step 1's loss checks the forward pass, steps 2 and 3 the
gradients SGD moved the parameters by: every step's loss must be within 1e-5 relative (or 1e-6
absolute) of the one-rank run's. The tp layouts may be refused with exit 1 and one stderr line
`shardc: error: ...` (a dimension an op needs whole, a size 2 does not divide, nothing to
split), which is counted, not failed; any other exit, a refused dp or ZeRO layout, or a refusal
of more than one line fails. The one-rank run itself must follow the same function computed
by PyTorch in float64 from the graph's nodes (a small evaluator of the ops used here), with
the same SGD steps: each loss within 1e-5 of the sum of |y * C * s| (the size of its terms).

Models run 2 at a time (--jobs). Prints PASS/FAIL per op (FAIL with the layout, the shapes, both
runs' losses and the commands that reproduce it), the number of (op, layout) cases run and
refused, and `N passed, M failed` (ops); every case and refusal is in WORK/cases.json.
"""

import concurrent.futures
import json
import math
import os
import re
import shutil
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402

OPSET = 17
STEPS, LR = 3, 0.5
RTOL, ATOL = 1e-5, 1e-6
SEED = 20240611
BATCHES = (4, 8)
C_SCALE = 0.5
TRAIN_FLAGS = ["--optimizer", "sgd", "--weight-decay", "0"]
# Layouts that may be refused in one line (tensor parallelism); the others must compile.
MAY_REFUSE = ("tp2", "dp2_tp2")


class Graph:
    """A model under construction: nodes, graph inputs with their 3 batches of data, trained
    parameters and frozen constants, all drawn from one seeded generator."""

    def __init__(self, rng):
        self.rng = rng
        self.batch = int(rng.choice(BATCHES))
        self.nodes = []  # (op, inputs, outputs, attrs)
        self.inputs = []  # (name, onnx dtype, shape with the batch)
        self.data = {}  # name -> 3 batches stacked along dim 0
        self.params = {}  # trained: name -> float32 array
        self.consts = {}  # frozen: name -> array
        self.shapes = []  # the drawn sizes, for reports
        self.count = 0

    def size(self, lo=2, hi=8, even=False):
        choices = [n for n in range(lo, hi + 1) if not even or n % 2 == 0]
        n = int(self.rng.choice(choices))
        self.shapes.append(n)
        return n

    def input(self, name, dims):
        shape = [self.batch, *dims]
        self.inputs.append((name, TensorProto.FLOAT, shape))
        self.data[name] = self.rng.standard_normal([STEPS * self.batch, *dims]).astype(np.float32)
        return name

    def ids(self, name, dims, vocab):
        shape = [self.batch, *dims]
        self.inputs.append((name, TensorProto.INT64, shape))
        self.data[name] = self.rng.integers(0, vocab, [STEPS * self.batch, *dims]).astype(np.int64)
        return name

    def param(self, name, shape, scale=1.0, low=None, high=None):
        if low is not None:
            value = self.rng.uniform(low, high, shape)
        else:
            value = self.rng.standard_normal(shape) * scale
        self.params[name] = value.astype(np.float32)
        return name

    def const(self, name, value):
        self.consts[name] = np.asarray(value)
        return name

    def node(self, op, inputs, outputs=1, **attrs):
        names = []
        for _ in range(outputs):
            self.count += 1
            names.append(f"{op.lower()}{self.count}")
        self.nodes.append((op, list(inputs), names, attrs))
        return names[0] if outputs == 1 else names

    def project(self, lead, n, name="W0"):
        """h = x @ W0 for x [batch, *lead, k]: an activation whose last dimension tp can split."""
        x = "x" if "x" in self.data else self.input("x", [*lead, self.size()])
        k = self.data[x].shape[-1]
        return self.node("MatMul", [x, self.param(name, [k, n], 1 / math.sqrt(k))])


# ---------------------------------------------------------------------------------------------
# The op forms. Each builds its op on a Graph and returns (y, the batch dimension of y).


def matmul(g):
    lead = [g.size()] if g.rng.random() < 0.5 else []
    h = g.project(lead, g.size(even=True))
    n = g.params["W0"].shape[1]
    return g.node("MatMul", [h, g.param("W", [n, g.size(even=True)], 1 / math.sqrt(n))]), 0


def gemm(g):
    n = g.size(even=True)
    h = g.project([], n)
    m = g.size(even=True)
    w = g.param("W", [m, n], 1 / math.sqrt(n))
    return g.node("Gemm", [h, w, g.param("b", [m], 0.5)], transB=1), 0


def binary(op, param_first=False, low=None, high=None):
    def build(g):
        lead = [g.size()] if g.rng.random() < 0.5 else []
        n = g.size(even=True)
        h = g.project(lead, n)
        shape = [*lead, n] if lead and g.rng.random() < 0.5 else [n]
        p = g.param("P", shape, 1.0, low, high)
        return g.node(op, [p, h] if param_first else [h, p]), 0
    return build


def two_activations(op):
    def build(g):
        n = g.size(even=True)
        h1 = g.project([g.size()], n, "W0")
        h2 = g.project([], n, "W1")
        return g.node(op, [h1, h2]), 0
    return build


def unary(*ops):
    def build(g):
        lead = [g.size()] if g.rng.random() < 0.5 else []
        y = g.project(lead, g.size(even=True))
        for op in ops:
            y = g.node(op, [y])
        return y, 0
    return build


def gelu(g):
    """GELU as torch.onnx exports it at opset 17: 0.5 * h * (1 + erf(h / sqrt(2)))."""
    h = g.project([g.size()], g.size(even=True))
    e = g.node("Erf", [g.node("Div", [h, g.const("sqrt2", np.float32(math.sqrt(2)))])])
    half = g.node("Mul", [h, g.const("half", np.float32(0.5))])
    return g.node("Mul", [half, g.node("Add", [e, g.const("one", np.float32(1))])]), 0


def sqrt(g):
    h = g.project([g.size()], g.size(even=True))
    sq = g.node("Mul", [h, h])
    return g.node("Sqrt", [g.node("Add", [sq, g.const("one", np.float32(1))])]), 0


def pow_const(g):
    h = g.project([g.size()], g.size(even=True))
    return g.node("Pow", [h, g.const("two", np.float32(2))]), 0


def pow_param(g):
    n = g.size(even=True)
    base = g.node("Sigmoid", [g.project([g.size()], n)])
    return g.node("Pow", [base, g.param("P", [n], low=1.0, high=2.0)]), 0


def softmax(op, axis):
    def build(g):
        h = g.project([g.size()], g.size(even=True))
        return g.node(op, [h], axis=axis), 0
    return build


def layernorm(g):
    lead = [g.size()] if g.rng.random() < 0.5 else []
    n = g.size(even=True)
    h = g.project(lead, n)
    scale = g.param("gamma", [n], low=0.5, high=1.5)
    return g.node("LayerNormalization", [h, scale, g.param("beta", [n], 0.5)], axis=-1,
                  epsilon=1e-5), 0


def reduce(op, axis):
    def build(g):
        h = g.project([g.size()], g.size(even=True))
        keep = int(g.rng.random() < 0.5)
        if op == "ReduceSum":  # opset 13+: the axes are an input
            return g.node(op, [h, g.const(f"axes{g.count}", np.array([axis], np.int64))],
                          keepdims=keep), 0
        return g.node(op, [h], axes=[axis], keepdims=keep), 0
    return build


def transpose(perm):
    def build(g):
        h = g.project([g.size()], g.size(even=True))
        return g.node("Transpose", [h], perm=list(perm)), perm.index(0)
    return build


def reshape_merge(g):
    s, n = g.size(), g.size(even=True)
    h = g.project([s], n)
    shape = [0, -1] if g.rng.random() < 0.5 else [g.batch, s * n]
    return g.node("Reshape", [h, g.const("shape", np.array(shape, np.int64))]), 0


def reshape_split(g):
    s, n = g.size(), g.size(lo=4, even=True)
    h = g.project([s], n)
    parts = [2, n // 2] if g.rng.random() < 0.5 else [n // 2, 2]
    shape = [g.batch, s, *parts] if g.rng.random() < 0.5 else [0, 0, *parts]
    return g.node("Reshape", [h, g.const("shape", np.array(shape, np.int64))]), 0


def concat_features(g):
    s = g.size()
    h1 = g.project([s], g.size(even=True), "W0")
    h2 = g.project([], g.size(even=True), "W1")
    return g.node("Concat", [h1, h2], axis=-1), 0


def concat_rows(g):
    n = g.size(even=True)
    h1 = g.project([g.size()], n, "W0")
    h2 = g.node("Tanh", [g.project([], n, "W1")])
    return g.node("Concat", [h1, h2], axis=1), 0


def split(axis):
    def build(g):
        if axis == 1:
            h = g.project([g.size(even=True)], g.size(even=True))
        else:
            h = g.project([g.size()], g.size(lo=4, even=True))
        a, b = g.node("Split", [h], outputs=2, axis=axis)
        return g.node("Mul", [a, g.node("Tanh", [b])]), 0
    return build


def slice_(axis):
    def build(g):
        s, n = g.size(lo=3), g.size(lo=4, even=True)
        h = g.project([s], n)
        size = s if axis == 1 else n
        step = int(g.rng.choice([1, 2]))
        consts = [np.array([v], np.int64) for v in (1, size, axis, step)]
        names = [g.const(f"{k}{g.count}", v)
                 for k, v in zip(("starts", "ends", "axes", "steps"), consts)]
        return g.node("Slice", [h, *names]), 0
    return build


def gather_embedding(g):
    vocab, dim = g.size(lo=4, even=True), g.size(even=True)
    ids = g.ids("ids", [g.size()], vocab)
    return g.node("Gather", [g.param("E", [vocab, dim]), ids], axis=0), 0


def gather_columns(g):
    n = g.size(lo=4, even=True)
    h = g.project([g.size()], n)
    cols = g.rng.integers(0, n, g.size(lo=2, hi=6)).astype(np.int64)
    return g.node("Gather", [h, g.const("cols", cols)], axis=2), 0


def where_const(g):
    s, n = g.size(), g.size(even=True)
    h = g.project([s], n)
    cond = g.const("cond", g.rng.random([s, n]) < 0.5)
    return g.node("Where", [cond, h, g.param("P", [n])]), 0


def where_computed(g):
    """A leaky ReLU with a learned slope: where(h > 0, h, h * P)."""
    n = g.size(even=True)
    h = g.project([g.size()], n)
    cond = g.node("Greater", [h, g.const("zero", np.float32(0))])
    return g.node("Where", [cond, h, g.node("Mul", [h, g.param("P", [n], low=0.1, high=0.3)])]), 0


def expand(g):
    s, n = g.size(), g.size(even=True)
    h = g.project([1], n)
    shape = [1, s, n] if g.rng.random() < 0.5 else [g.batch, s, n]
    return g.node("Expand", [h, g.const("shape", np.array(shape, np.int64))]), 0


def conv_input(g):
    cin, hw = g.size(hi=4), g.size(lo=4, hi=6, even=True)
    x = g.input("x", [cin, hw, hw])
    cout = g.size(hi=6, even=True)
    w = g.param("Wc", [cout, cin, 3, 3], 1 / math.sqrt(cin * 9))
    return x, w, g.param("bc", [cout], 0.5)


def conv(g):
    x, w, b = conv_input(g)
    pad = int(g.rng.choice([0, 1]))
    return g.node("Conv", [x, w, b], kernel_shape=[3, 3], pads=[pad] * 4), 0


def maxpool(g):
    x, w, b = conv_input(g)
    c = g.node("Conv", [x, w, b], kernel_shape=[3, 3], pads=[1] * 4)
    return g.node("MaxPool", [c], kernel_shape=[2, 2], strides=[2, 2]), 0


OPS = [
    ("MatMul", matmul),
    ("Gemm(transB=1,bias)", gemm),
    ("Add", binary("Add")),
    ("Sub", binary("Sub", param_first=True)),
    ("Mul", binary("Mul")),
    ("Div", binary("Div", low=2.0, high=3.0)),
    ("Mul(two activations)", two_activations("Mul")),
    ("Add(two activations)", two_activations("Add")),
    ("Tanh", unary("Tanh")),
    ("Relu", unary("Relu")),
    ("Sigmoid", unary("Sigmoid")),
    ("Exp", unary("Exp")),
    ("Erf", unary("Erf")),
    ("Gelu(erf form)", gelu),
    ("Sqrt", sqrt),
    ("Pow(h,2)", pow_const),
    ("Pow(sigmoid(h),P)", pow_param),
    ("Softmax(axis=-1)", softmax("Softmax", -1)),
    ("Softmax(axis=1)", softmax("Softmax", 1)),
    ("LogSoftmax(axis=-1)", softmax("LogSoftmax", -1)),
    ("LayerNormalization", layernorm),
    ("ReduceSum(axis=-1)", reduce("ReduceSum", -1)),
    ("ReduceSum(axis=1)", reduce("ReduceSum", 1)),
    ("ReduceMean(axis=-1)", reduce("ReduceMean", -1)),
    ("ReduceMean(axis=1)", reduce("ReduceMean", 1)),
    ("ReduceMax(axis=-1)", reduce("ReduceMax", -1)),
    ("Transpose(0,2,1)", transpose((0, 2, 1))),
    ("Transpose(1,0,2)", transpose((1, 0, 2))),
    ("Reshape(merge)", reshape_merge),
    ("Reshape(split)", reshape_split),
    ("Concat(axis=-1)", concat_features),
    ("Concat(axis=1)", concat_rows),
    ("Split(axis=-1)", split(-1)),
    ("Split(axis=1)", split(1)),
    ("Slice(axis=-1)", slice_(-1)),
    ("Slice(axis=1)", slice_(1)),
    ("Gather(embedding)", gather_embedding),
    ("Gather(axis=2,constant indices)", gather_columns),
    ("Where(constant condition)", where_const),
    ("Where(h>0,h,h*P)", where_computed),
    ("Expand", expand),
    ("Conv", conv),
    ("MaxPool", maxpool),
]


# ---------------------------------------------------------------------------------------------
# The same function in PyTorch (float64), from the graph's nodes.


def _const_list(env, name):
    return [int(v) for v in env[name].reshape(-1).tolist()]


def evaluate(nodes, env):
    """Runs `nodes` on the tensors of `env` (name -> torch tensor), adding their results."""
    for op, ins, outs, attrs in nodes:
        a = [env[n] for n in ins]
        if op in ("Add", "Sub", "Mul", "Div", "Pow", "Greater"):
            fn = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div,
                  "Pow": torch.pow, "Greater": torch.gt}[op]
            res = fn(a[0], a[1])
        elif op in ("Tanh", "Relu", "Sigmoid", "Exp", "Erf", "Sqrt"):
            res = getattr(torch, op.lower())(a[0])
        elif op == "MatMul":
            res = torch.matmul(a[0], a[1])
        elif op == "Gemm":
            b = a[1].t() if attrs.get("transB") else a[1]
            res = a[0] @ b + a[2]
        elif op == "Softmax":
            res = torch.softmax(a[0], attrs["axis"])
        elif op == "LogSoftmax":
            res = torch.log_softmax(a[0], attrs["axis"])
        elif op == "LayerNormalization":
            res = F.layer_norm(a[0], a[0].shape[-1:], a[1], a[2], attrs["epsilon"])
        elif op in ("ReduceSum", "ReduceMean", "ReduceMax"):
            axes = _const_list(env, ins[1]) if op == "ReduceSum" else attrs["axes"]
            keep = bool(attrs.get("keepdims", 1))
            if op == "ReduceMax":
                res = torch.amax(a[0], dim=axes, keepdim=keep)
            else:
                res = (torch.sum if op == "ReduceSum" else torch.mean)(a[0], dim=axes,
                                                                        keepdim=keep)
        elif op == "Transpose":
            res = a[0].permute(*attrs["perm"])
        elif op == "Reshape":
            shape = [a[0].shape[i] if d == 0 else d for i, d in enumerate(_const_list(env, ins[1]))]
            res = a[0].reshape(shape)
        elif op == "Concat":
            res = torch.cat(a, attrs["axis"])
        elif op == "Split":
            axis = attrs["axis"]
            res = torch.split(a[0], a[0].shape[axis] // len(outs), axis)
        elif op == "Slice":
            start, end, axis, step = (_const_list(env, n)[0] for n in ins[1:])
            index = [slice(None)] * a[0].dim()
            index[axis] = slice(start, end, step)
            res = a[0][tuple(index)]
        elif op == "Gather":
            axis, idx = attrs["axis"] % a[0].dim(), a[1]
            flat = a[0].index_select(axis, idx.reshape(-1))
            res = flat.reshape(*a[0].shape[:axis], *idx.shape, *a[0].shape[axis + 1:])
        elif op == "Where":
            res = torch.where(a[0], a[1], a[2])
        elif op == "Expand":
            shape = torch.broadcast_shapes(a[0].shape, tuple(_const_list(env, ins[1])))
            res = a[0].expand(shape)
        elif op == "Conv":
            res = F.conv2d(a[0], a[1], a[2], padding=attrs["pads"][0])
        elif op == "MaxPool":
            res = F.max_pool2d(a[0], attrs["kernel_shape"], attrs["strides"])
        else:
            raise ValueError(f"no reference for {op}")
        for name, value in zip(outs, res if isinstance(res, (tuple, list)) else [res]):
            env[name] = value
    return env


def reference(g, y, c_trained):
    """PyTorch's losses for the 3 SGD steps, and the sum of |y * C| of each step."""
    params = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True)
              for n, v in g.params.items()}
    consts = {n: torch.tensor(v.astype(np.float64) if v.dtype == np.float32 else v)
              for n, v in g.consts.items()}
    trained = [params[n] for n in g.params if n != "C" or c_trained]
    losses, scales = [], []
    for step in range(STEPS):
        rows = slice(step * g.batch, (step + 1) * g.batch)
        env = {**consts, **params}
        for name, value in g.data.items():
            block = torch.tensor(value[rows])
            env[name] = block.double() if block.dtype == torch.float32 else block
        env = evaluate(g.nodes, env)
        terms = env[y] * params["C"] * consts["scale"]
        loss = terms.sum()
        for p in trained:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in trained:
                p -= LR * p.grad
        losses.append(loss.item())
        scales.append(terms.abs().sum().item())
    return losses, scales


# ---------------------------------------------------------------------------------------------


def build(op_index, draw):
    """The drawn Graph of OPS[op_index], with C added (params["C"]), and its output y."""
    g = Graph(np.random.default_rng([SEED, op_index, draw]))
    y, batch_axis = OPS[op_index][1](g)
    env = {n: torch.tensor(v) for n, v in {**g.consts, **g.params}.items()}
    env.update({n: torch.tensor(v[:g.batch]) for n, v in g.data.items()})
    shape = list(evaluate(g.nodes, env)[y].shape)
    size = math.prod(shape)
    shape[batch_axis] = 1
    g.param("C", shape)
    g.const("scale", np.float32(C_SCALE / math.sqrt(size)))
    return g, y


def write_model(g, y, c_trained, path):
    c_frozen = "C" if not c_trained else None
    nodes = [helper.make_node(op, ins, outs, **attrs) for op, ins, outs, attrs in g.nodes]
    nodes += [helper.make_node("Mul", [y, "C"], ["weighted"]),
              helper.make_node("Mul", ["weighted", "scale"], ["scaled"]),
              helper.make_node("ReduceSum", ["scaled"], ["loss"], keepdims=0)]
    inits = [numpy_helper.from_array(v, n) for n, v in {**g.params, **g.consts}.items()]
    inputs = [helper.make_tensor_value_info(n, t, s) for n, t, s in g.inputs]
    graph = helper.make_graph(nodes, "rule", inputs,
                              [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    trained = [n for n in g.params if n != c_frozen]
    model.metadata_props.add(key="shardc.trainable", value=json.dumps(trained))
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return trained


def layouts(g, trained):
    """(name, shardc flags) of every layout the model is compiled in, the one rank first."""
    out = [("one", []),
           ("dp2", ["--gpus", "2", "--strategy", "dp"]),
           ("dp4", ["--gpus", "4", "--strategy", "dp"]) if g.batch % 4 == 0 else None,
           ("zero3", ["--gpus", "2", "--strategy", "zero3"])]
    for name in trained:
        rank = g.params[name].ndim
        for d in range(rank):
            spec = ",".join("{tp}" if i == d else "{}" for i in range(rank))
            out.append((f"tp2 {name}[{d}]", ["--gpus", "2", "--strategy", "tp=2", "--shard",
                                             f"{name}=[{spec}]"]))
    out.append(("tp2 auto", ["--gpus", "2", "--strategy", "tp=2"]))
    out.append(("dp2_tp2", ["--gpus", "4", "--strategy", "dp=2,tp=2"]))
    return [layout for layout in out if layout]


def close(a, b):
    return abs(a - b) <= max(RTOL * abs(b), ATOL)


def abbreviate(line):
    """The reason of a one-line refusal, shortened for the summary: "input 'x' read whole",
    "frozen 'C'", "softmax normalises over it", "size 1", ...; a refused tp=2 with no override
    is "nothing to split: " and the reason given for the largest dimension."""
    text = line.split(".onnx: ", 1)[-1]
    auto = re.search(r"no parameter dimension can be split on tp \(the largest, '[^']*' dim \d+ "
                     r"\(size \d+\): (.*)\); every device", text)
    forced = re.search(r"cannot be split on tp: (.*)$", text)
    if auto or forced:
        reason = (auto or forced).group(1)
    elif re.search(r"dim \d+ has size 1$", text):
        reason = "size 1"
    else:
        reason = text
    for pattern, short in ((r"it holds input '([^']*)'.*", r"input '\1' read whole"),
                           (r"it holds frozen parameter '([^']*)'.*", r"frozen '\1'"),
                           (r"it holds a constant whose blocks would differ.*",
                            "a constant's blocks differ"),
                           (r"node '[^']*' \([^)]*\): (.*)", r"\1"),
                           (r"a reshape merges it into the minor part of a dimension",
                            "a reshape merges it into a minor part"),
                           (r"--strategy tp=2 does not divide its size (\d+)(?: and .*)?",
                            r"2 does not divide \1")):
        reason = re.sub(f"^{pattern}$", short, reason)
    reason = reason or "no reason given"
    return ("nothing to split: " + reason if auto else reason)[:70]


def run_model(args, op_index, draw, c_trained):
    """Compiles and trains one drawn model in every layout. Returns (cases, failures): cases a
    list of (layout, 'run'|'refused', reason), failures a list of messages."""
    op = OPS[op_index][0]
    g, y = build(op_index, draw)
    variant = "C trained" if c_trained else "C frozen"
    tag = f"{op_index:02d}_{draw}_{'trained' if c_trained else 'frozen'}"
    out = os.path.join(args.work, tag)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "data"))
    model = os.path.join(out, "model.onnx")
    trained = write_model(g, y, c_trained, model)
    for name, value in g.data.items():
        np.save(os.path.join(out, "data", e2e_util.npy_name(name) + ".npy"), value)
    what = (f"{op} (draw {draw}, {variant}, batch {g.batch}, sizes {g.shapes}, "
            f"params {{{', '.join(f'{n}: {list(v.shape)}' for n, v in g.params.items())}}})")
    expected, scales = reference(g, y, c_trained)
    cases, failures, single = [], [], None
    for layout, flags in layouts(g, trained):
        bundle = os.path.join(out, layout.replace(" ", "_").replace("[", "").replace("]", "")
                              + ".shard")
        compile_cmd = [args.shardc, model, "-o", bundle, *TRAIN_FLAGS, *flags]
        run_cmd = [args.shardrun, bundle, "--steps", str(STEPS), "--data",
                   os.path.join(out, "data"), "--lr", str(LR), "--metrics", bundle + ".jsonl"]
        shown = [" ".join(f"'{a}'" if "{" in a else a for a in cmd)
                 for cmd in (compile_cmd, run_cmd)]
        repro = " && ".join(shown)
        res = e2e_util.run_tool(compile_cmd, args.timeout)
        if not res.ok:
            lines = res.stderr.strip().splitlines()
            if (layout.split(" ")[0] in MAY_REFUSE and res.returncode == 1 and len(lines) == 1
                    and lines[0].startswith("shardc: error:")):
                cases.append((layout, "refused", lines[0]))
                continue
            failures.append(f"{layout}: {what}: {res.describe()}; reproduce: {shown[0]}")
            if layout == "one":
                break
            continue
        res = e2e_util.run_tool(run_cmd, args.timeout)
        if not res.ok:
            failures.append(f"{layout}: {what}: {res.describe()}; reproduce: {repro}")
            if layout == "one":
                break
            continue
        losses = [json.loads(line)["loss"] for line in e2e_util.metric_lines(bundle + ".jsonl")]
        cases.append((layout, "run", ""))
        if layout == "one":
            single = losses
            bad = len(losses) != STEPS or any(
                abs(a - b) > RTOL * max(abs(b), s) for a, b, s in zip(losses, expected, scales))
            if bad:  # the other layouts are still compared with this run
                failures.append(f"one rank {what}: losses {losses} vs PyTorch {expected}; "
                                f"reproduce: {repro}")
            if len(losses) != STEPS:
                break
            continue
        if len(losses) != STEPS or not all(close(a, b) for a, b in zip(losses, single)):
            failures.append(f"{layout} ({' '.join(flags)}) {what}: losses {losses} vs one rank "
                            f"{single}; reproduce: {repro}")
    return cases, failures, {"reference": expected, "terms": scales}


def main():
    parser = e2e_util.argument_parser(__doc__, timeout=120)
    parser.add_argument("--draws", type=int, default=2, help="shape draws per op")
    parser.add_argument("--jobs", type=int, default=2, help="models compiled and run at once")
    args = e2e_util.parse_args(parser)
    args.work = os.path.abspath(args.work)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    torch.set_num_threads(1)

    jobs = [(i, draw, c_trained) for i in range(len(OPS)) for draw in range(args.draws)
            for c_trained in (False, True)]
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_model, args, *job): job for job in jobs}
        for future in concurrent.futures.as_completed(futures):
            job = futures[future]
            try:
                results[job] = future.result()
            except Exception as exc:  # a harness error fails its op, not the whole run
                results[job] = ([], [f"draw {job[1]}: {type(exc).__name__}: {exc}"], {})

    with open(os.path.join(args.work, "cases.json"), "w") as f:
        json.dump([{"op": OPS[job[0]][0], "draw": job[1], "c_trained": job[2],
                    "cases": results[job][0], "failures": results[job][1], **results[job][2]}
                   for job in jobs],
                  f, indent=1)
    total_run = total_refused = 0
    verdicts = []
    for i, (op, _) in enumerate(OPS):
        cases = [c for job in jobs if job[0] == i for c in results[job][0]]
        failures = [f for job in jobs if job[0] == i for f in results[job][1]]
        ran = sum(1 for c in cases if c[1] == "run")
        refused = [abbreviate(c[2]) for c in cases if c[1] == "refused"]
        total_run += ran
        total_refused += len(refused)
        if failures:
            verdicts.append((op, "; ".join(failures)))
            continue
        counts = {}
        for reason in refused:
            counts[reason] = counts.get(reason, 0) + 1
        why = ", ".join(f"{n}x {r}" for r, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        verdicts.append((op, (None, f"{ran} layouts run, {len(refused)} refused"
                                    + (f" ({why})" if why else ""))))
    print(f"sharding rules: {total_run} (op, layout) cases run, {total_refused} refused in one "
          f"line", flush=True)
    e2e_util.run_cases([(op, lambda v=verdict: v) for op, verdict in verdicts])


if __name__ == "__main__":
    main()
