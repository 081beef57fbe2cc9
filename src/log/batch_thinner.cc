#include "log/batch_thinner.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "log/producer_append_info.h"

namespace daruma {

// ---- Batches whose replay a later batch hides ----------------------------------
//
// Replaying a data batch of producer P (ProducerAppendInfo::Append, replication
// origin) switches P's epoch, clearing its batch cache if the epoch differs;
// pushes the batch onto the cache of P's last five
// (ProducerStateEntry::kNumBatchesToRetain); sets P's last timestamp; and opens
// a transaction if the batch is transactional and none is open. Its other
// effects are global: a new leader epoch, and stopping the fold (the visitor
// fails). So a retained batch B of P leaves no trace in the state the fold
// reaches at the end of the segment, and the scan drops it, when
//   (a) B is a data batch that cannot fail and opens no transaction: P's
//       previous batch in this segment is known and B's transactional flag
//       equals "that batch is transactional data" (plain data after plain
//       data or a marker, transactional data inside an open transaction);
//   (b) B raises no leader epoch (such batches are never dropped);
//   (c) five later data batches of P with B's epoch follow B, and no batch of
//       P with another epoch lies between (the five push B out of the cache
//       and overwrite the timestamp);
//   (d) the fold reaches the fifth of them: no batch between B and it can
//       stop the fold. A replicated append fails only on a marker it cannot
//       read (which the visitor reports as corruption and stops at) or on
//       plain data inside an open transaction (INVALID_TXN_STATE, which fails
//       the whole load, so no state survives it); an unreadable marker is a
//       barrier behind which nothing already scanned is dropped.
// Everything the fold also reads from a dropped batch is carried by the next
// retained one: prev_v2_next_offset and, for ApplyRecovery, position and the
// running timestamps (which only matter at a batch where the fold stops).
//
// Applies (a)-(d) while the segment is scanned. A batch that may be dropped
// (a candidate) waits in its producer's ring of the last kCache data batches
// instead of the output: pushed out by a fifth later one it is simply
// overwritten, and it reaches the output only if its run ends first (another
// epoch, a barrier, the end of the segment). Batches that must stay go to the
// output at once. The output is put back in file order (by ordinal) at the
// end. Earlier, every batch went to the output and the dropped ones were
// marked and compacted away: with 10,000 producers that copying, the
// vector's growth and the marks were a fifth of the scan's time.
//
// ---- Whole transactions ----------------------------------------------------------
//
// By (a) a transaction's opening batch and its marker always stayed: where
// transactions are short (100-byte batches, a few per transaction) that was a
// third of all batches, and replaying them most of recovery's time. A
// committed transaction T of P, opened by data batch B and committed by marker
// M, is left out whole (B, M and, by (a), all its data batches) when
//   (e) B opens T in the fold for certain: P's previous batch in the segment
//       was plain data or a COMMIT/ABORT marker, with B's epoch and no
//       barrier since (Run::may_open), and B raises no leader epoch;
//   (f) every data batch of T is dropped under (a)-(d): none is retained for
//       another reason (a new leader epoch, a run that ends), so that none
//       opens T again when replayed;
//   (g) M is a readable COMMIT of P with B's epoch that raises no leader
//       epoch, and a later readable COMMIT or ABORT of P with that epoch
//       follows before any barrier (it overwrites what M set: coordinator
//       epoch, last timestamp, no open transaction).
// Then the state after the segment is the same with or without T: P's entry
// (cache by (c), epoch, coordinator epoch and timestamp by (g)), the open
// transactions (T is closed), and the transaction index (a commit writes no
// entry). One thing T's replay also did: while T was open, the last stable
// offset of another producer's ABORT was at most T's first offset. The scan
// keeps the transactions opened in this segment (open_local_) and gives each
// retained ABORT the earliest of them still open from another producer
// (Batch::local_lso); the fold takes the smaller of that and its own answer,
// which is Kafka's minimum over all open transactions. (The completed
// transactions Kafka keeps until the high watermark passes them are not part
// of recovery's result: each segment's producer state is discarded after its
// snapshot, and snapshots do not hold them.)
//
// Deciding (f) and (g) takes batches after M, so T waits in its producer's
// TxnRun: B (in the ring, then held once pushed out), then M; it is left out
// once all three hold, and given up (B and M go to the output) as soon as one
// cannot hold any more.

namespace {

// The retained record of the batch `e`, with the scan's running values
// before it.
void FillRetained(const LogEntry& e, const SegmentRecoveryScan& scan,
                  SegmentRecoveryScan::Batch* b) {
  b->position = scan.valid_bytes;
  b->end = scan.valid_bytes + int64_t(e.size());
  b->ordinal = scan.batch_count;
  b->max_timestamp = scan.max_timestamp;
  b->shallow_offset_of_max = scan.shallow_offset_of_max;
  b->prev_v2_next_offset = scan.v2_next_offset;
  b->local_lso = std::numeric_limits<int64_t>::max();
  b->control_offset = 0;
  b->control_size = 0;
  // memcpy of a constant size is a few moves; std::copy_n of the span was a
  // call to memmove per batch.
  std::memcpy(b->header, e.bytes.data(), kRecordBatchOverhead);
}

static_assert(std::is_trivially_copyable_v<SegmentRecoveryScan::Batch>,
              "the retained batches' vector grows by memmove");

// Appends a control batch's bytes to scan->control_bytes and points `b` at
// them; `scanned` and `total` as for MakeRoom.
void StoreControlBytes(ByteSpan bytes, SegmentRecoveryScan* scan, int64_t scanned, int64_t total,
                       SegmentRecoveryScan::Batch* b) {
  b->control_offset = uint32_t(scan->control_bytes.size());
  b->control_size = uint32_t(bytes.size());
  MakeRoom(&scan->control_bytes, bytes.size(), scanned, total);
  scan->control_bytes.insert(scan->control_bytes.end(), bytes.begin(), bytes.end());
}

int64_t BaseOffsetOf(const SegmentRecoveryScan::Batch& b) {
  return RecordBatchView(ByteSpan(b.header, sizeof b.header)).base_offset();
}

}  // namespace

SegmentRecoveryScan::Batch& AppendRetained(const LogEntry& e, SegmentRecoveryScan* scan,
                                           int64_t total) {
  MakeRoom(&scan->batches, 1, scan->valid_bytes, total);
  SegmentRecoveryScan::Batch& b = scan->batches.emplace_back();
  FillRetained(e, *scan, &b);
  if (e.batch().is_control()) {
    StoreControlBytes(e.bytes, scan, scan->valid_bytes, total, &b);
  }
  return b;
}

BatchThinner::BatchThinner(SegmentRecoveryScan* out, int64_t total) : out_(out), total_(total) {}

BatchThinner::~BatchThinner() = default;

// Data batches wait, their records already filled in, in a group of kGroup
// that is applied in one go (Drain); a marker drains the group first, so
// batches are still applied in file order.
void BatchThinner::Add(const LogEntry& e, const SegmentRecoveryScan& scan, bool raises_epoch) {
  const RecordBatchView batch = e.batch();
  if (batch.is_control()) {
    Drain();
    AddMarker(e, raises_epoch);
    return;
  }
  Pending& p = pending_[pending_count_++];
  p.pid = batch.producer_id();
  p.epoch = batch.producer_epoch();
  p.transactional = batch.is_transactional();
  p.raises_epoch = raises_epoch;
  FillRetained(e, scan, &p.record);
  if (pending_count_ == kGroup) Drain();
}

int64_t BatchThinner::Finish() {
  Drain();
  size_t waiting = 0;
  for (const Run& run : runs_) waiting += size_t(__builtin_popcount(run.candidates));
  MakeRoom(&out_->batches, waiting, 0, total_);
  for (uint32_t r = 0; r < runs_.size(); ++r) {
    GiveUpAll(r);
    Flush(r);
  }
  std::sort(out_->batches.begin(), out_->batches.end(),
            [](const Batch& a, const Batch& b) { return a.ordinal < b.ordinal; });
  return dropped_;
}

uint32_t BatchThinner::RunOf(int64_t pid) {
  if (pid == last_pid_) return last_run_;
  bool inserted = false;
  const uint32_t r = ids_.FindOrInsert(pid, &inserted);
  if (inserted) {
    runs_.emplace_back();
    if ((r & ((1u << kChunkBits) - 1)) == 0) {
      slot_chunks_.push_back(std::make_unique<Slots[]>(size_t(1) << kChunkBits));
    }
  }
  last_pid_ = pid;
  last_run_ = r;
  return r;
}

BatchThinner::TxnRun& BatchThinner::TxnRunOf(uint32_t r) {
  if (txn_runs_.size() <= r) txn_runs_.resize(runs_.size());
  if (txn_runs_[r] == nullptr) txn_runs_[r] = std::make_unique<TxnRun>();
  return *txn_runs_[r];
}

void BatchThinner::Drain() {
  const size_t n = pending_count_;
  pending_count_ = 0;
  for (size_t i = 0; i < n; ++i) ids_.Prefetch(pending_[i].pid);
  for (size_t i = 0; i < n; ++i) {
    pending_[i].run = RunOf(pending_[i].pid);
    __builtin_prefetch(&runs_[pending_[i].run]);
  }
  for (size_t i = 0; i < n; ++i) {
    const Run& run = runs_[pending_[i].run];
    const char* slot = reinterpret_cast<const char*>(
        &SlotsOf(pending_[i].run)[Wrap(run.head + run.count, kCache)]);
    __builtin_prefetch(slot, 1);
    __builtin_prefetch(slot + 64, 1);
    __builtin_prefetch(slot + sizeof(Batch) - 1, 1);
  }
  for (size_t i = 0; i < n; ++i) AddData(pending_[i]);
}

void BatchThinner::Output(const Batch& b) {
  MakeRoom(&out_->batches, 1, b.position, total_);
  out_->batches.push_back(b);
}

void BatchThinner::AddMarker(const LogEntry& e, bool raises_epoch) {
  const RecordBatchView batch = e.batch();
  const uint32_t r = RunOf(batch.producer_id());
  Run& run = runs_[r];
  const int16_t epoch = batch.producer_epoch();
  const bool fresh = !run.seen || run.generation != generation_ || run.epoch != epoch;
  const ControlBatchEffect effect = EffectOfControlBatch(batch);
  const bool ends = effect == ControlBatchEffect::kCommit || effect == ControlBatchEffect::kAbort;
  if (effect == ControlBatchEffect::kUnreadable) ++generation_;  // (d): a barrier
  // A marker pushes nothing onto the cache; another epoch clears it.
  if (fresh) Restart(r, epoch);  // also gives up the producer's transactions
  TxnRun* t = TxnRunIfAny(r);
  if (t != nullptr && ends && !fresh) {
    // (g): this marker follows the commits still waiting for a later one.
    for (size_t i = 0; i < t->pending;) {
      PendingTxn& txn = t->At(i);
      const size_t before = t->pending;
      if (txn.committed && !txn.confirmed) {
        txn.confirmed = true;
        MaybeLeaveOut(*t, &txn);
      }
      if (t->pending == before) ++i;  // else At(i) is the next one now
    }
  }
  if (t != nullptr && t->open && !fresh && effect == ControlBatchEffect::kCommit && !raises_epoch &&
      e.size() <= kMarkerBytes) {
    PendingTxn& txn = t->Back();
    TxnPayload& payload = t->PayloadOf(&txn);
    FillRetained(e, *out_, &payload.marker);
    payload.marker.control_size = uint32_t(e.size());
    std::copy(e.bytes.begin(), e.bytes.end(), payload.marker_bytes.begin());
    txn.committed = true;
    t->open = false;
    MaybeLeaveOut(*t, &txn);
  } else {
    // An abort, say: the transaction's opening batch stays with it.
    if (t != nullptr && t->open) GiveUp(r, *t, &t->Back());
    Batch& b = AppendRetained(e, out_, total_);
    if (effect == ControlBatchEffect::kAbort)
      b.local_lso = LocalLastStableOffset(batch.producer_id());
  }
  if (t != nullptr && ends) CloseOpenTxn(*t);
  run.seen = true;
  run.previous_transactional = false;
  run.may_open = ends;
}

void BatchThinner::AddData(const Pending& p) {
  const uint32_t r = p.run;
  Run& run = runs_[r];
  const bool fresh = !run.seen || run.generation != generation_ || run.epoch != p.epoch;
  const bool candidate =
      run.seen && !p.raises_epoch && p.transactional == run.previous_transactional;
  const bool opening = !fresh && !p.raises_epoch && p.transactional && run.may_open;  // (e)
  if (fresh) {
    Restart(r, p.epoch);
  } else if (run.count == kCache) {
    PushOutOldest(r);
  }
  const uint8_t at = uint8_t(Wrap(run.head + run.count, kCache));
  TxnRun* t = TxnRunIfAny(r);
  if (t != nullptr) {
    t->slot_tag[at] = 0;
    t->opening_slots &= uint8_t(~(1u << at));
  }
  if (candidate || opening) {
    run.candidates |= uint8_t(1u << at);
    SlotsOf(r)[at] = p.record;
    if (opening) {
      Open(r, at, p.pid, BaseOffsetOf(p.record));
    } else if (t != nullptr && t->open) {
      PendingTxn& txn = t->Back();
      t->slot_tag[at] = txn.tag;
      t->slot_txn[at] = uint8_t(&txn - t->txns.data());
      txn.in_ring++;
    }
  } else {
    run.candidates &= uint8_t(~(1u << at));
    Output(p.record);
    // (f): retained, it would open the waiting transaction again (or, plain,
    // fail inside it): that transaction stays whole.
    if (t != nullptr && t->open) GiveUp(r, *t, &t->Back());
  }
  run.count++;
  run.seen = true;
  run.previous_transactional = p.transactional;
  run.may_open = !p.transactional;
}

// The oldest has five later data batches of its epoch: (c). A candidate is
// dropped by leaving its slot to be overwritten; a waiting transaction's
// opening batch is held until the transaction is decided.
void BatchThinner::PushOutOldest(uint32_t r) {
  Run& run = runs_[r];
  const uint8_t k = run.head;
  if (run.candidates & (1u << k)) {
    TxnRun* t = TxnRunIfAny(r);
    PendingTxn* txn = t != nullptr && t->slot_tag[k] != 0 ? TxnOfSlot(*t, k) : nullptr;
    if (txn == nullptr) {
      dropped_++;
    } else {
      if (t->opening_slots & (1u << k)) {
        t->PayloadOf(txn).opening = SlotsOf(r)[k];
        txn->opening_held = true;
      } else {
        dropped_++;
      }
      t->slot_tag[k] = 0;
      t->opening_slots &= uint8_t(~(1u << k));
      txn->in_ring--;
      MaybeLeaveOut(*t, txn);
    }
  }
  run.head = uint8_t(Wrap(run.head + 1u, kCache));
  run.count--;
}

// Run r's waiting candidates were not followed by five data batches of
// their epoch: they stay.
void BatchThinner::Flush(uint32_t r) {
  Run& run = runs_[r];
  for (size_t k = 0; k < run.count; ++k) {
    const size_t at = Wrap(run.head + k, kCache);
    if (run.candidates & (1u << at)) Output(SlotsOf(r)[at]);
  }
  run.head = 0;
  run.count = 0;
  run.candidates = 0;
}

void BatchThinner::Restart(uint32_t r, int16_t epoch) {
  GiveUpAll(r);
  Flush(r);
  runs_[r].epoch = epoch;
  runs_[r].generation = generation_;
}

void BatchThinner::Open(uint32_t r, uint8_t slot, int64_t pid, int64_t first_offset) {
  TxnRun& t = TxnRunOf(r);
  if (t.pending == kMaxPending) GiveUp(r, t, &t.At(0));
  CloseOpenTxn(t);
  PendingTxn& txn = t.At(t.pending++);
  txn.tag = t.next_tag++;
  if (t.next_tag == 0) t.next_tag = 1;  // 0 marks a slot of no transaction
  txn.in_ring = 1;
  txn.opening_held = false;
  txn.committed = false;
  txn.confirmed = false;
  t.slot_tag[slot] = txn.tag;
  t.slot_txn[slot] = uint8_t(&txn - t.txns.data());
  t.opening_slots |= uint8_t(1u << slot);
  t.open = true;
  if (open_front_ > 4096 && open_front_ * 2 > open_local_.size()) {
    open_local_.erase(open_local_.begin(), open_local_.begin() + std::ptrdiff_t(open_front_));
    open_base_ += int64_t(open_front_);
    open_front_ = 0;
  }
  open_local_.push_back({first_offset, pid, false});
  t.open_index = open_base_ + int64_t(open_local_.size()) - 1;
}

// The waiting transaction of ring slot `slot` (slot_tag nonzero): where the
// slot says, unless it moved since.
BatchThinner::PendingTxn* BatchThinner::TxnOfSlot(TxnRun& t, uint8_t slot) {
  const size_t at = t.slot_txn[slot];
  const bool waiting = Wrap(at + kMaxPending - t.first, kMaxPending) < t.pending;
  if (waiting && t.txns[at].tag == t.slot_tag[slot]) return &t.txns[at];
  return FindTxn(t, t.slot_tag[slot]);
}

BatchThinner::PendingTxn* BatchThinner::FindTxn(TxnRun& t, uint32_t tag) {
  for (size_t i = 0; i < t.pending; ++i) {
    if (t.At(i).tag == tag) return &t.At(i);
  }
  return nullptr;
}

void BatchThinner::MaybeLeaveOut(TxnRun& t, PendingTxn* txn) {
  if (!txn->committed || !txn->confirmed || txn->in_ring != 0) return;
  dropped_ += 2;  // its opening batch and its marker
  Remove(t, txn);
}

void BatchThinner::GiveUp(uint32_t r, TxnRun& t, PendingTxn* txn) {
  if (txn->opening_held) {
    Output(t.PayloadOf(txn).opening);
  }
  for (uint8_t k = 0; k < kCache; ++k) {
    if (t.slot_tag[k] != txn->tag) continue;
    if (t.opening_slots & (1u << k)) {
      // Still in the ring: it goes out now, and stays there as any batch
      // already output.
      Output(SlotsOf(r)[k]);
      runs_[r].candidates &= uint8_t(~(1u << k));
      t.opening_slots &= uint8_t(~(1u << k));
    }
    t.slot_tag[k] = 0;
  }
  if (txn->committed) {
    const TxnPayload& payload = t.PayloadOf(txn);
    Batch marker = payload.marker;
    StoreControlBytes(ByteSpan(payload.marker_bytes.data(), marker.control_size), out_,
                      marker.position, total_, &marker);
    Output(marker);
  }
  if (t.open && txn == &t.Back()) t.open = false;
  Remove(t, txn);
}

void BatchThinner::GiveUpAll(uint32_t r) {
  TxnRun* t = TxnRunIfAny(r);
  if (t == nullptr) return;
  while (t->pending > 0) GiveUp(r, *t, &t->At(0));
}

void BatchThinner::Remove(TxnRun& t, PendingTxn* txn) {
  const size_t i = Wrap(size_t(txn - t.txns.data()) + kMaxPending - t.first, kMaxPending);
  if (i == 0) {
    t.first = uint8_t(Wrap(t.first + 1u, kMaxPending));
  } else {
    for (size_t j = i; j + 1 < t.pending; ++j) {
      t.PayloadOf(&t.At(j)) = t.PayloadOf(&t.At(j + 1));
      t.At(j) = t.At(j + 1);
    }
  }
  t.pending--;
}

void BatchThinner::CloseOpenTxn(TxnRun& t) {
  if (t.open_index < 0) return;
  open_local_[size_t(t.open_index - open_base_)].closed = true;
  t.open_index = -1;
}

// Kafka's lastStableOffset for an ABORT of `producer_id`, among the
// transactions opened in this segment: the first offset of the earliest one
// of another producer still open, or none (the largest offset).
int64_t BatchThinner::LocalLastStableOffset(int64_t producer_id) {
  while (open_front_ < open_local_.size() && open_local_[open_front_].closed) ++open_front_;
  for (size_t i = open_front_; i < open_local_.size(); ++i) {
    const OpenTxn& o = open_local_[i];
    if (!o.closed && o.producer_id != producer_id) return o.first_offset;
  }
  return std::numeric_limits<int64_t>::max();
}

}  // namespace daruma
