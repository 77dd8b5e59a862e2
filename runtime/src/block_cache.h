// The host allocator every hpipe kernel uses for its scratch (installed once, with the error handler).
#pragma once

namespace hpipe::detail {

// Makes Halide's halide_malloc/halide_free keep large freed blocks for reuse. A kernel allocates
// its per-task scratch on every call (e.g. one band's TV dual, ~1 MiB per task); glibc serves such
// sizes with fresh mmap pages, so without a cache every call pays a page fault per 4 KiB of them.
void install_block_cache();

}  // namespace hpipe::detail
