#!/usr/bin/env bash
# The GPU check: what needs a CUDA device and cannot run on the CPU-only test machines (the
# device layer's cuda device, the CUDA kernels, the nccl communication backend). Two stages, so
# that the GPU machine needs neither MLIR nor PyTorch nor a build tree:
#
#   tools/gpu_check.sh prepare DIR [BUILD_DIR]   where shardc was built (default BUILD_DIR: build)
#       exports the tiny GPT, writes its data and PyTorch's 30-step losses, compiles it for 1 and
#       2 ranks (dp=2 and tp=2), and copies shardrun, the GPU unit tests, comm_nccl_smoke and the
#       shared libraries they load (except the C library, the C++ runtime, the CUDA driver,
#       cuBLAS and NCCL, which the GPU machine has) into DIR, with OpenMPI's plugin tree.
#   tools/gpu_check.sh run DIR                   on the GPU machine (OpenMPI need not be installed;
#                                                NCCL and cuBLASLt are found by the dynamic linker,
#                                                in /usr/local/cuda, in PyTorch's wheels, or in
#                                                NCCL_LIB_DIR / CUBLAS_LIB_DIR)
#       0. the unit tests of the cuda device and of every CUDA kernel against its CPU kernel
#          (device_unit_tests, cuda_kernel_tests): all must pass, none may skip;
#       1. comm_nccl_smoke, one rank: all-reduce, reduce-scatter and all-gather through NCCL;
#      1b. the tiny GPT, the GPT with dropout, the MLP and the BERT-like encoder, 30 steps on
#          --device cuda: losses within 1e-5 (relative) of the same bundle on the CPU, and the
#          GPU's measured peak memory equal to the plan (shardrun fails otherwise);
#       2. shardrun --comm nccl on the 1-rank bundle: 30 steps, losses equal to --comm local's
#          and within 1e-5 (relative) of PyTorch's;
#      1c. the tiny GPT, the MLP and the BERT-like encoder compiled with --precision bf16, 30 steps
#          on --device cuda: losses within 5e-3 (relative) of the same bundle on the CPU;
#      1d. fused attention (--fuse-attention on): the tiny GPT (its mask buffer becomes the
#          attention op's causal flag) and the BERT-like encoder (its padding mask stays an
#          operand), 30 steps on --device cuda within 1e-5 (relative) of the same bundle on the
#          CPU;
#       4. the 8-row tiny GPT at dp=2,tp=2,zero=3: 4 ranks as threads on the one GPU (--comm
#          local), losses within 1e-5 (relative) of the 1-rank bundle on the GPU;
#       3. with 2 ranks under mpirun (needs 2 GPUs; with one, NCCL refuses two ranks on one
#          device and the check is that this ends in a clear error, not a hang): the dp=2 and
#          tp=2 bundles, losses equal to those of 2 local ranks.
#     Prints one line per check and exits non-zero if any failed.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

prepare() {
  set -e
  local dir=$1 build=${2:-build}
  local python shardc="$build/tools/shardc/shardc"
  # The Python the build's tests use (it has torch and onnx).
  python=$(sed -n 's/^SHARDC_PYTHON:FILEPATH=//p' "$build/CMakeCache.txt")
  rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib" "$dir/root" "$dir/case"
  "$python" "$here/tests/models/export_tiny_gpt.py" --out "$dir/case/tiny_gpt"
  "$python" "$here/tests/models/train_reference.py" --model tiny_gpt \
    --model-dir "$dir/case/tiny_gpt" --out "$dir/case/torch" --make-data 4 --steps 30
  "$python" -c 'import sys; sys.path.insert(0, sys.argv[2]); import export_util
export_util.with_global_batch(sys.argv[1], 8)' "$dir/case/tiny_gpt/model.onnx" "$here/tests/models"
  "$shardc" "$dir/case/tiny_gpt/model.onnx" -o "$dir/case/one.shard"
  "$shardc" "$dir/case/tiny_gpt/model_batch8.onnx" --gpus 2 --strategy dp=2,zero=1 \
    -o "$dir/case/dp2.shard"
  "$shardc" "$dir/case/tiny_gpt/model.onnx" --gpus 2 --strategy tp=2 -o "$dir/case/tp2.shard"
  # The MLP, the BERT-like encoder and the GPT with dropout too, for training on --device cuda.
  local model
  for model in mlp_classifier bert_encoder dropout_gpt; do
    "$python" "$here/tests/models/export_$model.py" --out "$dir/case/$model" >/dev/null
    "$python" "$here/tests/models/train_reference.py" --model "$model" \
      --model-dir "$dir/case/$model" --out "$dir/case/torch_$model" --make-data 4 --steps 30
    local shape_flags=()
    [[ -f $dir/case/$model/input_shapes.txt ]] &&
      for line in $(cat "$dir/case/$model/input_shapes.txt"); do shape_flags+=(--input-shape "$line"); done
    "$shardc" "$dir/case/$model/model.onnx" "${shape_flags[@]}" -o "$dir/case/$model.shard"
  done
  # Data for the 8-row global batch: the same generator, 8 rows a batch.
  "$python" "$here/tests/models/train_reference.py" --model tiny_gpt \
    --model-dir "$dir/case/tiny_gpt" --out "$dir/case/torch8" --make-data 4 --batch 8 --steps 1
  # bf16 bundles (check 1c) and the 8-row GPT on 1 rank and on dp=2,tp=2,zero=3 (check 4).
  "$shardc" "$dir/case/tiny_gpt/model.onnx" --precision bf16 -o "$dir/case/tiny_gpt_bf16.shard"
  for model in mlp_classifier bert_encoder; do
    local shape_flags=()
    [[ -f $dir/case/$model/input_shapes.txt ]] &&
      for line in $(cat "$dir/case/$model/input_shapes.txt"); do shape_flags+=(--input-shape "$line"); done
    "$shardc" "$dir/case/$model/model.onnx" "${shape_flags[@]}" --precision bf16 \
      -o "$dir/case/${model}_bf16.shard"
  done
  # Fused attention (check 1d).
  "$shardc" "$dir/case/tiny_gpt/model.onnx" --fuse-attention on -o "$dir/case/tiny_gpt_fused.shard"
  local shape_flags=()
  for line in $(cat "$dir/case/bert_encoder/input_shapes.txt"); do shape_flags+=(--input-shape "$line"); done
  "$shardc" "$dir/case/bert_encoder/model.onnx" "${shape_flags[@]}" --fuse-attention on \
    -o "$dir/case/bert_encoder_fused.shard"
  "$shardc" "$dir/case/tiny_gpt/model_batch8.onnx" -o "$dir/case/one8.shard"
  "$shardc" "$dir/case/tiny_gpt/model_batch8.onnx" --gpus 4 --strategy dp=2,tp=2,zero=3 \
    -o "$dir/case/dp2tp2z3.shard"

  cp "$build/tools/shardrun/shardrun" "$dir/bin/"
  cp "$build/tests/unit/comm/comm_nccl_smoke" "$dir/bin/"
  local test
  for test in tests/unit/device/device_unit_tests tests/unit/cuda/cuda_kernel_tests \
              tests/unit/runtime/runtime_unit_tests; do
    [[ -x $build/$test ]] && cp "$build/$test" "$dir/bin/"
  done
  local orterun orted
  orterun=$(command -v orterun) orted=$(command -v orted)
  cp "$orterun" "$dir/bin/mpirun" && cp "$orted" "$dir/bin/orted"
  # OpenMPI and PMIx find their plugins and help texts under their configured paths: ompi_info
  # says OpenMPI's; PMIx keeps its plugins in pmix/ beside the libpmix the dynamic linker finds,
  # and its help texts in share/pmix beside that lib directory. The run stage puts these trees
  # there when the GPU machine has no OpenMPI of its own.
  ompi_path() { ompi_info --parsable --path all | sed -n "s/^path:$1://p" | head -1; }
  local pmix_libdir="" plugins
  local libpmix
  # (awk reads to the end: an early exit would fail the pipeline with SIGPIPE under set -e.)
  libpmix=$(ldconfig -p | awk '!found && /libpmix\.so\.[0-9]+ /{print $NF; found = 1}')
  [[ -n $libpmix ]] && pmix_libdir=$(dirname "$(readlink -f "$libpmix")")
  plugins=$(ompi_path pkglibdir)
  local trees=("$(dirname "$(ompi_path libdir)")" "$(ompi_path pkgdatadir)"
               "$(ompi_path sysconfdir)")
  [[ -n $pmix_libdir ]] && trees+=("$pmix_libdir/pmix" "$(dirname "$pmix_libdir")/share/pmix"
                                   "$(dirname "$pmix_libdir")/share/pmix-mca-params.conf")
  for tree in "${trees[@]}"; do
    [[ -e $tree ]] && mkdir -p "$dir/root$(dirname "$tree")" && cp -a "$tree" "$dir/root$tree"
  done
  local objects=("$dir/bin/"* "$dir/root$plugins/"*.so)
  [[ -n $pmix_libdir && -d $dir/root$pmix_libdir/pmix ]] &&
    objects+=("$dir/root$pmix_libdir/pmix/"*.so)
  ldd "${objects[@]}" 2>/dev/null | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libcublasLt|libnccl)\.so' |
    while read -r lib; do cp -L "$lib" "$dir/lib/"; done
  # OpenMPI's own libraries apart: the run stage uses them only with the plugin tree above, on a
  # machine without an OpenMPI of its own (a libmpi must load the plugins of its own build).
  mkdir -p "$dir/lib-mpi"
  find "$dir/lib" -regextype egrep -regex \
    '.*/lib(mpi|open-pal|open-rte|pmix|mca_common|oshmem|event|hwloc|fabric|uc[mpst]|psm|infinipath|ibverbs|rdmacm|efa|nl-|munge|numa)[^/]*' \
    -exec mv {} "$dir/lib-mpi/" \;
  cp "$here/tools/gpu_check.sh" "$dir/"
  du -sh "$dir"
}

# losses FILE: the "loss" of each metrics line, one per line.
losses() { sed -n 's/.*"loss": *\([^,}]*\).*/\1/p' "$1"; }
# worst_rel A B: the largest |a - b| / b over the two metrics files' losses, step by step.
worst_rel() {
  paste <(losses "$1") <(losses "$2") |
    awk '{d = ($1 - $2) / $2; if (d < 0) d = -d; if (d > w) w = d} END {printf "%.3g", w}'
}

# cpu_vs_cuda NAME TAG BUNDLE DATA TOLERANCE [TORCH_LOSSES]: BUNDLE trains 30 steps on the CPU
# and on --device cuda (metrics and logs in $out/TAG_cpu.* and TAG_cuda.*); ok when the GPU ran
# 30 steps within TOLERANCE (relative, every step) of the CPU. Reports the difference from
# PyTorch's TORCH_LOSSES too, when given, and the GPU's time per step.
cpu_vs_cuda() {
  local name=$1 tag=$2 bundle=$3 data=$4 tolerance=$5 torch=${6:-} rc vs_cpu detail
  timeout 300 "$sr" "$bundle" --steps 30 --data "$data" \
    --metrics "$out/${tag}_cpu.jsonl" >"$out/${tag}_cpu.log" 2>&1
  timeout 300 "$sr" "$bundle" --steps 30 --data "$data" --device cuda \
    --metrics "$out/${tag}_cuda.jsonl" >"$out/${tag}_cuda.log" 2>&1
  rc=$?
  if [[ $rc -ne 0 ]]; then
    report "$name" FAIL "rc $rc: $(tail -2 "$out/${tag}_cuda.log" | tr '\n' ' ')"
    return
  fi
  vs_cpu=$(worst_rel "$out/${tag}_cuda.jsonl" "$out/${tag}_cpu.jsonl")
  detail="vs the CPU worst rel $vs_cpu"
  [[ -n $torch ]] && detail+=", vs PyTorch $(worst_rel "$out/${tag}_cuda.jsonl" "$torch")"
  if [[ $(losses "$out/${tag}_cuda.jsonl" | wc -l) -eq 30 ]] &&
     awk -v w="$vs_cpu" -v t="$tolerance" 'BEGIN {exit !(w <= t)}'; then
    report "$name" ok "30 steps; $detail; $(grep -m1 'ms/step' "$out/${tag}_cuda.log" | sed 's/.*in //')"
  else
    report "$name" FAIL "$detail (tolerance $tolerance)"
  fi
}

failures=0
report() { # report NAME STATUS DETAIL
  printf '%-34s %s  %s\n' "$1" "$2" "$3"
  [[ $2 == ok ]] || failures=$((failures + 1))
}

run() {
  local dir
  dir=$(cd "$1" && pwd)
  local work="$dir/case" out="$dir/out"
  rm -rf "$out" && mkdir -p "$out"
  # The machine's own OpenMPI when it has one (its mpirun with its libmpi and plugins);
  # otherwise the copied one, its plugin tree put where it was configured to look.
  local mpirun libs="$dir/lib"
  if mpirun=$(command -v mpirun); then
    echo "OpenMPI: the machine's ($mpirun)"
  else
    mpirun="$dir/bin/mpirun" libs="$dir/lib:$dir/lib-mpi"
    (cd "$dir/root" && find . -mindepth 1 -maxdepth 5 -type d | while read -r d; do
      [[ -e ${d#.} ]] || { mkdir -p "$(dirname "${d#.}")" && cp -a "$d" "${d#.}"; }
    done)
    echo "OpenMPI: the copied one"
  fi
  # NCCL: NCCL_LIB_DIR when given, else where the dynamic linker finds it.
  local nccl_dir=${NCCL_LIB_DIR:-}
  if [[ -z $nccl_dir ]]; then
    nccl_dir=$(ldconfig -p | awk '/libnccl.so.2 /{print $NF; exit}')
    [[ -n $nccl_dir ]] && nccl_dir=$(dirname "$nccl_dir")
  fi
  # Else the CUDA toolkit's, or the one PyTorch's wheels bring (nvidia/nccl/lib in site-packages).
  if [[ -z $nccl_dir ]]; then
    local candidate
    for candidate in /usr/local/cuda/lib64 $(python3 -c 'import nvidia.nccl
for p in nvidia.nccl.__path__: print(p + "/lib")' 2>/dev/null); do
      [[ -e $candidate/libnccl.so.2 ]] && { nccl_dir=$candidate; break; }
    done
  fi
  if [[ -z $nccl_dir ]]; then
    echo "gpu_check: libnccl.so.2 not found (set NCCL_LIB_DIR)" >&2
    return 1
  fi
  # cuBLASLt (the CUDA kernels' GEMMs) and the CUDA runtime: likewise.
  local cublas_dir=${CUBLAS_LIB_DIR:-}
  if [[ -z $cublas_dir ]]; then
    local candidate
    for candidate in $(ldconfig -p | awk '/libcublasLt.so.13 /{print $NF}' | xargs -r dirname) \
        /usr/local/cuda/lib64 $(python3 -c 'import nvidia.cu13
for p in nvidia.cu13.__path__: print(p + "/lib")' 2>/dev/null); do
      [[ -e $candidate/libcublasLt.so.13 ]] && { cublas_dir=$candidate; break; }
    done
  fi
  export LD_LIBRARY_PATH="$libs:$nccl_dir${cublas_dir:+:$cublas_dir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_mca_base_component_show_load_errors=0 OMPI_MCA_ess_singleton_isolated=1
  export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
  local gpus
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  echo "GPUs: $gpus ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 |
    head -1)); NCCL from $nccl_dir"

  # 0. The GPU unit tests: on a GPU machine none may skip.
  local bin summary rc filter
  for bin in device_unit_tests cuda_kernel_tests runtime_unit_tests; do
    if [[ ! -x $dir/bin/$bin ]]; then
      report "$bin" FAIL "not prepared (was the build configured with CUDA?)"
      continue
    fi
    # Of the runtime's tests, the executor's (one of which runs on the cuda device).
    filter='*'
    [[ $bin == runtime_unit_tests ]] && filter='Executor.*'
    timeout 300 "$dir/bin/$bin" --gtest_filter="$filter" >"$out/$bin.log" 2>&1
    rc=$?
    summary="$(grep -E '^\[  PASSED  \]' "$out/$bin.log" | head -1) $(grep -cE '^\[  SKIPPED \] [A-Za-z]' "$out/$bin.log") skipped"
    if [[ $rc -eq 0 ]] && ! grep -qE '^\[  SKIPPED \] [A-Za-z]' "$out/$bin.log"; then
      report "$bin" ok "$summary"
    else
      report "$bin" FAIL "rc $rc: $summary; $(grep -E '^\[  FAILED  \] [A-Za-z]' "$out/$bin.log" | head -5 | tr '\n' ' ')"
    fi
  done

  local log="$out/smoke1.log"
  if timeout 120 "$dir/bin/comm_nccl_smoke" >"$log" 2>&1 && grep -q 'rank 0: nccl ok' "$log"; then
    report "nccl smoke, 1 rank" ok "$(head -1 "$log")"
  else
    report "nccl smoke, 1 rank" FAIL "$(tail -3 "$log" | tr '\n' ' ')"
  fi

  local sr="$dir/bin/shardrun" data="$work/torch/data" data8="$work/torch8/data"
  timeout 300 "$sr" "$work/one.shard" --steps 30 --data "$data" --comm local \
    --metrics "$out/one_local.jsonl" >"$out/one_local.log" 2>&1
  timeout 300 "$mpirun" -np 1 "$sr" "$work/one.shard" --steps 30 --data "$data" \
    --comm nccl --metrics "$out/one_nccl.jsonl" >"$out/one_nccl.log" 2>&1
  local rc=$?
  if [[ $rc -eq 0 ]] && cmp -s <(losses "$out/one_local.jsonl") <(losses "$out/one_nccl.jsonl"); then
    local worst
    worst=$(worst_rel "$out/one_nccl.jsonl" "$work/torch/losses.jsonl")
    if awk -v w="$worst" 'BEGIN {exit !(w <= 1e-5)}'; then
      report "shardrun nccl, 1 rank" ok "30 losses = --comm local's; vs PyTorch worst rel $worst"
    else
      report "shardrun nccl, 1 rank" FAIL "vs PyTorch worst rel $worst"
    fi
  else
    report "shardrun nccl, 1 rank" FAIL "rc $rc: $(tail -2 "$out/one_nccl.log" | tr '\n' ' ')"
  fi

  # 1b. Training on the GPU: each 1-rank bundle 30 steps on --device cuda, against the same
  # run on the CPU (within 1e-5 per step) and PyTorch's losses; the device's measured memory
  # must be the plan's (shardrun fails otherwise).
  local case_name case_bundle case_data case_torch vs_one
  for case_name in tiny_gpt mlp_classifier bert_encoder dropout_gpt; do
    case_bundle="$work/$case_name.shard" case_data="$work/torch_$case_name/data"
    case_torch="$work/torch_$case_name/losses.jsonl"
    if [[ $case_name == tiny_gpt ]]; then
      case_bundle="$work/one.shard" case_data=$data case_torch="$work/torch/losses.jsonl"
    fi
    cpu_vs_cuda "--device cuda, $case_name" "$case_name" "$case_bundle" "$case_data" 1e-5 \
      "$case_torch"
  done

  # 1c. bf16 (--precision bf16 bundles): 30 steps on --device cuda within 5e-3 (relative) of
  # the same bundle on the CPU: both round the same products' results to bf16, but a sum in a
  # different order can round to a neighbouring bf16 value.
  for case_name in tiny_gpt mlp_classifier bert_encoder; do
    case_data="$work/torch_$case_name/data"
    [[ $case_name == tiny_gpt ]] && case_data=$data
    cpu_vs_cuda "--device cuda bf16, $case_name" "${case_name}_bf16" \
      "$work/${case_name}_bf16.shard" "$case_data" 5e-3
  done

  # 1d. Fused attention: the causal flag (tiny GPT) and a mask operand (BERT-like) on the GPU's
  # attention kernels, against the CPU's.
  cpu_vs_cuda "--device cuda fused, tiny_gpt" tiny_gpt_fused "$work/tiny_gpt_fused.shard" \
    "$data" 1e-5
  cpu_vs_cuda "--device cuda fused, bert_encoder" bert_encoder_fused \
    "$work/bert_encoder_fused.shard" "$work/torch_bert_encoder/data" 1e-5

  # 4. Sharded on the one GPU: dp=2,tp=2,zero=3, 4 ranks as threads of one process (--comm
  # local) on --device cuda, against the 1-rank bundle of the same 8-row model on the GPU.
  timeout 300 "$sr" "$work/one8.shard" --steps 30 --data "$data8" --device cuda \
    --metrics "$out/one8_cuda.jsonl" >"$out/one8_cuda.log" 2>&1
  timeout 300 "$sr" "$work/dp2tp2z3.shard" --steps 30 --data "$data8" --device cuda \
    --comm local --metrics "$out/dp2tp2z3_cuda.jsonl" >"$out/dp2tp2z3_cuda.log" 2>&1
  rc=$?
  if [[ $rc -ne 0 ]]; then
    report "--device cuda, dp2 tp2 zero3" FAIL "rc $rc: $(tail -2 "$out/dp2tp2z3_cuda.log" | tr '\n' ' ')"
  else
    vs_one=$(worst_rel "$out/dp2tp2z3_cuda.jsonl" "$out/one8_cuda.jsonl")
    if [[ $(losses "$out/dp2tp2z3_cuda.jsonl" | wc -l) -eq 30 ]] &&
       awk -v w="$vs_one" 'BEGIN {exit !(w <= 1e-5)}'; then
      report "--device cuda, dp2 tp2 zero3" ok "4 ranks on one GPU, 30 steps; vs 1 rank on the GPU worst rel $vs_one"
    else
      report "--device cuda, dp2 tp2 zero3" FAIL "vs 1 rank on the GPU worst rel $vs_one"
    fi
  fi

  local name bundle bdata
  for name in dp2 tp2; do
    bundle="$work/$name.shard" bdata=$data
    [[ $name == dp2 ]] && bdata=$data8
    timeout 300 "$sr" "$bundle" --steps 30 --data "$bdata" --comm local \
      --metrics "$out/${name}_local.jsonl" >"$out/${name}_local.log" 2>&1
    local start=$SECONDS
    timeout 300 "$mpirun" --oversubscribe -np 2 "$sr" "$bundle" --steps 30 \
      --data "$bdata" --comm nccl --comm-timeout 60 --metrics "$out/${name}_nccl.jsonl" \
      >"$out/${name}_nccl.log" 2>&1
    rc=$?
    if [[ $rc -eq 0 ]]; then
      if cmp -s <(losses "$out/${name}_local.jsonl") <(losses "$out/${name}_nccl.jsonl"); then
        report "shardrun nccl, 2 ranks $name" ok "30 losses = 2 local ranks'"
      else
        report "shardrun nccl, 2 ranks $name" FAIL "losses differ from 2 local ranks'"
      fi
    elif [[ $gpus -lt 2 && $rc -ne 124 ]] &&
         grep -q 'the nccl backend needs one GPU per rank' "$out/${name}_nccl.log"; then
      report "shardrun nccl, 2 ranks $name" ok \
        "one GPU: refused in $((SECONDS - start)) s: $(grep -m1 -i 'error' "$out/${name}_nccl.log")"
    else
      report "shardrun nccl, 2 ranks $name" FAIL "rc $rc: $(tail -2 "$out/${name}_nccl.log" | tr '\n' ' ')"
    fi
  done
  echo "$failures failed"
  [[ $failures -eq 0 ]]
}

case ${1:-} in
  prepare) shift; prepare "$@" ;;
  run) shift; run "$@" ;;
  *) echo "usage: tools/gpu_check.sh prepare DIR [BUILD_DIR] | run DIR" >&2; exit 2 ;;
esac
