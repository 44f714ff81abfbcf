// Small fixed-size linear algebra used by every kernel, on host and device alike.
// Quaternions are (w, x, y, z) and rotate body-frame vectors into the world frame.
#pragma once

#include <algorithm>
#include <cmath>

#include "axion/config.h"

namespace axion {

struct Vec3 {
  Real x = 0, y = 0, z = 0;
  AXION_HD Real& operator[](int i) { return i == 0 ? x : (i == 1 ? y : z); }
  AXION_HD Real operator[](int i) const { return i == 0 ? x : (i == 1 ? y : z); }
};

AXION_HD Vec3 make_vec3(Real x, Real y, Real z) { return Vec3{x, y, z}; }
AXION_HD Vec3 operator+(Vec3 a, Vec3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
AXION_HD Vec3 operator-(Vec3 a, Vec3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
AXION_HD Vec3 operator-(Vec3 a) { return {-a.x, -a.y, -a.z}; }
AXION_HD Vec3 operator*(Real s, Vec3 a) { return {s * a.x, s * a.y, s * a.z}; }
AXION_HD Vec3 operator*(Vec3 a, Real s) { return {s * a.x, s * a.y, s * a.z}; }
AXION_HD Vec3& operator+=(Vec3& a, Vec3 b) {
  a = a + b;
  return a;
}
AXION_HD Vec3& operator-=(Vec3& a, Vec3 b) {
  a = a - b;
  return a;
}
AXION_HD Real dot(Vec3 a, Vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
AXION_HD Vec3 cross(Vec3 a, Vec3 b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
AXION_HD Real norm(Vec3 a) { return std::sqrt(dot(a, a)); }
AXION_HD Vec3 normalized(Vec3 a) {
  Real n = norm(a);
  return n > Real(0) ? (Real(1) / n) * a : Vec3{};
}
AXION_HD Vec3 cwise_mul(Vec3 a, Vec3 b) { return {a.x * b.x, a.y * b.y, a.z * b.z}; }
// The unit vector along axis k (0: x, 1: y, 2: z).
AXION_HD Vec3 unit_axis(int k) {
  return {k == 0 ? Real(1) : Real(0), k == 1 ? Real(1) : Real(0), k == 2 ? Real(1) : Real(0)};
}
AXION_HD Vec3 load3(const Real* p) { return {p[0], p[1], p[2]}; }
AXION_HD void store3(Real* p, Vec3 v) {
  p[0] = v.x;
  p[1] = v.y;
  p[2] = v.z;
}

// Two unit vectors completing `n` to a right-handed orthonormal basis (n, t1, t2).
AXION_HD void orthonormal_basis(Vec3 n, Vec3* t1, Vec3* t2) {
  // Branch-free construction of Duff et al. 2017, "Building an Orthonormal Basis, Revisited".
  Real sign = std::copysign(Real(1), n.z);
  Real a = Real(-1) / (sign + n.z);
  Real b = n.x * n.y * a;
  *t1 = {Real(1) + sign * n.x * n.x * a, sign * b, -sign * n.x};
  *t2 = {b, sign + n.y * n.y * a, -n.y};
}

// Row-major 3x3 matrix.
struct Mat33 {
  Real m[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  AXION_HD Real& operator()(int r, int c) { return m[3 * r + c]; }
  AXION_HD Real operator()(int r, int c) const { return m[3 * r + c]; }
};

AXION_HD Mat33 mat33_identity() {
  Mat33 r;
  r.m[0] = r.m[4] = r.m[8] = 1;
  return r;
}
AXION_HD Mat33 mat33_diag(Vec3 d) {
  Mat33 r;
  r.m[0] = d.x;
  r.m[4] = d.y;
  r.m[8] = d.z;
  return r;
}
AXION_HD Mat33 load33(const Real* p) {
  Mat33 r;
  for (int i = 0; i < 9; ++i) r.m[i] = p[i];
  return r;
}
AXION_HD void store33(Real* p, const Mat33& a) {
  for (int i = 0; i < 9; ++i) p[i] = a.m[i];
}
AXION_HD Vec3 operator*(const Mat33& a, Vec3 v) {
  return {a.m[0] * v.x + a.m[1] * v.y + a.m[2] * v.z, a.m[3] * v.x + a.m[4] * v.y + a.m[5] * v.z,
          a.m[6] * v.x + a.m[7] * v.y + a.m[8] * v.z};
}
AXION_HD Mat33 operator*(const Mat33& a, const Mat33& b) {
  Mat33 r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r(i, j) = a(i, 0) * b(0, j) + a(i, 1) * b(1, j) + a(i, 2) * b(2, j);
  return r;
}
AXION_HD Mat33 operator+(const Mat33& a, const Mat33& b) {
  Mat33 r;
  for (int i = 0; i < 9; ++i) r.m[i] = a.m[i] + b.m[i];
  return r;
}
AXION_HD Mat33 operator*(Real s, const Mat33& a) {
  Mat33 r;
  for (int i = 0; i < 9; ++i) r.m[i] = s * a.m[i];
  return r;
}
AXION_HD Mat33 transpose(const Mat33& a) {
  Mat33 r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r(i, j) = a(j, i);
  return r;
}
AXION_HD Mat33 skew(Vec3 v) {
  Mat33 r;
  r(0, 1) = -v.z;
  r(0, 2) = v.y;
  r(1, 0) = v.z;
  r(1, 2) = -v.x;
  r(2, 0) = -v.y;
  r(2, 1) = v.x;
  return r;
}
AXION_HD Real det(const Mat33& a) {
  return a(0, 0) * (a(1, 1) * a(2, 2) - a(1, 2) * a(2, 1)) -
         a(0, 1) * (a(1, 0) * a(2, 2) - a(1, 2) * a(2, 0)) +
         a(0, 2) * (a(1, 0) * a(2, 1) - a(1, 1) * a(2, 0));
}
// Inverse by the adjugate; the caller guarantees det != 0 (validated inertia tensors).
AXION_HD Mat33 inverse(const Mat33& a) {
  Mat33 r;
  Real inv_det = Real(1) / det(a);
  r(0, 0) = (a(1, 1) * a(2, 2) - a(1, 2) * a(2, 1)) * inv_det;
  r(0, 1) = (a(0, 2) * a(2, 1) - a(0, 1) * a(2, 2)) * inv_det;
  r(0, 2) = (a(0, 1) * a(1, 2) - a(0, 2) * a(1, 1)) * inv_det;
  r(1, 0) = (a(1, 2) * a(2, 0) - a(1, 0) * a(2, 2)) * inv_det;
  r(1, 1) = (a(0, 0) * a(2, 2) - a(0, 2) * a(2, 0)) * inv_det;
  r(1, 2) = (a(0, 2) * a(1, 0) - a(0, 0) * a(1, 2)) * inv_det;
  r(2, 0) = (a(1, 0) * a(2, 1) - a(1, 1) * a(2, 0)) * inv_det;
  r(2, 1) = (a(0, 1) * a(2, 0) - a(0, 0) * a(2, 1)) * inv_det;
  r(2, 2) = (a(0, 0) * a(1, 1) - a(0, 1) * a(1, 0)) * inv_det;
  return r;
}

struct Quat {
  Real w = 1, x = 0, y = 0, z = 0;
};

AXION_HD Quat load_quat(const Real* p) { return {p[0], p[1], p[2], p[3]}; }
AXION_HD void store_quat(Real* p, Quat q) {
  p[0] = q.w;
  p[1] = q.x;
  p[2] = q.y;
  p[3] = q.z;
}
AXION_HD Quat operator*(Quat a, Quat b) {
  return {
      a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z, a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
      a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x, a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w};
}
AXION_HD Quat conjugate(Quat q) { return {q.w, -q.x, -q.y, -q.z}; }
AXION_HD Real quat_norm(Quat q) { return std::sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z); }
AXION_HD Quat quat_normalized(Quat q) {
  Real n = quat_norm(q);
  return {q.w / n, q.x / n, q.y / n, q.z / n};
}
AXION_HD Vec3 quat_vec(Quat q) { return {q.x, q.y, q.z}; }
AXION_HD Vec3 rotate(Quat q, Vec3 v) {
  // v + 2 w (u x v) + 2 u x (u x v), u the vector part: 15 multiplies instead of a matrix.
  Vec3 u = quat_vec(q);
  Vec3 t = Real(2) * cross(u, v);
  return v + q.w * t + cross(u, t);
}
AXION_HD Vec3 rotate_inv(Quat q, Vec3 v) { return rotate(conjugate(q), v); }
AXION_HD Mat33 quat_to_mat(Quat q) {
  Mat33 r;
  Real xx = q.x * q.x, yy = q.y * q.y, zz = q.z * q.z;
  Real xy = q.x * q.y, xz = q.x * q.z, yz = q.y * q.z;
  Real wx = q.w * q.x, wy = q.w * q.y, wz = q.w * q.z;
  r(0, 0) = 1 - 2 * (yy + zz);
  r(0, 1) = 2 * (xy - wz);
  r(0, 2) = 2 * (xz + wy);
  r(1, 0) = 2 * (xy + wz);
  r(1, 1) = 1 - 2 * (xx + zz);
  r(1, 2) = 2 * (yz - wx);
  r(2, 0) = 2 * (xz - wy);
  r(2, 1) = 2 * (yz + wx);
  r(2, 2) = 1 - 2 * (xx + yy);
  return r;
}
AXION_HD Quat quat_from_axis_angle(Vec3 axis, Real angle) {
  Vec3 a = normalized(axis);
  Real s = std::sin(Real(0.5) * angle);
  return {std::cos(Real(0.5) * angle), s * a.x, s * a.y, s * a.z};
}
// Rotation vector (axis * angle, angle in [0, pi]) of a unit quaternion: the log map.
AXION_HD Vec3 quat_log(Quat q) {
  if (q.w < 0) q = {-q.w, -q.x, -q.y, -q.z};
  Vec3 v = quat_vec(q);
  Real s = norm(v);
  if (s < Real(1e-12)) return Real(2) * v;
  return (Real(2) * std::atan2(s, q.w) / s) * v;
}

// The rate of the rotation vector phi = log(R) under dR/dt = [w] R is J_l^-1(phi) w, with the
// inverse left Jacobian of SO(3)
//   J_l^-1(phi) = I - [phi]/2 + c [phi]^2,  c = 1/t^2 - (1 + cos t) / (2 t sin t),  t = |phi|.
// rotation_vector_rate_coefficient returns c; rotation_vector_rate_direction returns
// J_l^-T(phi) e = e + phi x e / 2 + c phi x (phi x e): the direction whose dot product with w is
// the rate of e . phi (with c given, where one phi serves several directions e).
AXION_HD Real rotation_vector_rate_coefficient(Vec3 phi) {
  Real t2 = dot(phi, phi);
  // below t = 0.01 the series, exact to round-off
  if (t2 < Real(1e-4)) return Real(1) / Real(12) + t2 / Real(720);
  Real t = std::sqrt(t2);
  Real sin_t = std::sin(t);
  // at t = pi the quotient tends to 0 (1 + cos t ~ (pi - t)^2 / 2)
  return Real(1) / t2 -
         (std::fabs(sin_t) > Real(1e-6) ? (Real(1) + std::cos(t)) / (2 * t * sin_t) : Real(0));
}
AXION_HD Vec3 rotation_vector_rate_direction(Vec3 phi, Real c, Vec3 e) {
  Vec3 pxe = cross(phi, e);
  return e + Real(0.5) * pxe + c * cross(phi, pxe);
}
AXION_HD Vec3 rotation_vector_rate_direction(Vec3 phi, Vec3 e) {
  return rotation_vector_rate_direction(phi, rotation_vector_rate_coefficient(phi), e);
}

// Spatial 6-vector: linear part first, then angular (the order of the twist u = (v, w)).
struct Vec6 {
  Vec3 lin, ang;
};
AXION_HD Vec6 load6(const Real* p) { return {{p[0], p[1], p[2]}, {p[3], p[4], p[5]}}; }
AXION_HD void store6(Real* p, Vec6 v) {
  p[0] = v.lin.x;
  p[1] = v.lin.y;
  p[2] = v.lin.z;
  p[3] = v.ang.x;
  p[4] = v.ang.y;
  p[5] = v.ang.z;
}
AXION_HD Real dot(Vec6 a, Vec6 b) { return dot(a.lin, b.lin) + dot(a.ang, b.ang); }

// Eigenvalues of a symmetric 3x3 matrix (closed form, Smith 1961), ascending (host only).
inline void symmetric_eigenvalues(const Mat33& a, Real out[3]) {
  Real p1 = a(0, 1) * a(0, 1) + a(0, 2) * a(0, 2) + a(1, 2) * a(1, 2);
  if (p1 == 0) {
    out[0] = a(0, 0);
    out[1] = a(1, 1);
    out[2] = a(2, 2);
  } else {
    Real q = (a(0, 0) + a(1, 1) + a(2, 2)) / 3;
    Real p2 = (a(0, 0) - q) * (a(0, 0) - q) + (a(1, 1) - q) * (a(1, 1) - q) +
              (a(2, 2) - q) * (a(2, 2) - q) + 2 * p1;
    Real p = std::sqrt(p2 / 6);
    Mat33 b = (Real(1) / p) * (a + Real(-q) * mat33_identity());
    Real r = std::clamp(det(b) / 2, Real(-1), Real(1));
    Real phi = std::acos(r) / 3;
    const Real kPi = Real(3.14159265358979323846);
    out[2] = q + 2 * p * std::cos(phi);
    out[0] = q + 2 * p * std::cos(phi + 2 * kPi / 3);
    out[1] = 3 * q - out[0] - out[2];
  }
  std::sort(out, out + 3);
}

// Eigen-decomposition of a symmetric 3x3 matrix by cyclic Jacobi rotations (host only):
// a = axes diag(values) axes^T, the eigenvectors the columns of `axes` (orthonormal, unsorted).
// A 3 x 3 matrix converges to round-off in a handful of sweeps.
inline void symmetric_eigen(const Mat33& m, Real values[3], Mat33* axes) {
  Mat33 a = m, v = mat33_identity();
  for (int sweep = 0; sweep < 50; ++sweep) {
    const Real off = a(0, 1) * a(0, 1) + a(0, 2) * a(0, 2) + a(1, 2) * a(1, 2);
    const Real scale = a(0, 0) * a(0, 0) + a(1, 1) * a(1, 1) + a(2, 2) * a(2, 2);
    if (!(off > Real(1e-30) * scale)) break;
    for (int p = 0; p < 2; ++p) {
      for (int q = p + 1; q < 3; ++q) {
        if (a(p, q) == 0) continue;
        // the rotation in the (p, q) plane that zeroes a(p, q)
        const Real theta = (a(q, q) - a(p, p)) / (2 * a(p, q));
        const Real t =
            (theta >= 0 ? Real(1) : Real(-1)) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const Real c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < 3; ++k) {  // a <- a J, v <- v J
          const Real akp = a(k, p), akq = a(k, q);
          a(k, p) = c * akp - s * akq;
          a(k, q) = s * akp + c * akq;
          const Real vkp = v(k, p), vkq = v(k, q);
          v(k, p) = c * vkp - s * vkq;
          v(k, q) = s * vkp + c * vkq;
        }
        for (int k = 0; k < 3; ++k) {  // a <- J^T a
          const Real apk = a(p, k), aqk = a(q, k);
          a(p, k) = c * apk - s * aqk;
          a(q, k) = s * apk + c * aqk;
        }
      }
    }
  }
  for (int k = 0; k < 3; ++k) values[k] = a(k, k);
  *axes = v;
}

// Whether ascending principal moments break the triangle inequality I1 + I2 >= I3 (beyond
// 1e-6 relative): no real mass distribution has them (host only).
inline bool breaks_triangle_inequality(const Real moments[3]) {
  return moments[0] + moments[1] < moments[2] * (1 - Real(1e-6));
}

}  // namespace axion
