// Preallocated segments (`preallocate=true`): appends store through a mapped
// append window (File::MapForAppend) and index entries through a mapped index
// window. These cases pin down what must not differ from plain write()s: the
// bytes other readers see at once, the trimmed files after close, a crash
// copy's zero tail that recovery cuts, truncation under a live window, and
// windows that outlive the handle cache's evictions.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/caching_file_system.h"
#include "common/clock.h"
#include "common/file_system.h"
#include "log/log.h"
#include "log/log_file_names.h"
#include "log/log_segment.h"
#include "record/record_batch_builder.h"
#include "support/test_support.h"

namespace daruma {
namespace {

namespace fs = std::filesystem;
using testing::ReadFileToString;
using testing::TempDir;

using testing::kT0;

// An uncompressed batch of one record whose value has `value_bytes` bytes.
Bytes MakeBatch(int value_bytes, char fill) {
  RecordInput record;
  record.timestamp = kT0;
  record.key = "k";
  record.value = std::string(size_t(value_bytes), fill);
  auto batch = BuildRecordBatch(BatchBuilderOptions{}, {record});
  EXPECT_TRUE(batch.ok()) << batch.status().ToString();
  return *batch;
}

class LogPreallocateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.preallocate = true;
    config_.segment_bytes = 32 << 20;
    config_.segment_index_bytes = 1 << 20;
    config_.index_interval_bytes = 4096;
  }

  std::string dir() const { return tmp_.path() + "/t-0"; }
  std::string log_path() const { return LogFileName(dir(), 0); }

  void Open(FileSystem* fs = FileSystem::Default()) {
    auto log = Log::CreateEmpty(fs, dir(), TopicPartition{"t", 0}, config_, &clock_);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log_ = std::move(*log);
  }

  // Appends batches of varying sizes (so they straddle the 8 MiB append
  // window's end) until `bytes` were written; returns what the .log holds.
  std::string AppendAbout(int64_t bytes) {
    std::string expected;
    for (int i = 0; int64_t(expected.size()) < bytes; ++i) {
      Bytes batch = MakeBatch(700 + (i * 37) % 1500, char('a' + i % 26));
      auto info = log_->AppendAsLeader(batch, 0);
      EXPECT_TRUE(info.ok()) << info.status().ToString();
      if (!info.ok()) break;
      // The leader rewrote the base offset (and CRC) in its copy: read back.
      auto read =
          log_->Read(info->first_offset, int32_t(batch.size()), FetchIsolation::kLogEnd, true);
      EXPECT_TRUE(read.ok());
      if (!read.ok()) break;
      EXPECT_EQ(read->records.size(), batch.size());
      expected.append(reinterpret_cast<const char*>(read->records.data()), read->records.size());
    }
    return expected;
  }

  TempDir tmp_;
  LogConfig config_;
  ManualClock clock_{kT0};
  std::unique_ptr<Log> log_;
};

TEST_F(LogPreallocateTest, AppendedBytesAreInTheFileAtOnceAndTheFileIsTrimmedOnClose) {
  Open();
  const std::string expected = AppendAbout(20 << 20);
  // While active, the file is preallocated to segment.bytes, as Kafka's is,
  // and every appended byte is already there for any other reader.
  EXPECT_EQ(fs::file_size(log_path()), uint64_t(config_.segment_bytes));
  const std::string live = ReadFileToString(log_path());
  EXPECT_EQ(live.substr(0, expected.size()), expected);
  EXPECT_EQ(live.find_first_not_of('\0', expected.size()), std::string::npos);
  // The offset index on disk already holds every entry (its window is mapped).
  auto oi = log_->segments_for_inspection()[0]->offset_index();
  ASSERT_TRUE(oi.ok());
  const size_t entries = (*oi)->entries();
  ASSERT_GT(entries, 1000u);
  const std::string index = ReadFileToString(OffsetIndexFileName(dir(), 0));
  EXPECT_NE(index.substr((entries - 1) * 8, 8), std::string(8, '\0'));
  EXPECT_EQ(index.find_first_not_of('\0', entries * 8), std::string::npos);

  ASSERT_TRUE(log_->Close().ok());
  EXPECT_EQ(ReadFileToString(log_path()), expected);
}

TEST_F(LogPreallocateTest, ACrashCopyHasAZeroTailThatRecoveryCuts) {
  Open();
  const std::string expected = AppendAbout(9 << 20);
  // kill -9 now: the page cache (and so a copy) holds the data and the zeros.
  TempDir crash;
  fs::copy_file(log_path(), crash.path() + "/00000000000000000000.log");
  auto seg = LogSegment::Open(FileSystem::Default(), crash.path(), 0, config_, true);
  ASSERT_TRUE(seg.ok()) << seg.status().ToString();
  EXPECT_EQ((*seg)->size(), config_.segment_bytes);
  auto recovered = (*seg)->Recover(nullptr);
  ASSERT_TRUE(recovered.ok()) << recovered.status().ToString();
  EXPECT_EQ(recovered->valid_bytes, int64_t(expected.size()));
  EXPECT_EQ(recovered->truncated_bytes, config_.segment_bytes - int64_t(expected.size()));
  ASSERT_TRUE((*seg)->Close().ok());
  EXPECT_EQ(ReadFileToString(crash.path() + "/00000000000000000000.log"), expected);
}

TEST_F(LogPreallocateTest, TruncationUnderALiveWindowThenAppendKeepsExactBytes) {
  Open();
  AppendAbout(3 << 20);
  const int64_t keep = log_->log_end_offset() / 2;
  ASSERT_TRUE(log_->TruncateTo(keep).ok());
  const int64_t kept_bytes = log_->active_segment_size();
  auto kept = log_->Read(0, int32_t(kept_bytes), FetchIsolation::kLogEnd, true);
  ASSERT_TRUE(kept.ok());
  std::string expected(reinterpret_cast<const char*>(kept->records.data()), kept->records.size());
  // The file shrank below the old window: the next append maps a new one.
  expected += AppendAbout(10 << 20);
  ASSERT_TRUE(log_->Close().ok());
  EXPECT_EQ(ReadFileToString(log_path()), expected);
}

TEST_F(LogPreallocateTest, RollTrimsTheOldSegmentAndPreallocatesTheNewOne) {
  config_.segment_bytes = 4 << 20;
  Open();
  AppendAbout(10 << 20);
  const auto bases = log_->segment_base_offsets();
  ASSERT_GE(bases.size(), 3u);
  for (size_t i = 0; i + 1 < bases.size(); ++i) {
    const uint64_t size = fs::file_size(LogFileName(dir(), bases[i]));
    EXPECT_LE(size, uint64_t(config_.segment_bytes));
    EXPECT_GT(size, uint64_t(config_.segment_bytes) - 4000);
  }
  EXPECT_EQ(fs::file_size(LogFileName(dir(), bases.back())), uint64_t(config_.segment_bytes));
  ASSERT_TRUE(log_->Close().ok());
}

TEST_F(LogPreallocateTest, WindowsOutliveHandleEvictionsSoTheCacheStaysBounded) {
  CachingFileSystem cached(FileSystem::Default(), /*max_open_files=*/1, /*defer_opens=*/false);
  Open(&cached);
  std::string expected = AppendAbout(1 << 20);
  // A flush unpins every handle; the cache evicts down to one while the
  // .log's and the indexes' windows stay mapped and keep taking appends.
  ASSERT_TRUE(log_->FlushAll().ok());
  EXPECT_LE(cached.cache().open_handles(), 1u);
  expected += AppendAbout(1 << 20);
  EXPECT_LE(cached.cache().open_handles(), 2u);
  ASSERT_TRUE(log_->FlushAll().ok());
  ASSERT_TRUE(log_->Close().ok());
  log_.reset();
  EXPECT_EQ(cached.cache().pinned_handles(), 0u);
  EXPECT_EQ(ReadFileToString(log_path()), expected);
}

}  // namespace
}  // namespace daruma
