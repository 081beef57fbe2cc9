#include "log/segment_scan_split.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "common/bytes.h"
#include "record/record_batch.h"

namespace daruma {

namespace {

// Whether buf[at, end) starts with a whole v2 batch with a valid CRC whose
// baseOffset is >= base_offset; sets *size and *last_offset if so.
bool WholeBatchAt(const uint8_t* buf, size_t at, size_t end, int64_t base_offset, size_t* size,
                  int64_t* last_offset) {
  namespace L = batch_layout;
  if (end - at < size_t(kRecordBatchOverhead)) return false;
  const uint8_t* b = buf + at;
  if (b[L::kMagic] != kMagicV2) return false;
  const int32_t length = int32_t(LoadBe32(b + L::kLength));
  if (length < kRecordBatchOverhead - int32_t(L::kPartitionLeaderEpoch)) return false;
  const size_t n = size_t(length) + L::kPartitionLeaderEpoch;
  if (n > end - at) return false;
  const RecordBatchView batch(ByteSpan(b, n));
  if (batch.base_offset() < base_offset || !batch.crc_valid()) return false;
  *size = n;
  *last_offset = batch.last_offset();
  return true;
}

}  // namespace

std::optional<int64_t> FindBatchBoundary(const File* file, int64_t from, int64_t size,
                                         int64_t window, int64_t base_offset, int64_t* batch_size) {
  const size_t n = size_t(std::max<int64_t>(0, std::min(window, size - from)));
  if (n < size_t(kRecordBatchOverhead)) return std::nullopt;
  Bytes buf(n);
  Result<size_t> read = file->ReadAt(uint64_t(from), buf);
  if (!read.ok() || *read != n) return std::nullopt;
  const uint8_t* data = buf.data();
  const size_t magic = batch_layout::kMagic;
  // Candidates are the positions 16 bytes before a byte 2 (the magic).
  for (size_t at = 0; at + size_t(kRecordBatchOverhead) <= n;) {
    const void* hit = std::memchr(data + at + magic, kMagicV2, n - at - magic);
    if (hit == nullptr) break;
    at = size_t(static_cast<const uint8_t*>(hit) - data) - magic;
    size_t found_size = 0;
    int64_t last = 0;
    if (WholeBatchAt(data, at, n, base_offset, &found_size, &last)) {
      if (batch_size != nullptr) *batch_size = int64_t(found_size);
      const size_t next = at + found_size;
      if (from + int64_t(next) == size) return from + int64_t(at);
      // The batch after it validates too, unless the window ends first.
      size_t next_size = 0;
      int64_t next_last = 0;
      const bool next_whole = WholeBatchAt(data, next, n, last + 1, &next_size, &next_last);
      const bool next_cut = n - next < size_t(kRecordBatchOverhead) ||
                            size_t(LoadBe32(data + next + batch_layout::kLength)) +
                                    batch_layout::kPartitionLeaderEpoch >
                                n - next;
      if (next_whole || next_cut) return from + int64_t(at);
    }
    ++at;
  }
  return std::nullopt;
}

SplitSegmentScan::SplitSegmentScan(const File* file, std::string path, int64_t base_offset,
                                   int64_t size, int32_t index_interval_bytes,
                                   std::optional<int64_t> next_segment_base,
                                   std::optional<int64_t> split_at)
    : file_(file),
      path_(std::move(path)),
      base_offset_(base_offset),
      size_(size),
      index_interval_bytes_(index_interval_bytes),
      next_segment_base_(next_segment_base),
      split_at_(split_at) {}

namespace {
std::atomic<int64_t> min_split_bytes{SplitSegmentScan::kMinSplitBytes};
std::atomic<int64_t> max_marks{SplitSegmentScan::kMaxMarks};
}  // namespace

std::atomic<int64_t> SplitSegmentScan::joins_{0};

int64_t SplitSegmentScan::min_split_bytes() {
  return daruma::min_split_bytes.load(std::memory_order_relaxed);
}

void SplitSegmentScan::set_min_split_bytes_for_testing(int64_t bytes) {
  daruma::min_split_bytes.store(bytes, std::memory_order_relaxed);
}

int64_t SplitSegmentScan::max_marks() {
  return daruma::max_marks.load(std::memory_order_relaxed);
}

void SplitSegmentScan::set_max_marks_for_testing(int64_t marks) {
  daruma::max_marks.store(marks, std::memory_order_relaxed);
}

std::optional<int64_t> SplitSegmentScan::SplitPoint() {
  std::call_once(found_, [this] {
    if (split_at_) {
      point_ = split_at_;
      return;
    }
    if (size_ < min_split_bytes()) return;
    int64_t batch_size = 0;
    point_ = FindBatchBoundary(file_, size_ / 2, size_, kSearchWindow, base_offset_, &batch_size);
    if (!point_ && size_ / 2 + kSearchWindow < size_) {
      point_ =
          FindBatchBoundary(file_, size_ / 2, size_, kLargeSearchWindow, base_offset_, &batch_size);
    }
    // The second part's marks, if its batches are like the one at P.
    if (point_ && (size_ - *point_) / std::max<int64_t>(batch_size, 1) > max_marks()) {
      point_.reset();
    }
  });
  return point_;
}

SegmentRecoveryScan SplitSegmentScan::ScanWhole() const {
  return ScanSegmentForRecovery(file_, path_, base_offset_, size_, index_interval_bytes_,
                                next_segment_base_);
}

SegmentScanPart SplitSegmentScan::ScanFirst() {
  SegmentScanPart part;
  const std::optional<int64_t> p = SplitPoint();
  if (!p) {
    part.scan = ScanWhole();
    return part;
  }
  part.scan = ScanSegmentPart(file_, path_, base_offset_, 0, *p, size_, index_interval_bytes_,
                              next_segment_base_, &part.info);
  return part;
}

SegmentScanPart SplitSegmentScan::ScanSecond() {
  SegmentScanPart part;
  const std::optional<int64_t> p = SplitPoint();
  if (!p) return part;
  part.info.max_marks = size_t(2 * max_marks());
  part.scan = ScanSegmentPart(file_, path_, base_offset_, *p, size_, size_, index_interval_bytes_,
                              next_segment_base_, &part.info);
  return part;
}

SegmentRecoveryScan SplitSegmentScan::Join(SegmentScanPart first, SegmentScanPart second) {
  const std::optional<int64_t> p = SplitPoint();
  if (!p) return std::move(first.scan);  // ScanFirst scanned it whole
  std::optional<SegmentRecoveryScan> joined = TryJoin(*p, first, second);
  if (joined) return std::move(*joined);
  // Damage, or P was not a batch boundary: the whole scan finds and
  // reports it as it would without a split.
  rescanned_ = true;
  return ScanWhole();
}

std::optional<SegmentRecoveryScan> SplitSegmentScan::TryJoin(int64_t p, SegmentScanPart& first,
                                                             SegmentScanPart& second) const {
  SegmentRecoveryScan& x = first.scan;
  const SegmentRecoveryScan& y = second.scan;
  const SegmentScanPartInfo& b = second.info;
  // The first part walked from 0 and ended exactly at P: P is a boundary.
  // The second part may stop at damage (a crash's torn tail, usually): a
  // whole scan stops there too, with the same message, its positions
  // being the file's.
  if (!first.info.clean || !(b.clean || b.stopped_at_damage) || x.valid_bytes != p ||
      x.batch_count == 0 || int64_t(b.marks.size()) != y.batch_count) {
    return std::nullopt;
  }
  // What a whole scan checks at P's batch against those before it. Later
  // batches of the second part passed the same checks against its own
  // earlier batches, whose maxima are then already above the first part's.
  if (y.batch_count > 0 && b.first_offset < x.next_offset) return std::nullopt;
  if (b.first_epoch >= 0 && b.first_epoch < first.info.max_epoch) return std::nullopt;

  if (y.batch_count > 0 && !x.first_gap && b.first_offset > x.next_offset) {
    x.first_gap = SegmentRecoveryScan::OffsetGap{p, x.next_offset - 1, b.first_offset};
  } else if (!x.first_gap) {
    x.first_gap = y.first_gap;  // its position is the file's already
  }

  // Running maxima across P: a second-part value only where it is above
  // the first part's (a whole scan moves them on a strictly larger
  // timestamp only).
  const int64_t first_max_ts = x.max_timestamp;
  const int64_t first_shallow = x.shallow_offset_of_max;
  // Index points, by the whole scan's rule from the first part's last one.
  int64_t last_entry = x.index_points.empty() ? 0 : x.index_points.back().position;
  int64_t max_ts = x.max_timestamp;
  int64_t shallow = x.shallow_offset_of_max;
  for (const SegmentScanPartInfo::Mark& m : b.marks) {
    const int64_t position = p + m.position;
    const int64_t last = base_offset_ + m.last_delta;
    if (m.max_timestamp > max_ts) {
      max_ts = m.max_timestamp;
      shallow = last;
    }
    if (position - last_entry > index_interval_bytes_) {
      x.index_points.push_back({last, int32_t(position), max_ts, shallow});
      last_entry = position;
    }
  }

  const int64_t ordinal_shift = x.batch_count;
  const uint32_t control_shift = uint32_t(x.control_bytes.size());
  x.batches.reserve(x.batches.size() + y.batches.size());
  for (SegmentRecoveryScan::Batch r : y.batches) {
    r.position += p;
    r.end += p;
    r.ordinal += ordinal_shift;
    if (r.control_size > 0) r.control_offset += control_shift;
    if (r.prev_v2_next_offset == kUnknownV2NextOffset) r.prev_v2_next_offset = x.v2_next_offset;
    if (r.max_timestamp <= first_max_ts) {
      r.max_timestamp = first_max_ts;
      r.shallow_offset_of_max = first_shallow;
    }
    x.batches.push_back(r);
  }
  x.control_bytes.insert(x.control_bytes.end(), y.control_bytes.begin(), y.control_bytes.end());
  x.thinned_batches += y.thinned_batches;
  x.valid_bytes += y.valid_bytes;
  x.batch_count += y.batch_count;
  if (y.batch_count > 0) x.next_offset = y.next_offset;
  if (y.v2_next_offset != kUnknownV2NextOffset) x.v2_next_offset = y.v2_next_offset;
  x.max_timestamp = max_ts;
  x.shallow_offset_of_max = shallow;
  x.reader_stop = y.reader_stop;
  x.stop_reason = y.stop_reason;
  x.stop_kind = y.stop_kind;
  x.corrupt_batch = y.corrupt_batch;
  joins_.fetch_add(1, std::memory_order_relaxed);
  return std::move(x);
}

}  // namespace daruma
