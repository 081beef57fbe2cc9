// Log::DeleteOldSegments (spec §11.2, Kafka's deleteOldSegments): which
// segments go, in which order, and what happens to their files. Every
// segment holds one one-record batch (segment.bytes below two batches), so
// segment i has base offset i.
#include <gtest/gtest.h>

#include <algorithm>

#include "log/log.h"
#include "log/log_file_names.h"
#include "record/record_batch_builder.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::TempDir;

constexpr int64_t kNow = 1700000000000;
constexpr int64_t kHour = 3600000;

class LogRetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.segment_bytes = 100;  // one batch per segment
    config_.retention_ms = -1;
    config_.retention_bytes = -1;
  }

  std::string dir() const { return tmp_.Join("t-0"); }

  void Open() {
    auto log =
        Log::CreateEmpty(FileSystem::Default(), dir(), TopicPartition{"t", 0}, config_, &clock_);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log_ = std::move(*log);
  }

  // One segment per timestamp; the high watermark follows the log end.
  void AppendSegments(const std::vector<int64_t>& timestamps) {
    for (int64_t ts : timestamps) {
      RecordInput record;
      record.timestamp = ts;
      record.key = "key";
      record.value = "value";
      auto batch = BuildRecordBatch({}, {record});
      ASSERT_TRUE(batch.ok());
      batch_size_ = int64_t(batch->size());
      auto info = log_->AppendAsLeader(*batch, 0);
      ASSERT_TRUE(info.ok()) << info.status().ToString();
    }
    log_->UpdateHighWatermark(log_->log_end_offset());
  }

  std::vector<int64_t> BasesOf(const Log::RetentionResult& r) {
    std::vector<int64_t> bases;
    for (const auto& s : r.segments) bases.push_back(s->base_offset());
    return bases;
  }

  Log::RetentionResult Retain() {
    auto r = log_->DeleteOldSegments();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(*r) : Log::RetentionResult{};
  }

  TempDir tmp_;
  ManualClock clock_{kNow};
  LogConfig config_;
  std::unique_ptr<Log> log_;
  int64_t batch_size_ = 0;
};

TEST_F(LogRetentionTest, TimeDeletesTheExpiredPrefixAndRenamesFilesToDeleted) {
  config_.retention_ms = 10 * kHour;
  Open();
  AppendSegments({kNow - 30 * kHour, kNow - 20 * kHour, kNow - 5 * kHour, kNow - kHour});
  ASSERT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, 1, 2, 3}));

  Log::RetentionResult r = Retain();

  EXPECT_EQ(BasesOf(r), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(log_->log_start_offset(), 2);
  for (int64_t base : {0, 1}) {
    EXPECT_TRUE(FileSystem::Default()->Exists(LogFileName(dir(), base, kDeletedFileSuffix)));
    EXPECT_TRUE(
        FileSystem::Default()->Exists(OffsetIndexFileName(dir(), base, kDeletedFileSuffix)));
    EXPECT_TRUE(FileSystem::Default()->Exists(TimeIndexFileName(dir(), base, kDeletedFileSuffix)));
    EXPECT_FALSE(FileSystem::Default()->Exists(LogFileName(dir(), base)));
  }
  // The snapshot taken when segment 1 was rolled is marked for deletion too.
  EXPECT_EQ(r.deleted_snapshots,
            (std::vector<std::string>{ProducerSnapshotFileName(dir(), 1) + ".deleted"}));
  EXPECT_TRUE(FileSystem::Default()->Exists(r.deleted_snapshots[0]));

  for (auto& segment : r.segments) ASSERT_TRUE(segment->DeleteFiles().ok());
  EXPECT_FALSE(FileSystem::Default()->Exists(LogFileName(dir(), 0, kDeletedFileSuffix)));
}

TEST_F(LogRetentionTest, TimeStopsAtTheFirstSegmentThatIsNotExpired) {
  config_.retention_ms = 10 * kHour;
  Open();
  // Segment 2 is expired but segment 1 is not: Kafka's walk stops at 1.
  AppendSegments({kNow - 30 * kHour, kNow - kHour, kNow - 30 * kHour, kNow});
  EXPECT_EQ(BasesOf(Retain()), (std::vector<int64_t>{0}));
  EXPECT_EQ(log_->log_start_offset(), 1);
}

TEST_F(LogRetentionTest, TimeNeedsStrictlyMoreThanRetentionMs) {
  config_.retention_ms = 10 * kHour;
  Open();
  AppendSegments({kNow - 10 * kHour, kNow});
  EXPECT_TRUE(Retain().segments.empty());
  clock_.Advance(1);
  EXPECT_EQ(BasesOf(Retain()), (std::vector<int64_t>{0}));
}

TEST_F(LogRetentionTest, TimeUsesTheLogMtimeWhenTheSegmentHasNoTimestamp) {
  config_.retention_ms = 10 * kHour;
  Open();
  AppendSegments({kNoTimestamp, kNow});
  ASSERT_TRUE(
      FileSystem::Default()->SetModifiedTimeMs(LogFileName(dir(), 0), kNow - 11 * kHour).ok());
  EXPECT_EQ(BasesOf(Retain()), (std::vector<int64_t>{0}));
}

TEST_F(LogRetentionTest, UnlimitedRetentionDeletesNothing) {
  Open();
  AppendSegments({0, 1, 2});
  EXPECT_TRUE(Retain().segments.empty());
  EXPECT_EQ(log_->num_segments(), 3u);
}

TEST_F(LogRetentionTest, SizeDeletesWhileTheExcessCoversTheWholeSegment) {
  Open();
  AppendSegments({kNow, kNow, kNow, kNow, kNow});
  // Size 5B, retention 2.5B: excess 2.5B covers two segments, not a third.
  config_.retention_bytes = 5 * batch_size_ / 2;
  log_->UpdateConfig(config_);
  EXPECT_EQ(BasesOf(Retain()), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(log_->size_in_bytes(), 3 * batch_size_);
  EXPECT_EQ(log_->log_start_offset(), 2);
}

TEST_F(LogRetentionTest, SizeExactlyAtTheLimitDeletesNothing) {
  Open();
  AppendSegments({kNow, kNow, kNow});
  config_.retention_bytes = 3 * batch_size_;
  log_->UpdateConfig(config_);
  EXPECT_TRUE(Retain().segments.empty());
}

TEST_F(LogRetentionTest, NothingAtOrAboveTheHighWatermarkIsDeleted) {
  config_.retention_ms = 10 * kHour;
  Open();
  AppendSegments({kNow - 30 * kHour, kNow - 30 * kHour, kNow - 30 * kHour});
  log_->UpdateHighWatermark(1);  // segment 1 reaches up to offset 2 > 1
  EXPECT_EQ(BasesOf(Retain()), (std::vector<int64_t>{0}));
  EXPECT_EQ(log_->log_start_offset(), 1);
}

TEST_F(LogRetentionTest, BelowTheLogStartOffsetEvenWithoutDeletePolicy) {
  config_.delete_policy = false;
  config_.compact = true;
  config_.retention_ms = 1;  // ignored: the policy has no delete
  Open();
  AppendSegments({kNow - 30 * kHour, kNow - 30 * kHour, kNow - 30 * kHour, kNow});
  ASSERT_TRUE(log_->MaybeIncrementLogStartOffset(2).ok());
  // Segment 1 goes because the next segment's base (2) <= log start (2);
  // segment 2 holds the log start offset and stays.
  EXPECT_EQ(BasesOf(Retain()), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(log_->log_start_offset(), 2);
}

TEST_F(LogRetentionTest, AllSegmentsExpiredRollsFirstAndKeepsTheEmptyActiveSegment) {
  config_.retention_ms = 10 * kHour;
  Open();
  AppendSegments({kNow - 30 * kHour, kNow - 30 * kHour, kNow - 30 * kHour});
  EXPECT_EQ(BasesOf(Retain()), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{3}));
  EXPECT_EQ(log_->log_start_offset(), 3);
  EXPECT_EQ(log_->log_end_offset(), 3);
  EXPECT_TRUE(FileSystem::Default()->Exists(LogFileName(dir(), 3)));
  // An empty last segment is never deleted.
  EXPECT_TRUE(Retain().segments.empty());
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{3}));
}

TEST_F(LogRetentionTest, StartOffsetThenSizeThenTimeInOnePass) {
  config_.retention_ms = 10 * kHour;
  Open();
  AppendSegments(
      {kNow - 30 * kHour, kNow - 30 * kHour, kNow - kHour, kNow - 30 * kHour, kNow, kNow});
  config_.retention_bytes = 4 * batch_size_;
  log_->UpdateConfig(config_);
  ASSERT_TRUE(log_->MaybeIncrementLogStartOffset(1).ok());
  // Start offset: segment 0. Size (5 left, excess 1): segment 1. Time: segment
  // 2 is recent, so the walk stops there.
  const Log::RetentionResult r = Retain();
  EXPECT_EQ(BasesOf(r), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(log_->log_start_offset(), 2);
  // Each segment is told with its breach (the broker logs them as Kafka does).
  ASSERT_EQ(r.breaches.size(), 2u);
  EXPECT_EQ(r.breaches[0].cause, Log::RetentionCause::kLogStartOffset);
  EXPECT_EQ(r.breaches[0].limit, 1);
  EXPECT_EQ(r.breaches[0].first, 0u);
  EXPECT_EQ(r.breaches[0].count, 1u);
  EXPECT_EQ(r.breaches[1].cause, Log::RetentionCause::kRetentionBytes);
  EXPECT_EQ(r.breaches[1].limit, 4 * batch_size_);
  EXPECT_EQ(r.breaches[1].first, 1u);
  EXPECT_EQ(r.breaches[1].count, 1u);
  EXPECT_EQ(r.log_start_offset, 2);
  EXPECT_EQ(Log::RetentionCauseName(r.breaches[1].cause), "retention.bytes");
}

TEST_F(LogRetentionTest, ATimeBreachNamesRetentionMsAndNothingToDeleteNamesNoBreach) {
  config_.retention_ms = 10 * kHour;
  Open();
  AppendSegments({kNow - 30 * kHour, kNow - 20 * kHour, kNow});
  const Log::RetentionResult r = Retain();
  ASSERT_EQ(r.breaches.size(), 1u);
  EXPECT_EQ(r.breaches[0].cause, Log::RetentionCause::kRetentionMs);
  EXPECT_EQ(r.breaches[0].limit, 10 * kHour);
  EXPECT_EQ(r.breaches[0].first, 0u);
  EXPECT_EQ(r.breaches[0].count, 2u);
  EXPECT_EQ(r.log_start_offset, 2);
  EXPECT_TRUE(Retain().breaches.empty());
}

TEST_F(LogRetentionTest, FlushRecordsItsTimeAndCallsTheListener) {
  Open();
  int calls = 0;
  log_->SetFlushListener([&calls] { ++calls; });
  EXPECT_EQ(log_->last_flush_ms(), kNow);  // creation time before any flush
  AppendSegments({kNow});
  clock_.Advance(500);
  ASSERT_TRUE(log_->FlushAll().ok());
  EXPECT_EQ(log_->last_flush_ms(), kNow + 500);
  EXPECT_EQ(calls, 1);
  ASSERT_TRUE(log_->FlushAll().ok());  // nothing new: recovery point unchanged
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace daruma
