// The broad phase (kernels_contact.h): sweep and prune must hand the narrow phase exactly the
// candidate pairs whose boxes overlap, in pair order, as testing every pair did; and the
// lookup from two shapes to their pair must agree with the model's pair list.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
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

// Two crowded worlds of different sizes in one batch (none where one fails to compile, which
// is reported as a failure).
std::optional<BatchStorage> CrowdedBatch(int small_bodies, int large_bodies, uint64_t seed) {
  auto small = CrowdedScene(small_bodies, seed), large = CrowdedScene(large_bodies, seed + 1);
  if (small == nullptr || large == nullptr) return std::nullopt;
  return PackBatch({test_batch::LayoutOf(small), test_batch::LayoutOf(large)});
}

TEST(BroadPhaseTest, FindsEveryPairOfTwoShapesAndNoOther) {
  std::optional<BatchStorage> packed = CrowdedBatch(20, 60, 1);
  ASSERT_TRUE(packed.has_value());
  BatchStorage& batch = *packed;
  const BatchView v = batch.view();
  for (int w = 0; w < batch.world_count(); ++w) {
    std::map<std::pair<int, int>, int> expected;
    for (int p = batch.world_pair_offset[w]; p < batch.world_pair_offset[w + 1]; ++p)
      expected[{batch.pair_shape_a[p], batch.pair_shape_b[p]}] = p;
    for (int a = batch.world_shape_offset[w]; a < batch.world_shape_offset[w + 1]; ++a) {
      for (int b = batch.world_shape_offset[w]; b < batch.world_shape_offset[w + 1]; ++b) {
        auto it = expected.find({std::min(a, b), std::max(a, b)});
        EXPECT_EQ(kernels::world_find_pair(v, a, b), it == expected.end() ? -1 : it->second)
            << "world " << w << " shapes " << a << ", " << b;
      }
    }
  }
}

// Random boxes of every size (points, boxes spanning the scene, infinite and NaN bounds) in
// both worlds of a batch: the pairs visited are those testing every pair finds, in pair order.
TEST(BroadPhaseTest, VisitsExactlyTheOverlappingPairsInPairOrder) {
  std::optional<BatchStorage> packed = CrowdedBatch(20, 150, 3);
  ASSERT_TRUE(packed.has_value());
  BatchStorage& batch = *packed;
  const BatchView v = batch.view();
  const Real inf = std::numeric_limits<Real>::infinity();
  const Real nan = std::numeric_limits<Real>::quiet_NaN();
  uint64_t state = 99;
  auto uniform = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<Real>(state >> 11) / Real(9007199254740992.0);
  };
  for (int round = 0; round < 20; ++round) {
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
    for (int w = 0; w < batch.world_count(); ++w) {
      std::vector<int> expected, visited;
      for (int p = batch.world_pair_offset[w]; p < batch.world_pair_offset[w + 1]; ++p) {
        if (kernels::aabb_overlap(&batch.shape_aabb[6 * batch.pair_shape_a[p]],
                                  &batch.shape_aabb[6 * batch.pair_shape_b[p]]))
          expected.push_back(p);
      }
      kernels::world_for_each_pair(v, w, [&](int pair) {
        visited.push_back(pair);
        return true;
      });
      EXPECT_EQ(visited, expected) << "round " << round << " world " << w;
      ASSERT_GT(expected.size(), 0u);
    }
  }
}

// Where a redo marked a pair, every pair is visited (a marked pair joins whatever its boxes
// say), and stopping the visit stops it.
TEST(BroadPhaseTest, MarkedWorldsVisitEveryPairAndVisitsStopWhenAsked) {
  auto model = CrowdedScene(30, 5);
  ASSERT_NE(model, nullptr);
  BatchStorage batch = PackBatch({test_batch::LayoutOf(model)});
  const BatchView v = batch.view();
  for (Real& bound : batch.shape_aabb) bound = 0;  // every box the same point: all overlap
  batch.world_pairs_marked[0] = 1;
  int visits = 0;
  kernels::world_for_each_pair(v, 0, [&](int pair) {
    EXPECT_EQ(pair, batch.world_pair_offset[0] + visits);
    ++visits;
    return true;
  });
  EXPECT_EQ(visits, batch.world_pair_offset[1] - batch.world_pair_offset[0]);
  batch.world_pairs_marked[0] = 0;
  visits = 0;
  kernels::world_for_each_pair(v, 0, [&](int) { return ++visits < 5; });
  EXPECT_EQ(visits, 5);
}

}  // namespace
}  // namespace axion
