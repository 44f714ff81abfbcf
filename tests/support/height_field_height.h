// The surface of a height field's grid as the tests check it against: the two triangles of each
// cell (MuJoCo's split, along the (r, c) - (r + 1, c + 1) diagonal) interpolated here,
// independently of the narrow phase and the loaders.
#pragma once

#include <algorithm>
#include <cmath>

#include "axion/math.h"

namespace axion {

// Height at (x, y) in the field's frame of a grid of rows x cols `heights` (row-major, rows
// along y) over [-sx, sx] x [-sy, sy]; clamped to the grid's edge cells outside it.
inline Real HeightFieldHeight(const Real* heights, int rows, int cols, Real sx, Real sy, Real x,
                              Real y) {
  const Real u = (x + sx) / (2 * sx) * (cols - 1), v = (y + sy) / (2 * sy) * (rows - 1);
  const int c = std::clamp(static_cast<int>(std::floor(u)), 0, cols - 2);
  const int r = std::clamp(static_cast<int>(std::floor(v)), 0, rows - 2);
  const Real fu = std::clamp(u - c, Real(0), Real(1)), fv = std::clamp(v - r, Real(0), Real(1));
  const auto h = [&](int i, int j) { return heights[i * cols + j]; };
  // above the diagonal: triangle (r, c), (r + 1, c + 1), (r + 1, c)
  return fv >= fu ? h(r, c) + fv * (h(r + 1, c) - h(r, c)) + fu * (h(r + 1, c + 1) - h(r + 1, c))
                  : h(r, c) + fu * (h(r, c + 1) - h(r, c)) + fv * (h(r + 1, c + 1) - h(r, c + 1));
}

}  // namespace axion
