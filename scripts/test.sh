#!/usr/bin/env bash
# Installs dependencies, builds Loom and runs every test (lit + GoogleTest).
# Exits non-zero on any failure; the output ends with lit's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
LLVM_PREFIX=${LLVM_PREFIX:-/usr/lib/llvm-22}
BUILD_DIR=${LOOM_BUILD_DIR:-build}

./scripts/install-deps.sh
./scripts/build.sh
"$LLVM_PREFIX/bin/lit" -sv "$BUILD_DIR/test" "$BUILD_DIR/test/unit" "$@"
