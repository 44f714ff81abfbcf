// Helpers shared by the kernels: loading body frames, effective masses, the Fischer-Burmeister
// function. Everything is AXION_HD and reads the BatchView only.
#pragma once

#include <cmath>

#include "axion/math.h"
#include "axion/model.h"
#include "axion/simulator.h"
#include "axion/state.h"

namespace axion::kernels {

// contact_friction_rows' and joint_limit_rows' `write` for both rows of their pair
// (row_evaluate).
inline constexpr int kPairedRows = -1;

// A world's team: the threads that run one per-world kernel together, lanes 0 .. size - 1.
// On the CPU a team is one thread; on CUDA one warp, or an aligned part of one once the batch
// fills the device (backend_cuda.cu, NarrowTeams), whose lanes take a world's rows and bodies
// in turn (consecutive rows on consecutive lanes, so loads coalesce) where one thread per world
// left most of the GPU idle and read every row alone.
inline constexpr int kTeamWidth = 32;
struct Team {
  int lane = 0;
  int size = 1;
};

#if defined(__CUDA_ARCH__)
// The lanes of the calling thread's warp that form its team: a team is `size` consecutive lanes
// starting at a multiple of `size` (a power of two up to the warp).
__device__ inline unsigned team_mask(Team team) {
  if (team.size >= kTeamWidth) return 0xffffffffu;
  const int first = (static_cast<int>(threadIdx.x) % kTeamWidth) - team.lane;
  return ((1u << team.size) - 1u) << first;
}
#endif

// Orders the team's memory accesses: what a lane wrote before it, the others read after it.
AXION_HD void team_sync(Team team) {
#if defined(__CUDA_ARCH__)
  if (team.size > 1) __syncwarp(team_mask(team));
#else
  (void)team;
#endif
}

// team_sum's butterfly over the virtual lanes of one thread, of which the first `used` were given
// elements.
template <int N>
AXION_HD void team_combine_lanes(Real (&acc)[kTeamWidth][N], int used, Real (&out)[N]) {
  for (int k = kTeamWidth / 2; k >= 1; k /= 2) {
    if (k >= used) continue;  // lanes l + k >= used hold zeros: adding them changes no bits
    for (int l = 0; l < k; ++l) {
      for (int n = 0; n < N; ++n) acc[l][n] += acc[l + k][n];
    }
  }
  for (int n = 0; n < N; ++n) out[n] = acc[0][n];
}

/// Sums f(i, acc) (which adds element i's N terms to acc) over i in [begin, end) into out, in
/// an order fixed by the data alone: element i goes to virtual lane (i - begin) % kTeamWidth,
/// each lane adds its elements in order, and the lanes combine by a butterfly
///   acc_l += acc_{l+k}, k = 16, 8, 4, 2, 1.
/// A warp runs the lanes, a half warp two per lane; one thread runs all of them in turn. All
/// give the same bits (and every lane of the team gets them), so reductions are deterministic
/// and CPU and GPU agree.
template <int N, class F>
AXION_HD void team_sum(Team team, int begin, int end, Real (&out)[N], F f) {
#if defined(__CUDA_ARCH__)
  if (team.size == kTeamWidth || team.size == kTeamWidth / 2) {
    // a team of half a warp runs two virtual lanes per lane (l and l + 16), combined locally
    // first, as the butterfly's first step would
    const unsigned mask = team_mask(team);
    Real acc[N], acc_high[N];
    for (int n = 0; n < N; ++n) acc[n] = acc_high[n] = 0;
    for (int i = begin + team.lane; i < end; i += kTeamWidth) {
      f(i, acc);
      if (team.size < kTeamWidth && i + kTeamWidth / 2 < end) f(i + kTeamWidth / 2, acc_high);
    }
    if (team.size < kTeamWidth) {
      for (int n = 0; n < N; ++n) acc[n] += acc_high[n];
    }
    for (int k = team.size / 2; k >= 1; k /= 2) {
      for (int n = 0; n < N; ++n) acc[n] += __shfl_xor_sync(mask, acc[n], k);
    }
    for (int n = 0; n < N; ++n) out[n] = acc[n];
    return;
  }
  if (team.size > 1) __trap();  // (sums run on warps and half warps only: narrow_teams has none)
#endif
  (void)team;
  Real acc[kTeamWidth][N];
  const int used = end - begin < kTeamWidth ? (end - begin > 0 ? end - begin : 0) : kTeamWidth;
  for (int l = 0; l < kTeamWidth; ++l) {
    for (int n = 0; n < N; ++n) acc[l][n] = 0;
  }
#if defined(__CUDA_ARCH__)
  // (a team of one thread on the device: kept small)
  for (int i = begin, l = 0; i < end; ++i, l = l + 1 == kTeamWidth ? 0 : l + 1) f(i, acc[l]);
#else
  // whole rounds of the lanes first, a fixed trip count the compiler unrolls, then the last
  // partial round (the same order; 6% less time on the humanoid under control noise, where
  // GCR's sums dominate)
  int i = begin;
  for (; end - i >= kTeamWidth; i += kTeamWidth) {
    for (int l = 0; l < kTeamWidth; ++l) f(i + l, acc[l]);
  }
  for (int l = 0; i < end; ++i, ++l) f(i, acc[l]);
#endif
  team_combine_lanes(acc, used, out);
}

// The larger of a and b, NaN if either is NaN.
AXION_HD Real max_or_nan(Real a, Real b) {
  if (a != a) return a;
  return b <= a ? a : b;
}

// The largest of the lanes' values, NaN if any is NaN (a maximum is exact in any order, so
// every lane gets the same bits).
AXION_HD Real team_max(Team team, Real value) {
#if defined(__CUDA_ARCH__)
  const unsigned mask = team_mask(team);
  for (int k = team.size / 2; k >= 1; k /= 2)
    value = max_or_nan(value, __shfl_xor_sync(mask, value, k));
#else
  (void)team;
#endif
  return value;
}

AXION_HD bool world_is_active(const BatchView& v, int world) { return v.world_active[world] != 0; }

AXION_HD Vec3 body_position(const Real* q, int body) {
  return body < 0 ? Vec3{} : load3(q + 7 * body);
}
AXION_HD Quat body_rotation(const Real* q, int body) {
  return body < 0 ? Quat{} : load_quat(q + 7 * body + 3);
}
AXION_HD Vec6 body_twist(const Real* u, int body) {
  return body < 0 ? Vec6{} : load6(u + 6 * body);
}

// M^-1 applied to a wrench of one body, with the world inertia at q-.
AXION_HD Vec6 body_apply_inv_mass(const BatchView& v, int body, Vec6 wrench) {
  if (body < 0) return Vec6{};
  Mat33 inv_inertia = load33(v.body_inv_inertia_world + 9 * body);
  return {v.body_inv_mass[body] * wrench.lin, inv_inertia * wrench.ang};
}
// The Newton matrix's M~^-1: inertia plus the stabilising geometric stiffness of the joints.
AXION_HD Vec6 body_apply_newton_inv_mass(const BatchView& v, int body, Vec6 wrench) {
  if (body < 0) return Vec6{};
  Mat33 inv_inertia = load33(v.body_inv_inertia_newton + 9 * body);
  return {v.body_inv_mass[body] * wrench.lin, inv_inertia * wrench.ang};
}
AXION_HD Vec6 body_apply_mass(const BatchView& v, int body, Vec6 twist) {
  if (body < 0) return Vec6{};
  Mat33 inertia = load33(v.body_inertia_world + 9 * body);
  return {(Real(1) / v.body_inv_mass[body]) * twist.lin, inertia * twist.ang};
}

// J_r M^-1 J_r^T of a row: the inverse of its effective mass.
AXION_HD Real row_inv_effective_mass(const BatchView& v, int body_a, Vec6 jac_a, int body_b,
                                     Vec6 jac_b) {
  return dot(jac_a, body_apply_inv_mass(v, body_a, jac_a)) +
         dot(jac_b, body_apply_inv_mass(v, body_b, jac_b));
}

// The bodies a row acts on, by side: 0 and 1 its own (row_body_a, row_body_b); a coupling row
// and a tendon's rows also act through the leader slots after them (no rows of their own),
// sides 2 and 3 the first's, 4 and 5 the next's, ...: row_axis slots in all (a coupling's
// two, a spatial tendon's two, a fixed tendon's two or more). A row's sides are
// distinct bodies, or -1.
AXION_HD bool row_kind_has_second_slot(int kind) {
  return kind == kRowCoupling || (kind >= kRowTendonLimitLower && kind <= kRowTendonHold);
}
AXION_HD_INLINE int row_side_count(const BatchView& v, int row) {
  return row_kind_has_second_slot(v.row_kind[row]) ? 2 * v.row_axis[row] : 2;
}
AXION_HD_INLINE int row_side_body(const BatchView& v, int row, int side) {
  const int slot = row + (side >> 1);
  return (side & 1) ? v.row_body_b[slot] : v.row_body_a[slot];
}
// An entry of a body's row list (row_body_list): 4 slot + 2 leader + b, for the side of a
// row's slot (b = 1: the slot's body b) and whether that slot is a leader slot. The flag spares
// the list's readers a load of the slot's kind on every entry: only a leader's entry looks up
// its row.
AXION_HD_INLINE int row_entry(int row, int side) {
  return 4 * (row + (side >> 1)) + (side >= 2 ? 2 : 0) + (side & 1);
}
AXION_HD_INLINE int row_entry_row(const BatchView& v, int entry) {
  const int slot = entry >> 2;
  return (entry & 2) ? slot - v.row_axis[slot] : slot;
}
AXION_HD bool row_entry_is_leader(int entry) { return (entry & 2) != 0; }
AXION_HD_INLINE const Real* row_entry_jacobian(const BatchView& v, int entry) {
  return ((entry & 1) ? v.row_jac_b : v.row_jac_a) + 6 * (entry >> 2);
}

// The island slot of a row (world_build_islands): its first body's.
AXION_HD_INLINE int row_island(const BatchView& v, int row) {
  const int first = v.row_body_a[row];  // (nearly always a body: no side count to read)
  if (first >= 0) return v.body_island[first];
  for (int side = 1, sides = row_side_count(v, row); side < sides; ++side) {
    const int body = row_side_body(v, row, side);
    if (body >= 0) return v.body_island[body];
  }
  return v.world_body_offset[v.row_world[row]];  // a row on no body: the world's first island
}
/// A frozen island: one that has converged within its world's Newton solve (island_converged,
/// set by the convergence test). It keeps its accepted iterate while the world's other islands
/// iterate on: its rows' right-hand side is zero, so the linear solve leaves its impulses and
/// velocities where they are, and the Newton loop's costly passes skip its bodies and rows
/// (friction's Newton form, the tree and loop factors, the products with A and the tree solve:
/// the solve's vectors are exact zeros there, and the matrix is block diagonal by island, so no
/// other island reads what a frozen one would have computed). In MuJoCo's humanoid100 and
/// 22_humanoids under control noise 70% and 57% of the rows of a Newton iteration past the first
/// belonged to islands already converged; frozen, the same states take 0.52 and 0.54 of the
/// time at the same Newton iterations (bench/solver_pairs; RESULTS.md). Their rows also leave
/// the loop factor's set (world_loop_factor). An earlier rule that only stopped converged
/// islands' line searches, their rows still in the solve, left a settling pile of spheres at the
/// Newton limit on up to 230 of 700 steps; frozen, 1-2 per path, all early
/// (PreconditionerTest.WorldsOfContactsOnlyFactorTheTree).
AXION_HD bool island_frozen(const BatchView& v, int island) { return v.island_converged[island]; }
AXION_HD bool body_frozen(const BatchView& v, int body) {
  return island_frozen(v, v.body_island[body]);
}
AXION_HD_INLINE bool row_frozen(const BatchView& v, int row) {
  return island_frozen(v, row_island(v, row));
}
AXION_HD_INLINE const Real* row_side_jacobian(const BatchView& v, int row, int side) {
  const int slot = row + (side >> 1);
  return ((side & 1) ? v.row_jac_b : v.row_jac_a) + 6 * slot;
}

// J_r u for a row whose Jacobian blocks are stored.
AXION_HD Real row_velocity(const BatchView& v, int row, const Real* u) {
  Real s = 0;
  for (int side = 0, sides = row_side_count(v, row); side < sides; ++side) {
    const int body = row_side_body(v, row, side);
    if (body >= 0) s += dot(load6(row_side_jacobian(v, row, side)), load6(u + 6 * body));
  }
  return s;
}

// A world's rows: its joints' (fixed), then each contact's: normal, friction 1, friction 2, and
// where it takes them its angular friction rows (contact_angular_rows: torsion; roll 1, roll 2).
// Beside their contact's, the angular rows share its tree group, where the preconditioner sees
// their coupling to its normal impulse: laid out after every contact's three instead, the
// coupling fell outside the groups, and dm_control's dog under control noise took 4.6 CR
// iterations per Newton iteration against 1.8.
AXION_HD int world_live_rows(const BatchView& v, int world) {
  return v.world_joint_row_count[world] + 3 * v.world_contact_count[world] +
         v.world_angular_row_count[world];
}

// Contact slot k's normal row in `world` (its friction rows follow it, then its angular rows).
AXION_HD int contact_first_row(const BatchView& v, int world, int k) {
  return v.world_row_offset[world] + v.world_joint_row_count[world] +
         3 * (k - v.world_contact_offset[world]) + v.contact_angular_index[k];
}
// Contact slot k's first angular friction row in `world` (contact_angular_rows[k] of them).
AXION_HD int contact_angular_row(const BatchView& v, int world, int k) {
  return contact_first_row(v, world, k) + 3;
}

AXION_HD bool row_kind_is_friction(int kind) {
  return kind == kRowFriction1 || kind == kRowFriction2;
}
AXION_HD bool row_kind_is_angular_friction(int kind) {
  return kind >= kRowContactTorsion && kind <= kRowContactRoll2;
}
// Whether a row is one of a contact's (normal, friction, angular friction).
AXION_HD bool row_kind_is_contact(int kind) {
  return kind == kRowContactNormal || row_kind_is_friction(kind) ||
         row_kind_is_angular_friction(kind);
}

// The rows a friction row's Newton form couples it to, row_coupling's two slots: its contact's
// normal row, and the other row of its cone (-1 for torsion, a cone of one row); -1 and -1
// for rows of other kinds.
AXION_HD void row_coupled_rows(const BatchView& v, int row, int* normal, int* other) {
  *normal = -1;
  *other = -1;
  switch (v.row_kind[row]) {
    case kRowFriction1:
      *normal = row - 1;
      *other = row + 1;
      return;
    case kRowFriction2:
      *normal = row - 2;
      *other = row - 1;
      return;
    case kRowContactTorsion:
    case kRowContactRoll1:
    case kRowContactRoll2:
      *normal = contact_first_row(v, v.row_world[row], v.row_contact[row]);
      if (v.row_kind[row] == kRowContactRoll1) *other = row + 1;
      if (v.row_kind[row] == kRowContactRoll2) *other = row - 1;
      return;
    default:
      return;
  }
}

/// The rows a world's linear solve walks. On the CPU, once some island of the world is frozen,
/// the runs of live rows outside frozen islands (world_build_solve_runs): the solve's vectors
/// are zero on frozen rows and stay so, so skipping them changes no bits, and rows keep the
/// virtual lane they have in team_sum (team_sum_solve_rows). With world_residual's share of
/// islands, MuJoCo's humanoid100 and 22_humanoids under control noise take 0.88 and 0.90 of the
/// time on the same trajectories (RESULTS.md). A world's warp on CUDA walks all live rows: its
/// lanes would idle on the skipped rows anyway.
template <class F>
AXION_HD void team_for_solve_rows(const BatchView& v, Team team, int world, F f) {
  const int row0 = v.world_row_offset[world];
#if !defined(__CUDA_ARCH__)
  if (const int runs = v.world_solve_runs[world]; runs > 0) {
    const int32_t* run = v.row_solve_runs + 2 * row0;
    for (int k = 0; k < runs; ++k) {
      for (int row = run[2 * k]; row < run[2 * k + 1]; ++row) f(row);
    }
    return;
  }
#endif
  const int row_end = row0 + world_live_rows(v, world);
  for (int row = row0 + team.lane; row < row_end; row += team.size) f(row);
}
// team_sum over the rows team_for_solve_rows walks.
template <int N, class F>
AXION_HD void team_sum_solve_rows(const BatchView& v, Team team, int world, Real (&out)[N], F f) {
  const int row0 = v.world_row_offset[world];
  const int live = world_live_rows(v, world);
#if !defined(__CUDA_ARCH__)
  if (const int runs = v.world_solve_runs[world]; runs > 0) {
    Real acc[kTeamWidth][N];
    for (int l = 0; l < kTeamWidth; ++l) {
      for (int n = 0; n < N; ++n) acc[l][n] = 0;
    }
    const int32_t* run = v.row_solve_runs + 2 * row0;
    for (int k = 0; k < runs; ++k) {
      const int end = run[2 * k + 1];
      for (int row = run[2 * k], l = (row - row0) % kTeamWidth; row < end;
           ++row, l = l + 1 == kTeamWidth ? 0 : l + 1)
        f(row, acc[l]);
    }
    team_combine_lanes(acc, live < kTeamWidth ? live : kTeamWidth, out);
    return;
  }
#endif
  team_sum(team, row0, row0 + live, out, f);
}

AXION_HD bool row_is_live(const BatchView& v, int row) {
  int world = v.row_world[row];
  return row - v.world_row_offset[world] < world_live_rows(v, world);
}

// Stores a row's Jacobian blocks: body a gets (lin_a, ang_a), body b (lin_b, ang_b).
AXION_HD void store_row_jacobian(const BatchView& v, int row, Vec3 lin_a, Vec3 ang_a, Vec3 lin_b,
                                 Vec3 ang_b) {
  store6(v.row_jac_a + 6 * row, {lin_a, ang_a});
  store6(v.row_jac_b + 6 * row, {lin_b, ang_b});
}

AXION_HD void store_row_levers(const BatchView& v, int row, Vec3 lever_a, Vec3 lever_b) {
  store6(v.row_lever + 6 * row, {lever_a, lever_b});
}

// The force bound of a servo without a force range (N or N m): beyond any real force, and
// within float's range.
inline constexpr Real kUnboundedForce = Real(1e30);

AXION_HD Real clamp_to(Real x, Real lo, Real hi) { return x < lo ? lo : (x > hi ? hi : x); }

AXION_HD void disable_row(const BatchView& v, int row) {
  // lambda -> 0: residual h = lambda with unit compliance and no coupling to the bodies.
  store_row_jacobian(v, row, {}, {}, {}, {});
  store_row_levers(v, row, {}, {});
  v.row_compliance[row] = 1;
  v.row_residual[row] = v.row_lambda[row];
  v.row_error[row] = 0;
}

// Compliance added to the Newton matrix (not to the residual) of unilateral and friction rows,
// as a fraction of each row's inverse effective mass: 1e-6 / s. Contacts are often redundant (a
// plank on two boxes: 16 points on 3 bodies), and their gaps disagree at the level of the
// collision detection's round-off (1e-8 m, i.e. 1e-6 m/s at h = 0.01), so the exact Newton
// system is singular and inconsistent: CR then moves impulse along the redundant directions
// without bound and the next iterate is far from the solution. The regularisation bounds those
// moves; converged solutions are unchanged, since the residual does not see it. Measured on a
// plank on two boxes (3 friction values x 3 drop heights x 400 steps): 680 steps ending at the
// Newton limit without it, 1 with it (37 at 1e-7, 3 at 1e-5); the 100-sphere pile steps 3.5x
// faster.
inline constexpr Real kNewtonRegularization = Real(1e-6);

// Friction rows' share of that regularisation at step h: kFrictionRegularizationTime / h within
// [kNewtonRegularization, kFrictionRegularizationMax]. The gaps' round-off (1e-8 m) is 1e-8 / h
// m/s of inconsistency among redundant contacts, so at a fixed regularisation the impulse CR
// moves along their null space grows as 1 / h. A humanoid lying on the floor under control
// noise closes loops through its contacts (a hand on the floor and on its own thigh); at 0.005 s
// one such move, 0.755 N s on a sticking friction row from a residual of 8e-5 m/s, threw the
// iterate out of its cones, the line search ran out of halvings and Newton cycled to its limit.
// The same states solved both ways (bench/solver_pairs, seeds 1-8, RESULTS.md): 8-13% fewer CR
// iterations at 0.005-0.02 s and 0-5% less time up to 0.04 s; 0.16 s keeps 1e-6 (1e-5 and 3e-7
// on every contact row cost 9-10% there). Normal rows keep kNewtonRegularization: at 5e-6 a
// featherweight body whose slides already hold it up (its four contacts wholly redundant)
// converged too slowly (ContactSmoothingTest.FeatherweightBodyRestingOnATableConverges).
inline constexpr Real kFrictionRegularizationTime = Real(5e-8);  // (s)
inline constexpr Real kFrictionRegularizationMax = Real(1e-5);
// Where Newton has slowed to a linear tail, the friction rows take a tenth of the time-scaled
// part, still no less than kNewtonRegularization. In a near-null direction of redundant
// contacts (eigenvalue sigma of the Schur complement) each Newton step removes only
// sigma / (sigma + C) of the error: a lying humanoid traced at 0.005 s took 18 whole steps at a
// ratio of 0.88 each, two sticking friction rows' impulses drifting by 0.1 N s. The full
// regularisation still guards the first iterations, where those directions carry the gaps'
// round-off and the iterate is far from a solution. A tail: the latest Newton step was taken
// whole and cut the residual, but by less than kLinearTailRatio, below kLinearTailResidual.
// The same states solved both ways (bench/solver_pairs, RESULTS.md): at 0.005 s 0.90 time on
// seeds 1-4 (148 steps at the Newton limit against 281) and 0.97 on seeds 5-12 (152 against
// 240); 0.99-1.00 at 0.02-0.16 s, where the floor leaves little to relax. Below the floor
// (3e-7 in a tail) the plank on two boxes took twice the CR iterations
// (PreconditionerTest.FrictionalContactLoopIsEliminated), and with no floor a pile of 80
// spheres ended 52 of 700 steps at the Newton limit. Iterative refinement of the linear solve
// instead (two more solves against the regularisation's share) cut as many Newton iterations
// but cost 3-10% more CR iterations; a hundredth instead of a tenth, or the tail's tests at
// 0.1 or 0.5 or below 1e-2 or 1e-4 m/s, measured alike or worse.
inline constexpr Real kLinearTailRatio = Real(0.3);
inline constexpr Real kLinearTailResidual = Real(1e-3);  // (m/s)
inline constexpr Real kLinearTailRelief = Real(0.1);
AXION_HD Real friction_newton_regularization(Real h, bool linear_tail = false) {
  const Real r = kFrictionRegularizationTime / h * (linear_tail ? kLinearTailRelief : Real(1));
  return r < kNewtonRegularization
             ? kNewtonRegularization
             : (r < kFrictionRegularizationMax ? r : kFrictionRegularizationMax);
}

// Largest speed (m/s) by which the Fischer-Burmeister smoothing may move a row: the impulse
// smoothing sqrt(fb_epsilon) is capped at this times the row's effective mass, so only rows
// lighter than sqrt(fb_epsilon) / 1e-2 (1e-3 kg at the default) are smoothed less. Measured:
// 1e-3 left one step of Gym's pusher at the Newton limit, 1e-2 none; both leave the humanoids'
// rows (0.01 kg and up) at the plain impulse smoothing.
inline constexpr Real kFbSmoothingSpeedCap = Real(1e-2);

// Fischer-Burmeister NCP function phi(a, b) = a + b - sqrt(a^2 + b^2 + eps): zero exactly when
// 0 <= a, 0 <= b, a b = 0 (up to the smoothing eps). Returns phi and its partial derivatives.
struct FbValue {
  Real phi, dphi_da, dphi_db;
};
AXION_HD FbValue fischer_burmeister(Real a, Real b, Real eps) {
  Real r = std::sqrt(a * a + b * b + eps);
  return {a + b - r, Real(1) - a / r, Real(1) - b / r};
}

// Unilateral row through the Fischer-Burmeister function, 0 <= lambda _|_ c >= 0, where the
// row velocity J u approximates dc/dt / (1/h) (position level: c = c(q+)/h; velocity level:
// c = target velocity). The NCP argument is scaled by the row's effective mass so both are
// impulses: phi(lambda, s c). Dividing the linearised row by s dphi/db keeps the Newton system
// symmetric (seed 003): J du + C dlambda = -h with
//   C = dphi/dlambda / (s dphi/db),   h = phi / (s dphi/db).
/// The smoothing eps is an impulse squared, capped at (kFbSmoothingSpeedCap s)^2: a smoothing
/// sqrt(eps) moved a 8e-9 kg body resting on a table (Gym's pusher object) by up to sqrt(eps) / s
/// = 1e3 m/s, and its steps ended at the Newton limit. Smoothing by a fixed speed instead (eps
/// s^2) is sharper on every row under 1 kg, and MuJoCo's 22 humanoids under control noise (seed
/// 1 of axion-sim) then took 303 Newton iterations per step against 11.4 (axion-sim
/// --fb_epsilon sweeps the smoothing).
/// A compliance C0 (s/kg) softens the row: c_velocity + C0 lambda replaces c_velocity, adding C0
/// to C. The Newton matrix also gets kNewtonRegularization / s, which h does not contain, in
/// worlds with joints. In worlds of contacts only it enters h as well, as that much compliance
/// (a box resting on the floor at h = 0.01 s sinks by 1e-9 m more): there a box sliding on its
/// four corners, whose normal impulses the matrix-only term left inexact in their null space,
/// took 25.6 Newton iterations per step on the tree preconditioner against 4.6 this way, while
/// on the humanoid the matrix-only term measured 6% fewer (bench/solver_pairs).
AXION_HD void store_unilateral_row(const BatchView& v, int row, Real c_velocity,
                                   Real effective_mass, Real eps, Real compliance = 0) {
  Real lambda = v.row_lambda[row];
  const bool contacts_only = v.world_joint_row_count[v.row_world[row]] == 0;
  if (contacts_only) compliance += kNewtonRegularization / effective_mass;
  const Real cap = kFbSmoothingSpeedCap * effective_mass;
  FbValue fb = fischer_burmeister(lambda, effective_mass * (c_velocity + compliance * lambda),
                                  eps < cap * cap ? eps : cap * cap);
  // A separated row has dphi/db -> 0: clamp so it degrades into Newton on lambda alone
  // (lambda -> 0) instead of dividing by zero.
  Real scale = effective_mass * (fb.dphi_db > Real(1e-9) ? fb.dphi_db : Real(1e-9));
  v.row_compliance[row] = fb.dphi_da / scale + compliance +
                          (contacts_only ? Real(0) : kNewtonRegularization / effective_mass);
  v.row_residual[row] = fb.phi / scale;
  // Convergence is measured on phi / (s max(dphi/db, dphi/dlambda)): the division by a vanishing
  // dphi/db above would otherwise magnify the smoothing error of a separated row.
  Real larger = fb.dphi_db > fb.dphi_da ? fb.dphi_db : fb.dphi_da;
  v.row_error[row] = fb.phi / (effective_mass * larger);
}

AXION_HD Real wrap_angle(Real a) {
  const Real kPi = Real(3.14159265358979323846);
  const Real kTwoPi = Real(2) * kPi;
  // in range, fmod would return a + pi unchanged (it is exact): the same bits without the call,
  // which every angular coordinate and row takes at each evaluation
  if (const Real shifted = a + kPi; shifted >= 0 && shifted < kTwoPi) return shifted - kPi;
  a = std::fmod(a + kPi, kTwoPi);
  if (a < 0) a += kTwoPi;
  return a - kPi;
}

}  // namespace axion::kernels
