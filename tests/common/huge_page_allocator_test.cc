#include "common/huge_page_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace daruma {
namespace {

// Small blocks come from the heap, large ones are 2 MiB-aligned mappings;
// both hold what is written to every byte, and free cleanly (ASan checks the
// heap side, munmap of the wrong range would fault on reuse).
TEST(HugePageAllocatorTest, SmallAndLargeBlocksHoldTheirBytes) {
  for (size_t bytes : {size_t(1), size_t(4096), kHugePageBytes - 1, kHugePageBytes,
                       kHugePageBytes + 1, 3 * kHugePageBytes + 123}) {
    auto* p = static_cast<uint8_t*>(AllocateHugePageBacked(bytes));
    ASSERT_NE(p, nullptr) << bytes;
    if (bytes >= kHugePageBytes) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u) << bytes;
    }
    for (size_t i = 0; i < bytes; ++i) p[i] = uint8_t(i * 7);
    for (size_t i = 0; i < bytes; i += 4093) ASSERT_EQ(p[i], uint8_t(i * 7)) << bytes;
    EXPECT_EQ(p[bytes - 1], uint8_t((bytes - 1) * 7));
    FreeHugePageBacked(p, bytes);
  }
  FreeHugePageBacked(nullptr, kHugePageBytes);  // as operator delete: a no-op
}

// A vector growing through the heap/mapping boundary keeps its elements in
// order, and two large blocks alive at once do not overlap.
TEST(HugePageAllocatorTest, AVectorGrowsAcrossTheBoundaryKeepingItsElements) {
  std::vector<int64_t, HugePageAllocator<int64_t>> v;
  const int64_t n = int64_t(3 * kHugePageBytes / sizeof(int64_t));
  for (int64_t i = 0; i < n; ++i) v.push_back(i * 3);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(v[size_t(i)], i * 3);
  std::vector<int64_t, HugePageAllocator<int64_t>> w(v);
  ASSERT_NE(w.data(), v.data());
  v.assign(v.size(), -1);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(w[size_t(i)], i * 3);
}

}  // namespace
}  // namespace daruma
