"""Shared helpers for the test-model export scripts.

Each export script builds a small PyTorch model, runs it on deterministic sample inputs and calls
`export_model`, which writes

    OUT/model.onnx            the graph; all initializers are external data in OUT/model.weights
    OUT/model.weights
    OUT/inputs/<name>.npy     one sample input per graph input
    OUT/expected/<name>.npy   PyTorch's value of each graph output for those inputs
    OUT/input_shapes.txt      only for models with symbolic dims: NAME=AxB per input, the shapes
                              to pass to `shardc --input-shape`

<name> is the tensor name with every character outside [A-Za-z0-9._-] replaced by `_`, the same
rule shardrun uses for its .npy files.
"""

import argparse
import io
import json
import os
import re
import shutil
import sys

import numpy as np
import onnx
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                                "tools", "export"))
import shardc_export  # noqa: E402

OPSET = 17
WEIGHTS_FILE = "model.weights"


def npy_name(tensor_name):
    """File name (without .npy) that shardrun uses for a tensor."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", tensor_name)


def parse_args(description):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", required=True, help="output directory (created if missing)")
    parser.add_argument("--static-batch", type=int, default=None, metavar="N",
                        help="export as torch.onnx.export does by default, without "
                             "dynamic_axes, from sample inputs of N rows: the batch and "
                             "sequence sizes end up baked into Reshape constants")
    return parser.parse_args()


def sample_rows(args, default):
    """Rows of the sample inputs: --static-batch's, else the model's default."""
    return args.static_batch or default


def export_axes(args, dynamic_axes):
    """The dynamic_axes to export with: none at all for --static-batch."""
    return None if args.static_batch else dynamic_axes


def randomize_layer_norms(module, generator=None):
    """Give every LayerNorm its own weight/bias instead of the default ones/zeros.

    With identical LayerNorm parameters a parameter mix-up (or an exporter that ties equal
    initializers) would produce the same numbers; distinct values make such bugs visible.
    """
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, torch.nn.LayerNorm) and m.elementwise_affine:
                m.weight.copy_(1.0 + 0.1 * torch.randn(m.weight.shape, generator=generator))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=generator))


def seeded_model(model_class):
    """`model_class()` built right after torch.manual_seed(0), its LayerNorms randomized: the
    same weights at every export."""
    torch.manual_seed(0)
    model = model_class()
    randomize_layer_norms(model)
    return model


def export_language_model(model, args, input_names, shape, vocab, dims):
    """Exports `model`, which takes token ids and their targets (`input_names`: int64 of
    `shape`, drawn below `vocab` in that order) and returns (loss, logits), into args.out.
    `dims` names the dims the inputs and the logits share ({0: "batch", 1: "seq"}); they are
    exported as dynamic axes and pinned to `shape`, or not at all with --static-batch."""
    inputs = tuple(torch.randint(0, vocab, shape, dtype=torch.long) for _ in input_names)
    export_model(model, inputs, list(input_names), ["loss", "logits"], args.out,
                 dynamic_axes=export_axes(args, {name: dims
                                                 for name in [*input_names, "logits"]}))


def _shape_str(shape):
    return "x".join(str(d) for d in shape)


def _pin_dims(value_infos, values):
    """Replaces every dim of the graph inputs/outputs `value_infos` with the concrete sizes of
    the tensors `values`."""
    for vi, value in zip(value_infos, values):
        dims = vi.type.tensor_type.shape.dim
        assert len(dims) == value.dim(), vi.name
        for dim, size in zip(dims, value.shape):
            dim.Clear()
            dim.dim_value = size


def export_model(model, inputs, input_names, output_names, out_dir, dynamic_axes=None,
                 keep_symbolic=False):
    """Exports `model` called on the tuple `inputs` and writes the bundle described above.

    With static shapes torch's exporter replaces every x.size() by a constant, so the export
    would contain none of the Shape/Range subgraphs that real (dynamically exported) models
    have. Models therefore name their batch/sequence dims in `dynamic_axes`; unless
    `keep_symbolic` is set, those dims are then pinned to the sample shapes in the graph's
    inputs and outputs, giving a model with static shapes that still computes its shapes with
    Shape -> Gather -> ... -> Reshape. With `keep_symbolic` the dims stay symbolic and
    input_shapes.txt records the sample shapes.

    Returns the ONNX model as saved (initializers referencing model.weights).
    """
    model.train()  # training-mode export (see below); the models contain no dropout
    with torch.no_grad():
        outputs = model(*inputs)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    assert len(outputs) == len(output_names), "output_names must name every model output"

    # TRAINING mode: an eval-mode export deduplicates initializers with equal values (e.g. all
    # LayerNorm weights = 1), silently tying parameters. No constant folding, so the graph keeps
    # the Shape -> Gather -> ... -> Reshape subgraphs the compiler has to resolve itself.
    buf = io.BytesIO()
    torch.onnx.export(
        model, inputs, buf,
        opset_version=OPSET,
        training=torch.onnx.TrainingMode.TRAINING,
        do_constant_folding=False,
        input_names=input_names,
        output_names=output_names,
        dynamic_axes=dynamic_axes,
    )
    proto = onnx.load_model_from_string(buf.getvalue())

    graph_inputs = [i.name for i in proto.graph.input]
    graph_outputs = [o.name for o in proto.graph.output]
    if graph_inputs != list(input_names):
        raise RuntimeError(f"exported graph inputs {graph_inputs} != {list(input_names)} "
                           "(an unused input was dropped?)")
    if graph_outputs != list(output_names):
        raise RuntimeError(f"exported graph outputs {graph_outputs} != {list(output_names)}")
    # Every parameter and buffer must stay its own initializer (no deduplication or folding).
    # A parameter shared by two modules (tied embeddings) is one tensor: named_parameters()
    # lists it once, under the name the export uses.
    tensors = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    missing = set(tensors) - {init.name for init in proto.graph.initializer}
    if missing:
        raise RuntimeError(f"parameters missing from the export's initializers: {sorted(missing)}")
    # The record of what PyTorch trains, as the project's export helper writes it: shardc then
    # knows the trained set instead of guessing it.
    record = proto.metadata_props.add()
    record.key = shardc_export.METADATA_KEY
    record.value = json.dumps(sorted(shardc_export.trainable_names(model)))
    if dynamic_axes and not keep_symbolic:
        _pin_dims(proto.graph.input, inputs)
        _pin_dims(proto.graph.output, outputs)
        # Intermediate value_info still carries the symbolic dims; it is optional, drop it.
        del proto.graph.value_info[:]
    onnx.checker.check_model(proto, full_check=True)  # full_check runs strict shape inference

    os.makedirs(out_dir, exist_ok=True)
    model_path = os.path.join(out_dir, "model.onnx")
    weights_path = os.path.join(out_dir, WEIGHTS_FILE)
    # onnx appends to an existing external-data file, so a re-export must start from scratch.
    for stale in (model_path, weights_path):
        if os.path.exists(stale):
            os.remove(stale)
    for sub in ("inputs", "expected"):
        shutil.rmtree(os.path.join(out_dir, sub), ignore_errors=True)
        os.makedirs(os.path.join(out_dir, sub))
    shapes_path = os.path.join(out_dir, "input_shapes.txt")
    if os.path.exists(shapes_path):
        os.remove(shapes_path)

    onnx.save_model(proto, model_path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=WEIGHTS_FILE, size_threshold=0)

    # Re-validate what is on disk: the path form lets the checker follow the external data, and
    # shape inference must still succeed on the reloaded model.
    onnx.checker.check_model(model_path)
    reloaded = onnx.load_model(model_path)  # also loads model.weights
    onnx.shape_inference.infer_shapes(reloaded, check_type=True, strict_mode=True)

    for name, value in zip(input_names, inputs):
        np.save(os.path.join(out_dir, "inputs", npy_name(name) + ".npy"), value.numpy())
    for name, value in zip(output_names, outputs):
        np.save(os.path.join(out_dir, "expected", npy_name(name) + ".npy"),
                value.detach().numpy())

    if dynamic_axes and keep_symbolic:
        with open(shapes_path, "w") as f:
            for name, value in zip(input_names, inputs):
                f.write(f"{name}={_shape_str(value.shape)}\n")

    ops = {}
    for node in proto.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    size = os.path.getsize(model_path) + os.path.getsize(weights_path)
    print(f"wrote {model_path} ({size} bytes with {WEIGHTS_FILE}, {len(proto.graph.node)} nodes)")
    print("  ops: " + ", ".join(f"{k}x{v}" for k, v in sorted(ops.items())))
    return proto


def with_global_batch(path, rows, batch_dim=0):
    """A copy of the model (next to it, sharing its external weights) whose graph inputs have
    `rows` rows along `batch_dim` (dim 1 for a sequence-first model): the exports pin the batch
    to their small sample batch. Returns its path, DIR/model_batch<rows>.onnx."""
    model = onnx.load_model(path, load_external_data=False)
    for value in model.graph.input:
        value.type.tensor_type.shape.dim[batch_dim].dim_value = rows
    for value in model.graph.output:
        for dim in value.type.tensor_type.shape.dim:
            dim.Clear()
    del model.graph.value_info[:]
    out = os.path.join(os.path.dirname(path), f"model_batch{rows}.onnx")
    onnx.save_model(model, out)
    return out
