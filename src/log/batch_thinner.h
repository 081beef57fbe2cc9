// BatchThinner: chooses which producer batches a recovery scan retains
// (log/segment_recovery_scan.h), leaving out those whose replay a later batch
// of the same segment provably makes invisible. batch_thinner.cc states the
// rules; SegmentRecoveryScanTest replays what is retained against a replay of
// every batch over random producer streams.
//
// Internal to ScanSegmentForRecovery; not thread-safe (one per scan).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/dense_id_index.h"
#include "log/producer_state_entry.h"
#include "log/segment_recovery_scan.h"
#include "record/file_batch_reader.h"

namespace daruma {

// Makes room in `v` (a vector the scan fills) for `needed` more elements,
// `scanned` of the segment's `total` bytes into the scan. How much a segment
// retains is known only as it is read: a third of its batches where
// transactions are short and cannot be left out, almost none for one
// idempotent producer. Growing by doubling copied each vector a few times
// over and faulted in twice its final memory; 1 GiB of 100-byte
// transactional batches spent half its recovery there. So the count seen so
// far is extrapolated to the whole segment (+1/8) once a sixty-fourth of it
// is read, and the vector grows to that at once, or at least doubles.
template <typename Vector>
void MakeRoom(Vector* v, size_t needed, int64_t scanned, int64_t total) {
  if (v->capacity() - v->size() >= needed) return;
  size_t want = std::max(v->capacity() * 2, v->size() + needed);
  if (scanned > 0 && scanned >= total / 64) {
    const double expected = double(v->size()) * double(total) / double(scanned);
    want = std::max(want, v->size() + needed + size_t(expected + expected / 8));
  }
  v->reserve(want);
}

// Retains `e` in scan->batches, a control batch with its bytes, as the scan's
// running values stand before it; `total` is the size of the scanned region
// (MakeRoom). Returns the retained record.
SegmentRecoveryScan::Batch& AppendRetained(const LogEntry& e, SegmentRecoveryScan* scan,
                                           int64_t total);

class BatchThinner {
 public:
  // `total`: the size of the scanned region (MakeRoom).
  BatchThinner(SegmentRecoveryScan* out, int64_t total);
  ~BatchThinner();

  // Takes `e`, a v2 batch with a producer id, the scan's running values not
  // yet counting it; `raises_epoch` says it must stay for a new leader epoch.
  void Add(const LogEntry& e, const SegmentRecoveryScan& scan, bool raises_epoch);

  // Moves what still waits to the output and puts it in file order; returns
  // how many batches were left out.
  int64_t Finish();

 private:
  static constexpr size_t kCache = ProducerStateEntry::kNumBatchesToRetain;
  // i mod n for i < 2n: the rings' indices, without a division per batch.
  static constexpr size_t Wrap(size_t i, size_t n) { return i >= n ? i - n : i; }
  static_assert(kCache <= 8, "Run has a bit per slot");
  using Batch = SegmentRecoveryScan::Batch;

  // A producer's data batches of its current epoch since the last barrier,
  // oldest first: a ring of at most kCache in slots_[r], whose bookkeeping
  // is runs_[r]. Every batch reads its producer's Run, which is kept apart
  // from the slots and small (16 bytes) so that the Runs of 10,000 producers
  // stay in cache; reading the oldest slot's candidate flag from the slots'
  // cache line was a quarter of the scan's time.
  struct Run {
    bool seen = false;  // a batch of the producer was scanned in this segment
    bool previous_transactional = false;
    // The producer's last batch was plain data or a COMMIT/ABORT marker
    // (same epoch, no barrier since): it has no open transaction, so its
    // next transactional batch opens one.
    bool may_open = false;
    uint8_t head = 0;
    uint8_t count = 0;
    uint8_t candidates = 0;  // bit k: slots_[r][k] holds a candidate's record
    int16_t epoch = 0;
    uint64_t generation = 0;
  };
  using Slots = std::array<Batch, kCache>;  // candidates' records only
  // Slots live in chunks that never move: a vector of them moved megabytes
  // at each growth with 10,000 producers and held old and new at once.
  // Chunks of 64 runs (40 KiB), built whole even for one producer: chunks of
  // 8 runs saved ~1 % of a crashed partition's load but cost the 100-byte
  // scans 3-5 % (idempotent_100b 49.4-49.9 -> 51.4-51.5 ns per batch,
  // producers_10k 77.5-79.4 -> 81.2-82.0, interleaved, 2026-12-06).
  static constexpr uint32_t kChunkBits = 6;

  // A committed transaction that may be left out whole (batch_thinner.cc,
  // "Whole transactions"): its opening batch, its commit marker, and what
  // still decides it.
  static constexpr size_t kMarkerBytes = 128;  // a usual marker batch is 78
  struct PendingTxn {
    uint32_t tag = 0;           // marks its data batches' ring slots (TxnRun)
    uint8_t in_ring = 0;        // its data batches still in the ring
    bool opening_held = false;  // its payload's `opening` holds the opening batch
    bool committed = false;     // its payload's `marker` (and bytes) hold its commit
    bool confirmed = false;     // a later COMMIT/ABORT of the producer followed
  };
  // The records a PendingTxn may have to output, apart from it: every data
  // batch of a transaction reads and writes the PendingTxns, and with these
  // inside them a producer's bookkeeping spread over 1.2 KiB.
  struct TxnPayload {
    Batch opening;
    Batch marker;
    std::array<uint8_t, kMarkerBytes> marker_bytes{};
  };
  // Per producer, from its first transaction opened in this segment.
  static constexpr size_t kMaxPending = 3;
  struct TxnRun {
    std::array<uint32_t, kCache> slot_tag{};  // the PendingTxn a slot's batch belongs to, or 0
    // Where in txns that PendingTxn was when the slot was filled; it moves
    // only when one before it leaves from the middle (Remove).
    std::array<uint8_t, kCache> slot_txn{};
    uint8_t opening_slots = 0;  // bit k: slot k holds an opening batch
    uint32_t next_tag = 1;
    // The waiting transactions, oldest first: At(0) .. At(pending - 1), a
    // ring from txns[first], so that the oldest, usually the one decided,
    // leaves without moving the others.
    uint8_t first = 0;
    uint8_t pending = 0;
    bool open = false;        // Back() is the producer's open transaction
    int64_t open_index = -1;  // its open transaction in open_local_, or -1
    std::array<PendingTxn, kMaxPending> txns;
    std::array<TxnPayload, kMaxPending> payloads;  // payloads[i] is txns[i]'s

    PendingTxn& At(size_t i) { return txns[Wrap(first + i, kMaxPending)]; }
    PendingTxn& Back() { return At(pending - 1u); }
    TxnPayload& PayloadOf(const PendingTxn* txn) { return payloads[size_t(txn - txns.data())]; }
  };
  // A transaction opened in this segment, for the aborts' last stable offset.
  struct OpenTxn {
    int64_t first_offset;
    int64_t producer_id;
    bool closed;
  };

  // A data batch waiting in the group.
  struct Pending {
    int64_t pid;
    uint32_t run;  // set by Drain
    int16_t epoch;
    bool transactional;
    bool raises_epoch;
    Batch record;
  };
  // With 10,000 producers each batch's index slot, Run and ring slot are
  // cache misses, and taken one batch at a time they were most of the scan's
  // time, one miss waiting for the other. A group's lookups are independent,
  // so Drain issues them for the whole group, round by round (ids, then
  // Runs, then ring slots), and the misses overlap.
  static constexpr size_t kGroup = 16;

  Slots& SlotsOf(uint32_t r) { return slot_chunks_[r >> kChunkBits][r & ((1u << kChunkBits) - 1)]; }
  uint32_t RunOf(int64_t pid);
  TxnRun& TxnRunOf(uint32_t r);
  TxnRun* TxnRunIfAny(uint32_t r) { return r < txn_runs_.size() ? txn_runs_[r].get() : nullptr; }
  void Drain();
  void AddMarker(const LogEntry& e, bool raises_epoch);
  void AddData(const Pending& p);
  void PushOutOldest(uint32_t r);
  void Flush(uint32_t r);
  void Restart(uint32_t r, int16_t epoch);
  void Output(const Batch& b);

  // Whole transactions.
  void Open(uint32_t r, uint8_t slot, int64_t pid, int64_t first_offset);
  PendingTxn* TxnOfSlot(TxnRun& t, uint8_t slot);
  PendingTxn* FindTxn(TxnRun& t, uint32_t tag);
  void MaybeLeaveOut(TxnRun& t, PendingTxn* txn);
  void GiveUp(uint32_t r, TxnRun& t, PendingTxn* txn);
  void GiveUpAll(uint32_t r);
  void Remove(TxnRun& t, PendingTxn* txn);
  void CloseOpenTxn(TxnRun& t);
  int64_t LocalLastStableOffset(int64_t producer_id);

  SegmentRecoveryScan* out_;
  int64_t total_;
  DenseIdIndex ids_;  // producer id -> r
  std::vector<Run> runs_;
  std::vector<std::unique_ptr<Slots[]>> slot_chunks_;
  std::vector<std::unique_ptr<TxnRun>> txn_runs_;  // by r, null until needed
  std::vector<OpenTxn> open_local_;                // by first offset
  size_t open_front_ = 0;                          // open_local_[0, open_front_) are all closed
  int64_t open_base_ = 0;                          // the index of open_local_[0] (it is compacted)
  std::array<Pending, kGroup> pending_;
  size_t pending_count_ = 0;
  // One producer usually writes many batches in a row: skip the lookup.
  int64_t last_pid_ = -1;
  uint32_t last_run_ = 0;  // valid once last_pid_ is a producer id
  uint64_t generation_ = 0;
  int64_t dropped_ = 0;
};

}  // namespace daruma
