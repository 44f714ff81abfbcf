// The execution model of the CUDA backend, checked on the CPU so that it holds on every build:
// each pass runs over the whole batch (not a chunk of worlds) and is masked by its world's
// phase. Here every loop of the step runs to its LoopBounds and any() is always true (the CUDA
// backend's loops end on the device once no world needs another trip, never later than the
// bound). Because of the masks this must give bit-identical states to the CPU backend, whose
// loops stop as soon as no world needs another pass, also in a batch whose worlds converge
// after different numbers of iterations or do not step at all.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "axion/model.h"
#include "axion_scenes.h"
#include "backend.h"
#include "batch_storage.h"
#include "gtest/gtest.h"
#include "pipeline.h"

namespace axion {
namespace {

// The CUDA backend's executor with host loops in place of kernel launches.
struct WholeBatchExec {
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
  void loop_while(WorldRange, int max_trips, P, Body body) const {
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

std::shared_ptr<const Model> MustCompile(ModelDesc desc) {
  absl::StatusOr<std::shared_ptr<const Model>> m = Model::Compile(std::move(desc));
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : nullptr;
}

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
  for (const auto& model : {MustCompile(Stack()), MustCompile(Chain()), MustCompile(Spinner())}) {
    ASSERT_NE(model, nullptr);
    for (int copy = 0; copy < 2; ++copy) {
      WorldLayout layout;
      layout.model = model;
      layout.params = MakeWorldParams(model->desc().options);
      layout.contact_capacity = model->contact_capacity();
      layouts.push_back(layout);
    }
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

}  // namespace
}  // namespace axion
