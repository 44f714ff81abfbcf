// Shared by the fuzz targets: what every accepted input must survive.
//
// Each target is a libFuzzer entry point (LLVMFuzzerTestOneInput). Built with AXION_FUZZ=ON
// (clang, -fsanitize=fuzzer) it is a fuzzer; in every other build fuzz_replay_main.cc runs it
// over the checked-in corpus and the repository's model files, so inputs that once broke
// something stay tests on every CI run.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "axion/model.h"
#include "axion/simulator.h"

namespace axion::fuzz {

// Models larger than this are compiled but not stepped: a step of a 1000-body model is not a
// crash, only a slow input that would stall the fuzzer.
inline constexpr int kMaxSteppedBodies = 48;
inline constexpr int kMaxSteppedShapes = 96;

// Prints `what` and aborts: the fuzzer records the input that led here.
[[noreturn]] inline void Fail(const char* what, const absl::Status& status = absl::OkStatus()) {
  std::fprintf(stderr, "fuzz invariant broken: %s %s\n", what, status.ToString().c_str());
  std::abort();
}

// A small healthy world that shares the batch with each fuzzed one: a box resting on a plane
// and a hinged rod, so it has contacts and joint rows in the same passes.
inline ModelDesc NeighbourModel() {
  ModelDesc d;
  BodyDesc box, rod;
  box.pose.pos = {2, 0, 0.1};
  rod.pose.pos = {0.25, 0, 1};
  d.bodies = {box, rod};
  ShapeDesc floor, cube, bar;
  floor.type = ShapeType::kPlane;
  cube.body = 0;
  cube.type = ShapeType::kBox;
  cube.size = {0.1, 0.1, 0.1};
  bar.body = 1;
  bar.type = ShapeType::kCapsule;
  bar.size = {0.02, 0.25, 0};
  d.shapes = {floor, cube, bar};
  JointDesc hinge;
  hinge.child = 1;
  hinge.child_frame.pos = {-0.25, 0, 0};
  hinge.axis = Vec3{0, 1, 0};
  d.joints = {hinge};
  return d;
}

// The neighbour's snapshot after three steps alone, the reference it must match beside any
// fuzzed world.
struct Neighbour {
  std::shared_ptr<const Model> model;
  std::string after_three_steps;
};
inline const Neighbour& GetNeighbour() {
  static const Neighbour* neighbour = [] {
    auto model = Model::Compile(NeighbourModel());
    if (!model.ok()) Fail("the neighbour model", model.status());
    auto sim = Simulator::Create({.backend = Backend::kCpu, .threads = 1});
    if (!sim.ok()) Fail("Simulator::Create", sim.status());
    auto world = (*sim)->CreateWorlds(*model, 1);
    if (!world.ok() || !(*sim)->StepAll(3).ok()) Fail("stepping the neighbour");
    return new Neighbour{*model, *(*sim)->Snapshot((*world)[0])};
  }();
  return *neighbour;
}

// An imported model either fails to compile with a status, or compiles and steps: three steps
// on the CPU, each ending with a finite state or a world flagged non-finite (frozen), never a
// crash, a hang or a step error. A healthy world placed after it in the batch steps bit for bit
// as it does alone: whatever the model, nothing it does reaches another world.
inline void CompileAndStep(const ModelDesc& desc) {
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(desc);
  if (!model.ok()) {
    if (model.status().message().empty()) Fail("a refused model must say why");
    return;
  }
  if ((*model)->body_count() > kMaxSteppedBodies || (*model)->shape_count() > kMaxSteppedShapes)
    return;
  const Neighbour& neighbour = GetNeighbour();
  auto sim = Simulator::Create({.backend = Backend::kCpu, .threads = 1});
  if (!sim.ok()) Fail("Simulator::Create", sim.status());
  auto worlds = (*sim)->CreateWorlds(*model, 1);
  if (!worlds.ok()) {
    // capacities are checked at creation: refused with a reason, never a crash
    if (worlds.status().message().empty()) Fail("a refused world must say why");
    return;
  }
  auto healthy = (*sim)->CreateWorlds(neighbour.model, 1);
  if (!healthy.ok()) Fail("creating the neighbour", healthy.status());
  absl::Status stepped = (*sim)->StepAll(3);
  if (!stepped.ok()) Fail("StepAll on a compiled model", stepped);
  auto stats = (*sim)->GetStats((*worlds)[0]);
  if (!stats.ok()) Fail("GetStats", stats.status());
  auto bodies = (*sim)->GetBodyState((*worlds)[0]);
  if (!bodies.ok()) Fail("GetBodyState", bodies.status());
  if (!(stats->flags & kWorldNonFinite)) {
    for (Real x : bodies->pose)
      if (!std::isfinite(x)) Fail("a world with a non-finite pose is not flagged non-finite");
  }
  if (*(*sim)->Snapshot((*healthy)[0]) != neighbour.after_three_steps)
    Fail("a fuzzed world changed its neighbour's step");
  // every keyframe the model compiled with is a state the world can start from and step
  for (size_t k = 0; k < (*model)->desc().keyframes.size() && k < 4; ++k) {
    absl::Status reset = (*sim)->Reset((*worlds)[0], std::to_string(k));
    if (!reset.ok()) Fail("Reset to a compiled keyframe", reset);
    stepped = (*sim)->Step({(*worlds)[0]}, {1});
    if (!stepped.ok()) Fail("a step from a keyframe", stepped);
  }
  // mocap bodies moved (turned and shifted) carry their shapes and joints into the next step
  if ((*model)->mocap_count() > 0) {
    std::vector<Real> mocap = *(*sim)->GetMocapPoses((*worlds)[0]);
    for (size_t m = 0; m < mocap.size(); m += 7) {
      mocap[m] += Real(0.01);
      mocap[m + 3] += Real(0.1);
    }
    absl::Status moved = (*sim)->SetMocapPoses((*worlds)[0], mocap);
    if (!moved.ok()) Fail("SetMocapPoses near the current poses", moved);
    stepped = (*sim)->Step({(*worlds)[0]}, {1});
    if (!stepped.ok()) Fail("a step after moving the mocap bodies", stepped);
  }
}

}  // namespace axion::fuzz
