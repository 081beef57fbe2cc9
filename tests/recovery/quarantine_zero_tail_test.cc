// A preallocated segment (`preallocate=true`) left by a crash ends in zeros up
// to segment.bytes. Recovery cuts them as Kafka does; the quarantine records
// the cut range in its manifest but copies nothing, since zeros hold no data
// (a 1 GiB segment would otherwise put up to 1 GiB of zeros aside). A tail
// with any non-zero byte is still copied.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "common/clock.h"
#include "common/file_system.h"
#include "log/log.h"
#include "log/log_file_names.h"
#include "record/record_batch_builder.h"
#include "recovery/log_loader.h"
#include "recovery/quarantine.h"
#include "support/test_support.h"

namespace daruma {
namespace {

namespace fs = std::filesystem;
using testing::ReadFileToString;
using testing::TempDir;

using testing::kT0;

class QuarantineZeroTailTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.preallocate = true;
    config_.segment_bytes = 4 << 20;
    live_dir_ = tmp_.path() + "/live/t-0";
    crash_dir_ = tmp_.path() + "/crash/t-0";
    fs::create_directories(tmp_.path() + "/crash");
    fs::create_directories(tmp_.path() + "/live");
  }

  // Appends `batches` batches to a live preallocated log and copies its
  // directory while the log is open, as a kill -9 would leave it.
  int64_t WriteAndCrashCopy(int batches) {
    auto log = Log::CreateEmpty(FileSystem::Default(), live_dir_, TopicPartition{"t", 0}, config_,
                                &clock_);
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    if (!log.ok()) return 0;
    for (int i = 0; i < batches; ++i) {
      RecordInput record;
      record.timestamp = kT0 + i;
      record.value = std::string(500, char('a' + i % 26));
      auto batch = BuildRecordBatch(BatchBuilderOptions{}, {record});
      EXPECT_TRUE(batch.ok());
      EXPECT_TRUE((*log)->AppendAsLeader(*batch, 0).ok());
    }
    const int64_t size = (*log)->active_segment_size();
    fs::copy(live_dir_, crash_dir_, fs::copy_options::recursive);
    EXPECT_TRUE((*log)->Close().ok());
    return size;
  }

  Result<std::unique_ptr<Log>> LoadCrashCopy() {
    LoadLogParams p;
    p.fs = FileSystem::Default();
    p.log_dir = tmp_.path() + "/crash";
    p.partition_dir = crash_dir_;
    p.tp = TopicPartition{"t", 0};
    p.config = config_;
    p.clock = &clock_;
    p.had_clean_shutdown = false;
    return LoadLog(p, &report_);
  }

  std::string CrashLog() const { return LogFileName(crash_dir_, 0); }

  TempDir tmp_;
  LogConfig config_;
  ManualClock clock_{kT0};
  std::string live_dir_, crash_dir_;
  PartitionRecoveryReport report_;
};

TEST_F(QuarantineZeroTailTest, ZeroTailIsCutAndRecordedButNotCopied) {
  const int64_t size = WriteAndCrashCopy(100);
  ASSERT_EQ(fs::file_size(CrashLog()), uint64_t(config_.segment_bytes));
  auto log = LoadCrashCopy();
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), 100);
  EXPECT_EQ(fs::file_size(CrashLog()), uint64_t(size));

  ASSERT_EQ(report_.quarantined.size(), 1u);
  const QuarantinedRange& q = report_.quarantined[0];
  EXPECT_EQ(q.from_position, size);
  EXPECT_EQ(q.bytes, config_.segment_bytes - size);
  EXPECT_EQ(q.quarantine_path, "");
  EXPECT_NE(q.reason.find("all zero bytes"), std::string::npos) << q.reason;

  const std::string qdir = crash_dir_ + "/" + kQuarantineDirName;
  int files = 0;
  for (const auto& e : fs::directory_iterator(qdir)) {
    EXPECT_EQ(e.path().filename(), kQuarantineManifestName);
    ++files;
  }
  EXPECT_EQ(files, 1);
  auto line = nlohmann::json::parse(ReadFileToString(qdir + "/" + kQuarantineManifestName));
  EXPECT_TRUE(line["quarantinePath"].is_null());
  EXPECT_EQ(line["fromPosition"], size);
  EXPECT_TRUE((*log)->Close().ok());
}

TEST_F(QuarantineZeroTailTest, ATailWithDataAfterTheZerosIsCopied) {
  const int64_t size = WriteAndCrashCopy(100);
  {
    std::FILE* f = std::fopen(CrashLog().c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, long(config_.segment_bytes - 1), SEEK_SET);
    std::fputc(0x7f, f);
    std::fclose(f);
  }
  auto log = LoadCrashCopy();
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_EQ(report_.quarantined.size(), 1u);
  const QuarantinedRange& q = report_.quarantined[0];
  ASSERT_NE(q.quarantine_path, "");
  EXPECT_EQ(fs::file_size(q.quarantine_path), uint64_t(config_.segment_bytes - size));
  EXPECT_TRUE((*log)->Close().ok());
}

}  // namespace
}  // namespace daruma
