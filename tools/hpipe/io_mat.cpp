#include "io_mat.h"

#include <matio.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <vector>

#include "errors.h"
#include "file.h"
#include "formats.h"
#include "io_hdf5.h"

namespace hpipe::cli {

namespace {

// matio reports problems through a log function; keep the last message for our own error line
// (and keep it off stderr: one line per error).
std::string &last_matio_message() {
  static std::string message;
  return message;
}

void capture_matio_log(int, char *message) { last_matio_message() = message ? message : ""; }

void quiet_matio() {
  static const bool once = [] {
    Mat_LogInitFunc("hpipe", capture_matio_log);
    return true;
  }();
  (void)once;
}

std::string matio_reason() {
  const std::string m = last_matio_message().substr(0, last_matio_message().find('\n'));  // one line
  return m.empty() ? "" : " (matio: " + m + ")";
}

struct MatCloser {
  void operator()(mat_t *m) const { Mat_Close(m); }
};
struct VarFreer {
  void operator()(matvar_t *v) const { Mat_VarFree(v); }
};
using MatFile = std::unique_ptr<mat_t, MatCloser>;
using MatVar = std::unique_ptr<matvar_t, VarFreer>;

const char *class_name(matio_classes c) {
  switch (c) {
    case MAT_C_EMPTY: return "empty";
    case MAT_C_CELL: return "cell";
    case MAT_C_STRUCT: return "struct";
    case MAT_C_OBJECT: return "object";
    case MAT_C_CHAR: return "char";
    case MAT_C_SPARSE: return "sparse";
    case MAT_C_DOUBLE: return "double";
    case MAT_C_SINGLE: return "single";
    case MAT_C_INT8: return "int8";
    case MAT_C_UINT8: return "uint8";
    case MAT_C_INT16: return "int16";
    case MAT_C_UINT16: return "uint16";
    case MAT_C_INT32: return "int32";
    case MAT_C_UINT32: return "uint32";
    case MAT_C_INT64: return "int64";
    case MAT_C_UINT64: return "uint64";
    case MAT_C_FUNCTION: return "function";
    case MAT_C_OPAQUE: return "opaque";
  }
  return "unknown";
}

// The element type a class reads as, or nullopt for classes that are not plain real numbers.
std::optional<DType> dtype_of(const matvar_t &v) {
  if (v.isComplex) return std::nullopt;
  // A logical's values are 0 and 1 (as uint8 they would map to 0 and 1/255 like image codes).
  if (v.isLogical) return DType::f64;
  switch (v.class_type) {
    case MAT_C_DOUBLE: return DType::f64;
    case MAT_C_SINGLE: return DType::f32;
    case MAT_C_UINT8: return DType::u8;
    case MAT_C_UINT16: return DType::u16;
    case MAT_C_INT8:
    case MAT_C_INT16:
    case MAT_C_INT32:
    case MAT_C_UINT32: return DType::f64;  // exact as double
    default: return std::nullopt;
  }
}

std::string describe(const matvar_t &v) {
  std::string dims;
  for (int d = 0; d < v.rank; d++) dims += (d ? "x" : "") + std::to_string(v.dims[d]);
  return std::string(v.isComplex ? "complex " : "") + (v.isLogical ? "logical" : class_name(v.class_type)) + " " + dims;
}

template <class S>
void widen(const void *src, std::size_t n, double *dst) {
  for (std::size_t i = 0; i < n; i++) {
    S s;
    std::memcpy(&s, static_cast<const unsigned char *>(src) + i * sizeof(S), sizeof(S));
    dst[i] = static_cast<double>(s);
  }
}

// The tags of a v5 file, checked before matio reads it: matio trusts their sizes, and a 152-byte
// file whose dimensions tag claimed 1.7 GB made it allocate 3.4 GB (found by tests/fuzz/
// fuzz_formats.cpp). Every top-level element must end inside the file, and a matrix's
// sub-elements inside the matrix (recursively, for cells and structs). A compressed element is
// inflated whole, output discarded: matio stops at the declared size, so it would read a cut or
// damaged stream as zeros or garbage without the stream's end and checksum being checked.
class Mat5Tags {
 public:
  Mat5Tags(const std::string &path, bool swap) : path_(path), swap_(swap) {}

  // The top-level elements of the file. Only tags are read (and compressed elements, inflated
  // once): a file of gigabytes of uncompressed data is not read twice.
  void check_file(std::ifstream &in, std::int64_t file_bytes) const {
    const TagAt tag_at = [&](std::int64_t at, unsigned char *tag) {
      in.clear();
      in.seekg(at);
      return at + 8 <= file_bytes && bool(in.read(reinterpret_cast<char *>(tag), 8));
    };
    unsigned char tag[8];
    for (std::int64_t at = 128; at < file_bytes;) {
      if (!tag_at(at, tag))
        throw Failure(path_ + ": truncated MATLAB file: it ends inside the tag of the element at byte " +
                      std::to_string(at));
      const std::uint32_t type = word(tag), bytes = word(tag + 4);
      if (bytes > file_bytes - at - 8)
        throw Failure(path_ + ": truncated MATLAB file: the element at byte " + std::to_string(at) + " declares " +
                      std::to_string(bytes) + " bytes, but the file ends " + std::to_string(file_bytes - at - 8) +
                      " bytes after its tag");
      if (type == kMatrix) check(tag_at, at + 8, at + 8 + bytes, 0, 1);
      if (type == kCompressed) check_compressed(in, at, bytes);
      at += 8 + bytes;
    }
  }

 private:
  static constexpr std::uint32_t kMatrix = 14, kCompressed = 15;
  static constexpr std::int64_t kDeflateExpansion = 1032;
  // Reads the 8-byte tag at an offset; false where there is none (past the end).
  using TagAt = std::function<bool(std::int64_t, unsigned char *)>;

  std::uint32_t word(const unsigned char *p) const {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return swap_ ? __builtin_bswap32(v) : v;
  }

  // The elements between offsets `begin` and `end` (a matrix's sub-elements), reported at
  // `base` + offset.
  void check(const TagAt &tag_at, std::int64_t begin, std::int64_t end, std::int64_t base, int depth) const {
    unsigned char tag[8];
    for (std::int64_t at = begin; at + 8 <= end && tag_at(at, tag);) {
      const std::uint32_t type = word(tag), bytes = word(tag + 4);
      if (type >> 16) {  // a small element: size and data in these 8 bytes
        at += 8;
        continue;
      }
      if (bytes > end - at - 8)
        throw Failure(path_ + ": corrupt MATLAB file: the element at byte " + std::to_string(base + at) + " declares " +
                      std::to_string(bytes) + " bytes, but only " + std::to_string(end - at - 8) + " can follow");
      if (type == kMatrix && depth < 8) check(tag_at, at + 8, at + 8 + bytes, base, depth + 1);
      at += 8 + ((bytes + 7) / 8) * 8;
    }
  }

  // The compressed element at `at` (`bytes` long), inflated to its end: the tags in its first
  // 4 KiB are checked as above, and the stream must end (its checksum matching) exactly where the
  // tag inside says.
  void check_compressed(std::ifstream &in, std::int64_t at, std::uint32_t bytes) const {
    const std::string where = path_ + ": corrupt MATLAB file: the compressed element at byte " + std::to_string(at);
    z_stream z{};
    if (inflateInit(&z) != Z_OK) throw Failure(where + " cannot be inflated: zlib is out of memory");
    const std::unique_ptr<z_stream, int (*)(z_streamp)> end_inflate(&z, inflateEnd);
    std::vector<unsigned char> compressed(1 << 16), scratch(1 << 16);
    unsigned char head[4096];
    std::int64_t left = bytes, inflated = 0, declared = -1;
    in.clear();
    in.seekg(at + 8);
    int rc = Z_OK;
    while (rc == Z_OK || rc == Z_BUF_ERROR) {
      if (z.avail_in == 0) {
        in.read(reinterpret_cast<char *>(compressed.data()), std::min<std::int64_t>(left, 1 << 16));
        if (in.gcount() <= 0) break;
        left -= in.gcount();
        z.next_in = compressed.data();
        z.avail_in = static_cast<uInt>(in.gcount());
      }
      const bool in_head = inflated < std::int64_t(sizeof head);
      z.next_out = in_head ? head + inflated : scratch.data();
      z.avail_out = static_cast<uInt>(in_head ? sizeof head - std::size_t(inflated) : scratch.size());
      const uInt room = z.avail_out;
      rc = inflate(&z, Z_NO_FLUSH);
      inflated += room - z.avail_out;
      if (declared < 0 && inflated >= 8) {
        declared = word(head + 4);
        if (declared > kDeflateExpansion * std::int64_t(bytes))
          throw Failure(where + " declares " + std::to_string(declared) + " bytes, more than its " +
                        std::to_string(bytes) + " bytes can inflate to");
      }
      if (declared >= 0 && inflated > 8 + declared)
        throw Failure(where + " inflates to more than the " + std::to_string(declared) + " bytes it declares");
    }
    if (rc != Z_STREAM_END && rc != Z_OK && rc != Z_BUF_ERROR)
      throw Failure(where + " is damaged (zlib: " + (z.msg ? z.msg : zError(rc)) + ")");
    if (rc != Z_STREAM_END || inflated != 8 + declared)
      throw Failure(
          path_ + ": truncated or corrupt MATLAB file: the compressed element at byte " + std::to_string(at) +
          " inflates to " + std::to_string(inflated) + " bytes" +
          (declared < 0 ? ", less than a tag" : ", not the " + std::to_string(8 + declared) + " it declares"));
    const TagAt head_at = [&](std::int64_t offset, unsigned char *tag) {
      if (offset + 8 > std::min<std::int64_t>(inflated, sizeof head)) return false;
      std::memcpy(tag, head + offset, 8);
      return true;
    };
    if (word(head) == kMatrix) check(head_at, 8, 8 + declared, at, 1);
  }

  const std::string &path_;
  bool swap_;
};

}  // namespace

bool has_mat_magic(const std::string &path) {
  unsigned char header[128];
  try {
    InputFile f(path);
    if (f.read(header, sizeof header) != sizeof header) return false;
  } catch (const Failure &) {
    return false;
  }
  const bool text = std::memcmp(header, "MATLAB ", 7) == 0;
  const bool endian = (header[126] == 'I' && header[127] == 'M') || (header[126] == 'M' && header[127] == 'I');
  return text && endian;
}

RawArray read_mat(const std::string &path, const std::string &variable, std::string &detail) {
  quiet_matio();
  const std::int64_t file_bytes = InputFile(path).size();
  {
    std::ifstream in(path, std::ios::binary);
    unsigned char header[128];
    // v5 (version 0x0100); v7.3 is HDF5 behind the header, which libhdf5 bounds itself.
    if (in.read(reinterpret_cast<char *>(header), sizeof header) && header[124] + header[125] == 1)
      Mat5Tags(path, header[126] == 'M').check_file(in, file_bytes);
  }
  last_matio_message().clear();
  MatFile mat(Mat_Open(path.c_str(), MAT_ACC_RDONLY));
  if (!mat) throw Failure(path + ": not a MATLAB v5 or v7.3 file, or corrupt" + matio_reason());
  const mat_ft version = Mat_GetVersion(mat.get());
  if (version == MAT_FT_MAT4) throw Failure(path + ": MATLAB v4 files are not supported (save with -v7 or -v7.3)");
  const std::string version_name = version == MAT_FT_MAT73 ? "v7.3" : "v5";

  // The variables' headers only, to choose one and to bound its size before reading its data.
  std::vector<std::string> numeric, all;
  MatVar chosen;
  while (MatVar info{Mat_VarReadNextInfo(mat.get())}) {
    if (!info->name) continue;
    all.push_back(info->name + std::string(" (") + describe(*info) + ")");
    const bool is_numeric = dtype_of(*info).has_value();
    if (is_numeric) numeric.push_back(info->name);
    if (variable.empty() ? is_numeric : variable == info->name) chosen = std::move(info);
  }
  auto listing = [&] {
    std::string s;
    for (const std::string &v : all) s += (s.empty() ? "" : ", ") + v;
    return s;
  };
  if (all.empty()) throw Failure(path + ": holds no variables (empty, or truncated or corrupt)" + matio_reason());
  if (!variable.empty() && !chosen)
    throw Failure(path + ": has no variable '" + variable + "'; it holds: " + listing() + matio_reason());
  if (variable.empty() && numeric.size() != 1)
    throw Failure(path + (numeric.empty()
                              ? ": holds no numeric array; it holds: " + listing()
                              : ": holds several numeric arrays; pick one as " + path + ":NAME of: " + listing()));
  const std::optional<DType> type = dtype_of(*chosen);
  const std::string name = chosen->name;
  if (!type)
    throw Failure(path + ": variable '" + name + "' is " + describe(*chosen) +
                  ", not a real numeric array (double, single, uint8, uint16, logical, int8/16/32, uint32)");
  Shape shape;
  for (int d = 0; d < chosen->rank; d++) shape.push_back(static_cast<std::int64_t>(chosen->dims[d]));
  const std::int64_t n = element_count(shape, INT64_MAX / 16);
  // Unknown before the data is read, the stored element may be 1 byte: MATLAB keeps numbers in the
  // smallest integer type that holds them (a double array as uint8), and int8 / int16 are smaller
  // than the double they are read as.
  const std::size_t stored_size = chosen->data_size > 0 ? static_cast<std::size_t>(chosen->data_size) : 1;
  check_declared_size(path, "variable '" + name + "' of shape " + shape_string(shape), n,
                      static_cast<std::int64_t>(stored_size), file_bytes,
                      version == MAT_FT_MAT73 || chosen->compression != MAT_COMPRESSION_NONE);
  chosen.reset();

  last_matio_message().clear();
  MatVar var{Mat_VarRead(mat.get(), name.c_str())};
  // matio logs a short read or an inflate error, and returns the variable all the same.
  if (!var || (n > 0 && !var->data) || !last_matio_message().empty())
    throw Failure(path + ": cannot read variable '" + name + "': truncated or corrupt" + matio_reason());
  Shape read_shape;
  for (int d = 0; d < var->rank; d++) read_shape.push_back(static_cast<std::int64_t>(var->dims[d]));
  if (read_shape != shape || var->nbytes != static_cast<std::size_t>(n) * static_cast<std::size_t>(var->data_size))
    throw Failure(path + ": variable '" + name + "' is corrupt (its data does not match its header)" + matio_reason());

  // matio hands over MATLAB's column-major data: C order of the reversed shape.
  RawArray column_major;
  column_major.shape.assign(shape.rbegin(), shape.rend());
  column_major.dtype = *type;
  column_major.bytes.resize(static_cast<std::size_t>(n) * size_of(*type));
  const std::size_t count = static_cast<std::size_t>(n);
  double *as_double = reinterpret_cast<double *>(column_major.bytes.data());
  switch (var->isLogical ? MAT_C_EMPTY : var->class_type) {
    case MAT_C_EMPTY: widen<std::uint8_t>(var->data, count, as_double); break;  // logical
    case MAT_C_INT8: widen<std::int8_t>(var->data, count, as_double); break;
    case MAT_C_INT16: widen<std::int16_t>(var->data, count, as_double); break;
    case MAT_C_INT32: widen<std::int32_t>(var->data, count, as_double); break;
    case MAT_C_UINT32: widen<std::uint32_t>(var->data, count, as_double); break;
    default:
      if (static_cast<std::size_t>(var->data_size) != size_of(*type))
        throw Failure(path + ": variable '" + name + "' stores " + std::to_string(var->data_size) +
                      "-byte elements for class " + class_name(var->class_type) + " (corrupt)");
      if (count) std::memcpy(column_major.bytes.data(), var->data, column_major.bytes.size());
  }
  std::vector<int> reverse;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; d--) reverse.push_back(d);
  detail = version_name + " '" + name + "'";
  return transpose(column_major, reverse);
}

namespace {

// matio ignores failed writes (a full disk) and reports success, and it sizes the element by what
// reached the file; but the tags inside, written before their data, show what is missing.
void check_written_v5(const Destination &file) {
  const std::int64_t size = InputFile(file.path).size();
  bool whole = size >= 136;  // the header and a tag at least
  try {
    std::ifstream in(file.path, std::ios::binary);
    if (whole) Mat5Tags(file.target, false).check_file(in, size);
  } catch (const Failure &) {
    whole = false;
  }
  if (!whole)
    throw Failure(file.target + ": write error: only " + std::to_string(size) +
                  " bytes reached the file (a full disk, or a file size limit)");
}

}  // namespace

void check_mat_variable_name(const std::string &output, const std::string &variable) {
  const bool named =
      !variable.empty() && variable.size() <= 63 && std::isalpha(static_cast<unsigned char>(variable[0])) &&
      std::all_of(variable.begin(), variable.end(), [](char c) {
        return c == '_' || (static_cast<unsigned char>(c) < 128 && std::isalnum(static_cast<unsigned char>(c)));
      });
  if (!named)
    throw UsageError(output + ": '" + variable +
                     "' is not a MATLAB variable name (a letter, then letters, digits or _, at most 63)");
}

void write_mat(const Destination &file, const std::string &variable, const RawArray &a, bool v73) {
  check_mat_variable_name(file.target, variable);
  // MATLAB arrays have at least 2 dimensions: (n,) is written as n x 1, () as 1 x 1.
  Shape shape = a.shape;
  while (shape.size() < 2) shape.push_back(1);
  std::vector<int> reverse;
  for (int d = static_cast<int>(a.shape.size()) - 1; d >= 0; d--) reverse.push_back(d);
  RawArray column_major = transpose(a, reverse);
  matio_classes cls = MAT_C_DOUBLE;
  matio_types type = MAT_T_DOUBLE;
  switch (a.dtype) {
    case DType::u8: cls = MAT_C_UINT8, type = MAT_T_UINT8; break;
    case DType::u16: cls = MAT_C_UINT16, type = MAT_T_UINT16; break;
    case DType::f32: cls = MAT_C_SINGLE, type = MAT_T_SINGLE; break;
    case DType::f64: break;
  }
  if (v73) {
    // Written through libhdf5 in memory (io_hdf5.h): matio's own v7.3 writer crashes at exit after
    // a failed write. The header is MATLAB's: text, subsystem offset, version 0x0200, 'IM'.
    std::string header = "MATLAB 7.3 MAT-file, Platform: GLNXA64, Created by: hpipe HDF5 schema 1.00 .";
    header.resize(116, ' ');
    header += std::string(8, '\0') + std::string("\0\2IM", 4);
    column_major.shape.assign(shape.rbegin(), shape.rend());
    write_matlab_v73(file, header, variable, class_name(cls), column_major);
    return;
  }
  quiet_matio();
  last_matio_message().clear();
  MatFile mat(Mat_CreateVer(file.path.c_str(), nullptr, MAT_FT_MAT5));
  if (!mat) throw Failure(file.target + ": cannot create the MATLAB file" + matio_reason());
  std::vector<std::size_t> dims(shape.begin(), shape.end());
  MatVar var{Mat_VarCreate(variable.c_str(), cls, type, static_cast<int>(dims.size()), dims.data(),
                           column_major.bytes.data(), MAT_F_DONT_COPY_DATA)};
  if (!var) throw Failure(file.target + ": cannot create variable '" + variable + "'" + matio_reason());
  if (Mat_VarWrite(mat.get(), var.get(), MAT_COMPRESSION_NONE) != 0)
    throw Failure(file.target + ": cannot write variable '" + variable + "'" + matio_reason());
  if (Mat_Close(mat.release()) != 0) throw Failure(file.target + ": write error" + matio_reason());
  check_written_v5(file);
}

}  // namespace hpipe::cli
