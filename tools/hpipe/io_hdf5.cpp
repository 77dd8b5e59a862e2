#include "io_hdf5.h"

#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "errors.h"
#include "file.h"
#include "formats.h"

namespace hpipe::cli {

namespace {

// One HDF5 identifier, closed with its own function.
class Id {
 public:
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Id() {
    if (id_ >= 0) close_(id_);
  }
  Id(const Id &) = delete;
  Id &operator=(const Id &) = delete;
  operator hid_t() const { return id_; }  // NOLINT
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// HDF5 prints a stack of errors to stderr by default; this tool reports one line of its own.
void quiet_hdf5() {
  static const bool once = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)once;
}

// The innermost message of HDF5's current error stack, for our error lines.
std::string hdf5_reason() {
  std::string message;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t *e, void *out) -> herr_t {
        if (e->desc && static_cast<std::string *>(out)->empty()) *static_cast<std::string *>(out) = e->desc;
        return 0;
      },
      &message);
  H5Eclear2(H5E_DEFAULT);
  return message.empty() ? "" : " (HDF5: " + message + ")";
}

// The element type a dataset reads as, or nullopt when it is not plain numbers.
std::optional<DType> dtype_of(hid_t type) {
  const H5T_class_t c = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  if (c == H5T_INTEGER) {
    if (H5Tget_sign(type) == H5T_SGN_NONE && size == 1) return DType::u8;
    if (H5Tget_sign(type) == H5T_SGN_NONE && size == 2) return DType::u16;
    return DType::f64;
  }
  if (c == H5T_FLOAT) return size <= 4 ? DType::f32 : DType::f64;
  return std::nullopt;
}

hid_t memory_type(DType t) {
  switch (t) {
    case DType::u8: return H5T_NATIVE_UINT8;
    case DType::u16: return H5T_NATIVE_UINT16;
    case DType::f32: return H5T_NATIVE_FLOAT;
    case DType::f64: return H5T_NATIVE_DOUBLE;
  }
  return H5T_NATIVE_DOUBLE;
}

struct Listing {
  std::vector<std::string> numeric, all;
};

herr_t visit(hid_t file, const char *name, const H5O_info_t *info, void *data) {
  if (info->type != H5O_TYPE_DATASET) return 0;
  auto *l = static_cast<Listing *>(data);
  const std::string path = std::string("/") + name;
  Id ds(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) return 0;
  Id type(H5Dget_type(ds), H5Tclose);
  l->all.push_back(path);
  if (type.ok() && dtype_of(type)) l->numeric.push_back(path);
  return 0;
}

std::string joined(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? std::string("none") : s;
}

}  // namespace

bool has_hdf5_magic(const std::string &path) {
  // The signature sits at byte 0, or after a user block of 512, 1024, 2048... bytes (MATLAB v7.3
  // files keep their own header there).
  static const char signature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  try {
    InputFile f(path);
    std::vector<unsigned char> head(static_cast<std::size_t>(std::min<std::int64_t>(f.size(), 1 << 16)));
    head.resize(f.read(head.data(), head.size()));
    for (std::size_t at = 0; at + 8 <= head.size(); at = at ? 2 * at : 512)
      if (std::memcmp(head.data() + at, signature, 8) == 0) return true;
  } catch (const Failure &) {}
  return false;
}

RawArray read_hdf5(const std::string &path, const std::string &dataset, std::string &detail) {
  quiet_hdf5();
  const std::int64_t file_bytes = InputFile(path).size();
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) throw Failure(path + ": not an HDF5 file, or corrupt" + hdf5_reason());
  std::string name = dataset;
  if (name.empty()) {
    Listing l;
    if (H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_NATIVE, visit, &l, H5O_INFO_BASIC) < 0)
      throw Failure(path + ": cannot list the datasets: corrupt" + hdf5_reason());
    if (l.numeric.size() != 1)
      throw Failure(path + (l.numeric.empty() ? ": holds no numeric dataset; datasets: " + joined(l.all)
                                              : ": holds several numeric datasets; pick one as " + path +
                                                    ":/NAME of: " + joined(l.numeric)));
    name = l.numeric[0];
  }
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0 || H5Oexists_by_name(file, name.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw Failure(path + ": has no dataset '" + name + "'");
  }
  H5O_info_t info{};
  if (H5Oget_info_by_name2(file, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0 || info.type != H5O_TYPE_DATASET)
    throw Failure(path + ": '" + name + "' is not a dataset (a group?)" + hdf5_reason());
  Id ds(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) throw Failure(path + ": cannot open dataset '" + name + "'" + hdf5_reason());
  Id type(H5Dget_type(ds), H5Tclose);
  const std::optional<DType> dtype = type.ok() ? dtype_of(type) : std::nullopt;
  if (!dtype)
    throw Failure(path + ": dataset '" + name + "' is not numeric (strings, compounds and references are not read)");
  Id space(H5Dget_space(ds), H5Sclose);
  const int rank = space.ok() ? H5Sget_simple_extent_ndims(space) : -1;
  if (rank < 0 || rank > 32) throw Failure(path + ": dataset '" + name + "' has no simple shape" + hdf5_reason());
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  Shape shape(dims.begin(), dims.end());
  Id plist(H5Dget_create_plist(ds), H5Pclose);
  if (!plist.ok()) throw Failure(path + ": dataset '" + name + "' is corrupt" + hdf5_reason());
  if (H5Pget_layout(plist) == H5D_VIRTUAL || H5Pget_external_count(plist) > 0)
    throw Failure(path + ": dataset '" + name + "' keeps its data in other files (virtual or external storage)");
  const std::int64_t n = element_count(shape, INT64_MAX / 16);
  check_declared_size(path, "dataset '" + name + "' of shape " + shape_string(shape), n,
                      static_cast<std::int64_t>(H5Tget_size(type)), file_bytes, H5Pget_nfilters(plist) > 0);
  RawArray a;
  a.shape = shape;
  a.dtype = *dtype;
  a.bytes.resize(static_cast<std::size_t>(n) * size_of(a.dtype));
  if (n > 0 && H5Dread(ds, memory_type(a.dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, a.bytes.data()) < 0)
    throw Failure(path + ": cannot read dataset '" + name + "': truncated or corrupt" + hdf5_reason());
  detail = name[0] == '/' ? name : "/" + name;
  return a;
}

void write_hdf5(const std::string &path, const std::string &dataset, const RawArray &a) {
  quiet_hdf5();
  Id file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) throw Failure(path + ": cannot create the HDF5 file" + hdf5_reason());
  const std::vector<hsize_t> dims(a.shape.begin(), a.shape.end());
  Id space(
      a.shape.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
      H5Sclose);
  Id links(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(links, 1);
  hid_t stored = H5T_IEEE_F64LE;
  switch (a.dtype) {
    case DType::u8: stored = H5T_STD_U8LE; break;
    case DType::u16: stored = H5T_STD_U16LE; break;
    case DType::f32: stored = H5T_IEEE_F32LE; break;
    case DType::f64: break;
  }
  Id ds(H5Dcreate2(file, dataset.c_str(), stored, space, links, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) throw Failure(path + ": cannot create dataset '" + dataset + "'" + hdf5_reason());
  if (H5Dwrite(ds, memory_type(a.dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, a.bytes.data()) < 0)
    throw Failure(path + ": cannot write dataset '" + dataset + "'" + hdf5_reason());
  if (H5Fflush(file, H5F_SCOPE_LOCAL) < 0) throw Failure(path + ": write error" + hdf5_reason());
}

}  // namespace hpipe::cli
