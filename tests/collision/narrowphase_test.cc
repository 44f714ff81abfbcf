// Narrow phase through collide_shapes() / shape_aabb(): every shape pair in known
// configurations (separated within the margin, touching, penetrating; face, edge and vertex
// contacts), checked in both argument orders and under rigid motions of the whole scene; then
// randomized poses checked against independent support functions and signed distances.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test_shapes.h"

namespace axion::testing {
namespace {

const Real kSqrt2 = std::sqrt(Real(2));
const Real kSqrt3 = std::sqrt(Real(3));
const Vec3 kX{1, 0, 0}, kY{0, 1, 0}, kZ{0, 0, 1};

Pose At(Real x, Real y, Real z, Quat q = Quat{}) { return {{x, y, z}, q}; }
const Quat kRx90 = AxisAngle(kX, kPi / 2);  // local z -> world -y
const Quat kRy90 = AxisAngle(kY, kPi / 2);  // local z -> world +x
const Quat kRx45 = AxisAngle(kX, kPi / 4);
const Quat kRy45 = AxisAngle(kY, kPi / 4);
const Quat kRz45 = AxisAngle(kZ, kPi / 4);

struct PairCase {
  std::string name;
  ShapeGeom a;
  Pose pose_a;
  ShapeGeom b;
  Pose pose_b;
  Real margin;
  int count;
  Real gap;                   // of every contact
  Vec3 normal;                // of every contact, from b towards a
  std::vector<Vec3> point_b;  // point_b of the contacts in any order; when longer than `count`
                              // the contacts are a subset (a manifold reduced to 4)
};

// gtest prints the case by name instead of dumping its bytes
void PrintTo(const PairCase& c, std::ostream* os) { *os << c.name; }

std::vector<Vec3> Grid4(Real x, Real y, Real z) {
  return {{-x, -y, z}, {x, -y, z}, {x, y, z}, {-x, y, z}};
}
std::vector<Vec3> Octagon(Real r, Real z) {
  std::vector<Vec3> p;
  for (int k = 0; k < 8; ++k)
    p.push_back({r * std::cos(k * kPi / 4), r * std::sin(k * kPi / 4), z});
  return p;
}

std::vector<PairCase> Cases() {
  const ShapeGeom plane = Plane();
  const Pose origin = At(0, 0, 0);
  std::vector<PairCase> c;
  // plane - X
  c.push_back({"plane_sphere_separated",
               Sphere(.5),
               At(.3, -.2, .6),
               plane,
               origin,
               .2,
               1,
               .1,
               kZ,
               {{.3, -.2, 0}}});
  c.push_back({"plane_sphere_beyond_margin",
               Sphere(.5),
               At(.3, -.2, .6),
               plane,
               origin,
               .05,
               0,
               0,
               kZ,
               {}});
  c.push_back({"plane_sphere_penetrating",
               Sphere(.5),
               At(.3, -.2, .4),
               plane,
               origin,
               .01,
               1,
               -.1,
               kZ,
               {{.3, -.2, 0}}});
  c.push_back({"plane_capsule_lying",
               Capsule(.1, .5),
               At(0, 0, .1, kRy90),
               plane,
               origin,
               .01,
               2,
               0,
               kZ,
               {{-.5, 0, 0}, {.5, 0, 0}}});
  c.push_back({"plane_capsule_upright",
               Capsule(.1, .5),
               At(0, 0, .55),
               plane,
               origin,
               .01,
               1,
               -.05,
               kZ,
               {{0, 0, 0}}});
  c.push_back({"plane_box_face", Box(.5, .3, .2), At(0, 0, .19), plane, origin, .01, 4, -.01, kZ,
               Grid4(.5, .3, 0)});
  c.push_back({"plane_box_edge",
               Box(.5, .5, .5),
               At(0, 0, kSqrt2 / 2, kRx45),
               plane,
               origin,
               .01,
               2,
               0,
               kZ,
               {{-.5, 0, 0}, {.5, 0, 0}}});
  {
    // corner (-.5, -.5, -.5) straight down
    Quat q = AxisAngle({1, -1, 0}, std::acos(1 / kSqrt3));
    c.push_back({"plane_box_corner",
                 Box(.5, .5, .5),
                 At(.2, .1, kSqrt3 / 2 - .005, q),
                 plane,
                 origin,
                 .01,
                 1,
                 -.005,
                 kZ,
                 {{.2, .1, 0}}});
  }
  c.push_back({"plane_cylinder_standing",
               Cylinder(.3, .4),
               At(0, 0, .4),
               plane,
               origin,
               .01,
               4,
               0,
               kZ,
               {{.3, 0, 0}, {-.3, 0, 0}, {0, .3, 0}, {0, -.3, 0}}});
  c.push_back({"plane_cylinder_lying",
               Cylinder(.3, .4),
               At(0, 0, .3, kRx90),
               plane,
               origin,
               .01,
               2,
               0,
               kZ,
               {{0, .4, 0}, {0, -.4, 0}}});
  {
    // tilted 30 degrees about x, resting on one rim point 0.02 deep
    Real s = std::sin(kPi / 6), co = std::cos(kPi / 6);
    Real z = .4 * co + .3 * s - .02;
    c.push_back({"plane_cylinder_rim",
                 Cylinder(.3, .4),
                 At(0, 0, z, AxisAngle(kX, kPi / 6)),
                 plane,
                 origin,
                 .01,
                 1,
                 -.02,
                 kZ,
                 {{0, .4 * s - .3 * co, 0}}});
  }
  c.push_back({"plane_hull_face", CubeHull(), At(0, 0, .5), plane, origin, .01, 4, 0, kZ,
               Grid4(.5, .5, 0)});
  c.push_back({"plane_hull_vertex",
               OctahedronHull(),
               At(.1, .2, .49),
               plane,
               origin,
               .01,
               1,
               -.01,
               kZ,
               {{.1, .2, 0}}});
  // sphere - X
  c.push_back({"sphere_sphere_separated",
               Sphere(.5),
               At(0, 0, 1.1),
               Sphere(.5),
               origin,
               .2,
               1,
               .1,
               kZ,
               {{0, 0, .5}}});
  c.push_back({"sphere_sphere_touching",
               Sphere(.5),
               At(0, 0, 1),
               Sphere(.5),
               origin,
               .01,
               1,
               0,
               kZ,
               {{0, 0, .5}}});
  c.push_back({"sphere_sphere_penetrating",
               Sphere(.3),
               At(.3, .4, 0),
               Sphere(.4),
               origin,
               0,
               1,
               -.2,
               {.6, .8, 0},
               {{.24, .32, 0}}});
  c.push_back({"sphere_sphere_beyond_margin",
               Sphere(.5),
               At(0, 0, 1.1),
               Sphere(.5),
               origin,
               .1,
               0,
               0,
               kZ,
               {}});
  c.push_back({"sphere_capsule_side",
               Sphere(.3),
               At(.6, 0, .2),
               Capsule(.2, .5),
               origin,
               .2,
               1,
               .1,
               kX,
               {{.2, 0, .2}}});
  c.push_back({"sphere_capsule_end",
               Sphere(.3),
               At(0, 0, 1),
               Capsule(.2, .5),
               origin,
               .1,
               1,
               0,
               kZ,
               {{0, 0, .7}}});
  c.push_back({"sphere_box_face",
               Sphere(.2),
               At(0, 0, .55),
               Box(.5, .4, .3),
               origin,
               .1,
               1,
               .05,
               kZ,
               {{0, 0, .3}}});
  c.push_back({"sphere_box_edge",
               Sphere(.2),
               At(.6, 0, .4),
               Box(.5, .4, .3),
               origin,
               .1,
               1,
               kSqrt2 * .1 - .2,
               {1 / kSqrt2, 0, 1 / kSqrt2},
               {{.5, 0, .3}}});
  c.push_back({"sphere_box_vertex",
               Sphere(.2),
               At(.6, .5, .4),
               Box(.5, .4, .3),
               origin,
               .1,
               1,
               kSqrt3 * .1 - .2,
               {1 / kSqrt3, 1 / kSqrt3, 1 / kSqrt3},
               {{.5, .4, .3}}});
  c.push_back({"sphere_box_centre_inside",
               Sphere(.2),
               At(.1, 0, .2),
               Box(.5, .4, .3),
               origin,
               .1,
               1,
               -.3,
               kZ,
               {{.1, 0, .3}}});
  c.push_back({"sphere_cylinder_side",
               Sphere(.2),
               At(.55, 0, .1),
               Cylinder(.3, .4),
               origin,
               .1,
               1,
               .05,
               kX,
               {{.3, 0, .1}}});
  c.push_back({"sphere_cylinder_cap",
               Sphere(.2),
               At(.1, 0, .65),
               Cylinder(.3, .4),
               origin,
               .1,
               1,
               .05,
               kZ,
               {{.1, 0, .4}}});
  c.push_back({"sphere_cylinder_rim",
               Sphere(.2),
               At(.4, 0, .5),
               Cylinder(.3, .4),
               origin,
               .1,
               1,
               kSqrt2 * .1 - .2,
               {1 / kSqrt2, 0, 1 / kSqrt2},
               {{.3, 0, .4}}});
  c.push_back({"sphere_cylinder_centre_inside",
               Sphere(.2),
               At(0, .1, .3),
               Cylinder(.3, .4),
               origin,
               .1,
               1,
               -.3,
               kZ,
               {{0, .1, .4}}});
  c.push_back({"sphere_hull_face",
               Sphere(.2),
               At(.1, .2, .75),
               CubeHull(),
               origin,
               .1,
               1,
               .05,
               kZ,
               {{.1, .2, .5}}});
  c.push_back({"sphere_hull_vertex",
               Sphere(.2),
               At(.6, .6, .6),
               CubeHull(),
               origin,
               .1,
               1,
               kSqrt3 * .1 - .2,
               {1 / kSqrt3, 1 / kSqrt3, 1 / kSqrt3},
               {{.5, .5, .5}}});
  c.push_back({"sphere_hull_centre_inside",
               Sphere(.2),
               At(0, 0, .4),
               CubeHull(),
               origin,
               .1,
               1,
               -.3,
               kZ,
               {{0, 0, .5}}});
  // capsule - X
  c.push_back({"capsule_capsule_crossing",
               Capsule(.1, .5),
               At(0, 0, .25, kRx90),
               Capsule(.1, .5),
               At(0, 0, 0, kRy90),
               .1,
               1,
               .05,
               kZ,
               {{0, 0, .1}}});
  c.push_back({"capsule_capsule_parallel",
               Capsule(.1, .5),
               At(.2, 0, .19, kRy90),
               Capsule(.1, .5),
               At(0, 0, 0, kRy90),
               .01,
               2,
               -.01,
               kZ,
               {{-.3, 0, .1}, {.5, 0, .1}}});
  c.push_back({"capsule_capsule_end_to_end",
               Capsule(.1, .5),
               At(1.2, 0, 0, kRy90),
               Capsule(.1, .5),
               At(0, 0, 0, kRy90),
               .01,
               1,
               0,
               kX,
               {{.6, 0, 0}}});
  c.push_back({"capsule_box_lying",
               Capsule(.1, .3),
               At(0, 0, .59, kRy90),
               Box(.5, .5, .5),
               origin,
               .01,
               2,
               -.01,
               kZ,
               {{-.3, 0, .5}, {.3, 0, .5}}});
  c.push_back({"capsule_box_upright",
               Capsule(.1, .3),
               At(.1, .2, .92),
               Box(.5, .5, .5),
               origin,
               .05,
               1,
               .02,
               kZ,
               {{.1, .2, .5}}});
  c.push_back({"capsule_box_core_inside",
               Capsule(.1, .3),
               At(0, 0, .45, kRy90),
               Box(.5, .5, .5),
               origin,
               .01,
               2,
               -.15,
               kZ,
               {{-.3, 0, .5}, {.3, 0, .5}}});
  c.push_back({"capsule_box_overhanging",
               Capsule(.1, .3),
               At(.6, 0, .605, kRy90),
               Box(.5, .5, .5),
               origin,
               .01,
               2,
               .005,
               kZ,
               {{.3, 0, .5}, {.5, 0, .5}}});
  c.push_back({"capsule_cylinder_across_cap",
               Capsule(.1, .2),
               At(0, 0, .49, kRy90),
               Cylinder(.3, .4),
               origin,
               .01,
               2,
               -.01,
               kZ,
               {{-.2, 0, .4}, {.2, 0, .4}}});
  c.push_back({"capsule_cylinder_along_side",
               Capsule(.1, .2),
               At(.45, 0, 0),
               Cylinder(.3, .4),
               origin,
               .1,
               2,
               .05,
               kX,
               {{.3, 0, -.2}, {.3, 0, .2}}});
  c.push_back({"capsule_hull_lying",
               Capsule(.1, .3),
               At(0, 0, .59, kRy90),
               CubeHull(),
               origin,
               .01,
               2,
               -.01,
               kZ,
               {{-.3, 0, .5}, {.3, 0, .5}}});
  // box - X
  c.push_back({"box_box_stacked", Box(.3, .3, .3), At(0, 0, .79), Box(.5, .5, .5), origin, .01, 4,
               -.01, kZ, Grid4(.3, .3, .5)});
  c.push_back({"box_box_stacked_apart", Box(.3, .3, .3), At(0, 0, .82), Box(.5, .5, .5), origin,
               .05, 4, .02, kZ, Grid4(.3, .3, .5)});
  c.push_back({"box_box_stacked_touching",
               Box(.5, .5, .5),
               At(.2, .1, 1),
               Box(.5, .5, .5),
               origin,
               .01,
               4,
               0,
               kZ,
               {{-.3, -.4, .5}, {.5, -.4, .5}, {.5, .5, .5}, {-.3, .5, .5}}});
  c.push_back(
      {"box_box_stacked_turned",
       Box(.3, .3, .3),
       At(0, 0, .79, kRz45),
       Box(.5, .5, .5),
       origin,
       .01,
       4,
       -.01,
       kZ,
       {{.3 * kSqrt2, 0, .5}, {-.3 * kSqrt2, 0, .5}, {0, .3 * kSqrt2, .5}, {0, -.3 * kSqrt2, .5}}});
  {
    // equal boxes turned 45 degrees: the contact is an octagon, reduced to 4 of its corners
    Real k = kSqrt2 / 2 - .5;  // 0.2071
    c.push_back({"box_box_octagon",
                 Box(.5, .5, .5),
                 At(0, 0, .99, kRz45),
                 Box(.5, .5, .5),
                 origin,
                 .01,
                 4,
                 -.01,
                 kZ,
                 {{.5, k, .5},
                  {k, .5, .5},
                  {-k, .5, .5},
                  {-.5, k, .5},
                  {-.5, -k, .5},
                  {-k, -.5, .5},
                  {k, -.5, .5},
                  {.5, -k, .5}}});
  }
  c.push_back({"box_box_edge_edge_apart",
               Box(.5, .5, .5),
               At(0, 0, kSqrt2 + .01, kRy45),
               Box(.5, .5, .5),
               At(0, 0, 0, kRx45),
               .05,
               1,
               .01,
               kZ,
               {{0, 0, kSqrt2 / 2}}});
  c.push_back({"box_box_edge_edge_penetrating",
               Box(.5, .5, .5),
               At(0, 0, kSqrt2 - .02, kRy45),
               Box(.5, .5, .5),
               At(0, 0, 0, kRx45),
               .01,
               1,
               -.02,
               kZ,
               {{0, 0, kSqrt2 / 2}}});
  c.push_back({"box_cylinder_standing", Cylinder(.3, .4), At(0, 0, .89), Box(.5, .5, .5), origin,
               .01, 4, -.01, kZ, Octagon(.3, .5)});
  c.push_back({"box_on_cylinder", Box(.2, .2, .2), At(0, 0, .59), Cylinder(.3, .4), origin, .01, 4,
               -.01, kZ, Grid4(.2, .2, .4)});
  c.push_back({"box_cylinder_lying",
               Cylinder(.3, .4),
               At(0, 0, .79, kRx90),
               Box(.5, .5, .5),
               origin,
               .01,
               2,
               -.01,
               kZ,
               {{0, .4, .5}, {0, -.4, .5}}});
  c.push_back({"box_on_hull", Box(.3, .3, .3), At(0, 0, .79), CubeHull(), origin, .01, 4, -.01, kZ,
               Grid4(.3, .3, .5)});
  c.push_back({"hull_on_box", CubeHull(), At(0, 0, .99), Box(.5, .5, .5), origin, .01, 4, -.01, kZ,
               Grid4(.5, .5, .5)});
  c.push_back({"hull_box_touching", CubeHull(), At(0, 0, 1), Box(.5, .5, .5), origin, .01, 4, 0, kZ,
               Grid4(.5, .5, .5)});
  // cylinder - X
  c.push_back({"cylinder_cylinder_stacked", Cylinder(.2, .3), At(0, 0, .69), Cylinder(.3, .4),
               origin, .01, 4, -.01, kZ, Octagon(.2, .4)});
  c.push_back({"cylinder_cylinder_side_by_side",
               Cylinder(.3, .4),
               At(.59, 0, 0),
               Cylinder(.3, .4),
               origin,
               .01,
               2,
               -.01,
               kX,
               {{.3, 0, -.4}, {.3, 0, .4}}});
  c.push_back({"cylinder_cylinder_crossed",
               Cylinder(.3, .4),
               At(0, 0, .59, kRy90),
               Cylinder(.3, .4),
               At(0, 0, 0, kRx90),
               .01,
               1,
               -.01,
               kZ,
               {{0, 0, .3}}});
  c.push_back({"cylinder_on_hull", Cylinder(.3, .4), At(0, 0, .89), CubeHull(), origin, .01, 4,
               -.01, kZ, Octagon(.3, .5)});
  // hull - hull
  c.push_back({"hull_hull_stacked_offset",
               CubeHull(),
               At(.2, .1, .99),
               CubeHull(),
               origin,
               .01,
               4,
               -.01,
               kZ,
               {{-.3, -.4, .5}, {.5, -.4, .5}, {.5, .5, .5}, {-.3, .5, .5}}});
  c.push_back({"hull_hull_vertex_face",
               OctahedronHull(),
               At(0, 0, .99),
               CubeHull(),
               origin,
               .01,
               1,
               -.01,
               kZ,
               {{0, 0, .5}}});
  c.push_back({"hull_hull_vertex_face_apart",
               OctahedronHull(),
               At(.1, 0, 1.02),
               CubeHull(),
               origin,
               .05,
               1,
               .02,
               kZ,
               {{.1, 0, .5}}});
  return c;
}

Quat RandomQuat(std::mt19937& rng) {
  std::normal_distribution<Real> g(0, 1);
  return quat_normalized({g(rng), g(rng), g(rng), g(rng)});
}

Vec3 RandomUnit(std::mt19937& rng) {
  std::normal_distribution<Real> g(0, 1);
  return normalized(Vec3{g(rng), g(rng), g(rng)});
}

const Transform kFrames[] = {
    {Quat{}, {0, 0, 0}},
    {AxisAngle({1, 2, 3}, .7), {.3, -1.2, 2}},
    {AxisAngle({-2, 1, .5}, 2.5), {-5, 3, 1}},
};

void ExpectNearVec(Vec3 actual, Vec3 expected, Real tol, const char* what) {
  EXPECT_NEAR(actual.x, expected.x, tol) << what;
  EXPECT_NEAR(actual.y, expected.y, tol) << what;
  EXPECT_NEAR(actual.z, expected.z, tol) << what;
}

class PairTableTest : public ::testing::TestWithParam<PairCase> {};

TEST_P(PairTableTest, MatchesGeometryInBothOrdersAndEveryFrame) {
  const PairCase& c = GetParam();
  const Real tol = 1e-7;
  for (int f = 0; f < 3; ++f) {
    const Transform& t = kFrames[f];
    for (bool swapped : {false, true}) {
      SCOPED_TRACE("frame " + std::to_string(f) + (swapped ? ", swapped" : ""));
      Pose pa = t.Apply(c.pose_a), pb = t.Apply(c.pose_b);
      std::vector<ContactPoint> contacts =
          swapped ? Collide(c.b, pb, c.a, pa, c.margin) : Collide(c.a, pa, c.b, pb, c.margin);
      ASSERT_EQ(static_cast<int>(contacts.size()), c.count);
      std::vector<bool> used(c.point_b.size(), false);
      for (const ContactPoint& k : contacts) {
        Vec3 n = swapped ? -k.normal : k.normal;
        Vec3 on_a = swapped ? k.point_b : k.point_a;
        Vec3 on_b = swapped ? k.point_a : k.point_b;
        EXPECT_NEAR(k.gap, c.gap, tol);
        EXPECT_LT(k.gap, c.margin);
        ExpectNearVec(n, t.Dir(c.normal), tol, "normal");
        EXPECT_NEAR(k.gap, dot(on_a - on_b, n), 1e-12);
        ExpectNearVec(on_a, on_b + k.gap * n, tol, "point_a = point_b + gap normal");
        int match = -1;
        for (size_t i = 0; i < c.point_b.size(); ++i) {
          if (!used[i] && norm(t.Point(c.point_b[i]) - on_b) < tol) match = static_cast<int>(i);
        }
        EXPECT_GE(match, 0) << "unexpected point_b " << on_b.x << " " << on_b.y << " " << on_b.z;
        if (match >= 0) used[match] = true;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, PairTableTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<PairCase>& info) {
                           return info.param.name;
                         });

// ---------------------------------------------------------------------------------------------
// behaviour the solver relies on

TEST(NarrowPhaseTest, BoxStackGivesFourPointsWithOneNormalEitherOrder) {
  // three unit boxes stacked 0.1 mm deep into each other, the whole stack turned and moved
  const ShapeGeom box = Box(.5, .5, .5);
  for (const Transform& t : kFrames) {
    Pose poses[3];
    for (int i = 0; i < 3; ++i) poses[i] = t.Apply(At(0, 0, .5 + i * (1 - 1e-4)));
    Vec3 up = t.Dir(kZ);
    for (int i = 0; i + 1 < 3; ++i) {
      for (bool upper_first : {true, false}) {
        const Pose& pa = upper_first ? poses[i + 1] : poses[i];
        const Pose& pb = upper_first ? poses[i] : poses[i + 1];
        std::vector<ContactPoint> contacts = Collide(box, pa, box, pb, .01);
        ASSERT_EQ(contacts.size(), 4u);
        for (const ContactPoint& c : contacts) {
          ExpectNearVec(c.normal, upper_first ? up : -up, 1e-12, "normal");
          EXPECT_NEAR(c.gap, -1e-4, 1e-12);
          // the corners of the shared face
          Vec3 local = rotate_inv(t.q, c.point_b - t.t);
          EXPECT_NEAR(std::fabs(local.x), .5, 1e-9);
          EXPECT_NEAR(std::fabs(local.y), .5, 1e-9);
        }
      }
    }
  }
}

TEST(NarrowPhaseTest, TiltedBoxOnPlaneReportsCornersWithinMargin) {
  // resting on its lower long edge, the far edge 2 * 0.3 * sin(0.02) = 0.012 up
  const Real tilt = .02;
  Real z = .3 * std::sin(tilt) + .2 * std::cos(tilt);
  Pose pose = At(0, 0, z, AxisAngle(kX, tilt));
  std::vector<ContactPoint> near = Collide(Box(.5, .3, .2), pose, Plane(), At(0, 0, 0), .01);
  ASSERT_EQ(near.size(), 2u);
  for (const ContactPoint& c : near) EXPECT_NEAR(c.gap, 0, 1e-12);
  std::vector<ContactPoint> all = Collide(Box(.5, .3, .2), pose, Plane(), At(0, 0, 0), .02);
  ASSERT_EQ(all.size(), 4u);
  std::vector<Real> gaps;
  for (const ContactPoint& c : all) gaps.push_back(c.gap);
  std::sort(gaps.begin(), gaps.end());
  EXPECT_NEAR(gaps[0], 0, 1e-12);
  EXPECT_NEAR(gaps[1], 0, 1e-12);
  EXPECT_NEAR(gaps[2], .6 * std::sin(tilt), 1e-12);
  EXPECT_NEAR(gaps[3], .6 * std::sin(tilt), 1e-12);
}

TEST(NarrowPhaseTest, TouchingNeedsAPositiveMargin) {
  // gap < margin is strict: exactly touching shapes need margin > 0 to report contact
  EXPECT_TRUE(Collide(Box(.5, .5, .5), At(0, 0, .5), Plane(), At(0, 0, 0), 0).empty());
  EXPECT_EQ(Collide(Box(.5, .5, .5), At(0, 0, .5), Plane(), At(0, 0, 0), 1e-9).size(), 4u);
  EXPECT_TRUE(Collide(Sphere(.5), At(0, 0, 1), Sphere(.5), At(0, 0, 0), 0).empty());
}

TEST(NarrowPhaseTest, CoincidentCentresGiveAUnitNormalAndFullDepth) {
  const Pose origin = At(.1, .2, .3);
  {
    std::vector<ContactPoint> c = Collide(Sphere(.3), origin, Sphere(.2), origin, 0);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_NEAR(c[0].gap, -.5, 1e-12);
    ExpectNearVec(c[0].normal, kZ, 1e-12, "normal");
  }
  {
    std::vector<ContactPoint> c = Collide(Sphere(.3), origin, Capsule(.1, .5), origin, 0);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_NEAR(c[0].gap, -.4, 1e-12);
    EXPECT_NEAR(norm(c[0].normal), 1, 1e-12);
    EXPECT_NEAR(c[0].normal.z, 0, 1e-12);  // across the capsule's axis
  }
  {
    // identical capsules: a line of overlap, two points
    std::vector<ContactPoint> c = Collide(Capsule(.1, .5), origin, Capsule(.1, .5), origin, 0);
    ASSERT_EQ(c.size(), 2u);
    for (const ContactPoint& k : c) {
      EXPECT_NEAR(k.gap, -.2, 1e-12);
      EXPECT_NEAR(norm(k.normal), 1, 1e-12);
      EXPECT_NEAR(k.normal.z, 0, 1e-12);
    }
  }
  {
    // identical boxes: push out through a face, the whole face in contact
    std::vector<ContactPoint> c = Collide(Box(.5, .4, .3), origin, Box(.5, .4, .3), origin, 0);
    ASSERT_EQ(c.size(), 4u);
    for (const ContactPoint& k : c) EXPECT_NEAR(k.gap, -.6, 1e-12);
  }
  {
    std::vector<ContactPoint> c = Collide(CubeHull(), origin, CubeHull(), origin, 0);
    ASSERT_EQ(c.size(), 4u);
    for (const ContactPoint& k : c) EXPECT_NEAR(k.gap, -1, 1e-9);
  }
}

TEST(NarrowPhaseTest, AccurateFarFromTheOrigin) {
  Transform far{AxisAngle({1, 1, 0}, .3), {1000, -2000, 500}};
  std::vector<ContactPoint> c = Collide(Box(.3, .3, .3), far.Apply(At(0, 0, .79)), Box(.5, .5, .5),
                                        far.Apply(At(0, 0, 0)), .01);
  ASSERT_EQ(c.size(), 4u);
  for (const ContactPoint& k : c) {
    EXPECT_NEAR(k.gap, -.01, 1e-9);
    ExpectNearVec(k.normal, far.Dir(kZ), 1e-9, "normal");
  }
  c = Collide(Cylinder(.3, .4), far.Apply(At(.605, 0, 0)), Cylinder(.3, .4), far.Apply(At(0, 0, 0)),
              .01);
  ASSERT_EQ(c.size(), 2u);
  for (const ContactPoint& k : c) EXPECT_NEAR(k.gap, .005, 1e-9);
}

TEST(NarrowPhaseTest, CurvedShapesApartGiveTheTrueDistance) {
  // GJK on curved cores: the gap is the distance, and the normal the axis-to-axis direction
  for (Real apart : {1e-2, 1e-4, 1e-6}) {
    std::vector<ContactPoint> c =
        Collide(Cylinder(.3, .4), At(.6 + apart, 0, 0), Cylinder(.3, .4), At(0, 0, 0), .05);
    ASSERT_EQ(c.size(), 2u) << apart;
    for (const ContactPoint& k : c) {
      EXPECT_NEAR(k.gap, apart, 1e-10) << apart;
      ExpectNearVec(k.normal, kX, 1e-5, "normal");
    }
    c = Collide(Capsule(.1, .3), At(0, 0, .4 + apart, kRy90), Cylinder(.3, .4), At(0, 0, 0, kRx90),
                .05);
    ASSERT_EQ(c.size(), 1u) << apart;
    EXPECT_NEAR(c[0].gap, apart, 1e-10) << apart;
  }
}

TEST(NarrowPhaseTest, FacesMeetingFaceOnWithinRoundingKeepTheirNormal) {
  // Two of humanoid100.xml's cylinders stacked, caps within 1e-7 m of touching and axes
  // 1e-6 rad apart (the state at a step's start, in hex): GJK's closest-point direction there
  // was rounding noise, sideways, and the pair read as 0.257 m deep.
  const ShapeGeom cylinder = Cylinder(0x1.999999999999ap-4, 0x1.999999999999ap-5);
  const Pose lower{{0x1.23bcb478f4c59p+0, 0x1.1de59b59aa162p-3, 0x1.9999999a6f3ccp-5},
                   {0x1.77713cd68f743p-36, 0x1.ccfb9eee5fec8p-28, 0x1p+0, 0x1.77853440e7f52p-36}};
  const Pose upper{
      {0x1.1962deaea8d06p+0, 0x1.962eb2e7c37bfp-4, 0x1.33333333f7fe8p-3},
      {0x1.6c4ac54b31923p-33, -0x1.18a3d33b3b34ep-20, 0x1.fffffffffecc7p-1, 0x1.6c4d4f64111cep-33}};
  std::vector<ContactPoint> c = Collide(cylinder, lower, cylinder, upper, 0x1.4bb2bba9f10d5p-7);
  ASSERT_GE(c.size(), 3u);
  for (const ContactPoint& k : c) {
    ExpectNearVec(k.normal, -kZ, 1e-5, "normal");
    EXPECT_NEAR(k.gap, 0, 1e-6);
  }
  // ... and such stacks at random: cylinders on cylinders, on cube hulls, cube hulls on each
  // other, caps or faces within 1e-9 to 1e-3 m of touching, tilted by up to 1e-8 to 1e-4 rad
  // or not at all. 67 of the 32000 cylinder stacks failed before: sideways normals, and exactly
  // aligned cylinders up to 1 mm apart that met nothing, GJK having stopped 3 cm off.
  std::mt19937 rng(7);
  std::uniform_real_distribution<Real> unit(-1, 1);
  auto tilted = [&](Real angle) {  // turned about z at random, then tilted
    return AxisAngle(normalized(Vec3{unit(rng), unit(rng), 0}), angle * unit(rng)) *
           AxisAngle(kZ, kPi * unit(rng));
  };
  const ShapeGeom cube = CubeHull();
  struct Stack {
    const ShapeGeom* below;
    Real below_top;
    const ShapeGeom* above;
    Real above_bottom;
  } stacks[] = {
      {&cylinder, .05, &cylinder, .05}, {&cube, .5, &cylinder, .05}, {&cube, .5, &cube, .5}};
  int cases = 0;
  for (const Stack& stack : stacks) {
    for (Real tilt : {0.0, 1e-8, 1e-6, 1e-4}) {
      for (Real apart : {1e-9, 1e-7, 1e-5, 1e-3}) {
        for (int i = 0; i < 2000; ++i, ++cases) {
          const Pose below{{unit(rng), unit(rng), 0}, tilted(tilt)};
          const Pose above{{below.pos.x + Real(.1) * unit(rng), below.pos.y + Real(.1) * unit(rng),
                            stack.below_top + stack.above_bottom + apart * unit(rng)},
                           tilted(tilt)};
          c = Collide(*stack.above, above, *stack.below, below, .01);
          ASSERT_FALSE(c.empty()) << cases;
          for (const ContactPoint& k : c) {
            ASSERT_GT(k.normal.z, 1 - 1e-6) << cases;
            ASSERT_GT(k.gap, -(apart + 2 * tilt + 1e-8)) << cases;
          }
        }
      }
    }
  }
}

TEST(NarrowPhaseTest, UnsupportedPairsReportNothing) {
  EXPECT_TRUE(Collide(Plane(), At(0, 0, 0), Plane(), At(0, 0, 1), 1).empty());
  ShapeGeom bogus;
  bogus.type = 42;
  EXPECT_TRUE(Collide(bogus, At(0, 0, 0), Sphere(1), At(0, 0, 0), 1).empty());
}

// A 24-sided prism: faces larger than a feature polygon holds, so manifolds use a subset.
const HullData& PrismHullData() {
  static const HullData* hull = [] {
    std::vector<Vec3> p;
    for (int k = 0; k < 24; ++k) {
      Real angle = 2 * kPi * k / 24;
      for (Real z : {-.2, .2}) p.push_back({.5 * std::cos(angle), .5 * std::sin(angle), z});
    }
    return new HullData(*BuildHull(p));
  }();
  return *hull;
}

TEST(NarrowPhaseTest, LargeHullFacesGiveSpreadManifolds) {
  ShapeGeom prism = HullShapeGeom(PrismHullData());
  ASSERT_EQ(PrismHullData().face_count(), 26);
  // standing on a plane and on a box: four points well spread over the 24-gon
  for (bool on_box : {false, true}) {
    std::vector<ContactPoint> c =
        on_box ? Collide(prism, At(0, 0, 1.199), Box(1, 1, .5), At(0, 0, .5), .01)
               : Collide(prism, At(0, 0, .199), Plane(), At(0, 0, 0), .01);
    ASSERT_EQ(c.size(), 4u) << on_box;
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(c[i].gap, -.001, 1e-12);
      EXPECT_NEAR(std::hypot(c[i].point_a.x, c[i].point_a.y), .5, 1e-9);  // rim vertices
    }
    // The first two points are a diagonal, the others lie on either side of it. A square
    // inscribed in the rim has area 0.5; the points span most of it.
    Vec3 d = c[1].point_a - c[0].point_a;
    Real area = .5 * (norm(cross(d, c[2].point_a - c[0].point_a)) +
                      norm(cross(d, c[3].point_a - c[0].point_a)));
    EXPECT_GT(area, .4) << on_box;
  }
}

TEST(ShapeAabbTest, BoundsAreTheSupportAlongEachAxis) {
  const ShapeGeom shapes[] = {Sphere(.3),        Capsule(.2, .4), Box(.4, .3, .2),
                              Cylinder(.3, .25), PebbleHull(),    CubeHull()};
  std::mt19937 rng(7);
  for (const ShapeGeom& g : shapes) {
    for (int trial = 0; trial < 20; ++trial) {
      Pose pose{{.5 * trial, -1, 2}, RandomQuat(rng)};
      Vec3 lower, upper;
      shape_aabb(g, pose.pos, pose.quat, &lower, &upper);
      for (int i = 0; i < 3; ++i) {
        Vec3 e;
        e[i] = 1;
        EXPECT_NEAR(upper[i], SupportValue(g, pose, e), 1e-12) << g.type;
        EXPECT_NEAR(lower[i], -SupportValue(g, pose, -e), 1e-12) << g.type;
      }
      EXPECT_NEAR(
          shape_bounding_radius(g),
          [&] {
            Real r = 0;
            for (int k = 0; k < 2000; ++k) {
              Vec3 u = RandomUnit(rng);
              r = std::max(r, norm(ReferenceSupport(g, {Vec3{}, Quat{}}, u)));
            }
            return r;
          }(),
          2e-2)
          << g.type;
    }
  }
  // a plane's box holds its half-space, and ends at the surface of a floor or a wall
  Vec3 lower, upper;
  shape_aabb(Plane(), {1, 2, 3}, Quat{}, &lower, &upper);
  EXPECT_LT(lower.x, -1e10);
  EXPECT_GT(upper.y, 1e10);
  EXPECT_LT(lower.z, -1e10);
  EXPECT_EQ(upper.z, 3);
  // a wall, normal -x: the normal's round-off tilt leaves a fraction of a micrometre
  shape_aabb(Plane(), {1, 2, 3}, AxisAngle(kY, -kPi / 2), &lower, &upper);
  EXPECT_LE(lower.x, 1);
  EXPECT_GT(lower.x, 1 - 1e-6);
  EXPECT_GT(upper.x, 1e10);
  for (int trial = 0; trial < 20; ++trial) {
    const Quat tilt = RandomQuat(rng);
    const Vec3 n = rotate(tilt, {0, 0, 1});
    shape_aabb(Plane(), {1, 2, 3}, tilt, &lower, &upper);
    for (int k = 0; k < 200; ++k) {
      // a point of the half-space within 1e3 m of the plane's origin
      Vec3 x = Vec3{1, 2, 3} + 1e3 * RandomUnit(rng);
      const Real height = dot(n, x - Vec3{1, 2, 3});
      if (height > 0) x = x - 2 * height * n;
      for (int i = 0; i < 3; ++i) {
        EXPECT_LE(lower[i], x[i]);
        EXPECT_GE(upper[i], x[i]);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// randomized poses against independent reference geometry

struct NamedShape {
  const char* name;
  ShapeGeom geom;
  Real radius;  // bounding radius about the shape origin
};

std::vector<NamedShape> RandomShapes() {
  return {{"sphere", Sphere(.3), .3},
          {"capsule", Capsule(.2, .4), .6},
          {"box", Box(.4, .3, .2), std::sqrt(.29)},
          {"cylinder", Cylinder(.3, .25), std::sqrt(.1525)},
          {"pebble", PebbleHull(), .45},
          {"cube_hull", CubeHull(), .5 * kSqrt3}};
}

// Separation of a from b along unit u (b towards a): min over a of x.u - max over b of y.u.
Real Separation(const ShapeGeom& a, const Pose& pa, const ShapeGeom& b, const Pose& pb, Vec3 u) {
  if (static_cast<ShapeType>(b.type) == ShapeType::kPlane) {
    // only the plane's own normal separates anything from a half-space
    Vec3 n = rotate(pb.quat, kZ);
    if (dot(u, n) < 1 - 1e-12) return -1e300;
    return -SupportValue(a, pa, -n) - dot(pb.pos, n);
  }
  return -SupportValue(a, pa, -u) - SupportValue(b, pb, u);
}

// Signed distance between convex shapes (negative: penetration depth) is the largest
// separation over all directions. Sampling plus a pattern search gives a lower bound on it,
// usually within 1e-6: the search creeps along the ridges that capsules and cylinders put in
// the separation function, using 16 directions per step turned by the golden angle each time.
Real SampledSignedDistance(const ShapeGeom& a, const Pose& pa, const ShapeGeom& b, const Pose& pb) {
  if (static_cast<ShapeType>(b.type) == ShapeType::kPlane) {
    return Separation(a, pa, b, pb, rotate(pb.quat, kZ));
  }
  const int n = 800;
  std::vector<std::pair<Real, Vec3>> samples;
  for (int i = 0; i < n; ++i) {
    Real z = 1 - 2 * (i + 0.5) / n, r = std::sqrt(1 - z * z), phi = i * 2.399963229728653;
    Vec3 u{r * std::cos(phi), r * std::sin(phi), z};
    samples.push_back({Separation(a, pa, b, pb, u), u});
  }
  const int starts = 3;
  std::partial_sort(samples.begin(), samples.begin() + starts, samples.end(),
                    [](const auto& x, const auto& y) { return x.first > y.first; });
  Real best = samples[0].first;
  for (int s = 0; s < starts; ++s) {
    Vec3 u = samples[s].second;
    Real value = samples[s].first;
    Real turn = 0;
    for (Real step = 0.1; step > 1e-10;) {
      Vec3 t1, t2;
      orthonormal_basis(u, &t1, &t2);
      bool improved = false;
      for (int k = 0; k < 16 && !improved; ++k) {
        Real angle = turn + k * kPi / 8;
        Vec3 v = normalized(u + step * (std::cos(angle) * t1 + std::sin(angle) * t2));
        Real sv = Separation(a, pa, b, pb, v);
        if (sv > value) {
          value = sv;
          u = v;
          improved = true;
        }
      }
      turn += 2.399963229728653;
      if (!improved) step *= 0.5;
    }
    best = std::max(best, value);
  }
  return best;
}

// Face normals and edge directions (world frame) of a shape's flat parts. For two polytopes
// the largest separation over these normals and the edge-pair cross products is exactly the
// signed distance when they overlap (the separating axis theorem).
void FeatureAxes(const ShapeGeom& g, const Pose& pose, std::vector<Vec3>* faces,
                 std::vector<Vec3>* edges) {
  switch (TypeOf(g)) {
    case ShapeType::kCapsule:
      edges->push_back(rotate(pose.quat, kZ));
      break;
    case ShapeType::kCylinder:
      faces->push_back(rotate(pose.quat, kZ));
      edges->push_back(rotate(pose.quat, kZ));
      break;
    case ShapeType::kBox:
      for (Vec3 axis : {kX, kY, kZ}) {
        faces->push_back(rotate(pose.quat, axis));
        edges->push_back(rotate(pose.quat, axis));
      }
      break;
    case ShapeType::kConvexHull:
      for (int f = 0; f < g.hull_face_count; ++f) {
        faces->push_back(rotate(pose.quat, load3(g.hull_face_plane + 4 * f)));
        int begin = g.hull_face_offset[f], n = g.hull_face_offset[f + 1] - begin;
        for (int k = 0; k < n; ++k) {
          Vec3 p = load3(g.hull_vertices + 3 * g.hull_faces[begin + k]);
          Vec3 q = load3(g.hull_vertices + 3 * g.hull_faces[begin + (k + 1) % n]);
          edges->push_back(rotate(pose.quat, normalized(q - p)));
        }
      }
      break;
    default:
      break;
  }
}

Real AxisSignedDistance(const ShapeGeom& a, const Pose& pa, const ShapeGeom& b, const Pose& pb) {
  std::vector<Vec3> faces, edges_a, edges_b;
  FeatureAxes(a, pa, &faces, &edges_a);
  FeatureAxes(b, pb, &faces, &edges_b);
  for (Vec3 ea : edges_a) {
    for (Vec3 eb : edges_b) {
      Vec3 c = cross(ea, eb);
      if (norm(c) > 1e-9) faces.push_back(normalized(c));
    }
  }
  Real best = std::numeric_limits<Real>::lowest();
  for (Vec3 u : faces) {
    best = std::max({best, Separation(a, pa, b, pb, u), Separation(a, pa, b, pb, -u)});
  }
  return best;
}

std::string PoseString(const Pose& p) {
  char text[256];
  std::snprintf(text, sizeof(text), "{{%.17g, %.17g, %.17g}, {%.17g, %.17g, %.17g, %.17g}}",
                p.pos.x, p.pos.y, p.pos.z, p.quat.w, p.quat.x, p.quat.y, p.quat.z);
  return text;
}

struct PairStats {
  int configurations = 0;
  int with_contacts = 0;
  int multi_point = 0;
  Real worst_reference_gap = 0;    // largest amount a contact beat the sampled reference by
  Real worst_manifold_excess = 0;  // deepest a manifold point went beyond the reference
  Real worst_optimality = 0;       // largest separation found beyond a claimed-optimal normal
};

void CheckRandomPair(const NamedShape& sa, const NamedShape& sb, bool plane_b, int trials,
                     std::mt19937& rng, PairStats* stats) {
  const Real margin = 0.05;
  std::uniform_real_distribution<Real> unit(0, 1);
  for (int trial = 0; trial < trials; ++trial) {
    Pose pb{{0, 0, 0}, RandomQuat(rng)};
    Pose pa{{0, 0, 0}, RandomQuat(rng)};
    ShapeGeom b = plane_b ? Plane() : sb.geom;
    if (plane_b) {
      Vec3 n = rotate(pb.quat, kZ);
      Vec3 t1, t2;
      orthonormal_basis(n, &t1, &t2);
      pa.pos = (unit(rng) - .5) * t1 + (unit(rng) - .5) * t2 +
               (-sa.radius + (2 * sa.radius + .1) * unit(rng)) * n;
    } else {
      pa.pos = ((sa.radius + sb.radius + .1) * unit(rng)) * RandomUnit(rng);
    }
    SCOPED_TRACE(std::string(sa.name) + " vs " + (plane_b ? "plane" : sb.name) + ", trial " +
                 std::to_string(trial) + ", a at " + PoseString(pa) + ", b at " + PoseString(pb));
    std::vector<ContactPoint> contacts = Collide(sa.geom, pa, b, pb, margin);
    Real sigma = SampledSignedDistance(sa.geom, pa, b, pb);
    if (!plane_b) sigma = std::max(sigma, AxisSignedDistance(sa.geom, pa, b, pb));
    ++stats->configurations;
    ASSERT_LE(contacts.size(), size_t{4});
    // sigma is a lower bound: beyond the margin there is nothing to report; well inside it
    // something must be reported
    if (sigma >= margin) {
      EXPECT_TRUE(contacts.empty()) << "sigma " << sigma;
    }
    if (sigma < margin - 1e-3) {
      EXPECT_FALSE(contacts.empty()) << "sigma " << sigma;
    }
    if (contacts.empty()) continue;
    ++stats->with_contacts;
    stats->multi_point += contacts.size() > 1 ? 1 : 0;
    Real min_gap = 1e300;
    // Penetration normals are exact for polytope cores. For a cylinder, EPA's polytope is
    // refined by GJK rounds that converge fast for shallow overlaps; deep ones (an error state)
    // may keep a relative error of up to 1e-4 in depth.
    bool curved = TypeOf(sa.geom) == ShapeType::kCylinder || TypeOf(b) == ShapeType::kCylinder;
    for (const ContactPoint& c : contacts) {
      Real optimal_tol = curved ? 1e-8 + 1e-4 * std::max(Real(0), -c.gap) : 1e-9;
      min_gap = std::min(min_gap, c.gap);
      EXPECT_NEAR(norm(c.normal), 1, 1e-9);
      EXPECT_LT(c.gap, margin);
      EXPECT_NEAR(c.gap, dot(c.point_a - c.point_b, c.normal), 1e-9);
      // Never outside the shapes. Manifold points other than the deepest may lie inside: the
      // far end of a tilted capsule over a plane, a segment within 2 degrees of a face.
      EXPECT_LE(SignedDistance(sa.geom, pa, c.point_a), 3e-4);
      EXPECT_LE(SignedDistance(b, pb, c.point_b), 3e-4);
      // no contact is shallower than the shapes' separation along its own normal
      Real sep = Separation(sa.geom, pa, b, pb, c.normal);
      if (!plane_b) {
        EXPECT_GE(c.gap, sep - 1e-9);
      }
      // A contact between the extreme points along its normal claims that normal is the
      // optimal axis, so no direction may separate more. (It may beat the sampled reference,
      // which is only a lower bound.)
      if (std::fabs(sep - c.gap) < 1e-9) {
        // Manifold points carry the reference face's normal, within 2 degrees of the optimal
        // axis: their depth along it may exceed the true depth slightly.
        if (contacts.size() == 1) {
          EXPECT_GE(c.gap, sigma - optimal_tol) << "sep " << sep;
          stats->worst_optimality = std::max(stats->worst_optimality, sigma - c.gap);
        } else {
          EXPECT_GE(c.gap, sigma - 1e-3) << "sep " << sep;
          stats->worst_manifold_excess = std::max(stats->worst_manifold_excess, sigma - c.gap);
        }
        stats->worst_reference_gap = std::max(stats->worst_reference_gap, c.gap - sigma);
        // and the normal is a local maximum of the separation
        if (!plane_b) {
          Vec3 t1, t2;
          orthonormal_basis(c.normal, &t1, &t2);
          for (Real eps : {1e-2, 1e-3, 1e-4}) {
            for (int k = 0; k < 16; ++k) {
              Real angle = k * kPi / 8;
              Vec3 u = normalized(c.normal + eps * (std::cos(angle) * t1 + std::sin(angle) * t2));
              Real excess = Separation(sa.geom, pa, b, pb, u) - c.gap;
              EXPECT_LE(excess, optimal_tol) << "eps " << eps;
              stats->worst_optimality = std::max(stats->worst_optimality, excess);
            }
          }
        }
        // Apart, the contact points are a certificate: no points of the shapes are closer than
        // the separation along any direction, so |point_a - point_b| = gap is the distance.
        if (c.gap > 0) {
          EXPECT_NEAR(norm(c.point_a - c.point_b), c.gap, 1e-7);
        }
      }
    }
    // the deepest contact lies on both surfaces
    const ContactPoint& deepest = *std::min_element(
        contacts.begin(), contacts.end(),
        [](const ContactPoint& x, const ContactPoint& y) { return x.gap < y.gap; });
    EXPECT_NEAR(SignedDistance(sa.geom, pa, deepest.point_a), 0, 3e-4);
    EXPECT_NEAR(SignedDistance(b, pb, deepest.point_b), 0, 3e-4);
    // the deepest contact is the signed distance up to the manifold's feature tolerance
    for (const ContactPoint& c : contacts) {
      sigma = std::max(sigma, Separation(sa.geom, pa, b, pb, c.normal));
    }
    EXPECT_NEAR(min_gap, sigma, 0.02);
    // determinism: the same query gives the same bits
    std::vector<ContactPoint> again = Collide(sa.geom, pa, b, pb, margin);
    ASSERT_EQ(again.size(), contacts.size());
    EXPECT_EQ(std::memcmp(again.data(), contacts.data(), contacts.size() * sizeof(ContactPoint)),
              0);
  }
}

// Configurations per shape pair; raise it (-DAXION_COLLISION_RANDOM_TRIALS=5000) to soak.
#ifndef AXION_COLLISION_RANDOM_TRIALS
#define AXION_COLLISION_RANDOM_TRIALS 60
#endif

TEST(NarrowPhaseRandomTest, EveryPairMatchesReferenceGeometry) {
  const int trials = AXION_COLLISION_RANDOM_TRIALS;
  std::mt19937 rng(20240611);
  std::vector<NamedShape> shapes = RandomShapes();
  for (size_t i = 0; i < shapes.size(); ++i) {
    PairStats stats;
    CheckRandomPair(shapes[i], shapes[i], /*plane_b=*/true, trials, rng, &stats);
    for (size_t j = i; j < shapes.size(); ++j) {
      PairStats pair_stats;
      CheckRandomPair(shapes[i], shapes[j], /*plane_b=*/false, trials, rng, &pair_stats);
      // the sampling really exercises contacts
      EXPECT_GT(pair_stats.with_contacts, trials / 6) << shapes[i].name << " " << shapes[j].name;
      std::printf(
          "%s-%s: %d/%d with contacts, %d manifolds, reference off by <= %.2g, manifold "
          "depth excess <= %.2g, optimality <= %.2g\n",
          shapes[i].name, shapes[j].name, pair_stats.with_contacts, pair_stats.configurations,
          pair_stats.multi_point, pair_stats.worst_reference_gap, pair_stats.worst_manifold_excess,
          pair_stats.worst_optimality);
    }
  }
}

}  // namespace
}  // namespace axion::testing
