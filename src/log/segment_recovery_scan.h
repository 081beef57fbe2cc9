// SegmentRecoveryScan: the read-only half of segment recovery (spec §10.4).
//
// Segment recovery is split in two so that the expensive part (reading and
// CRC-checking every byte) can run for several segments of one partition at
// once, while everything with a visible effect stays sequential:
//
//  1. ScanSegmentForRecovery (this file) reads the `.log` from position 0 to
//     `size` and, without writing anything, computes what §10.4 step 2 would
//     do: where the valid bytes end and why, the index entries Kafka's rule
//     (index.interval.bytes, counted from the last entry) produces, the final
//     (max timestamp, shallow offset) pair, and the batches whose effect is
//     not local to the segment (v2 batches with a producer id, and v2 batches
//     whose leader epoch exceeds every earlier epoch of the segment), less
//     the producer batches a later batch of the same producer makes
//     invisible, so that what is kept does not grow with the batch count.
//  2. LogSegment::ApplyRecovery replays that scan in batch order: index
//     entries, then the caller's visitor for each retained batch (which may
//     still stop recovery at a batch, as a corrupt control record does), and
//     finally truncates the file and trims the indexes.
//
// A batch that raises the cache's latest epoch must raise the segment's
// running maximum too, so retaining only in-segment epoch maxima loses no
// leader-epoch assignment.
//
// Thread safety: a scan only reads `file` (through its own reader) and may run
// on any thread while other segments are being modified; `file` must not be
// written or truncated during the scan.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/damage_kind.h"
#include "common/file_system.h"
#include "common/huge_page_allocator.h"
#include "common/status.h"
#include "record/file_batch_reader.h"
#include "record/record_batch.h"

namespace daruma {

struct SegmentRecoveryScan {
  // An offset-index entry (offset, position) and the time-index candidate
  // (max timestamp so far, its shallow offset) appended with it.
  struct IndexPoint {
    int64_t offset = 0;
    int32_t position = 0;
    int64_t max_timestamp = -1;
    int64_t shallow_offset_of_max = -1;
  };
  // A retained batch: its 61-byte header (all producer state reads from a
  // data batch), and for a control batch the whole batch, which lies in
  // control_bytes below. Trivially copyable, so that the vector of them grows
  // by memmove and retaining a batch allocates nothing of its own.
  struct Batch {
    int64_t position = 0;
    int64_t end = 0;             // position + size
    int64_t ordinal = 0;         // number of batches before it
    int64_t max_timestamp = -1;  // running values after this batch
    int64_t shallow_offset_of_max = -1;
    // v2_next_offset (below) before this batch: what the state reflects
    // after the batches not retained since the previous retained one.
    int64_t prev_v2_next_offset = 0;
    // For an ABORT marker: the first offset of the earliest transaction of
    // another producer opened in this segment and still open at the marker,
    // or the largest offset if none. The fold's last stable offset for the
    // abort is the smaller of this and its own: a transaction the scan left
    // out whole (batch_thinner.cc) is open in Kafka's replay there.
    int64_t local_lso = std::numeric_limits<int64_t>::max();
    // A control batch's bytes: control_bytes[control_offset, + control_size);
    // control_size is 0 for a data batch. A segment is below 2 GiB.
    uint32_t control_offset = 0;
    uint32_t control_size = 0;
    uint8_t header[kRecordBatchOverhead] = {};
  };

  struct OffsetGap {
    int64_t position = 0;       // of the batch after the gap
    int64_t previous_last = 0;  // the last offset before it
    int64_t base_offset = 0;    // the batch's baseOffset
  };

  std::vector<IndexPoint> index_points;
  // In file order: the batches with a producer id or a new leader epoch,
  // except those whose replay provably leaves no trace in the state after
  // the segment (a producer's data batch followed by five more of its epoch;
  // batch_thinner.cc states the rules). What is left is bounded by the
  // producers, transactions and epochs of the segment, not by its batches.
  // Tens of MiB where transactions are short, filled once and freed after
  // the segment is applied: in huge pages (common/huge_page_allocator.h).
  std::vector<Batch, HugePageAllocator<Batch>> batches;
  // The retained control batches, back to back (Batch::control_offset).
  Bytes control_bytes;

  // What replay reads of a retained batch: the whole control batch, or the
  // data batch's header.
  ByteSpan BytesOf(const Batch& b) const {
    if (b.control_size == 0) return ByteSpan(b.header, sizeof b.header);
    return ByteSpan(control_bytes).subspan(b.control_offset, b.control_size);
  }
  int64_t thinned_batches = 0;  // producer batches left out of `batches`

  int64_t valid_bytes = 0;
  int64_t batch_count = 0;
  int64_t next_offset = 0;  // last valid batch's last offset + 1, or the base
  // The last valid v2 batch's last offset + 1, or the base if none.
  int64_t v2_next_offset = 0;
  int64_t max_timestamp = -1;
  int64_t shallow_offset_of_max = -1;
  std::string stop_reason;  // empty if the scan reached the end
  // What is wrong at valid_bytes (set with stop_reason): the first byte
  // recovery will not keep.
  std::optional<DamageKind> stop_kind;
  StopReason reader_stop = StopReason::kEndOfFile;
  bool corrupt_batch = false;
  // The scan stopped at a batch whose CRC-valid bytes sit out of order
  // (a damaged baseOffset, partitionLeaderEpoch or magic, which the batch
  // CRC does not cover): stop_reason says which batches disagree.
  bool uncovered_field_damage = false;
  // kOffsetOverflow or kIoError met at valid_bytes; recovery fails with it
  // after applying the retained batches before that point.
  Status error;
  // The first kept batch that starts above the previous batch's last offset
  // + 1. Normal in a compacted log; elsewhere the likeliest cause is a
  // damaged baseOffset that nothing contradicts (the segment's last batch),
  // which recovery reports without changing anything.
  std::optional<OffsetGap> first_gap;
};

// Scans [0, size) of `file`, the `.log` of the segment based at base_offset
// (`path` names it in messages). Never fails: I/O errors are recorded in
// scan.error.
//
// Besides each batch's size and CRC, the scan checks the header fields the
// CRC does not cover against the batches around them, as a valid log always
// satisfies them (issue 22; recovery/batch_order_check.h reasons the same way
// over a whole log for `daruma check`):
//  * magic is 0, 1 (a legacy message, whose own CRC covers it) or 2;
//  * offsets strictly increase: each batch's baseOffset is above every
//    earlier batch's last offset, not below the segment's base offset, and
//    its last offset is below `next_segment_base` (the next segment's file
//    name) when there is one;
//  * a partition leader epoch is -1 (none) or a leader epoch, and those >= 0
//    never decrease.
// A batch that breaks an order is corrupt, and so may be the earliest earlier
// batch it disagrees with (a field flipped up there looks like a field
// flipped down here): the valid region ends before that earlier batch, so
// everything from it on is truncated (and quarantined) like a CRC failure.
SegmentRecoveryScan ScanSegmentForRecovery(const File* file, const std::string& path,
                                           int64_t base_offset, int64_t size,
                                           int32_t index_interval_bytes,
                                           std::optional<int64_t> next_segment_base = std::nullopt);

// What ScanSegmentPart reports beside its scan, for joining the two parts
// of a segment scanned on two threads (log/segment_scan_split.h).
struct SegmentScanPartInfo {
  // A batch of a second part. Index points are counted from the previous
  // point, which lies in the first part, so the second part notes where
  // each of its batches lies and the join places its points.
  struct Mark {
    int32_t position = 0;        // from the part's start
    int32_t last_delta = 0;      // last offset - the segment's base offset
    int64_t max_timestamp = -1;  // the batch's own
  };
  int64_t file_size = 0;  // the segment's
  // A second part stops recording (and scanning) after this many marks:
  // the join is then impossible and the segment is scanned whole.
  size_t max_marks = std::numeric_limits<size_t>::max();
  // The part ended exactly at its end, with every batch valid and in order
  // (as far as the part can tell alone) and no error.
  bool clean = false;
  // The part stopped where a whole scan stops for the same bytes, with the
  // same message: every batch before the stop valid and in order, then a
  // torn tail, a bad size or a batch failing its checks (stop_reason),
  // but no order violation (whose cut may lie before the part), offset
  // overflow, I/O error or exceeded max_marks. Implied by `clean`.
  bool stopped_at_damage = false;
  // A second part's first batch's baseOffset, and its first
  // partitionLeaderEpoch >= 0 (-1 if none): what the join checks against
  // the first part, as a whole scan checks each batch against those before.
  int64_t first_offset = -1;
  int32_t first_epoch = -1;
  int32_t max_epoch = -1;  // the part's largest partitionLeaderEpoch, or -1
  std::vector<Mark, HugePageAllocator<Mark>> marks;  // a second part's, in file order
};

// A second part's running v2_next_offset (and a retained batch's
// prev_v2_next_offset) before its first v2 batch: the first part's, which
// the join fills in.
inline constexpr int64_t kUnknownV2NextOffset = std::numeric_limits<int64_t>::min();

// The scan of [from, to) of the segment's `file` (of `file_size` bytes),
// which must start and, for a clean part, end at batch boundaries. A first
// part (from 0) is the whole scan of a segment that ended at `to`, with
// info->max_epoch. A second part (from > 0) is scanned as if the segment
// started at `from`: positions, ordinals and control offsets count from
// its start, its running values (maximum timestamp, v2_next_offset, leader
// epochs, offset order, the batch thinner's per-producer state) start
// unknown, and it computes no index points but fills info->marks.
SegmentRecoveryScan ScanSegmentPart(const File* file, const std::string& path, int64_t base_offset,
                                    int64_t from, int64_t to, int64_t file_size,
                                    int32_t index_interval_bytes,
                                    std::optional<int64_t> next_segment_base,
                                    SegmentScanPartInfo* info);

}  // namespace daruma
