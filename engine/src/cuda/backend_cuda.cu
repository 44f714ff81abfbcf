// CUDA backend: worlds live in device memory from creation to destruction and the whole step
// pipeline (pipeline.h, the same kernel source as the CPU backend) runs on the device.
//
// Layout choice: every BatchStorage array is carved out of one device allocation, the state
// arrays (the *_STATE lists) first and contiguous, so Upload and Download move all state with one
// copy through a pinned staging buffer of the same layout, and the per-world statistics that
// every Step returns are one small copy of the segment's head. One allocation per layout (rather
// than one per array) also makes Load cheap to repeat when worlds are created and destroyed.
//
// Execution: CudaExec launches each pipeline pass as one kernel over the whole batch (one thread
// per element, grid-stride; per-world passes one thread per world, and team passes one warp per
// world, or fewer lanes once the batch fills the device: NarrowTeams), masked by the world's
// phase. Its any() never synchronises and answers true; the step's loops (Newton, line search)
// become WHILE nodes of a CUDA graph whose condition a one-block kernel sets from the worlds'
// phases after each trip, so a loop stops on the device once no world needs it, and never later
// than its LoopBounds. One sub-step is captured into such a graph once per layout and replayed
// for every sub-step without host round trips. The batch is cut into slices of worlds
// (SliceCount), each a branch of the graph with loops of its own.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "backend.h"
#include "batch_storage.h"
#include "pipeline.h"

namespace axion {
namespace cuda_backend {

// 128 threads per block with __launch_bounds__ caps registers so that the heaviest pass (the
// per-world narrow phase) always fits on a multiprocessor.
constexpr int kBlockSize = 128;
// Device arrays start on 256-byte boundaries (the alignment cudaMalloc gives its allocations).
constexpr size_t kArrayAlignment = 256;

size_t AlignUp(size_t n) { return (n + kArrayAlignment - 1) / kArrayAlignment * kArrayAlignment; }

absl::Status CudaError(cudaError_t e, const char* what) {
  return absl::InternalError(absl::StrCat("CUDA backend: ", what, " failed: ", cudaGetErrorName(e),
                                          " (", cudaGetErrorString(e), ")"));
}

#define AXION_CUDA_RETURN_IF_ERROR(expr)                                            \
  do {                                                                              \
    cudaError_t axion_cuda_error = (expr);                                          \
    if (axion_cuda_error != cudaSuccess) return CudaError(axion_cuda_error, #expr); \
  } while (0)

// The kernels take their pass's closure as a __grid_constant__ parameter: the closure holds the
// batch's BatchView (2,560 bytes of array pointers), and the kernels pass it on by reference
// (`const BatchView& v`). Without the qualifier, a kernel that takes its parameter's address
// copies the whole closure into each thread's local memory before its first use: the linear
// solve's kernel had a 3,648-byte stack frame and 4,372 local loads, one per array pointer it
// fetched, and each of its threads wrote the 2.5 kB copy at every launch (ptxas, sm_90; a
// standalone compile of that pass: 3,248 bytes and 4,549 local loads without, 672 and 719 with).
// Runs f(begin + i) for i in [0, count): one thread per element, grid-stride.
template <class F>
__global__ void __launch_bounds__(kBlockSize)
    ForEachKernel(int begin, int count, const __grid_constant__ F f) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += blockDim.x * gridDim.x)
    f(begin + i);
}

// Runs f(w, team) for w in [0, count): Width consecutive lanes per world (a warp, or an aligned
// part of one: NarrowTeams), grid-stride by teams, so a team's lanes always share their world
// (the team's reductions and synchronisations name exactly its lanes). MinBlocks > 1 caps the
// registers so that as many blocks share a multiprocessor (lean_teams).
template <int MinBlocks, int Width, class F>
__global__ void __launch_bounds__(kBlockSize, MinBlocks)
    ForEachTeamKernel(int begin, int count, const __grid_constant__ F f) {
  const kernels::Team team{static_cast<int>(threadIdx.x) % Width, Width};
  const int teams = static_cast<int>(blockDim.x * gridDim.x) / Width;
  for (int w = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x) / Width; w < count;
       w += teams)
    f(begin + w, team);
}

// The live rows of each world (its joint rows, then three per contact): a world's row slots are
// sized for its contact capacity, and a humanoid lives on about a quarter of them.
struct LiveRows {
  const int32_t* world_row_offset = nullptr;       // (world_count + 1)
  const int32_t* world_joint_row_count = nullptr;  // (world_count)
  const int32_t* world_contact_count = nullptr;    // (world_count)
  const int32_t* world_angular_row_count = nullptr;  // (world_count)
};

// f(row) for the live rows of world w, run by the world's warp (ForEachTeamKernel), its lanes on
// consecutive rows. Launching over every row slot instead spent most threads on the mask of an
// unused slot.
template <class F>
struct LiveRowLoop {
  LiveRows live;
  F f;
  __device__ void operator()(int w, kernels::Team team) const {
    const int begin = live.world_row_offset[w];
    const int end = begin + live.world_joint_row_count[w] + 3 * live.world_contact_count[w] +
                    live.world_angular_row_count[w];
    for (int row = begin + team.lane; row < end; row += team.size) f(row);
  }
};

// Loops of the step nest at most this deep (Newton, then line search or Conjugate Residual).
constexpr int kMaxLoopDepth = 4;

// Where a loop's continuation is decided: in a captured graph, the condition of its WHILE node;
// in direct launches, a device flag the host reads after each trip.
struct LoopControl {
  cudaGraphConditionalHandle handle = 0;
  bool in_graph = false;
  int max_trips = 0;
  int min_worlds = 1;    // worlds satisfying the loop's predicate that another trip needs
  int* trips = nullptr;  // (1) trips taken
  int* go = nullptr;     // (1) direct launches: 1 while another trip is due
};

// Decides whether a loop takes another trip: at least min_worlds worlds of [begin, end) satisfy
// pred and fewer than max_trips trips were taken (`first`: before the loop). One block; worlds
// are read once, each thread stopping once it alone has found min_worlds; an integer count, so
// the answer does not depend on the order of the additions.
template <class P>
__global__ void __launch_bounds__(1024)
    LoopConditionKernel(int begin, int end, const __grid_constant__ P pred, LoopControl control,
                        bool first) {
  __shared__ int found;
  if (threadIdx.x == 0) found = 0;
  __syncthreads();
  int mine = 0;
  for (int w = begin + threadIdx.x; w < end && mine < control.min_worlds; w += blockDim.x)
    mine += pred(w) ? 1 : 0;
  if (mine > 0) atomicAdd(&found, mine);
  __syncthreads();
  if (threadIdx.x != 0) return;
  const int trips = first ? 0 : *control.trips + 1;
  *control.trips = trips;
  const unsigned go = found >= control.min_worlds && trips < control.max_trips ? 1u : 0u;
  if (control.in_graph) {
    cudaGraphSetConditional(control.handle, go);
  } else {
    *control.go = static_cast<int>(go);
  }
}

// Device time of each pipeline pass, keyed by the pass's place in pipeline.h, for
// AXION_CUDA_PROFILE=1 (which also turns graphs off, so every pass is its own launch). Events
// are recorded around each launch and read once the sub-steps of a Step have finished.
class PassProfile {
 public:
  PassProfile() = default;
  PassProfile(const PassProfile&) = delete;
  PassProfile& operator=(const PassProfile&) = delete;
  ~PassProfile() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }

  // Events to record before and after the launch of the pass at `where`.
  std::pair<cudaEvent_t, cudaEvent_t> Bracket(const std::source_location& where) {
    while (events_.size() < 2 * (pending_.size() + 1)) {
      cudaEvent_t e = nullptr;
      cudaEventCreate(&e);
      events_.push_back(e);
    }
    const size_t k = pending_.size();
    pending_.push_back(where.line());
    return {events_[2 * k], events_[2 * k + 1]};
  }

  // Adds the pending brackets' times; the stream has been synchronised.
  void Collect(int substeps) {
    for (size_t k = 0; k < pending_.size(); ++k) {
      float ms = 0;
      if (cudaEventElapsedTime(&ms, events_[2 * k], events_[2 * k + 1]) != cudaSuccess) ms = 0;
      Total& t = totals_[pending_[k]];
      t.ms += ms;
      t.launches += 1;
    }
    pending_.clear();
    substeps_ += substeps;
  }

  // The table, slowest pass first, to stderr.
  void Print(int world_count) const {
    double all = 0;
    for (const auto& [line, t] : totals_) all += t.ms;
    if (substeps_ == 0 || all <= 0) return;
    std::vector<std::pair<int, Total>> rows(totals_.begin(), totals_.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    std::fprintf(stderr,
                 "CUDA pass profile: %d worlds, %d sub-steps, %.3f ms of kernels per sub-step\n"
                 "  pipeline.h line  ms/sub-step  launches/sub-step  share\n",
                 world_count, substeps_, all / substeps_);
    for (const auto& [line, t] : rows) {
      std::fprintf(stderr, "  %15d %12.4f %18.1f %5.1f%%\n", line, t.ms / substeps_,
                   static_cast<double>(t.launches) / substeps_, 100.0 * t.ms / all);
    }
  }

 private:
  struct Total {
    double ms = 0;
    int64_t launches = 0;
  };
  std::vector<cudaEvent_t> events_;  // (2 x brackets) start and stop of each pending bracket
  std::vector<int> pending_;         // (brackets) the pass of each pending bracket
  std::map<int, Total> totals_;      // by pass
  int substeps_ = 0;
};

// Team widths. A world's team is a warp while the device has lanes to spare; once the batch
// fills it (more than kNarrowTeamWorlds worlds), the passes whose chain per world is short of
// parallel work run narrower teams, more worlds to a warp: the linear solve on half warps (its
// sums keep their 32 virtual lanes, two per lane, so the bits are the same) and the tree factor
// on 4 lanes. H100, humanoids, the first 100 steps, world-steps/s: at 8192 worlds 469,434 and
// 477,660 with warps (the factor on one thread per world, as it was), 510,281 with the factor on
// 4 lanes, 538,072 with the solve on 16 as well (8 lanes for the factor: 488,932); at 1024
// worlds 208,254-213,124 against 176,290 and at 64 24,812 against 17,552, where a world's chain,
// not the worlds in flight, sets the pace. AXION_CUDA_TEAMS=wide|narrow fixes the choice.
constexpr int kNarrowTeamWorlds = 2048;

// Newton trips run as passes over the batch before each world still iterating finishes its
// solve alone on its team (pipeline.h, fused_newton.h). Past the first trips few worlds iterate,
// and a batch trip's twenty-odd launches over every world cost about as much for a handful as
// for all; a lone world's chain on its team is shorter. Before the eighth trip most worlds still
// iterate, and the finishing kernel (a warp per world, 255 registers: 8 worlds per
// multiprocessor) runs a full batch slower than the passes do. Measured on an H200 (RESULTS.md,
// run I): the training loop 1.12-1.25x faster at 64 to 8192 humanoids, humanoids at rest and
// falling within 2% of every trip batched; finishing from the first trip is 2.8x slower at 8192.
// A small batch, whose passes are all launch and chain, finishes alone from the first trip:
// at 64 humanoids 1.22-1.26x in the training loop and 1.03x at rest against every trip batched.
constexpr int kBatchedNewtonTrips = 8;
constexpr int kFinishAloneWorlds = 64;
int BatchedNewtonTrips(int world_count) {
  return world_count <= kFinishAloneWorlds ? 0 : kBatchedNewtonTrips;
}
// Within those eight trips, a slice's passes also stop once fewer than a quarter of its worlds,
// and fewer than its share of one resident wave of the finishing kernel (8 warps on each of an
// H100's or H200's 132 multiprocessors, shared by the slices, which run side by side), still
// iterate: run I's figures put a batch trip of 8192 humanoids at about 4 ms and a finishing
// iteration of a wave or less at 1.5 ms or less, and at 1024 worlds in the training loop
// finishing alone won 1.20-1.37x over eight batched trips. Not yet measured as a rule of its
// own: AXION_BATCHED_NEWTON_WORLDS=N sets the count per slice, and 1 restores the eight trips
// alone.
constexpr int kFinishAloneWave = 1024;
int BatchedNewtonWorlds(int slice_worlds, int slice_count) {
  return std::clamp(slice_worlds / 4, 1, std::max(1, kFinishAloneWave / slice_count));
}
// LoopBounds::batched_newton_worlds before each slice takes its own (SliceBounds).
constexpr int kNewtonWorldsPerSlice = 0;
constexpr int kNarrowSolveWidth = kernels::kTeamWidth / 2;
constexpr int kNarrowFactorWidth = 4;
bool NarrowTeams(int world_count) {
  if (const char* env = std::getenv("AXION_CUDA_TEAMS")) {
    if (std::string(env) == "wide") return false;
    if (std::string(env) == "narrow") return true;
  }
  return world_count > kNarrowTeamWorlds;
}

// AXION_CUDA_ROW_SPLIT=0: the row pass as one kernel over every row kind; by default the common
// kinds' kernel, then the rest's (row_kind_common). The bits are the same; the switch is there to
// measure the two on one device.
bool RowKindsSplit() {
  const char* env = std::getenv("AXION_CUDA_ROW_SPLIT");
  return env == nullptr || std::string(env) != "0";
}

// Host copies of the batch's per-world element offsets (world_count + 1 each), so that a pass
// over a range of worlds launches over exactly that range's bodies, joints, DOFs and shapes.
struct HostOffsets {
  std::vector<int32_t> body, joint, dof, shape;
};

// The pipeline's executor on the device. Each pass launches over the elements of its world
// range (a slice of the batch, see CudaBackend::slices_), masked per world by the world's phase.
struct CudaExec {
  using Where = std::source_location;
  // row_evaluate: a thread per row, each writing its own
  static constexpr bool row_pairs_on_one_thread = false;
  bool row_kinds_split = true;  // RowKindsSplit
  cudaStream_t stream = nullptr;
  int max_blocks = 1;
  const HostOffsets* offsets = nullptr;
  LiveRows live_rows;
  cudaError_t* launch_error = nullptr;  // first launch error, checked once the pass sequence ends
  PassProfile* profile = nullptr;       // set: every launch is timed
  // Loops: capture them as WHILE nodes (or decide each trip on the host), and the streams the
  // loop bodies are captured on, one per depth.
  bool capturing = false;
  bool warm_up = false;  // direct launches: every loop body runs once, whatever the condition
  int loop_depth = 0;
  int* loop_state = nullptr;             // (2 x kMaxLoopDepth) device trips and go flags per depth
  cudaStream_t* body_streams = nullptr;  // (kMaxLoopDepth)

  void note(cudaError_t e) const {
    if (e != cudaSuccess && *launch_error == cudaSuccess) *launch_error = e;
  }

  // Launches kernel over `threads` threads in blocks of `block` (grid-stride beyond
  // max_blocks blocks).
  template <class Kernel, class F>
  void launch_kernel(Kernel kernel, int begin, int count, int threads, F f, const Where& where,
                     int block = kBlockSize) const {
    if (count <= 0) return;
    int blocks = std::min((threads + block - 1) / block, max_blocks);
    std::pair<cudaEvent_t, cudaEvent_t> bracket{nullptr, nullptr};
    if (profile != nullptr) {
      bracket = profile->Bracket(where);
      cudaEventRecord(bracket.first, stream);
    }
    kernel<<<blocks, block, 0, stream>>>(begin, count, f);
    note(cudaGetLastError());
    if (profile != nullptr) cudaEventRecord(bracket.second, stream);
  }
  // f over the elements [offset[wr.begin], offset[wr.end]) of the range's worlds.
  template <class F>
  void launch(const std::vector<int32_t>& offset, WorldRange wr, F f, const Where& where) const {
    const int begin = offset[wr.begin], count = offset[wr.end] - begin;
    launch_kernel(ForEachKernel<F>, begin, count, count, f, where);
  }
  static int TeamThreads(WorldRange wr, int width = kernels::kTeamWidth) {
    const int worlds = wr.end - wr.begin;
    return worlds > INT32_MAX / width ? INT32_MAX : worlds * width;
  }
  template <class F>
  void teams(WorldRange wr, F f, const Where& where = Where::current()) const {
    launch_kernel(ForEachTeamKernel<1, kernels::kTeamWidth, F>, wr.begin, wr.end - wr.begin,
                  TeamThreads(wr), f, where);
  }
  // Team widths of lean_teams and narrow_teams (see NarrowTeams).
  int solve_team_width = kernels::kTeamWidth;
  int factor_team_width = kernels::kTeamWidth;
  template <int MinBlocks, int Width, class F>
  void launch_teams(WorldRange wr, F f, const Where& where) const {
    launch_kernel(ForEachTeamKernel<MinBlocks, Width, F>, wr.begin, wr.end - wr.begin,
                  TeamThreads(wr, Width), f, where);
  }
  // A team pass for work a world splits only a few ways at a time (the tree factor, level by
  // level: a humanoid's widest level holds 3 bodies).
  template <class F>
  void narrow_teams(WorldRange wr, F f, const Where& where = Where::current()) const {
    if (factor_team_width == kNarrowFactorWidth)
      return launch_teams<1, kNarrowFactorWidth>(wr, f, where);
    launch_teams<1, kernels::kTeamWidth>(wr, f, where);
  }
  // A team pass whose registers are capped so that kLeanTeamBlocks blocks of kBlockSize (24
  // warps) share a multiprocessor: for the linear solve, a chain of dependent loads per world
  // whose speed is the number of worlds in flight.
  static constexpr int kLeanTeamBlocks = 6;
  template <class F>
  void lean_teams(WorldRange wr, F f, const Where& where = Where::current()) const {
    if (solve_team_width == kNarrowSolveWidth) {
      return launch_teams<kLeanTeamBlocks, kNarrowSolveWidth>(wr, f, where);
    }
    launch_teams<kLeanTeamBlocks, kernels::kTeamWidth>(wr, f, where);
  }
  // Per-world passes run one world per thread in blocks of one warp: blocks of kBlockSize left
  // most multiprocessors idle (8192 worlds filled 64 of the H100's 132).
  template <class F>
  void worlds(WorldRange wr, F f, const Where& where = Where::current()) const {
    launch_kernel(ForEachKernel<F>, wr.begin, wr.end - wr.begin, wr.end - wr.begin, f, where,
                  kernels::kTeamWidth);
  }
  template <class F>
  void bodies(WorldRange wr, F f, const Where& where = Where::current()) const {
    launch(offsets->body, wr, f, where);
  }
  template <class F>
  void joints(WorldRange wr, F f, const Where& where = Where::current()) const {
    launch(offsets->joint, wr, f, where);
  }
  template <class F>
  void dofs(WorldRange wr, F f, const Where& where = Where::current()) const {
    launch(offsets->dof, wr, f, where);
  }
  template <class F>
  void shapes(WorldRange wr, F f, const Where& where = Where::current()) const {
    launch(offsets->shape, wr, f, where);
  }
  // The live rows only (the executor contract at the top of pipeline.h), a warp per world.
  template <class F>
  void rows(WorldRange wr, F f, const Where& where = Where::current()) const {
    teams(wr, LiveRowLoop<F>{live_rows, f}, where);
  }
  // No synchronisation: every pass is masked per world and loops are bounded (see the top).
  template <class P>
  bool any(WorldRange, P) const {
    return true;
  }

  // body() while at least min_worlds worlds satisfy pred, at most max_trips times. Captured,
  // the loop is a WHILE node whose condition a one-block kernel sets before the loop and after
  // each trip, so the loop ends on the device as soon as too few worlds need another trip;
  // directly launched, the host reads that kernel's answer after each trip.
  template <class P, class Body>
  void loop_while(WorldRange wr, int max_trips, P pred, Body body, int min_worlds = 1) {
    if (max_trips <= 0 || wr.end <= wr.begin) return;
    if (loop_depth >= kMaxLoopDepth) {
      note(cudaErrorNotSupported);
      return;
    }
    LoopControl control;
    control.max_trips = max_trips;
    control.min_worlds = min_worlds < 1 ? 1 : min_worlds;
    control.trips = loop_state + 2 * loop_depth;
    control.go = control.trips + 1;
    control.in_graph = capturing;
    cudaStream_t outer = stream;
    if (!capturing) {
      LoopConditionKernel<<<1, 1024, 0, stream>>>(wr.begin, wr.end, pred, control, true);
      note(cudaGetLastError());
      ++loop_depth;
      for (int trip = 0;; ++trip) {
        int go = 0;
        note(cudaMemcpyAsync(&go, control.go, sizeof(int), cudaMemcpyDeviceToHost, stream));
        note(cudaStreamSynchronize(stream));
        if (*launch_error != cudaSuccess || (!go && !(warm_up && trip == 0))) break;
        body();
        LoopConditionKernel<<<1, 1024, 0, stream>>>(wr.begin, wr.end, pred, control, false);
        note(cudaGetLastError());
      }
      --loop_depth;
      return;
    }
    // the condition, set upstream of the WHILE node in the graph being captured
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaGraph_t graph = nullptr;
    note(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, nullptr, nullptr, nullptr));
    if (*launch_error != cudaSuccess) return;
    note(cudaGraphConditionalHandleCreate(&control.handle, graph, 0, cudaGraphCondAssignDefault));
    LoopConditionKernel<<<1, 1024, 0, stream>>>(wr.begin, wr.end, pred, control, true);
    note(cudaGetLastError());
    const cudaGraphNode_t* deps = nullptr;
    size_t dep_count = 0;
    note(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &deps, nullptr, &dep_count));
    if (*launch_error != cudaSuccess) return;
    // the WHILE node after it, then the body captured into the node's graph
    cudaGraphNodeParams params = {};
    params.type = cudaGraphNodeTypeConditional;
    params.conditional.handle = control.handle;
    params.conditional.type = cudaGraphCondTypeWhile;
    params.conditional.size = 1;
    cudaGraphNode_t node = nullptr;
    note(cudaGraphAddNode(&node, graph, deps, nullptr, dep_count, &params));
    note(cudaStreamUpdateCaptureDependencies(stream, &node, nullptr, 1,
                                             cudaStreamSetCaptureDependencies));
    if (*launch_error != cudaSuccess) return;
    cudaStream_t inner = body_streams[loop_depth];
    note(cudaStreamBeginCaptureToGraph(inner, params.conditional.phGraph_out[0], nullptr, nullptr,
                                       0, cudaStreamCaptureModeRelaxed));
    if (*launch_error != cudaSuccess) return;
    stream = inner;
    ++loop_depth;
    body();
    LoopConditionKernel<<<1, 1024, 0, stream>>>(wr.begin, wr.end, pred, control, false);
    note(cudaGetLastError());
    --loop_depth;
    stream = outer;
    note(cudaStreamEndCapture(inner, nullptr));
  }
};

// Device pointers of every BatchStorage array, named as in BatchStorage.
struct DeviceArrays {
#define AXION_DECLARE(T, name, width) T* name = nullptr;
  AXION_ALL_ARRAYS(AXION_DECLARE)
#undef AXION_DECLARE
  int32_t* joint_dof_offset = nullptr;

  BatchView view(int world_count) const {
    BatchView v;
    v.world_count = world_count;
#define AXION_BIND(T, name, width) v.name = name;
    AXION_ALL_ARRAYS(AXION_BIND)
#undef AXION_BIND
    v.joint_dof_offset = joint_dof_offset;
    return v;
  }
};

// The per-world statistics a Step returns to the host: the head of the state segment.
template <class Fn>
void ForEachWorldStateArray(BatchStorage& h, DeviceArrays& d, Fn fn) {
#define AXION_VISIT(T, name, width) fn(h.name, d.name);
  AXION_WORLD_STATE(AXION_VISIT)
#undef AXION_VISIT
}

// Every state array, world statistics first: the segment Upload and Download move.
template <class Fn>
void ForEachStateArray(BatchStorage& h, DeviceArrays& d, Fn fn) {
  ForEachWorldStateArray(h, d, fn);
#define AXION_VISIT(T, name, width) fn(h.name, d.name);
  AXION_BODY_STATE(AXION_VISIT)
  AXION_DOF_STATE(AXION_VISIT)
  AXION_QPOS_STATE(AXION_VISIT)
  AXION_ACTUATOR_STATE(AXION_VISIT)
  AXION_CONTACT_STATE(AXION_VISIT)
  AXION_ROW_STATE(AXION_VISIT)
#undef AXION_VISIT
}

// Every array, in device-allocation order: the state segment, then model and scratch arrays.
template <class Fn>
void ForEachArray(BatchStorage& h, DeviceArrays& d, Fn fn) {
  ForEachStateArray(h, d, fn);
#define AXION_VISIT(T, name, width) fn(h.name, d.name);
  AXION_WORLD_OFFSETS(AXION_VISIT)
  AXION_WORLD_MODEL(AXION_VISIT)
  AXION_WORLD_SCRATCH(AXION_VISIT)
  AXION_BODY_MODEL(AXION_VISIT)
  AXION_BODY_SCRATCH(AXION_VISIT)
  AXION_JOINT_MODEL(AXION_VISIT)
  AXION_JOINT_SCRATCH(AXION_VISIT)
  AXION_DOF_MODEL(AXION_VISIT)
  AXION_DOF_SCRATCH(AXION_VISIT)
  AXION_ACTUATOR_MODEL(AXION_VISIT)
  AXION_TENDON_MODEL(AXION_VISIT)
  AXION_TENDON_SCRATCH(AXION_VISIT)
  AXION_TENDON_JOINT_MODEL(AXION_VISIT)
  AXION_SHAPE_MODEL(AXION_VISIT)
  AXION_SHAPE_SCRATCH(AXION_VISIT)
  AXION_PAIR_RULE_MODEL(AXION_VISIT)
  AXION_PAIR_SCRATCH(AXION_VISIT)
  AXION_ROW_MODEL(AXION_VISIT)
  AXION_ROW_SCRATCH(AXION_VISIT)
  AXION_HULL_ARRAYS(AXION_VISIT)
#undef AXION_VISIT
  fn(h.joint_dof_offset, d.joint_dof_offset);
}

// Bytes of the arrays `for_each` visits, laid out back to back at kArrayAlignment.
template <class ForEach>
size_t SegmentBytes(BatchStorage& h, DeviceArrays& d, ForEach for_each) {
  size_t bytes = 0;
  for_each(h, d,
           [&](const auto& host, auto*&) { bytes += AlignUp(host.size() * sizeof(host[0])); });
  return bytes;
}

// Copies between the host vectors and a staging buffer with the device segment's layout.
template <class ForEach>
void PackStaging(BatchStorage& h, DeviceArrays& d, ForEach for_each, char* staging) {
  size_t offset = 0;
  for_each(h, d, [&](const auto& host, auto*&) {
    const size_t bytes = host.size() * sizeof(host[0]);
    if (bytes > 0) std::memcpy(staging + offset, host.data(), bytes);
    offset += AlignUp(bytes);
  });
}
template <class ForEach>
void UnpackStaging(BatchStorage& h, DeviceArrays& d, ForEach for_each, const char* staging) {
  size_t offset = 0;
  for_each(h, d, [&](auto& host, auto*&) {
    const size_t bytes = host.size() * sizeof(host[0]);
    if (bytes > 0) std::memcpy(host.data(), staging + offset, bytes);
    offset += AlignUp(bytes);
  });
}

// Pinned host memory, grown on demand (never shrunk while the backend lives).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (data_ != nullptr) cudaFreeHost(data_);
  }
  absl::Status Reserve(size_t bytes) {
    if (bytes <= capacity_) return absl::OkStatus();
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = nullptr;
    capacity_ = 0;
    AXION_CUDA_RETURN_IF_ERROR(cudaMallocHost(&data_, bytes));
    capacity_ = bytes;
    return absl::OkStatus();
  }
  char* data() const { return static_cast<char*>(data_); }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

bool SameBounds(const LoopBounds& a, const LoopBounds& b) {
  return a.newton_iterations == b.newton_iterations &&
         a.line_search_trials == b.line_search_trials && a.attempts == b.attempts &&
         a.batched_newton_trips == b.batched_newton_trips &&
         a.batched_newton_worlds == b.batched_newton_worlds;
}

// Sub-steps are replayed from a CUDA graph unless AXION_CUDA_GRAPHS=0 (direct launches, the host
// deciding each loop trip: for profiling individual passes and for comparing the two paths).
bool GraphsEnabled() {
  const char* env = std::getenv("AXION_CUDA_GRAPHS");
  return env == nullptr || std::string(env) != "0";
}

// AXION_CUDA_PROFILE=1 times every pass (direct launches) and prints a table per backend.
bool ProfileEnabled() {
  const char* env = std::getenv("AXION_CUDA_PROFILE");
  return env != nullptr && std::string(env) == "1";
}

// Slices: the batch is cut into this many contiguous ranges of worlds, each stepped through the
// whole pipeline on its own stream (a branch of the captured graph, with its own WHILE nodes).
// A slice's Newton and line-search loops end when its own worlds are done, so a slow world
// drags only its slice's masked launches through its extra trips, and slices out of step
// overlap their passes. A world's arithmetic does not depend on its slice (every reduction is
// per world): the results are the same bits whatever the count. H100, humanoids, 8 slices
// against 1 (two runs each): 1.04x over the first 100 steps at 8192 worlds, 1.05x at rest at
// 32768, 1.14x in the training loop at 1024, 1.01x at 8192. Slices of alike worlds stay in step,
// so they run their passes at the same time and overlap little.
constexpr int kMaxSlices = 16;
// The default: up to kDefaultSlices slices of at least kMinSliceWorlds worlds (smaller slices
// add launches without filling the device).
constexpr int kDefaultSlices = 8;
constexpr int kMinSliceWorlds = 128;
// Direct launches (no graph, or the pass profile) run the slices one after another, which gains
// nothing, so they default to one slice and the profile times each pass over the whole batch.
// AXION_CUDA_SLICES=N fixes the count (1 to kMaxSlices, capped at one world per slice).
int SliceCount(int world_count, bool graphs) {
  int slices = graphs ? std::clamp(world_count / kMinSliceWorlds, 1, kDefaultSlices) : 1;
  if (const char* env = std::getenv("AXION_CUDA_SLICES")) {
    const int n = std::atoi(env);
    if (n >= 1) slices = std::min(n, kMaxSlices);
  }
  return std::clamp(slices, 1, std::max(1, world_count));
}

class CudaBackend final : public ExecutionBackend {
 public:
  CudaBackend(int device, int multiprocessors)
      : device_(device), multiprocessors_(multiprocessors) {}

  ~CudaBackend() override {
    cudaSetDevice(device_);
    if (profile_ != nullptr) profile_->Print(world_count_);
    Unload();
    if (loop_state_ != nullptr) cudaFree(loop_state_);
    for (cudaStream_t s : body_streams_) {
      if (s != nullptr) cudaStreamDestroy(s);
    }
    for (cudaStream_t s : slice_streams_) {
      if (s != nullptr) cudaStreamDestroy(s);
    }
    for (cudaEvent_t e : slice_events_) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  absl::Status Init() {
    AXION_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    AXION_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    for (cudaStream_t& s : body_streams_) {
      AXION_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    }
    for (cudaStream_t& s : slice_streams_) {
      AXION_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    }
    for (cudaEvent_t& e : slice_events_) {
      AXION_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
    AXION_CUDA_RETURN_IF_ERROR(cudaMalloc(reinterpret_cast<void**>(&loop_state_),
                                          kMaxSlices * 2 * kMaxLoopDepth * sizeof(int)));
    return absl::OkStatus();
  }

  absl::Status Load(BatchStorage& host) override {
    AXION_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    // Pending work may still read the current arrays.
    AXION_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    DeviceArrays next;
    const size_t total =
        SegmentBytes(host, next, [](auto& h, auto& d, auto fn) { ForEachArray(h, d, fn); });
    const size_t state_bytes =
        SegmentBytes(host, next, [](auto& h, auto& d, auto fn) { ForEachStateArray(h, d, fn); });
    const size_t world_state_bytes = SegmentBytes(
        host, next, [](auto& h, auto& d, auto fn) { ForEachWorldStateArray(h, d, fn); });
    const int world_count = host.world_count();
    absl::Status staged = staging_.Reserve(state_bytes);
    if (!staged.ok()) return staged;
    absl::Status pending =
        step_pending_.Reserve(std::max<size_t>(1, world_count) * sizeof(int32_t));
    if (!pending.ok()) return pending;
    // The new arrays are allocated while the loaded ones still exist, so a batch that does not
    // fit leaves the loaded batch usable (the Simulator keeps its layout when Load fails). Only
    // when the two do not fit together are the loaded arrays freed first.
    char* arena = nullptr;
    if (total > 0) {
      cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&arena), total);
      if (e == cudaErrorMemoryAllocation && arena_ != nullptr) {
        cudaGetLastError();  // allocation failures are not sticky
        Unload();
        e = cudaMalloc(reinterpret_cast<void**>(&arena), total);
      }
      if (e != cudaSuccess) {
        cudaGetLastError();
        return absl::ResourceExhaustedError(
            absl::StrCat("CUDA backend: cannot allocate ", total, " bytes of device memory for ",
                         world_count, " worlds: ", cudaGetErrorString(e)));
      }
    }
    Unload();
    arena_ = arena;
    arena_bytes_ = total;
    // carve the arrays and upload everything (scratch too, so the device starts where the host
    // does)
    size_t offset = 0;
    cudaError_t copy_error = cudaSuccess;
    ForEachArray(host, next, [&](const auto& h, auto*& d) {
      using T = std::remove_cv_t<std::remove_reference_t<decltype(h[0])>>;
      const size_t bytes = h.size() * sizeof(T);
      d = bytes > 0 ? reinterpret_cast<T*>(arena_ + offset) : nullptr;
      if (bytes > 0 && copy_error == cudaSuccess) {
        copy_error = cudaMemcpyAsync(d, h.data(), bytes, cudaMemcpyHostToDevice, stream_);
      }
      offset += AlignUp(bytes);
    });
    AXION_CUDA_RETURN_IF_ERROR(copy_error);
    AXION_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    d_ = next;
    world_count_ = world_count;
    state_bytes_ = state_bytes;
    world_state_bytes_ = world_state_bytes;
    view_ = d_.view(world_count_);
    offsets_.body = host.world_body_offset;
    offsets_.joint = host.world_joint_offset;
    offsets_.dof = host.world_dof_offset;
    offsets_.shape = host.world_shape_offset;
    CudaExec exec;
    exec.stream = stream_;
    exec.max_blocks = std::max(1, multiprocessors_ * (2048 / kBlockSize));
    if (NarrowTeams(world_count_)) {
      exec.solve_team_width = kNarrowSolveWidth;
      exec.factor_team_width = kNarrowFactorWidth;
    }
    exec.row_kinds_split = RowKindsSplit();
    exec.offsets = &offsets_;
    exec.live_rows = {view_.world_row_offset, view_.world_joint_row_count,
                      view_.world_contact_count, view_.world_angular_row_count};
    exec.launch_error = &launch_error_;
    exec.profile = profile_.get();
    exec.body_streams = body_streams_;
    // equal shares of the worlds, each slice with its own loop counters
    slices_.clear();
    const int slice_count = SliceCount(world_count_, use_graphs_ && profile_ == nullptr);
    for (int k = 0; k < slice_count; ++k) {
      Slice slice;
      slice.range = {static_cast<int>(int64_t(world_count_) * k / slice_count),
                     static_cast<int>(int64_t(world_count_) * (k + 1) / slice_count)};
      slice.exec = exec;
      slice.exec.loop_state = loop_state_ + 2 * kMaxLoopDepth * k;
      slices_.push_back(slice);
    }
    return absl::OkStatus();
  }

  absl::Status Upload(BatchStorage& host) override {
    absl::Status s = CheckLayout(host);
    if (!s.ok() || state_bytes_ == 0) return s;
    AXION_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    PackStaging(
        host, d_, [](auto& h, auto& d, auto fn) { ForEachStateArray(h, d, fn); }, staging_.data());
    AXION_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(arena_, staging_.data(), state_bytes_, cudaMemcpyHostToDevice, stream_));
    // The staging buffer is reused by the next transfer.
    AXION_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return absl::OkStatus();
  }

  absl::Status UploadInputs(BatchStorage& host) override {
    absl::Status s = CheckLayout(host);
    if (!s.ok() || state_bytes_ == 0) return s;
    AXION_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    // two small arrays (actuators, and bodies x 6), straight from the host vectors
    AXION_CUDA_RETURN_IF_ERROR(CopyArray(host.actuator_ctrl, d_.actuator_ctrl, kToDevice));
    AXION_CUDA_RETURN_IF_ERROR(CopyArray(host.body_wrench, d_.body_wrench, kToDevice));
    AXION_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return absl::OkStatus();
  }

  absl::Status UploadWorldModels(BatchStorage& host, absl::Span<const int> worlds) override {
    absl::Status s = CheckLayout(host);
    if (!s.ok() || arena_ == nullptr) return s;
    AXION_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    cudaError_t error = cudaSuccess;
    for (int w : worlds) {
      // elements [begin, end) of an array of `width` values per element
      auto copy = [&](const auto& h, auto* d, int begin, int end, int width) {
        const size_t first = static_cast<size_t>(begin) * width;
        const size_t count = static_cast<size_t>(end - begin) * width;
        if (count > 0 && error == cudaSuccess) {
          error = cudaMemcpyAsync(d + first, h.data() + first, count * sizeof(h[0]),
                                  cudaMemcpyHostToDevice, stream_);
        }
      };
#define AXION_UPLOAD(offsets) \
  [&](const auto& h, auto* d, int width) { copy(h, d, offsets[w], offsets[w + 1], width); }
#define AXION_UPLOAD_WORLD(T, name, width) copy(host.name, d_.name, w, w + 1, width);
#define AXION_UPLOAD_BODY(T, name, width) \
  AXION_UPLOAD(host.world_body_offset)(host.name, d_.name, width);
#define AXION_UPLOAD_JOINT(T, name, width) \
  AXION_UPLOAD(host.world_joint_offset)(host.name, d_.name, width);
#define AXION_UPLOAD_DOF(T, name, width) \
  AXION_UPLOAD(host.world_dof_offset)(host.name, d_.name, width);
#define AXION_UPLOAD_ACT(T, name, width) \
  AXION_UPLOAD(host.world_actuator_offset)(host.name, d_.name, width);
#define AXION_UPLOAD_TENDON(T, name, width) \
  AXION_UPLOAD(host.world_tendon_offset)(host.name, d_.name, width);
#define AXION_UPLOAD_TENDON_JOINT(T, name, width) \
  AXION_UPLOAD(host.world_tendon_joint_offset)(host.name, d_.name, width);
#define AXION_UPLOAD_SHAPE(T, name, width) \
  AXION_UPLOAD(host.world_shape_offset)(host.name, d_.name, width);
#define AXION_UPLOAD_RULE(T, name, width) \
  AXION_UPLOAD(host.world_pair_rule_offset)(host.name, d_.name, width);
#define AXION_UPLOAD_ROW(T, name, width) \
  AXION_UPLOAD(host.world_row_offset)(host.name, d_.name, width);
      AXION_WORLD_MODEL(AXION_UPLOAD_WORLD)
      AXION_BODY_MODEL(AXION_UPLOAD_BODY)
      AXION_JOINT_MODEL(AXION_UPLOAD_JOINT)
      AXION_DOF_MODEL(AXION_UPLOAD_DOF)
      AXION_ACTUATOR_MODEL(AXION_UPLOAD_ACT)
      AXION_TENDON_MODEL(AXION_UPLOAD_TENDON)
      AXION_TENDON_JOINT_MODEL(AXION_UPLOAD_TENDON_JOINT)
      AXION_SHAPE_MODEL(AXION_UPLOAD_SHAPE)
      AXION_PAIR_RULE_MODEL(AXION_UPLOAD_RULE)
      AXION_ROW_MODEL(AXION_UPLOAD_ROW)
#undef AXION_UPLOAD_ROW
#undef AXION_UPLOAD_RULE
#undef AXION_UPLOAD_SHAPE
#undef AXION_UPLOAD_TENDON_JOINT
#undef AXION_UPLOAD_TENDON
#undef AXION_UPLOAD_ACT
#undef AXION_UPLOAD_DOF
#undef AXION_UPLOAD_JOINT
#undef AXION_UPLOAD_BODY
#undef AXION_UPLOAD_WORLD
#undef AXION_UPLOAD
    }
    AXION_CUDA_RETURN_IF_ERROR(error);
    // the host vectors must outlive the copies
    AXION_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return absl::OkStatus();
  }

  absl::Status UploadFrames(BatchStorage& host) override {
    absl::Status s = CheckLayout(host);
    if (!s.ok() || arena_ == nullptr) return s;
    AXION_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    AXION_CUDA_RETURN_IF_ERROR(CopyArray(host.shape_pos, d_.shape_pos, kToDevice));
    AXION_CUDA_RETURN_IF_ERROR(CopyArray(host.shape_quat, d_.shape_quat, kToDevice));
    AXION_CUDA_RETURN_IF_ERROR(CopyArray(host.joint_parent_pos, d_.joint_parent_pos, kToDevice));
    AXION_CUDA_RETURN_IF_ERROR(CopyArray(host.joint_parent_quat, d_.joint_parent_quat, kToDevice));
    AXION_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return absl::OkStatus();
  }

  absl::Status DownloadObservables(BatchStorage& host) override {
    absl::Status s = CheckLayout(host);
    if (!s.ok() || state_bytes_ == 0) return s;
    AXION_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    AXION_CUDA_RETURN_IF_ERROR(CopyArray(host.body_q, d_.body_q, kToHost));
    AXION_CUDA_RETURN_IF_ERROR(CopyArray(host.body_u, d_.body_u, kToHost));
    AXION_CUDA_RETURN_IF_ERROR(CopyArray(host.qpos, d_.qpos, kToHost));
    AXION_CUDA_RETURN_IF_ERROR(CopyArray(host.dof_velocity, d_.dof_velocity, kToHost));
    AXION_CUDA_RETURN_IF_ERROR(
        CopyArray(host.actuator_activation, d_.actuator_activation, kToHost));
    AXION_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return absl::OkStatus();
  }

  absl::Status Download(BatchStorage& host) override {
    absl::Status s = CheckLayout(host);
    if (!s.ok() || state_bytes_ == 0) return s;
    AXION_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    AXION_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(staging_.data(), arena_, state_bytes_, cudaMemcpyDeviceToHost, stream_));
    AXION_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    UnpackStaging(
        host, d_, [](auto& h, auto& d, auto fn) { ForEachStateArray(h, d, fn); }, staging_.data());
    return absl::OkStatus();
  }

  absl::Status Step(BatchStorage& host, int max_substeps) override {
    absl::Status s = CheckLayout(host);
    if (!s.ok() || world_count_ == 0 || max_substeps <= 0) return s;
    AXION_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    LoopBounds bounds =
        BatchLoopBounds(host, BatchedNewtonTrips(world_count_), kNewtonWorldsPerSlice);
    if (use_graphs_ && profile_ == nullptr &&
        (graph_exec_ == nullptr || !SameBounds(bounds, graph_bounds_))) {
      absl::Status captured = CaptureGraph(bounds);
      if (!captured.ok()) return captured;
    }
    // the sub-step counts of this call
    std::memcpy(step_pending_.data(), host.world_step_pending.data(),
                world_count_ * sizeof(int32_t));
    AXION_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_.world_step_pending, step_pending_.data(),
                                               world_count_ * sizeof(int32_t),
                                               cudaMemcpyHostToDevice, stream_));
    launch_error_ = cudaSuccess;
    for (int step = 0; step < max_substeps; ++step) {
      if (graph_exec_ != nullptr) {
        AXION_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(graph_exec_, stream_));
      } else {
        // direct launches: the slices one after another on the one stream
        for (Slice& slice : slices_) {
          pipeline::step(slice.exec, view_, slice.range, SliceBounds(bounds, slice));
          AXION_CUDA_RETURN_IF_ERROR(launch_error_);
        }
      }
    }
    // statistics and flags back to the host; the rest of the state stays on the device
    AXION_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(staging_.data(), arena_, world_state_bytes_,
                                               cudaMemcpyDeviceToHost, stream_));
    AXION_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    if (profile_ != nullptr) profile_->Collect(max_substeps);
    UnpackStaging(
        host, d_, [](auto& h, auto& d, auto fn) { ForEachWorldStateArray(h, d, fn); },
        staging_.data());
    return absl::OkStatus();
  }

  size_t device_bytes() const override { return arena_bytes_; }
  size_t device_capacity_bytes() const override {
    size_t free_bytes = 0, total_bytes = 0;
    return cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess ? total_bytes : 0;
  }

 private:
  // Records one sub-step of the current layout into a graph. Pointers, element counts and loop
  // bounds are baked into the graph, so Load and changed bounds capture again.
  absl::Status CaptureGraph(const LoopBounds& bounds) {
    ReleaseGraph();
    // Warm-up: a sub-step with no step pending changes no world (every pass is masked by the
    // world's phase) but loads every kernel and sizes the per-thread local memory (the narrow
    // phase keeps its polytopes there), so the capture below makes no implicit allocation.
    AXION_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(d_.world_step_pending, 0, world_count_ * sizeof(int32_t), stream_));
    launch_error_ = cudaSuccess;
    CudaExec warm = slices_.front().exec;
    warm.warm_up = true;
    pipeline::step(warm, view_, WorldRange{0, world_count_},
                   SliceBounds(bounds, Slice{WorldRange{0, world_count_}, warm}));
    AXION_CUDA_RETURN_IF_ERROR(launch_error_);
    AXION_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    // capture (relaxed: the loops add WHILE nodes and capture their bodies on other streams):
    // each slice a branch on its own stream, forked from stream_ and joined back into it
    AXION_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
    cudaEvent_t fork = slice_events_[kMaxSlices];
    launch_error_ = cudaEventRecord(fork, stream_);
    for (size_t k = 0; k < slices_.size() && launch_error_ == cudaSuccess; ++k) {
      CudaExec exec = slices_[k].exec;
      exec.stream = slice_streams_[k];
      exec.capturing = true;
      exec.note(cudaStreamWaitEvent(exec.stream, fork, 0));
      pipeline::step(exec, view_, slices_[k].range, SliceBounds(bounds, slices_[k]));
      exec.note(cudaEventRecord(slice_events_[k], exec.stream));
      exec.note(cudaStreamWaitEvent(stream_, slice_events_[k], 0));
    }
    cudaGraph_t graph = nullptr;
    cudaError_t end = cudaStreamEndCapture(stream_, &graph);
    cudaError_t e = launch_error_ != cudaSuccess ? launch_error_ : end;
    if (e == cudaSuccess) e = cudaGraphInstantiate(&graph_exec_, graph, 0);
    if (graph != nullptr) cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
      graph_exec_ = nullptr;
      return CudaError(e, "capturing the step into a CUDA graph");
    }
    graph_bounds_ = bounds;
    return absl::OkStatus();
  }

  // One array between its host vector and its device copy (same length), on the stream.
  enum Direction { kToDevice, kToHost };
  cudaError_t CopyArray(std::vector<Real>& host, Real* device, Direction direction) {
    if (host.empty()) return cudaSuccess;
    const size_t bytes = host.size() * sizeof(Real);
    return direction == kToDevice
               ? cudaMemcpyAsync(device, host.data(), bytes, cudaMemcpyHostToDevice, stream_)
               : cudaMemcpyAsync(host.data(), device, bytes, cudaMemcpyDeviceToHost, stream_);
  }

  // Frees the loaded batch: afterwards the backend holds no worlds.
  void Unload() {
    ReleaseGraph();
    if (arena_ != nullptr) cudaFree(arena_);
    arena_ = nullptr;
    arena_bytes_ = 0;
    d_ = DeviceArrays{};
    view_ = BatchView{};
    slices_.clear();
    offsets_ = HostOffsets{};
    world_count_ = 0;
    state_bytes_ = 0;
    world_state_bytes_ = 0;
  }

  void ReleaseGraph() {
    if (graph_exec_ != nullptr) cudaGraphExecDestroy(graph_exec_);
    graph_exec_ = nullptr;
  }

  // The host's arrays must have the layout that was loaded.
  absl::Status CheckLayout(BatchStorage& host) {
    size_t bytes =
        SegmentBytes(host, d_, [](auto& h, auto& d, auto fn) { ForEachStateArray(h, d, fn); });
    if (host.world_count() != world_count_ || bytes != state_bytes_) {
      return absl::InternalError(
          absl::StrCat("CUDA backend: the host batch (", host.world_count(), " worlds, ", bytes,
                       " state bytes) does not match the loaded one (", world_count_, " worlds, ",
                       state_bytes_, " state bytes)"));
    }
    return absl::OkStatus();
  }

  // A range of worlds stepped as one branch, and its executor (loop counters of its own).
  struct Slice {
    WorldRange range;
    CudaExec exec;
  };
  // The step's bounds for one slice: the count rule of the Newton trips over the slice's worlds
  // (BatchedNewtonWorlds), unless the environment set it.
  LoopBounds SliceBounds(const LoopBounds& bounds, const Slice& slice) const {
    LoopBounds b = bounds;
    if (b.batched_newton_worlds == kNewtonWorldsPerSlice) {
      b.batched_newton_worlds = BatchedNewtonWorlds(slice.range.end - slice.range.begin,
                                                    static_cast<int>(slices_.size()));
    }
    return b;
  }

  const int device_;
  const int multiprocessors_;
  const bool use_graphs_ = GraphsEnabled();
  cudaStream_t body_streams_[kMaxLoopDepth] = {};  // loop bodies are captured on these
  cudaStream_t slice_streams_[kMaxSlices] = {};    // each slice's branch is captured on one
  cudaEvent_t slice_events_[kMaxSlices + 1] = {};  // each slice's join, then the fork
  int* loop_state_ = nullptr;                      // (kMaxSlices x 2 x kMaxLoopDepth) see CudaExec
  std::unique_ptr<PassProfile> profile_ =
      ProfileEnabled() ? std::make_unique<PassProfile>() : nullptr;
  cudaStream_t stream_ = nullptr;
  char* arena_ = nullptr;  // every device array of the batch
  size_t arena_bytes_ = 0;
  size_t state_bytes_ = 0;        // head of the arena moved by Upload / Download
  size_t world_state_bytes_ = 0;  // head of the state segment returned by every Step
  int world_count_ = 0;
  DeviceArrays d_;
  BatchView view_;
  HostOffsets offsets_;
  std::vector<Slice> slices_;  // (1 to kMaxSlices) contiguous, covering the batch
  cudaError_t launch_error_ = cudaSuccess;
  PinnedBuffer staging_;       // (state_bytes_) same layout as the device state segment
  PinnedBuffer step_pending_;  // (world_count) sub-steps requested for each world
  cudaGraphExec_t graph_exec_ = nullptr;
  LoopBounds graph_bounds_;
};

// Looked up once: the answer cannot change while the process runs.
struct DeviceProbe {
  int device_count = 0;
  cudaError_t error = cudaSuccess;
};
const DeviceProbe& Probe() {
  static const DeviceProbe probe = [] {
    DeviceProbe p;
    p.error = cudaGetDeviceCount(&p.device_count);
    if (p.error != cudaSuccess) {
      p.device_count = 0;
      cudaGetLastError();  // clear the error so later runtime calls do not see it
    }
    return p;
  }();
  return probe;
}

}  // namespace cuda_backend

bool CudaDevicePresent() { return cuda_backend::Probe().device_count > 0; }

absl::StatusOr<std::unique_ptr<ExecutionBackend>> MakeCudaBackend() {
  const cuda_backend::DeviceProbe& probe = cuda_backend::Probe();
  if (probe.device_count == 0) {
    std::string why = probe.error == cudaSuccess ? std::string("no CUDA device was found")
                                                 : absl::StrCat(cudaGetErrorName(probe.error), ": ",
                                                                cudaGetErrorString(probe.error));
    return absl::FailedPreconditionError(absl::StrCat(
        "the CUDA backend was requested, but no CUDA device is available (", why,
        "); choose the cpu backend, or auto to fall back to the CPU when there is no device"));
  }
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return cuda_backend::CudaError(e, "cudaGetDevice");
  int multiprocessors = 0;
  e = cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return cuda_backend::CudaError(e, "cudaDeviceGetAttribute");
  auto backend = std::make_unique<cuda_backend::CudaBackend>(device, multiprocessors);
  absl::Status s = backend->Init();
  if (!s.ok()) return s;
  return std::unique_ptr<ExecutionBackend>(std::move(backend));
}

}  // namespace axion
