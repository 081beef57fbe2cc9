#include "recovery/log_jobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace daruma {

LogManagerJobsConfig LogManagerJobsConfig::From(const ServerConfig& config) {
  LogManagerJobsConfig jobs;
  jobs.enabled = true;
  jobs.threads = config.background_threads;
  jobs.initial_delay_ms = config.log_initial_task_delay_ms;
  jobs.retention_check_interval_ms = config.log_retention_check_interval_ms;
  jobs.flush_scheduler_interval_ms = config.log_flush_scheduler_interval_ms;
  jobs.recovery_point_checkpoint_interval_ms = config.log_flush_offset_checkpoint_interval_ms;
  jobs.log_start_offset_checkpoint_interval_ms =
      config.log_flush_start_offset_checkpoint_interval_ms;
  jobs.dirty_checkpoint_tick_ms = config.recovery_point_checkpoint_tick_ms;
  jobs.high_watermark_checkpoint_interval_ms = config.replica_high_watermark_checkpoint_interval_ms;
  jobs.cleaner_enabled = config.log_cleaner_enable;
  jobs.cleaner = config.cleaner;
  return jobs;
}

LogJobs::LogJobs(LogDirs* dirs, LogManagerJobsConfig config, FileSystem* fs,
                 CachingFileSystem* caching_fs, Clock* clock)
    : dirs_(dirs), config_(std::move(config)), fs_(fs), caching_fs_(caching_fs), clock_(clock) {}

LogJobs::~LogJobs() {
  StopCleaner();
}

// Removals still waiting out file.delete.delay.ms are done now: the delay
// lets readers of the removed segments finish, and none is left once the
// scheduler and the cleaner stopped (a fetch's open descriptor keeps reading
// an unlinked file anyway). Left on disk, the next start would find them as
// leftovers and move them into the quarantine, where they would stay.
void LogJobs::Stop() {
  if (hooks_.stop) hooks_.stop();
  if (scheduler_) scheduler_->Shutdown();
  std::vector<std::shared_ptr<Log::RetentionResult>> pending;
  {
    std::lock_guard<std::mutex> lock(pending_mu_);
    pending.swap(pending_deletions_);
  }
  for (const auto& removed : pending) DeleteRemoved(*removed, /*stopping=*/true);
}

// Creates the scheduler (always: AsyncDelete needs it) and, with
// jobs.enabled, schedules the periodic jobs and the deletion of `-delete`
// dirs found at start-up.
Status LogJobs::Start(const LogConfig& defaults) {
  const LogManagerJobsConfig& jobs = config_;
  file_delete_delay_ms_ = defaults.file_delete_delay_ms;
  // The scheduler's thread pool opens descriptors of its own (epoll, an
  // eventfd), which asio reports by throwing: out of descriptors, the handle
  // cache releases handles and the pool is made again, as for a file open.
  auto make_scheduler = [&]() -> Status {
    try {
      scheduler_ = std::make_unique<Scheduler>(clock_, jobs.threads, jobs.mode);
      return Status::Ok();
    } catch (const std::system_error& e) {
      // asio reports errno values in a category of its own, which does not
      // compare equal to std::errc: the value is what tells.
      if (e.code().value() != EMFILE && e.code().value() != ENFILE) throw;
      return Status::IoError(std::string("starting the log manager's jobs: ") + e.what())
          .WithDetail(kTooManyOpenFilesDetail);
    }
  };
  DARUMA_RETURN_IF_ERROR(caching_fs_ != nullptr ? caching_fs_->WithDescriptors(make_scheduler)
                                                : make_scheduler());
  if (!jobs.enabled) return Status::Ok();
  for (auto& d : dirs_->dirs()) {
    if (!dirs_->IsServing(*d)) continue;
    std::vector<std::pair<std::string, std::unique_ptr<Log>>> doomed;
    {
      std::lock_guard<std::mutex> lock(dirs_->mu());
      for (auto it = d->logs.begin(); it != d->logs.end();) {
        if (d->kinds[it->first] != DirKind::kDelete) {
          ++it;
          continue;
        }
        doomed.emplace_back(it->first, std::move(it->second));
        d->kinds.erase(it->first);
        it = d->logs.erase(it);
      }
    }
    for (auto& [path, log] : doomed) {
      ScheduleDirDeletion(std::move(log), path, file_delete_delay_ms_);
    }
  }
  Scheduler& s = *scheduler_;
  s.SchedulePeriodic("kafka-log-retention", jobs.initial_delay_ms, jobs.retention_check_interval_ms,
                     [this] { RetentionJob(); });
  s.SchedulePeriodic("kafka-log-flusher", jobs.initial_delay_ms, jobs.flush_scheduler_interval_ms,
                     [this] { FlushJob(); });
  s.SchedulePeriodic("kafka-recovery-point-checkpoint", jobs.initial_delay_ms,
                     jobs.recovery_point_checkpoint_interval_ms,
                     [this] { (void)CheckpointRecoveryPoints(/*all=*/true); });
  s.SchedulePeriodic("kafka-log-start-offset-checkpoint", jobs.initial_delay_ms,
                     jobs.log_start_offset_checkpoint_interval_ms,
                     [this] { (void)CheckpointLogStartOffsets(); });
  s.SchedulePeriodic("daruma-dirty-recovery-point-checkpoint", jobs.dirty_checkpoint_tick_ms,
                     jobs.dirty_checkpoint_tick_ms, [this] { (void)CheckpointRecoveryPoints(); });
  s.SchedulePeriodic("highwatermark-checkpoint", jobs.high_watermark_checkpoint_interval_ms,
                     jobs.high_watermark_checkpoint_interval_ms,
                     [this] { (void)CheckpointHighWatermarks(); });
  StartCleaner();
  return Status::Ok();
}

void LogJobs::OnJobError(const std::string& log_dir, const Status& st) {
  if (st.IsIoError() && !IsTooManyOpenFiles(st)) {
    dirs_->failure_channel().MaybeAddOfflineLogDir(log_dir, st);
    return;
  }
  KeepJobError(st);
}

void LogJobs::KeepJobError(const Status& st) {
  std::lock_guard<std::mutex> lock(errors_mu_);
  job_errors_.push_back(st.ToString());
}

std::vector<std::string> LogJobs::JobErrors() const {
  std::lock_guard<std::mutex> lock(errors_mu_);
  return job_errors_;
}

// ---- Retention -----------------------------------------------------------------

// Kafka's cleanupLogs: every log whose policy is not compact. A compacted
// log gets its retention from Kafka's cleaner thread, on every pass whether
// or not it found anything to clean (LogCleaner's deletableLogs: time and
// size with compact,delete, the log start offset always), and only while a
// cleaner runs: here on this job's schedule, with its cleaning paused
// meanwhile, as AfterClean does. One being cleaned right now is skipped, not
// waited for (jobs_mu_ would hold up every other job for the whole clean):
// AfterClean gives it retention when that clean ends. Waiting for a clean
// instead kept a changelog's expired segments for as long as no clean was
// due (for ever, for one that is never dirty enough).
void LogJobs::RetentionJob() {
  std::lock_guard<std::mutex> jobs(jobs_mu_);
  if (retention_hold_ && retention_hold_()) return;
  for (Log* log : dirs_->JobLogs()) {
    if (!log->config_snapshot().compact) {
      (void)RetainLocked(log);
    } else if (log_cleaner_ && log_cleaner_->TryPauseCleaning(log)) {
      (void)RetainLocked(log);
      log_cleaner_->ResumeCleaning(log);
    }
  }
}

Result<int> LogJobs::RunRetention(Log* log) {
  std::lock_guard<std::mutex> jobs(jobs_mu_);
  return RetainLocked(log);
}

Result<int> LogJobs::RetainLocked(Log* log) {
  auto removed = log->DeleteOldSegments();
  if (!removed.ok()) {
    OnJobError(ParentDir(log->dir()), removed.status());
    return removed.status();
  }
  const int count = int(removed->segments.size());
  if (count > 0 && retention_listener_) retention_listener_(*log, *removed);
  if (count > 0 || !removed->deleted_snapshots.empty()) {
    ScheduleFileDeletion(std::move(*removed), log->config_snapshot().file_delete_delay_ms);
  }
  return count;
}

// Kafka's "delete-file" task: the `.deleted` files of removed segments and
// their `.snapshot.deleted` snapshots. A file already gone (the partition was
// deleted meanwhile) is not an error.
void LogJobs::ScheduleFileDeletion(Log::RetentionResult removed, int64_t delay_ms) {
  auto owned = std::make_shared<Log::RetentionResult>(std::move(removed));
  {
    std::lock_guard<std::mutex> lock(pending_mu_);
    pending_deletions_.push_back(owned);
  }
  scheduler_->ScheduleOnce("delete-file", delay_ms, [this, owned] {
    {
      std::lock_guard<std::mutex> lock(pending_mu_);
      auto it = std::find(pending_deletions_.begin(), pending_deletions_.end(), owned);
      if (it == pending_deletions_.end()) return;  // Stop took it
      pending_deletions_.erase(it);
    }
    DeleteRemoved(*owned, /*stopping=*/false);
  });
}

void LogJobs::DeleteRemoved(Log::RetentionResult& removed, bool stopping) {
  auto failed = [&](const std::string& log_dir, const Status& st) {
    // At shutdown a file that could not go stays for the next start's
    // loader (a leftover, as after a crash): taking the dir offline for it
    // would cost the dir its clean shutdown.
    if (stopping) return KeepJobError(st);
    OnJobError(log_dir, st);
  };
  for (auto& segment : removed.segments) {
    Status st = segment->DeleteFiles();
    if (!st.ok()) failed(ParentDir(segment->dir()), st);
  }
  for (const std::string& path : removed.deleted_snapshots) {
    Status st = fs_->Remove(path);
    if (!st.ok() && !st.IsNotFound()) failed(ParentDir(ParentDir(path)), st);
  }
  removed.segments.clear();
  removed.deleted_snapshots.clear();
}

// Kafka's kafka-delete-logs: the Log is closed (destroyed) first, then its
// renamed directory is removed with everything in it.
void LogJobs::ScheduleDirDeletion(std::unique_ptr<Log> log, std::string dir, int64_t delay_ms) {
  auto owned = std::make_shared<std::unique_ptr<Log>>(std::move(log));
  scheduler_->ScheduleOnce("kafka-delete-logs", delay_ms, [this, owned, dir] {
    {
      // A checkpoint writer may still be reading it (see CollectOffsets).
      std::lock_guard<std::mutex> lock(dirs_->checkpoint_mu());
      owned->reset();
    }
    Status st = fs_->RemoveAll(dir);
    if (!st.ok() && !st.IsNotFound()) OnJobError(ParentDir(dir), st);
  });
}

// ---- Flush and checkpoints ----------------------------------------------------------

// Kafka's flushDirtyLogs: flush every log whose last flush is at least its
// flush.ms old (up to the log end offset).
void LogJobs::FlushJob() {
  std::lock_guard<std::mutex> jobs(jobs_mu_);
  const int64_t now = clock_->NowMs();
  for (Log* log : dirs_->JobLogs()) {
    if (now - log->last_flush_ms() < log->config_snapshot().flush_ms) continue;
    if (!log->write_failure().ok()) continue;  // stopped; its failure was reported once
    Status st = log->FlushAll();
    if (!st.ok()) OnJobError(ParentDir(log->dir()), st);
  }
}

void LogJobs::WatchFlushes(LogDir& d, Log* log) {
  std::atomic<bool>* dirty = &d.recovery_points_dirty;
  log->SetFlushListener([dirty] { dirty->store(true, std::memory_order_relaxed); });
  // Kafka: an I/O error writing a log takes its dir offline (no checkpoint,
  // no clean-shutdown marker: the next start recovers what is on disk).
  // Only an I/O error is the dir's (Kafka's maybeHandleIOException);
  // another one stops this log's writes alone (Log::FailWrites, shown in
  // /health; the dir then gets no marker at shutdown), as an unchecked
  // exception fails only that partition's appends in Kafka.
  log->SetWriteFailureListener([this, dir = d.path](const Status& st) { OnJobError(dir, st); });
  if (!config_.enabled) return;
  // Kafka's "flush-log" task: a roll does not wait for the old segment to
  // reach the disk. scheduler_ is created by StartJobs, after loading; a roll
  // before that (none is expected) flushes inline.
  log->SetRollFlushScheduler([this, log](int64_t offset) {
    if (!scheduler_) return false;
    scheduler_->ScheduleOnce("flush-log", 0, [this, log, offset] { RollFlushJob(log, offset); });
    return true;
  });
}

// Holding jobs_mu_ keeps AsyncDelete from destroying the log meanwhile; one
// deleted before the job ran is no longer among JobLogs.
void LogJobs::RollFlushJob(Log* log, int64_t offset) {
  std::lock_guard<std::mutex> jobs(jobs_mu_);
  const std::vector<Log*> logs = dirs_->JobLogs();
  if (std::find(logs.begin(), logs.end(), log) == logs.end()) return;
  if (!log->write_failure().ok()) return;  // stopped; its failure was reported once
  Status st = log->FlushAfterRoll(offset);
  if (!st.ok()) OnJobError(ParentDir(log->dir()), st);
}

Status LogJobs::CheckpointRecoveryPoints(bool all) {
  Status first_error;
  for (auto& d : dirs_->dirs()) {
    if (!dirs_->IsServing(*d)) continue;
    if (!all && !d->recovery_points_dirty.load()) continue;
    Status st = dirs_->CheckpointRecoveryPointsOf(*d);
    if (st.ok()) continue;
    d->recovery_points_dirty.store(true);  // try again at the next tick
    OnJobError(d->path, st);
    if (first_error.ok()) first_error = st;
  }
  return first_error;
}

Status LogJobs::CheckpointLogStartOffsets() {
  Status first_error;
  for (auto& d : dirs_->dirs()) {
    if (!dirs_->IsServing(*d)) continue;
    Status st = dirs_->CheckpointLogStartOffsetsOf(*d);
    if (st.ok()) continue;
    OnJobError(d->path, st);
    if (first_error.ok()) first_error = st;
  }
  return first_error;
}

// Kafka writes the file on every tick; an unchanged one is skipped here
// (keep_found), so an idle broker pays no fsync for it.
Status LogJobs::CheckpointHighWatermarks() {
  Status first_error;
  for (auto& d : dirs_->dirs()) {
    if (!dirs_->IsServing(*d)) continue;
    Status st = dirs_->CheckpointHighWatermarksOf(*d, /*keep_found=*/true);
    if (st.ok()) continue;
    OnJobError(d->path, st);
    if (first_error.ok()) first_error = st;
  }
  return first_error;
}

}  // namespace daruma
