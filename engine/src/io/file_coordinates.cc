// The file's own joint coordinates of a world's state (FileJointCoordinates, mjcf.h): the
// inverse of the keyframes' kinematics (mjcf.cc, ParseKeyframes), so that a state read back
// in MuJoCo's qpos and qvel compares with libmujoco's, merged hinges included.
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "axion/mjcf.h"

namespace axion {
namespace {

using Kind = ImportResult::JointKind;

// A body's pose and velocity (origin and spin) from a BodyState; the world for kWorldBody.
struct Motion {
  Pose pose{{}, {1, 0, 0, 0}};
  Vec3 linear, angular;
};
Motion BodyMotion(const BodyState& s, int body) {
  if (body == kWorldBody) return {};
  Motion m;
  m.pose.pos = load3(&s.pose[7 * body]);
  m.pose.quat = load_quat(&s.pose[7 * body + 3]);  // unit, as the engine keeps it
  m.linear = load3(&s.velocity[6 * body]);
  m.angular = load3(&s.velocity[6 * body + 3]);
  return m;
}

// Angles theta with R(e_1, theta_1) ... R(e_k, theta_k) = turn (the joint frame's relative
// rotation), for k <= 3 orthonormal axes e_i, by Gauss-Newton from `theta` (Axion's rotation
// vector components, which agree to second order): MuJoCo's hinges in their order. With two
// hinges Axion's body may lie off their surface by second-order terms; then the nearest.
void SolveHingeAngles(const std::vector<Vec3>& axes, Quat turn, std::vector<Real>* theta) {
  const int k = static_cast<int>(axes.size());
  auto rotation = [&](const std::vector<Real>& t) {
    Quat q{1, 0, 0, 0};
    for (int i = 0; i < k; ++i) q = q * quat_from_axis_angle(axes[i], t[i]);
    return q;
  };
  for (int iteration = 0; iteration < 30; ++iteration) {
    // residual: the rotation left, as a rotation vector in the joint frame
    const Quat now = rotation(*theta);
    const Vec3 r = quat_log(turn * conjugate(now));
    if (norm(r) < Real(1e-15)) return;
    // its derivative: turning by theta_i moves the rotation about the axis where the hinges
    // before it carried it
    Vec3 columns[3];
    Quat before{1, 0, 0, 0};
    for (int i = 0; i < k; ++i) {
      columns[i] = rotate(before, axes[i]);
      before = before * quat_from_axis_angle(axes[i], (*theta)[i]);
    }
    // least squares: (J^T J) d = J^T r
    Real a[3][3] = {}, b[3] = {};
    for (int i = 0; i < k; ++i) {
      b[i] = dot(columns[i], r);
      for (int j = 0; j < k; ++j) a[i][j] = dot(columns[i], columns[j]);
    }
    Real d[3] = {};
    if (k == 1) {
      d[0] = b[0] / a[0][0];
    } else if (k == 2) {
      const Real det2 = a[0][0] * a[1][1] - a[0][1] * a[1][0];
      if (!(std::fabs(det2) > 0)) return;
      d[0] = (a[1][1] * b[0] - a[0][1] * b[1]) / det2;
      d[1] = (a[0][0] * b[1] - a[1][0] * b[0]) / det2;
    } else {
      Mat33 m;
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) m(i, j) = a[i][j];
      if (!(std::fabs(det(m)) > 0)) return;
      const Vec3 x = inverse(m) * Vec3{b[0], b[1], b[2]};
      d[0] = x.x, d[1] = x.y, d[2] = x.z;
    }
    Real step = 0;
    for (int i = 0; i < k; ++i) {
      (*theta)[i] += d[i];
      step = std::max(step, std::fabs(d[i]));
    }
    if (step < Real(1e-15)) return;
  }
}

// Rates of those angles from the relative angular velocity (joint frame): sum_i c_i theta_i'
// = omega, c_i the axis where the hinges before it carry it (least squares for two).
std::vector<Real> HingeRates(const std::vector<Vec3>& axes, const std::vector<Real>& theta,
                             Vec3 omega) {
  const int k = static_cast<int>(axes.size());
  Vec3 columns[3];
  Quat before{1, 0, 0, 0};
  for (int i = 0; i < k; ++i) {
    columns[i] = rotate(before, axes[i]);
    before = before * quat_from_axis_angle(axes[i], theta[i]);
  }
  Mat33 m = mat33_diag({1, 1, 1});
  Vec3 b;
  for (int i = 0; i < k; ++i) {
    b[i] = dot(columns[i], omega);
    for (int j = 0; j < k; ++j) m(i, j) = dot(columns[i], columns[j]);
  }
  const Vec3 x = inverse(m) * b;
  std::vector<Real> rates(k);
  for (int i = 0; i < k; ++i) rates[i] = x[i];
  return rates;
}

}  // namespace

absl::StatusOr<FileCoordinates> FileJointCoordinates(const ImportResult& imported,
                                                     const Model& model, const BodyState& bodies,
                                                     const JointState& joints) {
  const ModelDesc& desc = model.desc();
  const size_t n = desc.bodies.size();
  if (bodies.pose.size() != 7 * n || bodies.velocity.size() != 6 * n ||
      static_cast<int>(joints.position.size()) != model.joint_position_count() ||
      static_cast<int>(joints.velocity.size()) != model.joint_dof_count()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "file coordinates: the state does not fit model '", desc.name, "' (", n, " bodies, ",
        model.joint_position_count(), " joint positions, ", model.joint_dof_count(), " DOFs)"));
  }
  FileCoordinates out;
  const std::vector<ImportResult::SourceJoint>& source = imported.source_joints;
  for (size_t s = 0; s < source.size();) {
    const ImportResult::SourceJoint& sj = source[s];
    out.position_offset.push_back(static_cast<int>(out.position.size()));
    out.velocity_offset.push_back(static_cast<int>(out.velocity.size()));
    auto close = [&] {
      out.position_count.push_back(static_cast<int>(out.position.size()) -
                                   out.position_offset.back());
      out.velocity_count.push_back(static_cast<int>(out.velocity.size()) -
                                   out.velocity_offset.back());
    };
    if (sj.kind == Kind::kFixed) {
      close();
      ++s;
      continue;
    }
    if (sj.kind == Kind::kFree || sj.joint < 0) {
      // a free body: its frame's pose, its origin's velocity and its body-frame spin
      if (sj.file_body < 0 || sj.file_body >= static_cast<int>(imported.source_bodies.size()) ||
          imported.source_bodies[sj.file_body].body == kWorldBody)
        return absl::InternalError(absl::StrCat("file joint '", sj.name, "' moves no body"));
      const ImportResult::SourceBody& sb = imported.source_bodies[sj.file_body];
      const Motion m = BodyMotion(bodies, sb.body);
      const auto [pos, quat] = compose(m.pose, sb.offset);
      const Vec3 linear = m.linear + cross(m.angular, pos - m.pose.pos);
      const Vec3 spin = rotate_inv(quat, m.angular);
      out.position.insert(out.position.end(),
                          {pos.x, pos.y, pos.z, quat.w, quat.x, quat.y, quat.z});
      out.velocity.insert(out.velocity.end(),
                          {linear.x, linear.y, linear.z, spin.x, spin.y, spin.z});
      close();
      ++s;
      continue;
    }
    const JointDesc& joint = desc.joints[sj.joint];
    const int q0 = model.joint_position_offset()[sj.joint];
    const int v0 = model.joint_dof_offset()[sj.joint];
    if (joint.type == JointType::kBall) {
      // MuJoCo's ball: its quaternion, and the spin relative to the parent in the body's frame
      const Motion child = BodyMotion(bodies, joint.child),
                   parent = BodyMotion(bodies, joint.parent);
      const Vec3 spin = rotate_inv(child.pose.quat, child.angular - parent.angular);
      for (int k = 0; k < 4; ++k) out.position.push_back(joints.position[q0 + k]);
      out.velocity.insert(out.velocity.end(), {spin.x, spin.y, spin.z});
      close();
      ++s;
      continue;
    }
    // the DOFs' joint-frame axes (generic joints: their non-locked axes, in order)
    std::vector<int> dof_axes;
    if (joint.type == JointType::kGeneric) {
      for (int a = 0; a < 6; ++a)
        if (joint.axis_mode[a] != AxisMode::kLocked) dof_axes.push_back(a);
    }
    const bool merged_hinge = joint.type == JointType::kGeneric && sj.kind == Kind::kHinge &&
                              sj.dof < static_cast<int>(dof_axes.size()) && dof_axes[sj.dof] >= 3;
    if (!merged_hinge) {
      // one coordinate of Axion's joint: MuJoCo's own (a hinge's angle, a slide's displacement,
      // a universal joint's two hinges), or a URDF joint's
      const int count = sj.kind == Kind::kPlanar ? 3 : 1;
      for (int k = 0; k < count; ++k) {
        out.position.push_back(joints.position[q0 + sj.dof + k]);
        out.velocity.push_back(joints.velocity[v0 + sj.dof + k]);
      }
      close();
      ++s;
      continue;
    }
    // MuJoCo's hinges merged into one generic joint, in their file order: their angles from the
    // joint frames' relative rotation, their rates from the relative spin
    size_t end = s;
    std::vector<Vec3> axes;
    std::vector<Real> theta;
    while (end < source.size() && source[end].joint == sj.joint) {
      const int a = dof_axes[source[end].dof];
      axes.push_back(unit_axis(a - 3));
      theta.push_back(joints.position[q0 + source[end].dof]);
      ++end;
    }
    const Motion child = BodyMotion(bodies, joint.child), parent = BodyMotion(bodies, joint.parent);
    const Quat frame_parent = parent.pose.quat * model.joint_parent_frame()[sj.joint].quat;
    const Quat frame_child = child.pose.quat * joint.child_frame.quat;
    SolveHingeAngles(axes, conjugate(frame_parent) * frame_child, &theta);
    const std::vector<Real> rates =
        HingeRates(axes, theta, rotate_inv(frame_parent, child.angular - parent.angular));
    for (size_t i = 0; i < axes.size(); ++i) {
      if (i > 0) {
        out.position_offset.push_back(static_cast<int>(out.position.size()));
        out.velocity_offset.push_back(static_cast<int>(out.velocity.size()));
      }
      out.position.push_back(theta[i]);
      out.velocity.push_back(rates[i]);
      close();
    }
    s = end;
  }
  return out;
}

absl::StatusOr<FileCoordinates> InitialFileCoordinates(const ImportResult& imported,
                                                       const Model& model) {
  const ModelDesc& desc = model.desc();
  BodyState bodies;
  for (const BodyDesc& body : desc.bodies) {
    const Pose& p = body.pose;
    bodies.pose.insert(bodies.pose.end(),
                       {p.pos.x, p.pos.y, p.pos.z, p.quat.w, p.quat.x, p.quat.y, p.quat.z});
  }
  bodies.velocity.assign(6 * desc.bodies.size(), 0);
  JointState joints;
  joints.position.assign(static_cast<size_t>(model.joint_position_count()), 0);
  joints.velocity.assign(static_cast<size_t>(model.joint_dof_count()), 0);
  return FileJointCoordinates(imported, model, bodies, joints);
}

}  // namespace axion
