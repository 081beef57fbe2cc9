// Descriptors bounded everywhere (issue 23): an unclean start of more
// partitions than daruma.max.open.files allows files, each crashed with its
// active segment's .index and .timeindex still preallocated, loads every
// partition under a lowered RLIMIT_NOFILE while the descriptors held for
// partition files never exceed the budget (+ FileHandleCache::kTransientSlack);
// and an EMFILE (a descriptor limit below the budget) never takes the log dir
// offline.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "common/forwarding_file_system.h"
#include "common/no_sync_file_system.h"
#include "log/log.h"
#include "log/log_file_names.h"
#include "record/record_batch.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"
#include "support/descriptor_limit.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::DescriptorLimit;
using testing::OpenDescriptors;
using testing::TempDir;

using testing::kT0;
constexpr int kBudgetPartitions = 200;
constexpr int kBatches = 3;
constexpr size_t kMaxOpenFiles = 32;

// Counts the Files of the real file system alive at once (each holds one
// descriptor) and their peak, below the manager's CachingFileSystem: what the
// budget must bound. Syncs succeed without fsync (durability is not under
// test); writable mappings are forwarded, so active indexes append through
// their mapped windows as on a real disk.
class DescriptorCountingFileSystem final : public ForwardingFileSystem {
 public:
  Status SyncDir(const std::string&) override { return Status::Ok(); }

  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    DARUMA_ASSIGN_OR_RETURN(auto file, base()->Open(path, mode));
    return std::unique_ptr<File>(new CountedFile(this, std::move(file)));
  }
  // The default goes through Open, so one-shot reads are counted too.
  Result<std::vector<uint8_t>> ReadFile(const std::string& path) override {
    return FileSystem::ReadFile(path);
  }

  int peak() const { return peak_.load(); }
  int live() const { return live_.load(); }
  void ResetPeak() { peak_.store(live_.load()); }

 private:
  class CountedFile final : public ForwardingFile {
   public:
    CountedFile(DescriptorCountingFileSystem* owner, std::unique_ptr<File> file)
        : ForwardingFile(std::move(file)), owner_(owner) {
      const int now = ++owner_->live_;
      int peak = owner_->peak_.load();
      while (now > peak && !owner_->peak_.compare_exchange_weak(peak, now)) {
      }
    }
    ~CountedFile() override { --owner_->live_; }
    Status Sync() override { return Status::Ok(); }
    // Forwarded, so preallocated indexes keep their holes and windows.
    Result<std::unique_ptr<WritableMappedRegion>> MapForAppend(uint64_t pos, size_t len,
                                                               AppendFaults faults) override {
      return base()->MapForAppend(pos, len, faults);
    }

   private:
    DescriptorCountingFileSystem* owner_;
  };

  std::atomic<int> live_{0};
  std::atomic<int> peak_{0};
};

Bytes OneRecordBatch(int64_t i, size_t value_size = 8) {
  RecordInput record;
  record.timestamp = kT0 + i;
  record.key = "k" + std::to_string(i);
  record.value = std::string(value_size, char('a' + i % 26));
  auto batch = BuildRecordBatch({}, {record});
  EXPECT_TRUE(batch.ok());
  return batch.ok() ? *batch : Bytes{};
}

// Two appends to every partition, each larger than index.interval.bytes, as
// producers do after a start: each pins the partition's .log, and the second
// one also its .index and .timeindex (an entry stored through each mapped
// index window): three unsynced handles per partition, which no flush
// releases before the last partition is written to.
void AppendToEvery(LogManager& manager) {
  for (int p = 0; p < kBudgetPartitions; ++p) {
    for (int64_t offset = kBatches; offset < kBatches + 2; ++offset) {
      auto info = manager.GetLog({"many", p})->AppendAsLeader(OneRecordBatch(offset, 5000), 0);
      ASSERT_TRUE(info.ok()) << p << ": " << info.status().ToString();
    }
  }
}

// A partition of two segments whose process died after the appends: no
// Close, so the active segment's indexes stay at segment.index.bytes (a
// sparse 10 MiB each) as Kafka leaves them, and no clean-shutdown marker.
void MakeCrashedPartition(const std::string& log_dir, const TopicPartition& tp) {
  ManualClock clock(kT0);
  auto log = Log::CreateEmpty(NoSyncFileSystem::Instance(), JoinPath(log_dir, LogDirName(tp)), tp,
                              LogConfig{}, &clock);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  for (int64_t offset = 0; offset < kBatches; ++offset) {
    if (offset == 1) {
      ASSERT_TRUE((*log)->Roll().ok());
    }
    auto info = (*log)->AppendAsLeader(OneRecordBatch(offset), 0);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
  }
  ASSERT_TRUE((*log)->FlushAll().ok());
}

class DescriptorBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int p = 0; p < kBudgetPartitions; ++p) {
      MakeCrashedPartition(tmp_.path(), {"many", p});
      if (HasFatalFailure()) return;
    }
    const std::string active_index =
        OffsetIndexFileName(JoinPath(tmp_.path(), LogDirName({"many", 0})), 1);
    ASSERT_EQ(std::filesystem::file_size(active_index), uint64_t(LogConfig{}.segment_index_bytes));
    ASSERT_FALSE(std::filesystem::exists(tmp_.Join(".kafka_cleanshutdown")));
  }

  // A start that recovered every partition and checkpointed its recovery
  // point at the log end, then a crash (no Shutdown): the active indexes are
  // preallocated again, and the next start's recovery finds nothing to
  // flush, only index files to rebuild.
  void CrashAfterAStart() {
    {
      LogManagerOptions options;
      options.fs = NoSyncFileSystem::Instance();
      LogManager manager(options);
      ASSERT_TRUE(manager.Startup({tmp_.path()}, LogConfig{}, 2).ok());
      ASSERT_FALSE(manager.HasFailures());
    }
    const std::string active_index =
        OffsetIndexFileName(JoinPath(tmp_.path(), LogDirName({"many", 0})), 1);
    ASSERT_EQ(std::filesystem::file_size(active_index), uint64_t(LogConfig{}.segment_index_bytes));
    ASSERT_TRUE(std::filesystem::exists(tmp_.Join("recovery-point-offset-checkpoint")));
    ASSERT_FALSE(std::filesystem::exists(tmp_.Join(".kafka_cleanshutdown")));
  }

  void ExpectEveryPartitionServes(LogManager& manager) {
    for (int p = 0; p < kBudgetPartitions; ++p) {
      Log* log = manager.GetLog({"many", p});
      ASSERT_NE(log, nullptr) << p;
      EXPECT_EQ(log->log_end_offset(), kBatches) << p;
      auto read = log->Read(0, 1 << 20, FetchIsolation::kLogEnd, true);
      ASSERT_TRUE(read.ok()) << p << ": " << read.status().ToString();
      EXPECT_FALSE(read->records.empty()) << p;
    }
  }

  TempDir tmp_;
  DescriptorCountingFileSystem counting_;
};

TEST_F(DescriptorBudgetTest, CrashedPreallocatedPartitionsLoadWithinTheBudget) {
  LogManagerOptions options;
  options.fs = &counting_;
  options.max_open_files = kMaxOpenFiles;
  LogManager manager(options);
  const int before = OpenDescriptors();
  {
    // 200 partitions of 2 segments are 1,200 segment files alone; the limit
    // leaves room for the budget, the allowed slack and the manager's own
    // descriptors (.lock, scheduler).
    DescriptorLimit limit(rlim_t(before) + kMaxOpenFiles + FileHandleCache::kTransientSlack + 16);
    ASSERT_TRUE(manager.Startup({tmp_.path()}, LogConfig{}, 2).ok());
    std::fprintf(stderr, "after the start: %d partition files open at most, %d now, %d fds\n",
                 counting_.peak(), counting_.live(), OpenDescriptors() - before);
    EXPECT_FALSE(manager.HasFailures()) << manager.ReportJson().dump().substr(0, 3000);
    EXPECT_TRUE(manager.failure_channel().ErrorFor(tmp_.path()).ok())
        << manager.failure_channel().ErrorFor(tmp_.path()).ToString();
    EXPECT_LE(counting_.peak(), int(kMaxOpenFiles + FileHandleCache::kTransientSlack));
    EXPECT_LE(counting_.live(), int(kMaxOpenFiles));
    // + the dir's .lock and the scheduler's eventfd, epoll and timerfd.
    EXPECT_LE(OpenDescriptors() - before, int(kMaxOpenFiles) + 4);
    ExpectEveryPartitionServes(manager);
    if (HasFatalFailure()) return;
    // More unsynced handles than the budget: synced and released instead.
    counting_.ResetPeak();
    AppendToEvery(manager);
    if (HasFatalFailure()) return;
    std::fprintf(stderr, "appending to all: %d partition files open at most\n", counting_.peak());
    EXPECT_LE(counting_.peak(), int(kMaxOpenFiles + FileHandleCache::kTransientSlack));
    ASSERT_TRUE(manager.Shutdown().ok());
  }
  EXPECT_TRUE(std::filesystem::exists(tmp_.Join(".kafka_cleanshutdown")));
  const std::string active_index =
      OffsetIndexFileName(JoinPath(tmp_.path(), LogDirName({"many", 0})), 1);
  EXPECT_LT(std::filesystem::file_size(active_index), uint64_t(LogConfig{}.segment_index_bytes));
}

// A crash after a start that checkpointed every recovery point at the log
// end: the next start rebuilds each active segment's indexes (preallocated
// again) and pins no more handles (unsynced in the cache's eyes) than the
// budget allows, also once every log has flushed what the load rebuilt.
TEST_F(DescriptorBudgetTest, CheckpointedThenCrashedPartitionsPinNoMoreThanTheBudget) {
  CrashAfterAStart();
  if (HasFatalFailure()) return;
  LogManagerOptions options;
  options.fs = &counting_;
  options.max_open_files = kMaxOpenFiles;
  LogManager manager(options);
  const int before = OpenDescriptors();
  {
    DescriptorLimit limit(rlim_t(before) + kMaxOpenFiles + FileHandleCache::kTransientSlack + 16);
    ASSERT_TRUE(manager.Startup({tmp_.path()}, LogConfig{}, 2).ok());
    const FileHandleCache& cache = manager.caching_file_system()->cache();
    std::fprintf(stderr,
                 "after the start: %d partition files open at most, %zu pinned, %llu synced "
                 "to release\n",
                 counting_.peak(), cache.pinned_handles(),
                 static_cast<unsigned long long>(cache.synced_releases()));
    EXPECT_FALSE(manager.HasFailures()) << manager.ReportJson().dump().substr(0, 3000);
    EXPECT_TRUE(manager.failure_channel().ErrorFor(tmp_.path()).ok());
    // The loads only rebuilt indexes and snapshots, left unsynced
    // (LogDirLoader::LoadPartition): the handles that wrote them stay pinned,
    // within the budget, until the cache syncs and releases them for room
    // or the shutdown's syncfs marks them clean.
    EXPECT_LE(cache.pinned_handles(), kMaxOpenFiles);
    EXPECT_LE(counting_.peak(), int(kMaxOpenFiles + FileHandleCache::kTransientSlack));
    ExpectEveryPartitionServes(manager);
    if (HasFatalFailure()) return;
    // Each log's first flush syncs them by path and moves its recovery point.
    for (int p = 0; p < kBudgetPartitions; ++p) {
      Log* log = manager.GetLog({"many", p});
      ASSERT_TRUE(log->FlushAll().ok()) << p;
      EXPECT_EQ(log->recovery_point(), log->log_end_offset()) << p;
    }
    EXPECT_LE(counting_.peak(), int(kMaxOpenFiles + FileHandleCache::kTransientSlack));
    if (HasFatalFailure()) return;
    ASSERT_TRUE(manager.Shutdown().ok());
  }
  EXPECT_TRUE(std::filesystem::exists(tmp_.Join(".kafka_cleanshutdown")));
}

// A descriptor limit far below daruma.max.open.files: opens hit EMFILE, at
// the start and when appends pin more handles than the limit allows. The
// cache releases what it holds (syncing pinned handles) and retries, and no
// EMFILE takes the dir offline or fails a partition.
TEST_F(DescriptorBudgetTest, EmfileBelowTheBudgetNeverTakesTheDirOffline) {
  LogManagerOptions options;
  options.fs = &counting_;
  options.max_open_files = 1000;
  LogManager manager(options);
  const int before = OpenDescriptors();
  {
    DescriptorLimit limit(rlim_t(before) + 24);
    ASSERT_TRUE(manager.Startup({tmp_.path()}, LogConfig{}, 2).ok());
    EXPECT_TRUE(manager.failure_channel().ErrorFor(tmp_.path()).ok())
        << manager.failure_channel().ErrorFor(tmp_.path()).ToString();
    EXPECT_FALSE(manager.HasFailures()) << manager.ReportJson().dump().substr(0, 3000);
    ExpectEveryPartitionServes(manager);
    if (HasFatalFailure()) return;
    AppendToEvery(manager);
    if (HasFatalFailure()) return;
    EXPECT_TRUE(manager.failure_channel().ErrorFor(tmp_.path()).ok());
    ASSERT_TRUE(manager.Shutdown().ok());
  }
  EXPECT_TRUE(std::filesystem::exists(tmp_.Join(".kafka_cleanshutdown")));
}

}  // namespace
}  // namespace daruma
