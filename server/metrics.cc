#include "server/metrics.h"

#include <algorithm>

#include "server/status.h"

namespace axion::server {
namespace {

std::vector<double> Exponential(double start, double factor, int count) {
  std::vector<double> bounds;
  double value = start;
  for (int i = 0; i < count; ++i, value *= factor) bounds.push_back(value);
  return bounds;
}

prometheus::Histogram* AddHistogram(prometheus::Registry* registry, const std::string& name,
                                    const std::string& help, const std::vector<double>& bounds) {
  return &prometheus::BuildHistogram().Name(name).Help(help).Register(*registry).Add({}, bounds);
}

}  // namespace

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  prometheus::Registry& r = *registry_;
  requests_total_ = &prometheus::BuildCounter()
                         .Name("axion_requests_total")
                         .Help("RPCs and stream messages handled, by method and status code")
                         .Register(r);
  worlds_alive_ =
      &prometheus::BuildGauge().Name("axion_worlds_alive").Help("Worlds alive").Register(r).Add({});
  batch_worlds_ = AddHistogram(&r, "axion_batch_worlds", "Worlds per batched engine step call",
                               Exponential(1, 2, 17));
  queue_wait_seconds_ =
      AddHistogram(&r, "axion_queue_wait_seconds",
                   "Time a request waits in the scheduler queue before its batch starts",
                   Exponential(1e-6, 2.5, 20));
  engine_step_seconds_ =
      AddHistogram(&r, "axion_engine_step_seconds", "Wall time of one batched engine step call",
                   Exponential(1e-5, 2.5, 20));
  newton_bounds_ = {0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 50, 100};
  cr_bounds_ = {0, 5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560};
  residual_bounds_ = Exponential(1e-12, 10, 13);
  contacts_bounds_ = {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  newton_iterations_ = AddHistogram(&r, "axion_newton_iterations",
                                    "Newton iterations per world-step", newton_bounds_);
  cr_iterations_ = AddHistogram(&r, "axion_cr_iterations",
                                "Conjugate Residual iterations per world-step", cr_bounds_);
  solver_residual_ =
      AddHistogram(&r, "axion_solver_residual",
                   "Final solver residual max-norm per world-step (m/s)", residual_bounds_);
  nonconverged_world_steps_ = &prometheus::BuildCounter()
                                   .Name("axion_nonconverged_world_steps_total")
                                   .Help("World step calls whose Newton solve hit its limit")
                                   .Register(r)
                                   .Add({});
  halved_world_steps_ =
      &prometheus::BuildCounter()
           .Name("axion_halved_world_steps_total")
           .Help(
               "World step calls whose last step was taken in steps shorter than the time "
               "step: a failed Newton solve halved it, or it started at the level the step "
               "before ended at (SolverOptions.step_halvings, halving_carryover)")
           .Register(r)
           .Add({});
  redone_world_steps_ =
      &prometheus::BuildCounter()
           .Name("axion_redone_world_steps_total")
           .Help(
               "World step calls whose last step went back to its start for a contact its set "
               "missed or its rows misjudged (SolverOptions.contact_redos)")
           .Register(r)
           .Add({});
  contacts_per_world_ = AddHistogram(&r, "axion_contacts_per_world",
                                     "Active contacts per world after a step", contacts_bounds_);
  device_memory_bytes_ = &prometheus::BuildGauge()
                              .Name("axion_device_memory_bytes")
                              .Help("Bytes the engine backend holds for all worlds")
                              .Register(r)
                              .Add({});
  device_memory_capacity_bytes_ =
      &prometheus::BuildGauge()
           .Name("axion_device_memory_capacity_bytes")
           .Help("Total memory of the device holding the worlds (0 on the CPU)")
           .Register(r)
           .Add({});
  world_steps_ = &prometheus::BuildCounter()
                      .Name("axion_world_steps_total")
                      .Help("World steps taken (a world advanced n steps counts n)")
                      .Register(r)
                      .Add({});
  queue_depth_ = &prometheus::BuildGauge()
                      .Name("axion_queue_depth")
                      .Help("Requests waiting in the scheduler queue")
                      .Register(r)
                      .Add({});
  engine_step_calls_ = &prometheus::BuildCounter()
                            .Name("axion_engine_step_calls_total")
                            .Help("Batched engine step calls")
                            .Register(r)
                            .Add({});
  auto& scene_lookups = prometheus::BuildCounter()
                            .Name("axion_scene_cache_lookups_total")
                            .Help(
                                "CreateWorlds scenes found compiled (hit) or read and compiled "
                                "(miss)")
                            .Register(r);
  scene_cache_hits_ = &scene_lookups.Add({{"result", "hit"}});
  scene_cache_misses_ = &scene_lookups.Add({{"result", "miss"}});
  scene_prepare_seconds_ =
      AddHistogram(&r, "axion_scene_prepare_seconds",
                   "Time to read and compile a CreateWorlds scene the cache did not hold (s)",
                   {0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1, 3, 10});
}

void Metrics::CountRequest(const std::string& method, absl::StatusCode code) {
  requests_total_->Add({{"method", method}, {"code", StatusCodeName(code)}}).Increment();
}

Metrics::WorldStepAccumulator::WorldStepAccumulator(const Metrics& metrics) : metrics_(metrics) {
  newton_.buckets.assign(metrics.newton_bounds_.size() + 1, 0);
  cr_.buckets.assign(metrics.cr_bounds_.size() + 1, 0);
  residual_.buckets.assign(metrics.residual_bounds_.size() + 1, 0);
  contacts_.buckets.assign(metrics.contacts_bounds_.size() + 1, 0);
}

void Metrics::WorldStepAccumulator::Observe(const std::vector<double>& bounds, double value,
                                            Accumulated* acc) {
  // Same bucket rule as prometheus::Histogram::Observe: first bound >= value, else +Inf.
  const size_t bucket =
      static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin());
  acc->buckets[bucket] += 1;
  acc->sum += value;
}

void Metrics::WorldStepAccumulator::Add(int steps, int newton_iterations, int cr_iterations,
                                        double residual, int contact_count, bool converged,
                                        bool halved, bool redone) {
  if (steps <= 0) return;
  // Engine statistics are sums over the steps of one call; the histograms are per world-step.
  const double per_step = 1.0 / steps;
  Observe(metrics_.newton_bounds_, newton_iterations * per_step, &newton_);
  Observe(metrics_.cr_bounds_, cr_iterations * per_step, &cr_);
  Observe(metrics_.residual_bounds_, residual, &residual_);
  Observe(metrics_.contacts_bounds_, contact_count, &contacts_);
  if (!converged) nonconverged_ += 1;
  if (halved) halved_ += 1;
  if (redone) redone_ += 1;
  world_steps_ += steps;
}

void Metrics::WorldStepAccumulator::Commit(Metrics* metrics) {
  metrics->newton_iterations_->ObserveMultiple(newton_.buckets, newton_.sum);
  metrics->cr_iterations_->ObserveMultiple(cr_.buckets, cr_.sum);
  metrics->solver_residual_->ObserveMultiple(residual_.buckets, residual_.sum);
  metrics->contacts_per_world_->ObserveMultiple(contacts_.buckets, contacts_.sum);
  metrics->nonconverged_world_steps_->Increment(nonconverged_);
  metrics->halved_world_steps_->Increment(halved_);
  metrics->redone_world_steps_->Increment(redone_);
  metrics->world_steps_->Increment(world_steps_);
}

}  // namespace axion::server
