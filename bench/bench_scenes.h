// Scenes shared by the engine benchmarks.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "axion/model.h"
#include "axion/simulator.h"
#include "benchmark/benchmark.h"

namespace axion::bench {

inline Mat33 BoxInertia(Real mass, Vec3 half) {
  Real x = 2 * half.x, y = 2 * half.y, z = 2 * half.z;
  return mat33_diag(
      {mass * (y * y + z * z) / 12, mass * (x * x + z * z) / 12, mass * (x * x + y * y) / 12});
}

inline std::shared_ptr<const Model> Compile(ModelDesc d) {
  auto m = Model::Compile(std::move(d));
  if (!m.ok()) {
    std::fprintf(stderr, "scene does not compile: %s\n", std::string(m.status().message()).c_str());
    std::abort();
  }
  return *m;
}

// `count` free bodies tumbling under gravity, no contacts.
inline ModelDesc FreeBodies(int count) {
  ModelDesc d;
  for (int i = 0; i < count; ++i) {
    BodyDesc b;
    b.mass = 1 + 0.1 * i;
    b.inertia = BoxInertia(b.mass, {0.1, 0.2, 0.3});
    b.pose.pos = {Real(i), 0, 1};
    b.angular_velocity = {1, 2, 3};
    d.bodies.push_back(b);
  }
  return d;
}

// A chain of `links` hinged boxes, released horizontally.
inline ModelDesc Chain(int links) {
  ModelDesc d;
  for (int i = 0; i < links; ++i) {
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
    d.joints.push_back(j);
  }
  return d;
}

// `count` boxes stacked on a ground plane.
inline ModelDesc Stack(int count) {
  ModelDesc d;
  ShapeDesc ground;
  ground.type = ShapeType::kPlane;
  d.shapes.push_back(ground);
  for (int i = 0; i < count; ++i) {
    BodyDesc b;
    b.mass = 1;
    b.inertia = BoxInertia(1, {0.1, 0.1, 0.1});
    b.pose.pos = {0, 0, 0.1 + 0.2 * i};
    d.bodies.push_back(b);
    ShapeDesc s;
    s.body = i;
    s.type = ShapeType::kBox;
    s.size = {0.1, 0.1, 0.1};
    d.shapes.push_back(s);
  }
  return d;
}

// `count` spheres dropped into an open box made of a floor and four walls.
inline ModelDesc SpheresInBox(int count) {
  ModelDesc d;
  ShapeDesc floor;
  floor.type = ShapeType::kPlane;
  d.shapes.push_back(floor);
  const Real half = 0.6;
  for (int side = 0; side < 4; ++side) {
    ShapeDesc wall;
    wall.type = ShapeType::kBox;
    bool x = side < 2;
    Real sign = side % 2 == 0 ? 1 : -1;
    wall.pose.pos = x ? Vec3{sign * (half + 0.05), 0, 0.5} : Vec3{0, sign * (half + 0.05), 0.5};
    wall.size = x ? Vec3{0.05, half + 0.1, 0.5} : Vec3{half + 0.1, 0.05, 0.5};
    d.shapes.push_back(wall);
  }
  for (int i = 0; i < count; ++i) {
    BodyDesc b;
    b.mass = 0.5;
    Real r = 0.1;
    Real inertia = 0.4 * b.mass * r * r;
    b.inertia = mat33_diag({inertia, inertia, inertia});
    int layer = i / 25, k = i % 25;
    b.pose.pos = {-0.48 + 0.24 * (k % 5) + 0.01 * layer, -0.48 + 0.24 * (k / 5),
                  0.12 + 0.22 * layer};
    d.bodies.push_back(b);
    ShapeDesc s;
    s.body = i;
    s.type = ShapeType::kSphere;
    s.size = {r, 0, 0};
    d.shapes.push_back(s);
  }
  d.contact_capacity = 8 * count;
  return d;
}

// Steps `worlds` copies of `model` in a benchmark loop and reports world-steps/s, body-steps/s
// and the mean Newton and CR iterations per world-step.
inline void RunWorlds(benchmark::State& state, std::shared_ptr<const Model> model, int worlds,
                      int threads, int warmup_steps = 10) {
  SimulatorOptions options;
  options.backend = Backend::kCpu;
  options.threads = threads;
  auto sim = std::move(*Simulator::Create(options));
  std::vector<WorldId> ids = *sim->CreateWorlds(model, worlds);
  if (!sim->StepAll(warmup_steps).ok()) state.SkipWithError("step failed");
  int64_t world_steps = 0;
  for (auto _ : state) {
    if (!sim->StepAll(1).ok()) state.SkipWithError("step failed");
    world_steps += worlds;
  }
  // Solver statistics from a few more steps, outside the timed loop.
  double newton = 0, cr = 0, contacts = 0;
  int64_t sampled = 0;
  for (int n = 0; n < 10; ++n) {
    if (!sim->StepAll(1).ok()) state.SkipWithError("step failed");
    for (WorldId id : ids) {
      WorldStats st = *sim->GetStats(id);
      newton += st.newton_iterations;
      cr += st.cr_iterations;
      contacts += st.contact_count;
      ++sampled;
    }
  }
  state.counters["world_steps/s"] =
      benchmark::Counter(static_cast<double>(world_steps), benchmark::Counter::kIsRate);
  state.counters["body_steps/s"] = benchmark::Counter(
      static_cast<double>(world_steps) * model->body_count(), benchmark::Counter::kIsRate);
  state.counters["newton"] = newton / static_cast<double>(sampled);
  state.counters["cr"] = cr / static_cast<double>(sampled);
  state.counters["contacts"] = contacts / static_cast<double>(sampled);
}

}  // namespace axion::bench
