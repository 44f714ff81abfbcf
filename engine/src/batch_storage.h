// Host-side owner of the flat batch arrays (see axion/state.h for their meaning and shapes).
// Arrays are listed once in X-macros grouped by what they are indexed by, so allocation, the
// raw-pointer view and the copy of surviving worlds' state on re-packing cannot drift apart.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "axion/model.h"
#include "axion/state.h"

namespace axion {

// X(type, name, width): arrays of `width` entries per element.
#define AXION_WORLD_OFFSETS(X)             \
  X(int32_t, world_body_offset, 1)         \
  X(int32_t, world_joint_offset, 1)        \
  X(int32_t, world_dof_offset, 1)          \
  X(int32_t, world_qpos_offset, 1)         \
  X(int32_t, world_actuator_offset, 1)     \
  X(int32_t, world_tendon_offset, 1)       \
  X(int32_t, world_tendon_joint_offset, 1) \
  X(int32_t, world_shape_offset, 1)        \
  X(int32_t, world_pair_offset, 1)         \
  X(int32_t, world_pair_rule_offset, 1)    \
  X(int32_t, world_contact_offset, 1) X(int32_t, world_row_offset, 1)
#define AXION_WORLD_MODEL(X)           \
  X(int32_t, world_joint_row_count, 1) \
  X(int32_t, world_contact_angular_rows, 1) X(WorldParams, world_params, 1)
#define AXION_WORLD_STATE(X)              \
  X(int32_t, world_contact_count, 1)      \
  X(int32_t, world_angular_row_count, 1)  \
  X(uint32_t, world_flags, 1)             \
  X(int32_t, world_prev_contact_count, 1) \
  X(int32_t, world_newton_iterations, 1)  \
  X(int32_t, world_cr_iterations, 1)      \
  X(int32_t, world_line_search_trials, 1) \
  X(Real, world_residual, 1)              \
  X(Real, world_time, 1)                  \
  X(int32_t, world_substeps, 1)           \
  X(int32_t, world_contact_redos, 1)      \
  X(int32_t, world_step_level, 1)         \
  X(int32_t, world_presolve_carry, 1)     \
  X(Real, world_step_length, 1) X(int32_t, world_island_count, 1)
#define AXION_WORLD_SCRATCH(X)                                                                    \
  X(int32_t, world_active, 1)                                                                     \
  X(int32_t, world_step_pending, 1)                                                               \
  X(Real, world_merit, 1)                                                                         \
  X(Real, world_ls_step, 1)                                                                       \
  X(int32_t, world_ls_trials, 1)                                                                  \
  X(int32_t, world_tree_built, 1)                                                                 \
  X(Real, world_residual_best, 1)                                                                 \
  X(Real, world_residual_last, 1)                                                                 \
  X(int32_t, world_linear_tail, 1)                                                                \
  X(int32_t, world_cycled, 1)                                                                     \
  X(Real, world_residual_ring, kCycleRing)                                                        \
  X(int32_t, world_tree_levels, 1)                                                                \
  X(int32_t, world_newton_best, 1)                                                                \
  X(int32_t, world_newton_attempt, 1)                                                             \
  X(int32_t, world_halves_left, 1)                                                                \
  X(int32_t, world_halvings, 1)                                                                   \
  X(int32_t, world_redos, 1)                                                                      \
  X(int32_t, world_loop_count, 1)                                                                 \
  X(int32_t, world_missed_count, 1) X(int32_t, world_pair_count, 1)                               \
      X(int32_t, world_loop_rows, 16) X(Real, world_loop_lu, 256) X(int32_t, world_solve_runs, 1) \
          X(int32_t, world_presolve_colors, 1) X(int32_t, world_presolve_color_start, 66)
#define AXION_BODY_MODEL(X)                                                                  \
  X(int32_t, body_world, 1)                                                                  \
  X(Real, body_inv_mass, 1)                                                                  \
  X(Real, body_inertia, 9)                                                                   \
  X(Real, body_inv_inertia, 9) X(int32_t, body_rotation_fixed, 1) X(Real, body_fluid_box, 3) \
      X(Real, body_fluid_axes, 9)
// body_acc (bodies x 6): the last step's acceleration, (u - u-) / h over its last (halved)
// step: centre of mass linear then angular, world frame; zero until a world's first step after
// a reset or a state written from outside. Accelerometers read it (mjcf.h, sensors).
#define AXION_BODY_STATE(X) \
  X(Real, body_q, 7) X(Real, body_u, 6) X(Real, body_wrench, 6) X(Real, body_acc, 6)
#define AXION_BODY_SCRATCH(X)                                                                    \
  X(Real, body_q_prev, 7)                                                                        \
  X(Real, body_u_prev, 6)                                                                        \
  X(Real, body_q_end, 7)                                                                         \
  X(Real, body_u_end, 6)                                                                         \
  X(Real, body_u_tilde, 6)                                                                       \
  X(Real, body_u_accepted, 6)                                                                    \
  X(Real, body_u_best, 6)                                                                        \
  X(Real, body_inv_inertia_world, 9)                                                             \
  X(Real, body_inertia_world, 9)                                                                 \
  X(Real, body_inv_inertia_newton, 9)                                                            \
  X(Real, body_inertia_newton, 9)                                                                \
  X(Real, body_g, 6)                                                                             \
  X(Real, body_du, 6)                                                                            \
  X(Real, body_jt, 6)                                                                            \
  X(Real, body_minv_jt, 6)                                                                       \
  X(Real, body_tree_block, 36)                                                                   \
  X(Real, body_tree_x, 6)                                                                        \
  X(int32_t, body_tree_parent, 1)                                                                \
  X(int32_t, body_tree_order, 1) X(int32_t, body_tree_set, 1) X(int32_t, body_tree_grounded, 1)  \
      X(int32_t, body_row_begin, 1) X(int32_t, body_row_count, 1) X(int32_t, body_tree_level, 1) \
          X(int32_t, body_tree_level_order, 1) X(int32_t, body_tree_level_start, 1)              \
              X(int32_t, body_tree_child_begin, 1) X(int32_t, body_tree_child_count, 1)          \
                  X(uint32_t, body_presolve_colors, 2) AXION_ISLAND_SCRATCH(X)
// A world's islands (sets of bodies that joints and contacts connect) take the slots of its
// first bodies: a world has at most as many islands as bodies.
#define AXION_ISLAND_SCRATCH(X)     \
  X(int32_t, body_island, 1)        \
  X(Real, island_merit, 1)          \
  X(Real, island_merit_accepted, 1) \
  X(Real, island_merit_best, 1)     \
  X(Real, island_residual, 1)       \
  X(Real, island_residual_best, 1)  \
  X(Real, island_ls_step, 1)        \
  X(int32_t, island_converged, 1) X(int32_t, island_copy, 1) X(int32_t, island_friction_cone, 1)
#define AXION_JOINT_MODEL(X)       \
  X(int32_t, joint_type, 1)        \
  X(int32_t, joint_parent, 1)      \
  X(int32_t, joint_child, 1)       \
  X(Real, joint_parent_pos, 3)     \
  X(Real, joint_parent_quat, 4)    \
  X(Real, joint_child_pos, 3)      \
  X(Real, joint_child_quat, 4)     \
  X(int32_t, joint_axis_mode, 6)   \
  X(int32_t, joint_qpos_offset, 1) \
  X(Real, joint_compliance, 1)     \
  X(Real, joint_reference, 1)      \
  X(Real, joint_second_axis, 3) X(Real, joint_second_offset, 3) X(Real, joint_cone_limit, 1)
#define AXION_JOINT_SCRATCH(X) X(Real, joint_frame, 34)
#define AXION_DOF_MODEL(X)        \
  X(int32_t, dof_joint, 1)        \
  X(int32_t, dof_axis, 1)         \
  X(int32_t, dof_limited, 1)      \
  X(Real, dof_lower, 1)           \
  X(Real, dof_upper, 1)           \
  X(Real, dof_armature, 1)        \
  X(Real, dof_stiffness, 1)       \
  X(Real, dof_damping, 1)         \
  X(Real, dof_target_position, 1) \
  X(Real, dof_target_velocity, 1) \
  X(Real, dof_coupling_poly, 5) X(Real, dof_coupling_compliance, 1) X(Real, dof_friction_loss, 1)
#define AXION_DOF_STATE(X) X(Real, dof_velocity, 1)
#define AXION_DOF_SCRATCH(X)                                                                      \
  X(Real, dof_drive_stiffness, 1)                                                                 \
  X(Real, dof_drive_damping, 1)                                                                   \
  X(Real, dof_drive_position, 1)                                                                  \
  X(Real, dof_drive_velocity, 1)                                                                  \
  X(Real, dof_effort, 1)                                                                          \
  X(Real, dof_velocity_prev, 1)                                                                   \
  X(Real, dof_coord, 1)                                                                           \
  X(Real, dof_coord_jac, 12)                                                                      \
  X(Real, dof_servo_stiffness, 1)                                                                 \
  X(Real, dof_servo_damping, 1)                                                                   \
  X(Real, dof_servo_kp_target, 1) X(Real, dof_servo_kv_target, 1) X(Real, dof_servo_force_min, 1) \
      X(Real, dof_servo_force_max, 1)
#define AXION_QPOS_STATE(X) X(Real, qpos, 1)
#define AXION_ACTUATOR_MODEL(X)           \
  X(int32_t, actuator_type, 1)            \
  X(int32_t, actuator_dof, 1)             \
  X(Real, actuator_gear, 1)               \
  X(Real, actuator_kp, 1)                 \
  X(Real, actuator_kv, 1)                 \
  X(Real, actuator_target_scale, 1)       \
  X(int32_t, actuator_force_limited, 1)   \
  X(Real, actuator_force_min, 1)          \
  X(Real, actuator_force_max, 1)          \
  X(int32_t, actuator_tendon, 1)          \
  X(int32_t, actuator_body, 1)            \
  X(Real, actuator_body_wrench, 6)        \
  X(int32_t, actuator_reaction_body, 1)   \
  X(int32_t, actuator_force_world, 1)     \
  X(int32_t, actuator_adhesion_body, 1)   \
  X(Real, actuator_site_arm, 3)           \
  X(Real, actuator_muscle, kMuscleParams) \
  X(int32_t, actuator_dynamics, 1)        \
  X(Real, actuator_dynamics_prm, 3)
// The controls are the step's input; an activation (a muscle's, or with dynamics) is state the
// step integrates.
#define AXION_ACTUATOR_STATE(X) X(Real, actuator_ctrl, 1) X(Real, actuator_activation, 1)
// Tendons: a fixed one's coordinates (its range of the tendon joints), a spatial one's path,
// limits, spring-damper and dry friction (model), and the servo actuators' drive on them this
// step (scratch).
#define AXION_TENDON_MODEL(X)                       \
  X(int32_t, tendon_joint_begin, 1)                 \
  X(int32_t, tendon_joint_count, 1)                 \
  X(int32_t, tendon_path_count, 1)                  \
  X(int32_t, tendon_body, 4)                        \
  X(int32_t, tendon_path_kind, kMaxTendonPath)      \
  X(int32_t, tendon_path_body, kMaxTendonPath)      \
  X(Real, tendon_path_pos, 3 * kMaxTendonPath)      \
  X(Real, tendon_path_quat, 4 * kMaxTendonPath)     \
  X(Real, tendon_path_size, kMaxTendonPath)         \
  X(int32_t, tendon_path_side_body, kMaxTendonPath) \
  X(Real, tendon_path_side_pos, 3 * kMaxTendonPath) \
  X(Real, tendon_lower, 1)                          \
  X(Real, tendon_upper, 1)                          \
  X(Real, tendon_stiffness, 1)                      \
  X(Real, tendon_damping, 1)                        \
  X(Real, tendon_spring_length, 1)                  \
  X(Real, tendon_friction_loss, 1)                  \
  X(Real, tendon_hold_length, 1)                    \
  X(Real, tendon_hold_compliance, 1)                \
  X(Real, tendon_hold_damping, 1)
// A fixed tendon's coordinates, tendon by tendon (tendon_joint_begin, tendon_joint_count).
#define AXION_TENDON_JOINT_MODEL(X) \
  X(int32_t, tendon_joint_dof, 1) X(Real, tendon_joint_coef, 1) X(int32_t, tendon_joint_side, 2)
#define AXION_TENDON_SCRATCH(X)      \
  X(Real, tendon_length, 1)          \
  X(Real, tendon_jac, 24)            \
  X(Real, tendon_servo_stiffness, 1) \
  X(Real, tendon_servo_damping, 1)   \
  X(Real, tendon_servo_kp_target, 1) \
  X(Real, tendon_servo_kv_target, 1) \
  X(Real, tendon_servo_force_min, 1) \
  X(Real, tendon_servo_force_max, 1)
#define AXION_SHAPE_MODEL(X)                                                                  \
  X(int32_t, shape_world, 1)                                                                  \
  X(int32_t, shape_body, 1)                                                                   \
  X(int32_t, shape_type, 1)                                                                   \
  X(Real, shape_pos, 3)                                                                       \
  X(Real, shape_quat, 4)                                                                      \
  X(Real, shape_size, 3)                                                                      \
  X(Real, shape_friction, 1)                                                                  \
  X(Real, shape_restitution, 1)                                                               \
  X(int32_t, shape_contact_dim, 1)                                                            \
  X(int32_t, shape_priority, 1)                                                               \
  X(Real, shape_torsion, 1)                                                                   \
  X(Real, shape_rolling, 1)                                                                   \
  X(Real, shape_margin, 1) X(Real, shape_gap, 1) X(Real, shape_reach, 1)                      \
      X(int32_t, shape_adhesion, 1) X(int32_t, shape_hull, 1) X(int32_t, shape_rule_first, 1) \
          X(int32_t, shape_rule_count, 1) X(uint32_t, shape_collision_group, 1)               \
              X(uint32_t, shape_collision_mask, 1)
#define AXION_SHAPE_SCRATCH(X) \
  X(Real, shape_aabb, 6)       \
  X(Real, shape_sweep, 1)      \
  X(int32_t, shape_sweep_order, 1) X(int32_t, shape_pair_end, 1) X(int32_t, shape_end_inside, 1)
// The filter's exceptions (Model::pair_rules), grouped by lower shape (shape_rule_first).
#define AXION_PAIR_RULE_MODEL(X)   \
  X(int32_t, pair_rule_shape_b, 1) \
  X(Real, pair_rule_friction, 1)   \
  X(Real, pair_rule_torsion, 1)    \
  X(Real, pair_rule_rolling, 1) X(Real, pair_rule_margin, 1) X(Real, pair_rule_gap, 1)
// Up to the world's pair capacity: the broad phase's candidate pairs, and the pairs a redo marked.
#define AXION_PAIR_SCRATCH(X)                                                             \
  X(int32_t, pair_shape_a, 1)                                                             \
  X(int32_t, pair_shape_b, 1)                                                             \
  X(Real, pair_friction, 1) X(int32_t, pair_marked, 1) X(int32_t, pair_missed_shape_a, 1) \
      X(int32_t, pair_missed_shape_b, 1) X(int32_t, pair_order, 1)
#define AXION_CONTACT_STATE(X)         \
  X(int32_t, contact_body_a, 1)        \
  X(int32_t, contact_body_b, 1)        \
  X(int32_t, contact_shape_a, 1)       \
  X(int32_t, contact_shape_b, 1)       \
  X(Real, contact_local_a, 3)          \
  X(Real, contact_local_b, 3)          \
  X(Real, contact_normal, 3)           \
  X(Real, contact_tangent, 6)          \
  X(Real, contact_gap, 1)              \
  X(Real, contact_gap_shift, 1)        \
  X(Real, contact_friction, 1)         \
  X(Real, contact_torsion, 1)          \
  X(Real, contact_rolling, 1)          \
  X(int32_t, contact_angular_rows, 1)  \
  X(int32_t, contact_angular_index, 1) \
  X(Real, contact_restitution, 1)      \
  X(Real, contact_normal_velocity, 1)  \
  X(int32_t, contact_prev_shape_a, 1)  \
  X(int32_t, contact_prev_shape_b, 1)  \
  X(Real, contact_prev_points, 6) X(Real, contact_prev_lambda, 6)
#define AXION_ROW_MODEL(X) X(int32_t, row_world, 1)
#define AXION_ROW_STATE(X)   \
  X(int32_t, row_kind, 1)    \
  X(int32_t, row_joint, 1)   \
  X(int32_t, row_axis, 1)    \
  X(int32_t, row_dof, 1)     \
  X(int32_t, row_contact, 1) \
  X(int32_t, row_body_a, 1) X(int32_t, row_body_b, 1) X(Real, row_lambda, 1)
#define AXION_ROW_SCRATCH(X)                                                                   \
  X(Real, row_jac_a, 6)                                                                        \
  X(Real, row_jac_b, 6)                                                                        \
  X(Real, row_lever, 6)                                                                        \
  X(Real, row_residual, 1)                                                                     \
  X(Real, row_error, 1)                                                                        \
  X(Real, row_compliance, 1)                                                                   \
  X(Real, row_coupling, 2)                                                                     \
  X(Real, row_precond, 1)                                                                      \
  X(Real, row_lambda_accepted, 1)                                                              \
  X(Real, row_lambda_best, 1)                                                                  \
  X(Real, row_lambda_start, 1)                                                                 \
  X(Real, row_dlambda, 1)                                                                      \
  X(Real, row_cr_r, 1)                                                                         \
  X(Real, row_cr_z, 1)                                                                         \
  X(Real, row_cr_p, 1)                                                                         \
  X(Real, row_cr_az, 1)                                                                        \
  X(Real, row_cr_ap, 1)                                                                        \
  X(Real, row_cr_pap, 1)                                                                       \
  X(Real, row_gcr_p, 12)                                                                       \
  X(Real, row_gcr_q, 12)                                                                       \
  X(Real, row_loop_a, 1)                                                                       \
  X(Real, row_loop_x, 16)                                                                      \
  X(Real, row_tree_block, 12) X(Real, row_tree_y, 6) X(Real, row_tree_t, 6)                    \
      X(int32_t, row_tree_head, 1) X(int32_t, row_tree_size, 1) X(int32_t, row_tree_parent, 1) \
          X(int32_t, row_tree_child, 1) X(int32_t, row_tree_dropped, 1)                        \
              X(int32_t, row_held_out, 1) X(int32_t, row_tree_rows, 1)                         \
                  X(int32_t, row_tree_count, 1) X(int32_t, row_body_list, 2)                   \
                      X(int32_t, row_tree_child_group, 1) X(Real, row_tree_u, 6)               \
                          X(int32_t, row_solve_runs, 2) X(int32_t, row_presolve_color, 1)      \
                              X(int32_t, row_presolve_order, 1)
// Hull and height field data (flattened over all worlds' hull and height field shapes).
// A hull's edges (collision/hull.h) follow its faces' pattern: hull_edge_start holds each
// hull's (vertex_count + 1) offsets into its own edges, which start at hull_edge_index_offset.
#define AXION_HULL_ARRAYS(X)            \
  X(int32_t, hull_vertex_offset, 1)     \
  X(int32_t, hull_face_offset, 1)       \
  X(Real, hull_vertices, 1)             \
  X(int32_t, hull_face_start, 1)        \
  X(int32_t, hull_face_index, 1)        \
  X(int32_t, hull_face_index_offset, 1) \
  X(Real, hull_face_plane, 1)           \
  X(int32_t, hull_edge_start, 1)        \
  X(int32_t, hull_edge_index_offset, 1) \
  X(int32_t, hull_edge_vertex, 1)       \
  X(int32_t, hull_edge_face, 1)         \
  X(int32_t, hull_climb_start, 1)       \
  X(Real, hull_radius, 1)               \
  X(int32_t, heightfield_offset, 1)     \
  X(int32_t, heightfield_cols, 1)       \
  X(Real, heightfield_top, 1)           \
  X(Real, heightfield_heights, 1)

// Every array of the batch, in one list (the per-category lists above keep their roles).
#define AXION_ALL_ARRAYS(X)                                                                        \
  AXION_WORLD_OFFSETS(X)                                                                           \
  AXION_WORLD_MODEL(X)                                                                             \
  AXION_WORLD_STATE(X)                                                                             \
  AXION_WORLD_SCRATCH(X)                                                                           \
  AXION_BODY_MODEL(X)                                                                              \
  AXION_BODY_STATE(X)                                                                              \
  AXION_BODY_SCRATCH(X)                                                                            \
  AXION_JOINT_MODEL(X)                                                                             \
  AXION_JOINT_SCRATCH(X)                                                                           \
  AXION_DOF_MODEL(X)                                                                               \
  AXION_DOF_STATE(X)                                                                               \
  AXION_DOF_SCRATCH(X)                                                                             \
  AXION_QPOS_STATE(X)                                                                              \
  AXION_ACTUATOR_MODEL(X)                                                                          \
  AXION_ACTUATOR_STATE(X)                                                                          \
  AXION_TENDON_MODEL(X) AXION_TENDON_SCRATCH(X) AXION_TENDON_JOINT_MODEL(X) AXION_SHAPE_MODEL(X)   \
      AXION_SHAPE_SCRATCH(X) AXION_PAIR_RULE_MODEL(X) AXION_PAIR_SCRATCH(X) AXION_CONTACT_STATE(X) \
          AXION_ROW_MODEL(X) AXION_ROW_STATE(X) AXION_ROW_SCRATCH(X) AXION_HULL_ARRAYS(X)

struct BatchStorage {
#define AXION_DECLARE(T, name, width) std::vector<T> name;
  AXION_ALL_ARRAYS(AXION_DECLARE)
#undef AXION_DECLARE
  std::vector<int32_t> joint_dof_offset;  // (joint_count + 1)

  int world_count() const { return static_cast<int>(world_params.size()); }
  // Raw-pointer view of these host arrays.
  BatchView view();
  size_t bytes() const;
};

// One world's place in the batch: its model and per-world options.
struct WorldLayout {
  std::shared_ptr<const Model> model;
  // Where the world's mocap bodies are (model->mocap_count(), world frame); empty: at the
  // model's initial poses. Their shapes and joint anchors are written from these into the
  // model arrays (WriteMocapFrames).
  std::vector<Pose> mocap_pose;
  WorldParams params;
  int contact_capacity = 0;
  int pair_capacity = 0;
};

// Builds the batch for `worlds` (model arrays filled, state at each model's initial state).
BatchStorage PackBatch(const std::vector<WorldLayout>& worlds);

// The convex hulls a batch has packed so far (batch_storage.cc).
struct HullPacking;

// Writes world `w`'s model arrays (bodies, joints, DOFs, joint rows, actuators, shapes, pair
// rules, its parameters) from `layout`. With `hulls` the world's convex hulls not yet packed
// are appended to the hull arrays; without, the shapes keep the hulls packed for them, so a
// model whose hulls and pair rules match the packed one's is written in place.
void WriteWorldModel(const WorldLayout& layout, int w, BatchStorage& s, HullPacking* hulls);

// Writes the static shapes and joint frames that ride on world `w`'s mocap bodies at the
// layout's mocap poses (part of WriteWorldModel).
void WriteMocapFrames(const WorldLayout& layout, int w, BatchStorage& s);

// Copies world `from` of `src` into world `to` of `dst` (same model): the state needed to
// continue the simulation bit-exactly (and the last step's contacts and statistics).
void CopyWorldState(const BatchStorage& src, int from, BatchStorage& dst, int to);

// Writes the model's initial state into world `w` (bodies, joint coordinates, cleared
// controls, forces, impulses and statistics).
void ResetWorldState(const WorldLayout& layout, int w, BatchStorage& dst);

// World `w`'s joint coordinates (positions and velocities) from its bodies' state, the angles
// unwrapped from the coordinates held.
void WriteJointCoordinates(int w, BatchStorage& s);

// World `w`'s actuator forces at its state (kernels_body.h, actuator_force), (actuator_count).
std::vector<Real> ActuatorForces(int w, BatchStorage& s);

// World `w`'s fixed tendons' lengths and rates at its state (kernels_body.h, tendon_state),
// (tendon_count x 2); a spatial tendon's entries are zero, for the caller to fill at the bodies
// its joints place (Simulator::GetTendonStates).
std::vector<Real> TendonStates(int w, BatchStorage& s);

WorldParams MakeWorldParams(const SolverOptions& options);

}  // namespace axion
