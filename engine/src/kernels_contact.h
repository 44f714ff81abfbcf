// Collision (broad and narrow phase per world) and the contact rows: normal non-penetration
// through Fischer-Burmeister and isotropic Coulomb friction through the fixed-point compliance W.
#pragma once

#include "collision/collision.h"
#include "kernels_body.h"
#include "kernels_common.h"
#include "kernels_tree.h"

namespace axion::kernels {

AXION_HD ShapeGeom shape_geom(const BatchView& v, int shape) {
  ShapeGeom g;
  g.type = v.shape_type[shape];
  g.size = load3(v.shape_size + 3 * shape);
  int hull = v.shape_hull[shape];
  if (hull >= 0 && g.type == narrowphase::kTypeHeightField) {
    const int first = v.heightfield_offset[hull];
    g.heightfield_heights = v.heightfield_heights + first;
    g.heightfield_cols = v.heightfield_cols[hull];
    g.heightfield_rows = (v.heightfield_offset[hull + 1] - first) / g.heightfield_cols;
    g.heightfield_top = v.heightfield_top[hull];
  } else if (hull >= 0) {
    int first_vertex = v.hull_vertex_offset[hull];
    g.hull_vertices = v.hull_vertices + 3 * first_vertex;
    g.hull_vertex_count = v.hull_vertex_offset[hull + 1] - first_vertex;
    int first_face = v.hull_face_offset[hull];
    g.hull_face_count = v.hull_face_offset[hull + 1] - first_face;
    g.hull_face_offset = v.hull_face_start + first_face + hull;
    g.hull_faces = v.hull_face_index + v.hull_face_index_offset[hull];
    g.hull_face_plane = v.hull_face_plane + 4 * first_face;
    g.hull_edge_offset = v.hull_edge_start + first_vertex + hull;
    const int first_edge = v.hull_edge_index_offset[hull];
    g.hull_edge_vertex = v.hull_edge_vertex + first_edge;
    g.hull_edge_face = v.hull_edge_face + first_edge;
    g.hull_climb_start = v.hull_climb_start + narrowphase::kHullClimbStarts * hull;
    g.hull_radius = v.hull_radius[hull];
  }
  return g;
}

// World pose of a shape at configuration q.
AXION_HD void shape_world_pose(const BatchView& v, int shape, const Real* q, Vec3* pos,
                               Quat* quat) {
  int body = v.shape_body[shape];
  Vec3 local_pos = load3(v.shape_pos + 3 * shape);
  Quat local_quat = load_quat(v.shape_quat + 4 * shape);
  if (body < 0) {
    *pos = local_pos;
    *quat = local_quat;
    return;
  }
  Quat rot = body_rotation(q, body);
  *pos = body_position(q, body) + rotate(rot, local_pos);
  *quat = rot * local_quat;
}

// Velocity of a body at the start of the step after one step of gravity: what the sweep and
// the speculative test below predict motion with (a resting body's support is not known yet).
AXION_HD Vec6 body_predicted_twist(const BatchView& v, int body, const WorldParams& p) {
  Vec6 u = body_twist(v.body_u_prev, body);
  if (body >= 0 && v.body_inv_mass[body] > 0) {
    u.lin = u.lin + v.world_step_length[v.body_world[body]] *
                        Vec3{p.gravity[0], p.gravity[1], p.gravity[2]};
  }
  return u;
}

// Friction coefficient of a contact between shapes sa and sb: the higher-priority shape's where
// their priorities differ (none if it is frictionless, contact_dim 1); else none when both are
// frictionless (the larger dimension wins, MuJoCo's condim rule), else the shapes' coefficients
// combined by the world's rule.
AXION_HD Real contact_friction_coefficient(const BatchView& v, int sa, int sb,
                                           const WorldParams& p) {
  const int32_t priority_a = v.shape_priority[sa], priority_b = v.shape_priority[sb];
  if (priority_a != priority_b) {
    const int s = priority_a > priority_b ? sa : sb;
    return v.shape_contact_dim[s] < 3 ? Real(0) : v.shape_friction[s];
  }
  if (v.shape_contact_dim[sa] < 3 && v.shape_contact_dim[sb] < 3) return 0;
  Real mu_a = v.shape_friction[sa], mu_b = v.shape_friction[sb];
  if (p.friction_combine == static_cast<int32_t>(FrictionCombine::kMax))
    return mu_a > mu_b ? mu_a : mu_b;
  return std::sqrt(mu_a * mu_b);
}

// The angular friction rows of a contact of these coefficients (m): 3 where it rolls against
// friction (torsion, roll 1, roll 2; the first disabled where mu_t is 0), 1 where it only
// spins against it, none where neither.
AXION_HD int contact_angular_row_count(Real torsion, Real rolling) {
  return rolling > 0 ? 3 : torsion > 0 ? 1 : 0;
}

// Torsional and rolling friction coefficients (m) of a contact between shapes sa and sb: the
// contact's dimension is the higher-priority shape's, or the larger of the two (as for
// sliding friction); torsion needs 4, rolling 6, and their coefficients are that shape's, or
// the two shapes' combined by the world's rule. Returns the contact's angular rows
// (contact_angular_row_count).
AXION_HD int contact_angular_coefficients(const BatchView& v, int sa, int sb, const WorldParams& p,
                                          Real* torsion, Real* rolling) {
  *torsion = 0;
  *rolling = 0;
  const int32_t priority_a = v.shape_priority[sa], priority_b = v.shape_priority[sb];
  const int top = priority_a > priority_b ? sa : sb;
  const int dim = priority_a != priority_b                            ? v.shape_contact_dim[top]
                  : v.shape_contact_dim[sa] > v.shape_contact_dim[sb] ? v.shape_contact_dim[sa]
                                                                      : v.shape_contact_dim[sb];
  if (dim < 4) return 0;
  auto combine = [&](Real a, Real b) {
    if (priority_a != priority_b) return top == sa ? a : b;
    if (p.friction_combine == static_cast<int32_t>(FrictionCombine::kMax)) return a > b ? a : b;
    return std::sqrt(a * b);
  };
  *torsion = combine(v.shape_torsion[sa], v.shape_torsion[sb]);
  if (dim >= 6) *rolling = combine(v.shape_rolling[sa], v.shape_rolling[sb]);
  return contact_angular_row_count(*torsion, *rolling);
}

// Half the thickness of a primitive shape (m): its radius, or its smallest half extent; planes,
// hulls and height fields none (infinite).
AXION_HD Real shape_thickness(const BatchView& v, int s) {
  const Vec3 size = load3(v.shape_size + 3 * s);
  switch (v.shape_type[s]) {
    case static_cast<int32_t>(ShapeType::kSphere):
    case static_cast<int32_t>(ShapeType::kCapsule):
      return size.x;
    case static_cast<int32_t>(ShapeType::kCylinder):
      return size.x < size.y ? size.x : size.y;
    case static_cast<int32_t>(ShapeType::kBox): {
      Real t = size.x < size.y ? size.x : size.y;
      return t < size.z ? t : size.z;
    }
    default:
      return Real(1e30);
  }
}
// A pair's share of the contact margin, on top of its sweep: contact_margin, but at most
// kMarginThicknessRatio of its thinner primitive's half thickness. The margin holds contacts
// about to touch in the set; between the 2 mm capsules of dm_control's rodent a centimetre of it
// kept 93 contacts a step that never touched (MuJoCo: none), whose rows closed loops the tree
// cannot take: 33 Newton and 450 CR iterations a step, 110 steps/s; at half the thickness 24
// contacts, 3.7 Newton iterations, 857 steps/s (dog.xml 372 -> 455, the humanoid, CMU humanoid,
// quadruped and humanoid100 as before; a quarter made humanoid100's small boxes halve twice as
// often). Motion is the sweep's part, which this leaves whole.
inline constexpr Real kMarginThicknessRatio = Real(0.5);
AXION_HD Real margin_for_thickness(Real thickness, const WorldParams& p) {
  const Real t = kMarginThicknessRatio * thickness;
  return t < p.contact_margin ? t : p.contact_margin;
}
AXION_HD Real pair_base_margin(const BatchView& v, int sa, int sb, const WorldParams& p) {
  const Real ta = shape_thickness(v, sa), tb = shape_thickness(v, sb);
  return margin_for_thickness(ta < tb ? ta : tb, p);
}

// Per shape: bounding box at q-, grown by the contact margin and by how far its points can
// travel in one step: h v along the predicted velocity, and h |w| R on every side with R the
// distance from the body's centre of mass to the box's farthest corner. A step of 0.05 s moves a
// falling limb 25 cm; without the sweep its contact with the floor is found one step late, deep.
// shape_sweep keeps the scalar h (|v| + |w| R) for the narrow phase's speculative margin. Grown
// by that on every side, each sphere's box in a falling pile reached its 26 neighbours'; grown
// along v, those above and below it (RESULTS.md, "Collision pairs found per step").
AXION_HD void shape_update_aabb(const BatchView& v, int shape, const WorldParams& p) {
  Vec3 pos;
  Quat quat;
  shape_world_pose(v, shape, v.body_q_prev, &pos, &quat);
  Vec3 lower, upper;
  shape_aabb(shape_geom(v, shape), pos, quat, &lower, &upper);
  Real sweep = 0;
  Vec3 travel{0, 0, 0}, turn{0, 0, 0};
  int body = v.shape_body[shape];
  if (body >= 0 && p.speculative_contacts) {
    Vec3 center = Real(0.5) * (lower + upper), half = Real(0.5) * (upper - lower);
    Real reach = norm(center - body_position(v.body_q_prev, body)) + norm(half);
    Vec6 u = body_predicted_twist(v, body, p);
    const Real h = v.world_step_length[v.body_world[body]];
    sweep = h * (norm(u.lin) + norm(u.ang) * reach);
    travel = h * u.lin;
    const Real r = h * norm(u.ang) * reach;
    turn = Vec3{r, r, r};
  }
  v.shape_sweep[shape] = sweep;
  const Real margin = p.contact_margin + v.shape_reach[shape];  // (its pairs': pair_margin)
  Vec3 m{margin, margin, margin};
  m = m + turn;
  Vec3 down{travel.x < 0 ? travel.x : 0, travel.y < 0 ? travel.y : 0, travel.z < 0 ? travel.z : 0};
  Vec3 up{travel.x > 0 ? travel.x : 0, travel.y > 0 ? travel.y : 0, travel.z > 0 ? travel.z : 0};
  store3(v.shape_aabb + 6 * shape, lower - m + down);
  store3(v.shape_aabb + 6 * shape + 3, upper + m + up);
}

// Distance (m) within which a contact point taken at an undone attempt's end is the same
// material point as one from q- (the warm starts' kMatchDistance).
inline constexpr Real kEndPointMatch = Real(0.01);

// Narrow-phase margin of a pair a redo marked (pair_marked): all its points, at q- and at the
// undone attempt's end, join however far apart, since the step's own motion brings them
// together.
inline constexpr Real kUnboundedMargin = Real(1e30);

AXION_HD bool aabb_overlap(const Real* a, const Real* b) {
  return a[0] <= b[3] && b[0] <= a[3] && a[1] <= b[4] && b[1] <= a[4] && a[2] <= b[5] &&
         b[2] <= a[5];
}

// World-frame lever arms of contact k at q-, from each body's COM to its contact point.
AXION_HD void contact_levers(const BatchView& v, int k, Vec3* lever_a, Vec3* lever_b) {
  int a = v.contact_body_a[k], b = v.contact_body_b[k];
  *lever_a =
      a < 0 ? Vec3{} : rotate(body_rotation(v.body_q_prev, a), load3(v.contact_local_a + 3 * k));
  *lever_b =
      b < 0 ? Vec3{} : rotate(body_rotation(v.body_q_prev, b), load3(v.contact_local_b + 3 * k));
}

// The pair rule of global shapes sa < sb (a binary search among the lower shape's), or -1.
AXION_HD int world_pair_rule(const BatchView& v, int sa, int sb) {
  int lo = v.shape_rule_first[sa], hi = lo + v.shape_rule_count[sa];
  const int end = hi;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (v.pair_rule_shape_b[mid] < sb) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < end && v.pair_rule_shape_b[lo] == sb ? lo : -1;
}
// A pair's margin and gap (m), MuJoCo's: an explicit pair's own (ContactPairDesc), else the
// larger of the two shapes' (ShapeDesc::margin, gap). Global shapes sa < sb.
struct PairMargin {
  Real margin, gap;
};
AXION_HD PairMargin pair_margin(const BatchView& v, int sa, int sb) {
  if (const int rule = world_pair_rule(v, sa, sb);
      rule >= 0 && v.pair_rule_friction[rule] != Model::kPairExcluded)
    return {v.pair_rule_margin[rule], v.pair_rule_gap[rule]};
  const Real ma = v.shape_margin[sa], mb = v.shape_margin[sb];
  const Real ga = v.shape_gap[sa], gb = v.shape_gap[sb];
  return {ma > mb ? ma : mb, ga > gb ? ga : gb};
}

// The distance (m) at which a pair's contacts hold its surfaces, MuJoCo's margin - gap
// (pair_margin). A contact's gap is its shapes' distance less this (its rows push until it is
// zero), and the narrow phase looks that much farther for them.
AXION_HD Real pair_contact_offset(const BatchView& v, int sa, int sb) {
  const PairMargin m = pair_margin(v, sa, sb);
  return m.margin - m.gap;
}

// Whether global shapes sa < sb may collide (Model::MayCollide): a pair rule decides where the
// model set one (a binary search among the lower shape's), else the group/mask filter. An
// explicit pair's friction goes to *friction, -1 elsewhere (the shapes' materials decide).
AXION_HD bool world_shapes_may_collide(const BatchView& v, int sa, int sb, Real* friction) {
  *friction = -1;
  if (const int lo = world_pair_rule(v, sa, sb); lo >= 0) {
    const Real rule = v.pair_rule_friction[lo];
    if (rule == Model::kPairExcluded) return false;
    *friction = rule;
    return true;
  }
  if (v.shape_body[sa] == v.shape_body[sb]) return false;
  if (v.shape_type[sa] == static_cast<int>(ShapeType::kPlane) &&
      v.shape_type[sb] == static_cast<int>(ShapeType::kPlane))
    return false;
  return (v.shape_collision_group[sa] & v.shape_collision_mask[sb]) != 0 &&
         (v.shape_collision_group[sb] & v.shape_collision_mask[sa]) != 0;
}

// Whether shape pair (a0, b0) comes before (a1, b1): the order of candidate pairs and contacts.
AXION_HD bool shape_pair_before(int a0, int b0, int a1, int b1) {
  return a0 < a1 || (a0 == a1 && b0 < b1);
}

// In-place heap sort of positions [0, n) by less(i, j), a strict total order on what the
// positions hold, through swap(i, j): O(n log n) without scratch or recursion on one device
// thread, and the result depends on the keys alone.
template <class Less, class Swap>
AXION_HD void heap_sort_by(int n, Less less, Swap swap) {
  auto sift_down = [&](int root, int size) {
    for (;;) {
      int child = 2 * root + 1;
      if (child >= size) return;
      if (child + 1 < size && less(child, child + 1)) ++child;
      if (!less(root, child)) return;
      swap(root, child);
      root = child;
    }
  };
  for (int root = n / 2 - 1; root >= 0; --root) sift_down(root, n);
  for (int size = n - 1; size > 0; --size) {
    swap(0, size);
    sift_down(0, size);
  }
}

// Heap sort of the values a[0, n) by less(x, y) on the values.
template <class Less>
AXION_HD void heap_sort(int32_t* a, int n, Less less) {
  heap_sort_by(
      n, [&](int i, int j) { return less(a[i], a[j]); },
      [&](int i, int j) {
        const int32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
      });
}

// Per world, broad phase: fills the world's pair slots (pair_shape_a/b, from world_pair_offset
// on) with the pairs whose boxes (shape_aabb) overlap and that may collide, and with the pairs a
// redo of this step marked (pair_missed_shape_a/b, whatever their boxes), sorted by (a, b)
// (what makes the contact set deterministic and lets warm starts match by one walk), and
// returns their count. Sweep and prune: the shapes sorted by their boxes'
// lower bound along the axis their centres spread over most, each tested against those that
// start before it ends. Testing every pair instead costs O(shapes^2) per step: 1000 spheres in
// a box have 500,000 pairs, and that test and its twin after the solve took 40% of a step; and
// a list of every pair the model lets collide took memory by the square of the shapes (40 MB a
// world for 1006 particles). Pairs past the world's capacity are dropped and flagged
// (kWorldPairOverflow). Boxes with a NaN bound overlap nothing (aabb_overlap fails), so they
// are left out; a plane's box (its half-space, kPlaneReach deep) is swept like any other and
// meets every shape that reaches below its surface.
inline constexpr Real kBroadPhaseLargeBox = Real(1e9);
AXION_HD int world_gather_pairs(const BatchView& v, int world) {
  const int s0 = v.world_shape_offset[world], s1 = v.world_shape_offset[world + 1];
  const int p0 = v.world_pair_offset[world], capacity = v.world_pair_offset[world + 1] - p0;
  int32_t* pair_a = v.pair_shape_a + p0;
  int32_t* pair_b = v.pair_shape_b + p0;
  Real* friction = v.pair_friction + p0;
  int32_t* marked = v.pair_marked + p0;
  int count = 0;
  bool overflow = false;
  auto push = [&](int sa, int sb, Real mu, int is_marked) {
    if (count >= capacity) {
      overflow = true;
      return;
    }
    pair_a[count] = sa;
    pair_b[count] = sb;
    friction[count] = mu;
    marked[count] = is_marked;
    ++count;
  };
  const Real* aabb = v.shape_aabb;
  // the axis of largest variance of the bounded boxes' centres (a plane's box reaches
  // kPlaneReach), about the first such centre: one far shape does not decide it, as it would
  // the range
  Real origin[3] = {0, 0, 0}, sum[3] = {0, 0, 0}, square[3] = {0, 0, 0};
  int bounded_count = 0;
  for (int s = s0; s < s1; ++s) {
    Real c[3];
    bool bounded = true;
    for (int a = 0; a < 3; ++a) {
      c[a] = Real(0.5) * (aabb[6 * s + a] + aabb[6 * s + 3 + a]);
      bounded = bounded && aabb[6 * s + 3 + a] - aabb[6 * s + a] < kBroadPhaseLargeBox;
    }
    if (!bounded) continue;
    for (int a = 0; a < 3; ++a) {
      if (bounded_count == 0) origin[a] = c[a];
      const Real d = c[a] - origin[a];
      sum[a] += d;
      square[a] += d * d;
    }
    ++bounded_count;
  }
  int axis = 0;
  Real variance[3];
  for (int a = 0; a < 3; ++a) variance[a] = bounded_count * square[a] - sum[a] * sum[a];
  for (int a = 1; a < 3; ++a)
    if (variance[a] > variance[axis]) axis = a;
  int32_t* order = v.shape_sweep_order + s0;
  int n = 0;
  for (int s = s0; s < s1; ++s)
    if (aabb[6 * s + axis] == aabb[6 * s + axis]) order[n++] = s;
  heap_sort(order, n, [&](int x, int y) {
    const Real kx = aabb[6 * x + axis], ky = aabb[6 * y + axis];
    return kx < ky || (kx == ky && x < y);
  });
  for (int i = 0; i < n && !overflow; ++i) {
    const int si = order[i];
    const Real upper = aabb[6 * si + 3 + axis];
    for (int j = i + 1; j < n; ++j) {
      const int sj = order[j];
      if (!(aabb[6 * sj + axis] <= upper)) break;
      if (!aabb_overlap(aabb + 6 * si, aabb + 6 * sj)) continue;
      const int sa = si < sj ? si : sj, sb = si < sj ? sj : si;
      Real mu;
      if (world_shapes_may_collide(v, sa, sb, &mu)) push(sa, sb, mu, 0);
      if (overflow) break;
    }
  }
  // in (a, b) order: a counting sort by lower shape (an O(1) bucket per pair, where one sort of
  // all the pairs took 40% of a falling pile's step), then each shape's pairs sorted by the
  // upper shape
  auto less = [&](int i, int j) {
    return shape_pair_before(pair_a[i], pair_b[i], pair_a[j], pair_b[j]);
  };
  auto swap = [&](int i, int j) {
    const int32_t a = pair_a[i], b = pair_b[i];
    const Real mu = friction[i];
    pair_a[i] = pair_a[j], pair_b[i] = pair_b[j], friction[i] = friction[j];
    pair_a[j] = a, pair_b[j] = b, friction[j] = mu;
  };
  int32_t* bucket_end = v.shape_pair_end;  // per shape, past its pairs once placed
  int32_t* destination = v.pair_order + p0;
  for (int s = s0; s < s1; ++s) bucket_end[s] = 0;
  for (int k = 0; k < count; ++k) ++bucket_end[pair_a[k]];
  for (int s = s0, total = 0; s < s1; ++s) {
    const int pairs = bucket_end[s];
    bucket_end[s] = total;
    total += pairs;
  }
  for (int k = 0; k < count; ++k) destination[k] = bucket_end[pair_a[k]]++;
  for (int k = 0; k < count; ++k) {
    // follow the cycle through k until its place holds what belongs there
    while (destination[k] != k) {
      const int d = destination[k];
      swap(k, d);
      destination[k] = destination[d];
      destination[d] = d;
    }
  }
  for (int s = s0, begin = 0; s < s1; begin = bucket_end[s], ++s) {
    const int end = bucket_end[s];
    if (end - begin > 1)
      heap_sort_by(
          end - begin, [&](int i, int j) { return pair_b[begin + i] < pair_b[begin + j]; },
          [&](int i, int j) { swap(begin + i, begin + j); });
  }
  // the pairs a redo marked join whatever their boxes say: marked where found, else added
  const int found = count;
  for (int k = 0; k < v.world_missed_count[world]; ++k) {
    const int sa = v.pair_missed_shape_a[p0 + k], sb = v.pair_missed_shape_b[p0 + k];
    int lo = 0, hi = found;
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      if (shape_pair_before(pair_a[mid], pair_b[mid], sa, sb)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo < found && pair_a[lo] == sa && pair_b[lo] == sb) {
      marked[lo] = 1;
    } else {
      Real mu;
      world_shapes_may_collide(v, sa, sb, &mu);
      push(sa, sb, mu, 1);
    }
  }
  if (count > found) {
    auto swap_marked = [&](int i, int j) {
      swap(i, j);
      const int32_t m = marked[i];
      marked[i] = marked[j];
      marked[j] = m;
    };
    heap_sort_by(count, less, swap_marked);
  }
  if (overflow) v.world_flags[world] |= kWorldPairOverflow;
  v.world_pair_count[world] = overflow ? -1 : count;
  return count;
}

// Calls visit(slot) for the world's candidate pairs (world_gather_pairs) in (a, b) order until
// it returns false; slot indexes pair_shape_a/b, pair_friction and pair_marked.
template <class Visit>
AXION_HD void world_for_each_pair(const BatchView& v, int world, Visit visit) {
  const int p0 = v.world_pair_offset[world];
  const int count = world_gather_pairs(v, world);
  for (int k = 0; k < count; ++k)
    if (!visit(p0 + k)) return;
}

// Per world: broad phase (world_gather_pairs), narrow phase on the pairs it found, contacts
// written in pair order (deterministic) up to the
// world's capacity; overflow is flagged, never written past the slots.
AXION_HD void world_collide(const BatchView& v, int world) {
  const WorldParams& p = v.world_params[world];
  const Real h = v.world_step_length[world];
  int slot0 = v.world_contact_offset[world];
  int capacity = v.world_contact_offset[world + 1] - slot0;
  int count = 0;
  bool overflow = false;
  world_for_each_pair(v, world, [&](int pair) {
    int sa = v.pair_shape_a[pair], sb = v.pair_shape_b[pair];
    // A pair a redo marked joins with all its points at q-, and with all its points where the
    // undone attempt ended as well: those hold what the rows from q- missed (a turned limb's
    // contact, a box's corner), while alone, a deep end's manifold (its normal the axis of least
    // penetration) let humanoid100's boxes sink 108-164 mm into each other against 17-50 mm.
    const bool missed = v.pair_marked[pair] != 0;
    const int body_a = v.shape_body[sa], body_b = v.shape_body[sb];
    const Real sweep = v.shape_sweep[sa] + v.shape_sweep[sb];
    const PairMargin pair_margins = pair_margin(v, sa, sb);
    const Real offset = pair_margins.margin - pair_margins.gap;
    // a pair of an adhesion actuator's body keeps all its points within its margin, where the
    // actuator pulls (world_adhesion_pull)
    const Real adhesion_reach =
        v.shape_adhesion[sa] != 0 || v.shape_adhesion[sb] != 0 ? pair_margins.margin : Real(-1);
    Real start_gap = kUnboundedMargin;  // the pair's signed distance at q- (less the offset)
    const int pair_first = count;       // the pair's first contact
    int pair_start_end = count;         // past its contacts from q-
    for (int pass = 0; pass < (missed ? 2 : 1); ++pass) {
      const bool at_end = pass == 1;
      const Real* q = at_end ? v.body_q_end : v.body_q_prev;
      Vec3 pos_a, pos_b;
      Quat quat_a, quat_b;
      shape_world_pose(v, sa, q, &pos_a, &quat_a);
      shape_world_pose(v, sb, q, &pos_b, &quat_b);
      PairPoints pair_points;  // uninitialised: collide_shapes writes the n it returns
      ContactPoint* points = pair_points.point;
      const Real reach = pair_base_margin(v, sa, sb, p) + sweep + (offset > 0 ? offset : Real(0));
      int n = collide_shapes(shape_geom(v, sa), pos_a, quat_a, shape_geom(v, sb), pos_b, quat_b,
                             missed                   ? kUnboundedMargin
                             : adhesion_reach > reach ? adhesion_reach
                                                      : reach,
                             points);
      // gaps measured from where the contacts hold the surfaces
      for (int i = 0; i < n; ++i) points[i].gap -= offset;
      for (int i = 0; i < n && !at_end; ++i)
        start_gap = points[i].gap < start_gap ? points[i].gap : start_gap;
      for (int i = 0; i < n; ++i) {
        // Speculative contacts: a point beyond the margin joins only if the shapes approach
        // fast enough to close the gap within the step, gap + h min(0, v_n) < margin, v_n the
        // rate of the gap at the predicted velocities or with either shape held still (each
        // one's own approach). Two bodies falling together close no gap between them, yet the
        // lower one may be stopped within the step: a column of spheres landing at 0.02 s
        // ended with the upper sphere inside the lower one, two centres at one point (RESULTS.md,
        // "A frictional sphere pile at 0.02 s"). Points that separate or slide stay out; a body
        // at rest adds only the points its step of gravity, g h^2, brings within the margin.
        const bool adhesive = points[i].gap + offset < adhesion_reach;
        if (!missed && !adhesive && sweep > 0 && !(points[i].gap < p.contact_margin)) {
          Vec3 ra = points[i].point_a - body_position(v.body_q_prev, body_a);
          Vec3 rb = points[i].point_b - body_position(v.body_q_prev, body_b);
          Vec6 ua = body_predicted_twist(v, body_a, p), ub = body_predicted_twist(v, body_b, p);
          const Real approach_a = dot(ua.lin + cross(ua.ang, ra), points[i].normal);
          const Real approach_b = -dot(ub.lin + cross(ub.ang, rb), points[i].normal);
          Real rate = approach_a + approach_b;
          rate = approach_a < rate ? approach_a : rate;
          rate = approach_b < rate ? approach_b : rate;
          if (!(points[i].gap + h * rate < p.contact_margin)) continue;
        }
        // Contact points are kept in the bodies' COM frames so the gap can be re-evaluated at
        // q+ inside the Newton loop (position-level contacts).
        Vec3 local_a = body_a < 0 ? points[i].point_a
                                  : rotate_inv(body_rotation(q, body_a),
                                               points[i].point_a - body_position(q, body_a));
        Vec3 local_b = body_b < 0 ? points[i].point_b
                                  : rotate_inv(body_rotation(q, body_b),
                                               points[i].point_b - body_position(q, body_b));
        // an end point on a point from q- (the same material points, the same normal: a
        // sphere pushed into the floor) takes its place, linearised about the end
        int k = -1;
        for (int j = pair_first; at_end && j < pair_start_end && k < 0; ++j) {
          const int c = slot0 + j;
          const Vec3 da = load3(v.contact_local_a + 3 * c) - local_a;
          const Vec3 db = load3(v.contact_local_b + 3 * c) - local_b;
          if (dot(da, da) < kEndPointMatch * kEndPointMatch &&
              dot(db, db) < kEndPointMatch * kEndPointMatch &&
              dot(load3(v.contact_normal + 3 * c), points[i].normal) > Real(0.99))
            k = c;
        }
        if (k < 0) {
          if (count >= capacity) {
            overflow = true;
            break;
          }
          k = slot0 + count++;
        }
        v.contact_body_a[k] = body_a;
        v.contact_body_b[k] = body_b;
        v.contact_shape_a[k] = sa;
        v.contact_shape_b[k] = sb;
        store3(v.contact_local_a + 3 * k, local_a);
        store3(v.contact_local_b + 3 * k, local_b);
        Vec3 n_world = points[i].normal;
        store3(v.contact_normal + 3 * k, n_world);
        Vec3 t1, t2;
        orthonormal_basis(n_world, &t1, &t2);
        store3(v.contact_tangent + 6 * k, t1);
        store3(v.contact_tangent + 6 * k + 3, t2);
        // The body-fixed points' lever arms at q-, which the rows move them by.
        Vec3 ra, rb;
        contact_levers(v, k, &ra, &rb);
        v.contact_gap[k] = points[i].gap;
        v.contact_gap_shift[k] = 0;
        if (at_end) {
          // The gap there less the rows' motion to it, h J u+: the rows reach the end of the
          // step linearised about where the attempt ended. The contact reports the pair's
          // distance at q-.
          const Vec6 ua = body_twist(v.body_u_end, body_a), ub = body_twist(v.body_u_end, body_b);
          const Real gap =
              points[i].gap -
              h * dot(ua.lin + cross(ua.ang, ra) - ub.lin - cross(ub.ang, rb), n_world);
          v.contact_gap[k] = start_gap < kUnboundedMargin ? start_gap : gap;
          v.contact_gap_shift[k] = gap - v.contact_gap[k];
        }
        v.contact_friction[k] = v.pair_friction[pair] >= 0
                                    ? v.pair_friction[pair]
                                    : contact_friction_coefficient(v, sa, sb, p);
        // angular friction: the shapes' or an explicit pair's
        v.contact_torsion[k] = 0;
        v.contact_rolling[k] = 0;
        v.contact_angular_rows[k] = 0;
        if (v.world_contact_angular_rows[world] > 0) {
          if (v.pair_friction[pair] < 0) {
            v.contact_angular_rows[k] = contact_angular_coefficients(
                v, sa, sb, p, &v.contact_torsion[k], &v.contact_rolling[k]);
          } else if (const int rule = world_pair_rule(v, sa, sb); rule >= 0) {
            v.contact_torsion[k] = v.pair_rule_torsion[rule];
            v.contact_rolling[k] = v.pair_rule_rolling[rule];
            v.contact_angular_rows[k] =
                contact_angular_row_count(v.contact_torsion[k], v.contact_rolling[k]);
          }
        }
        Real ea = v.shape_restitution[sa], eb = v.shape_restitution[sb];
        v.contact_restitution[k] = ea > eb ? ea : eb;
        // Relative normal velocity at the start of the step (restitution reference).
        Vec6 ua = body_twist(v.body_u_prev, body_a), ub = body_twist(v.body_u_prev, body_b);
        Vec3 va = ua.lin + cross(ua.ang, ra), vb = ub.lin + cross(ub.ang, rb);
        v.contact_normal_velocity[k] = dot(va - vb, n_world);
      }
      if (overflow) break;
      pair_start_end = count;
    }
    return !overflow;
  });
  v.world_contact_count[world] = count;
  // the angular friction rows of the contacts that take them, each after its contact's three
  int angular = 0;
  for (int k = slot0; k < slot0 + count; ++k) {
    v.contact_angular_index[k] = angular;
    angular += v.contact_angular_rows[k];
  }
  v.world_angular_row_count[world] = angular;
  if (overflow) v.world_flags[world] |= kWorldContactOverflow;
}

/// Per world, once its contacts are found: each adhesion actuator's pull (MuJoCo's adhesion,
/// its body transmission; ActuatorDesc::adhesion_body). Its force F (actuator_effort) is shared
/// by the n contacts in reach: those taken at q- of the body's shapes whose surfaces lie closer
/// than the pair's margin (pair_margin), which world_collide keeps for such pairs (shape_
/// adhesion) whatever its speculative rule. At each, p midway between the surfaces and the
/// normal n from b towards a, F / n pulls a by -F n / n and b by +F n / n at p: wrenches added
/// to body_jt (force, and torque about the centre of mass) beside the other actuators' efforts.
/// MuJoCo's generalized force is -(F / n) sum_i J_i^T n_i, with J_i the two bodies' relative
/// Jacobian at p_i: the same pulls. The contact set is read, not the narrow phase run again: on
/// the device a second narrow phase kept ptxas past 20 minutes inlined into the collision pass,
/// and took 2.7 times as long out of line (16 against 5.9 minutes).
AXION_HD_NOINLINE void world_adhesion_pull(const BatchView& v, int world) {
  const int k0 = v.world_contact_offset[world], k1 = k0 + v.world_contact_count[world];
  for (int act = v.world_actuator_offset[world]; act < v.world_actuator_offset[world + 1]; ++act) {
    const int body = v.actuator_adhesion_body[act];
    if (body < 0) continue;
    const Real force = actuator_effort(v, act);
    if (force == 0) continue;
    // contact k counts: its body's, from q- (an undone attempt's end points carry a shift), and
    // within the pair's margin
    auto in_reach = [&](int k) {
      if (v.contact_body_a[k] != body && v.contact_body_b[k] != body) return false;
      if (v.contact_gap_shift[k] != 0) return false;
      const PairMargin m = pair_margin(v, v.contact_shape_a[k], v.contact_shape_b[k]);
      return v.contact_gap[k] + (m.margin - m.gap) < m.margin;
    };
    int points = 0;
    for (int k = k0; k < k1; ++k) points += in_reach(k) ? 1 : 0;
    if (points == 0) continue;
    const Real share = force / static_cast<Real>(points);
    for (int k = k0; k < k1; ++k) {
      if (!in_reach(k)) continue;
      const int a = v.contact_body_a[k], b = v.contact_body_b[k];
      Vec3 lever_a, lever_b;
      contact_levers(v, k, &lever_a, &lever_b);
      const Vec3 point_a =
          a < 0 ? load3(v.contact_local_a + 3 * k) : body_position(v.body_q_prev, a) + lever_a;
      const Vec3 point_b =
          b < 0 ? load3(v.contact_local_b + 3 * k) : body_position(v.body_q_prev, b) + lever_b;
      const Vec3 at = Real(0.5) * (point_a + point_b);
      const Vec3 f = share * load3(v.contact_normal + 3 * k);
      for (int side = 0; side < 2; ++side) {
        const int on = side == 0 ? a : b;
        if (on < 0) continue;
        const Vec3 pull = side == 0 ? -f : f;
        const Vec3 arm = at - body_position(v.body_q_prev, on);
        store3(v.body_jt + 6 * on, load3(v.body_jt + 6 * on) + pull);
        store3(v.body_jt + 6 * on + 3, load3(v.body_jt + 6 * on + 3) + cross(arm, pull));
      }
    }
  }
}

// Per shape, for world_find_missed_contacts: bounding box at q+ (the solve's end), and in
// shape_sweep how far any of its points moved from q-, |dx| + angle R (R as in the sweep).
AXION_HD void shape_update_end_aabb(const BatchView& v, int shape) {
  Vec3 pos;
  Quat quat;
  shape_world_pose(v, shape, v.body_q, &pos, &quat);
  Vec3 lower, upper;
  shape_aabb(shape_geom(v, shape), pos, quat, &lower, &upper);
  const Real own = v.shape_reach[shape];  // where its contacts hold (pair_contact_offset)
  lower = lower - Vec3{own, own, own};
  upper = upper + Vec3{own, own, own};
  const Real* start = v.shape_aabb + 6 * shape;
  v.shape_end_inside[shape] = start[0] <= lower.x && start[1] <= lower.y && start[2] <= lower.z &&
                              upper.x <= start[3] && upper.y <= start[4] && upper.z <= start[5];
  store3(v.shape_aabb + 6 * shape, lower);
  store3(v.shape_aabb + 6 * shape + 3, upper);
  Real moved = 0;
  const int body = v.shape_body[shape];
  if (body >= 0) {
    const Vec3 com = body_position(v.body_q, body);
    const Vec3 center = Real(0.5) * (lower + upper), half = Real(0.5) * (upper - lower);
    const Real angle = norm(
        quat_log(body_rotation(v.body_q, body) * conjugate(body_rotation(v.body_q_prev, body))));
    moved =
        norm(com - body_position(v.body_q_prev, body)) + angle * (norm(center - com) + norm(half));
  }
  v.shape_sweep[shape] = moved;
}

// The gap contact k's normal row starts from (m): its signed distance at q-, or, taken at an
// undone attempt's end, the gap there less h J u+ there.
AXION_HD Real contact_row_gap(const BatchView& v, int k) {
  return v.contact_gap[k] + v.contact_gap_shift[k];
}

// Per world, after a solve: the pairs deeper than missed_contact_depth at q+ than the step's
// rows held them are marked (pair_missed_shape_a/b), and the step goes back to its start (returns
// true), where world_collide takes all their points at q- and all their points at this attempt's
// end (body_q_end, kept by world_redo_attempt), the latter with the gaps there less h J u+, so
// their rows reach the end of the step linearised about where the attempt ended as well as
// about q-. Two ways a pair ends deep that its rows from q- cannot see:
// - the speculative test judges a gap by the rate it closes at the step's start: within a long
//   step a limb that its joints swing changes that rate and ends inside another (the humanoid
//   at 0.12 s: 34 mm deep between limbs) with none of its points in the set. Taking every point
//   within each pair's sweep instead doubled the contact rows of every step (RESULTS.md); a
//   redo pays only in the steps that need it.
// - points in the set move with their bodies only to first order: a limb turning within the
//   step slides its contact along its surface and turns its normal (seed 1 at 0.12 s: two
//   limbs 35 mm into each other, their rows saying they touched), and a box landing edge first
//   meets the other box with a corner its two edge points do not hold (MuJoCo's humanoid100).
// Taken at the end, the arm of ContactTest.TurningArmEndsOutOfThePostItWasStoppedBy, 49 mm
// deep with its row from q-, ends within a millimetre of the post after one redo, and the boxes
// of humanoid100 (6 seeds x 2 s at 0.005-0.05 s) end at most 4-24 mm deep against 17-156 mm
// with their points from q- alone. Shifting the rows' gaps from q- by the difference instead
// needed a second redo (a secant) for the arm, and pushed humanoid100's boxes apart at the
// wrong points (35 mm deep at a corner their two edge points did not hold, still 36 mm after
// shifts of 35, 73 and 113 mm). A marked pair that ends
// misjudged again, or held apart by more than the bound while its rows push, is taken again at
// the new end where redos are left.
AXION_HD bool world_find_missed_contacts(const BatchView& v, int world) {
  const WorldParams& p = v.world_params[world];
  const Real bound = p.missed_contact_depth;
  const Real h = v.world_step_length[world];
  const int slot0 = v.world_contact_offset[world];
  bool found = false;
  // no unmarked pair passes the sweep test below unless some shape moved by half of it (a
  // world at rest skips the broad phase)
  if (v.world_missed_count[world] == 0) {
    Real moved = 0, thinnest = Real(1e30);
    for (int s = v.world_shape_offset[world]; s < v.world_shape_offset[world + 1]; ++s) {
      moved = v.shape_sweep[s] > moved ? v.shape_sweep[s] : moved;
      const Real t = shape_thickness(v, s);
      thinnest = t < thinnest ? t : thinnest;
    }
    if (!(2 * moved >= margin_for_thickness(thinnest, p) + bound)) return false;
  }
  // the pairs overlapping at q+
  auto visit = [&](int pair) {
    const int sa = v.pair_shape_a[pair], sb = v.pair_shape_b[pair];
    const bool marked = v.pair_marked[pair] != 0;
    // A point farther apart than the margin at q- (every closer one was in the set) sinks
    // deeper than the bound only if the shapes moved by more than both together, and a point
    // of the set is misjudged by more than the bound only if they moved by more
    const Real offset = pair_contact_offset(v, sa, sb);
    const Real reach = offset > 0 ? offset : Real(0);
    if (!marked && v.shape_sweep[sa] + v.shape_sweep[sb] < pair_base_margin(v, sa, sb, p) + bound)
      return true;
    Vec3 pos_a, pos_b;
    Quat quat_a, quat_b;
    shape_world_pose(v, sa, v.body_q, &pos_a, &quat_a);
    shape_world_pose(v, sb, v.body_q, &pos_b, &quat_b);
    PairPoints pair_points;
    ContactPoint* points = pair_points.point;
    // a marked pair's gap counts however far apart it ended (its rows may stop it short)
    int n = collide_shapes(shape_geom(v, sa), pos_a, quat_a, shape_geom(v, sb), pos_b, quat_b,
                           marked ? kUnboundedMargin : reach, points);
    if (n == 0) return true;
    for (int i = 0; i < n; ++i) points[i].gap -= offset;  // (as world_collide's)
    Real deepest = points[0].gap;
    for (int i = 1; i < n; ++i) deepest = points[i].gap < deepest ? points[i].gap : deepest;
    const bool deep = deepest < -bound;
    if (!deep && !marked) return true;
    // the pair's rows' own deepest end gap, c(q-) + h J u+ of its normal rows, and whether any
    // of them pushes with its end gap closed
    Real rows_deepest = kUnboundedMargin;
    bool pushes = false;
    for (int i = 0; i < v.world_contact_count[world]; ++i) {
      const int k = slot0 + i;
      if (v.contact_shape_a[k] != sa || v.contact_shape_b[k] != sb) continue;
      const int row = contact_first_row(v, world, k);
      const Real end_gap = contact_row_gap(v, k) + h * row_velocity(v, row, v.body_u);
      rows_deepest = end_gap < rows_deepest ? end_gap : rows_deepest;
      pushes = pushes || (v.row_lambda[row] > 0 && end_gap < bound);
    }
    const Real error = deepest - rows_deepest;  // < 0: deeper than the rows say
    if (deep ? error < -bound : pushes && error > bound) {
      // marked for the attempts left in this step (already, or in a slot of its own)
      const int missed = v.world_missed_count[world];
      if (!marked && missed < v.world_pair_offset[world + 1] - v.world_pair_offset[world]) {
        v.pair_missed_shape_a[v.world_pair_offset[world] + missed] = sa;
        v.pair_missed_shape_b[v.world_pair_offset[world] + missed] = sb;
        v.world_missed_count[world] = missed + 1;
      } else if (!marked) {
        v.world_flags[world] |= kWorldPairOverflow;
        return true;
      }
      found = true;
    }
    return true;
  };
  // Where every shape's box at q+ lies within its swept box at q- (the usual case: a step ends
  // about where its prediction went), a pair whose boxes overlap at q+ overlapped at q- and is
  // among the attempt's candidates, which are still in the pair slots: those whose boxes
  // overlap now, and the marked ones, are the pairs a broad phase at q+ would find, in the same
  // order. The broad phase then runs once per attempt, not twice.
  bool inside = v.world_pair_count[world] >= 0;
  for (int s = v.world_shape_offset[world]; inside && s < v.world_shape_offset[world + 1]; ++s)
    inside = v.shape_end_inside[s] != 0;
  if (!inside) {
    world_for_each_pair(v, world, visit);
    return found;
  }
  const int p0 = v.world_pair_offset[world];
  for (int pair = p0; pair < p0 + v.world_pair_count[world]; ++pair) {
    const bool overlap = aabb_overlap(v.shape_aabb + 6 * v.pair_shape_a[pair],
                                      v.shape_aabb + 6 * v.pair_shape_b[pair]);
    if ((overlap || v.pair_marked[pair] != 0) && !visit(pair)) break;
  }
  return found;
}

// Per world: lays out the three rows of each live contact after the joint rows, warm-starting
// their impulses from the previous step's contact between the same shapes at (nearly) the same
// point, on a in a's frame or on b in b's (the static world's frame being the world's): resting
// contacts then start Newton at their support force instead of at zero, and a body sliding or
// rolling over the floor keeps its warm start through the point that stays put. Matched on a's
// point alone (the floor's for the floor's contacts, which slides away with the body), a box
// sliding under a changing load started every step cold: 5.0 Newton iterations per step
// against 1.0 (ContactTest.SlidingUnderAChangingLoadFollowsCoulomb).
AXION_HD void world_build_contact_rows(const BatchView& v, int world) {
  // Contact points of one feature move by less than this between steps (m).
  const Real kMatchDistance = Real(0.01);
  int slot0 = v.world_contact_offset[world];
  int prev_count = v.world_prev_contact_count[world];
  // Both steps' contacts are in pair order (world_collide), so each pair's previous contacts
  // are found by one walk through them: comparing every contact with every previous one cost
  // O(contacts^2) per step.
  int cursor = 0;
  for (int i = 0; i < v.world_contact_count[world]; ++i) {
    int k = slot0 + i;
    const Vec3 local_a = load3(v.contact_local_a + 3 * k),
               local_b = load3(v.contact_local_b + 3 * k);
    while (cursor < prev_count && shape_pair_before(v.contact_prev_shape_a[slot0 + cursor],
                                                    v.contact_prev_shape_b[slot0 + cursor],
                                                    v.contact_shape_a[k], v.contact_shape_b[k]))
      ++cursor;
    int match = -1;
    Real best = kMatchDistance * kMatchDistance;
    for (int j = cursor; j < prev_count; ++j) {
      int p = slot0 + j;
      if (v.contact_prev_shape_a[p] != v.contact_shape_a[k] ||
          v.contact_prev_shape_b[p] != v.contact_shape_b[k]) {
        break;
      }
      Vec3 da = load3(v.contact_prev_points + 6 * p) - local_a;
      Vec3 db = load3(v.contact_prev_points + 6 * p + 3) - local_b;
      Real d2 = dot(da, da) < dot(db, db) ? dot(da, da) : dot(db, db);
      if (d2 < best) {
        best = d2;
        match = p;
      }
    }
    for (int j = 0; j < 3; ++j) {
      int row = contact_first_row(v, world, k) + j;
      v.row_kind[row] = kRowContactNormal + j;
      v.row_contact[row] = k;
      v.row_body_a[row] = v.contact_body_a[k];
      v.row_body_b[row] = v.contact_body_b[k];
      v.row_lambda[row] = 0;
    }
    if (match >= 0) {
      // The tangent basis is a function of the normal, so a resting contact keeps its basis
      // and its friction impulses carry over component by component.
      for (int j = 0; j < 3; ++j)
        v.row_lambda[contact_first_row(v, world, k) + j] = v.contact_prev_lambda[6 * match + j];
    }
    // its angular friction rows, after its three (their axes too are functions of
    // the normal)
    for (int j = 0; j < v.contact_angular_rows[k]; ++j) {
      const int row = contact_angular_row(v, world, k) + j;
      v.row_kind[row] = kRowContactTorsion + j;
      v.row_contact[row] = k;
      v.row_body_a[row] = v.contact_body_a[k];
      v.row_body_b[row] = v.contact_body_b[k];
      v.row_lambda[row] = match >= 0 ? v.contact_prev_lambda[6 * match + 3 + j] : Real(0);
    }
  }
}

// Per world, after the step: remembers this step's contacts and their impulses.
AXION_HD void world_store_contacts(const BatchView& v, int world) {
  int slot0 = v.world_contact_offset[world];
  int count = v.world_contact_count[world];
  for (int i = 0; i < count; ++i) {
    int k = slot0 + i;
    v.contact_prev_shape_a[k] = v.contact_shape_a[k];
    v.contact_prev_shape_b[k] = v.contact_shape_b[k];
    store3(v.contact_prev_points + 6 * k, load3(v.contact_local_a + 3 * k));
    store3(v.contact_prev_points + 6 * k + 3, load3(v.contact_local_b + 3 * k));
    // Friction impulses are kept in the normal's canonical tangent basis (the rows' basis may
    // have turned with the slip), which the next step's matching contact starts from.
    const Real* lambda = v.row_lambda + contact_first_row(v, world, k);
    Vec3 f = lambda[1] * load3(v.contact_tangent + 6 * k) +
             lambda[2] * load3(v.contact_tangent + 6 * k + 3);
    Vec3 t1, t2;
    orthonormal_basis(load3(v.contact_normal + 3 * k), &t1, &t2);
    v.contact_prev_lambda[6 * k] = lambda[0];
    v.contact_prev_lambda[6 * k + 1] = dot(f, t1);
    v.contact_prev_lambda[6 * k + 2] = dot(f, t2);
    for (int j = 0; j < 3; ++j) {
      v.contact_prev_lambda[6 * k + 3 + j] =
          j < v.contact_angular_rows[k] ? v.row_lambda[contact_angular_row(v, world, k) + j]
                                        : Real(0);
    }
  }
  v.world_prev_contact_count[world] = count;
}

// c(q-) / h of a position-level contact row: a contact deeper than max_depenetration_speed h
// comes out at that speed.
AXION_HD Real contact_gap_rate(const BatchView& v, int k, const WorldParams& p, Real h) {
  const Real gap_rate = contact_row_gap(v, k) / h;
  return gap_rate < -p.max_depenetration_speed ? -p.max_depenetration_speed : gap_rate;
}

/// Contact normal row (seed 000), n from b to a, lever arms r_a, r_b at q-:
///   J = [ n, r_a x n | -n, -(r_b x n) ]
/// Position level (default): 0 <= lambda_n _|_ c(q+) >= 0, residual phi_FB(lambda_n, s c(q+)/h),
///   where a contact deeper than v_max h (SolverOptions::max_depenetration_speed) asks only
///   c(q+) >= c(q-) + v_max h: J u+ - v_max in place of c(q+) / h,
///   with the gap at the end of the step to first order in the motion of the contact frame,
///   c(q+) = c(q-) + h J u+ (a pair a redo took at an attempt's end: c(q_end) + h J (u+ - u_end),
///   world_find_missed_contacts). The contact points and normal stay fixed within the solve;
///   moving body-fixed points along with the bodies' rotation would add a spurious second-order
///   gap (a rolling sphere would sink into the floor) and a destabilising geometric stiffness,
///   while the linear form keeps the contact rows linear in u, so Newton converges in a few
///   iterations.
/// Velocity level: 0 <= lambda_n _|_ v_n >= 0 with
///   v_n = J u+ + e J u- + Upsilon c(q-)/h   (restitution e, Baumgarte Upsilon),
/// applied once the contact closes within the step; until then v_n = J u+ + c(q-)/h keeps the
/// bodies from passing the surface without bouncing early.
AXION_HD void contact_normal_row(const BatchView& v, int row, const WorldParams& p) {
  int k = v.row_contact[row];
  Vec3 n = load3(v.contact_normal + 3 * k);
  Vec3 lever_a, lever_b;
  contact_levers(v, k, &lever_a, &lever_b);
  store_row_jacobian(v, row, n, cross(lever_a, n), -n, -cross(lever_b, n));
  store_row_levers(v, row, {}, {});  // contacts push: their geometric stiffness destabilises
  Real h = v.world_step_length[v.row_world[row]];
  Real c_velocity;
  if (p.contact_formulation == static_cast<int32_t>(Formulation::kVelocity)) {
    Real gap = contact_row_gap(v, k);
    Real approach = v.contact_normal_velocity[k];  // < 0 when closing
    Real u_row = row_velocity(v, row, v.body_u);
    // Below this closing speed (m/s) restitution is ignored so resting contacts do not jitter.
    const Real kRestitutionThreshold = Real(0.05);
    bool closes = gap + h * approach <= 0;
    if (gap > 0 && !closes) {
      c_velocity = u_row + gap / h;
    } else {
      Real bounce = approach < -kRestitutionThreshold ? v.contact_restitution[k] * approach : 0;
      Real correction = gap < 0 ? p.baumgarte * gap / h : Real(0);
      c_velocity = u_row + bounce + correction;
    }
  } else {
    c_velocity = contact_gap_rate(v, k, p, h) + row_velocity(v, row, v.body_u);
  }
  Real inv_mass = row_inv_effective_mass(v, v.row_body_a[row], load6(v.row_jac_a + 6 * row),
                                         v.row_body_b[row], load6(v.row_jac_b + 6 * row));
  // Compliance alpha (m/N) on the force lambda/h: c + alpha lambda / h, over h: C0 = alpha / h^2.
  store_unilateral_row(v, row, c_velocity, Real(1) / inv_mass, p.fb_epsilon,
                       p.contact_compliance / (h * h));
}

/// Fixed-point friction compliance W(a, b) of the seeds, with a = s |v_t| and
/// b = mu lambda_n - |lambda_f|, and its partial derivatives in (a, b, cone):
///   psi = FB(a, b) = a + b - r,  r = sqrt(a^2 + b^2)
///   W = (a - psi) / (|lambda_f| + psi) = N / D,  N = r - b,  D = cone + a - r.
/// W_a and W_b hold the cone fixed (|lambda_f| moves with b); W_cone = -W / D holds b fixed, as
/// D carries the cone itself. A change of lambda_f then moves W by -W_b d|lambda_f|, and a
/// change of lambda_n by mu (W_b + W_cone) dlambda_n: at fixed |lambda_f| both b and D move.
/// Without W_cone a foot sliding on the edge of its cone converged linearly, b changing sign
/// and falling 4x per iteration. With it, the humanoid under control noise (32 seeds x 5 s)
/// takes 10-15% less time at 0.005-0.12 s. It came in with two globalisations: failed steps
/// halve (SolverOptions::step_halvings; on its own, landing steps at 0.06 s diverged from it and
/// 5 of 32 runs threw a limb), and an attempt whose merit runs away drops it (pipeline.h,
/// kFrictionConeMeritGrowth; RESULTS.md). The corner's pieces (below) leave it out: there
/// W <= 0.04 and W_cone changes W's derivative by as little, and with it a humanoid resting at
/// 0.05 s ended 4 of its last 20 steps at 1.8e-6, above the tolerance.
/// N and r - a are evaluated without cancellation (r - b = a^2 / (r + b) when b > 0). W is
/// capped at kMaxFrictionW (no normal impulse, or |lambda_f| past twice the cone where D
/// changes sign); `smooth` is false there and at a = b = 0, where W has no derivative.
///
/// Near the corner, a and |b| both below kFrictionCornerZone times the cone, psi = min(a, b)
/// instead: W = 0 where b >= a (sticking), W = (a - b) / cone where a > b (sliding; D = cone).
/// Any NCP function gives the same zeros, so the solutions are Coulomb's either way, and the
/// two forms agree on every solution at the zone's edge (sliding: W = a / cone; sticking: 0).
/// A contact on the edge of its cone without slip is a degenerate solution, a = b = 0, where
/// FB's linearisation is not exact: Newton's iterates alternated between just inside and just
/// outside the cone and converged linearly, 0.74 per iteration (RESULTS.md). The pieces of min
/// are linear up to the corner, and Newton lands on it. Away from the corner FB keeps the
/// residual smooth, which the line search needs: min everywhere cycled through contact states
/// (humanoid under control noise, one step 5 iterations round a cycle to the limit). Humanoid
/// under control noise, the same states solved both ways (bench/solver_pairs), seeds 1-16 /
/// 17-32: 5.2% / 5.7% fewer Newton iterations at 0.005 s, 8% / 7% at 0.04 s, fewer steps
/// at the Newton limit; the zone's size (0.005 to 0.3 of the cone) changed that by 1%.
/// Only worlds solved with the tree preconditioner (`corner`), whose friction rows take their
/// exact Newton form: the symmetric form of worlds on the Jacobi diagonal drops the couplings
/// the corner's pieces rely on, and a box pushed at exactly mu m g (a degenerate contact) then
/// ended every step at the Newton limit, against 76 of 200 with FB.
struct FrictionW {
  Real w, dw_da, dw_db, dw_dcone;
  bool smooth;
};
inline constexpr Real kMaxFrictionW = Real(1e8);
inline constexpr Real kFrictionCornerZone = Real(0.02);
AXION_HD FrictionW friction_w(Real a, Real b, Real cone, bool corner) {
  FrictionW f{kMaxFrictionW, 0, 0, 0, false};
  if (!(cone > 0)) return f;  // no normal impulse: no friction
  if (corner && a < kFrictionCornerZone * cone && std::fabs(b) < kFrictionCornerZone * cone) {
    f.smooth = true;
    if (b >= a) {  // the sticking piece: W = 0, flat
      f.w = 0;
      return f;
    }
    f.w = (a - b) / cone;  // the sliding piece
    f.dw_da = Real(1) / cone;
    f.dw_db = Real(-1) / cone;
    return f;  // W_cone = -W / cone left out: see above
  }
  Real r = std::sqrt(a * a + b * b);
  Real numerator = b > 0 ? a * a / (r + b) : r - b;
  Real denominator = cone + a - r;
  if (!(numerator > 0)) {
    f.w = 0;  // no slip inside the cone: stick
    f.smooth = a == 0 && b > 0;
    return f;
  }
  if (!(denominator > Real(1e-12) * (cone + a))) return f;
  f.w = numerator / denominator;
  if (!(f.w < kMaxFrictionW)) {
    f.w = kMaxFrictionW;
    return f;
  }
  // dN/da = a/r, dN/db = -N/r, dD/da = (r - a)/r, dD/db = -b/r.
  Real r_minus_a = a > 0 ? b * b / (r + a) : r;
  f.dw_da = (a / r - f.w * r_minus_a / r) / denominator;
  f.dw_db = (-numerator / r + f.w * b / r) / denominator;
  f.dw_dcone = -f.w / denominator;
  f.smooth = true;
  return f;
}

// Friction row along tangent t, levers r_a, r_b: J = [ t, r_a x t | -t, -(r_b x t) ].
AXION_HD void friction_jacobian(Vec3 t, Vec3 lever_a, Vec3 lever_b, Vec6* ja, Vec6* jb) {
  *ja = {t, cross(lever_a, t)};
  *jb = {-t, -cross(lever_b, t)};
}

/// Friction rows (seed 000): tangents t_1, t_2, J_i = [ t_i, r_a x t_i | -t_i, -(r_b x t_i) ].
/// Maximal dissipation with the isotropic cone |lambda_f| <= mu lambda_n gives
///   R_f = J_f u + (W / s) lambda_f = 0,  C = W / s      (s: tangential effective mass)
/// with W = friction_w(s |v_t|, mu lambda_n - |lambda_f|). Here W is frozen, as in the seeds:
/// this is the form every trial is measured in (the merit and the convergence test), and the
/// Newton matrix when SolverOptions::friction_newton is off. Sticking (a = 0, b > 0) gives
/// W = 0 exactly, so J_f u = 0: no creep.
/// Both rows need both tangents' slip and Jacobians (the slip's norm, the shared effective
/// mass), so they are evaluated together from the contact's first row (`first`) and written
/// where `write` says (kPairedRows: both, else that one row; row_evaluate says which backend
/// does which). Each evaluated alone, the rows took 4.3% of a noisy humanoid's step on the CPU
/// in a profile, 2.1% evaluated together.
AXION_HD void contact_friction_rows(const BatchView& v, int first, const WorldParams& p,
                                    int write) {
  const auto writes = [&](int row) { return write == kPairedRows || write == row; };
  int k = v.row_contact[first];
  int normal_row = first - 1;
  Real mu = v.contact_friction[k];
  for (int row = first; row < first + 2; ++row) {
    if (!writes(row)) continue;
    v.row_coupling[2 * row] = 0;
    v.row_coupling[2 * row + 1] = 0;
  }
  if (!(mu > 0)) {
    for (int row = first; row < first + 2; ++row)
      if (writes(row)) disable_row(v, row);
    return;
  }
  Vec3 lever_a, lever_b;
  contact_levers(v, k, &lever_a, &lever_b);
  Vec3 t[2] = {load3(v.contact_tangent + 6 * k), load3(v.contact_tangent + 6 * k + 3)};
  Real slip[2];
  Real inv_mass_sum = 0;
  const int body_a = v.row_body_a[first], body_b = v.row_body_b[first];
  Vec6 ua = body_twist(v.body_u, body_a), ub = body_twist(v.body_u, body_b);
  for (int i = 0; i < 2; ++i) {
    Vec6 ja, jb;
    friction_jacobian(t[i], lever_a, lever_b, &ja, &jb);
    slip[i] = dot(ja, ua) + dot(jb, ub);
    inv_mass_sum += row_inv_effective_mass(v, body_a, ja, body_b, jb);
    if (!writes(first + i)) continue;
    store_row_jacobian(v, first + i, ja.lin, ja.ang, jb.lin, jb.ang);
    store_row_levers(v, first + i, {}, {});
  }
  // One effective mass for both tangents keeps the cone isotropic (the trace of the tangential
  // block: the same in any tangent basis).
  Real s = Real(2) / inv_mass_sum;
  Real lambda_n = v.row_lambda[normal_row] > 0 ? v.row_lambda[normal_row] : Real(0);
  Real l1 = v.row_lambda[first], l2 = v.row_lambda[first + 1];
  Real lambda_f = std::sqrt(l1 * l1 + l2 * l2);
  Real a = s * std::sqrt(slip[0] * slip[0] + slip[1] * slip[1]);
  Real cone = mu * lambda_n;
  Real w = friction_w(a, cone - lambda_f, cone, world_uses_tree(v, v.row_world[first])).w;
  Real compliance = w / s;
  const Real regularization =
      friction_newton_regularization(v.world_step_length[v.row_world[first]]);
  for (int tangent = 0; tangent < 2; ++tangent) {
    const int row = first + tangent;
    if (!writes(row)) continue;
    v.row_compliance[row] = compliance + regularization / s;  // Newton matrix only
    v.row_residual[row] = slip[tangent] + compliance * v.row_lambda[row];
    // Convergence is measured on (s v_t + W lambda_f) / (s max(1, W)): the slip velocity while
    // sticking, the friction impulse per unit mass in excess of the cone while sliding.
    // Unscaled, a contact carrying no normal impulse (W at its cap) would turn a leftover 1e-7
    // N s into a huge residual. Both this and the merit's |R_f| are the same in any tangent
    // basis.
    v.row_error[row] = v.row_residual[row] / (w > 1 ? w : Real(1));
  }
}

// The presolve's per-row data in the linear solve's scratch, which nothing reads before the
// first Newton iteration writes it: M^-1 J^T of the row's two sides (12 values of row_gcr_p,
// the GCR directions), and its contact's D_nn or D_tt (row_cr_z).
AXION_HD Real* presolve_minv_jt(const BatchView& v, int row) { return v.row_gcr_p + 12 * row; }

// A contact row's impulse changes by dlambda: its bodies' velocities follow, u += M^-1 J^T dlambda.
AXION_HD void row_push_bodies(const BatchView& v, int row, Real dlambda) {
  const Real* minv_jt = presolve_minv_jt(v, row);
  for (int side = 0; side < 2; ++side) {
    const int body = side ? v.row_body_b[row] : v.row_body_a[row];
    if (body < 0) continue;
    for (int i = 0; i < 6; ++i) v.body_u[6 * body + i] += dlambda * minv_jt[6 * side + i];
  }
}

// Whether world w can take world_contact_presolve: contacts alone, at position level.
AXION_HD bool world_may_presolve(const BatchView& v, int w) {
  const WorldParams& p = v.world_params[w];
  return p.contact_presolve_sweeps > 0 && v.world_contact_count[w] > 0 &&
         v.world_joint_row_count[w] == 0 && v.world_angular_row_count[w] == 0 &&
         p.contact_formulation == static_cast<int32_t>(Formulation::kPosition);
}

// The 64-bit colour set of a body's contacts so far (world_contact_presolve), none for the world.
AXION_HD uint64_t body_presolve_colors(const BatchView& v, int body) {
  if (body < 0) return 0;
  return uint64_t(v.body_presolve_colors[2 * body]) |
         (uint64_t(v.body_presolve_colors[2 * body + 1]) << 32);
}
inline constexpr int kPresolveColors = 64;       // the last colour, kPresolveColors, is swept alone
inline constexpr int kPresolveColorStarts = 66;  // world_presolve_color_start's width

// The presolve's setup, on one thread (its pushes share bodies): u = u~ + M^-1 J^T lambda of
// the warm-started impulses; each row's M^-1 J^T and each contact's D_nn and D_tt, fixed over
// the sweeps (presolve_minv_jt); each contact's colour, the lowest not yet on either body, and
// the contacts by colour (row_presolve_order).
AXION_HD void world_contact_presolve_setup(const BatchView& v, int w) {
  const int k0 = v.world_contact_offset[w], k1 = k0 + v.world_contact_count[w];
  for (int b = v.world_body_offset[w]; b < v.world_body_offset[w + 1]; ++b) {
    for (int i = 0; i < 6; ++i) v.body_u[6 * b + i] = v.body_u_tilde[6 * b + i];
    v.body_presolve_colors[2 * b] = v.body_presolve_colors[2 * b + 1] = 0;
  }
  auto inv_effective_mass = [&](int row) {
    return row_inv_effective_mass(v, v.row_body_a[row], load6(v.row_jac_a + 6 * row),
                                  v.row_body_b[row], load6(v.row_jac_b + 6 * row));
  };
  int colors = 0;
  for (int k = k0; k < k1; ++k) {
    const int normal = contact_first_row(v, w, k);
    for (int row = normal; row < normal + 3; ++row) {
      Real* minv_jt = presolve_minv_jt(v, row);
      for (int side = 0; side < 2; ++side) {
        const int body = side ? v.row_body_b[row] : v.row_body_a[row];
        const Vec6 m =
            body_apply_inv_mass(v, body, load6((side ? v.row_jac_b : v.row_jac_a) + 6 * row));
        store6(minv_jt + 6 * side, m);
      }
      row_push_bodies(v, row, v.row_lambda[row]);
    }
    v.row_cr_z[normal] = inv_effective_mass(normal);
    v.row_cr_z[normal + 1] =
        v.contact_friction[k] > 0
            ? Real(0.5) * (inv_effective_mass(normal + 1) + inv_effective_mass(normal + 2))
            : Real(0);
    const int a = v.row_body_a[normal], b = v.row_body_b[normal];
    const uint64_t used = body_presolve_colors(v, a) | body_presolve_colors(v, b);
    int color = 0;
    while (color < kPresolveColors && (used >> color) & 1u) ++color;
    v.row_presolve_color[normal] = color;
    colors = color + 1 > colors ? color + 1 : colors;
    if (color == kPresolveColors) continue;
    for (int side = 0; side < 2; ++side) {
      const int body = side ? b : a;
      if (body >= 0) v.body_presolve_colors[2 * body + color / 32] |= 1u << (color % 32);
    }
  }
  v.world_presolve_colors[w] = colors;
  // counting sort by colour, each colour's contacts in contact order
  int32_t* start = v.world_presolve_color_start + kPresolveColorStarts * w;
  for (int c = 0; c <= colors; ++c) start[c] = 0;
  for (int k = k0; k < k1; ++k) start[v.row_presolve_color[contact_first_row(v, w, k)] + 1] += 1;
  for (int c = 0; c < colors; ++c) start[c + 1] += start[c];
  int32_t* order = v.row_presolve_order + v.world_row_offset[w];
  for (int k = k0; k < k1; ++k) {
    const int c = v.row_presolve_color[contact_first_row(v, w, k)];
    order[start[c]++] = k;
  }
  for (int c = colors; c > 0; --c) start[c] = start[c - 1];  // back to the colours' starts
  start[0] = 0;
}

// One presolve step of contact k (world_contact_presolve): its normal impulse, then its
// friction impulse; returns the larger of the two rows' velocity changes (m/s).
AXION_HD Real contact_presolve_step(const BatchView& v, int w, int k, const WorldParams& p, Real h,
                                    Real normal_compliance) {
  const int normal = contact_first_row(v, w, k);
  const Real d_nn = v.row_cr_z[normal];
  if (!(d_nn > 0)) return 0;
  // The contact's two bodies' velocities stay in registers while its rows move them: read
  // and written through the view's pointers, which may alias, every push was stored and
  // every velocity reloaded (the same sums in the same order, so the same bits; a toppling
  // pile of 64 spheres, where the sweeps take 56% of the step: 3% faster).
  const int a = v.row_body_a[normal], b = v.row_body_b[normal];
  Real ua[6], ub[6];
  for (int i = 0; i < 6; ++i) {
    ua[i] = a >= 0 ? v.body_u[6 * a + i] : Real(0);
    ub[i] = b >= 0 ? v.body_u[6 * b + i] : Real(0);
  }
  // J_r u, and u += M^-1 J_r^T dlambda (row_push_bodies) on the registers: row_push_bodies
  // itself, given the registers as pointers that may be null, kept them on the stack (the
  // pile 2-7% slower)
  auto velocity = [&](int row) {
    Real s = 0;
    if (a >= 0) {
      for (int i = 0; i < 6; ++i) s += v.row_jac_a[6 * row + i] * ua[i];
    }
    if (b >= 0) {
      for (int i = 0; i < 6; ++i) s += v.row_jac_b[6 * row + i] * ub[i];
    }
    return s;
  };
  auto push = [&](int row, Real dlambda) {
    const Real* minv_jt = presolve_minv_jt(v, row);
    if (a >= 0) {
      for (int i = 0; i < 6; ++i) ua[i] += dlambda * minv_jt[i];
    }
    if (b >= 0) {
      for (int i = 0; i < 6; ++i) ub[i] += dlambda * minv_jt[6 + i];
    }
  };
  // normal: Signorini at the step's end, c(q+) / h = c(q-) / h + J_n u
  const Real lambda_n = v.row_lambda[normal];
  const Real c_velocity =
      velocity(normal) + contact_gap_rate(v, k, p, h) + normal_compliance * lambda_n;
  Real next_n = lambda_n - c_velocity / (d_nn + normal_compliance);
  next_n = next_n > 0 ? next_n : Real(0);
  push(normal, next_n - lambda_n);
  v.row_lambda[normal] = next_n;
  Real largest = d_nn * std::fabs(next_n - lambda_n);
  // friction: one step of the tangential impulse against the slip, into the disk
  const int t1 = normal + 1, t2 = normal + 2;
  const Real d_tt = v.row_cr_z[t1];
  if (d_tt > 0) {
    Real l1 = v.row_lambda[t1] - velocity(t1) / d_tt;
    Real l2 = v.row_lambda[t2] - velocity(t2) / d_tt;
    const Real length = std::sqrt(l1 * l1 + l2 * l2), cone = v.contact_friction[k] * next_n;
    if (length > cone) {
      const Real scale = length > 0 ? cone / length : Real(0);
      l1 *= scale;
      l2 *= scale;
    }
    const Real d1 = l1 - v.row_lambda[t1], d2 = l2 - v.row_lambda[t2];
    push(t1, d1);
    push(t2, d2);
    v.row_lambda[t1] = l1;
    v.row_lambda[t2] = l2;
    const Real moved = d_tt * std::sqrt(d1 * d1 + d2 * d2);
    largest = moved > largest ? moved : largest;
  }
  for (int i = 0; i < 6; ++i) {
    if (a >= 0) v.body_u[6 * a + i] = ua[i];
    if (b >= 0) v.body_u[6 * b + i] = ub[i];
  }
  return largest;
}

/// Per world of contacts alone whose attempt takes it (pipeline.h, world_retry_with_presolve),
/// before its Newton solve, rows built at the initial iterate: projected Gauss-Seidel over its
/// contacts (SolverOptions::contact_presolve_sweeps), from the warm-started impulses. The
/// bodies' velocities are kept at u = u~ + M^-1 J^T lambda, exact for free bodies whose rows
/// are all contacts (each row linear in u, seed 000), and each contact in turn takes, with the
/// Delassus diagonal D_nn = J_n M^-1 J_n^T and D_tt the mean of its two tangents':
///   normal:   lambda_n <- max(0, lambda_n - (J_n u + c(q-)/h + C0 lambda_n) / (D_nn + C0))
///   friction: lambda_t <- lambda_t - J_t u / D_tt, then scaled into |lambda_t| <= mu lambda_n
/// Its fixed points are the solutions of the Newton system (Signorini and Coulomb's maximal
/// dissipation: an impulse inside the cone only where J_t u = 0, one on its edge against the
/// slip), and each sweep moves every contact towards its own, so the sweeps get near one where
/// Newton alone cycles: in a pile of spheres whose frictional contacts slide and stick in turn,
/// each Newton step flips some contact between sliding one way, sticking and sliding the other
/// (traced: a friction impulse at -0.05, +0.04, -0.07 N s round a 12-iteration cycle), and the
/// solve ran to the Newton limit at every halving (RESULTS.md). Sweeps end once no impulse
/// moves its row's velocity by newton_tolerance (a world at rest takes one); in a toppling pile
/// they rarely get there (after 1000, the last sweep's largest move is 2e-4 m/s at the median),
/// and Newton finishes. Its hot loop reads each row's M^-1 J^T, set up once (presolve_minv_jt).
/// A sweep goes colour by colour: a colour's contacts share no moving body (coloured greedily in
/// contact order at the start), so their updates are independent and the world's team takes
/// them side by side, colours in order. On one thread, a colour's contacts go in contact order:
/// the same bits. Swept on one lane in contact order, a world's sweeps on the device were some
/// 15x slower than on a CPU core (RESULTS.md, run J). A contact whose bodies hold all 64
/// colours between them goes to a last colour that lane 0 sweeps alone, in order.
AXION_HD void world_contact_presolve(const BatchView& v, Team team, int w) {
  const WorldParams& p = v.world_params[w];
  const Real h = v.world_step_length[w];
  const Real normal_compliance = p.contact_compliance / (h * h);
  if (team.lane == 0) world_contact_presolve_setup(v, w);
  team_sync(team);
  const int colors = v.world_presolve_colors[w];
  const int32_t* start = v.world_presolve_color_start + kPresolveColorStarts * w;
  const int32_t* order = v.row_presolve_order + v.world_row_offset[w];
  for (int sweep = 0; sweep < p.contact_presolve_sweeps; ++sweep) {
    Real largest = 0;  // the sweep's largest velocity change of a row (m/s)
    for (int color = 0; color < colors; ++color) {
      // a colour's contacts side by side; the last, past 64 colours, on lane 0 alone
      const bool alone = color == kPresolveColors;
      if (!alone || team.lane == 0) {
        const int stride = alone ? 1 : team.size;
        for (int j = start[color] + (alone ? 0 : team.lane); j < start[color + 1]; j += stride) {
          const Real moved = contact_presolve_step(v, w, order[j], p, h, normal_compliance);
          largest = moved > largest ? moved : largest;
        }
      }
      team_sync(team);
    }
    largest = team_max(team, largest);
    if (!(largest > p.newton_tolerance)) break;
  }
}

/// Newton form of a contact's two friction rows (SolverOptions::friction_newton), built at the
/// accepted iterate before the linear solve. Frozen W treats a sliding contact as a damper of
/// coefficient cone / |v_t| along its slip, so a slowly sliding contact asks for impulses many
/// times its cone and Newton stalls on W's cap. Here the rows R = v_t + (W / s) lambda_f are
/// linearised exactly, with W = W(a, b), a = s |v_t|, b = mu lambda_n - |lambda_f|:
///   dR/dv_t      = I + W_a lambda_f v^T               (v: unit slip direction)
///   dR/dlambda_f = (W I - W_b lambda_f l^T) / s       (l: unit impulse direction)
///   dR/dlambda_n = mu (W_b + W_cone) lambda_f / s
/// Multiplied by (dR/dv_t)^-1 (Sherman-Morrison; its determinant 1 + W_a lambda_f . v vanishes
/// at a sliding solution, where the slip row turns into lambda_f = -cone v, Coulomb's law) the
/// rows keep the Jacobian J_f of the Schur complement's symmetric part J M^-1 J^T, and their
/// compliance block becomes a full 2 x 3 block over (lambda_n, lambda_1, lambda_2): its
/// diagonal in row_compliance, the rest in row_coupling. The column of lambda_n makes
/// the Newton matrix unsymmetric (Coulomb friction is not associative); dropping it, as a
/// symmetric solver must, left Newton converging linearly on the humanoid's sliding contacts
/// (16 Newton iterations per step under control noise against 6.7 with it, measured with a
/// dense solve). The tangents turn to d (the slip direction; -lambda_f / |lambda_f| when the
/// impulse dominates) and e = n x d, and the impulses (current, accepted, best) turn with them,
/// so J^T lambda and every norm stay as they were. Sticking contacts (W = 0, no derivative) and
/// W at its cap (no normal impulse) keep the frozen form. Only worlds solved with the tree
/// preconditioner take the exact form: a diagonal preconditioner cannot see the coupling, which
/// at a sliding contact outweighs the row's diagonal by orders of magnitude, and the linear
/// solve stalls. Worlds on the Jacobi diagonal keep a symmetric form that drops the coupling
/// and the cross terms between the two rows.
AXION_HD void contact_friction_newton(const BatchView& v, int first, const WorldParams& p) {
  int k = v.row_contact[first];
  int normal_row = first - 1;
  Real mu = v.contact_friction[k];
  if (!(mu > 0)) return;
  Vec3 n = load3(v.contact_normal + 3 * k);
  Vec3 t1 = load3(v.contact_tangent + 6 * k), t2 = load3(v.contact_tangent + 6 * k + 3);
  Vec3 lever_a, lever_b;
  contact_levers(v, k, &lever_a, &lever_b);
  int body_a = v.row_body_a[first], body_b = v.row_body_b[first];
  Vec6 ua = body_twist(v.body_u, body_a), ub = body_twist(v.body_u, body_b);
  // World-frame slip velocity and friction impulse in the tangent plane.
  Vec3 va = ua.lin + cross(ua.ang, lever_a), vb = ub.lin + cross(ub.ang, lever_b);
  Vec3 rel = va - vb;
  // the slip in the tangents' plane, spanned by them: rel - (rel . n) n leaves round-off along
  // n, which sets the direction of a slip that is round-off itself (two bodies without
  // rotation moving along their normal), and a tangent d along n
  Vec3 slip = dot(rel, t1) * t1 + dot(rel, t2) * t2;
  Vec3 impulse = v.row_lambda[first] * t1 + v.row_lambda[first + 1] * t2;
  Real slip_norm = norm(slip), impulse_norm = norm(impulse);
  Real inv_mass_sum = 0;
  for (Vec3 t : {t1, t2}) {
    Vec6 ja, jb;
    friction_jacobian(t, lever_a, lever_b, &ja, &jb);
    inv_mass_sum += row_inv_effective_mass(v, body_a, ja, body_b, jb);
  }
  Real s = Real(2) / inv_mass_sum;
  Real lambda_n = v.row_lambda[normal_row] > 0 ? v.row_lambda[normal_row] : Real(0);
  Real cone = mu * lambda_n;
  Real a = s * slip_norm, b = cone - impulse_norm;
  // Slip direction when slip dominates the cone's excess, else against the impulse.
  Vec3 d = t1;
  if (a > (b < 0 ? -b : b) && slip_norm > 0) {
    d = (Real(1) / slip_norm) * slip;
  } else if (impulse_norm > 0) {
    d = (Real(-1) / impulse_norm) * impulse;
  } else if (slip_norm > 0) {
    d = (Real(1) / slip_norm) * slip;
  }
  Vec3 e = cross(n, d);
  // Turn the impulses of the current, accepted and best iterates into the new basis.
  Real* lambdas[3] = {v.row_lambda, v.row_lambda_accepted, v.row_lambda_best};
  for (Real* l : lambdas) {
    Vec3 f = l[first] * t1 + l[first + 1] * t2;
    l[first] = dot(f, d);
    l[first + 1] = dot(f, e);
  }
  store3(v.contact_tangent + 6 * k, d);
  store3(v.contact_tangent + 6 * k + 3, e);
  // derivatives zero where W is not smooth
  const int world = v.row_world[first];
  const bool tree = world_uses_tree(v, world);
  const Real regularization = friction_newton_regularization(
      v.world_step_length[world], tree && v.world_linear_tail[world] != 0);
  FrictionW fw = friction_w(a, b, cone, tree);
  Vec3 basis[2] = {d, e};
  if (!tree) {
    // Symmetric form for a world on the Jacobi diagonal (see above), the rows' couplings zero:
    // each row divided by its own dR_i/dv_i, and an iterate whose impulse overshoots the cone
    // kept frozen (linearising those too threw the humanoid's limbs 2-3x as often when the
    // coupling was dropped).
    bool inside_cone = b >= 0;
    for (int i = 0; i < 2; ++i) {
      int row = first + i;
      Vec6 ja, jb;
      friction_jacobian(basis[i], lever_a, lever_b, &ja, &jb);
      store_row_jacobian(v, row, ja.lin, ja.ang, jb.lin, jb.ang);
      Real lambda = v.row_lambda[row];
      Real residual = dot(slip, basis[i]) + fw.w / s * lambda;
      Real alpha = 1, beta = fw.w / s;
      if (inside_cone && fw.smooth && impulse_norm > 0) {
        beta = (fw.w - fw.dw_db * lambda * lambda / impulse_norm) / s;
        if (i == 0) alpha = Real(1) + fw.dw_da * lambda;
      }
      // R / alpha magnifies round-off by 1 / alpha: single precision keeps three digits more.
      const Real kMinAlpha = sizeof(Real) >= 8 ? Real(1e-6) : Real(1e-3);
      if (!(alpha > kMinAlpha)) alpha = kMinAlpha;
      v.row_compliance[row] = beta / alpha + regularization / s;
      v.row_residual[row] = residual / alpha;
    }
    return;
  }
  Real lambda[2] = {v.row_lambda[first], v.row_lambda[first + 1]};
  Real slip_dir[2] = {0, 0}, impulse_dir[2] = {0, 0};
  Real residual[2];
  for (int i = 0; i < 2; ++i) {
    Real slip_i = dot(slip, basis[i]);
    if (slip_norm > 0) slip_dir[i] = slip_i / slip_norm;
    if (impulse_norm > 0) impulse_dir[i] = lambda[i] / impulse_norm;
    residual[i] = slip_i + fw.w / s * lambda[i];
  }
  // (dR/dv_t)^-1 = I - W_a lambda_f v^T / det,  det = 1 + W_a lambda_f . v (kept positive).
  // R / det magnifies round-off by 1 / det: single precision keeps three digits more.
  const Real kMinDet = sizeof(Real) >= 8 ? Real(1e-6) : Real(1e-3);
  Real det = Real(1) + fw.dw_da * (lambda[0] * slip_dir[0] + lambda[1] * slip_dir[1]);
  if (!(det > kMinDet)) det = kMinDet;
  Real inv_dv[2][2];
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j)
      inv_dv[i][j] = (i == j ? Real(1) : Real(0)) - fw.dw_da * lambda[i] * slip_dir[j] / det;
  }
  // [dR/dlambda_n | dR/dlambda_f]: columns (normal, friction 1, friction 2); W_cone while the
  // attempt's merit has not run away (see island_friction_cone)
  const Real dw_dcone = v.island_friction_cone[row_island(v, first)] ? fw.dw_dcone : Real(0);
  Real dr[2][3];
  for (int i = 0; i < 2; ++i) {
    dr[i][0] = mu * (fw.dw_db + dw_dcone) * lambda[i] / s;
    for (int j = 0; j < 2; ++j)
      dr[i][1 + j] = ((i == j ? fw.w : Real(0)) - fw.dw_db * lambda[i] * impulse_dir[j]) / s;
  }
  for (int i = 0; i < 2; ++i) {
    int row = first + i;
    Vec6 ja, jb;
    friction_jacobian(basis[i], lever_a, lever_b, &ja, &jb);
    store_row_jacobian(v, row, ja.lin, ja.ang, jb.lin, jb.ang);
    Real block[3];
    for (int c = 0; c < 3; ++c) block[c] = inv_dv[i][0] * dr[0][c] + inv_dv[i][1] * dr[1][c];
    v.row_compliance[row] = block[1 + i] + regularization / s;
    v.row_coupling[2 * row] = block[0];
    v.row_coupling[2 * row + 1] = block[2 - i];
    v.row_residual[row] = inv_dv[i][0] * residual[0] + inv_dv[i][1] * residual[1];
  }
}

/// Angular friction rows (contact dimension 4 and 6), after their contact's three rows:
/// torsion about the normal n, and rolling about the normal's canonical tangents r_1, r_2
/// (orthonormal_basis(n): fixed within the step, while the sliding rows' tangents turn with
/// the slip):
///   J_spin = [ 0, n | 0, -n ],   J_roll_i = [ 0, r_i | 0, -r_i ]
/// Each set is a cone of its own about the contact's normal impulse, by maximal dissipation:
///   |lambda_spin| <= mu_spin lambda_n,   |(lambda_roll_1, lambda_roll_2)| <= mu_roll lambda_n
/// (mu in m: a torque per unit normal force), and takes the sliding rows' form, with the
/// fixed-point compliance W of friction_w over its own slip and impulse:
///   R = J u + (W / s) lambda,   W = W(s |J u|, mu lambda_n - |lambda|)
/// with s the cone's effective inertia (kg m^2). MuJoCo joins the three and the sliding rows
/// into one elliptic cone (or a pyramid); kept apart, a contact both sliding and spinning at
/// its limits transmits each bound at once, at most sqrt(2) times the joint cone's force.
struct AngularCone {
  int first = 0;  // the cone's first row
  int count = 1;  // its rows: 1 (torsion) or 2 (rolling)
  Real mu = 0;    // (m)
};
AXION_HD AngularCone angular_cone(const BatchView& v, int row) {
  AngularCone c;
  const int k = v.row_contact[row], kind = v.row_kind[row];
  if (kind == kRowContactTorsion) {
    c.first = row;
    c.mu = v.contact_torsion[k];
  } else {
    c.first = kind == kRowContactRoll1 ? row : row - 1;
    c.count = 2;
    c.mu = v.contact_rolling[k];
  }
  return c;
}
// The cone's world axes (n, or r_1 and r_2).
AXION_HD void angular_cone_axes(const BatchView& v, int row, const AngularCone& c, Vec3 axes[2]) {
  const Vec3 n = load3(v.contact_normal + 3 * v.row_contact[row]);
  if (c.count == 1) {
    axes[0] = n;
    axes[1] = {};
  } else {
    orthonormal_basis(n, &axes[0], &axes[1]);
  }
}

// The cone's slip (J_i u), impulses and effective inertia s = count / sum J_i M^-1 J_i^T, and
// the contact's normal impulse.
struct AngularConeState {
  Real slip[2] = {0, 0}, lambda[2] = {0, 0};
  Real s = 0, lambda_n = 0;
};
AXION_HD AngularConeState angular_cone_state(const BatchView& v, int row, const AngularCone& c,
                                             const Vec3 axes[2]) {
  AngularConeState st;
  const int body_a = v.row_body_a[row], body_b = v.row_body_b[row];
  const Vec6 ua = body_twist(v.body_u, body_a), ub = body_twist(v.body_u, body_b);
  Real inv_inertia_sum = 0;
  for (int i = 0; i < c.count; ++i) {
    const Vec6 ja = {{}, axes[i]}, jb = {{}, -axes[i]};
    st.slip[i] = dot(ja, ua) + dot(jb, ub);
    st.lambda[i] = v.row_lambda[c.first + i];
    inv_inertia_sum += row_inv_effective_mass(v, body_a, ja, body_b, jb);
  }
  st.s = Real(c.count) / inv_inertia_sum;
  const Real lambda_n = v.row_lambda[contact_first_row(v, v.row_world[row], v.row_contact[row])];
  st.lambda_n = lambda_n > 0 ? lambda_n : Real(0);
  return st;
}

/// An angular friction row in the frozen-W form (see above; contact_friction_rows for the
/// sliding rows'): the form trials are measured in.
AXION_HD void contact_angular_friction_row(const BatchView& v, int row, const WorldParams& p) {
  v.row_coupling[2 * row] = 0;
  v.row_coupling[2 * row + 1] = 0;
  const AngularCone c = angular_cone(v, row);
  if (!(c.mu > 0)) {
    disable_row(v, row);
    return;
  }
  Vec3 axes[2];
  angular_cone_axes(v, row, c, axes);
  const int i = row - c.first;
  store_row_jacobian(v, row, {}, axes[i], {}, -axes[i]);
  store_row_levers(v, row, {}, {});
  const AngularConeState st = angular_cone_state(v, row, c, axes);
  const Real a = st.s * std::sqrt(st.slip[0] * st.slip[0] + st.slip[1] * st.slip[1]);
  const Real impulse = std::sqrt(st.lambda[0] * st.lambda[0] + st.lambda[1] * st.lambda[1]);
  const Real cone = c.mu * st.lambda_n;
  const Real w = friction_w(a, cone - impulse, cone, world_uses_tree(v, v.row_world[row])).w;
  const Real compliance = w / st.s;
  const Real regularization = friction_newton_regularization(v.world_step_length[v.row_world[row]]);
  v.row_compliance[row] = compliance + regularization / st.s;  // Newton matrix only
  v.row_residual[row] = st.slip[i] + compliance * st.lambda[i];
  // (as the sliding rows': the spin while sticking, the impulse per unit inertia past the cone
  // while spinning)
  v.row_error[row] = v.row_residual[row] / (w > 1 ? w : Real(1));
}

/// Newton form of an angular friction cone (SolverOptions::friction_newton), built at its first
/// row: contact_friction_newton's linearisation of R = J u + (W / s) lambda over the cone's
/// one or two rows, in its fixed axes,
///   dR/du_J = I + W_a lambda v^T,  dR/dlambda = (W I - W_b lambda l^T) / s,
///   dR/dlambda_n = mu (W_b + W_cone) lambda / s,
/// multiplied by (dR/du_J)^-1: its diagonal in row_compliance, the column of the contact's
/// normal impulse in row_coupling's first slot and the cone's other row in its second. Worlds
/// on the Jacobi diagonal keep the symmetric form without couplings.
AXION_HD void contact_angular_friction_newton(const BatchView& v, int first, const WorldParams& p) {
  const AngularCone c = angular_cone(v, first);
  if (!(c.mu > 0)) return;
  Vec3 axes[2];
  angular_cone_axes(v, first, c, axes);
  const AngularConeState st = angular_cone_state(v, first, c, axes);
  const Real slip_norm = std::sqrt(st.slip[0] * st.slip[0] + st.slip[1] * st.slip[1]);
  const Real impulse_norm = std::sqrt(st.lambda[0] * st.lambda[0] + st.lambda[1] * st.lambda[1]);
  const Real cone = c.mu * st.lambda_n;
  const Real a = st.s * slip_norm, b = cone - impulse_norm;
  const int world = v.row_world[first];
  const bool tree = world_uses_tree(v, world);
  const Real regularization = friction_newton_regularization(
      v.world_step_length[world], tree && v.world_linear_tail[world] != 0);
  const FrictionW fw = friction_w(a, b, cone, tree);
  Real slip_dir[2] = {0, 0}, impulse_dir[2] = {0, 0}, residual[2] = {0, 0};
  for (int i = 0; i < c.count; ++i) {
    if (slip_norm > 0) slip_dir[i] = st.slip[i] / slip_norm;
    if (impulse_norm > 0) impulse_dir[i] = st.lambda[i] / impulse_norm;
    residual[i] = st.slip[i] + fw.w / st.s * st.lambda[i];
  }
  const Real kMinDet = sizeof(Real) >= 8 ? Real(1e-6) : Real(1e-3);
  if (!tree) {
    // each row divided by its own dR_i/du_i, the couplings dropped (contact_friction_newton)
    const bool inside_cone = b >= 0;
    for (int i = 0; i < c.count; ++i) {
      Real alpha = 1, beta = fw.w / st.s;
      if (inside_cone && fw.smooth && impulse_norm > 0) {
        beta = (fw.w - fw.dw_db * st.lambda[i] * st.lambda[i] / impulse_norm) / st.s;
        alpha = Real(1) + fw.dw_da * st.lambda[i] * slip_dir[i];
      }
      if (!(alpha > kMinDet)) alpha = kMinDet;
      v.row_compliance[c.first + i] = beta / alpha + regularization / st.s;
      v.row_residual[c.first + i] = residual[i] / alpha;
    }
    return;
  }
  // (dR/du_J)^-1 = I - W_a lambda v^T / det,  det = 1 + W_a lambda . v (kept positive)
  Real det = Real(1) + fw.dw_da * (st.lambda[0] * slip_dir[0] + st.lambda[1] * slip_dir[1]);
  if (!(det > kMinDet)) det = kMinDet;
  const Real dw_dcone = v.island_friction_cone[row_island(v, first)] ? fw.dw_dcone : Real(0);
  // [dR/dlambda_n | dR/dlambda]: columns (normal, cone row 1, cone row 2)
  Real dr[2][3] = {{0, 0, 0}, {0, 0, 0}};
  for (int i = 0; i < c.count; ++i) {
    dr[i][0] = c.mu * (fw.dw_db + dw_dcone) * st.lambda[i] / st.s;
    for (int j = 0; j < c.count; ++j)
      dr[i][1 + j] = ((i == j ? fw.w : Real(0)) - fw.dw_db * st.lambda[i] * impulse_dir[j]) / st.s;
  }
  for (int i = 0; i < c.count; ++i) {
    Real inv_dv[2];
    for (int j = 0; j < c.count; ++j)
      inv_dv[j] = (i == j ? Real(1) : Real(0)) - fw.dw_da * st.lambda[i] * slip_dir[j] / det;
    Real block[3] = {0, 0, 0}, r = 0;
    for (int j = 0; j < c.count; ++j) {
      for (int col = 0; col < 3; ++col) block[col] += inv_dv[j] * dr[j][col];
      r += inv_dv[j] * residual[j];
    }
    const int row = c.first + i;
    v.row_compliance[row] = block[1 + i] + regularization / st.s;
    v.row_coupling[2 * row] = block[0];
    v.row_coupling[2 * row + 1] = c.count > 1 ? block[2 - i] : Real(0);
    v.row_residual[row] = r;
  }
}

}  // namespace axion::kernels
