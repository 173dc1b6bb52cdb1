#!/bin/sh
# Runs program_load_fuzzer for a bounded time on freshly compiled seeds.
#   run_program_load_fuzz.sh FUZZER SHARDC PYTHON FUZZ_SOURCE_DIR WORK_DIR
# New inputs accumulate in WORK_DIR/corpus across runs; crash/leak/timeout inputs are written
# to WORK_DIR/artifacts and fail the test (libFuzzer exits non-zero).
set -eu
fuzzer=$1
shardc=$2
python=$3
src=$4
work=$5

rm -rf "$work/seeds" "$work/artifacts" "$work/bundle"
mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
# Compiles the seeds, and leaves in WORK_DIR/bundle the weights file the fuzzer checks the
# programs' ranges against.
"$python" "$src/make_program_seed_corpus.py" "$shardc" "$work/seeds" "$work"
cd "$work/bundle"

# Leak detection stays on, without lsan.supp: nothing the loader calls into (protobuf, the C++
# library) needs a suppression, so every leak reported is the loader's own.
ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}"
export ASAN_OPTIONS
exec "$fuzzer" -max_total_time=30 -rss_limit_mb=2048 -timeout=10 \
  -dict="$src/program.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
  "$work/corpus" "$work/seeds"
