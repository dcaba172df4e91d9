#!/bin/sh
# exe_vs_jit.sh ARTIFACT DATA NP STEPS: trains ARTIFACT with loom-run's JIT
# and with its rank program (loom-run --executable), NP ranks, STEPS steps
# of DATA, and fails unless every step's loss line, every final parameter
# and every optimizer state file are equal bit for bit.
set -e
art=$1 data=$2 np=$3 steps=$4
rm -rf "$art/jit" "$art/exe" "$art/optimizer-final" "$art/opt-jit"
loom-run "$art" -np "$np" --steps "$steps" --data "$data" --params-out "$art/jit" > "$art/jit.txt"
mv "$art/optimizer-final" "$art/opt-jit"
loom-run --executable "$art" -np "$np" --steps "$steps" --data "$data" --params-out "$art/exe" > "$art/exe.txt"
grep '^step' "$art/jit.txt" > "$art/jit-steps.txt"
grep '^step' "$art/exe.txt" > "$art/exe-steps.txt"
test "$(wc -l < "$art/exe-steps.txt")" -eq "$steps"
diff "$art/jit-steps.txt" "$art/exe-steps.txt"
diff -r "$art/jit" "$art/exe"
diff -r "$art/opt-jit" "$art/optimizer-final"
echo "exe = jit: $steps steps on $np ranks, $(ls "$art/exe" | wc -l) parameters, $(ls "$art/optimizer-final" | wc -l) state tensors"
grep 'compiled ahead of time' "$art/exe.txt"
