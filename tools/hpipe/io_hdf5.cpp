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
  if (H5Sget_simple_extent_type(space) == H5S_NULL)  // h5py's Empty: rank 0 as a scalar's, but no value
    throw Failure(path + ": dataset '" + name + "' holds no value (a null dataspace)");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  Shape shape(dims.begin(), dims.end());
  Id plist(H5Dget_create_plist(ds), H5Pclose);
  if (!plist.ok()) throw Failure(path + ": dataset '" + name + "' is corrupt" + hdf5_reason());
  if (H5Pget_layout(plist) == H5D_VIRTUAL || H5Pget_external_count(plist) > 0)
    throw Failure(path + ": dataset '" + name + "' keeps its data in other files (virtual or external storage)");
  const std::int64_t n = element_count(shape, INT64_MAX / 16);
  // Storage never written (or written in part) reads as the fill value: the file does not bound
  // the size then, only memory does.
  H5D_space_status_t status = H5D_SPACE_STATUS_ERROR;
  const bool stored = H5Dget_space_status(ds, &status) >= 0 && status == H5D_SPACE_STATUS_ALLOCATED;
  check_declared_size(path, "dataset '" + name + "' of shape " + shape_string(shape), n,
                      static_cast<std::int64_t>(H5Tget_size(type)), stored ? file_bytes : INT64_MAX,
                      H5Pget_nfilters(plist) > 0);
  RawArray a;
  a.shape = shape;
  a.dtype = *dtype;
  a.bytes.resize(static_cast<std::size_t>(n) * size_of(a.dtype));
  if (n > 0 && H5Dread(ds, memory_type(a.dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, a.bytes.data()) < 0)
    throw Failure(path + ": cannot read dataset '" + name + "': truncated or corrupt" + hdf5_reason());
  detail = name[0] == '/' ? name : "/" + name;
  return a;
}

namespace {

// The bytes of an HDF5 file holding `a` as `dataset`, made by libhdf5 in memory (the core driver,
// nothing written to disk). `user_block`: bytes kept in front of the HDF5 data (a power of 2 of at
// least 512, or 0). `matlab_class`: the MATLAB_class attribute, when not empty. Errors name `target`.
std::vector<unsigned char> hdf5_image(const std::string &target, const std::string &dataset, const RawArray &a,
                                      hsize_t user_block, const std::string &matlab_class) {
  quiet_hdf5();
  Id access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  Id creation(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  if (!access.ok() || !creation.ok() || H5Pset_fapl_core(access, 1 << 20, 0) < 0 ||
      (user_block && H5Pset_userblock(creation, user_block) < 0))
    throw Failure(target + ": cannot create the HDF5 file" + hdf5_reason());
  Id file(H5Fcreate(target.c_str(), H5F_ACC_TRUNC, creation, access), H5Fclose);
  if (!file.ok()) throw Failure(target + ": cannot create the HDF5 file" + hdf5_reason());
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
  if (!ds.ok()) throw Failure(target + ": cannot create dataset '" + dataset + "'" + hdf5_reason());
  if (H5Dwrite(ds, memory_type(a.dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, a.bytes.data()) < 0)
    throw Failure(target + ": cannot write dataset '" + dataset + "'" + hdf5_reason());
  if (!matlab_class.empty()) {
    Id text(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(text, matlab_class.size());
    Id scalar(H5Screate(H5S_SCALAR), H5Sclose);
    Id attribute(H5Acreate2(ds, "MATLAB_class", text, scalar, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!attribute.ok() || H5Awrite(attribute, text, matlab_class.data()) < 0)
      throw Failure(target + ": cannot write the MATLAB_class of '" + dataset + "'" + hdf5_reason());
  }
  if (H5Fflush(file, H5F_SCOPE_LOCAL) < 0) throw Failure(target + ": cannot build the HDF5 file" + hdf5_reason());
  const ssize_t size = H5Fget_file_image(file, nullptr, 0);
  std::vector<unsigned char> image(size > 0 ? static_cast<std::size_t>(size) : 0);
  if (size <= 0 || H5Fget_file_image(file, image.data(), image.size()) != size)
    throw Failure(target + ": cannot build the HDF5 file" + hdf5_reason());
  return image;
}

void write_image(const Destination &file, const std::vector<unsigned char> &image) {
  OutputFile out(file);
  out.write(image.data(), image.size());
  out.close();
}

}  // namespace

void write_hdf5(const Destination &file, const std::string &dataset, const RawArray &a) {
  write_image(file, hdf5_image(file.target, dataset, a, 0, ""));
}

void write_matlab_v73(const Destination &file, const std::string &header, const std::string &variable,
                      const std::string &matlab_class, const RawArray &a) {
  constexpr std::size_t kUserBlock = 512;
  // The image starts at the superblock, after the user block (HDF5 addresses count from there).
  const std::vector<unsigned char> image = hdf5_image(file.target, variable, a, kUserBlock, matlab_class);
  std::vector<unsigned char> whole(kUserBlock + image.size());
  std::copy(header.begin(), header.end(), whole.begin());
  std::copy(image.begin(), image.end(), whole.begin() + kUserBlock);
  write_image(file, whole);
}

}  // namespace hpipe::cli
