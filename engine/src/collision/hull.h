// Convex hull preprocessing for kConvexHull shapes (host only): validation of the user's points
// and the flattened polyhedron the narrow phase reads through ShapeGeom.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "axion/math.h"
#include "collision/collision.h"

namespace axion {

// A convex polyhedron. Faces are maximal planar polygons (coplanar triangles merged, points
// inside faces and on edges dropped), so a box-shaped hull has 8 vertices and 6 quads.
struct HullData {
  std::vector<Real> vertices;        // (vertex_count x 3), shape frame (m)
  std::vector<int32_t> faces;        // vertex indices of all faces, concatenated; each face
                                     // counter-clockwise seen from outside
  std::vector<int32_t> face_offset;  // (face_count + 1): face f is
                                     // faces[face_offset[f] .. face_offset[f + 1])
  std::vector<Real> face_plane;      // (face_count x 4): outward unit normal n, offset d;
                                     // dot(n, x) <= d for every point x of the hull

  int vertex_count() const { return static_cast<int>(vertices.size() / 3); }
  int face_count() const { return static_cast<int>(face_offset.size()) - 1; }
  Vec3 vertex(int i) const { return {vertices[3 * i], vertices[3 * i + 1], vertices[3 * i + 2]}; }
};

// Checks that `points` can span a convex hull: at least 4, all finite, not all coincident,
// collinear or coplanar (relative to the points' extent). The message names the problem and
// the offending index or value.
absl::Status ValidateHullPoints(const std::vector<Vec3>& points);

// Convex hull of `points` (Quickhull: a robot part of 28,816 points builds in under 0.1 s).
// Deterministic: the same points give the same hull, vertex order and face order.
absl::StatusOr<HullData> BuildHull(const std::vector<Vec3>& points);

// A kConvexHull ShapeGeom that points into `hull` (which must outlive it).
ShapeGeom HullShapeGeom(const HullData& hull);

}  // namespace axion
