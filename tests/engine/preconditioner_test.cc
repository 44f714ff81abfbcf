// The Conjugate Residual preconditioners (engine/src/kernels_tree.h): the spanning-tree
// preconditioner is exact where joints and contacts form a tree, and both preconditioners solve
// the same Newton system, so they give the same trajectories.
#include <cmath>
#include <cstdio>

#include "scenes.h"

namespace axion {
namespace {

using test::ExpectHealthy;
using test::MustCompile;
using test::MustCreateSimulator;
using test::MustCreateWorld;
using test::MustStep;

ModelDesc WithPreconditioner(ModelDesc d, Preconditioner p) {
  d.options.preconditioner = p;
  return d;
}

struct RunStats {
  long newton = 0, cr = 0;
  std::vector<Real> pose;  // final body poses
};

RunStats Simulate(const ModelDesc& d, int steps) {
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(d));
  RunStats out;
  for (int s = 0; s < steps; ++s) {
    MustStep(*sim, w);
    ExpectHealthy(*sim, w);
    if (::testing::Test::HasFailure()) break;
    WorldStats st = *sim->GetStats(w);
    out.newton += st.newton_iterations;
    out.cr += st.cr_iterations;
  }
  out.pose = sim->GetBodyState(w)->pose;
  return out;
}

Real MaxPoseDifference(const RunStats& a, const RunStats& b) {
  Real diff = 0;
  for (size_t i = 0; i < a.pose.size(); ++i)
    diff = std::max(diff, std::fabs(a.pose[i] - b.pose[i]));
  return diff;
}

// Runs `d` on the tree preconditioner and on the Jacobi diagonal, and prints both runs'
// iteration counts.
struct TreeAndJacobi {
  RunStats tree, jacobi;
};
TreeAndJacobi SimulateBoth(const char* scene, const ModelDesc& d, int steps) {
  TreeAndJacobi runs{Simulate(WithPreconditioner(d, Preconditioner::kTree), steps),
                     Simulate(WithPreconditioner(d, Preconditioner::kJacobi), steps)};
  std::printf("%s, %d steps: tree %ld Newton / %ld CR, Jacobi %ld Newton / %ld CR\n", scene, steps,
              runs.tree.newton, runs.tree.cr, runs.jacobi.newton, runs.jacobi.cr);
  return runs;
}

// Runs `d` with both preconditioners and expects the tree to be exact on it (one CR iteration
// per Newton iteration, where the diagonal needs more than ten) and both to reach the same
// poses. Returns the tree's run.
RunStats ExpectTreeExact(const char* scene, const ModelDesc& d, int steps, Real pose_tolerance) {
  auto [tree, jacobi] = SimulateBoth(scene, d, steps);
  EXPECT_GT(tree.newton, 0);
  EXPECT_EQ(tree.cr, tree.newton);
  EXPECT_GT(jacobi.cr, 10 * jacobi.newton);
  EXPECT_LT(MaxPoseDifference(tree, jacobi), pose_tolerance);
  return tree;
}

// A 30-link chain hanging from the world is a tree: the preconditioner inverts the Schur
// complement exactly, so CR stops after one iteration in every Newton iteration, where the
// Jacobi diagonal needs dozens along a chain.
TEST(PreconditionerTest, TreeIsExactOnAChain) {
  ModelDesc d = scenes::Chain(30);
  d.options.timestep = 0.01;
  ExpectTreeExact("30-link chain", d, 100, 1e-6);
}

// A box landing flat and sliding on the ground: its four corners' contacts are one leaf of
// twelve rows below it, whose block (compliance, and sliding friction's coupling within each
// contact) is eliminated contact by contact (kernels_tree.h, tree_eliminate_leaf_contact). The
// tree is exact there: one CR (or GCR) iteration per Newton iteration, sliding or at rest.
TEST(PreconditionerTest, ALeafOfFourContactsIsSolvedExactly) {
  ModelDesc d = scenes::Stack(1);
  d.bodies[0].pose.pos.z = 0.15;
  d.bodies[0].linear_velocity = {1, 0.5, 0};
  d.shapes[1].material.friction = 0.3;
  auto [tree, jacobi] = SimulateBoth("box landing and sliding", d, 150);
  EXPECT_GT(tree.newton, 0);
  EXPECT_EQ(tree.cr, tree.newton);
  // (worlds on the diagonal keep friction's symmetric form: 2e-5 m apart after the slide)
  EXPECT_LT(MaxPoseDifference(tree, jacobi), 1e-4);
  EXPECT_NEAR(tree.pose[2], 0.1, 1e-3);  // resting on its face
  EXPECT_GT(tree.pose[0], 0.05);         // after sliding
}

// Worlds of contacts only are factored too, their contact groups hanging from the bodies. A
// stack of five boxes dropped onto each other reaches the same poses with both preconditioners
// and fewer CR iterations on the tree; a pile of 80 spheres in a box settles on the tree with
// few steps at the Newton limit (4-32 of 700 as the settling path changes; on the Jacobi
// diagonal, with friction's symmetric form, 93). Once settled (the last 300 steps) a step may
// still end a hair above the tolerance: the pile's redundant rigid contacts make its impulses
// non-unique, and which of its chaotic settling paths it takes decides how often. Moving one
// sphere by 1e-9 m picks another path: of ten such paths, one of the code before the loop
// factor (kernels_solver.h) ended 53 of its last 300 steps at up to 4.9e-6 m/s, the nine others
// none, and the loop factor's ten gave 20, 1 and eight times 0. So four paths are run, each
// must settle with its late residuals within 10x the tolerance, and three of them with at
// most 3 late steps at the limit.
struct PileRun {
  int at_limit = 0, at_limit_late = 0;
  Real worst_late = 0, fastest = 0;
};
PileRun SettlePile(const ModelDesc& pile, int steps) {
  PileRun run;
  auto sim = MustCreateSimulator();
  WorldId w = MustCreateWorld(*sim, MustCompile(pile));
  for (int s = 0; s < steps; ++s) {
    MustStep(*sim, w);
    const uint32_t flags = sim->GetStats(w)->flags;
    EXPECT_EQ(flags & kWorldNonFinite, 0u) << "step " << s;
    if (flags & kWorldNonFinite) break;
    const bool limit = (flags & kWorldNotConverged) != 0;
    run.at_limit += limit;
    run.at_limit_late += limit && s >= steps - 300;
    if (s >= steps - 300) run.worst_late = std::max(run.worst_late, sim->GetStats(w)->residual);
  }
  std::vector<Real> velocity = sim->GetBodyState(w)->velocity;
  for (size_t i = 0; i < velocity.size(); i += 6)
    run.fastest = std::max(run.fastest, std::hypot(velocity[i], velocity[i + 1], velocity[i + 2]));
  return run;
}

TEST(PreconditionerTest, WorldsOfContactsOnlyFactorTheTree) {
  ModelDesc d = scenes::Stack(5);
  for (size_t i = 0; i < d.bodies.size(); ++i) d.bodies[i].pose.pos.z += Real(0.05) * (i + 1);
  auto [tree, jacobi] = SimulateBoth("5-box stack dropped", d, 150);
  EXPECT_GT(tree.newton, 0);
  EXPECT_LT(tree.cr, jacobi.cr);
  EXPECT_LT(MaxPoseDifference(tree, jacobi), 1e-5);

  const int steps = 700, paths = 4;
  int quiet_paths = 0;
  for (int path = 0; path < paths; ++path) {
    ModelDesc pile = WithPreconditioner(scenes::SpheresInBox(80), Preconditioner::kTree);
    pile.bodies[3].pose.pos.x += Real(1e-9) * path;
    const PileRun run = SettlePile(pile, steps);
    std::printf(
        "80 spheres in a box on the tree, path %d: %d of %d steps at the Newton limit (%d of the "
        "last 300, worst residual %.3g m/s), fastest sphere %.3g m/s\n",
        path, run.at_limit, steps, run.at_limit_late, run.worst_late, run.fastest);
    EXPECT_LT(run.at_limit, 40);  // 4-26 measured; 93 on the Jacobi diagonal
    EXPECT_LT(run.worst_late, 10 * pile.options.newton_tolerance);
    EXPECT_LT(run.fastest, 1e-4);  // at rest
    quiet_paths += run.at_limit_late <= 3;
  }
  EXPECT_GE(quiet_paths, paths - 1);
}

// A free 12-link chain of alternating heavy and light capsules dropped flat onto the ground:
// the joints form a tree and every link's contacts with the floor are leaves below their link
// (the floor is not a node of the tree, so they close no loop). The tree then covers every row
// and CR stops after one iteration per Newton iteration; both preconditioners reach the same
// states. (The diagonal needs 1688 CR iterations for 27 Newton ones: the contacts' smoothing,
// a fixed impulse, is a large velocity on the 0.05 kg links. Smoothing by a speed on every row
// took 21 for 15 here but was too sharp elsewhere; see kernels_common.h.)
TEST(PreconditionerTest, ArticulatedBodyOnTheGroundMatchesJacobi) {
  ModelDesc d = scenes::Chain(12);
  d.joints.erase(d.joints.begin());  // free: no joint to the world
  ShapeDesc ground;
  ground.type = ShapeType::kPlane;
  ground.material.friction = 0;
  d.shapes.push_back(ground);
  for (size_t i = 0; i < d.bodies.size(); ++i) {
    Real mass = i % 2 == 0 ? Real(5) : Real(0.05);
    d.bodies[i].mass = mass;
    d.bodies[i].inertia = scenes::BoxInertia(mass, {0.25, 0.02, 0.02});
    d.bodies[i].pose.pos.z = 0.03;
    ShapeDesc link;
    link.body = static_cast<int>(i);
    link.type = ShapeType::kCapsule;  // along x: two contact points on the ground
    link.size = {0.02, 0.22, 0};
    link.pose.quat = quat_from_axis_angle({0, 1, 0}, Real(1.5707963267948966));
    link.material.friction = 0;  // the friction fixed point is not what is compared here
    d.shapes.push_back(link);
  }
  auto [tree, jacobi] = SimulateBoth("12-link chain dropped flat", d, 100);
  EXPECT_GT(tree.newton, 0);
  EXPECT_EQ(tree.cr, tree.newton);
  EXPECT_GE(jacobi.cr, tree.cr);
  EXPECT_LT(MaxPoseDifference(tree, jacobi), 1e-5);
  for (size_t i = 0; i < d.bodies.size(); ++i) EXPECT_NEAR(tree.pose[7 * i + 2], 0.02, 1e-3);
}

// Two boxes side by side with a plank across them: the three contact groups (box-box, and the
// plank on each box) form a cycle, so the last closes a loop, four frictional contact points
// whose twelve rows the loop factor eliminates on top of the tree. The pile settles to the same
// poses on both preconditioners, the tree's solves taking about one CR iteration each (14
// Newton / 15 CR), and on the tree alone (SolverOptions::loop_rows = 0: 163 CR).
TEST(PreconditionerTest, FrictionalContactLoopIsEliminated) {
  ModelDesc d;
  ShapeDesc ground;
  ground.type = ShapeType::kPlane;
  d.shapes.push_back(ground);
  scenes::AddBox(d, {-0.1, 0, 0.1}, {0.1, 0.1, 0.1});
  scenes::AddBox(d, {0.1, 0, 0.1}, {0.1, 0.1, 0.1});
  scenes::AddBox(d, {0, 0, 0.25}, {0.2, 0.1, 0.05}, 2);
  auto [tree, jacobi] = SimulateBoth("plank on two boxes", d, 100);
  EXPECT_GT(tree.newton, 0);
  EXPECT_LT(tree.cr, jacobi.cr);
  EXPECT_LE(tree.cr, 2 * tree.newton);
  EXPECT_LT(MaxPoseDifference(tree, jacobi), 1e-5);
  EXPECT_NEAR(tree.pose[7 * 2 + 2], 0.25, 1e-3);  // the plank rests on the boxes
  ModelDesc tree_alone = d;
  tree_alone.options.loop_rows = 0;
  RunStats alone = Simulate(tree_alone, 100);
  EXPECT_GT(alone.cr, 4 * tree.cr);
  EXPECT_LT(MaxPoseDifference(tree, alone), 1e-5);
}

// A parallelogram four-bar linkage hanging from two pivots: the second pivot closes a loop
// through the world, so its joint stays off the tree while the other three are factored, and the
// loop factor eliminates it on top. Its planar loop is also redundant in 3D (five rows per
// hinge): the redundant rows keep their diagonal.
TEST(PreconditionerTest, ClosedLoopLinkageMatchesJacobi) {
  ModelDesc d;
  auto add_link = [&](Vec3 com, Vec3 half) {
    BodyDesc b;
    b.mass = 1;
    b.inertia = scenes::BoxInertia(1, half);
    b.pose.pos = com;
    d.bodies.push_back(b);
  };
  add_link({0, 0, -0.25}, {0.02, 0.02, 0.25});  // crank, pivot A = (0, 0, 0)
  add_link({0.5, 0, -0.5}, {0.5, 0.02, 0.02});  // coupler, B = (0, 0, -0.5) to C = (1, 0, -0.5)
  add_link({1, 0, -0.25}, {0.02, 0.02, 0.25});  // rocker, pivot D = (1, 0, 0)
  d.bodies[0].angular_velocity = {0, 2, 0};
  d.bodies[0].linear_velocity = {-0.5, 0, 0};
  d.bodies[1].linear_velocity = {-1, 0, 0};
  d.bodies[2].angular_velocity = {0, 2, 0};
  d.bodies[2].linear_velocity = {-0.5, 0, 0};
  auto hinge = [&](int parent, int child, Vec3 anchor_in_child) {
    JointDesc j;
    j.parent = parent;
    j.child = child;
    j.child_frame.pos = anchor_in_child;
    j.axis = Vec3{0, 1, 0};
    d.joints.push_back(j);
  };
  hinge(kWorldBody, 0, {0, 0, 0.25});
  hinge(0, 1, {-0.5, 0, 0});
  hinge(1, 2, {0, 0, -0.25});
  hinge(kWorldBody, 2, {0, 0, 0.25});
  auto [tree, jacobi] = SimulateBoth("four-bar linkage", d, 200);
  EXPECT_LT(tree.cr, jacobi.cr);
  // the loop factor eliminates the closing joint's rows exactly (their redundant ones keep their
  // diagonal): one CR iteration per Newton iteration (376 of 376; 2234 CR for 379 Newton on the
  // tree alone)
  EXPECT_LE(tree.cr, tree.newton + tree.newton / 10);
  EXPECT_LT(MaxPoseDifference(tree, jacobi), 1e-5);
  // the coupler stays horizontal in a parallelogram
  Quat coupler = load_quat(&tree.pose[7 * 1 + 3]);
  EXPECT_NEAR(std::fabs(coupler.w), 1, 1e-6);
}

// Batching worlds of different scenes with different preconditioners gives each world the
// result it has alone.
TEST(PreconditionerTest, MixedBatchMatchesSingleWorlds) {
  ModelDesc chain = scenes::Chain(8);
  ModelDesc stack = scenes::Stack(3);
  auto sim = MustCreateSimulator(2);
  std::vector<WorldId> ids;
  for (Preconditioner p : {Preconditioner::kTree, Preconditioner::kJacobi}) {
    for (const ModelDesc* d : {&chain, &stack}) {
      ids.push_back((*sim->CreateWorlds(MustCompile(WithPreconditioner(*d, p)), 1))[0]);
    }
  }
  ASSERT_TRUE(sim->StepAll(50).ok());
  int k = 0;
  for (Preconditioner p : {Preconditioner::kTree, Preconditioner::kJacobi}) {
    for (const ModelDesc* d : {&chain, &stack}) {
      RunStats alone = Simulate(WithPreconditioner(*d, p), 50);
      std::vector<Real> batched = sim->GetBodyState(ids[k++])->pose;
      ASSERT_EQ(batched.size(), alone.pose.size());
      for (size_t i = 0; i < batched.size(); ++i) EXPECT_EQ(batched[i], alone.pose[i]);
    }
  }
}

TEST(PreconditionerTest, UnknownValueIsRejected) {
  ModelDesc d = scenes::Chain(2);
  d.options.preconditioner = static_cast<Preconditioner>(7);
  absl::StatusOr<std::shared_ptr<const Model>> m = Model::Compile(d);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), ::testing::HasSubstr("preconditioner"));
}

}  // namespace
}  // namespace axion
