// Spectral file formats beyond PNG and .npy, and how they plug into stacks: MATLAB .mat (v5 and
// v7.3, through matio), HDF5 datasets, multi-page TIFF (one page per band) and ENVI (.hdr +
// binary). A `file.ext:name` selector picks a MATLAB variable or an HDF5 dataset. Files are told
// apart by content (their magic bytes; ENVI by its .hdr), outputs by their extension.
//
// Layout: the kernels take band stacks as (C, H, W). Formats that store a plain N-d array (.mat,
// HDF5, .npy) may hold a cube as (H, W, C) instead, the convention of the KAIST/CAVE/ICVL/ARAD
// files: --layout hwc|chw says which (the defaults: .mat and HDF5 hwc, .npy and PNG chw), and
// 3-D and 4-D arrays stored hwc are read as (..., C, H, W). TIFF pages and ENVI interleave say
// themselves where the bands are; those are always read as (C, H, W).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "array.h"
#include "file.h"

namespace hpipe::cli {

enum class Format { png, npy, mat, hdf5, tiff, envi };
enum class Layout { chw, hwc };

const char *name(Format f);  // "PNG", "NPY", "MAT", "HDF5", "TIFF", "ENVI"
std::string lower_case(std::string s);
const char *name(Layout l);  // "chw", "hwc"
Layout default_layout(Format f);
std::optional<Layout> parse_layout(const std::string &text, const char *option);  // "" -> nullopt

// "scene.mat:img" -> {"scene.mat", "img"}; "f.h5:/g/x" -> {"f.h5", "/g/x"}. A spec splits at the
// first ':' whose left part is an existing file or ends in .mat/.h5/.hdf5/.he5; else no selector.
struct Selector {
  std::string file, name;
};
Selector split_selector(const std::string &spec);

// A file in one of the formats above, as read: `array` in C order with the shape the file's own
// tools show (MATLAB's and SciPy's for .mat, h5py's for HDF5), or (C, H, W) for TIFF and ENVI.
struct Loaded {
  Format format;
  RawArray array;
  std::string detail;               // "v7.3 'img'", "BIL big-endian", for `info`
  std::vector<double> wavelengths;  // nm, when the file says (ENVI)
  bool band_first = false;          // already (C, H, W): layout does not apply
  std::vector<std::string> files;   // every file read (ENVI: the header and the data)
};
// The file behind `spec` in one of these formats, or nullopt when it is none of them (PNG, .npy).
std::optional<Loaded> read_other_format(const std::string &spec);

// A 3-D or 4-D array stored (..., H, W, C) as (..., C, H, W); other ranks unchanged.
RawArray hwc_to_chw(const RawArray &a);
RawArray chw_to_hwc(const RawArray &a);
// `a` with its axes permuted: result axis k is a's axis perm[k] (NumPy's transpose).
RawArray transpose(const RawArray &a, const std::vector<int> &perm);

// The format an output name asks for, by extension (.png .npy .mat .h5/.hdf5 .tif/.tiff .hdr);
// a UsageError naming `option` (the option that gave the name) for anything else.
Format output_format(const std::string &output, const char *option = "-o");
// The files an output writes: ENVI's header and its data (.img); otherwise the file itself.
std::vector<std::string> output_files(Format f, const std::string &output);

struct WholeFileOptions {
  std::optional<Layout> layout;     // nullopt: the format's default
  bool mat73 = false;               // MATLAB v7.3 (HDF5) instead of v5
  std::vector<double> wavelengths;  // written to an ENVI header when there is one per band
};
// Writes the whole array `a` ((C, H, W) band stacks, or any shape the format holds) in format `f`
// to `files` (as output_files(f, output) names them; `output` supplies the selector).
void write_other_format(Format f, const std::string &output, const std::vector<Destination> &files, const RawArray &a,
                        const WholeFileOptions &options);

// Readers bound what a header may make them allocate: a Failure naming `file` unless `bytes`
// could come out of `file_bytes` of file, as they are or, when `compressed`, expanded by at most
// kMaxExpansion (deflate tops out at 1032:1, LZW below 2731:1, PackBits at 128:1), and fit in
// the machine's memory. A fuzz harness for these readers calls read_other_format on its file.
constexpr std::int64_t kMaxExpansion = 4096;
// `elements` (negative: past 2^63 already) of `element_bytes` each after `offset` bytes; returns
// their bytes, computed without overflow.
std::int64_t check_declared_size(const std::string &file, const std::string &what, std::int64_t elements,
                                 std::int64_t element_bytes, std::int64_t file_bytes, bool compressed,
                                 std::int64_t offset = 0);

}  // namespace hpipe::cli
