"""PyTorch reference training run for the test models: the numbers shardc's training must follow.

    train_reference.py --model tiny_gpt --model-dir EXPORTED --out DIR [--make-data BATCHES]
                       [--data DIR] [--batch ROWS] [--steps 30] [--dropout-seed S] [--optimizer adamw|sgd]
                       [optimizer flags] [--precision fp32|bf16|fp16]

The module is rebuilt from the export script's class and loaded with the *ONNX model's*
initializers (by name), so both sides start from the same bytes whatever the seeds. Training data
follows shardrun's convention: DIR/<name>.npy per graph input, leading dimension a multiple of
the model's batch B; step k (from 1) uses rows [(k-1)B, kB) modulo that dimension. With
--make-data N the script first writes N batches of deterministic data into DIR/data.

Writes DIR/losses.jsonl (one {"step": k, "loss": x} per step, x with 9 significant digits: the
loss of the forward pass at step k, before its update), DIR/params/<name>.npy (every
parameter after the last step) and DIR/grad_absmax/<name>.npy (each element's largest
|gradient| over the run, before clipping: it tells which elements only ever saw rounding noise,
e.g. attention key biases, whose exact gradient is zero because softmax ignores a per-row shift).

Dropout layers draw shardc's masks (philox_dropout.py) from --dropout-seed, the seed shardrun
gets: PyTorch's own masks could not be compared step by step.
"""

import argparse
import importlib
import json
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bf16_policy  # noqa: E402
import export_util  # noqa: E402
import philox_dropout  # noqa: E402

# Export script, module class and graph input names of each model.
MODELS = {
    "tiny_gpt": ("export_tiny_gpt", "TinyGPT", ["idx", "targets"]),
    "tied_gpt": ("export_tied_gpt", "TiedGPT", ["idx", "targets"]),
    "deep_gpt": ("export_deep_gpt", "DeepGPT", ["idx", "targets"]),
    "dropout_gpt": ("export_dropout_gpt", "DropoutGPT", ["idx", "targets"]),
    "llama_decoder": ("export_llama_decoder", "LlamaDecoder", ["idx", "targets"]),
    "dropout_llama": ("export_dropout_llama", "DropoutLlama", ["idx", "targets"]),
    "mlp_classifier": ("export_mlp_classifier", "MLPClassifier", ["x", "y"]),
    "bert_encoder": ("export_bert_encoder", "BertClassifier",
                     ["input_ids", "token_type_ids", "attention_mask", "labels"]),
}


def make_data(name, module, batches, rows, rng):
    """`batches` batches of `rows` rows of valid inputs for model `name` (token ids below the
    vocabulary...)."""
    if name in ("tiny_gpt", "tied_gpt", "deep_gpt", "dropout_gpt", "llama_decoder",
                "dropout_llama"):
        n = rows * batches
        tokens = rng.integers(0, module.VOCAB, size=(n, module.SEQ + 1))
        return {"idx": tokens[:, :-1], "targets": tokens[:, 1:]}
    if name == "mlp_classifier":
        n = rows * batches
        return {"x": rng.standard_normal((n, module.IN_FEATURES)).astype(np.float32),
                "y": rng.integers(0, module.CLASSES, size=(n,))}
    n = rows * batches
    lengths = rng.integers(3, module.SEQ + 1, size=n)
    mask = (np.arange(module.SEQ)[None, :] < lengths[:, None]).astype(np.int64)
    segments = (np.arange(module.SEQ)[None, :] >= lengths[:, None] // 2).astype(np.int64)
    labels = rng.integers(0, module.CLASSES, size=n)
    labels[rng.random(n) < 0.2] = -100  # some ignored labels, like the export's sample batch
    return {"input_ids": rng.integers(0, module.VOCAB, size=(n, module.SEQ)),
            "token_type_ids": segments, "attention_mask": mask, "labels": labels}


def load_onnx_weights(model, onnx_path):
    """Copies every ONNX initializer into the parameter or buffer of the same name.

    Shared (tied) parameters are one tensor, listed once by named_parameters(), which is the
    name the export gives them.
    """
    proto = onnx.load_model(onnx_path)  # external data is loaded from beside the model
    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    tensors = list(model.named_parameters()) + list(model.named_buffers())
    missing = [name for name, _ in tensors if name not in inits]
    if missing:
        raise SystemExit(f"{onnx_path}: no initializer for {', '.join(missing)}")
    with torch.no_grad():
        for name, tensor in tensors:
            tensor.copy_(torch.from_numpy(np.array(inits[name])))


def make_optimizer(args, params):
    if args.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps,
                                 weight_decay=args.weight_decay)
    return torch.optim.SGD(params, lr=args.lr, momentum=args.momentum, nesterov=args.nesterov,
                           weight_decay=args.weight_decay)


class LossScaler:
    """torch.cuda.amp.GradScaler's dynamic loss scaling, step for step (torch 1.13's GradScaler
    runs only on CUDA, so its rule is written out here, with its defaults growth_factor 2 and
    backoff_factor 0.5): backward from loss x scale; unscale_ multiplies every gradient by the
    float32 reciprocal of the scale and finds any non-finite element
    (_amp_foreach_non_finite_check_and_unscale_); step() is skipped when one was found; update()
    is _amp_update_scale_: found -> scale x 0.5 and the growth tracker 0, else the tracker + 1,
    and at growth_interval scale x 2 and the tracker 0."""

    def __init__(self, init_scale, growth_interval):
        self.scale = float(init_scale)
        self.growth_interval = growth_interval
        self.tracker = 0

    def unscale(self, params):
        inv = torch.tensor(self.scale, dtype=torch.float64).reciprocal().float()
        found = False
        for p in params:
            if p.grad is not None:
                p.grad.mul_(inv)
                found = found or not bool(torch.isfinite(p.grad).all())
        return found

    def update(self, found):
        if found:
            self.scale *= 0.5
            self.tracker = 0
        else:
            self.tracker += 1
            if self.tracker == self.growth_interval:
                self.scale *= 2.0
                self.tracker = 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, choices=sorted(MODELS))
    p.add_argument("--model-dir", required=True, help="directory written by the export script")
    p.add_argument("--out", required=True)
    p.add_argument("--data", help="training data directory (default: OUT/data)")
    p.add_argument("--make-data", type=int, metavar="BATCHES",
                   help="first write this many batches of deterministic data")
    p.add_argument("--batch", type=int, metavar="ROWS",
                   help="rows per step (default: the export script's sample batch, the model's "
                        "dim 0; a model re-batched with export_util.with_global_batch trains "
                        "on more)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--dropout-seed", type=int, default=0,
                   help="seed of the dropout masks (shardrun --seed)")
    p.add_argument("--optimizer", choices=["adamw", "sgd"], default="adamw")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.999)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--weight-decay", type=float)
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--nesterov", action="store_true")
    p.add_argument("--grad-clip", type=float, help="clip the global gradient norm to this")
    p.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32",
                   help="bf16: shardc --precision bf16's cast policy (bf16_policy.py); fp16: "
                        "the same in float16, with dynamic loss scaling (LossScaler below)")
    p.add_argument("--micro-batches", type=int, default=1, metavar="K",
                   help="run each batch as K equal parts, gradients accumulated in f32 (each "
                        "part's loss weighted by its share of the rows: a mean loss without "
                        "ignored labels), as gradient accumulation and data parallelism do")
    p.add_argument("--loss-scale-init", type=float, default=65536.0)
    p.add_argument("--loss-scale-growth-interval", type=int, default=2000)
    args = p.parse_args()
    if args.weight_decay is None:  # PyTorch's defaults: AdamW 0.01, SGD 0
        args.weight_decay = 0.01 if args.optimizer == "adamw" else 0.0

    script, class_name, input_names = MODELS[args.model]
    module = importlib.import_module(script)
    torch.manual_seed(args.seed)
    model = getattr(module, class_name)()
    load_onnx_weights(model, os.path.join(args.model_dir, "model.onnx"))
    dropout_key = philox_dropout.DropoutKey(args.dropout_seed)
    philox_dropout.use_philox_dropout(model, dropout_key)
    model.train()

    data_dir = args.data or os.path.join(args.out, "data")
    if args.make_data:
        os.makedirs(data_dir, exist_ok=True)
        rng = np.random.default_rng(args.seed)
        rows = args.batch or module.BATCH
        for name, value in make_data(args.model, module, args.make_data, rows, rng).items():
            np.save(os.path.join(data_dir, export_util.npy_name(name) + ".npy"), value)
    data = {n: np.load(os.path.join(data_dir, export_util.npy_name(n) + ".npy"))
            for n in input_names}
    rows = {len(v) for v in data.values()}
    batch = args.batch or module.BATCH
    if len(rows) != 1 or rows.pop() % batch:
        raise SystemExit(f"{data_dir}: every input needs the same number of rows, a multiple of {batch}")
    total = len(data[input_names[0]])
    if args.micro_batches < 1 or batch % args.micro_batches:
        raise SystemExit(f"--micro-batches {args.micro_batches} does not divide the batch of {batch}")

    optimizer = make_optimizer(args, model.parameters())
    scaler = (LossScaler(args.loss_scale_init, args.loss_scale_growth_interval)
              if args.precision == "fp16" else None)
    os.makedirs(os.path.join(args.out, "params"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "grad_absmax"), exist_ok=True)
    grad_absmax = {name: torch.zeros_like(p) for name, p in model.named_parameters()}
    with open(os.path.join(args.out, "losses.jsonl"), "w") as log:
        for step in range(1, args.steps + 1):
            rows_k = [(r % total) for r in range((step - 1) * batch, step * batch)]
            inputs = [torch.from_numpy(np.ascontiguousarray(data[n][rows_k])) for n in input_names]
            dropout_key.start_step(step)
            optimizer.zero_grad(set_to_none=True)
            if scaler is not None:
                record_scale = scaler.scale
            loss_value = 0.0
            for part in np.array_split(np.arange(batch), args.micro_batches):
                part_inputs = [x[part] for x in inputs] if args.micro_batches > 1 else inputs
                if args.precision in ("bf16", "fp16"):
                    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float16
                    with bf16_policy.BF16Matmuls(dtype):
                        loss = model(*part_inputs)[0]
                else:
                    loss = model(*part_inputs)[0]
                if args.micro_batches > 1:
                    loss = loss * (len(part) / batch)
                loss_value += loss.item()
                (loss * scaler.scale if scaler is not None else loss).backward()
            record = {"step": step, "loss": float(f"{loss_value:.9g}")}
            if scaler is not None:
                record["loss_scale"] = record_scale
                overflow = scaler.unscale(model.parameters())
                record["overflow"] = overflow
            else:
                overflow = False
            for name, p in model.named_parameters():
                grad_absmax[name] = torch.maximum(grad_absmax[name], p.grad.abs())
            if args.grad_clip and not overflow:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
            if not overflow:
                optimizer.step()
            if scaler is not None:
                scaler.update(overflow)
            log.write(json.dumps(record) + "\n")
    for name, value in model.named_parameters():
        np.save(os.path.join(args.out, "params", export_util.npy_name(name) + ".npy"),
                value.detach().numpy())
        np.save(os.path.join(args.out, "grad_absmax", export_util.npy_name(name) + ".npy"),
                grad_absmax[name].numpy())
    print(f"{args.model}: {args.steps} {args.optimizer} steps, final loss "
          f"{loss.item():.9g}, wrote {args.out}")


if __name__ == "__main__":
    main()
