// axion-sim run as a user runs it: a process with flags, its report and the files it writes.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "axion/mjcf.h"
#include "axion/model.h"
#include "axion/simulator.h"
#include "gtest/gtest.h"
#include "run_command.h"

namespace axion {
namespace {

const std::string kModels = AXION_TEST_MODELS;
const std::string kBinary = AXION_SIM_BINARY;

// MuJoCo's humanoid (Debian's libmujoco-samples), which the tests below skip without.
const char* const kHumanoid = "/usr/share/mujoco/model/humanoid/humanoid.xml";
bool Installed(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  std::fclose(f);
  return true;
}

// Runs a shell command; returns its exit status and stdout (stderr discarded).
int RunCommand(const std::string& command, std::string* output) {
  return test::RunCommand(command + " 2>/dev/null", output);
}

// --help lists the runner's own flags (abseil lists those of files named like the program,
// which axion-sim's axion_sim.cc is not without being told).
TEST(AxionSimTest, HelpListsTheRunnersFlags) {
  std::string out;
  RunCommand(kBinary + " --help", &out);
  for (const char* flag : {"--model", "--worlds", "--steps", "--noise", "--timestep",
                           "--trajectory", "--newton_iterations", "--step_stats"}) {
    EXPECT_NE(out.find(flag), std::string::npos) << flag << " missing from:\n" << out;
  }
}

TEST(AxionSimTest, ReportsThroughputAndWritesACsvTrajectory) {
  std::string csv = ::testing::TempDir() + "pendulum_trajectory.csv";
  std::string out;
  ASSERT_EQ(RunCommand(kBinary + " --model=" + kModels +
                           "/pendulum.xml --worlds=3 --steps=50 "
                           "--backend=cpu --threads=1 --trajectory=" +
                           csv,
                       &out),
            0)
      << out;
  for (const char* line :
       {"steps per second", "realtime factor", "newton iterations", "cr iterations",
        "line-search trials", "contacts", "constraint rows", "islands", "not converged"}) {
    EXPECT_NE(out.find(line), std::string::npos) << line << " missing from:\n" << out;
  }
  EXPECT_NE(out.find("3 worlds, 50 steps, dt = 0.001"), std::string::npos) << out;
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "step,time,bob.x,bob.y,bob.z,bob.qw,bob.qx,bob.qy,bob.qz,hinge");
  std::vector<std::vector<double>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<double> row;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) row.push_back(std::stod(cell));
    rows.push_back(row);
  }
  ASSERT_EQ(rows.size(), 51u);  // the initial state and one row per step
  EXPECT_EQ(rows[50][0], 50);
  EXPECT_NEAR(rows[50][1], 0.05, 1e-12);

  // The file holds exactly what the engine computes for world 0.
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(kModels + "/pendulum.xml");
  ASSERT_TRUE(imported.ok());
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(imported->model);
  ASSERT_TRUE(model.ok());
  SimulatorOptions options;
  options.backend = Backend::kCpu;
  options.threads = 1;
  auto sim = Simulator::Create(options);
  ASSERT_TRUE(sim.ok());
  auto ids = (*sim)->CreateWorlds(*model, 1);
  ASSERT_TRUE(ids.ok());
  ASSERT_TRUE((*sim)->StepAll(50).ok());
  auto state = (*sim)->GetBodyState(ids->front());
  ASSERT_TRUE(state.ok());
  for (int k = 0; k < 7; ++k) EXPECT_EQ(rows[50][2 + k], state->pose[k]) << k;
}

TEST(AxionSimTest, WritesANpyTrajectoryWithNoiseOnAUrdf) {
  std::string npy = ::testing::TempDir() + "arm_trajectory.npy";
  std::string out;
  ASSERT_EQ(RunCommand(kBinary + " --model=" + kModels +
                           "/two_link_arm.urdf --worlds=2 "
                           "--steps=20 --noise=0.5 --backend=cpu --threads=1 --timestep=0.002 "
                           "--trajectory=" +
                           npy,
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("dt = 0.002"), std::string::npos) << out;
  std::ifstream in(npy, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  uint16_t header_length = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_length) % 64, 0);
  std::string header = bytes.substr(10, header_length);
  // step, time, 2 bodies x 7, 2 joint angles.
  EXPECT_NE(header.find("'shape': (21, 18)"), std::string::npos) << header;
  EXPECT_NE(header.find("'descr': '<f8'"), std::string::npos) << header;
  EXPECT_EQ(header.back(), '\n');
  ASSERT_EQ(bytes.size(), 10u + header_length + 21 * 18 * sizeof(double));
  double last_step;
  std::memcpy(&last_step, bytes.data() + 10 + header_length + 20 * 18 * sizeof(double),
              sizeof(double));
  EXPECT_EQ(last_step, 20);
}

// A robot file has no ground: --floor adds one. The two-link arm with a floating base, which
// otherwise falls 44 m in 3 s, lands on a floor 1 m below it and comes to rest there.
TEST(AxionSimTest, FloorCatchesAFloatingBaseRobot) {
  std::string csv = ::testing::TempDir() + "arm_on_floor.csv";
  std::string out;
  ASSERT_EQ(RunCommand(kBinary + " --model=" + kModels +
                           "/two_link_arm.urdf --floating_base --floor=-1 --steps=300 "
                           "--backend=cpu --threads=1 --trajectory=" +
                           csv,
                       &out),
            0)
      << out;
  // z of the first body (column 4 after step, time, x, y) at steps 200 and 300
  std::ifstream in(csv);
  std::vector<double> z;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream stream(line);
    for (std::string field; std::getline(stream, field, ',');) fields.push_back(field);
    if (fields.size() > 4 && fields[0] != "step") z.push_back(std::stod(fields[4]));
  }
  ASSERT_EQ(z.size(), 301u);
  EXPECT_GT(z[300], -3) << "fell through the floor";
  EXPECT_NEAR(z[300], z[200], 1e-6) << "not at rest";
  EXPECT_NE(RunCommand(kBinary + " --model=" + kModels + "/two_link_arm.urdf --floor=low", &out),
            0);
}

// A URDF whose meshes are package:// paths into a ROS workspace elsewhere: found through
// --package_path, or through $ROS_PACKAGE_PATH without it.
TEST(AxionSimTest, PackagePathFindsAWorkspacesMeshes) {
  const std::string dir = ::testing::TempDir() + "/sim_ws";
  const std::string package = dir + "/src/repo/block_description";
  ASSERT_EQ(std::system(("mkdir -p " + package + "/meshes " + dir + "/robot").c_str()), 0);
  std::ofstream(package + "/package.xml") << "<package><name>block_description</name></package>";
  std::ofstream(package + "/meshes/block.obj")
      << "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nv 0 0 1\nv 1 0 1\nv 0 1 1\nv 1 1 1\n"
         "f 1 2 4 3\nf 5 6 8 7\nf 1 2 6 5\nf 3 4 8 7\nf 1 3 7 5\nf 2 4 8 6\n";
  const std::string urdf = dir + "/robot/block.urdf";
  std::ofstream(urdf) << R"(<robot name="r"><link name="block"><inertial><mass value="1"/>
      <inertia ixx="0.2" iyy="0.2" izz="0.2"/></inertial><collision><geometry>
      <mesh filename="package://block_description/meshes/block.obj"/></geometry></collision>
      </link></robot>)";
  const std::string run = kBinary + " --model=" + urdf +
                          " --floating_base --floor=-1 --steps=10 --backend=cpu --threads=1";
  std::string out;
  EXPECT_NE(RunCommand("env -u ROS_PACKAGE_PATH -u AMENT_PREFIX_PATH " + run, &out), 0) << out;
  EXPECT_EQ(RunCommand(run + " --package_path=/nonexistent:" + dir + "/src", &out), 0) << out;
  EXPECT_NE(out.find("2 shapes"), std::string::npos) << out;  // the block's hull and the floor
  EXPECT_EQ(RunCommand("env ROS_PACKAGE_PATH=" + dir + "/src " + run, &out), 0) << out;
}

TEST(AxionSimTest, PreconditionerFlagIsAppliedAndReported) {
  std::string out;
  const std::string base =
      kBinary + " --model=" + kModels + "/pendulum.xml --steps=20 --backend=cpu --threads=1";
  ASSERT_EQ(RunCommand(base, &out), 0) << out;
  EXPECT_NE(out.find("preconditioner = tree"), std::string::npos) << out;  // the default
  ASSERT_EQ(RunCommand(base + " --preconditioner=jacobi", &out), 0) << out;
  EXPECT_NE(out.find("preconditioner = jacobi"), std::string::npos) << out;
  EXPECT_NE(out.find("non-finite          : 0 world-steps"), std::string::npos) << out;
  ASSERT_EQ(RunCommand(base + " --preconditioner=tree", &out), 0) << out;
  EXPECT_NE(out.find("preconditioner = tree"), std::string::npos) << out;

  EXPECT_NE(RunCommand(base + " --preconditioner=ilu", &out), 0);
  test::RunCommand(base + " --preconditioner=ilu 2>&1", &out);
  EXPECT_NE(out.find("--preconditioner='ilu': expected tree or jacobi"), std::string::npos) << out;
}

// --contact_capacity caps each world's contacts; the humanoid lying on the floor has more than
// two, so the surplus is reported as overflow, and the model's own capacity has none.
TEST(AxionSimTest, ContactCapacityFlagCapsContactsAndReportsOverflow) {
  const std::string humanoid = kHumanoid;
  if (!Installed(humanoid)) GTEST_SKIP() << humanoid << " is not installed";
  const std::string base =
      kBinary + " --model=" + humanoid + " --steps=150 --backend=cpu --threads=1";
  std::string out;
  ASSERT_EQ(RunCommand(base, &out), 0) << out;
  EXPECT_NE(out.find("contact overflow    : 0 world-steps"), std::string::npos) << out;
  ASSERT_EQ(RunCommand(base + " --contact_capacity=2", &out), 0) << out;
  EXPECT_EQ(out.find("contact overflow    : 0 world-steps"), std::string::npos) << out;
  EXPECT_NE(out.find("contact overflow    : "), std::string::npos) << out;
  EXPECT_NE(RunCommand(base + " --contact_capacity=-2", &out), 0);
}

// Runs axion-sim on the humanoid, one world on one CPU thread, with `flags` (its report into
// *out), and reads the figure after `label`.
void RunHumanoidReport(const std::string& flags, const std::string& label, std::string* out,
                       double* figure) {
  ASSERT_EQ(
      RunCommand(kBinary + " --model=" + kHumanoid + " --backend=cpu --threads=1 " + flags, out), 0)
      << *out;
  const size_t at = out->find(label);
  ASSERT_NE(at, std::string::npos) << *out;
  *figure = std::stod(out->substr(at + label.size()));
}

// The humanoid as axion-sim steps it, through the public API: one world of a CPU simulator of
// one thread.
struct HumanoidWorld {
  std::shared_ptr<const Model> model;
  std::unique_ptr<Simulator> sim;
  WorldId id = 0;
};
void CreateHumanoidWorld(HumanoidWorld* world) {
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(kHumanoid);
  ASSERT_TRUE(imported.ok()) << imported.status();
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(imported->model);
  ASSERT_TRUE(model.ok()) << model.status();
  auto sim = Simulator::Create({.backend = Backend::kCpu, .threads = 1});
  ASSERT_TRUE(sim.ok()) << sim.status();
  auto ids = (*sim)->CreateWorlds(*model, 1);
  ASSERT_TRUE(ids.ok()) << ids.status();
  world->model = *model;
  world->sim = std::move(*sim);
  world->id = ids->front();
}

// --report_depth prints the deepest contact penetration of the run: the same figure as the
// engine's contacts give through the API for the humanoid's landing, and a small one (its
// contacts are solved to the Newton tolerance).
TEST(AxionSimTest, ReportDepthIsTheDeepestContactOfTheRun) {
  if (!Installed(kHumanoid)) GTEST_SKIP() << kHumanoid << " is not installed";
  constexpr int kSteps = 250;
  std::string out;
  double reported = 0;
  ASSERT_NO_FATAL_FAILURE(RunHumanoidReport("--steps=" + std::to_string(kSteps) + " --report_depth",
                                            "deepest contact     : ", &out, &reported));

  HumanoidWorld world;
  ASSERT_NO_FATAL_FAILURE(CreateHumanoidWorld(&world));
  double deepest = 0;
  int penetrating = 0;
  for (int s = 0; s < kSteps; ++s) {
    ASSERT_TRUE(world.sim->StepAll(1).ok());
    auto contacts = world.sim->GetContacts(world.id);
    ASSERT_TRUE(contacts.ok());
    for (const ContactReport& c : *contacts) {
      deepest = std::max(deepest, -double(c.gap));
      penetrating += c.gap < 0;
    }
  }
  ASSERT_GT(penetrating, 0) << "the humanoid has not landed";
  EXPECT_NEAR(reported, deepest, 1e-5 * deepest);  // printed to 6 digits
  EXPECT_LT(deepest, 1e-3);
}

// --contact_compliance makes every contact compliant in the normal direction: the humanoid
// landing on the floor sinks by compliance x force (11 mm at 1e-5 m/N under the landing's
// force) where rigid contacts hold it within a millimetre; a negative value is refused.
TEST(AxionSimTest, ContactComplianceFlagLetsContactsSinkUnderLoad) {
  if (!Installed(kHumanoid)) GTEST_SKIP() << kHumanoid << " is not installed";
  std::string out;
  double rigid = 0, compliant = 0;
  ASSERT_NO_FATAL_FAILURE(
      RunHumanoidReport("--steps=300 --report_depth", "deepest contact     : ", &out, &rigid));
  ASSERT_NO_FATAL_FAILURE(RunHumanoidReport("--steps=300 --report_depth --contact_compliance=1e-5",
                                            "deepest contact     : ", &out, &compliant));
  EXPECT_LT(rigid, 1e-3);
  EXPECT_GT(compliant, 2e-3);
  EXPECT_LT(compliant, 5e-2);
  EXPECT_NE(RunCommand(kBinary + " --model=" + kHumanoid + " --contact_compliance=-2", &out), 0);
  test::RunCommand(kBinary + " --model=" + kHumanoid + " --contact_compliance=-2 2>&1", &out);
  EXPECT_NE(out.find("--contact_compliance must be finite and >= 0"), std::string::npos) << out;
}

// --cr_tolerance sets how exactly each Newton iteration's linear solve is taken: the landing
// humanoid's contacts leave the tree solve inexact, and a tolerance of 1e-9 takes more CR
// iterations per step than the default 1e-3; a negative or non-finite value is refused.
TEST(AxionSimTest, CrToleranceFlagSetsTheLinearSolvesAccuracy) {
  if (!Installed(kHumanoid)) GTEST_SKIP() << kHumanoid << " is not installed";
  const std::string kLabel = "cr iterations       : ";
  std::string out;
  double loose = 0, tight = 0;
  ASSERT_NO_FATAL_FAILURE(RunHumanoidReport("--steps=300 --noise=0.01", kLabel, &out, &loose));
  ASSERT_NO_FATAL_FAILURE(
      RunHumanoidReport("--steps=300 --noise=0.01 --cr_tolerance=1e-9", kLabel, &out, &tight));
  EXPECT_GT(tight, 1.2 * loose);
  for (const char* bad : {"-1", "nan"}) {
    EXPECT_NE(RunCommand(kBinary + " --model=" + kHumanoid + " --cr_tolerance=" + bad, &out), 0);
    test::RunCommand(kBinary + " --model=" + kHumanoid + " --cr_tolerance=" + bad + " 2>&1", &out);
    EXPECT_NE(out.find("--cr_tolerance must be finite and >= 0"), std::string::npos) << out;
  }
}

// --report_limits prints the largest joint-limit violation of the run: the same figure as the
// engine's joint positions give through the API (JointLimitViolation) for the humanoid's drop
// under control noise, whose limbs reach their stops, and a small one (the stops are solved to
// the Newton tolerance).
TEST(AxionSimTest, ReportLimitsIsTheLargestLimitViolationOfTheRun) {
  if (!Installed(kHumanoid)) GTEST_SKIP() << kHumanoid << " is not installed";
  constexpr int kSteps = 300;
  constexpr double kNoise = 0.3;
  constexpr int kSeed = 5;
  std::string out;
  double reported = 0;
  ASSERT_NO_FATAL_FAILURE(RunHumanoidReport(
      "--steps=" + std::to_string(kSteps) + " --noise=0.3 --seed=5 --report_limits",
      "limit violation     : ", &out, &reported));
  EXPECT_NE(out.find(" rad, 0 m"), std::string::npos) << out;  // the humanoid has no slides

  HumanoidWorld world;
  ASSERT_NO_FATAL_FAILURE(CreateHumanoidWorld(&world));
  const Model& model = *world.model;
  // axion-sim's control noise: uniform in the middle kNoise of each ctrlrange, drawn in
  // actuator order from a mt19937_64 seeded with --seed
  const std::vector<ActuatorDesc>& actuators = model.desc().actuators;
  std::mt19937_64 rng(kSeed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<Real> ctrl(actuators.size());
  double largest = 0;
  int at_a_stop = 0;  // steps with some hinge within 1e-3 rad of its stop
  for (int s = 0; s < kSteps; ++s) {
    for (size_t a = 0; a < actuators.size(); ++a) {
      const ActuatorDesc& act = actuators[a];
      const double center = act.ctrl_limited ? 0.5 * (act.ctrl_min + act.ctrl_max) : 0.0;
      const double radius = act.ctrl_limited ? 0.5 * (act.ctrl_max - act.ctrl_min) : 1.0;
      ctrl[a] = static_cast<Real>(center + kNoise * radius * uniform(rng));
    }
    ASSERT_TRUE(world.sim->SetControls(world.id, ctrl).ok());
    ASSERT_TRUE(world.sim->StepAll(1).ok());
    auto joints = world.sim->GetJointState(world.id);
    ASSERT_TRUE(joints.ok());
    auto violation = JointLimitViolation(model, joints->position);
    ASSERT_TRUE(violation.ok()) << violation.status();
    EXPECT_EQ(violation->linear, 0);
    largest = std::max(largest, double(violation->angular));
    bool near_stop = false;
    for (int j = 0; j < model.joint_count(); ++j) {
      const JointDesc& joint = model.desc().joints[j];
      if (joint.type != JointType::kRevolute || !joint.limited) continue;
      const Real q = joints->position[model.joint_position_offset()[j]];
      near_stop = near_stop || q < joint.lower[0] + 1e-3 || q > joint.upper[0] - 1e-3;
    }
    at_a_stop += near_stop;
  }
  ASSERT_GT(at_a_stop, 0) << "no hinge reached its stop";
  EXPECT_NEAR(reported, largest, 1e-5 * largest + 1e-300);  // printed to 6 digits
  EXPECT_LT(largest, 1e-4);
}

// At 0.16 s (32 times the model's step) limbs swung by noisy controls close gaps within a step
// that the speculative test, judging from the step's start, leaves out of the contact set: a
// redo (SolverOptions::contact_redos, on by default) takes such a step again with those pairs.
// Which seed meets a missed contact is chaos, and any change to the solver's iterates, the
// contact set or the model moves it. Since the speculative test counts each body's own approach
// against the other held still (kernels_contact.h), limbs falling together join one step early
// and such misses became rare: with the head and hands merged into their parents (the default)
// seeds 1-40 met none deeper than 5.7 mm without redos (before: seeds 25-28 up to 15 mm and
// more, seed 28 a limb 31.8 mm deep), and with them on fixed joints seeds 5, 109, 111 and 136 of
// 1-200 meet one deeper than 9 mm (seed 5 42.5 mm, which redos bring to 0.02 mm; before an
// undone attempt returned to its start's joint impulses it was seed 71, 23.7 mm, before rows
// decoupled from the rest were held out of the linear solve seed 1, 21.8 mm, before the
// linear solve's forcing moved to 1e-3 seed 375, 13.3 mm, and before the tree solve took its
// decoupled rows exactly seed 33, 11.9 mm). Each step here starts whole
// (--halving_carryover=false): with the level carried over, the steps after a halved one are
// shorter and miss less. The Newton tail is off for the same reason.
TEST(AxionSimTest, ContactRedosKeepLimbsOutOfEachOtherAtLongSteps) {
  if (!Installed(kHumanoid)) GTEST_SKIP() << kHumanoid << " is not installed";
  double deepest[2] = {0, 0};  // without, with redos (m)
  double redone = 0;
  for (int redos : {0, 1}) {
    std::string out;
    ASSERT_NO_FATAL_FAILURE(RunHumanoidReport(
        "--timestep=0.16 --steps=42 --noise=0.01 --halving_carryover=false "
        "--newton_tail_iterations=0 --merge_welded_bodies=false --seed=5 --report_depth "
        "--contact_redos=" +
            std::to_string(redos),
        "deepest contact     : ", &out, &deepest[redos]));
    const std::string label = "redone              : ";
    const size_t at = out.find(label);
    ASSERT_NE(at, std::string::npos) << out;
    const double count = std::stod(out.substr(at + label.size()));
    if (redos == 0) {
      EXPECT_EQ(count, 0) << out;
    }
    redone += redos * count;
  }
  std::printf(
      "humanoid at 0.16 s, seed 5: deepest contact %.4f m without redos, %.4f m with "
      "(%g steps redone)\n",
      deepest[0], deepest[1], redone);
  EXPECT_GT(deepest[0], 0.009);
  EXPECT_LT(deepest[1], 0.005);
  EXPECT_GE(redone, 1);
}

// Seed 310's first step of 0.64 s lands the figure in 13 sub-steps: without strict decrease
// after a cycle, a sub-step cycles through trials that line_search_growth lets pass and leaves a
// contact 14.4 mm in the floor. Once a cycle shows, strict decrease
// (SolverOptions::strict_after_cycle, on by default) takes only decreasing trials and nothing
// ends deeper than 1e-9 m. Which seed meets such a cycle is chaos: any change to the solver's
// iterates or the contact set moves it (before the speculative test counted each body's own
// approach, it was seed 5, a hand 35.6 mm deep; seeds 263 and 306 show it now as well, 13.6
// and 14.2 mm). It is the humanoid with its head and hands on fixed joints
// (--merge_welded_bodies=false): merged into their parents, as by default, no seed of 1-150 left a
// contact deeper than 1 cm over three steps of 0.64 s.
TEST(AxionSimTest, StrictSearchAfterACycleKeepsALandingStepOutOfTheFloor) {
  if (!Installed(kHumanoid)) GTEST_SKIP() << kHumanoid << " is not installed";
  double deepest[2] = {0, 0};  // without, with strict decrease after a cycle (m)
  for (int strict : {0, 1}) {
    std::string out;
    ASSERT_NO_FATAL_FAILURE(RunHumanoidReport(
        std::string("--timestep=0.64 --steps=1 --noise=0.01 --seed=310 --report_depth "
                    "--merge_welded_bodies=false --strict_after_cycle=") +
            (strict ? "true" : "false"),
        "deepest contact     : ", &out, &deepest[strict]));
  }
  std::printf(
      "humanoid, seed 310, a landing step of 0.64 s: deepest contact %.4f m without strict "
      "decrease after a cycle, %.2g m with\n",
      deepest[0], deepest[1]);
  EXPECT_GT(deepest[0], 0.012);
  EXPECT_LT(deepest[1], 0.005);
}

// A CSV file's columns by name.
std::map<std::string, std::vector<double>> ReadCsvColumns(const std::string& path,
                                                          std::vector<std::string>* names) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::stringstream header(line);
  for (std::string name; std::getline(header, name, ',');) names->push_back(name);
  std::map<std::string, std::vector<double>> columns;
  while (std::getline(in, line)) {
    std::stringstream row(line);
    size_t k = 0;
    for (std::string cell; std::getline(row, cell, ',') && k < names->size(); ++k) {
      columns[(*names)[k]].push_back(std::stod(cell));
    }
  }
  return columns;
}

// --trajectory_layout=file writes the model file's own bodies and joints, as MuJoCo names and
// orders them: the humanoid's 16 bodies (its head and hands merged into the torso and forearms,
// their poses composed from their carriers') and its 21 hinges (merged into generic joints in
// the engine layout), the free joint left to the torso's pose.
TEST(AxionSimTest, FileLayoutWritesTheFilesBodiesAndJoints) {
  if (!Installed(kHumanoid)) GTEST_SKIP() << kHumanoid << " not installed (libmujoco-samples)";
  const std::string run = kBinary + " --model=" + kHumanoid +
                          " --steps=30 --noise=0.1 --backend=cpu --threads=1 --trajectory=";
  std::string out;
  const std::string file_csv = ::testing::TempDir() + "humanoid_file_layout.csv";
  const std::string engine_csv = ::testing::TempDir() + "humanoid_engine_layout.csv";
  ASSERT_EQ(RunCommand(run + file_csv + " --trajectory_layout=file", &out), 0) << out;
  ASSERT_EQ(RunCommand(run + engine_csv, &out), 0) << out;
  std::vector<std::string> file_names, engine_names;
  auto file = ReadCsvColumns(file_csv, &file_names);
  auto engine = ReadCsvColumns(engine_csv, &engine_names);
  EXPECT_EQ(file_names.size(), 2u + 16 * 7 + 7 + 21);  // MuJoCo's qpos: the root's 7, 21 hinges
  EXPECT_EQ(engine_names.size(), 2u + 13 * 7 + 21);
  ASSERT_EQ(file["step"].size(), 31u);
  EXPECT_EQ(file_names[2], "torso.x");
  EXPECT_EQ(file_names[9], "head.x");
  EXPECT_NE(std::find(file_names.begin(), file_names.end(), "right_hand.qz"), file_names.end());
  // the head starts 0.19 m above the torso (humanoid.xml), and keeps its place on it
  EXPECT_NEAR(file["head.z"][0], 1.69, 1e-12);
  for (size_t k = 0; k < 31; ++k) {
    EXPECT_EQ(file["torso.z"][k], engine["torso.z"][k]);
    // torso pose and head offset (0, 0, 0.19): the head at torso + R(torso) (0, 0, 0.19)
    const double w = file["torso.qw"][k], x = file["torso.qx"][k], y = file["torso.qy"][k],
                 z = file["torso.qz"][k];
    EXPECT_NEAR(file["head.z"][k], file["torso.z"][k] + 0.19 * (1 - 2 * (x * x + y * y)), 1e-12);
    EXPECT_NEAR(file["head.x"][k], file["torso.x"][k] + 0.19 * 2 * (x * z + w * y), 1e-12);
    // MuJoCo's qpos: the root's free joint is the torso's pose; a hinge of its own is the
    // engine's DOF; merged hinges are solved from the body's rotation (MuJoCo's angles, which
    // the engine's rotation vector components match to first order)
    const char* const pose[] = {"x", "y", "z", "qw", "qx", "qy", "qz"};
    for (int c = 0; c < 7; ++c) {
      EXPECT_EQ(file["root." + std::to_string(c)][k], file[std::string("torso.") + pose[c]][k])
          << pose[c];
    }
    EXPECT_EQ(file["right_knee"][k], engine["right_knee"][k]);
    EXPECT_NEAR(file["abdomen_z"][k], engine["abdomen_z+abdomen_y.0"][k], 1e-4);
    EXPECT_NEAR(file["abdomen_y"][k], engine["abdomen_z+abdomen_y.1"][k], 1e-4);
    EXPECT_NEAR(file["left_hip_z"][k], engine["left_hip_x+left_hip_y+left_hip_z.2"][k], 1e-4);
  }
  EXPECT_NE(file["abdomen_z"][30], engine["abdomen_z+abdomen_y.0"][30]);
  EXPECT_GT(std::abs(file["right_knee"][30] - file["right_knee"][0]), 1e-4);  // it moved
  test::RunCommand(run + file_csv + " --trajectory_layout=bodies 2>&1", &out);
  EXPECT_NE(out.find("--trajectory_layout='bodies': expected engine or file"), std::string::npos)
      << out;
}

// --keyframe starts every world at a key of the file: its time and joint coordinates are the
// trajectory's first row; an unknown key is refused by name.
TEST(AxionSimTest, KeyframeFlagStartsTheRunThere) {
  const std::string model = ::testing::TempDir() + "pendulum_with_key.xml";
  std::ofstream(model) << R"(<mujoco>
  <compiler angle="radian"/>
  <option timestep="0.001"/>
  <worldbody>
    <body name="bob" pos="0 0 2">
      <joint name="hinge" axis="0 1 0"/>
      <geom type="sphere" size="0.05" pos="0 0 -1"/>
    </body>
  </worldbody>
  <keyframe><key name="raised" time="2" qpos="1.2" qvel="-0.5"/></keyframe>
</mujoco>)";
  const std::string csv = ::testing::TempDir() + "pendulum_from_key.csv";
  std::string out;
  ASSERT_EQ(RunCommand(kBinary + " --model=" + model +
                           " --steps=10 --worlds=2 --backend=cpu --threads=1 --keyframe=raised "
                           "--trajectory=" +
                           csv,
                       &out),
            0)
      << out;
  std::vector<std::string> names;
  auto columns = ReadCsvColumns(csv, &names);
  ASSERT_EQ(columns["time"].size(), 11u);
  EXPECT_EQ(columns["time"][0], 2);
  EXPECT_NEAR(columns["time"][10], 2.01, 1e-12);
  EXPECT_NEAR(columns["hinge"][0], 1.2, 1e-12);
  EXPECT_LT(columns["hinge"][10], 1.2 - 0.004);  // swinging back at 0.5 rad/s, and falling
  test::RunCommand(kBinary + " --model=" + model + " --steps=1 --keyframe=lowered 2>&1", &out);
  EXPECT_NE(out.find("has no keyframe 'lowered' (it has 'raised')"), std::string::npos) << out;
}

TEST(AxionSimTest, RejectsBadInputWithAMessage) {
  std::string out;
  EXPECT_NE(RunCommand(kBinary + " --model=" + kModels + "/pendulum.txt", &out), 0);
  EXPECT_NE(RunCommand(kBinary + " --model=/nonexistent/model.xml", &out), 0);
  EXPECT_NE(RunCommand(kBinary + " --model=" + kModels + "/pendulum.xml --backend=gpu", &out), 0);
  test::RunCommand(kBinary + " --model=/nonexistent/model.xml 2>&1", &out);
  EXPECT_NE(out.find("/nonexistent/model.xml"), std::string::npos);
}

}  // namespace
}  // namespace axion
