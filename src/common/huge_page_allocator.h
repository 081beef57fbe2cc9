// HugePageAllocator: a std::allocator for vectors that grow to tens of MiB,
// live briefly and are then freed, such as a recovery scan's retained batches
// (log/segment_recovery_scan.h).
//
// A block that large comes from mmap() whatever the allocator does (glibc's
// mmap threshold cannot exceed 32 MiB), so each new vector faults its pages
// in afresh, one 4 KiB page at a time. On this project's 2-vCPU VM a fault
// costs ~11 µs (a hypervisor exit): touching 64 MiB took 180 ms in 4 KiB
// pages and 11-62 ms as transparent huge pages. Blocks of 2 MiB and more are
// therefore mapped 2 MiB-aligned and marked MADV_HUGEPAGE, which the kernel
// honours in its default THP mode ("madvise"); where THP is off, the hint is
// ignored and the block behaves as any mmap()ed one. Smaller blocks come
// from operator new.
//
// The cost is memory: a touched block holds whole 2 MiB pages, so a vector
// that reserves ahead (as the scan does) keeps up to 2 MiB more resident
// than it filled.
#pragma once

#include <cstddef>

namespace daruma {

// `bytes` from the heap, or from a 2 MiB-aligned mapping advised for huge
// pages when bytes >= kHugePageBytes. Throws std::bad_alloc as operator new.
void* AllocateHugePageBacked(size_t bytes);
// Frees what AllocateHugePageBacked(bytes) returned (the same `bytes`).
void FreeHugePageBacked(void* p, size_t bytes) noexcept;

inline constexpr size_t kHugePageBytes = size_t(2) << 20;

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  static_assert(alignof(T) <= alignof(std::max_align_t), "operator new's alignment suffices");

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT: rebinding

  T* allocate(size_t n) { return static_cast<T*>(AllocateHugePageBacked(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { FreeHugePageBacked(p, n * sizeof(T)); }

  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) { return true; }
};

}  // namespace daruma
