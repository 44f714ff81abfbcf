// Contacts: steps per second and mean Newton/CR iterations for a 10-box stack, 100 spheres in a
// box, and 4096 worlds of the 10-box stack.
#include "bench_scenes.h"

namespace axion::bench {
namespace {

void BM_Stack(benchmark::State& state) {
  static auto model = Compile(Stack(10));
  RunWorlds(state, model, static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
}
BENCHMARK(BM_Stack)
    ->ArgNames({"worlds", "threads"})
    ->Args({1, 1})
    ->Args({4096, 1})
    ->Args({4096, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_SpheresInBox(benchmark::State& state) {
  static auto model = Compile(SpheresInBox(100));
  // Let the spheres settle into a pile first: the steady state is the interesting load.
  RunWorlds(state, model, 1, 1, /*warmup_steps=*/200);
}
BENCHMARK(BM_SpheresInBox)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace axion::bench

BENCHMARK_MAIN();
