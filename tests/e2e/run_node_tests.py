"""ONNX backend node-test conformance for shardc + shardrun.

    python3 run_node_tests.py --shardc PATH --shardrun PATH --work DIR [--report FILE]
                              [--filter REGEX] [--jobs N] [--dry-run]

Generates the node test cases of the installed onnx package into DIR/data, selects those shardc
claims to support (every node's op supported, every tensor float32/int64/int32/bool, default
opset 13-20) and for each selected case compiles model.onnx with `shardc --mode forward`, runs the
bundle with shardrun on every test_data_set_* and compares the outputs with output_*.pb: float
outputs with np.allclose(rtol=1e-5, atol=1e-6, equal_nan=True), everything else exactly; shape
and dtype exactly. Every other case is reported as skipped, with the reason.

Old opsets: a model whose opset is below 13 but whose ops all have the same definition at opset
13 (And-7, Not-1, Range-11, ...) is run with its opset raised to 13, since that changes nothing
about the semantics under test (--no-opset-bump skips such models instead).

Compile-time operands: shardc needs the values of shape-determining operands (Reshape's shape,
Slice's starts/ends/axes/steps, Unsqueeze/Squeeze/Reduce* axes, ...; see
e2e_util.COMPILE_TIME_OPERANDS) at compile time. The node tests feed them as graph inputs, so a
graph input from which such an operand is computed is moved into the model as an initializer
holding its test value; this is the documented way to give shardc such operands. Such cases are
compiled once per data set.

Exit status: 0 when every selected case passes, 1 otherwise (or when nothing was selected).
--dry-run only generates and selects (no shardc/shardrun needed) and prints the statistics.
"""

import argparse
import collections
import concurrent.futures
import copy
import glob
import os
import re
import shutil
import sys
import time
import traceback

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402
from e2e_util import npy_name  # noqa: E402

RTOL = 1e-5
ATOL = 1e-6
TOOL_TIMEOUT_S = 120

# Skip categories, in the order that decides a case's primary reason.
CAT_OP = "unsupported op"
CAT_DTYPE = "unsupported dtype"
CAT_TYPE = "non-tensor value"
CAT_OPSET = "opset outside 13-20"
CAT_RANDOM = "random output"
CAT_CONST = "compile-time operand cannot be made constant"
CAT_FORM = "unsupported attribute form"
CATEGORIES = [CAT_OP, CAT_FORM, CAT_DTYPE, CAT_TYPE, CAT_OPSET, CAT_RANDOM, CAT_CONST]


def generate_node_data(out_dir):
    """Writes the installed onnx's backend test data (node/, simple/, ...) under out_dir.

    The generators of onnx 1.12 still use the NumPy aliases removed in NumPy 1.24, so they are
    restored first; generation runs in-process through the same function as
    `python -m onnx.backend.test.cmd_tools generate-data`.
    """
    np.float = float
    np.int = int
    np.bool = bool
    np.object = object
    from onnx.backend.test import cmd_tools
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd_tools.generate_data(argparse.Namespace(output=out_dir, op_type=None))


class Case:
    """One node test case and what the harness decided about it."""

    def __init__(self, name, path):
        self.name = name
        self.path = path
        self.model = onnx.load_model(os.path.join(path, "model.onnx"))
        self.ops = sorted({op_key(n) for n in self.model.graph.node})
        self.reasons = collections.OrderedDict()  # category -> list of details
        self.freeze = []  # graph inputs moved into initializers
        self.bumped_from = None  # original opset when the model was raised to MIN_OPSET
        self.data_sets = None  # [(inputs, outputs)] as numpy arrays, loaded for selected cases

    def skip(self, category, detail):
        self.reasons.setdefault(category, [])
        if detail not in self.reasons[category]:
            self.reasons[category].append(detail)

    @property
    def selected(self):
        return not self.reasons

    @property
    def primary(self):
        for cat in CATEGORIES:
            if cat in self.reasons:
                return cat
        return None


def op_key(node):
    if node.domain in ("", "ai.onnx"):
        return node.op_type
    return f"{node.domain}.{node.op_type}"


def dtype_name(elem_type):
    return onnx.TensorProto.DataType.Name(elem_type).lower()


def default_opset(model):
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry
    return None


def check_opset(case, bump):
    entry = default_opset(case.model)
    if entry is None:
        case.skip(CAT_OPSET, "no default-domain opset")
        return
    if e2e_util.MIN_OPSET <= entry.version <= e2e_util.MAX_OPSET:
        return
    if bump and entry.version < e2e_util.MIN_OPSET and bump_opset(case, entry):
        return
    case.skip(CAT_OPSET, f"opset {entry.version}")


def bump_opset(case, entry):
    """Raises an old model's opset to MIN_OPSET when that changes nothing: every node's op has
    the same schema version at both opsets (e.g. And-7, Not-1, Range-11), so the test checks
    exactly the semantics it was written for. Returns whether the model was changed."""
    old = entry.version
    for node in case.model.graph.node:
        try:
            at_old = onnx.defs.get_schema(node.op_type, old, node.domain).since_version
            at_new = onnx.defs.get_schema(node.op_type, e2e_util.MIN_OPSET,
                                          node.domain).since_version
        except onnx.defs.SchemaError:
            return False
        if at_old != at_new:
            return False
    bumped = copy.deepcopy(case.model)
    default_opset(bumped).version = e2e_util.MIN_OPSET
    # Opset 13 needs IR version 7; IR >= 4 also lets initializers stay out of the graph inputs.
    bumped.ir_version = max(bumped.ir_version, 7)
    try:
        onnx.checker.check_model(bumped)
    except onnx.checker.ValidationError:
        return False
    case.model = bumped
    case.bumped_from = old
    return True


def check_ops(case):
    for node in case.model.graph.node:
        key = op_key(node)
        if key not in e2e_util.SUPPORTED_OPS:
            case.skip(CAT_OP, key)


def check_value_type(case, value_info):
    kind = value_info.type.WhichOneof("value")
    if kind != "tensor_type":
        case.skip(CAT_TYPE, (kind or "untyped").replace("_type", ""))
        return
    elem = value_info.type.tensor_type.elem_type
    if elem not in e2e_util.SUPPORTED_DTYPES:
        case.skip(CAT_DTYPE, dtype_name(elem))


def check_dtypes(case):
    """Every tensor the model touches must be float32/int64/int32/bool: graph inputs/outputs,
    initializers, constants, Cast targets and (via onnx's shape inference) intermediates."""
    graph = case.model.graph
    for vi in graph.input:
        check_value_type(case, vi)
    for vi in graph.output:
        check_value_type(case, vi)
    for init in graph.initializer:
        if init.data_type not in e2e_util.SUPPORTED_DTYPES:
            case.skip(CAT_DTYPE, dtype_name(init.data_type))
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                if attr.t.data_type not in e2e_util.SUPPORTED_DTYPES:
                    case.skip(CAT_DTYPE, dtype_name(attr.t.data_type))
            elif attr.type in (onnx.AttributeProto.STRING, onnx.AttributeProto.STRINGS) and \
                    node.op_type == "Constant":
                case.skip(CAT_DTYPE, "string")
            elif attr.type == onnx.AttributeProto.SPARSE_TENSOR:
                case.skip(CAT_DTYPE, "sparse tensor")
        if node.op_type == "Cast":
            to = next((a.i for a in node.attribute if a.name == "to"), None)
            if to is not None and to not in e2e_util.SUPPORTED_DTYPES:
                case.skip(CAT_DTYPE, dtype_name(to))
    try:
        inferred = onnx.shape_inference.infer_shapes(case.model)
    except Exception:  # inference failures are the compiler's business, not a skip reason
        return
    for vi in inferred.graph.value_info:
        check_value_type(case, vi)


def find_frozen_inputs(case):
    """Finds the graph inputs that compile-time operands are computed from (see module doc).

    Walks back from every compile-time operand through its producers. Initializers, Constant
    nodes and Shape nodes (whose result depends only on the static input shape) end a walk;
    graph inputs reached are frozen.
    """
    graph = case.model.graph
    producers = {out: node for node in graph.node for out in node.output}
    initializers = {init.name for init in graph.initializer}
    inputs = [vi.name for vi in graph.input]
    frozen = set()
    seen = set()

    def walk(name, consumer):
        if not name or name in seen:
            return
        seen.add(name)
        if name in initializers:
            return
        if name in inputs:
            frozen.add(name)
            return
        node = producers.get(name)
        if node is None:
            case.skip(CAT_CONST, f"{consumer} reads {name}, which nothing produces")
            return
        if node.op_type in ("Shape", "Constant"):
            return
        for inp in node.input:
            walk(inp, consumer)

    for node in graph.node:
        for pos in e2e_util.COMPILE_TIME_OPERANDS.get(node.op_type, ()):
            if pos < len(node.input):
                walk(node.input[pos], f"{node.op_type} {node.name or node.output[0]!r}")
    case.freeze = [name for name in inputs if name in frozen]


def load_data_sets(case):
    graph = case.model.graph
    sets = []
    for ds in sorted(glob.glob(os.path.join(case.path, "test_data_set_*"))):
        ins = [load_tensor(os.path.join(ds, f"input_{i}.pb")) for i in range(len(graph.input))]
        outs = [load_tensor(os.path.join(ds, f"output_{i}.pb")) for i in range(len(graph.output))]
        sets.append((ins, outs))
    case.data_sets = sets


def load_tensor(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


# The window functions' cosine sums (ONNX HannWindow, HammingWindow, BlackmanWindow), in
# float64 from their definitions: sum of a_k cos(2 pi k n / N) over n < size, with N = size
# (periodic) or size - 1 (symmetric).
WINDOW_COEFFICIENTS = {"hann": (0.5, -0.5), "hamming": (25 / 46, -21 / 46),
                       "blackman": (0.42, -0.5, 0.08)}
WINDOW_CASE = re.compile(r"test_(hann|hamming|blackman)window(_symmetric)?_expanded$")
# Cases whose stored reference was replaced, with why (listed in the report).
REPLACED_REFERENCES = {}


def exact_window_references(case):
    """onnx 1.12 stores outputs for the expanded window-function tests that are off by up to
    ~5e-5 from the windows' definitions (e.g. hann, size 10, n = 4: 0.9044867 against
    0.5 - 0.5 cos(0.8 pi) = 0.9045085): an exact kernel fails them at rtol 1e-5. Where the
    stored output differs from the definition by more than the comparison's tolerance, the
    case is compared with the definition instead, and the report says so."""
    match = WINDOW_CASE.match(case.name)
    if not match:
        return
    coefficients = WINDOW_COEFFICIENTS[match.group(1)]
    for index, (inputs, outputs) in enumerate(case.data_sets):
        size = len(outputs[0])
        period = size - 1 if match.group(2) else size
        n = np.arange(size, dtype=np.float64)
        exact = sum(a * np.cos(2 * np.pi * k * n / period) for k, a in enumerate(coefficients))
        exact = exact.astype(outputs[0].dtype)
        if not np.allclose(outputs[0], exact, rtol=RTOL, atol=ATOL):
            deviation = float(np.max(np.abs(outputs[0].astype(np.float64) - exact)))
            REPLACED_REFERENCES[case.name] = (
                f"stored output off the window's definition by up to {deviation:.2g}; "
                "compared with the definition (float64, rounded)")
            case.data_sets[index] = (inputs, [exact])


def check_random_dropout(case):
    """Training-mode Dropout with ratio > 0 draws a random mask, which no other implementation
    can reproduce bit for bit."""
    graph = case.model.graph
    values = dict(zip([vi.name for vi in graph.input], case.data_sets[0][0]))
    values.update({init.name: numpy_helper.to_array(init) for init in graph.initializer})
    for node in graph.node:
        if node.op_type != "Dropout":
            continue
        training = node.input[2] if len(node.input) > 2 else ""
        if not training:
            continue
        ratio_name = node.input[1] if len(node.input) > 1 else ""
        ratio = float(values[ratio_name]) if ratio_name in values else 0.5
        if training in values and bool(values[training]) and ratio > 0:
            case.skip(CAT_RANDOM, f"training-mode Dropout with ratio {ratio}")


def check_forms(case):
    """Attribute values of supported ops that shardc refuses with a clear error (the case would
    only test that refusal)."""
    for node in case.model.graph.node:
        if node.op_type == "Pad":
            mode = next((a.s.decode() for a in node.attribute if a.name == "mode"), "constant")
            if mode != "constant":
                case.skip(CAT_FORM, f"Pad mode '{mode}' (constant only)")
        if node.op_type == "MaxPool" and len(node.output) > 1 and node.output[1]:
            case.skip(CAT_FORM, "MaxPool's Indices output")


def classify(case, bump):
    check_ops(case)
    check_forms(case)
    check_dtypes(case)
    check_opset(case, bump and not case.reasons)
    if case.reasons:
        return
    find_frozen_inputs(case)
    if case.reasons:
        return
    load_data_sets(case)
    check_random_dropout(case)
    exact_window_references(case)


def frozen_model(case, inputs):
    """The case's model with case.freeze moved from graph inputs into initializers."""
    model = copy.deepcopy(case.model)
    values = dict(zip([vi.name for vi in case.model.graph.input], inputs))
    keep = [vi for vi in model.graph.input if vi.name not in case.freeze]
    del model.graph.input[:]
    model.graph.input.extend(keep)
    for name in case.freeze:
        model.graph.initializer.append(numpy_helper.from_array(values[name], name))
    return model


def run_case(case, args, work):
    """Compiles and runs one selected case; returns (passed, message)."""
    case_dir = os.path.join(work, case.name)
    shutil.rmtree(case_dir, ignore_errors=True)
    os.makedirs(case_dir)
    graph = case.model.graph
    input_names = [vi.name for vi in graph.input]
    output_names = [vi.name for vi in graph.output]

    bundle = None
    for ds_index, (inputs, outputs) in enumerate(case.data_sets):
        if case.freeze or bundle is None:
            # The model as tested (opset raised, inputs frozen) is kept next to the bundle so
            # that a failure can be reproduced by hand.
            model_path = os.path.join(case_dir, f"model_{ds_index}.onnx")
            onnx.save_model(frozen_model(case, inputs) if case.freeze else case.model, model_path)
            bundle = os.path.join(case_dir, f"case_{ds_index}.shard")
            res = e2e_util.run_tool([args.shardc, model_path, "--mode", "forward", "-o", bundle],
                                    args.timeout)
            if not res.ok:
                return False, res.describe()

        data_dir = os.path.join(case_dir, f"data_{ds_index}")
        out_dir = os.path.join(case_dir, f"outputs_{ds_index}")
        os.makedirs(data_dir)
        os.makedirs(out_dir)
        for name, value in zip(input_names, inputs):
            if name not in case.freeze:
                np.save(os.path.join(data_dir, npy_name(name) + ".npy"), value)
        res = e2e_util.run_tool([args.shardrun, bundle, "--data", data_dir, "--outputs", out_dir],
                                args.timeout)
        if not res.ok:
            return False, f"data set {ds_index}: {res.describe()}"

        errors = e2e_util.compare_outputs(out_dir, zip(output_names, outputs), RTOL, ATOL)
        if errors:
            return False, f"data set {ds_index}: " + "; ".join(errors)
    return True, ""


def per_op_table(cases, results):
    """Cases per supported op: run, passed, and why the others were skipped.

    A case counts for every supported op it uses, provided all its ops are supported (cases
    with an unsupported op are listed under "By unsupported op" instead).
    """
    lines = ["## Per supported op", "",
             "Cases whose ops are all supported, counted once for each op they use.", "",
             "| op | run | passed | skipped | skip reasons |", "|---|---|---|---|---|"]
    for op in sorted(e2e_util.SUPPORTED_OPS):
        mine = [c for c in cases if op in c.ops and CAT_OP not in c.reasons]
        run = [c for c in mine if c.selected and c.name in results]
        passed = [c for c in run if results[c.name][0] is True]
        skipped = [c for c in mine if not c.selected]
        reasons = collections.Counter(d for c in skipped for ds in c.reasons.values() for d in ds)
        text = ", ".join(f"{d} ({n})" for d, n in sorted(reasons.items())) or "-"
        lines.append(f"| {op} | {len(run)} | {len(passed)} | {len(skipped)} | {text} |")
    lines.append("")
    return lines


def format_report(cases, results, args, elapsed):
    selected = [c for c in cases if c.selected]
    skipped = [c for c in cases if not c.selected]
    passed = [c for c in selected if results.get(c.name, (None,))[0] is True]
    failed = [c for c in selected if results.get(c.name, (None,))[0] is False]
    lines = [f"# ONNX node-test conformance (onnx {onnx.__version__})", ""]
    if args.filter:
        lines.append(f"Filter: `{args.filter}`")
        lines.append("")
    lines += [
        f"- node test cases: {len(cases)}",
        f"- selected: {len(selected)}" + (" (dry run: not executed)" if args.dry_run else ""),
    ]
    if not args.dry_run:
        lines += [f"- run: {len(passed) + len(failed)}",
                  f"- passed: {len(passed)}",
                  f"- failed: {len(failed)}"]
    lines += [
        f"- skipped: {len(skipped)}",
        f"- comparison: float outputs `np.allclose(out, ref, rtol={RTOL}, atol={ATOL}, "
        "equal_nan=True)`; int/bool outputs exactly; shape and dtype exactly",
    ]
    if not args.dry_run:
        lines.append(f"- time: {elapsed:.0f} s with {args.jobs} workers")
    lines.append("")

    if failed:
        lines += ["## Failures", ""]
        for c in failed:
            msg = results[c.name][1].replace("\n", " | ")
            lines.append(f"- `{c.name}` ({', '.join(c.ops)}): {msg}")
        lines.append("")

    lines += per_op_table(cases, results)

    bumped = [c for c in selected if c.bumped_from is not None]
    if bumped:
        lines += [f"## Run at opset {e2e_util.MIN_OPSET}", "",
                  f"These models declare an opset below {e2e_util.MIN_OPSET}, but each of their "
                  f"ops has the same definition there as at opset {e2e_util.MIN_OPSET}, so they "
                  f"were run with the opset raised to {e2e_util.MIN_OPSET} (--no-opset-bump "
                  "skips them instead).", ""]
        for c in bumped:
            lines.append(f"- `{c.name}` (opset {c.bumped_from}; {', '.join(c.ops)})")
        lines.append("")

    frozen = [c for c in selected if c.freeze]
    if frozen:
        lines += ["## Inputs fed as initializers (compile-time operands)", "",
                  "These graph inputs determine shapes (or Dropout's mode), so they were moved "
                  "into the model as initializers holding the test values.", ""]
        for c in frozen:
            lines.append(f"- `{c.name}`: {', '.join(c.freeze)}")
        lines.append("")

    lines += ["## Skipped", "", "| primary reason | cases |", "|---|---|"]
    by_primary = collections.Counter(c.primary for c in skipped)
    for cat in CATEGORIES:
        if by_primary[cat]:
            lines.append(f"| {cat} | {by_primary[cat]} |")
    lines.append("")

    def group(category, title, note):
        groups = collections.defaultdict(list)
        for c in skipped:
            for detail in c.reasons.get(category, []):
                groups[detail].append(c)
        if not groups:
            return
        lines.extend([f"### {title}", "", note, "", "| reason | cases | ops in those cases | "
                      "case names |", "|---|---|---|---|"])
        for detail, cs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            ops = sorted({op for c in cs for op in c.ops})
            names = ", ".join(c.name for c in cs[:6]) + (", ..." if len(cs) > 6 else "")
            lines.append(f"| {detail} | {len(cs)} | {' '.join(ops)} | {names} |")
        lines.append("")

    group(CAT_OP, "By unsupported op",
          "A case counts once for every unsupported op it contains.")
    group(CAT_DTYPE, "By unsupported dtype",
          "A case counts once for every unsupported dtype it uses (cases with unsupported ops "
          "included).")
    group(CAT_TYPE, "Non-tensor values", "Sequence/optional/map values are not supported.")
    group(CAT_OPSET, "By opset", f"Default-domain opset outside {e2e_util.MIN_OPSET}-"
          f"{e2e_util.MAX_OPSET} (cases with other reasons included).")
    group(CAT_RANDOM, "Random outputs", "Outputs drawn from a random generator.")
    group(CAT_CONST, "Compile-time operands that cannot be made constant", "")
    group(CAT_FORM, "Unsupported attribute forms", "Refused by shardc with an error naming the form.")

    if REPLACED_REFERENCES:
        lines += ["### Stored references replaced", ""]
        for name, why in sorted(REPLACED_REFERENCES.items()):
            lines.append(f"- `{name}`: {why}")
        lines.append("")

    only_opset = [c for c in skipped if list(c.reasons) == [CAT_OPSET]]
    if only_opset:
        lines += ["### Skipped only because of the opset", "",
                  "These cases use only supported ops and dtypes.", ""]
        for c in only_opset:
            lines.append(f"- `{c.name}` ({', '.join(c.reasons[CAT_OPSET])}; "
                         f"{', '.join(c.ops)})")
        lines.append("")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shardc", help="path of the shardc binary")
    parser.add_argument("--shardrun", help="path of the shardrun binary")
    parser.add_argument("--work", required=True, help="scratch directory (recreated)")
    parser.add_argument("--report", help="also write the summary (markdown) to this file")
    parser.add_argument("--filter", help="only cases whose name matches this regex (re.search)")
    parser.add_argument("--jobs", type=int, default=2, help="cases run in parallel (default 2)")
    parser.add_argument("--timeout", type=int, default=TOOL_TIMEOUT_S,
                        help="seconds allowed per shardc/shardrun call (default %(default)s)")
    parser.add_argument("--no-opset-bump", action="store_true",
                        help=f"skip models with opset < {e2e_util.MIN_OPSET} even when their ops "
                        "are unchanged at that opset")
    parser.add_argument("--dry-run", action="store_true",
                        help="only generate and select cases; print the statistics")
    args = parser.parse_args()
    if not args.dry_run and not (args.shardc and args.shardrun):
        parser.error("--shardc and --shardrun are required (or --dry-run)")

    work = os.path.abspath(args.work)
    data_dir = os.path.join(work, "data")
    runs_dir = os.path.join(work, "cases")
    generate_node_data(data_dir)
    shutil.rmtree(runs_dir, ignore_errors=True)
    os.makedirs(runs_dir)

    node_root = os.path.join(data_dir, "node")
    names = sorted(os.listdir(node_root))
    if args.filter:
        names = [n for n in names if re.search(args.filter, n)]
    cases = []
    for name in names:
        case = Case(name, os.path.join(node_root, name))
        classify(case, bump=not args.no_opset_bump)
        cases.append(case)
    selected = [c for c in cases if c.selected]

    results = {}
    start = time.time()
    if not args.dry_run:
        def task(case):
            try:
                return run_case(case, args, runs_dir)
            except Exception:  # a harness bug must show up as a failure, not stop the run
                return False, "harness error: " + traceback.format_exc()

        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {pool.submit(task, c): c for c in selected}
            done = 0
            for fut in concurrent.futures.as_completed(futures):
                case = futures[fut]
                results[case.name] = fut.result()
                done += 1
                status = "PASS" if results[case.name][0] else "FAIL"
                print(f"[{done}/{len(selected)}] {status} {case.name}", flush=True)
    report = format_report(cases, results, args, time.time() - start)
    print()
    print(report, end="")
    if args.report:
        os.makedirs(os.path.dirname(os.path.abspath(args.report)), exist_ok=True)
        with open(args.report, "w") as f:
            f.write(report)

    if not selected:
        print("error: no case selected", file=sys.stderr)
        return 1
    if args.dry_run:
        return 0
    return 0 if all(ok for ok, _ in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
