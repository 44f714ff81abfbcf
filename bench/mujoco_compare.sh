#!/usr/bin/env bash
# Axion vs MuJoCo on the same model, the same machine, the same step count, time step and
# control noise:
#   1. throughput: `mujoco-testspeed MODEL N THREADS NOISE` (the fastest of 5 runs) against
#      `axion-sim --model=MODEL --steps=N --worlds=THREADS --threads=THREADS --noise=NOISE`
#      (testspeed runs one simulation per thread; axion-sim steps one world per thread);
#   2. stability: each engine's largest stable time step from a sweep (base time step x 1, 2, 3,
#      4, 6, 8, ..., 96, 128; runs of 5 simulated seconds or 40 steps, the longer, so that a step
#      that covers 5 s in a handful of steps is not called stable; stable = no NaN/Inf, no bad-QACC
#      warning for MuJoCo, and speeds below MAX_SPEED: every |qvel| entry for MuJoCo, every
#      body's linear speed for Axion), a step counting as stable only when it is for every one of
#      SEEDS control-noise seeds (large steps fail on some noise sequences and not on others), then
#      simulated seconds per wall second of each engine at its own largest stable step.
#      Axion's cells also give the share of its steps whose Newton solve ended at its iteration
#      limit (summed over the seeds): such a step keeps its best iterate, so a step that stays
#      bounded is not always a step that was solved. Axion's throughput figures (1. and 2.) are
#      the SEEDS seeds' runs taken together (total steps over total wall time), since one
#      trajectory under noise is chaotic; mujoco-testspeed takes no seed and runs its own.
#   Accuracy stands beside each speed: the deepest contact penetration and the largest joint-limit
#   violation of each engine over the same runs (at the model's step, with Axion at Newton
#   tolerances 1e-6 to 1e-3 m/s, and in every cell of the sweep). A step bounded in speed can
#   still be far from physical (a figure sunk into its floor), so the sweep gives each engine a
#   second largest step: bounded, and with no contact deeper than MAX_DEPTH on any seed (default:
#   the half-thickness of the model's thinnest colliding geom, past which that geom lies wholly
#   inside what it touches), and both engines' speeds at both steps.
#
# usage: bench/mujoco_compare.sh [--model=FILE] [--steps=N] [--threads=T] [--noise=X]
#                                [--axion-sim=PATH] [--max-speed=V] [--sweep-seconds=S]
#                                [--sweep-min-steps=N] [--max-depth=M] [--seeds=K]
#                                [--axion-args="FLAGS"]
# defaults: MuJoCo's humanoid, 2000 steps, 1 thread, noise 0.01, 4 seeds, axion-sim from build/.
# --axion-args: flags added to every axion-sim run (solver options, for example
# --axion-args="--newton_tail_iterations=0" to compare against a setting off).
# MuJoCo's side of the sweep uses a small helper compiled here against libmujoco (g++ needed).
set -euo pipefail

model=/usr/share/mujoco/model/humanoid/humanoid.xml
steps=2000
threads=1
noise=0.01
max_speed=50
sweep_seconds=5
sweep_min_steps=40
max_depth=""
seeds=4
repo="$(cd "$(dirname "$0")/.." && pwd)"
axion_sim=""
axion_args=()
for arg in "$@"; do
  case "$arg" in
    --model=*) model="${arg#*=}" ;;
    --steps=*) steps="${arg#*=}" ;;
    --threads=*) threads="${arg#*=}" ;;
    --noise=*) noise="${arg#*=}" ;;
    --axion-sim=*) axion_sim="${arg#*=}" ;;
    --max-speed=*) max_speed="${arg#*=}" ;;
    --sweep-seconds=*) sweep_seconds="${arg#*=}" ;;
    --sweep-min-steps=*) sweep_min_steps="${arg#*=}" ;;
    --max-depth=*) max_depth="${arg#*=}" ;;
    --seeds=*) seeds="${arg#*=}" ;;
    --axion-args=*) read -r -a axion_args <<<"${arg#*=}" ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done
# The release build's axion-sim (what `make build` makes); a sanitizer or debug build elsewhere
# under build/ would time its instrumentation, not the engine.
if [ -z "$axion_sim" ]; then
  axion_sim="$repo/build/release/engine/src/io/axion-sim"
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
# finite without warnings, its max speed, its deepest contact penetration (m; each step's
# contacts, found at its start, as axion-sim --report_depth reads them), and its largest
# joint-limit violation after a step, angular (rad: hinges, balls' turn) and linear (m: slides),
# as axion-sim --report_limits reads it.
cat > "$work/mj_probe.cc" <<'EOF'
#include <mujoco/mujoco.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
static void Quiet(const char*) {}  // instability is reported through d->warning instead
int main(int argc, char** argv) {
  mju_user_warning = Quiet;
  char error[1000] = "";
  mjModel* m = mj_loadXML(argv[1], nullptr, error, sizeof(error));
  if (!m) { std::fprintf(stderr, "%s\n", error); return 1; }
  if (std::string(argv[2]) == "thinnest") {
    // the half-thickness of the model's thinnest colliding geom (m): a contact deeper than this
    // has sunk that geom through the surface it rests on
    double thinnest = HUGE_VAL;
    for (int g = 0; g < m->ngeom; ++g) {
      if (!m->geom_contype[g] && !m->geom_conaffinity[g]) continue;
      const double* size = m->geom_size + 3 * g;
      switch (m->geom_type[g]) {
        case mjGEOM_SPHERE: case mjGEOM_CAPSULE: case mjGEOM_CYLINDER:
          thinnest = std::fmin(thinnest, size[0]); break;
        case mjGEOM_BOX: case mjGEOM_ELLIPSOID:
          thinnest = std::fmin(thinnest, std::fmin(size[0], std::fmin(size[1], size[2]))); break;
        default: break;  // planes, height fields and meshes: no single thickness
      }
    }
    std::printf("%g\n", thinnest);
    return 0;
  }
  m->opt.timestep = std::atof(argv[2]);
  double seconds = std::atof(argv[3]), noise = std::atof(argv[4]);
  mjData* d = mj_makeData(m);
  std::mt19937_64 rng(argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 1);
  std::uniform_real_distribution<double> u(-1, 1);
  long steps = std::lround(seconds / m->opt.timestep);
  double max_speed = 0, max_depth = 0, max_angular = 0, max_linear = 0;
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
    for (int j = 0; j < m->njnt; ++j) {
      if (!m->jnt_limited[j]) continue;
      const double* q = d->qpos + m->jnt_qposadr[j];
      const double* range = m->jnt_range + 2 * j;
      if (m->jnt_type[j] == mjJNT_HINGE || m->jnt_type[j] == mjJNT_SLIDE) {
        double excess = std::fmax(range[0] - q[0], q[0] - range[1]);
        double& into = m->jnt_type[j] == mjJNT_HINGE ? max_angular : max_linear;
        into = std::fmax(into, excess);
      } else if (m->jnt_type[j] == mjJNT_BALL) {
        double turn = 2 * std::atan2(std::sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3]),
                                     std::fabs(q[0]));
        max_angular = std::fmax(max_angular, turn - range[1]);
      }
    }
    for (int i = 0; i < m->nv; ++i) {
      if (!std::isfinite(d->qvel[i])) finite = false;
      else max_speed = std::fmax(max_speed, std::fabs(d->qvel[i]));
    }
  }
  int bad = d->warning[mjWARN_BADQACC].number;
  std::printf("%d %g %g %g %g\n", finite && bad == 0 ? 1 : 0, max_speed, max_depth, max_angular,
              max_linear);
  mj_deleteData(d);
  mj_deleteModel(m);
  return 0;
}
EOF
mj_lib="$(ls /usr/lib/*/libmujoco.so 2>/dev/null | head -n 1)"
g++ -O2 -std=c++17 "$work/mj_probe.cc" -o "$work/mj_probe" "$mj_lib"

base_dt="$(mujoco-testspeed "$model" 1 1 0 | sed -n 's/.*at dt = \([0-9.eE+-]*\).*/\1/p')"
[ -n "$max_depth" ] || max_depth="$("$work/mj_probe" "$model" thinnest)"
echo "model: $model"
echo "steps: $steps, threads: $threads, noise: $noise, base time step: $base_dt s"
echo "contact depth bound of the sweep's second verdict: $max_depth m"
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

# steps/s and realtime factor from mujoco-testspeed: the fastest of MJ_RUNS runs. One run of the
# humanoid's 2000 steps lasts under 0.1 s, and on a busy machine a single run came out 1.35x
# slower than the next (21,408 against 28,895 steps/s), which flattered Axion's ratio; the
# fastest run is MuJoCo's figure, as a reference is given its best case.
mj_runs=5
mj_rate() {
  local out sps rtf best_sps=0 best_rtf="" run
  for run in $(seq 1 "$mj_runs"); do
    out="$(mujoco-testspeed "$1" "$steps" "$threads" "$noise")"
    sps="$(echo "$out" | sed -n 's/.*Steps per second *: *\([0-9.]*\).*/\1/p')"
    rtf="$(echo "$out" | sed -n 's/.*Realtime factor *: *\([0-9.]*\).*/\1/p')"
    [ -n "$sps" ] || continue
    if python3 -c "import sys; sys.exit(0 if $sps > $best_sps else 1)"; then
      best_sps="$sps"
      best_rtf="$rtf"
    fi
  done
  if [ -n "$best_rtf" ]; then echo "$best_sps $best_rtf"; fi
}
# world-steps/s, realtime factor, the share of steps not converged, the deepest contact
# penetration (m) and the largest joint-limit violation (rad) from axion-sim at time step $1
# (further arguments go to axion-sim), over the SEEDS noise seeds together (total steps over total
# wall time): one trajectory under noise is chaotic, and at large steps where it ends up lying
# decides its speed by 3x either way.
axion_rate() {
  local dt="$1" out wall=0 not_converged=0 depth=0 limit=0 seed
  shift
  for seed in $(seq 1 "$seeds"); do
    out="$("$axion_sim" --model="$model" --steps="$steps" --worlds="$threads" \
           --threads="$threads" --noise="$noise" --backend=cpu --timestep="$dt" --seed="$seed" \
           --report_depth --report_limits "${axion_args[@]}" "$@" 2>/dev/null)" || return 0
    wall="$(python3 -c "print($wall + $(echo "$out" | sed -n 's/^wall time *: *\([0-9.]*\).*/\1/p'))")"
    not_converged=$((not_converged + $(echo "$out" | sed -n 's/^not converged *: *\([0-9]*\).*/\1/p')))
    depth="$(python3 -c "print(max($depth, $(echo "$out" | sed -n 's/^deepest contact *: *\([0-9.eE+-]*\).*/\1/p')))")"
    limit="$(python3 -c "print(max($limit, $(echo "$out" | sed -n 's/^limit violation *: *\([0-9.eE+-]*\) rad.*/\1/p')))")"
  done
  python3 -c "
n = $steps * $threads * $seeds
print(f'{n / $wall:.0f} {n * $dt / $wall:.2f} {100 * $not_converged / n:.1f}% {$depth:.3g} {$limit:.3g}')"
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
# position error of tolerance x dt), MuJoCo's soft constraints let contacts sink and joints pass
# their limits by design. The deepest contact penetration and the largest joint-limit violation
# of each engine over the same runs, and Axion's speed at looser tolerances, show how much of the
# gap is accuracy that MuJoCo does not deliver.
echo "== accuracy beside speed at the model's time step ($steps steps, seeds 1-$seeds) =="
mj_depth=0
mj_limit=0
seconds="$(python3 -c "print($steps * $base_dt)")"
for seed in $(seq 1 "$seeds"); do
  read -r _ _ depth limit _ <<<"$("$work/mj_probe" "$model" "$base_dt" "$seconds" "$noise" "$seed")"
  mj_depth="$(python3 -c "print(max($mj_depth, ${depth:-0}))")"
  mj_limit="$(python3 -c "print(max($mj_limit, ${limit:-0}))")"
done
printf "%-28s %10s %16s %16s %18s\n" engine "steps/s" "axion / mujoco" "deepest contact" \
  "limit violation"
printf "%-28s %10s %16s %14.3g m %14.3g rad\n" mujoco "$mj_sps" 1 "$mj_depth" "$mj_limit"
for tol in 1e-6 1e-5 1e-4 1e-3; do
  read -r sps _ nc depth limit <<<"$(axion_rate "$base_dt" --newton_tolerance="$tol")"
  printf "%-28s %10s %16s %14s m %14s rad   (%s not converged)\n" "axion, tolerance $tol m/s" \
    "${sps:-failed}" "$(python3 -c "print(f'{${sps:-0} / $mj_sps:.3f}')")" "${depth:-?}" \
    "${limit:-?}" "${nc:-?}"
done
echo

echo "== largest stable time step (runs of ${sweep_seconds} s or $sweep_min_steps steps, the longer; speeds < $max_speed; $seeds seeds) =="
# Each cell: stable seeds, then over all seeds the largest speed (m/s), the deepest contact (mm)
# and the largest joint-limit violation (rad); Axion's also the share of steps not converged.
multipliers="1 2 3 4 6 8 12 16 24 32 48 64 96 128"
mj_best=""
ax_best=""
mj_done=0
ax_done=0
mj_phys_best=""  # ... the largest step also within max_depth, before the first that is not
ax_phys_best=""
mj_phys_done=0
ax_phys_done=0
printf "%-9s %-36s %-44s\n" "dt (s)" "mujoco (stable, vmax, depth, limit)" \
  "axion (stable, vmax, depth, limit, not conv.)"
for k in $multipliers; do
  dt="$(python3 -c "print(f'{$base_dt * $k:.6g}')")"
  run_steps="$(python3 -c "print(max(round($sweep_seconds / $dt), $sweep_min_steps))")"
  run_seconds="$(python3 -c "print($run_steps * $dt)")"
  mj_cell="-"
  ax_cell="-"
  if [ "$mj_done" = 0 ]; then
    stable=0; worst=0; deepest=0; limit_worst=0
    for seed in $(seq 1 "$seeds"); do
      read -r ok vmax depth limit _ <<<"$("$work/mj_probe" "$model" "$dt" "$run_seconds" "$noise" "$seed")"
      worst="$(python3 -c "print(max(float('$worst'), float('$vmax')))")"
      deepest="$(python3 -c "print(max(float('$deepest'), float('${depth:-nan}')))")"
      limit_worst="$(python3 -c "print(max(float('$limit_worst'), float('${limit:-nan}')))")"
      if [ "$ok" = 1 ] && python3 -c "import sys; sys.exit(0 if float('$vmax') < $max_speed else 1)"; then
        stable=$((stable + 1))
      fi
    done
    mj_cell="$(python3 -c "print(f'$stable/$seeds, {float(\"$worst\"):.3g}, {1e3 * float(\"$deepest\"):.3g} mm, {float(\"$limit_worst\"):.2g}')")"
    if [ "$stable" = "$seeds" ]; then mj_best="$dt"; else mj_done=1; fi
    if [ "$mj_phys_done" = 0 ] && [ "$stable" = "$seeds" ] &&
       python3 -c "import sys; sys.exit(0 if float('$deepest') < $max_depth else 1)"; then
      mj_phys_best="$dt"
    else
      mj_phys_done=1
    fi
  fi
  if [ "$ax_done" = 0 ]; then
    stable=0; worst=0; deepest=0; limit_worst=0; unconverged=0
    for seed in $(seq 1 "$seeds"); do
      out="$("$axion_sim" --model="$model" --steps="$run_steps" --worlds=1 --threads=1 --noise="$noise" \
             --backend=cpu --timestep="$dt" --seed="$seed" --report_speed --report_depth \
             --report_limits "${axion_args[@]}" 2>/dev/null || true)"
      nonfinite="$(echo "$out" | sed -n 's/^non-finite *: *\([0-9]*\).*/\1/p')"
      vmax="$(echo "$out" | sed -n 's/^max body speed *: *\([0-9.eE+a-z-]*\).*/\1/p')"
      depth="$(echo "$out" | sed -n 's/^deepest contact *: *\([0-9.eE+a-z-]*\).*/\1/p')"
      limit="$(echo "$out" | sed -n 's/^limit violation *: *\([0-9.eE+a-z-]*\) rad.*/\1/p')"
      notconv="$(echo "$out" | sed -n 's/^not converged *: *\([0-9]*\).*/\1/p')"
      unconverged=$((unconverged + ${notconv:-0}))
      worst="$(python3 -c "print(max(float('$worst'), float('${vmax:-inf}')))")"
      deepest="$(python3 -c "print(max(float('$deepest'), float('${depth:-nan}')))")"
      limit_worst="$(python3 -c "print(max(float('$limit_worst'), float('${limit:-nan}')))")"
      if [ "${nonfinite:-1}" = 0 ] && [ -n "$vmax" ] && python3 -c "import sys; sys.exit(0 if float('$vmax') < $max_speed else 1)"; then
        stable=$((stable + 1))
      fi
    done
    ax_cell="$(python3 -c "print(f'$stable/$seeds, {float(\"$worst\"):.3g}, {1e3 * float(\"$deepest\"):.3g} mm, {float(\"$limit_worst\"):.2g}, {100 * $unconverged / ($seeds * $run_steps):.1f}%')")"
    if [ "$stable" = "$seeds" ]; then ax_best="$dt"; else ax_done=1; fi
    if [ "$ax_phys_done" = 0 ] && [ "$stable" = "$seeds" ] &&
       python3 -c "import sys; sys.exit(0 if float('$deepest') < $max_depth else 1)"; then
      ax_phys_best="$dt"
    else
      ax_phys_done=1
    fi
  fi
  printf "%-9s %-36s %-44s\n" "$dt" "$mj_cell" "$ax_cell"
  [ "$mj_done" = 1 ] && [ "$ax_done" = 1 ] && break
done
[ "$mj_done" = 0 ] && echo "mujoco is stable at the top of the sweep: its largest stable step is at least $mj_best s"
[ "$ax_done" = 0 ] && echo "axion is stable at the top of the sweep: its largest stable step is at least $ax_best s"
echo

echo "== simulated seconds per wall second at each engine's largest stable time step =="
# $1: label, $2: MuJoCo's step, $3: Axion's step (empty: none in the sweep)
report_rates() {
  local sps rtf nc
  echo "$1:"
  if [ -n "$2" ]; then
    read -r sps rtf <<<"$(mj_rate "$(mj_model_at "$2")")"
    mj_rtf_at="$rtf"
    echo "  mujoco: dt = $2 s: $rtf sim s per wall s ($sps steps/s)"
  else
    mj_rtf_at=""
    echo "  mujoco: no such step in the sweep"
  fi
  if [ -n "$3" ]; then
    read -r sps rtf nc _ <<<"$(axion_rate "$3")"
    echo "  axion:  dt = $3 s: $rtf sim s per wall s ($sps world-steps/s; seeds 1-$seeds together, $nc of steps not converged)"
    if [ -n "$mj_rtf_at" ] && [ -n "$rtf" ]; then
      echo "  axion / mujoco: $(python3 -c "print(f'{$rtf / $mj_rtf_at:.3f}')")"
    fi
  else
    echo "  axion:  no such step in the sweep"
  fi
}
report_rates "bounded (finite, speeds < $max_speed)" "$mj_best" "$ax_best"
report_rates "bounded, and no contact deeper than $max_depth m" "$mj_phys_best" "$ax_phys_best"
