// The unary API end to end: an in-process server on loopback, driven through the C++ client.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <limits>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "server_test_util.h"

namespace axion::server::test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Steps two wheel worlds 20 steps under torques 0.5 and -0.25 N m ((world_count x
// actuator_count) controls) and checks omega = tau t / I with t = 20 h and I = 0.1.
v1::StepResponse StepWheelsAndCheckSpeeds(client::Client& client, const std::vector<uint64_t>& ids,
                                          bool observe_controls) {
  v1::StepRequest step = StepRequestFor(ids, 20);
  step.set_controls(client::PackFloat32(std::vector<float>{0.5f, -0.25f}));
  step.mutable_observe()->set_joint_velocity(true);
  step.mutable_observe()->set_controls(observe_controls);
  absl::StatusOr<v1::StepResponse> stepped = client.Step(step);
  EXPECT_TRUE(stepped.ok()) << stepped.status();
  if (!stepped.ok()) return {};
  const std::vector<float> qdot = client::UnpackFloat32(stepped->observations().joint_velocity());
  EXPECT_EQ(qdot.size(), 2u);
  if (qdot.size() != 2u) return *stepped;
  EXPECT_NEAR(qdot[0], 0.5 * 20 * kTimestep / 0.1, 1e-3);
  EXPECT_NEAR(qdot[1], -0.25 * 20 * kTimestep / 0.1, 1e-3);
  return *stepped;
}

class ServerApiTest : public ServerTest {
 protected:
  // Steps the worlds 20 times under `control` on their first actuator; their joint velocities.
  std::vector<float> StepAndReadJointVelocity(const std::vector<uint64_t>& ids, float control) {
    v1::StepRequest step = StepRequestFor(ids, 20);
    step.set_controls(client::PackFloat32(std::vector<float>{control}));
    step.mutable_observe()->set_joint_velocity(true);
    absl::StatusOr<v1::StepResponse> stepped = client_->Step(step);
    EXPECT_TRUE(stepped.ok()) << stepped.status();
    if (!stepped.ok()) return {};
    return client::UnpackFloat32(stepped->observations().joint_velocity());
  }
  // The model world `id` was compiled from, as DescribeWorld gives it back.
  v1::ModelDescription DescribedModel(uint64_t id) {
    absl::StatusOr<v1::DescribeWorldResponse> described =
        client_->DescribeWorld(id, /*include_model=*/true);
    EXPECT_TRUE(described.ok()) << described.status();
    return described.ok() ? described->model() : v1::ModelDescription();
  }
  // World `id`'s tendon states (T x 2) and joint positions, read together.
  std::pair<std::vector<float>, std::vector<float>> TendonStateAndJointPosition(uint64_t id) {
    v1::GetStateRequest get;
    get.add_world_ids(id);
    get.mutable_observe()->set_tendon_state(true);
    get.mutable_observe()->set_joint_position(true);
    absl::StatusOr<v1::GetStateResponse> state = client_->GetState(get);
    EXPECT_TRUE(state.ok()) << state.status();
    if (!state.ok()) return {};
    return {client::UnpackFloat32(state->observations().tendon_state()),
            client::UnpackFloat32(state->observations().joint_position())};
  }
};

// WheelScene with a cable: a spatial tendon from a world site 1 m above the wheel's site at
// 0.5 m out along y to that site; the cable is the scene's tendon 0.
v1::ModelDescription WheelWithCable() {
  v1::ModelDescription scene = WheelScene();
  v1::Tendon* cable = scene.add_tendons();
  cable->set_name("cable");
  v1::TendonPathElement* anchor = cable->add_path();
  anchor->set_body(-1);
  SetVec(anchor->mutable_pose()->mutable_pos(), 0, 0.5, 2);
  v1::TendonPathElement* site = cable->add_path();
  site->set_body(0);
  SetVec(site->mutable_pose()->mutable_pos(), 0, 0.5, 0);
  return scene;
}

TEST_F(ServerApiTest, CreateStepQueryDestroy) {
  const std::vector<uint64_t> ids = MustCreate(*client_, FallingBallScene(10), 3);
  ASSERT_EQ(ids.size(), 3u);

  v1::StepRequest step = StepRequestFor(ids, 10);
  step.mutable_observe()->set_body_pose(true);
  step.mutable_observe()->set_body_velocity(true);
  step.mutable_observe()->set_stats(true);
  absl::StatusOr<v1::StepResponse> stepped = client_->Step(step);
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  const v1::Observations& obs = stepped->observations();
  EXPECT_THAT(std::vector<uint64_t>(obs.world_ids().begin(), obs.world_ids().end()),
              ::testing::ContainerEq(ids));
  const std::vector<float> pose = client::UnpackFloat32(obs.body_pose());
  const std::vector<float> velocity = client::UnpackFloat32(obs.body_velocity());
  ASSERT_EQ(pose.size(), 3u * 7);      // (world_count x body_count x 7)
  ASSERT_EQ(velocity.size(), 3u * 6);  // (world_count x body_count x 6)
  for (int w = 0; w < 3; ++w) {
    // Free fall: v = -g t after t = 10 h.
    EXPECT_NEAR(velocity[6 * w + 2], -kGravity * 10 * kTimestep, 1e-4);
    EXPECT_LT(pose[7 * w + 2], 10.0f);
    EXPECT_NEAR(pose[7 * w + 3], 1.0f, 1e-6);  // quaternion w stays 1
    EXPECT_EQ(obs.stats().step_count(w), 10u);
    EXPECT_NEAR(obs.stats().time(w), 10 * kTimestep, 1e-12);
    // a body in free fall has no rows: its motion needs no Newton iteration
    EXPECT_EQ(obs.stats().newton_iterations(w), 0);
    EXPECT_EQ(obs.stats().line_search_trials(w), 0);
  }

  absl::StatusOr<v1::ListWorldsResponse> listed = client_->ListWorlds();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->worlds_size(), 3);
  EXPECT_EQ(listed->worlds(0).world_id(), ids[0]);
  EXPECT_EQ(listed->worlds(0).model_name(), "falling_ball");
  EXPECT_EQ(listed->worlds(0).step_count(), 10u);

  absl::StatusOr<v1::DestroyWorldsResponse> destroyed = client_->DestroyWorlds(ids);
  ASSERT_TRUE(destroyed.ok()) << destroyed.status();
  EXPECT_EQ(destroyed->world_ids_size(), 3);
  EXPECT_EQ(client_->ListWorlds()->worlds_size(), 0);
  EXPECT_EQ(client_->Step(StepRequestFor(ids, 1)).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ServerApiTest, DescribeWorldReportsNamesOrderAndShapes) {
  absl::StatusOr<v1::CreateWorldsResponse> created =
      client_->CreateWorlds(client::ModelScene(WheelScene()), 1);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->description().actuator_count(), 1);

  absl::StatusOr<v1::DescribeWorldResponse> described =
      client_->DescribeWorld(created->world_ids(0), /*include_model=*/true);
  ASSERT_TRUE(described.ok()) << described.status();
  const v1::WorldDescription& d = described->description();
  EXPECT_EQ(d.model_name(), "wheel");
  EXPECT_THAT(d.body_names(), ElementsAre("wheel"));
  ASSERT_EQ(d.joints_size(), 1);
  EXPECT_EQ(d.joints(0).name(), "hinge");
  EXPECT_EQ(d.joints(0).type(), v1::JOINT_TYPE_REVOLUTE);
  EXPECT_EQ(d.joints(0).dof_count(), 1);
  EXPECT_EQ(d.body_count(), 1);
  EXPECT_EQ(d.joint_position_count(), 1);
  EXPECT_EQ(d.joint_dof_count(), 1);
  ASSERT_EQ(d.actuators_size(), 1);
  EXPECT_EQ(d.actuators(0).name(), "motor");
  EXPECT_EQ(d.actuators(0).ctrl_max(), 1);
  EXPECT_EQ(d.actuators(0).joint(), 0);  // what it drives: the hinge's DOF
  EXPECT_EQ(d.actuators(0).dof(), 0);
  EXPECT_EQ(d.actuators(0).tendon(), -1);
  EXPECT_EQ(d.actuators(0).site_body(), -1);
  EXPECT_DOUBLE_EQ(d.timestep(), kTimestep);
  // The full model comes back as it was compiled, with the world's effective options.
  EXPECT_EQ(described->model().bodies(0).mass(), 1);
  EXPECT_EQ(described->model().actuators(0).name(), "motor");
  EXPECT_DOUBLE_EQ(described->model().options().timestep().value(), kTimestep);
}

// WheelScene with a second wheel beside the first, on a hinge of its own ("hinge2").
v1::ModelDescription TwoWheelScene() {
  v1::ModelDescription scene = WheelScene();
  *scene.add_bodies() = scene.bodies(0);
  scene.mutable_bodies(1)->set_name("wheel2");
  SetVec(scene.mutable_bodies(1)->mutable_pose()->mutable_pos(), 1, 0, 1);
  *scene.add_joints() = scene.joints(0);
  scene.mutable_joints(1)->set_name("hinge2");
  scene.mutable_joints(1)->set_child(1);
  return scene;
}

// A scene's couplings: a second wheel geared to the first in reverse (q2 = -q1). The torque on
// the first turns both, as one inertia of 0.2: omega = tau t / 0.2, the second the opposite.
// The coupling comes back in the described model; a polynomial of six terms is refused.
TEST_F(ServerApiTest, CoupledWheelsTurnTogether) {
  v1::ModelDescription scene = TwoWheelScene();
  v1::JointCoupling* gear = scene.add_couplings();
  gear->set_name("gear");
  gear->set_joint(1);
  gear->mutable_leader_joint()->set_value(0);
  gear->add_polynomial(0);
  gear->add_polynomial(-1);
  const std::vector<uint64_t> ids = MustCreate(*client_, scene, 1);
  const std::vector<float> qdot = StepAndReadJointVelocity(ids, 0.5f);
  ASSERT_EQ(qdot.size(), 2u);
  EXPECT_NEAR(qdot[0], 0.5 * 20 * kTimestep / 0.2, 1e-5);
  EXPECT_NEAR(qdot[1], -qdot[0], 1e-6);
  const v1::ModelDescription described = DescribedModel(ids[0]);
  ASSERT_EQ(described.couplings_size(), 1);
  EXPECT_EQ(described.couplings(0).name(), "gear");
  EXPECT_EQ(described.couplings(0).leader_joint().value(), 0);

  for (int k = 0; k < 4; ++k) gear->add_polynomial(0);
  absl::Status status = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("at most 5"));
}

// A scene's tendons: a motor on the tendon L = q1 - q2 over the two wheels pulls the first
// forward and the second back, each like a motor of its own (0.1 kg m^2 each); the tendon and
// the actuator's transmission come back in the described model. A tendon naming a missing
// joint is refused by name.
TEST_F(ServerApiTest, TendonsAreCarried) {
  v1::ModelDescription scene = TwoWheelScene();
  v1::Tendon* tendon = scene.add_tendons();
  tendon->set_name("belt");
  v1::TendonJoint* first = tendon->add_joints();
  first->set_joint(0);
  first->set_coef(1);
  v1::TendonJoint* second = tendon->add_joints();
  second->set_joint(1);
  second->set_coef(-1);
  scene.mutable_actuators(0)->mutable_tendon()->set_value(0);
  scene.mutable_actuators(0)->mutable_target_scale()->set_value(0.5);  // (a servo's; carried)
  const std::vector<uint64_t> ids = MustCreate(*client_, scene, 1);
  const std::vector<float> qdot = StepAndReadJointVelocity(ids, 0.5f);
  ASSERT_EQ(qdot.size(), 2u);
  EXPECT_NEAR(qdot[0], 0.5 * 20 * kTimestep / 0.1, 1e-5);
  EXPECT_NEAR(qdot[1], -qdot[0], 1e-6);
  const v1::ModelDescription described = DescribedModel(ids[0]);
  ASSERT_EQ(described.tendons_size(), 1);
  EXPECT_EQ(described.tendons(0).name(), "belt");
  ASSERT_EQ(described.tendons(0).joints_size(), 2);
  EXPECT_EQ(described.tendons(0).joints(1).coef(), -1);
  EXPECT_EQ(described.actuators(0).tendon().value(), 0);
  EXPECT_EQ(described.actuators(0).target_scale().value(), 0.5);
  absl::StatusOr<v1::DescribeWorldResponse> info = client_->DescribeWorld(ids[0], false);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->description().actuators(0).tendon(), 0);
  EXPECT_EQ(info->description().actuators(0).joint(), -1);

  second->set_joint(5);
  absl::Status status = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("belt"));
  EXPECT_THAT(status.message(), HasSubstr("missing joint 5"));
}

// A tendon over three wheels, held (L = q1 + q2 + q3 kept): the motor's torque tau on the first
// is shared out by the hold's force f = tau / 3 on each (0.1 kg m^2 each), so the first turns
// at 2 tau / 0.3 and the others back at tau / 0.3 each, L unchanged; the three coordinates
// come back in the described model. A DOF named twice is refused by name.
TEST_F(ServerApiTest, TendonsOverThreeJointsAreCarried) {
  v1::ModelDescription scene = TwoWheelScene();
  *scene.add_bodies() = scene.bodies(0);
  scene.mutable_bodies(2)->set_name("wheel3");
  SetVec(scene.mutable_bodies(2)->mutable_pose()->mutable_pos(), 2, 0, 1);
  *scene.add_joints() = scene.joints(0);
  scene.mutable_joints(2)->set_name("hinge3");
  scene.mutable_joints(2)->set_child(2);
  v1::Tendon* tendon = scene.add_tendons();
  tendon->set_name("belt3");
  for (int j = 0; j < 3; ++j) {
    v1::TendonJoint* joint = tendon->add_joints();
    joint->set_joint(j);
    joint->set_coef(1);
  }
  tendon->set_hold(true);
  const std::vector<uint64_t> ids = MustCreate(*client_, scene, 1);
  const std::vector<float> qdot = StepAndReadJointVelocity(ids, 0.5f);
  ASSERT_EQ(qdot.size(), 3u);
  const double t = 20 * kTimestep;
  EXPECT_NEAR(qdot[0], 2 * 0.5 * t / 0.3, 1e-5);
  EXPECT_NEAR(qdot[1], -0.5 * t / 0.3, 1e-5);
  EXPECT_NEAR(qdot[2], -0.5 * t / 0.3, 1e-5);
  const auto [state, q] = TendonStateAndJointPosition(ids[0]);
  ASSERT_EQ(state.size(), 2u);
  EXPECT_NEAR(state[0], 0, 1e-6);
  EXPECT_NEAR(state[1], 0, 1e-5);
  EXPECT_GT(q[0], 0.01);
  const v1::ModelDescription described = DescribedModel(ids[0]);
  ASSERT_EQ(described.tendons_size(), 1);
  ASSERT_EQ(described.tendons(0).joints_size(), 3);
  EXPECT_EQ(described.tendons(0).joints(2).joint(), 2);

  tendon->mutable_joints(2)->set_joint(0);
  absl::Status status = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("belt3"));
  EXPECT_THAT(status.message(), HasSubstr("names DOF 0 of joint 0 again"));
}

// Terrain through the service: a ball dropped on a height field (a plateau 0.3 m high over the
// middle 3 x 3 of its 5 x 5 points, the ground at 0 around it) comes to rest on the plateau; the
// grid comes back in the described model; a grid whose heights do not fill its rows and columns
// is refused by name.
TEST_F(ServerApiTest, BallsLandOnHeightFieldTerrain) {
  v1::ModelDescription scene = FallingBallScene(1);
  v1::Shape* terrain = scene.add_shapes();
  terrain->set_name("terrain");
  terrain->set_body(-1);
  terrain->set_type(v1::SHAPE_TYPE_HEIGHT_FIELD);
  SetVec(terrain->mutable_size(), 1, 1, 0.5);
  v1::HeightField* grid = terrain->mutable_heightfield();
  grid->set_rows(5);
  grid->set_cols(5);
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 5; ++c) grid->add_heights(r % 4 == 0 || c % 4 == 0 ? 0 : 0.3);
  }
  const std::vector<uint64_t> ids = MustCreate(*client_, scene, 2);
  v1::StepRequest step = StepRequestFor(ids, 400);
  step.mutable_observe()->set_body_pose(true);
  step.mutable_observe()->set_body_velocity(true);
  absl::StatusOr<v1::StepResponse> stepped = client_->Step(step);
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  const std::vector<float> pose = client::UnpackFloat32(stepped->observations().body_pose());
  ASSERT_EQ(pose.size(), 2u * 7);
  for (int w = 0; w < 2; ++w) {
    // on the plateau: its centre one radius above it
    EXPECT_NEAR(pose[7 * w + 0], 0, 1e-6);
    EXPECT_NEAR(pose[7 * w + 1], 0, 1e-6);
    EXPECT_NEAR(pose[7 * w + 2], 0.4, 1e-3);
  }
  const v1::ModelDescription described = DescribedModel(ids[0]);
  ASSERT_EQ(described.shapes_size(), 2);
  EXPECT_EQ(described.shapes(1).type(), v1::SHAPE_TYPE_HEIGHT_FIELD);
  EXPECT_EQ(described.shapes(1).heightfield().cols(), 5);
  ASSERT_EQ(described.shapes(1).heightfield().heights_size(), 25);
  EXPECT_DOUBLE_EQ(described.shapes(1).heightfield().heights(12), 0.3);

  grid->mutable_heights()->RemoveLast();
  absl::Status status = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("terrain"));
  EXPECT_THAT(status.message(), HasSubstr("has 24 values for 5 x 5 points"));
}

// A muscle on the wheel's hinge (length range [-1, 1] rad onto MuJoCo's default [0.75, 1.05]):
// under full excitation (activation time constant 0.05 s) its activation rises as the explicit
// steps of da/dt = (1 - a) / (0.05 (0.5 + 1.5 a)) give it, its pull turns the wheel to negative
// angles, its parameters come back in the described model, and a muscle without force is refused by
// name.
TEST_F(ServerApiTest, MusclesActivateAndPull) {
  v1::ModelDescription scene = WheelScene();
  v1::Actuator* muscle = scene.mutable_actuators(0);
  muscle->set_name("biceps");
  muscle->set_type(v1::ACTUATOR_TYPE_MUSCLE);
  muscle->set_ctrl_min(0);
  muscle->mutable_muscle()->set_force(10);
  muscle->mutable_muscle()->mutable_time_activation()->set_value(0.05);
  muscle->mutable_muscle()->set_length_range_low(-1);
  muscle->mutable_muscle()->set_length_range_high(1);
  absl::StatusOr<v1::CreateWorldsResponse> created =
      client_->CreateWorlds(client::ModelScene(scene), 1);
  ASSERT_TRUE(created.ok()) << created.status();
  const std::vector<uint64_t> ids = {created->world_ids(0)};
  v1::StepRequest step = StepRequestFor(ids, 5);
  step.set_controls(client::PackFloat32(std::vector<float>{1}));
  step.mutable_observe()->set_activation(true);
  step.mutable_observe()->set_joint_position(true);
  step.mutable_observe()->set_actuator_force(true);
  double expected = 0;
  for (int round = 0; round < 4; ++round) {
    absl::StatusOr<v1::StepResponse> stepped = client_->Step(step);
    ASSERT_TRUE(stepped.ok()) << stepped.status();
    for (int k = 0; k < 5; ++k)
      expected += kTimestep * (1 - expected) / (0.05 * (0.5 + 1.5 * expected));
    const std::vector<float> a = client::UnpackFloat32(stepped->observations().activation());
    const std::vector<float> q = client::UnpackFloat32(stepped->observations().joint_position());
    const std::vector<float> f = client::UnpackFloat32(stepped->observations().actuator_force());
    ASSERT_EQ(a.size(), 1u);
    EXPECT_NEAR(a[0], expected, 1e-6) << "after " << 5 * (round + 1) << " steps";
    EXPECT_LT(q[0], 0);
    EXPECT_LT(f[0], 0);
    EXPECT_GT(f[0], -10 * 1.2);
  }
  EXPECT_GT(expected, 0.9);
  const v1::ModelDescription described = DescribedModel(ids[0]);
  ASSERT_EQ(described.actuators_size(), 1);
  EXPECT_EQ(described.actuators(0).type(), v1::ACTUATOR_TYPE_MUSCLE);
  EXPECT_EQ(described.actuators(0).muscle().force(), 10);
  EXPECT_EQ(described.actuators(0).muscle().time_deactivation().value(), 0.04);
  EXPECT_EQ(described.actuators(0).muscle().range_high().value(), 1.05);

  muscle->mutable_muscle()->set_force(0);
  absl::Status status = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("biceps"));
  EXPECT_THAT(status.message(), HasSubstr("muscle force must be > 0"));
}

// A motor behind a first-order lag (ACTUATOR_DYNAMICS_FILTER, 0.1 s) on the wheel's hinge: its
// activation follows the command as the explicit steps of da/dt = (u - a) / 0.1 give it, the
// force reported is gear times that, and the dynamics come back in the described model.
TEST_F(ServerApiTest, ActuatorDynamicsFilterTheCommand) {
  v1::ModelDescription scene = WheelScene();
  scene.mutable_actuators(0)->set_dynamics(v1::ACTUATOR_DYNAMICS_FILTER);
  scene.mutable_actuators(0)->mutable_dynamics_time_constant()->set_value(0.1);
  absl::StatusOr<v1::CreateWorldsResponse> created =
      client_->CreateWorlds(client::ModelScene(scene), 1);
  ASSERT_TRUE(created.ok()) << created.status();
  const std::vector<uint64_t> ids = {created->world_ids(0)};
  v1::StepRequest step = StepRequestFor(ids, 3);
  step.set_controls(client::PackFloat32(std::vector<float>{1}));
  step.mutable_observe()->set_activation(true);
  step.mutable_observe()->set_actuator_force(true);
  double expected = 0;
  for (int round = 0; round < 3; ++round) {
    absl::StatusOr<v1::StepResponse> stepped = client_->Step(step);
    ASSERT_TRUE(stepped.ok()) << stepped.status();
    for (int k = 0; k < 3; ++k) expected += kTimestep * (1 - expected) / 0.1;
    const std::vector<float> a = client::UnpackFloat32(stepped->observations().activation());
    const std::vector<float> f = client::UnpackFloat32(stepped->observations().actuator_force());
    ASSERT_EQ(a.size(), 1u);
    EXPECT_NEAR(a[0], expected, 1e-6);
    EXPECT_NEAR(f[0], expected, 1e-6);  // gear 1
  }
  const v1::ModelDescription described = DescribedModel(ids[0]);
  EXPECT_EQ(described.actuators(0).dynamics(), v1::ACTUATOR_DYNAMICS_FILTER);
  EXPECT_EQ(described.actuators(0).dynamics_time_constant().value(), 0.1);
  // a filter without a positive time constant is refused by name
  scene.mutable_actuators(0)->mutable_dynamics_time_constant()->set_value(0);
  absl::Status status = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("dynamics_time_constant must be > 0"));
}

// A spatial tendon: a cable from a world site 1 m above the wheel's site at 0.5 m out along y
// pulls the site up, a torque of -0.5 ctrl about the hinge's x axis at first; its path comes
// back in the described model, and a path that does not start at a site is refused by name.
TEST_F(ServerApiTest, SpatialTendonsAreCarried) {
  v1::ModelDescription scene = WheelWithCable();
  v1::TendonPathElement* anchor = scene.mutable_tendons(0)->mutable_path(0);
  scene.mutable_actuators(0)->mutable_tendon()->set_value(0);
  absl::StatusOr<v1::CreateWorldsResponse> created =
      client_->CreateWorlds(client::ModelScene(scene), 1);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_THAT(created->description().tendon_names(), ElementsAre("cable"));
  const std::vector<uint64_t> ids = {created->world_ids(0)};
  const std::vector<float> qdot = StepAndReadJointVelocity(ids, 0.5f);
  ASSERT_EQ(qdot.size(), 1u);
  // the arm shortens by 0.1% over the 0.05 rad turned
  EXPECT_NEAR(qdot[0], -0.5 * 0.5 * 20 * kTimestep / 0.1, 2e-3);
  // the cable's length and rate: the site at angle q is (0, 0.5 cos q, 1 + 0.5 sin q)
  const auto [tendon, q] = TendonStateAndJointPosition(ids[0]);
  ASSERT_EQ(tendon.size(), 2u);
  ASSERT_EQ(q.size(), 1u);
  const double length = std::hypot(0.5 - 0.5 * std::cos(q[0]), 1 - 0.5 * std::sin(q[0]));
  EXPECT_NEAR(tendon[0], length, 1e-6);
  const double slope = (0.5 * std::sin(q[0]) * (0.5 - 0.5 * std::cos(q[0])) -
                        0.5 * std::cos(q[0]) * (1 - 0.5 * std::sin(q[0]))) /
                       length;  // dL/dq
  EXPECT_NEAR(tendon[1], slope * qdot[0], 1e-5);
  const v1::ModelDescription described = DescribedModel(ids[0]);
  ASSERT_EQ(described.tendons_size(), 1);
  ASSERT_EQ(described.tendons(0).path_size(), 2);
  EXPECT_EQ(described.tendons(0).path(0).body(), -1);
  EXPECT_EQ(described.tendons(0).path(0).pose().pos().z(), 2);
  EXPECT_EQ(described.tendons(0).path(1).kind(), v1::TENDON_PATH_SITE);
  EXPECT_EQ(described.tendons(0).joints_size(), 0);

  anchor->set_kind(v1::TENDON_PATH_PULLEY);
  absl::Status status = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("cable"));
  EXPECT_THAT(status.message(), HasSubstr("path[0]"));
}

// A held tendon through the service: the wheel's site 0.5 m out along y tied to a world site
// 1 m above it by a cable held 0.1 m shorter than it starts (hold, hold_offset): the wheel
// turns until the cable is 0.9 m long and stays there whatever the motor does, and the hold
// comes back in the described model; a negative compliance is refused by name.
TEST_F(ServerApiTest, HeldTendonsAreCarried) {
  v1::ModelDescription scene = WheelWithCable();
  v1::Tendon* cable = scene.mutable_tendons(0);
  cable->set_hold(true);
  cable->set_hold_offset(-0.1);
  const std::vector<uint64_t> ids = MustCreate(*client_, scene, 1);
  StepAndReadJointVelocity(ids, 0.2f);
  const std::vector<float> tendon = TendonStateAndJointPosition(ids[0]).first;
  ASSERT_EQ(tendon.size(), 2u);
  EXPECT_NEAR(tendon[0], 0.9, 1e-5);
  const v1::ModelDescription described = DescribedModel(ids[0]);
  ASSERT_EQ(described.tendons_size(), 1);
  EXPECT_TRUE(described.tendons(0).hold());
  EXPECT_EQ(described.tendons(0).hold_offset(), -0.1);
  // a compliant, damped hold comes back as given
  cable->set_hold_compliance(1e-4);
  cable->set_hold_damping(3);
  const v1::ModelDescription damped = DescribedModel(MustCreate(*client_, scene, 1)[0]);
  EXPECT_EQ(damped.tendons(0).hold_compliance(), 1e-4);
  EXPECT_EQ(damped.tendons(0).hold_damping(), 3);
  cable->set_hold_damping(-1);
  absl::Status negative = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(negative.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(negative.message(), HasSubstr("hold_damping"));
  cable->set_hold_damping(0);
  cable->set_hold_compliance(-1);
  absl::Status status = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("hold_compliance"));
}

// A slider-crank tendon: a slider fixed in the world 1 m out along -y with its axis along +y,
// a rod of 1.2 m to a crank pin 0.5 m out along the wheel's z. With the pin at angle t = q +
// pi/2 about the hinge's x axis, L = 1 + 0.5 cos t - sqrt(1.44 - 0.25 sin^2 t), so the motor on
// it turns the wheel with -0.5 ctrl at first; the length, rate and path come back, and a rod of
// no length is refused by name.
TEST_F(ServerApiTest, SliderCranksAreCarried) {
  v1::ModelDescription scene = WheelScene();
  v1::Tendon* crank = scene.add_tendons();
  crank->set_name("crank");
  v1::TendonPathElement* slider = crank->add_path();
  slider->set_kind(v1::TENDON_PATH_SLIDER);
  slider->set_body(-1);
  SetVec(slider->mutable_pose()->mutable_pos(), 0, -1, 1);
  v1::Quat* axes = slider->mutable_pose()->mutable_quat();  // z turned onto +y
  axes->set_w(std::sqrt(0.5));
  axes->set_x(-std::sqrt(0.5));
  v1::TendonPathElement* pin = crank->add_path();
  pin->set_kind(v1::TENDON_PATH_CRANK);
  pin->set_body(0);
  SetVec(pin->mutable_pose()->mutable_pos(), 0, 0, 0.5);
  pin->set_rod_length(1.2);
  scene.mutable_actuators(0)->mutable_tendon()->set_value(0);
  const std::vector<uint64_t> ids = MustCreate(*client_, scene, 1);
  const std::vector<float> qdot = StepAndReadJointVelocity(ids, 0.5f);
  ASSERT_EQ(qdot.size(), 1u);
  // (the arm, dL/dq = -0.5 - 0.23 q near q = 0, shortens by 1% over the 0.05 rad turned)
  EXPECT_NEAR(qdot[0], -0.5 * 0.5 * 20 * kTimestep / 0.1, 5e-3);
  const auto [tendon, q] = TendonStateAndJointPosition(ids[0]);
  ASSERT_EQ(tendon.size(), 2u);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_LT(q[0], -0.02);
  const double t = q[0] + std::acos(-1.0) / 2;
  const double root = std::sqrt(1.44 - 0.25 * std::sin(t) * std::sin(t));
  EXPECT_NEAR(tendon[0], 1 + 0.5 * std::cos(t) - root, 1e-6);
  const double slope = -0.5 * std::sin(t) + 0.25 * std::sin(t) * std::cos(t) / root;  // dL/dq
  EXPECT_NEAR(tendon[1], slope * qdot[0], 1e-5);
  const v1::ModelDescription described = DescribedModel(ids[0]);
  ASSERT_EQ(described.tendons_size(), 1);
  ASSERT_EQ(described.tendons(0).path_size(), 2);
  EXPECT_EQ(described.tendons(0).path(0).kind(), v1::TENDON_PATH_SLIDER);
  EXPECT_EQ(described.tendons(0).path(1).kind(), v1::TENDON_PATH_CRANK);
  EXPECT_EQ(described.tendons(0).path(1).rod_length(), 1.2);

  pin->set_rod_length(0);
  absl::Status status = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("crank"));
  EXPECT_THAT(status.message(), HasSubstr("path[1]"));
  EXPECT_THAT(status.message(), HasSubstr("rod length must be positive"));
}

// A site actuator reaches the engine: the wheel's motor made a push of ctrl newtons along z at
// 0.5 m out along y, so a torque of 0.5 ctrl about the hinge's x axis; the site comes back in
// the described model. A site on the world (body -1) and a wrench of five values are refused.
TEST_F(ServerApiTest, SiteActuatorsAreCarried) {
  v1::ModelDescription scene = WheelScene();
  v1::ActuatorSite* site = scene.mutable_actuators(0)->mutable_site();
  site->set_body(0);
  SetVec(site->mutable_pose()->mutable_pos(), 0, 0.5, 0);
  const std::vector<uint64_t> ids = MustCreate(*client_, scene, 1);
  const std::vector<float> qdot = StepAndReadJointVelocity(ids, 0.5f);
  ASSERT_EQ(qdot.size(), 1u);
  EXPECT_NEAR(qdot[0], 0.5 * 0.5 * 20 * kTimestep / 0.1, 1e-5);
  absl::StatusOr<v1::DescribeWorldResponse> info = client_->DescribeWorld(ids[0], false);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->description().actuators(0).site_body(), 0);
  EXPECT_EQ(info->description().actuators(0).joint(), -1);
  const v1::ModelDescription described = DescribedModel(ids[0]);
  ASSERT_TRUE(described.actuators(0).has_site());
  EXPECT_EQ(described.actuators(0).site().body(), 0);
  EXPECT_EQ(described.actuators(0).site().pose().pos().y(), 0.5);
  EXPECT_THAT(described.actuators(0).site().wrench(), ElementsAre(0, 0, 1, 0, 0, 0));

  site->set_body(-1);
  absl::Status status = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("site.body"));
  site->set_body(0);
  for (int k = 0; k < 5; ++k) site->add_wrench(1);
  status = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("not 6"));
}

// A site actuator with a reaction body (MuJoCo's motor on a ball joint): a torque about x on
// the first wheel, its reaction on the second, so they turn apart at tau t / 0.1 each; the
// reaction body and a world-frame force come back in the described model, and a reaction on
// a missing body is refused by name.
TEST_F(ServerApiTest, SiteActuatorsWithAReactionPushBothBodies) {
  v1::ModelDescription scene = TwoWheelScene();
  v1::ActuatorSite* site = scene.mutable_actuators(0)->mutable_site();
  site->set_body(0);
  for (double x : {0, 0, 0, 1, 0, 0}) site->add_wrench(x);
  site->mutable_reaction_body()->set_value(1);
  site->set_world_force(true);
  const std::vector<uint64_t> ids = MustCreate(*client_, scene, 1);
  const std::vector<float> qdot = StepAndReadJointVelocity(ids, 0.5f);
  ASSERT_EQ(qdot.size(), 2u);
  EXPECT_NEAR(qdot[0], 0.5 * 20 * kTimestep / 0.1, 1e-5);
  EXPECT_NEAR(qdot[1], -qdot[0], 1e-6);
  const v1::ModelDescription described = DescribedModel(ids[0]);
  EXPECT_EQ(described.actuators(0).site().reaction_body().value(), 1);
  EXPECT_TRUE(described.actuators(0).site().world_force());
  site->mutable_reaction_body()->set_value(7);
  absl::Status status = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("site_reaction_body"));
}

// A joint's dry friction reaches the engine: the wheel under 0.5 N m against 0.2 N m of friction
// turns at (0.5 - 0.2) t / I; under 0.1 N m it does not move.
TEST_F(ServerApiTest, JointFrictionLossIsCarried) {
  v1::ModelDescription scene = WheelScene();
  scene.mutable_joints(0)->set_friction_loss(0.2);
  const std::vector<uint64_t> ids = MustCreate(*client_, scene, 2);
  v1::StepRequest step = StepRequestFor(ids, 20);
  step.set_controls(client::PackFloat32(std::vector<float>{0.5f, 0.1f}));
  step.mutable_observe()->set_joint_velocity(true);
  absl::StatusOr<v1::StepResponse> stepped = client_->Step(step);
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  const std::vector<float> qdot = client::UnpackFloat32(stepped->observations().joint_velocity());
  ASSERT_EQ(qdot.size(), 2u);
  EXPECT_NEAR(qdot[0], (0.5 - 0.2) * 20 * kTimestep / 0.1, 1e-5);
  EXPECT_NEAR(qdot[1], 0, 1e-6);
}

// A scene's explicit contact pairs (and a shape's priority) reach the engine and come back in the
// described model; a pair naming a missing shape is refused by name.
TEST_F(ServerApiTest, ContactPairsAreCarried) {
  v1::ModelDescription scene = RestingBallScene();
  v1::ContactPair* pair = scene.add_contact_pairs();
  pair->set_name("grip");
  pair->set_shape_a(0);
  pair->set_shape_b(1);
  pair->mutable_friction()->set_value(0.5);
  const std::vector<uint64_t> ids = MustCreate(*client_, scene, 1);
  absl::StatusOr<v1::DescribeWorldResponse> described =
      client_->DescribeWorld(ids[0], /*include_model=*/true);
  ASSERT_TRUE(described.ok()) << described.status();
  ASSERT_EQ(described->model().contact_pairs_size(), 1);
  EXPECT_EQ(described->model().contact_pairs(0).friction().value(), 0.5);
  EXPECT_EQ(described->model().contact_pairs(0).contact_dim(), 3);
  EXPECT_EQ(described->model().contact_pairs(0).torsional_friction(), 0);
  // a shape's priority too (unset: 0, and left unset)
  EXPECT_FALSE(described->model().shapes(0).has_priority());
  scene.mutable_shapes(1)->mutable_priority()->set_value(2);
  const std::vector<uint64_t> prioritised = MustCreate(*client_, scene, 1);
  described = client_->DescribeWorld(prioritised[0], /*include_model=*/true);
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->model().shapes(1).priority().value(), 2);
  // and its torsional and rolling friction with contact dimension 6 (unset: 0, and left unset)
  EXPECT_FALSE(described->model().shapes(1).material().has_torsional_friction());
  scene.mutable_shapes(1)->mutable_material()->mutable_torsional_friction()->set_value(0.02);
  scene.mutable_shapes(1)->mutable_material()->mutable_rolling_friction()->set_value(0.01);
  scene.mutable_shapes(1)->mutable_contact_dim()->set_value(6);
  scene.mutable_shapes(1)->mutable_margin()->set_value(0.01);
  scene.mutable_shapes(1)->mutable_gap()->set_value(0.005);
  const std::vector<uint64_t> rolling = MustCreate(*client_, scene, 1);
  described = client_->DescribeWorld(rolling[0], /*include_model=*/true);
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->model().shapes(1).material().torsional_friction().value(), 0.02);
  EXPECT_EQ(described->model().shapes(1).material().rolling_friction().value(), 0.01);
  EXPECT_EQ(described->model().shapes(1).contact_dim().value(), 6);
  EXPECT_EQ(described->model().shapes(1).margin().value(), 0.01);
  EXPECT_EQ(described->model().shapes(1).gap().value(), 0.005);
  // and a pair's
  pair->set_contact_dim(4);
  pair->set_torsional_friction(0.03);
  const std::vector<uint64_t> spun = MustCreate(*client_, scene, 1);
  described = client_->DescribeWorld(spun[0], /*include_model=*/true);
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->model().contact_pairs(0).contact_dim(), 4);
  EXPECT_EQ(described->model().contact_pairs(0).torsional_friction(), 0.03);
  pair->set_shape_b(7);
  absl::Status status = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("contact pair 0 ('grip')"));
}

TEST_F(ServerApiTest, PairCapacityIsCarriedAndItsOverflowFlagged) {
  v1::ModelDescription scene = RestingBallScene();
  scene.mutable_pair_capacity()->set_value(0);  // no room for the ball's pair with the ground
  const std::vector<uint64_t> ids = MustCreate(*client_, scene, 1);
  absl::StatusOr<v1::DescribeWorldResponse> described =
      client_->DescribeWorld(ids[0], /*include_model=*/true);
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->model().pair_capacity().value(), 0);
  v1::StepRequest step = StepRequestFor(ids, 1);
  step.mutable_observe()->set_stats(true);
  absl::StatusOr<v1::StepResponse> stepped = client_->Step(step);
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  ASSERT_EQ(stepped->observations().stats().flags_size(), 1);
  EXPECT_EQ(stepped->observations().stats().flags(0) & 8u, 8u);
  scene.mutable_pair_capacity()->set_value(-3);
  absl::Status status = client_->CreateWorlds(client::ModelScene(scene), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("pair_capacity"));
}

TEST_F(ServerApiTest, PreconditionerOverrideIsAppliedAndReported) {
  for (v1::Preconditioner preconditioner : {v1::PRECONDITIONER_JACOBI, v1::PRECONDITIONER_TREE}) {
    SCOPED_TRACE(v1::Preconditioner_Name(preconditioner));
    // A joint (the wheel) and a contact (the resting ball), two worlds of each.
    v1::CreateWorldsRequest request;
    *request.mutable_scene() = client::ModelScene(WheelScene());
    request.set_count(2);
    request.mutable_solver_options()->set_preconditioner(preconditioner);
    absl::StatusOr<v1::CreateWorldsResponse> wheels = client_->CreateWorlds(request);
    ASSERT_TRUE(wheels.ok()) << wheels.status();
    *request.mutable_scene() = client::ModelScene(RestingBallScene());
    absl::StatusOr<v1::CreateWorldsResponse> balls = client_->CreateWorlds(request);
    ASSERT_TRUE(balls.ok()) << balls.status();

    for (uint64_t id : {wheels->world_ids(0), balls->world_ids(1)}) {
      absl::StatusOr<v1::DescribeWorldResponse> described =
          client_->DescribeWorld(id, /*include_model=*/true);
      ASSERT_TRUE(described.ok()) << described.status();
      EXPECT_EQ(described->model().options().preconditioner(), preconditioner);
    }

    const std::vector<uint64_t> wheel_ids(wheels->world_ids().begin(), wheels->world_ids().end());
    StepWheelsAndCheckSpeeds(*client_, wheel_ids, /*observe_controls=*/false);

    const std::vector<uint64_t> ball_ids(balls->world_ids().begin(), balls->world_ids().end());
    v1::StepRequest step = StepRequestFor(ball_ids, 20);
    step.mutable_observe()->set_body_contact_force(true);
    absl::StatusOr<v1::StepResponse> stepped = client_->Step(step);
    ASSERT_TRUE(stepped.ok()) << stepped.status();
    const std::vector<float> force =
        client::UnpackFloat32(stepped->observations().body_contact_force());
    ASSERT_EQ(force.size(), 6u);
    for (int w = 0; w < 2; ++w) EXPECT_NEAR(force[3 * w + 2], 2 * kGravity, 0.05 * 2 * kGravity);
  }

  // Unset keeps the scene's option (the default, tree).
  const std::vector<uint64_t> ids = MustCreate(*client_, WheelScene(), 1);
  absl::StatusOr<v1::DescribeWorldResponse> described =
      client_->DescribeWorld(ids[0], /*include_model=*/true);
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->model().options().preconditioner(), v1::PRECONDITIONER_TREE);

  // A value outside the enum is refused, naming the field and the value.
  v1::CreateWorldsRequest bad;
  *bad.mutable_scene() = client::ModelScene(WheelScene());
  bad.set_count(1);
  bad.mutable_solver_options()->set_preconditioner(static_cast<v1::Preconditioner>(7));
  absl::Status status = client_->CreateWorlds(bad).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("solver_options.preconditioner: unknown value 7"));
}

TEST(ServerReplicaTest, WorldIdsCarryTheReplicaPrefix) {
  ServerOptions options = TestServerOptions();
  options.replica_id = 7;
  std::unique_ptr<AxionServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> client = Connect(*server);
  const std::vector<uint64_t> ids = MustCreate(*client, FallingBallScene(), 2);
  ASSERT_EQ(ids.size(), 2u);
  for (uint64_t id : ids) EXPECT_EQ(id >> 48, 7u);
  EXPECT_NE(ids[0], ids[1]);
}

TEST_F(ServerApiTest, EffortControlAcceleratesTheWheel) {
  const std::vector<uint64_t> ids = MustCreate(*client_, WheelScene(), 2);
  v1::StepResponse stepped = StepWheelsAndCheckSpeeds(*client_, ids, /*observe_controls=*/true);
  EXPECT_THAT(client::UnpackFloat32(stepped.observations().controls()), ElementsAre(0.5f, -0.25f));
}

TEST_F(ServerApiTest, ContactForceCarriesTheWeight) {
  const std::vector<uint64_t> ids = MustCreate(*client_, RestingBallScene(), 1);
  v1::StepRequest step = StepRequestFor(ids, 20);
  step.mutable_observe()->set_body_contact_force(true);
  step.mutable_observe()->set_contacts(true);
  step.mutable_observe()->set_stats(true);
  absl::StatusOr<v1::StepResponse> stepped = client_->Step(step);
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  const v1::Observations& obs = stepped->observations();
  const std::vector<float> force = client::UnpackFloat32(obs.body_contact_force());
  ASSERT_EQ(force.size(), 3u);
  EXPECT_NEAR(force[2], 2 * kGravity, 0.05 * 2 * kGravity);
  EXPECT_NEAR(force[0], 0, 1e-3);
  ASSERT_EQ(obs.contacts().count_size(), 1);
  const int contact_count = obs.contacts().count(0);
  EXPECT_GE(contact_count, 1);
  EXPECT_EQ(obs.stats().contact_count(0), contact_count);
  EXPECT_EQ(client::UnpackInt32(obs.contacts().body()).size(), 2u * contact_count);
  const std::vector<float> data = client::UnpackFloat32(obs.contacts().data());
  ASSERT_EQ(data.size(), 10u * contact_count);
  // Contact point near the ground under the ball; normal vertical.
  EXPECT_NEAR(data[2], 0, 0.02);
  EXPECT_NEAR(std::abs(data[5]), 1, 1e-4);
}

TEST_F(ServerApiTest, ExternalForceCancelsGravity) {
  const std::vector<uint64_t> ids = MustCreate(*client_, FallingBallScene(), 1);
  v1::StepRequest step = StepRequestFor(ids, 10);
  // (world_count x body_count x 6): force m g upward, no torque.
  step.set_external_forces(
      client::PackFloat32(std::vector<float>{0, 0, static_cast<float>(kGravity), 0, 0, 0}));
  step.mutable_observe()->set_body_velocity(true);
  absl::StatusOr<v1::StepResponse> stepped = client_->Step(step);
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  EXPECT_NEAR(client::UnpackFloat32(stepped->observations().body_velocity())[2], 0, 1e-5);
}

TEST_F(ServerApiTest, SetStateThenGetStateRoundTrips) {
  const std::vector<uint64_t> ids = MustCreate(*client_, FallingBallScene(), 2);
  v1::SetStateRequest set;
  for (uint64_t id : ids) set.add_world_ids(id);
  set.set_body_pose(client::PackFloat32(std::vector<float>{1, 2, 3, 1, 0, 0, 0,  //
                                                           4, 5, 6, 0, 0, 0, 2}));
  set.set_body_velocity(client::PackFloat32(std::vector<float>{0.5f, 0, 0, 0, 0, 1,  //
                                                               0, -1, 0, 0, 0, 0}));
  ASSERT_TRUE(client_->SetState(set).ok());
  const v1::GetStateResponse state = MustGetState(*client_, ids);
  const std::vector<float> pose = client::UnpackFloat32(state.observations().body_pose());
  const std::vector<float> velocity = client::UnpackFloat32(state.observations().body_velocity());
  ASSERT_EQ(pose.size(), 14u);
  EXPECT_THAT(std::vector<float>(pose.begin(), pose.begin() + 3), ElementsAre(1, 2, 3));
  EXPECT_THAT(std::vector<float>(pose.begin() + 7, pose.begin() + 10), ElementsAre(4, 5, 6));
  // The second quaternion (0, 0, 0, 2) was normalised.
  EXPECT_NEAR(pose[13], 1, 1e-6);
  EXPECT_NEAR(velocity[0], 0.5, 1e-6);
  EXPECT_NEAR(velocity[5], 1, 1e-6);
  EXPECT_NEAR(velocity[7], -1, 1e-6);
}

TEST_F(ServerApiTest, ResetByMaskRestoresOnlyMaskedWorlds) {
  const std::vector<uint64_t> ids = MustCreate(*client_, FallingBallScene(10), 2);
  ASSERT_TRUE(client_->Step(StepRequestFor(ids, 5)).ok());
  v1::ResetRequest reset;
  for (uint64_t id : ids) reset.add_world_ids(id);
  reset.add_mask(false);
  reset.add_mask(true);
  absl::StatusOr<v1::ResetResponse> done = client_->Reset(reset);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_THAT(done->world_ids(), ElementsAre(ids[1]));
  const v1::GetStateResponse state = MustGetState(*client_, ids);
  EXPECT_EQ(state.observations().stats().step_count(0), 5u);
  EXPECT_EQ(state.observations().stats().step_count(1), 0u);
  const std::vector<float> pose = client::UnpackFloat32(state.observations().body_pose());
  EXPECT_LT(pose[2], 10.0f);
  EXPECT_EQ(pose[7 + 2], 10.0f);

  // Reset to a given state: all worlds, with a pose for each.
  v1::ResetRequest to_state;
  to_state.set_all(true);
  to_state.set_body_pose(client::PackFloat32(std::vector<float>{0, 0, 3, 1, 0, 0, 0,  //
                                                                0, 0, 4, 1, 0, 0, 0}));
  ASSERT_TRUE(client_->Reset(to_state).ok());
  const std::vector<float> reset_pose =
      client::UnpackFloat32(MustGetState(*client_, ids).observations().body_pose());
  EXPECT_EQ(reset_pose[2], 3.0f);
  EXPECT_EQ(reset_pose[7 + 2], 4.0f);
}

// Steps world 0 of `ids` 7 times, snapshots it, steps it 13 more; then restores the snapshot into
// both worlds and steps both 13 times: all three histories must agree bit for bit.
void ExpectSnapshotReplaysBitExactly(client::Client& client, const std::vector<uint64_t>& ids,
                                     const std::string& controls) {
  v1::StepRequest seven = StepRequestFor({ids[0]}, 7);
  seven.set_controls(controls);
  ASSERT_TRUE(client.Step(seven).ok());
  absl::StatusOr<v1::SnapshotResponse> snapshot = client.Snapshot({ids[0]});
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  ASSERT_EQ(snapshot->snapshots_size(), 1);
  ASSERT_TRUE(client.Step(StepRequestFor({ids[0]}, 13)).ok());
  const std::string first = client.Snapshot({ids[0]})->snapshots(0).data();
  const v1::GetStateResponse first_state = MustGetState(client, {ids[0]});

  v1::RestoreRequest restore;
  *restore.add_snapshots() = snapshot->snapshots(0);
  v1::WorldSnapshot* into_other = restore.add_snapshots();
  into_other->set_world_id(ids[1]);
  into_other->set_data(snapshot->snapshots(0).data());
  ASSERT_TRUE(client.Restore(restore).ok());
  EXPECT_EQ(MustGetState(client, {ids[1]}).observations().stats().step_count(0), 7u);
  ASSERT_TRUE(client.Step(StepRequestFor(ids, 13)).ok());
  EXPECT_EQ(client.Snapshot({ids[0]})->snapshots(0).data(), first);
  EXPECT_EQ(client.Snapshot({ids[1]})->snapshots(0).data(), first);
  const v1::GetStateResponse replay = MustGetState(client, {ids[1]});
  EXPECT_EQ(replay.observations().body_pose(), first_state.observations().body_pose());
  EXPECT_EQ(replay.observations().body_velocity(), first_state.observations().body_velocity());
}

TEST_F(ServerApiTest, SnapshotRestoreIsBitExactForJointedWorlds) {
  const std::vector<uint64_t> ids = MustCreate(*client_, WheelScene(), 2);
  ExpectSnapshotReplaysBitExactly(*client_, ids, client::PackFloat32(std::vector<float>{0.3f}));
}

TEST_F(ServerApiTest, SnapshotRestoreIsBitExactForWorldsInContact) {
  const std::vector<uint64_t> ids = MustCreate(*client_, RestingBallScene(), 2);
  ExpectSnapshotReplaysBitExactly(*client_, ids, "");
}

TEST_F(ServerApiTest, RestoreOfAnotherSceneIsRefusedAndChangesNothing) {
  const std::vector<uint64_t> balls = MustCreate(*client_, FallingBallScene(), 1);
  const std::vector<uint64_t> wheels = MustCreate(*client_, WheelScene(), 1);
  ASSERT_TRUE(client_->Step(StepRequestFor(balls, 3)).ok());
  const std::string before = client_->Snapshot(balls)->snapshots(0).data();
  v1::RestoreRequest restore;
  v1::WorldSnapshot* good = restore.add_snapshots();
  good->set_world_id(balls[0]);
  good->set_data(client_->Snapshot(balls)->snapshots(0).data());
  v1::WorldSnapshot* bad = restore.add_snapshots();
  bad->set_world_id(balls[0]);  // listed twice: refused before anything is restored
  bad->set_data("x");
  EXPECT_EQ(client_->Restore(restore).status().code(), absl::StatusCode::kInvalidArgument);

  v1::RestoreRequest wrong_scene;
  v1::WorldSnapshot* ball_into_wheel = wrong_scene.add_snapshots();
  ball_into_wheel->set_world_id(wheels[0]);
  ball_into_wheel->set_data(before);
  const std::string wheel_before = client_->Snapshot(wheels)->snapshots(0).data();
  absl::Status status = client_->Restore(wrong_scene).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr(std::to_string(wheels[0])));
  EXPECT_EQ(client_->Snapshot(wheels)->snapshots(0).data(), wheel_before);
  EXPECT_EQ(client_->Snapshot(balls)->snapshots(0).data(), before);
}

// ---- error paths ----------------------------------------------------------------------------

TEST_F(ServerApiTest, UnknownWorldIsNotFoundAndNamed) {
  absl::Status status = client_->Step(StepRequestFor({12345}, 1)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("12345"));
  EXPECT_THAT(status.message(), HasSubstr("world_ids[0]"));
  EXPECT_EQ(client_->DescribeWorld(12345).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->DestroyWorlds({12345}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->Snapshot({12345}).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ServerApiTest, OtherClientsWorldsAreNotFound) {
  const std::vector<uint64_t> alice = MustCreate(*client_, FallingBallScene(), 1);
  std::unique_ptr<client::Client> bob = Connect(*server_, "bob");
  EXPECT_EQ(bob->Step(StepRequestFor(alice, 1)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(bob->DescribeWorld(alice[0]).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(bob->DestroyWorlds(alice).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(bob->Snapshot(alice).status().code(), absl::StatusCode::kNotFound);
  v1::ResetRequest reset_all;
  reset_all.set_all(true);
  ASSERT_TRUE(bob->Reset(reset_all).ok());
  EXPECT_EQ(bob->ListWorlds()->worlds_size(), 0);
  v1::DestroyWorldsRequest destroy_all;
  destroy_all.set_all(true);
  ASSERT_TRUE(bob->DestroyWorlds(destroy_all).ok());
  // Alice's world is still there and untouched.
  ASSERT_EQ(client_->ListWorlds()->worlds_size(), 1);
  EXPECT_EQ(client_->ListWorlds()->worlds(0).step_count(), 0u);
}

TEST_F(ServerApiTest, MalformedScenesAreInvalidArgument) {
  v1::ModelDescription zero_mass = FallingBallScene();
  zero_mass.mutable_bodies(0)->set_mass(0);
  absl::Status status = client_->CreateWorlds(client::ModelScene(zero_mass), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("mass"));

  v1::ModelDescription no_type = FallingBallScene();
  no_type.mutable_shapes(0)->clear_type();
  status = client_->CreateWorlds(client::ModelScene(no_type), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("shapes[0].type"));

  v1::ModelDescription bad_joint = WheelScene();
  bad_joint.mutable_joints(0)->set_child(5);
  EXPECT_EQ(client_->CreateWorlds(client::ModelScene(bad_joint), 1).status().code(),
            absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(client_->CreateWorlds(v1::Scene(), 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client_->CreateWorlds(client::MjcfScene("<mujoco><worldbody>"), 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client_->ListWorlds()->worlds_size(), 0);
}

TEST_F(ServerApiTest, NanControlIsRefusedAndTheWorldUntouched) {
  const std::vector<uint64_t> ids = MustCreate(*client_, WheelScene(), 1);
  const std::string before = client_->Snapshot(ids)->snapshots(0).data();
  v1::StepRequest step = StepRequestFor(ids, 1);
  step.set_controls(client::PackFloat32(std::vector<float>{std::nanf("")}));
  absl::Status status = client_->Step(step).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("controls"));
  EXPECT_THAT(status.message(), HasSubstr(std::to_string(ids[0])));
  EXPECT_EQ(client_->Snapshot(ids)->snapshots(0).data(), before);
}

TEST_F(ServerApiTest, OutOfRangeControlInOneWorldChangesNoWorld) {
  const std::vector<uint64_t> ids = MustCreate(*client_, WheelScene(), 2);
  const std::string before0 = client_->Snapshot({ids[0]})->snapshots(0).data();
  const std::string before1 = client_->Snapshot({ids[1]})->snapshots(0).data();
  v1::StepRequest step = StepRequestFor(ids, 1);
  step.set_controls(client::PackFloat32(std::vector<float>{0.5f, 1.5f}));  // range [-1, 1]
  absl::Status status = client_->Step(step).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("1.5"));
  EXPECT_THAT(status.message(), HasSubstr("motor"));
  EXPECT_EQ(client_->Snapshot({ids[0]})->snapshots(0).data(), before0);
  EXPECT_EQ(client_->Snapshot({ids[1]})->snapshots(0).data(), before1);

  // The float32 rounding of the limit itself is accepted.
  step.set_controls(client::PackFloat32(std::vector<float>{1.0f, -1.0f}));
  EXPECT_TRUE(client_->Step(step).ok());
}

TEST_F(ServerApiTest, WrongArraySizesAndStepCountsAreInvalidArgument) {
  const std::vector<uint64_t> ids = MustCreate(*client_, WheelScene(), 2);
  v1::StepRequest step = StepRequestFor(ids, 1);
  step.set_controls(client::PackFloat32(std::vector<float>{0.5f}));  // needs 2
  absl::Status status = client_->Step(step).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("controls"));

  v1::StepRequest forces = StepRequestFor(ids, 1);
  forces.set_external_forces("abc");
  EXPECT_EQ(client_->Step(forces).status().code(), absl::StatusCode::kInvalidArgument);

  v1::StepRequest too_many = StepRequestFor(ids, 10001);  // default limit 10000
  status = client_->Step(too_many).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("10001"));

  v1::StepRequest twice = StepRequestFor({ids[0], ids[0]}, 1);
  EXPECT_EQ(client_->Step(twice).status().code(), absl::StatusCode::kInvalidArgument);

  v1::StepRequest empty;
  EXPECT_EQ(client_->Step(empty).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MustGetState(*client_, ids).observations().stats().step_count(0), 0u);
}

TEST(ServerLimitsTest, WorldsPerClientAndBodiesPerWorld) {
  ServerOptions options = TestServerOptions();
  options.max_worlds_per_client = 3;
  options.max_bodies_per_world = 1;
  std::unique_ptr<AxionServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> alice = Connect(*server, "alice");
  ASSERT_EQ(MustCreate(*alice, FallingBallScene(), 2).size(), 2u);
  EXPECT_EQ(alice->CreateWorlds(client::ModelScene(FallingBallScene()), 2).status().code(),
            absl::StatusCode::kResourceExhausted);
  // The limit is per client.
  std::unique_ptr<client::Client> bob = Connect(*server, "bob");
  EXPECT_EQ(MustCreate(*bob, FallingBallScene(), 3).size(), 3u);

  v1::ModelDescription two_bodies = FallingBallScene();
  *two_bodies.add_bodies() = two_bodies.bodies(0);
  absl::Status status = alice->CreateWorlds(client::ModelScene(two_bodies), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("bodies"));
  // a hundred bytes of MJCF asking for 1e8 bodies are refused before any is made
  status = alice
               ->CreateWorlds(client::MjcfScene(R"(<mujoco><worldbody>
                  <composite type="particle" count="1000 1000 100" spacing="0.01">
                    <geom size="0.001"/></composite></worldbody></mujoco>)"),
                              1)
               .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("makes 100000000 bodies, past the limit of 1"));
}

TEST(ServerLimitsTest, MessageSizeLimit) {
  ServerOptions options = TestServerOptions();
  options.max_message_bytes = 4096;
  std::unique_ptr<AxionServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> client = Connect(*server);
  const std::string big(8192, ' ');
  EXPECT_EQ(
      client->CreateWorlds(client::MjcfScene("<mujoco>" + big + "</mujoco>"), 1).status().code(),
      absl::StatusCode::kResourceExhausted);
}

TEST(ServerLimitsTest, FullQueueIsResourceExhausted) {
  ServerOptions options = TestServerOptions();
  options.max_queue = 1;
  options.metrics_port = 0;
  // A long batching window keeps the first request queued while the second arrives.
  options.max_batch_delay = absl::Seconds(3);
  std::unique_ptr<AxionServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> client = Connect(*server);
  const std::vector<uint64_t> ids = MustCreate(*client, FallingBallScene(), 2);
  auto first = std::async(std::launch::async,
                          [&] { return client->Step(StepRequestFor({ids[0]}, 1)).status(); });
  // Wait until the first request is in the queue (the gauge is set at enqueue).
  for (int i = 0; i < 2000; ++i) {
    if (MetricValue(HttpGet(server->metrics_port(), "/metrics"), "axion_queue_depth") == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  absl::Status second = client->Step(StepRequestFor({ids[1]}, 1)).status();
  EXPECT_EQ(second.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(second.message(), HasSubstr("queue"));
  EXPECT_TRUE(first.get().ok());
}

TEST(ServerLimitsTest, ExpiredDeadlineLeavesTheWorldUntouched) {
  ServerOptions options = TestServerOptions();
  options.max_batch_delay = absl::Seconds(1);
  std::unique_ptr<AxionServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> client = Connect(*server);
  const std::vector<uint64_t> ids = MustCreate(*client, FallingBallScene(), 2);
  client::ClientOptions hurried = LocalClientOptions(*server, "test");
  hurried.timeout = absl::Milliseconds(50);
  std::unique_ptr<client::Client> hurried_client = Connect(hurried);
  // Only one of two worlds is stepped, so the request sits out the 1 s window and its 50 ms
  // deadline passes before its batch runs.
  EXPECT_EQ(hurried_client->Step(StepRequestFor({ids[0]}, 1)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  // GetState queues behind the expired step, so it sees the world after the batch ran.
  EXPECT_EQ(MustGetState(*client, ids).observations().stats().step_count(0), 0u);
}

// ---- scenes from files ----------------------------------------------------------------------

TEST_F(ServerApiTest, MjcfSceneIsImported) {
  const char* kPendulum = R"(
    <mujoco model="pendulum">
      <option timestep="0.005"/>
      <worldbody>
        <body name="link" pos="0 0 1">
          <joint name="pivot" type="hinge" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05" mass="1"/>
        </body>
      </worldbody>
      <actuator><motor name="torque" joint="pivot" ctrlrange="-2 2" ctrllimited="true"/></actuator>
    </mujoco>)";
  absl::StatusOr<v1::CreateWorldsResponse> created =
      client_->CreateWorlds(client::MjcfScene(kPendulum), 2);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->world_ids_size(), 2);
  EXPECT_EQ(created->description().model_name(), "pendulum");
  EXPECT_THAT(created->description().body_names(), ElementsAre("link"));
  EXPECT_EQ(created->description().actuators(0).name(), "torque");
  EXPECT_DOUBLE_EQ(created->description().timestep(), 0.005);
  v1::StepRequest step =
      StepRequestFor({created->world_ids().begin(), created->world_ids().end()}, 10);
  step.set_controls(client::PackFloat32(std::vector<float>{2, -2}));
  EXPECT_TRUE(client_->Step(step).ok());
}

// An MJCF adhesion pad reaches the engine through the server: a ball hovering 1 cm over the
// floor within its 2 cm margin, no gravity, is pulled down by 2 ctrl newtons (1 kg: v = -2 ctrl
// t); the pad comes back in the world's description and model, and a scene built from that
// model pulls the same. A pad on body -1 is refused.
TEST_F(ServerApiTest, AdhesionActuatorsAreCarried) {
  const char* kPad = R"(
    <mujoco model="pad">
      <option timestep="0.01" gravity="0 0 0"/>
      <worldbody>
        <geom type="plane" size="0 0 1"/>
        <body name="ball" pos="0 0 0.11">
          <freejoint/><geom type="sphere" size="0.1" mass="1" margin="0.02" gap="0.02"/>
        </body>
      </worldbody>
      <actuator><adhesion name="pad" body="ball" ctrlrange="0 1" gain="2"/></actuator>
    </mujoco>)";
  absl::StatusOr<v1::CreateWorldsResponse> created =
      client_->CreateWorlds(client::MjcfScene(kPad), 1);
  ASSERT_TRUE(created.ok()) << created.status();
  const uint64_t id = created->world_ids(0);
  EXPECT_EQ(created->description().actuators(0).adhesion_body(), 0);
  EXPECT_EQ(created->description().actuators(0).joint(), -1);
  EXPECT_EQ(created->description().actuators(0).site_body(), -1);
  const v1::ModelDescription described = DescribedModel(id);
  ASSERT_TRUE(described.actuators(0).has_adhesion_body());
  EXPECT_EQ(described.actuators(0).adhesion_body().value(), 0);
  const uint64_t rebuilt = MustCreate(*client_, described, 1)[0];
  for (uint64_t world : {id, rebuilt}) {
    v1::StepRequest step = StepRequestFor({world}, 2);
    step.set_controls(client::PackFloat32(std::vector<float>{0.5f}));
    step.mutable_observe()->set_body_velocity(true);
    absl::StatusOr<v1::StepResponse> stepped = client_->Step(step);
    ASSERT_TRUE(stepped.ok()) << stepped.status();
    const std::vector<float> velocity =
        client::UnpackFloat32(stepped->observations().body_velocity());
    ASSERT_EQ(velocity.size(), 6u);
    EXPECT_NEAR(velocity[2], -2 * 0.5 * 2 * 0.01, 1e-6) << world;
  }
  v1::ModelDescription bad = described;
  bad.mutable_actuators(0)->mutable_adhesion_body()->set_value(-1);
  absl::Status status = client_->CreateWorlds(client::ModelScene(bad), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("adhesion_body"));
}

TEST_F(ServerApiTest, ImporterWarningsAreReturned) {
  const char* kWithCamera = R"(
    <mujoco model="ball">
      <worldbody>
        <camera name="eye" pos="0 0 3"/>
        <body name="ball" pos="0 0 1"><freejoint/><geom type="sphere" size="0.1"/></body>
      </worldbody>
    </mujoco>)";
  absl::StatusOr<v1::CreateWorldsResponse> created =
      client_->CreateWorlds(client::MjcfScene(kWithCamera), 1);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_GE(created->warnings_size(), 1);
  EXPECT_THAT(created->warnings(0), HasSubstr("camera"));
}

TEST_F(ServerApiTest, FileReferencesNeedAnAssetDir) {
  absl::Status status =
      client_
          ->CreateWorlds(client::MjcfScene(R"(<mujoco><include file="/etc/passwd"/></mujoco>)"), 1)
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("asset_dir"));
}

// With --asset_dir a scene's file references resolve there and only there: a client's scene
// reads no other file of the server's, through '..', an absolute path or a symbolic link, and a
// reference to a device (/dev/zero would read without end) is refused.
TEST(ServerAssetDirTest, FileReferencesStayWithinTheAssetDir) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "axion_asset_dir_test";
  const fs::path assets = root / "assets";
  fs::remove_all(root);
  fs::create_directories(assets);
  const char* kBall = R"(<mujoco><worldbody><body name="ball" pos="0 0 1"><freejoint/>
      <geom type="sphere" size="0.1"/></body></worldbody></mujoco>)";
  std::ofstream(assets / "ball.xml") << kBall;
  std::ofstream(root / "outside.xml") << kBall;
  fs::create_symlink(root / "outside.xml", assets / "link.xml");
  ServerOptions options = TestServerOptions();
  options.asset_dir = assets.string();
  std::unique_ptr<AxionServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> client = Connect(*server);
  auto include = [&](const std::string& file) {
    return client->CreateWorlds(
        client::MjcfScene("<mujoco><include file=\"" + file + "\"/></mujoco>"), 1);
  };
  absl::StatusOr<v1::CreateWorldsResponse> inside = include("ball.xml");
  ASSERT_TRUE(inside.ok()) << inside.status();
  EXPECT_THAT(inside->description().body_names(), ElementsAre("ball"));
  for (const std::string& file :
       {std::string("../outside.xml"), (root / "outside.xml").string(), std::string("link.xml")}) {
    absl::Status status = include(file).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << file;
    EXPECT_THAT(status.message(), HasSubstr("outside the directory")) << file;
  }
  fs::create_symlink("/dev/zero", assets / "zero.stl");
  absl::Status device =
      client
          ->CreateWorlds(client::MjcfScene(R"(<mujoco><asset><mesh file="zero.stl"/></asset>
                                              </mujoco>)"),
                         1)
          .status();
  EXPECT_EQ(device.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(device.message(), HasSubstr("zero.stl' is not a regular file"));
  // a scene that reads files is read anew each time (compiled scenes are kept only where they
  // read none): the included file changed, and the next request sees the change
  std::ofstream(assets / "ball.xml") << absl::StrReplaceAll(kBall, {{"\"ball\"", "\"bead\""}});
  absl::StatusOr<v1::CreateWorldsResponse> changed = include("ball.xml");
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_THAT(changed->description().body_names(), ElementsAre("bead"));
  fs::remove_all(root);
}

// A mesh given by its vertices needs no file, so a server without an asset directory takes it;
// a mesh file is refused like any other file reference.
TEST_F(ServerApiTest, MeshAssetsByVerticesNeedNoAssetDir) {
  const char* kTetrahedron = R"(
    <mujoco model="tetra">
      <asset><mesh name="tetra" vertex="0 0 0  0.1 0 0  0 0.1 0  0 0 0.1"/></asset>
      <worldbody>
        <body name="tetra" pos="0 0 1"><freejoint/><geom type="mesh" mesh="tetra"/></body>
      </worldbody>
    </mujoco>)";
  absl::StatusOr<v1::CreateWorldsResponse> created =
      client_->CreateWorlds(client::MjcfScene(kTetrahedron), 1);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_THAT(created->description().body_names(), ElementsAre("tetra"));
  absl::Status status =
      client_
          ->CreateWorlds(client::MjcfScene(R"(<mujoco><asset><mesh file="part.stl"/></asset>
                                              </mujoco>)"),
                         1)
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("asset_dir"));
}

TEST_F(ServerApiTest, UrdfSceneIsImported) {
  const char* kArm = R"(
    <robot name="arm">
      <link name="base"/>
      <link name="upper">
        <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
        <collision><geometry><box size="0.1 0.1 0.5"/></geometry></collision>
      </link>
      <joint name="shoulder" type="revolute">
        <parent link="base"/><child link="upper"/><origin xyz="0 0 1"/><axis xyz="0 1 0"/>
        <limit lower="-1" upper="1" effort="5" velocity="1"/>
      </joint>
    </robot>)";
  absl::StatusOr<v1::CreateWorldsResponse> created =
      client_->CreateWorlds(client::UrdfScene(kArm), 1);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_THAT(created->description().body_names(), ElementsAre("upper"));
  ASSERT_EQ(created->description().actuators_size(), 1);
  EXPECT_EQ(created->description().actuators(0).name(), "shoulder");
  EXPECT_EQ(created->description().actuators(0).ctrl_max(), 5);
  EXPECT_FALSE(created->description().actuators(0).force_limited());
  // where the file's links and joints went: the base is the world, 'upper' body 0
  const v1::SourceMap& source = created->description().source();
  ASSERT_EQ(source.bodies_size(), 2);
  EXPECT_EQ(source.bodies(0).name(), "base");
  EXPECT_EQ(source.bodies(0).body(), -1);
  EXPECT_EQ(source.bodies(1).name(), "upper");
  EXPECT_EQ(source.bodies(1).body(), 0);
  ASSERT_EQ(source.joints_size(), 1);
  EXPECT_EQ(source.joints(0).name(), "shoulder");
  EXPECT_EQ(source.joints(0).joint(), 0);
  // as position servos, the joint's effort limit bounds their force
  v1::Scene servo_scene = client::UrdfScene(kArm);
  servo_scene.set_urdf_position_kp(50);
  created = client_->CreateWorlds(servo_scene, 1);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_EQ(created->description().actuators_size(), 1);
  const v1::ActuatorInfo& servo = created->description().actuators(0);
  EXPECT_EQ(servo.type(), v1::ACTUATOR_TYPE_POSITION);
  EXPECT_TRUE(servo.force_limited());
  EXPECT_EQ(servo.force_min(), -5);
  EXPECT_EQ(servo.force_max(), 5);
}

// A robot file has no ground: scene.floor_height adds one. A free sphere robot dropped 1 m
// above it comes to rest on it, its radius above the plane; a non-finite height is refused.
TEST_F(ServerApiTest, FloorHeightAddsAGroundPlane) {
  const char* kBall = R"(
    <robot name="ball">
      <link name="ball">
        <inertial><mass value="1"/><inertia ixx="0.004" iyy="0.004" izz="0.004" ixy="0" ixz="0" iyz="0"/></inertial>
        <collision><geometry><sphere radius="0.1"/></geometry></collision>
      </link>
    </robot>)";
  v1::Scene scene = client::UrdfScene(kBall, /*floating_base=*/true);
  scene.mutable_floor_height()->set_value(-1.0);
  absl::StatusOr<v1::CreateWorldsResponse> created = client_->CreateWorlds(scene, 1);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_THAT(created->description().shape_names(), ::testing::Contains("floor"));
  const std::vector<uint64_t> ids(created->world_ids().begin(), created->world_ids().end());
  v1::StepRequest step = StepRequestFor(ids, 200);
  step.mutable_observe()->set_body_pose(true);
  absl::StatusOr<v1::StepResponse> stepped = client_->Step(step);
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  const std::vector<float> pose = client::UnpackFloat32(stepped->observations().body_pose());
  ASSERT_EQ(pose.size(), 7u);
  EXPECT_NEAR(pose[2], -0.9, 1e-3);
  scene.mutable_floor_height()->set_value(std::numeric_limits<double>::infinity());
  absl::Status refused = client_->CreateWorlds(scene, 1).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("floor_height"));
}

// ---- persistence ----------------------------------------------------------------------------

TEST(ServerPersistenceTest, WorldsSurviveARestartWithIdsOwnersAndState) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("axion_server_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ServerOptions options = TestServerOptions();
  options.snapshot_dir = dir.string();
  options.replica_id = 3;

  std::vector<uint64_t> ids;
  v1::GetStateResponse before;
  std::string snapshot_before;
  {
    std::unique_ptr<AxionServer> server = StartServer(options);
    ASSERT_NE(server, nullptr);
    std::unique_ptr<client::Client> alice = Connect(*server, "alice");
    ids = MustCreate(*alice, RestingBallScene(), 2);
    std::vector<uint64_t> wheel = MustCreate(*alice, WheelScene(), 1);
    ids.push_back(wheel[0]);
    // a ball laid inside the hand, kept apart by <contact><exclude>
    const absl::StatusOr<v1::CreateWorldsResponse> welded =
        alice->CreateWorlds(client::MjcfScene(R"(<mujoco><worldbody><body name="arm" pos="0 0 1">
          <joint name="hinge" axis="0 1 0"/><geom type="sphere" size="0.1"/>
          <body name="hand" pos="0.5 0 0"><geom type="sphere" size="0.1"/></body>
          </body><body name="ball" pos="0.5 0 1.05"><freejoint/><geom type="sphere" size="0.1"/>
          </body></worldbody><contact><exclude body1="hand" body2="ball"/></contact></mujoco>)"),
                            1);
    ASSERT_TRUE(welded.ok()) << welded.status();
    ids.push_back(welded->world_ids(0));
    v1::StepRequest step = StepRequestFor(ids, 9);
    ASSERT_TRUE(alice->Step(step).ok());
    before = MustGetState(*alice, ids);
    snapshot_before = alice->Snapshot(ids)->snapshots(2).data();
    ASSERT_TRUE(server->Shutdown().ok());
  }
  {
    std::unique_ptr<AxionServer> server = StartServer(options);
    ASSERT_NE(server, nullptr);
    std::unique_ptr<client::Client> alice = Connect(*server, "alice");
    absl::StatusOr<v1::ListWorldsResponse> listed = alice->ListWorlds();
    ASSERT_TRUE(listed.ok()) << listed.status();
    ASSERT_EQ(listed->worlds_size(), 4);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(listed->worlds(i).world_id(), ids[i]);
    // the MJCF world still says where its merged hand went
    absl::StatusOr<v1::DescribeWorldResponse> described =
        alice->DescribeWorld(ids[3], /*include_model=*/true);
    ASSERT_TRUE(described.ok()) << described.status();
    const v1::SourceMap& source = described->description().source();
    ASSERT_EQ(source.bodies_size(), 3);
    EXPECT_EQ(source.bodies(1).name(), "hand");
    EXPECT_EQ(source.bodies(1).body(), 0);
    EXPECT_EQ(source.bodies(1).offset().pos().x(), 0.5);
    ASSERT_EQ(source.joints_size(), 2);  // the hinge and the ball's free joint
    EXPECT_EQ(source.joints(0).name(), "hinge");
    // ... and still keeps the ball out of the hand's contacts
    ASSERT_EQ(described->model().exclude_body_pairs_size(), 1);
    EXPECT_EQ(described->model().exclude_body_pairs(0).body_a(), 0);
    EXPECT_EQ(described->model().exclude_body_pairs(0).body_b(), 1);
    const v1::GetStateResponse after = MustGetState(*alice, ids);
    EXPECT_EQ(after.observations().body_pose(), before.observations().body_pose());
    EXPECT_EQ(after.observations().body_velocity(), before.observations().body_velocity());
    EXPECT_EQ(alice->Snapshot({ids[2]})->snapshots(0).data(), snapshot_before);
    v1::StepRequest step = StepRequestFor({ids[3]}, 1);
    step.mutable_observe()->set_stats(true);
    const absl::StatusOr<v1::StepResponse> stepped = alice->Step(step);
    ASSERT_TRUE(stepped.ok()) << stepped.status();
    EXPECT_EQ(stepped->observations().stats().contact_count(0), 0);
    // Another client still sees none of them; new ids continue after the restored ones.
    std::unique_ptr<client::Client> bob = Connect(*server, "bob");
    EXPECT_EQ(bob->ListWorlds()->worlds_size(), 0);
    const std::vector<uint64_t> fresh = MustCreate(*bob, FallingBallScene(), 1);
    ASSERT_EQ(fresh.size(), 1u);
    EXPECT_GT(fresh[0], ids[3]);
    EXPECT_EQ(fresh[0] >> 48, 3u);
    // Destroyed worlds do not come back after the next restart.
    ASSERT_TRUE(alice->DestroyWorlds({ids[0]}).ok());
    ASSERT_TRUE(server->Shutdown().ok());
  }
  {
    std::unique_ptr<AxionServer> server = StartServer(options);
    ASSERT_NE(server, nullptr);
    EXPECT_EQ(Connect(*server, "alice")->ListWorlds()->worlds_size(), 3);
    EXPECT_EQ(Connect(*server, "bob")->ListWorlds()->worlds_size(), 1);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace axion::server::test
