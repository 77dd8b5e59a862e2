// NumPy .npy files: float32, float64, uint8 and uint16, little-endian, C order, any rank.
// Anything else (Fortran order, big-endian, other dtypes, a truncated or padded data block, a
// malformed header) is a Failure naming the file and what is wrong; nothing is allocated
// beyond what the file actually holds.
#pragma once

#include <string>

#include "array.h"

namespace hpipe::cli {

bool has_npy_magic(const std::string &path);
RawArray read_npy(const std::string &path);
// Writes format version 1.0 (2.0 when the header needs it).
void write_npy(const std::string &path, const RawArray &array);

}  // namespace hpipe::cli
