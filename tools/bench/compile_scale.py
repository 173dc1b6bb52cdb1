"""Compile time, peak compiler memory and bundle size of `shardc --no-weights` on a large GPT.

    compile_scale.py --shardc PATH --work DIR [--layers 24 --d-model 1024 --heads 16
                     --vocab 50257 --seq 1024 --batch 512] [--gpus 8,64,512] [--strategy dp]
                     [--case GPUS:STRATEGY ...]

Exports the test GPT (tests/models/export_tiny_gpt.py) at the given size with its sequence
baked into the graph and a symbolic batch (the trace runs one row; `--input-shape` gives the
global batch), drops its weights (planning only needs shapes), and compiles it with
`--no-weights` for each --gpus (with --strategy), or for each --case (its own --gpus and
--strategy, e.g. `--case 8:tp=8 --case 512:dp=64,tp=8`), measuring wall time and peak RSS of shardc (GNU time's maximum resident set size) and
the size of the bundle directory. Prints one line per --gpus and a JSON summary. The export
is kept in WORK/model and reused by a later run with the same model sizes.

`--export-width W` plans models too large to create in PyTorch (48 layers of d=8192 hold 39B
parameters, 155 GB in fp32): the GPT is exported at width W with the same heads, layers,
vocabulary and sequence, and the export is then widened to --d-model: every parameter's
dimensions W, 3W and 4W become d, 3d and 4d (with no data: planning reads none), the split
sizes of the fused QKV projection W become d, and the attention's 1/sqrt(W/heads) constant
becomes 1/sqrt(d/heads). Every other size in the graph is computed from shapes (x.size()), so
the result is the graph the d-wide model exports (checked: node for node and initializer for
initializer equal to a direct export at d=1024).
"""

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, os.pardir, os.pardir, "tests", "models")


def widen(path, small, big, heads, param_names):
    """Widens the export at `path` from width `small` to `big` in place (see the docstring);
    returns the widened model's parameter count."""
    import math
    import numpy as np
    import onnx
    from onnx import numpy_helper
    proto = onnx.load_model(path, load_external_data=False)
    sizes = {small: big, 3 * small: 3 * big, 4 * small: 4 * big}
    offset, params = 0, 0
    for init in proto.graph.initializer:
        # Parameters only: a buffer's sizes come from elsewhere (the causal mask's from the
        # sequence, which may happen to be 3 or 4 times the export width).
        dims = [sizes.get(d, d) for d in init.dims] if init.name in param_names else list(init.dims)
        del init.dims[:]
        init.dims.extend(dims)
        for field in ("raw_data", "float_data", "int64_data", "int32_data", "double_data"):
            init.ClearField(field)
        del init.external_data[:]
        numel = int(np.prod(dims)) if dims else 1
        length = numel * 4
        for key, value in (("location", "model.weights"), ("offset", str(offset)),
                           ("length", str(length))):
            entry = init.external_data.add()
            entry.key, entry.value = key, value
        init.data_location = onnx.TensorProto.EXTERNAL
        offset += length
        if init.name in param_names:
            params += numel
    old_scale = np.float32(1.0 / math.sqrt(small // heads))
    for node in proto.graph.node:
        if node.op_type != "Constant":
            continue
        value = numpy_helper.to_array(node.attribute[0].t)
        if value.dtype == np.int64 and value.ndim == 1 and value.size and (value == small).all():
            widened = np.full_like(value, big)  # the fused QKV projection's split sizes
        elif value.dtype == np.float32 and value.ndim == 0 and value == old_scale and \
                "/attn/" in node.name:  # GELU's 0.5 can equal the scale
            widened = np.float32(1.0 / math.sqrt(big // heads))
        else:
            continue
        node.attribute[0].t.CopyFrom(numpy_helper.from_array(widened, node.attribute[0].t.name))
    onnx.save_model(proto, path)
    return params


def deepen(path, layers, param_names):
    """Deepens the 2-block export at `path` to `layers` blocks in place: block 1's nodes and
    initializers are copied as blocks 2 .. layers-1, each copy reading the one before it where
    block 1 reads block 0's computed values, and sharing what block 1 shares with block 0 (the
    exporter's deduplicated constants); what read block 1's output reads the last
    block's. Returns the parameter names with the copies' added. torch.onnx.export takes
    minutes for a hundred blocks; the copy takes seconds. The exporter names and deduplicates
    constants differently at other depths, so the nodes are not those of a direct export, but
    the program is (checked: a 2-block export deepened to 5 compiles to the kernel calls, arena
    and planned peak of a direct 5-block export)."""
    import onnx
    proto = onnx.load_model(path, load_external_data=False)
    graph = proto.graph
    nodes = list(graph.node)
    block1 = [n for n in nodes if n.name.startswith("/blocks.1/")]
    # What block 1 reads from block 0 that is not a constant: block 0's output (the residual
    # stream), which block k reads from block k-1. Block 0's constants are shared.
    constants = {o for n in nodes if n.op_type == "Constant" for o in n.output}
    last = max(i for i, n in enumerate(nodes) if n.name.startswith("/blocks.1/"))
    inits = [t for t in graph.initializer if t.name.startswith("blocks.1.")]

    def renamed(name, k):
        if name.startswith("/blocks.1/"):
            return f"/blocks.{k}/" + name[len("/blocks.1/"):]
        if name.startswith("/blocks.0/") and name not in constants:
            return f"/blocks.{k - 1}/" + name[len("/blocks.0/"):]
        if name.startswith("blocks.1."):
            return f"blocks.{k}." + name[len("blocks.1."):]
        return name

    copies = []
    names = set(param_names)
    for k in range(2, layers):
        for n in block1:
            c = onnx.NodeProto()
            c.CopyFrom(n)
            c.name = renamed(n.name, k)
            c.input[:] = [renamed(i, k) for i in n.input]
            c.output[:] = [renamed(o, k) for o in n.output]
            copies.append(c)
        for t in inits:
            c = onnx.TensorProto()
            c.CopyFrom(t)
            c.name = renamed(t.name, k)
            graph.initializer.append(c)
            if t.name in param_names:
                names.add(c.name)
    tail = nodes[last + 1:]
    for n in tail:
        n.input[:] = [f"/blocks.{layers - 1}/" + i[len("/blocks.1/"):]
                      if i.startswith("/blocks.1/") else i for i in n.input]
    del graph.node[:]
    graph.node.extend(nodes[:last + 1] + copies + tail)
    del graph.value_info[:]
    for record in proto.metadata_props:
        if record.key == "shardc.trainable":
            trained = set(json.loads(record.value))
            for k in range(2, layers):
                trained |= {renamed(t.name, k) for t in inits if t.name in trained}
            record.value = json.dumps(sorted(trained))
    onnx.save_model(proto, path)
    return names


def export(args, out_dir):
    import torch
    sys.path.insert(0, MODELS)
    spec = importlib.util.spec_from_file_location("gpt", os.path.join(MODELS, "export_tiny_gpt.py"))
    gpt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpt)
    # The module's sizes are module constants; the classes read them when built.
    width = args.export_width or args.d_model
    gpt.VOCAB, gpt.BLOCK, gpt.D_MODEL = args.vocab, args.seq, width
    gpt.N_LAYER, gpt.N_HEAD = args.layers, args.heads
    torch.manual_seed(0)
    model = gpt.TinyGPT()
    # Traced at one row (a trace runs the forward pass: 512 rows of 1024 x 50257 logits would
    # not fit in memory); the batch is the one symbolic dimension, --input-shape sets it.
    idx = torch.randint(0, args.vocab, (1, args.seq))
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")
    model.train()
    batch = {0: "batch"}
    with torch.no_grad():
        torch.onnx.export(model, (idx, idx), path, opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=["idx", "targets"], output_names=["loss", "logits"],
                          dynamic_axes={"idx": batch, "targets": batch, "logits": batch})
    params = sum(p.numel() for p in model.parameters())
    # Below 2 GiB the exporter keeps the weights inside the model; move them out, so that they
    # can be left behind. The record of the trained parameters goes in as the project's export
    # helper writes it (without it shardc guesses from the values, which --no-weights lacks).
    import onnx
    proto = onnx.load_model(path)
    record = proto.metadata_props.add()
    record.key = "shardc.trainable"
    record.value = json.dumps(sorted(name for name, p in model.named_parameters()
                                     if p.requires_grad))
    onnx.save_model(proto, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="model.weights", size_threshold=1024)
    if width != args.d_model:
        params = widen(path, width, args.d_model, args.heads,
                       {name for name, _ in model.named_parameters()})
    return path, params


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shardc", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--layers", type=int, default=24)
    p.add_argument("--d-model", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--export-width", type=int,
                   help="export at this width and widen to --d-model (models too large for "
                        "PyTorch here)")
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--gpus", default="8,64,512")
    p.add_argument("--strategy", default="dp")
    p.add_argument("--mode", choices=["train", "forward"], default="train")
    p.add_argument("--case", action="append", default=[],
                   help="GPUS:STRATEGY, compiled instead of --gpus/--strategy (repeatable)")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    model_dir = os.path.join(args.work, "model")
    # The export of the same sizes in an earlier run is reused: tracing a long sequence (2048
    # tokens, 96 layers) takes PyTorch minutes.
    sizes = {k: getattr(args, k) for k in ("layers", "d_model", "heads", "export_width",
                                           "vocab", "seq")}
    record = os.path.join(model_dir, "sizes.json")
    path = os.path.join(model_dir, "model.onnx")
    if os.path.exists(path) and os.path.exists(record) and \
            json.load(open(record))["sizes"] == sizes:
        params = json.load(open(record))["parameters"]
        print(f"reusing the export of {params / 1e6:.1f}M parameters: {path}")
    else:
        t0 = time.time()
        path, params = export(args, model_dir)
        print(f"exported {params / 1e6:.1f}M parameters in {time.time() - t0:.0f} s: {path}")
        # Planning needs no weights: leave only the graph.
        for f in os.listdir(model_dir):
            if f != "model.onnx":
                os.remove(os.path.join(model_dir, f))
        json.dump({"sizes": sizes, "parameters": params}, open(record, "w"))
    results = []
    cases = [(int(g), args.strategy) for g in args.gpus.split(",")]
    if args.case:
        cases = [(int(c.split(":", 1)[0]), c.split(":", 1)[1]) for c in args.case]
    for gpus, strategy in cases:
        tag = strategy.replace("=", "").replace(",", "_")
        out = os.path.join(args.work, f"g{gpus}_{tag}.shard")
        shutil.rmtree(out, ignore_errors=True)
        shape = f"{args.batch}x{args.seq}"
        argv = ["/usr/bin/time", "-f", "%M", args.shardc, path, "--no-weights", "--gpus",
                str(gpus), "--strategy", strategy, "--input-shape", f"idx={shape}",
                "--input-shape", f"targets={shape}", "--mode", args.mode, "-o", out]
        t0 = time.time()
        res = subprocess.run(argv, capture_output=True, text=True)
        wall = time.time() - t0
        if res.returncode != 0:
            print(f"--gpus {gpus}: shardc failed: {res.stderr.strip()[-500:]}")
            results.append({"gpus": gpus, "error": res.stderr.strip()[-500:]})
            continue
        rss_kib = int(res.stderr.strip().splitlines()[-1])
        size = dir_bytes(out)
        results.append({"gpus": gpus, "strategy": strategy, "seconds": round(wall, 2),
                        "peak_rss_mib": round(rss_kib / 1024, 1), "bundle_bytes": size})
        print(f"--gpus {gpus} --strategy {strategy}: {wall:.1f} s, peak RSS "
              f"{rss_kib / 1024:.0f} MiB, bundle {size / 2**20:.1f} MiB")
    print(json.dumps({"model": vars(args) | {"parameters": params}, "results": results}))


if __name__ == "__main__":
    main()
