// The host allocator every hpipe kernel uses for its scratch (installed once, with the error handler).
#pragma once

#include <cstddef>
#include <utility>

namespace hpipe::detail {

// Makes Halide's halide_malloc/halide_free keep large freed blocks for reuse. A kernel allocates
// its per-task scratch on every call (e.g. one band's TV dual, ~1 MiB per task); glibc serves such
// sizes with fresh mmap pages, so without a cache every call pays a page fault per 4 KiB of them.
void install_block_cache();

// Uninitialised host scratch from the same cache: the runtime's own per-call buffers (the vectorial
// TV's duals), which as Arrays were fresh zeroed pages on every call. Scratch<T> holds `count`
// elements.
void *acquire_scratch(std::size_t bytes);
void release_scratch(void *data);

template <class T>
class Scratch {
 public:
  explicit Scratch(std::size_t count) : data_(static_cast<T *>(acquire_scratch(count * sizeof(T)))) {}
  Scratch(Scratch &&other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
  Scratch &operator=(Scratch &&other) noexcept {
    std::swap(data_, other.data_);
    return *this;
  }
  ~Scratch() { release_scratch(data_); }
  T *data() const { return data_; }

 private:
  T *data_;
};

}  // namespace hpipe::detail
