// The step, as a linear pipeline over the batch (seeds 000 and 003):
//   collide; predict; evaluate residuals; Newton loop (assemble, precondition, Conjugate
//   Residual, recover du, line search, update); recheck contacts at q+; write back. A failed
//   solve goes again from the step's start as two steps of half the length
//   (SolverOptions::step_halvings); one that ends deeper in a contact than its rows held it goes
//   again at the same length, with that contact's points where it ended added to the set
//   (SolverOptions::contact_redos).
// Written once against an executor `Exec` that runs a per-element function over the elements
// (bodies, rows, ...) of a world range: the CPU backend runs it serially on a chunk of worlds
// per thread, the CUDA backend launches one kernel over the whole batch. Per-world passes that
// loop over a world's rows run on a team per world (`teams`: one thread on the CPU, a warp on
// CUDA; see Team). Row passes act on each world's live rows only: an executor may visit more
// (the backends skip the unused slots of the contact capacity), and every row pass masks
// liveness itself, or acts only on joint rows, which are always live. Every kernel is masked by
// its world's phase, so a world's result never depends on which other worlds share the batch.
// The Newton loop's last trips may run world by world instead (LoopBounds::batched_newton_trips
// and batched_newton_worlds: each world still iterating finishes alone on its team,
// fused_newton.h), with the same bits. An executor's loop_while(range, max_trips, pred, body,
// min_worlds) takes body() while at least min_worlds worlds of the range satisfy pred (1: any).
#pragma once

#include "kernels_solver.h"

// A pass's function: copied to the device with its captures on CUDA; on the host the executor
// calls it before the pass returns, so it captures by reference. By value, each of the step's
// passes copied the 2.5 kB BatchView (twice where an executor forwards it): 2.6% of the
// humanoid's step on one core, the same bits (RESULTS.md).
#if defined(__CUDACC__)
#define AXION_LAMBDA [=] __host__ __device__
#else
#define AXION_LAMBDA [&]
#endif

namespace axion {

struct WorldRange {
  int begin = 0, end = 0;
};

// Upper bounds of the step's loops over the whole batch (maxima of the worlds' options), so
// every loop terminates even where an executor cannot afford to test convergence each pass.
struct LoopBounds {
  int newton_iterations = 0;
  int line_search_trials = 0;
  int attempts = 1;  // solves per step: every halving retried down to the last level, each
                     // after its contact redos
  int batched_newton_trips = kAllNewtonTrips;  // Newton trips taken as passes over the batch;
                                               // the worlds still iterating then finish their
                                               // solves alone, each on its team (fused_newton)
  int batched_newton_worlds = 1;  // ... and taken only while at least this many worlds of the
                                  // range still iterate (1: any); fewer finish alone
  static constexpr int kAllNewtonTrips = 1 << 30;
  bool spatial_tendons = false;  // some world has a spatial tendon (world_evaluate_tendons)
};

namespace pipeline {
using namespace kernels;

// Positions (m) and velocities (m/s, rad/s) beyond this are a diverged world, not physics.
inline constexpr Real kDivergedMagnitude = Real(1e12);
// Friction rows take W's derivative in the cone (W_cone, kernels_contact.h) until a line-search
// trial's merit passes this multiple of the attempt's best, then drop it for the rest of the
// attempt. The exact term lets sliding contacts converge quadratically, but where the normal
// impulses move far in one iteration (a landing) its linearisation of W ~ 1 / cone overshoots:
// the humanoid dropped at 0.005 s without this took 19.9 Newton iterations per step over its
// first second against 3.1 (69 steps unconverged against 0). At 10 times the best the pile of
// PreconditionerTest.WorldsOfContactsOnlyFactorTheTree lost the term in steps that needed it
// (8 of its last 300 at the Newton limit against 0); 1000 matches line_search_growth. Under
// control noise, 32 seeds x 5 s, against no W_cone: 11.77 / 4.82 / 3.81 / 3.44 / 3.85 s
// against 13.06 / 5.67 / 4.13 / 3.82 / 3.71 s at 0.005 / 0.02 / 0.06 / 0.12 / 0.16 s
// (RESULTS.md).
inline constexpr Real kFrictionConeMeritGrowth = Real(1000);

AXION_HD bool stepping(const BatchView& v, int w) { return v.world_active[w] != kPhaseIdle; }
AXION_HD bool iterating(const BatchView& v, int w) { return v.world_active[w] == kPhaseNewton; }
AXION_HD bool searching(const BatchView& v, int w) {
  return v.world_active[w] == kPhaseNewton && v.world_ls_step[w] > 0;
}
AXION_HD int dof_world(const BatchView& v, int dof) {
  return v.body_world[v.joint_child[v.dof_joint[dof]]];
}

// kPresolved: the iterating worlds whose attempt takes world_contact_presolve (within
// kPresolveCarrySteps of a step that needed it, this one included).
enum class Mask { kIterating, kSearching, kPresolved };
AXION_HD bool in_mask(const BatchView& v, int w, Mask mask) {
  if (mask == Mask::kPresolved)
    return iterating(v, w) && v.world_presolve_carry[w] > 0 && world_may_presolve(v, w);
  return mask == Mask::kIterating ? iterating(v, w) : searching(v, w);
}
// Whether an island of a world in `mask` takes part: every island while iterating, in the line
// search those that have not yet accepted their trial (an island that has keeps the evaluation
// of that trial). Evaluating every island each trial cost MuJoCo's humanoid100 (a figure and 100
// free bodies, 70-100 islands) twice the time per Newton iteration, the trials running as long
// as any island's search.
AXION_HD bool island_in_mask(const BatchView& v, int island, Mask mask) {
  return mask != Mask::kSearching || v.island_ls_step[island] > 0;
}

/// Per world in `mask`, on its team, the evaluation's stages before and after the rows: q+ from
/// u, the joints' frames and the DOFs' coordinates (world_evaluate_kinematics); the dynamics
/// residual g = M~ (u - u~) - J^T lambda, the world's and its islands' residual norms and
/// merits, and the Newton inertia (world_evaluate_dynamics). A stage's elements are
/// independent, so the team's lanes share them, and it reads only what the stages before it
/// wrote for the same world. The rows stay a pass of their own: their registers would slow
/// every stage fused with them (one fused launch measured 10% slower per evaluation at 8192
/// humanoids on an H100).
AXION_HD void world_evaluate_kinematics(const BatchView& v, Team team, int w, Mask mask) {
  for (int i = v.world_body_offset[w] + team.lane; i < v.world_body_offset[w + 1]; i += team.size)
    if (island_in_mask(v, v.body_island[i], mask)) body_integrate(v, i, v.world_params[w]);
  team_sync(team);
  for (int j = v.world_joint_offset[w] + team.lane; j < v.world_joint_offset[w + 1]; j += team.size)
    if (island_in_mask(v, v.body_island[v.joint_child[j]], mask)) joint_evaluate_frames(v, j);
  team_sync(team);
  for (int d = v.world_dof_offset[w] + team.lane; d < v.world_dof_offset[w + 1]; d += team.size)
    if (island_in_mask(v, v.body_island[v.joint_child[v.dof_joint[d]]], mask)) dof_evaluate(v, d);
  team_sync(team);
}
// ... then, in a launch of its own where the batch has any (LoopBounds::spatial_tendons), the
// spatial tendons' paths (each in the island of its first body, which a tendon's rows tie all
// its bodies to): inside world_evaluate_kinematics their call cost every batch 30 registers
// of that pass (142 to 172, ptxas sm_90).
AXION_HD void world_evaluate_tendons(const BatchView& v, Team team, int w, Mask mask) {
  for (int t = v.world_tendon_offset[w] + team.lane; t < v.world_tendon_offset[w + 1];
       t += team.size) {
    if (v.tendon_path_count[t] > 0 && island_in_mask(v, v.body_island[v.tendon_body[4 * t]], mask))
      tendon_evaluate(v, t);
  }
  team_sync(team);
}
AXION_HD void world_evaluate_dynamics(const BatchView& v, Team team, int w, Mask mask) {
  // J^T lambda and g of the islands in the mask (the others' are as their last evaluation left
  // them, and nothing reads their J^T lambda before the next one)
  for (int i = v.world_body_offset[w] + team.lane; i < v.world_body_offset[w + 1]; i += team.size) {
    if (!island_in_mask(v, v.body_island[i], mask)) continue;
    store6(v.body_jt + 6 * i, body_gather_jt(v, i, v.row_lambda));
    body_dynamics_residual(v, i);
  }
  team_sync(team);
  world_residual(v, team, w, mask == Mask::kSearching);
  world_newton_inertia(v, team, w, mask == Mask::kSearching);
}

// Residuals at the current iterate (u, lambda) of the worlds in `mask`: q+ from u, the joints'
// frames and the DOFs' coordinates, every row's J, h and C, the dynamics residual g, and each
// world's and island's residual norm and merit. Three launches (the line search's trial rides
// on the first): as batch-wide passes over elements, a trial took nine, most of them over worlds
// already done, and the training loop's steps last as long as their slowest world's trials
// (H100, 1024 / 8192 humanoids: 1.07x / 1.03x world-steps/s, the same at full load).
template <class Exec>
void evaluate_rows_and_dynamics(Exec& ex, const BatchView& v, WorldRange wr, Mask mask) {
  // (the executor's constant, not a capture: a runtime flag kept both paths in the device's
  // kernel, row_evaluate)
  if (ex.row_kinds_split) {
    ex.rows(
        wr, AXION_LAMBDA(int r) {
          if (in_mask(v, v.row_world[r], mask) && island_in_mask(v, row_island(v, r), mask))
            row_evaluate_common(v, r, Exec::row_pairs_on_one_thread);
        });
    ex.rows(
        wr, AXION_LAMBDA(int r) {
          if (in_mask(v, v.row_world[r], mask) && island_in_mask(v, row_island(v, r), mask))
            row_evaluate_rare(v, r);
        });
  } else {
    ex.rows(
        wr, AXION_LAMBDA(int r) {
          if (in_mask(v, v.row_world[r], mask) && island_in_mask(v, row_island(v, r), mask))
            row_evaluate(v, r, Exec::row_pairs_on_one_thread);
        });
  }
  ex.teams(
      wr, AXION_LAMBDA(int w, Team team) {
        if (in_mask(v, w, mask)) world_evaluate_dynamics(v, team, w, mask);
      });
}
template <class Exec>
void evaluate_tendons(Exec& ex, const BatchView& v, WorldRange wr, Mask mask,
                      const LoopBounds& bounds) {
  if (!bounds.spatial_tendons) return;
  ex.teams(
      wr, AXION_LAMBDA(int w, Team team) {
        if (in_mask(v, w, mask)) world_evaluate_tendons(v, team, w, mask);
      });
}
template <class Exec>
void evaluate(Exec& ex, const BatchView& v, WorldRange wr, Mask mask, const LoopBounds& bounds) {
  ex.teams(
      wr, AXION_LAMBDA(int w, Team team) {
        if (in_mask(v, w, mask)) world_evaluate_kinematics(v, team, w, mask);
      });
  evaluate_tendons(ex, v, wr, mask, bounds);
  evaluate_rows_and_dynamics(ex, v, wr, mask);
}

// The current iterate of the iterating worlds becomes the accepted one, and the best so far
// when its merit is lowest (`first`: the step's initial iterate).
template <class Exec>
void accept(Exec& ex, const BatchView& v, WorldRange wr, bool first) {
  ex.teams(
      wr, AXION_LAMBDA(int w, Team team) {
        if (!iterating(v, w)) return;
        world_accept(v, team, w);
        world_keep_best(v, team, w, first);
      });
}

// Whether the world's q+ and u+ are finite and bounded (NaN fails the comparison; magnitudes
// past kDivergedMagnitude count as diverged), and its residual a number.
AXION_HD bool world_state_finite(const BatchView& v, int w) {
  bool finite = v.world_residual[w] == v.world_residual[w];
  for (int i = 7 * v.world_body_offset[w]; finite && i < 7 * v.world_body_offset[w + 1]; ++i)
    finite = std::fabs(v.body_q[i]) < kDivergedMagnitude;
  for (int i = 6 * v.world_body_offset[w]; finite && i < 6 * v.world_body_offset[w + 1]; ++i)
    finite = std::fabs(v.body_u[i]) < kDivergedMagnitude;
  return finite;
}

// Impulses that warm-start the next solve (the joint rows', the last step's contacts'),
// scaled by `factor`: they are impulses over a step, and follow its length as it halves.
AXION_HD void world_scale_warm_start(const BatchView& v, int w, Real factor) {
  const int row0 = v.world_row_offset[w];
  for (int row = row0; row < row0 + v.world_joint_row_count[w]; ++row) v.row_lambda[row] *= factor;
  const int slot0 = v.world_contact_offset[w];
  for (int i = 6 * slot0; i < 6 * (slot0 + v.world_prev_contact_count[w]); ++i)
    v.contact_prev_lambda[i] *= factor;
}

// The bodies return to the attempt's start, q- and u-.
AXION_HD void world_restore_start(const BatchView& v, int w) {
  for (int i = 7 * v.world_body_offset[w]; i < 7 * v.world_body_offset[w + 1]; ++i)
    v.body_q[i] = v.body_q_prev[i];
  for (int i = 6 * v.world_body_offset[w]; i < 6 * v.world_body_offset[w + 1]; ++i)
    v.body_u[i] = v.body_u_prev[i];
}

// The pairs a redo of world w's step marked are forgotten.
AXION_HD void world_clear_missed_pairs(const BatchView& v, int w) { v.world_missed_count[w] = 0; }

// A failed attempt is undone: the state returns to q-, u- (the DOFs' coordinates and the last
// step's contacts were not yet written) and the joint rows' impulses to those it started from,
// and what is left of the step is taken in twice as many steps of half the length. Its solver
// figures stay counted. A failed solve's impulses are no warm start: kept, a diverged
// attempt's (40 m/s and more off) started every halved attempt after it far from its solution
// too, and a figure landing at 0.64 s with its hands on fixed joints failed down to h / 16 and
// sank 2.37 m into its floor (RESULTS.md).
AXION_HD void world_undo_attempt(const BatchView& v, int w) {
  world_restore_start(v, w);
  const int row0 = v.world_row_offset[w];
  for (int row = row0; row < row0 + v.world_joint_row_count[w]; ++row)
    v.row_lambda[row] = v.row_lambda_start[row];
  // the pairs a redo took at its end were linearised about where it ended: they start again
  world_clear_missed_pairs(v, w);
  v.world_flags[w] &= ~static_cast<uint32_t>(kWorldNotConverged);
  v.world_redos[w] = 0;
}
AXION_HD void world_halve_step(const BatchView& v, int w) {
  world_undo_attempt(v, w);
  world_scale_warm_start(v, w, Real(0.5));
  v.world_halvings[w] += 1;
  v.world_halves_left[w] *= 2;
  v.world_step_length[w] *= Real(0.5);
}

// Whether world w's attempt ended within halving_residual with a finite state.
AXION_HD bool world_attempt_succeeded(const BatchView& v, int w) {
  const WorldParams& p = v.world_params[w];
  const Real accepted =
      p.halving_residual > p.newton_tolerance ? p.halving_residual : p.newton_tolerance;
  return world_state_finite(v, w) && v.world_residual[w] <= accepted;
}

// Whether a failed attempt of world w may go again from the contact presolve's iterate: a
// world of contacts alone whose step does not yet take it.
AXION_HD bool world_may_retry(const BatchView& v, int w) {
  return v.world_presolve_carry[w] == 0 && world_may_presolve(v, w);
}

// A failed attempt is undone and taken again at the same length, this time (and for the rest
// of the step and kPresolveCarrySteps more) from the contact presolve's iterate
// (world_contact_presolve). Newton from the last step's impulses converges in a few iterations
// wherever contacts keep their states, and there the presolve's order of sweeping would only
// move the impulses of redundant contacts within the solutions (a box landing on four corners
// then rested on an uneven share of them); where contacts change state all over (a pile whose
// columns topple) Newton cycles, and the sweeps bring it near a solution.
AXION_HD void world_retry_with_presolve(const BatchView& v, int w) {
  world_undo_attempt(v, w);
  v.world_presolve_carry[w] = kPresolveCarrySteps + 1;  // this step and the next ones
}

// Whether world w's residual `now`, after `iterations` Newton iterations, is back within 1e-4
// (relative) of its value 2 to kCycleRing iterations earlier: a solve stepping round the same
// trials, which line_search_growth lets pass (cycles of 4 and 9 iterations seen on the humanoid
// landing at 0.04 s). Records `now` in the world's ring.
AXION_HD bool world_residual_cycles(const BatchView& v, int w, int iterations, Real now) {
  Real* ring = v.world_residual_ring + kCycleRing * w;
  bool cycle = false;
  for (int back = 2; back <= kCycleRing && back <= iterations; ++back)
    cycle = cycle || std::fabs(now - ring[(iterations - back) % kCycleRing]) <= Real(1e-4) * now;
  ring[iterations % kCycleRing] = now;
  return cycle;
}

// Whether world w may still go back to its attempt's start for a missed contact.
AXION_HD bool may_redo(const BatchView& v, int w) {
  const WorldParams& p = v.world_params[w];
  return stepping(v, w) && v.world_redos[w] < p.contact_redos &&
         p.missed_contact_depth < kUnboundedMargin;
}

// The attempt is undone for a missed contact (world_find_missed_contacts) and taken again at
// the same length, warm-started by its joints' impulses; its solver figures stay counted.
AXION_HD void world_redo_attempt(const BatchView& v, int w) {
  for (int i = 7 * v.world_body_offset[w]; i < 7 * v.world_body_offset[w + 1]; ++i)
    v.body_q_end[i] = v.body_q[i];
  for (int i = 6 * v.world_body_offset[w]; i < 6 * v.world_body_offset[w + 1]; ++i)
    v.body_u_end[i] = v.body_u[i];
  world_restore_start(v, w);
  v.world_flags[w] &= ~static_cast<uint32_t>(kWorldNotConverged);
  v.world_redos[w] += 1;
  v.world_contact_redos[w] += 1;
}

// The step is covered: its pending count falls, and warm starts return to the full length.
// With halving_carryover the next step starts at the finest level this one reached, or one
// level coarser than this one started at where it did not have to halve.
AXION_HD void world_end_step(const BatchView& v, int w) {
  if (v.world_halvings[w] > 0)
    world_scale_warm_start(v, w, static_cast<Real>(1 << v.world_halvings[w]));
  v.world_step_pending[w] -= 1;
  if (v.world_presolve_carry[w] > 0) v.world_presolve_carry[w] -= 1;
  const int start = v.world_step_level[w];
  if (!v.world_params[w].halving_carryover)
    v.world_step_level[w] = 0;
  else if (v.world_halvings[w] > start)
    v.world_step_level[w] = v.world_halvings[w];
  else if (start > 0)
    v.world_step_level[w] = start - 1;
}

// The step's acceleration, per body: its velocity change over the step's length (a state
// restored after a non-finite step has none).
AXION_HD void world_store_accelerations(const BatchView& v, int w) {
  const Real inv_h = Real(1) / v.world_step_length[w];
  for (int b = v.world_body_offset[w]; b < v.world_body_offset[w + 1]; ++b) {
    for (int i = 0; i < 6; ++i)
      v.body_acc[6 * b + i] = inv_h * (v.body_u[6 * b + i] - v.body_u_prev[6 * b + i]);
  }
}

// The step begins whole, or (halving_carryover) at the level the last one left: 2^level steps
// of h / 2^level, warm starts scaled to that length.
AXION_HD void world_begin_step(const BatchView& v, int w) {
  const WorldParams& p = v.world_params[w];
  int level = p.halving_carryover ? v.world_step_level[w] : 0;
  level = level < p.step_halvings ? level : p.step_halvings;
  v.world_step_level[w] = level;
  v.world_halvings[w] = level;
  v.world_halves_left[w] = 1 << level;
  v.world_step_length[w] = p.timestep / static_cast<Real>(1 << level);
  if (level > 0) world_scale_warm_start(v, w, Real(1) / static_cast<Real>(1 << level));
}

// A Newton iteration ends (world w iterating): the world stops, converged or at one of its
// limits, or takes another iteration.
AXION_HD void world_converge(const BatchView& v, int w) {
  const WorldParams& p = v.world_params[w];
  const int iterations = v.world_newton_attempt[w];
  // a linear tail: the latest Newton step, taken whole, cut the residual by less than
  // kLinearTailRatio (friction rows then relax their regularisation, kernels_common.h)
  const Real last = v.world_residual_last[w], now = v.world_residual[w];
  v.world_linear_tail[w] = iterations > 0 && v.world_ls_trials[w] == 1 && now < last &&
                           now > kLinearTailRatio * last && now < kLinearTailResidual;
  v.world_residual_last[w] = now;
  // with a halving or the presolve's retry left, a solve still far off after
  // halving_iterations gives up early
  const bool halve_early = (v.world_halvings[w] < p.step_halvings || world_may_retry(v, w)) &&
                           iterations >= p.halving_iterations &&
                           !(v.world_residual_best[w] <= p.halving_residual);
  const Real tolerance = newton_stop_tolerance(p, iterations);
  // a solve that cycles takes only decreasing trials from here on
  if (world_residual_cycles(v, w, iterations, now) && p.strict_after_cycle) v.world_cycled[w] = 1;
  const int b0 = v.world_body_offset[w];
  for (int k = b0; k < b0 + v.world_island_count[w]; ++k)
    v.island_converged[k] = v.island_residual[k] <= tolerance;
  if (v.world_residual[w] <= tolerance) {
    v.world_active[w] = kPhaseConverged;
  } else if (iterations >= p.newton_iterations || halve_early ||
             !(v.world_residual[w] == v.world_residual[w]) ||
             (p.newton_stall_iterations > 0 &&
              iterations - v.world_newton_best[w] >= p.newton_stall_iterations)) {
    v.world_active[w] = kPhaseConverged;
    v.world_flags[w] |= kWorldNotConverged;
  } else {
    v.world_newton_attempt[w] += 1;
    v.world_newton_iterations[w] += 1;
  }
}

// The line search begins (world w iterating): every island not frozen tries the full step.
AXION_HD void world_begin_line_search(const BatchView& v, int w) {
  v.world_ls_trials[w] = 0;
  const int b0 = v.world_body_offset[w];
  for (int k = b0; k < b0 + v.world_island_count[w]; ++k) {
    v.island_ls_step[k] = island_frozen(v, k) ? 0 : 1;  // frozen: nothing to try
    v.island_merit_accepted[k] = v.island_merit[k];
  }
  v.world_ls_step[w] = 1;
}

// A trial has been evaluated (world w searching): each island still searching takes it, or
// halves its step for another. An island takes a trial whose merit is at or below
// line_search_growth times its accepted one, or that solves it (within newton_tolerance; the
// tail's looser residual let a settled pile's step end at 2.2e-5 m/s), or its last.
AXION_HD void world_judge_trial(const BatchView& v, int w) {
  const WorldParams& p = v.world_params[w];
  // worlds on the Jacobi diagonal (friction's symmetric form) keep strict decrease: static
  // friction there relies on it (boxes on an incline creep); so does an attempt whose solve
  // cycled (strict_after_cycle)
  const bool strict = !world_uses_tree(v, w) || v.world_cycled[w];
  const Real growth = strict ? Real(1) : p.line_search_growth;
  v.world_ls_trials[w] += 1;
  v.world_line_search_trials[w] += 1;
  const bool last = !p.line_search || v.world_ls_trials[w] > p.line_search_steps;
  bool any = false;
  const int b0 = v.world_body_offset[w];
  for (int k = b0; k < b0 + v.world_island_count[w]; ++k) {
    const Real t = v.island_ls_step[k];
    if (!(t > 0)) continue;  // its trial already accepted
    const bool decreased =
        v.island_merit[k] <= growth * (Real(1) - Real(1e-4) * t) * v.island_merit_accepted[k] ||
        v.island_residual[k] <= p.newton_tolerance;
    // friction's W_cone leaves the island's attempt once a trial's merit passes
    // kFrictionConeMeritGrowth times its best
    if (!(v.island_merit[k] < kFrictionConeMeritGrowth * v.island_merit_best[k]))
      v.island_friction_cone[k] = 0;
    v.island_ls_step[k] = last || decreased ? Real(0) : Real(0.5) * t;
    any = any || v.island_ls_step[k] > 0;
  }
  v.world_ls_step[w] = any ? Real(1) : Real(0);  // 0: every trial accepted
}

// The passes of a Newton iteration, each over one world's elements (the batch passes of
// newton_iteration below run them over every world).
AXION_HD void row_take_friction_newton(const BatchView& v, int r) {
  // the kind first: most rows are not a cone's first, and the other tests cost loads
  const int kind = v.row_kind[r];
  const bool sliding = kind == kRowFriction1;
  if (!sliding && kind != kRowContactTorsion && kind != kRowContactRoll1) return;
  const int w = v.row_world[r];
  if (!row_is_live(v, r) || !v.world_params[w].friction_newton || row_frozen(v, r)) return;
  if (sliding) {
    contact_friction_newton(v, r, v.world_params[w]);
  } else {
    contact_angular_friction_newton(v, r, v.world_params[w]);
  }
}
// M~^-1 (g - J_d^T dlambda_d): the held-out rows' steps (row_hold_out, in row_cr_r) folded in.
AXION_HD void body_take_inv_mass_g(const BatchView& v, int i) {
  if (body_frozen(v, i)) return;
  const Vec6 held = body_gather_jt(v, i, v.row_cr_r);
  const Vec6 g = load6(v.body_g + 6 * i);
  store6(v.body_minv_jt + 6 * i,
         body_apply_newton_inv_mass(v, i, {g.lin - held.lin, g.ang - held.ang}));
}
AXION_HD void row_take_hold_out(const BatchView& v, int r) {
  if (row_is_live(v, r)) row_hold_out(v, r);
}
AXION_HD void row_take_precondition(const BatchView& v, int r) {
  if (row_is_live(v, r)) row_precondition(v, r);
}

// One world's remaining Newton iterations on its team (fused_newton.h). On the host it is
// compiled in a unit of its own (fused_newton.cc): inlined into the CPU backend's pipeline, its
// copy of every pass took up the compiler's inlining budget, and small helpers (quaternion
// rotations, effective masses) were left as calls: 4% more instructions per humanoid step.
#if defined(__CUDACC__)
#define AXION_FUSED_HD AXION_HD
#else
#define AXION_FUSED_HD
#endif
AXION_FUSED_HD void world_finish_newton(const BatchView& v, Team team, int w, int max_trips,
                                        int max_trials);

// One Newton iteration of every iterating world in `wr`, as passes over the batch.
template <class Exec>
void newton_iteration(Exec& ex, const BatchView& v, WorldRange wr, const LoopBounds& bounds) {
  // friction: tangents along the slip, rows linearised with W's derivatives (if enabled); rows
  // decoupled from the rest solved on their own, held out of the linear solve (one pass: the
  // two touch different rows, a frictionless contact's friction rows being only the second's)
  ex.rows(
      wr, AXION_LAMBDA(int r) {
        if (!iterating(v, v.row_world[r])) return;
        row_take_friction_newton(v, r);
        row_take_hold_out(v, r);
      });
  // assemble: M^-1 g, then per row the preconditioner and b = J M^-1 g - h
  ex.bodies(
      wr, AXION_LAMBDA(int i) {
        if (iterating(v, v.body_world[i])) body_take_inv_mass_g(v, i);
      });
  // precondition
  ex.rows(
      wr, AXION_LAMBDA(int r) {
        if (iterating(v, v.row_world[r])) row_take_precondition(v, r);
      });
  // ... and the tree's factor (the tree found once per step), level by level
  ex.worlds(
      wr, AXION_LAMBDA(int w) {
        if (iterating(v, w) && world_uses_tree(v, w)) world_tree_build_once(v, w);
      });
  ex.narrow_teams(
      wr, AXION_LAMBDA(int w, Team team) {
        if (iterating(v, w) && world_uses_tree(v, w)) world_tree_factor(v, team, w);
      });
  // ... the contacts' blocks outside the tree and the loop factor
  ex.lean_teams(
      wr, AXION_LAMBDA(int w, Team team) {
        if (iterating(v, w) && world_uses_tree(v, w)) world_loop_precondition(v, team, w);
      });

  // solve (J M^-1 J^T + C) dlambda = J M^-1 g - h: CR, or GCR where unsymmetric
  ex.lean_teams(
      wr, AXION_LAMBDA(int w, Team team) {
        if (iterating(v, w)) world_cr_solve(v, team, w);
      });

  // recover du = M^-1 (J^T dlambda - g)
  ex.teams(
      wr, AXION_LAMBDA(int w, Team team) {
        if (iterating(v, w)) world_apply_jt(v, team, w, v.row_dlambda, v.body_jt);
      });
  ex.bodies(
      wr, AXION_LAMBDA(int i) {
        if (iterating(v, v.body_world[i])) body_recover_du(v, i);
      });

  // line search, per island: halve t while its merit grows past line_search_growth times its
  // accepted one (t = 1 when disabled); frozen islands (converged) take none
  ex.worlds(
      wr, AXION_LAMBDA(int w) {
        if (iterating(v, w)) world_begin_line_search(v, w);
      });
  ex.loop_while(
      wr, bounds.line_search_trials, AXION_LAMBDA(int w) { return searching(v, w); },
      [&] {
        // the trial iterate of the islands still searching, and its residuals
        ex.teams(
            wr, AXION_LAMBDA(int w, Team team) {
              if (!searching(v, w)) return;
              world_trial(v, team, w);
              world_evaluate_kinematics(v, team, w, Mask::kSearching);
            });
        evaluate_tendons(ex, v, wr, Mask::kSearching, bounds);
        evaluate_rows_and_dynamics(ex, v, wr, Mask::kSearching);
        ex.worlds(
            wr, AXION_LAMBDA(int w) {
              if (searching(v, w)) world_judge_trial(v, w);
            });
      });

  // update: the trial becomes the accepted iterate
  accept(ex, v, wr, false);
  ex.worlds(
      wr, AXION_LAMBDA(int w) {
        if (iterating(v, w)) world_converge(v, w);
      });
}

// One attempt of every world in `wr` with part of its step left: a step of
// world_step_length from the current state, kept, or (a failed solve with halvings left)
// undone and halved.
template <class Exec>
void attempt(Exec& ex, const BatchView& v, WorldRange wr, const LoopBounds& bounds) {
  // begin: worlds with part of their step left take part
  ex.worlds(
      wr, AXION_LAMBDA(int w) {
        bool take = v.world_halves_left[w] > 0;
        v.world_active[w] = take ? kPhaseNewton : kPhaseIdle;
        if (!take) return;
        v.world_newton_attempt[w] = 0;
        v.world_cycled[w] = 0;
        v.world_tree_built[w] = 0;
      });
  if (!ex.any(
          wr, AXION_LAMBDA(int w) { return stepping(v, w); }))
    return;

  // collide: bounding boxes, then broad and narrow phase per world at q-
  ex.bodies(
      wr, AXION_LAMBDA(int i) {
        if (stepping(v, v.body_world[i])) body_begin_step(v, i);
      });
  ex.dofs(
      wr, AXION_LAMBDA(int d) {
        if (stepping(v, dof_world(v, d))) dof_begin_step(v, d);
      });
  ex.shapes(
      wr, AXION_LAMBDA(int s) {
        int w = v.shape_world[s];
        if (stepping(v, w)) shape_update_aabb(v, s, v.world_params[w]);
      });
  ex.worlds(
      wr, AXION_LAMBDA(int w) {
        if (!stepping(v, w)) return;
        world_collide(v, w);
        world_build_contact_rows(v, w);
        world_build_row_adjacency(v, w);
        world_build_islands(v, w);
        world_apply_actuators(v, w);
        world_adhesion_pull(v, w);
      });

  // predict: unconstrained velocity u~ (gravity, forces, efforts, gyroscopic term); drive
  // rows take their Jacobian at q-
  ex.bodies(
      wr, AXION_LAMBDA(int i) {
        int w = v.body_world[i];
        if (!stepping(v, w)) return;
        body_predict(v, i, v.world_params[w]);
        // a body no row acts on moves freely: u~ is its solution. Started at u- as the others
        // are, a step that changes its velocity by less than newton_tolerance took no Newton
        // step, and a free ball pushed by 1e-5 N never moved.
        if (v.body_row_count[i] == 0) {
          for (int k = 0; k < 6; ++k) v.body_u[6 * i + k] = v.body_u_tilde[6 * i + k];
        }
      });
  // the joint rows also keep the impulses the attempt starts from, for an undone attempt to
  // return to (nothing before this pass has moved them)
  ex.rows(
      wr, AXION_LAMBDA(int r) {
        const int w = v.row_world[r];
        if (!stepping(v, w)) return;
        if (r < v.world_row_offset[w] + v.world_joint_row_count[w])
          v.row_lambda_start[r] = v.row_lambda[r];
        const int kind = v.row_kind[r];
        if (kind == kRowDrive || kind == kRowFrictionLoss) joint_drive_begin_step(v, r);
        if (kind == kRowTendonDrive || kind == kRowTendonFrictionLoss) tendon_begin_step(v, r);
      });

  // build residuals at the initial iterate: u = u- with the last step's impulses (joints, and
  // contacts matched to the last step's), whose J^T lambda roughly cancels h f for a body at
  // rest. Starting at u~ instead would spin a light body driven by a strong actuator by
  // radians in the first trial configuration, where no linearisation of the joints holds.
  evaluate(ex, v, wr, Mask::kIterating, bounds);
  // worlds of contacts alone: Gauss-Seidel sweeps bring the initial iterate near a solution
  ex.teams(
      wr, AXION_LAMBDA(int w, Team team) {
        if (in_mask(v, w, Mask::kPresolved)) world_contact_presolve(v, team, w);
      });
  if (ex.any(
          wr, AXION_LAMBDA(int w) { return in_mask(v, w, Mask::kPresolved); }))
    evaluate(ex, v, wr, Mask::kPresolved, bounds);
  accept(ex, v, wr, true);

  // converged worlds stop; the others take one more Newton iteration
  ex.worlds(
      wr, AXION_LAMBDA(int w) {
        if (iterating(v, w)) world_converge(v, w);
      });
  // Newton loop, while some world still iterates: batch passes, then (batched_newton_trips
  // taken, or fewer than batched_newton_worlds still iterating) each world still iterating
  // alone on its team, up to its own Newton limit (world_converge)
  const int newton_trips = bounds.newton_iterations + 1;
  const int batched =
      newton_trips < bounds.batched_newton_trips ? newton_trips : bounds.batched_newton_trips;
  ex.loop_while(
      wr, batched, AXION_LAMBDA(int w) { return iterating(v, w); },
      [&] { newton_iteration(ex, v, wr, bounds); }, bounds.batched_newton_worlds);
  if (batched < newton_trips || bounds.batched_newton_worlds > 1) {
    const int trials = bounds.line_search_trials;
    ex.teams(
        wr, AXION_LAMBDA(int w, Team team) {
          if (iterating(v, w)) world_finish_newton(v, team, w, newton_trips, trials);
        });
  }

  // a world that did not converge keeps its best iterate (q+ integrated again from its u)
  ex.worlds(
      wr, AXION_LAMBDA(int w) {
        if (stepping(v, w)) world_restore_best(v, w);
      });

  // retry or halve: a solve that failed (its best residual above halving_residual, or a state
  // that is not finite) is undone; a world of contacts alone goes again at the same length
  // from the contact presolve's iterate (world_retry_with_presolve), else with a halving left
  // the rest of the step is taken in twice as many steps of half the length
  ex.worlds(
      wr, AXION_LAMBDA(int w) {
        if (!stepping(v, w) || world_attempt_succeeded(v, w)) return;
        if (world_may_retry(v, w)) {
          world_retry_with_presolve(v, w);
        } else if (v.world_halvings[w] < v.world_params[w].step_halvings) {
          world_halve_step(v, w);
        } else {
          return;
        }
        v.world_active[w] = kPhaseIdle;
      });

  // recheck: the shapes collided at q+; a world with a pair deeper than missed_contact_depth
  // there than its rows held it goes again from the attempt's start, that pair's points where
  // this attempt ended added to its set
  ex.shapes(
      wr, AXION_LAMBDA(int s) {
        if (may_redo(v, v.shape_world[s])) shape_update_end_aabb(v, s);
      });
  ex.worlds(
      wr, AXION_LAMBDA(int w) {
        if (!may_redo(v, w) || !world_state_finite(v, w) || !world_find_missed_contacts(v, w))
          return;
        world_redo_attempt(v, w);
        v.world_active[w] = kPhaseIdle;
      });

  // write back: joint coordinates, time, activations, and a finite-state check that
  // freezes a broken world
  ex.joints(
      wr, AXION_LAMBDA(int j) {
        if (stepping(v, v.body_world[v.joint_child[j]])) joint_write_coordinates(v, j);
      });
  ex.worlds(
      wr, AXION_LAMBDA(int w) {
        if (!stepping(v, w)) return;
        if (!world_state_finite(v, w)) {
          world_restore_start(v, w);
          v.world_flags[w] |= kWorldNonFinite;
        }
        world_store_contacts(v, w);
        world_store_accelerations(v, w);
        if (!(v.world_flags[w] & kWorldNonFinite)) world_integrate_activations(v, w);
        v.world_time[w] += v.world_step_length[w];
        v.world_substeps[w] += 1;
        v.world_redos[w] = 0;
        v.world_halves_left[w] -= 1;
        if (v.world_flags[w] & kWorldNonFinite) v.world_halves_left[w] = 0;
        if (v.world_halves_left[w] == 0) world_end_step(v, w);
        v.world_active[w] = kPhaseIdle;
      });
}

// One time step of every world in `wr` that has a step pending (and a finite state): attempts
// until each has covered its step, halving where a solve fails.
template <class Exec>
void step(Exec& ex, const BatchView& v, WorldRange wr, const LoopBounds& bounds) {
  ex.worlds(
      wr, AXION_LAMBDA(int w) {
        bool frozen = (v.world_flags[w] & kWorldNonFinite) != 0;
        bool take = v.world_step_pending[w] > 0 && !frozen;
        v.world_halves_left[w] = 0;
        if (!take) return;
        world_begin_step(v, w);
        v.world_redos[w] = 0;
        v.world_contact_redos[w] = 0;
        world_clear_missed_pairs(v, w);
        v.world_flags[w] = 0;
        v.world_newton_iterations[w] = 0;
        v.world_cr_iterations[w] = 0;
        v.world_line_search_trials[w] = 0;
        v.world_substeps[w] = 0;
      });
  ex.loop_while(
      wr, bounds.attempts, AXION_LAMBDA(int w) { return v.world_halves_left[w] > 0; },
      [&] { attempt(ex, v, wr, bounds); });
}

}  // namespace pipeline
}  // namespace axion

#if defined(__CUDACC__)
#include "fused_newton.h"
#endif
