// Every .log under fixtures/kafka-generated decodes to exactly the batches
// listed in its batches.csv (all five codecs included).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "common/file_system.h"
#include "record/file_batch_reader.h"
#include "support/batches_csv.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::BatchesCsvRow;

class KafkaGeneratedBatches : public ::testing::TestWithParam<std::string> {};

TEST_P(KafkaGeneratedBatches, EveryLogDecodesToBatchesCsv) {
  DARUMA_REQUIRE_FIXTURES();
  namespace fs = std::filesystem;
  const std::string scenario = testing::FixturesDir() + "/kafka-generated/" + GetParam();
  auto expected = testing::ReadBatchesCsv(scenario + "/batches.csv");
  ASSERT_FALSE(expected.empty());
  std::string partition_dir;
  for (auto& e : fs::directory_iterator(scenario + "/logdir")) {
    if (e.is_directory()) partition_dir = e.path().string();
  }
  std::map<int64_t, std::vector<BatchesCsvRow>> by_segment;
  for (const auto& b : expected) by_segment[b.segment_base].push_back(b);

  size_t matched = 0;
  for (auto& [segment, batches] : by_segment) {
    char name[32];
    std::snprintf(name, sizeof(name), "%020lld.log", static_cast<long long>(segment));
    auto file = FileSystem::Default()->Open(partition_dir + "/" + name, OpenMode::kRead);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    FileBatchReader reader(file->get());
    for (const BatchesCsvRow& want : batches) {
      auto entry = reader.Next();
      if (!entry) {
        // Only the torn final batch of the crash scenario may be missing.
        EXPECT_EQ(GetParam(), "unclean-torn-tail");
        EXPECT_EQ(reader.stop_reason(), StopReason::kTornTail);
        EXPECT_EQ(int64_t(reader.position()), want.position);
        break;
      }
      ASSERT_TRUE(entry->Validate().ok()) << entry->Validate().ToString();
      RecordBatchView b = entry->batch();
      EXPECT_EQ(entry->position, want.position);
      EXPECT_EQ(int64_t(entry->size()), want.size);
      EXPECT_EQ(b.base_offset(), want.base_offset);
      EXPECT_EQ(b.last_offset(), want.last_offset);
      EXPECT_EQ(int64_t(b.last_offset_delta()) + 1, want.offset_count);
      EXPECT_EQ(std::string(CompressionName(b.compression())), want.compression);
      EXPECT_EQ(b.producer_id(), want.producer_id);
      EXPECT_EQ(b.producer_epoch(), want.producer_epoch);
      EXPECT_EQ(b.base_sequence(), want.base_sequence);
      EXPECT_EQ(b.is_transactional(), want.is_transactional);
      EXPECT_EQ(b.is_control(), want.is_control);
      EXPECT_EQ(b.partition_leader_epoch(), want.leader_epoch);
      EXPECT_EQ(b.max_timestamp(), want.max_timestamp);
      auto records = b.DecodeRecords();
      ASSERT_TRUE(records.ok()) << records.status().ToString();
      ASSERT_EQ(int64_t(records->size()), want.offset_count);
      EXPECT_EQ(records->front().offset, want.base_offset);
      EXPECT_EQ(records->back().offset, want.last_offset);
      ++matched;
    }
  }
  size_t torn = GetParam() == "unclean-torn-tail" ? 1 : 0;
  EXPECT_EQ(matched + torn, expected.size());
}

INSTANTIATE_TEST_SUITE_P(Scenarios, KafkaGeneratedBatches,
                         ::testing::Values("multi-segment-idempotent", "transactional",
                                           "compressed", "unclean-torn-tail"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (auto& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace daruma
