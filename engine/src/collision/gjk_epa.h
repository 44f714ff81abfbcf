// Distance and penetration depth between two convex cores.
//
// GJK (Gilbert, Johnson, Keerthi 1988; van den Bergen 1999, "A Fast and Robust GJK
// Implementation for Collision Detection of Convex Objects") gives the distance and closest points
// of separated cores; EPA (van den Bergen 2001, "Proximity Queries and Penetration Depth
// Computation on 3D Game Objects") expands GJK's final simplex into a polytope of the Minkowski
// difference to find the penetration depth and direction of overlapping cores. Both work only
// through support functions, so every pair of core types shares them. Fixed-size arrays, no
// recursion, deterministic tie-breaking.
#pragma once

#include "collision/shape_support.h"

namespace axion {
namespace narrowphase {

inline constexpr int kGjkMaxIterations = 64;
// EPA's polytope: polyhedral cores converge in a few vertices; curved ones (cylinders) in 20-50,
// after which refine_penetration() takes over. The arrays live on the (device) stack, hence the
// modest cap. A polytope of V vertices has at most 2V - 4 faces.
inline constexpr int kEpaMaxVertices = 48;
inline constexpr int kEpaMaxFaces = 2 * kEpaMaxVertices - 4;

// A vertex of the Minkowski difference A - B with the support point on A it came from (the one
// on B is a - w: not stored, EPA keeps dozens of these in fixed arrays on the device stack).
struct SupportVertex {
  Vec3 w;  // a - b
  Vec3 a;  // on core A, world frame
};

AXION_HD SupportVertex minkowski_support(const Core& a, const Core& b, Vec3 d) {
  SupportVertex s;
  s.a = core_support(a, d);
  s.w = s.a - core_support(b, -d);
  return s;
}

// Simplex with barycentric weights of its point closest to the origin.
struct Simplex {
  SupportVertex v[4];
  Real lambda[4] = {0, 0, 0, 0};
  int count = 0;
};

AXION_HD Simplex simplex1(const SupportVertex& a) {
  Simplex s;
  s.v[0] = a;
  s.lambda[0] = 1;
  s.count = 1;
  return s;
}
AXION_HD Simplex simplex2(const SupportVertex& a, const SupportVertex& b, Real la, Real lb) {
  Simplex s;
  s.v[0] = a;
  s.v[1] = b;
  s.lambda[0] = la;
  s.lambda[1] = lb;
  s.count = 2;
  return s;
}
AXION_HD Simplex simplex3(const SupportVertex& a, const SupportVertex& b, const SupportVertex& c,
                          Real la, Real lb, Real lc) {
  Simplex s;
  s.v[0] = a;
  s.v[1] = b;
  s.v[2] = c;
  s.lambda[0] = la;
  s.lambda[1] = lb;
  s.lambda[2] = lc;
  s.count = 3;
  return s;
}

AXION_HD Vec3 simplex_point(const Simplex& s) {
  Vec3 p;
  for (int i = 0; i < s.count; ++i) p += s.lambda[i] * s.v[i].w;
  return p;
}

// Smallest sub-simplex of segment ab holding its point closest to the origin.
AXION_HD Simplex closest_on_segment(const SupportVertex& a, const SupportVertex& b) {
  Vec3 ab = b.w - a.w;
  Real denom = dot(ab, ab);
  Real t = denom > 0 ? -dot(a.w, ab) / denom : Real(0);
  if (t <= 0) return simplex1(a);
  if (t >= 1) return simplex1(b);
  return simplex2(a, b, 1 - t, t);
}

// Smallest sub-simplex of triangle abc holding its point closest to the origin, by Voronoi
// regions (Ericson, "Real-Time Collision Detection", 5.1.5).
AXION_HD Simplex closest_on_triangle(const SupportVertex& a, const SupportVertex& b,
                                     const SupportVertex& c) {
  Vec3 ab = b.w - a.w, ac = c.w - a.w;
  Vec3 ap = -a.w;
  Real d1 = dot(ab, ap), d2 = dot(ac, ap);
  if (d1 <= 0 && d2 <= 0) return simplex1(a);
  Vec3 bp = -b.w;
  Real d3 = dot(ab, bp), d4 = dot(ac, bp);
  if (d3 >= 0 && d4 <= d3) return simplex1(b);
  Real vc = d1 * d4 - d3 * d2;
  if (vc <= 0 && d1 >= 0 && d3 <= 0) {
    Real t = d1 / (d1 - d3);
    return simplex2(a, b, 1 - t, t);
  }
  Vec3 cp = -c.w;
  Real d5 = dot(ab, cp), d6 = dot(ac, cp);
  if (d6 >= 0 && d5 <= d6) return simplex1(c);
  Real vb = d5 * d2 - d1 * d6;
  if (vb <= 0 && d2 >= 0 && d6 <= 0) {
    Real t = d2 / (d2 - d6);
    return simplex2(a, c, 1 - t, t);
  }
  Real va = d3 * d6 - d5 * d4;
  if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
    Real t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    return simplex2(b, c, 1 - t, t);
  }
  Real sum = va + vb + vc;
  if (!(sum > 0)) {
    // Degenerate (collinear) triangle that slipped through the region tests: best edge.
    Simplex e[3] = {closest_on_segment(a, b), closest_on_segment(b, c), closest_on_segment(a, c)};
    int best = 0;
    Real best_d = length_sq(simplex_point(e[0]));
    for (int i = 1; i < 3; ++i) {
      Real d = length_sq(simplex_point(e[i]));
      if (d < best_d) {
        best_d = d;
        best = i;
      }
    }
    return e[best];
  }
  Real v = vb / sum, w = vc / sum;
  return simplex3(a, b, c, 1 - v - w, v, w);
}

// Smallest sub-simplex of tetrahedron abcd holding its point closest to the origin; sets
// *inside when the tetrahedron contains the origin (Ericson 5.1.6). `tiny` is a length.
AXION_HD Simplex closest_on_tetrahedron(const Simplex& s, Real tiny, bool* inside) {
  // faces and the vertex opposite each
  const int faces[4][4] = {{0, 1, 2, 3}, {0, 2, 3, 1}, {0, 3, 1, 2}, {1, 3, 2, 0}};
  *inside = true;
  Simplex best = s;
  Real best_d = 0;
  bool have_best = false;
  for (int f = 0; f < 4; ++f) {
    const SupportVertex& p = s.v[faces[f][0]];
    const SupportVertex& q = s.v[faces[f][1]];
    const SupportVertex& r = s.v[faces[f][2]];
    const SupportVertex& o = s.v[faces[f][3]];
    Vec3 n = cross(q.w - p.w, r.w - p.w);
    Real side_origin = -dot(p.w, n);
    Real side_opposite = dot(o.w - p.w, n);
    // A flat tetrahedron has no inside: every face is a candidate.
    bool flat = std::fabs(side_opposite) <= tiny * norm(n);
    if (!flat && side_origin * side_opposite >= 0) continue;
    *inside = false;
    Simplex sub = closest_on_triangle(p, q, r);
    Real d = length_sq(simplex_point(sub));
    if (!have_best || d < best_d) {
      best = sub;
      best_d = d;
      have_best = true;
    }
  }
  return best;
}

struct GjkResult {
  bool overlap = false;   // cores intersect or touch (closer than kTouch * scale)
  bool apart = false;     // the early-out fired: the cores are further apart than early_out
  Real distance = 0;      // core distance (a lower bound when the early-out fired)
  Vec3 point_a, point_b;  // closest points of the cores when separated
  Simplex simplex;        // last simplex, the seed of EPA when overlapping
};

// Distance between cores a and b. `scale` sets the tolerances; once the distance is known to
// exceed `early_out` the search stops.
AXION_HD GjkResult gjk_distance(const Core& a, const Core& b, Real scale, Real early_out) {
  GjkResult r;
  Vec3 d = a.pos - b.pos;
  if (length_sq(d) <= (kTiny * scale) * (kTiny * scale)) d = {1, 0, 0};
  Simplex s = simplex1(minkowski_support(a, b, -d));
  Vec3 v = s.v[0].w;
  Real touch_sq = (kTouch * scale) * (kTouch * scale);
  Real tiny_sq = (kTiny * scale) * (kTiny * scale);
  for (int iter = 0; iter < kGjkMaxIterations; ++iter) {
    Real vv = dot(v, v);
    if (vv <= touch_sq) {
      r.overlap = true;
      break;
    }
    SupportVertex w = minkowski_support(a, b, -v);
    Real vw = dot(v, w.w);
    // v.w / |v| is a lower bound on the distance.
    if (vw > 0 && vw * vw > early_out * early_out * vv) {
      r.apart = true;
      r.distance = vw / std::sqrt(vv);
      r.simplex = s;
      return r;
    }
    if (vv - vw <= kGjkRelTol * vv) break;
    bool duplicate = false;
    for (int i = 0; i < s.count; ++i) duplicate |= length_sq(w.w - s.v[i].w) <= tiny_sq;
    if (duplicate) break;
    s.v[s.count] = w;
    s.count += 1;
    Simplex next;
    bool inside = false;
    if (s.count == 2) {
      next = closest_on_segment(s.v[0], s.v[1]);
    } else if (s.count == 3) {
      next = closest_on_triangle(s.v[0], s.v[1], s.v[2]);
    } else {
      next = closest_on_tetrahedron(s, kTiny * scale, &inside);
    }
    if (inside) {
      r.overlap = true;
      break;
    }
    Vec3 next_v = simplex_point(next);
    s = next;
    bool stalled = dot(next_v, next_v) >= vv;  // rounding floor reached
    v = next_v;
    if (stalled) break;
  }
  r.simplex = s;
  if (!r.overlap) {
    r.distance = norm(v);
    for (int i = 0; i < s.count; ++i) r.point_a += s.lambda[i] * s.v[i].a;
    r.point_b = r.point_a - v;
  }
  return r;
}

struct EpaFace {
  int32_t v[3];    // vertex indices, counter-clockwise seen from outside
  int32_t adj[3];  // face across edge v[e] -> v[(e + 1) % 3]
  Vec3 n;          // outward unit normal
  Real d = 0;      // distance of the face plane from the origin
  bool alive = false;
};

struct EpaResult {
  bool ok = false;
  Vec3 normal;            // unit, direction A must move to separate (from B towards A)
  Real depth = 0;         // penetration depth of the cores
  Vec3 point_a, point_b;  // deepest points of the cores: point_a - point_b = -depth * normal
};

// Sliver faces keep the polytope closed but are never the closest face.
inline constexpr Real kEpaSliverDistance = Real(1e30);

AXION_HD void epa_set_face(EpaFace* f, const SupportVertex* vert, int i, int j, int k,
                           Real area_tol) {
  f->v[0] = i;
  f->v[1] = j;
  f->v[2] = k;
  f->alive = true;
  Vec3 n = cross(vert[j].w - vert[i].w, vert[k].w - vert[i].w);
  Real len = norm(n);
  f->n = len > 0 ? (Real(1) / len) * n : Vec3{};
  f->d = len > area_tol ? dot(f->n, vert[i].w) : kEpaSliverDistance;
}

AXION_HD Real tetra_volume6(const SupportVertex* v) {
  return dot(v[1].w - v[0].w, cross(v[2].w - v[0].w, v[3].w - v[0].w));
}

// Index of the edge x -> y in face f, or -1.
AXION_HD int epa_edge_index(const EpaFace& f, int x, int y) {
  for (int e = 0; e < 3; ++e) {
    if (f.v[e] == x && f.v[(e + 1) % 3] == y) return e;
  }
  return -1;
}

// Penetration of overlapping cores, seeded with GJK's final simplex. Stops when the polytope
// grows by less than `tolerance` (a length) or runs out of room; curved cores (cylinders) then
// need refine_penetration() for an accurate normal.
AXION_HD EpaResult epa_penetration(const Core& a, const Core& b, const Simplex& seed, Real scale,
                                   Real tolerance) {
  EpaResult result;
  SupportVertex vert[kEpaMaxVertices];
  int nv = 0;
  for (int i = 0; i < seed.count; ++i) vert[nv++] = seed.v[i];
  const Real tiny = kTiny * scale;
  const Real volume_tol = kTiny * scale * scale * scale;

  // grow the seed to a tetrahedron of non-zero volume
  for (int pass = 0; pass < 8; ++pass) {
    if (nv == 4 && std::fabs(tetra_volume6(vert)) > volume_tol) break;
    if (nv == 4) nv = 3;
    if (nv == 3 && norm(cross(vert[1].w - vert[0].w, vert[2].w - vert[0].w)) <= tiny * scale) {
      nv = 2;
    }
    if (nv == 2 && norm(vert[1].w - vert[0].w) <= tiny) nv = 1;
    if (nv == 0) {
      vert[nv++] = minkowski_support(a, b, Vec3{1, 0, 0});
    } else if (nv == 1) {
      for (int k = 0; k < 6; ++k) {
        Vec3 d;
        d[k / 2] = (k % 2 == 0) ? Real(1) : Real(-1);
        SupportVertex s = minkowski_support(a, b, d);
        if (norm(s.w - vert[0].w) > tiny) {
          vert[nv++] = s;
          break;
        }
      }
    } else if (nv == 2) {
      Vec3 u = vert[1].w - vert[0].w;
      Vec3 t1, t2;
      orthonormal_basis(normalized(u), &t1, &t2);
      for (int k = 0; k < 6; ++k) {
        Real angle = kPi * Real(k) / Real(3);
        SupportVertex s = minkowski_support(a, b, std::cos(angle) * t1 + std::sin(angle) * t2);
        if (norm(cross(u, s.w - vert[0].w)) > tiny * norm(u)) {
          vert[nv++] = s;
          break;
        }
      }
    } else if (nv == 3) {
      Vec3 n = cross(vert[1].w - vert[0].w, vert[2].w - vert[0].w);
      for (int k = 0; k < 2; ++k) {
        SupportVertex s = minkowski_support(a, b, k == 0 ? n : -n);
        if (std::fabs(dot(n, s.w - vert[0].w)) > tiny * norm(n)) {
          vert[nv++] = s;
          break;
        }
      }
    }
  }
  if (nv < 4 || std::fabs(tetra_volume6(vert)) <= volume_tol) return result;

  const Real area_tol = tiny * scale;
  EpaFace face[kEpaMaxFaces];
  int face_used = 4;  // slots ever used
  int free_list[kEpaMaxFaces];
  int free_count = 0;  // dead slots, reused last-in first-out
  {
    // orient each face of the tetrahedron away from its centroid, then link neighbours
    const int init[4][3] = {{0, 1, 2}, {0, 3, 1}, {0, 2, 3}, {1, 3, 2}};
    Vec3 centroid = Real(0.25) * (vert[0].w + vert[1].w + vert[2].w + vert[3].w);
    for (int f = 0; f < 4; ++f) {
      int i = init[f][0], j = init[f][1], k = init[f][2];
      if (dot(cross(vert[j].w - vert[i].w, vert[k].w - vert[i].w), vert[i].w - centroid) < 0) {
        int t = j;
        j = k;
        k = t;
      }
      epa_set_face(&face[f], vert, i, j, k, area_tol);
    }
    for (int f = 0; f < 4; ++f) {
      for (int e = 0; e < 3; ++e) {
        face[f].adj[e] = -1;
        for (int g = 0; g < 4; ++g) {
          if (g != f && epa_edge_index(face[g], face[f].v[(e + 1) % 3], face[f].v[e]) >= 0) {
            face[f].adj[e] = g;
          }
        }
      }
    }
  }

  bool visible[kEpaMaxFaces];
  int stack[kEpaMaxFaces];
  int horizon_x[kEpaMaxFaces], horizon_y[kEpaMaxFaces], horizon_outer[kEpaMaxFaces];
  int horizon_face[kEpaMaxFaces];
  int best = 0;
  for (int iter = 0; iter < kEpaMaxVertices; ++iter) {
    best = -1;
    for (int f = 0; f < face_used; ++f) {
      if (face[f].alive && (best < 0 || face[f].d < face[best].d)) best = f;
    }
    if (best < 0 || face[best].d >= kEpaSliverDistance) return result;
    SupportVertex s = minkowski_support(a, b, face[best].n);
    if (dot(s.w, face[best].n) - face[best].d <= tolerance) break;
    if (nv == kEpaMaxVertices) break;

    // faces seen from the new vertex, grown from the closest face so the set stays connected
    for (int f = 0; f < face_used; ++f) visible[f] = false;
    int top = 0;
    visible[best] = true;
    stack[top++] = best;
    int nh = 0;
    bool broken = false;
    while (top > 0 && !broken) {
      int f = stack[--top];
      for (int e = 0; e < 3; ++e) {
        int g = face[f].adj[e];
        if (g < 0) {
          broken = true;
          break;
        }
        if (visible[g]) continue;
        if (face[g].d < kEpaSliverDistance ? dot(face[g].n, s.w - vert[face[g].v[0]].w) > tiny
                                           : false) {
          visible[g] = true;
          stack[top++] = g;
        }
      }
    }
    // horizon: edges of visible faces whose neighbour stays
    for (int f = 0; f < face_used && !broken; ++f) {
      if (!face[f].alive || !visible[f]) continue;
      for (int e = 0; e < 3; ++e) {
        int g = face[f].adj[e];
        if (visible[g]) continue;
        horizon_x[nh] = face[f].v[e];
        horizon_y[nh] = face[f].v[(e + 1) % 3];
        horizon_outer[nh] = g;
        ++nh;
      }
    }
    // room for the new faces: dead visible faces are reused
    int n_visible = 0;
    for (int f = 0; f < face_used; ++f) n_visible += (face[f].alive && visible[f]) ? 1 : 0;
    if (broken || nh < 3 || nh > free_count + n_visible + (kEpaMaxFaces - face_used)) break;
    // every horizon vertex starts exactly one horizon edge (a simple loop)
    for (int i = 0; i < nh && !broken; ++i) {
      for (int j = i + 1; j < nh; ++j) broken |= horizon_x[i] == horizon_x[j];
    }
    if (broken) break;

    int p = nv;
    vert[nv++] = s;
    for (int f = 0; f < face_used; ++f) {
      if (face[f].alive && visible[f]) {
        face[f].alive = false;
        free_list[free_count++] = f;
      }
    }
    for (int h = 0; h < nh; ++h) {
      int slot = free_count > 0 ? free_list[--free_count] : face_used++;
      horizon_face[h] = slot;
      epa_set_face(&face[slot], vert, horizon_x[h], horizon_y[h], p, area_tol);
      int outer = horizon_outer[h];
      face[slot].adj[0] = outer;
      face[outer].adj[epa_edge_index(face[outer], horizon_y[h], horizon_x[h])] = slot;
    }
    // new faces around p: edge y -> p of one meets edge p -> x of the next (x_next = y)
    for (int h = 0; h < nh; ++h) {
      for (int k = 0; k < nh; ++k) {
        if (horizon_x[k] == horizon_y[h]) {
          face[horizon_face[h]].adj[1] = horizon_face[k];
          face[horizon_face[k]].adj[2] = horizon_face[h];
        }
      }
    }
  }
  best = -1;
  for (int f = 0; f < face_used; ++f) {
    if (face[f].alive && (best < 0 || face[f].d < face[best].d)) best = f;
  }
  if (best < 0 || face[best].d >= kEpaSliverDistance) return result;
  const EpaFace& f = face[best];

  // barycentric coordinates of the origin's projection onto the closest face
  const SupportVertex& vi = vert[f.v[0]];
  const SupportVertex& vj = vert[f.v[1]];
  const SupportVertex& vk = vert[f.v[2]];
  Vec3 proj = f.d * f.n;
  Vec3 e0 = vj.w - vi.w, e1 = vk.w - vi.w, e2 = proj - vi.w;
  Real d00 = dot(e0, e0), d01 = dot(e0, e1), d11 = dot(e1, e1);
  Real d20 = dot(e2, e0), d21 = dot(e2, e1);
  Real denom = d00 * d11 - d01 * d01;
  Real lj = 0, lk = 0;
  if (denom > 0) {
    lj = (d11 * d20 - d01 * d21) / denom;
    lk = (d00 * d21 - d01 * d20) / denom;
  }
  Real li = 1 - lj - lk;
  result.ok = true;
  result.normal = -f.n;
  result.depth = f.d;
  result.point_a = li * vi.a + lj * vj.a + lk * vk.a;
  result.point_b = result.point_a - proj;
  return result;
}

// Overlap of the cores along unit direction n (B towards A): how far A must move along n to
// separate. The penetration depth is its minimum over all directions.
AXION_HD Real overlap_along(const Core& a, const Core& b, Vec3 n) {
  return dot(core_support(b, n) - core_support(a, -n), n);
}

// Sharpens the penetration normal of curved cores, where EPA's polytope converges only linearly
// (and underestimates the depth, being inscribed): move a out along the normal until the cores
// are `apart` apart, and let GJK find the closest points, whose direction is the surface
// normal nearest the old one. On a smooth surface of curvature radius R each round shrinks the
// normal's error by about (depth + apart) / (R + apart): fast for shallow overlaps, useless
// for deep ones or at sharp rims, where it returns false and the caller needs a finer EPA. The
// direction of GJK's closest points is itself only good to about sqrt(rounding / apart), which
// is why `apart` is not tiny. A round is kept only if it lowers the overlap along the normal,
// whose minimum over all directions is the true depth. On return the depth is exactly the
// overlap along the normal, and point_a - point_b = -depth * normal.
AXION_HD bool refine_penetration(const Core& a, const Core& b, Real scale, EpaResult* r) {
  const Real apart = Real(1e-2) * scale;
  const Real converged = Real(1e-6);  // normal change (radians) of a settled round
  Real overlap = overlap_along(a, b, r->normal);
  r->depth = overlap;
  r->point_a = r->point_b - overlap * r->normal;
  for (int round = 0; round < 8; ++round) {
    Real shift = overlap + apart;
    Core moved = a;
    moved.pos = a.pos + shift * r->normal;
    GjkResult g = gjk_distance(moved, b, scale, Real(1e30));
    if (g.overlap || !(g.distance > 0)) return false;
    Vec3 n = (Real(1) / g.distance) * (g.point_a - g.point_b);
    Real change = norm(n - r->normal);
    Real depth = overlap_along(a, b, n);
    if (!(depth < overlap)) {
      // No better normal: settled when the round barely moved it, and then GJK's closest
      // points are still better witnesses than the coarse polytope's.
      if (change > converged) return false;
      r->point_b = g.point_b;
      r->point_a = g.point_b - overlap * r->normal;
      return true;
    }
    // The closest points are good to GJK's tolerance only: point_a moves along the normal (by
    // a rounding-level amount) so that the gap is exactly the overlap along n.
    Vec3 pa = g.point_a - shift * r->normal;
    r->normal = n;
    r->depth = depth;
    r->point_b = g.point_b;
    r->point_a = pa - (dot(pa - g.point_b, n) + depth) * n;
    overlap = depth;
    if (change <= kTouch) return true;
  }
  return false;
}

}  // namespace narrowphase
}  // namespace axion
