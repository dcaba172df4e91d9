#!/usr/bin/env bash
# Loom's main job on a bundled example: compile the bundled MLP
# (examples/mlp.mlir, annotated for a 2x2 dp x tp mesh) into a training step
# (forward, backward, SGD with momentum), partition it over the mesh,
# print the plan, and train it for 30 steps on 4 CPU ranks (MPI), printing
# the loss.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${LOOM_BUILD_DIR:-build}
BIN="$BUILD_DIR/bin"

./scripts/install-deps.sh
./scripts/build.sh >/dev/null
echo "== examples/mlp.mlir (784-512-10, batch 32): plan for a 2x2 mesh =="
WORK="$BUILD_DIR/example-mlp"
rm -rf "$WORK"
/usr/bin/python3 examples/make_mlp_data.py "$WORK/data" 30
"$BIN/loomc" examples/mlp.mlir --train --loss=none --optimizer=sgd --lr=0.005 \
  --momentum=0.9 -o "$WORK/out"
echo
echo "== training on 4 CPU ranks (loom-run -np 4 -> mpirun) =="
"$BIN/loom-run" -np 4 "$WORK/out" --steps 30 --data "$WORK/data"
