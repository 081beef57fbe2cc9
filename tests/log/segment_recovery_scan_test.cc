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
  // The aborted transactions, "pid first last lso": what the transaction
  // index gets. A commit leaves no trace of its own (the scan may leave a
  // committed transaction out whole), only in the producers' state.
  std::vector<std::string> aborted;
  int64_t stopped_at = -1;  // base offset of the batch it stopped or failed at
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
       " aborted:" + std::to_string(o.aborted.size()) +
       " stopped_at:" + std::to_string(o.stopped_at) + " failure:" + std::to_string(int(o.failure));
  return s;
}

// `local_lsos`, when given, holds each batch's Batch::local_lso (what the
// scan knows of the transactions it left out), as the loader's fold uses it.
Outcome Replay(const std::vector<ByteSpan>& batches,
               const std::vector<int64_t>* local_lsos = nullptr) {
  MemFileSystem fs;
  EXPECT_TRUE(fs.CreateDir("/p").ok());
  auto psm = ProducerStateManager::Open("t-0", "/p", &fs);
  EXPECT_TRUE(psm.ok());
  Outcome out;
  for (size_t i = 0; i < batches.size(); ++i) {
    RecordBatchView batch(batches[i]);
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
      int64_t lso = (*psm)->LastStableOffset(txn);
      if (local_lsos != nullptr) lso = std::min(lso, (*local_lsos)[i]);
      if (txn.is_aborted) {
        out.aborted.push_back(
            fmt::format("{} {} {} {}", txn.producer_id, txn.first_offset, txn.last_offset, lso));
      }
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

// Short transactions from many producers, as transactional applications write
// them (issue 23's txn_aborts shapes): 1-10 data batches each, one in ten
// aborted, now and then an epoch bump, a leader change, an emptied control
// batch or an unreadable marker. Committed transactions are left out whole
// where batch_thinner.cc allows it, and the aborts' last stable offsets stay
// Kafka's although the transactions open around them were left out.
std::vector<Bytes> ShortTransactions(uint32_t seed, int producers, int count, bool rare_events) {
  std::mt19937 rng(seed);
  auto chance = [&rng](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  struct Producer {
    int16_t epoch = 0;
    int32_t seq = 0;
    int left = 0;  // data batches left in its open transaction; 0: none open
  };
  std::vector<Producer> state(static_cast<size_t>(producers));
  std::vector<Bytes> out;
  int64_t offset = kScanBase;
  int32_t leader_epoch = 1;
  while (int(out.size()) < count) {
    const size_t p = size_t(rng() % uint64_t(producers));
    Producer& pr = state[p];
    const int64_t pid = 7000 + int64_t(p);
    if (rare_events && chance(0.002)) leader_epoch++;
    if (rare_events && pr.left == 0 && chance(0.003)) pr.epoch++;
    if (pr.left == 1 && pr.seq > 0 && chance(0.5)) {
      // The transaction's last data batch was written: its marker.
      if (rare_events && chance(0.002)) {
        BatchBuilderOptions o;
        o.base_offset = offset;
        o.partition_leader_epoch = leader_epoch;
        o.producer_id = pid;
        o.producer_epoch = pr.epoch;
        o.is_transactional = true;
        o.is_control = true;
        auto bad = BuildRecordBatch(o, {{kT0 + offset, "not-a-key", "x", {}}});
        EXPECT_TRUE(bad.ok());
        out.push_back(*bad);
      } else {
        out.push_back(BuildEndTxnMarkerBatch(
            offset, leader_epoch, pid, pr.epoch,
            chance(0.1) ? ControlRecordType::kAbort : ControlRecordType::kCommit,
            int32_t(rng() % 3), kT0 + offset));
      }
      offset++;
      pr.left = 0;
      continue;
    }
    if (rare_events && chance(0.001)) {
      // An emptied control batch (the cleaner's): closes nothing.
      Bytes empty = BuildEndTxnMarkerBatch(offset, leader_epoch, pid, pr.epoch,
                                           ControlRecordType::kCommit, 0, kT0 + offset);
      empty.resize(kRecordBatchOverhead);
      StoreBe32(empty.data() + batch_layout::kLength, uint32_t(kRecordBatchOverhead - 12));
      StoreBe32(empty.data() + batch_layout::kRecordsCount, 0);
      RewriteBatchCrc(empty);
      out.push_back(empty);
      offset++;
      continue;
    }
    if (pr.left <= 1) pr.left = 2 + int(rng() % 10);  // opens one: 1-10 data batches
    BatchBuilderOptions o;
    o.base_offset = offset;
    o.partition_leader_epoch = leader_epoch;
    o.producer_id = pid;
    o.producer_epoch = pr.epoch;
    o.base_sequence = pr.seq;
    o.is_transactional = true;
    auto b = BuildRecordBatch(o, {{kT0 + offset, "k", "v", {}}});
    EXPECT_TRUE(b.ok());
    out.push_back(*b);
    offset++;
    pr.seq++;
    pr.left--;
  }
  return out;
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
