// Stacks of images: naming them on the command line (files in band order, a quoted glob, a
// folder, @list.txt), reading them into one array of values, and writing results as one .npy
// file, one PNG, or a PNG/.npy per band through a printf pattern (out/band_%02d.png), or as one
// .mat, HDF5, TIFF or ENVI file (formats.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "array.h"
#include "file.h"
#include "formats.h"
#include "hpipe/view.h"
#include "io_png.h"

namespace hpipe::cli {

// Called as work advances: (done, total).
using Tick = std::function<void(std::size_t, std::size_t)>;

// "band_2" < "band_10": digit runs compare as numbers.
bool natural_less(const std::string &a, const std::string &b);

// Expands each spec: an existing file; a folder (its .png and .npy files); @list.txt (one path a
// line, relative to the list's folder; blank lines and # comments skipped); else a glob. Globs
// and folders are sorted naturally; explicit files keep their order.
std::vector<std::string> expand_inputs(const std::vector<std::string> &specs);

// How file contents become values: integers map to [0, 1] (or to a PNG's stored range) unless
// `raw`; floats are taken as they are. `layout`: how 3-D/4-D arrays are stored (formats.h).
struct ReadOptions {
  bool raw = false;
  std::optional<Layout> layout;  // nullopt: the format's default
};

// One file, by its content: PNG, .npy, or a format of formats.h (`file.mat:var` selects).
struct Source {
  std::string path;                 // as named, selector included
  RawArray array;                   // (..., C, H, W) once the layout is applied
  std::optional<ValueRange> range;  // from a PNG written with --scale
  Format format = Format::npy;
  std::string detail;               // what `info` adds about the format ("v7.3 'img'")
  Shape stored_shape;               // the shape as the file holds it
  std::optional<Layout> layout;     // how a 3-D/4-D array was stored, when that was a choice
  std::vector<double> wavelengths;  // nm, when the file says
  std::vector<std::string> files;   // the files read (outputs may never replace one)
};
Source read_source(const std::string &path, const ReadOptions &options);

// The values of a stack, in the type the kernels run in.
template <class T>
struct Stack {
  Shape shape;
  hpipe::AlignedVector<T> data;
  std::vector<std::string> files;
  std::int64_t bytes_read = 0;
};

// How a source's stored numbers become values (see ReadOptions).
struct Decoder {
  // value = scale (offset + stored factor); scale 2 (offset and factor halved) for a range wider
  // than the largest double, whose max - min overflows.
  double offset = 0, factor = 1, scale = 1;
  Decoder(const Source &source, const ReadOptions &options);
  double operator()(double stored) const { return scale * (offset + stored * factor); }
};

// Reads every file (by content), ticking once per file.
std::vector<Source> read_sources(const std::vector<std::string> &files, const ReadOptions &options, const Tick &tick);
// Whether any source holds float64 (then the work runs in double precision).
bool any_float64(const std::vector<Source> &sources);

// The sources as one stack, emptying them as it goes. One file keeps its own shape; several are
// stacked along the first axis (each (H, W), or (n, H, W) contributing n bands), and all must
// share H and W.
template <class T>
Stack<T> to_stack(std::vector<Source> &&sources, const ReadOptions &options);

struct Scale {
  enum Mode { none, automatic, fixed } mode = none;
  ValueRange range;  // for fixed
};
Scale parse_scale(const std::string &text);                // "auto", "none", "MIN,MAX"
std::optional<DType> parse_type(const std::string &text);  // "u8", "u16", "f32", "f64"; "" -> nullopt

struct WriteOptions {
  std::optional<DType> type;  // nullopt: the command's default for the format
  Scale scale;
  bool raw = false;
  bool force = false;
  WholeFileOptions file;  // layout, MATLAB version, wavelengths of the formats in formats.h
};

struct WriteReport {
  std::vector<std::string> files;
  DType type = DType::f32;
  std::int64_t bytes_written = 0;
  std::int64_t clipped = 0;         // values outside an integer type's range (NaN included), or
                                    // finite values past f32's, written as +-inf
  std::optional<ValueRange> range;  // the values mapped to the type's full range, when scaled
};

// The files `output` names for a result of `shape`: a .npy file (the whole array), a .png (a
// single plane), a printf pattern with one integer conversion (one file per plane, planes counted
// over all leading axes from 0), or a .mat/.h5/.tif/.hdr file (formats.h) for the whole result.
// UsageError when the result cannot go there: an unknown extension, a pattern for a whole-file
// format, not images, several planes without a pattern, empty planes, a PNG wider or taller than
// kPngMaxSide.
struct OutputPlan {
  Format format = Format::npy;
  bool pattern = false;
  Shape plane_shape;               // of each file
  std::vector<std::string> files;  // one per plane, or those of the whole-file format
};
OutputPlan plan_output(const std::string &output, const Shape &shape);
// What plan_output and OutputSet check of `output` before the result's shape is known: its format
// and % pattern, and for a single file (or ENVI's two) OutputSet::check. A UsageError otherwise.
void check_output_name(const std::string &output, const std::vector<std::string> &inputs, bool force);

// Writes `shape`/`data` to the files plan_output names, as part of `outputs`: every target is
// checked first (OutputSet::add; `inputs` are never replaced) and written beside itself, to be
// renamed into place by outputs.commit(). `default_type` applies when options.type is unset.
template <class T>
WriteReport write_stack(const std::string &output, const Shape &shape, const hpipe::AlignedVector<T> &data,
                        const WriteOptions &options, DType default_type, const std::vector<std::string> &inputs,
                        OutputSet &outputs, const Tick &tick);

}  // namespace hpipe::cli
