// Definitions of collide_shapes() and shape_aabb() (declared in collision/collision.h, which
// includes this file after ShapeGeom and ContactPoint).
//
// How a pair is handled:
//  - plane - X: the core's extreme points below the plane (sphere: 1, capsule: 2 ends, box: 8
//    corners, cylinder: 4 rim points per cap, hull: vertices), deepest or most spread 4.
//  - sphere - X and capsule - capsule: closed-form closest points on the cores.
//  - everything else: GJK distance between the cores when they are apart, EPA (box-box: SAT;
//    cylinders: a coarse EPA sharpened by GJK rounds) when they overlap, which gives the
//    contact normal; then a manifold from the features of both shapes along that normal: a
//    face clips the other shape's face or edge (Sutherland-Hodgman), two parallel edges
//    overlap into two points, anything else is the single closest (or deepest) pair.
// Sphere and capsule are a point and a segment inflated by their radius, so their distance is
// exact and deep overlaps stay well defined.
#pragma once

#include "collision/gjk_epa.h"
#include "collision/shape_support.h"

namespace axion {
namespace narrowphase {

// Candidate points of a manifold before reduction: an incident polygon of kMaxFeatureVertices
// clipped by as many edge planes gains at most one vertex per plane.
inline constexpr int kMaxClipVertices = 2 * kMaxFeatureVertices;
// Box-box SAT prefers a face axis unless an edge axis separates more by this (relative to the
// pair's scale): face manifolds are what keeps stacks still.
inline constexpr Real kSatEdgeBias = Real(1e-5);
// Manifold candidates whose gaps differ by less than this (relative to the pair's scale) are
// equally deep when picking the first point to keep.
inline constexpr Real kDepthTie = Real(1e-6);
// Overlaps of curved cores up to this (relative to the pair's scale) trust the coarse EPA plus
// refine_penetration(); deeper ones run the fine EPA too.
inline constexpr Real kShallowDepth = Real(0.02);

// `framed`: with the shape's rotation (a sphere against a sphere or a plane never reads it, and
// those are most of a pile's pairs). Every field is given its value at once: `Core c;` and then
// assignments zeroed the whole struct first, a `rep stos` whose start-up took half of
// collide_shapes on a pile of spheres.
AXION_HD Core make_core(const ShapeGeom& g, Vec3 pos, Quat quat, bool framed = true) {
  const Real radius = (g.type == kTypeSphere || g.type == kTypeCapsule) ? g.size.x : Real(0);
  return Core{g.type,
              pos,
              framed ? quat_to_mat(quat) : Mat33{},
              g.size,
              radius,
              g.hull_vertices,
              g.hull_vertex_count,
              g.hull_faces,
              g.hull_face_offset,
              g.hull_face_plane,
              g.hull_face_count,
              g.hull_edge_offset,
              g.hull_edge_vertex,
              g.hull_edge_face,
              g.hull_climb_start,
              g.hull_radius};
}

// Length scale of a pair for tolerances: the shapes' sizes, plus a term for coordinates far
// from the origin, whose rounding error sets the attainable accuracy.
AXION_HD Real pair_scale(const Core& a, const Core& b) {
  Real size = core_bounding_radius(a) + a.radius + core_bounding_radius(b) + b.radius;
  Real far = rmax(rmax(std::fabs(a.pos.x), std::fabs(a.pos.y)),
                  rmax(rmax(std::fabs(a.pos.z), std::fabs(b.pos.x)),
                       rmax(std::fabs(b.pos.y), std::fabs(b.pos.z))));
  return size + Real(1e-3) * far + kTiny;
}

AXION_HD ContactPoint make_contact(Vec3 point_a, Vec3 point_b, Vec3 normal, Real gap) {
  ContactPoint c;
  c.point_a = point_a;
  c.point_b = point_b;
  c.normal = normal;
  c.gap = gap;
  return c;
}

// Contact between core points pa (on A) and pb (on B) along unit normal n (B towards A).
AXION_HD ContactPoint core_contact(Vec3 pa, Real ra, Vec3 pb, Real rb, Vec3 n) {
  return make_contact(pa - ra * n, pb + rb * n, n, dot(pa - pb, n) - ra - rb);
}

AXION_HD Vec3 contact_mid(const ContactPoint& c) { return Real(0.5) * (c.point_a + c.point_b); }

// Up to 4 of `count` candidates (gap < margin already) spanning the largest area: the deepest,
// the farthest from it, the one making the largest triangle, the one farthest outside that
// triangle. Coincident candidates count once. Returns the number written to `out`.
AXION_HD int reduce_contacts(const ContactPoint* cand, int count, Real tiny, Real depth_tol,
                             ContactPoint* out) {
  int idx[kMaxClipVertices + 1];
  int m = 0;
  for (int i = 0; i < count && m < kMaxClipVertices + 1; ++i) {
    bool duplicate = false;
    for (int j = 0; j < m; ++j) {
      duplicate |= length_sq(contact_mid(cand[i]) - contact_mid(cand[idx[j]])) <= tiny * tiny;
    }
    if (!duplicate) idx[m++] = i;
  }
  if (m <= kMaxPairContacts) {
    for (int i = 0; i < m; ++i) out[i] = cand[idx[i]];
    return m;
  }
  // First the deepest; candidates equally deep up to `depth_tol` (a face resting flat) are told
  // apart by their distance from the centroid, so the pick is a corner, not an edge point that
  // happens to be deeper by rounding.
  Real min_gap = cand[idx[0]].gap;
  Vec3 centroid;
  for (int i = 0; i < m; ++i) {
    min_gap = rmin(min_gap, cand[idx[i]].gap);
    centroid += contact_mid(cand[idx[i]]);
  }
  centroid = (Real(1) / Real(m)) * centroid;
  int chosen[4];
  chosen[0] = -1;
  Real best = 0;
  for (int i = 0; i < m; ++i) {
    if (cand[idx[i]].gap > min_gap + depth_tol) continue;
    Real d = length_sq(contact_mid(cand[idx[i]]) - centroid);
    if (chosen[0] < 0 || d > best) {
      best = d;
      chosen[0] = idx[i];
    }
  }
  Vec3 p0 = contact_mid(cand[chosen[0]]);
  chosen[1] = -1;
  best = tiny * tiny;
  for (int i = 0; i < m; ++i) {
    Real d = length_sq(contact_mid(cand[idx[i]]) - p0);
    if (d > best) {
      best = d;
      chosen[1] = idx[i];
    }
  }
  out[0] = cand[chosen[0]];
  if (chosen[1] < 0) return 1;
  out[1] = cand[chosen[1]];
  Vec3 p1 = contact_mid(cand[chosen[1]]);
  chosen[2] = -1;
  best = tiny * std::sqrt(best);
  for (int i = 0; i < m; ++i) {
    Real area = norm(cross(p1 - p0, contact_mid(cand[idx[i]]) - p0));
    if (area > best) {
      best = area;
      chosen[2] = idx[i];
    }
  }
  if (chosen[2] < 0) return 2;
  out[2] = cand[chosen[2]];
  Vec3 p2 = contact_mid(cand[chosen[2]]);
  Vec3 tri_n = cross(p1 - p0, p2 - p0);
  Vec3 tri[3] = {p0, p1, p2};
  chosen[3] = -1;
  best = 0;
  for (int i = 0; i < m; ++i) {
    Vec3 p = contact_mid(cand[idx[i]]);
    Real outside = 0;
    for (int k = 0; k < 3; ++k) {
      Vec3 e = tri[(k + 1) % 3] - tri[k];
      outside = rmax(outside, -dot(cross(e, p - tri[k]), tri_n));
    }
    if (outside > best) {
      best = outside;
      chosen[3] = idx[i];
    }
  }
  if (chosen[3] < 0) return 3;
  out[3] = cand[chosen[3]];
  return 4;
}

// Keeps the `count` candidates with the smallest gaps (at most kMaxPairContacts), in order of
// depth; ties keep candidate order.
AXION_HD int deepest_contacts(ContactPoint* cand, int count, ContactPoint* out) {
  // selection sort of the first kMaxPairContacts entries: stable and allocation free
  int n = count < kMaxPairContacts ? count : kMaxPairContacts;
  for (int i = 0; i < n; ++i) {
    int best = i;
    for (int j = i + 1; j < count; ++j) {
      if (cand[j].gap < cand[best].gap) best = j;
    }
    ContactPoint t = cand[best];
    for (int j = best; j > i; --j) cand[j] = cand[j - 1];
    cand[i] = t;
    out[i] = cand[i];
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// plane - X (the plane is b; a is never a plane)

// Contact of core point x (radius r) with the plane (unit normal n through plane_point).
AXION_HD ContactPoint plane_point_contact(Vec3 x, Real r, Vec3 n, Vec3 plane_point) {
  Real dist = dot(x - plane_point, n);
  return make_contact(x - r * n, x - dist * n, n, dist - r);
}

AXION_HD int collide_plane(const Core& a, const Core& plane, Real margin, ContactPoint* out) {
  Vec3 n = column(plane.rot, 2);
  Vec3 o = plane.pos;
  ContactPoint cand[8];
  int m = 0;
  switch (a.type) {
    case kTypeSphere: {
      ContactPoint c = plane_point_contact(a.pos, a.radius, n, o);
      if (c.gap < margin) out[m++] = c;
      return m;
    }
    case kTypeCapsule: {
      Vec3 axis = column(a.rot, 2);
      int ends = a.size.y > 0 ? 2 : 1;
      for (int k = 0; k < ends; ++k) {
        Real s = ends == 1 ? Real(0) : (k == 0 ? -a.size.y : a.size.y);
        ContactPoint c = plane_point_contact(a.pos + s * axis, a.radius, n, o);
        if (c.gap < margin) out[m++] = c;
      }
      return m;
    }
    case kTypeBox: {
      for (int k = 0; k < 8; ++k) {
        Vec3 corner{(k & 1) ? a.size.x : -a.size.x, (k & 2) ? a.size.y : -a.size.y,
                    (k & 4) ? a.size.z : -a.size.z};
        ContactPoint c = plane_point_contact(to_world(a, corner), 0, n, o);
        if (c.gap < margin) cand[m++] = c;
      }
      return deepest_contacts(cand, m, out);
    }
    case kTypeCylinder: {
      Vec3 axis = column(a.rot, 2);
      // rim points: the deepest one of each cap and three more at quarter turns; a cylinder
      // standing on the plane rests on four of them, one lying on it on two
      Vec3 w = dot(n, axis) * axis - n;
      Real w_len = norm(w);
      Vec3 u0, u1;
      if (w_len > kFeatureSin) {
        u0 = (Real(1) / w_len) * w;
        u1 = cross(axis, u0);
      } else {
        u0 = column(a.rot, 0);
        u1 = column(a.rot, 1);
      }
      Vec3 dirs[4] = {u0, u1, -u0, -u1};
      for (int cap = 0; cap < 2; ++cap) {
        Vec3 centre = a.pos + (cap == 0 ? -a.size.y : a.size.y) * axis;
        for (int k = 0; k < 4; ++k) {
          ContactPoint c = plane_point_contact(centre + a.size.x * dirs[k], 0, n, o);
          if (c.gap < margin) cand[m++] = c;
        }
      }
      return deepest_contacts(cand, m, out);
    }
    case kTypeHull: {
      // Streamed selection over the vertices within the margin (no buffer of all of them): the
      // deepest, the farthest from it, the largest triangle, the farthest outside the triangle.
      // A large hull finds the deepest by climbing and the others among the vertices it reaches
      // from there through vertices within the margin (all of them: those of a convex
      // polyhedron below a plane are connected), read from `near` while they fit there.
      int chosen[4] = {-1, -1, -1, -1};
      Real best = 0;
      int near[kHullPlaneVertices];
      int near_count = -1;  // -1: read every vertex
      if (hull_climbs(a)) {
        chosen[0] = hull_support_index(a, mul_transpose(a.rot, -n));
        if (!(dot(to_world(a, hull_vertex(a, chosen[0])) - o, n) < margin)) return 0;
        near[0] = chosen[0];
        near_count = 1;
        for (int k = 0; k < near_count && near_count > 0; ++k) {
          for (int e = a.hull_edge_offset[near[k]]; e < a.hull_edge_offset[near[k] + 1]; ++e) {
            const int i = a.hull_edge_vertex[e];
            if (!(dot(to_world(a, hull_vertex(a, i)) - o, n) < margin)) continue;
            bool seen = false;
            for (int j = 0; j < near_count && !seen; ++j) seen = near[j] == i;
            if (seen) continue;
            if (near_count == kHullPlaneVertices) {
              near_count = -1;  // too many: read every vertex
              break;
            }
            near[near_count++] = i;
          }
        }
      } else {
        for (int i = 0; i < a.hull_vertex_count; ++i) {
          Real gap = dot(to_world(a, hull_vertex(a, i)) - o, n);
          if (gap < margin && (chosen[0] < 0 || gap < best)) {
            best = gap;
            chosen[0] = i;
          }
        }
        if (chosen[0] < 0) return 0;
      }
      const int candidates = near_count >= 0 ? near_count : a.hull_vertex_count;
      Real tiny = kTiny * pair_scale(a, a);
      Vec3 p[4];
      p[0] = to_world(a, hull_vertex(a, chosen[0]));
      int found = 1;
      for (int step = 1; step < 4 && found == step; ++step) {
        Vec3 tri_n = cross(p[1] - p[0], p[2] - p[0]);
        best = step == 1 ? tiny * tiny : (step == 2 ? tiny * norm(p[1] - p[0]) : Real(0));
        for (int slot = 0; slot < candidates; ++slot) {
          const int i = near_count >= 0 ? near[slot] : slot;
          Vec3 x = to_world(a, hull_vertex(a, i));
          if (dot(x - o, n) >= margin) continue;
          Real score;
          if (step == 1) {
            score = length_sq(x - p[0]);
          } else if (step == 2) {
            score = norm(cross(p[1] - p[0], x - p[0]));
          } else {
            score = 0;
            for (int k = 0; k < 3; ++k) {
              score = rmax(score, -dot(cross(p[(k + 1) % 3] - p[k], x - p[k]), tri_n));
            }
          }
          if (score > best) {
            best = score;
            chosen[step] = i;
          }
        }
        if (chosen[step] >= 0) {
          p[step] = to_world(a, hull_vertex(a, chosen[step]));
          ++found;
        }
      }
      for (int k = 0; k < found; ++k) out[k] = plane_point_contact(p[k], 0, n, o);
      return found;
    }
    default:
      return 0;
  }
}

// ---------------------------------------------------------------------------------------------
// closed forms with a point or segment core

// Contact of two inflated points; `fallback` is the normal when the centres coincide.
AXION_HD int point_point(Vec3 pa, Real ra, Vec3 pb, Real rb, Vec3 fallback, Real tiny, Real margin,
                         ContactPoint* out) {
  Vec3 d = pa - pb;
  Real dist = norm(d);
  if (dist - ra - rb >= margin) return 0;
  Vec3 n = dist > tiny ? (Real(1) / dist) * d : fallback;
  out[0] = core_contact(pa, ra, pb, rb, n);
  return 1;
}

AXION_HD Vec3 segment_closest(Vec3 centre, Vec3 axis, Real half, Vec3 p) {
  return centre + rclamp(dot(p - centre, axis), -half, half) * axis;
}

// Closest points of segments p1 + s d1 and p2 + t d2, s, t in [0, 1] (Ericson 5.1.9).
AXION_HD void segments_closest(Vec3 p1, Vec3 d1, Vec3 p2, Vec3 d2, Real tiny_sq, Real* s_out,
                               Real* t_out) {
  Vec3 r = p1 - p2;
  Real a = dot(d1, d1), e = dot(d2, d2), f = dot(d2, r);
  Real s = 0, t = 0;
  if (a <= tiny_sq && e <= tiny_sq) {
    s = t = 0;
  } else if (a <= tiny_sq) {
    t = rclamp(f / e, 0, 1);
  } else {
    Real c = dot(d1, r);
    if (e <= tiny_sq) {
      s = rclamp(-c / a, 0, 1);
    } else {
      Real b = dot(d1, d2);
      Real denom = a * e - b * b;
      s = denom > tiny_sq * (a + e) ? rclamp((b * f - c * e) / denom, 0, 1) : Real(0);
      t = (b * s + f) / e;
      if (t < 0) {
        t = 0;
        s = rclamp(-c / a, 0, 1);
      } else if (t > 1) {
        t = 1;
        s = rclamp((b - c) / a, 0, 1);
      }
    }
  }
  *s_out = s;
  *t_out = t;
}

// Two points where segments a0a1 and b0b1 (cores of radius ra, rb) run parallel and overlap,
// with common normal n; 0 when they are not parallel or do not overlap along their length.
AXION_HD int parallel_segments(Vec3 a0, Vec3 a1, Real ra, Vec3 b0, Vec3 b1, Real rb, Vec3 n,
                               Real tiny, ContactPoint* cand) {
  Vec3 ua = a1 - a0, ub = b1 - b0;
  Real la = norm(ua), lb = norm(ub);
  if (la <= tiny || lb <= tiny) return 0;
  if (norm(cross(ua, ub)) > kFeatureSin * la * lb) return 0;
  Real t0 = dot(b0 - a0, ua) / (la * la), t1 = dot(b1 - a0, ua) / (la * la);
  Real lo = rmax(Real(0), rmin(t0, t1)), hi = rmin(Real(1), rmax(t0, t1));
  if ((hi - lo) * la <= tiny) return 0;
  Vec3 ub_unit = (Real(1) / lb) * ub;
  Vec3 b_mid = Real(0.5) * (b0 + b1);
  for (int k = 0; k < 2; ++k) {
    Vec3 qa = a0 + (k == 0 ? lo : hi) * ua;
    Vec3 qb = segment_closest(b_mid, ub_unit, Real(0.5) * lb, qa);
    cand[k] = core_contact(qa, ra, qb, rb, n);
  }
  return 2;
}

// Drops candidates at or beyond the margin, adds the single closest (or deepest) contact `base`
// when the features missed it by more than a rounding-level depth (a tilted face overhanging
// an edge), and reduces the rest to a manifold. `base_on_surfaces` says whether base's points
// lie on the shapes (closest points from GJK or EPA do; a SAT face axis only gives a depth, so
// then base stands in only when clipping left nothing). `cand` has room for one more than `m`.
AXION_HD int finish_contacts(ContactPoint* cand, int m, const ContactPoint& base,
                             bool base_on_surfaces, Real margin, Real scale, ContactPoint* out) {
  int kept = 0;
  Real min_gap = margin;
  for (int i = 0; i < m; ++i) {
    if (!(cand[i].gap < margin)) continue;
    min_gap = rmin(min_gap, cand[i].gap);
    cand[kept++] = cand[i];
  }
  bool missed = base_on_surfaces && base.gap < min_gap - kDepthTie * scale;
  if (base.gap < margin && (kept == 0 || missed)) cand[kept++] = base;
  return reduce_contacts(cand, kept, kTiny * scale, kDepthTie * scale, out);
}

AXION_HD int collide_sphere_sphere(const Core& a, const Core& b, Real margin, ContactPoint* out) {
  return point_point(a.pos, a.radius, b.pos, b.radius, Vec3{0, 0, 1}, kTiny * pair_scale(a, b),
                     margin, out);
}

AXION_HD int collide_sphere_capsule(const Core& a, const Core& b, Real margin, ContactPoint* out) {
  Vec3 axis = column(b.rot, 2);
  Vec3 q = segment_closest(b.pos, axis, b.size.y, a.pos);
  return point_point(a.pos, a.radius, q, b.radius, column(b.rot, 0), kTiny * pair_scale(a, b),
                     margin, out);
}

AXION_HD int collide_capsule_capsule(const Core& a, const Core& b, Real margin, ContactPoint* out) {
  Real scale = pair_scale(a, b);
  Real tiny = kTiny * scale;
  Vec3 ua = column(a.rot, 2), ub = column(b.rot, 2);
  Vec3 a0 = a.pos - a.size.y * ua, a1 = a.pos + a.size.y * ua;
  Vec3 b0 = b.pos - b.size.y * ub, b1 = b.pos + b.size.y * ub;
  Real s, t;
  segments_closest(a0, a1 - a0, b0, b1 - b0, tiny * tiny, &s, &t);
  Vec3 pa = a0 + s * (a1 - a0), pb = b0 + t * (b1 - b0);
  Vec3 d = pa - pb;
  Real dist = norm(d);
  if (dist - a.radius - b.radius >= margin) return 0;
  Vec3 n;
  if (dist > tiny) {
    n = (Real(1) / dist) * d;
  } else {
    // cores touch: the common perpendicular, or across the axis when they are parallel
    Vec3 c = cross(ua, ub);
    Vec3 centre = a.pos - b.pos;
    if (norm(c) > kFeatureSin) {
      n = normalized(c);
      if (dot(n, centre) < 0) n = -n;
    } else {
      Vec3 perp = centre - dot(centre, ua) * ua;
      if (norm(perp) > tiny) {
        n = normalized(perp);
      } else {
        Vec3 t2;
        orthonormal_basis(ua, &n, &t2);
      }
    }
  }
  ContactPoint cand[3];
  int m = parallel_segments(a0, a1, a.radius, b0, b1, b.radius, n, tiny, cand);
  return finish_contacts(cand, m, core_contact(pa, a.radius, pb, b.radius, n),
                         /*base_on_surfaces=*/true, margin, scale, out);
}

AXION_HD int collide_sphere_box(const Core& a, const Core& b, Real margin, ContactPoint* out) {
  Vec3 p = to_local(b, a.pos);
  Vec3 h = b.size;
  Vec3 q{rclamp(p.x, -h.x, h.x), rclamp(p.y, -h.y, h.y), rclamp(p.z, -h.z, h.z)};
  Real tiny = kTiny * pair_scale(a, b);
  Vec3 d = p - q;
  Real dist = norm(d);
  Vec3 n_local;
  Real gap;
  if (dist > tiny) {
    gap = dist - a.radius;
    n_local = (Real(1) / dist) * d;
  } else {
    // centre inside: leave through the nearest face
    int axis = 0;
    Real depth = h.x - std::fabs(p.x);
    for (int i = 1; i < 3; ++i) {
      Real di = h[i] - std::fabs(p[i]);
      if (di < depth) {
        depth = di;
        axis = i;
      }
    }
    Real s = rsign(p[axis]);
    n_local = Vec3{};
    n_local[axis] = s;
    q = p;
    q[axis] = s * h[axis];
    gap = -depth - a.radius;
  }
  if (gap >= margin) return 0;
  Vec3 n = b.rot * n_local;
  out[0] = make_contact(a.pos - a.radius * n, to_world(b, q), n, gap);
  return 1;
}

AXION_HD int collide_sphere_cylinder(const Core& a, const Core& b, Real margin, ContactPoint* out) {
  Vec3 p = to_local(b, a.pos);
  Real radius = b.size.x, half = b.size.y;
  Real tiny = kTiny * pair_scale(a, b);
  Real rho = std::sqrt(p.x * p.x + p.y * p.y);
  Vec3 u = rho > tiny ? Vec3{p.x / rho, p.y / rho, 0} : Vec3{1, 0, 0};
  Vec3 q, n_local;
  Real gap;
  if (rho > radius || std::fabs(p.z) > half) {
    Real rq = rmin(rho, radius);
    q = Vec3{rq * u.x, rq * u.y, rclamp(p.z, -half, half)};
    Vec3 d = p - q;
    Real dist = norm(d);
    n_local = (Real(1) / dist) * d;
    gap = dist - a.radius;
  } else {
    // centre inside: leave through the cap or the side, whichever is nearer
    Real side_depth = radius - rho, cap_depth = half - std::fabs(p.z);
    if (cap_depth <= side_depth) {
      n_local = Vec3{0, 0, rsign(p.z)};
      q = Vec3{p.x, p.y, rsign(p.z) * half};
      gap = -cap_depth - a.radius;
    } else {
      n_local = u;
      q = Vec3{radius * u.x, radius * u.y, p.z};
      gap = -side_depth - a.radius;
    }
  }
  if (gap >= margin) return 0;
  Vec3 n = b.rot * n_local;
  out[0] = make_contact(a.pos - a.radius * n, to_world(b, q), n, gap);
  return 1;
}

AXION_HD int collide_sphere_hull(const Core& a, const Core& b, Real margin, ContactPoint* out) {
  Real scale = pair_scale(a, b);
  if (hull_climbs(b)) {
    // a large hull: the distance by GJK (climbing) first, and the faces read only when the
    // centre is inside or on the hull
    GjkResult g = gjk_distance(a, b, scale, margin + a.radius);
    if (!g.overlap && g.distance > kTouch * scale) {
      if (g.distance - a.radius >= margin) return 0;
      Vec3 n = (Real(1) / g.distance) * (g.point_a - g.point_b);
      out[0] = core_contact(g.point_a, a.radius, g.point_b, 0, n);
      return 1;
    }
  }
  Vec3 p = to_local(b, a.pos);
  // the face plane the centre is farthest outside of (or least inside)
  int face = 0;
  Real sep = -Real(1e30);
  for (int f = 0; f < b.hull_face_count; ++f) {
    Real s = dot(load3(b.hull_face_plane + 4 * f), p) - b.hull_face_plane[4 * f + 3];
    if (s > sep) {
      sep = s;
      face = f;
    }
  }
  // the distance is at least the largest plane separation
  if (sep - a.radius >= margin) return 0;
  if (sep > kTouch * scale && !hull_climbs(b)) {
    GjkResult g = gjk_distance(a, b, scale, margin + a.radius);
    if (!g.overlap) {
      if (g.distance - a.radius >= margin || !(g.distance > 0)) return 0;
      Vec3 n = (Real(1) / g.distance) * (g.point_a - g.point_b);
      out[0] = core_contact(g.point_a, a.radius, g.point_b, 0, n);
      return 1;
    }
  }
  // inside (or on the surface): leave through the face plane nearest the centre
  Vec3 n = b.rot * load3(b.hull_face_plane + 4 * face);
  Vec3 q = a.pos - sep * n;
  out[0] = make_contact(a.pos - a.radius * n, q, n, sep - a.radius);
  return out[0].gap < margin ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------
// general convex pairs

struct SatResult {
  Vec3 normal;          // unit, from b towards a
  Real separation = 0;  // along normal (negative: overlap)
  int axis = 0;         // 0-2: face of a, 3-5: face of b, 6-14: edge a (axis-6)/3 x edge b
};

// Separating-axis test of two boxes over the 15 candidate axes (Gottschalk et al. 1996).
AXION_HD SatResult sat_box_box(const Core& a, const Core& b, Real scale) {
  Vec3 t = a.pos - b.pos;
  SatResult face, edge;
  face.separation = edge.separation = -Real(1e30);
  edge.axis = -1;
  for (int k = 0; k < 15; ++k) {
    Vec3 axis;
    if (k < 3) {
      axis = column(a.rot, k);
    } else if (k < 6) {
      axis = column(b.rot, k - 3);
    } else {
      axis = cross(column(a.rot, (k - 6) / 3), column(b.rot, (k - 6) % 3));
      Real len = norm(axis);
      if (len < Real(1e-6)) continue;  // parallel edges: covered by the face axes
      axis = (Real(1) / len) * axis;
    }
    Real ra = 0, rb = 0;
    for (int i = 0; i < 3; ++i) {
      ra += a.size[i] * std::fabs(dot(column(a.rot, i), axis));
      rb += b.size[i] * std::fabs(dot(column(b.rot, i), axis));
    }
    Real dist = dot(t, axis);
    Real sep = std::fabs(dist) - ra - rb;
    SatResult& best = k < 6 ? face : edge;
    if (sep > best.separation) {
      best.separation = sep;
      best.normal = dist >= 0 ? axis : -axis;
      best.axis = k;
    }
  }
  if (edge.axis >= 0 && edge.separation > face.separation + kSatEdgeBias * scale) return edge;
  return face;
}

// Closest points of the core pair for a SAT axis.
AXION_HD void sat_witness(const Core& a, const Core& b, const SatResult& sat, Real tiny, Vec3* pa,
                          Vec3* pb) {
  Vec3 n = sat.normal;
  if (sat.axis < 3) {
    *pb = core_support(b, n);
    *pa = *pb + sat.separation * n;
  } else if (sat.axis < 6) {
    *pa = core_support(a, -n);
    *pb = *pa - sat.separation * n;
  } else {
    // edge of a along its axis i, edge of b along its axis j
    int i = (sat.axis - 6) / 3, j = (sat.axis - 6) % 3;
    Vec3 ea = column(a.rot, i), eb = column(b.rot, j);
    Vec3 ca = core_support(a, -n), cb = core_support(b, n);
    ca -= dot(ca - a.pos, ea) * ea;  // edge midpoints
    cb -= dot(cb - b.pos, eb) * eb;
    Vec3 a0 = ca - a.size[i] * ea, b0 = cb - b.size[j] * eb;
    Real s, t;
    segments_closest(a0, (2 * a.size[i]) * ea, b0, (2 * b.size[j]) * eb, tiny * tiny, &s, &t);
    *pa = a0 + (2 * a.size[i] * s) * ea;
    *pb = b0 + (2 * b.size[j] * t) * eb;
  }
}

// Clips the incident feature (segment or polygon, core of radius inc_radius) against the side
// planes of the reference face and writes one candidate per clipped vertex, measured from the
// reference face plane. `ref_is_b` says which shape owns the reference face.
AXION_HD int clip_to_face(const Feature& ref, const Feature& inc, bool ref_is_b, Real inc_radius,
                          Real tiny, ContactPoint* cand) {
  Vec3 buf[2][kMaxClipVertices];
  int n = inc.count;
  for (int i = 0; i < n; ++i) buf[0][i] = inc.vertex[i];
  int cur = 0;
  Vec3 nr = ref.normal;
  for (int e = 0; e < ref.count && n > 0; ++e) {
    Vec3 v0 = ref.vertex[e], v1 = ref.vertex[(e + 1) % ref.count];
    // Outward unit side normal of edge e. Points within `tiny` of the side plane are inside,
    // so coincident edges (equal boxes stacked) give no spurious intersections.
    Vec3 side = normalized(cross(v1 - v0, nr));
    const Vec3* in = buf[cur];
    Vec3* out = buf[1 - cur];
    int m = 0;
    if (n == 2) {
      // a segment stays a segment
      Real d0 = dot(in[0] - v0, side) - tiny, d1 = dot(in[1] - v0, side) - tiny;
      if (d0 > 0 && d1 > 0) {
        n = 0;
        break;
      }
      Vec3 p0 = in[0], p1 = in[1];
      if (d0 > 0) p0 = in[0] + (d0 / (d0 - d1)) * (in[1] - in[0]);
      if (d1 > 0) p1 = in[0] + (d0 / (d0 - d1)) * (in[1] - in[0]);
      out[0] = p0;
      out[1] = p1;
      m = 2;
    } else {
      for (int i = 0; i < n; ++i) {
        Vec3 p = in[i], q = in[(i + 1) % n];
        Real dp = dot(p - v0, side) - tiny, dq = dot(q - v0, side) - tiny;
        if (dp <= 0) out[m++] = p;
        if ((dp <= 0) != (dq <= 0) && m < kMaxClipVertices) {
          out[m++] = p + (dp / (dp - dq)) * (q - p);
        }
      }
    }
    n = m;
    cur = 1 - cur;
  }
  Real offset = dot(nr, ref.vertex[0]);
  for (int i = 0; i < n; ++i) {
    Vec3 q = buf[cur][i];
    Real s = dot(nr, q) - offset;
    Vec3 on_ref = q - s * nr;
    Vec3 on_inc = q - inc_radius * nr;
    cand[i] = ref_is_b ? make_contact(on_inc, on_ref, nr, s - inc_radius)
                       : make_contact(on_ref, on_inc, -nr, s - inc_radius);
  }
  return n;
}

// Manifold around the contact normal n (b towards a) of a general convex pair; `base` is the
// single closest/deepest contact, used when the features give nothing better.
AXION_HD int convex_manifold(const Core& a, const Core& b, Vec3 n, const ContactPoint& base,
                             bool base_on_surfaces, Real margin, Real scale, ContactPoint* out) {
  const Real tiny = kTiny * scale;
  Feature fa, fb;
  core_feature(a, -n, &fa);
  core_feature(b, n, &fb);
  ContactPoint cand[kMaxClipVertices + 1];
  int m = 0;
  if (fa.count >= 3 || fb.count >= 3) {
    // Face of b as reference when it has one, so a body resting on another gets the lower
    // body's face normal on every point, whatever the pair order inside a stack.
    bool ref_is_b = fb.count >= 3;
    const Feature& ref = ref_is_b ? fb : fa;
    const Feature& inc = ref_is_b ? fa : fb;
    if (inc.count >= 2)
      m = clip_to_face(ref, inc, ref_is_b, ref_is_b ? a.radius : b.radius, tiny, cand);
  } else if (fa.count == 2 && fb.count == 2) {
    m = parallel_segments(fa.vertex[0], fa.vertex[1], a.radius, fb.vertex[0], fb.vertex[1],
                          b.radius, n, tiny, cand);
  }
  return finish_contacts(cand, m, base, base_on_surfaces, margin, scale, out);
}

// The normal of cores within rounding of touching, where neither GJK's closest points nor EPA's
// polytope give one. Faces meeting face-on (a cylinder standing on another) make the Minkowski
// difference flat about the origin: GJK's simplex then spans rim points whose heights differ by
// about as much as the distance itself, and it stopped with a closest-point direction that was
// rounding noise. One such direction, sideways, read two stacked cylinders of humanoid100.xml as
// overlapping by 0.257 m; such false depths threw bodies off its pile at up to 79 m/s
// (RESULTS.md). Starting from whichever of `guess` and the centre line the cores overlap less
// along, refine_penetration moves a out until GJK works at a distance where its closest points
// can be trusted; the depth it returns (negative when apart) is the overlap along the normal it
// ends with.
AXION_HD EpaResult touching_normal(const Core& a, const Core& b, Real scale, Vec3 guess) {
  Vec3 centre = normalized(a.pos - b.pos);
  if (length_sq(centre) == 0) centre = Vec3{0, 0, 1};
  EpaResult e;
  e.ok = true;
  const bool guessed = length_sq(guess) > 0;
  e.normal = guessed && overlap_along(a, b, guess) < overlap_along(a, b, centre) ? guess : centre;
  e.point_b = core_support(b, e.normal);
  refine_penetration(a, b, scale, &e);
  // an unsettled last round leaves the witnesses off the normal by its shift times its turn
  e.point_a = e.point_b - e.depth * e.normal;
  return e;
}

AXION_HD int collide_convex(const Core& a, const Core& b, Real margin, ContactPoint* out) {
  Real scale = pair_scale(a, b);
  Real tiny = kTiny * scale;
  Real radii = a.radius + b.radius;
  bool boxes = a.type == kTypeBox && b.type == kTypeBox;
  SatResult sat;
  if (boxes) {
    // cheap exact rejection, and the exact overlap for touching or intersecting boxes
    sat = sat_box_box(a, b, scale);
    if (sat.separation >= margin) return 0;
  }
  Vec3 n, pa, pb;
  bool overlap = boxes && sat.separation <= kTouch * scale;
  if (!overlap) {
    GjkResult g = gjk_distance(a, b, scale, margin + radii);
    if (!g.overlap) {
      if (g.apart || !(g.distance > 0)) return 0;
      n = (Real(1) / g.distance) * (g.point_a - g.point_b);
      pa = g.point_a;
      pb = g.point_b;
      // GJK's distance bounds the cores' from above and their separation along n from below:
      // a converged solve has the two agree, one stopped on rounding noise does not
      // (touching_normal; 1e-3 leaves solves that stopped a little short alone). Exactly
      // aligned cylinders 0.6 mm apart stopped at 0.03 m, past the margin, and met nothing.
      if (-overlap_along(a, b, n) < g.distance - (Real(1e-3) * g.distance + kTiny * scale)) {
        EpaResult e = touching_normal(a, b, scale, n);
        if (-e.depth - radii >= margin) return 0;
        n = e.normal;
        pa = e.point_a;
        pb = e.point_b;
      } else if (g.distance - radii >= margin) {
        return 0;
      }
    } else if (!boxes) {
      // Cylinders are curved: a coarse polytope, then GJK rounds for the normal. Those settle
      // fast on shallow overlaps, the usual resting contact; deep ones (where the rounds may
      // also stop in a local minimum of the overlap) or unsettled ones get a fine polytope,
      // refined again.
      bool curved = a.type == kTypeCylinder || b.type == kTypeCylinder;
      EpaResult e =
          epa_penetration(a, b, g.simplex, scale, (curved ? kEpaCurvedTol : kEpaTol) * scale);
      if (e.ok && curved &&
          (!refine_penetration(a, b, scale, &e) || e.depth > kShallowDepth * scale)) {
        EpaResult fine = epa_penetration(a, b, g.simplex, scale, kEpaTol * scale);
        if (fine.ok) {
          refine_penetration(a, b, scale, &fine);
          if (fine.depth < e.depth) e = fine;
        }
      }
      if (e.ok) {
        n = e.normal;
        pa = e.point_a;
        pb = e.point_b;
      } else {
        // a degenerate polytope: cores within rounding of touching
        e = touching_normal(a, b, scale, Vec3{});
        n = e.normal;
        pa = e.point_a;
        pb = e.point_b;
      }
    } else {
      overlap = true;
    }
  }
  if (overlap) {
    n = sat.normal;
    sat_witness(a, b, sat, tiny, &pa, &pb);
  }
  ContactPoint base = core_contact(pa, a.radius, pb, b.radius, n);
  bool sat_face = overlap && sat.axis < 6;
  return convex_manifold(a, b, n, base, !sat_face, margin, scale, out);
}

// Pair routine for cores in canonical order: a plane is always b, a sphere always a.
AXION_HD int collide_cores(const Core& a, const Core& b, Real margin, ContactPoint* out) {
  if (b.type == kTypePlane) return collide_plane(a, b, margin, out);
  if (a.type == kTypeSphere) {
    switch (b.type) {
      case kTypeSphere:
        return collide_sphere_sphere(a, b, margin, out);
      case kTypeCapsule:
        return collide_sphere_capsule(a, b, margin, out);
      case kTypeBox:
        return collide_sphere_box(a, b, margin, out);
      case kTypeCylinder:
        return collide_sphere_cylinder(a, b, margin, out);
      case kTypeHull:
        return collide_sphere_hull(a, b, margin, out);
      default:
        return 0;
    }
  }
  if (a.type == kTypeCapsule && b.type == kTypeCapsule) {
    return collide_capsule_capsule(a, b, margin, out);
  }
  return collide_convex(a, b, margin, out);
}

// ---------------------------------------------------------------------------------------------
// height field - X (the field is b; a is neither a plane nor a field)

// Candidates of a height field pair: the manifolds of the prisms under the shape, reduced to
// one whenever the next prism's could overflow them (a box across many cells).
inline constexpr int kFieldCandidates = kMaxClipVertices + 1;

// A polygon of a height field's surface (a cell's triangle, or a planar stretch of cells as one
// quad) and the prism below it down to the base, as a hull core whose arrays live here (MuJoCo
// collides its hfields prism by prism too).
struct FieldPrism {
  Real vertex[24];         // the top's corners counter-clockwise from above, then below
  int32_t face[24];        // top, base, the sides; counter-clockwise from outside
  int32_t face_offset[7];  // (faces + 1)
  Real face_plane[24];     // (faces x 4): outward normal, offset
  int32_t corners = 0;     // of the top: 3 or 4
};

// The prism under the top polygon `top` (`corners` points counter-clockwise from above, on one
// plane, relative to `origin`, world frame, of a field turned by `rot`), down to z = -base.
AXION_HD Core field_prism(const Vec3* top, int corners, Real base, Vec3 origin, const Mat33& rot,
                          FieldPrism* p) {
  const int n = corners;
  p->corners = n;
  for (int i = 0; i < n; ++i) {
    store3(p->vertex + 3 * i, top[i]);
    store3(p->vertex + 3 * (n + i), Vec3{top[i].x, top[i].y, -base});
  }
  int k = 0;
  for (int i = 0; i < n; ++i) p->face[k++] = i;              // top
  for (int i = 0; i < n; ++i) p->face[k++] = 2 * n - 1 - i;  // base, seen from below
  for (int i = 0; i < n; ++i) {
    const int j = (i + 1) % n;
    p->face[k++] = i;
    p->face[k++] = n + i;
    p->face[k++] = n + j;
    p->face[k++] = j;
  }
  p->face_offset[0] = 0;
  p->face_offset[1] = n;
  p->face_offset[2] = 2 * n;
  for (int i = 0; i < n; ++i) p->face_offset[3 + i] = 2 * n + 4 * (i + 1);
  const Vec3 up = normalized(cross(top[1] - top[0], top[2] - top[0]));
  store3(p->face_plane, up);
  p->face_plane[3] = dot(up, top[0]);
  store3(p->face_plane + 4, Vec3{0, 0, -1});
  p->face_plane[7] = base;
  for (int i = 0; i < n; ++i) {
    // a side's outward normal: the top edge turned a quarter clockwise in the xy plane
    const Vec3 e = top[(i + 1) % n] - top[i];
    const Vec3 side = normalized(Vec3{e.y, -e.x, 0});
    store3(p->face_plane + 8 + 4 * i, side);
    p->face_plane[11 + 4 * i] = dot(side, top[i]);
  }
  Core c;
  c.type = kTypeHull;
  c.pos = origin;
  c.rot = rot;
  c.hull_vertices = p->vertex;
  c.hull_vertex_count = 2 * n;
  c.hull_faces = p->face;
  c.hull_face_offset = p->face_offset;
  c.hull_face_plane = p->face_plane;
  c.hull_face_count = 2 + n;
  return c;
}

// Whether the prism's top holds point p (prism frame) in the xy plane (within `tiny`).
AXION_HD bool prism_holds(const FieldPrism& prism, Vec3 p, Real tiny) {
  bool inside = true;
  for (int i = 0; i < prism.corners; ++i) {
    const Vec3 a = load3(prism.vertex + 3 * i);
    const Vec3 e = load3(prism.vertex + 3 * ((i + 1) % prism.corners)) - a, q = p - a;
    inside = inside && e.x * q.y - e.y * q.x >= -tiny * (std::fabs(e.x) + std::fabs(e.y));
  }
  return inside;
}

// Contacts of core a with one prism of a height field, appended to cand (room for
// kMaxPairContacts more), their ids in tri: `id`, or -1 - id for a hidden one. A prism's sides
// and base lie inside the terrain, so a point of a below the top's plane that the prism pushes
// out sideways or down (an overlap found through a side) leaves along the top's normal instead;
// if that point then lies over another polygon, it is that polygon's prism's to find, and it
// stays (hidden) only to tell field_drop_inner_edges how deep a lies below this plane. A shape
// wholly above the top's plane (by the margin) meets nothing here: the prism lies below it.
AXION_HD int field_prism_contacts(const Core& a, const Core& prism, const FieldPrism& data, int id,
                                  Real margin, Real scale, ContactPoint* cand, int32_t* tri) {
  const Vec3 up = prism.rot * load3(data.face_plane);
  const Vec3 corner = to_world(prism, load3(data.vertex));
  if (dot(core_support(a, -up) - corner, up) - a.radius >= margin) return 0;
  const int k = a.type == kTypeSphere ? collide_sphere_hull(a, prism, margin, cand)
                                      : collide_convex(a, prism, margin, cand);
  int kept = 0;
  for (int i = 0; i < k; ++i) {
    ContactPoint q = cand[i];
    bool hidden = false;
    if (q.gap < 0 && dot(q.normal, up) < kFeatureCos) {
      // out along the top's normal from the core point behind a's surface point
      const Vec3 core_point = q.point_a + a.radius * q.normal;
      q.normal = up;
      q.point_a = core_point - a.radius * up;
      q.gap = dot(q.point_a - corner, up);
      q.point_b = q.point_a - q.gap * up;
      hidden = !prism_holds(data, to_local(prism, q.point_b), kTiny * scale);
    }
    if (!(q.gap < margin)) continue;
    tri[kept] = hidden ? -1 - id : id;
    cand[kept++] = q;
  }
  return kept;
}

// A height field pair's manifold spreads over the points within this much (relative to the
// shape's bounding radius) of the deepest; the rest of its points are the nearest others at
// least kFieldSpacing apart. Measured on 20 boxes dropped on bumps (bench/terrain_scene.py):
// with the spread over all points, 11 of them still rocked at 3-4 cm/s after 15 s; with these, 1
// at 1 mm/s (on 2 mm bumps, 4 at 4.6 mm/s before and 4-5 at 2 mm/s after).
inline constexpr Real kFieldBand = Real(1e-4);
inline constexpr Real kFieldSpacing = Real(0.1);
// Up to kMaxPairContacts of a height field pair's `m` candidates (and their triangles), for a
// shape of bounding radius `extent`: the manifold reduce_contacts spreads over those as deep as
// the deepest but for a band, then the nearest of the others, apart from every point kept. A
// face resting on an even stretch keeps its corners; a box balanced on a bump keeps the points
// it may tip onto (the next support is in the contact set before it gets there), where the
// spread alone would keep far corners a few millimetres up and let it rock for ever.
AXION_HD int field_reduce(const ContactPoint* cand, const int32_t* tri, int m, Real extent,
                          Real tiny, Real tie, ContactPoint* out, int32_t* out_tri) {
  if (m == 0) return 0;
  const Real band = kFieldBand * extent + tie;
  const Real spacing = kFieldSpacing * extent + tiny;
  Real deepest = cand[0].gap;
  for (int j = 1; j < m; ++j) deepest = rmin(deepest, cand[j].gap);
  ContactPoint level[kFieldCandidates];
  int32_t level_tri[kFieldCandidates];
  int n = 0;
  for (int j = 0; j < m; ++j) {
    if (cand[j].gap > deepest + band) continue;
    level[n] = cand[j];
    level_tri[n++] = tri[j];
  }
  int k = reduce_contacts(level, n, tiny, tie, out);
  for (int i = 0; i < k; ++i) {
    // (each manifold point is one of the candidates: its triangle comes along)
    int from = 0;
    while (from < n - 1 && length_sq(level[from].point_a - out[i].point_a) +
                                   length_sq(level[from].point_b - out[i].point_b) >
                               0) {
      ++from;
    }
    out_tri[i] = level_tri[from];
  }
  while (k < kMaxPairContacts) {
    int nearest = -1;
    for (int j = 0; j < m; ++j) {
      bool apart = true;
      for (int i = 0; i < k && apart; ++i)
        apart = length_sq(contact_mid(cand[j]) - contact_mid(out[i])) > spacing * spacing;
      if (apart && (nearest < 0 || cand[j].gap < cand[nearest].gap)) nearest = j;
    }
    if (nearest < 0) break;
    out[k] = cand[nearest];
    out_tri[k++] = tri[nearest];
  }
  return k;
}

// Whether the grid points of cells r0..r1 x c0..c1 lie on one plane (to 1e-7 of the field's
// height, float32 height maps included): then a shape
// over them meets one prism (a box on flat ground, four points, as on a plane) instead of two a
// cell, whose manifolds would each clip the shape and whose inner edges would need sorting out.
AXION_HD bool field_stretch_is_planar(const ShapeGeom& field, int r0, int r1, int c0, int c1) {
  const int cols = field.heightfield_cols;
  const Real* h = field.heightfield_heights;
  const Real z00 = h[r0 * cols + c0];
  const Real along_c = (h[r0 * cols + c1 + 1] - z00) / Real(c1 + 1 - c0);
  const Real along_r = (h[(r1 + 1) * cols + c0] - z00) / Real(r1 + 1 - r0);
  const Real tolerance = Real(1e-7) * (std::fabs(field.heightfield_top) + field.size.z);
  for (int r = r0; r <= r1 + 1; ++r) {
    for (int c = c0; c <= c1 + 1; ++c) {
      const Real plane = z00 + along_c * Real(c - c0) + along_r * Real(r - r0);
      if (!(std::fabs(h[r * cols + c] - plane) <= tolerance)) return false;
    }
  }
  return true;
}

// Corners (field frame, counter-clockwise from above) of triangle `id` = 2 (r cols + c) + t.
AXION_HD void field_triangle(const ShapeGeom& field, int id, Vec3* corner) {
  const int cols = field.heightfield_cols, rows = field.heightfield_rows;
  const int cell = id / 2, r = cell / cols, c = cell % cols;
  const Real dx = 2 * field.size.x / Real(cols - 1), dy = 2 * field.size.y / Real(rows - 1);
  const Real x0 = -field.size.x + Real(c) * dx, y0 = -field.size.y + Real(r) * dy;
  const Real* h = field.heightfield_heights + r * cols + c;
  corner[0] = Vec3{x0, y0, h[0]};
  corner[1] = id % 2 == 0 ? Vec3{x0 + dx, y0 + dy, h[cols + 1]} : Vec3{x0 + dx, y0, h[1]};
  corner[2] = id % 2 == 0 ? Vec3{x0, y0 + dy, h[cols]} : Vec3{x0 + dx, y0 + dy, h[cols + 1]};
}

// Whether triangle `id`'s footprint in the field's xy plane holds field-frame point p (within
// `tiny`).
AXION_HD bool field_holds(const ShapeGeom& field, int id, Vec3 p, Real tiny) {
  Vec3 corner[3];
  field_triangle(field, id, corner);
  bool inside = true;
  for (int k = 0; k < 3; ++k) {
    const Vec3 e = corner[(k + 1) % 3] - corner[k], q = p - corner[k];
    inside = inside && e.x * q.y - e.y * q.x >= -tiny * (std::fabs(e.x) + std::fabs(e.y));
  }
  return inside;
}

// Drops the separated contacts found at a triangle's edge or corner (normal off the triangle's
// own) where another triangle holding that terrain point found the shape nearer: the surface
// there is not an edge the shape can catch on (inner edges of a flat stretch, valleys), only a
// ridge is, and at a ridge both triangles find the same distance. `tri`: each candidate's
// triangle (field_triangle's id; -1 - id for a hidden one, dropped here too). Returns how many
// remain, in order.
AXION_HD int field_drop_inner_edges(ContactPoint* cand, int32_t* tri, int m, const ShapeGeom& field,
                                    Vec3 pos_f, const Mat33& rot, Real tiny) {
  bool drop[kFieldCandidates];
  for (int i = 0; i < m; ++i) {
    drop[i] = tri[i] < 0;
    if (tri[i] < 0 || cand[i].gap < 0) continue;
    Vec3 corner[3];
    field_triangle(field, tri[i], corner);
    const Vec3 up = rot * normalized(cross(corner[1] - corner[0], corner[2] - corner[0]));
    if (dot(cand[i].normal, up) >= kFeatureCos) continue;
    const Vec3 p = mul_transpose(rot, cand[i].point_b - pos_f);
    for (int j = 0; j < m && !drop[i]; ++j) {
      const int other = tri[j] < 0 ? -1 - tri[j] : tri[j];
      if (other == tri[i] || !(cand[j].gap < cand[i].gap - tiny)) continue;
      drop[i] = field_holds(field, other, p, tiny);
    }
  }
  int kept = 0;
  for (int i = 0; i < m; ++i) {
    if (drop[i]) continue;
    cand[kept] = cand[i];
    tri[kept++] = tri[i];
  }
  return kept;
}

// Contacts of shape a with height field `field`: a against the prisms of the triangles whose
// cells its bounding box (grown by the margin) covers. A prism's sides and base lie inside the
// terrain, so a point of a below a triangle's plane that its prism pushes out sideways or
// down (an overlap found through a side) leaves along the triangle's normal instead: shapes
// cross cell edges without catching on them, and one that got under the surface comes back up.
AXION_HD int collide_heightfield(const ShapeGeom& a, Vec3 pos_a, Quat quat_a,
                                 const ShapeGeom& field, Vec3 pos_f, Quat quat_f, Real margin,
                                 ContactPoint* out) {
  const int rows = field.heightfield_rows, cols = field.heightfield_cols;
  if (rows < 2 || cols < 2 || field.heightfield_heights == nullptr) return 0;
  // a's box in the field's frame: the cells below it
  const Quat to_field = conjugate(quat_f);
  Vec3 lower, upper;
  shape_aabb(a, rotate(to_field, pos_a - pos_f), to_field * quat_a, &lower, &upper);
  const Vec3 half = field.size;
  lower = lower - Vec3{margin, margin, margin};
  upper = upper + Vec3{margin, margin, margin};
  // (written so that a NaN pose leaves here too)
  if (!(upper.x >= -half.x && lower.x <= half.x && upper.y >= -half.y && lower.y <= half.y &&
        lower.z <= field.heightfield_top)) {
    return 0;
  }
  const Real dx = 2 * half.x / Real(cols - 1), dy = 2 * half.y / Real(rows - 1);
  const int c0 = static_cast<int>(rclamp(std::floor((lower.x + half.x) / dx), 0, cols - 2));
  const int c1 = static_cast<int>(rclamp(std::floor((upper.x + half.x) / dx), 0, cols - 2));
  const int r0 = static_cast<int>(rclamp(std::floor((lower.y + half.y) / dy), 0, rows - 2));
  const int r1 = static_cast<int>(rclamp(std::floor((upper.y + half.y) / dy), 0, rows - 2));
  const Core ca = make_core(a, pos_a, quat_a);
  const Mat33 rot = quat_to_mat(quat_f);
  const Real far = rmax(rmax(std::fabs(pos_a.x), std::fabs(pos_a.y)), std::fabs(pos_a.z));
  const Real extent = core_bounding_radius(ca) + ca.radius;
  const Real scale = extent + dx + dy + Real(1e-3) * far + kTiny;
  ContactPoint cand[kFieldCandidates];
  int32_t tri[kFieldCandidates];  // each candidate's triangle, field_triangle's id
  int m = 0;
  const Real x0 = -half.x + Real(c0) * dx, y0 = -half.y + Real(r0) * dy;
  if (field_stretch_is_planar(field, r0, r1, c0, c1)) {
    // one prism under the whole stretch
    const Real* h = field.heightfield_heights;
    const Real x1 = -half.x + Real(c1 + 1) * dx, y1 = -half.y + Real(r1 + 1) * dy;
    const Vec3 centre{Real(0.5) * (x0 + x1), Real(0.5) * (y0 + y1), 0};
    const Vec3 top[4] = {Vec3{x0, y0, h[r0 * cols + c0]} - centre,
                         Vec3{x1, y0, h[r0 * cols + c1 + 1]} - centre,
                         Vec3{x1, y1, h[(r1 + 1) * cols + c1 + 1]} - centre,
                         Vec3{x0, y1, h[(r1 + 1) * cols + c0]} - centre};
    FieldPrism data;
    const Core prism = field_prism(top, 4, half.z, pos_f + rot * centre, rot, &data);
    m = field_prism_contacts(ca, prism, data, 2 * (r0 * cols + c0), margin, scale, cand, tri);
  } else {
    for (int r = r0; r <= r1; ++r) {
      for (int c = c0; c <= c1; ++c) {
        const Real* h = field.heightfield_heights + r * cols + c;
        const Real h00 = h[0], h01 = h[1], h10 = h[cols], h11 = h[cols + 1];
        if (lower.z > rmax(rmax(h00, h01), rmax(h10, h11))) continue;
        const Vec3 centre{x0 + (Real(c - c0) + Real(0.5)) * dx,
                          y0 + (Real(r - r0) + Real(0.5)) * dy, 0};
        const Vec3 origin = pos_f + rot * centre;
        const Vec3 p00{-dx / 2, -dy / 2, h00}, p01{dx / 2, -dy / 2, h01};
        const Vec3 p10{-dx / 2, dy / 2, h10}, p11{dx / 2, dy / 2, h11};
        // the cell's two triangles, split along the diagonal (r, c) - (r + 1, c + 1) as MuJoCo's
        for (int t = 0; t < 2; ++t) {
          if (m + kMaxPairContacts > kFieldCandidates) {
            m = field_drop_inner_edges(cand, tri, m, field, pos_f, rot, kTiny * scale);
            ContactPoint kept[kMaxPairContacts];
            int32_t kept_tri[kMaxPairContacts];
            m = field_reduce(cand, tri, m, extent, kTiny * scale, kDepthTie * scale, kept,
                             kept_tri);
            for (int i = 0; i < m; ++i) {
              cand[i] = kept[i];
              tri[i] = kept_tri[i];
            }
          }
          const Vec3 lower_tri[3] = {p00, p11, p10}, upper_tri[3] = {p00, p01, p11};
          FieldPrism data;
          const Core prism =
              field_prism(t == 0 ? lower_tri : upper_tri, 3, half.z, origin, rot, &data);
          m += field_prism_contacts(ca, prism, data, 2 * (r * cols + c) + t, margin, scale,
                                    cand + m, tri + m);
        }
      }
    }
  }
  m = field_drop_inner_edges(cand, tri, m, field, pos_f, rot, kTiny * scale);
  int32_t out_tri[kMaxPairContacts];
  return field_reduce(cand, tri, m, extent, kTiny * scale, kDepthTie * scale, out, out_tri);
}

AXION_HD bool valid_type(int32_t t) { return t >= kTypePlane && t <= kTypeHeightField; }

}  // namespace narrowphase

AXION_HD int collide_shapes(const ShapeGeom& a, Vec3 pos_a, Quat quat_a, const ShapeGeom& b,
                            Vec3 pos_b, Quat quat_b, Real margin, ContactPoint* out) {
  using namespace narrowphase;
  if (!valid_type(a.type) || !valid_type(b.type)) return 0;
  if (a.type == kTypePlane && b.type == kTypePlane) return 0;
  if (a.type == kTypeHeightField || b.type == kTypeHeightField) {
    // terrain meets no terrain (both static); the field second
    if (a.type == b.type || a.type == kTypePlane || b.type == kTypePlane) return 0;
    if (b.type == kTypeHeightField)
      return collide_heightfield(a, pos_a, quat_a, b, pos_b, quat_b, margin, out);
    const int count = collide_heightfield(b, pos_b, quat_b, a, pos_a, quat_a, margin, out);
    for (int i = 0; i < count; ++i) {
      const Vec3 t = out[i].point_a;
      out[i].point_a = out[i].point_b;
      out[i].point_b = t;
      out[i].normal = -out[i].normal;
    }
    return count;
  }
  // canonical order: plane second, sphere first
  bool swap;
  if (a.type == kTypePlane) {
    swap = true;
  } else if (b.type == kTypePlane) {
    swap = false;
  } else {
    swap = b.type == kTypeSphere && a.type != kTypeSphere;
  }
  const ShapeGeom& first = swap ? b : a;
  const ShapeGeom& second = swap ? a : b;
  const bool spheres = first.type == kTypeSphere && second.type == kTypeSphere;
  const bool bare = spheres || (first.type == kTypeSphere && second.type == kTypePlane);
  Core ca = swap ? make_core(b, pos_b, quat_b, !bare) : make_core(a, pos_a, quat_a, !bare);
  Core cb = swap ? make_core(a, pos_a, quat_a, !spheres) : make_core(b, pos_b, quat_b, !spheres);
  int count = collide_cores(ca, cb, margin, out);
  if (swap) {
    for (int i = 0; i < count; ++i) {
      Vec3 t = out[i].point_a;
      out[i].point_a = out[i].point_b;
      out[i].point_b = t;
      out[i].normal = -out[i].normal;
    }
  }
  return count;
}

AXION_HD void shape_aabb(const ShapeGeom& g, Vec3 pos, Quat quat, Vec3* lower, Vec3* upper) {
  using namespace narrowphase;
  Mat33 r = quat_to_mat(quat);
  Vec3 ext;
  switch (g.type) {
    case kTypeSphere:
      ext = Vec3{g.size.x, g.size.x, g.size.x};
      break;
    case kTypeCapsule:
      for (int i = 0; i < 3; ++i) ext[i] = std::fabs(r(i, 2)) * g.size.y + g.size.x;
      break;
    case kTypeBox:
      for (int i = 0; i < 3; ++i) {
        ext[i] = std::fabs(r(i, 0)) * g.size.x + std::fabs(r(i, 1)) * g.size.y +
                 std::fabs(r(i, 2)) * g.size.z;
      }
      break;
    case kTypeCylinder:
      // a disc of radius R with unit normal a spans R sqrt(1 - a_i^2) along axis i
      for (int i = 0; i < 3; ++i) {
        Real ai = r(i, 2);
        ext[i] = std::fabs(ai) * g.size.y + g.size.x * std::sqrt(rmax(Real(0), 1 - ai * ai));
      }
      break;
    case kTypeHull: {
      if (g.hull_vertex_count <= 0) break;
      const Core c = make_core(g, pos, quat, /*framed=*/false);
      if (hull_climbs(c)) {
        // the farthest vertices along -e_i and +e_i, in the shape frame: rows of r
        for (int i = 0; i < 3; ++i) {
          const Vec3 row{r(i, 0), r(i, 1), r(i, 2)};
          (*lower)[i] = pos[i] + (r * hull_vertex(c, hull_support_index(c, -row)))[i];
          (*upper)[i] = pos[i] + (r * hull_vertex(c, hull_support_index(c, row)))[i];
        }
        return;
      }
      Vec3 lo = r * load3(g.hull_vertices), hi = lo;
      for (int k = 1; k < g.hull_vertex_count; ++k) {
        Vec3 v = r * load3(g.hull_vertices + 3 * k);
        for (int i = 0; i < 3; ++i) {
          lo[i] = rmin(lo[i], v[i]);
          hi[i] = rmax(hi[i], v[i]);
        }
      }
      *lower = pos + lo;
      *upper = pos + hi;
      return;
    }
    case kTypeHeightField: {
      // the grid's box, from the base to the highest point
      const Vec3 centre{0, 0, Real(0.5) * (g.heightfield_top - g.size.z)};
      const Vec3 half{g.size.x, g.size.y, Real(0.5) * (g.heightfield_top + g.size.z)};
      for (int i = 0; i < 3; ++i) {
        ext[i] =
            std::fabs(r(i, 0)) * half.x + std::fabs(r(i, 1)) * half.y + std::fabs(r(i, 2)) * half.z;
      }
      pos = pos + r * centre;
      break;
    }
    default: {
      // plane: the half-space below it, n . (x - pos) <= 0, within kPlaneExtent of pos. Along
      // an axis where n has a component the box ends on the plane's outer side, at the largest
      // rise of the surface within kPlaneReach of pos (a floor's box ends at its surface), so
      // that shapes above a floor skip its narrow phase: 1000 spheres in a box took 5000 plane
      // tests a step. Over kPlaneExtent instead, a wall's round-off tilt (2e-16) left 22 cm.
      const Vec3 n{r(0, 2), r(1, 2), r(2, 2)};
      for (int k = 0; k < 3; ++k) {
        const Real across = std::fabs(n[(k + 1) % 3]) + std::fabs(n[(k + 2) % 3]);
        Real lo = -kPlaneExtent, hi = kPlaneExtent;
        if (n[k] > 0) hi = rmin(hi, kPlaneReach * across / n[k]);
        if (n[k] < 0) lo = rmax(lo, kPlaneReach * across / n[k]);
        (*lower)[k] = pos[k] + lo;
        (*upper)[k] = pos[k] + hi;
      }
      return;
    }
  }
  *lower = pos - ext;
  *upper = pos + ext;
}

// Radius of a ball about the shape origin that encloses the shape (planes: kPlaneExtent).
AXION_HD Real shape_bounding_radius(const ShapeGeom& g) {
  using namespace narrowphase;
  switch (g.type) {
    case kTypeSphere:
      return g.size.x;
    case kTypeCapsule:
      return g.size.x + g.size.y;
    case kTypeBox:
      return norm(g.size);
    case kTypeCylinder:
      return std::sqrt(g.size.x * g.size.x + g.size.y * g.size.y);
    case kTypeHull: {
      if (g.hull_radius >= 0) return g.hull_radius;
      Real r2 = 0;
      for (int i = 0; i < g.hull_vertex_count; ++i) {
        r2 = rmax(r2, length_sq(load3(g.hull_vertices + 3 * i)));
      }
      return std::sqrt(r2);
    }
    case kTypeHeightField:
      return norm(Vec3{g.size.x, g.size.y, rmax(std::fabs(g.heightfield_top), g.size.z)});
    default:
      return kPlaneExtent;
  }
}

}  // namespace axion
