// What a world is: the scene description users build (directly or through the MJCF/URDF
// importers) and the validated, constant Model compiled from it.
//
// Frames. Every body has a body frame (the frame users place it with and attach shapes and
// joint anchors to) and a centre of mass `com` given in that frame. Poses in the State are the
// pose of the body frame translated to the centre of mass ("inertial pose"), because the
// Newton-Euler equations are simplest there; Simulator::GetBodyState converts back.
//
// Units are SI throughout: metres, kilograms, seconds, radians, newtons.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "axion/math.h"

namespace axion {

// Index of the static world "body" in joint and shape descriptions.
inline constexpr int kWorldBody = -1;

struct Pose {
  Vec3 pos;   // translation (m)
  Quat quat;  // rotation (unit quaternion w, x, y, z)
};

// a * b: pose b, given in the frame that pose a places, in the frame a is given in.
inline Pose compose(const Pose& a, const Pose& b) {
  return {a.pos + rotate(a.quat, b.pos), a.quat * b.quat};
}

struct BodyDesc {
  std::string name;
  Real mass = 1;                     // (kg), > 0 and finite
  Mat33 inertia = mat33_identity();  // about the centre of mass, in the body frame (kg m^2), SPD
  Vec3 com;                          // centre of mass in the body frame (m)
  Pose pose;                         // initial pose of the body frame in the world frame
  Vec3 linear_velocity;              // initial velocity of the centre of mass, world frame (m/s)
  Vec3 angular_velocity;             // initial angular velocity, world frame (rad/s)
  // Whether the fluid around the bodies (SolverOptions::fluid_density, fluid_viscosity) acts on
  // it; the MJCF importer's light chain bodies, which stand for no body of the file, say false.
  bool in_fluid = true;
};

enum class ShapeType : int32_t {
  kPlane = 0,       // infinite half-space below the local xy plane (normal +z); world body only
  kSphere = 1,      // size.x = radius
  kCapsule = 2,     // size.x = radius, size.y = half length of the segment along local z
  kBox = 3,         // size = half extents
  kCylinder = 4,    // size.x = radius, size.y = half length along local z
  kConvexHull = 5,  // vertices (body-local, relative to the shape pose); size unused
  kHeightField = 6  // terrain: heights over the local xy plane (ShapeDesc::heightfield), solid
                    // down to z = -size.z; size.x, size.y = half extents of the grid; static
                    // only (the world body or a mocap body)
};

// A height field's grid (ShapeType::kHeightField), MuJoCo's hfield layout: rows run along the
// shape frame's y axis and columns along x, each grid cell split into two triangles along its
// diagonal from (row, col) to (row + 1, col + 1). Each triangle is the top of a prism reaching
// down to the base z = -size.z, and shapes collide with those prisms, so terrain is solid below
// its surface (a shape that got under it is pushed back up, not through).
// Points per side of a height field's grid at most: 4096 x 4096 heights are 134 MB (worlds of
// the same grid share one copy).
inline constexpr int kMaxHeightFieldSide = 4096;

struct HeightFieldDesc {
  int rows = 0;  // >= 2; row r lies at y = -size.y + 2 size.y r / (rows - 1)
  int cols = 0;  // >= 2; column c lies at x = -size.x + 2 size.x c / (cols - 1)
  // (rows x cols) row-major: heights[r * cols + c] = z of the surface at (row r, column c) in
  // the shape frame (m); each finite and above the base, -size.z
  std::vector<Real> heights;
};

// Surface material. Two materials in contact combine their friction by
// SolverOptions::friction_combine (by default the geometric mean sqrt(mu_a * mu_b), as Bullet and
// PhysX do, so a frictionless surface stays frictionless) and restitution = max(e_a, e_b) (the
// bouncier surface wins, as Box2D does).
struct Material {
  Real friction = 0.5;   // Coulomb coefficient mu, >= 0
  Real restitution = 0;  // e in [0, 1]; used by the velocity-level contact formulation
  // Torsional and rolling friction (m, >= 0; MuJoCo's second and third friction values): a
  // contact resists spinning about its normal with a torque up to torsional_friction times its
  // normal force, and rolling with one up to rolling_friction times it, where its contact
  // dimension is 4 (torsion) or 6 (both); combined as `friction` is.
  Real torsional_friction = 0;
  Real rolling_friction = 0;
};

struct ShapeDesc {
  std::string name;
  int body = kWorldBody;  // owning body index, or kWorldBody for static geometry
  // Static geometry only: the mocap body (ModelDesc::mocap_bodies) it is on, its pose then in
  // that body's frame; -1: fixed in the world.
  int mocap = -1;
  ShapeType type = ShapeType::kSphere;
  Pose pose;                    // shape frame in the body frame (in the world frame for kWorldBody)
  Vec3 size;                    // see ShapeType
  std::vector<Vec3> vertices;   // kConvexHull only: at least 4 non-coplanar points
  HeightFieldDesc heightfield;  // kHeightField only
  Material material;
  // Two shapes collide when (group_a & mask_b) && (group_b & mask_a).
  uint32_t collision_group = 1;
  uint32_t collision_mask = 0xffffffffu;
  // Contact dimension: 1 for frictionless contacts (a normal row only takes effect), 3 for
  // normal and Coulomb friction, 4 with torsional friction too, 6 with rolling friction as well
  // (MuJoCo's condim). A contact takes the larger of its two shapes' (MuJoCo's rule), so a
  // frictionless limb still grips a frictional floor while touching another frictionless limb
  // without friction. A model with any shape of dimension 4 (6) gives every contact slot one
  // (three) more rows, which stay disabled on contacts of a lower dimension.
  int contact_dim = 3;
  // MuJoCo's geom priority: a contact between shapes of different priorities takes the higher
  // one's friction and contact_dim, whatever the other's (equal priorities: the larger
  // contact_dim, and the frictions combined by SolverOptions::friction_combine).
  int priority = 0;
  // MuJoCo's geom margin and gap (m, >= 0): two shapes' contacts hold their surfaces
  // max(margin_a, margin_b) - max(gap_a, gap_b) apart instead of touching (a margin alone is a
  // skin of that thickness; a gap as large takes it back), and are found from that far apart.
  Real margin = 0;
  Real gap = 0;
};

enum class JointType : int32_t {
  kRevolute = 0,   // 1 rotational DOF about the joint x axis; 5 rows
  kPrismatic = 1,  // 1 translational DOF along the joint x axis; 5 rows
  kBall = 2,       // 3 rotational DOF about the anchor; 3 rows
  kFixed = 3,      // 0 DOF; 6 rows
  kGeneric = 4,    // each of the 6 joint-frame axes locked, free or limited
  kUniversal = 5,  // two hinges in series (the joint x axis, then `second_axis` about
                   // `second_anchor`); 2 rotational DOF; 4 rows
};

enum class AxisMode : int32_t { kLocked = 0, kFree = 1, kLimited = 2 };

// A PD drive (and passive spring-damper) on one joint DOF, integrated implicitly:
//   F = stiffness (target_position - q) + damping (target_velocity - qdot)
// Actuators of position/velocity kind write the targets and gains at run time.
struct DriveDesc {
  Real stiffness = 0;        // N/m or N m/rad, >= 0
  Real damping = 0;          // N s/m or N m s/rad, >= 0
  Real target_position = 0;  // m or rad
  Real target_velocity = 0;  // m/s or rad/s
};

struct JointDesc {
  std::string name;
  JointType type = JointType::kRevolute;
  int parent = kWorldBody;  // body index or kWorldBody
  int child = 0;            // body index (never kWorldBody)
  // Joint frame in the child body frame: its origin is the anchor, its x axis the hinge or
  // slide axis. The parent side of the frame is computed from the bodies' initial poses, so the
  // initial configuration is the joint's zero (plus `reference`).
  Pose child_frame;
  // With parent == kWorldBody: the mocap body (ModelDesc::mocap_bodies) the parent side is on,
  // which carries it when moved (a weld or connect to a MuJoCo mocap body); -1: the world.
  int parent_mocap = -1;
  // Convenience: when set, the joint frame's x axis is this direction (child body frame) and
  // child_frame.quat is replaced by the shortest rotation taking x onto it. Must be non-zero.
  std::optional<Vec3> axis;
  // kUniversal only: the second hinge, turning the child after the first (the joint frame's x
  // axis through its origin): its axis and a point on it, in the child body frame. The two
  // anchors may differ (MuJoCo's two-hinge ankles); the axes must not be parallel. The DOFs are
  // the two hinge angles, as in MuJoCo: child = parent * R(axis 1, theta1) * R(axis 2, theta2),
  // each rotation about its own anchor. axis_mode[3] and [4] say which hinge is kLimited (any
  // other mode: free); lower/upper then hold one entry per hinge.
  Vec3 second_axis{0, 1, 0};
  Vec3 second_anchor;
  // kGeneric only: modes of the linear x, y, z then angular x, y, z axes of the joint frame.
  std::array<AxisMode, 6> axis_mode{AxisMode::kLocked, AxisMode::kLocked, AxisMode::kLocked,
                                    AxisMode::kLocked, AxisMode::kLocked, AxisMode::kLocked};
  // Limits per DOF (revolute/prismatic: index 0; generic: one per free or limited axis, in axis
  // order; universal: one per hinge). Only used where `limited`. A limited kBall joint turns at
  // most upper[0] (rad, in (0, pi]) from its initial configuration, about any axis (MuJoCo's
  // ball range: one cone on the rotation angle, twist included); its lower is empty or {0}.
  bool limited = false;
  std::vector<Real> lower;  // rad or m
  std::vector<Real> upper;  // rad or m
  // Applied to every DOF of the joint. A ball joint's three DOFs are the parent joint frame's
  // axes: its spring pulls by -stiffness phi (phi the rotation vector from the initial
  // configuration, targets its components), its damper by -damping w_rel (MuJoCo's ball spring).
  DriveDesc drive;
  // Per-DOF overrides (generic joints whose axes differ): when non-empty, one entry per DOF,
  // replacing `drive` and `armature` for that DOF.
  std::vector<DriveDesc> dof_drive;
  std::vector<Real> dof_armature;
  Real reference = 0;   // joint coordinate of the initial configuration (rad or m)
  Real compliance = 0;  // inverse stiffness of the bilateral rows (m/N, rad/(N m)); 0 = rigid
  Real armature = 0;    // extra rotor inertia along the DOF (kg m^2 or kg)
  // Dry friction along every DOF (N or N m): the joint sticks until pushed harder than this,
  // then slides against it (MuJoCo's frictionloss, URDF's <dynamics friction>). Per-DOF values,
  // when non-empty, replace it as dof_armature does armature.
  Real friction_loss = 0;
  std::vector<Real> dof_friction_loss;
  bool collide_connected = false;  // let the two joined bodies' shapes collide
};

enum class ActuatorType : int32_t {
  kEffort = 0,    // ctrl * gear is a force/torque along the joint DOF
  kPosition = 1,  // ctrl is the drive's target position; kp, kv are its gains
  kVelocity = 2,  // ctrl is the drive's target velocity; kv is its gain
  kMuscle = 3,    // ctrl is a muscle's excitation; its activation pulls (MuscleDesc)
};

// A muscle (MJCF <muscle>), MuJoCo 2.2's model. Its activation a, the actuator's own state
// (Simulator::GetActivations), follows the excitation u = clamp(ctrl, 0, 1) as
//   da/dt = (u - a) / tau,  tau = time_activation (0.5 + 1.5 a)    where u > a,
//                           tau = time_deactivation / (0.5 + 1.5 a) otherwise
// (a clamped to [0, 1] inside tau), integrated explicitly over each step from its start, as
// MuJoCo does: a step longer than half of time_activation overshoots 1 before settling. Its
// force along the actuator's length l = gear * L (L the tendon's length or the joint's
// coordinate) is
//   f = -force (FL(x) FV(v) a + FP(x)),
//   x = range[0] + (l - length_range[0]) / L0,  L0 = (length_range[1] - length_range[0]) /
//                                                    (range[1] - range[0]),
//   v = (dl/dt) / (L0 velocity_max),
// with FL a smooth bump (0 outside [length_min, length_max], 1 at x = 1), FV 0 at v <= -1, 1 at
// v = 0, rising to velocity_force_max, and FP the passive force of a stretched muscle: 0 up to
// x = 1, passive_force / 2 at x = (1 + length_max) / 2, linear beyond; a muscle only pulls.
// The force is taken at the step's start state and applied explicitly (gear * f along the DOF
// or tendon), clamped to the actuator's force range where it has one.
// Activation dynamics of a motor or servo (MJCF <general dyntype>, <intvelocity>, <cylinder>):
// the actuator acts on its activation a, state of the world, instead of its control: an
// effort's force is gear * a, a servo's target target_scale * a. a follows the control u as
//   kIntegrator: da/dt = u               (a servo's target moving at the commanded rate)
//   kFilter:     da/dt = (u - a) / time_constant   (a first-order lag: a valve, a cylinder)
// integrated explicitly over each step from its start, as MuJoCo does. A muscle has its own
// dynamics (MuscleDesc) and none of these.
enum class ActuatorDynamics : int32_t { kNone = 0, kIntegrator = 1, kFilter = 2 };

struct MuscleDesc {
  Real time_activation = Real(0.01);                  // s
  Real time_deactivation = Real(0.04);                // s
  std::array<Real, 2> range{Real(0.75), Real(1.05)};  // operating range of x (length_range's image)
  Real force = 0;                                     // peak active force (N), > 0
  Real length_min = Real(0.5), length_max = Real(1.6);  // where FL falls to 0
  Real velocity_max = Real(1.5);           // shortening speed where FV is 0, in L0 per second
  Real passive_force = Real(1.3);          // FP at x = (1 + length_max) / 2, in units of force
  Real velocity_force_max = Real(1.2);     // FV of a fast lengthening muscle
  std::array<Real, 2> length_range{0, 0};  // actuator lengths l mapped onto `range`; min < max
};

struct ActuatorDesc {
  std::string name;
  ActuatorType type = ActuatorType::kEffort;
  int joint = 0;  // joint index
  int dof = 0;    // DOF within the joint (0 for revolute and prismatic)
  Real gear = 1;  // scales ctrl for kEffort
  bool ctrl_limited = false;
  Real ctrl_min = 0, ctrl_max = 0;
  Real kp = 0;  // kPosition stiffness
  Real kv = 0;  // kPosition / kVelocity damping
  // A servo's target is target_scale * ctrl (a position, or a velocity): MuJoCo's <general>
  // servos whose gain is not their stiffness, such as a gripper's 0..255 command.
  Real target_scale = 1;
  // The actuator's force (N or N m along the DOF) stays within [force_min, force_max] (MuJoCo's
  // forcerange, URDF's effort): kEffort clamps gear * ctrl; a servo's drive is solved with the
  // bound, so it pushes at most that hard however far from its target. A servo's gains add to
  // the joint's own spring and damper (as in MuJoCo), which the bound leaves alone.
  bool force_limited = false;
  Real force_min = 0, force_max = 0;
  // >= 0: the actuator drives this tendon (ModelDesc::tendons) instead of `joint`'s DOF: a
  // kEffort actuator pulls along the tendon's length with gear * ctrl, each of its DOFs taking
  // coef times that; a servo's target is a length (or rate) of the tendon.
  int tendon = -1;
  // >= 0: the actuator pushes on this body through a frame fixed in it (MJCF's site
  // transmission: a propeller's thrust and drag torque, a thruster, a jet) instead of a joint
  // or tendon. Its force tau = gear * ctrl (kEffort only; clamped to the force range) acts as
  // the wrench tau * site_wrench, given in the site's frame: a force site_wrench[0..2] at the
  // site's origin and a torque site_wrench[3..5], taken at the step's start pose as every
  // actuator's effort is.
  // site_force_world: the force is in the world's axes instead of the site's (MuJoCo's motor on
  // a free joint: a world-frame force at the body's origin, a torque in the body's frame).
  // site_reaction_body >= 0: that body takes the opposite wrench at the same point, so the
  // push is internal between the two (MuJoCo's motor on a ball joint: a torque in the child's
  // frame, its reaction on the parent); -1: none (the world's).
  int site_body = -1;
  Pose site_pose;                                     // the site's frame in the body's frame
  std::array<Real, 6> site_wrench{0, 0, 1, 0, 0, 0};  // force, torque per unit tau (site frame)
  bool site_force_world = false;
  int site_reaction_body = -1;
  // >= 0: the actuator pulls this body onto what it touches (MJCF's <adhesion>, a suction cup
  // or an electroadhesive pad) instead of driving a joint, tendon or site. Its force F = gear *
  // ctrl (kEffort only; clamped to the force range) is shared equally by the contact points of
  // the body's shapes with the shapes within reach of them: surfaces closer than the pair's
  // margin (the larger ShapeDesc::margin of the two, or an explicit pair's ContactPairDesc::
  // margin), so a pad's margin beyond its gap lets it pull
  // from that far (MuJoCo counts those points too, though they carry no contact). At each
  // point, midway between the two surfaces, F / points pulls the body along the normal towards
  // the other shape and the other body (if any) back, taken at the step's start pose; with no
  // point in reach it pulls nothing. Friction then holds what the larger normal force presses.
  int adhesion_body = -1;
  // kMuscle: the muscle's parameters (on a joint's DOF or a tendon, not a site).
  MuscleDesc muscle;
  // Activation dynamics of an effort or servo; kNone: it acts on its control directly.
  ActuatorDynamics dynamics = ActuatorDynamics::kNone;
  Real dynamics_time_constant = 1;  // kFilter's time constant (s), > 0
  // Where the actuator has an activation (dynamics, or a muscle): clamped to [activation_min,
  // activation_max] after each step where limited (MuJoCo's actlimited, actrange).
  bool activation_limited = false;
  Real activation_min = 0, activation_max = 0;
};

// Couples two joint coordinates rigidly (MJCF <equality><joint>, URDF <mimic>): DOF `dof` of
// `joint` (the follower) follows DOF `leader_dof` of `leader_joint`,
//   y = c0 + c1 x + c2 x^2 + c3 x^3 + c4 x^4,   y = q - q_ref,  x = q_leader - q_leader_ref,
// q_ref being each joint's `reference` (its coordinate in the initial configuration). Without
// a leader (leader_joint = -1) the follower is held at q_ref + c0. One constraint row on the
// bodies of both joints (up to four): its impulse acts on both, so a load on the follower is
// felt by the leader. A DOF follows at most one coupling; ball joints have no scalar DOF.
struct JointCouplingDesc {
  std::string name;
  int joint = 0;
  int dof = 0;
  int leader_joint = -1;
  int leader_dof = 0;
  std::array<Real, 5> polynomial{0, 1, 0, 0, 0};
  Real compliance = 0;  // m/N or rad/(N m); 0 = rigid
};

// A tendon: a length L with what MuJoCo puts on it: limits on L, a spring-damper pulling L to
// spring_length, dry friction along it, and actuators (ActuatorDesc::tendon). Each is one
// constraint row on the bodies L depends on, so the load it carries is shared by them all.
// The rows are at position level (the limit on L(q+)) whatever SolverOptions::joint_formulation
// says. L is one of:
// * fixed (MJCF <tendon><fixed>, `joints`): a linear combination of scalar joint coordinates,
//   L = sum_k coef_k q_k (q as JointState::position gives them; each DOF named once): a
//   hip-knee tendon on a leg, a gripper's two fingers closing together, a spine's vertebrae
//   bending as one.
// * spatial (MJCF <tendon><spatial>, `path`): the length of a path through points fixed in
//   bodies (sites), wrapping around spheres and cylinders on the way and split by pulleys,
//   computed as MuJoCo computes it (TendonPathDesc): a muscle's line of action, a cable over a
//   pulley. Its Jacobian takes each straight piece's direction at its two ends, a wrap's two
//   tangent points moving with the wrapping body (the arc between them lies on one body, and
//   the tangent points slide only to second order in the length). The path's sites and
//   wrapping shapes may lie on at most four bodies besides the world.
// * slider-crank (MJCF's cranksite / slidersite transmission, `path` = {kSlider, kCrank}): the
//   slider's position along its axis as a connecting rod of length r from the crank pin c
//   holds it (MuJoCo's mjTRN_SLIDERCRANK). With s the slider site, a its z axis, v = c - s:
//     L = a.v - sqrt(det),  det = (a.v)^2 + r^2 - |v|^2,
//   and where det <= 0 (the rod too short to reach the axis: a broken crank) L = a.v. The
//   MJCF importer gives each such actuator a tendon of its own, named after it.
struct TendonJointDesc {
  int joint = 0;
  int dof = 0;  // DOF within the joint
  Real coef = 1;
};
// One element of a spatial tendon's path, in order (MuJoCo's rules): the path starts and ends
// at a site; a sphere or cylinder stands between two sites and the path between them wraps
// around it where the straight line would pass through it (or, with a side site, on the side
// the side site is, MuJoCo's sidesite); a pulley starts a new branch (between two sites), whose
// pieces count 1 / divisor in L. A slider-crank's path is the two elements {kSlider, kCrank}
// and nothing else.
struct TendonPathDesc {
  enum class Kind : int32_t {
    kSite = 0,
    kSphere = 1,
    kCylinder = 2,
    kPulley = 3,
    kSlider = 4,  // a slider-crank's slider site: `pose` its frame, the slider's axis its z
    kCrank = 5,   // a slider-crank's crank pin site, with the rod's length
  };
  Kind kind = Kind::kSite;
  int body = kWorldBody;  // the body the site or wrapping shape moves with (a site may be fixed in
                          // the world)
  // A site's position (and a slider's axes), or the wrapping shape's centre and axes (a
  // cylinder's axis along local z), in the body's frame (the world's for kWorldBody); unused
  // for a pulley.
  Pose pose;
  Real radius = 0;      // kSphere, kCylinder: > 0
  Real divisor = 1;     // kPulley: > 0
  Real rod_length = 0;  // kCrank: the connecting rod's length (MJCF cranklength, m), > 0
  // A wrapping shape's side site (MJCF sidesite): the side of the shape the path passes; inside
  // the shape, the path wraps against the inside of its circle as MuJoCo's does.
  bool has_side = false;
  int side_body = kWorldBody;
  Vec3 side_pos;  // in side_body's frame
};
// At most this many elements in a spatial tendon's path.
inline constexpr int kMaxTendonPath = 16;
struct TendonDesc {
  std::string name;
  std::vector<TendonJointDesc> joints;  // fixed: one or two scalar DOFs (not a ball's or free
                                        // joint's); empty for a spatial tendon
  std::vector<TendonPathDesc> path;     // spatial: the path (empty for a fixed tendon)
  bool limited = false;
  Real lower = 0, upper = 0;  // length limits where limited, lower < upper
  Real stiffness = 0;         // N/m or N m/rad along L, >= 0
  Real damping = 0;           // N s/m or N m s/rad, >= 0
  // The spring's rest length; unset: the tendon's length with every joint at its reference
  // (MuJoCo's springlength default, its length at qpos0; a spatial tendon's at the bodies'
  // initial poses).
  std::optional<Real> spring_length;
  Real friction_loss = 0;  // N or N m, >= 0
  // Held at a length (MJCF <equality><tendon> on this tendon alone): one bilateral row at
  // position level keeps L at its length in the initial configuration plus hold_offset (as
  // MuJoCo's equality holds L - L(qpos0) = polycoef[0]), rigid or with hold_compliance: a rod
  // between two sites, a cloth's threads (MJCF <composite type="grid">). With a compliance,
  // hold_damping makes it a spring-damper along L (1 / hold_compliance and hold_damping,
  // implicit as a tendon's own; MuJoCo's soft equality damps so).
  bool hold = false;
  Real hold_offset = 0;      // m or rad
  Real hold_compliance = 0;  // m/N or rad/(N m), >= 0; 0 = rigid
  Real hold_damping = 0;     // N s/m or N m s/rad, >= 0 (a rigid hold ignores it)
};

// An explicit contact pair (MJCF <contact><pair>): shapes `shape_a` and `shape_b` collide
// whatever their groups, masks, bodies' joints and excluded pairs (but one: a body whose joint to
// the world holds its rotation and its translation along a static plane's normal never touches
// that plane, see Model::pair_rules), with this pair's friction
// (contact_dim 1: none) in place of what their own materials would give. MuJoCo's rule: the
// pair replaces the contact the filter would have made between the two.
struct ContactPairDesc {
  std::string name;
  int shape_a = 0, shape_b = 0;
  Real friction = 1;
  Real torsional_friction = 0;  // (m) at contact_dim 4 and 6 (Material::torsional_friction)
  Real rolling_friction = 0;    // (m) at contact_dim 6 (Material::rolling_friction)
  int contact_dim = 3;          // 1, 3, 4 or 6 (ShapeDesc::contact_dim)
  // Where its contacts hold the surfaces, margin - gap apart (m, >= 0), in place of the
  // shapes' own margins and gaps (ShapeDesc::margin, gap), as MuJoCo's <pair margin gap>: 0 and
  // 0, touching, whatever margins the shapes carry.
  Real margin = 0, gap = 0;
};

enum class Formulation : int32_t { kPosition = 0, kVelocity = 1 };

// How two shapes' friction coefficients combine into their contact's.
enum class FrictionCombine : int32_t {
  kGeometricMean = 0,  // sqrt(mu_a mu_b): a frictionless surface stays frictionless
  kMax = 1,            // max(mu_a, mu_b): MuJoCo's rule (geoms of equal priority)
};

// Solver and integration options of a world; every field documented with its default and units.
// Preconditioner of the Conjugate Residual solve of J M^-1 J^T + C.
enum class Preconditioner : int {
  kJacobi = 0,  // the diagonal: cheapest per iteration, slow on chains of unequal links
  kTree = 1,    // exact on a spanning tree of joints and contacts (block LU, linear in the
                // bodies), the diagonal on rows closing loops
};

struct SolverOptions {
  Real timestep = 0.01;                                      // h (s)
  Vec3 gravity{0, 0, -9.81};                                 // (m/s^2)
  Formulation joint_formulation = Formulation::kPosition;    // bilateral rows
  Formulation contact_formulation = Formulation::kPosition;  // contact normal rows
  Real baumgarte = 0.2;              // Upsilon in [0, 1]: fraction of c(q-) removed per step
                                     // by velocity-level rows
  Real contact_margin = 0.01;        // (m) shapes closer than this enter the contact set;
                                     // between primitives at most half the thinner one's
                                     // radius or smallest half extent (a rodent's 2 mm
                                     // capsules keep a 1 mm margin)
  bool speculative_contacts = true;  // also shapes that close their gap within the step at
                                     // their start velocity (plus gravity): long steps then
                                     // find a falling limb's contact before it is deep
  // A fluid around every body (MuJoCo's inertia-box model, <option density viscosity>): each
  // body moves through it as the box of its mass and principal moments, slowed by viscous
  // drag, -3 pi viscosity d v and -pi viscosity d^3 w (d the box's mean side), and by
  // quadratic drag, -density/2 A_i |v_i| v_i per principal axis (A_i the box's face across it)
  // and -density s_i (s_j^4 + s_k^4) / 64 |w_i| w_i. Taken from the step's start velocity, as
  // MuJoCo applies its passive forces; 0 and 0: none.
  Real fluid_density = 0;       // (kg/m^3)
  Real fluid_viscosity = 0;     // (Pa s)
  Vec3 fluid_wind{0, 0, 0};     // (m/s) the medium's velocity: the fluid forces act on
                                // each body's velocity relative to it (MJCF <option wind>)
  Real contact_compliance = 0;  // (m/N) normal compliance: a contact carrying force F
                                // rests at penetration compliance * F. A little keeps
                                // the impulses of redundant contacts (piles, boxes on
                                // four points) unique, so Newton converges fast; 0 is
                                // perfectly rigid
  // (m/s) the fastest a position-level contact pushes shapes out of each other: a contact
  // found deeper than this times the step (a scene that starts in overlap, a body teleported
  // into another) comes out over several steps instead of in one. Infinite (default): out in
  // one step, as rigid contacts are. The push is an impulse, so a body leaves the overlap at up
  // to this speed (and hops v^2 / 2g: 4.6 mm at 0.3 m/s). MuJoCo's soft contacts come out
  // gently; a file that starts its bodies sunk into the floor (Gymnasium's humanoidstandup:
  // 3.6 cm at 3 ms, 12 m/s out without a limit) wants about 0.3 m/s here. Position-level
  // contacts only (velocity level: baumgarte).
  Real max_depenetration_speed = std::numeric_limits<Real>::infinity();
  int newton_iterations = 50;        // maximum Newton iterations per step, in [1, 1000]
  int newton_stall_iterations = 0;   // > 0: Newton also stops (not converged, at its best
                                     // iterate) once that iterate is this many iterations
                                     // old: speed for robustness where a solve cycles
                                     // between contact states (README, "Solver choices")
  int newton_tail_iterations = 10;   // > 0: after this many Newton iterations a step also
                                     // stops, converged, once its residual is within
                                     // newton_tail_residual (0: off). Most steps converge in
                                     // fewer; the rest are mostly slow tails close to the
                                     // solution, which ran to the Newton limit to end at
                                     // 1e-6-1e-4 m/s (README, "Solver choices")
  Real newton_tail_residual = 1e-4;  // (m/s) see newton_tail_iterations
  int cr_iterations = 200;           // maximum CR iterations per Newton step, in [1, 10000]
  Real newton_tolerance = 1e-6;      // stop when the residual's max-norm is below this
                                     // (units of impulse per unit effective mass: m/s)
  Real cr_tolerance = 1e-3;          // relative CR tolerance (preconditioned residual) while
                                     // the step's residual is above 1000 newton_tolerance;
                                     // 1e-5 (or this, if smaller) nearer the solution. 3-7%
                                     // less time than 1e-5 throughout on MuJoCo's humanoids at
                                     // the same Newton iterations (RESULTS.md, "The linear
                                     // solve's forcing")
  bool line_search = true;           // backtracking on the merit 0.5 |residual|^2
  int line_search_steps = 4;         // maximum halvings of the Newton step, in [0, 30]
  Real line_search_growth = 1e3;     // a trial is taken once its merit is below this multiple
                                     // of the accepted one (1: strict decrease). A safeguard
                                     // against steps that blow up, not a descent test: the
                                     // merit is not smooth where contacts open or stick, and
                                     // strict decrease refused good full steps (humanoid under
                                     // control noise: 10.6 Newton iterations per step against
                                     // 7.6, 38 steps not converged against 6; no search at all
                                     // 7.9 and 14, and a limb thrown at 0.16 s). Worlds on the
                                     // Jacobi preconditioner keep strict decrease (1): their
                                     // symmetric friction form needs it to hold static friction
  bool strict_after_cycle = true;    // a solve whose residual returns to its value of 2-4
                                     // iterations back is cycling through trials that
                                     // line_search_growth lets pass: the rest of its attempt
                                     // takes only trials that decrease the merit
  Real fb_epsilon = 1e-10;           // ((N s)^2) smoothing of the Fischer-Burmeister function
                                     // of contact rows, at most (1e-2 m/s times the row's
                                     // effective mass)^2 so that very light bodies stay put
  FrictionCombine friction_combine = FrictionCombine::kGeometricMean;  // see Material
  int step_halvings = 4;          // a step whose Newton solve fails is taken again from its
                                  // start as two steps of half its length, down to h / 2^this
                                  // (0: never). Fails: the residual is still above
                                  // halving_residual after halving_iterations iterations (or at
                                  // the limit, where no further halving is left). Large steps
                                  // then stay solved where a landing or a deep contact leaves
                                  // Newton without a basin (README, "Solver choices"); 4 rather
                                  // than 3 left 9 steps unsolved instead of 75 over 32 noisy
                                  // humanoid runs at 0.12-0.64 s, in the same time (RESULTS.md)
  bool halving_carryover = true;  // a step starts at the level of halving its predecessor ended
                                  // at, and each step that did not have to halve lets the next
                                  // start one level coarser: a run of hard steps (a figure lying
                                  // on its floor at large h) no longer fails the full length
                                  // first every step. Off: every step starts whole
  int halving_iterations = 20;    // Newton iterations before a step above halving_residual halves
  Real halving_residual = 1e-2;   // (m/s) a step ending above this residual has failed
  Real missed_contact_depth = 0.005;  // (m) after a solve the shapes are collided at q+: a pair
                                      // deeper than this there than the step's rows held it
                                      // (a limb swung into another, or turned against it,
                                      // within the step; a box landing edge first) sends the
                                      // step back to its start, with that pair's points where
                                      // the attempt ended added to its set. Inf: off
  int contact_redos = 1;              // such returns per attempt, in [0, 4] (0: off)
  // Projected Gauss-Seidel sweeps over the contacts of a world of contacts alone (no joint,
  // tendon or angular friction rows; position-level contacts), before its Newton solve, until
  // no impulse moves a row by newton_tolerance: Newton then starts near a solution (0: off).
  // In a pile whose frictional contacts slide and stick in turn, Newton from the last step's
  // impulses cycles between contact states; started here, it converges or ends close
  // (README, "Solver choices"; kernels_contact.h, world_contact_presolve)
  int contact_presolve_sweeps = 1000;
  bool friction_newton = true;        // linearise friction along the slip with W's derivatives
                                      // (see kernels_contact.h); off: W frozen, as in the seeds
  Preconditioner preconditioner = Preconditioner::kTree;  // of the Conjugate Residual solve
  int loop_rows = 16;   // tree preconditioner: the rows that close loops (contacts of a lying
                        // figure, a linkage's last joint) are eliminated exactly on top of the
                        // tree solve while a world has at most this many, in [0, 16] (0: never;
                        // then GCR iterates on them). Fewer Newton and GCR iterations for one
                        // more tree solve per such row and Newton iteration (README, "Solver
                        // choices")
  bool islands = true;  // each set of bodies that joints and contacts connect takes its own line
                        // search, best iterate and convergence test (kernels_solver.h,
                        // world_build_islands); off: the world is one Newton system
};

// A named state of the model's worlds (MJCF's <keyframe><key>): Simulator::Reset(world, name)
// starts a world there instead of at the bodies' initial poses. Joints keep their zero at the
// initial poses (JointDesc::child_frame), so a keyframe moves bodies without changing the model.
struct KeyframeDesc {
  std::string name;
  Real time = 0;                    // simulated time (s), finite
  std::vector<Real> body_pose;      // (body_count x 7): body-frame position, quaternion w x y z
                                    // (BodyState's layout); empty: the initial poses
  std::vector<Real> body_velocity;  // (body_count x 6): linear velocity of the body-frame origin
                                    // then angular velocity, world frame; empty: initial ones
  std::vector<Real> controls;       // (actuator_count), within ctrl ranges; empty: zero
  std::vector<Real> activations;    // (actuator_count): the activations of muscles and of
                                    // actuators with dynamics, finite (others 0); empty: zero
  std::vector<Real> mocap_pose;     // (mocap_count x 7): position, quaternion w x y z; empty:
                                    // the initial poses
};

// A mocap body (MuJoCo's mocap="true"): static geometry (ShapeDesc::mocap) and joint anchors
// (JointDesc::parent_mocap) that move together where the user places them, per world
// (Simulator::SetMocapPoses). Each move takes them there at once, with no velocity (contacts
// see them at rest, as MuJoCo's do): what is in the way is pushed out, what is welded to one
// follows.
struct MocapBodyDesc {
  std::string name;
  Pose pose;  // initial pose, world frame
};

struct ModelDesc {
  std::string name;
  std::vector<BodyDesc> bodies;
  std::vector<ShapeDesc> shapes;
  std::vector<JointDesc> joints;
  std::vector<ActuatorDesc> actuators;
  std::vector<JointCouplingDesc> couplings;
  std::vector<TendonDesc> tendons;
  std::vector<ContactPairDesc> contact_pairs;
  SolverOptions options;
  int contact_capacity = -1;  // contacts per world; -1: derived from the shapes (see Model)
  // Shape pairs per world whose boxes the broad phase may find overlapping in one step (and
  // pairs a redo marks); -1: derived from the shapes (see Model). More set kWorldPairOverflow.
  int pair_capacity = -1;
  // Body pairs (body indices, kWorldBody allowed) whose shapes never collide, on top of the
  // group/mask filter and the joined-bodies rule (importers use it for MuJoCo's parent filter).
  std::vector<std::array<int, 2>> exclude_body_pairs;
  std::vector<KeyframeDesc> keyframes;
  std::vector<MocapBodyDesc> mocap_bodies;
};

// A floor: an infinite ground plane named "floor" at `height` (m), normal +z, for scenes from
// robot files, which have none.
ShapeDesc FloorShape(Real height);

// Number of constraint rows and coordinates a joint contributes. A rigid joint to the world
// that locks every rotation (slides only, or welded) has no angular rows: its child body is
// given no rotational freedom instead.
int JointBilateralRows(const JointDesc& joint);
int JointDofCount(const JointDesc& joint);       // joint velocity coordinates
int JointPositionCount(const JointDesc& joint);  // joint position coordinates (ball: 4)

// The validated, compiled scene. Immutable and shared by every world created from it.
struct HullData;  // a convex hull's polyhedron (internal)

class Model {
 public:
  // Validates `desc` and compiles it. Errors name the element, its index and name, the field
  // and the offending value.
  static absl::StatusOr<std::shared_ptr<const Model>> Compile(ModelDesc desc);

  const ModelDesc& desc() const { return desc_; }
  const std::string& name() const { return desc_.name; }
  int body_count() const { return static_cast<int>(desc_.bodies.size()); }
  int shape_count() const { return static_cast<int>(desc_.shapes.size()); }
  int joint_count() const { return static_cast<int>(desc_.joints.size()); }
  int actuator_count() const { return static_cast<int>(desc_.actuators.size()); }
  int tendon_count() const { return static_cast<int>(desc_.tendons.size()); }
  int mocap_count() const { return static_cast<int>(desc_.mocap_bodies.size()); }
  int joint_dof_count() const { return joint_dof_count_; }  // sum of JointDofCount
  int joint_position_count() const { return joint_position_count_; }
  int joint_row_count() const { return joint_row_count_; }  // constraint rows of joints
  // Angular friction rows per contact slot: 0, 1 (some shape has contact dimension 4: torsion)
  // or 3 (some has 6: torsion and rolling), after a contact's normal and friction rows.
  int contact_angular_rows() const { return contact_angular_rows_; }
  int contact_capacity() const { return contact_capacity_; }
  Real total_mass() const;
  // Hash of everything that shapes the batch layout and dynamics (snapshots carry it, so a
  // snapshot is only restored into a world of the same model).
  uint64_t fingerprint() const { return fingerprint_; }

  // Per joint: first index of its coordinates in the world's joint position / velocity arrays.
  const std::vector<int>& joint_position_offset() const { return joint_position_offset_; }
  const std::vector<int>& joint_dof_offset() const { return joint_dof_offset_; }
  // Joint-frame pose on the parent side, in the parent body frame (world frame for kWorldBody;
  // the mocap body's frame for a joint with parent_mocap).
  const std::vector<Pose>& joint_parent_frame() const { return joint_parent_frame_; }
  // Candidate pairs per world the broad phase holds (ModelDesc::pair_capacity, or by default
  // the fewer of collision_pair_count() and 64 per shape + 64: boxes grow by how far their
  // shapes may move in a step, and 1000 spheres falling into a box at 0.01 s need 8 to 12).
  int pair_capacity() const { return pair_capacity_; }

  // The exceptions to the group/mask filter, sorted by (shape_a, shape_b), shape_a < shape_b:
  // explicit pairs (friction >= 0: the pair's, 0 when frictionless) and pairs the filter would
  // pass whose bodies are joined or excluded (friction kPairExcluded). Also excluded, explicit
  // or not: a static plane and the shapes of a body whose rigid joint to the world holds its
  // rotation and its translation along the plane's normal (slides in the plane): no motion can
  // bring them closer or apart, so their contacts could not act, and one that started inside
  // the plane could never be resolved (the joint carries the load). Excluded too, unless an
  // explicit pair: two shapes across a joint that holds its anchor in place (hinge, ball) which
  // overlap about that anchor whatever the joint does (one side holds the anchor deeper than
  // the other side lies from it, in the bodies' initial poses): a robot's first link inside the
  // static base it turns on. What decides whether two
  // shapes collide is the filter and this list, O(shapes + joined shapes), where a list of every
  // pair that may collide grows with the square of the shapes.
  struct PairRule {
    int shape_a = 0, shape_b = 0;
    Real friction = 0;
    Real torsion = 0, rolling = 0;  // an explicit pair's angular friction (0: none)
    Real margin = 0, gap = 0;       // an explicit pair's (ContactPairDesc)
  };
  static constexpr Real kPairExcluded = -2;
  const std::vector<PairRule>& pair_rules() const { return pair_rules_; }
  // Whether shapes a and b (either order) may collide; `friction` gets an explicit pair's
  // friction, or -1 where the two shapes' materials decide.
  bool MayCollide(int a, int b, Real* friction = nullptr) const;
  // Number of shape pairs that may collide (computed at compile time).
  int64_t collision_pair_count() const { return collision_pair_count_; }
  // Every shape pair that may collide, (a, b) with a < b in (a, b) order, the order contacts
  // are found in: O(shapes^2), for inspection and tests.
  std::vector<std::array<int, 2>> collision_pairs() const;

  int FindBody(const std::string& name) const;  // -1 when absent
  int FindJoint(const std::string& name) const;
  int FindActuator(const std::string& name) const;
  // A keyframe by name, or else by its index written in decimal ("0": the first; MJCF keys are
  // often unnamed); -1 when neither matches.
  int FindKeyframe(const std::string& name) const;
  int FindMocapBody(const std::string& name) const;

 private:
  Model() = default;
  ModelDesc desc_;
  int joint_dof_count_ = 0;
  int joint_position_count_ = 0;
  int joint_row_count_ = 0;
  int contact_angular_rows_ = 0;
  int contact_capacity_ = 0;
  uint64_t fingerprint_ = 0;
  std::vector<int> joint_position_offset_;
  std::vector<int> joint_dof_offset_;
  std::vector<Pose> joint_parent_frame_;
  int pair_capacity_ = 0;
  int64_t collision_pair_count_ = 0;
  std::vector<PairRule> pair_rules_;
  // per shape: its convex hull, built once at compile time (null for other shapes)
  std::vector<std::shared_ptr<const HullData>> shape_hull_;
  friend const HullData* ShapeHull(const Model& model, int shape);
};

// Whether a world of `current` can take `next` and keep its state (Simulator::SetWorldModels):
// the same bodies, shapes (each on the same body), joints (each of the same kind between the
// same bodies, with the same constraint rows: limits, drive rows, friction loss), couplings,
// tendons (over the same DOFs, with the same rows) and actuators; values (masses, inertias, frames,
// sizes, frictions, gains, ranges) may differ. The first difference, by element and name, or OK.
absl::Status CheckSameStructure(const Model& current, const Model& next);

// How far joint positions (JointState::position's layout, joint_position_count entries) lie
// outside the model's joint limits: the largest excess over every limited DOF, angular (rad:
// hinges, a universal joint's hinges, generic joints' angular axes, a ball joint's turn past
// its cone) and linear (m: slides, generic joints' linear axes); 0 where every DOF is within
// its range; NaN where a limited DOF's position is NaN. An accuracy figure beside contact
// depth: a stop solved exactly is never passed. Positions of the wrong length are an error.
struct LimitViolation {
  Real angular = 0;  // rad
  Real linear = 0;   // m
};
absl::StatusOr<LimitViolation> JointLimitViolation(const Model& model,
                                                   const std::vector<Real>& position);

}  // namespace axion
