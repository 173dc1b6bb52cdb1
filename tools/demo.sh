#!/usr/bin/env bash
# The main job, end to end: export the bundled tiny GPT with PyTorch, compile it with shardc,
# run its forward pass with shardrun on CPU and compare against PyTorch's outputs; then compile
# its training step, train it for 30 steps and compare the loss curve with PyTorch's; then
# compile it for 4 simulated GPUs with ZeRO-3 (FSDP), train those 4 ranks (threads of one
# process, exchanging real collectives) on a global batch of 8 and compare with PyTorch again.
# Usage: tools/demo.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
work="$build/demo"
python=/usr/bin/python3

# compare_losses LABEL PYTORCH.jsonl SHARDC.jsonl: every step's loss within 1e-5 (relative).
compare_losses() {
  "$python" - "$@" <<'PY'
import json, sys
label, torch_file, ours_file = sys.argv[1:]
torch_losses = [json.loads(l)["loss"] for l in open(torch_file)]
ours = [json.loads(l)["loss"] for l in open(ours_file)]
worst = max(abs(a - b) / abs(b) for a, b in zip(ours, torch_losses))
for k in (0, 9, 19, 29):
    print(f"  step {k + 1:2d}: {label} {ours[k]:.9g}  PyTorch {torch_losses[k]:.9g}")
print(f"  largest relative loss difference over 30 steps: {worst:.3g}"
      f" -> {'match' if worst <= 1e-5 else 'MISMATCH'}")
sys.exit(0 if worst <= 1e-5 else 1)
PY
}

bash tools/setup.sh
cmake -S . -B "$build" -G Ninja
cmake --build "$build" -j "$(nproc)" --target shardc shardrun

rm -rf "$work" && mkdir -p "$work"
echo "== exporting the tiny GPT with PyTorch"
"$python" tests/models/export_tiny_gpt.py --out "$work/tiny_gpt"
echo "== compiling: shardc model.onnx --mode forward -o tiny_gpt.shard"
"$build/tools/shardc/shardc" "$work/tiny_gpt/model.onnx" --mode forward -o "$work/tiny_gpt.shard"
echo "== plan (first lines of $work/tiny_gpt.shard/plan.txt)"
head -n 20 "$work/tiny_gpt.shard/plan.txt"
echo "== running: shardrun tiny_gpt.shard --data inputs --outputs outputs"
"$build/tools/shardrun/shardrun" "$work/tiny_gpt.shard" --data "$work/tiny_gpt/inputs" \
  --outputs "$work/outputs"
echo "== comparing with PyTorch"
"$python" - "$work/tiny_gpt/expected" "$work/outputs" <<'PY'
import sys, pathlib
import numpy as np
expected, got = map(pathlib.Path, sys.argv[1:])
ok = True
for ref_file in sorted(expected.glob("*.npy")):
    ref, out = np.load(ref_file), np.load(got / ref_file.name)
    diff = float(np.max(np.abs(out - ref)))
    scale = float(np.max(np.abs(ref)))
    good = out.shape == ref.shape and np.allclose(out, ref, rtol=1e-5, atol=1e-6)
    ok &= good
    print(f"  {ref_file.stem}: shape {out.shape}, max |diff| {diff:.3g}, "
          f"max |diff| / max |ref| {diff / scale:.3g}, "
          f"allclose(rtol=1e-5, atol=1e-6): {'yes' if good else 'NO'}")
sys.exit(0 if ok else 1)
PY

echo "== training: shardc model.onnx -o tiny_gpt_train.shard   (--mode train, AdamW by default)"
"$build/tools/shardc/shardc" "$work/tiny_gpt/model.onnx" -o "$work/tiny_gpt_train.shard"
echo "== PyTorch reference: 30 AdamW steps from the same weights on the same batches"
"$python" tests/models/train_reference.py --model tiny_gpt --model-dir "$work/tiny_gpt" \
  --out "$work/torch" --make-data 4 --steps 30
echo "== shardrun tiny_gpt_train.shard --steps 30 --data data --metrics metrics.jsonl"
"$build/tools/shardrun/shardrun" "$work/tiny_gpt_train.shard" --steps 30 \
  --data "$work/torch/data" --metrics "$work/metrics.jsonl"
compare_losses "shardc" "$work/torch/losses.jsonl" "$work/metrics.jsonl"

echo "== 4 simulated GPUs: shardc model_batch8.onnx --gpus 4 --strategy fsdp -o tiny_gpt_fsdp4.shard"
# The export pins the batch to its 2 sample rows; the data-parallel run takes 8 rows a step, 2
# per rank.
"$python" -c 'import sys; sys.path.insert(0, "tests/models"); import export_util
export_util.with_global_batch(sys.argv[1], 8)' "$work/tiny_gpt/model.onnx"
"$build/tools/shardc/shardc" "$work/tiny_gpt/model_batch8.onnx" --gpus 4 --strategy fsdp \
  -o "$work/tiny_gpt_fsdp4.shard"
echo "== plan: mesh and ZeRO accounting (all of it, memory and communication too: $work/tiny_gpt_fsdp4.shard/plan.txt)"
sed -n '/^== Mesh and strategy/,/^== Parameters/p' "$work/tiny_gpt_fsdp4.shard/plan.txt" | head -n -1
sed -n '/^== ZeRO accounting/,/^$/p' "$work/tiny_gpt_fsdp4.shard/plan.txt"
echo "== PyTorch reference: 30 AdamW steps on batches of 8"
"$python" tests/models/train_reference.py --model tiny_gpt --model-dir "$work/tiny_gpt" \
  --out "$work/torch8" --make-data 4 --batch 8 --steps 30
echo "== shardrun tiny_gpt_fsdp4.shard --steps 30 (4 ranks)"
"$build/tools/shardrun/shardrun" "$work/tiny_gpt_fsdp4.shard" --steps 30 \
  --data "$work/torch8/data" --metrics "$work/metrics_fsdp4.jsonl"
compare_losses "shardc on 4 ranks" "$work/torch8/losses.jsonl" "$work/metrics_fsdp4.jsonl"
