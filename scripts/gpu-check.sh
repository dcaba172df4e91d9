#!/usr/bin/env bash
# The prepared GPU check (docs/gpu.md). GPU machines are lent by chance, for
# minutes, bare; everything is built here and checked there:
#
#   scripts/gpu-check.sh --prepare DIR   here (no GPU): GPU programs, CPU
#                                        references, gpu-selftest, libraries
#                                        (DIR under 40 MiB)
#   scripts/gpu-check.sh --prepare DIR --bench
#                                        also bench/h100's GPT configurations
#                                        (the bench table of docs/gpu.md;
#                                        DIR under 60 MiB)
#   scripts/gpu-check.sh --run DIR       on the GPU machine: one table,
#                                        "N passed, M failed"; exit 2 and
#                                        nothing run where there is no GPU
#
# Both steps are scripts/gpu_check.py. --prepare needs the build
# (scripts/build.sh); --run needs only python3 (with numpy; PyTorch with
# CUDA for the benchmark's baseline) and the NVIDIA driver.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  --prepare) exec "${LOOM_PYTHON:-/usr/bin/python3}" scripts/gpu_check.py prepare "${2:?--prepare DIR}" ${3:+"$3"} ;;
  --run) exec "${LOOM_PYTHON:-python3}" scripts/gpu_check.py run "${2:?--run DIR}" ;;
  *) echo "usage: $0 --prepare DIR [--bench] | --run DIR" >&2; exit 64 ;;
esac
