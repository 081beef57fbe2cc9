// Durability of a freshly created partition log across a power loss: once a
// Flush covering an append returned OK, the partition directory, its segment
// and the records must all survive (LazyFS model of
// FaultInjectionFileSystem: names are durable only after SyncDir of their
// parent).
#include <gtest/gtest.h>

#include "common/bytes.h"
#include "common/clock.h"
#include "log/log.h"
#include "record/record_batch_builder.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"

namespace daruma::testing {
namespace {

constexpr char kCreateLogDir[] = "/data/logs";
const TopicPartition kCreateTp{"orders", 0};

TEST(LogCreateCrashTest, FlushedRecordsOfANewPartitionSurvivePowerLoss) {
  MemFileSystem base;
  ASSERT_TRUE(base.CreateDir(kCreateLogDir).ok());
  FaultInjectionFileSystem fs(&base);
  ManualClock clock(1700000000000);
  const std::string dir = JoinPath(kCreateLogDir, LogDirName(kCreateTp));
  auto log = Log::CreateEmpty(&fs, dir, kCreateTp, LogConfig{}, &clock);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  RecordInput record;
  record.timestamp = 1700000000000;
  record.value = "acknowledged";
  auto batch = BuildRecordBatch({}, {record});
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE((*log)->AppendAsLeader(*batch, 0).ok());
  ASSERT_TRUE((*log)->Flush(1).ok());

  MemFileSystem image;
  ASSERT_TRUE(fs.MaterializeDurableState(&image, kCreateLogDir, /*tear=*/false).ok());
  const std::string segment = JoinPath(dir, "00000000000000000000.log");
  EXPECT_TRUE(image.Exists(dir)) << "partition dir not durable: Log::CreateEmpty must SyncDir("
                                 << kCreateLogDir << ") after creating " << dir;
  auto bytes = image.ReadFile(segment);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  // The leader stamps its epoch (0) into the batch; the CRC does not cover it.
  Bytes expected = *batch;
  StoreBe32(expected.data() + 12, 0);
  EXPECT_EQ(*bytes, expected);
}

}  // namespace
}  // namespace daruma::testing
