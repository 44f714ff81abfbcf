#!/usr/bin/env bash
# The GPU checks and figures that matter most, in order of importance, within a wall-clock budget
# (default 420 s): every part gets at most its own limit and what is left of the budget, and is
# skipped when too little is left. Parts: the GPU tests; the issue's sweep (humanoid and the
# 10-box stack at 1 to 32768 worlds, at rest); the per-pass profile of the first 100 steps of 8192
# humanoids with the row pass split by row kind (the default) and as one kernel
# (AXION_CUDA_ROW_SPLIT=0), and the 10-box stack's at rest; those first 100 steps both ways; the
# training loop; the tests with each Newton solve finished world by world after 2 batch trips;
# the training loop with every trip batched and with the solves finished world by world after 0,
# 4 and 8 trips whatever the count still iterating (AXION_BATCHED_NEWTON_WORLDS=1); the first
# 100 steps likewise; a lone world and 64 with every trip batched; 32768 humanoids' first 100
# steps; a memcheck pass. Logs go to OUT_DIR (and, packed, to OUT_DIR/logs.tgz); a summary is
# printed last.
#
# usage: bench/gpu/short_run.sh [BIN_DIR (build/release, or a bundle's bin)] [OUT_DIR (gpu-results)] [BUDGET_S (420)]
set -uo pipefail
bin=${1:-build/release}
out=${2:-gpu-results}
budget=${3:-420}
tests=$bin/cuda_backend_test
bench=$bin/gpu_bench
[ -x "$tests" ] || tests=$bin/tests/cuda/cuda_backend_test
[ -x "$bench" ] || bench=$bin/bench/gpu/gpu_bench
for f in "$tests" "$bench"; do
  [ -x "$f" ] || { echo "$f is missing: build with the CUDA backend first" >&2; exit 1; }
done
mkdir -p "$out"
deadline=$((SECONDS + budget))
summary="$out/summary.txt"
: >"$summary"

# part NAME LIMIT_S LOG CMD...: runs CMD with its output in LOG under the smaller of LIMIT_S and
# what is left of the budget
part() {
  local name=$1 limit=$2 log=$3
  shift 3
  local left=$((deadline - SECONDS))
  if [ "$left" -lt 15 ]; then
    echo "$name: skipped (budget spent)" | tee -a "$summary"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local start=$SECONDS
  timeout "$limit" "$@" >"$out/$log" 2>&1
  local rc=$?
  echo "$name: exit $rc in $((SECONDS - start)) s" | tee -a "$summary"
}
tests_summary() {
  echo "  $(grep -c '^\[       OK' "$out/$1") passed, $(grep -c '^\[  FAILED' "$out/$1") failed lines, $(grep -c '^\[  SKIPPED' "$out/$1") skipped" |
    tee -a "$summary"
  grep -E '^\[  FAILED|Failure|Expected|Which is|actual' "$out/$1" | head -30 | tee -a "$summary"
}
bench_rows() {
  grep -E '^(scene|humanoid|stack)' "$out/$1" | tee -a "$summary"
}

nvidia-smi -L | tee -a "$summary"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv |
  tee -a "$summary"

part "tests, graph" 200 tests_graph.log "$tests"
tests_summary tests_graph.log

part "sweep at rest" 120 sweep.log "$bench" --backend=cuda --settle_steps=150 --min_time=1 \
  --max_steps=300
bench_rows sweep.log
part "per-pass profile" 60 profile.log env AXION_CUDA_PROFILE=1 "$bench" --backend=cuda \
  --scene=humanoid --worlds=8192 --min_time=1000 --max_steps=100
grep -A14 "CUDA pass profile" "$out/profile.log" | tee -a "$summary"
part "per-pass profile, one row kernel" 60 profile_one_row_kernel.log env AXION_CUDA_PROFILE=1 \
  AXION_CUDA_ROW_SPLIT=0 "$bench" --backend=cuda --scene=humanoid --worlds=8192 \
  --min_time=1000 --max_steps=100
grep -A8 "CUDA pass profile" "$out/profile_one_row_kernel.log" | tee -a "$summary"
part "per-pass profile, stack at rest" 40 profile_stack.log env AXION_CUDA_PROFILE=1 "$bench" \
  --backend=cuda --scene=stack --worlds=8192 --settle_steps=150 --min_time=1 --max_steps=300
grep -A10 "CUDA pass profile" "$out/profile_stack.log" | tee -a "$summary"
part "first 100 steps, default" 30 first100.log "$bench" --backend=cuda --scene=humanoid \
  --worlds=8192 --min_time=1000 --max_steps=100
bench_rows first100.log
part "first 100 steps, one row kernel" 30 first100_one_row_kernel.log \
  env AXION_CUDA_ROW_SPLIT=0 "$bench" --backend=cuda --scene=humanoid --worlds=8192 \
  --min_time=1000 --max_steps=100
bench_rows first100_one_row_kernel.log
part "training loop, default split" 40 rl_default.log "$bench" --backend=cuda \
  --scene=humanoid --worlds=64,1024,8192 --settle_steps=150 --min_time=1 --max_steps=300 --rl_loop
bench_rows rl_default.log
part "tests, world by world after 2 trips" 120 tests_trips2.log \
  env AXION_BATCHED_NEWTON_TRIPS=2 "$tests"
tests_summary tests_trips2.log
part "training loop, batched" 60 rl.log env AXION_BATCHED_NEWTON_TRIPS=1000000 "$bench" \
  --backend=cuda --scene=humanoid --worlds=64,1024,8192 --settle_steps=150 --min_time=1 \
  --max_steps=300 --rl_loop
bench_rows rl.log
for trips in 0 4 8; do
  part "training loop, world by world after $trips trips" 40 "rl_trips$trips.log" \
    env AXION_BATCHED_NEWTON_TRIPS=$trips AXION_BATCHED_NEWTON_WORLDS=1 "$bench" --backend=cuda \
    --scene=humanoid --worlds=64,1024,8192 --settle_steps=150 --min_time=1 --max_steps=300 \
    --rl_loop
  bench_rows "rl_trips$trips.log"
done
part "first 100 steps, 8 trips whatever the count" 30 first100_trips8.log \
  env AXION_BATCHED_NEWTON_WORLDS=1 "$bench" --backend=cuda --scene=humanoid --worlds=8192 \
  --min_time=1000 --max_steps=100
bench_rows first100_trips8.log
for trips in 0 4; do
  part "first 100 steps, world by world after $trips trips" 30 "first100_trips$trips.log" \
    env AXION_BATCHED_NEWTON_TRIPS=$trips AXION_BATCHED_NEWTON_WORLDS=1 "$bench" --backend=cuda \
    --scene=humanoid --worlds=8192 --min_time=1000 --max_steps=100
  bench_rows "first100_trips$trips.log"
done
part "lone world and 64 at rest, every trip batched" 30 small_batched.log \
  env AXION_BATCHED_NEWTON_TRIPS=1000000 "$bench" --backend=cuda --scene=humanoid --worlds=1,64 \
  --settle_steps=150 --min_time=1 --max_steps=300
bench_rows small_batched.log
part "first 100 steps, 32768 worlds" 40 first100_32k.log "$bench" --backend=cuda \
  --scene=humanoid --worlds=32768 --min_time=1000 --max_steps=100
bench_rows first100_32k.log
if command -v compute-sanitizer >/dev/null; then
  part "memcheck" 90 memcheck.log env AXION_BATCHED_NEWTON_TRIPS=1 compute-sanitizer \
    --tool memcheck --print-limit 5 "$tests" \
    --gtest_filter='*Pendulum*:*AngularFriction*:*BoxStack*:*TendonsMatch*'
  grep -E "ERROR SUMMARY|^\[  PASSED|^\[  FAILED" "$out/memcheck.log" | tee -a "$summary"
fi
tar czf "$out/logs.tgz" -C "$out" --exclude=logs.tgz . 2>/dev/null
echo "==== summary"
cat "$summary"
