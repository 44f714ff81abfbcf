#!/usr/bin/env bash
# Newton solves finished world by world after K batch trips (AXION_BATCHED_NEWTON_TRIPS) against
# every trip batched, on the humanoid: at rest, over the first 100 steps and in the training
# loop, at the batch sizes that decide the CUDA backend's default. Logs go to OUT_DIR; one table
# is printed last.
#
# usage: bench/gpu/trips.sh [BIN_DIR (build/release/bench/gpu, or a bundle's bin)] [OUT_DIR (gpu-results)] [TRIPS ("batched 0 8")]
set -uo pipefail
bin=${1:-build/release/bench/gpu}
out=${2:-gpu-results}
variants=${3:-batched 0 8}
bench=$bin/gpu_bench
[ -x "$bench" ] || { echo "$bench is missing: build with the CUDA backend first" >&2; exit 1; }
mkdir -p "$out"
for k in $variants; do
  trips=$k
  [ "$k" = batched ] && trips=1000
  export AXION_BATCHED_NEWTON_TRIPS=$trips
  timeout 60 "$bench" --backend=cuda --scene=humanoid --worlds=64,1024,2048,8192 --settle_steps=150 \
    --min_time=1 --max_steps=300 >"$out/rest_$k.log" 2>&1
  timeout 60 "$bench" --backend=cuda --scene=humanoid --worlds=1024,2048,8192 --min_time=1000 \
    --max_steps=100 >"$out/fall_$k.log" 2>&1
  timeout 60 "$bench" --backend=cuda --scene=humanoid --worlds=2048,4096 --settle_steps=150 \
    --min_time=1.5 --max_steps=300 --rl_loop >"$out/rl_$k.log" 2>&1
  echo "trips $k done"
done
echo "run   trips    worlds  world_steps/s  newton  newton_max  trips_taken"
for k in $variants; do
  for run in rest fall rl; do
    awk -v run=$run -v k=$k '$1 == "humanoid" && $2 == "cuda" {
      printf "%-5s %-8s %6d %14d %7.2f %11d %12.1f\n", run, k, $3, $7, $8, $9, $10 }' \
      "$out/${run}_$k.log"
  done
done
