// Packed little-endian float32 / int32 arrays as carried in the proto `bytes` fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/types/span.h"
#include "axion/config.h"

namespace axion::server {

// Appends `values` as float32 (rounded to nearest) to `out`.
void AppendFloat32(absl::Span<const Real> values, std::string* out);
// Appends `values` as int32 to `out`.
void AppendInt32(absl::Span<const int32_t> values, std::string* out);

// Number of float32 values in `bytes`, or -1 when its size is not a multiple of 4.
int64_t Float32Count(std::string_view bytes);

// Reads float32 values [first, first + out.size()) of `bytes` into `out`. The caller checks
// the range with Float32Count.
void ReadFloat32(std::string_view bytes, int64_t first, absl::Span<float> out);
float ReadFloat32At(std::string_view bytes, int64_t index);

}  // namespace axion::server
