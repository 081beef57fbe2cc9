// Log::Close before a clean-shutdown marker: everything Close changes on disk
// (index trims, the final time-index entry, the producer snapshot) must be
// durable once Close returns, because the marker tells the next start-up to
// trust those files without recovery. Checked on the power-loss image of
// FaultInjectionFileSystem.
#include <gtest/gtest.h>

#include "common/clock.h"
#include "log/log.h"
#include "record/record_batch_builder.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"

namespace daruma::testing {
namespace {

constexpr char kLogDir[] = "/data/logs";
const TopicPartition kTp{"orders", 0};

TEST(LogCloseCrashTest, EveryFileCloseTouchedIsDurableAfterClose) {
  MemFileSystem base;
  ASSERT_TRUE(base.CreateDir(kLogDir).ok());
  FaultInjectionFileSystem fs(&base);
  ManualClock clock(1700000000000);
  LogConfig config;
  config.segment_index_bytes = 1200;
  config.index_interval_bytes = 64;
  const std::string dir = JoinPath(kLogDir, LogDirName(kTp));
  ASSERT_TRUE(fs.CreateDir(dir).ok());
  ASSERT_TRUE(fs.SyncDir(kLogDir).ok());
  auto log = Log::CreateEmpty(&fs, dir, kTp, config, &clock);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  for (int i = 0; i < 20; ++i) {
    RecordInput record;
    record.timestamp = 1700000000000 + i;
    record.value = "value " + std::to_string(i) + std::string(50, 'x');
    auto batch = BuildRecordBatch({}, {record});
    ASSERT_TRUE(batch.ok());
    ASSERT_TRUE((*log)->AppendAsLeader(*batch, 0).ok());
  }
  ASSERT_TRUE((*log)->FlushAll().ok());
  ASSERT_TRUE((*log)->Close().ok());

  MemFileSystem image;
  ASSERT_TRUE(fs.MaterializeDurableState(&image, kLogDir, /*tear=*/false).ok());
  const auto live = base.Files(dir);
  const auto durable = image.Files(dir);
  ASSERT_FALSE(live.empty());
  for (const auto& [path, bytes] : live) {
    auto it = durable.find(path);
    ASSERT_NE(it, durable.end()) << path << " is not durable after Close";
    EXPECT_EQ(it->second.size(), bytes.size())
        << path << ": durable size differs from the closed file (an unsynced trim?)";
    EXPECT_TRUE(it->second == bytes) << path << ": durable contents differ after Close";
  }
}

}  // namespace
}  // namespace daruma::testing
