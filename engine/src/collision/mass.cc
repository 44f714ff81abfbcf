#include "collision/mass.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace axion {
namespace {

constexpr Real kPi = Real(3.14159265358979323846);

absl::Status CheckPositive(Real value, const char* field) {
  if (!std::isfinite(value) || !(value > 0)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("shape %s must be finite and > 0, got %g", field, value));
  }
  return absl::OkStatus();
}

}  // namespace

MassProperties SphereMassProperties(Real radius, Real density) {
  MassProperties m;
  m.volume = 4 * kPi * radius * radius * radius / 3;
  m.mass = density * m.volume;
  Real i = 2 * m.mass * radius * radius / 5;
  m.inertia = mat33_diag({i, i, i});
  return m;
}

MassProperties CapsuleMassProperties(Real radius, Real half_length, Real density) {
  // Same expressions, in the same order, as MuJoCo so that masses agree to rounding.
  Real height = 2 * half_length;
  Real volume = kPi * (radius * radius * height + Real(4) / 3 * radius * radius * radius);
  MassProperties m;
  m.volume = volume;
  m.mass = density * volume;
  Real sphere_mass = m.mass * 4 * radius / (4 * radius + 3 * height);  // two caps: one sphere
  Real cylinder_mass = m.mass - sphere_mass;
  Real ixx = cylinder_mass * (3 * radius * radius + height * height) / 12;
  Real izz = cylinder_mass * radius * radius / 2;
  // each cap: 2/5 m r^2 about its flat face centre, shifted to the capsule centre
  Real sphere_inertia = 2 * sphere_mass * radius * radius / 5;
  ixx += sphere_inertia + sphere_mass * height * (3 * radius + 2 * height) / 8;
  izz += sphere_inertia;
  m.inertia = mat33_diag({ixx, ixx, izz});
  return m;
}

MassProperties BoxMassProperties(Vec3 half_extents, Real density) {
  const Vec3& s = half_extents;
  MassProperties m;
  m.volume = 8 * s.x * s.y * s.z;
  m.mass = density * m.volume;
  m.inertia =
      mat33_diag({m.mass * (s.y * s.y + s.z * s.z) / 3, m.mass * (s.x * s.x + s.z * s.z) / 3,
                  m.mass * (s.x * s.x + s.y * s.y) / 3});
  return m;
}

MassProperties CylinderMassProperties(Real radius, Real half_length, Real density) {
  Real height = 2 * half_length;
  MassProperties m;
  m.volume = kPi * radius * radius * height;
  m.mass = density * m.volume;
  Real ixx = m.mass * (3 * radius * radius + height * height) / 12;
  m.inertia = mat33_diag({ixx, ixx, m.mass * radius * radius / 2});
  return m;
}

absl::StatusOr<MassProperties> HullMassProperties(const HullData& hull, Real density) {
  if (hull.vertex_count() < 4 || hull.face_count() < 4) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "hull mass properties need a closed polyhedron, got %d vertices and %d faces",
        hull.vertex_count(), hull.face_count()));
  }
  // Tetrahedra from a reference point inside the hull (the vertex centroid, which also keeps the
  // products small) to every face triangle. For a tetrahedron (0, a, b, c) of volume V:
  //   integral of x dV = V (a + b + c) / 4
  //   integral of x x^T dV = V / 20 (a a^T + b b^T + c c^T + s s^T),  s = a + b + c.
  Vec3 ref;
  for (int i = 0; i < hull.vertex_count(); ++i) ref += hull.vertex(i);
  ref = (Real(1) / hull.vertex_count()) * ref;
  Real volume = 0;
  Vec3 first;
  Real second[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
  for (int f = 0; f < hull.face_count(); ++f) {
    int begin = hull.face_offset[f], n = hull.face_offset[f + 1] - begin;
    Vec3 a = hull.vertex(hull.faces[begin]) - ref;
    for (int k = 1; k + 1 < n; ++k) {
      Vec3 b = hull.vertex(hull.faces[begin + k]) - ref;
      Vec3 c = hull.vertex(hull.faces[begin + k + 1]) - ref;
      Real v = dot(a, cross(b, c)) / 6;
      Vec3 s = a + b + c;
      volume += v;
      first += (v / 4) * s;
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
          second[i][j] += v / 20 * (a[i] * a[j] + b[i] * b[j] + c[i] * c[j] + s[i] * s[j]);
        }
      }
    }
  }
  if (!(volume > 0)) {
    return absl::InvalidArgumentError(absl::StrFormat("hull has non-positive volume %g", volume));
  }
  Vec3 com = (Real(1) / volume) * first;
  MassProperties m;
  m.volume = volume;
  m.mass = density * volume;
  m.com = ref + com;
  // second moment about the centre of mass, then I = trace(C) 1 - C
  Real c[3][3];
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) c[i][j] = second[i][j] - volume * com[i] * com[j];
  }
  Real trace = c[0][0] + c[1][1] + c[2][2];
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) m.inertia(i, j) = density * ((i == j ? trace : 0) - c[i][j]);
  }
  return m;
}

absl::StatusOr<MassProperties> ShapeMassProperties(ShapeType type, Vec3 size,
                                                   const std::vector<Vec3>& vertices,
                                                   Real density) {
  if (!std::isfinite(density) || density < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("shape density must be finite and >= 0, got %g", density));
  }
  switch (type) {
    case ShapeType::kPlane:
      return absl::InvalidArgumentError("a plane has no mass properties (infinite volume)");
    case ShapeType::kHeightField:
      return absl::InvalidArgumentError("a height field has no mass properties (static terrain)");
    case ShapeType::kSphere:
      if (absl::Status s = CheckPositive(size.x, "radius (size.x)"); !s.ok()) return s;
      return SphereMassProperties(size.x, density);
    case ShapeType::kCapsule:
      if (absl::Status s = CheckPositive(size.x, "radius (size.x)"); !s.ok()) return s;
      if (!std::isfinite(size.y) || size.y < 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "capsule half length (size.y) must be finite and >= 0, got %g", size.y));
      }
      return CapsuleMassProperties(size.x, size.y, density);
    case ShapeType::kBox:
      if (absl::Status s = CheckPositive(size.x, "half extent size.x"); !s.ok()) return s;
      if (absl::Status s = CheckPositive(size.y, "half extent size.y"); !s.ok()) return s;
      if (absl::Status s = CheckPositive(size.z, "half extent size.z"); !s.ok()) return s;
      return BoxMassProperties(size, density);
    case ShapeType::kCylinder:
      if (absl::Status s = CheckPositive(size.x, "radius (size.x)"); !s.ok()) return s;
      if (absl::Status s = CheckPositive(size.y, "half length (size.y)"); !s.ok()) return s;
      return CylinderMassProperties(size.x, size.y, density);
    case ShapeType::kConvexHull: {
      absl::StatusOr<HullData> hull = BuildHull(vertices);
      if (!hull.ok()) return hull.status();
      return HullMassProperties(*hull, density);
    }
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown shape type %d", static_cast<int>(type)));
}

MassProperties TransformMassProperties(const MassProperties& m, Vec3 pos, Quat quat) {
  Mat33 r = quat_to_mat(quat);
  MassProperties out = m;
  out.com = r * m.com + pos;
  out.inertia = r * m.inertia * transpose(r);
  return out;
}

MassProperties CombineMassProperties(const MassProperties& a, const MassProperties& b) {
  MassProperties out;
  out.volume = a.volume + b.volume;
  out.mass = a.mass + b.mass;
  // massless parts (density 0) still get a centre: the volume-weighted one
  Real wa = out.mass > 0 ? a.mass : a.volume, wb = out.mass > 0 ? b.mass : b.volume;
  out.com = (wa + wb) > 0 ? (Real(1) / (wa + wb)) * (wa * a.com + wb * b.com) : a.com;
  // parallel-axis theorem: I + m (|d|^2 1 - d d^T)
  auto shifted = [&](const MassProperties& p) {
    Vec3 d = p.com - out.com;
    Mat33 s = p.inertia;
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) s(i, j) += p.mass * ((i == j ? dot(d, d) : 0) - d[i] * d[j]);
    }
    return s;
  };
  out.inertia = shifted(a) + shifted(b);
  return out;
}

}  // namespace axion
