// A spatial tendon's length and Jacobian (TendonDesc::path): straight pieces between sites,
// wraps around spheres and cylinders, branches behind pulleys. MuJoCo's definitions (its
// mj_tendon and mju_wrap), so that a file's muscles and cables pull where MuJoCo's do; checked
// against libmujoco's ten_length and ten_J (tests/io/import_dynamics_test.cc).
#pragma once

#include "axion/math.h"
#include "axion/model.h"
#include "axion/state.h"
#include "kernels_common.h"

namespace axion {
namespace kernels {

// MuJoCo's mjMINVAL: below it a length or determinant counts as zero.
inline constexpr Real kPathTiny = Real(1e-15);
inline constexpr Real kPathPi = Real(3.14159265358979323846);

// One tendon's path: its slice of the tendon_path_* arrays (or a host copy of one), with body
// indices into the pose array it is evaluated at.
struct TendonPath {
  int count;
  const int32_t* kind;
  const int32_t* body;
  const Real* pos;   // (count x 3) in the body's centre-of-mass frame, world if static
  const Real* quat;  // (count x 4)
  const Real* size;  // (count) radius or divisor
  const int32_t* side_body;
  const Real* side_pos;  // (count x 3)
  const int32_t* sides;  // (4) the bodies its Jacobian is on, in order
};
AXION_HD TendonPath tendon_path(const BatchView& v, int tendon) {
  const int p = tendon * kMaxTendonPath;
  return {v.tendon_path_count[tendon], v.tendon_path_kind + p,         v.tendon_path_body + p,
          v.tendon_path_pos + 3 * p,   v.tendon_path_quat + 4 * p,     v.tendon_path_size + p,
          v.tendon_path_side_body + p, v.tendon_path_side_pos + 3 * p, v.tendon_body + 4 * tendon};
}

// A tendon's length and its Jacobian on its four sides (dL/dt = sum_k jac_k . u_k).
struct TendonLength {
  Real value;
  Vec6 jac[4];
};

// The path's geometry is compiled where it runs: into the CUDA unit (out of line on the
// device, AXION_HD_NOINLINE), and on the host into tendon_path.cc alone (as fused_newton.cc), so
// that the CPU backend's unit sees a call: compiled into it, its 300 lines moved GCC's inlining
// of the row evaluation (0.5% more instructions per humanoid step, a model without tendons).
#if defined(__CUDACC__) || defined(AXION_TENDON_PATH_DEFINITION)
#if defined(__CUDACC__)
// (internal linkage: the CUDA unit's host copy stays its own beside tendon_path.cc's)
#define AXION_TENDON_PATH_FN static AXION_HD_NOINLINE
#else
#define AXION_TENDON_PATH_FN
#endif

// ---- wrapping in the plane of the wrap (MuJoCo's wrap_circle and wrap_inside) ---------------

// Whether the 2D segments a0-a1 and b0-b1 meet.
AXION_HD bool path_segments_meet(const Real* a0, const Real* a1, const Real* b0, const Real* b1) {
  const Real det = (b1[1] - b0[1]) * (a1[0] - a0[0]) - (b1[0] - b0[0]) * (a1[1] - a0[1]);
  if (std::fabs(det) < kPathTiny) return false;
  const Real ta = ((b1[0] - b0[0]) * (a0[1] - b0[1]) - (b1[1] - b0[1]) * (a0[0] - b0[0])) / det;
  const Real tb = ((a1[0] - a0[0]) * (a0[1] - b0[1]) - (a1[1] - a0[1]) * (a0[0] - b0[0])) / det;
  return ta >= 0 && ta <= 1 && tb >= 0 && tb <= 1;
}

// The 2D vector scaled to unit length; (1, 0) where it has none (MuJoCo's convention).
AXION_HD void path_normalize2(Real* x) {
  const Real n = std::sqrt(x[0] * x[0] + x[1] * x[1]);
  if (n < kPathTiny) {
    x[0] = 1;
    x[1] = 0;
  } else {
    x[0] /= n;
    x[1] /= n;
  }
}
AXION_HD Vec3 path_normalize3(Vec3 x) {
  const Real n = norm(x);
  return n < kPathTiny ? Vec3{1, 0, 0} : (Real(1) / n) * x;
}

/// The path from end point e0 to e1 around the circle of radius r at the origin, where their
/// straight segment passes through it (or, with a side point, passes on the other side of the
/// circle's centre from it): tangent lines from each end to the circle and the arc between
/// their touching points t0, t1. Of the two ways round, the one whose arc's midpoint is nearer
/// the side point, else the one whose touching points are closer; one whose tangent lines
/// cross each other is never taken. Returns the arc's length, -1 for no wrap.
///   t = (e r^2 +- r e_perp sqrt(|e|^2 - r^2)) / |e|^2
AXION_HD Real wrap_circle(const Real* end, const Real* side, Real r, Real* touch) {
  const Real sq0 = end[0] * end[0] + end[1] * end[1];
  const Real sq1 = end[2] * end[2] + end[3] * end[3];
  const Real sqr = r * r;
  if (sq0 < sqr || sq1 < sqr || r < kPathTiny) return -1;
  const Real dif[2] = {end[2] - end[0], end[3] - end[1]};
  const Real dd = dif[0] * dif[0] + dif[1] * dif[1];
  if (dd < kPathTiny) return -1;
  // the segment's point nearest the centre: clear of the circle (on the side point's side)
  Real a = -(dif[0] * end[0] + dif[1] * end[1]) / dd;
  a = a < 0 ? Real(0) : (a > 1 ? Real(1) : a);
  const Real near[2] = {end[0] + a * dif[0], end[1] + a * dif[1]};
  if (near[0] * near[0] + near[1] * near[1] > sqr &&
      (side == nullptr || side[0] * near[0] + side[1] * near[1] >= 0))
    return -1;
  const Real root0 = std::sqrt(sq0 - sqr), root1 = std::sqrt(sq1 - sqr);
  Real candidate[2][4], score[2];
  for (int i = 0; i < 2; ++i) {
    const Real sign = i == 0 ? Real(1) : Real(-1);
    Real* t = candidate[i];
    t[0] = (end[0] * sqr + sign * r * end[1] * root0) / sq0;
    t[1] = (end[1] * sqr - sign * r * end[0] * root0) / sq0;
    t[2] = (end[2] * sqr - sign * r * end[3] * root1) / sq1;
    t[3] = (end[3] * sqr + sign * r * end[2] * root1) / sq1;
    if (side != nullptr) {
      Real mid[2] = {t[0] + t[2], t[1] + t[3]};
      path_normalize2(mid);
      score[i] = mid[0] * side[0] + mid[1] * side[1];
    } else {
      const Real gap[2] = {t[0] - t[2], t[1] - t[3]};
      score[i] = -(gap[0] * gap[0] + gap[1] * gap[1]);
    }
    if (path_segments_meet(end, t, end + 2, t + 2)) score[i] = -10000;
  }
  const int pick = score[0] > score[1] ? 0 : 1;
  for (int k = 0; k < 4; ++k) touch[k] = candidate[pick][k];
  if (path_segments_meet(end, touch, end + 2, touch + 2)) return -1;
  // the arc from t0 to t1: the angle between them, or its complement where the way round
  // taken is the long one
  Real u0[2] = {touch[0], touch[1]}, u1[2] = {touch[2], touch[3]};
  path_normalize2(u0);
  path_normalize2(u1);
  Real c = u0[0] * u1[0] + u0[1] * u1[1];
  c = c > 1 ? Real(1) : (c < -1 ? Real(-1) : c);
  Real angle = std::acos(c);
  const Real turn = touch[1] * touch[2] - touch[0] * touch[3];
  if ((turn > 0 && pick == 1) || (turn < 0 && pick == 0)) angle = 2 * kPathPi - angle;
  return r * angle;
}

/// The path from e0 to e1 held against the inside of the circle (a side site inside the wrapping
/// shape): the point t on the circle where the angles of incidence from both ends are equal,
/// from asin(A z) + asin(B z) - 2 asin(z) + G = 0 (A = r / |e0|, B = r / |e1|, G the angle
/// between the ends) by Newton from z = 1 - 1e-7; where that fails, the ends' mean direction.
/// Returns 0 (the arc is a point), or -1 for no wrap.
AXION_HD Real wrap_inside(const Real* end, Real r, Real* touch) {
  const Real len0 = std::sqrt(end[0] * end[0] + end[1] * end[1]);
  const Real len1 = std::sqrt(end[2] * end[2] + end[3] * end[3]);
  const Real dif[2] = {end[2] - end[0], end[3] - end[1]};
  const Real dd = dif[0] * dif[0] + dif[1] * dif[1];
  if (len0 <= r || len1 <= r || r < kPathTiny || len0 < kPathTiny || len1 < kPathTiny) return -1;
  if (dd > kPathTiny) {
    const Real a = -(dif[0] * end[0] + dif[1] * end[1]) / dd;
    if (a > 0 && a < 1) {
      const Real near[2] = {end[0] + a * dif[0], end[1] + a * dif[1]};
      if (std::sqrt(near[0] * near[0] + near[1] * near[1]) <= r) return -1;
    }
  }
  // fallback: the ends' mean direction on the circle
  touch[0] = Real(0.5) * (end[0] + end[2]);
  touch[1] = Real(0.5) * (end[1] + end[3]);
  path_normalize2(touch);
  touch[0] *= r;
  touch[1] *= r;
  touch[2] = touch[0];
  touch[3] = touch[1];
  const Real A = r / len0, B = r / len1;
  const Real cos_g = (len0 * len0 + len1 * len1 - dd) / (2 * len0 * len1);
  if (cos_g < -1 + kPathTiny) return -1;
  if (cos_g > 1 - kPathTiny) return 0;
  const Real G = std::acos(cos_g);
  auto f_of = [&](Real z) { return std::asin(A * z) + std::asin(B * z) - 2 * std::asin(z) + G; };
  const auto root = [](Real x) { return std::sqrt(x) > kPathTiny ? std::sqrt(x) : kPathTiny; };
  Real z = 1 - Real(1e-7);
  Real f = f_of(z);
  if (f > 0) return 0;
  int iteration = 0;
  for (; iteration < 20 && std::fabs(f) > Real(1e-6); ++iteration) {
    const Real df = A / root(1 - z * z * A * A) + B / root(1 - z * z * B * B) - 2 / root(1 - z * z);
    if (df > -kPathTiny) return 0;
    const Real next = z - f / df;
    if (next > z) return 0;
    z = next;
    f = f_of(z);
    if (f > Real(1e-6)) return 0;
  }
  if (iteration >= 20) return 0;
  // t: the end on the circle's turning side, turned by the angle found
  const bool first = end[0] * end[3] - end[1] * end[2] > 0;
  Real dir[2] = {first ? end[0] : end[2], first ? end[1] : end[3]};
  path_normalize2(dir);
  const Real angle = std::asin(z) - std::asin((first ? A : B) * z);
  const Real c = std::cos(angle), s = std::sin(angle);
  touch[0] = r * (c * dir[0] - s * dir[1]);
  touch[1] = r * (s * dir[0] + c * dir[1]);
  touch[2] = touch[0];
  touch[3] = touch[1];
  return 0;
}

/// The wrap of the piece from x0 to x1 (world) around a sphere or cylinder of radius r centred
/// at `centre` with axes `rot` (a cylinder's axis its z): in the plane through the centre and
/// both ends (a sphere; where they are in line with the centre, a plane through that line) or
/// across the axis (a cylinder), wrap_circle, or wrap_inside for a side point inside the shape;
/// a cylinder's touching points then climb its axis in proportion to the path's length so far
/// (a helix), and the arc's length takes that climb. Returns the arc's length and the touching
/// points t0, t1 (world), -1 where the piece stays straight.
AXION_HD Real wrap_path(Vec3 x0, Vec3 x1, Vec3 centre, Quat rot, Real r, bool cylinder,
                        const Vec3* side, Vec3* t0, Vec3* t1) {
  const Vec3 p0 = rotate_inv(rot, x0 - centre), p1 = rotate_inv(rot, x1 - centre);
  if (norm(p0) < kPathTiny || norm(p1) < kPathTiny) return -1;
  Vec3 axis0{1, 0, 0}, axis1{0, 1, 0};
  if (!cylinder) {
    axis0 = path_normalize3(p0);
    Vec3 normal = cross(p0, p1);
    const Real length = norm(normal);
    if (length < kPathTiny) {
      // the ends in line with the centre: any plane through that line (MuJoCo's choice)
      int i = 0;
      if (std::fabs(axis0.y) > std::fabs(axis0.x) && std::fabs(axis0.y) > std::fabs(axis0.z)) i = 1;
      if (std::fabs(axis0.z) > std::fabs(axis0.x) && std::fabs(axis0.z) > std::fabs(axis0.y)) i = 2;
      Vec3 other{1, 1, 1};
      other[i] = 0;
      normal = path_normalize3(cross(axis0, other));
    } else {
      normal = (Real(1) / length) * normal;
    }
    axis1 = path_normalize3(cross(normal, axis0));
  }
  const Real end[4] = {dot(p0, axis0), dot(p0, axis1), dot(p1, axis0), dot(p1, axis1)};
  Real touch[4];
  Real arc;
  if (side != nullptr) {
    const Vec3 s = rotate_inv(rot, *side - centre);
    Real towards[2] = {dot(s, axis0), dot(s, axis1)};
    path_normalize2(towards);
    towards[0] *= r;
    towards[1] *= r;
    arc = norm(s) < r ? wrap_inside(end, r, touch) : wrap_circle(end, towards, r, touch);
  } else {
    arc = wrap_circle(end, nullptr, r, touch);
  }
  if (arc < 0) return -1;
  Vec3 local0 = touch[0] * axis0 + touch[1] * axis1;
  Vec3 local1 = touch[2] * axis0 + touch[3] * axis1;
  if (cylinder) {
    const Real l0 =
        std::sqrt((p0.x - local0.x) * (p0.x - local0.x) + (p0.y - local0.y) * (p0.y - local0.y));
    const Real l1 =
        std::sqrt((p1.x - local1.x) * (p1.x - local1.x) + (p1.y - local1.y) * (p1.y - local1.y));
    const Real total = l0 + arc + l1;
    local0.z = p0.z + (p1.z - p0.z) * l0 / total;
    local1.z = p0.z + (p1.z - p0.z) * (l0 + arc) / total;
    const Real climb = std::fabs(local1.z - local0.z);
    arc = std::sqrt(arc * arc + climb * climb);
  }
  *t0 = centre + rotate(rot, local0);
  *t1 = centre + rotate(rot, local1);
  return arc;
}

// ---- the path ---------------------------------------------------------------------------------

AXION_HD Vec3 path_point(const Real* body_q, int body, const Real* local) {
  const Vec3 p = load3(local);
  return body < 0 ? p : body_position(body_q, body) + rotate(body_rotation(body_q, body), p);
}

/// A slider-crank's length (TendonDesc; MuJoCo's mjTRN_SLIDERCRANK): the slider site s with
/// axis a (its z), the crank pin c, the rod's length r, v = c - s:
///   L = a.v - sqrt(det),  det = (a.v)^2 + r^2 - |v|^2   (L = a.v where det <= 0),
///   dL/dt = dL/dv . (v_c(c) - v_s(s)) + dL/da . (w_s x a),
///   dL/dv = (1 - a.v / sqrt(det)) a + v / sqrt(det),  dL/da = (1 - a.v / sqrt(det)) v
/// (dL/dv = a, dL/da = v where det <= 0): a row J = [dL/dv, (c - x_c) x dL/dv] on the crank's
/// body and [-dL/dv, -(s - x_s) x dL/dv + a x dL/da] on the slider's.
AXION_HD TendonLength slider_crank_length(const TendonPath& path, const Real* body_q,
                                          bool jacobian) {
  const int slider = path.body[0], crank = path.body[1];
  const Vec3 s = path_point(body_q, slider, path.pos);
  const Vec3 c = path_point(body_q, crank, path.pos + 3);
  Quat axes = load_quat(path.quat);
  if (slider >= 0) axes = body_rotation(body_q, slider) * axes;
  const Vec3 a = rotate(axes, Vec3{0, 0, 1});
  const Vec3 v = c - s;
  const Real av = dot(a, v), r = path.size[1];
  const Real det = av * av + r * r - dot(v, v);
  TendonLength out{av, {}};
  if (!jacobian) {
    if (det > 0) out.value -= std::sqrt(det);
    return out;
  }
  Vec3 dl_dv = a, dl_da = v;
  if (det > 0) {
    const Real root = std::sqrt(det);
    out.value -= root;
    const Real scale = 1 - av / root;
    dl_dv = scale * a + (Real(1) / root) * v;
    dl_da = scale * v;
  }
  const auto side_of = [&](int body) {
    int side = 0;
    while (side < 3 && path.sides[side] != body) ++side;
    return side;
  };
  if (crank >= 0) {
    Vec6& j = out.jac[side_of(crank)];
    j.lin += dl_dv;
    j.ang += cross(c - body_position(body_q, crank), dl_dv);
  }
  if (slider >= 0) {
    Vec6& j = out.jac[side_of(slider)];
    j.lin -= dl_dv;
    j.ang += cross(a, dl_da) - cross(s - body_position(body_q, slider), dl_dv);
  }
  return out;
}

/// A spatial tendon's length L at the bodies' poses body_q, and (jacobian) dL/du on its sides:
///   L = sum over branches of (sum of the branch's pieces) / divisor,
///   dL/dt = sum over pieces p_a -> p_b on different bodies of d . (v_b(p_b) - v_a(p_a)) / divisor,
/// d = (p_b - p_a) / |p_b - p_a|, v(p) = v + w x (p - x) on the point's body (none on the
/// world): a row J = [d, (p - x) x d] at p_b, its negative at p_a. A wrap's arc lies on its
/// shape's body, and its touching points count as fixed there.
AXION_TENDON_PATH_FN TendonLength spatial_tendon_length(const TendonPath& path, const Real* body_q,
                                                        bool jacobian) {
  if (path.kind[0] == static_cast<int32_t>(TendonPathDesc::Kind::kSlider))
    return slider_crank_length(path, body_q, jacobian);
  TendonLength out{0, {}};
  const auto pull = [&](int body, Vec3 point, Vec3 direction) {
    if (body < 0) return;
    int side = 0;
    while (side < 3 && path.sides[side] != body) ++side;
    const Vec3 lever = point - body_position(body_q, body);
    out.jac[side].lin += direction;
    out.jac[side].ang += cross(lever, direction);
  };
  const int32_t kSite = static_cast<int32_t>(TendonPathDesc::Kind::kSite);
  const int32_t kPulley = static_cast<int32_t>(TendonPathDesc::Kind::kPulley);
  Real divisor = 1;
  int j = 0;
  while (j < path.count - 1) {
    // a pulley starts a branch with its divisor
    if (path.kind[j] == kPulley) {
      divisor = path.size[j];
      ++j;
      continue;
    }
    if (path.kind[j + 1] == kPulley) {
      ++j;
      continue;
    }
    // site j to the next site, around the shape between them if there is one
    const int wrap = path.kind[j + 1] == kSite ? -1 : j + 1;
    const int next = wrap < 0 ? j + 1 : j + 2;
    Vec3 point[4];
    int body[4];
    int points = 2;
    point[0] = path_point(body_q, path.body[j], path.pos + 3 * j);
    body[0] = path.body[j];
    const Vec3 end = path_point(body_q, path.body[next], path.pos + 3 * next);
    Real arc = -1;
    if (wrap >= 0) {
      const int wb = path.body[wrap];
      const Vec3 centre = path_point(body_q, wb, path.pos + 3 * wrap);
      Quat rot = load_quat(path.quat + 4 * wrap);
      if (wb >= 0) rot = body_rotation(body_q, wb) * rot;
      Vec3 side;
      const int side_body = path.side_body[wrap];
      if (side_body > -2) side = path_point(body_q, side_body, path.side_pos + 3 * wrap);
      arc = wrap_path(point[0], end, centre, rot, path.size[wrap],
                      path.kind[wrap] == static_cast<int32_t>(TendonPathDesc::Kind::kCylinder),
                      side_body > -2 ? &side : nullptr, &point[1], &point[2]);
      if (arc >= 0) {
        body[1] = body[2] = wb;
        points = 4;
      }
    }
    point[points - 1] = end;
    body[points - 1] = path.body[next];
    // the straight pieces (a wrap's two, its arc between them), or the one
    Real length = norm(point[1] - point[0]);
    if (points == 4) length += arc + norm(point[3] - point[2]);
    out.value += length / divisor;
    if (jacobian) {
      for (int k = 0; k + 1 < points; ++k) {
        if (body[k] == body[k + 1]) continue;
        const Vec3 d = (Real(1) / divisor) * path_normalize3(point[k + 1] - point[k]);
        pull(body[k + 1], point[k + 1], d);
        pull(body[k], point[k], -d);
      }
    }
    j = next;
  }
  return out;
}

#else
TendonLength spatial_tendon_length(const TendonPath& path, const Real* body_q, bool jacobian);
#endif

/// A spatial tendon's length and Jacobian at the iterate q+, stored once per evaluation for its
/// rows (world_evaluate_tendons), as a DOF's coordinate is (dof_evaluate).
AXION_HD void tendon_evaluate(const BatchView& v, int tendon) {
  const TendonLength path = spatial_tendon_length(tendon_path(v, tendon), v.body_q, true);
  v.tendon_length[tendon] = path.value;
  for (int side = 0; side < 4; ++side)
    store6(v.tendon_jac + 24 * tendon + 6 * side, path.jac[side]);
}
// ... and read back.
AXION_HD TendonLength tendon_at_iterate(const BatchView& v, int tendon) {
  TendonLength out{v.tendon_length[tendon], {}};
  for (int side = 0; side < 4; ++side) out.jac[side] = load6(v.tendon_jac + 24 * tendon + 6 * side);
  return out;
}

}  // namespace kernels
}  // namespace axion
