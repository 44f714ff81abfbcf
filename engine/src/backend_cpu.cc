// CPU backend: OpenMP threads take small contiguous ranges of worlds and run the whole step
// pipeline on each serially, so a range's arrays stay in cache through the Newton solve and no
// barrier separates the pipeline's many small passes.
#include <omp.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "backend.h"
#include "pipeline.h"

namespace axion {
namespace {

// Runs a per-element function serially over the elements of a world range.
// World data per range of worlds a thread steps at once (bytes): inside a core's L2 cache
// (measured against 256 KB and 4 MB: within 5% everywhere, 1 MB best on stacks and humanoids).
constexpr size_t kRangeBytes = size_t(1) << 20;

struct SerialExec {
  static constexpr bool row_pairs_on_one_thread = true;  // row_evaluate
  static constexpr bool row_kinds_split = false;         // one pass over the rows
  const BatchView& v;
  template <class F>
  void run(const int32_t* offset, WorldRange r, F f) const {
    for (int i = offset[r.begin]; i < offset[r.end]; ++i) f(i);
  }
  template <class F>
  void worlds(WorldRange r, F f) const {
    for (int w = r.begin; w < r.end; ++w) f(w);
  }
  // One thread is each world's team.
  template <class F>
  void teams(WorldRange r, F f) const {
    for (int w = r.begin; w < r.end; ++w) f(w, kernels::Team{});
  }
  template <class F>
  void lean_teams(WorldRange r, F f) const {
    teams(r, f);
  }
  template <class F>
  void narrow_teams(WorldRange r, F f) const {
    teams(r, f);
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
  // The live rows only: a world's row slots are sized for its contact capacity.
  template <class F>
  void rows(WorldRange r, F f) const {
    for (int w = r.begin; w < r.end; ++w) {
      const int end = v.world_row_offset[w] + kernels::world_live_rows(v, w);
      for (int row = v.world_row_offset[w]; row < end; ++row) f(row);
    }
  }
  template <class P>
  bool any(WorldRange r, P pred) const {
    for (int w = r.begin; w < r.end; ++w) {
      if (pred(w)) return true;
    }
    return false;
  }
  // body() while at least min_worlds worlds of r satisfy pred, at most max_trips times.
  template <class P, class Body>
  void loop_while(WorldRange r, int max_trips, P pred, Body body, int min_worlds = 1) const {
    for (int trip = 0; trip < max_trips && count_at_least(r, pred, min_worlds); ++trip) body();
  }
  template <class P>
  bool count_at_least(WorldRange r, P pred, int min_worlds) const {
    if (min_worlds < 1) min_worlds = 1;
    int count = 0;
    for (int w = r.begin; w < r.end && count < min_worlds; ++w) count += pred(w) ? 1 : 0;
    return count >= min_worlds;
  }
};

class CpuBackend final : public ExecutionBackend {
 public:
  explicit CpuBackend(int threads) : threads_(threads > 0 ? threads : omp_get_max_threads()) {}

  absl::Status Load(BatchStorage&) override { return absl::OkStatus(); }
  absl::Status Upload(BatchStorage&) override { return absl::OkStatus(); }
  absl::Status UploadInputs(BatchStorage&) override { return absl::OkStatus(); }
  absl::Status UploadWorldModels(BatchStorage&, absl::Span<const int>) override {
    return absl::OkStatus();
  }
  absl::Status UploadFrames(BatchStorage&) override { return absl::OkStatus(); }
  absl::Status Download(BatchStorage&) override { return absl::OkStatus(); }
  absl::Status DownloadObservables(BatchStorage&) override { return absl::OkStatus(); }
  size_t device_bytes() const override { return 0; }
  size_t device_capacity_bytes() const override { return 0; }

  absl::Status Step(BatchStorage& host, int max_substeps) override {
    BatchView v = host.view();
    const int world_count = v.world_count;
    if (world_count == 0) return absl::OkStatus();
    // Worlds go to threads in small contiguous ranges, handed out dynamically, each range
    // stepped through the whole pipeline (collision, every Newton iteration, write-back) on its
    // own: a range holds about kRangeBytes of world data, so it stays in cache through the step.
    // Heavy worlds (a humanoid, ~300 KB) go one at a time; light ones are grouped, which keeps
    // per-range overhead and false sharing of neighbouring worlds' counters low. Large chunks
    // (a quarter of a thread's worlds) streamed every world through each kernel instead: 256
    // humanoids on 2 threads stepped 1272 world-steps/s that way.
    const size_t world_bytes = std::max<size_t>(1, host.bytes() / world_count);
    // ... and at least a few ranges per thread, so a small batch still uses every thread
    const int spread = std::max(1, world_count / (4 * threads_));
    const int range_worlds =
        std::min(spread, static_cast<int>(std::clamp<size_t>(kRangeBytes / world_bytes, 1, 1024)));
    const int range_count = (world_count + range_worlds - 1) / range_worlds;
    const int threads = std::min(threads_, range_count);
    const LoopBounds loop_bounds = BatchLoopBounds(host);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (int r = 0; r < range_count; ++r) {
      SerialExec ex{v};
      WorldRange range{r * range_worlds, std::min(world_count, (r + 1) * range_worlds)};
      for (int s = 0; s < max_substeps; ++s) pipeline::step(ex, v, range, loop_bounds);
    }
    return absl::OkStatus();
  }

 private:
  int threads_;
};

}  // namespace

LoopBounds BatchLoopBounds(const BatchStorage& host, int batched_newton_trips,
                           int batched_newton_worlds) {
  LoopBounds b;
  b.batched_newton_trips = batched_newton_trips;
  b.batched_newton_worlds = batched_newton_worlds;
  for (const WorldParams& p : host.world_params) {
    b.newton_iterations = std::max(b.newton_iterations, p.newton_iterations);
    // line_search_steps halvings after the full step, and one trial when it is disabled
    b.line_search_trials =
        std::max(b.line_search_trials, p.line_search ? p.line_search_steps + 1 : 1);
    // each halving follows a failed attempt, and the last level's 2^halvings steps succeed;
    // one more where a failed attempt goes again after the contact presolve; any of these may
    // first go back to its start contact_redos times
    const int retry = p.contact_presolve_sweeps > 0 ? 1 : 0;
    b.attempts = std::max(
        b.attempts, ((1 << p.step_halvings) + p.step_halvings + retry) * (1 + p.contact_redos));
  }
  b.spatial_tendons = std::any_of(host.tendon_path_count.begin(), host.tendon_path_count.end(),
                                  [](int32_t count) { return count > 0; });
  // AXION_BATCHED_NEWTON_TRIPS=K (a count, 0 or more; anything else is ignored): K Newton trips
  // as passes over the batch, then each world still iterating alone (pipeline.h); K at or
  // above the Newton limit batches every trip
  int trips = 0;
  if (const char* env = std::getenv("AXION_BATCHED_NEWTON_TRIPS");
      env != nullptr && absl::SimpleAtoi(env, &trips) && trips >= 0)
    b.batched_newton_trips = trips;
  // AXION_BATCHED_NEWTON_WORLDS=N (1 or more; anything else is ignored): those trips only while
  // at least N worlds of the range still iterate
  int worlds = 0;
  if (const char* env = std::getenv("AXION_BATCHED_NEWTON_WORLDS");
      env != nullptr && absl::SimpleAtoi(env, &worlds) && worlds >= 1)
    b.batched_newton_worlds = worlds;
  return b;
}

std::unique_ptr<ExecutionBackend> MakeCpuBackend(int threads) {
  return std::make_unique<CpuBackend>(threads);
}

}  // namespace axion
