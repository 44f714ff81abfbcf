#!/usr/bin/env bash
# Steps per second of Axion and MuJoCo on MuJoCo's own sample models, one thread each, from the
# models' start without control noise (`mujoco-testspeed MODEL STEPS 1 0` against `axion-sim
# --model=MODEL --steps=STEPS --threads=1`, the fastest of 3 runs each), and beside them each
# engine's work per step: MuJoCo's solver iterations, constraint rows and contacts (a probe
# compiled here against libmujoco, g++ needed), Axion's Newton and linear-solve iterations, rows
# and contacts. A step's cost is about its iterations times its rows, so the columns say where
# a gap comes from. Models: one humanoid, 22 humanoids, humanoid100, 1000 particles in a box,
# piles of spheres, 20 bodies on bench/terrain_scene.py's rough terrain.
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
axion_sim="$(cd "$(dirname "$axion_sim")" && pwd)/$(basename "$axion_sim")"  # runs from $work

cd "$work"  # MuJoCo writes MUJOCO_LOG.TXT on warnings

# MuJoCo's work per step: mean solver iterations, constraint rows (nefc) and contacts over the
# same steps from the model's start, and its solver's name.
cat > "$work/mj_work.cc" <<'EOF'
#include <mujoco/mujoco.h>
#include <cstdio>
#include <cstdlib>
static void Quiet(const char*) {}  // a full contact buffer warns on stdout, in the columns
int main(int argc, char** argv) {
  mju_user_warning = Quiet;
  char error[1000] = "";
  mjModel* m = mj_loadXML(argv[1], nullptr, error, sizeof(error));
  if (!m) { std::fprintf(stderr, "%s\n", error); return 1; }
  mjData* d = mj_makeData(m);
  const long steps = std::atol(argv[2]);
  double iterations = 0, rows = 0, contacts = 0;
  for (long s = 0; s < steps; ++s) {
    mj_step(m, d);
    iterations += d->solver_iter;
    rows += d->nefc;
    contacts += d->ncon;
  }
  const char* solver[] = {"PGS", "CG", "Newton"};
  std::printf("%.1f %.0f %.0f %s\n", iterations / steps, rows / steps, contacts / steps,
              m->opt.solver >= 0 && m->opt.solver <= 2 ? solver[m->opt.solver] : "?");
  return 0;
}
EOF
g++ -O2 -o "$work/mj_work" "$work/mj_work.cc" -lmujoco

field() { sed -n "s/^ *$1 *: *\([0-9.]*\).*/\1/p"; }
printf "%-14s %5s %9s %9s %7s | %-26s | %s\n" model steps "mujoco/s" "axion/s" ratio \
  "MuJoCo: iter  rows contacts" "Axion: newton    cr  rows contacts"
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
  read -r mj_iter mj_rows mj_contacts mj_solver < <("$work/mj_work" "$model" "$n")
  newton="$(echo "$out" | field "newton iterations")"
  cr="$(echo "$out" | field "cr iterations")"
  rows="$(echo "$out" | field "constraint rows")"
  contacts="$(echo "$out" | field "contacts")"
  printf "%-14s %5s %9.0f %9.0f %7.3f | %-6s %5s %5s %8s | %13s %5s %5s %8s\n" \
    "$(basename "$model" .xml)" "$n" "$mj" "$ax" "$(python3 -c "print($ax / $mj if $mj > 0 else 0)")" \
    "$mj_solver" "$mj_iter" "$mj_rows" "$mj_contacts" "$newton" "$cr" "$rows" "$contacts"
done
