// World snapshots: the exact bytes of the state a world needs to continue bit-identically.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "axion/model.h"
#include "batch_storage.h"

namespace axion {

// `mocap_pose`: the world's mocap body poses (WorldLayout::mocap_pose; empty: the initial ones).
std::string EncodeSnapshot(const BatchStorage& host, int world, const Model& model,
                           uint64_t step_count, const std::vector<Pose>& mocap_pose);
// Writes the snapshot into world `world` of `host` and its mocap poses into `mocap_pose`
// (model.mocap_count() of them); returns its step count.
absl::StatusOr<uint64_t> DecodeSnapshot(std::string_view bytes, const Model& model, int world,
                                        BatchStorage& host, std::vector<Pose>* mocap_pose);

}  // namespace axion
