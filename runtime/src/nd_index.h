// Visiting every element of an N-D view (NumPy order, any strides) in C order.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace hpipe::detail {

// Calls f(index) for every index of `shape`, in C order (none when any extent is 0).
template <std::size_t N, class F>
void for_each_index(const std::array<std::int64_t, N> &shape, F &&f) {
  for (auto e : shape)
    if (e < 1) return;
  std::array<std::int64_t, N> index{};
  while (true) {
    f(std::as_const(index));
    int d = static_cast<int>(N) - 1;
    for (; d >= 0; d--) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// The element offset of `index` in a view with these strides.
template <std::size_t N>
std::int64_t offset_of(const std::array<std::int64_t, N> &index, const std::array<std::int64_t, N> &strides) {
  std::int64_t offset = 0;
  for (std::size_t d = 0; d < N; d++) offset += index[d] * strides[d];
  return offset;
}

// The first M of N extents (or strides): the outer dimensions.
template <std::size_t M, std::size_t N>
std::array<std::int64_t, M> first_dims(const std::array<std::int64_t, N> &a) {
  static_assert(M <= N, "at most all of the dimensions");
  std::array<std::int64_t, M> first{};
  for (std::size_t d = 0; d < M; d++) first[d] = a[d];
  return first;
}

}  // namespace hpipe::detail
