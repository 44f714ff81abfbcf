// Joint kinematics and joint constraint rows (maximal coordinates: every body keeps 6 DOF and
// joints remove DOF through bilateral rows; limits are unilateral rows, drives compliant rows).
#pragma once

#include "kernels_common.h"
#include "kernels_tendon_path.h"

namespace axion::kernels {

/// Two hinges in series (JointType::kUniversal), seen from the joint frames: the first turns
/// the child about the parent frame's x axis a1 by theta1, the second about the child's axis a2
/// (joint_second_axis, child joint frame) by theta2, so q_rel = R(x, theta1) R(a2, theta2).
///   theta1: the turn of a2 about a1, read in the parent joint frame;
///   theta2: the turn left once theta1 is undone, R(a2, theta2) = R(x, -theta1) q_rel.
/// With d = a1 . a2 (world), the relative angular velocity w_rel = a1 theta1' + a2 theta2'
/// (its component along a1 x a2 is held by the alignment row), so
///   theta1' = k1 . w_rel,  k1 = (a1 - d a2) / (1 - d^2);  theta2' = k2 . w_rel,  k2 likewise.
struct UniversalAngles {
  Real theta1, theta2;
  Vec3 axis1, axis2;  // world
  Vec3 rate1, rate2;  // k1, k2 (world)
};

// Of joint `joint` with world-frame joint frames frame_parent and frame_child.
AXION_HD UniversalAngles universal_angles(const BatchView& v, int joint, Quat frame_parent,
                                          Quat frame_child) {
  UniversalAngles u;
  const Vec3 a2_local = load3(v.joint_second_axis + 3 * joint);
  u.axis1 = rotate(frame_parent, unit_axis(0));
  u.axis2 = rotate(frame_child, a2_local);
  const Vec3 w = rotate_inv(frame_parent, u.axis2);  // R(x, theta1) a2_local
  u.theta1 = std::atan2(a2_local.y * w.z - a2_local.z * w.y, a2_local.y * w.y + a2_local.z * w.z);
  const Quat second =
      quat_from_axis_angle(unit_axis(0), -u.theta1) * (conjugate(frame_parent) * frame_child);
  const Vec3 b = normalized(cross(a2_local, unit_axis(0)));  // any direction normal to a2
  const Vec3 b_turned = rotate(second, b);
  u.theta2 = std::atan2(dot(a2_local, cross(b, b_turned)), dot(b, b_turned));
  const Real d = dot(u.axis1, u.axis2);
  const Real inv = Real(1) / (Real(1) - d * d);
  u.rate1 = inv * (u.axis1 - d * u.axis2);
  u.rate2 = inv * (u.axis2 - d * u.axis1);
  return u;
}

// World-frame joint frames of joint j at configuration q (a body_q-shaped array).
struct JointFrames {
  Vec3 anchor_parent, anchor_child;  // joint frame origins, world (m)
  Vec3 lever_parent, lever_child;    // from each body's COM to its anchor, world (m)
  Quat frame_parent, frame_child;    // joint frame rotations, world
  UniversalAngles universal{};       // kUniversal joints only
  // at the iterate (joint_frames_at_iterate), joints whose angular axes are components of the
  // relative rotation's vector (joint_has_rotation_vector): phi = log(frame_p^-1 frame_c) and its
  // rate coefficient (math.h), which each angular DOF and locked angular axis of the joint
  // reads; has_log false elsewhere (computed on use)
  bool has_log = false;
  Vec3 log_phi;
  Real log_rate_coefficient = 0;
};

// The relative rotation's vector phi = log(frame_p^-1 frame_c) of joint frames f: kept at the
// iterate (has_log), computed otherwise.
AXION_HD Vec3 joint_rotation_vector(const JointFrames& f) {
  return f.has_log ? f.log_phi : quat_log(conjugate(f.frame_parent) * f.frame_child);
}

// Whether joint j's angular coordinates (its DOFs', its locked axes') are components of its
// rotation vector (joint_frames' log_phi): all but a hinge's and a universal joint's, which
// take their angles from atan2.
AXION_HD bool joint_has_rotation_vector(const BatchView& v, int joint) {
  const int type = v.joint_type[joint];
  return type != static_cast<int32_t>(JointType::kRevolute) &&
         type != static_cast<int32_t>(JointType::kUniversal);
}

AXION_HD JointFrames joint_frames(const BatchView& v, int joint, const Real* q) {
  JointFrames f;
  int parent = v.joint_parent[joint], child = v.joint_child[joint];
  Quat rot_p = body_rotation(q, parent), rot_c = body_rotation(q, child);
  f.lever_parent = rotate(rot_p, load3(v.joint_parent_pos + 3 * joint));
  f.lever_child = rotate(rot_c, load3(v.joint_child_pos + 3 * joint));
  f.anchor_parent = body_position(q, parent) + f.lever_parent;
  f.anchor_child = body_position(q, child) + f.lever_child;
  f.frame_parent = rot_p * load_quat(v.joint_parent_quat + 4 * joint);
  f.frame_child = rot_c * load_quat(v.joint_child_quat + 4 * joint);
  if (v.joint_type[joint] == static_cast<int32_t>(JointType::kUniversal))
    f.universal = universal_angles(v, joint, f.frame_parent, f.frame_child);
  return f;
}

// joint_frame's layout: anchor_parent, anchor_child, lever_parent, lever_child (3 each),
// frame_parent, frame_child (w, x, y, z each), then a universal joint's theta1, theta2, axis1,
// axis2, rate1, rate2, or the other joints' log_phi and log_rate_coefficient.
inline constexpr int kJointFrameWidth = 34;
AXION_HD void store_joint_frames(const BatchView& v, int joint, const JointFrames& f) {
  Real* out = v.joint_frame + kJointFrameWidth * joint;
  store3(out, f.anchor_parent);
  store3(out + 3, f.anchor_child);
  store3(out + 6, f.lever_parent);
  store3(out + 9, f.lever_child);
  store_quat(out + 12, f.frame_parent);
  store_quat(out + 16, f.frame_child);
  if (f.has_log) {
    store3(out + 20, f.log_phi);
    out[23] = f.log_rate_coefficient;
  }
  if (v.joint_type[joint] != static_cast<int32_t>(JointType::kUniversal)) return;
  const UniversalAngles& u = f.universal;
  out[20] = u.theta1;
  out[21] = u.theta2;
  store3(out + 22, u.axis1);
  store3(out + 25, u.axis2);
  store3(out + 28, u.rate1);
  store3(out + 31, u.rate2);
}

/// Per joint, at each evaluation of the iterate q+: its frames (and a universal joint's angles,
/// a generic or ball joint's rotation vector), which the DOFs' coordinates and the joint's rows
/// then read instead of each building them again (a universal joint's 2 DOFs and 4 rows took
/// its two atan2 six times; a humanoid hip's 3 DOFs its log and rate coefficient three times).
AXION_HD void joint_evaluate_frames(const BatchView& v, int joint) {
  JointFrames f = joint_frames(v, joint, v.body_q);
  if (joint_has_rotation_vector(v, joint)) {
    f.log_phi = joint_rotation_vector(f);
    f.log_rate_coefficient = rotation_vector_rate_coefficient(f.log_phi);
    f.has_log = true;
  }
  store_joint_frames(v, joint, f);
}

// The joint's frames at q+ from joint_evaluate_frames.
AXION_HD JointFrames joint_frames_at_iterate(const BatchView& v, int joint) {
  const Real* in = v.joint_frame + kJointFrameWidth * joint;
  JointFrames f;
  f.anchor_parent = load3(in);
  f.anchor_child = load3(in + 3);
  f.lever_parent = load3(in + 6);
  f.lever_child = load3(in + 9);
  f.frame_parent = load_quat(in + 12);
  f.frame_child = load_quat(in + 16);
  if (joint_has_rotation_vector(v, joint)) {
    f.has_log = true;
    f.log_phi = load3(in + 20);
    f.log_rate_coefficient = in[23];
  }
  if (v.joint_type[joint] != static_cast<int32_t>(JointType::kUniversal)) return f;
  UniversalAngles& u = f.universal;
  u.theta1 = in[20];
  u.theta2 = in[21];
  u.axis1 = load3(in + 22);
  u.axis2 = load3(in + 25);
  u.rate1 = load3(in + 28);
  u.rate2 = load3(in + 31);
  return f;
}

// A scalar joint coordinate (displacement or angle along joint-frame axis 0..5), its value
// (without reference offset or unwrapping) and Jacobian blocks for child and parent.
struct AxisCoordinate {
  Real value;
  Vec6 jac_child, jac_parent;
};

/// Linear axis k (0..2): d = (p_c - p_p) . e_k, e_k the parent joint-frame axis.
///   dd/dt = v_c.e + w_c.(r_c x e) - v_p.e - w_p.((r_p + (p_c - p_p)) x e)
/// Angular axis k (3..5), revolute: twist angle of the child frame about the hinge axis,
///   theta = 2 atan2(q_rel.x, q_rel.w), q_rel = frame_p^-1 frame_c;  dtheta/dt = (w_c - w_p).a
/// Angular axis k, other joints: component k of the rotation vector phi = log(q_rel) in the
///   parent joint frame; dphi/dt = J_l^-1(phi) w_rel, so the Jacobian is (w_c - w_p).e with
///   e = frame_p J_l^-T(phi) e_k (rotation_vector_rate_direction). Taking e = e_k instead, exact
///   only at q_rel = identity, leaves Newton converging linearly on a shoulder turned by 1 rad.
AXION_HD AxisCoordinate joint_axis_coordinate(const BatchView& v, int joint, int axis,
                                              const JointFrames& f) {
  AxisCoordinate out;
  if (axis < 3) {
    Vec3 e = rotate(f.frame_parent, unit_axis(axis));
    Vec3 d = f.anchor_child - f.anchor_parent;
    out.value = dot(d, e);
    out.jac_child = {e, cross(f.lever_child, e)};
    out.jac_parent = {-e, -cross(f.lever_parent + d, e)};
    return out;
  }
  if (v.joint_type[joint] == static_cast<int32_t>(JointType::kUniversal)) {
    // axis 3: the first hinge's angle, axis 4: the second's
    const UniversalAngles& u = f.universal;
    Vec3 rate = axis == 3 ? u.rate1 : u.rate2;
    out.value = wrap_angle(axis == 3 ? u.theta1 : u.theta2);
    out.jac_child = {{}, rate};
    out.jac_parent = {{}, -rate};
    return out;
  }
  Vec3 e;
  if (v.joint_type[joint] == static_cast<int32_t>(JointType::kRevolute)) {
    Quat rel = conjugate(f.frame_parent) * f.frame_child;
    out.value = Real(2) * std::atan2(rel.x, rel.w);
    e = rotate(f.frame_child, unit_axis(0));
  } else {
    const Vec3 phi = joint_rotation_vector(f);
    const Real c = f.has_log ? f.log_rate_coefficient : rotation_vector_rate_coefficient(phi);
    out.value = phi[axis - 3];
    e = rotate(f.frame_parent, rotation_vector_rate_direction(phi, c, unit_axis(axis - 3)));
  }
  out.value = wrap_angle(out.value);
  out.jac_child = {{}, e};
  out.jac_parent = {{}, -e};
  return out;
}

AXION_HD int dof_qpos_index(const BatchView& v, int dof) {
  int joint = v.dof_joint[dof];
  return v.joint_qpos_offset[joint] + (dof - v.joint_dof_offset[joint]);
}

// Coordinate of a DOF as users see it: reference offset added, angles unwrapped continuously
// from the coordinate written back at the end of the previous step.
AXION_HD AxisCoordinate dof_coordinate(const BatchView& v, int dof, const JointFrames& f) {
  int joint = v.dof_joint[dof];
  int axis = v.dof_axis[dof];
  AxisCoordinate c = joint_axis_coordinate(v, joint, axis, f);
  c.value += v.joint_reference[joint];
  // a ball joint's rotation vector lies in the ball |phi| <= pi; its positions are a quaternion
  if (axis >= 3 && v.joint_type[joint] != static_cast<int32_t>(JointType::kBall)) {
    Real previous = v.qpos[dof_qpos_index(v, dof)];
    c.value = previous + wrap_angle(c.value - previous);
  }
  return c;
}

AXION_HD void store_coordinate_row(const BatchView& v, int row, int joint, Real sign,
                                   const AxisCoordinate& c) {
  // Row body a is the child, body b the parent (fixed when the rows were laid out).
  store6(v.row_jac_a + 6 * row, {sign * c.jac_child.lin, sign * c.jac_child.ang});
  store6(v.row_jac_b + 6 * row, {sign * c.jac_parent.lin, sign * c.jac_parent.ang});
}

// The second hinge's anchor as the child carries it (X2) and as the first hinge does (Y2).
AXION_HD void universal_second_anchors(const BatchView& v, int joint, const JointFrames& f,
                                       const UniversalAngles& u, Vec3* on_child, Vec3* on_parent) {
  const Vec3 offset = load3(v.joint_second_offset + 3 * joint);
  *on_child = f.anchor_child + rotate(f.frame_child, offset);
  *on_parent = f.anchor_parent +
               rotate(f.frame_parent, rotate(quat_from_axis_angle(unit_axis(0), u.theta1), offset));
}

/// Rows of a universal joint (see universal_angles); returns c, stores J (and levers).
/// Anchor rows (world axis e_i, 3 rows): the second hinge's anchor, X2 on the child, meets the
/// point Y2 where the first hinge carries it, Y2 = P1 + frame_p R(x, theta1) p2 (P1 the first
/// anchor on the parent, p2 the anchors' offset):
///   c = (X2 - Y2) . e_i,  s_i = e_i . (a1 x (Y2 - P1)),
///   J = [ e_i, r_c x e_i - s_i k1 | -e_i, -(r_p x e_i) + s_i k1 ]  (r_c, r_p: COMs to X2, Y2)
/// Alignment row (1 row): the angle between the axes is fixed,
///   c = a1 . a2 - x . a2_local,  J = [ 0, a2 x a1 | 0, a1 x a2 ].
AXION_HD Real universal_row(const BatchView& v, int row, int joint, int axis, const JointFrames& f,
                            bool velocity_level) {
  const UniversalAngles& u = f.universal;
  if (v.row_kind[row] == kRowAxisAlign) {
    Vec3 a2xa1 = cross(u.axis2, u.axis1);
    store_row_jacobian(v, row, {}, a2xa1, {}, -a2xa1);
    store_row_levers(v, row, {}, {});
    return dot(u.axis1, u.axis2) - load3(v.joint_second_axis + 3 * joint).x;
  }
  const Vec3 e = unit_axis(axis);
  Vec3 x2, y2;
  universal_second_anchors(v, joint, f, u, &x2, &y2);
  const Vec3 lever_child = f.lever_child + (x2 - f.anchor_child);
  const Vec3 lever_parent = f.lever_parent + (y2 - f.anchor_parent);
  const Real s = dot(e, cross(u.axis1, y2 - f.anchor_parent));
  store_row_jacobian(v, row, e, cross(lever_child, e) - s * u.rate1, -e,
                     -cross(lever_parent, e) + s * u.rate1);
  if (!velocity_level)
    store_row_levers(v, row, lever_child, lever_parent);
  else
    store_row_levers(v, row, {}, {});
  return dot(x2 - y2, e);
}

/// Per DOF, at each evaluation of the iterate q+: the coordinate as users see it and its
/// Jacobian (dof_coordinate), which the DOF's limit and drive rows then read instead of each
/// evaluating the joint's frames and angles again.
AXION_HD void dof_evaluate(const BatchView& v, int dof) {
  AxisCoordinate c = dof_coordinate(v, dof, joint_frames_at_iterate(v, v.dof_joint[dof]));
  v.dof_coord[dof] = c.value;
  store6(v.dof_coord_jac + 12 * dof, c.jac_child);
  store6(v.dof_coord_jac + 12 * dof + 6, c.jac_parent);
}

// The DOF's coordinate at q+ from dof_evaluate.
AXION_HD AxisCoordinate dof_coordinate_at_iterate(const BatchView& v, int dof) {
  return {v.dof_coord[dof], load6(v.dof_coord_jac + 12 * dof),
          load6(v.dof_coord_jac + 12 * dof + 6)};
}

// Evaluates bilateral joint row `row` at the current iterate: Jacobian, residual, compliance.
AXION_HD void joint_bilateral_row(const BatchView& v, int row, const WorldParams& p) {
  int joint = v.row_joint[row];
  int axis = v.row_axis[row];
  bool velocity_level = p.joint_formulation == static_cast<int32_t>(Formulation::kVelocity);
  // Position level evaluates c and J at the iterate q+ (J is then the exact derivative of
  // c(q+(u))/h up to the quaternion map); velocity level at q- (seed 000).
  JointFrames fc =
      velocity_level ? joint_frames(v, joint, v.body_q_prev) : joint_frames_at_iterate(v, joint);
  const JointFrames& fj = fc;
  Real c = 0;
  if (v.joint_type[joint] == static_cast<int32_t>(JointType::kUniversal)) {
    c = universal_row(v, row, joint, axis, fc, velocity_level);
  } else {
    switch (v.row_kind[row]) {
      case kRowAnchor: {
        /// Anchor coincidence along world axis i (seed 004, 3 rows):
        ///   c = (p_c - p_p) . e_i
        ///   J = [ e_i, r_c x e_i | -e_i, -(r_p x e_i) ]   (child | parent)
        Vec3 e = unit_axis(axis);
        c = dot(fc.anchor_child - fc.anchor_parent, e);
        store_row_jacobian(v, row, e, cross(fj.lever_child, e), -e, -cross(fj.lever_parent, e));
        if (!velocity_level)
          store_row_levers(v, row, fj.lever_child, fj.lever_parent);
        else
          store_row_levers(v, row, {}, {});
        break;
      }
      case kRowAxisAlign: {
        /// Hinge axis alignment (seed 004, 2 rows): the child's hinge axis a stays perpendicular
        /// to the parent frame's axes b_1, b_2:
        ///   c = a . b_i,   J = [ 0, a x b_i | 0, -(a x b_i) ]
        c = dot(rotate(fc.frame_child, unit_axis(0)), rotate(fc.frame_parent, unit_axis(axis)));
        Vec3 axb =
            cross(rotate(fj.frame_child, unit_axis(0)), rotate(fj.frame_parent, unit_axis(axis)));
        store_row_jacobian(v, row, {}, axb, {}, -axb);
        store_row_levers(v, row, {}, {});
        break;
      }
      case kRowLinearLock:
      case kRowAngularLock: {
        /// Locked joint-frame axis: c = coordinate along the axis (see joint_axis_coordinate).
        AxisCoordinate coord = joint_axis_coordinate(v, joint, axis, fc);
        c = coord.value;
        store_coordinate_row(v, row, joint, Real(1), coord);
        bool linear = axis < 3 && !velocity_level;  // velocity-level J is fixed at q-
        store_row_levers(v, row, linear ? fj.lever_child : Vec3{},
                         linear ? fj.lever_parent + (fj.anchor_child - fj.anchor_parent) : Vec3{});
        break;
      }
      default:
        break;
    }
  }
  Real h = v.world_step_length[v.row_world[row]];
  Real compliance = v.joint_compliance[joint] / (h * h);
  Real lambda = v.row_lambda[row];
  v.row_compliance[row] = compliance;
  if (velocity_level) {
    // R = J u + Upsilon c(q-)/h + C lambda  (Baumgarte)
    v.row_residual[row] =
        row_velocity(v, row, v.body_u) + p.baumgarte * c / h + compliance * lambda;
  } else {
    // R = c(q+)/h + C lambda  (position level: dR/du = J since dq+/du = h G)
    v.row_residual[row] = c / h + compliance * lambda;
  }
}

/// A limit row's unilateral equation once its Jacobian is stored, from its gap c >= 0: position
/// level c(q+)/h; velocity level J u + c(q-)/h when open (speculative), J u + Upsilon c(q-)/h
/// when violated. Fischer-Burmeister weighs the gap by the effective mass the stop meets, the
/// bodies' (J M^-1 J^T)^-1 plus the DOF's armature, which moves with them: a light link on a
/// heavy rotor (1e-9 kg m^2 against 0.75) weighed by its own inertia alone put the gap 1e9 below
/// the impulse, and Newton lost the stop.
AXION_HD void store_limit_row(const BatchView& v, int row, Real c, bool velocity_level,
                              const WorldParams& p, Real armature, Real inv_mass) {
  const Real h = v.world_step_length[v.row_world[row]];
  Real c_velocity;
  if (velocity_level) {
    const Real correction = c > 0 ? c / h : p.baumgarte * c / h;
    c_velocity = row_velocity(v, row, v.body_u) + correction;
  } else {
    c_velocity = c / h;
  }
  store_unilateral_row(v, row, c_velocity, Real(1) / inv_mass + armature, p.fb_epsilon);
}
// ... with the row's J M^-1 J^T from its stored Jacobian.
AXION_HD void store_limit_row(const BatchView& v, int row, Real c, bool velocity_level,
                              const WorldParams& p, Real armature) {
  const Real inv_mass = row_inv_effective_mass(v, v.row_body_a[row], load6(v.row_jac_a + 6 * row),
                                               v.row_body_b[row], load6(v.row_jac_b + 6 * row));
  store_limit_row(v, row, c, velocity_level, p, armature, inv_mass);
}

/// Joint limit rows (unilateral, through Fischer-Burmeister like contacts):
///   lower: c = theta - lower >= 0,  J = +J_theta;   upper: c = upper - theta >= 0, J = -J_theta
/// (store_limit_row for the equation). A DOF's two rows (lower, then upper: always a pair) are
/// evaluated together, from the lower (`row`): they share the coordinate and J M^-1 J^T, which
/// the opposite sign leaves bit for bit the same. `write`: kPairedRows (both) or the one row
/// to write (row_evaluate says which backend does which).
AXION_HD void joint_limit_rows(const BatchView& v, int row, const WorldParams& p, int write) {
  int dof = v.row_dof[row];
  int joint = v.dof_joint[dof];
  bool velocity_level = p.joint_formulation == static_cast<int32_t>(Formulation::kVelocity);
  AxisCoordinate coord = velocity_level
                             ? dof_coordinate(v, dof, joint_frames(v, joint, v.body_q_prev))
                             : dof_coordinate_at_iterate(v, dof);
  const Real c_lower = coord.value - v.dof_lower[dof];
  const Real c_upper = v.dof_upper[dof] - coord.value;
  const Real c[2] = {c_lower, c_upper};
  Real inv_mass = 0;
  for (int side = 0; side < 2; ++side) {
    const int r = row + side;
    if (write != kPairedRows && write != r) continue;
    store_coordinate_row(v, r, joint, side == 0 ? Real(1) : Real(-1), coord);
    store_row_levers(v, r, {}, {});
    // (the same bits from either row's Jacobian: the sign cancels)
    if (write != kPairedRows || side == 0)
      inv_mass = row_inv_effective_mass(v, v.row_body_a[r], load6(v.row_jac_a + 6 * r),
                                        v.row_body_b[r], load6(v.row_jac_b + 6 * r));
    store_limit_row(v, r, c[side], velocity_level, p, v.dof_armature[dof], inv_mass);
  }
}

/// Ball joint cone limit (unilateral, like joint_limit_rows): the relative rotation
/// q_rel = frame_p^-1 frame_c, of rotation vector phi = log(q_rel), turns by at most phi_max:
///   c = phi_max - |phi| >= 0,   J = [ 0, -e | 0, e ],   e = frame_p n,  n = phi / |phi|
/// since d|phi|/dt = n . J_l^-1(phi) w_rel = n . w_rel (n is J_l^-1's fixed axis), and n is
/// the same read in either joint frame. At |phi| = 0 the axis is undefined, and the row far
/// from its stop: any axis serves.
AXION_HD void joint_cone_limit_row(const BatchView& v, int row, const WorldParams& p) {
  const int joint = v.row_joint[row];
  const bool velocity_level = p.joint_formulation == static_cast<int32_t>(Formulation::kVelocity);
  const JointFrames f =
      velocity_level ? joint_frames(v, joint, v.body_q_prev) : joint_frames_at_iterate(v, joint);
  const Vec3 phi = joint_rotation_vector(f);
  const Real angle = norm(phi);
  const Vec3 axis = angle > Real(1e-12) ? (Real(1) / angle) * phi : unit_axis(0);
  const Vec3 e = rotate(f.frame_parent, axis);
  const Real c = v.joint_cone_limit[joint] - angle;
  store_row_jacobian(v, row, {}, -e, {}, e);
  store_row_levers(v, row, {}, {});
  store_limit_row(v, row, c, velocity_level, p, v.dof_armature[v.joint_dof_offset[joint]]);
}

/// Joint coupling row (JointCouplingDesc): the follower's coordinate y = q_f - ref_f follows the
/// polynomial p of the leader's x = q_l - ref_l (the leader's DOF is the leader slot's row_dof):
///   c = y - p(x),   J = J_f - p'(x) J_l   (J_f, J_l: the coordinates' Jacobians, dof_evaluate)
/// J_f's blocks (follower child | parent) are this row's, -p'(x) J_l's the leader slot's, except
/// where a leader body is one of the follower joint's (a gripper's two fingers on one hand):
/// that block adds to the follower's block of the same body, and the slot keeps -1 there.
/// Position level takes c and J at q+ (c / h + C lambda), velocity level at q- (Baumgarte).
AXION_HD void joint_coupling_row(const BatchView& v, int row, const WorldParams& p) {
  const int slot = row + 1;
  const int dof = v.row_dof[row], leader = v.row_dof[slot];
  const bool velocity_level = p.joint_formulation == static_cast<int32_t>(Formulation::kVelocity);
  auto coordinate = [&](int d) {
    return velocity_level ? dof_coordinate(v, d, joint_frames(v, v.dof_joint[d], v.body_q_prev))
                          : dof_coordinate_at_iterate(v, d);
  };
  const AxisCoordinate f = coordinate(dof);
  const Real* c = v.dof_coupling_poly + 5 * dof;
  Real value = c[0], slope = 0;
  Vec6 jac[4] = {f.jac_child, f.jac_parent, {}, {}};
  if (leader >= 0) {
    const AxisCoordinate l = coordinate(leader);
    const Real x = l.value - v.joint_reference[v.dof_joint[leader]];
    value = c[0] + x * (c[1] + x * (c[2] + x * (c[3] + x * c[4])));
    slope = c[1] + x * (2 * c[2] + x * (3 * c[3] + x * 4 * c[4]));
    const int leader_joint = v.dof_joint[leader];
    const int bodies[2] = {v.joint_child[leader_joint], v.joint_parent[leader_joint]};
    const Vec6 blocks[2] = {l.jac_child, l.jac_parent};
    for (int k = 0; k < 2; ++k) {
      if (bodies[k] < 0) continue;  // the static world
      const Vec6 b = {-slope * blocks[k].lin, -slope * blocks[k].ang};
      const int side = bodies[k] == v.row_body_a[row]   ? 0
                       : bodies[k] == v.row_body_b[row] ? 1
                                                        : 2 + k;
      jac[side] = {jac[side].lin + b.lin, jac[side].ang + b.ang};
    }
  }
  store6(v.row_jac_a + 6 * row, jac[0]);
  store6(v.row_jac_b + 6 * row, jac[1]);
  store6(v.row_jac_a + 6 * slot, jac[2]);
  store6(v.row_jac_b + 6 * slot, jac[3]);
  store_row_levers(v, row, {}, {});
  const Real error = f.value - v.joint_reference[v.dof_joint[dof]] - value;
  const Real h = v.world_step_length[v.row_world[row]];
  const Real compliance = v.dof_coupling_compliance[dof] / (h * h);
  v.row_compliance[row] = compliance;
  v.row_residual[row] =
      (velocity_level ? row_velocity(v, row, v.body_u) + p.baumgarte * error / h : error / h) +
      compliance * v.row_lambda[row];
}

/// A coupling's leader slot: no row of its own (its Jacobian blocks are its coupling's), so
/// lambda -> 0 on a unit diagonal, as a disabled row.
AXION_HD void joint_coupling_leader_slot(const BatchView& v, int row) {
  store_row_levers(v, row, {}, {});
  v.row_compliance[row] = 1;
  v.row_residual[row] = v.row_lambda[row];
  v.row_error[row] = 0;
}

/// Per drive row, as the step begins: its Jacobian, theta's at q-. The drive's force keeps the
/// direction it has at the start of the step, so the row adds no geometric stiffness however
/// stiff the gains (seed 000: the system matrices are evaluated at q-).
/// A ball joint's drive rows act along the parent joint frame's axes e_k instead: their rates are
/// the components of w_rel (the joint velocities users read), and the spring's torque is
/// -k phi, MuJoCo's for ball joints.
AXION_HD void joint_drive_begin_step(const BatchView& v, int row) {
  const int dof = v.row_dof[row];
  const int joint = v.dof_joint[dof];
  const JointFrames f = joint_frames(v, joint, v.body_q_prev);
  AxisCoordinate c = dof_coordinate(v, dof, f);
  if (v.joint_type[joint] == static_cast<int32_t>(JointType::kBall)) {
    const Vec3 e = rotate(f.frame_parent, unit_axis(v.dof_axis[dof] - 3));
    c.jac_child = {{}, e};
    c.jac_parent = {{}, -e};
  }
  store_coordinate_row(v, row, joint, Real(1), c);
  store_row_levers(v, row, {}, {});
}

// A drive row's servo part over the step, and the row's equation once its model part is known
// (joint_drive_row's, a tendon's): the driven coordinate's value at q+ and rate J u, the model
// part's slope and impulse, full_slope with the servo's gains added.
struct ServoDrive {
  Real stiffness, damping, kp_target, kv_target, force_min, force_max;
};
AXION_HD_INLINE void store_drive_row(const BatchView& v, int row, Real h, Real value, Real rate,
                                     Real model_slope, Real full_slope, Real model_impulse,
                                     const ServoDrive& servo) {
  const Real servo_free = -(h * (servo.stiffness * value - servo.kp_target) +
                            h * (servo.damping * rate - servo.kv_target));
  const Real servo_impulse = clamp_to(servo_free, h * servo.force_min, h * servo.force_max);
  const bool saturated = servo_impulse != servo_free;
  const Real phi = v.row_lambda[row] - model_impulse - servo_impulse;
  Real slope = saturated ? model_slope : full_slope;
  if (!(slope > Real(1e-9) * full_slope)) slope = Real(1e-9) * full_slope;
  v.row_compliance[row] = Real(1) / slope;
  v.row_residual[row] = phi / slope;
  v.row_error[row] = phi / full_slope;
}

/// Drive row: the model's spring-damper (or PD drive) and armature on a DOF, and its servo
/// actuators' PD drive bounded by their force range. Over the step the model's part applies
///   lambda_m = -[h k (theta+ - theta*) + h d (thetadot+ - v*) + a (thetadot+ - thetadot-)]
/// and the servos' part lambda_s = clamp(-[h ks theta+ - h P + h ds thetadot+ - h V], h f_min,
/// h f_max) (P, V: the servos' gain-weighted targets), with theta+ = theta(q+), thetadot+ = J u.
/// The row is phi = lambda - lambda_m - lambda_s = 0. Its derivative in u is D J, with
/// D = h^2 k + h d + a, plus h^2 ks + h ds while the servo is within its bound; dividing by D
/// gives a row with
///   dR/du = J,  C = 1/D,  R = phi / D,
/// backward Euler in the gains, hence unconditionally stable however stiff. A servo at its
/// bound with no model part left (D = 0) pins lambda to the bound: D is kept above 1e-9 of its
/// unbounded value, and the row degrades into Newton on lambda alone.
AXION_HD void joint_drive_row(const BatchView& v, int row, const WorldParams& p) {
  const int dof = v.row_dof[row];
  const Real h = v.world_step_length[v.row_world[row]];
  const Real k = v.dof_drive_stiffness[dof];
  const Real d = v.dof_drive_damping[dof];
  const Real a = v.dof_armature[dof];
  const Real ks = v.dof_servo_stiffness[dof];
  const Real ds = v.dof_servo_damping[dof];
  const Real model_slope = h * h * k + h * d + a;
  const Real servo_slope = h * h * ks + h * ds;
  const Real full_slope = model_slope + servo_slope;
  if (!(full_slope > 0)) {
    disable_row(v, row);
    return;
  }
  // theta at q+; the Jacobian at q- was stored when the step began (joint_drive_begin_step)
  const Real theta = v.dof_coord[dof];
  const Real rate = row_velocity(v, row, v.body_u);
  const Real model_impulse =
      -(h * k * (theta - v.dof_drive_position[dof]) + h * d * (rate - v.dof_drive_velocity[dof]) +
        a * (rate - v.dof_velocity_prev[dof]));
  store_drive_row(v, row, h, theta, rate, model_slope, full_slope, model_impulse,
                  {ks, ds, v.dof_servo_kp_target[dof], v.dof_servo_kv_target[dof],
                   v.dof_servo_force_min[dof], v.dof_servo_force_max[dof]});
}

// A dry-friction row's equation (below) from its box's half-width h f, its rate J u and the
// mass it moves.
AXION_HD void store_friction_loss_row(const BatchView& v, int row, Real bound, Real rate,
                                      Real mass) {
  const Real lambda = v.row_lambda[row];
  const Real trial = lambda - mass * rate;
  if (trial >= -bound && trial <= bound) {
    v.row_compliance[row] = 0;
    v.row_residual[row] = rate;
    v.row_error[row] = rate;
    return;
  }
  const Real phi = lambda - (trial > 0 ? bound : -bound);
  const Real scale = mass * Real(1e-9);
  v.row_compliance[row] = Real(1) / scale;
  v.row_residual[row] = phi / scale;
  v.row_error[row] = phi / mass;
}

/// Dry friction on a DOF (JointDesc::friction_loss f): its impulse stays in the box
/// |lambda| <= h f, and the DOF sticks (thetadot+ = J u = 0) while the box holds the impulse
/// that sticking takes; past it, the impulse is the box's edge and the DOF slides. As a
/// semismooth equation, with s the row's effective mass, phi = lambda - clamp(lambda - s J u,
/// -h f, h f) = 0: sticking, phi = s J u, and the row is J u = 0 (R = J u, C = 0); sliding,
/// phi = lambda -+ h f depends on lambda alone, and the row degrades into Newton on lambda as
/// a separated contact does (C, R scaled by 1 / (s 1e-9)). J is taken at q-, as a drive's.
AXION_HD void joint_friction_loss_row(const BatchView& v, int row) {
  const int dof = v.row_dof[row];
  const Real h = v.world_step_length[v.row_world[row]];
  const Real bound = h * v.dof_friction_loss[dof];
  const Real rate = row_velocity(v, row, v.body_u);
  const Real mass =
      Real(1) / row_inv_effective_mass(v, v.row_body_a[row], load6(v.row_jac_a + 6 * row),
                                       v.row_body_b[row], load6(v.row_jac_b + 6 * row)) +
      v.dof_armature[dof];  // the rotor moves with the DOF (see store_limit_row)
  store_friction_loss_row(v, row, bound, rate, mass);
}

// Joint coordinates (positions and velocities) of joint j from the body state.
AXION_HD void joint_write_coordinates(const BatchView& v, int joint) {
  JointFrames f = joint_frames(v, joint, v.body_q);
  int parent = v.joint_parent[joint], child = v.joint_child[joint];
  Vec6 u_c = body_twist(v.body_u, child), u_p = body_twist(v.body_u, parent);
  int first = v.joint_dof_offset[joint];
  int qpos0 = v.joint_qpos_offset[joint];
  if (v.joint_type[joint] == static_cast<int32_t>(JointType::kBall)) {
    // Ball: position is the relative quaternion, velocity the relative angular velocity in the
    // parent joint frame.
    Quat rel = conjugate(f.frame_parent) * f.frame_child;
    if (rel.w < 0) rel = {-rel.w, -rel.x, -rel.y, -rel.z};
    store_quat(v.qpos + qpos0, rel);
    Vec3 w_rel = rotate_inv(f.frame_parent, u_c.ang - u_p.ang);
    store3(v.dof_velocity + first, w_rel);
    return;
  }
  int dof_end = v.joint_dof_offset[joint + 1];
  for (int dof = first; dof < dof_end; ++dof) {
    AxisCoordinate c = dof_coordinate(v, dof, f);
    v.qpos[dof_qpos_index(v, dof)] = c.value;
    v.dof_velocity[dof] = dot(c.jac_child, u_c) + dot(c.jac_parent, u_p);
  }
}

// ---- tendons (TendonDesc) ------------------------------------------------------------------

/// A tendon row's length L, its Jacobian times `sign` stored on the row's sides. Fixed:
/// L = sum_k coef_k q_k and J = sum_k coef_k J_k, DOF k's blocks (its joint's child | parent)
/// added on the sides of those bodies (tendon_joint_side: the row's own bodies first, the first
/// DOF's joint's, then the others' as they come, two per leader slot; batch_storage.cc lays
/// them out). Spatial: the path's (spatial_tendon_length), its sides the tendon's bodies
/// (tendon_body). `start`: at q- (the drive's and dry friction's Jacobian, fixed over the step),
/// else at the iterate q+.
AXION_HD Real tendon_row_jacobian(const BatchView& v, int row, bool start, Real sign) {
  const int tendon = v.row_joint[row];
  auto side_jacobian = [&](int side) {
    return ((side & 1) ? v.row_jac_b : v.row_jac_a) + 6 * (row + (side >> 1));
  };
  store_row_levers(v, row, {}, {});
  if (v.tendon_path_count[tendon] > 0) {
    const TendonLength t = start
                               ? spatial_tendon_length(tendon_path(v, tendon), v.body_q_prev, true)
                               : tendon_at_iterate(v, tendon);
    for (int side = 0; side < 4; ++side)
      store6(side_jacobian(side), {sign * t.jac[side].lin, sign * t.jac[side].ang});
    return t.value;
  }
  for (int side = 0, sides = row_side_count(v, row); side < sides; ++side)
    store6(side_jacobian(side), Vec6{});
  Real value = 0;
  const int begin = v.tendon_joint_begin[tendon];
  for (int k = begin; k < begin + v.tendon_joint_count[tendon]; ++k) {
    const int dof = v.tendon_joint_dof[k];
    const int joint = v.dof_joint[dof];
    const AxisCoordinate c = start ? dof_coordinate(v, dof, joint_frames(v, joint, v.body_q_prev))
                                   : dof_coordinate_at_iterate(v, dof);
    const Real coef = v.tendon_joint_coef[k];
    value += coef * c.value;
    const Vec6 blocks[2] = {c.jac_child, c.jac_parent};
    for (int i = 0; i < 2; ++i) {
      const int side = v.tendon_joint_side[2 * k + i];
      if (side < 0) continue;  // the static world
      Real* j = side_jacobian(side);
      const Vec6 sum = load6(j);
      store6(j, {sum.lin + (sign * coef) * blocks[i].lin, sum.ang + (sign * coef) * blocks[i].ang});
    }
  }
  return value;
}
/// A tendon's length at the step's start q- (a damped hold's c-).
AXION_HD Real tendon_start_length(const BatchView& v, int tendon) {
  if (v.tendon_path_count[tendon] > 0)
    return spatial_tendon_length(tendon_path(v, tendon), v.body_q_prev, false).value;
  Real length = 0;
  const int begin = v.tendon_joint_begin[tendon];
  for (int k = begin; k < begin + v.tendon_joint_count[tendon]; ++k) {
    const int dof = v.tendon_joint_dof[k];
    length += v.tendon_joint_coef[k] *
              dof_coordinate(v, dof, joint_frames(v, v.dof_joint[dof], v.body_q_prev)).value;
  }
  return length;
}
/// The mass a tendon row moves along L once its Jacobian is stored: the bodies' (J M^-1 J^T)^-1
/// over its sides, plus each DOF's armature a_k / coef_k^2 (the rotor turns with the DOF, as for
/// a joint's limit and dry friction).
AXION_HD Real tendon_row_mass(const BatchView& v, int row) {
  Real inv_mass = 0;
  for (int side = 0, sides = row_side_count(v, row); side < sides; ++side) {
    const int body = row_side_body(v, row, side);
    if (body < 0) continue;
    const Vec6 j = load6(row_side_jacobian(v, row, side));
    inv_mass += dot(j, body_apply_inv_mass(v, body, j));
  }
  const int tendon = v.row_joint[row];
  Real mass = inv_mass > 0 ? Real(1) / inv_mass : Real(0);
  const int begin = v.tendon_joint_begin[tendon];
  for (int k = begin; k < begin + v.tendon_joint_count[tendon]; ++k) {
    const Real coef = v.tendon_joint_coef[k];
    mass += v.dof_armature[v.tendon_joint_dof[k]] / (coef * coef);
  }
  return mass;
}

/// Tendon limit rows (unilateral, through Fischer-Burmeister like a joint's limits):
///   lower: c = L - lower >= 0,  J = +J_L;   upper: c = upper - L >= 0,  J = -J_L
/// at position level, c(q+) / h, whatever the joints' formulation (TendonDesc).
AXION_HD void tendon_limit_row(const BatchView& v, int row, const WorldParams& p) {
  const int tendon = v.row_joint[row];
  const bool lower = v.row_kind[row] == kRowTendonLimitLower;
  const Real length = tendon_row_jacobian(v, row, false, lower ? Real(1) : Real(-1));
  const Real c = lower ? length - v.tendon_lower[tendon] : v.tendon_upper[tendon] - length;
  const Real h = v.world_step_length[v.row_world[row]];
  const Real mass = tendon_row_mass(v, row);
  if (!(mass > 0)) {
    disable_row(v, row);  // (no body moves with it: DOFs of the static world alone)
    return;
  }
  store_unilateral_row(v, row, c / h, mass, p.fb_epsilon);
}

/// Per tendon drive or dry-friction row, as the step begins: its Jacobian, L's at q- (as a
/// joint's drive row, joint_drive_begin_step: no geometric stiffness however stiff the gains).
AXION_HD_OUTLINE void tendon_begin_step(const BatchView& v, int row) {
  tendon_row_jacobian(v, row, true, 1);
}

/// Tendon drive row: its spring-damper (stiffness k, damping d, rest length L0) and its servo
/// actuators, as a joint's drive row (joint_drive_row) with L for theta and Ldot = J_L u:
///   lambda_m = -[h k (L+ - L0) + h d Ldot],  lambda_s = clamp(-[h ks L+ - h P + h ds Ldot -
///   h V], h f_min, h f_max),   phi = lambda - lambda_m - lambda_s = 0,
/// divided by D = h^2 k + h d (+ h^2 ks + h ds within the servo's bound): dR/du = J_L, C = 1/D.
AXION_HD void tendon_drive_row(const BatchView& v, int row) {
  const int tendon = v.row_joint[row];
  const Real h = v.world_step_length[v.row_world[row]];
  const Real k = v.tendon_stiffness[tendon];
  const Real d = v.tendon_damping[tendon];
  const Real ks = v.tendon_servo_stiffness[tendon];
  const Real ds = v.tendon_servo_damping[tendon];
  const Real model_slope = h * h * k + h * d;
  const Real servo_slope = h * h * ks + h * ds;
  const Real full_slope = model_slope + servo_slope;
  if (!(full_slope > 0)) {
    disable_row(v, row);
    return;
  }
  // L at q+; the Jacobian at q- was stored when the step began (tendon_begin_step)
  Real length = 0;
  if (v.tendon_path_count[tendon] > 0) length = v.tendon_length[tendon];
  const int begin = v.tendon_joint_begin[tendon];
  for (int k = begin; k < begin + v.tendon_joint_count[tendon]; ++k)
    length += v.tendon_joint_coef[k] * v.dof_coord[v.tendon_joint_dof[k]];
  const Real rate = row_velocity(v, row, v.body_u);
  const Real model_impulse = -(h * k * (length - v.tendon_spring_length[tendon]) + h * d * rate);
  store_drive_row(v, row, h, length, rate, model_slope, full_slope, model_impulse,
                  {ks, ds, v.tendon_servo_kp_target[tendon], v.tendon_servo_kv_target[tendon],
                   v.tendon_servo_force_min[tendon], v.tendon_servo_force_max[tendon]});
}

/// Dry friction along a tendon (TendonDesc::friction_loss f), as on a DOF
/// (joint_friction_loss_row) with Ldot = J_L u (J_L at q-) and the row's mass along L.
AXION_HD void tendon_friction_loss_row(const BatchView& v, int row) {
  const int tendon = v.row_joint[row];
  const Real h = v.world_step_length[v.row_world[row]];
  const Real bound = h * v.tendon_friction_loss[tendon];
  const Real rate = row_velocity(v, row, v.body_u);
  const Real mass = tendon_row_mass(v, row);
  if (!(mass > 0)) {
    disable_row(v, row);
    return;
  }
  store_friction_loss_row(v, row, bound, rate, mass);
}

/// Tendon hold row (TendonDesc::hold, MJCF <equality><tendon>): L held at L_0 (bilateral),
///   c = L - L_0 = 0,  J = J_L,
/// at position level whatever the joints' formulation, c(q+) / h + C lambda with C its
/// compliance c / h^2 (a coupling's form, joint_coupling_row). With a damping b as well, a
/// spring 1 / c and damper b along L taken implicitly, lambda = -(h / c + b) c+ + b c-
/// (c- at q-):  c+ / h + C (lambda - b c-) = 0,  C = 1 / (h (h / c + b)).
AXION_HD void tendon_hold_row(const BatchView& v, int row) {
  const int tendon = v.row_joint[row];
  const Real length = tendon_row_jacobian(v, row, false, 1);
  const Real h = v.world_step_length[v.row_world[row]];
  const Real damping = v.tendon_hold_damping[tendon];  // (0 where rigid)
  const Real c = length - v.tendon_hold_length[tendon];
  if (damping > 0) {
    const Real c_start = tendon_start_length(v, tendon) - v.tendon_hold_length[tendon];
    const Real compliance = 1 / (h * (h / v.tendon_hold_compliance[tendon] + damping));
    v.row_compliance[row] = compliance;
    v.row_residual[row] = c / h + compliance * (v.row_lambda[row] - damping * c_start);
  } else {
    const Real compliance = v.tendon_hold_compliance[tendon] / (h * h);
    v.row_compliance[row] = compliance;
    v.row_residual[row] = c / h + compliance * v.row_lambda[row];
  }
  v.row_error[row] = v.row_residual[row];
}

/// A tendon's row at the current iterate, by its kind (row_evaluate's one call for them all).
AXION_HD_OUTLINE void tendon_row(const BatchView& v, int row, const WorldParams& p) {
  switch (v.row_kind[row]) {
    case kRowTendonLimitLower:
    case kRowTendonLimitUpper:
      tendon_limit_row(v, row, p);
      break;
    case kRowTendonDrive:
      tendon_drive_row(v, row);
      break;
    case kRowTendonHold:
      tendon_hold_row(v, row);
      break;
    default:
      tendon_friction_loss_row(v, row);
      break;
  }
}

}  // namespace axion::kernels
