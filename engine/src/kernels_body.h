// Per-body and per-DOF kernels: start of step, unconstrained prediction, implicit integration.
#pragma once

#include "kernels_joint.h"

namespace axion::kernels {

// Per body: remember q-, u- and rotate the inertia into the world frame at q-. A body whose
// rotation is held to the world starts without angular velocity (a state written from outside
// may carry one; with no angular lock rows nothing else would stop it).
AXION_HD void body_begin_step(const BatchView& v, int body) {
  if (v.body_rotation_fixed[body]) {
    for (int i = 3; i < 6; ++i) v.body_u[6 * body + i] = 0;
  }
  for (int i = 0; i < 7; ++i) v.body_q_prev[7 * body + i] = v.body_q[7 * body + i];
  for (int i = 0; i < 6; ++i) v.body_u_prev[6 * body + i] = v.body_u[6 * body + i];
  Mat33 rot = quat_to_mat(body_rotation(v.body_q, body));
  Mat33 rot_t = transpose(rot);
  store33(v.body_inertia_world + 9 * body, rot * load33(v.body_inertia + 9 * body) * rot_t);
  store33(v.body_inv_inertia_world + 9 * body, rot * load33(v.body_inv_inertia + 9 * body) * rot_t);
  for (int i = 0; i < 6; ++i) v.body_jt[6 * body + i] = 0;
}

// A servo drive's terms this step, summed over the actuators on it: a DOF's (dof_servo_*) or a
// tendon's (tendon_servo_*), at one index.
struct ServoSums {
  Real *stiffness, *damping, *kp_target, *kv_target, *force_min, *force_max;
};
AXION_HD ServoSums dof_servo_sums(const BatchView& v, int dof) {
  return {v.dof_servo_stiffness + dof, v.dof_servo_damping + dof,   v.dof_servo_kp_target + dof,
          v.dof_servo_kv_target + dof, v.dof_servo_force_min + dof, v.dof_servo_force_max + dof};
}
AXION_HD ServoSums tendon_servo_sums(const BatchView& v, int tendon) {
  return {v.tendon_servo_stiffness + tendon, v.tendon_servo_damping + tendon,
          v.tendon_servo_kp_target + tendon, v.tendon_servo_kv_target + tendon,
          v.tendon_servo_force_min + tendon, v.tendon_servo_force_max + tendon};
}
// No servo: no gains, unbounded.
AXION_HD void servo_sums_reset(const ServoSums& servo) {
  *servo.stiffness = 0;
  *servo.damping = 0;
  *servo.kp_target = 0;
  *servo.kv_target = 0;
  *servo.force_min = -kUnboundedForce;
  *servo.force_max = kUnboundedForce;
}

// Per DOF: effective drive gains and targets this step (model values, then actuators), and the
// joint velocity at q-, u- (armature reference).
AXION_HD void dof_begin_step(const BatchView& v, int dof) {
  v.dof_drive_stiffness[dof] = v.dof_stiffness[dof];
  v.dof_drive_damping[dof] = v.dof_damping[dof];
  v.dof_drive_position[dof] = v.dof_target_position[dof];
  v.dof_drive_velocity[dof] = v.dof_target_velocity[dof];
  v.dof_effort[dof] = 0;
  v.dof_velocity_prev[dof] = v.dof_velocity[dof];
  servo_sums_reset(dof_servo_sums(v, dof));
}

// What an effort or servo acts on: its activation where it has dynamics (ActuatorDynamics),
// else its control.
AXION_HD Real actuator_input(const BatchView& v, int act) {
  return v.actuator_dynamics[act] != kActivationNone ? v.actuator_activation[act]
                                                     : v.actuator_ctrl[act];
}

// An effort actuator's force: gear * its input, clamped to its force range.
AXION_HD Real actuator_effort(const BatchView& v, int act) {
  const Real tau = v.actuator_gear[act] * actuator_input(v, act);
  return v.actuator_force_limited[act] != 0
             ? clamp_to(tau, v.actuator_force_min[act], v.actuator_force_max[act])
             : tau;
}

/// A tendon's length L and rate dL/dt at the state written back: a fixed tendon's from its
/// DOFs' coordinates and rates, a spatial one's from its path at the bodies' poses and twists.
struct TendonState {
  Real length, rate;
};
AXION_HD TendonState tendon_state(const BatchView& v, int tendon) {
  TendonState out{0, 0};
  if (v.tendon_path_count[tendon] > 0) {
    const TendonLength path = spatial_tendon_length(tendon_path(v, tendon), v.body_q, true);
    out.length = path.value;
    for (int side = 0; side < 4; ++side)
      out.rate += dot(path.jac[side], body_twist(v.body_u, v.tendon_body[4 * tendon + side]));
  }
  const int begin = v.tendon_joint_begin[tendon];
  for (int k = begin; k < begin + v.tendon_joint_count[tendon]; ++k) {
    const int dof = v.tendon_joint_dof[k];
    out.length += v.tendon_joint_coef[k] * v.qpos[dof_qpos_index(v, dof)];
    out.rate += v.tendon_joint_coef[k] * v.dof_velocity[dof];
  }
  return out;
}

// ---- muscles (MuscleDesc; the curves are MuJoCo's, checked against libmujoco's
// mju_muscleGain, mju_muscleBias and mju_muscleDynamics) --------------------------------------

// Guards the curves' divisions as MuJoCo's mjMINVAL does (validation keeps them apart anyway).
AXION_HD Real muscle_divisor(Real x) { return x > Real(1e-15) ? x : Real(1e-15); }

/// FL(x): 0 outside [lmin, lmax], 1 at x = 1, each side two quadratic pieces meeting halfway
/// (at a = (lmin + 1) / 2 and b = (1 + lmax) / 2) with value 1/2 and matching slopes.
AXION_HD Real muscle_length_curve(Real x, Real lmin, Real lmax) {
  if (x < lmin || x > lmax) return 0;
  const Real a = Real(0.5) * (lmin + 1), b = Real(0.5) * (1 + lmax);
  Real t;
  if (x <= a) {
    t = (x - lmin) / muscle_divisor(a - lmin);
    return Real(0.5) * t * t;
  }
  if (x <= 1) {
    t = (1 - x) / muscle_divisor(1 - a);
    return 1 - Real(0.5) * t * t;
  }
  if (x <= b) {
    t = (x - 1) / muscle_divisor(b - 1);
    return 1 - Real(0.5) * t * t;
  }
  t = (lmax - x) / muscle_divisor(lmax - b);
  return Real(0.5) * t * t;
}

/// FV(v), v the lengthening rate in units of L0 velocity_max: 0 at v <= -1, (v + 1)^2 up to 1
/// at v = 0, then rising as fvmax - (y - v)^2 / y (y = fvmax - 1) to fvmax at v >= y.
AXION_HD Real muscle_velocity_curve(Real v, Real fvmax) {
  const Real y = fvmax - 1;
  if (v <= -1) return 0;
  if (v <= 0) return (v + 1) * (v + 1);
  if (v <= y) return fvmax - (y - v) * (y - v) / muscle_divisor(y);
  return fvmax;
}

/// FP(x): 0 up to x = 1, fpmax t^2 / 2 (t = (x - 1) / (b - 1), b = (1 + lmax) / 2) up to b,
/// then fpmax (1/2 + (x - b) / (b - 1)): the stretched muscle's passive pull, linear far out.
AXION_HD Real muscle_passive_curve(Real x, Real lmax, Real fpmax) {
  if (x <= 1) return 0;
  const Real b = Real(0.5) * (1 + lmax);
  if (x <= b) {
    const Real t = (x - 1) / muscle_divisor(b - 1);
    return fpmax * Real(0.5) * t * t;
  }
  return fpmax * (Real(0.5) + (x - b) / muscle_divisor(b - 1));
}

/// A muscle's force along its length l (gear * L) at lengthening rate dl/dt and activation a:
///   f = -force (FL(x) FV(v) a + FP(x)),  x = range0 + (l - lr0) / L0,  v = (dl/dt) / (L0 vmax),
///   L0 = (lr1 - lr0) / (range1 - range0)
/// (MuJoCo's gain * act + bias with its muscle gain and bias), negative: a pull.
AXION_HD Real muscle_force(const Real* prm, Real length, Real rate, Real activation) {
  const Real optimal = (prm[kMuscleLengthRangeHigh] - prm[kMuscleLengthRangeLow]) /
                       muscle_divisor(prm[kMuscleRangeHigh] - prm[kMuscleRangeLow]);
  const Real x =
      prm[kMuscleRangeLow] + (length - prm[kMuscleLengthRangeLow]) / muscle_divisor(optimal);
  const Real speed = rate / muscle_divisor(optimal * prm[kMuscleVelocityMax]);
  const Real active = muscle_length_curve(x, prm[kMuscleLengthMin], prm[kMuscleLengthMax]) *
                      muscle_velocity_curve(speed, prm[kMuscleVelocityForceMax]);
  const Real passive = muscle_passive_curve(x, prm[kMuscleLengthMax], prm[kMusclePassiveForce]);
  return -prm[kMuscleForce] * (active * activation + passive);
}

/// da/dt = (u - a) / tau, u = clamp(ctrl, 0, 1): activating (u > a) with tau = t_act (0.5 +
/// 1.5 a), deactivating with tau = t_deact / (0.5 + 1.5 a), a clamped to [0, 1] inside tau.
AXION_HD Real muscle_activation_rate(const Real* prm, Real ctrl, Real activation) {
  const Real u = clamp_to(ctrl, Real(0), Real(1));
  const Real a = clamp_to(activation, Real(0), Real(1));
  const Real tau = u > activation ? prm[kMuscleTimeActivation] * (Real(0.5) + Real(1.5) * a)
                                  : prm[kMuscleTimeDeactivation] / (Real(0.5) + Real(1.5) * a);
  return (u - activation) / muscle_divisor(tau);
}

// The coordinate an actuator on a DOF or tendon moves and its rate: the DOF's coordinate (qpos)
// or the tendon's length, at the state written back (the step's start state, inside a step).
AXION_HD TendonState actuator_coordinate(const BatchView& v, int act) {
  const int tendon = v.actuator_tendon[act];
  if (tendon >= 0) return tendon_state(v, tendon);
  const int dof = v.actuator_dof[act];
  return {v.qpos[dof_qpos_index(v, dof)], v.dof_velocity[dof]};
}

// A muscle's pull along its DOF or tendon at `state` (its coordinate and rate) and its
// activation: gear * muscle_force at the length gear * L, clamped to the force range. Out of
// line on the host, as site_actuator_push.
AXION_HD_OUTLINE Real muscle_effort(const BatchView& v, int act, TendonState state) {
  const Real gear = v.actuator_gear[act];
  const Real f = muscle_force(v.actuator_muscle + kMuscleParams * act, gear * state.length,
                              gear * state.rate, v.actuator_activation[act]);
  return v.actuator_force_limited[act] != 0
             ? clamp_to(gear * f, v.actuator_force_min[act], v.actuator_force_max[act])
             : gear * f;
}

/// The force actuator `act` exerts at the current state, along its DOF or tendon (N or N m; a
/// site actuator's: the scale of its wrench): an effort's gear * ctrl, clamped to its force
/// range; a position servo's kp (s ctrl - q) - kv qdot and a velocity servo's kv (s ctrl -
/// qdot) (s the target scale), clamped likewise, with q and qdot the coordinate (tendon length)
/// and rate as written back. The step solves each servo implicitly at its end state, so after
/// a step this is the force the servo applied over it (its rate's Jacobian taken at q+ here
/// and at q- in the drive row: they differ by O(h) of the rate). The joint's own spring and
/// damper are not the actuator's.
AXION_HD Real actuator_force(const BatchView& v, int act) {
  const int type = v.actuator_type[act];
  if (type == static_cast<int32_t>(ActuatorType::kEffort)) return actuator_effort(v, act);
  const TendonState state = actuator_coordinate(v, act);
  if (type == static_cast<int32_t>(ActuatorType::kMuscle)) return muscle_effort(v, act, state);
  const Real q = state.length, qdot = state.rate;
  const Real target = v.actuator_target_scale[act] * actuator_input(v, act);
  const Real force = type == static_cast<int32_t>(ActuatorType::kPosition)
                         ? v.actuator_kp[act] * (target - q) - v.actuator_kv[act] * qdot
                         : v.actuator_kv[act] * (target - qdot);
  return v.actuator_force_limited[act] != 0
             ? clamp_to(force, v.actuator_force_min[act], v.actuator_force_max[act])
             : force;
}

// A site actuator's push on its body: its wrench per unit force (body frame, about the centre
// of mass) times its force, turned into the world's frame at the step's start pose. Out of line
// on the host: inlined into the actuator loop, it cost GCC's inlining of the row evaluation
// (0.8% more instructions per humanoid step, a model without site actuators).
/// With a world-frame force (actuator_force_world) the force is not turned, and the torque of
/// its arm is taken at the pose; with a reaction body (actuator_reaction_body) that body takes
/// the opposite wrench at the same point: -F, and -(T + (p - x_r) x F).
AXION_HD_OUTLINE void site_actuator_push(const BatchView& v, int act) {
  const int body = v.actuator_body[act];
  const Real tau = actuator_effort(v, act);
  const Quat rot = body_rotation(v.body_q_prev, body);
  const int reaction = v.actuator_reaction_body[act];
  if (v.actuator_force_world[act] == 0 && reaction < 0) {  // (the arm folded into the torque)
    const Vec3 force = rotate(rot, tau * load3(v.actuator_body_wrench + 6 * act));
    const Vec3 torque = rotate(rot, tau * load3(v.actuator_body_wrench + 6 * act + 3));
    store3(v.body_jt + 6 * body, load3(v.body_jt + 6 * body) + force);
    store3(v.body_jt + 6 * body + 3, load3(v.body_jt + 6 * body + 3) + torque);
    return;
  }
  const Vec3 f = tau * load3(v.actuator_body_wrench + 6 * act);
  const Vec3 force = v.actuator_force_world[act] != 0 ? f : rotate(rot, f);
  const Vec3 torque = rotate(rot, tau * load3(v.actuator_body_wrench + 6 * act + 3));
  const Vec3 arm = rotate(rot, load3(v.actuator_site_arm + 3 * act));
  store3(v.body_jt + 6 * body, load3(v.body_jt + 6 * body) + force);
  store3(v.body_jt + 6 * body + 3, load3(v.body_jt + 6 * body + 3) + torque + cross(arm, force));
  if (reaction >= 0) {
    const Vec3 at =
        body_position(v.body_q_prev, body) + arm - body_position(v.body_q_prev, reaction);
    store3(v.body_jt + 6 * reaction, load3(v.body_jt + 6 * reaction) - force);
    store3(v.body_jt + 6 * reaction + 3,
           load3(v.body_jt + 6 * reaction + 3) - torque - cross(at, force));
  }
}

// A spatial tendon's pull on its bodies: tau along its length, J^T tau with J at the step's
// start pose (out of line on the host, as site_actuator_push).
AXION_HD_OUTLINE void spatial_tendon_pull(const BatchView& v, int tendon, Real tau) {
  const TendonLength path = spatial_tendon_length(tendon_path(v, tendon), v.body_q_prev, true);
  for (int side = 0; side < 4; ++side) {
    const int body = v.tendon_body[4 * tendon + side];
    if (body < 0) continue;
    for (int i = 0; i < 3; ++i) {
      v.body_jt[6 * body + i] += tau * path.jac[side].lin[i];
      v.body_jt[6 * body + 3 + i] += tau * path.jac[side].ang[i];
    }
  }
}

// Per world: actuators write the DOFs' efforts and servo drives (summed over a DOF's
// actuators, each effort clamped to its force range), then efforts become body wrenches J^T tau
// (equal and opposite on child and parent) accumulated in body_jt.
// An actuator on a tendon pulls along its length: an effort tau puts coef_k tau on each of a
// fixed tendon's DOFs (the generalized force of L = sum coef_k q_k), J^T tau on a spatial
// tendon's bodies (spatial_tendon_pull), and a servo's gains and targets
// go to the tendon's drive row (tendon_servo_*), as a joint servo's go to its DOF's. An actuator
// on a site pushes its body alone, with its force times the site's wrench.
AXION_HD void world_apply_actuators(const BatchView& v, int world) {
  for (int t = v.world_tendon_offset[world]; t < v.world_tendon_offset[world + 1]; ++t)
    servo_sums_reset(tendon_servo_sums(v, t));
  for (int act = v.world_actuator_offset[world]; act < v.world_actuator_offset[world + 1]; ++act) {
    const int dof = v.actuator_dof[act];
    const int tendon = v.actuator_tendon[act];
    const Real ctrl = actuator_input(v, act);  // a servo's target per target_scale
    const bool limited = v.actuator_force_limited[act] != 0;
    if (v.actuator_adhesion_body[act] >= 0) continue;  // (world_adhesion_pull)
    if (v.actuator_body[act] >= 0) {
      site_actuator_push(v, act);
      continue;
    }
    const ServoSums servo = tendon >= 0 ? tendon_servo_sums(v, tendon) : dof_servo_sums(v, dof);
    switch (v.actuator_type[act]) {
      case static_cast<int32_t>(ActuatorType::kEffort):
      case static_cast<int32_t>(ActuatorType::kMuscle): {
        // a muscle pulls with its force at the step's start state and activation, explicitly
        const Real tau = v.actuator_type[act] == static_cast<int32_t>(ActuatorType::kEffort)
                             ? actuator_effort(v, act)
                             : muscle_effort(v, act, actuator_coordinate(v, act));
        if (tendon < 0) {
          v.dof_effort[dof] += tau;
        } else if (v.tendon_path_count[tendon] > 0) {
          spatial_tendon_pull(v, tendon, tau);
        } else {
          const int begin = v.tendon_joint_begin[tendon];
          for (int k = begin; k < begin + v.tendon_joint_count[tendon]; ++k)
            v.dof_effort[v.tendon_joint_dof[k]] += v.tendon_joint_coef[k] * tau;
        }
        break;
      }
      case static_cast<int32_t>(ActuatorType::kPosition):
        *servo.stiffness += v.actuator_kp[act];
        *servo.damping += v.actuator_kv[act];
        *servo.kp_target += v.actuator_kp[act] * v.actuator_target_scale[act] * ctrl;
        break;
      case static_cast<int32_t>(ActuatorType::kVelocity):
        *servo.damping += v.actuator_kv[act];
        *servo.kv_target += v.actuator_kv[act] * v.actuator_target_scale[act] * ctrl;
        break;
      default:
        break;
    }
    // the model allows a force range only on a DOF's (a tendon's) one servo
    if (limited && (v.actuator_type[act] == static_cast<int32_t>(ActuatorType::kPosition) ||
                    v.actuator_type[act] == static_cast<int32_t>(ActuatorType::kVelocity))) {
      *servo.force_min = v.actuator_force_min[act];
      *servo.force_max = v.actuator_force_max[act];
    }
  }
  for (int dof = v.world_dof_offset[world]; dof < v.world_dof_offset[world + 1]; ++dof) {
    Real tau = v.dof_effort[dof];
    if (tau == 0) continue;
    int joint = v.dof_joint[dof];
    JointFrames f = joint_frames(v, joint, v.body_q_prev);
    AxisCoordinate c = joint_axis_coordinate(v, joint, v.dof_axis[dof], f);
    int child = v.joint_child[joint], parent = v.joint_parent[joint];
    for (int i = 0; i < 3; ++i) {
      v.body_jt[6 * child + i] += tau * c.jac_child.lin[i];
      v.body_jt[6 * child + 3 + i] += tau * c.jac_child.ang[i];
      if (parent >= 0) {
        v.body_jt[6 * parent + i] += tau * c.jac_parent.lin[i];
        v.body_jt[6 * parent + 3 + i] += tau * c.jac_parent.ang[i];
      }
    }
  }
}

// Per world, as a step's part is written back: each activation advances over it, a+ = a +
// h da/dt at the part's start (explicit, as MuJoCo 2.2's Euler step: a muscle's overshoots 1
// at a step longer than half its activation time constant, then settles), then is clamped to
// its range where limited. Out of line on the host: inlined into the write-back, it moved
// GCC's inlining of the row evaluation (0.8% more instructions per humanoid step, a model
// without activations).
AXION_HD_OUTLINE void world_integrate_activations(const BatchView& v, int world) {
  const Real h = v.world_step_length[world];
  for (int act = v.world_actuator_offset[world]; act < v.world_actuator_offset[world + 1]; ++act) {
    const int32_t kind = v.actuator_dynamics[act];
    if (kind == kActivationNone) continue;
    const Real u = v.actuator_ctrl[act], a = v.actuator_activation[act];
    const Real* prm = v.actuator_dynamics_prm + 3 * act;
    Real rate = u;  // kActivationIntegrator
    if (kind == kActivationFilter) rate = (u - a) / prm[0];
    if (kind == kActivationMuscle)
      rate = muscle_activation_rate(v.actuator_muscle + kMuscleParams * act, u, a);
    v.actuator_activation[act] = clamp_to(a + h * rate, prm[1], prm[2]);
  }
}

/// Fluid force and torque on a body moving at twist u (world frame) through a medium moving at
/// the wind W, MuJoCo's inertia-box model: in the body's principal axes, with v = u.lin - W,
/// s the sides of the box of its mass and moments and d their mean,
///   f_i = -3 pi mu d v_i - rho / 2 s_j s_k |v_i| v_i
///   t_i = -pi mu d^3 w_i - rho s_i (s_j^4 + s_k^4) / 64 |w_i| w_i
/// (mu the viscosity, rho the density; checked against libmujoco's qfrc_passive).
AXION_HD Vec6 body_fluid_wrench(const BatchView& v, int body, const WorldParams& p, Quat rot,
                                Vec6 u) {
  const Mat33 axes = load33(v.body_fluid_axes + 9 * body);
  const Vec3 s = load3(v.body_fluid_box + 3 * body);
  const Vec3 wind{p.fluid_wind[0], p.fluid_wind[1], p.fluid_wind[2]};
  const Vec3 lin = transpose(axes) * rotate_inv(rot, u.lin - wind);
  const Vec3 ang = transpose(axes) * rotate_inv(rot, u.ang);
  const Real kPi = Real(3.14159265358979323846);
  const Real d = (s.x + s.y + s.z) / 3;
  const Real mu = p.fluid_viscosity, rho = p.fluid_density;
  Vec3 force, torque;
  for (int i = 0; i < 3; ++i) {
    const Real sj = s[(i + 1) % 3], sk = s[(i + 2) % 3];
    force[i] = -3 * kPi * mu * d * lin[i] - Real(0.5) * rho * sj * sk * std::fabs(lin[i]) * lin[i];
    const Real quartic = sj * sj * sj * sj + sk * sk * sk * sk;
    torque[i] =
        -kPi * mu * d * d * d * ang[i] - rho * s[i] * quartic / 64 * std::fabs(ang[i]) * ang[i];
  }
  return {rotate(rot, axes * force), rotate(rot, axes * torque)};
}

/// Unconstrained velocity u~ = u- + h M^-1 f(q-, u-): gravity, user wrench and actuator
/// efforts (in body_jt), and the fluid's drag (body_fluid_wrench). The gyroscopic term enters
/// Euler's equations in the body frame,
///   I (w+ - w-) + h w x (I w) = h tau,
/// solved implicitly with the midpoint rule w = (w- + w+)/2 by three Newton iterations. An
/// explicit w x I w pumps energy into tumbling bodies; backward Euler would bleed it at
/// O(h^2) per step; the midpoint rule conserves both kinetic energy and |L| of a torque-free
/// body, and stays stable at any step size.
AXION_HD void body_predict(const BatchView& v, int body, const WorldParams& p) {
  Real h = v.world_step_length[v.body_world[body]];
  Vec6 u = load6(v.body_u_prev + 6 * body);
  Vec6 wrench = load6(v.body_wrench + 6 * body);
  Vec6 effort = load6(v.body_jt + 6 * body);
  Quat rot = body_rotation(v.body_q_prev, body);
  // the fluid's drag from the step's start velocity, as MuJoCo applies its passive forces
  if (p.fluid_density > 0 || p.fluid_viscosity > 0) {
    const Vec6 fluid = body_fluid_wrench(v, body, p, rot, u);
    wrench = {wrench.lin + fluid.lin, wrench.ang + fluid.ang};
  }
  Real inv_mass = v.body_inv_mass[body];
  Vec3 gravity{p.gravity[0], p.gravity[1], p.gravity[2]};
  Vec3 lin = u.lin + h * (gravity + inv_mass * (wrench.lin + effort.lin));

  Mat33 inertia = load33(v.body_inertia + 9 * body);
  Mat33 inv_inertia = load33(v.body_inv_inertia + 9 * body);
  Vec3 w0 = rotate_inv(rot, u.ang);
  Vec3 tau = rotate_inv(rot, wrench.ang + effort.ang);
  Vec3 w1 = w0 + h * (inv_inertia * tau);
  for (int it = 0; it < 3 && !v.body_rotation_fixed[body]; ++it) {
    Vec3 mid = Real(0.5) * (w0 + w1);
    Vec3 l_mid = inertia * mid;
    Vec3 f = inertia * (w1 - w0) + h * cross(mid, l_mid) - h * tau;
    // df/dw1 = I + h/2 ([mid]x I - [I mid]x)
    Mat33 jac = inertia + (Real(0.5) * h) * (skew(mid) * inertia + Real(-1) * skew(l_mid));
    w1 = w1 - inverse(jac) * f;
  }
  store6(v.body_u_tilde + 6 * body, {lin, rotate(rot, w1)});
}

/// Kinematics, q+ = q- + h G(q-) u+ with the quaternion renormalised:
///   x+ = x- + h v+,   theta+ = normalize(theta- + h/2 [0, w+] theta-)
AXION_HD void body_integrate(const BatchView& v, int body, const WorldParams& p) {
  Real h = v.world_step_length[v.body_world[body]];
  const Real* q0 = v.body_q_prev + 7 * body;
  Vec6 u = load6(v.body_u + 6 * body);
  store3(v.body_q + 7 * body, load3(q0) + h * u.lin);
  Quat rot = load_quat(q0 + 3);
  Quat spin = Quat{0, u.ang.x, u.ang.y, u.ang.z} * rot;
  Real s = Real(0.5) * h;
  Quat next{rot.w + s * spin.w, rot.x + s * spin.x, rot.y + s * spin.y, rot.z + s * spin.z};
  store_quat(v.body_q + 7 * body + 3, quat_normalized(next));
}

}  // namespace axion::kernels
