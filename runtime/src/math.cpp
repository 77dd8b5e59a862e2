#include "hpipe/math.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "block_cache.h"
#include "call.h"
#include "kernels.h"
#include "nd_index.h"
#include "row_runs.h"
#include "thread_pool.h"

namespace hpipe {

using detail::Call;
using detail::fail;
using detail::for_each_index;
using detail::offset_of;
using detail::shape_string;

namespace {

template <class T>
struct MathKernels;

// logsumexp_partial (contiguous rows, logsumexp_row_lanes) and logsumexp_columns_partial (segments of
// columns, logsumexp_column_part): x's type in, double out (float64 partial results of float32
// input). logsumexp_rows (the rows kernel): logsumexp_cached_rows.
#define HPIPE_MATH_KERNELS(T, suffix, partial, columns_partial)                              \
  template <>                                                                                \
  struct MathKernels<T> {                                                                    \
    static constexpr auto exp = HPIPE_STREAMING_KERNEL(hpipe_math_exp_##suffix);             \
    static constexpr auto log = HPIPE_STREAMING_KERNEL(hpipe_math_log_##suffix);             \
    static constexpr auto erf = HPIPE_STREAMING_KERNEL(hpipe_math_erf_##suffix);             \
    static constexpr auto logsumexp = HPIPE_KERNEL(hpipe_math_logsumexp_##suffix);           \
    static constexpr auto logsumexp_partial = HPIPE_KERNEL(partial);                         \
    static constexpr auto logsumexp_columns_partial = HPIPE_KERNEL(columns_partial);         \
    static constexpr auto logsumexp_rows = HPIPE_KERNEL(hpipe_math_logsumexp_rows_##suffix); \
  };
HPIPE_MATH_KERNELS(float, f32, hpipe_math_logsumexp_partial_f32, hpipe_math_logsumexp_columns_partial_f32)
HPIPE_MATH_KERNELS(double, f64, hpipe_math_logsumexp_f64, hpipe_math_logsumexp_f64)
#undef HPIPE_MATH_KERNELS

// Elements of one elementwise kernel call: keeps every buffer under Halide's 2 GiB.
constexpr std::int64_t kPieceElements = std::int64_t(1) << 27;

template <class V>
bool dense(const V &v) {
  return v.strides() == V::dense_strides(v.shape());
}

// Extent and stride of dimensions [first, last) merged into one, if their strides allow it.
struct Merged {
  std::int64_t extent = 1, stride = 1;
  bool ok = true;
};
template <class V>
Merged merge(const V &v, int first, int last) {
  Merged m;
  if (first >= last) return m;
  m.extent = v.shape(last - 1);
  m.stride = v.stride(last - 1);
  for (int d = last - 2; d >= first; d--) {
    if (v.shape(d) == 1) continue;
    if (m.extent > 1 && v.stride(d) != m.stride * m.extent) m.ok = false;
    if (m.extent == 1) m.stride = v.stride(d);
    m.extent *= v.shape(d);
  }
  return m;
}

template <class T, int N>
bool same_view(const View<const T, N> &x, const View<T, N> &y) {
  if (x.data() != y.data() || x.memory() != y.memory() || x.shape() != y.shape()) return false;
  for (int d = 0; d < N; d++)
    if (x.shape(d) > 1 && x.stride(d) != y.stride(d)) return false;
  return true;
}

// In place (y the view x is): the CPU kernels step through whole vectors, the last one shifted back
// over the one before (schedules/math_cpu.cpp), which would read elements already written. A
// multiple of kInPlaceLanes elements is whole vectors of every CPU variant (at most 16 floats a
// vector, times a vector_factor of 1, 2 or 4: MathElementwiseCpuKnobs); the rest of a row is
// computed from a copy. CUDA kernels read each element in the thread that writes it: views in
// device memory run as one call.
constexpr std::int64_t kInPlaceLanes = 64;

template <class T, class K>
void run_elementwise_1d(const char *op, const K &kernel, View<const T, 1> x, View<T, 1> y, bool in_place,
                        const Options &options) {
  const std::int64_t n = x.shape(0);
  const std::int64_t whole = in_place && x.memory() == Memory::host ? n - n % kInPlaceLanes : n;
  if (whole > 0 || n == 0) {  // an empty call still checks the device, as every call does
    Call call(op, options);
    auto xa = call.input("x", View<const T, 1>(x.data(), {whole}, x.strides(), x.memory()));
    const View<T, 1> head(y.data(), {whole}, y.strides(), y.memory());
    auto ya = in_place ? call.output_over("y", head, xa) : call.output("y", head);
    call.run(kernel, xa, ya);
  }
  if (whole == n) return;
  alignas(64) std::array<T, kInPlaceLanes> rest;
  for (std::int64_t i = whole; i < n; i++) rest[std::size_t(i - whole)] = x.data()[i * x.stride(0)];
  Call call(op, options);
  auto xa = call.input("x", View<const T, 1>(rest.data(), {n - whole}));
  auto ya = call.output("y", View<T, 1>(y.data() + whole * y.stride(0), {n - whole}, y.strides(), y.memory()));
  call.run(kernel, xa, ya);
}

// A 2-D x of strided rows into a dense y (a transposed array into a C-order out=): one call per
// row gathered each row from elements a stride apart (exp of 2000 x 2000 float32: 35 ms against 1.9
// dense, Zen 3). Instead x is cut into tiles of the rows one cache line of its columns holds, each
// gathered into dense scratch by a transpose that reads x along its own contiguous axis, then
// computed from there into y by one flat call. Tiles span whole rows where there are rows enough
// to give every thread tasks and a tile stays within kMostGatherTileBytes, else as few blocks of
// columns as that takes, a call per row of a tile (runs of single rows read each line of x once
// per row, and runs of whole rows left threads idle: 200 x 20000 float32 3.1 ms, 8 x 500000 2.8 ms
// against 0.5 dense; docs/performance-notes.md).
constexpr std::int64_t kMostGatherTileBytes = std::int64_t(4) << 20;
template <class T, class K>
void elementwise_gathered_rows(const char *op, const K &kernel, const View<const T, 2> &x, const View<T, 2> &y,
                               const Options &options) {
  const std::int64_t rows = x.shape(0), columns = x.shape(1), bytes = sizeof(T);
  Options on_cpu = options;
  on_cpu.device = Device::cpu;
  // Rows 0 elements apart (a broadcast x) take a line's worth too.
  const std::int64_t line_rows = 64 / bytes / std::max<std::int64_t>(1, std::abs(x.stride(0)));
  const std::int64_t tile_rows = std::min(rows, std::max<std::int64_t>(1, line_rows));
  const std::int64_t row_tiles = (rows + tile_rows - 1) / tile_rows;
  const std::int64_t tasks_wanted = detail::kTasksPerThread * num_threads();
  const std::int64_t blocks =
      std::min(columns, std::max((tasks_wanted + row_tiles - 1) / row_tiles,
                                 (tile_rows * columns * bytes + kMostGatherTileBytes - 1) / kMostGatherTileBytes));
  const std::int64_t tile_columns = (columns + blocks - 1) / blocks;
  const std::int64_t column_tiles = (columns + tile_columns - 1) / tile_columns;  // none empty
  detail::for_each_run(
      row_tiles * column_tiles, tile_rows * tile_columns * bytes, 1, [&](std::int64_t first, std::int64_t end) {
        const detail::ScratchArray<T, 1> scratch({tile_rows * tile_columns});
        for (std::int64_t tile = first; tile < end; tile++) {
          const std::int64_t r0 = tile / column_tiles * tile_rows, c0 = tile % column_tiles * tile_columns;
          const std::int64_t count = std::min(tile_rows, rows - r0), width = std::min(tile_columns, columns - c0);
          // Rows [r0, r0 + count) of x's columns [c0, c0 + width), as (width, count) transposed: dense rows.
          detail::transpose_rows(
              detail::Rows<T>{x.data() + r0 * x.stride(0) + c0 * x.stride(1), x.stride(1), x.stride(0)}, 0, width,
              count, scratch.data(), width);
          const bool whole_rows = width == columns;
          for (std::int64_t r = 0; r < (whole_rows ? 1 : count); r++) {
            const std::int64_t elements = whole_rows ? count * width : width;
            run_elementwise_1d<T>(op, kernel, View<const T, 1>(scratch.data() + r * width, {elements}),
                                  View<T, 1>(y.data() + (r0 + r) * columns + c0, {elements}), false, on_cpu);
          }
        }
      });
}

template <class T, int N, class K>
void elementwise(const char *op, const K &kernel, View<const T, N> x, View<T, N> y, const Options &options) {
  detail::check_extents(op, "x", x);
  if (x.data() == nullptr && x.size() > 0) fail(op, "x", "data pointer is null");  // strided rows are gathered first
  if (x.shape() != y.shape())
    fail(op, "y", "expected shape " + shape_string(x.shape()) + " (the shape of x), got " + shape_string(y.shape()));
  // On the whole views: each call below sees only a piece or a row of them. y may be x itself.
  const bool in_place = same_view(x, y);
  if (!in_place) detail::check_disjoint(op, "y", y, "x", x);
  if (x.size() == 0)  // NumPy's empty result: no kernel runs, but the call checks the device
    return run_elementwise_1d<T>(op, kernel, View<const T, 1>(x.data(), {0}, x.memory()),
                                 View<T, 1>(y.data(), {0}, y.memory()), false, options);
  if (dense(x) && dense(y)) {
    for (std::int64_t first = 0; first < x.size(); first += kPieceElements) {
      const std::int64_t n = std::min(kPieceElements, x.size() - first);
      run_elementwise_1d<T>(op, kernel, View<const T, 1>(x.data() + first, {n}, x.memory()),
                            View<T, 1>(y.data() + first, {n}, y.memory()), in_place, options);
    }
    return;
  }
  if constexpr (N == 2) {
    // Gathered where x's rows are closer together than its columns (a transposed x): the gather
    // then reads along x's nearer axis (for x's own rows a stride apart, the row path's copies are
    // faster: 4000 x 1024 every other column, 7.9-8.1 ms against 13.4-15.6 gathered).
    if (dense(y) && x.shape(1) > 1 && x.stride(1) != 1 && std::abs(x.stride(0)) < std::abs(x.stride(1)) && !in_place &&
        x.memory() == Memory::host) {
      // A row past a kernel buffer's limits fails whichever way it runs: said of y as given.
      if (y.shape(1) * std::int64_t(sizeof(T)) > detail::kMostKernelBufferBytes)
        detail::check_kernel_buffer<T>(op, "y", y.shape());
      // The backend from a row of y (x, in host memory, runs anywhere; y may pass a kernel buffer's
      // limits, which only each run's call must keep).
      if (Call probe(op, options);
          probe.output("y", View<T, 2>(y.data(), {1, y.shape(1)}, y.memory())), !probe.uses_cuda())
        return elementwise_gathered_rows<T>(op, kernel, x, y, options);
    }
  }
  // Any other layout: one call per innermost row (a strided row is copied densely by Call).
  const auto outer = [](const auto &extents) { return detail::first_dims<N - 1>(extents); };
  for_each_index(outer(x.shape()), [&](const auto &row) {
    const std::int64_t xo = offset_of(row, outer(x.strides())), yo = offset_of(row, outer(y.strides()));
    run_elementwise_1d<T>(op, kernel, View<const T, 1>(x.data() + xo, {x.shape(N - 1)}, {x.stride(N - 1)}, x.memory()),
                          View<T, 1>(y.data() + yo, {y.shape(N - 1)}, {y.stride(N - 1)}, y.memory()), in_place,
                          options);
  });
}

// The elements of a host view, in C order, into `next`.
template <class T, int N>
void copy_dense(const View<T, N> &v, std::remove_const_t<T> *next) {
  for_each_index(v.shape(), [&](const auto &index) { *next++ = v.data()[offset_of(index, v.strides())]; });
}

template <class T, int N>
std::array<std::int64_t, N - 1> without_axis(const std::array<std::int64_t, N> &shape, int axis) {
  std::array<std::int64_t, N - 1> out{};
  for (int d = 0, j = 0; d < N; d++)
    if (d != axis) out[j++] = shape[d];
  return out;
}

template <class T, int N>
int normalized_axis(const char *op, int axis) {
  if (axis < -N || axis >= N)
    fail(op, "axis",
         "expected an axis in [" + std::to_string(-N) + ", " + std::to_string(N) + ") for a " + std::to_string(N) +
             "-D x, got " + std::to_string(axis));
  return axis < 0 ? axis + N : axis;
}

// logsumexp along contiguous rows (the last axis, or a 1-D x), without a transposed copy: a row of
// n is read as (n / kRowLanes) x kRowLanes blocks, which the kernel reduces down the blocks, one
// vector at a time, to kRowLanes partial results in double; they and the row's last n % kRowLanes elements
// are then combined here in double, rounded once. Few rows are cut into segments (one kernel
// "column block" each) so that every thread has work.
// One AVX-512 vector of float32: 10^4 rows of 10^4 took 34 ms, against 42 with 32 lanes and 55 with 64
// (JIT, 2-core Zen 4, 2026-11-24).
constexpr std::int64_t kRowLanes = 16;
// Contiguous rows of at least kLanesFrom elements take the lanes path (one pass over memory),
// shorter ones of at least kRowsKernelFrom the rows kernel on the CPU (logsumexp_cached_rows: two
// passes, the second from cache), the short rows' path below elsewhere. The rows kernel was the
// faster at every length measured up to 10^5, but for a single float64 row (from Python, medians of 15-31 calls, Zen 5
// VM, 2026-11-29, lanes path / rows kernel in ms: float32 2000 x 2048 1.25-1.58 / 0.69-0.71, 10^4 x 10^4 23.6-24.7
// / 18.7-20.2, 64 x 10^5 1.32-1.52 / 1.02-1.11, one row of 10^5 0.036-0.048 / 0.024-0.025; float64 10^4 x 10^4 87-89 /
// 48-50, 64 x 10^5 5.5-5.6 / 2.9-3.4, one row of 10^5 0.064-0.067 / 0.071-0.074). Longer rows (from 512 KiB of float32,
// half a Zen 3 core's L2 and more) keep the lanes path, whose one pass suits rows that do not stay in cache.
constexpr std::int64_t kLanesFrom = std::int64_t(1) << 17;
// Fewer rows than this take the lanes path from kRowLanes elements on where the rows kernel does
// not take them (float32 rows shorter than kRowsKernelFrom, and on CUDA): the short rows' kernel
// would fill few of its vector lanes, and a single row cannot go that way (float32 rows of 512 to
// 2047, lanes / short rows' path: 1 row 1.7-2.3 / 10-40 us, 8 rows 14-15 / 11-27, 16 rows 20-26 /
// 5-16; float64 alike).
constexpr std::int64_t kFewRows = 16;
// The lanes path cuts a call's rows into segments of at least this many elements where it has
// fewer than two rows per thread.
constexpr std::int64_t kFewestSegmentElements = kRowLanes * 256;
bool rows_take_lanes(std::int64_t rows, std::int64_t n) {
  return n >= kLanesFrom || (rows < kFewRows && n >= kRowLanes);
}

// scipy's rule on one row of partial results (and elements), in double.
double logsumexp_of(const std::vector<double> &v) {
  bool nan = false, plus_inf = false;
  double top = -std::numeric_limits<double>::infinity();
  for (double e : v) {
    if (std::isnan(e))
      nan = true;
    else if (e == std::numeric_limits<double>::infinity())
      plus_inf = true;
    else
      top = std::max(top, e);
  }
  if (nan) return std::numeric_limits<double>::quiet_NaN();
  if (plus_inf) return std::numeric_limits<double>::infinity();
  if (top == -std::numeric_limits<double>::infinity()) return top;  // every element -inf
  double sum = 0;
  for (double e : v) sum += std::exp(e - top);
  return top + std::log(sum);
}

template <class T>
void logsumexp_row_lanes(const char *op, const T *x, std::int64_t rows, std::int64_t row_stride, std::int64_t n, T *out,
                         std::int64_t out_stride, const Options &options) {
  const std::int64_t workers = std::max(1, num_threads());
  const std::int64_t segments =
      rows >= 2 * workers ? 1 : std::clamp<std::int64_t>(n / kFewestSegmentElements, 1, 16 * workers);
  const std::int64_t blocks = n / (segments * kRowLanes), covered = segments * blocks * kRowLanes;
  // Partial results: (row, segment, lane).
  const detail::ScratchArray<double, 2> partial({rows * segments, kRowLanes});
  auto reduce = [&](const T *first, std::int64_t outer, std::int64_t outer_stride, double *into) {
    Call call(op, options);
    auto xa = call.input("x", View<const T, 3>(first, {outer, blocks, kRowLanes}, {outer_stride, kRowLanes, 1}));
    auto oa = call.output("partial results", View<double, 2>(into, {outer, kRowLanes}));
    call.output("out", View<T, 1>(out, {rows}, {out_stride}));  // for the overlap checks; written below
    call.run(MathKernels<T>::logsumexp_partial, xa, oa);
  };
  if (segments == 1) {
    reduce(x, rows, row_stride, partial.data());
  } else {
    for (std::int64_t r = 0; r < rows; r++)
      reduce(x + r * row_stride, segments, blocks * kRowLanes, partial.data() + r * segments * kRowLanes);
  }
  std::vector<double> values;
  for (std::int64_t r = 0; r < rows; r++) {
    const double *p = partial.data() + r * segments * kRowLanes;
    values.assign(p, p + segments * kRowLanes);
    for (std::int64_t c = covered; c < n; c++) values.push_back(x[r * row_stride + c]);
    out[r * out_stride] = static_cast<T>(logsumexp_of(values));
  }
}

// logsumexp along contiguous rows of kRowsKernelFrom to kLanesFrom - 1 elements on the CPU, in one
// call of the rows kernel: each row read in place and reduced in two passes, the second from cache
// (its maximum, then its sum), by the same code whatever the call's rows. Against the transposes
// of the short rows' path, 4 x 10^6 elements as rows of n (from Python, Zen 5 VM, 2026-11-29, ms):
// float32 n = 16 1.5-1.9 / 2.3-2.7, 24 1.8 / 2.0-2.2, 32 1.39-1.62 / 1.30-1.34, 100 1.28-1.84 /
// 0.92-0.93, 1000 1.09-1.52 / 0.67-0.69; float64 n = 16 4.0-4.9 / 3.1-3.3, 100 4.3-4.6 / 2.5-2.6,
// 1000 3.6-4.1 / 1.9-2.2. From 16 elements on (the kernel's block: no shorter) for float64, from
// 32 for float32.
template <class T>
constexpr std::int64_t kRowsKernelFrom = std::is_same_v<T, float> ? 2 * kRowLanes : kRowLanes;
// The rows kernel's rows on the CPU: from kRowsKernelFrom to kLanesFrom - 1 elements, but where
// the lanes path would cut them into segments (few long rows: the rows kernel's tasks are whole
// rows, so fewer rows than threads would leave threads idle).
template <class T>
bool rows_kernel_takes(std::int64_t rows, std::int64_t n) {
  return n >= kRowsKernelFrom<T> && n < kLanesFrom && (rows >= 2 * num_threads() || n < 2 * kFewestSegmentElements);
}
template <class T>
void logsumexp_cached_rows(const char *op, const T *x, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
                           T *out, std::int64_t out_stride, const Options &options) {
  // Calls of as many rows as keep x's span within a kernel buffer's (rows far apart: a few columns
  // of a wide array; out's span is checked before, whole).
  const std::int64_t row_span = std::max(std::abs(row_stride), n) * std::int64_t(sizeof(T));
  detail::for_each_part(
      rows, std::max<std::int64_t>(1, detail::kMostKernelBufferBytes / row_span),
      [&](std::int64_t first, std::int64_t count) {
        Call call(op, options);
        auto xa = call.input("x", View<const T, 2>(x + first * row_stride, {count, n}, {row_stride, 1}));
        auto oa = call.output("out", View<T, 1>(out + first * out_stride, {count}, {out_stride}));
        call.run(MathKernels<T>::logsumexp_rows, xa, oa);
      });
}

// The column kernel's tasks are blocks of columns of one outer slice, each folding all n rows in
// order, so few slices and columns left threads idle (1000 x 1024 float32 along axis 0 ran on one
// thread). On the CPU, from kSegmentedRows rows on, the rows are cut into segments of at least
// kFewestSegmentRows (16 chunks of the kernel's 16), at most kColumnSegments of them, each reduced
// to partial results in double, which the float64 kernel combines. The cut depends on n alone, and
// the short rows' path cuts its transposed rows alike, so a column's result does not depend on the
// other columns or slices of the call (hpipe.dask's blocks), on the layout nor on the threads. The
// partial results (fewer than 2 n / 256 terms a column) take under 1/64 of a float32 x's bytes.
constexpr std::int64_t kColumnSegments = 16, kFewestSegmentRows = 256, kSegmentedRows = 1024;

// logsumexp down the n rows of host x (outer, n, inner) into out (outer, inner), NumPy order, on the
// CPU: one call of the column kernel, or in segments (kSegmentedRows).
template <class T>
void logsumexp_column_part(const char *op, const View<const T, 3> &x, const View<T, 2> &out, const Options &options) {
  const std::int64_t outer = x.shape(0), n = x.shape(1), inner = x.shape(2);
  if (n < kSegmentedRows) {
    Call call(op, options);
    auto xa = call.input("x", x);
    auto oa = call.output("out", out);
    return call.run(MathKernels<T>::logsumexp, xa, oa);
  }
  const std::int64_t segments = std::min(kColumnSegments, n / kFewestSegmentRows), rows = n / segments;
  const std::int64_t terms = segments + n - segments * rows;  // partial results, then the rows after them
  // (outer, terms, inner): a logsumexp of one term is that term, so the last rows join as they are.
  const detail::ScratchArray<double, 3> partial({outer, terms, inner});
  const auto run_partial = [&](const View<const T, 3> &xp, const View<double, 2> &into) {
    Call call(op, options);
    auto xa = call.input("x", xp);
    auto pa = call.output("partial results", into);
    call.run(MathKernels<T>::logsumexp_columns_partial, xa, pa);
  };
  if (outer < segments) {  // a call per slice, its segments as the kernel's slices
    for (std::int64_t o = 0; o < outer; o++)
      run_partial(View<const T, 3>(x.data() + o * x.stride(0), {segments, rows, inner},
                                   {rows * x.stride(1), x.stride(1), x.stride(2)}),
                  View<double, 2>(partial.data() + o * terms * inner, {segments, inner}));
  } else {  // a call per segment, over every slice
    for (std::int64_t k = 0; k < segments; k++)
      run_partial(View<const T, 3>(x.data() + k * rows * x.stride(1), {outer, rows, inner}, x.strides()),
                  View<double, 2>(partial.data() + k * inner, {outer, inner}, {terms * inner, 1}));
  }
  for (std::int64_t o = 0; o < outer; o++)
    for (std::int64_t r = segments * rows; r < n; r++)
      for (std::int64_t i = 0; i < inner; i++)
        partial.data()[(o * terms + segments + r - segments * rows) * inner + i] =
            x.data()[o * x.stride(0) + r * x.stride(1) + i * x.stride(2)];
  Call combine(op, options);
  auto pa = combine.input("partial results", View<const double, 3>(partial.view()));
  if constexpr (std::is_same_v<T, double>) {
    auto oa = combine.output("out", out);
    combine.run(MathKernels<double>::logsumexp, pa, oa);
  } else {
    const detail::ScratchArray<double, 2> combined({outer, inner});
    auto ca = combine.output("out", combined.view());
    combine.run(MathKernels<double>::logsumexp, pa, ca);
    for (std::int64_t o = 0; o < outer; o++)
      for (std::int64_t i = 0; i < inner; i++)
        out.data()[o * out.stride(0) + i * out.stride(1)] = T(combined.data()[o * inner + i]);
  }
}

// logsumexp along short or strided rows on the CPU: the kernel vectorizes across its inner
// dimension, so each task's transposed run of rows (detail::for_each_transposed_run) is reduced as
// columns are (logsumexp_column_part), the same bits as the transpose's columns.
template <class T>
void logsumexp_short_rows(const char *op, const detail::Rows<T> &x, std::int64_t rows, std::int64_t n, T *out,
                          std::int64_t out_stride, const Options &options) {
  Options on_cpu = options;
  on_cpu.device = Device::cpu;
  detail::for_each_transposed_run<T, 1>({x}, rows, n, [&](std::int64_t first, const auto &runs) {
    const View<const T, 2> &t = runs[0];
    logsumexp_column_part<T>(op, View<const T, 3>(t.data(), {1, n, t.shape(1)}, {0, t.stride(0), 1}),
                             View<T, 2>(out + first * out_stride, {1, t.shape(1)}, {0, out_stride}), on_cpu);
  });
}

// logsumexp down the n rows of x (outer, n, inner) into out (outer, inner), NumPy order. On the
// CPU, the columns before x's rows reach a cache line run as a part of their own.
template <class T>
void logsumexp_columns(const char *op, const View<const T, 3> &x, const View<T, 2> &out, const Options &options) {
  Call call(op, options);
  auto xa = call.input("x", x);
  auto oa = call.output("out", out);
  if (call.uses_cuda()) return call.run(MathKernels<T>::logsumexp, xa, oa);
  const std::int64_t lead = detail::columns_before_line(x);
  if (lead == 0) return logsumexp_column_part<T>(op, x, out, options);
  for (const auto &[first, count] : {std::pair{std::int64_t(0), lead}, std::pair{lead, x.shape(2) - lead}})
    logsumexp_column_part<T>(
        op, View<const T, 3>(x.data() + first * x.stride(2), {x.shape(0), x.shape(1), count}, x.strides()),
        View<T, 2>(out.data() + first * out.stride(1), {out.shape(0), count}, out.strides()), options);
}

// x as (outer, n, inner) and out as (outer, inner), NumPy order; dense copies where the strides
// of x (or out) cannot be merged so.
template <class T, int N>
void logsumexp_impl(View<const T, N> x, int axis, View<T, N - 1> out, const Options &options) {
  const char *op = "logsumexp";
  axis = normalized_axis<T, N>(op, axis);
  detail::check_kernel_buffer<T>(op, "x", x.shape());  // named as given, not as the paths below reshape it
  if (x.data() == nullptr && x.size() > 0) fail(op, "x", "data pointer is null");  // the short rows' path reads it
  const auto expected = without_axis<T, N>(x.shape(), axis);
  if (out.shape() != expected)
    fail(op, "out",
         "expected shape " + shape_string(expected) + " (x of shape " + shape_string(x.shape()) + " without axis " +
             std::to_string(axis) + "), got " + shape_string(out.shape()));
  // On the whole views: the paths below may copy x or out, or cut x into calls.
  detail::check_disjoint(op, "out", out, "x", x);
  if (x.size() == 0) {
    Call call(op, options);
    call.input("x", x);
    call.output("out", out);
    if (out.size() == 0) return call.run_nothing();
    // The logarithm of an empty sum, as torch.logsumexp and scipy.special.logsumexp give it.
    return call.run_filled(-std::numeric_limits<double>::infinity());
  }
  const Merged xo = merge(x, 0, axis), xi = merge(x, axis + 1, N);
  const Merged oo = merge(out, 0, axis), oi = merge(out, axis, N - 1);
  if (!xo.ok || !xi.ok) {
    if (x.memory() != Memory::host)
      fail(op, "x",
           "in CUDA memory, the dimensions before and after the axis must each merge into one (C-order "
           "within each group)");
    const detail::ScratchArray<T, N> copy(x.shape());
    copy_dense(x, copy.data());
    return logsumexp_impl<T, N>(View<const T, N>(copy.view()), axis, out, options);
  }
  if (!oo.ok || !oi.ok) {
    if (out.memory() != Memory::host) fail(op, "out", "in CUDA memory, it must be C-order dense");
    const detail::ScratchArray<T, N - 1> tmp(out.shape());
    logsumexp_impl<T, N>(x, axis, tmp.view(), options);
    const T *next = tmp.data();
    for_each_index(out.shape(), [&](const auto &index) { out.data()[offset_of(index, out.strides())] = *next++; });
    return;
  }
  const bool host = x.memory() == Memory::host && out.memory() == Memory::host;
  // The backend from out (x in host memory runs anywhere; the short rows' path only gives the
  // kernels transposes of it, so its span may pass a kernel's limits).
  const auto on_cpu = [&] {
    Call probe(op, options);
    probe.output("out", out);
    return !probe.uses_cuda();
  };
  const std::int64_t n = x.shape(axis);
  if (xi.extent == 1 && host && x.stride(axis) == 1) {
    if (rows_kernel_takes<T>(xo.extent, n) && on_cpu())
      return logsumexp_cached_rows(op, x.data(), xo.extent, xo.stride, n, out.data(), oo.stride, options);
    if (rows_take_lanes(xo.extent, n))
      return logsumexp_row_lanes(op, x.data(), xo.extent, xo.stride, n, out.data(), oo.stride, options);
  }
  if (xi.extent == 1 && xo.extent > 1 && x.memory() == Memory::host) {
    if (on_cpu())
      return logsumexp_short_rows(op, detail::Rows<T>{x.data(), xo.stride, x.stride(axis)}, xo.extent, x.shape(axis),
                                  out.data(), oo.stride, options);
    // On CUDA: the transpose of all rows, (n, rows), on hpipe's threads, for one call.
    const std::int64_t rows = xo.extent;
    const detail::ScratchArray<T, 2> t({n, rows});
    const detail::Rows<T> x_rows{x.data(), xo.stride, x.stride(axis)};
    detail::for_each_run(rows, n * std::int64_t(sizeof(T)), 64, [&](std::int64_t first, std::int64_t end) {
      detail::transpose_rows(x_rows, first, end, n, t.data() + first, rows);
    });
    Call call(op, options);
    auto xa = call.input("x", View<const T, 3>(t.data(), {1, n, rows}));
    auto oa = call.output("out", View<T, 2>(out.data(), {1, rows}, {0, oo.stride}, out.memory()));
    call.run(MathKernels<T>::logsumexp, xa, oa);
    return;
  }
  const View<const T, 3> x3(x.data(), {xo.extent, x.shape(axis), xi.extent}, {xo.stride, x.stride(axis), xi.stride},
                            x.memory());
  const View<T, 2> o2(out.data(), {oo.extent, oi.extent}, {oo.stride, oi.stride}, out.memory());
  logsumexp_columns<T>(op, x3, o2, options);
}

template <class T>
T logsumexp_all(View<const T, 1> x, const Options &options) {
  const View<const T, 2> x2(x.data(), {1, x.shape(0)}, {0, x.stride(0)}, x.memory());
  T result = 0;
  logsumexp_impl<T, 2>(x2, 1, View<T, 1>(&result, {1}), options);
  return result;
}

// The elementwise functions over any rank, and a new host array of the result of any of them.
template <class T, int N>
void exp_of(View<const T, N> x, View<T, N> y, const Options &o) {
  elementwise<T, N>("exp", MathKernels<T>::exp, x, y, o);
}
template <class T, int N>
void log_of(View<const T, N> x, View<T, N> y, const Options &o) {
  elementwise<T, N>("log", MathKernels<T>::log, x, y, o);
}
template <class T, int N>
void erf_of(View<const T, N> x, View<T, N> y, const Options &o) {
  elementwise<T, N>("erf", MathKernels<T>::erf, x, y, o);
}
template <class T, int N>
Array<T, N> allocated(const char *op, void (*fn)(View<const T, N>, View<T, N>, const Options &), View<const T, N> x,
                      const Options &o) {
  detail::check_extents(op, "x", x);  // before the allocation: Array's own error names no op
  Array<T, N> y(x.shape());
  fn(x, y.view(), o);
  return y;
}

template <class T, int N>
Array<T, N - 1> logsumexp_allocated(View<const T, N> x, int axis, const Options &o) {
  detail::check_extents("logsumexp", "x", x);  // before the allocation
  Array<T, N - 1> out(without_axis<T, N>(x.shape(), normalized_axis<T, N>("logsumexp", axis)));
  logsumexp_impl<T, N>(x, axis, out.view(), o);
  return out;
}

}  // namespace

void exp(View<const float, 1> x, View<float, 1> y, const Options &o) { exp_of(x, y, o); }
void exp(View<const float, 2> x, View<float, 2> y, const Options &o) { exp_of(x, y, o); }
void exp(View<const float, 3> x, View<float, 3> y, const Options &o) { exp_of(x, y, o); }
void exp(View<const float, 4> x, View<float, 4> y, const Options &o) { exp_of(x, y, o); }
void exp(View<const double, 1> x, View<double, 1> y, const Options &o) { exp_of(x, y, o); }
void exp(View<const double, 2> x, View<double, 2> y, const Options &o) { exp_of(x, y, o); }
void exp(View<const double, 3> x, View<double, 3> y, const Options &o) { exp_of(x, y, o); }
void exp(View<const double, 4> x, View<double, 4> y, const Options &o) { exp_of(x, y, o); }
Array<float, 1> exp(View<const float, 1> x, const Options &o) { return allocated("exp", exp_of<float, 1>, x, o); }
Array<float, 2> exp(View<const float, 2> x, const Options &o) { return allocated("exp", exp_of<float, 2>, x, o); }
Array<float, 3> exp(View<const float, 3> x, const Options &o) { return allocated("exp", exp_of<float, 3>, x, o); }
Array<float, 4> exp(View<const float, 4> x, const Options &o) { return allocated("exp", exp_of<float, 4>, x, o); }
Array<double, 1> exp(View<const double, 1> x, const Options &o) { return allocated("exp", exp_of<double, 1>, x, o); }
Array<double, 2> exp(View<const double, 2> x, const Options &o) { return allocated("exp", exp_of<double, 2>, x, o); }
Array<double, 3> exp(View<const double, 3> x, const Options &o) { return allocated("exp", exp_of<double, 3>, x, o); }
Array<double, 4> exp(View<const double, 4> x, const Options &o) { return allocated("exp", exp_of<double, 4>, x, o); }

void log(View<const float, 1> x, View<float, 1> y, const Options &o) { log_of(x, y, o); }
void log(View<const float, 2> x, View<float, 2> y, const Options &o) { log_of(x, y, o); }
void log(View<const float, 3> x, View<float, 3> y, const Options &o) { log_of(x, y, o); }
void log(View<const float, 4> x, View<float, 4> y, const Options &o) { log_of(x, y, o); }
void log(View<const double, 1> x, View<double, 1> y, const Options &o) { log_of(x, y, o); }
void log(View<const double, 2> x, View<double, 2> y, const Options &o) { log_of(x, y, o); }
void log(View<const double, 3> x, View<double, 3> y, const Options &o) { log_of(x, y, o); }
void log(View<const double, 4> x, View<double, 4> y, const Options &o) { log_of(x, y, o); }
Array<float, 1> log(View<const float, 1> x, const Options &o) { return allocated("log", log_of<float, 1>, x, o); }
Array<float, 2> log(View<const float, 2> x, const Options &o) { return allocated("log", log_of<float, 2>, x, o); }
Array<float, 3> log(View<const float, 3> x, const Options &o) { return allocated("log", log_of<float, 3>, x, o); }
Array<float, 4> log(View<const float, 4> x, const Options &o) { return allocated("log", log_of<float, 4>, x, o); }
Array<double, 1> log(View<const double, 1> x, const Options &o) { return allocated("log", log_of<double, 1>, x, o); }
Array<double, 2> log(View<const double, 2> x, const Options &o) { return allocated("log", log_of<double, 2>, x, o); }
Array<double, 3> log(View<const double, 3> x, const Options &o) { return allocated("log", log_of<double, 3>, x, o); }
Array<double, 4> log(View<const double, 4> x, const Options &o) { return allocated("log", log_of<double, 4>, x, o); }

void erf(View<const float, 1> x, View<float, 1> y, const Options &o) { erf_of(x, y, o); }
void erf(View<const float, 2> x, View<float, 2> y, const Options &o) { erf_of(x, y, o); }
void erf(View<const float, 3> x, View<float, 3> y, const Options &o) { erf_of(x, y, o); }
void erf(View<const float, 4> x, View<float, 4> y, const Options &o) { erf_of(x, y, o); }
void erf(View<const double, 1> x, View<double, 1> y, const Options &o) { erf_of(x, y, o); }
void erf(View<const double, 2> x, View<double, 2> y, const Options &o) { erf_of(x, y, o); }
void erf(View<const double, 3> x, View<double, 3> y, const Options &o) { erf_of(x, y, o); }
void erf(View<const double, 4> x, View<double, 4> y, const Options &o) { erf_of(x, y, o); }
Array<float, 1> erf(View<const float, 1> x, const Options &o) { return allocated("erf", erf_of<float, 1>, x, o); }
Array<float, 2> erf(View<const float, 2> x, const Options &o) { return allocated("erf", erf_of<float, 2>, x, o); }
Array<float, 3> erf(View<const float, 3> x, const Options &o) { return allocated("erf", erf_of<float, 3>, x, o); }
Array<float, 4> erf(View<const float, 4> x, const Options &o) { return allocated("erf", erf_of<float, 4>, x, o); }
Array<double, 1> erf(View<const double, 1> x, const Options &o) { return allocated("erf", erf_of<double, 1>, x, o); }
Array<double, 2> erf(View<const double, 2> x, const Options &o) { return allocated("erf", erf_of<double, 2>, x, o); }
Array<double, 3> erf(View<const double, 3> x, const Options &o) { return allocated("erf", erf_of<double, 3>, x, o); }
Array<double, 4> erf(View<const double, 4> x, const Options &o) { return allocated("erf", erf_of<double, 4>, x, o); }

void logsumexp(View<const float, 2> x, int axis, View<float, 1> out, const Options &o) {
  logsumexp_impl<float, 2>(x, axis, out, o);
}
void logsumexp(View<const float, 3> x, int axis, View<float, 2> out, const Options &o) {
  logsumexp_impl<float, 3>(x, axis, out, o);
}
void logsumexp(View<const float, 4> x, int axis, View<float, 3> out, const Options &o) {
  logsumexp_impl<float, 4>(x, axis, out, o);
}
void logsumexp(View<const double, 2> x, int axis, View<double, 1> out, const Options &o) {
  logsumexp_impl<double, 2>(x, axis, out, o);
}
void logsumexp(View<const double, 3> x, int axis, View<double, 2> out, const Options &o) {
  logsumexp_impl<double, 3>(x, axis, out, o);
}
void logsumexp(View<const double, 4> x, int axis, View<double, 3> out, const Options &o) {
  logsumexp_impl<double, 4>(x, axis, out, o);
}
Array<float, 1> logsumexp(View<const float, 2> x, int axis, const Options &o) {
  return logsumexp_allocated<float, 2>(x, axis, o);
}
Array<float, 2> logsumexp(View<const float, 3> x, int axis, const Options &o) {
  return logsumexp_allocated<float, 3>(x, axis, o);
}
Array<float, 3> logsumexp(View<const float, 4> x, int axis, const Options &o) {
  return logsumexp_allocated<float, 4>(x, axis, o);
}
Array<double, 1> logsumexp(View<const double, 2> x, int axis, const Options &o) {
  return logsumexp_allocated<double, 2>(x, axis, o);
}
Array<double, 2> logsumexp(View<const double, 3> x, int axis, const Options &o) {
  return logsumexp_allocated<double, 3>(x, axis, o);
}
Array<double, 3> logsumexp(View<const double, 4> x, int axis, const Options &o) {
  return logsumexp_allocated<double, 4>(x, axis, o);
}
float logsumexp(View<const float, 1> x, const Options &o) { return logsumexp_all<float>(x, o); }
double logsumexp(View<const double, 1> x, const Options &o) { return logsumexp_all<double>(x, o); }

}  // namespace hpipe
