// The Simulator's world management: creation and destruction keep other worlds' state,
// snapshots restore bit-exactly, bad input leaves worlds untouched, broken worlds are isolated.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <utility>

#include "axion/state.h"
#include "scenes.h"

namespace axion {
namespace {

using test::BodyPos;
using test::MustCompile;
using test::MustCreateSimulator;
using test::MustCreateWorld;
using test::MustStep;
using ::testing::HasSubstr;

ModelDesc Pendulum(Real length) {
  ModelDesc d;
  d.options.timestep = 0.01;
  BodyDesc bob;
  bob.name = "bob";
  bob.mass = 1;
  bob.inertia = test::SphereInertia(1, 0.05);
  bob.pose.pos = {length, 0, 0};
  d.bodies.push_back(bob);
  JointDesc hinge;
  hinge.name = "hinge";
  hinge.child = 0;
  hinge.child_frame.pos = {-length, 0, 0};
  hinge.axis = Vec3{0, 1, 0};
  hinge.drive.damping = 0.01;
  d.joints.push_back(hinge);
  ActuatorDesc motor;
  motor.name = "motor";
  motor.joint = 0;
  motor.ctrl_limited = true;
  motor.ctrl_min = -1;
  motor.ctrl_max = 1;
  d.actuators.push_back(motor);
  ShapeDesc ground;
  ground.type = ShapeType::kPlane;
  ground.pose.pos = {0, 0, -2};
  d.shapes.push_back(ground);
  ShapeDesc s;
  s.body = 0;
  s.type = ShapeType::kSphere;
  s.size = {0.05, 0, 0};
  d.shapes.push_back(s);
  return d;
}

std::string Bytes(Simulator& sim, WorldId w) {
  BodyState st = *sim.GetBodyState(w);
  return std::string(reinterpret_cast<const char*>(st.pose.data()), st.pose.size() * sizeof(Real)) +
         std::string(reinterpret_cast<const char*>(st.velocity.data()),
                     st.velocity.size() * sizeof(Real));
}

// GetBodyAccelerations: each body's velocity change over the last step per second. The
// pendulum's bob, released horizontally, starts falling at nearly g; after a swing its
// acceleration is the finite
// difference of the velocities the steps left. A state set from outside, a reset and a
// restore know no step: zero.
TEST(SimulatorTest, BodyAccelerationsAreTheLastStepsVelocityChange) {
  std::unique_ptr<Simulator> sim = MustCreateSimulator();
  std::shared_ptr<const Model> model = MustCompile(Pendulum(1));
  WorldId w = MustCreateWorld(*sim, model);
  EXPECT_THAT(*sim->GetBodyAccelerations(w), ::testing::Each(0.0));
  MustStep(*sim, w);
  std::vector<Real> first = *sim->GetBodyAccelerations(w);
  ASSERT_EQ(first.size(), 6u);
  // from rest the bob falls at g m l^2 / (m l^2 + I), its own inertia I = 0.4 m r^2 slowing it
  EXPECT_NEAR(first[2], -9.81 / (1 + 0.4 * 0.05 * 0.05), 2e-3);
  EXPECT_NEAR(first[0], 0, 0.1);
  for (int k = 0; k < 40; ++k) MustStep(*sim, w);
  const std::vector<Real> before = sim->GetBodyState(w)->velocity;
  const std::string snapshot = *sim->Snapshot(w);
  MustStep(*sim, w);
  const std::vector<Real> after = sim->GetBodyState(w)->velocity;
  const std::vector<Real> acceleration = *sim->GetBodyAccelerations(w);
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(acceleration[k], (after[k] - before[k]) / 0.01, 1e-9) << k;
  ASSERT_TRUE(sim->Restore(w, snapshot).ok());
  EXPECT_THAT(*sim->GetBodyAccelerations(w), ::testing::Each(0.0));
  MustStep(*sim, w);
  ASSERT_TRUE(sim->SetBodyState(w, *sim->GetBodyState(w)).ok());
  EXPECT_THAT(*sim->GetBodyAccelerations(w), ::testing::Each(0.0));
  MustStep(*sim, w);
  ASSERT_TRUE(sim->Reset(w).ok());
  EXPECT_THAT(*sim->GetBodyAccelerations(w), ::testing::Each(0.0));
  EXPECT_EQ(sim->GetBodyAccelerations(w + 1000).status().code(), absl::StatusCode::kNotFound);
}

TEST(SimulatorTest, SnapshotRestoresBitExactly) {
  auto sim = MustCreateSimulator();
  auto model = MustCompile(Pendulum(1));
  WorldId a = MustCreateWorld(*sim, model);
  std::vector<Real> ctrl{0.5};
  ASSERT_TRUE(sim->SetControls(a, ctrl).ok());
  MustStep(*sim, a, 37);
  std::string snap = *sim->Snapshot(a);
  MustStep(*sim, a, 50);
  std::string expected = Bytes(*sim, a);
  // Restore into the same world and into a fresh one: both continue identically.
  ASSERT_TRUE(sim->Restore(a, snap).ok());
  WorldId b = MustCreateWorld(*sim, model);
  ASSERT_TRUE(sim->Restore(b, snap).ok());
  EXPECT_EQ(sim->GetStats(b)->step_count, 37u);
  EXPECT_EQ(*sim->GetControls(b), ctrl);
  std::vector<WorldId> both{a, b};
  std::vector<int> steps{50, 50};
  ASSERT_TRUE(sim->Step(both, steps).ok());
  EXPECT_EQ(Bytes(*sim, a), expected);
  EXPECT_EQ(Bytes(*sim, b), expected);
}

TEST(SimulatorTest, MalformedSnapshotsAreRefusedAndLeaveTheWorldUntouched) {
  auto sim = MustCreateSimulator();
  WorldId a = MustCreateWorld(*sim, MustCompile(Pendulum(1)));
  WorldId other = MustCreateWorld(*sim, MustCompile(Pendulum(2)));
  MustStep(*sim, a, 5);
  std::string before = Bytes(*sim, a);
  std::string snap = *sim->Snapshot(a);
  absl::Status s = sim->Restore(a, "garbage");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("not an Axion world snapshot"));
  s = sim->Restore(a, snap.substr(0, snap.size() - 3));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  std::string older = snap;
  older[7] = '1';  // an AXSNAP01 header: the format before contacts kept their point on b
  s = sim->Restore(a, older);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("snapshot format AXSNAP01"));
  // the step level (halvings the next step starts at) follows magic, scalar size, the six counts
  // and fingerprint, step count, time and flags
  std::string bad_level = snap;
  const size_t level_at = 8 + 4 + 32 + 8 + sizeof(Real) + 4;
  const int32_t level = 11;
  std::memcpy(&bad_level[level_at], &level, sizeof(level));
  s = sim->Restore(a, bad_level);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("step level 11"));
  s = sim->Restore(a, *sim->Snapshot(other));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(Bytes(*sim, a), before);
}

// A snapshot of the right size and model whose values no world could hold (bytes corrupted on
// the way, or written by hand) is refused naming the value, and the world keeps its state.
TEST(SimulatorTest, SnapshotsWithImpossibleValuesAreRefusedByName) {
  auto sim = MustCreateSimulator();
  WorldId a = MustCreateWorld(*sim, MustCompile(Pendulum(1)));
  WorldId b = MustCreateWorld(*sim, MustCompile(Pendulum(1)));
  MustStep(*sim, a, 5);
  const std::string snap = *sim->Snapshot(a);
  const std::string before = Bytes(*sim, a);
  // header: magic, scalar size, six counts and the fingerprint, step count; then time, flags,
  // step level, presolve carry; then body_q (1 body x 7), body_u (x 6), body_wrench (x 6), dof
  // velocity, qpos, actuator ctrl, joint-row lambda
  const size_t time_at = 8 + 4 + 32 + 8, flags_at = time_at + sizeof(Real);
  const size_t carry_at = flags_at + 4 + 4;
  const size_t q_at = carry_at + 4, u_at = q_at + 7 * sizeof(Real);
  const size_t ctrl_at = u_at + 12 * sizeof(Real) + 2 * sizeof(Real);
  auto with_real = [&](size_t at, Real value) {
    std::string bytes = snap;
    std::memcpy(&bytes[at], &value, sizeof(value));
    return bytes;
  };
  const Real nan = std::numeric_limits<Real>::quiet_NaN();
  const struct {
    std::string bytes, message;
  } cases[] = {
      {with_real(q_at + sizeof(Real), nan), "body pose value 1 is not finite"},
      {with_real(u_at + 4 * sizeof(Real), std::numeric_limits<Real>::infinity()),
       "body velocity value 4 is not finite"},
      {with_real(q_at + 3 * sizeof(Real), 0), "quaternion of body 0 ('bob') has norm"},
      {with_real(ctrl_at, 3), "control 0 (actuator 'motor') = 3 is outside its range [-1, 1]"},
      {with_real(time_at, -1), "snapshot time -1"},
      {[&] {
         std::string bytes = snap;
         const uint32_t flags = 0x80;
         std::memcpy(&bytes[flags_at], &flags, sizeof(flags));
         return bytes;
       }(),
       "flags 0x80"},
      {[&] {
         std::string bytes = snap;
         const int32_t carry = kPresolveCarrySteps + 1;
         std::memcpy(&bytes[carry_at], &carry, sizeof(carry));
         return bytes;
       }(),
       "presolve carry 33"},
  };
  for (const auto& c : cases) {
    absl::Status s = sim->Restore(a, c.bytes);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
    EXPECT_EQ(Bytes(*sim, a), before) << c.message;
  }
  // the untouched snapshot still restores, into another world too
  EXPECT_TRUE(sim->Restore(b, snap).ok());
  EXPECT_EQ(Bytes(*sim, b), before);
}

TEST(SimulatorTest, CreatingAndDestroyingWorldsKeepsOtherWorldsExact) {
  auto sim = MustCreateSimulator();
  auto model = MustCompile(Pendulum(1));
  auto other = MustCompile(Pendulum(0.5));
  WorldId keep = MustCreateWorld(*sim, model);
  auto reference = MustCreateSimulator();
  WorldId ref = MustCreateWorld(*reference, model);
  MustStep(*sim, keep, 10);
  MustStep(*reference, ref, 10);
  std::vector<WorldId> extra = *sim->CreateWorlds(other, 5);
  MustStep(*sim, keep, 10);
  MustStep(*reference, ref, 10);
  ASSERT_TRUE(sim->DestroyWorld(extra[2]).ok());
  ASSERT_TRUE(sim->DestroyWorld(extra[0]).ok());
  MustStep(*sim, keep, 10);
  MustStep(*reference, ref, 10);
  EXPECT_EQ(Bytes(*sim, keep), Bytes(*reference, ref));
  EXPECT_EQ(sim->world_count(), 4);
  EXPECT_EQ(sim->DestroyWorld(extra[0]).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(sim->GetStats(12345).status().code(), absl::StatusCode::kNotFound);
  std::vector<WorldId> unknown{keep, 999};
  EXPECT_EQ(sim->Step(unknown).code(), absl::StatusCode::kNotFound);
  // several at once, all or nothing
  EXPECT_EQ(sim->DestroyWorlds(std::vector<WorldId>{extra[1], 999}).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(sim->DestroyWorlds(std::vector<WorldId>{extra[1], extra[1]}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(sim->world_count(), 4);
  ASSERT_TRUE(sim->DestroyWorlds(std::vector<WorldId>{extra[4], extra[1]}).ok());
  EXPECT_EQ(sim->world_count(), 2);
  EXPECT_FALSE(sim->HasWorld(extra[1]));
  EXPECT_TRUE(sim->HasWorld(extra[3]));
  MustStep(*sim, keep, 10);
  MustStep(*reference, ref, 10);
  EXPECT_EQ(Bytes(*sim, keep), Bytes(*reference, ref));
}

TEST(SimulatorTest, BadControlsAndStatesAreRefusedWithoutTouchingTheWorld) {
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(Pendulum(1)));
  MustStep(*sim, w, 3);
  std::string before = Bytes(*sim, w);
  std::vector<Real> nan{std::numeric_limits<Real>::quiet_NaN()};
  absl::Status s = sim->SetControls(w, nan);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("actuator 'motor') is not finite"));
  std::vector<Real> big{3};
  s = sim->SetControls(w, big);
  EXPECT_THAT(std::string(s.message()), HasSubstr("outside its range [-1, 1]"));
  std::vector<Real> too_many{0, 0};
  EXPECT_EQ(sim->SetControls(w, too_many).code(), absl::StatusCode::kInvalidArgument);
  BodyState bad = *sim->GetBodyState(w);
  bad.velocity[2] = std::numeric_limits<Real>::infinity();
  s = sim->SetBodyState(w, bad);
  EXPECT_THAT(std::string(s.message()), HasSubstr("velocity of body 0 ('bob') is not finite"));
  std::vector<Real> wrench(6, 0);
  wrench[3] = std::numeric_limits<Real>::quiet_NaN();
  EXPECT_EQ(sim->SetExternalForces(w, wrench).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Bytes(*sim, w), before);
  EXPECT_EQ(*sim->GetControls(w), std::vector<Real>{0});
}

// Joint coordinates follow the bodies: a world created with its bodies moving, or given a new
// body state, reports the joint angle and rate of that state before any step. (The drives'
// armature term reads the rate as the last step's: a joint reported at rest where its body
// turns would lose the rotor's share of the motion on the first step.)
TEST(SimulatorTest, JointStateFollowsTheBodiesBeforeAnyStep) {
  const Real length = 1;
  ModelDesc d = Pendulum(length);
  d.bodies[0].angular_velocity = {0, 2, 0};
  d.bodies[0].linear_velocity = cross(d.bodies[0].angular_velocity, d.bodies[0].pose.pos);
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  JointState joints = *sim->GetJointState(w);
  EXPECT_EQ(joints.position[0], 0);
  EXPECT_NEAR(joints.velocity[0], 2, 1e-12);

  // turned by 0.3 rad about the hinge (+y), spinning back at 1 rad/s
  BodyState st = *sim->GetBodyState(w);
  const Quat turn = quat_from_axis_angle({0, 1, 0}, 0.3);
  const Vec3 omega{0, -1, 0};
  store3(&st.pose[0], rotate(turn, {length, 0, 0}));
  store_quat(&st.pose[3], turn);
  store3(&st.velocity[0], cross(omega, rotate(turn, {length, 0, 0})));
  store3(&st.velocity[3], omega);
  ASSERT_TRUE(sim->SetBodyState(w, st).ok());
  joints = *sim->GetJointState(w);
  EXPECT_NEAR(joints.position[0], 0.3, 1e-12);
  EXPECT_NEAR(joints.velocity[0], -1, 1e-12);
  ASSERT_TRUE(sim->Reset(w).ok());
  joints = *sim->GetJointState(w);
  EXPECT_EQ(joints.position[0], 0);
  EXPECT_NEAR(joints.velocity[0], 2, 1e-12);
}

// A floating base and a chain through every joint kind, each with its frames turned away from
// the bodies' axes, anchors off the bodies' origins and a reference angle where it has one.
ModelDesc JointZoo() {
  ModelDesc d;
  d.options.timestep = 0.01;
  d.options.gravity = {0, 0, 0};
  const JointType types[] = {JointType::kRevolute,  JointType::kPrismatic, JointType::kBall,
                             JointType::kUniversal, JointType::kGeneric,   JointType::kFixed,
                             JointType::kRevolute};
  const int links = static_cast<int>(std::size(types));
  for (int i = 0; i <= links; ++i) {
    BodyDesc b;
    b.name = i == 0 ? "base" : "link" + std::to_string(i);
    b.mass = 1 + 0.1 * i;
    b.inertia = test::BoxInertia(b.mass, {0.1, 0.05, 0.04});
    b.com = {0.02, -0.01, 0.03};
    b.pose.pos = {0.3 * i, 0.05 * i, 1 + 0.02 * i};
    b.pose.quat = quat_from_axis_angle(normalized(Vec3{1, 2, Real(3 - i)}), 0.2 * i);
    d.bodies.push_back(b);
  }
  for (int i = 0; i < links; ++i) {
    JointDesc j;
    j.name = "joint" + std::to_string(i);
    j.type = types[i];
    j.parent = i;
    j.child = i + 1;
    j.child_frame.pos = {-0.15, 0.01 * i, 0.02};
    j.child_frame.quat = quat_from_axis_angle(normalized(Vec3{3, -1, Real(1 + i)}), 0.4 + 0.1 * i);
    if (j.type == JointType::kRevolute || j.type == JointType::kPrismatic) j.reference = 0.25;
    if (j.type == JointType::kUniversal) {
      j.second_axis = normalized(rotate(j.child_frame.quat, Vec3{0.2, 1, 0.1}));
      j.second_anchor = j.child_frame.pos + Vec3{0.03, -0.02, 0.05};
    }
    if (j.type == JointType::kGeneric) {
      j.axis_mode = {AxisMode::kFree,   AxisMode::kLocked, AxisMode::kLocked,
                     AxisMode::kLocked, AxisMode::kFree,   AxisMode::kFree};
    }
    d.joints.push_back(j);
  }
  return d;
}

// Joint positions and velocities of the zoo: revolute, prismatic, ball (quaternion), universal,
// generic (slide x, turns y and z), fixed (none), revolute.
JointState ZooJointState() {
  JointState js;
  const Quat ball = quat_from_axis_angle(normalized(Vec3{1, -2, 0.5}), 1.1);
  js.position = {1.2, 0.4, ball.w, ball.x, ball.y, ball.z, 0.7, -0.5, 0.12, 0.6, -0.9, -2.4};
  js.velocity = {0.8, -0.3, 0.5, 1.5, -0.7, 1.1, 0.6, 0.25, -1.3, 0.9, 2.0};
  return js;
}

// SetJointState places every body a joint moves by forward kinematics from its parent: the
// world reports the coordinates it was given (angles with their turns), a body's velocity is the
// rate of its pose as the coordinates move (central differences), the floating base keeps its
// own state, and the joints' rows find nothing to correct: a step without forces keeps every
// coordinate moving at its rate.
TEST(SimulatorTest, JointStatePlacesTheBodiesItsJointsMove) {
  std::shared_ptr<const Model> model = test::MustCompile(JointZoo());
  ASSERT_EQ(model->joint_position_count(), 12);
  ASSERT_EQ(model->joint_dof_count(), 11);
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, model);
  BodyState base = *sim->GetBodyState(w);
  const Quat base_quat = quat_from_axis_angle(normalized(Vec3{0, 1, 1}), 0.7);
  store3(&base.pose[0], {0.5, -0.2, 1.4});
  store_quat(&base.pose[3], base_quat);
  store6(&base.velocity[0], {{0.3, -0.1, 0.2}, {0.4, 0.2, -0.6}});
  ASSERT_TRUE(sim->SetBodyState(w, base).ok());
  const BodyState held = *sim->GetBodyState(w);  // the base as the world holds it
  const JointState given = ZooJointState();
  ASSERT_TRUE(sim->SetJointState(w, given).ok());

  const JointState read = *sim->GetJointState(w);
  for (size_t k = 0; k < given.position.size(); ++k)
    EXPECT_NEAR(read.position[k], given.position[k], 1e-12) << "position " << k;
  for (size_t k = 0; k < given.velocity.size(); ++k)
    EXPECT_NEAR(read.velocity[k], given.velocity[k], 1e-12) << "velocity " << k;
  const BodyState bodies = *sim->GetBodyState(w);
  for (int k = 0; k < 7; ++k) EXPECT_EQ(bodies.pose[k], held.pose[k]) << k;  // its own bits
  for (int k = 0; k < 6; ++k) EXPECT_EQ(bodies.velocity[k], held.velocity[k]) << k;

  // velocities against the poses' central differences along the coordinates' rates (the ball
  // turns by its rate in the parent joint frame, the floating base by its own twist)
  const Real eps = 1e-6;
  auto moved = [&](Real t) {
    JointState js = given;
    for (int k = 0; k < 12; ++k) {
      if (k >= 2 && k < 6) continue;
      const int dof = k < 2 ? k : k - 1;
      js.position[k] += t * given.velocity[dof];
    }
    const Quat ball = quat_from_axis_angle(
        normalized(Vec3{given.velocity[2], given.velocity[3], given.velocity[4]}),
        t * norm(Vec3{given.velocity[2], given.velocity[3], given.velocity[4]}));
    store_quat(&js.position[2], ball * load_quat(&given.position[2]));
    BodyState b = base;
    store3(&b.pose[0], load3(&base.pose[0]) + t * load3(&base.velocity[0]));
    const Vec3 spin = load3(&base.velocity[3]);
    store_quat(&b.pose[3], quat_from_axis_angle(normalized(spin), t * norm(spin)) * base_quat);
    return *BodyStateFromJoints(*model, js, b);
  };
  const BodyState ahead = moved(eps), behind = moved(-eps);
  for (int i = 0; i < model->body_count(); ++i) {
    const Vec3 rate = (1 / (2 * eps)) * (load3(&ahead.pose[7 * i]) - load3(&behind.pose[7 * i]));
    const Quat turn =
        load_quat(&ahead.pose[7 * i + 3]) * conjugate(load_quat(&behind.pose[7 * i + 3]));
    const Vec3 spin = (1 / (2 * eps)) * quat_log(turn);
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(bodies.velocity[6 * i + k], rate[k], 1e-7) << "body " << i << " axis " << k;
      EXPECT_NEAR(bodies.velocity[6 * i + 3 + k], spin[k], 1e-7) << "body " << i << " axis " << k;
    }
  }

  // a step without forces: each coordinate moves on at about its rate, every row satisfied
  MustStep(*sim, w);
  test::ExpectHealthy(*sim, w);
  EXPECT_LE(sim->GetStats(w)->newton_iterations, 3);
  const JointState after = *sim->GetJointState(w);
  for (int k : {0, 1, 6, 7, 8, 9, 10, 11}) {
    const int dof = k < 2 ? k : k - 1;
    EXPECT_NEAR(after.position[k], given.position[k] + 0.01 * given.velocity[dof], 2e-3) << k;
  }
}

TEST(SimulatorTest, BadJointStatesAreRefusedWithoutTouchingTheWorld) {
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, test::MustCompile(JointZoo()));
  MustStep(*sim, w, 2);
  const std::string before = Bytes(*sim, w);
  JointState js = ZooJointState();
  js.position.pop_back();
  absl::Status s = sim->SetJointState(w, js);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("needs 12 positions and 11 velocities"));
  js = ZooJointState();
  js.velocity[10] = std::numeric_limits<Real>::quiet_NaN();
  s = sim->SetJointState(w, js);
  EXPECT_THAT(std::string(s.message()), HasSubstr("joint 6 ('joint6'): velocity is not finite"));
  js = ZooJointState();
  for (int k = 2; k < 6; ++k) js.position[k] = 0;
  s = sim->SetJointState(w, js);
  EXPECT_THAT(std::string(s.message()), HasSubstr("joint 2 ('joint2'): quaternion is zero"));
  EXPECT_EQ(Bytes(*sim, w), before);
}

// A keyframe is a whole starting state: Reset(world, name) gives its poses, velocities,
// controls and time, by name or by index; an unknown name is NotFound and changes nothing.
TEST(SimulatorTest, ResetToAKeyframeStartsThere) {
  ModelDesc d = Pendulum(1);
  KeyframeDesc up;
  up.name = "up";
  up.time = 2.5;
  const Quat turn = quat_from_axis_angle({0, 1, 0}, -Real(M_PI) / 2);
  up.body_pose = {0, 0, 1, turn.w, turn.x, turn.y, turn.z};
  up.body_velocity = {-0.5, 0, 0, 0, 0.5, 0};
  up.controls = {0.75};
  d.keyframes.push_back(up);
  KeyframeDesc still;
  still.controls = {-1};
  d.keyframes.push_back(still);
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, test::MustCompile(d));
  MustStep(*sim, w, 5);

  ASSERT_TRUE(sim->Reset(w, "up").ok());
  EXPECT_EQ(sim->GetStats(w)->time, 2.5);
  EXPECT_EQ(sim->GetStats(w)->step_count, 0u);
  EXPECT_EQ(*sim->GetControls(w), std::vector<Real>{0.75});
  const JointState joints = *sim->GetJointState(w);
  EXPECT_NEAR(joints.position[0], -M_PI / 2, 1e-12);  // the bob straight up
  EXPECT_NEAR(joints.velocity[0], 0.5, 1e-12);
  EXPECT_NEAR(test::BodyPos(*sim, w, 0).z, 1, 1e-12);

  const std::string from_up = Bytes(*sim, w);
  MustStep(*sim, w, 3);
  ASSERT_TRUE(sim->Reset(w, "0").ok());  // by index
  EXPECT_EQ(Bytes(*sim, w), from_up);

  ASSERT_TRUE(sim->Reset(w, "1").ok());  // unnamed: the initial state, its own controls
  EXPECT_EQ(*sim->GetControls(w), std::vector<Real>{-1});
  EXPECT_NEAR(test::BodyPos(*sim, w, 0).x, 1, 1e-12);
  EXPECT_EQ(sim->GetStats(w)->time, 0);

  const std::string before = Bytes(*sim, w);
  absl::Status s = sim->Reset(w, "home");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("has no keyframe 'home' (it has 'up', '')"));
  EXPECT_EQ(sim->Reset(w, "2").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Bytes(*sim, w), before);
}

TEST(SimulatorTest, KeyframesAreCheckedWithTheModel) {
  auto compile_error = [](KeyframeDesc key) {
    ModelDesc d = Pendulum(1);
    d.keyframes.push_back(std::move(key));
    return std::string(Model::Compile(d).status().message());
  };
  KeyframeDesc key;
  key.name = "k";
  key.body_pose = {0, 0, 1, 1, 0, 0};
  EXPECT_THAT(compile_error(key), HasSubstr("keyframe 0 ('k'): body_pose needs 7 values"));
  key.body_pose = {0, 0, 1, 0, 0, 0, 0};
  EXPECT_THAT(compile_error(key), HasSubstr("of body 0: quaternion is zero"));
  key.body_pose.clear();
  key.body_velocity = {0, 0, std::numeric_limits<Real>::infinity(), 0, 0, 0};
  EXPECT_THAT(compile_error(key), HasSubstr("body_velocity of body 0 is not finite"));
  key.body_velocity.clear();
  key.controls = {2};
  EXPECT_THAT(compile_error(key), HasSubstr("controls of actuator 0 ('motor') = 2"));
  key.controls = {1, 0};
  EXPECT_THAT(compile_error(key), HasSubstr("controls needs 1 values"));
}

TEST(SimulatorTest, NonFiniteWorldIsFrozenAndOthersKeepRunning) {
  auto sim = MustCreateSimulator(2);
  auto model = MustCompile(Pendulum(1));
  std::vector<WorldId> ids = *sim->CreateWorlds(model, 3);
  // A finite but absurd force and torque overflow to infinity inside the step (the bob's
  // velocity, h f / m, and its spin, h tau / I, past the largest double).
  std::vector<Real> wrench{1e308, 1e308, 1e308, 1e308, 1e308, 1e308};
  ASSERT_TRUE(sim->SetExternalForces(ids[1], wrench).ok());
  ASSERT_TRUE(sim->StepAll(5).ok());
  EXPECT_NE(sim->GetStats(ids[1])->flags & kWorldNonFinite, 0u);
  BodyState frozen = *sim->GetBodyState(ids[1]);
  for (Real x : frozen.pose) EXPECT_TRUE(std::isfinite(x));
  for (WorldId w : {ids[0], ids[2]}) {
    test::ExpectHealthy(*sim, w);
    EXPECT_EQ(sim->GetStats(w)->step_count, 5u);
  }
  ASSERT_TRUE(sim->Reset(ids[1]).ok());
  MustStep(*sim, ids[1], 5);
  test::ExpectHealthy(*sim, ids[1]);
}

// newton_stall_iterations ends a solve whose best iterate has stopped improving: with a
// tolerance no iterate reaches, every step runs to the Newton limit without it and stops a few
// iterations after its best with it, both flagged not converged and at nearly the same state.
TEST(SimulatorTest, NewtonStallEndsASolveThatStoppedImproving) {
  ModelDesc d = Pendulum(1);
  d.options.newton_tolerance = 1e-30;  // below round-off: no step converges
  d.options.newton_tail_iterations = 0;
  d.joints[0].drive.damping = 0;
  ModelDesc stalled = d;
  stalled.options.newton_stall_iterations = 4;
  auto sim = MustCreateSimulator();
  WorldId full = MustCreateWorld(*sim, MustCompile(d));
  WorldId stall = MustCreateWorld(*sim, MustCompile(stalled));
  for (int step = 0; step < 20; ++step) {
    ASSERT_TRUE(sim->StepAll(1).ok());
    WorldStats a = *sim->GetStats(full), b = *sim->GetStats(stall);
    EXPECT_EQ(a.newton_iterations, d.options.newton_iterations) << "step " << step;
    EXPECT_LT(b.newton_iterations, d.options.newton_iterations) << "step " << step;
    EXPECT_NE(a.flags & kWorldNotConverged, 0u);
    EXPECT_NE(b.flags & kWorldNotConverged, 0u);
  }
  BodyState a = *sim->GetBodyState(full), b = *sim->GetBodyState(stall);
  for (size_t i = 0; i < a.pose.size(); ++i) EXPECT_NEAR(a.pose[i], b.pose[i], 1e-9) << i;

  ModelDesc bad = d;
  bad.options.newton_stall_iterations = -1;
  absl::StatusOr<std::shared_ptr<const Model>> refused = Model::Compile(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("newton_stall_iterations"));
}

// newton_tail_iterations ends a solve that has not reached newton_tolerance after that many
// iterations once its residual is within newton_tail_residual: with a tolerance no iterate
// reaches, every step runs to the Newton limit without it, and with it stops converged at the
// tail's iteration, within the tail's tolerance and at nearly the same state.
TEST(SimulatorTest, NewtonTailEndsASlowSolveWithinItsTolerance) {
  ModelDesc d = Pendulum(1);
  d.options.newton_tolerance = 1e-30;  // below round-off: no step converges
  d.options.newton_tail_iterations = 0;
  d.joints[0].drive.damping = 0;
  ModelDesc tail = d;
  tail.options.newton_tail_iterations = 3;
  tail.options.newton_tail_residual = 1e-6;
  auto sim = MustCreateSimulator();
  WorldId full = MustCreateWorld(*sim, MustCompile(d));
  WorldId tailed = MustCreateWorld(*sim, MustCompile(tail));
  for (int step = 0; step < 20; ++step) {
    ASSERT_TRUE(sim->StepAll(1).ok());
    WorldStats a = *sim->GetStats(full), b = *sim->GetStats(tailed);
    EXPECT_EQ(a.newton_iterations, d.options.newton_iterations) << "step " << step;
    EXPECT_NE(a.flags & kWorldNotConverged, 0u);
    EXPECT_EQ(b.newton_iterations, 3) << "step " << step;
    EXPECT_EQ(b.flags & kWorldNotConverged, 0u) << "step " << step;
    EXPECT_LE(b.residual, 1e-6) << "step " << step;
  }
  BodyState a = *sim->GetBodyState(full), b = *sim->GetBodyState(tailed);
  for (size_t i = 0; i < a.pose.size(); ++i) EXPECT_NEAR(a.pose[i], b.pose[i], 1e-9) << i;

  ModelDesc bad = d;
  bad.options.newton_tail_iterations = -1;
  absl::StatusOr<std::shared_ptr<const Model>> refused = Model::Compile(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("newton_tail_iterations"));
  bad = d;
  bad.options.newton_tail_residual = 0;
  refused = Model::Compile(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("newton_tail_residual"));
}

// A pendulum released horizontally at h = 0.2 s with 3 Newton iterations a step: its steps
// fail whole and solve in halves and quarters.
ModelDesc PendulumThatNeedsHalving() {
  ModelDesc d = Pendulum(1);
  d.options.timestep = 0.2;
  d.options.newton_iterations = 3;
  d.options.halving_iterations = 3;
  d.options.halving_residual = 1e-6;
  return d;
}

// step_halvings: a step whose solve fails (still above halving_residual when its Newton
// iterations run out) is taken again from its start as two halves, down to h / 2^step_halvings.
// PendulumThatNeedsHalving keeps 2 to 6 attempts per step; the world's time still advances by
// exactly h per step, the statistics count every attempt, and without halving the same steps end
// unsolved.
TEST(SimulatorTest, FailedStepIsTakenAgainInHalves) {
  ModelDesc d = PendulumThatNeedsHalving();
  ModelDesc whole = d;
  whole.options.step_halvings = 0;
  auto sim = MustCreateSimulator();
  WorldId halved = MustCreateWorld(*sim, MustCompile(d));
  WorldId unhalved = MustCreateWorld(*sim, MustCompile(whole));
  int halved_steps = 0, unsolved_whole = 0;
  for (int step = 0; step < 10; ++step) {
    ASSERT_TRUE(sim->StepAll(1).ok());
    WorldStats a = *sim->GetStats(halved), b = *sim->GetStats(unhalved);
    std::printf(
        "step %d: halving %d substeps, %d Newton, residual %.3g; whole %d Newton, "
        "residual %.3g\n",
        step, a.substeps, a.newton_iterations, a.residual, b.newton_iterations, b.residual);
    EXPECT_GE(a.substeps, 1);
    EXPECT_LE(a.substeps, 1 << d.options.step_halvings);
    EXPECT_EQ(b.substeps, 1);
    halved_steps += a.substeps > 1;
    unsolved_whole += (b.flags & kWorldNotConverged) != 0;
    EXPECT_EQ(a.flags & kWorldNotConverged, 0u) << "step " << step;
    EXPECT_NEAR(a.time, (step + 1) * d.options.timestep, 1e-12);
    EXPECT_EQ(a.step_count, static_cast<uint64_t>(step + 1));
  }
  EXPECT_GT(halved_steps, 0);
  EXPECT_GT(unsolved_whole, 0);
  test::ExpectHealthy(*sim, halved);

  absl::StatusOr<SolverOptions> options = sim->GetOptions(halved);
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->step_halvings, d.options.step_halvings);
  EXPECT_EQ(options->halving_iterations, 3);
  EXPECT_EQ(options->halving_residual, Real(1e-6));
  for (auto [field, edit] : std::initializer_list<std::pair<const char*, void (*)(SolverOptions&)>>{
           {"step_halvings", [](SolverOptions& o) { o.step_halvings = -1; }},
           {"step_halvings", [](SolverOptions& o) { o.step_halvings = 11; }},
           {"halving_iterations", [](SolverOptions& o) { o.halving_iterations = 0; }},
           {"halving_residual", [](SolverOptions& o) { o.halving_residual = -1; }},
           {"loop_rows", [](SolverOptions& o) { o.loop_rows = -1; }},
           {"loop_rows", [](SolverOptions& o) { o.loop_rows = 17; }},
           {"missed_contact_depth", [](SolverOptions& o) { o.missed_contact_depth = -1e-3; }},
           {"missed_contact_depth",
            [](SolverOptions& o) { o.missed_contact_depth = std::nan(""); }},
           {"contact_redos", [](SolverOptions& o) { o.contact_redos = -1; }},
           {"contact_redos", [](SolverOptions& o) { o.contact_redos = 5; }},
           {"contact_presolve_sweeps", [](SolverOptions& o) { o.contact_presolve_sweeps = -1; }},
           {"contact_presolve_sweeps",
            [](SolverOptions& o) { o.contact_presolve_sweeps = 100001; }},
           // loop counts are bounded: one world's step must not hold its batch indefinitely
           {"newton_iterations", [](SolverOptions& o) { o.newton_iterations = 1001; }},
           {"cr_iterations", [](SolverOptions& o) { o.cr_iterations = 10001; }},
           {"line_search_steps", [](SolverOptions& o) { o.line_search_steps = 31; }},
       }) {
    ModelDesc bad = d;
    edit(bad.options);
    absl::StatusOr<std::shared_ptr<const Model>> refused = Model::Compile(bad);
    ASSERT_FALSE(refused.ok()) << field;
    EXPECT_THAT(std::string(refused.status().message()), HasSubstr(field));
  }
}

// A failed attempt is undone whole: its halves start from the step's start, the joints' impulses
// included, so a step of h that fails and goes again in halves is exactly two steps of h / 2.
// With one Newton iteration an attempt and a tolerance no iterate reaches, every whole attempt
// fails and every half is kept; kept, the failed attempt's impulses warm-started its halves, and
// the two pendulums parted at the first step.
TEST(SimulatorTest, HalvedStepStartsFromTheImpulsesItsStepStartedWith) {
  ModelDesc d = PendulumThatNeedsHalving();
  d.options.newton_iterations = 1;
  d.options.halving_iterations = 1;
  d.options.newton_tolerance = 1e-30;
  d.options.halving_residual = 1e-30;
  d.options.newton_tail_iterations = 0;
  d.options.step_halvings = 1;
  d.options.halving_carryover = false;
  ModelDesc half = d;
  half.options.timestep = d.options.timestep / 2;
  half.options.step_halvings = 0;
  auto sim = MustCreateSimulator();
  const WorldId halved = MustCreateWorld(*sim, MustCompile(d));
  const WorldId halves = MustCreateWorld(*sim, MustCompile(half));
  for (int step = 0; step < 5; ++step) {
    const WorldId both[] = {halved, halves};
    const int steps[] = {1, 2};
    ASSERT_TRUE(sim->Step(both, steps).ok());
    WorldStats stats = *sim->GetStats(halved);
    ASSERT_EQ(stats.substeps, 2) << "step " << step << ": the whole attempt did not fail";
    BodyState a = *sim->GetBodyState(halved), b = *sim->GetBodyState(halves);
    for (size_t i = 0; i < a.pose.size(); ++i) EXPECT_EQ(a.pose[i], b.pose[i]) << step << " " << i;
    for (size_t i = 0; i < a.velocity.size(); ++i)
      EXPECT_EQ(a.velocity[i], b.velocity[i]) << step << " " << i;
  }
}

// halving_carryover: a step starts at the level its predecessor ended at (one coarser where that
// one did not halve), so a run of steps that fail whole no longer fails the full length first
// every step. PendulumThatNeedsHalving takes fewer Newton iterations over its 10 steps with
// it, every step still solved and h long; the level is state: a snapshot taken after a halved
// step continues bit-identically in another world, and Reset clears it.
TEST(SimulatorTest, HalvingCarriesOverToTheNextStep) {
  ModelDesc d = PendulumThatNeedsHalving();
  ModelDesc whole_start = d;
  whole_start.options.halving_carryover = false;
  auto sim = MustCreateSimulator();
  const WorldId carried = MustCreateWorld(*sim, MustCompile(d));
  const WorldId restarted = MustCreateWorld(*sim, MustCompile(whole_start));
  int newton_carried = 0, newton_restarted = 0, halved = 0;
  std::string snapshot, after_snapshot;
  for (int step = 0; step < 10; ++step) {
    ASSERT_TRUE(sim->StepAll(1).ok());
    WorldStats a = *sim->GetStats(carried), b = *sim->GetStats(restarted);
    std::printf("step %d: carried %d substeps, %d Newton; restarted %d substeps, %d Newton\n", step,
                a.substeps, a.newton_iterations, b.substeps, b.newton_iterations);
    newton_carried += a.newton_iterations;
    newton_restarted += b.newton_iterations;
    EXPECT_EQ(a.flags & kWorldNotConverged, 0u) << "step " << step;
    EXPECT_EQ(b.flags & kWorldNotConverged, 0u) << "step " << step;
    EXPECT_NEAR(a.time, (step + 1) * d.options.timestep, 1e-12);
    if (!snapshot.empty() && after_snapshot.empty()) after_snapshot = Bytes(*sim, carried);
    if (a.substeps > 1 && snapshot.empty()) snapshot = *sim->Snapshot(carried);
    halved += a.substeps > 1;
  }
  EXPECT_GT(halved, 1);
  EXPECT_LT(newton_carried, newton_restarted);
  EXPECT_TRUE(sim->GetOptions(carried)->halving_carryover);
  EXPECT_FALSE(sim->GetOptions(restarted)->halving_carryover);

  // the snapshot's step level travels with it: restored here and in a new world, the step
  // after it repeats exactly
  ASSERT_FALSE(after_snapshot.empty());
  const WorldId copy = MustCreateWorld(*sim, MustCompile(d));
  ASSERT_TRUE(sim->Restore(carried, snapshot).ok());
  ASSERT_TRUE(sim->Restore(copy, snapshot).ok());
  ASSERT_TRUE(sim->Step({carried, copy}).ok());
  EXPECT_EQ(Bytes(*sim, carried), after_snapshot);
  EXPECT_EQ(Bytes(*sim, copy), after_snapshot);
  // Reset: the first step starts whole again, as a new world's does
  const WorldId reference = MustCreateWorld(*sim, MustCompile(d));
  ASSERT_TRUE(sim->Reset(carried).ok());
  ASSERT_TRUE(sim->Step({carried, reference}).ok());
  EXPECT_EQ(Bytes(*sim, carried), Bytes(*sim, reference));
  EXPECT_EQ(sim->GetStats(carried)->newton_iterations, sim->GetStats(reference)->newton_iterations);
}

// Once most worlds of a batch are done, the Newton iterations left run world by world
// (AXION_BATCHED_NEWTON_TRIPS=K: the first K trips as passes over the batch, then each world
// still iterating alone, pipeline.h world_finish_newton; AXION_BATCHED_NEWTON_WORLDS=N: the
// passes only while at least N worlds of the range iterate), so that a GPU stops launching
// passes over the whole batch for its last few worlds. A world's arithmetic is the same either
// way: every split gives the same bits and statistics. One batch of different scenes, so the
// split falls inside every kind of solve: GCR on the tree (spheres sliding in a box, limbs of
// the robot, its tendons' rows), CR, Jacobi worlds, islands that freeze, line searches, halved
// steps (the pendulum released at 0.2 s) and contact redos (the arm turning into its post). One
// thread steps the nine worlds in ranges of two (backend_cpu.cc), so with N = 2 a range's
// passes stop where the first of its two worlds stops iterating, inside the other's solve.
TEST(SimulatorTest, NewtonFinishedWorldByWorldGivesTheSameBits) {
  std::vector<ModelDesc> scenes_in_batch = {scenes::Stack(6),
                                            scenes::Chain(8),
                                            scenes::SpheresInBox(12),
                                            scenes::RobotJoints(),
                                            scenes::RobotJointsWithTendons(),
                                            scenes::Islands(true),
                                            PendulumThatNeedsHalving(),
                                            scenes::ArmTurningIntoPost(20)};
  ModelDesc jacobi = scenes::SpheresInBox(12);
  jacobi.options.preconditioner = Preconditioner::kJacobi;
  scenes_in_batch.push_back(jacobi);
  struct Run {
    std::vector<std::string> bytes;
    std::vector<WorldStats> stats;
    int most_newton = 0;  // the most Newton iterations one world took in a step
    int halved = 0;       // world-steps that halved
    int redone = 0;       // world-steps with a contact redo
  };
  auto run = [&](const char* variable, const char* value) {
    if (variable != nullptr) setenv(variable, value, 1);
    Run r;
    auto sim = MustCreateSimulator(1);
    std::vector<WorldId> ids;
    for (const ModelDesc& d : scenes_in_batch) ids.push_back(MustCreateWorld(*sim, MustCompile(d)));
    for (int step = 0; step < 40; ++step) {
      EXPECT_TRUE(sim->StepAll(1).ok());
      for (WorldId id : ids) {
        const WorldStats st = *sim->GetStats(id);
        r.most_newton = std::max(r.most_newton, st.newton_iterations);
        r.halved += st.substeps > 1;
        r.redone += st.contact_redos > 0;
      }
    }
    for (WorldId id : ids) {
      r.bytes.push_back(Bytes(*sim, id));
      r.stats.push_back(*sim->GetStats(id));
    }
    if (variable != nullptr) unsetenv(variable);
    return r;
  };
  const Run batched = run(nullptr, nullptr);
  EXPECT_GT(batched.most_newton, 10);  // splits at 0, 1 and 3 trips fall inside solves
  EXPECT_GT(batched.halved, 0);
  EXPECT_GT(batched.redone, 0);
  const std::pair<const char*, const char*> splits[] = {{"AXION_BATCHED_NEWTON_TRIPS", "0"},
                                                        {"AXION_BATCHED_NEWTON_TRIPS", "1"},
                                                        {"AXION_BATCHED_NEWTON_TRIPS", "3"},
                                                        {"AXION_BATCHED_NEWTON_WORLDS", "2"},
                                                        {"AXION_BATCHED_NEWTON_WORLDS", "3"}};
  for (const auto& [variable, value] : splits) {
    const Run split = run(variable, value);
    for (size_t w = 0; w < scenes_in_batch.size(); ++w) {
      const std::string what = std::string(variable) + "=" + value + ", world " + std::to_string(w);
      EXPECT_EQ(split.bytes[w], batched.bytes[w]) << what;
      EXPECT_EQ(split.stats[w].newton_iterations, batched.stats[w].newton_iterations) << what;
      EXPECT_EQ(split.stats[w].cr_iterations, batched.stats[w].cr_iterations) << what;
      EXPECT_EQ(split.stats[w].line_search_trials, batched.stats[w].line_search_trials) << what;
      EXPECT_EQ(split.stats[w].substeps, batched.stats[w].substeps) << what;
      EXPECT_EQ(split.stats[w].residual, batched.stats[w].residual) << what;
      EXPECT_EQ(split.stats[w].flags, batched.stats[w].flags) << what;
    }
  }
}

// Systems that no joint or contact connects are islands of their world (kernels_solver.h,
// world_build_islands), each with its own line search, best iterate and convergence test, while
// the linear solve runs over the whole world. In scenes::Islands a swinging 5-link chain shares
// its world with two boxes landing on each other and with a box held by a slide 1 mm inside the
// floor (joint and contact contradict each other, so its solve never converges). As one Newton
// system the wedged box's runaway trials cut the chain's steps and its unconverged best iterate
// was the chain's too; as islands the chain swings as in a world of its own. Once converged, the
// chain's island is frozen (kernels_common.h, island_frozen): it no longer follows the wedged
// box's 50 Newton iterations towards a tighter solution than the chain alone stops at, and
// stays within round-off of it (1.7e-14 m; 2.5e-8 m while converged islands iterated on).
TEST(IslandTest, AnIslandThatCannotConvergeLeavesTheOthersSolved) {
  ModelDesc chain = scenes::Chain(5);
  ModelDesc islands = scenes::Islands(true);
  for (ModelDesc* d : {&chain, &islands}) {
    d->options.timestep = 0.01;
    d->options.step_halvings = 0;  // whole steps: the chain's steps stay the same length
  }
  ModelDesc one_system = islands;
  one_system.options.islands = false;
  auto sim = MustCreateSimulator();
  const WorldId chain_world = MustCreateWorld(*sim, MustCompile(chain));
  const WorldId shared_world = MustCreateWorld(*sim, MustCompile(islands));
  const WorldId one_system_world = MustCreateWorld(*sim, MustCompile(one_system));
  Real largest = 0, largest_one_system = 0;
  int unsolved = 0;
  for (int step = 0; step < 100; ++step) {
    ASSERT_TRUE(sim->StepAll(1).ok());
    const WorldStats alone_stats = *sim->GetStats(chain_world);
    const WorldStats shared_stats = *sim->GetStats(shared_world);
    EXPECT_EQ(alone_stats.flags, 0u) << "step " << step;
    EXPECT_EQ(alone_stats.island_count, 1);
    EXPECT_EQ(shared_stats.flags & kWorldNonFinite, 0u) << "step " << step;
    EXPECT_GE(shared_stats.island_count, 3);  // chain, boxes (apart until they land), wedged box
    unsolved += (shared_stats.flags & kWorldNotConverged) != 0;
    const BodyState alone = *sim->GetBodyState(chain_world);
    const BodyState shared = *sim->GetBodyState(shared_world);
    const BodyState one = *sim->GetBodyState(one_system_world);
    EXPECT_EQ(sim->GetStats(one_system_world)->island_count, 1);
    for (size_t i = 0; i < alone.pose.size(); ++i) {  // the chain's bodies come first
      largest = std::max(largest, std::fabs(shared.pose[i] - alone.pose[i]));
      largest_one_system = std::max(largest_one_system, std::fabs(one.pose[i] - alone.pose[i]));
    }
  }
  std::printf(
      "%d of 100 steps unsolved; the chain beside the wedged box within %.3g m of the chain "
      "alone (%.3g m with the world as one system)\n",
      unsolved, largest, largest_one_system);
  EXPECT_GT(unsolved, 50);  // the contradiction holds
  EXPECT_LT(largest, 1e-12);
  EXPECT_GT(largest_one_system, 1e-6);  // SolverOptions::islands off: the coupling is back
}

// An island that is already solved takes no trial: solved exactly, its merit is 0 and no trial
// can lie below it, and the world's line search halved on for it until its last trial, every
// Newton iteration, evaluating the whole world's residuals each time (MuJoCo's humanoid100,
// whose objects fly and roll apart, took 5 trials per Newton iteration in the steps traced).
// Converged islands are now frozen, and an island whose trial lands within the tolerance takes
// it. Here a body in free flight beside scenes::Islands's chain and landing boxes changes
// neither their solves nor their motion.
TEST(IslandTest, ASolvedIslandTakesItsFirstTrial) {
  ModelDesc islands = scenes::Islands(false);
  islands.options.timestep = 0.01;
  ModelDesc with_flight = islands;
  BodyDesc flying;
  flying.mass = 2;
  flying.inertia = scenes::BoxInertia(2, {0.1, 0.2, 0.3});
  flying.pose.pos = {0, 10, 5};
  flying.linear_velocity = {1, 0, 3};
  flying.angular_velocity = {1, 2, 3};
  with_flight.bodies.push_back(flying);
  auto sim = MustCreateSimulator();
  const WorldId alone = MustCreateWorld(*sim, MustCompile(islands));
  const WorldId beside = MustCreateWorld(*sim, MustCompile(with_flight));
  int newton = 0, trials = 0;
  for (int step = 0; step < 60; ++step) {
    ASSERT_TRUE(sim->StepAll(1).ok());
    const WorldStats a = *sim->GetStats(alone), b = *sim->GetStats(beside);
    ASSERT_EQ(b.island_count, a.island_count + 1) << "step " << step;
    EXPECT_EQ(b.newton_iterations, a.newton_iterations) << "step " << step;
    EXPECT_EQ(b.line_search_trials, a.line_search_trials) << "step " << step;
    newton += b.newton_iterations;
    trials += b.line_search_trials;
    const BodyState pa = *sim->GetBodyState(alone), pb = *sim->GetBodyState(beside);
    for (size_t i = 0; i < pa.pose.size(); ++i)
      ASSERT_NEAR(pb.pose[i], pa.pose[i], 1e-12) << "step " << step;
  }
  std::printf("60 steps beside a body in flight: %d Newton iterations, %d line-search trials\n",
              newton, trials);
  EXPECT_GT(newton, 60);  // the landing boxes take Newton iterations past the first
}

// Domain randomisation: a world given a model of other values keeps its state and moves as a
// world created with that model from the same state; the same values again change no bit; a
// model of another structure or bad options are refused before any world changes.
TEST(SimulatorTest, NewModelsKeepTheStateAndChangeTheDynamics) {
  auto sim = MustCreateSimulator();
  auto model = MustCompile(Pendulum(1));
  ModelDesc heavy_desc = Pendulum(1);
  heavy_desc.bodies[0].mass = 3;
  heavy_desc.bodies[0].inertia = test::SphereInertia(3, 0.05);
  heavy_desc.joints[0].drive.damping = 4;
  heavy_desc.actuators[0].ctrl_min = -0.25;
  heavy_desc.actuators[0].ctrl_max = 0.25;
  auto heavy = MustCompile(heavy_desc);
  std::vector<WorldId> ids = *sim->CreateWorlds(model, 3);
  const WorldId changed = ids[0], same = ids[1], untouched = ids[2];
  auto reference = MustCreateSimulator();
  const WorldId ref_untouched = MustCreateWorld(*reference, model);
  for (WorldId w : ids) ASSERT_TRUE(sim->SetControls(w, std::vector<Real>{0.5}).ok());
  ASSERT_TRUE(reference->SetControls(ref_untouched, std::vector<Real>{0.5}).ok());
  for (int i = 0; i < 25; ++i) {
    ASSERT_TRUE(sim->StepAll().ok());
    MustStep(*reference, ref_untouched);
  }
  const std::string before = Bytes(*sim, changed);
  const JointState joints_before = *sim->GetJointState(changed);

  std::vector<WorldModelUpdate> updates(2);
  updates[0].world = changed;
  updates[0].model = heavy;
  updates[1].world = same;
  updates[1].model = MustCompile(Pendulum(1));  // another compile of the same scene
  ASSERT_TRUE(sim->SetWorldModels(updates).ok());
  EXPECT_EQ(*sim->GetModel(changed), heavy);
  EXPECT_EQ(Bytes(*sim, changed), before);
  EXPECT_EQ(sim->GetJointState(changed)->position, joints_before.position);
  EXPECT_EQ(*sim->GetControls(changed), std::vector<Real>{0.25});  // clamped into the new range
  EXPECT_EQ(sim->GetStats(changed)->step_count, 25u);

  // the changed world moves as a heavy world started from its state
  const WorldId fresh = MustCreateWorld(*reference, heavy);
  ASSERT_TRUE(reference->SetBodyState(fresh, *sim->GetBodyState(changed)).ok());
  ASSERT_TRUE(reference->SetControls(fresh, std::vector<Real>{0.25}).ok());
  Real apart = 0;
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(sim->StepAll().ok());
    MustStep(*reference, fresh);
    MustStep(*reference, ref_untouched);
    const Vec3 a = BodyPos(*sim, changed, 0), b = BodyPos(*reference, fresh, 0);
    ASSERT_NEAR(a.x, b.x, 1e-6) << "step " << i;
    ASSERT_NEAR(a.z, b.z, 1e-6) << "step " << i;
    apart = std::max(apart, std::fabs(a.z - BodyPos(*sim, untouched, 0).z));
  }
  EXPECT_GT(apart, 0.05);  // the damping holds the swing back
  // the same values change no bit, and the world beside them neither
  EXPECT_EQ(Bytes(*sim, same), Bytes(*sim, untouched));
  EXPECT_EQ(Bytes(*sim, untouched), Bytes(*reference, ref_untouched));

  // snapshots carry the new model's fingerprint
  const std::string snap = *sim->Snapshot(changed);
  EXPECT_FALSE(sim->Restore(untouched, snap).ok());
  MustStep(*sim, changed, 3);
  ASSERT_TRUE(sim->Restore(changed, snap).ok());

  // refused before any world changes
  const std::string changed_bytes = Bytes(*sim, changed), untouched_bytes = Bytes(*sim, untouched);
  auto refused = [&](std::vector<WorldModelUpdate> bad, absl::StatusCode code,
                     const std::string& text) {
    absl::Status st = sim->SetWorldModels(bad);
    EXPECT_EQ(st.code(), code) << st;
    EXPECT_THAT(std::string(st.message()), HasSubstr(text));
    EXPECT_EQ(Bytes(*sim, changed), changed_bytes);
    EXPECT_EQ(Bytes(*sim, untouched), untouched_bytes);
    EXPECT_EQ(*sim->GetModel(untouched), model);
  };
  ModelDesc extra_body = Pendulum(1);
  extra_body.bodies.push_back(extra_body.bodies[0]);
  ModelDesc slide = Pendulum(1);
  slide.joints[0].type = JointType::kPrismatic;
  ModelDesc limited = Pendulum(1);
  limited.joints[0].limited = true;
  limited.joints[0].lower = {-1};
  limited.joints[0].upper = {1};
  ModelDesc dry = Pendulum(1);
  dry.joints[0].friction_loss = 0.5;  // a friction-loss row the world's hinge lacks
  ModelDesc moved_shape = Pendulum(1);
  moved_shape.shapes[1].body = kWorldBody;
  SolverOptions bad_options;
  bad_options.timestep = -1;
  WorldModelUpdate ok_update{untouched, heavy, std::nullopt};
  refused({ok_update, {changed, MustCompile(extra_body), std::nullopt}},
          absl::StatusCode::kInvalidArgument, "the new model has 2 bodies where the world's has 1");
  refused({ok_update, {changed, MustCompile(slide), std::nullopt}},
          absl::StatusCode::kInvalidArgument,
          "joint 0 ('hinge') differs in kind, bodies or constraint rows");
  refused({{changed, MustCompile(limited), std::nullopt}}, absl::StatusCode::kInvalidArgument,
          "joint 0 ('hinge') differs");
  refused({{changed, MustCompile(dry), std::nullopt}}, absl::StatusCode::kInvalidArgument,
          "joint 0 ('hinge') differs");
  refused({{changed, MustCompile(moved_shape), std::nullopt}}, absl::StatusCode::kInvalidArgument,
          "shape 1 ('') is on body -1");
  refused({ok_update, {changed, nullptr, bad_options}}, absl::StatusCode::kInvalidArgument,
          "world 1: options: timestep must be positive");
  refused({ok_update, ok_update}, absl::StatusCode::kInvalidArgument, "listed twice");
  refused({ok_update, {12345, heavy, std::nullopt}}, absl::StatusCode::kNotFound,
          "world 12345 does not exist");
}

// A new centre of mass moves inside the body: its frame keeps its pose and velocity. New
// solver options (here gravity) apply from the next step.
TEST(SimulatorTest, NewModelsKeepTheBodyFramesAndNewOptionsApply) {
  auto sim = MustCreateSimulator();
  ModelDesc desc = Pendulum(1);
  auto model = MustCompile(desc);
  const WorldId w = MustCreateWorld(*sim, model);
  MustStep(*sim, w, 10);
  const BodyState before = *sim->GetBodyState(w);
  const JointState joints = *sim->GetJointState(w);
  desc.bodies[0].com = {0.02, 0, 0.01};
  SolverOptions weightless = desc.options;
  weightless.gravity = {0, 0, 0};
  WorldModelUpdate update{w, MustCompile(desc), weightless};
  ASSERT_TRUE(sim->SetWorldModels({&update, 1}).ok());
  const BodyState after = *sim->GetBodyState(w);
  for (size_t i = 0; i < before.pose.size(); ++i) EXPECT_NEAR(after.pose[i], before.pose[i], 1e-15);
  for (size_t i = 0; i < before.velocity.size(); ++i)
    EXPECT_NEAR(after.velocity[i], before.velocity[i], 1e-15);
  EXPECT_NEAR(sim->GetJointState(w)->position[0], joints.position[0], 1e-15);
  EXPECT_EQ(sim->GetOptions(w)->gravity.z, 0);
  // without gravity the swing keeps its rate but for the hinge's damping
  const Real rate = sim->GetJointState(w)->velocity[0];
  MustStep(*sim, w, 20);
  EXPECT_NEAR(sim->GetJointState(w)->velocity[0], rate, 0.02 * std::fabs(rate));
  EXPECT_GT(std::fabs(rate), 0.1);
}

// A model whose convex hull changes is re-packed into the batch rather than written in place:
// the world beside it keeps every bit, and the changed body settles on its new, smaller hull.
TEST(SimulatorTest, NewModelsWithOtherHullsArePackedAgain) {
  auto cube = [](Real half) {
    ModelDesc d;
    d.options.timestep = 0.01;
    BodyDesc body;
    body.name = "cube";
    body.mass = 1;
    body.inertia = test::SphereInertia(1, 0.1);
    body.pose.pos = {0, 0, 0.1};
    d.bodies.push_back(body);
    ShapeDesc ground;
    ground.type = ShapeType::kPlane;
    d.shapes.push_back(ground);
    ShapeDesc hull;
    hull.body = 0;
    hull.type = ShapeType::kConvexHull;
    for (int k = 0; k < 8; ++k)
      hull.vertices.push_back({k & 1 ? half : -half, k & 2 ? half : -half, k & 4 ? half : -half});
    d.shapes.push_back(hull);
    return d;
  };
  auto sim = MustCreateSimulator();
  std::vector<WorldId> ids = *sim->CreateWorlds(MustCompile(cube(0.1)), 2);
  auto reference = MustCreateSimulator();
  const WorldId ref = MustCreateWorld(*reference, MustCompile(cube(0.1)));
  ASSERT_TRUE(sim->StepAll(10).ok());
  MustStep(*reference, ref, 10);
  const std::string before = Bytes(*sim, ids[0]);
  WorldModelUpdate update{ids[0], MustCompile(cube(0.05)), std::nullopt};
  ASSERT_TRUE(sim->SetWorldModels({&update, 1}).ok());
  EXPECT_EQ(Bytes(*sim, ids[0]), before);
  ASSERT_TRUE(sim->StepAll(100).ok());
  MustStep(*reference, ref, 100);
  EXPECT_EQ(Bytes(*sim, ids[1]), Bytes(*reference, ref));
  EXPECT_NEAR(BodyPos(*sim, ids[0], 0).z, 0.05, 2e-3);  // fallen onto its smaller hull
  EXPECT_NEAR(BodyPos(*sim, ids[1], 0).z, 0.10, 2e-3);
}

// Hull arrays are model data: a batch packs each distinct hull once, whichever shapes, worlds
// and models use it. Two bodies of one 600-point mesh (every point a hull vertex) rest on a
// floor. Worlds of one model, of a second model compiled from the same description and of
// models of other sizes share a batch: each settles on its own hull, the copies step bit for bit
// as a world alone, and the batch holds one copy of each distinct hull.
TEST(SimulatorTest, WorldsShareTheHullsOfOneMesh) {
  constexpr int kPoints = 600;
  // two bodies of hulls of points on spheres of radius `first` and `second`
  auto balls = [](Real first, Real second) {
    ModelDesc d;
    d.options.timestep = 0.01;
    ShapeDesc ground;
    ground.type = ShapeType::kPlane;
    d.shapes.push_back(ground);
    for (int b = 0; b < 2; ++b) {
      const Real radius = b == 0 ? first : second;
      BodyDesc body;
      body.mass = 1;
      body.inertia = test::SphereInertia(1, radius);
      body.pose.pos = {Real(0.5) * b, 0, radius + Real(0.02)};
      d.bodies.push_back(body);
      ShapeDesc hull;
      hull.body = b;
      hull.type = ShapeType::kConvexHull;
      for (int k = 0; k < kPoints; ++k) {  // a Fibonacci sphere
        const Real z = 1 - (2 * k + Real(1)) / kPoints, ring = std::sqrt(1 - z * z);
        const Real angle = Real(2.399963229728653) * k;
        hull.vertices.push_back(radius * Vec3{ring * std::cos(angle), ring * std::sin(angle), z});
      }
      d.shapes.push_back(hull);
    }
    return d;
  };
  const double hull_bytes = kPoints * 3 * sizeof(Real);  // its vertices alone, a lower bound
  auto reference = MustCreateSimulator();
  const WorldId alone = MustCreateWorld(*reference, MustCompile(balls(0.1, 0.1)));
  MustStep(*reference, alone, 100);

  auto sim = MustCreateSimulator();
  const std::shared_ptr<const Model> one = MustCompile(balls(0.1, 0.1));
  const std::shared_ptr<const Model> copy = MustCompile(balls(0.1, 0.1));
  std::vector<WorldId> same, other;
  for (int k = 0; k < 8; ++k) {
    same.push_back(MustCreateWorld(*sim, k % 2 ? copy : one));
    other.push_back(MustCreateWorld(*sim, MustCompile(balls(0.11 + 0.01 * k, 0.11 + 0.01 * k))));
  }
  ASSERT_TRUE(sim->StepAll(100).ok());
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(Bytes(*sim, same[k]), Bytes(*reference, alone)) << "world " << k;
    for (int b = 0; b < 2; ++b) {
      EXPECT_NEAR(BodyPos(*sim, other[k], b).z, 0.11 + 0.01 * k, 2e-3) << "world " << k;
    }
  }

  // the batch above holds 9 hulls; one of 16 models of two meshes each would hold 32
  auto distinct = MustCreateSimulator();
  for (int k = 0; k < 16; ++k) {
    MustCreateWorld(*distinct, MustCompile(balls(0.1 + 0.001 * k, 0.2 + 0.001 * k)));
  }
  const double saved = double(distinct->memory_bytes()) - double(sim->memory_bytes());
  std::printf(
      "16 worlds: %zu bytes with 32 distinct hulls, %zu with 9 (%.1f hulls' vertices saved)\n",
      distinct->memory_bytes(), sim->memory_bytes(), saved / hull_bytes);
  EXPECT_GT(saved, 23 * hull_bytes);
}

// A paddle on a mocap body, moved a centimetre per step, pushes a ball along the floor, and a
// body welded to the mocap body rides with it; the poses survive a re-pack, snapshots carry
// them, a reset returns them, and bad poses are refused.
TEST(SimulatorTest, MocapBodiesCarryTheirShapesAndJoints) {
  auto sim = MustCreateSimulator();
  auto model = MustCompile(scenes::MocapPaddle());
  ASSERT_EQ(model->mocap_count(), 1);
  EXPECT_EQ(model->FindMocapBody("paddle"), 0);
  std::vector<WorldId> ids = *sim->CreateWorlds(model, 2);
  const WorldId w = ids[0];
  EXPECT_EQ(*sim->GetMocapPoses(w), (std::vector<Real>{-0.2, 0, 0.1, 1, 0, 0, 0}));
  std::string snapshot;
  for (int step = 1; step <= 40; ++step) {
    const Real x = -0.2 + 0.01 * step;
    ASSERT_TRUE(sim->SetMocapPoses(w, std::vector<Real>{x, 0, 0.1, 1, 0, 0, 0}).ok());
    if (step == 20) {
      snapshot = *sim->Snapshot(w);
      // a re-pack (another world made) keeps where the paddle is
      ASSERT_TRUE(sim->CreateWorlds(model, 1).ok());
    }
    ASSERT_TRUE(sim->Step(std::vector<WorldId>{w}).ok());
    const Vec3 handle = BodyPos(*sim, w, 1);
    ASSERT_NEAR(handle.x, x, 1e-6) << "step " << step;
    ASSERT_NEAR(handle.z, 0.5, 1e-6) << "step " << step;
  }
  // the paddle's face is at 0.25: the ball ahead of it, pushed 0.15 m, still on the floor
  const Vec3 ball = BodyPos(*sim, w, 0);
  EXPECT_GT(ball.x, 0.25 + 0.05 - 2e-3);
  EXPECT_NEAR(ball.z, 0.05, 2e-3);
  EXPECT_NEAR(BodyPos(*sim, ids[1], 0).x, 0.1, 1e-9);  // the other world's paddle never moved

  // a snapshot puts the paddle back where it was taken; a reset where it started
  ASSERT_TRUE(sim->Restore(w, snapshot).ok());
  EXPECT_NEAR(sim->GetMocapPoses(w)->at(0), -0.2 + 0.01 * 20, 1e-15);
  ASSERT_TRUE(sim->Reset(w).ok());
  EXPECT_EQ(*sim->GetMocapPoses(w), (std::vector<Real>{-0.2, 0, 0.1, 1, 0, 0, 0}));
  MustStep(*sim, w, 5);
  EXPECT_NEAR(BodyPos(*sim, w, 1).x, -0.2, 1e-6);

  // refused, the world untouched
  const std::string before = Bytes(*sim, w);
  EXPECT_EQ(sim->SetMocapPoses(w, std::vector<Real>{0, 0, 0}).code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status s = sim->SetMocapPoses(w, std::vector<Real>{0, 0, 0, 0, 0, 0, 0});
  EXPECT_THAT(std::string(s.message()), HasSubstr("quaternion of mocap body 0 ('paddle') is zero"));
  s = sim->SetMocapPoses(
      w, std::vector<Real>{std::numeric_limits<Real>::quiet_NaN(), 0, 0, 1, 0, 0, 0});
  EXPECT_THAT(std::string(s.message()), HasSubstr("pose of mocap body 0 ('paddle') is not finite"));
  EXPECT_EQ(Bytes(*sim, w), before);
  EXPECT_EQ(sim->GetMocapPoses(w)->at(0), -0.2);
}

// A keyframe places the mocap bodies; the parent side of a joint on one is kept in its frame.
TEST(SimulatorTest, KeyframesPlaceMocapBodies) {
  ModelDesc d = scenes::MocapPaddle();
  KeyframeDesc key;
  key.name = "raised";
  key.mocap_pose = {0.3, 0.1, 0.4, std::cos(0.25), 0, 0, std::sin(0.25)};
  d.keyframes.push_back(key);
  auto model = MustCompile(d);
  EXPECT_NEAR(model->joint_parent_frame()[0].pos.z, 0.4, 1e-15);  // 0.4 above the paddle
  auto sim = MustCreateSimulator();
  const WorldId w = MustCreateWorld(*sim, model);
  ASSERT_TRUE(sim->Reset(w, "raised").ok());
  const std::vector<Real> placed = *sim->GetMocapPoses(w);
  for (int k = 0; k < 7; ++k) EXPECT_NEAR(placed[k], key.mocap_pose[k], 1e-15);
  MustStep(*sim, w, 30);
  const Vec3 handle = BodyPos(*sim, w, 1);
  EXPECT_NEAR(handle.x, 0.3, 1e-6);
  EXPECT_NEAR(handle.y, 0.1, 1e-6);
  EXPECT_NEAR(handle.z, 0.8, 1e-6);
  d.keyframes[0].mocap_pose.pop_back();
  EXPECT_THAT(std::string(Model::Compile(d).status().message()),
              HasSubstr("mocap_pose needs 7 values (7 per mocap body), got 6"));
  d = scenes::MocapPaddle();
  d.shapes[2].mocap = 0;  // the ball's shape is on a body
  EXPECT_THAT(std::string(Model::Compile(d).status().message()),
              HasSubstr("is set on a shape of a moving body"));
}

TEST(SimulatorTest, CudaBackendRequestIsClearWhenUnavailable) {
  if (CudaAvailable()) GTEST_SKIP() << "a CUDA device is present";
  SimulatorOptions o;
  o.backend = Backend::kCuda;
  absl::StatusOr<std::unique_ptr<Simulator>> s = Simulator::Create(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  o.backend = Backend::kAuto;
  s = Simulator::Create(o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->backend(), Backend::kCpu);
}

}  // namespace
}  // namespace axion
