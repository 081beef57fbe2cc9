// SplitSegmentScan: one segment's recovery scan (segment_recovery_scan.h) run
// as two parts on two threads, then joined into the scan a whole pass would
// give, for the fold to apply as it applies any scan.
//
// Why: a partition's segments are scanned a segment per thread
// (recovery/segment_scan_pipeline.h), so at the end of a load one thread
// scanned the last segment while the other idled, and after a crash that
// segment (the active one) is often the only one scanned.
//
// The split point P is a batch boundary near the middle, found by reading a
// window there and taking the first position where a whole v2 batch with a
// valid CRC starts (and the batch after it validates too, when the window
// holds it). P is only a guess until the first part, which walks the
// batches from position 0, ends exactly at P: then, and only then, P is a
// batch boundary of the segment, and the parts are joined. Otherwise (no
// point found, a part not clean, the first part not ending at P, an order a
// whole scan would find broken across P) Join scans the whole segment again
// on its own thread, so damage is found and reported exactly as by
// ScanSegmentForRecovery.
//
// What the join gives, against a whole scan:
//  * The same valid bytes, batch count, offsets, maximum timestamp, offset
//    gap, and index points: a second part notes every batch (position, last
//    offset, timestamp) and the join places its points by Kafka's rule,
//    counted from the first part's last point, with the running maximum
//    timestamp carried across P. Retained batches get their positions,
//    ordinals and running values shifted or completed the same way.
//  * Retained batches whose replay leaves the same state: each part's batch
//    thinner decides alone, exactly as at a segment boundary (the loader
//    replays the segments' retained batches back to back), and every thinner
//    rule (five later batches of a producer, whole transactions, the local
//    last stable offset of aborts, new leader epochs) looks only at batches
//    inside its part. A part may retain batches a whole scan would not: each
//    producer's first batch in the second part, a transaction open across P
//    (never left out whole), a batch that raises only its part's leader
//    epoch. Their replay leaves the same state, as at a segment boundary.
//  * The same stop: the second part may end at damage (a crash's torn tail
//    of the active segment, usually) and the join keeps its stop, which a
//    whole scan meets at the same bytes. Damage in the first part, an order
//    violation (whose cut may lie before P), an offset overflow or an I/O
//    error make Join scan the segment whole.
//
// Memory: the second part's marks, 16 bytes per batch of the half segment
// (1 MiB for 64 MiB of 1 KiB batches; at most 2 x kMaxMarks), freed at the
// join.
//
// Thread safety: ScanFirst and ScanSecond may run at once on two threads;
// Join after both returned. The segment's file must not change meanwhile
// (SegmentScanPipeline's contract).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "common/file_system.h"
#include "log/segment_recovery_scan.h"

namespace daruma {

struct SegmentScanPart {
  SegmentRecoveryScan scan;
  SegmentScanPartInfo info;
};

class SplitSegmentScan {
 public:
  // Segments smaller than this are scanned whole: the join and the search
  // for P would cost more than the second thread saves.
  static constexpr int64_t kMinSplitBytes = int64_t{8} << 20;
  // kMinSplitBytes, unless a test lowered it to split tiny segments.
  static int64_t min_split_bytes();
  static void set_min_split_bytes_for_testing(int64_t bytes);
  // Where P is looked for: from the middle on, in this much of the file,
  // then in kLargeSearchWindow when no whole batch lies in it (batches of
  // hundreds of KiB; a batch is at most message.max.bytes, 1 MiB by default).
  // A segment whose middle batch is larger still is scanned whole.
  static constexpr int64_t kSearchWindow = int64_t{256} << 10;
  static constexpr int64_t kLargeSearchWindow = int64_t{4} << 20;
  // The second part's marks (16 bytes per batch) are bounded: a segment
  // whose batch at P predicts more than this many batches after P (a 1 GiB
  // segment of batches under ~256 bytes) is scanned whole, and a second part
  // that meets twice as many stops, and the segment is scanned whole.
  static constexpr int64_t kMaxMarks = int64_t{2} << 20;
  // kMaxMarks, unless a test lowered it.
  static int64_t max_marks();
  static void set_max_marks_for_testing(int64_t marks);

  // The segment `file` (of `size` bytes) named `path`, based at
  // `base_offset`, as LogSegment::ScanForRecovery scans it. `split_at`
  // (tests) is taken for P instead of searching for it; it need not be a
  // batch boundary.
  SplitSegmentScan(const File* file, std::string path, int64_t base_offset, int64_t size,
                   int32_t index_interval_bytes, std::optional<int64_t> next_segment_base,
                   std::optional<int64_t> split_at = std::nullopt);

  // [0, P), or the whole segment when no P was found.
  SegmentScanPart ScanFirst();
  // [P, size), or nothing when no P was found.
  SegmentScanPart ScanSecond();
  // The scan of the whole segment, from the two parts.
  SegmentRecoveryScan Join(SegmentScanPart first, SegmentScanPart second);

  // P, once ScanFirst or ScanSecond ran (for tests).
  std::optional<int64_t> split_point() { return SplitPoint(); }
  // Join could not join the parts and scanned the segment whole.
  bool rescanned() const { return rescanned_; }
  // Joins done by all instances (tests: that splits really join).
  static int64_t joins() { return joins_.load(std::memory_order_relaxed); }

 private:
  std::optional<int64_t> SplitPoint();
  // The joined scan, or nullopt when the parts cannot be joined.
  std::optional<SegmentRecoveryScan> TryJoin(int64_t p, SegmentScanPart& first,
                                             SegmentScanPart& second) const;
  SegmentRecoveryScan ScanWhole() const;

  const File* file_;
  std::string path_;
  int64_t base_offset_;
  int64_t size_;
  int32_t index_interval_bytes_;
  std::optional<int64_t> next_segment_base_;
  std::optional<int64_t> split_at_;
  std::once_flag found_;
  std::optional<int64_t> point_;
  bool rescanned_ = false;
  static std::atomic<int64_t> joins_;
};

// The first position in [from, from + window) of `file` (of `size` bytes)
// where a whole v2 batch with a valid CRC and a baseOffset >= base_offset
// starts, and the batch after it, if the window holds it, validates too and
// starts above its last offset; *batch_size (if given) gets that batch's
// size. nullopt if none, or on a read error.
std::optional<int64_t> FindBatchBoundary(const File* file, int64_t from, int64_t size,
                                         int64_t window, int64_t base_offset,
                                         int64_t* batch_size = nullptr);

}  // namespace daruma
