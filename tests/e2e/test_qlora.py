"""`shardc --lora --base-dtype bf16|int8|nf4` (a quantized frozen base) against PEFT, end to end.

    test_qlora.py --shardc PATH --shardrun PATH --work DIR

For Hugging Face GPT-2 (Conv1D projections: Gemm on W [in, out]) and Llama (nn.Linear
projections without bias: MatMul on a transposed W [out, in]), the tiny configurations of
test_lora.py (PEFT's default targets c_attn; q_proj and v_proj; r=8, alpha=16), each exported
in both styles. The test quantizes the frozen product weights itself, in NumPy float32, as
runtime/support/quantized_weights.h defines the formats: every frozen 2-D weight whose every
use is as the weight of a product, but for lm_head and weights tied to an embedding (also read by Gather); taken as [out, in] (GPT-2's
Conv1D weights transposed); bf16 round-to-nearest-even; int8 per row (absmax_r, q =
round-half-even(W * (127 / absmax_r)) clamped to [-127, 127], dequantised q * (absmax_r /
127)); nf4 per block of 64 consecutive elements (code = how many of the midpoints between
consecutive NF4 values lie strictly below x / absmax_b, two codes a byte, the first in the high
nibble, dequantised NF4[code] * absmax_b). Checks:

  quantized  (static exports) the bundle's program.pb (decoded with protoc; skipped without
             it) holds P.bf16 [out, in] / P.int8 [out, in] and P.absmax [out] / P.nf4
             [out*in/2] and P.absmax [out*in/64] in place of each frozen product weight P, no f32
             P, and their bytes in weights.bin equal the test's quantizer's bit for bit; the
             quantized set is exactly the one above (GPT-2's tied wte stays f32, Llama's
             lm_head too); --base-dtype fp32 quantizes nothing; and on GPT-2 (int8)
             --base-dtype-keep c_proj keeps attn.c_proj and mlp.c_proj in f32
  reference  a fresh PyTorch model whose selected weights hold the test's dequantized values,
             wrapped by PEFT (init_lora_weights=False, seeded as test_lora.py), adapters saved
             as adapter_model.safetensors and trained 30 AdamW steps (weight decay 0.01);
             shardc compiles the original f32 export with --lora ... --lora-init FILE
             --base-dtype D (fp32, bf16, int8, nf4; both export styles), shardrun trains 30
             steps on the same batch: every step's loss within 1e-5 (relative) of PEFT's
  merged     shardrun --export-onnx --merge-lora (with --save-adapters) against PEFT's
             merge_and_unload of the saved adapters on the same base: every exported parameter
             within 1e-6 of PEFT's merged model (a quantized base exported dequantized, as the
             step computed with it), only the adapted weights changed, the merged model's loss
             within 1e-5 of PEFT's unmerged model's
  trained    plan.json's trained elements equal PEFT's adapters' element count; plan.txt's
             trained set lists the quantized weights, each with its format
  memory     (static) plan.json's weights region: its parameter bytes shrink from the fp32
             LoRA bundle's by exactly the quantized weights' savings, the sum over them of
             4 * numel - stored (nf4: numel / 2 + 4 * numel / 64; int8: numel + 4 * out;
             bf16: 2 * numel); the region's totals are printed
  sharded    (static; int8 and nf4) the same compile under --gpus 2 --strategy zero3, tp=2 and
             --gpus 4 dp=2,tp=2: every step within 1e-5 of the 1-rank run of the same base
             dtype, planned = measured peak memory on every rank
  forward    GPT-2 exported with its loss and logits as outputs, shardc --mode forward
             --base-dtype int8 / nf4 / bf16 (every parameter a candidate; no --lora):
             shardrun's loss within 1e-5 (relative) and its logits within 1e-5 (max abs
             difference / max abs) of the PyTorch model on the dequantized base, the quantized
             set as in train mode
  refused    nf4 on a weight whose element count is not a multiple of 64 (nn.Linear(24, 20)):
             exit 1, one line naming the weight (int8 compiles it); --base-dtype nf4 without
             --lora in train mode: exit 2, one line naming --lora; --base-dtype fp8: exit 2,
             one line naming --base-dtype; shardrun --export-onnx of a LoRA bundle without
             --merge-lora, --merge-lora without --export-onnx or on a bundle without adapters:
             one line each

Prints PASS/FAIL per case with the worst difference, and `N passed, M failed`.
"""

import codecs
import collections
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402
import test_lora  # noqa: E402
import test_model_zoo as zoo  # noqa: E402

PROTO_DIR = os.path.join(HERE, os.pardir, os.pardir, "runtime", "program")

# test_lora.py's models (PEFT's default targets), rank, steps and tolerance; its builders,
# exports and compile-and-train runs.
RANK, ALPHA, STEPS, LR, RTOL = test_lora.RANK, test_lora.ALPHA, test_lora.STEPS, test_lora.LR, \
    test_lora.RTOL
MODELS = test_lora.MODELS
build, export, compile_and_train = test_lora.build, test_lora.export, test_lora.compile_and_train
DTYPES = ("fp32", "bf16", "int8", "nf4")
SHARDED_DTYPES = ("int8", "nf4")
STRATEGIES = (("2", "zero3"), ("2", "tp=2"), ("4", "dp=2,tp=2"))
KEEP_DEFAULT = "lm_head"  # --base-dtype-keep's default
NF4_BLOCK = 64

# The NF4 code values (QLoRA, Dettmers et al. 2023), as bitsandbytes has them, as float32.
NF4 = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
                -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
                0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
                0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                0.7229568362236023, 1.0], dtype=np.float32)
# The 15 decision thresholds: midpoints of consecutive codes, computed in double, as float32.
NF4_THRESHOLDS = ((NF4[:-1].astype(np.float64) + NF4[1:].astype(np.float64)) / 2).astype(
    np.float32)


# ---------------------------------------------------------------------------------------------
# The reference quantizers. Each takes W [out, in] float32 (C order) and returns (stored, deq):
# stored maps the bundle's suffix ("bf16", "int8", "nf4", "absmax") to (bytes, shape), deq is the
# dequantized [out, in] float32 the kernels compute with.

def quantize_bf16(w):
    bits = torch.from_numpy(w).to(torch.bfloat16)
    stored = {"bf16": (bits.view(torch.int16).numpy().astype("<i2").tobytes(), list(w.shape))}
    return stored, bits.to(torch.float32).numpy()


def quantize_int8(w):
    out = w.shape[0]
    absmax = np.abs(w).max(axis=1).astype(np.float32)  # [out]
    nonzero = absmax > 0
    with np.errstate(divide="ignore"):
        scale = np.where(nonzero, np.float32(127.0) / np.where(nonzero, absmax, np.float32(1)),
                         np.float32(0)).astype(np.float32)
    q = np.rint((w * scale[:, None]).astype(np.float32))  # rint: round half to even
    q = np.where(nonzero[:, None], np.clip(q, -127, 127), 0).astype(np.int8)
    deq = (q.astype(np.float32) * (absmax / np.float32(127.0))[:, None]).astype(np.float32)
    stored = {"int8": (q.tobytes(), list(w.shape)),
              "absmax": (absmax.astype("<f4").tobytes(), [out])}
    return stored, deq


def quantize_nf4(w):
    flat = np.ascontiguousarray(w, dtype=np.float32).reshape(-1)
    if flat.size % NF4_BLOCK:
        raise ValueError(f"{flat.size} elements, not a multiple of {NF4_BLOCK}")
    blocks = flat.reshape(-1, NF4_BLOCK)
    absmax = np.abs(blocks).max(axis=1).astype(np.float32)
    nonzero = absmax > 0
    inv = np.where(nonzero, np.float32(1.0) / np.where(nonzero, absmax, np.float32(1)),
                   np.float32(0)).astype(np.float32)
    normed = (blocks * inv[:, None]).astype(np.float32)
    codes = (normed[..., None] > NF4_THRESHOLDS).sum(axis=-1).astype(np.uint8).reshape(-1)
    packed = ((codes[0::2] << 4) | codes[1::2]).astype(np.uint8)
    deq = (NF4[codes].reshape(-1, NF4_BLOCK) * absmax[:, None]).astype(np.float32)
    stored = {"nf4": (packed.tobytes(), [flat.size // 2]),
              "absmax": (absmax.astype("<f4").tobytes(), [absmax.size])}
    return stored, deq.reshape(w.shape)


QUANTIZERS = {"bf16": quantize_bf16, "int8": quantize_int8, "nf4": quantize_nf4}


def stored_bytes(dtype, out, inn):
    numel = out * inn
    return {"fp32": 4 * numel, "bf16": 2 * numel, "int8": numel + 4 * out,
            "nf4": numel // 2 + 4 * (numel // NF4_BLOCK)}[dtype]


# ---------------------------------------------------------------------------------------------

def initializers(model_path):
    import onnx
    from onnx import numpy_helper
    return {init.name: numpy_helper.to_array(init)
            for init in onnx.load(model_path).graph.initializer}


def module_matches(regex, path):
    """--lora targets / --base-dtype-keep matching: the regex matches the end of the module
    path, as a whole name component."""
    return re.search(rf"(?:^|\.)(?:{regex})$", path) is not None


def product_weights(model, inits, keep=KEEP_DEFAULT):
    """The weights --base-dtype quantizes, from the PyTorch model: each nn.Linear's and
    transformers Conv1D's weight, but for the modules --base-dtype-keep matches and weights
    tied to an embedding (which a Gather reads too). Returns {initializer name: ("linear" (W
    [out, in]) or "conv1d" (W [in, out]))}, and the names the export lacks."""
    from transformers.pytorch_utils import Conv1D
    embeddings = [m.weight for m in model.modules() if isinstance(m, torch.nn.Embedding)]
    selected, missing = {}, []
    for path, module in model.named_modules():
        if isinstance(module, torch.nn.Linear):
            layout = "linear"
        elif isinstance(module, Conv1D):
            layout = "conv1d"
        else:
            continue
        if module_matches(keep, path) or any(module.weight is e for e in embeddings):
            continue
        name = path + ".weight"
        if name in inits:
            selected[name] = layout
        else:
            missing.append(name)
    return selected, missing


def as_out_in(value, layout):
    return np.array(value.T if layout == "conv1d" else value, dtype=np.float32, order="C")


def quantize_all(inits, selected, dtype):
    """{name: (stored, deq [out, in], out, in)} for every selected weight (fp32: none)."""
    if dtype == "fp32":
        return {}
    result = {}
    for name, layout in selected.items():
        w = as_out_in(inits[name], layout)
        stored, deq = QUANTIZERS[dtype](w)
        result[name] = (stored, deq, w.shape[0], w.shape[1])
    return result


def dequantized_weights(quantized, selected):
    """{name: the dequantized weight in PyTorch's layout} (Conv1D's transposed back)."""
    return {name: np.ascontiguousarray(deq.T if selected[name] == "conv1d" else deq)
            for name, (_, deq, _, _) in quantized.items()}


def load_into(model, weights):
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in weights.items():
            params[name].copy_(torch.from_numpy(value))


def peft_run(name, batch, adapter_dir, base):
    """test_lora.py's PEFT run on the model with the weights `base` ({name: value}) replacing
    its own: the losses of STEPS AdamW steps and the adapters' element count."""
    losses, elements, _ = test_lora.peft_run(name, batch, adapter_dir, base)
    return losses, elements


# ---------------------------------------------------------------------------------------------
# Reading a bundle.

def bundle_buffers(bundle):
    """The buffers of programs[0] of BUNDLE/program.pb, decoded by protoc: a list of dicts
    (name, dtype, shape, region, offset, size_bytes, kind), or None without protoc."""
    protoc = shutil.which("protoc")
    if protoc is None:
        return None
    proto = os.path.join(PROTO_DIR, "program.proto")
    with open(os.path.join(bundle, "program.pb"), "rb") as f:
        text = subprocess.run([protoc, "--decode=shardc.program.Bundle",
                               f"--proto_path={PROTO_DIR}", proto], stdin=f,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True,
                              text=True).stdout
    buffers, stack, current, programs = [], [], None, 0
    for line in text.splitlines():
        s = line.strip()
        opened = re.match(r"^(\w+) \{$", s)
        if opened:
            stack.append(opened.group(1))
            if stack == ["programs"]:
                programs += 1
            if stack == ["programs", "buffers"] and programs == 1:
                current = {"name": "", "dtype": "DTYPE_UNSPECIFIED", "shape": [],
                           "region": "REGION_UNSPECIFIED", "kind": "BUFFER_KIND_UNSPECIFIED",
                           "offset": 0, "size_bytes": 0}
            continue
        if s == "}":
            if stack == ["programs", "buffers"] and current is not None:
                buffers.append(current)
                current = None
            stack.pop()
            continue
        field = re.match(r"^(\w+): (.*)$", s)
        if not field or current is None or stack != ["programs", "buffers"]:
            continue
        key, value = field.groups()
        if key == "name":
            current["name"] = codecs.escape_decode(value[1:-1].encode())[0].decode(
                "utf-8", "replace")
        elif key == "shape":
            current["shape"].append(int(value))
        elif key in ("offset", "size_bytes"):
            current[key] = int(value)
        elif key in ("dtype", "region", "kind"):
            current[key] = value
    return buffers


def weights_buffers(bundle):
    """{name: (buffer, its bytes)} of the WEIGHTS region of programs[0], or None without
    protoc."""
    buffers = bundle_buffers(bundle)
    if buffers is None:
        return None
    with open(os.path.join(bundle, "weights.bin"), "rb") as f:
        data = f.read()
    return {b["name"]: (b, data[b["offset"]:b["offset"] + b["size_bytes"]])
            for b in buffers if b["region"] == "WEIGHTS"}


QUANT_SUFFIXES = (".bf16", ".int8", ".nf4")


def quantized_names(weights):
    return {name[:-len(s)] for name in weights for s in QUANT_SUFFIXES if name.endswith(s)}


def few(names, limit=3):
    names = sorted(names)
    return (f"{len(names)} {names[:limit]}" + (" ..." if len(names) > limit else "")
            if names else "none")


def check_stored(label, dtype, weights, quantized, selected):
    """(ok, text): the bundle's quantized tensors against the test's quantizer."""
    got = quantized_names(weights)
    expected = set(selected) if dtype != "fp32" else set()
    problems = []
    if got != expected:
        problems.append(f"quantized set differs: missing {few(expected - got)}, extra "
                        f"{few(got - expected)}")
    dtypes = collections.Counter()
    compared = differing = 0
    for name in sorted(expected & got):
        stored = quantized[name][0]
        if name in weights:
            problems.append(f"{name}: an f32 copy is still in the weights region")
        for suffix, (want, shape) in stored.items():
            entry = weights.get(f"{name}.{suffix}")
            if entry is None:
                problems.append(f"{name}: no {name}.{suffix} in the weights region")
                continue
            buffer, data = entry
            dtypes[f"{suffix}:{buffer['dtype']}"] += 1
            if buffer["shape"] != shape:
                problems.append(f"{name}.{suffix}: shape {buffer['shape']}, expected {shape}")
            if suffix == "bf16" and buffer["dtype"] != "BF16":
                problems.append(f"{name}.bf16: dtype {buffer['dtype']}, expected BF16")
            if suffix == "absmax" and buffer["dtype"] != "F32":
                problems.append(f"{name}.absmax: dtype {buffer['dtype']}, expected F32")
            compared += len(want)
            if data != want:
                differing += 1
                if len(data) != len(want):
                    problems.append(f"{name}.{suffix}: {len(data)} bytes, expected {len(want)}")
                else:
                    diff = np.flatnonzero(np.frombuffer(data, np.uint8) !=
                                          np.frombuffer(want, np.uint8))
                    problems.append(f"{name}.{suffix}: {diff.size} of {len(want)} bytes "
                                    f"differ, first at byte {int(diff[0])}")
    for name, (buffer, _) in weights.items():
        if name not in expected and buffer["dtype"] not in ("F32", "I64", "I32", "BOOL") \
                and not name.endswith((".absmax",) + QUANT_SUFFIXES):
            problems.append(f"{name}: dtype {buffer['dtype']}")
    shown = "; ".join(problems[:4]) + (f" (+{len(problems) - 4} more)" if len(problems) > 4
                                       else "")
    text = (f"{label} quantized {dtype}: {len(got)} weights quantized (expected "
            f"{len(expected)}), {compared} stored bytes compared bit for bit, {differing} "
            f"tensors differ; dtypes {dict(sorted(dtypes.items())) or '-'}"
            + (f"; {shown}" if problems else ""))
    return not problems, text


# ---------------------------------------------------------------------------------------------

def write_batch(work, batch):
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    for input_name, tensor in batch.items():
        np.save(os.path.join(data, e2e_util.npy_name(input_name)), tensor.numpy())
    return data


def weights_memory(bundle):
    return json.load(open(os.path.join(bundle, "plan.json")))["memory_per_rank"][0]["weights"]


def check_merged(label, name, dtype, batch, merged_path, saved_dir, base, inits):
    """shardrun --export-onnx --merge-lora against PEFT's merge_and_unload of the adapters
    shardrun saved (--save-adapters), on the same base (the dequantized weights for a quantized
    one): every parameter of the exported model within 1e-6 of PEFT's merged model's (max abs
    difference / max abs: both add the f32 product B·A * scale, summed in their own orders),
    the adapted weights (and only they) changed by the merge, and the exported model's forward
    loss (its initializers loaded into PyTorch) within 1e-5 of PEFT's unmerged model's."""
    import peft
    wrapper = build(name)
    load_into(wrapper, base)
    wrapper.model = peft.PeftModel.from_pretrained(wrapper.model, saved_dir)
    args = tuple(batch.values())
    with torch.no_grad():
        peft_loss = float(wrapper(*args))
        wrapper.model = wrapper.model.merge_and_unload()
    reference = {n: p.detach().numpy() for n, p in wrapper.named_parameters()}
    exported = initializers(merged_path)
    worst, compared, merged = 0.0, 0, []
    for n, value in exported.items():
        if n not in reference:
            continue
        compared += 1
        scale = float(np.abs(reference[n]).max()) or 1.0
        worst = max(worst, float(np.abs(value - reference[n]).max()) / scale)
        if not np.array_equal(value, base.get(n, inits[n])):
            merged.append(n)
    fresh = build(name)
    load_into(fresh, {n: v for n, v in exported.items() if n in reference})
    with torch.no_grad():
        loss = float(fresh(*args))
    loss_diff = abs(loss - peft_loss) / abs(peft_loss)
    targets = MODELS[name][1]
    adapted = [n for n in merged if any(n.endswith(f".{t}.weight") for t in targets)]
    ok = (worst <= 1e-6 and merged and len(adapted) == len(merged) and compared > 0 and
          loss_diff <= RTOL)
    return ok, (f"{label} merged {dtype}: {len(merged)} weights changed by the merge, all adapted "
                f"ones: {len(adapted) == len(merged)}; {compared} parameters within {worst:.2e} of "
                f"PEFT's merge_and_unload (<= 1e-6); the merged model's loss {loss:.7f}, PEFT's "
                f"{peft_loss:.7f} (relative {loss_diff:.2e}, <= {RTOL:g})")


def check_model(args, name, style, results):
    label = f"{name}_{style}"
    work = os.path.join(args.work, label)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    batch = zoo.token_batch()
    data = write_batch(work, batch)
    model_path = os.path.join(work, "model.onnx")
    shape_flags = export(build(name), batch, model_path, style)
    inits = initializers(model_path)
    selected, missing = product_weights(build(name), inits)
    if missing:
        results.append((False, f"{label}: the export has no initializers {missing}"))
        return
    targets = "|".join(MODELS[name][1])
    lora = ["--lora", f"r={RANK},alpha={ALPHA},targets={targets}"]
    runs = {}  # dtype -> (bundle, losses, quantized)
    for dtype in DTYPES:
        quantized = quantize_all(inits, selected, dtype)
        adapter_dir = os.path.join(work, f"peft_{dtype}")
        reference, adapter_elements = peft_run(name, batch, adapter_dir,
                                               dequantized_weights(quantized, selected))
        init = ["--lora-init", os.path.join(adapter_dir, "adapter_model.safetensors")]
        bundle = os.path.join(work, f"{dtype}.shard")
        saved_dir = os.path.join(work, f"saved_{dtype}")
        merged_path = os.path.join(work, f"merged_{dtype}.onnx")
        ours, error = compile_and_train(args, model_path, bundle, data,
                                        [*shape_flags, *lora, *init, "--base-dtype", dtype],
                                        ["--save-adapters", saved_dir, "--export-onnx",
                                         merged_path, "--merge-lora"])
        if error:
            results.append((False, f"{label} reference {dtype}: {error}"))
            continue
        runs[dtype] = (bundle, ours, quantized, init)
        diff = zoo.worst_relative(ours, reference)
        results.append((diff <= RTOL, f"{label} reference {dtype}: {STEPS} steps, worst relative "
                                      f"loss difference {diff:.2e} (<= {RTOL:g}); first loss "
                                      f"{ours[0]:.6f} (PEFT {reference[0]:.6f}), last "
                                      f"{ours[-1]:.6f} (PEFT {reference[-1]:.6f})"))
        results.append(check_merged(label, name, dtype, batch, merged_path, saved_dir,
                                    dequantized_weights(quantized, selected), inits))
        totals = json.load(open(os.path.join(bundle, "plan.json")))["parameter_totals"]
        results.append((totals["trained_elements"] == adapter_elements,
                        f"{label} trained {dtype}: {totals['trained_elements']} trained elements "
                        f"in the plan, PEFT's adapters {adapter_elements}"))
        if style != "static":
            continue
        weights = weights_buffers(bundle)
        if weights is None:
            results.append((True, f"{label} quantized {dtype}: SKIP (no protoc)"))
        else:
            results.append(check_stored(label, dtype, weights, quantized, selected))
        if dtype != "fp32":
            plan = open(os.path.join(bundle, "plan.txt")).read()
            line = next((l for l in plan.splitlines() if "stored in fewer bits" in l), "")
            listed = {l.strip().split(": ")[0] for l in plan.splitlines()
                      if l.startswith("    ") and l.strip().endswith(f": {dtype}")}
            ok = line.endswith(f"{len(quantized)} weights as {dtype}") and listed == set(quantized)
            results.append((ok, f"{label} plan {dtype}: plan.txt says '{line.strip()}' and lists "
                                f"{len(listed)} weights (the quantized set: {listed == set(quantized)})"))
    if style != "static":
        return

    if "fp32" in runs:
        base = weights_memory(runs["fp32"][0])
        for dtype in DTYPES[1:]:
            if dtype not in runs:
                continue
            quantized = runs[dtype][2]
            saved = sum(4 * o * i - stored_bytes(dtype, o, i)
                        for _, _, o, i in quantized.values())
            mem = weights_memory(runs[dtype][0])
            shrunk = base["parameters"] - mem["parameters"]
            results.append((shrunk == saved,
                            f"{label} memory {dtype}: weights-region parameters {mem['parameters']}"
                            f" bytes against fp32's {base['parameters']}: {shrunk} fewer, "
                            f"expected {saved} ({len(quantized)} weights, "
                            f"{sum(o * i for _, _, o, i in quantized.values())} elements); "
                            f"region {mem['bytes']} bytes against {base['bytes']} "
                            f"(constants {mem['constants']}, alignment {mem['alignment']})"))

    for dtype in SHARDED_DTYPES:
        if dtype not in runs:
            continue
        _, ours, _, init = runs[dtype]
        for gpus, strategy in STRATEGIES:
            bundle = os.path.join(work, f"{dtype}_{strategy.replace(',', '_')}.shard")
            sharded, error = compile_and_train(
                args, model_path, bundle, data,
                [*shape_flags, *lora, *init, "--base-dtype", dtype, "--gpus", gpus,
                 "--strategy", strategy])
            results.append(test_lora.sharded_result(f"{label} sharded {dtype} {strategy}",
                                                    sharded, error, bundle, ours))


def check_keep(args, results):
    """--base-dtype-keep c_proj on GPT-2: both c_proj modules stay f32."""
    work = os.path.join(args.work, "hf_gpt2_static")
    model_path = os.path.join(work, "model.onnx")
    inits = initializers(model_path)
    selected, _ = product_weights(build("hf_gpt2"), inits, keep=f"{KEEP_DEFAULT}|c_proj")
    bundle = os.path.join(work, "keep.shard")
    res = e2e_util.run_tool([args.shardc, model_path, "-o", bundle, "--lora",
                             f"r={RANK},alpha={ALPHA},targets=c_attn", "--base-dtype", "int8",
                             "--base-dtype-keep", "c_proj"], 300)
    if not res.ok:
        results.append((False, f"hf_gpt2_static keep: {res.describe()}"))
        return
    weights = weights_buffers(bundle)
    if weights is None:
        results.append((True, "hf_gpt2_static keep: SKIP (no protoc)"))
        return
    ok, text = check_stored("hf_gpt2_static", "int8", weights,
                            quantize_all(inits, selected, "int8"), selected)
    kept = sorted(n for n in weights if n.endswith("c_proj.weight"))
    ok = ok and len(kept) == 4 and all(weights[n][0]["dtype"] == "F32" for n in kept)
    results.append((ok, text.replace("quantized int8", "keep c_proj (int8)") +
                    f"; f32 c_proj weights {len(kept)}"))


class LossAndLogits(torch.nn.Module):
    """forward(*batch) -> (the model's loss, its logits)."""

    def __init__(self, model, names):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *inputs):
        out = self.model(**dict(zip(self.names, inputs)))
        return out.loss, out.logits


def check_forward(args, results):
    work = os.path.join(args.work, "forward")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    batch = zoo.token_batch()
    data = write_batch(work, batch)
    wrapper = build("hf_gpt2")
    model = LossAndLogits(wrapper.model, wrapper.names)
    model_path = os.path.join(work, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(model, tuple(batch.values()), model_path, opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=list(batch), output_names=["loss", "logits"])
    inits = initializers(model_path)
    selected, missing = product_weights(wrapper, inits)
    if missing:
        results.append((False, f"forward: the export has no initializers {missing}"))
        return
    for dtype in ("int8", "nf4", "bf16"):
        label = f"hf_gpt2_static forward {dtype}"
        quantized = quantize_all(inits, selected, dtype)
        reference = LossAndLogits(build("hf_gpt2").model, wrapper.names)
        load_into(reference, dequantized_weights(quantized, selected))
        with torch.no_grad():
            loss, logits = reference(*tuple(batch.values()))
        bundle = os.path.join(work, f"{dtype}.shard")
        out = os.path.join(work, f"{dtype}_out")
        res = e2e_util.run_tool([args.shardc, model_path, "-o", bundle, "--mode", "forward",
                                 "--base-dtype", dtype], 300)
        if res.ok:
            res = e2e_util.run_tool([args.shardrun, bundle, "--data", data, "--outputs", out],
                                    300)
        if not res.ok:
            results.append((False, f"{label}: {res.describe()}"))
            continue
        got_loss, err = e2e_util.load_output(out, "loss")
        got_logits, err2 = e2e_util.load_output(out, "logits")
        if err or err2:
            results.append((False, f"{label}: {err or err2}"))
            continue
        loss_diff = abs(float(got_loss) - float(loss)) / abs(float(loss))
        want = logits.numpy()
        if got_logits.shape != want.shape:
            results.append((False, f"{label}: logits shape {list(got_logits.shape)}, PyTorch "
                                   f"{list(want.shape)}"))
            continue
        logits_diff = float(np.abs(got_logits.astype(np.float64) - want).max() /
                            np.abs(want).max())
        ok = loss_diff <= RTOL and logits_diff <= RTOL
        text = (f"{label}: loss {float(got_loss):.7f} (PyTorch on the dequantized base "
                f"{float(loss):.7f}, relative {loss_diff:.2e}), logits max abs difference / max "
                f"abs {logits_diff:.2e} (<= {RTOL:g})")
        weights = weights_buffers(bundle)
        if weights is not None:
            stored_ok, stored_text = check_stored("", dtype, weights, quantized, selected)
            ok = ok and stored_ok
            text += "; " + stored_text.split(": ", 1)[1]
        results.append((ok, text))


class TinyLinear(torch.nn.Module):
    """nn.Linear(24, 20): a 480-element weight, not a multiple of nf4's block of 64."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(24, 20)

    def forward(self, x, y):
        return ((self.lin(x) - y) ** 2).mean()


def check_refusals(args, results):
    work = os.path.join(args.work, "refused")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    torch.manual_seed(0)
    tiny = TinyLinear()
    tiny_path = os.path.join(work, "tiny.onnx")
    with torch.no_grad():
        torch.onnx.export(tiny, (torch.randn(4, 24), torch.randn(4, 20)), tiny_path,
                          opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, input_names=["x", "y"],
                          output_names=["loss"])
    gpt2_path = os.path.join(args.work, "hf_gpt2_static", "model.onnx")
    cases = [
        (tiny_path, ["--lora", "r=2,targets=lin", "--base-dtype", "nf4"], 1,
         "--base-dtype nf4: weight 'lin.weight' has 480 elements, not a multiple of the block "
         "size 64"),
        (gpt2_path, ["--base-dtype", "nf4"], 2, "--lora"),
        (gpt2_path, ["--lora", f"r={RANK},targets=c_attn", "--base-dtype", "fp8"], 2,
         "--base-dtype"),
    ]
    for path, flags, code, message in cases:
        res = e2e_util.run_tool([args.shardc, path, "-o", os.path.join(work, "refused.shard"),
                                 *flags], 300)
        lines = res.stderr.strip().splitlines()
        ok = res.returncode == code and len(lines) == 1 and message in lines[0]
        if code == 2 and flags[:2] == ["--base-dtype", "nf4"]:
            ok = ok and "--base-dtype" in lines[0]
        results.append((ok, f"refused {os.path.basename(path)} {' '.join(flags)}: exit "
                            f"{res.returncode} (expected {code}): "
                            f"{lines[0] if lines else '(no message)'}"
                            + (f" (+{len(lines) - 1} more lines)" if len(lines) > 1 else "")))
    # shardrun: --export-onnx of a LoRA bundle without --merge-lora, --merge-lora without
    # --export-onnx, --merge-lora on a bundle without adapters.
    gpt2_work = os.path.join(args.work, "hf_gpt2_static")
    data = os.path.join(gpt2_work, "data")
    plain = os.path.join(work, "plain.shard")
    e2e_util.run_tool([args.shardc, gpt2_path, "-o", plain], 300)
    exported = os.path.join(work, "x.onnx")
    for bundle, flags, code, message in [
            (os.path.join(gpt2_work, "nf4.shard"), ["--export-onnx", exported], 1,
             "add --merge-lora to export the model with the adapters merged into its weights"),
            (os.path.join(gpt2_work, "nf4.shard"), ["--merge-lora"], 2,
             "--merge-lora applies to --export-onnx FILE"),
            (plain, ["--export-onnx", exported, "--merge-lora"], 2,
             "no lora.json: --merge-lora applies to bundles compiled with shardc --lora")]:
        res = e2e_util.run_tool([args.shardrun, bundle, "--steps", "1", "--data", data, *flags],
                                300)
        lines = res.stderr.strip().splitlines()
        ok = res.returncode == code and len(lines) == 1 and message in lines[0]
        results.append((ok, f"refused shardrun {os.path.basename(bundle)} {' '.join(flags)}: "
                            f"exit {res.returncode} (expected {code}): "
                            f"{lines[0] if lines else '(no message)'}"
                            + (f" (+{len(lines) - 1} more lines)" if len(lines) > 1 else "")))
    # The block size is nf4's alone: int8 quantizes the same weight per row.
    res = e2e_util.run_tool([args.shardc, tiny_path, "-o", os.path.join(work, "int8.shard"),
                             "--lora", "r=2,targets=lin", "--base-dtype", "int8"], 300)
    results.append((res.ok, f"refused: int8 on the same 480-element weight compiles: "
                            f"{'yes' if res.ok else res.describe()}"))


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__))
    results = []
    for name in MODELS:
        for style in ("static", "dynamic"):
            check_model(args, name, style, results)
    check_keep(args, results)
    check_forward(args, results)
    check_refusals(args, results)
    sys.exit(e2e_util.report(results))


if __name__ == "__main__":
    main()
