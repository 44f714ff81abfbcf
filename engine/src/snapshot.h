// World snapshots: the exact bytes of the state a world needs to continue bit-identically.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "axion/model.h"
#include "batch_storage.h"

namespace axion {

std::string EncodeSnapshot(const BatchStorage& host, int world, const Model& model,
                           uint64_t step_count);
// Writes the snapshot into world `world` of `host`; returns its step count.
absl::StatusOr<uint64_t> DecodeSnapshot(std::string_view bytes, const Model& model, int world,
                                        BatchStorage& host);

}  // namespace axion
