// The host allocator every hpipe kernel uses for its scratch (installed once, with the error handler).
#pragma once

#include <cstddef>

namespace hpipe::detail {

// Makes Halide's halide_malloc/halide_free keep large freed blocks for reuse. A kernel allocates
// its per-task scratch on every call (e.g. one band's TV dual, ~1 MiB per task); glibc serves such
// sizes with fresh mmap pages, so without a cache every call pays a page fault per 4 KiB of them.
void install_block_cache();

// `bytes` of host memory from the same cache (uninitialised, 128-byte aligned), for an op's own
// temporaries that live across its kernel calls (a reconstruction's state): a run after another
// gets memory already mapped, where fresh pages cost a fault each (a 10-iteration GAP-TV run of
// 28 x 256 x 256 spent a fifth of its time on its two state cubes' faults; docs/performance-notes.md).
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

}  // namespace hpipe::detail
