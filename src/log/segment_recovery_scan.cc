#include "log/segment_recovery_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>

#include "common/dense_id_index.h"
#include "log/producer_append_info.h"
#include "log/producer_state_entry.h"
#include "log/relative_offset.h"

namespace daruma {

namespace {

// Whether the batch raises the segment's largest leader epoch (and moves it).
bool RaisesEpoch(const RecordBatchView& batch, std::optional<int32_t>* max_epoch) {
  const int32_t epoch = batch.partition_leader_epoch();
  if (epoch < 0 || (*max_epoch && epoch <= **max_epoch)) return false;
  *max_epoch = epoch;
  return true;
}

// The retained record of the data batch `e`, with the scan's running values
// before it.
void FillRetained(const LogEntry& e, const SegmentRecoveryScan& scan,
                  SegmentRecoveryScan::Batch* b) {
  b->position = scan.valid_bytes;
  b->end = scan.valid_bytes + int64_t(e.size());
  b->ordinal = scan.batch_count;
  b->max_timestamp = scan.max_timestamp;
  b->shallow_offset_of_max = scan.shallow_offset_of_max;
  b->prev_v2_next_offset = scan.v2_next_offset;
  b->control_offset = 0;
  b->control_size = 0;
  std::copy_n(e.bytes.begin(), kRecordBatchOverhead, b->header);
}

static_assert(std::is_trivially_copyable_v<SegmentRecoveryScan::Batch>,
              "the retained batches' vector grows by memmove");

// Makes room in `v` (a vector the scan fills) for `needed` more elements,
// `scanned` of the segment's `total` bytes into the scan. How much a segment
// retains is known only as it is read: a third of its batches where
// transactions are short, almost none for one idempotent producer. Growing
// by doubling copied each vector a few times over and faulted in twice its
// final memory; 1 GiB of 100-byte transactional batches spent half its
// recovery there. So the count seen so far is extrapolated to the whole
// segment (+1/8) once a sixty-fourth of it is read, and the vector grows to
// that at once, or at least doubles.
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

// At most what one scanned batch adds to scan->batches: BatchThinner's group
// of data batches, each of which may flush a ring of candidates.
constexpr size_t kMaxRetainedPerBatch = 16 * (1 + 5) + 1;

// Retains `e` in scan->batches (a control batch with its bytes); `total` is
// the size of the scanned region (MakeRoom).
void AppendRetained(const LogEntry& e, SegmentRecoveryScan* scan, int64_t total) {
  SegmentRecoveryScan::Batch& b = scan->batches.emplace_back();
  FillRetained(e, *scan, &b);
  if (e.batch().is_control()) {
    b.control_offset = uint32_t(scan->control_bytes.size());
    b.control_size = uint32_t(e.size());
    MakeRoom(&scan->control_bytes, e.size(), scan->valid_bytes, total);
    scan->control_bytes.insert(scan->control_bytes.end(), e.bytes.begin(), e.bytes.end());
  }
}

// ---- Thinning the retained producer batches ----------------------------------
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
// Applies (a)-(d) while the segment is scanned. A batch that may be dropped
// (a candidate) waits in its producer's ring of the last kCache data batches
// instead of the output: pushed out by a fifth later one it is simply
// overwritten, and it reaches the output only if its run ends first (another
// epoch, a barrier, the end of the segment). Batches that must stay go to the
// output at once. The output is put back in file order (by ordinal) at the
// end. Earlier, every batch went to the output and the dropped ones were
// marked and compacted away: with 10,000 producers that copying, the
// vector's growth and the marks were a fifth of the scan's time.
class BatchThinner {
 public:
  // `total`: the size of the scanned region (MakeRoom).
  BatchThinner(SegmentRecoveryScan* out, int64_t total) : out_(out), total_(total) {}

  // Takes `e`, a v2 batch with a producer id, the scan's running values not yet
  // counting it; `raises_epoch` says it must stay for a new leader epoch.
  // Data batches wait, their records already filled in, in a group of
  // kGroup that is applied in one go (Drain); a marker drains the group
  // first, so batches are still applied in file order.
  void Add(const LogEntry& e, const SegmentRecoveryScan& scan, bool raises_epoch) {
    const RecordBatchView batch = e.batch();
    if (batch.is_control()) {
      Drain();
      AddMarker(e);
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

  // Moves the candidates still waiting to the output and puts it in file
  // order; returns how many batches were dropped.
  int64_t Finish() {
    Drain();
    size_t waiting = 0;
    for (const Run& run : runs_) waiting += size_t(__builtin_popcount(run.candidates));
    MakeRoom(&out_->batches, waiting, 0, total_);
    for (uint32_t r = 0; r < runs_.size(); ++r) Flush(r);
    std::sort(out_->batches.begin(), out_->batches.end(),
              [](const SegmentRecoveryScan::Batch& a, const SegmentRecoveryScan::Batch& b) {
                return a.ordinal < b.ordinal;
              });
    return dropped_;
  }

 private:
  static constexpr size_t kCache = ProducerStateEntry::kNumBatchesToRetain;
  static_assert(kCache <= 8, "Run::candidates has a bit per slot");
  // A producer's data batches of its current epoch since the last barrier,
  // oldest first: a ring of at most kCache in slots_[r], whose bookkeeping
  // is runs_[r]. Every batch reads its producer's Run, which is kept apart
  // from the slots and small (16 bytes) so that the Runs of 10,000 producers
  // stay in cache; reading the oldest slot's candidate flag from the slots'
  // cache line was a quarter of the scan's time.
  struct Run {
    bool seen = false;  // a batch of the producer was scanned in this segment
    bool previous_transactional = false;
    int16_t epoch = 0;
    uint8_t head = 0;
    uint8_t count = 0;
    uint8_t candidates = 0;  // bit k: slots_[r][k] holds a candidate's record
    uint64_t generation = 0;
  };
  using Slots = std::array<SegmentRecoveryScan::Batch, kCache>;  // candidates' records only
  // Slots live in chunks that never move: a vector of them moved megabytes
  // at each growth with 10,000 producers and held old and new at once.
  static constexpr uint32_t kChunkBits = 6;

  // A data batch waiting in the group.
  struct Pending {
    int64_t pid;
    uint32_t run;  // set by Drain
    int16_t epoch;
    bool transactional;
    bool raises_epoch;
    SegmentRecoveryScan::Batch record;
  };
  // With 10,000 producers each batch's index slot, Run and ring slot are
  // cache misses, and taken one batch at a time they were most of the scan's
  // time, one miss waiting for the other. A group's lookups are independent,
  // so Drain issues them for the whole group, round by round (ids, then
  // Runs, then ring slots), and the misses overlap.
  static constexpr size_t kGroup = 16;

  Slots& SlotsOf(uint32_t r) { return slot_chunks_[r >> kChunkBits][r & ((1u << kChunkBits) - 1)]; }

  // Run r of producer `pid`, created when it is new.
  uint32_t RunOf(int64_t pid) {
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

  void Drain() {
    const size_t n = pending_count_;
    pending_count_ = 0;
    for (size_t i = 0; i < n; ++i) ids_.Prefetch(pending_[i].pid);
    for (size_t i = 0; i < n; ++i) {
      pending_[i].run = RunOf(pending_[i].pid);
      __builtin_prefetch(&runs_[pending_[i].run]);
    }
    for (size_t i = 0; i < n; ++i) {
      const Run& run = runs_[pending_[i].run];
      const char* slot =
          reinterpret_cast<const char*>(&SlotsOf(pending_[i].run)[(run.head + run.count) % kCache]);
      __builtin_prefetch(slot, 1);
      __builtin_prefetch(slot + 64, 1);
      __builtin_prefetch(slot + sizeof(SegmentRecoveryScan::Batch) - 1, 1);
    }
    for (size_t i = 0; i < n; ++i) AddData(pending_[i]);
  }

  void AddMarker(const LogEntry& e) {
    const RecordBatchView batch = e.batch();
    const uint32_t r = RunOf(batch.producer_id());
    Run& run = runs_[r];
    const int16_t epoch = batch.producer_epoch();
    const bool fresh = !run.seen || run.generation != generation_ || run.epoch != epoch;
    AppendRetained(e, out_, total_);
    if (!EndTxnMarkerReadable(batch)) ++generation_;  // (d): a barrier
    // A marker pushes nothing onto the cache; another epoch clears it.
    if (fresh) Restart(r, epoch);
    run.seen = true;
    run.previous_transactional = false;
  }

  void AddData(const Pending& p) {
    const uint32_t r = p.run;
    Run& run = runs_[r];
    const bool fresh = !run.seen || run.generation != generation_ || run.epoch != p.epoch;
    const bool candidate =
        run.seen && !p.raises_epoch && p.transactional == run.previous_transactional;
    if (fresh) {
      Restart(r, p.epoch);
    } else if (run.count == kCache) {
      // The oldest has five later data batches of its epoch: (c). A candidate
      // is dropped by leaving its slot to be overwritten.
      if (run.candidates & (1u << run.head)) dropped_++;
      run.head = uint8_t((run.head + 1) % kCache);
      run.count--;
    }
    const uint8_t at = uint8_t((run.head + run.count) % kCache);
    if (candidate) {
      run.candidates |= uint8_t(1u << at);
      SlotsOf(r)[at] = p.record;
    } else {
      run.candidates &= uint8_t(~(1u << at));
      out_->batches.push_back(p.record);
    }
    run.count++;
    run.seen = true;
    run.previous_transactional = p.transactional;
  }

  // Run r's waiting candidates were not followed by five data batches of
  // their epoch: they stay.
  void Flush(uint32_t r) {
    Run& run = runs_[r];
    for (size_t k = 0; k < run.count; ++k) {
      const size_t at = (run.head + k) % kCache;
      if (run.candidates & (1u << at)) out_->batches.push_back(SlotsOf(r)[at]);
    }
    run.head = 0;
    run.count = 0;
    run.candidates = 0;
  }

  void Restart(uint32_t r, int16_t epoch) {
    Flush(r);
    runs_[r].epoch = epoch;
    runs_[r].generation = generation_;
  }

  SegmentRecoveryScan* out_;
  int64_t total_;
  DenseIdIndex ids_;  // producer id -> r
  std::vector<Run> runs_;
  std::vector<std::unique_ptr<Slots[]>> slot_chunks_;
  std::array<Pending, kGroup> pending_;
  size_t pending_count_ = 0;
  // One producer usually writes many batches in a row: skip the lookup.
  int64_t last_pid_ = kNoProducerId;
  uint32_t last_run_ = 0;  // valid once last_pid_ is a producer id
  uint64_t generation_ = 0;
  int64_t dropped_ = 0;
};

// The scan, minus the final thinning.
// Where a scan must end because of an order violation: the position of the
// first batch not kept, and why.
struct Violation {
  int64_t cut_position = -1;
  std::string why;
  DamageKind kind = DamageKind::kNonMonotonicOffset;
};

// The position of the first entry before `end` for which `pred` holds (the
// earliest batch an out-of-order batch disagrees with), found by reading the
// segment again; only a damaged segment pays for this second read. `end`
// when none does or the bytes cannot be read again.
template <typename Pred>
int64_t FirstPositionWhere(const File* file, int64_t end, Pred pred) {
  FileBatchReaderOptions ro;
  ro.end_position = uint64_t(end);
  ro.map = false;
  FileBatchReader reader(file, ro);
  while (auto e = reader.Next()) {
    if (pred(*e)) return int64_t(e->position);
  }
  return end;
}

void Scan(const File* file, const std::string& path, int64_t base_offset, int64_t size,
          int32_t index_interval_bytes, std::optional<int64_t> next_segment_base,
          BatchThinner& thinner, SegmentRecoveryScan& scan, Violation* violation) {
  scan.next_offset = base_offset;
  scan.v2_next_offset = base_offset;
  int64_t last_index_entry = 0;
  std::optional<int32_t> max_epoch;
  FileBatchReaderOptions ro;
  ro.end_position = uint64_t(size);
  // Read 256 KiB at a time into the reader's buffer rather than mapped: on
  // this 2-core VM (page cache warm, 1 GiB, 128 MiB segments) the mapped
  // scan spent ~40% of its time in the kernel's page-table work (populate,
  // MADV_DONTNEED), which two recovery threads of one process also contend
  // for; copying reads ran as fast on one thread (3.1-4.3 vs 3.1-4.1 GB/s)
  // and faster on two (6.2-8.4 vs 4.8-7.1 GB/s), with 8 MiB peak RSS per
  // thread instead of 12. 256 KiB rather than 1 MiB keeps the block in the
  // core's L2 (1-2 MiB here) between the kernel's copy and the CRC pass:
  // alternating runs, medians 196 vs 213 ms per GiB on one thread.
  ro.block_size = size_t(256) << 10;
  ro.map = false;
  FileBatchReader reader(file, ro);
  // Entries lie more than index_interval_bytes apart; growing the vector
  // instead moved and refaulted it a dozen times per 128 MiB segment. The
  // cap bounds what a tiny interval reserves before batch sizes are known.
  scan.index_points.reserve(size_t(
      std::min<int64_t>(size / (int64_t(std::max(index_interval_bytes, 0)) + 1) + 1, 1 << 16)));
  // A first guess of one retained batch per 4 KiB (MakeRoom corrects it
  // once a sixty-fourth is read): reserved pages that are never filled are
  // never touched.
  scan.batches.reserve(size_t(std::min<int64_t>(size / 4096 + 16, 1 << 20)));
  // Running maxima of the batches so far (the order checks).
  int64_t max_last = std::numeric_limits<int64_t>::min();
  int32_t max_epoch_seen = -1;
  // A batch whose offsets leave the range relative to the segment's base:
  // judged by the batch after it. If that one goes back below it, the two
  // disagree and the out-of-range baseOffset (which no CRC covers) is damage,
  // cut like any order violation; otherwise (a later batch, or none) it is a
  // real offset overflow, which Kafka splits.
  std::optional<std::string> overflow;
  while (auto e = reader.Next()) {
    if (e->magic > kMagicV2) {
      // Read as a v2 batch, whose CRC does not cover the magic byte.
      *violation = {e->position,
                    fmt::format("{}: batch at position {}: field magic: expected 0, 1 "
                                "or 2, found {} (magic is outside the batch CRC)",
                                path, e->position, int(e->magic)),
                    DamageKind::kBadMagic};
      break;
    }
    Status valid = e->Validate();
    if (!valid.ok()) {
      scan.corrupt_batch = true;
      scan.stop_reason = fmt::format("{}: {}", path, valid.message());
      scan.stop_kind = DamageKindOf(valid).value_or(DamageKind::kBadCrc);
      scan.reader_stop = StopReason::kNone;
      break;
    }
    const int64_t last = e->last_offset();
    const int64_t first = e->is_v2() ? e->batch().base_offset() : last;
    const int32_t epoch = e->partition_leader_epoch();
    if (first < base_offset) {
      *violation = {e->position,
                    fmt::format("{}: batch at position {}: expected a baseOffset >= "
                                "the segment's base offset {}, found {} (baseOffset "
                                "is outside the batch CRC)",
                                path, e->position, base_offset, first),
                    DamageKind::kOffsetOutsideSegment};
      break;
    }
    if (!HasNextOffset(first, last)) {
      // Kafka's arithmetic wraps here; a log end offset past Long.MAX_VALUE
      // would follow.
      const std::string why = fmt::format(
          "{}: batch at position {}: offsets {} to {} leave no next offset below 2^63 "
          "(baseOffset and lastOffsetDelta are outside the batch CRC)",
          path, e->position, first, last);
      *violation = {e->position, why, DamageKind::kOffsetOverflow};
      break;
    }
    if (first <= max_last) {
      *violation = {FirstPositionWhere(file, e->position,
                                       [&](const LogEntry& x) { return x.last_offset() >= first; }),
                    fmt::format("{}: batch at position {}: expected a baseOffset above {} (offsets "
                                "of earlier batches), found {}; it or an earlier batch has a "
                                "damaged baseOffset, which the batch CRC does not cover",
                                path, e->position, max_last, first),
                    DamageKind::kNonMonotonicOffset};
      break;
    }
    if (overflow) break;  // the batch after it goes on upwards: a real overflow
    if (max_last != std::numeric_limits<int64_t>::min() && first > max_last + 1 &&
        !scan.first_gap) {
      scan.first_gap = SegmentRecoveryScan::OffsetGap{e->position, max_last, first};
    }
    if (epoch < kNoPartitionLeaderEpoch) {
      // Kafka writes -1 (no epoch) or a leader epoch, never below.
      *violation = {e->position,
                    fmt::format("{}: batch at position {}: field partitionLeaderEpoch: expected >= "
                                "-1, found {} (partitionLeaderEpoch is outside the batch CRC)",
                                path, e->position, epoch),
                    DamageKind::kBadHeader};
      break;
    }
    if (epoch >= 0 && epoch < max_epoch_seen) {
      *violation = {
          FirstPositionWhere(file, e->position,
                             [&](const LogEntry& x) { return x.partition_leader_epoch() > epoch; }),
          fmt::format("{}: batch at position {}: expected a partitionLeaderEpoch >= {} "
                      "(leader epochs never decrease), found {}; it or an earlier batch "
                      "has a damaged partitionLeaderEpoch, which the batch CRC does not "
                      "cover",
                      path, e->position, max_epoch_seen, epoch),
          DamageKind::kLeaderEpochOrder};
      break;
    }
    if (next_segment_base && last >= *next_segment_base) {
      *violation = {e->position,
                    fmt::format("{}: batch at position {}: expected offsets below the "
                                "next segment's base offset {}, found last offset {} "
                                "(baseOffset is outside the batch CRC)",
                                path, e->position, *next_segment_base, last),
                    DamageKind::kOffsetOutsideSegment};
      break;
    }
    if (!FitsRelativeOffset(base_offset, last)) {
      overflow = fmt::format(
          "{}: batch at position {} has last offset {}, outside the relative range of base {}",
          path, e->position, last, base_offset);
      max_last = std::max(max_last, last);
      continue;
    }
    max_last = std::max(max_last, last);
    if (epoch >= 0) max_epoch_seen = std::max(max_epoch_seen, epoch);
    const int64_t batch_max_ts = e->max_timestamp();
    if (batch_max_ts > scan.max_timestamp) {
      scan.max_timestamp = batch_max_ts;
      scan.shallow_offset_of_max = last;
    }
    if (scan.valid_bytes - last_index_entry > index_interval_bytes) {
      scan.index_points.push_back(
          {last, int32_t(scan.valid_bytes), scan.max_timestamp, scan.shallow_offset_of_max});
      last_index_entry = scan.valid_bytes;
    }
    if (e->is_v2()) {
      // Retained: the batches whose effect is not local to the segment.
      const RecordBatchView batch = e->batch();
      const bool raises_epoch = RaisesEpoch(batch, &max_epoch);
      MakeRoom(&scan.batches, kMaxRetainedPerBatch, scan.valid_bytes, size);
      if (batch.has_producer_id()) {
        thinner.Add(*e, scan, raises_epoch);
      } else if (raises_epoch) {
        AppendRetained(*e, &scan, size);
      }
    }
    scan.valid_bytes += int64_t(e->size());
    scan.batch_count++;
    scan.next_offset = last + 1;
    if (e->is_v2()) scan.v2_next_offset = last + 1;
  }
  if (overflow && scan.error.ok() && violation->cut_position < 0) {
    // Also before a corrupt batch: Kafka meets the overflow first, splits,
    // and the split segment's recovery then cuts the corrupt tail.
    scan.error = WithDamageKind(Status::OffsetOverflow(*overflow), DamageKind::kOffsetOverflow);
    scan.corrupt_batch = false;
    scan.stop_reason.clear();
    scan.stop_kind.reset();
    return;
  }
  if (!scan.error.ok() || scan.corrupt_batch || violation->cut_position >= 0) return;
  if (reader.stop_reason() == StopReason::kIoError) {
    scan.error = reader.io_status();
    return;
  }
  scan.reader_stop = reader.stop_reason();
  if (reader.stop_reason() != StopReason::kEndOfFile) {
    scan.stop_reason = reader.stop_message();
    scan.stop_kind = reader.damage();
    scan.corrupt_batch = reader.stop_reason() == StopReason::kCorruptSize;
  }
}

}  // namespace

SegmentRecoveryScan ScanSegmentForRecovery(const File* file, const std::string& path,
                                           int64_t base_offset, int64_t size,
                                           int32_t index_interval_bytes,
                                           std::optional<int64_t> next_segment_base) {
  SegmentRecoveryScan scan;
  BatchThinner thinner(&scan, size);
  Violation violation;
  Scan(file, path, base_offset, size, index_interval_bytes, next_segment_base, thinner, scan,
       &violation);
  scan.thinned_batches = thinner.Finish();
  if (violation.cut_position < 0) return scan;
  // Scan again up to the cut, so that what is retained (and thinned: a
  // producer batch is dropped only for later batches that are kept) is
  // exactly what a scan of the kept bytes alone gives. No batch before the
  // cut breaks an order, so this scan reaches its end.
  SegmentRecoveryScan kept;
  BatchThinner kept_thinner(&kept, violation.cut_position);
  Violation none;
  Scan(file, path, base_offset, violation.cut_position, index_interval_bytes, next_segment_base,
       kept_thinner, kept, &none);
  kept.thinned_batches = kept_thinner.Finish();
  if (!kept.error.ok() || kept.corrupt_batch) return kept;  // the bytes changed under the scan
  kept.corrupt_batch = true;
  kept.uncovered_field_damage = true;
  kept.reader_stop = StopReason::kNone;
  kept.stop_reason = std::move(violation.why);
  kept.stop_kind = violation.kind;
  return kept;
}

}  // namespace daruma
