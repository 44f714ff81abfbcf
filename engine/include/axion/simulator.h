// The batched simulator: many worlds, of the same or different Models, resident in one backend
// and stepped together. All per-world data lives in flat structure-of-arrays buffers over all
// worlds (see axion/state.h); creating or destroying worlds re-packs them, stepping never
// allocates.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "axion/model.h"

namespace axion {

enum class Backend : int32_t { kAuto = 0, kCpu = 1, kCuda = 2 };
const char* BackendName(Backend backend);
// True when this build has CUDA support and a device is present.
bool CudaAvailable();

struct SimulatorOptions {
  Backend backend = Backend::kAuto;  // kAuto: CUDA when available, otherwise CPU
  int threads = 0;                   // CPU worker threads; 0: all hardware threads
  int max_worlds = 1 << 20;          // refuse to create more worlds than this
};

using WorldId = uint64_t;

// Per-world flags reported by a step (bit mask in WorldStats::flags).
enum WorldFlag : uint32_t {
  kWorldNotConverged = 1u << 0,     // Newton stopped at its iteration limit above tolerance
  kWorldContactOverflow = 1u << 1,  // more contacts than contact_capacity; extras dropped
  kWorldNonFinite = 1u << 2,        // NaN/Inf appeared; the world is frozen until reset
  kWorldPairOverflow = 1u << 3,     // more candidate pairs than pair_capacity; extras dropped
};

// Solver statistics of a world's last step (summed over sub-steps where several were taken).
struct WorldStats {
  int newton_iterations = 0;   // Newton iterations in the last step
  int cr_iterations = 0;       // Conjugate Residual iterations, summed over Newton iterations
  int line_search_trials = 0;  // trial iterates the line searches evaluated, summed over Newton
                               // iterations (1 per iteration where every full step is taken)
  int substeps = 0;            // 1, or more where a failed solve halved the step
                               // (SolverOptions::step_halvings)
  int contact_redos = 0;       // attempts taken again for a contact their set missed or its rows
                               // misjudged (SolverOptions::contact_redos)
  Real residual = 0;           // final residual max-norm
  int contact_count = 0;       // active contacts after collision detection
  int constraint_rows = 0;     // active constraint rows (joints + 3 per contact)
  int island_count = 0;        // islands of the last attempt: sets of bodies that joints and
                               // contacts connect, each solved with its own line search and
                               // convergence test
  uint32_t flags = 0;          // WorldFlag bits
  uint64_t step_count = 0;     // steps taken since creation or the last reset
  Real time = 0;               // simulated time (s)
};

// Body state in user frames: the body frame's pose (not the centre of mass).
struct BodyState {
  std::vector<Real> pose;      // (body_count x 7): position x y z, quaternion w x y z
  std::vector<Real> velocity;  // (body_count x 6): linear velocity of the body-frame origin, then
                               // angular velocity, world frame
};

// Joint coordinates, per joint in joint order (Model::joint_position_offset / joint_dof_offset).
// A DOF's position includes its joint's `reference`; angles keep their turns across steps. A
// ball joint's position is the child joint frame's rotation relative to the parent's (w x y z,
// identity in the initial configuration, w >= 0) and its velocity the child's angular velocity
// relative to the parent, in the parent's joint frame; a generic joint's angular DOFs are the
// components of that rotation's rotation vector and their rates (MJCF importers: see
// FileJointCoordinates, mjcf.h, for MuJoCo's own qpos and qvel).
struct JointState {
  std::vector<Real> position;  // (joint_position_count): angle or displacement; ball: quaternion
  std::vector<Real> velocity;  // (joint_dof_count): rad/s or m/s
};

// Forward kinematics: the body state that joint coordinates give (JointState's layout, as
// GetJointState returns it: a DOF's coordinate with the joint's reference included, a ball
// joint's quaternion relative to its initial configuration). Each body a joint moves takes its
// pose and velocity from its parent's through that joint, parents first; bodies no joint moves
// (free bodies, a floating base, a body of the world's) keep theirs from `bodies`, so a
// floating base is placed by its body state and its limbs by their joints. A body that is the
// child of several joints (a loop closed by a weld or a connect) is placed by the first joint,
// in index order, whose parent is placed; the other joints' rows pull any difference out when
// the world steps, as do couplings, which are not applied here. Joints on a mocap body start
// from `mocap_pose` (mocap_count x 7; empty: the model's initial poses). Errors name the joint.
absl::StatusOr<BodyState> BodyStateFromJoints(const Model& model, const JointState& joints,
                                              BodyState bodies,
                                              absl::Span<const Real> mocap_pose = {});

struct ContactReport {
  int body_a = kWorldBody, body_b = kWorldBody;  // body indices (kWorldBody for static)
  int shape_a = -1, shape_b = -1;
  Vec3 position;  // midpoint of the two contact points, world frame (m)
  Vec3 normal;    // unit normal pointing from b to a
  Real gap = 0;   // signed distance at the start of the step (m), negative when penetrating
  Vec3 force;     // total contact force on a (normal + friction), world frame (N)
  Vec3 torque;    // torsional and rolling friction's torque on a, world frame (N m); zero
                  // below contact dimension 4
};

struct WorldOptions {
  // Overrides of the model's solver options for these worlds; nullptr keeps the model's.
  const SolverOptions* options = nullptr;
  int contact_capacity = -1;  // -1: the model's
  int pair_capacity = -1;     // -1: the model's (Model::pair_capacity)
};

// A new model and/or solver options for one world (Simulator::SetWorldModels).
struct WorldModelUpdate {
  WorldId world = 0;
  // The world's new model: the same structure as its current one (bodies, shapes and the body
  // each is on, joints with their kinds, bodies, limited and driven axes, couplings, actuators,
  // coordinates), any values (masses, inertias, centres of mass, frames, shape sizes,
  // frictions, drives, gains, ranges). nullptr keeps the world's.
  std::shared_ptr<const Model> model;
  // The world's new solver options (gravity, time step, tolerances, ...); unset keeps them.
  std::optional<SolverOptions> options;
};

class Simulator {
 public:
  static absl::StatusOr<std::unique_ptr<Simulator>> Create(const SimulatorOptions& options = {});
  virtual ~Simulator();

  Backend backend() const;

  // Creates `count` worlds of `model` in their initial state.
  absl::StatusOr<std::vector<WorldId>> CreateWorlds(std::shared_ptr<const Model> model, int count,
                                                    const WorldOptions& options = {});
  absl::Status DestroyWorld(WorldId world);
  // Destroys several worlds with one repack of the batch (a repack moves every remaining
  // world, so destroying N worlds one by one costs N repacks). All or nothing: an unknown or
  // repeated id destroys none.
  absl::Status DestroyWorlds(absl::Span<const WorldId> worlds);
  bool HasWorld(WorldId world) const;
  int world_count() const;
  std::vector<WorldId> world_ids() const;  // in creation order
  absl::StatusOr<std::shared_ptr<const Model>> GetModel(WorldId world) const;
  absl::StatusOr<SolverOptions> GetOptions(WorldId world) const;
  // Gives worlds new models or solver options (domain randomisation: each world its own masses,
  // frictions, gains or gravity) while they keep their state: bodies keep the poses and
  // velocities of their frames (a moved centre of mass moves inside the body), joints their
  // coordinates, controls their values (clamped into a narrower control range), contacts and
  // warm starts theirs; the step count goes on. Snapshots then carry the new model's
  // fingerprint. Every update is checked before any world changes (unknown or repeated
  // worlds, a model of another structure, invalid options: an error naming the world and the
  // difference). One call re-packs the batch once, whatever the number of worlds, so update
  // many worlds in one call.
  absl::Status SetWorldModels(absl::Span<const WorldModelUpdate> updates);

  // Advances each listed world by steps[i] steps (1 for all when `steps` is empty), all worlds
  // together in shared batched passes. Worlds not listed do not move.
  absl::Status Step(absl::Span<const WorldId> worlds, absl::Span<const int> steps = {});
  absl::Status StepAll(int steps = 1);

  // Controls, one per actuator; kept until changed. Validated: finite, within ctrlrange when the
  // actuator is ctrl-limited. On error the world is untouched.
  absl::Status SetControls(WorldId world, absl::Span<const Real> ctrl);
  absl::StatusOr<std::vector<Real>> GetControls(WorldId world) const;
  // The force each actuator exerts at the world's state, along its DOF or tendon (N or N m,
  // gear included; a site actuator's force, the scale of its wrench; MuJoCo's actuator_force
  // is before the gear): an effort's gear * ctrl, clamped to its force range; a servo's kp (s
  // ctrl - q) - kv qdot (position) or kv (s ctrl - qdot) (velocity), clamped, at the coordinate
  // and rate GetJointState gives; a muscle's gear * f at its length, rate and activation
  // (MuscleDesc; the pull the next step applies). After a step: the force applied over it (servos
  // are solved at the step's end state), for torque and energy terms of rewards.
  absl::StatusOr<std::vector<Real>> GetActuatorForces(WorldId world) const;
  // Each actuator's activation (actuator_count): a muscle's, which follows its control over
  // time (MuscleDesc) in [0, 1] (beyond 1 for a while where the step is longer than half the
  // activation time constant, as MuJoCo's explicit step overshoots), 0 for other actuators.
  // Part of the state: Reset clears it, keyframes and snapshots carry it. Setting checks every
  // value (a muscle's finite, others 0); on error the world is untouched.
  absl::StatusOr<std::vector<Real>> GetActivations(WorldId world) const;
  absl::Status SetActivations(WorldId world, absl::Span<const Real> activation);
  // Each tendon's length and its rate at the world's state (tendon_count x 2: L, dL/dt; m and
  // m/s, or rad and rad/s for a fixed tendon over hinges): MuJoCo's ten_length and
  // ten_velocity. A fixed tendon's from the joint coordinates GetJointState gives, a spatial
  // one's from its path at the bodies its joints place (BodyStateFromJoints).
  absl::StatusOr<std::vector<Real>> GetTendonStates(WorldId world) const;
  // External force and torque on each body's centre of mass, world frame (body_count x 6: force
  // then torque); kept until changed.
  absl::Status SetExternalForces(WorldId world, absl::Span<const Real> wrench);
  absl::StatusOr<std::vector<Real>> GetExternalForces(WorldId world) const;

  absl::StatusOr<BodyState> GetBodyState(WorldId world) const;
  // Each body's acceleration over the world's last step (body_count x 6: linear acceleration
  // of the body-frame origin, then angular acceleration; world frame, gravity included): the
  // step's velocity change over its length (over its last half where it was halved). Zero
  // until the first step after a reset, a restore or a state set from outside.
  absl::StatusOr<std::vector<Real>> GetBodyAccelerations(WorldId world) const;
  absl::Status SetBodyState(WorldId world, const BodyState& state);
  absl::StatusOr<JointState> GetJointState(WorldId world) const;
  // Joint positions and velocities (JointState's layout): the bodies the joints move follow
  // from their parents (BodyStateFromJoints), the others keep their state, so set a floating
  // base's body state first. Angles keep their turns: GetJointState returns them as given.
  absl::Status SetJointState(WorldId world, const JointState& state);
  // Poses of the world's mocap bodies (Model::mocap_count() x 7: position, quaternion w x y z,
  // world frame). Setting them moves the static shapes and joint anchors on them there at once,
  // without velocity (MuJoCo's mocap_pos and mocap_quat): a body in the way is pushed out by its
  // contacts on the next step, one welded to them pulled along. Validated (finite, non-zero
  // quaternions, normalised); on error the world is untouched. Reset returns them to the model's
  // (or the keyframe's) poses; snapshots carry them.
  absl::StatusOr<std::vector<Real>> GetMocapPoses(WorldId world) const;
  absl::Status SetMocapPoses(WorldId world, absl::Span<const Real> pose);
  absl::StatusOr<WorldStats> GetStats(WorldId world) const;
  absl::StatusOr<std::vector<ContactReport>> GetContacts(WorldId world) const;

  // Back to the model's initial state (controls and external forces cleared).
  absl::Status Reset(WorldId world);
  // Back to a keyframe of the world's model (Model::FindKeyframe: by name, or by index):
  // its body state, controls and time; the parts it leaves empty as Reset(world) leaves them.
  // Steps count from 0 again. An unknown keyframe is NotFound, and the world is untouched.
  absl::Status Reset(WorldId world, const std::string& keyframe);
  // Complete world state as bytes, restored bit-exactly by Restore into a world of the same model.
  absl::StatusOr<std::string> Snapshot(WorldId world) const;
  absl::Status Restore(WorldId world, std::string_view bytes);

  // Bytes the backend holds for all worlds' arrays.
  size_t memory_bytes() const;
  // Total memory of the device holding the worlds (0 on the CPU backend).
  size_t memory_capacity_bytes() const;

  class Impl;

 private:
  explicit Simulator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace axion
