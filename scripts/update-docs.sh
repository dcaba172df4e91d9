#!/usr/bin/env bash
# Regenerates docs/dialect/Loom.md from the ODS definitions.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${LOOM_BUILD_DIR:-build}
cmake --build "$BUILD_DIR" --target loom-doc
cp "$BUILD_DIR/include/loom/Dialect/Loom/IR/Loom.md" docs/dialect/Loom.md
echo "updated docs/dialect/Loom.md"
