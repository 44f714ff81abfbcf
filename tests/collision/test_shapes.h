// Shapes, poses and independent reference geometry (support functions, signed distances) for
// the collision tests. The reference code is deliberately written separately from the narrow
// phase so that the tests check it rather than repeat it.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "axion/math.h"
#include "axion/model.h"
#include "collision/collision.h"
#include "collision/hull.h"
#include "height_field_height.h"

namespace axion::testing {

inline constexpr Real kPi = Real(3.14159265358979323846);

inline ShapeGeom Plane() {
  ShapeGeom g;
  g.type = static_cast<int32_t>(ShapeType::kPlane);
  return g;
}
inline ShapeGeom Sphere(Real r) {
  ShapeGeom g;
  g.type = static_cast<int32_t>(ShapeType::kSphere);
  g.size = {r, 0, 0};
  return g;
}
inline ShapeGeom Capsule(Real r, Real half_length) {
  ShapeGeom g;
  g.type = static_cast<int32_t>(ShapeType::kCapsule);
  g.size = {r, half_length, 0};
  return g;
}
inline ShapeGeom Box(Real x, Real y, Real z) {
  ShapeGeom g;
  g.type = static_cast<int32_t>(ShapeType::kBox);
  g.size = {x, y, z};
  return g;
}
inline ShapeGeom Cylinder(Real r, Real half_length) {
  ShapeGeom g;
  g.type = static_cast<int32_t>(ShapeType::kCylinder);
  g.size = {r, half_length, 0};
  return g;
}

// Hull data lives for the whole test program.
inline const HullData& CubeHullData() {
  static const HullData* hull = [] {
    std::vector<Vec3> p;
    for (int k = 0; k < 8; ++k) {
      p.push_back({(k & 1) ? 0.5 : -0.5, (k & 2) ? 0.5 : -0.5, (k & 4) ? 0.5 : -0.5});
    }
    return new HullData(*BuildHull(p));
  }();
  return *hull;
}
// Octahedron with vertices at +-0.5 on the axes.
inline const HullData& OctahedronHullData() {
  static const HullData* hull = [] {
    std::vector<Vec3> p = {{0.5, 0, 0},  {-0.5, 0, 0}, {0, 0.5, 0},
                           {0, -0.5, 0}, {0, 0, 0.5},  {0, 0, -0.5}};
    return new HullData(*BuildHull(p));
  }();
  return *hull;
}
// 24 points on an ellipsoid, off the hull's origin: a generic, mostly triangulated hull.
inline const HullData& PebbleHullData() {
  static const HullData* hull = [] {
    std::vector<Vec3> p;
    const int n = 24;
    for (int i = 0; i < n; ++i) {
      Real z = 1 - 2 * (i + 0.5) / n;
      Real r = std::sqrt(1 - z * z);
      Real phi = i * 2.399963229728653;  // golden angle
      p.push_back({0.05 + 0.35 * r * std::cos(phi), -0.02 + 0.25 * r * std::sin(phi), 0.3 * z});
    }
    return new HullData(*BuildHull(p));
  }();
  return *hull;
}
inline ShapeGeom CubeHull() { return HullShapeGeom(CubeHullData()); }
inline ShapeGeom OctahedronHull() { return HullShapeGeom(OctahedronHullData()); }
inline ShapeGeom PebbleHull() { return HullShapeGeom(PebbleHullData()); }

inline Quat AxisAngle(Vec3 axis, Real angle) { return quat_from_axis_angle(axis, angle); }

// Rigid transform applied to a whole configuration.
struct Transform {
  Quat q;
  Vec3 t;
  Vec3 Point(Vec3 p) const { return rotate(q, p) + t; }
  Vec3 Dir(Vec3 d) const { return rotate(q, d); }
  Pose Apply(const Pose& p) const { return {Point(p.pos), q * p.quat}; }
};

inline ShapeType TypeOf(const ShapeGeom& g) { return static_cast<ShapeType>(g.type); }

// World-frame support point of the full (inflated) shape in unit direction u.
inline Vec3 ReferenceSupport(const ShapeGeom& g, const Pose& pose, Vec3 u) {
  Vec3 d = rotate_inv(pose.quat, u);
  Vec3 local;
  switch (TypeOf(g)) {
    case ShapeType::kSphere:
      local = g.size.x * d;
      break;
    case ShapeType::kCapsule:
      local = Vec3{0, 0, d.z > 0 ? g.size.y : -g.size.y} + g.size.x * d;
      break;
    case ShapeType::kBox:
      local = {d.x > 0 ? g.size.x : -g.size.x, d.y > 0 ? g.size.y : -g.size.y,
               d.z > 0 ? g.size.z : -g.size.z};
      break;
    case ShapeType::kCylinder: {
      Real rho = std::hypot(d.x, d.y);
      local = {rho > 0 ? g.size.x * d.x / rho : 0, rho > 0 ? g.size.x * d.y / rho : 0,
               d.z > 0 ? g.size.y : -g.size.y};
      break;
    }
    case ShapeType::kConvexHull: {
      Real best = std::numeric_limits<Real>::lowest();
      for (int i = 0; i < g.hull_vertex_count; ++i) {
        Vec3 v = load3(g.hull_vertices + 3 * i);
        if (dot(v, d) > best) {
          best = dot(v, d);
          local = v;
        }
      }
      break;
    }
    case ShapeType::kPlane:
    case ShapeType::kHeightField:  // not convex: no support point
      break;
  }
  return rotate(pose.quat, local) + pose.pos;
}

// Support value h(u) = max over the shape of dot(x, u).
inline Real SupportValue(const ShapeGeom& g, const Pose& pose, Vec3 u) {
  return dot(ReferenceSupport(g, pose, u), u);
}

// Height of a height field's surface above local (x, y) (its frame), the cell's triangles
// interpolated independently of the narrow phase; clamped to the grid's edge outside it.
inline Real HeightFieldSurface(const ShapeGeom& g, Real x, Real y) {
  return HeightFieldHeight(g.heightfield_heights, g.heightfield_rows, g.heightfield_cols, g.size.x,
                           g.size.y, x, y);
}

// Signed distance of world point x to the shape (exact for all but hulls, where it is the
// largest face-plane distance: exact inside and on the surface, and height fields, where it is
// the height above the surface, along the field's z).
inline Real SignedDistance(const ShapeGeom& g, const Pose& pose, Vec3 x) {
  Vec3 p = rotate_inv(pose.quat, x - pose.pos);
  switch (TypeOf(g)) {
    case ShapeType::kHeightField:
      return p.z - HeightFieldSurface(g, p.x, p.y);
    case ShapeType::kPlane:
      return p.z;
    case ShapeType::kSphere:
      return norm(p) - g.size.x;
    case ShapeType::kCapsule: {
      Vec3 q{0, 0, std::clamp(p.z, -g.size.y, g.size.y)};
      return norm(p - q) - g.size.x;
    }
    case ShapeType::kBox: {
      Vec3 q{std::fabs(p.x) - g.size.x, std::fabs(p.y) - g.size.y, std::fabs(p.z) - g.size.z};
      Vec3 outside{std::max(q.x, 0.0), std::max(q.y, 0.0), std::max(q.z, 0.0)};
      return norm(outside) + std::min(std::max(q.x, std::max(q.y, q.z)), 0.0);
    }
    case ShapeType::kCylinder: {
      Real dr = std::hypot(p.x, p.y) - g.size.x, dz = std::fabs(p.z) - g.size.y;
      return std::min(std::max(dr, dz), 0.0) + std::hypot(std::max(dr, 0.0), std::max(dz, 0.0));
    }
    case ShapeType::kConvexHull: {
      Real s = std::numeric_limits<Real>::lowest();
      for (int f = 0; f < g.hull_face_count; ++f) {
        s = std::max(s, dot(load3(g.hull_face_plane + 4 * f), p) - g.hull_face_plane[4 * f + 3]);
      }
      return s;
    }
  }
  return 0;
}

inline std::vector<ContactPoint> Collide(const ShapeGeom& a, const Pose& pa, const ShapeGeom& b,
                                         const Pose& pb, Real margin) {
  ContactPoint out[kMaxPairContacts];
  int n = collide_shapes(a, pa.pos, pa.quat, b, pb.pos, pb.quat, margin, out);
  return std::vector<ContactPoint>(out, out + n);
}

}  // namespace axion::testing
