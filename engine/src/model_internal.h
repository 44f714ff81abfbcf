// Model details shared by model.cc and the batch packing, not part of the public API.
#pragma once

#include <array>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "axion/model.h"
#include "axion/simulator.h"
#include "axion/state.h"
#include "kernels_tendon_path.h"

namespace axion {

// One constraint row of a joint, as laid out in the batch.
struct JointRowLayout {
  RowKind kind;
  int axis;  // world axis (anchor), parent axis (axis align) or joint-frame axis 0..5
  int dof;   // DOF index within the joint (limit and drive rows), else -1
};

// The polyhedron of a convex-hull shape, built when the model was compiled; null for other
// shapes. Packing a batch takes it from here rather than building it again.
const HullData* ShapeHull(const Model& model, int shape);
// Whether two hull shapes' points are the same, in the same order: then so are their hulls.
bool SamePoints(const std::vector<Vec3>& a, const std::vector<Vec3>& b);

// Checks every field of the solver options (errors name the field and value).
absl::Status ValidateSolverOptions(SolverOptions* options);

// Joint-frame axes (0..5) that are DOFs of the joint, in DOF order.
std::vector<int> JointDofAxes(const JointDesc& joint);
std::array<AxisMode, 6> JointAxisModes(const JointDesc& joint);
// True when the joint's DOFs need drive rows (stiffness, damping, armature or a position or
// velocity actuator).
bool JointHasDrive(const ModelDesc& desc, int joint_index);
// Whether the actuator has an activation (a muscle, or dynamics): state of its world.
inline bool HasActivation(const ActuatorDesc& actuator) {
  return actuator.type == ActuatorType::kMuscle || actuator.dynamics != ActuatorDynamics::kNone;
}
// Whether `value` can be the actuator's activation: finite where it has one, 0 where not.
inline bool ValidActivation(const ActuatorDesc& actuator, Real value) {
  return HasActivation(actuator) ? std::isfinite(value) : value == 0;
}
std::vector<JointRowLayout> JointRows(const JointDesc& joint, bool has_drive);
// True when the joint holds its child's rotation rigidly to the world: a rigid joint to the
// world (not to a mocap body) whose three angular axes are locked (slides only, or welded). Its
// child then carries no angular lock rows; it is given no rotational freedom instead (zero inverse
// inertia, see BatchView::body_rotation_fixed).
bool JointFixesRotation(const JointDesc& joint);
// The group/mask filter alone: shapes on different bodies, not both planes, each in a group
// the other's mask takes (Model::Compile's exceptions, the pair rules, come on top).
bool ShapesPassFilter(const ShapeDesc& a, const ShapeDesc& b);
// True when `joint` holds its child's rotation (JointFixesRotation) and its translation along the
// normal of `plane`, a static plane: the child can neither approach nor leave the plane, and
// Model::Compile leaves their shape pairs out. Reads child_frame (Compile resolves
// JointDesc::axis into it first).
bool JointHoldsChildOffPlane(const ModelDesc& desc, const JointDesc& joint, const ShapeDesc& plane);
// The shape pairs (child's shape, parent side's shape) of joints that hold their anchor in
// place in both bodies (hinges, balls, universals on one anchor, generic joints with locked
// slides) where, at the bodies' initial poses, one shape holds the anchor deeper than the other
// lies from it: convex, each keeps the ball about the anchor it holds however the joint turns, so
// the two overlap in every configuration, and their contact could never be resolved and could
// only push against the joint. Model::Compile leaves them out (MuJoCo computes such contacts
// with the world, softly: a robot's first link inside the static base it turns on, dm_control's
// CMU humanoid hanging from its static pelvis). Each pair once, of shapes in some group and
// meeting some mask, whether or not the filter passes the pair; `joint_of` (optional) gets each
// pair's joint. Reads child_frame (Compile resolves JointDesc::axis into it first). Hull shapes'
// hulls are built as needed, each once, unless `built_hulls` (one per shape, as Compile builds
// them) gives them.
std::vector<std::array<int, 2>> AnchorOverlapPairs(
    const ModelDesc& desc, std::vector<int>* joint_of = nullptr,
    const std::vector<std::shared_ptr<const HullData>>* built_hulls = nullptr);
// DOF `dof`'s dry friction (JointDesc::friction_loss or its per-DOF override).
Real JointFrictionLoss(const JointDesc& joint, int dof);
// A limited ball joint's cone limit (rad, upper[0]); 0 for every other joint.
Real JointConeLimit(const JointDesc& joint);
// The rows of tendon `tendon`, in layout order: its limits (where limited), its drive (a
// stiffness, a damping or a servo actuator on it), its dry friction, its hold. Each takes
// TendonSides(...).slots() slots.
std::vector<RowKind> TendonRows(const ModelDesc& desc, int tendon);
// The bodies a tendon's rows act on (model indices), two per row slot in slot order, -1 where
// none: a fixed tendon's first coordinate's joint child and parent (the parent -1 for the
// world), then the bodies of its other coordinates' joints not listed yet, in their order, the
// static world never; a spatial tendon's path bodies (TendonPathLayout::sides). At least two
// slots (four sides), so a tendon over one or two joints lays out as it always has.
// joint_sides: per fixed-tendon coordinate, the sides of its joint's child and parent (-1:
// the world).
struct TendonSideLayout {
  std::vector<int> sides;
  std::vector<std::array<int, 2>> joint_sides;
  int slots() const { return static_cast<int>(sides.size()) / 2; }
};
TendonSideLayout TendonSides(const ModelDesc& desc, int tendon);
// The tendon's spring rest length: TendonDesc::spring_length, or its length with every joint
// at its reference (a spatial tendon's at the bodies' initial poses).
Real TendonSpringLength(const ModelDesc& desc, const TendonDesc& tendon);
// Its length in the initial configuration, the same without spring_length.
Real TendonInitialLength(const ModelDesc& desc, const TendonDesc& tendon);
// A spatial tendon's path in the kernels' layout (kernels::TendonPath, one tendon's slice of
// BatchView::tendon_path_*) with the model's body indices: sites and shapes in their body's
// centre-of-mass frame, the bodies its Jacobian is on (its rows' sides) in order of first
// appearance along the path, -1 past them.
struct TendonPathLayout {
  std::vector<int32_t> kind, body, side_body;
  std::vector<Real> pos, quat, size, side_pos;
  std::array<int32_t, 4> sides{-1, -1, -1, -1};
  // The kernels' view of it (for poses of the model's bodies).
  kernels::TendonPath view() const {
    return {static_cast<int>(kind.size()),
            kind.data(),
            body.data(),
            pos.data(),
            quat.data(),
            size.data(),
            side_body.data(),
            side_pos.data(),
            sides.data()};
  }
};
TendonPathLayout LayTendonPath(const ModelDesc& desc, const TendonDesc& tendon);
// A spatial tendon's length and rate at body frames `bodies` (BodyState: poses and velocities of
// the body frames' origins); kinematics.cc.
absl::StatusOr<std::pair<Real, Real>> SpatialTendonState(const Model& model, int tendon,
                                                         const BodyState& bodies);
// The distinct bodies (not the world) a spatial tendon's sites and wrapping shapes lie on.
std::vector<int> TendonPathBodies(const TendonDesc& tendon);

}  // namespace axion
