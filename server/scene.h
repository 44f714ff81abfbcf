// Translation between the proto scene description (axion.v1.ModelDescription) and the engine's
// axion::ModelDesc, and import of MJCF / URDF scenes.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "axion/model.h"
#include "axion/simulator.h"
#include "axion/v1/axion.pb.h"

namespace axion::server {

struct ImportedScene {
  ModelDesc model;
  std::vector<std::string> warnings;  // importer warnings, passed back to the client
  v1::SourceMap source;               // where the file's bodies and joints went (MJCF / URDF)
};

// Imports `scene` (MJCF, URDF or a ModelDescription). File references in MJCF / URDF resolve
// against `asset_dir` (empty: none allowed by the importer). Errors are INVALID_ARGUMENT naming
// the element and field.
absl::StatusOr<ImportedScene> ImportScene(const v1::Scene& scene, const std::string& asset_dir);

// Proto -> engine. Checks what the proto encoding itself can get wrong (unset enums, array
// lengths); value ranges are left to Model::Compile, which names the element and value.
absl::StatusOr<ModelDesc> ModelDescFromProto(const v1::ModelDescription& proto);
// Engine -> proto; ModelDescFromProto(ModelDescToProto(d)) == d exactly (doubles are kept).
void ModelDescToProto(const ModelDesc& desc, v1::ModelDescription* proto);

// Applies the set fields of `overrides` to `options`.
absl::Status ApplySolverOverrides(const v1::SolverOptions& overrides, SolverOptions* options);
// All fields set.
void SolverOptionsToProto(const SolverOptions& options, v1::SolverOptions* proto);

// Names, order and array sizes of a world of `model` with the given effective options, and
// where the bodies and joints of its source file went.
void DescribeModel(const Model& model, const SolverOptions& options, int contact_capacity,
                   const v1::SourceMap& source, v1::WorldDescription* description);

}  // namespace axion::server
