// Fuzz target: URDF text through the importer (floating base, a floor, servos, balanced
// inertias, so those paths run too), Model::Compile and three steps. As mjcf_fuzz.cc: refusals
// carry a reason; nothing crashes.
#include <cstdint>
#include <string_view>

#include "axion/urdf.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // the first byte picks the options, the rest is the file
  if (size == 0) return 0;
  axion::UrdfOptions options;
  options.floating_base = data[0] & 1;
  if (data[0] & 4) {
    options.position_kp = 50;
    options.position_kv = 5;
  }
  options.balance_inertia = data[0] & 8;
  options.inertia_from_collision = data[0] & 16;
  const std::string_view xml(reinterpret_cast<const char*>(data + 1), size - 1);
  auto imported = axion::LoadUrdfString(xml, "/nonexistent/axion-fuzz", options);
  if (!imported.ok()) {
    if (imported.status().message().empty()) axion::fuzz::Fail("a refused file must say why");
    return 0;
  }
  if (data[0] & 2) {  // a floor under the robot, as axion-sim --floor adds one
    axion::ShapeDesc floor;
    floor.type = axion::ShapeType::kPlane;
    floor.pose.pos = {0, 0, -0.5};
    imported->model.shapes.push_back(floor);
  }
  axion::fuzz::CompileAndStep(imported->model);
  return 0;
}
