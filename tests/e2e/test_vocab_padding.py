"""Tensor parallelism pads a vocabulary it does not divide, and the loss stays exact.

    test_vocab_padding.py --shardc PATH --shardrun PATH --work DIR

A GPT-2-shaped Hugging Face model (transformers.GPT2LMHeadModel: a vocabulary of 50257, 12
heads, tied embedding and output projection, its own shifted cross-entropy) exported with and
without dynamic_axes, trained 4 steps with AdamW on 2 batches of 4 rows:
  - on one rank, within 1e-5 (relative) of PyTorch's losses on the same weights and batches;
  - under tp=8, dp=2,tp=8 and dp=2,tp=8 with ZeRO-3 (8 and 16 ranks), within 1e-5 of the
    one-rank run. The embedding
    must be split on tp along its vocabulary, padded to 50264 (plan.json: 8 blocks of 6283
    rows, padded_dim_size 50264, global shape [50257, 96]), and the compile must say so;
  - the tp=8 run's checkpoint and --export-onnx hold the embedding unpadded, [50257, 96], equal
    to the one-rank run's within 1e-5; a one-rank run resumed from the tp=8 checkpoint
    continues the one-rank losses.
Twelve heads do not divide by 8 and cannot be padded: the attention stays whole, as plan.txt
says. Prints PASS/FAIL per case and `N passed, M failed`.
"""

import contextlib
import json
import os
import shutil
import struct
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "tools", "export"))
import e2e_util  # noqa: E402
import shardc_export  # noqa: E402

VOCAB, HEADS, EMBED, SEQ = 50257, 12, 96, 16
ROWS, STEPS, LR = 4, 4, 1e-3
RTOL = 1e-5
WTE = "model.transformer.wte.weight"
CONFIGS = [("tp8", ["--gpus", "8", "--strategy", "tp=8"]),
           ("dp2_tp8", ["--gpus", "16", "--strategy", "dp=2,tp=8"]),
           ("dp2_tp8_zero3", ["--gpus", "16", "--strategy", "dp=2,tp=8,zero=3"])]


class Gpt2Loss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        import transformers
        config = transformers.GPT2Config(
            vocab_size=VOCAB, n_positions=SEQ, n_embd=EMBED, n_layer=2, n_head=HEADS,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False,
            attn_implementation="eager")
        self.model = transformers.GPT2LMHeadModel(config)

    def forward(self, input_ids, labels):
        return self.model(input_ids=input_ids, labels=labels).loss


def build():
    torch.manual_seed(0)
    return Gpt2Loss()


def data():
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, VOCAB, (2 * ROWS, SEQ), generator=g)
    # The last ids of the vocabulary too: the rows next to the padding.
    ids[0, :4] = torch.tensor([VOCAB - 1, VOCAB - 2, VOCAB - 3, 0])
    return {"input_ids": ids, "labels": ids.clone()}


def worst(a, b):
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


def losses_of(bundle):
    return [json.loads(line)["loss"] for line in open(bundle + ".jsonl")]


def exported_wte(path):
    model = onnx.load(path)
    for init in model.graph.initializer:
        if init.name == WTE:
            return onnx.numpy_helper.to_array(init, base_dir=os.path.dirname(path))
    raise RuntimeError(f"{path} has no initializer {WTE}")


def checkpoint_shapes(directory):
    """{tensor name: shape} of the embedding and its moments in a checkpoint's safetensors
    files (their JSON headers)."""
    shapes = {}
    for name in os.listdir(directory):
        if name.endswith(".safetensors"):
            with open(os.path.join(directory, name), "rb") as f:
                header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
            shapes.update({k: v["shape"] for k, v in header.items() if k.startswith(WTE)})
    return shapes


def padding_of(bundle):
    """What plan.json says of the embedding's layout: None when it is split on tp in 8 blocks
    padded to 50264 with the unpadded global shape, else what differs."""
    plan = json.load(open(os.path.join(bundle, "plan.json")))
    for binding in plan["programs"][0]["inputs"]:
        if binding["name"] == WTE:
            s = binding.get("sharding", {})
            got = (s.get("global_shape"), s.get("num_blocks"), s.get("padded_dim_size"))
            want = ([VOCAB, EMBED], 8, 50264)
            return None if list(got) == list(want) else f"{WTE} sharding {got}, expected {want}"
    return f"plan.json has no input {WTE}"


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, timeout=600))
    args.work = os.path.abspath(args.work)
    shutil.rmtree(args.work, ignore_errors=True)
    batches = data()
    expected = e2e_util.pytorch_losses(build(), list(batches.values()), ROWS, STEPS, LR, "adamw")

    def case(style):
        out = os.path.join(args.work, style)
        os.makedirs(out)
        names, path = list(batches), os.path.join(out, "model.onnx")
        sample = tuple(t[:ROWS] for t in batches.values())
        # As users export: plain torch.onnx.export (shapes baked in, the trained set guessed),
        # or the project's exporter with dynamic_axes (the trained set recorded).
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet), \
                contextlib.redirect_stderr(quiet):
            if style == "static":
                torch.onnx.export(build(), sample, path, opset_version=17,
                                  training=torch.onnx.TrainingMode.TRAINING,
                                  do_constant_folding=False, input_names=names,
                                  output_names=["loss"])
            else:
                shardc_export.export(build(), sample, path, input_names=names,
                                     output_names=["loss"],
                                     dynamic_axes={n: {0: "batch"} for n in names})
                with open(os.path.join(out, "input_shapes.txt"), "w") as f:
                    f.write("".join(f"{n}={ROWS}x{SEQ}\n" for n in names))
        data_dir = os.path.join(out, "data")
        os.makedirs(data_dir)
        for n, t in batches.items():
            np.save(os.path.join(data_dir, e2e_util.npy_name(n)), t.numpy())

        one = os.path.join(out, "one.shard")
        _, err = e2e_util.compile_and_train(args.shardc, args.shardrun, out, one, data_dir, [],
                                            STEPS, LR, ["--export-onnx", one + ".onnx"])
        if err:
            return err
        single = losses_of(one)
        if len(single) != STEPS or worst(single, expected) > RTOL:
            return f"one rank: losses {single}, PyTorch {expected}"
        details = [f"one rank {worst(single, expected):.2g} of PyTorch"]
        for config, flags in CONFIGS:
            bundle = os.path.join(out, f"{config}.shard")
            run_flags = ["--save", bundle + ".ckpt", "--export-onnx", bundle + ".onnx"] \
                if config == "tp8" else []
            log, err = e2e_util.compile_and_train(args.shardc, args.shardrun, out, bundle,
                                                  data_dir, flags, STEPS, LR, run_flags)
            if err:
                return err
            err = padding_of(bundle)
            if err:
                return f"{config}: {err}"
            plan = open(os.path.join(bundle, "plan.txt")).read()
            if "padded 50257 to 50264" not in plan:
                return f"{config}: plan.txt does not say the vocabulary is padded"
            losses = losses_of(bundle)
            gap = worst(losses, single) if len(losses) == STEPS else float("inf")
            if gap > RTOL:
                return f"{config}: losses {losses}, one rank {single}"
            details.append(f"{config} {gap:.2g}")
        # The padding is never saved: the tp=8 export holds the vocabulary as it is.
        tp_wte, one_wte = exported_wte(os.path.join(out, "tp8.shard.onnx")), \
            exported_wte(one + ".onnx")
        if tp_wte.shape != (VOCAB, EMBED):
            return f"tp8 --export-onnx: {WTE} has shape {tp_wte.shape}"
        # The same rows as one rank's: AdamW's normalised step lets float noise in a gradient
        # near zero move an element by a little (1.2e-5 of one of 4.8M elements on an
        # AVX-512 machine), while a shifted or padded row would be off by the weights' own
        # size, so the rows must agree to 1% of how far training moved them.
        diff = float(np.max(np.abs(tp_wte - one_wte)))
        moved = float(np.max(np.abs(one_wte - exported_wte(os.path.join(out, "model.onnx")))))
        if diff > 0.01 * moved:
            return f"tp8 --export-onnx: {WTE} differs from one rank's by {diff:.3g} " \
                   f"(training moved it by up to {moved:.3g})"
        details.append(f"tp8 export [{VOCAB}, {EMBED}], max diff {diff:.2g} "
                       f"(training moved it by up to {moved:.2g})")
        shapes = checkpoint_shapes(os.path.join(out, "tp8.shard.ckpt"))
        if len(shapes) != 3 or any(v != [VOCAB, EMBED] for v in shapes.values()):
            return f"tp8 checkpoint: {shapes}, expected {WTE} and its 2 moments [{VOCAB}, {EMBED}]"
        # Its checkpoint resumes on one rank (blocks gathered, padding dropped) and goes on.
        resumed = os.path.join(out, "resumed.shard")
        _, err = e2e_util.compile_and_train(args.shardc, args.shardrun, out, resumed, data_dir,
                                            [], STEPS + 2, LR,
                                            ["--resume", os.path.join(out, "tp8.shard.ckpt")])
        if err:
            return err
        more = os.path.join(out, "longer.shard")
        _, err = e2e_util.compile_and_train(args.shardc, args.shardrun, out, more, data_dir, [],
                                            STEPS + 2, LR)
        if err:
            return err
        after, reference = losses_of(resumed), losses_of(more)[STEPS:]
        if len(after) != 2 or worst(after, reference) > RTOL:
            return f"one rank resumed from tp8's checkpoint: losses {after}, uninterrupted " \
                   f"{reference}"
        details.append(f"resumed on one rank {worst(after, reference):.2g}")
        return None, "; ".join(details)

    e2e_util.run_cases([(f"gpt2_vocab50257_{style}", lambda style=style: case(style))
                        for style in ("dynamic", "static")])


if __name__ == "__main__":
    main()
