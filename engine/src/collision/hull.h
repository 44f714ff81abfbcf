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
  // The edges at each vertex, for the narrow phase's hill-climbing searches over large hulls
  // (shape_support.h, hull_support_index): vertex v's edges are entries
  // edge_offset[v] .. edge_offset[v + 1] of edge_vertex and edge_face. Entry k runs from v to
  // edge_vertex[k], counter-clockwise along the boundary of face edge_face[k]; every edge has
  // its reverse in its other face, so v's entries name each neighbour and each face at v once.
  std::vector<int32_t> edge_offset;  // (vertex_count + 1)
  std::vector<int32_t> edge_vertex;  // (2 edge_count)
  std::vector<int32_t> edge_face;    // (2 edge_count)
  // Where a climb starts: the vertex farthest along each of narrowphase::kHullClimbStarts fixed
  // directions (the axes and the cube's diagonals), so that no climb crosses more than a sixth or
  // so of the hull.
  std::vector<int32_t> climb_start;  // (kHullClimbStarts)
  Real radius = 0;                   // the largest vertex distance from the shape origin (m)

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
