#!/usr/bin/env bash
# Builds Loom's fuzz harnesses (tools/fuzz) with libFuzzer, ASan and UBSan
# in ${LOOM_FUZZ_BUILD_DIR:-build-fuzz} and runs each for a bounded time on
# its corpus: the seeds and regression inputs under test/Fuzz (plus ONNX's
# own test models and tensors), and what earlier runs here added. Exits
# non-zero on any finding (crash, sanitizer report, timeout, out of memory),
# naming the input libFuzzer saved.
#
#   scripts/fuzz.sh [--seconds N] [--jobs J] [--procs P] [--only a,b]
#                   [--build-only] [--minimize]
#
# CI (scripts/test.sh) runs every harness for 60 s, two at a time; long runs
# outside CI use e.g. --seconds 3600 --only onnx --procs 2 (P libFuzzer
# processes on each harness, sharing its corpus, each with its own seed and
# log). A summary line per harness gives the executions (all processes),
# corpus size and result; docs/reliability.md keeps the totals.
# --minimize (with --only) first shrinks each harness's working corpus to
# the inputs that add coverage (libFuzzer's -merge=1), then fuzzes as asked
# (--seconds 0: minimize only).
set -euo pipefail
cd "$(dirname "$0")/.."
LLVM_PREFIX=${LLVM_PREFIX:-/usr/lib/llvm-22}
BUILD_DIR=${LOOM_FUZZ_BUILD_DIR:-build-fuzz}
SECONDS_EACH=60
JOBS=2
PROCS=1
ONLY=""
BUILD_ONLY=0
MINIMIZE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --procs) PROCS=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --build-only) BUILD_ONLY=1; shift ;;
    --minimize) MINIMIZE=1; shift ;;
    *) echo "fuzz.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
HARNESSES=(onnx ir cluster tensor manifest)
if [ -n "$ONLY" ]; then IFS=, read -r -a HARNESSES <<< "$ONLY"; fi

# -O1 and line tables: sanitizer reports with source lines, and a build
# about twice as fast as the release one. Tests are not built here.
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS_RELEASE="-O1 -gline-tables-only" \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" \
    -DCMAKE_C_COMPILER="$LLVM_PREFIX/bin/clang" \
    -DCMAKE_CXX_COMPILER="$LLVM_PREFIX/bin/clang++" \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DLOOM_ENABLE_FUZZERS=ON -DLOOM_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$BUILD_DIR" --target loom-fuzzers loom-sanitized-tools
[ "$BUILD_ONLY" = 1 ] && exit 0

# Seeds that are not in the repository: ONNX's test models and tensors.
ONNX_DATA=/usr/share/libonnx-testdata/data
seed_extra() {
  local name=$1 dir=$BUILD_DIR/fuzz/seeds/$1
  [ -d "$dir" ] && return 0
  mkdir -p "$dir"
  # `head` closes its pipe early: no pipefail here.
  set +o pipefail
  case "$name" in
    onnx)
      find "$ONNX_DATA" -name model.onnx -size -64k 2>/dev/null |
        while read -r f; do cp "$f" "$dir/$(echo "$f" | md5sum | cut -c1-16)"; done ;;
    tensor)
      find "$ONNX_DATA/node" -name 'input_0.pb' -size -16k 2>/dev/null | head -300 |
        while read -r f; do
          { printf '\001'; cat "$f"; } > "$dir/$(echo "$f" | md5sum | cut -c1-16)"
        done ;;
    ir)
      find test -name '*.mlir' -size -64k |
        while read -r f; do cp "$f" "$dir/$(echo "$f" | md5sum | cut -c1-16)"; done ;;
    cluster)
      find test examples docs -name '*.json' -size -64k 2>/dev/null |
        while read -r f; do cp "$f" "$dir/$(echo "$f" | md5sum | cut -c1-16)"; done ;;
  esac
  set -o pipefail
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
OUT=$BUILD_DIR/fuzz/out
mkdir -p "$OUT"

run_one() {
  local name=$1 work=$BUILD_DIR/fuzz/corpus/$1 log=$OUT/$1.log
  mkdir -p "$work" "$OUT/$name-crashes"
  seed_extra "$name"
  local seeds=()
  for d in "test/Fuzz/corpus/$name" "test/Fuzz/regressions/$name" \
           "$BUILD_DIR/fuzz/seeds/$name"; do
    [ -d "$d" ] && seeds+=("$d")
  done
  local rc=0 p pids=()
  [ -f "$BUILD_DIR/bin/loom-fuzz-$name" ] || { echo "fuzz $name: no harness"; return 1; }
  if [ "$MINIMIZE" = 1 ]; then
    local before min=$work.min
    before=$(find "$work" -type f | wc -l)
    rm -rf "$min" && mkdir -p "$min"
    if ! "$BUILD_DIR/bin/loom-fuzz-$name" -merge=1 -timeout=20 -rss_limit_mb=4096 \
         -max_len=65536 "$min" "$work" > "$OUT/$name.merge.log" 2>&1; then
      echo "fuzz $name: FINDING while minimizing; log $OUT/$name.merge.log"
      return 1
    fi
    rm -rf "$work" && mv "$min" "$work"
    echo "fuzz $name: corpus minimized from $before to $(find "$work" -type f | wc -l) inputs"
    [ "$SECONDS_EACH" = 0 ] && return 0
  fi
  for ((p = 0; p < PROCS; ++p)); do
    local plog=$log
    [ "$PROCS" -gt 1 ] && plog=$OUT/$name.$p.log
    "$BUILD_DIR/bin/loom-fuzz-$name" "$work" "${seeds[@]}" \
      -max_total_time="$SECONDS_EACH" -timeout=20 -rss_limit_mb=4096 \
      -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$OUT/$name-crashes/" > "$plog" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  if [ "$PROCS" -gt 1 ]; then cat "$OUT/$name".[0-9]*.log > "$log"; fi
  local execs corpus
  execs=$(grep -a -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' |
          awk '{ s += $1 } END { print s + 0 }')
  corpus=$(find "$work" -type f | wc -l)
  if [ "$rc" = 0 ]; then
    echo "fuzz $name: ok, ${execs:-0} executions in ${SECONDS_EACH}s, corpus $corpus"
  else
    echo "fuzz $name: FINDING (exit $rc) after ${execs:-0} executions; log $log"
    grep -a -E 'ERROR|FINDING|runtime error|Test unit written|==ERROR' "$log" | head -8 | sed 's/^/  /'
    grep -a -A14 'ERROR: AddressSanitizer\|runtime error\|FINDING\|deadly signal' "$log" | grep -a '#[0-9]' | head -12 | sed 's/^/  /'
  fi
  return "$rc"
}

status=0
pids=()
names=()
for name in "${HARNESSES[@]}"; do
  run_one "$name" > "$OUT/$name.summary" &
  pids+=($!)
  names+=("$name")
  if [ ${#pids[@]} -ge "$JOBS" ]; then
    wait "${pids[0]}" || status=1
    cat "$OUT/${names[0]}.summary"
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || status=1
  cat "$OUT/${names[$i]}.summary"
done
if [ "$status" != 0 ]; then
  echo "fuzz: findings above; each input is kept under $OUT/<harness>-crashes/" \
       "(replay: $BUILD_DIR/bin/loom-fuzz-<harness> FILE)"
fi
exit "$status"
