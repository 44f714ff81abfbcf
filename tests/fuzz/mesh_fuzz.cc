// Fuzz target: an STL (binary or ASCII), OBJ, COLLADA or MSH mesh file through the loader, and,
// where its vertices span a volume, its convex hull as a body's shape dropped onto a plane for
// three steps. The first byte picks the file's extension; the rest is the file.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "fuzz_support.h"
#include "io/io_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* const kExtensions[] = {".stl", ".obj", ".STL", ".OBJ",
                                            ".msh", ".MSH", ".dae", ".DAE"};
  const std::string path =
      "/tmp/axion-mesh-fuzz-" + std::to_string(getpid()) + kExtensions[data[0] % 8];
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data + 1, 1, size - 1, f);
    std::fclose(f);
  } else {
    axion::fuzz::Fail("cannot write the mesh file");
  }
  auto mesh = axion::io::LoadTriangleMesh(path, {1, 1, 1});
  std::remove(path.c_str());
  if (!mesh.ok()) {
    if (mesh.status().message().empty()) axion::fuzz::Fail("a refused mesh must say why");
    return 0;
  }
  for (const auto& triangle : mesh->triangles)
    for (int corner : triangle)
      if (corner < 0 || corner >= static_cast<int>(mesh->vertices.size()))
        axion::fuzz::Fail("a loaded triangle names a vertex the mesh does not have");
  const std::vector<axion::Vec3> points = axion::io::UniqueVertices(mesh->vertices);
  if (points.size() > 4096 || !axion::io::PointsSpanVolume(points)) return 0;
  axion::ModelDesc desc;
  axion::BodyDesc body;
  body.pose.pos = {0, 0, 1};
  desc.bodies.push_back(body);
  axion::ShapeDesc hull, floor;
  hull.body = 0;
  hull.type = axion::ShapeType::kConvexHull;
  hull.vertices = points;
  floor.type = axion::ShapeType::kPlane;
  desc.shapes.push_back(hull);
  desc.shapes.push_back(floor);
  axion::fuzz::CompileAndStep(desc);
  return 0;
}
