// Helpers shared by the MJCF and URDF importers: warning bookkeeping, number parsing, frame
// math, MuJoCo's shape mass formulas and mesh loading.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "axion/math.h"
#include "axion/model.h"

namespace axion::io {

// Collects warnings, one line per distinct key, counting repeats so that a model with a
// hundred geoms carrying `solimp` gives one line, not a hundred.
class Warnings {
 public:
  void Add(const std::string& key, const std::string& message);
  std::vector<std::string> Lines() const;

 private:
  struct Entry {
    std::string message;
    int count = 0;
  };
  std::vector<std::string> order_;
  std::map<std::string, Entry> entries_;
};

// Parses whitespace-separated reals. False when a token is not a finite number.
bool ParseReals(std::string_view text, std::vector<Real>* values);

// Frame helpers.
Pose ComposePose(const Pose& a, const Pose& b);  // compose(a, b), its rotation renormalised
Pose InversePose(const Pose& a);
Quat QuatFromMatrix(const Mat33& r);  // r: orthonormal, det +1
Quat QuatFromZAxis(Vec3 z);           // MuJoCo's mjuu_z2quat: rotates +z onto z
Quat QuatFromXAxis(Vec3 x);           // shortest arc rotating +x onto x
// Roll-pitch-yaw about fixed axes (URDF): R = Rz(yaw) Ry(pitch) Rx(roll).
Quat QuatFromRpy(Vec3 rpy);
// Rotates a tensor given in frame q into the parent frame: R I R^T.
Mat33 RotateTensor(Quat q, const Mat33& inertia);
// Inertia of a point mass m at offset d about the origin: m (|d|^2 I - d d^T).
Mat33 PointMassTensor(Real mass, Vec3 d);

// Whether the principal moments of `inertia` (returned ascending in `moments`) break the
// triangle inequality I1 + I2 >= I3 beyond the engine's tolerance (1e-6 relative): no real mass
// distribution has them. Vendor URDFs sometimes do.
bool BreaksTriangleInequality(const Mat33& inertia, Real moments[3]);
// MuJoCo's balanceinertia: the three moments set to their mean.
Mat33 BalancedInertia(const Real moments[3]);
// MuJoCo's boundinertia: each principal moment of `inertia` below `bound` raised to it, the
// principal axes kept. The tensor itself when no moment is below the bound.
Mat33 BoundPrincipalMoments(const Mat33& inertia, Real bound);
// What the importers say of such a tensor: the moments, and what balance_inertia would do.
std::string TriangleInequalityMessage(const Real moments[3], bool balanced);

// Volume and principal inertia (about the centre, per unit mass, in the shape frame) of a
// MuJoCo geom, by MuJoCo's formulas. `size` follows MuJoCo's geom size convention.
enum class MassShape { kSphere, kCapsule, kCylinder, kBox, kEllipsoid };
Real ShapeVolume(MassShape shape, Vec3 size);
Vec3 ShapeUnitInertia(MassShape shape, Vec3 size);

// Points on an ellipsoid's surface (rings x segments grid plus poles), for its hull.
std::vector<Vec3> EllipsoidHullPoints(Vec3 radii, int rings, int segments);

// A triangle mesh: vertices and the triangles' corner indices (counter-clockwise seen from
// outside, as the file gives them).
struct TriangleMesh {
  std::vector<Vec3> vertices;
  std::vector<std::array<int, 3>> triangles;
};
// An STL (binary or ASCII), OBJ (polygons as fans of triangles), COLLADA (.dae: its scene's
// triangles, see collada.h) or MuJoCo MSH mesh file, its vertices multiplied by `scale`. Errors
// name the file and what is wrong with it. `root`: as for ReadFile.
absl::StatusOr<TriangleMesh> LoadTriangleMesh(const std::string& path, Vec3 scale,
                                              const std::string& root = "");
// The mesh file's vertices alone, duplicates removed.
absl::StatusOr<std::vector<Vec3>> LoadMeshVertices(const std::string& path, Vec3 scale,
                                                   const std::string& root = "");
// `vertices` without repeats, in first-seen order.
std::vector<Vec3> UniqueVertices(const std::vector<Vec3>& vertices);
// True when the points span a volume (at least 4 points, not all coplanar).
bool PointsSpanVolume(const std::vector<Vec3>& points);

// A height map file as MuJoCo reads one for an <hfield>: a PNG image (by its .png extension;
// grey levels, colour taken as its luminance) whose top image row is the grid's last row
// (largest y), or MuJoCo's binary format (int32 rows, int32 columns, then rows x columns
// float32, row 0 first). Values as stored, not normalised. Errors name the file and what is
// wrong with it. `root`: as for ReadFile.
struct HeightMap {
  int rows = 0, cols = 0;
  std::vector<Real> values;  // (rows x cols) row-major, row 0 at the grid's smallest y
};
absl::StatusOr<HeightMap> LoadHeightMap(const std::string& path, const std::string& root = "");

std::string JoinPath(const std::string& dir, const std::string& file);
std::string DirName(const std::string& path);
bool FileExists(const std::string& path);
// The directory of ROS package `name` below `root`, as ROS finds packages in a workspace: a
// directory holding a package.xml whose <name> (or, without one, the directory's own name) is
// `name`, breadth first to `max_depth` levels down, not below another package or into hidden
// directories. Empty when there is none.
std::string FindPackageDir(const std::string& root, const std::string& name, int max_depth);
// Files larger than this are refused unread (the largest robot meshes are tens of MB).
inline constexpr uintmax_t kMaxModelFileBytes = uintmax_t(1) << 30;
// The whole of a file a model names. Only a regular file of at most kMaxModelFileBytes is read
// (a reference to /dev/zero or a pipe would otherwise read without end); with `root` non-empty,
// only one whose real path (symbolic links and '..' resolved) lies within root's: a scene a
// client sends to the server may not reach past the server's asset directory.
absl::StatusOr<std::string> ReadFile(const std::string& path, const std::string& root = "");

}  // namespace axion::io

// Status plumbing for the parsers (abseil of this vintage has no public macro for it).
#define AXION_IO_CONCAT_INNER(a, b) a##b
#define AXION_IO_CONCAT(a, b) AXION_IO_CONCAT_INNER(a, b)
#define AXION_IO_ASSIGN_OR_RETURN(lhs, expr) \
  AXION_IO_ASSIGN_OR_RETURN_IMPL(AXION_IO_CONCAT(status_or_, __LINE__), lhs, expr)
#define AXION_IO_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(*tmp)
#define AXION_IO_RETURN_IF_ERROR(expr) \
  do {                                 \
    absl::Status status_ = (expr);     \
    if (!status_.ok()) return status_; \
  } while (0)
