// LogManager with the built-in log cleaner: a compacted topic cleaned by the
// kafka-log-cleaner job (kManual scheduler, ManualClock), the
// cleaner-offset-checkpoint, delayed deletion of replaced segments, restart,
// topic overrides reaching the cleaner, and a crash in the middle of a clean
// (leftover .cleaned / .swap files) recovered by the loader at start-up.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "log/log_cleaner.h"
#include "log/log_file_names.h"
#include "record/file_batch_reader.h"
#include "record/record_batch.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"
#include "recovery/server_config.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;

constexpr int64_t kCleanerNow = 1700000000000;
constexpr int64_t kBackoff = 15000;
constexpr int64_t kDeleteDelay = 60000;
const TopicPartition kTp{"orders", 0};
const Uuid kTopicId = *Uuid::FromString("vDb5Vgm5RpaVW8EvFvzDfg");

struct Rec {
  int64_t offset;
  std::string key;
  std::string value;
  bool operator==(const Rec&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Rec& r) {
  return os << r.offset << ":" << r.key << "=" << r.value;
}

std::vector<Rec> Records(Log* log) {
  std::vector<Rec> out;
  for (LogSegment* seg : log->segments_for_inspection()) {
    FileBatchReaderOptions ro;
    ro.end_position = uint64_t(seg->size());
    FileBatchReader reader(seg->log_file(), ro);
    while (auto e = reader.Next()) {
      Bytes bytes(e->bytes.begin(), e->bytes.end());
      RecordBatchView view(bytes);
      auto records = view.DecodeRecords();
      EXPECT_TRUE(records.ok()) << records.status().ToString();
      if (!records.ok() || view.is_control()) continue;
      for (const Record& r : *records) {
        out.push_back({r.offset, r.key.value_or(""), r.value.value_or("")});
      }
    }
  }
  return out;
}

std::vector<std::string> Names(const std::string& dir) {
  auto entries = FileSystem::Default()->ListDir(dir);
  EXPECT_TRUE(entries.ok());
  std::vector<std::string> names;
  if (entries.ok()) {
    for (const DirEntry& e : *entries) names.push_back(e.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Files a clean leaves behind until they are removed.
std::vector<std::string> Leftovers(const std::string& dir) {
  std::vector<std::string> out;
  for (const std::string& name : Names(dir)) {
    if (HasSuffix(name, ".cleaned") || HasSuffix(name, ".swap") || HasSuffix(name, ".deleted")) {
      out.push_back(name);
    }
  }
  return out;
}

class LogManagerCleanerTest : public ::testing::Test {
 protected:
  LogManagerCleanerTest() {
    config_.file_delete_delay_ms = kDeleteDelay;
    config_.retention_ms = -1;
    config_.segment_bytes = 300;
    config_.segment_index_bytes = 4096;
    config_.index_interval_bytes = 1;
    compacted_ = config_;
    compacted_.compact = true;
    compacted_.delete_policy = false;
  }

  LogManagerOptions Options() {
    LogManagerOptions o;
    o.clock = &clock_;
    o.jobs.enabled = true;
    o.jobs.mode = Scheduler::Mode::kManual;
    o.jobs.initial_delay_ms = 1000;
    o.jobs.cleaner_enabled = true;
    o.jobs.cleaner.backoff_ms = kBackoff;
    o.jobs.cleaner.dedupe_buffer_size = 24 * 4096;
    return o;
  }

  // Topic configs are not stored in the log dirs: the broker sets "orders"'s
  // (compacted unless told otherwise) before Startup, as its registry does.
  void Start(const std::string& dir, bool compact_orders = true) {
    manager_ = std::make_unique<LogManager>(Options());
    if (compact_orders) manager_->SetTopicConfig("orders", compacted_);
    ASSERT_TRUE(manager_->Startup({dir}, config_, 1).ok());
    ASSERT_NE(manager_->log_cleaner(), nullptr);
  }

  // Runs every job due at kCleanerNow + ms.
  void RunAt(int64_t ms) {
    clock_.Set(kCleanerNow + ms);
    manager_->RunDueJobsForTest();
  }

  // `count` one-record batches, key k<i % keys>, value v<i>; returns them.
  std::vector<Rec> AppendKeys(Log* log, int count, int keys, int first = 0) {
    std::vector<Rec> out;
    for (int i = first; i < first + count; ++i) {
      RecordInput record;
      record.timestamp = kCleanerNow;
      record.key = "k" + std::to_string(i % keys);
      record.value = "v" + std::to_string(i);
      auto batch = BuildRecordBatch({}, {record});
      EXPECT_TRUE(batch.ok());
      auto info = log->AppendAsLeader(*batch, 0);
      EXPECT_TRUE(info.ok()) << info.status().ToString();
      out.push_back({info.ok() ? info->first_offset : -1, *record.key, *record.value});
    }
    log->UpdateHighWatermark(log->log_end_offset());
    return out;
  }

  // What compaction of [0, end) keeps: the last record of each key in that
  // range, and everything from `end` on.
  static std::vector<Rec> Compacted(const std::vector<Rec>& all, int64_t end) {
    std::map<std::string, int64_t> last;
    for (const Rec& r : all) {
      if (r.offset < end) last[r.key] = r.offset;
    }
    std::vector<Rec> out;
    for (const Rec& r : all) {
      if (r.offset >= end || last[r.key] == r.offset) out.push_back(r);
    }
    return out;
  }

  ManualClock clock_{kCleanerNow};
  TempDir a_;
  LogConfig config_;
  LogConfig compacted_;
  std::unique_ptr<LogManager> manager_;
};

TEST_F(LogManagerCleanerTest, CleanerJobCompactsCheckpointsDeletesLaterAndSurvivesRestart) {
  Start(a_.path());
  auto created = manager_->GetOrCreateLog(kTp, kTopicId, compacted_);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Log* log = *created;
  const std::vector<Rec> all = AppendKeys(log, 40, 4);
  const std::vector<int64_t> bases = log->segment_base_offsets();
  ASSERT_GE(bases.size(), 4u);  // several small segments
  const int64_t active = bases.back();
  EXPECT_FALSE(FileSystem::Default()->Exists(a_.Join(kCleanerOffsetCheckpointFileName)));

  RunAt(kBackoff);

  const std::vector<Rec> expected = Compacted(all, active);
  ASSERT_LT(expected.size(), all.size());
  EXPECT_EQ(Records(log), expected);
  EXPECT_EQ(log->log_end_offset(), 40);
  EXPECT_EQ(ReadFileToString(a_.Join(kCleanerOffsetCheckpointFileName)),
            "0\n1\norders 0 " + std::to_string(active) + "\n");
  // Replaced segments wait file.delete.delay.ms as `.deleted` files.
  const std::string part = a_.Join("orders-0");
  EXPECT_FALSE(Leftovers(part).empty());
  RunAt(kBackoff + kDeleteDelay);
  EXPECT_EQ(Leftovers(part), std::vector<std::string>());

  ASSERT_TRUE(manager_->Shutdown().ok());
  EXPECT_EQ(Leftovers(part), std::vector<std::string>());
  EXPECT_TRUE(FileSystem::Default()->Exists(a_.Join(".kafka_cleanshutdown")));

  Start(a_.path());
  Log* reloaded = manager_->GetLog(kTp);
  ASSERT_NE(reloaded, nullptr);
  EXPECT_EQ(Records(reloaded), expected);
  EXPECT_EQ(reloaded->log_end_offset(), 40);
  auto checkpointed = manager_->log_cleaner()->CheckpointedOffset(reloaded);
  ASSERT_TRUE(checkpointed.ok());
  EXPECT_EQ(*checkpointed, std::optional<int64_t>(active));
  ASSERT_TRUE(manager_->Shutdown().ok());
}

TEST_F(LogManagerCleanerTest, ShutdownBeforeTheDeleteDelayLeavesDeletedFilesForTheLoader) {
  Start(a_.path());
  Log* log = *manager_->GetOrCreateLog(kTp, kTopicId, compacted_);
  const std::vector<Rec> all = AppendKeys(log, 30, 3);
  const int64_t active = log->segment_base_offsets().back();
  RunAt(kBackoff);
  const std::string part = a_.Join("orders-0");
  EXPECT_FALSE(Leftovers(part).empty());
  ASSERT_TRUE(manager_->Shutdown().ok());
  Start(a_.path());
  EXPECT_EQ(Leftovers(part), std::vector<std::string>());
  EXPECT_EQ(Records(manager_->GetLog(kTp)), Compacted(all, active));
  ASSERT_TRUE(manager_->Shutdown().ok());
}

TEST_F(LogManagerCleanerTest, TopicOverrideTurnsCompactionOnAndOff) {
  Start(a_.path(), /*compact_orders=*/false);
  Log* log = *manager_->GetOrCreateLog(kTp, kTopicId, config_);  // delete policy: not cleaned
  const std::vector<Rec> all = AppendKeys(log, 30, 3);
  const int64_t active = log->segment_base_offsets().back();
  RunAt(kBackoff);
  EXPECT_EQ(Records(log), all);

  LogConfig compact = compacted_;
  compact.min_cleanable_dirty_ratio = 0.99;  // the whole log is dirty: still cleaned
  compact.delete_retention_ms = 5;
  manager_->SetTopicConfig("orders", compact);
  RunAt(2 * kBackoff);
  EXPECT_EQ(Records(log), Compacted(all, active));

  manager_->SetTopicConfig("orders", config_);
  AppendKeys(log, 30, 3, 30);
  RunAt(3 * kBackoff);
  EXPECT_EQ(ReadFileToString(a_.Join(kCleanerOffsetCheckpointFileName)),
            "0\n1\norders 0 " + std::to_string(active) + "\n");
  ASSERT_TRUE(manager_->Shutdown().ok());
}

TEST_F(LogManagerCleanerTest, DeletingAPartitionForgetsItsCleanerCheckpoint) {
  Start(a_.path());
  Log* log = *manager_->GetOrCreateLog(kTp, kTopicId, compacted_);
  AppendKeys(log, 30, 3);
  Log* other = *manager_->GetOrCreateLog({"other", 0}, kTopicId, compacted_);
  AppendKeys(other, 30, 3);
  RunAt(kBackoff);
  const std::string checkpoint = ReadFileToString(a_.Join(kCleanerOffsetCheckpointFileName));
  ASSERT_NE(checkpoint.find("orders 0 "), std::string::npos) << checkpoint;
  ASSERT_NE(checkpoint.find("other 0 "), std::string::npos) << checkpoint;
  ASSERT_TRUE(manager_->AsyncDelete(kTp).ok());
  const std::string after = ReadFileToString(a_.Join(kCleanerOffsetCheckpointFileName));
  EXPECT_EQ(after.find("orders 0 "), std::string::npos) << after;
  EXPECT_TRUE(after.starts_with("0\n1\nother 0 ")) << after;
  RunAt(2 * kBackoff + kDeleteDelay);  // nothing refers to the deleted log any more
  ASSERT_TRUE(manager_->Shutdown().ok());
}

TEST_F(LogManagerCleanerTest, TruncationLowersTheCleanerCheckpoint) {
  Start(a_.path());
  Log* log = *manager_->GetOrCreateLog(kTp, kTopicId, compacted_);
  AppendKeys(log, 30, 3);
  RunAt(kBackoff);
  ASSERT_TRUE(manager_->TruncateTo(kTp, 5).ok());
  EXPECT_EQ(ReadFileToString(a_.Join(kCleanerOffsetCheckpointFileName)), "0\n1\norders 0 5\n");
  EXPECT_EQ(log->log_end_offset(), 5);
  ASSERT_TRUE(manager_->Shutdown().ok());
}

TEST_F(LogManagerCleanerTest, ServerConfigEnablesTheCleanerAndReadsItsSettings) {
  auto server = ServerConfig::FromProperties({{"log.cleaner.threads", "3"},
                                              {"log.cleaner.dedupe.buffer.size", "1048576"},
                                              {"log.cleaner.backoff.ms", "250"},
                                              {"log.cleaner.io.max.bytes.per.second", "1e6"},
                                              {"log.cleaner.min.cleanable.ratio", "0.25"},
                                              {"log.cleaner.delete.retention.ms", "1000"},
                                              {"log.cleaner.min.compaction.lag.ms", "7"},
                                              {"log.cleaner.max.compaction.lag.ms", "9"}});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_TRUE(server->other.empty());
  LogManagerJobsConfig jobs = LogManagerJobsConfig::From(*server);
  EXPECT_TRUE(jobs.cleaner_enabled);
  EXPECT_EQ(jobs.cleaner.threads, 3);
  EXPECT_EQ(jobs.cleaner.dedupe_buffer_size, 1048576);
  EXPECT_EQ(jobs.cleaner.backoff_ms, 250);
  EXPECT_EQ(jobs.cleaner.io_max_bytes_per_second, 1e6);
  const CompactionConfig compaction = CompactionConfigOf(server->log);
  EXPECT_EQ(compaction.min_cleanable_dirty_ratio, 0.25);
  EXPECT_EQ(compaction.delete_retention_ms, 1000);
  EXPECT_EQ(compaction.min_compaction_lag_ms, 7);
  EXPECT_EQ(compaction.max_compaction_lag_ms, 9);

  auto off = ServerConfig::FromProperties({{"log.cleaner.enable", "false"}});
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(LogManagerJobsConfig::From(*off).cleaner_enabled);
  auto bad = ServerConfig::FromProperties({{"log.cleaner.min.cleanable.ratio", "1.5"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("log.cleaner.min.cleanable.ratio"), std::string::npos)
      << bad.status().message();
}

TEST_F(LogManagerCleanerTest, CleanerThreadsRunWithTimersAndStopAtShutdown) {
  LogManagerOptions options = Options();
  options.clock = Clock::System();
  options.jobs.mode = Scheduler::Mode::kTimers;
  options.jobs.initial_delay_ms = 3600000;
  options.jobs.cleaner.threads = 2;
  options.jobs.cleaner.backoff_ms = 5;
  manager_ = std::make_unique<LogManager>(options);
  ASSERT_TRUE(manager_->Startup({a_.path()}, config_, 1).ok());
  Log* log = *manager_->GetOrCreateLog(kTp, kTopicId, compacted_);
  const std::vector<Rec> all = AppendKeys(log, 30, 3);
  const int64_t active = log->segment_base_offsets().back();
  std::optional<int64_t> checkpointed;
  for (int i = 0; i < 500 && checkpointed != std::optional<int64_t>(active); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    auto read = manager_->log_cleaner()->CheckpointedOffset(log);
    ASSERT_TRUE(read.ok());
    checkpointed = *read;
  }
  EXPECT_EQ(checkpointed, std::optional<int64_t>(active));
  ASSERT_TRUE(manager_->Shutdown().ok());
  Start(a_.path());
  EXPECT_EQ(Records(manager_->GetLog(kTp)), Compacted(all, active));
}

// ---- Crash in the middle of a clean ----------------------------------------------

class LogManagerCleanerCrashTest : public LogManagerCleanerTest {
 protected:
  // Writes a log, keeps a copy of the dir before cleaning (`before_`), cleans
  // it and keeps the cleaned first segment's files (`cleaned_files_`).
  void SetUp() override {
    Start(a_.path());
    Log* log = *manager_->GetOrCreateLog(kTp, kTopicId, compacted_);
    all_ = AppendKeys(log, 30, 3);
    active_ = log->segment_base_offsets().back();
    ASSERT_TRUE(manager_->Shutdown().ok());
    testing::CopyTree(a_.path(), before_.path());
    Start(a_.path());
    RunAt(kBackoff);
    cleaned_ = Records(manager_->GetLog(kTp));
    ASSERT_EQ(cleaned_, Compacted(all_, active_));
    const std::vector<int64_t> bases = manager_->GetLog(kTp)->segment_base_offsets();
    ASSERT_TRUE(manager_->Shutdown().ok());
    // Each replaced segment was cleaned on its own (4 batches fill one).
    for (int64_t base : bases) {
      if (base >= active_) continue;
      for (const char* suffix : {".log", ".index", ".timeindex"}) {
        const std::string name = FilenamePrefixFromOffset(base) + suffix;
        cleaned_files_[name] = ReadFileToString(a_.Join("orders-0/" + name));
      }
    }
    ASSERT_GE(cleaned_files_.size(), 6u);
    manager_.reset();
  }

  // `before_` as a crashed broker leaves it, plus every cleaned file under
  // its name + `suffix` (".cleaned", ".swap").
  std::string CrashImage(const std::string& suffix) {
    testing::CopyTree(before_.path(), crash_.path());
    EXPECT_TRUE(FileSystem::Default()->Remove(crash_.Join(".kafka_cleanshutdown")).ok());
    for (const auto& [name, contents] : cleaned_files_) {
      testing::WriteStringToFile(crash_.Join("orders-0/" + name + suffix), contents);
    }
    return crash_.path();
  }

  TempDir before_, crash_;
  std::vector<Rec> all_, cleaned_;
  int64_t active_ = 0;
  std::map<std::string, std::string> cleaned_files_;
};

TEST_F(LogManagerCleanerCrashTest, CrashWhileWritingCleanedFilesKeepsTheOldSegments) {
  const std::string dir = CrashImage(".cleaned");
  Start(dir);
  Log* log = manager_->GetLog(kTp);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(Records(log), all_);
  EXPECT_EQ(Leftovers(crash_.Join("orders-0")), std::vector<std::string>());
  // And it cleans again from scratch (SetUp left the clock at kBackoff).
  RunAt(2 * kBackoff);
  EXPECT_EQ(Records(log), cleaned_);
  ASSERT_TRUE(manager_->Shutdown().ok());
}

TEST_F(LogManagerCleanerCrashTest, CrashDuringTheSwapCompletesIt) {
  // Every .cleaned file became .swap; the old segments were not renamed yet.
  const std::string dir = CrashImage(".swap");
  Start(dir);
  Log* log = manager_->GetLog(kTp);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(Records(log), cleaned_);
  EXPECT_EQ(log->log_end_offset(), 30);
  EXPECT_EQ(Leftovers(crash_.Join("orders-0")), std::vector<std::string>());
  ASSERT_TRUE(manager_->Shutdown().ok());
  EXPECT_EQ(Leftovers(crash_.Join("orders-0")), std::vector<std::string>());
}

}  // namespace
}  // namespace daruma
