// Layout (native byte order, which every supported platform shares: little-endian):
//   "AXSNAP04" | u32 sizeof(Real) | i32 bodies, joints, dofs, qpos, actuators, joint rows |
//   u64 model fingerprint |
//   u64 step_count | Real time | u32 flags | i32 step level (halvings the next step starts at) |
//   i32 presolve carry (steps still to start from the contact presolve) |
//   body_q (bodies x 7) | body_u (bodies x 6) | body_wrench (bodies x 6) |
//   dof_velocity (dofs) | qpos (qpos) | actuator_ctrl (actuators) | joint-row lambda (rows) |
//   i32 previous contact count n | n x (i32 shape a, i32 shape b (world-local), Real point on a[3],
//   Real point on b[3], Real lambda[3]) | mocap body poses (mocap bodies x 7: position,
//   quaternion) | actuator_activation (actuators, only where the model has a muscle or an
//   actuator with dynamics) (AXSNAP01 had the point on a only; AXSNAP02 no step level;
//   AXSNAP03 no presolve carry; a
//   model without mocap bodies or activations, which every model was before they came, has
//   empty last blocks)
// The joint-row impulses and the last step's contacts are part of the state because they
// warm-start the next Newton solve, the step level because it sets the next step's length, and
// the presolve carry because it sets where the next step's Newton solve starts.
#include "snapshot.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "axion/simulator.h"
#include "model_internal.h"

namespace axion {
namespace {

constexpr char kMagic[8] = {'A', 'X', 'S', 'N', 'A', 'P', '0', '4'};

template <class T>
void Put(std::string& out, const T* data, size_t count) {
  if (count == 0) return;
  out.append(reinterpret_cast<const char*>(data), count * sizeof(T));
}

struct Reader {
  std::string_view in;
  size_t pos = 0;
  template <class T>
  bool Get(T* data, size_t count) {
    size_t n = count * sizeof(T);
    if (n == 0) return true;  // an empty block (no actuators, say): nothing to copy
    if (pos + n > in.size()) return false;
    std::memcpy(data, in.data() + pos, n);
    pos += n;
    return true;
  }
};

struct Counts {
  int32_t bodies, joints, dofs, qpos, actuators, rows;
  uint64_t fingerprint;
};

// A snapshot's quaternions are unit to round-off; one further off than this was not written by
// EncodeSnapshot.
constexpr Real kQuatNormTolerance = Real(1e-4);
constexpr uint32_t kKnownWorldFlags =
    kWorldNotConverged | kWorldContactOverflow | kWorldNonFinite | kWorldPairOverflow;

// The first entry of `values` that is not finite, or -1.
int FirstNonFinite(const std::vector<Real>& values) {
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i])) return static_cast<int>(i);
  return -1;
}

// A snapshot's values, decoded before any is written to the world.
struct DecodedState {
  Real time = 0;
  uint32_t flags = 0;
  std::vector<Real> q, u, wrench, dof_velocity, qpos, ctrl, lambda, contact_points, contact_lambda;
  std::vector<Real> activation;
};

// Whether the model has an actuator with an activation (a muscle, dynamics): its snapshots
// carry them.
bool HasActivations(const Model& model) {
  for (const ActuatorDesc& act : model.desc().actuators) {
    if (HasActivation(act)) return true;
  }
  return false;
}

// A snapshot is bytes from outside (a client's RestoreSnapshot): every value must be one a world
// of `model` can hold, or the restore is refused, naming the value, before anything is written.
// Without this a NaN pose, a zero quaternion or a control outside its range was restored as
// given, and the world failed only at its next step.
absl::Status ValidateState(const DecodedState& s, const Model& model) {
  if (!std::isfinite(s.time) || s.time < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("snapshot time ", s.time, " is not a finite time >= 0 (corrupted)"));
  }
  if (s.flags & ~kKnownWorldFlags) {
    return absl::InvalidArgumentError(
        absl::StrFormat("snapshot world flags 0x%x name no known flag (corrupted)", s.flags));
  }
  const struct {
    const char* name;
    const std::vector<Real>* values;
  } blocks[] = {{"body pose", &s.q},
                {"body velocity", &s.u},
                {"body external force", &s.wrench},
                {"joint velocity", &s.dof_velocity},
                {"joint position", &s.qpos},
                {"actuator control", &s.ctrl},
                {"joint impulse", &s.lambda},
                {"contact point", &s.contact_points},
                {"contact impulse", &s.contact_lambda},
                {"actuator activation", &s.activation}};
  for (const auto& block : blocks) {
    if (const int i = FirstNonFinite(*block.values); i >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("snapshot ", block.name, " value ", i, " is not finite (corrupted)"));
    }
  }
  const ModelDesc& desc = model.desc();
  for (int b = 0; b < model.body_count(); ++b) {
    const Real norm = quat_norm(load_quat(&s.q[7 * b + 3]));
    if (!(std::fabs(norm - Real(1)) <= kQuatNormTolerance)) {
      return absl::InvalidArgumentError(absl::StrCat("snapshot quaternion of body ", b, " ('",
                                                     desc.bodies[b].name, "') has norm ", norm,
                                                     ", not 1 (corrupted)"));
    }
  }
  for (int a = 0; a < model.actuator_count(); ++a) {
    const ActuatorDesc& act = desc.actuators[a];
    if (act.ctrl_limited && (s.ctrl[a] < act.ctrl_min || s.ctrl[a] > act.ctrl_max)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("snapshot control %d (actuator '%s') = %g is outside its range [%g, %g]",
                          a, act.name, static_cast<double>(s.ctrl[a]),
                          static_cast<double>(act.ctrl_min), static_cast<double>(act.ctrl_max)));
    }
  }
  for (size_t a = 0; a < s.activation.size(); ++a) {
    if (!ValidActivation(desc.actuators[a], s.activation[a])) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "snapshot activation %d (actuator '%s') = %g is not 0 (corrupted)", static_cast<int>(a),
          desc.actuators[a].name, static_cast<double>(s.activation[a])));
    }
  }
  return absl::OkStatus();
}

Counts CountsOf(const Model& m) {
  return {m.body_count(),     m.joint_count(),     m.joint_dof_count(), m.joint_position_count(),
          m.actuator_count(), m.joint_row_count(), m.fingerprint()};
}

}  // namespace

std::string EncodeSnapshot(const BatchStorage& h, int w, const Model& model, uint64_t step_count,
                           const std::vector<Pose>& mocap_pose) {
  std::string out;
  Counts c = CountsOf(model);
  uint32_t real_size = sizeof(Real);
  Put(out, kMagic, 8);
  Put(out, &real_size, 1);
  Put(out, &c, 1);
  Put(out, &step_count, 1);
  Put(out, &h.world_time[w], 1);
  Put(out, &h.world_flags[w], 1);
  Put(out, &h.world_step_level[w], 1);
  Put(out, &h.world_presolve_carry[w], 1);
  const int b0 = h.world_body_offset[w];
  Put(out, &h.body_q[7 * b0], 7 * c.bodies);
  Put(out, &h.body_u[6 * b0], 6 * c.bodies);
  Put(out, &h.body_wrench[6 * b0], 6 * c.bodies);
  Put(out, h.dof_velocity.data() + h.world_dof_offset[w], c.dofs);
  Put(out, h.qpos.data() + h.world_qpos_offset[w], c.qpos);
  Put(out, h.actuator_ctrl.data() + h.world_actuator_offset[w], c.actuators);
  Put(out, h.row_lambda.data() + h.world_row_offset[w], c.rows);
  const int32_t contacts = h.world_prev_contact_count[w];
  const int32_t slot0 = h.world_contact_offset[w], shape0 = h.world_shape_offset[w];
  Put(out, &contacts, 1);
  for (int32_t i = 0; i < contacts; ++i) {
    int32_t shapes[2] = {h.contact_prev_shape_a[slot0 + i] - shape0,
                         h.contact_prev_shape_b[slot0 + i] - shape0};
    Put(out, shapes, 2);
    Put(out, &h.contact_prev_points[6 * (slot0 + i)], 6);
    Put(out, &h.contact_prev_lambda[6 * (slot0 + i)], 3 + model.contact_angular_rows());
  }
  for (int m = 0; m < model.mocap_count(); ++m) {
    const Pose& pose = mocap_pose.empty() ? model.desc().mocap_bodies[m].pose : mocap_pose[m];
    Real values[7];
    store3(values, pose.pos);
    store_quat(values + 3, pose.quat);
    Put(out, values, 7);
  }
  if (HasActivations(model))
    Put(out, h.actuator_activation.data() + h.world_actuator_offset[w], c.actuators);
  return out;
}

absl::StatusOr<uint64_t> DecodeSnapshot(std::string_view bytes, const Model& model, int w,
                                        BatchStorage& h, std::vector<Pose>* mocap_pose) {
  Reader r{bytes};
  char magic[8];
  uint32_t real_size = 0;
  Counts c{};
  if (!r.Get(magic, 8) || std::memcmp(magic, kMagic, 6) != 0) {
    return absl::InvalidArgumentError("snapshot is not an Axion world snapshot (bad header)");
  }
  if (std::memcmp(magic, kMagic, 8) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("snapshot format ", absl::string_view(magic, 8), " is not this build's ",
                     absl::string_view(kMagic, 8), " (snapshots do not carry across versions)"));
  }
  if (!r.Get(&real_size, 1) || real_size != sizeof(Real)) {
    return absl::InvalidArgumentError(absl::StrCat("snapshot scalar size ", real_size,
                                                   " does not match this build's ", sizeof(Real)));
  }
  Counts want = CountsOf(model);
  if (!r.Get(&c, 1) || std::memcmp(&c, &want, sizeof(Counts)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("snapshot was taken from a different model (", c.bodies, " bodies, ", c.joints,
                     " joints, fingerprint ", c.fingerprint, "; this world has ", want.bodies,
                     " bodies, ", want.joints, " joints, fingerprint ", want.fingerprint, ")"));
  }
  // Decode into temporaries first so a truncated or corrupted snapshot leaves the world
  // untouched.
  uint64_t step_count = 0;
  int32_t step_level = 0, presolve_carry = 0;
  DecodedState d;
  d.q.resize(7 * c.bodies);
  d.u.resize(6 * c.bodies);
  d.wrench.resize(6 * c.bodies);
  d.dof_velocity.resize(c.dofs);
  d.qpos.resize(c.qpos);
  d.ctrl.resize(c.actuators);
  d.lambda.resize(c.rows);
  if (!r.Get(&step_count, 1) || !r.Get(&d.time, 1) || !r.Get(&d.flags, 1) ||
      !r.Get(&step_level, 1) || !r.Get(&presolve_carry, 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("snapshot has ", bytes.size(), " bytes, too few for its header"));
  }
  if (step_level < 0 || step_level > 10) {
    return absl::InvalidArgumentError(
        absl::StrCat("snapshot step level ", step_level, " is outside [0, 10] (corrupted)"));
  }
  if (presolve_carry < 0 || presolve_carry > kPresolveCarrySteps) {
    return absl::InvalidArgumentError(absl::StrCat("snapshot presolve carry ", presolve_carry,
                                                   " is outside [0, ", kPresolveCarrySteps,
                                                   "] (corrupted)"));
  }
  bool ok = r.Get(d.q.data(), d.q.size()) && r.Get(d.u.data(), d.u.size()) &&
            r.Get(d.wrench.data(), d.wrench.size()) &&
            r.Get(d.dof_velocity.data(), d.dof_velocity.size()) &&
            r.Get(d.qpos.data(), d.qpos.size()) && r.Get(d.ctrl.data(), d.ctrl.size()) &&
            r.Get(d.lambda.data(), d.lambda.size());
  int32_t contacts = 0;
  ok = ok && r.Get(&contacts, 1);
  const int32_t capacity = h.world_contact_offset[w + 1] - h.world_contact_offset[w];
  const int32_t shape_count = model.shape_count();
  if (ok && (contacts < 0 || contacts > capacity)) {
    return absl::InvalidArgumentError(
        absl::StrCat("snapshot holds ", contacts, " contacts; this world has room for ", capacity));
  }
  std::vector<int32_t> contact_shapes(2 * std::max(contacts, 0));
  d.contact_points.resize(6 * std::max(contacts, 0));
  // impulses per contact: normal, two tangents, and the angular friction rows' (0, 1 or 3)
  const int lambdas = 3 + model.contact_angular_rows();
  d.contact_lambda.resize(lambdas * std::max(contacts, 0));
  for (int32_t i = 0; ok && i < contacts; ++i) {
    ok = r.Get(&contact_shapes[2 * i], 2) && r.Get(&d.contact_points[6 * i], 6) &&
         r.Get(&d.contact_lambda[lambdas * i], lambdas);
    ok = ok && contact_shapes[2 * i] >= 0 && contact_shapes[2 * i] < shape_count &&
         contact_shapes[2 * i + 1] >= 0 && contact_shapes[2 * i + 1] < shape_count;
  }
  std::vector<Real> mocap(7 * model.mocap_count());
  ok = ok && r.Get(mocap.data(), mocap.size());
  for (int m = 0; ok && m < model.mocap_count(); ++m) {
    for (int k = 0; k < 7; ++k) ok = ok && std::isfinite(mocap[7 * m + k]);
    ok = ok && std::fabs(quat_norm(load_quat(&mocap[7 * m + 3])) - Real(1)) <= kQuatNormTolerance;
  }
  d.activation.resize(HasActivations(model) ? c.actuators : 0);
  ok = ok && r.Get(d.activation.data(), d.activation.size());
  if (!ok || r.pos != bytes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("snapshot has ", bytes.size(), " bytes, which does not match the model"));
  }
  if (absl::Status valid = ValidateState(d, model); !valid.ok()) return valid;
  const int b0 = h.world_body_offset[w];
  std::copy(d.q.begin(), d.q.end(), h.body_q.begin() + 7 * b0);
  std::copy(d.u.begin(), d.u.end(), h.body_u.begin() + 6 * b0);
  std::copy(d.wrench.begin(), d.wrench.end(), h.body_wrench.begin() + 6 * b0);
  std::fill_n(h.body_acc.begin() + 6 * b0, d.wrench.size(), Real(0));  // not kept
  std::copy(d.dof_velocity.begin(), d.dof_velocity.end(),
            h.dof_velocity.begin() + h.world_dof_offset[w]);
  std::copy(d.qpos.begin(), d.qpos.end(), h.qpos.begin() + h.world_qpos_offset[w]);
  std::copy(d.ctrl.begin(), d.ctrl.end(), h.actuator_ctrl.begin() + h.world_actuator_offset[w]);
  std::fill(h.actuator_activation.begin() + h.world_actuator_offset[w],
            h.actuator_activation.begin() + h.world_actuator_offset[w + 1], Real(0));
  std::copy(d.activation.begin(), d.activation.end(),
            h.actuator_activation.begin() + h.world_actuator_offset[w]);
  std::copy(d.lambda.begin(), d.lambda.end(), h.row_lambda.begin() + h.world_row_offset[w]);
  h.world_time[w] = d.time;
  h.world_flags[w] = d.flags;
  h.world_step_level[w] = step_level;
  h.world_presolve_carry[w] = presolve_carry;
  h.world_step_length[w] = h.world_params[w].timestep;
  h.world_contact_count[w] = 0;
  h.world_angular_row_count[w] = 0;
  const int32_t slot0 = h.world_contact_offset[w], shape0 = h.world_shape_offset[w];
  for (int32_t i = 0; i < contacts; ++i) {
    h.contact_prev_shape_a[slot0 + i] = contact_shapes[2 * i] + shape0;
    h.contact_prev_shape_b[slot0 + i] = contact_shapes[2 * i + 1] + shape0;
    std::copy_n(&d.contact_points[6 * i], 6, &h.contact_prev_points[6 * (slot0 + i)]);
    std::fill_n(&h.contact_prev_lambda[6 * (slot0 + i)], 6, Real(0));
    std::copy_n(&d.contact_lambda[lambdas * i], lambdas, &h.contact_prev_lambda[6 * (slot0 + i)]);
  }
  h.world_prev_contact_count[w] = contacts;
  mocap_pose->clear();
  for (int m = 0; m < model.mocap_count(); ++m)
    mocap_pose->push_back({load3(&mocap[7 * m]), load_quat(&mocap[7 * m + 3])});
  return step_count;
}

}  // namespace axion
