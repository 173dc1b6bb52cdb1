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
records model.named_parameters() that require a gradient. Exporting in training mode runs the
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


def trainable_names(module):
    """The names PyTorch trains: named_parameters() that require a gradient (shared
    parameters appear once, under their first name, as named_parameters() lists them)."""
    return [name for name, p in module.named_parameters() if p.requires_grad]


def write_record(path, names, buffers=None):
    """Adds (or replaces) the shardc.trainable metadata of the ONNX file at `path`; `buffers`
    (name -> tensor) replaces the values of the initializers of those names."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path, load_external_data=False)
    for i, tensor in enumerate(model.graph.initializer):
        if buffers and tensor.name in buffers:
            value = buffers[tensor.name].detach().cpu().numpy()
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(value, tensor.name))
    kept = [p for p in model.metadata_props if p.key != METADATA_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    entry = model.metadata_props.add()
    entry.key = METADATA_KEY
    entry.value = json.dumps(sorted(names))
    onnx.save(model, path)


def record_trainable(path, module):
    write_record(path, trainable_names(module))


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
    write_record(path, trainable_names(module), buffers)


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
