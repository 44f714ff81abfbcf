// Worlds' physical parameters through the API (GetParameters, SetParameters): each world of a
// batch its own masses, gears, frictions and gravity, checked against analytic motion; values
// read and written back change no bit; bad values and structure changes are refused before
// any world changes; the values survive a restart.
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "server_test_util.h"

namespace axion::server::test {
namespace {

using ::testing::HasSubstr;

std::vector<float> Floats(const std::string& bytes) { return client::UnpackFloat32(bytes); }

v1::GetParametersResponse MustGetParameters(client::Client& client,
                                            const std::vector<uint64_t>& ids) {
  absl::StatusOr<v1::GetParametersResponse> got = client.GetParameters(ids);
  EXPECT_TRUE(got.ok()) << got.status();
  return got.ok() ? *got : v1::GetParametersResponse();
}

v1::SetParametersRequest SetFor(const std::vector<uint64_t>& ids) {
  v1::SetParametersRequest request;
  for (uint64_t id : ids) request.add_world_ids(id);
  return request;
}

// A box (1 kg, half extents 0.1 m) resting on the ground and sent sliding along x at 2 m/s:
// Coulomb friction mu (both shapes', so their geometric mean) stops it after v^2 / (2 mu g).
v1::ModelDescription SlidingBoxScene() {
  v1::ModelDescription model;
  model.set_name("sliding_box");
  v1::Shape* ground = model.add_shapes();
  ground->set_name("ground");
  ground->set_body(-1);
  ground->set_type(v1::SHAPE_TYPE_PLANE);
  v1::Body* box = model.add_bodies();
  box->set_name("box");
  box->set_mass(1);
  for (double i : {0.00667, 0.00667, 0.00667}) box->add_inertia(i);
  SetVec(box->mutable_pose()->mutable_pos(), 0, 0, 0.1);
  SetVec(box->mutable_linear_velocity(), 2, 0, 0);
  v1::Shape* shape = model.add_shapes();
  shape->set_name("box");
  shape->set_body(0);
  shape->set_type(v1::SHAPE_TYPE_BOX);
  SetVec(shape->mutable_size(), 0.1, 0.1, 0.1);
  model.mutable_options()->mutable_timestep()->set_value(kTimestep);
  return model;
}

class ServerParametersTest : public ServerTest {};

TEST_F(ServerParametersTest, GetParametersReadsEachWorldsScene) {
  const std::vector<uint64_t> wheel = MustCreate(*client_, WheelScene(), 1);
  const std::vector<uint64_t> box = MustCreate(*client_, SlidingBoxScene(), 1);
  v1::GetParametersResponse got = MustGetParameters(*client_, {box[0], wheel[0]});
  ASSERT_EQ(got.world_ids_size(), 2);
  EXPECT_EQ(got.world_ids(0), box[0]);
  const v1::WorldParameters& p = got.parameters();
  // the box world's, then the wheel world's
  EXPECT_EQ(Floats(p.body_mass()), (std::vector<float>{1, 1}));
  EXPECT_EQ(Floats(p.body_com()), std::vector<float>(6, 0));
  EXPECT_EQ(Floats(p.shape_friction()), (std::vector<float>{0.5, 0.5}));
  EXPECT_EQ(Floats(p.shape_restitution()), (std::vector<float>{0, 0}));
  EXPECT_EQ(Floats(p.dof_damping()), std::vector<float>{0});  // the wheel's hinge
  EXPECT_EQ(Floats(p.dof_friction_loss()), std::vector<float>{0});
  EXPECT_EQ(Floats(p.actuator_gear()), std::vector<float>{1});
  EXPECT_EQ(Floats(p.actuator_kp()), std::vector<float>{0});
  EXPECT_EQ(Floats(p.gravity()), (std::vector<float>{0, 0, static_cast<float>(-kGravity), 0, 0,
                                                     static_cast<float>(-kGravity)}));
}

// Four wheels under the same torque, each with its own gear or mass (the inertia scaling with
// the mass), and balls falling each at its own gravity: the analytic rates, world by world.
TEST_F(ServerParametersTest, EachWorldMovesWithItsOwnParameters) {
  const std::vector<uint64_t> wheels = MustCreate(*client_, WheelScene(), 3);
  const std::vector<uint64_t> balls = MustCreate(*client_, FallingBallScene(), 2);
  v1::SetParametersRequest set = SetFor(wheels);
  set.mutable_parameters()->set_actuator_gear(client::PackFloat32({1, 3, 1}));
  set.mutable_parameters()->set_body_mass(client::PackFloat32({1, 1, 2}));
  ASSERT_TRUE(client_->SetParameters(set).ok());
  set = SetFor(balls);
  set.mutable_parameters()->set_gravity(client::PackFloat32({0, 0, -1.62f, 0, 0, -3.71f}));
  absl::StatusOr<v1::SetParametersResponse> done = client_->SetParameters(set);
  ASSERT_TRUE(done.ok()) << done.status();

  v1::StepRequest step = StepRequestFor(wheels, 20);
  step.set_controls(client::PackFloat32({1, 1, 1}));
  ASSERT_TRUE(client_->Step(step).ok());
  ASSERT_TRUE(client_->Step(StepRequestFor(balls, 20)).ok());
  const std::vector<float> rates =
      Floats(MustGetState(*client_, wheels).observations().joint_velocity());
  const double base = 20 * kTimestep / 0.1;  // tau n h / I
  ASSERT_EQ(rates.size(), 3u);
  EXPECT_NEAR(rates[0], base, 1e-4);
  EXPECT_NEAR(rates[1], 3 * base, 1e-4);
  EXPECT_NEAR(rates[2], base / 2, 1e-4);
  const std::vector<float> velocity =
      Floats(MustGetState(*client_, balls).observations().body_velocity());
  EXPECT_NEAR(velocity[2], -1.62 * 20 * kTimestep, 1e-5);
  EXPECT_NEAR(velocity[6 + 2], -3.71 * 20 * kTimestep, 1e-5);
  EXPECT_EQ(Floats(MustGetParameters(*client_, wheels).parameters().body_mass()),
            (std::vector<float>{1, 1, 2}));
}

// Balls in a viscous medium without gravity, each world in a wind of its own: a ball starts at
// rest and is carried along its world's wind, its velocity v = W (1 - exp(-k t)) linear in W
// (viscous drag alone), so twice the wind gives twice the velocity; the winds read back.
TEST_F(ServerParametersTest, EachWorldBlowsInItsOwnWind) {
  v1::ModelDescription scene = FallingBallScene();
  scene.mutable_options()->mutable_gravity()->set_z(0);
  scene.mutable_options()->mutable_fluid_viscosity()->set_value(0.5);
  const std::vector<uint64_t> balls = MustCreate(*client_, scene, 2);
  EXPECT_EQ(Floats(MustGetParameters(*client_, balls).parameters().fluid_wind()),
            (std::vector<float>{0, 0, 0, 0, 0, 0}));
  v1::SetParametersRequest set = SetFor(balls);
  set.mutable_parameters()->set_fluid_wind(client::PackFloat32({1, 0, 0, 0, -2, 0}));
  absl::StatusOr<v1::SetParametersResponse> done = client_->SetParameters(set);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_TRUE(client_->Step(StepRequestFor(balls, 50)).ok());
  const std::vector<float> velocity =
      Floats(MustGetState(*client_, balls).observations().body_velocity());
  ASSERT_EQ(velocity.size(), 12u);
  EXPECT_GT(velocity[0], 0.01);  // carried along +x ...
  EXPECT_NEAR(velocity[1], 0, 1e-7);
  EXPECT_NEAR(velocity[6 + 1], -2 * velocity[0], 1e-6);  // ... and twice as fast along -y
  EXPECT_NEAR(velocity[6], 0, 1e-7);
  EXPECT_EQ(Floats(MustGetParameters(*client_, balls).parameters().fluid_wind()),
            (std::vector<float>{1, 0, 0, 0, -2, 0}));
  set.mutable_parameters()->set_fluid_wind(client::PackFloat32({NAN, 0, 0, 0, 0, 0}));
  absl::Status refused = client_->SetParameters(set).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("fluid_wind"));
}

// Boxes sliding to a stop: each world's friction (and one world's gravity) sets its distance.
TEST_F(ServerParametersTest, FrictionAndGravitySetEachBoxsSlide) {
  const std::vector<uint64_t> boxes = MustCreate(*client_, SlidingBoxScene(), 3);
  v1::SetParametersRequest set = SetFor(boxes);
  set.mutable_parameters()->set_shape_friction(
      client::PackFloat32({0.2f, 0.2f, 0.5f, 0.5f, 0.5f, 0.5f}));
  set.mutable_parameters()->set_gravity(
      client::PackFloat32({0, 0, -9.81f, 0, 0, -9.81f, 0, 0, -4.905f}));
  absl::StatusOr<v1::SetParametersResponse> done = client_->SetParameters(set);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_TRUE(client_->Step(StepRequestFor(boxes, 250)).ok());
  const std::vector<float> pose = Floats(MustGetState(*client_, boxes).observations().body_pose());
  const double g = kGravity;
  const double expected[] = {4 / (2 * 0.2 * g), 4 / (2 * 0.5 * g), 4 / (2 * 0.5 * g / 2)};
  for (int w = 0; w < 3; ++w) {
    SCOPED_TRACE(::testing::Message() << "world " << w);
    EXPECT_NEAR(pose[7 * w], expected[w], 0.03 * expected[w]);
    EXPECT_NEAR(pose[7 * w + 2], 0.1, 1e-3);  // sliding, not tumbling
  }
}

// Each world's torsional friction: balls spun on the ground (contact dimension 4) slow at
// their own Coulomb rates, mu_t m g / I, with the ground's coefficient the same (the geometric
// mean combines them).
TEST_F(ServerParametersTest, TorsionalFrictionSetsEachBallsSpinDown) {
  v1::ModelDescription scene = RestingBallScene();
  scene.mutable_shapes(1)->mutable_contact_dim()->set_value(4);
  SetVec(scene.mutable_bodies(0)->mutable_angular_velocity(), 0, 0, 20);
  const std::vector<uint64_t> balls = MustCreate(*client_, scene, 2);
  v1::GetParametersResponse got = MustGetParameters(*client_, balls);
  EXPECT_EQ(Floats(got.parameters().shape_torsional_friction()), std::vector<float>(4, 0));
  v1::SetParametersRequest set = SetFor(balls);
  set.mutable_parameters()->set_shape_torsional_friction(
      client::PackFloat32({0.01f, 0.01f, 0.03f, 0.03f}));
  absl::StatusOr<v1::SetParametersResponse> done = client_->SetParameters(set);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_TRUE(client_->Step(StepRequestFor(balls, 5)).ok());
  const std::vector<float> velocity =
      Floats(MustGetState(*client_, balls).observations().body_velocity());
  const double mu[] = {0.01, 0.03};
  for (int w = 0; w < 2; ++w) {
    const double rate = mu[w] * 2 * kGravity / 0.008;
    EXPECT_NEAR(velocity[6 * w + 5], 20 - rate * 5 * kTimestep, 1e-4) << "world " << w;
  }
  set.mutable_parameters()->set_shape_torsional_friction(client::PackFloat32({-1, 0, 0, 0}));
  absl::Status refused = client_->SetParameters(set).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("shape_torsional_friction"));
}

// Each world's ball its own radius: resting on the ground at it (a smaller one falls onto it, a
// larger one is pushed out of the floor); the plane's size is no parameter.
TEST_F(ServerParametersTest, ShapeSizesSetWhereBallsRest) {
  const std::vector<uint64_t> balls = MustCreate(*client_, RestingBallScene(), 3);
  v1::SetParametersRequest set = SetFor(balls);
  set.mutable_parameters()->set_shape_size(
      client::PackFloat32({0, 0, 0, 0.1f, 0, 0, 0, 0, 0, 0.05f, 0, 0, 0, 0, 0, 0.15f, 0, 0}));
  absl::StatusOr<v1::SetParametersResponse> done = client_->SetParameters(set);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_TRUE(client_->Step(StepRequestFor(balls, 200)).ok());
  const std::vector<float> pose = Floats(MustGetState(*client_, balls).observations().body_pose());
  EXPECT_NEAR(pose[2], 0.1, 1e-3);
  EXPECT_NEAR(pose[7 + 2], 0.05, 1e-3);
  EXPECT_NEAR(pose[14 + 2], 0.15, 1e-3);
  set = SetFor({balls[0]});
  set.mutable_parameters()->set_shape_size(client::PackFloat32({1, 1, 0, 0.1f, 0, 0}));
  done = client_->SetParameters(set);
  EXPECT_EQ(done.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(done.status().message()),
              HasSubstr("shape_size: world " + std::to_string(balls[0]) +
                        ", shape 'ground' is a plane, which has no size"));
}

// Parameters read and written back keep every bit: the world goes on exactly as one never
// written (its snapshot's fingerprint still the scene's).
TEST_F(ServerParametersTest, WritingBackWhatWasReadChangesNothing) {
  const std::vector<uint64_t> ids = MustCreate(*client_, SlidingBoxScene(), 2);
  ASSERT_TRUE(client_->Step(StepRequestFor(ids, 5)).ok());
  v1::GetParametersResponse got = MustGetParameters(*client_, {ids[0]});
  v1::SetParametersRequest set = SetFor({ids[0]});
  *set.mutable_parameters() = got.parameters();
  ASSERT_TRUE(client_->SetParameters(set).ok());
  ASSERT_TRUE(client_->Step(StepRequestFor(ids, 30)).ok());
  absl::StatusOr<v1::SnapshotResponse> snapshots = client_->Snapshot(ids);
  ASSERT_TRUE(snapshots.ok()) << snapshots.status();
  EXPECT_EQ(snapshots->snapshots(0).data(), snapshots->snapshots(1).data());
}

TEST_F(ServerParametersTest, BadParametersChangeNoWorld) {
  const std::vector<uint64_t> wheels = MustCreate(*client_, WheelScene(), 2);
  const v1::GetParametersResponse before = MustGetParameters(*client_, wheels);
  auto refused = [&](const v1::WorldParameters& parameters, absl::StatusCode code,
                     const std::string& text) {
    v1::SetParametersRequest set = SetFor(wheels);
    *set.mutable_parameters() = parameters;
    absl::StatusOr<v1::SetParametersResponse> done = client_->SetParameters(set);
    EXPECT_EQ(done.status().code(), code) << done.status();
    EXPECT_THAT(std::string(done.status().message()), HasSubstr(text));
    EXPECT_EQ(MustGetParameters(*client_, wheels).SerializeAsString(), before.SerializeAsString());
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  v1::WorldParameters p;
  p.set_body_mass(client::PackFloat32({2, -1}));
  refused(p, absl::StatusCode::kInvalidArgument,
          absl::StrCat("body_mass: world ", wheels[1], ", body 'wheel': -1 must be > 0"));
  p.Clear();
  p.set_body_mass(client::PackFloat32({2}));
  refused(p, absl::StatusCode::kInvalidArgument, "body_mass: expected 2 float32 values");
  p.Clear();
  p.set_actuator_gear(client::PackFloat32({2, nan}));
  refused(p, absl::StatusCode::kInvalidArgument, "actuator 'motor': nan is not finite");
  p.Clear();
  p.set_shape_restitution(client::PackFloat32({0.5, 0.5}));  // the wheels have no shapes
  refused(p, absl::StatusCode::kInvalidArgument,
          "shape_restitution: expected 0 float32 values (0 bytes) for 2 worlds, got 8 bytes");
  p.Clear();
  p.set_dof_friction_loss(client::PackFloat32({-1, 0}));
  refused(p, absl::StatusCode::kInvalidArgument,
          absl::StrCat("dof_friction_loss: world ", wheels[0],
                       ", DOF 0 of joint 'hinge': -1 must be >= 0"));
  p.Clear();
  p.set_dof_damping(client::PackFloat32({0, 0.5}));  // the hinge has no drive rows to damp with
  refused(p, absl::StatusCode::kInvalidArgument,
          absl::StrCat("world ", wheels[1],
                       ": joint 0 ('hinge') differs in kind, bodies or "
                       "constraint rows"));
  p.Clear();
  p.set_gravity(client::PackFloat32({0, 0, -1, 0, 0, -1}));
  v1::SetParametersRequest unknown = SetFor({wheels[0], 987654321});
  *unknown.mutable_parameters() = p;
  EXPECT_EQ(client_->SetParameters(unknown).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(MustGetParameters(*client_, wheels).SerializeAsString(), before.SerializeAsString());
  // another client's worlds are not found either
  std::unique_ptr<client::Client> bob = Connect(*server_, "bob");
  v1::SetParametersRequest theirs = SetFor(wheels);
  *theirs.mutable_parameters() = p;
  EXPECT_EQ(bob->SetParameters(theirs).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(bob->GetParameters(wheels).status().code(), absl::StatusCode::kNotFound);
}

TEST(ServerParametersPersistenceTest, ParametersSurviveARestart) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("axion_server_parameters_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ServerOptions options = TestServerOptions();
  options.snapshot_dir = dir.string();
  std::vector<uint64_t> ids;
  std::string before;
  {
    std::unique_ptr<AxionServer> server = StartServer(options);
    ASSERT_NE(server, nullptr);
    std::unique_ptr<client::Client> alice = Connect(*server, "alice");
    ids = MustCreate(*alice, WheelScene(), 2);
    ASSERT_EQ(ids.size(), 2u);
    v1::SetParametersRequest set = SetFor(ids);
    set.mutable_parameters()->set_body_mass(client::PackFloat32({1, 4}));
    set.mutable_parameters()->set_gravity(client::PackFloat32({0, 0, -1, 0, 0, -2}));
    ASSERT_TRUE(alice->SetParameters(set).ok());
    v1::StepRequest step = StepRequestFor(ids, 10);
    step.set_controls(client::PackFloat32({1, 1}));
    ASSERT_TRUE(alice->Step(step).ok());
    before = MustGetParameters(*alice, ids).SerializeAsString();
    ASSERT_TRUE(server->Shutdown().ok());
  }
  {
    std::unique_ptr<AxionServer> server = StartServer(options);
    ASSERT_NE(server, nullptr);
    std::unique_ptr<client::Client> alice = Connect(*server, "alice");
    EXPECT_EQ(MustGetParameters(*alice, ids).SerializeAsString(), before);
    // the state came back too, and the heavier wheel still turns at a quarter of the rate
    ASSERT_TRUE(alice->Step(StepRequestFor(ids, 10)).ok());
    const std::vector<float> rates =
        Floats(MustGetState(*alice, ids).observations().joint_velocity());
    EXPECT_NEAR(rates[0], 20 * kTimestep / 0.1, 1e-4);
    EXPECT_NEAR(rates[1], 20 * kTimestep / 0.4, 1e-4);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace axion::server::test
