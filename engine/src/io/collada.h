// COLLADA (.dae) meshes, the format most ROS robot descriptions ship their meshes in.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "io/io_util.h"

namespace axion::io {

// The triangles of a COLLADA document's scene, as one mesh in the file's frame:
// - every <instance_geometry> (and skinned <instance_controller>) reached from the scene's
//   visual scene (or, without one, every geometry of the file), placed by the transforms of
//   the nodes above it (<matrix>, <translate>, <rotate>, <scale>, in document order) and
//   through <instance_node>;
// - in metres (<asset><unit meter>), as RViz, Gazebo and pybullet read them;
// - with its <up_axis> not applied: RViz, Gazebo and pybullet all ignore it, robot
//   descriptions are drawn and checked in them, and exporters write it regardless of the data
//   (MeshLab's Y_UP over z-up data: pybullet's racecar chassis, 0.2 m wide in y and 0.06 m
//   tall in z, would stand on its side);
// - <triangles>, <polylist>, <polygons> (outer boundaries), <trifans> and <tristrips>, polygons
//   as fans; lines carry no surface and are skipped. Triangles keep their winding seen from
//   outside, through mirroring transforms too.
// Only the vertices a primitive names enter the mesh. Errors name the file, the line and what
// is wrong.
absl::StatusOr<TriangleMesh> ParseCollada(const std::string& path, const std::string& bytes);

}  // namespace axion::io
