#include "array.h"

#include <cstring>
#include <sstream>

namespace hpipe::cli {

const char *name(DType t) {
  switch (t) {
    case DType::u8: return "uint8";
    case DType::u16: return "uint16";
    case DType::f32: return "float32";
    case DType::f64: return "float64";
  }
  return "?";
}

std::size_t size_of(DType t) {
  switch (t) {
    case DType::u8: return 1;
    case DType::u16: return 2;
    case DType::f32: return 4;
    case DType::f64: return 8;
  }
  return 1;
}

std::string shape_string(const Shape &shape) {
  std::ostringstream out;
  out << "(";
  for (std::size_t i = 0; i < shape.size(); i++) out << (i ? ", " : "") << shape[i];
  out << (shape.size() == 1 ? ",)" : ")");
  return out.str();
}

std::int64_t element_count(const Shape &shape, std::int64_t limit) {
  std::int64_t n = 1;
  for (std::int64_t e : shape) {
    if (e < 0) return -1;
    if (e != 0 && n > limit / e) return -1;
    n *= e;
  }
  return n;
}

double RawArray::at(std::int64_t i) const {
  const unsigned char *p = bytes.data() + static_cast<std::size_t>(i) * size_of(dtype);
  switch (dtype) {
    case DType::u8: return *p;
    case DType::u16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::f32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::f64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
  return 0;
}

}  // namespace hpipe::cli
