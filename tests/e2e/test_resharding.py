"""Models whose batch rows meet in one op train under data parallelism by resharding.

    test_resharding.py --shardc PATH --shardrun PATH --work DIR

Four torch.nn models whose every batch dimension is blocked by an op that needs the batch
whole:
  contrastive  two towers (Linear, GELU, Linear, F.normalize) and a learned temperature; the
               logits pair every row of one side with every row of the other (a @ b^T), the
               loss is cross-entropy along both axes with arange labels (CLIP's and SimCLR's
               InfoNCE)
  sigmoid      the same towers with SigLIP's pairwise sigmoid loss (labels 2 * eye - 1, a
               learned bias): the two inputs meet only in the product
  batch_pool   attention pooling over the batch (a softmax along dim 0, as multiple-instance
               learning pools a bag), the pooled vector added back to every row before a
               per-row classifier
  feature_pool the same per feature: a softmax along dim 0 of [batch, 12], which is computed
               in blocks of the 12 features (an all-to-all moves each rank's rows into a block
               of columns and back; its gradient the same way), not gathered whole
Each is exported with and without dynamic_axes and trained 10 steps (AdamW, and SGD, which
shows a gradient summed twice where AdamW would hide it) on 2 batches of 8 rows: on one rank
within 1e-5 (relative) of PyTorch's losses on the same weights and batches, and on dp=2, dp=4,
ZeRO-1, ZeRO-3 (2 ranks) and dp=2,tp=2 within 1e-5 of the one-rank run. The compile must reshard (plan.txt
lists the ops under "Resharding", plan.json has them; feature_pool's plan must exchange by
all-to-all) and the bytes each rank's all-gathers and all-to-alls move per step, counted by the
runtime, must equal what the plan says. --micro-batches 2 must be
refused in one line naming an op that needs the whole batch. Prints PASS/FAIL per case and
`N passed, M failed`.
"""

import contextlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "models"))
import e2e_util  # noqa: E402
import export_util  # noqa: E402

ROWS, STEPS, LR = 8, 10, 1e-2
RTOL = 1e-5
CONFIGS = [("dp2", ["--gpus", "2", "--strategy", "dp"]),
           ("dp4", ["--gpus", "4", "--strategy", "dp"]),
           ("zero1", ["--gpus", "2", "--strategy", "zero1"]),
           ("zero3", ["--gpus", "2", "--strategy", "zero3"]),
           ("dp2_tp2", ["--gpus", "4", "--strategy", "dp=2,tp=2"])]


class Contrastive(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.a = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 8))
        self.b = nn.Sequential(nn.Linear(5, 16), nn.GELU(), nn.Linear(16, 8))
        self.log_scale = nn.Parameter(torch.tensor(1.5))

    def forward(self, x, y):
        a = F.normalize(self.a(x), dim=1)
        b = F.normalize(self.b(y), dim=1)
        logits = a @ b.t() * self.log_scale.exp()
        labels = torch.arange(logits.shape[0])
        return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2


class Sigmoid(torch.nn.Module):
    """SigLIP's pairwise sigmoid loss: every pair (i, j) is a binary decision, positive on the
    diagonal. Its labels (2 * eye - 1) link no row to another, so the two inputs' batches meet
    only in the product: each is a class of its own, both split."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.a = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 8))
        self.b = nn.Sequential(nn.Linear(5, 16), nn.GELU(), nn.Linear(16, 8))
        self.log_scale = nn.Parameter(torch.tensor(1.0))
        self.bias = nn.Parameter(torch.tensor(-2.0))

    def forward(self, x, y):
        a = F.normalize(self.a(x), dim=1)
        b = F.normalize(self.b(y), dim=1)
        logits = a @ b.t() * self.log_scale.exp() + self.bias
        n = logits.shape[0]
        labels = 2.0 * torch.eye(n) - 1.0  # OpenCLIP's SigLipLoss.get_ground_truth
        return -F.logsigmoid(labels * logits).sum() / n


class BatchPool(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.embed = nn.Linear(6, 12)
        self.score = nn.Linear(12, 1)
        self.head = nn.Linear(12, 4)

    def forward(self, x, labels):
        h = torch.tanh(self.embed(x))
        weights = torch.softmax(self.score(h), dim=0)  # over the batch
        pooled = (weights * h).sum(dim=0, keepdim=True)
        return F.cross_entropy(self.head(h + pooled), labels)


class FeaturePool(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.embed = nn.Linear(6, 12)
        self.score = nn.Linear(12, 12)
        self.head = nn.Linear(12, 4)

    def forward(self, x, labels):
        h = torch.tanh(self.embed(x))
        weights = torch.softmax(self.score(h), dim=0)  # over the batch, per feature
        pooled = (weights * h).sum(dim=0, keepdim=True)
        return F.cross_entropy(self.head(h + pooled), labels)


def contrastive_data():
    g = torch.Generator().manual_seed(1)
    return {"x": torch.randn(2 * ROWS, 6, generator=g), "y": torch.randn(2 * ROWS, 5, generator=g)}


def pool_data():
    g = torch.Generator().manual_seed(2)
    return {"x": torch.randn(2 * ROWS, 6, generator=g),
            "labels": torch.randint(0, 4, (2 * ROWS,), generator=g)}


MODELS = {"contrastive": (Contrastive, contrastive_data), "sigmoid": (Sigmoid, contrastive_data),
          "batch_pool": (BatchPool, pool_data), "feature_pool": (FeaturePool, pool_data)}
EXCHANGES = {"feature_pool"}  # whose plans must use all_to_all


def build(name):
    torch.manual_seed(0)
    return MODELS[name][0]()


def worst(a, b):
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


def losses_of(bundle):
    return [json.loads(line)["loss"] for line in open(bundle + ".jsonl")]


def reshard_bytes_match(bundle, exchanges):
    """None when every step's all_gather and all_to_all bytes (the runtime's count, rank 0)
    equal the plan's, and the plan exchanges by all-to-all when `exchanges`; else what
    differs."""
    plan = json.load(open(os.path.join(bundle, "plan.json")))
    ranks = plan["communication"]
    rank0 = ranks[0] if isinstance(ranks, list) else ranks
    for kind in ("all_gather", "all_to_all"):
        planned = sum(c["bytes_sent"] for c in rank0["collectives"] if c["kind"] == kind)
        counted = {json.loads(line)["comm_bytes"][kind] for line in open(bundle + ".jsonl")}
        if counted != {planned}:
            return f"{kind} bytes per step: plan {planned}, runtime {sorted(counted)}"
        if kind == "all_to_all" and exchanges and planned == 0:
            return "the plan exchanges nothing by all-to-all: " + "; ".join(plan["resharding"])
    return None


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__, timeout=300))
    args.work = os.path.abspath(args.work)
    shutil.rmtree(args.work, ignore_errors=True)

    def case(name, style):
        data = MODELS[name][1]()
        expected = {opt: e2e_util.pytorch_losses(build(name), list(data.values()), ROWS, STEPS,
                                                 LR, opt)
                    for opt in ("adamw", "sgd")}
        out = os.path.join(args.work, f"{name}_{style}")
        names = list(data)
        sample = tuple(t[:ROWS] for t in data.values())
        dynamic = {n: {0: "batch"} for n in names} if style == "dynamic" else None
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            export_util.export_model(build(name), sample, names, ["loss"], out,
                                     dynamic_axes=dynamic, keep_symbolic=True)
        data_dir = os.path.join(out, "data")
        os.makedirs(data_dir)
        for n, t in data.items():
            np.save(os.path.join(data_dir, e2e_util.npy_name(n)), t.numpy())
        details = []
        for optimizer in ("adamw", "sgd"):
            one = os.path.join(out, f"one_{optimizer}.shard")
            _, err = e2e_util.compile_and_train(args.shardc, args.shardrun, out, one, data_dir,
                                                ["--optimizer", optimizer], STEPS, LR)
            if err:
                return err
            single = losses_of(one)
            gap = worst(single, expected[optimizer])
            if len(single) != STEPS or gap > RTOL:
                return f"one rank {optimizer}: losses {single}, PyTorch {expected[optimizer]}"
            details.append(f"one {optimizer} {gap:.2g} (PyTorch)")
            for config, flags in CONFIGS:
                bundle = os.path.join(out, f"{config}_{optimizer}.shard")
                _, err = e2e_util.compile_and_train(args.shardc, args.shardrun, out, bundle,
                                                    data_dir, ["--optimizer", optimizer, *flags],
                                                    STEPS, LR)
                if err:
                    return err
                losses = losses_of(bundle)
                gap = worst(losses, single)
                if len(losses) != STEPS or gap > RTOL:
                    return f"{config} {optimizer}: losses {losses}, one rank {single}"
                plan_text = open(os.path.join(bundle, "plan.txt")).read()
                plan = json.load(open(os.path.join(bundle, "plan.json")))
                if "== Resharding" not in plan_text or not plan.get("resharding"):
                    return f"{config}: plan.txt/plan.json list no resharding"
                mismatch = reshard_bytes_match(bundle, name in EXCHANGES)
                if mismatch:
                    return f"{config} {optimizer}: {mismatch}"
                details.append(f"{config} {optimizer} {gap:.2g}")
        res = subprocess.run([args.shardc, os.path.join(out, "model.onnx"), "-o",
                              os.path.join(out, "mb2.shard"), "--micro-batches", "2",
                              *e2e_util.input_shape_flags(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = res.stderr.strip().splitlines()
        if res.returncode != 1 or len(lines) != 1 or "needs the whole batch" not in lines[0] \
                or "node '" not in lines[0]:
            return f"--micro-batches 2: expected a one-line refusal naming the op, got exit " \
                   f"{res.returncode}: {res.stderr.strip()}"
        details.append("mb2 refused")
        return None, ", ".join(details)

    e2e_util.run_cases([(f"{name}_{style}", lambda n=name, s=style: case(n, s))
                        for name in MODELS for style in ("static", "dynamic")])


if __name__ == "__main__":
    main()
