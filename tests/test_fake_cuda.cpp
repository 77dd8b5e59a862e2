// hpipe's CUDA host path on a machine without a GPU: the runtime and Halide's CUDA runtime against
// tests/fake_cuda, a libcuda.so.1 that runs no kernels (its device memory is host memory). What the
// caller sees is checked: every element of a host output comes back from the device (the NaN poison
// is gone; a strided view's gaps keep it), inputs are unchanged, device memory is used in place and
// without a wait, the driver's failures become hpipe::Error and leave the output alone, nothing is
// leaked, and no call touches device memory outside a live allocation (the fake's misuse record).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cuda_memory.h"
#include "fake_cuda/fake_cuda.h"
#include "test_util.h"

namespace hpipe::test {
namespace {

const Options kOnCuda{Device::cuda};

template <class T, int R>
bool has_nan(const View<T, R> &v) {
  for (double value : to_doubles(v))
    if (std::isnan(value)) return true;
  return false;
}

template <class T, int R>
bool same_values(const Array<T, R> &a, const Array<T, R> &b) {
  return std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(T)) == 0;
}

// The fake's counters around one call.
struct Counts {
  long long up, down, launches, waits;
  static Counts now() {
    return {hpipe_fake_cuda_calls("cuMemcpyHtoD"), hpipe_fake_cuda_calls("cuMemcpyDtoH"),
            hpipe_fake_cuda_calls("cuLaunchKernel"),
            hpipe_fake_cuda_calls("cuCtxSynchronize") + hpipe_fake_cuda_calls("cuStreamSynchronize")};
  }
  Counts since(const Counts &before) const {
    return {up - before.up, down - before.down, launches - before.launches, waits - before.waits};
  }
};

class FakeCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv("HPIPE_FAKE_CUDA_FAIL")) GTEST_SKIP() << "the fake driver is set to fail";
    ASSERT_TRUE(cuda_available()) << cuda_unavailable_reason();
  }
  void TearDown() override {
    EXPECT_STREQ(hpipe_fake_cuda_misuse(), "");
    hpipe_fake_cuda_clear_misuse();
  }
};

// The fake's own checks, on direct driver calls: they are what the tests above rely on.
extern "C" {
int cuMemAlloc_v2(std::uint64_t *pointer, std::size_t bytes);
int cuMemFree_v2(std::uint64_t pointer);
int cuMemcpyHtoD_v2(std::uint64_t to, const void *from, std::size_t bytes);
int cuMemcpyDtoH_v2(void *to, std::uint64_t from, std::size_t bytes);
int cuModuleLoadData(void **module, const void *image);
int cuModuleUnload(void *module);
int cuModuleGetFunction(void **function, void *module, const char *name);
int cuLaunchKernel(void *function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *stream,
                   void **, void **);
int cuStreamSynchronize(void *stream);
int halide_reuse_device_allocations(void *user_context, bool reuse);  // Halide's runtime, linked in with hpipe
}

TEST(FakeCudaDriver, RecordsMisuse) {
  auto misuse = [] {
    std::string m = hpipe_fake_cuda_misuse();
    hpipe_fake_cuda_clear_misuse();
    return m;
  };
  std::uint64_t block = 0;
  ASSERT_EQ(cuMemAlloc_v2(&block, 64), 0);
  float host[4] = {1, 2, 3, 4};
  EXPECT_NE(cuMemcpyHtoD_v2(block + 56, host, sizeof host), 0);  // 16 bytes from 56 of 64
  EXPECT_NE(misuse().find("not inside a live allocation"), std::string::npos);

  void *module = nullptr, *kernel = nullptr;
  ASSERT_EQ(cuModuleLoadData(&module, ".version 7.0\n.entry present()\n{ ret; }\n"), 0);
  EXPECT_NE(cuModuleGetFunction(&kernel, module, "absent"), 0);
  EXPECT_NE(misuse().find("no kernel absent"), std::string::npos);
  ASSERT_EQ(cuModuleGetFunction(&kernel, module, "present"), 0);

  int stream = 0;
  ASSERT_EQ(cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, &stream, nullptr, nullptr), 0);
  EXPECT_EQ(cuMemcpyDtoH_v2(host, block, sizeof host), 0);  // overtakes the stream's kernel
  EXPECT_NE(misuse().find("not waited for"), std::string::npos);
  ASSERT_EQ(cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, &stream, nullptr, nullptr), 0);
  ASSERT_EQ(cuStreamSynchronize(&stream), 0);
  EXPECT_EQ(cuMemcpyDtoH_v2(host, block, sizeof host), 0);
  EXPECT_EQ(misuse(), "");

  EXPECT_EQ(cuModuleUnload(module), 0);
  EXPECT_EQ(cuMemFree_v2(block), 0);
  EXPECT_NE(cuMemFree_v2(block), 0);  // twice
  EXPECT_NE(misuse().find("not a live allocation"), std::string::npos);
}

TEST_F(FakeCuda, HostArraysGoToTheDeviceAndBack) {
  const auto x = random_array<float, 2>({37, 53}, 1);
  const auto x_before = x;
  auto y = poisoned<float, 2>({37, 53});
  const Counts before = Counts::now();
  exp(x.view(), y.view(), kOnCuda);
  const Counts c = Counts::now().since(before);
  EXPECT_GE(c.up, 1);
  EXPECT_GE(c.down, 1);
  EXPECT_GE(c.launches, 1);
  EXPECT_FALSE(has_nan(y.view()));
  EXPECT_TRUE(same_values(x, x_before));
}

// Host arrays a few elements into a cache line, which the CPU paths split at the line
// (detail::columns_before_line): on CUDA each op is still the calls an array on a line makes.
TEST_F(FakeCuda, HostArraysOffACacheLineAreNotSplit) {
  constexpr std::int64_t rows = 300, pitch = 1024, columns = pitch - 16;  // past 1 MiB
  const auto space = random_array<float, 2>({rows, pitch}, 4);
  const View<const float, 2> on_line(space.data(), {rows, columns}, {pitch, 1}),
      off_line(space.data() + 1, {rows, columns}, {pitch, 1});
  const auto launches = [](const auto &run) {
    const Counts before = Counts::now();
    run();
    return Counts::now().since(before).launches;
  };
  auto out = poisoned<float, 1>({columns});
  const auto logsumexp_down = [&](const View<const float, 2> &x) {
    return launches([&] { logsumexp(x, 0, out.view(), kOnCuda); });
  };
  EXPECT_EQ(logsumexp_down(off_line), logsumexp_down(on_line));
  const auto transposed = [](const View<const float, 2> &x) {
    return View<const float, 2>(x.data(), {x.shape(1), x.shape(0)}, {x.stride(1), x.stride(0)});
  };
  const auto dot_of = [&](const View<const float, 2> &x) {
    return launches([&] { batched_dot(transposed(x), transposed(x), out.view(), kOnCuda); });
  };
  EXPECT_EQ(dot_of(off_line), dot_of(on_line));
}

TEST_F(FakeCuda, StridedHostOutputGetsItsElementsOnly) {
  const auto x = random_array<double, 2>({9, 14}, 2);
  auto base = poisoned<double, 2>({9, 29});
  View<double, 2> every_other(base.data() + 1, {9, 14}, {29, 2});
  log(x.view(), every_other, kOnCuda);
  EXPECT_FALSE(has_nan(every_other));
  for (std::int64_t i = 0; i < 9; i++)
    for (std::int64_t j = 0; j < 29; j += 2) EXPECT_TRUE(std::isnan(base.data()[i * 29 + j])) << i << ", " << j;
}

TEST_F(FakeCuda, DeviceMemoryIsUsedInPlaceWithoutWaiting) {
  const auto x = random_array<float, 1>({1000}, 3);
  DeviceMemory x_dev(x.data(), 1000 * sizeof(float));
  DeviceMemory y_dev(nullptr, 1000 * sizeof(float));
  const long long live = hpipe_fake_cuda_live_allocations();
  const Counts before = Counts::now();
  erf(View<const float, 1>(static_cast<const float *>(x_dev.get()), {1000}, Memory::cuda),
      View<float, 1>(static_cast<float *>(y_dev.get()), {1000}, Memory::cuda), kOnCuda);
  const Counts c = Counts::now().since(before);
  EXPECT_EQ(c.up, 0);
  EXPECT_EQ(c.down, 0);
  EXPECT_EQ(c.launches, 1);
  EXPECT_EQ(c.waits, 0);
  EXPECT_EQ(hpipe_fake_cuda_live_allocations(), live);
  auto x_after = poisoned<float, 1>({1000});
  x_dev.copy_to(x_after.data(), 1000 * sizeof(float));
  EXPECT_TRUE(same_values(x_after, x));
}

// Empty views (NumPy's empty results, tests/test_runtime.cpp): on CUDA too, no launch, no copy, no
// allocation; a null device pointer is accepted, as an empty torch tensor's is.
TEST_F(FakeCuda, EmptyViewsTouchNothing) {
  const auto x = random_array<float, 2>({3, 4}, 4);
  const long long live = hpipe_fake_cuda_live_allocations();
  const Counts before = Counts::now();
  exp(View<const float, 2>(nullptr, {0, 4}, Memory::cuda), View<float, 2>(nullptr, {0, 4}, Memory::cuda), kOnCuda);
  auto lse = poisoned<float, 1>({0});
  logsumexp(View<const float, 2>(x.data(), {0, 4}), 1, lse.view(), kOnCuda);
  const Array<float, 3> measurement = cassi_forward(View<const float, 4>(x.data(), {0, 3, 4, 1}),
                                                    Mask<float>(View<const float, 2>(x.data(), {4, 1})), {1}, kOnCuda);
  EXPECT_EQ(measurement.shape(), (std::array<std::int64_t, 3>{0, 4, 3}));
  const Counts c = Counts::now().since(before);
  EXPECT_EQ(c.up + c.down + c.launches + c.waits, 0);
  EXPECT_EQ(hpipe_fake_cuda_live_allocations(), live);
}

// A reduction over an empty axis into CUDA memory: its identity in every element of the view, the
// gaps between rows untouched, without a launch, on the default stream and on a caller's.
TEST_F(FakeCuda, EmptyReductionsGiveTheirIdentityInCudaMemory) {
  int stream_storage = 0;
  for (const bool callers_stream : {false, true}) {
    Options on_cuda = kOnCuda;
    if (callers_stream) on_cuda.cuda_stream = &stream_storage;
    const std::vector<float> poison(10, std::nanf(""));
    DeviceMemory out(poison.data(), poison.size() * sizeof(float));
    float *out_data = static_cast<float *>(out.get());
    const Counts before = Counts::now();
    // out (2, 3) with rows 5 apart, from x (2, 0, 3) along axis 1.
    logsumexp(View<const float, 3>(nullptr, {2, 0, 3}, Memory::cuda), 1,
              View<float, 2>(out_data, {2, 3}, {5, 1}, Memory::cuda), on_cuda);
    EXPECT_EQ(Counts::now().since(before).launches, 0);
    synchronize_cuda();
    std::vector<float> got(10);
    out.copy_to(got.data(), got.size() * sizeof(float));
    const float minus_inf = -std::numeric_limits<float>::infinity();
    for (int i = 0; i < 10; i++) {
      if (i % 5 < 3)
        EXPECT_EQ(got[i], minus_inf) << "element " << i;
      else
        EXPECT_TRUE(std::isnan(got[i])) << "gap " << i;
    }

    DeviceMemory dots(poison.data(), 3 * sizeof(double));
    batched_dot(View<const double, 2>(nullptr, {3, 0}, Memory::cuda),
                View<const double, 2>(nullptr, {3, 0}, Memory::cuda),
                View<double, 1>(static_cast<double *>(dots.get()), {3}, Memory::cuda), on_cuda);
    synchronize_cuda();
    std::vector<double> dots_got(3, 1.0);
    dots.copy_to(dots_got.data(), dots_got.size() * sizeof(double));
    EXPECT_EQ(dots_got, std::vector<double>(3, 0.0));
  }
}

// A caller's stream: the kernels go on it; with device memory the call returns without a wait,
// with host memory it waits for the stream before copying the result back (the copy runs on the
// default stream, which does not wait for others).
TEST_F(FakeCuda, CallersStreamOrdersTheWork) {
  int stream_storage = 0;
  Options on_stream = kOnCuda;
  on_stream.cuda_stream = &stream_storage;
  const auto x = random_array<float, 1>({300}, 11);
  DeviceMemory x_dev(x.data(), 300 * sizeof(float));
  DeviceMemory y_dev(nullptr, 300 * sizeof(float));
  const Counts before = Counts::now();
  exp(View<const float, 1>(static_cast<const float *>(x_dev.get()), {300}, Memory::cuda),
      View<float, 1>(static_cast<float *>(y_dev.get()), {300}, Memory::cuda), on_stream);
  EXPECT_EQ(hpipe_fake_cuda_launch_stream(), &stream_storage);
  EXPECT_EQ(Counts::now().since(before).waits, 0);

  auto y = poisoned<float, 1>({300});
  exp(x.view(), y.view(), on_stream);
  EXPECT_EQ(hpipe_fake_cuda_launch_stream(), &stream_storage);
  const long long launched = hpipe_fake_cuda_last_call("cuLaunchKernel"),
                  copied = hpipe_fake_cuda_last_call("cuMemcpyDtoH");
  const long long waited =
      std::max(hpipe_fake_cuda_last_call("cuStreamSynchronize"), hpipe_fake_cuda_last_call("cuCtxSynchronize"));
  EXPECT_LT(launched, waited);
  EXPECT_LT(waited, copied);
  EXPECT_FALSE(has_nan(y.view()));
}

// Every family's calls on host arrays, on the default stream and on a caller's: each output element
// comes back, inputs are unchanged (and no copy back overtakes the caller's stream: TearDown).
class FakeCudaStreams : public FakeCuda, public ::testing::WithParamInterface<bool> {
 protected:
  // kOnCuda, on the caller's stream for the second instance.
  Options on_cuda() {
    Options o = kOnCuda;
    if (GetParam()) o.cuda_stream = &stream_storage_;
    return o;
  }
  static constexpr std::int64_t B = 2, C = 3, H = 11, W = 13;
  const Dispersion d{2, Axis::width};

 private:
  int stream_storage_ = 0;
};
INSTANTIATE_TEST_SUITE_P(DefaultAndCallers, FakeCudaStreams, ::testing::Bool());

TEST_P(FakeCudaStreams, EveryFamilyOnHostArrays) {
  const Options on_cuda = this->on_cuda();
  const auto cube = random_array<float, 4>({B, C, H, W}, 4);
  const auto mask = random_array<float, 2>({H, W}, 5);
  const auto measurement = random_array<float, 3>({B, H, W + (C - 1) * 2}, 6);
  const auto cube_before = cube;
  const auto mask_before = mask;
  const auto measurement_before = measurement;

  auto y = poisoned<float, 3>({B, H, W + (C - 1) * 2});
  cassi_forward(cube.view(), Mask<float>(mask.view()), d, y.view(), on_cuda);
  EXPECT_FALSE(has_nan(y.view()));
  auto adjoint = poisoned<float, 4>({B, C, H, W}), pinv = poisoned<float, 4>({B, C, H, W});
  cassi_adjoint(measurement.view(), Mask<float>(mask.view()), d, adjoint.view(), on_cuda);
  cassi_pinv(measurement.view(), Mask<float>(mask.view()), d, pinv.view(), on_cuda);
  EXPECT_FALSE(has_nan(adjoint.view()));
  EXPECT_FALSE(has_nan(pinv.view()));
  auto dots = poisoned<float, 1>({H});
  batched_dot(mask.view(), mask.view(), dots.view(), on_cuda);
  EXPECT_FALSE(has_nan(dots.view()));
  auto full = poisoned<float, 2>({H, 2 * W - 1});
  conv1d(mask.view(), mask.view(), ConvMode::full, full.view(), on_cuda);
  EXPECT_FALSE(has_nan(full.view()));
  for (int axis : {0, 1}) {
    auto lse = poisoned<float, 1>({axis == 0 ? W : H});
    logsumexp(mask.view(), axis, lse.view(), on_cuda);
    EXPECT_FALSE(has_nan(lse.view())) << "axis " << axis;
  }
  for (bool vectorial : {false, true}) {
    auto denoised = poisoned<float, 4>({B, C, H, W});
    tv_denoise(cube.view(), TvParams{0.1, 4, vectorial}, denoised.view(), on_cuda);
    EXPECT_FALSE(has_nan(denoised.view())) << "vectorial " << vectorial;
    ReconParams params;
    params.dispersion = d, params.iterations = 3, params.tv.vectorial = vectorial;
    int reported = 0;
    const IterationCallback count = [&](const IterationInfo &) { reported++; };
    auto gap = poisoned<float, 4>({B, C, H, W}), admm = poisoned<float, 4>({B, C, H, W});
    gap_tv(measurement.view(), Mask<float>(mask.view()), params, gap.view(), count, on_cuda);
    admm_tv(measurement.view(), Mask<float>(mask.view()), params, admm.view(), count, on_cuda);
    EXPECT_FALSE(has_nan(gap.view())) << "vectorial " << vectorial;
    EXPECT_FALSE(has_nan(admm.view())) << "vectorial " << vectorial;
    EXPECT_EQ(reported, 2 * params.iterations);
  }
  EXPECT_TRUE(same_values(cube, cube_before));
  EXPECT_TRUE(same_values(mask, mask_before));
  EXPECT_TRUE(same_values(measurement, measurement_before));
}

// A reconstruction on CUDA copies its inputs and state to the device once and its result back
// once, whatever its iteration count (each step copied its cubes both ways before); with a
// progress callback each iteration brings back only its measurement A x (nothing without
// report_residual). Nothing stays allocated.
TEST_P(FakeCudaStreams, ReconstructionStateStaysOnTheDevice) {
  const Options on_cuda = this->on_cuda();
  const auto measurement = random_array<float, 3>({B, H, W + (C - 1) * 2}, 5);
  const auto shared = random_array<float, 2>({H, W}, 6, 0.1, 1.0);
  const auto per_band = random_array<float, 3>({C, H, W}, 7, 0.1, 1.0);
  for (ReconMethod method : {ReconMethod::gap_tv, ReconMethod::admm_tv})
    for (bool band_mask : {false, true})
      for (bool vectorial : {false, true}) {
        SCOPED_TRACE(std::string(to_string(method)) + (band_mask ? " per-band mask" : " shared mask") +
                     (vectorial ? " vectorial" : ""));
        const Mask<float> mask = band_mask ? Mask<float>(per_band.view()) : Mask<float>(shared.view());
        bool report_residual = true;
        const auto run = [&](int iterations, const IterationCallback &progress) {
          ReconParams params;
          params.dispersion = d, params.iterations = iterations, params.tv.vectorial = vectorial;
          params.report_residual = report_residual;
          auto x = poisoned<float, 4>({B, C, H, W});
          const long long live = hpipe_fake_cuda_live_allocations();
          const Counts before = Counts::now();
          if (method == ReconMethod::gap_tv) {
            gap_tv(measurement.view(), mask, params, x.view(), progress, on_cuda);
          } else {
            admm_tv(measurement.view(), mask, params, x.view(), progress, on_cuda);
          }
          EXPECT_FALSE(has_nan(x.view()));
          EXPECT_LE(hpipe_fake_cuda_live_allocations(), live + 16);  // blocks Halide's runtime keeps for reuse
          return Counts::now().since(before);
        };
        const Counts two = run(2, {}), seven = run(7, {});
        EXPECT_EQ(seven.up, two.up);
        EXPECT_EQ(seven.down, two.down);
        EXPECT_GT(seven.launches, two.launches);
        int reported = 0;
        const Counts seven_reported = run(7, [&](const IterationInfo &) { reported++; });
        EXPECT_EQ(reported, 7);
        EXPECT_EQ(seven_reported.down, seven.down + 7);  // A x of each iteration
        EXPECT_LE(seven_reported.up, seven.up + 7);      // at most the mask, where a call copies it
        report_residual = false;                         // the callback without the residual: nothing more comes back
        EXPECT_EQ(run(7, [&](const IterationInfo &) { reported++; }).down, seven.down);
        EXPECT_EQ(reported, 14);
        report_residual = true;
      }
}

// A reconstruction given CUDA memory reads it in place: y, the mask (shared or per band) and x on
// the device, nothing comes back but what a callback's residual reads (y once, A x per iteration),
// and only the auxiliary array's zeros go up. A host x beside device inputs gets its result copied
// down once. Views the kernels could not take in place are refused before any work.
TEST_P(FakeCudaStreams, ReconstructionReadsCudaMemoryInPlace) {
  const Options on_cuda = this->on_cuda();
  const std::int64_t Wy = W + (C - 1) * 2;
  const auto measurement = random_array<float, 3>({B, H, Wy}, 16);
  const auto shared = random_array<float, 2>({H, W}, 17, 0.1, 1.0);
  const auto per_band = random_array<float, 3>({C, H, W}, 18, 0.1, 1.0);
  DeviceMemory y_dev(measurement.data(), measurement.size() * sizeof(float));
  DeviceMemory shared_dev(shared.data(), shared.size() * sizeof(float));
  DeviceMemory per_band_dev(per_band.data(), per_band.size() * sizeof(float));
  const auto poison = poisoned<float, 4>({B, C, H, W});
  DeviceMemory x_dev(poison.data(), poison.size() * sizeof(float));
  const View<const float, 3> y(static_cast<const float *>(y_dev.get()), {B, H, Wy}, Memory::cuda);
  const View<float, 4> x(static_cast<float *>(x_dev.get()), {B, C, H, W}, Memory::cuda);
  for (ReconMethod method : {ReconMethod::gap_tv, ReconMethod::admm_tv})
    for (bool band_mask : {false, true}) {
      SCOPED_TRACE(std::string(to_string(method)) + (band_mask ? " per-band mask" : " shared mask"));
      const Mask<float> mask =
          band_mask
              ? Mask<float>(
                    View<const float, 3>(static_cast<const float *>(per_band_dev.get()), {C, H, W}, Memory::cuda))
              : Mask<float>(View<const float, 2>(static_cast<const float *>(shared_dev.get()), {H, W}, Memory::cuda));
      const auto run = [&](View<float, 4> out, const IterationCallback &progress, const Options &options) {
        ReconParams params;
        params.dispersion = d, params.iterations = 4;
        const long long live = hpipe_fake_cuda_live_allocations();
        const Counts before = Counts::now();
        if (method == ReconMethod::gap_tv) {
          gap_tv(y, mask, params, out, progress, options);
        } else {
          admm_tv(y, mask, params, out, progress, options);
        }
        EXPECT_LE(hpipe_fake_cuda_live_allocations(), live + 16);  // blocks Halide's runtime keeps for reuse
        return Counts::now().since(before);
      };
      const Counts in_place = run(x, {}, on_cuda);
      EXPECT_EQ(in_place.up, 1);  // the auxiliary array's zeros
      EXPECT_EQ(in_place.down, 0);
      EXPECT_GT(in_place.launches, 4);
      int reported = 0;
      const Counts reporting = run(
          x, [&](const IterationInfo &) { reported++; }, on_cuda);
      EXPECT_EQ(reported, 4);
      EXPECT_EQ(reporting.down, 1 + 4);  // y once, A x per iteration
      EXPECT_EQ(reporting.up, in_place.up);
      auto host_x = poisoned<float, 4>({B, C, H, W});
      EXPECT_EQ(run(host_x.view(), {}, on_cuda).down, 1);
      EXPECT_FALSE(has_nan(host_x.view()));
    }
  std::vector<float> back(static_cast<std::size_t>(measurement.size()));
  y_dev.copy_to(back.data(), back.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(back.data(), measurement.data(), back.size() * sizeof(float)), 0);  // y unchanged

  const auto refused = [&](const View<const float, 3> &y_view, const Options &options) -> std::string {
    ReconParams params;
    params.dispersion = d, params.iterations = 2;
    const Counts before = Counts::now();
    try {
      gap_tv(y_view, Mask<float>(shared.view()), params, x, {}, options);
    } catch (const Error &e) {
      const Counts c = Counts::now().since(before);
      EXPECT_EQ(c.up + c.down + c.launches, 0) << e.what();  // before any work
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(refused(y, Options{Device::cpu}), "hpipe::gap_tv: y: is in CUDA memory but the device is cpu");
  // Every other element of rows twice as long: an innermost stride of 2 (the backend's errors first).
  DeviceMemory wide(nullptr, measurement.size() * 2 * sizeof(float));
  const View<const float, 3> strided(static_cast<const float *>(wide.get()), {B, H, Wy}, {H * Wy * 2, Wy * 2, 2},
                                     Memory::cuda);
  EXPECT_EQ(refused(strided, on_cuda), "hpipe::gap_tv: y: a view in CUDA memory needs an innermost stride of 1");
  EXPECT_EQ(refused(strided, Options{Device::cpu}), "hpipe::gap_tv: y: is in CUDA memory but the device is cpu");

  // One item whose batch stride, never used, is past 2^31: the residual's copy of y takes it too.
  const View<const float, 3> one_item(y.data(), {1, H, Wy}, {std::int64_t(1) << 32, Wy, 1}, Memory::cuda);
  ReconParams params;
  params.dispersion = d, params.iterations = 2;
  int reported = 0;
  auto x_one = poisoned<float, 4>({1, C, H, W});
  gap_tv(
      one_item, Mask<float>(shared.view()), params, x_one.view(), [&](const IterationInfo &) { reported++; }, on_cuda);
  EXPECT_EQ(reported, 2);
  // The same in host memory, copied to the device.
  const View<const float, 3> host_item(measurement.data(), {1, H, Wy}, {std::int64_t(1) << 32, Wy, 1});
  gap_tv(host_item, Mask<float>(shared.view()), params, x_one.view(), {}, on_cuda);
}

// A driver failure anywhere in a reconstruction on CUDA (placing its state, a step, a copy back): an
// hpipe::Error, no device memory left behind, and the next run works. The runtime's reuse of device
// blocks is off for it, so that every run allocates and frees.
TEST_F(FakeCuda, ReconstructionDriverFailuresAreErrorsThatLeakNothing) {
  struct NoReuse {
    NoReuse() { halide_reuse_device_allocations(nullptr, false); }
    ~NoReuse() { halide_reuse_device_allocations(nullptr, true); }
  } no_reuse;
  const std::int64_t C = 3, H = 9, W = 10;
  const auto mask = random_array<float, 2>({H, W}, 13, 0.1, 1.0);
  ReconParams params;
  params.iterations = 3;
  const auto measurement = random_array<float, 3>({2, H, W + (C - 1) * 2}, 12);
  const auto run = [&] {
    auto x = poisoned<float, 4>({2, C, H, W});
    admm_tv(measurement.view(), Mask<float>(mask.view()), params, x.view(), {}, kOnCuda);
    return x;
  };
  for (const char *entry : {"cuMemAlloc_v2", "cuMemcpyHtoD", "cuLaunchKernel", "cuMemcpyDtoH"}) {
    int failed = 0;
    for (long long after : {0, 1, 2, 3, 5, 8, 13}) {
      SCOPED_TRACE(std::string(entry) + " after " + std::to_string(after));
      const long long live = hpipe_fake_cuda_live_allocations();
      hpipe_fake_cuda_fail(entry, after, 2);  // twice: a failed allocation is tried again
      try {
        run();
      } catch (const Error &e) {
        EXPECT_EQ(std::string(e.what()).rfind("hpipe::", 0), 0u) << e.what();
        failed++;
      }
      hpipe_fake_cuda_fail("", 0, 0);
      EXPECT_EQ(hpipe_fake_cuda_live_allocations(), live);
      EXPECT_FALSE(has_nan(run().view()));
    }
    // The failure points that fall within a run: a run copies down only its result.
    EXPECT_GE(failed, std::string(entry) == "cuMemcpyDtoH" ? 1 : 2) << entry;
  }
}

// A whole run's views are checked as a kernel's before any copy: a y whose stride is past 2^31
// elements was copied to the device with the stride cut to 32 bits (a crash) where the CPU refuses it.
TEST_F(FakeCuda, ReconstructionRefusesWhatAKernelWouldBeforeCopying) {
  const std::int64_t C = 3, H = 9, W = 10;
  const auto mask = random_array<float, 2>({H, W}, 14, 0.1, 1.0);
  const auto rows = random_array<float, 2>({H, W + (C - 1) * 2}, 15);
  // Two items (H, W') apart by 2^31 elements: the view never reads between them.
  const View<const float, 3> y(rows.data(), {2, H, W + (C - 1) * 2}, {std::int64_t(1) << 31, W + (C - 1) * 2, 1});
  auto x = poisoned<float, 4>({2, C, H, W});
  ReconParams params;
  params.iterations = 2;
  for (const Options &options : {kOnCuda, Options{Device::cpu}}) {
    try {
      gap_tv(y, Mask<float>(mask.view()), params, x.view(), {}, options);
      ADD_FAILURE() << "no error";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("hpipe::gap_tv: y: dimension 0 exceeds 2^31"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_TRUE(has_nan(x.view()));  // untouched
}

TEST_F(FakeCuda, RepeatedCallsHoldNoMoreDeviceMemory) {
  const auto x = random_array<float, 3>({4, 30, 41}, 7);
  auto y = poisoned<float, 3>({4, 30, 41});
  exp(x.view(), y.view(), kOnCuda);
  const long long live = hpipe_fake_cuda_live_allocations();
  for (int i = 0; i < 20; i++) exp(x.view(), y.view(), kOnCuda);
  EXPECT_EQ(hpipe_fake_cuda_live_allocations(), live);
}

// A driver failure at each step of a call on host arrays: an hpipe::Error naming the op, the
// output left as it was, nothing leaked, and the next call works.
TEST_F(FakeCuda, DriverFailuresAreErrorsThatLeaveTheOutputAlone) {
  const auto x = random_array<float, 2>({23, 31}, 8);
  auto y = poisoned<float, 2>({23, 31});
  exp(x.view(), y.view(), kOnCuda);  // modules loaded, device buffers cached
  // A larger shape: the first call allocates (rather than reusing the buffers above); later ones reuse.
  const auto x2 = random_array<float, 2>({97, 89}, 9);
  for (const char *entry : {"cuMemAlloc_v2", "cuMemcpyHtoD", "cuLaunchKernel", "cuMemcpyDtoH"}) {
    SCOPED_TRACE(entry);
    auto y2 = poisoned<float, 2>({97, 89});
    const long long live = hpipe_fake_cuda_live_allocations();
    // Twice: a failed allocation is tried again once the runtime has freed the buffers it keeps.
    hpipe_fake_cuda_fail(entry, 0, 2);
    try {
      exp(x2.view(), y2.view(), kOnCuda);
      ADD_FAILURE() << "no error";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("hpipe::exp"), std::string::npos) << e.what();
    }
    if (std::string(entry) != "cuMemcpyDtoH") EXPECT_TRUE(has_nan(y2.view()));
    EXPECT_LE(hpipe_fake_cuda_live_allocations(), live + 2);  // at most the two buffers, cached for reuse
    hpipe_fake_cuda_fail("", 0, 0);
    exp(x2.view(), y2.view(), kOnCuda);
    EXPECT_FALSE(has_nan(y2.view()));
  }
}

// Run with HPIPE_FAKE_CUDA_FAIL=cuInit (ctest fake_cuda_driver_unusable): the driver loads but does
// not initialize.
TEST(FakeCudaUnusable, AutomaticRunsOnTheCpuAndCudaSaysWhy) {
  const char *failing = std::getenv("HPIPE_FAKE_CUDA_FAIL");
  if (!failing || std::string(failing) != "cuInit") GTEST_SKIP() << "needs HPIPE_FAKE_CUDA_FAIL=cuInit";
  EXPECT_FALSE(cuda_available());
  EXPECT_NE(cuda_unavailable_reason().find("cuInit"), std::string::npos) << cuda_unavailable_reason();
  const auto x = random_array<double, 1>({100}, 10);
  auto y = poisoned<double, 1>({100});
  exp(x.view(), y.view(), Options{Device::automatic});
  for (std::int64_t i = 0; i < 100; i++) EXPECT_NEAR(y.data()[i], std::exp(x.data()[i]), 4e-16 * std::exp(x.data()[i]));
  try {
    exp(x.view(), y.view(), kOnCuda);
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("CUDA was requested"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hpipe::test
