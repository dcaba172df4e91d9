#!/usr/bin/env bash
# Installs every Debian package Loom needs. Idempotent: when everything is
# already present it only runs `dpkg-query` and exits in well under a second.
set -euo pipefail

PKGS=(
  # toolchain
  cmake ninja-build ccache lld-22 clang-22 g++
  # libFuzzer, ASan and UBSan runtimes (scripts/fuzz.sh)
  libclang-rt-22-dev
  # LLVM / MLIR 22
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  # ONNX (C++ library, protobuf, conformance data)
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  # distributed runtime (CPU collectives, launcher)
  openmpi-bin libopenmpi-dev
  # CPU collectives for ranks started without MPI (torchrun-style, srun)
  libgloo-dev
  # a single-node Slurm cluster for the launcher test
  slurm-wlm munge
  # ILP solver for the planner
  coinor-libcbc-dev
  # CPU BLAS, and oneDNN for bf16 matmuls on the CPU's bf16 instructions
  libopenblas-dev libdnnl-dev
  # unit tests
  libgtest-dev googletest
  # Python frontend and references (torchvision: resnet18 against PyTorch)
  python3-onnx python3-torch python3-numpy python3-torchvision
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
