// Prometheus metrics of the server. Names are a contract with dashboards and alerts
// (deploy/): keep them. No per-world labels, so cardinality stays bounded by methods x codes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace axion::server {

class Metrics {
 public:
  Metrics();

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

  // axion_requests_total{method, code}; one count per unary call or stream message.
  void CountRequest(const std::string& method, absl::StatusCode code);

  // Per-batch histograms of per-world values, accumulated locally and added under one lock:
  // a 1024-world batch would otherwise take 4096 histogram locks per step.
  class WorldStepAccumulator {
   public:
    explicit WorldStepAccumulator(const Metrics& metrics);
    // Values of one world for one engine call that took `steps` steps.
    void Add(int steps, int newton_iterations, int cr_iterations, double residual,
             int contact_count, bool converged, bool halved, bool redone);
    void Commit(Metrics* metrics);

   private:
    struct Accumulated {
      std::vector<double> buckets;
      double sum = 0;
    };
    static void Observe(const std::vector<double>& bounds, double value, Accumulated* acc);
    const Metrics& metrics_;
    Accumulated newton_, cr_, residual_, contacts_;
    double nonconverged_ = 0;
    double halved_ = 0;
    double redone_ = 0;
    double world_steps_ = 0;
  };

  prometheus::Gauge& worlds_alive() { return *worlds_alive_; }
  prometheus::Histogram& batch_worlds() { return *batch_worlds_; }
  prometheus::Histogram& queue_wait_seconds() { return *queue_wait_seconds_; }
  prometheus::Histogram& engine_step_seconds() { return *engine_step_seconds_; }
  prometheus::Gauge& device_memory_bytes() { return *device_memory_bytes_; }
  prometheus::Gauge& device_memory_capacity_bytes() { return *device_memory_capacity_bytes_; }
  prometheus::Gauge& queue_depth() { return *queue_depth_; }
  prometheus::Counter& engine_step_calls() { return *engine_step_calls_; }
  prometheus::Counter& world_steps() { return *world_steps_; }
  prometheus::Counter& scene_cache_hits() { return *scene_cache_hits_; }
  prometheus::Counter& scene_cache_misses() { return *scene_cache_misses_; }
  prometheus::Histogram& scene_prepare_seconds() { return *scene_prepare_seconds_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_total_;
  prometheus::Gauge* worlds_alive_;
  prometheus::Histogram* batch_worlds_;
  prometheus::Histogram* queue_wait_seconds_;
  prometheus::Histogram* engine_step_seconds_;
  std::vector<double> newton_bounds_, cr_bounds_, residual_bounds_, contacts_bounds_;
  prometheus::Histogram* newton_iterations_;
  prometheus::Histogram* cr_iterations_;
  prometheus::Histogram* solver_residual_;
  prometheus::Counter* nonconverged_world_steps_;
  prometheus::Counter* halved_world_steps_;
  prometheus::Counter* redone_world_steps_;
  prometheus::Histogram* contacts_per_world_;
  prometheus::Gauge* device_memory_bytes_;
  prometheus::Gauge* device_memory_capacity_bytes_;
  prometheus::Counter* world_steps_;
  prometheus::Gauge* queue_depth_;
  prometheus::Counter* engine_step_calls_;
  prometheus::Counter* scene_cache_hits_;
  prometheus::Counter* scene_cache_misses_;
  prometheus::Histogram* scene_prepare_seconds_;
};

}  // namespace axion::server
