// The non-smooth Newton solver's kernels (seed 003): residual evaluation, the Schur complement
// A = J M^-1 J^T + C applied matrix-free, preconditioned Conjugate Residual (the Jacobi
// diagonal, or the joints' spanning tree of kernels_tree.h), recovery of du and the line search
// bookkeeping. Per-world reductions go through team_sum, whose order is fixed by a world's rows
// alone, so results are deterministic, the same on the CPU and the GPU, and independent of how
// worlds are batched.
#pragma once
#include "kernels_body.h"
#include "kernels_contact.h"
#include "kernels_tree.h"

namespace axion::kernels {

// Per row: Jacobian, residual h and compliance C at the current iterate (u, lambda).
// A contact's two friction rows, and a DOF's two limit rows, are computed from shared terms
// (contact_friction_rows, joint_limit_rows). With `paired` (the CPU) the first row's call
// writes both and the second's does nothing; without (the device) each row's call computes the
// pair's terms and writes its own row. The bits are the same either way (WholeBatchPipelineTest
// evaluates one row per call, as the device). On an H200 the two took the same time (4.20 and
// 4.30 ms per sub-step at 8192 falling humanoids, RESULTS.md); the device's kernel must not
// carry the paired path as a runtime choice: it took the kernel from 168 to 204 registers and
// from 528 to 3,552 bytes of stack per thread.
#if defined(__CUDA_ARCH__)
inline constexpr bool kRowPairsOnOneThread = false;
#else
inline constexpr bool kRowPairsOnOneThread = true;
#endif

// The row kinds most rows of most scenes are of: the joints' bilateral and limit rows, the
// contacts' normal and friction rows. The device evaluates them in a kernel of their own
// (row_evaluate_common) and the rest in a second (row_evaluate_rare): compiled together, the
// rare kinds' paths (tendons, couplings) set the one kernel's registers and stack for all
// rows (ptxas, sm_90: 168 registers and 528 bytes of stack per thread together, 124 and 64
// for the common kinds alone).
AXION_HD_INLINE bool row_kind_common(int kind) {
  return (kind >= kRowAnchor && kind <= kRowAngularLock) || kind == kRowLimitLower ||
         kind == kRowLimitUpper || kind == kRowContactNormal || kind == kRowFriction1 ||
         kind == kRowFriction2;
}

// One row of a pair computed together (`first`: the pair's first row), as `paired` says: the
// first row's call writes both (evaluate(row, kPairedRows)) and the second's nothing, or each
// call computes the pair from its first row and writes its own (evaluate(row - 1, row)).
template <class Evaluate>
AXION_HD void row_pair_evaluate(int row, bool first, bool paired, Evaluate evaluate) {
  if (paired) {
    if (first) evaluate(row, kPairedRows);
  } else {
    evaluate(first ? row : row - 1, row);
  }
}

// row_evaluate for a row of a common kind (row_kind_common); false, doing nothing, otherwise.
AXION_HD bool row_evaluate_common(const BatchView& v, int row, bool paired = kRowPairsOnOneThread) {
  const WorldParams& p = v.world_params[v.row_world[row]];
  switch (v.row_kind[row]) {
    case kRowAnchor:
    case kRowAxisAlign:
    case kRowLinearLock:
    case kRowAngularLock:
      joint_bilateral_row(v, row, p);
      v.row_error[row] = v.row_residual[row];
      return true;
    case kRowLimitLower:
    case kRowLimitUpper:
      // unilateral: writes its own error (the pair's: after its DOF's lower limit row)
      row_pair_evaluate(row, v.row_kind[row] == kRowLimitLower, paired,
                        [&](int first, int write) { joint_limit_rows(v, first, p, write); });
      return true;
    case kRowContactNormal:
      contact_normal_row(v, row, p);
      return true;  // unilateral: wrote its own error
    case kRowFriction1:
    case kRowFriction2:
      // writes its own error (the pair's: after its contact's first friction row)
      row_pair_evaluate(row, v.row_kind[row] == kRowFriction1, paired,
                        [&](int first, int write) { contact_friction_rows(v, first, p, write); });
      return true;
    default:
      return false;
  }
}

// row_evaluate for a row of any other kind; nothing for a common one.
AXION_HD void row_evaluate_rare(const BatchView& v, int row) {
  const int kind = v.row_kind[row];
  if (row_kind_common(kind)) return;
  const WorldParams& p = v.world_params[v.row_world[row]];
  switch (kind) {
    case kRowLimitCone:
      joint_cone_limit_row(v, row, p);
      return;  // unilateral: wrote its own error
    case kRowCoupling:
      joint_coupling_row(v, row, p);
      v.row_error[row] = v.row_residual[row];
      return;
    case kRowCouplingLeader:
      joint_coupling_leader_slot(v, row);
      return;
    case kRowFrictionLoss:
      joint_friction_loss_row(v, row);
      return;  // wrote its own error
    case kRowDrive:
      joint_drive_row(v, row, p);
      return;  // wrote its own error
    case kRowContactTorsion:
    case kRowContactRoll1:
    case kRowContactRoll2:
      contact_angular_friction_row(v, row, p);
      return;  // wrote its own error
    default:
      if (kind >= kRowTendonLimitLower) {
        tendon_row(v, row, p);  // wrote its own error
      } else {
        disable_row(v, row);
      }
      return;
  }
}

AXION_HD void row_evaluate(const BatchView& v, int row, bool paired = kRowPairsOnOneThread) {
  if (!row_evaluate_common(v, row, paired)) row_evaluate_rare(v, row);
}

/// Per world, once its rows are built for the step: each body's list of the live rows acting
/// on it, in row order (row_entry), in row_body_list from the
/// world's first row slot. Applying J^T then gathers per body (body_gather_jt): bodies run in
/// parallel and each sums its rows in the same order a scatter over rows would.
AXION_HD void world_build_row_adjacency(const BatchView& v, int world) {
  const int b0 = v.world_body_offset[world], b1 = v.world_body_offset[world + 1];
  const int row0 = v.world_row_offset[world];
  const int row_end = row0 + world_live_rows(v, world);
  for (int b = b0; b < b1; ++b) v.body_row_count[b] = 0;
  // (a coupling's or a tendon's row's extra entries take its leader slots' shares of
  // row_body_list, so the leader slots are not counted again: counted, they ran the world 2
  // entries per slot past its share, into the next world's)
  for (int row = row0; row < row_end; ++row) {
    if (v.row_kind[row] == kRowCouplingLeader) continue;
    for (int side = 0, sides = row_side_count(v, row); side < sides; ++side) {
      const int body = row_side_body(v, row, side);
      if (body >= 0) v.body_row_count[body] += 1;
    }
  }
  for (int b = b0, next = 2 * row0; b < b1; ++b) {
    v.body_row_begin[b] = next;
    next += v.body_row_count[b];
    v.body_row_count[b] = 0;
  }
  for (int row = row0; row < row_end; ++row) {
    if (v.row_kind[row] == kRowCouplingLeader) continue;  // listed as its coupling's sides
    for (int side = 0, sides = row_side_count(v, row); side < sides; ++side) {
      const int body = row_side_body(v, row, side);
      if (body < 0) continue;
      v.row_body_list[v.body_row_begin[body] + v.body_row_count[body]++] = row_entry(row, side);
    }
  }
}

/// Islands. A world's bodies fall into sets that no joint or contact row of the attempt
/// connects (MuJoCo's 22_humanoids.xml: 22 figures, each on the static floor). Their Newton
/// systems are independent, so each island takes its own line search, keeps its own best
/// iterate, drops W_cone on its own and stops at its own tolerance, frozen while the others
/// iterate on (island_frozen); the linear solve still runs over the whole world (its matrix is
/// block diagonal by island), with a zero right-hand side on frozen islands. As one system, one
/// figure's landing held every other figure's solve: a trial it spoiled halved the step for all,
/// its runaway merit dropped W_cone for all, and its unconverged best iterate was every figure's.
/// Per world, after its rows are built: union-find over the bodies of each live row (the
/// set's smallest body its root), then islands numbered in body order from the world's first
/// body slot.
AXION_HD void world_build_islands(const BatchView& v, int world) {
  const int b0 = v.world_body_offset[world], b1 = v.world_body_offset[world + 1];
  if (!v.world_params[world].islands) {  // SolverOptions::islands off: the world is one island
    for (int b = b0; b < b1; ++b) v.body_island[b] = b0;
    v.world_island_count[world] = b1 > b0 ? 1 : 0;
    if (b1 > b0) {
      v.island_converged[b0] = 0;
      v.island_friction_cone[b0] = 1;
    }
    return;
  }
  const int row0 = v.world_row_offset[world];
  const int row_end = row0 + world_live_rows(v, world);
  for (int b = b0; b < b1; ++b) v.body_tree_set[b] = b;  // (the tree's scratch, free until then)
  for (int row = row0; row < row_end; ++row) {
    if (v.row_kind[row] == kRowDisabled) continue;
    int root = -1;
    for (int side = 0, sides = row_side_count(v, row); side < sides; ++side) {
      const int body = row_side_body(v, row, side);
      if (body < 0) continue;
      const int other = tree_find(v, body);
      if (root < 0) {
        root = other;
      } else if (other != root) {
        const int low = other < root ? other : root, high = other < root ? root : other;
        v.body_tree_set[high] = low;
        root = low;
      }
    }
  }
  int count = 0;
  for (int b = b0; b < b1; ++b) {
    const int root = tree_find(v, b);
    v.body_island[b] = root == b ? b0 + count++ : v.body_island[root];  // root <= b: numbered
  }
  v.world_island_count[world] = count;
  for (int k = b0; k < b0 + count; ++k) {
    v.island_converged[k] = 0;
    v.island_friction_cone[k] = 1;
  }
}

// Per body: (J^T x)_body over its rows, in row order.
AXION_HD Vec6 body_gather_jt(const BatchView& v, int body, const Real* x) {
  Real s[6] = {0, 0, 0, 0, 0, 0};
  const int begin = v.body_row_begin[body], end = begin + v.body_row_count[body];
  for (int k = begin; k < end; ++k) {
    const int entry = v.row_body_list[k];
    const Real xr = x[row_entry_row(v, entry)];
    if (xr == 0) continue;
    const Real* j = row_entry_jacobian(v, entry);
    for (int i = 0; i < 6; ++i) s[i] += j[i] * xr;
  }
  return {{s[0], s[1], s[2]}, {s[3], s[4], s[5]}};
}

// Per world: out_body = J^T x over the world's live rows, the team's lanes taking bodies.
AXION_HD void world_apply_jt(const BatchView& v, Team team, int world, const Real* x,
                             Real* out_body) {
  for (int body = v.world_body_offset[world] + team.lane; body < v.world_body_offset[world + 1];
       body += team.size)
    store6(out_body + 6 * body, body_gather_jt(v, body, x));
  team_sync(team);
}

/// Dynamics residual (seed 000): g = M~ (u - u~) - J^T lambda, with J^T lambda in body_jt.
AXION_HD void body_dynamics_residual(const BatchView& v, int body) {
  Vec6 du = {load3(v.body_u + 6 * body) - load3(v.body_u_tilde + 6 * body),
             load3(v.body_u + 6 * body + 3) - load3(v.body_u_tilde + 6 * body + 3)};
  Vec6 m_du = body_apply_mass(v, body, du);
  Vec6 jt = load6(v.body_jt + 6 * body);
  store6(v.body_g + 6 * body, {m_du.lin - jt.lin, m_du.ang - jt.ang});
}

// A row's share of the merit, h^2: the rows as the Newton system sees them (friction unscaled);
// the convergence test takes their error.
AXION_HD Real row_merit_term(const BatchView& v, int row) {
  const int kind = v.row_kind[row];
  Real h = row_kind_is_friction(kind) || row_kind_is_angular_friction(kind) ? v.row_residual[row]
                                                                            : v.row_error[row];
  return h * h;
}
// A body's share of the merit, g^T M^-1 g, and the largest component of M^-1 g into max_abs.
AXION_HD Real body_merit_term(const BatchView& v, int body, Real* max_abs) {
  Vec6 g = load6(v.body_g + 6 * body);
  Vec6 minv_g = body_apply_inv_mass(v, body, g);
  Real comps[6] = {minv_g.lin.x, minv_g.lin.y, minv_g.lin.z,
                   minv_g.ang.x, minv_g.ang.y, minv_g.ang.z};
  for (int i = 0; i < 6; ++i) *max_abs = max_or_nan(*max_abs, std::fabs(comps[i]));
  return dot(g, minv_g);
}

// Per world of several islands: its residual, the largest of its islands', and its merit, their
// sum in island order.
AXION_HD void world_figures_from_islands(const BatchView& v, int world) {
  const int b0 = v.world_body_offset[world];
  Real merit = 0, residual = 0;
  for (int k = b0; k < b0 + v.world_island_count[world]; ++k) {
    merit += v.island_merit[k];
    residual = max_or_nan(residual, v.island_residual[k]);
  }
  v.world_merit[world] = merit;
  v.world_residual[world] = residual;
}

// Per world: residual max-norm (rows, and M^-1 g for the dynamics) and merit 0.5 |h|^2, of the
// world and of each island. A world of one island sums on its team and the island takes the
// world's figures. With several, lane 0 sums each island's rows and bodies in row and body
// order, and the world takes the islands' largest residual and the sum of their merits (as
// world_restore_best does); with `searching_only` just the islands whose line search is still
// trying: the others' rows and bodies did not move, so their figures stand (before, every
// island was figured twice per trial: see team_for_solve_rows for the gain).
AXION_HD void world_residual(const BatchView& v, Team team, int world,
                             bool searching_only = false) {
  const int row0 = v.world_row_offset[world];
  const int row_end = row0 + world_live_rows(v, world);
  const int b0 = v.world_body_offset[world], b1 = v.world_body_offset[world + 1];
  const int island_end = b0 + v.world_island_count[world];
  if (island_end == b0 + 1) {
    Real max_abs = 0;
    Real rows[1];
    team_sum(team, row0, row_end, rows, [&](int row, Real* acc) {
      acc[0] += row_merit_term(v, row);
      max_abs = max_or_nan(max_abs, std::fabs(v.row_error[row]));
    });
    Real bodies[1];
    team_sum(team, b0, b1, bodies,
             [&](int body, Real* acc) { acc[0] += body_merit_term(v, body, &max_abs); });
    max_abs = team_max(team, max_abs);
    if (team.lane != 0) return;
    v.world_residual[world] = max_abs;
    v.world_merit[world] = Real(0.5) * (rows[0] + bodies[0]);
    v.island_residual[b0] = v.world_residual[world];
    v.island_merit[b0] = v.world_merit[world];
    return;
  }
  if (team.lane != 0) return;
  auto figured = [&](int k) { return !searching_only || v.island_ls_step[k] > 0; };
  for (int k = b0; k < island_end; ++k) {
    if (!figured(k)) continue;
    v.island_residual[k] = 0;
    v.island_merit[k] = 0;
  }
  for (int row = row0; row < row_end; ++row) {
    const int k = row_island(v, row);
    if (!figured(k)) continue;
    v.island_merit[k] += Real(0.5) * row_merit_term(v, row);
    v.island_residual[k] = max_or_nan(v.island_residual[k], std::fabs(v.row_error[row]));
  }
  for (int body = b0; body < b1; ++body) {
    const int k = v.body_island[body];
    if (!figured(k)) continue;
    v.island_merit[k] += Real(0.5) * body_merit_term(v, body, &v.island_residual[k]);
  }
  world_figures_from_islands(v, world);
}

/// Per world: Newton inverse inertia (R I R^T + K)^-1. A row whose force J^T lambda acts
/// through a lever r that turns with the body (anchors, locked slides) makes the dynamics
/// residual g depend on u through r(q+(u)); dropping that geometric stiffness stalls Newton on
/// tense chains. Its stabilising part, for a row pulling along l with lambda (l . r) > 0,
///   K = h lambda (l . r) (I - r r^T / |r|^2),
/// is exact for tension along the lever and keeps M~ symmetric positive definite (compression
/// terms are dropped, as in Tournier et al. 2015, "Stable Constrained Dynamics"). Each body
/// gathers its joint rows, in row order. With `searching_only`, only the bodies of islands whose
/// line search is still trying (island_ls_step > 0): the others' rows and impulses did not move.
AXION_HD void world_newton_inertia(const BatchView& v, Team team, int world,
                                   bool searching_only = false) {
  const Real h = v.world_step_length[world];
  const int joint_row_end = v.world_row_offset[world] + v.world_joint_row_count[world];
  for (int body = v.world_body_offset[world] + team.lane; body < v.world_body_offset[world + 1];
       body += team.size) {
    if (searching_only && !(v.island_ls_step[v.body_island[body]] > 0)) continue;
    Real k[9];
    for (int i = 0; i < 9; ++i) k[i] = v.body_inertia_world[9 * body + i];
    const int list_end = v.body_row_begin[body] + v.body_row_count[body];
    for (int e = v.body_row_begin[body]; e < list_end; ++e) {
      const int entry = v.row_body_list[e];
      if (row_entry_is_leader(entry)) continue;  // leader blocks have no lever
      const int row = entry >> 2, side = entry & 1;
      if (row >= joint_row_end) break;  // contact rows follow the joints'
      // only anchors and locked slides have a lever (the other rows store none): tested first,
      // as most of a body's rows are alignments, limits and drives
      const int kind = v.row_kind[row];
      if (kind != kRowAnchor && kind != kRowLinearLock) continue;
      Real lambda = v.row_lambda[row];
      if (lambda == 0) continue;
      Vec3 l = load3((side == 0 ? v.row_jac_a : v.row_jac_b) + 6 * row);
      Vec3 r = load3(v.row_lever + 6 * row + 3 * side);
      Real rr = dot(r, r);
      Real s = lambda * dot(l, r);
      if (!(s > 0) || !(rr > 0)) continue;
      Real hs = h * s;
      for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b)
          k[3 * a + b] += hs * ((a == b ? Real(1) : Real(0)) - r[a] * r[b] / rr);
      }
    }
    for (int i = 0; i < 9; ++i) v.body_inertia_newton[9 * body + i] = k[i];
    store33(v.body_inv_inertia_newton + 9 * body,
            v.body_rotation_fixed[body] ? Mat33{} : inverse(load33(k)));
  }
}

/// Rows held out of the linear solve. A row whose diagonal entry of A = J M~^-1 J^T + C is its
/// compliance but for kTreeInactive (row_inactive: a joint limit away from its stop, whose
/// Fischer-Burmeister row reads lambda -> 0; a frictionless contact's disabled friction rows)
/// is coupled to the others only through J M~^-1 J^T, at most kTreeInactive of its diagonal.
/// Its Newton row, J du + C dlambda = -h, is then solved on its own before the others:
///   dlambda_d = -h_d / A_dd   (the J du term left out: kTreeInactive of the step, at most)
/// and its force J_d^T dlambda_d enters the bodies' right-hand side, M~^-1 (g - J_d^T
/// dlambda_d) (body_take_inv_mass_g), so the other rows' solve sees it exactly. The solve's
/// vectors stay zero on such rows: their products with A are kept zero, and with frozen islands
/// the solve's runs leave them out. Each Newton iteration then takes their Jacobi diagonals,
/// Schur products and the tree solve's Gauss-Seidel step for them (which coupled them to the
/// tree within the solve) out of every linear solve: on the humanoid under control noise 37 of
/// a Newton iteration's 141 rows are limits away from their stop, and at 0.16-0.64 s the same
/// states take 2.6-5.1% fewer Newton iterations (their steps are exact where that Gauss-Seidel
/// step was not); MuJoCo's particle.xml holds out the friction rows of its 2,200 frictionless
/// contacts (RESULTS.md, "Rows held out of the linear solve"). Only kinds that no
/// other row's compliance couples to: the limit kinds (which the tree factor already leaves out
/// as decoupled) and frictionless contacts' friction rows (zero Jacobians, compliance 1).
AXION_HD bool row_kind_may_hold_out(const BatchView& v, int row) {
  switch (v.row_kind[row]) {
    case kRowLimitLower:
    case kRowLimitUpper:
    case kRowLimitCone:
    case kRowFrictionLoss:
    case kRowTendonLimitLower:
    case kRowTendonLimitUpper:
    case kRowTendonFrictionLoss:
      return true;
    case kRowFriction1:
    case kRowFriction2:
      return !(v.contact_friction[v.row_contact[row]] > 0);  // disabled (contact_friction_rows)
    default:
      return false;
  }
}

// A row's diagonal entry of A = J M~^-1 J^T + C, and with `minv_g` (M~^-1 g per body) J M~^-1 g
// into *j_minv_g.
AXION_HD Real row_newton_diagonal(const BatchView& v, int row, const Real* minv_g = nullptr,
                                  Real* j_minv_g = nullptr) {
  Real diag = v.row_compliance[row];
  // a coupling's leader slot is no row: its blocks are its coupling's (its diagonal is 1)
  const int sides = v.row_kind[row] == kRowCouplingLeader ? 0 : row_side_count(v, row);
  for (int side = 0; side < sides; ++side) {
    const int body = row_side_body(v, row, side);
    if (body < 0) continue;
    const Vec6 j = load6(row_side_jacobian(v, row, side));
    diag += dot(j, body_apply_newton_inv_mass(v, body, j));
    if (minv_g != nullptr) *j_minv_g += dot(j, load6(minv_g + 6 * body));
  }
  return diag;
}

// Whether the linear solve leaves the row out: frozen, or held out this Newton iteration.
AXION_HD bool row_out_of_solve(const BatchView& v, int row) {
  return row_frozen(v, row) || v.row_held_out[row] != 0;
}

// Per row: Jacobi preconditioner P = 1/(J M^-1 J^T + C) and the Schur right-hand side
// b = J M^-1 g - h (M^-1 g is in body_minv_jt), which is also the CR residual at x = 0.
AXION_HD void row_precondition(const BatchView& v, int row) {
  if (row_frozen(v, row)) {  // no step: the solve's vectors start (and stay) zero here
    v.row_precond[row] = 0;
    v.row_dlambda[row] = 0;
    v.row_cr_r[row] = 0;
    v.row_cr_z[row] = 0;
    v.row_cr_p[row] = 0;
    return;
  }
  if (v.row_held_out[row]) {  // its step and preconditioner set by row_hold_out
    v.row_cr_r[row] = 0;
    return;
  }
  Real jminv_g = 0;
  const Real diag = row_newton_diagonal(v, row, v.body_minv_jt, &jminv_g);
  v.row_precond[row] = diag > 0 ? Real(1) / diag : Real(0);
  Real rhs = jminv_g - v.row_residual[row];
  v.row_dlambda[row] = 0;
  v.row_cr_r[row] = rhs;
  v.row_cr_z[row] = v.row_precond[row] * rhs;
  v.row_cr_p[row] = v.row_cr_z[row];
}

// Per row: (C x)_r. C is diagonal but for the friction rows' coupling to their contact's other
// rows.
AXION_HD Real row_compliance_product(const BatchView& v, int row, const Real* x) {
  Real s = v.row_compliance[row] * x[row];
  int normal, other;
  row_coupled_rows(v, row, &normal, &other);
  if (normal < 0) return s;
  Real coupled = v.row_coupling[2 * row] * x[normal];
  if (other >= 0) coupled += v.row_coupling[2 * row + 1] * x[other];
  return s + coupled;
}
// Per row: (A x)_r = J_r (M^-1 J^T x) + (C x)_r, with M^-1 J^T x in body_minv_jt.
AXION_HD Real row_schur_product(const BatchView& v, int row, const Real* x) {
  Real s = row_compliance_product(v, row, x);
  const int sides = v.row_kind[row] == kRowCouplingLeader ? 0 : row_side_count(v, row);
  for (int side = 0; side < sides; ++side) {
    const int body = row_side_body(v, row, side);
    if (body >= 0)
      s += dot(load6(row_side_jacobian(v, row, side)), load6(v.body_minv_jt + 6 * body));
  }
  return s;
}

// Per world, with the tree preconditioner: build the tree at the step's first Newton
// iteration, so a world whose initial iterate already converges (a resting stack) never pays
// for it. It follows the tree from the leaves, so one thread runs a world.
AXION_HD void world_tree_build_once(const BatchView& v, int world) {
  if (v.world_tree_built[world]) return;
  world_tree_build(v, world);
  v.world_tree_built[world] = 1;
}

/// Per world on the CPU, at each Newton iteration's linear solve: once some island is frozen, the
/// runs of live rows outside frozen islands and not held out (row_out_of_solve), which the
/// solve's passes then walk (team_for_solve_rows); none while no island is frozen, or on CUDA,
/// where the passes walk all live rows (the vectors are zero on the others, and their products
/// kept zero). Held-out rows alone make no runs: split by every joint's limits into runs of a
/// few rows, the solve's sums (each row's virtual lane kept) cost more per row than the rows
/// they skipped (humanoid, 300 steps: 475.4 k instructions per Newton iteration against 463.0 k
/// walking every row).
AXION_HD void world_build_solve_runs(const BatchView& v, Team team, int world) {
#if defined(__CUDA_ARCH__)
  (void)v, (void)team, (void)world;
#else
  (void)team;  // one thread
  const int b0 = v.world_body_offset[world];
  bool any_frozen = false;
  for (int k = b0; k < b0 + v.world_island_count[world] && !any_frozen; ++k)
    any_frozen = island_frozen(v, k);
  int runs = 0;
  if (any_frozen) {
    const int row0 = v.world_row_offset[world];
    const int row_end = row0 + world_live_rows(v, world);
    int32_t* run = v.row_solve_runs + 2 * row0;
    for (int row = row0; row < row_end;) {
      while (row < row_end && row_out_of_solve(v, row)) ++row;
      if (row == row_end) break;
      run[2 * runs] = row;
      while (row < row_end && !row_out_of_solve(v, row)) ++row;
      run[2 * runs + 1] = row;
      ++runs;
    }
  }
  v.world_solve_runs[world] = runs;  // 0: every live row (or, never while iterating, none)
#endif
}

// Per world: out = (J M^-1 J^T + C) x over the world's live rows (x complete: synchronised).
AXION_HD void world_schur_product(const BatchView& v, Team team, int world, const Real* x,
                                  Real* out) {
  for (int body = v.world_body_offset[world] + team.lane; body < v.world_body_offset[world + 1];
       body += team.size) {
    if (body_frozen(v, body)) continue;  // read by its own island's rows only
    store6(v.body_minv_jt + 6 * body,
           body_apply_newton_inv_mass(v, body, body_gather_jt(v, body, x)));
  }
  team_sync(team);
  team_for_solve_rows(v, team, world, [&](int row) {
    out[row] = row_out_of_solve(v, row) ? Real(0) : row_schur_product(v, row, x);
  });
  team_sync(team);
}

/// Loop closures. The tree solve P_R is exact on the rows it spans and leaves the rows that
/// close loops (L: a lying figure's hand on its thigh, a linkage's last joint) to their own
/// blocks, so P A - I keeps a rank of about twice their count, which GCR then pays for with as
/// many products, tree solves and orthogonalisations each Newton iteration. Eliminating L
/// exactly instead (block elimination with P_R for A_RR^-1; Woodbury's capacitance matrix):
///   X = P_R A_RL,  S = A_LL - A_LR X             (X: n_L columns; S: n_L x n_L, dense)
///   P b:  z = P_R b_R;  x_L = S^-1 (b_L - A_LR z);  x_R = z - X x_L
/// is the exact inverse of A wherever P_R is exact on A_RR. Forming X and S takes n_L tree
/// solves each Newton iteration, an application one, as before. Within S, a row whose pivot
/// falls below kTreeRedundancy of its diagonal is (nearly) a combination of the earlier ones
/// (four corners of a box on another box) and takes its diagonal alone, as redundant rows do
/// in the tree. The humanoid under control noise, lying with five contacts closing loops, took
/// 8.5 GCR iterations per Newton iteration before and 3.1 with it; 32 seeds x 5 s at 0.005 s,
/// 9.7 s against 11.8 (RESULTS.md).
inline constexpr int kLoopRows = 16;  // rows of a loop factor at most (world_loop_rows' width;
                                      // SolverOptions::loop_rows at most)

// Whether a row closes a loop: outside the tree, and not a frictionless contact's friction row
// (disabled: it couples to nothing).
AXION_HD bool row_closes_loop(const BatchView& v, int row) {
  if (v.row_tree_head[row] >= 0) return false;
  const int kind = v.row_kind[row];
  if (kind == kRowFriction1 || kind == kRowFriction2)
    return v.contact_friction[v.row_contact[row]] > 0;
  if (row_kind_is_angular_friction(kind)) return angular_cone(v, row).mu > 0;
  return kind != kRowDisabled && kind != kRowCouplingLeader;
}

// Per world: x = S^-1 s by the loop factor (n rows), in place. A dropped row's off-diagonal
// entries are zero in both factors, so it solves on its diagonal alone.
AXION_HD void loop_lu_solve(const Real* lu, int n, Real* x) {
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < i; ++j) x[i] -= lu[i * kLoopRows + j] * x[j];
  }
  for (int i = n - 1; i >= 0; --i) {
    for (int j = i + 1; j < n; ++j) x[i] -= lu[i * kLoopRows + j] * x[j];
    x[i] /= lu[i * kLoopRows + i];
  }
}

// Column c of X = P_R A_RL for the world's rows (a world's kLoopRows x row slots block of
// row_loop_x, one column after another).
AXION_HD Real* loop_column(const BatchView& v, int world, int c) {
  const int row0 = v.world_row_offset[world];
  const int slots = v.world_row_offset[world + 1] - row0;
  return v.row_loop_x + kLoopRows * row0 + c * slots - row0;  // indexed by row
}

// Per row, before M~^-1 g: whether the row is held out (row_kind_may_hold_out); if so its step
// and preconditioner, and in row_cr_r the impulse whose force the bodies fold in (0 elsewhere,
// so that body_take_inv_mass_g's gather reads only held-out rows). Its solve vectors are zeroed,
// and the solve keeps them so or passes the row by.
AXION_HD void row_hold_out(const BatchView& v, int row) {
  v.row_held_out[row] = 0;
  v.row_cr_r[row] = 0;
  if (!row_kind_may_hold_out(v, row) || row_frozen(v, row)) return;
  const Real diag = row_newton_diagonal(v, row);
  if (!(diag > 0)) return;
  v.row_precond[row] = Real(1) / diag;  // (row_precondition would set the same)
  if (!row_inactive(v, row)) return;
  v.row_held_out[row] = 1;
  // + 0: a zero step is +0, as the solve's updates (x + alpha 0) leave it on every backend
  const Real dlambda = -v.row_residual[row] / diag + Real(0);
  v.row_dlambda[row] = dlambda;
  v.row_cr_r[row] = dlambda;
  v.row_cr_z[row] = 0;
  v.row_cr_p[row] = 0;
  v.row_cr_az[row] = 0;
  v.row_cr_ap[row] = 0;
  v.row_cr_pap[row] = 0;
  v.row_loop_a[row] = 0;
}

// Per loop row c, on the world's team: out += scale (A e_c) over the rows sharing a body with c
// (J M^-1 J_c^T through each body's row list, and C's column c). A lane takes a row's run of
// entries in a body's list (a coupling lists a body twice where its two joints share it), so
// the lanes of one side write distinct rows; the sides follow one another, so each row sums in
// the same order on any team.
AXION_HD void loop_row_spread(const BatchView& v, Team team, int c, Real scale, Real* out) {
  for (int side = 0, sides = row_side_count(v, c); side < sides; ++side) {
    const int body = row_side_body(v, c, side);
    if (body < 0) continue;
    const Vec6 j = load6(row_side_jacobian(v, c, side));
    const Vec6 m = body_apply_newton_inv_mass(v, body, {scale * j.lin, scale * j.ang});
    const int begin = v.body_row_begin[body], end = begin + v.body_row_count[body];
    for (int k = begin + team.lane; k < end; k += team.size) {
      const int row = row_entry_row(v, v.row_body_list[k]);
      if (k > begin && row_entry_row(v, v.row_body_list[k - 1]) == row) continue;  // run's first
      if (v.row_held_out[row]) continue;  // outside the solve: its entries stay zero
      for (int e = k; e < end && row_entry_row(v, v.row_body_list[e]) == row; ++e)
        out[row] += dot(load6(row_entry_jacobian(v, v.row_body_list[e])), m);
    }
    team_sync(team);
  }
  // C's column c: the diagonal, and a contact's friction rows coupled to its other rows
  if (team.lane == 0) {
    out[c] += scale * v.row_compliance[c];
    const int kind = v.row_kind[c];
    if (kind == kRowContactNormal) {
      for (int r = c + 1; r <= c + 2; ++r) {
        if (v.row_kind[r] == kRowFriction1 || v.row_kind[r] == kRowFriction2)
          out[r] += scale * v.row_coupling[2 * r];
      }
      const int k = v.row_contact[c], angular = v.contact_angular_rows[k];
      const int first = angular > 0 ? contact_angular_row(v, v.row_world[c], k) : 0;
      for (int r = first; r < first + angular; ++r) out[r] += scale * v.row_coupling[2 * r];
    } else {
      int normal, other;
      row_coupled_rows(v, c, &normal, &other);
      if (other >= 0) out[other] += scale * v.row_coupling[2 * other + 1];
    }
  }
  team_sync(team);
}

// Per loop row l: (A x)_l, gathering J^T x on its own bodies.
AXION_HD Real loop_row_product(const BatchView& v, int l, const Real* x) {
  Real s = row_compliance_product(v, l, x);
  for (int side = 0, sides = row_side_count(v, l); side < sides; ++side) {
    const int body = row_side_body(v, l, side);
    if (body < 0) continue;
    const Vec6 m = body_apply_newton_inv_mass(v, body, body_gather_jt(v, body, x));
    s += dot(load6(row_side_jacobian(v, l, side)), m);
  }
  return s;
}

/// Per world, each Newton iteration with the tree preconditioner (after the tree's factor and
/// the loop contacts' 3 x 3 blocks): collects L and factors S column by column,
///   S e_c = (A e_c)_L - (A P_R (A e_c)_R)_L,
/// a tree solve each, the products with A only over the rows that share a body with L.
/// Inactive rows (row_inactive: a speculative contact the step does not close, with its friction
/// rows) are coupled to nothing to kTreeInactive and stay on their own blocks outside L, as
/// inactive limits leave the tree: on the lying humanoid they were half of L (2.95 of 5.76 rows
/// per Newton iteration), and leaving them out took 9-13% less time at the same Newton and CR
/// iterations (bench/solver_pairs, 0.005-0.64 s; RESULTS.md). Past kLoopRows active rows closing
/// loops (a pile) the world stays on P_R: eliminating the first kLoopRows there measured slower
/// (contacts_bench, 100 spheres: 792 against 335 us per step; GCR converges in a few iterations on
/// a settled pile, and the factor adds 16 tree solves to each Newton iteration).
AXION_HD void world_loop_factor(const BatchView& v, Team team, int world) {
  const int row0 = v.world_row_offset[world];
  const int row_end = row0 + world_live_rows(v, world);
  int32_t* loop_rows = v.world_loop_rows + kLoopRows * world;
  if (team.lane == 0) {
    const int limit = v.world_params[world].loop_rows;  // at most kLoopRows
    int n = 0;
    for (int row = row0; row < row_end && n <= limit; ++row) {
      if (!row_closes_loop(v, row) || row_inactive(v, row) || row_frozen(v, row)) continue;
      if (n < limit) loop_rows[n] = row;
      ++n;
    }
    v.world_loop_count[world] = n <= limit ? n : 0;
  }
  team_sync(team);
  const int n = v.world_loop_count[world];
  if (n == 0) return;
  // the columns X e_c are zero on held-out rows, which the solve's passes skip (and the products
  // with A read through each body's rows)
  for (int row = row0 + team.lane; row < row_end; row += team.size) {
    if (!v.row_held_out[row]) continue;
    for (int c = 0; c < n; ++c) loop_column(v, world, c)[row] = 0;
  }
  team_sync(team);
  Real* lu = v.world_loop_lu + kLoopRows * kLoopRows * world;
  Real a_diag[kLoopRows];  // A's diagonal on L, which the pivots are measured against (lane 0)
  for (int c = 0; c < n; ++c) {
    // A e_c: its L part is S's column before the correction, its R part A_RL e_c
    team_for_solve_rows(v, team, world, [&](int row) { v.row_loop_a[row] = 0; });
    team_sync(team);
    loop_row_spread(v, team, loop_rows[c], Real(1), v.row_loop_a);
    if (team.lane == 0) {
      a_diag[c] = v.row_loop_a[loop_rows[c]];
      for (int i = 0; i < n; ++i) {
        lu[i * kLoopRows + c] = v.row_loop_a[loop_rows[i]];
        v.row_loop_a[loop_rows[i]] = 0;
      }
    }
    team_sync(team);
    // - A_LR P_R A_RL e_c (P_R of a vector without L entries has none either)
    Real* x_c = loop_column(v, world, c);
    world_tree_apply(v, team, world, v.row_loop_a, x_c);
    for (int i = team.lane; i < n; i += team.size)
      lu[i * kLoopRows + c] -= loop_row_product(v, loop_rows[i], x_c);
    team_sync(team);
  }
  // LU in row order without pivoting; (nearly) dependent rows keep their diagonal alone
  if (team.lane == 0) {
    for (int k = 0; k < n; ++k) {
      Real* row_k = lu + k * kLoopRows;
      if (!(row_k[k] > kTreeRedundancy * a_diag[k])) {
        row_k[k] = a_diag[k];
        for (int j = k + 1; j < n; ++j) row_k[j] = 0;
        for (int i = k + 1; i < n; ++i) lu[i * kLoopRows + k] = 0;
        continue;
      }
      for (int i = k + 1; i < n; ++i) {
        Real* row_i = lu + i * kLoopRows;
        const Real m = row_i[k] / row_k[k];
        row_i[k] = m;
        for (int j = k + 1; j < n; ++j) row_i[j] -= m * row_k[j];
      }
    }
  }
  team_sync(team);
}

/// Per world: out = P in with the loop factor (see world_loop_factor), X = P_R A_RL kept:
///   z = P_R in_R;  x_L = S^-1 (in_L - (A z)_L);  out_R = z - X x_L;  out_L = x_L
AXION_HD void world_loop_apply(const BatchView& v, Team team, int world, const Real* in,
                               Real* out) {
  const int row0 = v.world_row_offset[world];
  const int n = v.world_loop_count[world];
  const int32_t* loop_rows = v.world_loop_rows + kLoopRows * world;
  // z = P_R in_R (into out; its L entries come out 0)
  team_for_solve_rows(v, team, world, [&](int row) { v.row_loop_a[row] = in[row]; });
  team_sync(team);
  if (team.lane == 0) {
    for (int i = 0; i < n; ++i) v.row_loop_a[loop_rows[i]] = 0;
  }
  team_sync(team);
  world_tree_apply(v, team, world, v.row_loop_a, out);
  // x_L = S^-1 (in_L - (A z)_L), handed to the team in row_loop_a's first n entries (free
  // once the tree solve has read them)
  for (int i = team.lane; i < n; i += team.size)
    v.row_loop_a[row0 + i] = in[loop_rows[i]] - loop_row_product(v, loop_rows[i], out);
  team_sync(team);
  if (team.lane == 0) {
    Real x[kLoopRows];
    for (int i = 0; i < n; ++i) x[i] = v.row_loop_a[row0 + i];
    loop_lu_solve(v.world_loop_lu + kLoopRows * kLoopRows * world, n, x);
    for (int i = 0; i < n; ++i) v.row_loop_a[row0 + i] = x[i];
  }
  team_sync(team);
  // out_R -= X x_L (X has no L entries); out_L = x_L
  Real x[kLoopRows];
  for (int i = 0; i < n; ++i) x[i] = v.row_loop_a[row0 + i];
  team_sync(team);
  for (int c = 0; c < n; ++c) {
    const Real* x_c = loop_column(v, world, c);
    team_for_solve_rows(v, team, world, [&](int row) { out[row] -= x[c] * x_c[row]; });
  }
  team_sync(team);
  if (team.lane == 0) {
    for (int i = 0; i < n; ++i) out[loop_rows[i]] = x[i];
  }
  team_sync(team);
}

// Per world: out = P in, the tree solve or the Jacobi diagonal.
AXION_HD void world_precondition_apply(const BatchView& v, Team team, int world, const Real* in,
                                       Real* out) {
  team_sync(team);
  if (world_uses_tree(v, world)) {
    if (v.world_loop_count[world] > 0) {
      world_loop_apply(v, team, world, in, out);
    } else {
      world_tree_apply(v, team, world, in, out);
    }
  } else {
    team_for_solve_rows(v, team, world, [&](int row) { out[row] = v.row_precond[row] * in[row]; });
  }
  team_sync(team);
}

// Whether the world's Newton matrix is unsymmetric: some friction row couples to its
// contact's normal impulse (see contact_friction_newton).
AXION_HD bool world_unsymmetric(const BatchView& v, Team team, int world) {
  int row0 = v.world_row_offset[world];
  Real coupled[1];
  team_sum(team, row0, row0 + world_live_rows(v, world), coupled, [&](int row, Real* acc) {
    const Real* c = v.row_coupling + 2 * row;
    int kind = v.row_kind[row];
    if ((row_kind_is_friction(kind) || row_kind_is_angular_friction(kind)) &&
        (c[0] != 0 || c[1] != 0))
      acc[0] += 1;
  });
  return coupled[0] > 0;
}

/// The linear solve's relative tolerance in world `world` at this Newton iteration: the
/// world's cr_tolerance, and no looser than kNearSolutionForcing once the step's residual is
/// within kNearSolutionResidual times newton_tolerance (1e-3 m/s by default): the forcing terms
/// of inexact Newton shrink as the iterate nears the solution (Eisenstat and Walker 1996). Far
/// from it 1e-3 takes the same Newton iterations as 1e-5 in less time; near it, where redundant
/// contacts leave the impulses non-unique (a settled pile of spheres, a plank on two boxes), 1e-3
/// left steps at the Newton tail or just above the tolerance at the Newton limit, and tightening
/// only within 100 times the tolerance still did (RESULTS.md, "The linear solve's forcing").
inline constexpr Real kNearSolutionForcing = Real(1e-5);
inline constexpr Real kNearSolutionResidual = Real(1000);
AXION_HD Real world_cr_tolerance(const BatchView& v, int world) {
  const WorldParams& p = v.world_params[world];
  const bool near = v.world_residual[world] < kNearSolutionResidual * p.newton_tolerance;
  return near && p.cr_tolerance > kNearSolutionForcing ? kNearSolutionForcing : p.cr_tolerance;
}

/// Per world, preconditioned Conjugate Residual (Saad, Alg. 6.20 with preconditioner P, the
/// Jacobi diagonal or the spanning-tree solve) on a symmetric A from z = P r
/// (world_cr_solve / row_precondition), to the world's own stopping rule:
///   alpha = <z, Az> / <Ap, P Ap>;  x += alpha p;  r -= alpha Ap;  z -= alpha P Ap
///   beta = <z+, Az+> / <z, Az>;  p = z + beta p;  Ap = Az + beta Ap
/// until |r|_P <= tol |r0|_P, tested after the update of x so that a converged solve skips the
/// next product with A.
AXION_HD void world_cr_solve_symmetric(const BatchView& v, Team team, int world) {
  const bool tree = world_uses_tree(v, world);
  const Real tol = world_cr_tolerance(v, world);
  world_schur_product(v, team, world, v.row_cr_z, v.row_cr_az);
  // start: Ap = Az, <z, Az> and the reference norm <r, z>
  Real start[2];
  team_sum_solve_rows(v, team, world, start, [&](int row, Real* acc) {
    v.row_cr_ap[row] = v.row_cr_az[row];
    acc[0] += v.row_cr_z[row] * v.row_cr_az[row];
    acc[1] += v.row_cr_r[row] * v.row_cr_z[row];
  });
  Real zaz = start[0];
  const Real r0 = start[1];
  int left = (r0 > 0 && zaz > 0) ? v.world_params[world].cr_iterations : 0;
  int iterations = 0;
  while (left > 0) {
    // update x: P Ap, alpha, and the stopping rule
    if (tree) world_precondition_apply(v, team, world, v.row_cr_ap, v.row_cr_pap);
    Real apmap[1];
    team_sum_solve_rows(v, team, world, apmap, [&](int row, Real* acc) {
      Real pap = tree ? v.row_cr_pap[row] : v.row_precond[row] * v.row_cr_ap[row];
      v.row_cr_pap[row] = pap;
      acc[0] += v.row_cr_ap[row] * pap;
    });
    if (!(apmap[0] > 0)) break;
    const Real alpha = zaz / apmap[0];
    Real rz[1];
    team_sum_solve_rows(v, team, world, rz, [&](int row, Real* acc) {
      v.row_dlambda[row] += alpha * v.row_cr_p[row];
      v.row_cr_r[row] -= alpha * v.row_cr_ap[row];
      v.row_cr_z[row] -= alpha * v.row_cr_pap[row];
      acc[0] += v.row_cr_r[row] * v.row_cr_z[row];
    });
    if (!(rz[0] > tol * tol * r0)) {
      iterations += 1;
      break;
    }
    // update p: A z, beta
    team_sync(team);
    world_schur_product(v, team, world, v.row_cr_z, v.row_cr_az);
    Real zaz_next[1];
    team_sum_solve_rows(v, team, world, zaz_next,
                        [&](int row, Real* acc) { acc[0] += v.row_cr_z[row] * v.row_cr_az[row]; });
    const Real beta = zaz > 0 ? zaz_next[0] / zaz : Real(0);
    zaz = zaz_next[0];
    team_for_solve_rows(v, team, world, [&](int row) {
      v.row_cr_p[row] = v.row_cr_z[row] + beta * v.row_cr_p[row];
      v.row_cr_ap[row] = v.row_cr_az[row] + beta * v.row_cr_ap[row];
    });
    iterations += 1;
    left = zaz > 0 ? left - 1 : 0;
  }
  team_sync(team);
  if (team.lane == 0) v.world_cr_iterations[world] += iterations;
}

/// Per world, right-preconditioned Generalized Conjugate Residual (Eisenstat, Elman and
/// Schultz 1983) on an unsymmetric A, from r = b and P r (as CR starts), to |r|_D <= tol |b|_D.
/// Inner products are weighted by the Jacobi diagonal D (row_precond), so rows of different
/// units weigh alike. Each direction p = P r is made A-orthogonal to the last
/// kGcrDirections - 1 ones, so every iteration minimises |r|_D along all of them:
///   p = P r;  q = A p;  (p, q) -= beta_j (p_j, q_j),  beta_j = <q, q_j>_D / <q_j, q_j>_D
///   alpha = <r, q>_D / <q, q>_D;  x += alpha p;  r -= alpha q
/// Where the tree solve is exact (no loops) the first iteration ends it: x = P b. Contacts
/// closing loops leave P exact up to their rows; BiCGStab measured worse there (its two-sided
/// recurrence wandered), and so did GCR with 4 directions instead of 8 (1018 against 1659
/// humanoid steps/s under control noise). Each contact row closing a loop adds up to two to
/// the rank of P A - I, so a handful of loop contacts (a lying figure's feet against its
/// pelvis) needs about a dozen directions; 12 directions and 14 iterations against 8 and 10:
/// humanoid under control noise, 16 seeds x 5 s, 8.04 against 9.10 s at 0.005 s (7.9 against
/// 8.4 Newton iterations per step), 2.82 against 3.63 s at 0.04 s, the same at 0.16 s; 16 and 16
/// measured slower again. Those figures predate the loop factor (world_loop_factor), which now
/// eliminates such rows up to kLoopRows; with it 6 directions ran as fast as 12 (32 seeds x 5 s:
/// 9.65-10.04 against 9.64-9.73 s at 0.005 s, 3.22-3.34 against 3.33-3.40 s at 0.04 s), and 12
/// stay for worlds past kLoopRows.
inline constexpr int kGcrDirections = 12;
// GCR iterations per solve at most: where contacts close loops the solve can stall for hundreds
// of iterations short of its tolerance, while Newton converges as well from the direction it
// has after a few (the humanoid under control noise, 1000 steps, line search off, 8
// directions: 7.9 Newton iterations and 1659 steps/s capped at 10, 7.4 and 1344 at 20, 7.3 and
// 705 at 200).
inline constexpr int kGcrIterations = 14;
// Direction `slot` of GCR's p (or q) for the world's rows: a world's kGcrDirections x row slots
// block of row_gcr_p (row_gcr_q) holds one direction after another, each over the world's row
// slots, so a team's lanes read consecutive entries.
AXION_HD Real* gcr_direction(const BatchView& v, Real* gcr, int world, int slot) {
  const int row0 = v.world_row_offset[world];
  const int slots = v.world_row_offset[world + 1] - row0;
  return gcr + kGcrDirections * row0 + slot * slots - row0;  // indexed by row
}
AXION_HD void world_gcr_solve(const BatchView& v, Team team, int world) {
  Real rr[1];
  team_sum_solve_rows(v, team, world, rr, [&](int row, Real* acc) {
    acc[0] += v.row_cr_r[row] * v.row_precond[row] * v.row_cr_r[row];
  });
  const Real tol = world_cr_tolerance(v, world);
  const int max_iterations = v.world_params[world].cr_iterations;
  const int limit = max_iterations < kGcrIterations ? max_iterations : kGcrIterations;
  const Real stop = tol * tol * rr[0];
  Real qq[kGcrDirections];
  int iterations = 0;
  for (int it = 0; it < limit && rr[0] > stop; ++it) {
    const int slot = it % kGcrDirections;
    Real* p = gcr_direction(v, v.row_gcr_p, world, slot);
    Real* q = gcr_direction(v, v.row_gcr_q, world, slot);
    // p = P r (the first from world_cr_solve / row_precondition), q = A p
    if (it > 0) world_precondition_apply(v, team, world, v.row_cr_r, v.row_cr_z);
    team_for_solve_rows(v, team, world, [&](int row) { p[row] = v.row_cr_z[row]; });
    world_schur_product(v, team, world, v.row_cr_z, v.row_cr_az);
    team_for_solve_rows(v, team, world, [&](int row) { q[row] = v.row_cr_az[row]; });
    // orthogonalise against the earlier directions kept, oldest first
    const int kept = it < kGcrDirections - 1 ? it : kGcrDirections - 1;
    for (int age = kept; age >= 1; --age) {
      const int j = (it - age) % kGcrDirections;
      if (!(qq[j] > 0)) continue;
      const Real* pj = gcr_direction(v, v.row_gcr_p, world, j);
      const Real* qj = gcr_direction(v, v.row_gcr_q, world, j);
      Real qqj[1];
      team_sum_solve_rows(v, team, world, qqj, [&](int row, Real* acc) {
        acc[0] += q[row] * v.row_precond[row] * qj[row];
      });
      const Real beta = qqj[0] / qq[j];
      team_for_solve_rows(v, team, world, [&](int row) {
        q[row] -= beta * qj[row];
        p[row] -= beta * pj[row];
      });
    }
    Real s[2];
    team_sum_solve_rows(v, team, world, s, [&](int row, Real* acc) {
      acc[0] += v.row_cr_r[row] * v.row_precond[row] * q[row];
      acc[1] += q[row] * v.row_precond[row] * q[row];
    });
    qq[slot] = s[1];
    if (!(s[1] > 0)) break;
    const Real alpha = s[0] / s[1];
    team_sum_solve_rows(v, team, world, rr, [&](int row, Real* acc) {
      v.row_dlambda[row] += alpha * p[row];
      v.row_cr_r[row] -= alpha * q[row];
      acc[0] += v.row_cr_r[row] * v.row_precond[row] * v.row_cr_r[row];
    });
    iterations += 1;
  }
  team_sync(team);
  if (team.lane == 0) v.world_cr_iterations[world] += iterations;
}

/// Per world with the tree preconditioner, after the tree's factor: the contacts outside the
/// tree take the inverse of their 3 x 3 block of A (on the team rather than in the factor's
/// chain on one thread, which does not need them), then the loop factor. A pass of its own,
/// so that its arrays do not weigh on the registers and stack of the solve.
AXION_HD void world_loop_precondition(const BatchView& v, Team team, int world) {
  world_build_solve_runs(v, team, world);
  team_for_solve_rows(v, team, world, [&](int row) {
    if (v.row_tree_head[row] < 0 && v.row_tree_child[row] == kTreeContactBlock &&
        !row_frozen(v, row))
      tree_contact_block(v, row);
  });
  team_sync(team);
  world_loop_factor(v, team, world);
}

/// Per world with the tree preconditioner: whether z = P r is the solve, P being A^-1 to
/// kTreeInactive's square, far inside cr_tolerance. It is where no row closes a loop and every
/// row to solve is a joint's factored tree row or a decoupled one (tree_row_decoupled, held out of
/// the solve): a mechanism, a figure in the air.
/// Redundant rows and loops leave P inexact, and contacts leave the check to CR or GCR: a
/// contact against a joint on the same direction (a target held by slides inside a pad) or
/// against another contact (a body squeezed between two static ones) factors in separate
/// groups, where the redundancy test cannot see it, and a world whose solve never converges
/// then went elsewhere unchecked (the pad's target ran the falling ball of
/// IslandTest.BallFallsBesideAWedgedTargetLikeMuJoCo 2.4 mm above the floor with islands off).
AXION_HD bool world_tree_exact(const BatchView& v, Team team, int world) {
  // with loops the tree solve leaves the decoupled rows to their diagonal (world_tree_apply);
  // a world with contacts needs no pass over its rows to be refused
  if (v.world_loop_count[world] > 0 || v.world_contact_count[world] > 0) return false;
  Real outside[1];
  team_sum_solve_rows(v, team, world, outside, [&](int row, Real* acc) {
    const bool covered = v.row_tree_head[row] >= 0
                             ? !v.row_tree_dropped[row] || tree_row_decoupled(v, row)
                             : !row_closes_loop(v, row);
    if (!covered) acc[0] += 1;
  });
  return outside[0] == 0;
}

/// Per world, one Newton iteration's whole linear solve, from r = b to the world's own
/// stopping rule: Conjugate Residual while A is symmetric, GCR once sliding friction makes it
/// unsymmetric. A team runs a world: one thread on the CPU, which keeps that world's rows and
/// bodies in cache for the whole solve; a warp on CUDA.
AXION_HD void world_cr_solve(const BatchView& v, Team team, int world) {
  if (world_uses_tree(v, world)) {
    // z = P r, p = z (world_loop_precondition has found the rows outside frozen islands)
    world_precondition_apply(v, team, world, v.row_cr_r, v.row_cr_z);
    if (world_tree_exact(v, team, world)) {
      // P = A^-1: the solve is z, and a Krylov iteration would only confirm it
      team_for_solve_rows(v, team, world, [&](int row) {
        if (!v.row_held_out[row]) v.row_dlambda[row] = v.row_cr_z[row];
      });
      team_sync(team);
      if (team.lane == 0) v.world_cr_iterations[world] += 1;
      return;
    }
    team_for_solve_rows(v, team, world, [&](int row) { v.row_cr_p[row] = v.row_cr_z[row]; });
    team_sync(team);
  } else {
    // the rows outside frozen islands (row_precondition has set z and p for the diagonal)
    world_build_solve_runs(v, team, world);
  }
  if (world_unsymmetric(v, team, world)) {
    world_gcr_solve(v, team, world);
  } else {
    world_cr_solve_symmetric(v, team, world);
  }
}

/// Per body, recover the velocity step from the impulse step (seed 003):
///   du = M^-1 (J^T dlambda - g),  with J^T dlambda in body_jt.
AXION_HD void body_recover_du(const BatchView& v, int body) {
  Vec6 rhs = {load3(v.body_jt + 6 * body) - load3(v.body_g + 6 * body),
              load3(v.body_jt + 6 * body + 3) - load3(v.body_g + 6 * body + 3)};
  store6(v.body_du + 6 * body,
         body_frozen(v, body) ? Vec6{} : body_apply_newton_inv_mass(v, body, rhs));
}

// Per body / per row: the trial iterate x = x_accepted + t dx of the line search.
AXION_HD void body_trial(const BatchView& v, int body, Real t) {
  for (int i = 0; i < 6; ++i) {
    v.body_u[6 * body + i] = v.body_u_accepted[6 * body + i] + t * v.body_du[6 * body + i];
  }
}
/// Contact impulses are projected as the trial is taken: lambda_n >= 0, no friction impulse on
/// a contact without normal impulse, and a friction impulse past kFrictionTrialLimit times its
/// cone brought back to kFrictionTrialCone times it. The solution satisfies all three; an
/// iterate that does not makes the friction compliance W jump to its cap (no normal impulse, or
/// |lambda_f| past about twice the cone, where W's denominator changes sign), and Newton would
/// chase its own residual spikes. Within the limit friction is left alone, even outside its
/// cone: its excess over the cone is what drives W to the sliding solution in one step.
///
/// The friction bound was found on a lying humanoid whose step cycled to the Newton limit: a
/// lightly touching contact in a loop with another sliding at its cone's edge took trials whose
/// friction impulse stood 830 times its cone (merit 1e11), the line search ran out of halvings,
/// and every sixth iteration the contact's normal impulse fell to zero and was rebuilt fivefold
/// per iteration. The same states solved with and without it (bench/solver_pairs, humanoid
/// under control noise 0.01; RESULTS.md) took 0.88-0.95 of the Newton iterations and 0.81-0.93
/// of the time from 0.005 to 0.64 s, with fewer steps at the Newton limit at every step but one.
/// Bounding every trial at 1.2 cones instead gained as much on the humanoid, but a settled pile
/// of spheres (PreconditionerTest.WorldsOfContactsOnlyFactorTheTree) then ended up to 125 of 700
/// steps at the limit, its iterates held against the bound; with the limit at 2 it ends 2-3
/// (4-9 without the bound).
inline constexpr Real kFrictionTrialLimit = Real(2);
inline constexpr Real kFrictionTrialCone = Real(1.2);
AXION_HD void row_trial(const BatchView& v, int row, Real t) {
  const int kind = v.row_kind[row];
  Real lambda = v.row_lambda_accepted[row] + t * v.row_dlambda[row];
  if (kind == kRowContactNormal) {
    lambda = lambda > 0 ? lambda : Real(0);
  } else if (kind == kRowFriction1 || kind == kRowFriction2) {
    const int first = kind == kRowFriction1 ? row : row - 1;
    const int normal = first - 1;
    const Real lambda_n = v.row_lambda_accepted[normal] + t * v.row_dlambda[normal];
    if (!(lambda_n > 0)) {
      lambda = 0;
    } else {
      // both friction rows at the trial from the accepted iterate (the other row's own trial
      // may not be taken yet), so that each row scales the same impulse
      const Real l1 = v.row_lambda_accepted[first] + t * v.row_dlambda[first];
      const Real l2 = v.row_lambda_accepted[first + 1] + t * v.row_dlambda[first + 1];
      const Real lambda_f = std::sqrt(l1 * l1 + l2 * l2);
      const Real cone = v.contact_friction[v.row_contact[row]] * lambda_n;
      if (lambda_f > kFrictionTrialLimit * cone) lambda *= kFrictionTrialCone * cone / lambda_f;
    }
  } else if (row_kind_is_angular_friction(kind)) {
    // the same bound on an angular friction cone
    const AngularCone c = angular_cone(v, row);
    const int normal = contact_first_row(v, v.row_world[row], v.row_contact[row]);
    const Real lambda_n = v.row_lambda_accepted[normal] + t * v.row_dlambda[normal];
    if (!(lambda_n > 0)) {
      lambda = 0;
    } else {
      Real sum = 0;
      for (int i = 0; i < c.count; ++i) {
        const Real l = v.row_lambda_accepted[c.first + i] + t * v.row_dlambda[c.first + i];
        sum += l * l;
      }
      const Real impulse = std::sqrt(sum), cone = c.mu * lambda_n;
      if (impulse > kFrictionTrialLimit * cone) lambda *= kFrictionTrialCone * cone / impulse;
    }
  }
  v.row_lambda[row] = lambda;
}
/// Per world in the line search, on its team: the trial iterate of each island still searching,
/// at the island's own step t (islands that accepted their trial keep it).
AXION_HD void world_trial(const BatchView& v, Team team, int world) {
  for (int body = v.world_body_offset[world] + team.lane; body < v.world_body_offset[world + 1];
       body += team.size) {
    const Real t = v.island_ls_step[v.body_island[body]];
    if (t > 0) body_trial(v, body, t);
  }
  const int row_end = v.world_row_offset[world] + world_live_rows(v, world);
  for (int row = v.world_row_offset[world] + team.lane; row < row_end; row += team.size) {
    const Real t = v.island_ls_step[row_island(v, row)];
    if (t > 0) row_trial(v, row, t);
  }
  team_sync(team);
}
// Per world: copies an iterate's velocities and impulses (u_from -> u_to, lambda_from ->
// lambda_to) over the bodies and live rows of the islands marked in island_copy, the
// team's lanes sharing them.
AXION_HD void world_copy_iterate(const BatchView& v, Team team, int world, const Real* u_from,
                                 Real* u_to, const Real* lambda_from, Real* lambda_to) {
  for (int body = v.world_body_offset[world] + team.lane; body < v.world_body_offset[world + 1];
       body += team.size) {
    if (!v.island_copy[v.body_island[body]]) continue;
    for (int i = 6 * body; i < 6 * body + 6; ++i) u_to[i] = u_from[i];
  }
  const int row_end = v.world_row_offset[world] + world_live_rows(v, world);
  for (int row = v.world_row_offset[world] + team.lane; row < row_end; row += team.size) {
    if (v.island_copy[row_island(v, row)]) lambda_to[row] = lambda_from[row];
  }
}

// The residual that ends a step's Newton solve after `iterations` iterations: newton_tolerance,
// and past newton_tail_iterations the looser newton_tail_residual, where the steps left are
// mostly slow linear tails close to their solution (README, "Solver choices").
AXION_HD Real newton_stop_tolerance(const WorldParams& p, int iterations) {
  const bool tail = p.newton_tail_iterations > 0 && iterations >= p.newton_tail_iterations;
  return tail && p.newton_tail_residual > p.newton_tolerance ? p.newton_tail_residual
                                                             : p.newton_tolerance;
}

// The largest of a world's islands' best residuals.
AXION_HD Real world_islands_residual_best(const BatchView& v, int world) {
  const int b0 = v.world_body_offset[world];
  Real largest = 0;
  for (int k = b0; k < b0 + v.world_island_count[world]; ++k)
    largest = max_or_nan(largest, v.island_residual_best[k]);
  return largest;
}

/// Per world, after an iterate is accepted: each island remembers it if its merit is the
/// island's lowest so far (`first`: the step's initial iterate). A step that ends without
/// converging keeps that iterate rather than the last one, so a Newton solve that wanders off
/// cannot leave worse velocities than the best it found. The team's lanes share the copy.
/// An iterate within the stopping tolerance is kept over one that is not, whatever their merits:
/// the merit weighs a friction row by its unscaled residual, which for a contact without normal
/// impulse (W at its cap) can stay large where its error is 1e-8. A solved island of boxes
/// then kept an earlier best at 0.27 m/s, its world's best residual (the largest of its
/// islands') stopped the other islands' solve at halving_iterations, and the step was taken
/// unconverged (humanoid100.xml under control noise: 147 of 2000 steps against 34; RESULTS.md,
/// "A solved island's best iterate").
AXION_HD void world_keep_best(const BatchView& v, Team team, int world, bool first) {
  const int b0 = v.world_body_offset[world], island_end = b0 + v.world_island_count[world];
  if (team.lane == 0) {
    bool any = false;
    const Real tolerance =
        newton_stop_tolerance(v.world_params[world], v.world_newton_attempt[world]);
    for (int k = b0; k < island_end; ++k) {
      const bool solved = v.island_residual[k] <= tolerance;
      const bool solved_best = v.island_residual_best[k] <= tolerance;
      const bool keep = first || (solved && !solved_best) ||
                        (solved == solved_best && v.island_merit[k] < v.island_merit_best[k]);
      v.island_copy[k] = keep;
      if (!keep) continue;
      any = true;
      v.island_merit_best[k] = v.island_merit[k];
      v.island_residual_best[k] = v.island_residual[k];
    }
    if (any) {
      v.world_newton_best[world] = v.world_newton_attempt[world];
      v.world_residual_best[world] = world_islands_residual_best(v, world);
    }
  }
  team_sync(team);  // lane 0 has marked the islands before the lanes copy
  world_copy_iterate(v, team, world, v.body_u, v.body_u_best, v.row_lambda, v.row_lambda_best);
  team_sync(team);
}

/// Per world, after Newton: in a world that did not converge, each island that did not
/// returns to its best iterate when the last one is worse, with q+ integrated again from its u.
AXION_HD void world_restore_best(const BatchView& v, int world) {
  if (!(v.world_flags[world] & kWorldNotConverged)) return;
  const int b0 = v.world_body_offset[world], island_end = b0 + v.world_island_count[world];
  bool any = false;
  for (int k = b0; k < island_end; ++k) {
    // a NaN merit restores
    const bool restore = !v.island_converged[k] && !(v.island_merit[k] <= v.island_merit_best[k]);
    v.island_copy[k] = restore;
    if (!restore) continue;
    any = true;
    v.island_merit[k] = v.island_merit_best[k];
    v.island_residual[k] = v.island_residual_best[k];
  }
  if (!any) return;
  world_figures_from_islands(v, world);
  world_copy_iterate(v, Team{}, world, v.body_u_best, v.body_u, v.row_lambda_best, v.row_lambda);
  for (int body = b0; body < v.world_body_offset[world + 1]; ++body) {
    if (v.island_copy[v.body_island[body]]) body_integrate(v, body, v.world_params[world]);
  }
}

AXION_HD void body_accept(const BatchView& v, int body) {
  for (int i = 0; i < 6; ++i) v.body_u_accepted[6 * body + i] = v.body_u[6 * body + i];
}
AXION_HD void row_accept(const BatchView& v, int row) {
  v.row_lambda_accepted[row] = v.row_lambda[row];
}
// Per world, on its team: the current iterate becomes the accepted one.
AXION_HD void world_accept(const BatchView& v, Team team, int world) {
  for (int body = v.world_body_offset[world] + team.lane; body < v.world_body_offset[world + 1];
       body += team.size)
    body_accept(v, body);
  const int row_end = v.world_row_offset[world] + world_live_rows(v, world);
  for (int row = v.world_row_offset[world] + team.lane; row < row_end; row += team.size)
    row_accept(v, row);
  team_sync(team);
}

}  // namespace axion::kernels
