// Batch-size sweep of the step throughput: the MuJoCo humanoid (or a built-in 13-body ragdoll
// when the MJCF importer or the file is missing) and a 10-box stack, stepped as 1, 64, 1024, 8192
// and 32768 worlds on the chosen backend. Prints world-steps per second, the mean Newton and
// Conjugate Residual iterations per world-step, contacts per world and backend memory per world.
//
//   gpu_bench [--backend=auto|cpu|cuda] [--max_worlds=N] [--worlds=N,N,...]
//             [--scene=all|humanoid|humanoids22|ragdoll|stack|terrain] [--settle_steps=N]
//             [--min_time=SECONDS]
//             [--max_steps=N] [--threads=N] [--preconditioner=model|tree|jacobi] [--rl_loop]
//             [--contact_capacity=N] [--newton_iterations=N] [--newton_tolerance=X]
//             [--newton_stall_iterations=N]
//             [--loop_rows=N] [--step_halvings=N] [--halving_carryover=true|false]
//
// The first steps of each size (outside the timed loop) include the one-off costs: device
// allocation and upload, and on CUDA the capture of the step into a graph; they are reported
// separately as setup time.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "axion/model.h"
#include "axion/simulator.h"
#include "axion_scenes.h"

#if defined(AXION_BENCH_HAVE_MJCF)
#include "axion/mjcf.h"
#endif

namespace axion::bench {
namespace {

constexpr char kHumanoidPath[] = "/usr/share/mujoco/model/humanoid/humanoid.xml";
// 22 figures side by side on one floor in each world: 22 islands (not in --scene=all)
constexpr char kHumanoids22Path[] = "/usr/share/mujoco/model/humanoid/22_humanoids.xml";

struct Flags {
  Backend backend = Backend::kAuto;
  int max_worlds = -1;                                   // -1: 32768 on CUDA, 1024 on the CPU
  std::vector<int> worlds = {1, 64, 1024, 8192, 32768};  // batch sizes, up to max_worlds
  int settle_steps = 0;  // untimed steps before the timed ones (the humanoid lands in ~100)
  std::string scene = "all";
  double min_time = 1.0;                 // seconds of timed stepping per batch size
  int max_steps = 1000;                  // timed steps per batch size at most
  int threads = 0;                       // CPU worker threads; 0: all
  std::string preconditioner = "model";  // of the CR solve: the model's own, tree or jacobi
  // Each timed step as a training loop drives it through the Simulator: new controls for every
  // world, the step, every world's body state read back.
  bool rl_loop = false;
  int contact_capacity = -1;  // contacts per world; -1: each model's own
  // Newton limits of every scene; 0 (iterations) or -1 (stall): each model's own
  int newton_iterations = 0;
  int newton_stall_iterations = -1;
  int newton_tail_iterations = -1;  // SolverOptions::newton_tail_iterations; -1: the model's own
  int loop_rows = -1;               // SolverOptions::loop_rows of every scene; -1: each model's own
  int step_halvings = -1;      // SolverOptions::step_halvings of every scene; -1: each model's own
  int halving_carryover = -1;  // SolverOptions::halving_carryover (0 / 1); -1: the model's own
  // SolverOptions::newton_tolerance of every scene; 0: the model's own
  double newton_tolerance = 0;
};

// The usage line after `message`: on stderr with exit status 2 for a bad command line, on
// stdout with 0 for --help.
[[noreturn]] void Usage(const char* message, int status = 2) {
  std::fprintf(status == 0 ? stdout : stderr,
               "%s\nusage: gpu_bench [--backend=auto|cpu|cuda] [--max_worlds=N] [--worlds=N,N,...] "
               "[--scene=all|humanoid|humanoids22|ragdoll|stack|terrain] [--settle_steps=N] "
               "[--min_time=SECONDS] "
               "[--max_steps=N] [--threads=N] [--preconditioner=model|tree|jacobi] [--rl_loop] "
               "[--contact_capacity=N] [--newton_iterations=N] [--newton_tolerance=X] "
               "[--newton_stall_iterations=N] "
               "[--newton_tail_iterations=N] [--loop_rows=N] [--step_halvings=N] "
               "[--halving_carryover=true|false]\n",
               message);
  std::exit(status);
}

bool ParseInt(std::string_view text, int* out) {
  char* end = nullptr;
  std::string s(text);
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < 0 || v > (1 << 30)) return false;
  *out = static_cast<int>(v);
  return true;
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&](std::string_view name) -> std::string_view {
      std::string prefix = "--" + std::string(name) + "=";
      return arg.substr(0, prefix.size()) == prefix ? arg.substr(prefix.size())
                                                    : std::string_view();
    };
    if (arg == "--help" || arg == "-h")
      Usage("Steps scenes of many worlds and prints world-steps/s.", 0);
    if (std::string_view v = value("backend"); !v.empty()) {
      if (v == "auto") {
        f.backend = Backend::kAuto;
      } else if (v == "cpu") {
        f.backend = Backend::kCpu;
      } else if (v == "cuda") {
        f.backend = Backend::kCuda;
      } else {
        Usage("--backend must be auto, cpu or cuda");
      }
    } else if (std::string_view v = value("max_worlds"); !v.empty()) {
      if (!ParseInt(v, &f.max_worlds) || f.max_worlds < 1)
        Usage("--max_worlds must be a positive integer");
    } else if (std::string_view v = value("worlds"); !v.empty()) {
      f.worlds.clear();
      while (!v.empty()) {
        const size_t comma = std::min(v.find(','), v.size());
        int n = 0;
        if (!ParseInt(v.substr(0, comma), &n) || n < 1)
          Usage("--worlds must be a comma-separated list of positive integers");
        f.worlds.push_back(n);
        v.remove_prefix(std::min(comma + 1, v.size()));
      }
    } else if (std::string_view v = value("settle_steps"); !v.empty()) {
      if (!ParseInt(v, &f.settle_steps)) Usage("--settle_steps must be a non-negative integer");
    } else if (std::string_view v = value("scene"); !v.empty()) {
      f.scene = std::string(v);
      if (f.scene != "all" && f.scene != "humanoid" && f.scene != "humanoids22" &&
          f.scene != "ragdoll" && f.scene != "stack" && f.scene != "terrain") {
        Usage("--scene must be all, humanoid, humanoids22, ragdoll, stack or terrain");
      }
    } else if (std::string_view v = value("min_time"); !v.empty()) {
      f.min_time = std::atof(std::string(v).c_str());
      if (!(f.min_time >= 0)) Usage("--min_time must be >= 0");
    } else if (std::string_view v = value("max_steps"); !v.empty()) {
      if (!ParseInt(v, &f.max_steps) || f.max_steps < 1)
        Usage("--max_steps must be a positive integer");
    } else if (std::string_view v = value("contact_capacity"); !v.empty()) {
      if (!ParseInt(v, &f.contact_capacity))
        Usage("--contact_capacity must be a non-negative integer");
    } else if (std::string_view v = value("newton_iterations"); !v.empty()) {
      if (!ParseInt(v, &f.newton_iterations) || f.newton_iterations < 1)
        Usage("--newton_iterations must be a positive integer");
    } else if (std::string_view v = value("newton_tolerance"); !v.empty()) {
      f.newton_tolerance = std::atof(std::string(v).c_str());
      if (!(f.newton_tolerance > 0)) Usage("--newton_tolerance must be a positive number");
    } else if (std::string_view v = value("newton_stall_iterations"); !v.empty()) {
      if (!ParseInt(v, &f.newton_stall_iterations))
        Usage("--newton_stall_iterations must be a non-negative integer");
    } else if (std::string_view v = value("newton_tail_iterations"); !v.empty()) {
      if (!ParseInt(v, &f.newton_tail_iterations))
        Usage("--newton_tail_iterations must be a non-negative integer");
    } else if (std::string_view v = value("loop_rows"); !v.empty()) {
      if (!ParseInt(v, &f.loop_rows) || f.loop_rows > 16)
        Usage("--loop_rows must be an integer in [0, 16]");
    } else if (std::string_view v = value("step_halvings"); !v.empty()) {
      if (!ParseInt(v, &f.step_halvings) || f.step_halvings > 10)
        Usage("--step_halvings must be an integer in [0, 10]");
    } else if (std::string_view v = value("halving_carryover"); !v.empty()) {
      if (v != "true" && v != "false") Usage("--halving_carryover must be true or false");
      f.halving_carryover = v == "true" ? 1 : 0;
    } else if (arg == "--rl_loop") {
      f.rl_loop = true;
    } else if (std::string_view v = value("preconditioner"); !v.empty()) {
      f.preconditioner = std::string(v);
      if (f.preconditioner != "model" && f.preconditioner != "tree" && f.preconditioner != "jacobi")
        Usage("--preconditioner must be model, tree or jacobi");
    } else if (std::string_view v = value("threads"); !v.empty()) {
      if (!ParseInt(v, &f.threads)) Usage("--threads must be a non-negative integer");
    } else {
      Usage(("unknown argument " + std::string(arg)).c_str());
    }
  }
  return f;
}

// A 13-body standing ragdoll with the humanoid's structure: a free torso; head welded on; ball
// hips and shoulders; hinged waist, knees, ankles and elbows (with effort actuators, left at
// zero); capsule limbs and box feet on a ground plane. It collapses under gravity, as the
// uncontrolled MuJoCo humanoid does.
using scenes::BoxInertia;

ModelDesc Ragdoll() {
  ModelDesc d;
  d.options.timestep = 0.005;
  ShapeDesc ground;
  ground.type = ShapeType::kPlane;
  d.shapes.push_back(ground);
  // Adds a body at `pos` with a shape; returns its index.
  auto body = [&](const std::string& name, Real mass, Vec3 pos, ShapeType type, Vec3 size) {
    BodyDesc b;
    b.name = name;
    b.mass = mass;
    Vec3 half = type == ShapeType::kBox      ? size
                : type == ShapeType::kSphere ? Vec3{size.x, size.x, size.x}
                                             : Vec3{size.x, size.x, size.y + size.x};
    b.inertia = BoxInertia(mass, half);
    b.pose.pos = pos;
    d.bodies.push_back(b);
    ShapeDesc s;
    s.name = name;
    s.body = static_cast<int>(d.bodies.size()) - 1;
    s.type = type;
    s.size = size;
    d.shapes.push_back(s);
    return s.body;
  };
  // Adds a joint whose anchor is `anchor` in the child's frame; hinges turn about y.
  auto joint = [&](int parent, int child, JointType type, Vec3 anchor) {
    JointDesc j;
    j.type = type;
    j.parent = parent;
    j.child = child;
    j.child_frame.pos = anchor;
    if (type == JointType::kRevolute) {
      j.axis = Vec3{0, 1, 0};
      j.limited = true;
      j.lower = {-1.5};
      j.upper = {1.5};
      ActuatorDesc a;
      a.joint = static_cast<int>(d.joints.size());
      a.gear = 50;
      d.actuators.push_back(a);
    }
    d.joints.push_back(j);
  };
  int torso = body("torso", 10, {0, 0, 1.25}, ShapeType::kCapsule, {0.1, 0.15, 0});
  int head = body("head", 3, {0, 0, 1.62}, ShapeType::kSphere, {0.1, 0, 0});
  joint(torso, head, JointType::kFixed, {0, 0, -0.1});
  int pelvis = body("pelvis", 5, {0, 0, 0.92}, ShapeType::kBox, {0.12, 0.08, 0.06});
  joint(torso, pelvis, JointType::kRevolute, {0, 0, 0.08});
  for (Real side : {Real(-1), Real(1)}) {
    const std::string prefix = side < 0 ? "right_" : "left_";
    int thigh = body(prefix + "thigh", 4, {0, Real(0.1 * side), 0.65}, ShapeType::kCapsule,
                     {0.06, 0.15, 0});
    joint(pelvis, thigh, JointType::kBall, {0, 0, 0.21});
    int shin =
        body(prefix + "shin", 3, {0, Real(0.1 * side), 0.25}, ShapeType::kCapsule, {0.05, 0.14, 0});
    joint(thigh, shin, JointType::kRevolute, {0, 0, 0.19});
    int foot = body(prefix + "foot", 1, {0.04, Real(0.1 * side), 0.03}, ShapeType::kBox,
                    {0.09, 0.05, 0.03});
    joint(shin, foot, JointType::kRevolute, {-0.04, 0, 0.03});
    int upper = body(prefix + "upper_arm", 2, {0, Real(0.22 * side), 1.28}, ShapeType::kCapsule,
                     {0.045, 0.12, 0});
    joint(torso, upper, JointType::kBall, {0, 0, 0.165});
    int lower = body(prefix + "lower_arm", 1.5, {0, Real(0.22 * side), 0.98}, ShapeType::kCapsule,
                     {0.04, 0.11, 0});
    joint(upper, lower, JointType::kRevolute, {0, 0, 0.15});
  }
  return d;
}

struct Scene {
  std::string name;
  std::shared_ptr<const Model> model;
};

// --preconditioner and the Newton limits, applied to every scene as it is compiled.
std::string g_preconditioner = "model";
int g_newton_iterations = 0, g_newton_stall_iterations = -1, g_loop_rows = -1, g_step_halvings = -1;
int g_halving_carryover = -1, g_newton_tail_iterations = -1;
double g_newton_tolerance = 0;

std::shared_ptr<const Model> Compile(ModelDesc d, const std::string& name) {
  if (g_preconditioner == "tree") d.options.preconditioner = Preconditioner::kTree;
  if (g_preconditioner == "jacobi") d.options.preconditioner = Preconditioner::kJacobi;
  if (g_newton_iterations > 0) d.options.newton_iterations = g_newton_iterations;
  if (g_newton_tolerance > 0) d.options.newton_tolerance = static_cast<Real>(g_newton_tolerance);
  if (g_newton_stall_iterations >= 0) d.options.newton_stall_iterations = g_newton_stall_iterations;
  if (g_newton_tail_iterations >= 0) d.options.newton_tail_iterations = g_newton_tail_iterations;
  if (g_loop_rows >= 0) d.options.loop_rows = g_loop_rows;
  if (g_step_halvings >= 0) d.options.step_halvings = g_step_halvings;
  if (g_halving_carryover >= 0) d.options.halving_carryover = g_halving_carryover == 1;
  absl::StatusOr<std::shared_ptr<const Model>> m = Model::Compile(std::move(d));
  if (!m.ok()) {
    std::fprintf(stderr, "scene %s does not compile: %s\n", name.c_str(),
                 std::string(m.status().message()).c_str());
    std::exit(1);
  }
  return *m;
}

Scene Humanoid() {
#if defined(AXION_BENCH_HAVE_MJCF)
  if (std::FILE* f = std::fopen(kHumanoidPath, "r")) {
    std::fclose(f);
    absl::StatusOr<ImportResult> imported = LoadMjcfFile(kHumanoidPath);
    if (imported.ok()) return {"humanoid", Compile(imported->model, "humanoid")};
    std::fprintf(stderr, "cannot load %s (%s): using the built-in ragdoll\n", kHumanoidPath,
                 std::string(imported.status().message()).c_str());
  } else {
    std::fprintf(stderr, "%s is not installed: using the built-in ragdoll\n", kHumanoidPath);
  }
#else
  std::fprintf(stderr, "this build has no MJCF importer: using the built-in ragdoll\n");
#endif
  return {"ragdoll", Compile(Ragdoll(), "ragdoll")};
}

// MuJoCo's 22_humanoids.xml, or nothing where it cannot be loaded (the reason on stderr).
std::vector<Scene> Humanoids22() {
#if defined(AXION_BENCH_HAVE_MJCF)
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(kHumanoids22Path);
  if (imported.ok()) return {{"humanoids22", Compile(imported->model, "humanoids22")}};
  std::fprintf(stderr, "cannot load %s: %s\n", kHumanoids22Path,
               std::string(imported.status().message()).c_str());
#else
  std::fprintf(stderr, "this build has no MJCF importer: no humanoids22 scene\n");
#endif
  return {};
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s failed: %s\n", what, std::string(s.message()).c_str());
    std::exit(1);
  }
}

// One row of the table: `worlds` copies of the scene stepped together.
void Run(const Flags& flags, const Scene& scene, int worlds) {
  SimulatorOptions options;
  options.backend = flags.backend;
  options.threads = flags.threads;
  absl::StatusOr<std::unique_ptr<Simulator>> created = Simulator::Create(options);
  Check(created.status(), "creating the simulator");
  Simulator& sim = **created;

  // setup: creation, upload and the first steps (graph capture on CUDA)
  auto start = std::chrono::steady_clock::now();
  WorldOptions world_options;
  world_options.contact_capacity = flags.contact_capacity;
  absl::StatusOr<std::vector<WorldId>> ids = sim.CreateWorlds(scene.model, worlds, world_options);
  Check(ids.status(), "creating the worlds");
  constexpr int kWarmupSteps = 3;
  Check(sim.StepAll(kWarmupSteps), "warm-up steps");
  const double setup = Seconds(start);
  if (flags.settle_steps > 0) Check(sim.StepAll(flags.settle_steps), "settling steps");

  // timed: single steps, as a training loop calls them; after each, outside the timing, the
  // statistics of that step (Step returns them current, with no state read back)
  int steps = 0;
  double elapsed = 0;
  double newton = 0, cr = 0, contacts = 0;
  int newton_max = 0;  // the batch's slowest world sets how many Newton trips a step takes
  double trips = 0;    // ... summed over the timed steps: each step's most Newton iterations
  int64_t not_converged = 0;
  int64_t sampled = 0;
  const int actuators = scene.model->actuator_count();
  std::vector<Real> ctrl(actuators);
  do {
    start = std::chrono::steady_clock::now();
    if (flags.rl_loop) {
      // small controls that vary by world and step (inside any control range that is not tiny)
      for (size_t w = 0; w < ids->size(); ++w) {
        for (int a = 0; a < actuators; ++a) {
          ctrl[a] = Real(0.1) * std::sin(Real(0.37) * static_cast<Real>(steps + a) +
                                         Real(0.11) * static_cast<Real>(w));
        }
        Check(sim.SetControls((*ids)[w], ctrl), "setting controls");
      }
    }
    Check(sim.StepAll(1), "step");
    if (flags.rl_loop) {
      for (WorldId id : *ids) Check(sim.GetBodyState(id).status(), "reading body states");
    }
    elapsed += Seconds(start);
    ++steps;
    int step_most = 0;
    for (WorldId id : *ids) {
      absl::StatusOr<WorldStats> st = sim.GetStats(id);
      Check(st.status(), "reading statistics");
      newton += st->newton_iterations;
      step_most = std::max(step_most, static_cast<int>(st->newton_iterations));
      if (st->flags & kWorldNotConverged) ++not_converged;
      cr += st->cr_iterations;
      contacts += st->contact_count;
      ++sampled;
    }
    newton_max = std::max(newton_max, step_most);
    trips += step_most;
  } while (steps < flags.max_steps && elapsed < flags.min_time);

  const double n = static_cast<double>(sampled);
  std::printf("%-9s %-5s %7d %6d %9.3f %9.3f %14.0f %8.2f %10d %7.1f %8.2f %9.1f %9.1f %12.0f\n",
              scene.name.c_str(), BackendName(sim.backend()), worlds, steps, setup, elapsed,
              static_cast<double>(steps) * worlds / elapsed, newton / n, newton_max, trips / steps,
              100.0 * static_cast<double>(not_converged) / n, cr / n, contacts / n,
              static_cast<double>(sim.memory_bytes()) / worlds);
  std::fflush(stdout);
}

}  // namespace
}  // namespace axion::bench

int main(int argc, char** argv) {
  using namespace axion;
  using namespace axion::bench;
  Flags flags = ParseFlags(argc, argv);
  const bool cuda =
      flags.backend == Backend::kCuda || (flags.backend == Backend::kAuto && CudaAvailable());
  if (flags.max_worlds < 0) flags.max_worlds = cuda ? 32768 : 1024;
  g_preconditioner = flags.preconditioner;
  g_newton_iterations = flags.newton_iterations;
  g_newton_tolerance = flags.newton_tolerance;
  g_newton_stall_iterations = flags.newton_stall_iterations;
  g_newton_tail_iterations = flags.newton_tail_iterations;
  g_loop_rows = flags.loop_rows;
  g_step_halvings = flags.step_halvings;
  g_halving_carryover = flags.halving_carryover;

  std::vector<Scene> scenes;
  if (flags.scene == "all" || flags.scene == "humanoid") scenes.push_back(Humanoid());
  if (flags.scene == "ragdoll") scenes.push_back({"ragdoll", Compile(Ragdoll(), "ragdoll")});
  if (flags.scene == "humanoids22") {
    for (Scene& s : Humanoids22()) scenes.push_back(std::move(s));
  }
  if (flags.scene == "all" || flags.scene == "stack")
    scenes.push_back({"stack", Compile(scenes::Stack(10), "stack")});
  // five shapes on rough terrain (height field; not in --scene=all)
  if (flags.scene == "terrain")
    scenes.push_back({"terrain", Compile(scenes::BodiesOnTerrain(), "terrain")});

  std::printf(
      "backend %s (CUDA device %s), preconditioner %s, worlds up to %d, %d settling steps, then "
      ">= %.1f s or %d steps per size%s\n",
      BackendName(flags.backend), CudaAvailable() ? "present" : "absent",
      flags.preconditioner.c_str(), flags.max_worlds, flags.settle_steps, flags.min_time,
      flags.max_steps, flags.rl_loop ? ", each step with controls set and body states read" : "");
  // the execution switches of the environment that change timings, not results
  for (const char* name :
       {"AXION_BATCHED_NEWTON_TRIPS", "AXION_BATCHED_NEWTON_WORLDS", "AXION_CUDA_TEAMS",
        "AXION_CUDA_SLICES", "AXION_CUDA_GRAPHS", "AXION_CUDA_PROFILE", "AXION_CUDA_ROW_SPLIT"}) {
    if (const char* value = std::getenv(name)) std::printf("%s=%s\n", name, value);
  }
  std::printf("%-9s %-5s %7s %6s %9s %9s %14s %8s %10s %7s %8s %9s %9s %12s\n", "scene", "bknd",
              "worlds", "steps", "setup_s", "timed_s", "world_steps/s", "newton", "newton_max",
              "trips", "unconv%", "cr", "contacts", "bytes/world");
  for (const Scene& scene : scenes) {
    for (int worlds : flags.worlds) {
      if (worlds > flags.max_worlds) break;
      Run(flags, scene, worlds);
    }
  }
  return 0;
}
