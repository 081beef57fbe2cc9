// A running clean stops at its next batch when the log manager needs the log
// (AbortAndPauseCleaning: retention, truncation; RemoveLog: partition
// deletion) or the broker shuts down (Stop), as Kafka's checkDone makes it;
// before, these waited for the whole round, tens of seconds under a throttle.
// What an aborted round leaves: no `.cleaned` file, the checkpoint where it
// was, every record still readable, the log not marked uncleanable, and a
// later round that cleans it.
//
// The rounds here are throttled to ~10 kB/s over ~1.5 MB: run to the end,
// each would take minutes, so a test that passes stopped its clean early.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "log/log.h"
#include "log/log_cleaner.h"
#include "log/throttler.h"
#include "record/record_batch_builder.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::kT0;
using testing::TempDir;

constexpr int kAbortTestBatches = 1500;

class LogCleanerAbortTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LogConfig config;
    config.compact = true;
    config.segment_bytes = 256 * 1024;
    auto log = Log::CreateEmpty(fs_, tmp_.Join("t-0"), TopicPartition{"t", 0}, config, &clock_);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log_ = std::move(*log);
    for (int i = 0; i < kAbortTestBatches; ++i) {
      BatchBuilderOptions o;
      auto batch = BuildRecordBatch(
          o, {{kT0, "k" + std::to_string(i % 50), std::string(1000, char('a' + i % 26)), {}}});
      ASSERT_TRUE(batch.ok());
      ASSERT_TRUE(log_->AppendAsLeader(*batch, 0).ok());
    }
    ASSERT_TRUE(log_->Roll().ok());
    log_->UpdateHighWatermark(log_->log_end_offset());
    CleanerConfig cleaner_config;
    cleaner_config.io_max_bytes_per_second = 10000;
    cleaner_config.dedupe_buffer_size = 1 << 20;
    cleaner_config.backoff_ms = 10;
    cleaner_ = std::make_unique<LogCleaner>(fs_, cleaner_config, &clock_);
    cleaner_->AddLog(log_.get(), CompactionConfig{});
  }

  // Starts the cleaner threads and returns once they are cleaning the log.
  void StartAndWaitForTheClean() {
    cleaner_->Start();
    while (cleaner_->TryPauseCleaning(log_.get())) {
      cleaner_->ResumeCleaning(log_.get());
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  // The state an aborted round must leave.
  void ExpectUntouchedByTheAbortedRound() {
    auto names = fs_->ListDir(tmp_.Join("t-0"));
    ASSERT_TRUE(names.ok());
    for (const auto& e : *names) {
      EXPECT_EQ(e.name.find(".cleaned"), std::string::npos) << e.name;
    }
    auto checkpointed = cleaner_->CheckpointedOffset(log_.get());
    ASSERT_TRUE(checkpointed.ok());
    // Nothing, or the log start a first round may record before it cleans.
    EXPECT_TRUE(!checkpointed->has_value() || **checkpointed == 0)
        << "an aborted round moves no checkpoint";
    EXPECT_FALSE(cleaner_->IsUncleanable(log_.get()));
    auto read = log_->Read(0, 1 << 30, FetchIsolation::kLogEnd, true);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_FALSE(read->records.empty());
  }

  TempDir tmp_;
  FileSystem* fs_ = FileSystem::Default();
  ManualClock clock_{kT0};
  std::unique_ptr<Log> log_;
  std::unique_ptr<LogCleaner> cleaner_;
};

TEST_F(LogCleanerAbortTest, AbortAndPauseCleaningStopsTheRunningClean) {
  StartAndWaitForTheClean();
  cleaner_->AbortAndPauseCleaning(log_.get());
  ExpectUntouchedByTheAbortedRound();
  // Paused until resumed.
  auto refused = cleaner_->CleanOnce(log_.get(), kT0);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  cleaner_->ResumeCleaning(log_.get());
  cleaner_->Stop();
  // Unthrottled, a later round cleans the log whole.
  LogCleaner unthrottled(fs_, CleanerConfig{}, &clock_);
  unthrottled.AddLog(log_.get(), CompactionConfig{});
  auto stats = unthrottled.CleanOnce(log_.get(), kT0);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_TRUE(stats->cleaned);
  EXPECT_LT(stats->messages_written, stats->messages_read);
}

TEST_F(LogCleanerAbortTest, StopEndsTheRunningClean) {
  StartAndWaitForTheClean();
  cleaner_->Stop();
  ExpectUntouchedByTheAbortedRound();
}

TEST_F(LogCleanerAbortTest, RemoveLogEndsTheRunningClean) {
  StartAndWaitForTheClean();
  cleaner_->RemoveLog(log_.get());
  cleaner_->Stop();
  auto names = fs_->ListDir(tmp_.Join("t-0"));
  ASSERT_TRUE(names.ok());
  for (const auto& e : *names) EXPECT_EQ(e.name.find(".cleaned"), std::string::npos) << e.name;
}

TEST(ThrottlerAbortTest, AnAbortedCallerDoesNotSleepOutTheThrottle) {
  ManualClock clock(0);
  Throttler throttler(1000, 0, &clock);  // 1 kB/s
  std::atomic<bool> abort{false};
  clock.Advance(1);
  // 10 MB at 1 kB/s asks for ~3 hours of sleep; the abort comes mid-sleep.
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    abort = true;
  });
  throttler.MaybeThrottle(1e7, &abort);
  aborter.join();
  EXPECT_LT(throttler.total_sleep_ms(), 1000 * 1000) << "slept what it did, not what it asked";
}

// After Stop, the cleaner's synchronous rounds run whole again (a round
// claimed while Stop runs is aborted; one claimed after it is not).
TEST_F(LogCleanerAbortTest, AStoppedCleanerStillCleansOnce) {
  LogConfig config;
  config.compact = true;
  auto small = Log::CreateEmpty(fs_, tmp_.Join("s-0"), TopicPartition{"s", 0}, config, &clock_);
  ASSERT_TRUE(small.ok());
  for (int i = 0; i < 6; ++i) {
    auto batch = BuildRecordBatch(BatchBuilderOptions{}, {{kT0, "k", std::to_string(i), {}}});
    ASSERT_TRUE(batch.ok());
    ASSERT_TRUE((*small)->AppendAsLeader(*batch, 0).ok());
  }
  ASSERT_TRUE((*small)->Roll().ok());
  (*small)->UpdateHighWatermark((*small)->log_end_offset());
  cleaner_->AddLog(small->get(), CompactionConfig{});
  cleaner_->Stop();
  auto stats = cleaner_->CleanOnce(small->get(), kT0);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_TRUE(stats->cleaned);
  cleaner_->RemoveLog(small->get());
}

}  // namespace
}  // namespace daruma
