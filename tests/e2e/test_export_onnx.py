"""`shardrun --export-onnx`: the trained model written back as ONNX, end to end.

    test_export_onnx.py --shardc PATH --shardrun PATH --work DIR

Each model is exported by tests/models, compiled with `shardc --mode train` and trained with
`shardrun --steps 5 --data D --outputs P --export-onnx trained.onnx`. Cases:

  roundtrip_mlp_classifier, roundtrip_tiny_gpt
      the export passes onnx.checker.check_model(full_check=True); every trained initializer
      (one per P/<name>.npy) is float32 raw_data bit-identical to that .npy and differs from
      its initial value; every other initializer is bit-identical to the source model's (whose
      values are external data); everything but the initializers' values (nodes, inputs,
      outputs, opset imports, metadata, initializer names, types, dims and order) equals the
      source model. The export then compiles with `shardc --mode forward`, and shardrun's loss
      and logits on the model's sample batch match PyTorch's module loaded with the trained
      parameters (rtol 1e-5, atol 1e-6), a loss that differs from the untrained model's.
  frozen  the MLP compiled with --freeze 'body\\.0\\..*': the bundle's source.onnx has no values
      for the trained initializers and inline values for the frozen ones; the export keeps the
      frozen ones bit-identical to the source model and trains the rest
  resume  --steps 3 --save C, then --resume C --steps 5 --export-onnx: the file is byte-identical
      to the uninterrupted run's export
  damaged_source  source.onnx truncated, altered, missing: exit 1, one `shardrun: error:` line
      naming the file, before any step (no metrics written) and no export
  no_source  a program.pb without the source.onnx fields (a bundle from an older shardc): exit
      1, one line naming the bundle and saying to recompile
  usage  --export-onnx without --steps: exit 2; into a missing directory or onto a directory:
      exit 1 naming the path, before any step
Prints PASS/FAIL per case and `N passed, M failed`.
"""

import importlib
import os
import shutil
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, os.pardir, "models")
sys.path.insert(0, HERE)
sys.path.insert(0, MODELS)
import e2e_util  # noqa: E402
import train_reference  # noqa: E402

STEPS = 5
RTOL = 1e-5
ATOL = 1e-6
FREEZE = r"body\.0\..*"


class Trained:
    """A model exported, compiled for training (with `shardc_flags`) and trained STEPS steps."""

    def __init__(self, args, model, name, shardc_flags=()):
        self.args = args
        self.model = model
        self.work = os.path.join(args.work, name)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self.model_dir = os.path.join(args.work, "models", model)
        self.source = os.path.join(self.model_dir, "model.onnx")
        e2e_util.export_test_model(model, self.model_dir)
        self.data = os.path.join(args.work, "models", f"{model}_data")
        if not os.path.isdir(self.data):
            # Only the batches are used; the reference run itself is cheap at one step.
            e2e_util.train_reference(model, self.model_dir, self.data + "_ref", 1, "--data",
                                     self.data, "--make-data", "4")
        self.bundle = os.path.join(self.work, "train.shard")
        res = run([args.shardc, self.source, "--mode", "train", "-o", self.bundle,
                   *shardc_flags], args)
        if not res.ok:
            raise RuntimeError(f"compile: {res.describe()}")
        self.params = os.path.join(self.work, "params")
        self.exported = os.path.join(self.work, "trained.onnx")
        self.result = self.shardrun("--steps", str(STEPS), "--data", self.data, "--outputs",
                                    self.params, "--export-onnx", self.exported)

    def shardrun(self, *flags, bundle=None):
        return run([self.args.shardrun, bundle or self.bundle, *flags], self.args)

    def trained_names(self):
        """Initializer names that have a .npy in the --outputs directory."""
        files = set(os.listdir(self.params))
        return [t.name for t in onnx.load_model(self.source).graph.initializer
                if e2e_util.npy_name(t.name) + ".npy" in files]


def run(argv, args):
    return e2e_util.run_tool(argv, args.timeout)


def bits(array):
    """The bytes of an array, so that float comparisons are bit-exact (and NaN-safe)."""
    return np.ascontiguousarray(array).tobytes()


def without_values(model):
    """A copy of `model` with every initializer's values removed."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for t in copy.graph.initializer:
        for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data",
                      "uint64_data", "string_data", "external_data", "data_location"):
            t.ClearField(field)
    return copy


def check_export(t, frozen=()):
    """Checks t.exported against the source model and the --outputs parameters; returns an
    error or (None, details)."""
    if not t.result.ok:
        return f"shardrun: {t.result.describe()}"
    if not os.path.exists(t.exported):
        return "shardrun succeeded but wrote no export"
    if "exported the trained model to" not in t.result.stderr:
        return f"summary line does not mention the export: {t.result.stderr.strip()!r}"
    exported = onnx.load_model(t.exported)
    try:
        # The in-memory form: given a path, onnx 1.12's full check writes the inferred shapes
        # back into the file.
        onnx.checker.check_model(exported, full_check=True)
    except Exception as exc:  # the checker's own error is the finding
        return f"onnx.checker: {exc}"
    source = onnx.load_model(t.source)  # loads the external data beside it
    trained = set(t.trained_names())
    if not trained:
        return "--outputs wrote no parameters"
    if trained & set(frozen):
        return f"frozen parameters were trained: {sorted(trained & set(frozen))}"
    missing = set(frozen) - {i.name for i in source.graph.initializer}
    if missing:
        return f"test setup: no initializers {sorted(missing)}"
    source_inits = {i.name: i for i in source.graph.initializer}
    changed = 0
    for init in exported.graph.initializer:
        value = numpy_helper.to_array(init)
        initial = numpy_helper.to_array(source_inits[init.name])
        if init.name in trained:
            if init.data_type != onnx.TensorProto.FLOAT or not init.raw_data:
                return f"trained {init.name}: not float32 raw_data"
            npy = np.load(os.path.join(t.params, e2e_util.npy_name(init.name) + ".npy"))
            if value.shape != npy.shape or bits(value) != bits(npy):
                return f"trained {init.name}: differs from its --outputs .npy"
            changed += bits(value) != bits(initial)
        elif value.dtype != initial.dtype or value.shape != initial.shape or \
                bits(value) != bits(initial):
            return f"initializer {init.name} (not trained) differs from the source model's"
        if init.external_data or init.data_location == onnx.TensorProto.EXTERNAL:
            return f"initializer {init.name} refers to external data"
    if changed != len(trained):
        return f"only {changed} of {len(trained)} trained parameters changed in {STEPS} steps"
    if without_values(exported).SerializeToString() != \
            without_values(source).SerializeToString():
        return "the graph, inputs, outputs, opset or initializer list differ from the source"
    return (None, f"{len(trained)} trained and {len(source_inits) - len(trained)} other "
                  f"initializers")


def torch_outputs(t, with_trained):
    """PyTorch's outputs on the model's sample batch, from the source weights and, if asked,
    the trained parameters of --outputs."""
    script, class_name, input_names = train_reference.MODELS[t.model]
    module = importlib.import_module(script)
    model = getattr(module, class_name)()
    train_reference.load_onnx_weights(model, t.source)
    if with_trained:
        with torch.no_grad():
            for name, p in model.named_parameters():
                path = os.path.join(t.params, e2e_util.npy_name(name) + ".npy")
                if os.path.exists(path):
                    p.copy_(torch.from_numpy(np.load(path)))
    model.train()  # as exported; the models have no dropout
    inputs = [torch.from_numpy(np.load(os.path.join(t.model_dir, "inputs",
                                                    e2e_util.npy_name(n) + ".npy")))
              for n in input_names]
    with torch.no_grad():
        return [o.numpy() for o in model(*inputs)]


def check_reimport(t):
    """Compiles the export for inference, runs it and compares with PyTorch."""
    bundle = os.path.join(t.work, "exported.shard")
    res = run([t.args.shardc, t.exported, "--mode", "forward", "-o", bundle], t.args)
    if not res.ok:
        return f"recompiling the export: {res.describe()}"
    out = os.path.join(t.work, "exported_out")
    res = run([t.args.shardrun, bundle, "--data", os.path.join(t.model_dir, "inputs"),
               "--outputs", out], t.args)
    if not res.ok:
        return f"running the export: {res.describe()}"
    names = [o.name for o in onnx.load_model(t.exported).graph.output]
    expected = torch_outputs(t, with_trained=True)
    errors = e2e_util.compare_outputs(out, list(zip(names, expected)), RTOL, ATOL)
    if errors:
        return "; ".join(errors)
    untrained = torch_outputs(t, with_trained=False)[0]
    loss, _ = e2e_util.load_output(out, names[0])
    if np.isclose(loss, untrained, rtol=RTOL, atol=ATOL):
        return f"the export's loss {float(loss):.9g} is the untrained model's"
    return (None, f"loss {float(loss):.9g} (PyTorch {float(expected[0]):.9g}, untrained "
                  f"{float(untrained):.9g})")


def case_roundtrip(t):
    first = check_export(t)
    if not isinstance(first, tuple):
        return first
    second = check_reimport(t)
    if not isinstance(second, tuple):
        return second
    return (None, f"{first[1]}; re-imported: {second[1]}")


def case_frozen(args):
    t = Trained(args, "mlp_classifier", "frozen", ["--freeze", FREEZE])
    source = onnx.load_model(t.source, load_external_data=False)
    frozen = [i.name for i in source.graph.initializer if i.name.startswith("body.0.")]
    template = onnx.load_model(os.path.join(t.bundle, "source.onnx"))
    if not t.result.ok:
        return f"shardrun: {t.result.describe()}"
    trained = set(t.trained_names())
    for init in template.graph.initializer:
        has_values = bool(init.raw_data or init.float_data or init.external_data)
        if init.name in trained and has_values:
            return f"bundle's source.onnx: trained {init.name} still has values"
        if init.name not in trained and not init.raw_data:
            return f"bundle's source.onnx: {init.name} has no inline raw_data"
    result = check_export(t, frozen=frozen)
    if not isinstance(result, tuple):
        return result
    return (None, f"{len(frozen)} frozen ({', '.join(frozen)}) kept; {result[1]}")


def case_resume(t):
    if not t.result.ok:
        return "needs the uninterrupted run of roundtrip_mlp_classifier"
    ckpt = os.path.join(t.work, "ckpt3")
    shutil.rmtree(ckpt, ignore_errors=True)
    res = t.shardrun("--steps", "3", "--data", t.data, "--save", ckpt)
    if not res.ok:
        return f"first 3 steps: {res.describe()}"
    resumed = os.path.join(t.work, "resumed.onnx")
    res = t.shardrun("--steps", str(STEPS), "--data", t.data, "--resume", ckpt,
                     "--export-onnx", resumed)
    if not res.ok:
        return f"resume: {res.describe()}"
    if open(resumed, "rb").read() != open(t.exported, "rb").read():
        return "the resumed run's export differs from the uninterrupted run's"
    return (None, f"{os.path.getsize(resumed)} bytes, identical")


def expect_error(res, code, names, what):
    """None if `res` failed with `code` and one error line containing every string in names."""
    lines = res.stderr.strip().splitlines()
    if res.timed_out or res.returncode != code:
        return f"{what}: expected exit {code}, {res.describe()}"
    if len(lines) != 1 or not lines[0].startswith("shardrun: error: "):
        return f"{what}: expected one 'shardrun: error:' line, got {res.stderr!r}"
    for name in names:
        if name not in lines[0]:
            return f"{what}: the error does not name {name!r}: {lines[0]}"
    return None


def damaged_copy(t, name):
    bundle = os.path.join(t.work, f"{name}.shard")
    shutil.rmtree(bundle, ignore_errors=True)
    shutil.copytree(t.bundle, bundle)
    return bundle


def run_expecting_no_steps(t, bundle, export, *extra):
    """Runs the loop with --metrics: a check done before the first step leaves no metrics."""
    metrics = os.path.join(t.work, "m.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    res = t.shardrun("--steps", str(STEPS), "--data", t.data, "--metrics", metrics,
                     "--export-onnx", export, *extra, bundle=bundle)
    ran = os.path.exists(metrics) and os.path.getsize(metrics) > 0
    return res, ran


def case_damaged_source(t):
    details = []
    for how in ("truncated", "altered", "missing"):
        bundle = damaged_copy(t, f"source_{how}")
        path = os.path.join(bundle, "source.onnx")
        data = bytearray(open(path, "rb").read())
        if how == "missing":
            os.remove(path)
        else:
            if how == "truncated":
                data = data[:len(data) // 2]
            else:
                data[len(data) // 3] ^= 0x01
            open(path, "wb").write(bytes(data))
        export = os.path.join(t.work, f"{how}.onnx")
        res, ran = run_expecting_no_steps(t, bundle, export)
        expected = "cannot open" if how == "missing" else "checksum mismatch"
        err = expect_error(res, 1, [path, expected], how)
        if err:
            return err
        if ran or os.path.exists(export):
            return f"{how}: training ran or an export was written despite the error"
        details.append(res.stderr.strip().split(": ", 2)[2])
    return (None, " | ".join(details))


def read_varint(data, i):
    value, shift = 0, 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def without_fields(data, numbers):
    """A protobuf message's bytes without the top-level fields `numbers` (wire format)."""
    out, i = bytearray(), 0
    while i < len(data):
        start = i
        key, i = read_varint(data, i)
        wire = key & 7
        if wire == 0:
            _, i = read_varint(data, i)
        elif wire == 1:
            i += 8
        elif wire == 2:
            length, i = read_varint(data, i)
            i += length
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
        if key >> 3 not in numbers:
            out += data[start:i]
    return bytes(out)


def case_no_source(t):
    bundle = damaged_copy(t, "no_source")
    program = os.path.join(bundle, "program.pb")
    data = open(program, "rb").read()
    # Bundle.source_onnx_file = 8, source_onnx_checksum = 9 (runtime/program/program.proto).
    stripped = without_fields(data, {8, 9})
    if stripped == data:
        return "program.pb has no source_onnx fields"
    open(program, "wb").write(stripped)
    e2e_util.write_program_checksum(bundle)  # an older shardc's program, not a damaged one
    os.remove(os.path.join(bundle, "source.onnx"))
    export = os.path.join(t.work, "no_source.onnx")
    res, ran = run_expecting_no_steps(t, bundle, export)
    err = expect_error(res, 1, [bundle, "no source.onnx", "recompile", "--export-onnx"],
                       "no source")
    if err:
        return err
    if ran or os.path.exists(export):
        return "training ran or an export was written despite the error"
    message = res.stderr.strip().split(": ", 2)[2]
    # The same bundle still trains without --export-onnx.
    res = t.shardrun("--steps", "1", "--data", t.data, bundle=bundle)
    if not res.ok:
        return f"the bundle without source.onnx no longer trains: {res.describe()}"
    return (None, message)


def case_usage(t):
    details = []
    export = os.path.join(t.work, "usage.onnx")
    res = t.shardrun("--data", t.data, "--export-onnx", export)
    err = expect_error(res, 2, ["--export-onnx", "--steps"], "without --steps")
    if err:
        return err
    details.append(res.stderr.strip().split(": ", 2)[2])
    for what, target in (("missing directory", os.path.join(t.work, "nowhere", "t.onnx")),
                         ("a directory", t.work)):
        res, ran = run_expecting_no_steps(t, t.bundle, target)
        err = expect_error(res, 1, ["--export-onnx", target], what)
        if err:
            return err
        if ran:
            return f"{what}: training ran before the destination was rejected"
        details.append(res.stderr.strip().split(": ", 2)[2])
    return (None, " | ".join(details))


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, timeout=120))

    # The MLP's run is shared by the cases after its round trip.
    state = {}

    def mlp():
        if "mlp" not in state:
            state["mlp"] = Trained(args, "mlp_classifier", "roundtrip_mlp_classifier")
        return state["mlp"]

    cases = [
        ("roundtrip_mlp_classifier", lambda: case_roundtrip(mlp())),
        ("roundtrip_tiny_gpt",
         lambda: case_roundtrip(Trained(args, "tiny_gpt", "roundtrip_tiny_gpt"))),
        ("frozen", lambda: case_frozen(args)),
        ("resume", lambda: case_resume(mlp())),
        ("damaged_source", lambda: case_damaged_source(mlp())),
        ("no_source", lambda: case_no_source(mlp())),
        ("usage", lambda: case_usage(mlp())),
    ]
    e2e_util.run_cases(cases)


if __name__ == "__main__":
    main()
