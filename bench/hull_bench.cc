// Support queries and contacts of convex hulls by vertex count: reading every vertex (the hull's
// edges hidden) against climbing along the edges (collision/shape_support.h,
// hull_support_index). The crossover sets kHullClimbVertices.
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "collision/collision.h"
#include "collision/hull.h"

namespace axion {
namespace {

// The hull of `n` random points on the unit sphere (every point a vertex).
HullData SphereHull(int n) {
  std::mt19937 rng(1);
  std::normal_distribution<Real> g(0, 1);
  std::vector<Vec3> points;
  for (int i = 0; i < n; ++i) points.push_back(normalized(Vec3{g(rng), g(rng), g(rng)}));
  return *BuildHull(points);
}

std::vector<Vec3> RandomDirections(int n) {
  std::mt19937 rng(2);
  std::normal_distribution<Real> g(0, 1);
  std::vector<Vec3> dirs;
  for (int i = 0; i < n; ++i) dirs.push_back({g(rng), g(rng), g(rng)});
  return dirs;
}

// state.range(0): vertices; state.range(1): 1 climbs (where the hull is large enough), 0 reads
// every vertex.
void BM_HullSupport(benchmark::State& state) {
  const HullData hull = SphereHull(static_cast<int>(state.range(0)));
  ShapeGeom geom = HullShapeGeom(hull);
  if (state.range(1) == 0) geom.hull_edge_offset = nullptr;
  const narrowphase::Core core = narrowphase::make_core(geom, {}, Quat{}, /*framed=*/false);
  const std::vector<Vec3> dirs = RandomDirections(1024);
  size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(narrowphase::hull_support_index(core, dirs[k++ & 1023]));
  }
}
BENCHMARK(BM_HullSupport)
    ->ArgsProduct({{16, 32, 48, 64, 128, 400, 2000, 20000}, {0, 1}})
    ->ArgNames({"vertices", "climb"});

// A hull resting on a box, turned at random: the whole narrow phase of the pair.
void BM_HullOnBox(benchmark::State& state) {
  const HullData hull = SphereHull(static_cast<int>(state.range(0)));
  ShapeGeom geom = HullShapeGeom(hull);
  if (state.range(1) == 0) geom.hull_edge_offset = nullptr;
  ShapeGeom box;
  box.type = narrowphase::kTypeBox;
  box.size = {2, 2, 0.1};
  std::mt19937 rng(3);
  std::normal_distribution<Real> g(0, 1);
  std::vector<Quat> turns;
  for (int i = 0; i < 256; ++i)
    turns.push_back(quat_normalized(Quat{g(rng), g(rng), g(rng), g(rng)}));
  ContactPoint out[kMaxPairContacts];
  size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        collide_shapes(geom, {0, 0, 1.095}, turns[k++ & 255], box, {}, Quat{}, 0.01, out));
  }
}
BENCHMARK(BM_HullOnBox)
    ->ArgsProduct({{64, 400, 2000, 20000}, {0, 1}})
    ->ArgNames({"vertices", "climb"});

}  // namespace
}  // namespace axion

BENCHMARK_MAIN();
