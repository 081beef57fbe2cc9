// LogManager at runtime: GetOrCreateLog, AsyncDelete, topic configs, and the
// background jobs (retention, flush, checkpoints, delayed deletion) driven by
// a ManualClock through RunDueJobsForTest. No sleeps.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>

#include "log/log_file_names.h"
#include "log/offset_checkpoint_file.h"
#include "log/partition_metadata_file.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;

constexpr int64_t kJobsNow = 1700000000000;
constexpr int64_t kHour = 3600000;
constexpr int64_t kInitialDelay = 1000;
constexpr int64_t kRetentionCheck = 5000;
constexpr int64_t kFlushInterval = 2000;
constexpr int64_t kRecoveryCheckpoint = 60000;
constexpr int64_t kStartCheckpoint = 30000;
constexpr int64_t kDirtyTick = 100;
constexpr int64_t kHighWatermarkCheckpoint = 7000;
constexpr int64_t kJobsDeleteDelay = 60000;

const TopicPartition kJobsOrders{"orders", 0};
const Uuid kOrdersId = *Uuid::FromString("vDb5Vgm5RpaVW8EvFvzDfg");

OffsetMap ReadJobCheckpoint(const std::string& log_dir, const char* name) {
  auto file = OffsetCheckpointFile::Open(JoinPath(log_dir, name));
  EXPECT_TRUE(file.ok());
  auto map = file->Read();
  EXPECT_TRUE(map.ok()) << map.status().ToString();
  return map.ok() ? *map : OffsetMap{};
}

std::vector<std::string> Entries(const std::string& dir) {
  auto entries = FileSystem::Default()->ListDir(dir);
  EXPECT_TRUE(entries.ok());
  std::vector<std::string> names;
  for (const DirEntry& e : *entries) names.push_back(e.name);
  std::sort(names.begin(), names.end());
  return names;
}

class LogManagerJobsTest : public ::testing::Test {
 protected:
  LogManagerJobsTest() {
    config_.file_delete_delay_ms = kJobsDeleteDelay;
    config_.retention_ms = -1;
  }

  LogManagerOptions Options() {
    LogManagerOptions o;
    o.clock = &clock_;
    o.jobs.enabled = true;
    o.jobs.mode = Scheduler::Mode::kManual;
    o.jobs.initial_delay_ms = kInitialDelay;
    o.jobs.retention_check_interval_ms = kRetentionCheck;
    o.jobs.flush_scheduler_interval_ms = kFlushInterval;
    o.jobs.recovery_point_checkpoint_interval_ms = kRecoveryCheckpoint;
    o.jobs.log_start_offset_checkpoint_interval_ms = kStartCheckpoint;
    o.jobs.dirty_checkpoint_tick_ms = kDirtyTick;
    o.jobs.high_watermark_checkpoint_interval_ms = kHighWatermarkCheckpoint;
    return o;
  }

  void Start(std::vector<std::string> dirs = {}, LogManagerOptions options = {}) {
    if (dirs.empty()) dirs = {a_.path()};
    if (!options.jobs.enabled) options = Options();
    manager_ = std::make_unique<LogManager>(options);
    ASSERT_TRUE(manager_->Startup(dirs, config_, 1).ok());
  }

  Log* Create(const TopicPartition& tp, const LogConfig& config) {
    auto log = manager_->GetOrCreateLog(tp, kOrdersId, config);
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    return log.ok() ? *log : nullptr;
  }

  // One one-record batch per timestamp (one segment each with small
  // segment.bytes); the high watermark follows the log end.
  void Append(Log* log, const std::vector<int64_t>& timestamps) {
    for (int64_t ts : timestamps) {
      RecordInput record;
      record.timestamp = ts;
      record.key = "key";
      record.value = "value";
      auto batch = BuildRecordBatch({}, {record});
      ASSERT_TRUE(batch.ok());
      ASSERT_TRUE(log->AppendAsLeader(*batch, 0).ok());
    }
    log->UpdateHighWatermark(log->log_end_offset());
  }

  // Advances the clock to kJobsNow + ms and runs what is due.
  int RunAt(int64_t ms) {
    clock_.Set(kJobsNow + ms);
    return manager_->RunDueJobsForTest();
  }

  LogConfig SmallSegments() {
    LogConfig c = config_;
    c.segment_bytes = 100;
    c.retention_ms = 10 * kHour;
    return c;
  }

  ManualClock clock_{kJobsNow};
  TempDir a_, b_;
  LogConfig config_;
  std::unique_ptr<LogManager> manager_;
};

// ---- GetOrCreateLog ------------------------------------------------------------

TEST_F(LogManagerJobsTest, GetOrCreateLogIsIdempotentAndWritesPartitionMetadata) {
  Start();
  Log* log = Create(kJobsOrders, config_);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->dir(), a_.Join("orders-0"));
  EXPECT_EQ(ReadFileToString(a_.Join("orders-0/partition.metadata")),
            "version: 0\ntopic_id: vDb5Vgm5RpaVW8EvFvzDfg");
  EXPECT_TRUE(FileSystem::Default()->Exists(a_.Join("orders-0/00000000000000000000.log")));
  EXPECT_EQ(Create(kJobsOrders, config_), log);
  EXPECT_EQ(manager_->GetLog(kJobsOrders), log);
}

TEST_F(LogManagerJobsTest, GetOrCreateLogRefusesAnotherTopicId) {
  Start();
  Create(kJobsOrders, config_);
  auto other =
      manager_->GetOrCreateLog(kJobsOrders, *Uuid::FromString("AAAAAAAAAAAAAAAAAAAAAg"), config_);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kInvalidArgument) << other.status().ToString();
  EXPECT_NE(other.status().message().find("vDb5Vgm5RpaVW8EvFvzDfg"), std::string::npos)
      << other.status().message();
}

TEST_F(LogManagerJobsTest, NewPartitionsGoToTheDirWithFewestPartitions) {
  Start({a_.path(), b_.path()});
  EXPECT_EQ(Create({"t", 0}, config_)->dir(), a_.Join("t-0"));  // tie: first dir
  EXPECT_EQ(Create({"t", 1}, config_)->dir(), b_.Join("t-1"));
  EXPECT_EQ(Create({"t", 2}, config_)->dir(), a_.Join("t-2"));
  ASSERT_TRUE(manager_->AsyncDelete({"t", 0}).ok());
  ASSERT_TRUE(manager_->AsyncDelete({"t", 2}).ok());
  EXPECT_EQ(Create({"t", 3}, config_)->dir(), a_.Join("t-3"));  // a: 0, b: 1
}

TEST_F(LogManagerJobsTest, CreatedLogSurvivesARestartWithItsData) {
  Start();
  Append(Create(kJobsOrders, config_), {kJobsNow, kJobsNow});
  ASSERT_TRUE(manager_->Shutdown().ok());
  Start();
  Log* log = manager_->GetLog(kJobsOrders);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->log_end_offset(), 2);
  EXPECT_EQ(Create(kJobsOrders, config_), log);
}

TEST_F(LogManagerJobsTest, TopicConfigOverridesApplyToNewAndLiveLogs) {
  Start();
  EXPECT_EQ(manager_->ConfigFor("orders").retention_ms, -1);
  Log* log = Create(kJobsOrders, manager_->ConfigFor("orders"));
  LogConfig override_config = config_;
  override_config.retention_ms = 5;
  manager_->SetTopicConfig("orders", override_config);
  EXPECT_EQ(manager_->ConfigFor("orders").retention_ms, 5);
  EXPECT_EQ(manager_->ConfigFor("payments").retention_ms, -1);
  EXPECT_EQ(log->config_snapshot().retention_ms, 5);
}

// ---- AsyncDelete -----------------------------------------------------------------

TEST_F(LogManagerJobsTest, AsyncDeleteRenamesDropsFromCheckpointsAndDeletesAfterTheDelay) {
  Start();
  Append(Create(kJobsOrders, config_), {kJobsNow});
  Append(Create({"keep", 0}, config_), {kJobsNow});
  ASSERT_TRUE(manager_->CheckpointRecoveryPoints(/*all=*/true).ok());
  ASSERT_EQ(ReadJobCheckpoint(a_.path(), kRecoveryPointCheckpointFile).count(kJobsOrders), 1u);

  ASSERT_TRUE(manager_->AsyncDelete(kJobsOrders).ok());

  EXPECT_EQ(manager_->GetLog(kJobsOrders), nullptr);
  EXPECT_FALSE(FileSystem::Default()->Exists(a_.Join("orders-0")));
  std::string deleted;
  for (const std::string& name : Entries(a_.path())) {
    if (name.starts_with("orders-0.")) deleted = name;
  }
  ASSERT_EQ(deleted.size(), std::string("orders-0.").size() + 32 + std::string("-delete").size())
      << deleted;
  EXPECT_TRUE(deleted.ends_with("-delete"));
  EXPECT_EQ(ReadJobCheckpoint(a_.path(), kRecoveryPointCheckpointFile),
            (OffsetMap{{TopicPartition{"keep", 0}, 0}}));
  EXPECT_TRUE(manager_->AsyncDelete(kJobsOrders).IsNotFound());

  clock_.Advance(kJobsDeleteDelay - 1);
  manager_->RunDueJobsForTest();
  EXPECT_TRUE(FileSystem::Default()->Exists(a_.Join(deleted)));
  clock_.Advance(1);
  manager_->RunDueJobsForTest();
  EXPECT_FALSE(FileSystem::Default()->Exists(a_.Join(deleted)));
  EXPECT_NE(manager_->GetLog({"keep", 0}), nullptr);
}

// Kafka deletes a partition's future log with it; left, it would be loaded
// again at the next start.
TEST_F(LogManagerJobsTest, AsyncDeleteTakesThePartitionsFutureLogToo) {
  Start();
  Append(Create(kJobsOrders, config_), {kJobsNow});
  ASSERT_TRUE(manager_->Shutdown().ok());
  const std::string future = "orders-0." + std::string(32, 'a') + "-future";
  std::filesystem::copy(a_.Join("orders-0"), a_.Join(future),
                        std::filesystem::copy_options::recursive);
  Start();
  ASSERT_NE(manager_->GetLog(kJobsOrders), nullptr);
  ASSERT_TRUE(manager_->AsyncDelete(kJobsOrders).ok());
  int deleted = 0;
  for (const std::string& name : Entries(a_.path())) {
    EXPECT_FALSE(name.ends_with("-future")) << name;
    EXPECT_NE(name, "orders-0");
    deleted += name.starts_with("orders-0.") && name.ends_with("-delete") ? 1 : 0;
  }
  EXPECT_EQ(deleted, 2);
  ASSERT_TRUE(manager_->Shutdown().ok());
  Start();
  EXPECT_TRUE(manager_->AllLogs().empty());
}

TEST_F(LogManagerJobsTest, DeleteDirsLeftByAShutdownAreRemovedAfterTheNextStart) {
  Start();
  Append(Create(kJobsOrders, config_), {kJobsNow});
  ASSERT_TRUE(manager_->AsyncDelete(kJobsOrders).ok());
  ASSERT_TRUE(manager_->Shutdown().ok());
  std::vector<std::string> names = Entries(a_.path());
  auto deleted = std::find_if(names.begin(), names.end(),
                              [](const std::string& n) { return n.ends_with("-delete"); });
  ASSERT_NE(deleted, names.end());
  const std::string path = a_.Join(*deleted);

  Start();
  EXPECT_EQ(manager_->GetLog(kJobsOrders), nullptr);
  EXPECT_TRUE(manager_->AllLogs().empty());
  RunAt(kJobsDeleteDelay - 1);
  EXPECT_TRUE(FileSystem::Default()->Exists(path));
  RunAt(kJobsDeleteDelay);
  EXPECT_FALSE(FileSystem::Default()->Exists(path));
}

// ---- Retention job ------------------------------------------------------------------

TEST_F(LogManagerJobsTest, RetentionJobDeletesExpiredSegmentsThenTheirFilesAfterTheDelay) {
  Start();
  Log* log = Create(kJobsOrders, SmallSegments());
  Append(log, {kJobsNow - 30 * kHour, kJobsNow - 20 * kHour, kJobsNow - kHour, kJobsNow});
  ASSERT_EQ(log->num_segments(), 4u);
  const std::string dir = log->dir();

  RunAt(kInitialDelay - 1);
  EXPECT_EQ(log->num_segments(), 4u);  // nothing before the initial delay
  RunAt(kInitialDelay);
  EXPECT_EQ(log->segment_base_offsets(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(log->log_start_offset(), 2);
  EXPECT_TRUE(FileSystem::Default()->Exists(LogFileName(dir, 0, kDeletedFileSuffix)));
  EXPECT_TRUE(FileSystem::Default()->Exists(LogFileName(dir, 1, kDeletedFileSuffix)));

  RunAt(kInitialDelay + kJobsDeleteDelay - 1);
  EXPECT_TRUE(FileSystem::Default()->Exists(LogFileName(dir, 0, kDeletedFileSuffix)));
  RunAt(kInitialDelay + kJobsDeleteDelay);
  for (const std::string& name : Entries(dir)) {
    EXPECT_FALSE(name.ends_with(".deleted")) << name;
  }
  EXPECT_EQ(Entries(dir), (std::vector<std::string>{
                              "00000000000000000002.index", "00000000000000000002.log",
                              "00000000000000000002.snapshot", "00000000000000000002.timeindex",
                              "00000000000000000003.index", "00000000000000000003.log",
                              "00000000000000000003.snapshot", "00000000000000000003.timeindex",
                              "leader-epoch-checkpoint", "partition.metadata"}));
}

TEST_F(LogManagerJobsTest, TheRetentionListenerHearsOfEveryDeletion) {
  std::vector<std::pair<std::string, size_t>> heard;  // cause, segments
  manager_ = std::make_unique<LogManager>(Options());
  manager_->SetRetentionListener([&heard](const Log& log, const Log::RetentionResult& removed) {
    EXPECT_EQ(log.topic_partition(), kJobsOrders);
    for (const Log::RetentionBreach& b : removed.breaches) {
      heard.emplace_back(std::string(Log::RetentionCauseName(b.cause)), b.count);
    }
  });
  ASSERT_TRUE(manager_->Startup({a_.path()}, config_, 1).ok());
  Log* log = Create(kJobsOrders, SmallSegments());
  Append(log, {kJobsNow - 30 * kHour, kJobsNow - 20 * kHour, kJobsNow - kHour, kJobsNow});
  RunAt(kInitialDelay);
  EXPECT_EQ(heard, (std::vector<std::pair<std::string, size_t>>{{"retention.ms", 2}}));
  RunAt(kInitialDelay + kRetentionCheck);  // nothing more to delete: not called
  EXPECT_EQ(heard.size(), 1u);
}

TEST_F(LogManagerJobsTest, RetentionJobRunsEveryCheckIntervalAsTimePasses) {
  Start();
  Log* log = Create(kJobsOrders, SmallSegments());
  Append(log, {kJobsNow - 9 * kHour, kJobsNow - 5 * kHour, kJobsNow});
  RunAt(kInitialDelay);
  EXPECT_EQ(log->num_segments(), 3u);
  // Segment 0 expires at kJobsNow + 1 h + 1 ms; the first check on the
  // kInitialDelay + k * kRetentionCheck grid at or after that deletes it.
  const int64_t expiry = kHour + 1;
  const int64_t checks = (expiry - kInitialDelay + kRetentionCheck - 1) / kRetentionCheck;
  const int64_t first_check_after = kInitialDelay + checks * kRetentionCheck;
  RunAt(first_check_after - kRetentionCheck);  // the check before: not expired yet
  EXPECT_EQ(log->num_segments(), 3u);
  RunAt(first_check_after - 1);  // no check due
  EXPECT_EQ(log->num_segments(), 3u);
  RunAt(first_check_after);
  EXPECT_EQ(log->segment_base_offsets(), (std::vector<int64_t>{1, 2}));
}

// A compact-only log gets no time retention; a compact,delete one gets it on
// the job's schedule even when no clean is due (Kafka's cleaner deletes its
// old segments on every pass).
TEST_F(LogManagerJobsTest, RetentionJobSkipsCompactOnlyLogsButNotCompactDeleteOnes) {
  LogManagerOptions options = Options();
  options.jobs.cleaner_enabled = true;
  Start({}, options);
  LogConfig compacted = SmallSegments();
  compacted.compact = true;
  compacted.delete_policy = false;
  Log* kept = Create(kJobsOrders, compacted);
  Append(kept, {kJobsNow - 30 * kHour, kJobsNow - 30 * kHour, kJobsNow});
  compacted.delete_policy = true;             // compact,delete
  compacted.min_cleanable_dirty_ratio = 1.0;  // no clean is ever due
  Log* expired = Create({"changelog", 0}, compacted);
  Append(expired, {kJobsNow - 30 * kHour, kJobsNow - 30 * kHour, kJobsNow});
  RunAt(kInitialDelay);
  EXPECT_EQ(kept->num_segments(), 3u);
  EXPECT_EQ(expired->segment_base_offsets(), (std::vector<int64_t>{2}));
  EXPECT_EQ(expired->log_start_offset(), 2);
}

TEST_F(LogManagerJobsTest, LogStartOffsetCheckpointFollowsItsInterval) {
  Start();
  Log* log = Create(kJobsOrders, SmallSegments());
  Append(log, {kJobsNow, kJobsNow, kJobsNow});
  ASSERT_TRUE(log->MaybeIncrementLogStartOffset(1).ok());  // DeleteRecords-like
  // Not yet written: only the periodic job persists the log start offset.
  EXPECT_TRUE(ReadJobCheckpoint(a_.path(), kLogStartOffsetCheckpointFile).empty());
  RunAt(kInitialDelay);  // first run of every periodic job (retention removes segment 0)
  EXPECT_EQ(log->segment_base_offsets(), (std::vector<int64_t>{1, 2}));
  // log start 1 == first segment base 1: not listed (Kafka's rule).
  EXPECT_TRUE(ReadJobCheckpoint(a_.path(), kLogStartOffsetCheckpointFile).empty());
  // A log start inside a segment is listed, at the next interval.
  ASSERT_TRUE(manager_->AsyncDelete(kJobsOrders).ok());
  Log* other = Create({"other", 0}, config_);
  Append(other, {kJobsNow, kJobsNow});
  ASSERT_TRUE(other->MaybeIncrementLogStartOffset(1).ok());
  RunAt(kInitialDelay + kStartCheckpoint - 1);
  EXPECT_TRUE(ReadJobCheckpoint(a_.path(), kLogStartOffsetCheckpointFile).empty());
  RunAt(kInitialDelay + kStartCheckpoint);
  EXPECT_EQ(ReadJobCheckpoint(a_.path(), kLogStartOffsetCheckpointFile),
            (OffsetMap{{TopicPartition{"other", 0}, 1}}));
}

// Kafka's ReplicaManager writes replication-offset-checkpoint on a timer, so
// a crash loses at most one interval of high-watermark progress; before this
// job only a clean shutdown wrote it.
TEST_F(LogManagerJobsTest, HighWatermarkCheckpointFollowsItsIntervalAndSkipsUnchangedWrites) {
  Start();
  Log* log = Create(kJobsOrders, config_);
  Append(log, {kJobsNow, kJobsNow});
  const std::string path = JoinPath(a_.path(), kReplicationOffsetCheckpointFile);
  RunAt(kHighWatermarkCheckpoint - 1);
  EXPECT_TRUE(ReadJobCheckpoint(a_.path(), kReplicationOffsetCheckpointFile).empty());
  RunAt(kHighWatermarkCheckpoint);
  EXPECT_EQ(ReadJobCheckpoint(a_.path(), kReplicationOffsetCheckpointFile),
            (OffsetMap{{kJobsOrders, 2}}));
  struct stat written {};
  ASSERT_EQ(::stat(path.c_str(), &written), 0);
  // Nothing moved: the file is not replaced (each write renames a new inode in).
  RunAt(2 * kHighWatermarkCheckpoint);
  struct stat unchanged {};
  ASSERT_EQ(::stat(path.c_str(), &unchanged), 0);
  EXPECT_EQ(unchanged.st_ino, written.st_ino);
  Append(log, {kJobsNow});
  RunAt(3 * kHighWatermarkCheckpoint);
  EXPECT_EQ(ReadJobCheckpoint(a_.path(), kReplicationOffsetCheckpointFile),
            (OffsetMap{{kJobsOrders, 3}}));
}

// ---- Flush and recovery-point checkpoints --------------------------------------------

TEST_F(LogManagerJobsTest, FlusherFlushesLogsWhoseLastFlushIsFlushMsOld) {
  Start();
  LogConfig c = config_;
  c.flush_ms = 5000;
  Log* log = Create(kJobsOrders, c);  // created at kJobsNow: its last flush time
  Append(log, {kJobsNow, kJobsNow});
  EXPECT_EQ(log->recovery_point(), 0);
  RunAt(kInitialDelay);  // 1 s since the last flush
  EXPECT_EQ(log->recovery_point(), 0);
  RunAt(kInitialDelay + kFlushInterval);  // 3 s
  EXPECT_EQ(log->recovery_point(), 0);
  RunAt(kInitialDelay + 2 * kFlushInterval);  // 5 s
  EXPECT_EQ(log->recovery_point(), 2);
  EXPECT_EQ(log->last_flush_ms(), kJobsNow + kInitialDelay + 2 * kFlushInterval);
}

// Kafka's "flush-log": the append that rolls does not fsync the old
// segment; a one-shot job does, and only then moves the recovery point.
TEST_F(LogManagerJobsTest, ARollFlushesTheOldSegmentInAFlushLogJob) {
  Start();
  Log* log = Create(kJobsOrders, SmallSegments());
  Append(log, {kJobsNow, kJobsNow, kJobsNow});
  ASSERT_GT(log->num_segments(), 1u);
  const int64_t active_base = log->segment_base_offsets().back();
  EXPECT_EQ(log->recovery_point(), 0) << "the rolls left the flush to the job";
  const std::vector<std::string> pending = manager_->scheduler()->PendingJobNames();
  EXPECT_EQ(std::count(pending.begin(), pending.end(), "flush-log"), int(log->num_segments()) - 1);
  RunAt(0);
  EXPECT_EQ(log->recovery_point(), active_base);
  RunAt(kDirtyTick);
  EXPECT_EQ(ReadJobCheckpoint(a_.path(), kRecoveryPointCheckpointFile),
            (OffsetMap{{kJobsOrders, active_base}}));
}

// A partition deleted before its flush-log job runs: the job finds no log and
// does nothing (the Log object is gone).
TEST_F(LogManagerJobsTest, AFlushLogJobOfADeletedPartitionDoesNothing) {
  Start();
  Log* log = Create(kJobsOrders, SmallSegments());
  Append(log, {kJobsNow, kJobsNow});
  ASSERT_GT(log->num_segments(), 1u);
  ASSERT_TRUE(manager_->AsyncDelete(kJobsOrders).ok());
  RunAt(0);
  EXPECT_TRUE(manager_->JobErrors().empty());
  EXPECT_EQ(manager_->GetLog(kJobsOrders), nullptr);
}

TEST_F(LogManagerJobsTest, AFlushIsCheckpointedAtTheNextDirtyTick) {
  Start();
  Log* log = Create(kJobsOrders, config_);
  Append(log, {kJobsNow, kJobsNow, kJobsNow});
  ASSERT_TRUE(log->FlushAll().ok());
  EXPECT_EQ(ReadJobCheckpoint(a_.path(), kRecoveryPointCheckpointFile).count(kJobsOrders), 0u);
  RunAt(kDirtyTick - 1);
  EXPECT_EQ(ReadJobCheckpoint(a_.path(), kRecoveryPointCheckpointFile).count(kJobsOrders), 0u);
  RunAt(kDirtyTick);
  EXPECT_EQ(ReadJobCheckpoint(a_.path(), kRecoveryPointCheckpointFile),
            (OffsetMap{{kJobsOrders, 3}}));
}

TEST_F(LogManagerJobsTest, CheckpointRecoveryPointsWritesDirtyDirsAtOnce) {
  Start({a_.path(), b_.path()});
  Log* in_a = Create({"t", 0}, config_);
  Log* in_b = Create({"t", 1}, config_);
  Append(in_a, {kJobsNow});
  Append(in_b, {kJobsNow});
  ASSERT_TRUE(in_a->FlushAll().ok());
  ASSERT_TRUE(manager_->CheckpointRecoveryPoints().ok());
  EXPECT_EQ(ReadJobCheckpoint(a_.path(), kRecoveryPointCheckpointFile),
            (OffsetMap{{TopicPartition{"t", 0}, 1}}));
  // b was not dirty: its checkpoint is still the one written at start-up.
  EXPECT_TRUE(ReadJobCheckpoint(b_.path(), kRecoveryPointCheckpointFile).empty());
}

TEST_F(LogManagerJobsTest, FlushIntervalMessagesFlushesOnAppendAndTheTickCheckpointsIt) {
  Start();
  LogConfig c = config_;
  c.flush_messages = 3;
  Log* log = Create(kJobsOrders, c);
  Append(log, {kJobsNow, kJobsNow});
  EXPECT_EQ(log->recovery_point(), 0);
  Append(log, {kJobsNow});
  EXPECT_EQ(log->recovery_point(), 3);
  RunAt(kDirtyTick);
  EXPECT_EQ(ReadJobCheckpoint(a_.path(), kRecoveryPointCheckpointFile),
            (OffsetMap{{kJobsOrders, 3}}));
}

TEST_F(LogManagerJobsTest, TruncationRewritesTheRecoveryPointCheckpointAtOnce) {
  Start();
  Log* log = Create(kJobsOrders, config_);
  Append(log, {kJobsNow, kJobsNow, kJobsNow, kJobsNow});
  ASSERT_TRUE(manager_->CheckpointRecoveryPoints(/*all=*/true).ok());
  ASSERT_TRUE(log->FlushAll().ok());
  ASSERT_TRUE(manager_->CheckpointRecoveryPoints().ok());
  ASSERT_EQ(ReadJobCheckpoint(a_.path(), kRecoveryPointCheckpointFile),
            (OffsetMap{{kJobsOrders, 4}}));
  std::vector<std::string> calls;
  CleanerHooks hooks;
  hooks.abort_and_pause = [&calls](const TopicPartition& tp) {
    calls.push_back("pause " + tp.ToString());
  };
  hooks.resume_after_truncation = [&calls](const TopicPartition& tp, const std::string&,
                                           int64_t offset) {
    calls.push_back("resume " + tp.ToString() + " " + std::to_string(offset));
  };
  manager_->SetCleanerHooks(hooks);

  auto truncated = manager_->TruncateTo(kJobsOrders, 2);
  ASSERT_TRUE(truncated.ok()) << truncated.status().ToString();
  EXPECT_TRUE(*truncated);
  EXPECT_EQ(ReadJobCheckpoint(a_.path(), kRecoveryPointCheckpointFile),
            (OffsetMap{{kJobsOrders, 2}}));
  ASSERT_TRUE(manager_->TruncateFullyAndStartAt(kJobsOrders, 10).ok());
  EXPECT_EQ(ReadJobCheckpoint(a_.path(), kRecoveryPointCheckpointFile),
            (OffsetMap{{kJobsOrders, 10}}));
  EXPECT_EQ(calls, (std::vector<std::string>{"pause orders-0", "resume orders-0 2",
                                             "pause orders-0", "resume orders-0 10"}));
  EXPECT_TRUE(manager_->TruncateTo({"none", 0}, 0).status().IsNotFound());
}

TEST_F(LogManagerJobsTest, AsyncDeleteAndShutdownCallTheCleanerHooks) {
  Start();
  Create(kJobsOrders, config_);
  std::vector<std::string> calls;
  CleanerHooks hooks;
  hooks.stop = [&calls] { calls.push_back("stop"); };
  hooks.abort_and_forget = [&calls](const TopicPartition& tp, const std::string& dir) {
    calls.push_back("forget " + tp.ToString() + " " + dir);
  };
  manager_->SetCleanerHooks(hooks);
  ASSERT_TRUE(manager_->AsyncDelete(kJobsOrders).ok());
  ASSERT_TRUE(manager_->Shutdown().ok());
  EXPECT_EQ(calls, (std::vector<std::string>{"forget orders-0 " + a_.path(), "stop"}));
}

TEST_F(LogManagerJobsTest, RecoveryPointCheckpointJobFollowsItsInterval) {
  LogManagerOptions o = Options();
  o.jobs.dirty_checkpoint_tick_ms = std::numeric_limits<int64_t>::max();  // off
  Start({}, o);
  Log* log = Create(kJobsOrders, config_);
  Append(log, {kJobsNow});
  RunAt(kInitialDelay);
  EXPECT_EQ(ReadJobCheckpoint(a_.path(), kRecoveryPointCheckpointFile),
            (OffsetMap{{kJobsOrders, 0}}));
  ASSERT_TRUE(log->FlushAll().ok());
  RunAt(kInitialDelay + kRecoveryCheckpoint - 1);
  EXPECT_EQ(ReadJobCheckpoint(a_.path(), kRecoveryPointCheckpointFile),
            (OffsetMap{{kJobsOrders, 0}}));
  RunAt(kInitialDelay + kRecoveryCheckpoint);
  EXPECT_EQ(ReadJobCheckpoint(a_.path(), kRecoveryPointCheckpointFile),
            (OffsetMap{{kJobsOrders, 1}}));
}

// A removed segment's files wait out file.delete.delay.ms for its readers;
// at shutdown none is left, so they go then. Left on disk, the next start
// moved them into daruma-quarantine/ as leftovers, and they stayed there
// (216 MB beside a 53 MB compacted log in one run).
TEST_F(LogManagerJobsTest, ShutdownStopsTheSchedulerAndDeletesFilesWaitingForTheirDelay) {
  Start();
  Log* log = Create(kJobsOrders, SmallSegments());
  Append(log, {kJobsNow - 30 * kHour, kJobsNow});
  const std::string dir = log->dir();
  RunAt(kInitialDelay);
  ASSERT_TRUE(FileSystem::Default()->Exists(LogFileName(dir, 0, kDeletedFileSuffix)));
  ASSERT_TRUE(manager_->Shutdown().ok());
  EXPECT_EQ(manager_->scheduler()->NextDueMs(), -1);
  EXPECT_EQ(RunAt(kInitialDelay + kJobsDeleteDelay), 0);
  for (const std::string& name : Entries(dir)) {
    EXPECT_EQ(name.find(".deleted"), std::string::npos) << name;
  }
  Start();
  EXPECT_FALSE(FileSystem::Default()->Exists(JoinPath(dir, "daruma-quarantine")));
  EXPECT_EQ(manager_->GetLog(kJobsOrders)->log_start_offset(), 1);
  EXPECT_EQ(manager_->GetLog(kJobsOrders)->log_end_offset(), 2);
}

// The same jobs on real timers and pool threads while a producer appends:
// retention catches up and nothing deadlocks. Waits on an outcome (bounded),
// never on a fixed delay.
TEST_F(LogManagerJobsTest, TimersModeRunsRetentionWhileAppending) {
  LogManagerOptions o;
  o.jobs.enabled = true;
  o.jobs.threads = 2;
  o.jobs.initial_delay_ms = 0;
  o.jobs.retention_check_interval_ms = 1;
  o.jobs.flush_scheduler_interval_ms = 1;
  o.jobs.recovery_point_checkpoint_interval_ms = 1;
  o.jobs.log_start_offset_checkpoint_interval_ms = 1;
  o.jobs.dirty_checkpoint_tick_ms = 1;
  manager_ = std::make_unique<LogManager>(o);
  config_.file_delete_delay_ms = 0;
  ASSERT_TRUE(manager_->Startup({a_.path()}, config_, 1).ok());
  LogConfig c = SmallSegments();
  c.flush_ms = 0;
  Log* log = Create(kJobsOrders, c);
  const int64_t old = Clock::System()->NowMs() - 30 * kHour;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int appended = 0;
  while (log->log_start_offset() < 20 && std::chrono::steady_clock::now() < deadline) {
    if (appended < 40) {
      Append(log, {old});
      ++appended;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  EXPECT_GE(log->log_start_offset(), 20);
  ASSERT_TRUE(manager_->Shutdown().ok());
  EXPECT_TRUE(manager_->JobErrors().empty());
  EXPECT_FALSE(manager_->HasFailures());
}

TEST_F(LogManagerJobsTest, JobsAreOffUnlessEnabled) {
  LogManagerOptions o;
  o.clock = &clock_;
  o.jobs.mode = Scheduler::Mode::kManual;
  manager_ = std::make_unique<LogManager>(o);
  ASSERT_TRUE(manager_->Startup({a_.path()}, config_, 1).ok());
  EXPECT_TRUE(manager_->scheduler()->PendingJobNames().empty());
  ASSERT_NE(Create(kJobsOrders, config_), nullptr);
  ASSERT_TRUE(manager_->AsyncDelete(kJobsOrders).ok());
  EXPECT_EQ(manager_->scheduler()->PendingJobNames(),
            (std::vector<std::string>{"kafka-delete-logs"}));
}

TEST_F(LogManagerJobsTest, ServerConfigReadsTheJobSettings) {
  auto server =
      ServerConfig::FromProperties({{"log.initial.task.delay.ms", "0"},
                                    {"background.threads", "4"},
                                    {"daruma.recovery.point.checkpoint.tick.ms", "250"},
                                    {"replica.high.watermark.checkpoint.interval.ms", "900"},
                                    {"log.retention.check.interval.ms", "1000"}});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_EQ(server->log_initial_task_delay_ms, 0);
  EXPECT_EQ(server->background_threads, 4);
  EXPECT_EQ(server->recovery_point_checkpoint_tick_ms, 250);
  EXPECT_TRUE(server->other.empty());
  LogManagerJobsConfig jobs = LogManagerJobsConfig::From(*server);
  EXPECT_EQ(jobs.dirty_checkpoint_tick_ms, 250);
  EXPECT_EQ(jobs.retention_check_interval_ms, 1000);
  EXPECT_EQ(jobs.high_watermark_checkpoint_interval_ms, 900);

  auto bad = ServerConfig::FromProperties({{"background.threads", "0"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("background.threads"), std::string::npos);
}

TEST_F(LogManagerJobsTest, ConfigFromServerConfig) {
  ServerConfig server;
  server.log_retention_check_interval_ms = 7;
  server.log_initial_task_delay_ms = 8;
  server.background_threads = 3;
  LogManagerJobsConfig jobs = LogManagerJobsConfig::From(server);
  EXPECT_TRUE(jobs.enabled);
  EXPECT_EQ(jobs.retention_check_interval_ms, 7);
  EXPECT_EQ(jobs.initial_delay_ms, 8);
  EXPECT_EQ(jobs.threads, 3);
  EXPECT_EQ(jobs.flush_scheduler_interval_ms, std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace daruma
