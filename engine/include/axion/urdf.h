// URDF importer: reads a robot description into an axion::ModelDesc.
//
// Conversion rules:
//  - Each link on a moving joint (and a floating root) becomes a BodyDesc: mass, centre of mass
//    and the inertia tensor of <inertial> (rotated from the <origin> rpy frame into the link
//    frame). Its pose is the world pose with every joint at zero, composed from the root
//    through the joint origins.
//  - The root link is welded to the world by default (fixed base): it becomes static and its
//    collision shapes are world shapes. With UrdfOptions::floating_base it is a free body,
//    unless it is named "world" (ROS and Gazebo's name for the world frame itself) or has no
//    mass, its own or its fixed links' (pybullet fixes a base of mass 0: its planes, tables and
//    trays; a warning says so).
//  - A link reached through a fixed joint is one rigid body with its parent: its mass, centre
//    of mass and inertia are added to the parent's, and its shapes and child joints move to the
//    parent (one warning says so). Exact, and it spares the solver a body of its own held by six
//    rows: robot files fix 1 g sensor frames to 5 kg trunks, which made a badly conditioned
//    system. A link that moves needs mass, its own or its fixed links' (a massless ROS
//    base_footprint carries its base_link); one with neither is an error.
//    ImportResult::source_bodies says, for every link in file order, which body carries it and
//    where.
//  - Attributes: a ROS substitution arg a xacro run left behind, "$(optenv NAME DEFAULT)",
//    takes its default (the process environment is never read: a server must not hand its own
//    to a client's file); other substitution args are errors. A vector of more than three
//    numbers is read by its first three, as pybullet reads it. Both with a warning.
//  - Inertias: not positive definite is an error; principal moments that break the triangle
//    inequality are an error too, or (UrdfOptions::balance_inertia) take their mean.
//    UrdfOptions::inertia_from_collision takes them from the collision geometry instead.
//  - <collision> geometry: box, sphere, cylinder (along z, as in Axion), and mesh: an STL
//    (binary or ASCII), OBJ or COLLADA (.dae: the triangles its scene places, in its <unit>'s
//    metres, its <up_axis> left alone as RViz, Gazebo and pybullet leave it) file whose
//    (scaled) vertices become a ShapeType::kConvexHull. Other geometry is skipped with a
//    warning. Mesh paths are relative to the URDF's directory ("file://" dropped);
//    "package://NAME/REST" is looked up as DIR/NAME/REST and DIR/REST for each DIR in
//    UrdfOptions::package_dirs, then as REST in package NAME found below a DIR (a directory
//    holding a package.xml that names NAME, up to 4 levels down, as ROS finds a workspace's
//    packages), then in the URDF's directory and up to three of its parents. <visual> is ignored
//    (one warning), as are elements the importer does not know
//    (<transmission>, <gazebo>, ...; one warning per kind).
//  - Joints: revolute -> kRevolute and prismatic -> kPrismatic, limited by the <limit> they
//    need (one whose lower is above its upper leaves the joint unlimited, as pybullet does,
//    with a warning), continuous -> kRevolute (unlimited), fixed -> merged (above), floating ->
//    no joint (a free body), planar -> kGeneric with the two in-plane translations and the
//    rotation about the normal (<axis>) free, spherical (pybullet's extension) -> kBall at the
//    child link's origin, its limits ignored (warnings). The joint frame is the child link
//    frame, its x axis along <axis> (ignored for joints without one).
//    <dynamics damping> becomes the drive's damping and <dynamics friction> the joint's
//    JointDesc::friction_loss (dry friction); <limit velocity> is not enforced (warning).
//  - <mimic joint multiplier offset>: the joint's coordinate follows its leader's, q =
//    multiplier q_leader + offset, held exactly by a JointCouplingDesc (the leader feels the
//    follower's load). Only revolute, continuous and prismatic joints couple; any other mimic is
//    ignored with a warning.
//  - Actuators: one kEffort actuator (gear 1) per revolute, continuous and prismatic joint but
//    mimic joints, named after the joint, with ctrl range [-effort, effort] when <limit effort>
//    is positive (unbounded otherwise); kPosition servos instead with UrdfOptions::position_kp,
//    their ctrl within the joint's limits and their force within [-effort, effort] when
//    <limit effort> is positive.
//  - Shapes of the robot's links do not collide with each other; they collide with everything
//    else (collision group kUrdfRobotGroup, masked out of their own mask). With
//    UrdfOptions::self_collision they keep ShapeDesc's default group and mask: links joined
//    directly by a joint then do not collide (but a fixed base's shapes and the links on moving
//    joints to it do), nor do links that touch or overlap in the file's pose. Friction is
//    Material's default.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "axion/mjcf.h"  // ImportResult
#include "axion/model.h"

namespace axion {

// Collision group bit of a URDF robot's shapes (UrdfOptions::self_collision).
inline constexpr uint32_t kUrdfRobotGroup = 1u << 1;

struct UrdfOptions {
  bool floating_base = false;             // false: the root link is welded to the world (a root
                                          // link named "world" is the world either way)
  std::vector<std::string> package_dirs;  // where package:// mesh paths are looked up (a ROS
                                          // workspace's src/, ROS_PACKAGE_PATH's entries)
  // A link inertia whose principal moments break the triangle inequality (no real body has
  // such moments) is an error; true: its moments are set to their mean, as MuJoCo's
  // compiler/balanceinertia does, with a warning naming the link.
  bool balance_inertia = false;
  // Whether the robot's links collide with each other (those joined directly by a joint never
  // do, but for links on a moving joint to a fixed base, which meet the base's shapes). Off, as
  // in pybullet and Gazebo: collision geometry is often coarser than the links (convex hulls of
  // concave meshes). On, pairs that touch or overlap in the file's own pose
  // (within the contact margin) never collide either (MoveIt's rule; a warning counts them):
  // no motion of the chain separates them, and they would be thrown apart at the first step.
  bool self_collision = false;
  // Every link's inertia from its collision geometry (a solid of uniform density carrying the
  // link's mass, about the file's centre of mass) instead of <inertia>, as pybullet does by
  // default: files written for it often leave <inertia> zero.
  bool inertia_from_collision = false;
  // > 0: each revolute, continuous and prismatic joint gets a position servo with these gains
  // (N m / rad and N m s / rad, or N / m and N s / m) instead of an effort actuator; its ctrl
  // is the target position, within the joint's limits where it has them. Learning to walk in
  // joint targets is the usual way to drive a legged robot. The servo's effort is bounded by
  // <limit effort> where that is positive.
  Real position_kp = 0;
  Real position_kv = 0;
  // Non-empty: every mesh file must lie within this directory once symbolic links and '..' are
  // resolved, or loading fails naming it (as MjcfOptions::file_root).
  std::string file_root;
};

absl::StatusOr<ImportResult> LoadUrdfFile(const std::string& path, const UrdfOptions& options = {});
// `base_dir` resolves relative mesh paths ("" = current directory).
absl::StatusOr<ImportResult> LoadUrdfString(std::string_view xml, const std::string& base_dir,
                                            const UrdfOptions& options = {});

}  // namespace axion
