"""Planned against measured peak memory per rank, end to end.

    test_memory_plan.py --shardc PATH --shardrun PATH --work DIR

For the MLP classifier, the tiny GPT and the BERT-like encoder, each compiled with
`shardc --mode train` (also the MLP with --grad-clip) and `--mode forward`:

  plan.txt  the memory section adds up: the planned peak is arena + weights + workspace + step
            inputs + step outputs, the arena's lines (bytes live per role at its peak, and the
            unused rest) add up to the arena, the weights' lines to the weights
  run       shardrun (train: `--steps 4` on the model's sample batch; forward: one run) prints
            `memory: planned peak N bytes, measured peak M bytes (arena .., weights .., ...)`
            with N == M == plan.txt's total and each measured part equal to plan.txt's; a
            training run reports 0 allocations after the first step and the bytes its data
            source holds beside the plan

and one negative case:

  mismatch  a program.pb whose planned_peak_bytes was altered (with protoc): shardrun exits 1
            on its checksum; re-signed, it exits 1
            with one `shardrun: error:` line saying the measured peak differs from the plan
            (skipped without protoc)
  data_before_arena  a training bundle whose arena was edited to 4 GB (re-signed) and a missing
            x.npy, under a 1 GiB address-space limit: the missing file is the error
  no_weights_graph_memory  `shardc --no-weights --mode forward` of a model whose one frozen
            weight is [W, W] floats with no data on disk (W = 20000: 1.6 GB; W = 100000: 40 GB),
            and with W = 20000 with its data on disk, under a 1 GiB data-segment limit: it plans
            (exit 0), plan.txt's weights region counts the whole weight and no weights.bin is
            written; planning reads and holds no weight bytes

  large_constant_filled  a model of about 100 bytes whose ConstantOfShape fills [W, W] floats
            (W = 100000: 40 GB), compiled with and without --no-weights under a 1 GiB heap
            limit: it plans (exit 0), the fill is an `expand` whose result the arena counts, and
            weights.bin holds at most one value's bytes (none is written with --no-weights) (a bundle used to store the constant
            expanded: std::bad_alloc, or gigabytes of weights.bin); W = 4096 (64 MiB) runs, its
            output exact and its measured peak the planned one
  large_constant_trains  a PyTorch module adding torch.full((batch, 1024), 0.5) (32 MiB at 8192
            rows), exported with dynamic axes (a ConstantOfShape) and without (a 32 MiB Constant
            node), trains 3 SGD steps on one rank, dp=2
            and zero3 with PyTorch's losses (relative 1e-5), the constant filled at run time
            (an expand in plan.txt, not in weights.bin)

Prints PASS/FAIL per case, the planned and measured peaks, and `N passed, M failed`.
"""

import contextlib
import os
import re
import resource
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, os.pardir, os.pardir, "runtime", "program")
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402

STEPS = 4
TOP_LEVEL = ["arena", "weights", "workspace", "step inputs", "step outputs"]

# name, model, shardc mode, extra shardc flags
CONFIGS = [
    ("mlp_train", "mlp_classifier", "train", []),
    ("mlp_train_clip", "mlp_classifier", "train", ["--grad-clip", "0.05"]),
    ("mlp_forward", "mlp_classifier", "forward", []),
    ("tiny_gpt_train", "tiny_gpt", "train", []),
    ("tiny_gpt_forward", "tiny_gpt", "forward", []),
    ("bert_encoder_train", "bert_encoder", "train", []),
    ("bert_encoder_forward", "bert_encoder", "forward", []),
]

MEMORY_LINE = re.compile(r"^shardrun: memory: planned peak (\d+) bytes, measured peak (\d+) bytes "
                         r"\(([^)]*)\)(.*)$", re.M)
BYTES_LINE = re.compile(r"^( +)([^:]+): (\d+) bytes")


def export(model, work):
    return e2e_util.export_test_model(model, os.path.join(work, "models", model))


def read_plan_memory(bundle):
    """(total, {part: bytes}, {part: {line: bytes}}) from plan.txt's memory section."""
    total, parts, details = None, {}, {}
    current = None
    for line in open(os.path.join(bundle, "plan.txt")):
        if line.startswith("memory: planned peak "):
            total = int(line.split()[3])
            continue
        if total is None:
            continue
        m = BYTES_LINE.match(line)
        if not m:
            if not line.startswith(" "):
                break  # the end of the memory section
            continue
        indent, name, value = len(m.group(1)), m.group(2), int(m.group(3))
        if indent == 2:
            current = name
            parts[name] = value
            details[name] = {}
        elif indent == 4 and current is not None:
            details[current][name] = value
    return total, parts, details


def check_plan(bundle):
    """plan.txt's memory section adds up; returns (error, total, parts)."""
    total, parts, details = read_plan_memory(bundle)
    if total is None:
        return "plan.txt has no 'memory: planned peak' line", None, None
    if list(parts) != TOP_LEVEL:
        return f"plan.txt memory parts are {list(parts)}, expected {TOP_LEVEL}", None, None
    if sum(parts.values()) != total:
        return f"plan.txt: parts {parts} add up to {sum(parts.values())}, not {total}", None, None
    for part in ("arena", "weights"):
        if sum(details[part].values()) != parts[part]:
            return (f"plan.txt: the {part} lines {details[part]} add up to "
                    f"{sum(details[part].values())}, not {parts[part]}"), None, None
    return None, total, parts


def run_config(name, model, mode, flags, args):
    work = os.path.join(args.work, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model_dir = export(model, args.work)
    bundle = os.path.join(work, f"{mode}.shard")
    res = e2e_util.run_tool([args.shardc, os.path.join(model_dir, "model.onnx"), "--mode", mode,
                             "-o", bundle, *e2e_util.input_shape_flags(model_dir), *flags], args.timeout)
    if not res.ok:
        return f"compile: {res.describe()}"
    err, total, parts = check_plan(bundle)
    if err:
        return err

    # The sample batch of the export is the data set: one batch, reused every step.
    data = os.path.join(model_dir, "inputs")
    if mode == "train":
        argv = [args.shardrun, bundle, "--steps", str(STEPS), "--data", data]
    else:
        argv = [args.shardrun, bundle, "--data", data, "--outputs", os.path.join(work, "out")]
    res = e2e_util.run_tool(argv, args.timeout)
    if not res.ok:
        return f"run: {res.describe()}"
    m = MEMORY_LINE.search(res.stderr)
    if not m:
        return f"shardrun printed no memory line: {res.stderr.strip()[-400:]}"
    planned, measured = int(m.group(1)), int(m.group(2))
    if planned != measured:
        return f"planned peak {planned} != measured peak {measured}"
    if planned != total:
        return f"shardrun's planned peak {planned} != plan.txt's {total}"
    measured_parts = {}
    for item in m.group(3).split(", "):
        key, _, value = item.rpartition(" ")
        measured_parts[key] = int(value)
    if measured_parts != parts:
        return f"measured {measured_parts} != planned {parts}"
    rest = m.group(4)
    if mode == "train":
        if "; 0 allocations after the first step" not in rest:
            return f"steps after the first allocated: {rest.strip()}"
        if "the data source holds" not in rest:
            return f"no data source bytes reported: {rest.strip()}"
    return None, f"planned {planned} bytes = measured {measured} bytes"


def compile_and_edit(args, case, mode, field, edit):
    """Compiles the MLP in `mode` into WORK/CASE and rewrites the one `field` of its program.pb
    with `edit` (old value -> new value) through protoc's text form; returns (bundle, model
    directory) or an error string."""
    work = os.path.join(args.work, case)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model_dir = export("mlp_classifier", args.work)
    bundle = os.path.join(work, mode + ".shard")
    res = e2e_util.run_tool([args.shardc, os.path.join(model_dir, "model.onnx"), "--mode",
                             mode, "-o", bundle], args.timeout)
    if not res.ok:
        return f"compile: {res.describe()}"
    protoc = shutil.which("protoc")
    program = os.path.join(bundle, "program.pb")
    proto = ["-I", PROTO_DIR, os.path.join(PROTO_DIR, "program.proto")]
    text = subprocess.run([protoc, "--decode=shardc.program.Bundle", *proto],
                          stdin=open(program, "rb"), stdout=subprocess.PIPE, check=True).stdout
    altered, count = re.subn(field.encode() + rb": (\d+)",
                             lambda m: b"%s: %d" % (field.encode(), edit(int(m.group(1)))), text)
    if count != 1:
        return f"program.pb has {count} {field} fields, expected 1"
    encoded = subprocess.run([protoc, "--encode=shardc.program.Bundle", *proto], input=altered,
                             stdout=subprocess.PIPE, check=True).stdout
    with open(program, "wb") as f:
        f.write(encoded)
    return bundle, model_dir


def case_mismatch(args):
    if shutil.which("protoc") is None:
        return None, "skipped (no protoc to edit program.pb)"
    edited = compile_and_edit(args, "mismatch", "forward", "planned_peak_bytes",
                              lambda peak: peak + 64)
    if isinstance(edited, str):
        return edited
    bundle, model_dir = edited
    work = os.path.dirname(bundle)
    run = [args.shardrun, bundle, "--data", os.path.join(model_dir, "inputs"), "--outputs",
           os.path.join(work, "out")]
    # The edit alone is caught as damage, before anything runs.
    res = e2e_util.run_tool(run, args.timeout)
    errors = [line for line in res.stderr.splitlines() if line.startswith("shardrun: error:")]
    if res.returncode != 1 or len(errors) != 1 or "checksum mismatch" not in errors[0]:
        return f"expected exit 1 and one checksum error for the edited program: {res.describe()}"
    # Re-signed, the program runs, and its planned peak disagrees with the measured one.
    e2e_util.write_program_checksum(bundle)
    res = e2e_util.run_tool(run, args.timeout)
    errors = [line for line in res.stderr.splitlines() if line.startswith("shardrun: error:")]
    if res.returncode != 1 or len(errors) != 1 or "differs from the planned peak" not in errors[0]:
        return f"expected exit 1 and one error line about the peak: {res.describe()}"
    return None, errors[0]


def case_data_before_arena(args):
    """A training run whose data file is missing reports it before the arena is allocated: the
    bundle's arena is edited (with protoc, then re-signed) to 4 GB and shardrun runs under a
    1 GiB address-space limit, so allocating first would fail on memory instead."""
    if shutil.which("protoc") is None:
        return None, "skipped (no protoc to edit program.pb)"
    edited = compile_and_edit(args, "data_before_arena", "train", "arena_bytes",
                              lambda arena: 4000000000)
    if isinstance(edited, str):
        return edited
    bundle, model_dir = edited
    work = os.path.dirname(bundle)
    e2e_util.write_program_checksum(bundle)
    data = os.path.join(work, "data")
    os.makedirs(data)
    shutil.copy(os.path.join(model_dir, "inputs", "y.npy"), data)  # x.npy is missing

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    res = subprocess.run([args.shardrun, bundle, "--steps", "1", "--data", data],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         timeout=args.timeout, preexec_fn=limit_memory)
    errors = [line for line in res.stderr.splitlines() if line.startswith("shardrun: error:")]
    if res.returncode != 1 or len(errors) != 1 or "x.npy" not in errors[0]:
        return f"expected one error naming the missing x.npy, got exit {res.returncode}: " \
               f"{res.stderr.strip()!r}"
    return None, errors[0]


def case_no_weights_graph_memory(args):
    import onnx
    from onnx import TensorProto, helper
    details = []
    # The data absent, then present (a sparse file of the full size: no disk is used, but
    # reading it would need 1.6 GB): --no-weights reads no weight byte either way.
    for width, present in ((20000, False), (100000, False), (20000, True)):
        shown = f"[{width}, {width}]{' with its data on disk' if present else ''}"
        work = os.path.join(args.work, f"no_weights_{width}{'_present' if present else ''}")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[width, width])
        weight.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "model.weights"), ("offset", "0"),
                           ("length", str(width * width * 4))):
            entry = weight.external_data.add()
            entry.key, entry.value = key, value
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["y"])], "frozen_weight",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, width])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, width])], [weight])
        model = os.path.join(work, "model.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
        if present:
            with open(os.path.join(work, "model.weights"), "wb") as f:
                f.truncate(width * width * 4)

        def limit_memory():
            # The heap, not the address space: shardc's libraries and thread stacks map more.
            resource.setrlimit(resource.RLIMIT_DATA, (1 << 30, 1 << 30))

        bundle = os.path.join(work, "model.shard")
        res = subprocess.run([args.shardc, model, "--mode", "forward", "--no-weights", "-o",
                              bundle], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=args.timeout, preexec_fn=limit_memory)
        if res.returncode != 0:
            return f"{shown}: shardc --no-weights under a 1 GiB heap limit: exit " \
                   f"{res.returncode}: {res.stderr.strip()!r}"
        plan = open(os.path.join(bundle, "plan.txt")).read()
        m = re.search(r"^  weights: (\d+) bytes", plan, re.M)
        if m is None or int(m.group(1)) < width * width * 4:
            return f"{shown}: plan.txt's weights line does not count the weight: " \
                   f"{m.group(0) if m else 'none'}"
        if os.path.exists(os.path.join(bundle, "weights.bin")):
            return f"{shown}: --no-weights wrote weights.bin"
        details.append(f"{shown}: weights {int(m.group(1))} bytes planned")
    return None, "; ".join(details)


def fill_model(width, value):
    """About 100 bytes of ONNX whose ConstantOfShape fills [width, width] with `value`, summed
    and added to the input x [1]."""
    from onnx import TensorProto, helper
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [width, width])
    nodes = [
        helper.make_node("ConstantOfShape", ["shape"], ["c"], name="the_fill",
                         value=helper.make_tensor("v", TensorProto.FLOAT, [1], [value])),
        helper.make_node("ReduceSum", ["c"], ["s"], name="sum", keepdims=0),
        helper.make_node("Add", ["x", "s"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes, "fill", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], [shape])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def case_large_constant_filled(args):
    import numpy as np
    import onnx
    details = []
    # 40 GB: planned in the arena, compiled under a 1 GiB heap limit, with and without weights.
    width = 100000
    work = os.path.join(args.work, "large_constant_40g")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model = os.path.join(work, "fill.onnx")
    onnx.save(fill_model(width, 1.0), model)

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_DATA, (1 << 30, 1 << 30))

    for flags in ([], ["--no-weights"]):
        bundle = os.path.join(work, f"fill{len(flags)}.shard")
        res = subprocess.run([args.shardc, model, "--mode", "forward", "-o", bundle, *flags],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=args.timeout, preexec_fn=limit_memory)
        shown = f"[{width}, {width}] {' '.join(flags) or 'with weights'}"
        if res.returncode != 0:
            return f"{shown}: shardc under a 1 GiB heap limit: exit {res.returncode}: " \
                   f"{res.stderr.strip()!r}"
        err, total, parts = check_plan(bundle)
        if err:
            return f"{shown}: {err}"
        _, _, plan_details = read_plan_memory(bundle)
        filled = width * width * 4
        if plan_details["arena"].get("activations", 0) < filled:
            return f"{shown}: the arena's activations {plan_details['arena']} do not hold the " \
                   f"{filled} filled bytes"
        if parts["weights"] > 1024:
            return f"{shown}: {parts['weights']} bytes of weights, expected only the one value"
        if "expand 'the_fill'" not in open(os.path.join(bundle, "plan.txt")).read():
            return f"{shown}: plan.txt's program has no expand 'the_fill'"
        weights_bin = os.path.join(bundle, "weights.bin")
        if flags:
            if os.path.exists(weights_bin):
                return f"{shown}: --no-weights wrote weights.bin"
            details.append(f"{shown}: arena {parts['arena']} bytes, no weights.bin")
            continue
        size = os.path.getsize(weights_bin)
        if size > 1024:
            return f"{shown}: weights.bin holds {size} bytes"
        details.append(f"{shown}: arena {parts['arena']} bytes, weights.bin {size} bytes")

    # 64 MiB, run: the fill computes what the constant holds, and the plan is what is measured.
    # 0.25 * 4096^2 = 2^22 and every partial sum is exact in f32, whatever the order.
    width, value = 4096, 0.25
    work = os.path.join(args.work, "large_constant_run")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "data"))
    model = os.path.join(work, "fill.onnx")
    onnx.save(fill_model(width, value), model)
    x = np.array([3.0], np.float32)
    np.save(os.path.join(work, "data", "x.npy"), x)
    bundle = os.path.join(work, "fill.shard")
    res = e2e_util.run_tool([args.shardc, model, "--mode", "forward", "-o", bundle], args.timeout)
    if not res.ok:
        return f"[{width}, {width}]: compile: {res.describe()}"
    out = os.path.join(work, "out")
    res = e2e_util.run_tool([args.shardrun, bundle, "--data", os.path.join(work, "data"),
                             "--outputs", out], args.timeout)
    if not res.ok:
        return f"[{width}, {width}]: run: {res.describe()}"
    expected = float(x[0]) + value * width * width
    y = float(np.load(os.path.join(out, "y.npy"))[0])
    if y != expected:
        return f"[{width}, {width}]: y = {y}, expected {expected}"
    peaks = e2e_util.memory_peaks(res.stderr)
    if len(peaks) != 1 or peaks[0][0] != peaks[0][1]:
        return f"[{width}, {width}]: planned and measured peaks {peaks}"
    details.append(f"[{width}, {width}] run: y = {y}, peak {peaks[0][0]} bytes as planned")
    return None, "; ".join(details)


def case_large_constant_trains(args):
    """A PyTorch model adding torch.full((batch, 1024), 0.5) (32 MiB at 8192 rows) trains like
    PyTorch, exported both ways, on one rank and on two (dp, zero3); the filled constant is not
    in weights.bin."""
    import numpy as np
    import torch
    sys.path.insert(0, os.path.join(HERE, os.pardir, "models"))
    import export_util

    class ShiftedSquares(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(8, 1024)

        def forward(self, x):
            z = self.proj(x) + torch.full((x.shape[0], 1024), 0.5)
            return (z * z).mean()

    rows, steps, lr = 8192, 3, 0.05
    torch.manual_seed(0)
    model = ShiftedSquares()
    data = torch.randn(2 * rows, 8)
    reference = ShiftedSquares()
    reference.load_state_dict(model.state_dict())
    optimizer = torch.optim.SGD(reference.parameters(), lr=lr)
    expected = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = reference(data[(step % 2) * rows:(step % 2 + 1) * rows])
        loss.backward()
        optimizer.step()
        expected.append(loss.item())

    details = []
    for style, axes in (("dynamic", {"x": {0: "batch"}}), ("static", None)):
        model_dir = os.path.join(args.work, f"large_constant_{style}")
        shutil.rmtree(model_dir, ignore_errors=True)
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            proto = export_util.export_model(model, (data[:rows],), ["x"], ["loss"], model_dir,
                                             dynamic_axes=axes)
        # The dynamic export computes the constant (ConstantOfShape of the batch); the static
        # one stores it, 32 MiB of one value in a Constant node.
        source = "ConstantOfShape" if axes else "Constant"
        if not any(n.op_type == source for n in proto.graph.node):
            return f"{style} export: no {source} in the graph"
        data_dir = os.path.join(model_dir, "data")
        os.makedirs(data_dir)
        np.save(os.path.join(data_dir, "x.npy"), data.numpy())
        for name, flags in (("single", []), ("dp2", ["--gpus", "2", "--strategy", "dp"]),
                            ("zero3", ["--gpus", "2", "--strategy", "zero3"])):
            bundle = os.path.join(model_dir, f"{name}.shard")
            _, err = e2e_util.compile_and_train(
                args.shardc, args.shardrun, model_dir, bundle, data_dir,
                ["--optimizer", "sgd", *flags], steps, lr)
            if err:
                return f"{style} {name}: {err}"
            losses = [float(e2e_util.metrics_field(line, "loss"))
                      for line in e2e_util.metric_lines(bundle + ".jsonl")]
            if len(losses) != steps:
                return f"{style} {name}: {len(losses)} losses, expected {steps}"
            worst = max(abs(a - b) / abs(b) for a, b in zip(losses, expected))
            if worst > 1e-5:
                return f"{style} {name}: losses {losses}, PyTorch {expected}"
            size = os.path.getsize(os.path.join(bundle, "weights.bin"))
            if size > 1 << 20:
                return f"{style} {name}: weights.bin holds {size} bytes: the constant is stored"
            if "expand" not in open(os.path.join(bundle, "plan.txt")).read():
                return f"{style} {name}: no expand in plan.txt"
            details.append(f"{style} {name}: worst loss error {worst:.1e}")
    return None, "; ".join(details)


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, timeout=120))
    cases = [(c[0], lambda c=c: run_config(*c, args)) for c in CONFIGS]
    cases.append(("mismatch", lambda: case_mismatch(args)))
    cases.append(("data_before_arena", lambda: case_data_before_arena(args)))
    cases.append(("no_weights_graph_memory", lambda: case_no_weights_graph_memory(args)))
    cases.append(("large_constant_filled", lambda: case_large_constant_filled(args)))
    cases.append(("large_constant_trains", lambda: case_large_constant_trains(args)))
    e2e_util.run_cases(cases)


if __name__ == "__main__":
    main()
