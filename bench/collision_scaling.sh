#!/usr/bin/env bash
# How a world's memory, load time and step rate grow with its shapes: piles of 1000 to 4000
# spheres falling into a box (bench/sphere_pile.py: 10 x 10 columns, 10 to 40 layers), one
# world, one thread. Per pile: the shapes, the shape pairs that may collide (every pair of
# spheres, and each with the walls), the batch's memory per world (axion-sim's "memory" line:
# every array of the world, model and state), the wall time of loading the file and taking one
# step, and steps per second over STEPS steps with contacts and candidate-pair overflow.
#
# usage: bench/collision_scaling.sh [--axion-sim=PATH] [--steps=N] [LAYERS ...]
# defaults: the release build's axion-sim, 50 steps, piles of 10, 20 and 40 layers.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
axion_sim="$repo/build/release/engine/src/io/axion-sim"
steps=50
source "$repo/bench/bench_args.sh"
parse_bench_args "$@"
layers=("${positional[@]+"${positional[@]}"}")
[ ${#layers[@]} -eq 0 ] && layers=(10 20 40)
[ -x "$axion_sim" ] || { echo "axion-sim not found at $axion_sim: build it or pass --axion-sim" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
field() { sed -n "s/^ *$1 *: *\([0-9.]*\).*/\1/p"; }
printf "%8s %8s %12s %14s %12s %10s %10s %14s\n" spheres shapes "pairs" "memory/world" "load+step" \
  "steps/s" contacts "pair overflow"
for n in "${layers[@]}"; do
  model="$work/pile_$n.xml"
  python3 "$repo/bench/sphere_pile.py" --layers="$n" > "$model"
  spheres=$((100 * n))
  shapes=$((spheres + 5))
  # sphere-sphere pairs, and each sphere with the floor and four walls
  pairs=$((spheres * (spheres - 1) / 2 + 5 * spheres))
  start=$(date +%s.%N)
  one="$("$axion_sim" --model="$model" --steps=1 --threads=1 2>/dev/null)"
  end=$(date +%s.%N)
  memory="$(echo "$one" | field memory)"
  out="$("$axion_sim" --model="$model" --steps="$steps" --threads=1 2>/dev/null)"
  printf "%8d %8d %12d %11.1f MB %10.2f s %10s %10s %14s\n" "$spheres" "$shapes" "$pairs" \
    "$(python3 -c "print($memory / 1024)")" "$(python3 -c "print($end - $start)")" \
    "$(python3 -c "print(f'{$steps / $(echo "$out" | field "wall time"):.1f}')")" \
    "$(echo "$out" | field contacts)" \
    "$(echo "$out" | field "pair overflow")"
done
