// Log cleaner: a catalogue of compaction cases, one each — latest value per
// key, preserved offsets and batch bounds, tombstones before and after the
// delete horizon, aborted transactions, empty batches kept for producers,
// valid indexes, the dirty-ratio choice, the checkpoint, the swap's rename
// order, a crash at every file operation of a round, and the threads.
#include "log/log_cleaner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "common/clock.h"
#include "common/file_system.h"
#include "log/cleanable_log.h"
#include "log/log_file_names.h"
#include "log/throttler.h"
#include "record/file_batch_reader.h"
#include "record/record_batch_builder.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::TempDir;

using testing::kT0;

struct KV {
  std::string key;
  std::optional<std::string> value;
};

struct Producer {
  int64_t id = kNoProducerId;
  int16_t epoch = kNoProducerEpoch;
  int32_t sequence = kNoSequence;
  bool transactional = false;
};

Bytes MakeBatch(const std::vector<KV>& kvs, const Producer& p, int64_t ts,
                CompressionType codec = CompressionType::kNone) {
  BatchBuilderOptions o;
  o.producer_id = p.id;
  o.producer_epoch = p.epoch;
  o.base_sequence = p.sequence;
  o.is_transactional = p.transactional;
  o.compression = codec;
  std::vector<RecordInput> records;
  for (const KV& kv : kvs) {
    RecordInput r;
    r.timestamp = ts;
    r.key = kv.key;
    r.value = kv.value;
    records.push_back(r);
  }
  auto batch = BuildRecordBatch(o, records);
  EXPECT_TRUE(batch.ok()) << batch.status().ToString();
  return *batch;
}

struct Rec {
  int64_t offset;
  std::string key;
  std::optional<std::string> value;
  bool operator==(const Rec&) const = default;
};

class LogCleanerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.segment_index_bytes = 4096;
    config_.index_interval_bytes = 1;
    config_.compact = true;
    cleaner_config_.dedupe_buffer_size = 24 * 4096;
    compaction_.delete_retention_ms = 1000;
  }

  void OpenLog(FileSystem* fs = FileSystem::Default()) {
    auto log = Log::CreateEmpty(fs, dir(), TopicPartition{"t", 0}, config_, &clock_);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log_ = std::move(*log);
    cleaner_ = std::make_unique<LogCleaner>(fs, cleaner_config_, &clock_);
    cleaner_->AddLog(log_.get(), compaction_);
  }

  std::string dir() const { return tmp_.Join("t-0"); }

  LogAppendInfo Append(const std::vector<KV>& kvs, const Producer& p = {},
                       AppendOrigin origin = AppendOrigin::kClient) {
    auto info = log_->AppendAsLeader(MakeBatch(kvs, p, clock_.NowMs()), 0, origin);
    EXPECT_TRUE(info.ok()) << info.status().ToString();
    log_->UpdateHighWatermark(log_->log_end_offset());
    return info.ok() ? *info : LogAppendInfo{};
  }

  void AppendMarker(int64_t pid, ControlRecordType type) {
    Bytes marker = BuildEndTxnMarkerBatch(0, 0, pid, 0, type, 1, clock_.NowMs());
    ASSERT_TRUE(log_->AppendAsLeader(marker, 0, AppendOrigin::kCoordinator).ok());
    log_->UpdateHighWatermark(log_->log_end_offset());
  }

  void Roll() { ASSERT_TRUE(log_->Roll().ok()); }

  CleanStats Clean(int64_t now) {
    auto stats = cleaner_->CleanOnce(log_.get(), now);
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    return stats.ok() ? *stats : CleanStats{};
  }

  Bytes ReadAllBytes() {
    auto read = log_->Read(log_->log_start_offset(), 1 << 30, FetchIsolation::kLogEnd, true);
    EXPECT_TRUE(read.ok()) << read.status().ToString();
    return read.ok() ? read->records : Bytes{};
  }

  // Every batch of the log, as owned copies.
  std::vector<Bytes> Batches() {
    std::vector<Bytes> out;
    for (LogSegment* seg : log_->segments_for_inspection()) {
      FileBatchReaderOptions ro;
      ro.end_position = uint64_t(seg->size());
      FileBatchReader reader(seg->log_file(), ro);
      while (auto e = reader.Next()) out.emplace_back(e->bytes.begin(), e->bytes.end());
    }
    return out;
  }

  std::vector<Rec> Records() {
    std::vector<Rec> out;
    for (const Bytes& b : Batches()) {
      RecordBatchView view(b);
      EXPECT_TRUE(view.Validate().ok());
      auto records = view.DecodeRecords();
      EXPECT_TRUE(records.ok()) << records.status().ToString();
      if (view.is_control()) continue;
      for (const Record& r : *records) out.push_back({r.offset, r.key.value_or(""), r.value});
    }
    return out;
  }

  std::set<std::string> DirNames() {
    std::set<std::string> out;
    auto list = fs_->ListDir(dir());
    EXPECT_TRUE(list.ok());
    for (const auto& e : *list) out.insert(e.name);
    return out;
  }

  TempDir tmp_;
  FileSystem* fs_ = FileSystem::Default();
  ManualClock clock_{kT0};
  LogConfig config_;
  CleanerConfig cleaner_config_;
  CompactionConfig compaction_;
  std::unique_ptr<Log> log_;
  std::unique_ptr<LogCleaner> cleaner_;
};

// ---- Record retention -------------------------------------------------------

TEST_F(LogCleanerTest, KeepsOnlyTheLatestValuePerKeyAtItsOriginalOffset) {
  OpenLog();
  for (int i = 0; i < 30; ++i) {
    Append({{"k" + std::to_string(i % 5), "v" + std::to_string(i)}});
    if (i % 10 == 9) Roll();
  }
  Append({{"k0", "active"}});  // offset 30, in the active segment: never cleaned
  CleanStats stats = Clean(kT0);
  EXPECT_TRUE(stats.cleaned);
  EXPECT_EQ(stats.first_dirty_offset, 0);
  EXPECT_EQ(stats.end_offset, 30);
  EXPECT_EQ(stats.messages_read, 30);
  EXPECT_EQ(stats.messages_written, 5);
  std::vector<Rec> expected = {{25, "k0", "v25"}, {26, "k1", "v26"}, {27, "k2", "v27"},
                               {28, "k3", "v28"}, {29, "k4", "v29"}, {30, "k0", "active"}};
  EXPECT_EQ(Records(), expected);
  EXPECT_EQ(log_->log_end_offset(), 31);
  // Three 10-offset segments fit one group: one cleaned segment at base 0.
  EXPECT_EQ(log_->segment_base_offsets(), (std::vector<int64_t>{0, 30}));
}

TEST_F(LogCleanerTest, KeepsBaseOffsetAndLastOffsetDeltaOfRewrittenBatches) {
  OpenLog();
  Append({{"a", "1"}, {"b", "1"}, {"c", "1"}});  // 0..2: c is superseded below
  Append({{"c", "2"}, {"d", "2"}});              // 3..4
  Append({{"d", "3"}});                          // 5: ends the round's range
  Roll();
  Clean(kT0);
  std::vector<Bytes> batches = Batches();
  ASSERT_EQ(batches.size(), 3u);
  RecordBatchView first(batches[0]);
  EXPECT_EQ(first.base_offset(), 0);
  EXPECT_EQ(first.last_offset_delta(), 2);  // offset 2 is gone, the batch still ends at 2
  EXPECT_EQ(first.records_count(), 2);
  EXPECT_TRUE(first.crc_valid());
  RecordBatchView second(batches[1]);
  EXPECT_EQ(second.base_offset(), 3);
  EXPECT_EQ(second.last_offset_delta(), 1);
  EXPECT_EQ(second.records_count(), 1);
  RecordBatchView third(batches[2]);
  EXPECT_EQ(third.base_offset(), 5);
  std::vector<Rec> expected = {{0, "a", "1"}, {1, "b", "1"}, {3, "c", "2"}, {5, "d", "3"}};
  EXPECT_EQ(Records(), expected);
}

TEST_F(LogCleanerTest, CopiesUntouchedBatchesByteForByteAndKeepsTheirCodec) {
  OpenLog();
  Bytes original = MakeBatch({{"x", "1"}, {"y", "1"}}, {}, kT0, CompressionType::kGzip);
  ASSERT_TRUE(log_->AppendAsLeader(original, 0).ok());
  auto compressed =
      log_->AppendAsLeader(MakeBatch({{"x", "2"}, {"z", "2"}}, {}, kT0, CompressionType::kGzip), 0);
  ASSERT_TRUE(compressed.ok());
  Append({{"w", "3"}});
  log_->UpdateHighWatermark(log_->log_end_offset());
  Bytes before_last = Batches()[2];
  Roll();
  Clean(kT0);
  std::vector<Bytes> batches = Batches();
  ASSERT_EQ(batches.size(), 3u);
  RecordBatchView first(batches[0]);
  EXPECT_EQ(first.compression(), CompressionType::kGzip);  // re-encoded with its codec
  EXPECT_EQ(first.records_count(), 1);
  EXPECT_EQ(first.last_offset_delta(), 1);
  EXPECT_EQ(batches[2], before_last);  // nothing removed: copied verbatim
  std::vector<Rec> expected = {{1, "y", "1"}, {2, "x", "2"}, {3, "z", "2"}, {4, "w", "3"}};
  EXPECT_EQ(Records(), expected);
}

TEST_F(LogCleanerTest, DropsKeylessRecordsInTheCleanedRange) {
  OpenLog();
  Append({{"k", "1"}});
  ASSERT_TRUE(log_->AppendAsLeader(
                      *BuildRecordBatch({}, {RecordInput{kT0, std::nullopt, "nokey", {}, -1}}), 0)
                  .ok());
  Append({{"k", "2"}});
  log_->UpdateHighWatermark(log_->log_end_offset());
  Roll();
  Clean(kT0);
  std::vector<Rec> expected = {{2, "k", "2"}};
  EXPECT_EQ(Records(), expected);
}

// ---- Tombstones and the delete horizon -------------------------------------

TEST_F(LogCleanerTest, TombstoneGetsAHorizonAndIsRemovedOnlyAfterIt) {
  OpenLog();
  Append({{"k", "1"}});
  Append({{"k", std::nullopt}});  // tombstone at 1
  Append({{"other", "x"}});
  Roll();
  Clean(kT0);
  // First pass: the value is gone, the tombstone stays with horizon now + 1000.
  std::vector<Bytes> batches = Batches();
  ASSERT_EQ(batches.size(), 2u);
  RecordBatchView tomb(batches[0]);
  EXPECT_EQ(tomb.base_offset(), 1);
  EXPECT_TRUE(tomb.has_delete_horizon());
  EXPECT_EQ(tomb.delete_horizon_ms(), std::optional<int64_t>(kT0 + 1000));
  auto recs = tomb.DecodeRecords();
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 1u);
  EXPECT_EQ((*recs)[0].timestamp, kT0);  // record timestamps unchanged by the re-basing
  EXPECT_FALSE((*recs)[0].value.has_value());

  // Before the horizon: a later round keeps it.
  Append({{"y", "1"}});
  Roll();
  Clean(kT0 + 999);
  std::vector<Rec> before = {{1, "k", std::nullopt}, {2, "other", "x"}, {3, "y", "1"}};
  EXPECT_EQ(Records(), before);

  // After the horizon: removed.
  Append({{"z", "1"}});
  Roll();
  Clean(kT0 + 1000);
  std::vector<Rec> after = {{2, "other", "x"}, {3, "y", "1"}, {4, "z", "1"}};
  EXPECT_EQ(Records(), after);
}

// ---- Transactions -----------------------------------------------------------

TEST_F(LogCleanerTest, RemovesAbortedDataKeepsCommittedDataAndReindexesTheAbort) {
  OpenLog();
  Append({{"a", "aborted"}, {"b", "aborted"}}, {7, 0, 0, true});  // 0..1
  AppendMarker(7, ControlRecordType::kAbort);                     // 2
  Append({{"c", "committed"}}, {8, 0, 0, true});                  // 3
  AppendMarker(8, ControlRecordType::kCommit);                    // 4
  Append({{"z", "plain"}});                                       // 5
  Roll();
  const std::vector<AbortedTxn> aborted_before = log_->AllAbortedTransactions();
  ASSERT_EQ(aborted_before.size(), 1u);
  Clean(kT0);

  std::vector<Rec> expected = {{3, "c", "committed"}, {5, "z", "plain"}};
  EXPECT_EQ(Records(), expected);
  std::vector<Bytes> batches = Batches();
  ASSERT_EQ(batches.size(), 5u);
  // The aborted batch holds producer 7's last sequence: kept as an empty header.
  RecordBatchView empty(batches[0]);
  EXPECT_EQ(empty.base_offset(), 0);
  EXPECT_EQ(empty.last_offset_delta(), 1);
  EXPECT_EQ(empty.records_count(), 0);
  EXPECT_EQ(empty.size(), size_t(kRecordBatchOverhead));
  EXPECT_EQ(empty.base_timestamp(), kNoTimestamp);
  EXPECT_EQ(empty.compression(), CompressionType::kNone);
  EXPECT_TRUE(empty.is_transactional());
  EXPECT_TRUE(empty.crc_valid());
  // The ABORT marker stays (data of its transaction was removed in this pass)
  // and its entry is re-recorded in the cleaned segment's .txnindex.
  EXPECT_TRUE(RecordBatchView(batches[1]).is_control());
  EXPECT_EQ(RecordBatchView(batches[1]).base_offset(), 2);
  EXPECT_EQ(log_->AllAbortedTransactions(), aborted_before);
  EXPECT_EQ(RecordBatchView(batches[3]).base_offset(), 4);  // COMMIT marker kept
}

TEST_F(LogCleanerTest, AbortMarkerIsKeptWhileItsTransactionsDataIsRemoved) {
  OpenLog();
  Append({{"a", "aborted"}}, {7, 0, 0, true});  // 0
  AppendMarker(7, ControlRecordType::kAbort);   // 1
  Append({{"z", "plain"}});                     // 2
  Roll();
  Clean(kT0);
  std::vector<Bytes> batches = Batches();
  ASSERT_EQ(batches.size(), 3u);
  // Batch 0 holds producer 7's last sequence: emptied, not dropped.
  EXPECT_EQ(RecordBatchView(batches[0]).records_count(), 0);
  EXPECT_EQ(RecordBatchView(batches[0]).producer_id(), 7);
  // The marker is retained (its data was seen and dropped in this pass) and
  // gets no delete horizon: it is not discardable yet.
  RecordBatchView marker(batches[1]);
  EXPECT_TRUE(marker.is_control());
  EXPECT_FALSE(marker.has_delete_horizon());
  std::vector<Rec> expected = {{2, "z", "plain"}};
  EXPECT_EQ(Records(), expected);
}

TEST_F(LogCleanerTest, KeepsAnEmptyBatchForAnActiveProducersLastSequence) {
  OpenLog();
  Append({{"k", "from-producer"}}, {5, 0, 0, false});  // 0: producer 5's last batch
  Append({{"k", "newer"}});                            // 1
  Append({{"x", "1"}});                                // 2
  Roll();
  Clean(kT0);
  std::vector<Bytes> batches = Batches();
  ASSERT_EQ(batches.size(), 3u);
  RecordBatchView kept(batches[0]);
  EXPECT_EQ(kept.base_offset(), 0);
  EXPECT_EQ(kept.records_count(), 0);
  EXPECT_EQ(kept.producer_id(), 5);
  EXPECT_EQ(kept.base_sequence(), 0);
  EXPECT_EQ(kept.max_timestamp(), kT0);
  std::vector<Rec> expected = {{1, "k", "newer"}, {2, "x", "1"}};
  EXPECT_EQ(Records(), expected);
}

// ---- Indexes ----------------------------------------------------------------

TEST_F(LogCleanerTest, EveryIndexEntryPointsAtABatchEndingAtItsOffset) {
  config_.index_interval_bytes = 100;
  OpenLog();
  for (int i = 0; i < 200; ++i) {
    Append({{"k" + std::to_string(i % 20), std::string(50, char('a' + i % 26))},
            {"u" + std::to_string(i), "x"}});
    if (i % 50 == 49) Roll();
  }
  Clean(kT0);
  int checked = 0;
  for (LogSegment* seg : log_->segments_for_inspection()) {
    auto oi = seg->offset_index();
    ASSERT_TRUE(oi.ok());
    int32_t last_position = -1;
    for (size_t i = 0; i < (*oi)->entries(); ++i) {
      OffsetPosition entry = (*oi)->Entry(i);
      EXPECT_GT(entry.position, last_position);
      last_position = entry.position;
      FileBatchReaderOptions ro;
      ro.start_position = uint64_t(entry.position);
      ro.end_position = uint64_t(seg->size());
      FileBatchReader reader(seg->log_file(), ro);
      auto batch = reader.Next();
      ASSERT_TRUE(batch.has_value());
      EXPECT_EQ(batch->last_offset(), entry.offset) << seg->log_path() << " entry " << i;
      ++checked;
    }
    auto ti = seg->time_index();
    ASSERT_TRUE(ti.ok());
    for (size_t i = 0; i < (*ti)->entries(); ++i) {
      auto found = seg->TranslateOffset((*ti)->Entry(i).offset);
      ASSERT_TRUE(found.ok());
      ASSERT_TRUE(found->has_value());
      EXPECT_EQ((*found)->offset, (*ti)->Entry(i).offset);
    }
  }
  EXPECT_GT(checked, 10);
  // Lookups through the rebuilt index still find every surviving record.
  for (const Rec& r : Records()) {
    auto read = log_->Read(r.offset, 1, FetchIsolation::kLogEnd, true);
    ASSERT_TRUE(read.ok());
    RecordBatchView first(ByteSpan(read->records)
                              .subspan(0, LoadBe32(read->records.data() + batch_layout::kLength) +
                                              size_t(kLogOverhead)));
    EXPECT_LE(first.base_offset(), r.offset);
    EXPECT_GE(first.last_offset(), r.offset);
  }
}

// ---- Choosing and checkpointing ---------------------------------------------

TEST_F(LogCleanerTest, WritesTheEndOffsetToTheCleanerCheckpoint) {
  OpenLog();
  for (int i = 0; i < 6; ++i) Append({{"k", std::to_string(i)}});
  Roll();
  Append({{"k", "active"}});
  Clean(kT0);
  EXPECT_EQ(testing::ReadFileToString(tmp_.Join(kCleanerOffsetCheckpointFileName)),
            "0\n1\nt 0 6\n");
  auto checkpointed = cleaner_->CheckpointedOffset(log_.get());
  ASSERT_TRUE(checkpointed.ok());
  EXPECT_EQ(*checkpointed, std::optional<int64_t>(6));
  // Nothing new below the active segment: the next round has nothing to do.
  CleanStats again = Clean(kT0);
  EXPECT_FALSE(again.cleaned);
  EXPECT_EQ(again.first_dirty_offset, 6);
}

TEST_F(LogCleanerTest, DirtyRatioDecidesWhichLogIsCleaned) {
  compaction_.min_cleanable_dirty_ratio = 0.5;
  OpenLog();
  for (int i = 0; i < 4; ++i) Append({{"k", std::to_string(i)}});
  Roll();
  // All four batches are dirty: ratio 1.0 > 0.5.
  auto view = log_->ViewForCleaner();
  ASSERT_TRUE(view.ok());
  auto to_clean = ComputeLogToClean(*view, std::nullopt, compaction_, kT0);
  ASSERT_TRUE(to_clean.ok());
  EXPECT_EQ(to_clean->first_uncleanable_offset, 4);
  EXPECT_DOUBLE_EQ(to_clean->DirtyRatio(), 1.0);
  auto first = cleaner_->CleanDirtiest(kT0);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->end_offset, 4);
  // Now one small dirty segment against a clean one: below the ratio.
  Append({{"k", "4"}});
  Roll();
  auto second = cleaner_->CleanDirtiest(kT0);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->has_value());
}

TEST_F(LogCleanerTest, MinCompactionLagHoldsBackRecentSegments) {
  compaction_.min_compaction_lag_ms = 10000;
  OpenLog();
  Append({{"k", "old"}});
  Roll();
  clock_.Advance(20000);
  Append({{"k", "recent"}});
  Roll();
  auto view = log_->ViewForCleaner();
  ASSERT_TRUE(view.ok());
  auto to_clean = ComputeLogToClean(*view, std::nullopt, compaction_, clock_.NowMs());
  ASSERT_TRUE(to_clean.ok());
  EXPECT_EQ(to_clean->first_uncleanable_offset, 1);  // the segment at 1 is too recent
}

TEST_F(LogCleanerTest, CheckpointOutsideTheLogIsResetToTheLogStart) {
  OpenLog();
  testing::WriteStringToFile(tmp_.Join(kCleanerOffsetCheckpointFileName), "0\n1\nt 0 999\n");
  Append({{"k", "1"}});
  Append({{"k", "2"}});
  Roll();
  CleanStats stats = Clean(kT0);
  EXPECT_EQ(stats.first_dirty_offset, 0);
  EXPECT_EQ(stats.end_offset, 2);
}

TEST(GroupSegmentsBySizeTest, SplitsOnLogSizeAndIndexSize) {
  std::vector<Log::CleanerSegmentView> segs(4);
  for (int i = 0; i < 4; ++i) {
    segs[size_t(i)].base_offset = i * 10;
    segs[size_t(i)].size = 400;
    segs[size_t(i)].offset_index_bytes = 16;
    segs[size_t(i)].time_index_bytes = 24;
  }
  auto by_log = GroupSegmentsBySize(segs, 800, 1000, 40);
  EXPECT_EQ(by_log, (std::vector<std::vector<size_t>>{{0, 1}, {2, 3}}));
  auto by_index = GroupSegmentsBySize(segs, 10000, 48, 40);
  EXPECT_EQ(by_index, (std::vector<std::vector<size_t>>{{0, 1}, {2, 3}}));
  auto all = GroupSegmentsBySize(segs, 10000, 1000, 40);
  EXPECT_EQ(all, (std::vector<std::vector<size_t>>{{0, 1, 2, 3}}));
  // A segment whose offsets would overflow the group's relative offsets starts a new group.
  segs[2].base_offset = int64_t(1) << 32;
  segs[3].base_offset = (int64_t(1) << 32) + 10;
  auto overflow = GroupSegmentsBySize(segs, 10000, 1000, (int64_t(1) << 32) + 20);
  EXPECT_EQ(overflow, (std::vector<std::vector<size_t>>{{0}, {1}, {2, 3}}));
}

// ---- Swap protocol and crash safety -----------------------------------------

TEST_F(LogCleanerTest, SwapRenamesInKafkasOrderAndLeavesFinalNames) {
  testing::MemFileSystem base;
  testing::FaultInjectionFileSystem fault(&base);
  fs_ = &fault;
  OpenLog(&fault);
  for (int i = 0; i < 4; ++i) Append({{"k", std::to_string(i)}});
  Roll();
  Append({{"k", "x"}});
  const size_t before = fault.op_log().size();
  std::vector<std::unique_ptr<LogSegment>> disposed;
  cleaner_->set_dispose_hook([&](Log* log, Log::RetentionResult removed) {
    EXPECT_EQ(log, log_.get());
    for (auto& s : removed.segments) disposed.push_back(std::move(s));
  });
  Clean(kT0);
  std::vector<std::string> renames;
  const std::vector<std::string> ops = fault.op_log();
  for (size_t i = before; i < ops.size(); ++i) {
    const std::string& op = ops[i];
    if (op.find(" rename ") == std::string::npos && op.find(" sync-dir ") == std::string::npos) {
      continue;
    }
    std::string text = op.substr(op.find(' ') + 1);  // drop the op number
    for (size_t at; (at = text.find(dir() + "/")) != std::string::npos;) {
      text.erase(at, dir().size() + 1);
    }
    if (size_t at = text.find(dir()); at != std::string::npos)
      text.replace(at, dir().size(), "t-0");
    renames.push_back(text);
  }
  const std::string b0 = "00000000000000000000";
  const std::vector<std::string> expected = {
      "rename " + b0 + ".log.cleaned -> " + b0 + ".log.swap",
      "rename " + b0 + ".index.cleaned -> " + b0 + ".index.swap",
      "rename " + b0 + ".timeindex.cleaned -> " + b0 + ".timeindex.swap",
      "rename " + b0 + ".log -> " + b0 + ".log.deleted",
      "rename " + b0 + ".index -> " + b0 + ".index.deleted",
      "rename " + b0 + ".timeindex -> " + b0 + ".timeindex.deleted",
      "rename " + b0 + ".log.swap -> " + b0 + ".log",
      "rename " + b0 + ".index.swap -> " + b0 + ".index",
      "rename " + b0 + ".timeindex.swap -> " + b0 + ".timeindex",
      "sync-dir t-0",
  };
  std::vector<std::string> swap_ops(renames.begin(),
                                    renames.begin() + std::min(renames.size(), expected.size()));
  EXPECT_EQ(swap_ops, expected);
  // The replaced segment is handed over with its files renamed `.deleted`.
  ASSERT_EQ(disposed.size(), 1u);
  EXPECT_TRUE(fault.Exists(dir() + "/" + b0 + ".log.deleted"));
  for (const std::string& name : DirNames()) {
    EXPECT_FALSE(HasSuffix(name, ".cleaned") || HasSuffix(name, ".swap")) << name;
  }
  for (auto& s : disposed) ASSERT_TRUE(s->DeleteFiles().ok());
  EXPECT_FALSE(fault.Exists(dir() + "/" + b0 + ".log.deleted"));
}

// ---- Threads and throttling -------------------------------------------------

TEST_F(LogCleanerTest, BackgroundThreadsCleanTheDirtiestLogAndStopCleanly) {
  cleaner_config_.threads = 2;
  cleaner_config_.backoff_ms = 5;
  OpenLog();
  for (int i = 0; i < 8; ++i) Append({{"k" + std::to_string(i % 2), std::to_string(i)}});
  Roll();
  cleaner_->Start();
  std::optional<int64_t> checkpointed;
  for (int i = 0; i < 500 && checkpointed != std::optional<int64_t>(8); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    auto read = cleaner_->CheckpointedOffset(log_.get());
    ASSERT_TRUE(read.ok());
    checkpointed = *read;
  }
  cleaner_->Stop();
  EXPECT_EQ(checkpointed, std::optional<int64_t>(8));
  std::vector<Rec> expected = {{6, "k0", "6"}, {7, "k1", "7"}};
  EXPECT_EQ(Records(), expected);
}

TEST_F(LogCleanerTest, PausedLogIsSkippedUntilResumed) {
  OpenLog();
  Append({{"k", "1"}});
  Append({{"k", "2"}});
  Roll();
  cleaner_->AbortAndPauseCleaning(log_.get());
  EXPECT_EQ(cleaner_->CleanOnce(log_.get(), kT0).status().code(), StatusCode::kInvalidArgument);
  auto none = cleaner_->CleanDirtiest(kT0);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  cleaner_->ResumeCleaning(log_.get());
  EXPECT_TRUE(Clean(kT0).cleaned);
}

TEST_F(LogCleanerTest, TryPauseCleaningPausesAnIdleLogWithoutWaiting) {
  OpenLog();
  Append({{"k", "1"}});
  Append({{"k", "2"}});
  Roll();
  ASSERT_TRUE(cleaner_->TryPauseCleaning(log_.get()));
  auto none = cleaner_->CleanDirtiest(kT0);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  cleaner_->ResumeCleaning(log_.get());
  EXPECT_TRUE(Clean(kT0).cleaned);
  // A log the cleaner does not know has nothing to pause.
  EXPECT_TRUE(cleaner_->TryPauseCleaning(nullptr));
}

TEST_F(LogCleanerTest, TruncationLowersTheCheckpointAndDeletionForgetsIt) {
  OpenLog();
  for (int i = 0; i < 6; ++i) Append({{"k" + std::to_string(i), "v"}});
  Roll();
  Clean(kT0);
  const TopicPartition tp{"t", 0};
  cleaner_->AbortAndPauseCleaning(tp);
  ASSERT_TRUE(log_->TruncateTo(4).ok());
  ASSERT_TRUE(cleaner_->ResumeAfterTruncation(tp, tmp_.path(), 4).ok());
  EXPECT_EQ(testing::ReadFileToString(tmp_.Join(kCleanerOffsetCheckpointFileName)),
            "0\n1\nt 0 4\n");
  EXPECT_TRUE(Clean(kT0).first_dirty_offset == 4);  // resumed, from the truncation point
  ASSERT_TRUE(cleaner_->AbortAndForget(tp, tmp_.path()).ok());
  EXPECT_EQ(testing::ReadFileToString(tmp_.Join(kCleanerOffsetCheckpointFileName)), "0\n0\n");
}

TEST(ThrottlerTest, SleepsToBringTheRateBackToTheTarget) {
  ManualClock clock(0);
  Throttler throttler(1e6, 0, &clock);  // 1 MB/s, checked on every call
  clock.Advance(1);
  throttler.MaybeThrottle(10000);  // 10 kB in 1 ms: needs 10 ms in total
  EXPECT_EQ(throttler.total_sleep_ms(), 9);
  Throttler unlimited(std::numeric_limits<double>::max(), 0, &clock);
  clock.Advance(1);
  unlimited.MaybeThrottle(1e12);
  EXPECT_EQ(unlimited.total_sleep_ms(), 0);
}

// The loader's temporary-file passes (spec §10.3 passes 1-3), applied to a
// crash image given as path -> contents of one partition directory.
std::map<std::string, Bytes> ApplyLoaderSwapRules(std::map<std::string, Bytes> files) {
  auto prefix_of = [](const std::string& path) { return *OffsetFromFileName(BaseName(path)); };
  std::optional<int64_t> min_cleaned;
  std::vector<std::string> swaps;
  for (auto it = files.begin(); it != files.end();) {
    const std::string& path = it->first;
    if (HasSuffix(path, ".deleted") && !HasSuffix(path, ".checkpoint.deleted")) {
      it = files.erase(it);
      continue;
    }
    if (HasSuffix(path, ".cleaned")) {
      min_cleaned = std::min(min_cleaned.value_or(INT64_MAX), prefix_of(path));
    }
    if (HasSuffix(path, ".swap")) swaps.push_back(path);
    ++it;
  }
  for (const std::string& swap : swaps) {
    if (min_cleaned && prefix_of(swap) >= *min_cleaned) files.erase(swap);
  }
  std::erase_if(files, [](const auto& kv) { return HasSuffix(kv.first, ".cleaned"); });
  // Pass 2: a surviving swapped-in .log replaces every file in its offset range.
  for (const auto& [path, bytes] : std::map<std::string, Bytes>(files)) {
    if (!HasSuffix(path, ".log.swap")) continue;
    int64_t min_swap = prefix_of(path);
    int64_t max_swap = min_swap;
    for (size_t pos = 0; pos + kRecordBatchOverhead <= bytes.size();) {
      RecordBatchView v(ByteSpan(bytes).subspan(
          pos, LoadBe32(bytes.data() + pos + batch_layout::kLength) + size_t(kLogOverhead)));
      max_swap = std::max(max_swap, v.next_offset());
      pos += v.size();
    }
    std::erase_if(files, [&](const auto& kv) {
      if (HasSuffix(kv.first, ".swap")) return false;
      auto n = OffsetFromFileName(BaseName(kv.first));
      return n.ok() && *n >= min_swap && *n < max_swap;
    });
  }
  // Pass 3: strip `.swap`.
  std::map<std::string, Bytes> out;
  for (auto& [path, bytes] : files) {
    std::string name = path;
    if (HasSuffix(name, ".swap")) name.resize(name.size() - kSwapFileSuffix.size());
    out[name] = std::move(bytes);
  }
  return out;
}

struct CrashRig {
  testing::MemFileSystem base;
  std::unique_ptr<testing::FaultInjectionFileSystem> fs;
  std::unique_ptr<Log> log;
  std::unique_ptr<LogCleaner> cleaner;
  ManualClock clock{kT0};
};

// key -> latest value written, for the log CrashRig builds.
std::map<std::string, std::optional<std::string>> BuildCrashLog(CrashRig* rig) {
  EXPECT_TRUE(rig->base.CreateDir("/data").ok());
  rig->fs = std::make_unique<testing::FaultInjectionFileSystem>(&rig->base);
  LogConfig config;
  config.segment_index_bytes = 1024;
  config.index_interval_bytes = 64;
  config.compact = true;
  auto log =
      Log::CreateEmpty(rig->fs.get(), "/data/t-0", TopicPartition{"t", 0}, config, &rig->clock);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  rig->log = std::move(*log);
  std::map<std::string, std::optional<std::string>> latest;
  for (int i = 0; i < 40; ++i) {
    const std::string key = "k" + std::to_string(i % 7);
    std::optional<std::string> value = "v" + std::to_string(i);
    if (i == 33) value.reset();  // one tombstone among them
    EXPECT_TRUE(rig->log->AppendAsLeader(MakeBatch({{key, value}}, {}, kT0), 0).ok());
    latest[key] = value;
    if (i % 10 == 9) {
      EXPECT_TRUE(rig->log->Roll().ok());
    }
  }
  EXPECT_TRUE(rig->log->FlushAll().ok());
  // The partition directory's own name is made durable by whoever created it.
  EXPECT_TRUE(rig->fs->SyncDir("/data").ok());
  rig->log->UpdateHighWatermark(rig->log->log_end_offset());
  CleanerConfig cc;
  cc.dedupe_buffer_size = 24 * 1024;
  CompactionConfig compaction;
  compaction.delete_retention_ms = 1000;
  rig->cleaner = std::make_unique<LogCleaner>(rig->fs.get(), cc, &rig->clock);
  rig->cleaner->AddLog(rig->log.get(), compaction);
  return latest;
}

TEST(LogCleanerCrashTest, CrashAtEveryOperationOfARoundLosesNoLatestValue) {
  uint64_t first_op = 0;
  uint64_t last_op = 0;
  std::map<std::string, std::optional<std::string>> latest;
  {
    CrashRig rig;
    latest = BuildCrashLog(&rig);
    first_op = rig.fs->op_count() + 1;
    auto stats = rig.cleaner->CleanOnce(rig.log.get(), kT0);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    ASSERT_TRUE(stats->cleaned);
    last_op = rig.fs->op_count();
  }
  ASSERT_GT(last_op, first_op + 10);
  int images_with_cleaned = 0;
  int images_with_swap = 0;
  for (uint64_t crash_at = first_op; crash_at <= last_op + 1; ++crash_at) {
    SCOPED_TRACE("crash at op " + std::to_string(crash_at));
    CrashRig rig;
    BuildCrashLog(&rig);
    rig.fs->CrashAt(crash_at);
    auto stats = rig.cleaner->CleanOnce(rig.log.get(), kT0);
    EXPECT_EQ(stats.ok(), crash_at > last_op);
    rig.cleaner.reset();
    rig.log.reset();
    testing::MemFileSystem image;
    ASSERT_TRUE(rig.fs->MaterializeDurableState(&image, "/data", false).ok());
    // Power loss: only durable names and synced bytes; process kill: the
    // files as they are (page cache survives).
    for (bool power_loss : {true, false}) {
      SCOPED_TRACE(power_loss ? "power loss" : "process kill");
      std::map<std::string, Bytes> files;
      for (auto& [path, bytes] : (power_loss ? image : rig.base).Files("/data/t-0")) {
        images_with_cleaned += HasSuffix(path, ".log.cleaned");
        images_with_swap += HasSuffix(path, ".log.swap");
        files[path] = bytes;
      }
      files = ApplyLoaderSwapRules(std::move(files));
      // Read every .log in name order: offsets strictly increase and each
      // key's last record carries its latest value.
      std::map<std::string, std::optional<std::string>> found;
      int64_t next = -1;
      for (const auto& [path, bytes] : files) {
        if (!HasSuffix(path, ".log")) continue;
        for (size_t pos = 0; pos + kRecordBatchOverhead <= bytes.size();) {
          RecordBatchView v(ByteSpan(bytes).subspan(
              pos, LoadBe32(bytes.data() + pos + batch_layout::kLength) + size_t(kLogOverhead)));
          ASSERT_TRUE(v.Validate().ok()) << path;
          ASSERT_GE(v.base_offset(), next) << path;
          next = v.next_offset();
          auto records = v.DecodeRecords();
          ASSERT_TRUE(records.ok());
          for (const Record& r : *records) found[*r.key] = r.value;
          pos += v.size();
        }
      }
      EXPECT_EQ(next, 40);
      EXPECT_EQ(found, latest);
    }
  }
  // The matrix did hit both kinds of leftovers the loader must resolve.
  EXPECT_GT(images_with_cleaned, 0);
  EXPECT_GT(images_with_swap, 0);
}

}  // namespace
}  // namespace daruma
