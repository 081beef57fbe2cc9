#include "log/cleanable_log.h"

#include <algorithm>
#include <limits>

#include "record/file_batch_reader.h"

namespace daruma {
namespace {

// Kafka's logSegments(from, to): segments overlapping [from, to), i.e. from
// the one holding `from` to the last with base < to.
std::vector<size_t> SegmentsOverlapping(const std::vector<Log::CleanerSegmentView>& segs,
                                        int64_t from, int64_t to) {
  std::vector<size_t> out;
  for (size_t i = 0; i < segs.size(); ++i) {
    const bool next_starts_after_from = i + 1 == segs.size() || segs[i + 1].base_offset > from;
    if (segs[i].base_offset < to && next_starts_after_from) out.push_back(i);
  }
  return out;
}

// The max timestamp of a segment's first batch, or nullopt when it has none.
Result<std::optional<int64_t>> FirstBatchTimestamp(const Log::CleanerSegmentView& seg) {
  FileBatchReaderOptions ro;
  ro.end_position = uint64_t(seg.size);
  ro.block_size = 4096;
  FileBatchReader reader(seg.segment->log_file(), ro);
  if (auto entry = reader.Next(); entry && entry->has_batch_header()) {
    return std::optional<int64_t>(entry->max_timestamp());
  }
  DARUMA_RETURN_IF_ERROR(reader.ScanStatus());
  return std::optional<int64_t>();
}

}  // namespace

Result<LogToClean> ComputeLogToClean(const Log::CleanerView& view,
                                     std::optional<int64_t> checkpointed_first_dirty,
                                     const CompactionConfig& config, int64_t now_ms) {
  LogToClean out;
  const auto& segs = view.segments;
  out.first_dirty_offset = checkpointed_first_dirty.value_or(view.log_start_offset);
  if (out.first_dirty_offset < view.log_start_offset ||
      out.first_dirty_offset > view.log_end_offset) {
    out.checkpoint_reset = checkpointed_first_dirty.has_value();
    out.first_dirty_offset = view.log_start_offset;
  }
  const int64_t active_base = segs.empty() ? view.log_end_offset : segs.back().base_offset;
  int64_t uncleanable = std::min(view.last_stable_offset, active_base);
  for (size_t i : SegmentsOverlapping(segs, out.first_dirty_offset, active_base)) {
    if (config.min_compaction_lag_ms > 0 &&
        segs[i].largest_timestamp > now_ms - config.min_compaction_lag_ms) {
      uncleanable = std::min(uncleanable, segs[i].base_offset);
      break;
    }
  }
  out.first_uncleanable_offset = std::max(uncleanable, out.first_dirty_offset);
  for (size_t i : SegmentsOverlapping(segs, -1, out.first_dirty_offset)) {
    out.clean_bytes += segs[i].size;
  }
  for (size_t i : SegmentsOverlapping(segs, out.first_dirty_offset, out.first_uncleanable_offset)) {
    out.cleanable_bytes += segs[i].size;
  }
  if (config.max_compaction_lag_ms < std::numeric_limits<int64_t>::max()) {
    for (size_t i : SegmentsOverlapping(segs, out.first_dirty_offset, active_base)) {
      DARUMA_ASSIGN_OR_RETURN(auto first_ts, FirstBatchTimestamp(segs[i]));
      if (first_ts && *first_ts >= 0 && *first_ts < now_ms - config.max_compaction_lag_ms) {
        out.max_compaction_lag_exceeded = true;
        break;
      }
    }
  }
  return out;
}

std::vector<std::vector<size_t>> GroupSegmentsBySize(
    const std::vector<Log::CleanerSegmentView>& segments, int64_t max_segment_bytes,
    int64_t max_index_bytes, int64_t first_uncleanable_offset) {
  std::vector<std::vector<size_t>> groups;
  size_t i = 0;
  while (i < segments.size()) {
    std::vector<size_t> group{i};
    int64_t log_size = segments[i].size;
    int64_t index_size = segments[i].offset_index_bytes;
    int64_t time_index_size = segments[i].time_index_bytes;
    const int64_t group_base = segments[i].base_offset;
    ++i;
    while (i < segments.size()) {
      const auto& s = segments[i];
      const int64_t last_offset =
          i + 1 < segments.size() ? segments[i + 1].base_offset - 1 : first_uncleanable_offset - 1;
      const bool fits =
          log_size + s.size <= max_segment_bytes &&
          index_size + s.offset_index_bytes <= max_index_bytes &&
          time_index_size + s.time_index_bytes <= max_index_bytes &&
          (s.size == 0 || last_offset - group_base <= std::numeric_limits<int32_t>::max());
      if (!fits) break;
      group.push_back(i);
      log_size += s.size;
      index_size += s.offset_index_bytes;
      time_index_size += s.time_index_bytes;
      ++i;
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

}  // namespace daruma
