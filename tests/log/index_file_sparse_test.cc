// A preallocated index left behind by a crash (10 MiB, mostly a hole) keeps
// Kafka's entry count but is read only up to its hole: memory per index stays
// at kilobytes, not megabytes.
#include <gtest/gtest.h>

#include <filesystem>

#include "log/offset_index.h"
#include "support/test_support.h"

namespace daruma {
namespace {

TEST(IndexFileSparseTest, CrashLeftPreallocatedIndexIsReadOnlyUpToItsHole) {
  testing::TempDir tmp;
  const std::string path = tmp.Join("00000000000000000000.index");
  {
    auto index = OffsetIndex::Open(path, 0);
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    ASSERT_TRUE((*index)->Append(10, 4100).ok());
    ASSERT_TRUE((*index)->Append(20, 8200).ok());
    ASSERT_TRUE((*index)->WriteAppended().ok());
    // Destroyed without Close: the file keeps its preallocated 10 MiB.
  }
  ASSERT_EQ(std::filesystem::file_size(path), 10u * 1024 * 1024);
  auto reopened = OffsetIndex::Open(path, 0);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  // Kafka's count: every slot of the 10 MiB file, the unwritten ones as zeros.
  EXPECT_EQ((*reopened)->entries(), 10u * 1024 * 1024 / 8);
  EXPECT_EQ((*reopened)->Entry(0), (OffsetPosition{10, 4100}));
  EXPECT_EQ((*reopened)->Entry(1), (OffsetPosition{20, 8200}));
  EXPECT_EQ((*reopened)->Entry(1000000), (OffsetPosition{0, 0}));
  // A zero slot fails the entry check, so the loader rebuilds such an index.
  EXPECT_TRUE((*reopened)->CheckEntries(1 << 20).IsCorruption());
  // Rebuilding starts from nothing.
  ASSERT_TRUE((*reopened)->Reset().ok());
  EXPECT_EQ((*reopened)->entries(), 0u);
  EXPECT_EQ((*reopened)->length(), 10u * 1024 * 1024);
}

}  // namespace
}  // namespace daruma
