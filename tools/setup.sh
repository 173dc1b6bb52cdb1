#!/usr/bin/env bash
# Installs everything shardc needs to build and test on Debian 12 (bookworm).
# Idempotent: packages already present are left alone. Run as root or with sudo available.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  clang-19 libclang-rt-19-dev lld-19
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  libonnx-dev libprotobuf-dev protobuf-compiler
  libgtest-dev libopenblas-dev
  libopenmpi-dev openmpi-bin
  python3 python3-numpy python3-torch python3-onnx python3-protobuf
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
