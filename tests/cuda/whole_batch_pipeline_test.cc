// The execution model of the CUDA backend, checked on the CPU so that it holds on every build:
// each pass runs over the whole batch (not a chunk of worlds) and is masked by its world's
// phase. Here every loop of the step runs to its LoopBounds and any() is always true (the CUDA
// backend's loops end on the device once no world needs another trip, never later than the
// bound). Because of the masks this must give bit-identical states to the CPU backend, whose
// loops stop as soon as no world needs another pass, also in a batch whose worlds converge
// after different numbers of iterations or do not step at all. The teams that run per-world
// passes (one thread here) reduce in the order a warp does, and build the per-body row lists
// and tree levels the passes rely on.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "axion/model.h"
#include "axion_scenes.h"
#include "backend.h"
#include "batch_layout.h"
#include "batch_storage.h"
#include "gtest/gtest.h"
#include "pipeline.h"

namespace axion {
namespace {

// The CUDA backend's executor with host loops in place of kernel launches.
struct WholeBatchExec {
  // a call per row, each writing its own, as on the device (row_evaluate)
  static constexpr bool row_pairs_on_one_thread = false;
  // the common row kinds, then the rest, in passes of their own, as on the device
  static constexpr bool row_kinds_split = true;
  int world_count = 0, body_count = 0, joint_count = 0, dof_count = 0, shape_count = 0,
      row_count = 0;

  template <class F>
  void run(int count, F f) const {
    for (int i = 0; i < count; ++i) f(i);
  }
  template <class F>
  void worlds(WorldRange, F f) const {
    run(world_count, f);
  }
  template <class F>
  void teams(WorldRange, F f) const {
    for (int w = 0; w < world_count; ++w) f(w, kernels::Team{});
  }
  template <class F>
  void lean_teams(WorldRange r, F f) const {
    teams(r, f);
  }
  template <class F>
  void narrow_teams(WorldRange r, F f) const {
    teams(r, f);
  }
  template <class F>
  void bodies(WorldRange, F f) const {
    run(body_count, f);
  }
  template <class F>
  void joints(WorldRange, F f) const {
    run(joint_count, f);
  }
  template <class F>
  void dofs(WorldRange, F f) const {
    run(dof_count, f);
  }
  template <class F>
  void shapes(WorldRange, F f) const {
    run(shape_count, f);
  }
  template <class F>
  void rows(WorldRange, F f) const {
    run(row_count, f);
  }
  template <class P>
  bool any(WorldRange, P) const {
    return true;
  }
  // Every loop runs to its bound: the masks alone must keep finished worlds unchanged.
  template <class P, class Body>
  void loop_while(WorldRange, int max_trips, P, Body body, int = 1) const {
    for (int trip = 0; trip < max_trips; ++trip) body();
  }
};

void StepWholeBatch(BatchStorage& host) {
  WholeBatchExec ex;
  ex.world_count = host.world_count();
  ex.body_count = static_cast<int>(host.body_world.size());
  ex.joint_count = static_cast<int>(host.joint_type.size());
  ex.dof_count = static_cast<int>(host.dof_joint.size());
  ex.shape_count = static_cast<int>(host.shape_world.size());
  ex.row_count = static_cast<int>(host.row_world.size());
  BatchView v = host.view();
  pipeline::step(ex, v, WorldRange{0, ex.world_count}, BatchLoopBounds(host));
}

// One step of every world of the batch on `backend`.
absl::Status StepEveryWorld(ExecutionBackend& backend, BatchStorage& batch) {
  for (int w = 0; w < batch.world_count(); ++w) batch.world_step_pending[w] = 1;
  return backend.Step(batch, 1);
}

using scenes::BoxInertia;

// Four boxes stacked on a ground plane, dropped from a little height and offset: contacts,
// friction, many Newton iterations at impact.
ModelDesc Stack() {
  ModelDesc d = scenes::Stack(4);
  for (int i = 0; i < 4; ++i) d.bodies[i].pose.pos = {0.01 * i, 0, 0.12 + 0.21 * i};
  return d;
}

// Five hinged links with a limit and a driven first joint: joint rows, limit and drive rows.
ModelDesc Chain() {
  ModelDesc d;
  for (int i = 0; i < 5; ++i) {
    BodyDesc b;
    b.mass = 1;
    b.inertia = BoxInertia(1, {0.25, 0.02, 0.02});
    b.pose.pos = {0.25 + 0.5 * i, 0, 0};
    d.bodies.push_back(b);
    JointDesc j;
    j.parent = i == 0 ? kWorldBody : i - 1;
    j.child = i;
    j.child_frame.pos = {-0.25, 0, 0};
    j.axis = Vec3{0, 1, 0};
    if (i == 2) {
      j.limited = true;
      j.lower = {-0.3};
      j.upper = {0.3};
    }
    d.joints.push_back(j);
  }
  ActuatorDesc motor;
  motor.type = ActuatorType::kPosition;
  motor.joint = 0;
  motor.kp = 50;
  motor.kv = 5;
  d.actuators.push_back(motor);
  return d;
}

// A free box spinning in the air: converges in few iterations, no rows.
ModelDesc Spinner() {
  ModelDesc d;
  BodyDesc b;
  b.mass = 2;
  b.inertia = BoxInertia(2, {0.1, 0.2, 0.3});
  b.pose.pos = {0, 0, 5};
  b.angular_velocity = {1, 2, 3};
  d.bodies.push_back(b);
  return d;
}

using test_batch::LayoutOf;
using test_batch::MustCompile;

template <class T>
void ExpectBitIdentical(const std::vector<T>& a, const std::vector<T>& b, const char* name,
                        int step) {
  ASSERT_EQ(a.size(), b.size()) << name;
  if (a.empty()) return;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) {
      ADD_FAILURE() << name << "[" << i << "] differs after step " << step;
      return;
    }
  }
}

// Every state array, and the statistics, bit for bit.
void ExpectSameState(const BatchStorage& a, const BatchStorage& b, int step) {
#define AXION_EXPECT_SAME(T, name, width) ExpectBitIdentical(a.name, b.name, #name, step);
  AXION_WORLD_STATE(AXION_EXPECT_SAME)
  AXION_BODY_STATE(AXION_EXPECT_SAME)
  AXION_DOF_STATE(AXION_EXPECT_SAME)
  AXION_QPOS_STATE(AXION_EXPECT_SAME)
  AXION_ACTUATOR_STATE(AXION_EXPECT_SAME)
  AXION_CONTACT_STATE(AXION_EXPECT_SAME)
  AXION_ROW_STATE(AXION_EXPECT_SAME)
#undef AXION_EXPECT_SAME
}

TEST(WholeBatchPipelineTest, BoundedLoopsOverTheWholeBatchMatchTheCpuBackend) {
  std::vector<WorldLayout> layouts;
  // (the islands' world: islands that converge at different iterations beside one that never
  // does, each with its own line search and best iterate; the spheres' world: the broad phase
  // over 25 shapes)
  for (const auto& model :
       {MustCompile(Stack()), MustCompile(Chain()), MustCompile(Spinner()),
        MustCompile(scenes::RobotJoints()), MustCompile(scenes::Islands(true)),
        MustCompile(scenes::SpheresInBox(20)), MustCompile(scenes::RobotJointsWithTendons())}) {
    ASSERT_NE(model, nullptr);
    for (int copy = 0; copy < 2; ++copy) layouts.push_back(LayoutOf(model));
  }
  // One chain world runs velocity-level joints without line search, so the batch's worlds
  // differ in their loop limits too.
  SolverOptions velocity = layouts[2].model->desc().options;
  velocity.joint_formulation = Formulation::kVelocity;
  velocity.line_search = false;
  layouts[3].params = MakeWorldParams(velocity);

  BatchStorage reference = PackBatch(layouts);
  BatchStorage whole = PackBatch(layouts);
  std::unique_ptr<ExecutionBackend> cpu = MakeCpuBackend(1);
  ASSERT_TRUE(cpu->Load(reference).ok());
  for (int a = 0; a < static_cast<int>(reference.actuator_ctrl.size()); ++a) {
    reference.actuator_ctrl[a] = whole.actuator_ctrl[a] = 0.4;
  }

  int converged_steps_differ = 0;
  for (int step = 1; step <= 60; ++step) {
    // every third step the second stack world sits out
    for (int w = 0; w < reference.world_count(); ++w) {
      const int pending = (w == 1 && step % 3 == 0) ? 0 : 1;
      reference.world_step_pending[w] = whole.world_step_pending[w] = pending;
    }
    ASSERT_TRUE(cpu->Step(reference, 1).ok());
    StepWholeBatch(whole);
    ExpectSameState(reference, whole, step);
    if (::testing::Test::HasFailure()) return;
    converged_steps_differ +=
        reference.world_newton_iterations[0] != reference.world_newton_iterations[5];
  }
  // The batch did exercise worlds that finish Newton at different iterations.
  EXPECT_GT(converged_steps_differ, 0);
  // and the world that sat out did not advance on those steps
  EXPECT_DOUBLE_EQ(whole.world_time[1], 40 * layouts[1].params.timestep);
}

// Each world's per-body row lists (world_build_row_adjacency) lie back to back from its first
// row slot's share of row_body_list (two entries per slot), with no gaps, so they never need
// more than the world's share: a joint coupling's four sides take its own slot's and its leader
// slot's share. Counting the leader slot as well once left a gap after each body of a leader
// joint and ran the world's lists two entries per coupling past its share where every row has
// two bodies: into the next world's lists (a race between worlds on the GPU), or past the end
// of the array for the batch's last world (found by tests/fuzz under ASan: a URDF <mimic> in a
// floating robot without collision geometry, so no contact slots left slack).
TEST(WholeBatchPipelineTest, RowListsOfCoupledJointsAreContiguousWithinTheirWorld) {
  auto coupled = MustCompile(scenes::RobotJoints());
  ASSERT_NE(coupled, nullptr);
  ASSERT_FALSE(coupled->desc().couplings.empty());
  std::vector<WorldLayout> layouts = {LayoutOf(coupled), LayoutOf(coupled)};
  BatchStorage batch = PackBatch(layouts);
  std::unique_ptr<ExecutionBackend> cpu = MakeCpuBackend(1);
  ASSERT_TRUE(cpu->Load(batch).ok());
  for (int step = 1; step <= 3; ++step) {
    ASSERT_TRUE(StepEveryWorld(*cpu, batch).ok());
    for (int w = 0; w < batch.world_count(); ++w) {
      const int live = batch.world_joint_row_count[w] + 3 * batch.world_contact_count[w];
      int next = 2 * batch.world_row_offset[w];
      for (int b = batch.world_body_offset[w]; b < batch.world_body_offset[w + 1]; ++b) {
        EXPECT_EQ(batch.body_row_begin[b], next) << "world " << w << " body " << b;
        next = batch.body_row_begin[b] + batch.body_row_count[b];
      }
      EXPECT_LE(next, 2 * (batch.world_row_offset[w] + live)) << "world " << w;
    }
  }
}

// The contact presolve's colours (world_contact_presolve_setup), on a pile whose columns have
// landed: each contact takes the lowest colour that no earlier contact on either of its moving
// bodies has, so a colour's contacts share no moving body and a team sweeps them side by side;
// row_presolve_order lists every contact once, by colour, each colour's in contact order, from
// the colours' starts. Then the sweeps run (a team of one thread, as on the CPU) from that
// order and leave finite impulses, the normal ones not negative.
TEST(WholeBatchPipelineTest, PresolveColoursShareNoMovingBody) {
  auto pile = MustCompile(scenes::ToppledPile(1000));
  ASSERT_NE(pile, nullptr);
  std::vector<WorldLayout> layouts = {LayoutOf(pile), LayoutOf(pile)};
  BatchStorage batch = PackBatch(layouts);
  std::unique_ptr<ExecutionBackend> cpu = MakeCpuBackend(1);
  ASSERT_TRUE(cpu->Load(batch).ok());
  for (int step = 1; step <= 40; ++step) ASSERT_TRUE(StepEveryWorld(*cpu, batch).ok());
  const int w = 1;  // the second world: offsets not zero
  const int k0 = batch.world_contact_offset[w], k1 = k0 + batch.world_contact_count[w];
  ASSERT_GT(k1 - k0, 20);
  BatchView v = batch.view();
  kernels::world_contact_presolve_setup(v, w);
  const int colors = batch.world_presolve_colors[w];
  ASSERT_GT(colors, 1);
  ASSERT_LE(colors, kernels::kPresolveColors + 1);
  const int32_t* start =
      batch.world_presolve_color_start.data() + kernels::kPresolveColorStarts * w;
  const int32_t* order = batch.row_presolve_order.data() + batch.world_row_offset[w];
  EXPECT_EQ(start[0], 0);
  EXPECT_EQ(start[colors], k1 - k0);
  auto color_of = [&](int k) {
    return batch.row_presolve_color[kernels::contact_first_row(v, w, k)];
  };
  std::vector<int> seen(k1 - k0, 0);
  for (int c = 0; c < colors; ++c) {
    for (int j = start[c]; j < start[c + 1]; ++j) {
      const int k = order[j];
      ASSERT_GE(k, k0);
      ASSERT_LT(k, k1);
      seen[k - k0] += 1;
      EXPECT_EQ(color_of(k), c);
      if (j > start[c]) {
        EXPECT_LT(order[j - 1], k) << "colour " << c;
      }
    }
  }
  for (int n : seen) EXPECT_EQ(n, 1);
  // the greedy rule, which also keeps a colour's contacts apart
  auto moving = [&](int k, int side) {
    const int row = kernels::contact_first_row(v, w, k);
    return side ? batch.row_body_b[row] : batch.row_body_a[row];
  };
  for (int k = k0; k < k1; ++k) {
    std::vector<bool> taken(kernels::kPresolveColors, false);
    for (int earlier = k0; earlier < k; ++earlier) {
      bool shares = false;
      for (int s = 0; s < 2; ++s) {
        for (int t = 0; t < 2; ++t)
          shares = shares || (moving(k, s) >= 0 && moving(k, s) == moving(earlier, t));
      }
      if (shares && color_of(earlier) < kernels::kPresolveColors) taken[color_of(earlier)] = true;
    }
    int lowest = 0;
    while (lowest < kernels::kPresolveColors && taken[lowest]) ++lowest;
    EXPECT_EQ(color_of(k), lowest) << "contact " << k;
  }
  kernels::world_contact_presolve(v, kernels::Team{}, w);
  for (int k = k0; k < k1; ++k) {
    const int row = kernels::contact_first_row(v, w, k);
    EXPECT_GE(batch.row_lambda[row], 0) << "contact " << k;
    for (int r = row; r < row + 3; ++r) EXPECT_TRUE(std::isfinite(batch.row_lambda[r]));
  }
}

// team_sum's order is the documented one whatever the team: element i on virtual lane
// (i - begin) % 32, each lane summing in order, lanes combined by the butterfly. A warp
// computes exactly this, so the CPU's sums are the GPU's. Values of mixed magnitude make a
// different order give different bits.
TEST(TeamTest, TeamSumFollowsTheVirtualLanesAndTheButterfly) {
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double unit = static_cast<double>(state >> 11) / 9007199254740992.0;
    return (unit - 0.5) * std::pow(10.0, static_cast<int>(state % 13) - 6);
  };
  for (int count : {0, 1, 7, 31, 32, 33, 64, 150, 1000}) {
    std::vector<Real> x(count + 3);
    for (Real& value : x) value = next();
    const int begin = 3, end = count + 3;
    Real lanes[kernels::kTeamWidth][2] = {};
    for (int i = begin; i < end; ++i) {
      lanes[(i - begin) % kernels::kTeamWidth][0] += x[i];
      lanes[(i - begin) % kernels::kTeamWidth][1] += x[i] * x[i];
    }
    for (int k = kernels::kTeamWidth / 2; k >= 1; k /= 2) {
      for (int l = 0; l < k; ++l) {
        lanes[l][0] += lanes[l + k][0];
        lanes[l][1] += lanes[l + k][1];
      }
    }
    std::vector<int> visits(x.size(), 0);
    Real sums[2];
    kernels::team_sum(kernels::Team{}, begin, end, sums, [&](int i, Real* acc) {
      visits[i] += 1;
      acc[0] += x[i];
      acc[1] += x[i] * x[i];
    });
    EXPECT_EQ(std::memcmp(&sums[0], &lanes[0][0], sizeof(Real)), 0) << count << " elements";
    EXPECT_EQ(std::memcmp(&sums[1], &lanes[0][1], sizeof(Real)), 0) << count << " elements";
    for (int i = 0; i < static_cast<int>(x.size()); ++i)
      EXPECT_EQ(visits[i], i >= begin ? 1 : 0) << "element " << i;
  }
}

// After a step, each body lists the live rows acting on it in row order (the J^T products
// gather from these lists), and the tree's levels put every body above its children.
TEST(TeamTest, BodyRowListsAndTreeLevels) {
  std::vector<WorldLayout> layouts;
  for (const auto& model : {MustCompile(Stack()), MustCompile(Chain())}) {
    ASSERT_NE(model, nullptr);
    layouts.push_back(LayoutOf(model));
  }
  BatchStorage batch = PackBatch(layouts);
  for (int step = 0; step < 40; ++step) {
    for (int w = 0; w < batch.world_count(); ++w) batch.world_step_pending[w] = 1;
    StepWholeBatch(batch);
  }
  BatchView v = batch.view();
  EXPECT_GT(v.world_contact_count[0], 0);  // the stack rests on contacts
  for (int w = 0; w < batch.world_count(); ++w) {
    const int b0 = v.world_body_offset[w], b1 = v.world_body_offset[w + 1];
    const int row0 = v.world_row_offset[w];
    const int row_end = row0 + kernels::world_live_rows(v, w);
    for (int b = b0; b < b1; ++b) {
      std::vector<int> expected, listed;
      for (int row = row0; row < row_end; ++row) {
        if (v.row_body_a[row] == b) expected.push_back(4 * row);
        if (v.row_body_b[row] == b) expected.push_back(4 * row + 1);
      }
      for (int k = 0; k < v.body_row_count[b]; ++k)
        listed.push_back(v.row_body_list[v.body_row_begin[b] + k]);
      EXPECT_EQ(listed, expected) << "world " << w << ", body " << b;
    }
    if (!kernels::world_uses_tree(v, w)) continue;
    // the levels: every body once, in level order, each above the body below its group
    std::vector<int> seen(b1 - b0, 0);
    const int levels = v.world_tree_levels[w];
    ASSERT_GT(levels, 1) << "world " << w;
    for (int level = 0; level < levels; ++level) {
      const int begin = v.body_tree_level_start[b0 + level];
      const int end = level + 1 < levels ? v.body_tree_level_start[b0 + level + 1] : b1;
      EXPECT_LT(begin, end) << "level " << level << " is empty";
      for (int k = begin; k < end; ++k) {
        const int b = v.body_tree_level_order[k];
        seen[b - b0] += 1;
        EXPECT_EQ(v.body_tree_level[b], level);
        const int g = v.body_tree_parent[b];
        const int parent = g >= 0 ? v.row_tree_parent[g] : -1;
        if (parent >= 0) {
          EXPECT_GT(v.body_tree_level[parent], level) << "body " << b;
        }
      }
    }
    for (int i = 0; i < b1 - b0; ++i) EXPECT_EQ(seen[i], 1) << "body " << b0 + i;
  }
}

// The residual's max-norm is NaN when any row's error is, wherever that row sits (a NaN
// residual ends the world's Newton loop as not converged).
TEST(TeamTest, ResidualNormPropagatesNaNFromAnyRow) {
  auto model = MustCompile(Chain());
  ASSERT_NE(model, nullptr);
  BatchStorage batch = PackBatch({LayoutOf(model)});
  batch.world_step_pending[0] = 1;
  StepWholeBatch(batch);
  BatchView v = batch.view();
  const int rows = kernels::world_live_rows(v, 0);
  ASSERT_GT(rows, 3);
  kernels::world_residual(v, kernels::Team{}, 0);
  ASSERT_TRUE(std::isfinite(v.world_residual[0]));
  for (int row : {0, rows / 2, rows - 1}) {
    const Real saved = v.row_error[row];
    v.row_error[row] = std::nan("");
    kernels::world_residual(v, kernels::Team{}, 0);
    EXPECT_TRUE(std::isnan(v.world_residual[0])) << "NaN in row " << row;
    v.row_error[row] = saved;
  }
}

// A box with three legs of two hinged links, dropped on a plane: a tree of three levels whose
// bodies have contact leaves below them, joint limits, and several children on one body.
// `count` of them stand 2 m apart in one world, each an island of its own.
ModelDesc Tripod(int count = 1) {
  ModelDesc d;
  ShapeDesc ground;
  ground.type = ShapeType::kPlane;
  ground.collision_group = 2;
  ground.collision_mask = 1;
  d.shapes.push_back(ground);
  auto add_body = [&](Vec3 pos, Vec3 half) {
    const int body = scenes::AddBox(d, pos, half);
    d.shapes.back().collision_group = 1;  // the links touch the ground, not each other
    d.shapes.back().collision_mask = 2;
    return body;
  };
  for (int tripod = 0; tripod < count; ++tripod) {
    const Real x = Real(2) * tripod;
    const int torso = add_body({x, 0, 0.3}, {0.15, 0.15, 0.05});
    for (int leg = 0; leg < 3; ++leg) {
      const Real angle = Real(2.0943951023931953) * leg;
      const Vec3 dir = {std::cos(angle), std::sin(angle), 0};
      int parent = torso;
      for (int link = 0; link < 2; ++link) {
        const Real reach = Real(0.15) + Real(0.2) * link + Real(0.1);
        const int body = add_body({x + reach * dir.x, reach * dir.y, Real(0.3)}, {0.1, 0.03, 0.03});
        d.bodies[body].pose.quat = {std::cos(angle / 2), 0, 0, std::sin(angle / 2)};
        JointDesc j;
        j.parent = parent;
        j.child = body;
        j.child_frame.pos = {-0.1, 0, 0};
        j.axis = Vec3{0, 1, 0};
        j.limited = link == 1;
        j.lower = {-0.4};
        j.upper = {0.4};
        d.joints.push_back(j);
        parent = body;
      }
    }
  }
  return d;
}

// On the CPU the linear solve walks only the runs of rows outside frozen islands
// (world_build_solve_runs); its vectors are zero on the frozen rows, and each row keeps its
// virtual lane in the sums, so CR and GCR give the same bits as over every live row. Two
// tripods standing in one world, the second one's island frozen, solve one Newton iteration's
// system both ways.
TEST(TeamTest, SolveOverUnfrozenRowsMatchesTheSolveOverAllRows) {
  auto model = MustCompile(Tripod(2));
  ASSERT_NE(model, nullptr);
  BatchStorage settled = PackBatch({LayoutOf(model)});
  for (int step = 0; step < 40; ++step) {
    settled.world_step_pending[0] = 1;
    StepWholeBatch(settled);
  }
  const int world = 0;
  BatchView s = settled.view();
  ASSERT_EQ(s.world_island_count[world], 2);
  const int b0 = s.world_body_offset[world], b1 = s.world_body_offset[world + 1];
  ASSERT_NE(s.body_island[b0 + 1], s.body_island[b1 - 1]);
  const int row0 = s.world_row_offset[world];
  const int live = kernels::world_live_rows(s, world);
  for (bool gcr : {false, true}) {
    std::vector<Real> dlambda[2];
    int iterations[2] = {0, 0};
    for (int use_runs = 0; use_runs < 2; ++use_runs) {
      BatchStorage batch = settled;
      BatchView v = batch.view();
      // the second tripod has converged; the first iterates on
      for (int k = b0; k < b0 + v.world_island_count[world]; ++k) v.island_converged[k] = 0;
      v.island_converged[v.body_island[b1 - 1]] = 1;
      v.world_cr_iterations[world] = 0;
      // a Newton iteration's assemble, preconditioner and solve, as pipeline.h runs them
      for (int row = row0; row < row0 + live; ++row) pipeline::row_take_hold_out(v, row);
      for (int body = b0; body < b1; ++body) pipeline::body_take_inv_mass_g(v, body);
      for (int row = row0; row < row0 + live; ++row) kernels::row_precondition(v, row);
      kernels::world_tree_build_once(v, world);
      kernels::world_tree_factor(v, kernels::Team{}, world);
      kernels::world_loop_precondition(v, kernels::Team{}, world);
      ASSERT_GT(v.world_solve_runs[world], 0);
      if (!use_runs) v.world_solve_runs[world] = 0;  // every live row
      kernels::world_precondition_apply(v, kernels::Team{}, world, v.row_cr_r, v.row_cr_z);
      for (int row = row0; row < row0 + live; ++row) v.row_cr_p[row] = v.row_cr_z[row];
      if (gcr) {
        kernels::world_gcr_solve(v, kernels::Team{}, world);
      } else {
        kernels::world_cr_solve_symmetric(v, kernels::Team{}, world);
      }
      dlambda[use_runs].assign(v.row_dlambda + row0, v.row_dlambda + row0 + live);
      iterations[use_runs] = v.world_cr_iterations[world];
    }
    EXPECT_GT(iterations[0], 0) << (gcr ? "GCR" : "CR");
    EXPECT_EQ(iterations[0], iterations[1]) << (gcr ? "GCR" : "CR");
    int moved = 0, frozen = 0;
    for (int i = 0; i < live; ++i) {
      EXPECT_EQ(std::memcmp(&dlambda[0][i], &dlambda[1][i], sizeof(Real)), 0)
          << (gcr ? "GCR" : "CR") << ", row " << row0 + i;
      if (kernels::row_island(s, row0 + i) == s.body_island[b1 - 1]) {
        ++frozen;
        EXPECT_EQ(dlambda[1][i], 0) << "frozen row " << row0 + i;
      } else {
        moved += dlambda[1][i] != 0;
      }
    }
    EXPECT_GT(frozen, 0);
    EXPECT_GT(moved, 0) << (gcr ? "GCR" : "CR");
  }
}

// Each island keeps its best iterate (world_keep_best), by merit, but an iterate within the
// stopping tolerance always: the merit weighs a friction row by its unscaled residual, which for
// a contact without normal impulse stays large where the row's error is round-off. An island of
// boxes solved at 9e-8 m/s with a higher merit than an early iterate at 0.27 m/s kept that
// one, and its world's best residual, the largest of its islands', then stopped the Newton
// solve of its other island after halving_iterations (humanoid100.xml under control noise: 147
// of 2000 steps ended unconverged against 34). Two tripods, two islands, after some steps.
TEST(TeamTest, SolvedIslandKeepsItsIterateAsBestWhateverItsMerit) {
  auto model = MustCompile(Tripod(2));
  ASSERT_NE(model, nullptr);
  BatchStorage batch = PackBatch({LayoutOf(model)});
  for (int step = 0; step < 5; ++step) {
    batch.world_step_pending[0] = 1;
    StepWholeBatch(batch);
  }
  const int world = 0;
  BatchView v = batch.view();
  ASSERT_EQ(v.world_island_count[world], 2);
  const int b0 = v.world_body_offset[world];
  const int solved = b0, unsolved = b0 + 1;
  const Real tolerance = v.world_params[world].newton_tolerance;
  v.world_newton_attempt[world] = 3;  // before the Newton tail: newton_tolerance stops
  // the solved island: its iterate within the tolerance, its merit above the best's
  v.island_residual_best[solved] = Real(0.27);
  v.island_merit_best[solved] = Real(2.71);
  v.island_residual[solved] = Real(0.09) * tolerance;
  v.island_merit[solved] = Real(3.02);
  // the other island: neither iterate solved, the current one's merit above the best's
  v.island_residual_best[unsolved] = Real(0.02);
  v.island_merit_best[unsolved] = Real(1);
  v.island_residual[unsolved] = Real(0.01);
  v.island_merit[unsolved] = Real(1.5);
  kernels::world_keep_best(v, kernels::Team{}, world, false);
  EXPECT_EQ(v.island_residual_best[solved], Real(0.09) * tolerance);
  EXPECT_EQ(v.island_merit_best[solved], Real(3.02));
  EXPECT_EQ(v.island_residual_best[unsolved], Real(0.02));  // kept by merit, as before
  EXPECT_EQ(v.island_merit_best[unsolved], Real(1));
  EXPECT_EQ(v.world_residual_best[world], Real(0.02));
  // a solved best stays over an unsolved iterate of lower merit
  v.island_residual[solved] = Real(0.1);
  v.island_merit[solved] = Real(0.5);
  kernels::world_keep_best(v, kernels::Team{}, world, false);
  EXPECT_EQ(v.island_residual_best[solved], Real(0.09) * tolerance);
  // two solved iterates: the lower merit
  v.island_residual[solved] = Real(0.5) * tolerance;
  v.island_merit[solved] = Real(3);
  kernels::world_keep_best(v, kernels::Team{}, world, false);
  EXPECT_EQ(v.island_residual_best[solved], Real(0.5) * tolerance);
}

// Rows whose diagonal entry of A is their compliance but for kTreeInactive (limits away from
// their stop, a frictionless contact's friction rows) are held out of the linear solve
// (row_hold_out): each solved on its own, its force folded into the bodies' right-hand side.
// One Newton iteration's system is solved with those rows held out and with every row in the
// solve, both to a tolerance far below the approximation's: the tripod falling (no contacts, its
// lower legs' limits away from their stop), whose steps then agree to kTreeInactive's order, and
// standing on a frictionless floor with a disturbed dynamics residual g (a settled state's own
// is round-off). Standing, its contacts' impulses are redundant (four points per link) and the
// solve ends short of its tolerance, so there each step's residual in every row's Newton
// equation, held-out rows' included, is compared instead.
TEST(TeamTest, HeldOutRowsGiveTheStepOfTheWholeSolve) {
  for (bool standing : {false, true}) {
    const char* scene = standing ? "standing, frictionless" : "falling";
    ModelDesc desc = Tripod(1);
    if (standing) {
      for (ShapeDesc& shape : desc.shapes) shape.material.friction = 0;
    }
    auto model = MustCompile(desc);
    ASSERT_NE(model, nullptr);
    BatchStorage settled = PackBatch({LayoutOf(model)});
    for (int step = 0; step < (standing ? 40 : 2); ++step) {
      settled.world_step_pending[0] = 1;
      StepWholeBatch(settled);
    }
    const int world = 0;
    settled.world_params[world].cr_tolerance = Real(1e-13);
    BatchView s = settled.view();
    ASSERT_EQ(s.world_contact_count[world] > 0, standing) << scene;
    const int b0 = s.world_body_offset[world], b1 = s.world_body_offset[world + 1];
    const int row0 = s.world_row_offset[world];
    const int live = kernels::world_live_rows(s, world);
    if (standing) {
      for (int k = 6 * b0; k < 6 * b1; ++k) s.body_g[k] += Real(1e-3) * std::sin(Real(k));
    } else {
      // the limits leaving their stop with an impulse still on them, which their held-out step
      // takes off and the other rows must see go: their rows and g evaluated again
      for (int row = row0; row < row0 + live; ++row) {
        const int kind = s.row_kind[row];
        if (kind != kRowLimitLower && kind != kRowLimitUpper) continue;
        s.row_lambda[row] = Real(1e-3);
        kernels::row_evaluate(s, row);
      }
      kernels::world_apply_jt(s, kernels::Team{}, world, s.row_lambda, s.body_jt);
      for (int body = b0; body < b1; ++body) kernels::body_dynamics_residual(s, body);
    }
    std::vector<Real> dlambda[2], du[2];
    int held[2] = {0, 0};
    Real worst[2] = {0, 0};
    for (int hold = 0; hold < 2; ++hold) {
      BatchStorage batch = settled;
      BatchView v = batch.view();
      for (int k = b0; k < b0 + v.world_island_count[world]; ++k) v.island_converged[k] = 0;
      // a Newton iteration's solve as pipeline.h runs it, or with no row held out
      for (int row = row0; row < row0 + live; ++row) {
        pipeline::row_take_hold_out(v, row);
        if (!hold) {
          v.row_held_out[row] = 0;
          v.row_cr_r[row] = 0;
        }
        held[hold] += v.row_held_out[row];
      }
      for (int body = b0; body < b1; ++body) pipeline::body_take_inv_mass_g(v, body);
      for (int row = row0; row < row0 + live; ++row) kernels::row_precondition(v, row);
      kernels::world_tree_build_once(v, world);
      kernels::world_tree_factor(v, kernels::Team{}, world);
      kernels::world_loop_precondition(v, kernels::Team{}, world);
      kernels::world_cr_solve(v, kernels::Team{}, world);
      kernels::world_apply_jt(v, kernels::Team{}, world, v.row_dlambda, v.body_jt);
      for (int body = b0; body < b1; ++body) kernels::body_recover_du(v, body);
      // every row's Newton equation J du + C dlambda + h = 0, held-out rows' included, as an
      // impulse (times the Jacobi diagonal)
      for (int row = row0; row < row0 + live; ++row) {
        const Real r = kernels::row_velocity(v, row, v.body_du) +
                       kernels::row_compliance_product(v, row, v.row_dlambda) + v.row_residual[row];
        worst[hold] = std::fmax(worst[hold], std::fabs(r * v.row_precond[row]));
      }
      dlambda[hold].assign(v.row_dlambda + row0, v.row_dlambda + row0 + live);
      du[hold].assign(v.body_du + 6 * b0, v.body_du + 6 * b1);
    }
    EXPECT_EQ(held[0], 0) << scene;
    // the lower legs' limits (three of six at least), and standing each contact's friction rows
    EXPECT_GE(held[1], standing ? 2 * s.world_contact_count[world] : 3) << scene;
    const auto largest = [](const std::vector<Real>& x) {
      Real m = 0;
      for (Real e : x) m = std::fmax(m, std::fabs(e));
      return m;
    };
    ASSERT_GT(largest(du[0]), 0) << scene;
    ASSERT_GT(largest(dlambda[0]), 0) << scene;
    // the held-out step solves the whole Newton system as well as the whole solve does
    EXPECT_LE(worst[1], Real(1.5) * worst[0] + Real(1e-9) * largest(dlambda[0])) << scene;
    if (standing) continue;
    for (size_t i = 0; i < du[0].size(); ++i)
      EXPECT_NEAR(du[1][i], du[0][i], 1e-6 * largest(du[0])) << scene << ", coordinate " << i;
    for (int i = 0; i < live; ++i) {
      EXPECT_NEAR(dlambda[1][i], dlambda[0][i], 1e-6 * largest(dlambda[0]))
          << scene << ", row " << row0 + i << " kind " << s.row_kind[row0 + i];
    }
  }
}

}  // namespace
}  // namespace axion
