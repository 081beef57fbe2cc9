// OffsetIndex (spec §7.1, §7.2, §7.5): file sizes, exact bytes, lookup and
// truncation rules.
#include "log/offset_index.h"

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

std::string Be32(uint32_t v) {
  return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

std::unique_ptr<OffsetIndex> OpenIndex(const std::string& path, int64_t base,
                                       int32_t max_size = 65536) {
  auto index = OffsetIndex::Open(path, base, max_size);
  EXPECT_TRUE(index.ok()) << index.status().ToString();
  return std::move(index).value();
}

TEST(OffsetIndexTest, FreshFileIsPreallocatedToWholeEntries) {
  TempDir dir;
  auto index = OpenIndex(dir.Join("a.index"), 0, 65536);
  EXPECT_EQ(ReadFileToString(dir.Join("a.index")), std::string(65536, '\0'));
  EXPECT_EQ(index->entries(), 0u);
  EXPECT_EQ(index->max_entries(), 8192u);
  auto odd = OpenIndex(dir.Join("b.index"), 0, 65539);
  EXPECT_EQ(ReadFileToString(dir.Join("b.index")).size(), 65536u);
}

TEST(OffsetIndexTest, AppendAndCloseTrimsToExactBigEndianEntries) {
  TempDir dir;
  const std::string path = dir.Join("00000000000000000100.index");
  auto index = OpenIndex(path, 100);
  ASSERT_TRUE(index->Append(100, 0).ok());
  ASSERT_TRUE(index->Append(105, 4100).ok());
  ASSERT_TRUE(index->Append(0x10000064, 0x01020304).ok());  // relative 0x10000000
  EXPECT_EQ(index->entries(), 3u);
  EXPECT_EQ(index->LastOffset(), 0x10000064);
  ASSERT_TRUE(index->Close().ok());
  EXPECT_EQ(ReadFileToString(path),
            Be32(0) + Be32(0) + Be32(5) + Be32(4100) + Be32(0x10000000) + Be32(0x01020304));
}

TEST(OffsetIndexTest, AppendRejectsNonIncreasingOffsetNamingFileAndOffsets) {
  TempDir dir;
  auto index = OpenIndex(dir.Join("x.index"), 0);
  ASSERT_TRUE(index->Append(10, 0).ok());
  Status st = index->Append(10, 50);
  EXPECT_EQ(st.code(), StatusCode::kInvalidOffset);
  EXPECT_NE(st.message().find("(10)"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(dir.Join("x.index")), std::string::npos) << st.message();
  EXPECT_EQ(index->Append(9, 50).code(), StatusCode::kInvalidOffset);
  EXPECT_EQ(index->entries(), 1u);
}

TEST(OffsetIndexTest, EmptyIndexAcceptsBaseOffsetAndRejectsOverflow) {
  TempDir dir;
  auto index = OpenIndex(dir.Join("x.index"), 50);
  EXPECT_EQ(index->Append(49, 0).code(), StatusCode::kOffsetOverflow);
  EXPECT_EQ(index->Append(50L + 0x80000000L, 0).code(), StatusCode::kOffsetOverflow);
  EXPECT_TRUE(index->Append(50, 0).ok());
}

TEST(OffsetIndexTest, FullIndexRejectsAppend) {
  TempDir dir;
  auto index = OpenIndex(dir.Join("x.index"), 0, 16);
  ASSERT_TRUE(index->Append(1, 1).ok());
  EXPECT_FALSE(index->IsFull());
  ASSERT_TRUE(index->Append(2, 2).ok());
  EXPECT_TRUE(index->IsFull());
  EXPECT_EQ(index->Append(3, 3).code(), StatusCode::kInvalidArgument);
}

TEST(OffsetIndexTest, LookupFindsLargestEntryAtOrBelowTarget) {
  TempDir dir;
  auto index = OpenIndex(dir.Join("x.index"), 100);
  EXPECT_EQ(index->Lookup(500), (OffsetPosition{100, 0}));  // empty
  for (int i = 1; i <= 3000; ++i) ASSERT_TRUE(index->Append(100 + 10 * i, 1000 * i).ok());
  EXPECT_EQ(index->Lookup(105), (OffsetPosition{100, 0}));     // below first entry
  EXPECT_EQ(index->Lookup(110), (OffsetPosition{110, 1000}));  // exact first
  EXPECT_EQ(index->Lookup(119), (OffsetPosition{110, 1000}));
  EXPECT_EQ(index->Lookup(15105), (OffsetPosition{15100, 1500000}));  // cold section
  EXPECT_EQ(index->Lookup(30095), (OffsetPosition{30090, 2999000}));  // warm section
  EXPECT_EQ(index->Lookup(99999), (OffsetPosition{30100, 3000000}));  // past the end
  EXPECT_EQ(index->Entry(2), (OffsetPosition{130, 3000}));
}

TEST(OffsetIndexTest, TruncateToDropsEntryEqualToOffsetAndEverythingAfter) {
  TempDir dir;
  auto index = OpenIndex(dir.Join("x.index"), 0);
  for (int64_t o : {10, 20, 30, 40}) ASSERT_TRUE(index->Append(o, int32_t(o * 100)).ok());
  index->TruncateTo(45);
  EXPECT_EQ(index->entries(), 4u);
  index->TruncateTo(35);  // keeps 30
  EXPECT_EQ(index->entries(), 3u);
  EXPECT_EQ(index->LastOffset(), 30);
  index->TruncateTo(20);  // equal: drops 20
  EXPECT_EQ(index->entries(), 1u);
  EXPECT_EQ(index->LastOffset(), 10);
  index->TruncateTo(5);  // none <= 5: drops all
  EXPECT_EQ(index->entries(), 0u);
  EXPECT_EQ(index->LastOffset(), 0);
  ASSERT_TRUE(index->Append(7, 1).ok());  // appending resumes after truncation
  ASSERT_TRUE(index->Close().ok());
  EXPECT_EQ(ReadFileToString(dir.Join("x.index")), Be32(7) + Be32(1));
}

TEST(OffsetIndexTest, ExistingFileEntriesAreLengthOverEntrySizeWithoutZeroScan) {
  TempDir dir;
  const std::string path = dir.Join("x.index");
  // Two real entries, then an untrimmed zero tail and 3 stray bytes.
  WriteStringToFile(path, Be32(1) + Be32(0) + Be32(2) + Be32(70) + std::string(16 + 3, '\0'));
  auto index = OpenIndex(path, 1000);
  EXPECT_EQ(index->entries(), 4u);
  EXPECT_EQ(index->max_entries(), 4u);
  EXPECT_TRUE(index->IsFull());
  EXPECT_EQ(index->LastOffset(), 1000);  // the zero slot reads as (base, 0)
  Status st = index->SanityCheck();
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("35 bytes"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(path), std::string::npos);
}

TEST(OffsetIndexTest, SanityCheckAcceptsTrimmedAndRejectsNegativeRelativeOffset) {
  TempDir dir;
  const std::string path = dir.Join("x.index");
  WriteStringToFile(path, Be32(1) + Be32(0) + Be32(0xffffffff) + Be32(70));
  auto index = OpenIndex(path, 1000);
  EXPECT_EQ(index->LastOffset(), 999);
  Status st = index->SanityCheck();
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("last offset is 999"), std::string::npos) << st.message();
  auto good = OpenIndex(dir.Join("empty.index"), 5);
  EXPECT_TRUE(good->SanityCheck().ok());
}

TEST(OffsetIndexTest, ResetAndResizeKeepFileSizesLikeKafka) {
  TempDir dir;
  const std::string path = dir.Join("x.index");
  auto index = OpenIndex(path, 0, 800);
  ASSERT_TRUE(index->Append(3, 30).ok());
  ASSERT_TRUE(index->Append(4, 40).ok());
  ASSERT_TRUE(index->TrimToValidSize().ok());
  EXPECT_EQ(ReadFileToString(path).size(), 16u);
  EXPECT_TRUE(index->IsFull());
  ASSERT_TRUE(index->Resize(800).ok());
  EXPECT_EQ(ReadFileToString(path),
            Be32(3) + Be32(30) + Be32(4) + Be32(40) + std::string(784, '\0'));
  EXPECT_EQ(index->entries(), 2u);
  EXPECT_EQ(index->Resize(8).code(), StatusCode::kInvalidArgument);  // would lose entries
  ASSERT_TRUE(index->Reset().ok());
  EXPECT_EQ(index->entries(), 0u);
  // Already at max size: like Kafka, the old bytes stay behind the entry count.
  EXPECT_EQ(ReadFileToString(path).size(), 800u);
  ASSERT_TRUE(index->Append(9, 90).ok());
  ASSERT_TRUE(index->TrimToValidSize().ok());
  ASSERT_TRUE(index->Reset().ok());  // from the trimmed size: re-extended with zeros
  EXPECT_EQ(ReadFileToString(path), std::string(800, '\0'));
  ASSERT_TRUE(index->Flush().ok());
}

// Recovery's rebuild of an active segment's index: the bytes must be those
// of Kafka's trim followed by its resize back to the full size (the entries,
// then zeros), whether the stale entries behind them were written by this
// handle or found in the file when it was opened.
TEST(OffsetIndexTest, TrimThenResizeLeavesTheBytesOfATrimAndAResize) {
  TempDir dir;
  const std::string path = dir.Join("x.index");
  {
    auto writer = OpenIndex(path, 0, 800);
    for (int i = 1; i <= 5; ++i) ASSERT_TRUE(writer->Append(i, i * 10).ok());
    ASSERT_TRUE(writer->Flush().ok());
  }  // not closed cleanly: 800 bytes, five entries, then zeros
  ASSERT_EQ(ReadFileToString(path).size(), 800u);
  auto index = OpenIndex(path, 0, 800);
  index->Truncate();
  ASSERT_TRUE(index->Append(7, 70).ok());
  ASSERT_TRUE(index->Append(8, 80).ok());
  ASSERT_TRUE(index->TrimThenResize(800).ok());
  const std::string expected = Be32(7) + Be32(70) + Be32(8) + Be32(80) + std::string(784, '\0');
  EXPECT_EQ(ReadFileToString(path), expected);
  EXPECT_EQ(index->entries(), 2u);
  // Stale entries this handle wrote itself are cleared too.
  for (int i = 9; i <= 12; ++i) ASSERT_TRUE(index->Append(i, i * 10).ok());
  ASSERT_TRUE(index->Flush().ok());
  index->TruncateTo(9);  // keeps the entries below offset 9
  ASSERT_TRUE(index->TrimThenResize(800).ok());
  EXPECT_EQ(ReadFileToString(path), expected);
  // Another size: a real trim, and a resize that leaves the file at its
  // entries until an append maps it.
  ASSERT_TRUE(index->TrimThenResize(400).ok());
  EXPECT_EQ(ReadFileToString(path), expected.substr(0, 16));
  EXPECT_EQ(index->max_entries(), 50u);
  ASSERT_TRUE(index->Append(9, 90).ok());
  ASSERT_TRUE(index->Close().ok());
  EXPECT_EQ(ReadFileToString(path), expected.substr(0, 16) + Be32(9) + Be32(90));
}

TEST(OffsetIndexTest, ReopenAfterCloseSeesEntries) {
  TempDir dir;
  const std::string path = dir.Join("x.index");
  {
    auto index = OpenIndex(path, 10);
    ASSERT_TRUE(index->Append(12, 100).ok());
    ASSERT_TRUE(index->Close().ok());
  }
  auto index = OpenIndex(path, 10);
  EXPECT_EQ(index->entries(), 1u);
  EXPECT_EQ(index->max_entries(), 1u);  // an existing file is not re-extended
  EXPECT_EQ(index->Entry(0), (OffsetPosition{12, 100}));
}

TEST(OffsetIndexTest, ReadOnlyOpenNeverCreatesOrWrites) {
  TempDir dir;
  auto missing = OffsetIndex::Open(dir.Join("none.index"), 0, 65536, FileSystem::Default(), false);
  EXPECT_TRUE(missing.status().IsNotFound());
  EXPECT_FALSE(FileSystem::Default()->Exists(dir.Join("none.index")));
  WriteStringToFile(dir.Join("r.index"), Be32(1) + Be32(2));
  auto index = OffsetIndex::Open(dir.Join("r.index"), 0, 65536, FileSystem::Default(), false);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ((*index)->Append(5, 5).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE((*index)->Close().ok());
  EXPECT_EQ(ReadFileToString(dir.Join("r.index")), Be32(1) + Be32(2));
}

TEST(OffsetIndexTest, RenameAndDelete) {
  TempDir dir;
  auto index = OpenIndex(dir.Join("x.index"), 0, 64);
  ASSERT_TRUE(index->RenameTo(dir.Join("x.index.deleted")).ok());
  EXPECT_EQ(index->path(), dir.Join("x.index.deleted"));
  EXPECT_TRUE(FileSystem::Default()->Exists(dir.Join("x.index.deleted")));
  bool existed = false;
  ASSERT_TRUE(index->DeleteIfExists(&existed).ok());
  EXPECT_TRUE(existed);
  ASSERT_TRUE(index->DeleteIfExists(&existed).ok());
  EXPECT_FALSE(existed);
}

}  // namespace
}  // namespace daruma
