// The in-memory array of the hpipe tool: what a file holds, in its own element type, C order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hpipe::cli {

enum class DType { u8, u16, f32, f64 };

const char *name(DType t);  // "uint8", "uint16", "float32", "float64"
std::size_t size_of(DType t);

using Shape = std::vector<std::int64_t>;
std::string shape_string(const Shape &shape);  // "(2, 3)", "(5,)", "()"
// Elements of `shape`, or -1 when the product exceeds `limit` (or any extent is negative).
std::int64_t element_count(const Shape &shape, std::int64_t limit = INT64_MAX);

// A dense C-order array of one element type, as read from or written to a file.
struct RawArray {
  Shape shape;
  DType dtype = DType::f32;
  std::vector<unsigned char> bytes;

  std::int64_t size() const { return static_cast<std::int64_t>(bytes.size() / size_of(dtype)); }
  // Element i as a double (no normalisation).
  double at(std::int64_t i) const;
};

}  // namespace hpipe::cli
