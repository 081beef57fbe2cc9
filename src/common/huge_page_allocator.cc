#include "common/huge_page_allocator.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace daruma {

namespace {

size_t RoundUpToHugePage(size_t bytes) {
  return (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
}

}  // namespace

void* AllocateHugePageBacked(size_t bytes) {
  if (bytes < kHugePageBytes) return ::operator new(bytes);
  const size_t size = RoundUpToHugePage(bytes);
  // One huge page more than needed, so that a 2 MiB-aligned range of `size`
  // lies inside; the head and tail around it are unmapped at once, leaving a
  // mapping of exactly [start, start + size), which the free unmaps.
  void* raw = ::mmap(nullptr, size + kHugePageBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = (begin + kHugePageBytes - 1) & ~uintptr_t(kHugePageBytes - 1);
  const size_t head = size_t(start - begin);
  if (head > 0) ::munmap(raw, head);
  if (kHugePageBytes - head > 0) {
    ::munmap(reinterpret_cast<void*>(start + size), kHugePageBytes - head);
  }
  // Only a hint: a kernel without THP, or with it off, keeps 4 KiB pages.
  ::madvise(reinterpret_cast<void*>(start), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(start);
}

void FreeHugePageBacked(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (bytes < kHugePageBytes) {
    ::operator delete(p);
    return;
  }
  ::munmap(p, RoundUpToHugePage(bytes));
}

}  // namespace daruma
