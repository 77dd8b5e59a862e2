// MATLAB .mat files through matio: v5 (what scipy.io.savemat writes) and v7.3 (HDF5 inside, what
// MATLAB's -v7.3 and h5py-based tools write). Arrays come out with MATLAB's shape, in C order: a
// variable MATLAB shows as 256x256x28 is (256, 256, 28), as scipy.io.loadmat returns it. (h5py
// shows a v7.3 variable with its axes reversed, (28, 256, 256): HDF5 keeps MATLAB's column-major
// bytes and C-order dimensions; matio and this reader undo that.)
// Numeric variables only: double, single, uint8, uint16 keep their type; logical reads as uint8;
// int8/int16/uint32/int32 as float64 values (exact); complex, sparse, cell, struct, char and
// int64/uint64 are refused.
#pragma once

#include <string>

#include "array.h"
#include "file.h"

namespace hpipe::cli {

bool has_mat_magic(const std::string &path);
// `variable` empty: the file's only numeric variable (a Failure lists them when there are several).
// `detail` receives "v5 'img'" or "v7.3 'img'".
RawArray read_mat(const std::string &path, const std::string &variable, std::string &detail);
// `a` has MATLAB's shape (C order); written as v5 (through matio), or v7.3 with `v73` (through
// libhdf5: see write_matlab_v73). Errors name file.target.
void write_mat(const Destination &file, const std::string &variable, const RawArray &a, bool v73);
// A UsageError unless `variable` is a name MATLAB can address, [A-Za-z][A-Za-z0-9_]*, at most 63
// characters (my-var, 1abc or x/y were written, x/y as a group in v7.3 and a name in v5).
void check_mat_variable_name(const std::string &output, const std::string &variable);

}  // namespace hpipe::cli
