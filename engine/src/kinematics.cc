// Forward kinematics from joint coordinates (BodyStateFromJoints, simulator.h): the inverse of
// the coordinates the step writes back (kernels_joint.h, joint_write_coordinates), so that
// GetJointState returns what SetJointState was given.
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "axion/simulator.h"
#include "model_internal.h"

namespace axion {
namespace {

// exp of a rotation vector.
Quat RotationFromVector(Vec3 phi) {
  const Real angle = norm(phi);
  if (angle < Real(1e-12)) return quat_normalized({1, phi.x / 2, phi.y / 2, phi.z / 2});
  return quat_from_axis_angle((Real(1) / angle) * phi, angle);
}

// The left Jacobian of SO(3) applied to phi's rate: the angular velocity (in phi's frame) of
// exp(phi) as phi moves, J_l(phi) = I + (1 - cos t) / t^2 [phi] + (t - sin t) / t^3 [phi]^2, the
// inverse of math.h's rotation_vector_rate_direction.
Vec3 RotationVectorVelocity(Vec3 phi, Vec3 phi_rate) {
  const Real t2 = dot(phi, phi);
  Real a, b;
  if (t2 < Real(1e-4)) {
    a = Real(0.5) - t2 / Real(24);
    b = Real(1) / Real(6) - t2 / Real(120);
  } else {
    const Real t = std::sqrt(t2);
    a = (Real(1) - std::cos(t)) / t2;
    b = (t - std::sin(t)) / (t2 * t);
  }
  const Vec3 pxr = cross(phi, phi_rate);
  return phi_rate + a * pxr + b * cross(phi, pxr);
}

// A body's pose and the velocity field of its motion: v(x) = linear + angular x (x - origin).
struct BodyMotion {
  Pose pose{{}, {1, 0, 0, 0}};
  Vec3 linear, angular;  // of the body-frame origin, world frame
  Vec3 VelocityAt(Vec3 x) const { return linear + cross(angular, x - pose.pos); }
};

BodyMotion LoadMotion(const BodyState& s, int body) {
  BodyMotion m;
  m.pose.pos = load3(&s.pose[7 * body]);
  m.pose.quat = quat_normalized(load_quat(&s.pose[7 * body + 3]));
  m.linear = load3(&s.velocity[6 * body]);
  m.angular = load3(&s.velocity[6 * body + 3]);
  return m;
}

// The child's motion from its parent's through joint j at coordinates `position` (the joint's
// own, reference removed except for a ball's quaternion) and DOF velocities `rate`.
BodyMotion ChildMotion(const JointDesc& joint, const Pose& parent_frame, const BodyMotion& parent,
                       const Real* position, const Real* rate) {
  // the joint frames in the world: the parent's, then the child's through the joint's motion,
  // a rotation `turn` and a translation `shift` (parent joint frame)
  const auto [anchor_p, frame_p] = compose(parent.pose, parent_frame);
  Quat turn{1, 0, 0, 0};
  Vec3 shift;
  const std::vector<int> axes = JointDofAxes(joint);
  Vec3 phi, phi_rate;     // kGeneric's rotation vector and its rate
  Vec3 a2_local, offset;  // kUniversal's second axis and anchor offset (child joint frame)
  switch (joint.type) {
    case JointType::kRevolute:
      turn = quat_from_axis_angle(unit_axis(0), position[0]);
      break;
    case JointType::kPrismatic:
      shift = {position[0], 0, 0};
      break;
    case JointType::kBall:
      turn = quat_normalized(load_quat(position));
      break;
    case JointType::kFixed:
      break;
    case JointType::kGeneric:
      for (int k = 0; k < static_cast<int>(axes.size()); ++k) {
        if (axes[k] < 3) {
          shift += position[k] * unit_axis(axes[k]);
        } else {
          phi += position[k] * unit_axis(axes[k] - 3);
          phi_rate += rate[k] * unit_axis(axes[k] - 3);
        }
      }
      turn = RotationFromVector(phi);
      break;
    case JointType::kUniversal: {
      a2_local = rotate_inv(joint.child_frame.quat, normalized(joint.second_axis));
      offset = rotate_inv(joint.child_frame.quat, joint.second_anchor - joint.child_frame.pos);
      const Quat first = quat_from_axis_angle(unit_axis(0), position[0]);
      const Quat second = quat_from_axis_angle(a2_local, position[1]);
      turn = first * second;
      // the second anchor where the first hinge carries it: X2 = Y2 (kernels_joint.h)
      shift = rotate(first, offset - rotate(second, offset));
      break;
    }
  }
  const Quat frame_c = frame_p * turn;
  const Vec3 anchor_c = anchor_p + rotate(frame_p, shift);
  BodyMotion child;
  child.pose.quat = quat_normalized(frame_c * conjugate(joint.child_frame.quat));
  child.pose.pos = anchor_c - rotate(child.pose.quat, joint.child_frame.pos);

  // velocity: the parent's motion carried to the child, plus the joint's relative twist
  const Vec3 x = child.pose.pos;
  Vec3 omega, linear;
  switch (joint.type) {
    case JointType::kRevolute:
      omega = rate[0] * rotate(frame_p, unit_axis(0));
      linear = cross(omega, x - anchor_c);
      break;
    case JointType::kPrismatic:
      linear = rate[0] * rotate(frame_p, unit_axis(0));
      break;
    case JointType::kBall:
      omega = rotate(frame_p, Vec3{rate[0], rate[1], rate[2]});
      linear = cross(omega, x - anchor_c);
      break;
    case JointType::kFixed:
      break;
    case JointType::kGeneric: {
      Vec3 shift_rate;
      for (int k = 0; k < static_cast<int>(axes.size()); ++k)
        if (axes[k] < 3) shift_rate += rate[k] * unit_axis(axes[k]);
      omega = rotate(frame_p, RotationVectorVelocity(phi, phi_rate));
      linear = rotate(frame_p, shift_rate) + cross(omega, x - anchor_c);
      break;
    }
    case JointType::kUniversal: {
      const Vec3 omega1 = rate[0] * rotate(frame_p, unit_axis(0));
      const Vec3 omega2 = rate[1] * rotate(frame_c, a2_local);
      const Vec3 second_anchor = anchor_c + rotate(frame_c, offset);
      omega = omega1 + omega2;
      linear = cross(omega1, x - anchor_p) + cross(omega2, x - second_anchor);
      break;
    }
  }
  child.angular = parent.angular + omega;
  child.linear = parent.VelocityAt(x) + linear;
  return child;
}

}  // namespace

absl::StatusOr<BodyState> BodyStateFromJoints(const Model& model, const JointState& joints,
                                              BodyState bodies, absl::Span<const Real> mocap_pose) {
  const ModelDesc& d = model.desc();
  const int n = model.body_count();
  if (static_cast<int>(joints.position.size()) != model.joint_position_count() ||
      static_cast<int>(joints.velocity.size()) != model.joint_dof_count()) {
    return absl::InvalidArgumentError(
        absl::StrCat("joint state needs ", model.joint_position_count(), " positions and ",
                     model.joint_dof_count(), " velocities, got ", joints.position.size(), " and ",
                     joints.velocity.size()));
  }
  if (static_cast<int>(bodies.pose.size()) != 7 * n ||
      static_cast<int>(bodies.velocity.size()) != 6 * n) {
    return absl::InvalidArgumentError(absl::StrCat("body state needs ", 7 * n, " pose and ", 6 * n,
                                                   " velocity values, got ", bodies.pose.size(),
                                                   " and ", bodies.velocity.size()));
  }
  if (!mocap_pose.empty() && static_cast<int>(mocap_pose.size()) != 7 * model.mocap_count()) {
    return absl::InvalidArgumentError(absl::StrCat("mocap poses need ", 7 * model.mocap_count(),
                                                   " values, got ", mocap_pose.size()));
  }
  for (int j = 0; j < model.joint_count(); ++j) {
    const JointDesc& joint = d.joints[j];
    const int q0 = model.joint_position_offset()[j], v0 = model.joint_dof_offset()[j];
    auto bad = [&](const char* what) {
      return absl::InvalidArgumentError(absl::StrCat("joint ", j, " ('", joint.name, "'): ", what));
    };
    for (int k = 0; k < JointPositionCount(joint); ++k)
      if (!std::isfinite(joints.position[q0 + k])) return bad("position is not finite");
    for (int k = 0; k < JointDofCount(joint); ++k)
      if (!std::isfinite(joints.velocity[v0 + k])) return bad("velocity is not finite");
    if (joint.type == JointType::kBall &&
        !(quat_norm(load_quat(&joints.position[q0])) > Real(1e-9))) {
      return bad("quaternion is zero");
    }
  }

  // parents first: a body no joint moves is placed; a joint whose parent is places its child
  std::vector<char> placed(n, 1);
  for (const JointDesc& joint : d.joints) placed[joint.child] = 0;
  std::vector<Real> position(4);
  for (bool progress = true; progress;) {
    progress = false;
    for (int j = 0; j < model.joint_count(); ++j) {
      const JointDesc& joint = d.joints[j];
      if (placed[joint.child] || (joint.parent != kWorldBody && !placed[joint.parent])) continue;
      const int q0 = model.joint_position_offset()[j], v0 = model.joint_dof_offset()[j];
      const int count = JointPositionCount(joint);
      position.assign(joints.position.begin() + q0, joints.position.begin() + q0 + count);
      if (joint.type != JointType::kBall)
        for (Real& p : position) p -= joint.reference;
      BodyMotion parent =
          joint.parent == kWorldBody ? BodyMotion{} : LoadMotion(bodies, joint.parent);
      if (joint.parent_mocap >= 0) {  // a mocap body: where it is, at rest
        const int m = joint.parent_mocap;
        parent.pose = mocap_pose.empty()
                          ? d.mocap_bodies[m].pose
                          : Pose{load3(&mocap_pose[7 * m]), load_quat(&mocap_pose[7 * m + 3])};
      }
      const BodyMotion child = ChildMotion(joint, model.joint_parent_frame()[j], parent,
                                           position.data(), joints.velocity.data() + v0);
      store3(&bodies.pose[7 * joint.child], child.pose.pos);
      store_quat(&bodies.pose[7 * joint.child + 3], child.pose.quat);
      store6(&bodies.velocity[6 * joint.child], {child.linear, child.angular});
      placed[joint.child] = 1;
      progress = true;
    }
  }
  return bodies;
}

// A spatial tendon's length and rate (the kernels' path, kernels_tendon_path.h) at body
// frames `bodies` (poses and velocities of the body frames' origins).
absl::StatusOr<std::pair<Real, Real>> SpatialTendonState(const Model& model, int tendon,
                                                         const BodyState& bodies) {
  const ModelDesc& desc = model.desc();
  const int count = model.body_count();
  if (tendon < 0 || tendon >= model.tendon_count() || desc.tendons[tendon].path.empty() ||
      static_cast<int>(bodies.pose.size()) != 7 * count ||
      static_cast<int>(bodies.velocity.size()) != 6 * count)
    return absl::InvalidArgumentError(absl::StrCat("tendon ", tendon, " has no path to read"));
  // the bodies' centres of mass and twists there, as the kernels hold them
  std::vector<Real> q(7 * count), u(6 * count);
  for (int b = 0; b < count; ++b) {
    const Quat rot{bodies.pose[7 * b + 3], bodies.pose[7 * b + 4], bodies.pose[7 * b + 5],
                   bodies.pose[7 * b + 6]};
    const Vec3 lever = rotate(rot, desc.bodies[b].com);
    const Vec3 com = load3(&bodies.pose[7 * b]) + lever;
    const Vec3 angular = load3(&bodies.velocity[6 * b + 3]);
    const Vec3 linear = load3(&bodies.velocity[6 * b]) + cross(angular, lever);
    for (int i = 0; i < 3; ++i) {
      q[7 * b + i] = com[i];
      u[6 * b + i] = linear[i];
      u[6 * b + 3 + i] = angular[i];
    }
    for (int i = 0; i < 4; ++i) q[7 * b + 3 + i] = bodies.pose[7 * b + 3 + i];
  }
  const TendonPathLayout path = LayTendonPath(desc, desc.tendons[tendon]);
  const kernels::TendonLength length = kernels::spatial_tendon_length(path.view(), q.data(), true);
  Real rate = 0;
  for (int side = 0; side < 4; ++side) {
    const int b = path.sides[side];
    if (b >= 0) rate += dot(length.jac[side], load6(&u[6 * b]));
  }
  return std::make_pair(length.value, rate);
}

}  // namespace axion
