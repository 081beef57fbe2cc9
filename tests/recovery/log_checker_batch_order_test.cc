// FindBatchOrderCut (recovery/batch_order_check.h): the catalogue of damaged
// header fields the batch CRC does not cover, one case each, and where the
// cut starts: at the earliest batch that may carry the damage.
#include <gtest/gtest.h>

#include "recovery/batch_order_check.h"

namespace daruma {
namespace {

// Segments of batches of 3 offsets each, at positions 0, 100, 200, ...
// `epochs[s]` is the epoch of every batch of segment s.
std::vector<CheckedSegment> CheckedLog(int segments, int batches, std::vector<int32_t> epochs) {
  std::vector<CheckedSegment> out;
  int64_t offset = 0;
  for (int s = 0; s < segments; ++s) {
    CheckedSegment seg;
    seg.base_offset = offset;
    for (int b = 0; b < batches; ++b) {
      seg.batches.push_back({b * 100, offset, offset + 2, 0, epochs[size_t(s)]});
      offset += 3;
    }
    out.push_back(seg);
  }
  return out;
}

TEST(BatchOrderCutTest, ValidLogHasNoCut) {
  EXPECT_FALSE(FindBatchOrderCut(CheckedLog(3, 4, {0, 1, 5})).has_value());
  EXPECT_FALSE(FindBatchOrderCut({}).has_value());
}

TEST(BatchOrderCutTest, GapsAreValid) {
  auto log = CheckedLog(2, 4, {0, 0});
  log[1].batches[2].base_offset += 10;  // compaction leaves gaps
  log[1].batches[2].last_offset += 10;
  log[1].batches[3].base_offset += 10;
  log[1].batches[3].last_offset += 10;
  EXPECT_FALSE(FindBatchOrderCut(log).has_value());
}

TEST(BatchOrderCutTest, BaseOffsetFlippedUpCutsAtThatBatch) {
  auto log = CheckedLog(3, 4, {0, 0, 0});
  log[1].batches[1].base_offset += 65536;  // 15 -> 65551; next batch starts at 18
  log[1].batches[1].last_offset += 65536;
  auto cut = FindBatchOrderCut(log);
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->segment, 1u);
  EXPECT_EQ(cut->batch, 1u);
  EXPECT_NE(cut->what.find("the batch at offset 18 (position 200 of segment 12): expected a "
                           "baseOffset above 65553"),
            std::string::npos)
      << cut->what;
}

TEST(BatchOrderCutTest, BaseOffsetFlippedDownCutsAtTheEarliestBatchAboveIt) {
  auto log = CheckedLog(3, 4, {0, 0, 0});
  log[2].batches[2].base_offset = 4;  // 30 -> 4: every batch from offset 3 on is above it
  auto cut = FindBatchOrderCut(log);
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->segment, 0u);
  EXPECT_EQ(cut->batch, 1u);
}

TEST(BatchOrderCutTest, BaseOffsetBelowItsSegmentBase) {
  auto log = CheckedLog(2, 4, {0, 0});
  log[0].batches[0].base_offset = -8;
  auto cut = FindBatchOrderCut(log);
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->segment, 0u);
  EXPECT_EQ(cut->batch, 0u);
  EXPECT_NE(cut->what.find("expected a baseOffset >= the segment's base offset 0, found -8"),
            std::string::npos)
      << cut->what;
}

TEST(BatchOrderCutTest, EpochFlippedUpCutsAtThatBatch) {
  auto log = CheckedLog(3, 4, {1, 1, 2});
  log[0].batches[2].leader_epoch = 1 + (1 << 23);
  auto cut = FindBatchOrderCut(log);
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->segment, 0u);
  EXPECT_EQ(cut->batch, 2u);
  EXPECT_NE(cut->what.find("expected a partitionLeaderEpoch >= 8388609 (leader epochs never "
                           "decrease), found 1"),
            std::string::npos)
      << cut->what;
}

TEST(BatchOrderCutTest, EpochFlippedDownCutsAtTheFirstBatchOfAHigherEpoch) {
  auto log = CheckedLog(3, 4, {1, 3, 3});
  log[2].batches[1].leader_epoch = 2;  // below epoch 3, which starts at segment 1
  auto cut = FindBatchOrderCut(log);
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->segment, 1u);
  EXPECT_EQ(cut->batch, 0u);
}

TEST(BatchOrderCutTest, BatchesWithoutAnEpochAreSkipped) {
  auto log = CheckedLog(2, 4, {4, 5});
  log[1].batches[1].leader_epoch = -1;  // e.g. converted from message format v1
  EXPECT_FALSE(FindBatchOrderCut(log).has_value());
}

TEST(BatchOrderCutTest, TheEarliestSuspectOfSeveralViolationsWins) {
  auto log = CheckedLog(3, 4, {0, 0, 0});
  log[2].batches[0].leader_epoch = 9;   // epoch violation from segment 2 on
  log[1].batches[3].base_offset = 100;  // offset violation at segment 1's last batch
  log[1].batches[3].last_offset = 102;
  auto cut = FindBatchOrderCut(log);
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->segment, 1u);
  EXPECT_EQ(cut->batch, 3u);
}

}  // namespace
}  // namespace daruma
