#include "hpipe/dot.h"

#include <array>
#include <string>
#include <utility>

#include "call.h"
#include "kernels.h"
#include "row_runs.h"

namespace hpipe {

using detail::Call;
using detail::shape_string;

namespace {

template <class T>
struct DotKernels;
template <>
struct DotKernels<float> {
  static constexpr auto rows = HPIPE_KERNEL(hpipe_batched_dot_f32);
  static constexpr auto columns = HPIPE_KERNEL(hpipe_batched_dot_columns_f32);
  static constexpr auto columns_partial = HPIPE_KERNEL(hpipe_batched_dot_columns_partial_f32);  // double out
};
template <>
struct DotKernels<double> {
  static constexpr auto rows = HPIPE_KERNEL(hpipe_batched_dot_f64);
  static constexpr auto columns = HPIPE_KERNEL(hpipe_batched_dot_columns_f64);
  static constexpr auto columns_partial = HPIPE_KERNEL(hpipe_batched_dot_columns_f64);
};

// Rows contiguous along N rather than K: a transposed view of a (K, N) array.
template <class T>
bool column_major(const View<const T, 2> &v) {
  return (v.stride(0) == 1 || v.shape(0) == 1) && v.stride(1) != 1 && v.shape(1) > 1;
}

template <class T>
View<const T, 2> transposed(const View<const T, 2> &v) {
  return View<const T, 2>(v.data(), {v.shape(1), v.shape(0)}, {v.stride(1), v.stride(0)}, v.memory());
}

// Few columns interleaved in one dense (K, N) array (the transposed view of it, N < 64): the column
// kernel would fill N of its vector lanes. The array is read instead as V = N * ceil(64 / N)
// columns of K * N / V rows (column l holds products of output l % N, 64 to a float partial sum as
// before), reduced to V sums in double; they and the last K * N % V products are combined here in
// double, rounded once. The accuracy bound of hpipe/dot.h is unchanged.
constexpr std::int64_t kInterleavedLanes = 64;

template <class T>
bool interleaved(const View<const T, 2> &v) {
  return v.memory() == Memory::host && v.stride(0) == 1 && v.stride(1) == v.shape(0) && v.shape(0) < kInterleavedLanes;
}

template <class T>
void dot_interleaved(Call &call, const View<const T, 2> &a, const View<const T, 2> &b, const View<T, 1> &out) {
  const std::int64_t n = a.shape(0), total = a.shape(0) * a.shape(1);
  const std::int64_t lanes = n * ((kInterleavedLanes + n - 1) / n), rows = total / lanes, covered = rows * lanes;
  // The kernel's views stop at `covered`; the tail after it is read here while out is written.
  detail::check_disjoint("batched_dot", "out", out, "a", a);
  detail::check_disjoint("batched_dot", "out", out, "b", b);
  Array<double, 1> partial({lanes});
  auto aa = call.input("a", View<const T, 2>(a.data(), {rows, lanes}));
  auto ba = call.input("b", View<const T, 2>(b.data(), {rows, lanes}));
  auto pa = call.output("partial sums", partial.view());
  call.output("out", out);  // registered for the aliasing checks; written below
  call.run(DotKernels<T>::columns_partial, aa, ba, pa);
  for (std::int64_t i = 0; i < n; i++) {
    double sum = 0;
    for (std::int64_t l = i; l < lanes; l += n) sum += partial.data()[l];
    for (std::int64_t j = covered + i; j < total; j += n) sum += double(a.data()[j]) * double(b.data()[j]);
    out.data()[i * out.stride(0)] = static_cast<T>(sum);
  }
}

// Rows shorter than the row kernel's block of 32 lanes make every product a scalar one in its tail,
// and each row pays a chunk's overhead (4 x 10^6 rows of 1 float32 took 39 ms, (a * b).sum(1) 30).
// Rows shorter than this take the column kernel on each task's transposed runs of a and b instead:
// on the Zen 3 VM (float32, from Python, row kernel / runs, transposes element by element) rows
// of 3, 7, 8 and 12 ran 1.5-4.5x faster from 16384 rows on, as fast or faster from 64 rows. With
// the transposes by tiles, on the Zen 5 VM (2026-11-29, row kernel / runs): float32 rows of 16 to
// 31 1.1-2x faster from 500 rows on (500 x 16: 9.4-9.6 / 6.4 us; 16384 x 31: 225-239 / 120-124 us;
// 10^6 x 16: 14.4-14.8 / 8.2-8.6 ms), 64 rows as fast; float64 as fast or faster (10^6 x 16: 17.6-18.5
// / 15.0-15.2 ms); rows of 32 and more faster on the row kernel in cache (4 x 10^6 elements as rows
// of 40: 1.4 / 1.6 ms). docs/performance-notes.md.
constexpr std::int64_t kShortDotRow = 32;

template <class T>
void dot_short_rows(const View<const T, 2> &a, const View<const T, 2> &b, const View<T, 1> &out,
                    const Options &options) {
  // The tasks' calls see only their runs' copies.
  detail::check_disjoint("batched_dot", "out", out, "a", a);
  detail::check_disjoint("batched_dot", "out", out, "b", b);
  Options on_cpu = options;
  on_cpu.device = Device::cpu;
  const std::array<detail::Rows<T>, 2> rows{detail::Rows<T>{a.data(), a.stride(0), a.stride(1)},
                                            detail::Rows<T>{b.data(), b.stride(0), b.stride(1)}};
  detail::for_each_transposed_run<T, 2>(rows, a.shape(0), a.shape(1), [&](std::int64_t first, const auto &runs) {
    Call call("batched_dot", on_cpu);
    auto aa = call.input("a", runs[0]);
    auto ba = call.input("b", runs[1]);
    auto oa = call.output("out", View<T, 1>(out.data() + first * out.stride(0), {runs[0].shape(1)}, {out.stride(0)}));
    call.run(DotKernels<T>::columns, aa, ba, oa);
  });
}

template <class T>
void dot_impl(View<const T, 2> a, View<const T, 2> b, View<T, 1> out, const Options &options) {
  Call call("batched_dot", options);
  if (a.shape(0) < 0 || a.shape(1) < 0) call.fail("a", "expected shape (N, K), got " + shape_string(a.shape()));
  if (b.shape() != a.shape())
    call.fail("b", "expected shape " + shape_string(a.shape()) + " (that of a), got " + shape_string(b.shape()));
  const std::array<std::int64_t, 1> rows{a.shape(0)};
  if (out.shape() != rows)
    call.fail("out",
              "expected shape " + shape_string(rows) + " (one value per row of a), got " + shape_string(out.shape()));
  if (const std::int64_t rows = detail::items_per_call(a, b); rows < a.shape(0)) {
    detail::check_disjoint("batched_dot", "out", out, "a", a);
    detail::check_disjoint("batched_dot", "out", out, "b", b);
    return detail::for_each_part(a.shape(0), rows, [&](std::int64_t i, std::int64_t n) {
      dot_impl<T>(detail::batch_part(a, i, n), detail::batch_part(b, i, n), detail::batch_part(out, i, n), options);
    });
  }
  if (a.shape(1) == 0 && a.shape(0) > 0) {  // empty rows: each dot product is 0, as NumPy's
    call.input("a", a);
    call.input("b", b);
    call.output("out", out);
    return call.run_filled(0);
  }
  // Both operands column-major: the column kernel reads them in place. Otherwise the row kernel,
  // which copies any operand whose K stride is not 1.
  if (column_major(a) && column_major(b) && interleaved(a) && interleaved(b) && out.memory() == Memory::host &&
      a.shape(0) * a.shape(1) >= 2 * kInterleavedLanes * kInterleavedLanes) {
    dot_interleaved(call, a, b, out);
    return;
  }
  if (column_major(a) && column_major(b)) {
    // On the CPU, the columns before a's and b's rows reach a cache line, where both reach one
    // together (detail::columns_before_line), run as a call of their own (transposed 4096 x 4096
    // float64 from 16 bytes into a line: 6.0-8.4 ms against 4.0-6.1 split, Zen 5).
    const View<const T, 2> at = transposed(a), bt = transposed(b);
    auto aa = call.input("a", at);
    auto ba = call.input("b", bt);
    auto oa = call.output("out", out);
    const std::int64_t lead = detail::columns_before_line(at);
    if (lead == 0 || lead != detail::columns_before_line(bt) || call.uses_cuda())
      return call.run(DotKernels<T>::columns, aa, ba, oa);
    // Each part's call sees only its columns.
    detail::check_disjoint("batched_dot", "out", out, "a", a);
    detail::check_disjoint("batched_dot", "out", out, "b", b);
    const auto columns = [](const View<const T, 2> &v, std::int64_t first, std::int64_t count) {
      return View<const T, 2>(v.data() + first * v.stride(1), {v.shape(0), count}, v.strides(), v.memory());
    };
    for (const auto &[first, count] : {std::pair{std::int64_t(0), lead}, std::pair{lead, at.shape(1) - lead}}) {
      Call part("batched_dot", options);
      auto ap = part.input("a", columns(at, first, count));
      auto bp = part.input("b", columns(bt, first, count));
      auto outp = part.output("out", detail::batch_part(out, first, count));
      part.run(DotKernels<T>::columns, ap, bp, outp);
    }
    return;
  }
  if (a.shape(1) < kShortDotRow && a.shape(0) > 1 && a.memory() == Memory::host && b.memory() == Memory::host) {
    // The views checked as a kernel's, and the backend.
    if (Call probe("batched_dot", options);
        probe.input("a", a), probe.input("b", b), probe.output("out", out), !probe.uses_cuda())
      return dot_short_rows(a, b, out, options);
  }
  auto aa = call.input("a", a);
  auto ba = call.input("b", b);
  auto oa = call.output("out", out);
  call.run(DotKernels<T>::rows, aa, ba, oa);
}

template <class T>
Array<T, 1> dot_allocating(View<const T, 2> a, View<const T, 2> b, const Options &options) {
  detail::check_kernel_buffer<T>("batched_dot", "a", detail::one_item(a.shape()));  // before the allocation
  Array<T, 1> out({a.shape(0)});
  dot_impl<T>(a, b, out.view(), options);
  return out;
}

}  // namespace

void batched_dot(View<const float, 2> a, View<const float, 2> b, View<float, 1> out, const Options &o) {
  dot_impl<float>(a, b, out, o);
}
void batched_dot(View<const double, 2> a, View<const double, 2> b, View<double, 1> out, const Options &o) {
  dot_impl<double>(a, b, out, o);
}
Array<float, 1> batched_dot(View<const float, 2> a, View<const float, 2> b, const Options &o) {
  return dot_allocating<float>(a, b, o);
}
Array<double, 1> batched_dot(View<const double, 2> a, View<const double, 2> b, const Options &o) {
  return dot_allocating<double>(a, b, o);
}

}  // namespace hpipe
