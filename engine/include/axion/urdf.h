// URDF importer: reads a robot description into an axion::ModelDesc.
//
// Conversion rules:
//  - Each <link> with mass becomes a BodyDesc: mass, centre of mass and the inertia tensor of
//    <inertial> (rotated from the <origin> rpy frame into the link frame). Its pose is the
//    world pose with every joint at zero, composed from the root through the joint origins.
//  - The root link is welded to the world by default (fixed base): it becomes static and its
//    collision shapes are world shapes. With UrdfOptions::floating_base it is a free body.
//  - A link without <inertial> (or with zero mass) reached through a fixed joint is a frame, not
//    a body: it is merged into its parent (its shapes and child joints move to the parent).
//    Such a link behind a moving joint is an error.
//  - <collision> geometry: box, sphere, cylinder (along z, as in Axion), and mesh: an STL
//    (binary or ASCII) or OBJ file whose (scaled) vertices become a ShapeType::kConvexHull.
//    Mesh paths are relative to the URDF's directory; "package://NAME/REST" is looked up as
//    DIR/NAME/REST and DIR/REST for each DIR in UrdfOptions::package_dirs, then the URDF's
//    directory and its parents. <visual> is ignored (one warning).
//  - Joints: revolute -> kRevolute (limited), continuous -> kRevolute (unlimited), prismatic ->
//    kPrismatic, fixed -> kFixed, floating -> no joint (a free body), planar -> kGeneric with
//    the two in-plane translations and the rotation about the normal free. The joint frame is
//    the child link frame, its x axis along <axis>. <dynamics damping> becomes the drive's
//    damping; friction and <limit velocity> are not enforced (warnings).
//  - Actuators: one kEffort actuator (gear 1) per revolute, continuous and prismatic joint,
//    named after the joint, with ctrl range [-effort, effort] when <limit effort> is positive
//    (unbounded otherwise).
//  - All shapes collide with each other except those of links joined directly by a joint;
//    friction is Material's default.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "axion/mjcf.h"  // ImportResult
#include "axion/model.h"

namespace axion {

struct UrdfOptions {
  bool floating_base = false;             // false: the root link is welded to the world
  std::vector<std::string> package_dirs;  // where package:// mesh paths are looked up
};

absl::StatusOr<ImportResult> LoadUrdfFile(const std::string& path, const UrdfOptions& options = {});
// `base_dir` resolves relative mesh paths ("" = current directory).
absl::StatusOr<ImportResult> LoadUrdfString(std::string_view xml, const std::string& base_dir,
                                            const UrdfOptions& options = {});

}  // namespace axion
