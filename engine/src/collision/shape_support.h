// Shapes as the narrow phase sees them: a convex "core" (point, segment, box, cylinder or hull)
// inflated by a radius, with support functions, contact features and bounds. Everything is
// AXION_HD, allocation-free and non-recursive so it runs unchanged in the CUDA backend.
#pragma once

#include <cmath>
#include <cstdint>

#include "axion/math.h"

namespace axion {

namespace narrowphase {

// Shape type codes of ShapeGeom::type. They equal axion::ShapeType (hull.cc checks this) but are
// spelled out here because device code cannot include the model header.
inline constexpr int32_t kTypePlane = 0;
inline constexpr int32_t kTypeSphere = 1;
inline constexpr int32_t kTypeCapsule = 2;
inline constexpr int32_t kTypeBox = 3;
inline constexpr int32_t kTypeCylinder = 4;
inline constexpr int32_t kTypeHull = 5;
inline constexpr int32_t kTypeHeightField = 6;  // never a Core: collided prism by prism

// A hull of more vertices than this finds its farthest vertex in a direction (and its contact
// feature, bounding box and the vertices under a plane) by climbing along its edges from the
// best of kHullClimbStarts start vertices, not by reading every vertex: a few dozen vertices
// read instead of all of them (RESULTS.md, "Large hulls climb"). Smaller hulls read them all, which
// is as fast for them.
inline constexpr int32_t kHullClimbVertices = 32;
inline constexpr int32_t kHullClimbStarts = 14;
// Vertices within the margin of a plane that a large hull's contact with it reads from a list
// gathered by climbing; more (a large flat face on a floor) and it reads every vertex.
inline constexpr int32_t kHullPlaneVertices = 32;

// Tolerances, relative to the pair's length scale (sum of bounding radii) unless stated.
#if defined(AXION_USE_FLOAT)
inline constexpr Real kTiny = Real(1e-6);          // lengths below this are zero
inline constexpr Real kTouch = Real(1e-5);         // cores closer than this are "touching"
inline constexpr Real kGjkRelTol = Real(1e-6);     // relative accuracy of GJK distances
inline constexpr Real kEpaTol = Real(1e-5);        // EPA stops when the polytope grows less
inline constexpr Real kEpaCurvedTol = Real(1e-3);  // coarse EPA before refine_penetration()
#else
inline constexpr Real kTiny = Real(1e-12);
inline constexpr Real kTouch = Real(1e-10);
inline constexpr Real kGjkRelTol = Real(1e-12);
inline constexpr Real kEpaTol = Real(1e-10);
inline constexpr Real kEpaCurvedTol = Real(1e-3);
#endif
// A feature (face, edge) is used for a manifold when its normal is within about 2 degrees of
// the contact normal: tilted boxes still rest on 4 points, and a capsule lying almost flat on
// 2, so resting contact does not flicker between 1 and 4 points.
inline constexpr Real kFeatureSin = Real(0.035);
inline constexpr Real kFeatureCos = Real(0.99938719);  // sqrt(1 - kFeatureSin^2)
// Extent of the box a plane reports as its bounds (m).
inline constexpr Real kPlaneExtent = Real(1e15);
// Distance (m) from a plane's origin along it within which its bounding box holds the surface
// (shape_aabb): a shape farther out than this, where positions are no longer resolved to
// physics (1e-7 m), may miss a tilted plane's narrow phase.
inline constexpr Real kPlaneReach = Real(1e9);
inline constexpr Real kPi = Real(3.14159265358979323846);
// Vertices of a contact feature polygon. Larger hull faces are subsampled (a convex subset of
// their vertices); cylinder caps are octagons, so clipping stays within fixed-size buffers.
inline constexpr int kMaxFeatureVertices = 16;
inline constexpr int kCylinderCapVertices = 8;  // eighth turns, see core_feature()

AXION_HD Real rmin(Real a, Real b) { return a < b ? a : b; }
AXION_HD Real rmax(Real a, Real b) { return a > b ? a : b; }
AXION_HD Real rclamp(Real x, Real lo, Real hi) { return x < lo ? lo : (x > hi ? hi : x); }
// Sign with sign(0) = +1, so that ties resolve to the same side on every platform.
AXION_HD Real rsign(Real x) { return x < 0 ? Real(-1) : Real(1); }
AXION_HD Real length_sq(Vec3 v) { return dot(v, v); }
// r^T v: rotates a world vector into the frame whose rotation matrix is r.
AXION_HD Vec3 mul_transpose(const Mat33& r, Vec3 v) {
  return {r.m[0] * v.x + r.m[3] * v.y + r.m[6] * v.z, r.m[1] * v.x + r.m[4] * v.y + r.m[7] * v.z,
          r.m[2] * v.x + r.m[5] * v.y + r.m[8] * v.z};
}
AXION_HD Vec3 column(const Mat33& r, int i) { return {r.m[i], r.m[3 + i], r.m[6 + i]}; }

// A posed shape reduced to its core: sphere -> point, capsule -> segment along local z, the
// others unchanged with radius 0. The shape is the core inflated by `radius`.
struct Core {
  int32_t type = kTypeSphere;
  Vec3 pos;   // shape frame origin, world frame
  Mat33 rot;  // shape frame -> world frame rotation
  Vec3 size;  // ShapeGeom::size
  Real radius = 0;
  // kTypeHull only (shape frame); see collision/hull.h for the layout.
  const Real* hull_vertices = nullptr;  // (hull_vertex_count x 3)
  int32_t hull_vertex_count = 0;
  const int32_t* hull_faces = nullptr;        // concatenated face vertex indices, counter-clockwise
  const int32_t* hull_face_offset = nullptr;  // (hull_face_count + 1)
  const Real* hull_face_plane = nullptr;      // (hull_face_count x 4): normal, offset
  int32_t hull_face_count = 0;
  const int32_t* hull_edge_offset = nullptr;  // (hull_vertex_count + 1); null: no edges
  const int32_t* hull_edge_vertex = nullptr;  // each vertex's edges' other ends
  const int32_t* hull_edge_face = nullptr;    // each vertex's edges' faces
  const int32_t* hull_climb_start = nullptr;  // (kHullClimbStarts)
  Real hull_radius = -1;                      // largest vertex norm; < 0: not stored
};

AXION_HD Vec3 to_world(const Core& c, Vec3 local) { return c.rot * local + c.pos; }
AXION_HD Vec3 to_local(const Core& c, Vec3 world) { return mul_transpose(c.rot, world - c.pos); }
AXION_HD Vec3 hull_vertex(const Core& c, int i) { return load3(c.hull_vertices + 3 * i); }

// Whether a hull searches by climbing along its edges (see kHullClimbVertices).
AXION_HD bool hull_climbs(const Core& c) {
  return c.hull_vertex_count > kHullClimbVertices && c.hull_edge_offset != nullptr;
}

// Index of a hull vertex farthest along local direction d. Small hulls read every vertex, ties
// resolving to the first. Large ones start at the best of their climb starts and move to the
// best neighbour while one is strictly farther: on a convex polyhedron a vertex with no farther
// neighbour is a farthest vertex (the simplex method's argument), and each move gains, so the
// climb ends. Ties then resolve to the vertex the climb meets first; deterministic either way.
// Out of line on both sides (a call per query, 1-2 ns on the host): inlined into each inlined
// copy of its callers, it took a g++ -O3 unit of the narrow phase, every AXION_HD function
// force-inlined as in the CUDA unit's host pass, from 60 to 166 s, and an nvcc sm_90 unit of
// collide_shapes and shape_aabb from 153 to 258 s; out of line, 52 s and 149 s.
AXION_HD_NOINLINE int hull_support_index(const Core& c, Vec3 d) {
  // (best, best_dot) moves to vertex i where i is strictly farther
  int best = hull_climbs(c) ? c.hull_climb_start[0] : 0;
  Real best_dot = dot(hull_vertex(c, best), d);
  auto keep_farther = [&](int i) {
    const Real v = dot(hull_vertex(c, i), d);
    if (v > best_dot) {
      best_dot = v;
      best = i;
    }
  };
  if (!hull_climbs(c)) {
    for (int i = 1; i < c.hull_vertex_count; ++i) keep_farther(i);
    return best;
  }
  for (int k = 1; k < kHullClimbStarts; ++k) keep_farther(c.hull_climb_start[k]);
  for (int at = -1; at != best;) {
    at = best;
    for (int e = c.hull_edge_offset[at]; e < c.hull_edge_offset[at + 1]; ++e) {
      keep_farther(c.hull_edge_vertex[e]);
    }
  }
  return best;
}

// Support point of the core in local direction d (local frame). Ties resolve to the first
// vertex / the positive side, so results are deterministic.
AXION_HD Vec3 core_support_local(const Core& c, Vec3 d) {
  switch (c.type) {
    case kTypeCapsule:
      return {0, 0, d.z >= 0 ? c.size.y : -c.size.y};
    case kTypeBox:
      return {d.x >= 0 ? c.size.x : -c.size.x, d.y >= 0 ? c.size.y : -c.size.y,
              d.z >= 0 ? c.size.z : -c.size.z};
    case kTypeCylinder: {
      Vec3 s{0, 0, d.z >= 0 ? c.size.y : -c.size.y};
      Real rho = std::sqrt(d.x * d.x + d.y * d.y);
      if (rho > kTiny * (std::fabs(d.z) + rho)) {
        s.x = c.size.x * d.x / rho;
        s.y = c.size.x * d.y / rho;
      }
      return s;
    }
    case kTypeHull:
      return hull_vertex(c, hull_support_index(c, d));
    default:  // sphere: a point
      return {};
  }
}

AXION_HD Vec3 core_support(const Core& c, Vec3 d_world) {
  return to_world(c, core_support_local(c, mul_transpose(c.rot, d_world)));
}

// Radius of a ball about the shape origin enclosing the core (without the inflation radius).
AXION_HD Real core_bounding_radius(const Core& c) {
  switch (c.type) {
    case kTypeCapsule:
      return c.size.y;
    case kTypeBox:
      return norm(c.size);
    case kTypeCylinder:
      return std::sqrt(c.size.x * c.size.x + c.size.y * c.size.y);
    case kTypeHull: {
      if (c.hull_radius >= 0) return c.hull_radius;
      Real r2 = 0;
      for (int i = 0; i < c.hull_vertex_count; ++i) r2 = rmax(r2, length_sq(hull_vertex(c, i)));
      return std::sqrt(r2);
    }
    default:
      return 0;
  }
}

// Contact feature of a core in a direction: the point, edge or face (polygon) that is extreme
// within kFeatureSin of that direction.
struct Feature {
  int32_t count = 0;                 // 1: point, 2: segment, >= 3: face polygon
  Vec3 vertex[kMaxFeatureVertices];  // world frame; faces counter-clockwise about `normal`
  Vec3 normal;                       // faces: outward unit normal, world frame
};

AXION_HD void feature_to_world(const Core& c, Feature* f) {
  for (int i = 0; i < f->count; ++i) f->vertex[i] = to_world(c, f->vertex[i]);
  f->normal = c.rot * f->normal;
}

// Feature of a hull in local unit direction d.
AXION_HD void hull_feature_local(const Core& c, Vec3 d, Feature* f) {
  const bool climbs = hull_climbs(c);
  // a large hull's faces and edges below are those at its support vertex; a small hull reads
  // every face, and finds that vertex only for an edge
  int v = climbs ? hull_support_index(c, d) : -1;
  // face: the one whose outward normal is closest to d (of a large hull, of those at v: d lies
  // in v's normal cone, whose corners are their normals)
  int best_face = 0;
  Real best_dot = -2;
  const int face_count =
      climbs ? c.hull_edge_offset[v + 1] - c.hull_edge_offset[v] : c.hull_face_count;
  for (int k = 0; k < face_count; ++k) {
    const int i = climbs ? c.hull_edge_face[c.hull_edge_offset[v] + k] : k;
    Real s = dot(load3(c.hull_face_plane + 4 * i), d);
    if (s > best_dot) {
      best_dot = s;
      best_face = i;
    }
  }
  if (best_dot >= kFeatureCos) {
    int begin = c.hull_face_offset[best_face];
    int n = c.hull_face_offset[best_face + 1] - begin;
    int m = n < kMaxFeatureVertices ? n : kMaxFeatureVertices;
    // Evenly spaced subset of a large face: still convex and counter-clockwise.
    for (int k = 0; k < m; ++k) f->vertex[k] = hull_vertex(c, c.hull_faces[begin + (k * n) / m]);
    f->count = m;
    f->normal = load3(c.hull_face_plane + 4 * best_face);
    return;
  }
  // edge: the support vertex's edge most perpendicular to d
  if (v < 0) v = hull_support_index(c, d);
  int other = -1;
  Real other_cos = kFeatureSin;
  if (climbs) {
    for (int e = c.hull_edge_offset[v]; e < c.hull_edge_offset[v + 1]; ++e) {
      const int nb = c.hull_edge_vertex[e];
      const Real cosine = std::fabs(dot(normalized(hull_vertex(c, nb) - hull_vertex(c, v)), d));
      if (cosine < other_cos) {
        other_cos = cosine;
        other = nb;
      }
    }
  } else {
    for (int face = 0; face < c.hull_face_count; ++face) {
      int begin = c.hull_face_offset[face];
      int n = c.hull_face_offset[face + 1] - begin;
      for (int k = 0; k < n; ++k) {
        if (c.hull_faces[begin + k] != v) continue;
        // both neighbours of v in this face are edge endpoints
        int nb[2] = {c.hull_faces[begin + (k + 1) % n], c.hull_faces[begin + (k + n - 1) % n]};
        for (int j = 0; j < 2; ++j) {
          Vec3 e = normalized(hull_vertex(c, nb[j]) - hull_vertex(c, v));
          Real cosine = std::fabs(dot(e, d));
          if (cosine < other_cos) {
            other_cos = cosine;
            other = nb[j];
          }
        }
      }
    }
  }
  f->vertex[0] = hull_vertex(c, v);
  f->count = 1;
  if (other >= 0) {
    f->vertex[1] = hull_vertex(c, other);
    f->count = 2;
  }
}

// Feature of core `c` in world direction `dir` (need not be unit).
AXION_HD void core_feature(const Core& c, Vec3 dir, Feature* f) {
  Vec3 d = normalized(mul_transpose(c.rot, dir));
  f->count = 1;
  f->normal = d;
  switch (c.type) {
    case kTypeCapsule:
      if (std::fabs(d.z) <= kFeatureSin && c.size.y > 0) {
        f->vertex[0] = {0, 0, -c.size.y};
        f->vertex[1] = {0, 0, c.size.y};
        f->count = 2;
      } else {
        f->vertex[0] = {0, 0, d.z >= 0 ? c.size.y : -c.size.y};
      }
      break;
    case kTypeBox: {
      Vec3 h = c.size;
      int face_axis = -1;
      int flat_count = 0, flat_axis = -1;
      for (int i = 0; i < 3; ++i) {
        if (std::fabs(d[i]) >= kFeatureCos) face_axis = i;
        if (std::fabs(d[i]) <= kFeatureSin) {
          ++flat_count;
          flat_axis = i;
        }
      }
      if (face_axis >= 0) {
        // (i, j, k) right-handed, so (-,-), (+,-), (+,+), (-,+) in (j, k) is counter-clockwise
        // about +e_i; reversed for the -e_i face.
        int i = face_axis, j = (i + 1) % 3, k = (i + 2) % 3;
        Real s = rsign(d[i]);
        Real sj[4] = {-1, 1, 1, -1}, sk[4] = {-1, -1, 1, 1};
        for (int q = 0; q < 4; ++q) {
          int idx = s > 0 ? q : 3 - q;
          Vec3 v;
          v[i] = s * h[i];
          v[j] = sj[idx] * h[j];
          v[k] = sk[idx] * h[k];
          f->vertex[q] = v;
        }
        f->count = 4;
        Vec3 n;
        n[i] = s;
        f->normal = n;
      } else if (flat_count == 1) {
        Vec3 v = core_support_local(c, d);
        v[flat_axis] = -h[flat_axis];
        f->vertex[0] = v;
        v[flat_axis] = h[flat_axis];
        f->vertex[1] = v;
        f->count = 2;
      } else {
        f->vertex[0] = core_support_local(c, d);
      }
      break;
    }
    case kTypeCylinder: {
      Real r = c.size.x, h = c.size.y;
      if (std::fabs(d.z) >= kFeatureCos) {
        Real s = rsign(d.z);
        // octagon, counter-clockwise about the outward cap normal s * z: eighth turns of
        // (r, 0) without trigonometric calls
        const Real c45 = Real(0.70710678118654752);
        Real x = r, y = 0;
        for (int q = 0; q < kCylinderCapVertices; ++q) {
          f->vertex[q] = {x, y, s * h};
          Real xn = c45 * (x - s * y);
          y = c45 * (s * x + y);
          x = xn;
        }
        f->count = kCylinderCapVertices;
        f->normal = {0, 0, s};
      } else if (std::fabs(d.z) <= kFeatureSin) {
        Real rho = std::sqrt(d.x * d.x + d.y * d.y);
        Vec3 u{r * d.x / rho, r * d.y / rho, 0};
        f->vertex[0] = {u.x, u.y, -h};
        f->vertex[1] = {u.x, u.y, h};
        f->count = 2;
      } else {
        f->vertex[0] = core_support_local(c, d);
      }
      break;
    }
    case kTypeHull:
      hull_feature_local(c, d, f);
      break;
    default:  // sphere
      f->vertex[0] = {};
      break;
  }
  feature_to_world(c, f);
}

}  // namespace narrowphase
}  // namespace axion
