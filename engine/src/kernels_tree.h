// The spanning-tree preconditioner for the Schur complement A = J M~^-1 J^T + C.
//
// Rows are gathered into groups: consecutive rows acting on the same pair of bodies (one
// joint's anchor, axis, limit and drive rows; the contacts between two bodies), at most
// kTreeGroupRows of them. Bodies and groups form a bipartite graph; the static world is not a
// node of it, since a group to the world acts on one body only. The groups that keep the graph
// a forest form the tree, joints first, then contacts: each group joining two bodies not yet
// connected; at most one rigid group to the world per component (a fixed base), which becomes
// the component's root; and every contact group to the world (both feet, each limb of a lying
// figure) as a leaf below its body. Groups closing a loop (a hand touching its own thigh, a
// second fixed base) stay on the Jacobi diagonal here; the loop factor (kernels_solver.h,
// world_loop_factor) then eliminates them exactly on top of this solve. On the tree the augmented
// matrix
//     H = [ M~  J^T ]
//         [ J   -C  ]
// has no fill-in when eliminated leaves first (Baraff 1996, "Linear-time dynamics using
// Lagrange multipliers"), so its block LU costs O(bodies + rows) per world and solves the
// tree's part of A exactly. The preconditioner is P = blockdiag(A_tree^-1, diag(A_rest)^-1),
// exact on an articulated body, where the linear solve then ends after one product with A
// instead of the hundreds a Jacobi diagonal needs along a chain of light and heavy links. It
// is symmetric positive definite, as preconditioned Conjugate Residual requires, until sliding
// friction couples a contact's friction rows to its normal impulse (C_g unsymmetric); the
// factor then stays exact and GCR takes over (kernels_solver.h). Contact groups between bodies
// are often redundant (a box's four corners put twelve rows on six DOFs); the Newton matrix's
// contact regularisation (kNewtonRegularization) keeps their blocks invertible, and rows that
// are still nearly dependent leave the tree (below). Worlds of contacts only are factored the
// same way, their contact groups hanging from the bodies: with the friction rows' exact Newton
// form this settles piles the Jacobi diagonal leaves at the Newton limit (piles of 60 to 130
// spheres, 700 steps each: 257 steps at the limit in all against 1231, 7.4 against 57.6 s;
// RESULTS.md). An early tree of contacts,
// before that form, measured worse (the 100-sphere pile 27 instead of 145 steps/s).
//
// Within a group, rows that are (nearly) combinations of earlier ones are found while
// factoring and take the Jacobi diagonal as well (kTreeRedundancy). Each Newton iteration the
// joint limits away from their stop, whose diagonal is all compliance (kTreeInactive), leave the
// factor too: their impulse is decoupled from the rest (it goes to zero) to that accuracy, and
// they are held out of the linear solve altogether (row_hold_out, kernels_solver.h: each solved
// on its own, its force in the bodies' right-hand side). Within the solve their diagonal alone
// had left 1e-4..1e-5 of the residual and a second CR iteration on nearly every solve, and a
// symmetric Gauss-Seidel step about the tree solve took that error to kTreeInactive before they
// left the solve. The group factors only its other rows: on the humanoid 95% of the limit rows
// are inactive, and a 3-DOF joint's 12 rows factor as 6 (16% less time under control noise, the
// same Newton and CR iterations). Contacts stay: a separating normal row's friction rows can
// still be coupled to it, and measured no faster.
//
// Layout: a body's Schur-updated 6x6 block D_b lives in body_tree_block, a group's m x m
// block N_g = -D_g = C_g + sum J D_b^-1 J^T over its active rows in row_tree_block (the
// group's k-th row slot holds row k of N_g, whose rows are the ones listed in row_tree_rows; a
// leaf's is C_g); both are factored by LU and then replaced by their inverses.
// The elimination order is the leaves, then each body once every group below it is done,
// followed by the group joining it to its parent; a root group goes last. A group eliminated
// keeps Y_g = N_g^-1 J_gp, and its parent gathers J_gp^T Y_g from the groups below it in row
// order, so the order in which bodies are taken changes no bits: the factor runs on the world's
// team, the bodies of each level of the tree (body_tree_level) side by side on however many
// lanes the team has (one thread on the CPU). The solve runs level by level on the team, each
// body summing what the groups below it hand up in row order, so it gives the same bits on every
// backend and every run.
#pragma once

#include <type_traits>

#include "kernels_common.h"

namespace axion::kernels {

// Rows per group at most (a 3-DOF joint with limits and drives: 3 + 6 + 3; four contact
// points: 4 x 3). Longer runs of rows on
// one body pair continue in a new group, which closes a loop and stays on the Jacobi diagonal.
inline constexpr int kTreeGroupRows = 12;
// A row whose pivot falls below this fraction of its diagonal entry is (nearly) a combination
// of the group's earlier rows: a box's four contact points constrain six DOFs with twelve rows.
// Such rows leave the tree for the Jacobi diagonal, since factoring them would put a huge
// eigenvalue into the preconditioner along the redundant impulses and let CR move them freely.
inline constexpr Real kTreeRedundancy = Real(1e-6);
// A unilateral row whose diagonal entry of A is compliance but for this fraction (J M^-1 J^T
// below it) is inactive: its Newton row reads lambda -> 0, which the Jacobi diagonal solves to
// this accuracy (a limit away from its stop; a contact the step does not close, and its friction
// rows; see row_inactive).
inline constexpr Real kTreeInactive = Real(1e-6);
// row_tree_dropped of a row left out of its group's factor as decoupled (kTreeInactive; 1: as
// redundant, kTreeRedundancy).
inline constexpr int kTreeDecoupled = 2;
// row_tree_child of a leaf group: contacts between one body and the static world (below).
inline constexpr int kTreeLeaf = -2;
// row_tree_child of the normal row of a contact outside the tree (closing a loop): its three rows
// take the inverse of their 3 x 3 block of A instead of the Jacobi diagonal. Sliding friction
// couples them by far more than their diagonal (contact_friction_newton), which a diagonal
// preconditioner cannot see: measured on the lying humanoid, the linear solve then stalled at
// 1e-3 after 30 iterations.
inline constexpr int kTreeContactBlock = -3;
// Whether contact groups to the world become leaves. Their elimination divides by the rows'
// compliance, down to the Newton regularisation (1e-6 of the inverse effective mass): in double
// precision that costs about six of sixteen digits of the rows' impulses in the preconditioner,
// in single precision all of them, so single-precision builds keep such groups on the Jacobi
// diagonal, apart from one per component as its root.
inline constexpr bool kTreeContactLeaves = sizeof(Real) >= 8;

// In-place LU factor of the n x n block `a` (row stride `stride`), without pivoting: L unit
// lower (below the diagonal), U upper, the diagonal holding 1 / U_jj so that the solves
// multiply where divisions would serialise them. The blocks are symmetric positive definite
// but for sliding friction's coupling to the normal impulse (contact_friction_newton), which
// leaves them diagonally dominant in the contact's rows, so the diagonal order serves as the
// pivot order. Redundant rows (see kTreeRedundancy; the same test as a Cholesky factor's on a
// symmetric block) become unit rows decoupled from the others; the returned mask has their bits
// set. Bodies' blocks (drop_redundant false) are nonsingular through their mass; a pivot lost to
// round-off under huge contact stiffness is only kept away from zero.
template <class Size>
AXION_HD int tree_lu(Real* a, Size n, int stride, bool drop_redundant) {
  int dropped = 0;
  for (int i = 0; i < n; ++i) {
    Real* ai = a + i * stride;
    // L_ij = (A_ij - sum_{k<j} L_ik U_kj) / U_jj
    for (int j = 0; j < i; ++j) {
      Real s = ai[j];
      for (int k = 0; k < j; ++k) s -= ai[k] * a[k * stride + j];
      ai[j] = ((dropped >> j) & 1) ? Real(0) : s * a[j * stride + j];
    }
    // U_ij = A_ij - sum_{k<i} L_ik U_kj for j >= i
    const Real diag = ai[i];
    for (int j = i; j < n; ++j) {
      Real s = ai[j];
      for (int k = 0; k < i; ++k) s -= ai[k] * a[k * stride + j];
      ai[j] = s;
    }
    Real d = ai[i];
    if (drop_redundant && !(std::fabs(d) > kTreeRedundancy * std::fabs(diag))) {
      dropped |= 1 << i;
      for (int j = 0; j < n; ++j) ai[j] = 0;
      for (int k = 0; k < i; ++k) a[k * stride + i] = 0;
      ai[i] = 1;
      continue;
    }
    if (!drop_redundant && !(std::fabs(d) > Real(1e-14) * std::fabs(diag)))
      d = Real(1e-14) * std::fabs(diag);
    ai[i] = Real(1) / d;
  }
  return dropped;
}

// Replaces the factor from tree_lu (n x n, row stride `stride`) by the full inverse
// (L U)^-1, with the rows and columns of `dropped` zero. The preconditioner applies these
// inverses many times per factorisation; a matrix-vector product pipelines where triangular
// solves wait on each previous entry. Column c of the inverse solves L U x = e_c. All columns
// advance together, row by row, so the chains of subtractions of different columns overlap
// (and vectorise) while each column's sums keep their order; the forward pass skips the
// entries above row c, exact zeros.
template <class Size>
AXION_HD void tree_lu_invert(Real* a, Size n, int stride, int dropped) {
  Real x[kTreeGroupRows][kTreeGroupRows];  // x[i][c]: entry i of column c
  Real s[kTreeGroupRows];
  // forward, L y = e_c: y_i = delta_ic - sum_{k=c}^{i-1} L_ik y_k
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c <= i; ++c) s[c] = c == i ? Real(1) : Real(0);
    for (int k = 0; k < i; ++k) {
      const Real l = a[i * stride + k];
      for (int c = 0; c <= k; ++c) s[c] -= l * x[k][c];
    }
    for (int c = 0; c <= i; ++c) x[i][c] = s[c];
    for (int c = i + 1; c < n; ++c) x[i][c] = 0;
  }
  // backward, U x = y: x_i = (y_i - sum_{k=i+1}^{n-1} U_ik x_k) / U_ii
  for (int i = n - 1; i >= 0; --i) {
    for (int c = 0; c < n; ++c) s[c] = x[i][c];
    for (int k = i + 1; k < n; ++k) {
      const Real u = a[i * stride + k];
      for (int c = 0; c < n; ++c) s[c] -= u * x[k][c];
    }
    for (int c = 0; c < n; ++c) x[i][c] = s[c] * a[i * stride + i];
  }
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < n; ++c) {
      bool zero = ((dropped >> i) & 1) || ((dropped >> c) & 1);
      a[i * stride + c] = zero ? Real(0) : x[i][c];
    }
  }
}

// Replaces the N x N block `m` (row-major, in registers where N is a compile-time constant on
// the GPU) by its inverse, for the sizes most blocks have (a body's D_b; a joint's active rows; a
// contact's three): Gauss-Jordan elimination without pivoting in the diagonal order, equivalent to
// tree_lu then tree_lu_invert, with the same tests on each pivot (the Schur complement's diagonal
// entry, as U_kk): with drop_redundant a redundant row and its column become zero and its bit is
// set in the returned mask; otherwise a pivot lost to round-off is kept away from zero. Of fixed
// size, it runs in registers on the GPU, where tree_lu and tree_lu_invert kept their working arrays
// in local memory (the factor took 7% less time with this for the bodies alone).
template <int N>
AXION_HD int tree_invert_registers(Real* m, bool drop_redundant) {
  Real diag[N];
  AXION_UNROLL
  for (int i = 0; i < N; ++i) diag[i] = m[(N + 1) * i];
  int dropped = 0;
  AXION_UNROLL
  for (int k = 0; k < N; ++k) {
    Real d = m[(N + 1) * k];
    if (drop_redundant && !(std::fabs(d) > kTreeRedundancy * std::fabs(diag[k]))) {
      dropped |= 1 << k;
      AXION_UNROLL
      for (int j = 0; j < N; ++j) {
        m[N * k + j] = 0;
        m[N * j + k] = 0;
      }
      continue;
    }
    if (!drop_redundant && !(std::fabs(d) > Real(1e-14) * std::fabs(diag[k])))
      d = Real(1e-14) * std::fabs(diag[k]);
    const Real pivot = Real(1) / d;
    m[(N + 1) * k] = 1;
    AXION_UNROLL
    for (int j = 0; j < N; ++j) m[N * k + j] *= pivot;
    AXION_UNROLL
    for (int i = 0; i < N; ++i) {
      if (i == k) continue;
      const Real f = m[N * i + k];
      m[N * i + k] = 0;
      AXION_UNROLL
      for (int j = 0; j < N; ++j) m[N * i + j] -= f * m[N * k + j];
    }
  }
  return dropped;
}

// tree_invert_registers on the N x N block `a` in memory (row stride `stride`), in place.
template <int N>
AXION_HD int tree_invert_fixed(Real* a, int stride, bool drop_redundant) {
  Real m[N * N];
  AXION_UNROLL
  for (int i = 0; i < N; ++i) {
    AXION_UNROLL
    for (int j = 0; j < N; ++j) m[N * i + j] = a[stride * i + j];
  }
  const int dropped = tree_invert_registers<N>(m, drop_redundant);
  AXION_UNROLL
  for (int i = 0; i < N; ++i) {
    AXION_UNROLL
    for (int j = 0; j < N; ++j) a[stride * i + j] = m[N * i + j];
  }
  return dropped;
}

// Groups of up to this many factored rows (every joint group and two-point contact group of the
// humanoid) take forms of fixed size, their blocks in registers; larger ones the general forms.
inline constexpr int kTreeFixedRows = 6;
template <int M>
struct TreeRows {
  static constexpr int value = M;
};
// fixed(TreeRows<m>{}) for 1 <= m <= kTreeFixedRows, any() otherwise.
template <class Fixed, class Any>
AXION_HD auto tree_by_rows(int m, Fixed fixed, Any any) {
  static_assert(kTreeFixedRows == 6, "one case per fixed size");
  switch (m) {
    case 1:
      return fixed(TreeRows<1>{});
    case 2:
      return fixed(TreeRows<2>{});
    case 3:
      return fixed(TreeRows<3>{});
    case 4:
      return fixed(TreeRows<4>{});
    case 5:
      return fixed(TreeRows<5>{});
    case 6:
      return fixed(TreeRows<6>{});
    default:
      return any();
  }
}

// The general forms below take their row count m as an int, or as a compile-time constant
// (std::integral_constant) for the counts just past kTreeFixedRows that most groups of the
// general form have on the CPU: a humanoid's 3-DOF joints with a limit or a drive active, 7 and
// 8 rows, about six such groups per Newton iteration. The loops are the same, in the same order,
// so the bits are; with the bounds known the compiler unrolls them (humanoid, noise 0.01, 2000
// steps: 1.6% more world-steps/s on seed 2, whose figure lies on the floor; 0.2% on seed 1).
// The GPU keeps the int forms: each constant is another copy of the factor in the CUDA unit.
template <class F>
AXION_HD auto tree_by_size(int m, F f) {
#if !defined(__CUDA_ARCH__)
  if (m == 7) return f(std::integral_constant<int, 7>{});
  if (m == 8) return f(std::integral_constant<int, 8>{});
#endif
  return f(m);
}

// The inverse of a group's m x m block N_g (row stride kTreeGroupRows) for more than
// kTreeFixedRows rows, by LU, redundant rows dropped; returns their mask.
template <class Size>
AXION_HD int tree_invert_group_lu(Real* n, Size m) {
  const int dropped = tree_lu(n, m, kTreeGroupRows, true);
  tree_lu_invert(n, m, kTreeGroupRows, dropped);
  return dropped;
}

// y = A x for an n x n block with row stride `stride` (x and y distinct).
template <class Size>
AXION_HD void tree_matvec(const Real* a, Size n, int stride, const Real* x, Real* y) {
  for (int i = 0; i < n; ++i) {
    Real s = 0;
    for (int k = 0; k < n; ++k) s += a[i * stride + k] * x[k];
    y[i] = s;
  }
}

// Whether a row's Newton row is decoupled from the others to kTreeInactive: its diagonal entry
// of A is its compliance (a separated unilateral row, whose Fischer-Burmeister form reads
// lambda -> 0; row_precond holds 1 / diag A).
AXION_HD bool row_inactive(const BatchView& v, int row) {
  return !(v.row_compliance[row] * v.row_precond[row] < Real(1) - kTreeInactive);
}

// Whether world `world` preconditions with the tree (and so takes friction's exact Newton form).
AXION_HD bool world_uses_tree(const BatchView& v, int world) {
  return v.world_params[world].preconditioner == int32_t(Preconditioner::kTree);
}

// The Jacobian block of `row` for `body` (one of its two bodies).
AXION_HD const Real* tree_row_jacobian(const BatchView& v, int row, int body) {
  return (v.row_body_a[row] == body ? v.row_jac_a : v.row_jac_b) + 6 * row;
}

AXION_HD Real dot6(const Real* a, const Real* b) {
  Real s = 0;
  for (int i = 0; i < 6; ++i) s += a[i] * b[i];
  return s;
}

AXION_HD int tree_find(const BatchView& v, int body) {
  while (v.body_tree_set[body] != body) {
    v.body_tree_set[body] = v.body_tree_set[v.body_tree_set[body]];
    body = v.body_tree_set[body];
  }
  return body;
}

// Next group head at or after `row` (rows outside the tree are skipped), or row_end.
AXION_HD int tree_next_group(const BatchView& v, int row, int row_end) {
  while (row < row_end && v.row_tree_head[row] != row) ++row;
  return row;
}

// Whether the rows [row, row + m) are all contact rows (normal, friction, angular friction).
AXION_HD bool tree_contact_rows(const BatchView& v, int row, int m) {
  for (int k = 0; k < m; ++k) {
    if (!row_kind_is_contact(v.row_kind[row + k])) return false;
  }
  return true;
}

/// Per world, at the step's first Newton iteration: groups the live rows, picks the spanning
/// forest and orders its bodies breadth-first from each component's root. The static world
/// would close loops too, since every group to it touches the same infinitely heavy node, but
/// it never enters the elimination: a group to the world acts on one body only. A rigid one (a
/// fixed base) is its component's root, at most one per component, eliminated after its body:
/// eliminating it first would put its inverse compliance, 1/C with C -> 0, into its body's
/// block. Contact groups to the world carry compliance (the Newton regularisation at least), so
/// any number of them are leaves eliminated before their body, D_b += J^T C^-1 J: both feet on
/// the floor, and a lying figure's every limb, are in the tree.
AXION_HD void world_tree_build(const BatchView& v, int world) {
  const int b0 = v.world_body_offset[world], b1 = v.world_body_offset[world + 1];
  const int row0 = v.world_row_offset[world];
  const int row_end = row0 + world_live_rows(v, world);
  for (int b = b0; b < b1; ++b) {
    v.body_tree_set[b] = b;
    v.body_tree_parent[b] = -2;  // unvisited
    v.body_tree_grounded[b] = 0;
  }
  // groups: runs of rows on one body pair; kept when they do not close a loop
  // (a coupling's or a tendon's row and its second slot act on up to four bodies: a group of
  // their own, never kept, the row closing a loop)
  auto coupling = [&](int r) {
    return row_kind_has_second_slot(v.row_kind[r]) || v.row_kind[r] == kRowCouplingLeader;
  };
  for (int row = row0; row < row_end;) {
    int a = v.row_body_a[row], b = v.row_body_b[row];
    int m = 1;
    while (!coupling(row) && row + m < row_end && m < kTreeGroupRows) {
      int ra = v.row_body_a[row + m], rb = v.row_body_b[row + m];
      if (!((ra == a && rb == b) || (ra == b && rb == a)) || coupling(row + m)) break;
      ++m;
    }
    bool keep = false, leaf = false;
    if (coupling(row)) {
      // outside the tree
    } else if (a >= 0 && b >= 0) {
      int sa = tree_find(v, a), sb = tree_find(v, b);
      keep = sa != sb && !(v.body_tree_grounded[sa] && v.body_tree_grounded[sb]);
      if (keep) {
        v.body_tree_set[sa] = sb;
        v.body_tree_grounded[sb] |= v.body_tree_grounded[sa];
      }
    } else if (a >= 0 || b >= 0) {
      leaf = kTreeContactLeaves && tree_contact_rows(v, row, m);
      int sa = tree_find(v, a >= 0 ? a : b);
      keep = leaf || !v.body_tree_grounded[sa];
      if (!leaf) v.body_tree_grounded[sa] = 1;
    }
    for (int k = 0; k < m; ++k) {
      v.row_tree_head[row + k] = keep ? row : -1;
      v.row_tree_size[row + k] = 0;
      v.row_tree_dropped[row + k] = 0;
      const bool block = !keep && v.row_kind[row + k] == kRowContactNormal && k + 2 < m;
      v.row_tree_child[row + k] = block ? kTreeContactBlock : -1;
    }
    if (keep) {
      v.row_tree_size[row] = m;
      // a rigid group to the world is a root above its body, a contact group a leaf below it;
      // one between bodies is placed below
      int body = a < 0 ? b : a;
      v.row_tree_parent[row] = leaf ? body : -1;
      v.row_tree_child[row] = leaf ? kTreeLeaf : (a < 0 || b < 0) ? body : -1;
    }
    row += m;
  }
  // breadth-first order from the roots: bodies under a group to the world first, then the
  // first unvisited body of each remaining component
  int count = 0;
  for (int next = row0, root = b0; next < row_end || root < b1;) {
    if (next < row_end) {
      int g = tree_next_group(v, next, row_end);
      if (g >= row_end) {
        next = row_end;
        continue;
      }
      next = g + v.row_tree_size[g];
      if (v.row_body_a[g] >= 0 && v.row_body_b[g] >= 0) continue;  // between bodies
      if (v.row_tree_child[g] == kTreeLeaf) continue;
      int body = v.row_tree_child[g];
      v.body_tree_parent[body] = g;
      v.body_tree_order[b0 + count++] = body;
    } else {
      if (v.body_tree_parent[root] != -2) {
        ++root;
        continue;
      }
      v.body_tree_parent[root] = -1;
      v.body_tree_order[b0 + count++] = root++;
    }
    for (int head = count - 1; head < count; ++head) {
      int body = v.body_tree_order[b0 + head];
      // the groups on this body, in row order: the heads among its rows
      const int list_end = v.body_row_begin[body] + v.body_row_count[body];
      for (int e = v.body_row_begin[body]; e < list_end; ++e) {
        const int g = row_entry_row(v, v.row_body_list[e]);
        if (v.row_tree_head[g] != g) continue;    // inside a group, or outside the tree
        if (v.row_tree_child[g] != -1) continue;  // to the world, or already placed
        int a = v.row_body_a[g], b = v.row_body_b[g];
        int other = a == body ? b : a;
        v.row_tree_parent[g] = body;
        v.row_tree_child[g] = other;
        v.body_tree_parent[other] = g;
        v.body_tree_order[b0 + count++] = other;
      }
    }
  }
  // levels: a body's height above its lowest descendant, children before parents (reverse
  // breadth-first order); then the bodies by level, each level in breadth-first order
  for (int b = b0; b < b1; ++b) v.body_tree_level[b] = 0;
  int levels = 0;
  for (int i = b1 - b0 - 1; i >= 0; --i) {
    const int b = v.body_tree_order[b0 + i];
    const int level = v.body_tree_level[b];
    levels = level + 1 > levels ? level + 1 : levels;
    const int g = v.body_tree_parent[b];
    const int p = g >= 0 ? v.row_tree_parent[g] : -1;
    if (p >= 0 && v.body_tree_level[p] < level + 1) v.body_tree_level[p] = level + 1;
  }
  v.world_tree_levels[world] = levels;
  for (int level = 0, next = b0; level < levels; ++level) {
    v.body_tree_level_start[b0 + level] = next;
    for (int i = 0; i < b1 - b0; ++i) {
      const int b = v.body_tree_order[b0 + i];
      if (v.body_tree_level[b] == level) v.body_tree_level_order[next++] = b;
    }
  }
  // the groups below each body (its leaves, its children's groups), in row order
  for (int b = b0; b < b1; ++b) v.body_tree_child_count[b] = 0;
  for (int g = row0; g < row_end; ++g) {
    if (v.row_tree_head[g] == g && v.row_tree_parent[g] >= 0)
      v.body_tree_child_count[v.row_tree_parent[g]] += 1;
  }
  for (int b = b0, next = row0; b < b1; ++b) {
    v.body_tree_child_begin[b] = next;
    next += v.body_tree_child_count[b];
    v.body_tree_child_count[b] = 0;
  }
  for (int g = row0; g < row_end; ++g) {
    if (v.row_tree_head[g] != g || v.row_tree_parent[g] < 0) continue;
    const int p = v.row_tree_parent[g];
    v.row_tree_child_group[v.body_tree_child_begin[p] + v.body_tree_child_count[p]++] = g;
  }
}

// The row that group g factors at position i (see row_tree_rows).
AXION_HD int tree_group_row(const BatchView& v, int g, int i) { return g + v.row_tree_rows[g + i]; }

// Factors group g (its inverse N_g^-1 over its active rows, marking redundant ones) and, unless
// it is a root, keeps Y_g = N_g^-1 J_gp for its parent body p (a leaf's parent is its body),
// which gathers J_gp^T Y_g into D_p (tree_body_gather). Any number of rows, the blocks read from
// and written to memory as they are used.
template <class Size>
AXION_HD void tree_eliminate_group_any(const BatchView& v, int g, Size m) {
  const int p = v.row_tree_parent[g];
  Real* n = v.row_tree_block + 12 * g;
  const int dropped = tree_invert_group_lu(n, m);
  for (int i = 0; i < m; ++i) {
    if ((dropped >> i) & 1) v.row_tree_dropped[tree_group_row(v, g, i)] = 1;
  }
  if (p < 0) return;
  Real jp[6][kTreeGroupRows];  // J_gp^T, column c of J_gp contiguous
  for (int i = 0; i < m; ++i) {
    const Real* j = tree_row_jacobian(v, tree_group_row(v, g, i), p);
    for (int c = 0; c < 6; ++c) jp[c][i] = j[c];
  }
  Real y[kTreeGroupRows];
  for (int c = 0; c < 6; ++c) {
    tree_matvec(n, m, kTreeGroupRows, jp[c], y);
    for (int i = 0; i < m; ++i) v.row_tree_y[6 * tree_group_row(v, g, i) + c] = y[i];
  }
}

// The Jacobian blocks on `body` of the M rows `rows`, row-major (M x 6).
template <int M>
AXION_HD void tree_load_jacobians(const BatchView& v, const int* rows, int body, Real (*j)[6]) {
  AXION_UNROLL
  for (int i = 0; i < M; ++i) {
    const Real* src = tree_row_jacobian(v, rows[i], body);
    AXION_UNROLL
    for (int c = 0; c < 6; ++c) j[i][c] = src[c];
  }
}

// tree_eliminate_group_any for a group of M factored rows `rows` whose complete block N_g is `n`
// (M x M, row-major): every block stays in registers from load to store, where the general form
// reloads them for each product (on the GPU, each lane waits on each of those loads). The same
// operations in the same order, so the same bits. The inverse goes to `block` (row stride
// kTreeGroupRows: the group's, or a leaf contact's 3 x 3 part of it) and Y to the rows'
// row_tree_y for the parent body p (none for a root, p < 0).
template <int M>
AXION_HD void tree_eliminate_block_fixed(const BatchView& v, int p, const int* rows, Real* n,
                                         Real* block) {
  const int dropped = tree_invert_registers<M>(n, true);
  AXION_UNROLL
  for (int i = 0; i < M; ++i) {
    AXION_UNROLL
    for (int l = 0; l < M; ++l) block[kTreeGroupRows * i + l] = n[M * i + l];
    if ((dropped >> i) & 1) v.row_tree_dropped[rows[i]] = 1;
  }
  if (p < 0) return;
  Real jp[M][6];
  tree_load_jacobians<M>(v, rows, p, jp);
  // Y = N_g^-1 J_gp, column by column
  AXION_UNROLL
  for (int c = 0; c < 6; ++c) {
    AXION_UNROLL
    for (int i = 0; i < M; ++i) {
      Real s = 0;
      AXION_UNROLL
      for (int k = 0; k < M; ++k) s += n[M * i + k] * jp[k][c];
      v.row_tree_y[6 * rows[i] + c] = s;
    }
  }
}
// ... for group g's whole block.
template <int M>
AXION_HD void tree_eliminate_group_fixed(const BatchView& v, int g, const int* rows, Real* n) {
  tree_eliminate_block_fixed<M>(v, v.row_tree_parent[g], rows, n, v.row_tree_block + 12 * g);
}

// A leaf group of M factored rows: its block N_g = C_g from memory, then eliminated.
template <int M>
AXION_HD void tree_eliminate_leaf_fixed(const BatchView& v, int g) {
  int rows[M];
  Real n[M * M];
  const Real* block = v.row_tree_block + 12 * g;
  AXION_UNROLL
  for (int i = 0; i < M; ++i) {
    rows[i] = tree_group_row(v, g, i);
    AXION_UNROLL
    for (int l = 0; l < M; ++l) n[M * i + l] = block[kTreeGroupRows * i + l];
  }
  tree_eliminate_group_fixed<M>(v, g, rows, n);
}

// Whether leaf group g's M factored rows are whole contacts (normal, then its two friction
// rows), so that its block C_g is block-diagonal by contact: compliance, and friction's
// coupling to the contact's own normal and other friction row (tree_group_start).
AXION_HD bool tree_leaf_of_contacts(const BatchView& v, int g, int m) {
  if (m % 3 != 0) return false;
  for (int i = 0; i < m; ++i) {
    if (v.row_tree_rows[g + i] != i) return false;
    const int kind = v.row_kind[g + i];
    if (kind != (i % 3 == 0 ? kRowContactNormal : i % 3 == 1 ? kRowFriction1 : kRowFriction2))
      return false;
  }
  return true;
}

// Contact c of a leaf of whole contacts eliminated alone: its 3 x 3 block of C_g inverted in
// place (the rest of the block's rows and columns stay the zeros they are) and its rows' Y =
// C_c^-1 J. Gauss-Jordan on the whole block (tree_invert_registers) does the same operations
// plus ones on exact zeros, so a two-contact leaf keeps its bits up to the sign of a zero; a
// foot's three or four contacts, which took the general LU through memory, now cost three or
// four 3 x 3 inverses (and round as those do). H100, 8192 humanoids: the factor 3.72 -> 2.18 ms
// per sub-step, 1.1x the world-steps/s (RESULTS.md, run H).
AXION_HD void tree_eliminate_leaf_contact(const BatchView& v, int g, int c) {
  int rows[3];
  Real n[9];
  Real* block = v.row_tree_block + 12 * (g + 3 * c) + 3 * c;  // the contact's 3 x 3 of C_g
  AXION_UNROLL
  for (int i = 0; i < 3; ++i) {
    rows[i] = g + 3 * c + i;
    AXION_UNROLL
    for (int l = 0; l < 3; ++l) n[3 * i + l] = block[kTreeGroupRows * i + l];
  }
  tree_eliminate_block_fixed<3>(v, v.row_tree_parent[g], rows, n, block);
}

// Eliminates the leaf group g: contact by contact where it holds whole contacts, otherwise in
// registers for up to kTreeFixedRows rows.
AXION_HD void tree_eliminate_leaf(const BatchView& v, int g) {
  const int m = v.row_tree_count[g];
  if (m == 0) return;
  if (m > 3 && tree_leaf_of_contacts(v, g, m)) {
    for (int c = 0; c < m / 3; ++c) tree_eliminate_leaf_contact(v, g, c);
    return;
  }
  tree_by_rows(
      m, [&](auto rows) { tree_eliminate_leaf_fixed<decltype(rows)::value>(v, g); },
      [&] { tree_by_size(m, [&](auto size) { tree_eliminate_group_any(v, g, size); }); });
}

// Body b, its block inverted (`dinv`, 6 x 6 row-major), into the group g above it of M
// factored rows: T = D_b^-1 J_gb^T kept for the solve, N_g += J_gb T, and g eliminated.
template <int M>
AXION_HD void tree_body_into_group_fixed(const BatchView& v, int b, int g, const Real* dinv) {
  int rows[M];
  AXION_UNROLL
  for (int i = 0; i < M; ++i) rows[i] = tree_group_row(v, g, i);
  Real jb[M][6], t[M][6];
  tree_load_jacobians<M>(v, rows, b, jb);
  AXION_UNROLL
  for (int i = 0; i < M; ++i) {
    AXION_UNROLL
    for (int r = 0; r < 6; ++r) {
      Real s = 0;
      AXION_UNROLL
      for (int c = 0; c < 6; ++c) s += dinv[6 * r + c] * jb[i][c];
      t[i][r] = s;
      v.row_tree_t[6 * rows[i] + r] = s;
    }
  }
  Real n[M * M];
  const Real* block = v.row_tree_block + 12 * g;
  AXION_UNROLL
  for (int i = 0; i < M; ++i) {
    AXION_UNROLL
    for (int l = 0; l < M; ++l) n[M * i + l] = block[kTreeGroupRows * i + l] + dot6(jb[i], t[l]);
  }
  tree_eliminate_group_fixed<M>(v, g, rows, n);
}

// tree_body_into_group_fixed for any number of rows, through memory.
template <class Size>
AXION_HD void tree_body_into_group_any(const BatchView& v, int b, int g, Size m) {
  const Real* d = v.body_tree_block + 36 * b;
  for (int i = 0; i < m; ++i) {
    const int row = tree_group_row(v, g, i);
    tree_matvec(d, 6, 6, tree_row_jacobian(v, row, b), v.row_tree_t + 6 * row);
  }
  for (int i = 0; i < m; ++i) {
    Real* n = v.row_tree_block + 12 * (g + i);
    const Real* j = tree_row_jacobian(v, tree_group_row(v, g, i), b);
    for (int l = 0; l < m; ++l) n[l] += dot6(j, v.row_tree_t + 6 * tree_group_row(v, g, l));
  }
  tree_eliminate_group_any(v, g, m);
}

// tree_body_into_group_any for a size M known at compile time (tree_by_size), its blocks in
// local arrays from load to store: through the views' pointers, which may alias, every write
// was stored and every read reloaded. The same operations in the same order, so the same bits
// (humanoid, noise 0.01: 1% more world-steps/s on seeds 1 and 2).
template <int M>
AXION_HD void tree_body_into_group_sized(const BatchView& v, int b, int g, const Real* dinv) {
  int rows[M];
  Real jb[M][6], t[M][6];
  for (int i = 0; i < M; ++i) {
    rows[i] = tree_group_row(v, g, i);
    const Real* j = tree_row_jacobian(v, rows[i], b);
    for (int c = 0; c < 6; ++c) jb[i][c] = j[c];
  }
  // T = D_b^-1 J_gb^T, kept for the solve
  for (int i = 0; i < M; ++i) {
    for (int r = 0; r < 6; ++r) {
      Real s = 0;
      for (int k = 0; k < 6; ++k) s += dinv[6 * r + k] * jb[i][k];
      t[i][r] = s;
      v.row_tree_t[6 * rows[i] + r] = s;
    }
  }
  // N_g += J_gb T, inverted by LU
  Real n[M * M];
  for (int i = 0; i < M; ++i) {
    const Real* block = v.row_tree_block + 12 * (g + i);
    for (int l = 0; l < M; ++l) n[M * i + l] = block[l] + dot6(jb[i], t[l]);
  }
  const std::integral_constant<int, M> size;
  const int dropped = tree_lu(n, size, M, true);
  tree_lu_invert(n, size, M, dropped);
  for (int i = 0; i < M; ++i) {
    Real* block = v.row_tree_block + 12 * (g + i);
    for (int l = 0; l < M; ++l) block[l] = n[M * i + l];
    if ((dropped >> i) & 1) v.row_tree_dropped[rows[i]] = 1;
  }
  // Y = N_g^-1 J_gp for the parent
  const int p = v.row_tree_parent[g];
  if (p < 0) return;
  Real jp[6][M];
  for (int i = 0; i < M; ++i) {
    const Real* j = tree_row_jacobian(v, rows[i], p);
    for (int c = 0; c < 6; ++c) jp[c][i] = j[c];
  }
  for (int c = 0; c < 6; ++c) {
    Real y[M];
    tree_matvec(n, size, M, jp[c], y);
    for (int i = 0; i < M; ++i) v.row_tree_y[6 * rows[i] + c] = y[i];
  }
}

AXION_HD void tree_body_into_group(const BatchView& v, int b, int g, const Real* dinv) {
  const int m = v.row_tree_count[g];
  if (m == 0) return;
  tree_by_rows(
      m, [&](auto rows) { tree_body_into_group_fixed<decltype(rows)::value>(v, b, g, dinv); },
      [&] {
        tree_by_size(m, [&](auto size) {
          if constexpr (std::is_same_v<decltype(size), int>) {
            tree_body_into_group_any(v, b, g, size);
          } else {
            tree_body_into_group_sized<decltype(size)::value>(v, b, g, dinv);
          }
        });
      });
}

// D_b += sum J_gb^T Y_g over the groups below body b (its leaves, its children's groups), in
// their list's row order, with D_b in `d` (6 x 6 row-major): the elimination of those groups
// into b. Each group's sum over its rows is formed first, then added, as one product would.
AXION_HD void tree_body_gather(const BatchView& v, int b, Real* d) {
  const int list_end = v.body_tree_child_begin[b] + v.body_tree_child_count[b];
  for (int e = v.body_tree_child_begin[b]; e < list_end; ++e) {
    const int g = v.row_tree_child_group[e];
    const int m = v.row_tree_count[g];
    if (m == 0) continue;
    Real sum[36];
    AXION_UNROLL
    for (int k = 0; k < 36; ++k) sum[k] = 0;
    for (int i = 0; i < m; ++i) {
      const int row = tree_group_row(v, g, i);
      Real j[6], y[6];
      const Real* jb = tree_row_jacobian(v, row, b);
      AXION_UNROLL
      for (int c = 0; c < 6; ++c) {
        j[c] = jb[c];
        y[c] = v.row_tree_y[6 * row + c];
      }
      AXION_UNROLL
      for (int r = 0; r < 6; ++r) {
        AXION_UNROLL
        for (int c = 0; c < 6; ++c) sum[6 * r + c] += j[r] * y[c];
      }
    }
    AXION_UNROLL
    for (int k = 0; k < 36; ++k) d[k] += sum[k];
  }
}

// Body b once every group below it is eliminated: D_b gathered and inverted, then the group
// above it (if any) takes b's share and is eliminated in turn.
AXION_HD void tree_factor_body(const BatchView& v, int b) {
  Real* block = v.body_tree_block + 36 * b;
  Real d[36];
  AXION_UNROLL
  for (int k = 0; k < 36; ++k) d[k] = block[k];
  tree_body_gather(v, b, d);
  // a body whose rotation is held to the world has infinite inertia there: D_b^-1 keeps only
  // the inverse of its linear block (the angular rows and columns set to the identity for the
  // inversion, then to zero)
  const bool rotation_fixed = v.body_rotation_fixed[b] != 0;
  if (rotation_fixed) {
    for (int r = 0; r < 6; ++r) {
      for (int c = 3; c < 6; ++c) d[6 * r + c] = d[6 * c + r] = r == c ? Real(1) : Real(0);
    }
  }
  tree_invert_registers<6>(d, false);
  if (rotation_fixed) {
    for (int k = 3; k < 6; ++k) d[7 * k] = 0;
  }
  AXION_UNROLL
  for (int k = 0; k < 36; ++k) block[k] = d[k];
  const int g = v.body_tree_parent[b];
  if (g >= 0) tree_body_into_group(v, b, g, d);
}

// The inverse of the 3 x 3 block of A = J M~^-1 J^T + C over the rows of the contact whose
// normal row is `normal` (row k of it in row_tree_block of row normal + k).
AXION_HD void tree_contact_block(const BatchView& v, int normal) {
  Real* block = v.row_tree_block + 12 * normal;
  const int a = v.row_body_a[normal], b = v.row_body_b[normal];
  for (int k = 0; k < 3; ++k) {
    const int row = normal + k;
    Vec6 minv_a, minv_b;
    if (a >= 0) minv_a = body_apply_newton_inv_mass(v, a, load6(v.row_jac_a + 6 * row));
    if (b >= 0) minv_b = body_apply_newton_inv_mass(v, b, load6(v.row_jac_b + 6 * row));
    for (int l = 0; l < 3; ++l) {
      Real s = 0;
      if (a >= 0) s += dot(load6(v.row_jac_a + 6 * (normal + l)), minv_a);
      if (b >= 0) s += dot(load6(v.row_jac_b + 6 * (normal + l)), minv_b);
      block[12 * l + k] = s;
    }
    block[12 * k + k] += v.row_compliance[row];
    const int kind = v.row_kind[row];
    if (kind == kRowFriction1 || kind == kRowFriction2) {
      block[12 * k] += v.row_coupling[2 * row];
      block[12 * k + (kind == kRowFriction1 ? 2 : 1)] += v.row_coupling[2 * row + 1];
    }
  }
  tree_invert_fixed<3>(block, kTreeGroupRows, false);
}

// Body b's block starts from the Newton matrix's M~: mass, and inertia with the joints'
// geometric stiffness.
AXION_HD void tree_body_start(const BatchView& v, int b) {
  Real* d = v.body_tree_block + 36 * b;
  for (int i = 0; i < 36; ++i) d[i] = 0;
  Real mass = Real(1) / v.body_inv_mass[b];
  Mat33 inertia = load33(v.body_inertia_newton + 9 * b);
  for (int i = 0; i < 3; ++i) {
    d[6 * i + i] = mass;
    for (int j = 0; j < 3; ++j) d[6 * (3 + i) + 3 + j] = inertia(i, j);
  }
}

// Group g picks its active rows and starts from its compliance block C_g over them (diagonal,
// and the friction rows' coupling within the group); a leaf is then eliminated (Y_g = C_g^-1
// J_gb, gathered by its body).
AXION_HD void tree_group_start(const BatchView& v, int g) {
  const int size = v.row_tree_size[g];
  int compact[kTreeGroupRows];  // position among the factored rows, or -1
  int m = 0;
  for (int k = 0; k < size; ++k) {
    const int row = g + k;
    const int kind = v.row_kind[row];
    const bool inactive = (kind == kRowLimitLower || kind == kRowLimitUpper ||
                           kind == kRowLimitCone || kind == kRowFrictionLoss) &&
                          row_inactive(v, row);
    v.row_tree_dropped[row] = inactive ? kTreeDecoupled : 0;
    compact[k] = inactive ? -1 : m;
    if (!inactive) v.row_tree_rows[g + m++] = k;
  }
  v.row_tree_count[g] = m;
  for (int i = 0; i < m; ++i) {
    const int k = v.row_tree_rows[g + i], row = g + k;
    Real* n = v.row_tree_block + 12 * (g + i);
    for (int l = 0; l < m; ++l) n[l] = 0;
    n[i] = v.row_compliance[row];
    int coupled[2];
    row_coupled_rows(v, row, &coupled[0], &coupled[1]);
    for (int c = 0; c < 2; ++c) {
      const int column = coupled[c] - g;  // within the group, or not
      if (coupled[c] < 0 || column < 0 || column >= size || compact[column] < 0) continue;
      n[compact[column]] += v.row_coupling[2 * row + c];
    }
  }
  if (v.row_tree_child[g] == kTreeLeaf) tree_eliminate_leaf(v, g);
}

/// Per world, each Newton iteration after the rows are evaluated: the block LDL^T of the tree
/// part of H, leaves first, on the world's team: bodies and groups start side by side, then the
/// bodies level by level (a level's bodies depend on none of each other), each gathering from
/// the groups below it. The same operations on every element in the same order whatever the
/// team's width, so the same bits on every backend: a humanoid's 13 bodies take 6 levels, whose
/// widest holds 3, so a full device runs it on teams of 4 lanes (backend_cuda.cu, NarrowTeams).
AXION_HD void world_tree_factor(const BatchView& v, Team team, int world) {
  const int b0 = v.world_body_offset[world], b1 = v.world_body_offset[world + 1];
  const int row0 = v.world_row_offset[world];
  const int row_end = row0 + world_live_rows(v, world);
  for (int b = b0 + team.lane; b < b1; b += team.size) {
    if (!body_frozen(v, b)) tree_body_start(v, b);
  }
  for (int g = row0 + team.lane; g < row_end; g += team.size) {
    if (v.row_tree_head[g] == g && !row_frozen(v, g)) tree_group_start(v, g);
  }
  const int levels = v.world_tree_levels[world];
  for (int level = 0; level < levels; ++level) {
    team_sync(team);
    const int begin = v.body_tree_level_start[b0 + level];
    const int end = level + 1 < levels ? v.body_tree_level_start[b0 + level + 1] : b1;
    for (int k = begin + team.lane; k < end; k += team.size) {
      const int b = v.body_tree_level_order[k];
      if (!body_frozen(v, b)) tree_factor_body(v, b);
    }
  }
  team_sync(team);
}

// y_g <- N_g^-1 e_g for group g over its factored rows, with e_g read from `e` (row-indexed).
template <class Size>
AXION_HD void tree_group_solve(const BatchView& v, int g, Size m, const Real* e, Real* y) {
  Real e_g[kTreeGroupRows];
  for (int i = 0; i < m; ++i) e_g[i] = e[tree_group_row(v, g, i)];
  tree_matvec(v.row_tree_block + 12 * g, m, kTreeGroupRows, e_g, y);
}

// The forward step of group g over its M factored rows: w_g = N_g^-1 (e_g - J_gb t_b) into
// `out` (e_g read from it), for the group above body b with t_b = `t`, or w_g = N_g^-1 e_g for
// a leaf (`t` null). The rows' indices, e_g and the block stay in registers; redundant rows
// keep their entry of `out`.
template <int M>
AXION_HD void tree_forward_group_fixed(const BatchView& v, int b, int g, const Real* t, Real* out) {
  int rows[M];
  bool dropped[M];
  Real e[M];
  AXION_UNROLL
  for (int i = 0; i < M; ++i) {
    rows[i] = tree_group_row(v, g, i);
    dropped[i] = v.row_tree_dropped[rows[i]] != 0;
    e[i] = out[rows[i]];
    if (t != nullptr && !dropped[i]) e[i] -= dot6(tree_row_jacobian(v, rows[i], b), t);
  }
  const Real* n = v.row_tree_block + 12 * g;
  const int p = v.row_tree_parent[g];
  Real u[6] = {0, 0, 0, 0, 0, 0};
  AXION_UNROLL
  for (int i = 0; i < M; ++i) {
    Real s = 0;
    AXION_UNROLL
    for (int k = 0; k < M; ++k) s += n[kTreeGroupRows * i + k] * e[k];
    if (dropped[i]) continue;
    out[rows[i]] = s;
    if (p < 0) continue;
    const Real* j = tree_row_jacobian(v, rows[i], p);
    AXION_UNROLL
    for (int c = 0; c < 6; ++c) u[c] += j[c] * s;
  }
  if (p < 0) return;
  AXION_UNROLL
  for (int c = 0; c < 6; ++c) v.row_tree_u[6 * g + c] = u[c];
}

// tree_forward_group_fixed for any number of rows, through memory.
template <class Size>
AXION_HD void tree_forward_group_any(const BatchView& v, int b, int g, Size m, const Real* t,
                                     Real* out) {
  if (t != nullptr) {
    for (int i = 0; i < m; ++i) {
      const int row = tree_group_row(v, g, i);
      if (!v.row_tree_dropped[row]) out[row] -= dot6(tree_row_jacobian(v, row, b), t);
    }
  }
  Real y[kTreeGroupRows];
  tree_group_solve(v, g, m, out, y);
  const int p = v.row_tree_parent[g];
  Real u[6] = {0, 0, 0, 0, 0, 0};
  for (int i = 0; i < m; ++i) {
    const int row = tree_group_row(v, g, i);
    if (v.row_tree_dropped[row]) continue;
    out[row] = y[i];
    if (p < 0) continue;
    const Real* j = tree_row_jacobian(v, row, p);
    for (int c = 0; c < 6; ++c) u[c] += j[c] * y[i];
  }
  if (p < 0) return;
  for (int c = 0; c < 6; ++c) v.row_tree_u[6 * g + c] = u[c];
}

// tree_forward_group for a leaf of whole contacts (tree_leaf_of_contacts): w_g = C_g^-1 e_g
// contact by contact, the rest of its block being zeros (tree_eliminate_leaf_contact), and u_g
// summed in row order as the whole block's product sums it: the same bits, up to the sign of a
// zero, from 9 entries of the block per contact instead of the whole block.
AXION_HD void tree_forward_leaf_contacts(const BatchView& v, int g, int m, Real* out) {
  const Real* n = v.row_tree_block + 12 * g;
  const int p = v.row_tree_parent[g];
  Real u[6] = {0, 0, 0, 0, 0, 0};
  for (int c = 0; c < m / 3; ++c) {
    Real e[3];
    AXION_UNROLL
    for (int i = 0; i < 3; ++i) e[i] = out[g + 3 * c + i];
    AXION_UNROLL
    for (int i = 0; i < 3; ++i) {
      const int row = g + 3 * c + i;
      Real s = 0;
      AXION_UNROLL
      for (int k = 0; k < 3; ++k) s += n[kTreeGroupRows * (3 * c + i) + 3 * c + k] * e[k];
      if (v.row_tree_dropped[row]) continue;
      out[row] = s;
      if (p < 0) continue;
      const Real* j = tree_row_jacobian(v, row, p);
      AXION_UNROLL
      for (int col = 0; col < 6; ++col) u[col] += j[col] * s;
    }
  }
  if (p < 0) return;
  for (int col = 0; col < 6; ++col) v.row_tree_u[6 * g + col] = u[col];
}

AXION_HD void tree_forward_group(const BatchView& v, int b, int g, const Real* t, Real* out) {
  const int m = v.row_tree_count[g];
  if (m == 0) {  // every row inactive: nothing for the parent
    if (v.row_tree_parent[g] >= 0) {
      for (int c = 0; c < 6; ++c) v.row_tree_u[6 * g + c] = 0;
    }
    return;
  }
  if (t == nullptr && m > 3 && tree_leaf_of_contacts(v, g, m)) {
    tree_forward_leaf_contacts(v, g, m, out);
    return;
  }
  tree_by_rows(
      m, [&](auto rows) { tree_forward_group_fixed<decltype(rows)::value>(v, b, g, t, out); },
      [&] { tree_by_size(m, [&](auto size) { tree_forward_group_any(v, b, g, size, t, out); }); });
}

// Whether `row` of a tree group left the factor as decoupled (a limit or friction loss away
// from its stop, kTreeInactive) rather than as redundant.
AXION_HD bool tree_row_decoupled(const BatchView& v, int row) {
  return v.row_tree_dropped[row] == kTreeDecoupled;
}
// The backward step of the group g above body b, the parent's x_p known: z_g = w_g - Y_g x_p
// into `out`, and x_b = t_b + T_b z_g in body_tree_x (x_b and x_p held in registers).
AXION_HD void tree_backward_group(const BatchView& v, int b, int g, Real* out) {
  const int m = v.row_tree_count[g];
  const int p = v.row_tree_parent[g];
  Real x[6], xp[6];
  AXION_UNROLL
  for (int c = 0; c < 6; ++c) {
    x[c] = v.body_tree_x[6 * b + c];
    xp[c] = p >= 0 ? v.body_tree_x[6 * p + c] : Real(0);
  }
  for (int i = 0; i < m; ++i) {
    const int row = tree_group_row(v, g, i);
    if (v.row_tree_dropped[row]) continue;
    Real z = out[row];
    if (p >= 0) z -= dot6(v.row_tree_y + 6 * row, xp);
    out[row] = z;
    const Real* t = v.row_tree_t + 6 * row;
    AXION_UNROLL
    for (int c = 0; c < 6; ++c) x[c] += t[c] * z;
  }
  AXION_UNROLL
  for (int c = 0; c < 6; ++c) v.body_tree_x[6 * b + c] = x[c];
}

// Whether group g's factored rows hold zero in `e` (its right-hand side in the forward pass).
AXION_HD bool tree_group_rhs_zero(const BatchView& v, int g, const Real* e) {
  for (int i = 0, m = v.row_tree_count[g]; i < m; ++i) {
    if (e[tree_group_row(v, g, i)] != 0) return false;
  }
  return true;
}

// Group g with a zero right-hand side and nothing from below: u_g = 0 for its parent.
AXION_HD void tree_group_hand_up_zero(const BatchView& v, int g) {
  if (v.row_tree_parent[g] < 0) return;
  for (int c = 0; c < 6; ++c) v.row_tree_u[6 * g + c] = 0;
}

/// Per world: out = P in over the live rows. Tree rows solve H [x; -z] = [0; in] by the
/// factor (forward leaves to roots, then back roots to leaves; x = M~^-1 J^T z is the bodies'
/// part), the other rows take the Jacobi diagonal (the decoupled ones, held out of the solve,
/// hold zero there). The factor keeps T = D_b^-1 J_gb^T and
/// Y = N_g^-1 J_gp, so each body and group takes one triangular solve pair per application.
/// The team's lanes share the rows and leaves, and the bodies of a level of the tree (bodies of
/// equal height above their lowest descendant depend on none of each other): a humanoid's 13
/// bodies take 6 levels.
AXION_HD void world_tree_apply(const BatchView& v, Team team, int world, const Real* in,
                               Real* out) {
  const int b0 = v.world_body_offset[world], b1 = v.world_body_offset[world + 1];
  // Jacobi rows scaled, tree rows copied
  team_for_solve_rows(v, team, world, [&](int r) {
    bool tree = v.row_tree_head[r] >= 0 && !v.row_tree_dropped[r];
    out[r] = tree ? in[r] : v.row_precond[r] * in[r];
  });
  team_sync(team);
  // contacts outside the tree: their 3 x 3 block's inverse
  team_for_solve_rows(v, team, world, [&](int r) {
    if (v.row_tree_head[r] >= 0 || v.row_tree_child[r] != kTreeContactBlock || row_frozen(v, r))
      return;
    tree_matvec(v.row_tree_block + 12 * r, 3, kTreeGroupRows, in + r, out + r);
  });
  team_sync(team);
  // leaves: w_g = C_g^-1 e_g, each group on its own
  team_for_solve_rows(v, team, world, [&](int g) {
    if (v.row_tree_head[g] == g && v.row_tree_child[g] == kTreeLeaf && !row_frozen(v, g)) {
      if (tree_group_rhs_zero(v, g, out)) {
        tree_group_hand_up_zero(v, g);
      } else {
        tree_forward_group(v, -1, g, nullptr, out);
      }
    }
  });
  // forward, leaves to roots, level by level (a level's bodies in parallel):
  // f_b = sum u_g over the groups below b (leaves and children, in row order), t_b = D_b^-1 f_b,
  // and for the group g above b, w_g = N_g^-1 (e_g - J_gb t_b) and u_g = J_gp^T w_g (t_b kept in
  // body_tree_x, w_g in out). Each group hands its parent u_g, computed on its own lane, so a
  // body sums a few 6-vectors instead of walking its rows.
  const int levels = v.world_tree_levels[world];
  for (int level = 0; level < levels; ++level) {
    team_sync(team);
    const int begin = v.body_tree_level_start[b0 + level];
    const int end = level + 1 < levels ? v.body_tree_level_start[b0 + level + 1] : b1;
    for (int k = begin + team.lane; k < end; k += team.size) {
      const int b = v.body_tree_level_order[k];
      if (body_frozen(v, b)) continue;
      Real f_b[6] = {0, 0, 0, 0, 0, 0};
      const int list_end = v.body_tree_child_begin[b] + v.body_tree_child_count[b];
      for (int e = v.body_tree_child_begin[b]; e < list_end; ++e) {
        const Real* u = v.row_tree_u + 6 * v.row_tree_child_group[e];
        for (int c = 0; c < 6; ++c) f_b[c] += u[c];
      }
      const int g = v.body_tree_parent[b];
      // nothing below b and in the group above it (a loop column's right-hand side touches a
      // few rows): t_b, w_g and u_g are zero, and w_g's entries of `out` already are
      bool zero = true;
      for (int c = 0; c < 6; ++c) zero = zero && f_b[c] == 0;
      if (zero && (g < 0 || tree_group_rhs_zero(v, g, out))) {
        for (int c = 0; c < 6; ++c) v.body_tree_x[6 * b + c] = 0;
        if (g >= 0) tree_group_hand_up_zero(v, g);
      } else {
        Real t[6];
        tree_matvec(v.body_tree_block + 36 * b, 6, 6, f_b, t);
        for (int c = 0; c < 6; ++c) v.body_tree_x[6 * b + c] = t[c];
        if (g >= 0) tree_forward_group(v, b, g, t, out);
      }
    }
  }
  // backward, roots to leaves, level by level: z_g = w_g - Y_g x_p, x_b = t_b + T_b z_g
  for (int level = levels - 1; level >= 0; --level) {
    team_sync(team);
    const int begin = v.body_tree_level_start[b0 + level];
    const int end = level + 1 < levels ? v.body_tree_level_start[b0 + level + 1] : b1;
    for (int k = begin + team.lane; k < end; k += team.size) {
      const int b = v.body_tree_level_order[k];
      const int g = v.body_tree_parent[b];
      if (g >= 0 && !body_frozen(v, b)) tree_backward_group(v, b, g, out);
    }
  }
  team_sync(team);
  // leaves: z_g = w_g - Y_g x_b = C_g^-1 (e_g - J_gb x_b), each row on its own
  team_for_solve_rows(v, team, world, [&](int r) {
    const int g = v.row_tree_head[r];
    if (g < 0 || v.row_tree_child[g] != kTreeLeaf || v.row_tree_dropped[r] || row_frozen(v, r))
      return;
    out[r] -= dot6(v.row_tree_y + 6 * r, v.body_tree_x + 6 * v.row_tree_parent[g]);
  });
  team_sync(team);
}

}  // namespace axion::kernels
