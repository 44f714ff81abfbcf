// Translation between worlds' physical parameters as the API carries them
// (axion.v1.WorldParameters: packed float32 arrays over worlds) and the engine's ModelDesc and
// SolverOptions they live in.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "axion/model.h"
#include "axion/v1/axion.pb.h"

namespace axion::server {

// One world's description and options as parameters are read from and written to.
struct ParameterTarget {
  uint64_t world_id = 0;  // for error messages
  ModelDesc* desc = nullptr;
  SolverOptions* options = nullptr;
};

// Appends one world's parameters (every array) to `out`.
void AppendParameters(const ModelDesc& desc, const SolverOptions& options,
                      v1::WorldParameters* out);

// Writes the non-empty arrays of `parameters` into `worlds` (in order): sizes checked against
// the worlds' element counts, every value finite and within its range (errors name the array,
// world, element and value). A value equal to the float32 of the world's own keeps the world's.
// Masses scale their body's inertia. On error the targets may be partly written: callers write
// into copies. `changes_model` / `changes_options` tell what the request touches.
absl::Status ApplyParameters(const v1::WorldParameters& parameters,
                             absl::Span<const ParameterTarget> worlds, bool* changes_model,
                             bool* changes_options);

}  // namespace axion::server
