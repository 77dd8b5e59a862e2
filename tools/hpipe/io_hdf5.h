// HDF5 datasets through libhdf5: `file.h5:/group/name` (default: the file's only numeric dataset;
// a Failure lists them when there are several). The shape is h5py's (C order, as stored).
// Unsigned 8/16-bit integers keep their type; 32-bit and smaller floats read as float32; other
// integers and floats as float64 values. Strings, compounds, references, data stored outside the
// file (external or virtual datasets) are refused.
#pragma once

#include <string>

#include "array.h"

namespace hpipe::cli {

bool has_hdf5_magic(const std::string &path);
// `detail` receives the dataset's path ("/cube").
RawArray read_hdf5(const std::string &path, const std::string &dataset, std::string &detail);
// Creates the file with one dataset (little-endian, contiguous); missing groups are created.
void write_hdf5(const std::string &path, const std::string &dataset, const RawArray &a);

}  // namespace hpipe::cli
