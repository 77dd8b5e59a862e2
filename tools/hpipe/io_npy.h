// NumPy .npy files: float32, float64, uint8 and uint16, little-endian, C order, any rank.
// Anything else (Fortran order, big-endian, other dtypes, a truncated or padded data block, a
// malformed header) is a Failure naming the file and what is wrong; nothing is allocated
// beyond what the file actually holds. A key given twice in the header counts once, with its last
// value, as NumPy reads it (the header is a Python dict literal).
#pragma once

#include <string>

#include "array.h"
#include "file.h"

namespace hpipe::cli {

// Whether a file's first bytes are the .npy magic.
bool is_npy(const unsigned char *head, std::size_t size);
RawArray read_npy(const std::string &path);
RawArray read_npy(InputFile &in);  // from the start
// Writes format version 1.0 (2.0 when the header needs it).
void write_npy(const std::string &path, const RawArray &array);
void write_npy(OutputFile &out, const RawArray &array);  // closes `out`

}  // namespace hpipe::cli
