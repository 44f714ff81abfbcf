// CPU backend: OpenMP threads each take a contiguous chunk of worlds and run the whole step
// pipeline on it serially, so a chunk's arrays stay in cache through the Newton solve and no
// barrier separates the pipeline's many small passes.
#include <omp.h>

#include <algorithm>

#include "backend.h"
#include "pipeline.h"

namespace axion {
namespace {

// Runs a per-element function serially over the elements of a world range.
struct SerialExec {
  const BatchView& v;
  template <class F>
  void run(const int32_t* offset, WorldRange r, F f) const {
    for (int i = offset[r.begin]; i < offset[r.end]; ++i) f(i);
  }
  template <class F>
  void worlds(WorldRange r, F f) const {
    for (int w = r.begin; w < r.end; ++w) f(w);
  }
  template <class F>
  void bodies(WorldRange r, F f) const {
    run(v.world_body_offset, r, f);
  }
  template <class F>
  void joints(WorldRange r, F f) const {
    run(v.world_joint_offset, r, f);
  }
  template <class F>
  void dofs(WorldRange r, F f) const {
    run(v.world_dof_offset, r, f);
  }
  template <class F>
  void shapes(WorldRange r, F f) const {
    run(v.world_shape_offset, r, f);
  }
  template <class F>
  void rows(WorldRange r, F f) const {
    run(v.world_row_offset, r, f);
  }
  template <class P>
  bool any(WorldRange r, P pred) const {
    for (int w = r.begin; w < r.end; ++w) {
      if (pred(w)) return true;
    }
    return false;
  }
};

class CpuBackend final : public ExecutionBackend {
 public:
  explicit CpuBackend(int threads) : threads_(threads > 0 ? threads : omp_get_max_threads()) {}

  absl::Status Load(BatchStorage&) override { return absl::OkStatus(); }
  absl::Status Upload(BatchStorage&) override { return absl::OkStatus(); }
  absl::Status Download(BatchStorage&) override { return absl::OkStatus(); }
  size_t device_bytes() const override { return 0; }
  size_t device_capacity_bytes() const override { return 0; }

  absl::Status Step(BatchStorage& host, int max_substeps) override {
    BatchView v = host.view();
    const int world_count = v.world_count;
    if (world_count == 0) return absl::OkStatus();
    // Chunks balanced by body count: a few per thread so uneven scenes still spread evenly.
    std::vector<int> bounds{0};
    const int total_bodies = std::max(1, v.world_body_offset[world_count]);
    const int chunks = std::min(world_count, 4 * threads_);
    const double per_chunk = static_cast<double>(total_bodies) / chunks;
    for (int w = 1; w < world_count; ++w) {
      if (v.world_body_offset[w] >= per_chunk * static_cast<double>(bounds.size()))
        bounds.push_back(w);
    }
    bounds.push_back(world_count);
    const int chunk_count = static_cast<int>(bounds.size()) - 1;
    const int threads = std::min(threads_, chunk_count);
    LoopBounds loop_bounds = BatchLoopBounds(host);
    loop_bounds.fused_cr = true;  // one thread owns each world: keep its CR solve in cache
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (int c = 0; c < chunk_count; ++c) {
      SerialExec ex{v};
      WorldRange range{bounds[c], bounds[c + 1]};
      for (int s = 0; s < max_substeps; ++s) pipeline::step(ex, v, range, loop_bounds);
    }
    return absl::OkStatus();
  }

 private:
  int threads_;
};

}  // namespace

LoopBounds BatchLoopBounds(const BatchStorage& host) {
  LoopBounds b;
  for (const WorldParams& p : host.world_params) {
    b.newton_iterations = std::max(b.newton_iterations, p.newton_iterations);
    b.cr_iterations = std::max(b.cr_iterations, p.cr_iterations);
    // line_search_steps halvings after the full step, and one trial when it is disabled
    b.line_search_trials =
        std::max(b.line_search_trials, p.line_search ? p.line_search_steps + 1 : 1);
  }
  return b;
}

std::unique_ptr<ExecutionBackend> MakeCpuBackend(int threads) {
  return std::make_unique<CpuBackend>(threads);
}

}  // namespace axion
