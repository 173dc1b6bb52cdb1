"""Hugging Face models, unchanged: their ordinary ONNX exports trained by shardc against PyTorch.

    test_model_zoo.py --shardc PATH --shardrun PATH --work DIR [--models gpt2,llama]
                      [--table FILE]

Runs under a Python that has `transformers` (tools/setup.sh makes .venv with transformers 4.49,
the newest release that runs on Debian's torch 1.13). Each model is built from its
transformers config class with small random sizes (vocab 256, hidden 64, 2 layers, 4 heads;
2 key/value heads for the Llama family: grouped-query attention), wrapped so that the graph
returns the model's own loss (HF's loss code, label shift included) and its logits, and exported
by torch.onnx.export (opset 17, training mode) in both styles: with dynamic_axes (batch and
sequence symbolic, given to shardc with --input-shape) and without (baked into the graph).

Per model and style:
  forward    shardrun --mode forward's loss within 1e-5 (relative) of PyTorch's
  train      30 AdamW steps (lr 1e-3, weight decay 0.01) on one batch: every step's loss within
             1e-5 of torch.optim.AdamW's on the same module, and the trained set equal to
             PyTorch's named_parameters()
  dp2_zero3  --gpus 2 --strategy zero3: every step within 1e-5 of the 1-rank run
  tp2        --gpus 2 --strategy tp=2: the same
Writes the table (model x style x check, worst relative difference) to --table.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402

BATCH, SEQ, VOCAB = 2, 16, 256
STEPS = 30
RTOL = 1e-5


def decoder(config_name, model_name, **extra):
    def build():
        import transformers
        config = getattr(transformers, config_name)(
            vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
            attention_dropout=0.0, tie_word_embeddings=False, use_cache=False,
            attn_implementation="eager", **extra)
        return getattr(transformers, model_name)(config)
    return build


def gpt2():
    import transformers
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2,
                                     n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                     use_cache=False, attn_implementation="eager")
    return transformers.GPT2LMHeadModel(config)


def bert():
    import transformers
    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=128,
                                     max_position_embeddings=64, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0,
                                     attn_implementation="eager")
    return transformers.BertForMaskedLM(config)


MODELS = {
    "gpt2": gpt2,
    "llama": decoder("LlamaConfig", "LlamaForCausalLM"),
    "mistral": decoder("MistralConfig", "MistralForCausalLM", sliding_window=None),
    "qwen2": decoder("Qwen2Config", "Qwen2ForCausalLM", sliding_window=None),
    "bert_mlm": bert,
}


class WithLoss(torch.nn.Module):
    """forward(input_ids, labels) -> (the model's own loss, logits)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, labels):
        out = self.model(input_ids=input_ids, labels=labels)
        return out.loss, out.logits


class Zoo:
    def __init__(self, args):
        self.args = args
        generator = torch.Generator().manual_seed(0)
        self.ids = torch.randint(1, VOCAB, (BATCH, SEQ), generator=generator)
        self.data = os.path.join(args.work, "data")
        os.makedirs(self.data, exist_ok=True)
        np.save(os.path.join(self.data, "input_ids.npy"), self.ids.numpy())
        np.save(os.path.join(self.data, "labels.npy"), self.ids.numpy())
        self.rows = []  # (model, style, check, worst relative difference or error)

    def module(self, name):
        torch.manual_seed(0)
        model = WithLoss(MODELS[name]())
        model.train()
        return model

    def export(self, name, style):
        model = self.module(name)
        out = os.path.join(self.args.work, f"{name}_{style}")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        path = os.path.join(out, "model.onnx")
        dynamic = {"input_ids": {0: "batch", 1: "seq"}, "labels": {0: "batch", 1: "seq"},
                   "logits": {0: "batch", 1: "seq"}} if style == "dynamic" else None
        with torch.no_grad():
            loss = float(model(self.ids, self.ids)[0])
            torch.onnx.export(model, (self.ids, self.ids), path, opset_version=17,
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False, input_names=["input_ids", "labels"],
                              output_names=["loss", "logits"], dynamic_axes=dynamic)
        return model, path, loss

    def shape_flags(self, style):
        if style == "static":
            return []
        return ["--input-shape", f"input_ids={BATCH}x{SEQ}", "--input-shape",
                f"labels={BATCH}x{SEQ}"]

    def compile(self, path, style, out, *flags):
        res = e2e_util.run_tool([self.args.shardc, path, "-o", out, *self.shape_flags(style),
                                 *flags], self.args.timeout)
        return None if res.ok else f"shardc {' '.join(flags)}: {res.describe()}"

    def train(self, bundle, metrics):
        res = e2e_util.run_tool([self.args.shardrun, bundle, "--steps", str(STEPS), "--data",
                                 self.data, "--metrics", metrics], self.args.timeout)
        if not res.ok:
            return f"shardrun {bundle}: {res.describe()}"
        return [json.loads(line)["loss"] for line in open(metrics)]

    def torch_losses(self, model):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
        losses = []
        for _ in range(STEPS):
            optimizer.zero_grad()
            loss = model(self.ids, self.ids)[0]
            loss.backward()
            optimizer.step()
            losses.append(float(loss))
        return losses

    def run(self, name, style):
        """All checks of one export; returns the case's verdict."""
        model, path, torch_loss = self.export(name, style)
        out = os.path.dirname(path)
        errors, details = [], []

        def check(check_name, result):
            """`result`: the worst relative difference, or an error string."""
            self.rows.append((name, style, check_name, result))
            if isinstance(result, str):
                errors.append(f"{check_name}: {result}")
            else:
                details.append(f"{check_name} {result:.2g}")
                if result > RTOL:
                    errors.append(f"{check_name}: relative difference {result:.3g} > {RTOL}")

        forward = os.path.join(out, "forward.shard")
        err = self.compile(path, style, forward, "--mode", "forward")
        if err is None:
            res = e2e_util.run_tool([self.args.shardrun, forward, "--data", self.data,
                                     "--outputs", os.path.join(out, "outputs")],
                                    self.args.timeout)
            if res.ok:
                got = float(np.load(os.path.join(out, "outputs", "loss.npy")))
                check("forward", abs(got - torch_loss) / abs(torch_loss))
            else:
                check("forward", f"shardrun: {res.describe()}")
        else:
            check("forward", err)

        reference = self.torch_losses(model)
        one = os.path.join(out, "train.shard")
        err = self.compile(path, style, one)
        single = err or self.train(one, os.path.join(out, "train.jsonl"))
        if isinstance(single, str):
            check("train", single)
            return "; ".join(errors)
        check("train", max(abs(a - b) / abs(b) for a, b in zip(single, reference)))
        plan = json.load(open(os.path.join(one, "plan.json")))
        trained = sorted(p["name"] for p in plan["parameters"] if p.get("trained"))
        expected = sorted(n for n, p in model.named_parameters() if p.requires_grad)
        if trained != expected:
            errors.append(f"trained set differs from PyTorch's: only shardc "
                          f"{sorted(set(trained) - set(expected))}, only PyTorch "
                          f"{sorted(set(expected) - set(trained))}")

        for check_name, strategy in (("dp2_zero3", "zero3"), ("tp2", "tp=2")):
            bundle = os.path.join(out, f"{check_name}.shard")
            err = self.compile(path, style, bundle, "--gpus", "2", "--strategy", strategy)
            sharded = err or self.train(bundle, os.path.join(out, f"{check_name}.jsonl"))
            if isinstance(sharded, str):
                check(check_name, sharded)
                continue
            check(check_name, max(abs(a - b) / abs(b) for a, b in zip(sharded, single)))
        return ("; ".join(errors) or None), ", ".join(details)

    def write_table(self, path):
        lines = ["| model | style | check | worst relative difference |", "|---|---|---|---|"]
        for name, style, check, result in self.rows:
            cell = f"{result:.3g}" if not isinstance(result, str) else f"FAILED: {result}"
            lines.append(f"| {name} | {style} | {check} | {cell} |")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shardc", required=True)
    p.add_argument("--shardrun", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--table")
    p.add_argument("--timeout", type=int, default=300)
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    import transformers
    print(f"torch {torch.__version__}, transformers {transformers.__version__}", flush=True)
    zoo = Zoo(args)
    cases = [(f"{name}_{style}", lambda n=name, s=style: zoo.run(n, s))
             for name in args.models.split(",") for style in ("static", "dynamic")]
    try:
        e2e_util.run_cases(cases)
    finally:
        if args.table:
            zoo.write_table(args.table)


if __name__ == "__main__":
    main()
