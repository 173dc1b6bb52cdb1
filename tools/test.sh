#!/usr/bin/env bash
# Sets up the dependencies, builds shardc and runs every test (unit, lit, end-to-end, fuzz)
# through one ctest, as many tests at a time as there are cores (the longest start first).
# Usage: tools/test.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

bash tools/setup.sh
cmake -S . -B "$build" -G Ninja
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure --timeout 1500 -j "$(nproc)"
