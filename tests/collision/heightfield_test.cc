// Height field pairs: each shape against the prisms of the cells below it. On a field that is one
// plane the contacts must be the plane's, wherever a shape crosses cell edges and diagonals (a
// prism's sides lie inside the terrain and must never push); at a ridge the normal turns as the
// true surface's does; a shape off the grid, or above its highest point, meets nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "test_shapes.h"

namespace axion::testing {
namespace {

// A field of rows x cols points over [-sx, sx] x [-sy, sy], z = height(x, y), base `base` deep.
struct Field {
  std::vector<Real> heights;
  ShapeGeom geom;
  Field(int rows, int cols, Real sx, Real sy, Real base,
        const std::function<Real(Real, Real)>& height) {
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) {
        heights.push_back(height(-sx + 2 * sx * c / (cols - 1), -sy + 2 * sy * r / (rows - 1)));
      }
    }
    geom.type = static_cast<int32_t>(ShapeType::kHeightField);
    geom.size = {sx, sy, base};
    geom.heightfield_heights = heights.data();
    geom.heightfield_rows = rows;
    geom.heightfield_cols = cols;
    geom.heightfield_top = *std::max_element(heights.begin(), heights.end());
  }
  Field(const Field&) = delete;
};

Pose At(Real x, Real y, Real z, Quat q = Quat{}) { return Pose{Vec3{x, y, z}, q}; }

// The plane z = 0.2 x - 0.1 y + 0.3 on a 7 x 9 grid of 2 m x 1.5 m.
Real Slope(Real x, Real y) { return 0.2 * x - 0.1 * y + 0.3; }

TEST(HeightFieldTest, SphereOnAPlanarFieldMeetsThePlaneAcrossEveryEdge) {
  Field field(7, 9, 1.0, 0.75, 0.5, Slope);
  const Vec3 n = normalized(Vec3{-0.2, 0.1, 1});
  const Real radius = 0.05;
  int checked = 0;
  // centres over cell corners, edges, diagonals and interiors, above and slightly into it
  for (Real x = -0.9; x <= 0.9; x += 0.0625) {
    for (Real y = -0.7; y <= 0.7; y += 0.04375) {
      for (Real gap : {0.004, -0.002}) {
        const Vec3 on_surface{x, y, Slope(x, y)};
        const Vec3 centre = on_surface + (radius + gap) * n;
        std::vector<ContactPoint> c =
            Collide(Sphere(radius), At(centre.x, centre.y, centre.z), field.geom, Pose{}, 0.01);
        ASSERT_FALSE(c.empty()) << x << " " << y << " " << gap;
        for (const ContactPoint& p : c) {
          EXPECT_NEAR(dot(p.normal, n), 1, 1e-9) << x << " " << y << " " << gap;
          EXPECT_NEAR(p.gap, gap, 1e-9) << x << " " << y;
          EXPECT_NEAR(norm(p.point_a - (centre - radius * n)), 0, 1e-9);
          EXPECT_NEAR(norm(p.point_b - on_surface), 0, 1e-9);
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 1000);
  // in either order: the normal turns round with the points
  std::vector<ContactPoint> c =
      Collide(field.geom, Pose{}, Sphere(radius), At(0.1, 0.1, Slope(0.1, 0.1) + 0.052), 0.01);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_NEAR(dot(c[0].normal, n), -1, 1e-9);
  EXPECT_LT(c[0].point_a.z, c[0].point_b.z);
}

TEST(HeightFieldTest, BoxAcrossManyCellsRestsOnFourSpreadPoints) {
  Field field(21, 21, 1.0, 1.0, 0.2, [](Real, Real) { return Real(0); });
  // a 0.6 m x 0.4 m box (spanning about 6 x 4 cells), turned about z, 1 mm into the field
  const Quat turn = AxisAngle({0, 0, 1}, 0.3);
  std::vector<ContactPoint> c =
      Collide(Box(0.3, 0.2, 0.05), At(0.13, -0.07, 0.049, turn), field.geom, Pose{}, 0.01);
  ASSERT_EQ(c.size(), 4u);
  Vec3 mean;
  for (const ContactPoint& p : c) {
    EXPECT_NEAR(p.normal.z, 1, 1e-12);
    EXPECT_NEAR(p.gap, -0.001, 1e-12);
    mean = mean + 0.25 * p.point_a;
    // the box's corners
    const Vec3 local = rotate_inv(turn, p.point_a - Vec3{0.13, -0.07, 0.049});
    EXPECT_NEAR(std::fabs(local.x), 0.3, 1e-9);
    EXPECT_NEAR(std::fabs(local.y), 0.2, 1e-9);
  }
  EXPECT_NEAR(mean.x, 0.13, 1e-9);
  EXPECT_NEAR(mean.y, -0.07, 1e-9);
}

TEST(HeightFieldTest, OverlapsFoundThroughAPrismSideLeaveUpward) {
  // a flat field: a sphere sunk 4 mm at a cell edge, where the neighbouring prism's side is
  // nearer than its top (0.1 mm of side overlap); and a box 1 cm deep across a diagonal
  Field field(11, 11, 0.5, 0.5, 0.3, [](Real, Real) { return Real(0); });
  std::vector<ContactPoint> c =
      Collide(Sphere(0.05), At(0.1 + 0.0499, 0.02, 0.046), field.geom, Pose{}, 0.01);
  ASSERT_FALSE(c.empty());
  for (const ContactPoint& p : c) {
    EXPECT_NEAR(p.normal.z, 1, 1e-12);
    EXPECT_NEAR(p.gap, -0.004, 1e-12);
  }
  c = Collide(Box(0.07, 0.07, 0.05), At(0.03, 0.03, 0.04, AxisAngle({0, 0, 1}, 0.7)), field.geom,
              Pose{}, 0.01);
  ASSERT_FALSE(c.empty());
  Real deepest = 0;
  for (const ContactPoint& p : c) {
    EXPECT_NEAR(p.normal.z, 1, 1e-12);
    EXPECT_GT(p.gap, -0.01 - 1e-12);
    deepest = std::min(deepest, p.gap);
  }
  EXPECT_NEAR(deepest, -0.01, 1e-12);
  // a sphere wholly under the surface comes back up, not through the base
  c = Collide(Sphere(0.02), At(0.05, 0.05, -0.1), field.geom, Pose{}, 0.01);
  ASSERT_FALSE(c.empty());
  for (const ContactPoint& p : c) EXPECT_NEAR(p.normal.z, 1, 1e-12);
}

TEST(HeightFieldTest, RidgeTurnsTheNormalAsTheSurfaceDoes) {
  // a roof along y: z = 0.5 - |x|, grid points on the ridge line
  Field field(5, 9, 1.0, 1.0, 1.0, [](Real x, Real) { return 0.5 - std::fabs(x); });
  // a sphere above the ridge, off to one side of the line: its nearest point is the ridge
  const Real radius = 0.1;
  const Vec3 centre{0.03, 0.1, 0.5 + 0.11};
  std::vector<ContactPoint> c =
      Collide(Sphere(radius), At(centre.x, centre.y, centre.z), field.geom, Pose{}, 0.2);
  ASSERT_FALSE(c.empty());
  // the closest point of the roof to the centre: on the face x > 0 (normal (1, 0, 1) / sqrt 2)
  // when the centre is past that face's normal through the ridge, else the ridge itself
  const Vec3 ridge{0, 0.1, 0.5};
  const Vec3 to_centre = centre - ridge;
  const Real expected_gap = norm(to_centre) - radius;
  Real best = 1e9;
  for (const ContactPoint& p : c) best = std::min(best, p.gap);
  EXPECT_NEAR(best, expected_gap, 1e-9);
  for (const ContactPoint& p : c) {
    if (p.gap > best + 1e-9) continue;
    EXPECT_NEAR(dot(p.normal, normalized(to_centre)), 1, 1e-9);
  }
  // and on a slope of the roof: the face's normal
  c = Collide(Sphere(radius), At(0.4 + 0.1 / std::sqrt(2.0), 0.3, 0.1 + 0.1 / std::sqrt(2.0)),
              field.geom, Pose{}, 0.01);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_NEAR(c[0].normal.x, 1 / std::sqrt(2.0), 1e-9);
  EXPECT_NEAR(c[0].normal.z, 1 / std::sqrt(2.0), 1e-9);
  EXPECT_NEAR(c[0].gap, 0, 1e-9);
}

TEST(HeightFieldTest, ShapesOffTheGridOrAboveItMeetNothing) {
  Field field(4, 4, 1.0, 1.0, 0.1, [](Real x, Real y) { return 0.1 * x * y; });
  EXPECT_TRUE(Collide(Sphere(0.1), At(1.2, 0, 0), field.geom, Pose{}, 0.01).empty());
  EXPECT_TRUE(Collide(Sphere(0.1), At(0, -1.15, 0), field.geom, Pose{}, 0.01).empty());
  EXPECT_TRUE(Collide(Box(0.1, 0.1, 0.1), At(0.2, 0.2, 0.5), field.geom, Pose{}, 0.01).empty());
  EXPECT_TRUE(Collide(field.geom, Pose{}, Plane(), Pose{}, 1).empty());
  EXPECT_TRUE(Collide(field.geom, Pose{}, field.geom, Pose{}, 1).empty());
  const Real nan = std::nan("");
  EXPECT_TRUE(Collide(Sphere(0.1), At(nan, 0, 0), field.geom, Pose{}, 0.01).empty());
  // bounds: the grid from its base to its top, turned with the field
  Vec3 lower, upper;
  shape_aabb(field.geom, Vec3{1, 2, 3}, Quat{}, &lower, &upper);
  EXPECT_NEAR(lower.x, 0, 1e-12);
  EXPECT_NEAR(upper.y, 3, 1e-12);
  EXPECT_NEAR(lower.z, 2.9, 1e-12);
  EXPECT_NEAR(upper.z, 3.1, 1e-12);
}

// Every kind of shape placed over a bumpy field at random poses: each contact's normal is a
// unit vector pointing out of the terrain, its points lie `gap` apart along it, and where the
// shape is apart from the terrain the terrain's point is on its surface (the closest point of a
// prism to a shape above it is on its top, as the reference interpolation gives it).
TEST(HeightFieldTest, RandomShapesOnBumpyTerrainGiveConsistentContacts) {
  Field field(17, 13, 1.2, 1.6, 0.4,
              [](Real x, Real y) { return 0.15 * std::sin(3 * x) * std::cos(2 * y) + 0.05 * x; });
  const ShapeGeom shapes[] = {Sphere(0.12), Capsule(0.05, 0.15), Box(0.2, 0.1, 0.07),
                              Cylinder(0.1, 0.08), CubeHull()};
  uint32_t state = 12345;
  auto uniform = [&](Real lo, Real hi) {
    state = state * 1664525u + 1013904223u;
    return lo + (hi - lo) * Real(state >> 8) / Real(1 << 24);
  };
  int apart = 0, overlapping = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const ShapeGeom& shape = shapes[trial % 5];
    const Real x = uniform(-0.9, 0.9), y = uniform(-1.2, 1.2);
    const Quat q =
        quat_normalized(Quat{uniform(-1, 1), uniform(-1, 1), uniform(-1, 1), uniform(-1, 1)});
    // the shape's lowest point about its surface point, give or take a few centimetres
    const Real below = -ReferenceSupport(shape, Pose{Vec3{}, q}, Vec3{0, 0, -1}).z;
    const Pose pose =
        At(x, y, HeightFieldSurface(field.geom, x, y) + below + uniform(-0.01, 0.04), q);
    for (const ContactPoint& p : Collide(shape, pose, field.geom, Pose{}, 0.02)) {
      ASSERT_NEAR(norm(p.normal), 1, 1e-9);
      EXPECT_LT(p.gap, 0.02);
      EXPECT_NEAR(dot(p.point_a - p.point_b, p.normal), p.gap, 1e-9);
      EXPECT_NEAR(norm(cross(p.point_a - p.point_b, p.normal)), 0, 1e-6);
      EXPECT_GT(p.normal.z, 0) << "a contact must not pull a shape into the terrain";
      if (p.gap >= 0) {
        ++apart;
        EXPECT_NEAR(p.point_b.z, HeightFieldSurface(field.geom, p.point_b.x, p.point_b.y), 1e-9)
            << trial;
      } else {
        ++overlapping;
      }
    }
  }
  EXPECT_GT(apart, 1000);
  EXPECT_GT(overlapping, 100);
}

}  // namespace
}  // namespace axion::testing
