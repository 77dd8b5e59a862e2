// Reductions of short rows by kernels that vectorize across rows (logsumexp along the last axis,
// batched_dot): each task of hpipe's threads transposes a run of rows of every input into scratch
// of its own, (n, rows of the run), which stays in L2 for the kernel call the task then makes.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <mutex>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "block_cache.h"
#include "hpipe/device.h"
#include "hpipe/view.h"
#include "thread_pool.h"

namespace hpipe::detail {

// An input's rows of n elements: element (r, c) at data[r * row_stride + c * column_stride].
template <class T>
struct Rows {
  const T *data;
  std::int64_t row_stride, column_stride;
};

// A tile of kTile<T> rows of kTile<T> elements of x (contiguous rows) transposed into t: SSE2's
// shuffles, the x86-64 baseline (one 16-byte vector a row).
template <class T>
constexpr std::int64_t kTile = 16 / sizeof(T);
inline void transpose_tile(const float *x, std::int64_t x_stride, float *t, std::int64_t t_stride) {
#if defined(__SSE2__)
  __m128 r0 = _mm_loadu_ps(x), r1 = _mm_loadu_ps(x + x_stride), r2 = _mm_loadu_ps(x + 2 * x_stride),
         r3 = _mm_loadu_ps(x + 3 * x_stride);
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  _mm_storeu_ps(t, r0);
  _mm_storeu_ps(t + t_stride, r1);
  _mm_storeu_ps(t + 2 * t_stride, r2);
  _mm_storeu_ps(t + 3 * t_stride, r3);
#else
  for (std::int64_t c = 0; c < kTile<float>; c++)
    for (std::int64_t r = 0; r < kTile<float>; r++) t[c * t_stride + r] = x[r * x_stride + c];
#endif
}
inline void transpose_tile(const double *x, std::int64_t x_stride, double *t, std::int64_t t_stride) {
#if defined(__SSE2__)
  const __m128d r0 = _mm_loadu_pd(x), r1 = _mm_loadu_pd(x + x_stride);
  _mm_storeu_pd(t, _mm_unpacklo_pd(r0, r1));
  _mm_storeu_pd(t + t_stride, _mm_unpackhi_pd(r0, r1));
#else
  for (std::int64_t c = 0; c < kTile<double>; c++)
    for (std::int64_t r = 0; r < kTile<double>; r++) t[c * t_stride + r] = x[r * x_stride + c];
#endif
}

// Rows [first, end) of dense rows of n < kTile<T> elements (x one block of (end - first) * n)
// into t (n, t_stride): a copy, or float32 pairs and triples split by shuffles, four rows a step.
template <class T>
void transpose_narrow_dense_rows(const T *x, std::int64_t first, std::int64_t end, std::int64_t n, T *t,
                                 std::int64_t t_stride) {
  std::int64_t r = first;
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    const float *from = x + first * n;
    if (n == 2) {
      for (; r + 4 <= end; r += 4, from += 8) {
        const __m128 v0 = _mm_loadu_ps(from), v1 = _mm_loadu_ps(from + 4);
        float *to = t + (r - first);
        _mm_storeu_ps(to, _mm_shuffle_ps(v0, v1, _MM_SHUFFLE(2, 0, 2, 0)));
        _mm_storeu_ps(to + t_stride, _mm_shuffle_ps(v0, v1, _MM_SHUFFLE(3, 1, 3, 1)));
      }
    } else if (n == 3) {  // v0 v1 v2 = elements 0-3, 4-7, 8-11: columns {0 3 6 9}, {1 4 7 10}, {2 5 8 11}
      for (; r + 4 <= end; r += 4, from += 12) {
        const __m128 v0 = _mm_loadu_ps(from), v1 = _mm_loadu_ps(from + 4), v2 = _mm_loadu_ps(from + 8);
        const __m128 e6_9 = _mm_shuffle_ps(v1, v2, _MM_SHUFFLE(1, 1, 2, 2));
        const __m128 e1_4 = _mm_shuffle_ps(v0, v1, _MM_SHUFFLE(0, 0, 1, 1)),
                     e7_10 = _mm_shuffle_ps(v1, v2, _MM_SHUFFLE(2, 2, 3, 3));
        const __m128 e2_5 = _mm_shuffle_ps(v0, v1, _MM_SHUFFLE(1, 1, 2, 2)),
                     e8_11 = _mm_shuffle_ps(v2, v2, _MM_SHUFFLE(3, 3, 0, 0));
        float *to = t + (r - first);
        _mm_storeu_ps(to, _mm_shuffle_ps(v0, e6_9, _MM_SHUFFLE(2, 0, 3, 0)));
        _mm_storeu_ps(to + t_stride, _mm_shuffle_ps(e1_4, e7_10, _MM_SHUFFLE(2, 0, 2, 0)));
        _mm_storeu_ps(to + 2 * t_stride, _mm_shuffle_ps(e2_5, e8_11, _MM_SHUFFLE(2, 0, 2, 0)));
      }
    }
  }
#endif
  if (n == 1) return static_cast<void>(std::copy(x + r, x + end, t + (r - first)));
  for (; r < end; r++)
    for (std::int64_t c = 0; c < n; c++) t[c * t_stride + (r - first)] = x[r * n + c];
}

// Rows [first, end) of x (n columns) transposed into t (n, t_stride), in blocks of 64 rows that
// stay in L1. Contiguous rows go a tile at a time, or, dense and narrower than a tile, by
// shuffles (element by element took 1.5-4x as long for rows of 2 to 2048, one thread, Zen 5,
// docs/performance-notes.md); other rows of a few elements are written a row of t at a time (an
// inner loop along x's rows of 3 ran at half the speed), longer ones in blocks of 64 columns
// (written a row of t at a time, rows of 32 were 15-25% slower).
template <class T>
void transpose_rows(const Rows<T> &x, std::int64_t first, std::int64_t end, std::int64_t n, T *t,
                    std::int64_t t_stride) {
  const bool contiguous = x.column_stride == 1;
  if (contiguous && n < kTile<T> && x.row_stride == n)
    return transpose_narrow_dense_rows(x.data, first, end, n, t, t_stride);
  const bool tiles = contiguous && n >= kTile<T>;
  constexpr std::int64_t kBlock = 64, kFewColumns = 8;
  for (std::int64_t r0 = first; r0 < end; r0 += kBlock) {
    const std::int64_t r1 = std::min(end, r0 + kBlock);
    if (!tiles && n <= kFewColumns) {
      for (std::int64_t c = 0; c < n; c++) {
        const T *from = x.data + c * x.column_stride;
        T *to = t + c * t_stride;
        for (std::int64_t r = r0; r < r1; r++) to[r - first] = from[r * x.row_stride];
      }
      continue;
    }
    for (std::int64_t c0 = 0; c0 < n; c0 += kBlock) {
      const std::int64_t c1 = std::min(n, c0 + kBlock);
      std::int64_t r = r0;
      if (tiles) {
        for (; r + kTile<T> <= r1; r += kTile<T>) {
          const T *from = x.data + r * x.row_stride;
          T *to = t + (r - first);
          std::int64_t c = c0;
          for (; c + kTile<T> <= c1; c += kTile<T>) transpose_tile(from + c, x.row_stride, to + c * t_stride, t_stride);
          for (; c < c1; c++)
            for (std::int64_t k = 0; k < kTile<T>; k++) to[c * t_stride + k] = from[k * x.row_stride + c];
        }
      }
      for (; r < r1; r++)
        for (std::int64_t c = c0; c < c1; c++)
          t[c * t_stride + (r - first)] = x.data[r * x.row_stride + c * x.column_stride];
    }
  }
}

// A task's run of rows in scratch, all inputs together, takes at most this (half a Zen 3 core's
// L2); a transpose of all of x before one call took a copy of x and three passes over memory
// instead of one (logsumexp of 10^6 rows of 10 on Zen 3: 13.4-14.8 ms, then 12.7-13.1,
// docs/performance-notes.md).
constexpr std::int64_t kRunBytes = std::int64_t(256) << 10;

// Elements of a row of `count` of n such rows in scratch that is read or written a column at a
// time: an odd number of cache lines, so that consecutive rows fall in different L1 sets (rows 4
// KiB apart all fall in one: logsumexp of rows of 64 floats transposed 1024 at a time ran 2x slower
// than rows of 48, docs/performance-notes.md); but a row within one line as it is (a run of 2 rows
// would take 8x its elements), and so are the rows of a run far past kRunBytes, which cannot stay in
// cache anyway (a few rows of 10^7: padding took scratch to nearly 3x x's size).
inline std::int64_t padded_row(std::int64_t count, std::int64_t n, std::size_t element_bytes) {
  const std::int64_t line = 64 / static_cast<std::int64_t>(element_bytes);
  if (count <= line) return count;
  const std::int64_t lines = (count + line - 1) / line;
  const std::int64_t padded = (lines % 2 == 0 ? lines + 1 : lines) * line;
  return n * padded * static_cast<std::int64_t>(element_bytes) <= 2 * kRunBytes ? padded : count;
}

// f(first, end) for consecutive runs of rows [first, end) covering `rows`, on hpipe's threads:
// runs of at most kRunBytes of rows of `row_bytes`, in multiples of `row_multiple` rows (at least
// one multiple however long the rows), and at least 4 runs a thread where there are rows enough
// (f runs inside a task, so a kernel it calls runs serially there; the last round of tasks leaves
// threads idle). The first exception f throws is rethrown here once every task has ended.
constexpr std::int64_t kTasksPerThread = 4;
template <class F>
void for_each_run(std::int64_t rows, std::int64_t row_bytes, std::int64_t row_multiple, const F &f) {
  struct Work {
    std::int64_t rows, rows_per_task;
    const F &f;
    std::mutex mutex;
    std::exception_ptr failure;  // the first task's
  } work{rows, 0, f, {}, {}};
  const auto multiples = [&](std::int64_t n) { return (n + row_multiple - 1) / row_multiple * row_multiple; };
  const std::int64_t by_bytes = kRunBytes / std::max<std::int64_t>(row_bytes, 1) / row_multiple * row_multiple;
  const std::int64_t tasks_wanted = kTasksPerThread * num_threads();
  work.rows_per_task = std::max(row_multiple, std::min(by_bytes, multiples((rows + tasks_wanted - 1) / tasks_wanted)));
  const halide_task_t task = [](void *, int index, std::uint8_t *closure) {
    Work &w = *reinterpret_cast<Work *>(closure);
    const std::int64_t first = std::int64_t(index) * w.rows_per_task;
    try {
      w.f(first, std::min(w.rows, first + w.rows_per_task));
      return 0;
    } catch (...) {
      const std::lock_guard<std::mutex> lock(w.mutex);
      if (!w.failure) w.failure = std::current_exception();
      return 1;
    }
  };
  const std::int64_t tasks = (rows + work.rows_per_task - 1) / work.rows_per_task;
  if (run_tasks(task, static_cast<int>(tasks), &work, num_threads()) != 0) std::rethrow_exception(work.failure);
}

// f(first, runs) for each run of rows [first, first + count) of for_each_run, in whole vectors of
// 64 rows, where runs[j] is input j's run transposed: a (n, count) view of scratch of the task's own
// (rows padded).
template <class T, std::size_t Inputs, class F>
void for_each_transposed_run(const std::array<Rows<T>, Inputs> &inputs, std::int64_t rows, std::int64_t n, const F &f) {
  constexpr std::int64_t kVectorRows = 64;
  for_each_run(rows, std::int64_t(Inputs) * n * std::int64_t(sizeof(T)), kVectorRows,
               [&](std::int64_t first, std::int64_t end) {
                 const std::int64_t count = end - first, t_stride = padded_row(count, n, sizeof(T));
                 const ScratchArray<T, 2> scratch({std::int64_t(Inputs) * n, t_stride});
                 std::array<View<const T, 2>, Inputs> runs;
                 for (std::size_t j = 0; j < Inputs; j++) {
                   T *t = scratch.data() + std::int64_t(j) * n * t_stride;
                   transpose_rows(inputs[j], first, end, n, t, t_stride);
                   runs[j] = View<const T, 2>(t, {n, count}, {t_stride, 1});
                 }
                 f(first, runs);
               });
}

}  // namespace hpipe::detail
