// The hpipe tool's spectral formats (MATLAB v5/v7.3, HDF5, TIFF, ENVI), the published CASSI
// code's conventions, and bad files. Fixtures are made and checked by cli_formats_fixtures.py
// with the Python tools themselves (scipy.io, h5py, tifffile, NumPy), run from here.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli_test.h"
#include "io_npy.h"
#include "io_png.h"
#include "preview.h"

namespace hpipe::test {
namespace {

class Formats : public Cli {
 public:
  void SetUp() override {
    Cli::SetUp();
    if (std::string(HPIPE_FIXTURE_PYTHON).empty())
      GTEST_SKIP() << "no python3 with numpy, scipy, h5py and tifffile (scripts/install-deps.sh installs them)";
  }
  // Runs the fixture script's `step` in the scratch folder; its output goes to the test log.
  void python(const std::string &step) const {
    const std::string cmd =
        std::string("'" HPIPE_FIXTURE_PYTHON "' '" HPIPE_FIXTURES "' ") + step + " '" + dir.string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  // `spec` read by hpipe (convert to .npy, the values as stored) holds expect_<name>.npy exactly.
  void reads_as(const std::string &spec, const std::string &name, std::vector<std::string> extra = {}) const {
    SCOPED_TRACE(spec);
    std::vector<std::string> args = {"convert", spec, "-o", "got.npy", "--force", "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    ok(args);
    expect_same(cli::read_npy(path("got.npy")), cli::read_npy(path("expect_" + name + ".npy")));
  }
};

TEST_F(Formats, ReadsWhatThePythonToolsWrite) {
  python("write");
  // MATLAB v5 (scipy.io.savemat): (H, W, C) -> (C, H, W); a selector; logical -> 0 and 1 (as uint8
  // it meant 0 and 1/255: a logical mask dimmed the measurement 255 times); compressed.
  reads_as("scene.mat", "scene_mat");
  reads_as("scene.mat:img", "scene_mat");
  reads_as("two.mat:a", "two_a");
  reads_as("two.mat:mask", "two_mask");
  reads_as("u16.mat", "u16_mat");
  reads_as("int16.mat", "int16_mat");  // refused as truncated: sized at 8 bytes a stored value
  // MATLAB v7.3 (HDF5 inside, h5py shows (C, W, H)): the shape MATLAB shows, (H, W, C).
  reads_as("scene73.mat:cube", "scene73_cube");
  reads_as("scene73.mat:rad", "scene73_rad");  // chunked and deflated
  // HDF5: h5py's shape; hwc by default, --layout chw for a dataset stored band-first; gzip.
  reads_as("data.h5:/g/hwc", "h5_hwc");
  reads_as("data.h5:g/hwc", "h5_hwc");
  reads_as("data.h5:/g/chw", "h5_chw", {"--layout", "chw"});
  reads_as("data.h5:/batch", "h5_batch");    // (B, H, W, C) -> (B, C, H, W)
  reads_as("unwritten.h5", "h5_unwritten");  // refused as truncated: its storage was never written
  // TIFF: one page per band (u8, u16, f32); one page of 3 contiguous samples, deflate-compressed.
  for (const char *t : {"u8", "u16", "f32"}) reads_as(std::string("pages_") + t + ".tif", std::string("tif_") + t);
  reads_as("rgb.tif", "tif_rgb");
  // ENVI: every data type, interleave and byte order, with and without a header offset, named by
  // its header or by its data file.
  for (const char *code : {"1", "2", "4", "5", "12"})
    for (const char *interleave : {"bsq", "bil", "bip"})
      for (const char *order : {"le", "be"}) {
        const std::string name = std::string("envi_") + code + "_" + interleave + "_" + order;
        reads_as(name + ".hdr", name);
        reads_as(name + ".img", name);
      }
  // The data file named is the one read: with stem.raw named, a stem.img beside it was read instead.
  fs::copy_file(dir / "envi_4_bsq_le.img", dir / "envi_4_bsq_le.raw");
  spill(dir / "envi_4_bsq_le.img", std::string(fs::file_size(dir / "envi_4_bsq_le.raw"), '\0'));
  reads_as("envi_4_bsq_le.raw", "envi_4_bsq_le");
  // A .npy beside an ENVI header of the same name is still the .npy.
  spill(dir / "envi_4_bsq_le.npy", slurp(dir / "expect_two_a.npy"));
  reads_as("envi_4_bsq_le.npy", "two_a");
  // info: format, the shape as stored, the layout, the wavelengths (micrometers in, nm out).
  Result r = ok({"info", "scene73.mat:cube", "envi_4_bil_be.hdr", "data.h5:/g/hwc"});
  for (const char *part : {"scene73.mat:cube: MAT v7.3 'cube' (7, 9, 5) hwc -> (5, 7, 9) float32",
                           "envi_4_bil_be.hdr: ENVI BIL, float32 big-endian (5, 7, 9) float32",
                           "wavelengths 450..650 nm (5)", "data.h5:/g/hwc: HDF5 /g/hwc (7, 9, 5) hwc -> (5, 7, 9)"})
    EXPECT_NE(r.out.find(part), std::string::npos) << r.out << " lacks " << part;
  r = ok({"info", "envi_4_bsq_le.hdr", "--json"});
  EXPECT_NE(r.out.find("\"wavelengths\": [450, 500, 550, 600, 650]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"format\": \"envi\""), std::string::npos) << r.out;
}

TEST_F(Formats, WritesWhatThePythonToolsRead) {
  python("write");
  // A float64 (C, H, W) source with wavelengths (ENVI), and integer versions of it.
  ok({"convert", "envi_5_bsq_le.hdr", "-o", "src.npy"});
  ok({"convert", "envi_1_bsq_le.hdr", "-o", "src_u8.npy"});
  ok({"convert", "envi_12_bsq_le.hdr", "-o", "src_u16.npy"});
  ok({"convert", "envi_5_bsq_le.hdr", "-o", "out.mat"});
  ok({"convert", "src.npy", "-o", "out_named.mat:cube"});
  ok({"convert", "src.npy", "-o", "out_chw.mat", "--output-layout", "chw"});
  ok({"convert", "src.npy", "-o", "out73.mat", "--mat-version", "7.3"});
  ok({"convert", "src.npy", "-o", "out.h5:/a/b"});
  ok({"convert", "src.npy", "-o", "out.tif"});
  ok({"convert", "src_u8.npy", "-o", "out_u8.tif"});
  ok({"convert", "src_u16.npy", "-o", "out_u16.tif"});
  ok({"convert", "src.npy", "-o", "out_f32.tif", "--type", "f32"});
  ok({"convert", "envi_5_bsq_le.hdr", "-o", "out.hdr"});  // the wavelengths travel with the cube
  python("check");
  // And back: every file hpipe wrote reads as the source.
  const RawArray src = cli::read_npy(path("src.npy"));
  for (const char *spec : {"out.mat", "out_named.mat:cube", "out73.mat", "out.h5:/a/b", "out.tif", "out.hdr"}) {
    SCOPED_TRACE(spec);
    ok({"convert", spec, "-o", "back.npy", "--force", "-q"});
    expect_same(cli::read_npy(path("back.npy")), src);
  }
  ok({"convert", "out_chw.mat", "-o", "back.npy", "--force", "--layout", "chw"});
  expect_same(cli::read_npy(path("back.npy")), src);
  // Whole-file formats take no per-band pattern; ENVI writes its header and data atomically.
  fails({"convert", "src.npy", "-o", "b_%02d.tif"}, 2, {"b_%02d.tif", "TIFF file holds the whole result"});
  fails({"convert", "src.npy", "-o", "out.hdr"}, 2, {"out.hdr", "exists"});
  fails({"convert", "out.hdr", "-o", "out.hdr", "--force"}, 2, {"refusing to overwrite an input"});
  fails({"convert", "src.npy", "-o", "x.mat", "--mat-version", "6"}, 2, {"--mat-version", "'6'"});
  fails({"convert", "src.npy", "-o", "x.mat", "--output-layout", "whc"}, 2, {"--output-layout", "'whc'"});
}

// The KAIST / TSA-Net / MST files: scene (H, W, C) .mat, a 2-D mask tiled to all bands, the
// pre-shifted mask_3d_shift (H, W + (C - 1) S, C), and the measurement normalised as y / C * 2.
TEST_F(Formats, CassiFilesOfThePublishedCode) {
  python("cassi");
  auto close_to = [&](const std::string &got, const std::string &want) {
    SCOPED_TRACE(got + " against " + want);
    const RawArray g = cli::read_npy(path(got)), w = cli::read_npy(path(want));
    ASSERT_EQ(g.shape, w.shape);
    std::vector<double> gv, wv;
    for (std::int64_t i = 0; i < g.size(); i++) gv.push_back(g.at(i)), wv.push_back(w.at(i));
    // float64 throughout: C + 1 roundings of sums of at most C products (hpipe/cassi.h).
    EXPECT_TRUE(all_near(gv, wv, {1e-15, 1e-14}));
  };
  const std::vector<std::string> cpu = {"--device", "cpu", "--force", "-q"};
  auto run_ok = [&](std::vector<std::string> args) {
    args.insert(args.end(), cpu.begin(), cpu.end());
    ok(args);
  };
  run_ok({"cassi", "forward", "scene01.mat", "--mask", "mask.mat", "-o", "y.npy"});
  close_to("y.npy", "expect_y.npy");
  run_ok({"cassi", "forward", "scene01.mat", "--mask", "mask_3d_shift.mat", "-o", "y_shifted.npy"});
  close_to("y_shifted.npy", "expect_y.npy");
  run_ok({"cassi", "forward", "scene01.mat", "--mask", "mask.mat", "--tsa-norm", "-o", "y_norm.npy"});
  close_to("y_norm.npy", "expect_y_norm.npy");
  // Their normalised measurement (v5 and v7.3) back through the pseudo-inverse, either mask.
  for (const char *meas : {"meas.mat", "meas73.mat"})
    for (const char *mask : {"mask.mat", "mask_3d_shift.mat"}) {
      SCOPED_TRACE(std::string(meas) + " " + mask);
      run_ok({"cassi", "pinv", meas, "--mask", mask, "--bands", "6", "--tsa-norm", "-o", "pinv.npy"});
      close_to("pinv.npy", "expect_pinv.npy");
    }
  // GAP-TV with the pre-shifted mask is GAP-TV with the plain one, bit for bit.
  run_ok({"recon", "gap-tv", "meas.mat", "--mask", "mask.mat", "--bands", "6", "--tsa-norm", "--iters", "2", "-o",
          "a.npy"});
  const Result r = ok({"recon", "gap-tv", "meas.mat", "--mask", "mask_3d_shift.mat", "--tsa-norm", "--iters", "2", "-o",
                       "b.npy", "--device", "cpu", "--json"});
  EXPECT_NE(r.out.find("\"mask_preshifted\": true"), std::string::npos) << r.out;
  expect_same(cli::read_npy(path("b.npy")), cli::read_npy(path("a.npy")));
  fails({"cassi", "pinv", "meas.mat", "--mask", "bad_shift.mat", "-o", "x.npy"}, 1,
        {"bad_shift.mat", "pre-shifted", "band 0 is non-zero outside its window for step 2"});
  // phi has no measurement to tell the layout by: the pre-shifted mask is known by its zeros (it
  // was shifted a second time: a wider, wrong phi), a mask non-zero outside the windows is unshifted.
  run_ok({"cassi", "phi", "--mask", "mask.mat", "--bands", "6", "-o", "phi.npy"});
  const Result p =
      ok({"cassi", "phi", "--mask", "mask_3d_shift.mat", "-o", "phi_shifted.npy", "--device", "cpu", "--json"});
  EXPECT_NE(p.out.find("\"mask_preshifted\": true"), std::string::npos) << p.out;
  expect_same(cli::read_npy(path("phi_shifted.npy")), cli::read_npy(path("phi.npy")));
  const Result u = ok({"cassi", "phi", "--mask", "bad_shift.mat", "-o", "phi_bad.npy", "--device", "cpu", "--json"});
  EXPECT_EQ(u.out.find("mask_preshifted"), std::string::npos) << u.out;
  EXPECT_EQ(cli::read_npy(path("phi_bad.npy")).shape[1], cli::read_npy(path("phi.npy")).shape[1] + 5 * 2);
}

// Writes that made files other tools cannot use: MATLAB variables MATLAB cannot address (x/y was
// a group in v7.3, a name in v5), TIFFs of empty stacks (no page, or pages without strips).
TEST_F(Cli, UnusableWritesAreRefused) {
  cli::write_npy(path("c.npy"), raw({2, 3}, std::vector<float>(6, 1), DType::f32));
  for (const char *name : {"my-var", "1abc", "x/y"})
    fails({"convert", "c.npy", "-o", std::string("n.mat:") + name}, 2, {"is not a MATLAB variable name"});
  cli::write_npy(path("e.npy"), raw({0, 4, 5}, std::vector<float>{}, DType::f32));
  fails({"convert", "e.npy", "-o", "e.tif"}, 1, {"e.tif: TIFF cannot hold the empty shape (0, 4, 5)"});
}

// ---- bad files: one line naming the file and what is wrong, no output, no crash ----

TEST_F(Formats, BadFilesFailCleanly) {
  python("write");
  auto cut = [&](const std::string &from, const std::string &to, double keep) {
    const std::string bytes = slurp(dir / from);
    spill(dir / to, bytes.substr(0, static_cast<std::size_t>(double(bytes.size()) * keep)));
  };
  cut("scene.mat", "short.mat", 0.6);
  cut("scene73.mat", "short73.mat", 0.5);
  cut("data.h5", "short.h5", 0.5);
  cut("pages_u16.tif", "short.tif", 0.5);
  cut("envi_4_bsq_le.img", "short_envi.img", 0.9);
  spill(dir / "short_envi.hdr", slurp(dir / "envi_4_bsq_le.hdr"));
  const std::string hdr = slurp(dir / "envi_1_bsq_le.hdr");
  auto envi_variant = [&](const std::string &name, const std::string &from, const std::string &to) {
    std::string h = hdr;
    h.replace(h.find(from), from.size(), to);
    spill(dir / (name + ".hdr"), h);
    spill(dir / (name + ".img"), slurp(dir / "envi_1_bsq_le.img"));
  };
  envi_variant("complex", "data type = 1", "data type = 6");
  envi_variant("huge", "lines   = 7", "lines   = 1000000000");
  envi_variant("tiled", "interleave = bsq", "interleave = tiles");
  envi_variant("nobands", "bands = 5", "channels = 5");
  // A little-endian TIFF of one page: its directory's entries (tag, type, value) at byte 8, then
  // its pixel bytes, when given, at byte 128.
  const auto one_page_tiff = [](const std::vector<std::array<std::uint32_t, 3>> &entries, const std::string &pixels) {
    std::string tif("II*\0\x08\0\0\0", 8);
    const auto count = static_cast<std::uint16_t>(entries.size());
    tif.append(reinterpret_cast<const char *>(&count), 2);
    for (const auto &[tag, type, value] : entries) {
      const std::uint16_t tag_type[2] = {std::uint16_t(tag), std::uint16_t(type)};
      const std::uint32_t count_value[2] = {1, value};
      tif.append(reinterpret_cast<const char *>(tag_type), 4).append(reinterpret_cast<const char *>(count_value), 8);
    }
    tif.append(4, '\0');
    if (!pixels.empty()) tif.append(128 - tif.size(), '\0').append(pixels);
    return tif;
  };
  // A page that declares 100000 x 100000 pixels of 32-bit float in a few bytes.
  spill(dir / "huge.tif", one_page_tiff({{256, 4, 100000},
                                         {257, 4, 100000},
                                         {258, 3, 32},
                                         {259, 3, 1},
                                         {262, 3, 1},
                                         {273, 4, 8},
                                         {279, 4, 4},
                                         {339, 3, 3}},
                                        ""));
  // A page of 4 x 4 x 2 16-bit samples as one volume (SGI's ImageDepth): its first slice alone was read.
  spill(dir / "volume.tif", one_page_tiff({{256, 4, 4},
                                           {257, 4, 4},
                                           {258, 3, 16},
                                           {259, 3, 1},
                                           {262, 3, 1},
                                           {273, 4, 128},
                                           {279, 4, 64},
                                           {339, 3, 1},
                                           {32997, 4, 2}},
                                          std::string(64, '\1')));
  // PackBits with a Predictor (its differences were returned as the values): libtiff undoes it only
  // for its codecs that take one.
  spill(dir / "predicted.tif", one_page_tiff({{256, 4, 4},
                                              {257, 4, 1},
                                              {258, 3, 8},
                                              {259, 3, 32773},
                                              {262, 3, 1},
                                              {273, 4, 128},
                                              {279, 4, 5},
                                              {317, 3, 2},
                                              {339, 3, 1}},
                                             std::string("\3\0\3\3\3", 5)));
  // A MATLAB v4 file has no header to know it by (it was "not a PNG file (wrong magic)").
  spill(dir / "v4.mat", std::string("\0\0\0\0\1\0\0\0\1\0\0\0\0\0\0\0\2\0\0\0x\0", 22) + std::string(8, '\0'));
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"short.mat",
       {"short.mat: truncated MATLAB file: the element at byte 128 declares 2576 bytes, but the file ends 1534 bytes "
        "after its tag"}},
      {"short73.mat", {"short73.mat: holds no variables (empty, or truncated or corrupt)"}},
      {"scene.mat:label", {"scene.mat: variable 'label' is char 1x7, not a real numeric array"}},
      {"scene.mat:nothing", {"scene.mat: has no variable 'nothing'; it holds: img (double 7x9x5), label (char 1x7)"}},
      {"two.mat",
       {"two.mat: holds several numeric arrays; pick one as two.mat:NAME of: a (single 7x9x5), mask (logical 7x9)"}},
      {"short.h5", {"short.h5: not an HDF5 file, or corrupt (HDF5: truncated file"}},
      {"data.h5", {"data.h5: holds several numeric datasets; pick one as data.h5:/NAME of: /batch, /g/chw, /g/hwc"}},
      // Never written: the fill value, as large as declared (the file does not bound it, memory does).
      {"big.h5", {"big.h5: dataset '/cube' of shape (100000, 100000, 31) needs 1182556 MiB, more than this machine's"}},
      {"null.h5", {"null.h5: dataset '/e' holds no value (a null dataspace)"}},
      {"int64.mat", {"int64.mat: holds no numeric array; it holds: n (int64 2x3)"}},
      {"int64.mat:n",
       {"int64.mat: variable 'n' is int64 2x3, not a real numeric array (double, single, uint8, uint16, "
        "logical, int8/16/32, uint32)"}},
      {"data.h5:/names", {"data.h5: dataset '/names' is not numeric"}},
      {"data.h5:/g", {"data.h5: '/g' is not a dataset"}},
      {"data.h5:/missing", {"data.h5: has no dataset '/missing'"}},
      {"pages_u8.tif:x", {"pages_u8.tif: a ':x' selector needs a MATLAB or HDF5 file"}},
      {"v4.mat", {"v4.mat: not a MATLAB v5 or v7.3 file (v4 files are not read: save with -v7 or -v7.3)"}},
      {"predicted.tif", {"predicted.tif: page 0: has a Predictor with compression 32773, which libtiff does not undo"}},
      {"volume.tif", {"volume.tif: page 0: holds a volume of 2 slices (ImageDepth); hpipe reads one image per page"}},
      {"short.tif", {"short.tif: ", "(libtiff: "}},
      {"signed.tif", {"signed.tif: page 0: unsupported sample type 32-bit signed integer"}},
      {"complex.mat", {"complex.mat: holds no numeric array; it holds: z (complex double 7x9)"}},
      {"complex.mat:z", {"complex.mat: variable 'z' is complex double 7x9, not a real numeric array"}},
      {"huge.tif",
       {"huge.tif: truncated or corrupt: 1 pages of 100000 x 100000 (H x W) needs 40000000000 bytes, more than the "
        "file's"}},
      {"short_envi.hdr",
       {"short_envi.img: truncated or corrupt: ENVI image 5 x 7 x 9 (C x H x W) of float32", "needs 1260 bytes"}},
      {"complex.hdr", {"complex.hdr: ENVI data type 6 is not supported"}},
      {"huge.hdr", {"huge.img: truncated or corrupt: ENVI image 5 x 1000000000 x 9 (C x H x W) of uint8"}},
      {"tiled.hdr", {"tiled.hdr: ENVI interleave 'tiles' is not bsq, bil or bip"}},
      {"nobands.hdr", {"nobands.hdr: ENVI header lacks 'bands'"}},
  };
  for (const auto &[spec, parts] : cases) {
    SCOPED_TRACE(spec);
    fails({"convert", spec, "-o", "out.npy"}, 1, parts);
    fails({"info", spec}, 1, parts);
  }
}

// ---- pictures ----

// The CMF fit against the CIE 1931 2-degree table (CIE 015:2018, 5 nm steps).
TEST(Preview, ColourMatchingFunctionsFollowTheCieTable) {
  const double table[][4] = {{450, 0.33620, 0.03800, 1.77211},
                             {500, 0.00490, 0.32300, 0.27200},
                             {550, 0.43345, 0.99495, 0.00875},
                             {600, 1.06220, 0.63100, 0.00080},
                             {650, 0.28350, 0.10700, 0.00002}};
  for (const auto &row : table) {
    double x, y, z;
    cli::cie1931(row[0], x, y, z);
    SCOPED_TRACE(row[0]);
    // Wyman et al.'s multi-lobe fit: within 0.01 of the table (0.0095 at worst, z at 450 nm: 0.5%).
    EXPECT_NEAR(x, row[1], 0.01);
    EXPECT_NEAR(y, row[2], 0.01);
    EXPECT_NEAR(z, row[3], 0.01);
  }
}

// The sRGB encoding of a linear value, from IEC 61966-2-1 written out here.
int srgb8(double v) {
  return int(std::lround(255 * (v <= 0.0031308 ? 12.92 * v : 1.055 * std::pow(v, 1 / 2.4) - 0.055)));
}

TEST_F(Cli, PreviewRendersFlatSpectraGreyAndNarrowBandsInTheirHue) {
  const std::int64_t C = 28, H = 6, W = 5;
  // Columns of flat spectra at 0, 0.2, 0.5, 1 and 2 (clipped); rows alike.
  std::vector<float> flat(std::size_t(C * H * W));
  const float levels[] = {0, 0.2f, 0.5f, 1, 2};
  for (std::int64_t c = 0; c < C; c++)
    for (std::int64_t i = 0; i < H * W; i++) flat[std::size_t(c * H * W + i)] = levels[i % W];
  cli::write_npy(path("flat.npy"), raw({C, H, W}, flat, DType::f32));
  ok({"preview", "flat.npy", "-o", "flat.png"});
  const RawArray rgb = cli::read_png(path("flat.png")).array;
  ASSERT_EQ(rgb.shape, (std::vector<std::int64_t>{3, H, W}));
  for (std::int64_t i = 0; i < H * W; i++)
    for (int k = 0; k < 3; k++) {
      // D65 through the sRGB matrix is (1, 1, 1) to 4 decimals: the grey is exact to one step.
      const int want = srgb8(std::min(1.0f, levels[i % W]));
      EXPECT_NEAR(rgb.at(k * H * W + i), want, 1) << "pixel " << i << " channel " << k;
    }
  // One band lit: 453 nm is blue, 529.5 nm green, 614.4 nm red (the KAIST bands 0, 14, 24).
  for (const auto &[band, channel] : std::vector<std::pair<int, int>>{{0, 2}, {14, 1}, {24, 0}}) {
    std::vector<float> spike(std::size_t(C * H * W), 0);
    for (std::int64_t i = 0; i < H * W; i++) spike[std::size_t(band * H * W + i)] = 1;
    cli::write_npy(path("spike.npy"), raw({C, H, W}, spike, DType::f32));
    ok({"preview", "spike.npy", "-o", "spike.png", "--gain", "auto", "--force"});
    const RawArray s = cli::read_png(path("spike.png")).array;
    SCOPED_TRACE(band);
    for (int k = 0; k < 3; k++)
      if (k != channel) EXPECT_GT(s.at(channel * H * W), s.at(k * H * W) + 40);
  }
}

// Sizes read H x W everywhere: preview said "10 x 8" (W x H) of an (8, 10) picture, and a TIFF
// page's error gave its width first, unlike the shapes beside them.
TEST_F(Cli, SizesAreHeightByWidth) {
  const std::int64_t C = 28, H = 8, W = 10;
  cli::write_npy(path("cube.npy"), raw({C, H, W}, random_values<float>(std::size_t(C * H * W), 5, 0, 1), DType::f32));
  EXPECT_NE(ok({"preview", "cube.npy", "-o", "p.png"}).out.find("colour picture of 28 bands, 8 x 10 (H x W)"),
            std::string::npos);
  EXPECT_EQ(cli::read_png(path("p.png")).array.shape, (std::vector<std::int64_t>{3, H, W}));
  // A little-endian TIFF of 8-bit grey pages, 3 x 4 (H x W) then 2 x 4, uncompressed.
  std::string tif("II*\0", 4);
  auto u16 = [&](std::uint16_t v) { tif.append(reinterpret_cast<const char *>(&v), 2); };
  auto u32 = [&](std::uint32_t v) { tif.append(reinterpret_cast<const char *>(&v), 4); };
  std::size_t next_ifd_at = tif.size();
  u32(0);
  for (const auto &[h, w] : std::vector<std::pair<std::uint32_t, std::uint32_t>>{{3, 4}, {2, 4}}) {
    const auto pixels_at = static_cast<std::uint32_t>(tif.size());
    tif.append(h * w + (h * w) % 2, '\x7f');  // the directory starts on a word boundary
    const auto ifd_at = static_cast<std::uint32_t>(tif.size());
    std::memcpy(&tif[next_ifd_at], &ifd_at, 4);
    const std::vector<std::array<std::uint32_t, 3>> entries = {// tag, type (3 short, 4 long), value
                                                               {256, 4, w}, {257, 4, h}, {258, 3, 8},
                                                               {259, 3, 1}, {262, 3, 1}, {273, 4, pixels_at},
                                                               {277, 3, 1}, {278, 4, h}, {279, 4, h * w}};
    u16(static_cast<std::uint16_t>(entries.size()));
    for (const auto &[tag, type, value] : entries)
      u16(std::uint16_t(tag)), u16(std::uint16_t(type)), u32(1), u32(value);
    next_ifd_at = tif.size();
    u32(0);
  }
  spill(dir / "pages.tif", tif);
  fails({"info", "pages.tif"}, 1,
        {"pages.tif: page 1: is 2 x 4 (H x W) 8-bit unsigned integer x 1, page 0 3 x 4 (H x W) 8-bit unsigned integer "
         "x 1 (every page must be a band of the same size and type)"});
}

TEST_F(Cli, PreviewMontageAndWavelengths) {
  const std::int64_t C = 5, H = 9, W = 11;
  cli::write_npy(path("cube.npy"), raw({C, H, W}, random_values<float>(std::size_t(C * H * W), 3, 0, 1), DType::f32));
  fails({"preview", "cube.npy", "-o", "p.png"}, 2, {"cube.npy has 5 bands and no wavelengths", "--wavelengths"});
  fails({"preview", "cube.npy", "-o", "p.png", "--wavelengths", "450,500"}, 2, {"--wavelengths", "expected 5 numbers"});
  fails({"preview", "cube.npy", "-o", "p.npy", "--wavelengths", "450:650"}, 2, {"p.npy", "writes a .png"});
  fails({"preview", "cube.npy", "-o", "p.png", "--wavelengths", "450:650", "--gain", "0"}, 2, {"--gain", "'0'"});
  const Result r = ok({"preview", "cube.npy", "-o", "p.png", "--wavelengths", "450:650", "--json"});
  EXPECT_NE(r.out.find("\"wavelengths\": [450, 500, 550, 600, 650]"), std::string::npos) << r.out;
  ok({"preview", "cube.npy", "-o", "listed.png", "--wavelengths", "450,500,550,600,650"});
  EXPECT_EQ(slurp(dir / "listed.png"), slurp(dir / "p.png"));
  ok({"preview", "cube.npy", "-o", "spaced.png", "--wavelengths", "450 : 650"});
  EXPECT_EQ(slurp(dir / "spaced.png"), slurp(dir / "p.png"));
  // No visible band: a colour picture would be black (micrometres drew one); a montage only labels
  // its bands with them (near infrared).
  fails({"preview", "cube.npy", "-o", "um.png", "--wavelengths", "0.45:0.65"}, 2,
        {"--wavelengths 0.45:0.65: no band within the visible 380-780 nm"});
  ok({"preview", "cube.npy", "-o", "nir.png", "--wavelengths", "900:1700", "--montage"});
  // --gain auto puts the 99th percentile at white: of 100 pixels, one bright one does not set it
  // (the rank above it was taken, the largest: the other 99 came out nearly black).
  std::vector<float> flat(100, 0.1f);
  flat[37] = 100;
  cli::write_npy(path("outlier.npy"), raw({1, 10, 10}, flat, DType::f32));
  ok({"preview", "outlier.npy", "-o", "outlier.png", "--wavelengths", "550:550", "--montage", "--gain", "auto"});
  ok({"preview", "outlier.npy", "-o", "gain10.png", "--wavelengths", "550:550", "--montage", "--gain", "10"});
  EXPECT_EQ(slurp(dir / "outlier.png"), slurp(dir / "gain10.png")) << "--gain auto is not 1 / 0.1";
  // A stack whose files' wavelengths cover only some of its bands: an ENVI file's 3 were laid on
  // the first 3 of 5 bands and read past their end (AddressSanitizer).
  spill(dir / "three.hdr",
        "ENVI\nsamples = 11\nlines = 9\nbands = 3\nheader offset = 0\ndata type = 4\ninterleave = bsq\n"
        "byte order = 0\nwavelength = {450, 550, 650}\n");
  const std::vector<float> three = random_values<float>(std::size_t(3 * H * W), 4, 0, 1);
  spill(dir / "three.img", std::string(reinterpret_cast<const char *>(three.data()), three.size() * sizeof(float)));
  cli::write_npy(path("two.npy"), raw({2, H, W}, random_values<float>(std::size_t(2 * H * W), 6, 0, 1), DType::f32));
  fails({"preview", "three.hdr", "two.npy", "-o", "s.png"}, 2, {"has 5 bands and no wavelengths", "--wavelengths"});
  ok({"preview", "three.hdr", "two.npy", "-o", "s.png", "--wavelengths", "450:650"});
  // The montage: a 3 x 2 grid of 11 x 9 tiles with a 4-pixel gap and a 10-pixel label strip above
  // each; a tile holds its band in grey (the values at gain 1).
  ok({"preview", "cube.npy", "-o", "m.png", "--wavelengths", "450:650", "--montage"});
  const RawArray m = cli::read_png(path("m.png")).array;
  const std::int64_t gap = 4, label = 10, mh = 2 * (label + H + gap) + gap, mw = 3 * (W + gap) + gap;
  ASSERT_EQ(m.shape, (std::vector<std::int64_t>{3, mh, mw}));
  const RawArray cube = cli::read_npy(path("cube.npy"));
  for (std::int64_t c = 0; c < C; c++) {
    const std::int64_t y0 = gap + (c / 3) * (label + H + gap) + label, x0 = gap + (c % 3) * (W + gap);
    for (std::int64_t y = 0; y < H; y++)
      for (std::int64_t x = 0; x < W; x++)
        ASSERT_EQ(m.at((y0 + y) * mw + x0 + x), srgb8(cube.at((c * H + y) * W + x))) << c << " " << y << " " << x;
    // The label strip has white text in it.
    bool text = false;
    for (std::int64_t y = y0 - label; y < y0; y++)
      for (std::int64_t x = x0; x < x0 + W; x++) text = text || m.at(y * mw + x) == 255;
    EXPECT_TRUE(text) << "band " << c << " has no label";
  }
}

TEST_F(Formats, PreviewUsesTheFilesWavelengthsAndReconWritesPictures) {
  python("write");
  ok({"preview", "envi_4_bsq_le.hdr", "-o", "envi.png"});  // 450..650 nm from the header
  ok({"preview", "envi_4_bsq_le.hdr", "-o", "given.png", "--wavelengths", "450:650"});
  EXPECT_EQ(slurp(dir / "envi.png"), slurp(dir / "given.png"));
  // recon --preview: the result alone, or with --truth the truth, the pseudo-inverse and the three
  // side by side; nothing when the command fails.
  ok({"synth", "-o", "scene.npy", "--mask", "mask.npy", "--bands", "28", "--height", "24", "--width", "20"});
  ok({"cassi", "forward", "scene.npy", "--mask", "mask.npy", "-o", "y.npy"});
  ok({"recon", "gap-tv", "y.npy", "--mask", "mask.npy", "--iters", "2", "-o", "x.npy", "--preview", "alone"});
  EXPECT_TRUE(fs::exists(dir / "alone/result.png") && !fs::exists(dir / "alone/truth.png"));
  ok({"recon", "gap-tv", "y.npy", "--mask", "mask.npy", "--iters", "2", "-o", "x2.npy", "--truth", "scene.npy",
      "--preview", "all"});
  for (const char *f : {"result", "truth", "pinv", "comparison"})
    EXPECT_TRUE(fs::exists(dir / "all" / (std::string(f) + ".png"))) << f;
  ok({"preview", "scene.npy", "-o", "scene.png"});
  EXPECT_EQ(slurp(dir / "all/truth.png"), slurp(dir / "scene.png"));
  const RawArray both = cli::read_png(path("all/comparison.png")).array;
  EXPECT_EQ(both.shape[2], 6 + 3 * (20 + 6));  // three 20-pixel panels with 6-pixel gaps
  fails({"recon", "gap-tv", "y.npy", "--mask", "mask.npy", "--iters", "2", "-o", "x3.npy", "--preview", "none",
         "--wavelengths", "1,2"},
        2, {"--wavelengths", "expected 28 numbers"});
}

}  // namespace
}  // namespace hpipe::test
