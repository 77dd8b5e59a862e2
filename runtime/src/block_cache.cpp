#include "block_cache.h"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>

#include "HalideRuntime.h"

namespace hpipe::detail {

namespace {

constexpr std::size_t kAlignment = 128;          // >= every Halide target's halide_malloc_alignment()
constexpr std::size_t kLarge = 64 * 1024;        // blocks below this go straight back to malloc
constexpr std::size_t kCacheLimit = 256u << 20;  // bytes kept for reuse, at most
constexpr std::size_t kCacheBlocks = 64;         // blocks kept, at most

struct Block {
  std::size_t size;  // usable bytes after the header
  void *base;        // what malloc (or allocate_host, for huge blocks) returned
};

// The free blocks, oldest first, in storage that is never destroyed: a std::vector here would be
// freed by the static destructors at exit, and LeakSanitizer then reports every cached block as
// leaked; from this array they stay reachable until the process ends.
std::mutex mutex;
Block cached[kCacheBlocks];
std::size_t cached_count = 0;
std::size_t cached_bytes = 0;

void remove_cached(std::size_t i) {
  cached_bytes -= cached[i].size;
  std::copy(cached + i + 1, cached + cached_count, cached + i);
  cached_count--;
}

// The usable bytes start at the first multiple of kAlignment at least kAlignment bytes after the
// start; the header in front of them holds the size and the start. Blocks come from plain malloc,
// aligned here: glibc serves aligned_alloc on a slow path of its own (for a small kernel call's
// scratch, a third of the call), malloc's small sizes from per-thread caches. Blocks of
// kHugePagesFrom bytes and more come from allocate_host, in huge pages.
void *user_pointer(void *base) {
  const std::uintptr_t start = reinterpret_cast<std::uintptr_t>(base) + kAlignment;
  return reinterpret_cast<void *>((start + kAlignment - 1) / kAlignment * kAlignment);
}
Block &header(void *user) { return *reinterpret_cast<Block *>(static_cast<char *>(user) - kAlignment); }

void *cached_malloc(void *, std::size_t size) {
  if (size > SIZE_MAX - 3 * kAlignment) return nullptr;  // the rounding below would wrap
  const std::size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded >= kLarge) {
    std::lock_guard<std::mutex> lock(mutex);
    // The smallest cached block that fits without wasting more than its own size.
    std::size_t best = cached_count;
    for (std::size_t i = 0; i < cached_count; i++)
      if (cached[i].size >= rounded && cached[i].size <= 2 * rounded &&
          (best == cached_count || cached[i].size < cached[best].size))
        best = i;
    if (best != cached_count) {
      void *base = cached[best].base;
      remove_cached(best);
      return user_pointer(base);
    }
  }
  const std::size_t bytes = rounded + 2 * kAlignment;
  void *base = nullptr;
  if (bytes < kHugePagesFrom) {
    base = std::malloc(bytes);
  } else {
    try {
      base = allocate_host(bytes);
    } catch (const std::bad_alloc &) {}
  }
  if (!base) return nullptr;
  header(user_pointer(base)) = Block{rounded, base};
  return user_pointer(base);
}

void cached_free(void *, void *user) {
  if (!user) return;
  const Block b = header(user);
  if (b.size >= kLarge && b.size <= kCacheLimit) {
    std::lock_guard<std::mutex> lock(mutex);
    while (cached_count > 0 && (cached_bytes + b.size > kCacheLimit || cached_count == kCacheBlocks)) {
      std::free(cached[0].base);  // malloc and allocate_host memory alike
      remove_cached(0);
    }
    cached[cached_count++] = b;
    cached_bytes += b.size;
    return;
  }
  std::free(b.base);
}

}  // namespace

void *allocate_host(std::size_t bytes) {
  constexpr std::size_t kHugePage = std::size_t(2) << 20, kCacheLine = 64;
  const bool huge = bytes >= kHugePagesFrom;
  void *data = nullptr;
  if (posix_memalign(&data, huge ? kHugePage : kCacheLine, bytes ? bytes : 1) != 0) throw std::bad_alloc();
  // Within the allocation's own pages; a kernel without transparent huge pages says no, harmlessly.
  if (huge) madvise(data, (bytes + 4095) / 4096 * 4096, MADV_HUGEPAGE);
  return data;
}

void free_host(void *data) noexcept { std::free(data); }

ScratchBlock::ScratchBlock(std::size_t bytes) : data_(cached_malloc(nullptr, bytes)) {
  if (!data_) throw std::bad_alloc();
}

ScratchBlock::~ScratchBlock() { cached_free(nullptr, data_); }

void install_block_cache() {
  static std::once_flag once;
  std::call_once(once, [] {
    halide_set_custom_malloc(cached_malloc);
    halide_set_custom_free(cached_free);
    // A fork while another thread holds the lock would leave the child's copy locked for good (its
    // first kernel with large scratch hung): the forking thread takes it across the fork.
    pthread_atfork([] { mutex.lock(); }, [] { mutex.unlock(); }, [] { mutex.unlock(); });
  });
}

}  // namespace hpipe::detail
