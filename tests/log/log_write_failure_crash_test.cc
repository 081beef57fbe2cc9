// A write that fails partway (Log::write_failure): whichever file operation
// of an append, roll or flush fails, the log hands out no offset twice,
// claims nothing durable, and stops writing: later appends, flushes and Close
// return the first failure, and the listener hears of it once. Before this,
// an index write failing after the records were written left the log end
// offset behind, and the next append wrote the same offsets again (found by
// the consumer groups' crash matrix).
#include <gtest/gtest.h>

#include <set>

#include "common/clock.h"
#include "log/log.h"
#include "record/file_batch_reader.h"
#include "record/record_batch_builder.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"

namespace daruma::testing {
namespace {

constexpr char kFailingLogDir[] = "/data/logs";
const TopicPartition kFailingTp{"orders", 0};

Bytes OneBatch(int i) {
  RecordInput record;
  record.timestamp = 1700000000000 + i;
  record.value = "value " + std::to_string(i) + std::string(60, 'x');
  auto batch = BuildRecordBatch({}, {record});
  EXPECT_TRUE(batch.ok());
  return batch.ok() ? *batch : Bytes{};
}

// Base offsets of every batch in the partition's .log files, in file order.
std::vector<int64_t> BaseOffsetsOnDisk(MemFileSystem* fs, const std::string& dir) {
  std::vector<int64_t> out;
  for (const auto& [path, bytes] : fs->Files(dir)) {
    if (!path.ends_with(".log")) continue;
    auto file = fs->Open(path, OpenMode::kRead);
    EXPECT_TRUE(file.ok());
    FileBatchReader reader(file->get());
    while (auto entry = reader.Next()) out.push_back(entry->prefix_offset());
  }
  return out;
}

TEST(LogWriteFailureCrashTest, AFailedWriteStopsTheLogAndNoOffsetIsReused) {
  // Each run fails one more operation of the workload (EIO, then ENOSPC),
  // until the workload runs through without meeting the failure.
  int failures_met = 0;
  for (uint64_t fail_at = 1;; ++fail_at) {
    SCOPED_TRACE("failing op " + std::to_string(fail_at));
    MemFileSystem base;
    ASSERT_TRUE(base.CreateDir(kFailingLogDir).ok());
    FaultInjectionFileSystem fs(&base);
    ManualClock clock(1700000000000);
    LogConfig config;
    config.segment_bytes = 600;  // rolls every few batches
    config.segment_index_bytes = 1200;
    config.index_interval_bytes = 64;
    config.flush_messages = 3;
    const std::string dir = JoinPath(kFailingLogDir, LogDirName(kFailingTp));
    auto log = Log::CreateEmpty(&fs, dir, kFailingTp, config, &clock);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    int heard = 0;
    (*log)->SetWriteFailureListener([&heard](const Status&) { ++heard; });
    fs.FailAt(fs.op_count() + fail_at,
              fail_at % 2 == 0 ? InjectedError::kEnospc : InjectedError::kEio);
    Status failure;
    int64_t acked_end = 0;  // every offset below was appended and acknowledged
    for (int i = 0; i < 12 && failure.ok(); ++i) {
      auto info = (*log)->AppendAsLeader(OneBatch(i), 0);
      if (info.ok()) {
        EXPECT_EQ(info->first_offset, acked_end);
        acked_end = info->last_offset + 1;
      } else {
        failure = info.status();
      }
    }
    if (failure.ok()) {
      EXPECT_TRUE((*log)->write_failure().ok());
      EXPECT_EQ(heard, 0);
      if (fail_at > fs.op_count()) break;  // the workload no longer reaches it
      continue;  // a failed op outside a write path (none expected), or a read
    }
    ++failures_met;
    EXPECT_TRUE(failure.IsIoError()) << failure.ToString();
    // The failure may have come after the records were written (index,
    // producer state, flush): either way the log stopped.
    const Status stopped = (*log)->write_failure();
    if (!stopped.ok()) {
      EXPECT_EQ(heard, 1);
      EXPECT_FALSE((*log)->AppendAsLeader(OneBatch(99), 0).ok());
      EXPECT_FALSE((*log)->FlushAll().ok());
      EXPECT_FALSE((*log)->Close().ok());
      EXPECT_EQ(heard, 1);
    } else {
      // Stopped before any byte was written (the roll's new files, the
      // epoch checkpoint): the next append goes on at the same offset.
      auto next = (*log)->AppendAsLeader(OneBatch(100), 0);
      if (next.ok()) {
        EXPECT_EQ(next->first_offset, acked_end);
      }
    }
    const std::vector<int64_t> bases = BaseOffsetsOnDisk(&base, dir);
    std::set<int64_t> seen;
    for (int64_t b : bases) EXPECT_TRUE(seen.insert(b).second) << "offset " << b << " reused";
    EXPECT_TRUE(std::is_sorted(bases.begin(), bases.end()));
  }
  EXPECT_GT(failures_met, 10);
}

}  // namespace
}  // namespace daruma::testing
