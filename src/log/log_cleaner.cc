#include "log/log_cleaner.h"

#include <fmt/format.h>

#include <chrono>

#include "log/cleanable_log.h"
#include "log/offset_checkpoint_file.h"

namespace daruma {
namespace {

// Kafka's throttler checks its rate every 300 ms.
constexpr int64_t kThrottleCheckIntervalMs = 300;

}  // namespace

LogCleaner::LogCleaner(FileSystem* fs, const CleanerConfig& config, Clock* clock)
    : fs_(fs),
      config_(config),
      clock_(clock),
      throttler_(config.io_max_bytes_per_second, kThrottleCheckIntervalMs, Clock::System()),
      dispose_([fs](Log*, Log::RetentionResult removed) {
        // Best effort, like Kafka's asynchronous deletion: the loader removes
        // any `.deleted` file left behind at the next start.
        for (auto& segment : removed.segments) (void)segment->DeleteFiles();
        for (const auto& path : removed.deleted_snapshots) (void)fs->Remove(path);
      }) {}

LogCleaner::~LogCleaner() {
  Stop();
}

void LogCleaner::AddLog(Log* log, const CompactionConfig& config) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = logs_[log];
  e.config = config;
  e.uncleanable = false;
}

void LogCleaner::RemoveLog(Log* log) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = logs_.find(log);
  if (it == logs_.end()) return;
  // Paused first: another thread must not claim it again, unaborted,
  // between the running clean's end and the erase.
  it->second.paused++;
  AbortLocked(it->second);
  cv_.wait(lock, [&] { return !logs_.count(log) || !logs_[log].in_progress; });
  logs_.erase(log);
}

void LogCleaner::AbortAndPauseCleaning(Log* log) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = logs_.find(log);
  if (it == logs_.end()) return;
  it->second.paused++;
  AbortLocked(it->second);
  cv_.wait(lock, [&] { return !logs_.at(log).in_progress; });
}

bool LogCleaner::TryPauseCleaning(Log* log) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = logs_.find(log);
  if (it == logs_.end()) return true;
  if (it->second.in_progress) return false;
  it->second.paused++;
  return true;
}

void LogCleaner::ResumeCleaning(Log* log) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = logs_.find(log);
  if (it != logs_.end() && it->second.paused > 0) it->second.paused--;
}

Log* LogCleaner::FindLocked(const TopicPartition& tp) const {
  for (const auto& [log, e] : logs_) {
    if (log->topic_partition() == tp) return log;
  }
  return nullptr;
}

void LogCleaner::AbortAndPauseCleaning(const TopicPartition& tp) {
  Log* log = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    log = FindLocked(tp);
  }
  if (log != nullptr) AbortAndPauseCleaning(log);
}

Status LogCleaner::ResumeAfterTruncation(const TopicPartition& tp, const std::string& log_dir,
                                         int64_t offset) {
  {
    std::lock_guard<std::mutex> lock(checkpoint_mu_);
    DARUMA_ASSIGN_OR_RETURN(auto* offsets, CheckpointsFor(log_dir));
    auto it = offsets->find(tp);
    if (it != offsets->end() && it->second > offset) {
      it->second = offset;
      DARUMA_ASSIGN_OR_RETURN(
          auto file,
          OffsetCheckpointFile::Open(JoinPath(log_dir, kCleanerOffsetCheckpointFileName), fs_));
      DARUMA_RETURN_IF_ERROR(file.Write(*offsets));
    }
  }
  Log* log = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    log = FindLocked(tp);
  }
  if (log != nullptr) ResumeCleaning(log);
  return Status::Ok();
}

Status LogCleaner::AbortAndForget(const TopicPartition& tp, const std::string& log_dir) {
  Log* log = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    log = FindLocked(tp);
  }
  if (log != nullptr) RemoveLog(log);
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  DARUMA_ASSIGN_OR_RETURN(auto* offsets, CheckpointsFor(log_dir));
  if (offsets->erase(tp) == 0) return Status::Ok();
  DARUMA_ASSIGN_OR_RETURN(auto file, OffsetCheckpointFile::Open(
                                         JoinPath(log_dir, kCleanerOffsetCheckpointFileName), fs_));
  return file.Write(*offsets);
}

bool LogCleaner::IsUncleanable(Log* log) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = logs_.find(log);
  return it != logs_.end() && it->second.uncleanable;
}

bool LogCleaner::TryClaim(Log* log) {
  auto it = logs_.find(log);
  if (it == logs_.end() || it->second.in_progress || it->second.paused > 0) return false;
  it->second.in_progress = true;
  // A round claimed while Stop runs stops at its first batch.
  it->second.abort->store(stopping_, std::memory_order_relaxed);
  return true;
}

void LogCleaner::Release(Log* log) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = logs_.find(log);
    if (it != logs_.end()) it->second.in_progress = false;
  }
  cv_.notify_all();
}

Result<std::map<TopicPartition, int64_t>*> LogCleaner::CheckpointsFor(const std::string& log_dir) {
  auto it = checkpoints_.find(log_dir);
  if (it != checkpoints_.end()) return &it->second;
  DARUMA_ASSIGN_OR_RETURN(auto file, OffsetCheckpointFile::Open(
                                         JoinPath(log_dir, kCleanerOffsetCheckpointFileName), fs_));
  DARUMA_ASSIGN_OR_RETURN(auto offsets, file.Read());
  return &checkpoints_.emplace(log_dir, std::move(offsets)).first->second;
}

Result<std::optional<int64_t>> LogCleaner::CheckpointedOffset(Log* log) {
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  DARUMA_ASSIGN_OR_RETURN(auto* offsets, CheckpointsFor(ParentDir(log->dir())));
  auto it = offsets->find(log->topic_partition());
  if (it == offsets->end()) return std::optional<int64_t>();
  return std::optional<int64_t>(it->second);
}

Status LogCleaner::WriteCheckpoint(Log* log, int64_t offset) {
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  const std::string log_dir = ParentDir(log->dir());
  DARUMA_ASSIGN_OR_RETURN(auto* offsets, CheckpointsFor(log_dir));
  (*offsets)[log->topic_partition()] = offset;
  DARUMA_ASSIGN_OR_RETURN(auto file, OffsetCheckpointFile::Open(
                                         JoinPath(log_dir, kCleanerOffsetCheckpointFileName), fs_));
  return file.Write(*offsets);
}

void LogCleaner::HandleError(Log* log, const Status& st) {
  if (st.code() == StatusCode::kAborted) return;  // asked for; nothing is wrong with the log
  if (st.IsIoError()) {
    if (on_io_error_) on_io_error_(log, st);
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = logs_.find(log);
  if (it != logs_.end()) it->second.uncleanable = true;
}

Result<CleanStats> LogCleaner::CleanClaimed(Cleaner* cleaner, Log* log,
                                            const CompactionConfig& config, int64_t now_ms,
                                            bool force) {
  // The claimed log's flag: its entry stays until the claim is released.
  std::shared_ptr<std::atomic<bool>> abort;
  {
    std::lock_guard<std::mutex> lock(mu_);
    abort = logs_.at(log).abort;
  }
  DARUMA_ASSIGN_OR_RETURN(auto view, log->ViewForCleaner());
  DARUMA_ASSIGN_OR_RETURN(auto checkpointed, CheckpointedOffset(log));
  DARUMA_ASSIGN_OR_RETURN(LogToClean to_clean,
                          ComputeLogToClean(view, checkpointed, config, now_ms));
  if (to_clean.checkpoint_reset) {
    DARUMA_RETURN_IF_ERROR(WriteCheckpoint(log, to_clean.first_dirty_offset));
  }
  CleanStats stats;
  stats.first_dirty_offset = stats.end_offset = to_clean.first_dirty_offset;
  if (!force && !to_clean.ShouldClean(config)) return stats;
  if (to_clean.cleanable_bytes == 0) return stats;
  DARUMA_ASSIGN_OR_RETURN(
      stats, cleaner->Clean(log, view, to_clean, config, now_ms, dispose_, abort.get()));
  // Swap protocol step 5: only now does the next round start after end_offset.
  if (stats.cleaned) DARUMA_RETURN_IF_ERROR(WriteCheckpoint(log, stats.end_offset));
  return stats;
}

Result<CleanStats> LogCleaner::CleanOnce(Log* log, int64_t now_ms) {
  CompactionConfig config;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!logs_.count(log)) logs_[log] = Entry{};
    cv_.wait(lock, [&] { return !logs_.at(log).in_progress; });
    if (!TryClaim(log)) {
      return Status::InvalidArgument(
          fmt::format("{}: cleaning is paused for this log", log->topic_partition().ToString()));
    }
    config = logs_.at(log).config;
  }
  std::lock_guard<std::mutex> sync(sync_cleaner_mu_);
  Cleaner* cleaner = CleanerFor(config_.threads > 0 ? size_t(config_.threads) : 1);
  auto result = CleanClaimed(cleaner, log, config, now_ms, /*force=*/true);
  if (!result.ok()) HandleError(log, result.status());
  Release(log);
  return result;
}

Cleaner* LogCleaner::CleanerFor(size_t index) {
  // Created on first use: each holds an offset map of dedupe.buffer.size / threads bytes.
  std::lock_guard<std::mutex> lock(mu_);
  if (cleaners_.size() <= index) cleaners_.resize(index + 1);
  if (!cleaners_[index]) cleaners_[index] = std::make_unique<Cleaner>(fs_, config_, &throttler_);
  return cleaners_[index].get();
}

Result<std::optional<CleanStats>> LogCleaner::CleanDirtiest(int64_t now_ms) {
  std::lock_guard<std::mutex> sync(sync_cleaner_mu_);
  return CleanDirtiestWith(config_.threads > 0 ? size_t(config_.threads) : 1, now_ms);
}

Result<std::optional<CleanStats>> LogCleaner::CleanDirtiestWith(size_t cleaner_index,
                                                                int64_t now_ms) {
  std::vector<Log*> candidates;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [log, e] : logs_) {
      if (log->config_snapshot().compact && !e.uncleanable) candidates.push_back(log);
    }
  }
  // Each candidate is claimed while it is measured, so RemoveLog cannot pull
  // it away; only the dirtiest stays claimed.
  Log* best = nullptr;
  double best_ratio = -1;
  CompactionConfig best_config;
  for (Log* log : candidates) {
    CompactionConfig config;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!TryClaim(log)) continue;
      config = logs_.at(log).config;
    }
    auto view = log->ViewForCleaner();
    auto checkpointed = view.ok() ? CheckpointedOffset(log) : view.status();
    Result<LogToClean> to_clean = checkpointed.ok()
                                      ? ComputeLogToClean(*view, *checkpointed, config, now_ms)
                                      : Result<LogToClean>(checkpointed.status());
    if (!to_clean.ok()) {
      HandleError(log, to_clean.status());
      Release(log);
      continue;
    }
    if (to_clean->ShouldClean(config) && to_clean->DirtyRatio() > best_ratio) {
      if (best != nullptr) Release(best);
      best = log;
      best_ratio = to_clean->DirtyRatio();
      best_config = config;
    } else {
      Release(log);
    }
  }
  if (best == nullptr) return std::optional<CleanStats>();
  // Only now: a cleaner's offset map (dedupe.buffer.size / threads bytes,
  // zero-filled) is not worth having before there is a log to clean.
  auto result = CleanClaimed(CleanerFor(cleaner_index), best, best_config, now_ms,
                             /*force=*/false);
  if (!result.ok()) HandleError(best, result.status());
  Release(best);
  if (!result.ok()) return result.status();
  // After the release: the hook may pause cleaning of this very log.
  if (result->cleaned && after_clean_) after_clean_(best);
  return std::optional<CleanStats>(*result);
}

void LogCleaner::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!threads_.empty()) return;
  stopping_ = false;
  const size_t n = config_.threads > 0 ? size_t(config_.threads) : 1;
  for (size_t i = 0; i < n; ++i) threads_.emplace_back([this, i] { ThreadMain(i); });
}

void LogCleaner::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (auto& [log, e] : logs_) AbortLocked(e);
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
  // Stopped: CleanOnce and CleanDirtiest run whole again.
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = false;
}

void LogCleaner::ThreadMain(size_t index) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    auto result = CleanDirtiestWith(index, clock_->NowMs());
    const bool worked = result.ok() && result->has_value() && (*result)->cleaned;
    if (worked) continue;
    // Nothing to do (or a failure, already recorded): back off.
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(config_.backoff_ms), [&] { return stopping_; });
  }
}

}  // namespace daruma
