// TuneAllocator (common/allocator_tuning.h): blocks below 32 MiB come from
// the heap, so a segment's scan reuses the pages the previous one freed.
#include "common/allocator_tuning.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace daruma {
namespace {

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
TEST(AllocatorTuningTest, BlocksBelow32MiBComeFromTheHeapAndStayMappedWhenFreed) {
  TuneAllocator();
  const size_t mmapped_before = mallinfo2().hblks;
  char* big = static_cast<char*>(std::malloc(size_t(40) << 20));
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(mallinfo2().hblks, mmapped_before + 1);  // 32 MiB and more: mmap() as before
  std::free(big);
  std::vector<char*> blocks;
  for (size_t mib : {1, 4, 16, 31}) {
    blocks.push_back(static_cast<char*>(std::malloc(mib << 20)));
    ASSERT_NE(blocks.back(), nullptr);
    blocks.back()[0] = 1;
  }
  EXPECT_EQ(mallinfo2().hblks, mmapped_before);  // none of them is an mmap() of its own
  for (char* b : blocks) std::free(b);
  // Freed, the heap's top is kept (below the 64 MiB trim threshold).
  EXPECT_GE(mallinfo2().fordblks, size_t(16) << 20);
}
#endif

}  // namespace
}  // namespace daruma
