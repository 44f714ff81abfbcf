// Free rigid-body motion: body-steps per second for 1, 64 and 4096 worlds of 10 free bodies, on
// 1 and 2 threads.
#include "bench_scenes.h"

namespace axion::bench {
namespace {

void BM_FreeBodies(benchmark::State& state) {
  static auto model = Compile(FreeBodies(10));
  RunWorlds(state, model, static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
}
BENCHMARK(BM_FreeBodies)
    ->ArgNames({"worlds", "threads"})
    ->ArgsProduct({{1, 64, 4096}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace axion::bench

BENCHMARK_MAIN();
