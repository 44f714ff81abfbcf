#!/usr/bin/env bash
# Axion vs MuJoCo on the same model, the same machine, the same step count, time step and
# control noise:
#   1. throughput: `mujoco-testspeed MODEL N THREADS NOISE` against
#      `axion-sim --model=MODEL --steps=N --worlds=THREADS --threads=THREADS --noise=NOISE`
#      (testspeed runs one simulation per thread; axion-sim steps one world per thread);
#   2. stability: each engine's largest stable time step from a sweep (base time step x 1, 2, 3,
#      4, 6, 8, 12, 16, 24, 32; 5 simulated seconds each; stable = no NaN/Inf, no bad-QACC
#      warning for MuJoCo, and speeds below MAX_SPEED: every |qvel| entry for MuJoCo, every
#      body's linear speed for Axion), a step counting as stable only when it is for every one of
#      SEEDS control-noise seeds (large steps fail on some noise sequences and not on others), then
#      simulated seconds per wall second of each engine at its own largest stable step.
#      Axion's cells also give the share of its steps whose Newton solve ended at its iteration
#      limit (summed over the seeds): such a step keeps its best iterate, so a step that stays
#      bounded is not always a step that was solved. Axion's throughput figures (1. and 2.) are
#      the SEEDS seeds' runs taken together (total steps over total wall time), since one
#      trajectory under noise is chaotic; mujoco-testspeed takes no seed and runs its own.
#
# usage: bench/mujoco_compare.sh [--model=FILE] [--steps=N] [--threads=T] [--noise=X]
#                                [--axion-sim=PATH] [--max-speed=V] [--sweep-seconds=S]
#                                [--seeds=K]
# defaults: MuJoCo's humanoid, 2000 steps, 1 thread, noise 0.01, 4 seeds, axion-sim from build/.
# MuJoCo's side of the sweep uses a small helper compiled here against libmujoco (g++ needed).
set -euo pipefail

model=/usr/share/mujoco/model/humanoid/humanoid.xml
steps=2000
threads=1
noise=0.01
max_speed=50
sweep_seconds=5
seeds=4
repo="$(cd "$(dirname "$0")/.." && pwd)"
axion_sim=""
for arg in "$@"; do
  case "$arg" in
    --model=*) model="${arg#*=}" ;;
    --steps=*) steps="${arg#*=}" ;;
    --threads=*) threads="${arg#*=}" ;;
    --noise=*) noise="${arg#*=}" ;;
    --axion-sim=*) axion_sim="${arg#*=}" ;;
    --max-speed=*) max_speed="${arg#*=}" ;;
    --sweep-seconds=*) sweep_seconds="${arg#*=}" ;;
    --seeds=*) seeds="${arg#*=}" ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done
if [ -z "$axion_sim" ]; then
  axion_sim="$(find "$repo/build" -name axion-sim -type f -perm -u+x 2>/dev/null | head -n 1 || true)"
fi
[ -x "$axion_sim" ] || { echo "axion-sim not found: build it or pass --axion-sim=PATH" >&2; exit 1; }
command -v mujoco-testspeed >/dev/null || { echo "mujoco-testspeed not found (libmujoco-samples)" >&2; exit 1; }
[ -f "$model" ] || { echo "model not found: $model" >&2; exit 1; }
model="$(cd "$(dirname "$model")" && pwd)/$(basename "$model")"
axion_sim="$(cd "$(dirname "$axion_sim")" && pwd)/$(basename "$axion_sim")"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# MuJoCo writes MUJOCO_LOG.TXT into the working directory on warnings: keep it in $work.
cd "$work"

# MuJoCo stability probe: steps a model at a given time step with uniform control noise in the
# middle `noise` fraction of each ctrlrange (axion-sim's rule) and prints whether it stayed
# finite without warnings, its max speed, and its deepest contact penetration (m; each step's
# contacts, found at its start, as axion-sim --report_depth reads them).
cat > "$work/mj_probe.cc" <<'EOF'
#include <mujoco/mujoco.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
static void Quiet(const char*) {}  // instability is reported through d->warning instead
int main(int argc, char** argv) {
  mju_user_warning = Quiet;
  char error[1000] = "";
  mjModel* m = mj_loadXML(argv[1], nullptr, error, sizeof(error));
  if (!m) { std::fprintf(stderr, "%s\n", error); return 1; }
  m->opt.timestep = std::atof(argv[2]);
  double seconds = std::atof(argv[3]), noise = std::atof(argv[4]);
  mjData* d = mj_makeData(m);
  std::mt19937_64 rng(argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 1);
  std::uniform_real_distribution<double> u(-1, 1);
  long steps = std::lround(seconds / m->opt.timestep);
  double max_speed = 0, max_depth = 0;
  bool finite = true;
  for (long s = 0; s < steps && finite; ++s) {
    for (int a = 0; a < m->nu; ++a) {
      double lo = m->actuator_ctrlrange[2 * a], hi = m->actuator_ctrlrange[2 * a + 1];
      bool limited = m->actuator_ctrllimited[a];
      double center = limited ? 0.5 * (lo + hi) : 0, radius = limited ? 0.5 * (hi - lo) : 1;
      d->ctrl[a] = center + noise * radius * u(rng);
    }
    mj_step(m, d);
    for (int i = 0; i < d->ncon; ++i) max_depth = std::fmax(max_depth, -d->contact[i].dist);
    for (int i = 0; i < m->nv; ++i) {
      if (!std::isfinite(d->qvel[i])) finite = false;
      else max_speed = std::fmax(max_speed, std::fabs(d->qvel[i]));
    }
  }
  int bad = d->warning[mjWARN_BADQACC].number;
  std::printf("%d %g %g\n", finite && bad == 0 ? 1 : 0, max_speed, max_depth);
  mj_deleteData(d);
  mj_deleteModel(m);
  return 0;
}
EOF
mj_lib="$(ls /usr/lib/*/libmujoco.so 2>/dev/null | head -n 1)"
g++ -O2 -std=c++17 "$work/mj_probe.cc" -o "$work/mj_probe" "$mj_lib"

base_dt="$(mujoco-testspeed "$model" 1 1 0 | sed -n 's/.*at dt = \([0-9.eE+-]*\).*/\1/p')"
echo "model: $model"
echo "steps: $steps, threads: $threads, noise: $noise, base time step: $base_dt s"
echo

# A copy of the model directory whose main file has the given time step (MuJoCo has no flag).
mj_model_at() {
  local dt="$1" dir
  dir="$work/mj_$dt"
  if [ ! -d "$dir" ]; then
    cp -r "$(dirname "$model")" "$dir"
    python3 - "$dir/$(basename "$model")" "$dt" <<'EOF'
import re, sys
path, dt = sys.argv[1], sys.argv[2]
text = open(path).read()
if re.search(r'<option\b[^>]*\btimestep=', text):
    text = re.sub(r'(<option\b[^>]*\btimestep=")[^"]*(")', r'\g<1>' + dt + r'\g<2>', text, count=1)
elif re.search(r'<option\b', text):
    text = re.sub(r'<option\b', '<option timestep="' + dt + '"', text, count=1)
else:
    text = re.sub(r'(<mujoco\b[^>]*>)', r'\1<option timestep="' + dt + '"/>', text, count=1)
open(path, 'w').write(text)
EOF
  fi
  echo "$dir/$(basename "$model")"
}

mj_rate() {  # steps/s and realtime factor from mujoco-testspeed
  local out
  out="$(mujoco-testspeed "$1" "$steps" "$threads" "$noise")"
  echo "$(echo "$out" | sed -n 's/.*Steps per second *: *\([0-9.]*\).*/\1/p') $(echo "$out" | sed -n 's/.*Realtime factor *: *\([0-9.]*\).*/\1/p')"
}
# world-steps/s, realtime factor, the share of steps not converged and the deepest contact
# penetration (m) from axion-sim at time step $1 (further arguments go to axion-sim), over the
# SEEDS noise seeds together (total steps over total wall time): one trajectory under noise is
# chaotic, and at large steps where it ends up lying decides its speed by 3x either way.
axion_rate() {
  local dt="$1" out wall=0 not_converged=0 depth=0 seed
  shift
  for seed in $(seq 1 "$seeds"); do
    out="$("$axion_sim" --model="$model" --steps="$steps" --worlds="$threads" \
           --threads="$threads" --noise="$noise" --backend=cpu --timestep="$dt" --seed="$seed" \
           --report_depth "$@" 2>/dev/null)" || return 0
    wall="$(python3 -c "print($wall + $(echo "$out" | sed -n 's/^wall time *: *\([0-9.]*\).*/\1/p'))")"
    not_converged=$((not_converged + $(echo "$out" | sed -n 's/^not converged *: *\([0-9]*\).*/\1/p')))
    depth="$(python3 -c "print(max($depth, $(echo "$out" | sed -n 's/^deepest contact *: *\([0-9.eE+-]*\).*/\1/p')))")"
  done
  python3 -c "
n = $steps * $threads * $seeds
print(f'{n / $wall:.0f} {n * $dt / $wall:.2f} {100 * $not_converged / n:.1f}% {$depth:.3g}')"
}

echo "== throughput at the model's time step ($base_dt s) =="
read -r mj_sps mj_rtf <<<"$(mj_rate "$model")"
read -r ax_sps ax_rtf ax_nc _ <<<"$(axion_rate "$base_dt")"
printf "%-8s %14s %18s\n" engine "steps/s" "sim s per wall s"
printf "%-8s %14s %18s\n" mujoco "$mj_sps" "$mj_rtf"
printf "%-8s %14s %18s   (seeds 1-%s together; %s of steps not converged)\n" axion \
  "${ax_sps:-failed}" "${ax_rtf:-failed}" "$seeds" "${ax_nc:-?}"
if [ -n "$ax_sps" ] && [ -n "$mj_sps" ]; then
  echo "axion / mujoco steps per second: $(python3 -c "print(f'{$ax_sps / $mj_sps:.3f}')")"
fi
echo

# Accuracy beside speed: Axion solves each step to its Newton tolerance (1e-6 m/s by default, a
# position error of tolerance x dt), MuJoCo's soft constraints let contacts sink by design. The
# deepest contact penetration of each engine over the same runs, and Axion's speed at looser
# tolerances, show how much of the gap is accuracy that MuJoCo does not deliver.
echo "== accuracy beside speed at the model's time step ($steps steps, seeds 1-$seeds) =="
mj_depth=0
seconds="$(python3 -c "print($steps * $base_dt)")"
for seed in $(seq 1 "$seeds"); do
  read -r _ _ depth <<<"$("$work/mj_probe" "$model" "$base_dt" "$seconds" "$noise" "$seed")"
  mj_depth="$(python3 -c "print(max($mj_depth, ${depth:-0}))")"
done
printf "%-28s %10s %16s %16s\n" engine "steps/s" "axion / mujoco" "deepest contact"
printf "%-28s %10s %16s %14.3g m\n" mujoco "$mj_sps" 1 "$mj_depth"
for tol in 1e-6 1e-5 1e-4 1e-3; do
  read -r sps _ nc depth <<<"$(axion_rate "$base_dt" --newton_tolerance="$tol")"
  printf "%-28s %10s %16s %14s m   (%s not converged)\n" "axion, tolerance $tol m/s" \
    "${sps:-failed}" "$(python3 -c "print(f'{${sps:-0} / $mj_sps:.3f}')")" "${depth:-?}" "${nc:-?}"
done
echo

echo "== largest stable time step (sweep of ${sweep_seconds} s runs, speeds < $max_speed, $seeds seeds) =="
multipliers="1 2 3 4 6 8 12 16 24 32"
mj_best=""
ax_best=""
mj_done=0
ax_done=0
printf "%-12s %-28s %-40s\n" "dt (s)" "mujoco (stable seeds, vmax)" \
  "axion (stable seeds, vmax, not converged)"
for k in $multipliers; do
  dt="$(python3 -c "print(f'{$base_dt * $k:.6g}')")"
  mj_cell="-"
  ax_cell="-"
  if [ "$mj_done" = 0 ]; then
    stable=0; worst=0
    for seed in $(seq 1 "$seeds"); do
      read -r ok vmax _ <<<"$("$work/mj_probe" "$model" "$dt" "$sweep_seconds" "$noise" "$seed")"
      worst="$(python3 -c "print(max(float('$worst'), float('$vmax')))")"
      if [ "$ok" = 1 ] && python3 -c "import sys; sys.exit(0 if float('$vmax') < $max_speed else 1)"; then
        stable=$((stable + 1))
      fi
    done
    mj_cell="$stable/$seeds, $worst"
    if [ "$stable" = "$seeds" ]; then mj_best="$dt"; else mj_done=1; fi
  fi
  if [ "$ax_done" = 0 ]; then
    ax_steps="$(python3 -c "print(round($sweep_seconds / $dt))")"
    stable=0; worst=0; unconverged=0
    for seed in $(seq 1 "$seeds"); do
      out="$("$axion_sim" --model="$model" --steps="$ax_steps" --worlds=1 --threads=1 --noise="$noise" \
             --backend=cpu --timestep="$dt" --seed="$seed" --report_speed 2>/dev/null || true)"
      nonfinite="$(echo "$out" | sed -n 's/^non-finite *: *\([0-9]*\).*/\1/p')"
      vmax="$(echo "$out" | sed -n 's/^max body speed *: *\([0-9.eE+a-z-]*\).*/\1/p')"
      notconv="$(echo "$out" | sed -n 's/^not converged *: *\([0-9]*\).*/\1/p')"
      unconverged=$((unconverged + ${notconv:-0}))
      worst="$(python3 -c "print(max(float('$worst'), float('${vmax:-inf}')))")"
      if [ "${nonfinite:-1}" = 0 ] && [ -n "$vmax" ] && python3 -c "import sys; sys.exit(0 if float('$vmax') < $max_speed else 1)"; then
        stable=$((stable + 1))
      fi
    done
    ax_cell="$stable/$seeds, $worst, $(python3 -c "print(f'{100 * $unconverged / ($seeds * $ax_steps):.1f}%')")"
    if [ "$stable" = "$seeds" ]; then ax_best="$dt"; else ax_done=1; fi
  fi
  printf "%-12s %-28s %-40s\n" "$dt" "$mj_cell" "$ax_cell"
  [ "$mj_done" = 1 ] && [ "$ax_done" = 1 ] && break
done
echo

echo "== simulated seconds per wall second at each engine's largest stable time step =="
if [ -n "$mj_best" ]; then
  read -r sps rtf <<<"$(mj_rate "$(mj_model_at "$mj_best")")"
  echo "mujoco: dt = $mj_best s: $rtf sim s per wall s ($sps steps/s)"
else
  echo "mujoco: no stable time step in the sweep"
fi
if [ -n "$ax_best" ]; then
  read -r sps rtf nc _ <<<"$(axion_rate "$ax_best")"
  echo "axion:  dt = $ax_best s: $rtf sim s per wall s ($sps world-steps/s; seeds 1-$seeds together, $nc of steps not converged)"
else
  echo "axion:  no stable time step in the sweep"
fi
