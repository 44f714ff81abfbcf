// Articulated chains: steps per second for one chain of 2, 10 and 50 links, and 4096 worlds of
// a 10-link chain; mean Newton and CR iterations per step.
#include "bench_scenes.h"

namespace axion::bench {
namespace {

void BM_Chain(benchmark::State& state) {
  auto model = Compile(Chain(static_cast<int>(state.range(0))));
  RunWorlds(state, model, static_cast<int>(state.range(1)), static_cast<int>(state.range(2)));
}
BENCHMARK(BM_Chain)
    ->ArgNames({"links", "worlds", "threads"})
    ->Args({2, 1, 1})
    ->Args({10, 1, 1})
    ->Args({50, 1, 1})
    ->Args({10, 4096, 1})
    ->Args({10, 4096, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace axion::bench

BENCHMARK_MAIN();
