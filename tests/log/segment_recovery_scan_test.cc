// The recovery scan thins the producer batches it retains
// (segment_recovery_scan.cc): a batch whose replay a later batch of the same
// producer makes invisible is left out. Invariant checked here over random
// producer streams: replaying what the scan retains leaves exactly the state
// that replaying every batch leaves (producer entries with their five-batch
// caches, open and aborted transactions with their last stable offsets,
// where and how the replay stops), while what is retained stays bounded by the
// producers, not the batches.
#include "log/segment_recovery_scan.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "log/producer_state_manager.h"
#include "log/scan_test_streams.h"
#include "record/record_batch_builder.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::MemFileSystem;

using testing::Describe;
using testing::kScanBase;
using testing::Outcome;
using testing::Replay;
using testing::ShortTransactions;
using testing::StreamGenerator;

struct ScannedSegment {
  std::vector<Bytes> batches;
  SegmentRecoveryScan scan;
};

ScannedSegment ScanBatches(std::vector<Bytes> batches) {
  ScannedSegment seg;
  seg.batches = std::move(batches);
  Bytes file;
  for (const Bytes& b : seg.batches) file.insert(file.end(), b.begin(), b.end());
  MemFileSystem fs;
  EXPECT_TRUE(fs.CreateDir("/d").ok());
  auto f = fs.Open("/d/00000000000000001000.log", OpenMode::kCreate);
  EXPECT_TRUE(f.ok());
  EXPECT_TRUE((*f)->WriteAt(0, file).ok());
  seg.scan = ScanSegmentForRecovery(f->get(), "/d/00000000000000001000.log", kScanBase,
                                    int64_t(file.size()), 4096);
  return seg;
}

ScannedSegment ScanRandomSegment(uint32_t seed, int producers, int count) {
  StreamGenerator gen(seed, producers);
  std::vector<Bytes> batches;
  for (int i = 0; i < count; ++i) batches.push_back(gen.Next());
  return ScanBatches(std::move(batches));
}

std::vector<ByteSpan> Spans(const std::vector<Bytes>& batches) {
  return std::vector<ByteSpan>(batches.begin(), batches.end());
}

std::vector<ByteSpan> Spans(const SegmentRecoveryScan& scan) {
  std::vector<ByteSpan> out;
  for (const SegmentRecoveryScan::Batch& b : scan.batches) out.push_back(scan.BytesOf(b));
  return out;
}

// Scans a random segment of `count` batches from `producers` producers:
// replaying the batches the scan retained must leave the state a replay of
// every batch leaves (*want), and the retained batches keep file order,
// ordinals and positions.
void CheckReplayOf(const ScannedSegment& seg, uint32_t seed, int count, Outcome* want,
                   int64_t* thinned) {
  ASSERT_TRUE(seg.scan.error.ok()) << seg.scan.error.ToString();
  ASSERT_FALSE(seg.scan.corrupt_batch) << seg.scan.stop_reason;
  ASSERT_EQ(seg.scan.batch_count, count);
  *want = Replay(Spans(seg.batches));
  std::vector<int64_t> local_lsos;
  for (const SegmentRecoveryScan::Batch& b : seg.scan.batches) local_lsos.push_back(b.local_lso);
  const Outcome got = Replay(Spans(seg.scan), &local_lsos);
  ASSERT_EQ(got, *want) << "seed " << seed << "\nwant " << Describe(*want) << "\ngot  "
                        << Describe(got);
  *thinned += seg.scan.thinned_batches;
  for (size_t i = 1; i < seg.scan.batches.size(); ++i) {
    ASSERT_LT(seg.scan.batches[i - 1].ordinal, seg.scan.batches[i].ordinal);
    ASSERT_EQ(seg.scan.batches[i].end - seg.scan.batches[i].position,
              int64_t(seg.batches[size_t(seg.scan.batches[i].ordinal)].size()));
  }
}

void CheckThinnedReplay(uint32_t seed, int producers, int count, Outcome* want, int64_t* thinned) {
  CheckReplayOf(ScanRandomSegment(seed, producers, count), seed, count, want, thinned);
}

TEST(SegmentRecoveryScanTest, ThinnedReplayLeavesTheStateOfTheFullReplay) {
  int64_t thinned = 0;
  int64_t stopped = 0;
  int64_t failed = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    Outcome want;
    ASSERT_NO_FATAL_FAILURE(
        CheckThinnedReplay(seed, 1 + int(seed % 7) * int(seed % 5), 600, &want, &thinned));
    stopped += want.stopped_at >= 0 && want.failure == StatusCode::kOk;
    failed += want.failure != StatusCode::kOk;
  }
  // The streams exercise every path: thinning, stops and failed replays.
  EXPECT_GT(thinned, 300 * 200);
  EXPECT_GT(stopped, 0);
  EXPECT_GT(failed, 0);
}

// More producers than a chunk of ring slots (64) and than the index's first
// table, so that lookups cross chunks and growths, batched in groups.
TEST(SegmentRecoveryScanTest, ThinnedReplayWithHundredsOfProducers) {
  int64_t thinned = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    Outcome want;
    ASSERT_NO_FATAL_FAILURE(CheckThinnedReplay(seed, 60 + int(seed) * 25, 4000, &want, &thinned));
  }
  EXPECT_GT(thinned, 12 * 1000);
}

TEST(SegmentRecoveryScanTest, ShortCommittedTransactionsAreLeftOutWhole) {
  for (bool rare_events : {false, true}) {
    int64_t thinned = 0;
    int64_t batches = 0;
    int64_t aborts = 0;
    for (uint32_t seed = 1; seed <= 40; ++seed) {
      const int producers = 1 + int(seed % 8) * int(seed % 13);
      const int count = 3000;
      Outcome want;
      ASSERT_NO_FATAL_FAILURE(
          CheckReplayOf(ScanBatches(ShortTransactions(seed, producers, count, rare_events)), seed,
                        count, &want, &thinned))
          << "rare events " << rare_events;
      batches += count;
      aborts += int64_t(want.aborted.size());
    }
    EXPECT_GT(aborts, 500);
    // Without rare events, all but the aborted transactions, the producers'
    // last five batches and their last markers go.
    if (!rare_events) {
      EXPECT_GT(thinned, batches * 8 / 10);
    }
  }
}

TEST(SegmentRecoveryScanTest, OneIdempotentProducerRetainsABoundedTail) {
  MemFileSystem fs;
  ASSERT_TRUE(fs.CreateDir("/d").ok());
  Bytes file;
  const int kBatches = 100000;
  for (int i = 0; i < kBatches; ++i) {
    BatchBuilderOptions o;
    o.base_offset = kScanBase + i;
    o.partition_leader_epoch = 0;
    o.producer_id = 42;
    o.producer_epoch = 0;
    o.base_sequence = i;
    auto b = BuildRecordBatch(o, {{kT0 + i, "k", "v", {}}});
    ASSERT_TRUE(b.ok());
    file.insert(file.end(), b->begin(), b->end());
  }
  auto f = fs.Open("/d/00000000000000001000.log", OpenMode::kCreate);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->WriteAt(0, file).ok());
  const SegmentRecoveryScan scan =
      ScanSegmentForRecovery(f->get(), "/d/x.log", kScanBase, int64_t(file.size()), 4096);
  ASSERT_EQ(scan.batch_count, kBatches);
  // The first batch (it meets whatever state earlier segments left) and the
  // last five (the producer's cache).
  ASSERT_EQ(scan.batches.size(), 6u);
  EXPECT_EQ(scan.thinned_batches, kBatches - 6);
  EXPECT_EQ(scan.batches[0].ordinal, 0);
  EXPECT_EQ(scan.batches[1].ordinal, kBatches - 5);
  EXPECT_EQ(scan.batches[5].prev_v2_next_offset, kScanBase + kBatches - 1);
}

}  // namespace
}  // namespace daruma
