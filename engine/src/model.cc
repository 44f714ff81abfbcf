#include "axion/model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collision/hull.h"
#include "model_internal.h"

namespace axion {
namespace {

bool Finite(Real x) { return std::isfinite(x); }
bool Finite(Vec3 v) { return Finite(v.x) && Finite(v.y) && Finite(v.z); }
bool Finite(Quat q) { return Finite(q.w) && Finite(q.x) && Finite(q.y) && Finite(q.z); }

// The pair rules' order, (shape_a, shape_b).
bool PairRuleBefore(const Model::PairRule& x, const Model::PairRule& y) {
  return x.shape_a < y.shape_a || (x.shape_a == y.shape_a && x.shape_b < y.shape_b);
}

std::string Describe(const char* kind, int index, const std::string& name) {
  return name.empty() ? absl::StrCat(kind, " ", index)
                      : absl::StrCat(kind, " ", index, " ('", name, "')");
}

absl::Status Invalid(const std::string& what, const std::string& field,
                     const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", field, " ", problem));
}

std::string Fmt(Real x) { return absl::StrFormat("%g", static_cast<double>(x)); }
std::string Fmt(Vec3 v) {
  return absl::StrFormat("(%g, %g, %g)", static_cast<double>(v.x), static_cast<double>(v.y),
                         static_cast<double>(v.z));
}

absl::Status ValidatePose(const std::string& what, const char* field, Pose* pose) {
  if (!Finite(pose->pos))
    return Invalid(what, absl::StrCat(field, ".pos"), "is not finite: " + Fmt(pose->pos));
  if (!Finite(pose->quat)) return Invalid(what, absl::StrCat(field, ".quat"), "is not finite");
  Real n = quat_norm(pose->quat);
  if (!(n > Real(1e-9)))
    return Invalid(what, absl::StrCat(field, ".quat"), "is zero (not a rotation)");
  pose->quat = quat_normalized(pose->quat);
  return absl::OkStatus();
}

// Servos (position, velocity) are solved in their DOF's or tendon's drive row; efforts and
// muscles push explicitly.
bool IsServo(ActuatorType type) {
  return type == ActuatorType::kPosition || type == ActuatorType::kVelocity;
}

// A muscle's parameters: each curve's divisions need its points apart (MuscleDesc).
absl::Status ValidateMuscle(const std::string& what, const MuscleDesc& m) {
  const Real values[] = {
      m.time_activation, m.time_deactivation,  m.range[0],        m.range[1],
      m.force,           m.length_min,         m.length_max,      m.velocity_max,
      m.passive_force,   m.velocity_force_max, m.length_range[0], m.length_range[1]};
  for (Real x : values) {
    if (!Finite(x)) return Invalid(what, "muscle", "has a value that is not finite");
  }
  if (!(m.time_activation > 0) || !(m.time_deactivation > 0))
    return Invalid(what, "muscle time constants",
                   absl::StrCat("must be > 0, got ", Fmt(m.time_activation), " and ",
                                Fmt(m.time_deactivation)));
  if (!(m.range[0] < m.range[1]))
    return Invalid(
        what, "muscle range",
        absl::StrCat("must have min < max, got [", Fmt(m.range[0]), ", ", Fmt(m.range[1]), "]"));
  if (!(m.force > 0)) return Invalid(what, "muscle force", "must be > 0, got " + Fmt(m.force));
  if (!(m.length_min >= 0 && m.length_min < 1 && m.length_max > 1))
    return Invalid(what, "muscle length_min and length_max",
                   absl::StrCat("must satisfy 0 <= length_min < 1 < length_max, got ",
                                Fmt(m.length_min), " and ", Fmt(m.length_max)));
  if (!(m.velocity_max > 0))
    return Invalid(what, "muscle velocity_max", "must be > 0, got " + Fmt(m.velocity_max));
  if (!(m.passive_force >= 0))
    return Invalid(what, "muscle passive_force", "must be >= 0, got " + Fmt(m.passive_force));
  if (!(m.velocity_force_max >= 1))
    return Invalid(what, "muscle velocity_force_max",
                   "must be >= 1, got " + Fmt(m.velocity_force_max));
  if (!(m.length_range[0] < m.length_range[1]))
    return Invalid(what, "muscle length_range",
                   absl::StrCat("must have min < max, got [", Fmt(m.length_range[0]), ", ",
                                Fmt(m.length_range[1]), "]"));
  return absl::OkStatus();
}

// A spatial tendon's path (TendonDesc::path): MuJoCo's sequence rules (or a slider-crank's
// {slider, crank}), bodies that exist, finite frames, positive radii, divisors and rod lengths,
// at most four bodies besides the world.
absl::Status ValidateTendonPath(const ModelDesc& desc, const TendonDesc& tendon,
                                const std::string& what) {
  using Kind = TendonPathDesc::Kind;
  const int count = static_cast<int>(tendon.path.size());
  const int bodies = static_cast<int>(desc.bodies.size());
  if (count < 2 || count > kMaxTendonPath)
    return Invalid(what, "path",
                   absl::StrCat("must hold 2 to ", kMaxTendonPath, " elements, has ", count));
  auto kind = [&](int k) { return k < 0 || k >= count ? Kind::kPulley : tendon.path[k].kind; };
  const bool slider_crank = kind(0) == Kind::kSlider;
  if (slider_crank && (count != 2 || kind(1) != Kind::kCrank))
    return Invalid(what, "path", "starts at a slider, so must be a slider-crank: {slider, crank}");
  for (int k = 0; k < count; ++k) {
    const TendonPathDesc& point = tendon.path[k];
    const std::string field = absl::StrCat("path[", k, "]");
    const bool wrap = point.kind == Kind::kSphere || point.kind == Kind::kCylinder;
    const bool crank_part = point.kind == Kind::kSlider || point.kind == Kind::kCrank;
    if (point.kind != Kind::kSite && !wrap && point.kind != Kind::kPulley && !crank_part)
      return Invalid(what, field, "has an unknown kind");
    if (crank_part != slider_crank)
      return Invalid(what, field,
                     "mixes a slider-crank's slider or crank with a spatial path's elements");
    if (point.kind == Kind::kCrank && (!Finite(point.rod_length) || !(point.rod_length > 0)))
      return Invalid(what, field,
                     "is a crank, whose rod length must be positive, got " + Fmt(point.rod_length));
    if (!slider_crank && (k == 0 || k == count - 1) && point.kind != Kind::kSite)
      return Invalid(what, field, "must be a site: a path starts and ends at sites");
    if (wrap && (kind(k - 1) != Kind::kSite || kind(k + 1) != Kind::kSite))
      return Invalid(what, field, "wraps around a shape, which must stand between two sites");
    if (point.kind == Kind::kPulley) {
      if (kind(k - 1) != Kind::kSite || kind(k + 1) != Kind::kSite)
        return Invalid(what, field, "is a pulley, which must stand between two sites");
      if (!Finite(point.divisor) || !(point.divisor > 0))
        return Invalid(what, field, "divisor must be positive, got " + Fmt(point.divisor));
      continue;
    }
    if (point.body < kWorldBody || point.body >= bodies)
      return Invalid(what, field, absl::StrCat("refers to missing body ", point.body));
    if (!Finite(point.pose.pos) || !Finite(point.pose.quat) ||
        !(quat_norm(point.pose.quat) > Real(1e-9)))
      return Invalid(what, field, "pose is not finite (or its quaternion is zero)");
    if (wrap && (!Finite(point.radius) || !(point.radius > 0)))
      return Invalid(what, field, "radius must be positive, got " + Fmt(point.radius));
    if (wrap && point.has_side) {
      if (point.side_body < kWorldBody || point.side_body >= bodies)
        return Invalid(what, field,
                       absl::StrCat("side site refers to missing body ", point.side_body));
      if (!Finite(point.side_pos))
        return Invalid(what, field, "side site is not finite: " + Fmt(point.side_pos));
    }
  }
  const std::vector<int> moving = TendonPathBodies(tendon);
  if (moving.size() > 4)
    return Invalid(what, "path",
                   absl::StrCat("moves with ", moving.size(),
                                " bodies; a tendon's rows take at most four besides the world"));
  if (moving.empty())
    return Invalid(what, "path", "lies on the world alone: nothing can change its length");
  return absl::OkStatus();
}

absl::Status ValidateBody(int index, BodyDesc* body) {
  std::string what = Describe("body", index, body->name);
  if (!Finite(body->mass) || !(body->mass > 0)) {
    return Invalid(what, "mass", "must be positive and finite, got " + Fmt(body->mass));
  }
  const Mat33& I = body->inertia;
  for (Real x : I.m) {
    if (!Finite(x)) return Invalid(what, "inertia", "is not finite");
  }
  Real scale = std::max({std::fabs(I(0, 0)), std::fabs(I(1, 1)), std::fabs(I(2, 2)), Real(1e-30)});
  // a single-precision build rounds a rotated symmetric inertia in its last bits
  const Real symmetry_tolerance =
      std::max(Real(1e-9), Real(16) * std::numeric_limits<Real>::epsilon());
  for (int r = 0; r < 3; ++r) {
    for (int c = r + 1; c < 3; ++c) {
      if (std::fabs(I(r, c) - I(c, r)) > symmetry_tolerance * scale) {
        return Invalid(
            what, "inertia",
            absl::StrFormat("is not symmetric: I(%d,%d)=%g, I(%d,%d)=%g", r, c,
                            static_cast<double>(I(r, c)), c, r, static_cast<double>(I(c, r))));
      }
    }
  }
  Real eig[3];
  symmetric_eigenvalues(I, eig);
  if (!(eig[0] > 0)) {
    return Invalid(what, "inertia",
                   "is not positive definite (smallest principal moment " + Fmt(eig[0]) + ")");
  }
  // A rod or a point mass (no moment about some axis) would take any torque about it at no
  // cost: its inverse inertia, 1e17 in one such robot file, wrecks the Newton solve.
  if (!(eig[0] > Real(1e-9) * eig[2])) {
    return Invalid(what, "inertia",
                   absl::StrFormat("is nearly singular: principal moments %g, %g, %g (the "
                                   "smallest below 1e-9 of the largest: a rod or a point mass)",
                                   static_cast<double>(eig[0]), static_cast<double>(eig[1]),
                                   static_cast<double>(eig[2])));
  }
  // Principal moments of a real mass distribution satisfy I1 + I2 >= I3.
  if (breaks_triangle_inequality(eig)) {
    return Invalid(what, "inertia",
                   absl::StrFormat("breaks the triangle inequality: principal moments %g + %g < %g",
                                   static_cast<double>(eig[0]), static_cast<double>(eig[1]),
                                   static_cast<double>(eig[2])));
  }
  if (!Finite(body->com)) return Invalid(what, "com", "is not finite: " + Fmt(body->com));
  absl::Status s = ValidatePose(what, "pose", &body->pose);
  if (!s.ok()) return s;
  if (!Finite(body->linear_velocity)) return Invalid(what, "linear_velocity", "is not finite");
  if (!Finite(body->angular_velocity)) return Invalid(what, "angular_velocity", "is not finite");
  return absl::OkStatus();
}

// Hull shapes by their points, so that shapes of one mesh share one hull.
class ShapesByPoints {
 public:
  explicit ShapesByPoints(const ModelDesc& desc) : desc_(desc) {}

  // A shape added before with the same points as shape `s` (-1: none); `s` is added.
  int FindAndAdd(int s) {
    const std::vector<Vec3>& points = desc_.shapes[s].vertices;
    size_t hash = points.size();
    for (Vec3 p : points) hash = absl::HashOf(hash, p.x, p.y, p.z);
    std::vector<int>& same_hash = shapes_[hash];
    int found = -1;
    for (int k : same_hash) {
      if (SamePoints(desc_.shapes[k].vertices, points)) {
        found = k;
        break;
      }
    }
    same_hash.push_back(s);
    return found;
  }

 private:
  const ModelDesc& desc_;
  absl::flat_hash_map<size_t, std::vector<int>> shapes_;  // points' hash -> shapes
};

absl::Status ValidateShape(int index, int body_count, int mocap_count, ShapeDesc* shape,
                           std::shared_ptr<const HullData>* built_hull) {
  std::string what = Describe("shape", index, shape->name);
  if (shape->body < kWorldBody || shape->body >= body_count) {
    return Invalid(what, "body", absl::StrCat("refers to missing body ", shape->body));
  }
  if (shape->mocap < -1 || shape->mocap >= mocap_count) {
    return Invalid(what, "mocap", absl::StrCat("refers to missing mocap body ", shape->mocap));
  }
  if (shape->mocap >= 0 && shape->body != kWorldBody) {
    return Invalid(what, "mocap",
                   "is set on a shape of a moving body (only static shapes ride "
                   "on mocap bodies)");
  }
  absl::Status s = ValidatePose(what, "pose", &shape->pose);
  if (!s.ok()) return s;
  if (!Finite(shape->size)) return Invalid(what, "size", "is not finite: " + Fmt(shape->size));
  auto positive = [&](Real x, const char* field) -> absl::Status {
    if (!(x > 0)) return Invalid(what, field, "must be positive, got " + Fmt(x));
    return absl::OkStatus();
  };
  switch (shape->type) {
    case ShapeType::kPlane:
      if (shape->body != kWorldBody)
        return Invalid(what, "type", "plane must belong to the world body");
      break;
    case ShapeType::kSphere:
      s = positive(shape->size.x, "size.x (radius)");
      break;
    case ShapeType::kCapsule:
    case ShapeType::kCylinder:
      s = positive(shape->size.x, "size.x (radius)");
      if (s.ok()) s = positive(shape->size.y, "size.y (half length)");
      break;
    case ShapeType::kBox:
      s = positive(shape->size.x, "size.x (half extent)");
      if (s.ok()) s = positive(shape->size.y, "size.y (half extent)");
      if (s.ok()) s = positive(shape->size.z, "size.z (half extent)");
      break;
    case ShapeType::kConvexHull: {
      if (*built_hull != nullptr) break;  // an earlier shape's of the same points
      absl::StatusOr<HullData> hull = BuildHull(shape->vertices);
      if (!hull.ok()) return Invalid(what, "vertices", std::string(hull.status().message()));
      *built_hull = std::make_shared<const HullData>(*std::move(hull));
      break;
    }
    case ShapeType::kHeightField: {
      // terrain never moves with a body: a moving one would need its mass and a swept test
      if (shape->body != kWorldBody)
        return Invalid(what, "type", "height field must belong to the world body");
      s = positive(shape->size.x, "size.x (half extent)");
      if (s.ok()) s = positive(shape->size.y, "size.y (half extent)");
      if (s.ok()) s = positive(shape->size.z, "size.z (depth of the base)");
      if (!s.ok()) return s;
      const HeightFieldDesc& field = shape->heightfield;
      if (field.rows < 2 || field.cols < 2) {
        return Invalid(what, "heightfield",
                       absl::StrCat("needs at least 2 rows and 2 columns, got ", field.rows, " x ",
                                    field.cols));
      }
      if (field.rows > kMaxHeightFieldSide || field.cols > kMaxHeightFieldSide) {
        return Invalid(what, "heightfield",
                       absl::StrCat("has ", field.rows, " x ", field.cols, " points; at most ",
                                    kMaxHeightFieldSide, " per side"));
      }
      if (field.heights.size() != static_cast<size_t>(field.rows) * field.cols) {
        return Invalid(what, "heightfield.heights",
                       absl::StrCat("has ", field.heights.size(), " values for ", field.rows, " x ",
                                    field.cols, " points"));
      }
      for (size_t k = 0; k < field.heights.size(); ++k) {
        const Real z = field.heights[k];
        if (!Finite(z) || !(z > -shape->size.z)) {
          return Invalid(what, absl::StrCat("heightfield.heights[", k, "]"),
                         absl::StrCat("must be finite and above the base (-size.z = ",
                                      Fmt(-shape->size.z), "), got ", Fmt(z), " (row ",
                                      k / field.cols, ", column ", k % field.cols, ")"));
        }
      }
      break;
    }
    default:
      return Invalid(what, "type",
                     absl::StrCat("is unknown (", static_cast<int>(shape->type), ")"));
  }
  if (!s.ok()) return s;
  if (!Finite(shape->material.friction) || shape->material.friction < 0) {
    return Invalid(what, "material.friction",
                   "must be >= 0 and finite, got " + Fmt(shape->material.friction));
  }
  if (shape->contact_dim != 1 && shape->contact_dim != 3 && shape->contact_dim != 4 &&
      shape->contact_dim != 6) {
    return Invalid(what, "contact_dim",
                   absl::StrCat("must be 1 (frictionless), 3 (friction), 4 (and torsional) or 6 "
                                "(and rolling), got ",
                                shape->contact_dim));
  }
  if (!Finite(shape->margin) || shape->margin < 0) {
    return Invalid(what, "margin", "must be >= 0 and finite, got " + Fmt(shape->margin));
  }
  if (!Finite(shape->gap) || shape->gap < 0) {
    return Invalid(what, "gap", "must be >= 0 and finite, got " + Fmt(shape->gap));
  }
  if (!Finite(shape->material.torsional_friction) || shape->material.torsional_friction < 0) {
    return Invalid(what, "material.torsional_friction",
                   "must be >= 0 and finite, got " + Fmt(shape->material.torsional_friction));
  }
  if (!Finite(shape->material.rolling_friction) || shape->material.rolling_friction < 0) {
    return Invalid(what, "material.rolling_friction",
                   "must be >= 0 and finite, got " + Fmt(shape->material.rolling_friction));
  }
  if (!Finite(shape->material.restitution) || shape->material.restitution < 0 ||
      shape->material.restitution > 1) {
    return Invalid(what, "material.restitution",
                   "must be in [0, 1], got " + Fmt(shape->material.restitution));
  }
  return absl::OkStatus();
}

// FNV-1a over the model's structural and physical parameters.
class Hasher {
 public:
  template <class T>
  void Add(const T& value) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(&value);
    for (size_t i = 0; i < sizeof(T); ++i) hash_ = (hash_ ^ p[i]) * 1099511628211ull;
  }
  void Add(Vec3 v) { Add(v.x), Add(v.y), Add(v.z); }
  void Add(Quat q) { Add(q.w), Add(q.x), Add(q.y), Add(q.z); }
  void Add(const Pose& p) { Add(p.pos), Add(p.quat); }
  uint64_t hash() const { return hash_; }

 private:
  uint64_t hash_ = 1469598103934665603ull;
};

uint64_t Fingerprint(const Model& m) {
  Hasher h;
  const ModelDesc& d = m.desc();
  h.Add(d.bodies.size()), h.Add(d.joints.size()), h.Add(d.shapes.size()), h.Add(d.actuators.size());
  for (const BodyDesc& b : d.bodies) {
    h.Add(b.mass), h.Add(b.com), h.Add(b.in_fluid);
    for (Real x : b.inertia.m) h.Add(x);
  }
  for (size_t j = 0; j < d.joints.size(); ++j) {
    const JointDesc& joint = d.joints[j];
    h.Add(joint.type), h.Add(joint.parent), h.Add(joint.child), h.Add(joint.child_frame);
    h.Add(m.joint_parent_frame()[j]);
    for (AxisMode mode : joint.axis_mode) h.Add(mode);
  }
  for (const ShapeDesc& s : d.shapes) h.Add(s.type), h.Add(s.body), h.Add(s.pose), h.Add(s.size);
  // (a height field's grid: only where there is one, as for mocap bodies)
  for (const ShapeDesc& s : d.shapes) {
    if (s.type == ShapeType::kHeightField) h.Add(s.heightfield.rows), h.Add(s.heightfield.cols);
  }
  // actuators with dynamics (which snapshots carry an activation for): only theirs, so that the
  // fingerprints of models without stay as they were
  for (const ActuatorDesc& a : d.actuators) {
    if (a.dynamics != ActuatorDynamics::kNone) h.Add(a.dynamics);
  }
  // (only where there are mocap bodies: the fingerprints of models without stay as they were)
  if (!d.mocap_bodies.empty()) {
    h.Add(d.mocap_bodies.size());
    for (const ShapeDesc& s : d.shapes) h.Add(s.mocap);
    for (const JointDesc& joint : d.joints) h.Add(joint.parent_mocap);
  }
  for (const ActuatorDesc& a : d.actuators) h.Add(a.type), h.Add(a.joint), h.Add(a.dof);
  // (only where contacts carry angular friction rows, whose impulses snapshots keep)
  if (m.contact_angular_rows() > 0) h.Add(m.contact_angular_rows());
  h.Add(d.contact_pairs.size());
  for (const ContactPairDesc& p : d.contact_pairs) h.Add(p.shape_a), h.Add(p.shape_b);
  h.Add(d.couplings.size());
  for (const JointCouplingDesc& c : d.couplings)
    h.Add(c.joint), h.Add(c.dof), h.Add(c.leader_joint), h.Add(c.leader_dof);
  // (only where there are tendons, as for mocap bodies)
  if (!d.tendons.empty()) {
    h.Add(d.tendons.size());
    for (size_t t = 0; t < d.tendons.size(); ++t) {
      for (const TendonJointDesc& j : d.tendons[t].joints) h.Add(j.joint), h.Add(j.dof);
      for (const TendonPathDesc& p : d.tendons[t].path) {
        h.Add(p.kind), h.Add(p.body), h.Add(p.pose), h.Add(p.radius), h.Add(p.divisor);
        if (p.kind == TendonPathDesc::Kind::kCrank) h.Add(p.rod_length);
        h.Add(p.has_side), h.Add(p.side_body), h.Add(p.side_pos);
      }
      for (RowKind kind : TendonRows(d, static_cast<int>(t))) h.Add(kind);
    }
    for (const ActuatorDesc& a : d.actuators) h.Add(a.tendon);
  }
  // (only where an actuator pushes on a site or pulls a body onto what it touches)
  for (const ActuatorDesc& a : d.actuators) {
    if (a.site_body >= 0)
      h.Add(a.site_body), h.Add(a.site_pose), h.Add(a.site_force_world),
          h.Add(a.site_reaction_body);
    if (a.adhesion_body >= 0) h.Add(a.adhesion_body);
  }
  return h.hash();
}

}  // namespace

// Upper bounds of the options that count a step's loops. A world's step costs up to their
// product (halved steps and redos included), and a batch runs as long as its slowest world:
// unbounded, one world of a client asking for 2^31 Newton iterations of a step that cannot
// converge stalled every world of the server. Each bound is far past any use: Newton converges
// in tens of iterations or not at all, a trial step of 2^-30 of the Newton step is no step, and
// CR on the tree preconditioner needs a handful of iterations (on the Jacobi diagonal, a
// 50-link chain needs hundreds).
constexpr int kMaxNewtonIterations = 1000;
constexpr int kMaxCrIterations = 10000;
constexpr int kMaxLineSearchSteps = 30;
constexpr int kMaxContactPresolveSweeps = 100000;

absl::Status ValidateSolverOptions(SolverOptions* options) {
  SolverOptions& o = *options;
  if (!Finite(o.timestep) || !(o.timestep > 0))
    return Invalid("options", "timestep", "must be positive, got " + Fmt(o.timestep));
  if (!Finite(o.gravity)) return Invalid("options", "gravity", "is not finite: " + Fmt(o.gravity));
  if (!(o.baumgarte >= 0 && o.baumgarte <= 1))
    return Invalid("options", "baumgarte", "must be in [0, 1], got " + Fmt(o.baumgarte));
  if (!Finite(o.contact_margin) || o.contact_margin < 0)
    return Invalid("options", "contact_margin", "must be >= 0, got " + Fmt(o.contact_margin));
  if (!Finite(o.fluid_density) || o.fluid_density < 0)
    return Invalid("options", "fluid_density", "must be >= 0, got " + Fmt(o.fluid_density));
  if (!Finite(o.fluid_viscosity) || o.fluid_viscosity < 0)
    return Invalid("options", "fluid_viscosity", "must be >= 0, got " + Fmt(o.fluid_viscosity));
  if (!Finite(o.fluid_wind))
    return Invalid("options", "fluid_wind", "is not finite: " + Fmt(o.fluid_wind));
  if (!(o.max_depenetration_speed > 0))
    return Invalid("options", "max_depenetration_speed",
                   "must be > 0 (infinity: no limit), got " + Fmt(o.max_depenetration_speed));
  if (!Finite(o.contact_compliance) || o.contact_compliance < 0)
    return Invalid("options", "contact_compliance",
                   "must be >= 0, got " + Fmt(o.contact_compliance));
  if (o.newton_iterations < 1 || o.newton_iterations > kMaxNewtonIterations)
    return Invalid(
        "options", "newton_iterations",
        absl::StrCat("must be in [1, ", kMaxNewtonIterations, "], got ", o.newton_iterations));
  if (o.newton_stall_iterations < 0)
    return Invalid("options", "newton_stall_iterations",
                   absl::StrCat("must be >= 0, got ", o.newton_stall_iterations));
  if (o.newton_tail_iterations < 0)
    return Invalid("options", "newton_tail_iterations",
                   absl::StrCat("must be >= 0, got ", o.newton_tail_iterations));
  if (!(o.newton_tail_residual > 0) || !Finite(o.newton_tail_residual))
    return Invalid("options", "newton_tail_residual",
                   "must be positive, got " + Fmt(o.newton_tail_residual));
  if (o.step_halvings < 0 || o.step_halvings > 10)
    return Invalid("options", "step_halvings",
                   absl::StrCat("must be in [0, 10], got ", o.step_halvings));
  if (o.halving_iterations < 1)
    return Invalid("options", "halving_iterations",
                   absl::StrCat("must be >= 1, got ", o.halving_iterations));
  if (!(o.halving_residual > 0) || !Finite(o.halving_residual))
    return Invalid("options", "halving_residual",
                   "must be positive, got " + Fmt(o.halving_residual));
  if (!(o.missed_contact_depth >= 0))
    return Invalid("options", "missed_contact_depth",
                   "must be >= 0 (inf: off), got " + Fmt(o.missed_contact_depth));
  if (o.contact_presolve_sweeps < 0 || o.contact_presolve_sweeps > kMaxContactPresolveSweeps)
    return Invalid("options", "contact_presolve_sweeps",
                   absl::StrCat("must be in [0, ", kMaxContactPresolveSweeps, "], got ",
                                o.contact_presolve_sweeps));
  if (o.contact_redos < 0 || o.contact_redos > 4)
    return Invalid("options", "contact_redos",
                   absl::StrCat("must be in [0, 4], got ", o.contact_redos));
  if (o.loop_rows < 0 || o.loop_rows > 16)
    return Invalid("options", "loop_rows", absl::StrCat("must be in [0, 16], got ", o.loop_rows));
  if (o.cr_iterations < 1 || o.cr_iterations > kMaxCrIterations)
    return Invalid("options", "cr_iterations",
                   absl::StrCat("must be in [1, ", kMaxCrIterations, "], got ", o.cr_iterations));
  if (!(o.newton_tolerance > 0) || !Finite(o.newton_tolerance))
    return Invalid("options", "newton_tolerance",
                   "must be positive, got " + Fmt(o.newton_tolerance));
  if (!(o.cr_tolerance > 0) || !Finite(o.cr_tolerance))
    return Invalid("options", "cr_tolerance", "must be positive, got " + Fmt(o.cr_tolerance));
  if (!(o.line_search_growth >= 1))
    return Invalid("options", "line_search_growth",
                   absl::StrCat("must be >= 1, got ", o.line_search_growth));
  if (o.line_search_steps < 0 || o.line_search_steps > kMaxLineSearchSteps)
    return Invalid(
        "options", "line_search_steps",
        absl::StrCat("must be in [0, ", kMaxLineSearchSteps, "], got ", o.line_search_steps));
  if (!(o.fb_epsilon >= 0) || !Finite(o.fb_epsilon))
    return Invalid("options", "fb_epsilon", "must be >= 0, got " + Fmt(o.fb_epsilon));
  if (o.friction_combine != FrictionCombine::kGeometricMean &&
      o.friction_combine != FrictionCombine::kMax)
    return Invalid("options", "friction_combine",
                   absl::StrCat("unknown value ", static_cast<int>(o.friction_combine)));
  if (o.preconditioner != Preconditioner::kJacobi && o.preconditioner != Preconditioner::kTree)
    return Invalid("options", "preconditioner",
                   absl::StrCat("unknown value ", static_cast<int>(o.preconditioner)));

  return absl::OkStatus();
}

std::vector<int> JointDofAxes(const JointDesc& joint) {
  switch (joint.type) {
    case JointType::kRevolute:
      return {3};
    case JointType::kPrismatic:
      return {0};
    case JointType::kBall:
      return {3, 4, 5};
    case JointType::kFixed:
      return {};
    case JointType::kUniversal:
      return {3, 4};
    case JointType::kGeneric: {
      std::vector<int> axes;
      for (int k = 0; k < 6; ++k) {
        if (joint.axis_mode[k] != AxisMode::kLocked) axes.push_back(k);
      }
      return axes;
    }
  }
  return {};
}

std::array<AxisMode, 6> JointAxisModes(const JointDesc& joint) {
  using enum AxisMode;
  AxisMode lim = joint.limited ? kLimited : kFree;
  switch (joint.type) {
    case JointType::kRevolute:
      return {kLocked, kLocked, kLocked, lim, kLocked, kLocked};
    case JointType::kPrismatic:
      return {lim, kLocked, kLocked, kLocked, kLocked, kLocked};
    case JointType::kBall:
      return {kLocked, kLocked, kLocked, kFree, kFree, kFree};
    case JointType::kFixed:
      return {kLocked, kLocked, kLocked, kLocked, kLocked, kLocked};
    case JointType::kGeneric:
      return joint.axis_mode;
    case JointType::kUniversal: {
      // axis_mode[3], [4]: whether each hinge is limited (anything else: free)
      auto hinge = [&](int k) { return joint.axis_mode[k] == kLimited ? kLimited : kFree; };
      return {kLocked, kLocked, kLocked, hinge(3), hinge(4), kLocked};
    }
  }
  return {};
}

int JointDofCount(const JointDesc& joint) { return static_cast<int>(JointDofAxes(joint).size()); }
int JointPositionCount(const JointDesc& joint) {
  return joint.type == JointType::kBall ? 4 : JointDofCount(joint);
}
int JointBilateralRows(const JointDesc& joint) {
  if (joint.type == JointType::kRevolute) return 5;
  if (joint.type == JointType::kUniversal) return 4;
  std::array<AxisMode, 6> modes = JointAxisModes(joint);
  const int locked = static_cast<int>(std::count(modes.begin(), modes.end(), AxisMode::kLocked));
  return JointFixesRotation(joint) ? locked - 3 : locked;
}

bool JointFixesRotation(const JointDesc& joint) {
  // (a joint on a mocap body turns with it)
  if (joint.parent != kWorldBody || joint.parent_mocap >= 0 || joint.compliance != 0) return false;
  const std::array<AxisMode, 6> modes = JointAxisModes(joint);
  return modes[3] == AxisMode::kLocked && modes[4] == AxisMode::kLocked &&
         modes[5] == AxisMode::kLocked;
}

bool ShapesPassFilter(const ShapeDesc& a, const ShapeDesc& b) {
  return a.body != b.body && !(a.type == ShapeType::kPlane && b.type == ShapeType::kPlane) &&
         (a.collision_group & b.collision_mask) && (b.collision_group & a.collision_mask);
}

bool JointHoldsChildOffPlane(const ModelDesc& desc, const JointDesc& joint,
                             const ShapeDesc& plane) {
  // (a plane on a mocap body moves, and may come to press on the body)
  if (!JointFixesRotation(joint) || plane.type != ShapeType::kPlane || plane.body != kWorldBody ||
      plane.mocap >= 0)
    return false;
  const std::array<AxisMode, 6> modes = JointAxisModes(joint);
  const Quat frame = desc.bodies[joint.child].pose.quat * joint.child_frame.quat;
  const Vec3 normal = rotate(plane.pose.quat, Vec3{0, 0, 1});
  for (int k = 0; k < 3; ++k) {
    Vec3 axis;
    axis[k] = 1;
    if (modes[k] != AxisMode::kLocked && std::abs(dot(normal, rotate(frame, axis))) > 1e-9)
      return false;
  }
  return true;
}

namespace {

// The hull shapes' hulls for the geometric queries below, each built once when first asked
// for (a body's shapes meet the anchors of its own joint and of each child's), or the compiled
// model's.
class HullsOnDemand {
 public:
  HullsOnDemand(const ModelDesc& desc, const std::vector<std::shared_ptr<const HullData>>* built)
      : desc_(desc), tried_(desc.shapes.size(), false) {
    if (built != nullptr && built->size() == desc.shapes.size()) {
      hulls_ = *built;
    } else {
      hulls_.assign(desc.shapes.size(), nullptr);
    }
  }

  // Shape `s`'s hull (an earlier shape's of the same points); null where it does not build.
  const HullData* Get(int s) {
    if (hulls_[s] == nullptr && !tried_[s]) {
      tried_[s] = true;
      const int same = tried_by_points_.FindAndAdd(s);
      if (same >= 0) {
        hulls_[s] = hulls_[same];  // (null again where those points did not build)
      } else {
        absl::StatusOr<HullData> hull = BuildHull(desc_.shapes[s].vertices);
        if (hull.ok()) hulls_[s] = std::make_shared<const HullData>(*std::move(hull));
      }
    }
    return hulls_[s].get();
  }

 private:
  const ModelDesc& desc_;
  std::vector<std::shared_ptr<const HullData>> hulls_;
  std::vector<bool> tried_;
  ShapesByPoints tried_by_points_{desc_};
};

// A shape at the bodies' initial poses, for the geometric queries below: its world pose, and the
// radius of a sphere about that pose bounding it (infinite: a plane).
struct PlacedShape {
  int index = -1;  // in the description's shapes
  const ShapeDesc* shape = nullptr;
  Pose pose;
  Real bound = std::numeric_limits<Real>::infinity();
};

PlacedShape PlaceShape(const ModelDesc& desc, int index) {
  const ShapeDesc& shape = desc.shapes[index];
  PlacedShape placed;
  placed.index = index;
  placed.shape = &shape;
  placed.pose = shape.pose;
  if (shape.body != kWorldBody) {
    const Pose& body = desc.bodies[shape.body].pose;
    placed.pose = {body.pos + rotate(body.quat, shape.pose.pos), body.quat * shape.pose.quat};
  }
  const Vec3 size = shape.size;
  switch (shape.type) {
    case ShapeType::kSphere:
      placed.bound = size.x;
      break;
    case ShapeType::kCapsule:
      placed.bound = size.x + size.y;
      break;
    case ShapeType::kCylinder:
      placed.bound = std::sqrt(size.x * size.x + size.y * size.y);
      break;
    case ShapeType::kBox:
      placed.bound = norm(size);
      break;
    case ShapeType::kConvexHull:
      placed.bound = 0;
      for (Vec3 v : shape.vertices) placed.bound = std::max(placed.bound, norm(v));
      break;
    default:
      break;
  }
  return placed;
}

// Signed distance (m, negative inside) from `point` to the placed shape, or +infinity where it
// is farther than `cutoff` or cannot be told (a height field; a hull that does not build).
Real SignedDistance(const PlacedShape& placed, Vec3 point, Real cutoff, HullsOnDemand& hulls) {
  constexpr Real kProbeRadius = Real(1e-6);
  const ShapeDesc& shape = *placed.shape;
  const Real far = norm(point - placed.pose.pos) - placed.bound;  // a lower bound
  if (shape.type == ShapeType::kHeightField || far > cutoff)
    return std::numeric_limits<Real>::infinity();
  ShapeGeom geom;
  if (shape.type == ShapeType::kConvexHull) {
    const HullData* hull = hulls.Get(placed.index);
    if (hull == nullptr) return std::numeric_limits<Real>::infinity();
    geom = HullShapeGeom(*hull);
  } else {
    geom.type = static_cast<int32_t>(shape.type);
    geom.size = shape.size;
  }
  ShapeGeom probe;
  probe.type = static_cast<int32_t>(ShapeType::kSphere);
  probe.size = {kProbeRadius, 0, 0};
  ContactPoint points[kMaxPairContacts];
  const int n = collide_shapes(probe, point, Quat{1, 0, 0, 0}, geom, placed.pose.pos,
                               placed.pose.quat, cutoff + kProbeRadius, points);
  Real distance = std::numeric_limits<Real>::infinity();
  for (int i = 0; i < n; ++i) distance = std::min(distance, points[i].gap + kProbeRadius);
  return distance <= cutoff ? distance : std::numeric_limits<Real>::infinity();
}

}  // namespace

std::vector<std::array<int, 2>> AnchorOverlapPairs(
    const ModelDesc& desc, std::vector<int>* joint_of,
    const std::vector<std::shared_ptr<const HullData>>* built_hulls) {
  // overlaps shallower than this are left to the contacts (a door shut against its frame)
  constexpr Real kOverlapTolerance = Real(1e-6);
  std::vector<std::array<int, 2>> pairs;
  std::set<std::pair<int, int>> seen;
  HullsOnDemand hulls(desc, built_hulls);
  const int body_count = static_cast<int>(desc.bodies.size());
  std::vector<std::vector<int>> body_shapes(body_count + 1);  // kWorldBody's at 0
  for (int s = 0; s < static_cast<int>(desc.shapes.size()); ++s) {
    const int body = desc.shapes[s].body;
    if (body >= kWorldBody && body < body_count) body_shapes[body + 1].push_back(s);
  }
  for (size_t j = 0; j < desc.joints.size(); ++j) {
    const JointDesc& joint = desc.joints[j];
    if (joint.child < 0 || joint.child >= body_count || joint.parent < kWorldBody ||
        joint.parent >= body_count)
      continue;  // (an unchecked description: Compile refuses it)
    const std::array<AxisMode, 6> modes = JointAxisModes(joint);
    const bool anchor_held = joint.type == JointType::kRevolute || joint.type == JointType::kBall ||
                             (joint.type == JointType::kUniversal &&
                              norm(joint.second_anchor - joint.child_frame.pos) == 0) ||
                             (joint.type == JointType::kGeneric && modes[0] == AxisMode::kLocked &&
                              modes[1] == AxisMode::kLocked && modes[2] == AxisMode::kLocked);
    if (!anchor_held) continue;
    const Pose& child = desc.bodies[joint.child].pose;
    const Vec3 anchor = child.pos + rotate(child.quat, joint.child_frame.pos);
    // Each side turns about the anchor, keeping the ball of radius `depth` about it (its depth
    // inside a convex shape) inside that shape, and its distance from it: a shape nearer the
    // anchor than the other side's depth meets the other in every configuration.
    // (shapes in no group, or meeting none, collide with nothing the filter passes: a model's
    // visual meshes, whose hulls would cost the most to build)
    auto filtered = [](const ShapeDesc& shape) {
      return shape.collision_group != 0 && shape.collision_mask != 0;
    };
    std::vector<PlacedShape> sides[2];
    for (int s : body_shapes[joint.child + 1])
      if (filtered(desc.shapes[s])) sides[0].push_back(PlaceShape(desc, s));
    for (int s : body_shapes[joint.parent + 1]) {
      const ShapeDesc& shape = desc.shapes[s];
      if (filtered(shape) && shape.mocap == (joint.parent == kWorldBody ? joint.parent_mocap : -1))
        sides[1].push_back(PlaceShape(desc, s));
    }
    if (sides[0].empty() || sides[1].empty()) continue;
    // the deepest either side can hold the anchor: the bound on the other side's distances
    Real reach[2] = {0, 0};
    for (int k = 0; k < 2; ++k)
      for (const PlacedShape& p : sides[k]) reach[k] = std::max(reach[k], p.bound);
    std::vector<Real> distance[2];
    for (int k = 0; k < 2; ++k)
      for (const PlacedShape& p : sides[k])
        distance[k].push_back(SignedDistance(p, anchor, std::min(reach[1 - k], Real(1e3)), hulls));
    for (size_t a = 0; a < sides[0].size(); ++a) {
      for (size_t b = 0; b < sides[1].size(); ++b) {
        const Real da = distance[0][a], db = distance[1][b];
        if (!(-da - std::max(db, Real(0)) > kOverlapTolerance ||
              -db - std::max(da, Real(0)) > kOverlapTolerance))
          continue;
        const int sa = sides[0][a].index, sb = sides[1][b].index;
        if (!seen.insert({std::min(sa, sb), std::max(sa, sb)}).second) continue;
        pairs.push_back({sa, sb});
        if (joint_of) joint_of->push_back(static_cast<int>(j));
      }
    }
  }
  return pairs;
}

std::vector<JointRowLayout> JointRows(const JointDesc& joint, bool has_drive) {
  std::vector<JointRowLayout> rows;
  if (joint.type == JointType::kRevolute) {
    for (int i = 0; i < 3; ++i) rows.push_back({kRowAnchor, i, -1});
    rows.push_back({kRowAxisAlign, 1, -1});
    rows.push_back({kRowAxisAlign, 2, -1});
  } else if (joint.type == JointType::kUniversal) {
    // the second hinge's anchor (3 rows) and the angle between the two axes (1 row)
    for (int i = 0; i < 3; ++i) rows.push_back({kRowAnchor, i, -1});
    rows.push_back({kRowAxisAlign, 0, -1});
  } else {
    std::array<AxisMode, 6> modes = JointAxisModes(joint);
    // a rotation held to the world is no row: the child has no rotational freedom instead
    const int locked_end = JointFixesRotation(joint) ? 3 : 6;
    for (int k = 0; k < locked_end; ++k) {
      if (modes[k] == AxisMode::kLocked)
        rows.push_back({k < 3 ? kRowLinearLock : kRowAngularLock, k, -1});
    }
  }
  std::vector<int> axes = JointDofAxes(joint);
  auto friction_rows = [&] {
    for (int d = 0; d < static_cast<int>(axes.size()); ++d) {
      if (JointFrictionLoss(joint, d) > 0) rows.push_back({kRowFrictionLoss, axes[d], d});
    }
  };
  if (joint.type == JointType::kBall) {
    if (JointConeLimit(joint) > 0) rows.push_back({kRowLimitCone, 3, -1});
    if (has_drive) {
      for (int d = 0; d < 3; ++d) rows.push_back({kRowDrive, axes[d], d});
    }
    friction_rows();
    return rows;
  }
  std::array<AxisMode, 6> modes = JointAxisModes(joint);
  for (int d = 0; d < static_cast<int>(axes.size()); ++d) {
    if (modes[axes[d]] == AxisMode::kLimited) {
      rows.push_back({kRowLimitLower, axes[d], d});
      rows.push_back({kRowLimitUpper, axes[d], d});
    }
  }
  if (has_drive) {
    for (int d = 0; d < static_cast<int>(axes.size()); ++d) rows.push_back({kRowDrive, axes[d], d});
  }
  friction_rows();
  return rows;
}

Real JointFrictionLoss(const JointDesc& joint, int dof) {
  return joint.dof_friction_loss.empty() ? joint.friction_loss : joint.dof_friction_loss[dof];
}

Real JointConeLimit(const JointDesc& joint) {
  if (joint.type != JointType::kBall || !joint.limited || joint.upper.empty()) return 0;
  return joint.upper[0];
}

const HullData* ShapeHull(const Model& model, int shape) { return model.shape_hull_[shape].get(); }

bool SamePoints(const std::vector<Vec3>& a, const std::vector<Vec3>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](Vec3 p, Vec3 q) { return p.x == q.x && p.y == q.y && p.z == q.z; });
}

absl::StatusOr<std::shared_ptr<const Model>> Model::Compile(ModelDesc desc) {
  std::shared_ptr<Model> model(new Model());
  const int body_count = static_cast<int>(desc.bodies.size());

  absl::Status options_status = ValidateSolverOptions(&desc.options);
  if (!options_status.ok()) return options_status;

  for (int i = 0; i < body_count; ++i) {
    absl::Status s = ValidateBody(i, &desc.bodies[i]);
    if (!s.ok()) return s;
  }
  const int mocap_count = static_cast<int>(desc.mocap_bodies.size());
  for (int m = 0; m < mocap_count; ++m) {
    absl::Status s = ValidatePose(Describe("mocap body", m, desc.mocap_bodies[m].name), "pose",
                                  &desc.mocap_bodies[m].pose);
    if (!s.ok()) return s;
  }
  // shapes of one mesh (a robot's four wheels, MJCF geoms of one <mesh>) share one hull, built
  // once and packed once per batch
  model->shape_hull_.assign(desc.shapes.size(), nullptr);
  ShapesByPoints hull_shapes(desc);
  for (int i = 0; i < static_cast<int>(desc.shapes.size()); ++i) {
    if (desc.shapes[i].type == ShapeType::kConvexHull) {
      const int same = hull_shapes.FindAndAdd(i);
      if (same >= 0) model->shape_hull_[i] = model->shape_hull_[same];
    }
    absl::Status s =
        ValidateShape(i, body_count, mocap_count, &desc.shapes[i], &model->shape_hull_[i]);
    if (!s.ok()) return s;
  }

  // joints
  std::vector<bool> dof_has_actuated_drive;
  for (int j = 0; j < static_cast<int>(desc.joints.size()); ++j) {
    JointDesc& joint = desc.joints[j];
    std::string what = Describe("joint", j, joint.name);
    if (joint.parent < kWorldBody || joint.parent >= body_count) {
      return Invalid(what, "parent", absl::StrCat("refers to missing body ", joint.parent));
    }
    if (joint.child < 0 || joint.child >= body_count) {
      return Invalid(what, "child", absl::StrCat("refers to missing body ", joint.child));
    }
    if (joint.child == joint.parent) return Invalid(what, "child", "equals the parent");
    if (joint.parent_mocap < -1 || joint.parent_mocap >= mocap_count) {
      return Invalid(what, "parent_mocap",
                     absl::StrCat("refers to missing mocap body ", joint.parent_mocap));
    }
    if (joint.parent_mocap >= 0 && joint.parent != kWorldBody) {
      return Invalid(what, "parent_mocap", "is set on a joint whose parent is a body");
    }
    if (static_cast<int>(joint.type) < 0 || static_cast<int>(joint.type) > 5) {
      return Invalid(what, "type", absl::StrCat("is unknown (", static_cast<int>(joint.type), ")"));
    }
    absl::Status s = ValidatePose(what, "child_frame", &joint.child_frame);
    if (!s.ok()) return s;
    if (joint.axis.has_value()) {
      Vec3 a = *joint.axis;
      if (!Finite(a)) return Invalid(what, "axis", "is not finite: " + Fmt(a));
      if (!(norm(a) > Real(1e-9))) return Invalid(what, "axis", "has zero length");
      // Shortest rotation taking x onto the axis.
      Vec3 x{1, 0, 0}, n = normalized(a);
      Real c = dot(x, n);
      Quat q;
      if (c < Real(-1) + Real(1e-9)) {
        q = Quat{0, 0, 0, 1};  // 180 degrees about z
      } else {
        Vec3 w = cross(x, n);
        q = quat_normalized(Quat{1 + c, w.x, w.y, w.z});
      }
      joint.child_frame.quat = q;
      joint.axis.reset();
    }
    if (joint.type == JointType::kUniversal) {
      if (!Finite(joint.second_axis))
        return Invalid(what, "second_axis", "is not finite: " + Fmt(joint.second_axis));
      if (!Finite(joint.second_anchor))
        return Invalid(what, "second_anchor", "is not finite: " + Fmt(joint.second_anchor));
      Vec3 first = rotate(joint.child_frame.quat, {1, 0, 0});
      Real length = norm(joint.second_axis);
      if (!(length > Real(1e-9))) return Invalid(what, "second_axis", "has zero length");
      // the hinge angles are undefined where the axes line up (gimbal lock)
      if (!(norm(cross(first, joint.second_axis)) > Real(0.05) * length))
        return Invalid(what, "second_axis",
                       "is (nearly) parallel to the first hinge axis " + Fmt(first) +
                           ": the two hinge angles would be undefined");
    }
    int dofs = JointDofCount(joint);
    bool limited =
        joint.limited ||
        ((joint.type == JointType::kGeneric || joint.type == JointType::kUniversal) &&
         std::count(joint.axis_mode.begin(), joint.axis_mode.end(), AxisMode::kLimited) > 0);
    if (joint.limited && joint.type == JointType::kBall) {
      // one angle, the cone's half-angle; a turn of pi is any orientation
      if (joint.upper.size() != 1 || joint.lower.size() > 1)
        return Invalid(what, "lower/upper",
                       absl::StrCat("of a limited ball joint are upper = {largest turn (rad)} "
                                    "and lower empty or {0}; got ",
                                    joint.lower.size(), " and ", joint.upper.size(), " entries"));
      if (!joint.lower.empty() && joint.lower[0] != 0)
        return Invalid(what, "lower",
                       "of a ball joint must be empty or 0, got " + Fmt(joint.lower[0]));
      if (!Finite(joint.upper[0]) || !(joint.upper[0] > 0) ||
          joint.upper[0] > Real(3.14159265358979323846))
        return Invalid(
            what, "upper",
            "of a ball joint (its largest turn) must lie in (0, pi], got " + Fmt(joint.upper[0]));
    }
    if (limited && joint.type != JointType::kBall && joint.type != JointType::kFixed) {
      if (static_cast<int>(joint.lower.size()) != dofs ||
          static_cast<int>(joint.upper.size()) != dofs) {
        return Invalid(what, "lower/upper",
                       absl::StrCat("must have one entry per DOF (", dofs, ")"));
      }
      for (int d = 0; d < dofs; ++d) {
        if (!Finite(joint.lower[d]) || !Finite(joint.upper[d]))
          return Invalid(what, "limits", "are not finite");
        if (joint.lower[d] > joint.upper[d]) {
          return Invalid(what, "limits",
                         absl::StrCat("have lower > upper on DOF ", d, ": ", Fmt(joint.lower[d]),
                                      " > ", Fmt(joint.upper[d])));
        }
      }
    }
    auto check_drive = [&](const DriveDesc& dr, const std::string& field) -> absl::Status {
      if (!Finite(dr.stiffness) || dr.stiffness < 0)
        return Invalid(what, field + ".stiffness",
                       "must be >= 0 and finite, got " + Fmt(dr.stiffness));
      if (!Finite(dr.damping) || dr.damping < 0)
        return Invalid(what, field + ".damping", "must be >= 0 and finite, got " + Fmt(dr.damping));
      if (!Finite(dr.target_position))
        return Invalid(what, field + ".target_position", "is not finite");
      if (!Finite(dr.target_velocity))
        return Invalid(what, field + ".target_velocity", "is not finite");
      return absl::OkStatus();
    };
    s = check_drive(joint.drive, "drive");
    if (!s.ok()) return s;
    if (!joint.dof_drive.empty() && static_cast<int>(joint.dof_drive.size()) != dofs) {
      return Invalid(what, "dof_drive",
                     absl::StrCat("must be empty or have one entry per DOF (", dofs, "), has ",
                                  joint.dof_drive.size()));
    }
    for (size_t d = 0; d < joint.dof_drive.size(); ++d) {
      s = check_drive(joint.dof_drive[d], absl::StrCat("dof_drive[", d, "]"));
      if (!s.ok()) return s;
    }
    if (!joint.dof_armature.empty() && static_cast<int>(joint.dof_armature.size()) != dofs) {
      return Invalid(what, "dof_armature",
                     absl::StrCat("must be empty or have one entry per DOF (", dofs, "), has ",
                                  joint.dof_armature.size()));
    }
    for (size_t d = 0; d < joint.dof_armature.size(); ++d) {
      if (!Finite(joint.dof_armature[d]) || joint.dof_armature[d] < 0) {
        return Invalid(what, absl::StrCat("dof_armature[", d, "]"),
                       "must be >= 0, got " + Fmt(joint.dof_armature[d]));
      }
    }
    if (!Finite(joint.reference)) return Invalid(what, "reference", "is not finite");
    if (!Finite(joint.compliance) || joint.compliance < 0)
      return Invalid(what, "compliance", "must be >= 0, got " + Fmt(joint.compliance));
    if (!Finite(joint.armature) || joint.armature < 0)
      return Invalid(what, "armature", "must be >= 0, got " + Fmt(joint.armature));
    if (!Finite(joint.friction_loss) || joint.friction_loss < 0)
      return Invalid(what, "friction_loss", "must be >= 0, got " + Fmt(joint.friction_loss));
    if (!joint.dof_friction_loss.empty() &&
        static_cast<int>(joint.dof_friction_loss.size()) != dofs)
      return Invalid(what, "dof_friction_loss",
                     absl::StrCat("must be empty or have one entry per DOF (", dofs, "), has ",
                                  joint.dof_friction_loss.size()));
    for (size_t d = 0; d < joint.dof_friction_loss.size(); ++d) {
      if (!Finite(joint.dof_friction_loss[d]) || joint.dof_friction_loss[d] < 0)
        return Invalid(what, absl::StrCat("dof_friction_loss[", d, "]"),
                       "must be >= 0, got " + Fmt(joint.dof_friction_loss[d]));
    }
  }

  // actuators
  for (int a = 0; a < static_cast<int>(desc.actuators.size()); ++a) {
    ActuatorDesc& act = desc.actuators[a];
    std::string what = Describe("actuator", a, act.name);
    if (act.adhesion_body != -1) {
      if (act.adhesion_body < 0 || act.adhesion_body >= static_cast<int>(desc.bodies.size()))
        return Invalid(what, "adhesion_body",
                       absl::StrCat("refers to missing body ", act.adhesion_body));
      if (act.tendon != -1 || act.site_body != -1)
        return Invalid(what, "adhesion_body",
                       absl::StrCat("is given with a ", act.tendon != -1 ? "tendon" : "site",
                                    ": an actuator has one transmission"));
      if (act.type != ActuatorType::kEffort)
        return Invalid(what, "adhesion_body",
                       "is given on a servo or muscle: adhesion actuators are efforts");
    } else if (act.site_body != -1) {
      if (act.site_body < 0 || act.site_body >= static_cast<int>(desc.bodies.size()))
        return Invalid(what, "site_body", absl::StrCat("refers to missing body ", act.site_body));
      if (act.tendon != -1)
        return Invalid(what, "site_body",
                       "is given with a tendon: an actuator has one transmission");
      if (act.type != ActuatorType::kEffort)
        return Invalid(what, "site_body", "is given on a servo: site actuators are efforts");
      absl::Status pose = ValidatePose(what, "site_pose", &act.site_pose);
      if (!pose.ok()) return pose;
      for (Real x : act.site_wrench) {
        if (!Finite(x)) return Invalid(what, "site_wrench", "is not finite");
      }
      if (act.site_reaction_body < -1 ||
          act.site_reaction_body >= static_cast<int>(desc.bodies.size()))
        return Invalid(what, "site_reaction_body",
                       absl::StrCat("refers to missing body ", act.site_reaction_body));
      if (act.site_reaction_body == act.site_body)
        return Invalid(what, "site_reaction_body", "is the site's own body");
    } else if (act.tendon != -1) {
      if (act.tendon < 0 || act.tendon >= static_cast<int>(desc.tendons.size()))
        return Invalid(what, "tendon", absl::StrCat("refers to missing tendon ", act.tendon));
    } else {
      if (act.joint < 0 || act.joint >= static_cast<int>(desc.joints.size())) {
        return Invalid(what, "joint", absl::StrCat("refers to missing joint ", act.joint));
      }
      const JointDesc& joint = desc.joints[act.joint];
      if (joint.type == JointType::kBall)
        return Invalid(what, "joint", "is a ball joint, which has no actuated axis");
      if (act.dof < 0 || act.dof >= JointDofCount(joint)) {
        return Invalid(what, "dof",
                       absl::StrCat("is out of range [0, ", JointDofCount(joint), "): ", act.dof));
      }
    }
    if (!Finite(act.gear)) return Invalid(what, "gear", "is not finite");
    if (act.ctrl_limited && !(act.ctrl_min <= act.ctrl_max)) {
      return Invalid(what, "ctrl range",
                     absl::StrCat("has min > max: ", Fmt(act.ctrl_min), " > ", Fmt(act.ctrl_max)));
    }
    if (!Finite(act.kp) || act.kp < 0)
      return Invalid(what, "kp", "must be >= 0, got " + Fmt(act.kp));
    if (!Finite(act.kv) || act.kv < 0)
      return Invalid(what, "kv", "must be >= 0, got " + Fmt(act.kv));
    if (!Finite(act.target_scale)) return Invalid(what, "target_scale", "is not finite");
    if (static_cast<int>(act.type) < 0 || static_cast<int>(act.type) > 3) {
      return Invalid(what, "type", absl::StrCat("is unknown (", static_cast<int>(act.type), ")"));
    }
    if (act.type == ActuatorType::kMuscle) {
      absl::Status muscle = ValidateMuscle(what, act.muscle);
      if (!muscle.ok()) return muscle;
    }
    const int dynamics = static_cast<int>(act.dynamics);
    if (dynamics < 0 || dynamics > 2)
      return Invalid(what, "dynamics", absl::StrCat("is unknown (", dynamics, ")"));
    if (act.dynamics != ActuatorDynamics::kNone && act.type == ActuatorType::kMuscle)
      return Invalid(what, "dynamics", "is given on a muscle, which has its own");
    if (act.dynamics == ActuatorDynamics::kFilter &&
        !(Finite(act.dynamics_time_constant) && act.dynamics_time_constant > 0))
      return Invalid(what, "dynamics_time_constant",
                     "must be > 0 for a filter, got " + Fmt(act.dynamics_time_constant));
    if (act.activation_limited) {
      if (!HasActivation(act))
        return Invalid(what, "activation range", "is given on an actuator without activation");
      if (!Finite(act.activation_min) || !Finite(act.activation_max) ||
          !(act.activation_min < act.activation_max))
        return Invalid(what, "activation range",
                       absl::StrCat("must be finite with min < max, got [", Fmt(act.activation_min),
                                    ", ", Fmt(act.activation_max), "]"));
    }
    if (act.force_limited) {
      if (!Finite(act.force_min) || !Finite(act.force_max) || !(act.force_min < act.force_max))
        return Invalid(what, "force range",
                       absl::StrCat("must be finite with min < max, got [", Fmt(act.force_min),
                                    ", ", Fmt(act.force_max), "]"));
      // one servo's bound holds in its DOF's row; a sum of bounded servos would not
      for (int other = 0; other < static_cast<int>(desc.actuators.size()); ++other) {
        const ActuatorDesc& o = desc.actuators[other];
        const bool same_target = act.tendon >= 0
                                     ? o.tendon == act.tendon
                                     : o.tendon < 0 && o.joint == act.joint && o.dof == act.dof;
        if (other != a && IsServo(act.type) && IsServo(o.type) && same_target)
          return Invalid(
              what, "force range",
              absl::StrCat("bounds a servo that shares its ", act.tendon >= 0 ? "tendon" : "DOF",
                           " with servo actuator ", other, " ('", o.name,
                           "'): a force-limited servo must be its ",
                           act.tendon >= 0 ? "tendon" : "DOF", "'s only one"));
      }
    }
  }

  // couplings
  std::set<std::pair<int, int>> followers;
  for (int c = 0; c < static_cast<int>(desc.couplings.size()); ++c) {
    JointCouplingDesc& coupling = desc.couplings[c];
    std::string what = Describe("coupling", c, coupling.name);
    auto check_dof = [&](int joint, int dof, const char* field) -> absl::Status {
      if (joint < 0 || joint >= static_cast<int>(desc.joints.size()))
        return Invalid(what, field, absl::StrCat("refers to missing joint ", joint));
      const JointDesc& j = desc.joints[joint];
      if (j.type == JointType::kBall)
        return Invalid(what, field, "is a ball joint, which has no scalar coordinate");
      if (dof < 0 || dof >= JointDofCount(j))
        return Invalid(
            what, field,
            absl::StrCat("'s DOF ", dof, " is out of range [0, ", JointDofCount(j), ")"));
      return absl::OkStatus();
    };
    absl::Status s = check_dof(coupling.joint, coupling.dof, "joint");
    if (!s.ok()) return s;
    if (coupling.leader_joint != -1) {
      s = check_dof(coupling.leader_joint, coupling.leader_dof, "leader_joint");
      if (!s.ok()) return s;
      if (coupling.leader_joint == coupling.joint && coupling.leader_dof == coupling.dof)
        return Invalid(what, "leader_joint", "is the follower itself");
    }
    for (Real x : coupling.polynomial) {
      if (!Finite(x)) return Invalid(what, "polynomial", "is not finite");
    }
    if (!Finite(coupling.compliance) || coupling.compliance < 0)
      return Invalid(what, "compliance", "must be >= 0, got " + Fmt(coupling.compliance));
    if (!followers.insert({coupling.joint, coupling.dof}).second)
      return Invalid(what, "joint",
                     absl::StrCat("DOF ", coupling.dof, " of joint ", coupling.joint,
                                  " already follows another coupling"));
  }

  // tendons
  for (int t = 0; t < static_cast<int>(desc.tendons.size()); ++t) {
    const TendonDesc& tendon = desc.tendons[t];
    const std::string what = Describe("tendon", t, tendon.name);
    if (!tendon.path.empty()) {
      if (!tendon.joints.empty())
        return Invalid(what, "joints", "must be empty for a spatial tendon (one with a path)");
      if (absl::Status path = ValidateTendonPath(desc, tendon, what); !path.ok()) return path;
    } else if (tendon.joints.empty()) {
      return Invalid(what, "joints", "must hold at least one joint (or the tendon a path)");
    }
    std::set<std::pair<int, int>> tendon_dofs;
    for (size_t k = 0; k < tendon.joints.size(); ++k) {
      const TendonJointDesc& tj = tendon.joints[k];
      const std::string field = absl::StrCat("joints[", k, "]");
      if (tj.joint < 0 || tj.joint >= static_cast<int>(desc.joints.size()))
        return Invalid(what, field, absl::StrCat("refers to missing joint ", tj.joint));
      const JointDesc& j = desc.joints[tj.joint];
      if (j.type == JointType::kBall)
        return Invalid(what, field, "is a ball joint, which has no scalar coordinate");
      if (tj.dof < 0 || tj.dof >= JointDofCount(j))
        return Invalid(
            what, field,
            absl::StrCat("'s DOF ", tj.dof, " is out of range [0, ", JointDofCount(j), ")"));
      if (!Finite(tj.coef) || tj.coef == 0)
        return Invalid(what, field, "coef must be finite and nonzero, got " + Fmt(tj.coef));
      if (!tendon_dofs.insert({tj.joint, tj.dof}).second)
        return Invalid(what, field,
                       absl::StrCat("names DOF ", tj.dof, " of joint ", tj.joint,
                                    " again (give it one coefficient)"));
    }
    if (tendon.limited &&
        (!Finite(tendon.lower) || !Finite(tendon.upper) || !(tendon.lower < tendon.upper)))
      return Invalid(what, "limits",
                     absl::StrCat("must be finite with lower < upper, got [", Fmt(tendon.lower),
                                  ", ", Fmt(tendon.upper), "]"));
    if (!Finite(tendon.stiffness) || tendon.stiffness < 0)
      return Invalid(what, "stiffness", "must be >= 0, got " + Fmt(tendon.stiffness));
    if (!Finite(tendon.damping) || tendon.damping < 0)
      return Invalid(what, "damping", "must be >= 0, got " + Fmt(tendon.damping));
    if (tendon.spring_length && !Finite(*tendon.spring_length))
      return Invalid(what, "spring_length", "is not finite");
    if (!Finite(tendon.friction_loss) || tendon.friction_loss < 0)
      return Invalid(what, "friction_loss", "must be >= 0, got " + Fmt(tendon.friction_loss));
    if (!Finite(tendon.hold_offset)) return Invalid(what, "hold_offset", "is not finite");
    if (!Finite(tendon.hold_compliance) || tendon.hold_compliance < 0)
      return Invalid(what, "hold_compliance", "must be >= 0, got " + Fmt(tendon.hold_compliance));
    if (!Finite(tendon.hold_damping) || tendon.hold_damping < 0)
      return Invalid(what, "hold_damping", "must be >= 0, got " + Fmt(tendon.hold_damping));
  }

  // keyframes: whole states, or nothing of a part
  for (int k = 0; k < static_cast<int>(desc.keyframes.size()); ++k) {
    const KeyframeDesc& key = desc.keyframes[k];
    const std::string what = Describe("keyframe", k, key.name);
    const size_t bodies = desc.bodies.size(), actuators = desc.actuators.size();
    if (!Finite(key.time)) return Invalid(what, "time", "is not finite");
    if (!key.body_pose.empty() && key.body_pose.size() != 7 * bodies)
      return Invalid(
          what, "body_pose",
          absl::StrCat("needs ", 7 * bodies, " values (7 per body), got ", key.body_pose.size()));
    if (!key.body_velocity.empty() && key.body_velocity.size() != 6 * bodies)
      return Invalid(what, "body_velocity",
                     absl::StrCat("needs ", 6 * bodies, " values (6 per body), got ",
                                  key.body_velocity.size()));
    if (!key.controls.empty() && key.controls.size() != actuators)
      return Invalid(
          what, "controls",
          absl::StrCat("needs ", actuators, " values (1 per actuator), got ", key.controls.size()));
    if (!key.activations.empty() && key.activations.size() != actuators)
      return Invalid(what, "activations",
                     absl::StrCat("needs ", actuators, " values (1 per actuator), got ",
                                  key.activations.size()));
    for (size_t a = 0; a < key.activations.size(); ++a) {
      const bool has = HasActivation(desc.actuators[a]);
      const Real x = key.activations[a];
      if (!ValidActivation(desc.actuators[a], x))
        return Invalid(
            what, "activations",
            absl::StrCat("of actuator ", a, " ('", desc.actuators[a].name, "') = ", Fmt(x),
                         has ? " is not finite"
                             : " is not 0 (only muscles and actuators with dynamics "
                               "have an activation)"));
    }
    for (size_t i = 0; i < key.body_pose.size(); ++i) {
      if (!Finite(key.body_pose[i]))
        return Invalid(what, "body_pose", absl::StrCat("of body ", i / 7, " is not finite"));
    }
    for (size_t i = 0; i < key.body_pose.size(); i += 7) {
      if (!(quat_norm(load_quat(&key.body_pose[i + 3])) > Real(1e-9)))
        return Invalid(what, "body_pose", absl::StrCat("of body ", i / 7, ": quaternion is zero"));
    }
    for (size_t i = 0; i < key.body_velocity.size(); ++i) {
      if (!Finite(key.body_velocity[i]))
        return Invalid(what, "body_velocity", absl::StrCat("of body ", i / 6, " is not finite"));
    }
    if (!key.mocap_pose.empty() && key.mocap_pose.size() != 7 * desc.mocap_bodies.size())
      return Invalid(what, "mocap_pose",
                     absl::StrCat("needs ", 7 * desc.mocap_bodies.size(),
                                  " values (7 per mocap body), got ", key.mocap_pose.size()));
    for (size_t i = 0; i < key.mocap_pose.size(); ++i) {
      if (!Finite(key.mocap_pose[i]))
        return Invalid(what, "mocap_pose", absl::StrCat("of mocap body ", i / 7, " is not finite"));
    }
    for (size_t i = 0; i < key.mocap_pose.size(); i += 7) {
      if (!(quat_norm(load_quat(&key.mocap_pose[i + 3])) > Real(1e-9)))
        return Invalid(what, "mocap_pose",
                       absl::StrCat("of mocap body ", i / 7, ": quaternion is zero"));
    }
    for (size_t a = 0; a < key.controls.size(); ++a) {
      const ActuatorDesc& act = desc.actuators[a];
      if (!Finite(key.controls[a]) ||
          (act.ctrl_limited && (key.controls[a] < act.ctrl_min || key.controls[a] > act.ctrl_max)))
        return Invalid(what, "controls",
                       absl::StrCat("of actuator ", a, " ('", act.name, "') = ",
                                    Fmt(key.controls[a]), " is not finite or outside its range"));
    }
  }

  // compile: offsets, parent-side joint frames, row counts
  model->joint_position_offset_.clear();
  model->joint_dof_offset_.clear();
  int dof_total = 0, qpos_total = 0, rows_total = 0;
  for (int j = 0; j < static_cast<int>(desc.joints.size()); ++j) {
    const JointDesc& joint = desc.joints[j];
    model->joint_dof_offset_.push_back(dof_total);
    model->joint_position_offset_.push_back(qpos_total);
    dof_total += JointDofCount(joint);
    qpos_total += JointPositionCount(joint);
    // Joint frame in the world at the initial configuration, then on the parent side.
    const BodyDesc& child = desc.bodies[joint.child];
    Pose world = compose(child.pose, joint.child_frame);
    Pose parent_frame = world;
    if (joint.parent != kWorldBody || joint.parent_mocap >= 0) {
      const Pose& parent = joint.parent != kWorldBody ? desc.bodies[joint.parent].pose
                                                      : desc.mocap_bodies[joint.parent_mocap].pose;
      parent_frame.pos = rotate_inv(parent.quat, world.pos - parent.pos);
      parent_frame.quat = conjugate(parent.quat) * world.quat;
    }
    model->joint_parent_frame_.push_back(parent_frame);
    bool has_drive = JointHasDrive(desc, j);
    rows_total += static_cast<int>(JointRows(joint, has_drive).size());
  }
  model->joint_dof_count_ = dof_total;
  model->joint_position_count_ = qpos_total;
  // a coupling takes two row slots: its own, and its leader's Jacobian blocks; a tendon row
  // its tendon's slots (TendonSides)
  rows_total += 2 * static_cast<int>(desc.couplings.size());
  for (int t = 0; t < static_cast<int>(desc.tendons.size()); ++t)
    rows_total += TendonSides(desc, t).slots() * static_cast<int>(TendonRows(desc, t).size());
  model->joint_row_count_ = rows_total;
  auto angular_rows = [](int contact_dim) {
    return contact_dim >= 6 ? 3 : contact_dim == 4 ? 1 : 0;
  };
  for (const ShapeDesc& shape : desc.shapes)
    model->contact_angular_rows_ =
        std::max(model->contact_angular_rows_, angular_rows(shape.contact_dim));
  for (const ContactPairDesc& pair : desc.contact_pairs)
    model->contact_angular_rows_ =
        std::max(model->contact_angular_rows_, angular_rows(pair.contact_dim));

  // collision filter: group/mask, no pairs within a body or between planes, none between
  // bodies joined by a joint unless asked for; its exceptions become the pair rules
  std::set<std::pair<int, int>> joined;
  for (const JointDesc& joint : desc.joints) {
    if (joint.collide_connected) continue;
    if (joint.parent == kWorldBody && joint.type != JointType::kFixed) continue;
    joined.insert({std::min(joint.parent, joint.child), std::max(joint.parent, joint.child)});
  }
  for (size_t i = 0; i < desc.exclude_body_pairs.size(); ++i) {
    auto [a, b] = desc.exclude_body_pairs[i];
    if (a < kWorldBody || a >= body_count || b < kWorldBody || b >= body_count) {
      return Invalid("model", absl::StrCat("exclude_body_pairs[", i, "]"),
                     absl::StrCat("refers to missing body (", a, ", ", b, ")"));
    }
    joined.insert({std::min(a, b), std::max(a, b)});
  }
  const int shape_count = static_cast<int>(desc.shapes.size());
  if (desc.pair_capacity < -1)
    return Invalid("model", "pair_capacity",
                   absl::StrCat("must be >= 0, or -1 to derive it, got ", desc.pair_capacity));
  // explicit pairs: they replace what the filter would give the same two shapes
  std::set<std::pair<int, int>> explicit_pairs;
  for (int i = 0; i < static_cast<int>(desc.contact_pairs.size()); ++i) {
    const ContactPairDesc& pair = desc.contact_pairs[i];
    const std::string what = Describe("contact pair", i, pair.name);
    if (pair.shape_a < 0 || pair.shape_a >= shape_count || pair.shape_b < 0 ||
        pair.shape_b >= shape_count)
      return Invalid(
          what, "shapes",
          absl::StrCat("refer to missing shapes (", pair.shape_a, ", ", pair.shape_b, ")"));
    const ShapeDesc& sa = desc.shapes[pair.shape_a];
    const ShapeDesc& sb = desc.shapes[pair.shape_b];
    if (sa.body == sb.body)
      return Invalid(what, "shapes", "are on the same body (or both static): they cannot touch");
    if (!Finite(pair.friction) || pair.friction < 0)
      return Invalid(what, "friction", "must be >= 0, got " + Fmt(pair.friction));
    if (pair.contact_dim != 1 && pair.contact_dim != 3 && pair.contact_dim != 4 &&
        pair.contact_dim != 6)
      return Invalid(what, "contact_dim",
                     absl::StrCat("must be 1, 3, 4 or 6, got ", pair.contact_dim));
    if (!Finite(pair.torsional_friction) || pair.torsional_friction < 0)
      return Invalid(what, "torsional_friction",
                     "must be >= 0, got " + Fmt(pair.torsional_friction));
    if (!Finite(pair.rolling_friction) || pair.rolling_friction < 0)
      return Invalid(what, "rolling_friction", "must be >= 0, got " + Fmt(pair.rolling_friction));
    if (!Finite(pair.margin) || pair.margin < 0)
      return Invalid(what, "margin", "must be >= 0 and finite, got " + Fmt(pair.margin));
    if (!Finite(pair.gap) || pair.gap < 0)
      return Invalid(what, "gap", "must be >= 0 and finite, got " + Fmt(pair.gap));
    const std::pair<int, int> key{std::min(pair.shape_a, pair.shape_b),
                                  std::max(pair.shape_a, pair.shape_b)};
    if (!explicit_pairs.insert(key).second)
      return Invalid(what, "shapes", "are already an explicit pair");
    model->pair_rules_.push_back(
        {key.first, key.second, pair.contact_dim == 1 ? Real(0) : pair.friction,
         pair.contact_dim >= 4 ? pair.torsional_friction : Real(0),
         pair.contact_dim >= 6 ? pair.rolling_friction : Real(0), pair.margin, pair.gap});
  }
  // the joined bodies' shape pairs the filter would pass, excluded
  std::vector<std::vector<int>> body_shapes(body_count + 1);  // kWorldBody's at 0
  for (int s = 0; s < shape_count; ++s) body_shapes[desc.shapes[s].body + 1].push_back(s);
  std::set<std::pair<int, int>> excluded, unreachable;
  auto exclude = [&](int a, int b) {
    const std::pair<int, int> key{std::min(a, b), std::max(a, b)};
    if (ShapesPassFilter(desc.shapes[a], desc.shapes[b]) && !explicit_pairs.count(key))
      excluded.insert(key);
  };
  for (auto [body_a, body_b] : joined) {
    if (body_a == body_b) continue;
    for (int a : body_shapes[body_a + 1]) {
      for (int b : body_shapes[body_b + 1]) exclude(a, b);
    }
  }
  // A body whose joint to the world holds its rotation and its translation along a static
  // plane's normal can neither approach nor leave that plane: its contacts with it could not act
  // (the joint carries the load), and one that starts inside it could never be resolved (Gym's
  // thrower holds its target on two slides with capsule ends 0.5 mm into the floor). Excluded.
  for (const JointDesc& joint : desc.joints) {
    for (int plane : body_shapes[0]) {
      if (!JointHoldsChildOffPlane(desc, joint, desc.shapes[plane])) continue;
      for (int s : body_shapes[joint.child + 1]) {
        exclude(plane, s);
        unreachable.insert({std::min(plane, s), std::max(plane, s)});
      }
    }
  }
  // Shapes that both contain the anchor their joint holds in place overlap whatever it does
  // (AnchorOverlapPairs): dm_control's CMU humanoid, hanging from its static pelvis, pushed its
  // thighs out of it against the hips until the state was no longer finite. Excluded.
  for (const auto& [a, b] : AnchorOverlapPairs(desc, nullptr, &model->shape_hull_)) exclude(a, b);
  // (explicit pairs included: MJCF's one-way contype/conaffinity pairs arrive as explicit pairs)
  for (Model::PairRule& rule : model->pair_rules_) {
    if (unreachable.count({rule.shape_a, rule.shape_b})) rule.friction = Model::kPairExcluded;
  }
  for (auto [a, b] : excluded) model->pair_rules_.push_back({a, b, Model::kPairExcluded});
  std::sort(model->pair_rules_.begin(), model->pair_rules_.end(), PairRuleBefore);
  // pairs that may collide: those the filter passes, less the excluded, plus the explicit ones
  // it does not pass (a count over every pair of shapes, kept only as a number)
  int64_t pair_count = 0;
  for (int a = 0; a < shape_count; ++a)
    for (int b = a + 1; b < shape_count; ++b)
      pair_count += ShapesPassFilter(desc.shapes[a], desc.shapes[b]) ? 1 : 0;
  for (const Model::PairRule& rule : model->pair_rules_) {
    const bool passes = ShapesPassFilter(desc.shapes[rule.shape_a], desc.shapes[rule.shape_b]);
    if (rule.friction == Model::kPairExcluded && passes) pair_count -= 1;
    if (rule.friction != Model::kPairExcluded && !passes) pair_count += 1;
  }
  model->collision_pair_count_ = pair_count;
  const int64_t per_shape = 64 * static_cast<int64_t>(shape_count) + 64;
  model->pair_capacity_ = desc.pair_capacity >= 0
                              ? desc.pair_capacity
                              : static_cast<int>(std::min(pair_count, per_shape));
  if (desc.contact_capacity >= 0) {
    model->contact_capacity_ = desc.contact_capacity;
  } else {
    model->contact_capacity_ =
        pair_count == 0 ? 0
                        : static_cast<int>(
                              std::min(4 * pair_count, 8 * static_cast<int64_t>(shape_count) + 16));
  }
  model->desc_ = std::move(desc);
  model->fingerprint_ = Fingerprint(*model);
  return std::shared_ptr<const Model>(std::move(model));
}

ShapeDesc FloorShape(Real height) {
  ShapeDesc floor;
  floor.name = "floor";
  floor.type = ShapeType::kPlane;
  floor.pose.pos = {0, 0, height};
  return floor;
}

std::vector<RowKind> TendonRows(const ModelDesc& desc, int tendon) {
  const TendonDesc& t = desc.tendons[tendon];
  std::vector<RowKind> rows;
  if (t.limited) {
    rows.push_back(kRowTendonLimitLower);
    rows.push_back(kRowTendonLimitUpper);
  }
  bool drive = t.stiffness > 0 || t.damping > 0;
  for (const ActuatorDesc& a : desc.actuators)
    drive = drive || (a.tendon == tendon && IsServo(a.type));
  if (drive) rows.push_back(kRowTendonDrive);
  if (t.friction_loss > 0) rows.push_back(kRowTendonFrictionLoss);
  if (t.hold) rows.push_back(kRowTendonHold);
  return rows;
}

TendonSideLayout TendonSides(const ModelDesc& desc, int tendon) {
  const TendonDesc& t = desc.tendons[tendon];
  TendonSideLayout out;
  if (!t.path.empty()) {
    const std::vector<int> bodies = TendonPathBodies(t);
    out.sides.assign(4, -1);
    for (size_t k = 0; k < bodies.size() && k < 4; ++k) out.sides[k] = bodies[k];
    return out;
  }
  std::map<int, int> side;  // body -> its side (a tendon may span thousands of joints)
  auto side_of = [&](int body) -> int {
    if (body < 0) return -1;
    auto [at, added] = side.emplace(body, static_cast<int>(out.sides.size()));
    if (added) out.sides.push_back(body);
    return at->second;
  };
  for (size_t k = 0; k < t.joints.size(); ++k) {
    const JointDesc& joint = desc.joints[t.joints[k].joint];
    if (k == 0) {  // the row's own sides, as a joint row's (the parent -1 for the world)
      out.sides = {joint.child, joint.parent};
      side.emplace(joint.child, 0);
      if (joint.parent >= 0) side.emplace(joint.parent, 1);
    }
    out.joint_sides.push_back({side_of(joint.child), side_of(joint.parent)});
  }
  while (out.sides.size() < 4 || out.sides.size() % 2 != 0) out.sides.push_back(-1);
  return out;
}

std::vector<int> TendonPathBodies(const TendonDesc& tendon) {
  std::vector<int> bodies;
  for (const TendonPathDesc& point : tendon.path) {
    if (point.kind == TendonPathDesc::Kind::kPulley || point.body < 0) continue;
    if (std::find(bodies.begin(), bodies.end(), point.body) == bodies.end())
      bodies.push_back(point.body);
  }
  return bodies;
}

TendonPathLayout LayTendonPath(const ModelDesc& desc, const TendonDesc& tendon) {
  TendonPathLayout out;
  const auto com = [&](int body) { return body < 0 ? Vec3{} : desc.bodies[body].com; };
  for (const TendonPathDesc& point : tendon.path) {
    out.kind.push_back(static_cast<int32_t>(point.kind));
    out.body.push_back(point.body);
    const Vec3 pos = point.pose.pos - com(point.body);
    const Quat quat = quat_normalized(point.pose.quat);
    out.pos.insert(out.pos.end(), {pos.x, pos.y, pos.z});
    out.quat.insert(out.quat.end(), {quat.w, quat.x, quat.y, quat.z});
    out.size.push_back(point.kind == TendonPathDesc::Kind::kPulley  ? point.divisor
                       : point.kind == TendonPathDesc::Kind::kCrank ? point.rod_length
                                                                    : point.radius);
    out.side_body.push_back(point.has_side ? point.side_body : -2);
    const Vec3 side = point.has_side ? point.side_pos - com(point.side_body) : Vec3{};
    out.side_pos.insert(out.side_pos.end(), {side.x, side.y, side.z});
  }
  const std::vector<int> bodies = TendonPathBodies(tendon);
  for (size_t k = 0; k < bodies.size() && k < 4; ++k) out.sides[k] = bodies[k];
  return out;
}

Real TendonSpringLength(const ModelDesc& desc, const TendonDesc& tendon) {
  return tendon.spring_length ? *tendon.spring_length : TendonInitialLength(desc, tendon);
}

Real TendonInitialLength(const ModelDesc& desc, const TendonDesc& tendon) {
  if (!tendon.path.empty()) {
    // the path at the bodies' initial poses (centre of mass and rotation, as body_q holds them)
    std::vector<Real> body_q;
    for (const BodyDesc& body : desc.bodies) {
      const Vec3 com = body.pose.pos + rotate(body.pose.quat, body.com);
      const Quat quat = quat_normalized(body.pose.quat);
      body_q.insert(body_q.end(), {com.x, com.y, com.z, quat.w, quat.x, quat.y, quat.z});
    }
    const TendonPathLayout path = LayTendonPath(desc, tendon);
    return kernels::spatial_tendon_length(path.view(), body_q.data(), false).value;
  }
  Real length = 0;
  for (const TendonJointDesc& j : tendon.joints) length += j.coef * desc.joints[j.joint].reference;
  return length;
}

bool JointHasDrive(const ModelDesc& desc, int joint_index) {
  const JointDesc& joint = desc.joints[joint_index];
  if (joint.drive.stiffness > 0 || joint.drive.damping > 0 || joint.armature > 0) return true;
  for (const DriveDesc& d : joint.dof_drive) {
    if (d.stiffness > 0 || d.damping > 0) return true;
  }
  for (Real a : joint.dof_armature) {
    if (a > 0) return true;
  }
  for (const ActuatorDesc& act : desc.actuators) {
    if (act.tendon < 0 && act.joint == joint_index && IsServo(act.type)) return true;
  }
  return false;
}

absl::Status CheckSameStructure(const Model& current, const Model& next) {
  const ModelDesc& a = current.desc();
  const ModelDesc& b = next.desc();
  auto differ = [](const std::string& what, auto has, auto had) {
    return absl::InvalidArgumentError(
        absl::StrCat("the new model has ", has, " ", what, " where the world's has ", had));
  };
  if (next.body_count() != current.body_count())
    return differ("bodies", next.body_count(), current.body_count());
  if (next.shape_count() != current.shape_count())
    return differ("shapes", next.shape_count(), current.shape_count());
  if (next.joint_count() != current.joint_count())
    return differ("joints", next.joint_count(), current.joint_count());
  if (next.actuator_count() != current.actuator_count())
    return differ("actuators", next.actuator_count(), current.actuator_count());
  if (b.couplings.size() != a.couplings.size())
    return differ("joint couplings", b.couplings.size(), a.couplings.size());
  if (next.tendon_count() != current.tendon_count())
    return differ("tendons", next.tendon_count(), current.tendon_count());
  if (next.mocap_count() != current.mocap_count())
    return differ("mocap bodies", next.mocap_count(), current.mocap_count());
  for (int j = 0; j < current.joint_count(); ++j) {
    const JointDesc& ja = a.joints[j];
    const JointDesc& jb = b.joints[j];
    const std::vector<JointRowLayout> ra = JointRows(ja, JointHasDrive(a, j));
    const std::vector<JointRowLayout> rb = JointRows(jb, JointHasDrive(b, j));
    bool same_rows = ra.size() == rb.size();
    for (size_t r = 0; same_rows && r < ra.size(); ++r)
      same_rows = ra[r].kind == rb[r].kind && ra[r].axis == rb[r].axis && ra[r].dof == rb[r].dof;
    if (jb.type != ja.type || jb.parent != ja.parent || jb.child != ja.child ||
        jb.parent_mocap != ja.parent_mocap || !same_rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "joint ", j, " ('", ja.name,
          "') differs in kind, bodies or constraint rows (limits, a ball's cone, drive rows, "
          "friction loss: a stiffness, damping, armature or friction loss that is zero in one "
          "and not the other, or a servo in one only)"));
    }
  }
  for (size_t k = 0; k < a.couplings.size(); ++k) {
    const JointCouplingDesc& ca = a.couplings[k];
    const JointCouplingDesc& cb = b.couplings[k];
    if (cb.joint != ca.joint || cb.dof != ca.dof || cb.leader_joint != ca.leader_joint ||
        cb.leader_dof != ca.leader_dof) {
      return absl::InvalidArgumentError(
          absl::StrCat("joint coupling ", k, " ('", ca.name, "') couples other joints"));
    }
  }
  for (int t = 0; t < current.tendon_count(); ++t) {
    const TendonDesc& ta = a.tendons[t];
    const TendonDesc& tb = b.tendons[t];
    bool same = ta.joints.size() == tb.joints.size() && TendonRows(a, t) == TendonRows(b, t) &&
                TendonPathBodies(ta) == TendonPathBodies(tb) && ta.path.empty() == tb.path.empty();
    for (size_t k = 0; same && k < ta.joints.size(); ++k)
      same = ta.joints[k].joint == tb.joints[k].joint && ta.joints[k].dof == tb.joints[k].dof;
    if (!same)
      return absl::InvalidArgumentError(absl::StrCat(
          "tendon ", t, " ('", ta.name,
          "') differs in its joints, its path's bodies or its rows (limits, a drive: a "
          "stiffness, damping or servo in one only, friction loss)"));
  }
  for (int k = 0; k < current.actuator_count(); ++k) {
    if (b.actuators[k].tendon != a.actuators[k].tendon)
      return absl::InvalidArgumentError(
          absl::StrCat("actuator ", k, " ('", a.actuators[k].name, "') drives another tendon"));
  }
  for (int i = 0; i < current.shape_count(); ++i) {
    if (b.shapes[i].body != a.shapes[i].body || b.shapes[i].mocap != a.shapes[i].mocap) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", i, " ('", a.shapes[i].name, "') is on body ", b.shapes[i].body,
                       " (mocap ", b.shapes[i].mocap, ") where the world's is on body ",
                       a.shapes[i].body, " (mocap ", a.shapes[i].mocap, ")"));
    }
  }
  // implied by the joints, checked for what the batch's arrays hold
  if (next.joint_row_count() != current.joint_row_count())
    return differ("joint rows", next.joint_row_count(), current.joint_row_count());
  return absl::OkStatus();
}

bool Model::MayCollide(int a, int b, Real* friction) const {
  if (friction) *friction = -1;
  if (a == b || a < 0 || b < 0 || a >= shape_count() || b >= shape_count()) return false;
  const PairRule key{std::min(a, b), std::max(a, b), 0};
  auto rule = std::lower_bound(pair_rules_.begin(), pair_rules_.end(), key, PairRuleBefore);
  if (rule != pair_rules_.end() && rule->shape_a == key.shape_a && rule->shape_b == key.shape_b) {
    if (rule->friction == kPairExcluded) return false;
    if (friction) *friction = rule->friction;
    return true;
  }
  return ShapesPassFilter(desc_.shapes[a], desc_.shapes[b]);
}

std::vector<std::array<int, 2>> Model::collision_pairs() const {
  std::vector<std::array<int, 2>> pairs;
  for (int a = 0; a < shape_count(); ++a)
    for (int b = a + 1; b < shape_count(); ++b)
      if (MayCollide(a, b)) pairs.push_back({a, b});
  return pairs;
}

Real Model::total_mass() const {
  Real m = 0;
  for (const BodyDesc& b : desc_.bodies) m += b.mass;
  return m;
}

int Model::FindBody(const std::string& name) const {
  for (int i = 0; i < body_count(); ++i) {
    if (desc_.bodies[i].name == name) return i;
  }
  return -1;
}
int Model::FindJoint(const std::string& name) const {
  for (int i = 0; i < joint_count(); ++i) {
    if (desc_.joints[i].name == name) return i;
  }
  return -1;
}
int Model::FindKeyframe(const std::string& name) const {
  for (int i = 0; i < static_cast<int>(desc_.keyframes.size()); ++i) {
    if (desc_.keyframes[i].name == name) return i;
  }
  int index = 0;
  if (!name.empty() && name.size() < 10 &&
      std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
      absl::SimpleAtoi(name, &index) && index < static_cast<int>(desc_.keyframes.size()))
    return index;
  return -1;
}

int Model::FindMocapBody(const std::string& name) const {
  for (int i = 0; i < mocap_count(); ++i) {
    if (desc_.mocap_bodies[i].name == name) return i;
  }
  return -1;
}

int Model::FindActuator(const std::string& name) const {
  for (int i = 0; i < actuator_count(); ++i) {
    if (desc_.actuators[i].name == name) return i;
  }
  return -1;
}

namespace {
// largest = max(largest, x), where a NaN, once met, stays (a non-finite state is no accuracy)
void RaiseTo(Real& largest, Real x) {
  if (std::isnan(x) || x > largest) largest = x;
}
}  // namespace

absl::StatusOr<LimitViolation> JointLimitViolation(const Model& model,
                                                   const std::vector<Real>& position) {
  if (static_cast<int>(position.size()) != model.joint_position_count()) {
    return absl::InvalidArgumentError(
        absl::StrCat("joint positions: expected ", model.joint_position_count(),
                     " entries (the model's joint_position_count), got ", position.size()));
  }
  LimitViolation worst;
  const std::vector<JointDesc>& joints = model.desc().joints;
  for (size_t j = 0; j < joints.size(); ++j) {
    const JointDesc& joint = joints[j];
    const Real* q = position.data() + model.joint_position_offset()[j];
    if (joint.type == JointType::kBall) {
      // the turn from the initial configuration: 2 atan2(|v|, |w|) of q = (w, v)
      const Real cone = JointConeLimit(joint);
      if (!(cone > 0)) continue;
      const Real turn =
          2 * std::atan2(std::sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3]), std::fabs(q[0]));
      RaiseTo(worst.angular, turn - cone);
      continue;
    }
    const std::vector<int> axes = JointDofAxes(joint);
    const std::array<AxisMode, 6> modes = JointAxisModes(joint);
    for (size_t d = 0; d < axes.size(); ++d) {
      if (modes[axes[d]] != AxisMode::kLimited) continue;
      const Real excess = std::max(joint.lower[d] - q[d], q[d] - joint.upper[d]);
      RaiseTo(axes[d] < 3 ? worst.linear : worst.angular, excess);
    }
  }
  return worst;
}

}  // namespace axion
