"""Export a Hugging Face causal or masked language model for shardc, with a data set to train on.

    export_hf.py --arch llama --out llama/ [--pretrained NAME] [--layers 2 --hidden 64
                 --heads 4 --kv-heads 2 --vocab 256] [--batch 4 --seq 32] [--batches 8]
                 [--text FILE]

Builds the model (from its config class with the given sizes and random weights, or
--pretrained NAME with from_pretrained), wraps it so that the graph returns the model's own loss
(Hugging Face's loss code, label shift included), and writes:

  OUT/model.onnx   exported by shardc_export.export (training mode, the trained parameters
                   recorded), batch and sequence baked in (--batch, --seq: the global batch)
  OUT/data/        input_ids.npy and labels.npy, --batches batches of [batch, seq] tokens: from
                   --text (its UTF-8 bytes, modulo the vocabulary) or random

then shardc compiles OUT/model.onnx and shardrun trains it on OUT/data (see the README).
Needs `transformers` (tools/setup.sh installs it into .venv).
"""

import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shardc_export  # noqa: E402

ARCHS = {
    # arch: (config class, model class, causal)
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", True),
    "llama": ("LlamaConfig", "LlamaForCausalLM", True),
    "mistral": ("MistralConfig", "MistralForCausalLM", True),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", True),
    "bert": ("BertConfig", "BertForMaskedLM", False),
}


class LossOf(torch.nn.Module):
    """forward(input_ids, labels) -> the wrapped model's own loss."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, labels):
        return self.model(input_ids=input_ids, labels=labels).loss


def build(args):
    import transformers
    config_name, model_name, _ = ARCHS[args.arch]
    model_class = getattr(transformers, model_name)
    if args.pretrained:
        return model_class.from_pretrained(args.pretrained, attn_implementation="eager")
    sizes = dict(vocab_size=args.vocab, num_hidden_layers=args.layers, hidden_size=args.hidden,
                 num_attention_heads=args.heads, intermediate_size=2 * args.hidden,
                 max_position_embeddings=max(64, args.seq))
    if args.arch == "gpt2":
        sizes = dict(vocab_size=args.vocab, n_layer=args.layers, n_embd=args.hidden,
                     n_head=args.heads, n_positions=max(64, args.seq))
    elif args.arch != "bert":
        sizes.update(num_key_value_heads=args.kv_heads, tie_word_embeddings=False)
    config = getattr(transformers, config_name)(use_cache=False, attn_implementation="eager",
                                                **sizes)
    return model_class(config)


def tokens(args, vocab):
    count = args.batches * args.batch * args.seq
    if args.text:
        with open(args.text, "rb") as f:
            data = np.frombuffer(f.read(), dtype=np.uint8).astype(np.int64) % vocab
        if data.size < count:
            sys.exit(f"export_hf: {args.text}: {data.size} bytes, fewer than the {count} "
                     f"tokens of {args.batches} batches of {args.batch}x{args.seq}")
        data = data[:count]
    else:
        data = torch.randint(1, vocab, (count,), generator=torch.Generator().manual_seed(0))
        data = data.numpy()
    return data.reshape(args.batches * args.batch, args.seq)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arch", choices=sorted(ARCHS), required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--pretrained", help="a from_pretrained name or directory (sizes ignored)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--batch", type=int, default=4, help="the global batch (rows per step)")
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--batches", type=int, default=8)
    p.add_argument("--text", help="train on this file's bytes instead of random tokens")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    for name in ("layers", "hidden", "heads", "kv_heads", "vocab", "batch", "seq", "batches"):
        if getattr(args, name) < 1:
            sys.exit(f"export_hf: --{name.replace('_', '-')} must be positive")

    torch.manual_seed(args.seed)
    model = LossOf(build(args))
    vocab = model.model.config.vocab_size
    ids = tokens(args, vocab)
    os.makedirs(os.path.join(args.out, "data"), exist_ok=True)
    np.save(os.path.join(args.out, "data", "input_ids.npy"), ids)
    np.save(os.path.join(args.out, "data", "labels.npy"), ids)
    example = torch.from_numpy(ids[:args.batch])
    path = os.path.join(args.out, "model.onnx")
    with torch.no_grad():
        shardc_export.export(model, (example, example), path,
                             input_names=["input_ids", "labels"], output_names=["loss"])
    trained = len(shardc_export.trainable_names(model))
    print(f"export_hf: wrote {path} ({args.arch}, {trained} trained parameters, global batch "
          f"{args.batch}x{args.seq}) and {args.batches} batches in "
          f"{os.path.join(args.out, 'data')}")


if __name__ == "__main__":
    main()
