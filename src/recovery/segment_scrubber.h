// ScrubSegment: re-verifies one old segment's `.log` for the broker's
// background scrubber (broker/scrubber.h) — damage below the recovery point,
// which start-up recovery never reads again (as in Kafka).
//
// Every entry gets the checks recovery and `daruma check` make
// (log/segment_recovery_scan.h): framing (size >= 14, whole entry inside the
// segment), magic 0-2, LogEntry::Validate (v2: size >= 61 and CRC-32C;
// v0/v1: CRC-32), and the orders no CRC covers: offsets strictly increase,
// lie in [segment base, next segment base) and fit the relative-offset rule,
// leader epochs are >= -1 and never decrease. Unlike recovery, a scrub does
// not stop at the first bad entry: a bad CRC or magic with a plausible size
// is one damaged entry, and the scan goes on at the next one, so a flipped
// bit in a payload costs that one batch and not the rest of the segment. A
// size that cannot be trusted (< 14, past the end) ends the scan with the
// rest of the segment damaged. Adjacent damaged entries merge into one range.
// An order violation cannot tell the culprit: either the batch that breaks
// the order or the last valid one before it (which set the maximum) was
// damaged, so the range covers both (log/batch_order_check.h).
//
// Reading: ReadAt through `fs` in chunk_bytes blocks (never mapped: the file
// may be renamed or truncated underneath), each block admitted by the rate
// limiter first and, with drop_cache, evicted from the page cache before it
// is read, so the bytes come from the medium (what a scrub is for) where the
// OS honours the advice. The segment's bytes below the recovery point do not
// change while it is read, except by retention, the cleaner, truncation or
// topic deletion renaming or removing the file: a file that is gone when
// opened is kNotFound (not damage); one removed after it was opened is still
// read to the end through the open handle. Deciding whether what was found
// still belongs to the log is the caller's job (it scans again).
//
// Thread safety: reads only; any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"
#include "recovery/scrub_findings.h"
#include "recovery/scrub_rate_limiter.h"

namespace daruma {

struct SegmentScrubParams {
  std::string path;  // the segment's `.log`
  int64_t base_offset = 0;
  // The next segment's base offset; no batch of this one may reach it.
  std::optional<int64_t> next_base;
  // Bytes to verify from position 0: the segment's size when it was listed.
  // A file shorter than that is damage from its end on.
  int64_t size = 0;
  size_t chunk_bytes = size_t(1) << 20;
  ScrubRateLimiter* limiter = nullptr;  // null: unthrottled
  const std::atomic<bool>* stop = nullptr;
  bool drop_cache = true;
  // Progress, added to as blocks are read, each byte once.
  std::atomic<int64_t>* bytes_read = nullptr;
};

struct SegmentScrubResult {
  bool completed = false;           // false: stopped (the stop flag or the limiter) before the end
  int64_t bytes = 0;                // distinct bytes read (the limiter is charged for re-reads too)
  int64_t batches = 0;              // valid entries
  std::vector<ScrubDamage> damage;  // by position, disjoint
};

// kNotFound when the file is gone; kIoError when it cannot be opened or
// sized (a read error inside it is damage of kind kIoError instead).
Result<SegmentScrubResult> ScrubSegment(FileSystem* fs, const SegmentScrubParams& params);

}  // namespace daruma
