// Typed views over caller memory, and Array, an owning host array that hands out views.
//
// Shapes and strides are in NumPy order (outermost first); strides count elements, not bytes,
// and may be any value (a transposed view, a broadcast dimension with stride 0). A view never
// copies or owns: it is a pointer plus a description. An output view needs memory of its own for
// every element: with its dimensions ordered by |stride|, each stride steps past the span of the
// smaller ones (every slice or transpose of a dense array does; a stride of 0 never does). An
// extent may be 0: ops then give NumPy's empty result (README, "Empty arrays").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hpipe/error.h"

namespace hpipe {

namespace detail {

// Out of line from the checks below, so that they stay a few instructions each.
template <std::size_t Rank>
[[noreturn]] void throw_shape_error(const char *what, const std::array<std::int64_t, Rank> &shape,
                                    const char *problem) {
  std::string text = std::string(what) + " of shape (";
  for (std::size_t d = 0; d < Rank; d++) text += (d ? ", " : "") + std::to_string(shape[d]);
  throw Error(text + (Rank == 1 ? ",)" : ")") + ": " + problem);
}

// The product of the extents, or an Error naming the shape when it does not fit in int64.
template <std::size_t Rank>
std::int64_t checked_product(const char *what, const std::array<std::int64_t, Rank> &shape) {
  std::int64_t n = 1;
  for (auto e : shape)
    if (__builtin_mul_overflow(n, e, &n)) throw_shape_error(what, shape, "more than 2^63 elements");
  return n;
}

// Host memory for elements, 64-byte aligned; from kHugePagesFrom bytes on, aligned to 2 MiB and
// marked for transparent huge pages (as NumPy marks its large arrays), so that first touching a
// new array faults once per 2 MiB rather than once per 4 KiB. std::bad_alloc when it cannot;
// free_host releases either kind.
constexpr std::size_t kHugePagesFrom = std::size_t(4) << 20;
void *allocate_host(std::size_t bytes);
void free_host(void *data) noexcept;

}  // namespace detail

// Where a view's data lives: host memory, or CUDA device memory the caller allocated.
enum class Memory { host, cuda };

template <class T, int Rank>
class View {
  static_assert(Rank >= 1, "a view has at least one dimension");
  static_assert(std::is_same_v<std::remove_const_t<T>, float> || std::is_same_v<std::remove_const_t<T>, double>,
                "hpipe views hold float or double");

 public:
  using element_type = T;
  using value_type = std::remove_const_t<T>;
  using Extents = std::array<std::int64_t, static_cast<std::size_t>(Rank)>;
  static constexpr int rank = Rank;

  View() = default;
  // A dense C-order view.
  View(T *data, const Extents &shape, Memory memory = Memory::host)
      : data_(data), shape_(shape), strides_(dense_strides(shape)), memory_(memory) {}
  View(T *data, const Extents &shape, const Extents &strides, Memory memory = Memory::host)
      : data_(data), shape_(shape), strides_(strides), memory_(memory) {}
  // A view of T converts to a view of const T.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  View(const View<U, Rank> &other)  // NOLINT(google-explicit-constructor)
      : data_(other.data()), shape_(other.shape()), strides_(other.strides()), memory_(other.memory()) {}

  T *data() const { return data_; }
  const Extents &shape() const { return shape_; }
  const Extents &strides() const { return strides_; }
  std::int64_t shape(int d) const { return shape_[static_cast<std::size_t>(d)]; }
  std::int64_t stride(int d) const { return strides_[static_cast<std::size_t>(d)]; }
  Memory memory() const { return memory_; }
  // The product of the extents; an Error when it overflows int64.
  std::int64_t size() const { return detail::checked_product("view", shape_); }

  // Element access for host views (tests, small tools); no bounds checks.
  template <class... I>
  T &operator()(I... index) const {
    static_assert(sizeof...(I) == Rank, "one index per dimension");
    const std::int64_t idx[] = {static_cast<std::int64_t>(index)...};
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < strides_.size(); d++) offset += idx[d] * strides_[d];
    return data_[offset];
  }

  // An Error when a stride overflows int64 (the outermost extent does not enter any stride).
  static Extents dense_strides(const Extents &shape) {
    Extents s{};
    s.back() = 1;
    for (std::size_t d = s.size() - 1; d-- > 0;)
      if (__builtin_mul_overflow(s[d + 1], shape[d + 1], &s[d]))
        detail::throw_shape_error("view", shape, "its dense strides overflow int64");
    return s;
  }

 private:
  T *data_ = nullptr;
  Extents shape_{};
  Extents strides_{};
  Memory memory_ = Memory::host;
};

// Storage aligned to 64 bytes (a cache line, an AVX-512 vector): the kernels stream whole vectors,
// and a misaligned one splits every vector load and store across two lines (BM_exp_f32 on 10^8
// elements: 62-65 ms with malloc's 16-byte alignment, 48-50 ms aligned); large ones in huge pages
// (detail::allocate_host).
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U> &) {}  // NOLINT
  T *allocate(std::size_t n) { return static_cast<T *>(detail::allocate_host(n * sizeof(T))); }
  void deallocate(T *p, std::size_t) { detail::free_host(p); }
  friend bool operator==(const CacheLineAllocator &, const CacheLineAllocator &) { return true; }
  friend bool operator!=(const CacheLineAllocator &, const CacheLineAllocator &) { return false; }
};

// A std::vector with that storage, for element buffers that are not Arrays (the hpipe tool's).
template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

// A dense C-order host array that owns its elements (zero-initialised, 64-byte aligned). A negative
// extent, or more elements than memory can address, is an Error naming the shape.
template <class T, int Rank>
class Array {
 public:
  using Extents = typename View<T, Rank>::Extents;
  Array() = default;
  explicit Array(const Extents &shape) : shape_(shape), data_(count(shape)) {}
  // Copies are deep; a moved-from Array is empty, its extents 0 (its shape and storage agree).
  Array(const Array &) = default;
  Array &operator=(const Array &) = default;
  Array(Array &&other) noexcept : shape_(std::exchange(other.shape_, Extents{})), data_(std::move(other.data_)) {
    other.data_.clear();
  }
  Array &operator=(Array &&other) noexcept {
    if (this != &other) {
      shape_ = std::exchange(other.shape_, Extents{});
      data_ = std::move(other.data_);
      other.data_.clear();
    }
    return *this;
  }

  View<T, Rank> view() { return View<T, Rank>(data_.data(), shape_); }
  View<const T, Rank> view() const { return View<const T, Rank>(data_.data(), shape_); }
  operator View<T, Rank>() { return view(); }              // NOLINT
  operator View<const T, Rank>() const { return view(); }  // NOLINT

  const Extents &shape() const { return shape_; }
  std::int64_t shape(int d) const { return shape_[static_cast<std::size_t>(d)]; }
  std::int64_t size() const { return static_cast<std::int64_t>(data_.size()); }
  T *data() { return data_.data(); }
  const T *data() const { return data_.data(); }
  template <class... I>
  T &operator()(I... index) {
    return view()(index...);
  }
  template <class... I>
  const T &operator()(I... index) const {
    return view()(index...);
  }

 private:
  static std::size_t count(const Extents &shape) {
    for (auto e : shape)
      if (e < 0) detail::throw_shape_error("Array", shape, "every extent must be at least 0");
    const std::int64_t n = detail::checked_product("Array", shape);
    if (n > PTRDIFF_MAX / static_cast<std::int64_t>(sizeof(T)))
      detail::throw_shape_error("Array", shape, "more bytes than memory can address");
    return static_cast<std::size_t>(n);
  }
  Extents shape_{};
  AlignedVector<T> data_;
};

}  // namespace hpipe
