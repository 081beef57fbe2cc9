// Clean start of many partitions (issues #3, #4): the LogManager runs over a
// bounded descriptor cache (daruma.max.open.files), a clean start reads no
// offset/time index it does not use, and an index below the recovery point is
// checked when first loaded and rebuilt read-only from the .log if corrupt.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/forwarding_file_system.h"
#include "common/no_sync_file_system.h"
#include "log/log_file_names.h"
#include "record/record_batch.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"
#include "recovery/server_config.h"
#include "support/descriptor_limit.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::DescriptorLimit;
using testing::OpenDescriptors;
using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

using testing::kT0;

// Descriptors open on files of partition directories under `log_dir` (the
// dir's `.lock` and the scheduler's eventfd/epoll/timerfd are not counted).
int PartitionFileDescriptors(const std::string& log_dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    if (target.starts_with(log_dir + "/") && !target.ends_with("/.lock")) ++n;
  }
  return n;
}

// Without fsync: generating 1,200 segments with real fsyncs takes minutes on
// a slow disk, and durability is not under test.
NoSyncFileSystem* NoSync() {
  return NoSyncFileSystem::Instance();
}

Bytes OneRecordBatch(int64_t i, size_t value_size = 16) {
  RecordInput record;
  record.timestamp = kT0 + i;
  record.key = "k" + std::to_string(i);
  record.value = std::string(value_size, char('a' + i % 26));
  auto batch = BuildRecordBatch({}, {record});
  EXPECT_TRUE(batch.ok());
  return batch.ok() ? *batch : Bytes{};
}

// Writes `segments` segments of `batches_per_segment` batches to a new
// partition of `log_dir`, then closes it.
void MakeCleanPartition(const std::string& log_dir, const TopicPartition& tp, int segments,
                        int batches_per_segment, const LogConfig& config, size_t value_size = 16) {
  ManualClock clock(kT0);
  auto log = Log::CreateEmpty(NoSync(), JoinPath(log_dir, LogDirName(tp)), tp, config, &clock);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  int64_t offset = 0;
  for (int s = 0; s < segments; ++s) {
    if (s > 0) {
      ASSERT_TRUE((*log)->Roll().ok());
    }
    for (int b = 0; b < batches_per_segment; ++b) {
      auto info = (*log)->AppendAsLeader(OneRecordBatch(offset++, value_size), 0);
      ASSERT_TRUE(info.ok()) << info.status().ToString();
    }
  }
  ASSERT_TRUE((*log)->FlushAll().ok());
  ASSERT_TRUE((*log)->Close().ok());
}

// A LogManager start and clean shutdown: checkpoints and the marker.
void ShutDownCleanly(const std::string& log_dir, const LogConfig& config) {
  LogManagerOptions options;
  options.fs = NoSync();
  LogManager manager(options);
  ASSERT_TRUE(manager.Startup({log_dir}, config, 1).ok());
  ASSERT_FALSE(manager.HasFailures());
  ASSERT_TRUE(manager.Shutdown().ok());
  ASSERT_TRUE(std::filesystem::exists(log_dir + "/.kafka_cleanshutdown"));
}

// Three partitions of `topic` of `segments` segments (two batches each),
// brought to a clean shutdown by one LogManager start.
void MakeCleanDir(const std::string& log_dir, const std::string& topic, int segments,
                  const LogConfig& config) {
  for (int p = 0; p < 3; ++p) {
    MakeCleanPartition(log_dir, {topic, p}, segments, 2, config);
    if (::testing::Test::HasFatalFailure()) return;
  }
  ShutDownCleanly(log_dir, config);
}

// The record batch at `offset` as served by the log (its first batch).
Result<std::string> ReadOneValue(Log* log, int64_t offset) {
  DARUMA_ASSIGN_OR_RETURN(FetchDataInfo info, log->Read(offset, 1, FetchIsolation::kLogEnd, true));
  DARUMA_ASSIGN_OR_RETURN(RecordBatchView batch, RecordBatchView::Parse(info.records));
  if (batch.base_offset() != offset) {
    return Status::Corruption("expected the batch of offset " + std::to_string(offset) +
                              ", found base offset " + std::to_string(batch.base_offset()));
  }
  DARUMA_ASSIGN_OR_RETURN(std::vector<Record> records, batch.DecodeRecords());
  if (records.size() != 1 || !records[0].value) return Status::Corruption("expected one record");
  return *records[0].value;
}

TEST(MaxOpenFilesConfigTest, DefaultIsHalfTheSoftLimitAndTheKeyIsParsed) {
  auto defaults = ServerConfig::FromProperties({});
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->max_open_files, int64_t(DefaultMaxOpenFiles()));
  EXPECT_GE(defaults->max_open_files, 64);
  EXPECT_EQ(LogManagerOptions{}.max_open_files, DefaultMaxOpenFiles());

  auto set = ServerConfig::FromProperties({{"daruma.max.open.files", " 128 "}});
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->max_open_files, 128);
  EXPECT_EQ(set->other.count("daruma.max.open.files"), 0u);

  auto off = ServerConfig::FromProperties({{"daruma.max.open.files", "0"}});
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->max_open_files, 0);

  auto bad = ServerConfig::FromProperties({{"daruma.max.open.files", "-1"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("daruma.max.open.files"), std::string::npos)
      << bad.status().message();
}

// 300 partitions x 4 segments: 1,200 .log files and 2,400 indexes, started
// with a descriptor limit far below that and a cache of 64.
TEST(CleanStartTest, ManyPartitionsStartWithFewDescriptorsAndAllReadBack) {
  constexpr int kPartitions = 300;
  constexpr int kSegments = 4;
  constexpr int kBatches = 2;
  TempDir tmp;
  LogConfig config;
  for (int p = 0; p < kPartitions; ++p) {
    MakeCleanPartition(tmp.path(), {"many", p}, kSegments, kBatches, config);
    if (::testing::Test::HasFatalFailure()) return;
  }
  ShutDownCleanly(tmp.path(), config);
  if (::testing::Test::HasFatalFailure()) return;

  LogManagerOptions options;
  options.fs = NoSync();
  options.max_open_files = 64;
  LogManager manager(options);
  const int before = OpenDescriptors();
  {
    // Without the cache the start needs more than 1,200 descriptors.
    DescriptorLimit limit(rlim_t(before + 100));
    ASSERT_TRUE(manager.Startup({tmp.path()}, config, 2).ok());
    ASSERT_FALSE(manager.HasFailures()) << manager.ReportJson().dump();
    EXPECT_LE(PartitionFileDescriptors(tmp.path()), 64);
    EXPECT_GT(PartitionFileDescriptors(tmp.path()), 0);  // the cache does keep some open
    EXPECT_LE(OpenDescriptors() - before, 64 + 4);       // + .lock, eventfd, epoll, timerfd

    for (int p = 0; p < kPartitions; ++p) {
      Log* log = manager.GetLog({"many", p});
      ASSERT_NE(log, nullptr) << p;
      ASSERT_EQ(log->log_end_offset(), kSegments * kBatches);
      ASSERT_EQ(log->segment_base_offsets().size(), size_t(kSegments));
      for (int64_t offset = 0; offset < kSegments * kBatches; ++offset) {
        auto value = ReadOneValue(log, offset);
        ASSERT_TRUE(value.ok()) << "partition " << p << " offset " << offset << ": "
                                << value.status().ToString();
        ASSERT_EQ(*value, std::string(16, char('a' + offset % 26)));
      }
    }
    EXPECT_LE(PartitionFileDescriptors(tmp.path()), 64);
    ASSERT_TRUE(manager.Shutdown().ok());
  }
  EXPECT_TRUE(std::filesystem::exists(tmp.Join(".kafka_cleanshutdown")));
}

// Counts the directory listings of each path, the existence checks of
// .txnindex files and the size changes of .index and .timeindex files,
// forwarding everything to the no-sync file system.
class ListingCountingFileSystem final : public ForwardingFileSystem {
 public:
  ListingCountingFileSystem() : ForwardingFileSystem(NoSync()) {}
  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    DARUMA_ASSIGN_OR_RETURN(auto file, base()->Open(path, mode));
    if (!HasSuffix(path, kIndexFileSuffix) && !HasSuffix(path, kTimeIndexFileSuffix)) return file;
    return std::unique_ptr<File>(new TruncateCountingFile(&index_truncates_, std::move(file)));
  }
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++listings_[path];
    return base()->ListDir(path);
  }
  bool Exists(const std::string& path) override {
    if (HasSuffix(path, kTxnIndexFileSuffix)) txn_index_checks_++;
    if (path.find("/few-") != std::string::npos) partition_exists_checks_++;
    return base()->Exists(path);
  }
  int listings_of(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    return listings_[path];
  }
  int txn_index_checks() const { return txn_index_checks_.load(); }
  int partition_exists_checks() const { return partition_exists_checks_.load(); }
  int index_truncates() const { return index_truncates_.load(); }

 private:
  class TruncateCountingFile final : public ForwardingFile {
   public:
    TruncateCountingFile(std::atomic<int>* count, std::unique_ptr<File> file)
        : ForwardingFile(std::move(file)), count_(count) {}
    Status Truncate(uint64_t size) override {
      ++*count_;
      return ForwardingFile::Truncate(size);
    }

   private:
    std::atomic<int>* count_;
  };

  std::mutex mu_;
  std::map<std::string, int> listings_;
  std::atomic<int> txn_index_checks_{0};
  std::atomic<int> partition_exists_checks_{0};
  std::atomic<int> index_truncates_{0};
};

// A clean start reads each partition dir once: the check for an interrupted
// load's undo log, the loader's passes and the producer-state manager share
// one listing while nothing changes the dir, so nothing in a partition dir
// is asked whether it exists (segments without a .txnindex included). It grows each
// active segment's indexes back to their full length without extending the
// files, so a start and shutdown that append nothing (`daruma recover` of a
// clean dir) change no index file's size: Kafka's load preallocates them and
// its close trims them again, two size changes per file, each a journal
// update on ext4.
TEST(CleanStartTest, EachPartitionDirIsListedOnceAndNoIndexFileChangesSize) {
  TempDir tmp;
  LogConfig config;
  MakeCleanDir(tmp.path(), "few", 4, config);
  if (::testing::Test::HasFatalFailure()) return;
  const std::string active_index = tmp.Join("few-0/00000000000000000006.index");
  const uint64_t trimmed = std::filesystem::file_size(active_index);
  ASSERT_LT(trimmed, uint64_t(config.segment_index_bytes));

  ListingCountingFileSystem counting;
  LogManagerOptions options;
  options.fs = &counting;
  LogManager manager(options);
  ASSERT_TRUE(manager.Startup({tmp.path()}, config, 1).ok());
  ASSERT_FALSE(manager.HasFailures()) << manager.ReportJson().dump();
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(counting.listings_of(tmp.Join("few-" + std::to_string(p))), 1) << p;
    EXPECT_EQ(manager.GetLog({"few", p})->log_end_offset(), 8);
  }
  EXPECT_EQ(counting.txn_index_checks(), 0);
  EXPECT_EQ(counting.partition_exists_checks(), 0);
  EXPECT_EQ(std::filesystem::file_size(active_index), trimmed);
  ASSERT_TRUE(manager.Shutdown().ok());
  EXPECT_EQ(counting.index_truncates(), 0);
  EXPECT_EQ(std::filesystem::file_size(active_index), trimmed);

  // The first append after such a start extends the file before its append
  // window maps it; the data reads back after a restart.
  for (const bool append : {true, false}) {
    LogManagerOptions no_sync;
    no_sync.fs = NoSync();
    LogManager again(no_sync);
    ASSERT_TRUE(again.Startup({tmp.path()}, config, 1).ok());
    Log* log = again.GetLog({"few", 0});
    ASSERT_NE(log, nullptr);
    for (int64_t i = 8; append && i < 40; ++i) {
      auto info = log->AppendAsLeader(OneRecordBatch(i, 600), 0);
      ASSERT_TRUE(info.ok()) << info.status().ToString();
    }
    if (append) {
      EXPECT_EQ(std::filesystem::file_size(active_index), uint64_t(config.segment_index_bytes))
          << "extended before the append window mapped it";
    }
    ASSERT_EQ(log->log_end_offset(), 40);
    for (int64_t i = 0; i < 40; ++i) {
      auto value = ReadOneValue(log, i);
      ASSERT_TRUE(value.ok()) << i << ": " << value.status().ToString();
    }
    ASSERT_TRUE(again.Shutdown().ok());
  }
}

// A partition of two segments whose first one has several index entries
// (index.interval.bytes = 100, ~90-byte batches).
class LazyIndexCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.index_interval_bytes = 100;
    MakeCleanPartition(tmp_.path(), kTp, 2, 10, config_, 64);
    if (HasFatalFailure()) return;
    ShutDownCleanly(tmp_.path(), config_);
    index_path_ = OffsetIndexFileName(JoinPath(tmp_.path(), LogDirName(kTp)), 0);
    good_index_ = ReadFileToString(index_path_);
    ASSERT_GE(good_index_.size(), 3 * OffsetIndex::kEntrySize);
  }

  // Entry `slot` of the first segment's .index now points past the .log.
  void CorruptIndexEntry(size_t slot) {
    std::string bad = good_index_;
    StoreBe32(reinterpret_cast<uint8_t*>(bad.data()) + slot * OffsetIndex::kEntrySize + 4,
              0x7fff0000u);
    WriteStringToFile(index_path_, bad);
  }

  const TopicPartition kTp{"lazy", 0};
  TempDir tmp_;
  LogConfig config_;
  std::string index_path_;
  std::string good_index_;
};

TEST_F(LazyIndexCheckTest, CorruptIndexBelowTheRecoveryPointIsRebuiltOnFirstRead) {
  CorruptIndexEntry(1);
  LogManager manager;
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(manager.Startup({tmp_.path()}, config_, 1).ok());
  ASSERT_FALSE(manager.HasFailures());
  // The clean start did not read the first segment's index: nothing reported,
  // nothing rewritten yet.
  const std::string at_start = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(at_start, "");
  for (const auto& p : manager.report().partitions) EXPECT_TRUE(p.warnings.empty());
  EXPECT_NE(ReadFileToString(index_path_), good_index_);

  Log* log = manager.GetLog(kTp);
  ASSERT_NE(log, nullptr);
  ::testing::internal::CaptureStderr();
  auto value = ReadOneValue(log, 5);
  const std::string at_read = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(value.ok()) << value.status().ToString();
  EXPECT_EQ(*value, std::string(64, char('a' + 5)));
  EXPECT_NE(at_read.find("WARN Found a corrupted index file corresponding to log file " +
                         JoinPath(JoinPath(tmp_.path(), LogDirName(kTp)), LogFileName("", 0))),
            std::string::npos)
      << at_read;
  EXPECT_NE(at_read.find("slot 1"), std::string::npos) << at_read;
  const LogSegment* first = log->segments_for_inspection().front();
  EXPECT_NE(first->index_rebuild_warning().find("rebuilding index files from the log"),
            std::string::npos);
  // Rebuilt exactly as recovery builds it; the .log is untouched.
  ASSERT_TRUE(manager.Shutdown().ok());
  EXPECT_EQ(ReadFileToString(index_path_), good_index_);
  for (int64_t offset = 0; offset < 20; ++offset) {
    LogManager again;
    ASSERT_TRUE(again.Startup({tmp_.path()}, config_, 1).ok());
    auto v = ReadOneValue(again.GetLog(kTp), offset);
    ASSERT_TRUE(v.ok()) << offset << ": " << v.status().ToString();
    EXPECT_EQ(*v, std::string(64, char('a' + offset % 26)));
    ASSERT_TRUE(again.Shutdown().ok());
    if (offset == 0) offset = 18;  // a first, a middle and the last batch suffice
  }
}

TEST_F(LazyIndexCheckTest, IntactIndexIsCheckedOnceAndNotRewritten) {
  LogManager manager;
  ASSERT_TRUE(manager.Startup({tmp_.path()}, config_, 1).ok());
  Log* log = manager.GetLog(kTp);
  ASSERT_NE(log, nullptr);
  for (int64_t offset : {0, 3, 9}) {
    auto value = ReadOneValue(log, offset);
    ASSERT_TRUE(value.ok()) << value.status().ToString();
    EXPECT_EQ(*value, std::string(64, char('a' + offset)));
  }
  EXPECT_EQ(log->segments_for_inspection().front()->index_rebuild_warning(), "");
  ASSERT_TRUE(manager.Shutdown().ok());
  EXPECT_EQ(ReadFileToString(index_path_), good_index_);
}

}  // namespace
}  // namespace daruma
