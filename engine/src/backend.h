// Execution backends behind the Simulator. The host BatchStorage is the source of truth for
// layout and the staging area for state access; a device backend mirrors it in device memory.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "batch_storage.h"
#include "pipeline.h"

namespace axion {

class ExecutionBackend {
 public:
  virtual ~ExecutionBackend() = default;
  // The layout changed (worlds created or destroyed): (re)allocate and upload everything.
  virtual absl::Status Load(BatchStorage& host) = 0;
  // The host wrote state (poses, resets, restores): upload the state arrays.
  virtual absl::Status Upload(BatchStorage& host) = 0;
  // The host wrote only the step's inputs, actuator_ctrl and body_wrench, which no step
  // changes (the host's copy is always the current one): upload those two arrays alone.
  virtual absl::Status UploadInputs(BatchStorage& host) = 0;
  // The host rewrote the model arrays of `worlds` (batch indices) in place, the layout and the
  // hulls unchanged (Simulator::SetWorldModels): upload those worlds' parts of them.
  virtual absl::Status UploadWorldModels(BatchStorage& host, absl::Span<const int> worlds) = 0;
  // Mocap bodies moved: upload the shape poses and the joints' parent frames (shape_pos,
  // shape_quat, joint_parent_pos, joint_parent_quat), every world's at once.
  virtual absl::Status UploadFrames(BatchStorage& host) = 0;
  // Bring the host's state arrays up to date with the backend's.
  virtual absl::Status Download(BatchStorage& host) = 0;
  // Bring only what body, joint and actuator state reads need up to date: body_q, body_u,
  // qpos, dof_velocity and actuator_activation (a few per cent of the state; contacts and
  // impulses stay behind).
  virtual absl::Status DownloadObservables(BatchStorage& host) = 0;
  // Runs up to `max_substeps` steps; world w takes host.world_step_pending[w] of them. On
  // return the host's world arrays (statistics, flags) are current; other state may be left on
  // the device until Download.
  virtual absl::Status Step(BatchStorage& host, int max_substeps) = 0;
  virtual size_t device_bytes() const = 0;
  // Total memory of the device the worlds live on; 0 for the CPU backend (host memory).
  virtual size_t device_capacity_bytes() const = 0;
};

// Loop bounds of a step over the whole batch: the largest of the worlds' iteration limits, and
// the backend's own rule for the Newton trips taken as passes over the batch before the worlds
// still iterating finish alone: at most batched_newton_trips of them, each while at least
// batched_newton_worlds worlds of the range iterate (0: a count the backend sets per range; the
// environment's AXION_BATCHED_NEWTON_TRIPS and AXION_BATCHED_NEWTON_WORLDS override both).
LoopBounds BatchLoopBounds(const BatchStorage& host,
                           int batched_newton_trips = LoopBounds::kAllNewtonTrips,
                           int batched_newton_worlds = 1);

std::unique_ptr<ExecutionBackend> MakeCpuBackend(int threads);
#if defined(AXION_WITH_CUDA)
// Fails with FAILED_PRECONDITION when no CUDA device is present.
absl::StatusOr<std::unique_ptr<ExecutionBackend>> MakeCudaBackend();
bool CudaDevicePresent();
#endif

}  // namespace axion
