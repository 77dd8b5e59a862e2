// The driver of the CUDA measurement bundle (prebuilt by CMake as hpipe_tune_bundle_driver, linked
// into each bundle by `hpipe-tune bundle`). Runs on a GPU host with only the NVIDIA driver: finds the GPU through
// libcuda, then for every variant verifies the output against the reference (verification cases) and that every output
// element is written (timing case, NaN-poisoned), times it with Halide's adaptive rule and writes one JSON-line record;
// the three fastest are re-measured at the end (phase "confirm").
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "HalideRuntime.h"
#include "halide_benchmark.h"
#include "tools/tune/bundle_abi.h"
#include "tools/tune/records.h"

using namespace hpipe::tune;
using namespace hpipe::tune::bundle;

namespace {

std::string g_halide_error;
extern "C" void collect_error(void *, const char *message) { g_halide_error += message; }

// The GPU through the driver API, loaded at run time: its name, or why there is none.
bool find_gpu(std::string &name, std::string &why) {
  void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_GLOBAL);
  if (!lib) lib = dlopen("libcuda.so", RTLD_LAZY | RTLD_GLOBAL);
  if (!lib)
    return why = std::string("the NVIDIA driver library libcuda.so.1 is not installed (") + dlerror() + ")", false;
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int *);
  using GetFn = int (*)(int *, int);
  using NameFn = int (*)(char *, int, int);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  auto get = reinterpret_cast<GetFn>(dlsym(lib, "cuDeviceGet"));
  auto get_name = reinterpret_cast<NameFn>(dlsym(lib, "cuDeviceGetName"));
  if (!init || !count || !get || !get_name) return why = "libcuda lacks the driver API entry points", false;
  if (int e = init(0)) return why = "cuInit failed with CUresult " + std::to_string(e), false;
  int n = 0;
  if (int e = count(&n); e || n == 0) return why = "the driver sees no CUDA device", false;
  const char *env = std::getenv("HL_GPU_DEVICE");
  int device = 0;
  char buf[256] = {};
  if (get(&device, env ? std::atoi(env) : 0) || get_name(buf, sizeof buf, device))
    return why = "cannot query the CUDA device", false;
  name = buf;
  return true;
}

// A case's buffers as halide_buffer_t (host memory; the pipeline copies inputs to the GPU).
struct Buffers {
  std::vector<std::vector<float>> storage;
  std::vector<std::vector<halide_dimension_t>> dims;
  std::vector<halide_buffer_t> buffers;  // inputs in case order, then the outputs (Tuple elements)
  std::vector<halide_scalar_value_t> scalars;
  std::vector<std::string> names;
  int inputs;

  Buffers(const BundleCase &c, std::uint32_t seed) : inputs(c.arg_count) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(0.05f, 1.0f);
    const int n = c.arg_count + c.out_count;
    storage.resize(n), dims.resize(n), buffers.resize(n), scalars.resize(inputs);
    for (int a = 0; a < n; a++) {
      const bool out = a >= inputs;
      const BundleArg *arg = out ? nullptr : &c.args[a];
      names.push_back(out ? "" : arg->name);
      if (!out && !arg->is_buffer) {
        if (arg->is_float) {
          scalars[a].u.f32 = arg->real;
        } else {
          scalars[a].u.i32 = arg->scalar;
        }
        continue;
      }
      const int d = out ? c.outs[a - inputs].dims : arg->dims;
      std::int64_t span = 1, stride = 1;
      for (int i = 0; i < d; i++) {
        const int extent = out ? c.outs[a - inputs].extents[i] : arg->extents[i];
        const int s = out ? int(stride) : arg->strides[i];
        dims[a].push_back({0, extent, s, 0});
        span += std::int64_t(extent - 1) * s, stride *= extent;
      }
      storage[a].resize(span);
      if (out) {
        std::fill(storage[a].begin(), storage[a].end(), std::numeric_limits<float>::quiet_NaN());
      } else if (arg->values) {
        std::copy(arg->values, arg->values + span, storage[a].begin());
      } else {
        for (float &v : storage[a]) v = dist(rng);
      }
      halide_buffer_t &b = buffers[a];
      b.host = reinterpret_cast<std::uint8_t *>(storage[a].data());
      b.type = {halide_type_float, 32, 1};
      b.dimensions = d;
      b.dim = dims[a].data();
      if (!out) b.flags = halide_buffer_flag_host_dirty;
    }
  }
  ~Buffers() {
    for (auto &b : buffers)
      if (b.device) halide_device_free(nullptr, &b);
  }
  int outputs() const { return int(buffers.size()) - inputs; }
  halide_buffer_t &output(int i) { return buffers[inputs + i]; }
  // argv in the order of the variant's metadata (outputs in Tuple order).
  std::vector<void *> argv(const halide_filter_metadata_t *md, void **user_context) {
    std::vector<void *> args;
    int next_output = 0;
    for (int i = 0; i < md->num_arguments; i++) {
      const auto &m = md->arguments[i];
      if (m.kind == halide_argument_kind_output_buffer) {
        if (next_output == outputs()) throw std::runtime_error(std::string("no buffer for output ") + m.name);
        args.push_back(&output(next_output++));
        continue;
      }
      if (std::strcmp(m.name, "__user_context") == 0) {
        args.push_back(user_context);
        continue;
      }
      const auto at = std::find(names.begin(), names.end(), std::string(m.name)) - names.begin();
      if (at >= inputs) throw std::runtime_error(std::string("no argument ") + m.name);
      args.push_back(m.kind == halide_argument_kind_input_scalar ? static_cast<void *>(&scalars[at])
                                                                 : static_cast<void *>(&buffers[at]));
    }
    return args;
  }
};

void call(const BundleVariant &v, std::vector<void *> &args) {
  g_halide_error.clear();
  if (int e = v.argv(args.data())) throw std::runtime_error("error " + std::to_string(e) + ": " + g_halide_error);
}

// Runs every case; fills status/error/max_error and the time of `r`.
void measure(const BundleVariant &v, const BundleOp &op, double min_time, Record &r) {
  void *user_context = nullptr;
  r.status = "ok", r.error.clear(), r.max_error = 0;
  try {
    for (int c = op.case_count - 1; c >= 0; c--) {  // the timing case last, then timed
      const BundleCase &k = op.cases[c];
      Buffers b(k, 1234 + c);
      auto args = b.argv(v.metadata(), &user_context);
      call(v, args);
      std::vector<float> got;  // the Tuple elements one after another, as `expected`
      for (int o = 0; o < b.outputs(); o++) {
        if (halide_copy_to_host(nullptr, &b.output(o))) throw std::runtime_error("copy to host: " + g_halide_error);
        got.insert(got.end(), b.storage[k.arg_count + o].begin(), b.storage[k.arg_count + o].end());
      }
      std::size_t bad = 0, worst = 0;
      double worst_ratio = 0;
      for (std::size_t i = 0; i < got.size(); i++) {
        double ratio;
        if (k.expected) {
          const double limit = op.tol_abs + op.tol_rel * std::abs(k.expected[i]);
          const double err = std::abs(double(got[i]) - k.expected[i]);
          ratio = std::isnan(err) ? INFINITY : limit > 0 ? err / limit : err == 0 ? 0 : INFINITY;
          bad += !(err <= limit);
        } else {
          ratio = std::isnan(got[i]) ? INFINITY : 0;  // timing case: every element written
          bad += std::isnan(got[i]);
        }
        if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
      }
      r.max_error = std::max(r.max_error, std::isinf(worst_ratio) ? 1e300 : worst_ratio);
      if (bad) {
        std::ostringstream s;
        s << bad << " of " << got.size() << " elements " << (k.expected ? "out of tolerance" : "not written") << " at "
          << k.shape << "; worst at flat index " << worst << ": got " << got[worst];
        if (k.expected) s << ", expected " << k.expected[worst];
        r.status = "wrong", r.error = s.str();
        return;
      }
      if (c != 0) continue;
      r.shape = k.shape;
      Halide::Tools::BenchmarkConfig config;
      config.min_time = min_time;
      config.max_time = 4 * min_time;
      const auto result = Halide::Tools::benchmark(
          [&] {
            call(v, args);
            // Wait for the GPU (a CPU bundle's output has no device interface and nothing to wait for).
            for (int o = 0; o < b.outputs(); o++)
              if (b.output(o).device_interface && halide_device_sync(nullptr, &b.output(o)))
                throw std::runtime_error("sync: " + g_halide_error);
          },
          config);
      r.time_ms = result.wall_time * 1e3, r.samples = result.samples, r.iterations = result.iterations;
    }
  } catch (const std::exception &e) {
    r.status = "failed", r.error = std::string("run: ") + e.what();
  }
}

// --min-time: a finite number of seconds > 0, the whole argument (atof took "abc" as 0 and -5).
bool parse_min_time(const char *text, double &seconds) {
  char *end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !std::isfinite(v) || !(v > 0) ||
      std::isspace(static_cast<unsigned char>(*text)))
    return false;
  seconds = v;
  return true;
}

int run(int argc, char **argv) {
  std::string out = "results.jsonl";
  double min_time = 0.1;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "--min-time" && i + 1 < argc) {
      if (!parse_min_time(argv[++i], min_time)) {
        std::cerr << "hpipe-tune-bundle: --min-time: expected a number of seconds > 0, got '" << argv[i] << "'\n";
        return 2;
      }
    } else {
      std::cerr << "usage: " << argv[0] << " [--out results.jsonl] [--min-time seconds]\n"
                << "Verifies and times " << kVariantCount << (std::strstr(kTarget, "cuda") ? " CUDA" : " CPU")
                << " variants (" << kTarget << "), appending their records to --out.\n";
      return a == "--help" ? 0 : 2;
    }
  }
  const bool cuda = std::strstr(kTarget, "cuda") != nullptr;
  std::string gpu = "CPU (bundle)", why;
  if (cuda && !find_gpu(gpu, why)) {
    std::cerr << "hpipe-tune-bundle: no usable GPU: " << why << ". Run this bundle on a host with an NVIDIA GPU "
              << "and its driver; nothing was measured.\n";
    return 3;
  }
  // Before any measurement: an --out that cannot be written stopped the run after all of them.
  {
    std::ofstream probe(out, std::ios::app | std::ios::binary);
    if (!probe) {
      std::cerr << "hpipe-tune-bundle: --out " << out << ": cannot append to it: " << std::strerror(errno)
                << "; nothing was measured.\n";
      return 2;
    }
  }
  halide_set_error_handler(collect_error);
  std::cerr << "hpipe-tune-bundle: " << gpu << ", " << kVariantCount << " variants -> " << out << "\n";

  std::vector<Record> records;
  for (int i = 0; i < kVariantCount; i++) {
    const BundleVariant &v = kVariants[i];
    const BundleOp &op = kOps[v.op];
    Record r;
    r.op = op.name, r.backend = cuda ? "cuda" : "cpu", r.target = kTarget, r.machine = gpu, r.threads = 0;
    r.scheduler = v.scheduler, r.knobs = v.knobs, r.is_default = v.is_default;
    r.shape = op.cases[0].shape;
    measure(v, op, min_time, r);
    r.when = utc_now();
    append_record(out, r);
    records.push_back(r);
    std::cerr << "  [" << i + 1 << "/" << kVariantCount << "] " << op.name << " " << v.knobs << ": " << r.status;
    if (r.verified()) std::cerr << " " << r.time_ms << " ms";
    std::cerr << (r.error.empty() ? "" : " (" + r.error + ")") << "\n";
  }
  // Re-measure the three fastest verified knob variants of each op before they are accepted.
  for (int o = 0; o < kOpCount; o++) {
    std::vector<int> best;
    for (int i = 0; i < kVariantCount; i++)
      if (kVariants[i].op == o && records[i].verified() && records[i].scheduler == "knobs") best.push_back(i);
    std::sort(best.begin(), best.end(), [&](int a, int b) { return records[a].time_ms < records[b].time_ms; });
    best.resize(std::min<std::size_t>(best.size(), 3));
    for (int i : best) {
      Record r = records[i];
      measure(kVariants[i], kOps[o], min_time, r);
      r.phase = "confirm", r.when = utc_now();
      append_record(out, r);
    }
  }
  std::cerr << "hpipe-tune-bundle: wrote " << out << "; import it with `hpipe-tune import " << out << "`\n";
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {  // a record that cannot be appended (a full disk), the records so far kept
    std::cerr << "hpipe-tune-bundle: error: " << e.what() << "\n";
    return 1;
  }
}
