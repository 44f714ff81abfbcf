// Contacts and Coulomb friction through the non-smooth Newton solve: resting, sticking on
// inclines, sliding, isotropy, stacking, speculative contacts, restitution, capacity overflow.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "height_field_height.h"
#include "scenes.h"

namespace axion {
namespace {

using test::MustCompile;
using test::MustCreateSimulator;
using test::MustCreateWorld;
using test::MustStep;

constexpr Real kPi = 3.14159265358979323846;
constexpr Real kG = 9.81;

ShapeDesc Ground(Real friction = 0.5, Quat tilt = {}) {
  ShapeDesc s;
  s.name = "ground";
  s.type = ShapeType::kPlane;
  s.pose.quat = tilt;
  s.material.friction = friction;
  return s;
}

void AddBox(ModelDesc& d, Vec3 pos, Quat rot, Real half = 0.1, Real mass = 1, Real friction = 0.5) {
  BodyDesc b;
  b.name = "box" + std::to_string(d.bodies.size());
  b.mass = mass;
  b.inertia = test::BoxInertia(mass, {half, half, half});
  b.pose = {pos, rot};
  d.bodies.push_back(b);
  ShapeDesc s;
  s.body = static_cast<int>(d.bodies.size()) - 1;
  s.type = ShapeType::kBox;
  s.size = {half, half, half};
  s.material.friction = friction;
  d.shapes.push_back(s);
}

// A 1 kg ball of radius 0.1 m at `pos`; returns its shape.
ShapeDesc& AddBall(ModelDesc& d, Vec3 pos, Real friction = 0.5) {
  BodyDesc ball;
  ball.mass = 1;
  ball.inertia = test::SphereInertia(1, 0.1);
  ball.pose.pos = pos;
  d.bodies.push_back(ball);
  ShapeDesc s;
  s.body = static_cast<int>(d.bodies.size()) - 1;
  s.type = ShapeType::kSphere;
  s.size = {0.1, 0, 0};
  s.material.friction = friction;
  d.shapes.push_back(s);
  return d.shapes.back();
}

TEST(ContactTest, SphereRestsOnPlaneWithoutDriftOrJitter) {
  ModelDesc d;
  d.options.timestep = 0.01;
  d.shapes.push_back(Ground());
  BodyDesc ball;
  ball.mass = 1;
  ball.inertia = test::SphereInertia(1, 0.1);
  ball.pose.pos = {0, 0, 0.1};
  d.bodies.push_back(ball);
  ShapeDesc s;
  s.body = 0;
  s.type = ShapeType::kSphere;
  s.size = {0.1, 0, 0};
  d.shapes.push_back(s);
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  Real max_penetration = 0, z_min = 1e9, z_max = -1e9;
  for (int n = 0; n < 1000; ++n) {
    MustStep(*sim, w);
    Vec3 x = test::BodyPos(*sim, w, 0);
    max_penetration = std::max<Real>(max_penetration, 0.1 - x.z);
    if (n >= 500) {
      z_min = std::min(z_min, x.z);
      z_max = std::max(z_max, x.z);
    }
    EXPECT_LT(std::hypot(x.x, x.y), 1e-9);
    test::ExpectHealthy(*sim, w);
    if (::testing::Test::HasFailure()) break;
  }
  std::printf("sphere at rest: max penetration %.3g m, z range over last 5 s %.3g m\n",
              max_penetration, z_max - z_min);
  EXPECT_LT(max_penetration, 1e-4);
  EXPECT_LT(z_max - z_min, 1e-6);
  EXPECT_EQ(sim->GetStats(w)->contact_count, 1);
}

// A box resting on a plane tilted by `degrees` about y; returns its displacement after `seconds`
// and its velocity along the slope.
struct SlideResult {
  Real displacement, speed;
};
SlideResult SlideOnIncline(Real degrees, Real seconds) {
  Real angle = degrees * kPi / 180;
  Quat tilt = quat_from_axis_angle({0, 1, 0}, angle);
  ModelDesc d;
  d.options.timestep = 0.01;
  d.shapes.push_back(Ground(0.5, tilt));
  AddBox(d, rotate(tilt, {0, 0, 0.1}), tilt);
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  Vec3 x0 = test::BodyPos(*sim, w, 0);
  MustStep(*sim, w, static_cast<int>(std::lround(seconds / 0.01)));
  test::ExpectHealthy(*sim, w);
  Vec3 slope = rotate(tilt, {1, 0, 0});
  return {norm(test::BodyPos(*sim, w, 0) - x0), std::fabs(dot(test::BodyVel(*sim, w, 0), slope))};
}

TEST(ContactTest, BoxSticksOnTwentyDegreeIncline) {
  SlideResult r = SlideOnIncline(20, 5);
  std::printf("20 degrees, mu 0.5: moved %.3g m in 5 s\n", r.displacement);
  EXPECT_LT(r.displacement, 1e-4);
}

TEST(ContactTest, BoxSlidesOnThirtyDegreeInclineAtAnalyticAcceleration) {
  SlideResult r = SlideOnIncline(30, 1);
  Real a = kG * (std::sin(kPi / 6) - 0.5 * std::cos(kPi / 6));
  std::printf("30 degrees, mu 0.5: speed after 1 s %.5f m/s, analytic %.5f m/s\n", r.speed, a);
  EXPECT_NEAR(r.speed, a, 0.02 * a);
}

Real PushedBoxDisplacement(Real force, Real seconds, Real* speed) {
  ModelDesc d;
  d.options.timestep = 0.01;
  d.shapes.push_back(Ground());
  AddBox(d, {0, 0, 0.1}, {});
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  std::vector<Real> wrench{force, 0, 0, 0, 0, 0};
  EXPECT_TRUE(sim->SetExternalForces(w, wrench).ok());
  MustStep(*sim, w, static_cast<int>(std::lround(seconds / 0.01)));
  test::ExpectHealthy(*sim, w);
  *speed = test::BodyVel(*sim, w, 0).x;
  return test::BodyPos(*sim, w, 0).x;
}

TEST(ContactTest, StaticFrictionHoldsWithoutCreep) {
  Real speed;
  Real moved = PushedBoxDisplacement(0.8 * 0.5 * 1 * kG, 5, &speed);
  std::printf("pushed with 0.8 mu m g: moved %.3g m in 5 s\n", moved);
  EXPECT_LT(std::fabs(moved), 1e-4);
}

// A box pushed along the floor by exactly mu m g every other step and by 0.95 of it in between,
// alone and carrying a bob on a ball joint: at the full push the solution sits on the edge of
// the friction cone without slip, a degenerate solution (a = b = 0 in kernels_contact.h's
// friction_w) where the Fischer-Burmeister linearisation made Newton converge linearly (with
// the bob 8.4 iterations per step and 4e-5 m of creep over 2 s; the box alone, when worlds of
// contacts only kept the Jacobi diagonal, 28 iterations at each full push, half the steps at the
// Newton limit). The corner's piecewise-linear form lands on it in about two and a half, and
// with the bob in one since the friction rows' derivative in the normal impulse counts the
// cone's own change (W_cone in kernels_contact.h: 2.13 iterations per step without it).
void PushAtTheFrictionLimit(bool with_bob) {
  ModelDesc d;
  d.options.timestep = 0.01;
  d.shapes.push_back(Ground());
  AddBox(d, {0, 0, 0.1}, {});
  Real mass = 1;
  if (with_bob) {
    BodyDesc bob;
    bob.name = "bob";
    bob.mass = 0.5;
    bob.inertia = test::SphereInertia(0.5, 0.05);
    bob.pose.pos = {0, 0, 0.4};
    d.bodies.push_back(bob);
    JointDesc joint;
    joint.type = JointType::kBall;
    joint.parent = 0;
    joint.child = 1;
    joint.child_frame.pos = {0, 0, -0.3};
    d.joints.push_back(joint);
    mass += bob.mass;
  }
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  std::vector<Real> wrench(6 * d.bodies.size(), 0);
  long newton = 0;
  int not_converged = 0;
  const int steps = 200;
  for (int n = 0; n < steps; ++n) {
    wrench[0] = (n % 2 ? 1.0 : 0.95) * 0.5 * mass * kG;
    ASSERT_TRUE(sim->SetExternalForces(w, wrench).ok());
    MustStep(*sim, w);
    WorldStats st = *sim->GetStats(w);
    newton += st.newton_iterations;
    not_converged += (st.flags & kWorldNotConverged) != 0;
  }
  test::ExpectHealthy(*sim, w);
  Real moved = test::BodyPos(*sim, w, 0).x;
  std::printf(
      "box%s pushed at mu m g every other step: %.2f Newton per step, %d not converged, "
      "moved %.3g m\n",
      with_bob ? " with a bob" : "", double(newton) / steps, not_converged, moved);
  EXPECT_EQ(not_converged, 0);
  EXPECT_LT(double(newton) / steps, with_bob ? 1.5 : 3.0);
  EXPECT_LT(std::fabs(moved), 1e-6);
}

// A box on two slides (x and y free, its height and rotation held by the joint) sits 0.5 mm into
// the floor, as Gym's thrower holds its target. No motion can bring it out of the floor or
// closer, so its contacts with the floor could neither act nor be resolved: the model leaves the
// pair out, whether the filter or an explicit pair asked for it, and the box slides under a push
// at F / m, every step converged (before: every step at the Newton limit, halved to the last
// level). A free height, or a floor tilted across a free axis, keeps the pair.
TEST(ContactTest, BodyHeldAlongAPlanesNormalDoesNotTouchIt) {
  auto slid_box = [](std::array<AxisMode, 6> modes, Quat floor_tilt, bool explicit_pair) {
    ModelDesc d;
    d.options.timestep = 0.01;
    d.shapes.push_back(Ground(0.5, floor_tilt));
    AddBox(d, {0, 0, 0.1 - 0.0005}, {});
    JointDesc slides;
    slides.type = JointType::kGeneric;
    slides.child = 0;
    slides.axis_mode = modes;
    d.joints.push_back(slides);
    if (explicit_pair) {
      ContactPairDesc pair;
      pair.shape_a = 0;
      pair.shape_b = 1;
      pair.friction = 0.5;
      d.contact_pairs.push_back(pair);
    }
    return d;
  };
  using enum AxisMode;
  const std::array<AxisMode, 6> planar{kFree, kFree, kLocked, kLocked, kLocked, kLocked};
  for (bool explicit_pair : {false, true}) {
    ModelDesc d = slid_box(planar, {}, explicit_pair);
    std::shared_ptr<const Model> model = MustCompile(d);
    EXPECT_FALSE(model->MayCollide(0, 1)) << "explicit pair: " << explicit_pair;
    EXPECT_TRUE(model->collision_pairs().empty());
    auto sim = MustCreateSimulator();
    WorldId w = MustCreateWorld(*sim, model);
    std::vector<Real> wrench(6, 0);
    wrench[0] = 2;  // N, on 1 kg
    ASSERT_TRUE(sim->SetExternalForces(w, wrench).ok());
    int newton = 0;
    for (int n = 0; n < 100; ++n) {
      MustStep(*sim, w);
      WorldStats stats = *sim->GetStats(w);
      EXPECT_EQ(stats.contact_count, 0);
      newton += stats.newton_iterations;
      test::ExpectHealthy(*sim, w);
    }
    // x = a t^2 / 2 by backward Euler: a h^2 n (n + 1) / 2 after n steps
    EXPECT_NEAR(test::BodyPos(*sim, w, 0).x, 2 * 0.01 * 0.01 * 100 * 101 / 2, 1e-9);
    EXPECT_NEAR(test::BodyPos(*sim, w, 0).z, 0.0995, 1e-9);
    EXPECT_LE(newton, 200);
  }
  // the height free: the floor holds the box up, the pair stays
  EXPECT_TRUE(MustCompile(slid_box({kFree, kFree, kFree, kLocked, kLocked, kLocked}, {}, false))
                  ->MayCollide(0, 1));
  // a floor tilted about y: sliding along x moves the box into it
  EXPECT_TRUE(MustCompile(slid_box(planar, {std::cos(0.05), 0, std::sin(0.05), 0}, false))
                  ->MayCollide(0, 1));
  // rotation free: the box can turn a corner into the floor
  EXPECT_TRUE(MustCompile(slid_box({kFree, kFree, kLocked, kLocked, kFree, kLocked}, {}, false))
                  ->MayCollide(0, 1));
}

TEST(ContactTest, PushAtTheFrictionLimitConvergesFastAndHolds) {
  PushAtTheFrictionLimit(false);
  PushAtTheFrictionLimit(true);
}

// A box kept sliding along the floor by 1.5 mu m g at its centre while the load on it alternates
// between 0.7 and 1.3 m g from step to step. Each step's Newton solve then moves the normal
// impulses (the push tips the box onto its front corners, and the load scales all four), and
// with them every corner's cone, on which the sliding friction impulses sit: every step must
// converge, to Coulomb's acceleration under its load, in about one iteration: with the friction
// rows' derivative in the normal impulse counting the cone's own change (W_cone; 5.89 iterations
// per step without it) and contacts recognised from step to step by their point on the sliding
// box as well as on the floor (5.00 without that, the floor's point having moved 1 cm since the
// last step; 6.76 without either).
TEST(ContactTest, SlidingUnderAChangingLoadFollowsCoulomb) {
  ModelDesc d;
  d.options.timestep = 0.01;
  d.shapes.push_back(Ground());
  AddBox(d, {0, 0, 0.1}, {});
  d.bodies[0].linear_velocity = {1, 0, 0};
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  std::vector<Real> wrench{1.5 * 0.5 * kG, 0, 0, 0, 0, 0};
  long newton = 0;
  int not_converged = 0;
  const int steps = 100;
  Real speed_before = 0;
  for (int n = 0; n < steps; ++n) {
    wrench[2] = (n % 2 ? 0.3 : -0.3) * kG;
    ASSERT_TRUE(sim->SetExternalForces(w, wrench).ok());
    speed_before = test::BodyVel(*sim, w, 0).x;
    MustStep(*sim, w);
    WorldStats st = *sim->GetStats(w);
    newton += st.newton_iterations;
    not_converged += (st.flags & kWorldNotConverged) != 0;
  }
  test::ExpectHealthy(*sim, w);
  // The last step's acceleration is Coulomb's under its load: (1.5 mu m g - mu N) / m.
  const Real load = (1 - ((steps - 1) % 2 ? 0.3 : -0.3)) * kG;
  const Real coulomb = 1.5 * 0.5 * kG - 0.5 * load;
  const Real accel = (test::BodyVel(*sim, w, 0).x - speed_before) / 0.01;
  std::printf(
      "sliding box under a changing load: %.2f Newton per step, %d not converged, "
      "last acceleration %.5f against %.5f\n",
      double(newton) / steps, not_converged, accel, coulomb);
  EXPECT_EQ(not_converged, 0);
  EXPECT_LT(double(newton) / steps, 2.0);
  EXPECT_NEAR(accel, coulomb, 1e-3);
}

TEST(ContactTest, KineticFrictionGivesAnalyticAcceleration) {
  Real speed;
  PushedBoxDisplacement(1.5 * 0.5 * 1 * kG, 1, &speed);
  Real a = (1.5 * 0.5 * kG - 0.5 * kG) / 1;
  std::printf("pushed with 1.5 mu m g: speed after 1 s %.5f, analytic %.5f\n", speed, a);
  EXPECT_NEAR(speed, a, 0.02 * a);
}

TEST(ContactTest, FrictionIsIsotropic) {
  std::vector<Real> distances;
  for (Real degrees : {0.0, 30.0, 45.0}) {
    Real heading = degrees * kPi / 180;
    ModelDesc d;
    d.options.timestep = 0.01;
    d.shapes.push_back(Ground());
    AddBox(d, {0, 0, 0.1}, {});
    d.bodies[0].linear_velocity = {2 * std::cos(heading), 2 * std::sin(heading), 0};
    auto sim = MustCreateSimulator();
    WorldId w = MustCreateWorld(*sim, MustCompile(d));
    MustStep(*sim, w, 150);
    test::ExpectHealthy(*sim, w);
    Vec3 x = test::BodyPos(*sim, w, 0);
    Real dist = std::hypot(x.x, x.y);
    Real dir = std::atan2(x.y, x.x) * 180 / kPi;
    std::printf("launched at %.0f degrees: slid %.5f m at heading %.4f degrees\n", degrees, dist,
                dir);
    EXPECT_NEAR(dir, degrees, 0.5);
    distances.push_back(dist);
  }
  for (Real dist : distances) EXPECT_NEAR(dist, distances[0], 0.01 * distances[0]);
  EXPECT_NEAR(distances[0], 4 / (2 * 0.5 * kG), 0.05);
}

// Speed after 0.2 s of a box launched at 2 m/s along a floor of friction 0.8, the box's own
// friction 0.2, each shape with the given contact dimension, combined by `combine`.
Real LaunchedBoxSpeed(FrictionCombine combine, int floor_dim, int box_dim) {
  ModelDesc d;
  d.options.timestep = 0.01;
  d.options.friction_combine = combine;
  d.shapes.push_back(Ground(0.8));
  d.shapes[0].contact_dim = floor_dim;
  AddBox(d, {0, 0, 0.1}, {}, 0.1, 1, 0.2);
  d.shapes[1].contact_dim = box_dim;
  d.bodies[0].linear_velocity = {2, 0, 0};
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  MustStep(*sim, w, 20);
  test::ExpectHealthy(*sim, w);
  return test::BodyVel(*sim, w, 0).x;
}

// The contact's coefficient is the geometric mean or the larger of the two, and a contact has
// friction unless both shapes are frictionless (contact dimension 1), MuJoCo's condim rule.
TEST(ContactTest, FrictionCombinesByTheWorldsRuleAndContactDimension) {
  const Real t = 0.2;
  Real mean = LaunchedBoxSpeed(FrictionCombine::kGeometricMean, 3, 3);
  Real max = LaunchedBoxSpeed(FrictionCombine::kMax, 3, 3);
  Real one_frictionless = LaunchedBoxSpeed(FrictionCombine::kMax, 3, 1);
  Real both_frictionless = LaunchedBoxSpeed(FrictionCombine::kMax, 1, 1);
  std::printf("speed after 0.2 s: geometric mean %.5f, max %.5f, box condim 1 %.5f, both %.5f\n",
              mean, max, one_frictionless, both_frictionless);
  EXPECT_NEAR(mean, 2 - std::sqrt(0.8 * 0.2) * kG * t, 1e-3);
  EXPECT_NEAR(max, 2 - 0.8 * kG * t, 1e-3);
  EXPECT_NEAR(one_frictionless, max, 1e-9);
  EXPECT_NEAR(both_frictionless, 2, 1e-6);
}

TEST(ContactTest, ContactDimensionOtherThanOneThreeFourOrSixIsRejected) {
  ModelDesc d;
  d.shapes.push_back(Ground());
  d.shapes[0].contact_dim = 5;
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(d);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("contact_dim"), std::string::npos) << model.status();
}

// A box launched along the floor slides for 0.35 s; returns the distance slid, the steps that
// ended at the Newton limit and the mean Newton iterations per step.
Real SlideBox(bool friction_newton, int* not_converged, double* mean_newton) {
  ModelDesc d;
  d.options.timestep = 0.01;
  d.options.friction_newton = friction_newton;
  d.shapes.push_back(Ground());
  AddBox(d, {0, 0, 0.1}, {});
  d.bodies[0].linear_velocity = {2, 0.3, 0};
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  *not_converged = 0;
  long newton = 0;
  const int steps = 35;  // still sliding: 2.02 m/s loses 0.049 m/s per step
  for (int n = 0; n < steps; ++n) {
    MustStep(*sim, w);
    WorldStats st = *sim->GetStats(w);
    *not_converged += (st.flags & kWorldNotConverged) != 0;
    newton += st.newton_iterations;
  }
  // (The frozen-W solve is expected to stop at its limit; only its trajectory is compared.)
  if (friction_newton) test::ExpectHealthy(*sim, w);
  *mean_newton = double(newton) / steps;
  return std::hypot(test::BodyPos(*sim, w, 0).x, test::BodyPos(*sim, w, 0).y);
}

TEST(ContactTest, SlidingFrictionConvergesWithItsNewtonForm) {
  int not_converged_newton, not_converged_fixed;
  double newton_per_step, fixed_per_step;
  Real slid = SlideBox(true, &not_converged_newton, &newton_per_step);
  Real slid_fixed = SlideBox(false, &not_converged_fixed, &fixed_per_step);
  std::printf(
      "sliding box, 35 steps: W linearised along the slip %.1f Newton per step (%d at the limit), "
      "W frozen %.1f (%d at the limit); slid %.6f vs %.6f m\n",
      newton_per_step, not_converged_newton, fixed_per_step, not_converged_fixed, slid, slid_fixed);
  EXPECT_EQ(not_converged_newton, 0);
  // Each step starts warm: its contacts are recognised by their point on the sliding box (by
  // the floor's point, which moves 2 cm per step, 4.6 Newton iterations per step).
  EXPECT_LT(newton_per_step, 2.0);
  // Same law, same solution (up to the Newton tolerance).
  EXPECT_NEAR(slid, slid_fixed, 1e-5);
  // Backward Euler: v_k = v0 - k h mu g, x_n = h sum v_k = v0 t - mu g h^2 n (n + 1) / 2.
  Real v0 = std::hypot(2.0, 0.3), h = 0.01, n = 35;
  EXPECT_NEAR(slid, v0 * n * h - 0.5 * kG * h * h * n * (n + 1) / 2, 1e-4);
}

void RunStack(Real h) {
  ModelDesc d;
  d.options.timestep = h;
  d.shapes.push_back(Ground());
  for (int i = 0; i < 10; ++i) AddBox(d, {0, 0, Real(0.1 + 0.2 * i)}, {});
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  Vec3 top0 = test::BodyPos(*sim, w, 9);
  for (int n = 0; n < static_cast<int>(std::lround(10 / h)); ++n) {
    MustStep(*sim, w);
    test::ExpectHealthy(*sim, w);
    if (::testing::Test::HasFailure()) break;
  }
  Real drift = norm(test::BodyPos(*sim, w, 9) - top0);
  WorldStats st = *sim->GetStats(w);
  std::printf(
      "10-box stack, h=%.2f: top box drifted %.3g m in 10 s; %d contacts, last step %d Newton / %d "
      "CR\n",
      h, drift, st.contact_count, st.newton_iterations, st.cr_iterations);
  EXPECT_LT(drift, 1e-3);
}

TEST(ContactTest, StackOfTenBoxesStandsAtSmallStep) { RunStack(0.01); }
TEST(ContactTest, StackOfTenBoxesStandsAtLargeStep) { RunStack(0.05); }

// A sphere of radius 0.1 thrown at the floor at 6 m/s with a 0.05 s step covers 30 cm per step;
// returns the deepest penetration of its pose over 40 steps.
// A ball of radius 0.1 and mass 1 at height `z` above the floor, moving at `velocity`, h = 0.05 s.
ModelDesc BallOverFloor(Real z, Vec3 velocity) {
  ModelDesc d;
  d.options.timestep = 0.05;
  d.shapes.push_back(Ground());
  BodyDesc ball;
  ball.mass = 1;
  ball.inertia = test::SphereInertia(1, 0.1);
  ball.pose.pos = {0, 0, z};
  ball.linear_velocity = velocity;
  d.bodies.push_back(ball);
  ShapeDesc s;
  s.body = 0;
  s.type = ShapeType::kSphere;
  s.size = {0.1, 0, 0};
  d.shapes.push_back(s);
  return d;
}

// The sphere's deepest penetration over 40 steps, thrown from 0.5 m at `velocity`.
Real ThrowSphereAtFloor(bool speculative, int contact_redos, Vec3 velocity) {
  ModelDesc d = BallOverFloor(0.5, velocity);
  d.options.speculative_contacts = speculative;
  d.options.contact_redos = contact_redos;
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  Real max_penetration = 0;
  for (int n = 0; n < 40; ++n) {
    MustStep(*sim, w);
    max_penetration = std::max<Real>(max_penetration, 0.1 - test::BodyPos(*sim, w, 0).z);
    test::ExpectHealthy(*sim, w);
  }
  return max_penetration;
}

TEST(ContactTest, SpeculativeContactsCatchFastImpactsBeforeTheyAreDeep) {
  Real fast = ThrowSphereAtFloor(true, 0, {0, 0, -6});
  Real late = ThrowSphereAtFloor(false, 0, {0, 0, -6});
  std::printf(
      "sphere at 6 m/s, h = 0.05 s: penetration %.4f m with speculative contacts, %.4f m "
      "without\n",
      fast, late);
  EXPECT_LT(fast, 1e-3);
  EXPECT_GT(late, 0.05);  // found a step late, 30 cm of travel in
}

// A column of ten spheres (radius 2.5 cm, 7 cm apart) falling from 0.65 m onto the floor at
// h = 0.02 s: they reach 3.6 m/s, 7 cm a step. Two spheres falling together close no gap between
// them, yet the lower one is stopped by the floor within the step: counted only by their
// relative rate, the upper one's contact stayed out of the set and it ended inside the lower
// one, two centres at one point, the column then thrown up to 2.2 m (with a contact redo as
// well, two centres at one point). Each sphere's own approach against the other held still lets
// it join a step early.
TEST(ContactTest, ColumnOfSpheresLandsWithoutOneEndingInsideAnother) {
  constexpr int kSpheres = 10;
  constexpr Real kRadius = 0.025, kSpacing = 0.07;
  for (int redos : {0, 1}) {
    ModelDesc d;
    d.options.timestep = 0.02;
    d.options.contact_redos = redos;
    d.shapes.push_back(Ground());
    for (int i = 0; i < kSpheres; ++i) {
      BodyDesc b;
      b.mass = 0.0654;
      b.inertia = test::SphereInertia(b.mass, kRadius);
      b.pose.pos = {0, 0, 0.65 + kSpacing * i};
      d.bodies.push_back(b);
      ShapeDesc s;
      s.body = i;
      s.type = ShapeType::kSphere;
      s.size = {kRadius, 0, 0};
      d.shapes.push_back(s);
    }
    auto sim = MustCreateSimulator();
    WorldId w = MustCreateWorld(*sim, MustCompile(d));
    Real closest = 1;  // the closest two centres over the run (m)
    for (int n = 0; n < 60; ++n) {
      MustStep(*sim, w);
      for (int i = 0; i + 1 < kSpheres; ++i) {
        closest = std::min<Real>(closest,
                                 norm(test::BodyPos(*sim, w, i + 1) - test::BodyPos(*sim, w, i)));
      }
      test::ExpectHealthy(*sim, w);
    }
    const Real top = test::BodyPos(*sim, w, kSpheres - 1).z;
    std::printf(
        "column of %d spheres at h = 0.02 s, %d redos: closest centres %.4f m, top %.4f m\n",
        kSpheres, redos, closest, top);
    EXPECT_GT(closest, 2 * kRadius - 1e-3);
    // at rest, stacked: the top centre at 19 diameters less a radius
    EXPECT_NEAR(top, (2 * kSpheres - 1) * kRadius, 1e-3);
  }
}

// Columns of frictional spheres, each sphere up to 5 mm off its column, topple into a pile in a
// box of four walls at h = 0.01 s: while the pile forms, its contacts slide and stick in turn
// and Newton from the last step's impulses cycles between their states to its limit at every
// halving. A failed attempt goes again from the contact presolve (Gauss-Seidel sweeps over the
// contacts, SolverOptions::contact_presolve_sweeps): the steps end as close to a solution in a
// fraction of the Newton iterations.
struct PileRun {
  long newton = 0;
  int not_converged = 0;
  Real worst = 0;    // the largest residual a step ended at (m/s)
  Real highest = 0;  // the highest sphere centre at the end (m)
};
PileRun RunToppledPile(int presolve_sweeps) {
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(scenes::ToppledPile(presolve_sweeps)));
  PileRun run;
  for (int n = 0; n < 80; ++n) {
    MustStep(*sim, w);
    WorldStats st = *sim->GetStats(w);
    run.newton += st.newton_iterations;
    run.not_converged += (st.flags & kWorldNotConverged) != 0;
    run.worst = std::max(run.worst, st.residual);
  }
  EXPECT_EQ(sim->GetStats(w)->flags & kWorldNonFinite, 0u);
  for (int i = 0; i < sim->GetModel(w).value()->body_count(); ++i)
    run.highest = std::max(run.highest, test::BodyPos(*sim, w, i).z);
  return run;
}

TEST(ContactTest, ToppledFrictionalPileIsSolvedFromThePresolve) {
  const PileRun plain = RunToppledPile(0), presolved = RunToppledPile(1000);
  for (int on = 0; on < 2; ++on) {
    const PileRun& run = on ? presolved : plain;
    std::printf(
        "toppled pile, presolve %s: %ld Newton iterations, %d steps not converged, worst "
        "residual %.3g m/s, highest centre %.3f m\n",
        on ? "on" : "off", run.newton, run.not_converged, run.worst, run.highest);
  }
  EXPECT_LT(3 * presolved.newton, plain.newton);
  EXPECT_LT(presolved.worst, 0.05);
  // the columns (0.79 m high) lie toppled in the box
  EXPECT_LT(presolved.highest, 0.25);
}

// The steps after one that needed the presolve start from it (kPresolveCarrySteps): a
// snapshot taken among them carries that on, and the pile goes on bit for bit from it.
TEST(ContactTest, SnapshotOfAPresolvingPileGoesOnBitForBit) {
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(scenes::ToppledPile(1000)));
  MustStep(*sim, w, 55);  // the columns have toppled: the presolve was needed
  const std::string snap = *sim->Snapshot(w);
  MustStep(*sim, w, 5);
  const std::vector<Real> ahead = sim->GetBodyState(w)->pose;
  ASSERT_TRUE(sim->Restore(w, snap).ok());
  MustStep(*sim, w, 5);
  EXPECT_EQ(sim->GetBodyState(w)->pose, ahead);
}

TEST(ContactTest, ImpactMissedWithoutSpeculativeContactsIsTakenAgainWithIt) {
  // Without the speculative test the contact is found at the end of the step that went 0.2 m
  // deep; the step goes back to its start with the pair in its set.
  Real redone = ThrowSphereAtFloor(false, 1, {0, 0, -6});
  std::printf("sphere at 6 m/s, no speculative contacts, one redo: penetration %.4f m\n", redone);
  EXPECT_LT(redone, 1e-3);
}

// A force that acts within the step is not in the speculative test's prediction (the velocity
// at the step's start plus gravity): a sphere at rest 5 cm above the floor, pushed down at 150
// m/s^2 for one step of 0.05 s, would end 32 cm lower.
TEST(ContactTest, ContactMissedWithinTheStepIsTakenAgain) {
  for (int redos : {0, 1}) {
    ModelDesc d = BallOverFloor(0.15, {0, 0, 0});
    d.options.gravity = {0, 0, 0};
    d.options.contact_redos = redos;
    auto sim = MustCreateSimulator();
    WorldId w = MustCreateWorld(*sim, MustCompile(d));
    ASSERT_TRUE(sim->SetExternalForces(w, std::vector<Real>{0, 0, -150, 0, 0, 0}).ok());
    MustStep(*sim, w);
    const Real penetration = 0.1 - test::BodyPos(*sim, w, 0).z;
    const WorldStats stats = *sim->GetStats(w);
    std::printf("pushed sphere, %d redos: penetration %.4f m, %d redos taken, %d contacts\n", redos,
                penetration, stats.contact_redos, stats.contact_count);
    if (redos == 0) {
      EXPECT_GT(penetration, 0.2);
      EXPECT_EQ(stats.contact_redos, 0);
    } else {
      EXPECT_LT(penetration, 1e-4);
      EXPECT_EQ(stats.contact_redos, 1);
      EXPECT_EQ(stats.contact_count, 1);
      EXPECT_EQ(stats.flags, 0u);
      EXPECT_NEAR(stats.time, 0.05, 1e-15);
      // the step ends on the floor: its 5 cm of travel over 0.05 s
      EXPECT_NEAR(test::BodyVel(*sim, w, 0).z, -1, 1e-4);
    }
    test::ExpectHealthy(*sim, w);
  }
}

// The arm of scenes::ArmTurningIntoPost at 20 rad/s, one step: free, it would turn 1 rad and
// pass through the post. The contact joins the set at the step's start 0.3 m apart, closing at
// 12 m/s, and its row, linearised at q-, stops the arm's point at x = 0.6 after 0.3 m along y,
// where the arm, turning, lies inside the post. A redo takes the pair again where that attempt
// ended, linearised about it.
// Returns the arm's end gap to the post (m, < 0 inside) and the step's stats.
std::pair<Real, WorldStats> TurnArmIntoPost(int contact_redos) {
  ModelDesc d = scenes::ArmTurningIntoPost(20);
  d.options.contact_redos = contact_redos;
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  MustStep(*sim, w);
  test::ExpectHealthy(*sim, w);
  // the post's distance to the arm's segment, from the hinge 1 m along the arm
  const Vec3 post = scenes::kArmPost;
  const Vec3 along = rotate(test::BodyQuat(*sim, w, 0), Vec3{1, 0, 0});
  const Real t = std::clamp<Real>(dot(post, along), 0, 1);
  return {norm(post - t * along) - 0.1, *sim->GetStats(w)};
}

TEST(ContactTest, TurningArmEndsOutOfThePostItWasStoppedBy) {
  const auto [linear_gap, linear_stats] = TurnArmIntoPost(0);
  const auto [redone_gap, redone_stats] = TurnArmIntoPost(2);
  std::printf(
      "arm at 20 rad/s into a post, h = 0.05 s: end gap %.4f m with rows from q-, %.4f m after "
      "%d redo(s)\n",
      linear_gap, redone_gap, redone_stats.contact_redos);
  EXPECT_LT(linear_gap, -0.03);
  EXPECT_EQ(linear_stats.contact_count, 1);
  EXPECT_EQ(linear_stats.contact_redos, 0);
  // the post stops the arm, to within the redo's bound (5 mm) either way
  EXPECT_NEAR(redone_gap, 0, 2e-3);
  EXPECT_GE(redone_stats.contact_redos, 1);
  EXPECT_EQ(redone_stats.flags, 0u);
}

TEST(ContactTest, SpeculativeContactsIgnoreShapesMovingAlongOrAway) {
  // 5 cm above the floor: sliding along it at 10 m/s, and rising, must not enter the contact set
  // (the step's gravity drop, 2.5 cm, does not close the gap).
  for (Vec3 velocity : {Vec3{10, 0, 0}, Vec3{0, 0, 3}}) {
    ModelDesc d = BallOverFloor(0.15, velocity);
    d.options.gravity = {0, 0, 0};
    auto sim = MustCreateSimulator();
    WorldId w = MustCreateWorld(*sim, MustCompile(d));
    MustStep(*sim, w);
    EXPECT_EQ(sim->GetStats(w)->contact_count, 0) << "velocity " << velocity.x << " " << velocity.z;
    EXPECT_NEAR(test::BodyVel(*sim, w, 0).x, velocity.x, 1e-12);
  }
}

TEST(ContactTest, VelocityLevelRestitutionRebounds) {
  ModelDesc d;
  d.options.timestep = 0.001;
  d.options.contact_formulation = Formulation::kVelocity;
  ShapeDesc ground = Ground();
  ground.material.restitution = 0.5;
  d.shapes.push_back(ground);
  AddBall(d, {0, 0, 1}).material.restitution = 0.5;
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  Real impact = 0, rebound = 0;
  for (int n = 0; n < 2000; ++n) {
    Real before = test::BodyVel(*sim, w, 0).z;
    MustStep(*sim, w);
    Real after = test::BodyVel(*sim, w, 0).z;
    if (before < 0 && after > 0) {
      impact = -before;
      rebound = after;
      break;
    }
  }
  std::printf("impact %.4f m/s, rebound %.4f m/s, ratio %.4f\n", impact, rebound, rebound / impact);
  ASSERT_GT(impact, 1);
  EXPECT_NEAR(rebound / impact, 0.5, 0.02);
  test::ExpectHealthy(*sim, w);
}

TEST(ContactTest, ManifoldsHaveSeveralPointsAndOverflowIsReported) {
  ModelDesc d;
  d.options.timestep = 0.01;
  d.shapes.push_back(Ground());
  AddBox(d, {0, 0, 0.1}, {});
  BodyDesc rod;
  rod.mass = 1;
  rod.inertia = test::BoxInertia(1, {0.05, 0.05, 0.3});
  rod.pose = {{1, 0, 0.05}, quat_from_axis_angle({0, 1, 0}, kPi / 2)};  // capsule lying flat
  d.bodies.push_back(rod);
  ShapeDesc capsule;
  capsule.body = 1;
  capsule.type = ShapeType::kCapsule;
  capsule.size = {0.05, 0.25, 0};
  d.shapes.push_back(capsule);
  auto model = MustCompile(d);
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, model);
  MustStep(*sim, w);
  std::vector<ContactReport> contacts = *sim->GetContacts(w);
  int box_points = 0, capsule_points = 0;
  for (const ContactReport& c : contacts) {
    int body = c.body_a == kWorldBody ? c.body_b : c.body_a;
    (body == 0 ? box_points : capsule_points) += 1;
  }
  EXPECT_EQ(box_points, 4);
  EXPECT_EQ(capsule_points, 2);
  Real total = 0;
  for (const ContactReport& c : contacts) total += std::fabs(c.force.z);
  EXPECT_NEAR(total, 2 * kG, 1e-3 * kG);  // the floor carries both bodies' weight

  WorldOptions small;
  small.contact_capacity = 3;
  std::vector<WorldId> ids = *sim->CreateWorlds(model, 1, small);
  MustStep(*sim, ids[0]);
  WorldStats st = *sim->GetStats(ids[0]);
  EXPECT_EQ(st.contact_count, 3);
  EXPECT_NE(st.flags & kWorldContactOverflow, 0u);
  EXPECT_EQ(sim->GetStats(w)->flags & kWorldContactOverflow, 0u);
}

// Four boxes apart on a floor: four pairs overlap. A world holding two pairs reports the overflow
// and keeps two boxes' contacts; a world beside it with the default capacity is untouched; bad
// capacities are refused by name.
TEST(ContactTest, PairCapacityOverflowIsReportedAndOtherWorldsKeepTheirContacts) {
  ModelDesc d;
  d.options.timestep = 0.01;
  d.shapes.push_back(Ground());
  for (int i = 0; i < 4; ++i) AddBox(d, {Real(i), 0, Real(0.1)}, {});
  auto model = MustCompile(d);
  EXPECT_EQ(model->collision_pair_count(), 4 + 6);  // each box with the floor and each other
  auto sim = MustCreateSimulator();
  WorldId roomy = MustCreateWorld(*sim, model);
  WorldOptions tight;
  tight.pair_capacity = 2;
  WorldId cramped = sim->CreateWorlds(model, 1, tight)->front();
  for (int step = 0; step < 5; ++step) {
    MustStep(*sim, roomy);
    MustStep(*sim, cramped);
  }
  EXPECT_NE(sim->GetStats(cramped)->flags & kWorldPairOverflow, 0u);
  EXPECT_EQ(sim->GetStats(roomy)->flags & kWorldPairOverflow, 0u);
  auto boxes_touching = [&](WorldId w) {
    std::set<int> bodies;
    absl::StatusOr<std::vector<ContactReport>> contacts = sim->GetContacts(w);
    EXPECT_TRUE(contacts.ok()) << contacts.status();
    if (!contacts.ok()) return bodies.size();
    for (const ContactReport& c : *contacts)
      bodies.insert(c.body_a == kWorldBody ? c.body_b : c.body_a);
    return bodies.size();
  };
  EXPECT_EQ(boxes_touching(roomy), 4u);
  EXPECT_EQ(boxes_touching(cramped), 2u);
  test::ExpectHealthy(*sim, roomy);

  WorldOptions negative;
  negative.pair_capacity = -2;
  absl::StatusOr<std::vector<WorldId>> refused = sim->CreateWorlds(model, 1, negative);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("pair_capacity"), std::string::npos);
  d.pair_capacity = -5;
  absl::StatusOr<std::shared_ptr<const Model>> bad = Model::Compile(d);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("pair_capacity"), std::string::npos);
}

// A height field shape over [-sx, sx] x [-sy, sy] of rows x cols points, z = height(x, y).
ShapeDesc Terrain(int rows, int cols, Real sx, Real sy,
                  const std::function<Real(Real, Real)>& height, Real friction = 0.5,
                  Real base = 0.5) {
  ShapeDesc s;
  s.name = "terrain";
  s.type = ShapeType::kHeightField;
  s.size = {sx, sy, base};
  s.material.friction = friction;
  s.heightfield.rows = rows;
  s.heightfield.cols = cols;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c)
      s.heightfield.heights.push_back(
          height(-sx + 2 * sx * c / (cols - 1), -sy + 2 * sy * r / (rows - 1)));
  }
  return s;
}

// The 30 degree incline again, as terrain: a planar height field of 0.2 m cells, the box (0.2 m
// wide) sliding across 25 cells' edges and diagonals at Coulomb's acceleration, as it does on
// the plane, and never lifted or caught by an inner edge.
TEST(ContactTest, BoxSlidesDownTerrainAsDownTheSamePlane) {
  const Real angle = kPi / 6, slope = std::tan(angle);
  const Quat tilt = quat_from_axis_angle({0, 1, 0}, angle);
  ModelDesc d;
  d.options.timestep = 0.01;
  // z = -tan(30 deg) x: the plane tilted about y by 30 degrees
  d.shapes.push_back(Terrain(
      11, 41, 4, 1, [&](Real x, Real) { return -slope * x; }, 0.5, 3));
  AddBox(d, rotate(tilt, {-3, 0, 0.1}), tilt);
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  const Vec3 x0 = test::BodyPos(*sim, w, 0);
  const Vec3 down_slope = rotate(tilt, {1, 0, 0}), normal = rotate(tilt, {0, 0, 1});
  Real off_plane = 0, sideways = 0;
  for (int n = 0; n < 100; ++n) {
    MustStep(*sim, w);
    test::ExpectHealthy(*sim, w);
    const Vec3 x = test::BodyPos(*sim, w, 0) - x0;
    off_plane = std::max(off_plane, std::fabs(dot(x, normal)));
    sideways = std::max(sideways, std::fabs(x.y));
    if (::testing::Test::HasFailure()) break;
  }
  const Real a = kG * (std::sin(angle) - 0.5 * std::cos(angle));
  const Real speed = dot(test::BodyVel(*sim, w, 0), down_slope);
  const Real travelled = dot(test::BodyPos(*sim, w, 0) - x0, down_slope);
  const SlideResult on_plane = SlideOnIncline(30, 1);
  std::printf(
      "30 degrees of terrain, mu 0.5: speed after 1 s %.5f m/s (on the plane %.5f, analytic "
      "%.5f), %.3f m travelled (plane %.3f); off the slope by at most %.1e m, sideways %.1e m\n",
      speed, on_plane.speed, a, travelled, on_plane.displacement, off_plane, sideways);
  EXPECT_NEAR(speed, on_plane.speed, 1e-6);
  EXPECT_NEAR(travelled, on_plane.displacement, 1e-6);
  EXPECT_LT(off_plane, 1e-4);
  EXPECT_LT(sideways, 1e-9);
}

// Boxes and balls dropped on bumpy terrain (cells smaller than the boxes): after 3 s the boxes
// rest where they landed and the balls (which nothing stops from rolling to and fro in a
// hollow) roll on the surface, every body's lowest point within a millimetre of the surface
// below it (no sinking between grid points, no floating on a prism's side), none through it.
TEST(ContactTest, BodiesComeToRestOnBumpyTerrain) {
  const auto height = [](Real x, Real y) {
    return Real(0.12 * std::sin(2.5 * x) * std::cos(1.7 * y) + 0.05 * std::sin(7 * x + 3 * y));
  };
  ModelDesc d;
  d.options.timestep = 0.005;
  d.shapes.push_back(Terrain(41, 41, 2, 2, height, 0.9));
  const Vec3 drops[] = {{-1, -0.6, 0.6}, {0.3, 0.8, 0.6}, {1.1, -0.9, 0.6}, {-0.4, 0.5, 0.6}};
  for (int k = 0; k < 4; ++k) {
    if (k % 2 == 0) {
      AddBox(d, drops[k], quat_from_axis_angle(normalized(Vec3{1, 2, 3}), 0.4 * k), 0.15, 2, 0.9);
    } else {
      AddBall(d, drops[k], 0.9);
    }
  }
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  MustStep(*sim, w, 600);
  test::ExpectHealthy(*sim, w);
  // the terrain's surface below (x, y), as the grid's triangles give it
  const ShapeDesc& field = d.shapes[0];
  const auto surface = [&](Real x, Real y) {
    const HeightFieldDesc& f = field.heightfield;
    return HeightFieldHeight(f.heights.data(), f.rows, f.cols, 2, 2, x, y);
  };
  Real fastest = 0, nearest = 1e9, deepest = 0;
  for (int b = 0; b < 4; ++b) {
    if (b % 2 == 0) fastest = std::max(fastest, norm(test::BodyVel(*sim, w, b)));
    const Vec3 x = test::BodyPos(*sim, w, b);
    if (b % 2 == 1) {
      // a ball: its centre's distance to the surface, sampled around it
      Real gap = 1e9;
      for (Real dx = -0.1; dx <= 0.1; dx += 0.005) {
        for (Real dy = -0.1; dy <= 0.1; dy += 0.005)
          gap =
              std::min(gap, norm(x - Vec3{x.x + dx, x.y + dy, surface(x.x + dx, x.y + dy)}) - 0.1);
      }
      nearest = std::min(nearest, std::fabs(gap));
      deepest = std::min(deepest, gap);
      EXPECT_LT(std::fabs(gap), 1e-3) << "ball " << b;
    } else {
      // a box: its corners' heights above the surface below each
      const Quat q = test::BodyQuat(*sim, w, b);
      Real lowest = 1e9;
      for (int corner = 0; corner < 8; ++corner) {
        const Vec3 p = x + rotate(q, Vec3{corner & 1 ? 0.15 : -0.15, corner & 2 ? 0.15 : -0.15,
                                          corner & 4 ? 0.15 : -0.15});
        lowest = std::min(lowest, p.z - surface(p.x, p.y));
      }
      deepest = std::min(deepest, lowest);
      EXPECT_GT(lowest, -2e-3) << "box " << b;
    }
  }
  std::printf(
      "bodies on bumpy terrain after 3 s: boxes at %.1e m/s at most, balls within %.1e m of the "
      "surface, deepest point %.1e m\n",
      fastest, nearest, deepest);
  EXPECT_LT(fastest, 1e-3);
}

// Worlds of one batch on terrains of their own: a ball in each comes to rest at its own
// world's ground height (0.1 m apart from world to world), and worlds of the same grid share one
// copy of it: 40 worlds of one terrain take at least 40 x 39 grids' bytes less than 40 worlds of
// 40 terrains.
// Boxes dropped on rolling ground (waves up to 0.4 m high over 8 m, 0.1 m cells, bench/
// terrain_scene.py's kind) settle. A box balanced on one bump must find the point it tips onto
// in its contact set before it gets there: with a pair's four points spread over all the
// terrain points under it, the far corners a few millimetres up were kept instead, and boxes
// rocked from bump to bump for ever: here 9 of 16 faster than 1 mm/s after 10 s, the fastest
// at 4.1 cm/s. Now one still rocks, at 2.3 mm/s (four points cannot always hold a box on
// bumps; MuJoCo keeps up to 50 for a height field pair). The drops are chaotic: raised by 1e-12
// to 3e-4 m, 0 or 1 box moves, at 2.3 mm/s at most, hence the bounds below.
TEST(ContactTest, BoxesSettleOnRollingGround) {
  const auto height = [](Real x, Real y) {
    const Real waves[6][4] = {{2.1, 0.3, 1.0, 0.9}, {0.7, 2.2, 4.0, 0.6}, {2.9, 1.1, 2.5, 0.4},
                              {1.3, 4.0, 0.2, 0.8}, {0.9, 5.1, 3.3, 0.5}, {2.5, 2.7, 5.5, 0.3}};
    Real z = 0;
    for (const auto& w : waves)
      z += w[3] * std::sin(w[0] * (x * std::cos(w[1]) + y * std::sin(w[1])) + w[2]);
    return Real(0.4 / 3.5) * z;
  };
  ModelDesc d;
  d.options.timestep = 0.005;
  d.shapes.push_back(Terrain(81, 81, 4, 4, height, 0.8, 1));
  for (int i = 0; i < 16; ++i) {
    const Vec3 at{Real(-2.4 + 1.6 * (i % 4)), Real(-2.4 + 1.6 * (i / 4)), 0};
    AddBox(d, at + Vec3{0, 0, height(at.x, at.y) + Real(0.3)},
           quat_from_axis_angle(normalized(Vec3{1, Real(0.3) * i, 2}), Real(0.37) * i), 0.1, 1,
           0.8);
  }
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  MustStep(*sim, w, 2000);
  int moving = 0;
  Real fastest = 0;
  for (int b = 0; b < 16; ++b) {
    const Real speed = norm(test::BodyVel(*sim, w, b));
    fastest = std::max(fastest, speed);
    moving += speed > 1e-3 ? 1 : 0;
  }
  std::printf(
      "16 boxes on rolling ground after 10 s: %d moving faster than 1 mm/s, fastest "
      "%.1e m/s\n",
      moving, fastest);
  EXPECT_LE(moving, 2);
  EXPECT_LT(fastest, 1e-2);
}

TEST(ContactTest, WorldsOfOneBatchKeepTheirOwnTerrainAndShareTheSame) {
  const auto scene = [](Real ground) {
    ModelDesc d;
    d.options.timestep = 0.01;
    d.shapes.push_back(Terrain(41, 41, 2, 2, [&](Real, Real) { return ground; }));
    AddBall(d, {0.03, -0.02, 4.5});
    return d;
  };
  auto own = MustCreateSimulator();
  std::vector<WorldId> ids;
  for (int k = 0; k < 40; ++k) ids.push_back(MustCreateWorld(*own, MustCompile(scene(0.1 * k))));
  ASSERT_TRUE(own->StepAll(150).ok());
  for (int k = 0; k < 40; ++k) {
    test::ExpectHealthy(*own, ids[k]);
    EXPECT_NEAR(test::BodyPos(*own, ids[k], 0).z, 0.1 * k + 0.1, 1e-4) << "world " << k;
  }
  auto shared = MustCreateSimulator();
  const std::shared_ptr<const Model> one = MustCompile(scene(0.5));
  for (int k = 0; k < 40; ++k) MustCreateWorld(*shared, one);
  const double grid_bytes = 41 * 41 * sizeof(Real);
  const double saved = double(own->memory_bytes()) - double(shared->memory_bytes());
  std::printf("40 worlds: %zu bytes on 40 terrains, %zu on one shared (%.0f grids saved)\n",
              own->memory_bytes(), shared->memory_bytes(), saved / grid_bytes);
  EXPECT_GT(saved, 39 * grid_bytes);
}

// A box started 5 cm into the floor (h = 0.01 s): a position-level contact takes it out in one
// step (5 m/s up: it flies 1.35 m high); with max_depenetration_speed 1 m/s it comes out at
// 1 m/s, 1 cm a step, and the speed it leaves with lifts it v^2 / 2g = 5.1 cm at most (the push
// is an impulse: its momentum stays), then it rests on the floor.
TEST(ContactTest, SunkBodiesComeOutAtTheirDepenetrationSpeed) {
  const auto run = [](Real limit, Real* first_speed, Real* highest) {
    ModelDesc d;
    d.options.timestep = 0.01;
    d.options.max_depenetration_speed = limit;
    d.shapes.push_back(Ground());
    AddBox(d, {0, 0, 0.05}, {});
    auto sim = MustCreateSimulator();
    WorldId w = MustCreateWorld(*sim, MustCompile(d));
    *highest = 0;
    for (int n = 0; n < 100; ++n) {
      MustStep(*sim, w);
      if (n == 0) *first_speed = test::BodyVel(*sim, w, 0).z;
      *highest = std::max(*highest, test::BodyPos(*sim, w, 0).z);
    }
    return test::BodyPos(*sim, w, 0).z;
  };
  Real first = 0, highest = 0;
  run(std::numeric_limits<Real>::infinity(), &first, &highest);
  std::printf("5 cm sunk, no limit: %.3f m/s up after one step, up to %.4f m\n", first, highest);
  EXPECT_GT(first, 4.5);
  EXPECT_GT(highest, 0.2);
  const Real rest = run(1, &first, &highest);
  std::printf("5 cm sunk, 1 m/s: %.3f m/s up after one step, up to %.4f m, rests at %.6f m\n",
              first, highest, rest);
  EXPECT_NEAR(first, 1, 0.05);
  EXPECT_LT(highest, 0.1 + 1 / (2 * kG) + 1e-3);
  EXPECT_NEAR(rest, 0.1, 1e-4);
  ModelDesc bad;
  bad.options.max_depenetration_speed = 0;
  absl::StatusOr<std::shared_ptr<const Model>> refused = Model::Compile(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("max_depenetration_speed"), std::string::npos);
}

TEST(ContactTest, HeightFieldsAreValidatedWithTheProblemNamed) {
  const auto error = [](const std::function<void(ShapeDesc&)>& spoil) {
    ModelDesc d;
    d.shapes.push_back(Terrain(
        3, 4, 1, 1, [](Real x, Real y) { return x * y; }, 0.5, 2));
    BodyDesc body;
    body.inertia = test::SphereInertia(1, 0.1);
    d.bodies.push_back(body);
    spoil(d.shapes[0]);
    absl::StatusOr<std::shared_ptr<const Model>> m = Model::Compile(d);
    return m.ok() ? std::string("compiled") : std::string(m.status().message());
  };
  EXPECT_NE(error([](ShapeDesc& s) { s.heightfield.rows = 1; }).find("at least 2 rows"),
            std::string::npos);
  EXPECT_NE(error([](ShapeDesc& s) { s.heightfield.heights.pop_back(); }).find("has 11 values"),
            std::string::npos);
  EXPECT_NE(error([](ShapeDesc& s) {
              s.heightfield.heights[5] = std::nan("");
            }).find("heightfield.heights[5]"),
            std::string::npos);
  EXPECT_NE(error([](ShapeDesc& s) { s.heightfield.heights[2] = -2.5; }).find("above the base"),
            std::string::npos);
  EXPECT_NE(error([](ShapeDesc& s) { s.size.z = 0; }).find("depth of the base"), std::string::npos);
  EXPECT_NE(error([](ShapeDesc& s) { s.heightfield.cols = 5000; }).find("at most 4096"),
            std::string::npos);
  EXPECT_NE(error([](ShapeDesc& s) { s.body = 0; }).find("must belong to the world body"),
            std::string::npos);
  EXPECT_EQ(error([](ShapeDesc&) {}), "compiled");
}

// Torsional and rolling friction in a pile: 30 spheres spun about the vertical at 5 rad/s land
// in a box. With contact dimension 6 their contacts (with the floor, the walls and each other,
// whose angular rows close loops) stop every spin and roll within 3 s; at dimension 3 point
// contacts hold no torque, and spheres resting on the floor alone spin on.
TEST(ContactTest, AngularFrictionStopsSpinningSpheresInAPile) {
  auto fastest_spin = [](const ModelDesc& d, Real* fastest_speed) {
    auto sim = MustCreateSimulator();
    WorldId w = MustCreateWorld(*sim, MustCompile(d));
    MustStep(*sim, w, 300);
    test::ExpectHealthy(*sim, w);
    Real spin = 0;
    *fastest_speed = 0;
    for (size_t b = 0; b < d.bodies.size(); ++b) {
      spin = std::max(spin, norm(test::BodyOmega(*sim, w, static_cast<int>(b))));
      *fastest_speed = std::max(*fastest_speed, norm(test::BodyVel(*sim, w, static_cast<int>(b))));
    }
    return spin;
  };
  ModelDesc angular = scenes::SpinningSpheresInBox(30);
  Real speed = 0;
  const Real spin = fastest_spin(angular, &speed);
  ModelDesc sliding = angular;
  for (ShapeDesc& shape : sliding.shapes) shape.contact_dim = 3;
  Real sliding_speed = 0;
  const Real sliding_spin = fastest_spin(sliding, &sliding_speed);
  std::printf(
      "after 3 s: fastest spin %.2e rad/s and speed %.2e m/s with angular friction, "
      "%.2f rad/s without\n",
      spin, speed, sliding_spin);
  EXPECT_LT(spin, 1e-3);
  EXPECT_LT(speed, 1e-3);
  EXPECT_GT(sliding_spin, 1);
}

// An explicit pair's margin and gap replace its shapes' (ContactPairDesc::margin, gap): a ball
// whose shape has a 2 cm margin rests on it alone (0.12 m), in a pair without one touching (0.1
// m), in a pair of margin 5 cm and gap 1 cm 4 cm up (0.14 m); a ball without a margin of its
// own in a pair of margin 6 cm rests 6 cm up (0.16 m): its box reaches that far for the pair.
TEST(ContactTest, AnExplicitPairsMarginAndGapReplaceTheShapes) {
  ModelDesc d;
  d.options.timestep = 0.01;
  d.shapes.push_back(Ground());
  for (int k = 0; k < 4; ++k) AddBall(d, {Real(k), 0, 0.3}).margin = k < 3 ? 0.02 : 0;
  d.contact_pairs.push_back({"touching", 0, 2});
  ContactPairDesc skin{"skin", 0, 3};
  skin.margin = 0.05;
  skin.gap = 0.01;
  d.contact_pairs.push_back(skin);
  ContactPairDesc reach{"reach", 0, 4};
  reach.margin = 0.06;
  d.contact_pairs.push_back(reach);
  auto sim = MustCreateSimulator();
  const WorldId w = MustCreateWorld(*sim, MustCompile(d));
  MustStep(*sim, w, 200);
  const Real expected[4] = {0.12, 0.1, 0.14, 0.16};
  for (int b = 0; b < 4; ++b) EXPECT_NEAR(test::BodyPos(*sim, w, b).z, expected[b], 1e-5) << b;
  test::ExpectHealthy(*sim, w);
  for (Real bad : {Real(-1), Real(NAN)}) {
    ModelDesc broken = d;
    broken.contact_pairs[1].gap = bad;
    const absl::Status status = Model::Compile(broken).status();
    EXPECT_NE(status.message().find("gap must be >= 0"), std::string::npos) << status;
  }
}

// Adhesion (ActuatorDesc::adhesion_body, MJCF <adhesion>): a 1 kg box 5 mm under a ceiling, its
// margin 2 cm (as much gap: its contacts hold it touching), pulled up by 30 N: it rises to the
// ceiling and hangs there, the ceiling pressing down with 30 - m g; with the control at 0 it
// falls; started 3 cm below, beyond its margin, the pull has no point to act at and it falls
// from the start.
ModelDesc BoxUnderCeiling(Real top_gap) {
  ModelDesc d;
  d.options.timestep = 0.01;
  d.shapes.push_back(Ground(0.5, quat_from_axis_angle({1, 0, 0}, kPi)));  // its normal down
  d.shapes.back().pose.pos = {0, 0, 1};
  AddBox(d, {0, 0, 1 - Real(0.1) - top_gap}, Quat{});
  d.shapes.back().margin = 0.02;
  d.shapes.back().gap = 0.02;
  ActuatorDesc pad;
  pad.name = "pad";
  pad.adhesion_body = 0;
  pad.gear = 30;
  pad.ctrl_limited = true;
  pad.ctrl_min = 0;
  pad.ctrl_max = 1;
  d.actuators.push_back(pad);
  return d;
}

TEST(ContactTest, AdhesionHoldsABoxUnderACeilingAndLetsItGo) {
  auto sim = MustCreateSimulator();
  const WorldId near = MustCreateWorld(*sim, MustCompile(BoxUnderCeiling(0.005)));
  const WorldId far = MustCreateWorld(*sim, MustCompile(BoxUnderCeiling(0.03)));
  for (WorldId w : {near, far}) ASSERT_TRUE(sim->SetControls(w, std::vector<Real>{1}).ok());
  ASSERT_TRUE(sim->StepAll(100).ok());
  // hanging: its top against the ceiling, at rest, pressed by 30 N less its weight
  const Real top = test::BodyPos(*sim, near, 0).z + Real(0.1);
  EXPECT_NEAR(top, 1, 1e-3);
  EXPECT_LT(norm(test::BodyVel(*sim, near, 0)), 1e-3);
  Vec3 pressed{0, 0, 0};
  absl::StatusOr<std::vector<ContactReport>> contacts = sim->GetContacts(near);
  ASSERT_TRUE(contacts.ok()) << contacts.status();
  for (const ContactReport& c : *contacts) {
    pressed = pressed + (c.body_a == 0 ? c.force : Real(-1) * c.force);
  }
  std::printf("box pulled onto the ceiling: top at %.5f m, the ceiling's force on it %.3f N\n",
              static_cast<double>(top), static_cast<double>(pressed.z));
  EXPECT_NEAR(pressed.z, -(30 - kG), 0.05);
  EXPECT_NEAR((*sim->GetActuatorForces(near))[0], 30, 1e-12);
  // out of reach: it falls freely (1 s of g from rest, backward Euler)
  EXPECT_LT(test::BodyPos(*sim, far, 0).z, 0.0);
  // let go: it falls as from rest
  ASSERT_TRUE(sim->SetControls(near, std::vector<Real>{0}).ok());
  const Real z0 = test::BodyPos(*sim, near, 0).z;
  MustStep(*sim, near, 10);
  EXPECT_NEAR(test::BodyPos(*sim, near, 0).z - z0, -kG * Real(0.01 * 0.01) * 55, 1e-5);
  test::ExpectHealthy(*sim, near);
}

// The pull is shared equally by the points in reach, each pulling along its normal at the
// point: a box tilted so that only one edge's two corners lie within its margin of the floor
// (no gravity, the corners 1 cm up; as much gap as margin, so no contact holds them) is pulled down
// and turned edge-first; a flat one is pulled down without turning; the floor takes nothing (a
// static shape). Its acceleration after one step: the pull F down, and the torque of F at the edge
// about the centre of mass.
TEST(ContactTest, AdhesionPullsAtThePointsWithinReach) {
  const Real half = 0.1, tilt = 0.3, lift = 0.01;
  ModelDesc d;
  d.options.timestep = 0.001;
  d.options.gravity = {0, 0, 0};
  d.shapes.push_back(Ground());
  // the lowest edge along x at y = -half (body frame), turned by `tilt` about x
  const Quat turn = quat_from_axis_angle({1, 0, 0}, tilt);
  const Vec3 edge = rotate(turn, Vec3{0, -half, -half});
  AddBox(d, {0, 0, lift - edge.z}, turn, half);
  d.shapes.back().margin = d.shapes.back().gap = 0.02;
  AddBox(d, {1, 0, half + lift}, Quat{}, half);
  d.shapes.back().margin = d.shapes.back().gap = 0.02;
  for (int b = 0; b < 2; ++b) {
    ActuatorDesc pad;
    pad.adhesion_body = b;
    pad.gear = 4;
    d.actuators.push_back(pad);
  }
  auto sim = MustCreateSimulator();
  const WorldId w = MustCreateWorld(*sim, MustCompile(d));
  ASSERT_TRUE(sim->SetControls(w, std::vector<Real>{1, 1}).ok());
  MustStep(*sim, w);
  const Real h = d.options.timestep, inertia = d.bodies[0].inertia(0, 0);
  // tilted: 4 N down at the edge's middle (0, edge.y, lift): torque r x F about x
  const Vec3 torque = cross(Vec3{0, edge.y, edge.z}, Vec3{0, 0, -4});
  EXPECT_NEAR(test::BodyVel(*sim, w, 0).z, -4 * h, 1e-9);
  EXPECT_NEAR(test::BodyOmega(*sim, w, 0).x, h * torque.x / inertia, 1e-9);
  EXPECT_NEAR(test::BodyOmega(*sim, w, 0).y, 0, 1e-9);
  // flat: four corners, no turn
  EXPECT_NEAR(test::BodyVel(*sim, w, 1).z, -4 * h, 1e-9);
  EXPECT_NEAR(norm(test::BodyOmega(*sim, w, 1)), 0, 1e-9);
  EXPECT_NEAR((*sim->GetActuatorForces(w))[1], 4, 1e-12);
}

// An adhesion actuator names a body, has no other transmission, and is an effort.
TEST(ContactTest, AdhesionActuatorIsValidated) {
  ModelDesc d = BoxUnderCeiling(0.005);
  ASSERT_TRUE(Model::Compile(d).ok());
  auto fails_with = [&](const ModelDesc& bad, const std::string& text) {
    const absl::Status status = Model::Compile(bad).status();
    EXPECT_NE(status.message().find(text), std::string::npos) << status;
  };
  ModelDesc bad = d;
  bad.actuators[0].adhesion_body = 1;
  fails_with(bad, "adhesion_body refers to missing body 1");
  bad = d;
  bad.actuators[0].adhesion_body = -3;
  fails_with(bad, "missing body -3");
  bad = d;
  bad.actuators[0].site_body = 0;
  fails_with(bad, "one transmission");
  bad = d;
  bad.actuators[0].type = ActuatorType::kPosition;
  fails_with(bad, "adhesion actuators are efforts");
}

}  // namespace
}  // namespace axion
