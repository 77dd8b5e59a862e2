// Typed views over caller memory, and Array, an owning host array that hands out views.
//
// Shapes and strides are in NumPy order (outermost first); strides count elements, not bytes,
// and may be any value (a transposed view, a broadcast dimension with stride 0). A view never
// copies or owns: it is a pointer plus a description.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <vector>

namespace hpipe {

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
  using Extents = std::array<std::int64_t, Rank>;
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
  std::int64_t shape(int d) const { return shape_[d]; }
  std::int64_t stride(int d) const { return strides_[d]; }
  Memory memory() const { return memory_; }
  std::int64_t size() const {
    std::int64_t n = 1;
    for (auto e : shape_) n *= e;
    return n;
  }

  // Element access for host views (tests, small tools); no bounds checks.
  template <class... I>
  T &operator()(I... index) const {
    static_assert(sizeof...(I) == Rank, "one index per dimension");
    const std::int64_t idx[] = {static_cast<std::int64_t>(index)...};
    std::int64_t offset = 0;
    for (int d = 0; d < Rank; d++) offset += idx[d] * strides_[d];
    return data_[offset];
  }

  static Extents dense_strides(const Extents &shape) {
    Extents s{};
    std::int64_t n = 1;
    for (int d = Rank - 1; d >= 0; d--) {
      s[d] = n;
      n *= shape[d];
    }
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
// elements: 62-65 ms with malloc's 16-byte alignment, 48-50 ms aligned).
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U> &) {}  // NOLINT
  T *allocate(std::size_t n) { return static_cast<T *>(::operator new(n * sizeof(T), kAlignment)); }
  void deallocate(T *p, std::size_t) { ::operator delete(p, kAlignment); }
  friend bool operator==(const CacheLineAllocator &, const CacheLineAllocator &) { return true; }
  friend bool operator!=(const CacheLineAllocator &, const CacheLineAllocator &) { return false; }
};

// A std::vector with that storage, for element buffers that are not Arrays (the hpipe tool's).
template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

// A dense C-order host array that owns its elements (zero-initialised, 64-byte aligned).
template <class T, int Rank>
class Array {
 public:
  using Extents = typename View<T, Rank>::Extents;
  Array() = default;
  explicit Array(const Extents &shape) : shape_(shape), data_(count(shape)) {}

  View<T, Rank> view() { return View<T, Rank>(data_.data(), shape_); }
  View<const T, Rank> view() const { return View<const T, Rank>(data_.data(), shape_); }
  operator View<T, Rank>() { return view(); }                    // NOLINT
  operator View<const T, Rank>() const { return view(); }        // NOLINT

  const Extents &shape() const { return shape_; }
  std::int64_t shape(int d) const { return shape_[d]; }
  std::int64_t size() const { return static_cast<std::int64_t>(data_.size()); }
  T *data() { return data_.data(); }
  const T *data() const { return data_.data(); }
  template <class... I>
  T &operator()(I... index) { return view()(index...); }
  template <class... I>
  const T &operator()(I... index) const { return view()(index...); }

 private:
  static std::size_t count(const Extents &shape) {
    std::int64_t n = 1;
    for (auto e : shape) n *= e;
    return static_cast<std::size_t>(n < 0 ? 0 : n);
  }
  Extents shape_{};
  AlignedVector<T> data_;
};

}  // namespace hpipe
