// Small scene builders shared by the engine tests.
#pragma once

#include <memory>
#include <vector>

#include "axion/model.h"
#include "axion/simulator.h"
#include "axion_scenes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace axion::test {

using scenes::BoxInertia;
using scenes::SphereInertia;

inline std::shared_ptr<const Model> MustCompile(ModelDesc desc) {
  absl::StatusOr<std::shared_ptr<const Model>> m = Model::Compile(std::move(desc));
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : nullptr;
}

inline std::unique_ptr<Simulator> MustCreateSimulator(int threads = 1) {
  SimulatorOptions o;
  o.backend = Backend::kCpu;
  o.threads = threads;
  absl::StatusOr<std::unique_ptr<Simulator>> s = Simulator::Create(o);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

inline WorldId MustCreateWorld(Simulator& sim, std::shared_ptr<const Model> model) {
  absl::StatusOr<std::vector<WorldId>> ids = sim.CreateWorlds(std::move(model), 1);
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids->front();
}

inline void MustStep(Simulator& sim, WorldId w, int steps = 1) {
  std::vector<WorldId> ids{w};
  std::vector<int> n{steps};
  absl::Status s = sim.Step(ids, n);
  ASSERT_TRUE(s.ok()) << s;
}

inline Vec3 BodyPos(Simulator& sim, WorldId w, int body) {
  BodyState st = *sim.GetBodyState(w);
  return load3(&st.pose[7 * body]);
}
inline Quat BodyQuat(Simulator& sim, WorldId w, int body) {
  BodyState st = *sim.GetBodyState(w);
  return load_quat(&st.pose[7 * body + 3]);
}
inline Vec3 BodyVel(Simulator& sim, WorldId w, int body) {
  BodyState st = *sim.GetBodyState(w);
  return load3(&st.velocity[6 * body]);
}
inline Vec3 BodyOmega(Simulator& sim, WorldId w, int body) {
  BodyState st = *sim.GetBodyState(w);
  return load3(&st.velocity[6 * body + 3]);
}

// Fails the test when the world reports non-convergence or a non-finite state.
inline void ExpectHealthy(Simulator& sim, WorldId w) {
  WorldStats st = *sim.GetStats(w);
  EXPECT_EQ(st.flags & kWorldNonFinite, 0u) << "world " << w << " became non-finite";
  EXPECT_EQ(st.flags & kWorldNotConverged, 0u)
      << "world " << w << " did not converge: residual " << st.residual << " after "
      << st.newton_iterations << " Newton iterations";
}

}  // namespace axion::test
