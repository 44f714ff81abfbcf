// The broad phase (kernels_contact.h): sweep and prune must hand the narrow phase exactly the
// pairs that may collide whose boxes overlap, in (a, b) order, as testing every pair does; the
// pair filter on the device (group/mask and the model's pair rules) must agree with the
// model's, and the model's with the rules of ModelDesc written out here; a pair capacity too
// small must be reported, never written past.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "axion/model.h"
#include "axion_scenes.h"
#include "batch_layout.h"
#include "batch_storage.h"
#include "gtest/gtest.h"
#include "kernels_contact.h"

namespace axion {
namespace {

// A scene with what the pair filter acts on: several shapes per body (never a pair), a joint
// (its two bodies never a pair), static shapes (never a pair with each other), collision masks
// and an explicit pair (listed first, out of the shapes' order).
std::shared_ptr<const Model> CrowdedScene(int bodies, uint64_t seed) {
  uint64_t state = seed;
  auto uniform = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<Real>(state >> 11) / Real(9007199254740992.0);
  };
  ModelDesc d;
  ShapeDesc ground;
  ground.type = ShapeType::kPlane;
  d.shapes.push_back(ground);
  for (int k = 0; k < 3; ++k) {
    ShapeDesc wall;
    wall.type = ShapeType::kBox;
    wall.size = {0.1, 1, 1};
    wall.pose.pos = {Real(k), 0, 0};
    d.shapes.push_back(wall);
  }
  for (int b = 0; b < bodies; ++b) {
    BodyDesc body;
    body.mass = 1;
    body.inertia = scenes::BoxInertia(1, {0.05, 0.05, 0.05});
    body.pose.pos = {uniform() * 2, uniform() * 2, uniform() * 2};
    d.bodies.push_back(body);
    const int shapes = 1 + static_cast<int>(uniform() * 3);
    for (int k = 0; k < shapes; ++k) {
      ShapeDesc s;
      s.body = b;
      s.type = k == 0 ? ShapeType::kSphere : (k == 1 ? ShapeType::kBox : ShapeType::kCapsule);
      s.size = {0.05, 0.05, 0.05};
      s.collision_group = uniform() < 0.1 ? 2u : 1u;
      s.collision_mask = uniform() < 0.1 ? 2u : 0xffffffffu;
      d.shapes.push_back(s);
    }
  }
  JointDesc joint;
  joint.type = JointType::kBall;
  joint.parent = 0;
  joint.child = 1;
  d.joints.push_back(joint);
  ContactPairDesc explicit_pair;
  explicit_pair.shape_a = static_cast<int>(d.shapes.size()) - 1;
  explicit_pair.shape_b = 1;
  explicit_pair.friction = 0.3;
  d.contact_pairs.push_back(explicit_pair);
  return test_batch::MustCompile(std::move(d));
}

// The pair filter as ModelDesc states it, written out pair by pair: an explicit pair always,
// never two shapes of one body, two planes, bodies joined by a joint (other than to the world,
// unless fixed) or shapes whose groups and masks do not match.
bool ReferenceMayCollide(const ModelDesc& d, int a, int b, Real* friction) {
  *friction = -1;
  for (const ContactPairDesc& pair : d.contact_pairs) {
    if ((pair.shape_a == a && pair.shape_b == b) || (pair.shape_a == b && pair.shape_b == a)) {
      *friction = pair.contact_dim == 1 ? 0 : pair.friction;
      return true;
    }
  }
  const ShapeDesc& sa = d.shapes[a];
  const ShapeDesc& sb = d.shapes[b];
  if (sa.body == sb.body) return false;
  if (sa.type == ShapeType::kPlane && sb.type == ShapeType::kPlane) return false;
  if (!(sa.collision_group & sb.collision_mask) || !(sb.collision_group & sa.collision_mask))
    return false;
  for (const JointDesc& joint : d.joints) {
    if (joint.collide_connected) continue;
    if (joint.parent == kWorldBody && joint.type != JointType::kFixed) continue;
    if ((joint.parent == sa.body && joint.child == sb.body) ||
        (joint.parent == sb.body && joint.child == sa.body))
      return false;
  }
  for (auto [x, y] : d.exclude_body_pairs)
    if ((x == sa.body && y == sb.body) || (x == sb.body && y == sa.body)) return false;
  return true;
}

TEST(BroadPhaseTest, PairFilterAgreesWithTheModelAndItsDescription) {
  auto small = CrowdedScene(20, 1), large = CrowdedScene(60, 2);
  ASSERT_NE(small, nullptr);
  ASSERT_NE(large, nullptr);
  BatchStorage batch = PackBatch({test_batch::LayoutOf(small), test_batch::LayoutOf(large)});
  const BatchView v = batch.view();
  for (int w = 0; w < batch.world_count(); ++w) {
    const Model& model = w == 0 ? *small : *large;
    const int s0 = batch.world_shape_offset[w];
    int64_t pairs = 0;
    for (int a = 0; a < model.shape_count(); ++a) {
      for (int b = 0; b < model.shape_count(); ++b) {
        if (a == b) continue;
        Real expected_friction, model_friction, device_friction;
        const bool expected = ReferenceMayCollide(model.desc(), a, b, &expected_friction);
        EXPECT_EQ(model.MayCollide(a, b, &model_friction), expected) << a << ", " << b;
        EXPECT_EQ(model_friction, expected_friction) << a << ", " << b;
        const bool device = kernels::world_shapes_may_collide(
            v, s0 + std::min(a, b), s0 + std::max(a, b), &device_friction);
        EXPECT_EQ(device, expected) << "world " << w << " shapes " << a << ", " << b;
        EXPECT_EQ(device_friction, expected_friction) << a << ", " << b;
        pairs += expected && a < b;
      }
    }
    EXPECT_EQ(model.collision_pair_count(), pairs);
    EXPECT_EQ(static_cast<int64_t>(model.collision_pairs().size()), pairs);
    // what the filter acts on is there: an explicit pair the masks would refuse, and exclusions
    EXPECT_GT(model.pair_rules().size(), 1u);
  }
}

// Random boxes on a grid, from points to boxes spanning the scene.
void ScatterBoxes(BatchStorage& batch, int round, uint64_t* state) {
  const Real inf = std::numeric_limits<Real>::infinity();
  const Real nan = std::numeric_limits<Real>::quiet_NaN();
  auto uniform = [&] {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<Real>(*state >> 11) / Real(9007199254740992.0);
  };
  for (int s = 0; s < static_cast<int>(batch.shape_world.size()); ++s) {
    Real* box = &batch.shape_aabb[6 * s];
    // boxes on a grid of coarse coordinates, so that bounds often tie
    for (int a = 0; a < 3; ++a) {
      const Real lower = std::floor(uniform() * 20) / 10;
      box[a] = lower;
      box[3 + a] = lower + std::floor(uniform() * (round % 4 == 0 ? 20 : 4)) / 10;
    }
    const Real odd = uniform();
    if (odd < 0.03) {
      for (int a = 0; a < 3; ++a) box[a] = -inf, box[3 + a] = inf;
    } else if (odd < 0.05) {
      box[static_cast<int>(uniform() * 6)] = nan;
    } else if (odd < 0.07) {
      box[static_cast<int>(uniform() * 3)] = -inf;
    }
  }
}

// The pairs of world w that may collide and whose boxes overlap, in (a, b) order: every pair
// tested.
std::vector<std::array<int, 2>> OverlappingPairs(const BatchStorage& batch, const Model& model,
                                                 int w) {
  std::vector<std::array<int, 2>> pairs;
  const int s0 = batch.world_shape_offset[w];
  for (auto [a, b] : model.collision_pairs())
    if (kernels::aabb_overlap(&batch.shape_aabb[6 * (s0 + a)], &batch.shape_aabb[6 * (s0 + b)]))
      pairs.push_back({s0 + a, s0 + b});
  return pairs;
}

// Random boxes of every size (points, boxes spanning the scene, infinite and NaN bounds) in
// both worlds of a batch, the capacity every pair: the pairs visited are those testing every
// pair finds, in (a, b) order, with their friction.
TEST(BroadPhaseTest, VisitsExactlyTheOverlappingPairsInOrder) {
  auto small = CrowdedScene(20, 3), large = CrowdedScene(150, 4);
  ASSERT_NE(small, nullptr);
  ASSERT_NE(large, nullptr);
  WorldLayout small_layout = test_batch::LayoutOf(small),
              large_layout = test_batch::LayoutOf(large);
  small_layout.pair_capacity = static_cast<int>(small->collision_pair_count());
  large_layout.pair_capacity = static_cast<int>(large->collision_pair_count());
  BatchStorage batch = PackBatch({small_layout, large_layout});
  const BatchView v = batch.view();
  uint64_t state = 99;
  for (int round = 0; round < 20; ++round) {
    ScatterBoxes(batch, round, &state);
    for (int w = 0; w < batch.world_count(); ++w) {
      const Model& model = w == 0 ? *small : *large;
      const std::vector<std::array<int, 2>> expected = OverlappingPairs(batch, model, w);
      std::vector<std::array<int, 2>> visited;
      kernels::world_for_each_pair(v, w, [&](int pair) {
        visited.push_back({batch.pair_shape_a[pair], batch.pair_shape_b[pair]});
        Real friction;
        model.MayCollide(batch.pair_shape_a[pair] - batch.world_shape_offset[w],
                         batch.pair_shape_b[pair] - batch.world_shape_offset[w], &friction);
        EXPECT_EQ(batch.pair_friction[pair], friction);
        EXPECT_EQ(batch.pair_marked[pair], 0);
        return true;
      });
      EXPECT_EQ(visited, expected) << "round " << round << " world " << w;
      EXPECT_EQ(batch.world_flags[w] & kWorldPairOverflow, 0u);
      ASSERT_GT(expected.size(), 0u);
    }
  }
  // the default capacity holds far fewer than every pair (64 per shape + 64)
  EXPECT_LT(large->pair_capacity(), large->collision_pair_count());
}

// Past the capacity: the flag, the capacity's worth of overlapping pairs in order, and no slot
// of the next world written.
TEST(BroadPhaseTest, TooManyPairsAreReportedNotWrittenPast) {
  auto model = CrowdedScene(60, 7);
  ASSERT_NE(model, nullptr);
  WorldLayout tight = test_batch::LayoutOf(model);
  tight.pair_capacity = 10;
  BatchStorage batch = PackBatch({tight, test_batch::LayoutOf(model)});
  const BatchView v = batch.view();
  for (Real& bound : batch.shape_aabb) bound = 0;  // every box the same point: all overlap
  const int next_world_first = batch.world_pair_offset[1];
  batch.pair_shape_a[next_world_first] = -7;
  std::vector<std::array<int, 2>> visited;
  kernels::world_for_each_pair(v, 0, [&](int pair) {
    visited.push_back({batch.pair_shape_a[pair], batch.pair_shape_b[pair]});
    return true;
  });
  EXPECT_EQ(visited.size(), 10u);
  EXPECT_TRUE(std::is_sorted(visited.begin(), visited.end()));
  EXPECT_EQ(std::adjacent_find(visited.begin(), visited.end()), visited.end());
  for (auto [a, b] : visited) EXPECT_TRUE(model->MayCollide(a, b)) << a << ", " << b;
  EXPECT_NE(batch.world_flags[0] & kWorldPairOverflow, 0u);
  EXPECT_EQ(batch.pair_shape_a[next_world_first], -7);
  EXPECT_EQ(batch.world_flags[1] & kWorldPairOverflow, 0u);
}

// A pair a redo marked joins whatever its boxes say, once, marked, in order with the others;
// and stopping the visit stops it.
TEST(BroadPhaseTest, MarkedPairsJoinOnceAndVisitsStopWhenAsked) {
  auto model = CrowdedScene(30, 5);
  ASSERT_NE(model, nullptr);
  BatchStorage batch = PackBatch({test_batch::LayoutOf(model)});
  const BatchView v = batch.view();
  uint64_t state = 17;
  ScatterBoxes(batch, 1, &state);
  const std::vector<std::array<int, 2>> overlapping = OverlappingPairs(batch, *model, 0);
  const std::vector<std::array<int, 2>> all = model->collision_pairs();
  ASSERT_GT(overlapping.size(), 2u);
  // one pair apart, one overlapping: both marked
  std::array<int, 2> apart{-1, -1};
  for (auto pair : all)
    if (!std::binary_search(overlapping.begin(), overlapping.end(), pair)) apart = pair;
  ASSERT_GE(apart[0], 0);
  const std::array<int, 2> both = overlapping[overlapping.size() / 2];
  batch.pair_missed_shape_a[0] = apart[0], batch.pair_missed_shape_b[0] = apart[1];
  batch.pair_missed_shape_a[1] = both[0], batch.pair_missed_shape_b[1] = both[1];
  batch.world_missed_count[0] = 2;
  std::vector<std::array<int, 2>> expected = overlapping, visited, marked;
  expected.insert(std::lower_bound(expected.begin(), expected.end(), apart), apart);
  kernels::world_for_each_pair(v, 0, [&](int pair) {
    visited.push_back({batch.pair_shape_a[pair], batch.pair_shape_b[pair]});
    if (batch.pair_marked[pair]) marked.push_back(visited.back());
    return true;
  });
  EXPECT_EQ(visited, expected);
  std::vector<std::array<int, 2>> expected_marked{apart, both};
  std::sort(expected_marked.begin(), expected_marked.end());
  EXPECT_EQ(marked, expected_marked);
  int visits = 0;
  kernels::world_for_each_pair(v, 0, [&](int) { return ++visits < 5; });
  EXPECT_EQ(visits, 5);
}

// Each shape's box holds the shape where its predicted motion takes it within the step, a
// translation by h v and a turn by h w about the centre of mass, as well as where it starts: the
// box grows along v, not by |v| on every side, and still misses nothing the motion reaches.
TEST(BroadPhaseTest, BoxesHoldTheShapesAlongTheirPredictedMotion) {
  auto model = CrowdedScene(40, 11);
  ASSERT_NE(model, nullptr);
  BatchStorage batch = PackBatch({test_batch::LayoutOf(model)});
  const BatchView v = batch.view();
  const WorldParams& params = batch.world_params[0];
  std::mt19937 rng(5);
  std::uniform_real_distribution<Real> uniform(-1, 1);
  auto random_vec = [&](Real scale) {
    return Vec3{scale * uniform(rng), scale * uniform(rng), scale * uniform(rng)};
  };
  int checked = 0;
  for (int trial = 0; trial < 30; ++trial) {
    batch.world_step_length[0] = trial % 2 ? Real(0.05) : Real(0.5);
    const Real h = batch.world_step_length[0];
    std::vector<Real> q_end = batch.body_q_prev;
    for (int b = 0; b < static_cast<int>(batch.body_world.size()); ++b) {
      store3(&batch.body_q_prev[7 * b], random_vec(2));
      store_quat(&batch.body_q_prev[7 * b + 3],
                 quat_normalized(Quat{uniform(rng), uniform(rng), uniform(rng), uniform(rng)}));
      store3(&batch.body_u_prev[6 * b], random_vec(trial < 10 ? 0 : 5));
      store3(&batch.body_u_prev[6 * b + 3], random_vec(trial < 20 ? 0 : 10));
      // the end pose the prediction implies
      const Vec6 u = kernels::body_predicted_twist(v, b, params);
      const Real turn = norm(u.ang) * h;
      const Quat spin = turn > 0 ? quat_from_axis_angle(u.ang * (1 / norm(u.ang)), turn) : Quat{};
      store3(&q_end[7 * b], kernels::body_position(v.body_q_prev, b) + h * u.lin);
      store_quat(&q_end[7 * b + 3], spin * kernels::body_rotation(v.body_q_prev, b));
    }
    for (int s = 0; s < static_cast<int>(batch.shape_world.size()); ++s) {
      kernels::shape_update_aabb(v, s, params);
      const Real* box = &batch.shape_aabb[6 * s];
      for (const Real* q : std::vector<const Real*>{v.body_q_prev, q_end.data()}) {
        Vec3 pos, lower, upper;
        Quat quat;
        kernels::shape_world_pose(v, s, q, &pos, &quat);
        shape_aabb(kernels::shape_geom(v, s), pos, quat, &lower, &upper);
        if (batch.shape_type[s] == static_cast<int>(ShapeType::kPlane)) continue;
        for (int a = 0; a < 3; ++a) {
          EXPECT_LE(box[a], lower[a] + 1e-9) << "shape " << s << " trial " << trial;
          EXPECT_GE(box[3 + a], upper[a] - 1e-9) << "shape " << s << " trial " << trial;
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 1000);
  // and it grows along the motion only: a sphere falling without spin reaches down by h v_z,
  // up by the margin
  const int sphere = batch.world_shape_offset[0] + 4;  // the first body's first shape
  ASSERT_EQ(batch.shape_type[sphere], static_cast<int>(ShapeType::kSphere));
  const int body = batch.shape_body[sphere];
  store3(&batch.body_u_prev[6 * body], Vec3{0, 0, -3});
  store3(&batch.body_u_prev[6 * body + 3], Vec3{0, 0, 0});
  batch.world_step_length[0] = Real(0.01);
  kernels::shape_update_aabb(v, sphere, params);
  Vec3 pos, lower, upper;
  Quat quat;
  kernels::shape_world_pose(v, sphere, v.body_q_prev, &pos, &quat);
  shape_aabb(kernels::shape_geom(v, sphere), pos, quat, &lower, &upper);
  const Real fall = Real(0.01) * (3 - Real(0.01) * params.gravity[2]);
  EXPECT_NEAR(batch.shape_aabb[6 * sphere + 2], lower.z - params.contact_margin - fall, 1e-12);
  EXPECT_NEAR(batch.shape_aabb[6 * sphere + 5], upper.z + params.contact_margin, 1e-12);
  EXPECT_NEAR(batch.shape_aabb[6 * sphere + 0], lower.x - params.contact_margin, 1e-12);
}

}  // namespace
}  // namespace axion
