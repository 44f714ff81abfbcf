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

// A pile keeps changing for thousands of steps, so a varying iteration count would time a
// different load each run: the same 300 steps after 400 of settling, every time. `tree`: the
// tree preconditioner (the default, with friction's exact Newton form) or the Jacobi diagonal
// (with friction's symmetric form).
void BM_SpheresInBox(benchmark::State& state) {
  ModelDesc desc = SpheresInBox(static_cast<int>(state.range(0)));
  desc.options.friction_newton = state.range(1) != 0;
  desc.options.preconditioner =
      state.range(2) != 0 ? Preconditioner::kTree : Preconditioner::kJacobi;
  auto model = Compile(std::move(desc));
  RunWorlds(state, model, 1, 1, /*warmup_steps=*/400);
}
BENCHMARK(BM_SpheresInBox)
    ->ArgNames({"spheres", "friction_newton", "tree"})
    ->Args({100, 0, 1})
    ->Args({100, 1, 0})
    ->Args({100, 1, 1})
    ->Args({120, 0, 1})
    ->Args({120, 1, 0})
    ->Args({120, 1, 1})
    ->Iterations(300)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace axion::bench

BENCHMARK_MAIN();
