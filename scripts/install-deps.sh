#!/bin/sh
# Installs the Debian 12 packages hpipe needs to build, test and benchmark, when they are missing.
# As root it runs apt-get; otherwise it prints the exact command to run and fails.
set -eu
# The hpipe tool reads MATLAB, HDF5 and TIFF through matio, libhdf5 and libtiff; its tests make their
# fixtures as the Python tools do (scipy.io.savemat, h5py, tifffile). The Python module needs
# pybind11 and the headers of Debian's python3; its tests NumPy, SciPy, mpmath, PyTorch and pytest.
packages="cmake ninja-build g++ make pkg-config libhalide14-0-dev libgtest-dev libbenchmark-dev libpng-dev
libmatio-dev libhdf5-dev libtiff-dev python3-dev pybind11-dev python3-numpy python3-scipy python3-h5py
python3-tifffile python3-pytest python3-torch python3-mpmath
python3-dask python3-distributed python3-psutil python3-zarr"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  echo "installing:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing
else
  echo "hpipe needs these Debian packages:$missing" >&2
  echo "install them with:  sudo apt-get install -y$missing" >&2
  exit 1
fi
