// HDF5 datasets through libhdf5: `file.h5:/group/name` (default: the file's only numeric dataset;
// a Failure lists them when there are several). The shape is h5py's (C order, as stored).
// Unsigned 8/16-bit integers keep their type; 32-bit and smaller floats read as float32; other
// integers and floats as float64 values. Strings, compounds, references, data stored outside the
// file (external or virtual datasets) are refused.
#pragma once

#include <string>

#include "array.h"
#include "file.h"

namespace hpipe::cli {

bool has_hdf5_magic(const std::string &path);
// `detail` receives the dataset's path ("/cube").
RawArray read_hdf5(const std::string &path, const std::string &dataset, std::string &detail);
// Creates the file with one dataset (little-endian, contiguous); missing groups are created. The
// file is built in memory and then written with checked writes: libhdf5 cannot close a file whose
// write failed (a full disk), and then crashes at exit.
void write_hdf5(const Destination &file, const std::string &dataset, const RawArray &a);
// A MATLAB v7.3 file: `header` (MATLAB's 128 bytes) in a 512-byte user block, and `a` as the
// dataset `variable` with its MATLAB_class attribute (`matlab_class`: "double", "uint8"...). `a`
// holds MATLAB's column-major data in C order: its shape is MATLAB's reversed, as h5py shows it.
void write_matlab_v73(const Destination &file, const std::string &header, const std::string &variable,
                      const std::string &matlab_class, const RawArray &a);

}  // namespace hpipe::cli
