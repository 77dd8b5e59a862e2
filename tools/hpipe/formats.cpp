#include "formats.h"

#include <unistd.h>

#include <cctype>
#include <cstring>

#include "errors.h"
#include "file.h"
#include "io_envi.h"
#include "io_hdf5.h"
#include "io_mat.h"
#include "io_tiff.h"

namespace hpipe::cli {

std::string lower_case(std::string s) {
  for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

namespace {

bool ends_with(const std::string &s, const char *tail) {
  const std::size_t n = std::strlen(tail);
  return s.size() >= n && lower_case(s.substr(s.size() - n)) == tail;
}

bool named_as_container(const std::string &file) {
  return ends_with(file, ".mat") || ends_with(file, ".h5") || ends_with(file, ".hdf5") || ends_with(file, ".he5");
}

}  // namespace

const char *name(Format f) {
  switch (f) {
    case Format::png: return "PNG";
    case Format::npy: return "NPY";
    case Format::mat: return "MAT";
    case Format::hdf5: return "HDF5";
    case Format::tiff: return "TIFF";
    case Format::envi: return "ENVI";
  }
  return "?";
}

const char *name(Layout l) { return l == Layout::hwc ? "hwc" : "chw"; }

Layout default_layout(Format f) { return f == Format::mat || f == Format::hdf5 ? Layout::hwc : Layout::chw; }

std::optional<Layout> parse_layout(const std::string &text, const char *option) {
  if (text.empty()) return std::nullopt;
  if (text == "hwc") return Layout::hwc;
  if (text == "chw") return Layout::chw;
  throw UsageError(std::string(option) + ": expected hwc or chw, got '" + text + "'");
}

Selector split_selector(const std::string &spec) {
  for (std::size_t colon = spec.find(':'); colon != std::string::npos; colon = spec.find(':', colon + 1)) {
    const std::string file = spec.substr(0, colon);
    if (named_as_container(file) || (exists(file) && !is_directory(file))) return {file, spec.substr(colon + 1)};
  }
  return {spec, ""};
}

std::int64_t check_declared_size(const std::string &file, const std::string &what, std::int64_t elements,
                                 std::int64_t element_bytes, std::int64_t file_bytes, bool compressed,
                                 std::int64_t offset) {
  std::int64_t bytes = -1;  // -1: past 2^63 (a corrupt header's sizes may be anything)
  if (elements < 0 || element_bytes < 0 || offset < 0 || __builtin_mul_overflow(elements, element_bytes, &bytes) ||
      __builtin_add_overflow(bytes, offset, &bytes))
    bytes = -1;
  const std::int64_t memory = std::int64_t(sysconf(_SC_PHYS_PAGES)) * std::int64_t(sysconf(_SC_PAGESIZE));
  const std::int64_t limit =
      compressed && file_bytes < INT64_MAX / kMaxExpansion ? file_bytes * kMaxExpansion : file_bytes;
  if (bytes < 0 || bytes > limit)
    throw Failure(file + ": truncated or corrupt: " + what + " needs " +
                  (bytes < 0 ? "more than 2^63" : std::to_string(bytes)) + " bytes, more than the file's " +
                  std::to_string(file_bytes) + " bytes can hold" + (compressed ? " even compressed" : ""));
  if (bytes > memory)
    throw Failure(file + ": " + what + " needs " + std::to_string(bytes >> 20) + " MiB, more than this machine's " +
                  std::to_string(memory >> 20) + " MiB of memory");
  return bytes;
}

std::optional<Loaded> read_other_format(const std::string &spec) {
  const Selector s = split_selector(spec);
  Loaded l;
  // MATLAB before HDF5: a v7.3 file is an HDF5 file behind a MATLAB header.
  if (has_mat_magic(s.file)) {
    l.format = Format::mat;
    l.array = read_mat(s.file, s.name, l.detail);
    l.files = {s.file};
    return l;
  }
  if (has_hdf5_magic(s.file)) {
    l.format = Format::hdf5;
    l.array = read_hdf5(s.file, s.name, l.detail);
    l.files = {s.file};
    return l;
  }
  if (!s.name.empty())
    throw Failure(s.file + ": a ':" + s.name + "' selector needs a MATLAB or HDF5 file, and this is neither" +
                  (exists(s.file) ? "" : " (no such file)"));
  if (has_tiff_magic(spec)) {
    l.format = Format::tiff;
    l.array = read_tiff(spec, l.detail);
    l.files = {spec};
    l.band_first = true;
    return l;
  }
  const std::string header = envi_header_of(spec);
  if (!header.empty()) {
    EnviImage e = read_envi(header, header == spec ? "" : spec);  // the data file named, when it was
    l.format = Format::envi;
    l.array = std::move(e.array);
    l.wavelengths = std::move(e.wavelengths);
    l.detail = e.detail;
    l.files = {header, e.data_file};
    l.band_first = true;
    return l;
  }
  return std::nullopt;
}

RawArray transpose(const RawArray &a, const std::vector<int> &perm) {
  const std::size_t rank = a.shape.size(), element = size_of(a.dtype);
  RawArray out;
  out.dtype = a.dtype;
  std::vector<std::int64_t> strides(rank, 1), walk(rank);  // a's strides in elements, in the result's axis order
  for (std::size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * a.shape[d];
  for (std::size_t k = 0; k < rank; k++) {
    out.shape.push_back(a.shape[static_cast<std::size_t>(perm[k])]);
    walk[k] = strides[static_cast<std::size_t>(perm[k])];
  }
  out.bytes.resize(a.bytes.size());
  const std::int64_t n = a.size();
  std::vector<std::int64_t> index(rank, 0);
  std::int64_t from = 0;
  for (std::int64_t i = 0; i < n; i++) {
    std::memcpy(out.bytes.data() + i * std::int64_t(element), a.bytes.data() + from * std::int64_t(element), element);
    for (std::size_t k = rank; k-- > 0;) {  // the odometer over the result's index
      from += walk[k];
      if (++index[k] < out.shape[k]) break;
      from -= walk[k] * out.shape[k];
      index[k] = 0;
    }
  }
  return out;
}

RawArray hwc_to_chw(const RawArray &a) {
  const std::size_t r = a.shape.size();
  if (r == 3) return transpose(a, {2, 0, 1});
  if (r == 4) return transpose(a, {0, 3, 1, 2});
  return a;
}

RawArray chw_to_hwc(const RawArray &a) {
  const std::size_t r = a.shape.size();
  if (r == 3) return transpose(a, {1, 2, 0});
  if (r == 4) return transpose(a, {0, 2, 3, 1});
  return a;
}

Format output_format(const std::string &output, const char *option) {
  const std::string file = split_selector(output).file;
  if (ends_with(file, ".png")) return Format::png;
  if (ends_with(file, ".npy")) return Format::npy;
  if (ends_with(file, ".mat")) return Format::mat;
  if (ends_with(file, ".h5") || ends_with(file, ".hdf5") || ends_with(file, ".he5")) return Format::hdf5;
  if (ends_with(file, ".tif") || ends_with(file, ".tiff")) return Format::tiff;
  if (ends_with(file, ".hdr")) return Format::envi;
  throw UsageError(std::string(option) + " " + output +
                   ": expected a .png, .npy, .mat, .h5, .tif or .hdr (ENVI) name (or a pattern such as " +
                   "out/band_%02d.png)");
}

std::vector<std::string> output_files(Format f, const std::string &output) {
  const std::string file = split_selector(output).file;
  if (f == Format::envi) return {file, file.substr(0, file.size() - 4) + ".img"};
  return {file};
}

void write_other_format(Format f, const std::string &output, const std::vector<Destination> &files, const RawArray &a,
                        const WholeFileOptions &options) {
  const std::string selected = split_selector(output).name;
  const Layout layout = options.layout.value_or(default_layout(f));
  switch (f) {
    case Format::mat:
      write_mat(files[0], selected.empty() ? "data" : selected, layout == Layout::hwc ? chw_to_hwc(a) : a,
                options.mat73);
      return;
    case Format::hdf5:
      write_hdf5(files[0], selected.empty() ? "/data" : selected, layout == Layout::hwc ? chw_to_hwc(a) : a);
      return;
    case Format::tiff: write_tiff(files[0], a); return;
    case Format::envi: write_envi(files[0], files[1], a, options.wavelengths); return;
    case Format::png:
    case Format::npy: break;
  }
  throw std::logic_error("write_other_format: PNG and .npy are written by write_stack");
}

}  // namespace hpipe::cli
