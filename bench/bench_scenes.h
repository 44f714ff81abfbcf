// Scenes shared by the engine benchmarks.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "axion/model.h"
#include "axion/simulator.h"
#include "axion_scenes.h"
#include "benchmark/benchmark.h"

namespace axion::bench {

using scenes::BoxInertia;

inline std::shared_ptr<const Model> Compile(ModelDesc d) {
  auto m = Model::Compile(std::move(d));
  if (!m.ok()) {
    std::fprintf(stderr, "scene does not compile: %s\n", std::string(m.status().message()).c_str());
    std::abort();
  }
  return *m;
}

using scenes::Chain;
using scenes::FreeBodies;
using scenes::SpheresInBox;
using scenes::Stack;

// Steps `worlds` copies of `model` in a benchmark loop and reports world-steps/s, body-steps/s
// and the mean Newton and CR iterations per world-step.
inline void RunWorlds(benchmark::State& state, std::shared_ptr<const Model> model, int worlds,
                      int threads, int warmup_steps = 10) {
  SimulatorOptions options;
  options.backend = Backend::kCpu;
  options.threads = threads;
  auto sim = std::move(*Simulator::Create(options));
  std::vector<WorldId> ids = *sim->CreateWorlds(model, worlds);
  if (!sim->StepAll(warmup_steps).ok()) state.SkipWithError("step failed");
  int64_t world_steps = 0;
  for (auto _ : state) {
    if (!sim->StepAll(1).ok()) state.SkipWithError("step failed");
    world_steps += worlds;
  }
  // Solver statistics from a few more steps, outside the timed loop.
  double newton = 0, cr = 0, contacts = 0;
  int64_t sampled = 0;
  for (int n = 0; n < 10; ++n) {
    if (!sim->StepAll(1).ok()) state.SkipWithError("step failed");
    for (WorldId id : ids) {
      WorldStats st = *sim->GetStats(id);
      newton += st.newton_iterations;
      cr += st.cr_iterations;
      contacts += st.contact_count;
      ++sampled;
    }
  }
  state.counters["world_steps/s"] =
      benchmark::Counter(static_cast<double>(world_steps), benchmark::Counter::kIsRate);
  state.counters["body_steps/s"] = benchmark::Counter(
      static_cast<double>(world_steps) * model->body_count(), benchmark::Counter::kIsRate);
  state.counters["newton"] = newton / static_cast<double>(sampled);
  state.counters["cr"] = cr / static_cast<double>(sampled);
  state.counters["contacts"] = contacts / static_cast<double>(sampled);
}

}  // namespace axion::bench
