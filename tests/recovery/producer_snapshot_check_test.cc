// ProducerSnapshotCheck against logs compaction thinned: Kafka's cleaner
// removes batches below snapshots it never rewrites, so a snapshot may be
// ahead of a replay of what is left, and that is no damage.
#include "recovery/producer_snapshot_check.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "log/log_file_names.h"
#include "record/record_batch_builder.h"
#include "support/test_support.h"

namespace daruma::testing {
namespace {

constexpr int64_t kProducer = 7;
constexpr int64_t kT0 = 1700000000000;

// Producer 7's one-record batch at `offset`, sequence = offset.
Bytes ProducerBatch(int64_t offset) {
  BatchBuilderOptions o;
  o.base_offset = offset;
  o.producer_id = kProducer;
  o.producer_epoch = 0;
  o.base_sequence = int32_t(offset);
  Result<Bytes> batch = BuildRecordBatch(o, {{kT0 + offset, "k", "v", {}}});
  EXPECT_TRUE(batch.ok());
  return batch.ok() ? *batch : Bytes{};
}

ProducerSnapshotEntry EntryAt(int64_t offset) {
  ProducerSnapshotEntry e;
  e.producer_id = kProducer;
  e.epoch = 0;
  e.last_sequence = int32_t(offset);
  e.last_offset = offset;
  e.offset_delta = 0;
  e.timestamp = kT0 + offset;
  return e;
}

class ProducerSnapshotCheckTest : public ::testing::Test {
 protected:
  // Writes the snapshot at `at` holding `entries`, then replays the batches
  // at `offsets` and returns the problems.
  std::vector<SnapshotProblem> Run(int64_t at, const std::vector<ProducerSnapshotEntry>& entries,
                                   const std::vector<int64_t>& offsets) {
    const std::string dir = dir_.Join("t-" + std::to_string(runs_++));
    EXPECT_TRUE(FileSystem::Default()->CreateDir(dir).ok());
    const std::string path = ProducerSnapshotFileName(dir, at);
    EXPECT_TRUE(WriteProducerSnapshot(FileSystem::Default(), path, entries).ok());
    ProducerSnapshotCheck check(FileSystem::Default(), dir, "t-0", {{at, path}},
                                kDefaultExpirationMs, /*drop_cache=*/false);
    int64_t end = 0;
    for (int64_t offset : offsets) {
      const Bytes batch = ProducerBatch(offset);
      check.OnBatch(LogEntry{0, ByteSpan(batch.data(), batch.size()), 2});
      end = offset + 1;
    }
    return check.Finish(end);
  }

  static constexpr int64_t kDefaultExpirationMs = 86400000;
  TempDir dir_;
  int runs_ = 0;
};

TEST_F(ProducerSnapshotCheckTest, ASnapshotAheadOfACompactedLogIsNoDamage) {
  // Written at offset 5 with batch 4 the producer's last; the cleaner then
  // removed 3 and 4 (batch 6 is the producer's last of the whole log).
  EXPECT_TRUE(Run(5, {EntryAt(4)}, {0, 1, 2, 6}).empty());
}

TEST_F(ProducerSnapshotCheckTest, AProducerWhoseBatchesWereAllCleanedAwayIsNoDamage) {
  ProducerSnapshotEntry gone = EntryAt(4);
  gone.producer_id = 99;
  EXPECT_TRUE(Run(5, {EntryAt(2), gone}, {0, 1, 2, 6}).empty());
  // Its last batch at offset 1 is still in the log (another producer's):
  // the file names a batch the log never had for it.
  gone = EntryAt(1);
  gone.producer_id = 99;
  EXPECT_EQ(Run(5, {EntryAt(2), gone}, {0, 1, 2, 6}).size(), 1u);
}

// The cleaner kept batch 1..2 with only its record at offset 2, whose
// timestamp is below the one the batch had (offset 1's) when the file was
// written: the file's larger timestamp is no damage, a smaller one is.
TEST_F(ProducerSnapshotCheckTest, AThinnedBatchsLowerTimestampIsNoDamage) {
  const std::string dir = dir_.Join("thinned");
  ASSERT_TRUE(FileSystem::Default()->CreateDir(dir).ok());
  BatchBuilderOptions o;
  o.base_offset = 1;
  o.producer_id = kProducer;
  o.producer_epoch = 0;
  o.base_sequence = 1;
  RecordInput kept{kT0 + 2, "k", "v", {}};
  kept.offset_delta = 1;
  Result<Bytes> thinned = BuildRecordBatch(o, {kept});
  ASSERT_TRUE(thinned.ok());
  auto run = [&](int64_t stored_timestamp) {
    ProducerSnapshotEntry stored = EntryAt(2);
    stored.offset_delta = 1;
    stored.timestamp = stored_timestamp;
    const std::string path = ProducerSnapshotFileName(dir, 3);
    EXPECT_TRUE(WriteProducerSnapshot(FileSystem::Default(), path, {stored}).ok());
    ProducerSnapshotCheck check(FileSystem::Default(), dir, "t-0", {{3, path}},
                                kDefaultExpirationMs, /*drop_cache=*/false);
    const Bytes first = ProducerBatch(0);
    check.OnBatch(LogEntry{0, ByteSpan(first.data(), first.size()), 2});
    check.OnBatch(LogEntry{0, ByteSpan(thinned->data(), thinned->size()), 2});
    return check.Finish(3);
  };
  EXPECT_TRUE(run(kT0 + 5).empty());
  EXPECT_TRUE(run(kT0 + 2).empty());
  EXPECT_EQ(run(kT0 + 1).size(), 1u);
}

// A file ahead of the log where no offsets are missing is damage, as is an
// entry at or past the snapshot's own offset, and a file behind the log (it
// missed a batch the log holds).
TEST_F(ProducerSnapshotCheckTest, AheadWithoutAGapOrBehindTheReplayIsDamage) {
  EXPECT_TRUE(Run(5, {EntryAt(4)}, {0, 1, 2, 3, 4, 5}).empty());
  std::vector<SnapshotProblem> problems = Run(4, {EntryAt(4)}, {0, 1, 2, 3, 4});
  ASSERT_EQ(problems.size(), 1u);
  problems = Run(3, {EntryAt(4)}, {0, 1, 2, 6});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].what.find("producer id 7"), std::string::npos) << problems[0].what;
  problems = Run(5, {EntryAt(0)}, {0, 2, 6});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].what.find("last offset 2"), std::string::npos) << problems[0].what;
}

}  // namespace
}  // namespace daruma::testing
