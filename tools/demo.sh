#!/usr/bin/env bash
# The main job, end to end: export the bundled tiny GPT with PyTorch, compile it with shardc,
# run it with shardrun on CPU and compare against PyTorch's outputs.
# Usage: tools/demo.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
work="$build/demo"
python=/usr/bin/python3

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
