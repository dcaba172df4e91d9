#!/usr/bin/env bash
# Loom's main job on a bundled example. Today, on one CPU: print the sharded
# IR of a GPT-style block on a 2x2 (dp x tp) mesh and how each op may be
# split; then compile the bundled MLP into a training step (forward,
# backward, SGD with momentum) and train it for 30 steps, printing the loss.
# (Partitioning the step over the mesh and running it on CPU ranks is the
# next issue.)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${LOOM_BUILD_DIR:-build}
BIN="$BUILD_DIR/bin"

./scripts/install-deps.sh
./scripts/build.sh >/dev/null
echo "== examples/transformer_block.mlir: sharded IR =="
"$BIN/loom-opt" examples/transformer_block.mlir
echo
echo "== sharding rules (i, j, k...: factors; reduction factors give partial sums) =="
"$BIN/loom-opt" examples/transformer_block.mlir --loom-print-sharding-rules \
  --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 |
  grep ': remark: sharding rule:' | sed -E 's|^examples/||; s|: remark: sharding rule:|:|'
echo
echo "== training examples/mlp.mlir (784-512-10, batch 32) with SGD + momentum =="
WORK="$BUILD_DIR/example-mlp"
rm -rf "$WORK"
/usr/bin/python3 examples/make_mlp_data.py "$WORK/data" 30
"$BIN/loomc" examples/mlp.mlir --train --loss=none --optimizer=sgd --lr=0.005 \
  --momentum=0.9 -o "$WORK/out"
"$BIN/loom-run" "$WORK/out" --steps 30 --data "$WORK/data"
