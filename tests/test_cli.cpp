// The hpipe command-line tool, driven end to end: the real binary (HPIPE_CLI) runs in a scratch
// folder; its files are read back with the tool's own readers and compared with the C++ API.
#include <gtest/gtest.h>
#include <png.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test.h"
#include "io_npy.h"
#include "io_png.h"

namespace hpipe::test {
namespace {

// ---- I/O: round trips ----

TEST_F(Cli, Png8And16RoundTripsBitExact) {
  for (const auto type : {DType::u8, DType::u16}) {
    SCOPED_TRACE(cli::name(type));
    const RawArray a = type == DType::u8 ? raw({7, 13}, random_integers<std::uint8_t>(91, 1, 255), type)
                                         : raw({7, 13}, random_integers<std::uint16_t>(91, 2, 65535), type);
    cli::write_png(path("a.png"), a, std::nullopt);
    ok({"convert", "a.png", "-o", "b.png", "--force"});
    expect_same(cli::read_png(path("b.png")).array, a);
    // Through .npy (the integer type is kept) and back; and through float32 values in [0, 1].
    ok({"convert", "a.png", "-o", "a.npy", "--force"});
    expect_same(cli::read_npy(path("a.npy")), a);
    ok({"convert", "a.npy", "-o", "c.png", "--force"});
    expect_same(cli::read_png(path("c.png")).array, a);
    ok({"convert", "a.png", "-o", "f.npy", "--type", "f32", "--force"});
    ok({"convert", "f.npy", "-o", "d.png", "--type", type == DType::u8 ? "u8" : "u16", "--force"});
    expect_same(cli::read_png(path("d.png")).array, a);
    // --raw keeps the integers as values.
    ok({"convert", "a.png", "-o", "r.npy", "--raw", "--type", "f64", "--force"});
    const std::vector<double> r = values_of<double>(cli::read_npy(path("r.npy")));
    for (std::int64_t i = 0; i < a.size(); i++) ASSERT_EQ(r[i], a.at(i));
  }
}

// A stack of PNG planes is deflated on several threads, a round at a time: the same files, in
// the same order, whatever the thread count (7 planes: rounds of 3 end short), values clipped
// counted once each.
TEST_F(Cli, PngStacksAreTheSameOnAnyThreadCount) {
  std::vector<double> values = random_values<double>(7 * 19 * 23, 9, 0, 1);
  values[5] = 2, values[7 * 19 * 23 - 1] = -1;  // clipped, in the first and the last plane
  cli::write_npy(path("cube.npy"), raw({7, 19, 23}, values, DType::f64));
  std::vector<std::string> files[2];
  for (int t = 0; t < 2; t++) {
    const std::string threads = t ? "3" : "1", out = "t" + threads;
    const Result r = ok({"convert", "cube.npy", "-o", out + "/p%d.png", "--type", "u16", "--threads", threads, "--json"});
    EXPECT_NE(r.out.find("\"clipped\": 2"), std::string::npos) << r.out;
    for (int p = 0; p < 7; p++) files[t].push_back(slurp(path(out + "/p" + std::to_string(p) + ".png")));
  }
  EXPECT_EQ(files[0], files[1]);
  for (int p = 1; p < 7; p++) EXPECT_NE(files[0][p], files[0][p - 1]) << p;
}

TEST_F(Cli, NpyRoundTripsBitExactForEveryTypeAndRank) {
  const std::vector<std::vector<std::int64_t>> shapes = {{}, {5}, {3, 4}, {2, 3, 5}, {1, 2, 3, 2}, {2, 0, 3}};
  std::uint32_t seed = 10;
  for (const auto &shape : shapes) {
    std::size_t n = 1;
    for (auto e : shape) n *= static_cast<std::size_t>(e);
    for (const auto type : {DType::f32, DType::f64, DType::u8, DType::u16}) {
      SCOPED_TRACE(cli::name(type) + cli::shape_string(shape));
      RawArray a;
      switch (type) {
        case DType::f32: a = raw(shape, random_values<float>(n, seed++, -3, 3), type); break;
        case DType::f64: a = raw(shape, random_values<double>(n, seed++, -3, 3), type); break;
        case DType::u8:
          a = raw(shape, n ? random_integers<std::uint8_t>(n, seed++, 255) : std::vector<std::uint8_t>{}, type);
          break;
        case DType::u16:
          a = raw(shape, n ? random_integers<std::uint16_t>(n, seed++, 65535) : std::vector<std::uint16_t>{}, type);
          break;
      }
      cli::write_npy(path("a.npy"), a);
      ok({"convert", "a.npy", "-o", "b.npy", "--force"});
      expect_same(cli::read_npy(path("b.npy")), a);
    }
  }
}

// Colour PNGs (written here with libpng's simplified API) read as 3 bands; alpha is dropped.
TEST_F(Cli, ColourPngReadsAsThreeBands) {
  const int H = 3, W = 5;
  for (const auto format : {PNG_FORMAT_RGB, PNG_FORMAT_RGBA}) {
    const int channels = format == PNG_FORMAT_RGB ? 3 : 4;
    const std::vector<std::uint8_t> pixels = random_integers<std::uint8_t>(std::size_t(H * W * channels), 7, 255);
    png_image image{};
    image.version = PNG_IMAGE_VERSION;
    image.width = W;
    image.height = H;
    image.format = format;
    ASSERT_TRUE(png_image_write_to_file(&image, path("rgb.png").c_str(), 0, pixels.data(), 0, nullptr));
    ok({"convert", "rgb.png", "-o", "rgb.npy", "--force"});
    const RawArray a = cli::read_npy(path("rgb.npy"));
    EXPECT_EQ(a.shape, (std::vector<std::int64_t>{3, H, W}));
    for (int c = 0; c < 3; c++)
      for (int i = 0; i < H * W; i++) ASSERT_EQ(a.at(c * H * W + i), pixels[std::size_t(i * channels + c)]);
  }
}

// A file as NumPy writes it (np.save of np.arange(6, dtype=np.float32).reshape(2, 3)).
TEST_F(Cli, ReadsNumpysOwnNpyFiles) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header += '\n';
  std::string file =
      std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 0xff) + char(header.size() >> 8) + header;
  for (int i = 0; i < 6; i++) {
    const float f = float(i);
    file.append(reinterpret_cast<const char *>(&f), 4);
  }
  spill(dir / "np.npy", file);
  ok({"convert", "np.npy", "-o", "out.npy"});
  EXPECT_EQ(slurp(dir / "out.npy"), file);  // and hpipe writes the very same bytes
  const Result r = ok({"info", "np.npy", "--json"});
  EXPECT_NE(r.out.find("\"shape\": [2, 3]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"max\": 5"), std::string::npos) << r.out;
}

// ---- stacks ----

TEST_F(Cli, StacksFromGlobFolderListAndFilesInBandOrder) {
  fs::create_directory(dir / "bands");
  for (int b : {10, 2, 1})
    cli::write_npy(path("bands/band_" + std::to_string(b) + ".npy"),
                   raw({2, 3}, std::vector<float>(6, float(b)), DType::f32));
  auto bands_of = [&](const std::string &file) {
    std::vector<float> v = values_of<float>(cli::read_npy(path(file)));
    std::vector<float> first;
    for (std::size_t i = 0; i < v.size(); i += 6) first.push_back(v[i]);
    return first;
  };
  ok({"convert", "bands/band_*.npy", "-o", "glob.npy"});
  EXPECT_EQ(bands_of("glob.npy"), (std::vector<float>{1, 2, 10}));
  EXPECT_EQ(cli::read_npy(path("glob.npy")).shape, (std::vector<std::int64_t>{3, 2, 3}));
  ok({"convert", "bands", "-o", "folder.npy"});
  EXPECT_EQ(bands_of("folder.npy"), (std::vector<float>{1, 2, 10}));
  spill(dir / "bands/list.txt", "# bands\nband_10.npy\n\nband_1.npy\n");
  ok({"convert", "@bands/list.txt", "-o", "list.npy"});
  EXPECT_EQ(bands_of("list.npy"), (std::vector<float>{10, 1}));
  ok({"convert", "bands/band_2.npy", "bands/band_1.npy", "-o", "files.npy"});
  EXPECT_EQ(bands_of("files.npy"), (std::vector<float>{2, 1}));
  // Written per band through a pattern (folders made as needed), and read back as a folder.
  ok({"convert", "glob.npy", "-o", "out/sub/b_%02d.npy"});
  EXPECT_TRUE(fs::exists(dir / "out/sub/b_00.npy") && fs::exists(dir / "out/sub/b_02.npy"));
  ok({"convert", "out/sub", "-o", "again.npy"});
  EXPECT_EQ(slurp(dir / "again.npy"), slurp(dir / "glob.npy"));
}

TEST_F(Cli, NaturalSortPutsBand2BeforeBand10) {
  for (int b : {2, 10, 1, 100, 20})
    cli::write_png(path("band_" + std::to_string(b) + ".png"),
                   raw({1, 1}, std::vector<std::uint8_t>{std::uint8_t(b)}, DType::u8), std::nullopt);
  ok({"convert", "band_*.png", "-o", "s.npy", "--raw", "--type", "f32"});
  EXPECT_EQ(values_of<float>(cli::read_npy(path("s.npy"))), (std::vector<float>{1, 2, 10, 20, 100}));
}

// ---- types, scaling, overwriting ----

TEST_F(Cli, TypeAndScaleClampRoundAndReportClipping) {
  cli::write_npy(path("v.npy"), raw({1, 4}, std::vector<float>{-1.0f, 0.25f, 1.0f, 2.0f}, DType::f32));
  Result r = ok({"convert", "v.npy", "-o", "clip.png", "--type", "u8", "--json"});
  EXPECT_NE(r.out.find("\"clipped\": 2"), std::string::npos) << r.out;
  EXPECT_EQ(values_of<std::uint8_t>(cli::read_png(path("clip.png")).array),
            (std::vector<std::uint8_t>{0, 64, 255, 255}));
  r = ok({"convert", "v.npy", "-o", "clip16.png"});  // PNG defaults to u16; the warning names the file
  EXPECT_NE(r.err.find("clip16.png: 2 values"), std::string::npos) << r.err;
  ok({"convert", "v.npy", "-o", "auto.png", "--scale", "auto"});
  EXPECT_EQ(values_of<std::uint16_t>(cli::read_png(path("auto.png")).array),
            (std::vector<std::uint16_t>{0, 27306, 43690, 65535}));
  // The stored range brings the values back (to within a 16-bit step).
  ok({"convert", "auto.png", "-o", "back.npy"});
  ok({"convert", "auto.png", "-o", "back.npy", "--type", "f64", "--force"});
  const std::vector<double> back = values_of<double>(cli::read_npy(path("back.npy")));
  const std::vector<double> expected{-1.0, 0.25, 1.0, 2.0};
  EXPECT_TRUE(all_near(back, expected, {3.0 / 65535, 0}));
  ok({"convert", "v.npy", "-o", "fixed.npy", "--scale", "0,2"});
  EXPECT_EQ(values_of<float>(cli::read_npy(path("fixed.npy"))), (std::vector<float>{-0.5f, 0.125f, 0.5f, 1.0f}));
  // A range wider than the largest double (max - min overflows) gave zeros and NaN.
  cli::write_npy(path("wide.npy"), raw({1, 5}, std::vector<double>{-1e308, -5e307, 0, 5e307, 1e308}, DType::f64));
  ok({"convert", "wide.npy", "-o", "wide16.npy", "--scale", "auto", "--type", "u16"});
  EXPECT_EQ(values_of<std::uint16_t>(cli::read_npy(path("wide16.npy"))),
            (std::vector<std::uint16_t>{0, 16384, 32768, 49151, 65535}));
  ok({"convert", "wide.npy", "-o", "wide64.npy", "--scale", "auto", "--type", "f64"});
  EXPECT_EQ(values_of<double>(cli::read_npy(path("wide64.npy"))), (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  ok({"convert", "wide.npy", "-o", "wide.png", "--scale", "auto"});
  EXPECT_NE(ok({"info", "wide.png"}).out.find("values [-1e+308, 1e+308]"), std::string::npos);
  // Finite values past float32's range become +-inf with --type f32: counted as clipped ones are
  // (they were written silently).
  r = ok({"convert", "wide.npy", "-o", "wide32.npy", "--type", "f32", "--json"});
  EXPECT_NE(r.out.find("\"clipped\": 4"), std::string::npos) << r.out;
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(values_of<float>(cli::read_npy(path("wide32.npy"))), (std::vector<float>{-inf, -inf, 0, inf, inf}));
  r = ok({"convert", "wide.npy", "-o", "wide32b.npy", "--type", "f32"});
  EXPECT_NE(r.err.find("wide32b.npy: 4 values were outside the float32 range and became +-inf"), std::string::npos)
      << r.err;
  fails({"convert", "v.npy", "-o", "f.png", "--type", "f32"}, 2, {"PNG holds u8 or u16"});
  fails({"convert", "v.npy", "-o", "x.npy", "--scale", "2,1"}, 2, {"--scale", "MIN < MAX", "'2,1'"});
  fails({"convert", "v.npy", "-o", "x.npy", "--type", "i32"}, 2, {"--type", "'i32'"});
  fails({"convert", "v.npy", "-o", "x.gif"}, 2, {"x.gif", "expected a .png, .npy, .mat, .h5, .tif or .hdr"});
}

// A PNG written with --scale reads in its original units: convert kept its uint16 type, and
// [-5, 0, 2.5, 10, 7] came back as [0, 0, 65535, 65535, 65535].
TEST_F(Cli, ConvertOfAScaledPngGivesItsValuesBack) {
  const double nan = std::nan("");
  cli::write_npy(path("v.npy"), raw({2, 3}, std::vector<double>{-5, 0, 2.5, 10, nan, 7}, DType::f64));
  ok({"convert", "v.npy", "-o", "v.png", "--scale", "auto"});
  ok({"convert", "v.png", "-o", "back.npy"});
  const RawArray back = cli::read_npy(path("back.npy"));
  EXPECT_EQ(back.dtype, DType::f32);
  std::vector<float> want;
  for (double v : {-5.0, 0.0, 2.5, 10.0, -5.0, 7.0})  // NaN is stored as 0, the range's low end
    want.push_back(static_cast<float>(-5 + std::nearbyint((v + 5) / 15 * 65535) * (15 / 65535.0)));
  EXPECT_EQ(values_of<float>(back), want);
  // --raw: the stored codes, as they are.
  ok({"convert", "v.png", "-o", "codes.npy", "--raw"});
  const RawArray codes = cli::read_npy(path("codes.npy"));
  EXPECT_EQ(codes.dtype, DType::u16);
  EXPECT_EQ(values_of<std::uint16_t>(codes), (std::vector<std::uint16_t>{0, 21845, 32768, 65535, 0, 52428}));
}

TEST_F(Cli, RefusesToOverwriteInputsAndExistingOutputsWithoutForce) {
  cli::write_npy(path("a.npy"), raw({2, 2}, std::vector<float>{1, 2, 3, 4}, DType::f32));
  ok({"convert", "a.npy", "-o", "b.npy"});
  const std::string before = slurp(dir / "b.npy");
  fails({"convert", "a.npy", "-o", "b.npy", "--type", "f64"}, 2, {"b.npy", "exists", "--force"});
  EXPECT_EQ(slurp(dir / "b.npy"), before);
  fails({"convert", "a.npy", "-o", "a.npy", "--force"}, 2, {"a.npy", "refusing to overwrite an input"});
  fails({"convert", "a.npy", "-o", "./a.npy", "--force"}, 2, {"refusing to overwrite an input"});
  ok({"convert", "a.npy", "-o", "b.npy", "--type", "f64", "--force"});
  EXPECT_EQ(cli::read_npy(path("b.npy")).dtype, DType::f64);
  // A multi-band result needs a pattern to go to PNG; a bad pattern is a usage error.
  cli::write_npy(path("c.npy"), raw({2, 1, 2}, std::vector<float>{0, 1, 0, 1}, DType::f32));
  fails({"convert", "c.npy", "-o", "c.png"}, 2, {"c.png", "2 planes", "%02d"});
  fails({"convert", "c.npy", "-o", "c_%s.png"}, 2, {"c_%s.png", "%d"});
  fails({"convert", "c.npy", "-o", "c_%d_%d.png"}, 2, {"exactly one"});
  // One file named twice in two spellings: both writers shared one temporary, and the second
  // rename failed with the first file written.
  fails({"convert", "c.npy", "-o", "o/a%d/../b.npy"}, 2, {"names this file twice"});
}

// ---- subcommands against the C++ API ----

TEST_F(Cli, SynthWritesTheLibrarysSceneAndMask) {
  ok({"synth", "-o", "scene.npy", "--mask", "mask.npy", "--bands", "5", "--height", "9", "--width", "11", "--seed",
      "3"});
  expect_same(cli::read_npy(path("scene.npy")), raw_of(synth_scene(5, 9, 11)));
  expect_same(cli::read_npy(path("mask.npy")), raw_of(synth_mask(9, 11, 3)));
  ok({"synth", "-o", "png/band_%02d.png", "--bands", "3", "--height", "4", "--width", "6"});
  EXPECT_TRUE(fs::exists(dir / "png/band_02.png") && !fs::exists(dir / "png/band_03.png"));
}

struct CassiCase {
  std::int64_t B, C, H, W;
  int step;
  bool along_y, per_band;
};

template <class T>
void check_cassi(const Cli &t, const CassiCase &c, std::uint32_t seed) {
  SCOPED_TRACE("B=" + std::to_string(c.B) + " C=" + std::to_string(c.C) + " step=" + std::to_string(c.step) +
               (c.along_y ? " y" : " x") + (c.per_band ? " per-band" : "") + (sizeof(T) == 8 ? " f64" : " f32"));
  const DType type = sizeof(T) == 8 ? DType::f64 : DType::f32;
  const Dispersion d{c.step, c.along_y ? Axis::height : Axis::width};
  const auto x = random_array<T, 4>({c.B, c.C, c.H, c.W}, seed);
  const auto shared = random_array<T, 2>({c.H, c.W}, seed + 1);
  const auto band = random_array<T, 3>({c.C, c.H, c.W}, seed + 2);
  const Mask<T> mask = c.per_band ? Mask<T>(band.view()) : Mask<T>(shared.view());
  const auto meas = cassi_measurement_shape(x.shape(), d);
  const auto y = random_array<T, 3>(meas, seed + 3);
  auto shape = [](auto s) { return std::vector<std::int64_t>(s.begin(), s.end()); };
  cli::write_npy(t.path("x.npy"), raw(shape(x.shape()), std::vector<T>(x.data(), x.data() + x.size()), type));
  cli::write_npy(t.path("y.npy"), raw(shape(y.shape()), std::vector<T>(y.data(), y.data() + y.size()), type));
  cli::write_npy(t.path("mask.npy"), c.per_band ? raw_of(band) : raw_of(shared));
  const std::vector<std::string> common = {
      "--mask", "mask.npy", "--step", std::to_string(c.step), "--axis", c.along_y ? "y" : "x", "--device",
      "cpu",    "--force",  "-q"};
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.end(), common.begin(), common.end());
    t.ok(args);
  };
  const Options cpu{Device::cpu};
  cli({"cassi", "forward", "x.npy", "-o", "out.npy"});
  expect_same(cli::read_npy(t.path("out.npy")), raw_of(cassi_forward(x.view(), mask, d, cpu)));
  cli({"cassi", "adjoint", "y.npy", "-o", "out.npy"});
  expect_same(cli::read_npy(t.path("out.npy")), raw_of(cassi_adjoint(y.view(), mask, c.C, d, cpu)));
  cli({"cassi", "pinv", "y.npy", "-o", "out.npy", "--bands", std::to_string(c.C)});
  expect_same(cli::read_npy(t.path("out.npy")), raw_of(cassi_pinv(y.view(), mask, c.C, d, cpu)));
  cli({"cassi", "pinv-alpha", "y.npy", "-o", "out.npy"});
  expect_same(cli::read_npy(t.path("out.npy")), raw_of(cassi_pinv_alpha(y.view(), mask, c.C, d, cpu)));
  cli({"cassi", "phi", "-o", "out.npy", "--bands", std::to_string(c.C)});
  Array<T, 2> phi({meas[1], meas[2]});
  cassi_phi(mask, c.C, d, phi.view(), cpu);
  expect_same(cli::read_npy(t.path("out.npy")), raw_of(phi));
}

TEST_F(Cli, CassiMatchesTheApiBitForBit) {
  const std::vector<CassiCase> cases = {
      {1, 5, 7, 9, 2, false, false},  // the usual layout, odd sizes
      {2, 3, 6, 5, -3, true, false},  // a batch, negative step along y
      {1, 4, 5, 8, 1, false, true},   // per-band mask
  };
  std::uint32_t seed = 100;
  for (const auto &c : cases) {
    check_cassi<float>(*this, c, seed += 10);
    check_cassi<double>(*this, c, seed += 10);
  }
}

TEST_F(Cli, CassiReadsBandStacksAndWritesThem) {
  // PNG bands in, PNG measurement out, as the demo does; then back to bands.
  ok({"synth", "-o", "scene/band_%02d.png", "--mask", "mask.png", "--bands", "6", "--height", "10", "--width", "12"});
  const Result r = ok({"cassi", "forward", "scene", "--mask", "mask.png", "-o", "y.png", "--scale", "auto", "--json"});
  EXPECT_NE(r.out.find("\"shape\": [10, 22]"), std::string::npos) << r.out;
  ok({"cassi", "pinv", "y.png", "--mask", "mask.png", "-o", "back/band_%02d.png", "--scale", "auto"});
  EXPECT_TRUE(fs::exists(dir / "back/band_05.png") && !fs::exists(dir / "back/band_06.png"));
  // The same through the API on the values the files hold.
  ok({"convert", "scene", "-o", "x.npy", "--type", "f32"});
  ok({"convert", "mask.png", "-o", "m.npy", "--type", "f32"});
  const auto xs = cli::read_npy(path("x.npy")), ms = cli::read_npy(path("m.npy"));
  std::vector<float> xv = values_of<float>(xs), mv = values_of<float>(ms);
  const auto y =
      cassi_forward(View<const float, 4>(xv.data(), {1, 6, 10, 12}), View<const float, 2>(mv.data(), {10, 12}),
                    Dispersion{2, Axis::width}, Options{Device::cpu});
  ok({"convert", "y.png", "-o", "y.npy", "--type", "f32"});
  const std::vector<float> got = values_of<float>(cli::read_npy(path("y.npy")));
  double top = 0;
  for (std::int64_t i = 0; i < y.size(); i++) top = std::max(top, double(y.data()[i]));
  // 16-bit quantisation of the measurement: half a step of its range.
  EXPECT_TRUE(all_near(std::vector<double>(got.begin(), got.end()), to_doubles(y), {0.5 * top / 65535 + 1e-6, 0}));
}

// forward took the bands from the cube and ignored a --bands that said otherwise.
TEST_F(Cli, CassiForwardRefusesBandsThatContradictTheCube) {
  cli::write_npy(path("cube.npy"), raw({4, 6, 5}, random_values<float>(120, 9, 0, 1), DType::f32));
  cli::write_npy(path("mask.npy"), raw({6, 5}, random_values<float>(30, 10, 0, 1), DType::f32));
  fails({"cassi", "forward", "cube.npy", "--mask", "mask.npy", "--bands", "7", "-o", "f.npy"}, 2,
        {"--bands 7: cube.npy has 4 bands (shape (4, 6, 5)); leave --bands out"});
  ok({"cassi", "forward", "cube.npy", "--mask", "mask.npy", "--bands", "4", "-o", "with.npy"});
  ok({"cassi", "forward", "cube.npy", "--mask", "mask.npy", "-o", "without.npy"});
  EXPECT_EQ(slurp(dir / "with.npy"), slurp(dir / "without.npy"));
}

TEST_F(Cli, CassiErrorsNameTheFile) {
  cli::write_npy(path("x.npy"), raw({3, 4, 5}, random_values<float>(60, 1, 0.1, 1), DType::f32));
  cli::write_npy(path("m.npy"), raw({4, 6}, random_values<float>(24, 2, 0.1, 1), DType::f32));
  fails({"cassi", "forward", "x.npy", "--mask", "m.npy", "-o", "y.npy"}, 1, {"m.npy", "mask shape wrong"});
  fails({"cassi", "forward", "x.npy", "-o", "y.npy"}, 2, {"--mask is required"});
  fails({"cassi", "sideways", "x.npy", "--mask", "m.npy", "-o", "y.npy"}, 2, {"'sideways'"});
  fails({"cassi", "forward", "x.npy", "--mask", "m.npy", "-o", "y.npy", "--axis", "z"}, 2, {"--axis", "'z'"});
  fails({"cassi", "forward", "x.npy", "--mask", "m.npy", "-o", "y.npy", "--step", "two"}, 2, {"--step", "'two'"});
  cli::write_npy(path("y.npy"), raw({4, 9}, random_values<float>(36, 3, 0.1, 1), DType::f32));
  cli::write_npy(path("m5.npy"), raw({4, 5}, random_values<float>(20, 4, 0.1, 1), DType::f32));
  fails({"cassi", "pinv", "y.npy", "--mask", "m5.npy", "--step", "3", "-o", "x2.npy"}, 1, {"y.npy", "width 9"});
  fails({"cassi", "pinv", "y.npy", "--mask", "m5.npy", "--step", "0", "-o", "x2.npy"}, 2, {"--bands"});
  // A result larger than memory is refused before allocating it.
  fails({"cassi", "phi", "--mask", "m5.npy", "--bands", "1000000", "--step", "16777216", "-o", "phi.npy"}, 1,
        {"phi would have shape (4, 16777199222789)", "MiB of memory"});
}

template <class T>
void write_array(const Cli &t, const std::string &name, const Array<T, 4> &a, bool drop_batch) {
  RawArray r = raw_of(a);
  if (drop_batch) r.shape.erase(r.shape.begin());
  cli::write_npy(t.path(name), r);
}

// The numbers "-1.25,0.5,..." (exact in float and double) and their values.
std::pair<std::string, std::vector<double>> listed_numbers(std::int64_t n) {
  std::string text;
  std::vector<double> v;
  for (std::int64_t i = 0; i < n; i++) {
    v.push_back(0.25 * double((i * 7) % 11) - 1.25);
    text += (i ? "," : "") + std::to_string(v.back());
  }
  return {text, v};
}

template <class T>
void check_dot(const Cli &t, std::int64_t B, std::int64_t C, std::int64_t H, std::int64_t W, std::uint32_t seed) {
  SCOPED_TRACE("B=" + std::to_string(B) + " C=" + std::to_string(C) + (sizeof(T) == 8 ? " f64" : " f32"));
  const auto x = random_array<T, 4>({B, C, H, W}, seed);
  write_array(t, "x.npy", x, B == 1);
  const auto [text, listed] = listed_numbers(C);
  const auto spectrum = random_array<T, 1>({C}, seed + 1, -1, 1);
  cli::write_npy(t.path("s.npy"), raw_of(spectrum));
  const std::int64_t n = H * W;
  for (const bool from_file : {false, true}) {
    SCOPED_TRACE(from_file ? "spectrum from a file" : "spectrum listed");
    t.ok({"dot", "x.npy", "--with", from_file ? "s.npy" : text, "-o", "out.npy", "--device", "cpu", "--force", "-q"});
    std::vector<T> w(listed.begin(), listed.end());
    if (from_file) w.assign(spectrum.data(), spectrum.data() + C);
    // The API on the pixels of each item as rows (a transposed view of its (C, H * W) plane), the
    // spectrum repeated per pixel in the same layout: bit for bit.
    Array<T, 2> spectra({C, n});
    for (std::int64_t c = 0; c < C; c++)
      for (std::int64_t i = 0; i < n; i++) spectra(c, i) = w[std::size_t(c)];
    Array<T, 3> expected({B, H, W});
    for (std::int64_t b = 0; b < B; b++)
      batched_dot(View<const T, 2>(x.data() + b * C * n, {n, C}, {1, n}),
                  View<const T, 2>(spectra.data(), {n, C}, {1, n}), View<T, 1>(expected.data() + b * n, {n}),
                  Options{Device::cpu});
    RawArray e = raw_of(expected);
    if (B == 1) e.shape.erase(e.shape.begin());
    const RawArray got = cli::read_npy(t.path("out.npy"));
    expect_same(got, e);
    // And within hpipe/dot.h's bound of a plain double-precision loop: eps |exact| + 66 eps S.
    const std::vector<T> values = values_of<T>(got);
    for (std::int64_t b = 0; b < B; b++)
      for (std::int64_t i = 0; i < n; i++) {
        double exact = 0, s = 0;
        for (std::int64_t c = 0; c < C; c++) {
          const double p = double(x(b, c, i / W, i % W)) * double(w[std::size_t(c)]);
          exact += p;
          s += std::abs(p);
        }
        const double eps = epsilon<T>() / 2;
        ASSERT_LE(std::abs(double(values[std::size_t(b * n + i)]) - exact), eps * std::abs(exact) + 66 * eps * s)
            << "item " << b << " pixel " << i;
      }
  }
}

TEST_F(Cli, DotMatchesTheApiBitForBit) {
  check_dot<float>(*this, 1, 5, 7, 9, 300);
  check_dot<double>(*this, 1, 5, 7, 9, 310);
  check_dot<float>(*this, 2, 3, 4, 5, 320);  // a batch
  check_dot<float>(*this, 1, 1, 3, 1, 330);  // one band, one column
}

TEST_F(Cli, DotErrorsNameTheArgument) {
  cli::write_npy(path("x.npy"), raw({3, 4, 5}, random_values<float>(60, 1, 0.1, 1), DType::f32));
  cli::write_npy(path("img.npy"), raw({4, 5}, random_values<float>(20, 2, 0.1, 1), DType::f32));
  fails({"dot", "x.npy", "-o", "d.npy"}, 2, {"--with is required"});
  fails({"dot", "--with", "1,2,3", "-o", "d.npy"}, 2, {"expected an input STACK"});
  fails({"dot", "x.npy", "--with", "1,2", "-o", "d.npy"}, 1, {"1,2", "expected a spectrum of 3 values", "(2,)"});
  fails({"dot", "x.npy", "--with", "x.npy", "-o", "d.npy"}, 1,
        {"x.npy", "expected a spectrum of 3 values", "(3, 4, 5)"});
  fails({"dot", "img.npy", "--with", "1,2,3", "-o", "d.npy"}, 1, {"img.npy", "(4, 5) is not a band stack"});
  fails({"dot", "x.npy", "--with", "nope.npy", "-o", "d.npy"}, 1, {"nope.npy", "cannot open"});
}

// The signals of `x` (C order) along axis `a` as dense rows, convolved by the API, put back in place.
template <class T>
std::vector<T> conv1d_by_rows(const std::vector<T> &x, const std::vector<std::int64_t> &shape, std::size_t a,
                              const std::vector<T> &taps, bool per_row, ConvMode mode) {
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < a; d++) outer *= shape[d];
  for (std::size_t d = a + 1; d < shape.size(); d++) inner *= shape[d];
  const std::int64_t la = shape[a], n = outer * inner,
                     lv = per_row ? std::int64_t(taps.size()) / n : std::int64_t(taps.size());
  const std::int64_t lo = conv1d_length(la, lv, mode);
  Array<T, 2> rows({n, la});
  for (std::int64_t o = 0; o < outer; o++)
    for (std::int64_t i = 0; i < inner; i++)
      for (std::int64_t k = 0; k < la; k++) rows(o * inner + i, k) = x[std::size_t((o * la + k) * inner + i)];
  const Options cpu{Device::cpu};
  const Array<T, 2> r = per_row ? conv1d(rows.view(), View<const T, 2>(taps.data(), {n, lv}), mode, cpu)
                                : conv1d(rows.view(), View<const T, 1>(taps.data(), {lv}), mode, cpu);
  std::vector<T> out(std::size_t(outer * lo * inner));
  for (std::int64_t o = 0; o < outer; o++)
    for (std::int64_t i = 0; i < inner; i++)
      for (std::int64_t k = 0; k < lo; k++) out[std::size_t((o * lo + k) * inner + i)] = r(o * inner + i, k);
  return out;
}

template <class T>
void check_conv1d(const Cli &t, std::uint32_t seed) {
  const DType type = sizeof(T) == 8 ? DType::f64 : DType::f32;
  const std::vector<std::int64_t> shape = {4, 5, 7};
  const std::vector<T> x = random_values<T>(4 * 5 * 7, seed, -1, 1);
  cli::write_npy(t.path("x.npy"), raw(shape, x, type));
  const auto [text, listed] = listed_numbers(3);
  const std::vector<T> shared(listed.begin(), listed.end());
  const std::vector<std::pair<std::string, std::size_t>> axes = {{"x", 2}, {"y", 1}, {"band", 0}};
  for (const auto &[axis, a] : axes)
    for (const auto mode : {ConvMode::full, ConvMode::same, ConvMode::valid}) {
      SCOPED_TRACE("axis " + axis + " mode " + to_string(mode) + (sizeof(T) == 8 ? " f64" : " f32"));
      t.ok({"conv1d", "x.npy", "--taps", text, "--axis", axis, "--mode", to_string(mode), "-o", "out.npy", "--force",
            "-q", "--device", "cpu"});
      std::vector<std::int64_t> out_shape = shape;
      out_shape[a] = conv1d_length(shape[a], 3, mode);
      expect_same(cli::read_npy(t.path("out.npy")),
                  raw(out_shape, conv1d_by_rows(x, shape, a, shared, false, mode), type));
      // One kernel per signal, of 4 taps (longer than the band axis): (N, 4) from a file.
      const std::int64_t n = 4 * 5 * 7 / shape[a];
      const std::vector<T> taps = random_values<T>(std::size_t(n * 4), seed + 1, -1, 1);
      cli::write_npy(t.path("k.npy"), raw({n, 4}, taps, type));
      t.ok({"conv1d", "x.npy", "--taps-file", "k.npy", "--axis", axis, "--mode", to_string(mode), "-o", "out.npy",
            "--force", "-q", "--device", "cpu"});
      out_shape[a] = conv1d_length(shape[a], 4, mode);
      expect_same(cli::read_npy(t.path("out.npy")),
                  raw(out_shape, conv1d_by_rows(x, shape, a, taps, true, mode), type));
    }
}

TEST_F(Cli, Conv1dMatchesTheApiBitForBitAlongEveryAxis) {
  check_conv1d<float>(*this, 400);
  check_conv1d<double>(*this, 410);
  // The default mode is same: the stack keeps its shape.
  cli::write_npy(path("x.npy"), raw({3, 5}, random_values<float>(15, 3, -1, 1), DType::f32));
  ok({"conv1d", "x.npy", "--taps", "1,2,1", "-o", "same.npy"});
  EXPECT_EQ(cli::read_npy(path("same.npy")).shape, (std::vector<std::int64_t>{3, 5}));
}

TEST_F(Cli, Conv1dErrorsNameTheArgument) {
  cli::write_npy(path("x.npy"), raw({4, 5}, random_values<float>(20, 1, 0.1, 1), DType::f32));
  cli::write_npy(path("k.npy"), raw({3, 2}, random_values<float>(6, 2, 0.1, 1), DType::f32));
  fails({"conv1d", "x.npy", "-o", "c.npy"}, 2, {"either --taps LIST or --taps-file FILE"});
  fails({"conv1d", "x.npy", "--taps", "1,2", "--taps-file", "k.npy", "-o", "c.npy"}, 2, {"either --taps"});
  fails({"conv1d", "x.npy", "--taps", "1,two", "-o", "c.npy"}, 2, {"--taps", "'1,two'"});
  fails({"conv1d", "x.npy", "--taps", "1,2", "--axis", "z", "-o", "c.npy"}, 2, {"--axis", "x, y or band", "'z'"});
  fails({"conv1d", "x.npy", "--taps", "1,2", "--mode", "wide", "-o", "c.npy"}, 2, {"--mode", "'wide'"});
  fails({"conv1d", "x.npy", "--taps", "1,2", "--axis", "band", "-o", "c.npy"}, 1, {"x.npy", "(4, 5) has no axis band"});
  fails({"conv1d", "x.npy", "--taps-file", "k.npy", "-o", "c.npy"}, 1,
        {"k.npy", "(4, Lv) one row per signal", "(3, 2)"});
  cli::write_npy(path("k0.npy"), raw({}, std::vector<float>{2}, DType::f32));  // 0-d: it crashed (SIGSEGV)
  fails({"conv1d", "x.npy", "--taps-file", "k0.npy", "-o", "c.npy"}, 1,
        {"k0.npy", "expected taps (Lv,)", "got shape ()"});
}

struct ReconCase {
  const char *method;
  std::vector<std::string> flags;
  ReconParams params;
};

TEST_F(Cli, ReconMatchesTheApiAndReportsQuality) {
  const std::int64_t C = 4, H = 12, W = 13;
  const Dispersion d{-1, Axis::height};
  const auto scene = synth_scene(C, H, W);
  const auto mask = synth_mask(H, W, 2);
  const Options cpu{Device::cpu};
  const auto y = cassi_forward(View<const float, 4>(scene.data(), {1, C, H, W}), mask.view(), d, cpu);
  cli::write_npy(path("scene.npy"), raw_of(scene));
  cli::write_npy(path("mask.npy"), raw_of(mask));
  RawArray ys = raw_of(y);
  ys.shape.erase(ys.shape.begin());
  cli::write_npy(path("y.npy"), ys);
  ReconParams gap;
  gap.dispersion = d;
  gap.iterations = 3;
  gap.tv = {0.05, 3, false};
  gap.lambda = 0.75;
  ReconParams plain = gap;
  plain.accelerate = false;
  plain.tv.vectorial = true;
  ReconParams admm = gap;
  admm.gamma = 0.5;
  const std::vector<ReconCase> cases = {
      {"gap-tv", {"--tv-weight", "0.05", "--tv-iters", "3", "--lambda", "0.75"}, gap},
      {"gap-tv",
       {"--tv-weight", "0.05", "--tv-iters", "3", "--lambda", "0.75", "--no-accelerate", "--vectorial"},
       plain},
      {"admm-tv", {"--tv-weight", "0.05", "--tv-iters", "3", "--lambda", "0.75", "--gamma", "0.5"}, admm},
  };
  for (const auto &c : cases) {
    SCOPED_TRACE(c.method + std::string(c.flags.size() > 6 ? " " + c.flags[6] : ""));
    std::vector<std::string> args = {"recon",     c.method, "y.npy",   "--mask",  "mask.npy", "--step",
                                     "-1",        "--axis", "y",       "--iters", "3",        "--truth",
                                     "scene.npy", "-o",     "out.npy", "--force", "--device", "cpu"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const Result r = ok(args);
    std::vector<double> residuals;
    const auto x = reconstruct(
        parse_recon_method(c.method), y.view(), mask.view(), C, c.params,
        [&](const IterationInfo &it) { residuals.push_back(it.residual); }, cpu);
    RawArray e = raw_of(x);
    e.shape.erase(e.shape.begin());
    expect_same(cli::read_npy(path("out.npy")), e);
    // Progress: one line per iteration with its residual; quality per band, the means, and the pseudo-inverse's.
    char line[100];
    for (int i = 0; i < 3; i++) {
      std::snprintf(line, sizeof line, "iteration %d/3: ||y - A x|| = %.6g\n", i + 1, residuals[std::size_t(i)]);
      EXPECT_NE(r.out.find(line), std::string::npos) << r.out << " lacks " << line;
    }
    const auto q = band_quality(View<const float, 3>(x.data(), {C, H, W}), scene.view());
    std::snprintf(line, sizeof line, " band 3: PSNR %.2f dB, SSIM %.4f\n", q.psnr[3], q.ssim[3]);
    EXPECT_NE(r.out.find(line), std::string::npos) << r.out << " lacks " << line;
    std::snprintf(line, sizeof line, " mean: PSNR %.2f dB, SSIM %.4f\n", q.mean_psnr, q.mean_ssim);
    EXPECT_NE(r.out.find(line), std::string::npos) << r.out << " lacks " << line;
    const auto p = band_quality(View<const float, 3>(cassi_pinv(y.view(), mask.view(), C, d, cpu).data(), {C, H, W}),
                                scene.view());
    std::snprintf(line, sizeof line, "pinv mean: PSNR %.2f dB, SSIM %.4f\n", p.mean_psnr, p.mean_ssim);
    EXPECT_NE(r.out.find(line), std::string::npos) << r.out << " lacks " << line;
  }
  // A batch: (B, H', W') in, (B, C, H, W) out, quality per item.
  Array<float, 4> scenes({2, C, H, W});
  for (std::int64_t i = 0; i < scenes.size(); i++)
    scenes.data()[i] = scene.data()[i % scene.size()] * (i < scene.size() ? 1.0f : 0.5f);
  const auto yb = cassi_forward(scenes.view(), mask.view(), d, cpu);
  cli::write_npy(path("scenes.npy"), raw_of(scenes));
  cli::write_npy(path("ys.npy"), raw_of(yb));
  const Result j = ok({"recon", "gap-tv", "ys.npy", "--mask", "mask.npy", "--step", "-1", "--axis", "y", "--iters", "2",
                       "--truth", "scenes.npy", "-o", "j.npy", "--json", "--device", "cpu"});
  for (const char *part : {"\"method\": \"gap_tv\"", "\"bands\": 4", "\"residuals\": [", "\"quality\": [{\"psnr\": [",
                           "}, {\"psnr\": [", "\"pinv_quality\": [", "\"mean_ssim\": "})
    EXPECT_NE(j.out.find(part), std::string::npos) << j.out << " lacks " << part;
  ReconParams two = gap;
  two.iterations = 2;
  two.lambda = 1;
  two.tv = TvParams{};
  expect_same(cli::read_npy(path("j.npy")),
              raw_of(reconstruct(ReconMethod::gap_tv, yb.view(), mask.view(), C, two, {}, cpu)));
}

// Issue #20: a float64 mask (NumPy's default) made the whole reconstruction float64, 2.5-3x slower,
// without saying so. --precision chooses; -v and --json say which and why.
TEST_F(Cli, PrecisionFollowsTheInputsUnlessChosenAndIsReported) {
  const std::int64_t C = 3, H = 11, W = 12;
  const Dispersion d{2, Axis::width};
  const auto scene = synth_scene(C, H, W);
  const auto mask32 = synth_mask(H, W, 3);
  Array<double, 2> mask64({H, W});
  for (std::int64_t i = 0; i < mask64.size(); i++) mask64.data()[i] = mask32.data()[i];
  const Options cpu{Device::cpu};
  const auto y = cassi_forward(View<const float, 4>(scene.data(), {1, C, H, W}), mask32.view(), d, cpu);
  RawArray ys = raw_of(y);
  ys.shape.erase(ys.shape.begin());
  cli::write_npy(path("y.npy"), ys);
  cli::write_npy(path("mask64.npy"), raw_of(mask64));
  const std::vector<std::string> recon = {"recon",   "gap-tv", "y.npy",    "--mask", "mask64.npy",
                                          "--iters", "2",      "--device", "cpu",    "--force"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = recon;
    args.insert(args.end(), extra.begin(), extra.end());
    return ok(args);
  };
  ReconParams p;
  p.dispersion = d;
  p.iterations = 2;
  // auto: float64, because of the mask; said with -v and in --json.
  Result r = with({"-o", "auto.npy", "--json", "-v"});
  EXPECT_NE(r.out.find("\"precision\": \"f64\", \"precision_from\": \"a float64 input\""), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("computing in float64 (a float64 input); --precision f32"), std::string::npos) << r.err;
  EXPECT_EQ(cli::read_npy(path("auto.npy")).dtype, DType::f64);
  // f32: the float32 API's result, bit for bit, from the same files.
  r = with({"-o", "f32.npy", "--precision", "f32", "--json"});
  EXPECT_NE(r.out.find("\"precision\": \"f32\", \"precision_from\": \"--precision\""), std::string::npos) << r.out;
  RawArray e = raw_of(reconstruct(ReconMethod::gap_tv, y.view(), mask32.view(), C, p, {}, cpu));
  e.shape.erase(e.shape.begin());
  expect_same(cli::read_npy(path("f32.npy")), e);
  // f64 on float32 inputs; and the help says what auto means.
  cli::write_npy(path("scene.npy"), raw_of(scene));
  cli::write_npy(path("mask32.npy"), raw_of(mask32));
  r = ok({"cassi", "forward", "scene.npy", "--mask", "mask32.npy", "-o", "f.npy", "--precision", "f64", "--json",
          "--device", "cpu"});
  EXPECT_NE(r.out.find("\"precision\": \"f64\""), std::string::npos) << r.out;
  EXPECT_NE(ok({"recon", "--help"}).out.find("--precision auto|f32|f64"), std::string::npos);
  fails({"recon", "gap-tv", "y.npy", "--mask", "mask64.npy", "-o", "x.npy", "--precision", "f16"}, 2,
        {"--precision: expected auto, f32 or f64, got 'f16'"});
}

TEST_F(Cli, ReconErrorsNameTheArgument) {
  cli::write_npy(path("y.npy"), raw({12, 14}, random_values<float>(168, 1, 0.1, 1), DType::f32));
  cli::write_npy(path("m.npy"), raw({12, 11}, random_values<float>(132, 2, 0.1, 1), DType::f32));
  cli::write_npy(path("t.npy"), raw({3, 12, 12}, random_values<float>(432, 3, 0.1, 1), DType::f32));
  const std::vector<std::string> base = {"recon", "gap-tv", "y.npy", "--mask", "m.npy", "--step", "1", "-o", "x.npy"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  fails({"recon", "sart", "y.npy", "--mask", "m.npy", "-o", "x.npy"}, 2, {"gap-tv or admm-tv", "'sart'"});
  fails({"recon"}, 2, {"gap-tv or admm-tv"});
  fails({"recon", "admm-tv", "--mask", "m.npy", "-o", "x.npy"}, 2, {"hpipe recon admm-tv", "measurement STACK"});
  fails({"recon", "gap-tv", "y.npy", "-o", "x.npy"}, 2, {"--mask is required"});
  fails(with({"--iters", "-1"}), 2, {"--iters", "'-1'"});
  fails(with({"--tv-weight", "0"}), 2, {"--tv-weight", "> 0", "'0'"});
  fails(with({"--tv-iters", "0"}), 2, {"--tv-iters", "'0'"});
  fails(with({"--lambda", "fast"}), 2, {"--lambda", "'fast'"});
  // Past the library's bound in float32 (exit 1, named as the library's lambda).
  fails(with({"--lambda", "1e308"}), 2, {"--lambda: expected a value > 0, at most", "(float32)"});
  fails(with({"--tv-weight", "1e-320"}), 2, {"--tv-weight: expected a value from"});
  // Values that parsed as something else: white space or '+' before an integer, hexadecimal
  // reals (tab or new line before a real), an empty value (taken as the default, or --preview '' as the root folder).
  fails(with({"--iters", "\n2"}), 2, {"--iters", "an integer", "'\\n2'"});
  fails(with({"--tv-iters", " +1"}), 2, {"--tv-iters", "an integer"});
  fails(with({"--tv-weight", "0x10"}), 2, {"--tv-weight", "'0x10'"});
  fails(with({"--tv-weight", "\t0.1"}), 2, {"--tv-weight", "expected a number > 0"});
  fails(with({"--preview", ""}), 2, {"--preview: expected", "got ''"});
  fails(with({"--type="}), 2, {"--type: expected", "got ''"});
  fails({"recon", "admm-tv", "y.npy", "--mask", "m.npy", "--gamma", "-0.1", "-o", "x.npy"}, 2,
        {"--gamma", ">= 0", "'-0.1'"});
  // Each method's own option was silently ignored by the other.
  fails(with({"--gamma", "0.5"}), 2, {"hpipe recon gap-tv: --gamma applies to admm-tv only"});
  fails({"recon", "admm-tv", "y.npy", "--mask", "m.npy", "--no-accelerate", "-o", "x.npy"}, 2,
        {"hpipe recon admm-tv: --no-accelerate applies to gap-tv only"});
  fails(with({"--truth", "t.npy"}), 1, {"t.npy", "the truth has shape (3, 12, 12), the reconstruction (4, 12, 11)"});
  fails({"recon", "gap-tv", "y.npy", "--mask", "m.npy", "--step", "2", "-o", "x.npy"}, 1, {"y.npy", "width 14"});
  // A number below the smallest normal double is still a number (strtod's ERANGE refused it).
  ok({"recon", "admm-tv", "y.npy", "--mask", "m.npy", "--step", "1", "-o", "x2.npy", "--gamma", "1e-320", "--iters",
      "1", "--tv-iters", "1", "--device", "cpu"});
}

template <class T>
void check_map_and_logsumexp(const Cli &t, std::uint32_t seed) {
  SCOPED_TRACE(sizeof(T) == 8 ? "f64" : "f32");
  const DType type = sizeof(T) == 8 ? DType::f64 : DType::f32;
  const Options cpu{Device::cpu};
  const std::array<std::int64_t, 3> shape{4, 5, 6};
  const std::vector<std::int64_t> dims(shape.begin(), shape.end());
  std::vector<T> x = random_values<T>(120, seed, -3, 3), positive = random_values<T>(120, seed + 1, 0.01, 4);
  positive[7] = 0;  // log(0) = -inf
  cli::write_npy(t.path("x.npy"), raw(dims, x, type));
  cli::write_npy(t.path("p.npy"), raw(dims, positive, type));
  const View<const T, 3> xv(x.data(), shape), pv(positive.data(), shape);
  const std::vector<std::string> common = {"-o", "out.npy", "--force", "-q", "--device", "cpu"};
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.end(), common.begin(), common.end());
    t.ok(args);
    return cli::read_npy(t.path("out.npy"));
  };
  expect_same(cli({"map", "exp", "x.npy"}), raw_of(exp(xv, cpu)));
  expect_same(cli({"map", "erf", "x.npy"}), raw_of(erf(xv, cpu)));
  expect_same(cli({"map", "log", "p.npy"}), raw_of(log(pv, cpu)));
  // Along each axis of the (C, H, W) stack; a 2-D array along y (scipy's axis=0); a vector to a number.
  expect_same(cli({"logsumexp", "x.npy"}), raw_of(logsumexp(xv, 0, cpu)));
  expect_same(cli({"logsumexp", "x.npy", "--axis", "band"}), raw_of(logsumexp(xv, 0, cpu)));
  expect_same(cli({"logsumexp", "x.npy", "--axis", "y"}), raw_of(logsumexp(xv, 1, cpu)));
  expect_same(cli({"logsumexp", "x.npy", "--axis", "x"}), raw_of(logsumexp(xv, 2, cpu)));
  cli::write_npy(t.path("m.npy"), raw({12, 10}, x, type));
  expect_same(cli({"logsumexp", "m.npy", "--axis", "y"}),
              raw_of(logsumexp(View<const T, 2>(x.data(), {12, 10}), 0, cpu)));
  cli::write_npy(t.path("v.npy"), raw({120}, x, type));
  expect_same(cli({"logsumexp", "v.npy", "--axis", "x"}),
              raw({}, std::vector<T>{logsumexp(View<const T, 1>(x.data(), {120}), cpu)}, type));
}

TEST_F(Cli, MapAndLogsumexpMatchTheApiBitForBit) {
  check_map_and_logsumexp<float>(*this, 500);
  check_map_and_logsumexp<double>(*this, 510);
}

TEST_F(Cli, MapAndLogsumexpErrorsNameTheArgument) {
  cli::write_npy(path("m.npy"), raw({4, 5}, random_values<float>(20, 1, 0.1, 1), DType::f32));
  cli::write_npy(path("five.npy"), raw({1, 1, 1, 2, 3}, random_values<float>(6, 2, 0.1, 1), DType::f32));
  fails({"map", "sin", "m.npy", "-o", "o.npy"}, 2, {"exp, log or erf", "'sin'"});
  fails({"map", "exp", "-o", "o.npy"}, 2, {"hpipe map exp", "expected an input STACK"});
  fails({"map"}, 2, {"exp, log or erf"});
  fails({"logsumexp", "m.npy", "--axis", "z", "-o", "o.npy"}, 2, {"--axis", "'z'"});
  fails({"logsumexp", "m.npy", "-o", "o.npy"}, 1, {"m.npy", "(4, 5) has no axis band"});
  fails({"logsumexp", "five.npy", "--axis", "x", "-o", "o.npy"}, 1, {"five.npy", "more than 4 dimensions"});
}

// ---- bad files ----

// `data` as a zlib stream (PNG's IDAT, MAT's miCOMPRESSED).
std::string deflated(const std::string &data) {
  uLongf size = compressBound(data.size());
  std::string packed(size, '\0');
  EXPECT_EQ(compress(reinterpret_cast<Bytef *>(packed.data()), &size, reinterpret_cast<const Bytef *>(data.data()),
                     data.size()),
            Z_OK);
  packed.resize(size);
  return packed;
}

std::string chunk(const std::string &type, const std::string &data) {
  std::string c;
  const auto len = static_cast<std::uint32_t>(data.size());
  for (int s = 24; s >= 0; s -= 8) c += char((len >> s) & 0xff);
  const std::string body = type + data;
  c += body;
  const auto crc = static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef *>(body.data()), body.size()));
  for (int s = 24; s >= 0; s -= 8) c += char((crc >> s) & 0xff);
  return c;
}

// A grayscale PNG that declares width x height but holds only a few bytes of pixels.
std::string png_declaring(std::uint32_t width, std::uint32_t height) {
  std::string ihdr;
  for (std::uint32_t v : {width, height})
    for (int s = 24; s >= 0; s -= 8) ihdr += char((v >> s) & 0xff);
  ihdr += std::string("\x08\x00\x00\x00\x00", 5);
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) +
         chunk("IDAT", std::string("\x78\x9c\x63\x00\x00\x00\x01\x00\x01", 9)) + chunk("IEND", "");
}

TEST_F(Cli, BadPngFilesFailCleanly) {
  cli::write_png(path("good.png"), raw({40, 50}, random_integers<std::uint16_t>(2000, 5, 65535), DType::u16),
                 std::nullopt);
  const std::string good = slurp(dir / "good.png");
  spill(dir / "truncated.png", good.substr(0, good.size() / 2));
  spill(dir / "magic.png", "GIF89a this is not a PNG at all");
  spill(dir / "empty.png", "");
  spill(dir / "huge.png", png_declaring(100000, 100000));
  spill(dir / "toowide.png", png_declaring(1u << 30, 1));
  spill(dir / "zero.png", png_declaring(0, 5));
  std::string crc = good;
  crc[40] = char(crc[40] ^ 0x55);  // inside IDAT: its CRC no longer matches
  spill(dir / "crc.png", crc);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated.png", "truncated"}, {"magic.png", "not a PNG file (wrong magic)"},
      {"empty.png", "empty file"},    {"huge.png", "declares 100000 x 100000 (H x W) pixels"},
      {"toowide.png", "corrupt PNG"}, {"zero.png", "corrupt PNG"},
      {"crc.png", "corrupt PNG"}};
  for (const auto &[file, what] : cases) {
    SCOPED_TRACE(file);
    fails({"convert", file, "-o", "out.npy"}, 1, {file + ": ", what});
    fails({"info", file}, 1, {file + ": ", what});
  }
  // One bad band spoils the stack, and nothing is written.
  fs::create_directory(dir / "stack");
  cli::write_png(path("stack/b_1.png"), raw({2, 2}, std::vector<std::uint8_t>{1, 2, 3, 4}, DType::u8), std::nullopt);
  cli::write_png(path("stack/b_2.png"), raw({2, 3}, std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6}, DType::u8),
                 std::nullopt);
  fails({"convert", "stack", "-o", "out/b_%d.png"}, 1, {"stack/b_2.png", "mismatched band sizes"});
  fails({"convert", "nothing_*.png", "-o", "out.npy"}, 1, {"nothing_*.png", "no files match"});
  fails({"convert", "missing.png", "-o", "out.npy"}, 1, {"missing.png", "cannot open"});
}

TEST_F(Cli, BadNpyFilesFailCleanly) {
  auto npy = [](const std::string &dict, const std::string &data) {
    std::string h = dict;
    h.append(64 - 10 - h.size() % 64 - 1 + (h.size() % 64 > 53 ? 64 : 0), ' ');
    h += '\n';
    return std::string("\x93NUMPY\x01\x00", 8) + char(h.size() & 0xff) + char(h.size() >> 8) + h + data;
  };
  const std::string six(24, '\x01');
  spill(dir / "fortran.npy", npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", six));
  spill(dir / "big.npy", npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", six));
  spill(dir / "int.npy", npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", six));
  spill(dir / "short.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", six.substr(0, 20)));
  spill(dir / "huge.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000, 1000000), }", six));
  spill(dir / "magic.npy", "PK\x03\x04 a zip, perhaps an .npz");
  spill(dir / "empty.npy", "");
  spill(dir / "header.npy", std::string("\x93NUMPY\x01\x00\xff\x7f{'descr'", 17));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"fortran.npy", "Fortran-order"},
      {"big.npy", "big-endian"},
      {"int.npy", "unsupported dtype '<i4'"},
      {"short.npy", "truncated .npy: shape (2, 3) of float32 needs 24 bytes of data, the file has 20"},
      {"huge.npy", "truncated .npy"},
      {"magic.npy", "wrong magic"},
      {"empty.npy", "empty file"},
      {"header.npy", "truncated header"}};
  for (const auto &[file, what] : cases) {
    SCOPED_TRACE(file);
    fails({"convert", file, "-o", "out.png"}, 1, {file + ": ", what});
  }
}

// A v5 .mat file (as hpipe writes it) with its one variable deflated, as scipy.io.savemat(...,
// do_compression=True) and MATLAB's default -v7 write it.
std::string compressed_mat(const std::string &plain) {
  const std::string packed = deflated(plain.substr(128));
  const std::uint32_t tag[2] = {15, static_cast<std::uint32_t>(packed.size())};  // miCOMPRESSED
  return plain.substr(0, 128) + std::string(reinterpret_cast<const char *>(tag), 8) + packed;
}

// They were read as zeros (cut short) or as values up to 1e249 (a byte flipped), exit status 0.
TEST_F(Cli, DamagedMatFilesAreRefused) {
  const RawArray cube = raw({4, 8, 8}, random_values<double>(256, 12, 0, 1), DType::f64);
  cli::write_npy(path("cube.npy"), cube);
  ok({"convert", "cube.npy", "-o", "plain.mat", "--output-layout", "chw"});
  const std::string plain = slurp(dir / "plain.mat"), packed = compressed_mat(plain);
  spill(dir / "packed.mat", packed);
  ok({"convert", "packed.mat", "-o", "back.npy", "--layout", "chw"});
  expect_same(cli::read_npy(path("back.npy")), cube);
  spill(dir / "cut.mat", packed.substr(0, packed.size() - 420));
  std::string flipped = packed;
  flipped[packed.size() / 2] = char(flipped[packed.size() / 2] ^ 0x10);
  spill(dir / "flipped.mat", flipped);
  for (std::size_t cut : {1, 100, 190})
    spill(dir / ("plain_" + std::to_string(cut) + ".mat"), plain.substr(0, plain.size() - cut));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"cut.mat", "truncated MATLAB file: the element at byte 128 declares"},
      {"flipped.mat", "corrupt MATLAB file: the compressed element at byte 128"},
      {"plain_1.mat", "truncated MATLAB file: the element at byte 128 declares 2104 bytes, but the file ends 2103"},
      {"plain_100.mat", "truncated MATLAB file: the element at byte 128 declares"},
      {"plain_190.mat", "truncated MATLAB file: the element at byte 128 declares"}};
  for (const auto &[file, what] : cases) {
    SCOPED_TRACE(file);
    fails({"convert", file, "-o", "out.npy"}, 1, {file + ": ", what});
  }
  // Cut inside the compressed stream, with a tag that fits what is left: the stream ends early.
  std::string short_stream = packed.substr(0, packed.size() - 420);
  const std::uint32_t left = static_cast<std::uint32_t>(short_stream.size() - 136);
  std::memcpy(short_stream.data() + 132, &left, 4);
  spill(dir / "short_stream.mat", short_stream);
  fails({"convert", "short_stream.mat", "-o", "out.npy"}, 1,
        {"short_stream.mat: truncated or corrupt MATLAB file: the compressed element at byte 128 inflates to"});
}

// A full disk, here a file size limit: matio reported success and left a truncated .mat, libhdf5
// crashed at exit (.h5, v7.3 .mat), and the errors named the hidden temporary file.
TEST_F(Cli, WriteErrorsNameTheTargetAndLeaveNothing) {
  cli::write_npy(path("cube.npy"), raw({28, 64, 64}, random_values<double>(28 * 64 * 64, 7, 0, 1), DType::f64));
  cli::write_npy(path("plane.npy"), raw({300, 300}, random_values<double>(300 * 300, 8, 0, 1), DType::f64));
  const std::string limit = "ulimit -f 100; trap '' XFSZ;";  // 51200 bytes; a write past it fails
  // {input, output, options..., the error}
  const std::vector<std::vector<std::string>> cases = {
      {"cube.npy", "o.npy", "o.npy: write error: File too large"},
      {"cube.npy", "o.mat", "o.mat: write error: only 51200 bytes reached the file"},
      {"cube.npy", "o.h5", "o.h5: write error: File too large"},
      {"cube.npy", "o.tif", "o.tif: write error (libtiff: "},
      {"cube.npy", "o.hdr", "o.img: write error: File too large"},
      {"plane.npy", "o.png", "o.png: write error: File too large"},
      {"cube.npy", "o73.mat", "--mat-version", "7.3", "o73.mat: write error: File too large"}};
  for (const std::vector<std::string> &c : cases) {
    SCOPED_TRACE(c[1]);
    std::vector<std::string> args = {"convert", c[0], "-o", c[1]};
    args.insert(args.end(), c.begin() + 2, c.end() - 1);
    fails(args, 1, {"hpipe: error: " + c.back()}, limit);
    EXPECT_EQ(run(args, limit).err.find(".hpipe-"), std::string::npos);
  }
  // Without the limit, each reads back as the cube.
  const RawArray cube = cli::read_npy(path("cube.npy"));
  for (const std::vector<std::string> &c : cases) {
    if (c[0] != "cube.npy") continue;
    SCOPED_TRACE(c[1]);
    std::vector<std::string> args = {"convert", c[0], "-o", c[1]};
    args.insert(args.end(), c.begin() + 2, c.end() - 1);
    ok(args);
    ok({"convert", c[1], "-o", "back.npy", "--force"});
    expect_same(cli::read_npy(path("back.npy")), cube);
  }
}

// ---- hostile inputs and unsafe outputs (issue 15) ----

// A PNG with the given IHDR, rows (each with its filter byte) and chunks before IDAT.
std::string png_file(std::uint32_t width, std::uint32_t height, int depth, int colour, const std::string &rows,
                     const std::string &before_idat = "") {
  std::string ihdr;
  for (std::uint32_t v : {width, height})
    for (int s = 24; s >= 0; s -= 8) ihdr += char((v >> s) & 0xff);
  ihdr += {char(depth), char(colour), 0, 0, 0};
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + before_idat + chunk("IDAT", deflated(rows)) +
         chunk("IEND", "");
}

// libpng allocated and zeroed the 2 GB a 44-byte file's tEXt chunk declared.
TEST_F(Cli, PngChunkLongerThanTheFileIsRefusedBeforeAnyAllocation) {
  std::string ihdr = png_file(1, 1, 8, 0, std::string(2, '\0')).substr(8, 25);
  spill(dir / "text.png", std::string("\x89PNG\r\n\x1a\n", 8) + ihdr + std::string("\x7f\xff\xff\xff", 4) + "tEXta\0b");
  fails({"info", "text.png"}, 1,
        {"text.png: corrupt PNG: chunk 'tEXt' declares 2147483647 bytes, but only 0 follow it"});
  // Chunks hpipe has no use for are skipped, the hpipe-scale text still counts.
  const std::string scale = chunk("zTXt", std::string("Comment\0\0", 9) + "\x78\x9c\x03\x00\x00\x00\x00\x01") +
                            chunk("tEXt", std::string("hpipe-scale\0", 12) + "-2 2");
  spill(dir / "scaled.png", png_file(2, 1, 8, 0, std::string("\0\0\xff", 3), scale));
  ok({"convert", "scaled.png", "-o", "scaled.npy", "--type", "f64"});
  EXPECT_EQ(values_of<double>(cli::read_npy(path("scaled.npy"))), (std::vector<double>{-2, 2}));
  // The text after the image data, where PNG allows it too (it was ignored: the codes 0 and 1 came out).
  std::string after = png_file(2, 1, 8, 0, std::string("\0\0\xff", 3));
  after.insert(after.size() - 12, chunk("tEXt", std::string("hpipe-scale\0", 12) + "-2 2"));  // before IEND
  spill(dir / "scaled_after.png", after);
  ok({"convert", "scaled_after.png", "-o", "scaled_after.npy", "--type", "f64"});
  EXPECT_EQ(values_of<double>(cli::read_npy(path("scaled_after.npy"))), (std::vector<double>{-2, 2}));
}

TEST_F(Cli, PngScaleMustBeFiniteAndOrdered) {
  for (const std::string text : {"-inf inf", "nan 1", "0 inf", "3 3"}) {
    SCOPED_TRACE(text);
    spill(dir / "s.png",
          png_file(1, 1, 8, 0, std::string("\0\7", 2), chunk("tEXt", "hpipe-scale" + std::string(1, '\0') + text)));
    fails({"convert", "s.png", "-o", "s.npy"}, 1,
          {"s.png: corrupt PNG: its hpipe-scale text", "finite numbers with MIN < MAX"});
  }
}

// Every width hpipe reads it also writes (libpng's default write limit was 10^6); beyond, the error
// names the user's output, not its temporary file.
TEST_F(Cli, PngReadAndWriteLimitsAgree) {
  const std::int64_t widest = cli::kPngMaxSide;
  std::string row(1 + std::size_t(widest), '\0');
  for (std::size_t i = 1; i < row.size(); i++) row[i] = char(i * 7);
  spill(dir / "wide.png", png_file(std::uint32_t(widest), 1, 8, 0, row));
  ok({"convert", "wide.png", "-o", "again.png"});
  EXPECT_EQ(values_of<std::uint8_t>(cli::read_png(path("again.png")).array),
            std::vector<std::uint8_t>(row.begin() + 1, row.end()));
  cli::write_npy(path("wider.npy"),
                 raw({1, widest + 1}, std::vector<std::uint8_t>(std::size_t(widest + 1), 1), DType::u8));
  fails({"convert", "wider.npy", "-o", "out.png"}, 2, {"out.png: images of 1 x 1048577 pixels", "1048576 per side"});
  spill(dir / "wider.png", png_file(std::uint32_t(widest + 1), 1, 8, 0, std::string(std::size_t(widest + 2), '\0')));
  fails({"info", "wider.png"}, 1, {"wider.png: corrupt PNG: Invalid IHDR data (Image width exceeds user limit"});
}

// A 128-byte .npy of shape (10^9, 0, 0) made a plane pattern name 10^9 files.
TEST_F(Cli, EmptyPlanesAreRefusedBeforeNamingFiles) {
  cli::write_npy(path("z.npy"), raw({1000000000, 0, 0}, std::vector<float>{}, DType::f32));
  EXPECT_EQ(fs::file_size(dir / "z.npy"), 128u);
  fails({"convert", "z.npy", "-o", "d/b_%d.png"}, 2, {"d/b_%d.png: the result has shape (1000000000, 0, 0)", "empty"});
  fails({"convert", "z.npy", "-o", "d/b_%d.npy"}, 2, {"its images are empty", "write it to a .npy file"});
  ok({"convert", "z.npy", "-o", "same.npy"});
  EXPECT_EQ(slurp(dir / "same.npy"), slurp(dir / "z.npy"));
}

// NumPy reads the header as a Python dict: a key given twice counts with its last value.
TEST_F(Cli, NpyDuplicateKeysTakeTheLastValueAsNumPyDoes) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'descr': '<f8', }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header += '\n';
  const double quarter = 0.25;
  spill(dir / "dup.npy", std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + '\0' + header +
                             std::string(reinterpret_cast<const char *>(&quarter), 8));
  ok({"convert", "dup.npy", "-o", "out.npy"});
  const RawArray a = cli::read_npy(path("out.npy"));
  EXPECT_EQ(a.dtype, DType::f64);
  EXPECT_EQ(values_of<double>(a), std::vector<double>{0.25});
  // Keys other than those three are refused, as NumPy refuses them: a string value that held
  // "'shape': (2,)" was read as the shape.
  header = "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), 'note': \"'shape': (2,)\", }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header += '\n';
  spill(dir / "extra.npy", std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + '\0' + header +
                               std::string(reinterpret_cast<const char *>(&quarter), 8));
  fails({"convert", "extra.npy", "-o", "extra_out.npy"}, 1,
        {"extra.npy: not a valid .npy file: the header has a key 'note' (expected descr, fortran_order and shape)"});
}

// synth wrote (and said it wrote) the scene, then failed on an existing mask: the scene stayed.
TEST_F(Cli, SynthWritesNothingWhenAnyOutputIsRefused) {
  spill(dir / "mask.npy", "");
  fails({"synth", "--bands", "2", "--height", "4", "--width", "4", "-o", "fresh.npy", "--mask", "mask.npy"}, 2,
        {"mask.npy: exists; use --force"});
  const Result r =
      run({"synth", "--bands", "2", "--height", "4", "--width", "4", "-o", "fresh.npy", "--mask", "mask.npy"});
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(dir / "fresh.npy"));
  EXPECT_EQ(slurp(dir / "mask.npy"), "");
  // Both written together otherwise.
  ok({"synth", "--bands", "2", "--height", "4", "--width", "4", "-o", "fresh.npy", "--mask", "m2.npy"});
  EXPECT_EQ(cli::read_npy(path("fresh.npy")).shape, (std::vector<std::int64_t>{2, 4, 4}));
  EXPECT_EQ(cli::read_npy(path("m2.npy")).shape, (std::vector<std::int64_t>{4, 4}));
}

TEST_F(Cli, SynthRefusesAMaskOnItsOwnOutput) {
  fails({"synth", "-o", "s.npy", "--mask", "s.npy", "--bands", "2", "--height", "3", "--width", "4"}, 2,
        {"--mask s.npy: names the file s.npy that -o s.npy writes"});
  fails({"synth", "-o", "b_%d.npy", "--mask", "./b_1.npy", "--bands", "2", "--height", "3", "--width", "4"}, 2,
        {"--mask ./b_1.npy", "b_1.npy"});
  fails({"synth", "-o", "b_%d.npy", "--mask", "b_1.npy", "--bands", "2", "--height", "3", "--width", "4"}, 2,
        {"--mask b_1.npy", "-o b_%d.npy"});
  // An output that cannot take the scene is refused before the scene is computed (17 GB here).
  fails({"synth", "-o", "big.png", "--height", "1048576", "--width", "4096"}, 2, {"big.png: the result has 28 planes"},
        "timeout 10");
  // The folders made for the scene go with it when the mask cannot be written (they stayed, empty).
  spill(dir / "afile", "");
  fails({"synth", "-o", "new/deep/s.npy", "--mask", "afile/m.npy", "--bands", "2", "--height", "3", "--width", "4"}, 1,
        {"afile/m.npy: cannot create"});
  // A mask name of no output format is the mask's error (it was blamed on -o).
  fails({"synth", "-o", "s.npy", "--mask", "m.txt", "--bands", "2", "--height", "3", "--width", "4"}, 2,
        {"--mask m.txt: expected a .png, .npy"});
}

// Each input is opened once: a named pipe used to hang (opened to sniff its format, then again).
// Every format but ENVI (which needs its header) is told from a pipe's first bytes: a .mat through
// /dev/stdin failed with "not a PNG file (wrong magic)".
TEST_F(Cli, NamedPipesAreReadOnce) {
  const RawArray a = raw({2, 3}, random_values<float>(6, 4, -1, 1), DType::f32);
  cli::write_npy(path("a.npy"), a);
  const RawArray g = raw({3, 2}, random_integers<std::uint8_t>(6, 5, 255), DType::u8);
  cli::write_png(path("g.png"), g, std::nullopt);
  for (const char *other : {"a.mat", "a.h5", "a.tif"}) ok({"convert", "a.npy", "-o", other});
  fs::create_directory(dir / "tmp");  // the temporary copies' $TMPDIR
  const std::vector<std::pair<std::string, std::string>> sources = {
      {"a.npy", "NPY"}, {"g.png", "PNG"}, {"a.mat", "MAT"}, {"a.h5", "HDF5"}, {"a.tif", "TIFF"}};
  for (const auto &[source, format] : sources) {
    SCOPED_TRACE(source);
    ok({"convert", source, "-o", "direct.npy", "--force"});
    ASSERT_EQ(mkfifo(path("pipe").c_str(), 0600), 0);
    ok({"convert", "pipe", "-o", "out.npy", "--force"}, "(cat " + source + " > pipe &) && TMPDIR=tmp timeout 60");
    expect_same(cli::read_npy(path("out.npy")), cli::read_npy(path("direct.npy")));
    EXPECT_NE(
        ok({"info", "pipe"}, "(cat " + source + " > pipe &) && TMPDIR=tmp timeout 60").out.find("pipe: " + format),
        std::string::npos);
    fs::remove(dir / "pipe");
  }
  ok({"convert", "/dev/stdin:data", "-o", "out.npy", "--force"}, "cat a.mat | TMPDIR=tmp timeout 60");
  expect_same(cli::read_npy(path("out.npy")), a);
  fails({"info", "/dev/stdin:data"}, 1, {"/dev/stdin: a ':data' selector needs a MATLAB or HDF5 file"},
        "cat a.npy | TMPDIR=tmp timeout 60");
  fails({"info", "/dev/stdin"}, 1,
        {"/dev/stdin: cannot tell the format of a pipe from its first bytes", ".npy, PNG, MATLAB .mat, HDF5 and TIFF"},
        "echo 'not an array' | TMPDIR=tmp timeout 60");
  EXPECT_TRUE(fs::is_empty(dir / "tmp")) << "a temporary copy was left behind";
}

// The temporary file name this machine's process `pid` writes NAME to (file.cpp's), and the PID
// of a process that has ended.
std::string temporary_of(const std::string &name, pid_t pid) {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) ADD_FAILURE() << "gethostname failed";
  return "." + name + ".hpipe-" + host + "-" + std::to_string(pid) + ".tmp";
}
pid_t ended_process() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  EXPECT_GT(pid, 0);
  EXPECT_EQ(waitpid(pid, nullptr, 0), pid);
  return pid;
}

// A killed hpipe leaves .NAME.hpipe-HOST-PID.tmp behind; the next write to that folder removes
// those of this machine whose process is gone, and nothing else: in a folder shared by cluster
// nodes, another machine's PID says nothing here (its writes in progress were deleted).
TEST_F(Cli, StaleTemporaryFilesOfDeadProcessesAreRemoved) {
  cli::write_npy(path("a.npy"), raw({1, 2}, std::vector<float>{1, 2}, DType::f32));
  const pid_t dead = ended_process();
  fs::create_directory(dir / "out");
  const std::string stale = temporary_of("b.npy", dead);
  const std::vector<std::string> kept = {
      temporary_of("c.npy", getpid()),                             // this test: running
      ".b.npy.hpipe-other-node-" + std::to_string(dead) + ".tmp",  // another machine's
      ".b.npy.hpipe-" + std::to_string(dead) + ".tmp", ".d.npy.hpipe-notes.tmp", "e.hpipe-x-1.tmp"};
  spill(dir / "out" / stale, "partial");
  for (const std::string &name : kept) spill(dir / "out" / name, "partial");
  ok({"convert", "a.npy", "-o", "out/b.npy"});
  EXPECT_FALSE(fs::exists(dir / "out" / stale));
  for (const std::string &name : kept) EXPECT_TRUE(fs::exists(dir / "out" / name)) << name;
  EXPECT_TRUE(fs::exists(dir / "out/b.npy"));
}

// A pipe's copy for the readers by name (.mat, HDF5, TIFF) that a killed hpipe left in $TMPDIR is
// removed by the next copy made there.
TEST_F(Cli, APipesCopyLeftByAKilledReadIsRemoved) {
  cli::write_npy(path("a.npy"), raw({1, 2}, std::vector<float>{1, 2}, DType::f32));
  ok({"convert", "a.npy", "-o", "a.mat"});
  fs::create_directory(dir / "tmp");
  const std::string left = temporary_of("hpipe-pipe-0", ended_process());
  spill(dir / "tmp" / left, "a copy");
  ok({"info", "/dev/stdin"}, "cat a.mat | TMPDIR=tmp timeout 60");
  EXPECT_TRUE(fs::is_empty(dir / "tmp")) << "a killed read's copy stayed";
}

// A batch removed the temporary file of a target's writer that was still running (two batches on
// one folder, or an interrupted Dask batch's item still finishing): only dead writers' go.
TEST_F(Cli, BatchLeavesARunningWritersTemporaryAlone) {
  ok({"synth", "-o", "in/m.npy", "--mask", "mask.npy", "--bands", "4", "--height", "8", "--width", "8"});
  fs::copy_file(dir / "in/m.npy", dir / "in/n.npy");
  fs::create_directory(dir / "out");
  const std::string running = temporary_of("m.npy", getpid()), left = temporary_of("n.npy", ended_process());
  spill(dir / "out" / running, "partial");
  spill(dir / "out" / left, "partial");
  ok({"batch", "cassi", "forward", "--mask", "mask.npy", "-o", "out", "-q", "--", "in"});
  EXPECT_TRUE(fs::exists(dir / "out" / running));
  EXPECT_FALSE(fs::exists(dir / "out" / left));
  EXPECT_TRUE(fs::exists(dir / "out/m.npy") && fs::exists(dir / "out/n.npy"));
}

// A signal while recon writes -o left the --preview pictures' temporary files behind: the signal
// handler knew only the newest output set.
TEST_F(Cli, InterruptedReconRemovesEveryTemporaryFile) {
  ok({"synth", "-o", "scene.npy", "--mask", "mask.npy", "--bands", "28", "--height", "256", "--width", "256"});
  ok({"cassi", "forward", "scene.npy", "--mask", "mask.npy", "-o", "y.npy"});
  auto temporaries = [&] {
    std::vector<std::string> found;
    for (const fs::path &p : files())
      if (p.filename().string().find(".hpipe-") != std::string::npos) found.push_back(p.string());
    return found;
  };
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(127);
    execl(HPIPE_CLI, HPIPE_CLI, "recon", "gap-tv", "y.npy", "--mask", "mask.npy", "--iters", "1", "--preview", "p",
          "-o", "r/band_%02d.png", "--scale", "auto", "-q", static_cast<char *>(nullptr));
    _exit(127);
  }
  // Once the bands are being written (the pictures are written before them), stop it.
  bool writing = false;
  for (int i = 0; i < 60000 && !writing; i++) {
    for (const std::string &t : temporaries()) writing = writing || t.find("/r/") != std::string::npos;
    if (!writing) usleep(500);
  }
  kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(writing) << "the bands were never being written";
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "finished before the signal";
  EXPECT_EQ(temporaries(), std::vector<std::string>{});
  EXPECT_FALSE(fs::exists(dir / "p/result.png"));
}

// File names are bytes: `info --json` of lat\xe9.npy (Latin-1) copied the byte into the JSON,
// which then was not UTF-8 and no JSON parser read it.
TEST_F(Cli, JsonOfNamesThatAreNotUtf8IsValid) {
  const std::vector<std::pair<std::string, std::string>> names = {
      {"lat\xe9.npy", "lat\\udce9.npy"},                         // Latin-1
      {"caf\xc3\xa9.npy", "caf\xc3\xa9.npy"},                    // UTF-8: as it is
      {"cut\xe2\x82.npy", "cut\\udce2\\udc82.npy"},              // a sequence cut short
      {"over\xc0\xaf.npy", "over\\udcc0\\udcaf.npy"},            // an overlong '/'
      {"sur\xed\xa0\x80.npy", "sur\\udced\\udca0\\udc80.npy"}};  // an encoded surrogate
  for (const auto &[name, quoted] : names) {
    SCOPED_TRACE(quoted);
    cli::write_npy(path(name), raw({1, 2}, std::vector<float>{1, 2}, DType::f32));
    const Result r = ok({"info", name, "--json"});
    EXPECT_NE(r.out.find("\"path\": \"" + quoted + "\""), std::string::npos) << r.out;
  }
}

// ---- usage ----

// `hpipe info --json > /dev/full` and `hpipe --help > /dev/full` exited 0: the output was lost.
TEST_F(Cli, FailedWritesToStandardOutputAreErrors) {
  cli::write_npy(path("a.npy"), raw({1, 2}, std::vector<float>{1, 2}, DType::f32));
  for (const std::string args : {"info a.npy --json", "info a.npy", "--help", "convert --help"}) {
    SCOPED_TRACE(args);
    const std::string cmd = "cd '" + dir.string() + "' && '" HPIPE_CLI "' " + args + " > /dev/full 2> err.txt";
    const int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
    // The reason when the last flush failed; an earlier one (a longer output) left only the stream's error flag.
    const std::string err = slurp(dir / "err.txt");
    EXPECT_EQ(err.rfind("hpipe: error: cannot write to standard output", 0), 0u) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
}

TEST_F(Cli, UsageErrorsExitWith2AndEveryCommandHasHelpWithAnExample) {
  fails({"frobnicate"}, 2, {"unknown command 'frobnicate'"});
  fails({"help", "frobnicate"}, 2, {"unknown command 'frobnicate'"});
  fails({"info", "--colour"}, 2, {"unknown option --colour", "hpipe info --help"});
  fails({"info"}, 2, {"expected one or more files"});
  fails({"convert", "a.npy"}, 2, {"-o OUT is required"});
  fails({"synth", "-o", "s.npy", "--bands", "0"}, 2, {"--bands", "'0'"});
  fails({"synth", "-o", "s.npy", "--device", "tpu"}, 2, {"--device", "'tpu'"});
  fails({"synth", "-o", "s.npy", "--threads", "-1"}, 2, {"--threads"});
  const Result all = ok({"--help"});
  for (const char *c : {"info", "convert", "diff", "synth", "cassi", "dot", "conv1d", "recon", "map", "logsumexp",
                        "preview", "batch"}) {
    SCOPED_TRACE(c);
    EXPECT_NE(all.out.find(std::string("  ") + c), std::string::npos);
    const Result r = ok({c, "--help"});
    EXPECT_NE(r.out.find(std::string("usage: hpipe ") + c), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("example:\n  hpipe " + std::string(c)), std::string::npos) << r.out;
  }
}

TEST_F(Cli, QuietJsonAndDiff) {
  ok({"synth", "-o", "a.npy", "--bands", "2", "--height", "3", "--width", "4"});
  EXPECT_EQ(ok({"synth", "-o", "b.npy", "--bands", "2", "--height", "3", "--width", "4", "-q"}).out, "");
  const Result r = ok({"diff", "a.npy", "b.npy", "--json", "--threads", "1"});
  for (const char *part :
       {"\"command\": \"diff\"", "\"max_abs\": 0", "\"unequal\": 0", "\"times_ms\"", "\"threads\": 1"})
    EXPECT_NE(r.out.find(part), std::string::npos) << r.out << " lacks " << part;
  EXPECT_EQ(r.err, "");  // no progress bar when stderr is not a terminal
}

// A NaN in the same place in both counts as equal, as np.testing.assert_array_equal does (it was
// "max nan, 1 of 6 differ" for a file against itself); a NaN against a number is a difference.
TEST_F(Cli, DiffCountsNaNsInTheSamePlaceAsEqual) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  cli::write_npy(path("a.npy"), raw({2, 3}, std::vector<float>{1, nan, 3, inf, 5, 6}, DType::f32));
  cli::write_npy(path("b.npy"), raw({2, 3}, std::vector<float>{1, nan, 3.5f, inf, 5, 4}, DType::f32));
  cli::write_npy(path("c.npy"), raw({2, 3}, std::vector<float>{1, 2, 3, inf, 5, 6}, DType::f32));
  EXPECT_NE(ok({"diff", "a.npy", "a.npy"}).out.find("max |a - b| = 0, mean |a - b| = 0 (mean |a| = inf"),
            std::string::npos);
  const Result same_nans = ok({"diff", "a.npy", "b.npy", "--json"});
  // JSON numbers read back as the values they stand for (6 digits gave 0.416667).
  for (const char *part : {"\"unequal\": 2", "\"max_abs\": 2,", "\"mean_abs\": 0.41666666666666669"})
    EXPECT_NE(same_nans.out.find(part), std::string::npos) << same_nans.out << " lacks " << part;
  const Result nan_against_number = ok({"diff", "a.npy", "c.npy"});
  EXPECT_NE(nan_against_number.out.find("max |a - b| = nan"), std::string::npos) << nan_against_number.out;
  EXPECT_NE(nan_against_number.out.find(", 1 of 6 differ"), std::string::npos) << nan_against_number.out;
}

// An array without a finite value said "values [inf, -inf]": the min and max it starts from.
TEST_F(Cli, InfoOfAnArrayWithoutFiniteValuesSaysSo) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  cli::write_npy(path("empty.npy"), raw({0, 3}, std::vector<float>{}, DType::f32));
  cli::write_npy(path("nan.npy"), raw({2}, std::vector<float>{nan, nan}, DType::f32));
  cli::write_npy(path("nan_inf.npy"), raw({2}, std::vector<float>{nan, -inf}, DType::f32));
  cli::write_npy(path("some.npy"), raw({3}, std::vector<float>{nan, -2, 4}, DType::f32));
  const Result r = ok({"info", "empty.npy", "nan.npy", "nan_inf.npy", "some.npy"});
  for (const char *line :
       {"empty.npy: NPY (0, 3) float32, no values (empty)\n", "nan.npy: NPY (2,) float32, all 2 values NaN\n",
        "nan_inf.npy: NPY (2,) float32, all 2 values NaN or inf\n",
        "some.npy: NPY (3,) float32, values [-2, 4], 1 NaN/inf\n"})
    EXPECT_NE(r.out.find(line), std::string::npos) << r.out << " lacks " << line;
  const Result json = ok({"info", "empty.npy", "nan.npy", "--json"});
  const std::string no_range = "\"stored_min\": null, \"stored_max\": null, \"min\": null, \"max\": null";
  EXPECT_NE(json.out.find(no_range + ", \"nonfinite\": 0}"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find(no_range + ", \"nonfinite\": 2}"), std::string::npos) << json.out;
}

TEST_F(Cli, CudaDeviceRunsOrSaysWhyNot) {
  cli::write_npy(path("x.npy"), raw({3, 4, 5}, random_values<float>(60, 1, 0.1, 1), DType::f32));
  cli::write_npy(path("m.npy"), raw({4, 5}, random_values<float>(20, 2, 0.1, 1), DType::f32));
  const std::vector<std::string> args = {"cassi", "forward", "x.npy",    "--mask", "m.npy",
                                         "-o",    "y.npy",   "--device", "cuda"};
  if (cuda_available()) {
    ok(args);
    ok({"cassi", "forward", "x.npy", "--mask", "m.npy", "-o", "y_cpu.npy", "--device", "cpu"});
    const auto a = values_of<float>(cli::read_npy(path("y.npy"))),
               b = values_of<float>(cli::read_npy(path("y_cpu.npy")));
    EXPECT_TRUE(all_near(std::vector<double>(a.begin(), a.end()), std::vector<double>(b.begin(), b.end()), {0, 1e-5}));
  } else {
    fails(args, 1, {"CUDA"});
    GTEST_SKIP() << "no usable GPU (checked the error instead): " << cuda_unavailable_reason();
  }
}

// ---- batch ----

// Measurements of the synthetic scene at different brightnesses, one file each in meas/.
void write_measurements(const Cli &t, int count) {
  const std::int64_t C = 4, H = 12, W = 13;
  const auto mask = synth_mask(H, W, 2);
  cli::write_npy(t.path("mask.npy"), raw_of(mask));
  fs::create_directories(t.dir / "meas");
  for (int k = 0; k < count; k++) {
    auto scene = synth_scene(C, H, W);
    for (std::int64_t i = 0; i < scene.size(); i++) scene.data()[i] *= 1.0f - 0.1f * float(k);
    const auto y = cassi_forward(View<const float, 4>(scene.data(), {1, C, H, W}), mask.view(), Dispersion{},
                                 Options{Device::cpu});
    RawArray ys = raw_of(y);
    ys.shape.erase(ys.shape.begin());
    cli::write_npy(t.path("meas/y" + std::to_string(k) + ".npy"), ys);
  }
}

const std::vector<std::string> kReconItem = {"--mask",     "mask.npy", "--iters",  "3",
                                             "--tv-iters", "2",        "--device", "cpu"};

std::vector<std::string> batch(std::vector<std::string> args) {
  args.insert(args.begin(), {"batch", "recon", "gap-tv"});
  args.insert(args.end(), kReconItem.begin(), kReconItem.end());
  return args;
}

// The names of the files in a folder (hidden ones too).
std::set<std::string> names_in(const fs::path &dir) {
  std::set<std::string> names;
  for (const auto &e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

TEST_F(Cli, BatchGivesTheSingleCallsResultsAndShardsPartitionTheItems) {
  write_measurements(*this, 5);
  const Result all = ok(batch({"meas", "-o", "all", "--json"}));
  for (const char *part :
       {"\"items\": 5", "\"selected\": 5", "\"done\": 5", "\"skipped\": 0", "\"failed\": 0", "\"items_per_s\": "})
    EXPECT_NE(all.out.find(part), std::string::npos) << all.out << " lacks " << part;
  const std::set<std::string> expected = {"y0.npy", "y1.npy", "y2.npy", "y3.npy", "y4.npy"};
  ASSERT_EQ(names_in(dir / "all"), expected);
  for (const std::string &name : expected) {
    std::vector<std::string> single = {"recon", "gap-tv", "meas/" + name, "-o", "single_" + name};
    single.insert(single.end(), kReconItem.begin(), kReconItem.end());
    ok(single);
    EXPECT_EQ(slurp(dir / "all" / name), slurp(dir / ("single_" + name))) << name;
  }
  // Shards 0/3, 1/3, 2/3 into one folder: items i, i+3, ...; together exactly the unsharded run.
  for (int s = 0; s < 3; s++) {
    const Result r =
        ok(batch({"meas", "-o", "sharded", "--json", "--workers", "1", "--shard", std::to_string(s) + "/3"}));
    const std::string done = "\"done\": " + std::to_string(s < 2 ? 2 : 1);
    EXPECT_NE(r.out.find(done), std::string::npos) << r.out;
  }
  ASSERT_EQ(names_in(dir / "sharded"), expected);
  for (const std::string &name : expected) EXPECT_EQ(slurp(dir / "sharded" / name), slurp(dir / "all" / name)) << name;
  // A Slurm array (ids counted from its first) and a Kubernetes Indexed Job pick their shard themselves.
  setenv("SLURM_ARRAY_TASK_ID", "2", 1);
  setenv("SLURM_ARRAY_TASK_COUNT", "3", 1);
  setenv("SLURM_ARRAY_TASK_MIN", "1", 1);
  ok(batch({"meas", "-o", "slurm"}));
  for (const char *v : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN"}) unsetenv(v);
  EXPECT_EQ(names_in(dir / "slurm"), (std::set<std::string>{"y1.npy", "y4.npy"}));
  // A task id below the array's first one (the batch did nothing and said done).
  setenv("SLURM_ARRAY_TASK_ID", "0", 1);
  setenv("SLURM_ARRAY_TASK_COUNT", "3", 1);
  setenv("SLURM_ARRAY_TASK_MIN", "1", 1);
  fails(batch({"meas", "-o", "slurm0"}), 2, {"SLURM_ARRAY_TASK_ID", "got -1/3"});
  for (const char *v : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN"}) unsetenv(v);
  setenv("JOB_COMPLETION_INDEX", "0", 1);
  setenv("JOB_COMPLETIONS", "3", 1);
  ok(batch({"meas", "-o", "k8s"}));
  unsetenv("JOB_COMPLETION_INDEX");
  unsetenv("JOB_COMPLETIONS");
  EXPECT_EQ(names_in(dir / "k8s"), (std::set<std::string>{"y0.npy", "y3.npy"}));
  // A manifest: one input a line, relative to its folder.
  spill(dir / "meas" / "some.txt", "# two of them\ny3.npy\n\n  y1.npy\n");
  const Result listed = ok({"batch", "recon", "gap-tv", "meas/some.txt", "--mask", "mask.npy", "-o", "all", "--list"});
  EXPECT_EQ(listed.out.rfind("complete meas/y3.npy -> all/y3.npy\ncomplete meas/y1.npy -> all/y1.npy\n", 0), 0u)
      << listed.out;
  ok(batch({"meas/some.txt", "-o", "listed"}));
  EXPECT_EQ(names_in(dir / "listed"), (std::set<std::string>{"y1.npy", "y3.npy"}));
  EXPECT_EQ(slurp(dir / "listed" / "y3.npy"), slurp(dir / "all" / "y3.npy"));
}

// Each item ran with --quiet and the summary had no clipped count: PNG outputs clipped silently,
// where the single call warns.
TEST_F(Cli, BatchReportsClippedValuesAsTheSingleCallDoes) {
  const auto mask = synth_mask(12, 13, 2);
  cli::write_npy(path("mask.npy"), raw_of(mask));
  fs::create_directories(dir / "scenes");
  auto scene = synth_scene(4, 12, 13);
  cli::write_npy(path("scenes/bright.npy"), raw_of(scene));  // 4 bands summed: above 1 in places
  for (std::int64_t i = 0; i < scene.size(); i++) scene.data()[i] *= 0.2f;
  cli::write_npy(path("scenes/dim.npy"), raw_of(scene));  // at most 0.8: nothing clipped
  const Result single = ok({"cassi", "forward", "scenes/bright.npy", "--mask", "mask.npy", "-o", "single.png"});
  const std::string what = " values were outside the uint16 range and were clipped";
  const std::size_t at = single.err.find("single.png: ");
  ASSERT_NE(at, std::string::npos) << single.err;
  const std::string count = single.err.substr(at + 12, single.err.find(what) - at - 12);
  ASSERT_GT(std::stoll(count), 0) << single.err;
  const Result r = ok({"batch", "cassi", "forward", "scenes", "--mask", "mask.npy", "-o", "out", "--ext", "png",
                       "--json", "--workers", "1"});
  for (const std::string part :
       {"\"clipped\": " + count,
        "\"clipped_items\": [{\"input\": \"scenes/bright.npy\", \"output\": \"out/bright.png\", "
        "\"clipped\": " +
            count + "}]"})
    EXPECT_NE(r.out.find(part), std::string::npos) << r.out << " lacks " << part;
  EXPECT_NE(r.err.find("hpipe: warning: out/bright.png: " + count + what), std::string::npos) << r.err;
  EXPECT_EQ(slurp(dir / "out/bright.png"), slurp(dir / "single.png"));
  const Result human = ok({"batch", "cassi", "forward", "scenes", "--mask", "mask.npy", "-o", "again", "--ext", "png"});
  EXPECT_NE(human.out.find("2 done, 0 skipped, 0 failed"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("; " + count + " values clipped in 1 items"), std::string::npos) << human.out;
}

// A bad -o (or --preview) failed only after the whole computation: here hours of iterations.
TEST_F(Cli, OutputsAreCheckedBeforeAnyComputation) {
  write_measurements(*this, 1);
  spill(dir / "exists.npy", "");
  const std::vector<std::string> endless = {"recon",   "gap-tv",     "meas/y0.npy", "--mask",   "mask.npy", "--iters",
                                            "1048576", "--tv-iters", "1000",        "--device", "cpu"};
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"-o", "exists.npy"}, "exists.npy: exists; use --force"},
      {{"-o", "x.gif"}, "-o x.gif: expected a .png, .npy, .mat, .h5, .tif or .hdr"},
      {{"-o", "meas/y0.npy", "--force"}, "meas/y0.npy: refusing to overwrite an input file"},
      {{"-o", "./mask.npy", "--force"}, "./mask.npy: refusing to overwrite an input file"},
      {{"-o", "b_%s.png"}, "output pattern 'b_%s.png': expected exactly one integer conversion"},
      {{"-o", "b_%d.mat"}, "b_%d.mat: a MAT file holds the whole result"},
      {{"-o", "x.npy", "--preview", "p"}, "has 4 bands and no wavelengths"},
      {{"-o", "x.npy", "--preview", "p", "--wavelengths", "450,500"}, "--wavelengths"},
      // Micrometres drew a black picture.
      {{"-o", "x.npy", "--preview", "p", "--wavelengths", "0.45:0.65"},
       "--wavelengths 0.45:0.65: no band within the visible 380-780 nm"}};
  for (const auto &[extra, what] : cases) {
    SCOPED_TRACE(what);
    std::vector<std::string> args = endless;
    args.insert(args.end(), extra.begin(), extra.end());
    fails(args, 2, {what}, "timeout 30");
  }
}

TEST_F(Cli, BatchFailsOnlyTheCorruptItemAndResumesOnlyMissingOnes) {
  write_measurements(*this, 4);
  spill(dir / "meas" / "bad.npy", std::string("\x93NUMPY\x01\x00", 8) + "truncated");
  const Result r = run(batch({"meas", "-o", "out", "--json"}));
  EXPECT_EQ(r.rc, 1) << r.err;
  for (const char *part :
       {"\"done\": 4", "\"failed\": 1", "\"failures\": [{\"input\": \"meas/bad.npy\"", "\"error\": \"meas/bad.npy: "})
    EXPECT_NE(r.out.find(part), std::string::npos) << r.out << " lacks " << part;
  EXPECT_NE(r.err.find("hpipe: warning: meas/bad.npy: "), std::string::npos) << r.err;  // the retry
  EXPECT_NE(r.err.find("hpipe: error: meas/bad.npy: "), std::string::npos) << r.err;
  EXPECT_EQ(names_in(dir / "out"), (std::set<std::string>{"y0.npy", "y1.npy", "y2.npy", "y3.npy"}));
  std::map<std::string, std::string> first;
  for (const std::string &n : names_in(dir / "out")) first[n] = slurp(dir / "out" / n);

  // An interrupted run: two outputs missing, a killed writer's temporary file left behind.
  fs::remove(dir / "out" / "y1.npy");
  fs::remove(dir / "out" / "y2.npy");
  // On another machine: one written two hours ago is gone; one written just now may be running.
  spill(dir / "out" / ".y1.npy.hpipe-node7-4242.tmp", "half");
  fs::last_write_time(dir / "out" / ".y1.npy.hpipe-node7-4242.tmp",
                      fs::file_time_type::clock::now() - std::chrono::hours(2));
  spill(dir / "out" / ".y2.npy.hpipe-node8-4343.tmp", "half");
  fs::remove(dir / "meas" / "bad.npy");
  const auto untouched = fs::last_write_time(dir / "out" / "y0.npy");
  const Result again = ok(batch({"meas", "-o", "out", "--json"}));
  for (const char *part : {"\"done\": 2", "\"skipped\": 2", "\"failed\": 0"})
    EXPECT_NE(again.out.find(part), std::string::npos) << again.out << " lacks " << part;
  EXPECT_EQ(names_in(dir / "out"),
            (std::set<std::string>{".y2.npy.hpipe-node8-4343.tmp", "y0.npy", "y1.npy", "y2.npy", "y3.npy"}));
  fs::remove(dir / "out" / ".y2.npy.hpipe-node8-4343.tmp");
  EXPECT_EQ(fs::last_write_time(dir / "out" / "y0.npy"), untouched);
  for (const auto &[n, bytes] : first) EXPECT_EQ(slurp(dir / "out" / n), bytes) << n;
  // --force redoes them all.
  EXPECT_NE(ok(batch({"meas", "-o", "out", "--json", "--force"})).out.find("\"done\": 4"), std::string::npos);
}

TEST_F(Cli, BatchStoppedMidRunLeavesOnlyWholeOutputsAndResumes) {
  // Items of some 40 ms each on one worker.
  const std::int64_t C = 8, H = 128, W = 128;
  const auto mask = synth_mask(H, W, 3);
  cli::write_npy(path("mask.npy"), raw_of(mask));
  fs::create_directories(dir / "meas");
  const int items = 10;
  for (int k = 0; k < items; k++) {
    const auto scene = synth_scene(C, H, W);
    const auto y = cassi_forward(View<const float, 4>(scene.data(), {1, C, H, W}), mask.view(), Dispersion{},
                                 Options{Device::cpu});
    RawArray ys = raw_of(y);
    ys.shape.erase(ys.shape.begin());
    auto v = values_of<float>(ys);
    for (float &x : v) x *= 1.0f - 0.05f * float(k);
    cli::write_npy(path("meas/y" + std::to_string(k) + ".npy"), raw(ys.shape, v, DType::f32));
  }
  // SIGTERM as soon as the first output appears (the items run in order on one worker).
  const std::string script = "cd '" + dir.string() +
                             "' && { '" HPIPE_CLI
                             "' batch recon gap-tv meas --mask mask.npy "
                             "--iters 60 --tv-iters 3 --workers 1 --threads 1 -o out -q & pid=$!; n=0; "
                             "while [ ! -e out/y0.npy ] && [ $n -lt 3000 ]; do sleep 0.01; n=$((n+1)); done; "
                             "kill -TERM $pid; wait $pid; }";
  const int status = std::system(script.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  const std::set<std::string> kept = fs::exists(dir / "out") ? names_in(dir / "out") : std::set<std::string>{};
  for (const std::string &n : kept) EXPECT_NE(n[0], '.') << "a temporary file was left: " << n;
  const Result again = ok({"batch", "recon", "gap-tv", "meas", "--mask", "mask.npy", "--iters", "60", "--tv-iters", "3",
                           "-o", "out", "--json"});
  EXPECT_NE(again.out.find("\"skipped\": " + std::to_string(kept.size())), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("\"done\": " + std::to_string(items - int(kept.size()))), std::string::npos) << again.out;
  ASSERT_EQ(names_in(dir / "out").size(), std::size_t(items));
  // What the stopped run left is whole: the same bytes as a single call.
  for (const std::string &n : kept) {
    ok({"recon", "gap-tv", "meas/" + n, "--mask", "mask.npy", "--iters", "60", "--tv-iters", "3", "-o", "single.npy",
        "--force"});
    EXPECT_EQ(slurp(dir / "out" / n), slurp(dir / "single.npy")) << n;
  }
  if (WEXITSTATUS(status) != 128 + SIGTERM || kept.size() == std::size_t(items))
    GTEST_SKIP() << "the run was not stopped between items (exit status " << WEXITSTATUS(status) << ", " << kept.size()
                 << " outputs); only the resume was checked";
}

TEST_F(Cli, BatchUsageErrorsNameTheArgument) {
  write_measurements(*this, 2);
  fs::create_directories(dir / "other");
  fs::copy_file(dir / "meas" / "y0.npy", dir / "other" / "y0.npy");
  fails({"batch", "map", "exp", "meas", "-o", "o"}, 2, {"expected cassi or recon"});
  // A '%' in an output name made each item's output a pattern (b%d.npy wrote b0.npy ... b7.npy).
  fails(batch({"meas", "-o", "pct%d"}), 2, {"pct%d: -o names the output folder", "'%'"});
  fails({"batch", "cassi", "pinv", "meas", "--mask", "mask.npy", "--iters", "3", "-o", "o"}, 2,
        {"unknown option --iters for 'hpipe cassi'"});
  fails(batch({"meas", "-o", "o", "--shard", "3/3"}), 2, {"--shard", "3/3"});
  fails(batch({"meas", "-o", "o", "--shard", "1"}), 2, {"--shard", "expected I/N"});
  fails(batch({"meas", "other", "-o", "o"}), 2, {"other/y0.npy and meas/y0.npy would both write o/y0.npy"});
  fails(batch({"meas"}), 2, {"-o OUT is required"});
  fails(batch({"meas", "-o", "o", "--lambda", "-1"}), 2, {"--lambda", "'-1'"});
  fails(batch({"meas", "-o", "o", "--ext", "jpg"}), 2, {"--ext", "'jpg'"});
  fails(batch({"meas", "-o", "o", "--preview", "p"}), 2, {"--preview", "the same folder"});
  fails(batch({"meas", "-o", "o", "--gamma", "0.5"}), 2, {"hpipe recon gap-tv: --gamma applies to admm-tv only"});
}

// --scheduler without an importable hpipe package printed Python's ModuleNotFoundError traceback.
// The package here is the source folder's without its compiled module, as in a build without
// the Python module.
TEST_F(Cli, BatchOnDaskWithoutThePythonPackageSaysHowToGetIt) {
  if (std::system("python3 -c '' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 is not installed: the launcher under test is a Python program";
  write_measurements(*this, 1);
  fs::create_directories(dir / "shadow" / "hpipe");
  spill(dir / "shadow" / "hpipe" / "__init__.py", "from . import _core\n");
  fails(batch({"meas", "-o", "o", "--scheduler", "tcp://127.0.0.1:9"}), 1,
        {"--scheduler needs the hpipe Python package", "cannot import (", "import name '_core'",
         "PYTHONPATH=python:build/python", "make install", "HPIPE_PYTHON"},
        "PYTHONPATH=shadow PYTHONDONTWRITEBYTECODE=1 HPIPE_PYTHON=python3");
}

}  // namespace
}  // namespace hpipe::test
