#include "server/parameters.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/arrays.h"

namespace axion::server {
namespace {

// DOF `dof` of a world as (joint, index within the joint).
std::pair<int, int> DofOf(const ModelDesc& desc, int dof) {
  for (int j = 0; j < static_cast<int>(desc.joints.size()); ++j) {
    const int n = JointDofCount(desc.joints[j]);
    if (dof < n) return {j, dof};
    dof -= n;
  }
  return {-1, 0};
}

int DofCount(const ModelDesc& desc) {
  int n = 0;
  for (const JointDesc& joint : desc.joints) n += JointDofCount(joint);
  return n;
}

// A joint's per-DOF drives, armatures and friction losses, spelt out so one DOF can change.
DriveDesc& DofDrive(JointDesc& joint, int k) {
  if (joint.dof_drive.empty()) joint.dof_drive.assign(JointDofCount(joint), joint.drive);
  return joint.dof_drive[k];
}
const DriveDesc& DofDrive(const JointDesc& joint, int k) {
  return joint.dof_drive.empty() ? joint.drive : joint.dof_drive[k];
}
Real& DofList(std::vector<Real>& list, Real all, const JointDesc& joint, int k) {
  if (list.empty()) list.assign(JointDofCount(joint), all);
  return list[k];
}
Real DofValue(const std::vector<Real>& list, Real all, int k) {
  return list.empty() ? all : list[k];
}

enum class Range { kAny, kPositive, kNonNegative, kUnit };

// One array of WorldParameters: its elements per world, values per element, range, and how it
// reads from and writes into a world's description and options.
struct ParameterArray {
  const char* name;
  const std::string& (v1::WorldParameters::*bytes)() const;
  std::string* (v1::WorldParameters::*mutable_bytes)();
  int width;
  Range range;
  bool model;  // in the model (else in the solver options)
  int (*elements)(const ModelDesc&);
  std::string (*element_name)(const ModelDesc&, int element);
  void (*get)(const ModelDesc&, const SolverOptions&, int element, Real* values);
  void (*set)(ModelDesc*, SolverOptions*, int element, const Real* values);
  // Why an element's value cannot change, or nullptr where it can.
  const char* (*fixed)(const ModelDesc&, int element) = nullptr;
};

int Bodies(const ModelDesc& d) { return static_cast<int>(d.bodies.size()); }
int Shapes(const ModelDesc& d) { return static_cast<int>(d.shapes.size()); }
int Actuators(const ModelDesc& d) { return static_cast<int>(d.actuators.size()); }
int One(const ModelDesc&) { return 1; }
std::string BodyName(const ModelDesc& d, int i) {
  return absl::StrCat("body '", d.bodies[i].name, "'");
}
std::string ShapeName(const ModelDesc& d, int i) {
  return absl::StrCat("shape '", d.shapes[i].name, "'");
}
std::string DofName(const ModelDesc& d, int i) {
  auto [joint, k] = DofOf(d, i);
  return absl::StrCat("DOF ", k, " of joint '", d.joints[joint].name, "'");
}
std::string ActuatorName(const ModelDesc& d, int i) {
  return absl::StrCat("actuator '", d.actuators[i].name, "'");
}
std::string Gravity(const ModelDesc&, int) { return "gravity"; }
std::string FluidWind(const ModelDesc&, int) { return "fluid_wind"; }

const ParameterArray kArrays[] = {
    {"body_mass", &v1::WorldParameters::body_mass, &v1::WorldParameters::mutable_body_mass, 1,
     Range::kPositive, true, Bodies, BodyName,
     [](const ModelDesc& d, const SolverOptions&, int i, Real* v) { v[0] = d.bodies[i].mass; },
     [](ModelDesc* d, SolverOptions*, int i, const Real* v) {
       BodyDesc& body = d->bodies[i];
       if (v[0] == body.mass) return;
       body.inertia = (v[0] / body.mass) * body.inertia;
       body.mass = v[0];
     }},
    {"body_com", &v1::WorldParameters::body_com, &v1::WorldParameters::mutable_body_com, 3,
     Range::kAny, true, Bodies, BodyName,
     [](const ModelDesc& d, const SolverOptions&, int i, Real* v) { store3(v, d.bodies[i].com); },
     [](ModelDesc* d, SolverOptions*, int i, const Real* v) { d->bodies[i].com = load3(v); }},
    {"shape_friction", &v1::WorldParameters::shape_friction,
     &v1::WorldParameters::mutable_shape_friction, 1, Range::kNonNegative, true, Shapes, ShapeName,
     [](const ModelDesc& d, const SolverOptions&, int i, Real* v) {
       v[0] = d.shapes[i].material.friction;
     },
     [](ModelDesc* d, SolverOptions*, int i, const Real* v) {
       d->shapes[i].material.friction = v[0];
     }},
    {"shape_torsional_friction", &v1::WorldParameters::shape_torsional_friction,
     &v1::WorldParameters::mutable_shape_torsional_friction, 1, Range::kNonNegative, true, Shapes,
     ShapeName,
     [](const ModelDesc& d, const SolverOptions&, int i, Real* v) {
       v[0] = d.shapes[i].material.torsional_friction;
     },
     [](ModelDesc* d, SolverOptions*, int i, const Real* v) {
       d->shapes[i].material.torsional_friction = v[0];
     }},
    {"shape_rolling_friction", &v1::WorldParameters::shape_rolling_friction,
     &v1::WorldParameters::mutable_shape_rolling_friction, 1, Range::kNonNegative, true, Shapes,
     ShapeName,
     [](const ModelDesc& d, const SolverOptions&, int i, Real* v) {
       v[0] = d.shapes[i].material.rolling_friction;
     },
     [](ModelDesc* d, SolverOptions*, int i, const Real* v) {
       d->shapes[i].material.rolling_friction = v[0];
     }},
    {"shape_restitution", &v1::WorldParameters::shape_restitution,
     &v1::WorldParameters::mutable_shape_restitution, 1, Range::kUnit, true, Shapes, ShapeName,
     [](const ModelDesc& d, const SolverOptions&, int i, Real* v) {
       v[0] = d.shapes[i].material.restitution;
     },
     [](ModelDesc* d, SolverOptions*, int i, const Real* v) {
       d->shapes[i].material.restitution = v[0];
     }},
    {"shape_size", &v1::WorldParameters::shape_size, &v1::WorldParameters::mutable_shape_size, 3,
     Range::kAny, true, Shapes, ShapeName,
     [](const ModelDesc& d, const SolverOptions&, int i, Real* v) { store3(v, d.shapes[i].size); },
     [](ModelDesc* d, SolverOptions*, int i, const Real* v) { d->shapes[i].size = load3(v); },
     [](const ModelDesc& d, int i) -> const char* {
       const ShapeType type = d.shapes[i].type;
       return type == ShapeType::kPlane        ? "is a plane, which has no size"
              : type == ShapeType::kConvexHull ? "is a convex hull, sized by its vertices"
                                               : nullptr;
     }},
    {"dof_stiffness", &v1::WorldParameters::dof_stiffness,
     &v1::WorldParameters::mutable_dof_stiffness, 1, Range::kNonNegative, true, DofCount, DofName,
     [](const ModelDesc& d, const SolverOptions&, int i, Real* v) {
       auto [j, k] = DofOf(d, i);
       v[0] = DofDrive(d.joints[j], k).stiffness;
     },
     [](ModelDesc* d, SolverOptions*, int i, const Real* v) {
       auto [j, k] = DofOf(*d, i);
       DofDrive(d->joints[j], k).stiffness = v[0];
     }},
    {"dof_damping", &v1::WorldParameters::dof_damping, &v1::WorldParameters::mutable_dof_damping, 1,
     Range::kNonNegative, true, DofCount, DofName,
     [](const ModelDesc& d, const SolverOptions&, int i, Real* v) {
       auto [j, k] = DofOf(d, i);
       v[0] = DofDrive(d.joints[j], k).damping;
     },
     [](ModelDesc* d, SolverOptions*, int i, const Real* v) {
       auto [j, k] = DofOf(*d, i);
       DofDrive(d->joints[j], k).damping = v[0];
     }},
    {"dof_armature", &v1::WorldParameters::dof_armature, &v1::WorldParameters::mutable_dof_armature,
     1, Range::kNonNegative, true, DofCount, DofName,
     [](const ModelDesc& d, const SolverOptions&, int i, Real* v) {
       auto [j, k] = DofOf(d, i);
       v[0] = DofValue(d.joints[j].dof_armature, d.joints[j].armature, k);
     },
     [](ModelDesc* d, SolverOptions*, int i, const Real* v) {
       auto [j, k] = DofOf(*d, i);
       JointDesc& joint = d->joints[j];
       DofList(joint.dof_armature, joint.armature, joint, k) = v[0];
     }},
    {"dof_friction_loss", &v1::WorldParameters::dof_friction_loss,
     &v1::WorldParameters::mutable_dof_friction_loss, 1, Range::kNonNegative, true, DofCount,
     DofName,
     [](const ModelDesc& d, const SolverOptions&, int i, Real* v) {
       auto [j, k] = DofOf(d, i);
       v[0] = DofValue(d.joints[j].dof_friction_loss, d.joints[j].friction_loss, k);
     },
     [](ModelDesc* d, SolverOptions*, int i, const Real* v) {
       auto [j, k] = DofOf(*d, i);
       JointDesc& joint = d->joints[j];
       DofList(joint.dof_friction_loss, joint.friction_loss, joint, k) = v[0];
     }},
    {"actuator_gear", &v1::WorldParameters::actuator_gear,
     &v1::WorldParameters::mutable_actuator_gear, 1, Range::kAny, true, Actuators, ActuatorName,
     [](const ModelDesc& d, const SolverOptions&, int i, Real* v) { v[0] = d.actuators[i].gear; },
     [](ModelDesc* d, SolverOptions*, int i, const Real* v) { d->actuators[i].gear = v[0]; }},
    {"actuator_kp", &v1::WorldParameters::actuator_kp, &v1::WorldParameters::mutable_actuator_kp, 1,
     Range::kNonNegative, true, Actuators, ActuatorName,
     [](const ModelDesc& d, const SolverOptions&, int i, Real* v) { v[0] = d.actuators[i].kp; },
     [](ModelDesc* d, SolverOptions*, int i, const Real* v) { d->actuators[i].kp = v[0]; }},
    {"actuator_kv", &v1::WorldParameters::actuator_kv, &v1::WorldParameters::mutable_actuator_kv, 1,
     Range::kNonNegative, true, Actuators, ActuatorName,
     [](const ModelDesc& d, const SolverOptions&, int i, Real* v) { v[0] = d.actuators[i].kv; },
     [](ModelDesc* d, SolverOptions*, int i, const Real* v) { d->actuators[i].kv = v[0]; }},
    {"gravity", &v1::WorldParameters::gravity, &v1::WorldParameters::mutable_gravity, 3,
     Range::kAny, false, One, Gravity,
     [](const ModelDesc&, const SolverOptions& o, int, Real* v) { store3(v, o.gravity); },
     [](ModelDesc*, SolverOptions* o, int, const Real* v) { o->gravity = load3(v); }},
    {"fluid_wind", &v1::WorldParameters::fluid_wind, &v1::WorldParameters::mutable_fluid_wind, 3,
     Range::kAny, false, One, FluidWind,
     [](const ModelDesc&, const SolverOptions& o, int, Real* v) { store3(v, o.fluid_wind); },
     [](ModelDesc*, SolverOptions* o, int, const Real* v) { o->fluid_wind = load3(v); }},
};

// Why `value` is outside `range`, or "".
std::string RangeProblem(Range range, float value) {
  if (!std::isfinite(value)) return "is not finite";
  switch (range) {
    case Range::kAny:
      return "";
    case Range::kPositive:
      return value > 0 ? "" : "must be > 0";
    case Range::kNonNegative:
      return value >= 0 ? "" : "must be >= 0";
    case Range::kUnit:
      return value >= 0 && value <= 1 ? "" : "must be in [0, 1]";
  }
  return "";
}

}  // namespace

void AppendParameters(const ModelDesc& desc, const SolverOptions& options,
                      v1::WorldParameters* out) {
  std::vector<Real> values;
  for (const ParameterArray& array : kArrays) {
    const int n = array.elements(desc);
    values.assign(static_cast<size_t>(n) * array.width, 0);
    for (int i = 0; i < n; ++i) array.get(desc, options, i, &values[i * array.width]);
    AppendFloat32(values, (out->*array.mutable_bytes)());
  }
}

absl::Status ApplyParameters(const v1::WorldParameters& parameters,
                             absl::Span<const ParameterTarget> worlds, bool* changes_model,
                             bool* changes_options) {
  *changes_model = *changes_options = false;
  for (const ParameterArray& array : kArrays) {
    const std::string& bytes = (parameters.*array.bytes)();
    if (bytes.empty()) continue;
    (array.model ? *changes_model : *changes_options) = true;
    int64_t expected = 0;
    for (const ParameterTarget& world : worlds)
      expected += int64_t{array.elements(*world.desc)} * array.width;
    if (Float32Count(bytes) != expected) {
      return absl::InvalidArgumentError(
          absl::StrCat(array.name, ": expected ", expected, " float32 values (", 4 * expected,
                       " bytes) for ", worlds.size(), " worlds, got ", bytes.size(), " bytes"));
    }
    int64_t index = 0;
    std::vector<Real> current(array.width);
    for (const ParameterTarget& world : worlds) {
      for (int i = 0; i < array.elements(*world.desc); ++i, index += array.width) {
        array.get(*world.desc, *world.options, i, current.data());
        bool changed = false;
        for (int k = 0; k < array.width; ++k) {
          const float value = ReadFloat32At(bytes, index + k);
          const std::string problem = RangeProblem(array.range, value);
          if (!problem.empty()) {
            return absl::InvalidArgumentError(absl::StrCat(array.name, ": world ", world.world_id,
                                                           ", ", array.element_name(*world.desc, i),
                                                           ": ", value, " ", problem));
          }
          // what GetParameters gave back keeps the exact value
          if (static_cast<float>(current[k]) != value) {
            current[k] = value;
            changed = true;
          }
        }
        if (!changed) continue;
        const char* fixed = array.fixed ? array.fixed(*world.desc, i) : nullptr;
        if (fixed != nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(array.name, ": world ", world.world_id,
                                                         ", ", array.element_name(*world.desc, i),
                                                         " ", fixed));
        }
        array.set(world.desc, world.options, i, current.data());
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace axion::server
