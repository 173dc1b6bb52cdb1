#!/usr/bin/env bash
# Installs everything shardc needs to build and test on Debian 12 (bookworm): Debian packages,
# then the test-only Python packages from PyPI in .venv (beside Debian's torch and onnx, which it
# sees). Idempotent: what is already there is left alone. Run as root or with sudo available.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# transformers 4.49 is the newest release that runs on Debian's torch 1.13 (4.50-4.51 import
# torch.distributed.tensor, later ones require torch >= 2.1); the model-zoo test uses it.
TEST_PIP_PACKAGES=(transformers==4.49.0)
# peft 0.14.0 and accelerate 1.2.1 (which peft imports) run on torch 1.13, but their requirements
# would pull PyPI's torch 2.x: they are installed without dependencies (theirs are Debian's
# packages or transformers'). The LoRA test trains against peft.
TEST_PIP_PACKAGES_NO_DEPS=(peft==0.14.0 accelerate==1.2.1)

setup_test_venv() {
  local venv="$root/.venv"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import torch, transformers, peft" 2>/dev/null; then
    echo "setup: $venv has the test packages"
    return
  fi
  echo "setup: creating $venv with ${TEST_PIP_PACKAGES[*]} ${TEST_PIP_PACKAGES_NO_DEPS[*]}"
  # Debian's interpreter: the one whose site packages hold python3-torch and python3-onnx.
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "${TEST_PIP_PACKAGES[@]}"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "${TEST_PIP_PACKAGES_NO_DEPS[@]}"
}

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  clang-19 libclang-rt-19-dev lld-19
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  libonnx-dev libprotobuf-dev protobuf-compiler
  libgtest-dev libopenblas-dev libdnnl-dev
  nlohmann-json3-dev libxxhash-dev libcli11-dev libfmt-dev
  libopenmpi-dev openmpi-bin
  python3 python3-numpy python3-torch python3-torchvision python3-onnx python3-protobuf python3-venv
  python3-xxhash python3-psutil python3-yaml
  strace
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages already installed"
  setup_test_venv
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
setup_test_venv
echo "setup: done"
