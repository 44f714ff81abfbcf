#include "server/scene.h"

#include <cctype>
#include <cmath>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"

#if defined(AXION_SERVER_HAS_IO)
#include "axion/urdf.h"
#endif

namespace axion::server {
namespace {

Vec3 FromProto(const v1::Vec3& v) { return Vec3{v.x(), v.y(), v.z()}; }

void ToProto(const Vec3& v, v1::Vec3* out) {
  out->set_x(v.x);
  out->set_y(v.y);
  out->set_z(v.z);
}

// An unset (all-zero) quaternion is the identity, so an unset pose is the identity transform.
Quat FromProto(const v1::Quat& q) {
  if (q.w() == 0 && q.x() == 0 && q.y() == 0 && q.z() == 0) return Quat{};
  return Quat{q.w(), q.x(), q.y(), q.z()};
}

void ToProto(const Quat& q, v1::Quat* out) {
  out->set_w(q.w);
  out->set_x(q.x);
  out->set_y(q.y);
  out->set_z(q.z);
}

Pose FromProto(const v1::Pose& p) { return Pose{FromProto(p.pos()), FromProto(p.quat())}; }

void ToProto(const Pose& p, v1::Pose* out) {
  ToProto(p.pos, out->mutable_pos());
  ToProto(p.quat, out->mutable_quat());
}

absl::StatusOr<ShapeType> FromProto(v1::ShapeType type, int index) {
  switch (type) {
    case v1::SHAPE_TYPE_PLANE:
      return ShapeType::kPlane;
    case v1::SHAPE_TYPE_SPHERE:
      return ShapeType::kSphere;
    case v1::SHAPE_TYPE_CAPSULE:
      return ShapeType::kCapsule;
    case v1::SHAPE_TYPE_BOX:
      return ShapeType::kBox;
    case v1::SHAPE_TYPE_CYLINDER:
      return ShapeType::kCylinder;
    case v1::SHAPE_TYPE_CONVEX_HULL:
      return ShapeType::kConvexHull;
    case v1::SHAPE_TYPE_HEIGHT_FIELD:
      return ShapeType::kHeightField;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "shapes[", index, "].type: unset or unknown value ", static_cast<int>(type)));
  }
}

v1::ShapeType ToProto(ShapeType type) {
  switch (type) {
    case ShapeType::kPlane:
      return v1::SHAPE_TYPE_PLANE;
    case ShapeType::kSphere:
      return v1::SHAPE_TYPE_SPHERE;
    case ShapeType::kCapsule:
      return v1::SHAPE_TYPE_CAPSULE;
    case ShapeType::kBox:
      return v1::SHAPE_TYPE_BOX;
    case ShapeType::kCylinder:
      return v1::SHAPE_TYPE_CYLINDER;
    case ShapeType::kConvexHull:
      return v1::SHAPE_TYPE_CONVEX_HULL;
    case ShapeType::kHeightField:
      return v1::SHAPE_TYPE_HEIGHT_FIELD;
  }
  return v1::SHAPE_TYPE_UNSPECIFIED;
}

absl::StatusOr<JointType> FromProto(v1::JointType type, int index) {
  switch (type) {
    case v1::JOINT_TYPE_REVOLUTE:
      return JointType::kRevolute;
    case v1::JOINT_TYPE_PRISMATIC:
      return JointType::kPrismatic;
    case v1::JOINT_TYPE_BALL:
      return JointType::kBall;
    case v1::JOINT_TYPE_FIXED:
      return JointType::kFixed;
    case v1::JOINT_TYPE_GENERIC:
      return JointType::kGeneric;
    case v1::JOINT_TYPE_UNIVERSAL:
      return JointType::kUniversal;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "joints[", index, "].type: unset or unknown value ", static_cast<int>(type)));
  }
}

v1::JointType ToProto(JointType type) {
  switch (type) {
    case JointType::kRevolute:
      return v1::JOINT_TYPE_REVOLUTE;
    case JointType::kPrismatic:
      return v1::JOINT_TYPE_PRISMATIC;
    case JointType::kBall:
      return v1::JOINT_TYPE_BALL;
    case JointType::kFixed:
      return v1::JOINT_TYPE_FIXED;
    case JointType::kGeneric:
      return v1::JOINT_TYPE_GENERIC;
    case JointType::kUniversal:
      return v1::JOINT_TYPE_UNIVERSAL;
  }
  return v1::JOINT_TYPE_UNSPECIFIED;
}

absl::StatusOr<ActuatorType> FromProto(v1::ActuatorType type, int index) {
  switch (type) {
    case v1::ACTUATOR_TYPE_EFFORT:
      return ActuatorType::kEffort;
    case v1::ACTUATOR_TYPE_POSITION:
      return ActuatorType::kPosition;
    case v1::ACTUATOR_TYPE_VELOCITY:
      return ActuatorType::kVelocity;
    case v1::ACTUATOR_TYPE_MUSCLE:
      return ActuatorType::kMuscle;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "actuators[", index, "].type: unset or unknown value ", static_cast<int>(type)));
  }
}

v1::SourceJointKind ToProto(ImportResult::JointKind kind) {
  switch (kind) {
    case ImportResult::JointKind::kHinge:
      return v1::SOURCE_JOINT_KIND_HINGE;
    case ImportResult::JointKind::kSlide:
      return v1::SOURCE_JOINT_KIND_SLIDE;
    case ImportResult::JointKind::kBall:
      return v1::SOURCE_JOINT_KIND_BALL;
    case ImportResult::JointKind::kFree:
      return v1::SOURCE_JOINT_KIND_FREE;
    case ImportResult::JointKind::kFixed:
      return v1::SOURCE_JOINT_KIND_FIXED;
    case ImportResult::JointKind::kPlanar:
      return v1::SOURCE_JOINT_KIND_PLANAR;
  }
  return v1::SOURCE_JOINT_KIND_UNSPECIFIED;
}

v1::ActuatorType ToProto(ActuatorType type) {
  switch (type) {
    case ActuatorType::kEffort:
      return v1::ACTUATOR_TYPE_EFFORT;
    case ActuatorType::kPosition:
      return v1::ACTUATOR_TYPE_POSITION;
    case ActuatorType::kVelocity:
      return v1::ACTUATOR_TYPE_VELOCITY;
    case ActuatorType::kMuscle:
      return v1::ACTUATOR_TYPE_MUSCLE;
  }
  return v1::ACTUATOR_TYPE_UNSPECIFIED;
}

v1::Formulation ToProto(Formulation f) {
  return f == Formulation::kVelocity ? v1::FORMULATION_VELOCITY : v1::FORMULATION_POSITION;
}

absl::Status ApplyFormulation(v1::Formulation proto, const char* field, Formulation* out) {
  switch (proto) {
    case v1::FORMULATION_UNSPECIFIED:
      return absl::OkStatus();
    case v1::FORMULATION_POSITION:
      *out = Formulation::kPosition;
      return absl::OkStatus();
    case v1::FORMULATION_VELOCITY:
      *out = Formulation::kVelocity;
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("solver_options.", field, ": unknown value ", static_cast<int>(proto)));
  }
}

v1::Preconditioner ToProto(Preconditioner p) {
  return p == Preconditioner::kJacobi ? v1::PRECONDITIONER_JACOBI : v1::PRECONDITIONER_TREE;
}

absl::Status ApplyPreconditioner(v1::Preconditioner proto, Preconditioner* out) {
  switch (proto) {
    case v1::PRECONDITIONER_UNSPECIFIED:
      return absl::OkStatus();
    case v1::PRECONDITIONER_JACOBI:
      *out = Preconditioner::kJacobi;
      return absl::OkStatus();
    case v1::PRECONDITIONER_TREE:
      *out = Preconditioner::kTree;
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("solver_options.preconditioner: unknown value ", static_cast<int>(proto)));
  }
}

v1::FrictionCombine ToProto(FrictionCombine c) {
  return c == FrictionCombine::kMax ? v1::FRICTION_COMBINE_MAX
                                    : v1::FRICTION_COMBINE_GEOMETRIC_MEAN;
}

absl::Status ApplyFrictionCombine(v1::FrictionCombine proto, FrictionCombine* out) {
  switch (proto) {
    case v1::FRICTION_COMBINE_UNSPECIFIED:
      return absl::OkStatus();
    case v1::FRICTION_COMBINE_GEOMETRIC_MEAN:
      *out = FrictionCombine::kGeometricMean;
      return absl::OkStatus();
    case v1::FRICTION_COMBINE_MAX:
      *out = FrictionCombine::kMax;
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("solver_options.friction_combine: unknown value ", static_cast<int>(proto)));
  }
}

absl::StatusOr<BodyDesc> FromProto(const v1::Body& proto, int index) {
  BodyDesc body;
  body.name = proto.name();
  body.mass = proto.mass();
  if (proto.inertia_size() == 3) {
    body.inertia = Mat33{};
    for (int i = 0; i < 3; ++i) body.inertia(i, i) = proto.inertia(i);
  } else if (proto.inertia_size() == 9) {
    for (int i = 0; i < 9; ++i) body.inertia.m[i] = proto.inertia(i);
  } else if (proto.inertia_size() != 0) {
    return absl::InvalidArgumentError(absl::StrCat("bodies[", index, "] '", proto.name(),
                                                   "'.inertia: expected 0, 3 or 9 values, got ",
                                                   proto.inertia_size()));
  }
  body.com = FromProto(proto.com());
  body.pose = FromProto(proto.pose());
  body.linear_velocity = FromProto(proto.linear_velocity());
  body.angular_velocity = FromProto(proto.angular_velocity());
  body.in_fluid = !proto.fluid_exempt();
  return body;
}

absl::StatusOr<ShapeDesc> FromProto(const v1::Shape& proto, int index) {
  ShapeDesc shape;
  shape.name = proto.name();
  shape.body = proto.body();
  absl::StatusOr<ShapeType> type = FromProto(proto.type(), index);
  if (!type.ok()) return type.status();
  shape.type = *type;
  shape.pose = FromProto(proto.pose());
  shape.size = FromProto(proto.size());
  if (proto.vertices_size() % 3 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("shapes[", index, "] '", proto.name(),
                                                   "'.vertices: length ", proto.vertices_size(),
                                                   " is not a multiple of 3"));
  }
  for (int i = 0; i + 2 < proto.vertices_size(); i += 3) {
    shape.vertices.push_back(Vec3{proto.vertices(i), proto.vertices(i + 1), proto.vertices(i + 2)});
  }
  if (proto.has_heightfield()) {
    shape.heightfield.rows = proto.heightfield().rows();
    shape.heightfield.cols = proto.heightfield().cols();
    shape.heightfield.heights.assign(proto.heightfield().heights().begin(),
                                     proto.heightfield().heights().end());
  }
  if (proto.has_material()) {
    if (proto.material().has_friction()) {
      shape.material.friction = proto.material().friction().value();
    }
    if (proto.material().has_restitution()) {
      shape.material.restitution = proto.material().restitution().value();
    }
    if (proto.material().has_torsional_friction()) {
      shape.material.torsional_friction = proto.material().torsional_friction().value();
    }
    if (proto.material().has_rolling_friction()) {
      shape.material.rolling_friction = proto.material().rolling_friction().value();
    }
  }
  if (proto.has_collision_group()) shape.collision_group = proto.collision_group().value();
  if (proto.has_collision_mask()) shape.collision_mask = proto.collision_mask().value();
  if (proto.has_contact_dim()) shape.contact_dim = proto.contact_dim().value();
  if (proto.has_priority()) shape.priority = proto.priority().value();
  if (proto.has_margin()) shape.margin = proto.margin().value();
  if (proto.has_gap()) shape.gap = proto.gap().value();
  if (proto.has_mocap()) shape.mocap = proto.mocap().value();
  return shape;
}

absl::StatusOr<JointDesc> FromProto(const v1::Joint& proto, int index) {
  JointDesc joint;
  joint.name = proto.name();
  absl::StatusOr<JointType> type = FromProto(proto.type(), index);
  if (!type.ok()) return type.status();
  joint.type = *type;
  joint.parent = proto.parent();
  if (proto.has_parent_mocap()) joint.parent_mocap = proto.parent_mocap().value();
  joint.child = proto.child();
  joint.child_frame = FromProto(proto.child_frame());
  if (proto.axis_mode_size() != 0 && proto.axis_mode_size() != 6) {
    return absl::InvalidArgumentError(absl::StrCat("joints[", index, "] '", proto.name(),
                                                   "'.axis_mode: expected 0 or 6 values, got ",
                                                   proto.axis_mode_size()));
  }
  for (int i = 0; i < proto.axis_mode_size(); ++i) {
    const int mode = proto.axis_mode(i);
    if (mode < v1::AXIS_MODE_LOCKED || mode > v1::AXIS_MODE_LIMITED) {
      return absl::InvalidArgumentError(absl::StrCat("joints[", index, "] '", proto.name(),
                                                     "'.axis_mode[", i, "]: unknown value ", mode));
    }
    joint.axis_mode[i] = static_cast<AxisMode>(mode);
  }
  joint.limited = proto.limited();
  joint.lower.assign(proto.lower().begin(), proto.lower().end());
  joint.upper.assign(proto.upper().begin(), proto.upper().end());
  joint.drive.stiffness = proto.drive().stiffness();
  joint.drive.damping = proto.drive().damping();
  joint.drive.target_position = proto.drive().target_position();
  joint.drive.target_velocity = proto.drive().target_velocity();
  joint.reference = proto.reference();
  joint.compliance = proto.compliance();
  joint.armature = proto.armature();
  joint.friction_loss = proto.friction_loss();
  joint.collide_connected = proto.collide_connected();
  if (proto.has_second_axis()) joint.second_axis = FromProto(proto.second_axis());
  joint.second_anchor = FromProto(proto.second_anchor());
  return joint;
}

absl::StatusOr<ActuatorDesc> FromProto(const v1::Actuator& proto, int index) {
  ActuatorDesc actuator;
  actuator.name = proto.name();
  absl::StatusOr<ActuatorType> type = FromProto(proto.type(), index);
  if (!type.ok()) return type.status();
  actuator.type = *type;
  actuator.joint = proto.joint();
  actuator.dof = proto.dof();
  if (proto.has_gear()) actuator.gear = proto.gear().value();
  actuator.ctrl_limited = proto.ctrl_limited();
  actuator.ctrl_min = proto.ctrl_min();
  actuator.ctrl_max = proto.ctrl_max();
  actuator.kp = proto.kp();
  actuator.kv = proto.kv();
  actuator.force_limited = proto.force_limited();
  actuator.force_min = proto.force_min();
  actuator.force_max = proto.force_max();
  actuator.tendon = proto.has_tendon() ? proto.tendon().value() : -1;
  if (proto.has_target_scale()) actuator.target_scale = proto.target_scale().value();
  if (proto.has_site()) {
    const v1::ActuatorSite& site = proto.site();
    if (site.body() < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("actuators[", index, "].site.body: must be a body index, got ", site.body(),
                       " (a site on the world moves nothing)"));
    actuator.site_body = site.body();
    actuator.site_pose = FromProto(site.pose());
    if (site.wrench_size() != 0) {
      if (site.wrench_size() != 6)
        return absl::InvalidArgumentError(absl::StrCat("actuators[", index, "].site.wrench: has ",
                                                       site.wrench_size(), " values, not 6"));
      for (int k = 0; k < 6; ++k) actuator.site_wrench[k] = site.wrench(k);
    }
    actuator.site_force_world = site.world_force();
    if (site.has_reaction_body()) actuator.site_reaction_body = site.reaction_body().value();
  }
  if (proto.has_adhesion_body()) {
    if (proto.adhesion_body().value() < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("actuators[", index, "].adhesion_body: must be a body index, got ",
                       proto.adhesion_body().value(), " (the world cannot be pulled)"));
    actuator.adhesion_body = proto.adhesion_body().value();
  }
  switch (proto.dynamics()) {
    case v1::ACTUATOR_DYNAMICS_NONE:
      break;
    case v1::ACTUATOR_DYNAMICS_INTEGRATOR:
      actuator.dynamics = ActuatorDynamics::kIntegrator;
      break;
    case v1::ACTUATOR_DYNAMICS_FILTER:
      actuator.dynamics = ActuatorDynamics::kFilter;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "actuators[", index, "].dynamics: unknown value ", static_cast<int>(proto.dynamics())));
  }
  if (proto.has_dynamics_time_constant())
    actuator.dynamics_time_constant = proto.dynamics_time_constant().value();
  actuator.activation_limited = proto.activation_limited();
  actuator.activation_min = proto.activation_min();
  actuator.activation_max = proto.activation_max();
  if (proto.has_muscle()) {
    // unset fields keep MuscleDesc's defaults (MuJoCo's)
    const v1::ActuatorMuscle& m = proto.muscle();
    MuscleDesc& muscle = actuator.muscle;
    auto take = [](const google::protobuf::DoubleValue& value, bool has, Real* out) {
      if (has) *out = value.value();
    };
    take(m.time_activation(), m.has_time_activation(), &muscle.time_activation);
    take(m.time_deactivation(), m.has_time_deactivation(), &muscle.time_deactivation);
    take(m.range_low(), m.has_range_low(), &muscle.range[0]);
    take(m.range_high(), m.has_range_high(), &muscle.range[1]);
    take(m.length_min(), m.has_length_min(), &muscle.length_min);
    take(m.length_max(), m.has_length_max(), &muscle.length_max);
    take(m.velocity_max(), m.has_velocity_max(), &muscle.velocity_max);
    take(m.passive_force(), m.has_passive_force(), &muscle.passive_force);
    take(m.velocity_force_max(), m.has_velocity_force_max(), &muscle.velocity_force_max);
    muscle.force = m.force();
    muscle.length_range = {m.length_range_low(), m.length_range_high()};
  }
  return actuator;
}

// MJCF and URDF text may name other files; a server without an asset directory has no place it
// is willing to read them from, so such scenes are refused before the importer opens anything.
// Any attribute spelled like a file reference counts, wherever it appears.
absl::Status CheckNoFileReferences(const std::string& xml, const char* field) {
  static constexpr std::string_view kFileAttributes[] = {"file", "filename", "meshdir",
                                                         "texturedir", "assetdir"};
  auto is_name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == ':';
  };
  for (std::string_view attribute : kFileAttributes) {
    for (size_t pos = xml.find(attribute); pos != std::string::npos;
         pos = xml.find(attribute, pos + 1)) {
      if (pos > 0 && is_name_char(xml[pos - 1])) continue;
      size_t end = pos + attribute.size();
      while (end < xml.size() && std::isspace(static_cast<unsigned char>(xml[end]))) ++end;
      if (end < xml.size() && xml[end] == '=') {
        return absl::InvalidArgumentError(
            absl::StrCat("scene.", field, ": attribute '", std::string(attribute),
                         "' references a file, but the server has no --asset_dir"));
      }
    }
  }
  return absl::OkStatus();
}

// Sensor frames and kinds between the engine's ImportResult and the proto (SensorType is
// SensorKind's order, from 1).
void ToProto(const ImportResult::SensorFrame& frame, v1::SensorFrame* out) {
  out->set_body(frame.body);
  ToProto(frame.pose, out->mutable_pose());
  if (frame.mocap >= 0) out->mutable_mocap()->set_value(frame.mocap);
}
ImportResult::SensorFrame FromProto(const v1::SensorFrame& frame) {
  return {frame.body(), FromProto(frame.pose()), frame.has_mocap() ? frame.mocap().value() : -1};
}
constexpr int kSensorKinds = static_cast<int>(ImportResult::SensorKind::kRangefinder) + 1;
static_assert(v1::SensorType_MAX == kSensorKinds, "SensorType follows SensorKind");
static_assert(v1::ACTUATOR_DYNAMICS_FILTER == static_cast<int>(ActuatorDynamics::kFilter) &&
                  v1::ActuatorDynamics_MAX == v1::ACTUATOR_DYNAMICS_FILTER,
              "ActuatorDynamics follows axion::ActuatorDynamics");
static_assert(v1::SensorZone_MAX == static_cast<int>(ImportResult::ZoneShape::kBox),
              "SensorZone follows ZoneShape");

void SensorsToProto(const ImportResult& file, v1::SourceMap* source) {
  for (const ImportResult::SourceSensor& sensor : file.source_sensors) {
    v1::SourceSensor* out = source->add_sensors();
    out->set_name(sensor.name);
    out->set_type(static_cast<v1::SensorType>(static_cast<int>(sensor.kind) + 1));
    out->set_offset(sensor.offset);
    out->set_dim(sensor.dim);
    ToProto(sensor.object, out->mutable_object());
    if (sensor.has_reference) ToProto(sensor.reference, out->mutable_reference());
    for (int j : sensor.joints) out->add_joints(j);
    for (Real c : sensor.coefs) out->add_coefs(c);
    out->set_actuator(sensor.actuator);
    out->set_scale(sensor.scale);
    for (const ImportResult::SensorFrame& m : sensor.masses) ToProto(m, out->add_masses());
    for (Real m : sensor.mass) out->add_mass(m);
    for (Real f : {sensor.field.x, sensor.field.y, sensor.field.z}) out->add_field(f);
    out->set_zone(static_cast<v1::SensorZone>(sensor.zone));
    for (Real z : {sensor.zone_size.x, sensor.zone_size.y, sensor.zone_size.z})
      out->add_zone_size(z);
    out->set_cutoff(sensor.cutoff);
    for (int b : sensor.bodies) out->add_bodies(b);
    for (Real i : sensor.inertia) out->add_inertia(i);
    for (int k : sensor.shapes) out->add_shapes(k);
    if (sensor.tendon >= 0) out->mutable_tendon()->set_value(sensor.tendon);
  }
}

// A stored source map's sensors; inconsistent ones (not written by this server) are refused.
absl::Status SensorsFromProto(const v1::SourceMap& source, ImportResult* file) {
  int count = 0;
  for (int i = 0; i < source.sensors_size(); ++i) {
    const v1::SourceSensor& in = source.sensors(i);
    auto bad = [&](const std::string& what) {
      return absl::FailedPreconditionError(
          absl::StrCat("its stored source map's sensor ", i, " '", in.name(), "' ", what));
    };
    if (in.type() <= v1::SENSOR_TYPE_UNSPECIFIED || in.type() > kSensorKinds)
      return bad("has no type");
    if (in.offset() != count || in.dim() < 1 || in.dim() > 4) return bad("has a wrong offset");
    if (in.joints_size() != in.coefs_size() || in.masses_size() != in.mass_size() ||
        in.field_size() != 3 || in.zone_size_size() != 3)
      return bad("is incomplete");
    ImportResult::SourceSensor sensor;
    sensor.name = in.name();
    sensor.kind = static_cast<ImportResult::SensorKind>(in.type() - 1);
    sensor.offset = in.offset();
    sensor.dim = in.dim();
    sensor.object = FromProto(in.object());
    sensor.has_reference = in.has_reference();
    if (in.has_reference()) sensor.reference = FromProto(in.reference());
    sensor.joints.assign(in.joints().begin(), in.joints().end());
    sensor.coefs.assign(in.coefs().begin(), in.coefs().end());
    sensor.actuator = in.actuator();
    sensor.scale = in.scale();
    for (const v1::SensorFrame& m : in.masses()) sensor.masses.push_back(FromProto(m));
    sensor.mass.assign(in.mass().begin(), in.mass().end());
    sensor.field = Vec3{in.field(0), in.field(1), in.field(2)};
    sensor.zone = static_cast<ImportResult::ZoneShape>(in.zone());
    sensor.zone_size = Vec3{in.zone_size(0), in.zone_size(1), in.zone_size(2)};
    sensor.cutoff = in.cutoff();
    sensor.bodies.assign(in.bodies().begin(), in.bodies().end());
    sensor.inertia.assign(in.inertia().begin(), in.inertia().end());
    sensor.shapes.assign(in.shapes().begin(), in.shapes().end());
    sensor.tendon = in.has_tendon() ? in.tendon().value() : -1;
    count += sensor.dim;
    file->source_sensors.push_back(std::move(sensor));
  }
  file->sensor_data_count = count;
  return absl::OkStatus();
}

#if defined(AXION_SERVER_HAS_IO)
absl::StatusOr<ImportedScene> FromImport(absl::StatusOr<ImportResult> result, const char* field,
                                         const v1::Scene& scene) {
  if (!result.ok()) {
    return absl::Status(result.status().code(),
                        absl::StrCat("scene.", field, ": ", result.status().message()));
  }
  if (scene.has_floor_height()) {
    const double height = scene.floor_height().value();
    if (!std::isfinite(height)) {
      return absl::InvalidArgumentError(
          absl::StrCat("scene.floor_height: ", height, " is not finite"));
    }
    result->model.shapes.push_back(FloorShape(static_cast<Real>(height)));
  }
  for (int i = 0; i < scene.static_shapes_size(); ++i) {
    const v1::Shape& proto = scene.static_shapes(i);
    const int index = static_cast<int>(result->model.shapes.size());
    absl::StatusOr<ShapeDesc> shape = FromProto(proto, index);
    if (!shape.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("scene.static_shapes[", i, "]: ", shape.status().message()));
    }
    if (shape->body != kWorldBody) {
      return absl::InvalidArgumentError(absl::StrCat("scene.static_shapes[", i, "] '", proto.name(),
                                                     "': body must be -1 (static), got ",
                                                     shape->body));
    }
    result->model.shapes.push_back(*std::move(shape));
  }
  ImportedScene imported{std::move(result->model), std::move(result->warnings), {}};
  for (const ImportResult::SourceBody& body : result->source_bodies) {
    v1::SourceBody* out = imported.source.add_bodies();
    out->set_name(body.name);
    out->set_body(body.body);
    ToProto(body.offset, out->mutable_offset());
    if (body.mocap >= 0) out->mutable_mocap()->set_value(body.mocap);
  }
  for (const ImportResult::SourceBody& site : result->source_sites) {
    v1::SourceBody* out = imported.source.add_sites();
    out->set_name(site.name);
    out->set_body(site.body);
    ToProto(site.offset, out->mutable_offset());
    if (site.mocap >= 0) out->mutable_mocap()->set_value(site.mocap);
  }
  SensorsToProto(*result, &imported.source);
  for (const ImportResult::SourceJoint& joint : result->source_joints) {
    v1::SourceJoint* out = imported.source.add_joints();
    out->set_name(joint.name);
    out->set_joint(joint.joint);
    out->set_dof(joint.dof);
    out->set_kind(ToProto(joint.kind));
    out->set_file_body(joint.file_body);
  }
  return imported;
}
#endif

// Where each file joint's coordinates lie: those of the model's initial state (every state's).
absl::StatusOr<FileCoordinates> FileLayoutOf(const ImportResult& file, const Model& model) {
#if defined(AXION_SERVER_HAS_IO)
  return InitialFileCoordinates(file, model);
#else
  (void)file, (void)model;
  return absl::UnimplementedError(
      "file coordinates: this server was built without the axion_io importers");
#endif
}

}  // namespace

absl::StatusOr<ModelDesc> ModelDescFromProto(const v1::ModelDescription& proto) {
  ModelDesc desc;
  desc.name = proto.name();
  for (int i = 0; i < proto.bodies_size(); ++i) {
    absl::StatusOr<BodyDesc> body = FromProto(proto.bodies(i), i);
    if (!body.ok()) return body.status();
    desc.bodies.push_back(std::move(*body));
  }
  for (int i = 0; i < proto.shapes_size(); ++i) {
    absl::StatusOr<ShapeDesc> shape = FromProto(proto.shapes(i), i);
    if (!shape.ok()) return shape.status();
    desc.shapes.push_back(std::move(*shape));
  }
  for (int i = 0; i < proto.joints_size(); ++i) {
    absl::StatusOr<JointDesc> joint = FromProto(proto.joints(i), i);
    if (!joint.ok()) return joint.status();
    desc.joints.push_back(std::move(*joint));
  }
  for (int i = 0; i < proto.actuators_size(); ++i) {
    absl::StatusOr<ActuatorDesc> actuator = FromProto(proto.actuators(i), i);
    if (!actuator.ok()) return actuator.status();
    desc.actuators.push_back(std::move(*actuator));
  }
  for (int i = 0; i < proto.couplings_size(); ++i) {
    const v1::JointCoupling& c = proto.couplings(i);
    if (c.polynomial_size() > 5)
      return absl::InvalidArgumentError(absl::StrCat("coupling ", i, " ('", c.name(),
                                                     "'): polynomial has ", c.polynomial_size(),
                                                     " coefficients, at most 5"));
    JointCouplingDesc coupling;
    coupling.name = c.name();
    coupling.joint = c.joint();
    coupling.dof = c.dof();
    coupling.leader_joint = c.has_leader_joint() ? c.leader_joint().value() : -1;
    coupling.leader_dof = c.leader_dof();
    if (c.polynomial_size() > 0) {
      coupling.polynomial = {0, 0, 0, 0, 0};
      for (int k = 0; k < c.polynomial_size(); ++k) coupling.polynomial[k] = c.polynomial(k);
    }
    coupling.compliance = c.compliance();
    desc.couplings.push_back(coupling);
  }
  for (const v1::Tendon& t : proto.tendons()) {
    TendonDesc tendon;
    tendon.name = t.name();
    for (const v1::TendonJoint& j : t.joints())
      tendon.joints.push_back({j.joint(), j.dof(), j.coef()});
    for (const v1::TendonPathElement& e : t.path()) {
      TendonPathDesc point;
      // (an unknown kind stays out of range: Model::Compile names it)
      point.kind = static_cast<TendonPathDesc::Kind>(e.kind());
      point.body = e.body();
      point.pose = FromProto(e.pose());
      point.radius = e.radius();
      point.divisor = e.kind() == v1::TENDON_PATH_PULLEY ? e.divisor() : 1;
      point.rod_length = e.rod_length();
      point.has_side = e.has_side();
      if (e.has_side()) {
        point.side_body = e.side().body();
        point.side_pos = FromProto(e.side().pos());
      }
      tendon.path.push_back(point);
    }
    tendon.limited = t.limited();
    tendon.lower = t.lower();
    tendon.upper = t.upper();
    tendon.stiffness = t.stiffness();
    tendon.damping = t.damping();
    if (t.has_spring_length()) tendon.spring_length = t.spring_length().value();
    tendon.friction_loss = t.friction_loss();
    tendon.hold = t.hold();
    tendon.hold_offset = t.hold_offset();
    tendon.hold_compliance = t.hold_compliance();
    tendon.hold_damping = t.hold_damping();
    desc.tendons.push_back(std::move(tendon));
  }
  for (const v1::ContactPair& p : proto.contact_pairs()) {
    ContactPairDesc pair;
    pair.name = p.name();
    pair.shape_a = p.shape_a();
    pair.shape_b = p.shape_b();
    if (p.has_friction()) pair.friction = p.friction().value();
    if (p.contact_dim() != 0) pair.contact_dim = p.contact_dim();
    pair.torsional_friction = p.torsional_friction();
    pair.rolling_friction = p.rolling_friction();
    pair.margin = p.margin();
    pair.gap = p.gap();
    desc.contact_pairs.push_back(pair);
  }
  for (const v1::BodyPair& pair : proto.exclude_body_pairs())
    desc.exclude_body_pairs.push_back({pair.body_a(), pair.body_b()});
  for (const v1::Keyframe& k : proto.keyframes()) {
    KeyframeDesc key;
    key.name = k.name();
    key.time = k.time();
    key.body_pose.assign(k.body_pose().begin(), k.body_pose().end());
    key.body_velocity.assign(k.body_velocity().begin(), k.body_velocity().end());
    key.controls.assign(k.controls().begin(), k.controls().end());
    key.activations.assign(k.activations().begin(), k.activations().end());
    key.mocap_pose.assign(k.mocap_pose().begin(), k.mocap_pose().end());
    desc.keyframes.push_back(std::move(key));
  }
  for (const v1::MocapBody& m : proto.mocap_bodies())
    desc.mocap_bodies.push_back({m.name(), FromProto(m.pose())});
  absl::Status options = ApplySolverOverrides(proto.options(), &desc.options);
  if (!options.ok()) return options;
  if (proto.has_contact_capacity()) desc.contact_capacity = proto.contact_capacity().value();
  if (proto.has_pair_capacity()) desc.pair_capacity = proto.pair_capacity().value();
  return desc;
}

void ModelDescToProto(const ModelDesc& desc, v1::ModelDescription* proto) {
  proto->Clear();
  proto->set_name(desc.name);
  for (const BodyDesc& body : desc.bodies) {
    v1::Body* out = proto->add_bodies();
    out->set_name(body.name);
    out->set_mass(body.mass);
    for (Real v : body.inertia.m) out->add_inertia(v);
    ToProto(body.com, out->mutable_com());
    ToProto(body.pose, out->mutable_pose());
    ToProto(body.linear_velocity, out->mutable_linear_velocity());
    ToProto(body.angular_velocity, out->mutable_angular_velocity());
    out->set_fluid_exempt(!body.in_fluid);
  }
  for (const ShapeDesc& shape : desc.shapes) {
    v1::Shape* out = proto->add_shapes();
    out->set_name(shape.name);
    out->set_body(shape.body);
    out->set_type(ToProto(shape.type));
    ToProto(shape.pose, out->mutable_pose());
    ToProto(shape.size, out->mutable_size());
    for (const Vec3& v : shape.vertices) {
      out->add_vertices(v.x);
      out->add_vertices(v.y);
      out->add_vertices(v.z);
    }
    if (shape.type == ShapeType::kHeightField) {
      v1::HeightField* field = out->mutable_heightfield();
      field->set_rows(shape.heightfield.rows);
      field->set_cols(shape.heightfield.cols);
      field->mutable_heights()->Add(shape.heightfield.heights.begin(),
                                    shape.heightfield.heights.end());
    }
    out->mutable_material()->mutable_friction()->set_value(shape.material.friction);
    out->mutable_material()->mutable_restitution()->set_value(shape.material.restitution);
    if (shape.material.torsional_friction != 0) {
      out->mutable_material()->mutable_torsional_friction()->set_value(
          shape.material.torsional_friction);
    }
    if (shape.material.rolling_friction != 0) {
      out->mutable_material()->mutable_rolling_friction()->set_value(
          shape.material.rolling_friction);
    }
    out->mutable_collision_group()->set_value(shape.collision_group);
    out->mutable_collision_mask()->set_value(shape.collision_mask);
    out->mutable_contact_dim()->set_value(shape.contact_dim);
    if (shape.priority != 0) out->mutable_priority()->set_value(shape.priority);
    if (shape.margin != 0) out->mutable_margin()->set_value(shape.margin);
    if (shape.gap != 0) out->mutable_gap()->set_value(shape.gap);
    if (shape.mocap >= 0) out->mutable_mocap()->set_value(shape.mocap);
  }
  for (const JointDesc& joint : desc.joints) {
    v1::Joint* out = proto->add_joints();
    out->set_name(joint.name);
    out->set_type(ToProto(joint.type));
    out->set_parent(joint.parent);
    if (joint.parent_mocap >= 0) out->mutable_parent_mocap()->set_value(joint.parent_mocap);
    out->set_child(joint.child);
    ToProto(joint.child_frame, out->mutable_child_frame());
    for (AxisMode mode : joint.axis_mode) out->add_axis_mode(static_cast<v1::AxisMode>(mode));
    out->set_limited(joint.limited);
    for (Real v : joint.lower) out->add_lower(v);
    for (Real v : joint.upper) out->add_upper(v);
    out->mutable_drive()->set_stiffness(joint.drive.stiffness);
    out->mutable_drive()->set_damping(joint.drive.damping);
    out->mutable_drive()->set_target_position(joint.drive.target_position);
    out->mutable_drive()->set_target_velocity(joint.drive.target_velocity);
    out->set_reference(joint.reference);
    out->set_compliance(joint.compliance);
    out->set_armature(joint.armature);
    out->set_friction_loss(joint.friction_loss);
    out->set_collide_connected(joint.collide_connected);
    if (joint.type == JointType::kUniversal) {
      ToProto(joint.second_axis, out->mutable_second_axis());
      ToProto(joint.second_anchor, out->mutable_second_anchor());
    }
  }
  for (const ActuatorDesc& actuator : desc.actuators) {
    v1::Actuator* out = proto->add_actuators();
    out->set_name(actuator.name);
    out->set_type(ToProto(actuator.type));
    out->set_joint(actuator.joint);
    out->set_dof(actuator.dof);
    out->mutable_gear()->set_value(actuator.gear);
    out->set_ctrl_limited(actuator.ctrl_limited);
    out->set_ctrl_min(actuator.ctrl_min);
    out->set_ctrl_max(actuator.ctrl_max);
    out->set_kp(actuator.kp);
    out->set_kv(actuator.kv);
    out->set_force_limited(actuator.force_limited);
    out->set_force_min(actuator.force_min);
    out->set_force_max(actuator.force_max);
    if (actuator.tendon >= 0) out->mutable_tendon()->set_value(actuator.tendon);
    if (actuator.target_scale != 1) out->mutable_target_scale()->set_value(actuator.target_scale);
    if (actuator.site_body >= 0) {
      v1::ActuatorSite* site = out->mutable_site();
      site->set_body(actuator.site_body);
      ToProto(actuator.site_pose, site->mutable_pose());
      for (Real x : actuator.site_wrench) site->add_wrench(x);
      site->set_world_force(actuator.site_force_world);
      if (actuator.site_reaction_body >= 0)
        site->mutable_reaction_body()->set_value(actuator.site_reaction_body);
    }
    if (actuator.adhesion_body >= 0)
      out->mutable_adhesion_body()->set_value(actuator.adhesion_body);
    out->set_dynamics(static_cast<v1::ActuatorDynamics>(actuator.dynamics));
    if (actuator.dynamics != ActuatorDynamics::kNone)
      out->mutable_dynamics_time_constant()->set_value(actuator.dynamics_time_constant);
    out->set_activation_limited(actuator.activation_limited);
    out->set_activation_min(actuator.activation_min);
    out->set_activation_max(actuator.activation_max);
    if (actuator.type == ActuatorType::kMuscle) {
      const MuscleDesc& muscle = actuator.muscle;
      v1::ActuatorMuscle* m = out->mutable_muscle();
      m->mutable_time_activation()->set_value(muscle.time_activation);
      m->mutable_time_deactivation()->set_value(muscle.time_deactivation);
      m->mutable_range_low()->set_value(muscle.range[0]);
      m->mutable_range_high()->set_value(muscle.range[1]);
      m->set_force(muscle.force);
      m->mutable_length_min()->set_value(muscle.length_min);
      m->mutable_length_max()->set_value(muscle.length_max);
      m->mutable_velocity_max()->set_value(muscle.velocity_max);
      m->mutable_passive_force()->set_value(muscle.passive_force);
      m->mutable_velocity_force_max()->set_value(muscle.velocity_force_max);
      m->set_length_range_low(muscle.length_range[0]);
      m->set_length_range_high(muscle.length_range[1]);
    }
  }
  for (const TendonDesc& tendon : desc.tendons) {
    v1::Tendon* out = proto->add_tendons();
    out->set_name(tendon.name);
    for (const TendonJointDesc& j : tendon.joints) {
      v1::TendonJoint* joint = out->add_joints();
      joint->set_joint(j.joint);
      joint->set_dof(j.dof);
      joint->set_coef(j.coef);
    }
    for (const TendonPathDesc& point : tendon.path) {
      v1::TendonPathElement* e = out->add_path();
      e->set_kind(static_cast<v1::TendonPathKind>(point.kind));
      e->set_body(point.body);
      ToProto(point.pose, e->mutable_pose());
      e->set_radius(point.radius);
      e->set_divisor(point.divisor);
      if (point.kind == TendonPathDesc::Kind::kCrank) e->set_rod_length(point.rod_length);
      if (point.has_side) {
        e->mutable_side()->set_body(point.side_body);
        ToProto(point.side_pos, e->mutable_side()->mutable_pos());
      }
    }
    out->set_limited(tendon.limited);
    out->set_lower(tendon.lower);
    out->set_upper(tendon.upper);
    out->set_stiffness(tendon.stiffness);
    out->set_damping(tendon.damping);
    if (tendon.spring_length) out->mutable_spring_length()->set_value(*tendon.spring_length);
    out->set_friction_loss(tendon.friction_loss);
    out->set_hold(tendon.hold);
    out->set_hold_offset(tendon.hold_offset);
    out->set_hold_compliance(tendon.hold_compliance);
    out->set_hold_damping(tendon.hold_damping);
  }
  for (const JointCouplingDesc& coupling : desc.couplings) {
    v1::JointCoupling* out = proto->add_couplings();
    out->set_name(coupling.name);
    out->set_joint(coupling.joint);
    out->set_dof(coupling.dof);
    if (coupling.leader_joint >= 0) out->mutable_leader_joint()->set_value(coupling.leader_joint);
    out->set_leader_dof(coupling.leader_dof);
    for (Real c : coupling.polynomial) out->add_polynomial(c);
    out->set_compliance(coupling.compliance);
  }
  for (const ContactPairDesc& pair : desc.contact_pairs) {
    v1::ContactPair* out = proto->add_contact_pairs();
    out->set_name(pair.name);
    out->set_shape_a(pair.shape_a);
    out->set_shape_b(pair.shape_b);
    out->mutable_friction()->set_value(pair.friction);
    out->set_contact_dim(pair.contact_dim);
    out->set_torsional_friction(pair.torsional_friction);
    out->set_rolling_friction(pair.rolling_friction);
    out->set_margin(pair.margin);
    out->set_gap(pair.gap);
  }
  for (const auto& [a, b] : desc.exclude_body_pairs) {
    v1::BodyPair* out = proto->add_exclude_body_pairs();
    out->set_body_a(a);
    out->set_body_b(b);
  }
  for (const KeyframeDesc& key : desc.keyframes) {
    v1::Keyframe* out = proto->add_keyframes();
    out->set_name(key.name);
    out->set_time(key.time);
    for (Real v : key.body_pose) out->add_body_pose(v);
    for (Real v : key.body_velocity) out->add_body_velocity(v);
    for (Real v : key.controls) out->add_controls(v);
    for (Real v : key.activations) out->add_activations(v);
    for (Real v : key.mocap_pose) out->add_mocap_pose(v);
  }
  for (const MocapBodyDesc& m : desc.mocap_bodies) {
    v1::MocapBody* out = proto->add_mocap_bodies();
    out->set_name(m.name);
    ToProto(m.pose, out->mutable_pose());
  }
  SolverOptionsToProto(desc.options, proto->mutable_options());
  proto->mutable_contact_capacity()->set_value(desc.contact_capacity);
  proto->mutable_pair_capacity()->set_value(desc.pair_capacity);
}

absl::Status ApplySolverOverrides(const v1::SolverOptions& overrides, SolverOptions* options) {
  if (overrides.has_timestep()) options->timestep = overrides.timestep().value();
  if (overrides.has_gravity()) options->gravity = FromProto(overrides.gravity());
  if (overrides.has_fluid_wind()) options->fluid_wind = FromProto(overrides.fluid_wind());
  absl::Status status = ApplyFormulation(overrides.joint_formulation(), "joint_formulation",
                                         &options->joint_formulation);
  if (!status.ok()) return status;
  status = ApplyFormulation(overrides.contact_formulation(), "contact_formulation",
                            &options->contact_formulation);
  if (!status.ok()) return status;
  status = ApplyPreconditioner(overrides.preconditioner(), &options->preconditioner);
  if (!status.ok()) return status;
  status = ApplyFrictionCombine(overrides.friction_combine(), &options->friction_combine);
  if (!status.ok()) return status;
  if (overrides.has_baumgarte()) options->baumgarte = overrides.baumgarte().value();
  if (overrides.has_contact_margin()) options->contact_margin = overrides.contact_margin().value();
  if (overrides.has_newton_iterations()) {
    options->newton_iterations = overrides.newton_iterations().value();
  }
  if (overrides.has_newton_stall_iterations()) {
    options->newton_stall_iterations = overrides.newton_stall_iterations().value();
  }
  if (overrides.has_newton_tail_iterations()) {
    options->newton_tail_iterations = overrides.newton_tail_iterations().value();
  }
  if (overrides.has_newton_tail_residual()) {
    options->newton_tail_residual = overrides.newton_tail_residual().value();
  }
  if (overrides.has_cr_iterations()) options->cr_iterations = overrides.cr_iterations().value();
  if (overrides.has_newton_tolerance()) {
    options->newton_tolerance = overrides.newton_tolerance().value();
  }
  if (overrides.has_cr_tolerance()) options->cr_tolerance = overrides.cr_tolerance().value();
  if (overrides.has_line_search()) options->line_search = overrides.line_search().value();
  if (overrides.has_line_search_steps()) {
    options->line_search_steps = overrides.line_search_steps().value();
  }
  if (overrides.has_line_search_growth()) {
    options->line_search_growth = overrides.line_search_growth().value();
  }
  if (overrides.has_strict_after_cycle()) {
    options->strict_after_cycle = overrides.strict_after_cycle().value();
  }
  if (overrides.has_fb_epsilon()) options->fb_epsilon = overrides.fb_epsilon().value();
  if (overrides.has_speculative_contacts()) {
    options->speculative_contacts = overrides.speculative_contacts().value();
  }
  if (overrides.has_fluid_density()) options->fluid_density = overrides.fluid_density().value();
  if (overrides.has_fluid_viscosity()) {
    options->fluid_viscosity = overrides.fluid_viscosity().value();
  }
  if (overrides.has_contact_compliance()) {
    options->contact_compliance = overrides.contact_compliance().value();
  }
  if (overrides.has_max_depenetration_speed()) {
    options->max_depenetration_speed = overrides.max_depenetration_speed().value();
  }
  if (overrides.has_friction_newton()) {
    options->friction_newton = overrides.friction_newton().value();
  }
  if (overrides.has_step_halvings()) options->step_halvings = overrides.step_halvings().value();
  if (overrides.has_halving_iterations()) {
    options->halving_iterations = overrides.halving_iterations().value();
  }
  if (overrides.has_halving_residual()) {
    options->halving_residual = overrides.halving_residual().value();
  }
  if (overrides.has_loop_rows()) options->loop_rows = overrides.loop_rows().value();
  if (overrides.has_islands()) options->islands = overrides.islands().value();
  if (overrides.has_missed_contact_depth()) {
    options->missed_contact_depth = overrides.missed_contact_depth().value();
  }
  if (overrides.has_contact_redos()) options->contact_redos = overrides.contact_redos().value();
  if (overrides.has_contact_presolve_sweeps()) {
    options->contact_presolve_sweeps = overrides.contact_presolve_sweeps().value();
  }
  if (overrides.has_halving_carryover()) {
    options->halving_carryover = overrides.halving_carryover().value();
  }
  return absl::OkStatus();
}

void SolverOptionsToProto(const SolverOptions& options, v1::SolverOptions* proto) {
  proto->mutable_timestep()->set_value(options.timestep);
  ToProto(options.gravity, proto->mutable_gravity());
  ToProto(options.fluid_wind, proto->mutable_fluid_wind());
  proto->set_joint_formulation(ToProto(options.joint_formulation));
  proto->set_contact_formulation(ToProto(options.contact_formulation));
  proto->mutable_baumgarte()->set_value(options.baumgarte);
  proto->mutable_contact_margin()->set_value(options.contact_margin);
  proto->mutable_newton_iterations()->set_value(options.newton_iterations);
  proto->mutable_newton_stall_iterations()->set_value(options.newton_stall_iterations);
  proto->mutable_newton_tail_iterations()->set_value(options.newton_tail_iterations);
  proto->mutable_newton_tail_residual()->set_value(options.newton_tail_residual);
  proto->mutable_cr_iterations()->set_value(options.cr_iterations);
  proto->mutable_newton_tolerance()->set_value(options.newton_tolerance);
  proto->mutable_cr_tolerance()->set_value(options.cr_tolerance);
  proto->mutable_line_search()->set_value(options.line_search);
  proto->mutable_line_search_steps()->set_value(options.line_search_steps);
  proto->mutable_fb_epsilon()->set_value(options.fb_epsilon);
  proto->mutable_speculative_contacts()->set_value(options.speculative_contacts);
  proto->mutable_contact_compliance()->set_value(options.contact_compliance);
  proto->mutable_max_depenetration_speed()->set_value(options.max_depenetration_speed);
  proto->mutable_fluid_density()->set_value(options.fluid_density);
  proto->mutable_fluid_viscosity()->set_value(options.fluid_viscosity);
  proto->mutable_friction_newton()->set_value(options.friction_newton);
  proto->set_friction_combine(ToProto(options.friction_combine));
  proto->mutable_line_search_growth()->set_value(options.line_search_growth);
  proto->mutable_strict_after_cycle()->set_value(options.strict_after_cycle);
  proto->mutable_step_halvings()->set_value(options.step_halvings);
  proto->mutable_halving_iterations()->set_value(options.halving_iterations);
  proto->mutable_halving_residual()->set_value(options.halving_residual);
  proto->mutable_loop_rows()->set_value(options.loop_rows);
  proto->mutable_islands()->set_value(options.islands);
  proto->mutable_missed_contact_depth()->set_value(options.missed_contact_depth);
  proto->mutable_contact_redos()->set_value(options.contact_redos);
  proto->mutable_contact_presolve_sweeps()->set_value(options.contact_presolve_sweeps);
  proto->mutable_halving_carryover()->set_value(options.halving_carryover);
  proto->set_preconditioner(ToProto(options.preconditioner));
}

absl::StatusOr<ImportedScene> ImportScene(const v1::Scene& scene, const std::string& asset_dir,
                                          int max_bodies) {
  switch (scene.source_case()) {
    case v1::Scene::kModel: {
      absl::StatusOr<ModelDesc> desc = ModelDescFromProto(scene.model());
      if (!desc.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("scene.model: ", desc.status().message()));
      }
      return ImportedScene{std::move(*desc), {}, {}};
    }
    case v1::Scene::kMjcf:
    case v1::Scene::kUrdf: {
      const bool mjcf = scene.source_case() == v1::Scene::kMjcf;
      const char* field = mjcf ? "mjcf" : "urdf";
      const std::string& xml = mjcf ? scene.mjcf() : scene.urdf();
      if (asset_dir.empty()) {
        absl::Status files = CheckNoFileReferences(xml, field);
        if (!files.ok()) return files;
      }
#if defined(AXION_SERVER_HAS_IO)
      if (mjcf) {
        MjcfOptions options;
        if (scene.has_mjcf_light_body_mass_fraction()) {
          options.light_body_mass_fraction = scene.mjcf_light_body_mass_fraction().value();
        }
        options.balance_inertia = scene.balance_inertia();
        options.merge_welded_bodies = !scene.mjcf_keep_welded_bodies();
        options.bound_mass = scene.mjcf_bound_mass();
        options.bound_inertia = scene.mjcf_bound_inertia();
        if (!(options.bound_mass >= 0) || !std::isfinite(options.bound_mass) ||
            !(options.bound_inertia >= 0) || !std::isfinite(options.bound_inertia)) {
          return absl::InvalidArgumentError(
              absl::StrCat("scene.mjcf_bound_mass / mjcf_bound_inertia: ", scene.mjcf_bound_mass(),
                           " / ", scene.mjcf_bound_inertia(), " must be finite and >= 0"));
        }
        options.file_root = asset_dir;  // a client's scene reads nothing outside it
        options.max_bodies = max_bodies;
        return FromImport(LoadMjcfString(xml, asset_dir, options), field, scene);
      }
      UrdfOptions options;
      options.floating_base = scene.urdf_floating_base();
      options.self_collision = scene.urdf_self_collision();
      options.inertia_from_collision = scene.urdf_inertia_from_collision();
      options.position_kp = scene.urdf_position_kp();
      options.position_kv = scene.urdf_position_kv();
      options.balance_inertia = scene.balance_inertia();
      if (!asset_dir.empty()) options.package_dirs.push_back(asset_dir);
      options.file_root = asset_dir;
      return FromImport(LoadUrdfString(xml, asset_dir, options), field, scene);
#else
      return absl::UnimplementedError(
          absl::StrCat("scene.", field, ": this server was built without the axion_io importers"));
#endif
    }
    case v1::Scene::SOURCE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("scene: no source set (expected mjcf, urdf or model)");
}

bool SceneReadsFiles(const v1::Scene& scene) {
  switch (scene.source_case()) {
    case v1::Scene::kMjcf:
      return !CheckNoFileReferences(scene.mjcf(), "mjcf").ok();
    case v1::Scene::kUrdf:
      return !CheckNoFileReferences(scene.urdf(), "urdf").ok();
    default:
      return false;
  }
}

absl::StatusOr<ImportResult> SourceMapToImport(const v1::SourceMap& source) {
  if (source.bodies().empty() && source.joints().empty()) {
    return absl::FailedPreconditionError(
        "its scene came from no model file (a ModelDescription, not MJCF or URDF: its source "
        "map is empty), so it has no file coordinates");
  }
  ImportResult file;
  for (const v1::SourceBody& body : source.bodies()) {
    file.source_bodies.push_back({body.name(), body.body(), FromProto(body.offset()),
                                  body.has_mocap() ? body.mocap().value() : -1});
  }
  for (int j = 0; j < source.joints_size(); ++j) {
    const v1::SourceJoint& joint = source.joints(j);
    ImportResult::JointKind kind;
    switch (joint.kind()) {
      case v1::SOURCE_JOINT_KIND_HINGE:
        kind = ImportResult::JointKind::kHinge;
        break;
      case v1::SOURCE_JOINT_KIND_SLIDE:
        kind = ImportResult::JointKind::kSlide;
        break;
      case v1::SOURCE_JOINT_KIND_BALL:
        kind = ImportResult::JointKind::kBall;
        break;
      case v1::SOURCE_JOINT_KIND_FREE:
        kind = ImportResult::JointKind::kFree;
        break;
      case v1::SOURCE_JOINT_KIND_FIXED:
        kind = ImportResult::JointKind::kFixed;
        break;
      case v1::SOURCE_JOINT_KIND_PLANAR:
        kind = ImportResult::JointKind::kPlanar;
        break;
      default:
        return absl::FailedPreconditionError(absl::StrCat(
            "its stored source map has no kind for file joint ", j, " '", joint.name(),
            "' (saved by an older server), so it has no file coordinates; create it again"));
    }
    file.source_joints.push_back(
        {joint.name(), joint.joint(), joint.dof(), kind, joint.file_body()});
  }
  absl::Status sensors = SensorsFromProto(source, &file);
  if (!sensors.ok()) return sensors;
  return file;
}

absl::StatusOr<std::vector<Real>> SensorDataOf(const ImportResult& file, const Model& model,
                                               const Simulator& simulator, WorldId world) {
#if defined(AXION_SERVER_HAS_IO)
  return ReadFileSensors(file, model, simulator, world);
#else
  (void)file, (void)model, (void)simulator, (void)world;
  return absl::UnimplementedError(
      "sensor data: this server was built without the axion_io importers");
#endif
}

absl::StatusOr<FileCoordinates> FileCoordinatesOf(const ImportResult& file, const Model& model,
                                                  const BodyState& bodies,
                                                  const JointState& joints) {
#if defined(AXION_SERVER_HAS_IO)
  return FileJointCoordinates(file, model, bodies, joints);
#else
  (void)file, (void)model, (void)bodies, (void)joints;
  return absl::UnimplementedError(
      "file coordinates: this server was built without the axion_io importers");
#endif
}

void DescribeModel(const Model& model, const SolverOptions& options, int contact_capacity,
                   const v1::SourceMap& source, const absl::StatusOr<ImportResult>& file,
                   v1::WorldDescription* description) {
  const ModelDesc& desc = model.desc();
  description->set_model_name(desc.name);
  for (const BodyDesc& body : desc.bodies) description->add_body_names(body.name);
  for (const ShapeDesc& shape : desc.shapes) description->add_shape_names(shape.name);
  for (int j = 0; j < model.joint_count(); ++j) {
    const JointDesc& joint = desc.joints[j];
    v1::JointInfo* info = description->add_joints();
    info->set_name(joint.name);
    info->set_type(ToProto(joint.type));
    info->set_position_offset(model.joint_position_offset()[j]);
    info->set_position_count(JointPositionCount(joint));
    info->set_dof_offset(model.joint_dof_offset()[j]);
    info->set_dof_count(JointDofCount(joint));
    info->set_parent_body(joint.parent);
    info->set_child_body(joint.child);
  }
  for (const ActuatorDesc& actuator : desc.actuators) {
    v1::ActuatorInfo* info = description->add_actuators();
    info->set_name(actuator.name);
    info->set_type(ToProto(actuator.type));
    info->set_ctrl_limited(actuator.ctrl_limited);
    info->set_ctrl_min(actuator.ctrl_min);
    info->set_ctrl_max(actuator.ctrl_max);
    info->set_force_limited(actuator.force_limited);
    info->set_force_min(actuator.force_min);
    info->set_force_max(actuator.force_max);
    const bool on_joint =
        actuator.tendon < 0 && actuator.site_body < 0 && actuator.adhesion_body < 0;
    info->set_joint(on_joint ? actuator.joint : -1);
    info->set_dof(on_joint ? actuator.dof : -1);
    info->set_tendon(actuator.tendon);
    info->set_site_body(actuator.site_body);
    info->set_adhesion_body(actuator.adhesion_body);
  }
  description->set_body_count(model.body_count());
  description->set_joint_position_count(model.joint_position_count());
  description->set_joint_dof_count(model.joint_dof_count());
  description->set_actuator_count(model.actuator_count());
  description->set_contact_capacity(contact_capacity > 0 ? contact_capacity
                                                         : model.contact_capacity());
  description->set_timestep(options.timestep);
  *description->mutable_source() = source;
  for (const KeyframeDesc& key : desc.keyframes) description->add_keyframe_names(key.name);
  for (const MocapBodyDesc& m : desc.mocap_bodies) description->add_mocap_names(m.name);
  for (const TendonDesc& t : desc.tendons) description->add_tendon_names(t.name);
  if (!file.ok()) return;
  description->set_sensor_data_count(file->sensor_data_count);
  const absl::StatusOr<FileCoordinates> layout = FileLayoutOf(*file, model);
  if (!layout.ok() || static_cast<int>(layout->position_offset.size()) != source.joints_size())
    return;
  description->set_file_position_count(static_cast<int32_t>(layout->position.size()));
  description->set_file_velocity_count(static_cast<int32_t>(layout->velocity.size()));
  for (int j = 0; j < source.joints_size(); ++j) {
    v1::SourceJoint* joint = description->mutable_source()->mutable_joints(j);
    joint->set_file_position_offset(layout->position_offset[j]);
    joint->set_file_position_count(layout->position_count[j]);
    joint->set_file_velocity_offset(layout->velocity_offset[j]);
    joint->set_file_velocity_count(layout->velocity_count[j]);
  }
}

}  // namespace axion::server
