// MJCF (MuJoCo XML, version 2.2 semantics) importer: reads a model file into an axion::ModelDesc.
//
// Supported: <include>, <compiler> (angle, inertiafromgeom, eulerseq, coordinate "local" or
// "global" (MuJoCo 2.2's, the Gym hopper's and walker2d's), autolimits, meshdir, assetdir,
// balanceinertia, boundmass, boundinertia, settotalmass), <option> (timestep, gravity; density and
// viscosity, MuJoCo's inertia-box fluid model: SolverOptions::fluid_density, light chain bodies
// exempt; collision "all", "predefined" or "dynamic"; cone "elliptic", Axion's own, where
// "pyramidal" is ignored with a warning; <flag> gravity, contact, limit, equality,
// frictionloss, passive, actuation and constraint, each "disable" taking that part out of the
// model, as MuJoCo leaves it out of its step), <default> classes
// with inheritance and `childclass` (every top-level <default> is the main class), <asset> <mesh>
// (file: OBJ or binary / ASCII STL; or vertex and face; scale), nested <body> (pos, quat, euler,
// axisangle, xyaxes, zaxis), <geom> (plane, sphere, capsule, box, cylinder, ellipsoid, mesh; size,
// fromto, density, mass, friction, condim, contype, conaffinity; an ellipsoid with unequal radii
// and a mesh collide as convex hulls, a mesh with MuJoCo 2.2's mass properties for it), <inertial>
// (pos, orientation, mass, diaginertia, fullinertia), <joint> (hinge, slide, ball, free; pos, axis,
// range, limited, stiffness, damping, armature, frictionloss, ref, springref, springdamper),
// <freejoint>,
// <composite> (particle, rope, loop, grid, cloth and box: count, spacing, offset, prefix, a
// template <geom>, "main" <joint>s and <tendon>s, a grid's <pin>s, expanded into the bodies,
// joints, geoms and held tendons MuJoCo 2.2 makes of them; not with coordinate "global"), <site>
// (named frames: ImportResult::source_sites), <keyframe><key> (rule 8), mocap bodies (<body
// mocap="true">, rule 9), <actuator> (motor, position, velocity, adhesion, and <general> where it
// is one of these (rule 4), on a joint: gear, ctrlrange, ctrllimited, forcerange, forcelimited, kp,
// kv), <equality> <connect> and <weld> (body1, body2, active; a connect's anchor), which become
// joints closing loops (a ball joint at the anchor, a fixed joint), and <equality> <joint> (joint1,
// joint2, polycoef, active), which becomes a JointCouplingDesc (joint1's coordinate a quartic of
// joint2's), all held exactly where MuJoCo's are soft, and <contact> <exclude> (body1, body2) and
// <pair> (geom1, geom2, condim, friction), and <sensor> (rule 10).
// <tendon> (fixed over any number of joints, spatial) and <equality><tendon> (a held tendon,
// with MuJoCo's softness). Everything else (visual elements, cameras, lights, other composite
// types, solver-parameter attributes such as a geom's solref/solimp, ...) is skipped
// with a warning naming the element or attribute, so no difference from MuJoCo is silent; an
// error also names the unsupported elements skipped before it. Malformed or inconsistent files
// are errors that name the file and line, the element, its name and the attribute.
//
// Conversion from MuJoCo's generalized coordinates to Axion's maximal coordinates:
//
//  1. Bodies. Every MJCF body becomes one BodyDesc whose pose is its world-frame pose at qpos0
//     (the body tree composed from the root). Bodies welded to the world (no joint anywhere on
//     the path to <worldbody>) are static: their geoms become world shapes (ShapeDesc::body =
//     kWorldBody) and no BodyDesc is made. A moving body without joints (welded to its parent,
//     as the humanoid's head and hands are) has no degrees of freedom in MuJoCo, and is merged
//     into its parent's BodyDesc: its geoms move to the parent, its mass and inertia join the
//     parent's about their common centre of mass, and ImportResult::source_bodies says which
//     body carries it and where (a warning names it). A weld instead would cost a body and six
//     rows, and a light welded body slows Newton down: the humanoid has 13 bodies instead of 16
//     and steps 13% faster under control noise (RESULTS.md).
//  2. Joints of one body, by what the body holds:
//       - a free joint (<freejoint> or type="free"): no JointDesc; the body is free. Only
//         allowed on children of <worldbody>, as in MuJoCo.
//       - no joint: merged into the parent (rule 1); with MjcfOptions::merge_welded_bodies off,
//         JointType::kFixed to the parent (a massless body is merged anyway).
//       - one hinge / slide: kRevolute / kPrismatic with the joint frame at `pos` and its x axis
//         along `axis`; `ref` becomes JointDesc::reference, `range` the limits.
//       - one ball: kBall at `pos`. Its range limits the rotation angle to the larger entry,
//         as in MuJoCo (one cone, twist included: JointDesc::upper[0]); a range of pi or more
//         never binds and is dropped (warning). ref and springref are ignored: the spring pulls
//         toward the initial configuration, as MuJoCo's ball spring does.
//       - two or three hinges with a common anchor (or slides, whose anchors do not matter),
//         mutually orthogonal axes and zero ref: one kGeneric joint whose frame axes are the
//         joint axes: x = axis1, y = axis2, z = axis1 x axis2. A third hinge must be +-z; when
//         it is -z the frame is (axis1, axis3, axis2) instead, which is right-handed, so every
//         frame axis is exactly one MJCF axis with its sign. Those angular (or linear) axes are
//         kLimited or kFree, the others kLocked; each DOF keeps its own MJCF joint's spring,
//         damper, armature and frictionloss (JointDesc::dof_drive, dof_armature,
//         dof_friction_loss), and an actuator on an MJCF joint addresses the generic DOF of its
//         axis. Axion measures a generic joint's rotation by the rotation
//         vector of the relative rotation, so its coordinates (and the limits and springs on
//         them) equal MuJoCo's hinge angles when one axis is displaced and agree to first order
//         otherwise. With three hinges every rotation is reachable in both engines, so the
//         kinematics are identical; with two, Axion allows exp(a x + b y) where MuJoCo allows
//         R(x, a) R(y, b): the two differ at second order (about a b / 2 about the locked axis).
//         Set MjcfOptions::merge_joints = false to get MuJoCo's kinematics exactly (the
//         universal joint or the chain below).
//       - two hinges otherwise (anchors differ, axes not orthogonal, or merging off), with zero
//         ref and axes more than ~6 degrees apart: one kUniversal joint, MuJoCo's kinematics
//         exactly: the first hinge turns the body about its axis and anchor, the second about
//         its own axis through its own anchor as the first leaves it (JointDesc::second_axis,
//         second_anchor). Its two DOFs are the two hinge angles, each with its own limit,
//         spring, damper, armature and frictionloss. MuJoCo's humanoid feet are such joints:
//         ankle_y (anchor z = 0.08) and ankle_x (anchor z = 0.04) are orthogonal but do not meet.
//       - anything else (three hinges that do not share an anchor or are not orthogonal,
//         hinges mixed with slides or balls, a non-zero ref, more than three joints): a chain
//         in MuJoCo's order, parent -> joint 1 -> light body -> joint 2 -> ... -> body, each
//         link a kRevolute / kPrismatic / kBall joint with that joint's own anchor, axis,
//         limits and drive. The chain reproduces MuJoCo's kinematics exactly (each MJCF joint
//         rotates about its anchor in the frame left by the previous one). Each intermediate
//         ("light") body is named "<body>/<joint>", starts at the body's pose, and has mass =
//         MjcfOptions::light_body_mass_fraction times the body's mass (default 1%) and inertia
//         = the same fraction of the body's inertia tensor, centred on the body's centre of
//         mass: a uniformly scaled copy, so the chain behaves as the body made 1% heavier per
//         light body. The model's total mass is MuJoCo's plus the light bodies'. Light bodies
//         cost solver effort (a body of 1% mass between two joints makes the Schur complement
//         ill-conditioned, and under load Newton converges slowly), which is why the two joint
//         kinds above are preferred.
//  3. Joint springs, dampers and friction: stiffness and damping become the DOF's drive
//     (JointDesc::drive, or its JointDesc::dof_drive entry in a merged joint) with target
//     position `springref` (0 by default) and target velocity 0; armature becomes
//     JointDesc::armature (dof_armature entry), and frictionloss JointDesc::friction_loss
//     (dof_friction_loss entry), dry friction the DOF sticks against until pushed harder.
//     springdamper (time constant tau, damping ratio zeta) replaces stiffness and damping, as in
//     MuJoCo, by I / (tau zeta)^2 and 2 I / tau, I the joint's inertia at qpos0 (its DOFs' mean
//     diagonal of the joint-space M^-1, armature included, inverted: MuJoCo's dof_invweight0);
//     on a free joint it is ignored with a warning.
//  4. Actuators: motor -> ActuatorType::kEffort with gear[0]; position -> kPosition with kp
//     (default 1) and kv (default 0); velocity -> kVelocity with kv (default 1). A servo's
//     gear g acts on the length g q, its force geared back: gains g^2 kp and g^2 kv, target
//     scale 1 / g (gear 0: skipped with a warning). Gear values after the first are ignored on
//     joints and tendons (warning). ctrlrange/ctrllimited and forcerange/forcelimited as in
//     MuJoCo 2.2 (autolimits off: a range without `ctrllimited`/`forcelimited` is an error, as
//     in MuJoCo); forcerange bounds the force before the gear, as MuJoCo's actuator_force, so
//     ActuatorDesc's bound is gear[0] times it. A servo's gains add to the joint's own spring
//     and damper, as in MuJoCo. A motor on a site (`site=`, MuJoCo's site transmission without
//     refsite) pushes the body that carries the site (ActuatorDesc::site_body, site_pose): its
//     force, gainprm[0] ctrl bounded by forcerange, times the six gears as a wrench in the
//     site's frame (force at the site, then torque): rotors, thrusters, jets. A motor on a
//     free joint pushes its body through the joint's frame with the force gear[0..2] ctrl in
//     the world's axes (site_force_world) and the torque gear[3..5] ctrl in the body's; one on
//     a ball joint turns the child with gear[0..2] ctrl in its frame, the parent taking the
//     reaction (site_reaction_body), as MuJoCo's generalized forces on those joints do.
//     <adhesion> (gain, default 1; ctrlrange required and not negative) and a <general> on a
//     `body` without bias become a kEffort with gear = the gain on that body
//     (ActuatorDesc::adhesion_body): MuJoCo's body transmission, its gear ignored (warned). A
//     body merged into its parent pulls at the parent's geoms' contacts too (warned); a pad on
//     a static or mocap body is skipped with a warning.
//     A <general> actuator with dyntype none, gaintype fixed and biastype none or affine
//     (force = gainprm[0] ctrl + biasprm[0] + biasprm[1] q + biasprm[2] qdot) becomes the
//     shortcut it equals: no bias -> kEffort with gear = gear[0] gainprm[0]; biasprm
//     (0, -kp, -kv) with kp = gainprm[0] -> kPosition; biasprm (0, 0, -kv) with kv = gainprm[0]
//     -> kVelocity (a gain other than kp or kv sets the target scale). Other <general>
//     actuators, other actuator kinds (cylinder, muscle, ...), servos on sites, sites with a
//     refsite, sites on the world or a mocap body, other transmissions (jointinparent, a
//     body's servo) and servos on free or ball joints are skipped with a warning.
//  5. Mass and inertia: with inertiafromgeom (auto: bodies without <inertial>) each geom's mass
//     is its `mass` or density (1000 kg/m^3 by default) times its volume, with MuJoCo's volume
//     and inertia formulas per shape (a capsule is a cylinder plus two hemispheres); the geoms
//     are combined about the body's centre of mass with the parallel-axis theorem. BodyDesc
//     gets the full tensor in the body frame (MuJoCo diagonalises it; the eigenvalues agree).
//     Principal moments that break the triangle inequality are an error, as in MuJoCo, or with
//     balanceinertia (or MjcfOptions::balance_inertia) take their mean (warning). A body with a
//     BodyDesc of its own needs positive mass and a non-singular inertia (error otherwise).
//     boundmass and boundinertia (or MjcfOptions::bound_mass, bound_inertia) raise each body's
//     mass and each principal moment below them to the bound, the principal axes and the
//     centre of mass kept, before those checks, as MuJoCo does (a body without mass then has
//     the bounds at its frame's origin). settotalmass then scales every body's mass and
//     inertia so that the file's total (static bodies included, as MuJoCo counts it) is its
//     value.
//  6. Geoms: friction = (sliding, torsional, rolling) -> Material::friction,
//     torsional_friction and rolling_friction (values left out keep MuJoCo's defaults, 1, 0.005
//     and 0.0001), each combined as MuJoCo does for geoms of equal priority, the larger of the
//     two (SolverOptions::friction_combine = kMax); condim -> ShapeDesc::contact_dim, 1
//     frictionless, 3 sliding friction, 4 and torsional, 6 and rolling friction, a contact
//     taking the larger of its geoms' as in MuJoCo (the humanoid's limbs, condim 1, touch each
//     other without friction and the floor, condim 3, with it). One difference: MuJoCo joins a
//     contact's sliding, torsional and rolling friction into one cone (pyramidal by default,
//     elliptic with cone="elliptic"); Axion bounds each by its own cone about the normal force
//     (kernels_contact.h). priority ->
//     ShapeDesc::priority: where two geoms' differ, the higher's friction and condim are the
//     contact's, as in MuJoCo. margin and gap -> ShapeDesc::margin and gap: contacts hold the
//     surfaces max(margin) - max(gap) apart, as MuJoCo's constraints start there (Gym's ant
//     rests on a 1 cm skin). contype ->
//     ShapeDesc::collision_group and
//     conaffinity -> collision_mask. MuJoCo collides a pair when (contype_a & conaffinity_b) ||
//     (contype_b & conaffinity_a); Axion's filter requires both terms, so the pairs that meet
//     one way only become explicit ContactPairDescs with MuJoCo's mixing (up to 4096 per model;
//     past that a warning names a pair).
//     Ellipsoids with unequal radii become a convex hull of points on their surface (warning);
//     mass properties still use the exact ellipsoid. Meshes collide as the convex hull of their
//     vertices (warning). Finite planes become infinite (warning).
//  7. Collision filtering: MuJoCo never collides two bodies of one weld group, nor a weld group
//     and its parent weld group unless one is the world; Axion skips the body pairs joined
//     directly by a joint with collide_connected = false (joints to the world collide, as in
//     MuJoCo). A body merged into its parent (rule 1) is filtered as its parent's weld group
//     is, by the parent's joints. The pairs MuJoCo filters that no joint joins directly (a body
//     and its parent across a light-body chain, <contact><exclude>) go into
//     ModelDesc::exclude_body_pairs, so the filter is exact for any number of bodies and
//     contype/conaffinity keep their meaning as groups and masks. A <contact><pair> becomes a
//     ContactPairDesc: its two geoms collide whatever the filter, with the pair's condim and
//     first friction value, its third (spin) as torsional and fourth (roll) as rolling
//     friction (MuJoCo's defaults, 3 and "1 1 0.005 0.0001 0.0001", not the geoms'; different
//     tangential or rolling frictions are taken as the first, with warnings). One difference, with
//     a warning: a body on slides in a plane geom's plane (its rotation and height held by its
//     joints, as Gym's pusher, striker and thrower hold their objects and targets) never touches
//     that plane in Axion (Model::pair_rules): MuJoCo's contacts there can push only against
//     the joints, and one that starts inside the plane could never be resolved by rigid rows.
//  8. Keyframes: each <keyframe><key> (name, time, qpos, qvel, ctrl; MuJoCo's defaults qpos0,
//     zero velocities and controls) becomes a KeyframeDesc holding the body state MuJoCo's
//     forward kinematics give its qpos and qvel: every body placed in its parent's frame and
//     moved by its joints in order, a light body of a chain (rule 2) by the joints up to its
//     own, velocities as MuJoCo's DOFs define them (a hinge's or slide's axis where its earlier
//     joints leave it; a ball's and a free joint's spin along the body's final axes). Reset to
//     it (Simulator::Reset(world, name), or its index for an unnamed key), every body has the
//     pose and velocity libmujoco gives the key. A generic joint merged from two hinges holds
//     exp(a x + b y) where MuJoCo holds R(x, a) R(y, b) (rule 2): such a key's pose lies off it by
//     second-order terms, which the first step pulls out. ctrl follows the actuators made
//     (those skipped drop theirs); a value outside its ctrlrange is clamped (warning), as
//     MuJoCo clamps it when it acts. mpos and mquat place the mocap bodies (rule 9,
//     KeyframeDesc::mocap_pose); act is not supported (warning).
//  9. Mocap bodies: a <body mocap="true"> (a child of the world without joints, as MuJoCo asks)
//     becomes a MocapBodyDesc; its geoms and those of the bodies welded below it become world
//     shapes riding on it (ShapeDesc::mocap), and a joint whose parent side is on it (a body
//     hinged below it, a <weld> or <connect> to it) keeps that side in its frame
//     (JointDesc::parent_mocap). Simulator::SetMocapPoses moves them, per world, as MuJoCo's
//     mocap_pos and mocap_quat do: at once and without velocity, so a welded body follows and
//     what is in the way is pushed out. The file's bodies and sites on a mocap body are reported
//     in its frame (ImportResult::SourceBody::mocap). A body hinged below a mocap body collides
//     with it, as in MuJoCo (a mocap body is in the world's weld group).
// 10. Sensors: touch, accelerometer, velocimeter, gyro, force, torque, rangefinder,
//     magnetometer (<option magnetic>), jointpos, jointvel, tendonpos, tendonvel, actuatorpos,
//     actuatorvel, actuatorfrc, ballquat, ballangvel, framepos, framequat, framexaxis,
//     frameyaxis, framezaxis, framelinvel, frameangvel (objtype site, xbody, body or geom;
//     reftype and refname), framelinacc, frameangacc, subtreecom, subtreelinvel, subtreeangmom and
//     clock become ImportResult::SourceSensor entries in file order, with cutoff; FileSensorData
//     and ReadFileSensors compute MuJoCo's sensordata for a world's state (equal to libmujoco's at
//     the same state to rounding, touch to each engine's contact forces: SensorTest). Frames move
//     as the joints' coordinates and rates place them (BodyStateFromJoints), as MuJoCo's bodies
//     move with its qpos and qvel. Accelerometers and frame accelerations read the acceleration of
//     the world's last step (its velocity change over its length, MuJoCo's qacc for a step of its
//     Euler integrator: MuJoCo's sensordata after mj_step holds the same step's) less gravity, as
//     MuJoCo's; zero after a reset until the world steps. Force and torque sensors read what the
//     site's body and its descendants receive from its parent, by Newton and Euler over that
//     subtree (its bodies' masses times their accelerations over the last step less gravity, less
//     the contact and external forces on them), MuJoCo's cfrc_int at the site. A rangefinder casts
//     its ray against every shape but its site's body's (MuJoCo's mj_ray; not convex hulls:
//     meshes and unequal ellipsoids, warning). Other kinds (the limit sensors, user) and
//     sensors of things not made (skipped actuators and tendons, cameras, a body's inertial
//     axes) are skipped with a warning; `noise` is not added (<flag sensornoise> warns).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "axion/model.h"
#include "axion/simulator.h"

namespace axion {

// A model read from a file, and every way it differs from the file's meaning.
struct ImportResult {
  ModelDesc model;
  // One line per unsupported element or attribute (with its count) and per approximation.
  std::vector<std::string> warnings;
  // Where each joint of the file went, in file order (URDF: depth first from the root link).
  // The file's kinds of joint (MJCF hinge, slide, ball, free; URDF revolute and continuous,
  // prismatic, spherical, floating, fixed, planar).
  enum class JointKind { kHinge, kSlide, kBall, kFree, kFixed, kPlanar };
  struct SourceJoint {
    std::string name;  // the file's joint name (generated "<body>_joint<k>" when unnamed)
    int joint = -1;    // index in model.joints; -1 where there is no Axion joint (MJCF free
                       // joints, URDF fixed and floating joints)
    int dof = 0;       // DOF within that joint (kGeneric: index among its non-locked axes)
    JointKind kind = JointKind::kHinge;
    int file_body = -1;  // the body (MJCF) or link (URDF) it moves: index in source_bodies
  };
  std::vector<SourceJoint> source_joints;
  // Where each body (MJCF) or link (URDF) of the file went, in file order: the Axion body that
  // carries it (kWorldBody for a static one) and the pose of its frame in that body's frame (in
  // the world frame for a static one; the identity for a body of its own). MJCF merges a body
  // without joints into its parent (rule 1); URDF a link on a fixed joint (urdf.h).
  struct SourceBody {
    std::string name;
    int body = kWorldBody;
    Pose offset;
    // On a mocap body (ModelDesc::mocap_bodies index; body is then kWorldBody): offset is in
    // that mocap body's frame, and the frame moves with it. -1: not on one.
    int mocap = -1;
  };
  std::vector<SourceBody> source_bodies;
  // The file's sites (MJCF <site>: named frames for targets, fingertips and sensors), in
  // MuJoCo's order (the world's, then body by body; an unnamed one is "<body>_site<k>"): the
  // Axion body that carries each and its pose in that body's frame (the world frame for a
  // static one), as source_bodies. URDF has none.
  std::vector<SourceBody> source_sites;

  // The file's sensors (MJCF <sensor>) that Axion reads, in file order (FileSensorData); the
  // others are skipped with a warning naming them, so `offset` counts only these. Each reads
  // MuJoCo's quantity of the same name at the world's state (MuJoCo computes sensordata in
  // mj_forward, before its step integrates: after mj_step it describes the state before).
  enum class SensorKind {
    kTouch,          // 1: normal contact force (N) summed over contacts in the site's zone
    kVelocimeter,    // 3: the site's linear velocity, site frame
    kGyro,           // 3: the site's angular velocity, site frame
    kMagnetometer,   // 3: <option magnetic>, site frame
    kJointPos,       // 1: hinge angle or slide displacement (MuJoCo's qpos)
    kJointVel,       // 1: its rate
    kTendonPos,      // 1: fixed tendon length, sum of coef qpos
    kTendonVel,      // 1: its rate
    kActuatorPos,    // 1: gear times the joint's coordinate or tendon's length
    kActuatorVel,    // 1: its rate
    kActuatorFrc,    // 1: the actuator's force before its gear (MuJoCo's actuator_force)
    kBallQuat,       // 4: ball joint quaternion w x y z
    kBallAngVel,     // 3: ball joint angular velocity, child body frame
    kFramePos,       // 3: the object's position, world frame or the reference's
    kFrameQuat,      // 4: its orientation w x y z, relative to the reference's
    kFrameXAxis,     // 3: its frame's x axis, world frame or the reference's
    kFrameYAxis,     // 3
    kFrameZAxis,     // 3
    kFrameLinVel,    // 3: its origin's linear velocity, world frame
    kFrameAngVel,    // 3: its angular velocity, world frame
    kSubtreeCom,     // 3: centre of mass of a body and its descendants, world frame
    kSubtreeLinVel,  // 3: that centre's velocity
    kClock,          // 1: simulated time (s)
    kAccelerometer,  // 3: the site's linear acceleration less gravity, site frame (at rest:
                     // g upwards), over the world's last step (Simulator::GetBodyAccelerations)
    kForce,          // 3: the force the site's body and its descendants receive from its
                     // parent (MuJoCo's cfrc_int), site frame
    kTorque,         // 3: its torque about the site, site frame
    kFrameLinAcc,    // 3: the object's acceleration less gravity, world frame (last step's)
    kFrameAngAcc,    // 3: its angular acceleration, world frame
    kSubtreeAngMom,  // 3: angular momentum of a body and its descendants about their centre of
                     // mass, world frame
    kRangefinder,    // 1: distance along the site's z axis to the nearest shape, -1 for none
  };
  // A frame carried by a body: sites, body frames (xbody), centres of mass (body), geoms.
  struct SensorFrame {
    int body = kWorldBody;  // the Axion body that carries it (kWorldBody: static)
    Pose pose;              // in that body's frame (the world's or the mocap body's)
    int mocap = -1;         // on a mocap body (ModelDesc::mocap_bodies index), else -1
  };
  // A touch sensor's zone: its site's shape (MuJoCo's site type and size; a capsule's and a
  // cylinder's length and a box's sizes are halves).
  enum class ZoneShape { kSphere, kCapsule, kEllipsoid, kCylinder, kBox };
  struct SourceSensor {
    std::string name;  // "" for an unnamed sensor
    SensorKind kind = SensorKind::kClock;
    int offset = 0;  // first index in the sensor data
    int dim = 1;     // values
    // touch, velocimeter, gyro, magnetometer: the site; frame sensors: the object
    SensorFrame object;
    // frame sensors with reftype / refname: positions, orientations and axes in this frame
    bool has_reference = false;
    SensorFrame reference;
    // joint, tendon and actuator position and velocity: the sum of coef times the file
    // coordinate of each joint (source_joints index: MuJoCo's qpos, or qvel for rates)
    std::vector<int> joints;
    std::vector<Real> coefs;
    // tendonpos and tendonvel of a spatial tendon, actuatorpos and actuatorvel of an actuator on
    // one: the Axion tendon (ModelDesc::tendons) whose path's length (rate) times `scale` (the
    // actuator's gear) it reads, at the bodies the joints place
    int tendon = -1;
    // actuatorfrc: the Axion actuator (ModelDesc::actuators) and 1 / gear, which turns its
    // force (GetActuatorForces, along its DOF or tendon) into MuJoCo's
    int actuator = -1;
    Real scale = 1;
    // subtreecom, subtreelinvel: each file body of the subtree as a point mass at its centre
    // of mass (the file's masses: the light bodies of joint chains, mjcf.h rule 2, are not
    // MuJoCo's and do not count)
    std::vector<SensorFrame> masses;      // the centres, each on the body that carries it (its
                                          // axes the file body's)
    std::vector<Real> mass;               // kg
    std::vector<Real> inertia;            // subtreeangmom: each one's about its centre, in its
                                          // frame's axes (9 per mass, kg m^2)
    Vec3 field;                           // magnetometer: the magnetic field, world frame
    // force, torque: the Axion bodies of the subtree below the site's parent joint
    std::vector<int> bodies;
    // rangefinder: the shapes its ray does not see (its site's body's)
    std::vector<int> shapes;
    ZoneShape zone = ZoneShape::kSphere;  // touch
    Vec3 zone_size;
    Real cutoff = 0;  // > 0: values limited to [-cutoff, cutoff] (touch: to cutoff); not
                      // quaternions and axes, as in MuJoCo
  };
  std::vector<SourceSensor> source_sensors;
  int sensor_data_count = 0;  // values of all sensors (MuJoCo's nsensordata when none skipped)
};

// The file's own coordinates of a state of an imported model, in the file's joint order
// (source_joints): MJCF gives MuJoCo's qpos and qvel exactly (a hinge's angle, a slide's
// displacement, a ball's quaternion and body-frame angular velocity, a free joint's position
// and quaternion, linear velocity and body-frame angular velocity), merged hinges included:
// their angles are solved from the body's rotation, where Axion's generic joint measures a
// rotation vector (mjcf.h, rule 2). URDF gives each moving joint's coordinates (a spherical
// joint as a ball, a floating joint as a free joint, a planar joint's three); fixed joints
// none. `bodies` and `joints` are a world's state of `model` (Model::Compile of
// imported.model), as Simulator::GetBodyState and GetJointState return them.
struct FileCoordinates {
  std::vector<Real> position;  // MuJoCo's qpos
  std::vector<Real> velocity;  // MuJoCo's qvel
  // per file joint (source_joints): its first index in position and in velocity, and counts
  std::vector<int> position_offset, position_count, velocity_offset, velocity_count;
};
absl::StatusOr<FileCoordinates> FileJointCoordinates(const ImportResult& imported,
                                                     const Model& model, const BodyState& bodies,
                                                     const JointState& joints);
// The file coordinates of the model's initial state (MuJoCo's qpos0), whose offsets and counts
// are every state's: the layout, for a trajectory's columns or a description.
absl::StatusOr<FileCoordinates> InitialFileCoordinates(const ImportResult& imported,
                                                       const Model& model);

// What a world's sensors read: its state as the Simulator returns it. Only what the sensors
// need must be filled (contacts for touch, actuator forces for actuatorfrc, mocap poses for
// objects on mocap bodies, joints for joint, tendon and actuator sensors).
struct SensorInputs {
  BodyState bodies;
  JointState joints;
  std::vector<Real> actuator_force;     // GetActuatorForces
  std::vector<ContactReport> contacts;  // GetContacts
  std::vector<Real> mocap_pose;         // GetMocapPoses (mocap_count x 7)
  Real time = 0;                        // WorldStats::time
  std::vector<Real> body_acceleration;  // GetBodyAccelerations (accelerometer, force, torque)
  Vec3 gravity;                         // the world's (the same)
  std::vector<Real> external_force;     // GetExternalForces (force, torque)
};
// The sensor data of a world's state (imported.sensor_data_count values, each sensor at its
// offset), as MuJoCo's sensordata for the same state. Errors name a missing input.
absl::StatusOr<std::vector<Real>> FileSensorData(const ImportResult& imported, const Model& model,
                                                 const SensorInputs& inputs);
// The same, reading what the sensors need from a world of `simulator`.
absl::StatusOr<std::vector<Real>> ReadFileSensors(const ImportResult& imported, const Model& model,
                                                  const Simulator& simulator, WorldId world);

struct MjcfOptions {
  // Mass and inertia of each intermediate body of a joint chain, as a fraction of the mass and
  // inertia of the body the chain leads to (see rule 2 above).
  Real light_body_mass_fraction = 0.01;
  // Merge hinges (or slides) that share an anchor into one kGeneric joint (rule 2). false: two
  // hinges become a kUniversal joint, more joints a chain through light bodies, both of which
  // reproduce MuJoCo's kinematics exactly.
  bool merge_joints = true;
  // Merge each moving body without joints into its parent (rule 1). false: it keeps a body of
  // its own, held to its parent by a JointType::kFixed joint (a massless one is merged anyway).
  bool merge_welded_bodies = true;
  // Body inertias whose principal moments break the triangle inequality take their mean, as
  // with <compiler balanceinertia="true"> (which also turns this on); false: such a body is an
  // error, as in MuJoCo.
  bool balance_inertia = false;
  // Lower bounds on every body's mass (kg) and principal moments of inertia (kg m^2), as
  // <compiler boundmass boundinertia> sets them (the larger of the two applies). Raising links
  // of 1e-7 kg on heavy rotors (Gym's thrower, pusher and striker arms) to grams changes their
  // motion little, and lets maximal coordinates solve them quickly (rule 5).
  Real bound_mass = 0;
  Real bound_inertia = 0;
  // Non-empty: every file the model references (<include>, meshes) must lie within this
  // directory once symbolic links and '..' are resolved, or loading fails naming it. The server
  // sets its --asset_dir here, so a client's scene reads no other file of the server's.
  std::string file_root;
  // Bodies a file may make. A <composite> turns a few bytes into count[0] x count[1] x
  // count[2] bodies; past this the load fails naming it before any is made (the server sets
  // its --max_bodies_per_world here).
  int max_bodies = 100000;
};

// Reads an MJCF file; <include> paths are relative to the file's directory.
absl::StatusOr<ImportResult> LoadMjcfFile(const std::string& path, const MjcfOptions& options = {});
// Reads MJCF text; <include> paths are relative to `base_dir` ("" = current directory).
absl::StatusOr<ImportResult> LoadMjcfString(std::string_view xml, const std::string& base_dir,
                                            const MjcfOptions& options = {});

}  // namespace axion
