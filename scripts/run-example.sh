#!/usr/bin/env bash
# Loom's main job on a bundled example. Today: parse and verify a GPT-style
# transformer block on a 2x2 (dp x tp) mesh and print its sharded IR, then
# the sharding rule of every op (how each op may be split).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${LOOM_BUILD_DIR:-build}

./scripts/install-deps.sh
./scripts/build.sh >/dev/null
echo "== examples/transformer_block.mlir: sharded IR =="
"$BUILD_DIR/bin/loom-opt" examples/transformer_block.mlir
echo
echo "== sharding rules (i, j, k...: factors; reduction factors give partial sums) =="
"$BUILD_DIR/bin/loom-opt" examples/transformer_block.mlir --loom-print-sharding-rules \
  --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 |
  grep ': remark: sharding rule:' | sed -E 's|^examples/||; s|: remark: sharding rule:|:|'
