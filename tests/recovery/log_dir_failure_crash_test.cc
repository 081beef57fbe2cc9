// EIO on one of two log dirs (issue 8): the failing dir goes offline and the
// other keeps loading and serving, both when the dir fails before start-up
// and when it fails while serving.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/clock.h"
#include "log/clean_shutdown_file.h"
#include "log/log.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma::testing {
namespace {

constexpr int64_t kNow = 1700000000000;
const TopicPartition kHealthy{"orders", 0};
const TopicPartition kBroken{"payments", 0};

Bytes OneRecordBatch(const std::string& value) {
  RecordInput r;
  r.timestamp = kNow;
  r.value = value;
  auto batch = BuildRecordBatch({}, {r});
  EXPECT_TRUE(batch.ok());
  return *batch;
}

// Values of every record readable from the log start.
std::vector<std::string> ReadValues(Log* log) {
  std::vector<std::string> out;
  auto fetched = log->Read(log->log_start_offset(), 1 << 20, FetchIsolation::kLogEnd, true);
  EXPECT_TRUE(fetched.ok()) << fetched.status().ToString();
  if (!fetched.ok()) return out;
  size_t pos = 0;
  const Bytes& bytes = fetched->records;
  while (pos + 12 <= bytes.size()) {
    const size_t size = 12 + LoadBe32(bytes.data() + pos + 8);
    auto batch = RecordBatchView::Parse(ByteSpan(bytes).subspan(pos, size));
    EXPECT_TRUE(batch.ok());
    auto records = batch->DecodeRecords();
    EXPECT_TRUE(records.ok());
    for (const auto& r : *records) out.push_back(r.value.value_or(""));
    pos += size;
  }
  return out;
}

class LogDirFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = tmp_.Join("a");
    b_ = tmp_.Join("b");
    // DirLock takes its lock on the real file system.
    std::filesystem::create_directories(a_);
    std::filesystem::create_directories(b_);
    ASSERT_TRUE(base_.CreateDir(a_).ok());
    ASSERT_TRUE(base_.CreateDir(b_).ok());
    MakePartition(a_, kHealthy);
    MakePartition(b_, kBroken);
  }

  void MakePartition(const std::string& log_dir, const TopicPartition& tp) {
    auto log = Log::CreateEmpty(&fs_, JoinPath(log_dir, LogDirName(tp)), tp, LogConfig{}, &clock_);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE((*log)->AppendAsLeader(OneRecordBatch(tp.topic + std::to_string(i)), 0).ok());
    }
    ASSERT_TRUE((*log)->Close().ok());
  }

  LogManagerOptions Options() {
    LogManagerOptions o;
    o.fs = &fs_;
    o.clock = &clock_;
    return o;
  }

  TempDir tmp_;
  std::string a_, b_;
  MemFileSystem base_;
  FaultInjectionFileSystem fs_{&base_};
  ManualClock clock_{kNow};
};

TEST_F(LogDirFailureTest, EioOnOneDirAtStartupLeavesTheOtherLoadedAndServing) {
  fs_.FailPathsUnder(b_);
  LogManager manager(Options());
  Status st = manager.Startup({a_, b_}, LogConfig{}, 1);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(manager.HasFailures());
  ASSERT_EQ(manager.report().log_dirs.size(), 2u);
  EXPECT_FALSE(manager.report().log_dirs[0].offline);
  EXPECT_TRUE(manager.report().log_dirs[1].offline);
  EXPECT_NE(manager.report().log_dirs[1].error.find("injected EIO on " + b_), std::string::npos)
      << manager.report().log_dirs[1].error;
  EXPECT_EQ(manager.GetLog(kBroken), nullptr);

  Log* log = manager.GetLog(kHealthy);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->log_end_offset(), 3);
  auto info = log->AppendAsLeader(OneRecordBatch("after"), 0);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->first_offset, 3);
  ASSERT_TRUE(log->FlushAll().ok());
  EXPECT_EQ(ReadValues(log), (std::vector<std::string>{"orders0", "orders1", "orders2", "after"}));
  // The healthy dir's checkpoints were written; the offline dir got none.
  EXPECT_TRUE(base_.Exists(JoinPath(a_, kRecoveryPointCheckpointFile)));
  EXPECT_FALSE(base_.Exists(JoinPath(b_, kRecoveryPointCheckpointFile)));
}

TEST_F(LogDirFailureTest, EioWhileServingFailsOnlyThatDir) {
  LogManager manager(Options());
  ASSERT_TRUE(manager.Startup({a_, b_}, LogConfig{}, 1).ok());
  ASSERT_FALSE(manager.HasFailures());
  Log* healthy = manager.GetLog(kHealthy);
  Log* broken = manager.GetLog(kBroken);
  ASSERT_NE(healthy, nullptr);
  ASSERT_NE(broken, nullptr);

  fs_.FailPathsUnder(b_);
  auto failed = broken->AppendAsLeader(OneRecordBatch("lost"), 0);
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(failed.status().IsIoError()) << failed.status().ToString();
  // As Kafka's LogDirFailureChannel: the failed write takes b offline at once
  // (Log::write_failure), and a does not notice.
  EXPECT_TRUE(manager.failure_channel().IsOffline(b_));
  EXPECT_FALSE(manager.failure_channel().IsOffline(a_));

  ASSERT_TRUE(healthy->AppendAsLeader(OneRecordBatch("still"), 0).ok());
  ASSERT_TRUE(healthy->FlushAll().ok());
  EXPECT_EQ(ReadValues(healthy),
            (std::vector<std::string>{"orders0", "orders1", "orders2", "still"}));

  EXPECT_TRUE(manager.Shutdown().ok());  // b is offline already: skipped, no marker
  EXPECT_TRUE(base_.Exists(JoinPath(a_, kCleanShutdownFileName)));
  EXPECT_FALSE(base_.Exists(JoinPath(b_, kCleanShutdownFileName)));
}

}  // namespace
}  // namespace daruma::testing
