// Free rigid-body motion: implicit integration, gyroscopic torque, quaternion normalisation,
// batching determinism.
#include <cmath>
#include <cstring>

#include "scenes.h"

namespace axion {
namespace {

using test::MustCompile;
using test::MustCreateSimulator;
using test::MustCreateWorld;
using test::MustStep;

// The rate of the rotation vector phi = log(R) under dR/dt = [w] R, from
// rotation_vector_rate_direction, against a central difference of log(exp(t w) R), from near
// identity (the series branch) to near a half turn.
TEST(RigidBodyTest, RotationVectorRateMatchesFiniteDifference) {
  const Vec3 w{0.3, -1.1, 0.7};
  for (Real angle : {Real(1e-3), Real(0.02), Real(0.5), Real(1.5), Real(2.5), Real(3.1)}) {
    const Vec3 axis = normalized(Vec3{1, 2, -0.5});
    const Quat r = quat_from_axis_angle(axis, angle);
    const Vec3 phi = quat_log(r);
    const Real t = 1e-6;
    auto turned = [&](Real s) {
      return quat_log(quat_from_axis_angle(normalized(w), s * norm(w)) * r);
    };
    const Vec3 rate = (Real(0.5) / t) * (turned(t) - turned(-t));
    for (int k = 0; k < 3; ++k) {
      Vec3 e{k == 0 ? Real(1) : Real(0), k == 1 ? Real(1) : Real(0), k == 2 ? Real(1) : Real(0)};
      EXPECT_NEAR(dot(rotation_vector_rate_direction(phi, e), w), rate[k], 1e-6)
          << "angle " << angle << " component " << k;
    }
  }
}

TEST(RigidBodyTest, FreeFallMatchesBackwardEulerRecurrence) {
  ModelDesc d;
  d.options.timestep = 0.01;
  BodyDesc b;
  b.name = "ball";
  b.mass = 2;
  b.inertia = test::SphereInertia(2, 0.1);
  b.pose.pos = {0, 0, 10};
  b.linear_velocity = {1, -0.5, 2};
  d.bodies.push_back(b);
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  const Real h = 0.01, g = -9.81;
  for (int n = 1; n <= 200; ++n) {
    MustStep(*sim, w);
    if (n % 20 != 0) continue;
    // v_n = v_0 + n h g;  x_n = x_0 + n h v_0 + h^2 g n (n + 1) / 2
    Vec3 x = test::BodyPos(*sim, w, 0);
    Vec3 v = test::BodyVel(*sim, w, 0);
    EXPECT_NEAR(v.z, 2 + n * h * g, 1e-12);
    EXPECT_NEAR(x.z, 10 + n * h * 2 + h * h * g * n * (n + 1) / 2, 1e-11);
    EXPECT_NEAR(x.x, n * h * 1.0, 1e-12);
    EXPECT_NEAR(x.y, n * h * -0.5, 1e-12);
  }
  test::ExpectHealthy(*sim, w);
}

// A ball falling through a fluid (SolverOptions::fluid_viscosity, fluid_density) reaches its
// terminal speed: the drag, taken at each step's start, balances its weight. The ball's
// equivalent box has sides s = sqrt(6 I / m) = sqrt(12 / 5) r; viscous drag 3 pi mu s v gives
// v = m g / (3 pi mu s), quadratic drag rho / 2 s^2 v^2 gives v = sqrt(2 m g / (rho s^2)).
// Negative coefficients are refused.
// A ball of 1 kg and radius 0.1 m at the origin, stepped at 0.01 s.
ModelDesc OneBall() {
  ModelDesc d;
  d.options.timestep = 0.01;
  BodyDesc b;
  b.mass = 1;
  b.inertia = test::SphereInertia(1, 0.1);
  d.bodies.push_back(b);
  return d;
}

TEST(RigidBodyTest, FallingBallReachesTheFluidsTerminalSpeed) {
  auto fall = [](Real density, Real viscosity) {
    ModelDesc d = OneBall();
    d.options.fluid_density = density;
    d.options.fluid_viscosity = viscosity;
    auto sim = MustCreateSimulator();
    WorldId w = MustCreateWorld(*sim, MustCompile(d));
    MustStep(*sim, w, 3000);  // 30 s: 44 of the viscous fall's time constants m / k
    test::ExpectHealthy(*sim, w);
    return -test::BodyVel(*sim, w, 0).z;
  };
  const Real kPi = 3.14159265358979323846, g = 9.81, side = std::sqrt(12.0 / 5.0) * 0.1;
  EXPECT_NEAR(fall(0, 1), g / (3 * kPi * 1 * side), 1e-9);
  EXPECT_NEAR(fall(100, 0), std::sqrt(2 * g / (100 * side * side)), 1e-9);
  EXPECT_NEAR(fall(0, 0), g * 30, 1e-9);  // no fluid: free fall for 30 s
  ModelDesc bad;
  bad.options.fluid_density = -1;
  EXPECT_FALSE(Model::Compile(bad).ok());
}

// A free body pushed by a force too small to change its velocity by newton_tolerance in a step
// (1e-5 N on 1 kg: 1e-7 m/s per step) still accelerates at F / m: a body no row acts on takes
// its unconstrained velocity u~ exactly. Started at u- as constrained bodies are, it took no
// Newton step and never moved.
TEST(RigidBodyTest, FreeBodyFollowsForcesBelowTheNewtonTolerance) {
  ModelDesc d = OneBall();
  d.options.gravity = {0, 0, 0};
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  std::vector<Real> wrench(6, 0);
  wrench[0] = 1e-5;  // N
  wrench[5] = 1e-8;  // N m about z, on I = 0.004 kg m^2: 2.5e-8 rad/s per step
  ASSERT_TRUE(sim->SetExternalForces(w, wrench).ok());
  MustStep(*sim, w, 100);
  EXPECT_NEAR(test::BodyVel(*sim, w, 0).x, 1e-5, 1e-15);
  EXPECT_NEAR(test::BodyPos(*sim, w, 0).x, 1e-5 * 0.01 * 0.01 * 100 * 101 / 2, 1e-15);
  EXPECT_NEAR(test::BodyOmega(*sim, w, 0).z, 1e-8 / 0.004, 1e-15);
  EXPECT_EQ(sim->GetStats(w)->newton_iterations, 0);
}

// World-frame angular momentum L = R I R^T w of body 0.
// An actuator on a site pushes its body alone: the site's force, turned from its frame through
// the body's, at the site's offset, and its torque. A ball (isotropic inertia, so no gyroscopic
// torque) turned a quarter about z, its site a quarter about x: the site's z axis is the world's
// +x. Force 3 * 2 = 6 N (clamped to 4 N in a second world) along it at (0.2, 0.3, 0) in the
// body's frame, and 0.1 N m per newton about it: after one step v = h F / m, w = h T / I.
TEST(RigidBodyTest, SiteActuatorPushesItsBodyAtTheSite) {
  ModelDesc d = OneBall();
  d.options.gravity = {0, 0, 0};
  const Real kQuarter = Real(1.57079632679489661923);
  d.bodies[0].pose.quat = quat_from_axis_angle({0, 0, 1}, kQuarter);
  ActuatorDesc jet;
  jet.name = "jet";
  jet.gear = 3;
  jet.site_body = 0;
  jet.site_pose = {{0.2, 0.3, 0}, quat_from_axis_angle({1, 0, 0}, kQuarter)};
  jet.site_wrench = {0, 0, 1, 0, 0, 0.1};
  d.actuators.push_back(jet);
  ModelDesc limited = d;
  limited.actuators[0].force_limited = true;
  limited.actuators[0].force_min = -1;
  limited.actuators[0].force_max = 4;
  auto sim = MustCreateSimulator();
  const WorldId free = MustCreateWorld(*sim, MustCompile(d));
  const WorldId bounded = MustCreateWorld(*sim, MustCompile(limited));
  const Real h = d.options.timestep, mass = d.bodies[0].mass, inertia = d.bodies[0].inertia(0, 0);
  for (auto [w, force] : {std::pair{free, Real(6)}, std::pair{bounded, Real(4)}}) {
    ASSERT_TRUE(sim->SetControls(w, std::vector<Real>{2}).ok());
    MustStep(*sim, w);
    // in the body's frame: force (0, -F, 0) at (0.2, 0.3, 0) gives (0, 0, -0.2 F), and the
    // site's torque (0, -0.1 F, 0); the quarter turn about z takes body x to world y
    const Vec3 torque{Real(0.1) * force, 0, Real(-0.2) * force};
    const Vec3 v = test::BodyVel(*sim, w, 0), omega = test::BodyOmega(*sim, w, 0);
    const Vec3 expected_omega = (h / inertia) * torque;
    // the body's origin is its centre of mass: its velocity is the centre's
    EXPECT_NEAR(v.x, h * force / mass, 1e-12);
    EXPECT_NEAR(v.y, 0, 1e-12);
    EXPECT_NEAR(v.z, 0, 1e-12);
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(omega[k], expected_omega[k], 1e-12) << k;
    test::ExpectHealthy(*sim, w);
  }
}

// A site actuator names a body, pushes through a finite frame and wrench, and is an effort.
TEST(RigidBodyTest, SiteActuatorIsValidated) {
  ModelDesc d = OneBall();
  ActuatorDesc jet;
  jet.site_body = 0;
  d.actuators.push_back(jet);
  ASSERT_TRUE(Model::Compile(d).ok());
  auto fails_with = [&](const ModelDesc& bad, const std::string& text) {
    const absl::Status status = Model::Compile(bad).status();
    EXPECT_NE(status.message().find(text), std::string::npos) << status;
  };
  ModelDesc bad = d;
  bad.actuators[0].site_body = 1;
  fails_with(bad, "site_body refers to missing body 1");
  bad = d;
  bad.actuators[0].tendon = 0;
  fails_with(bad, "one transmission");
  bad = d;
  bad.actuators[0].site_body = -2;
  fails_with(bad, "missing body -2");
  bad = d;
  bad.actuators[0].type = ActuatorType::kPosition;
  fails_with(bad, "site actuators are efforts");
  bad = d;
  bad.actuators[0].site_wrench[4] = NAN;
  fails_with(bad, "site_wrench");
  bad = d;
  bad.actuators[0].site_pose.quat = {0, 0, 0, 0};
  fails_with(bad, "site_pose.quat");
  bad = d;
  bad.actuators[0].site_pose.pos.x = INFINITY;
  fails_with(bad, "site_pose.pos");
}

Vec3 AngularMomentum(Simulator& sim, WorldId w, const Mat33& inertia) {
  Quat q = test::BodyQuat(sim, w, 0);
  Vec3 omega = test::BodyOmega(sim, w, 0);
  return rotate(q, inertia * rotate_inv(q, omega));
}
Real KineticEnergy(Simulator& sim, WorldId w, const Mat33& inertia) {
  Quat q = test::BodyQuat(sim, w, 0);
  Vec3 wb = rotate_inv(q, test::BodyOmega(sim, w, 0));
  return 0.5 * dot(wb, inertia * wb);
}

TEST(RigidBodyTest, IntermediateAxisConservesMomentumAndNeverGainsEnergy) {
  ModelDesc d;
  d.options.timestep = 1e-3;
  d.options.gravity = {0, 0, 0};
  BodyDesc b;
  b.mass = 1;
  b.inertia = mat33_diag({1, 2, 3});
  b.angular_velocity = {0.01, 4, 0.01};  // about the intermediate axis: unstable, it flips
  d.bodies.push_back(b);
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  const Vec3 l0 = AngularMomentum(*sim, w, b.inertia);
  const Real e0 = KineticEnergy(*sim, w, b.inertia);
  bool flipped = false;
  Real max_l_error = 0, max_l_norm_error = 0, max_e_growth = 0;
  for (int n = 0; n < 10000; ++n) {
    MustStep(*sim, w);
    Vec3 l = AngularMomentum(*sim, w, b.inertia);
    max_l_norm_error = std::max(max_l_norm_error, std::fabs(norm(l) - norm(l0)) / norm(l0));
    // The vector too: a wrong-signed gyroscopic term turns L around within a few steps. The
    // midpoint rule keeps |L| exactly and lets its direction drift at O(h^2).
    max_l_error = std::max(max_l_error, norm(l - l0) / norm(l0));
    max_e_growth = std::max(max_e_growth, (KineticEnergy(*sim, w, b.inertia) - e0) / e0);
    Vec3 wb = rotate_inv(test::BodyQuat(*sim, w, 0), test::BodyOmega(*sim, w, 0));
    if (wb.y < 0) flipped = true;
  }
  std::printf("max ||L|-|L0||/|L0| = %.3g, max |L - L0|/|L0| = %.3g, max energy growth = %.3g\n",
              max_l_norm_error, max_l_error, max_e_growth);
  EXPECT_TRUE(flipped) << "rotation about the intermediate axis must be unstable (Dzhanibekov)";
  EXPECT_LT(max_l_norm_error, 1e-3);
  EXPECT_LT(max_l_error, 1e-2);
  EXPECT_LT(max_e_growth, 1e-4);
}

TEST(RigidBodyTest, QuaternionStaysUnitOverHundredThousandSteps) {
  ModelDesc d;
  d.options.timestep = 1e-3;
  BodyDesc b;
  b.inertia = mat33_diag({0.1, 0.2, 0.25});
  b.angular_velocity = {3, -2, 5};
  d.bodies.push_back(b);
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  Real worst = 0;
  for (int chunk = 0; chunk < 100; ++chunk) {
    MustStep(*sim, w, 1000);
    worst = std::max(worst, std::fabs(quat_norm(test::BodyQuat(*sim, w, 0)) - 1));
  }
  EXPECT_LT(worst, 1e-6);
}

// A scene touching every solver path: a pendulum, a limited hinge with a drive, and a box
// falling on the ground, with per-world parameters.
ModelDesc VariedScene(int variant) {
  ModelDesc d;
  d.options.timestep = 0.01;
  Real s = 1 + 0.01 * variant;
  BodyDesc link;
  link.name = "link";
  link.mass = s;
  link.inertia = test::BoxInertia(s, {0.05, 0.05, 0.5});
  link.pose.pos = {0, 0, 1.5};
  link.angular_velocity = {0.1 * variant, 0, 0};
  d.bodies.push_back(link);
  BodyDesc box;
  box.name = "box";
  box.mass = 2 * s;
  box.inertia = test::BoxInertia(2 * s, {0.1, 0.1, 0.1});
  box.pose.pos = {1, 0, 0.3 + 0.001 * variant};
  box.linear_velocity = {0.05 * variant, 0, 0};
  d.bodies.push_back(box);
  JointDesc j;
  j.parent = kWorldBody;
  j.child = 0;
  j.child_frame.pos = {0, 0, 0.5};
  j.axis = Vec3{1, 0, 0};
  j.limited = true;
  j.lower = {-0.5};
  j.upper = {0.5};
  j.drive.damping = 0.1 * s;
  d.joints.push_back(j);
  ShapeDesc ground;
  ground.type = ShapeType::kPlane;
  d.shapes.push_back(ground);
  ShapeDesc cube;
  cube.body = 1;
  cube.type = ShapeType::kBox;
  cube.size = {0.1, 0.1, 0.1};
  d.shapes.push_back(cube);
  return d;
}

std::string StateBytes(Simulator& sim, WorldId w) {
  BodyState st = *sim.GetBodyState(w);
  JointState js = *sim.GetJointState(w);
  std::string out(reinterpret_cast<const char*>(st.pose.data()), st.pose.size() * sizeof(Real));
  out.append(reinterpret_cast<const char*>(st.velocity.data()), st.velocity.size() * sizeof(Real));
  out.append(reinterpret_cast<const char*>(js.position.data()), js.position.size() * sizeof(Real));
  return out;
}

TEST(RigidBodyTest, BatchOf64IsBitIdenticalToSingleWorldRunsAndReruns) {
  constexpr int kWorlds = 64, kSteps = 60;
  std::vector<std::shared_ptr<const Model>> models;
  for (int i = 0; i < kWorlds; ++i) models.push_back(MustCompile(VariedScene(i)));

  auto run_batch = [&] {
    auto sim = MustCreateSimulator(2);
    std::vector<WorldId> ids;
    for (int i = 0; i < kWorlds; ++i) ids.push_back(MustCreateWorld(*sim, models[i]));
    for (int n = 0; n < kSteps; ++n) EXPECT_TRUE(sim->StepAll().ok());
    std::vector<std::string> out;
    for (WorldId id : ids) out.push_back(StateBytes(*sim, id));
    return out;
  };
  std::vector<std::string> batch = run_batch();
  std::vector<std::string> again = run_batch();
  for (int i = 0; i < kWorlds; ++i) {
    auto single = MustCreateSimulator(1);
    WorldId w = MustCreateWorld(*single, models[i]);
    MustStep(*single, w, kSteps);
    EXPECT_EQ(batch[i], StateBytes(*single, w)) << "world " << i << " differs from its single run";
    EXPECT_EQ(batch[i], again[i]) << "world " << i << " differs between two identical runs";
  }
}

}  // namespace
}  // namespace axion
