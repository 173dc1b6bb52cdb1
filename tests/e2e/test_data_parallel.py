"""Data parallelism and ZeRO end to end: N ranks follow the single-rank run.

    test_data_parallel.py --shardc PATH --shardrun PATH --work DIR [--ranks 2,3,4,8]
                          [--models mlp_classifier,tiny_gpt,...] [--styles dynamic,static]

Each model of --models (the test models of tests/models) is exported in each style of
--styles with a global batch of 8 rows: "dynamic" with dynamic_axes (shapes computed by
Shape -> Gather -> Reshape chains, the batch pinned to 8), "static" as torch.onnx.export does by
default (the batch and sequence baked into Reshape constants). For each, every strategy in
{dp, zero1, zero2, zero3} on every N in --ranks (default: N = 2 and 3 for every strategy, 3
splitting the batch 3+3+2, and N = 8, one row per rank, for dp and zero3)
trains 30 AdamW steps with `shardrun` (N ranks as threads, the `local` backend) on the same
data as a single-rank run of the same export. Checked per case:
  * every step's loss within 1e-5 (relative) of the single-rank run's;
  * the final parameters (`--outputs`, gathered from the ranks) within 1e-4: max |diff| / max
    |single-rank value| per parameter. The attention key biases (the keys' third of the
    GPT's c_attn.bias, BERT's attention.key.bias) are checked separately, as in
    run_training_tests.py: their
    exact gradient is 0 and what both runs compute is rounding noise that Adam turns into steps
    of about lr, so they get |diff| <= 2 * steps * lr;
  * shardrun's own checks pass: planned peak memory == measured and planned bytes sent per
    step == the bytes its communicator counted, on every rank (it exits 1 otherwise);
  * no rank keeps a copy of the whole initial parameters: its weights region (frozen
    parameters and constants; the initial values are read from weights.bin when training
    starts) is smaller than its own part of the trained parameters;
  * plan.json's ZeRO accounting matches the formulas (fp32 AdamW: stage 0 16 psi, stage 1
    8 psi + 8 psi/N, stage 2 4 psi + 12 psi/N, stage 3 16 psi/N bytes, psi counted with each
    parameter padded to a multiple of N) and its bytes per step match the theory (all-reduce
    2 S (N-1)/N for a buffer of S bytes; reduce-scatter and all-gather S (N-1)/N each).
Prints PASS/FAIL per case and `N passed, M failed`.
"""

import importlib.util
import json
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "models"))
import e2e_util  # noqa: E402
import export_util  # noqa: E402
import train_reference  # noqa: E402

STEPS = 30
LR = 1e-3
GLOBAL_BATCH = 8
LOSS_RTOL = 1e-5
PARAM_RTOL = 1e-4
STRATEGIES = ["dp", "zero1", "zero2", "zero3"]
# The rank counts each strategy runs on by default: even and uneven splits of the batch for all,
# and 8 ranks of one row each where the layout differs most (no sharding, everything sharded).
DEFAULT_RANKS = {"dp": [2, 3, 8], "zero1": [2, 3], "zero2": [2, 3], "zero3": [2, 3, 8]}
# Attention key biases: their exact gradient is 0 (q . (k + b) shifts all of a query's scores by
# q . b, which softmax ignores). The GPT's fused c_attn.bias holds the keys' in its middle third,
# BERT's attention.key.bias is all key bias.
FUSED_KEY_BIAS = ("c_attn.bias",)
KEY_BIAS = ("attention.key.bias",)


def with_rows(flag):
    """An --input-shape value NAME=AxB... with GLOBAL_BATCH rows (other flags unchanged)."""
    if "=" not in flag:
        return flag
    name, dims = flag.split("=", 1)
    return f"{name}=" + "x".join([str(GLOBAL_BATCH)] + dims.split("x")[1:])


class Model:
    """An exported model (one style), its data (4 global batches) and the single-rank run."""

    def __init__(self, name, style, args, run_flags=()):
        self.name = name
        self.args = args
        # More shardrun flags for every run of this model (the reference's included).
        self.run_flags = list(run_flags)
        self.work = os.path.join(args.work, f"{name}_{style}")
        os.makedirs(self.work, exist_ok=True)
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(HERE, os.pardir, "models", f"export_{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        export = os.path.join(self.work, "export")
        self.shape_flags = []
        if style == "static":
            self.dir = e2e_util.export_test_model(name, export, static_batch=GLOBAL_BATCH)
            self.onnx = os.path.join(self.dir, "model.onnx")
        else:
            self.dir = e2e_util.export_test_model(name, export)
            self.onnx = os.path.join(self.dir, "model.onnx")
            # Symbolic dims: --input-shape with the global batch; else pin it in the model.
            self.shape_flags = [with_rows(f) for f in e2e_util.input_shape_flags(self.dir)]
            if not self.shape_flags:
                self.onnx = export_util.with_global_batch(self.onnx, GLOBAL_BATCH)
        self.data = os.path.join(self.work, "data")
        os.makedirs(self.data, exist_ok=True)
        arrays = train_reference.make_data(name, module, 4, GLOBAL_BATCH,
                                           np.random.default_rng(1234))
        for input_name, array in arrays.items():
            np.save(os.path.join(self.data, input_name + ".npy"), array)
        self.reference = self.run("single", [])
        if isinstance(self.reference, str):
            raise SystemExit(f"{name} ({style}): single-rank run: {self.reference}")

    def run(self, tag, compile_flags, lr=None):
        """Compiles and trains; returns (losses, {param: array}, plan json, stderr) or an error."""
        out = os.path.join(self.work, tag)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        bundle = os.path.join(out, "model.shard")
        res = e2e_util.run_tool([self.args.shardc, self.onnx, "-o", bundle, *self.shape_flags,
                                 *compile_flags], self.args.timeout)
        if not res.ok:
            return f"compile: {res.describe()}"
        metrics = os.path.join(out, "m.jsonl")
        res = e2e_util.run_tool([self.args.shardrun, bundle, "--steps", str(STEPS), "--data",
                                 self.data, "--lr", str(lr or LR), "--metrics", metrics, "--outputs",
                                 os.path.join(out, "params"), *self.run_flags], self.args.timeout)
        if not res.ok:
            return f"shardrun: {res.describe()}"
        losses = [json.loads(line)["loss"] for line in open(metrics)]
        params = {f[:-4]: np.load(os.path.join(out, "params", f))
                  for f in os.listdir(os.path.join(out, "params"))}
        plan = json.load(open(os.path.join(bundle, "plan.json")))
        return losses, params, plan, res.stderr


def compare(model, result):
    """Loss and parameter agreement with the single-rank run; (error, detail)."""
    ref_losses, ref_params = model.reference[0], model.reference[1]
    losses, params = result[0], result[1]
    if len(losses) != STEPS:
        return f"{len(losses)} losses, expected {STEPS}", None
    worst_loss = 0.0
    for k, (a, b) in enumerate(zip(losses, ref_losses), 1):
        rel = abs(a - b) / abs(b)
        worst_loss = max(worst_loss, rel)
        if rel > LOSS_RTOL:
            return f"step {k}: loss {a:.9g} vs single rank {b:.9g} (rel {rel:.3g})", None
    if sorted(params) != sorted(ref_params):
        return f"parameters {sorted(params)} vs single rank {sorted(ref_params)}", None
    worst_param, worst_name, worst_zero = 0.0, "", 0.0
    for name, ref in ref_params.items():
        value = params[name]
        if value.shape != ref.shape:
            return f"{name}: shape {value.shape} vs {ref.shape}", None
        if name.endswith(KEY_BIAS):
            worst_zero = max(worst_zero, float(np.max(np.abs(value - ref))))
            continue
        if name.endswith(FUSED_KEY_BIAS):
            # Key-bias elements (middle third of c_attn.bias) carry rounding noise only.
            third = ref.shape[-1] // 3
            keys = slice(third, 2 * third)
            worst_zero = max(worst_zero, float(np.max(np.abs(value[..., keys] - ref[..., keys]))))
            value = np.concatenate([value[..., :third], value[..., 2 * third:]], axis=-1)
            ref = np.concatenate([ref[..., :third], ref[..., 2 * third:]], axis=-1)
        # Equal values (infinities in a float mask buffer included) differ by 0; anything
        # else non-finite is a failure, never silently skipped.
        with np.errstate(invalid="ignore"):
            diff = np.where(value == ref, 0.0, np.abs(value - ref))
        if not np.all(np.isfinite(diff)):
            return f"{name}: non-finite values where the single-rank run has others", None
        finite = np.abs(ref[np.isfinite(ref)])
        rel = float(np.max(diff, initial=0.0) / max(np.max(finite, initial=0.0), 1e-30))
        if rel > worst_param:
            worst_param, worst_name = rel, name
    if worst_param > PARAM_RTOL:
        return f"parameters diverged: max rel diff {worst_param:.3g} ({worst_name})", None
    if worst_zero > 2 * STEPS * LR:
        return f"attention key biases moved {worst_zero:.3g} apart (> 2 steps lr)", None
    detail = f"loss rel {worst_loss:.2g}, param rel {worst_param:.2g} ({worst_name})"
    if worst_zero:
        detail += f", key-bias |diff| {worst_zero:.2g}"
    return None, detail


def check_accounting(plan, ranks, stage):
    """ZeRO formulas and communication theory from plan.json; (error or None, detail)."""
    acc = plan["zero_accounting"]
    psi, actual, pad = acc["psi"], acc["actual"], acc["padding"]
    # Bytes per rank, times N to stay in integers: a sharded part holds (psi + padding) / N
    # elements per rank, a whole one psi.
    sharded = {"parameter": stage == 3, "gradient": stage >= 2, "optimizer_state": stage >= 1}
    per_element = {"parameter": 4, "gradient": 4, "optimizer_state": 8}
    for part, is_sharded in sharded.items():
        got = actual[part + "_bytes"] * ranks
        if is_sharded:
            want = per_element[part] * psi + 4 * pad[part + "_elements"]
        else:
            want = per_element[part] * psi * ranks
        if got != want:
            return (f"{part} bytes per rank {actual[part + '_bytes']}, the stage-{stage} "
                    f"formula with padding gives {want / ranks:g}"), None
    for m in plan["memory_per_rank"]:
        weights, trained = m["weights"]["bytes"], m["model_state"]["trained_parameter_bytes"]
        if weights >= trained:
            return (f"ranks {m['ranks']}: weights region {weights} B, not below the rank's "
                    f"{trained} B of trained parameters"), None
    comm = plan["communication"]
    theory = 0
    for c in comm["collectives"]:
        factor = 2 if c["kind"] == "all_reduce" else 1
        theory += factor * c["payload_bytes"] * (ranks - 1) // ranks
    if comm["bytes_sent"] != theory or not comm["matches_plan"]:
        return f"plan says {comm['bytes_sent']} bytes per step, theory {theory}", None
    return None, f"model state {actual['total_bytes']} B/rank, {theory} B sent/step"


def main():
    p = e2e_util.argument_parser(__doc__, timeout=300.0)
    p.add_argument("--ranks", help="rank counts for every strategy (default: DEFAULT_RANKS)")
    p.add_argument("--models",
                   default="mlp_classifier,tiny_gpt,tied_gpt,dropout_gpt,bert_encoder")
    p.add_argument("--styles", default="dynamic,static")
    args = e2e_util.parse_args(p)
    cases = []
    for model_name, style in [(m, s) for m in args.models.split(",")
                              for s in args.styles.split(",")]:
        model = Model(model_name, style, args)
        for strategy in STRATEGIES:
            stage = STRATEGIES.index(strategy)
            rank_counts = ([int(n) for n in args.ranks.split(",")] if args.ranks
                           else DEFAULT_RANKS[strategy])
            for ranks in rank_counts:
                def case(model=model, strategy=strategy, stage=stage, ranks=ranks):  # noqa: E306
                    # Small buckets so that dp, zero1 and zero2 issue several.
                    result = model.run(f"{strategy}_{ranks}",
                                       ["--gpus", str(ranks), "--strategy", strategy,
                                        "--bucket-mb", "0.01"])
                    if isinstance(result, str):
                        return result
                    err, detail = compare(model, result)
                    if err:
                        return err
                    err, accounting = check_accounting(result[2], ranks, stage)
                    if err:
                        return err
                    return None, f"{detail}; {accounting}"
                cases.append((f"{model_name}_{style}_{strategy}_{ranks}", case))
    e2e_util.run_cases(cases)


if __name__ == "__main__":
    main()
