"""The README's Hugging Face example, as written there: export a Llama with
tools/export/export_hf.py, compile it for 4 GPUs (dp=2, tp=2), train it with shardrun on the
bytes of README.md, and export the trained model.

    test_hf_example.py --shardc PATH --shardrun PATH --work DIR

Checks that every command succeeds, that the loss falls, that the trained model is a valid ONNX
file whose parameters moved and whose trained set is the recorded one, and that export_hf.py
refuses bad arguments in one line.
"""

import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402

EXPORT = os.path.join(ROOT, "tools", "export", "export_hf.py")


def main():
    args = e2e_util.argument_parser(__doc__).parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    llama = os.path.join(args.work, "llama")
    bundle = os.path.join(args.work, "llama.shard")
    metrics = os.path.join(args.work, "metrics.jsonl")
    trained = os.path.join(llama, "trained.onnx")

    def export_case():
        res = e2e_util.run_tool([sys.executable, EXPORT, "--arch", "llama", "--out", llama,
                                 "--text", os.path.join(ROOT, "README.md")], 300)
        return None if res.ok else res.describe()

    def train_case():
        res = e2e_util.run_tool([args.shardc, os.path.join(llama, "model.onnx"), "--gpus", "4",
                                 "--strategy", "dp=2,tp=2", "-o", bundle], 300)
        if not res.ok:
            return res.describe()
        if "warning" in res.stderr:
            return f"shardc warned although the export recorded the trained set: {res.stderr}"
        res = e2e_util.run_tool([args.shardrun, bundle, "--data", os.path.join(llama, "data"),
                                 "--steps", "16", "--metrics", metrics, "--export-onnx", trained],
                                300)
        if not res.ok:
            return res.describe()
        losses = [json.loads(line)["loss"] for line in open(metrics)]
        if len(losses) != 16 or not losses[-1] < losses[0]:
            return f"the loss did not fall over 16 steps: {losses}"
        before = {t.name: numpy_helper.to_array(t)
                  for t in onnx.load(os.path.join(llama, "model.onnx")).graph.initializer}
        after = onnx.load(trained)
        onnx.checker.check_model(after)
        record = {p.key: json.loads(p.value) for p in after.metadata_props}
        moved = [t.name for t in after.graph.initializer
                 if t.name in before and not np.array_equal(numpy_helper.to_array(t),
                                                            before[t.name])]
        if sorted(moved) != sorted(record.get("shardc.trainable", [])):
            return (f"the parameters that moved {sorted(moved)} are not the recorded trained "
                    f"set {record.get('shardc.trainable')}")
        return None, f"loss {losses[0]:.3f} -> {losses[-1]:.3f}, {len(moved)} parameters trained"

    def bad_arguments_case():
        for argv, want in ((["--arch", "llama", "--out", llama, "--layers", "0"],
                            "--layers must be positive"),
                           (["--arch", "llama", "--out", llama, "--text", EXPORT, "--batches",
                             "1000"], "fewer than the")):
            res = e2e_util.run_tool([sys.executable, EXPORT, *argv], 300)
            if res.ok or want not in res.stderr or len(res.stderr.strip().splitlines()) != 1:
                return f"{argv}: expected one line naming '{want}', got {res.describe()}"
        return None

    e2e_util.run_cases([("export", export_case), ("compile_and_train_dp2_tp2", train_case),
                        ("bad_arguments", bad_arguments_case)])


if __name__ == "__main__":
    main()
