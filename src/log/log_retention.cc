// Log retention (spec §11.2, Kafka's UnifiedLog.deleteOldSegments) and the
// flush bookkeeping the log manager's jobs read. Part of class Log (log.h).
//
// The walk: oldest segment first, stop at the first segment that fails. A
// segment is deletable when the predicate holds, the high watermark is at or
// above its upper bound (the next segment's base, or the log end offset for
// the last one), and it is not an empty last segment. When every segment is
// deletable a new segment is rolled first, so a log always has one.
#include <fmt/format.h>

#include "log/log.h"
#include "log/log_file_names.h"

namespace daruma {

std::string_view Log::RetentionCauseName(RetentionCause cause) {
  switch (cause) {
    case RetentionCause::kLogStartOffset:
      return "log_start_offset";
    case RetentionCause::kRetentionBytes:
      return "retention.bytes";
    case RetentionCause::kRetentionMs:
      return "retention.ms";
  }
  return "unknown";
}

Result<Log::RetentionResult> Log::DeleteOldSegments() {
  std::lock_guard<std::mutex> lock(mu_);
  RetentionResult out;
  auto Finished = [this](RetentionResult r) {
    r.log_start_offset = log_start_offset_;
    return Result<RetentionResult>(std::move(r));
  };
  // 1. Log-start-offset breach, whatever the cleanup policy.
  DARUMA_ASSIGN_OR_RETURN(auto below_start,
                          DeletableSegmentsLocked([this](LogSegment&, LogSegment* next) {
                            return Result<bool>(next && next->base_offset() <= log_start_offset_);
                          }));
  DARUMA_RETURN_IF_ERROR(
      DeleteSegmentsLocked(below_start, RetentionCause::kLogStartOffset, log_start_offset_, &out)
          .status());
  if (!config_.delete_policy) return Finished(std::move(out));

  // 2. Size: delete while the excess still covers the whole segment.
  int64_t size = 0;
  for (const auto& [base, segment] : segments_) size += segment->size();
  if (config_.retention_bytes >= 0 && size >= config_.retention_bytes) {
    int64_t excess = size - config_.retention_bytes;
    DARUMA_ASSIGN_OR_RETURN(auto over_size,
                            DeletableSegmentsLocked([&excess](LogSegment& segment, LogSegment*) {
                              if (excess - segment.size() < 0) return Result<bool>(false);
                              excess -= segment.size();
                              return Result<bool>(true);
                            }));
    DARUMA_RETURN_IF_ERROR(DeleteSegmentsLocked(over_size, RetentionCause::kRetentionBytes,
                                                config_.retention_bytes, &out)
                               .status());
  }

  // 3. Time: now - largest timestamp (or .log mtime) > retention.ms.
  if (config_.retention_ms >= 0) {
    const int64_t now = clock_->NowMs();
    const int64_t retention_ms = config_.retention_ms;
    DARUMA_ASSIGN_OR_RETURN(
        auto expired, DeletableSegmentsLocked(
                          [now, retention_ms](LogSegment& segment, LogSegment*) -> Result<bool> {
                            DARUMA_ASSIGN_OR_RETURN(int64_t largest, segment.LargestTimestamp());
                            return now - largest > retention_ms;
                          }));
    DARUMA_RETURN_IF_ERROR(
        DeleteSegmentsLocked(expired, RetentionCause::kRetentionMs, retention_ms, &out).status());
  }
  return Finished(std::move(out));
}

Result<std::vector<int64_t>> Log::DeletableSegmentsLocked(const RetentionPredicate& predicate) {
  std::vector<int64_t> deletable;
  for (auto it = segments_.begin(); it != segments_.end(); ++it) {
    LogSegment& segment = *it->second;
    auto next = std::next(it);
    LogSegment* next_segment = next == segments_.end() ? nullptr : next->second.get();
    const bool last_and_empty = next_segment == nullptr && segment.size() == 0;
    const int64_t upper = next_segment ? next_segment->base_offset() : log_end_offset_;
    // Nothing at or above the high watermark goes, so the log start offset
    // can never pass it. The predicate is not asked then (the size walk
    // counts down as it is asked).
    if (high_watermark_ < upper || last_and_empty) break;
    DARUMA_ASSIGN_OR_RETURN(bool expired, predicate(segment, next_segment));
    if (!expired) break;
    deletable.push_back(it->first);
  }
  return deletable;
}

Result<int> Log::DeleteSegmentsLocked(const std::vector<int64_t>& bases, RetentionCause cause,
                                      int64_t limit, RetentionResult* out) {
  if (bases.empty()) return 0;
  out->breaches.push_back(RetentionBreach{cause, limit, out->segments.size(), 0});
  std::vector<int64_t> to_delete = bases;
  if (to_delete.size() == segments_.size()) {
    DARUMA_RETURN_IF_ERROR(RollLocked(std::nullopt));
    if (to_delete.back() == active()->base_offset()) to_delete.pop_back();
  }
  for (int64_t base : to_delete) {
    auto node = segments_.extract(base);
    std::unique_ptr<LogSegment> segment = std::move(node.mapped());
    Status renamed = segment->ChangeFileSuffixes("", std::string(kDeletedFileSuffix));
    out->segments.push_back(std::move(segment));
    ++out->breaches.back().count;
    if (!renamed.ok()) {
      return renamed.WithContext(
          fmt::format("{}: retention deleting segment {}", tp_.ToString(), base));
    }
  }
  for (int64_t base : bases) {
    DARUMA_ASSIGN_OR_RETURN(auto snapshot, producer_state_->RemoveAndMarkSnapshotForDeletion(base));
    if (snapshot) out->deleted_snapshots.push_back(*snapshot);
  }
  DARUMA_RETURN_IF_ERROR(MaybeIncrementLogStartOffsetLocked(segments_.begin()->first));
  return int(to_delete.size());
}

void Log::UpdateConfig(const LogConfig& config) {
  std::lock_guard<std::mutex> lock(mu_);
  config_ = config;
}

LogConfig Log::config_snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return config_;
}

int64_t Log::last_flush_ms() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_flush_ms_;
}

void Log::SetFlushListener(std::function<void()> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  flush_listener_ = std::move(listener);
}

}  // namespace daruma
