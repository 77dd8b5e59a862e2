// TIFF through libtiff: a multi-page file is a band stack, one page per band, read as (C, H, W);
// a single page with several samples per pixel (RGB, or a multi-sample spectral page) reads as
// one band per sample. 8- and 16-bit unsigned integers and 32/64-bit floats, any compression
// libtiff decodes, strips or tiles. Written uncompressed, one page per band (BigTIFF past 4 GiB).
#pragma once

#include <string>

#include "array.h"
#include "file.h"

namespace hpipe::cli {

bool has_tiff_magic(const std::string &path);
// `detail` receives "28 pages" or "1 page, 3 samples".
RawArray read_tiff(const std::string &path, std::string &detail);
// `a` is (H, W) or (C, H, W) of any element type.
void write_tiff(const Destination &file, const RawArray &a);

}  // namespace hpipe::cli
