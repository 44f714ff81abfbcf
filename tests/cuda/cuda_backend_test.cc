// The CUDA backend through the public Simulator interface: CPU/GPU parity on small scenes, GPU
// run-to-run bit identity on a large batch, snapshots, resets and world creation/destruction on
// the device. Every GPU test skips itself where there is no CUDA device; the unavailable-device
// behaviour is tested where there is none.
//
// Parity tolerance. Both backends run the same kernel source in double precision and neither
// contracts a*b+c into fused multiply-adds (the CUDA backend is built with --fmad=false), so they
// differ only by the last bits of sin, cos and atan2 (CUDA's libdevice and glibc are each within
// 2 ulp of the exact result). After 100 steps positions must agree to
//   |p_gpu - p_cpu| <= 1e-6 * max(1, |p_cpu|)
// and velocities to 1e-5 * max(1, |v_cpu|); the humanoid, whose falling contacts amplify
// differences the most, gets 1e-5 on positions and 1e-4 on velocities.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "axion/model.h"
#include "axion/simulator.h"
#include "axion_scenes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#if defined(AXION_TEST_HAVE_MJCF)
#include "axion/mjcf.h"
#endif

namespace axion {
namespace {

using ::testing::HasSubstr;

constexpr char kNoDevice[] = "no CUDA device: skipping GPU test";

std::shared_ptr<const Model> MustCompile(ModelDesc desc) {
  absl::StatusOr<std::shared_ptr<const Model>> m = Model::Compile(std::move(desc));
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : nullptr;
}

std::unique_ptr<Simulator> MustCreate(Backend backend) {
  SimulatorOptions o;
  o.backend = backend;
  o.threads = 1;
  absl::StatusOr<std::unique_ptr<Simulator>> s = Simulator::Create(o);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return nullptr;
  EXPECT_EQ((*s)->backend(), backend);
  return std::move(*s);
}

std::vector<WorldId> MustCreateWorlds(Simulator& sim, std::shared_ptr<const Model> model,
                                      int count) {
  absl::StatusOr<std::vector<WorldId>> ids = sim.CreateWorlds(std::move(model), count);
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<WorldId>{};
}

// A 1 m pendulum released horizontally, with a damped hinge.
using scenes::BoxInertia;

ModelDesc Pendulum() {
  ModelDesc d;
  BodyDesc bob;
  bob.mass = 1;
  bob.inertia = mat33_diag({0.001, 0.001, 0.001});
  bob.pose.pos = {1, 0, 0};
  d.bodies.push_back(bob);
  JointDesc hinge;
  hinge.child = 0;
  hinge.child_frame.pos = {-1, 0, 0};
  hinge.axis = Vec3{0, 1, 0};
  hinge.drive.damping = 0.01;
  d.joints.push_back(hinge);
  return d;
}

// A box sliding down a 30 degree incline with friction 0.2 (tan 30 = 0.58 > 0.2: it slides).
ModelDesc Incline() {
  const Real angle = Real(30) * Real(3.14159265358979323846) / 180;
  const Quat tilt{std::cos(angle / 2), 0, std::sin(angle / 2), 0};  // about +y
  ModelDesc d;
  ShapeDesc slope;
  slope.type = ShapeType::kPlane;
  slope.pose.quat = tilt;
  slope.material.friction = 0.2;
  d.shapes.push_back(slope);
  BodyDesc box;
  box.mass = 2;
  box.inertia = BoxInertia(2, {0.1, 0.1, 0.1});
  box.pose.quat = tilt;
  box.pose.pos = rotate(tilt, Vec3{0, 0, 0.1});
  d.bodies.push_back(box);
  ShapeDesc s;
  s.body = 0;
  s.type = ShapeType::kBox;
  s.size = {0.1, 0.1, 0.1};
  s.material.friction = 0.2;
  d.shapes.push_back(s);
  return d;
}

bool Within(Real expected, Real actual, Real tolerance) {
  return std::fabs(actual - expected) <= tolerance * std::max(Real(1), std::fabs(expected));
}

// Expects every entry of `actual` within `tolerance` (relative, absolute below 1) of `expected`.
void ExpectClose(const std::vector<Real>& expected, const std::vector<Real>& actual, Real tolerance,
                 const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!Within(expected[i], actual[i], tolerance) && reported++ < 5) {
      ADD_FAILURE() << what << "[" << i << "]: cpu " << expected[i] << ", gpu " << actual[i]
                    << ", difference " << actual[i] - expected[i] << " exceeds " << tolerance;
    }
  }
}

// Bitwise equality (== would let -0 equal +0 and fail on equal NaNs).
void ExpectBitIdentical(const std::vector<Real>& a, const std::vector<Real>& b,
                        const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(Real)) != 0) {
      ADD_FAILURE() << what << "[" << i << "] differs: " << a[i] << " vs " << b[i];
      return;
    }
  }
}

void ExpectSameWorld(Simulator& a, WorldId wa, Simulator& b, WorldId wb, const std::string& what) {
  BodyState sa = *a.GetBodyState(wa), sb = *b.GetBodyState(wb);
  ExpectBitIdentical(sa.pose, sb.pose, what + " pose");
  ExpectBitIdentical(sa.velocity, sb.velocity, what + " velocity");
  JointState ja = *a.GetJointState(wa), jb = *b.GetJointState(wb);
  ExpectBitIdentical(ja.position, jb.position, what + " joint position");
  ExpectBitIdentical(ja.velocity, jb.velocity, what + " joint velocity");
  WorldStats ta = *a.GetStats(wa), tb = *b.GetStats(wb);
  EXPECT_EQ(ta.newton_iterations, tb.newton_iterations) << what;
  EXPECT_EQ(ta.cr_iterations, tb.cr_iterations) << what;
  EXPECT_EQ(ta.contact_count, tb.contact_count) << what;
  EXPECT_EQ(ta.flags, tb.flags) << what;
  EXPECT_EQ(ta.step_count, tb.step_count) << what;
  EXPECT_EQ(ta.time, tb.time) << what;
}

// Gives world `k` of a batch its own small initial velocity of the last body, so a batch whose
// worlds were mixed up or coupled would show it.
void Perturb(BodyState& st, size_t k) {
  const size_t top = st.velocity.size() - 6;
  st.velocity[top + 0] += Real(1e-3) * static_cast<Real>(k % 17);
  st.velocity[top + 1] -= Real(5e-4) * static_cast<Real>(k % 5);
}
void PerturbWorlds(Simulator& sim, const std::vector<WorldId>& ids) {
  for (size_t k = 0; k < ids.size(); ++k) {
    BodyState st = *sim.GetBodyState(ids[k]);
    Perturb(st, k);
    ASSERT_TRUE(sim.SetBodyState(ids[k], st).ok());
  }
}

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CudaAvailable()) GTEST_SKIP() << kNoDevice;
  }
};

// Steps `worlds` copies of `model` `steps` times on the CPU and on the GPU (one Step call per
// step, so every step goes through the host-visible statistics) and compares the final states.
void ExpectParity(std::shared_ptr<const Model> model, int worlds, Real position_tolerance,
                  Real velocity_tolerance, int steps = 100) {
  ASSERT_NE(model, nullptr);
  auto cpu = MustCreate(Backend::kCpu);
  auto gpu = MustCreate(Backend::kCuda);
  ASSERT_TRUE(cpu && gpu);
  std::vector<WorldId> cpu_ids = MustCreateWorlds(*cpu, model, worlds);
  std::vector<WorldId> gpu_ids = MustCreateWorlds(*gpu, model, worlds);
  PerturbWorlds(*cpu, cpu_ids);
  PerturbWorlds(*gpu, gpu_ids);
  for (int step = 1; step <= steps; ++step) {
    ASSERT_TRUE(cpu->StepAll(1).ok());
    absl::Status s = gpu->StepAll(1);
    ASSERT_TRUE(s.ok()) << s;
    if (step == 1) {
      // One step in, the two must already agree to rounding.
      for (int w = 0; w < worlds; ++w) {
        ExpectClose(cpu->GetBodyState(cpu_ids[w])->pose, gpu->GetBodyState(gpu_ids[w])->pose, 1e-12,
                    "pose after one step, world " + std::to_string(w));
      }
    }
  }
  for (int w = 0; w < worlds; ++w) {
    const std::string world = "world " + std::to_string(w);
    BodyState c = *cpu->GetBodyState(cpu_ids[w]), g = *gpu->GetBodyState(gpu_ids[w]);
    ExpectClose(c.pose, g.pose, position_tolerance, world + " pose");
    ExpectClose(c.velocity, g.velocity, velocity_tolerance, world + " velocity");
    // the last step's velocity change per second: its velocities' differences over its length
    ExpectClose(*cpu->GetBodyAccelerations(cpu_ids[w]), *gpu->GetBodyAccelerations(gpu_ids[w]),
                2 * velocity_tolerance / model->desc().options.timestep, world + " acceleration");
    JointState jc = *cpu->GetJointState(cpu_ids[w]), jg = *gpu->GetJointState(gpu_ids[w]);
    ExpectClose(jc.position, jg.position, position_tolerance, world + " joint position");
    ExpectClose(*cpu->GetTendonStates(cpu_ids[w]), *gpu->GetTendonStates(gpu_ids[w]),
                velocity_tolerance, world + " tendon lengths and rates");
    WorldStats sc = *cpu->GetStats(cpu_ids[w]), sg = *gpu->GetStats(gpu_ids[w]);
    EXPECT_EQ(sg.step_count, static_cast<uint64_t>(steps)) << world;
    EXPECT_EQ(sg.time, sc.time) << world;  // the same sum of the same timesteps
    EXPECT_EQ(sg.flags, sc.flags) << world;
    EXPECT_EQ(sg.contact_count, sc.contact_count) << world;
    EXPECT_EQ(sg.flags & kWorldNonFinite, 0u) << world;
  }
}

// A model's worlds on the CPU and the device, world w under controls ctrl[w] (none where ctrl is
// empty), stepped `steps` times: the same poses and tendon states (and velocities, where asked)
// on both, world by world.
void ExpectDrivenParity(const ModelDesc& desc, const std::vector<std::vector<Real>>& ctrl,
                        int worlds, int steps, const std::string& what,
                        Real velocity_tolerance = -1) {
  auto model = MustCompile(desc);
  auto cpu = MustCreate(Backend::kCpu);
  auto gpu = MustCreate(Backend::kCuda);
  ASSERT_TRUE(cpu && gpu);
  const std::vector<WorldId> c = MustCreateWorlds(*cpu, model, worlds);
  const std::vector<WorldId> g = MustCreateWorlds(*gpu, model, worlds);
  for (size_t w = 0; w < ctrl.size(); ++w) {
    ASSERT_TRUE(cpu->SetControls(c[w], ctrl[w]).ok());
    ASSERT_TRUE(gpu->SetControls(g[w], ctrl[w]).ok());
  }
  ASSERT_TRUE(cpu->StepAll(steps).ok());
  ASSERT_TRUE(gpu->StepAll(steps).ok());
  for (int w = 0; w < worlds; ++w) {
    ExpectClose(cpu->GetBodyState(c[w])->pose, gpu->GetBodyState(g[w])->pose, 1e-6, what);
    ExpectClose(*cpu->GetTendonStates(c[w]), *gpu->GetTendonStates(g[w]), 1e-6, what);
    if (velocity_tolerance >= 0)
      ExpectClose(cpu->GetBodyState(c[w])->velocity, gpu->GetBodyState(g[w])->velocity,
                  velocity_tolerance, what);
  }
}

TEST_F(CudaBackendTest, PendulumMatchesCpu) {
  ExpectParity(MustCompile(Pendulum()), 3, 1e-6, 1e-5);
}
TEST_F(CudaBackendTest, ChainMatchesCpu) {
  ExpectParity(MustCompile(scenes::Chain(10)), 3, 1e-6, 1e-5);
}
TEST_F(CudaBackendTest, BoxStackMatchesCpu) {
  ExpectParity(MustCompile(scenes::Stack(10)), 3, 1e-6, 1e-5);
}
TEST_F(CudaBackendTest, BoxOnInclineMatchesCpu) {
  ExpectParity(MustCompile(Incline()), 3, 1e-6, 1e-5);
}
TEST_F(CudaBackendTest, RobotJointsMatchCpu) {
  ExpectParity(MustCompile(scenes::RobotJoints()), 3, 1e-6, 1e-5);
}
// Tendons on the device: the robot-joints hand with its coupling replaced by a limited tendon
// over both knuckles, a spring-damper with dry friction along the second, and a bounded servo
// holding the first at zero (two-slot rows on the wrist's and both fingers' bodies).
TEST_F(CudaBackendTest, TendonsMatchCpu) {
  ExpectParity(MustCompile(scenes::RobotJointsWithTendons()), 3, 1e-6, 1e-5);
}
// Spatial tendons on the device (tests/io/models/spatial_tendons.xml, SpatialTendonTest on the
// CPU): paths wrapping around two cylinders and a sphere (side sites outside and inside them),
// a pulley, limits met, springs, and motors and a servo pulling along them.
TEST_F(CudaBackendTest, SpatialTendonsMatchCpu) {
#if defined(AXION_TEST_HAVE_MJCF)
  absl::StatusOr<ImportResult> imported =
      LoadMjcfFile(std::string(AXION_TEST_MODELS) + "/spatial_tendons.xml");
  ASSERT_TRUE(imported.ok()) << imported.status();
  ModelDesc desc = imported->model;
  desc.actuators.clear();  // (controls stay zero here: the tendons' own rows and springs act)
  ExpectParity(MustCompile(desc), 3, 1e-6, 1e-5, 200);
  // the motors' pulls and the servo's row: a batch with its controls set on both backends
  auto model = MustCompile(imported->model);
  auto cpu = MustCreate(Backend::kCpu);
  auto gpu = MustCreate(Backend::kCuda);
  ASSERT_TRUE(cpu && gpu);
  const WorldId c = MustCreateWorlds(*cpu, model, 1)[0];
  const WorldId g = MustCreateWorlds(*gpu, model, 1)[0];
  const std::vector<Real> ctrl = {4, 1, 2, 0.35, 0.3};
  ASSERT_TRUE(cpu->SetControls(c, ctrl).ok());
  ASSERT_TRUE(gpu->SetControls(g, ctrl).ok());
  ASSERT_TRUE(cpu->StepAll(200).ok());
  ASSERT_TRUE(gpu->StepAll(200).ok());
  ExpectClose(cpu->GetBodyState(c)->pose, gpu->GetBodyState(g)->pose, 1e-6, "driven pose");
  ExpectClose(*cpu->GetTendonStates(c), *gpu->GetTendonStates(g), 1e-5, "driven tendons");
  ExpectClose(*cpu->GetActuatorForces(c), *gpu->GetActuatorForces(g), 1e-5, "driven forces");
#else
  GTEST_SKIP() << "this build has no MJCF importer";
#endif
}

// Muscles on the device (MuJoCo's arm26.xml: six muscles on spatial tendons, MjcfMuscleTest
// on the CPU): activations integrated at the write-back and the muscles' pulls at the step's
// start, under excitations that drive the arm into its limits.
TEST_F(CudaBackendTest, MusclesMatchCpu) {
#if defined(AXION_TEST_HAVE_MJCF)
  absl::StatusOr<ImportResult> imported =
      LoadMjcfFile("/usr/share/mujoco/model/tendon_arm/arm26.xml");
  ASSERT_TRUE(imported.ok()) << imported.status();
  auto model = MustCompile(imported->model);
  auto cpu = MustCreate(Backend::kCpu);
  auto gpu = MustCreate(Backend::kCuda);
  ASSERT_TRUE(cpu && gpu);
  const std::vector<WorldId> c = MustCreateWorlds(*cpu, model, 3);
  const std::vector<WorldId> g = MustCreateWorlds(*gpu, model, 3);
  for (int w = 0; w < 3; ++w) {
    std::vector<Real> ctrl(6, 0);
    ctrl[w] = 1;
    ctrl[w + 3] = Real(0.5);
    ASSERT_TRUE(cpu->SetControls(c[w], ctrl).ok());
    ASSERT_TRUE(gpu->SetControls(g[w], ctrl).ok());
  }
  ASSERT_TRUE(cpu->StepAll(200).ok());
  ASSERT_TRUE(gpu->StepAll(200).ok());
  for (int w = 0; w < 3; ++w) {
    ExpectClose(cpu->GetBodyState(c[w])->pose, gpu->GetBodyState(g[w])->pose, 1e-6, "arm pose");
    ExpectClose(*cpu->GetActivations(c[w]), *gpu->GetActivations(g[w]), 1e-12, "activations");
    ExpectClose(*cpu->GetActuatorForces(c[w]), *gpu->GetActuatorForces(g[w]), 1e-4,
                "muscle forces");
  }
#else
  GTEST_SKIP() << "this build has no MJCF importer";
#endif
}

// MuJoCo's slider_crank.xml (slider-crank tendons under position servos) and grid2pin.xml (a
// cloth of particles whose threads are held tendons, hung from two pins): the same paths, rows
// and motion on the device.
TEST_F(CudaBackendTest, SliderCranksAndHeldTendonsMatchCpu) {
#if defined(AXION_TEST_HAVE_MJCF)
  for (const char* path : {"/usr/share/mujoco/model/slider_crank/slider_crank.xml",
                           "/usr/share/mujoco/model/composite/grid2pin.xml"}) {
    absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
    ASSERT_TRUE(imported.ok()) << imported.status();
    const size_t actuators = imported->model.actuators.size();
    std::vector<std::vector<Real>> ctrl;
    if (actuators > 0)
      ctrl = {std::vector<Real>(actuators, 0.05), std::vector<Real>(actuators, -0.05)};
    ExpectDrivenParity(imported->model, ctrl, 2, 100, path);
  }
#else
  GTEST_SKIP() << "this build has no MJCF importer";
#endif
}

// Fixed tendons over five and three hinges (tests/io/models/spine_tendon.xml: a limit and a
// servo on one, a motor and damping on the other), their rows on three and two slots, under
// opposite commands in two worlds; and a held tendon over a four-link chain's hinges keeping its
// last link level: the same lengths, rows and motion on the device.
TEST_F(CudaBackendTest, TendonsOverManyJointsMatchCpu) {
#if defined(AXION_TEST_HAVE_MJCF)
  absl::StatusOr<ImportResult> imported =
      LoadMjcfFile(std::string(AXION_TEST_MODELS) + "/spine_tendon.xml");
  ASSERT_TRUE(imported.ok()) << imported.status();
  ExpectDrivenParity(imported->model, {{1, -0.5}, {-1, 0.5}}, 2, 100, "spine");
#else
  GTEST_SKIP() << "this build has no MJCF importer";
#endif
  ModelDesc chain = scenes::Chain(4);
  TendonDesc level;
  level.name = "level";
  for (int j = 0; j < 4; ++j) level.joints.push_back({j, 0, 1});
  level.hold = true;
  chain.tendons.push_back(level);
  ExpectParity(MustCompile(chain), 2, 1e-6, 1e-5);
}

// MuJoCo's softbox.xml (a box composite: slides on springs and dampers, damped held tendons
// over two and 218 slides, contacts with a capsule and the floor): the same motion on the
// device over its first 60 steps, two worlds.
TEST_F(CudaBackendTest, SoftBoxMatchesCpu) {
#if defined(AXION_TEST_HAVE_MJCF)
  absl::StatusOr<ImportResult> imported =
      LoadMjcfFile("/usr/share/mujoco/model/composite/softbox.xml");
  ASSERT_TRUE(imported.ok()) << imported.status();
  ExpectDrivenParity(imported->model, {}, 2, 60, "softbox");
#else
  GTEST_SKIP() << "this build has no MJCF importer";
#endif
}

// Motors on a free joint (a world-frame force) and on ball joints (a torque with its reaction
// on the parent): the same pushes on the device, two worlds under opposite commands.
TEST_F(CudaBackendTest, BallAndFreeJointMotorsMatchCpu) {
#if defined(AXION_TEST_HAVE_MJCF)
  absl::StatusOr<ImportResult> imported = LoadMjcfString(R"(<mujoco>
  <option timestep="0.002" gravity="0 0 0"/>
  <worldbody>
    <body name="puck" pos="0 0 1" euler="20 30 40"><freejoint name="float"/>
      <geom type="box" size="0.1 0.2 0.05" density="500"/>
      <body name="arm" pos="0.1 0.2 0.05"><joint name="shoulder" type="ball"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/></body>
    </body>
    <body name="bob" pos="1 0 1"><joint name="swivel" type="ball"/>
      <geom type="box" pos="0 0 -0.2" size="0.05 0.06 0.2"/></body>
  </worldbody>
  <actuator>
    <motor joint="float" gear="1 0 0.5 0 0 0.05"/>
    <motor joint="shoulder" gear="0.01 0.03 -0.02"/>
    <motor joint="swivel" gear="0 0.2 0.1"/>
  </actuator>
</mujoco>)",
                                                         "");
  ASSERT_TRUE(imported.ok()) << imported.status();
  ExpectDrivenParity(imported->model, {{0.8, 0.5, -0.7}, {-0.8, -0.5, 0.7}}, 2, 100, "motors",
                     1e-5);
#else
  GTEST_SKIP() << "this build has no MJCF importer";
#endif
}

// Islands of one world (a chain, two boxes landing on each other), each with its own line
// search and best iterate: the per-island sums run on lane 0 of the world's team.
TEST_F(CudaBackendTest, IslandsMatchCpu) {
  ExpectParity(MustCompile(scenes::Islands(false)), 3, 1e-6, 1e-5);
}

// The broad phase on the device (sweep and prune, the pair bitmap, the floor's half-space box,
// warm starts matched along the pair order): 75 spheres landing in layers in a box, with
// sphere-sphere, sphere-wall and sphere-floor contacts changing from step to step. A pile is
// chaotic, so the tolerances are the humanoid's.
TEST_F(CudaBackendTest, SpheresInBoxMatchCpu) {
  ExpectParity(MustCompile(scenes::SpheresInBox(75)), 3, 1e-5, 1e-4, 60);
}

// Torsional and rolling friction (contact dimension 6): spheres spun about the vertical land
// in the box, their contacts' angular friction rows after every contact's three rows.
TEST_F(CudaBackendTest, AngularFrictionMatchesCpu) {
  ExpectParity(MustCompile(scenes::SpinningSpheresInBox(30)), 3, 1e-5, 1e-4, 60);
}

// The same spheres on slides: no angular rows, rotations held by the bodies themselves
// (body_rotation_fixed in the tree factor, the prediction and the Newton inertia).
TEST_F(CudaBackendTest, SpheresOnSlidesMatchCpu) {
  ExpectParity(MustCompile(scenes::SpheresInBox(75, true)), 3, 1e-5, 1e-4, 60);
}

// Height fields on the device: five kinds of shape landing on rough terrain, each against the
// prisms of the cells below it (built in registers per cell), inner edges dropped.
TEST_F(CudaBackendTest, BodiesOnTerrainMatchCpu) {
  ExpectParity(MustCompile(scenes::BodiesOnTerrain()), 3, 1e-5, 1e-4, 150);
}

// The contact redos on the device: a step taken again with its contact taken where the first
// attempt ended (ContactTest.TurningArmEndsOutOfThePostItWasStoppedBy on the CPU).
TEST_F(CudaBackendTest, ContactRedosMatchCpu) {
  auto model = MustCompile(scenes::ArmTurningIntoPost(20));
  ExpectParity(model, 3, 1e-6, 1e-5, 1);
  auto gpu = MustCreate(Backend::kCuda);
  ASSERT_TRUE(gpu);
  const WorldId w = MustCreateWorlds(*gpu, model, 1)[0];
  ASSERT_TRUE(gpu->StepAll(1).ok());
  EXPECT_EQ(gpu->GetStats(w)->contact_redos, 1);
}

// The contact presolve on the device (ContactTest's toppled pile on the CPU): nine jittered
// columns of spheres topple at h = 0.01 s, and a failed attempt goes again from Gauss-Seidel
// sweeps over the world's contacts (world_contact_presolve, colour by colour on the world's
// warp). The falling columns agree to rounding; once they topple the pile is chaotic, so what
// is compared is what the presolve is for: as few Newton iterations, as small a worst
// residual, the pile down.
TEST_F(CudaBackendTest, ToppledPileWithPresolveMatchesCpu) {
  auto model = MustCompile(scenes::ToppledPile(1000));
  auto cpu = MustCreate(Backend::kCpu);
  auto gpu = MustCreate(Backend::kCuda);
  ASSERT_TRUE(cpu && gpu);
  const std::vector<WorldId> c = MustCreateWorlds(*cpu, model, 2);
  const std::vector<WorldId> g = MustCreateWorlds(*gpu, model, 2);
  long newton[2] = {0, 0};
  Real worst[2] = {0, 0};
  for (int step = 1; step <= 80; ++step) {
    ASSERT_TRUE(cpu->StepAll(1).ok());
    ASSERT_TRUE(gpu->StepAll(1).ok());
    for (int w = 0; w < 2; ++w) {
      const WorldStats sc = *cpu->GetStats(c[w]), sg = *gpu->GetStats(g[w]);
      newton[0] += sc.newton_iterations;
      newton[1] += sg.newton_iterations;
      worst[0] = std::max(worst[0], sc.residual);
      worst[1] = std::max(worst[1], sg.residual);
      EXPECT_EQ(sg.flags & kWorldNonFinite, 0u) << "step " << step;
    }
    if (step == 30) {  // still falling in columns, the lowest spheres landed
      for (int w = 0; w < 2; ++w)
        ExpectClose(cpu->GetBodyState(c[w])->pose, gpu->GetBodyState(g[w])->pose, 1e-6,
                    "pile pose at step 30");
    }
  }
  Real highest[2] = {0, 0};
  for (int w = 0; w < 2; ++w) {
    const std::vector<Real> pc = cpu->GetBodyState(c[w])->pose, pg = gpu->GetBodyState(g[w])->pose;
    for (size_t b = 0; b < pc.size() / 7; ++b) {
      highest[0] = std::max(highest[0], pc[7 * b + 2]);
      highest[1] = std::max(highest[1], pg[7 * b + 2]);
    }
  }
  std::printf(
      "toppled pile, 2 worlds x 80 steps: Newton iterations cpu %ld gpu %ld, worst residual cpu "
      "%.2e gpu %.2e m/s, highest sphere cpu %.3f gpu %.3f m\n",
      newton[0], newton[1], static_cast<double>(worst[0]), static_cast<double>(worst[1]),
      static_cast<double>(highest[0]), static_cast<double>(highest[1]));
  EXPECT_LT(worst[1], 0.05);
  EXPECT_LT(highest[1], 0.25);
  EXPECT_LT(newton[1], newton[0] * 3 / 2);
}

// Adhesion on the device (ContactTest's boxes under a ceiling on the CPU): two 1 kg boxes
// under a ceiling (its normal down), their margin and gap 2 cm, each pulled up by its pad; the
// first 5 mm under it rises and hangs pressed against it, the second 3 cm under it, out of
// reach, falls. The pull is spread over the contact points within the margin, which the
// device's contact set must hold as the CPU's does. (MuJoCo's active_adhesion.xml is no
// parity scene: its crate of 64 frictionless particles is chaotic, and the two backends'
// rounding parts the particles by centimetres within a second.)
TEST_F(CudaBackendTest, AdhesionMatchesCpu) {
  ModelDesc d;
  d.options.timestep = 0.01;
  ShapeDesc ceiling;
  ceiling.type = ShapeType::kPlane;
  ceiling.pose.pos = {0, 0, 1};
  ceiling.pose.quat = quat_from_axis_angle({1, 0, 0}, Real(3.14159265358979323846));
  d.shapes.push_back(ceiling);
  for (int i = 0; i < 2; ++i) {
    const Real below = i == 0 ? Real(0.005) : Real(0.03);
    BodyDesc b;
    b.mass = 1;
    b.inertia = BoxInertia(1, {0.1, 0.1, 0.1});
    b.pose.pos = {Real(0.5) * i, 0, 1 - Real(0.1) - below};
    d.bodies.push_back(b);
    ShapeDesc box;
    box.body = i;
    box.type = ShapeType::kBox;
    box.size = {0.1, 0.1, 0.1};
    box.margin = box.gap = 0.02;
    d.shapes.push_back(box);
    ActuatorDesc pad;
    pad.adhesion_body = i;
    pad.gear = 30;
    pad.ctrl_limited = true;
    pad.ctrl_min = 0;
    pad.ctrl_max = 1;
    d.actuators.push_back(pad);
  }
  ExpectDrivenParity(d, {{1, 1}, {0.5, 1}}, 2, 100, "boxes under a ceiling", 1e-5);
  // the forces reported: each pad's pull, ctrl x gear, on both backends
  auto model = MustCompile(d);
  auto cpu = MustCreate(Backend::kCpu);
  auto gpu = MustCreate(Backend::kCuda);
  ASSERT_TRUE(cpu && gpu);
  const WorldId c = MustCreateWorlds(*cpu, model, 1)[0];
  const WorldId g = MustCreateWorlds(*gpu, model, 1)[0];
  ASSERT_TRUE(cpu->SetControls(c, std::vector<Real>{1, 1}).ok());
  ASSERT_TRUE(gpu->SetControls(g, std::vector<Real>{1, 1}).ok());
  ASSERT_TRUE(cpu->StepAll(50).ok());
  ASSERT_TRUE(gpu->StepAll(50).ok());
  ExpectClose(*cpu->GetActuatorForces(c), *gpu->GetActuatorForces(g), 1e-9, "pad forces");
  // hanging: its top against the ceiling
  EXPECT_NEAR(gpu->GetBodyState(g)->pose[2] + Real(0.1), 1, 1e-3);
  EXPECT_LT(gpu->GetBodyState(g)->pose[7 + 2], Real(0.5));  // out of reach: fell
}

TEST_F(CudaBackendTest, HumanoidMatchesCpu) {
#if defined(AXION_TEST_HAVE_MJCF)
  const std::string path = "/usr/share/mujoco/model/humanoid/humanoid.xml";
  if (std::FILE* f = std::fopen(path.c_str(), "r")) {
    std::fclose(f);
  } else {
    GTEST_SKIP() << path << " is not installed";
  }
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  // 300 steps: the fall, the landing and 1 s lying on the floor, where the contacts of the
  // feet, hands and pelvis close loops through the floor (the loop factor)
  ExpectParity(MustCompile(imported->model), 2, 1e-5, 1e-4, 300);
#else
  GTEST_SKIP() << "this build has no MJCF importer";
#endif
}

// A sub-step count above one replays the step on the device without returning to the host in
// between; it must equal the same number of single steps.
TEST_F(CudaBackendTest, SubstepsEqualSingleSteps) {
  auto model = MustCompile(scenes::Stack(10));
  auto a = MustCreate(Backend::kCuda);
  auto b = MustCreate(Backend::kCuda);
  ASSERT_TRUE(a && b);
  WorldId wa = MustCreateWorlds(*a, model, 1)[0];
  WorldId wb = MustCreateWorlds(*b, model, 1)[0];
  ASSERT_TRUE(a->StepAll(25).ok());
  for (int i = 0; i < 25; ++i) ASSERT_TRUE(b->StepAll(1).ok());
  ExpectSameWorld(*a, wa, *b, wb, "stack");
}

// Only the listed worlds move, each by its own step count.
TEST_F(CudaBackendTest, StepsOnlyTheListedWorlds) {
  auto model = MustCompile(Pendulum());
  auto gpu = MustCreate(Backend::kCuda);
  ASSERT_TRUE(gpu);
  std::vector<WorldId> ids = MustCreateWorlds(*gpu, model, 3);
  std::vector<WorldId> listed{ids[0], ids[2]};
  std::vector<int> steps{7, 3};
  ASSERT_TRUE(gpu->Step(listed, steps).ok());
  EXPECT_EQ(gpu->GetStats(ids[0])->step_count, 7u);
  EXPECT_EQ(gpu->GetStats(ids[1])->step_count, 0u);
  EXPECT_EQ(gpu->GetStats(ids[2])->step_count, 3u);
  EXPECT_DOUBLE_EQ(gpu->GetStats(ids[0])->time, 7 * 0.01);
  EXPECT_EQ(gpu->GetStats(ids[1])->time, 0);
  EXPECT_DOUBLE_EQ(gpu->GetStats(ids[2])->time, 3 * 0.01);
  // The unlisted world has not moved from its initial pose.
  BodyState rest = *gpu->GetBodyState(ids[1]);
  EXPECT_EQ(rest.pose[0], 1);
  EXPECT_EQ(rest.pose[2], 0);
}

// Two runs of the same 1024-world batch are bit-identical, and a world's result does not depend
// on the batch it runs in (world 517 of the batch equals the same world stepped alone).
TEST_F(CudaBackendTest, LargeBatchIsBitIdenticalRunToRun) {
  constexpr int kWorlds = 1024;
  constexpr int kSteps = 40;
  auto model = MustCompile(scenes::Stack(10));
  auto run = [&](std::unique_ptr<Simulator>& sim, std::vector<WorldId>& ids) {
    sim = MustCreate(Backend::kCuda);
    ASSERT_TRUE(sim);
    ids = MustCreateWorlds(*sim, model, kWorlds);
    PerturbWorlds(*sim, ids);
    ASSERT_TRUE(sim->StepAll(kSteps).ok());
  };
  std::unique_ptr<Simulator> first, second;
  std::vector<WorldId> first_ids, second_ids;
  run(first, first_ids);
  run(second, second_ids);
  ASSERT_EQ(first_ids.size(), static_cast<size_t>(kWorlds));
  ASSERT_EQ(second_ids.size(), static_cast<size_t>(kWorlds));
  for (int w = 0; w < kWorlds; ++w) {
    ExpectSameWorld(*first, first_ids[w], *second, second_ids[w], "world " + std::to_string(w));
    if (HasFailure()) return;  // one world's report is enough
  }
  auto alone = MustCreate(Backend::kCuda);
  ASSERT_TRUE(alone);
  WorldId single = MustCreateWorlds(*alone, model, 1)[0];
  BodyState st = *alone->GetBodyState(single);
  Perturb(st, 517);
  ASSERT_TRUE(alone->SetBodyState(single, st).ok());
  ASSERT_TRUE(alone->StepAll(kSteps).ok());
  ExpectSameWorld(*first, first_ids[517], *alone, single, "world 517 alone");
}

// Steps `worlds` perturbed copies of `model` twice, with the environment variable `variable` at
// `first` and then at `second`, and expects the same bits.
void ExpectSameBitsUnder(std::shared_ptr<const Model> model, int worlds, int steps,
                         const char* variable, const char* first, const char* second) {
  ASSERT_NE(model, nullptr);
  auto run = [&](const char* value, std::unique_ptr<Simulator>& sim, std::vector<WorldId>& ids) {
    setenv(variable, value, 1);
    sim = MustCreate(Backend::kCuda);
    ASSERT_TRUE(sim);
    ids = MustCreateWorlds(*sim, model, worlds);
    PerturbWorlds(*sim, ids);
    for (int step = 0; step < steps; ++step) ASSERT_TRUE(sim->StepAll(1).ok());
  };
  std::unique_ptr<Simulator> a, b;
  std::vector<WorldId> a_ids, b_ids;
  run(first, a, a_ids);
  run(second, b, b_ids);
  unsetenv(variable);
  ASSERT_EQ(a_ids.size(), b_ids.size());
  for (size_t w = 0; w < a_ids.size(); ++w) {
    ExpectSameWorld(*a, a_ids[w], *b, b_ids[w],
                    std::string(variable) + "=" + second + ", world " + std::to_string(w));
    if (::testing::Test::HasFailure()) return;  // one world's report is enough
  }
}
// The batch cut into slices (AXION_CUDA_SLICES: branches of the captured graph, each with its
// own Newton and line-search loops) gives the same bits as one slice: a world's arithmetic does
// not depend on which worlds share its launches. Uneven slices of perturbed stacks, and the
// humanoid through its fall and landing, where worlds take different Newton iterations.
TEST_F(CudaBackendTest, SlicesGiveTheSameBitsAsOneSlice) {
  ExpectSameBitsUnder(MustCompile(scenes::Stack(10)), 1000, 40, "AXION_CUDA_SLICES", "1", "7");
#if defined(AXION_TEST_HAVE_MJCF)
  absl::StatusOr<ImportResult> imported =
      LoadMjcfFile("/usr/share/mujoco/model/humanoid/humanoid.xml");
  if (imported.ok()) {
    ExpectSameBitsUnder(MustCompile(imported->model), 64, 120, "AXION_CUDA_SLICES", "1", "3");
  }
#endif
}

// A full batch runs the linear solve on half warps and the tree factor on teams of 4 lanes
// (NarrowTeams in backend_cuda.cu); a world's results do not depend on its team's width. The
// humanoids land, their feet sliding (GCR), the chains hang from the world (a fixed root), the
// stacks stand on contacts alone.
TEST_F(CudaBackendTest, NarrowTeamsGiveTheSameBitsAsWarps) {
  ExpectSameBitsUnder(MustCompile(scenes::Stack(10)), 100, 40, "AXION_CUDA_TEAMS", "wide",
                      "narrow");
  ExpectSameBitsUnder(MustCompile(scenes::Chain(10)), 100, 40, "AXION_CUDA_TEAMS", "wide",
                      "narrow");
#if defined(AXION_TEST_HAVE_MJCF)
  absl::StatusOr<ImportResult> imported =
      LoadMjcfFile("/usr/share/mujoco/model/humanoid/humanoid.xml");
  if (imported.ok()) {
    ExpectSameBitsUnder(MustCompile(imported->model), 64, 150, "AXION_CUDA_TEAMS", "wide",
                        "narrow");
  }
#endif
}

// The row pass as one kernel over every row kind (AXION_CUDA_ROW_SPLIT=0) or as the common
// kinds' kernel and then the rest's (the default): the same bits. Stacks (normal and friction
// rows), the robot joints (limits, a cone, couplings) and with tendons (tendon rows), spinning
// spheres (torsion and rolling rows) and the humanoid.
TEST_F(CudaBackendTest, RowKindsSplitGivesTheSameBits) {
  ExpectSameBitsUnder(MustCompile(scenes::Stack(10)), 100, 40, "AXION_CUDA_ROW_SPLIT", "0", "1");
  ExpectSameBitsUnder(MustCompile(scenes::RobotJoints()), 16, 100, "AXION_CUDA_ROW_SPLIT", "0",
                      "1");
  ExpectSameBitsUnder(MustCompile(scenes::RobotJointsWithTendons()), 16, 100,
                      "AXION_CUDA_ROW_SPLIT", "0", "1");
  ExpectSameBitsUnder(MustCompile(scenes::SpinningSpheresInBox(30)), 8, 60, "AXION_CUDA_ROW_SPLIT",
                      "0", "1");
#if defined(AXION_TEST_HAVE_MJCF)
  absl::StatusOr<ImportResult> imported =
      LoadMjcfFile("/usr/share/mujoco/model/humanoid/humanoid.xml");
  if (imported.ok()) {
    ExpectSameBitsUnder(MustCompile(imported->model), 64, 150, "AXION_CUDA_ROW_SPLIT", "0", "1");
  }
#endif
}

// Once most worlds are done, a step's remaining Newton iterations run world by world: each world
// still iterating finishes its solve alone on its warp, in one launch (AXION_BATCHED_NEWTON_TRIPS:
// the passes over the batch stop after that many trips; AXION_BATCHED_NEWTON_WORLDS: once fewer
// than that many worlds still iterate). The same bits as passes over the whole
// batch, with warps and with narrow teams before the split: perturbed stacks, a pile of spheres
// (contacts closing loops), the humanoid through its fall and landing.
TEST_F(CudaBackendTest, NewtonFinishedWorldByWorldGivesTheSameBits) {
  const char* all = "1000000";
  ExpectSameBitsUnder(MustCompile(scenes::Stack(10)), 100, 40, "AXION_BATCHED_NEWTON_TRIPS", all,
                      "0");
  ExpectSameBitsUnder(MustCompile(scenes::SpheresInBox(12)), 64, 60, "AXION_BATCHED_NEWTON_TRIPS",
                      all, "2");
#if defined(AXION_TEST_HAVE_MJCF)
  absl::StatusOr<ImportResult> imported =
      LoadMjcfFile("/usr/share/mujoco/model/humanoid/humanoid.xml");
  if (imported.ok()) {
    auto humanoid = MustCompile(imported->model);
    ExpectSameBitsUnder(humanoid, 64, 150, "AXION_BATCHED_NEWTON_TRIPS", all, "3");
    setenv("AXION_CUDA_TEAMS", "narrow", 1);
    ExpectSameBitsUnder(humanoid, 64, 150, "AXION_BATCHED_NEWTON_TRIPS", all, "2");
    unsetenv("AXION_CUDA_TEAMS");
    // the passes until fewer than 16 of the 64 worlds iterate (AXION_BATCHED_NEWTON_WORLDS)
    setenv("AXION_BATCHED_NEWTON_TRIPS", all, 1);
    ExpectSameBitsUnder(humanoid, 64, 150, "AXION_BATCHED_NEWTON_WORLDS", "1", "16");
    unsetenv("AXION_BATCHED_NEWTON_TRIPS");
  }
#endif
  setenv("AXION_BATCHED_NEWTON_TRIPS", all, 1);
  ExpectSameBitsUnder(MustCompile(scenes::SpheresInBox(12)), 64, 60, "AXION_BATCHED_NEWTON_WORLDS",
                      "1", "8");
  unsetenv("AXION_BATCHED_NEWTON_TRIPS");
}

// A snapshot taken on the device restores bit-exactly, on the device and on the CPU.
TEST_F(CudaBackendTest, SnapshotRestoresBitExactly) {
  auto model = MustCompile(scenes::Chain(10));
  auto gpu = MustCreate(Backend::kCuda);
  ASSERT_TRUE(gpu);
  std::vector<WorldId> ids = MustCreateWorlds(*gpu, model, 2);
  ASSERT_TRUE(gpu->StepAll(20).ok());
  absl::StatusOr<std::string> snap = gpu->Snapshot(ids[0]);
  ASSERT_TRUE(snap.ok()) << snap.status();
  BodyState at_snapshot = *gpu->GetBodyState(ids[0]);
  std::vector<WorldId> first{ids[0]};
  ASSERT_TRUE(gpu->Step(first, std::vector<int>{30}).ok());
  BodyState expected = *gpu->GetBodyState(ids[0]);
  JointState expected_joints = *gpu->GetJointState(ids[0]);

  // back on the device: into the same world and into the other one
  ASSERT_TRUE(gpu->Restore(ids[0], *snap).ok());
  ASSERT_TRUE(gpu->Restore(ids[1], *snap).ok());
  EXPECT_EQ(gpu->GetStats(ids[1])->step_count, 20u);
  ASSERT_TRUE(gpu->StepAll(30).ok());
  for (WorldId id : ids) {
    BodyState st = *gpu->GetBodyState(id);
    ExpectBitIdentical(expected.pose, st.pose, "restored pose");
    ExpectBitIdentical(expected.velocity, st.velocity, "restored velocity");
    ExpectBitIdentical(expected_joints.position, gpu->GetJointState(id)->position,
                       "restored joints");
    EXPECT_EQ(gpu->GetStats(id)->step_count, 50u);
  }

  // onto the CPU: the restored state is the snapshot's state, bit for bit
  auto cpu = MustCreate(Backend::kCpu);
  ASSERT_TRUE(cpu);
  WorldId on_cpu = MustCreateWorlds(*cpu, model, 1)[0];
  ASSERT_TRUE(cpu->Restore(on_cpu, *snap).ok());
  BodyState restored = *cpu->GetBodyState(on_cpu);
  ExpectBitIdentical(at_snapshot.pose, restored.pose, "pose restored on the CPU");
  ExpectBitIdentical(at_snapshot.velocity, restored.velocity, "velocity restored on the CPU");
}

// Reset on the device returns a world to its initial state: it then follows a fresh world.
TEST_F(CudaBackendTest, ResetMatchesAFreshWorld) {
  auto model = MustCompile(scenes::Stack(10));
  auto gpu = MustCreate(Backend::kCuda);
  ASSERT_TRUE(gpu);
  WorldId used = MustCreateWorlds(*gpu, model, 1)[0];
  std::vector<Real> push(6 * model->body_count(), 0);
  push[0] = 3;  // a sideways force on the bottom box
  ASSERT_TRUE(gpu->SetExternalForces(used, push).ok());
  ASSERT_TRUE(gpu->StepAll(30).ok());
  ASSERT_TRUE(gpu->Reset(used).ok());
  WorldStats reset = *gpu->GetStats(used);
  EXPECT_EQ(reset.step_count, 0u);
  EXPECT_EQ(reset.time, 0);
  WorldId fresh = MustCreateWorlds(*gpu, model, 1)[0];
  ExpectSameWorld(*gpu, used, *gpu, fresh, "right after reset");
  ASSERT_TRUE(gpu->StepAll(25).ok());
  ExpectSameWorld(*gpu, used, *gpu, fresh, "25 steps after reset");
}

// Keyframes and joint states are written on the host and reach the device before the next
// step: a keyframe reset, then joint angles and rates set by forward kinematics, give the CPU's
// state on the GPU, and the same motion after it.
TEST_F(CudaBackendTest, KeyframeResetAndJointStateMatchCpu) {
  ModelDesc desc = scenes::Chain(10);
  KeyframeDesc key;
  key.name = "swung";
  key.time = 0.5;
  {
    auto cpu = MustCreate(Backend::kCpu);
    ASSERT_TRUE(cpu);
    auto model = MustCompile(desc);
    WorldId w = MustCreateWorlds(*cpu, model, 1)[0];
    ASSERT_TRUE(cpu->StepAll(40).ok());
    BodyState swung = *cpu->GetBodyState(w);
    key.body_pose = swung.pose;
    key.body_velocity = swung.velocity;
  }
  desc.keyframes.push_back(key);
  auto model = MustCompile(desc);
  auto cpu = MustCreate(Backend::kCpu);
  auto gpu = MustCreate(Backend::kCuda);
  ASSERT_TRUE(cpu && gpu);
  WorldId c = MustCreateWorlds(*cpu, model, 2)[1];
  WorldId g = MustCreateWorlds(*gpu, model, 2)[1];
  ASSERT_TRUE(cpu->StepAll(5).ok());
  ASSERT_TRUE(gpu->StepAll(5).ok());
  for (Simulator* sim : {cpu.get(), gpu.get()}) {
    WorldId w = sim == cpu.get() ? c : g;
    ASSERT_TRUE(sim->Reset(w, "swung").ok());
    JointState joints = *sim->GetJointState(w);
    for (size_t k = 0; k < joints.position.size(); ++k) {
      joints.position[k] += Real(0.02) * static_cast<Real>(k % 3);
      joints.velocity[k] -= Real(0.1) * static_cast<Real>(k % 4);
    }
    ASSERT_TRUE(sim->SetJointState(w, joints).ok());
  }
  ExpectSameWorld(*cpu, c, *gpu, g, "after the keyframe reset and the joint state");
  ASSERT_TRUE(cpu->StepAll(50).ok());
  ASSERT_TRUE(gpu->StepAll(50).ok());
  ExpectClose(cpu->GetBodyState(c)->pose, gpu->GetBodyState(g)->pose, 1e-6, "pose");
  ExpectClose(cpu->GetBodyState(c)->velocity, gpu->GetBodyState(g)->velocity, 1e-5, "velocity");
  EXPECT_EQ(gpu->GetStats(g)->time, cpu->GetStats(c)->time);
}

// New models and options for some worlds of a device batch (domain randomisation) reach the
// device with the state the worlds had: the same trajectories as the CPU backend given the
// same updates.
TEST_F(CudaBackendTest, NewModelsAndOptionsMatchCpu) {
  ModelDesc desc = scenes::Chain(10);
  auto model = MustCompile(desc);
  for (size_t i = 0; i < desc.bodies.size(); ++i) {
    desc.bodies[i].mass *= Real(1) + Real(0.1) * static_cast<Real>(i % 4);
    desc.bodies[i].inertia = Real(1.2) * desc.bodies[i].inertia;
  }
  auto heavier = MustCompile(desc);
  SolverOptions lunar = desc.options;
  lunar.gravity = {0, 0, -1.62};
  auto cpu = MustCreate(Backend::kCpu);
  auto gpu = MustCreate(Backend::kCuda);
  ASSERT_TRUE(cpu && gpu);
  std::vector<WorldId> c = MustCreateWorlds(*cpu, model, 3);
  std::vector<WorldId> g = MustCreateWorlds(*gpu, model, 3);
  ASSERT_TRUE(cpu->StepAll(20).ok());
  ASSERT_TRUE(gpu->StepAll(20).ok());
  for (Simulator* sim : {cpu.get(), gpu.get()}) {
    const std::vector<WorldId>& w = sim == cpu.get() ? c : g;
    std::vector<WorldModelUpdate> updates{{w[0], heavier, std::nullopt}, {w[2], nullptr, lunar}};
    ASSERT_TRUE(sim->SetWorldModels(updates).ok());
  }
  for (int k = 0; k < 3; ++k) ExpectSameWorld(*cpu, c[k], *gpu, g[k], "after the updates");
  ASSERT_TRUE(cpu->StepAll(50).ok());
  ASSERT_TRUE(gpu->StepAll(50).ok());
  for (int k = 0; k < 3; ++k) {
    ExpectClose(cpu->GetBodyState(c[k])->pose, gpu->GetBodyState(g[k])->pose, 1e-6, "pose");
    ExpectClose(cpu->GetBodyState(c[k])->velocity, gpu->GetBodyState(g[k])->velocity, 1e-5,
                "velocity");
  }
}

// Mocap bodies moved on the host reach the device's shapes and joint frames: a paddle pushing a
// ball and a body welded to the paddle, moved every step, as on the CPU.
TEST_F(CudaBackendTest, MocapPosesMatchCpu) {
  auto model = MustCompile(scenes::MocapPaddle());
  auto cpu = MustCreate(Backend::kCpu);
  auto gpu = MustCreate(Backend::kCuda);
  ASSERT_TRUE(cpu && gpu);
  std::vector<WorldId> c = MustCreateWorlds(*cpu, model, 3);
  std::vector<WorldId> g = MustCreateWorlds(*gpu, model, 3);
  for (int step = 1; step <= 40; ++step) {
    for (int k = 0; k < 3; ++k) {
      const std::vector<Real> pose{-0.2 + 0.01 * step * k, 0.0, 0.1, 1, 0, 0, 0};
      ASSERT_TRUE(cpu->SetMocapPoses(c[k], pose).ok());
      ASSERT_TRUE(gpu->SetMocapPoses(g[k], pose).ok());
    }
    ASSERT_TRUE(cpu->StepAll().ok());
    ASSERT_TRUE(gpu->StepAll().ok());
  }
  for (int k = 0; k < 3; ++k) {
    ExpectClose(cpu->GetBodyState(c[k])->pose, gpu->GetBodyState(g[k])->pose, 1e-6, "pose");
    EXPECT_EQ(*gpu->GetMocapPoses(g[k]), *cpu->GetMocapPoses(c[k]));
  }
}

// Creating and destroying worlds between steps re-packs the device arrays and keeps every
// surviving world's state: the result equals a batch that never changed.
TEST_F(CudaBackendTest, CreateAndDestroyWorldsBetweenSteps) {
  auto chain = MustCompile(scenes::Chain(10));
  auto stack = MustCompile(scenes::Stack(10));
  auto changing = MustCreate(Backend::kCuda);
  auto reference = MustCreate(Backend::kCuda);
  ASSERT_TRUE(changing && reference);
  std::vector<WorldId> c1 = MustCreateWorlds(*changing, chain, 3);
  std::vector<WorldId> c2 = MustCreateWorlds(*changing, stack, 2);
  std::vector<WorldId> r1 = MustCreateWorlds(*reference, chain, 3);
  std::vector<WorldId> r2 = MustCreateWorlds(*reference, stack, 2);
  ASSERT_TRUE(changing->StepAll(10).ok());
  ASSERT_TRUE(reference->StepAll(10).ok());
  const size_t bytes_before = changing->memory_bytes();
  EXPECT_GT(bytes_before, 0u);

  // destroy the middle chain world: the device arrays shrink
  ASSERT_TRUE(changing->DestroyWorld(c1[1]).ok());
  EXPECT_LT(changing->memory_bytes(), bytes_before);
  ASSERT_TRUE(changing->StepAll(10).ok());
  ASSERT_TRUE(reference->StepAll(10).ok());

  // add a stack world to both: the device arrays grow
  const size_t bytes_shrunk = changing->memory_bytes();
  WorldId added = MustCreateWorlds(*changing, stack, 1)[0];
  WorldId added_reference = MustCreateWorlds(*reference, stack, 1)[0];
  EXPECT_GT(changing->memory_bytes(), bytes_shrunk);
  ASSERT_TRUE(changing->StepAll(10).ok());
  ASSERT_TRUE(reference->StepAll(10).ok());

  EXPECT_FALSE(changing->HasWorld(c1[1]));
  ExpectSameWorld(*changing, c1[0], *reference, r1[0], "chain 0");
  ExpectSameWorld(*changing, c1[2], *reference, r1[2], "chain 2");
  ExpectSameWorld(*changing, c2[0], *reference, r2[0], "stack 0");
  ExpectSameWorld(*changing, c2[1], *reference, r2[1], "stack 1");
  ExpectSameWorld(*changing, added, *reference, added_reference, "added stack");

  // destroying every world leaves an empty batch that can step and grow again
  for (WorldId id : changing->world_ids()) ASSERT_TRUE(changing->DestroyWorld(id).ok());
  EXPECT_TRUE(changing->StepAll(1).ok());
  WorldId again = MustCreateWorlds(*changing, chain, 1)[0];
  ASSERT_TRUE(changing->StepAll(5).ok());
  EXPECT_EQ(changing->GetStats(again)->step_count, 5u);
}

// Controls and external forces set between steps reach the device: uploaded alone when nothing
// else was written, and still the ones the next step uses when the state is read back between
// writing them and stepping (the read must not bring the device's older copy over them). A
// second actuator pushes the bob through a tilted site (a jet off the rod's plane).
TEST_F(CudaBackendTest, ControlsAndForcesMatchCpu) {
  ModelDesc desc = Pendulum();
  ActuatorDesc motor;
  motor.joint = 0;
  motor.gear = 2;
  desc.actuators.push_back(motor);
  ActuatorDesc jet;
  jet.site_body = 0;
  jet.site_pose = {{0.05, 0.02, 0}, quat_from_axis_angle({0, 1, 0}, Real(0.5))};
  jet.site_wrench = {1, 0, 0.5, 0, 0.05, 0};
  jet.force_limited = true;
  jet.force_min = -0.2;
  jet.force_max = 0.25;
  desc.actuators.push_back(jet);
  auto model = MustCompile(desc);
  auto gpu = MustCreate(Backend::kCuda);
  auto cpu = MustCreate(Backend::kCpu);
  ASSERT_TRUE(gpu && cpu);
  constexpr int kWorlds = 3;
  std::vector<WorldId> g = MustCreateWorlds(*gpu, model, kWorlds);
  std::vector<WorldId> c = MustCreateWorlds(*cpu, model, kWorlds);
  for (int step = 1; step <= 60; ++step) {
    for (int w = 0; w < kWorlds; ++w) {
      const std::vector<Real> ctrl = {Real(0.5) * std::sin(Real(0.1) * step + w),
                                      Real(0.3) * std::cos(Real(0.2) * step - w)};
      ASSERT_TRUE(gpu->SetControls(g[w], ctrl).ok());
      ASSERT_TRUE(cpu->SetControls(c[w], ctrl).ok());
      if (step % 7 == 0) {
        const std::vector<Real> wrench = {0, 0, Real(2) * w, 0, Real(0.1) * w, 0};
        ASSERT_TRUE(gpu->SetExternalForces(g[w], wrench).ok());
        ASSERT_TRUE(cpu->SetExternalForces(c[w], wrench).ok());
      }
      if (step % 5 == w) {
        ASSERT_TRUE(gpu->GetBodyState(g[w]).ok());  // a read in between
      }
      EXPECT_EQ(*gpu->GetControls(g[w]), ctrl) << "step " << step;
    }
    ASSERT_TRUE(gpu->StepAll(1).ok());
    ASSERT_TRUE(cpu->StepAll(1).ok());
  }
  for (int w = 0; w < kWorlds; ++w) {
    const std::string world = "world " + std::to_string(w);
    BodyState sc = *cpu->GetBodyState(c[w]), sg = *gpu->GetBodyState(g[w]);
    ExpectClose(sc.pose, sg.pose, 1e-6, world + " pose");
    ExpectClose(sc.velocity, sg.velocity, 1e-5, world + " velocity");
  }
  // the controls moved the worlds apart: they did arrive
  BodyState first = *gpu->GetBodyState(g[0]), last = *gpu->GetBodyState(g[kWorlds - 1]);
  EXPECT_GT(std::fabs(first.pose[0] - last.pose[0]) + std::fabs(first.pose[2] - last.pose[2]),
            1e-3);
}

// Statistics are current after every Step without reading the state back.
TEST_F(CudaBackendTest, StatisticsAreCurrentAfterEachStep) {
  auto model = MustCompile(scenes::Stack(10));
  auto gpu = MustCreate(Backend::kCuda);
  auto cpu = MustCreate(Backend::kCpu);
  ASSERT_TRUE(gpu && cpu);
  WorldId g = MustCreateWorlds(*gpu, model, 1)[0];
  WorldId c = MustCreateWorlds(*cpu, model, 1)[0];
  int newton_iterations = 0;
  for (int step = 1; step <= 5; ++step) {
    ASSERT_TRUE(gpu->StepAll(1).ok());
    ASSERT_TRUE(cpu->StepAll(1).ok());
    WorldStats sg = *gpu->GetStats(g), sc = *cpu->GetStats(c);
    EXPECT_EQ(sg.step_count, static_cast<uint64_t>(step));
    EXPECT_EQ(sg.time, sc.time);
    EXPECT_EQ(sg.contact_count, sc.contact_count);
    EXPECT_EQ(sg.constraint_rows, sc.constraint_rows);
    EXPECT_EQ(sg.flags, sc.flags);
    // a step whose initial iterate already converges (the stack at rest) takes none
    EXPECT_EQ(sg.newton_iterations, sc.newton_iterations);
    EXPECT_EQ(sg.cr_iterations, sc.cr_iterations);
    newton_iterations += sg.newton_iterations;
    EXPECT_NEAR(sg.residual, sc.residual, 1e-7);
  }
  EXPECT_GT(newton_iterations, 0);
  EXPECT_GE(gpu->GetStats(g)->contact_count, 4);  // the bottom box rests on its four corners
}

// Without a device, asking for the CUDA backend fails with a clear message and auto falls back
// to the CPU.
TEST(CudaUnavailableTest, CudaBackendFailsAndAutoFallsBackToCpu) {
  if (CudaAvailable()) GTEST_SKIP() << "a CUDA device is present: the fallback does not apply";
  SimulatorOptions cuda;
  cuda.backend = Backend::kCuda;
  absl::StatusOr<std::unique_ptr<Simulator>> refused = Simulator::Create(cuda);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("CUDA"));

  SimulatorOptions automatic;
  automatic.backend = Backend::kAuto;
  absl::StatusOr<std::unique_ptr<Simulator>> sim = Simulator::Create(automatic);
  ASSERT_TRUE(sim.ok()) << sim.status();
  EXPECT_EQ((*sim)->backend(), Backend::kCpu);
  WorldId w = MustCreateWorlds(**sim, MustCompile(Pendulum()), 1)[0];
  EXPECT_TRUE((*sim)->StepAll(2).ok());
  EXPECT_EQ((*sim)->GetStats(w)->step_count, 2u);
}

}  // namespace
}  // namespace axion
