#!/usr/bin/env bash
# Every GPU check and measurement in one run, for a machine with a CUDA device: the GPU tests
# (with the captured graph, with direct launches, with every batch on narrow teams and with every
# Newton solve finished world by world after two trips), memcheck and synccheck passes where
# compute-sanitizer is installed, the batch-size sweeps of RESULTS.md, the training-loop sweep
# (and at 8192 humanoids once more with every step starting whole, once with Newton capped at 20
# iterations, once without Newton's tail, and with the solves finished world by world after 0 to
# 16 batch trips), the height field scene's sweep and the per-pass profile at 8192 humanoids. Logs go to OUT_DIR; the
# tables are printed as they come.
#
# usage: bench/gpu/run_all.sh [BUILD_DIR (build/release)] [OUT_DIR (gpu-results)]
set -uo pipefail
build=${1:-build/release}
out=${2:-gpu-results}
mkdir -p "$out"
tests="$build/tests/cuda/cuda_backend_test"
bench="$build/bench/gpu/gpu_bench"
for f in "$tests" "$bench"; do
  [ -x "$f" ] || { echo "$f is missing: build with the CUDA backend first" >&2; exit 1; }
done
nvidia-smi -L 2>/dev/null || true
if ! "$bench" --backend=cuda --scene=stack --worlds=1 --min_time=0 --max_steps=1 >/dev/null 2>&1; then
  "$bench" --backend=cuda --scene=stack --worlds=1 --min_time=0 --max_steps=1 2>&1 | head -1 >&2
  echo "no usable CUDA device: nothing to run" >&2
  exit 1
fi

echo "== GPU tests (graph, direct launches, narrow teams, solves finished world by world)"
"$tests" >"$out/cuda_test.log" 2>&1
echo "graph: exit $? ($(grep -c '^\[       OK' "$out/cuda_test.log") passed)"
AXION_CUDA_GRAPHS=0 "$tests" >"$out/cuda_test_direct.log" 2>&1
echo "direct: exit $? ($(grep -c '^\[       OK' "$out/cuda_test_direct.log") passed)"
AXION_CUDA_TEAMS=narrow "$tests" >"$out/cuda_test_narrow.log" 2>&1
echo "narrow teams: exit $? ($(grep -c '^\[       OK' "$out/cuda_test_narrow.log") passed)"
AXION_BATCHED_NEWTON_TRIPS=2 "$tests" >"$out/cuda_test_fused.log" 2>&1
echo "world by world after 2 trips: exit $? ($(grep -c '^\[       OK' "$out/cuda_test_fused.log") passed)"
grep -h -E "^\[  FAILED|Failure" "$out"/cuda_test*.log | head -20
if command -v compute-sanitizer >/dev/null; then
  compute-sanitizer --tool memcheck --print-limit 5 "$tests" \
    --gtest_filter='*Pendulum*:*BoxStack*:*Chain*:*Controls*' >"$out/memcheck.log" 2>&1
  grep -E "ERROR SUMMARY" "$out/memcheck.log"
  AXION_BATCHED_NEWTON_TRIPS=1 compute-sanitizer --tool memcheck --print-limit 5 "$tests" \
    --gtest_filter='*BoxStack*:*Chain*:*NewtonFinished*' >"$out/memcheck_fused.log" 2>&1
  grep -E "ERROR SUMMARY" "$out/memcheck_fused.log"
  # the narrow teams' __syncwarp masks
  compute-sanitizer --tool synccheck --print-limit 5 "$tests" \
    --gtest_filter='*NarrowTeams*:*Pendulum*:*BoxStack*' >"$out/synccheck.log" 2>&1
  grep -E "ERROR SUMMARY" "$out/synccheck.log"
fi

echo "== sweep, scenes at rest (RESULTS.md)"
"$bench" --backend=cuda --settle_steps=150 --min_time=2 --max_steps=500 2>&1 | tee "$out/sweep.log"
echo "== height fields: five shapes on rough terrain (scenes::BodiesOnTerrain)"
"$bench" --backend=cuda --scene=terrain --worlds=1,64,1024,8192 --settle_steps=150 --min_time=2 \
  --max_steps=500 2>&1 | tee "$out/terrain.log"
echo "== training loop: controls set and body states read every step"
"$bench" --backend=cuda --scene=humanoid --worlds=64,1024,8192 --settle_steps=150 --min_time=2 \
  --max_steps=500 --rl_loop 2>&1 | tee "$out/rl_loop.log"
echo "== training loop, every step starting whole (--halving_carryover=false; compare the line above)"
"$bench" --backend=cuda --scene=humanoid --worlds=8192 --settle_steps=150 --min_time=2 \
  --max_steps=500 --rl_loop --halving_carryover=false 2>&1 | tee "$out/rl_loop_whole_start.log"
echo "== training loop, Newton capped at 20 iterations and no halvings (trips against quality)"
"$bench" --backend=cuda --scene=humanoid --worlds=8192 --settle_steps=150 --min_time=2 \
  --max_steps=500 --rl_loop --newton_iterations=20 --step_halvings=0 2>&1 | tee "$out/rl_loop_capped.log"
echo "== training loop without Newton's tail (--newton_tail_iterations=0; what the tail gives on the device)"
"$bench" --backend=cuda --scene=humanoid --worlds=8192 --settle_steps=150 --min_time=2 \
  --max_steps=500 --rl_loop --newton_tail_iterations=0 2>&1 | tee "$out/rl_loop_no_tail.log"
# the solves finished world by world after K batch trips (AXION_BATCHED_NEWTON_TRIPS): K = 0
# runs every Newton iteration in the finishing kernel, a warp per world
for trips in 0 2 4 8 16; do
  echo "== training loop, solves finished world by world after $trips batch trips"
  AXION_BATCHED_NEWTON_TRIPS=$trips "$bench" --backend=cuda --scene=humanoid --worlds=1024,8192 \
    --settle_steps=150 --min_time=2 --max_steps=500 --rl_loop 2>&1 | tee "$out/rl_loop_fused_$trips.log"
done
for trips in 0 4; do
  echo "== first 100 steps of 8192 humanoids, solves finished world by world after $trips batch trips"
  AXION_BATCHED_NEWTON_TRIPS=$trips "$bench" --backend=cuda --scene=humanoid --worlds=8192 \
    --min_time=1000 --max_steps=100 2>&1 | tee "$out/first100_fused_$trips.log"
done
echo "== per-pass profile, 8192 humanoids, the first 100 steps"
AXION_CUDA_PROFILE=1 "$bench" --backend=cuda --scene=humanoid --worlds=8192 --min_time=1000 \
  --max_steps=100 >"$out/profile.log" 2>&1
head -20 "$out/profile.log"
