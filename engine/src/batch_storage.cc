#include "batch_storage.h"

#include <algorithm>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "collision/hull.h"
#include "kernels_body.h"
#include "kernels_joint.h"
#include "model_internal.h"

namespace axion {
namespace {

template <class T>
void CopySlice(const std::vector<T>& src, int src_first, std::vector<T>& dst, int dst_first,
               int count, int width) {
  if (count <= 0) return;
  std::copy_n(src.begin() + static_cast<size_t>(src_first) * width,
              static_cast<size_t>(count) * width,
              dst.begin() + static_cast<size_t>(dst_first) * width);
}

void StoreMat(Real* out, const Mat33& m) { store33(out, m); }

}  // namespace

WorldParams MakeWorldParams(const SolverOptions& o) {
  WorldParams p;
  p.timestep = o.timestep;
  p.gravity[0] = o.gravity.x;
  p.gravity[1] = o.gravity.y;
  p.gravity[2] = o.gravity.z;
  p.joint_formulation = static_cast<int32_t>(o.joint_formulation);
  p.contact_formulation = static_cast<int32_t>(o.contact_formulation);
  p.baumgarte = o.baumgarte;
  p.contact_margin = o.contact_margin;
  p.speculative_contacts = o.speculative_contacts;
  p.friction_newton = o.friction_newton;
  p.friction_combine = static_cast<int32_t>(o.friction_combine);
  p.contact_compliance = o.contact_compliance;
  p.contact_presolve_sweeps = o.contact_presolve_sweeps;
  p.max_depenetration_speed = o.max_depenetration_speed;
  p.fluid_density = o.fluid_density;
  p.fluid_viscosity = o.fluid_viscosity;
  for (int k = 0; k < 3; ++k) p.fluid_wind[k] = o.fluid_wind[k];
  p.newton_iterations = o.newton_iterations;
  p.cr_iterations = o.cr_iterations;
  p.newton_tolerance = o.newton_tolerance;
  p.cr_tolerance = o.cr_tolerance;
  p.line_search = o.line_search ? 1 : 0;
  p.line_search_steps = o.line_search_steps;
  p.line_search_growth = o.line_search_growth;
  p.fb_epsilon = o.fb_epsilon;
  p.preconditioner = static_cast<int32_t>(o.preconditioner);
  p.newton_stall_iterations = o.newton_stall_iterations;
  p.newton_tail_iterations = o.newton_tail_iterations;
  p.newton_tail_residual = o.newton_tail_residual;
  p.strict_after_cycle = o.strict_after_cycle ? 1 : 0;
  p.step_halvings = o.step_halvings;
  p.halving_carryover = o.halving_carryover ? 1 : 0;
  p.halving_iterations = o.halving_iterations;
  p.halving_residual = o.halving_residual;
  p.missed_contact_depth = o.missed_contact_depth;
  p.contact_redos = o.contact_redos;
  p.loop_rows = o.loop_rows;
  p.islands = o.islands;
  return p;
}

BatchView BatchStorage::view() {
  BatchView v;
  v.world_count = world_count();
#define AXION_BIND(T, name, width) v.name = name.data();
  AXION_ALL_ARRAYS(AXION_BIND)
#undef AXION_BIND
  v.joint_dof_offset = joint_dof_offset.data();
  return v;
}

size_t BatchStorage::bytes() const {
  size_t total = joint_dof_offset.size() * sizeof(int32_t);
#define AXION_BYTES(T, name, width) total += name.size() * sizeof(T);
  AXION_ALL_ARRAYS(AXION_BYTES)
#undef AXION_BYTES
  return total;
}

void WriteMocapFrames(const WorldLayout& layout, int w, BatchStorage& s) {
  const ModelDesc& d = layout.model->desc();
  if (d.mocap_bodies.empty()) return;
  auto mocap = [&](int m) {
    return layout.mocap_pose.empty() ? d.mocap_bodies[m].pose : layout.mocap_pose[m];
  };
  const int s0 = s.world_shape_offset[w], j0 = s.world_joint_offset[w];
  for (size_t i = 0; i < d.shapes.size(); ++i) {
    if (d.shapes[i].mocap < 0) continue;
    const Pose pose = compose(mocap(d.shapes[i].mocap), d.shapes[i].pose);
    store3(&s.shape_pos[3 * (s0 + i)], pose.pos);
    store_quat(&s.shape_quat[4 * (s0 + i)], pose.quat);
  }
  for (size_t j = 0; j < d.joints.size(); ++j) {
    if (d.joints[j].parent_mocap < 0) continue;
    const Pose frame =
        compose(mocap(d.joints[j].parent_mocap), layout.model->joint_parent_frame()[j]);
    store3(&s.joint_parent_pos[3 * (j0 + j)], frame.pos);
    store_quat(&s.joint_parent_quat[4 * (j0 + j)], frame.quat);
  }
}

// The convex hulls a batch has packed so far, so that each distinct hull is packed once: hull
// arrays are read-only, and a copy per world took 4.5 of the 19.4 MB each world of dm_control's
// dog held. Shapes of any world and any model that share a HullData (a model's shapes of one
// mesh share one), or whose hulls are equal in every array, index one copy. The pointers stay
// valid while the layouts being packed hold their models.
struct HullPacking {
  absl::flat_hash_map<const HullData*, int32_t> index_of;        // hull index in the batch
  absl::flat_hash_map<size_t, std::vector<int32_t>> by_content;  // vertices' hash -> hulls
  std::vector<const HullData*> packed;                           // (hull count)
};

namespace {

// The index of `data` among the batch's hulls, packing it first where no equal hull is.
int32_t PackHull(const HullData& data, BatchStorage& s, HullPacking& hulls) {
  if (auto it = hulls.index_of.find(&data); it != hulls.index_of.end()) return it->second;
  // another model's copy of the same mesh (every array follows from these four)
  std::vector<int32_t>& same_hash = hulls.by_content[absl::HashOf(data.vertices)];
  for (int32_t h : same_hash) {
    const HullData& other = *hulls.packed[h];
    if (other.vertices == data.vertices && other.faces == data.faces &&
        other.face_offset == data.face_offset && other.face_plane == data.face_plane) {
      hulls.index_of[&data] = h;
      return h;
    }
  }
  const int32_t h = static_cast<int32_t>(hulls.packed.size());
  hulls.packed.push_back(&data);
  hulls.index_of[&data] = h;
  same_hash.push_back(h);
  s.hull_vertices.insert(s.hull_vertices.end(), data.vertices.begin(), data.vertices.end());
  s.hull_vertex_offset.push_back(static_cast<int32_t>(s.hull_vertices.size() / 3));
  s.hull_face_index_offset.push_back(static_cast<int32_t>(s.hull_face_index.size()));
  s.hull_face_index.insert(s.hull_face_index.end(), data.faces.begin(), data.faces.end());
  s.hull_face_start.insert(s.hull_face_start.end(), data.face_offset.begin(),
                           data.face_offset.end());
  s.hull_face_plane.insert(s.hull_face_plane.end(), data.face_plane.begin(), data.face_plane.end());
  s.hull_face_offset.push_back(s.hull_face_offset.back() +
                               static_cast<int32_t>(data.face_offset.size()) - 1);
  s.hull_edge_index_offset.push_back(static_cast<int32_t>(s.hull_edge_vertex.size()));
  s.hull_edge_start.insert(s.hull_edge_start.end(), data.edge_offset.begin(),
                           data.edge_offset.end());
  s.hull_edge_vertex.insert(s.hull_edge_vertex.end(), data.edge_vertex.begin(),
                            data.edge_vertex.end());
  s.hull_edge_face.insert(s.hull_edge_face.end(), data.edge_face.begin(), data.edge_face.end());
  s.hull_climb_start.insert(s.hull_climb_start.end(), data.climb_start.begin(),
                            data.climb_start.end());
  s.hull_radius.push_back(data.radius);
  return h;
}

}  // namespace

void WriteWorldModel(const WorldLayout& layout, int w, BatchStorage& s, HullPacking* hulls) {
  const ModelDesc& d = layout.model->desc();
  const Model& m = *layout.model;
  const int b0 = s.world_body_offset[w], j0 = s.world_joint_offset[w], f0 = s.world_dof_offset[w],
            q0 = s.world_qpos_offset[w], a0 = s.world_actuator_offset[w],
            t0 = s.world_tendon_offset[w], s0 = s.world_shape_offset[w], r0 = s.world_row_offset[w];
  s.world_params[w] = layout.params;
  s.world_joint_row_count[w] = m.joint_row_count();
  s.world_contact_angular_rows[w] = m.contact_angular_rows();
  auto global_body = [&](int body) { return body < 0 ? -1 : b0 + body; };

  std::vector<bool> rotation_fixed(m.body_count(), false);
  for (const JointDesc& joint : d.joints) {
    if (JointFixesRotation(joint)) rotation_fixed[joint.child] = true;
  }
  for (int i = 0; i < m.body_count(); ++i) {
    const BodyDesc& body = d.bodies[i];
    s.body_world[b0 + i] = w;
    s.body_inv_mass[b0 + i] = Real(1) / body.mass;
    s.body_rotation_fixed[b0 + i] = rotation_fixed[i] ? 1 : 0;
    StoreMat(&s.body_inertia[9 * (b0 + i)], body.inertia);
    StoreMat(&s.body_inv_inertia[9 * (b0 + i)],
             rotation_fixed[i] ? Mat33{} : inverse(body.inertia));
    // the box of the body's mass and principal moments: I_x = m (s_y^2 + s_z^2) / 12, ...
    Real moments[3];
    Mat33 axes;
    symmetric_eigen(body.inertia, moments, &axes);
    for (int k = 0; k < 3; ++k) {
      const Real twice = moments[(k + 1) % 3] + moments[(k + 2) % 3] - moments[k];
      s.body_fluid_box[3 * (b0 + i) + k] =
          body.in_fluid ? std::sqrt(std::max(twice, Real(0)) * Real(6) / body.mass) : Real(0);
    }
    StoreMat(&s.body_fluid_axes[9 * (b0 + i)], axes);
  }
  for (int j = 0; j < m.joint_count(); ++j) {
    const JointDesc& joint = d.joints[j];
    const int g = j0 + j;
    const Pose& parent_frame = m.joint_parent_frame()[j];
    Vec3 parent_com = joint.parent == kWorldBody ? Vec3{} : d.bodies[joint.parent].com;
    Vec3 child_com = d.bodies[joint.child].com;
    s.joint_type[g] = static_cast<int32_t>(joint.type);
    s.joint_parent[g] = global_body(joint.parent);
    s.joint_child[g] = global_body(joint.child);
    store3(&s.joint_parent_pos[3 * g], parent_frame.pos - parent_com);
    store_quat(&s.joint_parent_quat[4 * g], parent_frame.quat);
    store3(&s.joint_child_pos[3 * g], joint.child_frame.pos - child_com);
    store_quat(&s.joint_child_quat[4 * g], joint.child_frame.quat);
    std::array<AxisMode, 6> modes = JointAxisModes(joint);
    for (int k = 0; k < 6; ++k) s.joint_axis_mode[6 * g + k] = static_cast<int32_t>(modes[k]);
    s.joint_dof_offset[g] = f0 + m.joint_dof_offset()[j];
    s.joint_dof_offset[g + 1] = f0 + m.joint_dof_offset()[j] + JointDofCount(joint);
    s.joint_qpos_offset[g] = q0 + m.joint_position_offset()[j];
    s.joint_compliance[g] = joint.compliance;
    s.joint_reference[g] = joint.reference;
    Vec3 second_axis = rotate_inv(joint.child_frame.quat, normalized(joint.second_axis));
    Vec3 second_offset =
        rotate_inv(joint.child_frame.quat, joint.second_anchor - joint.child_frame.pos);
    store3(&s.joint_second_axis[3 * g], second_axis);
    store3(&s.joint_second_offset[3 * g], second_offset);
    s.joint_cone_limit[g] = JointConeLimit(joint);
    std::vector<int> axes = JointDofAxes(joint);
    for (int k = 0; k < static_cast<int>(axes.size()); ++k) {
      int dof = s.joint_dof_offset[g] + k;
      s.dof_joint[dof] = g;
      s.dof_axis[dof] = axes[k];
      s.dof_limited[dof] = modes[axes[k]] == AxisMode::kLimited;
      s.dof_lower[dof] = k < static_cast<int>(joint.lower.size()) ? joint.lower[k] : 0;
      s.dof_upper[dof] = k < static_cast<int>(joint.upper.size()) ? joint.upper[k] : 0;
      const DriveDesc& drive = joint.dof_drive.empty() ? joint.drive : joint.dof_drive[k];
      s.dof_armature[dof] = joint.dof_armature.empty() ? joint.armature : joint.dof_armature[k];
      s.dof_friction_loss[dof] = JointFrictionLoss(joint, k);
      s.dof_stiffness[dof] = drive.stiffness;
      s.dof_damping[dof] = drive.damping;
      s.dof_target_position[dof] = drive.target_position;
      s.dof_target_velocity[dof] = drive.target_velocity;
    }
  }
  // joint rows: fixed layout, child is row body a and parent row body b
  int row = r0;
  for (int j = 0; j < m.joint_count(); ++j) {
    const JointDesc& joint = d.joints[j];
    for (const JointRowLayout& r : JointRows(joint, JointHasDrive(d, j))) {
      s.row_kind[row] = r.kind;
      s.row_joint[row] = j0 + j;
      s.row_axis[row] = r.axis;
      s.row_dof[row] = r.dof < 0 ? -1 : s.joint_dof_offset[j0 + j] + r.dof;
      s.row_contact[row] = -1;
      s.row_body_a[row] = global_body(joint.child);
      s.row_body_b[row] = global_body(joint.parent);
      ++row;
    }
  }
  // couplings: the follower's row (its joint's child and parent), then the leader's slot
  // (the leader joint's bodies that are not already the follower's: those fold into the row)
  for (const JointCouplingDesc& c : d.couplings) {
    const JointDesc& follower = d.joints[c.joint];
    const int fa = global_body(follower.child), fb = global_body(follower.parent);
    const int dof = s.joint_dof_offset[j0 + c.joint] + c.dof;
    s.row_kind[row] = kRowCoupling;
    s.row_joint[row] = j0 + c.joint;
    s.row_axis[row] = 2;  // its slots (row_side_count)
    s.row_dof[row] = dof;
    s.row_contact[row] = -1;
    s.row_body_a[row] = fa;
    s.row_body_b[row] = fb;
    ++row;
    const bool leads = c.leader_joint >= 0;
    const int la = leads ? global_body(d.joints[c.leader_joint].child) : -1;
    const int lb = leads ? global_body(d.joints[c.leader_joint].parent) : -1;
    s.row_kind[row] = kRowCouplingLeader;
    s.row_joint[row] = leads ? j0 + c.leader_joint : -1;
    s.row_axis[row] = 1;  // its place after the row (row_entry_row)
    s.row_dof[row] = leads ? s.joint_dof_offset[j0 + c.leader_joint] + c.leader_dof : -1;
    s.row_contact[row] = -1;
    s.row_body_a[row] = la == fa || la == fb ? -1 : la;
    s.row_body_b[row] = lb == fa || lb == fb ? -1 : lb;
    ++row;
    for (int k = 0; k < 5; ++k) s.dof_coupling_poly[5 * dof + k] = c.polynomial[k];
    s.dof_coupling_compliance[dof] = c.compliance;
  }
  // tendons: each row on its tendon's sides (TendonSides: a fixed tendon's first DOF's joint
  // bodies, then its other DOFs' bodies not listed yet, two per leader slot; a spatial tendon's
  // path bodies), its coordinates tendon by tendon
  const int tj0 = s.world_tendon_joint_offset[w];
  for (int t = 0, tj = tj0; t < m.tendon_count(); ++t) {
    const TendonDesc& tendon = d.tendons[t];
    const int g = t0 + t;
    const TendonSideLayout sides = TendonSides(d, t);
    s.tendon_joint_begin[g] = tj;
    s.tendon_joint_count[g] = static_cast<int>(tendon.joints.size());
    for (size_t k = 0; k < tendon.joints.size(); ++k, ++tj) {
      const TendonJointDesc& joint = tendon.joints[k];
      s.tendon_joint_dof[tj] = s.joint_dof_offset[j0 + joint.joint] + joint.dof;
      s.tendon_joint_coef[tj] = joint.coef;
      s.tendon_joint_side[2 * tj] = sides.joint_sides[k][0];
      s.tendon_joint_side[2 * tj + 1] = sides.joint_sides[k][1];
    }
    // a spatial tendon's path; its rows' sides are the bodies the path moves with
    const TendonPathLayout path = LayTendonPath(d, tendon);
    const int p = kMaxTendonPath * g, count = static_cast<int>(tendon.path.size());
    s.tendon_path_count[g] = count;
    for (int k = 0; k < count; ++k) {
      s.tendon_path_kind[p + k] = path.kind[k];
      s.tendon_path_body[p + k] = global_body(path.body[k]);
      s.tendon_path_size[p + k] = path.size[k];
      s.tendon_path_side_body[p + k] = path.side_body[k] < -1 ? -2 : global_body(path.side_body[k]);
      for (int i = 0; i < 3; ++i) s.tendon_path_pos[3 * (p + k) + i] = path.pos[3 * k + i];
      for (int i = 0; i < 4; ++i) s.tendon_path_quat[4 * (p + k) + i] = path.quat[4 * k + i];
      for (int i = 0; i < 3; ++i)
        s.tendon_path_side_pos[3 * (p + k) + i] = path.side_pos[3 * k + i];
    }
    for (int k = 0; k < 4; ++k) s.tendon_body[4 * g + k] = global_body(path.sides[k]);
    s.tendon_lower[g] = tendon.limited ? tendon.lower : Real(0);
    s.tendon_upper[g] = tendon.limited ? tendon.upper : Real(0);
    s.tendon_stiffness[g] = tendon.stiffness;
    s.tendon_damping[g] = tendon.damping;
    s.tendon_spring_length[g] = TendonSpringLength(d, tendon);
    s.tendon_friction_loss[g] = tendon.friction_loss;
    s.tendon_hold_length[g] = tendon.hold ? TendonInitialLength(d, tendon) + tendon.hold_offset : 0;
    s.tendon_hold_compliance[g] = tendon.hold_compliance;
    s.tendon_hold_damping[g] = tendon.hold_compliance > 0 ? tendon.hold_damping : Real(0);
    for (RowKind kind : TendonRows(d, t)) {
      for (int slot = 0; slot < sides.slots(); ++slot) {
        s.row_kind[row] = slot == 0 ? kind : kRowCouplingLeader;
        s.row_joint[row] = slot == 0 ? g : -1;
        s.row_axis[row] = slot == 0 ? sides.slots() : slot;  // (row_side_count, row_entry_row)
        s.row_dof[row] = -1;
        s.row_contact[row] = -1;
        s.row_body_a[row] = global_body(sides.sides[2 * slot]);
        s.row_body_b[row] = global_body(sides.sides[2 * slot + 1]);
        ++row;
      }
    }
  }
  for (int r = r0; r < s.world_row_offset[w + 1]; ++r) s.row_world[r] = w;
  for (int a = 0; a < m.actuator_count(); ++a) {
    const ActuatorDesc& act = d.actuators[a];
    s.actuator_type[a0 + a] = static_cast<int32_t>(act.type);
    s.actuator_tendon[a0 + a] = act.tendon >= 0 ? t0 + act.tendon : -1;
    s.actuator_body[a0 + a] = act.site_body >= 0 ? global_body(act.site_body) : -1;
    s.actuator_adhesion_body[a0 + a] = act.adhesion_body >= 0 ? global_body(act.adhesion_body) : -1;
    s.actuator_dof[a0 + a] = act.tendon >= 0 || act.site_body >= 0 || act.adhesion_body >= 0
                                 ? -1
                                 : f0 + m.joint_dof_offset()[act.joint] + act.dof;
    // a site's wrench per unit force about its body's centre of mass, in the body's frame;
    // with a world-frame force or a reaction body, the force (world or body axes), the torque
    // alone and the site's arm from the centre of mass, for the kernel to combine
    Vec3 site_force, site_torque, site_arm;
    const bool split = act.site_force_world || act.site_reaction_body >= 0;
    if (act.site_body >= 0) {
      const Quat site = act.site_pose.quat;
      site_arm = act.site_pose.pos - d.bodies[act.site_body].com;
      const Vec3 force{act.site_wrench[0], act.site_wrench[1], act.site_wrench[2]};
      site_force = act.site_force_world ? force : rotate(site, force);
      site_torque = rotate(site, {act.site_wrench[3], act.site_wrench[4], act.site_wrench[5]});
      if (!split) site_torque = site_torque + cross(site_arm, site_force);
    }
    s.actuator_force_world[a0 + a] = act.site_force_world ? 1 : 0;
    s.actuator_reaction_body[a0 + a] = act.site_body >= 0 && act.site_reaction_body >= 0
                                           ? global_body(act.site_reaction_body)
                                           : -1;
    store3(&s.actuator_site_arm[3 * (a0 + a)], site_arm);
    store3(&s.actuator_body_wrench[6 * (a0 + a)], site_force);
    store3(&s.actuator_body_wrench[6 * (a0 + a) + 3], site_torque);
    s.actuator_gear[a0 + a] = act.gear;
    s.actuator_kp[a0 + a] = act.kp;
    s.actuator_kv[a0 + a] = act.kv;
    s.actuator_target_scale[a0 + a] = act.target_scale;
    s.actuator_force_limited[a0 + a] = act.force_limited;
    s.actuator_force_min[a0 + a] = act.force_limited ? act.force_min : Real(0);
    s.actuator_force_max[a0 + a] = act.force_limited ? act.force_max : Real(0);
    s.actuator_dynamics[a0 + a] =
        act.type == ActuatorType::kMuscle ? kActivationMuscle : static_cast<int32_t>(act.dynamics);
    Real* dynamics = &s.actuator_dynamics_prm[3 * (a0 + a)];
    dynamics[0] = act.dynamics_time_constant;
    dynamics[1] = act.activation_limited ? act.activation_min : -kUnboundedActivation;
    dynamics[2] = act.activation_limited ? act.activation_max : kUnboundedActivation;
    Real* muscle = &s.actuator_muscle[kMuscleParams * (a0 + a)];
    std::fill_n(muscle, kMuscleParams, Real(0));
    if (act.type == ActuatorType::kMuscle) {
      const MuscleDesc& mu = act.muscle;
      muscle[kMuscleTimeActivation] = mu.time_activation;
      muscle[kMuscleTimeDeactivation] = mu.time_deactivation;
      muscle[kMuscleRangeLow] = mu.range[0];
      muscle[kMuscleRangeHigh] = mu.range[1];
      muscle[kMuscleForce] = mu.force;
      muscle[kMuscleLengthMin] = mu.length_min;
      muscle[kMuscleLengthMax] = mu.length_max;
      muscle[kMuscleVelocityMax] = mu.velocity_max;
      muscle[kMusclePassiveForce] = mu.passive_force;
      muscle[kMuscleVelocityForceMax] = mu.velocity_force_max;
      muscle[kMuscleLengthRangeLow] = mu.length_range[0];
      muscle[kMuscleLengthRangeHigh] = mu.length_range[1];
    }
  }
  for (int i = 0; i < m.shape_count(); ++i) {
    const ShapeDesc& shape = d.shapes[i];
    const int g = s0 + i;
    Vec3 com = shape.body == kWorldBody ? Vec3{} : d.bodies[shape.body].com;
    s.shape_world[g] = w;
    s.shape_body[g] = global_body(shape.body);
    s.shape_type[g] = static_cast<int32_t>(shape.type);
    store3(&s.shape_pos[3 * g], shape.pose.pos - com);
    store_quat(&s.shape_quat[4 * g], shape.pose.quat);
    store3(&s.shape_size[3 * g], shape.size);
    s.shape_friction[g] = shape.material.friction;
    s.shape_restitution[g] = shape.material.restitution;
    s.shape_contact_dim[g] = shape.contact_dim;
    s.shape_priority[g] = shape.priority;
    s.shape_torsion[g] = shape.material.torsional_friction;
    s.shape_rolling[g] = shape.material.rolling_friction;
    s.shape_margin[g] = shape.margin;
    s.shape_reach[g] = shape.margin;  // (and its explicit pairs' margins, below)
    s.shape_adhesion[g] = 0;          // (below)
    s.shape_gap[g] = shape.gap;
    s.shape_collision_group[g] = shape.collision_group;
    s.shape_collision_mask[g] = shape.collision_mask;
    if (hulls == nullptr) continue;  // the hulls stay as packed
    s.shape_hull[g] = -1;
    if (shape.type == ShapeType::kConvexHull)
      s.shape_hull[g] = PackHull(*ShapeHull(m, i), s, *hulls);
    if (shape.type == ShapeType::kHeightField) {
      // shape_hull indexes the height fields for a height field shape. Shapes of the same grid
      // share one copy (model arrays are read-only): a batch of 4096 worlds of one terrain
      // would otherwise hold 4096 copies of it (dm_control's 201 x 201: 1.3 GB). The latest
      // grids are looked at first, where a batch's copies of one model find theirs at once;
      // different grids differ within their first few heights.
      const HeightFieldDesc& field = shape.heightfield;
      int32_t index = -1;
      for (int k = static_cast<int>(s.heightfield_cols.size()) - 1; k >= 0 && index < 0; --k) {
        const int32_t first = s.heightfield_offset[k];
        if (s.heightfield_cols[k] == field.cols &&
            static_cast<size_t>(s.heightfield_offset[k + 1] - first) == field.heights.size() &&
            std::equal(field.heights.begin(), field.heights.end(),
                       s.heightfield_heights.begin() + first)) {
          index = k;
        }
      }
      if (index < 0) {
        index = static_cast<int32_t>(s.heightfield_cols.size());
        s.heightfield_cols.push_back(field.cols);
        s.heightfield_top.push_back(*std::max_element(field.heights.begin(), field.heights.end()));
        s.heightfield_heights.insert(s.heightfield_heights.end(), field.heights.begin(),
                                     field.heights.end());
        s.heightfield_offset.push_back(static_cast<int32_t>(s.heightfield_heights.size()));
      }
      s.shape_hull[g] = index;
    }
  }
  // the filter's exceptions, grouped by lower shape for kernels::world_shapes_may_collide's
  // binary search (the model sorts them by (a, b))
  const int rule0 = s.world_pair_rule_offset[w];
  for (int k = s0; k < s.world_shape_offset[w + 1]; ++k) {
    s.shape_rule_first[k] = rule0;
    s.shape_rule_count[k] = 0;
  }
  for (size_t k = 0; k < m.pair_rules().size(); ++k) {
    const Model::PairRule& rule = m.pair_rules()[k];
    const int g = rule0 + static_cast<int>(k), lower = s0 + rule.shape_a;
    if (s.shape_rule_count[lower]++ == 0) s.shape_rule_first[lower] = g;
    s.pair_rule_shape_b[g] = s0 + rule.shape_b;
    s.pair_rule_friction[g] = rule.friction;
    s.pair_rule_torsion[g] = rule.torsion;
    s.pair_rule_rolling[g] = rule.rolling;
    s.pair_rule_margin[g] = rule.margin;
    s.pair_rule_gap[g] = rule.gap;
    if (rule.friction != Model::kPairExcluded) {
      for (int shape : {lower, s0 + rule.shape_b})
        s.shape_reach[shape] = std::max(s.shape_reach[shape], rule.margin);
    }
  }
  // the shapes of adhesion actuators' bodies, whose pairs keep every point within their margin
  for (const ActuatorDesc& act : d.actuators) {
    if (act.adhesion_body < 0) continue;
    for (int k = 0; k < static_cast<int>(d.shapes.size()); ++k) {
      if (d.shapes[k].body == act.adhesion_body) s.shape_adhesion[s0 + k] = 1;
    }
  }
  WriteMocapFrames(layout, w, s);
}

BatchStorage PackBatch(const std::vector<WorldLayout>& worlds) {
  BatchStorage s;
  const int world_count = static_cast<int>(worlds.size());

  // offsets
  int bodies = 0, joints = 0, dofs = 0, qpos = 0, acts = 0, tendons = 0, tendon_joints = 0,
      shapes = 0, pairs = 0, rules = 0, contacts = 0, rows = 0;
  auto push_offsets = [&] {
    s.world_body_offset.push_back(bodies);
    s.world_joint_offset.push_back(joints);
    s.world_dof_offset.push_back(dofs);
    s.world_qpos_offset.push_back(qpos);
    s.world_actuator_offset.push_back(acts);
    s.world_tendon_offset.push_back(tendons);
    s.world_tendon_joint_offset.push_back(tendon_joints);
    s.world_shape_offset.push_back(shapes);
    s.world_pair_offset.push_back(pairs);
    s.world_pair_rule_offset.push_back(rules);
    s.world_contact_offset.push_back(contacts);
    s.world_row_offset.push_back(rows);
  };
  for (const WorldLayout& w : worlds) {
    push_offsets();
    const Model& m = *w.model;
    bodies += m.body_count();
    joints += m.joint_count();
    dofs += m.joint_dof_count();
    qpos += m.joint_position_count();
    acts += m.actuator_count();
    tendons += m.tendon_count();
    for (const TendonDesc& tendon : m.desc().tendons)
      tendon_joints += static_cast<int>(tendon.joints.size());
    shapes += m.shape_count();
    pairs += w.pair_capacity;
    rules += static_cast<int>(m.pair_rules().size());
    contacts += w.contact_capacity;
    rows += m.joint_row_count() + (3 + m.contact_angular_rows()) * w.contact_capacity;
  }
  push_offsets();

  // allocate every array at its final size: stepping never allocates
#define AXION_ALLOC(count) \
  [&](auto& vec, int width) { vec.assign(static_cast<size_t>(count) * width, {}); }
#define AXION_SIZE_WORLD(T, name, width) AXION_ALLOC(world_count)(s.name, width);
#define AXION_SIZE_BODY(T, name, width) AXION_ALLOC(bodies)(s.name, width);
#define AXION_SIZE_JOINT(T, name, width) AXION_ALLOC(joints)(s.name, width);
#define AXION_SIZE_DOF(T, name, width) AXION_ALLOC(dofs)(s.name, width);
#define AXION_SIZE_QPOS(T, name, width) AXION_ALLOC(qpos)(s.name, width);
#define AXION_SIZE_ACT(T, name, width) AXION_ALLOC(acts)(s.name, width);
#define AXION_SIZE_TENDON(T, name, width) AXION_ALLOC(tendons)(s.name, width);
#define AXION_SIZE_TENDON_JOINT(T, name, width) AXION_ALLOC(tendon_joints)(s.name, width);
#define AXION_SIZE_SHAPE(T, name, width) AXION_ALLOC(shapes)(s.name, width);
#define AXION_SIZE_PAIR(T, name, width) AXION_ALLOC(pairs)(s.name, width);
#define AXION_SIZE_PAIR_RULE(T, name, width) AXION_ALLOC(rules)(s.name, width);
#define AXION_SIZE_CONTACT(T, name, width) AXION_ALLOC(contacts)(s.name, width);
#define AXION_SIZE_ROW(T, name, width) AXION_ALLOC(rows)(s.name, width);
  AXION_WORLD_MODEL(AXION_SIZE_WORLD)
  AXION_WORLD_STATE(AXION_SIZE_WORLD)
  AXION_WORLD_SCRATCH(AXION_SIZE_WORLD)
  AXION_BODY_MODEL(AXION_SIZE_BODY)
  AXION_BODY_STATE(AXION_SIZE_BODY)
  AXION_BODY_SCRATCH(AXION_SIZE_BODY)
  AXION_JOINT_MODEL(AXION_SIZE_JOINT)
  AXION_JOINT_SCRATCH(AXION_SIZE_JOINT)
  AXION_DOF_MODEL(AXION_SIZE_DOF)
  AXION_DOF_STATE(AXION_SIZE_DOF)
  AXION_DOF_SCRATCH(AXION_SIZE_DOF)
  AXION_QPOS_STATE(AXION_SIZE_QPOS)
  AXION_ACTUATOR_MODEL(AXION_SIZE_ACT)
  AXION_ACTUATOR_STATE(AXION_SIZE_ACT)
  AXION_TENDON_MODEL(AXION_SIZE_TENDON)
  AXION_TENDON_SCRATCH(AXION_SIZE_TENDON)
  AXION_TENDON_JOINT_MODEL(AXION_SIZE_TENDON_JOINT)
  AXION_SHAPE_MODEL(AXION_SIZE_SHAPE)
  AXION_SHAPE_SCRATCH(AXION_SIZE_SHAPE)
  AXION_PAIR_RULE_MODEL(AXION_SIZE_PAIR_RULE)
  AXION_PAIR_SCRATCH(AXION_SIZE_PAIR)
  AXION_CONTACT_STATE(AXION_SIZE_CONTACT)
  AXION_ROW_MODEL(AXION_SIZE_ROW)
  AXION_ROW_STATE(AXION_SIZE_ROW)
  AXION_ROW_SCRATCH(AXION_SIZE_ROW)
  s.joint_dof_offset.assign(joints + 1, 0);
  s.hull_vertex_offset.push_back(0);
  s.hull_face_offset.push_back(0);
  s.heightfield_offset.push_back(0);

  // model arrays, world by world
  HullPacking hulls;
  for (int w = 0; w < world_count; ++w) {
    WriteWorldModel(worlds[w], w, s, &hulls);
    ResetWorldState(worlds[w], w, s);
  }
  return s;
}

void WriteJointCoordinates(int w, BatchStorage& s) {
  const BatchView v = s.view();
  for (int j = s.world_joint_offset[w]; j < s.world_joint_offset[w + 1]; ++j)
    kernels::joint_write_coordinates(v, j);
}

std::vector<Real> TendonStates(int w, BatchStorage& s) {
  const BatchView v = s.view();
  std::vector<Real> out;
  for (int t = s.world_tendon_offset[w]; t < s.world_tendon_offset[w + 1]; ++t) {
    const bool fixed = s.tendon_path_count[t] == 0;
    const kernels::TendonState state = fixed ? kernels::tendon_state(v, t) : kernels::TendonState{};
    out.push_back(state.length);
    out.push_back(state.rate);
  }
  return out;
}

std::vector<Real> ActuatorForces(int w, BatchStorage& s) {
  const BatchView v = s.view();
  std::vector<Real> out;
  out.reserve(s.world_actuator_offset[w + 1] - s.world_actuator_offset[w]);
  for (int a = s.world_actuator_offset[w]; a < s.world_actuator_offset[w + 1]; ++a)
    out.push_back(kernels::actuator_force(v, a));
  return out;
}

void ResetWorldState(const WorldLayout& layout, int w, BatchStorage& s) {
  const ModelDesc& d = layout.model->desc();
  const Model& m = *layout.model;
  const int b0 = s.world_body_offset[w];
  for (int i = 0; i < m.body_count(); ++i) {
    const BodyDesc& body = d.bodies[i];
    Real* q = &s.body_q[7 * (b0 + i)];
    store3(q, body.pose.pos + rotate(body.pose.quat, body.com));
    store_quat(q + 3, body.pose.quat);
    // The COM velocity of a body whose frame origin moves at v with angular velocity w.
    Vec3 lever = rotate(body.pose.quat, body.com);
    // (a body whose rotation is held to the world keeps none: body_rotation_fixed)
    const Vec3 angular = s.body_rotation_fixed[b0 + i] ? Vec3{} : body.angular_velocity;
    store6(&s.body_u[6 * (b0 + i)],
           {body.linear_velocity + cross(body.angular_velocity, lever), angular});
    for (int k = 0; k < 6; ++k) s.body_wrench[6 * (b0 + i) + k] = 0;
    for (int k = 0; k < 6; ++k) s.body_acc[6 * (b0 + i) + k] = 0;
  }
  // joint velocities from the bodies' (a drive's armature term reads them as the last step's);
  // the positions are the initial configuration's by definition, exactly
  WriteJointCoordinates(w, s);
  for (int j = 0; j < m.joint_count(); ++j) {
    const JointDesc& joint = d.joints[j];
    // (a pointer, not a reference into qpos: a batch of fixed joints alone has no coordinates)
    Real* q = s.qpos.data() + s.world_qpos_offset[w] + m.joint_position_offset()[j];
    if (joint.type == JointType::kBall) {
      store_quat(q, Quat{});
    } else {
      for (int k = 0; k < JointPositionCount(joint); ++k) q[k] = joint.reference;
    }
  }
  std::fill(s.actuator_ctrl.begin() + s.world_actuator_offset[w],
            s.actuator_ctrl.begin() + s.world_actuator_offset[w + 1], 0);
  std::fill(s.actuator_activation.begin() + s.world_actuator_offset[w],
            s.actuator_activation.begin() + s.world_actuator_offset[w + 1], 0);
  std::fill(s.row_lambda.begin() + s.world_row_offset[w],
            s.row_lambda.begin() + s.world_row_offset[w + 1], 0);
  s.world_contact_count[w] = 0;
  s.world_angular_row_count[w] = 0;
  s.world_prev_contact_count[w] = 0;
  s.world_flags[w] = 0;
  s.world_newton_iterations[w] = 0;
  s.world_cr_iterations[w] = 0;
  s.world_line_search_trials[w] = 0;
  s.world_residual[w] = 0;
  s.world_time[w] = 0;
  s.world_substeps[w] = 0;
  s.world_contact_redos[w] = 0;
  s.world_step_level[w] = 0;
  s.world_presolve_carry[w] = 0;
  s.world_step_length[w] = s.world_params[w].timestep;
}

void CopyWorldState(const BatchStorage& src, int from, BatchStorage& dst, int to) {
  auto count = [](const std::vector<int32_t>& offset, int w) { return offset[w + 1] - offset[w]; };
#define AXION_COPY(offsets)                                                               \
  [&](const auto& a, auto& b, int width) {                                                \
    CopySlice(a, src.offsets[from], b, dst.offsets[to], count(src.offsets, from), width); \
  }
#define AXION_COPY_BODY(T, name, width) AXION_COPY(world_body_offset)(src.name, dst.name, width);
#define AXION_COPY_DOF(T, name, width) AXION_COPY(world_dof_offset)(src.name, dst.name, width);
#define AXION_COPY_QPOS(T, name, width) AXION_COPY(world_qpos_offset)(src.name, dst.name, width);
#define AXION_COPY_ACT(T, name, width) AXION_COPY(world_actuator_offset)(src.name, dst.name, width);
#define AXION_COPY_ROW(T, name, width) AXION_COPY(world_row_offset)(src.name, dst.name, width);
#define AXION_COPY_WORLD(T, name, width) dst.name[to] = src.name[from];
  AXION_BODY_STATE(AXION_COPY_BODY)
  AXION_DOF_STATE(AXION_COPY_DOF)
  AXION_QPOS_STATE(AXION_COPY_QPOS)
  AXION_ACTUATOR_STATE(AXION_COPY_ACT)
  AXION_ROW_STATE(AXION_COPY_ROW)
  AXION_WORLD_STATE(AXION_COPY_WORLD)
  // Contacts: body, shape and row references are global indices, so shift them.
  const int contacts =
      std::min(std::max(src.world_contact_count[from], src.world_prev_contact_count[from]),
               count(dst.world_contact_offset, to));
  const int body_shift = dst.world_body_offset[to] - src.world_body_offset[from];
  const int shape_shift = dst.world_shape_offset[to] - src.world_shape_offset[from];
  const int contact_shift = dst.world_contact_offset[to] - src.world_contact_offset[from];
  const int joint_shift = dst.world_joint_offset[to] - src.world_joint_offset[from];
  const int dof_shift = dst.world_dof_offset[to] - src.world_dof_offset[from];
  const int tendon_shift = dst.world_tendon_offset[to] - src.world_tendon_offset[from];
#define AXION_COPY_CONTACT(T, name, width)                                                    \
  CopySlice(src.name, src.world_contact_offset[from], dst.name, dst.world_contact_offset[to], \
            contacts, width);
  AXION_CONTACT_STATE(AXION_COPY_CONTACT)
  dst.world_contact_count[to] = std::min(src.world_contact_count[from], contacts);
  // (the angular rows of the contacts kept: a prefix, in contact order)
  dst.world_angular_row_count[to] = 0;
  for (int i = 0; i < dst.world_contact_count[to]; ++i)
    dst.world_angular_row_count[to] += dst.contact_angular_rows[dst.world_contact_offset[to] + i];
  dst.world_prev_contact_count[to] = std::min(src.world_prev_contact_count[from], contacts);
  auto shift = [](int32_t& x, int by) {
    if (x >= 0) x += by;
  };
  for (int k = dst.world_contact_offset[to]; k < dst.world_contact_offset[to] + contacts; ++k) {
    shift(dst.contact_body_a[k], body_shift);
    shift(dst.contact_body_b[k], body_shift);
    shift(dst.contact_shape_a[k], shape_shift);
    shift(dst.contact_shape_b[k], shape_shift);
    shift(dst.contact_prev_shape_a[k], shape_shift);
    shift(dst.contact_prev_shape_b[k], shape_shift);
  }
  for (int r = dst.world_row_offset[to]; r < dst.world_row_offset[to + 1]; ++r) {
    shift(dst.row_body_a[r], body_shift);
    shift(dst.row_body_b[r], body_shift);
    shift(dst.row_contact[r], contact_shift);
    const int kind = dst.row_kind[r];
    shift(dst.row_joint[r],
          kind >= kRowTendonLimitLower && kind <= kRowTendonHold ? tendon_shift : joint_shift);
    shift(dst.row_dof[r], dof_shift);
  }
#undef AXION_COPY
}

}  // namespace axion
