#!/bin/sh
# Runs checkpoint_fuzzer for a bounded time in a fresh scratch directory, where it saves its
# seed checkpoint (ck/) and seeds (seeds/) before fuzzing.
#   run_checkpoint_fuzz.sh FUZZER WORK_DIR
# New inputs accumulate in WORK_DIR/corpus across runs; crash/leak/timeout inputs are written
# to WORK_DIR/artifacts and fail the test (libFuzzer exits non-zero).
set -eu
fuzzer=$1
work=$2

rm -rf "$work/scratch" "$work/artifacts"
mkdir -p "$work/scratch/seeds" "$work/corpus" "$work/artifacts"
cd "$work/scratch"
ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}"
export ASAN_OPTIONS
exec "$fuzzer" -max_total_time=30 -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" seeds
