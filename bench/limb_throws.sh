#!/usr/bin/env bash
# Robustness of the humanoid under noisy controls: for each time step, runs 5 simulated seconds
# per noise seed and counts the runs that throw a limb (some body faster than MAX_SPEED m/s; a
# free fall from the start pose peaks near 5 m/s) and the steps whose Newton solve ended at its
# iteration limit.
#
# usage: bench/limb_throws.sh [--axion-sim=PATH] [--model=FILE] [--seeds=FIRST-LAST]
#                             [--timesteps="0.01 0.02 0.04 0.08"] [--noise=0.01] [--max-speed=50]
#                             [-- extra axion-sim flags]
set -euo pipefail
sim=build/release/engine/src/io/axion-sim
model=/usr/share/mujoco/model/humanoid/humanoid.xml
seeds=1-16
timesteps="0.01 0.02 0.04 0.08"
noise=0.01
max_speed=50
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --axion-sim=*) sim=${1#*=} ;;
    --model=*) model=${1#*=} ;;
    --seeds=*) seeds=${1#*=} ;;
    --timesteps=*) timesteps=${1#*=} ;;
    --noise=*) noise=${1#*=} ;;
    --max-speed=*) max_speed=${1#*=} ;;
    --) shift; extra=("$@"); break ;;
    *) echo "unknown argument $1 (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$sim" ] || { echo "$sim is missing: run 'make build' first" >&2; exit 1; }
first=${seeds%-*}
last=${seeds#*-}

printf "%-8s %-10s %-12s %s\n" "dt (s)" "throws" "not conv." "seeds that threw"
for dt in $timesteps; do
  steps=$(awk -v dt="$dt" 'BEGIN { printf "%d", 5 / dt + 0.5 }')
  throws=0
  not_converged=0
  list=""
  for seed in $(seq "$first" "$last"); do
    out=$("$sim" --model="$model" --steps="$steps" --worlds=1 --threads=1 --backend=cpu \
      --noise="$noise" --timestep="$dt" --seed="$seed" --report_speed "${extra[@]}" 2>/dev/null)
    speed=$(echo "$out" | sed -n 's/^max body speed *: *\([^ ]*\).*/\1/p')
    count=$(echo "$out" | sed -n 's/^not converged *: *\([0-9]*\).*/\1/p')
    not_converged=$((not_converged + ${count:-0}))
    # a missing or non-finite speed (nan, inf) counts as a throw
    if ! [[ "$speed" =~ ^[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$ ]] ||
      ! awk -v v="$speed" -v m="$max_speed" 'BEGIN { exit !(v < m) }'; then
      throws=$((throws + 1))
      list="$list $seed"
    fi
  done
  printf "%-8s %-10s %-12s %s\n" "$dt" "$throws/$((last - first + 1))" "$not_converged" "${list:- -}"
done
