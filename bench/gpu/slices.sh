#!/usr/bin/env bash
# The batch's slice count (AXION_CUDA_SLICES) against throughput on a CUDA device: 8192
# humanoids over their first 100 steps, the humanoids at rest at 8192 and 32768 worlds, and the
# training loop at 1024 and 8192. Logs go to OUT_DIR; a summary table is printed last.
#
# usage: bench/gpu/slices.sh [BUILD_DIR (build/release)] [OUT_DIR (gpu-results)] [COUNTS ("1 2 4 8")]
set -uo pipefail
build=${1:-build/release}
out=${2:-gpu-results}
counts=${3:-1 2 4 8}
bench="$build/bench/gpu/gpu_bench"
[ -x "$bench" ] || { echo "$bench is missing: build with the CUDA backend first" >&2; exit 1; }
mkdir -p "$out"
for k in $counts; do
  export AXION_CUDA_SLICES=$k
  "$bench" --backend=cuda --scene=humanoid --worlds=8192 --min_time=1000 --max_steps=100 \
    >"$out/fall_$k.log" 2>&1
  "$bench" --backend=cuda --scene=humanoid --worlds=8192,32768 --settle_steps=150 --min_time=2 \
    --max_steps=500 >"$out/rest_$k.log" 2>&1
  "$bench" --backend=cuda --scene=humanoid --worlds=1024,8192 --settle_steps=150 --min_time=2 \
    --max_steps=500 --rl_loop >"$out/rl_$k.log" 2>&1
  echo "slices $k done"
done
echo "run      slices  worlds  world_steps/s  newton  newton_max  trips  cr"
for k in $counts; do
  for run in fall rest rl; do
    awk -v run=$run -v k=$k '$1 == "humanoid" && $2 == "cuda" {
      printf "%-8s %6d %7d %14d %7.2f %11d %6.1f %5.1f\n", run, k, $3, $7, $8, $9, $10, $12 }' \
      "$out/${run}_$k.log"
  done
done
