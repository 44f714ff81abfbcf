#include "server/arrays.h"

#include <bit>
#include <cstring>

namespace axion::server {
namespace {

// The wire format is little-endian; on a big-endian host every word is swapped.
uint32_t ToWire(uint32_t word) {
  if constexpr (std::endian::native == std::endian::big) return __builtin_bswap32(word);
  return word;
}

}  // namespace

void AppendFloat32(absl::Span<const Real> values, std::string* out) {
  const size_t start = out->size();
  out->resize(start + 4 * values.size());
  char* dst = out->data() + start;
  for (size_t i = 0; i < values.size(); ++i) {
    const uint32_t word = ToWire(std::bit_cast<uint32_t>(static_cast<float>(values[i])));
    std::memcpy(dst + 4 * i, &word, 4);
  }
}

void AppendInt32(absl::Span<const int32_t> values, std::string* out) {
  const size_t start = out->size();
  out->resize(start + 4 * values.size());
  char* dst = out->data() + start;
  for (size_t i = 0; i < values.size(); ++i) {
    const uint32_t word = ToWire(static_cast<uint32_t>(values[i]));
    std::memcpy(dst + 4 * i, &word, 4);
  }
}

int64_t Float32Count(std::string_view bytes) {
  if (bytes.size() % 4 != 0) return -1;
  return static_cast<int64_t>(bytes.size() / 4);
}

float ReadFloat32At(std::string_view bytes, int64_t index) {
  uint32_t word;
  std::memcpy(&word, bytes.data() + 4 * index, 4);
  return std::bit_cast<float>(ToWire(word));
}

void ReadFloat32(std::string_view bytes, int64_t first, absl::Span<float> out) {
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = ReadFloat32At(bytes, first + static_cast<int64_t>(i));
  }
}

}  // namespace axion::server
