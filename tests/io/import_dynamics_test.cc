// Imported models move as they should: analytic periods, the same trajectory as the model
// built directly through the engine API, and MuJoCo's humanoid dropped on its floor.
#include <mujoco/mujoco.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "axion/mjcf.h"
#include "axion/model.h"
#include "axion/simulator.h"
#include "axion/urdf.h"
#include "gtest/gtest.h"
#include "height_field_height.h"
#include "png.h"

namespace axion {
namespace {

constexpr double kPiD = 3.14159265358979323846;

const std::string kModels = AXION_TEST_MODELS;
const char kHumanoid[] = AXION_TEST_HUMANOID;
constexpr double kPi = 3.14159265358979323846;

struct World {
  std::unique_ptr<Simulator> sim;
  WorldId id = 0;
  std::shared_ptr<const Model> model;
};

World MakeWorld(const ModelDesc& desc) {
  World w;
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(desc);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return w;
  w.model = *model;
  SimulatorOptions options;
  options.backend = Backend::kCpu;
  options.threads = 1;
  absl::StatusOr<std::unique_ptr<Simulator>> sim = Simulator::Create(options);
  EXPECT_TRUE(sim.ok()) << sim.status();
  w.sim = std::move(*sim);
  absl::StatusOr<std::vector<WorldId>> ids = w.sim->CreateWorlds(w.model, 1);
  EXPECT_TRUE(ids.ok()) << ids.status();
  w.id = ids->front();
  return w;
}

// MuJoCo's own model and data of an MJCF file, freed with it.
struct MuJoCoRun {
  explicit MuJoCoRun(const std::string& path) {
    char error[1000] = "";
    m = mj_loadXML(path.c_str(), nullptr, error, sizeof(error));
    if (m) {
      d = mj_makeData(m);
    } else {
      load_error = error;
    }
  }
  ~MuJoCoRun() {
    if (d) mj_deleteData(d);
    if (m) mj_deleteModel(m);
  }
  MuJoCoRun(const MuJoCoRun&) = delete;
  MuJoCoRun& operator=(const MuJoCoRun&) = delete;
  mjModel* m = nullptr;
  mjData* d = nullptr;
  std::string load_error;
};

// An MJCF file loaded by Axion (without warnings) into one world, and by MuJoCo.
struct SideBySide {
  ImportResult imported;
  World w;
  std::unique_ptr<MuJoCoRun> mujoco;
  bool ok() const { return w.sim != nullptr && mujoco != nullptr && mujoco->m != nullptr; }
};
// `merged`: how many jointless bodies the file has, each merged into its parent with a warning.
SideBySide LoadSideBySide(const std::string& path, size_t merged = 0) {
  SideBySide s;
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  EXPECT_TRUE(imported.ok()) << imported.status();
  if (!imported.ok()) return s;
  EXPECT_EQ(imported->warnings.size(), merged)
      << (imported->warnings.empty() ? "" : imported->warnings.front());
  for (const std::string& warning : imported->warnings)
    EXPECT_NE(warning.find("has no joint: merged into"), std::string::npos) << warning;
  s.imported = *std::move(imported);
  s.w = MakeWorld(s.imported.model);
  s.mujoco = std::make_unique<MuJoCoRun>(path);
  EXPECT_TRUE(s.mujoco->m) << s.mujoco->load_error;
  return s;
}

// Steps the Axion world and MuJoCo's once each; the Axion world's state then, in the file's
// coordinates (MuJoCo's qpos and qvel).
absl::StatusOr<FileCoordinates> StepBoth(SideBySide& run) {
  absl::Status stepped = run.w.sim->StepAll(1);
  if (!stepped.ok()) return stepped;
  mj_step(run.mujoco->m, run.mujoco->d);
  absl::StatusOr<BodyState> bodies = run.w.sim->GetBodyState(run.w.id);
  if (!bodies.ok()) return bodies.status();
  absl::StatusOr<JointState> joints = run.w.sim->GetJointState(run.w.id);
  if (!joints.ok()) return joints.status();
  return FileJointCoordinates(run.imported, *run.w.model, *bodies, *joints);
}

// Writes `text` to a file of the test's temporary directory; returns its path.
std::string WriteTempModel(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// Trajectory comparisons between an imported model and the same model built directly check the
// models, not where Newton happened to stop: both are solved far below the default tolerance
// (1e-7 m/s per step, which alone allows differences of ~1e-9 m over thousands of steps), so
// the two trajectories agree to rounding.
ModelDesc TightlySolved(ModelDesc desc) {
  desc.options.newton_tolerance = 1e-12;
  return desc;
}

// Body poses (body_count x 7) after each of `steps` steps.
std::vector<std::vector<Real>> Trajectory(World& w, int steps) {
  std::vector<std::vector<Real>> out;
  for (int s = 0; s < steps; ++s) {
    EXPECT_TRUE(w.sim->StepAll(1).ok());
    absl::StatusOr<BodyState> state = w.sim->GetBodyState(w.id);
    EXPECT_TRUE(state.ok());
    out.push_back(state->pose);
  }
  return out;
}

// Mean period of `signal` (sampled every h seconds) from its upward zero crossings.
double MeasuredPeriod(const std::vector<double>& signal, double h) {
  std::vector<double> crossings;
  for (size_t i = 1; i < signal.size(); ++i) {
    if (signal[i - 1] < 0 && signal[i] >= 0) {
      double t = (i - 1 + signal[i - 1] / (signal[i - 1] - signal[i])) * h;
      crossings.push_back(t);
    }
  }
  if (crossings.size() < 2) return 0;
  return (crossings.back() - crossings.front()) / static_cast<double>(crossings.size() - 1);
}

TEST(PendulumTest, MjcfPendulumHasTheAnalyticPeriodAndMatchesTheDirectModel) {
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(kModels + "/pendulum.xml");
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_TRUE(imported->warnings.empty()) << imported->warnings.front();

  // The same pendulum through the engine API.
  const double r = 0.05, length = 1.0, density = 7800, h = 0.001;
  const double mass = density * 4.0 / 3.0 * kPi * r * r * r;
  ModelDesc direct;
  direct.options.timestep = h;
  direct.options.gravity = {0, 0, -9.81};
  BodyDesc bob;
  bob.name = "bob";
  bob.mass = mass;
  bob.inertia = mat33_diag(Vec3{1, 1, 1} * (0.4 * mass * r * r));
  bob.com = {0, 0, -length};
  bob.pose = {{0, 0, 2}, quat_from_axis_angle({0, 1, 0}, 0.05)};
  direct.bodies.push_back(bob);
  ShapeDesc ball;
  ball.name = "ball";
  ball.body = 0;
  ball.type = ShapeType::kSphere;
  ball.pose.pos = {0, 0, -length};
  ball.size = {r, 0, 0};
  ball.material.friction = 1;
  direct.shapes.push_back(ball);
  JointDesc hinge;
  hinge.name = "hinge";
  hinge.type = JointType::kRevolute;
  hinge.parent = kWorldBody;
  hinge.child = 0;
  hinge.child_frame.quat = quat_from_axis_angle({0, 0, 1}, kPi / 2);  // x onto +y
  hinge.collide_connected = true;
  direct.joints.push_back(hinge);

  const ModelDesc& m = imported->model;
  ASSERT_EQ(m.bodies.size(), 1u);
  EXPECT_NEAR(m.bodies[0].mass, mass, 1e-12 * mass);

  World a = MakeWorld(TightlySolved(m));
  World b = MakeWorld(TightlySolved(direct));
  ASSERT_TRUE(a.sim && b.sim);
  const int steps = 6000;  // about 3 periods
  std::vector<std::vector<Real>> ta = Trajectory(a, steps);
  std::vector<std::vector<Real>> tb = Trajectory(b, steps);
  double max_diff = 0;
  for (int s = 0; s < steps; ++s) {
    for (size_t k = 0; k < ta[s].size(); ++k)
      max_diff = std::max(max_diff, std::abs(ta[s][k] - tb[s][k]));
  }
  EXPECT_LT(max_diff, 1e-12);

  // Small-angle period of a compound pendulum: 2 pi sqrt(I_pivot / (m g L)).
  const double i_pivot = 0.4 * mass * r * r + mass * length * length;
  const double expected = 2 * kPi * std::sqrt(i_pivot / (mass * 9.81 * length));
  std::vector<double> x;
  for (const auto& pose : ta) {
    Quat q{pose[3], pose[4], pose[5], pose[6]};
    Vec3 com = Vec3{pose[0], pose[1], pose[2]} + rotate(q, Vec3{0, 0, -length});
    x.push_back(com.x);
  }
  double period = MeasuredPeriod(x, h);
  EXPECT_NEAR(period, expected, 0.01 * expected) << "measured " << period << " s";
  ::testing::Test::RecordProperty("pendulum_period_measured", std::to_string(period));
  ::testing::Test::RecordProperty("pendulum_period_expected", std::to_string(expected));
}

// Linearised double compound pendulum hanging from a fixed base: slow mode frequency and shape
// in absolute link angles (phi1, phi2).
struct ArmMode {
  double omega;
  double ratio;  // phi2 / phi1
};
ArmMode SlowMode(double m1, double c1, double i1, double l1, double m2, double c2, double i2,
                 double g) {
  double m11 = i1 + m1 * c1 * c1 + m2 * l1 * l1, m12 = m2 * l1 * c2, m22 = i2 + m2 * c2 * c2;
  double k1 = (m1 * c1 + m2 * l1) * g, k2 = m2 * c2 * g;
  // det(K - w^2 M) = 0: a w^4 + b w^2 + c = 0.
  double a = m11 * m22 - m12 * m12, b = -(k1 * m22 + k2 * m11), c = k1 * k2;
  double w2 = (-b - std::sqrt(b * b - 4 * a * c)) / (2 * a);
  // First row: (k1 - w2 m11) phi1 - w2 m12 phi2 = 0.
  return {std::sqrt(w2), (k1 - w2 * m11) / (w2 * m12)};
}

TEST(TwoLinkArmTest, UrdfArmHasTheAnalyticSlowModeAndMatchesTheDirectModel) {
  absl::StatusOr<ImportResult> imported = LoadUrdfFile(kModels + "/two_link_arm.urdf");
  ASSERT_TRUE(imported.ok()) << imported.status();
  const double h = 0.001, g = 9.81;
  // URDF has no time step: the file's model runs at the engine default unless told otherwise.
  ModelDesc m = imported->model;
  m.options.timestep = h;
  ASSERT_EQ(m.bodies.size(), 2u);
  ASSERT_EQ(m.joints.size(), 2u);
  ASSERT_EQ(m.actuators.size(), 2u);

  const double m1 = 1, c1 = 0.25, i1 = 0.0209333, l1 = 0.5;
  const double m2 = 0.5, c2 = 0.2, i2 = 0.00672;
  ModelDesc direct;
  direct.options.timestep = h;
  direct.options.gravity = {0, 0, -g};
  BodyDesc upper;
  upper.name = "upper";
  upper.mass = m1;
  upper.inertia = mat33_diag({i1, i1, 0.0002});
  upper.com = {0, 0, -c1};
  upper.pose.pos = {0, 0, 2};
  BodyDesc lower;
  lower.name = "lower";
  lower.mass = m2;
  lower.inertia = mat33_diag({i2, i2, 0.0001});
  lower.com = {0, 0, -c2};
  lower.pose.pos = {0, 0, 1.5};
  direct.bodies = {upper, lower};
  ShapeDesc base_box;
  base_box.body = kWorldBody;
  base_box.type = ShapeType::kBox;
  base_box.pose.pos = {0, 0, 2.3};
  base_box.size = {0.05, 0.05, 0.05};
  ShapeDesc rod1;
  rod1.body = 0;
  rod1.type = ShapeType::kCylinder;
  rod1.pose.pos = {0, 0, -0.25};
  rod1.size = {0.02, 0.25, 0};
  ShapeDesc rod2 = rod1;
  rod2.body = 1;
  rod2.pose.pos = {0, 0, -0.2};
  rod2.size = {0.02, 0.2, 0};
  direct.shapes = {base_box, rod1, rod2};
  JointDesc shoulder;
  shoulder.name = "shoulder";
  shoulder.parent = kWorldBody;
  shoulder.child = 0;
  shoulder.child_frame.quat = quat_from_axis_angle({0, 0, 1}, kPi / 2);
  shoulder.limited = true;
  shoulder.lower = {-3};
  shoulder.upper = {3};
  JointDesc elbow = shoulder;
  elbow.name = "elbow";
  elbow.parent = 0;
  elbow.child = 1;
  elbow.limited = false;
  elbow.lower.clear();
  elbow.upper.clear();
  direct.joints = {shoulder, elbow};
  ActuatorDesc a1;
  a1.name = "shoulder";
  a1.joint = 0;
  a1.ctrl_limited = true;
  a1.ctrl_min = -20;
  a1.ctrl_max = 20;
  ActuatorDesc a2 = a1;
  a2.name = "elbow";
  a2.joint = 1;
  a2.ctrl_min = -5;
  a2.ctrl_max = 5;
  direct.actuators = {a1, a2};

  // Start on the slow normal mode, at rest: the motion is then periodic with its period.
  ArmMode mode = SlowMode(m1, c1, i1, l1, m2, c2, i2, g);
  const double phi1 = 0.02, phi2 = phi1 * mode.ratio;
  auto pose_of = [&](double angle, Vec3 pivot) {
    Quat q = quat_from_axis_angle({0, 1, 0}, angle);
    return std::pair<Vec3, Quat>{pivot, q};
  };
  auto [p1, q1] = pose_of(phi1, Vec3{0, 0, 2});
  Vec3 elbow_pos = p1 + rotate(q1, Vec3{0, 0, -l1});
  auto [p2, q2] = pose_of(phi2, elbow_pos);
  BodyState start;
  start.pose = {p1.x, p1.y, p1.z, q1.w, q1.x, q1.y, q1.z, p2.x, p2.y, p2.z, q2.w, q2.x, q2.y, q2.z};
  start.velocity.assign(12, 0);

  World a = MakeWorld(TightlySolved(m));
  World b = MakeWorld(TightlySolved(direct));
  ASSERT_TRUE(a.sim && b.sim);
  ASSERT_TRUE(a.sim->SetBodyState(a.id, start).ok());
  ASSERT_TRUE(b.sim->SetBodyState(b.id, start).ok());
  const int steps = 5000;
  std::vector<std::vector<Real>> ta = Trajectory(a, steps);
  std::vector<std::vector<Real>> tb = Trajectory(b, steps);
  double max_diff = 0;
  for (int s = 0; s < steps; ++s) {
    for (size_t k = 0; k < ta[s].size(); ++k)
      max_diff = std::max(max_diff, std::abs(ta[s][k] - tb[s][k]));
  }
  EXPECT_LT(max_diff, 1e-12);

  std::vector<double> x;
  for (const auto& pose : ta) {
    Quat q{pose[3], pose[4], pose[5], pose[6]};
    x.push_back((rotate(q, Vec3{0, 0, -c1})).x);  // upper link's COM offset from its pivot
  }
  double period = MeasuredPeriod(x, h);
  double expected = 2 * kPi / mode.omega;
  EXPECT_NEAR(period, expected, 0.01 * expected) << "measured " << period << " s";
  ::testing::Test::RecordProperty("arm_period_measured", std::to_string(period));
  ::testing::Test::RecordProperty("arm_period_expected", std::to_string(expected));
}

// Two orthogonal hinges at the centre of mass with different springs and armatures merge into
// one generic joint whose DOF keep their own: each swings with its own analytic period
// 2 pi sqrt((I + armature) / k). No gravity, no damping.
TEST(MergedHingesTest, EachDofOscillatesWithItsOwnSpringAndArmature) {
  absl::StatusOr<ImportResult> imported = LoadMjcfString(R"(
<mujoco><option gravity="0 0 0" timestep="0.001"/><worldbody>
  <body name="gimbal" pos="0 0 1">
    <joint name="roll" axis="1 0 0" stiffness="3" armature="0.01"/>
    <joint name="pitch" axis="0 1 0" stiffness="10"/>
    <inertial pos="0 0 0" mass="2" diaginertia="0.02 0.04 0.05"/>
  </body></worldbody></mujoco>)",
                                                         "");
  ASSERT_TRUE(imported.ok()) << imported.status();
  const ModelDesc& m = imported->model;
  ASSERT_EQ(m.bodies.size(), 1u);  // no light body
  ASSERT_EQ(m.joints.size(), 1u);
  ASSERT_EQ(m.joints[0].type, JointType::kGeneric);
  World w = MakeWorld(m);
  ASSERT_TRUE(w.sim);
  // Small displacements of both DOF (their coupling is second order in the angles).
  const double roll0 = 0.01, pitch0 = -0.02, h = 0.001;
  Quat q = quat_from_axis_angle({1, 0, 0}, roll0) * quat_from_axis_angle({0, 1, 0}, pitch0);
  BodyState start;
  start.pose = {0, 0, 1, q.w, q.x, q.y, q.z};
  start.velocity.assign(6, 0);
  ASSERT_TRUE(w.sim->SetBodyState(w.id, start).ok());
  std::vector<double> roll, pitch;
  for (int s = 0; s < 3000; ++s) {
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    absl::StatusOr<JointState> joints = w.sim->GetJointState(w.id);
    ASSERT_TRUE(joints.ok());
    ASSERT_EQ(joints->position.size(), 2u);
    roll.push_back(joints->position[0]);
    pitch.push_back(joints->position[1]);
  }
  const double roll_period = 2 * kPi * std::sqrt((0.02 + 0.01) / 3);
  const double pitch_period = 2 * kPi * std::sqrt(0.04 / 10);
  EXPECT_NEAR(MeasuredPeriod(roll, h), roll_period, 0.01 * roll_period);
  EXPECT_NEAR(MeasuredPeriod(pitch, h), pitch_period, 0.01 * pitch_period);
  // No damping, but the springs are integrated implicitly (backward Euler), which shrinks an
  // oscillation of frequency w by 1 / sqrt(1 + (w h)^2) per step: the peak of the last period
  // sits on that envelope.
  auto expect_on_envelope = [&](const std::vector<double>& x, double x0, double period) {
    const double w2h2 = std::pow(2 * kPi / period * h, 2);
    size_t peak = x.size() - 1;
    for (size_t i = x.size() - static_cast<size_t>(period / h); i < x.size(); ++i) {
      if (std::abs(x[i]) > std::abs(x[peak])) peak = i;
    }
    double envelope = std::abs(x0) * std::pow(1 + w2h2, -0.5 * static_cast<double>(peak + 1));
    EXPECT_NEAR(std::abs(x[peak]), envelope, 0.005 * envelope);
  };
  expect_on_envelope(roll, roll0, roll_period);
  expect_on_envelope(pitch, pitch0, pitch_period);
}

// MuJoCo's humanoid with its head and hands merged into the torso and the lower arms (the
// default) moves as the same humanoid with them on fixed joints (MjcfOptions::
// merge_welded_bodies = false): released from its start pose without controls, every MJCF
// body's frame (a merged one's from its carrier and ImportResult::source_bodies) follows the
// same path through the fall (to round-off), and within millimetres through the landing and
// the second on the floor after it, where two different Newton solves of the contacts part.
// The merged model has 3 bodies and 18 rows fewer.
TEST(MjcfWeldTest, MergedBodiesMoveAsTheirFixedJointsHoldThem) {
  if (!std::ifstream(kHumanoid))
    GTEST_SKIP() << "MuJoCo's sample " << kHumanoid << " is not installed";
  absl::StatusOr<ImportResult> merged = LoadMjcfFile(kHumanoid);
  ASSERT_TRUE(merged.ok()) << merged.status();
  MjcfOptions options;
  options.merge_welded_bodies = false;
  absl::StatusOr<ImportResult> welded = LoadMjcfFile(kHumanoid, options);
  ASSERT_TRUE(welded.ok()) << welded.status();
  ASSERT_EQ(merged->model.bodies.size(), 13u);
  ASSERT_EQ(welded->model.bodies.size(), 16u);
  ASSERT_EQ(merged->source_bodies.size(), welded->source_bodies.size());
  double merged_mass = 0, welded_mass = 0;
  for (const BodyDesc& b : merged->model.bodies) merged_mass += b.mass;
  for (const BodyDesc& b : welded->model.bodies) welded_mass += b.mass;
  EXPECT_NEAR(merged_mass, welded_mass, 1e-12 * welded_mass);
  World a = MakeWorld(merged->model), b = MakeWorld(welded->model);
  ASSERT_TRUE(a.sim && b.sim);
  // world pose of source body k: its carrier's pose composed with its offset
  auto frame = [](const ImportResult& r, const BodyState& state, size_t k) {
    const ImportResult::SourceBody& source = r.source_bodies[k];
    const Real* q = &state.pose[7 * source.body];
    const Pose carrier{{q[0], q[1], q[2]}, {q[3], q[4], q[5], q[6]}};
    return carrier.pos + rotate(carrier.quat, source.offset.pos);
  };
  double fall = 0, landed = 0, lowest = 1e9;
  const int steps = 300;  // 1.5 s: the fall, the landing at about 0.2 s (step 42), lying still
  for (int s = 0; s < steps; ++s) {
    ASSERT_TRUE(a.sim->StepAll(1).ok());
    ASSERT_TRUE(b.sim->StepAll(1).ok());
    absl::StatusOr<BodyState> sa = a.sim->GetBodyState(a.id), sb = b.sim->GetBodyState(b.id);
    ASSERT_TRUE(sa.ok() && sb.ok());
    double differ = 0;
    for (size_t k = 0; k < merged->source_bodies.size(); ++k) {
      ASSERT_EQ(merged->source_bodies[k].name, welded->source_bodies[k].name);
      const Vec3 d = frame(*merged, *sa, k) - frame(*welded, *sb, k);
      differ = std::max(differ, static_cast<double>(norm(d)));
      lowest = std::min(lowest, static_cast<double>(frame(*merged, *sa, k).z));
    }
    (s < 40 ? fall : landed) = std::max(s < 40 ? fall : landed, differ);
  }
  std::printf("merged against welded humanoid: frames within %.2g m falling, %.2g m after\n", fall,
              landed);
  EXPECT_LT(lowest, 0.3);   // it fell
  EXPECT_LT(fall, 1e-9);    // measured: 1.4e-11 m
  EXPECT_LT(landed, 5e-3);  // measured: 2.3 mm, the two solves' landings parting by round-off
}

// MuJoCo's humanoid released from its start pose: falls, lands and comes to rest on the floor.
void DropHumanoid(double timestep_scale) {
  if (!std::ifstream(kHumanoid))
    GTEST_SKIP() << "MuJoCo's sample " << kHumanoid << " is not installed";
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(kHumanoid);
  ASSERT_TRUE(imported.ok()) << imported.status();
  ModelDesc desc = imported->model;
  desc.options.timestep *= timestep_scale;
  const double h = desc.options.timestep;
  World w = MakeWorld(desc);
  ASSERT_TRUE(w.sim);
  const int torso = w.model->FindBody("torso");
  ASSERT_GE(torso, 0);
  const int steps = static_cast<int>(std::lround(5.0 / h));
  const int last_second = steps - static_cast<int>(std::lround(1.0 / h));
  double max_speed = 0, min_gap = 1e9, final_speed = 0, last_second_residual = 0;
  int non_converged = 0, non_converged_last_second = 0;
  for (int s = 0; s < steps; ++s) {
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    absl::StatusOr<WorldStats> stats = w.sim->GetStats(w.id);
    ASSERT_TRUE(stats.ok());
    ASSERT_EQ(stats->flags & kWorldNonFinite, 0u)
        << "non-finite state at step " << s << " (Newton " << stats->newton_iterations << ", CR "
        << stats->cr_iterations << ", residual " << stats->residual << ")";
    bool converged = (stats->flags & kWorldNotConverged) == 0;
    non_converged += !converged;
    if (s >= last_second) {
      non_converged_last_second += !converged;
      last_second_residual = std::max(last_second_residual, static_cast<double>(stats->residual));
    }
    absl::StatusOr<BodyState> state = w.sim->GetBodyState(w.id);
    ASSERT_TRUE(state.ok());
    double speed = 0;
    for (size_t b = 0; b < state->velocity.size() / 6; ++b) {
      const Real* v = &state->velocity[6 * b];
      for (int k = 0; k < 6; ++k) ASSERT_TRUE(std::isfinite(v[k]));
      speed = std::max(speed, std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]));
    }
    max_speed = std::max(max_speed, speed);
    final_speed = speed;
    absl::StatusOr<std::vector<ContactReport>> contacts = w.sim->GetContacts(w.id);
    ASSERT_TRUE(contacts.ok());
    for (const ContactReport& c : *contacts) {
      if (c.body_a == kWorldBody || c.body_b == kWorldBody) min_gap = std::min(min_gap, c.gap);
    }
  }
  absl::StatusOr<BodyState> state = w.sim->GetBodyState(w.id);
  ASSERT_TRUE(state.ok());
  double torso_height = state->pose[7 * torso + 2];
  ::testing::Test::RecordProperty("max_speed", std::to_string(max_speed));
  ::testing::Test::RecordProperty("final_speed", std::to_string(final_speed));
  ::testing::Test::RecordProperty("min_floor_gap", std::to_string(min_gap));
  ::testing::Test::RecordProperty("torso_height", std::to_string(torso_height));
  ::testing::Test::RecordProperty("non_converged_steps", std::to_string(non_converged));
  ::testing::Test::RecordProperty("non_converged_steps_last_second",
                                  std::to_string(non_converged_last_second));
  std::printf(
      "h=%g: max speed %.3f m/s, final speed %.4f m/s, min floor gap %.4f m, torso z %.3f m, "
      "non-converged steps %d/%d (last second %d/%d, largest residual there %.3g)\n",
      h, max_speed, final_speed, min_gap, torso_height, non_converged, steps,
      non_converged_last_second, steps - last_second, last_second_residual);
  // A free fall of ~1.3 m reaches ~5 m/s; limbs whipping on impact stay well below 20 m/s.
  EXPECT_LT(max_speed, 20.0);
  EXPECT_GT(min_gap, -0.01);  // penetration under 1 cm
  EXPECT_LT(min_gap, 0.02);   // it did land
  // Lying on the floor: the torso (a capsule of radius 0.07 at the body origin) is low, and
  // the body has come to rest.
  EXPECT_LT(torso_height, 0.5);
  EXPECT_GT(torso_height, 0.0);
  EXPECT_LT(final_speed, 0.2);
  // At rest the solver converges every step: the impacts are over.
  EXPECT_EQ(non_converged_last_second, 0)
      << "Newton stopped above tolerance in " << non_converged_last_second << " of the last "
      << steps - last_second << " steps (largest residual " << last_second_residual << ")";
}

TEST(HumanoidDropTest, ComesToRestAtItsOwnTimeStep) { DropHumanoid(1); }
// Ten times its own step (0.05 s): the landing's impacts take Newton to its iteration limit in
// some steps, but nothing sinks in and the figure comes to rest with every step converging.
TEST(HumanoidDropTest, ComesToRestAtTenTimesItsTimeStep) { DropHumanoid(10); }

// Eight humanoids under different controls, their Newton solves finished world by world after 0
// or 2 passes over the batch (AXION_BATCHED_NEWTON_TRIPS; SimulatorTest.
// NewtonFinishedWorldByWorldGivesTheSameBits has the other scenes): the same bits as the batch's
// passes through the fall, the landing (sliding feet: GCR on the friction rows' Newton form) and
// the first contact redos, at the model's step and at eight times it (steps that halve).
TEST(HumanoidDropTest, NewtonFinishedWorldByWorldGivesTheSameBits) {
  if (!std::ifstream(kHumanoid))
    GTEST_SKIP() << "MuJoCo's sample " << kHumanoid << " is not installed";
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(kHumanoid);
  ASSERT_TRUE(imported.ok()) << imported.status();
  for (double scale : {1.0, 8.0}) {
    ModelDesc desc = imported->model;
    desc.options.timestep *= scale;
    absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(desc);
    ASSERT_TRUE(model.ok()) << model.status();
    const int steps = static_cast<int>(std::lround(0.6 / desc.options.timestep));
    struct Run {
      std::vector<BodyState> states;
      std::vector<WorldStats> stats;
      int halved = 0;
    };
    auto run = [&](const char* trips) {
      if (trips != nullptr) setenv("AXION_BATCHED_NEWTON_TRIPS", trips, 1);
      Run r;
      SimulatorOptions options;
      options.backend = Backend::kCpu;
      options.threads = 2;
      std::unique_ptr<Simulator> sim = *Simulator::Create(options);
      std::vector<WorldId> ids = *sim->CreateWorlds(*model, 8);
      std::vector<Real> ctrl((*model)->actuator_count());
      for (int s = 0; s < steps; ++s) {
        for (size_t w = 0; w < ids.size(); ++w) {
          for (size_t a = 0; a < ctrl.size(); ++a)
            ctrl[a] = Real(0.3) * std::sin(Real(0.2) * static_cast<Real>(s + 3 * a + 7 * w));
          EXPECT_TRUE(sim->SetControls(ids[w], ctrl).ok());
        }
        EXPECT_TRUE(sim->StepAll(1).ok());
        for (WorldId id : ids) r.halved += sim->GetStats(id)->substeps > 1;
      }
      for (WorldId id : ids) {
        r.states.push_back(*sim->GetBodyState(id));
        r.stats.push_back(*sim->GetStats(id));
      }
      unsetenv("AXION_BATCHED_NEWTON_TRIPS");
      return r;
    };
    const Run batched = run(nullptr);
    if (scale > 1) {
      EXPECT_GT(batched.halved, 0);
    }
    for (const char* trips : {"0", "2"}) {
      const Run split = run(trips);
      for (size_t w = 0; w < batched.states.size(); ++w) {
        const std::string what = absl::StrFormat("h x %g, AXION_BATCHED_NEWTON_TRIPS=%s, world %d",
                                                 scale, trips, static_cast<int>(w));
        EXPECT_EQ(split.states[w].pose, batched.states[w].pose) << what;
        EXPECT_EQ(split.states[w].velocity, batched.states[w].velocity) << what;
        EXPECT_EQ(split.stats[w].newton_iterations, batched.stats[w].newton_iterations) << what;
        EXPECT_EQ(split.stats[w].cr_iterations, batched.stats[w].cr_iterations) << what;
        EXPECT_EQ(split.stats[w].residual, batched.stats[w].residual) << what;
      }
    }
  }
}

// A box given as a mesh asset (its eight corners; MuJoCo takes the faces of their hull) and
// tilted by 30 degrees about z, dropped onto the floor: it collides as the hull of its vertices,
// lands flat on a face and rests there at its half height with the mass MuJoCo gives it.
TEST(MeshDropTest, MeshBoxLandsAndRestsOnItsFace) {
  absl::StatusOr<ImportResult> imported = LoadMjcfString(R"(
<mujoco>
  <option timestep="0.005"/>
  <asset>
    <mesh name="box" vertex="-1 -1 -1  1 -1 -1  -1 1 -1  1 1 -1  -1 -1 1  1 -1 1  -1 1 1  1 1 1"
          scale="0.2 0.1 0.05"/>
  </asset>
  <worldbody>
    <geom type="plane" size="1 1 0.1"/>
    <body name="box" pos="0 0 0.3" euler="0 0 30"><freejoint/>
      <geom type="mesh" mesh="box" density="800"/>
    </body>
  </worldbody>
</mujoco>)",
                                                         "");
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_NEAR(imported->model.bodies[0].mass, 800 * 0.4 * 0.2 * 0.1, 1e-9);
  World w = MakeWorld(imported->model);
  ASSERT_TRUE(w.sim);
  std::vector<std::vector<Real>> poses = Trajectory(w, 400);
  const std::vector<Real>& rest = poses.back();
  EXPECT_NEAR(rest[2], 0.05, 1e-3);  // the bottom face on the floor
  absl::StatusOr<BodyState> state = w.sim->GetBodyState(w.id);
  ASSERT_TRUE(state.ok());
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(state->velocity[k], 0, 1e-3) << k;
  // Still turned 30 degrees about z: w = cos(15 deg), z = sin(15 deg).
  EXPECT_NEAR(std::abs(rest[3]), std::cos(kPi / 12), 1e-3);
  EXPECT_NEAR(std::abs(rest[6]), std::sin(kPi / 12), 1e-3);
}

// tendons.xml's fixed tendons, driven by a motor on one and a position servo on another,
// against MuJoCo's: the rest lengths at the joints' springref, the tendons' coefficients and
// defaults, the actuators' transmissions and gears. No contacts and no gravity: over 2 s the
// two engines' coordinates stay within their integrators' difference (Axion's implicit springs
// against MuJoCo's explicit ones): 6.8 mm of 0.45 m and 0.047 rad of 2 rad, measured. With the
// limited tendon's lower bound raised into its path, Axion's length stays on the bound, where
// MuJoCo's soft limit lets it 3.6 mm past (measured), and the coordinates stay as close.
TEST(TendonTest, FixedTendonsMoveLikeMuJoCo) {
  for (const bool limit_met : {false, true}) {
    SCOPED_TRACE(limit_met);
    std::ifstream in(kModels + "/tendons.xml");
    std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const Real lower = limit_met ? 0.06 : -0.05;
    if (limit_met) xml = absl::StrReplaceAll(xml, {{"range=\"-0.05 0.3\"", "range=\"0.06 0.3\""}});
    SideBySide s =
        LoadSideBySide(WriteTempModel(absl::StrFormat("tendons_%d.xml", limit_met), xml));
    ASSERT_TRUE(s.ok());
    const ModelDesc& d = s.imported.model;
    mjModel* m = s.mujoco->m;
    mjData* data = s.mujoco->d;
    ASSERT_EQ(static_cast<int>(d.tendons.size()), m->ntendon);
    for (int t = 0; t < m->ntendon; ++t) {
      const TendonDesc& tendon = d.tendons[t];
      EXPECT_EQ(tendon.name, mj_id2name(m, mjOBJ_TENDON, t));
      EXPECT_EQ(tendon.limited, m->tendon_limited[t] != 0);
      if (tendon.limited) {
        EXPECT_EQ(tendon.lower, m->tendon_range[2 * t]);
        EXPECT_EQ(tendon.upper, m->tendon_range[2 * t + 1]);
      }
      EXPECT_EQ(tendon.stiffness, m->tendon_stiffness[t]);
      EXPECT_EQ(tendon.damping, m->tendon_damping[t]);
      EXPECT_EQ(tendon.friction_loss, m->tendon_frictionloss[t]);
      ASSERT_TRUE(tendon.spring_length.has_value());
      EXPECT_NEAR(*tendon.spring_length, m->tendon_lengthspring[t], 1e-15);
      ASSERT_EQ(static_cast<int>(tendon.joints.size()), m->tendon_num[t]);
      for (int k = 0; k < m->tendon_num[t]; ++k) {
        const int wrap = m->tendon_adr[t] + k;
        EXPECT_EQ(d.joints[tendon.joints[k].joint].name,
                  mj_id2name(m, mjOBJ_JOINT, m->wrap_objid[wrap]));
        EXPECT_EQ(tendon.joints[k].coef, m->wrap_prm[wrap]);
      }
    }
    ASSERT_EQ(static_cast<int>(d.actuators.size()), m->nu);
    for (int a = 0; a < m->nu; ++a) {
      EXPECT_EQ(m->actuator_trntype[a], mjTRN_TENDON);
      EXPECT_EQ(d.actuators[a].tendon, m->actuator_trnid[2 * a]);
      if (d.actuators[a].type == ActuatorType::kEffort) {
        EXPECT_EQ(d.actuators[a].gear, m->actuator_gear[6 * a]);
      }
    }
    ASSERT_TRUE(s.w.sim->SetControls(s.w.id, std::vector<Real>{0.5, 0.1}).ok());
    data->ctrl[0] = 0.5;
    data->ctrl[1] = 0.1;
    double largest_slide = 0, largest_hinge = 0, swing = 0, shortest = 1e9, mujoco_shortest = 1e9;
    for (int n = 1; n <= 1000; ++n) {
      ASSERT_TRUE(s.w.sim->StepAll(1).ok());
      mj_step(m, data);
      absl::StatusOr<JointState> js = s.w.sim->GetJointState(s.w.id);
      ASSERT_TRUE(js.ok());
      largest_slide = std::max({largest_slide, std::abs(js->position[0] - data->qpos[0]),
                                std::abs(js->position[1] - data->qpos[1])});
      largest_hinge = std::max(largest_hinge, std::abs(js->position[2] - data->qpos[2]));
      swing = std::max(swing, std::abs(static_cast<double>(js->position[2])));
      shortest = std::min(shortest, static_cast<double>(js->position[0] + 0.2 * js->position[2]));
      mujoco_shortest = std::min(mujoco_shortest, data->ten_length[1]);
    }
    EXPECT_GT(swing, 1.0);
    EXPECT_LT(largest_slide, 0.01);  // of 0.45 m of travel
    EXPECT_LT(largest_hinge, 0.06);  // of 2 rad
    if (!limit_met) {
      EXPECT_GT(shortest, lower);
    } else {
      EXPECT_NEAR(shortest, lower, 1e-6);        // met and held
      EXPECT_LT(mujoco_shortest, lower);         // MuJoCo's soft limit gives way ...
      EXPECT_GT(mujoco_shortest, lower - 0.01);  // ... by millimetres
    }
    absl::StatusOr<WorldStats> stats = s.w.sim->GetStats(s.w.id);
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->flags & (kWorldNonFinite | kWorldNotConverged), 0u);
  }
}

// springdamper_tail.xml: a tail of six 3-gram vertebrae held by MuJoCo's springdamper (time
// constant 4 ms, damping ratio 8: dm_control's dog holds its tail so), from the stiffness and
// damping both engines derive from the inertia at qpos0. Released straight, it sags under
// gravity about its oblique axes and creeps to rest; every angle follows MuJoCo's. Ignored (the
// attribute was, before), the same tail would swing from its armature and weight alone.
TEST(SpringDamperTest, TailSagsAndSettlesLikeMuJoCos) {
  SideBySide s = LoadSideBySide(kModels + "/springdamper_tail.xml");
  ASSERT_TRUE(s.ok());
  mjModel* m = s.mujoco->m;
  ASSERT_EQ(m->nq, 6);
  double largest_difference = 0, largest_angle = 0, last_rate = 0;
  for (int n = 1; n <= 600; ++n) {
    absl::StatusOr<FileCoordinates> axion = StepBoth(s);
    ASSERT_TRUE(axion.ok()) << axion.status();
    for (int i = 0; i < m->nq; ++i) {
      largest_difference =
          std::max(largest_difference, std::abs(double(axion->position[i]) - s.mujoco->d->qpos[i]));
      largest_angle = std::max(largest_angle, std::abs(double(axion->position[i])));
      if (n == 600) last_rate = std::max(last_rate, std::abs(double(axion->velocity[i])));
    }
  }
  std::printf(
      "largest angle %.4f rad, largest difference from MuJoCo %.2e rad, rate at 3 s %.2e "
      "rad/s\n",
      largest_angle, largest_difference, last_rate);
  EXPECT_GT(largest_angle, 0.05);                       // it sags ...
  EXPECT_LT(last_rate, 1e-3);                           // ... and settles
  EXPECT_LT(largest_difference, 0.02 * largest_angle);  // as MuJoCo's
  absl::StatusOr<WorldStats> stats = s.w.sim->GetStats(s.w.id);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->flags & (kWorldNonFinite | kWorldNotConverged), 0u);
}

// gripper_split.xml: MuJoCo Menagerie's way of closing a Franka hand, a <general> servo on the
// tendon of the fingers' mean with a 0..255 command, the fingers kept together by an equality,
// the hand floating free. Command 128 opens each finger to 128 * 100 / 255 mm / 100 = 20.08 mm;
// both engines settle there (MuJoCo's equality is soft, Axion's coupling rigid), and their
// openings stay within 0.5 mm of each other on the way (0.37 mm measured, in the first 0.1 s).
TEST(TendonTest, FrankaStyleGripperOpensLikeMuJoCo) {
  SideBySide s = LoadSideBySide(kModels + "/gripper_split.xml");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s.imported.model.actuators.size(), 1u);
  const ActuatorDesc& grip = s.imported.model.actuators[0];
  EXPECT_EQ(grip.type, ActuatorType::kPosition);
  EXPECT_EQ(grip.tendon, 0);
  ASSERT_TRUE(s.w.sim->SetControls(s.w.id, std::vector<Real>{128}).ok());
  s.mujoco->d->ctrl[0] = 128;
  const double target = 128 * 0.01568627451 / 100;
  double largest_difference = 0;
  for (int n = 1; n <= 500; ++n) {
    ASSERT_TRUE(s.w.sim->StepAll(1).ok());
    mj_step(s.mujoco->m, s.mujoco->d);
    absl::StatusOr<JointState> js = s.w.sim->GetJointState(s.w.id);
    ASSERT_TRUE(js.ok());
    // (the free hand is a free body in Axion, no joint: the fingers' are its only coordinates)
    ASSERT_EQ(js->position.size(), 2u);
    ASSERT_NEAR(js->position[0], js->position[1], 1e-9) << "step " << n;
    largest_difference =
        std::max(largest_difference, std::abs(js->position[0] - s.mujoco->d->qpos[7]));
  }
  absl::StatusOr<JointState> js = s.w.sim->GetJointState(s.w.id);
  EXPECT_NEAR(js->position[0], target, 1e-5);
  EXPECT_NEAR(s.mujoco->d->qpos[7], target, 1e-4);
  EXPECT_LT(largest_difference, 5e-4);
}

// The four-bar linkage of four_bar.xml (its loop closed by a <connect>) swings under gravity
// from rest. Axion holds the loop rigidly: the rocker's end stays on its world pivot to 1e-8 m
// while the crank swings through 2 rad. MuJoCo's connect is soft, and its integrator explicit
// where Axion's is implicit, so the two crank angles agree to a few percent of the swing
// (at t = 0.5 s: 1.96 against 1.99 rad), which a misplaced pivot would miss by far more.
TEST(FourBarTest, ConnectClosesTheLoopAndSwingsLikeMuJoCo) {
  const std::string path = kModels + "/four_bar.xml";
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  World w = MakeWorld(imported->model);
  ASSERT_TRUE(w.sim);
  MuJoCoRun mujoco(path);
  ASSERT_TRUE(mujoco.m) << mujoco.load_error;
  mjModel* m = mujoco.m;
  mjData* d = mujoco.d;
  const int rocker = 2;
  const double h = imported->model.options.timestep;
  double largest_gap = 0, largest_angle = 0, largest_difference = 0;
  for (int s = 1; s <= static_cast<int>(std::lround(1.0 / h)); ++s) {
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    mj_step(m, d);
    absl::StatusOr<BodyState> state = w.sim->GetBodyState(w.id);
    absl::StatusOr<JointState> joints = w.sim->GetJointState(w.id);
    ASSERT_TRUE(state.ok() && joints.ok());
    // the rocker's far end (0.2, 0, 0.5 in its frame) against the pivot at (1.2, 0, 1)
    const Real* pose = &state->pose[7 * rocker];
    Vec3 end = Vec3{pose[0], pose[1], pose[2]} +
               rotate(Quat{pose[3], pose[4], pose[5], pose[6]}, Vec3{0.2, 0, 0.5});
    largest_gap = std::max(largest_gap, static_cast<double>(norm(end - Vec3{1.2, 0, 1})));
    largest_angle = std::max(largest_angle, std::abs(static_cast<double>(joints->position[0])));
    if (s * h <= 0.5 + 1e-9) {
      largest_difference = std::max(largest_difference, std::abs(joints->position[0] - d->qpos[0]));
    }
  }
  EXPECT_LT(largest_gap, 1e-8);
  EXPECT_GT(largest_angle, 1.9);
  EXPECT_LT(largest_difference, 0.06);
}

// A ball joint's range is one cone on its turn from the start (MuJoCo's rule): ball_cone.xml's
// rod, released 25 degrees from hanging, swings through and meets the 30-degree stop on the far
// side. Axion holds the stop exactly; MuJoCo's is soft (solref) and lets the rod past by a
// little. Until the stop, the two swings agree (their integrators differ: implicit against
// semi-implicit Euler).
TEST(BallConeTest, RangeStopsTheSwingLikeMuJoCo) {
  const std::string path = kModels + "/ball_cone.xml";
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  ASSERT_EQ(imported->model.joints.size(), 1u);
  const JointDesc& socket = imported->model.joints[0];
  const double cone = 30 * kPi / 180;
  EXPECT_TRUE(socket.limited);
  ASSERT_EQ(socket.upper.size(), 1u);
  EXPECT_NEAR(socket.upper[0], cone, 1e-12);
  World w = MakeWorld(imported->model);
  ASSERT_TRUE(w.sim);
  MuJoCoRun mujoco(path);
  ASSERT_TRUE(mujoco.m) << mujoco.load_error;
  mjModel* m = mujoco.m;
  mjData* d = mujoco.d;
  EXPECT_NEAR(m->jnt_range[1], cone, 1e-12);
  const double h = imported->model.options.timestep;
  double axion_largest = 0, mujoco_largest = 0, largest_difference = 0;
  bool stopped = false;
  for (int s = 1; s <= static_cast<int>(std::lround(1.0 / h)); ++s) {
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    mj_step(m, d);
    absl::StatusOr<JointState> joints = w.sim->GetJointState(w.id);
    ASSERT_TRUE(joints.ok());
    // the turn of a unit quaternion (w, x, y, z): 2 acos |w|
    const double axion_turn = 2 * std::acos(std::min(1.0, std::abs(double(joints->position[0]))));
    const double mujoco_turn = 2 * std::acos(std::min(1.0, std::abs(d->qpos[0])));
    axion_largest = std::max(axion_largest, axion_turn);
    mujoco_largest = std::max(mujoco_largest, mujoco_turn);
    stopped = stopped || axion_turn > cone - 1e-3 || mujoco_turn > cone - 1e-3;
    if (!stopped)
      largest_difference = std::max(largest_difference, std::abs(axion_turn - mujoco_turn));
  }
  std::printf(
      "largest turn: Axion %.6f, MuJoCo %.6f rad against the range's %.6f; before the "
      "stop the turns differ by %.4f rad at most\n",
      axion_largest, mujoco_largest, cone, largest_difference);
  EXPECT_LT(axion_largest, cone + 1e-6);
  EXPECT_GT(axion_largest, cone - 1e-3);
  EXPECT_GT(mujoco_largest, cone - 1e-3);  // the stop binds in MuJoCo too
  EXPECT_LT(largest_difference, 0.01);
}

// A ball joint's stiffness, damping and armature act as MuJoCo's: torques -k phi (phi the
// rotation vector from the start) and -d w_rel, and rotor inertia on w_rel. ball_spring.xml's
// box, set spinning about a skew axis without gravity, oscillates through turns of 0.34 rad.
// Its orientation follows MuJoCo's to 0.011 rad over 3 s at the file's step, where backward
// Euler's numerical damping is most of the difference: at a tenth of the step on both sides
// the two differ by 0.0011 rad. (Before joint velocities were taken from the bodies' initial
// velocities, the armature started at rest and the spin lost a share of its energy at once.)
TEST(BallSpringTest, StiffnessDampingAndArmatureMatchMuJoCo) {
  const std::string path = kModels + "/ball_spring.xml";
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_TRUE(imported->warnings.empty()) << imported->warnings.front();
  const Vec3 spin{2, -1, 0.5};  // rad/s, world = body frame at the start
  ModelDesc desc = imported->model;
  ASSERT_EQ(desc.bodies.size(), 1u);
  desc.bodies[0].angular_velocity = spin;
  // the body frame turns about the joint's anchor, 0.1 m above its origin
  desc.bodies[0].linear_velocity = cross(spin, Vec3{0, 0, -0.1});
  World w = MakeWorld(desc);
  ASSERT_TRUE(w.sim);
  MuJoCoRun mujoco(path);
  ASSERT_TRUE(mujoco.m) << mujoco.load_error;
  mjModel* m = mujoco.m;
  mjData* d = mujoco.d;
  d->qvel[0] = spin.x;
  d->qvel[1] = spin.y;
  d->qvel[2] = spin.z;
  const double h = desc.options.timestep;
  double largest_turn = 0, largest_difference = 0, final_turn = 0;
  for (int s = 1; s <= static_cast<int>(std::lround(3.0 / h)); ++s) {
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    mj_step(m, d);
    absl::StatusOr<JointState> joints = w.sim->GetJointState(w.id);
    ASSERT_TRUE(joints.ok());
    const Quat axion{joints->position[0], joints->position[1], joints->position[2],
                     joints->position[3]};
    const Quat mujoco{d->qpos[0], d->qpos[1], d->qpos[2], d->qpos[3]};
    final_turn = norm(quat_log(axion));
    largest_turn = std::max(largest_turn, double(final_turn));
    // the turn between the two orientations
    largest_difference =
        std::max(largest_difference, double(norm(quat_log(conjugate(mujoco) * axion))));
  }
  std::printf(
      "largest turn %.4f rad, after 3 s %.4f rad; largest difference from MuJoCo %.5f "
      "rad\n",
      largest_turn, final_turn, largest_difference);
  EXPECT_GT(largest_turn, 0.3);               // the spin is turned back by the spring ...
  EXPECT_LT(final_turn, 0.8 * largest_turn);  // ... and the damper takes energy out
  EXPECT_LT(largest_difference, 0.05 * largest_turn);
}

// A position servo's forcerange bounds its force, as in MuJoCo: servo_arm.xml's arm, held out
// by a servo weaker than gravity's torque, sags to where the saturated servo holds it, and the
// hinge angle follows MuJoCo's over 2 s (the joint's damper acts beside the servo, unbounded);
// the servo's force (Simulator::GetActuatorForces) is MuJoCo's actuator_force.
// Without the bound the arm would stop 0.13 rad down.
TEST(ServoForceRangeTest, SaturatedServoSagsLikeMuJoCo) {
  SideBySide run = LoadSideBySide(kModels + "/servo_arm.xml");
  ASSERT_TRUE(run.ok());
  const ImportResult* imported = &run.imported;
  World& w = run.w;
  MuJoCoRun& mujoco = *run.mujoco;
  mjModel* m = mujoco.m;
  mjData* d = mujoco.d;
  const double h = imported->model.options.timestep;
  double largest_difference = 0, axion_angle = 0, mujoco_angle = 0;
  for (int s = 1; s <= static_cast<int>(std::lround(2.0 / h)); ++s) {
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    mj_step(m, d);
    absl::StatusOr<JointState> joints = w.sim->GetJointState(w.id);
    ASSERT_TRUE(joints.ok());
    axion_angle = joints->position[0];
    mujoco_angle = d->qpos[0];
    largest_difference = std::max(largest_difference, std::abs(axion_angle - mujoco_angle));
  }
  const double mujoco_force = d->actuator_force[0];
  const double axion_force = w.sim->GetActuatorForces(w.id)->at(0);
  std::printf(
      "after 2 s: Axion %.5f rad (its servo at %.4f N m), MuJoCo %.5f rad (%.4f N m); largest "
      "difference %.5f rad\n",
      axion_angle, axion_force, mujoco_angle, mujoco_force, largest_difference);
  // at rest, gravity's torque 2.45 cos(theta) N m (rod COM 0.25 m out) meets the bound, 2 N m
  EXPECT_NEAR(axion_angle, std::acos(2 / (9.81 * 0.25)), 0.005);
  EXPECT_LT(largest_difference, 0.01);
  EXPECT_NEAR(axion_force, mujoco_force, 1e-9);  // MuJoCo's actuator_force: the bound's sign too
}

// Three wheels (cylinders of `mass`, radius 0.2 m) on vertical hinges spin1..spin3 side by
// side, without gravity, stepped at `timestep`, the first hinge with `damping`, driven by
// `actuators`.
std::string ThreeWheels(double mass, double timestep, double damping,
                        const std::string& actuators) {
  std::string bodies;
  for (int k = 1; k <= 3; ++k) {
    absl::StrAppend(&bodies, absl::StrFormat(R"(<body name="wheel%d" pos="%d 0 0">
        <joint name="spin%d" axis="0 0 1" damping="%g"/>
        <geom type="cylinder" size="0.2 0.02" mass="%g"/></body>)",
                                             k, k - 1, k, k == 1 ? damping : 0.0, mass));
  }
  return absl::StrFormat(R"(<mujoco><compiler autolimits="true"/>
    <option timestep="%g" gravity="0 0 0"/><worldbody>%s</worldbody>
    <actuator>%s</actuator></mujoco>)",
                         timestep, bodies, actuators);
}

// A motor's forcerange bounds its force before the gear, as MuJoCo's actuator_force is
// gain * ctrl clamped and then geared onto the joint: a motor of gear 3 held to [-1, 2] turns
// its hinge with 6 N m at full positive command and 3 N m back at full negative command (a
// <general> motor's gain scales the command, not the bound). The hinge angles follow MuJoCo's
// (to the rotation the quaternion map turns per step, 2 atan(h w / 2) for MuJoCo's h w).
TEST(MotorForceRangeTest, GearActsOnTheClampedForceAsInMuJoCo) {
  const std::string path = WriteTempModel("geared_motors.xml", ThreeWheels(20, 0.002, 0, R"(
      <motor name="push" joint="spin1" gear="3" forcerange="-1 2" ctrlrange="-5 5"/>
      <motor name="back" joint="spin2" gear="-3" forcerange="-1 2" ctrlrange="-5 5"/>
      <general name="gain" joint="spin3" gear="3" gainprm="4" forcerange="-1 2"
               ctrlrange="-5 5"/>)"));
  SideBySide run = LoadSideBySide(path);
  ASSERT_TRUE(run.ok());
  World& w = run.w;
  MuJoCoRun& mujoco = *run.mujoco;
  double largest_difference = 0;
  std::vector<double> axion_rate(3), mujoco_rate(3);
  for (int s = 1; s <= 500; ++s) {
    // full command forward for 0.5 s, then a quarter of the range back
    const double ctrl = s <= 250 ? 5.0 : -0.25;
    std::vector<Real> controls(3, static_cast<Real>(ctrl));
    ASSERT_TRUE(w.sim->SetControls(w.id, controls).ok());
    for (int a = 0; a < 3; ++a) mujoco.d->ctrl[a] = ctrl;
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    mj_step(mujoco.m, mujoco.d);
    absl::StatusOr<JointState> joints = w.sim->GetJointState(w.id);
    ASSERT_TRUE(joints.ok());
    for (int j = 0; j < 3; ++j) {
      largest_difference =
          std::max(largest_difference, std::abs(joints->position[j] - mujoco.d->qpos[j]));
      axion_rate[j] = joints->velocity[j];
      mujoco_rate[j] = mujoco.d->qvel[j];
    }
    if (s == 250) {
      // after 0.5 s at full command: the wheels' rates are the geared, clamped torque's
      const double inertia = 0.5 * 20 * 0.2 * 0.2;
      EXPECT_NEAR(axion_rate[0], 3 * 2 * 0.5 / inertia, 1e-6);   // +6 N m
      EXPECT_NEAR(axion_rate[1], -3 * 2 * 0.5 / inertia, 1e-6);  // -6 N m
      EXPECT_NEAR(axion_rate[2], 3 * 2 * 0.5 / inertia, 1e-6);   // 4 * 5 clamped to 2
    }
  }
  std::printf(
      "rates after 1 s: Axion %.4f %.4f %.4f, MuJoCo %.4f %.4f %.4f rad/s; largest "
      "angle difference %.2e rad\n",
      axion_rate[0], axion_rate[1], axion_rate[2], mujoco_rate[0], mujoco_rate[1], mujoco_rate[2],
      largest_difference);
  EXPECT_LT(largest_difference, 1e-3);
}

// Servos with a gear act on the geared length, as MuJoCo's: a position servo of gear 2 (its
// force bounded before the gear), a velocity servo of gear -3 and a <general> servo of gear 0.5
// with its own gain turn their wheels along MuJoCo's paths, and each servo's force along its
// hinge (Simulator::GetActuatorForces) is the gear times MuJoCo's actuator_force.
TEST(ServoGearTest, GearedServosTurnTheirJointsLikeMuJoCo) {
  const std::string path = WriteTempModel("geared_servos.xml", ThreeWheels(2, 0.0005, 0.1, R"(
      <position name="turn" joint="spin1" gear="2" kp="3" forcerange="-0.5 0.4"/>
      <velocity name="speed" joint="spin2" gear="-3" kv="0.05"/>
      <general name="scaled" joint="spin3" gear="0.5" gainprm="6" biasprm="0 -4 -0.4"
               biastype="affine"/>)"));
  SideBySide run = LoadSideBySide(path);
  ASSERT_TRUE(run.ok());
  const std::vector<ActuatorDesc>& a = run.imported.model.actuators;
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].kp, 12);  // 2^2 kp, target ctrl / 2, force within 2 [-0.5, 0.4]
  EXPECT_EQ(a[0].target_scale, 0.5);
  EXPECT_EQ(a[0].force_max, 0.8);
  EXPECT_EQ(a[1].kv, 0.45);                          // (-3)^2 kv, target -ctrl / 3
  EXPECT_NEAR(a[2].target_scale, 1.5 / 0.5, 1e-12);  // gain / kp / gear
  World& w = run.w;
  MuJoCoRun& mujoco = *run.mujoco;
  double largest_difference = 0, largest_force_difference = 0;
  for (int s = 1; s <= 4000; ++s) {
    const double t = s * 0.0005;
    const std::vector<Real> ctrl = {std::sin(3 * t), 2 * std::cos(2 * t), 0.5 + 0.3 * std::sin(t)};
    ASSERT_TRUE(w.sim->SetControls(w.id, ctrl).ok());
    for (int k = 0; k < 3; ++k) mujoco.d->ctrl[k] = ctrl[k];
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    mj_step(mujoco.m, mujoco.d);
    mj_forward(mujoco.m, mujoco.d);  // MuJoCo's actuator forces at the state the step reached
    absl::StatusOr<JointState> joints = w.sim->GetJointState(w.id);
    absl::StatusOr<std::vector<Real>> forces = w.sim->GetActuatorForces(w.id);
    ASSERT_TRUE(joints.ok() && forces.ok());
    const double gears[3] = {2, -3, 0.5};
    for (int k = 0; k < 3; ++k) {
      largest_difference =
          std::max(largest_difference, std::abs(joints->position[k] - mujoco.d->qpos[k]));
      largest_force_difference =
          std::max(largest_force_difference,
                   std::abs((*forces)[k] - gears[k] * mujoco.d->actuator_force[k]));
    }
  }
  std::printf(
      "after 2 s: angles %.4f %.4f %.4f rad (MuJoCo %.4f %.4f %.4f); largest "
      "differences %.2e rad, %.2e N m\n",
      static_cast<double>(w.sim->GetJointState(w.id)->position[0]),
      static_cast<double>(w.sim->GetJointState(w.id)->position[1]),
      static_cast<double>(w.sim->GetJointState(w.id)->position[2]),
      static_cast<double>(mujoco.d->qpos[0]), static_cast<double>(mujoco.d->qpos[1]),
      static_cast<double>(mujoco.d->qpos[2]), largest_difference, largest_force_difference);
  // (3.8e-3 rad and 0.03 N m; 0.015 rad and 0.11 N m at a step of 0.002 s: first order in the
  // step, the integrators' difference, Axion's servo implicit, MuJoCo's explicit)
  EXPECT_LT(largest_difference, 0.01);
  EXPECT_LT(largest_force_difference, 0.05);
}

// <option><flag> takes out of the model what MuJoCo leaves out of its step. With contacts,
// limits, equalities, dry friction, passive forces and actuation off, a box falls through its
// floor, a rod swings past its range without its spring, damper and friction, its motor does
// nothing, and a bead on a vertical slide falls where its equality would hold it; with gravity
// off only, the box stays, the motor turns the rod into its limit and the equality holds the
// bead. Both as MuJoCo's.
TEST(MjcfFlagTest, DisabledPartsOfThePhysicsAreLeftOutAsInMuJoCo) {
  auto scene = [](const std::string& flags) {
    return absl::StrCat(R"(<mujoco><compiler angle="radian"/>
      <option timestep="0.001"><flag )",
                        flags, R"(/></option>
      <worldbody><geom name="floor" type="plane" size="0 0 1"/>
        <body name="box" pos="0 0 0.3"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1"/>
        </body>
        <body name="rod" pos="2 0 1">
          <joint name="hinge" axis="0 1 0" limited="true" range="-0.3 0.3" damping="0.5"
                 stiffness="1" frictionloss="0.05"/>
          <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.03" mass="1"/></body>
        <body name="bead" pos="4 0 1"><joint name="slide" type="slide" axis="0 0 1"/>
          <geom size="0.05" mass="1"/></body></worldbody>
      <equality><joint joint1="slide" polycoef="0.2 0 0 0 0"/></equality>
      <actuator><motor joint="hinge" ctrllimited="false"/></actuator></mujoco>)");
  };
  for (const std::string& flags :
       {std::string(R"(contact="disable" limit="disable" equality="disable" )"
                    R"(frictionloss="disable" passive="disable" actuation="disable")"),
        std::string(R"(gravity="disable")")}) {
    SCOPED_TRACE(flags);
    SideBySide run = LoadSideBySide(WriteTempModel("flags.xml", scene(flags)));
    ASSERT_TRUE(run.ok());
    World& w = run.w;
    MuJoCoRun& mujoco = *run.mujoco;
    ASSERT_TRUE(w.sim->SetControls(w.id, std::vector<Real>{2}).ok());
    mujoco.d->ctrl[0] = 2;
    double largest_box = 0, largest_rod = 0, largest_bead = 0, rod = 0, bead = 0;
    for (int s = 1; s <= 1000; ++s) {
      absl::StatusOr<FileCoordinates> file = StepBoth(run);
      ASSERT_TRUE(file.ok()) << file.status();
      const double* q = mujoco.d->qpos;  // box (7), hinge, slide
      largest_box = std::max(largest_box, std::abs(file->position[2] - q[2]));
      largest_rod = std::max(largest_rod, std::abs(file->position[7] - q[7]));
      largest_bead = std::max(largest_bead, std::abs(file->position[8] - q[8]));
      rod = file->position[7];
      bead = file->position[8];
    }
    const double* q = mujoco.d->qpos;
    std::printf(
        "after 1 s: box at %.4f m, rod at %.4f rad, bead at %.4f m (MuJoCo); Axion's rod "
        "%.4f rad, bead %.4f m; largest differences %.2e m, %.2e rad, %.2e m\n",
        q[2], q[7], q[8], rod, bead, largest_box, largest_rod, largest_bead);
    EXPECT_LT(largest_box, 1e-6);
    if (flags == "gravity=\"disable\"") {
      EXPECT_NEAR(q[2], 0.3, 1e-6);  // the box stays
      EXPECT_NEAR(rod, 0.3, 1e-3);   // the motor turns the rod into its limit, which holds it
      EXPECT_NEAR(q[7], 0.3, 0.01);  // (MuJoCo's softly)
      EXPECT_NEAR(bead, 0.2, 1e-6);  // the equality holds the bead (MuJoCo's soft one gets there)
      EXPECT_NEAR(q[8], 0.2, 1e-3);
    } else {
      EXPECT_LT(q[2], -4);           // through the floor
      EXPECT_LT(q[8], -4);           // not held
      EXPECT_GT(std::abs(q[7]), 1);  // past the range
      EXPECT_LT(largest_bead, 1e-6);
      // (0.059 rad; 0.115 at a step of 2 ms: first order in the step, the integrators')
      EXPECT_LT(largest_rod, 0.1);
    }
  }
}

TEST(SiteActuatorTest, RotorsAndAJetMoveTheirBodiesLikeMuJoCo) {
  SideBySide run = LoadSideBySide(kModels + "/site_thrusters.xml");
  ASSERT_TRUE(run.ok());
  const ImportResult& imported = run.imported;
  World& w = run.w;
  MuJoCoRun& mujoco = *run.mujoco;
  ASSERT_EQ(imported.model.actuators.size(), 5u);
  for (const ActuatorDesc& a : imported.model.actuators) EXPECT_GE(a.site_body, 0) << a.name;
  EXPECT_EQ(imported.model.actuators[3].gear, 2);  // the gain; the force range is the force's
  EXPECT_EQ(imported.model.actuators[3].force_max, 0.5);
  const double h = imported.model.options.timestep;
  double largest_position = 0, largest_turn = 0, largest_hinge = 0, climb = 0, yaw = 0, hinge = 0;
  for (int s = 1; s <= static_cast<int>(std::lround(1.0 / h)); ++s) {
    const double t = s * h;
    // unevenly: a climb, a roll and a yaw (rotor 4 at its force range part of the time); the
    // jet back and forth
    std::vector<Real> ctrl = {0.5 + 0.05 * std::sin(7 * t), 0.45 + 0.05 * std::cos(5 * t),
                              0.5 + 0.05 * std::sin(3 * t), 0.26 + 0.03 * std::sin(9 * t),
                              3 * std::sin(4 * t)};
    ASSERT_TRUE(w.sim->SetControls(w.id, ctrl).ok());
    for (int a = 0; a < 5; ++a) mujoco.d->ctrl[a] = ctrl[a];
    absl::StatusOr<FileCoordinates> file = StepBoth(run);
    ASSERT_TRUE(file.ok()) << file.status();
    const double* q = mujoco.d->qpos;  // the drone's position and quaternion, the hinge
    for (int k = 0; k < 3; ++k)
      largest_position = std::max(largest_position, std::abs(file->position[k] - q[k]));
    const Quat axion{file->position[3], file->position[4], file->position[5], file->position[6]};
    const Quat reference{q[3], q[4], q[5], q[6]};
    largest_turn = std::max(largest_turn, double(norm(quat_log(conjugate(reference) * axion))));
    hinge = file->position[7];
    largest_hinge = std::max(largest_hinge, std::abs(hinge - q[7]));
    climb = file->position[2] - 1;
    yaw = 2 * std::atan2(file->position[6], file->position[3]);
  }
  std::printf(
      "after 1 s: drone up %.4f m, turned %.4f rad about z; hinge %.4f rad (MuJoCo %.4f); "
      "largest differences from MuJoCo: %.2e m, %.2e rad, hinge %.2e rad\n",
      climb, yaw, static_cast<double>(hinge), static_cast<double>(mujoco.d->qpos[7]),
      largest_position, largest_turn, largest_hinge);
  // (MuJoCo, 2.2: up 0.82 m, a turn of 3 rad, the hinge at -1.39 rad; 2.6e-4 m, 3.1e-3 rad and
  // 5.7e-3 rad apart: the integrators' difference, the hinge's damper implicit in Axion)
  EXPECT_GT(climb, 0.5);        // the rotors lifted it ...
  EXPECT_GT(std::abs(yaw), 1);  // ... and turned it
  EXPECT_LT(largest_position, 1e-3);
  EXPECT_LT(largest_turn, 0.01);
  EXPECT_GT(std::abs(hinge), 1);  // the jet swung the arm
  EXPECT_LT(largest_hinge, 0.02);
}

// Adhesion pads (<adhesion>, and a <general> with a body transmission) pull as MuJoCo's do:
// adhesion_pads.xml's ball and tilted box hover 1 cm over the floor without gravity, within
// their margins, and are pulled down from there, the box at its lowest edge's two corners
// (MuJoCo's two contacts in its gap), so that it turns edge-first while it falls. Their
// trajectories over the 50 ms before either lands (the box's edge touches at about 60 ms, where
// MuJoCo's soft contact and Axion's hard one part ways) follow MuJoCo's.
TEST(AdhesionTest, PadsPullTheirBodiesFromWithinTheirMarginsLikeMuJoCo) {
  SideBySide run = LoadSideBySide(kModels + "/adhesion_pads.xml");
  ASSERT_TRUE(run.ok());
  const auto& actuators = run.imported.model.actuators;
  ASSERT_EQ(actuators.size(), 2u);
  EXPECT_EQ(actuators[0].adhesion_body, 0);
  EXPECT_EQ(actuators[0].gear, 2);  // the gain
  EXPECT_EQ(actuators[1].adhesion_body, 1);
  EXPECT_EQ(actuators[1].gear, 3);
  ASSERT_TRUE(run.w.sim->SetControls(run.w.id, std::vector<Real>{1, 1}).ok());
  run.mujoco->d->ctrl[0] = run.mujoco->d->ctrl[1] = 1;
  double largest_position = 0, largest_turn = 0;
  FileCoordinates last;
  for (int s = 0; s < 25; ++s) {
    absl::StatusOr<FileCoordinates> file = StepBoth(run);
    ASSERT_TRUE(file.ok()) << file.status();
    const double* q = run.mujoco->d->qpos;
    for (int body = 0; body < 2; ++body) {
      const Real* p = file->position.data() + 7 * body;
      for (int k = 0; k < 3; ++k)
        largest_position = std::max(largest_position, std::abs(p[k] - q[7 * body + k]));
      const Quat axion{p[3], p[4], p[5], p[6]};
      const Quat reference{q[7 * body + 3], q[7 * body + 4], q[7 * body + 5], q[7 * body + 6]};
      largest_turn = std::max(largest_turn, double(norm(quat_log(conjugate(reference) * axion))));
    }
    last = *std::move(file);
  }
  const double ball_drop = 0.11 - last.position[2], box_drop = 0.1350857 - last.position[9];
  const double box_turn = 2 * std::acos(std::min<double>(1, last.position[10])) - 0.3;
  std::printf(
      "after 50 ms: ball down %.5f m, box down %.5f m and turned %.5f rad further; largest "
      "differences from MuJoCo %.2e m, %.2e rad\n",
      ball_drop, box_drop, box_turn, largest_position, largest_turn);
  EXPECT_NEAR(ball_drop, 0.5 * 2 * 0.05 * 0.05, 1e-4);  // 2 N on 1 kg (Euler's h/2 t a apart)
  EXPECT_GT(box_drop, 0.003);
  EXPECT_GT(box_turn, 0.03);  // edge first: the turn grows
  EXPECT_LT(largest_position, 1e-5);
  EXPECT_LT(largest_turn, 1e-4);
}

// MuJoCo's active_adhesion.xml: the arm lowers its pad of four boxes onto the box in the
// crate, turns the pad on and rises slowly (the pad pulls only within its 1 cm margin, so a fast
// rise leaves the box behind, in MuJoCo too): the box comes up with it by 10 cm, as in MuJoCo.
// (With the pad off it stays in its crate: 0.0000 m.)
TEST(AdhesionTest, MuJoCosSampleArmPicksUpTheBox) {
  const std::string path = "/usr/share/mujoco/model/adhesion/active_adhesion.xml";
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  int box = -1;
  for (const ImportResult::SourceBody& b : imported->source_bodies)
    if (b.name == "box") box = b.body;
  ASSERT_GE(box, 0);
  MuJoCoRun mujoco(path);
  ASSERT_TRUE(mujoco.m) << mujoco.load_error;
  const int mujoco_box = mj_name2id(mujoco.m, mjOBJ_BODY, "box");
  World w = MakeWorld(imported->model);
  ASSERT_TRUE(w.sim);
  const double start = w.sim->GetBodyState(w.id)->pose[7 * box + 2];
  const double h = imported->model.options.timestep;
  for (int s = 0; s < static_cast<int>(std::lround(4.5 / h)); ++s) {
    // the arm's target: down (1) for 2 s, the pad on from 1.5 s, up to -0.5 over 2 s after 2 s
    const double t = s * h;
    const double arm = t < 2 ? 1 : (t < 4 ? 1 - 0.75 * (t - 2) : -0.5);
    const std::vector<Real> ctrl = {0, Real(arm), Real(t > 1.5 ? 1 : 0), 0, 0};
    ASSERT_TRUE(w.sim->SetControls(w.id, ctrl).ok());
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    for (int a = 0; a < 5; ++a) mujoco.d->ctrl[a] = ctrl[a];
    mj_step(mujoco.m, mujoco.d);
  }
  const double lifted = w.sim->GetBodyState(w.id)->pose[7 * box + 2] - start;
  const double mujoco_lifted =
      mujoco.d->xpos[3 * mujoco_box + 2] - mujoco.m->body_pos[3 * mujoco_box + 2];
  std::printf("box lifted %.4f m by the pad (MuJoCo %.4f m)\n", lifted, mujoco_lifted);
  EXPECT_GT(mujoco_lifted, 0.09);
  EXPECT_NEAR(lifted, mujoco_lifted, 0.01);
}

// A joint's frictionloss is dry friction, as in MuJoCo: friction_arm.xml's rod, released
// horizontal, swings down against 1 N m of friction, loses energy at every swing and sticks
// where gravity's torque no longer beats the friction. The swings follow MuJoCo's (whose
// friction is soft, so it creeps where Axion's sticks).
TEST(FrictionLossTest, DryFrictionStopsTheSwingLikeMuJoCo) {
  SideBySide run = LoadSideBySide(kModels + "/friction_arm.xml");
  ASSERT_TRUE(run.ok());
  const ImportResult* imported = &run.imported;
  World& w = run.w;
  MuJoCoRun& mujoco = *run.mujoco;
  ASSERT_EQ(imported->model.joints[0].friction_loss, 1);
  const double h = imported->model.options.timestep;
  double largest_difference = 0, axion = 0, axion_speed = 0;
  for (int s = 1; s <= static_cast<int>(std::lround(3.0 / h)); ++s) {
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    mj_step(mujoco.m, mujoco.d);
    absl::StatusOr<JointState> joints = w.sim->GetJointState(w.id);
    ASSERT_TRUE(joints.ok());
    axion = joints->position[0];
    axion_speed = joints->velocity[0];
    largest_difference = std::max(largest_difference, std::abs(axion - mujoco.d->qpos[0]));
  }
  std::printf(
      "after 3 s: Axion %.5f rad (at %.1e rad/s), MuJoCo %.5f rad; largest difference "
      "%.4f rad\n",
      axion, axion_speed, mujoco.d->qpos[0], largest_difference);
  // stuck: gravity's torque there, 2.45 |cos q| N m (q = pi/2 hanging), is at most 1 N m
  EXPECT_LT(std::abs(axion_speed), 1e-12);
  EXPECT_LE(9.81 * 0.25 * std::abs(std::cos(axion)), 1 + 1e-9);
  EXPECT_LT(largest_difference, 0.05);
}

// Armature on a floating root's slide is inertia the body's mass does not have: an arm swung by
// its motor then moves the figure's centre of mass (MuJoCo's M[dof][dof] + armature), where
// without it the centre stays put. Axion's drive row on the slide does the same as MuJoCo (RK4:
// its Euler alone moves the centre 1.3 mm here without any armature), on a slide of its own and
// on a slide-slide-hinge root chained through light bodies.
TEST(ArmatureTest, RootSlideArmatureMovesTheCentreOfMassAsInMuJoCo) {
  auto model = [](const std::string& root_joints, const std::string& armature) {
    return absl::StrFormat(R"(<mujoco><option timestep="0.002" gravity="0 0 0"/>
      <default><joint armature="%s"/></default>
      <worldbody><body name="root">%s<geom type="box" size="0.1 0.1 0.1" mass="1"/>
        <body name="arm"><joint name="swing" axis="0 0 1"/>
          <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.02" mass="0.5"/></body>
      </body></worldbody><actuator><motor joint="swing"/></actuator></mujoco>)",
                           armature, root_joints);
  };
  const std::string slide = R"(<joint name="sx" type="slide" axis="1 0 0"/>)";
  const std::string chain = slide + R"(<joint name="sy" type="slide" axis="0 1 0"/>
      <joint name="rz" axis="0 0 1"/>)";
  const std::string chain_sx = R"(<joint name="sx" type="slide" axis="1 0 0" armature="0.1"/>
      <joint name="sy" type="slide" axis="0 1 0" armature="0"/>
      <joint name="rz" axis="0 0 1" armature="0"/>)";
  for (const auto& [root, armature, name] :
       {std::tuple{slide, "0.1", "slide"}, std::tuple{chain, "0.1", "chain"},
        std::tuple{chain_sx, "0", "chain, on its x slide alone"},
        std::tuple{chain, "0", "chain without armature"},
        std::tuple{slide, "0", "slide without armature"}}) {
    SCOPED_TRACE(name);
    const std::string path = WriteTempModel("root_armature.xml", model(root, armature));
    absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
    ASSERT_TRUE(imported.ok()) << imported.status();
    World w = MakeWorld(TightlySolved(imported->model));
    MuJoCoRun mujoco(path);
    ASSERT_NE(mujoco.m, nullptr) << mujoco.load_error;
    mujoco.m->opt.integrator = mjINT_RK4;
    // the centre of mass along x of every body (the chain's light bodies included: 1% of the
    // root's mass each, they make it that much heavier)
    auto axion_centre = [&] {
      const BodyState st = *w.sim->GetBodyState(w.id);
      double sum = 0, mass = 0;
      for (int b = 0; b < w.model->body_count(); ++b) {
        const BodyDesc& body = w.model->desc().bodies[b];
        sum += body.mass * (st.pose[7 * b] + rotate(load_quat(&st.pose[7 * b + 3]), body.com).x);
        mass += body.mass;
      }
      return sum / mass;
    };
    auto mujoco_centre = [&] {
      double sum = 0, mass = 0;
      for (int b = 1; b < mujoco.m->nbody; ++b) {
        sum += mujoco.m->body_mass[b] * mujoco.d->xipos[3 * b];
        mass += mujoco.m->body_mass[b];
      }
      return sum / mass;
    };
    mj_forward(mujoco.m, mujoco.d);
    const double start = axion_centre(), mujoco_start = mujoco_centre();
    for (int i = 0; i < 1000; ++i) {
      const std::vector<Real> torque{std::sin(0.03 * i)};
      ASSERT_TRUE(w.sim->SetControls(w.id, torque).ok());
      ASSERT_TRUE(w.sim->StepAll(1).ok());
      mujoco.d->ctrl[0] = torque[0];
      mj_step(mujoco.m, mujoco.d);
    }
    const double moved = axion_centre() - start, mujoco_moved = mujoco_centre() - mujoco_start;
    std::printf("%s: centre of mass moved %.6f m (MuJoCo %.6f m) over 2 s\n", name, moved,
                mujoco_moved);
    if (std::string(name).find("without") != std::string::npos) {
      EXPECT_LT(std::abs(moved), 1e-9);
      EXPECT_LT(std::abs(mujoco_moved), 1e-7);
    } else {
      EXPECT_LT(moved, -1e-3);  // the arm swung toward +x, the root took more than its share
      // within 5%: the chain's light bodies make the root 2% heavier than MuJoCo's
      EXPECT_NEAR(moved, mujoco_moved, 0.05 * std::abs(mujoco_moved));
    }
  }
}

// Joint limits on links that weigh almost nothing but turn heavy rotors (armature), as in the
// Gym thrower and striker: rotor_arm.xml's motors drive each joint into a stop, then into the
// other, resting there when the motors reverse. The solves converge, the stops hold, and the
// joint angles follow MuJoCo's (whose stops are soft) to 0.03 rad. Weighed by the links' own
// inertia alone, the limits' complementarity left a tenth of the steps at the Newton limit, the
// angles 1.8 rad from MuJoCo's, and the thrower model's arm thrown at thousands of m/s.
TEST(JointLimitTest, StopsOnLightLinksWithArmatureMatchMuJoCo) {
  SideBySide run = LoadSideBySide(kModels + "/rotor_arm.xml");
  ASSERT_TRUE(run.ok());
  const ImportResult* imported = &run.imported;
  World& w = run.w;
  MuJoCoRun& mujoco = *run.mujoco;
  const double h = imported->model.options.timestep;
  const std::vector<JointDesc>& joints = imported->model.joints;
  double largest_difference = 0;
  int not_converged = 0;
  for (int s = 1; s <= static_cast<int>(std::lround(2.4 / h)); ++s) {
    const double sign = s * h < 1.2 ? 1 : -1;
    const std::vector<Real> ctrl = {5 * sign, -5 * sign, 5 * sign};
    ASSERT_TRUE(w.sim->SetControls(w.id, ctrl).ok());
    for (int a = 0; a < 3; ++a) mujoco.d->ctrl[a] = ctrl[a];
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    mj_step(mujoco.m, mujoco.d);
    not_converged += (w.sim->GetStats(w.id)->flags & kWorldNotConverged) != 0;
    absl::StatusOr<JointState> state = w.sim->GetJointState(w.id);
    ASSERT_TRUE(state.ok());
    for (int j = 0; j < 3; ++j) {
      EXPECT_GE(state->position[j], joints[j].lower[0] - 1e-6) << "joint " << j << " step " << s;
      EXPECT_LE(state->position[j], joints[j].upper[0] + 1e-6) << "joint " << j << " step " << s;
      largest_difference =
          std::max(largest_difference, std::abs(state->position[j] - mujoco.d->qpos[j]));
    }
  }
  std::printf("not converged: %d steps; largest joint angle difference from MuJoCo %.4f rad\n",
              not_converged, largest_difference);
  // (the wrist's impacts at 3.7 rad/s take a step or two at the Newton limit, residual ~1e-5
  // m/s; before the armature entered the stops' weighting, 127 of 1200 steps)
  EXPECT_LE(not_converged, 5);
  EXPECT_LT(largest_difference, 0.05);
}

// Geoms that collide one way only (contype meeting the other's conaffinity in one direction)
// collide as in MuJoCo: two balls that ignore each other (conaffinity 0) fall through one
// another onto a floor they both meet, and rest there at their radius, as MuJoCo's do.
TEST(CollisionFilterTest, OneWayContypeConaffinityCollidesLikeMuJoCo) {
  const std::string path = WriteTempModel("one_way_filter.xml", R"(
<mujoco><worldbody>
  <geom name="floor" type="plane" size="5 5 0.1"/>
  <body name="a" pos="0 0 0.5"><freejoint/><geom size="0.1" contype="1" conaffinity="0"/></body>
  <body name="b" pos="0 0 1"><freejoint/><geom size="0.1" contype="1" conaffinity="0"/></body>
</worldbody></mujoco>)");
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  World w = MakeWorld(imported->model);
  ASSERT_TRUE(w.sim);
  MuJoCoRun mujoco(path);
  ASSERT_TRUE(mujoco.m) << mujoco.load_error;
  const int steps = static_cast<int>(std::lround(1.5 / imported->model.options.timestep));
  ASSERT_TRUE(w.sim->StepAll(steps).ok());
  for (int s = 0; s < steps; ++s) mj_step(mujoco.m, mujoco.d);
  absl::StatusOr<BodyState> state = w.sim->GetBodyState(w.id);
  ASSERT_TRUE(state.ok());
  for (int b = 0; b < 2; ++b) {
    const double axion_z = state->pose[7 * b + 2], mujoco_z = mujoco.d->xpos[3 * (b + 1) + 2];
    std::printf("ball %d: Axion z %.5f, MuJoCo z %.5f\n", b, axion_z, mujoco_z);
    EXPECT_NEAR(axion_z, 0.1, 1e-3);
    EXPECT_NEAR(axion_z, mujoco_z, 2e-3);
  }
}

// <compiler coordinate="global"> (the Gym hopper's and walker2d's): global_leg.xml gives every
// position, fromto and orientation in the world frame, local_leg.xml the same leg in local
// frames. Both load to the same model and swing alike to rounding, and the joint angles follow
// MuJoCo's for the global file.
TEST(GlobalCoordinatesTest, GlobalFileMatchesItsLocalTwinAndMuJoCo) {
  absl::StatusOr<ImportResult> global = LoadMjcfFile(kModels + "/global_leg.xml");
  absl::StatusOr<ImportResult> local = LoadMjcfFile(kModels + "/local_leg.xml");
  ASSERT_TRUE(global.ok()) << global.status();
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_TRUE(global->warnings.empty()) << global->warnings.front();
  ASSERT_EQ(global->model.bodies.size(), 3u);
  for (size_t b = 0; b < 3; ++b) {
    EXPECT_NEAR(global->model.bodies[b].mass, local->model.bodies[b].mass, 1e-12);
  }
  World wg = MakeWorld(global->model), wl = MakeWorld(local->model);
  ASSERT_TRUE(wg.sim && wl.sim);
  MuJoCoRun mujoco(kModels + "/global_leg.xml");
  ASSERT_TRUE(mujoco.m) << mujoco.load_error;
  double pose_difference = 0, angle_difference = 0;
  for (int s = 0; s < 250; ++s) {
    ASSERT_TRUE(wg.sim->StepAll(1).ok());
    ASSERT_TRUE(wl.sim->StepAll(1).ok());
    mj_step(mujoco.m, mujoco.d);
    std::vector<Real> pg = wg.sim->GetBodyState(wg.id)->pose;
    std::vector<Real> pl = wl.sim->GetBodyState(wl.id)->pose;
    for (size_t i = 0; i < pg.size(); ++i)
      pose_difference = std::max(pose_difference, std::abs(double(pg[i] - pl[i])));
    std::vector<Real> q = wg.sim->GetJointState(wg.id)->position;
    for (int j = 0; j < 3; ++j)
      angle_difference = std::max(angle_difference, std::abs(q[j] - mujoco.d->qpos[j]));
  }
  std::printf("global against local: %.2e; joint angles against MuJoCo: %.4f rad\n",
              pose_difference, angle_difference);
  EXPECT_LT(pose_difference, 1e-9);
  // the two integrators' difference over the 0.5 s swing (0.045 rad; at a quarter of the step,
  // a tenth of it)
  EXPECT_LT(angle_difference, 0.06);
}

// <equality><joint> couples two joints as in MuJoCo: coupled_arms.xml's second arm follows half
// the first's angle while a motor swings the first against gravity. Axion holds the coupling
// exactly (to the solver's tolerance), MuJoCo's is soft; the shoulder angles agree to the two
// integrators' difference, the coupled arm's load slowing the first in both.
TEST(CouplingTest, JointEqualityHoldsLikeMuJoCo) {
  const std::string path = kModels + "/coupled_arms.xml";
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_TRUE(imported->warnings.empty()) << imported->warnings.front();
  ASSERT_EQ(imported->model.couplings.size(), 1u);
  World w = MakeWorld(imported->model);
  ASSERT_TRUE(w.sim);
  ASSERT_TRUE(w.sim->SetControls(w.id, std::vector<Real>{0.6}).ok());
  MuJoCoRun mujoco(path);
  ASSERT_TRUE(mujoco.m) << mujoco.load_error;
  mjModel* m = mujoco.m;
  mjData* d = mujoco.d;
  d->ctrl[0] = 0.6;
  const double h = imported->model.options.timestep;
  double largest_gap = 0, mujoco_gap = 0, largest_difference = 0, largest_angle = 0;
  for (int s = 1; s <= static_cast<int>(std::lround(1.5 / h)); ++s) {
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    mj_step(m, d);
    absl::StatusOr<JointState> joints = w.sim->GetJointState(w.id);
    ASSERT_TRUE(joints.ok());
    const double shoulder = joints->position[0], elbow = joints->position[1];
    largest_gap = std::max(largest_gap, std::abs(elbow - 0.5 * shoulder));
    mujoco_gap = std::max(mujoco_gap, std::abs(d->qpos[1] - 0.5 * d->qpos[0]));
    largest_difference = std::max(largest_difference, std::abs(shoulder - d->qpos[0]));
    largest_angle = std::max(largest_angle, std::abs(shoulder));
  }
  std::printf(
      "coupling error: Axion %.2e rad, MuJoCo %.2e rad; shoulder up to %.3f rad, "
      "largest difference from MuJoCo %.4f rad\n",
      largest_gap, mujoco_gap, largest_angle, largest_difference);
  EXPECT_LT(largest_gap, 1e-7);
  EXPECT_GT(largest_angle, 0.5);
  EXPECT_LT(largest_difference, 0.02 * largest_angle);
}

// <contact><pair> replaces what the geoms' own materials give: pair_slide.xml's box slides on
// the floor at the pair's friction 0.2, not the geoms' 1, slowing at 0.2 g as in MuJoCo; as a
// condim 1 pair it slides on without friction; and a pair holds between geoms whose contype
// and conaffinity would keep them apart.
// A file's one free body, started unturned at `linear` and `angular` velocity (world frame),
// stepped for `seconds` in Axion and in MuJoCo: Axion's twist into axion[6], MuJoCo's free
// joint velocity into mujoco[6] (its angular part in the body frame, which is the world's about
// an axis the body only turns about); false where the file does not load. `imported` gets
// Axion's import.
bool FreeBodyVelocityAfter(const std::string& file, double seconds, Vec3 linear, Vec3 angular,
                           double axion[6], double mujoco[6], ImportResult* imported = nullptr) {
  absl::StatusOr<ImportResult> loaded = LoadMjcfFile(file);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  if (!loaded.ok()) return false;
  if (imported) *imported = *loaded;
  ModelDesc desc = loaded->model;
  desc.bodies[0].linear_velocity = linear;
  desc.bodies[0].angular_velocity = angular;
  World w = MakeWorld(desc);
  EXPECT_TRUE(w.sim);
  if (!w.sim) return false;
  MuJoCoRun run(file);
  EXPECT_TRUE(run.m) << run.load_error;
  if (!run.m) return false;
  const Real start[6] = {linear.x, linear.y, linear.z, angular.x, angular.y, angular.z};
  for (int k = 0; k < 6; ++k) run.d->qvel[k] = start[k];
  const int steps = static_cast<int>(std::lround(seconds / desc.options.timestep));
  EXPECT_TRUE(w.sim->StepAll(steps).ok());
  for (int s = 0; s < steps; ++s) mj_step(run.m, run.d);
  const BodyState st = *w.sim->GetBodyState(w.id);
  for (int k = 0; k < 6; ++k) {
    axion[k] = st.velocity[k];
    mujoco[k] = run.d->qvel[k];
  }
  return true;
}

// The speed after `seconds` of a file's one free body pushed along x at 2 m/s, in Axion and in
// MuJoCo (*mujoco_speed); -1 where the file does not load.
double SlidingSpeedAfter(const std::string& file, double seconds, double* mujoco_speed,
                         ImportResult* imported = nullptr) {
  double axion[6], mujoco[6];
  if (!FreeBodyVelocityAfter(file, seconds, {2, 0, 0}, {}, axion, mujoco, imported)) return -1.0;
  *mujoco_speed = mujoco[0];
  return axion[0];
}

TEST(ContactPairTest, PairFrictionReplacesTheGeomsLikeMuJoCo) {
  const std::string path = kModels + "/pair_slide.xml";
  auto speed_after = [&](const std::string& file, double seconds, double* mujoco_speed) {
    ImportResult imported;
    const double speed = SlidingSpeedAfter(file, seconds, mujoco_speed, &imported);
    EXPECT_EQ(imported.model.contact_pairs.size(), 1u);
    return speed;
  };
  double mujoco = 0;
  const double expected = 2 - 0.2 * 9.81 * 0.5;
  const double axion = speed_after(path, 0.5, &mujoco);
  std::printf("after 0.5 s: Axion %.5f m/s, MuJoCo %.5f m/s, Coulomb at 0.2: %.5f m/s\n", axion,
              mujoco, expected);
  EXPECT_NEAR(axion, expected, 2e-3);
  EXPECT_NEAR(mujoco, expected, 2e-2);

  std::ifstream in(path);
  std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string out = xml;
    out.replace(out.find(from), from.size(), to);
    return out;
  };
  const std::string frictionless = replaced("friction=\"0.2 0.2\"", "condim=\"1\"");
  const double slides =
      speed_after(WriteTempModel("pair_frictionless.xml", frictionless), 0.5, &mujoco);
  EXPECT_NEAR(slides, 2, 1e-6);
  EXPECT_NEAR(mujoco, 2, 1e-3);
  const std::string filtered = replaced("size=\"0.1 0.1 0.1\" friction=\"1\"",
                                        "size=\"0.1 0.1 0.1\" contype=\"0\" conaffinity=\"0\"");
  EXPECT_NEAR(speed_after(WriteTempModel("pair_filtered.xml", filtered), 0.5, &mujoco), expected,
              2e-3);
}

// A geom's priority decides its contacts' friction and condim, MuJoCo's rule: priority_slide.xml's
// box (friction 0.2, priority 1) slides on the floor (friction 1) slowing at 0.2 g, as MuJoCo's
// does; at equal priority the larger friction grips and the box stops within 0.2 s; a
// frictionless box of the higher priority (condim 1) slides on without slowing on the frictional
// floor (ServerApiTest.ContactPairsAreCarried: the service carries a shape's priority).
TEST(PriorityTest, TheHigherPriorityGeomsFrictionAndCondimActLikeMuJoCos) {
  const std::string path = kModels + "/priority_slide.xml";
  std::ifstream in(path);
  const std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto speed_after = [&](const std::string& text, const std::string& name, double* mujoco_speed) {
    ImportResult imported;
    const double speed =
        SlidingSpeedAfter(WriteTempModel(name, text), 0.5, mujoco_speed, &imported);
    EXPECT_TRUE(imported.warnings.empty()) << imported.warnings.front();
    return speed;
  };
  double mujoco = 0;
  const double expected = 2 - 0.2 * 9.81 * 0.5;
  const double axion = speed_after(xml, "priority_slide.xml", &mujoco);
  std::printf("after 0.5 s: Axion %.5f m/s, MuJoCo %.5f m/s, Coulomb at 0.2: %.5f m/s\n", axion,
              mujoco, expected);
  EXPECT_NEAR(axion, expected, 2e-3);
  EXPECT_NEAR(mujoco, expected, 2e-2);
  const std::string equal =
      absl::StrReplaceAll(xml, {{R"(priority="1")", ""}, {"<!--", "<!-- equal:"}});
  EXPECT_NEAR(speed_after(equal, "priority_equal.xml", &mujoco), 0, 1e-3);
  EXPECT_NEAR(mujoco, 0, 1e-2);
  const std::string frictionless =
      absl::StrReplaceAll(xml, {{R"(friction="0.2" priority="1")", R"(condim="1" priority="1")"}});
  EXPECT_NEAR(speed_after(frictionless, "priority_frictionless.xml", &mujoco), 2, 1e-6);
  EXPECT_NEAR(mujoco, 2, 1e-3);
}

// Torsional friction (condim 4): a ball resting on the floor, spun about the vertical, turns
// against a torque of mu_t m g from its single contact point, so it slows at the Coulomb rate
// mu_t g / (0.4 r^2) (its inertia 0.4 m r^2) and stops, then stays (no creep). At condim 3 a
// point contact holds no torque and the ball spins on. MuJoCo (its cones joined, soft
// contacts) slows it as well.
TEST(AngularFrictionTest, TorsionalFrictionSpinsABallDownAtTheCoulombRate) {
  auto spin_after = [&](int condim, double seconds, double* mujoco_spin) {
    const std::string xml = absl::StrFormat(R"(<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="0 0 0.1" friction="1 0.005 0.0001"/>
    <body pos="0 0 0.1">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="1" condim="%d" friction="1 0.02 0.0001"/>
    </body>
  </worldbody>
</mujoco>)",
                                            condim);
    const std::string path = WriteTempModel(absl::StrCat("spin_", condim, ".xml"), xml);
    ImportResult imported;
    double axion[6], mujoco[6];
    if (!FreeBodyVelocityAfter(path, seconds, {}, {0, 0, 10}, axion, mujoco, &imported))
      return -1.0;
    EXPECT_TRUE(imported.warnings.empty()) << imported.warnings.front();
    EXPECT_NEAR(axion[0], 0, 1e-6);  // it spins in place
    EXPECT_NEAR(axion[1], 0, 1e-6);
    *mujoco_spin = mujoco[5];
    return axion[5];
  };
  const double rate = 0.02 * 9.81 / (0.4 * 0.1 * 0.1);  // rad/s^2
  double mujoco = 0;
  const double axion = spin_after(4, 0.1, &mujoco);
  std::printf("after 0.1 s: Axion %.5f rad/s, MuJoCo %.5f rad/s, Coulomb: %.5f rad/s\n", axion,
              mujoco, 10 - rate * 0.1);
  EXPECT_NEAR(axion, 10 - rate * 0.1, 1e-3);
  EXPECT_NEAR(mujoco, 10 - rate * 0.1, 0.5);
  const double stopped = spin_after(4, 0.5, &mujoco);
  std::printf("after 0.5 s: Axion %.2e rad/s, MuJoCo %.2e rad/s\n", stopped, mujoco);
  EXPECT_NEAR(stopped, 0, 1e-6);
  EXPECT_NEAR(mujoco, 0, 0.05);
  const double free_spin = spin_after(3, 0.5, &mujoco);
  EXPECT_NEAR(free_spin, 10, 1e-6);
  EXPECT_NEAR(mujoco, 10, 1e-3);
}

// An explicit <pair> carries its own torsional friction (its third friction value) in place of
// the geoms': the ball of condim 3 spins down at the pair's rate of 0.03, as MuJoCo's does.
TEST(AngularFrictionTest, AnExplicitPairsTorsionalFrictionReplacesTheGeoms) {
  const std::string path = WriteTempModel("spin_pair.xml", R"(<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.1"/>
    <body pos="0 0 0.1">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.1" mass="1"/>
    </body>
  </worldbody>
  <contact><pair geom1="floor" geom2="ball" condim="4" friction="1 1 0.03"/></contact>
</mujoco>)");
  absl::StatusOr<ImportResult> loaded = LoadMjcfFile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->warnings.empty()) << loaded->warnings.front();
  ASSERT_EQ(loaded->model.contact_pairs.size(), 1u);
  EXPECT_EQ(loaded->model.contact_pairs[0].contact_dim, 4);
  EXPECT_DOUBLE_EQ(loaded->model.contact_pairs[0].torsional_friction, 0.03);
  double axion[6], mujoco[6];
  ASSERT_TRUE(FreeBodyVelocityAfter(path, 0.1, {}, {0, 0, 10}, axion, mujoco));
  const double rate = 0.03 * 9.81 / (0.4 * 0.1 * 0.1);
  std::printf("after 0.1 s: Axion %.5f rad/s, MuJoCo %.5f rad/s, Coulomb: %.5f rad/s\n", axion[5],
              mujoco[5], 10 - rate * 0.1);
  EXPECT_NEAR(axion[5], 10 - rate * 0.1, 1e-3);
  EXPECT_NEAR(mujoco[5], 10 - rate * 0.1, 0.5);
}

// Rolling friction (condim 6): a ball rolling on the floor at 1 m/s feels a torque of mu_r m g
// against its rolling, and so slows at mu_r g / (1.4 r) while it rolls without slipping (m a =
// -F, 0.4 m r^2 a / r = F r - mu_r m g r... with the rolling constraint), then stops and
// stays. At condim 4 it rolls on at 1 m/s.
TEST(AngularFrictionTest, RollingFrictionSlowsARollingBallAtItsRate) {
  auto speed_after = [&](int condim, double seconds, double* mujoco_speed) {
    const std::string xml = absl::StrFormat(R"(<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="0 0 0.1"/>
    <body pos="0 0 0.1">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="1" condim="%d" friction="1 0.005 0.01"/>
    </body>
  </worldbody>
</mujoco>)",
                                            condim);
    const std::string path = WriteTempModel(absl::StrCat("roll_", condim, ".xml"), xml);
    double axion[6], mujoco[6];  // rolling: v = w r
    if (!FreeBodyVelocityAfter(path, seconds, {1, 0, 0}, {0, 10, 0}, axion, mujoco)) return -1.0;
    EXPECT_NEAR(axion[0], 0.1 * axion[4], 1e-6);  // it rolls without slipping
    *mujoco_speed = mujoco[0];
    return axion[0];
  };
  const double rate = 0.01 * 9.81 / (1.4 * 0.1);  // m/s^2
  double mujoco = 0;
  const double axion = speed_after(6, 0.5, &mujoco);
  std::printf("after 0.5 s: Axion %.5f m/s, MuJoCo %.5f m/s, rolling friction: %.5f m/s\n", axion,
              mujoco, 1 - rate * 0.5);
  EXPECT_NEAR(axion, 1 - rate * 0.5, 1e-3);
  EXPECT_NEAR(mujoco, 1 - rate * 0.5, 0.05);
  const double stopped = speed_after(6, 2, &mujoco);
  std::printf("after 2 s: Axion %.2e m/s, MuJoCo %.2e m/s\n", stopped, mujoco);
  EXPECT_NEAR(stopped, 0, 1e-6);
  EXPECT_NEAR(speed_after(4, 0.5, &mujoco), 1, 1e-6);
  EXPECT_NEAR(mujoco, 1, 1e-3);
}

// A contact's report carries its torsional friction's torque (mu_t times its normal force
// while the ball spins against it); a snapshot taken mid-spin keeps the angular rows' impulses,
// and the restored world goes on bit for bit; a world on the Jacobi preconditioner (the
// symmetric friction form) slows the ball at the same Coulomb rate.
TEST(AngularFrictionTest, ContactsReportTheTorqueAndSnapshotsAndJacobiKeepIt) {
  const std::string path = WriteTempModel("spin_report.xml", R"(<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="0 0 0.1"/>
    <body pos="0 0 0.1">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="1" condim="6" friction="1 0.02 0.01"/>
    </body>
  </worldbody>
</mujoco>)");
  absl::StatusOr<ImportResult> loaded = LoadMjcfFile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ModelDesc desc = loaded->model;
  desc.bodies[0].angular_velocity = {0, 0, 10};
  World w = MakeWorld(desc);
  ASSERT_TRUE(w.sim);
  EXPECT_EQ(w.model->contact_angular_rows(), 3);
  ASSERT_TRUE(w.sim->StepAll(10).ok());
  std::vector<ContactReport> contacts = *w.sim->GetContacts(w.id);
  ASSERT_EQ(contacts.size(), 1u);
  const ContactReport& c = contacts[0];
  const double normal_force = dot(c.force, c.normal);
  std::printf("normal force %.6f N, torque (%.3e %.3e %.6f) N m\n", normal_force, c.torque.x,
              c.torque.y, c.torque.z);
  EXPECT_NEAR(normal_force, 9.81, 1e-6);
  EXPECT_NEAR(std::fabs(dot(c.torque, c.normal)), 0.02 * normal_force, 1e-6);
  EXPECT_NEAR(norm(c.torque - dot(c.torque, c.normal) * c.normal), 0, 1e-9);  // no rolling
  EXPECT_EQ(w.sim->GetStats(w.id)->constraint_rows, 6);

  const std::string snap = *w.sim->Snapshot(w.id);
  ASSERT_TRUE(w.sim->StepAll(20).ok());
  const BodyState expected = *w.sim->GetBodyState(w.id);
  ASSERT_TRUE(w.sim->Restore(w.id, snap).ok());
  ASSERT_TRUE(w.sim->StepAll(20).ok());
  EXPECT_EQ(w.sim->GetBodyState(w.id)->velocity, expected.velocity);
  EXPECT_EQ(w.sim->GetBodyState(w.id)->pose, expected.pose);

  desc.options.preconditioner = Preconditioner::kJacobi;
  World jacobi = MakeWorld(desc);
  ASSERT_TRUE(jacobi.sim);
  ASSERT_TRUE(jacobi.sim->StepAll(20).ok());
  const double rate = 0.02 * 9.81 / (0.4 * 0.1 * 0.1);
  EXPECT_NEAR(jacobi.sim->GetBodyState(jacobi.id)->velocity[5], 10 - rate * 0.1, 1e-3);
}

// MuJoCo's geom margin and gap: a ball of margin 1 cm comes to rest on that skin, 1 cm above
// the floor, as MuJoCo's does (its soft contact a little lower); with a gap as large it rests
// on the floor, its contacts found from 1 cm away (what MuJoCo's adhesion actuators use). The
// contact report gives the shapes' own distance.
TEST(GeomMarginTest, ABallRestsOnItsMarginLikeMuJoCos) {
  auto rest_height = [&](const std::string& extra, double* mujoco_height, double* gap) {
    const std::string path = WriteTempModel("margin_ball.xml", absl::StrCat(R"(<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="0 0 0.1"/>
    <body pos="0 0 0.2">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="1" )",
                                                                            extra, R"(/>
    </body>
  </worldbody>
</mujoco>)"));
    absl::StatusOr<ImportResult> loaded = LoadMjcfFile(path);
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    if (!loaded.ok()) return -1.0;
    EXPECT_TRUE(loaded->warnings.empty()) << loaded->warnings.front();
    World w = MakeWorld(loaded->model);
    MuJoCoRun mujoco(path);
    EXPECT_TRUE(w.sim && mujoco.m) << mujoco.load_error;
    if (!w.sim || !mujoco.m) return -1.0;
    EXPECT_TRUE(w.sim->StepAll(400).ok());
    for (int s = 0; s < 400; ++s) mj_step(mujoco.m, mujoco.d);
    *mujoco_height = mujoco.d->qpos[2];
    const std::vector<ContactReport> contacts = *w.sim->GetContacts(w.id);
    EXPECT_FALSE(contacts.empty());
    *gap = contacts.empty() ? -1.0 : double(contacts[0].gap);
    return double(w.sim->GetBodyState(w.id)->pose[2]);
  };
  double mujoco = 0, gap = 0;
  const double skin = rest_height(R"(margin="0.01")", &mujoco, &gap);
  std::printf("margin 0.01: Axion rests at %.6f m (gap %.6f m), MuJoCo at %.6f m\n", skin, gap,
              mujoco);
  EXPECT_NEAR(skin, 0.11, 1e-5);
  EXPECT_NEAR(gap, 0.01, 1e-5);
  EXPECT_NEAR(mujoco, 0.11, 2e-3);
  const double taken_back = rest_height(R"(margin="0.01" gap="0.01")", &mujoco, &gap);
  std::printf("margin and gap 0.01: Axion rests at %.6f m, MuJoCo at %.6f m\n", taken_back, mujoco);
  EXPECT_NEAR(taken_back, 0.1, 1e-5);
  EXPECT_NEAR(mujoco, 0.1, 2e-3);
  ASSERT_FALSE(LoadMjcfString(R"(<mujoco><worldbody><geom type="sphere" size="0.1" margin="-1"/>
    </worldbody></mujoco>)",
                              "")
                   .ok());
}

// An explicit <pair> holds its own margin and gap, not its geoms' (MuJoCo's rule): three balls
// of margin 2 cm on a floor, the first in no pair (it rests on its margin, 0.12 m), the second in
// a pair without a margin (touching, 0.1 m), the third in a pair of margin 3 cm and gap 5 mm
// (0.125 m), as MuJoCo rests them (its contacts soft, a few tenths of a millimetre lower).
TEST(GeomMarginTest, AnExplicitPairsMarginAndGapReplaceItsGeomsLikeMuJoCos) {
  const std::string path = WriteTempModel("pair_margin.xml", R"(<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.1"/>
    <body pos="0 0 0.2"><freejoint/><geom type="sphere" size="0.1" mass="1" margin="0.02"/></body>
    <body pos="1 0 0.2"><freejoint/>
      <geom name="plain" type="sphere" size="0.1" mass="1" margin="0.02"/></body>
    <body pos="2 0 0.2"><freejoint/>
      <geom name="skin" type="sphere" size="0.1" mass="1" margin="0.02"/></body>
  </worldbody>
  <contact>
    <pair geom1="floor" geom2="plain"/>
    <pair geom1="floor" geom2="skin" margin="0.03" gap="0.005"/>
  </contact>
</mujoco>)");
  absl::StatusOr<ImportResult> loaded = LoadMjcfFile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->warnings.empty()) << loaded->warnings.front();
  ASSERT_EQ(loaded->model.contact_pairs.size(), 2u);
  EXPECT_EQ(loaded->model.contact_pairs[1].margin, 0.03);
  EXPECT_EQ(loaded->model.contact_pairs[1].gap, 0.005);
  World w = MakeWorld(loaded->model);
  MuJoCoRun mujoco(path);
  ASSERT_TRUE(w.sim && mujoco.m) << mujoco.load_error;
  ASSERT_TRUE(w.sim->StepAll(400).ok());
  for (int s = 0; s < 400; ++s) mj_step(mujoco.m, mujoco.d);
  const std::vector<Real> pose = w.sim->GetBodyState(w.id)->pose;
  const double expected[3] = {0.12, 0.1, 0.125};
  for (int b = 0; b < 3; ++b) {
    std::printf("ball %d rests at %.6f m, MuJoCo's at %.6f m\n", b, double(pose[7 * b + 2]),
                mujoco.d->qpos[7 * b + 2]);
    EXPECT_NEAR(pose[7 * b + 2], expected[b], 1e-5) << b;
    EXPECT_NEAR(mujoco.d->qpos[7 * b + 2], expected[b], 2e-3) << b;
  }
  ASSERT_FALSE(LoadMjcfString(R"(<mujoco><worldbody><geom name="a" type="plane" size="1 1 1"/>
    <body><freejoint/><geom name="b" size="0.1"/></body></worldbody>
    <contact><pair geom1="a" geom2="b" gap="-1"/></contact></mujoco>)",
                              "")
                   .ok());
}

// MuJoCo's composite loop sample: a ring of 20 capsules closed by a connect, dropped on the floor
// from 1 m. The closure holds while it falls and lands (0.6 s), the ring at rest on the floor.
TEST(CompositeTest, LoopStaysClosedWhenItLands) {
  absl::StatusOr<ImportResult> imported =
      LoadMjcfFile("/usr/share/mujoco/model/composite/loop.xml");
  ASSERT_TRUE(imported.ok()) << imported.status();
  const ModelDesc& desc = imported->model;
  World w = MakeWorld(desc);
  ASSERT_TRUE(w.sim);
  const JointDesc& closure = desc.joints.back();
  ASSERT_EQ(closure.type, JointType::kBall);
  double largest_gap = 0, lowest = 1e9;
  for (int s = 0; s < 300; ++s) {
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    BodyState st = *w.sim->GetBodyState(w.id);
    // the closure's anchor on each of its bodies (body frames; the parent's side from the
    // compiled frame, which put both at one point at the start)
    auto point = [&](int body, Vec3 local) {
      const Real* p = &st.pose[7 * body];
      return Vec3{p[0], p[1], p[2]} + rotate(Quat{p[3], p[4], p[5], p[6]}, local);
    };
    const Vec3 on_child = point(closure.child, closure.child_frame.pos);
    const Pose& parent0 = desc.bodies[closure.parent].pose;
    const Pose& child0 = desc.bodies[closure.child].pose;
    const Vec3 start = child0.pos + rotate(child0.quat, closure.child_frame.pos);
    const Vec3 on_parent = point(closure.parent, rotate_inv(parent0.quat, start - parent0.pos));
    largest_gap = std::max(largest_gap, double(norm(on_child - on_parent)));
    for (size_t b = 0; b < desc.bodies.size(); ++b)
      lowest = std::min(lowest, double(st.pose[7 * b + 2]));
  }
  std::printf("closure gap at most %.2e m; lowest body centre %.4f m\n", largest_gap, lowest);
  EXPECT_LT(largest_gap, 1e-7);
  EXPECT_LT(lowest, 0.05);  // it reached the floor
  EXPECT_GT(lowest, 0.0);   // and rests on it
}

// URDF <mimic>: a parallel gripper's second finger mirrors the first (Franka's hand: both
// fingers slide out along opposite axes, the second mimicking the first). Only the first is
// actuated; a force on it opens both, the two moving as one mass: x'' = F / (m1 + m2).
TEST(CouplingTest, UrdfMimicFingersMoveTogether) {
  const std::string xml = R"(<robot name="gripper">
    <link name="hand"/>
    <link name="left"><inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4"/></inertial></link>
    <link name="right"><inertial><mass value="0.3"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4"/></inertial></link>
    <joint name="finger1" type="prismatic"><parent link="hand"/><child link="left"/>
      <origin xyz="0 0.05 0"/><axis xyz="0 1 0"/><limit lower="-0.01" upper="0.04" effort="20" velocity="0.2"/></joint>
    <joint name="finger2" type="prismatic"><parent link="hand"/><child link="right"/>
      <origin xyz="0 -0.05 0"/><axis xyz="0 -1 0"/><limit lower="-0.01" upper="0.04" effort="20" velocity="0.2"/>
      <mimic joint="finger1" multiplier="1" offset="0"/></joint>
  </robot>)";
  absl::StatusOr<ImportResult> r = LoadUrdfString(xml, "");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->model.actuators.size(), 1u);  // the mimic joint has none
  ASSERT_EQ(r->model.couplings.size(), 1u);
  EXPECT_EQ(r->model.couplings[0].leader_joint, 0);
  EXPECT_EQ(r->model.couplings[0].joint, 1);
  ModelDesc desc = r->model;
  desc.options.gravity = {0, 0, 0};
  desc.options.newton_tolerance = 1e-12;
  World w = MakeWorld(desc);
  ASSERT_TRUE(w.sim);
  const Real force = 2, h = desc.options.timestep;
  ASSERT_TRUE(w.sim->SetControls(w.id, std::vector<Real>{force}).ok());
  for (int n = 1; n <= 10; ++n) {
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    JointState js = *w.sim->GetJointState(w.id);
    // (to the Fischer-Burmeister smoothing of the fingers' limit rows, 1 cm away: 1e-9 a step)
    EXPECT_NEAR(js.velocity[0], n * h * force / 0.4, 1e-7) << "step " << n;
    EXPECT_NEAR(js.position[1], js.position[0], 1e-12) << "step " << n;
  }
  // a mimic of an unknown joint is an error naming it
  std::string bad = xml;
  const std::string mimic = "<mimic joint=\"finger1\"";
  bad.replace(bad.find(mimic), mimic.size(), "<mimic joint=\"nowhere\"");
  absl::StatusOr<ImportResult> unknown = LoadUrdfString(bad, "");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown joint 'nowhere'"), std::string::npos)
      << unknown.status();
}

// UrdfOptions::position_kp turns each joint's actuator into a position servo whose control range
// is the joint's limits and whose force its effort limit bounds: a turntable (a revolute joint
// about the vertical, so gravity exerts no torque about it) sent to 0.5 rad settles there. Without
// the option it is an effort actuator; negative gains are refused.
TEST(UrdfServoTest, PositionServosReachTheirTargets) {
  const std::string xml = R"(<robot name="turntable">
    <link name="base"/>
    <link name="table"><inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial></link>
    <joint name="turn" type="revolute"><parent link="base"/><child link="table"/><axis xyz="0 0 1"/>
      <limit lower="-1" upper="1" effort="10" velocity="5"/></joint>
  </robot>)";
  UrdfOptions options;
  options.position_kp = 40;
  options.position_kv = 4;
  absl::StatusOr<ImportResult> servo = LoadUrdfString(xml, "", options);
  ASSERT_TRUE(servo.ok()) << servo.status();
  const ActuatorDesc& actuator = servo->model.actuators.at(0);
  EXPECT_EQ(actuator.type, ActuatorType::kPosition);
  EXPECT_TRUE(actuator.ctrl_limited);
  EXPECT_EQ(actuator.ctrl_min, -1);
  EXPECT_EQ(actuator.ctrl_max, 1);
  // the joint's effort limit bounds the servo: its first push (40 x 0.5 = 20 N m asked) is 10
  EXPECT_TRUE(actuator.force_limited);
  EXPECT_EQ(actuator.force_min, -10);
  EXPECT_EQ(actuator.force_max, 10);
  World w = MakeWorld(servo->model);
  ASSERT_TRUE(w.sim);
  ASSERT_TRUE(w.sim->SetControls(w.id, std::vector<Real>{0.5}).ok());
  const Real h = servo->model.options.timestep;
  ASSERT_TRUE(w.sim->StepAll(1).ok());
  EXPECT_NEAR(w.sim->GetJointState(w.id)->velocity[0], h * 10 / 0.1, 1e-6);
  ASSERT_TRUE(w.sim->StepAll(static_cast<int>(std::lround(3.0 / h))).ok());
  absl::StatusOr<JointState> joints = w.sim->GetJointState(w.id);
  ASSERT_TRUE(joints.ok());
  EXPECT_NEAR(joints->position[0], 0.5, 1e-3);

  absl::StatusOr<ImportResult> effort = LoadUrdfString(xml, "");
  ASSERT_TRUE(effort.ok());
  EXPECT_EQ(effort->model.actuators.at(0).type, ActuatorType::kEffort);
  options.position_kv = -1;
  EXPECT_FALSE(LoadUrdfString(xml, "", options).ok());
}

// One humanoid run under control noise (axion-sim's: every step each control is drawn from the
// middle `noise` fraction of its range) and what its steps did.
struct NoisyRun {
  int steps = 0, not_converged = 0, halved = 0, substeps = 0;
  double max_speed = 0, time = 0, newton = 0;
};
NoisyRun RunUnderNoise(const ModelDesc& desc, uint32_t seed, double seconds, double noise) {
  NoisyRun run;
  World w = MakeWorld(desc);
  if (!w.sim) return run;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<Real> ctrl(desc.actuators.size());
  run.steps = static_cast<int>(std::lround(seconds / desc.options.timestep));
  for (int s = 0; s < run.steps; ++s) {
    for (size_t a = 0; a < ctrl.size(); ++a) {
      const ActuatorDesc& act = desc.actuators[a];
      double center = act.ctrl_limited ? 0.5 * (act.ctrl_min + act.ctrl_max) : 0.0;
      double radius = act.ctrl_limited ? 0.5 * (act.ctrl_max - act.ctrl_min) : 1.0;
      ctrl[a] = static_cast<Real>(center + noise * radius * uniform(rng));
    }
    EXPECT_TRUE(w.sim->SetControls(w.id, ctrl).ok());
    EXPECT_TRUE(w.sim->StepAll(1).ok());
    absl::StatusOr<WorldStats> stats = w.sim->GetStats(w.id);
    EXPECT_TRUE(stats.ok());
    if (!stats.ok()) return run;
    EXPECT_EQ(stats->flags & kWorldNonFinite, 0u) << "seed " << seed << ", step " << s;
    run.not_converged += (stats->flags & kWorldNotConverged) != 0;
    run.newton += stats->newton_iterations;
    run.halved += stats->substeps > 1;
    run.substeps += stats->substeps;
    run.time = stats->time;
    absl::StatusOr<BodyState> state = w.sim->GetBodyState(w.id);
    EXPECT_TRUE(state.ok());
    for (size_t b = 0; state.ok() && b < state->velocity.size() / 6; ++b) {
      const Real* v = &state->velocity[6 * b];
      run.max_speed = std::max(run.max_speed, std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]));
    }
  }
  return run;
}

// At 16 times its step (0.08 s) under control noise, landings and deep new contacts leave some
// full-length steps without a Newton basin: the solve wanders, the step keeps its best iterate
// unsolved, and a figure whose joints then sit past their limits can fail every later step.
// Such a step is taken again as two halves (SolverOptions::step_halvings, down to 0.005 s
// here). Over 8 seeds x 5 s (32 seeds in RESULTS.md): every run stays bounded, with fewer
// unsolved steps than without halving (42 against 69 of 504), and each step still covers
// exactly its h.
TEST(HumanoidNoiseTest, FailedLargeStepsAreHalvedAndSolved) {
  if (!std::ifstream(kHumanoid))
    GTEST_SKIP() << "MuJoCo's sample " << kHumanoid << " is not installed";
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(kHumanoid);
  ASSERT_TRUE(imported.ok()) << imported.status();
  ModelDesc halving = imported->model;
  halving.options.timestep *= 16;
  ModelDesc whole = halving;
  whole.options.step_halvings = 0;
  NoisyRun on_total, off_total;
  double off_max_speed = 0;
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    NoisyRun on = RunUnderNoise(halving, seed, 5.0, 0.01);
    NoisyRun off = RunUnderNoise(whole, seed, 5.0, 0.01);
    EXPECT_LT(on.max_speed, 20.0) << "seed " << seed;
    EXPECT_NEAR(on.time, on.steps * halving.options.timestep, 1e-9) << "seed " << seed;
    EXPECT_EQ(off.halved, 0);
    EXPECT_EQ(off.substeps, off.steps);
    on_total.steps += on.steps;
    on_total.not_converged += on.not_converged;
    on_total.halved += on.halved;
    on_total.substeps += on.substeps;
    on_total.max_speed = std::max(on_total.max_speed, on.max_speed);
    off_total.steps += off.steps;
    off_total.not_converged += off.not_converged;
    off_max_speed = std::max(off_max_speed, off.max_speed);
  }
  std::printf(
      "h=%g, 8 seeds x 5 s: halving: %d of %d steps not converged, %d halved (%.2f steps of "
      "h / 2^k per step), largest speed %.2f m/s; whole steps only: %d not converged, largest "
      "speed %.2f m/s\n",
      halving.options.timestep, on_total.not_converged, on_total.steps, on_total.halved,
      static_cast<double>(on_total.substeps) / on_total.steps, on_total.max_speed,
      off_total.not_converged, off_max_speed);
  EXPECT_GT(on_total.halved, 0);
  EXPECT_LT(on_total.not_converged, on_total.steps / 8);
  EXPECT_LT(on_total.not_converged, off_total.not_converged);
}

// MuJoCo's 22_humanoids.xml: 22 figures dropped side by side onto one floor, in one world. Each
// figure is an island (kernels_solver.h, world_build_islands) with its own line search, best
// iterate and convergence test. As one Newton system, the figures landing within a step or two
// of each other under control noise held each other's solves: with axion-sim's noise (seed 2)
// every step from the first landing on ended unsolved and its state worse, the residual growing
// from 23 to 1.8e3 m/s by step 60 (145 Newton iterations per step, each step down the whole
// halving ladder). As islands, a figure that stalls keeps its own best iterate while the others
// converge: no step is left above the halving threshold (1e-2 m/s), and most converge.
TEST(IslandTest, TwentyTwoHumanoidsLandAsIndependentFigures) {
  const std::string path =
      std::string(kHumanoid).substr(0, std::string(kHumanoid).rfind('/') + 1) + "22_humanoids.xml";
  if (!std::ifstream(path)) GTEST_SKIP() << "MuJoCo's sample " << path << " is not installed";
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  const ModelDesc& desc = imported->model;
  ASSERT_EQ(desc.bodies.size(), 22u * 13u);  // heads and hands merged into their parents
  World w = MakeWorld(desc);
  ASSERT_TRUE(w.sim);
  // the control noise of `axion-sim --noise=0.01 --seed=2`
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<Real> ctrl(desc.actuators.size());
  const int steps = 80, landing = 40;
  int not_converged = 0, landed = 0;
  double worst = 0, newton = 0;
  for (int s = 0; s < steps; ++s) {
    for (size_t a = 0; a < ctrl.size(); ++a) {
      const ActuatorDesc& act = desc.actuators[a];
      ASSERT_TRUE(act.ctrl_limited);
      const double center = 0.5 * (act.ctrl_min + act.ctrl_max);
      const double radius = 0.5 * (act.ctrl_max - act.ctrl_min);
      ctrl[a] = static_cast<Real>(center + 0.01 * radius * uniform(rng));
    }
    ASSERT_TRUE(w.sim->SetControls(w.id, ctrl).ok());
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    const WorldStats stats = *w.sim->GetStats(w.id);
    ASSERT_EQ(stats.flags & kWorldNonFinite, 0u) << "step " << s;
    landed = std::max(landed, stats.contact_count);
    if (s < landing) continue;
    not_converged += (stats.flags & kWorldNotConverged) != 0;
    worst = std::max(worst, static_cast<double>(stats.residual));
    newton += stats.newton_iterations;
  }
  std::printf(
      "22 humanoids, noise 0.01, seed 2, steps %d-%d: %d not converged, worst residual %.3g m/s, "
      "%.1f Newton iterations per step\n",
      landing + 1, steps, not_converged, worst, newton / (steps - landing));
  EXPECT_GE(landed, 22 * 8);  // every figure on its feet
  EXPECT_LT(worst, desc.options.halving_residual);
  EXPECT_LT(not_converged, (steps - landing) / 2);
}

// wedged_target.xml: a ball dropped onto the floor beside a target held by two slides 0.5 mm
// inside the floor, as Gym's thrower holds its target. The target's joints and contact
// contradict each other, so its solve fails every step; the ball is an island of its own and
// falls and lands as in MuJoCo. As one Newton system, every failed step kept the world's best
// iterate, the step's start for the ball too, which then hung in the air (2.5 mm fallen in
// 0.4 s, where it falls 27 cm; thrower's ball likewise stayed in the air); a body no row acts
// on now takes its free motion in either case.
// A column of three spheres on three slides each (no rotation, as the particles of MuJoCo's
// composites) with friction falls onto the floor and onto each other, as in the pile of
// bench/sphere_pile.py. The slides hold each sphere's rotation with no rows. A contact between
// two of them moves along its normal, so its slip is round-off: taken as rel - (rel . n) n,
// that round-off pointed along n, friction's tangent turned along the normal, and the second
// landing ran 59 Newton iterations over 4 halvings with impulses of kilonewton seconds. Now
// every step converges whole and the column rests like MuJoCo's.
TEST(SlideColumnTest, SpheresOnSlidesLandLikeMuJoCo) {
  std::string bodies;
  for (int k = 0; k < 3; ++k) {
    bodies +=
        absl::StrFormat(R"(<body pos="-0.35 -0.35 %.2f"><joint type="slide" axis="1 0 0"/>)"
                        R"(<joint type="slide" axis="0 1 0"/><joint type="slide" axis="0 0 1"/>)"
                        R"(<geom type="sphere" size=".025" condim="3"/></body>)",
                        0.65 + 0.07 * k);
  }
  const std::string path =
      WriteTempModel("slide_column.xml", R"(<mujoco><option timestep=".01"/><worldbody>)"
                                         R"(<geom type="plane" size="0 0 1"/>)" +
                                             bodies + "</worldbody></mujoco>");
  SideBySide run = LoadSideBySide(path);
  ASSERT_TRUE(run.ok());
  mjModel* m = run.mujoco->m;
  mjData* d = run.mujoco->d;
  int most_newton = 0;
  for (int s = 0; s < 100; ++s) {
    ASSERT_TRUE(run.w.sim->StepAll(1).ok());
    mj_step(m, d);
    const WorldStats stats = *run.w.sim->GetStats(run.w.id);
    most_newton = std::max(most_newton, stats.newton_iterations);
    EXPECT_EQ(stats.flags & kWorldNotConverged, 0u) << "step " << s;
    EXPECT_EQ(stats.substeps, 1) << "step " << s;
    EXPECT_EQ(stats.constraint_rows, 3 * stats.contact_count) << "step " << s;  // no joint rows
  }
  const BodyState state = *run.w.sim->GetBodyState(run.w.id);
  mj_kinematics(m, d);
  std::printf("column of spheres on slides: at most %d Newton iterations per step; heights",
              most_newton);
  for (int k = 0; k < 3; ++k) {
    const Real* pose = &state.pose[7 * k];
    std::printf(" %.5f (MuJoCo %.5f)", pose[2], d->xpos[3 * (k + 1) + 2]);
    EXPECT_NEAR(pose[0], -0.35, 1e-12) << "sphere " << k;
    EXPECT_NEAR(pose[1], -0.35, 1e-12) << "sphere " << k;
    EXPECT_NEAR(pose[3], 1, 1e-15) << "sphere " << k;  // the rotation held
    EXPECT_NEAR(pose[2], 0.025 + 0.05 * k, 1e-4) << "sphere " << k;
    // MuJoCo's soft contacts sink about 0.7 mm each under the column's weight
    EXPECT_NEAR(pose[2], d->xpos[3 * (k + 1) + 2], 2.5e-3) << "sphere " << k;
  }
  std::printf("\n");
  EXPECT_LE(most_newton, 15);
}

TEST(IslandTest, BallFallsBesideAWedgedTargetLikeMuJoCo) {
  SideBySide run = LoadSideBySide(kModels + "/wedged_target.xml");
  ASSERT_TRUE(run.ok());
  ModelDesc one_system = run.imported.model;
  one_system.options.islands = false;
  World whole = MakeWorld(one_system);
  ASSERT_TRUE(whole.sim);
  mjModel* m = run.mujoco->m;
  mjData* d = run.mujoco->d;
  const int ball = mj_name2id(m, mjOBJ_BODY, "ball");
  double largest_difference = 0, axion_z = 0, mujoco_z = 0, one_system_z = 0;
  int unsolved = 0;
  for (int s = 1; s <= 80; ++s) {
    ASSERT_TRUE(run.w.sim->StepAll(1).ok());
    ASSERT_TRUE(whole.sim->StepAll(1).ok());
    mj_step(m, d);
    unsolved += (run.w.sim->GetStats(run.w.id)->flags & kWorldNotConverged) != 0;
    axion_z = run.w.sim->GetBodyState(run.w.id)->pose[2];
    one_system_z = whole.sim->GetBodyState(whole.id)->pose[2];
    mj_kinematics(m, d);
    mujoco_z = d->xpos[3 * ball + 2];
    if (s <= 45) largest_difference = std::max(largest_difference, std::abs(axion_z - mujoco_z));
  }
  std::printf(
      "ball after 0.4 s: Axion %.4f m, MuJoCo %.4f m, the world as one system %.4f m; falling, "
      "Axion within %.4f m of MuJoCo; %d of 80 steps unsolved (the target's)\n",
      axion_z, mujoco_z, one_system_z, largest_difference, unsolved);
  EXPECT_GT(unsolved, 40);              // the target's contradiction holds
  EXPECT_LT(largest_difference, 0.01);  // the fall, until MuJoCo's soft landing at step 50
  EXPECT_NEAR(axion_z, 0.03, 1e-3);     // resting on the floor, as MuJoCo's (0.0296)
  EXPECT_NEAR(mujoco_z, 0.03, 2e-3);
  // With SolverOptions::islands off the airborne ball still falls: a body no row acts on takes
  // its free motion whatever the world's solve does (it hung in the air before that); islands
  // decide once rows act on it (IslandTest.AnIslandThatCannotConvergeLeavesTheOthersSolved).
  EXPECT_NEAR(one_system_z, 0.03, 1e-3);
}

// The contact rows' Fischer-Burmeister smoothing, an impulse, is capped by a speed times each
// row's effective mass (kernels_common.h, kFbSmoothingSpeedCap). Without the cap a featherweight
// body resting on a table (Gym's pusher object, 8e-9 kg, held at the table's height by its
// slides) was free to sit 1e3 m/s off complementarity, and every step ended at the Newton limit
// (54 iterations per step). (The table is a box: a plane's pairs with a body sliding in it are
// left out, Model::pair_rules, as they now are for the pusher's.)
TEST(ContactSmoothingTest, FeatherweightBodyRestingOnATableConverges) {
  for (const char* mass : {"8e-9", "1"}) {
    const std::string path = WriteTempModel(std::string("feather_") + mass + ".xml", R"(
<mujoco model="feather">
  <option timestep="0.01"/>
  <worldbody>
    <geom name="table" type="box" pos="0 0 -0.1" size="1 1 0.1"/>
    <body name="object" pos="0 0 0.05">
      <joint name="x" type="slide" axis="1 0 0"/>
      <joint name="y" type="slide" axis="0 1 0"/>
      <geom type="cylinder" size="0.05 0.05" mass=")" + std::string(mass) + R"("/>
    </body>
  </worldbody>
</mujoco>)");
    absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
    ASSERT_TRUE(imported.ok()) << imported.status();
    NoisyRun run = RunUnderNoise(imported->model, 1, 2.0, 0);
    EXPECT_EQ(run.not_converged, 0) << mass << " kg";
    EXPECT_LT(run.newton / run.steps, 1.0) << mass << " kg";
    EXPECT_LT(run.max_speed, 1e-6) << mass << " kg";
  }
}

// Gym's thrower: a target on two slides whose corner capsules reach 0.5 mm into the floor, and
// whose walls reach the floor one way (contype 1, conaffinity 0). Its height is the joints', so
// the compiled model leaves the target's pairs with the floor out (explicit pairs included) and
// says so; the ball beside it, on a free joint, keeps its pair.
TEST(MjcfCollisionTest, BodiesSlidingInAPlaneDoNotTouchItAndSaySo) {
  auto warned = [](const ImportResult& r, const std::string& needle) {
    return std::any_of(r.warnings.begin(), r.warnings.end(),
                       [&](const std::string& w) { return w.find(needle) != std::string::npos; });
  };
  std::string xml = R"(
<mujoco><worldbody>
  <geom name="floor" type="plane" size="1 1 0.1"/>
  <body name="target" pos="0 0 0.0">
    <joint name="x" type="slide" axis="1 0 0"/><joint name="y" type="slide" axis="0 1 0"/>
    <geom name="base" type="box" pos="0 0 0.002" size="0.075 0.075 0.001"/>
    <geom name="wall" type="box" pos="0.075 0 0.031" size="0.001 0.075 0.03" conaffinity="0"/>
    <geom name="post" type="capsule" fromto="0.07 0.07 0.0045 0.07 0.07 0.06" size="0.005"/>
  </body>
  <body name="ball" pos="0.5 0 0.1"><freejoint/><geom name="ball" size="0.03"/></body>
</worldbody></mujoco>)";
  absl::StatusOr<ImportResult> r = LoadMjcfString(xml, "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(warned(*r,
                     "body 'target' slides in the plane of geom 'floor', its height held "
                     "by joint 'x+y': Axion leaves their contacts out"));
  EXPECT_EQ(r->model.contact_pairs.size(), 2u);  // floor-wall and wall-ball, one way
  World w = MakeWorld(r->model);
  ASSERT_NE(w.model, nullptr);
  for (int shape = 1; shape <= 3; ++shape) EXPECT_FALSE(w.model->MayCollide(0, shape)) << shape;
  EXPECT_TRUE(w.model->MayCollide(0, 4));
  // The post, 0.5 mm into the floor, held every solve at its limit; now each step converges.
  for (int n = 0; n < 200; ++n) {
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    EXPECT_EQ(w.sim->GetStats(w.id)->flags, 0u) << "step " << n;
  }
  // the ball landed, the target stayed
  absl::StatusOr<BodyState> state = w.sim->GetBodyState(w.id);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_NEAR(state->pose[7 + 2], 0.03, 1e-3);
  EXPECT_NEAR(state->pose[0], 0, 1e-12);
  // without the joints' hold (a free target) nothing is left out, and no warning
  absl::StatusOr<ImportResult> free_target = LoadMjcfString(
      absl::StrReplaceAll(xml, {{R"(<joint name="x" type="slide" axis="1 0 0"/>)", "<freejoint/>"},
                                {R"(<joint name="y" type="slide" axis="0 1 0"/>)", ""}}),
      "");
  ASSERT_TRUE(free_target.ok()) << free_target.status();
  EXPECT_FALSE(warned(*free_target, "slides in the plane"));
  EXPECT_TRUE(Model::Compile(free_target->model).value()->MayCollide(0, 3));
}

// Parts that overlap about the anchor of a joint that holds it in place overlap whatever the
// joint does (each side keeps the ball about the anchor it holds): the compiled model leaves
// their contacts out and the loader names them. An arm hinged inside its static base swings
// down onto the floor, which it still meets; a lid hinged on the base's top edge, its anchor on
// both surfaces, keeps resting on the base. dm_control's CMU humanoid, hanging from its static
// pelvis, went non-finite within 4 steps without the rule (thighs pushed out of the hips), and
// steps at 4357 steps/s with it (humanoid_CMU_V2020.xml, 1000 steps under noise 0.01).
TEST(MjcfCollisionTest, PartsOverlappingAboutAJointAnchorDoNotTouchAndSaySo) {
  const std::string xml = R"(
<mujoco><worldbody>
  <geom name="floor" type="plane" size="0 0 0.1"/>
  <body name="base" pos="0 0 0.5">
    <geom name="base" type="box" size="0.05 0.05 0.05"/>
    <body name="arm">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <geom name="arm" type="capsule" fromto="0 0 0 0.6 0 0" size="0.03"/>
    </body>
    <body name="lid" pos="0.05 0 0.05">
      <joint name="lid_hinge" type="hinge" axis="0 1 0"/>
      <geom name="lid" type="box" pos="-0.05 0 0.005" size="0.05 0.05 0.005"/>
    </body>
  </body>
</worldbody></mujoco>)";
  absl::StatusOr<ImportResult> r = LoadMjcfString(xml, "");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->warnings.size(), 1u) << r->warnings.front();
  EXPECT_NE(r->warnings[0].find("geom 'arm' and geom 'base' overlap about the anchor of joint "
                                "'shoulder' whatever its angle: Axion leaves their contacts out"),
            std::string::npos)
      << r->warnings[0];
  World w = MakeWorld(r->model);
  ASSERT_NE(w.model, nullptr);
  auto shape = [&](const std::string& name) {
    for (size_t s = 0; s < r->model.shapes.size(); ++s)
      if (r->model.shapes[s].name == name) return static_cast<int>(s);
    return -1;
  };
  const int floor = shape("floor"), base = shape("base"), arm = shape("arm"), lid = shape("lid");
  EXPECT_FALSE(w.model->MayCollide(arm, base));
  EXPECT_TRUE(w.model->MayCollide(arm, floor));
  EXPECT_TRUE(w.model->MayCollide(lid, base));
  EXPECT_TRUE(w.model->MayCollide(lid, arm));
  for (int n = 0; n < 1000; ++n) {
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    EXPECT_EQ(w.sim->GetStats(w.id)->flags, 0u) << "step " << n;
  }
  absl::StatusOr<JointState> joints = w.sim->GetJointState(w.id);
  ASSERT_TRUE(joints.ok()) << joints.status();
  // the arm's tip (0.6 m out, radius 0.03) rests on the floor 0.5 m below the shoulder: it
  // turned down by asin(0.47 / 0.6), not through the floor
  const int shoulder = w.model->FindJoint("shoulder"), lid_hinge = w.model->FindJoint("lid_hinge");
  EXPECT_NEAR(joints->position[w.model->joint_position_offset()[shoulder]], std::asin(0.47 / 0.6),
              2e-3);
  EXPECT_NEAR(joints->position[w.model->joint_position_offset()[lid_hinge]], 0, 1e-4);

  // The rule by the engine alone: a ball joint whose child sphere holds the anchor 0.05 deep;
  // a static sphere 0.04 from the anchor always meets it, one 0.06 away need not.
  ModelDesc d;
  BodyDesc ball;
  ball.pose.pos = {0, 0, 1};
  d.bodies.push_back(ball);
  ShapeDesc child, near, far;
  child.body = 0;
  child.type = ShapeType::kSphere;
  child.size = {0.1, 0, 0};
  child.pose.pos = {0.05, 0, 0};
  near.type = far.type = ShapeType::kSphere;
  near.size = far.size = {0.02, 0, 0};
  near.pose.pos = {-0.06, 0, 1};  // its surface 0.04 from the anchor
  far.pose.pos = {0, -0.08, 1};   // 0.06
  d.shapes = {child, near, far};
  JointDesc joint;
  joint.type = JointType::kBall;
  joint.parent = kWorldBody;
  joint.child = 0;
  joint.collide_connected = true;
  d.joints.push_back(joint);
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(d);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE((*model)->MayCollide(0, 1));
  EXPECT_TRUE((*model)->MayCollide(0, 2));
  // a slide moves its anchor: nothing is left out
  d.joints[0].type = JointType::kPrismatic;
  model = Model::Compile(d);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE((*model)->MayCollide(0, 1));
}

// <option density viscosity>: MuJoCo's inertia-box fluid model. A tilted box thrown through a
// dense, viscous medium without gravity, spinning about one of its principal axes (so neither
// engine's gyroscopic term acts), slows as libmujoco's does: both take the fluid forces from the
// step's start velocity; the spin agrees to round-off over 50 steps, the speed to 1e-5.
TEST(MjcfFluidTest, BoxInAFluidSlowsAsInMuJoCo) {
  const std::string path = WriteTempModel("fluid_box.xml", R"(<mujoco>
  <option timestep="0.01" gravity="0 0 0" density="1000" viscosity="0.5"/>
  <worldbody><body name="box" pos="0 0 1" quat="0.9 0.3 -0.2 0.25"><freejoint/>
    <geom type="box" size="0.1 0.2 0.3" mass="20"/></body></worldbody></mujoco>)");
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->model.options.fluid_density, 1000);
  EXPECT_EQ(imported->model.options.fluid_viscosity, 0.5);
  EXPECT_TRUE(imported->warnings.empty()) << imported->warnings.front();
  MuJoCoRun mujoco(path);
  ASSERT_NE(mujoco.m, nullptr) << mujoco.load_error;
  // thrown at 3 m/s, spinning at 4 rad/s about the box's own y axis
  const Vec3 linear{1, -2, 2};
  const double spin_local[3] = {0, 4, 0};
  const Quat box = imported->model.bodies[0].pose.quat;
  const Vec3 spin = rotate(box, Vec3{spin_local[0], spin_local[1], spin_local[2]});
  imported->model.bodies[0].linear_velocity = linear;
  imported->model.bodies[0].angular_velocity = spin;
  World w = MakeWorld(imported->model);
  ASSERT_NE(w.model, nullptr);
  for (int k = 0; k < 3; ++k) mujoco.d->qvel[k] = linear[k];
  for (int k = 0; k < 3; ++k) mujoco.d->qvel[3 + k] = spin_local[k];
  for (int n = 0; n < 50; ++n) {
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    mj_step(mujoco.m, mujoco.d);
  }
  const BodyState state = *w.sim->GetBodyState(w.id);
  const Vec3 mujoco_spin =
      rotate(box, Vec3{mujoco.d->qvel[3], mujoco.d->qvel[4], mujoco.d->qvel[5]});
  std::printf("after 0.5 s: speed %.6f m/s (MuJoCo %.6f), spin %.6f rad/s (MuJoCo %.6f)\n",
              std::hypot(state.velocity[0], state.velocity[1], state.velocity[2]),
              std::hypot(mujoco.d->qvel[0], mujoco.d->qvel[1], mujoco.d->qvel[2]),
              std::hypot(state.velocity[3], state.velocity[4], state.velocity[5]),
              std::hypot(mujoco_spin.x, mujoco_spin.y, mujoco_spin.z));
  EXPECT_LT(std::hypot(state.velocity[0], state.velocity[1], state.velocity[2]), 2.0);  // slowed
  for (int k = 0; k < 3; ++k) {
    // the drag's axes turn with the box, whose turn each engine integrates its own way
    // (MuJoCo the exact exponential, Axion the first-order map): 1e-5 of the speed apart
    EXPECT_NEAR(state.velocity[k], mujoco.d->qvel[k], 2e-5) << k;
    EXPECT_NEAR(state.velocity[3 + k], mujoco_spin[k], 1e-9) << k;
  }
}

// <option wind>: the medium moves, and the fluid forces act on each body's velocity relative
// to it. A box at rest in a wind of (3, -1, 0.5) m/s is carried along as MuJoCo's is, its
// speed approaching the wind's.
TEST(MjcfFluidTest, BoxInTheWindIsCarriedAsInMuJoCo) {
  const std::string path = WriteTempModel("wind_box.xml", R"(<mujoco>
  <option timestep="0.01" gravity="0 0 0" density="1000" viscosity="0.5" wind="3 -1 0.5"/>
  <worldbody><body name="box" pos="0 0 1" quat="0.9 0.3 -0.2 0.25"><freejoint/>
    <geom type="box" size="0.1 0.2 0.3" mass="20"/></body></worldbody></mujoco>)");
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_TRUE(imported->warnings.empty()) << imported->warnings.front();
  const Vec3 wind = imported->model.options.fluid_wind;
  EXPECT_EQ(wind.x, 3);
  EXPECT_EQ(wind.y, -1);
  EXPECT_EQ(wind.z, 0.5);
  MuJoCoRun mujoco(path);
  ASSERT_NE(mujoco.m, nullptr) << mujoco.load_error;
  World w = MakeWorld(imported->model);
  ASSERT_NE(w.model, nullptr);
  double worst = 0;
  for (int n = 0; n < 100; ++n) {
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    mj_step(mujoco.m, mujoco.d);
    const BodyState state = *w.sim->GetBodyState(w.id);
    for (int k = 0; k < 3; ++k)
      worst = std::max(worst, std::abs(state.velocity[k] - mujoco.d->qvel[k]));
  }
  const BodyState state = *w.sim->GetBodyState(w.id);
  std::printf(
      "after 1 s in the wind: velocity (%.4f, %.4f, %.4f) m/s (MuJoCo (%.4f, %.4f, %.4f)), "
      "within %.1e m/s all along\n",
      state.velocity[0], state.velocity[1], state.velocity[2], mujoco.d->qvel[0], mujoco.d->qvel[1],
      mujoco.d->qvel[2], worst);
  EXPECT_GT(state.velocity[0], 1.0);  // carried downwind
  EXPECT_LT(state.velocity[1], -0.3);
  EXPECT_LT(worst, 1e-3);
  // a wind that is not finite is refused by name
  imported->model.options.fluid_wind.x = NAN;
  absl::Status status = Model::Compile(imported->model).status();
  EXPECT_NE(status.message().find("fluid_wind"), std::string::npos) << status;
}

// A three-link swimmer in the plane (root on two slides and a hinge, two driven hinges, as
// Gym's swimmer), in a dense viscous medium with only explicit contact pairs (collision
// "predefined", none here): a travelling wave of its two motors drives it forward, as in
// MuJoCo; without the medium its centre of mass stays where it was.
TEST(MjcfFluidTest, SwimmerSwimsInItsMediumAsInMuJoCo) {
  const std::string body = R"(
  <default><geom condim="1"/></default>
  <worldbody><geom name="floor" type="plane" size="0 0 0.1" pos="0 0 -0.1"/>
    <body name="torso"><joint name="x" type="slide" axis="1 0 0"/>
      <joint name="y" type="slide" axis="0 1 0"/><joint name="turn" axis="0 0 1"/>
      <geom type="capsule" fromto="1.5 0 0 0.5 0 0" size="0.1"/>
      <body name="mid" pos="0.5 0 0"><joint name="j1" axis="0 0 1" range="-100 100" limited="true"/>
        <geom type="capsule" fromto="0 0 0 -1 0 0" size="0.1"/>
        <body name="back" pos="-1 0 0"><joint name="j2" axis="0 0 1" range="-100 100" limited="true"/>
          <geom type="capsule" fromto="0 0 0 -1 0 0" size="0.1"/></body></body></body>
  </worldbody>
  <actuator><motor joint="j1" gear="150" ctrlrange="-1 1" ctrllimited="true"/>
    <motor joint="j2" gear="150" ctrlrange="-1 1" ctrllimited="true"/></actuator></mujoco>)";
  auto swim = [&](const std::string& medium, double* mujoco_distance) {
    const std::string path = WriteTempModel(
        "swimmer.xml", absl::StrCat(R"(<mujoco><option timestep="0.01" collision="predefined" )"
                                    R"(integrator="RK4" )",
                                    medium, "/>", body));
    absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
    EXPECT_TRUE(imported.ok()) << imported.status();
    if (!imported.ok()) return 0.0;
    World w = MakeWorld(imported->model);
    MuJoCoRun mujoco(path);
    EXPECT_NE(mujoco.m, nullptr) << mujoco.load_error;
    if (!w.sim || !mujoco.m) return 0.0;
    auto centre = [&] {
      const BodyState state = *w.sim->GetBodyState(w.id);
      Vec3 sum;
      Real mass = 0;
      for (size_t b = 0; b < imported->model.bodies.size(); ++b) {
        const BodyDesc& desc = imported->model.bodies[b];
        const Real* pose = &state.pose[7 * b];
        const Vec3 com = Vec3{pose[0], pose[1], pose[2]} +
                         rotate(Quat{pose[3], pose[4], pose[5], pose[6]}, desc.com);
        sum = sum + desc.mass * com;
        mass += desc.mass;
      }
      return (Real(1) / mass) * sum;
    };
    auto mujoco_centre = [&] {
      mj_kinematics(mujoco.m, mujoco.d);
      Vec3 sum;
      Real mass = 0;
      for (int b = 1; b < mujoco.m->nbody; ++b) {
        const double* x = mujoco.d->xipos + 3 * b;
        sum = sum + mujoco.m->body_mass[b] * Vec3{x[0], x[1], x[2]};
        mass += mujoco.m->body_mass[b];
      }
      return (Real(1) / mass) * sum;
    };
    const Vec3 start = centre(), mujoco_start = mujoco_centre();
    for (int n = 0; n < 1000; ++n) {
      const double t = 0.01 * n;
      const std::vector<Real> wave = {std::sin(kPiD * t), std::sin(kPiD * t - kPiD / 2)};
      EXPECT_TRUE(w.sim->SetControls(w.id, wave).ok());
      EXPECT_TRUE(w.sim->StepAll(1).ok());
      for (int k = 0; k < 2; ++k) mujoco.d->ctrl[k] = wave[k];
      mj_step(mujoco.m, mujoco.d);
    }
    EXPECT_EQ(w.sim->GetStats(w.id)->contact_count, 0);
    *mujoco_distance = norm(mujoco_centre() - mujoco_start);
    return static_cast<double>(norm(centre() - start));
  };
  double mujoco_wet = 0, mujoco_dry = 0;
  const double wet = swim(R"(density="4000" viscosity="0.1")", &mujoco_wet);
  const double dry = swim("", &mujoco_dry);
  std::printf(
      "swimmer's centre of mass after 10 s: %.4f m in the medium (MuJoCo %.4f), %.2g m "
      "without it (MuJoCo %.2g)\n",
      wet, mujoco_wet, dry, mujoco_dry);
  EXPECT_GT(wet, 0.5);
  EXPECT_NEAR(wet, mujoco_wet, 0.15 * mujoco_wet);  // MuJoCo's RK4 itself drifts 3 cm when dry
  EXPECT_LT(dry, 5e-3);
}

// A keyframe is MuJoCo's state: reset to it, every body of the file (merged, on a chain of light
// bodies, on a universal or generic joint, on a ball, a floating base) has the pose and
// velocity libmujoco gives the same keyframe (mj_resetDataKeyframe, mj_forward), its exact
// joints report MuJoCo's qpos, and its controls are MuJoCo's (clamped to ctrlrange, with a
// warning, and dropped for an actuator Axion skipped).
// MuJoCo's mocap bodies: a block welded to a mocap "hand" follows it along a circle, and a
// paddle on a second mocap body pushes a ball along the floor, against libmujoco driven the
// same way (mocap_pos each step). Axion's weld and contacts are rigid and MuJoCo's soft: its
// default solref lets the block trail the hand by 2.5 cm at 0.63 m/s and the ball run up to
// 2.3 cm ahead of the paddle, which bounds the difference.
TEST(MjcfMocapTest, MocapBodiesMovedEachStepAsInMuJoCo) {
  const std::string path = WriteTempModel("mocap.xml", R"(<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1"/>
    <body name="hand" mocap="true" pos="0 0 1">
      <geom type="box" size="0.05 0.05 0.05" contype="0" conaffinity="0"/>
    </body>
    <body name="block" pos="0.2 0 1" euler="0 0 30"><freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="1"/></body>
    <body name="paddle" mocap="true" pos="-0.3 1 0.1">
      <geom type="box" size="0.05 0.2 0.1" friction="0.5"/>
    </body>
    <body name="ball" pos="0 1 0.05"><freejoint/>
      <geom type="sphere" size="0.05" mass="0.5" friction="0.5"/></body>
  </worldbody>
  <equality><weld body1="hand" body2="block"/></equality>
  <keyframe><key name="raised" mpos="0.1 0.2 1.5  -0.3 1 0.1"/></keyframe>
</mujoco>)");
  SideBySide s = LoadSideBySide(path);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s.imported.model.mocap_bodies.size(), 2u);
  EXPECT_EQ(s.w.model->FindMocapBody("paddle"), 1);
  mjModel* m = s.mujoco->m;
  mjData* d = s.mujoco->d;
  ASSERT_EQ(m->nmocap, 2);
  const int block = s.w.model->FindBody("block"), ball = s.w.model->FindBody("ball");
  const int mj_block = mj_name2id(m, mjOBJ_BODY, "block"),
            mj_ball = mj_name2id(m, mjOBJ_BODY, "ball");
  double worst_block = 0, worst_ball = 0;
  const int steps = 400;
  for (int k = 1; k <= steps; ++k) {
    const double t = k * 0.005;
    // the hand on a circle of 0.2 m in 2 s; the paddle at 0.4 m/s along x
    const double hand[3] = {0.2 * std::sin(kPi * t), 0.2 - 0.2 * std::cos(kPi * t), 1.0};
    const double paddle_x = -0.3 + 0.4 * t;
    std::vector<Real> poses = {hand[0], hand[1], hand[2], 1, 0, 0, 0, paddle_x, 1, 0.1, 1, 0, 0, 0};
    ASSERT_TRUE(s.w.sim->SetMocapPoses(s.w.id, poses).ok());
    ASSERT_TRUE(s.w.sim->Step(std::vector<WorldId>{s.w.id}).ok());
    for (int i = 0; i < 3; ++i) d->mocap_pos[i] = hand[i];
    d->mocap_pos[3] = paddle_x;
    mj_step(m, d);
    const BodyState state = *s.w.sim->GetBodyState(s.w.id);
    for (int i = 0; i < 3; ++i) {
      worst_block =
          std::max(worst_block, std::abs(state.pose[7 * block + i] - d->xpos[3 * mj_block + i]));
      worst_ball =
          std::max(worst_ball, std::abs(state.pose[7 * ball + i] - d->xpos[3 * mj_ball + i]));
    }
    // the weld holds the block at its start offset from the hand, rigidly
    ASSERT_NEAR(state.pose[7 * block] - hand[0], 0.2, 1e-6) << "step " << k;
    ASSERT_NEAR(state.pose[7 * block + 2], 1.0, 1e-6) << "step " << k;
  }
  std::printf("block against MuJoCo's at most %.2e m, ball %.2e m over %d steps\n", worst_block,
              worst_ball, steps);
  EXPECT_LT(worst_block, 0.03);
  EXPECT_LT(worst_ball, 0.03);
  // the paddle (its face at x = 0.55 by now) pushed the ball from x = 0 along
  EXPECT_GT(s.w.sim->GetBodyState(s.w.id)->pose[7 * ball], 0.55 + 0.05 - 1e-3);

  // the key's mocap poses, in both
  ASSERT_TRUE(s.w.sim->Reset(s.w.id, "raised").ok());
  mj_resetDataKeyframe(m, d, 0);
  for (int k = 0; k < 200; ++k) {
    ASSERT_TRUE(s.w.sim->Step(std::vector<WorldId>{s.w.id}).ok());
    mj_step(m, d);
  }
  const BodyState raised = *s.w.sim->GetBodyState(s.w.id);
  EXPECT_NEAR(raised.pose[7 * block], 0.3, 1e-6);
  EXPECT_NEAR(raised.pose[7 * block + 1], 0.2, 1e-6);
  EXPECT_NEAR(raised.pose[7 * block + 2], 1.5, 1e-6);
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(raised.pose[7 * block + i], d->xpos[3 * mj_block + i], 0.01);
}

// A body hinged below a mocap body touches the mocap body's geoms: MuJoCo puts a mocap body in
// the world's weld group, and its parent filter spares pairs with the world. A flap hinged beside
// a mocap block, leaning towards it, falls onto the block's top edge and rests there, in both.
TEST(MjcfMocapTest, BodiesHingedBelowAMocapBodyTouchIt) {
  const std::string path = WriteTempModel("mocap_flap.xml", R"(<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <body name="hand" mocap="true" pos="0 0 1">
      <geom type="box" size="0.1 0.1 0.1"/>
      <body name="flap" pos="0 0.15 0" euler="10 0 0">
        <joint name="hinge" type="hinge" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.02" mass="0.2"/>
      </body>
    </body>
  </worldbody>
</mujoco>)");
  SideBySide s = LoadSideBySide(path);  // no warning
  ASSERT_TRUE(s.ok());
  mjModel* m = s.mujoco->m;
  mjData* d = s.mujoco->d;
  const int flap = s.w.model->FindBody("flap");
  const int mj_flap = mj_name2id(m, mjOBJ_BODY, "flap");
  for (int k = 0; k < 400; ++k) {
    ASSERT_TRUE(s.w.sim->Step(std::vector<WorldId>{s.w.id}).ok());
    mj_step(m, d);
  }
  // the flap's tip: it came to rest leaning on the block's top edge (y = 0.1, z = 1.1), not
  // hanging below its hinge
  const BodyState state = *s.w.sim->GetBodyState(s.w.id);
  const Real* pose = &state.pose[7 * flap];
  const Vec3 tip = Vec3{pose[0], pose[1], pose[2]} +
                   rotate(Quat{pose[3], pose[4], pose[5], pose[6]}, Vec3{0, 0, 0.3});
  const double* xmat = d->xmat + 9 * mj_flap;
  const double* xpos = d->xpos + 3 * mj_flap;
  const Vec3 mujoco_tip{xpos[0] + 0.3 * xmat[2], xpos[1] + 0.3 * xmat[5], xpos[2] + 0.3 * xmat[8]};
  std::printf("flap tip at (%.4f, %.4f), MuJoCo's at (%.4f, %.4f)\n", tip.y, tip.z, mujoco_tip.y,
              mujoco_tip.z);
  EXPECT_GT(s.w.sim->GetStats(s.w.id)->contact_count, 0);
  EXPECT_GT(d->ncon, 0);
  EXPECT_GT(tip.z, 1.1);
  EXPECT_LT(tip.y, 0.1);
  EXPECT_NEAR(tip.y, mujoco_tip.y, 0.01);
  EXPECT_NEAR(tip.z, mujoco_tip.z, 0.01);
  EXPECT_LT(norm(load3(&state.velocity[6 * flap])) + norm(load3(&state.velocity[6 * flap + 3])),
            1e-3);  // at rest
}

TEST(MjcfKeyframeTest, ResetToAKeyGivesMuJoCosStateOfEveryBody) {
  const std::string path = WriteTempModel("keyframes.xml", R"(<mujoco>
  <option gravity="0 0 0"/>
  <worldbody>
    <site name="target" pos="1 2 0.5" zaxis="0 1 1"/>
    <body name="base" pos="0.1 0.2 1" euler="10 20 30">
      <freejoint name="root"/>
      <geom type="box" size="0.2 0.1 0.05"/>
      <body name="arm" pos="0.3 0 0" euler="0 30 0">
        <joint name="shoulder" axis="0 1 0" pos="-0.05 0 0" ref="10"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        <body name="forearm" pos="0.3 0 0">
          <joint name="elbow_a" axis="0 0 1"/>
          <joint name="elbow_b" axis="0 1 0" pos="0.02 0 0"/>
          <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.025"/>
          <body name="hand" pos="0.25 0.01 0" euler="0 0 40"><geom type="sphere" size="0.04"/>
            <site name="fingertip" pos="0.05 0 0.01" euler="0 30 0"/></body>
        </body>
      </body>
      <body name="thigh" pos="-0.3 0 0">
        <joint name="hip" type="ball" pos="0.02 0 0"/>
        <geom type="capsule" fromto="0 0 0 -0.3 0 0" size="0.03"/>
        <body name="shin" pos="-0.3 0 0" euler="15 0 0">
          <joint name="knee_slide" type="slide" axis="1 0 0"/>
          <joint name="knee" axis="0 1 1" pos="0.01 0.02 0"/>
          <geom type="box" size="0.1 0.03 0.03"/>
          <site name="toe" type="capsule" fromto="0.1 0 0 0.1 0.05 0.02" size="0.01"/>
        </body>
      </body>
      <body name="wrist" pos="0 0.3 0">
        <joint name="w1" axis="1 0 0"/><joint name="w2" axis="0 1 0"/><joint name="w3" axis="0 0 1"/>
        <geom type="box" size="0.05 0.04 0.03"/>
        <site pos="0 0 0.04"/>
      </body>
      <body name="head" pos="0 -0.3 0" euler="0 0 20">
        <joint name="n1" axis="0 0 1" pos="0 0 0.01"/><joint name="n2" axis="0 1 0" pos="0 0 0.01"/>
        <geom type="sphere" size="0.05"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="shoulder_motor" joint="shoulder" ctrlrange="-1 1" ctrllimited="true"/>
    <motor name="hip_motor" joint="hip"/>
    <position name="elbow_servo" joint="elbow_a" kp="10" ctrlrange="-0.5 0.5" ctrllimited="true"/>
  </actuator>
  <keyframe>
    <key name="reach" time="1.5"
         qpos="0.5 -0.2 1.3 0.9 0.1 -0.3 0.2  0.6  0.4 -0.7  0.8 0.3 -0.2 0.4  0.05 0.9  0.3 -0.4 0.5  0.35 -0.6"
         qvel="0.1 -0.2 0.3 0.5 -0.4 0.6  1.1  0.7 -0.9  0.4 0.3 -0.8  0.2 1.3  0.6 -0.5 0.9  0.8 -0.3"
         ctrl="0.5 3 0.7"/>
    <key qvel="0 0 0 0 0 0  -2  0 0  0 0 0  0 0  0 0 0  0 0"/>
  </keyframe>
</mujoco>)");
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  bool clamped = false;
  for (const std::string& line : imported->warnings)
    clamped = clamped || line.find(
                             "ctrl of actuator 'elbow_servo' (0.7) lies outside its "
                             "ctrlrange and was clamped to 0.5") != std::string::npos;
  EXPECT_TRUE(clamped);
  const ModelDesc& desc = imported->model;
  ASSERT_EQ(desc.keyframes.size(), 2u);
  ASSERT_EQ(desc.actuators.size(), 3u);  // the ball's motor too
  World w = MakeWorld(desc);
  ASSERT_NE(w.sim, nullptr);
  MuJoCoRun mujoco(path);
  ASSERT_NE(mujoco.m, nullptr) << mujoco.load_error;
  ASSERT_EQ(mujoco.m->nkey, 2);

  double body_error = 0, qpos_error = 0, generic_gap = 0;  // largest differences, printed
  for (int key = 0; key < 2; ++key) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(w.sim->Reset(w.id, key == 0 ? "reach" : "1").ok());
    mj_resetDataKeyframe(mujoco.m, mujoco.d, key);
    mj_forward(mujoco.m, mujoco.d);
    EXPECT_EQ(w.sim->GetStats(w.id)->time, mujoco.d->time);
    const BodyState state = *w.sim->GetBodyState(w.id);
    for (const ImportResult::SourceBody& source : imported->source_bodies) {
      SCOPED_TRACE(source.name);
      const int id = mj_name2id(mujoco.m, mjOBJ_BODY, source.name.c_str());
      ASSERT_GE(id, 1);
      ASSERT_NE(source.body, kWorldBody);
      const Vec3 carrier = load3(&state.pose[7 * source.body]);
      const Quat carrier_quat = load_quat(&state.pose[7 * source.body + 3]);
      const Vec3 pos = carrier + rotate(carrier_quat, source.offset.pos);
      const Quat quat = carrier_quat * source.offset.quat;
      const Vec3 linear = load3(&state.velocity[6 * source.body]) +
                          cross(load3(&state.velocity[6 * source.body + 3]), pos - carrier);
      mjtNum velocity[6];
      mj_objectVelocity(mujoco.m, mujoco.d, mjOBJ_XBODY, id, velocity, 0);
      const Quat mj_quat{mujoco.d->xquat[4 * id], mujoco.d->xquat[4 * id + 1],
                         mujoco.d->xquat[4 * id + 2], mujoco.d->xquat[4 * id + 3]};
      for (int k = 0; k < 3; ++k) {
        body_error = std::max({body_error, std::abs(pos[k] - mujoco.d->xpos[3 * id + k]),
                               std::abs(linear[k] - velocity[3 + k]),
                               std::abs(state.velocity[6 * source.body + 3 + k] - velocity[k])});
        EXPECT_NEAR(pos[k], mujoco.d->xpos[3 * id + k], 1e-12) << k;
        EXPECT_NEAR(state.velocity[6 * source.body + 3 + k], velocity[k], 1e-12) << k;
        EXPECT_NEAR(linear[k], velocity[3 + k], 1e-12) << k;
        // the same rotation (either sign of the quaternion): each axis turned alike
        const Vec3 axis{k == 0 ? 1.0 : 0.0, k == 1 ? 1.0 : 0.0, k == 2 ? 1.0 : 0.0};
        EXPECT_LT(norm(rotate(quat, axis) - rotate(mj_quat, axis)), 1e-12) << k;
      }
    }
    // every site where MuJoCo has it (site_xpos, site_xmat)
    ASSERT_EQ(imported->source_sites.size(), static_cast<size_t>(mujoco.m->nsite));
    for (int id = 0; id < mujoco.m->nsite; ++id) {
      const ImportResult::SourceBody& site = imported->source_sites[id];
      SCOPED_TRACE(site.name);
      Pose pose = site.offset;  // a static site's offset is its world pose
      if (site.body != kWorldBody) {
        const Vec3 carrier = load3(&state.pose[7 * site.body]);
        const Quat carrier_quat = load_quat(&state.pose[7 * site.body + 3]);
        pose = {carrier + rotate(carrier_quat, site.offset.pos), carrier_quat * site.offset.quat};
      }
      for (int k = 0; k < 3; ++k) {
        body_error = std::max(body_error, std::abs(pose.pos[k] - mujoco.d->site_xpos[3 * id + k]));
        EXPECT_NEAR(pose.pos[k], mujoco.d->site_xpos[3 * id + k], 1e-12) << k;
        const Vec3 column = rotate(pose.quat, unit_axis(k));  // the site's axis k in the world
        for (int r = 0; r < 3; ++r)
          EXPECT_NEAR(column[r], mujoco.d->site_xmat[9 * id + 3 * r + k], 1e-12) << r << k;
      }
    }
    EXPECT_EQ(imported->source_sites[0].name, "target");
    EXPECT_EQ(imported->source_sites[3].name, "wrist_site1");  // unnamed: its body's first
    // the joints that are MuJoCo's own report its coordinates (the merged wrist's and head's
    // generic joints measure a rotation vector instead)
    const JointState joints = *w.sim->GetJointState(w.id);
    // ... and the file's coordinates are MuJoCo's qpos and qvel, merged hinges solved exactly
    absl::StatusOr<FileCoordinates> file = FileJointCoordinates(*imported, *w.model, state, joints);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_EQ(file->position.size(), static_cast<size_t>(mujoco.m->nq));
    ASSERT_EQ(file->velocity.size(), static_cast<size_t>(mujoco.m->nv));
    for (int k = 0; k < mujoco.m->nq; ++k) {
      qpos_error = std::max(qpos_error, std::abs(file->position[k] - mujoco.d->qpos[k]));
      EXPECT_NEAR(file->position[k], mujoco.d->qpos[k], 1e-12) << k;
    }
    for (int k = 0; k < mujoco.m->nv; ++k) {
      qpos_error = std::max(qpos_error, std::abs(file->velocity[k] - mujoco.d->qvel[k]));
      EXPECT_NEAR(file->velocity[k], mujoco.d->qvel[k], 1e-12) << k;
    }
    // the merged hinges' own coordinates (rotation vector components) against MuJoCo's angles
    for (const char* name : {"w1", "w2", "w3", "n1", "n2"}) {
      for (const ImportResult::SourceJoint& j : imported->source_joints) {
        if (j.name != name) continue;
        const int mj = mj_name2id(mujoco.m, mjOBJ_JOINT, name);
        generic_gap =
            std::max(generic_gap,
                     std::abs(joints.position[w.model->joint_position_offset()[j.joint] + j.dof] -
                              mujoco.d->qpos[mujoco.m->jnt_qposadr[mj]]));
      }
    }
    ASSERT_EQ(file->position_offset.size(), imported->source_joints.size());
    EXPECT_EQ(file->position_offset.back(), mujoco.m->jnt_qposadr[mujoco.m->njnt - 1]);
    EXPECT_EQ(file->velocity_count.front(), 6);  // the free joint's
    for (const char* name : {"shoulder", "elbow_a", "elbow_b", "knee_slide", "knee"}) {
      SCOPED_TRACE(name);
      const ImportResult::SourceJoint* source = nullptr;
      for (const ImportResult::SourceJoint& j : imported->source_joints)
        if (j.name == name) source = &j;
      ASSERT_NE(source, nullptr);
      const int mj = mj_name2id(mujoco.m, mjOBJ_JOINT, name);
      const int qpos = w.model->joint_position_offset()[source->joint] + source->dof;
      const int dof = w.model->joint_dof_offset()[source->joint] + source->dof;
      EXPECT_NEAR(joints.position[qpos], mujoco.d->qpos[mujoco.m->jnt_qposadr[mj]], 1e-12);
      EXPECT_NEAR(joints.velocity[dof], mujoco.d->qvel[mujoco.m->jnt_dofadr[mj]], 1e-12);
    }
  }
  std::printf(
      "keyframes against libmujoco: bodies' (and sites') poses and velocities within %.1e, qpos "
      "and qvel "
      "within %.1e; the merged hinges' generic coordinates differ from MuJoCo's angles by up to "
      "%.3f rad\n",
      body_error, qpos_error, generic_gap);
  EXPECT_GT(generic_gap, 1e-3);  // the solve matters
  // controls: MuJoCo's for the actuators made, the clamped one at its bound
  ASSERT_TRUE(w.sim->Reset(w.id, "reach").ok());
  EXPECT_EQ(*w.sim->GetControls(w.id), (std::vector<Real>{0.5, 3, 0.5}));

  // a key of the wrong length is an error naming it and its line
  const std::string bad =
      WriteTempModel("bad_key.xml",
                     R"(<mujoco><worldbody><body><joint/><geom size="0.1"/></body></worldbody>
  <keyframe><key name="short" qpos="0.1 0.2"/></keyframe></mujoco>)");
  absl::StatusOr<ImportResult> refused = LoadMjcfFile(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string(refused.status().message())
                .find("bad_key.xml:2: key 'short': attribute 'qpos': expected 1 numbers, got 2"),
            std::string::npos)
      << refused.status();
}

// Sensors read what MuJoCo's read at the same state: Axion's world stepped under controls with
// its mocap target moved, and at every 20th step its state (the file's qpos and qvel, the mocap
// pose, the time) written into MuJoCo's, whose mj_forward computes its sensordata. Every kind
// but touch (contact forces are each engine's own) must agree to the joints' residual.
TEST(SensorTest, SensorsReadWhatMuJoCoReadsAtTheSameState) {
  SideBySide run = LoadSideBySide(kModels + "/sensors.xml", 1);  // the head
  ASSERT_TRUE(run.ok());
  const mjModel* m = run.mujoco->m;
  mjData* d = run.mujoco->d;
  const ImportResult& file = run.imported;
  ASSERT_EQ(file.sensor_data_count, m->nsensordata);
  ASSERT_EQ(static_cast<int>(file.source_sensors.size()), m->nsensor);
  for (int i = 0; i < m->nsensor; ++i) {
    EXPECT_EQ(file.source_sensors[i].name, mj_id2name(m, mjOBJ_SENSOR, i));
    EXPECT_EQ(file.source_sensors[i].offset, m->sensor_adr[i]);
    EXPECT_EQ(file.source_sensors[i].dim, m->sensor_dim[i]);
  }
  const std::vector<Real> ctrl = {0.5, 0.05, -0.3};
  ASSERT_TRUE(run.w.sim->SetControls(run.w.id, ctrl).ok());
  for (int i = 0; i < m->nu; ++i) d->ctrl[i] = ctrl[i];
  double worst = 0;
  std::string worst_name;
  int compared = 0, hits = 0, misses = 0;  // rangefinder readings
  for (int step = 1; step <= 400; ++step) {
    if (step == 200) {  // the target moves and turns
      ASSERT_TRUE(run.w.sim->SetMocapPoses(run.w.id, {0.3, -0.1, 0.8, 0.9, 0.1, -0.3, 0.2}).ok());
    }
    ASSERT_TRUE(run.w.sim->StepAll(1).ok());
    if (step % 20 != 0) continue;
    const BodyState bodies = *run.w.sim->GetBodyState(run.w.id);
    const JointState joints = *run.w.sim->GetJointState(run.w.id);
    absl::StatusOr<FileCoordinates> state =
        FileJointCoordinates(file, *run.w.model, bodies, joints);
    ASSERT_TRUE(state.ok()) << state.status();
    ASSERT_EQ(static_cast<int>(state->position.size()), m->nq);
    for (int i = 0; i < m->nq; ++i) d->qpos[i] = state->position[i];
    for (int i = 0; i < m->nv; ++i) d->qvel[i] = state->velocity[i];
    const std::vector<Real> mocap = *run.w.sim->GetMocapPoses(run.w.id);
    for (int i = 0; i < 3; ++i) d->mocap_pos[i] = mocap[i];
    for (int i = 0; i < 4; ++i) d->mocap_quat[i] = mocap[3 + i];
    d->time = run.w.sim->GetStats(run.w.id)->time;
    mj_forward(m, d);
    absl::StatusOr<std::vector<Real>> data =
        ReadFileSensors(file, *run.w.model, *run.w.sim, run.w.id);
    ASSERT_TRUE(data.ok()) << data.status();
    ASSERT_EQ(static_cast<int>(data->size()), m->nsensordata);
    for (int i = 0; i < m->nsensor; ++i) {
      if (m->sensor_type[i] == mjSENS_TOUCH) continue;
      const int adr = m->sensor_adr[i], dim = m->sensor_dim[i];
      // a quaternion and its negative are one orientation
      double sign = 1;
      if (dim == 4) {
        double dot_product = 0;
        for (int k = 0; k < 4; ++k) dot_product += (*data)[adr + k] * d->sensordata[adr + k];
        sign = dot_product < 0 ? -1 : 1;
      }
      if (m->sensor_type[i] == mjSENS_RANGEFINDER) (d->sensordata[adr] >= 0 ? hits : misses)++;
      for (int k = 0; k < dim; ++k) {
        const double error = std::abs(sign * (*data)[adr + k] - d->sensordata[adr + k]);
        if (error > worst) worst = error, worst_name = mj_id2name(m, mjOBJ_SENSOR, i);
        EXPECT_NEAR(sign * (*data)[adr + k], d->sensordata[adr + k], 1e-9)
            << mj_id2name(m, mjOBJ_SENSOR, i) << "[" << k << "] at step " << step;
      }
      ++compared;
    }
  }
  std::printf(
      "%d sensor readings, largest difference from MuJoCo's %.2e (%s); rangefinders "
      "%d hits, %d misses\n",
      compared, worst, worst_name.c_str(), hits, misses);
  EXPECT_GT(hits, 10);
  EXPECT_GT(misses, 0);
}

// Touch sensors sum the normal force of the contacts in their zones: a 2 kg box at rest on the
// floor weighs 19.62 N on the zone around its sole, nothing on the one around its lid, and a
// cutoff caps the reading; in MuJoCo (each engine its own contacts) the same.
TEST(SensorTest, TouchWeighsABoxOnTheFloorAsMuJoCoDoes) {
  const std::string path = WriteTempModel("touch.xml", R"(<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1"/>
    <body name="box" pos="0 0 0.2" euler="0 0 20"><freejoint/>
      <geom type="box" size="0.1 0.05 0.04" mass="2"/>
      <site name="sole" type="box" size="0.11 0.06 0.01" pos="0 0 -0.04"/>
      <site name="lid" type="capsule" size="0.02 0.08" pos="0 0 0.04" euler="0 90 0"/>
      <site name="corner" type="ellipsoid" size="0.03 0.03 0.02" pos="0.1 0.05 -0.04"/>
    </body>
  </worldbody>
  <sensor>
    <touch name="sole" site="sole"/>
    <touch name="lid" site="lid"/>
    <touch name="corner" site="corner"/>
    <touch name="sole_capped" site="sole" cutoff="5"/>
  </sensor>
</mujoco>)");
  SideBySide run = LoadSideBySide(path);
  ASSERT_TRUE(run.ok());
  for (int step = 0; step < 200; ++step) {
    ASSERT_TRUE(run.w.sim->StepAll(1).ok());
    mj_step(run.mujoco->m, run.mujoco->d);
  }
  mj_forward(run.mujoco->m, run.mujoco->d);
  absl::StatusOr<std::vector<Real>> touch =
      ReadFileSensors(run.imported, *run.w.model, *run.w.sim, run.w.id);
  ASSERT_TRUE(touch.ok()) << touch.status();
  const double* mujoco = run.mujoco->d->sensordata;
  std::printf(
      "sole %.4f N (MuJoCo %.4f), lid %.4f (%.4f), corner %.4f (%.4f), capped %.4f (%.4f)\n",
      (*touch)[0], mujoco[0], (*touch)[1], mujoco[1], (*touch)[2], mujoco[2], (*touch)[3],
      mujoco[3]);
  const double weight = 2 * 9.81;
  EXPECT_NEAR((*touch)[0], weight, 1e-3 * weight);
  EXPECT_NEAR(mujoco[0], weight, 1e-2 * weight);
  EXPECT_EQ((*touch)[1], 0);
  EXPECT_EQ(mujoco[1], 0);
  // the corner's zone holds one of the four corners' contacts: a share of the weight in both
  EXPECT_GT((*touch)[2], 0.1 * weight);
  EXPECT_LT((*touch)[2], 0.5 * weight);
  EXPECT_NEAR((*touch)[2], mujoco[2], 1e-2 * weight);
  EXPECT_EQ((*touch)[3], 5);
  EXPECT_EQ(mujoco[3], 5);
}

// An accelerometer reads its site's acceleration less gravity over the world's last step: a
// tilted one on a box at rest reads g upwards in its own axes, one on a freely falling ball
// nothing, and one on an arm spinning at 3 rad/s about a vertical hinge (no gravity along the
// arm) the centripetal pull 9 r towards the axis; in MuJoCo, whose sensordata after mj_step
// holds the acceleration of the same step, the same.
TEST(SensorTest, AccelerometerReadsGravityAtRestAndTheCentripetalPull) {
  const std::string path = WriteTempModel("accelerometer.xml", R"(<mujoco>
  <option timestep="0.001"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1"/>
    <body name="box" pos="0 0 0.05"><freejoint/>
      <geom type="box" size="0.1 0.1 0.05" mass="2"/>
      <site name="tilted" pos="0.05 0 0" euler="30 0 0"/>
    </body>
    <body name="ball" pos="1 0 3"><freejoint/><geom size="0.1" mass="1"/>
      <site name="falling" euler="0 45 0"/></body>
    <body name="arm" pos="0 2 1">
      <joint name="spin" type="hinge" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.02" mass="1"/>
      <site name="tip" pos="0.4 0 0"/>
    </body>
  </worldbody>
  <keyframe><key qvel="0 0 0 0 0 0  0 0 0 0 0 0  3"/></keyframe>
  <sensor>
    <accelerometer name="tilted" site="tilted"/>
    <accelerometer name="falling" site="falling"/>
    <accelerometer name="tip" site="tip"/>
    <framelinacc name="tip_world" objtype="site" objname="tip"/>
    <frameangacc name="arm_spin" objtype="xbody" objname="arm"/>
    <framelinacc name="box_world" objtype="xbody" objname="box"/>
  </sensor>
</mujoco>)");
  SideBySide run = LoadSideBySide(path);
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(run.w.sim->Reset(run.w.id, "0").ok());
  mj_resetDataKeyframe(run.mujoco->m, run.mujoco->d, 0);
  // before any step no acceleration is known: gravity alone, as at rest
  absl::StatusOr<std::vector<Real>> reset =
      ReadFileSensors(run.imported, *run.w.model, *run.w.sim, run.w.id);
  ASSERT_TRUE(reset.ok()) << reset.status();
  EXPECT_NEAR((*reset)[5], 9.81 * std::cos(kPi / 4), 1e-9);
  for (int step = 0; step < 300; ++step) {
    ASSERT_TRUE(run.w.sim->StepAll(1).ok());
    mj_step(run.mujoco->m, run.mujoco->d);
  }
  absl::StatusOr<std::vector<Real>> data =
      ReadFileSensors(run.imported, *run.w.model, *run.w.sim, run.w.id);
  ASSERT_TRUE(data.ok()) << data.status();
  const double* mujoco = run.mujoco->d->sensordata;
  std::printf(
      "tilted %.5f %.5f %.5f (MuJoCo %.5f %.5f %.5f); falling %.2e; tip %.5f %.5f %.5f "
      "(MuJoCo %.5f %.5f %.5f)\n",
      (*data)[0], (*data)[1], (*data)[2], mujoco[0], mujoco[1], mujoco[2],
      std::abs((*data)[3]) + std::abs((*data)[4]) + std::abs((*data)[5]), (*data)[6], (*data)[7],
      (*data)[8], mujoco[6], mujoco[7], mujoco[8]);
  // at rest: g in the site's axes (turned 30 degrees about x)
  const double expected_tilted[3] = {0, 9.81 * std::sin(kPi / 6), 9.81 * std::cos(kPi / 6)};
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR((*data)[k], expected_tilted[k], 1e-6) << k;
    EXPECT_NEAR(mujoco[k], expected_tilted[k], 2e-3) << k;
  }
  // free fall: nothing
  for (int k = 3; k < 6; ++k) {
    EXPECT_NEAR((*data)[k], 0, 1e-9) << k;
    EXPECT_NEAR(mujoco[k], 0, 1e-9) << k;
  }
  // the spinning tip: w^2 r towards the hinge at its own rate w, gravity's g along the site's
  // z. Backward Euler slows the free spin (w 0.2% below 3 rad/s after 0.3 s, the tangential
  // reading its deceleration times r), where MuJoCo's semi-implicit Euler keeps it: within
  // 0.5% of MuJoCo's 3.6 m/s^2
  const double w = (*run.w.sim->GetJointState(run.w.id)).velocity[0];
  EXPECT_LT(w, 3);
  EXPECT_GT(w, 2.99);
  EXPECT_NEAR((*data)[6], -w * w * 0.4, 1e-3 * w * w * 0.4);
  EXPECT_NEAR((*data)[7], 0, 2e-3);
  EXPECT_NEAR((*data)[8], 9.81, 1e-9);
  EXPECT_NEAR((*data)[6], mujoco[6], 5e-3 * 3.6);
  EXPECT_NEAR(mujoco[6], -3.6, 1e-9);
  // the frame accelerations: the tip's in the world's axes (the arm along x at its angle), the
  // arm's angular deceleration, the resting box's g upwards, as MuJoCo's
  const double angle = (*run.w.sim->GetJointState(run.w.id)).position[0];
  EXPECT_NEAR((*data)[9], -w * w * 0.4 * std::cos(angle), 2e-3);
  EXPECT_NEAR((*data)[10], -w * w * 0.4 * std::sin(angle), 2e-3);
  EXPECT_NEAR((*data)[11], 9.81, 1e-9);
  EXPECT_LT((*data)[14], 0);  // backward Euler's slowing of the free spin: -0.02 rad/s^2
  EXPECT_GT((*data)[14], -0.05);
  EXPECT_NEAR(mujoco[14], 0, 1e-9);
  for (int k = 15; k < 18; ++k) EXPECT_NEAR((*data)[k], k == 17 ? 9.81 : 0, 1e-6) << k;
  for (int k = 15; k < 18; ++k) EXPECT_NEAR(mujoco[k], k == 17 ? 9.81 : 0, 2e-3) << k;
}

// Force and torque sensors read what a body and its descendants receive from its parent, in the
// site's axes: a two-link arm held out by servos carries its whole weight (and that weight's
// moment) at the shoulder and the forearm's at the elbow; a box on a vertical slide resting on
// the floor receives nothing from its slide. In MuJoCo (cfrc_int, its own dynamics) the same at
// rest, and while the arm swings up after its shoulder's target moves (MuJoCo's sensordata
// after mj_step: the step's start state, ours its end; both the step's acceleration).
TEST(SensorTest, ForceAndTorqueReadTheParentsPullAsMuJoCoDoes) {
  const std::string path = WriteTempModel("force_torque.xml", R"(<mujoco>
  <option timestep="0.001"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1"/>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 -1 0" damping="2"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.03" mass="1" contype="0" conaffinity="0"/>
      <site name="shoulder" euler="0 0 20"/>
      <body name="lower" pos="0.5 0 0">
        <joint name="elbow" type="hinge" axis="0 -1 0" damping="1"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5" contype="0" conaffinity="0"/>
        <site name="elbow" pos="0.02 0 0"/>
      </body>
    </body>
    <body name="crate" pos="1 1 0.1">
      <joint name="lift" type="slide" axis="0 0 1"/>
      <geom type="box" size="0.1 0.1 0.1" mass="2"/>
      <site name="crate"/>
    </body>
    <body name="spinner" pos="3 0 100"><freejoint/>
      <geom type="box" size="0.3 0.1 0.05" mass="2"/>
      <site name="spinner" pos="0.1 0.05 0" euler="10 20 30"/>
    </body>
  </worldbody>
  <keyframe><key qvel="0 0 0  0 0 0 3 -2 1"/></keyframe>
  <actuator>
    <position name="hold_shoulder" joint="shoulder" kp="400"/>
    <position name="hold_elbow" joint="elbow" kp="200"/>
  </actuator>
  <sensor>
    <force name="shoulder_force" site="shoulder"/>
    <torque name="shoulder_torque" site="shoulder"/>
    <force name="elbow_force" site="elbow"/>
    <torque name="elbow_torque" site="elbow"/>
    <force name="crate_force" site="crate"/>
    <force name="spinner_force" site="spinner"/>
    <torque name="spinner_torque" site="spinner"/>
  </sensor>
</mujoco>)");
  SideBySide run = LoadSideBySide(path);
  ASSERT_TRUE(run.ok());
  mjModel* m = run.mujoco->m;
  mjData* d = run.mujoco->d;
  auto axion_data = [&] {
    absl::StatusOr<std::vector<Real>> data =
        ReadFileSensors(run.imported, *run.w.model, *run.w.sim, run.w.id);
    EXPECT_TRUE(data.ok()) << data.status();
    return data.ok() ? *data : std::vector<Real>(m->nsensordata, 0);
  };
  ASSERT_TRUE(run.w.sim->Reset(run.w.id, "0").ok());
  mj_resetDataKeyframe(m, d, 0);
  // a free body receives nothing: falling, m (a - g) = 0; tumbling, I alpha + w x I w = 0 to
  // the step's order (alpha is the step's mean, w x I w the end's: 0.3% of the gyroscopic
  // torque's 0.3 N m at 1 ms)
  double spinner_force = 0, spinner_torque = 0;
  for (int step = 0; step < 3000; ++step) {
    if (step > 0 && step % 100 == 0) {
      const std::vector<Real> now = axion_data();
      for (int i = 15; i < 18; ++i) spinner_force = std::max(spinner_force, std::abs(now[i]));
      for (int i = 18; i < 21; ++i) spinner_torque = std::max(spinner_torque, std::abs(now[i]));
    }
    ASSERT_TRUE(run.w.sim->StepAll(1).ok());
    mj_step(m, d);
  }
  std::vector<Real> rest = axion_data();
  std::printf(
      "at rest: shoulder force %.4f %.4f %.4f (MuJoCo %.4f %.4f %.4f), torque %.4f %.4f "
      "%.4f (%.4f %.4f %.4f); crate %.2e (%.2e)\n",
      rest[0], rest[1], rest[2], d->sensordata[0], d->sensordata[1], d->sensordata[2], rest[3],
      rest[4], rest[5], d->sensordata[3], d->sensordata[4], d->sensordata[5],
      std::abs(rest[12]) + std::abs(rest[13]) + std::abs(rest[14]),
      std::abs(d->sensordata[12]) + std::abs(d->sensordata[13]) + std::abs(d->sensordata[14]));
  std::printf("tumbling free body: force at most %.2e N, torque %.2e N m\n", spinner_force,
              spinner_torque);
  EXPECT_LT(spinner_force, 1e-9);
  EXPECT_LT(spinner_torque, 3e-3);
  // the arm's weight, 1.5 g, upwards in the shoulder site's axes (turned 20 degrees about z
  // on an arm that sags by a few milliradians), its moment about the shoulder's y axis
  EXPECT_NEAR(std::hypot(rest[0], rest[1], rest[2]), 1.5 * 9.81, 1e-3);
  EXPECT_NEAR(rest[2], 1.5 * 9.81, 0.05);
  EXPECT_NEAR(std::hypot(rest[6], rest[7], rest[8]), 0.5 * 9.81, 1e-3);
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(rest[i], d->sensordata[i], 2e-3) << i;
  for (int i = 12; i < 15; ++i) {
    EXPECT_NEAR(rest[i], 0, 1e-2) << i;
    EXPECT_NEAR(d->sensordata[i], 0, 1e-2) << i;
  }
  // the shoulder's target raised by 0.3 rad: the arm swings up, the servo's pull (up to 120
  // N m) and the accelerations in the readings. The engines' servos differ at first order in
  // the step (MuJoCo's explicit, Axion's implicit: kp h qdot, several N m at 1 ms), and so do
  // their trajectories and readings, by a few percent of the largest
  double worst = 0, largest = 0;
  d->ctrl[0] = 0.3;
  ASSERT_TRUE(run.w.sim->SetControls(run.w.id, {0.3, 0}).ok());
  for (int step = 0; step < 100; ++step) {
    ASSERT_TRUE(run.w.sim->StepAll(1).ok());
    mj_step(m, d);
    const std::vector<Real> now = axion_data();
    for (int i = 0; i < 12; ++i) {
      worst = std::max(worst, std::abs(now[i] - d->sensordata[i]));
      largest = std::max(largest, std::abs(d->sensordata[i]));
    }
  }
  std::printf(
      "swinging: largest difference from MuJoCo %.3f against readings up to %.1f (N or "
      "N m) over 100 steps\n",
      worst, largest);
  EXPECT_GT(largest, 50);
  EXPECT_LT(worst, 0.1 * largest);
}

// Spatial tendons (tests/io/models/spatial_tendons.xml: straight paths, wraps around two
// cylinders and a sphere with and without side sites, a side site inside its cylinder, a
// pulley, over two hinges and a ball joint): at states the arm passes through under its motors,
// written into MuJoCo's qpos and qvel, every tendon's length and rate is MuJoCo's ten_length
// and ten_velocity (the rate checks the Jacobian along the velocity taken), and the file's
// tendon and actuator sensors read MuJoCo's sensordata.
TEST(SpatialTendonTest, LengthsAndRatesAreMuJoCosAtTheSameState) {
  // without the tendons' limits, so that the arm reaches the states where each path wraps
  std::ifstream in(kModels + "/spatial_tendons.xml");
  std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  xml = absl::StrReplaceAll(xml, {{"limited=\"true\"", "limited=\"false\""}});
  SideBySide run = LoadSideBySide(WriteTempModel("spatial_tendons_free.xml", xml));
  ASSERT_TRUE(run.ok());
  const mjModel* m = run.mujoco->m;
  mjData* d = run.mujoco->d;
  const ModelDesc& desc = run.imported.model;
  ASSERT_EQ(static_cast<int>(desc.tendons.size()), m->ntendon);
  for (int t = 0; t < m->ntendon; ++t) {
    const TendonDesc& tendon = desc.tendons[t];
    EXPECT_EQ(tendon.name, mj_id2name(m, mjOBJ_TENDON, t));
    EXPECT_EQ(static_cast<int>(tendon.path.size()), m->tendon_num[t]);
    EXPECT_EQ(tendon.stiffness, m->tendon_stiffness[t]);
    EXPECT_EQ(tendon.limited, m->tendon_limited[t] != 0);
  }
  // the springs' rest lengths, at the initial poses, against MuJoCo's at qpos0
  absl::StatusOr<std::vector<Real>> rest = run.w.sim->GetTendonStates(run.w.id);
  ASSERT_TRUE(rest.ok()) << rest.status();
  mj_forward(m, d);
  for (int t = 0; t < m->ntendon; ++t) {
    EXPECT_NEAR((*rest)[2 * t], m->tendon_lengthspring[t], 1e-12) << desc.tendons[t].name;
    EXPECT_NEAR((*rest)[2 * t], d->ten_length[t], 1e-12) << desc.tendons[t].name;
  }
  double worst_length = 0, worst_rate = 0, worst_sensor = 0, swing = 0;
  std::vector<int> wrapped(m->ntendon, 0);
  std::mt19937 random(7);
  std::uniform_real_distribution<double> control(-1, 1);
  for (int step = 1; step <= 1500; ++step) {
    if (step % 100 == 1) {
      std::vector<Real> ctrl(m->nu);
      for (int i = 0; i < m->nu; ++i) ctrl[i] = m->actuator_ctrlrange[2 * i + 1] * control(random);
      ctrl[3] = 0.25 * control(random);  // the servo's target length
      ASSERT_TRUE(run.w.sim->SetControls(run.w.id, ctrl).ok());
    }
    ASSERT_TRUE(run.w.sim->StepAll(1).ok());
    if (step % 10 != 0) continue;
    // the bodies placed by their joints (a step's end velocities meet the joints' velocity
    // constraints at its start configuration, which leaves the bodies' relative twists
    // O(h w^2) off the joints' axes; MuJoCo's qvel has no such part)
    const JointState joints = *run.w.sim->GetJointState(run.w.id);
    ASSERT_TRUE(run.w.sim->SetJointState(run.w.id, joints).ok());
    const BodyState bodies = *run.w.sim->GetBodyState(run.w.id);
    absl::StatusOr<FileCoordinates> state =
        FileJointCoordinates(run.imported, *run.w.model, bodies, joints);
    ASSERT_TRUE(state.ok()) << state.status();
    for (int i = 0; i < m->nq; ++i) d->qpos[i] = state->position[i];
    for (int i = 0; i < m->nv; ++i) d->qvel[i] = state->velocity[i];
    swing = std::max({swing, std::abs(d->qpos[0]), std::abs(d->qpos[1])});
    mj_forward(m, d);
    absl::StatusOr<std::vector<Real>> tendons = run.w.sim->GetTendonStates(run.w.id);
    ASSERT_TRUE(tendons.ok()) << tendons.status();
    for (int t = 0; t < m->ntendon; ++t) {
      EXPECT_NEAR((*tendons)[2 * t], d->ten_length[t], 1e-10)
          << desc.tendons[t].name << " at step " << step;
      EXPECT_NEAR((*tendons)[2 * t + 1], d->ten_velocity[t], 1e-9)
          << desc.tendons[t].name << " at step " << step;
      worst_length = std::max(worst_length, std::abs((*tendons)[2 * t] - d->ten_length[t]));
      worst_rate = std::max(worst_rate, std::abs((*tendons)[2 * t + 1] - d->ten_velocity[t]));
      // MuJoCo's path points of the tendon: more than its sites where it wraps
      int sites = 0;
      for (int k = 0; k < m->tendon_num[t]; ++k)
        sites += m->wrap_type[m->tendon_adr[t] + k] == mjWRAP_SITE;
      if (d->ten_wrapnum[t] > sites + (desc.tendons[t].name == "pulley" ? 1 : 0)) ++wrapped[t];
    }
    // the file's tendon and actuator sensors read the same
    absl::StatusOr<std::vector<Real>> sensors =
        ReadFileSensors(run.imported, *run.w.model, *run.w.sim, run.w.id);
    ASSERT_TRUE(sensors.ok()) << sensors.status();
    ASSERT_EQ(static_cast<int>(sensors->size()), m->nsensordata);
    for (int i = 0; i < m->nsensordata; ++i) {
      EXPECT_NEAR((*sensors)[i], d->sensordata[i], 1e-12) << "sensor value " << i;
      worst_sensor = std::max(worst_sensor, std::abs((*sensors)[i] - d->sensordata[i]));
    }
  }
  std::printf(
      "spatial tendons: largest differences from MuJoCo's %.2e m (length), %.2e m/s (rate)"
      ", %.2e (sensors); arm swung to %.2f rad; states wrapped per tendon:",
      worst_length, worst_rate, worst_sensor, swing);
  for (int t = 0; t < m->ntendon; ++t) std::printf(" %d", wrapped[t]);
  std::printf(" of 150\n");
  EXPECT_GT(swing, 0.5);
  // each wrapping tendon wrapped at some of the states, and left its shape at others
  for (const char* name : {"shoulder_flexor", "shoulder_extensor", "biarticular", "inside",
                           "wrist_flexor", "wrist_extensor"}) {
    const int t = mj_name2id(m, mjOBJ_TENDON, name);
    EXPECT_GT(wrapped[t], 0) << name;
  }
}

// The same file under its motors and servo for 1.5 s (limits on two tendons, springs on two):
// the arm's joints follow MuJoCo's, and a tendon limit met holds its bound (MuJoCo's soft limit
// gives way by a little).
TEST(SpatialTendonTest, ArmMovesUnderItsTendonsLikeMuJoCo) {
  SideBySide run = LoadSideBySide(kModels + "/spatial_tendons.xml");
  ASSERT_TRUE(run.ok());
  const mjModel* m = run.mujoco->m;
  mjData* d = run.mujoco->d;
  const std::vector<Real> ctrl = {4, 1, 2, 0.35, 0.3};
  ASSERT_TRUE(run.w.sim->SetControls(run.w.id, ctrl).ok());
  for (int i = 0; i < m->nu; ++i) d->ctrl[i] = ctrl[i];
  const int straight = mj_name2id(m, mjOBJ_TENDON, "straight");
  const int pulley = mj_name2id(m, mjOBJ_TENDON, "pulley");
  double hinge = 0, wrist = 0, swing = 0, wrist_turn = 0;
  double shortest[2] = {1e9, 1e9}, mujoco_shortest[2] = {1e9, 1e9};
  double longest[2] = {0, 0}, mujoco_longest[2] = {0, 0};
  for (int step = 1; step <= 750; ++step) {
    absl::StatusOr<FileCoordinates> state = StepBoth(run);
    ASSERT_TRUE(state.ok()) << state.status();
    for (int i = 0; i < 2; ++i) {
      hinge = std::max(hinge, std::abs(state->position[i] - d->qpos[i]));
      swing = std::max(swing, std::abs(state->position[i]));
    }
    // the wrist's relative turn between the engines (quaternions at qpos[2..5])
    double dot_product = 0;
    for (int k = 0; k < 4; ++k) dot_product += state->position[2 + k] * d->qpos[2 + k];
    wrist = std::max(wrist, 2 * std::acos(std::min(1.0, std::abs(dot_product))));
    wrist_turn = std::max(wrist_turn, 2 * std::acos(std::min(1.0, std::abs(d->qpos[2]))));
    absl::StatusOr<std::vector<Real>> tendons = run.w.sim->GetTendonStates(run.w.id);
    ASSERT_TRUE(tendons.ok());
    const int limited[2] = {straight, pulley};
    for (int k = 0; k < 2; ++k) {
      shortest[k] = std::min(shortest[k], static_cast<double>((*tendons)[2 * limited[k]]));
      longest[k] = std::max(longest[k], static_cast<double>((*tendons)[2 * limited[k]]));
      mujoco_shortest[k] = std::min(mujoco_shortest[k], d->ten_length[limited[k]]);
      mujoco_longest[k] = std::max(mujoco_longest[k], d->ten_length[limited[k]]);
    }
  }
  std::printf(
      "spatial tendon arm: largest differences from MuJoCo %.4f rad (hinges, swung to "
      "%.2f), %.4f rad (wrist, turned %.2f); straight %.5f-%.5f (MuJoCo %.5f-%.5f, range "
      "0.395-0.5), pulley %.5f-%.5f (MuJoCo %.5f-%.5f, range 0.735-1.2)\n",
      hinge, swing, wrist, wrist_turn, shortest[0], longest[0], mujoco_shortest[0],
      mujoco_longest[0], shortest[1], longest[1], mujoco_shortest[1], mujoco_longest[1]);
  EXPECT_GT(swing, 1.5);
  EXPECT_LT(hinge, 0.06);  // first order in the step: the integrators and MuJoCo's soft limits
  EXPECT_LT(wrist, 0.08);
  // both limits met: Axion holds them, MuJoCo's soft ones give way by a little
  EXPECT_NEAR(shortest[0], 0.395, 1e-6);
  EXPECT_NEAR(shortest[1], 0.735, 1e-6);
  EXPECT_LT(mujoco_shortest[0], 0.395 - 1e-5);
  EXPECT_LT(mujoco_shortest[1], 0.735 - 1e-5);
  absl::StatusOr<WorldStats> stats = run.w.sim->GetStats(run.w.id);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->flags & (kWorldNonFinite | kWorldNotConverged), 0u);
}

// The tendons' paths are evaluated in a pass of their own (world_evaluate_tendons) in the
// batch's Newton trips and inside the world-by-world finishing loop: both give the same bits.
TEST(SpatialTendonTest, NewtonFinishedWorldByWorldGivesTheSameBits) {
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(kModels + "/spatial_tendons.xml");
  ASSERT_TRUE(imported.ok()) << imported.status();
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(imported->model);
  ASSERT_TRUE(model.ok()) << model.status();
  auto run = [&](const char* trips) {
    if (trips != nullptr) setenv("AXION_BATCHED_NEWTON_TRIPS", trips, 1);
    SimulatorOptions options;
    options.backend = Backend::kCpu;
    options.threads = 2;
    std::unique_ptr<Simulator> sim = *Simulator::Create(options);
    std::vector<WorldId> ids = *sim->CreateWorlds(*model, 4);
    for (size_t w = 0; w < ids.size(); ++w) {
      const Real s = static_cast<Real>(w) - Real(1.5);
      EXPECT_TRUE(sim->SetControls(ids[w], {4 * s, 1 + s, 2 - s, Real(0.3), s}).ok());
    }
    EXPECT_TRUE(sim->StepAll(300).ok());
    std::vector<std::vector<Real>> out;
    for (WorldId id : ids) {
      out.push_back(sim->GetBodyState(id)->pose);
      out.push_back(*sim->GetTendonStates(id));
    }
    unsetenv("AXION_BATCHED_NEWTON_TRIPS");
    return out;
  };
  const std::vector<std::vector<Real>> batched = run(nullptr);
  for (const char* trips : {"0", "2"}) {
    const std::vector<std::vector<Real>> split = run(trips);
    ASSERT_EQ(split.size(), batched.size());
    for (size_t k = 0; k < split.size(); ++k)
      EXPECT_EQ(split[k], batched[k]) << "AXION_BATCHED_NEWTON_TRIPS=" << trips << ", item " << k;
  }
}

// Muscles: MuJoCo's arm26.xml (six muscles on spatial tendons over a shoulder and an elbow).
const char kArm26[] = "/usr/share/mujoco/model/tendon_arm/arm26.xml";

// arm26 loaded by both engines, its two hinges' coordinates being MuJoCo's qpos and qvel.
struct ArmSideBySide {
  ImportResult imported;
  World w;
  std::unique_ptr<MuJoCoRun> mujoco;
};
ArmSideBySide LoadArm(bool mujoco_constants) {
  ArmSideBySide s;
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(kArm26);
  EXPECT_TRUE(imported.ok()) << imported.status();
  if (!imported.ok()) return s;
  for (const std::string& warning : imported->warnings)
    EXPECT_EQ(warning.find("muscle"), std::string::npos) << warning;
  s.imported = *std::move(imported);
  s.mujoco = std::make_unique<MuJoCoRun>(kArm26);
  EXPECT_TRUE(s.mujoco->m) << s.mujoco->load_error;
  if (mujoco_constants) {
    // MuJoCo's own peak forces and length ranges, to compare the muscles' curves alone
    for (int i = 0; i < s.mujoco->m->nu; ++i) {
      MuscleDesc& muscle = s.imported.model.actuators[i].muscle;
      muscle.force = s.mujoco->m->actuator_gainprm[mjNGAIN * i + 3] / s.mujoco->m->actuator_acc0[i];
      muscle.length_range = {s.mujoco->m->actuator_lengthrange[2 * i],
                             s.mujoco->m->actuator_lengthrange[2 * i + 1]};
    }
  }
  s.w = MakeWorld(s.imported.model);
  return s;
}

// The muscles' constants as MuJoCo's compiler finds them: the peak force scale / acc0 (acc0
// from the joint-space inertia and the tendons' moment arms at qpos0) and the length range
// from a simulation pulling the muscle alone and pushing it alone.
TEST(MjcfMuscleTest, PeakForcesAndLengthRangesAreMuJoCos) {
  ArmSideBySide run = LoadArm(false);
  ASSERT_TRUE(run.mujoco && run.mujoco->m);
  const mjModel* m = run.mujoco->m;
  ASSERT_EQ(static_cast<int>(run.imported.model.actuators.size()), m->nu);
  double worst_force = 0, worst_range = 0;
  for (int i = 0; i < m->nu; ++i) {
    const ActuatorDesc& a = run.imported.model.actuators[i];
    ASSERT_EQ(a.type, ActuatorType::kMuscle) << a.name;
    EXPECT_EQ(a.name, mj_id2name(m, mjOBJ_ACTUATOR, i));
    EXPECT_EQ(a.muscle.time_activation, m->actuator_dynprm[mjNDYN * i]);
    EXPECT_EQ(a.muscle.time_deactivation, m->actuator_dynprm[mjNDYN * i + 1]);
    EXPECT_TRUE(a.ctrl_limited);
    const double force = m->actuator_gainprm[mjNGAIN * i + 3] / m->actuator_acc0[i];
    EXPECT_NEAR(a.muscle.force, force, 1e-9 * force) << a.name;
    worst_force = std::max(worst_force, std::abs(a.muscle.force / force - 1));
    const double low = m->actuator_lengthrange[2 * i], high = m->actuator_lengthrange[2 * i + 1];
    for (int k = 0; k < 2; ++k) {
      const double error = std::abs(a.muscle.length_range[k] - m->actuator_lengthrange[2 * i + k]);
      EXPECT_LT(error, 1e-3 * (high - low)) << a.name << " end " << k;
      worst_range = std::max(worst_range, error / (high - low));
    }
  }
  std::printf(
      "arm26 muscles: peak forces within %.1e of MuJoCo's (relative), length ranges within "
      "%.1e of their width\n",
      worst_force, worst_range);
}

// At states the arm passes through (angles within its limits, rates, activations and
// excitations at random), each muscle's force is MuJoCo's actuator_force and one step moves
// its activation as MuJoCo's does (with MuJoCo's peak forces and length ranges, to compare
// the curves alone).
TEST(MjcfMuscleTest, ForcesAndActivationsAreMuJoCosAtTheSameState) {
  ArmSideBySide run = LoadArm(true);
  ASSERT_TRUE(run.mujoco && run.mujoco->m && run.w.sim);
  const mjModel* m = run.mujoco->m;
  mjData* d = run.mujoco->d;
  std::mt19937 random(11);
  std::uniform_real_distribution<double> unit(0, 1), rate(-6, 6);
  double worst_force = 0, largest_force = 0, worst_activation = 0;
  int passive = 0;
  for (int trial = 0; trial < 200; ++trial) {
    mj_resetData(m, d);
    JointState joints = *run.w.sim->GetJointState(run.w.id);
    for (int j = 0; j < 2; ++j) {
      d->qpos[j] =
          m->jnt_range[2 * j] + unit(random) * (m->jnt_range[2 * j + 1] - m->jnt_range[2 * j]);
      d->qvel[j] = rate(random);
      joints.position[j] = d->qpos[j];
      joints.velocity[j] = d->qvel[j];
    }
    std::vector<Real> act(m->nu), ctrl(m->nu);
    for (int i = 0; i < m->nu; ++i) {
      d->act[i] = act[i] = trial % 4 == 0 ? 0 : unit(random);
      d->ctrl[i] = ctrl[i] = unit(random);
    }
    mj_forward(m, d);
    ASSERT_TRUE(run.w.sim->SetJointState(run.w.id, joints).ok());
    ASSERT_TRUE(run.w.sim->SetActivations(run.w.id, act).ok());
    ASSERT_TRUE(run.w.sim->SetControls(run.w.id, ctrl).ok());
    absl::StatusOr<std::vector<Real>> forces = run.w.sim->GetActuatorForces(run.w.id);
    ASSERT_TRUE(forces.ok()) << forces.status();
    for (int i = 0; i < m->nu; ++i) {
      EXPECT_NEAR((*forces)[i], d->actuator_force[i], 1e-9 * (1 + std::abs(d->actuator_force[i])))
          << "muscle " << i << " trial " << trial;
      worst_force = std::max(worst_force, std::abs((*forces)[i] - d->actuator_force[i]));
      largest_force = std::max(largest_force, std::abs(d->actuator_force[i]));
      if (trial % 4 == 0 && d->actuator_force[i] < -1) ++passive;
    }
    // one step: a+ = a + h da/dt at the step's start, both engines
    mj_step(m, d);
    ASSERT_TRUE(run.w.sim->StepAll(1).ok());
    absl::StatusOr<std::vector<Real>> after = run.w.sim->GetActivations(run.w.id);
    ASSERT_TRUE(after.ok()) << after.status();
    for (int i = 0; i < m->nu; ++i) {
      EXPECT_NEAR((*after)[i], d->act[i], 1e-12) << "muscle " << i << " trial " << trial;
      worst_activation = std::max(worst_activation, std::abs((*after)[i] - d->act[i]));
    }
  }
  std::printf(
      "arm26 muscles at 200 states: forces within %.1e N of MuJoCo's (up to %.0f N; %d passive "
      "pulls of stretched muscles at zero activation), activations after a step within %.1e\n",
      worst_force, largest_force, passive, worst_activation);
  EXPECT_GT(largest_force, 100);
  EXPECT_GT(passive, 0);
}

// Under excitations changed every 0.25 s, the arm moves as MuJoCo's does and its activations
// follow the same curves; the difference is first order in the step (the two integrators'),
// a fifth at a fifth of the step. The joints' limits are taken off (both engines given the
// length ranges MuJoCo's compiler found with them): the arm starts at both lower limits and
// the muscles drive it into them, where MuJoCo's soft limits and Axion's hard ones part the two
// trajectories by tenths of a radian within a second (ArmsLimitsHoldAgainstItsMuscles).
TEST(MjcfMuscleTest, ArmMovesUnderItsMusclesLikeMuJoCo) {
  MuJoCoRun with_limits(kArm26);
  ASSERT_TRUE(with_limits.m) << with_limits.load_error;
  std::ifstream in(kArm26);
  std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  xml = absl::StrReplaceAll(xml, {{"limited=\"true\" range=\"0 120\"", "limited=\"false\""}});
  for (int i = 0; i < with_limits.m->nu; ++i) {
    const std::string name = mj_id2name(with_limits.m, mjOBJ_ACTUATOR, i);
    xml = absl::StrReplaceAll(
        xml, {{absl::StrCat("<muscle name=\"", name, "\""),
               absl::StrFormat("<muscle name=\"%s\" lengthrange=\"%.17g %.17g\"", name,
                               with_limits.m->actuator_lengthrange[2 * i],
                               with_limits.m->actuator_lengthrange[2 * i + 1])}});
  }
  double worst[2] = {0, 0};
  for (int refine : {1, 5}) {
    const double h = 0.005 / refine;
    const std::string path = WriteTempModel(
        absl::StrCat("arm26_free_", refine, ".xml"),
        absl::StrReplaceAll(xml, {{"timestep=\"0.005\"", absl::StrCat("timestep=\"", h, "\"")}}));
    absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
    ASSERT_TRUE(imported.ok()) << imported.status();
    World w = MakeWorld(imported->model);
    MuJoCoRun mujoco(path);
    ASSERT_TRUE(mujoco.m && w.sim) << mujoco.load_error;
    const mjModel* m = mujoco.m;
    mjData* d = mujoco.d;
    ASSERT_EQ(m->jnt_limited[0], 0);
    for (int i = 0; i < m->nu; ++i) {
      EXPECT_NEAR(imported->model.actuators[i].muscle.force,
                  m->actuator_gainprm[mjNGAIN * i + 3] / m->actuator_acc0[i], 1e-9);
    }
    std::mt19937 random(5);
    std::uniform_real_distribution<double> unit(0, 0.3);
    double worst_activation = 0, swing[2] = {0, 0};
    double& worst_angle = worst[refine == 1 ? 0 : 1];
    for (int step = 0; step < 600 * refine; ++step) {
      if (step % (50 * refine) == 0) {
        std::vector<Real> ctrl(m->nu);
        for (int i = 0; i < m->nu; ++i) d->ctrl[i] = ctrl[i] = unit(random);
        ASSERT_TRUE(w.sim->SetControls(w.id, ctrl).ok());
      }
      mj_step(m, d);
      ASSERT_TRUE(w.sim->StepAll(1).ok());
      const JointState joints = *w.sim->GetJointState(w.id);
      for (int j = 0; j < 2; ++j) {
        worst_angle = std::max(worst_angle, std::abs(joints.position[j] - d->qpos[j]));
        swing[j] = std::max(swing[j], std::abs(d->qpos[j]));
      }
      const std::vector<Real> act = *w.sim->GetActivations(w.id);
      for (int i = 0; i < m->nu; ++i)
        worst_activation = std::max(worst_activation, std::abs(act[i] - d->act[i]));
    }
    std::printf(
        "arm26 (no joint limits), h = %g s, over 3 s: joint angles within %.4f rad of MuJoCo's "
        "(shoulder swung to %.2f, elbow %.2f rad), activations within %.1e\n",
        h, worst_angle, swing[0], swing[1], worst_activation);
    EXPECT_GT(swing[0], 1);
    EXPECT_GT(swing[1], 1);
    EXPECT_LT(worst_activation, 1e-12);
    absl::StatusOr<WorldStats> stats = w.sim->GetStats(w.id);
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->flags & (kWorldNonFinite | kWorldNotConverged), 0u);
  }
  EXPECT_LT(worst[0], 0.15);
  EXPECT_LT(worst[1], 0.3 * worst[0]);
}

// With its limits, arm26 driven into them by the same excitations keeps both joints within
// [0, 120] degrees.
TEST(MjcfMuscleTest, ArmsLimitsHoldAgainstItsMuscles) {
  ArmSideBySide run = LoadArm(false);
  ASSERT_TRUE(run.w.sim);
  std::mt19937 random(5);
  std::uniform_real_distribution<double> unit(0, 1);
  double low = 0, high = 0;
  for (int step = 0; step < 600; ++step) {
    if (step % 50 == 0) {
      std::vector<Real> ctrl(6);
      for (Real& u : ctrl) u = unit(random);
      ASSERT_TRUE(run.w.sim->SetControls(run.w.id, ctrl).ok());
    }
    ASSERT_TRUE(run.w.sim->StepAll(1).ok());
    const JointState joints = *run.w.sim->GetJointState(run.w.id);
    for (int j = 0; j < 2; ++j) {
      low = std::min(low, static_cast<double>(joints.position[j]));
      high = std::max(high, static_cast<double>(joints.position[j]));
    }
  }
  std::printf("arm26 with limits: joints between %.7f and %.7f rad (limits 0, %.7f)\n", low, high,
              2 * kPi / 3);
  EXPECT_GT(low, -1e-6);
  EXPECT_LT(high, 2 * kPi / 3 + 1e-6);
  EXPECT_GT(high, 2 * kPi / 3 - 1e-3);  // met
}

// Activation is state: a snapshot carries it (restored, the same steps give the same bits),
// a reset clears it, a keyframe's act sets it, and bad values are refused by name.
TEST(MjcfMuscleTest, ActivationIsStateSnapshotsAndKeyframesCarry) {
  std::ifstream in(kArm26);
  std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  xml = absl::StrReplaceAll(
      xml, {{"</actuator>",
             "</actuator><keyframe><key name=\"tense\" qpos=\"0.5 1\" ctrl=\"1 0 1 0 0 0\" "
             "act=\"0.25 0 0.5 0 0 1\"/></keyframe>"}});
  absl::StatusOr<ImportResult> imported = LoadMjcfString(xml, "/usr/share/mujoco/model/tendon_arm");
  ASSERT_TRUE(imported.ok()) << imported.status();
  World w = MakeWorld(imported->model);
  ASSERT_TRUE(w.sim);
  ASSERT_TRUE(w.sim->Reset(w.id, "tense").ok());
  EXPECT_EQ(*w.sim->GetActivations(w.id), (std::vector<Real>{0.25, 0, 0.5, 0, 0, 1}));
  ASSERT_TRUE(w.sim->StepAll(20).ok());
  const std::string snapshot = *w.sim->Snapshot(w.id);
  ASSERT_TRUE(w.sim->StepAll(30).ok());
  const std::vector<Real> pose = w.sim->GetBodyState(w.id)->pose;
  const std::vector<Real> act = *w.sim->GetActivations(w.id);
  EXPECT_GT(act[0], 0.9);  // excited from 0.25
  EXPECT_EQ(act[1], 0);    // at rest
  EXPECT_LT(act[5], 0.9);  // relaxing from 1
  ASSERT_TRUE(w.sim->Restore(w.id, snapshot).ok());
  ASSERT_TRUE(w.sim->StepAll(30).ok());
  EXPECT_EQ(w.sim->GetBodyState(w.id)->pose, pose);
  EXPECT_EQ(*w.sim->GetActivations(w.id), act);
  ASSERT_TRUE(w.sim->Reset(w.id).ok());
  EXPECT_EQ(*w.sim->GetActivations(w.id), std::vector<Real>(6, 0));
  // refused, the world untouched
  absl::Status bad = w.sim->SetActivations(w.id, {0, 0, NAN, 0, 0, 0});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("activation[2] (actuator 'EF') = nan is not finite"),
            std::string::npos)
      << bad.message();
  EXPECT_EQ(*w.sim->GetActivations(w.id), std::vector<Real>(6, 0));
  // a keyframe's activation outside [0, 1] is an error naming it
  const std::string bad_key =
      absl::StrReplaceAll(xml, {{"act=\"0.25 0 0.5 0 0 1\"", "act=\"0.25 0 nan 0 0 1\""}});
  absl::StatusOr<ImportResult> refused =
      LoadMjcfString(bad_key, "/usr/share/mujoco/model/tendon_arm");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(
                "attribute 'act': '0.25 0 nan 0 0 1' is not a list of finite numbers"),
            std::string::npos)
      << refused.status();
  // a keyframe's activation on an actuator without one (a motor) is refused by the model
  ModelDesc motor = imported->model;
  motor.actuators[0].type = ActuatorType::kEffort;
  motor.keyframes[0].activations = {0.5, 0, 0, 0, 0, 0};
  absl::StatusOr<std::shared_ptr<const Model>> compiled = Model::Compile(motor);
  ASSERT_FALSE(compiled.ok());
  EXPECT_NE(compiled.status().message().find(
                "only muscles and actuators with dynamics have an activation"),
            std::string::npos)
      << compiled.status();
}

// A muscle written out as a <general> (muscle dynamics, gain and bias) is the same muscle;
// parameters MuJoCo could not mean, and length ranges that cannot be found, are errors naming
// the muscle; <compiler><lengthrange uselimit> takes the joint's range.
TEST(MjcfMuscleTest, GeneralMusclesLimitsAndErrors) {
  const std::string arm = R"(<mujoco><compiler angle="radian"/><option timestep="0.005"/>
    <worldbody><site name="anchor" pos="-0.3 0.05 0"/>
      <body><joint name="hinge" axis="0 0 1" limited="true" range="-1 1"/>
        <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.03"/>
        <site name="insertion" pos="0.2 0.05 0"/></body></worldbody>
    <tendon><spatial name="line"><site site="anchor"/><site site="insertion"/></spatial></tendon>
    <actuator>ACTUATOR</actuator></mujoco>)";
  auto load = [&](const std::string& actuator, const std::string& compiler = "") {
    std::string xml = absl::StrReplaceAll(arm, {{"ACTUATOR", actuator}});
    if (!compiler.empty())
      xml = absl::StrReplaceAll(xml, {{"<compiler angle=\"radian\"/>", compiler}});
    return LoadMjcfString(xml, "");
  };
  absl::StatusOr<ImportResult> shortcut =
      load(R"(<muscle name="m" tendon="line" timeconst="0.02 0.05" fpmax="1.1"/>)");
  ASSERT_TRUE(shortcut.ok()) << shortcut.status();
  absl::StatusOr<ImportResult> general = load(
      R"(<general name="m" tendon="line" dyntype="muscle" gaintype="muscle" biastype="muscle"
           dynprm="0.02 0.05" gainprm="0.75 1.05 -1 200 0.5 1.6 1.5 1.3 1.2"
           biasprm="0.75 1.05 -1 200 0.5 1.6 1.5 1.1 1.2"/>)");
  ASSERT_TRUE(general.ok()) << general.status();
  const MuscleDesc& a = shortcut->model.actuators[0].muscle;
  const MuscleDesc& b = general->model.actuators[0].muscle;
  EXPECT_EQ(general->model.actuators[0].type, ActuatorType::kMuscle);
  EXPECT_EQ(a.time_activation, b.time_activation);
  EXPECT_EQ(a.time_deactivation, b.time_deactivation);
  EXPECT_EQ(a.passive_force, 1.1);
  EXPECT_EQ(b.passive_force, 1.1);
  EXPECT_EQ(a.force, b.force);
  EXPECT_EQ(a.length_range, b.length_range);
  EXPECT_GT(a.force, 0);
  EXPECT_LT(a.length_range[0], a.length_range[1]);
  // uselimit: the joint's range, as MuJoCo copies it (without the gear)
  absl::StatusOr<ImportResult> hinge_muscle =
      load(R"(<muscle name="m" joint="hinge"/>)",
           R"(<compiler angle="radian"><lengthrange uselimit="true"/></compiler>)");
  ASSERT_TRUE(hinge_muscle.ok()) << hinge_muscle.status();
  EXPECT_EQ(hinge_muscle->model.actuators[0].muscle.length_range, (std::array<Real, 2>{-1, 1}));

  auto expect_error = [&](const std::string& actuator, const std::string& compiler,
                          const std::string& message) {
    absl::StatusOr<ImportResult> refused = load(actuator, compiler);
    ASSERT_FALSE(refused.ok()) << actuator;
    EXPECT_NE(refused.status().message().find(message), std::string::npos) << refused.status();
  };
  expect_error(R"(<muscle name="weak" tendon="line" force="0"/>)", "",
               "is 0: the muscle could not pull");
  expect_error(R"(<muscle name="m" tendon="line" lmin="1.2"/>)", "",
               "muscle length_min and length_max must satisfy");
  expect_error(R"(<muscle name="m" tendon="line"/>)",
               R"(<compiler angle="radian"><lengthrange mode="none"/></compiler>)",
               "has no lengthrange and <compiler><lengthrange mode=\"none\">");
  expect_error(
      R"(<muscle name="m" tendon="line"/>)",
      R"(<compiler angle="radian"><lengthrange timestep="0.00001" inttotal="100"/></compiler>)",
      "finding the muscles' length ranges would take 1e+07 steps");
  // the actuator shortcuts share their defaults (as MuJoCo's do): a <muscle> default's force
  // and a <position> default's kp reach their own kinds without warnings on the others
  absl::StatusOr<ImportResult> defaults = load(
      R"(<muscle name="m" tendon="line"/><motor name="mo" joint="hinge"/>
         <position name="p" joint="hinge"/>)",
      R"(<compiler angle="radian"/><default><muscle force="100"/><position kp="5"/></default>)");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_TRUE(defaults->warnings.empty()) << defaults->warnings.front();
  EXPECT_EQ(defaults->model.actuators[0].muscle.force, 100);
  EXPECT_EQ(defaults->model.actuators[2].kp, 5);
  // a general muscle whose gain and bias disagree is skipped with a warning
  absl::StatusOr<ImportResult> mismatched = load(
      R"(<general name="m" tendon="line" dyntype="muscle" gaintype="muscle" biastype="muscle"
           gainprm="0.75 1.05 -1 200 0.5 1.6 1.5 1.3 1.2" biasprm="0.7 1.05 -1 200 0.5 1.6 1.5 1.3 1.2"/>)");
  ASSERT_TRUE(mismatched.ok()) << mismatched.status();
  EXPECT_TRUE(mismatched->model.actuators.empty());
  bool warned = false;
  for (const std::string& w : mismatched->warnings)
    warned = warned || w.find("muscle gain and bias parameters that differ") != std::string::npos;
  EXPECT_TRUE(warned);
}

// Activation dynamics of motors and servos: a filtered motor (<general dyntype="filter">), a
// servo whose target integrates the command (<intvelocity>, its activation limited), a
// pneumatic cylinder (a filter and a gain of its area) and an integrated motor with a limited
// activation: the activations are MuJoCo's act bit for bit (the clamps included), the forces
// at the same state MuJoCo's actuator_force, and the motion follows MuJoCo's.
TEST(MjcfActuatorDynamicsTest, ActivationsForcesAndMotionAreMuJoCos) {
  double worst_angles[2] = {0, 0};
  for (int refine : {1, 5}) {
    const std::string path =
        WriteTempModel(absl::StrCat("actuator_dynamics_", refine, ".xml"),
                       absl::StrReplaceAll(R"(<mujoco>
    <option timestep="0.005"/>
    <worldbody>
      <body><joint name="a" axis="0 1 0" damping="0.1"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/></body>
      <body pos="1 0 0"><joint name="b" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/></body>
      <body pos="2 0 0"><joint name="c" type="slide" axis="1 0 0"/>
        <geom type="box" size="0.1 0.1 0.1"/></body>
    </worldbody>
    <actuator>
      <general name="filtered" joint="a" dyntype="filter" dynprm="0.05" gainprm="2"/>
      <intvelocity name="intvel" joint="b" kp="10" actrange="-0.5 0.5"/>
      <cylinder name="cylinder" joint="c" timeconst="0.1" diameter="0.1"/>
      <general name="integrated" joint="a" dyntype="integrator" gainprm="1" actlimited="true"
               actrange="0 0.3"/>
    </actuator></mujoco>)",
                                           {{"0.005", absl::StrCat(0.005 / refine)}}));
    absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
    ASSERT_TRUE(imported.ok()) << imported.status();
    EXPECT_TRUE(imported->warnings.empty()) << imported->warnings.front();
    const std::vector<ActuatorDesc>& acts = imported->model.actuators;
    ASSERT_EQ(acts.size(), 4u);
    EXPECT_EQ(acts[0].dynamics, ActuatorDynamics::kFilter);
    EXPECT_EQ(acts[1].type, ActuatorType::kPosition);
    EXPECT_EQ(acts[1].dynamics, ActuatorDynamics::kIntegrator);
    EXPECT_TRUE(acts[1].activation_limited);
    EXPECT_NEAR(acts[2].gear, kPi / 4 * 0.01, 1e-15);  // the cylinder's area
    World w = MakeWorld(imported->model);
    MuJoCoRun mujoco(path);
    ASSERT_TRUE(mujoco.m && w.sim) << mujoco.load_error;
    const mjModel* m = mujoco.m;
    mjData* d = mujoco.d;
    ASSERT_EQ(m->na, 4);
    double worst_act = 0, worst_force = 0, worst_angle = 0, worst_slide = 0;
    bool clamped[2] = {false, false};
    for (int step = 0; step < 400 * refine; ++step) {
      if (step % (100 * refine) == 0) {
        const bool first = step < 200 * refine;
        const std::vector<Real> ctrl = {step % (200 * refine) == 0 ? 1.0 : -0.5,
                                        first ? 20.0 : -20.0, first ? 2e3 : -1e3,
                                        first ? 10.0 : -10.0};
        for (int i = 0; i < 4; ++i) d->ctrl[i] = ctrl[i];
        ASSERT_TRUE(w.sim->SetControls(w.id, ctrl).ok());
      }
      mj_step(m, d);
      ASSERT_TRUE(w.sim->StepAll(1).ok());
      const std::vector<Real> act = *w.sim->GetActivations(w.id);
      for (int i = 0; i < 4; ++i) worst_act = std::max(worst_act, std::abs(act[i] - d->act[i]));
      clamped[0] = clamped[0] || act[1] == 0.5;
      clamped[1] = clamped[1] || act[3] == 0.3;
      const JointState joints = *w.sim->GetJointState(w.id);
      worst_angle = std::max({worst_angle, std::abs(joints.position[0] - d->qpos[0]),
                              std::abs(joints.position[1] - d->qpos[1])});
      worst_slide = std::max(worst_slide, std::abs(joints.position[2] - d->qpos[2]));
      // the forces at MuJoCo's state: its qpos, qvel and act written into the world
      if (step % (20 * refine) == 20 * refine - 1) {
        JointState at = joints;
        for (int j = 0; j < 3; ++j) at.position[j] = d->qpos[j], at.velocity[j] = d->qvel[j];
        ASSERT_TRUE(w.sim->SetJointState(w.id, at).ok());
        mj_forward(m, d);
        const std::vector<Real> forces = *w.sim->GetActuatorForces(w.id);
        for (int i = 0; i < 4; ++i) {
          const double geared = d->actuator_force[i] * m->actuator_gear[6 * i];
          EXPECT_NEAR(forces[i], geared, 1e-9 * (1 + std::abs(geared))) << i << " at " << step;
          worst_force = std::max(worst_force, std::abs(forces[i] - geared));
        }
      }
    }
    std::printf(
        "actuator dynamics, h = %g s: activations within %.1e of MuJoCo's act, forces %.1e, "
        "hinges %.4f rad, slide %.5f m over 2 s\n",
        0.005 / refine, worst_act, worst_force, worst_angle, worst_slide);
    EXPECT_LT(worst_act, 1e-9);
    EXPECT_TRUE(clamped[0] && clamped[1]);
    EXPECT_LT(worst_slide, 0.01);
    worst_angles[refine == 1 ? 0 : 1] = worst_angle;
  }
  // the hinges part by the integrators' first-order difference (the servo explicit in MuJoCo,
  // solved at the step's end here), a fifth at a fifth of the step
  EXPECT_LT(worst_angles[0], 0.15);
  EXPECT_LT(worst_angles[1], 0.3 * worst_angles[0]);
}

// A composite sample (grid or cloth) run by both engines from the file's state: the elements'
// centroid (bodies named B<i>_<j>, MuJoCo's from its xpos) and the threads' stretch from their
// rest length, compared every `every` steps.
struct CompositeRun {
  double worst_centroid = 0;               // largest distance between the centroids (m)
  double drop = 0;                         // MuJoCo's centroid's largest drop below its start (m)
  double stretch = 0, mujoco_stretch = 0;  // largest |L - spacing| of the main threads (m)
  double centroid[2][3] = {};              // the last: MuJoCo's, Axion's
  int contacts[2] = {0, 0};                // the last step's: MuJoCo's ncon, Axion's
  uint32_t flags = 0;
};
// `edits` (text replacements) apply to both engines' copies of the file, which then may
// include no other file.
CompositeRun RunComposite(const std::string& path, int steps, int every, double spacing,
                          const std::vector<std::pair<std::string, std::string>>& edits = {}) {
  CompositeRun out;
  std::ifstream in(path);
  const std::string xml = absl::StrReplaceAll(
      std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), edits);
  const std::string copy = edits.empty() ? path : WriteTempModel("composite_sample.xml", xml);
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(copy);
  EXPECT_TRUE(imported.ok()) << imported.status();
  if (!imported.ok()) return out;
  for (const std::string& warning : imported->warnings) {
    if (warning.find("not supported") == std::string::npos) continue;
    for (const char* part : {"<composite", "tendon", "equality", "<pin>"})
      EXPECT_EQ(warning.find(part), std::string::npos) << warning;
  }
  MuJoCoRun mujoco(copy);
  EXPECT_TRUE(mujoco.m) << mujoco.load_error;
  if (!mujoco.m) return out;
  const mjModel* m = mujoco.m;
  mjData* d = mujoco.d;
  const ModelDesc& desc = imported->model;
  EXPECT_EQ(static_cast<int>(desc.tendons.size()), m->ntendon);
  for (int t = 0; t < m->ntendon && t < static_cast<int>(desc.tendons.size()); ++t)
    EXPECT_EQ(desc.tendons[t].name, mj_id2name(m, mjOBJ_TENDON, t));
  World w = MakeWorld(desc);
  if (w.sim == nullptr) return out;
  // the elements: MuJoCo's bodies named B<i>_<j>, Axion's by name (a merged holder carries its
  // element's frame)
  std::vector<std::pair<int, int>> elements;  // (MuJoCo body, Axion body)
  for (int b = 1; b < m->nbody; ++b) {
    const char* name = mj_id2name(m, mjOBJ_BODY, b);
    if (name == nullptr || name[0] != 'B') continue;
    for (size_t a = 0; a < desc.bodies.size(); ++a) {
      if (desc.bodies[a].name == name) elements.emplace_back(b, static_cast<int>(a));
    }
  }
  EXPECT_GT(elements.size(), 10u);
  mj_forward(m, d);
  double start_z = 0;
  for (const auto& [mj, ax] : elements) start_z += d->xpos[3 * mj + 2] / elements.size();
  for (int step = 1; step <= steps; ++step) {
    EXPECT_TRUE(w.sim->StepAll(1).ok());
    mj_step(m, d);
    if (step % every != 0) continue;
    mj_kinematics(m, d);  // (the positions after the step)
    const BodyState bodies = *w.sim->GetBodyState(w.id);
    double c[2][3] = {};
    for (const auto& [mj, ax] : elements) {
      for (int k = 0; k < 3; ++k) {
        c[0][k] += d->xpos[3 * mj + k] / elements.size();
        c[1][k] += bodies.pose[7 * ax + k] / elements.size();
      }
    }
    out.worst_centroid = std::max(
        out.worst_centroid, std::hypot(c[1][0] - c[0][0], c[1][1] - c[0][1], c[1][2] - c[0][2]));
    out.drop = std::max(out.drop, start_z - c[0][2]);
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 3; ++k) out.centroid[i][k] = c[i][k];
    const std::vector<Real> tendons = *w.sim->GetTendonStates(w.id);
    for (int t = 0; t < m->ntendon; ++t) {
      if (std::string(mj_id2name(m, mjOBJ_TENDON, t)).rfind("TS", 0) == 0) continue;  // shear
      out.stretch = std::max(out.stretch, std::abs(tendons[2 * t] - spacing));
      out.mujoco_stretch = std::max(out.mujoco_stretch, std::abs(d->ten_length[t] - spacing));
    }
  }
  out.contacts[0] = d->ncon;
  out.contacts[1] = w.sim->GetStats(w.id)->contact_count;
  out.flags = w.sim->GetStats(w.id)->flags;
  return out;
}

// MuJoCo's grid2pin.xml: a 9 x 9 grid of particles (three slides each) pinned at two corners,
// every two neighbours held 5 cm apart by a spatial tendon and its <equality>, soft in MuJoCo
// (solref 0.01): the holds' compliance is MuJoCo's static stretch per unit force. Released flat
// 1 m up, the cloth swings down from its pins as MuJoCo's does over 2 s: the particles' centroid
// follows libmujoco's, and the threads stretch about as much.
TEST(CompositeTest, GridHangsFromItsPinsLikeMuJoCo) {
  const std::string path = "/usr/share/mujoco/model/composite/grid2pin.xml";
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  MuJoCoRun mujoco(path);
  ASSERT_TRUE(mujoco.m) << mujoco.load_error;
  ASSERT_EQ(static_cast<int>(imported->model.tendons.size()), mujoco.m->ntendon);
  for (int t = 0; t < mujoco.m->ntendon; ++t) {
    const TendonDesc& tendon = imported->model.tendons[t];
    EXPECT_TRUE(tendon.hold);
    // compliance (1 - d) A / (K d^2) with d = dmax = 0.99, K = 1 / (dmax tau)^2, A MuJoCo's
    const double weight = mujoco.m->tendon_invweight0[t];
    EXPECT_NEAR(tendon.hold_compliance, 0.01 * 0.01 * 0.01 * weight, 1e-9 * weight);
  }
  const CompositeRun run = RunComposite(path, 400, 10, 0.05);
  std::printf(
      "grid2pin over 2 s: centroid dropped %.3f m (MuJoCo), within %.4f m of MuJoCo's; threads "
      "stretched at most %.2e m (MuJoCo %.2e m)\n",
      run.drop, run.worst_centroid, run.stretch, run.mujoco_stretch);
  // (the cloth swings on its pins; at 0.05 s intervals the centroids stay within a fifth of the
  // swing, MuJoCo's holds damped by its solref, Axion's by the integrator)
  EXPECT_GT(run.drop, 0.1);
  EXPECT_LT(run.worst_centroid, 0.3 * run.drop);
  EXPECT_LT(run.stretch, 3 * run.mujoco_stretch);
  EXPECT_GT(run.stretch, run.mujoco_stretch / 3);
  EXPECT_EQ(run.flags & kWorldNonFinite, 0u);
}

// MuJoCo's cloth.xml: a 9 x 9 cloth of capsules on a free body, a tree of hinge pairs from its
// holder with the rows the tree leaves out held by tendon equalities (MuJoCo's default solref),
// the bodies' inertia a plate's (flatinertia). Dropped from 1 m onto a tilted capsule and the
// floor, it falls, lands and drapes as MuJoCo's: the centroid within a few centimetres all the
// way down and where it comes to rest, its threads stretched as much.
TEST(CompositeTest, ClothFallsAndDrapesLikeMuJoCo) {
  const CompositeRun run =
      RunComposite("/usr/share/mujoco/model/composite/cloth.xml", 1000, 25, 0.05);
  std::printf(
      "cloth.xml over 2 s: centroid dropped %.3f m (MuJoCo), within %.4f m of MuJoCo's, at "
      "(%.4f, %.4f, %.4f) m at the end (MuJoCo (%.4f, %.4f, %.4f)); threads stretched at most "
      "%.2e m (MuJoCo %.2e m); %d contacts at the end (MuJoCo %d)\n",
      run.drop, run.worst_centroid, run.centroid[1][0], run.centroid[1][1], run.centroid[1][2],
      run.centroid[0][0], run.centroid[0][1], run.centroid[0][2], run.stretch, run.mujoco_stretch,
      run.contacts[1], run.contacts[0]);
  // (at rest its folds stand 1.8 cm higher than MuJoCo's, whose contacts and threads are soft)
  EXPECT_GT(run.drop, 0.9);
  EXPECT_LT(run.worst_centroid, 0.05);
  EXPECT_LT(std::abs(run.centroid[1][2] - run.centroid[0][2]), 0.025);
  EXPECT_LT(run.stretch, 2 * run.mujoco_stretch);
  EXPECT_EQ(run.flags & kWorldNonFinite, 0u);
}

// MuJoCo's flag.xml: a 9 x 19 cloth of ellipsoids hung from its static holder, its constraints
// off (no contacts, no equalities), held together by its joints' springs and its threads' and
// shear threads' springs, in a fluid of density 10 blowing at (5, 5, 0) m/s. It sags and
// swings round its pole downwind as MuJoCo's does over the first 0.8 s (later the two lightly
// damped swings part: 30 cm apart at 1.5 s, 11 cm at 2 s, each integrator damping its own way).
TEST(CompositeTest, FlagSwingsInTheWindLikeMuJoCo) {
  const CompositeRun run = RunComposite("/usr/share/mujoco/model/flag/flag.xml", 400, 25, 0.05);
  std::printf(
      "flag.xml over 0.8 s: centroid dropped %.3f m (MuJoCo), within %.4f m of MuJoCo's, at "
      "(%.3f, %.3f, %.3f) m at the end (MuJoCo (%.3f, %.3f, %.3f)); threads stretched at most "
      "%.2e m (MuJoCo %.2e m)\n",
      run.drop, run.worst_centroid, run.centroid[1][0], run.centroid[1][1], run.centroid[1][2],
      run.centroid[0][0], run.centroid[0][1], run.centroid[0][2], run.stretch, run.mujoco_stretch);
  // swung from +y across the pole to -y (the wind blows along x and y from the start)
  EXPECT_LT(run.centroid[0][1], -0.1);
  EXPECT_LT(run.centroid[1][1], -0.1);
  EXPECT_LT(run.worst_centroid, 0.12);
  EXPECT_EQ(run.flags & kWorldNonFinite, 0u);
}

// An <equality><tendon> between two fixed tendons, L1 - L1(qpos0) = a0 + a1 (L2 - L2(qpos0)):
// three sliders, L1 = a + b, L2 = 0.5 b + c, polycoef "0 2" (so a - 2 c is held), a motor on c.
// Axion holds the coupling to round-off where MuJoCo's soft equality lets it stretch by
// millimetres, and the sliders move as MuJoCo's do.
TEST(TendonTest, EqualityBetweenTwoFixedTendonsMovesLikeMuJoCo) {
  const std::string path = WriteTempModel("tendon_pair.xml", R"(<mujoco>
  <option timestep="0.002" gravity="0 0 0"/>
  <worldbody>
    <body><joint name="a" type="slide" axis="1 0 0"/><geom size="0.1" mass="1"/></body>
    <body pos="0 1 0"><joint name="b" type="slide" axis="1 0 0"/><geom size="0.1" mass="2"/></body>
    <body pos="0 2 0"><joint name="c" type="slide" axis="1 0 0"/><geom size="0.1" mass="0.5"/></body>
  </worldbody>
  <tendon>
    <fixed name="ab"><joint joint="a" coef="1"/><joint joint="b" coef="1"/></fixed>
    <fixed name="bc"><joint joint="b" coef="0.5"/><joint joint="c" coef="1"/></fixed>
  </tendon>
  <equality><tendon name="link" tendon1="ab" tendon2="bc" polycoef="0 2 0 0 0"/></equality>
  <actuator><motor joint="c"/></actuator>
</mujoco>)");
  SideBySide s = LoadSideBySide(path);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s.w.sim->SetControls(s.w.id, std::vector<Real>{1}).ok());
  s.mujoco->d->ctrl[0] = 1;
  double worst = 0, held = 0, mujoco_held = 0, travel = 0;
  for (int n = 0; n < 500; ++n) {
    ASSERT_TRUE(s.w.sim->StepAll(1).ok());
    mj_step(s.mujoco->m, s.mujoco->d);
    const JointState js = *s.w.sim->GetJointState(s.w.id);
    const double* q = s.mujoco->d->qpos;
    for (int j = 0; j < 3; ++j) worst = std::max(worst, std::abs(js.position[j] - q[j]));
    held = std::max(held, std::abs(static_cast<double>(js.position[0] - 2 * js.position[2])));
    mujoco_held = std::max(mujoco_held, std::abs(q[0] - 2 * q[2]));
    travel = std::max(travel, std::abs(q[2]));
  }
  std::printf(
      "tendon pair over 1 s: a - 2c held to %.1e m (MuJoCo %.1e m); sliders within %.1e m "
      "of MuJoCo's (c travels %.3f m)\n",
      held, mujoco_held, worst, travel);
  EXPECT_LT(held, 1e-9);
  EXPECT_GT(travel, 0.1);
  EXPECT_LT(worst, 0.05 * travel);
}

// A fixed tendon may list a coordinate with coefficient 0 (dm_control's point_mass drives its
// x and y sliders through two tendons, each naming both): that coordinate is not in L, so the
// tendon's motor pushes the other one only, as in MuJoCo. A tendon whose every coefficient is
// 0 has a constant length: it is skipped with a warning naming it, and its motor with it.
TEST(TendonTest, CoordinatesWithZeroCoefficientsAreLeftOutAsInMuJoCo) {
  const std::string path = WriteTempModel("tendon_zero_coef.xml", R"(<mujoco>
  <option timestep="0.02" gravity="0 0 0"/>
  <worldbody>
    <body><joint name="x" type="slide" axis="1 0 0" damping="1"/>
      <joint name="y" type="slide" axis="0 1 0" damping="1"/><geom size="0.01" mass="0.3"/></body>
  </worldbody>
  <tendon>
    <fixed name="tx"><joint joint="x" coef="1"/><joint joint="y" coef="0"/></fixed>
    <fixed name="ty"><joint joint="x" coef="0"/><joint joint="y" coef="1"/></fixed>
  </tendon>
  <actuator><motor tendon="tx" gear="0.1"/><motor tendon="ty" gear="0.1"/></actuator>
</mujoco>)");
  SideBySide s = LoadSideBySide(path);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s.imported.model.tendons.size(), 2u);
  for (const TendonDesc& t : s.imported.model.tendons) EXPECT_EQ(t.joints.size(), 1u);
  double worst = 0, travel_x = 0, travel_y = 0;
  for (int n = 0; n < 200; ++n) {
    const std::vector<Real> u = {std::sin(0.05 * n), std::cos(0.03 * n) - 0.5};
    ASSERT_TRUE(s.w.sim->SetControls(s.w.id, u).ok());
    for (int k = 0; k < 2; ++k) s.mujoco->d->ctrl[k] = u[k];
    absl::StatusOr<FileCoordinates> c = StepBoth(s);
    ASSERT_TRUE(c.ok()) << c.status();
    for (int j = 0; j < 2; ++j)
      worst = std::max(worst, std::abs(c->position[j] - s.mujoco->d->qpos[j]));
    travel_x = std::max(travel_x, std::abs(s.mujoco->d->qpos[0]));
    travel_y = std::max(travel_y, std::abs(s.mujoco->d->qpos[1]));
  }
  std::printf(
      "point mass through tendons with zero coefficients: within %.1e m of MuJoCo's "
      "(travel %.3f / %.3f m)\n",
      worst, travel_x, travel_y);
  EXPECT_GT(travel_x, 0.05);
  EXPECT_GT(travel_y, 0.05);
  EXPECT_LT(worst, 0.02 * std::max(travel_x, travel_y));

  absl::StatusOr<ImportResult> constant = LoadMjcfString(R"(<mujoco>
  <worldbody><body><joint name="x" type="slide"/><geom size="0.1"/></body></worldbody>
  <tendon><fixed name="none"><joint joint="x" coef="0"/></fixed></tendon>
  <actuator><motor tendon="none"/></actuator>
</mujoco>)",
                                                         "");
  ASSERT_TRUE(constant.ok()) << constant.status();
  EXPECT_TRUE(constant->model.tendons.empty());
  EXPECT_TRUE(constant->model.actuators.empty());
  bool named = false;
  for (const std::string& w : constant->warnings)
    named |= w.find("'none'") != std::string::npos &&
             w.find("every coefficient is 0") != std::string::npos;
  EXPECT_TRUE(named);
}

// Motors on free and ball joints, as MuJoCo drives them: on a free joint a force gear[0..2]
// ctrl in the world's axes at the body's origin and a torque gear[3..5] ctrl in its frame; on
// a ball joint a torque gear[0..2] ctrl in the child's frame, its reaction on the parent (a
// free puck whose arm it swings: internal). Without gravity, under changing commands for 2 s,
// every body's origin and orientation follows MuJoCo's, the difference the integrators'
// (first order: at h / 4 a quarter of it; measured 2.5 mm and 0.091 rad at 2 ms, 0.61 mm and
// 0.023 rad at 0.5 ms, a body turning up to pi).
TEST(ActuatorTest, MotorsOnFreeAndBallJointsPushAsInMuJoCo) {
  const std::string model = R"(<mujoco>
  <option timestep="STEP" gravity="0 0 0"/>
  <worldbody>
    <body name="puck" pos="0 0 1" euler="20 30 40">
      <freejoint name="float"/>
      <geom type="box" size="0.1 0.2 0.05" density="500"/>
      <body name="arm" pos="0.1 0.2 0.05" euler="0 40 10">
        <joint name="shoulder" type="ball" pos="0 0 0.02"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" density="800"/>
      </body>
    </body>
    <body name="bob" pos="1 0 1">
      <joint name="swivel" type="ball"/>
      <geom type="box" pos="0 0 -0.2" size="0.05 0.06 0.2" density="600"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="thrust" joint="float" gear="1 0 0.5 0 0 0.05"/>
    <motor name="twist" joint="shoulder" gear="0.01 0.03 -0.02"/>
    <motor name="turn" joint="swivel" gear="0 0.2 0.1"/>
    <position name="servo" joint="swivel" kp="1"/>
  </actuator>
  <sensor><actuatorfrc actuator="thrust"/><actuatorpos actuator="thrust"/></sensor>
</mujoco>)";
  double worst[2][2] = {};  // by step: position (m), angle (rad)
  for (const int scale : {1, 4}) {
    const std::string path = WriteTempModel(
        absl::StrFormat("ball_free_motors_%d.xml", scale),
        absl::StrReplaceAll(model, {{"STEP", absl::StrFormat("%.17g", 0.002 / scale)}}));
    absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
    ASSERT_TRUE(imported.ok()) << imported.status();
    // a servo on a ball joint is skipped, and says so (MuJoCo's drives it; the comparison
    // below leaves its control at 0, where MuJoCo's pulls the ball toward its start)
    ASSERT_TRUE(std::any_of(
        imported->warnings.begin(), imported->warnings.end(), [](const std::string& warning) {
          return warning.find("servos on free and ball joints (<position>)") != std::string::npos;
        }));
    // (its force is read; its length, MuJoCo's from the joint's coordinates, is not, and says so)
    EXPECT_TRUE(std::any_of(imported->warnings.begin(), imported->warnings.end(),
                            [](const std::string& warning) {
                              return warning.find(
                                         "of a free or ball joint's motor 'thrust' are "
                                         "not supported") != std::string::npos;
                            }));
    EXPECT_EQ(imported->source_sensors.size(), 1u);
    const ModelDesc& desc = imported->model;
    ASSERT_EQ(desc.actuators.size(), 3u);
    EXPECT_TRUE(desc.actuators[0].site_force_world);
    EXPECT_EQ(desc.actuators[1].site_reaction_body, 0);   // the arm's torque reacts on the puck
    EXPECT_EQ(desc.actuators[2].site_reaction_body, -1);  // the bob's on the world
    World w = MakeWorld(desc);
    ASSERT_NE(w.sim, nullptr);
    MuJoCoRun mujoco(path);
    ASSERT_TRUE(mujoco.m) << mujoco.load_error;
    mjModel* m = mujoco.m;
    mjData* d = mujoco.d;
    m->actuator_gainprm[3 * mjNGAIN] = 0;  // the servo MuJoCo drives, off
    m->actuator_biasprm[3 * mjNBIAS + 1] = 0;
    std::vector<std::pair<int, int>> bodies;  // (MuJoCo, Axion)
    for (const char* name : {"puck", "arm", "bob"})
      bodies.emplace_back(mj_name2id(m, mjOBJ_BODY, name), w.model->FindBody(name));
    std::mt19937 random(3);
    std::uniform_real_distribution<double> command(-1, 1);
    double travel = 0, turn = 0;
    for (int step = 0; step < 1000 * scale; ++step) {
      if (step % (200 * scale) == 0) {
        std::vector<Real> ctrl(3);
        for (int i = 0; i < 3; ++i) d->ctrl[i] = ctrl[i] = command(random);
        ASSERT_TRUE(w.sim->SetControls(w.id, ctrl).ok());
      }
      ASSERT_TRUE(w.sim->StepAll(1).ok());
      mj_step(m, d);
      mj_kinematics(m, d);
      const BodyState state = *w.sim->GetBodyState(w.id);
      double* out = worst[scale == 1 ? 0 : 1];
      for (const auto& [mj, ax] : bodies) {
        ASSERT_GE(ax, 0);
        const Real* pose = &state.pose[7 * ax];
        out[0] =
            std::max(out[0], std::hypot(pose[0] - d->xpos[3 * mj], pose[1] - d->xpos[3 * mj + 1],
                                        pose[2] - d->xpos[3 * mj + 2]));
        double dot = 0;
        for (int k = 0; k < 4; ++k) dot += pose[3 + k] * d->xquat[4 * mj + k];
        out[1] = std::max(out[1], 2 * std::acos(std::min(1.0, std::abs(dot))));
        turn = std::max(turn, 2 * std::acos(std::min(1.0, std::abs(d->xquat[4 * mj]))));
      }
      travel = std::max(travel, std::abs(d->xpos[3 * bodies[0].first]));
    }
    std::printf(
        "motors on free and ball joints, h = %g ms, 2 s: bodies within %.1e m and %.1e rad of "
        "MuJoCo's (the puck travels %.3f m, bodies turn up to %.2f rad)\n",
        2.0 / scale, worst[scale == 1 ? 0 : 1][0], worst[scale == 1 ? 0 : 1][1], travel, turn);
    EXPECT_GT(travel, 0.1);
    EXPECT_GT(turn, 1);
    const WorldStats stats = *w.sim->GetStats(w.id);
    EXPECT_EQ(stats.flags & (kWorldNonFinite | kWorldNotConverged), 0u);
  }
  EXPECT_LT(worst[0][0], 5e-3);
  EXPECT_LT(worst[0][1], 0.15);
  EXPECT_LT(worst[1][0], 0.35 * worst[0][0]);
  EXPECT_LT(worst[1][1], 0.35 * worst[0][1]);
}

// MuJoCo's softbox.xml: a box composite (7 x 7 x 7, its 218 surface elements on slides along
// their rays from a free centre) falls onto a capsule, rolls off it and comes to rest on the
// floor. MuJoCo holds the slides by soft joint equalities (each to its reference, each to its
// neighbours) and the sum of all slides, the volume, by a soft tendon equality; Axion by the
// slides' springs and held tendons with MuJoCo's softness and damping ratio (StaticSoftness).
// The elements' centroid follows MuJoCo's, the box rests where MuJoCo's does, squeezed as
// much, and the volume tendon keeps its length as MuJoCo's does.
TEST(CompositeTest, SoftBoxFallsRollsAndRestsLikeMuJoCo) {
  const std::string path = "/usr/share/mujoco/model/composite/softbox.xml";
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  for (const std::string& warning : imported->warnings) {
    if (warning.find("not supported") != std::string::npos) {
      EXPECT_EQ(warning.find("<composite"), std::string::npos) << warning;
    }
  }
  MuJoCoRun mujoco(path);
  ASSERT_TRUE(mujoco.m) << mujoco.load_error;
  const mjModel* m = mujoco.m;
  mjData* d = mujoco.d;
  const ModelDesc& desc = imported->model;
  EXPECT_EQ(desc.options.timestep, m->opt.timestep);  // (the second <option> keeps the first's)
  int volume = -1;
  for (size_t t = 0; t < desc.tendons.size(); ++t) {
    if (desc.tendons[t].name == "T") volume = static_cast<int>(t);
  }
  ASSERT_GE(volume, 0);
  EXPECT_EQ(static_cast<int>(desc.tendons[volume].joints.size()), m->tendon_num[0]);
  World w = MakeWorld(desc);
  ASSERT_NE(w.sim, nullptr);
  std::vector<std::pair<int, int>> elements;  // (MuJoCo body, Axion body)
  for (int b = 1; b < m->nbody; ++b) {
    const char* name = mj_id2name(m, mjOBJ_BODY, b);
    if (name == nullptr || name[0] != 'B') continue;
    for (size_t a = 0; a < desc.bodies.size(); ++a) {
      if (desc.bodies[a].name == name) elements.emplace_back(b, static_cast<int>(a));
    }
  }
  ASSERT_EQ(elements.size(), 218u);
  double worst = 0, c[2][3] = {}, worst_volume = 0, mujoco_volume = 0;
  for (int step = 1; step <= 450; ++step) {
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    mj_step(m, d);
    if (step % 25 != 0) continue;
    mj_kinematics(m, d);
    const BodyState bodies = *w.sim->GetBodyState(w.id);
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 3; ++k) c[i][k] = 0;
    for (const auto& [mj, ax] : elements) {
      for (int k = 0; k < 3; ++k) {
        c[0][k] += d->xpos[3 * mj + k] / elements.size();
        c[1][k] += bodies.pose[7 * ax + k] / elements.size();
      }
    }
    worst = std::max(worst, std::hypot(c[1][0] - c[0][0], c[1][1] - c[0][1], c[1][2] - c[0][2]));
    const std::vector<Real> tendons = *w.sim->GetTendonStates(w.id);
    worst_volume = std::max(worst_volume, std::abs(static_cast<double>(tendons[2 * volume])));
    mujoco_volume = std::max(mujoco_volume, std::abs(d->ten_length[0]));
  }
  const WorldStats stats = *w.sim->GetStats(w.id);
  std::printf(
      "softbox.xml over 2.25 s: elements' centroid within %.4f m of MuJoCo's, at rest at (%.4f, "
      "%.4f, %.4f) m (MuJoCo (%.4f, %.4f, %.4f)); the slides' sum within %.2e m of its start "
      "(MuJoCo %.2e m); %d contacts at the end (MuJoCo %d)\n",
      worst, c[1][0], c[1][1], c[1][2], c[0][0], c[0][1], c[0][2], worst_volume, mujoco_volume,
      stats.contact_count, d->ncon);
  EXPECT_GT(std::hypot(c[0][0], c[0][1]), 0.3);  // rolled off the capsule
  EXPECT_LT(worst, 0.06);
  EXPECT_LT(std::hypot(c[1][0] - c[0][0], c[1][1] - c[0][1]), 0.04);
  EXPECT_LT(std::abs(c[1][2] - c[0][2]), 0.005);
  EXPECT_LT(worst_volume, 5 * mujoco_volume);
  EXPECT_EQ(stats.flags & kWorldNonFinite, 0u);
}

// Slider-cranks: MuJoCo's slider_crank.xml (a forward crank, a backward one whose slider site
// rides the crank's child, and a "broken" one whose rod cannot reach the slider's axis at first),
// each position servo's transmission a tendon of its own. At random states written into both
// engines, every actuator's length and rate is MuJoCo's actuator_length and actuator_velocity
// (random joint rates check the moment arms), through both branches of the crank's formula;
// the file's actuatorpos and actuatorvel sensors (added here) read MuJoCo's; and under random
// commands the three hinges follow MuJoCo's.
TEST(SliderCrankTest, LengthsRatesAndMotionAreMuJoCos) {
  const char kSliderCrank[] = "/usr/share/mujoco/model/slider_crank/slider_crank.xml";
  std::ifstream in(kSliderCrank);
  std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string sensors = "<sensor>";
  for (const char* name : {"forward", "backward", "broken"}) {
    sensors += absl::StrCat("<actuatorpos actuator=\"", name, "\"/><actuatorvel actuator=\"", name,
                            "\"/>");
  }
  xml = absl::StrReplaceAll(xml, {{"</mujoco>", sensors + "</sensor></mujoco>"}});
  const std::string path = WriteTempModel("slider_crank_sensors.xml", xml);
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  for (const std::string& warning : imported->warnings) {
    EXPECT_EQ(warning.find("transmission"), std::string::npos) << warning;
    EXPECT_EQ(warning.find("skipped"), std::string::npos) << warning;
  }
  MuJoCoRun mujoco(path);
  ASSERT_TRUE(mujoco.m) << mujoco.load_error;
  const mjModel* m = mujoco.m;
  mjData* d = mujoco.d;
  const ModelDesc& desc = imported->model;
  ASSERT_EQ(static_cast<int>(desc.actuators.size()), m->nu);
  ASSERT_EQ(m->nu, 3);
  ASSERT_EQ(m->nq, 3);
  for (int i = 0; i < m->nu; ++i) {
    ASSERT_EQ(m->actuator_trntype[i], mjTRN_SLIDERCRANK);
    const int tendon = desc.actuators[i].tendon;
    ASSERT_GE(tendon, 0);
    EXPECT_EQ(desc.tendons[tendon].name, mj_id2name(m, mjOBJ_ACTUATOR, i));
    EXPECT_EQ(desc.tendons[tendon].path[1].rod_length, m->actuator_cranklength[i]);
  }
  World w = MakeWorld(desc);
  ASSERT_NE(w.sim, nullptr);

  // at random states: lengths, rates and the sensors
  std::mt19937 random(11);
  std::uniform_real_distribution<double> angle(-kPi, kPi), rate(-3, 3);
  double worst_length = 0, worst_rate = 0, worst_sensor = 0;
  int broken = 0, whole = 0;
  const JointState start = *w.sim->GetJointState(w.id);
  for (int trial = 0; trial < 300; ++trial) {
    JointState at = start;
    for (int j = 0; j < 3; ++j) {
      d->qpos[j] = angle(random);
      d->qvel[j] = rate(random);
      at.position[j] = d->qpos[j];
      at.velocity[j] = d->qvel[j];
    }
    ASSERT_TRUE(w.sim->SetJointState(w.id, at).ok());
    mj_forward(m, d);
    const std::vector<Real> tendons = *w.sim->GetTendonStates(w.id);
    for (int i = 0; i < m->nu; ++i) {
      const int t = desc.actuators[i].tendon;
      const double gear = m->actuator_gear[6 * i];
      EXPECT_NEAR(gear * tendons[2 * t], d->actuator_length[i], 1e-12) << i << " at " << trial;
      EXPECT_NEAR(gear * tendons[2 * t + 1], d->actuator_velocity[i], 1e-11)
          << i << " at " << trial;
      worst_length =
          std::max(worst_length, std::abs(gear * tendons[2 * t] - d->actuator_length[i]));
      worst_rate =
          std::max(worst_rate, std::abs(gear * tendons[2 * t + 1] - d->actuator_velocity[i]));
      // which branch MuJoCo took: det = (a.v)^2 + r^2 - |v|^2 from its sites
      const int crank = m->actuator_trnid[2 * i], slider = m->actuator_trnid[2 * i + 1];
      double v[3], a[3], av = 0, vv = 0;
      for (int k = 0; k < 3; ++k) {
        v[k] = d->site_xpos[3 * crank + k] - d->site_xpos[3 * slider + k];
        a[k] = d->site_xmat[9 * slider + 3 * k + 2];
        av += a[k] * v[k];
        vv += v[k] * v[k];
      }
      const double r = m->actuator_cranklength[i];
      (av * av + r * r - vv > 0 ? whole : broken) += 1;
    }
    absl::StatusOr<std::vector<Real>> read = ReadFileSensors(*imported, *w.model, *w.sim, w.id);
    ASSERT_TRUE(read.ok()) << read.status();
    ASSERT_EQ(static_cast<int>(read->size()), m->nsensordata);
    for (int k = 0; k < m->nsensordata; ++k) {
      EXPECT_NEAR((*read)[k], d->sensordata[k], 1e-11) << "sensor value " << k;
      worst_sensor = std::max(worst_sensor, std::abs((*read)[k] - d->sensordata[k]));
    }
  }
  std::printf(
      "slider-cranks at 300 states: largest differences from MuJoCo %.1e m (length), %.1e m/s "
      "(rate), %.1e (sensors); %d whole and %d broken cranks\n",
      worst_length, worst_rate, worst_sensor, whole, broken);
  EXPECT_GT(whole, 100);
  EXPECT_GT(broken, 100);

  // under random commands from the file's pose: the hinges follow MuJoCo's
  mj_resetData(m, d);
  ASSERT_TRUE(w.sim->SetJointState(w.id, start).ok());
  std::uniform_real_distribution<double> command(-0.1, 0.1);
  double worst_angle = 0, travel[3] = {0, 0, 0};
  for (int step = 0; step < 1500; ++step) {
    if (step % 250 == 0) {
      std::vector<Real> ctrl(m->nu);
      for (int i = 0; i < m->nu; ++i) d->ctrl[i] = ctrl[i] = command(random);
      ASSERT_TRUE(w.sim->SetControls(w.id, ctrl).ok());
    }
    ASSERT_TRUE(w.sim->StepAll(1).ok());
    mj_step(m, d);
    const JointState joints = *w.sim->GetJointState(w.id);
    for (int j = 0; j < 3; ++j) {
      worst_angle = std::max(worst_angle, std::abs(joints.position[j] - d->qpos[j]));
      travel[j] = std::max(travel[j], std::abs(d->qpos[j]));
    }
  }
  std::printf(
      "slider-cranks under random commands, 3 s: hinges within %.4f rad of MuJoCo's (swung to "
      "%.2f, %.2f, %.2f rad)\n",
      worst_angle, travel[0], travel[1], travel[2]);
  for (double swing : travel) EXPECT_GT(swing, 0.2);
  EXPECT_LT(worst_angle, 0.05);
  absl::StatusOr<WorldStats> stats = w.sim->GetStats(w.id);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->flags & (kWorldNonFinite | kWorldNotConverged), 0u);
}

// spine_tendon.xml: fixed tendons over five and three hinges of a chain (dm_control's dog
// couples its spine this way), a position servo bending one and a motor on the other. Their
// lengths, rates and sensors at random states are MuJoCo's to round-off; under random commands
// from the file's pose the hinges follow MuJoCo's (the limited tendon's bounds met by both, the
// servo's spring implicit in Axion and explicit in MuJoCo), and the limit holds its length.
TEST(TendonTest, TendonsOverManyJointsMoveLikeMuJoCo) {
  SideBySide s = LoadSideBySide(kModels + "/spine_tendon.xml");
  ASSERT_TRUE(s.ok());
  const ModelDesc& desc = s.imported.model;
  const mjModel* m = s.mujoco->m;
  mjData* d = s.mujoco->d;
  ASSERT_EQ(static_cast<int>(desc.tendons.size()), m->ntendon);
  for (int t = 0; t < m->ntendon; ++t) {
    const TendonDesc& tendon = desc.tendons[t];
    ASSERT_EQ(static_cast<int>(tendon.joints.size()), m->tendon_num[t]);
    for (int k = 0; k < m->tendon_num[t]; ++k) {
      const int wrap = m->tendon_adr[t] + k;
      EXPECT_EQ(desc.joints[tendon.joints[k].joint].name,
                mj_id2name(m, mjOBJ_JOINT, m->wrap_objid[wrap]));
      EXPECT_EQ(tendon.joints[k].coef, m->wrap_prm[wrap]);
    }
  }
  EXPECT_EQ(desc.tendons[0].joints.size(), 5u);
  EXPECT_EQ(desc.tendons[1].joints.size(), 3u);
  World& w = s.w;
  const int nq = m->nq;

  // at random states: lengths, rates and the sensors
  std::mt19937 random(5);
  std::uniform_real_distribution<double> angle(-1.5, 1.5), rate(-4, 4);
  double worst_length = 0, worst_rate = 0;
  const JointState start = *w.sim->GetJointState(w.id);
  for (int trial = 0; trial < 200; ++trial) {
    JointState at = start;
    for (int j = 0; j < nq; ++j) {
      d->qpos[j] = at.position[j] = angle(random);
      d->qvel[j] = at.velocity[j] = rate(random);
    }
    ASSERT_TRUE(w.sim->SetJointState(w.id, at).ok());
    mj_forward(m, d);
    const std::vector<Real> tendons = *w.sim->GetTendonStates(w.id);
    for (int t = 0; t < m->ntendon; ++t) {
      worst_length = std::max(worst_length, std::abs(tendons[2 * t] - d->ten_length[t]));
      worst_rate = std::max(worst_rate, std::abs(tendons[2 * t + 1] - d->ten_velocity[t]));
    }
    absl::StatusOr<std::vector<Real>> read = ReadFileSensors(s.imported, *w.model, *w.sim, w.id);
    ASSERT_TRUE(read.ok()) << read.status();
    ASSERT_EQ(static_cast<int>(read->size()), m->nsensordata);
    for (int k = 0; k < m->nsensordata; ++k)
      EXPECT_NEAR((*read)[k], d->sensordata[k], 1e-12) << "sensor value " << k;
  }
  EXPECT_LT(worst_length, 1e-13);
  EXPECT_LT(worst_rate, 1e-12);

  // under random commands from the file's pose, at the file's step h and at h / 4: the
  // difference is the integrators' (MuJoCo's explicit servo spring, Axion's implicit one) and
  // MuJoCo's soft limit (0.027 past the bound), so it shrinks with the step, towards the
  // limit's share (measured: 0.120 rad at 2 ms, 0.063 at 0.5 ms, of 1.13 rad swings)
  std::ifstream in(kModels + "/spine_tendon.xml");
  const std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  double worst_at[2] = {0, 0};
  for (const int scale : {1, 4}) {
    SideBySide run = LoadSideBySide(WriteTempModel(
        absl::StrFormat("spine_tendon_%d.xml", scale),
        absl::StrReplaceAll(
            xml, {{"timestep=\"0.002\"", absl::StrFormat("timestep=\"%.17g\"", 0.002 / scale)}})));
    ASSERT_TRUE(run.ok());
    mjData* data = run.mujoco->d;
    std::mt19937 commands(7);
    std::uniform_real_distribution<double> bend(-0.8, 0.8), wag(-1, 1);
    double worst_angle = 0, swing = 0, longest = 0, mujoco_longest = 0;
    for (int step = 0; step < 1500 * scale; ++step) {
      if (step % (250 * scale) == 0) {
        data->ctrl[0] = bend(commands);
        data->ctrl[1] = wag(commands);
        ASSERT_TRUE(
            run.w.sim->SetControls(run.w.id, std::vector<Real>{data->ctrl[0], data->ctrl[1]}).ok());
      }
      ASSERT_TRUE(run.w.sim->StepAll(1).ok());
      mj_step(run.mujoco->m, data);
      const JointState joints = *run.w.sim->GetJointState(run.w.id);
      for (int j = 0; j < nq; ++j) {
        worst_angle = std::max(worst_angle, std::abs(joints.position[j] - data->qpos[j]));
        swing = std::max(swing, std::abs(data->qpos[j]));
      }
      const std::vector<Real> tendons = *run.w.sim->GetTendonStates(run.w.id);
      longest = std::max(longest, std::abs(static_cast<double>(tendons[0])));
      mujoco_longest = std::max(mujoco_longest, std::abs(data->ten_length[0]));
    }
    worst_at[scale == 1 ? 0 : 1] = worst_angle;
    std::printf(
        "tendons over 5 and 3 hinges, h = %g ms, 3 s of random commands: hinges within %.4f rad "
        "of MuJoCo's (swung to %.2f rad), the limited tendon at most %.6f (MuJoCo %.6f) of "
        "its 0.9 bound\n",
        2.0 / scale, worst_angle, swing, longest, mujoco_longest);
    EXPECT_GT(swing, 0.5);
    EXPECT_LE(longest, 0.9 + 1e-6);
    EXPECT_GT(mujoco_longest, 0.9);  // MuJoCo's limit is soft
    absl::StatusOr<WorldStats> stats = run.w.sim->GetStats(run.w.id);
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->flags & (kWorldNonFinite | kWorldNotConverged), 0u);
  }
  std::printf("tendons over 5 and 3 hinges: lengths within %.1e, rates %.1e of MuJoCo's\n",
              worst_length, worst_rate);
  EXPECT_LT(worst_at[0], 0.15);
  EXPECT_LT(worst_at[1], 0.6 * worst_at[0]);
  EXPECT_LT(worst_at[1], 0.08);
  absl::StatusOr<WorldStats> stats = w.sim->GetStats(w.id);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->flags & (kWorldNonFinite | kWorldNotConverged), 0u);
}

// ---- height fields ---------------------------------------------------------------------

// MuJoCo's binary height map: int32 rows, int32 columns, row-major float32 values.
void WriteBinaryHeightMap(const std::string& path, int rows, int cols,
                          const std::vector<float>& values) {
  std::ofstream out(path, std::ios::binary);
  const int32_t header[2] = {rows, cols};
  out.write(reinterpret_cast<const char*>(header), sizeof(header));
  out.write(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// An 8-bit grey PNG, `pixels` row by row from the image's top.
void WritePngHeightMap(const std::string& path, int rows, int cols,
                       const std::vector<unsigned char>& pixels) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  image.width = cols;
  image.height = rows;
  image.format = PNG_FORMAT_GRAY;
  ASSERT_TRUE(png_image_write_to_file(&image, path.c_str(), 0, pixels.data(), 0, nullptr))
      << image.message;
}

// Surface height of a level height field shape at world (x, y): the grid's triangles (rows
// along y, each cell split along its (r, c) - (r + 1, c + 1) diagonal), interpolated here
// independently of the loader and the narrow phase.
double FieldSurfaceZ(const ShapeDesc& s, double x, double y) {
  const Vec3 p = rotate_inv(s.pose.quat, Vec3{x, y, 0} - s.pose.pos);
  const HeightFieldDesc& f = s.heightfield;
  return s.pose.pos.z +
         HeightFieldHeight(f.heights.data(), f.rows, f.cols, s.size.x, s.size.y, p.x, p.y);
}

// <hfield> read as MuJoCo reads it, from its binary format and from a PNG image (whose top row
// is the grid's last): at 600 points over each field (one turned about z) the surface Axion's
// grid describes is where MuJoCo's own ray meets its hfield, to its float32 storage.
TEST(HeightFieldTest, GridsFromFilesAreMuJoCos) {
  const int rows = 9, cols = 13;
  std::vector<float> ramp;
  std::vector<unsigned char> pixels;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      ramp.push_back(static_cast<float>(2 + std::sin(0.9 * c) * std::cos(0.7 * r) + 0.1 * r));
      pixels.push_back(static_cast<unsigned char>((37 * r + 91 * c * c) % 256));
    }
  }
  const std::string bin = ::testing::TempDir() + "terrain.bin";
  const std::string png = ::testing::TempDir() + "terrain.png";
  WriteBinaryHeightMap(bin, rows, cols, ramp);
  WritePngHeightMap(png, rows, cols, pixels);
  const std::string path =
      WriteTempModel("terrain.xml", absl::StrReplaceAll(R"(<mujoco>
  <asset>
    <hfield name="ramp" file="BIN" size="1.5 1 0.4 0.1"/>
    <hfield name="image" file="PNG" size="1 1.2 0.3 0.2"/>
  </asset>
  <worldbody>
    <geom name="ramp" type="hfield" hfield="ramp" pos="0.2 -0.1 0.05" euler="0 0 30"/>
    <geom name="image" type="hfield" hfield="image" pos="5 0 -0.3"/>
  </worldbody>
</mujoco>)",
                                                        {{"BIN", bin}, {"PNG", png}}));
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  ASSERT_EQ(imported->model.shapes.size(), 2u);
  MuJoCoRun mujoco(path);
  ASSERT_TRUE(mujoco.m) << mujoco.load_error;
  mj_forward(mujoco.m, mujoco.d);
  std::mt19937 rng(7);
  double worst = 0;
  for (int k = 0; k < 2; ++k) {
    const ShapeDesc& field = imported->model.shapes[k];
    ASSERT_EQ(field.type, ShapeType::kHeightField);
    EXPECT_EQ(field.heightfield.rows, rows);
    EXPECT_EQ(field.heightfield.cols, cols);
    EXPECT_NEAR(field.size.z, k == 0 ? 0.1 : 0.2, 1e-15);
    std::uniform_real_distribution<double> along(-0.98, 0.98);
    for (int n = 0; n < 600; ++n) {
      const Vec3 local{along(rng) * field.size.x, along(rng) * field.size.y, 0};
      const Vec3 at = field.pose.pos + rotate(field.pose.quat, local);
      mjtNum from[3] = {at.x, at.y, 10}, down[3] = {0, 0, -1};
      int geom = -1;
      const mjtNum distance = mj_ray(mujoco.m, mujoco.d, from, down, nullptr, 1, -1, &geom);
      ASSERT_EQ(geom, k);
      worst = std::max(worst, std::abs((10 - distance) - FieldSurfaceZ(field, at.x, at.y)));
    }
  }
  std::printf("height fields from a binary file and a PNG: within %.1e m of MuJoCo's ray\n", worst);
  EXPECT_LT(worst, 1e-6);
}

// A ball rolls down terrain (a tilted grid of 40 x 20 cells with a bump) side by side with
// MuJoCo: without slipping down the slope, a = 5/7 g sin(theta), across 28 cell edges and
// diagonals until it nears the bump, then over the bump's side as MuJoCo's ball goes. MuJoCo's
// own ball falls behind the rolling law as it goes (its soft contacts slip: 2.6 cm by 1.4 s),
// which sets how far apart the two end up.
TEST(HeightFieldTest, BallRollsDownTerrainAsInMuJoCo) {
  const int rows = 21, cols = 41;
  std::vector<float> terrain;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const double x = -2 + 4.0 * c / (cols - 1), y = -1 + 2.0 * r / (rows - 1);
      terrain.push_back(static_cast<float>(
          0.2 * (2 - x) + 0.08 * std::exp(-8 * ((x - 0.6) * (x - 0.6) + (y - 0.15) * (y - 0.15)))));
    }
  }
  const std::string bin = ::testing::TempDir() + "slope.bin";
  WriteBinaryHeightMap(bin, rows, cols, terrain);
  float low = *std::min_element(terrain.begin(), terrain.end());
  float high = *std::max_element(terrain.begin(), terrain.end());
  // the file's values, normalised, scaled back to metres by the elevation size
  const std::string path = WriteTempModel(
      "slope.xml", absl::StrReplaceAll(R"(<mujoco>
  <option timestep="0.002"/>
  <asset><hfield name="slope" file="BIN" size="2 1 TOP 0.2"/></asset>
  <worldbody>
    <geom type="hfield" hfield="slope" pos="0 0 LOW"/>
    <body pos="-1.4 0 Z"><freejoint/><geom type="sphere" size="0.1" density="500"/></body>
  </worldbody>
</mujoco>)",
                                       {{"BIN", bin},
                                        {"TOP", absl::StrCat(high - low)},
                                        {"LOW", absl::StrCat(low)},
                                        {"Z", absl::StrCat(0.2 * 3.4 + 0.1 * std::sqrt(1.04))}}));
  SideBySide s = LoadSideBySide(path);
  ASSERT_TRUE(s.ok());
  const double sin_theta = 0.2 / std::sqrt(1.04), g = 9.81;
  double worst = 0, worst_early = 0, mujoco_early = 0, lowest = 1;
  for (int n = 1; n <= 1100; ++n) {
    absl::StatusOr<FileCoordinates> c = StepBoth(s);
    ASSERT_TRUE(c.ok()) << c.status();
    const double* q = s.mujoco->d->qpos;
    const double apart =
        std::hypot(std::hypot(c->position[0] - q[0], c->position[1] - q[1]), c->position[2] - q[2]);
    worst = std::max(worst, apart);
    const double t = 0.002 * n;
    if (t <= 1.4) {
      // down the slope, before the bump: x - x0 = 5/14 g sin(theta) cos(theta) t^2
      const double along = 5.0 / 14 * g * sin_theta * t * t / std::sqrt(1.04);
      worst_early = std::max(worst_early, std::abs(c->position[0] - (-1.4 + along)));
      mujoco_early = std::max(mujoco_early, std::abs(q[0] - (-1.4 + along)));
    }
    lowest = std::min(
        lowest, c->position[2] - 0.1 -
                    FieldSurfaceZ(s.imported.model.shapes[0], c->position[0], c->position[1]));
  }
  const double* q = s.mujoco->d->qpos;
  std::printf(
      "ball down terrain, 2.2 s: within %.1e m of rolling's law over 1.4 s (MuJoCo %.1e m), "
      "%.1e m of MuJoCo's path (MuJoCo at %.3f %.3f %.3f); lowest centre %.1e m above the "
      "surface's height (r / cos(theta) - r = 2.0e-03 on the slope)\n",
      worst_early, mujoco_early, worst, q[0], q[1], q[2], lowest);
  EXPECT_LT(worst_early, 3e-3);  // measured 1.8e-3: the implicit step's own error
  EXPECT_LT(worst, 0.2);
  EXPECT_GT(lowest, -1e-3);  // never sunk into the terrain
  EXPECT_GT(q[0], 1.0);      // past the bump
}

// Rangefinders see height fields as MuJoCo's do: eight rays from a probe (a mocap body) moved
// to 60 places over terrain turned about z, straight down, slanted, nearly level (crossing
// many cells) and up (a miss), each reading MuJoCo's own to rounding. Except where MuJoCo 2.2
// has a ray leave the field's box through a side above the surface there: its hfield's sides
// stand to the full elevation (later MuJoCo clips them to the surface, as Axion's solid is);
// those readings are counted apart.
TEST(HeightFieldTest, RangefindersSeeTerrainAsMuJoCos) {
  const int rows = 15, cols = 21;
  std::vector<float> bumps;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c)
      bumps.push_back(static_cast<float>(std::sin(0.7 * c) * std::cos(0.5 * r) + 0.05 * c));
  }
  const std::string bin = ::testing::TempDir() + "probe_terrain.bin";
  WriteBinaryHeightMap(bin, rows, cols, bumps);
  const std::string path = WriteTempModel("probe_terrain.xml", absl::StrReplaceAll(R"(<mujoco>
  <option gravity="0 0 0"/>
  <asset><hfield name="t" file="BIN" size="2 1.5 0.4 0.2"/></asset>
  <worldbody>
    <geom type="hfield" hfield="t" pos="0.1 -0.2 0.05" euler="0 0 20"/>
    <body name="probe" mocap="true" pos="0 0 1">
      <site name="down" zaxis="0 0 -1"/>
      <site name="slant_a" zaxis="0.3 0.2 -1"/>
      <site name="slant_b" zaxis="-0.5 0.1 -1"/>
      <site name="slant_c" zaxis="0.1 -0.7 -1"/>
      <site name="level_a" zaxis="1 0.2 -0.15"/>
      <site name="level_b" zaxis="-0.3 -1 -0.1"/>
      <site name="offset" pos="0.2 0.1 0" zaxis="0 0.1 -1"/>
      <site name="up" zaxis="0 0 1"/>
    </body>
    <body name="ball" pos="3 3 3"><freejoint/><geom size="0.1"/></body>
  </worldbody>
  <sensor>
    <rangefinder site="down"/><rangefinder site="slant_a"/><rangefinder site="slant_b"/>
    <rangefinder site="slant_c"/><rangefinder site="level_a"/><rangefinder site="level_b"/>
    <rangefinder site="offset"/><rangefinder site="up"/>
  </sensor>
</mujoco>)",
                                                                                   {{"BIN", bin}}));
  SideBySide run = LoadSideBySide(path);
  ASSERT_TRUE(run.ok());
  const mjModel* m = run.mujoco->m;
  mjData* d = run.mujoco->d;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> x(-1.8, 1.8), y(-1.4, 1.4), z(0.5, 1.2), a(-0.4, 0.4);
  double worst = 0;
  int hits = 0, misses = 0, unclipped = 0;
  const ShapeDesc& field = run.imported.model.shapes[0];
  for (int n = 0; n < 60; ++n) {
    const Quat q = quat_normalized(Quat{1, a(rng), a(rng), a(rng)});
    const std::vector<Real> pose = {x(rng), y(rng), z(rng), q.w, q.x, q.y, q.z};
    ASSERT_TRUE(run.w.sim->SetMocapPoses(run.w.id, pose).ok());
    for (int i = 0; i < 3; ++i) d->mocap_pos[i] = pose[i];
    for (int i = 0; i < 4; ++i) d->mocap_quat[i] = pose[3 + i];
    mj_forward(m, d);
    absl::StatusOr<std::vector<Real>> data =
        ReadFileSensors(run.imported, *run.w.model, *run.w.sim, run.w.id);
    ASSERT_TRUE(data.ok()) << data.status();
    for (int i = 0; i < m->nsensor; ++i) {
      const double mine = (*data)[m->sensor_adr[i]], theirs = d->sensordata[m->sensor_adr[i]];
      if (theirs >= 0) {
        // where MuJoCo's ray ends: on the box's side above the surface?
        const int site = m->sensor_objid[i];
        const double* o = d->site_xpos + 3 * site;
        const double* r = d->site_xmat + 9 * site;
        const Vec3 hit{o[0] + theirs * r[2], o[1] + theirs * r[5], o[2] + theirs * r[8]};
        const Vec3 local = rotate_inv(field.pose.quat, hit - field.pose.pos);
        const bool on_side =
            std::abs(local.x) > field.size.x - 1e-6 || std::abs(local.y) > field.size.y - 1e-6;
        if (on_side && hit.z > FieldSurfaceZ(field, hit.x, hit.y) + 1e-6) {
          ++unclipped;
          EXPECT_EQ(mine, -1);  // Axion's ray leaves there
          continue;
        }
      }
      (theirs >= 0 ? hits : misses)++;
      worst = std::max(worst, std::abs(mine - theirs));
      EXPECT_NEAR(mine, theirs, 1e-6) << mj_id2name(m, mjOBJ_SENSOR, i) << " at place " << n;
    }
  }
  std::printf(
      "rangefinders over terrain: %d hits, %d misses, within %.1e m of MuJoCo's; %d leaving "
      "through a side above the surface, where MuJoCo 2.2's full-height sides stop them\n",
      hits, misses, worst, unclipped);
  EXPECT_GT(hits, 200);
  EXPECT_GT(misses, 100);
  EXPECT_LT(unclipped, 5);
}

}  // namespace
}  // namespace axion
