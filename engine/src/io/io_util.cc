#include "io/io_util.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "io/collada.h"
#include "png.h"
#include "tinyxml2.h"

namespace axion::io {

void Warnings::Add(const std::string& key, const std::string& message) {
  auto [it, inserted] = entries_.try_emplace(key);
  if (inserted) {
    it->second.message = message;
    order_.push_back(key);
  }
  ++it->second.count;
}

std::vector<std::string> Warnings::Lines() const {
  std::vector<std::string> lines;
  for (const std::string& key : order_) {
    const Entry& e = entries_.at(key);
    lines.push_back(e.count > 1 ? absl::StrCat(e.message, " (", e.count, " occurrences)")
                                : e.message);
  }
  return lines;
}

bool ParseReals(std::string_view text, std::vector<Real>* values) {
  values->clear();
  size_t i = 0;
  auto separator = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',';
  };
  while (i < text.size()) {
    while (i < text.size() && separator(text[i])) ++i;
    if (i == text.size()) break;
    size_t start = i;
    while (i < text.size() && !separator(text[i])) ++i;
    // strtod needs a terminated copy.
    std::string copy(text.substr(start, i - start));
    char* end = nullptr;
    double v = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size() || !std::isfinite(v)) return false;
    values->push_back(static_cast<Real>(v));
  }
  return true;
}

Pose ComposePose(const Pose& a, const Pose& b) {
  Pose c = compose(a, b);
  c.quat = quat_normalized(c.quat);
  return c;
}

Pose InversePose(const Pose& a) {
  Quat inv = conjugate(a.quat);
  return {-rotate(inv, a.pos), inv};
}

Quat QuatFromMatrix(const Mat33& r) {
  // Shepperd's method: pick the largest of the four squared components for stability.
  Real trace = r(0, 0) + r(1, 1) + r(2, 2);
  Quat q;
  if (trace > 0) {
    Real s = std::sqrt(trace + 1) * 2;
    q = {s / 4, (r(2, 1) - r(1, 2)) / s, (r(0, 2) - r(2, 0)) / s, (r(1, 0) - r(0, 1)) / s};
  } else if (r(0, 0) > r(1, 1) && r(0, 0) > r(2, 2)) {
    Real s = std::sqrt(1 + r(0, 0) - r(1, 1) - r(2, 2)) * 2;
    q = {(r(2, 1) - r(1, 2)) / s, s / 4, (r(0, 1) + r(1, 0)) / s, (r(0, 2) + r(2, 0)) / s};
  } else if (r(1, 1) > r(2, 2)) {
    Real s = std::sqrt(1 + r(1, 1) - r(0, 0) - r(2, 2)) * 2;
    q = {(r(0, 2) - r(2, 0)) / s, (r(0, 1) + r(1, 0)) / s, s / 4, (r(1, 2) + r(2, 1)) / s};
  } else {
    Real s = std::sqrt(1 + r(2, 2) - r(0, 0) - r(1, 1)) * 2;
    q = {(r(1, 0) - r(0, 1)) / s, (r(0, 2) + r(2, 0)) / s, (r(1, 2) + r(2, 1)) / s, s / 4};
  }
  if (q.w < 0) q = {-q.w, -q.x, -q.y, -q.z};
  return quat_normalized(q);
}

Quat QuatFromZAxis(Vec3 z) {
  // Same construction as MuJoCo (axis = z0 x z, angle = atan2(|z0 x z|, z.z)), so capsule
  // frames built from `fromto` match MuJoCo's to the last bit where it matters.
  Vec3 axis = cross(Vec3{0, 0, 1}, z);
  Real s = norm(axis);
  if (s < Real(1e-10)) {
    axis = {1, 0, 0};
  } else {
    axis = (Real(1) / s) * axis;
  }
  Real angle = std::atan2(s, z.z);
  Real sh = std::sin(angle / 2);
  return {std::cos(angle / 2), sh * axis.x, sh * axis.y, sh * axis.z};
}

Quat QuatFromXAxis(Vec3 x) {
  Vec3 a = normalized(x);
  Vec3 axis = cross(Vec3{1, 0, 0}, a);
  Real s = norm(axis);
  if (s < Real(1e-12)) {
    if (a.x > 0) return Quat{};
    return Quat{0, 0, 0, 1};  // half turn about z maps +x to -x
  }
  return quat_from_axis_angle(axis, std::atan2(s, a.x));
}

Quat QuatFromRpy(Vec3 rpy) {
  Quat qx = quat_from_axis_angle({1, 0, 0}, rpy.x);
  Quat qy = quat_from_axis_angle({0, 1, 0}, rpy.y);
  Quat qz = quat_from_axis_angle({0, 0, 1}, rpy.z);
  return quat_normalized(qz * qy * qx);
}

Mat33 RotateTensor(Quat q, const Mat33& inertia) {
  Mat33 r = quat_to_mat(q);
  return r * inertia * transpose(r);
}

Mat33 PointMassTensor(Real mass, Vec3 d) {
  Mat33 t;
  Real dd = dot(d, d);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) t(i, j) = mass * ((i == j ? dd : Real(0)) - d[i] * d[j]);
  }
  return t;
}

Real ShapeVolume(MassShape shape, Vec3 s) {
  constexpr Real kPi = Real(3.14159265358979323846);
  switch (shape) {
    case MassShape::kSphere:
      return Real(4) / 3 * kPi * s.x * s.x * s.x;
    case MassShape::kCapsule:
      return kPi * (s.x * s.x * 2 * s.y + s.x * s.x * s.x * Real(4) / 3);
    case MassShape::kCylinder:
      return kPi * s.x * s.x * 2 * s.y;
    case MassShape::kBox:
      return 8 * s.x * s.y * s.z;
    case MassShape::kEllipsoid:
      return Real(4) / 3 * kPi * s.x * s.y * s.z;
  }
  return 0;
}

Vec3 ShapeUnitInertia(MassShape shape, Vec3 s) {
  switch (shape) {
    case MassShape::kSphere: {
      Real i = Real(2) / 5 * s.x * s.x;
      return {i, i, i};
    }
    case MassShape::kCapsule: {
      // Cylinder plus two hemispheres whose inertia is moved to the capsule centre, with each
      // part's mass in proportion to its volume (MuJoCo's formula).
      Real r = s.x, h = 2 * s.y;
      Real sphere = 4 * r / (4 * r + 3 * h);
      Real cylinder = 1 - sphere;
      Real sphere_inertia = Real(2) / 5 * sphere * r * r;
      Real ixx =
          cylinder * (3 * r * r + h * h) / 12 + sphere_inertia + sphere * h * (3 * r + 2 * h) / 8;
      Real izz = cylinder * r * r / 2 + sphere_inertia;
      return {ixx, ixx, izz};
    }
    case MassShape::kCylinder: {
      Real r = s.x, h = 2 * s.y;
      Real ixx = (3 * r * r + h * h) / 12;
      return {ixx, ixx, r * r / 2};
    }
    case MassShape::kBox:
      return {(s.y * s.y + s.z * s.z) / 3, (s.x * s.x + s.z * s.z) / 3,
              (s.x * s.x + s.y * s.y) / 3};
    case MassShape::kEllipsoid:
      return {(s.y * s.y + s.z * s.z) / 5, (s.x * s.x + s.z * s.z) / 5,
              (s.x * s.x + s.y * s.y) / 5};
  }
  return {};
}

std::vector<Vec3> EllipsoidHullPoints(Vec3 radii, int rings, int segments) {
  constexpr Real kPi = Real(3.14159265358979323846);
  std::vector<Vec3> points;
  points.push_back({0, 0, radii.z});
  points.push_back({0, 0, -radii.z});
  for (int i = 1; i < rings; ++i) {
    Real theta = kPi * i / rings;
    for (int j = 0; j < segments; ++j) {
      Real phi = 2 * kPi * j / segments;
      points.push_back({radii.x * std::sin(theta) * std::cos(phi),
                        radii.y * std::sin(theta) * std::sin(phi), radii.z * std::cos(theta)});
    }
  }
  return points;
}

namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// STL: every facet's three corners as vertices of their own (STL shares none).
absl::StatusOr<TriangleMesh> ParseStl(const std::string& path, const std::string& bytes) {
  TriangleMesh mesh;
  auto add_facet = [&mesh] {
    const int first = static_cast<int>(mesh.vertices.size()) - 3;
    mesh.triangles.push_back({first, first + 1, first + 2});
  };
  bool binary = false;
  if (bytes.size() >= 84) {
    uint32_t count = 0;
    std::memcpy(&count, bytes.data() + 80, 4);
    binary = bytes.size() == 84 + 50 * static_cast<size_t>(count);
  }
  if (binary) {
    uint32_t count = 0;
    std::memcpy(&count, bytes.data() + 80, 4);
    for (uint32_t t = 0; t < count; ++t) {
      const char* tri = bytes.data() + 84 + 50 * static_cast<size_t>(t);
      for (int v = 0; v < 3; ++v) {
        float xyz[3];
        std::memcpy(xyz, tri + 12 + 12 * v, 12);  // after the facet normal
        mesh.vertices.push_back({xyz[0], xyz[1], xyz[2]});
      }
      add_facet();
    }
    return mesh;
  }
  if (bytes.compare(0, 5, "solid") != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("mesh '", path,
                     "': neither a binary STL (size does not match its triangle count) nor "
                     "an ASCII STL (no 'solid' header)"));
  }
  std::istringstream in(bytes);
  std::string line;
  int line_number = 0;
  int corners = 0;  // of the current facet
  while (std::getline(in, line)) {
    ++line_number;
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.substr(0, 8) == "endfacet") {
      if (corners != 3) {
        return absl::InvalidArgumentError(absl::StrCat("mesh '", path, "' line ", line_number,
                                                       ": facet with ", corners,
                                                       " vertices (3 expected)"));
      }
      add_facet();
      corners = 0;
      continue;
    }
    if (text.substr(0, 6) != "vertex") continue;
    std::vector<Real> xyz;
    if (!ParseReals(std::string(text.substr(6)), &xyz) || xyz.size() != 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh '", path, "' line ", line_number, ": bad vertex '", text, "'"));
    }
    mesh.vertices.push_back({xyz[0], xyz[1], xyz[2]});
    ++corners;
  }
  return mesh;
}

// OBJ: "v x y z [w]" vertices and "f a b c ..." faces (a, a/t, a//n or a/t/n; negative indices
// count back from the last vertex), polygons split into a fan of triangles.
absl::StatusOr<TriangleMesh> ParseObj(const std::string& path, const std::string& bytes) {
  TriangleMesh mesh;
  std::vector<std::pair<int, std::vector<int>>> faces;  // (line, 1-based or negative indices)
  std::istringstream in(bytes);
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.size() < 2 || (text[1] != ' ' && text[1] != '\t')) continue;
    if (text[0] == 'v') {
      std::vector<Real> xyz;
      // "v x y z [w]" or "v x y z r g b": the first three numbers are the position.
      if (!ParseReals(std::string(text.substr(2)), &xyz) || xyz.size() < 3) {
        return absl::InvalidArgumentError(
            absl::StrCat("mesh '", path, "' line ", line_number, ": bad vertex '", text, "'"));
      }
      mesh.vertices.push_back({xyz[0], xyz[1], xyz[2]});
    } else if (text[0] == 'f') {
      std::vector<int> corners;
      std::istringstream tokens{std::string(text.substr(2))};
      std::string token;
      while (tokens >> token) {
        const std::string index = token.substr(0, token.find('/'));
        int value = 0;
        auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), value);
        if (ec != std::errc() || end != index.data() + index.size() || value == 0) {
          return absl::InvalidArgumentError(absl::StrCat("mesh '", path, "' line ", line_number,
                                                         ": bad face corner '", token, "'"));
        }
        corners.push_back(value);
      }
      // a "face" of one or two corners (some exporters write them) encloses nothing: skipped
      if (corners.size() >= 3) faces.push_back({line_number, std::move(corners)});
    }
  }
  const int count = static_cast<int>(mesh.vertices.size());
  for (const auto& [face_line, corners] : faces) {
    std::vector<int> index;
    for (int c : corners) {
      int i = c > 0 ? c - 1 : count + c;  // negative: relative to the end of the vertex list
      if (i < 0 || i >= count) {
        return absl::InvalidArgumentError(absl::StrCat("mesh '", path, "' line ", face_line,
                                                       ": vertex ", c, " does not exist (", count,
                                                       " vertices)"));
      }
      index.push_back(i);
    }
    for (size_t k = 1; k + 1 < index.size(); ++k)
      mesh.triangles.push_back({index[0], index[k], index[k + 1]});
  }
  return mesh;
}

// MSH, MuJoCo's own binary mesh: int32 counts of vertices (4 or more), normals and texture
// coordinates (each 0 or one per vertex) and faces, then that many float32 xyz, xyz and uv, then
// int32 corner triples (0-based). Normals and texture coordinates only render. Without faces, the
// vertices alone (MuJoCo then takes their convex hull, as Axion's collision does).
absl::StatusOr<TriangleMesh> ParseMsh(const std::string& path, const std::string& bytes) {
  int32_t count[4] = {0, 0, 0, 0};  // vertices, normals, texture coordinates, faces
  if (bytes.size() >= sizeof(count)) std::memcpy(count, bytes.data(), sizeof(count));
  if (bytes.size() < sizeof(count) || count[0] < 4 || count[1] < 0 || count[2] < 0 ||
      count[3] < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mesh '", path, "': not an MSH file (its header needs 4 counts, vertices at least 4)"));
  }
  // MuJoCo's rule: normals and texture coordinates are per vertex, or absent
  if ((count[1] > 0 && count[1] != count[0]) || (count[2] > 0 && count[2] != count[0])) {
    return absl::InvalidArgumentError(
        absl::StrCat("mesh '", path, "': MSH normals (", count[1], ") and texture coordinates (",
                     count[2], ") must each be 0 or one per vertex (", count[0], ")"));
  }
  const uint64_t expected = 16 + 12 * (uint64_t(count[0]) + uint64_t(count[1])) +
                            8 * uint64_t(count[2]) + 12 * uint64_t(count[3]);
  if (bytes.size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mesh '", path, "': MSH size ", bytes.size(), " bytes does not match its counts (",
        count[0], " vertices, ", count[1], " normals, ", count[2], " texture coordinates, ",
        count[3], " faces: ", expected, " bytes)"));
  }
  TriangleMesh mesh;
  const char* at = bytes.data() + 16;
  for (int32_t v = 0; v < count[0]; ++v, at += 12) {
    float xyz[3];
    std::memcpy(xyz, at, 12);
    if (!std::isfinite(xyz[0]) || !std::isfinite(xyz[1]) || !std::isfinite(xyz[2])) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh '", path, "': vertex ", v, " is not finite"));
    }
    mesh.vertices.push_back({xyz[0], xyz[1], xyz[2]});
  }
  at += 12 * size_t(count[1]) + 8 * size_t(count[2]);
  for (int32_t f = 0; f < count[3]; ++f, at += 12) {
    int32_t corner[3];
    std::memcpy(corner, at, 12);
    for (int32_t c : corner) {
      if (c < 0 || c >= count[0]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "mesh '", path, "': face ", f, " names vertex ", c, " (", count[0], " vertices)"));
      }
    }
    mesh.triangles.push_back({corner[0], corner[1], corner[2]});
  }
  return mesh;
}

}  // namespace

absl::StatusOr<TriangleMesh> LoadTriangleMesh(const std::string& path, Vec3 scale,
                                              const std::string& root) {
  std::string lower = Lower(path);
  if (!EndsWith(lower, ".stl") && !EndsWith(lower, ".obj") && !EndsWith(lower, ".msh") &&
      !EndsWith(lower, ".dae")) {
    return absl::InvalidArgumentError(
        absl::StrCat("mesh '", path,
                     "': unsupported format (STL, OBJ, COLLADA (.dae) and MuJoCo's MSH are "
                     "supported)"));
  }
  absl::StatusOr<std::string> bytes = ReadFile(path, root);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<TriangleMesh> mesh = EndsWith(lower, ".stl")   ? ParseStl(path, *bytes)
                                      : EndsWith(lower, ".obj") ? ParseObj(path, *bytes)
                                      : EndsWith(lower, ".dae") ? ParseCollada(path, *bytes)
                                                                : ParseMsh(path, *bytes);
  if (!mesh.ok()) return mesh.status();
  if (mesh->vertices.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("mesh '", path, "' has no vertices"));
  }
  for (Vec3& v : mesh->vertices) v = cwise_mul(v, scale);
  return mesh;
}

absl::StatusOr<std::vector<Vec3>> LoadMeshVertices(const std::string& path, Vec3 scale,
                                                   const std::string& root) {
  absl::StatusOr<TriangleMesh> mesh = LoadTriangleMesh(path, scale, root);
  if (!mesh.ok()) return mesh.status();
  return UniqueVertices(mesh->vertices);
}

std::vector<Vec3> UniqueVertices(const std::vector<Vec3>& vertices) {
  std::set<std::tuple<Real, Real, Real>> seen;
  std::vector<Vec3> points;
  for (Vec3 p : vertices) {
    if (seen.insert({p.x, p.y, p.z}).second) points.push_back(p);
  }
  return points;
}

bool PointsSpanVolume(const std::vector<Vec3>& points) {
  if (points.size() < 4) return false;
  // Scale-aware tolerance from the bounding box diagonal.
  Vec3 lo = points[0], hi = points[0];
  for (Vec3 p : points) {
    for (int k = 0; k < 3; ++k) {
      lo[k] = std::min(lo[k], p[k]);
      hi[k] = std::max(hi[k], p[k]);
    }
  }
  Real extent = norm(hi - lo);
  if (extent <= 0) return false;
  Real eps = Real(1e-9) * extent;
  // Farthest point from p0, then from the line, then from the plane.
  Vec3 p0 = points[0];
  size_t i1 = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    if (norm(points[i] - p0) > norm(points[i1] - p0)) i1 = i;
  }
  Vec3 d = normalized(points[i1] - p0);
  size_t i2 = 0;
  Real best = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    Real dist = norm(cross(points[i] - p0, d));
    if (dist > best) best = dist, i2 = i;
  }
  if (best <= eps) return false;
  Vec3 n = normalized(cross(points[i1] - p0, points[i2] - p0));
  for (Vec3 p : points) {
    if (std::abs(dot(p - p0, n)) > eps) return true;
  }
  return false;
}

bool BreaksTriangleInequality(const Mat33& inertia, Real moments[3]) {
  symmetric_eigenvalues(inertia, moments);
  return breaks_triangle_inequality(moments);
}

Mat33 BoundPrincipalMoments(const Mat33& inertia, Real bound) {
  Real moments[3];
  symmetric_eigenvalues(inertia, moments);
  if (!(moments[0] < bound)) return inertia;
  Real values[3];
  Mat33 axes;
  symmetric_eigen(inertia, values, &axes);
  Mat33 bounded;
  for (int k = 0; k < 3; ++k) {
    const Real moment = std::max(values[k], bound);
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) bounded(r, c) += moment * axes(r, k) * axes(c, k);
    }
  }
  return bounded;
}

Mat33 BalancedInertia(const Real moments[3]) {
  return mat33_diag(Vec3{1, 1, 1} * ((moments[0] + moments[1] + moments[2]) / 3));
}

std::string TriangleInequalityMessage(const Real moments[3], bool balanced) {
  std::string moments_text =
      absl::StrCat("principal moments ", moments[0], " + ", moments[1], " < ", moments[2]);
  if (balanced) {
    return absl::StrCat("inertia breaks the triangle inequality (", moments_text,
                        "): each moment set to their mean, ",
                        (moments[0] + moments[1] + moments[2]) / 3, " (balance_inertia)");
  }
  return absl::StrCat("inertia breaks the triangle inequality (", moments_text,
                      "); balance_inertia (axion-sim --balance_inertia, MJCF <compiler "
                      "balanceinertia=\"true\">) sets each to their mean, as MuJoCo does");
}

std::string JoinPath(const std::string& dir, const std::string& file) {
  if (dir.empty() || (!file.empty() && file[0] == '/')) return file;
  if (dir.back() == '/') return dir + file;
  return dir + "/" + file;
}

std::string DirName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return "";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string FindPackageDir(const std::string& root, const std::string& name, int max_depth) {
  namespace fs = std::filesystem;
  std::vector<fs::path> level = {fs::path(root)};
  for (int depth = 0; depth <= max_depth && !level.empty(); ++depth) {
    std::vector<fs::path> next;
    for (const fs::path& dir : level) {
      std::error_code error;
      const fs::path manifest = dir / "package.xml";
      if (fs::is_regular_file(manifest, error)) {
        tinyxml2::XMLDocument doc;
        const tinyxml2::XMLElement* root =
            doc.LoadFile(manifest.string().c_str()) == tinyxml2::XML_SUCCESS ? doc.RootElement()
                                                                             : nullptr;
        const tinyxml2::XMLElement* element = root ? root->FirstChildElement("name") : nullptr;
        const std::string declared =
            element && element->GetText()
                ? std::string(absl::StripAsciiWhitespace(element->GetText()))
                : dir.filename().string();
        if (declared == name) return dir.string();
        continue;  // packages do not nest
      }
      for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
        const std::string child = it->path().filename().string();
        if (!child.empty() && child[0] != '.' && it->is_directory(error))
          next.push_back(it->path());
      }
    }
    std::sort(next.begin(), next.end());  // the same answer on every file system
    level = std::move(next);
  }
  return "";
}

absl::StatusOr<std::string> ReadFile(const std::string& path, const std::string& root) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (error || !fs::exists(status))
    return absl::NotFoundError(absl::StrCat("cannot open file '", path, "'"));
  if (!fs::is_regular_file(status))
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is not a regular file"));
  if (!root.empty()) {
    // both real paths, so that neither '..' nor a symbolic link leads out of root
    const fs::path real = fs::canonical(path, error);
    const fs::path real_root = error ? fs::path() : fs::canonical(root, error);
    const bool within =
        !error &&
        std::mismatch(real_root.begin(), real_root.end(), real.begin(), real.end()).first ==
            real_root.end();
    if (!within) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", path, "' lies outside the directory files may be read from ('", root, "')"));
    }
  }
  const uintmax_t size = fs::file_size(path, error);
  if (error) return absl::NotFoundError(absl::StrCat("cannot open file '", path, "'"));
  if (size > kMaxModelFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "file '", path, "' has ", size, " bytes, over the limit of ", kMaxModelFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open file '", path, "'"));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

absl::StatusOr<HeightMap> LoadHeightMap(const std::string& path, const std::string& root) {
  AXION_IO_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path, root));
  HeightMap map;
  const auto bad = [&](const std::string& problem) {
    return absl::InvalidArgumentError(absl::StrCat("height map '", path, "': ", problem));
  };
  const bool png =
      path.size() >= 4 && absl::AsciiStrToLower(path.substr(path.size() - 4)) == ".png";
  if (png) {
    png_image image;
    std::memset(&image, 0, sizeof(image));
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
      return bad(absl::StrCat("not a readable PNG image (", image.message, ")"));
    image.format = PNG_FORMAT_GRAY;
    map.rows = static_cast<int>(image.height);
    map.cols = static_cast<int>(image.width);
    std::vector<unsigned char> pixels(PNG_IMAGE_SIZE(image));
    if (!png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr)) {
      png_image_free(&image);
      return bad(absl::StrCat("not a readable PNG image (", image.message, ")"));
    }
    // the image's top row is the grid's last (MuJoCo flips it so that north is up)
    map.values.resize(pixels.size());
    for (int r = 0; r < map.rows; ++r) {
      for (int c = 0; c < map.cols; ++c)
        map.values[(map.rows - 1 - r) * map.cols + c] = pixels[r * map.cols + c];
    }
    return map;
  }
  int32_t header[2];
  if (bytes.size() < sizeof(header)) return bad("too short for MuJoCo's binary header");
  std::memcpy(header, bytes.data(), sizeof(header));
  if (header[0] < 1 || header[1] < 1) {
    return bad(absl::StrCat("its header gives ", header[0], " x ", header[1],
                            " points (rows and columns must be positive)"));
  }
  map.rows = header[0];
  map.cols = header[1];
  const uint64_t count = uint64_t(map.rows) * uint64_t(map.cols);
  if (bytes.size() != sizeof(header) + count * sizeof(float)) {
    return bad(absl::StrCat("its header gives ", map.rows, " x ", map.cols, " points, which take ",
                            sizeof(header) + count * sizeof(float), " bytes; the file has ",
                            bytes.size(),
                            " (MuJoCo's binary format: int32 rows, int32 "
                            "columns, float32 values)"));
  }
  map.values.resize(count);
  for (uint64_t k = 0; k < count; ++k) {
    float v;
    std::memcpy(&v, bytes.data() + sizeof(header) + k * sizeof(float), sizeof(v));
    if (!std::isfinite(v)) {
      return bad(absl::StrCat("value ", k, " (row ", k / map.cols, ", column ", k % map.cols,
                              ") is not finite"));
    }
    map.values[k] = v;
  }
  return map;
}

}  // namespace axion::io
