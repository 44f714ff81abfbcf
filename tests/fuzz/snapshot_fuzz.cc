// Fuzz target: Simulator::Restore from bytes a client sends (the server's RestoreSnapshot hands
// them through unchanged). Two worlds of one model step together; world 1 is restored from the
// input and world 0 from a valid snapshot, then both step. Whatever the bytes, Restore either
// refuses them naming the problem and leaves world 1 as it was, or accepts a state that steps;
// and world 0's step is bit for bit what it is alone, so a corrupt snapshot never reaches
// another world.
//
// The input is either a whole snapshot (it starts with "AXSNAP") or an edit of a valid one: two
// bytes give an offset into it, one byte a length change (truncate or extend), and the rest
// overwrites it from that offset. The edits reach past the header's model fingerprint, which
// random whole snapshots almost never match.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "axion/mjcf.h"
#include "fuzz_support.h"

namespace {

// A motor-driven hinge arm beside a free box resting on a plane: joint rows, an actuator and
// contacts with sliding, torsional and rolling friction, so every block of the snapshot is
// non-empty.
constexpr char kModel[] = R"(<mujoco>
  <option timestep="0.01"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body name="arm" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" range="-90 90" limited="true"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04"/>
      <body name="forearm" pos="0.4 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      </body>
    </body>
    <body name="box" pos="1 0 0.1">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1" condim="6"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="hinge" gear="10" ctrlrange="-1 1" ctrllimited="true"/>
  </actuator>
</mujoco>)";

struct Fixture {
  std::unique_ptr<axion::Simulator> sim;
  axion::WorldId clean = 0, fuzzed = 0;
  std::string start;       // a snapshot after 20 steps, world 1's state before each input
  std::string clean_next;  // world 0 after one step from `start`, stepped alone
};

Fixture& Get() {
  static Fixture* fixture = [] {
    auto* f = new Fixture;
    auto imported = axion::LoadMjcfString(kModel, "");
    if (!imported.ok()) axion::fuzz::Fail("the fixture's model", imported.status());
    auto model = axion::Model::Compile(imported->model);
    if (!model.ok()) axion::fuzz::Fail("the fixture's model", model.status());
    auto sim = axion::Simulator::Create({.backend = axion::Backend::kCpu, .threads = 1});
    if (!sim.ok()) axion::fuzz::Fail("Simulator::Create", sim.status());
    f->sim = *std::move(sim);
    auto worlds = f->sim->CreateWorlds(*model, 2);
    if (!worlds.ok()) axion::fuzz::Fail("CreateWorlds", worlds.status());
    f->clean = (*worlds)[0];
    f->fuzzed = (*worlds)[1];
    const axion::Real ctrl[] = {0.7};
    if (!f->sim->SetControls(f->clean, ctrl).ok()) axion::fuzz::Fail("SetControls");
    if (!f->sim->Step({f->clean}, {20}).ok()) axion::fuzz::Fail("the fixture's steps");
    f->start = *f->sim->Snapshot(f->clean);
    if (!f->sim->Step({f->clean}).ok()) axion::fuzz::Fail("the fixture's step");
    f->clean_next = *f->sim->Snapshot(f->clean);
    return f;
  }();
  return *fixture;
}

std::string SnapshotFromInput(const uint8_t* data, size_t size, const std::string& valid) {
  if (size >= 6 && std::memcmp(data, "AXSNAP", 6) == 0)
    return std::string(reinterpret_cast<const char*>(data), size);
  std::string bytes = valid;
  if (size < 3) return bytes;
  const size_t offset = (size_t(data[0]) | size_t(data[1]) << 8) % (bytes.size() + 1);
  const int resize = int(data[2]) - 128;  // -128..127 bytes
  bytes.resize(static_cast<size_t>(std::max<long>(0, long(bytes.size()) + resize)));
  for (size_t i = 3; i < size; ++i) {
    const size_t at = offset + i - 3;
    if (at >= bytes.size())
      bytes.push_back(static_cast<char>(data[i]));
    else
      bytes[at] = static_cast<char>(data[i]);
  }
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Fixture& f = Get();
  if (!f.sim->Restore(f.clean, f.start).ok() || !f.sim->Restore(f.fuzzed, f.start).ok())
    axion::fuzz::Fail("restoring a valid snapshot");
  const std::string bytes = SnapshotFromInput(data, size, f.start);
  const absl::Status restored = f.sim->Restore(f.fuzzed, bytes);
  if (!restored.ok()) {
    if (restored.message().empty()) axion::fuzz::Fail("a refused snapshot must say why");
    // refused: world 1 keeps the state it had
    if (*f.sim->Snapshot(f.fuzzed) != f.start)
      axion::fuzz::Fail("a refused snapshot changed its world", restored);
  }
  const absl::Status stepped = f.sim->StepAll(1);
  if (!stepped.ok()) axion::fuzz::Fail("stepping after Restore", stepped);
  if (*f.sim->Snapshot(f.clean) != f.clean_next)
    axion::fuzz::Fail("a restored snapshot changed another world's step");
  auto stats = f.sim->GetStats(f.fuzzed);
  auto bodies = f.sim->GetBodyState(f.fuzzed);
  if (!stats.ok() || !bodies.ok()) axion::fuzz::Fail("reading the restored world");
  if (!(stats->flags & axion::kWorldNonFinite))
    for (axion::Real x : bodies->pose)
      if (!std::isfinite(x)) axion::fuzz::Fail("a non-finite restored world is not flagged");
  return 0;
}
