#!/usr/bin/env bash
# Frictional sphere piles whose columns topple (bench/sphere_pile.py --jitter), stepped by
# axion-sim with the contact presolve off and at its default, and by mujoco-testspeed on the
# same files: wall time, Newton iterations per step, steps not converged and halved, and the
# residual the steps ended at.
#
# usage: [PILES="dense wide"] [VARIANTS="off default"] bench/pile_presolve.sh [AXION_SIM] [SEEDS] [STEPS]
#   defaults: PILES=dense, VARIANTS="off default", build/release/engine/src/io/axion-sim,
#   "1 2 3 4", 100
# Each seed writes a pile of 5 x 5 columns of 10 spheres in a box 0.4 m wide (dense) and one of
# 10 x 10 columns in the 1 m box (wide: the benchmark's pile, minutes a seed with the presolve
# off); both at 0.01 s. Variants: off (--contact_presolve_sweeps=0), default, always (every
# step starts from the presolve: AXION_SIM_FLAGS can add any other flags to every run).
set -euo pipefail
cd "$(dirname "$0")/.."
SIM=${1:-build/release/engine/src/io/axion-sim}
SEEDS=${2:-1 2 3 4}
PILES=${PILES:-dense}
VARIANTS=${VARIANTS:-off default}
STEPS=${3:-100}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
field() { grep -E "^$1 " | sed -E 's/^[^:]*: *//; s/ .*//'; }
run() {  # model, label, flags...
  local model=$1 label=$2
  shift 2
  local out
  out=$("$SIM" --model="$model" --steps="$STEPS" --threads=1 --step_stats ${AXION_SIM_FLAGS:-} "$@" 2>&1)
  # the residual each step ended at: median, 90th percentile, largest
  local residuals
  residuals=$(echo "$out" | sed -nE 's/^step .*residual ([^,]*),.*/\1/p' | sort -g |
    awk '{a[NR] = $1} END {printf "%.2g %.2g %.2g", a[int((NR + 1) / 2)], a[int(NR * 0.9)], a[NR]}')
  printf '%-20s %8s s %8s %6s %6s   %s\n' "$label" "$(echo "$out" | field 'wall time')" \
    "$(echo "$out" | field 'newton iterations')" "$(echo "$out" | field 'not converged')" \
    "$(echo "$out" | field 'halved')" "$residuals"
}
printf '%-20s %10s %8s %6s %6s   %s\n' "pile seed presolve" "wall" "newton" "unconv" "halved" \
  "residual (m/s): median p90 max"
for seed in $SEEDS; do
  python3 bench/sphere_pile.py --columns=5 --condim=3 --jitter=5 --seed="$seed" --box=0.2 \
    >"$TMP/dense$seed.xml"
  python3 bench/sphere_pile.py --condim=3 --jitter=5 --seed="$seed" >"$TMP/wide$seed.xml"
  for pile in $PILES; do
    for variant in $VARIANTS; do
      case $variant in
        off) run "$TMP/$pile$seed.xml" "$pile $seed off" --contact_presolve_sweeps=0 ;;
        *) run "$TMP/$pile$seed.xml" "$pile $seed $variant" ;;
      esac
    done
    if command -v mujoco-testspeed >/dev/null; then
      printf '%-20s %10s steps/s\n' "$pile $seed mujoco" \
        "$(mujoco-testspeed "$TMP/$pile$seed.xml" "$STEPS" 1 0 | sed -nE 's/ *Steps per second *: *//p')"
    fi
  done
done
