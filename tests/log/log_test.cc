// Log: a catalogue of the partition log's behaviours, one case each — append
// and read round trips, the four roll triggers, fetch bounds and isolation,
// truncation, flushing, producer-state checks, batch validation, and lookup
// by timestamp.
#include "log/log.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/clock.h"
#include "common/file_system.h"
#include "log/log_file_names.h"
#include "record/record_batch_builder.h"
#include "support/test_support.h"

namespace daruma {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

using testing::kT0;

struct BatchSpec {
  int records = 1;
  int64_t timestamp = kT0;  // of the first record; the others follow by 1 ms
  int64_t producer_id = kNoProducerId;
  int16_t producer_epoch = kNoProducerEpoch;
  int32_t base_sequence = kNoSequence;
  bool transactional = false;
  int value_bytes = 20;
};

Bytes MakeBatch(const BatchSpec& spec) {
  BatchBuilderOptions o;
  o.base_offset = 12345;  // the leader overwrites it
  o.producer_id = spec.producer_id;
  o.producer_epoch = spec.producer_epoch;
  o.base_sequence = spec.base_sequence;
  o.is_transactional = spec.transactional;
  std::vector<RecordInput> records;
  for (int i = 0; i < spec.records; ++i) {
    RecordInput r;
    r.timestamp = spec.timestamp < 0 ? spec.timestamp : spec.timestamp + i;
    r.key = "k" + std::to_string(i);
    r.value = std::string(size_t(spec.value_bytes), char('a' + i % 26));
    records.push_back(r);
  }
  auto batch = BuildRecordBatch(o, records);
  EXPECT_TRUE(batch.ok()) << batch.status().ToString();
  return *batch;
}

// The batches of a fetch, as views into `bytes` (which must outlive them).
std::vector<RecordBatchView> Batches(const Bytes& bytes) {
  std::vector<RecordBatchView> out;
  for (size_t pos = 0; pos + kLogOverhead <= bytes.size();) {
    const size_t size = size_t(LoadBe32(bytes.data() + pos + batch_layout::kLength)) + kLogOverhead;
    auto view = RecordBatchView::Parse(ByteSpan(bytes).subspan(pos, size));
    EXPECT_TRUE(view.ok()) << view.status().ToString();
    if (!view.ok()) break;
    out.push_back(*view);
    pos += size;
  }
  return out;
}

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.segment_index_bytes = 4096;
    config_.index_interval_bytes = 1024;
  }

  void OpenLog() {
    auto log =
        Log::CreateEmpty(FileSystem::Default(), dir(), TopicPartition{"t", 0}, config_, &clock_);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log_ = std::move(*log);
  }

  std::string dir() const { return tmp_.Join("t-0"); }

  LogAppendInfo Append(const BatchSpec& spec, int32_t epoch = 0,
                       AppendOrigin origin = AppendOrigin::kClient) {
    auto info = log_->AppendAsLeader(MakeBatch(spec), epoch, origin);
    EXPECT_TRUE(info.ok()) << info.status().ToString();
    return info.ok() ? *info : LogAppendInfo{};
  }

  Bytes ReadAll(int64_t from, FetchIsolation isolation = FetchIsolation::kLogEnd) {
    auto read = log_->Read(from, 1 << 30, isolation, true);
    EXPECT_TRUE(read.ok()) << read.status().ToString();
    return read.ok() ? read->records : Bytes{};
  }

  TempDir tmp_;
  ManualClock clock_{kT0};
  LogConfig config_;
  std::unique_ptr<Log> log_;
};

// ---- Append and read -------------------------------------------------------

TEST_F(LogTest, LeaderAppendAssignsOffsetsAndStampsLeaderEpoch) {
  OpenLog();
  LogAppendInfo a = Append({.records = 2}, /*epoch=*/7);
  LogAppendInfo b = Append({.records = 3, .timestamp = kT0 + 10}, 7);
  LogAppendInfo c = Append({.records = 1, .timestamp = kT0 + 5}, 9);
  EXPECT_EQ(a.first_offset, 0);
  EXPECT_EQ(a.last_offset, 1);
  EXPECT_EQ(b.first_offset, 2);
  EXPECT_EQ(b.last_offset, 4);
  EXPECT_EQ(b.max_timestamp, kT0 + 12);
  EXPECT_EQ(c.first_offset, 5);
  EXPECT_EQ(log_->log_end_offset(), 6);

  Bytes bytes = ReadAll(0);
  auto batches = Batches(bytes);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].base_offset(), 0);
  EXPECT_EQ(batches[1].base_offset(), 2);
  EXPECT_EQ(batches[2].base_offset(), 5);
  EXPECT_EQ(batches[0].partition_leader_epoch(), 7);
  EXPECT_EQ(batches[2].partition_leader_epoch(), 9);
  for (const auto& batch : batches) EXPECT_TRUE(batch.Validate().ok());
  auto records = batches[1].DecodeRecords(1 << 20);
  ASSERT_TRUE(records.ok());
  EXPECT_EQ((*records)[2].offset, 4);
  EXPECT_EQ(log_->leader_epochs(), (std::vector<EpochEntry>{{7, 0}, {9, 5}}));
}

TEST_F(LogTest, InPlaceAppendWritesFinalBytesIntoCallerBuffer) {
  OpenLog();
  Append({.records = 2});
  Bytes batch = MakeBatch({.records = 1});
  ASSERT_TRUE(log_->AppendAsLeaderInPlace(batch, 3).ok());
  EXPECT_EQ(RecordBatchView(batch).base_offset(), 2);
  EXPECT_EQ(RecordBatchView(batch).partition_leader_epoch(), 3);
  Bytes bytes = ReadAll(2);
  EXPECT_EQ(bytes, batch);
}

TEST_F(LogTest, LogAppendTimeReplacesMaxTimestampAndKeepsCrcValid) {
  config_.log_append_time = true;
  OpenLog();
  clock_.Set(kT0 + 777);
  LogAppendInfo info = Append({.records = 3});
  EXPECT_EQ(info.log_append_time, kT0 + 777);
  EXPECT_EQ(info.max_timestamp, kT0 + 777);
  Bytes bytes = ReadAll(0);
  auto batches = Batches(bytes);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].timestamp_type(), TimestampType::kLogAppendTime);
  EXPECT_EQ(batches[0].max_timestamp(), kT0 + 777);
  EXPECT_TRUE(batches[0].Validate().ok());
}

TEST_F(LogTest, FollowerAppendKeepsOffsetsAndRejectsGoingBackwards) {
  OpenLog();
  Bytes batch = MakeBatch({.records = 2});
  SetBatchBaseOffset(batch, 10);
  SetBatchPartitionLeaderEpoch(batch, 4);
  auto info = log_->AppendAsFollower(batch);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->first_offset, 10);
  EXPECT_EQ(log_->log_end_offset(), 12);
  EXPECT_EQ(log_->leader_epochs(), (std::vector<EpochEntry>{{4, 10}}));
  auto again = log_->AppendAsFollower(batch);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kInvalidOffset);
  EXPECT_NE(again.status().message().find("offset 10 is below the expected offset 12"),
            std::string::npos)
      << again.status().message();
}

// ---- Rolling ---------------------------------------------------------------

TEST_F(LogTest, RollsWhenTheNextAppendWouldExceedSegmentBytes) {
  OpenLog();
  const int64_t batch_size = int64_t(MakeBatch({.records = 1}).size());
  config_.segment_bytes = int32_t(3 * batch_size + batch_size / 2);
  OpenLog();
  for (int i = 0; i < 7; ++i) Append({.records = 1});
  // Three batches fit (size 3b <= segment.bytes - b is false only from 3b on).
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, 3, 6}));
  for (LogSegment* s : log_->segments_for_inspection()) EXPECT_LE(s->size(), config_.segment_bytes);
  // A producer snapshot is taken at every roll.
  EXPECT_TRUE(fs::exists(dir() + "/00000000000000000003.snapshot"));
  EXPECT_TRUE(fs::exists(dir() + "/00000000000000000006.snapshot"));
  // Rolled segments have trimmed indexes; the active one is preallocated.
  EXPECT_EQ(fs::file_size(dir() + "/00000000000000000000.index"), 0u);
  EXPECT_EQ(fs::file_size(dir() + "/00000000000000000006.index"), 4096u);
}

TEST_F(LogTest, RollsWhenTheOffsetIndexIsFull) {
  config_.segment_index_bytes = 48;  // 6 offset-index slots, 4 time-index slots
  config_.index_interval_bytes = 0;  // every append after the first is indexed
  OpenLog();
  // Constant timestamps: the time index gets one entry and never fills.
  for (int i = 0; i < 9; ++i) Append({.records = 1, .timestamp = kT0});
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, 7}));
  EXPECT_EQ(fs::file_size(dir() + "/00000000000000000000.index"), 48u);
}

TEST_F(LogTest, RollsWhenTheTimeIndexIsFull) {
  config_.segment_index_bytes = 36;  // 3 time-index slots: full at 2 entries
  config_.index_interval_bytes = 0;
  OpenLog();
  for (int i = 0; i < 4; ++i) Append({.records = 1, .timestamp = kT0 + i});
  // Appends 1 and 2 add time entries; append 3 finds the time index full.
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, 3}));
}

// segment.index.bytes below one time-index entry: every append rolls (the
// time index is always full), and no roll fails (helper-55: the second
// produce used to stop the log, and with it the whole log dir).
TEST_F(LogTest, AnIndexSizeBelowOneEntryRollsOnEveryAppendAndKeepsWriting) {
  config_.segment_index_bytes = 4;
  OpenLog();
  for (int i = 0; i < 4; ++i) Append({.records = 1, .timestamp = kT0 + i});
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_TRUE(log_->write_failure().ok()) << log_->write_failure().ToString();
  EXPECT_EQ(log_->log_end_offset(), 4);
}

TEST_F(LogTest, RollsOnSegmentMsMeasuredFromTheFirstBatchTimestamp) {
  config_.segment_ms = 1000;
  OpenLog();
  Append({.records = 1, .timestamp = kT0});
  Append({.records = 1, .timestamp = kT0 + 1000});  // waited 1000: not above segment.ms
  EXPECT_EQ(log_->num_segments(), 1u);
  Append({.records = 1, .timestamp = kT0 + 1001});
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, 2}));
}

TEST_F(LogTest, RollsOnSegmentMsMeasuredByTheClockWithoutTimestamps) {
  config_.segment_ms = 1000;
  OpenLog();
  Append({.records = 1, .timestamp = kNoTimestamp});
  clock_.Advance(1000);
  Append({.records = 1, .timestamp = kNoTimestamp});
  EXPECT_EQ(log_->num_segments(), 1u);
  clock_.Advance(1);
  Append({.records = 1, .timestamp = kNoTimestamp});
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, 2}));
}

// Kafka's maxSegmentMs: a compacted topic rolls at max.compaction.lag.ms
// when that is below segment.ms, so the cleaner can meet the lag; a topic
// that is not compacted ignores it.
TEST_F(LogTest, ACompactedLogRollsAtMaxCompactionLagBelowSegmentMs) {
  config_.compact = true;
  config_.max_compaction_lag_ms = 1000;
  OpenLog();
  Append({.records = 1, .timestamp = kT0});
  Append({.records = 1, .timestamp = kT0 + 1000});
  EXPECT_EQ(log_->num_segments(), 1u);
  Append({.records = 1, .timestamp = kT0 + 1001});
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, 2}));

  LogConfig deleted = config_;
  deleted.compact = false;
  EXPECT_EQ(deleted.MaxSegmentMs(), deleted.segment_ms);
  LogConfig longer = config_;
  longer.max_compaction_lag_ms = longer.segment_ms + 1;
  EXPECT_EQ(longer.MaxSegmentMs(), longer.segment_ms);
}

TEST_F(LogTest, RollsWhenAnOffsetCannotBeRelativeToTheSegmentBase) {
  OpenLog();
  Bytes first = MakeBatch({.records = 1});
  SetBatchBaseOffset(first, 0);
  ASSERT_TRUE(log_->AppendAsFollower(first).ok());
  const int64_t far = int64_t(std::numeric_limits<int32_t>::max()) + 5;
  Bytes second = MakeBatch({.records = 2});
  SetBatchBaseOffset(second, far);
  auto info = log_->AppendAsFollower(second);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, far}));
  EXPECT_EQ(log_->log_end_offset(), far + 2);
}

TEST_F(LogTest, ExplicitRollAtTheLogEndIsIdempotentWhileEmpty) {
  OpenLog();
  Append({.records = 2});
  ASSERT_TRUE(log_->Roll().ok());
  ASSERT_TRUE(log_->Roll().ok());
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(log_->recovery_point(), 2);  // the roll flushed the old segment
}

// With a roll-flush scheduler (the log manager's flush-log job), the roll
// leaves the recovery point alone and appends continue; FlushAfterRoll later
// syncs the old segment and moves it. A scheduler that declines flushes inline.
TEST_F(LogTest, ScheduledRollFlushMovesTheRecoveryPointOnlyInTheTask) {
  OpenLog();
  std::vector<int64_t> scheduled;
  log_->SetRollFlushScheduler([&](int64_t offset) {
    scheduled.push_back(offset);
    return true;
  });
  Append({.records = 2});
  ASSERT_TRUE(log_->Roll().ok());
  EXPECT_EQ(scheduled, (std::vector<int64_t>{2}));
  EXPECT_EQ(log_->recovery_point(), 0);
  Append({.records = 3});
  EXPECT_EQ(log_->log_end_offset(), 5);
  ASSERT_TRUE(log_->FlushAfterRoll(2).ok());
  EXPECT_EQ(log_->recovery_point(), 2) << "the task flushes below the new segment only";
  ASSERT_TRUE(log_->FlushAfterRoll(2).ok());
  EXPECT_EQ(log_->recovery_point(), 2) << "a second run changes nothing";

  log_->SetRollFlushScheduler([](int64_t) { return false; });
  ASSERT_TRUE(log_->Roll().ok());
  EXPECT_EQ(log_->recovery_point(), 5) << "declined: the roll flushed inline";
}

// A load may leave the files it rebuilt unsynced only if the next unclean
// start, from the recovery point as it is, rebuilds them: indexes of the
// segment holding the point or later ones, snapshots above that segment's
// base (deleted unread then). The next flush syncs them, a file removed
// since included, and moves the point on.
TEST_F(LogTest, OnlyFilesTheNextUncleanStartRebuildsAreLeftUnsynced) {
  OpenLog();
  Append({.records = 2});
  ASSERT_TRUE(log_->Roll().ok());
  Append({.records = 3});
  ASSERT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, 2}));
  ASSERT_EQ(log_->recovery_point(), 2);  // the roll flushed segment 0

  EXPECT_FALSE(log_->LeaveUnsyncedUntilFlush({ProducerSnapshotFileName(dir(), 2)}));
  EXPECT_FALSE(log_->LeaveUnsyncedUntilFlush({JoinPath(dir(), "not-an-offset.index")}));
  EXPECT_FALSE(log_->LeaveUnsyncedUntilFlush(
      {TimeIndexFileName(dir(), 2), ProducerSnapshotFileName(dir(), 1)}));
  EXPECT_TRUE(
      log_->LeaveUnsyncedUntilFlush({OffsetIndexFileName(dir(), 2), TimeIndexFileName(dir(), 2),
                                     ProducerSnapshotFileName(dir(), 5)}));
  EXPECT_EQ(log_->recovery_point(), 2) << "left where it was";

  // 3: no such file.
  EXPECT_TRUE(log_->LeaveUnsyncedUntilFlush({ProducerSnapshotFileName(dir(), 3)}));
  ASSERT_TRUE(log_->FlushAll().ok());
  EXPECT_EQ(log_->recovery_point(), 5);
}

// Indexes rebuilt below the segment holding the recovery point (they were
// missing) are left unsynced by lowering the point to the lowest of their
// segments, only if the load rebuilt every segment from there up: the next
// unclean start then recovers no segment this load did not. The next flush
// syncs them and moves the point back up.
TEST_F(LogTest, RebuiltIndexesBelowTheRecoveryPointLowerItToTheirSegment) {
  OpenLog();
  for (int s = 0; s < 3; ++s) {
    Append({.records = 2});
    ASSERT_TRUE(log_->Roll().ok());
  }
  Append({.records = 1});
  ASSERT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, 2, 4, 6}));
  ASSERT_EQ(log_->recovery_point(), 6);

  // Segment 2 was not rebuilt: the next start would not rebuild segment 0.
  EXPECT_FALSE(log_->LeaveUnsyncedUntilFlush(
      {OffsetIndexFileName(dir(), 0), TimeIndexFileName(dir(), 0), OffsetIndexFileName(dir(), 4)}));
  EXPECT_EQ(log_->recovery_point(), 6);
  // A snapshot at the lowered point's segment base is read, not rebuilt.
  EXPECT_FALSE(log_->LeaveUnsyncedUntilFlush(
      {OffsetIndexFileName(dir(), 4), ProducerSnapshotFileName(dir(), 4)}));
  EXPECT_EQ(log_->recovery_point(), 6);

  EXPECT_TRUE(log_->LeaveUnsyncedUntilFlush(
      {OffsetIndexFileName(dir(), 2), TimeIndexFileName(dir(), 4), OffsetIndexFileName(dir(), 4),
       OffsetIndexFileName(dir(), 6), ProducerSnapshotFileName(dir(), 7)}));
  EXPECT_EQ(log_->recovery_point(), 2);
  ASSERT_TRUE(log_->FlushAll().ok());
  EXPECT_EQ(log_->recovery_point(), 7);

  // Never below the log start offset: segment 0 holds it, so is rebuilt.
  log_->UpdateHighWatermark(7);
  ASSERT_TRUE(log_->MaybeIncrementLogStartOffset(1).ok());
  EXPECT_TRUE(log_->LeaveUnsyncedUntilFlush(
      {OffsetIndexFileName(dir(), 0), OffsetIndexFileName(dir(), 2), OffsetIndexFileName(dir(), 4),
       OffsetIndexFileName(dir(), 6)}));
  EXPECT_EQ(log_->recovery_point(), 1);
}

// The task runs after a truncation removed the rolled segments: it syncs
// what still exists and never moves the recovery point past the log end.
TEST_F(LogTest, FlushAfterRollOfTruncatedSegmentsStaysWithinTheLog) {
  OpenLog();
  log_->SetRollFlushScheduler([](int64_t) { return true; });
  Append({.records = 2});
  ASSERT_TRUE(log_->Roll().ok());
  Append({.records = 2});
  ASSERT_TRUE(log_->Roll().ok());
  ASSERT_TRUE(log_->TruncateTo(1).ok());
  ASSERT_TRUE(log_->FlushAfterRoll(4).ok());
  EXPECT_EQ(log_->log_end_offset(), 1);
  EXPECT_EQ(log_->recovery_point(), 1);
}

// ---- Reads -----------------------------------------------------------------

TEST_F(LogTest, ReadReturnsWholeBatchesOnly) {
  OpenLog();
  for (int i = 0; i < 5; ++i) Append({.records = 2});
  const int32_t b = int32_t(MakeBatch({.records = 2}).size());
  auto two = log_->Read(0, b * 2 + b / 2, FetchIsolation::kLogEnd, false);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->records.size(), size_t(2 * b));
  EXPECT_EQ(Batches(two->records).size(), 2u);

  auto none = log_->Read(0, b - 1, FetchIsolation::kLogEnd, false);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->records.empty());
  auto one = log_->Read(0, b - 1, FetchIsolation::kLogEnd, true);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->records.size(), size_t(b));

  // From an offset inside a batch: the batch holding it comes first.
  auto middle = log_->Read(5, 1 << 20, FetchIsolation::kLogEnd, false);
  ASSERT_TRUE(middle.ok());
  auto batches = Batches(middle->records);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].base_offset(), 4);

  EXPECT_TRUE(ReadAll(10).empty());  // at the log end
  auto beyond = log_->Read(11, 100, FetchIsolation::kLogEnd, false);
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.status().code(), StatusCode::kOutOfRange);
}

TEST_F(LogTest, ReadTooSmallForTheNextBatchDoesNotSkipToTheNextSegment) {
  OpenLog();
  Append({.records = 1});
  ASSERT_TRUE(log_->Roll().ok());
  Append({.records = 1, .value_bytes = 5});
  auto read = log_->Read(0, 10, FetchIsolation::kLogEnd, false);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->records.empty());
}

TEST_F(LogTest, ReadAcrossSegmentsContinuesInTheNextSegment) {
  OpenLog();
  Append({.records = 2});
  ASSERT_TRUE(log_->Roll().ok());
  Append({.records = 2});
  Bytes bytes = ReadAll(2);
  auto batches = Batches(bytes);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].base_offset(), 2);
}

TEST_F(LogTest, HighWatermarkIsolationStopsAtTheHighWatermark) {
  OpenLog();
  for (int i = 0; i < 3; ++i) Append({.records = 2});
  EXPECT_TRUE(ReadAll(0, FetchIsolation::kHighWatermark).empty());  // HW starts at 0
  log_->UpdateHighWatermark(4);
  Bytes bytes = ReadAll(0, FetchIsolation::kHighWatermark);
  auto batches = Batches(bytes);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].last_offset(), 3);
  log_->UpdateHighWatermark(100);  // clamped to the log end
  EXPECT_EQ(log_->high_watermark(), 6);
}

TEST_F(LogTest, ReadCommittedStopsAtTheLastStableOffsetAndListsAbortedTxns) {
  OpenLog();
  // Producer 7: transaction [0, 1] aborted by the marker at 2.
  Append({.records = 2,
          .producer_id = 7,
          .producer_epoch = 0,
          .base_sequence = 0,
          .transactional = true});
  Bytes abort = BuildEndTxnMarkerBatch(0, 0, 7, 0, ControlRecordType::kAbort, 5, kT0 + 10);
  ASSERT_TRUE(log_->AppendAsLeader(abort, 0, AppendOrigin::kCoordinator).ok());
  Append({.records = 1});  // offset 3, plain
  // Producer 8: transaction opened at 4 and left open.
  Append({.records = 2,
          .producer_id = 8,
          .producer_epoch = 0,
          .base_sequence = 0,
          .transactional = true});
  log_->UpdateHighWatermark(log_->log_end_offset());
  EXPECT_EQ(log_->first_unstable_offset(), std::optional<int64_t>(4));
  EXPECT_EQ(log_->last_stable_offset(), 4);

  auto read = log_->Read(0, 1 << 20, FetchIsolation::kTxnCommitted, false);
  ASSERT_TRUE(read.ok());
  auto batches = Batches(read->records);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches.back().last_offset(), 3);
  const AbortedTxn expected{7, 0, 2, 3};
  EXPECT_EQ(read->aborted_transactions, std::vector<AbortedTxn>{expected});
  EXPECT_EQ(log_->AllAbortedTransactions(), std::vector<AbortedTxn>{expected});
  EXPECT_TRUE(fs::exists(dir() + "/00000000000000000000.txnindex"));
}

// ---- Truncation and flushing ------------------------------------------------

TEST_F(LogTest, TruncateToAcrossSegmentsDeletesLaterSegmentsAndCutsTheContainingOne) {
  OpenLog();
  for (int i = 0; i < 3; ++i) Append({.records = 2}, /*epoch=*/1);
  ASSERT_TRUE(log_->Roll().ok());
  for (int i = 0; i < 3; ++i) Append({.records = 2}, 2);
  ASSERT_TRUE(log_->Roll().ok());
  Append({.records = 2}, 3);
  log_->UpdateHighWatermark(14);
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, 6, 12}));

  auto truncated = log_->TruncateTo(8);
  ASSERT_TRUE(truncated.ok()) << truncated.status().ToString();
  EXPECT_TRUE(*truncated);
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, 6}));
  EXPECT_EQ(log_->log_end_offset(), 8);
  EXPECT_EQ(log_->high_watermark(), 8);
  EXPECT_LE(log_->recovery_point(), 8);
  EXPECT_FALSE(fs::exists(dir() + "/00000000000000000012.log"));
  EXPECT_FALSE(fs::exists(dir() + "/00000000000000000012.snapshot"));
  EXPECT_EQ(log_->leader_epochs(), (std::vector<EpochEntry>{{1, 0}, {2, 6}}));
  Bytes bytes = ReadAll(6);
  auto batches = Batches(bytes);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].base_offset(), 6);

  // Appending continues at the truncation point.
  EXPECT_EQ(Append({.records = 1}, 4).first_offset, 8);
}

TEST_F(LogTest, TruncateToASegmentBaseKeepsThatSegmentEmptyAsKafkaDoes) {
  OpenLog();
  Append({.records = 2});
  ASSERT_TRUE(log_->Roll().ok());
  Append({.records = 2});
  ASSERT_TRUE(log_->TruncateTo(2).ok());
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(log_->active_segment_size(), 0);
  EXPECT_EQ(log_->log_end_offset(), 2);
  EXPECT_FALSE(*log_->TruncateTo(2));  // nothing at or above 2 any more
}

TEST_F(LogTest, TruncateToRebuildsProducerStateUpToTheTruncationPoint) {
  OpenLog();
  // Producer 9 writes sequences 0..5, one per batch; a roll after seq 1.
  for (int seq = 0; seq < 6; ++seq) {
    Append({.records = 1, .producer_id = 9, .producer_epoch = 0, .base_sequence = seq});
    if (seq == 1) {
      ASSERT_TRUE(log_->Roll().ok());
    }
  }
  ASSERT_TRUE(log_->TruncateTo(4).ok());  // keeps sequences 0..3
  auto next = log_->AppendAsLeader(
      MakeBatch({.records = 1, .producer_id = 9, .producer_epoch = 0, .base_sequence = 4}), 0);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->first_offset, 4);
  EXPECT_FALSE(next->duplicate);
}

TEST_F(LogTest, TruncateToBelowTheLogStartRestartsTheLogThere) {
  OpenLog();
  for (int i = 0; i < 3; ++i) Append({.records = 2});
  log_->UpdateHighWatermark(6);
  ASSERT_TRUE(log_->MaybeIncrementLogStartOffset(4).ok());
  ASSERT_TRUE(log_->TruncateTo(2).ok());
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{2}));
  EXPECT_EQ(log_->log_start_offset(), 2);
  EXPECT_EQ(log_->log_end_offset(), 2);
  EXPECT_TRUE(log_->leader_epochs().empty());
  EXPECT_FALSE(fs::exists(dir() + "/00000000000000000000.log"));
  EXPECT_EQ(Append({.records = 1}).first_offset, 2);
}

TEST_F(LogTest, FlushMovesTheRecoveryPoint) {
  OpenLog();
  for (int i = 0; i < 3; ++i) Append({.records = 2});
  EXPECT_EQ(log_->recovery_point(), 0);
  ASSERT_TRUE(log_->Flush(4).ok());
  EXPECT_EQ(log_->recovery_point(), 4);
  ASSERT_TRUE(log_->Flush(2).ok());  // never moves back
  EXPECT_EQ(log_->recovery_point(), 4);
  ASSERT_TRUE(log_->Flush(100).ok());  // capped at the log end
  EXPECT_EQ(log_->recovery_point(), 6);
}

TEST_F(LogTest, FlushMessagesTriggersAFlushAfterAppend) {
  config_.flush_messages = 3;
  OpenLog();
  Append({.records = 2});
  EXPECT_EQ(log_->recovery_point(), 0);
  Append({.records = 1});
  EXPECT_EQ(log_->recovery_point(), 3);
}

TEST_F(LogTest, CloseTakesASnapshotAtTheLogEndAndTrimsIndexes) {
  OpenLog();
  Append({.records = 2, .producer_id = 5, .producer_epoch = 0, .base_sequence = 0});
  ASSERT_TRUE(log_->Close().ok());
  EXPECT_TRUE(fs::exists(dir() + "/00000000000000000002.snapshot"));
  EXPECT_EQ(fs::file_size(dir() + "/00000000000000000000.index"), 0u);
  EXPECT_EQ(fs::file_size(dir() + "/00000000000000000000.timeindex"), 12u);
  EXPECT_EQ(log_->recovery_point(), 2);
}

// ---- Producer checks ---------------------------------------------------------

TEST_F(LogTest, DuplicateIdempotentBatchIsAcknowledgedWithItsOriginalOffsets) {
  OpenLog();
  Bytes first =
      MakeBatch({.records = 3, .producer_id = 11, .producer_epoch = 0, .base_sequence = 0});
  ASSERT_TRUE(log_->AppendAsLeader(first, 0).ok());
  Append({.records = 2, .producer_id = 11, .producer_epoch = 0, .base_sequence = 3});
  const int64_t size = log_->size_in_bytes();
  auto retry = log_->AppendAsLeader(first, 0);
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_TRUE(retry->duplicate);
  EXPECT_EQ(retry->first_offset, 0);
  EXPECT_EQ(retry->last_offset, 2);
  EXPECT_EQ(log_->log_end_offset(), 5);
  EXPECT_EQ(log_->size_in_bytes(), size);
}

TEST_F(LogTest, OutOfOrderSequenceIsRejectedAndNothingIsWritten) {
  OpenLog();
  Append({.records = 1, .producer_id = 12, .producer_epoch = 0, .base_sequence = 0});
  auto gap = log_->AppendAsLeader(
      MakeBatch({.records = 1, .producer_id = 12, .producer_epoch = 0, .base_sequence = 5}), 0);
  ASSERT_FALSE(gap.ok());
  EXPECT_EQ(gap.status().message().rfind("OUT_OF_ORDER_SEQUENCE_NUMBER", 0), 0u)
      << gap.status().message();
  EXPECT_EQ(log_->log_end_offset(), 1);
  // Replication accepts what a leader wrote, gaps included.
  Bytes replicated =
      MakeBatch({.records = 1, .producer_id = 12, .producer_epoch = 0, .base_sequence = 5});
  SetBatchBaseOffset(replicated, 1);
  EXPECT_TRUE(log_->AppendAsFollower(replicated).ok());
}

// ---- Validation ----------------------------------------------------------------

TEST_F(LogTest, BatchWithBadCrcIsRejectedNamingPositionAndField) {
  OpenLog();
  Append({.records = 1});
  Bytes batch = MakeBatch({.records = 2});
  Bytes two = MakeBatch({.records = 1});
  two.back() ^= 0x01;  // a record byte: covered by the CRC
  batch.insert(batch.end(), two.begin(), two.end());
  auto info = log_->AppendAsLeader(batch, 0);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::kCorruption);
  const std::string expected_prefix =
      "t-0: batch at append position " + std::to_string(batch.size() - two.size()) + ": ";
  EXPECT_EQ(info.status().message().rfind(expected_prefix, 0), 0u) << info.status().message();
  EXPECT_NE(info.status().message().find("field crc: expected"), std::string::npos);
  EXPECT_EQ(log_->log_end_offset(), 1);
}

TEST_F(LogTest, BatchAboveMaxMessageBytesIsRejected) {
  config_.max_message_bytes = 200;
  OpenLog();
  Bytes batch = MakeBatch({.records = 1, .value_bytes = 300});
  auto info = log_->AppendAsLeader(batch, 0);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::kTooLarge);
  EXPECT_EQ(info.status().message(), "t-0: batch at append position 0 is " +
                                         std::to_string(batch.size()) +
                                         " bytes, above max.message.bytes 200");
  EXPECT_EQ(log_->size_in_bytes(), 0);
}

TEST_F(LogTest, TruncatedBatchIsRejected) {
  OpenLog();
  Bytes batch = MakeBatch({.records = 2});
  batch.resize(batch.size() - 3);
  auto info = log_->AppendAsLeader(batch, 0);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::kCorruption);
  EXPECT_NE(info.status().message().find("append position 0: field length"), std::string::npos)
      << info.status().message();
}

// ---- Lookup by timestamp ---------------------------------------------------------

TEST_F(LogTest, FetchOffsetByTimestampFindsTheFirstRecordAtOrAfterIt) {
  OpenLog();
  Append({.records = 3, .timestamp = kT0});  // offsets 0-2: T0, T0+1, T0+2
  ASSERT_TRUE(log_->Roll().ok());
  Append({.records = 3, .timestamp = kT0 + 100});  // offsets 3-5
  Append({.records = 3, .timestamp = kT0 + 200});  // offsets 6-8

  using Found = std::optional<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(*log_->FetchOffsetByTimestamp(kT0 - 5), Found({kT0, 0}));
  EXPECT_EQ(*log_->FetchOffsetByTimestamp(kT0 + 1), Found({kT0 + 1, 1}));
  EXPECT_EQ(*log_->FetchOffsetByTimestamp(kT0 + 50), Found({kT0 + 100, 3}));
  EXPECT_EQ(*log_->FetchOffsetByTimestamp(kT0 + 201), Found({kT0 + 201, 7}));
  EXPECT_EQ(*log_->FetchOffsetByTimestamp(kT0 + 500), Found());
}

}  // namespace
}  // namespace daruma
