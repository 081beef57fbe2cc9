// LogJobs: the log manager's background work on one Scheduler (spec
// §11.1-§11.3, §11.6): retention, flushing, checkpoints, delayed file and
// directory deletion, and the built-in log cleaner.
//
//   kafka-log-retention (log.retention.check.interval.ms): Log::DeleteOldSegments
//     for logs whose policy is not compact, and, while the cleaner runs, for
//     compact,delete ones (Kafka's cleaner gives them retention on every
//     pass); removed segments' files are deleted after file.delete.delay.ms;
//   kafka-log-flusher (log.flush.scheduler.interval.ms): flush every log whose
//     last flush is at least flush.ms old;
//   flush-log (once per roll, as Kafka): the segments below the new one are
//     written back without the log's lock, then the recovery point moves to
//     its base (Log::FlushAfterRoll); appends do not wait for it;
//   kafka-recovery-point-checkpoint, kafka-log-start-offset-checkpoint;
//   kafka-delete-logs: `-delete` dirs found at start-up are removed after
//     file.delete.delay.ms (without `enabled` they are left alone, as the
//     recovery tool needs; AsyncDelete's own deletions always run);
//   daruma-dirty-recovery-point-checkpoint (beyond Kafka; every
//     dirty_checkpoint_tick_ms): every flush marks its dir dirty and this job
//     rewrites the recovery-point checkpoint of the dirty dirs, so an unclean
//     start scans only what was written since the last flush.
// All periodic jobs first run after initial_delay_ms. Jobs touching logs
// never overlap each other or a partition's deletion (LockJobs).
//
// The cleaner (enabled and cleaner_enabled): every live log whose policy
// includes compact is registered with its compaction settings (at Start, on
// creation and on a config change, which unregisters logs that stop being
// compacted); replaced segments' files are deleted after
// file.delete.delay.ms; after each clean of a log it gets retention (between
// AbortAndPauseCleaning and ResumeCleaning); a cleaner I/O error takes the
// log's dir offline. kTimers: the cleaner's own threads; kManual: a
// "kafka-log-cleaner" job every log.cleaner.backoff.ms.
//
// Errors: an I/O error takes the log's dir offline in the failure channel
// (its logs are not dropped: callers may hold them, but they get no more
// jobs); anything else is kept for JobErrors().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/caching_file_system.h"
#include "common/clock.h"
#include "common/scheduler.h"
#include "log/cleaner_config.h"
#include "log/log.h"
#include "log/log_cleaner.h"
#include "log/log_config.h"
#include "recovery/log_dirs.h"
#include "recovery/server_config.h"

namespace daruma {

// The log manager's background jobs. Off by default (the recovery tool); the
// broker turns them on (From(server_config)).
struct LogManagerJobsConfig {
  bool enabled = false;
  // kManual in tests: nothing runs until RunDueJobsForTest().
  Scheduler::Mode mode = Scheduler::Mode::kTimers;
  int threads = 1;                                          // background.threads
  int64_t initial_delay_ms = 30000;                         // log.initial.task.delay.ms
  int64_t retention_check_interval_ms = 300000;             // log.retention.check.interval.ms
  int64_t flush_scheduler_interval_ms = INT64_MAX;          // log.flush.scheduler.interval.ms
  int64_t recovery_point_checkpoint_interval_ms = 60000;    // log.flush.offset.checkpoint...
  int64_t log_start_offset_checkpoint_interval_ms = 60000;  // log.flush.start.offset.checkpoint...
  int64_t dirty_checkpoint_tick_ms = 1000;               // daruma.recovery.point.checkpoint.tick.ms
  int64_t high_watermark_checkpoint_interval_ms = 5000;  // replica.high.watermark.checkpoint...
  // The log cleaner (only with `enabled`). Off by default here; From() takes
  // log.cleaner.enable (Kafka's default: on).
  bool cleaner_enabled = false;  // log.cleaner.enable
  CleanerConfig cleaner{};       // log.cleaner.*

  // enabled = true, mode kTimers, the intervals of `config`.
  static LogManagerJobsConfig From(const ServerConfig& config);
};

// What the log cleaner plugs into partition deletion and truncation. Every
// hook is optional and may block until the cleaner is done with the
// partition.
//   stop: first thing in the manager's Shutdown.
//   abort_and_forget(tp, log_dir): before a deleted partition's rename
//     (Kafka: abortCleaning, then drop tp from cleaner-offset-checkpoint).
//   abort_and_pause(tp) / resume_after_truncation(tp, log_dir, offset): around
//     a truncation (Kafka: abortAndPauseCleaning, then maybeTruncateCheckpoint
//     to `offset` and resumeCleaning).
struct CleanerHooks {
  std::function<void()> stop;
  std::function<void(const TopicPartition& tp, const std::string& log_dir)> abort_and_forget;
  std::function<void(const TopicPartition& tp)> abort_and_pause;
  std::function<void(const TopicPartition& tp, const std::string& log_dir, int64_t offset)>
      resume_after_truncation;
};

class LogJobs {
 public:
  // `caching_fs` (may be null) lends descriptors to the scheduler's pool.
  LogJobs(LogDirs* dirs, LogManagerJobsConfig config, FileSystem* fs, CachingFileSystem* caching_fs,
          Clock* clock);
  // Stops the cleaner: its threads must not outlive the logs and the
  // scheduler they use.
  ~LogJobs();
  LogJobs(const LogJobs&) = delete;
  LogJobs& operator=(const LogJobs&) = delete;

  // Creates the scheduler (always: deletions need it) and, when enabled,
  // schedules the periodic jobs, the deletion of the `-delete` dirs found at
  // start-up and the cleaner. `defaults` are the broker's (their
  // file.delete.delay.ms times dir deletions). Fails only if the scheduler
  // cannot get descriptors even after the cache released what it could.
  Status Start(const LogConfig& defaults);
  bool started() const { return scheduler_ != nullptr; }
  // Stops the cleaner, then the scheduler (pending deletions stay on disk for
  // the next start-up: `.deleted` files are removed by the loader, `-delete`
  // dirs by kafka-delete-logs).
  void Stop();

  // Wires `log` into the jobs: its flushes mark `d` dirty, a failed write
  // takes `d` offline (Log::write_failure), and (when enabled) its rolls
  // schedule a flush-log job.
  void WatchFlushes(LogDir& d, Log* log);
  // Registers `log` with the cleaner if `config` includes compact, else
  // unregisters it. No-op without a cleaner.
  void UpdateCleanerRegistration(Log* log, const LogConfig& config);
  // Deletes `dir` (a renamed `-delete` dir) and destroys `log` after delay_ms.
  void ScheduleDirDeletion(std::unique_ptr<Log> log, std::string dir, int64_t delay_ms);
  // Retention of one log now. Returns the number of segments removed.
  Result<int> RunRetention(Log* log);

  // Rewrites recovery-point-offset-checkpoint of every serving dir a flush
  // marked dirty (all serving dirs if `all`).
  Status CheckpointRecoveryPoints(bool all = false);
  Status CheckpointLogStartOffsets();
  // replication-offset-checkpoint of every serving dir whose high
  // watermarks moved since it was last written.
  Status CheckpointHighWatermarks();

  // Held while a partition's log is taken away (no job is using it).
  std::unique_lock<std::mutex> LockJobs() { return std::unique_lock<std::mutex>(jobs_mu_); }
  // kIoError: `log_dir` goes offline; anything else is kept in JobErrors().
  void OnJobError(const std::string& log_dir, const Status& st);
  // Adds `st` to JobErrors() whatever its kind.
  void KeepJobError(const Status& st);
  std::vector<std::string> JobErrors() const;
  const CleanerHooks& cleaner_hooks() const { return hooks_; }
  // Replaces the hooks (Start installs the built-in cleaner's, if any).
  void SetCleanerHooks(CleanerHooks hooks) { hooks_ = std::move(hooks); }
  // Told of every retention that removed segments (the job's, the cleaner's
  // after a clean, RunRetention's), on the thread that ran it, with jobs_mu_
  // held: it must not call back into the jobs. Set before Start.
  using RetentionListener = std::function<void(const Log& log, const Log::RetentionResult&)>;
  void SetRetentionListener(RetentionListener listener) {
    retention_listener_ = std::move(listener);
  }
  // While it answers true, the retention job deletes nothing (and the
  // cleaner's retention after a clean neither). Set before Start.
  void SetRetentionHold(std::function<bool()> hold) { retention_hold_ = std::move(hold); }
  LogCleaner* log_cleaner() { return log_cleaner_.get(); }
  Scheduler* scheduler() { return scheduler_.get(); }
  // kManual: runs every job due at the clock's now.
  int RunDueJobs() { return scheduler_ ? scheduler_->RunDueJobs() : 0; }

 private:
  // Kafka's "delete-file" task after delay_ms; Stop runs those still waiting.
  void ScheduleFileDeletion(Log::RetentionResult removed, int64_t delay_ms);
  void DeleteRemoved(Log::RetentionResult& removed, bool stopping);
  void RetentionJob();
  Result<int> RetainLocked(Log* log);  // jobs_mu_ held
  void FlushJob();
  void RollFlushJob(Log* log, int64_t offset);
  // The built-in cleaner (log_jobs_cleaner.cc).
  void StartCleaner();
  void StopCleaner();
  void CleanerJob();  // kManual: what one cleaner thread does, until no log qualifies
  void AfterClean(Log* log);

  LogDirs* dirs_;
  LogManagerJobsConfig config_;
  FileSystem* fs_;
  CachingFileSystem* caching_fs_;
  Clock* clock_;
  CleanerHooks hooks_;
  RetentionListener retention_listener_;
  std::function<bool()> retention_hold_;
  int64_t file_delete_delay_ms_ = 0;  // the broker default's, for `-delete` dirs
  std::mutex jobs_mu_;                // jobs touching logs, and a partition's deletion
  mutable std::mutex errors_mu_;
  std::vector<std::string> job_errors_;  // guarded by errors_mu_
  std::mutex pending_mu_;
  // Scheduled by ScheduleFileDeletion and not yet run (guarded by pending_mu_).
  std::vector<std::shared_ptr<Log::RetentionResult>> pending_deletions_;
  // Before scheduler_: its dispose hook schedules on scheduler_, so it is
  // stopped explicitly (StopCleaner) before either is destroyed.
  std::unique_ptr<LogCleaner> log_cleaner_;
  std::unique_ptr<Scheduler> scheduler_;  // last member: stopped first
};

}  // namespace daruma
