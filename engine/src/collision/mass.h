// Mass properties of shapes at uniform density (host only), used by the model importers. The
// sphere, capsule, box and cylinder formulas are MuJoCo's (user_objects.cc, mjCGeom::SetInertia
// in MuJoCo 2.2), so imported models reproduce MuJoCo's body masses and inertias; hulls are
// integrated exactly by tetrahedral decomposition.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "axion/math.h"
#include "axion/model.h"
#include "collision/hull.h"

namespace axion {

struct MassProperties {
  Real volume = 0;  // (m^3)
  Real mass = 0;    // density * volume (kg)
  Vec3 com;         // centre of mass in the shape frame (m)
  Mat33 inertia;    // about the centre of mass, shape frame axes (kg m^2)
};

// Closed forms about the shape origin (also the centre of mass); axes as in axion::ShapeType.
MassProperties SphereMassProperties(Real radius, Real density);
// Cylinder of length 2 half_length plus two hemispherical caps, each cap's inertia moved to the
// capsule centre with the parallel-axis theorem.
MassProperties CapsuleMassProperties(Real radius, Real half_length, Real density);
MassProperties BoxMassProperties(Vec3 half_extents, Real density);
MassProperties CylinderMassProperties(Real radius, Real half_length, Real density);
// Exact integration over the tetrahedra joining the vertex centroid to each face triangle.
absl::StatusOr<MassProperties> HullMassProperties(const HullData& hull, Real density);

// Any shape type: validates density (finite, >= 0) and sizes (finite, > 0; capsule half length
// >= 0), builds the hull of `vertices` for kConvexHull. Planes have no mass: an error.
absl::StatusOr<MassProperties> ShapeMassProperties(ShapeType type, Vec3 size,
                                                   const std::vector<Vec3>& vertices, Real density);

// Mass properties expressed in a parent frame in which the shape frame has pose (pos, quat).
MassProperties TransformMassProperties(const MassProperties& m, Vec3 pos, Quat quat);
// Union of two bodies of mass in the same frame (parallel-axis theorem to the joint centre).
MassProperties CombineMassProperties(const MassProperties& a, const MassProperties& b);

}  // namespace axion
