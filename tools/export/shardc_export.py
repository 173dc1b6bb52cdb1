"""Export a PyTorch module to ONNX for shardc, recording which initializers PyTorch trains.

ONNX has no parameter/buffer distinction: a causal mask, BatchNorm's running statistics and a
weight all arrive as initializers. shardc trains what the model's metadata names under
"shardc.trainable" (a JSON list of names), and guesses, with a warning, when it is absent.

As a library (what to call instead of torch.onnx.export):

    from shardc_export import export
    export(model, (input_ids, labels), "model.onnx", input_names=["input_ids", "labels"],
           output_names=["loss"])

exports in training mode (dropout kept, BatchNorm on batch statistics with its running
statistics updated, no constant folding, which would fold parameters into constants) and
records model.named_parameters() that require a gradient, and the padding row of every
nn.Embedding with a padding_idx ("shardc.padding_idx"), which PyTorch's lookup never
trains. Exporting in training mode runs the
model, which moves BatchNorm's running statistics; export() puts the buffers back as they were,
in the module and in the file. For a file exported already:

    from shardc_export import record_trainable
    record_trainable("model.onnx", model)

or from the command line, given the names one per line:

    python3 shardc_export.py record model.onnx --names trainable.txt
"""

import argparse
import json
import sys

METADATA_KEY = "shardc.trainable"
# Each nn.Embedding's padding row, {initializer name: row}: PyTorch never sends that row a
# gradient from the lookup, and ONNX's Gather has no field to say so.
PADDING_KEY = "shardc.padding_idx"


def trainable_names(module):
    """The names PyTorch trains: named_parameters() that require a gradient (shared
    parameters appear once, under their first name, as named_parameters() lists them)."""
    return [name for name, p in module.named_parameters() if p.requires_grad]


def padding_rows(module):
    """{name: row} for the weight of every nn.Embedding with a padding_idx, under each name
    the module's state_dict gives it (a tied table has several; the export keeps one)."""
    import torch
    rows = {}
    for embedding in module.modules():
        if isinstance(embedding, torch.nn.Embedding) and embedding.padding_idx is not None:
            row = embedding.padding_idx % embedding.num_embeddings
            for name, tensor in module.state_dict(keep_vars=True).items():
                if tensor is embedding.weight:
                    rows[name] = row
    return rows


def write_record(path, names, buffers=None, padding=None):
    """Adds (or replaces) the shardc.trainable metadata of the ONNX file at `path` (and, with
    `padding`, {name: row}, the shardc.padding_idx record of the initializers it names);
    `buffers` (name -> tensor) replaces the values of the initializers of those names."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path, load_external_data=False)
    for i, tensor in enumerate(model.graph.initializer):
        if buffers and tensor.name in buffers:
            value = buffers[tensor.name].detach().cpu().numpy()
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(value, tensor.name))
    kept = [p for p in model.metadata_props if p.key not in (METADATA_KEY, PADDING_KEY)]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    entry = model.metadata_props.add()
    entry.key = METADATA_KEY
    entry.value = json.dumps(sorted(names))
    initializers = {t.name for t in model.graph.initializer}
    padding = {name: row for name, row in (padding or {}).items() if name in initializers}
    if padding:
        entry = model.metadata_props.add()
        entry.key = PADDING_KEY
        entry.value = json.dumps(padding, sort_keys=True)
    onnx.save(model, path)


def record_trainable(path, module):
    write_record(path, trainable_names(module), padding=padding_rows(module))


def export(module, args, path, input_names, output_names, dynamic_axes=None, opset_version=17,
           **kwargs):
    """torch.onnx.export in training mode, then the record of the trained parameters."""
    import torch
    was_training = module.training
    buffers = {name: b.detach().clone() for name, b in module.named_buffers()}
    module.train()
    try:
        torch.onnx.export(module, args, path, opset_version=opset_version,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes, **kwargs)
    finally:
        module.train(was_training)
        with torch.no_grad():
            for name, b in module.named_buffers():
                b.copy_(buffers[name])
    write_record(path, trainable_names(module), buffers, padding_rows(module))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record the trained parameters of an exported model")
    rec.add_argument("model", help="the ONNX file (rewritten in place)")
    rec.add_argument("--names", required=True, help="a file with one parameter name per line")
    args = parser.parse_args(argv)
    try:
        with open(args.names) as f:
            names = [line.strip() for line in f if line.strip()]
        write_record(args.model, names)
    except (OSError, ValueError) as e:
        print(f"shardc_export: {e}", file=sys.stderr)
        return 1
    print(f"shardc_export: recorded {len(names)} trained parameters in {args.model}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
