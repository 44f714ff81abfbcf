// Joint state and keyframes through the API: SetState and Reset with joint positions and
// velocities, checked against the arm's analytic forward kinematics, and scenes' keyframes.
#include <cmath>
#include <filesystem>
#include <limits>

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

class ServerStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = StartServer(TestServerOptions());
    ASSERT_NE(server_, nullptr);
    client_ = Connect(*server_, "alice");
  }

  std::string SnapshotOf(uint64_t id) {
    absl::StatusOr<v1::SnapshotResponse> snapshot = client_->Snapshot({id});
    EXPECT_TRUE(snapshot.ok()) << snapshot.status();
    return snapshot.ok() ? snapshot->snapshots(0).data() : "";
  }

  std::unique_ptr<AxionServer> server_;
  std::unique_ptr<client::Client> client_;
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

}  // namespace
}  // namespace axion::server::test
