"""End-to-end forward tests on the exported PyTorch models.

    python3 run_model_tests.py --shardc PATH --shardrun PATH --work DIR [--model NAME ...]

For each model of tests/models (tiny_gpt, mlp_classifier, bert_encoder): export it with its
script into DIR/<model>, compile it with `shardc --mode forward` (passing the --input-shape flags
listed in input_shapes.txt when the model has symbolic dims), run the bundle with shardrun on the
sample inputs and compare every output with PyTorch's: float outputs within
np.allclose(rtol=1e-5, atol=1e-6), others exactly, shape and dtype exactly. The max absolute and
relative error of every output is reported.

Also checks that the IR shardc imports for the tiny GPT (`shardc model.onnx --emit=mlir`) is fully
static: no `?` dim in any shaped type and no shape computation left (graph.shape,
graph.constant_of_shape, graph.range), i.e. the importer resolved the Shape -> Gather -> Concat ->
Reshape subgraphs of the export.

Exit status 1 if anything fails.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402
from e2e_util import npy_name  # noqa: E402

MODELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "models")
MODELS = ["tiny_gpt", "mlp_classifier", "bert_encoder"]
STATIC_IR_MODELS = {"tiny_gpt"}
RTOL = 1e-5
ATOL = 1e-6

# A dynamic dim in an MLIR shaped type: tensor<?x16xf32>, tensor<2x?xf32>, tensor<?xi64>.
DYNAMIC_DIM = re.compile(r"[<x]\?(?=[x>])")
SHAPE_OPS = re.compile(r"\bgraph\.(shape|constant_of_shape|range)\b")


class ModelFailure(Exception):
    pass


def export(model, out_dir, timeout):
    script = os.path.join(MODELS_DIR, f"export_{model}.py")
    try:
        proc = subprocess.run([sys.executable, script, "--out", out_dir], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ModelFailure(f"export timed out after {timeout} s")
    if proc.returncode != 0:
        raise ModelFailure("export failed:\n" + proc.stdout.decode(errors="replace"))


def read_input_shapes(out_dir):
    """The `--input-shape NAME=AxB` flags listed in input_shapes.txt (none if it is absent)."""
    path = os.path.join(out_dir, "input_shapes.txt")
    if not os.path.exists(path):
        return []
    flags = []
    with open(path) as f:
        for line in f:
            if line.strip():
                flags += ["--input-shape", line.strip()]
    return flags


def check_static_ir(shardc, model_path, timeout):
    res = e2e_util.run_tool([shardc, model_path, "--emit=mlir"], timeout)
    if not res.ok:
        raise ModelFailure("--emit=mlir: " + res.describe())
    ir = res.stdout
    if "tensor<" not in ir:
        raise ModelFailure("--emit=mlir printed no tensor types:\n" + ir[:2000])
    problems = []
    for lineno, line in enumerate(ir.splitlines(), 1):
        found = [what for what, regex in (("dynamic dim", DYNAMIC_DIM), ("shape op", SHAPE_OPS))
                 if regex.search(line)]
        if found:
            problems.append(f"line {lineno}: {' and '.join(found)}: {line.strip()}")
    if problems:
        more = f"\n  ... {len(problems) - 10} more" if len(problems) > 10 else ""
        raise ModelFailure("--emit=mlir is not fully static:\n  " + "\n  ".join(problems[:10])
                           + more)
    return f"--emit=mlir: static ({len(ir.splitlines())} lines)"


def test_model(model, args):
    """Runs one model; returns report lines. Raises ModelFailure."""
    out_dir = os.path.join(args.work, model)
    export(model, out_dir, args.timeout)
    model_path = os.path.join(out_dir, "model.onnx")
    proto = onnx.load_model(model_path, load_external_data=False)
    unsupported = sorted({n.op_type for n in proto.graph.node} - e2e_util.SUPPORTED_OPS)
    if unsupported:
        raise ModelFailure(f"export contains unsupported ops {unsupported}")

    lines = []
    if model in STATIC_IR_MODELS:
        lines.append(check_static_ir(args.shardc, model_path, args.timeout))

    bundle = os.path.join(out_dir, "model.shard")
    shutil.rmtree(bundle, ignore_errors=True)  # a stale bundle must not stand in for a new one
    flags = read_input_shapes(out_dir)
    res = e2e_util.run_tool(
        [args.shardc, model_path, "--mode", "forward", "-o", bundle] + flags, args.timeout)
    if not res.ok:
        raise ModelFailure("compile: " + res.describe())

    outputs_dir = os.path.join(out_dir, "outputs")
    os.makedirs(outputs_dir, exist_ok=True)
    for stale in os.listdir(outputs_dir):
        os.remove(os.path.join(outputs_dir, stale))
    res = e2e_util.run_tool([args.shardrun, bundle, "--data", os.path.join(out_dir, "inputs"),
                             "--outputs", outputs_dir], args.timeout)
    if not res.ok:
        raise ModelFailure("run: " + res.describe())

    errors = []
    for output in proto.graph.output:
        fname = npy_name(output.name) + ".npy"
        expected = np.load(os.path.join(out_dir, "expected", fname))
        actual, err = e2e_util.load_output(outputs_dir, output.name)
        if err:
            errors.append(err)
            continue
        err, max_abs, max_rel = e2e_util.compare_output(output.name, actual, expected, RTOL,
                                                        ATOL)
        if err:
            errors.append(err)
        elif max_abs is None:
            lines.append(f"output {output.name} {list(expected.shape)} {expected.dtype}: exact")
        else:
            # How much of the allowed |diff| <= atol + rtol*|ref| the worst element uses: shows
            # how close a passing model is to failing.
            diff = np.abs(actual.astype(np.float64) - expected)
            used = float(np.nanmax(diff / (ATOL + RTOL * np.abs(expected)))) if diff.size else 0
            lines.append(f"output {output.name} {list(expected.shape)} {expected.dtype}: "
                         f"max abs err {max_abs:.3g}, max rel err {max_rel:.3g}, "
                         f"{100 * used:.0f}% of the tolerance used")
    if errors:
        raise ModelFailure("\n".join(errors))
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shardc", required=True)
    parser.add_argument("--shardrun", required=True)
    parser.add_argument("--work", required=True, help="scratch directory")
    parser.add_argument("--model", action="append", choices=MODELS,
                        help="only this model (repeatable; default: all)")
    parser.add_argument("--timeout", type=int, default=300,
                        help="seconds allowed per export/shardc/shardrun call")
    args = parser.parse_args()
    args.work = os.path.abspath(args.work)
    os.makedirs(args.work, exist_ok=True)

    failed = []
    for model in args.model or MODELS:
        try:
            lines = test_model(model, args)
        except ModelFailure as exc:
            failed.append(model)
            print(f"FAIL {model}")
            for line in str(exc).splitlines():
                print(f"  {line}")
            continue
        print(f"PASS {model}")
        for line in lines:
            print(f"  {line}")
    total = len(args.model or MODELS)
    print(f"{total - len(failed)} passed, {len(failed)} failed"
          f" (tolerance: rtol={RTOL}, atol={ATOL})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
