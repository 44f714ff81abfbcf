#!/usr/bin/env bash
# Steps per second of Axion and MuJoCo on MuJoCo's own sample models, one thread each, from the
# models' start without control noise: how the gap grows with bodies and contacts (one humanoid,
# 22 humanoids, humanoid100's figure and 100 boxes, 1000 particles in a box, piles of spheres,
# 20 bodies dropped on rough terrain: bench/terrain_scene.py's height field).
#   `mujoco-testspeed MODEL STEPS 1 0` (the fastest of 3 runs) against
#   `axion-sim --model=MODEL --steps=STEPS --threads=1` (the fastest of 3 runs), with Axion's
#   Newton iterations and contacts per step beside it.
#
# usage: bench/models_speed.sh [--axion-sim=PATH] [--steps=N] [MODEL.xml:STEPS ...]
# defaults: the release build's axion-sim; the models below with their step counts.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
axion_sim="$repo/build/release/engine/src/io/axion-sim"
steps=""
source "$repo/bench/bench_args.sh"
parse_bench_args "$@"
models=("${positional[@]+"${positional[@]}"}")
dir=/usr/share/mujoco/model
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ ${#models[@]} -eq 0 ]; then
  python3 "$repo/bench/sphere_pile.py" --joint=free > "$work/pile_free.xml"
  python3 "$repo/bench/sphere_pile.py" --joint=slide > "$work/pile_slide.xml"
  python3 "$repo/bench/terrain_scene.py" --out="$work"
  models=("$dir/humanoid/humanoid.xml:2000" "$dir/humanoid/22_humanoids.xml:500"
          "$dir/humanoid100/humanoid100.xml:500" "$dir/composite/particle.xml:100"
          "$work/pile_free.xml:100" "$work/pile_slide.xml:100" "$work/terrain.xml:1000")
fi
[ -x "$axion_sim" ] || { echo "axion-sim not found at $axion_sim: build it or pass --axion-sim" >&2; exit 1; }
command -v mujoco-testspeed >/dev/null || { echo "mujoco-testspeed not found (libmujoco-samples)" >&2; exit 1; }

cd "$work"  # MuJoCo writes MUJOCO_LOG.TXT on warnings

field() { sed -n "s/^ *$1 *: *\([0-9.]*\).*/\1/p"; }
printf "%-20s %6s %12s %12s %8s %10s %10s\n" model steps "mujoco/s" "axion/s" ratio "newton" "contacts"
for entry in "${models[@]}"; do
  model="${entry%%:*}"
  n="${steps:-${entry##*:}}"
  [ "$model" = "$entry" ] && n="${steps:-500}"
  mj=0
  ax=0
  for _ in 1 2 3; do
    m="$(mujoco-testspeed "$model" "$n" 1 0 2>/dev/null | field "Steps per second")"
    mj="$(python3 -c "print(max($mj, ${m:-0}))")"
    out="$("$axion_sim" --model="$model" --steps="$n" --threads=1 2>/dev/null)"
    a="$(echo "$out" | field "steps per second")"
    ax="$(python3 -c "print(max($ax, ${a:-0}))")"
  done
  newton="$(echo "$out" | field "newton iterations")"
  contacts="$(echo "$out" | field "contacts")"
  printf "%-20s %6s %12.0f %12.0f %8.3f %10s %10s\n" "$(basename "$model" .xml)" "$n" "$mj" "$ax" \
    "$(python3 -c "print($ax / $mj if $mj > 0 else 0)")" "$newton" "$contacts"
done
