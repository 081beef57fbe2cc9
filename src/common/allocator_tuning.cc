#include "common/allocator_tuning.h"

#include <cstdlib>  // defines __GLIBC__ (through <features.h>) on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#endif

namespace daruma {

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
namespace {

constexpr size_t kMmapThreshold = size_t(32) << 20;
constexpr size_t kTrimThreshold = size_t(64) << 20;
constexpr uintptr_t kHugePage = uintptr_t(2) << 20;

std::atomic<bool> tuned{false};

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
  std::free(block);
}

#else

void TuneAllocator() {}

void ReserveHugePages(size_t) {}

#endif

}  // namespace daruma
