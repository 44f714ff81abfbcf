#include "collision/hull.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_format.h"
#include "axion/model.h"

namespace axion {

// The narrow phase cannot include the model header, so it keeps its own copy of the codes.
static_assert(narrowphase::kTypePlane == static_cast<int32_t>(ShapeType::kPlane));
static_assert(narrowphase::kTypeSphere == static_cast<int32_t>(ShapeType::kSphere));
static_assert(narrowphase::kTypeCapsule == static_cast<int32_t>(ShapeType::kCapsule));
static_assert(narrowphase::kTypeBox == static_cast<int32_t>(ShapeType::kBox));
static_assert(narrowphase::kTypeCylinder == static_cast<int32_t>(ShapeType::kCylinder));
static_assert(narrowphase::kTypeHull == static_cast<int32_t>(ShapeType::kConvexHull));
static_assert(narrowphase::kTypeHeightField == static_cast<int32_t>(ShapeType::kHeightField));

namespace {

// Points closer than this (relative to the points' extent) to a plane lie on it. Loose enough to
// merge the coplanar facets of meshes exported in single precision.
constexpr Real kPlanarTolerance = Real(1e-7);

struct Extent {
  Vec3 centre;
  Real size = 0;  // bounding-box diagonal
};

Extent PointExtent(const std::vector<Vec3>& points) {
  Vec3 lo = points[0], hi = points[0];
  for (const Vec3& p : points) {
    for (int i = 0; i < 3; ++i) {
      lo[i] = std::min(lo[i], p[i]);
      hi[i] = std::max(hi[i], p[i]);
    }
  }
  return {Real(0.5) * (lo + hi), norm(hi - lo)};
}

std::string FormatVec(Vec3 v) { return absl::StrFormat("(%g, %g, %g)", v.x, v.y, v.z); }

// Four points spanning a tetrahedron, or the reason there are none.
absl::StatusOr<std::array<int, 4>> InitialSimplex(const std::vector<Vec3>& points, Real eps) {
  const int n = static_cast<int>(points.size());
  auto farthest = [&](auto&& distance) {
    int best = 0;
    Real best_d = -1;
    for (int i = 0; i < n; ++i) {
      Real d = distance(points[i]);
      if (d > best_d) {
        best_d = d;
        best = i;
      }
    }
    return std::make_pair(best, best_d);
  };
  int i0 = farthest([&](Vec3 p) { return p.x; }).first;
  auto [i1, d1] = farthest([&](Vec3 p) { return norm(p - points[i0]); });
  if (d1 <= eps) {
    return absl::InvalidArgumentError(
        absl::StrFormat("convex hull points are degenerate: all %d points coincide at %s", n,
                        FormatVec(points[i0])));
  }
  Vec3 u = normalized(points[i1] - points[i0]);
  auto [i2, d2] = farthest([&](Vec3 p) { return norm(cross(p - points[i0], u)); });
  if (d2 <= eps) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "convex hull points are degenerate: all %d points are collinear (within %g m of the line "
        "through %s and %s)",
        n, eps, FormatVec(points[i0]), FormatVec(points[i1])));
  }
  Vec3 normal = normalized(cross(points[i1] - points[i0], points[i2] - points[i0]));
  auto [i3, d3] = farthest([&](Vec3 p) { return std::fabs(dot(p - points[i0], normal)); });
  if (d3 <= eps) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "convex hull points are degenerate: all %d points are coplanar (within %g m of the "
        "plane through %s with normal %s)",
        n, eps, FormatVec(points[i0]), FormatVec(normal)));
  }
  return std::array<int, 4>{i0, i1, i2, i3};
}

struct Triangle {
  std::array<int, 3> v;
  Vec3 n;      // outward unit normal
  Real d = 0;  // plane offset
  Real area = 0;
  bool alive = true;
};

using Edge = std::pair<int, int>;

class TriangleHull {
 public:
  TriangleHull(const std::vector<Vec3>& points, Real eps) : p_(points), eps_(eps) {}

  void AddTriangle(int a, int b, int c) {
    Triangle t;
    t.v = {a, b, c};
    Vec3 n = cross(p_[b] - p_[a], p_[c] - p_[a]);
    t.area = Real(0.5) * norm(n);
    t.n = normalized(n);
    t.d = dot(t.n, p_[a]);
    int index = static_cast<int>(tris_.size());
    tris_.push_back(t);
    for (int e = 0; e < 3; ++e) edge_tri_[{t.v[e], t.v[(e + 1) % 3]}] = index;
  }

  void RemoveTriangle(int index) {
    Triangle& t = tris_[index];
    t.alive = false;
    for (int e = 0; e < 3; ++e) edge_tri_.erase({t.v[e], t.v[(e + 1) % 3]});
  }

  // Triangle holding the directed edge a -> b, or -1.
  int EdgeTriangle(int a, int b) const {
    auto it = edge_tri_.find({a, b});
    return it == edge_tri_.end() ? -1 : it->second;
  }

  // Quickhull (Barber, Dobkin and Huhdanpaa 1996): every point outside the current hull waits
  // on one face that sees it, and the farthest point of some face is added next. Taking the
  // farthest point keeps each step well conditioned, where adding points in input order left
  // real robot meshes (thousands of vertices, many nearly coplanar) with visible regions that
  // were not discs, and the hull failed; it also tests each point only against the faces
  // around it rather than all of them.
  void Build(const std::array<int, 4>& simplex) {
    const auto [i0, i1, i2, i3] = simplex;
    interior_ = Real(0.25) * (p_[i0] + p_[i1] + p_[i2] + p_[i3]);
    // orient the first face away from the fourth point
    if (dot(cross(p_[i1] - p_[i0], p_[i2] - p_[i0]), p_[i3] - p_[i0]) > 0) {
      AddTriangle(i0, i2, i1);
      AddTriangle(i0, i1, i3);
      AddTriangle(i1, i2, i3);
      AddTriangle(i2, i0, i3);
    } else {
      AddTriangle(i0, i1, i2);
      AddTriangle(i0, i3, i1);
      AddTriangle(i1, i3, i2);
      AddTriangle(i2, i3, i0);
    }
    outside_.assign(tris_.size(), {});
    const std::vector<int> first{0, 1, 2, 3};
    for (int i = 0; i < static_cast<int>(p_.size()); ++i) {
      if (i == i0 || i == i1 || i == i2 || i == i3) continue;
      Assign(i, first);
    }
    // faces are taken in index order, each until it has no outside point left
    for (int t = 0; t < static_cast<int>(tris_.size()); ++t) {
      while (tris_[t].alive && !outside_[t].empty()) {
        // the farthest of its points (the first of equals: deterministic)
        int best = 0;
        Real best_d = -1;
        for (int k = 0; k < static_cast<int>(outside_[t].size()); ++k) {
          Real d = Distance(t, outside_[t][k]);
          if (d > best_d) {
            best_d = d;
            best = k;
          }
        }
        const int point = outside_[t][best];
        if (!AddPoint(t, point)) {
          // within round-off of the surface after all: left out
          outside_[t].erase(outside_[t].begin() + best);
        }
      }
    }
  }

  const std::vector<Triangle>& triangles() const { return tris_; }

 private:
  Real Distance(int t, int i) const { return dot(tris_[t].n, p_[i]) - tris_[t].d; }

  // Puts point i on the candidate face it is farthest outside of; inside them all, it is dropped.
  void Assign(int i, const std::vector<int>& candidates) {
    int best = -1;
    Real best_d = eps_;
    for (int t : candidates) {
      Real d = Distance(t, i);
      if (d > best_d) {
        best_d = d;
        best = t;
      }
    }
    if (best >= 0) outside_[best].push_back(i);
  }

  // Adds point i, outside face `seed`: the faces it sees are replaced by a fan from their
  // boundary to it. Returns false, changing nothing, where the faces seen within the tolerance
  // do not form a disc or a new face would not face away from the hull's interior (the point
  // lies within round-off of the surface).
  bool AddPoint(int seed, int i) {
    std::vector<int> visible;
    const bool added = AddPointSeen(seed, i, &visible);
    for (int t : visible) is_visible_[t] = 0;  // cleared face by face: a whole clear made
    return added;                              // the hull quadratic in its points
  }

  // AddPoint's work; `visible` gets the faces flagged in is_visible_.
  bool AddPointSeen(int seed, int i, std::vector<int>* visible_out) {
    const Vec3 x = p_[i];
    // faces seen from x, grown from the seed so the set stays connected
    std::vector<int>& visible = *visible_out;
    visible.push_back(seed);
    std::vector<char>& is_visible = is_visible_;
    is_visible.resize(tris_.size(), 0);
    is_visible[seed] = 1;
    for (size_t k = 0; k < visible.size(); ++k) {
      const Triangle& t = tris_[visible[k]];
      for (int e = 0; e < 3; ++e) {
        int g = EdgeTriangle(t.v[(e + 1) % 3], t.v[e]);
        if (g < 0 || is_visible[g]) continue;
        if (Distance(g, i) > eps_) {
          is_visible[g] = 1;
          visible.push_back(g);
        }
      }
    }
    std::sort(visible.begin(), visible.end());
    // its boundary, which must be one simple loop
    std::vector<Edge> horizon;
    std::map<int, int> next;
    for (int t : visible) {
      for (int e = 0; e < 3; ++e) {
        int a = tris_[t].v[e], b = tris_[t].v[(e + 1) % 3];
        int g = EdgeTriangle(b, a);
        if (g >= 0 && is_visible[g]) continue;
        if (!next.emplace(a, b).second) return false;  // pinched
        horizon.push_back({a, b});
      }
    }
    if (horizon.size() < 3) return false;
    size_t loop = 0;
    int v = horizon.front().first;
    do {
      auto it = next.find(v);
      if (it == next.end()) return false;
      v = it->second;
      ++loop;
    } while (v != horizon.front().first && loop <= horizon.size());
    if (loop != horizon.size()) return false;  // several loops: the faces seen are no disc
    for (const Edge& e : horizon) {
      Vec3 n = cross(p_[e.second] - p_[e.first], x - p_[e.first]);
      if (!(dot(n, x - interior_) > 0) || !(norm(n) > 0)) return false;
    }
    std::vector<int> orphans;
    for (int t : visible) {
      for (int q : outside_[t]) {
        if (q != i) orphans.push_back(q);
      }
      outside_[t].clear();
      RemoveTriangle(t);
    }
    std::vector<int> fan;
    for (const Edge& e : horizon) {
      fan.push_back(static_cast<int>(tris_.size()));
      AddTriangle(e.first, e.second, i);
    }
    outside_.resize(tris_.size());
    for (int q : orphans) Assign(q, fan);
    return true;
  }

  const std::vector<Vec3>& p_;
  Real eps_;
  Vec3 interior_;  // strictly inside every hull built: the first tetrahedron's centre
  std::vector<Triangle> tris_;
  std::vector<std::vector<int>> outside_;  // per triangle: points outside it waiting
  std::map<Edge, int> edge_tri_;
  std::vector<char> is_visible_;  // per triangle, within AddPoint: seen from the point
};

// Groups the hull's triangles into planar faces: region growing from the largest unassigned
// triangle over neighbours whose vertices all lie within eps of the seed's plane. Measuring
// against the seed (not the neighbour) keeps a finely tessellated curved surface from merging
// into one face. `singleton` skips merging (each triangle its own face).
std::vector<int> GroupTriangles(const TriangleHull& hull, const std::vector<Vec3>& p, Real eps,
                                bool singleton, int* group_count) {
  const std::vector<Triangle>& tris = hull.triangles();
  std::vector<int> order;
  for (int t = 0; t < static_cast<int>(tris.size()); ++t) {
    if (tris[t].alive) order.push_back(t);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return tris[a].area > tris[b].area; });
  std::vector<int> group(tris.size(), -1);
  int count = 0;
  for (int seed : order) {
    if (group[seed] >= 0) continue;
    group[seed] = count;
    std::vector<int> queue{seed};
    for (size_t k = 0; k < queue.size() && !singleton; ++k) {
      const Triangle& t = tris[queue[k]];
      for (int e = 0; e < 3; ++e) {
        int g = hull.EdgeTriangle(t.v[(e + 1) % 3], t.v[e]);
        if (g < 0 || group[g] >= 0) continue;
        bool coplanar = dot(tris[g].n, tris[seed].n) > 0;
        for (int j = 0; j < 3 && coplanar; ++j) {
          coplanar = std::fabs(dot(tris[seed].n, p[tris[g].v[j]]) - tris[seed].d) <= eps;
        }
        if (coplanar) {
          group[g] = count;
          queue.push_back(g);
        }
      }
    }
    ++count;
  }
  *group_count = count;
  return group;
}

// The largest n . v over a point set, exactly the value a scan of every point gives (the same
// dot products, so the same bits), found through a tree of bounding boxes: a box whose corner
// bound cannot beat the best so far is skipped.
class SupportTree {
 public:
  explicit SupportTree(const std::vector<Real>& xyz) {
    const int count = static_cast<int>(xyz.size() / 3);
    for (int i = 0; i < count; ++i) points_.push_back({xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]});
    order_.resize(count);
    for (int i = 0; i < count; ++i) order_[i] = i;
    if (count > 0) Split(0, count);
    // the points in the tree's order: a leaf's points lie together in memory
    std::vector<Vec3> sorted(count);
    for (int k = 0; k < count; ++k) sorted[k] = points_[order_[k]];
    points_ = std::move(sorted);
    order_.clear();  // only the construction reads it
  }

  // max(lower, the largest n . v).
  Real Max(Vec3 n, Real lower) const {
    Real best = lower;
    // a node's children replace it on the stack: at most one more entry a level
    std::array<int, 2 * kMaxDepth> stack;
    int top = 0;
    if (!nodes_.empty()) stack[top++] = 0;
    while (top > 0) {
      const Node& node = nodes_[stack[--top]];
      if (Bound(node, n) < best) continue;
      if (node.left < 0) {
        for (int k = node.begin; k < node.end; ++k) best = std::max(best, dot(n, points_[k]));
        continue;
      }
      // the more promising child last, so that it is searched first
      const bool right_first = Bound(nodes_[node.right], n) > Bound(nodes_[node.left], n);
      stack[top++] = right_first ? node.left : node.right;
      stack[top++] = right_first ? node.right : node.left;
    }
    return best;
  }

 private:
  struct Node {
    Vec3 lo, hi;
    int begin, end;
    int left = -1, right = -1;  // children; -1: a leaf
  };
  static constexpr int kLeafSize = 8;
  static constexpr int kMaxDepth = 40;  // halving from 2^31 points to a leaf: under 31 levels

  // An upper bound of n . v over the node's box, loosened by a relative 1e-12 so that the
  // rounding of the points' own dot products cannot exceed it.
  static Real Bound(const Node& node, Vec3 n) {
    const Real x = std::max(n.x * node.lo.x, n.x * node.hi.x);
    const Real y = std::max(n.y * node.lo.y, n.y * node.hi.y);
    const Real z = std::max(n.z * node.lo.z, n.z * node.hi.z);
    const Real scale = std::fabs(x) + std::fabs(y) + std::fabs(z);
    return x + y + z + Real(1e-12) * scale;
  }

  int Split(int begin, int end) {
    const int index = static_cast<int>(nodes_.size());
    Node node{points_[order_[begin]], points_[order_[begin]], begin, end};
    for (int k = begin + 1; k < end; ++k) {
      const Vec3 q = points_[order_[k]];
      node.lo = {std::min(node.lo.x, q.x), std::min(node.lo.y, q.y), std::min(node.lo.z, q.z)};
      node.hi = {std::max(node.hi.x, q.x), std::max(node.hi.y, q.y), std::max(node.hi.z, q.z)};
    }
    nodes_.push_back(node);
    if (end - begin <= kLeafSize) return index;
    const Vec3 size = node.hi - node.lo;
    const int axis = size.x >= size.y && size.x >= size.z ? 0 : size.y >= size.z ? 1 : 2;
    auto coordinate = [&](int i) {
      const Vec3 q = points_[i];
      return axis == 0 ? q.x : axis == 1 ? q.y : q.z;
    };
    const int middle = begin + (end - begin) / 2;
    std::nth_element(order_.begin() + begin, order_.begin() + middle, order_.begin() + end,
                     [&](int a, int b) { return coordinate(a) < coordinate(b); });
    const int left = Split(begin, middle);
    const int right = Split(middle, end);
    nodes_[index].left = left;
    nodes_[index].right = right;
    return index;
  }

  std::vector<Vec3> points_;
  std::vector<int> order_;
  std::vector<Node> nodes_;
};

// Polyhedron from grouped triangles: each group's boundary loop is a face; vertices shared by
// fewer than three faces (inside a face or on an edge) are dropped. `p` are the centred points
// the hull was built from, `original` the caller's. Fails (returns false) when a group's
// boundary is not a single loop.
bool FacesFromGroups(const TriangleHull& hull, const std::vector<Vec3>& p,
                     const std::vector<Vec3>& original, const std::vector<int>& group,
                     int group_count, HullData* out) {
  const std::vector<Triangle>& tris = hull.triangles();
  // boundary edges per group, directed as in the (counter-clockwise) triangles
  std::vector<std::map<int, int>> next(group_count);
  std::vector<std::vector<char>> vertex_in_group(p.size());
  std::vector<int> vertex_groups(p.size(), 0);
  for (int t = 0; t < static_cast<int>(tris.size()); ++t) {
    if (!tris[t].alive) continue;
    for (int e = 0; e < 3; ++e) {
      int a = tris[t].v[e], b = tris[t].v[(e + 1) % 3];
      int g = hull.EdgeTriangle(b, a);
      if (g < 0) return false;
      if (group[g] == group[t]) continue;
      if (next[group[t]].count(a)) return false;  // pinched boundary
      next[group[t]][a] = b;
    }
  }
  std::vector<std::vector<int>> loops(group_count);
  for (int f = 0; f < group_count; ++f) {
    if (next[f].empty()) return false;
    int start = next[f].begin()->first;  // smallest vertex index: deterministic
    int v = start;
    do {
      loops[f].push_back(v);
      auto it = next[f].find(v);
      if (it == next[f].end()) return false;
      v = it->second;
    } while (v != start && loops[f].size() <= next[f].size());
    if (v != start || loops[f].size() != next[f].size()) return false;  // several loops
    for (int x : loops[f]) ++vertex_groups[x];
  }
  // keep vertices where three or more faces meet, renumbered in input order
  std::vector<int> new_index(p.size(), -1), kept_original;
  out->vertices.clear();
  for (int i = 0; i < static_cast<int>(p.size()); ++i) {
    if (vertex_groups[i] < 3) continue;
    new_index[i] = out->vertex_count();
    kept_original.push_back(i);
    // the caller's points bit for bit, not the centred copies shifted back
    out->vertices.insert(out->vertices.end(), {original[i].x, original[i].y, original[i].z});
  }
  out->faces.clear();
  out->face_offset.assign(1, 0);
  for (int f = 0; f < group_count; ++f) {
    int kept = 0;
    for (int x : loops[f]) {
      if (new_index[x] >= 0) {
        out->faces.push_back(new_index[x]);
        ++kept;
      }
    }
    if (kept < 3) return false;
    out->face_offset.push_back(static_cast<int32_t>(out->faces.size()));
  }
  const SupportTree support(out->vertices);
  out->face_plane.clear();
  for (int f = 0; f < group_count; ++f) {
    const int begin = out->face_offset[f], count = out->face_offset[f + 1] - begin;
    // Newell's normal is the polygon's area-weighted normal: robust for nearly planar loops.
    Vec3 n;
    for (int k = 0; k < count; ++k) {
      const int a = kept_original[out->faces[begin + k]];
      const int b = kept_original[out->faces[begin + (k + 1) % count]];
      n += cross(p[a], p[b]);
    }
    n = normalized(n);
    // The offset is the largest n . v over every vertex, so that the plane bounds the whole
    // hull (a merged face's vertices lie within eps of it, not on it). A scan of every vertex
    // for every face made a 200,000-point mesh's hull take 8 minutes.
    int own = out->faces[begin];
    for (int k = 1; k < count; ++k) {
      const int v = out->faces[begin + k];
      if (dot(n, out->vertex(v)) > dot(n, out->vertex(own))) own = v;
    }
    const Real d = support.Max(n, dot(n, out->vertex(own)));
    out->face_plane.insert(out->face_plane.end(), {n.x, n.y, n.z, d});
  }
  return true;
}

// Every directed face edge has its reverse in another face, and V - E + F = 2.
bool IsClosedPolyhedron(const HullData& h) {
  std::map<Edge, int> edges;
  for (int f = 0; f < h.face_count(); ++f) {
    int begin = h.face_offset[f], n = h.face_offset[f + 1] - begin;
    for (int k = 0; k < n; ++k) {
      Edge e{h.faces[begin + k], h.faces[begin + (k + 1) % n]};
      if (e.first == e.second || ++edges[e] > 1) return false;
    }
  }
  for (const auto& [e, count] : edges) {
    if (!edges.count({e.second, e.first})) return false;
  }
  int edge_count = static_cast<int>(edges.size()) / 2;
  return h.vertex_count() - edge_count + h.face_count() == 2;
}

// The search structures of a built hull: each vertex's edges, the climbs' start vertices and the
// bounding radius (see HullData).
void AddSearchData(HullData* h) {
  const int vertex_count = h->vertex_count();
  h->edge_offset.assign(vertex_count + 1, 0);
  for (int32_t v : h->faces) ++h->edge_offset[v + 1];
  for (int v = 0; v < vertex_count; ++v) h->edge_offset[v + 1] += h->edge_offset[v];
  h->edge_vertex.resize(h->faces.size());
  h->edge_face.resize(h->faces.size());
  std::vector<int32_t> fill(h->edge_offset.begin(), h->edge_offset.end() - 1);
  for (int f = 0; f < h->face_count(); ++f) {
    const int begin = h->face_offset[f], n = h->face_offset[f + 1] - begin;
    for (int k = 0; k < n; ++k) {
      const int slot = fill[h->faces[begin + k]]++;
      h->edge_vertex[slot] = h->faces[begin + (k + 1) % n];
      h->edge_face[slot] = f;
    }
  }
  h->climb_start.clear();
  for (int k = 0; k < narrowphase::kHullClimbStarts; ++k) {
    // +-x, +-y, +-z, then the eight (+-1, +-1, +-1)
    Vec3 d;
    if (k < 6) {
      d[k / 2] = k % 2 == 0 ? 1 : -1;
    } else {
      d = Vec3{(k - 6) & 1 ? Real(-1) : Real(1), (k - 6) & 2 ? Real(-1) : Real(1),
               (k - 6) & 4 ? Real(-1) : Real(1)};
    }
    int best = 0;
    for (int v = 1; v < vertex_count; ++v) {
      if (dot(h->vertex(v), d) > dot(h->vertex(best), d)) best = v;
    }
    h->climb_start.push_back(best);
  }
  Real radius_sq = 0;
  for (int v = 0; v < vertex_count; ++v)
    radius_sq = std::max(radius_sq, dot(h->vertex(v), h->vertex(v)));
  h->radius = std::sqrt(radius_sq);
}

}  // namespace

absl::Status ValidateHullPoints(const std::vector<Vec3>& points) {
  if (points.size() < 4) {
    return absl::InvalidArgumentError(
        absl::StrFormat("convex hull needs at least 4 points, got %d", points.size()));
  }
  for (size_t i = 0; i < points.size(); ++i) {
    const Vec3& p = points[i];
    if (!std::isfinite(p.x) || !std::isfinite(p.y) || !std::isfinite(p.z)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("convex hull point %d is not finite: %s", i, FormatVec(p)));
    }
  }
  Extent extent = PointExtent(points);
  absl::StatusOr<std::array<int, 4>> simplex =
      InitialSimplex(points, kPlanarTolerance * extent.size);
  return simplex.status();
}

absl::StatusOr<HullData> BuildHull(const std::vector<Vec3>& points) {
  if (absl::Status status = ValidateHullPoints(points); !status.ok()) return status;
  // Build on centred copies: orientation tests and tolerances are then relative to the hull's
  // size, not its distance from the shape origin. Vertices and planes come out in the input
  // frame.
  Extent extent = PointExtent(points);
  std::vector<Vec3> centred(points.size());
  for (size_t i = 0; i < points.size(); ++i) centred[i] = points[i] - extent.centre;
  // Tolerance escalation: a looser tolerance merges the near-coplanar facets of noisy input that
  // would otherwise leave a face boundary with several loops; last resort, triangles as faces
  // (always a closed polyhedron, only with more faces than needed).
  constexpr int kAttempts = 4;
  for (int attempt = 0; attempt <= kAttempts; ++attempt) {
    bool merge = attempt < kAttempts;
    Real eps = kPlanarTolerance * extent.size * std::pow(Real(10), Real(merge ? attempt : 0));
    absl::StatusOr<std::array<int, 4>> simplex = InitialSimplex(centred, eps);
    if (!simplex.ok()) return simplex.status();
    TriangleHull hull(centred, eps);
    hull.Build(*simplex);
    int group_count = 0;
    std::vector<int> group = GroupTriangles(hull, centred, eps, !merge, &group_count);
    HullData data;
    if (!FacesFromGroups(hull, centred, points, group, group_count, &data)) continue;
    if (!IsClosedPolyhedron(data)) continue;
    AddSearchData(&data);
    return data;
  }
  return absl::InternalError(absl::StrFormat(
      "convex hull construction failed for %d points: the points are too close to degenerate",
      points.size()));
}

ShapeGeom HullShapeGeom(const HullData& hull) {
  ShapeGeom g;
  g.type = narrowphase::kTypeHull;
  g.hull_vertices = hull.vertices.data();
  g.hull_vertex_count = hull.vertex_count();
  g.hull_faces = hull.faces.data();
  g.hull_face_offset = hull.face_offset.data();
  g.hull_face_plane = hull.face_plane.data();
  g.hull_face_count = hull.face_count();
  if (!hull.edge_offset.empty()) {
    g.hull_edge_offset = hull.edge_offset.data();
    g.hull_edge_vertex = hull.edge_vertex.data();
    g.hull_edge_face = hull.edge_face.data();
    g.hull_climb_start = hull.climb_start.data();
    g.hull_radius = hull.radius;
  }
  return g;
}

}  // namespace axion
