// Producer snapshots written by Kafka (shared fixtures, kafka-generated):
// every file reads, re-encodes byte for byte, holds what batches.csv implies,
// and replaying each segment from one snapshot reproduces the next one.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "common/file_system.h"
#include "log/log_file_names.h"
#include "log/producer_snapshot_file.h"
#include "log/producer_state_manager.h"
#include "record/file_batch_reader.h"
#include "support/batches_csv.h"
#include "support/test_support.h"

namespace daruma {
namespace {

namespace fs = std::filesystem;
using testing::FixturesDir;
using testing::ReadFileToString;
using testing::TempDir;

constexpr int64_t kSnapshotFixtureTime = 1700000000000;

struct SnapshotScenario {
  std::string name;
  std::string partition;
};

const std::vector<SnapshotScenario>& Scenarios() {
  static const std::vector<SnapshotScenario> scenarios = {
      {"multi-segment-idempotent", "fixture-idem-0"},
      {"transactional", "fixture-txn-0"},
      {"compressed", "fixture-compressed-0"},
      {"unclean-torn-tail", "fixture-crash-0"},
  };
  return scenarios;
}

std::string SnapshotPartitionDir(const SnapshotScenario& s) {
  return FixturesDir() + "/kafka-generated/" + s.name + "/logdir/" + s.partition;
}

// Sorted offsets of the files in `dir` ending with `suffix`.
std::vector<int64_t> OffsetsWithSuffix(const std::string& dir, const std::string& suffix) {
  std::vector<int64_t> offsets;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!HasSuffix(name, suffix)) continue;
    auto offset = OffsetFromFileName(name);
    if (offset.ok()) offsets.push_back(*offset);
  }
  std::sort(offsets.begin(), offsets.end());
  return offsets;
}

using CsvBatch = testing::BatchesCsvRow;

std::vector<CsvBatch> ReadBatchesCsv(const SnapshotScenario& s) {
  return testing::ReadBatchesCsv(FixturesDir() + "/kafka-generated/" + s.name + "/batches.csv");
}

TEST(ProducerSnapshotCompatTest, EveryFixtureSnapshotReadsAndReencodesByteForByte) {
  DARUMA_REQUIRE_FIXTURES();
  int files = 0;
  for (const SnapshotScenario& s : Scenarios()) {
    for (int64_t offset : OffsetsWithSuffix(SnapshotPartitionDir(s), ".snapshot")) {
      const std::string path = ProducerSnapshotFileName(SnapshotPartitionDir(s), offset);
      auto entries = ReadProducerSnapshot(FileSystem::Default(), path);
      ASSERT_TRUE(entries.ok()) << entries.status().ToString();
      const Bytes rewritten = EncodeProducerSnapshot(*entries);
      EXPECT_EQ(std::string(rewritten.begin(), rewritten.end()), ReadFileToString(path)) << path;
      ++files;
    }
  }
  EXPECT_EQ(files, 29);
}

// The single-producer scenarios: each snapshot holds exactly the producer's
// last batch below the snapshot offset, as listed in batches.csv.
TEST(ProducerSnapshotCompatTest, IdempotentSnapshotsHoldTheLastBatchBelowTheirOffset) {
  DARUMA_REQUIRE_FIXTURES();
  const std::map<std::string, int64_t> producer = {
      {"multi-segment-idempotent", 1000}, {"compressed", 5000}, {"unclean-torn-tail", 6000}};
  for (const SnapshotScenario& s : Scenarios()) {
    if (!producer.count(s.name)) continue;
    const int64_t pid = producer.at(s.name);
    const std::vector<CsvBatch> batches = ReadBatchesCsv(s);
    for (int64_t offset : OffsetsWithSuffix(SnapshotPartitionDir(s), ".snapshot")) {
      SCOPED_TRACE(s.name + " snapshot " + std::to_string(offset));
      const CsvBatch* last = nullptr;
      for (const CsvBatch& b : batches) {
        if (b.producer_id == pid && b.last_offset < offset) last = &b;
      }
      ASSERT_NE(last, nullptr);
      auto entries = ReadProducerSnapshot(
          FileSystem::Default(), ProducerSnapshotFileName(SnapshotPartitionDir(s), offset));
      ASSERT_TRUE(entries.ok());
      ASSERT_EQ(entries->size(), 1u);
      const ProducerSnapshotEntry& e = entries->front();
      EXPECT_EQ(e.producer_id, pid);
      EXPECT_EQ(e.epoch, last->producer_epoch);
      EXPECT_EQ(e.last_offset, last->last_offset);
      EXPECT_EQ(e.offset_delta, last->last_offset - last->base_offset);
      EXPECT_EQ(e.last_sequence, last->base_sequence + e.offset_delta);
      EXPECT_EQ(e.timestamp, last->max_timestamp);
      EXPECT_EQ(e.coordinator_epoch, -1);
      EXPECT_EQ(e.current_txn_first_offset, -1);
    }
  }
}

TEST(ProducerSnapshotCompatTest, TransactionalLeoSnapshotHoldsTheOpenTransaction) {
  DARUMA_REQUIRE_FIXTURES();
  const SnapshotScenario& s = Scenarios()[1];
  auto entries = ReadProducerSnapshot(FileSystem::Default(),
                                      ProducerSnapshotFileName(SnapshotPartitionDir(s), 476));
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 3u);
  // Kafka's HashMap order: 2000 and 4000 in bucket 0, 3000 in bucket 8.
  EXPECT_EQ((*entries)[0].producer_id, 2000);
  EXPECT_EQ((*entries)[1].producer_id, 4000);
  EXPECT_EQ((*entries)[2].producer_id, 3000);
  EXPECT_EQ((*entries)[2].epoch, 1);  // bumped after round 20
  EXPECT_EQ((*entries)[2].current_txn_first_offset, 470);
  EXPECT_EQ((*entries)[0].current_txn_first_offset, -1);  // P1 committed round 39
  EXPECT_EQ((*entries)[0].coordinator_epoch, 5);
  EXPECT_EQ((*entries)[1].coordinator_epoch, -1);  // never in a transaction
}

TEST(ProducerSnapshotCompatTest, ManagerLoadsTransactionalStateLikeKafka) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  testing::CopyTree(SnapshotPartitionDir(Scenarios()[1]), tmp.path());
  auto opened = ProducerStateManager::Open("fixture-txn-0", tmp.path(), FileSystem::Default());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ProducerStateManager& m = **opened;
  EXPECT_EQ(m.SnapshotOffsets(), (std::vector<int64_t>{80, 159, 237, 315, 393, 472, 476}));
  // Loaded with a clock near the data: all three producers.
  ASSERT_TRUE(m.TruncateAndReload(0, 476, kSnapshotFixtureTime + 3600000).ok());
  EXPECT_EQ(m.MapEndOffset(), 476);
  EXPECT_EQ(m.ActiveProducers().size(), 3u);
  EXPECT_EQ(m.FirstUnstableOffset(), 470);
  const Bytes again = EncodeProducerSnapshot(m.SnapshotEntries());
  EXPECT_EQ(std::string(again.begin(), again.end()),
            ReadFileToString(ProducerSnapshotFileName(tmp.path(), 476)));
  // Loaded a year later, as expected-load.txt: only P2 with its open txn.
  TempDir tmp2;
  testing::CopyTree(SnapshotPartitionDir(Scenarios()[1]), tmp2.path());
  auto late = ProducerStateManager::Open("fixture-txn-0", tmp2.path(), FileSystem::Default());
  ASSERT_TRUE(late.ok());
  ASSERT_TRUE((*late)->TruncateAndReload(0, 476, kSnapshotFixtureTime + 365LL * 86400000).ok());
  ASSERT_EQ((*late)->ActiveProducers().size(), 1u);
  EXPECT_EQ((*late)->ActiveProducers().begin()->first, 3000);
  EXPECT_EQ((*late)->FirstUnstableOffset(), 470);
}

// Replays every batch of `segment`'s .log into `m` (replication semantics).
void ReplaySegment(const std::string& dir, int64_t segment, ProducerStateManager* m) {
  auto file = FileSystem::Default()->Open(LogFileName(dir, segment), OpenMode::kRead);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  FileBatchReader reader(file->get());
  while (auto entry = reader.Next()) {
    const RecordBatchView batch = entry->batch();
    auto completed = m->ApplyBatch(batch);
    ASSERT_TRUE(completed.ok()) << completed.status().ToString();
    if (*completed) {
      ASSERT_TRUE(m->CompleteTxn(**completed).ok());
    }
    m->UpdateMapEndOffset(batch.next_offset());
  }
  EXPECT_EQ(reader.stop_reason(), StopReason::kEndOfFile) << reader.stop_message();
}

// From each snapshot (or empty state at offset 0), replaying the segment that
// starts there must give exactly the bytes of Kafka's next snapshot.
TEST(ProducerSnapshotCompatTest, ReplayingEachSegmentReproducesKafkasNextSnapshot) {
  DARUMA_REQUIRE_FIXTURES();
  int compared = 0;
  for (const SnapshotScenario& s : Scenarios()) {
    const std::string dir = SnapshotPartitionDir(s);
    const std::vector<int64_t> segments = OffsetsWithSuffix(dir, ".log");
    const std::vector<int64_t> snapshots = OffsetsWithSuffix(dir, ".snapshot");
    for (size_t i = 0; i < segments.size(); ++i) {
      const int64_t start = segments[i];
      const int64_t next_snapshot = i + 1 < segments.size() ? segments[i + 1] : snapshots.back();
      if (next_snapshot <= start) continue;  // no snapshot after the last segment
      const bool has_start = std::binary_search(snapshots.begin(), snapshots.end(), start);
      if (start != 0 && !has_start) continue;
      SCOPED_TRACE(s.name + " segment " + std::to_string(start));
      TempDir tmp;
      auto opened = ProducerStateManager::Open(s.partition, tmp.path(), FileSystem::Default());
      ASSERT_TRUE(opened.ok());
      ProducerStateManager& m = **opened;
      if (has_start) {
        auto entries =
            ReadProducerSnapshot(FileSystem::Default(), ProducerSnapshotFileName(dir, start));
        ASSERT_TRUE(entries.ok());
        for (const auto& e : *entries) m.LoadProducerEntry(FromSnapshotEntry(e));
      }
      m.UpdateMapEndOffset(start);
      ReplaySegment(dir, start, &m);
      ASSERT_EQ(m.MapEndOffset(), next_snapshot);
      auto path = m.TakeSnapshot();
      ASSERT_TRUE(path.ok() && *path);
      EXPECT_EQ(ReadFileToString(**path),
                ReadFileToString(ProducerSnapshotFileName(dir, next_snapshot)));
      ++compared;
    }
  }
  EXPECT_GE(compared, 25);
}

}  // namespace
}  // namespace daruma
