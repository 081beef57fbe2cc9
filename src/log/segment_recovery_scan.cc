#include "log/segment_recovery_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "log/batch_thinner.h"
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

// The scan of [from, size), minus the final thinning. `region` is null for
// a scan of a whole segment (from 0); otherwise see ScanSegmentPart.
void Scan(const File* file, const std::string& path, int64_t base_offset, int64_t from,
          int64_t size, int32_t index_interval_bytes, std::optional<int64_t> next_segment_base,
          BatchThinner& thinner, SegmentRecoveryScan& scan, Violation* violation,
          SegmentScanPartInfo* region) {
  scan.next_offset = base_offset;
  const bool second = region != nullptr && from > 0;
  scan.v2_next_offset = second ? kUnknownV2NextOffset : base_offset;
  int64_t last_index_entry = 0;
  std::optional<int32_t> max_epoch;
  FileBatchReaderOptions ro;
  ro.start_position = uint64_t(from);
  ro.end_position = uint64_t(size);
  ro.file_size = uint64_t(region != nullptr ? region->file_size : size);  // stat'ed by the caller
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
  const int64_t total = size - from;
  if (!second) {
    // A first part's points are joined by the second part's (for the
    // whole segment, whose size is file_size).
    const int64_t indexed = region != nullptr ? region->file_size : total;
    scan.index_points.reserve(size_t(std::min<int64_t>(
        indexed / (int64_t(std::max(index_interval_bytes, 0)) + 1) + 1, 1 << 16)));
  }
  // A first guess of one retained batch per 4 KiB (MakeRoom corrects it
  // once a sixty-fourth is read): reserved pages that are never filled are
  // never touched.
  scan.batches.reserve(size_t(std::min<int64_t>(total / 4096 + 16, 1 << 20)));
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
    if (second) {
      if (scan.batch_count == 0) region->first_offset = first;
      if (epoch >= 0 && region->first_epoch < 0) region->first_epoch = epoch;
      if (region->marks.size() >= region->max_marks) {
        scan.error = Status::TooLarge(fmt::format("{}: more than {} batches after position {}",
                                                  path, region->max_marks, from));
        return;
      }
      MakeRoom(&region->marks, 1, scan.valid_bytes, total);
      region->marks.push_back(
          {int32_t(scan.valid_bytes), int32_t(last - base_offset), batch_max_ts});
    } else if (scan.valid_bytes - last_index_entry > index_interval_bytes) {
      scan.index_points.push_back(
          {last, int32_t(scan.valid_bytes), scan.max_timestamp, scan.shallow_offset_of_max});
      last_index_entry = scan.valid_bytes;
    }
    if (e->is_v2()) {
      // Retained: the batches whose effect is not local to the segment.
      const RecordBatchView batch = e->batch();
      const bool raises_epoch = RaisesEpoch(batch, &max_epoch);
      if (batch.has_producer_id()) {
        thinner.Add(*e, scan, raises_epoch);
      } else if (raises_epoch) {
        AppendRetained(*e, &scan, total);
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
  if (region != nullptr) region->max_epoch = max_epoch_seen;
}

}  // namespace

SegmentRecoveryScan ScanSegmentForRecovery(const File* file, const std::string& path,
                                           int64_t base_offset, int64_t size,
                                           int32_t index_interval_bytes,
                                           std::optional<int64_t> next_segment_base) {
  SegmentRecoveryScan scan;
  BatchThinner thinner(&scan, size);
  Violation violation;
  Scan(file, path, base_offset, 0, size, index_interval_bytes, next_segment_base, thinner, scan,
       &violation, nullptr);
  scan.thinned_batches = thinner.Finish();
  if (violation.cut_position < 0) return scan;
  // Scan again up to the cut, so that what is retained (and thinned: a
  // producer batch is dropped only for later batches that are kept) is
  // exactly what a scan of the kept bytes alone gives. No batch before the
  // cut breaks an order, so this scan reaches its end.
  SegmentRecoveryScan kept;
  BatchThinner kept_thinner(&kept, violation.cut_position);
  Violation none;
  Scan(file, path, base_offset, 0, violation.cut_position, index_interval_bytes, next_segment_base,
       kept_thinner, kept, &none, nullptr);
  kept.thinned_batches = kept_thinner.Finish();
  if (!kept.error.ok() || kept.corrupt_batch) return kept;  // the bytes changed under the scan
  kept.corrupt_batch = true;
  kept.uncovered_field_damage = true;
  kept.reader_stop = StopReason::kNone;
  kept.stop_reason = std::move(violation.why);
  kept.stop_kind = violation.kind;
  return kept;
}

SegmentRecoveryScan ScanSegmentPart(const File* file, const std::string& path, int64_t base_offset,
                                    int64_t from, int64_t to, int64_t file_size,
                                    int32_t index_interval_bytes,
                                    std::optional<int64_t> next_segment_base,
                                    SegmentScanPartInfo* info) {
  SegmentRecoveryScan scan;
  BatchThinner thinner(&scan, to - from);
  Violation violation;
  info->file_size = file_size;
  Scan(file, path, base_offset, from, to, index_interval_bytes, next_segment_base, thinner, scan,
       &violation, info);
  scan.thinned_batches = thinner.Finish();
  // The whole scan's rescan up to a violation is not done here: such a
  // part is scanned again whole (segment_scan_split.h).
  const bool ordered = violation.cut_position < 0 && scan.error.ok();
  info->clean = ordered && !scan.corrupt_batch && scan.reader_stop == StopReason::kEndOfFile &&
                scan.valid_bytes == to - from;
  info->stopped_at_damage = ordered && !scan.stop_reason.empty();
  return scan;
}

}  // namespace daruma
