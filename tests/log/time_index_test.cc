// TimeIndex (spec §7.1, §7.3, §7.5): preallocation, the append ignore/reject
// rules, lookup, truncation, sanity checks.
#include "log/time_index.h"

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

std::string BigEndian32(uint32_t v) {
  return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}
std::string BigEndian64(uint64_t v) {
  return BigEndian32(uint32_t(v >> 32)) + BigEndian32(uint32_t(v));
}
std::string Entry(int64_t ts, uint32_t rel) {
  return BigEndian64(uint64_t(ts)) + BigEndian32(rel);
}

std::unique_ptr<TimeIndex> OpenTimeIndex(const std::string& path, int64_t base,
                                         int32_t max_size = 65536) {
  auto index = TimeIndex::Open(path, base, max_size);
  EXPECT_TRUE(index.ok()) << index.status().ToString();
  return std::move(index).value();
}

TEST(TimeIndexTest, FreshFileIsPreallocatedToWholeEntries) {
  TempDir dir;
  auto index = OpenTimeIndex(dir.Join("t.timeindex"), 0, 65536);
  EXPECT_EQ(ReadFileToString(dir.Join("t.timeindex")), std::string(65532, '\0'));
  EXPECT_EQ(index->max_entries(), 5461u);
  EXPECT_EQ(index->LastEntry(), (TimestampOffset{-1, 0}));
}

TEST(TimeIndexTest, AppendsOnlyGreaterTimestampsAndTrimsOnClose) {
  TempDir dir;
  const std::string path = dir.Join("t.timeindex");
  auto index = OpenTimeIndex(path, 100);
  ASSERT_TRUE(index->MaybeAppend(-1, 100).ok());  // not > last (-1): ignored
  EXPECT_EQ(index->entries(), 0u);
  ASSERT_TRUE(index->MaybeAppend(1700000000000, 104).ok());
  ASSERT_TRUE(index->MaybeAppend(1700000000000, 104).ok());  // identical: ignored
  ASSERT_TRUE(index->MaybeAppend(1700000000000, 110).ok());  // equal ts: ignored
  ASSERT_TRUE(index->MaybeAppend(1700000000500, 110).ok());
  EXPECT_EQ(index->entries(), 2u);
  EXPECT_EQ(index->LastEntry(), (TimestampOffset{1700000000500, 110}));
  ASSERT_TRUE(index->Close().ok());
  EXPECT_EQ(ReadFileToString(path), Entry(1700000000000, 4) + Entry(1700000000500, 10));
}

TEST(TimeIndexTest, RejectsSmallerOffsetOrTimestampBeforeIgnoring) {
  TempDir dir;
  auto index = OpenTimeIndex(dir.Join("t.timeindex"), 0);
  ASSERT_TRUE(index->MaybeAppend(1000, 50).ok());
  // Offset going back is an error even when the timestamp would be ignored.
  Status st = index->MaybeAppend(900, 40);
  EXPECT_EQ(st.code(), StatusCode::kInvalidOffset);
  EXPECT_NE(st.message().find("(40)"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("(50)"), std::string::npos) << st.message();
  st = index->MaybeAppend(999, 60);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("timestamp (999)"), std::string::npos) << st.message();
  EXPECT_EQ(index->entries(), 1u);
}

TEST(TimeIndexTest, FullLeavesOneSlotForTheFinalEntry) {
  TempDir dir;
  auto index = OpenTimeIndex(dir.Join("t.timeindex"), 0, 36);  // 3 slots
  ASSERT_TRUE(index->MaybeAppend(10, 1).ok());
  EXPECT_FALSE(index->IsFull());
  ASSERT_TRUE(index->MaybeAppend(20, 2).ok());
  EXPECT_TRUE(index->IsFull());
  EXPECT_EQ(index->MaybeAppend(30, 3).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(index->MaybeAppend(30, 3, /*skip_full_check=*/true).ok());
  EXPECT_EQ(index->entries(), 3u);
  EXPECT_EQ(index->MaybeAppend(40, 4, true).code(), StatusCode::kInvalidArgument);
}

// segment.index.bytes 4-11 (Kafka's minimum is 4): no slot at all, so the
// roll's entry is dropped instead of failing every roll.
TEST(TimeIndexTest, AnIndexWithoutASlotDropsTheRollsEntry) {
  TempDir dir;
  auto index = OpenTimeIndex(dir.Join("t.timeindex"), 0, 11);
  EXPECT_EQ(index->max_entries(), 0u);
  EXPECT_TRUE(index->IsFull());
  EXPECT_EQ(index->MaybeAppend(10, 1).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(index->MaybeAppend(10, 1, /*skip_full_check=*/true).ok());
  EXPECT_EQ(index->entries(), 0u);
}

TEST(TimeIndexTest, LookupByTimestamp) {
  TempDir dir;
  auto index = OpenTimeIndex(dir.Join("t.timeindex"), 1000);
  EXPECT_EQ(index->Lookup(5), (TimestampOffset{-1, 1000}));
  for (int i = 1; i <= 2000; ++i) ASSERT_TRUE(index->MaybeAppend(100 * i, 1000 + 3 * i).ok());
  EXPECT_EQ(index->Lookup(99), (TimestampOffset{-1, 1000}));
  EXPECT_EQ(index->Lookup(100), (TimestampOffset{100, 1003}));
  EXPECT_EQ(index->Lookup(50050), (TimestampOffset{50000, 2500}));
  EXPECT_EQ(index->Lookup(199999), (TimestampOffset{199900, 6997}));
  EXPECT_EQ(index->Lookup(1 << 30), (TimestampOffset{200000, 7000}));
}

TEST(TimeIndexTest, TruncateToUsesOffsets) {
  TempDir dir;
  auto index = OpenTimeIndex(dir.Join("t.timeindex"), 0);
  ASSERT_TRUE(index->MaybeAppend(10, 5).ok());
  ASSERT_TRUE(index->MaybeAppend(20, 9).ok());
  ASSERT_TRUE(index->MaybeAppend(30, 9).ok());
  ASSERT_TRUE(index->MaybeAppend(40, 15).ok());
  index->TruncateTo(12);  // largest offset <= 12 is 9 (slot 2), kept
  EXPECT_EQ(index->entries(), 3u);
  EXPECT_EQ(index->LastEntry().offset, 9);
  index->TruncateTo(9);
  EXPECT_EQ(index->LastEntry(), (TimestampOffset{10, 5}));
  index->TruncateTo(0);
  EXPECT_EQ(index->entries(), 0u);
  EXPECT_EQ(index->LastEntry(), (TimestampOffset{-1, 0}));
}

TEST(TimeIndexTest, UntrimmedZeroTailFailsTheTimestampSanityCheck) {
  TempDir dir;
  const std::string path = dir.Join("t.timeindex");
  WriteStringToFile(path, Entry(1700000000000, 3) + std::string(24, '\0'));
  auto index = OpenTimeIndex(path, 500);
  EXPECT_EQ(index->entries(), 3u);
  EXPECT_EQ(index->LastEntry(), (TimestampOffset{0, 500}));
  Status st = index->SanityCheck();
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("last timestamp is 0"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(path), std::string::npos);
}

TEST(TimeIndexTest, SanityChecksOffsetAndLength) {
  TempDir dir;
  WriteStringToFile(dir.Join("a.timeindex"), Entry(5, 0xfffffffe));
  auto a = OpenTimeIndex(dir.Join("a.timeindex"), 500);
  Status st = a->SanityCheck();
  EXPECT_NE(st.message().find("last offset is 498"), std::string::npos) << st.message();
  WriteStringToFile(dir.Join("b.timeindex"), Entry(5, 1) + "xy");
  auto b = OpenTimeIndex(dir.Join("b.timeindex"), 0);
  EXPECT_EQ(b->entries(), 1u);
  st = b->SanityCheck();
  EXPECT_NE(st.message().find("14 bytes"), std::string::npos) << st.message();
  WriteStringToFile(dir.Join("c.timeindex"), Entry(5, 1) + Entry(5, 2));
  EXPECT_TRUE(OpenTimeIndex(dir.Join("c.timeindex"), 0)->SanityCheck().ok());
}

TEST(TimeIndexTest, ResetReextendsToMax) {
  TempDir dir;
  const std::string path = dir.Join("t.timeindex");
  auto index = OpenTimeIndex(path, 0, 120);
  ASSERT_TRUE(index->MaybeAppend(7, 1).ok());
  ASSERT_TRUE(index->TrimToValidSize().ok());
  EXPECT_EQ(ReadFileToString(path), Entry(7, 1));
  ASSERT_TRUE(index->Reset().ok());
  EXPECT_EQ(index->entries(), 0u);
  EXPECT_EQ(ReadFileToString(path), std::string(120, '\0'));
}

}  // namespace
}  // namespace daruma
