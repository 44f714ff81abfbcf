// Joint state and keyframes through the API: SetState and Reset with joint positions and
// velocities, checked against the arm's analytic forward kinematics, scenes' keyframes, and a
// model file's own coordinates (MuJoCo's qpos and qvel) observed after a reset to its key.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "server_test_util.h"

namespace axion::server::test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kLink = 1.0;    // length of each link (m)
constexpr double kHeight = 2.0;  // height of the shoulder (m)

// A two-link arm in the y-z plane: the upper link hinged to the world at the shoulder (0, 0, 2),
// the lower link hinged to its tip; both hinges turn about the world x axis. Each body's frame
// is at its link's centre, the links pointing along +y at zero angles. A torque motor on the
// shoulder, ctrl range [-5, 5]. With `fixed_base` false the upper link is free (no shoulder
// joint, no motor): a floating base with one limb.
v1::ModelDescription TwoLinkArmScene(bool fixed_base = true) {
  v1::ModelDescription model;
  model.set_name("arm");
  for (const char* name : {"upper", "lower"}) {
    v1::Body* link = model.add_bodies();
    link->set_name(name);
    link->set_mass(1);
    for (double i : {0.1, 0.01, 0.1}) link->add_inertia(i);
    link->mutable_pose()->mutable_quat()->set_w(1);
  }
  SetVec(model.mutable_bodies(0)->mutable_pose()->mutable_pos(), 0, kLink / 2, kHeight);
  SetVec(model.mutable_bodies(1)->mutable_pose()->mutable_pos(), 0, 1.5 * kLink, kHeight);
  if (fixed_base) {
    v1::Joint* shoulder = model.add_joints();
    shoulder->set_name("shoulder");
    shoulder->set_type(v1::JOINT_TYPE_REVOLUTE);
    shoulder->set_parent(-1);
    shoulder->set_child(0);
    SetVec(shoulder->mutable_child_frame()->mutable_pos(), 0, -kLink / 2, 0);
  }
  v1::Joint* elbow = model.add_joints();
  elbow->set_name("elbow");
  elbow->set_type(v1::JOINT_TYPE_REVOLUTE);
  elbow->set_parent(0);
  elbow->set_child(1);
  SetVec(elbow->mutable_child_frame()->mutable_pos(), 0, -kLink / 2, 0);
  if (fixed_base) {
    v1::Actuator* motor = model.add_actuators();
    motor->set_name("motor");
    motor->set_type(v1::ACTUATOR_TYPE_EFFORT);
    motor->set_joint(0);
    motor->set_ctrl_limited(true);
    motor->set_ctrl_min(-5);
    motor->set_ctrl_max(5);
  }
  model.mutable_options()->mutable_timestep()->set_value(kTimestep);
  return model;
}

// Pose (x y z, w x y z) and velocity (linear then angular) of both links of the arm at shoulder
// and elbow angles q1, q2 and rates qd1, qd2: a turn by t about x takes (0, y, 0) to
// (0, y cos t, y sin t), and the quaternion of that turn is (cos t/2, sin t/2, 0, 0).
struct ArmState {
  std::vector<double> pose;      // (2 x 7)
  std::vector<double> velocity;  // (2 x 6)
};

ArmState ArmKinematics(double q1, double q2, double qd1 = 0, double qd2 = 0) {
  const double t2 = q1 + q2;
  const double elbow_y = kLink * std::cos(q1), elbow_z = kHeight + kLink * std::sin(q1);
  ArmState s;
  s.pose = {0,
            kLink / 2 * std::cos(q1),
            kHeight + kLink / 2 * std::sin(q1),
            std::cos(q1 / 2),
            std::sin(q1 / 2),
            0,
            0,  //
            0,
            elbow_y + kLink / 2 * std::cos(t2),
            elbow_z + kLink / 2 * std::sin(t2),
            std::cos(t2 / 2),
            std::sin(t2 / 2),
            0,
            0};
  // v = omega x r with omega = (w, 0, 0): (0, -w r_z, w r_y)
  const double w2 = qd1 + qd2;
  s.velocity = {0,
                -qd1 * kLink / 2 * std::sin(q1),
                qd1 * kLink / 2 * std::cos(q1),
                qd1,
                0,
                0,
                0,
                -qd1 * kLink * std::sin(q1) - w2 * kLink / 2 * std::sin(t2),
                qd1 * kLink * std::cos(q1) + w2 * kLink / 2 * std::cos(t2),
                w2,
                0,
                0};
  return s;
}

// Observed float32 values against expected doubles; quaternions (offsets 3-6 of each 7 of a
// pose) are compared up to sign.
void ExpectPoses(const std::vector<float>& actual, const std::vector<double>& expected,
                 double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t b = 0; b < expected.size() / 7; ++b) {
    SCOPED_TRACE(::testing::Message() << "body " << b);
    for (size_t k = 0; k < 3; ++k) EXPECT_NEAR(actual[7 * b + k], expected[7 * b + k], tolerance);
    double dot = 0;
    for (size_t k = 3; k < 7; ++k) dot += actual[7 * b + k] * expected[7 * b + k];
    EXPECT_NEAR(std::abs(dot), 1, tolerance);
  }
}

void ExpectNear(const std::vector<float>& actual, const std::vector<double>& expected,
                double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
  }
}

class ServerStateTest : public ServerTest {
 protected:
  std::string SnapshotOf(uint64_t id) {
    absl::StatusOr<v1::SnapshotResponse> snapshot = client_->Snapshot({id});
    EXPECT_TRUE(snapshot.ok()) << snapshot.status();
    return snapshot.ok() ? snapshot->snapshots(0).data() : "";
  }
};

// Joint angles and rates place the links where the analytic forward kinematics puts them, in
// each world its own, and read back as given; a request with joint positions alone keeps the
// joint velocities.
TEST_F(ServerStateTest, SetStateJointStatePlacesTheArm) {
  const std::vector<uint64_t> ids = MustCreate(*client_, TwoLinkArmScene(), 2);
  ASSERT_EQ(ids.size(), 2u);
  v1::SetStateRequest set;
  for (uint64_t id : ids) set.add_world_ids(id);
  // (world_count x joint_position_count) and (world_count x joint_dof_count)
  set.set_joint_position(client::PackFloat32(std::vector<float>{0.3f, -0.7f, 1.2f, 0.4f}));
  set.set_joint_velocity(client::PackFloat32(std::vector<float>{0.5f, -1.0f, 0, 2.0f}));
  ASSERT_TRUE(client_->SetState(set).ok());

  v1::GetStateResponse state = MustGetState(*client_, ids);
  ExpectNear(client::UnpackFloat32(state.observations().joint_position()),
             {0.3f, -0.7f, 1.2f, 0.4f}, 1e-6);
  ExpectNear(client::UnpackFloat32(state.observations().joint_velocity()), {0.5f, -1.0f, 0, 2.0f},
             1e-5);
  // the float32 angles, as the server received them
  const ArmState world0 = ArmKinematics(0.3f, -0.7f, 0.5f, -1.0f);
  const ArmState world1 = ArmKinematics(1.2f, 0.4f, 0, 2.0f);
  std::vector<double> pose = world0.pose, velocity = world0.velocity;
  pose.insert(pose.end(), world1.pose.begin(), world1.pose.end());
  velocity.insert(velocity.end(), world1.velocity.begin(), world1.velocity.end());
  ExpectPoses(client::UnpackFloat32(state.observations().body_pose()), pose, 1e-5);
  ExpectNear(client::UnpackFloat32(state.observations().body_velocity()), velocity, 1e-5);

  v1::SetStateRequest positions_only;
  positions_only.add_world_ids(ids[0]);
  positions_only.set_joint_position(client::PackFloat32(std::vector<float>{0, 0}));
  ASSERT_TRUE(client_->SetState(positions_only).ok());
  state = MustGetState(*client_, {ids[0]});
  ExpectNear(client::UnpackFloat32(state.observations().joint_velocity()), {0.5f, -1.0f}, 1e-5);
  ExpectPoses(client::UnpackFloat32(state.observations().body_pose()), ArmKinematics(0, 0).pose,
              1e-6);
}

// A floating base's body state in the same request is applied first: the limb follows the
// base to where the request puts it, not from where the base was.
TEST_F(ServerStateTest, SetStatePlacesTheFloatingBaseBeforeItsLimb) {
  const std::vector<uint64_t> ids = MustCreate(*client_, TwoLinkArmScene(/*fixed_base=*/false), 1);
  ASSERT_EQ(ids.size(), 1u);
  v1::SetStateRequest set;
  set.add_world_ids(ids[0]);
  // base 5 m up; the limb's pose here is overwritten by the elbow's angle
  set.set_body_pose(client::PackFloat32(std::vector<float>{0, 0.5f, 7, 1, 0, 0, 0,  //
                                                           9, 9, 9, 1, 0, 0, 0}));
  set.set_joint_position(client::PackFloat32(std::vector<float>{0.5f}));
  ASSERT_TRUE(client_->SetState(set).ok());
  const v1::GetStateResponse state = MustGetState(*client_, ids);
  ExpectNear(client::UnpackFloat32(state.observations().joint_position()), {0.5f}, 1e-6);
  const std::vector<float> pose = client::UnpackFloat32(state.observations().body_pose());
  ASSERT_EQ(pose.size(), 14u);
  // the lower link hangs from the base's tip (0, 1, 7), turned by 0.5 rad about x
  EXPECT_NEAR(pose[7 + 0], 0, 1e-5);
  EXPECT_NEAR(pose[7 + 1], 1 + 0.5 * std::cos(0.5f), 1e-5);
  EXPECT_NEAR(pose[7 + 2], 7 + 0.5 * std::sin(0.5f), 1e-5);
}

// Bad joint arrays are refused, naming the field, before any world changes: a wrong size, a NaN
// in one world of two (with a valid body pose in the same request), and a ball joint's zero
// quaternion in the second world (which only the engine's forward kinematics checks).
TEST_F(ServerStateTest, BadJointStateChangesNoWorld) {
  const std::vector<uint64_t> ids = MustCreate(*client_, TwoLinkArmScene(), 2);
  ASSERT_EQ(ids.size(), 2u);
  ASSERT_TRUE(client_->Step(StepRequestFor(ids, 3)).ok());
  const std::string before0 = SnapshotOf(ids[0]), before1 = SnapshotOf(ids[1]);

  v1::SetStateRequest wrong_size;
  for (uint64_t id : ids) wrong_size.add_world_ids(id);
  wrong_size.set_joint_position(client::PackFloat32(std::vector<float>{0.1f, 0.2f, 0.3f}));
  absl::Status status = client_->SetState(wrong_size).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("joint_position: expected 4 float32 values"));

  v1::SetStateRequest nan;
  for (uint64_t id : ids) nan.add_world_ids(id);
  nan.set_body_pose(client::PackFloat32(std::vector<float>{
      0, 0, 5, 1, 0, 0, 0, 0, 1, 5, 1, 0, 0, 0, 0, 0, 5, 1, 0, 0, 0, 0, 1, 5, 1, 0, 0, 0}));
  nan.set_joint_velocity(
      client::PackFloat32(std::vector<float>{0, 0, 1, std::numeric_limits<float>::quiet_NaN()}));
  status = client_->SetState(nan).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("joint_velocity"));
  EXPECT_THAT(status.message(), HasSubstr(std::to_string(ids[1])));
  EXPECT_THAT(status.message(), HasSubstr("not finite"));
  EXPECT_EQ(SnapshotOf(ids[0]), before0);
  EXPECT_EQ(SnapshotOf(ids[1]), before1);

  // A body on a ball joint to the world.
  v1::ModelDescription ball_scene;
  ball_scene.set_name("ball_joint");
  v1::Body* body = ball_scene.add_bodies();
  body->set_name("rod");
  body->set_mass(1);
  SetVec(body->mutable_pose()->mutable_pos(), 0, 0, 1);
  v1::Joint* ball = ball_scene.add_joints();
  ball->set_name("socket");
  ball->set_type(v1::JOINT_TYPE_BALL);
  ball->set_parent(-1);
  ball->set_child(0);
  SetVec(ball->mutable_child_frame()->mutable_pos(), 0, 0, 0.5);
  const std::vector<uint64_t> balls = MustCreate(*client_, ball_scene, 2);
  ASSERT_EQ(balls.size(), 2u);
  const std::string ball0 = SnapshotOf(balls[0]), ball1 = SnapshotOf(balls[1]);
  v1::SetStateRequest zero_quaternion;
  for (uint64_t id : balls) zero_quaternion.add_world_ids(id);
  zero_quaternion.set_joint_position(
      client::PackFloat32(std::vector<float>{0.6f, 0.8f, 0, 0, 0, 0, 0, 0}));
  status = client_->SetState(zero_quaternion).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("joint_position: world " + std::to_string(balls[1])));
  EXPECT_THAT(status.message(), HasSubstr("'socket'"));
  EXPECT_THAT(status.message(), HasSubstr("quaternion is zero"));
  EXPECT_EQ(SnapshotOf(balls[0]), ball0);
  EXPECT_EQ(SnapshotOf(balls[1]), ball1);
  // the good quaternion alone is taken: a turn of 2 acos(0.6) about x
  zero_quaternion.clear_world_ids();
  zero_quaternion.add_world_ids(balls[0]);
  zero_quaternion.set_joint_position(client::PackFloat32(std::vector<float>{0.6f, 0.8f, 0, 0}));
  ASSERT_TRUE(client_->SetState(zero_quaternion).ok());
  ExpectNear(
      client::UnpackFloat32(MustGetState(*client_, {balls[0]}).observations().joint_position()),
      {0.6f, 0.8f, 0, 0}, 1e-6);
}

// The arm with two keyframes: "bent" (q = (0.3, -0.7), moving, t = 1.5 s, motor at 2 N m) and an
// unnamed one (q = (1, 0.5), t = 0.25 s), reached by its index.
v1::ModelDescription ArmWithKeyframes() {
  v1::ModelDescription model = TwoLinkArmScene();
  const ArmState bent = ArmKinematics(0.3, -0.7, 0.5, -1.0);
  v1::Keyframe* key = model.add_keyframes();
  key->set_name("bent");
  key->set_time(1.5);
  for (double v : bent.pose) key->add_body_pose(v);
  for (double v : bent.velocity) key->add_body_velocity(v);
  key->add_controls(2);
  v1::Keyframe* unnamed = model.add_keyframes();
  unnamed->set_time(0.25);
  for (double v : ArmKinematics(1, 0.5).pose) unnamed->add_body_pose(v);
  return model;
}

TEST_F(ServerStateTest, ResetToKeyframeByNameAndIndex) {
  absl::StatusOr<v1::CreateWorldsResponse> created =
      client_->CreateWorlds(client::ModelScene(ArmWithKeyframes()), 2);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_THAT(created->description().keyframe_names(), ElementsAre("bent", ""));
  const std::vector<uint64_t> ids(created->world_ids().begin(), created->world_ids().end());
  ASSERT_TRUE(client_->Step(StepRequestFor(ids, 4)).ok());

  v1::ResetRequest reset;
  reset.add_world_ids(ids[0]);
  reset.set_keyframe("bent");
  absl::StatusOr<v1::ResetResponse> done = client_->Reset(reset);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_THAT(done->world_ids(), ElementsAre(ids[0]));
  v1::GetStateResponse state = MustGetState(*client_, {ids[0]});
  ExpectNear(client::UnpackFloat32(state.observations().joint_position()), {0.3, -0.7}, 1e-5);
  ExpectNear(client::UnpackFloat32(state.observations().joint_velocity()), {0.5, -1.0}, 1e-5);
  EXPECT_EQ(state.observations().stats().time(0), 1.5);
  EXPECT_EQ(state.observations().stats().step_count(0), 0u);
  EXPECT_THAT(client::UnpackFloat32(state.observations().controls()), ElementsAre(2.0f));

  // by index, masked: only the second world; the keyframe's controls are left empty (zero)
  v1::ResetRequest by_index;
  for (uint64_t id : ids) by_index.add_world_ids(id);
  by_index.add_mask(false);
  by_index.add_mask(true);
  by_index.set_keyframe("1");
  done = client_->Reset(by_index);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_THAT(done->world_ids(), ElementsAre(ids[1]));
  state = MustGetState(*client_, ids);
  ExpectNear(client::UnpackFloat32(state.observations().joint_position()), {0.3, -0.7, 1, 0.5},
             1e-5);
  EXPECT_EQ(state.observations().stats().time(1), 0.25);
  EXPECT_THAT(client::UnpackFloat32(state.observations().controls()), ElementsAre(2.0f, 0.0f));

  // the keyframe, then the request's joint positions over it (its velocities kept)
  reset.set_joint_position(client::PackFloat32(std::vector<float>{0.1f, 0.2f}));
  ASSERT_TRUE(client_->Reset(reset).ok());
  state = MustGetState(*client_, {ids[0]});
  ExpectNear(client::UnpackFloat32(state.observations().joint_position()), {0.1f, 0.2f}, 1e-6);
  ExpectNear(client::UnpackFloat32(state.observations().joint_velocity()), {0.5, -1.0}, 1e-5);
  ExpectPoses(client::UnpackFloat32(state.observations().body_pose()),
              ArmKinematics(0.1f, 0.2f).pose, 1e-5);
  EXPECT_EQ(state.observations().stats().time(0), 1.5);
}

// An unknown keyframe is NOT_FOUND naming the keyframes there are, and no world is reset: not
// even one listed before a world whose scene has no such keyframe.
TEST_F(ServerStateTest, UnknownKeyframeIsNotFoundAndResetsNothing) {
  const std::vector<uint64_t> arms = MustCreate(*client_, ArmWithKeyframes(), 1);
  const std::vector<uint64_t> balls = MustCreate(*client_, FallingBallScene(), 1);
  ASSERT_EQ(arms.size(), 1u);
  ASSERT_EQ(balls.size(), 1u);
  ASSERT_TRUE(client_->Step(StepRequestFor({arms[0], balls[0]}, 3)).ok());
  const std::string arm_before = SnapshotOf(arms[0]), ball_before = SnapshotOf(balls[0]);

  v1::ResetRequest reset;
  reset.add_world_ids(arms[0]);
  reset.set_keyframe("jump");
  absl::Status status = client_->Reset(reset).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("keyframe: world " + std::to_string(arms[0])));
  EXPECT_THAT(status.message(), HasSubstr("no keyframe 'jump'"));
  EXPECT_THAT(status.message(), HasSubstr("'bent', ''"));
  reset.set_keyframe("2");  // one past the last index
  EXPECT_EQ(client_->Reset(reset).status().code(), absl::StatusCode::kNotFound);

  reset.add_world_ids(balls[0]);
  reset.set_keyframe("bent");
  status = client_->Reset(reset).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("world " + std::to_string(balls[0])));
  EXPECT_THAT(status.message(), HasSubstr("scene 'falling_ball' has no keyframe 'bent'"));
  EXPECT_THAT(status.message(), HasSubstr("it has none"));
  EXPECT_EQ(SnapshotOf(arms[0]), arm_before);
  EXPECT_EQ(SnapshotOf(balls[0]), ball_before);

  // a wrong size next to a good keyframe changes nothing either
  reset.clear_world_ids();
  reset.add_world_ids(arms[0]);
  reset.set_joint_velocity(client::PackFloat32(std::vector<float>{1}));
  status = client_->Reset(reset).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("joint_velocity"));
  EXPECT_EQ(SnapshotOf(arms[0]), arm_before);
}

// Keyframes come back in the described model exactly as sent (doubles kept), and a scene made
// from the described model describes the same again; a keyframe of the wrong size is refused
// by name.
TEST_F(ServerStateTest, KeyframesSurviveTheModelDescriptionRoundTrip) {
  v1::ModelDescription scene = ArmWithKeyframes();
  scene.mutable_keyframes(0)->set_time(1.0 / 3.0);
  scene.mutable_keyframes(0)->set_body_velocity(0, 0.1);
  const std::vector<uint64_t> ids = MustCreate(*client_, scene, 1);
  ASSERT_EQ(ids.size(), 1u);
  absl::StatusOr<v1::DescribeWorldResponse> described =
      client_->DescribeWorld(ids[0], /*include_model=*/true);
  ASSERT_TRUE(described.ok()) << described.status();
  const v1::ModelDescription& model = described->model();
  ASSERT_EQ(model.keyframes_size(), 2);
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE(::testing::Message() << "keyframe " << k);
    EXPECT_EQ(model.keyframes(k).SerializeAsString(), scene.keyframes(k).SerializeAsString());
  }
  EXPECT_EQ(model.keyframes(0).time(), 1.0 / 3.0);
  EXPECT_EQ(model.keyframes(0).body_velocity(0), 0.1);
  EXPECT_THAT(described->description().keyframe_names(), ElementsAre("bent", ""));

  const std::vector<uint64_t> again = MustCreate(*client_, model, 1);
  ASSERT_EQ(again.size(), 1u);
  absl::StatusOr<v1::DescribeWorldResponse> redescribed =
      client_->DescribeWorld(again[0], /*include_model=*/true);
  ASSERT_TRUE(redescribed.ok()) << redescribed.status();
  EXPECT_EQ(redescribed->model().SerializeAsString(), model.SerializeAsString());

  scene.mutable_keyframes(1)->add_controls(1);
  scene.mutable_keyframes(1)->add_controls(1);
  absl::Status status = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("keyframe 1"));
  EXPECT_THAT(status.message(), HasSubstr("controls"));
}

// The server stores a world's scene, keyframes included, across a restart.
TEST(ServerStatePersistenceTest, KeyframesSurviveARestart) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("axion_server_keyframe_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ServerOptions options = TestServerOptions();
  options.snapshot_dir = dir.string();
  std::vector<uint64_t> ids;
  {
    std::unique_ptr<AxionServer> server = StartServer(options);
    ASSERT_NE(server, nullptr);
    ids = MustCreate(*Connect(*server, "alice"), ArmWithKeyframes(), 1);
    ASSERT_EQ(ids.size(), 1u);
    ASSERT_TRUE(server->Shutdown().ok());
  }
  {
    std::unique_ptr<AxionServer> server = StartServer(options);
    ASSERT_NE(server, nullptr);
    std::unique_ptr<client::Client> alice = Connect(*server, "alice");
    absl::StatusOr<v1::DescribeWorldResponse> described = alice->DescribeWorld(ids[0], true);
    ASSERT_TRUE(described.ok()) << described.status();
    EXPECT_THAT(described->description().keyframe_names(), ElementsAre("bent", ""));
    ASSERT_EQ(described->model().keyframes_size(), 2);
    EXPECT_EQ(described->model().keyframes(0).SerializeAsString(),
              ArmWithKeyframes().keyframes(0).SerializeAsString());
    v1::ResetRequest reset;
    reset.add_world_ids(ids[0]);
    reset.set_keyframe("bent");
    ASSERT_TRUE(alice->Reset(reset).ok());
    ExpectNear(client::UnpackFloat32(MustGetState(*alice, ids).observations().joint_position()),
               {0.3, -0.7}, 1e-5);
  }
  std::filesystem::remove_all(dir);
}

// ---- mocap bodies -----------------------------------------------------------------------------

// A mocap "hand" at (0, 0, 1) and a 1 kg block welded to it 0.2 m along x, gravity on.
constexpr char kHandXml[] = R"(<mujoco>
  <worldbody>
    <body name="hand" mocap="true" pos="0 0 1">
      <geom type="box" size="0.05 0.05 0.05" contype="0" conaffinity="0"/></body>
    <body name="block" pos="0.2 0 1"><freejoint/><geom type="box" size="0.05 0.05 0.05" mass="1"/>
    </body>
  </worldbody>
  <equality><weld body1="hand" body2="block"/></equality>
</mujoco>)";

// The client moves each world's hand (SetState, then Step inputs); the welded block follows,
// in each world its own; observations report the hands; bad poses change nothing.
TEST_F(ServerStateTest, MocapPosesMoveWhatIsWeldedToThem) {
  absl::StatusOr<v1::CreateWorldsResponse> created =
      client_->CreateWorlds(client::MjcfScene(kHandXml), 2);
  ASSERT_TRUE(created.ok()) << created.status();
  const std::vector<uint64_t> ids(created->world_ids().begin(), created->world_ids().end());
  absl::StatusOr<v1::DescribeWorldResponse> described = client_->DescribeWorld(ids[0], true);
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_THAT(described->description().mocap_names(), ElementsAre("hand"));
  ASSERT_EQ(described->model().mocap_bodies_size(), 1);

  v1::SetStateRequest set;
  for (uint64_t id : ids) set.add_world_ids(id);
  set.set_mocap_pose(client::PackFloat32({0.5, 0, 1, 2, 0, 0, 0, 0, 0.5, 1, 1, 0, 0, 0}));
  absl::StatusOr<v1::SetStateResponse> done = client_->SetState(set);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_TRUE(client_->Step(StepRequestFor(ids, 5)).ok());
  // the hands where they were put (the first quaternion normalised), the blocks beside them
  v1::StepRequest step = StepRequestFor(ids, 5);
  step.set_mocap_pose(client::PackFloat32({0.6, 0, 1, 1, 0, 0, 0, 0, 0.6, 1, 1, 0, 0, 0}));
  step.mutable_observe()->set_mocap_pose(true);
  step.mutable_observe()->set_body_pose(true);
  absl::StatusOr<v1::StepResponse> stepped = client_->Step(step);
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  ExpectNear(client::UnpackFloat32(stepped->observations().mocap_pose()),
             {0.6, 0, 1, 1, 0, 0, 0, 0, 0.6, 1, 1, 0, 0, 0}, 1e-6);
  const std::vector<float> pose = client::UnpackFloat32(stepped->observations().body_pose());
  ASSERT_EQ(pose.size(), 14u);
  ExpectNear({pose[0], pose[1], pose[2]}, {0.8, 0, 1}, 1e-5);
  ExpectNear({pose[7], pose[8], pose[9]}, {0.2, 0.6, 1}, 1e-5);

  // a zero quaternion is refused, naming the world and the mocap body; nothing moves
  const std::string before = SnapshotOf(ids[1]);
  set.set_mocap_pose(client::PackFloat32({0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}));
  done = client_->SetState(set);
  EXPECT_EQ(done.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(done.status().message()),
              HasSubstr(absl::StrCat("mocap_pose: world ", ids[1], ", mocap body 0")));
  step.set_mocap_pose(client::PackFloat32({0, 0, 1, 1, 0, 0, 0}));
  EXPECT_EQ(client_->Step(step).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SnapshotOf(ids[1]), before);
  absl::StatusOr<v1::GetStateResponse> state = [&] {
    v1::GetStateRequest request;
    request.add_world_ids(ids[0]);
    request.mutable_observe()->set_mocap_pose(true);
    return client_->GetState(request);
  }();
  ASSERT_TRUE(state.ok());
  ExpectNear(client::UnpackFloat32(state->observations().mocap_pose()), {0.6, 0, 1, 1, 0, 0, 0},
             1e-6);
}

TEST(ServerStatePersistenceTest, MocapPosesSurviveARestart) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("axion_server_mocap_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ServerOptions options = TestServerOptions();
  options.snapshot_dir = dir.string();
  uint64_t id = 0;
  v1::GetStateRequest request;
  request.mutable_observe()->set_mocap_pose(true);
  request.mutable_observe()->set_body_pose(true);
  {
    std::unique_ptr<AxionServer> server = StartServer(options);
    ASSERT_NE(server, nullptr);
    std::unique_ptr<client::Client> alice = Connect(*server, "alice");
    absl::StatusOr<v1::CreateWorldsResponse> created =
        alice->CreateWorlds(client::MjcfScene(kHandXml), 1);
    ASSERT_TRUE(created.ok()) << created.status();
    id = created->world_ids(0);
    v1::StepRequest step = StepRequestFor({id}, 3);
    step.set_mocap_pose(client::PackFloat32({0.1, 0.2, 1.1, 1, 0, 0, 0}));
    ASSERT_TRUE(alice->Step(step).ok());
    ASSERT_TRUE(server->Shutdown().ok());
  }
  {
    std::unique_ptr<AxionServer> server = StartServer(options);
    ASSERT_NE(server, nullptr);
    std::unique_ptr<client::Client> alice = Connect(*server, "alice");
    request.add_world_ids(id);
    absl::StatusOr<v1::GetStateResponse> state = alice->GetState(request);
    ASSERT_TRUE(state.ok()) << state.status();
    ExpectNear(client::UnpackFloat32(state->observations().mocap_pose()),
               {0.1, 0.2, 1.1, 1, 0, 0, 0}, 1e-6);
    ASSERT_TRUE(alice->Step(StepRequestFor({id}, 3)).ok());
    state = alice->GetState(request);
    const std::vector<float> pose = client::UnpackFloat32(state->observations().body_pose());
    ExpectNear({pose[0], pose[1], pose[2]}, {0.3, 0.2, 1.1}, 1e-5);
  }
  std::filesystem::remove_all(dir);
}

// ---- file coordinates -----------------------------------------------------------------------

// A free torso carrying a thigh on a ball joint and a wrist on three orthogonal hinges at one
// anchor, which the importer merges into one generic joint (its joint_position holds a rotation
// vector's components, not MuJoCo's angles). The key's qpos: the root's position and quaternion
// (7), the hip's quaternion (4), w1, w2, w3 (3); its qvel: 6, 3 and 3. Both quaternions are
// exactly unit, so they are MuJoCo's qpos as written.
constexpr char kCreatureXml[] = R"(<mujoco model="creature">
  <option gravity="0 0 0"/>
  <worldbody>
    <body name="torso" pos="0 0 1" euler="10 20 30">
      <freejoint name="root"/>
      <site name="imu"/>
      <geom type="box" size="0.2 0.1 0.05"/>
      <body name="thigh" pos="-0.3 0 0">
        <joint name="hip" type="ball" pos="0.02 0 0"/>
        <geom type="capsule" fromto="0 0 0 -0.3 0 0" size="0.03"/>
        <site name="knee" pos="-0.3 0 0"/>
      </body>
      <body name="wrist" pos="0 0.3 0" euler="0 0 20">
        <joint name="w1" axis="1 0 0"/><joint name="w2" axis="0 1 0"/><joint name="w3" axis="0 0 1"/>
        <geom type="box" size="0.05 0.04 0.03"/>
      </body>
    </body>
  </worldbody>
  <keyframe>
    <key name="pose" qpos="0.5 -0.2 1.3  0.7 0.1 -0.5 0.5  0.9 0.3 -0.1 0.3  0.3 -0.4 0.5"
         qvel="0.1 -0.2 0.3 0.5 -0.4 0.6  1.1 0.7 -0.9  0.8 -0.3 0.6"/>
  </keyframe>
  <tendon>
    <spatial name="hamstring"><site site="imu"/><site site="knee"/></spatial>
  </tendon>
  <sensor>
    <framepos name="torso_position" objtype="xbody" objname="torso"/>
    <ballquat name="hip_quat" joint="hip"/>
    <jointpos name="w2_angle" joint="w2"/>
    <gyro name="imu_gyro" site="imu"/>
    <clock name="time"/>
    <tendonpos name="hamstring_length" tendon="hamstring"/>
  </sensor>
</mujoco>)";
const std::vector<double> kKeyQpos = {0.5, -0.2, 1.3,  0.7, 0.1, -0.5, 0.5,
                                      0.9, 0.3,  -0.1, 0.3, 0.3, -0.4, 0.5};
const std::vector<double> kKeyQvel = {0.1, -0.2, 0.3,  0.5, -0.4, 0.6,
                                      1.1, 0.7,  -0.9, 0.8, -0.3, 0.6};

v1::ObservationRequest FileObservations() {
  v1::ObservationRequest observe;
  observe.set_file_position(true);
  observe.set_file_velocity(true);
  observe.set_joint_position(true);
  observe.set_sensor_data(true);
  observe.set_stats(true);
  return observe;
}

v1::GetStateResponse MustGetFileState(client::Client& client, const std::vector<uint64_t>& ids) {
  v1::GetStateRequest request;
  for (uint64_t id : ids) request.add_world_ids(id);
  *request.mutable_observe() = FileObservations();
  absl::StatusOr<v1::GetStateResponse> state = client.GetState(request);
  EXPECT_TRUE(state.ok()) << state.status();
  return state.ok() ? *state : v1::GetStateResponse();
}

void ResetToPose(client::Client& client, uint64_t id) {
  v1::ResetRequest reset;
  reset.add_world_ids(id);
  reset.set_keyframe("pose");
  absl::StatusOr<v1::ResetResponse> done = client.Reset(reset);
  ASSERT_TRUE(done.ok()) << done.status();
}

// After a reset to the key, the world's file coordinates are the key's qpos and qvel (float32),
// through GetState, Step and StepStream alike, while the merged wrist's joint_position is not
// MuJoCo's hinge angles; a world left at its initial state reads qpos0 beside it.
TEST_F(ServerStateTest, FileCoordinatesAreTheKeysQposAndQvel) {
  absl::StatusOr<v1::CreateWorldsResponse> created =
      client_->CreateWorlds(client::MjcfScene(kCreatureXml), 2);
  ASSERT_TRUE(created.ok()) << created.status();
  const std::vector<uint64_t> ids(created->world_ids().begin(), created->world_ids().end());
  const v1::WorldDescription& description = created->description();
  EXPECT_EQ(description.file_position_count(), 14);
  EXPECT_EQ(description.file_velocity_count(), 12);
  const v1::SourceMap& source = description.source();
  ASSERT_EQ(source.joints_size(), 5);
  const std::vector<std::string> names = {"root", "hip", "w1", "w2", "w3"};
  const std::vector<v1::SourceJointKind> kinds = {
      v1::SOURCE_JOINT_KIND_FREE, v1::SOURCE_JOINT_KIND_BALL, v1::SOURCE_JOINT_KIND_HINGE,
      v1::SOURCE_JOINT_KIND_HINGE, v1::SOURCE_JOINT_KIND_HINGE};
  const std::vector<int> file_body = {0, 1, 2, 2, 2};
  const std::vector<int> position_offset = {0, 7, 11, 12, 13}, position_count = {7, 4, 1, 1, 1};
  const std::vector<int> velocity_offset = {0, 6, 9, 10, 11}, velocity_count = {6, 3, 1, 1, 1};
  for (int j = 0; j < 5; ++j) {
    SCOPED_TRACE(names[j]);
    const v1::SourceJoint& joint = source.joints(j);
    EXPECT_EQ(joint.name(), names[j]);
    EXPECT_EQ(joint.kind(), kinds[j]);
    EXPECT_EQ(joint.file_body(), file_body[j]);
    EXPECT_EQ(joint.file_position_offset(), position_offset[j]);
    EXPECT_EQ(joint.file_position_count(), position_count[j]);
    EXPECT_EQ(joint.file_velocity_offset(), velocity_offset[j]);
    EXPECT_EQ(joint.file_velocity_count(), velocity_count[j]);
  }
  // the three hinges share one generic joint
  const int wrist = source.joints(2).joint();
  ASSERT_GE(wrist, 0);
  EXPECT_EQ(source.joints(3).joint(), wrist);
  EXPECT_EQ(description.joints(wrist).type(), v1::JOINT_TYPE_GENERIC);

  ResetToPose(*client_, ids[0]);
  const v1::GetStateResponse state = MustGetFileState(*client_, ids);
  const std::vector<float> position = client::UnpackFloat32(state.observations().file_position());
  const std::vector<float> velocity = client::UnpackFloat32(state.observations().file_velocity());
  ASSERT_EQ(position.size(), 2u * 14);
  ASSERT_EQ(velocity.size(), 2u * 12);
  ExpectNear({position.begin(), position.begin() + 14}, kKeyQpos, 2e-6);
  ExpectNear({velocity.begin(), velocity.begin() + 12}, kKeyQvel, 2e-6);
  // the second world at qpos0: the torso where the file puts it, every joint at its zero
  ExpectNear({position.begin() + 14, position.begin() + 17}, {0, 0, 1}, 1e-6);
  ExpectNear({position.begin() + 21, position.end()}, {1, 0, 0, 0, 0, 0, 0}, 1e-6);
  ExpectNear({velocity.begin() + 12, velocity.end()}, std::vector<double>(12, 0), 1e-6);
  // the engine's own coordinates of the wrist are a rotation vector's, off MuJoCo's angles
  const std::vector<float> joint_position =
      client::UnpackFloat32(state.observations().joint_position());
  const int wrist_offset = description.joints(wrist).position_offset();
  double largest = 0;
  for (int k = 0; k < 3; ++k) {
    largest = std::max(largest, std::abs(joint_position[wrist_offset + source.joints(2 + k).dof()] -
                                         kKeyQpos[11 + k]));
  }
  EXPECT_GT(largest, 0.01);

  // a step of 0 steps observes the same; so does the stream
  v1::StepRequest step = StepRequestFor({ids[0]}, 0);
  *step.mutable_observe() = FileObservations();
  absl::StatusOr<v1::StepResponse> stepped = client_->Step(step);
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  ExpectNear(client::UnpackFloat32(stepped->observations().file_position()), kKeyQpos, 2e-6);
  ExpectNear(client::UnpackFloat32(stepped->observations().file_velocity()), kKeyQvel, 2e-6);
  std::unique_ptr<client::StepStream> stream = client_->OpenStepStream();
  v1::StepStreamRequest streamed;
  streamed.set_request_id(7);
  *streamed.mutable_step() = step;
  ASSERT_TRUE(stream->Write(streamed).ok());
  absl::StatusOr<v1::StepStreamResponse> answer = stream->Read();
  ASSERT_TRUE(answer.ok()) << answer.status();
  ASSERT_EQ(answer->status().code(), 0) << answer->status().message();
  ExpectNear(client::UnpackFloat32(answer->step().observations().file_position()), kKeyQpos, 2e-6);
  ExpectNear(client::UnpackFloat32(answer->step().observations().file_velocity()), kKeyQvel, 2e-6);
  EXPECT_TRUE(stream->Finish().ok());
}

// The file's sensors, described with the world and read with its state: at the key, the
// torso's position, the hip's quaternion, w2's angle and the gyro (a site at the torso's origin:
// the free joint's body-frame spin) are the key's qpos and qvel; the clock the world's time; the
// hamstring (from the torso's origin to the thigh's end, 0.28 m and 0.32 m either side of the
// hip) is |(-0.28, 0, 0) + R_hip (-0.32, 0, 0)| = 0.5693505 m.
TEST_F(ServerStateTest, SensorsReadTheKeysState) {
  absl::StatusOr<v1::CreateWorldsResponse> created =
      client_->CreateWorlds(client::MjcfScene(kCreatureXml), 1);
  ASSERT_TRUE(created.ok()) << created.status();
  const uint64_t id = created->world_ids(0);
  const v1::WorldDescription& description = created->description();
  EXPECT_EQ(description.sensor_data_count(), 3 + 4 + 1 + 3 + 1 + 1);
  const std::vector<std::string> names = {"torso_position", "hip_quat", "w2_angle",
                                          "imu_gyro",       "time",     "hamstring_length"};
  const std::vector<v1::SensorType> types = {v1::SENSOR_TYPE_FRAMEPOS, v1::SENSOR_TYPE_BALLQUAT,
                                             v1::SENSOR_TYPE_JOINTPOS, v1::SENSOR_TYPE_GYRO,
                                             v1::SENSOR_TYPE_CLOCK,    v1::SENSOR_TYPE_TENDONPOS};
  const std::vector<int> offsets = {0, 3, 7, 8, 11, 12};
  ASSERT_EQ(description.source().sensors_size(), 6);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(description.source().sensors(i).name(), names[i]);
    EXPECT_EQ(description.source().sensors(i).type(), types[i]);
    EXPECT_EQ(description.source().sensors(i).offset(), offsets[i]);
  }
  ResetToPose(*client_, id);
  std::vector<double> expected = {kKeyQpos[0], kKeyQpos[1], kKeyQpos[2]};
  expected.insert(expected.end(), kKeyQpos.begin() + 7, kKeyQpos.begin() + 11);
  expected.push_back(kKeyQpos[12]);
  expected.insert(expected.end(), kKeyQvel.begin() + 3, kKeyQvel.begin() + 6);
  expected.push_back(0);
  expected.push_back(0.5693505071570588);
  const v1::GetStateResponse state = MustGetFileState(*client_, {id});
  ExpectNear(client::UnpackFloat32(state.observations().sensor_data()), expected, 2e-6);
  // two steps later the clock reads their time
  v1::StepRequest step = StepRequestFor({id}, 2);
  step.mutable_observe()->set_sensor_data(true);
  absl::StatusOr<v1::StepResponse> stepped = client_->Step(step);
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  const std::vector<float> after = client::UnpackFloat32(stepped->observations().sensor_data());
  ASSERT_EQ(after.size(), 13u);
  EXPECT_NEAR(after[11], 2 * description.timestep(), 1e-7);
}

// A world made from a ModelDescription has no model file: asking for its file coordinates is
// FAILED_PRECONDITION naming it, alone or beside a world that has them, and a Step so refused
// neither applies its controls nor steps; the stream answers in band and goes on.
TEST_F(ServerStateTest, FileCoordinatesOfAWorldWithoutAModelFileAreRefused) {
  absl::StatusOr<v1::CreateWorldsResponse> wheel =
      client_->CreateWorlds(client::ModelScene(WheelScene()), 1);
  ASSERT_TRUE(wheel.ok()) << wheel.status();
  EXPECT_EQ(wheel->description().file_position_count(), 0);
  EXPECT_EQ(wheel->description().file_velocity_count(), 0);
  const std::vector<uint64_t> creatures = [&] {
    absl::StatusOr<v1::CreateWorldsResponse> created =
        client_->CreateWorlds(client::MjcfScene(kCreatureXml), 1);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? std::vector<uint64_t>{created->world_ids(0)} : std::vector<uint64_t>{};
  }();
  ASSERT_EQ(creatures.size(), 1u);
  const uint64_t creature = creatures[0], wheel_id = wheel->world_ids(0);
  const std::string wheel_before = SnapshotOf(wheel_id), creature_before = SnapshotOf(creature);

  v1::GetStateRequest get;
  get.add_world_ids(creature);
  get.add_world_ids(wheel_id);
  get.mutable_observe()->set_file_velocity(true);
  absl::Status status = client_->GetState(get).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              HasSubstr("observe.file_velocity: world " + std::to_string(wheel_id)));
  EXPECT_THAT(status.message(), HasSubstr("no model file"));
  get.mutable_observe()->set_file_velocity(false);
  get.mutable_observe()->set_sensor_data(true);
  status = client_->GetState(get).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              HasSubstr("observe.sensor_data: world " + std::to_string(wheel_id)));

  v1::StepRequest step = StepRequestFor({creature, wheel_id}, 3);
  step.set_controls(client::PackFloat32(std::vector<float>{1}));
  step.mutable_observe()->set_file_position(true);
  status = client_->Step(step).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              HasSubstr("observe.file_position: world " + std::to_string(wheel_id)));
  EXPECT_EQ(SnapshotOf(wheel_id), wheel_before);
  EXPECT_EQ(SnapshotOf(creature), creature_before);

  std::unique_ptr<client::StepStream> stream = client_->OpenStepStream();
  v1::StepStreamRequest refused;
  refused.set_request_id(1);
  *refused.mutable_step() = StepRequestFor({wheel_id}, 1);
  refused.mutable_step()->mutable_observe()->set_file_position(true);
  v1::StepStreamRequest fine = refused;
  fine.set_request_id(2);
  fine.mutable_step()->mutable_observe()->set_file_position(false);
  ASSERT_TRUE(stream->Write(refused).ok());
  ASSERT_TRUE(stream->Write(fine).ok());
  absl::StatusOr<v1::StepStreamResponse> first = stream->Read();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->status().code(), static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION));
  EXPECT_THAT(first->status().message(), HasSubstr(std::to_string(wheel_id)));
  absl::StatusOr<v1::StepStreamResponse> second = stream->Read();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->status().code(), 0) << second->status().message();
  EXPECT_TRUE(stream->Finish().ok());
  // only the good request stepped the wheel
  EXPECT_EQ(MustGetState(*client_, {wheel_id}).observations().stats().step_count(0), 1u);
}

// The source map the file coordinates come from is stored with the world: after a restart the
// world reads the same file coordinates, bit for bit, describes the same layout, and resets to
// the key's qpos.
TEST(ServerStatePersistenceTest, FileCoordinatesSurviveARestart) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("axion_server_file_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ServerOptions options = TestServerOptions();
  options.snapshot_dir = dir.string();
  std::vector<uint64_t> ids;
  v1::GetStateResponse before;
  std::string description_before;
  {
    std::unique_ptr<AxionServer> server = StartServer(options);
    ASSERT_NE(server, nullptr);
    std::unique_ptr<client::Client> alice = Connect(*server, "alice");
    absl::StatusOr<v1::CreateWorldsResponse> created =
        alice->CreateWorlds(client::MjcfScene(kCreatureXml), 1);
    ASSERT_TRUE(created.ok()) << created.status();
    ids = {created->world_ids(0)};
    description_before = created->description().SerializeAsString();
    ResetToPose(*alice, ids[0]);
    ASSERT_TRUE(alice->Step(StepRequestFor(ids, 5)).ok());  // away from the key
    before = MustGetFileState(*alice, ids);
    ASSERT_TRUE(server->Shutdown().ok());
  }
  {
    std::unique_ptr<AxionServer> server = StartServer(options);
    ASSERT_NE(server, nullptr);
    std::unique_ptr<client::Client> alice = Connect(*server, "alice");
    const v1::GetStateResponse after = MustGetFileState(*alice, ids);
    ASSERT_FALSE(after.observations().file_position().empty());
    EXPECT_EQ(after.observations().file_position(), before.observations().file_position());
    EXPECT_EQ(after.observations().file_velocity(), before.observations().file_velocity());
    ASSERT_FALSE(after.observations().sensor_data().empty());
    EXPECT_EQ(after.observations().sensor_data(), before.observations().sensor_data());
    absl::StatusOr<v1::DescribeWorldResponse> described = alice->DescribeWorld(ids[0], false);
    ASSERT_TRUE(described.ok()) << described.status();
    EXPECT_EQ(described->description().SerializeAsString(), description_before);
    ResetToPose(*alice, ids[0]);
    const v1::GetStateResponse reset = MustGetFileState(*alice, ids);
    ExpectNear(client::UnpackFloat32(reset.observations().file_position()), kKeyQpos, 2e-6);
    ExpectNear(client::UnpackFloat32(reset.observations().file_velocity()), kKeyQvel, 2e-6);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace axion::server::test
