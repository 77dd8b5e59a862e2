// ENVI images: a text header (.hdr) beside a raw binary file. Read: BSQ, BIL and BIP interleave,
// data types 1 (uint8), 2 (int16, read as float32 values), 4 (float32), 5 (float64) and 12
// (uint16), either byte order, a header offset; the wavelengths (converted to nm) are kept. The
// result is (C, H, W) whatever the interleave. Written: BSQ, little-endian, `X.hdr` + `X.img`.
#pragma once

#include <string>
#include <vector>

#include "array.h"
#include "file.h"

namespace hpipe::cli {

// The header of `path` when it is an ENVI header, or the data file of one: X.hdr itself, or X
// (X.img, X.raw...) beside X.hdr or X.img.hdr. Empty when there is none.
std::string envi_header_of(const std::string &path);

struct EnviImage {
  RawArray array;                   // (C, H, W), or (H, W) for one band
  std::vector<double> wavelengths;  // nm; empty when the header has none
  std::string detail;               // "BIL, int16 big-endian"
  std::string data_file;
};
// `data`: the data file the user named (stem.raw beside stem.hdr); empty: the one found beside
// the header (data_file_of).
EnviImage read_envi(const std::string &header, const std::string &data = "");

// `a` is (H, W) or (C, H, W).
void write_envi(const Destination &header, const Destination &data, const RawArray &a,
                const std::vector<double> &wavelengths);

}  // namespace hpipe::cli
