// The host allocator every hpipe kernel uses for its scratch (installed once, with the error handler).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "hpipe/view.h"

namespace hpipe::detail {

// Makes Halide's halide_malloc/halide_free keep large freed blocks for reuse. A kernel allocates
// its per-task scratch on every call (e.g. one band's TV dual, ~1 MiB per task); glibc serves such
// sizes with fresh mmap pages, so without a cache every call pays a page fault per 4 KiB of them.
void install_block_cache();

// `bytes` of host memory from the same cache (uninitialised, 128-byte aligned), for an op's own
// temporaries (a reconstruction's state, a transposed copy of an input): a call after another gets
// memory already mapped, where fresh pages cost a fault each (a 10-iteration GAP-TV run of 28 x 256
// x 256 spent a fifth of its time on its two state cubes' faults; docs/performance-notes.md).
class ScratchBlock {
 public:
  explicit ScratchBlock(std::size_t bytes);  // std::bad_alloc when it cannot
  ~ScratchBlock();
  ScratchBlock(const ScratchBlock &) = delete;
  ScratchBlock &operator=(const ScratchBlock &) = delete;
  void *data() const { return data_; }

 private:
  void *data_;
};

// A dense C-order array of T in a ScratchBlock, uninitialised.
template <class T, std::size_t R>
class ScratchArray {
 public:
  explicit ScratchArray(const std::array<std::int64_t, R> &shape) : shape_(shape), block_(bytes(shape)) {}
  T *data() const { return static_cast<T *>(block_.data()); }
  View<T, static_cast<int>(R)> view() const { return View<T, static_cast<int>(R)>(data(), shape_); }

 private:
  static std::size_t bytes(const std::array<std::int64_t, R> &shape) {
    std::size_t n = sizeof(T);
    for (std::int64_t e : shape) n *= static_cast<std::size_t>(e);  // shapes the ops have checked
    return n;
  }
  std::array<std::int64_t, R> shape_;
  ScratchBlock block_;
};

}  // namespace hpipe::detail
