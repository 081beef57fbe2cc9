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

#include "common/sanitizers.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace daruma {
namespace {

#if defined(__GLIBC__) && !defined(DARUMA_ADDRESS_SANITIZER)
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

// Whether the first whole huge page of a fresh 8 MiB block lies in memory
// advised for huge pages.
void ExpectTheNextBlockAdvised() {
  constexpr uintptr_t kHugePage = uintptr_t(2) << 20;
  char* block = static_cast<char*>(std::malloc(size_t(8) << 20));
  ASSERT_NE(block, nullptr);
  const uintptr_t huge_page = (uintptr_t(block) + kHugePage - 1) & ~(kHugePage - 1);
  EXPECT_NE(VmFlagsAt(huge_page).find(" hg"), std::string::npos)
      << "the mapping at " << std::hex << huge_page << ": " << VmFlagsAt(huge_page);
  std::free(block);
}

TEST(AllocatorTuningTest, AReserveAdvisesTheThreadsNextAllocationsForHugePages) {
  if (TransparentHugePagesOff()) GTEST_SKIP() << "transparent huge pages are off";
  TuneAllocator();
  // A thread of its own gets an arena of its own, like a loading thread.
  std::thread([] {
    ReserveHugePages(size_t(16) << 20);
    // All but the reserve's first bytes are free in the arena, not unmapped.
    EXPECT_GE(mallinfo2().fordblks, size_t(15) << 20);
    // The next block is carved from that free memory.
    ExpectTheNextBlockAdvised();
    // From 32 MiB on a block would be an mmap() of its own: no reserve then.
    const struct mallinfo2 before = mallinfo2();
    ReserveHugePages(size_t(32) << 20);
    EXPECT_EQ(mallinfo2().arena, before.arena);
    EXPECT_EQ(mallinfo2().fordblks, before.fordblks);
  }).join();
}

// A thread heap holds ~64 MiB: a reserve that does not fit in what is left
// opens a new heap, which must not be unmapped again when the reserve is
// freed (glibc deletes a thread heap that becomes empty).
TEST(AllocatorTuningTest, AReserveThatOpensANewHeapKeepsIt) {
  if (TransparentHugePagesOff()) GTEST_SKIP() << "transparent huge pages are off";
  TuneAllocator();
  std::thread([] {
    std::vector<void*> held;
    for (int i = 0; i < 52; ++i) held.push_back(std::malloc(size_t(1) << 20));
    ReserveHugePages(size_t(16) << 20);
    ExpectTheNextBlockAdvised();
    for (void* b : held) std::free(b);
  }).join();
}
#endif

}  // namespace
}  // namespace daruma
