// Offset indexes written by Kafka < 2.0 key each entry by the FIRST offset of
// its append, not the last (spec §14, §15.2). Daruma's lazy check of an index
// it does not rebuild (VerifyIndexesOnFirstLoad) must accept such an index
// as it is: no rebuild, no rewritten file, the same reads.
#include <gtest/gtest.h>

#include <string>

#include "common/bytes.h"
#include "common/clock.h"
#include "common/file_system.h"
#include "log/log.h"
#include "log/log_file_names.h"
#include "log/log_segment.h"
#include "record/record_batch_builder.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

using testing::kT0;
constexpr int kBatches = 40;
constexpr int kRecordsPerBatch = 3;

class FirstOffsetIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.index_interval_bytes = 200;
    dir_ = tmp_.Join("t-0");
    ManualClock clock(kT0);
    auto log =
        Log::CreateEmpty(FileSystem::Default(), dir_, TopicPartition{"t", 0}, config_, &clock);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    for (int b = 0; b < kBatches; ++b) {
      std::vector<RecordInput> records;
      for (int r = 0; r < kRecordsPerBatch; ++r) {
        records.push_back({kT0 + b, "k", std::string(40, char('a' + b % 26)), {}});
      }
      auto batch = BuildRecordBatch(BatchBuilderOptions{}, records);
      ASSERT_TRUE(batch.ok());
      ASSERT_TRUE((*log)->AppendAsLeader(*batch, 0).ok());
    }
    ASSERT_TRUE((*log)->Close().ok());
    index_path_ = OffsetIndexFileName(dir_, 0);
    const std::string last_keyed = ReadFileToString(index_path_);
    ASSERT_GE(last_keyed.size(), 3 * OffsetIndex::kEntrySize);
    // The same entries keyed by the first offset of each indexed batch.
    first_keyed_ = last_keyed;
    for (size_t e = 0; e < first_keyed_.size(); e += OffsetIndex::kEntrySize) {
      auto* p = reinterpret_cast<uint8_t*>(first_keyed_.data()) + e;
      StoreBe32(p, LoadBe32(p) - uint32_t(kRecordsPerBatch - 1));
    }
    WriteStringToFile(index_path_, first_keyed_);
  }

  TempDir tmp_;
  std::string dir_;
  LogConfig config_;
  std::string index_path_;
  std::string first_keyed_;
};

TEST_F(FirstOffsetIndexTest, APreTwoZeroIndexIsAcceptedAndLeftAsItIs) {
  auto segment = LogSegment::Open(FileSystem::Default(), dir_, 0, config_, true);
  ASSERT_TRUE(segment.ok()) << segment.status().ToString();
  std::string warned;
  (*segment)->VerifyIndexesOnFirstLoad([&warned](const std::string& w) { warned = w; });
  auto next = (*segment)->ReadNextOffset();
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(*next, kBatches * kRecordsPerBatch);
  for (int64_t offset = 0; offset < kBatches * kRecordsPerBatch; offset += 7) {
    auto read = (*segment)->Read(offset, 1, (*segment)->size(), /*min_one_message=*/true);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    ASSERT_TRUE(read->has_value()) << offset;
    const int64_t base = int64_t(LoadBe64((*read)->bytes.data()));
    EXPECT_EQ(base, offset / kRecordsPerBatch * kRecordsPerBatch) << offset;
  }
  EXPECT_EQ(warned, "");
  EXPECT_EQ((*segment)->index_rebuild_warning(), "");
  ASSERT_TRUE((*segment)->Close().ok());
  EXPECT_EQ(ReadFileToString(index_path_), first_keyed_);
}

TEST_F(FirstOffsetIndexTest, AnEntryBelowItsBatchIsStillRebuilt) {
  // The last entry now names an offset before the batch it points at: no
  // Kafka version wrote that, and a lookup through it would be wrong.
  std::string bad = first_keyed_;
  auto* last = reinterpret_cast<uint8_t*>(bad.data()) + bad.size() - OffsetIndex::kEntrySize;
  StoreBe32(last, LoadBe32(last) - 1);
  WriteStringToFile(index_path_, bad);
  auto segment = LogSegment::Open(FileSystem::Default(), dir_, 0, config_, true);
  ASSERT_TRUE(segment.ok()) << segment.status().ToString();
  (*segment)->VerifyIndexesOnFirstLoad(nullptr);
  auto next = (*segment)->ReadNextOffset();
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(*next, kBatches * kRecordsPerBatch);
  EXPECT_NE((*segment)->index_rebuild_warning().find("does not point at a batch"),
            std::string::npos)
      << (*segment)->index_rebuild_warning();
}

}  // namespace
}  // namespace daruma
