// Model validation: bad input is refused with an error naming the element and the field.
#include <cmath>
#include <limits>
#include <vector>

#include "scenes.h"

namespace axion {
namespace {

using ::testing::HasSubstr;

ModelDesc OneBody() {
  ModelDesc d;
  BodyDesc b;
  b.name = "torso";
  b.mass = 1;
  b.inertia = mat33_diag({0.1, 0.1, 0.1});
  d.bodies.push_back(b);
  return d;
}

std::string CompileError(const ModelDesc& d) {
  absl::StatusOr<std::shared_ptr<const Model>> m = Model::Compile(d);
  EXPECT_FALSE(m.ok());
  if (m.ok()) return "";
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(m.status().message());
}

const Real kNaN = std::numeric_limits<Real>::quiet_NaN();

TEST(ModelTest, RejectsBadBodies) {
  ModelDesc d = OneBody();
  d.bodies[0].mass = 0;
  EXPECT_THAT(CompileError(d), HasSubstr("body 0 ('torso'): mass"));
  d.bodies[0].mass = -2;
  EXPECT_THAT(CompileError(d), HasSubstr("mass must be positive"));
  d.bodies[0].mass = kNaN;
  EXPECT_THAT(CompileError(d), HasSubstr("mass"));
  d = OneBody();
  d.bodies[0].inertia(0, 1) = 0.05;
  EXPECT_THAT(CompileError(d), HasSubstr("inertia is not symmetric"));
  d = OneBody();
  d.bodies[0].inertia = mat33_diag({0.1, -0.1, 0.1});
  EXPECT_THAT(CompileError(d), HasSubstr("not positive definite"));
  d = OneBody();
  d.bodies[0].inertia = mat33_diag({0.1, 0.1, 0.5});
  EXPECT_THAT(CompileError(d), HasSubstr("triangle inequality"));
  // a rod: positive moments in floating point, 2e-18 about its axis (a robot file's link)
  d = OneBody();
  d.bodies[0].inertia(0, 0) = 0.2125;
  d.bodies[0].inertia(1, 1) = 0.205;
  d.bodies[0].inertia(2, 2) = 0.0125;
  d.bodies[0].inertia(0, 1) = d.bodies[0].inertia(1, 0) = -0.005;
  d.bodies[0].inertia(0, 2) = d.bodies[0].inertia(2, 0) = 0.0225;
  d.bodies[0].inertia(1, 2) = d.bodies[0].inertia(2, 1) = 0.045;
  EXPECT_THAT(CompileError(d), HasSubstr("nearly singular"));
  d = OneBody();
  d.bodies[0].pose.quat = {0, 0, 0, 0};
  EXPECT_THAT(CompileError(d), HasSubstr("pose.quat is zero"));
  d = OneBody();
  d.bodies[0].linear_velocity.y = kNaN;
  EXPECT_THAT(CompileError(d), HasSubstr("linear_velocity is not finite"));
  d = OneBody();
  d.bodies[0].inertia(2, 2) = kNaN;
  EXPECT_THAT(CompileError(d), HasSubstr("inertia is not finite"));
  d = OneBody();
  d.bodies[0].com.x = kNaN;
  EXPECT_THAT(CompileError(d), HasSubstr("com is not finite"));
}

TEST(ModelTest, RejectsBadJoints) {
  ModelDesc base = OneBody();
  JointDesc j;
  j.name = "hinge";
  j.parent = kWorldBody;
  j.child = 0;
  j.axis = Vec3{0, 1, 0};
  base.joints.push_back(j);
  ASSERT_TRUE(Model::Compile(base).ok());

  ModelDesc d = base;
  d.joints[0].child = 3;
  EXPECT_THAT(CompileError(d), HasSubstr("joint 0 ('hinge'): child refers to missing body 3"));
  d = base;
  d.joints[0].parent = 7;
  EXPECT_THAT(CompileError(d), HasSubstr("parent refers to missing body 7"));
  d = base;
  d.joints[0].axis = Vec3{0, 0, 0};
  EXPECT_THAT(CompileError(d), HasSubstr("axis has zero length"));
  d = base;
  d.joints[0].limited = true;
  d.joints[0].lower = {1};
  d.joints[0].upper = {-1};
  EXPECT_THAT(CompileError(d), HasSubstr("lower > upper"));
  d = base;
  d.joints[0].drive.stiffness = -5;
  EXPECT_THAT(CompileError(d), HasSubstr("drive.stiffness must be >= 0"));
  d = base;
  d.joints[0].drive.target_position = kNaN;
  EXPECT_THAT(CompileError(d), HasSubstr("drive.target_position is not finite"));
  d = base;
  d.joints[0].compliance = -1;
  EXPECT_THAT(CompileError(d), HasSubstr("compliance"));
}

TEST(ModelTest, RejectsBadShapesAndMaterials) {
  ModelDesc base = OneBody();
  ShapeDesc s;
  s.name = "foot";
  s.body = 0;
  s.type = ShapeType::kBox;
  s.size = {0.1, 0.1, 0.1};
  base.shapes.push_back(s);
  ASSERT_TRUE(Model::Compile(base).ok());
  ModelDesc d = base;
  d.shapes[0].size.y = 0;
  EXPECT_THAT(CompileError(d),
              HasSubstr("shape 0 ('foot'): size.y (half extent) must be positive"));
  d = base;
  d.shapes[0].type = ShapeType::kSphere;
  d.shapes[0].size.x = -1;
  EXPECT_THAT(CompileError(d), HasSubstr("radius) must be positive"));
  d = base;
  d.shapes[0].material.friction = -0.1;
  EXPECT_THAT(CompileError(d), HasSubstr("material.friction"));
  d = base;
  d.shapes[0].material.torsional_friction = kNaN;
  EXPECT_THAT(CompileError(d), HasSubstr("material.torsional_friction must be >= 0 and finite"));
  d = base;
  d.shapes[0].material.rolling_friction = -1;
  EXPECT_THAT(CompileError(d), HasSubstr("material.rolling_friction must be >= 0 and finite"));
  d = base;
  d.shapes[0].margin = -0.01;
  EXPECT_THAT(CompileError(d), HasSubstr("margin must be >= 0 and finite"));
  d = base;
  d.shapes[0].gap = kNaN;
  EXPECT_THAT(CompileError(d), HasSubstr("gap must be >= 0 and finite"));
  d = base;
  d.shapes[0].contact_dim = 5;
  EXPECT_THAT(CompileError(d), HasSubstr("contact_dim must be 1 (frictionless), 3 (friction), 4"));
  d = base;
  d.shapes[0].contact_dim = 4;
  EXPECT_EQ((*Model::Compile(d))->contact_angular_rows(), 1);
  d.shapes[0].contact_dim = 6;
  EXPECT_EQ((*Model::Compile(d))->contact_angular_rows(), 3);
  d = base;
  d.shapes[0].material.restitution = 1.5;
  EXPECT_THAT(CompileError(d), HasSubstr("material.restitution must be in [0, 1]"));
  d = base;
  d.shapes[0].size.z = kNaN;
  EXPECT_THAT(CompileError(d), HasSubstr("size is not finite"));
  d = base;
  d.shapes[0].type = ShapeType::kConvexHull;
  d.shapes[0].vertices = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
  EXPECT_THAT(CompileError(d), HasSubstr("vertices"));
  d.shapes[0].vertices = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}};
  EXPECT_THAT(CompileError(d), HasSubstr("vertices"));
  d = base;
  d.shapes[0].type = ShapeType::kPlane;
  EXPECT_THAT(CompileError(d), HasSubstr("plane must belong to the world body"));
}

TEST(ModelTest, RejectsBadOptionsAndActuators) {
  ModelDesc d = OneBody();
  d.options.timestep = 0;
  EXPECT_THAT(CompileError(d), HasSubstr("options: timestep must be positive"));
  d = OneBody();
  d.options.gravity.z = kNaN;
  EXPECT_THAT(CompileError(d), HasSubstr("gravity is not finite"));
  d = OneBody();
  d.options.baumgarte = 2;
  EXPECT_THAT(CompileError(d), HasSubstr("baumgarte"));
  d = OneBody();
  ActuatorDesc a;
  a.name = "motor";
  a.joint = 0;
  d.actuators.push_back(a);
  EXPECT_THAT(CompileError(d), HasSubstr("actuator 0 ('motor'): joint refers to missing joint 0"));
}

TEST(ModelTest, CountsRowsDofsAndCollisionPairs) {
  ModelDesc d = OneBody();
  d.bodies.push_back(d.bodies[0]);
  d.bodies[1].name = "arm";
  JointDesc hinge;
  hinge.parent = 0;
  hinge.child = 1;
  hinge.axis = Vec3{0, 0, 1};
  hinge.limited = true;
  hinge.lower = {-1};
  hinge.upper = {1};
  d.joints.push_back(hinge);
  for (int b = 0; b < 2; ++b) {
    ShapeDesc s;
    s.body = b;
    s.type = ShapeType::kSphere;
    s.size = {0.1, 0, 0};
    d.shapes.push_back(s);
  }
  ShapeDesc ground;
  ground.type = ShapeType::kPlane;
  d.shapes.push_back(ground);
  auto m = test::MustCompile(d);
  EXPECT_EQ(m->joint_dof_count(), 1);
  EXPECT_EQ(m->joint_row_count(), 5 + 2);  // 5 bilateral + 2 limit rows, no drive
  // The two jointed bodies do not collide with each other, both collide with the ground.
  EXPECT_EQ(m->collision_pairs().size(), 2u);
  EXPECT_NEAR(m->total_mass(), 2, 1e-12);
}

// JointLimitViolation: the largest excess of any limited DOF past its range, angular and
// linear apart, for each joint type's limits (a ball joint's turn past its cone), unlimited
// DOFs ignored; NaN kept; positions of the wrong length refused.
TEST(ModelTest, JointLimitViolationIsTheLargestExcessOfALimitedDof) {
  ModelDesc d = OneBody();
  for (const char* name : {"a", "b", "c", "d"}) {
    d.bodies.push_back(d.bodies[0]);
    d.bodies.back().name = name;
  }
  auto joint = [&](JointType type, int parent, int child) -> JointDesc& {
    JointDesc j;
    j.type = type;
    j.parent = parent;
    j.child = child;
    d.joints.push_back(j);
    return d.joints.back();
  };
  joint(JointType::kRevolute, kWorldBody, 0);  // unlimited
  JointDesc& hinge = joint(JointType::kRevolute, 0, 1);
  hinge.limited = true;
  hinge.lower = {-0.5};
  hinge.upper = {0.5};
  JointDesc& slide = joint(JointType::kPrismatic, 1, 2);
  slide.limited = true;
  slide.lower = {0};
  slide.upper = {0.1};
  JointDesc& ball = joint(JointType::kBall, 2, 3);
  ball.limited = true;
  ball.upper = {0.3};
  JointDesc& generic = joint(JointType::kGeneric, 3, 4);
  generic.axis_mode = {AxisMode::kLimited, AxisMode::kLocked, AxisMode::kLocked,
                       AxisMode::kFree,    AxisMode::kLocked, AxisMode::kLimited};
  generic.lower = {-0.01, 0, -0.2};  // the free DOF's entry is not read
  generic.upper = {0.01, 0, 0.2};
  auto m = test::MustCompile(d);
  ASSERT_EQ(m->joint_position_count(), 1 + 1 + 1 + 4 + 3);
  // a turn of `angle` about x, as a ball joint's position (w, x, y, z)
  auto turn = [](Real angle, Real sign) {
    return std::vector<Real>{sign * std::cos(angle / 2), sign * std::sin(angle / 2), 0, 0};
  };
  auto positions = [&](Real hinge_q, Real slide_q, std::vector<Real> ball_q, Real lin, Real free,
                       Real ang) {
    std::vector<Real> q = {7, hinge_q, slide_q};
    q.insert(q.end(), ball_q.begin(), ball_q.end());
    q.insert(q.end(), {lin, free, ang});
    return q;
  };

  auto inside = JointLimitViolation(*m, positions(0.4, 0.05, turn(0.2, 1), 0, 5, 0.1));
  ASSERT_TRUE(inside.ok()) << inside.status();
  EXPECT_EQ(inside->angular, 0);
  EXPECT_EQ(inside->linear, 0);

  // hinge 0.2 rad past, ball 0.3 rad past (its turn 0.6, written with w < 0), generic angular
  // 0.05 rad past; slide 0.03 m below, generic linear 0.01 m past
  auto outside = JointLimitViolation(*m, positions(0.7, -0.03, turn(0.6, -1), 0.02, 5, -0.25));
  ASSERT_TRUE(outside.ok()) << outside.status();
  EXPECT_NEAR(outside->angular, 0.3, 1e-12);
  EXPECT_NEAR(outside->linear, 0.03, 1e-12);
  auto hinge_only = JointLimitViolation(*m, positions(-0.7, 0.05, turn(0.2, 1), 0, 5, 0));
  ASSERT_TRUE(hinge_only.ok());
  EXPECT_NEAR(hinge_only->angular, 0.2, 1e-12);
  EXPECT_EQ(hinge_only->linear, 0);

  auto nan = JointLimitViolation(*m, positions(kNaN, 0.05, turn(0.2, 1), 0, 5, 0));
  ASSERT_TRUE(nan.ok());
  EXPECT_TRUE(std::isnan(nan->angular));

  auto short_positions = JointLimitViolation(*m, std::vector<Real>(9, 0));
  ASSERT_FALSE(short_positions.ok());
  EXPECT_EQ(short_positions.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(short_positions.status().message(), HasSubstr("expected 10 entries"));
}

}  // namespace
}  // namespace axion
