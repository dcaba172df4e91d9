#!/usr/bin/env bash
# Installs dependencies, builds Loom and runs every test: the fuzz harnesses
# under libFuzzer + ASan + UBSan for LOOM_FUZZ_SECONDS (60) each
# (scripts/fuzz.sh, its own build in build-fuzz/), the ONNX importer's lit
# tests (with the sweep over ONNX's 1,072 test models) with that build's
# ASan + UBSan loom-translate, then lit + GoogleTest.
# Exits non-zero on any failure or fuzzing finding; the output ends with
# lit's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
LLVM_PREFIX=${LLVM_PREFIX:-/usr/lib/llvm-22}
BUILD_DIR=${LOOM_BUILD_DIR:-build}

./scripts/install-deps.sh
./scripts/build.sh
fuzz_status=0
./scripts/fuzz.sh --seconds "${LOOM_FUZZ_SECONDS:-60}" || fuzz_status=$?
sanitized_status=0
if [ -x "${LOOM_FUZZ_BUILD_DIR:-build-fuzz}/bin/loom-translate" ]; then
  echo "test.sh: test/Target/ONNX with ASan + UBSan tools"
  "$LLVM_PREFIX/bin/lit" -sv --param "sanitized_tools=${LOOM_FUZZ_BUILD_DIR:-build-fuzz}/bin" \
    "$BUILD_DIR/test/Target/ONNX" || sanitized_status=$?
else
  sanitized_status=1
fi
lit_status=0
"$LLVM_PREFIX/bin/lit" -sv "$BUILD_DIR/test" "$BUILD_DIR/test/unit" "$@" || lit_status=$?
if [ "$fuzz_status" != 0 ]; then
  echo "test.sh: fuzzing found problems (scripts/fuzz.sh output above)"
  exit 1
fi
if [ "$sanitized_status" != 0 ]; then
  echo "test.sh: test/Target/ONNX failed with the ASan + UBSan tools (output above)"
  exit 1
fi
exit "$lit_status"
