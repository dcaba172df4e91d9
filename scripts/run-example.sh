#!/usr/bin/env bash
# Loom's main job on a bundled example: compile the bundled MLP
# (examples/mlp.mlir, annotated for a 2x2 dp x tp mesh) into a training step
# (forward, backward, SGD with momentum), partition it over the mesh,
# print the plan, and train it for 30 steps on 4 CPU ranks (MPI), printing
# the loss; train a nanoGPT-style PyTorch model through loom.compile on the
# same mesh; then plan GPT-3-sized training for 1024 H100s automatically.
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

echo
echo "== PyTorch: examples/nanogpt.py (a nanoGPT-style model) traced by loom.compile, auto-planned for dp=2,tp=2, trained on 4 ranks =="
PYTHONPATH=python LOOM_BUILD_DIR="$BUILD_DIR" /usr/bin/python3 examples/nanogpt.py \
  --mesh dp=2,tp=2 --steps 20 --out "$WORK/nanogpt" | awk '/^ops /{skip=1} /^(runners-up|step 0 )/{skip=0} !skip'

echo
echo "== automatic sharding: GPT-3 175B shapes (96 layers, hidden 12288) for 1024 H100s =="
/usr/bin/python3 bench/planner/gpt.py --layers 96 --hidden 12288 --heads 96 --seq 2048 \
  --batch 1024 > "$WORK/gpt3.mlir"
"$BIN/loomc" "$WORK/gpt3.mlir" --train --loss=none --optimizer=adamw --strategy auto \
  --cluster h100-cluster:128x8 --plan-only -o "$WORK/gpt3-plan" \
  | awk '/^ops /{skip=1} /^runners-up/{skip=0} !skip'
echo "(full report: $WORK/gpt3-plan/plan.txt; the step with its shardings: $WORK/gpt3-plan/planned.mlir)"
