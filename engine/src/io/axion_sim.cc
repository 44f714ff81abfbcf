// axion-sim: loads an MJCF or URDF model, steps many worlds of it and reports throughput and
// solver statistics, in the spirit of mujoco-testspeed.
//
//   axion-sim --model=humanoid.xml --worlds=64 --steps=1000 --noise=0.01 --backend=cpu
//             [--timestep=0.005] [--preconditioner=tree|jacobi] [--threads=2]
//             [--friction_newton=true|false] [--speculative_contacts=true|false]
//             [--contact_margin=M] [--contact_compliance=C] [--contact_presolve_sweeps=N]
//             [--max_depenetration_speed=V]
//             [--line_search=true|false] [--islands=true|false]
//             [--halving_carryover=true|false]
//             [--newton_iterations=50] [--newton_tolerance=1e-6] [--cr_tolerance=1e-3]
//             [--fb_epsilon=1e-10] [--newton_stall_iterations=0] [--step_halvings=3]
//             [--newton_tail_iterations=10] [--newton_tail_residual=1e-4]
//             [--strict_after_cycle=true|false]
//             [--loop_rows=16]
//             [--halving_iterations=20] [--halving_residual=1e-2] [--contact_capacity=N]
//             [--pair_capacity=N]
//             [--trajectory=out.csv|out.npy] [--trajectory_layout=engine|file]
//             [--progress] [--floor=HEIGHT]
//             [--floating_base] [--self_collision] [--inertia_from_collision]
//             [--position_kp=KP --position_kv=KV] (URDF)
//             [--balance_inertia] [--merge_welded_bodies=true|false]
//             [--bound_mass=KG] [--bound_inertia=KGM2] (MJCF)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "axion/mjcf.h"
#include "axion/model.h"
#include "axion/simulator.h"
#include "axion/urdf.h"

ABSL_FLAG(std::string, model, "", "MJCF (.xml, .mjcf) or URDF (.urdf) model file");
ABSL_FLAG(int, worlds, 1, "number of worlds stepped together");
ABSL_FLAG(int, steps, 1000, "steps per world");
ABSL_FLAG(double, noise, 0.0,
          "control noise: each step every control is drawn uniformly from the middle `noise` "
          "fraction of its ctrlrange (of [-1, 1] when unlimited)");
ABSL_FLAG(std::string, backend, "auto", "cpu, cuda or auto");
ABSL_FLAG(double, timestep, 0.0, "time step override in seconds (0: the model's)");
ABSL_FLAG(std::string, preconditioner, "",
          "preconditioner of the linear solve: tree or jacobi (empty: the model's)");
ABSL_FLAG(std::string, line_search, "",
          "true or false: backtrack along each Newton step until the merit decreases (empty: the "
          "model's)");
ABSL_FLAG(std::string, strict_after_cycle, "",
          "true or false: once a step's Newton solve cycles, its line search asks for strict "
          "decrease (empty: the model's)");
ABSL_FLAG(std::string, friction_newton, "",
          "true or false: linearise friction along the slip (empty: the model's)");
ABSL_FLAG(std::string, islands, "",
          "true or false: solve each set of bodies that joints and contacts connect with its own "
          "line search and convergence test (empty: the model's)");
ABSL_FLAG(std::string, halving_carryover, "",
          "true or false: a step starts at the halving level the last one ended at (empty: the "
          "model's)");
ABSL_FLAG(std::string, speculative_contacts, "",
          "true or false: contacts that close within the step join early (empty: the model's)");
ABSL_FLAG(double, contact_margin, -1,
          "distance (m) within which shapes enter the contact set (-1: the model's, 0.01 by "
          "default)");
ABSL_FLAG(double, contact_compliance, -1,
          "normal compliance (m/N) of every contact: one carrying force F rests at penetration "
          "compliance * F (-1: the model's, 0 (rigid) by default)");
ABSL_FLAG(int, contact_presolve_sweeps, -1,
          "Gauss-Seidel sweeps over the contacts of a world of contacts alone before its Newton "
          "solve (0: off; -1: the model's, 1000 by default)");
ABSL_FLAG(double, max_depenetration_speed, 0,
          "fastest (m/s) a contact pushes overlapping shapes apart (0: the model's, unlimited by "
          "default; about 0.3 for files that start their bodies sunk into the floor)");
ABSL_FLAG(int, newton_iterations, 0, "maximum Newton iterations per step (0: the model's)");
ABSL_FLAG(double, newton_tolerance, 0,
          "residual max-norm (m/s) at which a step's Newton solve stops (0: the model's, 1e-6 by "
          "default): larger trades accuracy for speed");
ABSL_FLAG(double, cr_tolerance, 0,
          "relative tolerance of each Newton iteration's linear solve (0: the model's, 1e-3 by "
          "default): smaller solves each Newton step more exactly, at more CR iterations");
ABSL_FLAG(double, fb_epsilon, 0,
          "smoothing of the Fischer-Burmeister function of contact rows (0: the model's, 1e-10 "
          "by default)");
ABSL_FLAG(int, newton_stall_iterations, -1,
          "stop a step's Newton loop once its best iterate is this many iterations old (0: "
          "never; -1: the model's)");
ABSL_FLAG(int, newton_tail_iterations, -1,
          "after this many Newton iterations a step also ends once its residual is within "
          "--newton_tail_residual (0: never; -1: the model's)");
ABSL_FLAG(double, newton_tail_residual, 0,
          "residual max-norm (m/s) that ends a step past --newton_tail_iterations (0: the "
          "model's)");
ABSL_FLAG(int, loop_rows, -1,
          "rows closing loops eliminated exactly on top of the tree solve, at most, in [0, 16] "
          "(0: none; -1: the model's, 16)");
ABSL_FLAG(int, step_halvings, -1,
          "halve a step whose Newton solve fails, down to dt / 2^this (0: never; -1: the "
          "model's)");
ABSL_FLAG(int, halving_iterations, 0,
          "Newton iterations before a step still above halving_residual halves (0: the model's)");
ABSL_FLAG(double, halving_residual, 0.0,
          "residual (m/s) above which a step's solve has failed (0: the model's)");
ABSL_FLAG(double, missed_contact_depth, -1,
          "depth (m) at a step's end of a contact its set missed, or its rows misjudged, that "
          "sends the step back to its start (inf: never; -1: the model's)");
ABSL_FLAG(int, contact_redos, -1,
          "returns of a step to its start for missed or misjudged contacts, at most (0: never; "
          "-1: the model's)");
ABSL_FLAG(int, contact_capacity, -1,
          "contacts per world (-1: the model's, derived from its shapes); contacts past it are "
          "dropped and counted as overflow");
ABSL_FLAG(int, pair_capacity, -1,
          "candidate shape pairs per world the broad phase holds (-1: the model's, derived from "
          "its shapes); pairs past it are dropped and counted as pair overflow");
ABSL_FLAG(int, threads, 0, "CPU worker threads (0: all hardware threads)");
ABSL_FLAG(std::string, trajectory, "",
          "write world 0's body poses and joint positions per step to this .csv or .npy file");
ABSL_FLAG(std::string, trajectory_layout, "engine",
          "columns of --trajectory: engine (Axion's bodies and joint coordinates) or file (the "
          "model file's own bodies, those merged into others included, and joints, named and "
          "ordered as in the file: MuJoCo's xpos, xquat and qpos)");
ABSL_FLAG(std::string, keyframe, "",
          "start every world at this keyframe of the model (MJCF <key>): its name, or its index");
ABSL_FLAG(bool, progress, false, "show a progress bar even when stderr is not a terminal");
ABSL_FLAG(uint32_t, seed, 1, "seed of the control noise");
ABSL_FLAG(bool, floating_base, false, "URDF: make the root link a free body");
ABSL_FLAG(std::string, package_path, "",
          "URDF: directories, ':'-separated, where package:// mesh paths are looked up (a ROS "
          "workspace's src/; empty: $ROS_PACKAGE_PATH's entries and the share/ directory of each "
          "of $AMENT_PREFIX_PATH's)");
ABSL_FLAG(std::string, floor, "",
          "add a floor: an infinite ground plane at this height (m), normal +z (robot files have "
          "none; a floating-base robot then lands on it)");
ABSL_FLAG(bool, self_collision, false,
          "URDF: let the robot's links collide with each other (not those joined by a joint)");
ABSL_FLAG(bool, inertia_from_collision, false,
          "URDF: take each link's inertia from its collision geometry (pybullet's default)");
ABSL_FLAG(double, position_kp, 0,
          "URDF: > 0 makes each joint's actuator a position servo with this stiffness (its "
          "control is the target position)");
ABSL_FLAG(double, position_kv, 0, "URDF: the position servos' damping");
ABSL_FLAG(bool, balance_inertia, false,
          "set the principal moments of an inertia that breaks the triangle inequality to "
          "their mean (MuJoCo's balanceinertia) instead of refusing the model");
ABSL_FLAG(bool, merge_welded_bodies, true,
          "MJCF: merge each moving body without joints into its parent (false: a body of its "
          "own on a fixed joint)");
ABSL_FLAG(double, bound_mass, 0,
          "MJCF: lower bound on every body's mass, kg (MuJoCo's <compiler boundmass>; the larger "
          "of the two applies)");
ABSL_FLAG(double, bound_inertia, 0,
          "MJCF: lower bound on every body's principal moments of inertia, kg m^2 (MuJoCo's "
          "<compiler boundinertia>)");
ABSL_FLAG(bool, step_stats, false,
          "print world 0's solver figures after every step (Newton and CR iterations, "
          "sub-steps, final residual, contacts) to stderr, to see where a run's iterations go");
ABSL_FLAG(bool, report_speed, false,
          "also report the largest body speed seen in any world (a stability check; reads every "
          "world's state each step, outside the timed region)");
ABSL_FLAG(bool, report_depth, false,
          "also report the deepest contact penetration seen in any world (an accuracy figure to "
          "set beside another engine's; reads every world's contacts each step, outside the "
          "timed region)");
ABSL_FLAG(bool, report_limits, false,
          "also report the largest joint-limit violation seen in any world, angular (rad) and "
          "linear (m), at the end of each step (an accuracy figure like --report_depth; reads "
          "every world's joint positions each step, outside the timed region)");

namespace axion {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// --package_path's directories, or those of ROS 1's and ROS 2's environments.
std::vector<std::string> PackageDirs(const std::string& flag) {
  std::vector<std::string> dirs;
  auto add = [&](const std::string& list, const std::string& suffix) {
    for (absl::string_view dir : absl::StrSplit(list, ':', absl::SkipEmpty()))
      dirs.push_back(absl::StrCat(dir, suffix));
  };
  if (!flag.empty()) {
    add(flag, "");
  } else {
    if (const char* ros1 = std::getenv("ROS_PACKAGE_PATH")) add(ros1, "");
    if (const char* ros2 = std::getenv("AMENT_PREFIX_PATH")) add(ros2, "/share");
  }
  return dirs;
}

absl::StatusOr<ImportResult> LoadModel(const std::string& path) {
  if (EndsWith(path, ".urdf")) {
    UrdfOptions options;
    options.floating_base = absl::GetFlag(FLAGS_floating_base);
    options.balance_inertia = absl::GetFlag(FLAGS_balance_inertia);
    options.self_collision = absl::GetFlag(FLAGS_self_collision);
    options.inertia_from_collision = absl::GetFlag(FLAGS_inertia_from_collision);
    options.position_kp = absl::GetFlag(FLAGS_position_kp);
    options.position_kv = absl::GetFlag(FLAGS_position_kv);
    options.package_dirs = PackageDirs(absl::GetFlag(FLAGS_package_path));
    return LoadUrdfFile(path, options);
  }
  if (EndsWith(path, ".xml") || EndsWith(path, ".mjcf")) {
    MjcfOptions options;
    options.balance_inertia = absl::GetFlag(FLAGS_balance_inertia);
    options.merge_welded_bodies = absl::GetFlag(FLAGS_merge_welded_bodies);
    options.bound_mass = absl::GetFlag(FLAGS_bound_mass);
    options.bound_inertia = absl::GetFlag(FLAGS_bound_inertia);
    if (!(options.bound_mass >= 0) || !(options.bound_inertia >= 0) ||
        !std::isfinite(options.bound_mass) || !std::isfinite(options.bound_inertia)) {
      return absl::InvalidArgumentError("--bound_mass and --bound_inertia must be finite and >= 0");
    }
    return LoadMjcfFile(path, options);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--model='", path, "': unknown extension (expected .xml, .mjcf or .urdf)"));
}

// Rows of world 0's trajectory: step, time, then per body x y z qw qx qy qz, then the joint
// position coordinates. The engine layout writes Axion's bodies and joints; the file layout the
// model file's (ImportResult::source_bodies, each pose its carrier's composed with its offset,
// and the file's joint coordinates, FileJointCoordinates: MuJoCo's qpos for MJCF, merged hinges
// included; a fixed joint has none).
class TrajectoryWriter {
 public:
  static absl::StatusOr<std::unique_ptr<TrajectoryWriter>> Open(const std::string& path,
                                                                const Model& model,
                                                                const std::string& layout,
                                                                const ImportResult& source) {
    auto w = std::unique_ptr<TrajectoryWriter>(new TrajectoryWriter);
    w->npy_ = EndsWith(path, ".npy");
    if (!w->npy_ && !EndsWith(path, ".csv")) {
      return absl::InvalidArgumentError(
          absl::StrCat("--trajectory='", path, "': expected a .csv or .npy file"));
    }
    if (layout != "engine" && layout != "file") {
      return absl::InvalidArgumentError(
          absl::StrCat("--trajectory_layout='", layout, "': expected engine or file"));
    }
    w->path_ = path;
    w->columns_.push_back("step");
    w->columns_.push_back("time");
    const ModelDesc& desc = model.desc();
    auto add_pose = [&](const std::string& name) {
      for (const char* c : {"x", "y", "z", "qw", "qx", "qy", "qz"}) {
        w->columns_.push_back(absl::StrCat(name, ".", c));
      }
    };
    auto add_coordinates = [&](const std::string& name, int count) {
      for (int k = 0; k < count; ++k) {
        w->columns_.push_back(count == 1 ? name : absl::StrCat(name, ".", k));
      }
    };
    if (layout == "engine") {
      for (const BodyDesc& b : desc.bodies) add_pose(b.name);
      for (size_t j = 0; j < desc.joints.size(); ++j) {
        add_coordinates(desc.joints[j].name, JointPositionCount(desc.joints[j]));
      }
      return w;
    }
    for (const ImportResult::SourceBody& b : source.source_bodies) {
      w->file_bodies_.push_back(b);
      add_pose(b.name);
    }
    // the coordinates' count per file joint
    absl::StatusOr<FileCoordinates> counted = InitialFileCoordinates(source, model);
    if (!counted.ok()) return counted.status();
    for (size_t j = 0; j < source.source_joints.size(); ++j)
      add_coordinates(source.source_joints[j].name, counted->position_count[j]);
    w->source_ = &source;
    w->model_ = &model;
    w->file_layout_ = true;
    return w;
  }

  void Append(uint64_t step, Real time, const BodyState& bodies, const JointState& joints) {
    rows_.push_back(static_cast<double>(step));
    rows_.push_back(time);
    if (!file_layout_) {
      for (Real v : bodies.pose) rows_.push_back(v);
      for (Real v : joints.position) rows_.push_back(v);
      return;
    }
    for (const ImportResult::SourceBody& b : file_bodies_) {
      Pose pose = b.offset;  // a static body's offset is its world pose
      if (b.mocap >= 0) {    // (axion-sim never moves mocap bodies)
        pose = compose(model_->desc().mocap_bodies[b.mocap].pose, b.offset);
      } else if (b.body >= 0) {
        const Real* carrier = &bodies.pose[7 * static_cast<size_t>(b.body)];
        const Quat rotation{carrier[3], carrier[4], carrier[5], carrier[6]};
        pose.pos = Vec3{carrier[0], carrier[1], carrier[2]} + rotate(rotation, b.offset.pos);
        pose.quat = rotation * b.offset.quat;
      }
      for (Real v : {pose.pos.x, pose.pos.y, pose.pos.z, pose.quat.w, pose.quat.x, pose.quat.y,
                     pose.quat.z}) {
        rows_.push_back(v);
      }
    }
    absl::StatusOr<FileCoordinates> file = FileJointCoordinates(*source_, *model_, bodies, joints);
    for (Real v : file->position) rows_.push_back(v);  // the state fits the model it came from
  }

  absl::Status Close() {
    std::ofstream out(path_, std::ios::binary);
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write '", path_, "'"));
    size_t cols = columns_.size();
    size_t rows = rows_.size() / cols;
    if (npy_) {
      // NumPy format 1.0: magic, version, little-endian header length, then a Python dict
      // literal padded with spaces to a multiple of 64 bytes and ended by a newline.
      std::string header = absl::StrCat("{'descr': '<f8', 'fortran_order': False, 'shape': (", rows,
                                        ", ", cols, "), }");
      size_t total = 10 + header.size() + 1;
      header.append((64 - total % 64) % 64, ' ');
      header.push_back('\n');
      uint16_t length = static_cast<uint16_t>(header.size());
      out.write("\x93NUMPY\x01\x00", 8);
      char len_bytes[2] = {static_cast<char>(length & 0xff), static_cast<char>(length >> 8)};
      out.write(len_bytes, 2);
      out.write(header.data(), static_cast<std::streamsize>(header.size()));
      out.write(reinterpret_cast<const char*>(rows_.data()),
                static_cast<std::streamsize>(rows_.size() * sizeof(double)));
    } else {
      for (size_t c = 0; c < cols; ++c) out << (c ? "," : "") << columns_[c];
      out << "\n";
      char buffer[32];
      for (size_t r = 0; r < rows; ++r) {
        for (size_t c = 0; c < cols; ++c) {
          std::snprintf(buffer, sizeof(buffer), "%.17g", rows_[r * cols + c]);
          out << (c ? "," : "") << buffer;
        }
        out << "\n";
      }
    }
    if (!out) return absl::UnavailableError(absl::StrCat("error writing '", path_, "'"));
    return absl::OkStatus();
  }

  const std::vector<std::string>& columns() const { return columns_; }

 private:
  TrajectoryWriter() = default;
  bool npy_ = false;
  std::string path_;
  std::vector<std::string> columns_;
  std::vector<double> rows_;  // (steps + 1) x columns, row-major
  bool file_layout_ = false;
  std::vector<ImportResult::SourceBody> file_bodies_;  // file layout: the file's bodies
  const ImportResult* source_ = nullptr;  // file layout: the import, and its compiled model
  const Model* model_ = nullptr;
};

const char* PreconditionerName(Preconditioner preconditioner) {
  return preconditioner == Preconditioner::kJacobi ? "jacobi" : "tree";
}

void DrawProgress(int done, int total) {
  constexpr int kWidth = 40;
  int filled = total > 0 ? static_cast<int>(int64_t{kWidth} * done / total) : kWidth;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '.');
  std::fprintf(stderr, "\r[%s] %d/%d steps", bar.c_str(), done, total);
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

absl::Status Run() {
  std::string path = absl::GetFlag(FLAGS_model);
  if (path.empty()) return absl::InvalidArgumentError("--model is required");
  int world_count = absl::GetFlag(FLAGS_worlds);
  int steps = absl::GetFlag(FLAGS_steps);
  double noise = absl::GetFlag(FLAGS_noise);
  if (world_count < 1) return absl::InvalidArgumentError("--worlds must be >= 1");
  if (steps < 0) return absl::InvalidArgumentError("--steps must be >= 0");
  if (!(noise >= 0)) return absl::InvalidArgumentError("--noise must be >= 0");

  absl::StatusOr<ImportResult> imported = LoadModel(path);
  if (!imported.ok()) return imported.status();
  for (const std::string& w : imported->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  ModelDesc desc = std::move(imported->model);
  double timestep = absl::GetFlag(FLAGS_timestep);
  if (timestep < 0) return absl::InvalidArgumentError("--timestep must be positive");
  if (timestep > 0) desc.options.timestep = timestep;
  std::string preconditioner = absl::GetFlag(FLAGS_preconditioner);
  if (preconditioner == "tree") {
    desc.options.preconditioner = Preconditioner::kTree;
  } else if (preconditioner == "jacobi") {
    desc.options.preconditioner = Preconditioner::kJacobi;
  } else if (!preconditioner.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--preconditioner='", preconditioner, "': expected tree or jacobi"));
  }
  for (auto [flag, name, option] :
       {std::tuple{&FLAGS_friction_newton, "friction_newton", &desc.options.friction_newton},
        std::tuple{&FLAGS_speculative_contacts, "speculative_contacts",
                   &desc.options.speculative_contacts},
        std::tuple{&FLAGS_line_search, "line_search", &desc.options.line_search},
        std::tuple{&FLAGS_strict_after_cycle, "strict_after_cycle",
                   &desc.options.strict_after_cycle},
        std::tuple{&FLAGS_islands, "islands", &desc.options.islands},
        std::tuple{&FLAGS_halving_carryover, "halving_carryover",
                   &desc.options.halving_carryover}}) {
    std::string value = absl::GetFlag(*flag);
    if (value == "true") {
      *option = true;
    } else if (value == "false") {
      *option = false;
    } else if (!value.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, "='", value, "': expected true or false"));
    }
  }
  const double contact_margin = absl::GetFlag(FLAGS_contact_margin);
  if (contact_margin != -1) {
    if (!(contact_margin >= 0) || !std::isfinite(contact_margin))
      return absl::InvalidArgumentError("--contact_margin must be finite and >= 0 (or -1)");
    desc.options.contact_margin = contact_margin;
  }
  const double contact_compliance = absl::GetFlag(FLAGS_contact_compliance);
  if (contact_compliance != -1) {
    if (!(contact_compliance >= 0) || !std::isfinite(contact_compliance))
      return absl::InvalidArgumentError("--contact_compliance must be finite and >= 0 (or -1)");
    desc.options.contact_compliance = contact_compliance;
  }
  const int contact_presolve_sweeps = absl::GetFlag(FLAGS_contact_presolve_sweeps);
  if (contact_presolve_sweeps < -1)
    return absl::InvalidArgumentError("--contact_presolve_sweeps must be >= -1");
  if (contact_presolve_sweeps >= 0) desc.options.contact_presolve_sweeps = contact_presolve_sweeps;
  const double max_depenetration_speed = absl::GetFlag(FLAGS_max_depenetration_speed);
  if (!(max_depenetration_speed >= 0))
    return absl::InvalidArgumentError("--max_depenetration_speed must be >= 0");
  if (max_depenetration_speed > 0) desc.options.max_depenetration_speed = max_depenetration_speed;
  int newton_iterations = absl::GetFlag(FLAGS_newton_iterations);
  if (newton_iterations < 0) return absl::InvalidArgumentError("--newton_iterations must be >= 0");
  if (newton_iterations > 0) desc.options.newton_iterations = newton_iterations;
  const double newton_tolerance = absl::GetFlag(FLAGS_newton_tolerance);
  if (!(newton_tolerance >= 0) || !std::isfinite(newton_tolerance))
    return absl::InvalidArgumentError("--newton_tolerance must be finite and >= 0");
  if (newton_tolerance > 0) desc.options.newton_tolerance = newton_tolerance;
  const double cr_tolerance = absl::GetFlag(FLAGS_cr_tolerance);
  if (!(cr_tolerance >= 0) || !std::isfinite(cr_tolerance))
    return absl::InvalidArgumentError("--cr_tolerance must be finite and >= 0");
  if (cr_tolerance > 0) desc.options.cr_tolerance = cr_tolerance;
  const double fb_epsilon = absl::GetFlag(FLAGS_fb_epsilon);
  if (!(fb_epsilon >= 0) || !std::isfinite(fb_epsilon))
    return absl::InvalidArgumentError("--fb_epsilon must be finite and >= 0");
  if (fb_epsilon > 0) desc.options.fb_epsilon = fb_epsilon;
  int newton_stall_iterations = absl::GetFlag(FLAGS_newton_stall_iterations);
  if (newton_stall_iterations < -1)
    return absl::InvalidArgumentError("--newton_stall_iterations must be >= -1");
  if (newton_stall_iterations >= 0) desc.options.newton_stall_iterations = newton_stall_iterations;
  const int newton_tail_iterations = absl::GetFlag(FLAGS_newton_tail_iterations);
  if (newton_tail_iterations < -1)
    return absl::InvalidArgumentError("--newton_tail_iterations must be >= -1");
  if (newton_tail_iterations >= 0) desc.options.newton_tail_iterations = newton_tail_iterations;
  const double newton_tail_residual = absl::GetFlag(FLAGS_newton_tail_residual);
  if (!(newton_tail_residual >= 0) || !std::isfinite(newton_tail_residual))
    return absl::InvalidArgumentError("--newton_tail_residual must be finite and >= 0");
  if (newton_tail_residual > 0) desc.options.newton_tail_residual = newton_tail_residual;
  int loop_rows = absl::GetFlag(FLAGS_loop_rows);
  if (loop_rows < -1 || loop_rows > 16)
    return absl::InvalidArgumentError("--loop_rows must be in [-1, 16]");
  if (loop_rows >= 0) desc.options.loop_rows = loop_rows;
  int step_halvings = absl::GetFlag(FLAGS_step_halvings);
  if (step_halvings < -1) return absl::InvalidArgumentError("--step_halvings must be >= -1");
  if (step_halvings >= 0) desc.options.step_halvings = step_halvings;
  int halving_iterations = absl::GetFlag(FLAGS_halving_iterations);
  if (halving_iterations < 0)
    return absl::InvalidArgumentError("--halving_iterations must be >= 0");
  if (halving_iterations > 0) desc.options.halving_iterations = halving_iterations;
  double halving_residual = absl::GetFlag(FLAGS_halving_residual);
  if (!(halving_residual >= 0))
    return absl::InvalidArgumentError("--halving_residual must be >= 0");
  if (halving_residual > 0) desc.options.halving_residual = static_cast<Real>(halving_residual);
  double missed_contact_depth = absl::GetFlag(FLAGS_missed_contact_depth);
  if (!(missed_contact_depth >= 0 || missed_contact_depth == -1))
    return absl::InvalidArgumentError("--missed_contact_depth must be >= 0 or -1");
  if (missed_contact_depth >= 0)
    desc.options.missed_contact_depth = static_cast<Real>(missed_contact_depth);
  int contact_redos = absl::GetFlag(FLAGS_contact_redos);
  if (contact_redos < -1) return absl::InvalidArgumentError("--contact_redos must be >= -1");
  if (contact_redos >= 0) desc.options.contact_redos = contact_redos;
  if (const std::string floor = absl::GetFlag(FLAGS_floor); !floor.empty()) {
    double height = 0;
    if (!absl::SimpleAtod(floor, &height) || !std::isfinite(height)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--floor='", floor, "': expected a height in metres"));
    }
    desc.shapes.push_back(FloorShape(static_cast<Real>(height)));
  }
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(std::move(desc));
  if (!model.ok()) return model.status();

  SimulatorOptions sim_options;
  std::string backend = absl::GetFlag(FLAGS_backend);
  if (backend == "cpu")
    sim_options.backend = Backend::kCpu;
  else if (backend == "cuda")
    sim_options.backend = Backend::kCuda;
  else if (backend == "auto")
    sim_options.backend = Backend::kAuto;
  else
    return absl::InvalidArgumentError(
        absl::StrCat("--backend='", backend, "': expected cpu, cuda or auto"));
  sim_options.threads = absl::GetFlag(FLAGS_threads);
  absl::StatusOr<std::unique_ptr<Simulator>> sim = Simulator::Create(sim_options);
  if (!sim.ok()) return sim.status();
  WorldOptions world_options;
  world_options.contact_capacity = absl::GetFlag(FLAGS_contact_capacity);
  if (world_options.contact_capacity < -1)
    return absl::InvalidArgumentError("--contact_capacity must be >= 0, or -1 for the model's");
  world_options.pair_capacity = absl::GetFlag(FLAGS_pair_capacity);
  if (world_options.pair_capacity < -1)
    return absl::InvalidArgumentError("--pair_capacity must be >= 0, or -1 for the model's");
  absl::StatusOr<std::vector<WorldId>> worlds =
      (*sim)->CreateWorlds(*model, world_count, world_options);
  if (!worlds.ok()) return worlds.status();
  Real start_time = 0;
  if (const std::string keyframe = absl::GetFlag(FLAGS_keyframe); !keyframe.empty()) {
    for (WorldId w : *worlds) {
      absl::Status reset = (*sim)->Reset(w, keyframe);
      if (!reset.ok()) return reset;
    }
    start_time = (*model)->desc().keyframes[(*model)->FindKeyframe(keyframe)].time;
  }

  std::unique_ptr<TrajectoryWriter> trajectory;
  std::string trajectory_path = absl::GetFlag(FLAGS_trajectory);
  if (!trajectory_path.empty()) {
    absl::StatusOr<std::unique_ptr<TrajectoryWriter>> opened = TrajectoryWriter::Open(
        trajectory_path, **model, absl::GetFlag(FLAGS_trajectory_layout), *imported);
    if (!opened.ok()) return opened.status();
    trajectory = std::move(*opened);
  }
  auto record = [&](uint64_t step) -> absl::Status {
    if (!trajectory) return absl::OkStatus();
    absl::StatusOr<BodyState> bodies = (*sim)->GetBodyState(worlds->front());
    if (!bodies.ok()) return bodies.status();
    absl::StatusOr<JointState> joints = (*sim)->GetJointState(worlds->front());
    if (!joints.ok()) return joints.status();
    trajectory->Append(step,
                       start_time + static_cast<Real>(step) * (*model)->desc().options.timestep,
                       *bodies, *joints);
    return absl::OkStatus();
  };
  absl::Status status = record(0);
  if (!status.ok()) return status;

  const std::vector<ActuatorDesc>& actuators = (*model)->desc().actuators;
  std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<Real> ctrl(actuators.size());
  bool show_progress = absl::GetFlag(FLAGS_progress) || ::isatty(STDERR_FILENO);
  int progress_every = std::max(1, steps / 100);

  double newton = 0, cr = 0, trials = 0, contacts = 0, rows = 0, islands = 0;
  int64_t not_converged = 0, non_finite = 0, overflow = 0, pair_overflow = 0, halved = 0,
          substeps = 0, redone = 0, redos = 0;
  double step_seconds = 0;
  bool report_speed = absl::GetFlag(FLAGS_report_speed);
  bool step_stats = absl::GetFlag(FLAGS_step_stats);
  bool report_depth = absl::GetFlag(FLAGS_report_depth);
  double max_speed = 0;
  double max_depth = 0;  // (m) the deepest penetration, as a positive number
  bool report_limits = absl::GetFlag(FLAGS_report_limits);
  LimitViolation max_violation;
  for (int s = 0; s < steps; ++s) {
    auto start = std::chrono::steady_clock::now();
    if (noise > 0 && !actuators.empty()) {
      for (WorldId w : *worlds) {
        for (size_t a = 0; a < actuators.size(); ++a) {
          const ActuatorDesc& act = actuators[a];
          double center = act.ctrl_limited ? 0.5 * (act.ctrl_min + act.ctrl_max) : 0.0;
          double radius = act.ctrl_limited ? 0.5 * (act.ctrl_max - act.ctrl_min) : 1.0;
          ctrl[a] = static_cast<Real>(center + noise * radius * uniform(rng));
          if (act.ctrl_limited) ctrl[a] = std::min(std::max(ctrl[a], act.ctrl_min), act.ctrl_max);
        }
        status = (*sim)->SetControls(w, ctrl);
        if (!status.ok()) return status;
      }
    }
    status = (*sim)->StepAll(1);
    if (!status.ok()) return status;
    step_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Statistics and the trajectory are read outside the timed region.
    for (WorldId w : *worlds) {
      absl::StatusOr<WorldStats> stats = (*sim)->GetStats(w);
      if (!stats.ok()) return stats.status();
      newton += stats->newton_iterations;
      cr += stats->cr_iterations;
      trials += stats->line_search_trials;
      contacts += stats->contact_count;
      rows += stats->constraint_rows;
      islands += stats->island_count;
      not_converged += (stats->flags & kWorldNotConverged) != 0;
      halved += stats->substeps > 1;
      substeps += stats->substeps;
      redone += stats->contact_redos > 0;
      redos += stats->contact_redos;
      non_finite += (stats->flags & kWorldNonFinite) != 0;
      overflow += (stats->flags & kWorldContactOverflow) != 0;
      pair_overflow += (stats->flags & kWorldPairOverflow) != 0;
      if (step_stats && w == worlds->front())
        std::fprintf(stderr,
                     "step %d: newton %d, cr %d, trials %d, substeps %d, redos %d, residual %.3g, "
                     "contacts %d%s\n",
                     s + 1, stats->newton_iterations, stats->cr_iterations,
                     stats->line_search_trials, stats->substeps, stats->contact_redos,
                     static_cast<double>(stats->residual), stats->contact_count,
                     (stats->flags & kWorldNotConverged) ? ", not converged" : "");
      if (report_speed) {
        absl::StatusOr<BodyState> state = (*sim)->GetBodyState(w);
        if (!state.ok()) return state.status();
        for (size_t b = 0; b + 5 < state->velocity.size(); b += 6) {
          const Real* v = &state->velocity[b];
          double speed = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
          // A NaN, once seen, stays the reported maximum.
          if (std::isnan(speed) || (!std::isnan(max_speed) && speed > max_speed)) max_speed = speed;
        }
      }
      if (report_depth) {
        absl::StatusOr<std::vector<ContactReport>> reports = (*sim)->GetContacts(w);
        if (!reports.ok()) return reports.status();
        for (const ContactReport& c : *reports) max_depth = std::max(max_depth, -double(c.gap));
      }
      if (report_limits) {
        absl::StatusOr<JointState> joints = (*sim)->GetJointState(w);
        if (!joints.ok()) return joints.status();
        absl::StatusOr<LimitViolation> violation = JointLimitViolation(**model, joints->position);
        if (!violation.ok()) return violation.status();
        // a NaN, once seen, stays the reported figure
        for (auto [largest, x] : {std::pair{&max_violation.angular, violation->angular},
                                  std::pair{&max_violation.linear, violation->linear}}) {
          if (std::isnan(x) || x > *largest) *largest = x;
        }
      }
    }
    status = record(static_cast<uint64_t>(s) + 1);
    if (!status.ok()) return status;
    if (show_progress && (s + 1 == steps || (s + 1) % progress_every == 0))
      DrawProgress(s + 1, steps);
  }
  if (trajectory) {
    status = trajectory->Close();
    if (!status.ok()) return status;
  }

  double world_steps = static_cast<double>(steps) * world_count;
  double h = (*model)->desc().options.timestep;
  double per_step = world_steps > 0 ? 1.0 / world_steps : 0.0;
  const int tendons = (*model)->tendon_count();
  std::printf(
      "model               : %s (%d bodies, %d joints, %d dofs, %d actuators, %d shapes%s)\n",
      path.c_str(), (*model)->body_count(), (*model)->joint_count(), (*model)->joint_dof_count(),
      (*model)->actuator_count(), (*model)->shape_count(),
      tendons > 0 ? absl::StrCat(", ", tendons, " tendons").c_str() : "");
  std::printf(
      "backend             : %s, %d worlds, %d steps, dt = %g s, noise = %g, preconditioner = %s\n",
      BackendName((*sim)->backend()), world_count, steps, h, noise,
      PreconditionerName((*model)->desc().options.preconditioner));
  std::printf("wall time           : %.3f s\n", step_seconds);
  std::printf("steps per second    : %.0f world-steps/s\n",
              step_seconds > 0 ? world_steps / step_seconds : 0.0);
  std::printf("realtime factor     : %.2f simulated s per wall s\n",
              step_seconds > 0 ? world_steps * h / step_seconds : 0.0);
  std::printf("newton iterations   : %.2f per step\n", newton * per_step);
  std::printf("cr iterations       : %.2f per step\n", cr * per_step);
  std::printf("line-search trials  : %.2f per Newton iteration\n",
              newton > 0 ? trials / newton : 0.0);
  std::printf("contacts            : %.2f per step\n", contacts * per_step);
  std::printf("constraint rows     : %.2f per step\n", rows * per_step);
  std::printf("islands             : %.2f per step\n", islands * per_step);
  std::printf("not converged       : %lld world-steps\n", static_cast<long long>(not_converged));
  // halved: taken in steps of dt / 2^k, k > 0 (a failed solve, or the level carried over)
  std::printf("halved              : %lld world-steps (%.3f steps of dt / 2^k per step)\n",
              static_cast<long long>(halved), substeps * per_step);
  std::printf(
      "redone              : %lld world-steps (%lld returns for a missed or misjudged contact)\n",
      static_cast<long long>(redone), static_cast<long long>(redos));
  std::printf("non-finite          : %lld world-steps\n", static_cast<long long>(non_finite));
  std::printf("contact overflow    : %lld world-steps\n", static_cast<long long>(overflow));
  std::printf("pair overflow       : %lld world-steps\n", static_cast<long long>(pair_overflow));
  std::printf("memory              : %.1f kB per world (all worlds' arrays, %s)\n",
              static_cast<double>((*sim)->memory_bytes()) / 1024.0 / world_count,
              (*sim)->backend() == Backend::kCuda ? "device" : "host");
  if (report_speed) std::printf("max body speed      : %g m/s\n", max_speed);
  if (report_depth) std::printf("deepest contact     : %g m\n", max_depth);
  if (report_limits) {
    std::printf("limit violation     : %g rad, %g m\n", static_cast<double>(max_violation.angular),
                static_cast<double>(max_violation.linear));
  }
  if (trajectory) {
    std::printf("trajectory          : %s (%zu columns)\n", trajectory_path.c_str(),
                trajectory->columns().size());
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace axion

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Steps many worlds of an MJCF or URDF model and reports throughput.\n"
      "  axion-sim --model=FILE [--worlds=W] [--steps=N] [--noise=0.01] [--backend=cpu|cuda|auto]\n"
      "            [--timestep=DT] [--preconditioner=tree|jacobi] [--threads=T]\n"
      "            [--trajectory=out.csv|out.npy] [--trajectory_layout=engine|file] "
      "[--progress]");
  // --help lists the flags of the files named like the program; this one's is axion_sim.cc,
  // which the program name axion-sim does not match
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "axion_sim.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  absl::ParseCommandLine(argc, argv);
  absl::Status status = axion::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "axion-sim: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
