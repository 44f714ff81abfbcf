// Shape mass properties: closed forms, MuJoCo 2.2.2's values for the same geoms, exact hull
// integration, frame changes and unions.
#include "collision/mass.h"

#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "test_shapes.h"

namespace axion::testing {
namespace {

void ExpectRelNear(Real actual, Real expected, Real rel, const char* what) {
  EXPECT_NEAR(actual, expected, rel * std::fabs(expected)) << what;
}

void ExpectMatNear(const Mat33& a, const Mat33& b, Real tol) {
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(a.m[i], b.m[i], tol) << "entry " << i;
}

TEST(MassTest, SphereBoxCylinderClosedForms) {
  MassProperties s = SphereMassProperties(.3, 500);
  ExpectRelNear(s.volume, 4 * kPi * .027 / 3, 1e-15, "sphere volume");
  ExpectRelNear(s.mass, 500 * s.volume, 1e-15, "sphere mass");
  for (int i = 0; i < 3; ++i) ExpectRelNear(s.inertia(i, i), .4 * s.mass * .09, 1e-15, "sphere I");

  MassProperties b = BoxMassProperties({.1, .2, .3}, 1000);
  ExpectRelNear(b.mass, 48, 1e-15, "box mass");
  ExpectRelNear(b.inertia(0, 0), 48 * (.16 + .36) / 12, 1e-14, "box Ixx");  // full lengths
  ExpectRelNear(b.inertia(1, 1), 48 * (.04 + .36) / 12, 1e-14, "box Iyy");
  ExpectRelNear(b.inertia(2, 2), 48 * (.04 + .16) / 12, 1e-14, "box Izz");
  EXPECT_EQ(b.inertia(0, 1), 0);

  MassProperties c = CylinderMassProperties(.08, .15, 1000);
  Real m = 1000 * kPi * .0064 * .3;
  ExpectRelNear(c.mass, m, 1e-15, "cylinder mass");
  ExpectRelNear(c.inertia(0, 0), m * (3 * .0064 + .09) / 12, 1e-14, "cylinder Ixx");
  ExpectRelNear(c.inertia(2, 2), m * .0064 / 2, 1e-14, "cylinder Izz");
  for (const MassProperties& p : {s, b, c}) {
    EXPECT_EQ(p.com.x, 0);
    EXPECT_EQ(p.com.z, 0);
  }
}

TEST(MassTest, CapsuleIsACylinderAndTwoHemispheres) {
  // Independent derivation: each hemisphere has inertia 83/320 m r^2 about its own centre of
  // mass (transverse axes), which sits 3r/8 from its flat face.
  const Real r = .05, half = .2, rho = 1000;
  Real m_cyl = rho * kPi * r * r * 2 * half;
  Real m_hemi = rho * 2 * kPi * r * r * r / 3;
  Real d = half + 3 * r / 8;
  Real ixx = m_cyl * (3 * r * r + 4 * half * half) / 12 +
             2 * (83.0 / 320 * m_hemi * r * r + m_hemi * d * d);
  Real izz = m_cyl * r * r / 2 + 2 * (2.0 / 5 * m_hemi * r * r);
  MassProperties cap = CapsuleMassProperties(r, half, rho);
  ExpectRelNear(cap.mass, m_cyl + 2 * m_hemi, 1e-14, "capsule mass");
  ExpectRelNear(cap.inertia(0, 0), ixx, 1e-12, "capsule Ixx");
  ExpectRelNear(cap.inertia(1, 1), ixx, 1e-12, "capsule Iyy");
  ExpectRelNear(cap.inertia(2, 2), izz, 1e-12, "capsule Izz");
}

TEST(MassTest, MatchesMujocoCompiledModel) {
  // body_mass and body_inertia that MuJoCo 2.2.2 compiles for single-geom bodies with these
  // sizes and densities
  struct Expected {
    ShapeType type;
    Vec3 size;
    Real density;
    Real mass;
    Vec3 inertia;
  };
  const Expected cases[] = {
      {ShapeType::kSphere,
       {.07, 0, 0},
       1000,
       1.4367550402417326,
       {0.0028160398788737969, 0.0028160398788737969, 0.0028160398788737969}},
      {ShapeType::kCapsule,
       {.05, .2, 0},
       1000,
       3.6651914291880932,
       {0.069245938072875046, 0.069245938072875046, 0.0044505895925855419}},
      {ShapeType::kBox,
       {.1, .2, .3},
       1000,
       48.000000000000007,
       {2.0800000000000005, 1.6000000000000003, 0.80000000000000027}},
      {ShapeType::kCylinder,
       {.08, .15, 0},
       1000,
       6.0318578948924042,
       {0.054889906843520873, 0.054889906843520873, 0.019301945263655692}},
      {ShapeType::kCapsule,
       {.1, .05, 0},
       750,
       5.4977871437821397,
       {0.040055306333269876, 0.040055306333269876, 0.024347343065320909}},
  };
  for (const Expected& e : cases) {
    absl::StatusOr<MassProperties> m = ShapeMassProperties(e.type, e.size, {}, e.density);
    ASSERT_TRUE(m.ok()) << m.status();
    ExpectRelNear(m->mass, e.mass, 1e-12, "mass");
    for (int i = 0; i < 3; ++i) ExpectRelNear(m->inertia(i, i), e.inertia[i], 1e-12, "inertia");
  }
}

TEST(MassTest, HullIntegrationIsExact) {
  // the cube hull against the box formula
  absl::StatusOr<MassProperties> cube = HullMassProperties(CubeHullData(), 700);
  ASSERT_TRUE(cube.ok());
  MassProperties box = BoxMassProperties({.5, .5, .5}, 700);
  ExpectRelNear(cube->volume, 1, 1e-14, "cube volume");
  ExpectRelNear(cube->mass, box.mass, 1e-14, "cube mass");
  ExpectMatNear(cube->inertia, box.inertia, 1e-12);
  EXPECT_NEAR(norm(cube->com), 0, 1e-15);

  // right tetrahedron with unit legs: V = 1/6, com = 1/4, and about the com
  // Ixx = 1/80, Ixy = +1/480 (products of inertia enter with a minus sign) at unit density
  absl::StatusOr<MassProperties> tetra = ShapeMassProperties(
      ShapeType::kConvexHull, {}, {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, 1);
  ASSERT_TRUE(tetra.ok());
  EXPECT_NEAR(tetra->volume, 1.0 / 6, 1e-15);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(tetra->com[i], .25, 1e-15);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      EXPECT_NEAR(tetra->inertia(i, j), i == j ? 1.0 / 80 : 1.0 / 480, 1e-15) << i << j;
    }
  }

  // a box of half extents (.1, .2, .3), turned and moved, as a hull
  Quat q = AxisAngle({1, -2, .5}, 1.1);
  Vec3 offset{3, -2, 1};
  std::vector<Vec3> corners;
  for (int k = 0; k < 8; ++k) {
    corners.push_back(rotate(q, {(k & 1) ? .1 : -.1, (k & 2) ? .2 : -.2, (k & 4) ? .3 : -.3}) +
                      offset);
  }
  absl::StatusOr<MassProperties> turned =
      ShapeMassProperties(ShapeType::kConvexHull, {}, corners, 1000);
  ASSERT_TRUE(turned.ok());
  MassProperties expected =
      TransformMassProperties(BoxMassProperties({.1, .2, .3}, 1000), offset, q);
  ExpectRelNear(turned->mass, 48, 1e-13, "mass");
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(turned->com[i], offset[i], 1e-13);
  ExpectMatNear(turned->inertia, expected.inertia, 1e-12);
}

TEST(MassTest, TransformAndCombine) {
  // two unit cubes side by side are one 2 x 1 x 1 box
  MassProperties cube = BoxMassProperties({.5, .5, .5}, 2);
  MassProperties left = TransformMassProperties(cube, {-.5, 0, 0}, Quat{});
  MassProperties right = TransformMassProperties(cube, {.5, 0, 0}, AxisAngle({0, 0, 1}, kPi / 2));
  MassProperties both = CombineMassProperties(left, right);
  MassProperties slab = BoxMassProperties({1, .5, .5}, 2);
  ExpectRelNear(both.mass, slab.mass, 1e-15, "mass");
  ExpectRelNear(both.volume, slab.volume, 1e-15, "volume");
  EXPECT_NEAR(norm(both.com), 0, 1e-15);
  ExpectMatNear(both.inertia, slab.inertia, 1e-14);
  // a rotated box: R I R^T
  Quat q = AxisAngle({0, 0, 1}, kPi / 2);
  MassProperties turned = TransformMassProperties(BoxMassProperties({.1, .2, .3}, 1), {}, q);
  MassProperties swapped = BoxMassProperties({.2, .1, .3}, 1);
  ExpectMatNear(turned.inertia, swapped.inertia, 1e-15);
}

TEST(MassTest, ValidationAndZeroDensity) {
  EXPECT_EQ(ShapeMassProperties(ShapeType::kPlane, {}, {}, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ShapeMassProperties(ShapeType::kSphere, {0, 0, 0}, {}, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ShapeMassProperties(ShapeType::kBox, {1, -1, 1}, {}, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ShapeMassProperties(ShapeType::kCylinder, {1, NAN, 0}, {}, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ShapeMassProperties(ShapeType::kSphere, {1, 0, 0}, {}, -1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ShapeMassProperties(ShapeType::kConvexHull, {}, {{0, 0, 0}}, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  // a capsule of zero length is a sphere
  absl::StatusOr<MassProperties> ball = ShapeMassProperties(ShapeType::kCapsule, {.2, 0, 0}, {}, 3);
  ASSERT_TRUE(ball.ok());
  ExpectRelNear(ball->mass, SphereMassProperties(.2, 3).mass, 1e-15, "mass");
  ExpectRelNear(ball->inertia(0, 0), SphereMassProperties(.2, 3).inertia(0, 0), 1e-14, "I");
  // density 0: massless but with a volume
  absl::StatusOr<MassProperties> ghost = ShapeMassProperties(ShapeType::kBox, {1, 1, 1}, {}, 0);
  ASSERT_TRUE(ghost.ok());
  EXPECT_EQ(ghost->mass, 0);
  EXPECT_EQ(ghost->volume, 8);
}

}  // namespace
}  // namespace axion::testing
