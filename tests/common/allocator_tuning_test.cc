// TuneAllocator (common/allocator_tuning.h): blocks below 32 MiB come from
// the heap, so a segment's scan reuses the pages the previous one freed; and
// ReserveHugePages advises a thread's next allocations for huge pages.
#include "common/allocator_tuning.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
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

// The VmFlags of the mapping that holds `address` in /proc/self/smaps ("" if
// none does).
std::string VmFlagsAt(uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = address >= begin && address < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

bool TransparentHugePagesOff() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  return !std::getline(f, mode) || mode.find("[never]") != std::string::npos;
}

TEST(AllocatorTuningTest, AReserveAdvisesTheThreadsNextAllocationsForHugePages) {
  if (TransparentHugePagesOff()) GTEST_SKIP() << "transparent huge pages are off";
  TuneAllocator();
  constexpr uintptr_t kHugePage = uintptr_t(2) << 20;
  // A thread of its own gets an arena of its own, like a loading thread.
  std::thread([] {
    const size_t mmapped_before = mallinfo2().hblks;
    ReserveHugePages(size_t(16) << 20);
    EXPECT_EQ(mallinfo2().hblks, mmapped_before);  // no mmap() of its own
    // The next block is carved from the reserved one, freed to the top of
    // the arena: its first whole huge page lies in advised memory.
    char* block = static_cast<char*>(std::malloc(size_t(8) << 20));
    ASSERT_NE(block, nullptr);
    const uintptr_t huge_page = (uintptr_t(block) + kHugePage - 1) & ~(kHugePage - 1);
    EXPECT_NE(VmFlagsAt(huge_page).find(" hg"), std::string::npos)
        << "the mapping at " << std::hex << huge_page << ": " << VmFlagsAt(huge_page);
    std::free(block);
    // From 32 MiB on a block would be an mmap() of its own: no reserve then.
    ReserveHugePages(size_t(32) << 20);
    EXPECT_EQ(mallinfo2().hblks, mmapped_before);
  }).join();
}
#endif

}  // namespace
}  // namespace daruma
