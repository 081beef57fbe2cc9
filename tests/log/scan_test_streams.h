// Random producer streams for the recovery scan's tests, and what replaying
// them leaves (segment_recovery_scan_test.cc, segment_scan_split_test.cc):
// the scan may leave batches out or split a segment, and replaying what it
// retains must leave what replaying every batch leaves.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "log/producer_state_manager.h"
#include "record/control_record.h"
#include "record/record_batch.h"
#include "record/record_batch_builder.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma::testing {

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

inline std::string Describe(const Outcome& o) {
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
inline Outcome Replay(const std::vector<ByteSpan>& batches,
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

// Short transactions from many producers, as transactional applications write
// them (issue 23's txn_aborts shapes): 1-10 data batches each, one in ten
// aborted, now and then an epoch bump, a leader change, an emptied control
// batch or an unreadable marker. Committed transactions are left out whole
// where batch_thinner.cc allows it, and the aborts' last stable offsets stay
// Kafka's although the transactions open around them were left out.
inline std::vector<Bytes> ShortTransactions(uint32_t seed, int producers, int count,
                                            bool rare_events) {
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

}  // namespace daruma::testing
