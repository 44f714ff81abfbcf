// Collision interface used by the step's collide stage. Everything here is AXION_HD so the same
// code runs in the CPU and CUDA backends.
//
// Conventions (every pair function obeys them):
//  - `normal` is a unit vector pointing from shape b towards shape a (the direction a must move
//    to separate).
//  - `point_a` lies on a's surface, `point_b` on b's surface, both in the world frame.
//  - `gap` = dot(point_a - point_b, normal): positive when separated, negative when penetrating.
//  - Only points with gap < margin are reported.
//  - A pair reports at most kMaxPairContacts points: a manifold (box on plane: 4; capsule lying
//    on a plane: 2) where the touching feature is a face or an edge.
#pragma once

#include <cstdint>

#include "axion/math.h"

namespace axion {

inline constexpr int kMaxPairContacts = 4;

// Geometry of one shape, as the kernels see it. Types follow axion::ShapeType.
struct ShapeGeom {
  int32_t type = 0;
  Vec3 size;                            // see axion::ShapeType
  const Real* hull_vertices = nullptr;  // kConvexHull: (hull_vertex_count x 3), shape frame
  int32_t hull_vertex_count = 0;
  const int32_t* hull_faces = nullptr;        // kConvexHull: face vertex indices, see hull.h
  const int32_t* hull_face_offset = nullptr;  // (hull_face_count + 1)
  const Real* hull_face_plane = nullptr;      // (hull_face_count x 4): normal xyz, offset d
  int32_t hull_face_count = 0;
  const int32_t* hull_edge_offset = nullptr;  // (hull_vertex_count + 1); null: no edges (scans)
  const int32_t* hull_edge_vertex = nullptr;  // each vertex's edges' other ends, see hull.h
  const int32_t* hull_edge_face = nullptr;    // each vertex's edges' faces
  const int32_t* hull_climb_start = nullptr;  // (narrowphase::kHullClimbStarts)
  Real hull_radius = -1;                      // largest vertex norm (m); < 0: not stored
  // kHeightField: size = (half extent x, half extent y, depth of the base)
  const Real* heightfield_heights = nullptr;  // (heightfield_rows x heightfield_cols)
  int32_t heightfield_rows = 0;
  int32_t heightfield_cols = 0;
  Real heightfield_top = 0;  // the highest of the heights
};

struct ContactPoint {
  Vec3 point_a;  // on a's surface, world frame
  Vec3 point_b;  // on b's surface, world frame
  Vec3 normal;   // unit, from b towards a
  Real gap = 0;  // signed distance (m)
};

// Room for one pair's points, left uninitialised: collide_shapes writes the ones it returns. A
// plain array of ContactPoint is zeroed first (its members' initialisers), a `rep stos` per pair
// that took 8% of the collision of a pile of spheres.
union PairPoints {
  AXION_HD PairPoints() {}
  ContactPoint point[kMaxPairContacts];
};

// Narrow phase: contacts between shape a at pose (pos_a, quat_a) and shape b at (pos_b, quat_b),
// world frame. Writes up to kMaxPairContacts points to `out` and returns how many.
AXION_HD int collide_shapes(const ShapeGeom& a, Vec3 pos_a, Quat quat_a, const ShapeGeom& b,
                            Vec3 pos_b, Quat quat_b, Real margin, ContactPoint* out);

// World-frame axis-aligned bounding box of a shape (planes get a huge box).
AXION_HD void shape_aabb(const ShapeGeom& g, Vec3 pos, Quat quat, Vec3* lower, Vec3* upper);

}  // namespace axion

#include "collision/narrowphase_impl.h"  // definitions of the functions above
