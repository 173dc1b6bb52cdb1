#!/bin/sh
# Runs onnx_import_fuzzer for a bounded time on freshly generated seeds.
#   run_onnx_import_fuzz.sh FUZZER PYTHON FUZZ_SOURCE_DIR WORK_DIR
# New inputs accumulate in WORK_DIR/corpus across runs; crash/leak/timeout inputs are written
# to WORK_DIR/artifacts and fail the test (libFuzzer exits non-zero).
set -eu
fuzzer=$1
python=$2
src=$3
work=$4

rm -rf "$work/seeds" "$work/artifacts"
mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
cd "$work"
# Writes the seeds and, in the current directory, the external-data file some of them use.
"$python" "$src/make_seed_corpus.py" "$work/seeds"

# Leak detection stays on; only leaks inside libonnx/protobuf themselves are suppressed.
ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}"
LSAN_OPTIONS="suppressions=$src/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export ASAN_OPTIONS LSAN_OPTIONS
exec "$fuzzer" -max_total_time=30 -rss_limit_mb=4096 -timeout=10 \
  -dict="$src/onnx.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
  "$work/corpus" "$work/seeds"
