// Choosing what to clean (spec §11.6 "Choosing a log", Kafka's
// LogCleanerManager.cleanableOffsets / LogToClean / groupSegmentsBySize).
//
// Offsets of one log, for one cleaning round:
//   first_dirty_offset: where the last round stopped (cleaner-offset-checkpoint),
//     reset to the log start when the checkpoint is missing, below the log
//     start or above the log end;
//   first_uncleanable_offset: min(last stable offset, active segment base,
//     base of the first dirty non-active segment newer than
//     min.compaction.lag.ms), never below first_dirty_offset.
// The dirty ratio is cleanable / (clean + cleanable) bytes, where clean bytes
// are the segments below first_dirty_offset and cleanable bytes the segments
// from the one holding first_dirty_offset up to first_uncleanable_offset.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/status.h"
#include "log/cleaner_config.h"
#include "log/log.h"

namespace daruma {

struct LogToClean {
  int64_t first_dirty_offset = 0;
  int64_t first_uncleanable_offset = 0;
  int64_t clean_bytes = 0;
  int64_t cleanable_bytes = 0;
  // The checkpointed first dirty offset was out of range and must be rewritten.
  bool checkpoint_reset = false;
  // A dirty segment's first batch is older than max.compaction.lag.ms.
  bool max_compaction_lag_exceeded = false;

  double DirtyRatio() const {
    const int64_t total = clean_bytes + cleanable_bytes;
    return total == 0 ? 0.0 : double(cleanable_bytes) / double(total);
  }
  // Kafka: ratio > min.cleanable.dirty.ratio, or a max-lag violation with
  // something to clean; never for an empty log.
  bool ShouldClean(const CompactionConfig& config) const {
    if (clean_bytes + cleanable_bytes == 0) return false;
    return DirtyRatio() > config.min_cleanable_dirty_ratio ||
           (max_compaction_lag_exceeded && cleanable_bytes > 0);
  }
};

// Computes the round's offsets and sizes. Reads the first batch of dirty
// segments only when max.compaction.lag.ms is finite.
Result<LogToClean> ComputeLogToClean(const Log::CleanerView& view,
                                     std::optional<int64_t> checkpointed_first_dirty,
                                     const CompactionConfig& config, int64_t now_ms);

// Kafka's groupSegmentsBySize: consecutive segments whose summed .log sizes
// stay <= max_segment_bytes, summed offset/time index sizes <= max_index_bytes,
// and whose offsets fit 2^31-1 relative offsets of the group's first base
// (the span of a candidate runs to the next segment's base - 1, or
// first_uncleanable_offset - 1 for the last one; an empty candidate skips the
// check). Indexes into `segments`, in order.
std::vector<std::vector<size_t>> GroupSegmentsBySize(
    const std::vector<Log::CleanerSegmentView>& segments, int64_t max_segment_bytes,
    int64_t max_index_bytes, int64_t first_uncleanable_offset);

}  // namespace daruma
