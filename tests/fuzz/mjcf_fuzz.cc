// Fuzz target: MJCF text through the importer, Model::Compile and three steps, and the file's
// coordinates, tendons and sensors of the initial state. Anything may
// be refused with a status; nothing may crash, read out of bounds or leave a world unflagged
// in a non-finite state. <include> and mesh paths resolve in a directory that does not exist,
// so every file reference is refused by name.
#include <cmath>
#include <cstdint>
#include <string_view>

#include "axion/mjcf.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view xml(reinterpret_cast<const char*>(data), size);
  auto imported = axion::LoadMjcfString(xml, "/nonexistent/axion-fuzz");
  if (!imported.ok()) {
    if (imported.status().message().empty()) axion::fuzz::Fail("a refused file must say why");
    return 0;
  }
  axion::fuzz::CompileAndStep(imported->model);
  // the file's coordinates of the initial state: MuJoCo's qpos0 (merged hinges solved)
  auto model = axion::Model::Compile(imported->model);
  if (!model.ok()) return 0;
  auto file = axion::InitialFileCoordinates(*imported, **model);
  if (!file.ok()) axion::fuzz::Fail("file coordinates of a compiled model", file.status());
  for (axion::Real x : file->position)
    if (!std::isfinite(x)) axion::fuzz::Fail("a non-finite file coordinate of a finite state");
  // the tendons' lengths and the file's sensors at the initial state: every one read, finite
  if (imported->source_sensors.empty() && imported->model.tendons.empty()) return 0;
  axion::SimulatorOptions options;
  options.backend = axion::Backend::kCpu;
  options.threads = 1;
  auto sim = axion::Simulator::Create(options);
  if (!sim.ok()) axion::fuzz::Fail("a CPU simulator", sim.status());
  auto ids = (*sim)->CreateWorlds(*model, 1);
  if (!ids.ok()) return 0;
  auto tendons = (*sim)->GetTendonStates(ids->front());
  if (!tendons.ok()) axion::fuzz::Fail("the tendons of the initial state", tendons.status());
  for (axion::Real x : *tendons)
    if (!std::isfinite(x)) axion::fuzz::Fail("a non-finite tendon length of a finite state");
  if (imported->source_sensors.empty()) return 0;
  auto sensors = axion::ReadFileSensors(*imported, **model, **sim, ids->front());
  if (!sensors.ok()) axion::fuzz::Fail("the sensors of the initial state", sensors.status());
  if (static_cast<int>(sensors->size()) != imported->sensor_data_count)
    axion::fuzz::Fail("sensor data of the wrong length");
  for (axion::Real x : *sensors)
    if (!std::isfinite(x)) axion::fuzz::Fail("a non-finite sensor value of a finite state");
  return 0;
}
