// The recovery scan thins the producer batches it retains
// (segment_recovery_scan.cc): a batch whose replay a later batch of the same
// producer makes invisible is left out. Invariant checked here over random
// producer streams: replaying what the scan retains leaves exactly the state
// that replaying every batch leaves (producer entries with their five-batch
// caches, open and completed transactions with their last stable offsets,
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
#include "record/record_batch_builder.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::MemFileSystem;

using testing::kT0;
constexpr int64_t kScanBase = 1000;

// What replaying a sequence of batches leaves, as the loader's visitor does:
// it stops at a corrupt/invalid record and fails the load on anything else
// (then only where and why count: nothing of the load survives).
struct Outcome {
  std::map<int64_t, ProducerStateEntry> producers;
  std::map<int64_t, TxnMetadata> ongoing;
  std::vector<std::string> completed;  // "pid first last aborted lso"
  int64_t stopped_at = -1;             // base offset of the batch it stopped or failed at
  StatusCode failure = StatusCode::kOk;

  bool operator==(const Outcome&) const = default;
};

std::string Describe(const Outcome& o) {
  std::string s = "producers:";
  for (const auto& [pid, e] : o.producers) {
    s += " " + std::to_string(pid) + "/e" + std::to_string(e.producer_epoch()) + "/n" +
         std::to_string(e.batches().size()) + "/last" + std::to_string(e.LastDataOffset()) + "/ts" +
         std::to_string(e.last_timestamp());
  }
  s += " ongoing:" + std::to_string(o.ongoing.size()) +
       " completed:" + std::to_string(o.completed.size()) +
       " stopped_at:" + std::to_string(o.stopped_at) + " failure:" + std::to_string(int(o.failure));
  return s;
}

Outcome Replay(const std::vector<ByteSpan>& batches) {
  MemFileSystem fs;
  EXPECT_TRUE(fs.CreateDir("/p").ok());
  auto psm = ProducerStateManager::Open("t-0", "/p", &fs);
  EXPECT_TRUE(psm.ok());
  Outcome out;
  for (ByteSpan bytes : batches) {
    RecordBatchView batch(bytes);
    if (!batch.has_producer_id()) continue;
    auto completed = (*psm)->ApplyBatch(batch);
    if (!completed.ok()) {
      const StatusCode code = completed.status().code();
      if (code == StatusCode::kCorruption || code == StatusCode::kInvalidRecord) {
        out.stopped_at = batch.base_offset();
      } else {
        // The load fails here: no state survives it, only where and why.
        return Outcome{{}, {}, {}, batch.base_offset(), code};
      }
      break;
    }
    if (*completed) {
      const CompletedTxn& txn = **completed;
      out.completed.push_back(fmt::format("{} {} {} {} {}", txn.producer_id, txn.first_offset,
                                          txn.last_offset, txn.is_aborted,
                                          (*psm)->LastStableOffset(txn)));
      if (Status s = (*psm)->CompleteTxn(txn); !s.ok()) {
        return Outcome{{}, {}, {}, batch.base_offset(), s.code()};
      }
    }
  }
  out.producers = (*psm)->ActiveProducers();
  out.ongoing = (*psm)->OngoingTxns();
  return out;
}

// A random segment: producers writing plain and transactional batches,
// markers (now and then an unreadable one or a stray one), epoch bumps and
// the odd fenced (lower) epoch, batches without a producer id, leader epoch
// changes. `producers` and `batches` size it.
class StreamGenerator {
 public:
  StreamGenerator(uint32_t seed, int producers) : rng_(seed), state_(size_t(producers)) {
    for (int p = 0; p < producers; ++p) state_[size_t(p)].epoch = int16_t(rng_() % 3);
  }

  Bytes Next() {
    const int64_t base = next_offset_;
    if (Chance(0.005)) leader_epoch_ += 1;
    if (Chance(0.03)) return Data(base, -1, 0, false, 1);
    // Skewed: producer 0 writes most, as one busy producer among idle ones.
    const size_t p = Chance(0.5) ? 0 : size_t(rng_() % state_.size());
    Producer& pr = state_[p];
    const int64_t pid = 5000 + int64_t(p);
    if (Chance(0.01)) pr.epoch = int16_t(pr.epoch + 1);
    if (Chance(0.002)) pr.epoch = int16_t(std::max(0, pr.epoch - 1));
    if (pr.in_txn && Chance(0.2)) {
      pr.in_txn = false;
      if (Chance(0.01)) return BadMarker(base, pid, pr.epoch);
      return Marker(base, pid, pr.epoch, Chance(0.3));
    }
    if (!pr.in_txn && Chance(0.005)) return Marker(base, pid, pr.epoch, Chance(0.5));
    bool txn = pr.in_txn;
    if (!pr.in_txn && Chance(0.1)) txn = pr.in_txn = true;
    // Rarely plain data inside an open transaction (fails the replay).
    if (pr.in_txn && Chance(0.0005)) txn = false;
    const int records = 1 + int(rng_() % 3);
    Bytes b = Data(base, pid, pr.epoch, txn, records, pr.seq);
    pr.seq += records;
    return b;
  }

 private:
  struct Producer {
    int16_t epoch = 0;
    int32_t seq = 0;
    bool in_txn = false;
  };

  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  Bytes Data(int64_t base, int64_t pid, int16_t epoch, bool txn, int records, int32_t seq = -1) {
    BatchBuilderOptions o;
    o.base_offset = base;
    o.partition_leader_epoch = leader_epoch_;
    o.producer_id = pid;
    o.producer_epoch = pid < 0 ? int16_t(-1) : epoch;
    o.base_sequence = pid < 0 ? -1 : seq;
    o.is_transactional = txn;
    std::vector<RecordInput> rs(static_cast<size_t>(records));
    for (int i = 0; i < records; ++i) rs[size_t(i)] = {kT0 + base + i, "k", "value", {}};
    auto b = BuildRecordBatch(o, rs);
    EXPECT_TRUE(b.ok());
    next_offset_ += records;
    return *b;
  }

  Bytes Marker(int64_t base, int64_t pid, int16_t epoch, bool abort) {
    next_offset_ += 1;
    return BuildEndTxnMarkerBatch(base, leader_epoch_, pid, epoch,
                                  abort ? ControlRecordType::kAbort : ControlRecordType::kCommit, 7,
                                  kT0 + base);
  }

  // A control batch whose record is not a marker: the replay stops there.
  Bytes BadMarker(int64_t base, int64_t pid, int16_t epoch) {
    BatchBuilderOptions o;
    o.base_offset = base;
    o.partition_leader_epoch = leader_epoch_;
    o.producer_id = pid;
    o.producer_epoch = epoch;
    o.is_transactional = true;
    o.is_control = true;
    auto b = BuildRecordBatch(o, {{kT0 + base, "not-a-key", "x", {}}});
    EXPECT_TRUE(b.ok());
    next_offset_ += 1;
    return *b;
  }

  std::mt19937 rng_;
  std::vector<Producer> state_;
  int64_t next_offset_ = kScanBase;
  int32_t leader_epoch_ = 3;
};

struct ScannedSegment {
  std::vector<Bytes> batches;
  SegmentRecoveryScan scan;
};

ScannedSegment ScanRandomSegment(uint32_t seed, int producers, int count) {
  ScannedSegment seg;
  StreamGenerator gen(seed, producers);
  Bytes file;
  for (int i = 0; i < count; ++i) {
    seg.batches.push_back(gen.Next());
    file.insert(file.end(), seg.batches.back().begin(), seg.batches.back().end());
  }
  MemFileSystem fs;
  EXPECT_TRUE(fs.CreateDir("/d").ok());
  auto f = fs.Open("/d/00000000000000001000.log", OpenMode::kCreate);
  EXPECT_TRUE(f.ok());
  EXPECT_TRUE((*f)->WriteAt(0, file).ok());
  seg.scan = ScanSegmentForRecovery(f->get(), "/d/00000000000000001000.log", kScanBase,
                                    int64_t(file.size()), 4096);
  return seg;
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
void CheckThinnedReplay(uint32_t seed, int producers, int count, Outcome* want, int64_t* thinned) {
  ScannedSegment seg = ScanRandomSegment(seed, producers, count);
  ASSERT_TRUE(seg.scan.error.ok()) << seg.scan.error.ToString();
  ASSERT_FALSE(seg.scan.corrupt_batch) << seg.scan.stop_reason;
  ASSERT_EQ(seg.scan.batch_count, count);
  *want = Replay(Spans(seg.batches));
  const Outcome got = Replay(Spans(seg.scan));
  ASSERT_EQ(got, *want) << "seed " << seed << "\nwant " << Describe(*want) << "\ngot  "
                        << Describe(got);
  *thinned += seg.scan.thinned_batches;
  for (size_t i = 1; i < seg.scan.batches.size(); ++i) {
    ASSERT_LT(seg.scan.batches[i - 1].ordinal, seg.scan.batches[i].ordinal);
    ASSERT_EQ(seg.scan.batches[i].end - seg.scan.batches[i].position,
              int64_t(seg.batches[size_t(seg.scan.batches[i].ordinal)].size()));
  }
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
