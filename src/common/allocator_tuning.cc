#include "common/allocator_tuning.h"

#include <cstdlib>  // defines __GLIBC__ (through <features.h>) on glibc

#include "common/sanitizers.h"

#if defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#endif

namespace daruma {

#if defined(__GLIBC__) && !defined(DARUMA_ADDRESS_SANITIZER)
namespace {

constexpr size_t kMmapThreshold = size_t(32) << 20;
constexpr size_t kTrimThreshold = size_t(64) << 20;
constexpr uintptr_t kHugePage = uintptr_t(2) << 20;
constexpr size_t kAnchorBytes = 64;

std::atomic<bool> tuned{false};

// The first bytes of the calling thread's last reserve, kept allocated so
// that the rest of it, freed, never leaves its heap empty: glibc deletes a
// thread's heap that becomes empty whatever the trim threshold (heap_trim),
// which would unmap a reserve that had to open a new heap (one that did not
// fit in what is left of the ~64 MiB of the thread's current heap). Freed at
// the thread's next reserve or when it ends.
struct Anchor {
  void* block = nullptr;
  ~Anchor() { std::free(block); }
};
thread_local Anchor anchor;

}  // namespace

void TuneAllocator() {
  // Setting either value turns off glibc's own adjustment of both, which
  // would only raise the mmap threshold after a block of that size was freed.
  mallopt(M_MMAP_THRESHOLD, int(kMmapThreshold));
  mallopt(M_TRIM_THRESHOLD, int(kTrimThreshold));
  tuned.store(true, std::memory_order_release);
}

void ReserveHugePages(size_t bytes) {
  // Only below the mmap threshold does the block come from the arena (and
  // go back to it when freed); untuned, it would be an mmap of its own.
  if (!tuned.load(std::memory_order_acquire) || bytes >= kMmapThreshold) return;
  void* block = std::malloc(bytes);
  if (block == nullptr) return;
  const uintptr_t begin = (uintptr_t(block) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (uintptr_t(block) + bytes) & ~(kHugePage - 1);
  // Advice only: a kernel without THP refuses it, and the pages stay small.
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  // glibc shrinks a heap block in place: the anchor keeps the block's first
  // bytes, and the rest is freed into the arena (into its top, where the
  // block was carved from the top).
  void* kept = std::realloc(block, kAnchorBytes);
  if (kept == nullptr) {
    std::free(block);
    return;
  }
  std::free(anchor.block);
  anchor.block = kept;
}

#else

void TuneAllocator() {}

void ReserveHugePages(size_t) {}

#endif

}  // namespace daruma
