"""Fixtures for tests/test_cli_formats.cpp, made and checked as the Python tools do.

    python3 cli_formats_fixtures.py write DIR     # files in every format, and expected.npz-style .npy files
    python3 cli_formats_fixtures.py check DIR     # reads what hpipe wrote in DIR with SciPy/h5py/tifffile
    python3 cli_formats_fixtures.py cassi DIR     # KAIST/TSA-Net/MST-style .mat files and NumPy references

Every array hpipe should read is saved beside as expect_<name>.npy in hpipe's (C, H, W) order.
"""
import os
import sys

import h5py
import numpy as np
import scipy.io as sio
import tifffile

C, H, W = 5, 7, 9  # odd sizes; the cube is (H, W, C) in the MATLAB/KAIST layout


def matlab_v73(path, variables, compressed=()):
    """A MATLAB -v7.3 file as MATLAB writes it: HDF5 behind a 512-byte user block holding the MAT
    header; each variable's bytes column-major (so h5py shows its axes reversed) with a
    MATLAB_class attribute (a fixed-length, NULLTERM string of exactly the name's length); the
    variables named in `compressed` chunked and deflated, as MATLAB's -v7.3 does by default."""
    with h5py.File(path, "w", userblock_size=512) as f:
        for name, value in variables.items():
            d = f.create_dataset(name, data=value.T, compression="gzip" if name in compressed else None)
            cls = {np.float64: "double", np.float32: "single", np.uint8: "uint8", np.uint16: "uint16"}[value.dtype.type]
            tid = h5py.h5t.C_S1.copy()
            tid.set_size(len(cls))
            tid.set_strpad(h5py.h5t.STR_NULLTERM)
            attr = h5py.h5a.create(d.id, b"MATLAB_class", tid, h5py.h5s.create(h5py.h5s.SCALAR))
            attr.write(np.array(cls.encode(), dtype="S%d" % len(cls)), mtype=tid)
    header = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Nov 23 12:00:00 2026 HDF5 schema 1.00 ."
    with open(path, "r+b") as f:
        f.write(header.ljust(116, b" ") + b"\0" * 8 + b"\x00\x02" + b"IM")


def envi(path, cube, code, interleave, big_endian, offset, wavelengths=None, units="Nanometers"):
    """An ENVI header + .img of `cube` (C, H, W)."""
    order = {"bsq": (0, 1, 2), "bil": (1, 0, 2), "bip": (1, 2, 0)}[interleave]
    dtype = {1: "u1", 2: "i2", 4: "f4", 5: "f8", 12: "u2"}[code]
    data = np.ascontiguousarray(cube.transpose(order)).astype((">" if big_endian else "<") + dtype)
    with open(path + ".img", "wb") as f:
        f.write(b"\xee" * offset + data.tobytes())
    lines = ["ENVI", "description = {a test cube,", "  two lines}", "samples = %d" % cube.shape[2],
             "lines   = %d" % cube.shape[1], "bands = %d" % cube.shape[0], "header offset = %d" % offset,
             "file type = ENVI Standard", "data type = %d" % code, "interleave = %s" % interleave,
             "byte order = %d" % int(big_endian)]
    if wavelengths is not None:
        lines += ["wavelength units = %s" % units,
                  "wavelength = {" + ",\n ".join("%g" % w for w in wavelengths) + "}"]
    with open(path + ".hdr", "w") as f:
        f.write("\n".join(lines) + "\n")


def write(d):
    rng = np.random.default_rng(16)
    cube = rng.random((H, W, C))  # MATLAB's (H, W, C)
    expect = {}
    sio.savemat(os.path.join(d, "scene.mat"), {"img": cube, "label": "scene 1"})
    expect["scene_mat"] = cube.transpose(2, 0, 1)
    sio.savemat(os.path.join(d, "two.mat"), {"a": cube.astype(np.float32), "mask": (cube[:, :, 0] > 0.5)})
    expect["two_a"] = cube.astype(np.float32).transpose(2, 0, 1)
    expect["two_mask"] = (cube[:, :, 0] > 0.5).astype(np.float64)  # 0 and 1, not image codes
    counts = (np.arange(10000) - 5000).astype(np.int16).reshape(100, 100)  # 2 bytes a value, read as 8
    sio.savemat(os.path.join(d, "int16.mat"), {"n": counts})
    expect["int16_mat"] = counts.astype(np.float64)
    sio.savemat(os.path.join(d, "u16.mat"), {"raw": (cube * 60000).astype(np.uint16)}, do_compression=True)
    expect["u16_mat"] = (cube * 60000).astype(np.uint16).transpose(2, 0, 1)
    matlab_v73(os.path.join(d, "scene73.mat"), {"cube": cube.astype(np.float32), "rad": cube}, compressed=("rad",))
    expect["scene73_cube"] = cube.astype(np.float32).transpose(2, 0, 1)
    expect["scene73_rad"] = cube.transpose(2, 0, 1)
    sio.savemat(os.path.join(d, "int64.mat"), {"n": np.arange(6, dtype=np.int64).reshape(2, 3)})
    with h5py.File(os.path.join(d, "data.h5"), "w") as f:
        f["/g/hwc"] = cube.astype(np.float32)
        f.create_dataset("/g/chw", data=(cube * 255).astype(np.uint8).transpose(2, 0, 1), compression="gzip")
        f["/names"] = np.array([b"not", b"numbers"])
        f["/batch"] = np.stack([cube, 1 - cube]).astype(np.float32)  # (B, H, W, C)
    with h5py.File(os.path.join(d, "big.h5"), "w") as f:
        f.create_dataset("cube", shape=(100000, 100000, 31), dtype="f4")  # declared, never written
    with h5py.File(os.path.join(d, "unwritten.h5"), "w") as f:  # the fill value, no storage
        f.create_dataset("f", shape=(40, 60), dtype="f8", fillvalue=-2.0)
    expect["h5_unwritten"] = np.full((40, 60), -2.0)
    with h5py.File(os.path.join(d, "null.h5"), "w") as f:  # no value at all
        f["e"] = h5py.Empty("f4")
    expect["h5_hwc"] = cube.astype(np.float32).transpose(2, 0, 1)
    expect["h5_chw"] = (cube * 255).astype(np.uint8).transpose(2, 0, 1)
    expect["h5_batch"] = np.stack([cube, 1 - cube]).astype(np.float32).transpose(0, 3, 1, 2)
    chw = cube.transpose(2, 0, 1)
    for name, arr in [("u8", (chw * 255).astype(np.uint8)), ("u16", (chw * 65535).astype(np.uint16)),
                      ("f32", chw.astype(np.float32))]:
        tifffile.imwrite(os.path.join(d, "pages_%s.tif" % name), arr, photometric="minisblack")
        expect["tif_" + name] = arr
    tifffile.imwrite(os.path.join(d, "signed.tif"), (chw * 100).astype(np.int32), photometric="minisblack")
    sio.savemat(os.path.join(d, "complex.mat"), {"z": cube[:, :, 0] + 1j})
    rgb = (chw[:3] * 255).astype(np.uint8)
    tifffile.imwrite(os.path.join(d, "rgb.tif"), rgb.transpose(1, 2, 0), photometric="rgb", compression="zlib")
    expect["tif_rgb"] = rgb
    wl = np.linspace(0.45, 0.65, C)
    ints = np.round(chw * 3000 - 1000)
    for code, values in [(1, np.round(chw * 255)), (2, ints), (4, chw.astype(np.float32)), (5, chw), (12, np.round(chw * 65535))]:
        for interleave in ("bsq", "bil", "bip"):
            for big in (False, True):
                name = "envi_%d_%s_%s" % (code, interleave, "be" if big else "le")
                envi(os.path.join(d, name), values, code, interleave, big, offset=3 if big else 0,
                     wavelengths=wl if code in (4, 5) else None, units="Micrometers")
                expect[name] = values.astype({1: np.uint8, 2: np.float32, 4: np.float32, 5: np.float64, 12: np.uint16}[code])
    for k, v in expect.items():
        np.save(os.path.join(d, "expect_%s.npy" % k), v)
    np.save(os.path.join(d, "wavelengths.npy"), wl * 1000)


def read_envi(header):
    fields = {}
    text = open(header).read()
    for line in text.splitlines()[1:]:
        if "=" in line:
            k, v = line.split("=", 1)
            fields[k.strip()] = v.strip()
    shape = (int(fields["bands"]), int(fields["lines"]), int(fields["samples"]))
    dtype = {"1": "u1", "2": "i2", "4": "f4", "5": "f8", "12": "u2"}[fields["data type"]]
    dtype = (">" if fields["byte order"] == "1" else "<") + dtype
    assert fields["interleave"] == "bsq"
    data = np.fromfile(header[:-4] + ".img", dtype=dtype, offset=int(fields["header offset"]))
    wl = fields.get("wavelength")
    return data.reshape(shape), wl


def check(d):
    """hpipe wrote out_* from expect_src.npy; each must hold the same array as the Python tools see it."""
    src = np.load(os.path.join(d, "src.npy"))  # (C, H, W)
    hwc = src.transpose(1, 2, 0)

    def same(name, got, want):
        if got.shape != want.shape or got.dtype != want.dtype or not np.array_equal(got, want):
            sys.exit("%s: got %s %s, expected %s %s" % (name, got.shape, got.dtype, want.shape, want.dtype))
        print("ok", name)

    same("out.mat (scipy.io.loadmat)", sio.loadmat(os.path.join(d, "out.mat"))["data"], hwc)
    same("out_named.mat:cube", sio.loadmat(os.path.join(d, "out_named.mat"))["cube"], hwc)
    same("out_chw.mat --output-layout chw", sio.loadmat(os.path.join(d, "out_chw.mat"))["data"], src)
    with h5py.File(os.path.join(d, "out73.mat"), "r") as f:
        # v7.3 keeps MATLAB's column-major bytes: h5py shows the axes reversed.
        same("out73.mat (h5py, transposed)", np.array(f["data"]).T, hwc)
        assert f["data"].attrs["MATLAB_class"] in (b"double", b"single"), f["data"].attrs["MATLAB_class"]
    with open(os.path.join(d, "out73.mat"), "rb") as f:
        assert f.read(19) == b"MATLAB 7.3 MAT-file"
    with h5py.File(os.path.join(d, "out.h5"), "r") as f:
        same("out.h5:/a/b", np.array(f["/a/b"]), hwc)
    same("out.tif (tifffile)", tifffile.imread(os.path.join(d, "out.tif")), src)
    for t in ("u8", "u16"):
        got = tifffile.imread(os.path.join(d, "out_%s.tif" % t))
        same("out_%s.tif" % t, got, np.load(os.path.join(d, "src_%s.npy" % t)))
    same("out_f32.tif", tifffile.imread(os.path.join(d, "out_f32.tif")), src.astype(np.float32))
    data, wl = read_envi(os.path.join(d, "out.hdr"))
    same("out.hdr + out.img", data, src)
    want_wl = np.load(os.path.join(d, "wavelengths.npy"))
    got_wl = np.array([float(x) for x in wl.strip("{}").split(",")])
    if not np.allclose(got_wl, want_wl, rtol=1e-9):
        sys.exit("out.hdr: wavelengths %s, expected %s" % (got_wl, want_wl))
    print("ok out.hdr wavelengths")


def shift(x, step):
    """MST's shift(): band c moved right by step * c; x is (C, H, W)."""
    c, h, w = x.shape
    out = np.zeros((c, h, w + (c - 1) * step), dtype=x.dtype)
    for i in range(c):
        out[i, :, step * i:step * i + w] = x[i]
    return out


def cassi(d):
    """Files laid out as the KAIST/TSA-Net/MST code has them, and NumPy references."""
    rng = np.random.default_rng(28)
    c, h, w, step = 6, 11, 13, 2
    img = rng.random((h, w, c))                      # scene.mat 'img' (H, W, C)
    mask = (rng.random((h, w)) > 0.4).astype(np.float64) * rng.uniform(0.5, 1, (h, w))
    mask3d = np.tile(mask[:, :, np.newaxis], (1, 1, c))                          # generate_masks
    mask_3d_shift = shift(mask3d.transpose(2, 0, 1), step).transpose(1, 2, 0)    # (H, W', C)
    sio.savemat(os.path.join(d, "scene01.mat"), {"img": img})
    sio.savemat(os.path.join(d, "mask.mat"), {"mask": mask})
    sio.savemat(os.path.join(d, "mask_3d_shift.mat"), {"mask_3d_shift": mask_3d_shift})
    x = img.transpose(2, 0, 1)
    y = shift(mask3d.transpose(2, 0, 1) * x, step).sum(0)                        # gen_meas_torch, Y2H off
    y_norm = y / c * 2                                                           # their normalisation
    sio.savemat(os.path.join(d, "meas.mat"), {"meas": y_norm})
    matlab_v73(os.path.join(d, "meas73.mat"), {"meas_real": y_norm})
    phi = (shift(mask3d.transpose(2, 0, 1), step) ** 2).sum(0)
    phi[phi == 0] = 1
    pinv = np.stack([mask * (y / phi)[:, step * i:step * i + w] for i in range(c)])
    np.save(os.path.join(d, "expect_y.npy"), y)
    np.save(os.path.join(d, "expect_y_norm.npy"), y_norm)
    np.save(os.path.join(d, "expect_pinv.npy"), pinv)
    bad = mask_3d_shift.copy()
    bad[0, -1, 0] = 1  # band 0 is non-zero right of its window
    sio.savemat(os.path.join(d, "bad_shift.mat"), {"mask_3d_shift": bad})


if __name__ == "__main__":
    {"write": write, "check": check, "cassi": cassi}[sys.argv[1]](sys.argv[2])
