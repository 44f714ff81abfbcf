// The batched layout: every per-world array of every world in one flat structure-of-arrays,
// addressed through per-world offsets, so worlds of different scenes run in the same kernels.
//
// Layout choice: world-major flat arrays (all of world 0's bodies, then world 1's, ...) rather
// than padded (world x max_bodies) tensors. Padding would waste memory and bandwidth whenever
// scenes of different sizes share a batch, and the per-world offsets cost one indirection per
// kernel. A CPU thread takes a contiguous chunk of worlds, so its slice of every array is
// contiguous too and stays in cache across the whole Newton solve.
//
// BatchView holds raw pointers only (host memory on the CPU backend, device memory on CUDA), so
// the same AXION_HD kernels read it everywhere. Conventions:
//  - Body poses are inertial poses: centre-of-mass position, then the body-frame quaternion.
//  - Twists are (linear velocity of the centre of mass, angular velocity), world frame.
//  - Body indices inside arrays are global (into the flat body arrays); -1 is the static world.
//  - Capacity arrays (rows, contacts) hold `capacity` slots per world and a live count.
#pragma once

#include <cstdint>

#include "axion/config.h"

namespace axion {

// Where a world is within the current step.
enum WorldPhase : int32_t {
  kPhaseIdle = 0,       // not stepping (no pending step, or frozen by a non-finite state)
  kPhaseConverged = 1,  // stepping; Newton has finished for this step
  kPhaseNewton = 2,     // stepping; Newton iterating
};

// Per-world solver parameters (a copy of SolverOptions in kernel-friendly form).
struct WorldParams {
  Real timestep;
  Real gravity[3];
  int32_t joint_formulation;    // Formulation
  int32_t contact_formulation;  // Formulation
  Real baumgarte;
  Real contact_margin;
  int32_t speculative_contacts;
  int32_t friction_newton;
  int32_t friction_combine;  // FrictionCombine
  Real contact_compliance;
  Real max_depenetration_speed;  // (m/s) SolverOptions
  Real fluid_density;            // (kg/m^3) SolverOptions
  Real fluid_viscosity;          // (Pa s) SolverOptions
  Real fluid_wind[3];            // (m/s) SolverOptions
  int32_t newton_iterations;
  int32_t cr_iterations;
  Real newton_tolerance;
  Real cr_tolerance;
  int32_t line_search;
  int32_t line_search_steps;
  Real line_search_growth;
  Real fb_epsilon;
  int32_t preconditioner;           // Preconditioner
  int32_t newton_stall_iterations;  // 0: off (SolverOptions)
  int32_t newton_tail_iterations;   // 0: off (SolverOptions)
  Real newton_tail_residual;        // (m/s) ends a step past newton_tail_iterations
  int32_t strict_after_cycle;       // SolverOptions (0 / 1)
  int32_t step_halvings;            // SolverOptions: a failed step is redone as two halves
  int32_t halving_carryover;        // SolverOptions: the next step starts at the last level
  int32_t halving_iterations;
  Real halving_residual;
  Real missed_contact_depth;  // SolverOptions: a step that misses a contact deeper than this
  int32_t contact_redos;      // goes again from its start, this many times at most
  int32_t loop_rows;          // SolverOptions: loop rows eliminated at most (0: none)
  int32_t islands;            // SolverOptions: islands solved apart (0: the world as one system)
  int32_t contact_presolve_sweeps;  // SolverOptions: Gauss-Seidel sweeps before Newton (0: off)
};

// Constraint row kinds.
enum RowKind : int32_t {
  kRowDisabled = 0,
  kRowAnchor = 1,           // joint anchor coincidence along world axis `row_axis`
  kRowAxisAlign = 2,        // revolute axis alignment against parent perpendicular `row_axis`
  kRowLinearLock = 3,       // joint-frame linear axis `row_axis` locked
  kRowAngularLock = 4,      // joint-frame angular axis `row_axis` locked
  kRowLimitLower = 5,       // DOF `row_dof` >= lower limit (unilateral)
  kRowLimitUpper = 6,       // DOF `row_dof` <= upper limit (unilateral)
  kRowDrive = 7,            // implicit PD drive / passive spring-damper / armature on `row_dof`
  kRowContactNormal = 8,    // contact `row_contact` non-penetration (unilateral)
  kRowFriction1 = 9,        // contact tangent 1 (Coulomb, with the friction-2 row)
  kRowFriction2 = 10,       // contact tangent 2
  kRowLimitCone = 11,       // ball joint `row_joint` turned at most its cone limit (unilateral)
  kRowCoupling = 12,        // DOF `row_dof` follows the DOF of the leader slot after it
  kRowCouplingLeader = 13,  // a slot after a coupling's or a tendon's row: two more of its
                            // bodies (its leader DOF's, a tendon's next), no row of its own
  kRowFrictionLoss = 14,    // dry friction on DOF `row_dof` (a box on its impulse)
  // Rows on tendon `row_joint` (TendonDesc), each followed by its leader slots (row_axis: the
  // row's slot count, >= 2; a leader slot's: its place after the row):
  kRowTendonLimitLower = 15,    // tendon length >= its lower limit (unilateral)
  kRowTendonLimitUpper = 16,    // tendon length <= its upper limit (unilateral)
  kRowTendonDrive = 17,         // the tendon's spring-damper and its servo actuators
  kRowTendonFrictionLoss = 18,  // dry friction along the tendon
  kRowTendonHold = 19,          // tendon length held (TendonDesc::hold; bilateral)
  // A contact's angular friction rows (contact dimension 4 and 6), after the contact's three
  // rows: contact_angular_rows of them (kernels_contact.h).
  kRowContactTorsion = 20,  // contact `row_contact` spinning about its normal (torsional)
  kRowContactRoll1 = 21,    // contact `row_contact` rolling about tangent 1 (with roll 2)
  kRowContactRoll2 = 22     // contact `row_contact` rolling about tangent 2
};

// How an actuator's activation moves (actuator_dynamics): ActuatorDynamics's values, and a
// muscle's own.
enum ActivationKind : int32_t {
  kActivationNone = 0,
  kActivationIntegrator = 1,
  kActivationFilter = 2,
  kActivationMuscle = 3
};
inline constexpr Real kUnboundedActivation = Real(1e30);

// A muscle's parameters, in this order in actuator_muscle (MuscleDesc's fields).
enum MuscleParam : int32_t {
  kMuscleTimeActivation = 0,
  kMuscleTimeDeactivation,
  kMuscleRangeLow,
  kMuscleRangeHigh,
  kMuscleForce,
  kMuscleLengthMin,
  kMuscleLengthMax,
  kMuscleVelocityMax,
  kMusclePassiveForce,
  kMuscleVelocityForceMax,
  kMuscleLengthRangeLow,
  kMuscleLengthRangeHigh,
  kMuscleParams  // the count
};

// Residuals a world keeps for the Newton loop's cycle test (SolverOptions::strict_after_cycle).
inline constexpr int kCycleRing = 16;
// Steps after one whose attempt needed the contact presolve (world_contact_presolve) that start
// from it directly: a pile whose contacts keep changing state fails again from the last step's
// impulses, and each such failure cost halving_iterations Newton iterations before the retry.
inline constexpr int kPresolveCarrySteps = 32;

struct BatchView {
  int32_t world_count = 0;

  // ---- world (world_count) ------------------------------------------------------------------
  const int32_t* world_body_offset;       // (world_count + 1) first body of each world
  const int32_t* world_joint_offset;      // (world_count + 1)
  const int32_t* world_dof_offset;        // (world_count + 1) joint velocity coordinates
  const int32_t* world_qpos_offset;       // (world_count + 1) joint position coordinates
  const int32_t* world_actuator_offset;   // (world_count + 1)
  const int32_t* world_tendon_offset;     // (world_count + 1)
  const int32_t* world_shape_offset;      // (world_count + 1)
  const int32_t* world_pair_offset;       // (world_count + 1) candidate pair slots (capacity)
  const int32_t* world_pair_rule_offset;  // (world_count + 1) the filter's exceptions
  const int32_t* world_contact_offset;    // (world_count + 1) contact slots (capacity)
  const int32_t* world_row_offset;        // (world_count + 1) row slots: joint rows, then 3/contact
  const int32_t* world_joint_row_count;   // (world_count) joint rows (fixed per model)
  // (world_count) angular friction rows a contact may take (fixed per model; the row slots
  // reserved per contact slot): 0 where no shape has a contact dimension above 3, 1 (torsion)
  // where the largest is 4, 3 (torsion and rolling) at 6
  const int32_t* world_contact_angular_rows;
  const WorldParams* world_params;        // (world_count)
  int32_t* world_active;                  // (world_count) WorldPhase of the current step
  int32_t* world_step_pending;            // (world_count) sub-steps still to take in this Step call
  int32_t* world_contact_count;           // (world_count) live contacts
  int32_t* world_angular_row_count;       // (world_count) their angular friction rows
  uint32_t* world_flags;                  // (world_count) WorldFlag bits of the last step
  int32_t* world_newton_iterations;       // (world_count) of the last step, over its attempts
  int32_t* world_substeps;                // (world_count) steps of h / 2^k the last step took
  Real* world_step_length;                // (world_count) length of the last one taken (s)
  int32_t* world_island_count;            // (world_count) islands of the last attempt (island_*)
  int32_t* world_newton_attempt;          // (world_count) Newton iterations of this attempt
  int32_t* world_halves_left;             // (world_count) steps of world_step_length still to
                                          // take within the current step (0: done)
  int32_t* world_halvings;                // (world_count) halvings of the current step so far
  int32_t* world_redos;                   // (world_count) returns of the current attempt to its
                                          // start for a missed or misjudged contact
                                          // (contact_redos)
  int32_t* world_contact_redos;           // (world_count) such returns in the last step
  int32_t* world_step_level;              // (world_count) halvings the next step starts at
                                          // (halving_carryover), in [0, step_halvings]
  int32_t* world_presolve_carry;          // (world_count) steps whose attempts start from the
                                          // contact presolve, the current one included while
                                          // it runs; between steps in [0, kPresolveCarrySteps]
  int32_t* world_cr_iterations;           // (world_count) of the last step, summed over Newton
  int32_t* world_line_search_trials;      // (world_count) trial iterates evaluated in the last
                                          // step's line searches, summed over Newton
  Real* world_residual;        // (world_count) residual max-norm after the last evaluation
  Real* world_merit;           // (world_count) 0.5 |residual|^2 after the last evaluation
  int32_t* world_tree_built;   // (world_count) tree preconditioner built for this step
  int32_t* world_tree_levels;  // (world_count) levels of the tree (body_tree_level)
  // loop closures: the rows outside the tree that close loops, and their Schur complement
  // (kernels_solver.h, world_loop_factor)
  int32_t* world_loop_count;    // (world_count) rows in the loop factor (0: none)
  int32_t* world_loop_rows;     // (world_count x 16) those rows (kLoopRows), in row order
  Real* world_loop_lu;          // (world_count x 256) LU factors of their Schur complement S,
                                // row-major 16 x 16
  int32_t* world_solve_runs;    // (world_count) runs of rows in row_solve_runs, host only (0:
                                // the linear solve walks all live rows)
  int32_t* world_presolve_colors;       // (world_count) colours of the contact presolve's contacts,
                                        // the last for contacts beyond 64 colours
                                        // (world_contact_presolve)
  int32_t* world_presolve_color_start;  // (world_count x 66) where each colour's contacts
                                        // begin in row_presolve_order, then their end
  int32_t* world_missed_count;  // (world_count) pairs a redo of this step marked
                                // (pair_missed_shape_a/b)
  int32_t* world_pair_count;    // (world_count) candidate pairs the last broad phase found (-1:
                                // past the world's pair slots)
  int32_t* world_newton_best;   // (world_count) latest Newton iteration (of this attempt) at
                                // which some island's best iterate improved
  Real* world_residual_best;    // (world_count) largest residual of the islands' best iterates
  Real* world_residual_last;    // (world_count) residual at the last convergence test (of the
                                // iterate the next Newton step starts from)
  int32_t* world_linear_tail;  // (world_count) 1 while Newton converges linearly (kLinearTailRatio)
  int32_t* world_cycled;       // (world_count) 1 once the attempt's solve cycled (strict search)
  Real* world_residual_ring;   // (world_count x kCycleRing) residuals of the latest iterates, at
                               // the Newton iteration modulo kCycleRing (the cycle test)
  Real* world_ls_step;         // (world_count) 1 while some island's line search goes on, else 0
  int32_t* world_ls_trials;    // (world_count) line-search trials taken this iteration
  Real* world_time;            // (world_count) simulated time (s)
  // (world_count + 1) the fixed tendons' coordinates (tendon_joint_*)
  const int32_t* world_tendon_joint_offset;

  // ---- bodies (body_count = world_body_offset[world_count]) ---------------------------------
  const int32_t* body_world;     // (body_count)
  const Real* body_inv_mass;     // (body_count) 1/m (1/kg)
  const Real* body_inertia;      // (body_count x 9) about the COM, body frame (kg m^2)
  const Real* body_inv_inertia;  // (body_count x 9) inverse of body_inertia; zero where
                                 // body_rotation_fixed
  // (body_count) 1 where a rigid joint to the world locks the body's rotation (slides only, or
  // welded): the body then has no rotational freedom (zero inverse inertia, zero angular
  // velocity, its orientation the one its state holds) in place of three angular lock rows,
  // which Newton would solve to a tolerance for what the model states exactly; they were a
  // third of the rows of a pile of particles on slides (RESULTS.md, "Rotations held").
  const int32_t* body_rotation_fixed;
  // (body_count x 3) sides of the box with the body's mass and principal moments (m), which
  // the fluid forces act on (SolverOptions::fluid_density, fluid_viscosity)
  const Real* body_fluid_box;
  // (body_count x 9) the body's principal axes, the columns, in the body frame
  const Real* body_fluid_axes;
  Real* body_q;                   // (body_count x 7) inertial pose: COM position, quaternion
  Real* body_u;                   // (body_count x 6) twist: COM velocity, angular velocity
  Real* body_q_prev;              // (body_count x 7) q- of the current step
  Real* body_u_prev;              // (body_count x 6) u- of the current step
  Real* body_q_end;               // (body_count x 7) q+ of the attempt a contact redo undid
  Real* body_u_end;               // (body_count x 6) u+ of that attempt
  Real* body_u_tilde;             // (body_count x 6) unconstrained velocity u~ (gravity, forces)
  Real* body_u_accepted;          // (body_count x 6) Newton iterate accepted by the line search
  Real* body_u_best;              // (body_count x 6) accepted iterate of lowest merit
  Real* body_inv_inertia_world;   // (body_count x 9) R I^-1 R^T at q-
  Real* body_inertia_world;       // (body_count x 9) R I R^T at q-
  Real* body_inv_inertia_newton;  // (body_count x 9) (R I R^T + K)^-1: K the stabilising part of
                                  // the joints' geometric stiffness, used by the Newton matrix
  Real* body_inertia_newton;      // (body_count x 9) R I R^T + K, the same in inertia form (the
                                  // tree factor starts from it)
  Real* body_wrench;              // (body_count x 6) user force, torque at the COM (N, N m)
  Real* body_acc;                 // (body_count x 6) the last step's (u - u-) / h: COM linear
                                  // then angular acceleration (accelerometers)
  Real* body_g;                   // (body_count x 6) dynamics residual g = M (u - u~) - J^T lambda
  Real* body_du;                  // (body_count x 6) Newton direction for u
  Real* body_jt;                  // (body_count x 6) scratch: J^T x
  Real* body_minv_jt;             // (body_count x 6) scratch: M^-1 J^T x
  // spanning-tree preconditioner (kernels_tree.h), rebuilt every step
  Real* body_tree_block;        // (body_count x 36) Cholesky factor of the body's eliminated block
  Real* body_tree_x;            // (body_count x 6) scratch of the tree solve
  int32_t* body_tree_parent;    // (body_count) head row of the group to the parent body; -1: root
  int32_t* body_tree_order;     // (body_count) the world's bodies breadth-first from the roots
  int32_t* body_tree_set;       // (body_count) union-find parent while the tree is built
  int32_t* body_tree_grounded;  // (body_count) union-find: the set has its group to the world
  int32_t* body_tree_level;     // (body_count) height above the body's lowest descendant
  int32_t* body_tree_level_order;  // (body_count) the world's bodies by level
  int32_t* body_tree_level_start;  // (body_count) at the world's first body + l: where level l
                                   // starts in body_tree_level_order
  int32_t* body_tree_child_begin;  // (body_count) first entry of the groups below the body (its
                                   // children's and its leaves') in row_tree_child_group
  int32_t* body_tree_child_count;  // (body_count) how many
  uint32_t* body_presolve_colors;  // (body_count x 2) the presolve's colours of the contacts
                                   // on the body so far, a 64-bit set (world_contact_presolve)
  // the live rows acting on each body (kernels_solver.h), rebuilt every step
  int32_t* body_row_begin;  // (body_count) first entry of the body's rows in row_body_list
  int32_t* body_row_count;  // (body_count) how many
  // islands (kernels_solver.h, world_build_islands), rebuilt every attempt: the sets of bodies
  // that joints and contacts connect, each with its own line search, best iterate and
  // convergence test. A world's islands take the slots of its first bodies (island slot
  // world_body_offset[w] + k for its k-th island), so the arrays below are body-sized.
  int32_t* body_island;           // (body_count) the body's island slot (global index)
  Real* island_merit;             // (body_count) island's 0.5 |residual|^2 at the last evaluation
  Real* island_merit_accepted;    // (body_count) ... of its accepted iterate
  Real* island_merit_best;        // (body_count) ... of its best accepted iterate this attempt
  Real* island_residual;          // (body_count) island's residual max-norm, last evaluation
  Real* island_residual_best;     // (body_count) ... of its best iterate
  Real* island_ls_step;           // (body_count) island's line-search step t (0: accepted)
  int32_t* island_converged;      // (body_count) island's solve is within the tolerance
  int32_t* island_copy;           // (body_count) scratch: world_copy_iterate copies the island's
                                  // iterate (its new best kept, or its best restored)
  int32_t* island_friction_cone;  // (body_count) its friction rows take W_cone (until a trial's
                                  // merit runs away)

  // ---- joints (joint_count) ------------------------------------------------------------------
  const int32_t* joint_type;         // (joint_count) JointType
  const int32_t* joint_parent;       // (joint_count) global body or -1
  const int32_t* joint_child;        // (joint_count) global body
  const Real* joint_parent_pos;      // (joint_count x 3) joint frame origin, parent COM frame
  const Real* joint_parent_quat;     // (joint_count x 4) joint frame rotation, parent frame
  const Real* joint_child_pos;       // (joint_count x 3) joint frame origin, child COM frame
  const Real* joint_child_quat;      // (joint_count x 4) joint frame rotation, child frame
  const int32_t* joint_axis_mode;    // (joint_count x 6) AxisMode of linear xyz, angular xyz
  const int32_t* joint_dof_offset;   // (joint_count + 1) first global DOF
  const int32_t* joint_qpos_offset;  // (joint_count) first global position coordinate
  const Real* joint_compliance;      // (joint_count) bilateral compliance (m/N or rad/(N m))
  const Real* joint_reference;       // (joint_count) coordinate of the initial configuration
  const Real* joint_second_axis;     // (joint_count x 3) kUniversal: second hinge axis (unit),
                                     //   child joint frame
  const Real* joint_second_offset;   // (joint_count x 3) kUniversal: second hinge anchor minus
                                     //   the first, child joint frame
  const Real* joint_cone_limit;      // (joint_count) kBall: largest turn from the joint's zero
                                     //   (rad), 0 where unlimited
  Real* joint_frame;  // (joint_count x 34) JointFrames at the current iterate q+: anchors and
                      //   levers of parent and child (4 x 3), frame rotations (2 x 4), and a
                      //   universal joint's two angles and world axes and rates (2 + 4 x 3)

  // ---- joint DOFs (dof_count) ----------------------------------------------------------------
  const int32_t* dof_joint;             // (dof_count) owning joint
  const int32_t* dof_axis;              // (dof_count) joint-frame axis 0..5 (lin x,y,z, ang x,y,z)
  const int32_t* dof_limited;           // (dof_count)
  const Real* dof_lower;                // (dof_count) (m or rad)
  const Real* dof_upper;                // (dof_count)
  const Real* dof_armature;             // (dof_count) (kg or kg m^2)
  const Real* dof_stiffness;            // (dof_count) passive/drive stiffness from the model
  const Real* dof_damping;              // (dof_count)
  const Real* dof_target_position;      // (dof_count)
  const Real* dof_target_velocity;      // (dof_count)
  const Real* dof_friction_loss;        // (dof_count) dry friction (N or N m)
  const Real* dof_coupling_poly;        // (dof_count x 5) a follower's coupling polynomial c0..c4
  const Real* dof_coupling_compliance;  // (dof_count) its compliance
  Real* dof_drive_stiffness;            // (dof_count) the model's drive this step (spring, damper)
  Real* dof_drive_damping;              // (dof_count)
  Real* dof_drive_position;             // (dof_count)
  Real* dof_drive_velocity;             // (dof_count)
  // Servo actuators' drive this step, added to the model's and solved in the same row, its
  // force bounded by [force_min, force_max] (N or N m; unbounded: -+1e30). Several servos
  // on a DOF sum: stiffness sum kp, damping sum kv, and the targets weighted by their gains.
  Real* dof_servo_stiffness;  // (dof_count) sum of kp
  Real* dof_servo_damping;    // (dof_count) sum of kv
  Real* dof_servo_kp_target;  // (dof_count) sum of kp * target position
  Real* dof_servo_kv_target;  // (dof_count) sum of kv * target velocity
  Real* dof_servo_force_min;  // (dof_count)
  Real* dof_servo_force_max;  // (dof_count)
  Real* dof_effort;           // (dof_count) actuator force/torque along the DOF
  Real* dof_velocity;         // (dof_count) joint velocity, written back after the step
  Real* dof_velocity_prev;    // (dof_count) joint velocity at the start of the step
  // The DOF's coordinate at the current iterate q+ (dof_evaluate), shared by its limit and
  // drive rows: (dof_count) value; (dof_count x 12) Jacobian blocks, child then parent.
  Real* dof_coord;
  Real* dof_coord_jac;
  Real* qpos;  // (qpos_count) joint positions, written back after the step

  // ---- actuators (actuator_count) ------------------------------------------------------------
  const int32_t* actuator_type;           // (actuator_count) ActuatorType
  const int32_t* actuator_dof;            // (actuator_count) global DOF
  const Real* actuator_gear;              // (actuator_count)
  const Real* actuator_kp;                // (actuator_count)
  const Real* actuator_kv;                // (actuator_count)
  const Real* actuator_target_scale;      // (actuator_count) a servo's target per unit ctrl
  const int32_t* actuator_force_limited;  // (actuator_count) whether its force is clamped
  const Real* actuator_force_min;         // (actuator_count) (N or N m)
  const Real* actuator_force_max;         // (actuator_count)
  Real* actuator_ctrl;                    // (actuator_count) control input
  const int32_t* actuator_tendon;         // (actuator_count) global tendon it drives (its DOF
                                          //   then unused), or -1
  const int32_t* actuator_reaction_body;  // (actuator_count) global body taking the opposite
                                          // wrench, or -1
  const int32_t* actuator_force_world;    // (actuator_count) 1: the force in world axes
  const Real* actuator_site_arm;          // (actuator_count x 3) the site from the centre of
                                          // mass (body frame), where either is set
  const int32_t* actuator_body;           // (actuator_count) global body a site actuator
                                          //   pushes on (its DOF then unused), or -1
  const int32_t* actuator_adhesion_body;  // (actuator_count) global body an adhesion actuator
                                          //   pulls onto what it touches (its DOF then
                                          //   unused), or -1
  // (actuator_count x 6) a site actuator's wrench on its body per unit force, force then torque
  // about the centre of mass, body frame (ActuatorDesc::site_wrench moved there); with a world
  // force or a reaction body, the force (world axes where actuator_force_world) and the torque
  // alone, the arm's torque taken at the pose (site_actuator_push)
  const Real* actuator_body_wrench;
  // (actuator_count x kMuscleParams) a muscle's parameters (MuscleDesc, kernels_body.h's
  // kMuscle* order); zero for other actuators
  const Real* actuator_muscle;
  // (actuator_count) ActivationKind: how the activation moves (none: the actuator acts on ctrl)
  const int32_t* actuator_dynamics;
  // (actuator_count x 3) a filter's time constant, then the range the activation is clamped
  // to after each step (+-kUnboundedActivation where not limited)
  const Real* actuator_dynamics_prm;
  Real* actuator_activation;  // (actuator_count) the actuator's activation; 0 where it has none

  // ---- tendons (tendon_count) ----------------------------------------------------------------
  // A fixed tendon's length is L = sum_k coef_k q_k over its scalar DOFs (its tendon joints,
  // below); a spatial tendon's that of its path (TendonDesc).
  const int32_t* tendon_joint_begin;  // (tendon_count) its first global tendon joint
  const int32_t* tendon_joint_count;  // (tendon_count) how many (0: a spatial tendon)
  // A spatial tendon's path (TendonPathDesc), P = kMaxTendonPath elements per tendon, each
  // site's and wrapping shape's position in its body's centre-of-mass frame (world if static).
  // Fixed width per tendon: a path is a handful of elements, and tendons are few.
  const int32_t* tendon_path_count;      // (tendon_count) elements; 0: a fixed tendon
  const int32_t* tendon_body;            // (tendon_count x 4) the global bodies the path moves
                                         //   with, its rows' sides in order; -1 unused
  const int32_t* tendon_path_kind;       // (tendon_count x P) TendonPathDesc::Kind
  const int32_t* tendon_path_body;       // (tendon_count x P) global body or -1
  const Real* tendon_path_pos;           // (tendon_count x P x 3)
  const Real* tendon_path_quat;          // (tendon_count x P x 4) a wrapping shape's or
                                         //   slider's axes
  const Real* tendon_path_size;          // (tendon_count x P) radius, a pulley's divisor or a
                                         //   crank's rod length
  const int32_t* tendon_path_side_body;  // (tendon_count x P) side site's global body, -1
                                         //   static, -2 none
  const Real* tendon_path_side_pos;      // (tendon_count x P x 3) in that body's frame
  const Real* tendon_lower;              // (tendon_count) length limits (m or rad), where limited
  const Real* tendon_upper;              // (tendon_count)
  const Real* tendon_stiffness;          // (tendon_count) spring (N/m or N m/rad)
  const Real* tendon_damping;            // (tendon_count) damper (N s/m or N m s/rad)
  const Real* tendon_spring_length;      // (tendon_count) the spring's rest length
  const Real* tendon_friction_loss;      // (tendon_count) dry friction (N or N m)
  const Real* tendon_hold_length;        // (tendon_count) the length held, where held
  const Real* tendon_hold_compliance;    // (tendon_count) its compliance (m/N or rad/(N m))
  const Real* tendon_hold_damping;       // (tendon_count) its damping (N s/m), 0 where rigid
  // A spatial tendon's length and Jacobian on its four sides at the iterate q+ (tendon_evaluate),
  // read by its rows.
  Real* tendon_length;  // (tendon_count)
  Real* tendon_jac;     // (tendon_count x 24)
  // Servo actuators on the tendon this step, as the DOFs' (dof_servo_*).
  Real* tendon_servo_stiffness;  // (tendon_count) sum of kp
  Real* tendon_servo_damping;    // (tendon_count) sum of kv
  Real* tendon_servo_kp_target;  // (tendon_count) sum of kp * target length
  Real* tendon_servo_kv_target;  // (tendon_count) sum of kv * target rate
  Real* tendon_servo_force_min;  // (tendon_count)
  Real* tendon_servo_force_max;  // (tendon_count)

  // ---- tendon joints: the fixed tendons' coordinates (TendonDesc::joints), tendon by tendon ---
  // Ragged (tendon_joint_begin, tendon_joint_count) rather than a fixed width per tendon: most
  // fixed tendons couple two joints, a soft body's one spans hundreds.
  const int32_t* tendon_joint_dof;   // (tendon joints) global DOF q_k
  const Real* tendon_joint_coef;     // (tendon joints) coef_k
  const int32_t* tendon_joint_side;  // (tendon joints x 2) the tendon's rows' sides of the
                                     //   DOF's joint child and parent (-1: the static world)

  // ---- shapes (shape_count) ------------------------------------------------------------------
  const int32_t* shape_world;        // (shape_count)
  const int32_t* shape_body;         // (shape_count) global body or -1
  const int32_t* shape_type;         // (shape_count) ShapeType
  const Real* shape_pos;             // (shape_count x 3) in the body COM frame (world if static)
  const Real* shape_quat;            // (shape_count x 4)
  const Real* shape_size;            // (shape_count x 3)
  const Real* shape_friction;        // (shape_count)
  const Real* shape_restitution;     // (shape_count)
  const int32_t* shape_contact_dim;  // (shape_count) 1: frictionless, 3: with friction, 4: and
                                     //   torsional, 6: and rolling
  const Real* shape_torsion;         // (shape_count) torsional friction coefficient (m)
  const Real* shape_rolling;         // (shape_count) rolling friction coefficient (m)
  const Real* shape_margin;          // (shape_count) MuJoCo's geom margin (m; ShapeDesc)
  const Real* shape_gap;             // (shape_count) MuJoCo's geom gap (m; ShapeDesc)
  const Real* shape_reach;           // (shape_count) the largest margin of its pairs (m): its
                                     //   own, and its explicit pairs' (ContactPairDesc)
  const int32_t* shape_adhesion;     // (shape_count) 1: on an adhesion actuator's body
  const int32_t* shape_priority;     // (shape_count) MuJoCo's geom priority (ShapeDesc)
  const int32_t* shape_hull;         // (shape_count) hull index or -1
  const int32_t* shape_rule_first;   // (shape_count) first of the pair rules it is the lower
                                     // shape of (pair_rule_*)
  const int32_t* shape_rule_count;   // (shape_count) number of those rules
  const uint32_t* shape_collision_group;  // (shape_count) ShapeDesc::collision_group
  const uint32_t* shape_collision_mask;   // (shape_count) ShapeDesc::collision_mask
  Real* shape_aabb;            // (shape_count x 6) lower xyz, upper xyz at q- (swept); after
                               // a solve, at q+
  Real* shape_sweep;           // (shape_count) how far any point of the shape can move this step
                               // (predicted at q-); after a solve, how far one moved (q- to q+)
  int32_t* shape_sweep_order;  // (shape_count) the broad phase's shapes sorted along its axis
  int32_t* shape_pair_end;     // (shape_count) the broad phase's sort: past the candidate pairs
                               // the shape is the lower shape of
  int32_t* shape_end_inside;   // (shape_count) after a solve: 1 where its box at q+ lies within
                               // its swept box at q- (shape_update_end_aabb)
  // convex hulls (hull_count), flattened
  const int32_t* hull_vertex_offset;      // (hull_count + 1) into hull_vertices (in vertices)
  const int32_t* hull_face_offset;        // (hull_count + 1) into hull_face_start (in faces)
  const Real* hull_vertices;              // (hull_vertex_total x 3)
  const int32_t* hull_face_start;         // (hull_face_total + hull_count) per hull: face_count+1
                                          // entries into hull_face_index, local to the hull
  const int32_t* hull_face_index;         // face vertex indices, local to the hull
  const int32_t* hull_face_index_offset;  // (hull_count) start of each hull's indices
  const Real* hull_face_plane;            // (hull_face_total x 4)
  const int32_t* hull_edge_start;         // (hull_vertex_total + hull_count) per hull:
                                          // vertex_count+1 entries into its edges
  const int32_t* hull_edge_index_offset;  // (hull_count) start of each hull's edges
  const int32_t* hull_edge_vertex;        // (hull_edge_total) an edge's far vertex, local
  const int32_t* hull_edge_face;          // (hull_edge_total) the face it bounds, local
  const int32_t* hull_climb_start;        // (hull_count x 14) where climbs start, local
  const Real* hull_radius;                // (hull_count) largest vertex norm (m)
  // height fields (heightfield_count), flattened; a kHeightField shape's shape_hull is its index
  const int32_t* heightfield_offset;  // (heightfield_count + 1) into heightfield_heights
  const int32_t* heightfield_cols;    // (heightfield_count) points per row (rows: the rest)
  const Real* heightfield_top;        // (heightfield_count) the highest height (bounds)
  const Real* heightfield_heights;    // (heightfield point total) HeightFieldDesc::heights

  // ---- pair rules (rule_count = world_pair_rule_offset[world_count]) -------------------------
  // The group/mask filter's exceptions (Model::pair_rules), grouped by lower shape, each group
  // sorted by upper shape.
  const int32_t* pair_rule_shape_b;  // (rule_count) the upper shape, global
  const Real* pair_rule_friction;    // (rule_count) an explicit pair's friction, or
                                     // Model::kPairExcluded
  const Real* pair_rule_torsion;     // (rule_count) an explicit pair's torsional friction (m)
  const Real* pair_rule_rolling;     // (rule_count) an explicit pair's rolling friction (m)
  const Real* pair_rule_margin;      // (rule_count) an explicit pair's margin (m)
  const Real* pair_rule_gap;         // (rule_count) an explicit pair's gap (m)

  // ---- candidate pairs (pair slots = world_pair_offset[world_count]) -------------------------
  // Each world's pair capacity of slots, filled by the broad phase: the pairs whose boxes
  // overlap and that may collide, with the pairs a redo marked, sorted by (shape_a, shape_b).
  int32_t* pair_shape_a;         // (pair slots) global shape, the lower
  int32_t* pair_shape_b;         // (pair slots) global shape
  Real* pair_friction;           // (pair slots) an explicit pair's friction, or -1 (the shapes')
  int32_t* pair_marked;          // (pair slots) 1: a redo of this step found the pair deeper
                                 // than missed_contact_depth at q+ than its rows said (or missed
                                 // by them); its points at that attempt's end (body_q_end),
                                 // linearised about it, join its points at q-
  int32_t* pair_missed_shape_a;  // (pair slots) the pairs a redo marked (world_missed_count),
  int32_t* pair_missed_shape_b;  // (pair slots) kept through the step's attempts
  int32_t* pair_order;           // (pair slots) the broad phase's sort: each pair's place

  // ---- contacts (contact slots = world_contact_offset[world_count]) --------------------------
  int32_t* contact_body_a;        // (contact slots) global body or -1
  int32_t* contact_body_b;        // (contact slots)
  int32_t* contact_shape_a;       // (contact slots) global shape
  int32_t* contact_shape_b;       // (contact slots)
  Real* contact_local_a;          // (contact slots x 3) point on a, a's COM frame
  Real* contact_local_b;          // (contact slots x 3) point on b, b's COM frame
  Real* contact_normal;           // (contact slots x 3) world, from b towards a
  Real* contact_tangent;          // (contact slots x 6) two world tangents
  Real* contact_gap;              // (contact slots) signed distance at q- (m)
  Real* contact_gap_shift;        // (contact slots) what the normal row adds to contact_gap (m):
                                  // 0, or for a contact a redo took at an attempt's end, its gap
                                  // there less h J u+ there, less contact_gap
  Real* contact_friction;         // (contact slots) combined mu
  Real* contact_torsion;          // (contact slots) combined torsional mu (m); 0: no torsion
  Real* contact_rolling;          // (contact slots) combined rolling mu (m); 0: no rolling
  int32_t* contact_angular_rows;  // (contact slots) its angular friction rows: 0, 1 (contact
                                  // dimension 4: torsion) or 3 (6: torsion, roll 1, roll 2)
  int32_t* contact_angular_index;  // (contact slots) its first among the world's angular rows
  Real* contact_restitution;      // (contact slots) combined e
  Real* contact_normal_velocity;  // (contact slots) J_n u- (m/s), restitution reference
  // The previous step's contacts with their final impulses, to warm-start matching new ones.
  int32_t* world_prev_contact_count;  // (world_count)
  int32_t* contact_prev_shape_a;      // (contact slots) global shape
  int32_t* contact_prev_shape_b;      // (contact slots)
  Real* contact_prev_points;          // (contact slots x 6) point on a in a's COM frame (the
                                      // world frame for the static world), then point on b
  Real* contact_prev_lambda;          // (contact slots x 6) normal, tangent 1, tangent 2 (N s),
                                      // torsion, roll 1, roll 2 (N m s), tangents and rolling
                                      // axes the normal's orthonormal_basis

  // ---- constraint rows (row slots = world_row_offset[world_count]) ---------------------------
  const int32_t* row_world;   // (row slots)
  int32_t* row_kind;          // (row slots) RowKind
  int32_t* row_joint;         // (row slots) global joint (joint rows)
  int32_t* row_axis;          // (row slots) axis index (joint rows); a coupling's or a
                              //   tendon's row's slot count; a leader slot's place after its
                              //   row (row_entry_row)
  int32_t* row_dof;           // (row slots) global DOF (limit and drive rows)
  int32_t* row_contact;       // (row slots) global contact slot (contact rows)
  int32_t* row_body_a;        // (row slots) global body or -1
  int32_t* row_body_b;        // (row slots) global body or -1
  Real* row_jac_a;            // (row slots x 6) Jacobian block of body a
  Real* row_jac_b;            // (row slots x 6) Jacobian block of body b
  Real* row_lever;            // (row slots x 6) lever arms (world) on a and b whose
                              // rotation turns the row's force (geometric stiffness)
  Real* row_residual;         // (row slots) h: constraint residual, as the Newton system
                              // sees it (J du + C dlambda = -h)
  Real* row_error;            // (row slots) the same residual scaled for measuring
                              // convergence (m/s); differs from h on unilateral rows
  Real* row_compliance;       // (row slots) C: diagonal of the compliance block
  Real* row_coupling;         // (row slots x 2) friction rows: C in the columns of the
                              // contact's normal row and of its other friction row
  Real* row_precond;          // (row slots) Jacobi preconditioner 1/(J M^-1 J^T + C)
  Real* row_lambda;           // (row slots) impulse (N s)
  Real* row_lambda_accepted;  // (row slots) impulse accepted by the line search
  Real* row_lambda_best;      // (row slots) impulse of the accepted iterate of lowest merit
  Real* row_lambda_start;     // (row slots) joint rows: impulse the attempt started from, to
                              // which an undone attempt returns
  Real* row_dlambda;          // (row slots) Newton direction (CR solution)
  Real* row_cr_r;             // (row slots) CR residual
  Real* row_cr_z;             // (row slots) preconditioned residual
  Real* row_cr_p;             // (row slots) search direction
  Real* row_cr_az;            // (row slots) A z
  Real* row_cr_ap;            // (row slots) A p
  Real* row_cr_pap;           // (row slots) P A p
  Real* row_gcr_p;            // (row slots x 12) GCR directions p (kGcrDirections); a world's
                              // block from 12 x its first slot holds them one after another,
                              // each over the world's row slots
  Real* row_gcr_q;            // (row slots x 12) their products A p, laid out alike
  Real* row_loop_a;           // (row slots) the loop closures' work vector
  Real* row_loop_x;           // (row slots x 16) P_R A_RL e_c of the loop rows c, laid out as
                              // row_gcr_p
  // spanning-tree preconditioner: rows in groups on one body pair (kernels_tree.h)
  Real* row_tree_block;       // (row slots x 12) row k of the group's factored block
  Real* row_tree_y;           // (row slots x 6) row k of N_g^-1 J_gp (J of the parent body)
  Real* row_tree_t;           // (row slots x 6) D_b^-1 J_gb^T of the row (b: the child body)
  int32_t* row_tree_head;     // (row slots) first row of the row's tree group; -1: Jacobi row
  int32_t* row_tree_size;     // (row slots) at a group's first row: its rows; else 0
  int32_t* row_tree_parent;   // (row slots) at a group's first row: the parent body; -1: a
                              // group to the world, the root of its component
  int32_t* row_tree_child;    // (row slots) at a group's first row: the child body
  int32_t* row_tree_dropped;  // (row slots) 1: redundant, 2: inactive (decoupled) this Newton
                              // iteration, Jacobi instead
  int32_t* row_held_out;      // (row slots) 1: decoupled this Newton iteration and solved on its
                              // own, outside the linear solve (row_hold_out)
  int32_t* row_tree_rows;     // (row slots) at a group's rows 0 .. count - 1: the offsets within
                              // the group of the rows factored this iteration (the active ones)
  int32_t* row_tree_count;    // (row slots) at a group's first row: how many rows it factors
  int32_t* row_tree_child_group;  // (row slots) per world from its first slot: each body's
                                  // groups below it (head rows), in row order
  Real* row_tree_u;               // (row slots x 6) at a group's first row: J_gp^T w_g, its
                                  // forward solve's share of its parent's f_p
  int32_t* row_body_list;         // (row slots x 2) per world from its first slot: each body's rows
                                  // in row order, as 4 slot + 2 leader + b (row_entry: the
                                  // side's slot, whether a leader slot, b = 1 its body b)
  int32_t* row_solve_runs;        // (row slots x 2) per world from its first slot: the runs
                                  // [begin, end) of live rows outside frozen islands, for this
                                  // Newton iteration's linear solve (world_build_solve_runs)
  int32_t* row_presolve_color;    // (row slots) at a contact's normal row: its colour in the
                                  // contact presolve's sweeps (world_contact_presolve)
  int32_t* row_presolve_order;    // (row slots) per world from its first slot: its contacts
                                  // by colour, each colour's in contact order
};

}  // namespace axion
