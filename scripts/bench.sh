#!/usr/bin/env bash
# Runs every benchmark program of the build and prints their tables.
set -euo pipefail
build_dir=${1:-build/release}
for b in bodies_bench joints_bench contacts_bench; do
  echo "== $b"
  "$build_dir/bench/$b" --benchmark_min_time=0.5
done
