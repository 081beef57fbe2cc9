// Pass 5's fsyncs run in the background with spare recovery threads
// (background_syncs.h), in line with one. Either way, once LoadLog returns,
// every index it rebuilt for a recovered segment and every producer snapshot
// it wrote must already be durable: a power loss right then (before the
// caller's Log::FlushAll) keeps them byte for byte.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "log/log.h"
#include "log/log_file_names.h"
#include "record/record_batch_builder.h"
#include "recovery/log_loader.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"

namespace daruma::testing {
namespace {

constexpr int64_t kDurabilityNow = 1700000000000;
constexpr char kRoot[] = "/data";
constexpr char kPart[] = "/data/t-0";
constexpr int kDurabilitySegments = 6;

class ParallelRecoveryDurabilityTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    config_.segment_index_bytes = 4096;
    config_.index_interval_bytes = 200;
    ASSERT_TRUE(base_.CreateDir(kPart).ok());
    ManualClock clock(kDurabilityNow);
    auto log = Log::CreateEmpty(&base_, kPart, {"t", 0}, config_, &clock);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    int32_t sequence = 0;
    for (int s = 0; s < kDurabilitySegments; ++s) {
      if (s > 0) {
        ASSERT_TRUE((*log)->Roll().ok());
      }
      for (int b = 0; b < 10; ++b) {
        // An idempotent producer, so every pass-5 snapshot has an entry.
        BatchBuilderOptions o;
        o.producer_id = 7;
        o.producer_epoch = 0;
        o.base_sequence = sequence++;
        o.partition_leader_epoch = s;
        RecordInput record{kDurabilityNow + s * 10 + b, "k", std::string(80, char('a' + b)), {}};
        auto batch = BuildRecordBatch(o, {record});
        ASSERT_TRUE(batch.ok());
        ASSERT_TRUE((*log)->AppendAsLeader(*batch, s).ok());
      }
    }
    ASSERT_TRUE((*log)->Close().ok());
    // Every index must be rebuilt, and no snapshot is left to load from.
    for (const auto& [path, bytes] : base_.Files(kPart)) {
      if (HasSuffix(path, kIndexFileSuffix) || HasSuffix(path, kTimeIndexFileSuffix) ||
          HasSuffix(path, kProducerSnapshotFileSuffix)) {
        ASSERT_TRUE(base_.Remove(path).ok());
      }
    }
  }

  MemFileSystem base_;
  LogConfig config_;
};

TEST_P(ParallelRecoveryDurabilityTest, RebuiltIndexesAndSnapshotsAreDurableWhenLoadReturns) {
  FaultInjectionFileSystem fs(&base_);
  ManualClock clock(kDurabilityNow + 1000);
  LoadLogParams p;
  p.fs = &fs;
  p.log_dir = kRoot;
  p.partition_dir = kPart;
  p.tp = TopicPartition{"t", 0};
  p.config = config_;
  p.clock = &clock;
  p.recovery_point_checkpoint = 0;
  p.recovery_threads = GetParam();
  PartitionRecoveryReport report;
  auto log = LoadLog(p, &report);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(report.recovered_segments, kDurabilitySegments);

  MemFileSystem image;  // the disk after a power loss now
  ASSERT_TRUE(fs.MaterializeDurableState(&image, kRoot, /*tear=*/false).ok());
  const auto durable = image.Files(kPart);
  const auto live = base_.Files(kPart);
  ASSERT_EQ(report.segments.size(), size_t(kDurabilitySegments));
  const std::string active = FilenamePrefixFromOffset(report.segments.back().base_offset);
  int indexes = 0, snapshots = 0;
  for (const auto& [path, bytes] : live) {
    // The active segment's indexes were re-grown for appends after pass 5;
    // Log::FlushAll syncs those.
    if (path.find(active) != std::string::npos && !HasSuffix(path, kProducerSnapshotFileSuffix)) {
      continue;
    }
    const bool index = HasSuffix(path, kIndexFileSuffix) || HasSuffix(path, kTimeIndexFileSuffix);
    const bool snapshot = HasSuffix(path, kProducerSnapshotFileSuffix);
    if (!index && !snapshot) continue;
    indexes += index;
    snapshots += snapshot;
    auto it = durable.find(path);
    ASSERT_NE(it, durable.end()) << path << " is not durable";
    EXPECT_EQ(it->second, bytes) << path;
  }
  EXPECT_EQ(indexes, 2 * (kDurabilitySegments - 1));
  // One per recovered segment (at the next segment's base) and the LEO's.
  EXPECT_EQ(snapshots, kDurabilitySegments);
  ASSERT_TRUE((*log)->Close().ok());
}

INSTANTIATE_TEST_SUITE_P(Threads, ParallelRecoveryDurabilityTest, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace daruma::testing
