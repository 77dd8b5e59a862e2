// The hpipe tool's end-to-end test frame: a scratch folder per test, the real binary (HPIPE_CLI)
// run inside it, and helpers to make and compare arrays. Shared by test_cli*.cpp.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "io_npy.h"
#include "test_util.h"

namespace hpipe::test {

namespace fs = std::filesystem;
using cli::DType;
using cli::RawArray;

struct Result {
  int rc;
  std::string out, err;
};

inline std::string slurp(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void spill(const fs::path &p, const std::string &bytes) { std::ofstream(p, std::ios::binary) << bytes; }

// A scratch folder per test, and the binary run inside it.
class Cli : public ::testing::Test {
 public:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "hpipe_cli_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir = tmpl;
  }
  void TearDown() override { fs::remove_all(dir); }

  // `before`: shell words put in front of the binary (e.g. "timeout 30").
  Result run(const std::vector<std::string> &args, const std::string &before = "") const {
    std::string cmd = "cd '" + dir.string() + "' && " + before + " '" HPIPE_CLI "'";
    for (const std::string &a : args) cmd += " '" + a + "'";
    cmd += " > .stdout 2> .stderr";
    const int status = std::system(cmd.c_str());
    Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / ".stdout"), slurp(dir / ".stderr")};
    fs::remove(dir / ".stdout");
    fs::remove(dir / ".stderr");
    return r;
  }
  // Runs a command that must succeed.
  Result ok(const std::vector<std::string> &args, const std::string &before = "") const {
    Result r = run(args, before);
    EXPECT_EQ(r.rc, 0) << r.err;
    return r;
  }
  // Runs a command that must fail with `rc` and one error line containing every part; no file appears.
  void fails(const std::vector<std::string> &args, int rc, const std::vector<std::string> &parts,
             const std::string &shell_before = "") const {
    const std::set<fs::path> before = files();
    const Result r = run(args, shell_before);
    EXPECT_EQ(r.rc, rc) << r.err;
    EXPECT_EQ(r.err.rfind("hpipe: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    for (const std::string &p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << r.err << " lacks " << p;
    EXPECT_EQ(files(), before) << "the failed command left files behind";
  }
  std::set<fs::path> files() const {
    std::set<fs::path> all;
    for (const auto &e : fs::recursive_directory_iterator(dir)) all.insert(e.path());
    return all;
  }
  std::string path(const std::string &name) const { return (dir / name).string(); }

  fs::path dir;
};

template <class S>
RawArray raw(const std::vector<std::int64_t> &shape, const std::vector<S> &values, DType type) {
  RawArray a;
  a.shape = shape;
  a.dtype = type;
  a.bytes.resize(values.size() * sizeof(S));
  if (!values.empty()) std::memcpy(a.bytes.data(), values.data(), a.bytes.size());  // memcpy takes no null
  return a;
}

template <class S>
std::vector<S> random_values(std::size_t n, std::uint32_t seed, double lo, double hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<S> v(n);
  for (auto &x : v) x = static_cast<S>(d(rng));
  return v;
}

// The integers 0..top in random order, both ends included.
template <class S>
std::vector<S> random_integers(std::size_t n, std::uint32_t seed, unsigned top) {
  std::mt19937 rng(seed);
  std::vector<S> v(n);
  for (auto &x : v) x = static_cast<S>(rng() % (top + 1));
  v[0] = 0;
  v[n - 1] = static_cast<S>(top);
  return v;
}

template <class T>
std::vector<T> values_of(const RawArray &a) {
  std::vector<T> v(static_cast<std::size_t>(a.size()));
  if (!v.empty()) std::memcpy(v.data(), a.bytes.data(), a.bytes.size());
  return v;
}

inline void expect_same(const RawArray &actual, const RawArray &expected) {
  EXPECT_EQ(actual.shape, expected.shape);
  EXPECT_EQ(actual.dtype, expected.dtype);
  EXPECT_TRUE(actual.bytes == expected.bytes) << "the values differ";
}

template <class T, int R>
RawArray raw_of(const Array<T, R> &a) {
  return raw(std::vector<std::int64_t>(a.shape().begin(), a.shape().end()),
             std::vector<T>(a.data(), a.data() + a.size()), sizeof(T) == 4 ? DType::f32 : DType::f64);
}

}  // namespace hpipe::test
