// Translation between the proto scene description (axion.v1.ModelDescription) and the engine's
// axion::ModelDesc, and import of MJCF / URDF scenes.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "axion/mjcf.h"
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
// against `asset_dir` (empty: none allowed by the importer); an MJCF file may make at most
// `max_bodies` bodies (MjcfOptions::max_bodies: a composite's count is checked before it is
// expanded). Errors are INVALID_ARGUMENT naming the element and field.
absl::StatusOr<ImportedScene> ImportScene(const v1::Scene& scene, const std::string& asset_dir,
                                          int max_bodies);
// Whether an MJCF or URDF scene names other files (meshes, includes) for the importer to read.
bool SceneReadsFiles(const v1::Scene& scene);

// Proto -> engine. Checks what the proto encoding itself can get wrong (unset enums, array
// lengths); value ranges are left to Model::Compile, which names the element and value.
absl::StatusOr<ModelDesc> ModelDescFromProto(const v1::ModelDescription& proto);
// Engine -> proto; ModelDescFromProto(ModelDescToProto(d)) == d exactly (doubles are kept).
void ModelDescToProto(const ModelDesc& desc, v1::ModelDescription* proto);

// Applies the set fields of `overrides` to `options`.
absl::Status ApplySolverOverrides(const v1::SolverOptions& overrides, SolverOptions* options);
// All fields set.
void SolverOptionsToProto(const SolverOptions& options, v1::SolverOptions* proto);

// What FileJointCoordinates and ReadFileSensors need of a scene's import (its source joints,
// bodies and sensors), rebuilt
// from the SourceMap the server keeps, which is all a world restored from --snapshot_dir has.
// FAILED_PRECONDITION, saying why, where the map cannot give file coordinates: it is empty (a
// scene given as a ModelDescription has no file) or lacks joint kinds (stored by an older
// server). The caller prefixes the world.
absl::StatusOr<ImportResult> SourceMapToImport(const v1::SourceMap& source);

// One world's state in its scene file's own coordinates (mjcf.h, FileJointCoordinates: MuJoCo's
// qpos and qvel for MJCF). UNIMPLEMENTED on a server built without the importers.
absl::StatusOr<FileCoordinates> FileCoordinatesOf(const ImportResult& file, const Model& model,
                                                  const BodyState& bodies,
                                                  const JointState& joints);

// One world's MJCF sensors (mjcf.h, ReadFileSensors: MuJoCo's sensordata for its state), in
// `file`'s order. UNIMPLEMENTED on a server built without the importers.
absl::StatusOr<std::vector<Real>> SensorDataOf(const ImportResult& file, const Model& model,
                                               const Simulator& simulator, WorldId world);

// Names, order and array sizes of a world of `model` with the given effective options, where
// the bodies and joints of its source file went, and where their coordinates lie in the file
// coordinates (`file`: SourceMapToImport(source); none where it is an error).
void DescribeModel(const Model& model, const SolverOptions& options, int contact_capacity,
                   const v1::SourceMap& source, const absl::StatusOr<ImportResult>& file,
                   v1::WorldDescription* description);

}  // namespace axion::server
