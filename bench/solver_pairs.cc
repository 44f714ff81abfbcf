// solver_pairs: two solver settings on the same problems. World A follows its own trajectory of
// a model under random control noise; before every step world B is restored to A's exact state
// (Snapshot / Restore), so both solve the same step, and the figures compare solver work without
// the chaos of diverging trajectories (a humanoid under noise reaches different states from a
// change in the last bit, and per-trajectory iteration counts then differ by 10% between seeds
// for any setting).
//
//   solver_pairs --model=humanoid.xml --timestep=0.005 --seeds=1-16
//                --b=line_search_growth=1,newton_stall_iterations=15
//
// Prints per side the Newton and CR iterations per step, the steps not converged and the time
// per step (each world stepped alone, the two sides alternating first), and how far B's
// velocities end from A's after a step.
//
//   solver_pairs --model=humanoid.xml --seeds=2 --steps=2000 --trace_step=1490
//                --b=newton_iterations=30
//
// instead traces one step: side B solves that step's state again and again, with a Newton limit
// of 1, 2, ... iterations, and prints the residual each ends at (its best iterate's), to see
// whether a slow step converges linearly, stalls or cycles.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "axion/mjcf.h"
#include "axion/model.h"
#include "axion/simulator.h"
#include "axion/urdf.h"

ABSL_FLAG(std::string, model, "", "MJCF (.xml, .mjcf) or URDF (.urdf) model file");
ABSL_FLAG(double, timestep, 0.0, "time step override in seconds (0: the model's)");
ABSL_FLAG(int, steps, 1000, "steps per seed");
ABSL_FLAG(double, noise, 0.01,
          "control noise: each step every control is drawn uniformly from the middle `noise` "
          "fraction of its ctrlrange (of [-1, 1] when unlimited)");
ABSL_FLAG(std::string, seeds, "1", "noise seeds: one number or a range FIRST-LAST");
ABSL_FLAG(std::string, a, "", "solver options of side A over the model's: key=value,...");
ABSL_FLAG(std::string, b, "", "solver options of side B over the model's: key=value,...");
ABSL_FLAG(int, trace_step, 0,
          "> 0: at this step of the first seed, print side B's residual after each number of "
          "Newton iterations from 1 to its newton_iterations (each from the step's start, tail "
          "and halvings off), then stop");

namespace axion {
namespace {

absl::Status ParseBool(absl::string_view key, absl::string_view text, bool* out) {
  if (text == "true" || text == "1") {
    *out = true;
  } else if (text == "false" || text == "0") {
    *out = false;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(key, "='", text, "': expected true or false"));
  }
  return absl::OkStatus();
}

template <class T>
absl::Status ParseNumber(absl::string_view key, absl::string_view text, T* out) {
  double value = 0;
  if (!absl::SimpleAtod(text, &value) || !std::isfinite(value))
    return absl::InvalidArgumentError(absl::StrCat(key, "='", text, "': expected a number"));
  *out = static_cast<T>(value);
  return absl::OkStatus();
}

// Applies "key=value,..." to `options`; the keys are SolverOptions' field names.
absl::Status ApplyOverrides(absl::string_view text, SolverOptions* options) {
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2)
      return absl::InvalidArgumentError(absl::StrCat("'", item, "': expected key=value"));
    absl::string_view key = kv[0], value = kv[1];
    absl::Status status;
    if (key == "line_search") {
      status = ParseBool(key, value, &options->line_search);
    } else if (key == "strict_after_cycle") {
      status = ParseBool(key, value, &options->strict_after_cycle);
    } else if (key == "friction_newton") {
      status = ParseBool(key, value, &options->friction_newton);
    } else if (key == "islands") {
      status = ParseBool(key, value, &options->islands);
    } else if (key == "speculative_contacts") {
      status = ParseBool(key, value, &options->speculative_contacts);
    } else if (key == "line_search_growth") {
      status = ParseNumber(key, value, &options->line_search_growth);
    } else if (key == "line_search_steps") {
      status = ParseNumber(key, value, &options->line_search_steps);
    } else if (key == "newton_iterations") {
      status = ParseNumber(key, value, &options->newton_iterations);
    } else if (key == "step_halvings") {
      status = ParseNumber(key, value, &options->step_halvings);
    } else if (key == "halving_iterations") {
      status = ParseNumber(key, value, &options->halving_iterations);
    } else if (key == "halving_residual") {
      status = ParseNumber(key, value, &options->halving_residual);
    } else if (key == "newton_stall_iterations") {
      status = ParseNumber(key, value, &options->newton_stall_iterations);
    } else if (key == "newton_tail_iterations") {
      status = ParseNumber(key, value, &options->newton_tail_iterations);
    } else if (key == "newton_tail_residual") {
      status = ParseNumber(key, value, &options->newton_tail_residual);
    } else if (key == "newton_tolerance") {
      status = ParseNumber(key, value, &options->newton_tolerance);
    } else if (key == "loop_rows") {
      status = ParseNumber(key, value, &options->loop_rows);
    } else if (key == "cr_iterations") {
      status = ParseNumber(key, value, &options->cr_iterations);
    } else if (key == "cr_tolerance") {
      status = ParseNumber(key, value, &options->cr_tolerance);
    } else if (key == "fb_epsilon") {
      status = ParseNumber(key, value, &options->fb_epsilon);
    } else if (key == "contact_compliance") {
      status = ParseNumber(key, value, &options->contact_compliance);
    } else if (key == "preconditioner") {
      if (value == "tree") {
        options->preconditioner = Preconditioner::kTree;
      } else if (value == "jacobi") {
        options->preconditioner = Preconditioner::kJacobi;
      } else {
        status = absl::InvalidArgumentError(
            absl::StrCat("preconditioner='", value, "': expected tree or jacobi"));
      }
    } else {
      status = absl::InvalidArgumentError(absl::StrCat("unknown solver option '", key, "'"));
    }
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status ParseSeeds(absl::string_view text, uint32_t* first, uint32_t* last) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, absl::MaxSplits('-', 1));
  if (!absl::SimpleAtoi(parts[0], first) ||
      !absl::SimpleAtoi(parts.size() == 2 ? parts[1] : parts[0], last) || *last < *first)
    return absl::InvalidArgumentError(
        absl::StrCat("--seeds='", text, "': expected a number or a range FIRST-LAST"));
  return absl::OkStatus();
}

// One side's totals over every step of every seed.
struct SideTotals {
  int64_t newton = 0, cr = 0, not_converged = 0, non_finite = 0;
  double seconds = 0;
};

absl::Status StepTimed(Simulator& sim, WorldId world, SideTotals* totals) {
  auto start = std::chrono::steady_clock::now();
  absl::Status status = sim.Step({world});
  totals->seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) return status;
  absl::StatusOr<WorldStats> stats = sim.GetStats(world);
  if (!stats.ok()) return stats.status();
  totals->newton += stats->newton_iterations;
  totals->cr += stats->cr_iterations;
  totals->not_converged += (stats->flags & kWorldNotConverged) != 0;
  totals->non_finite += (stats->flags & kWorldNonFinite) != 0;
  return absl::OkStatus();
}

// Side B's residual after 1, 2, ... Newton iterations of one step, each from the same state
// (the best iterate's, which a solve stopped at its limit keeps).
absl::Status TraceStep(Simulator& sim, WorldId world, const std::string& snapshot,
                       SolverOptions options) {
  const int iterations = options.newton_iterations;
  options.newton_tail_iterations = 0;
  options.step_halvings = 0;
  options.contact_redos = 0;
  std::printf("iterations  residual (m/s)  CR  trials  contacts\n");
  for (int k = 1; k <= iterations; ++k) {
    options.newton_iterations = k;
    WorldModelUpdate update;
    update.world = world;
    update.options = options;
    absl::Status status = sim.SetWorldModels({update});
    if (!status.ok()) return status;
    status = sim.Restore(world, snapshot);
    if (!status.ok()) return status;
    status = sim.Step({world});
    if (!status.ok()) return status;
    absl::StatusOr<WorldStats> stats = sim.GetStats(world);
    if (!stats.ok()) return stats.status();
    std::printf("%10d  %14.3g  %2d  %6d  %8d\n", stats->newton_iterations, double(stats->residual),
                stats->cr_iterations, stats->line_search_trials, stats->contact_count);
    if (!(stats->flags & kWorldNotConverged)) break;
  }
  return absl::OkStatus();
}

absl::Status Run() {
  std::string path = absl::GetFlag(FLAGS_model);
  if (path.empty()) return absl::InvalidArgumentError("--model is required");
  const int steps = absl::GetFlag(FLAGS_steps);
  const double noise = absl::GetFlag(FLAGS_noise);
  if (steps < 1) return absl::InvalidArgumentError("--steps must be >= 1");
  if (!(noise >= 0)) return absl::InvalidArgumentError("--noise must be >= 0");
  uint32_t first_seed = 0, last_seed = 0;
  absl::Status status = ParseSeeds(absl::GetFlag(FLAGS_seeds), &first_seed, &last_seed);
  if (!status.ok()) return status;

  absl::StatusOr<ImportResult> imported =
      absl::EndsWith(path, ".urdf") ? LoadUrdfFile(path) : LoadMjcfFile(path);
  if (!imported.ok()) return imported.status();
  for (const std::string& w : imported->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  ModelDesc desc = std::move(imported->model);
  const double timestep = absl::GetFlag(FLAGS_timestep);
  if (timestep < 0) return absl::InvalidArgumentError("--timestep must be positive");
  if (timestep > 0) desc.options.timestep = timestep;
  SolverOptions options_a = desc.options, options_b = desc.options;
  status = ApplyOverrides(absl::GetFlag(FLAGS_a), &options_a);
  if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat("--a: ", status.message()));
  status = ApplyOverrides(absl::GetFlag(FLAGS_b), &options_b);
  if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat("--b: ", status.message()));
  if (options_a.timestep != options_b.timestep)
    return absl::InvalidArgumentError("the two sides must share the time step");
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(std::move(desc));
  if (!model.ok()) return model.status();

  SimulatorOptions sim_options;
  sim_options.backend = Backend::kCpu;
  sim_options.threads = 1;
  const std::vector<ActuatorDesc>& actuators = (*model)->desc().actuators;
  std::vector<Real> ctrl(actuators.size());
  SideTotals side[2];
  double max_difference = 0, sum_difference = 0;
  int64_t pairs = 0, identical = 0;
  for (uint32_t seed = first_seed; seed <= last_seed; ++seed) {
    absl::StatusOr<std::unique_ptr<Simulator>> sim = Simulator::Create(sim_options);
    if (!sim.ok()) return sim.status();
    WorldId world[2];
    for (int s = 0; s < 2; ++s) {
      WorldOptions world_options;
      world_options.options = s == 0 ? &options_a : &options_b;
      absl::StatusOr<std::vector<WorldId>> created = (*sim)->CreateWorlds(*model, 1, world_options);
      if (!created.ok()) return created.status();
      world[s] = created->front();
    }
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    for (int step = 0; step < steps; ++step) {
      for (size_t k = 0; k < actuators.size(); ++k) {
        const ActuatorDesc& act = actuators[k];
        double center = act.ctrl_limited ? 0.5 * (act.ctrl_min + act.ctrl_max) : 0.0;
        double radius = act.ctrl_limited ? 0.5 * (act.ctrl_max - act.ctrl_min) : 1.0;
        ctrl[k] = static_cast<Real>(center + noise * radius * uniform(rng));
        if (act.ctrl_limited) ctrl[k] = std::min(std::max(ctrl[k], act.ctrl_min), act.ctrl_max);
      }
      if (!actuators.empty()) {
        status = (*sim)->SetControls(world[0], ctrl);
        if (!status.ok()) return status;
      }
      // B starts this step from A's state, controls and warm start included.
      absl::StatusOr<std::string> snapshot = (*sim)->Snapshot(world[0]);
      if (!snapshot.ok()) return snapshot.status();
      status = (*sim)->Restore(world[1], *snapshot);
      if (!status.ok()) return status;
      if (step + 1 == absl::GetFlag(FLAGS_trace_step))
        return TraceStep(**sim, world[1], *snapshot, options_b);
      for (int k = 0; k < 2; ++k) {
        const int s = (step + k) % 2;  // alternate which side runs first
        status = StepTimed(**sim, world[s], &side[s]);
        if (!status.ok()) return status;
      }
      absl::StatusOr<BodyState> state_a = (*sim)->GetBodyState(world[0]);
      if (!state_a.ok()) return state_a.status();
      absl::StatusOr<BodyState> state_b = (*sim)->GetBodyState(world[1]);
      if (!state_b.ok()) return state_b.status();
      double difference = 0;
      for (size_t i = 0; i < state_a->velocity.size(); ++i)
        difference =
            std::max(difference, std::fabs(double(state_a->velocity[i] - state_b->velocity[i])));
      max_difference = std::max(max_difference, difference);
      sum_difference += difference;
      identical += difference == 0 && state_a->pose == state_b->pose;
      ++pairs;
    }
  }

  std::printf("model %s, dt = %g s, noise %g, seeds %u-%u x %d steps: %lld step pairs\n",
              path.c_str(), double(options_a.timestep), noise, first_seed, last_seed, steps,
              static_cast<long long>(pairs));
  std::printf("%-2s %-36s %9s %9s %14s %11s %10s\n", "", "solver options over the model's",
              "Newton", "CR", "not converged", "non-finite", "us/step");
  for (int s = 0; s < 2; ++s) {
    std::string overrides = absl::GetFlag(s == 0 ? FLAGS_a : FLAGS_b);
    std::printf("%-2s %-36s %9.3f %9.2f %14lld %11lld %10.1f\n", s == 0 ? "A" : "B",
                overrides.empty() ? "(the model's)" : overrides.c_str(),
                double(side[s].newton) / pairs, double(side[s].cr) / pairs,
                static_cast<long long>(side[s].not_converged),
                static_cast<long long>(side[s].non_finite), 1e6 * side[s].seconds / pairs);
  }
  std::printf("B / A: Newton %.3f, CR %.3f, time %.3f\n",
              double(side[1].newton) / std::max<int64_t>(side[0].newton, 1),
              double(side[1].cr) / std::max<int64_t>(side[0].cr, 1),
              side[1].seconds / std::max(side[0].seconds, 1e-30));
  std::printf(
      "B's velocities after a step against A's: max %.3g m/s, mean %.3g m/s; %lld of "
      "%lld steps bit-identical\n",
      max_difference, sum_difference / pairs, static_cast<long long>(identical),
      static_cast<long long>(pairs));
  return absl::OkStatus();
}

}  // namespace
}  // namespace axion

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "solver_pairs --model=FILE [--timestep=S] [--steps=N] [--seeds=A-B] [--a=k=v,...] "
      "[--b=k=v,...]: two solver settings stepping the same states");
  absl::ParseCommandLine(argc, argv);
  absl::Status status = axion::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "solver_pairs: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
