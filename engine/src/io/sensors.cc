// The file's sensors read off a world's state (FileSensorData, mjcf.h): MuJoCo's sensordata
// for the same state, computed on the host from what the Simulator returns (body states, the
// file's joint coordinates, actuator forces and contacts).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "axion/mjcf.h"
#include "io_util.h"
#include "model_internal.h"

namespace axion {
namespace {

using Kind = ImportResult::SensorKind;
using Frame = ImportResult::SensorFrame;
using Zone = ImportResult::ZoneShape;

// A sensor frame where the state puts it: its pose and its origin's velocity, world frame.
struct Placed {
  Pose pose{{}, {1, 0, 0, 0}};
  Vec3 linear, angular;
};

absl::StatusOr<Placed> Place(const Frame& frame, const BodyState& bodies,
                             const std::vector<Real>& mocap_pose) {
  Pose carrier{{}, {1, 0, 0, 0}};
  Vec3 linear, angular;
  if (frame.body != kWorldBody) {
    if (frame.body < 0 || 7 * static_cast<size_t>(frame.body + 1) > bodies.pose.size() ||
        6 * static_cast<size_t>(frame.body + 1) > bodies.velocity.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sensor data: body ", frame.body, " is not in the body state"));
    }
    carrier.pos = load3(&bodies.pose[7 * frame.body]);
    carrier.quat = load_quat(&bodies.pose[7 * frame.body + 3]);
    linear = load3(&bodies.velocity[6 * frame.body]);
    angular = load3(&bodies.velocity[6 * frame.body + 3]);
  } else if (frame.mocap >= 0) {
    // a mocap body moves without velocity, as in MuJoCo
    if (7 * static_cast<size_t>(frame.mocap + 1) > mocap_pose.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sensor data: mocap body ", frame.mocap, " has no pose in the inputs"));
    }
    carrier.pos = load3(&mocap_pose[7 * frame.mocap]);
    carrier.quat = load_quat(&mocap_pose[7 * frame.mocap + 3]);
  }
  Placed placed;
  placed.pose = io::ComposePose(carrier, frame.pose);
  placed.angular = angular;
  placed.linear = linear + cross(angular, placed.pose.pos - carrier.pos);
  return placed;
}

// Whether the ray p + t d, t >= 0, meets the zone (its frame; d need not be unit): MuJoCo's
// mju_rayGeom returning a distance, for its site shapes. Each shape is convex (a capsule the
// union of three), so the ray meets it where the intervals of t inside each bounding surface
// overlap at some t >= 0.
struct Interval {
  Real low = 0, high = std::numeric_limits<Real>::infinity();
  bool Empty() const { return !(low <= high); }
  void Meet(Real a, Real b) {
    low = std::max(low, a);
    high = std::min(high, b);
  }
};
// t with |p + t d|^2 <= r^2 (components scaled by `scale`)
void InsideSphere(Vec3 p, Vec3 d, Real r, Interval* t) {
  const Real a = dot(d, d), b = 2 * dot(p, d), c = dot(p, p) - r * r;
  if (a <= 0) {
    if (c > 0) t->Meet(1, 0);
    return;
  }
  const Real disc = b * b - 4 * a * c;
  if (disc < 0) return t->Meet(1, 0);
  const Real root = std::sqrt(disc);
  t->Meet((-b - root) / (2 * a), (-b + root) / (2 * a));
}
// t with |p_i + t d_i| <= s_i along axis i
void InsideSlab(Real p, Real d, Real s, Interval* t) {
  if (d == 0) {
    if (std::fabs(p) > s) t->Meet(1, 0);
    return;
  }
  const Real a = (-s - p) / d, b = (s - p) / d;
  t->Meet(std::min(a, b), std::max(a, b));
}
bool RayMeetsZone(Zone zone, Vec3 size, Vec3 p, Vec3 d) {
  Interval t;
  switch (zone) {
    case Zone::kSphere:
      InsideSphere(p, d, size.x, &t);
      return !t.Empty();
    case Zone::kEllipsoid: {
      if (!(size.x > 0 && size.y > 0 && size.z > 0)) return false;
      const Vec3 inv{1 / size.x, 1 / size.y, 1 / size.z};
      InsideSphere({p.x * inv.x, p.y * inv.y, p.z * inv.z}, {d.x * inv.x, d.y * inv.y, d.z * inv.z},
                   1, &t);
      return !t.Empty();
    }
    case Zone::kBox:
      InsideSlab(p.x, d.x, size.x, &t);
      InsideSlab(p.y, d.y, size.y, &t);
      InsideSlab(p.z, d.z, size.z, &t);
      return !t.Empty();
    case Zone::kCylinder:
    case Zone::kCapsule: {
      InsideSphere({p.x, p.y, 0}, {d.x, d.y, 0}, size.x, &t);
      InsideSlab(p.z, d.z, size.y, &t);
      if (!t.Empty()) return true;
      if (zone == Zone::kCylinder) return false;
      for (Real end : {size.y, -size.y}) {
        Interval cap;
        InsideSphere(p - Vec3{0, 0, end}, d, size.x, &cap);
        if (!cap.Empty()) return true;
      }
      return false;
    }
  }
  return false;
}

// The normal force of the contacts in a touch sensor's zone: MuJoCo's rule, a contact of the
// sensor's body counts when the ray from its point along its normal, away from that body,
// meets the zone (always when the point is inside).
Real Touch(const ImportResult::SourceSensor& sensor, const Placed& site, const SensorInputs& in) {
  Real total = 0;
  const int body = sensor.object.body;
  for (const ContactReport& c : in.contacts) {
    const bool on_a = c.body_a == body, on_b = c.body_b == body;
    if (!on_a && !on_b) continue;
    const Real normal_force = dot(c.force, c.normal);  // on a; the normal points from b to a
    if (!(normal_force > 0)) continue;
    const Vec3 away = on_a ? Real(-1) * c.normal : c.normal;
    const Vec3 p = rotate_inv(site.pose.quat, c.position - site.pose.pos);
    const Vec3 d = rotate_inv(site.pose.quat, away);
    if (RayMeetsZone(sensor.zone, sensor.zone_size, p, d)) total += normal_force;
  }
  return total;
}

// What a subtree of bodies receives from outside but for its contacts and external forces
// (the force its parent's joint transmits, MuJoCo's cfrc_int), by Newton and Euler: each
// body's m (a - g) and, about `point`, I alpha + w x I w + (c - point) x m (a - g), less the
// contact forces and external wrenches on the subtree. Force then torque, world frame.
absl::StatusOr<Vec6> SubtreeWrench(const ImportResult::SourceSensor& s, const Model& model,
                                   const BodyState& bodies, const SensorInputs& in, Vec3 point) {
  const ModelDesc& desc = model.desc();
  const size_t n = desc.bodies.size();
  if (in.body_acceleration.size() != 6 * n || in.external_force.size() != 6 * n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sensor '", s.name, "': the inputs lack the bodies' accelerations or external forces"));
  }
  std::vector<char> inside(n, 0);
  Vec3 force, torque;
  for (int b : s.bodies) {
    if (b < 0 || b >= static_cast<int>(n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("sensor '", s.name, "': body ", b, " is not the world's"));
    }
    inside[b] = 1;
    const BodyDesc& body = desc.bodies[b];
    const Vec3 origin = load3(&bodies.pose[7 * b]);
    const Quat rot = load_quat(&bodies.pose[7 * b + 3]);
    const Vec3 omega = load3(&bodies.velocity[6 * b + 3]);
    const Vec3 alpha = load3(&in.body_acceleration[6 * b + 3]);
    // the centre of mass's acceleration from the origin's
    const Vec3 lever = rotate(rot, body.com);
    const Vec3 centre = origin + lever;
    const Vec3 accel = load3(&in.body_acceleration[6 * b]) + cross(alpha, lever) +
                       cross(omega, cross(omega, lever));
    const Mat33 rotation = quat_to_mat(rot);
    const Mat33 inertia = rotation * body.inertia * transpose(rotation);
    const Vec3 momentum_rate = body.mass * (accel - in.gravity);
    // less the external wrench, at the centre of mass
    const Vec3 external = load3(&in.external_force[6 * b]);
    force += momentum_rate - external;
    torque += inertia * alpha + cross(omega, inertia * omega) +
              cross(centre - point, momentum_rate - external) -
              load3(&in.external_force[6 * b + 3]);
  }
  for (const ContactReport& c : in.contacts) {
    // `force` acts on a, its reaction on b; within the subtree they cancel
    const bool a = c.body_a >= 0 && c.body_a < static_cast<int>(n) && inside[c.body_a];
    const bool b = c.body_b >= 0 && c.body_b < static_cast<int>(n) && inside[c.body_b];
    const Real sign = Real(a) - Real(b);
    if (sign == 0) continue;
    force -= sign * c.force;
    torque -= sign * cross(c.position - point, c.force);
  }
  return Vec6{force, torque};
}

// The distance along the ray p + t d (d unit, shape frame) to a shape's surface: where it
// enters, or leaves when p is inside; -1 where it misses. MuJoCo's ray functions: a plane only
// seen from its front, within its finite size where it has one (Axion's are infinite).
Real RayDistance(ShapeType type, Vec3 size, Vec3 p, Vec3 d) {
  if (type == ShapeType::kPlane) {
    if (!(d.z < -Real(1e-15))) return -1;
    const Real t = -p.z / d.z;
    return t >= 0 ? t : -1;
  }
  Interval line;
  line.low = -std::numeric_limits<Real>::infinity();
  switch (type) {
    case ShapeType::kSphere:
      InsideSphere(p, d, size.x, &line);
      break;
    case ShapeType::kBox:
      InsideSlab(p.x, d.x, size.x, &line);
      InsideSlab(p.y, d.y, size.y, &line);
      InsideSlab(p.z, d.z, size.z, &line);
      break;
    case ShapeType::kCylinder:
    case ShapeType::kCapsule: {
      InsideSphere({p.x, p.y, 0}, {d.x, d.y, 0}, size.x, &line);
      InsideSlab(p.z, d.z, size.y, &line);
      if (type == ShapeType::kCylinder) break;
      // a capsule: the union of its core and end spheres, itself one interval (convex)
      for (Real end : {size.y, -size.y}) {
        Interval cap;
        cap.low = -std::numeric_limits<Real>::infinity();
        InsideSphere(p - Vec3{0, 0, end}, d, size.x, &cap);
        if (cap.Empty()) continue;
        if (line.Empty()) {
          line = cap;
        } else {
          line.low = std::min(line.low, cap.low);
          line.high = std::max(line.high, cap.high);
        }
      }
      break;
    }
    default:
      return -1;  // convex hulls are not seen
  }
  if (line.Empty()) return -1;
  if (line.low >= 0) return line.low;
  return line.high >= 0 ? line.high : -1;
}

// The distance along the ray p + t d (d unit, the field's frame) to a height field's surface,
// -1 where it misses: the first of the grid's triangles (MuJoCo's split) it crosses, from
// above or from below, walking the cells under the ray's path within the grid's box; a ray
// that enters that box through its sides or base below the surface meets the solid there.
Real RayHeightFieldDistance(const ShapeDesc& shape, Vec3 p, Vec3 d) {
  const HeightFieldDesc& f = shape.heightfield;
  const Real sx = shape.size.x, sy = shape.size.y, base = shape.size.z;
  // the ray's stretch over the grid and above its base, [-sx, sx] x [-sy, sy] x [-base, inf)
  // (no top: finding the highest point would read every height for each ray; the walk below
  // ends at the grid's edge anyway)
  Interval box;
  box.low = -std::numeric_limits<Real>::infinity();
  InsideSlab(p.x, d.x, sx, &box);
  InsideSlab(p.y, d.y, sy, &box);
  if (d.z != 0) {
    const Real at_base = (-base - p.z) / d.z;
    box.Meet(d.z > 0 ? at_base : -std::numeric_limits<Real>::infinity(),
             d.z > 0 ? std::numeric_limits<Real>::infinity() : at_base);
  } else if (p.z < -base) {
    return -1;
  }
  if (box.Empty() || box.high < 0) return -1;
  const Real t0 = std::max<Real>(box.low, 0), t1 = box.high;
  const Real dx = 2 * sx / (f.cols - 1), dy = 2 * sy / (f.rows - 1);
  const auto height = [&](int r, int c) { return f.heights[r * f.cols + c]; };
  const auto corner = [&](int r, int c) { return Vec3{-sx + dx * c, -sy + dy * r, height(r, c)}; };
  const auto cell_of = [&](Vec3 q, int* r, int* c) {
    *c = std::clamp(static_cast<int>(std::floor((q.x + sx) / dx)), 0, f.cols - 2);
    *r = std::clamp(static_cast<int>(std::floor((q.y + sy) / dy)), 0, f.rows - 2);
  };
  // entering through a side or the base below the surface: the solid's wall
  const Vec3 entry = p + t0 * d;
  if (box.low > 0) {
    int r, c;
    cell_of(entry, &r, &c);
    const Real u = (entry.x + sx) / dx - c, v = (entry.y + sy) / dy - r;
    const Real surface = v >= u ? height(r, c) + v * (height(r + 1, c) - height(r, c)) +
                                      u * (height(r + 1, c + 1) - height(r + 1, c))
                                : height(r, c) + u * (height(r, c + 1) - height(r, c)) +
                                      v * (height(r + 1, c + 1) - height(r, c + 1));
    if (entry.z < surface) return t0;
  }
  // the cells under the path, in order (a 2-D walk), each cell's two triangles
  const auto hit_triangle = [&](Vec3 a, Vec3 b, Vec3 c, Real* t) {
    const Vec3 e1 = b - a, e2 = c - a, h = cross(d, e2);
    const Real det = dot(e1, h);
    if (std::fabs(det) < Real(1e-18)) return false;
    const Vec3 s0 = p - a;
    const Real u = dot(s0, h) / det;
    if (u < 0 || u > 1) return false;
    const Vec3 q = cross(s0, e1);
    const Real v = dot(d, q) / det;
    if (v < 0 || u + v > 1) return false;
    *t = dot(e2, q) / det;
    return *t >= t0 && *t <= t1;
  };
  int r, c;
  cell_of(entry, &r, &c);
  const int step_c = d.x > 0 ? 1 : -1, step_r = d.y > 0 ? 1 : -1;
  const Real inf = std::numeric_limits<Real>::infinity();
  // ray parameters at which the path crosses the next column and row lines
  Real next_c = d.x != 0 ? ((-sx + dx * (c + (step_c > 0 ? 1 : 0))) - p.x) / d.x : inf;
  Real next_r = d.y != 0 ? ((-sy + dy * (r + (step_r > 0 ? 1 : 0))) - p.y) / d.y : inf;
  const Real delta_c = d.x != 0 ? dx / std::fabs(d.x) : inf;
  const Real delta_r = d.y != 0 ? dy / std::fabs(d.y) : inf;
  for (int guard = 0; guard < f.rows + f.cols + 2; ++guard) {
    Real best = inf, t;
    if (hit_triangle(corner(r, c), corner(r + 1, c + 1), corner(r + 1, c), &t)) best = t;
    if (hit_triangle(corner(r, c), corner(r, c + 1), corner(r + 1, c + 1), &t))
      best = std::min(best, t);
    if (best < inf) return best;
    if (next_c < next_r) {
      if (next_c > t1) break;
      c += step_c;
      next_c += delta_c;
    } else {
      if (next_r > t1) break;
      r += step_r;
      next_r += delta_r;
    }
    if (c < 0 || c > f.cols - 2 || r < 0 || r > f.rows - 2) break;
  }
  return -1;
}

// A rangefinder's reading: the nearest shape along its site's z axis, -1 for none.
Real Rangefinder(const ImportResult::SourceSensor& s, const Model& model, const BodyState& bodies,
                 const std::vector<Real>& mocap_pose, const Pose& site) {
  const Vec3 direction = rotate(site.quat, Vec3{0, 0, 1});
  Real nearest = -1;
  const std::vector<ShapeDesc>& shapes = model.desc().shapes;
  for (size_t k = 0; k < shapes.size(); ++k) {
    if (std::find(s.shapes.begin(), s.shapes.end(), static_cast<int>(k)) != s.shapes.end())
      continue;
    const ShapeDesc& shape = shapes[k];
    absl::StatusOr<Placed> placed = Place(
        {shape.body, shape.pose, shape.body == kWorldBody ? shape.mocap : -1}, bodies, mocap_pose);
    if (!placed.ok()) continue;
    const Vec3 p = rotate_inv(placed->pose.quat, site.pos - placed->pose.pos);
    const Vec3 d = rotate_inv(placed->pose.quat, direction);
    const Real t = shape.type == ShapeType::kHeightField
                       ? RayHeightFieldDistance(shape, p, d)
                       : RayDistance(shape.type, shape.size, p, d);
    if (t >= 0 && (nearest < 0 || t < nearest)) nearest = t;
  }
  return nearest;
}

bool NeedsJoints(Kind kind) {
  switch (kind) {
    case Kind::kJointPos:
    case Kind::kJointVel:
    case Kind::kTendonPos:
    case Kind::kTendonVel:
    case Kind::kActuatorPos:
    case Kind::kActuatorVel:
    case Kind::kBallQuat:
    case Kind::kBallAngVel:
      return true;
    default:
      return false;
  }
}

// Whether a sensor reads a frame of a body (every kind but the file coordinates' sums, the
// actuators' forces and the clock).
bool ReadsFrames(Kind kind) {
  return !NeedsJoints(kind) && kind != Kind::kActuatorFrc && kind != Kind::kClock;
}

// Quaternions and axes keep their values whatever the cutoff (MuJoCo's data types).
bool CutsOff(Kind kind) {
  return kind != Kind::kFrameQuat && kind != Kind::kBallQuat && kind != Kind::kFrameXAxis &&
         kind != Kind::kFrameYAxis && kind != Kind::kFrameZAxis;
}

}  // namespace

absl::StatusOr<std::vector<Real>> FileSensorData(const ImportResult& imported, const Model& model,
                                                 const SensorInputs& in) {
  std::vector<Real> data(imported.sensor_data_count, 0);
  // Frames move as the joints place them. A step's end velocities meet each joint's velocity
  // constraint at the step's start configuration, so at its end a body's velocity relative to
  // its parent has an O(h |omega|^2) part across the joint's axes (0.013 rad/s for an arm
  // swinging at 3 rad/s with h = 2 ms); MuJoCo's state has none, and neither have these.
  const bool reads_frames = std::any_of(
      imported.source_sensors.begin(), imported.source_sensors.end(),
      [](const ImportResult::SourceSensor& s) { return ReadsFrames(s.kind) || s.tendon >= 0; });
  BodyState placed;
  if (reads_frames && model.joint_count() > 0) {
    absl::StatusOr<BodyState> from_joints =
        BodyStateFromJoints(model, in.joints, in.bodies, in.mocap_pose);
    if (!from_joints.ok()) return from_joints.status();
    placed = *std::move(from_joints);
  }
  const BodyState& bodies = placed.pose.empty() ? in.bodies : placed;
  // the file's coordinates, once, where a sensor reads them
  FileCoordinates file;
  if (std::any_of(imported.source_sensors.begin(), imported.source_sensors.end(),
                  [](const ImportResult::SourceSensor& s) { return NeedsJoints(s.kind); })) {
    absl::StatusOr<FileCoordinates> coordinates =
        FileJointCoordinates(imported, model, in.bodies, in.joints);
    if (!coordinates.ok()) return coordinates.status();
    file = *std::move(coordinates);
  }
  for (const ImportResult::SourceSensor& s : imported.source_sensors) {
    if (s.offset < 0 || s.offset + s.dim > imported.sensor_data_count) {
      return absl::InvalidArgumentError(
          absl::StrCat("sensor '", s.name, "': its values lie outside the sensor data"));
    }
    Real* out = &data[s.offset];
    auto put3 = [&](Vec3 v) { out[0] = v.x, out[1] = v.y, out[2] = v.z; };
    // sum of coef times each joint's coordinate (position) or rate
    auto coordinate_sum = [&](bool rate) -> absl::StatusOr<Real> {
      Real sum = 0;
      for (size_t k = 0; k < s.joints.size(); ++k) {
        const int j = s.joints[k];
        const std::vector<int>& offsets = rate ? file.velocity_offset : file.position_offset;
        const std::vector<Real>& values = rate ? file.velocity : file.position;
        if (j < 0 || j >= static_cast<int>(offsets.size()) ||
            offsets[j] >= static_cast<int>(values.size())) {
          return absl::InvalidArgumentError(
              absl::StrCat("sensor '", s.name, "': file joint ", j, " has no coordinate"));
        }
        sum += s.coefs[k] * values[offsets[j]];
      }
      return sum;
    };
    switch (s.kind) {
      case Kind::kJointPos:
      case Kind::kTendonPos:
      case Kind::kActuatorPos:
      case Kind::kJointVel:
      case Kind::kTendonVel:
      case Kind::kActuatorVel: {
        const bool rate =
            s.kind == Kind::kJointVel || s.kind == Kind::kTendonVel || s.kind == Kind::kActuatorVel;
        if (s.tendon >= 0) {
          absl::StatusOr<std::pair<Real, Real>> path = SpatialTendonState(model, s.tendon, bodies);
          if (!path.ok()) return path.status();
          out[0] = s.scale * (rate ? path->second : path->first);
          break;
        }
        absl::StatusOr<Real> value = coordinate_sum(rate);
        if (!value.ok()) return value.status();
        out[0] = *value;
        break;
      }
      case Kind::kBallQuat:
      case Kind::kBallAngVel: {
        const bool quat = s.kind == Kind::kBallQuat;
        const int j = s.joints.empty() ? -1 : s.joints[0];
        const std::vector<int>& offsets = quat ? file.position_offset : file.velocity_offset;
        const std::vector<Real>& values = quat ? file.position : file.velocity;
        if (j < 0 || j >= static_cast<int>(offsets.size()) ||
            offsets[j] + s.dim > static_cast<int>(values.size())) {
          return absl::InvalidArgumentError(
              absl::StrCat("sensor '", s.name, "': file joint ", j, " has no ball coordinates"));
        }
        std::copy_n(&values[offsets[j]], s.dim, out);
        break;
      }
      case Kind::kActuatorFrc: {
        if (s.actuator < 0 || s.actuator >= static_cast<int>(in.actuator_force.size())) {
          return absl::InvalidArgumentError(absl::StrCat(
              "sensor '", s.name, "': actuator ", s.actuator, " has no force in the inputs"));
        }
        out[0] = s.scale * in.actuator_force[s.actuator];
        break;
      }
      case Kind::kClock:
        out[0] = in.time;
        break;
      case Kind::kSubtreeCom:
      case Kind::kSubtreeLinVel:
      case Kind::kSubtreeAngMom: {
        if (s.mass.size() != s.masses.size() ||
            (s.kind == Kind::kSubtreeAngMom && s.inertia.size() != 9 * s.masses.size())) {
          return absl::InvalidArgumentError(
              absl::StrCat("sensor '", s.name, "': its subtree's masses are incomplete"));
        }
        Real mass = 0;
        Vec3 moment, momentum;
        std::vector<Placed> points;
        for (size_t k = 0; k < s.masses.size(); ++k) {
          absl::StatusOr<Placed> point = Place(s.masses[k], bodies, in.mocap_pose);
          if (!point.ok()) return point.status();
          mass += s.mass[k];
          moment += s.mass[k] * point->pose.pos;
          momentum += s.mass[k] * point->linear;
          points.push_back(*point);
        }
        const Real inv = mass > 0 ? 1 / mass : 0;
        if (s.kind != Kind::kSubtreeAngMom) {
          put3(inv * (s.kind == Kind::kSubtreeCom ? moment : momentum));
          break;
        }
        // about the subtree's centre C moving at V: the sum of I w + m (c - C) x (v - V)
        const Vec3 centre = inv * moment, velocity = inv * momentum;
        Vec3 angular;
        for (size_t k = 0; k < points.size(); ++k) {
          const Mat33 rotation = quat_to_mat(points[k].pose.quat);
          const Mat33 inertia = rotation * load33(&s.inertia[9 * k]) * transpose(rotation);
          angular += inertia * points[k].angular +
                     s.mass[k] * cross(points[k].pose.pos - centre, points[k].linear - velocity);
        }
        put3(angular);
        break;
      }
      default: {
        // sensors of a frame: a site's, or a frame sensor's object
        absl::StatusOr<Placed> object = Place(s.object, bodies, in.mocap_pose);
        if (!object.ok()) return object.status();
        Placed reference;
        if (s.has_reference) {
          absl::StatusOr<Placed> placed = Place(s.reference, bodies, in.mocap_pose);
          if (!placed.ok()) return placed.status();
          reference = *placed;
        }
        const Quat q = object->pose.quat, q_ref = reference.pose.quat;
        switch (s.kind) {
          case Kind::kTouch:
            out[0] = Touch(s, *object, in);
            break;
          case Kind::kRangefinder:
            out[0] = Rangefinder(s, model, bodies, in.mocap_pose, object->pose);
            break;
          case Kind::kVelocimeter:
            put3(rotate_inv(q, object->linear));
            break;
          case Kind::kAccelerometer:
          case Kind::kFrameLinAcc:
          case Kind::kFrameAngAcc: {
            // the frame's acceleration from its body's: a + alpha x r + w x (w x r), r from
            // the body's origin; a static frame's is none
            Vec3 acceleration, alpha;
            const int b = s.object.body;
            if (b != kWorldBody) {
              if (6 * static_cast<size_t>(b + 1) > in.body_acceleration.size()) {
                return absl::InvalidArgumentError(absl::StrCat(
                    "sensor '", s.name, "': body ", b, " has no acceleration in the inputs"));
              }
              const Vec3 r = object->pose.pos - load3(&bodies.pose[7 * b]);
              alpha = load3(&in.body_acceleration[6 * b + 3]);
              acceleration = load3(&in.body_acceleration[6 * b]) + cross(alpha, r) +
                             cross(object->angular, cross(object->angular, r));
            }
            // less gravity, as MuJoCo's accelerations (whose world accelerates upwards at g)
            if (s.kind == Kind::kAccelerometer) put3(rotate_inv(q, acceleration - in.gravity));
            if (s.kind == Kind::kFrameLinAcc) put3(acceleration - in.gravity);
            if (s.kind == Kind::kFrameAngAcc) put3(alpha);
            break;
          }
          case Kind::kGyro:
            put3(rotate_inv(q, object->angular));
            break;
          case Kind::kForce:
          case Kind::kTorque: {
            absl::StatusOr<Vec6> wrench = SubtreeWrench(s, model, bodies, in, object->pose.pos);
            if (!wrench.ok()) return wrench.status();
            put3(rotate_inv(q, s.kind == Kind::kForce ? wrench->lin : wrench->ang));
            break;
          }
          case Kind::kMagnetometer:
            put3(rotate_inv(q, s.field));
            break;
          case Kind::kFramePos:
            put3(rotate_inv(q_ref, object->pose.pos - reference.pose.pos));
            break;
          case Kind::kFrameQuat: {
            const Quat relative = conjugate(q_ref) * q;
            out[0] = relative.w, out[1] = relative.x, out[2] = relative.y, out[3] = relative.z;
            break;
          }
          case Kind::kFrameXAxis:
            put3(rotate_inv(q_ref, rotate(q, Vec3{1, 0, 0})));
            break;
          case Kind::kFrameYAxis:
            put3(rotate_inv(q_ref, rotate(q, Vec3{0, 1, 0})));
            break;
          case Kind::kFrameZAxis:
            put3(rotate_inv(q_ref, rotate(q, Vec3{0, 0, 1})));
            break;
          case Kind::kFrameLinVel:
            // relative to a reference: as its frame's observer sees it, turning with it
            put3(rotate_inv(q_ref,
                            object->linear - reference.linear -
                                cross(reference.angular, object->pose.pos - reference.pose.pos)));
            break;
          case Kind::kFrameAngVel:
            put3(rotate_inv(q_ref, object->angular - reference.angular));
            break;
          default:
            return absl::InternalError(absl::StrCat("sensor '", s.name, "': unknown kind"));
        }
      }
    }
    if (s.cutoff > 0 && CutsOff(s.kind)) {
      for (int k = 0; k < s.dim; ++k) {
        out[k] = s.kind == Kind::kTouch ? std::min(out[k], s.cutoff)
                                        : std::clamp(out[k], -s.cutoff, s.cutoff);
      }
    }
  }
  return data;
}

absl::StatusOr<std::vector<Real>> ReadFileSensors(const ImportResult& imported, const Model& model,
                                                  const Simulator& simulator, WorldId world) {
  SensorInputs in;
  bool forces = false, contacts = false, time = false, accelerations = false, external = false;
  for (const ImportResult::SourceSensor& s : imported.source_sensors) {
    const bool wrench = s.kind == Kind::kForce || s.kind == Kind::kTorque;
    accelerations |= s.kind == Kind::kAccelerometer || s.kind == Kind::kFrameLinAcc ||
                     s.kind == Kind::kFrameAngAcc || wrench;
    external |= wrench;
    forces |= s.kind == Kind::kActuatorFrc;
    contacts |= s.kind == Kind::kTouch || wrench;
    time |= s.kind == Kind::kClock;
  }
  // each input a world's getter gives, where a sensor reads it
  auto take = [](auto value, auto* out) -> absl::Status {
    if (!value.ok()) return value.status();
    *out = *std::move(value);
    return absl::OkStatus();
  };
  AXION_IO_RETURN_IF_ERROR(take(simulator.GetBodyState(world), &in.bodies));
  if (model.joint_count() > 0)
    AXION_IO_RETURN_IF_ERROR(take(simulator.GetJointState(world), &in.joints));
  if (model.mocap_count() > 0)
    AXION_IO_RETURN_IF_ERROR(take(simulator.GetMocapPoses(world), &in.mocap_pose));
  if (forces)
    AXION_IO_RETURN_IF_ERROR(take(simulator.GetActuatorForces(world), &in.actuator_force));
  if (contacts) AXION_IO_RETURN_IF_ERROR(take(simulator.GetContacts(world), &in.contacts));
  if (external)
    AXION_IO_RETURN_IF_ERROR(take(simulator.GetExternalForces(world), &in.external_force));
  if (accelerations) {
    AXION_IO_RETURN_IF_ERROR(take(simulator.GetBodyAccelerations(world), &in.body_acceleration));
    absl::StatusOr<SolverOptions> options = simulator.GetOptions(world);
    if (!options.ok()) return options.status();
    in.gravity = options->gravity;
  }
  if (time) {
    absl::StatusOr<WorldStats> stats = simulator.GetStats(world);
    if (!stats.ok()) return stats.status();
    in.time = stats->time;
  }
  return FileSensorData(imported, model, in);
}

}  // namespace axion
