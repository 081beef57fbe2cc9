// LogManager: start-up over several log dirs, locking, the clean-shutdown
// marker, checkpoints and the log-dir failure channel. One case per rule.
#include "recovery/log_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "common/forwarding_file_system.h"
#include "log/clean_shutdown_file.h"
#include "log/meta_properties.h"
#include "log/offset_checkpoint_file.h"
#include "log/segment_scan_split.h"
#include "record/record_batch_builder.h"
#include "recovery/dir_lock.h"
#include "recovery/log_checker.h"
#include "support/damaged_fixture.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

const TopicPartition kOrders{"orders", 0};
const TopicPartition kPayments{"payments", 3};

// Writes `batches` one-record batches to a fresh partition of `log_dir` and
// closes it without any log-dir checkpoint or marker (an unclean dir).
void MakePartition(const std::string& log_dir, const TopicPartition& tp, int batches,
                   const LogConfig& config = {}) {
  ManualClock clock(1700000000000);
  auto log = Log::CreateEmpty(FileSystem::Default(), JoinPath(log_dir, LogDirName(tp)), tp, config,
                              &clock);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  for (int i = 0; i < batches; ++i) {
    RecordInput record;
    record.timestamp = 1700000000000 + i;
    record.key = "k" + std::to_string(i);
    record.value = "value " + std::to_string(i);
    auto batch = BuildRecordBatch({}, {record});
    ASSERT_TRUE(batch.ok());
    auto info = (*log)->AppendAsLeader(*batch, /*leader_epoch=*/0);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
  }
  ASSERT_TRUE((*log)->Close().ok());
}

OffsetMap ReadCheckpoint(const std::string& log_dir, const char* name) {
  auto file = OffsetCheckpointFile::Open(JoinPath(log_dir, name));
  EXPECT_TRUE(file.ok());
  auto map = file->Read();
  EXPECT_TRUE(map.ok()) << map.status().ToString();
  return map.ok() ? *map : OffsetMap{};
}

// Delegates to the POSIX file system, failing every open and listing under
// `prefix` with kIoError, and recording the order of writes.
class FaultyFileSystem : public FileSystem {
 public:
  explicit FaultyFileSystem(std::string prefix = "") : prefix_(std::move(prefix)) {}

  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    DARUMA_RETURN_IF_ERROR(Check(path));
    if (mode != OpenMode::kRead) Record("open " + BaseName(path));
    return base_->Open(path, mode);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    DARUMA_RETURN_IF_ERROR(Check(from));
    Record("rename " + BaseName(to));
    return base_->Rename(from, to);
  }
  Status Remove(const std::string& path) override {
    DARUMA_RETURN_IF_ERROR(Check(path));
    if (fail_removes_of_deleted_ && path.ends_with(".deleted")) {
      return Status::IoError("injected I/O error removing " + path);
    }
    Record("remove " + BaseName(path));
    return base_->Remove(path);
  }
  Status RemoveAll(const std::string& path) override { return base_->RemoveAll(path); }
  Status CreateDir(const std::string& path) override { return base_->CreateDir(path); }
  Status SyncDir(const std::string& path) override { return base_->SyncDir(path); }
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    DARUMA_RETURN_IF_ERROR(Check(path));
    return base_->ListDir(path);
  }
  bool Exists(const std::string& path) override { return base_->Exists(path); }
  Result<uint64_t> FileSize(const std::string& path) override {
    DARUMA_RETURN_IF_ERROR(Check(path));
    return base_->FileSize(path);
  }
  Result<int64_t> ModifiedTimeMs(const std::string& path) override {
    return base_->ModifiedTimeMs(path);
  }
  Status SetModifiedTimeMs(const std::string& path, int64_t ms) override {
    return base_->SetModifiedTimeMs(path, ms);
  }

  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  // Removing a `*.deleted` file fails (set before the manager starts).
  void FailRemovesOfDeletedFiles() { fail_removes_of_deleted_ = true; }
  // Under `prefix`, fail as POSIX does for a file whose mode refuses us.
  void DenyAccessInstead() { access_denied_ = true; }

 private:
  Status Check(const std::string& path) const {
    if (prefix_.empty() || !path.starts_with(prefix_)) return Status::Ok();
    if (access_denied_) {
      return Status::IoError("open " + path + ": Permission denied")
          .WithDetail(kAccessDeniedDetail);
    }
    return Status::IoError("injected I/O error on " + path);
  }
  void Record(std::string event) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
  }

  std::string prefix_;
  bool fail_removes_of_deleted_ = false;
  bool access_denied_ = false;
  FileSystem* base_ = FileSystem::Default();
  std::mutex mu_;
  std::vector<std::string> events_;
};

TEST(LogManagerTest, LoadsEveryPartitionOfEveryDir) {
  TempDir a, b;
  MakePartition(a.path(), kOrders, 5);
  MakePartition(a.path(), {"orders", 1}, 2);
  MakePartition(b.path(), kPayments, 7);
  LogManager manager;
  ASSERT_TRUE(manager.Startup({a.path(), b.path()}, LogConfig{}, 2).ok());

  EXPECT_FALSE(manager.HasFailures());
  ASSERT_EQ(manager.AllLogs().size(), 3u);
  ASSERT_NE(manager.GetLog(kOrders), nullptr);
  EXPECT_EQ(manager.GetLog(kOrders)->log_end_offset(), 5);
  EXPECT_EQ(manager.GetLog({"orders", 1})->log_end_offset(), 2);
  EXPECT_EQ(manager.GetLog(kPayments)->log_end_offset(), 7);
  const RecoveryReport& report = manager.report();
  ASSERT_EQ(report.log_dirs.size(), 2u);
  EXPECT_EQ(report.log_dirs[0].path, a.path());
  EXPECT_FALSE(report.log_dirs[0].clean_shutdown);
  EXPECT_FALSE(report.log_dirs[1].offline);
  ASSERT_EQ(report.partitions.size(), 3u);
  EXPECT_EQ(report.partitions[0].dir, a.Join("orders-0"));
  EXPECT_EQ(report.partitions[2].topic, "payments");
  EXPECT_EQ(report.partitions[2].partition, 3);
  EXPECT_EQ(report.partitions[2].log_end_offset, 7);
  // KIP-831 counters are back to zero once every log is loaded.
  const auto gauges = manager.RecoveryGaugesSnapshot();
  ASSERT_EQ(gauges.size(), 2u);
  EXPECT_EQ(gauges[1].dir, b.path());
  for (const auto& g : gauges) {
    EXPECT_EQ(g.remaining_logs, 0) << g.dir;
    EXPECT_EQ(g.remaining_segments, (std::vector<int64_t>{0, 0})) << g.dir;
  }
  const ProgressSnapshot progress = manager.Progress();
  EXPECT_EQ(progress.total_logs, 3);
  EXPECT_EQ(progress.remaining_logs, 0);
  EXPECT_GT(progress.total_bytes, 0);  // unclean: every .log is to be scanned
}

TEST(LogManagerTest, CreatesMissingDirAndLocksIt) {
  TempDir root;
  const std::string dir = root.Join("new-log-dir");
  LogManager manager;
  ASSERT_TRUE(manager.Startup({dir}, LogConfig{}, 1).ok());
  EXPECT_TRUE(FileSystem::Default()->Exists(JoinPath(dir, ".lock")));
  EXPECT_TRUE(manager.AllLogs().empty());
  auto second = DirLock::Acquire(dir);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(DirLock::IsHeldElsewhere(second.status()));
  ASSERT_TRUE(manager.Shutdown().ok());
  EXPECT_TRUE(DirLock::Acquire(dir).ok());  // released by Shutdown
}

TEST(LogManagerTest, LockHeldByAnotherManagerIsFatalAndNamesTheDir) {
  TempDir a, b;
  MakePartition(b.path(), kOrders, 3);
  WriteStringToFile(b.Join(kCleanShutdownFileName), "");
  LogManager first;
  ASSERT_TRUE(first.Startup({a.path()}, LogConfig{}, 1).ok());

  LogManager second;
  Status st = second.Startup({b.path(), a.path()}, LogConfig{}, 1);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("log dir " + a.path() + " is locked by another process"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(second.AllLogs().empty());
  ASSERT_EQ(second.report().log_dirs.size(), 2u);
  EXPECT_TRUE(second.report().log_dirs[1].offline);
  // Nothing was loaded, so nothing was touched: b's marker is still there.
  EXPECT_TRUE(FileSystem::Default()->Exists(b.Join(kCleanShutdownFileName)));
  // ... and b's lock was released.
  EXPECT_TRUE(DirLock::Acquire(b.path()).ok());
}

TEST(LogManagerTest, BadPartitionDirNameIsFatalBeforeAnythingChanges) {
  TempDir a;
  MakePartition(a.path(), kOrders, 2);
  ASSERT_TRUE(FileSystem::Default()->CreateDir(a.Join("not_a_partition")).ok());
  WriteStringToFile(a.Join(kCleanShutdownFileName), "{\"version\":0,\"brokerEpoch\":4}");
  LogManager manager;
  Status st = manager.Startup({a.path()}, LogConfig{}, 1);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("not_a_partition"), std::string::npos) << st.message();
  EXPECT_TRUE(FileSystem::Default()->Exists(a.Join(kCleanShutdownFileName)));
}

// Kafka's MetaPropertiesEnsemble.verify refuses log dirs that share a
// directory.id (one copied whole) or one that names a reserved id; so does
// start-up, naming the files, before anything is touched.
TEST(LogManagerTest, SharedOrReservedDirectoryIdIsFatalAndNamesTheFiles) {
  TempDir a, b;
  MakePartition(a.path(), kOrders, 2);
  const std::string marker = a.Join(kCleanShutdownFileName);
  WriteStringToFile(marker, "{\"version\":0,\"brokerEpoch\":4}");
  const std::string ids = "version=1\nnode.id=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n";
  const std::string meta_a = a.Join(kMetaPropertiesFileName);
  const std::string meta_b = b.Join(kMetaPropertiesFileName);
  WriteStringToFile(meta_a, ids + "directory.id=WvVzx-Xl3swcqvxXsPbjww\n");
  WriteStringToFile(meta_b, ids + "directory.id=WvVzx-Xl3swcqvxXsPbjww\n");
  {
    LogManager manager;
    Status st = manager.Startup({a.path(), b.path()}, LogConfig{}, 1);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find(meta_b +
                                ": directory.id WvVzx-Xl3swcqvxXsPbjww is also the directory.id "
                                "of " +
                                meta_a),
              std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("Kafka refuses to start"), std::string::npos) << st.message();
    EXPECT_TRUE(manager.AllLogs().empty());
  }
  EXPECT_TRUE(FileSystem::Default()->Exists(marker));  // nothing was loaded

  WriteStringToFile(meta_b, ids + "directory.id=AAAAAAAAAAAAAAAAAAAAAA\n");
  {
    LogManager manager;
    Status st = manager.Startup({a.path(), b.path()}, LogConfig{}, 1);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(
        st.message().find(meta_b + ": directory.id AAAAAAAAAAAAAAAAAAAAAA is an id Kafka reserves "
                                   "(MIGRATING)"),
        std::string::npos)
        << st.message();
  }
  EXPECT_TRUE(FileSystem::Default()->Exists(marker));

  WriteStringToFile(meta_b, ids);  // Kafka writes a new id into a file without one
  LogManager manager;
  ASSERT_TRUE(manager.Startup({a.path(), b.path()}, LogConfig{}, 1).ok());
  EXPECT_EQ(manager.AllLogs().size(), 1u);
}

TEST(LogManagerTest, IgnoresKafkaNonPartitionDirs) {
  TempDir a;
  MakePartition(a.path(), kOrders, 2);
  ASSERT_TRUE(FileSystem::Default()->CreateDir(a.Join("remote-log-index-cache")).ok());
  ASSERT_TRUE(FileSystem::Default()->CreateDir(a.Join("__cluster_metadata-0")).ok());
  LogManager manager;
  ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());
  EXPECT_EQ(manager.AllLogs().size(), 1u);
}

TEST(LogManagerTest, DuplicateLogDirIsFatal) {
  TempDir a;
  LogManager manager;
  Status st = manager.Startup({a.path(), a.path() + "/"}, LogConfig{}, 1);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("listed twice"), std::string::npos) << st.message();
}

TEST(LogManagerTest, CleanMarkerIsReadThenDeletedBeforeLoading) {
  TempDir a;
  MakePartition(a.path(), kOrders, 4);
  WriteStringToFile(a.Join(kCleanShutdownFileName), "{\"version\":0,\"brokerEpoch\":42}");
  // A partition whose reads fail: loading it fails, the marker must be gone anyway.
  MakePartition(a.path(), kPayments, 1);
  FaultyFileSystem fs(a.Join("payments-3"));
  LogManager manager({.fs = &fs});
  ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());

  EXPECT_FALSE(FileSystem::Default()->Exists(a.Join(kCleanShutdownFileName)));
  ASSERT_EQ(manager.report().log_dirs.size(), 1u);
  EXPECT_TRUE(manager.report().log_dirs[0].clean_shutdown);
  EXPECT_EQ(manager.report().log_dirs[0].broker_epoch, 42);
  const auto events = fs.events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front(), "remove .kafka_cleanshutdown");  // before any partition file
}

// The load only rebuilt indexes and a snapshot, left unsynced: the recovery
// point stays where Kafka's loader leaves it, min(checkpoint, LEO), until
// the first flush has synced them.
TEST(LogManagerTest, CheckpointsAfterRecoveryVouchOnlyForWhatIsDurable) {
  TempDir a;
  MakePartition(a.path(), kOrders, 6);
  // A stale recovery point and a high watermark beyond the log end.
  ASSERT_TRUE(OffsetCheckpointFile::Open(a.Join(kReplicationOffsetCheckpointFile))
                  ->Write({{kOrders, 1000}})
                  .ok());
  LogManager manager;
  ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());

  EXPECT_EQ(manager.GetLog(kOrders)->high_watermark(), 6);  // clamped to [0, LEO]
  EXPECT_EQ(manager.GetLog(kOrders)->recovery_point(), 0);
  EXPECT_EQ(ReadCheckpoint(a.path(), kRecoveryPointCheckpointFile), (OffsetMap{{kOrders, 0}}));
  EXPECT_EQ(ReadCheckpoint(a.path(), kReplicationOffsetCheckpointFile), (OffsetMap{{kOrders, 6}}));
  // Log start equals the first segment base: Kafka lists no entry for it.
  EXPECT_EQ(ReadCheckpoint(a.path(), kLogStartOffsetCheckpointFile), OffsetMap{});
  EXPECT_EQ(manager.report().partitions[0].high_watermark, 6);
  EXPECT_EQ(manager.report().partitions[0].recovery_point, 0);
  // The old value is reported, not dropped silently (issue 22).
  ASSERT_EQ(manager.report().partitions[0].warnings.size(), 1u);
  EXPECT_EQ(manager.report().partitions[0].warnings[0],
            "orders-0: high watermark 1000 in replication-offset-checkpoint is above the log "
            "end offset 6: lowered to 6");
  // Until Shutdown the dir is not clean.
  EXPECT_FALSE(FileSystem::Default()->Exists(a.Join(kCleanShutdownFileName)));
  // The first flush syncs what the load rebuilt and moves the point on.
  ASSERT_TRUE(manager.GetLog(kOrders)->FlushAll().ok());
  EXPECT_EQ(manager.GetLog(kOrders)->recovery_point(), 6);
}

TEST(LogManagerTest, HighWatermarkWithinTheLogIsKept) {
  TempDir a;
  MakePartition(a.path(), kOrders, 6);
  ASSERT_TRUE(OffsetCheckpointFile::Open(a.Join(kReplicationOffsetCheckpointFile))
                  ->Write({{kOrders, 4}})
                  .ok());
  LogManager manager;
  ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());
  EXPECT_EQ(manager.GetLog(kOrders)->high_watermark(), 4);
  EXPECT_EQ(ReadCheckpoint(a.path(), kReplicationOffsetCheckpointFile), (OffsetMap{{kOrders, 4}}));
  EXPECT_TRUE(manager.report().partitions[0].warnings.empty());
}

TEST(LogManagerTest, CleanShutdownWritesCheckpointsThenTheMarkerLast) {
  TempDir a;
  MakePartition(a.path(), kOrders, 3);
  FaultyFileSystem fs;
  LogManager manager({.fs = &fs});
  ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());
  const size_t startup_events = fs.events().size();
  ASSERT_TRUE(manager.Shutdown().ok());

  EXPECT_EQ(ReadFileToString(a.Join(kCleanShutdownFileName)), "{\"version\":0,\"brokerEpoch\":-1}");
  const auto all = fs.events();
  const std::vector<std::string> events(all.begin() + long(startup_events), all.end());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "open .kafka_cleanshutdown");
  auto pos = [&events](const std::string& e) {
    return std::find(events.begin(), events.end(), e) - events.begin();
  };
  EXPECT_LT(pos("rename recovery-point-offset-checkpoint"), pos("open .kafka_cleanshutdown"));
  EXPECT_LT(pos("rename log-start-offset-checkpoint"), pos("open .kafka_cleanshutdown"));
  EXPECT_LT(pos("rename replication-offset-checkpoint"), pos("open .kafka_cleanshutdown"));
  EXPECT_TRUE(FileSystem::Default()->Exists(a.Join("orders-0/00000000000000000003.snapshot")));
  EXPECT_EQ(ReadCheckpoint(a.path(), kRecoveryPointCheckpointFile), (OffsetMap{{kOrders, 3}}));
}

// A partition created and never written to keeps its (empty) index files
// through a clean shutdown, as Kafka's does: neither Kafka's loader nor
// `daruma check` may take it for a damaged one afterwards.
TEST(LogManagerTest, APartitionNeverWrittenToIsWholeAfterACleanShutdown) {
  TempDir a;
  {
    LogManager manager;
    ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());
    ASSERT_TRUE(manager.GetOrCreateLog(kOrders, Uuid::Random(), LogConfig{}).ok());
    ASSERT_TRUE(manager.Shutdown().ok());
  }
  for (const char* name : {"00000000000000000000.index", "00000000000000000000.timeindex"}) {
    const std::string path = a.Join(std::string("orders-0/") + name);
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    EXPECT_EQ(std::filesystem::file_size(path), 0u) << path;
  }
  Result<LogDirCheck> checked = CheckLogDir(a.path(), CheckOptions{});
  ASSERT_TRUE(checked.ok()) << checked.status().ToString();
  EXPECT_FALSE(checked->HasProblems());
  EXPECT_TRUE(checked->clean_shutdown);
}

// A deleted partition's dir is loaded without a scan, so its bytes are not
// counted as bytes to scan: once the start is done, all of them are scanned.
TEST(LogManagerTest, ADeletedPartitionsBytesAreNotBytesToScan) {
  TempDir a;
  MakePartition(a.path(), kOrders, 3);
  MakePartition(a.path(), {"gone", 0}, 5);
  std::filesystem::rename(a.Join("gone-0"),
                          a.Join("gone-0.0123456789abcdef0123456789abcdef-delete"));
  LogManager manager;
  ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());
  EXPECT_FALSE(manager.report().log_dirs[0].clean_shutdown);
  EXPECT_GT(manager.Progress().scanned_bytes, 0);
  EXPECT_EQ(manager.Progress().total_bytes, manager.Progress().scanned_bytes);
}

// A `-delete` or `-stray` copy of a partition shares its name, not its
// checkpoint entries, which are the live partition's (the topic was created
// again): neither copy gets the high watermark (Kafka's ReplicaManager
// gives them none), the log start offset or the recovery point, and
// neither reports damage for them. Applied, the live log start offset 5
// would lie beyond the stray copy's end and empty it, and the high
// watermark 8 would be reported "above the log end offset" of the deleted
// copy, which is not recovered and ends at 0, as in Kafka.
TEST(LogManagerTest, TheLivePartitionsCheckpointEntriesAreNotItsDeletedOrStrayCopys) {
  TempDir a;
  const std::string deleted = a.Join(DeleteDirName(kOrders, "0123456789abcdef0123456789abcdef"));
  const std::string stray = a.Join(StrayDirName(kOrders, "fedcba9876543210fedcba9876543210"));
  MakePartition(a.path(), kOrders, 2);
  std::filesystem::rename(a.Join("orders-0"), deleted);
  MakePartition(a.path(), kOrders, 2);
  std::filesystem::rename(a.Join("orders-0"), stray);
  MakePartition(a.path(), kOrders, 8);
  ASSERT_TRUE(OffsetCheckpointFile::Open(a.Join(kReplicationOffsetCheckpointFile))
                  ->Write({{kOrders, 8}})
                  .ok());
  ASSERT_TRUE(OffsetCheckpointFile::Open(a.Join(kLogStartOffsetCheckpointFile))
                  ->Write({{kOrders, 5}})
                  .ok());
  ASSERT_TRUE(
      OffsetCheckpointFile::Open(a.Join(kRecoveryPointCheckpointFile))->Write({{kOrders, 8}}).ok());
  LogManager manager;
  ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());

  EXPECT_EQ(manager.GetLog(kOrders)->high_watermark(), 8);
  EXPECT_EQ(manager.GetLog(kOrders)->log_start_offset(), 5);
  std::map<std::string, PartitionRecoveryReport> by_dir;
  for (const PartitionRecoveryReport& pr : manager.report().partitions) by_dir[pr.dir] = pr;
  ASSERT_EQ(by_dir.size(), 3u);
  const PartitionRecoveryReport& d = by_dir.at(deleted);
  EXPECT_TRUE(d.damage.empty()) << d.damage[0].text;
  EXPECT_TRUE(d.warnings.empty());
  EXPECT_EQ(d.high_watermark, 0);
  EXPECT_EQ(d.log_start_offset, 0);
  EXPECT_EQ(d.log_end_offset, 0);  // a deleted copy is not recovered (Kafka's LogLoader)
  const PartitionRecoveryReport& s = by_dir.at(stray);
  EXPECT_TRUE(s.damage.empty()) << s.damage[0].text;
  EXPECT_EQ(s.log_start_offset, 0);
  EXPECT_EQ(s.log_end_offset, 2);
  EXPECT_EQ(s.high_watermark, 0);
  EXPECT_EQ(s.recovered_segments, 1);  // from its first segment
  EXPECT_TRUE(s.quarantined.empty());
  EXPECT_TRUE(by_dir.at(a.Join("orders-0")).damage.empty());
  // The checkpoints still hold the live partition's entries, and only them.
  EXPECT_EQ(ReadCheckpoint(a.path(), kReplicationOffsetCheckpointFile), (OffsetMap{{kOrders, 8}}));
  EXPECT_EQ(ReadCheckpoint(a.path(), kLogStartOffsetCheckpointFile), (OffsetMap{{kOrders, 5}}));
}

TEST(LogManagerTest, SecondStartAfterCleanShutdownScansNothing) {
  TempDir a;
  MakePartition(a.path(), kOrders, 3);
  {
    LogManager manager;
    ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());
    ASSERT_TRUE(manager.Shutdown().ok());
  }
  LogManager manager;
  ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());
  EXPECT_TRUE(manager.report().log_dirs[0].clean_shutdown);
  EXPECT_EQ(manager.report().log_dirs[0].broker_epoch, -1);
  EXPECT_EQ(manager.report().partitions[0].scanned_bytes, 0);
  EXPECT_EQ(manager.report().partitions[0].truncated_bytes, 0);
  EXPECT_EQ(manager.Progress().total_bytes, 0);
  EXPECT_EQ(manager.GetLog(kOrders)->log_end_offset(), 3);
}

// A dir shut down cleanly by a manager, then given broker epoch 7 as a Kafka
// broker's shutdown would.
void MakeCleanDir(const std::string& log_dir) {
  MakePartition(log_dir, kOrders, 3);
  LogManager manager;
  ASSERT_TRUE(manager.Startup({log_dir}, LogConfig{}, 1).ok());
  ASSERT_TRUE(manager.Shutdown().ok());
  ASSERT_TRUE(CleanShutdownFile(log_dir).Write(7).ok());
}

TEST(LogManagerTest, FullRescanRecoversEverySegmentOfACleanDir) {
  TempDir a;
  MakeCleanDir(a.path());
  const int64_t log_bytes =
      int64_t(*FileSystem::Default()->FileSize(a.Join("orders-0/00000000000000000000.log")));
  LogManager manager({.keep_clean_broker_epoch = true, .full_rescan = true});
  ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());
  EXPECT_TRUE(manager.report().log_dirs[0].clean_shutdown);
  EXPECT_EQ(manager.Progress().total_bytes, log_bytes);  // the progress line's estimate
  EXPECT_EQ(manager.report().partitions[0].recovered_segments, 1);
  EXPECT_GE(manager.report().partitions[0].scanned_bytes, log_bytes);
  ASSERT_TRUE(manager.Shutdown().ok());
  // Nothing found and the indexes came out the same: the epoch is kept.
  EXPECT_EQ(manager.report().log_dirs[0].marker_out, 7);
  EXPECT_EQ(ReadFileToString(a.Join(kCleanShutdownFileName)), "{\"version\":0,\"brokerEpoch\":7}");
}

TEST(LogManagerTest, WithoutKeepingTheEpochTheBrokersOwnIsWritten) {
  TempDir a;
  MakeCleanDir(a.path());
  LogManager manager({.broker_epoch = 12});
  ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());
  ASSERT_TRUE(manager.Shutdown().ok());
  EXPECT_EQ(manager.report().log_dirs[0].marker_out, 12);
  EXPECT_EQ(manager.report().log_dirs[0].marker_why, "the broker's own epoch");
  EXPECT_EQ(ReadFileToString(a.Join(kCleanShutdownFileName)), "{\"version\":0,\"brokerEpoch\":12}");
}

TEST(LogManagerTest, IoErrorTakesOnlyThatDirOffline) {
  TempDir a, b;
  MakePartition(a.path(), kOrders, 3);
  MakePartition(b.path(), kPayments, 5);
  WriteStringToFile(a.Join(kCleanShutdownFileName), "");
  FaultyFileSystem fs(a.Join("orders-0"));
  LogManager manager({.fs = &fs});
  ASSERT_TRUE(manager.Startup({a.path(), b.path()}, LogConfig{}, 1).ok());

  EXPECT_TRUE(manager.HasFailures());
  EXPECT_TRUE(manager.failure_channel().IsOffline(a.path()));
  EXPECT_EQ(manager.GetLog(kOrders), nullptr);
  ASSERT_NE(manager.GetLog(kPayments), nullptr);
  EXPECT_EQ(manager.GetLog(kPayments)->log_end_offset(), 5);
  const RecoveryReport& report = manager.report();
  EXPECT_TRUE(report.log_dirs[0].offline);
  EXPECT_NE(report.log_dirs[0].error.find("injected I/O error on " + a.Join("orders-0")),
            std::string::npos)
      << report.log_dirs[0].error;
  EXPECT_FALSE(report.log_dirs[1].offline);
  const auto json = report.ToJson();
  EXPECT_EQ(json["logDirs"][0]["offline"], true);
  EXPECT_TRUE(json["logDirs"][0]["error"].is_string());
  EXPECT_TRUE(json["logDirs"][1]["error"].is_null());

  ASSERT_TRUE(manager.Shutdown().ok());
  EXPECT_FALSE(FileSystem::Default()->Exists(a.Join(kCleanShutdownFileName)));
  EXPECT_TRUE(FileSystem::Default()->Exists(b.Join(kCleanShutdownFileName)));
}

// A file the broker's user may not open (chmod 000, another owner) is that
// file's fault, not the disk's: its partition fails to load and is reported,
// and every other partition of the dir is served. The dir had crashed, so it
// stays unclean for the next start to scan the refused partition.
// Denied: the partition dir, or only its segment (whose recovery must not
// cut it as it would a segment that cannot be read).
void CheckAccessDeniedFailsOnlyThatPartition(const std::string& denied) {
  TempDir a;
  MakePartition(a.path(), kOrders, 3);
  MakePartition(a.path(), kPayments, 5);
  const std::string segment = a.Join("orders-0/00000000000000000000.log");
  const std::string bytes = ReadFileToString(segment);
  FaultyFileSystem fs(a.Join(denied));
  fs.DenyAccessInstead();
  LogManager manager({.fs = &fs});
  ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());

  EXPECT_TRUE(manager.HasFailures());
  EXPECT_FALSE(manager.failure_channel().IsOffline(a.path()));
  EXPECT_FALSE(manager.report().log_dirs[0].offline);
  EXPECT_EQ(manager.GetLog(kOrders), nullptr);
  ASSERT_NE(manager.GetLog(kPayments), nullptr);
  EXPECT_EQ(manager.GetLog(kPayments)->log_end_offset(), 5);
  const PartitionRecoveryReport* orders = nullptr;
  for (const auto& p : manager.report().partitions) {
    if (p.topic == "orders") orders = &p;
  }
  ASSERT_NE(orders, nullptr);
  ASSERT_FALSE(orders->errors.empty());
  EXPECT_NE(orders->errors[0].find(a.Join("orders-0")), std::string::npos) << orders->errors[0];
  EXPECT_NE(orders->errors[0].find("Permission denied"), std::string::npos) << orders->errors[0];
  // No empty log is created over the refused one.
  EXPECT_FALSE(manager.GetOrCreateLog(kOrders, Uuid{}, LogConfig{}).ok());

  ASSERT_TRUE(manager.Shutdown().ok());
  EXPECT_FALSE(FileSystem::Default()->Exists(a.Join(kCleanShutdownFileName)));
  EXPECT_EQ(ReadCheckpoint(a.path(), kRecoveryPointCheckpointFile)[kPayments], 5);
  EXPECT_EQ(ReadFileToString(segment), bytes);
  EXPECT_FALSE(FileSystem::Default()->Exists(a.Join("orders-0/daruma-quarantine")));
}

TEST(LogManagerTest, AccessDeniedFailsOnlyThatPartition) {
  CheckAccessDeniedFailsOnlyThatPartition("orders-0");
  CheckAccessDeniedFailsOnlyThatPartition("orders-0/00000000000000000000.log");
}

// A partition that cannot load is reported, and its dir left as found
// (issue 25). The dir's clean-shutdown marker comes back at shutdown when the
// dir had one: the refused partition is exactly as clean as before, every
// other one was closed cleanly. A dir that had crashed stays unclean.
void CheckPartitionThatCannotLoad(bool had_clean_shutdown) {
  TempDir a;
  MakePartition(a.path(), kOrders, 3);
  // Small segments: the damage below needs a last segment that is not the
  // first, holding two batches.
  LogConfig small;
  small.segment_bytes = 160;
  MakePartition(a.path(), kPayments, 6, small);
  testing::MakeSegmentZeroUnloadable(a.Join("payments-3"));
  if (had_clean_shutdown) WriteStringToFile(a.Join(kCleanShutdownFileName), "");
  ASSERT_TRUE(OffsetCheckpointFile::Open(a.Join(kRecoveryPointCheckpointFile))
                  ->Write({{kOrders, 3}, {kPayments, 2}})
                  .ok());
  std::map<std::string, std::string> before;
  for (const auto& e : std::filesystem::recursive_directory_iterator(a.Join("payments-3"))) {
    if (e.is_regular_file()) before[e.path()] = ReadFileToString(e.path());
  }
  LogManager manager;
  ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());

  EXPECT_TRUE(manager.HasFailures());
  EXPECT_FALSE(manager.report().log_dirs[0].offline);  // not an I/O error
  EXPECT_EQ(manager.GetLog(kPayments), nullptr);
  ASSERT_NE(manager.GetLog(kOrders), nullptr);
  const PartitionRecoveryReport& failed = manager.report().partitions[1];
  EXPECT_EQ(failed.topic, "payments");
  ASSERT_EQ(failed.errors.size(), 1u);
  EXPECT_NE(failed.errors[0].find("to split from"), std::string::npos) << failed.errors[0];
  EXPECT_TRUE(failed.left_unchanged);
  ASSERT_TRUE(manager.Shutdown().ok());
  // The failed partition keeps its old entry and its files.
  EXPECT_EQ(ReadCheckpoint(a.path(), kRecoveryPointCheckpointFile),
            (OffsetMap{{kOrders, 3}, {kPayments, 2}}));
  std::map<std::string, std::string> after;
  for (const auto& e : std::filesystem::recursive_directory_iterator(a.Join("payments-3"))) {
    if (e.is_regular_file()) after[e.path()] = ReadFileToString(e.path());
  }
  EXPECT_EQ(after, before);
  EXPECT_EQ(FileSystem::Default()->Exists(a.Join(kCleanShutdownFileName)), had_clean_shutdown);
}

TEST(LogManagerTest, PartitionThatCannotLoadIsLeftAsFoundAndACleanDirStaysClean) {
  CheckPartitionThatCannotLoad(true);
}

TEST(LogManagerTest, PartitionThatCannotLoadKeepsACrashedDirUnclean) {
  CheckPartitionThatCannotLoad(false);
}

TEST(LogManagerTest, UnreadableCheckpointIsAWarningAndReadsAsEmpty) {
  TempDir a;
  MakePartition(a.path(), kOrders, 2);
  WriteStringToFile(a.Join(kRecoveryPointCheckpointFile), "7\n1\norders 0 2\n");
  LogManager manager;
  ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());
  ASSERT_EQ(manager.dir_warnings().count(a.path()), 1u);
  const std::string warning = manager.dir_warnings().at(a.path()).at(0);
  EXPECT_NE(warning.find(kRecoveryPointCheckpointFile), std::string::npos) << warning;
  EXPECT_NE(warning.find("read as empty"), std::string::npos) << warning;
  EXPECT_EQ(manager.ReportJson()["logDirs"][0]["warnings"][0], warning);
  EXPECT_EQ(manager.GetLog(kOrders)->log_end_offset(), 2);
  // Read as empty, i.e. 0: the unclean start rebuilt from there, unsynced.
  EXPECT_EQ(ReadCheckpoint(a.path(), kRecoveryPointCheckpointFile), (OffsetMap{{kOrders, 0}}));
}

TEST(LogManagerTest, DestroyWithoutShutdownLeavesTheDirUnclean) {
  TempDir a;
  MakePartition(a.path(), kOrders, 2);
  {
    LogManager manager;
    ASSERT_TRUE(manager.Startup({a.path()}, LogConfig{}, 1).ok());
  }
  EXPECT_FALSE(FileSystem::Default()->Exists(a.Join(kCleanShutdownFileName)));
  EXPECT_TRUE(DirLock::Acquire(a.path()).ok());
}

// More partitions than threads: each partition is recovered on one thread,
// and a loading thread with no partition left to claim may scan parts of
// those still recovering (ScanHelpPool; whether it gets one is timing).
// Every last segment is split here (the knob), so each partition's parts
// are joined whoever scanned them, and the dir loads as with one thread.
TEST(LogManagerTest, ADirWithMorePartitionsThanThreadsSplitsAndLoadsAsWithOneThread) {
  struct SplitEverySegment {
    SplitEverySegment() { SplitSegmentScan::set_min_split_bytes_for_testing(1); }
    ~SplitEverySegment() {
      SplitSegmentScan::set_min_split_bytes_for_testing(SplitSegmentScan::kMinSplitBytes);
    }
  } split;
  TempDir one, two;
  for (int p = 0; p < 5; ++p) MakePartition(one.path(), {"orders", p}, p == 4 ? 3000 : 40);
  testing::CopyTree(one.path(), two.path());
  const int64_t joins = SplitSegmentScan::joins();
  std::map<TopicPartition, int64_t> ends[2];
  int i = 0;
  for (const std::string& dir : {one.path(), two.path()}) {
    LogManager manager;
    ASSERT_TRUE(manager.Startup({dir}, LogConfig{}, i == 0 ? 1 : 2).ok());
    EXPECT_FALSE(manager.report().log_dirs[0].clean_shutdown);
    for (int p = 0; p < 5; ++p) {
      Log* log = manager.GetLog({"orders", p});
      ASSERT_NE(log, nullptr);
      ends[i][{"orders", p}] = log->log_end_offset();
    }
    ASSERT_TRUE(manager.Shutdown().ok());
    ++i;
  }
  EXPECT_EQ(ends[0], ends[1]);
  EXPECT_EQ(ends[1].at({"orders", 4}), 3000);
  EXPECT_GE(SplitSegmentScan::joins(), joins + 5) << "each partition of the 2-thread load";
  for (const char* name : {"00000000000000000000.index", "00000000000000000000.timeindex",
                           "00000000000000000000.log"}) {
    EXPECT_EQ(ReadFileToString(one.Join(std::string("orders-4/") + name)),
              ReadFileToString(two.Join(std::string("orders-4/") + name)))
        << name;
  }
}

// A clean shutdown deletes the files of removed segments still waiting out
// file.delete.delay.ms; one it cannot delete stays for the next start (a
// leftover, as after a crash) and does not take the dir offline: the dir
// still shuts down cleanly.
TEST(LogManagerTest, AFileThatCannotBeDeletedAtShutdownDoesNotCostTheCleanShutdown) {
  TempDir a;
  FaultyFileSystem fs;
  fs.FailRemovesOfDeletedFiles();
  ManualClock clock(1700000000000);
  LogManagerOptions o;
  o.fs = &fs;
  o.clock = &clock;
  o.jobs.enabled = true;
  o.jobs.mode = Scheduler::Mode::kManual;
  o.jobs.initial_delay_ms = 1000;
  LogConfig config;
  config.segment_bytes = 100;
  config.retention_ms = 3600000;
  std::string dir;
  {
    LogManager manager(o);
    ASSERT_TRUE(manager.Startup({a.path()}, config, 1).ok());
    auto log = manager.GetOrCreateLog(kOrders, Uuid::Random(), config);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    dir = (*log)->dir();
    for (int64_t ts : {int64_t{1700000000000} - 2 * 3600000, int64_t{1700000000000}}) {
      RecordInput record;
      record.timestamp = ts;
      record.value = std::string(80, 'v');
      auto batch = BuildRecordBatch({}, {record});
      ASSERT_TRUE(batch.ok());
      ASSERT_TRUE((*log)->AppendAsLeader(*batch, 0).ok());
    }
    (*log)->UpdateHighWatermark((*log)->log_end_offset());
    clock.Set(1700000000000 + 1000);
    manager.RunDueJobsForTest();  // retention: segment 0 becomes *.deleted
    ASSERT_TRUE(std::filesystem::exists(JoinPath(dir, "00000000000000000000.log.deleted")));
    ASSERT_TRUE(manager.Shutdown().ok());
    EXPECT_TRUE(manager.report().log_dirs[0].marker_out.has_value())
        << manager.report().log_dirs[0].marker_why;
    ASSERT_FALSE(manager.JobErrors().empty());
    EXPECT_NE(manager.JobErrors().front().find(".deleted"), std::string::npos);
  }
  EXPECT_TRUE(std::filesystem::exists(JoinPath(dir, "00000000000000000000.log.deleted")));
  EXPECT_TRUE(std::filesystem::exists(a.Join(".kafka_cleanshutdown")));
}

// Refuses to create files under `prefix` once armed, with an error that is
// not an I/O error (what a broken invariant gives).
class RefusingCreatesFileSystem : public ForwardingFileSystem {
 public:
  explicit RefusingCreatesFileSystem(std::string prefix) : prefix_(std::move(prefix)) {}
  void Arm() { armed_ = true; }
  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    if (armed_ && mode != OpenMode::kRead && mode != OpenMode::kReadWrite &&
        path.starts_with(prefix_)) {
      return Status::InvalidArgument("refused creating " + path);
    }
    return ForwardingFileSystem::Open(path, mode);
  }

 private:
  std::string prefix_;
  std::atomic<bool> armed_{false};
};

// A log whose writes stopped on an error that is not the disk's stops alone:
// its dir stays online, and at shutdown the others are flushed and
// checkpointed while the dir gets no marker (the next start recovers the
// stopped one). Shutdown does not fail, so `serve` counts a clean stop.
TEST(LogManagerTest, ALogStoppedByANonIoErrorLeavesTheDirOnlineAndUnmarked) {
  TempDir a;
  RefusingCreatesFileSystem fs(a.Join("orders-0/"));
  LogManager manager({.fs = &fs});
  LogConfig config;
  config.segment_bytes = 100;
  ASSERT_TRUE(manager.Startup({a.path()}, config, 1).ok());
  auto orders = manager.GetOrCreateLog(kOrders, Uuid::Random(), config);
  auto payments = manager.GetOrCreateLog(kPayments, Uuid::Random(), config);
  ASSERT_TRUE(orders.ok() && payments.ok());
  RecordInput record;
  record.value = std::string(80, 'v');
  auto batch = BuildRecordBatch({}, {record});
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE((*orders)->AppendAsLeader(*batch, 0).ok());
  ASSERT_TRUE((*payments)->AppendAsLeader(*batch, 0).ok());
  fs.Arm();
  // The second batch rolls a segment, whose files cannot be created.
  EXPECT_FALSE((*orders)->AppendAsLeader(*batch, 0).ok());
  EXPECT_FALSE((*orders)->write_failure().ok());
  EXPECT_FALSE(manager.failure_channel().IsOffline(a.path()));
  ASSERT_TRUE((*payments)->AppendAsLeader(*batch, 0).ok());
  ASSERT_TRUE(manager.Shutdown().ok());
  EXPECT_FALSE(manager.report().log_dirs[0].marker_out.has_value());
  EXPECT_NE(manager.report().log_dirs[0].marker_why.find("1 partition(s) whose writes had stopped"),
            std::string::npos)
      << manager.report().log_dirs[0].marker_why;
  EXPECT_FALSE(std::filesystem::exists(a.Join(kCleanShutdownFileName)));
  const std::string points = ReadFileToString(a.Join(kRecoveryPointCheckpointFile));
  EXPECT_NE(points.find("payments 3 2"), std::string::npos) << points;
}

}  // namespace
}  // namespace daruma
