// LogManager: start-up recovery and clean shutdown of every partition log in a
// set of log directories (spec §10.1, §10.10; Kafka's LogManager).
//
// Startup, in order:
//   Prepare (nothing on disk changes except creating missing directories and
//   their `.lock` files): per dir create it if missing, take the exclusive
//   `.lock` (held until Shutdown or destruction), check `meta.properties`
//   (parsable, same cluster.id / node.id in every dir), list and parse the
//   partition directory names. A lock held elsewhere, a bad meta.properties, a
//   bad partition directory name, a duplicate log dir or the same partition
//   live in two dirs is FATAL: Startup returns the error and loads nothing.
//   Load, all dirs concurrently: per dir read `.kafka_cleanshutdown` and DELETE
//   it (and fsync the dir) before loading anything, so a crash during loading
//   counts as unclean; read the recovery-point, log-start-offset and
//   replication-offset checkpoints (a read error is a warning and an empty
//   map); load every partition with LoadLog on `threads_per_dir` std::threads;
//   clamp each high watermark from replication-offset-checkpoint to
//   [log start, LEO]; fsync each recovered log fully (FlushAll) and only then
//   write the three checkpoints (recovery point = LEO), atomically.
//
// Failure policy:
//   * kIoError anywhere in a dir goes to the LogDirFailureChannel: the dir is
//     offline (report logDirs[].offline/error), its logs are dropped without
//     flushing, its checkpoints are not written; other dirs finish loading.
//   * Running out of descriptors (IsTooManyOpenFiles: EMFILE/ENFILE that
//     persists after the descriptor cache released what it could) is not an
//     I/O error of the dir: it fails the one partition (as below), a job's
//     round (JobErrors) or, when writing the checkpoints after loading, only
//     leaves them to the checkpoint jobs (a dir warning). Only a dir whose
//     own lock or clean-shutdown marker cannot be handled, or whose Shutdown
//     fails, goes offline for it.
//   * Any other error loading a partition is recorded in that partition's
//     report `errors`; the partition is not loaded. Its old checkpoint entries
//     are carried over unchanged, and the dir gets no clean-shutdown marker at
//     Shutdown, so its next start is unclean and the partition is scanned again
//     (Kafka aborts start-up instead).
//   HasFailures() is true after either.
//
// Shutdown (dirs that are online and fully loaded): per log FlushAll + Close
// (producer snapshot at the LEO, indexes trimmed), then the checkpoints, then
// `.kafka_cleanshutdown` LAST ({"version":0,"brokerEpoch":<broker_epoch>}, or
// the input's epoch under keep_clean_broker_epoch); each dir's report says
// which epoch it got and why (LogDirReport::marker_*).
// Locks of every dir are released. Destroying a started manager without
// Shutdown releases the locks only, exactly like a crash.
//
// Progress: KIP-831 counters (remainingLogsToRecover per dir,
// remainingSegmentsToRecover per dir per recovery thread) and bytes scanned /
// bytes to scan, all atomics readable from any thread while Startup runs.
//
// Runtime (spec §11.1), after Startup:
//   * GetOrCreateLog / AsyncDelete / SetTopicConfig / ConfigFor from any thread.
//     New partitions go to the online dir holding the fewest partitions (ties:
//     the first in log.dirs order), with `partition.metadata` written durably.
//     AsyncDelete renames the partition dir to `<tp>.<uuid>-delete`, drops it
//     from the live set and the dir's checkpoints, and removes its files after
//     file.delete.delay.ms. The Log object stays valid (but must no longer be
//     used) until then or until Shutdown.
//   * Topic overrides (SetTopicConfig) are persisted in every serving dir's
//     daruma-topic-configs.json (recovery/topic_config_file.h) on every change
//     and when a topic's last partition is deleted (AsyncDelete), and read at
//     Startup before any log is loaded, so each log opens with its overrides.
//     An unreadable file or entry is a dir warning (dir_warnings()) and that
//     part falls back to the broker defaults. A failed write takes the dir
//     offline (I/O error) or is a JobErrors() entry.
//   * TruncateTo / TruncateFullyAndStartAt (replication) rewrite the dir's
//     recovery-point checkpoint before returning; CheckpointRecoveryPoints
//     writes the dirty ones at once (the broker, after an fsync'd produce).
//   * One Scheduler (common/scheduler.h) runs the jobs. With jobs.enabled:
//       kafka-log-retention (log.retention.check.interval.ms): Log::DeleteOldSegments
//         for logs whose policy is not compact (Kafka: compacted logs get retention
//         from the cleaner); removed segments' files are deleted after
//         file.delete.delay.ms;
//       kafka-log-flusher (log.flush.scheduler.interval.ms): flush every log whose
//         last flush is at least flush.ms old;
//       flush-log (once per roll, as Kafka): the segments below the new one are
//         written back without the log's lock, then the recovery point moves
//         to its base (Log::FlushAfterRoll); appends do not wait for it;
//       kafka-recovery-point-checkpoint, kafka-log-start-offset-checkpoint;
//       kafka-delete-logs: `-delete` dirs found at start-up are removed after
//         file.delete.delay.ms (without jobs.enabled they are left alone, as
//         the recovery tool needs; AsyncDelete's own deletions always run);
//       daruma-dirty-recovery-point-checkpoint (beyond Kafka; every
//         jobs.dirty_checkpoint_tick_ms): every flush marks its dir dirty and
//         this job rewrites the recovery-point checkpoint of the dirty dirs, so
//         an unclean start scans only what was written since the last flush.
//     All periodic jobs first run after jobs.initial_delay_ms. Jobs touching
//     logs never overlap each other or AsyncDelete.
//   * An I/O error in a job marks that dir offline in failure_channel(); its
//     logs are not dropped (callers may hold them) but get no more jobs.
//   * The log cleaner (jobs.enabled and jobs.cleaner_enabled, i.e.
//     log.cleaner.enable): one LogCleaner owned by the manager. Every live log
//     whose policy includes compact is registered with the compaction settings
//     of its LogConfig (at start-up, in GetOrCreateLog, and again in
//     SetTopicConfig, which unregisters logs that stop being compacted). The
//     CleanerHooks are mapped onto it; replaced segments' files are deleted
//     after file.delete.delay.ms; after each clean of a log the cleaner runs
//     RunRetention on it (between AbortAndPauseCleaning and ResumeCleaning);
//     a cleaner I/O error takes the log's dir offline. Mode kTimers: the
//     cleaner's own log.cleaner.threads threads; kManual: a "kafka-log-cleaner"
//     job every log.cleaner.backoff.ms that cleans the dirtiest logs until none
//     qualifies.
//   * Shutdown stops the cleaner (hooks), then the scheduler (pending deletions
//     stay on disk for the next start-up: `.deleted` files are removed by the
//     loader, `-delete` dirs by kafka-delete-logs), then flushes and closes.
//
// Thread safety: Startup and Shutdown are called by one thread; the counters
// and Progress() may be read concurrently; the runtime methods above are
// thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/caching_file_system.h"
#include "common/clock.h"
#include "common/deferred_sync_file_system.h"
#include "common/file_system.h"
#include "common/scheduler.h"
#include "common/status.h"
#include "log/cleaner_config.h"
#include "log/log.h"
#include "log/log_cleaner.h"
#include "log/log_config.h"
#include "log/offset_checkpoint_file.h"
#include "log/topic_config_overrides.h"
#include "log/topic_partition.h"
#include "log/uuid.h"
#include "recovery/dir_lock.h"
#include "recovery/log_dir_failure_channel.h"
#include "recovery/progress_reporter.h"
#include "recovery/recovery_report.h"
#include "recovery/server_config.h"

namespace daruma {

inline constexpr char kRecoveryPointCheckpointFile[] = "recovery-point-offset-checkpoint";
inline constexpr char kLogStartOffsetCheckpointFile[] = "log-start-offset-checkpoint";
inline constexpr char kReplicationOffsetCheckpointFile[] = "replication-offset-checkpoint";

// The log manager's background jobs (spec §11.1). Off by default (the
// recovery tool); the broker turns them on (From(server_config)).
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
  int64_t dirty_checkpoint_tick_ms = 1000;  // daruma.recovery.point.checkpoint.tick.ms
  // The log cleaner (only with `enabled`). Off by default here; From() takes
  // log.cleaner.enable (Kafka's default: on).
  bool cleaner_enabled = false;  // log.cleaner.enable
  CleanerConfig cleaner{};       // log.cleaner.*

  // enabled = true, mode kTimers, the intervals of `config`.
  static LogManagerJobsConfig From(const ServerConfig& config);
};

struct LogManagerOptions {
  FileSystem* fs = FileSystem::Default();
  Clock* clock = Clock::System();
  bool quarantine = true;     // false: Kafka's plain truncate/delete (--no-quarantine)
  int64_t broker_epoch = -1;  // written into `.kafka_cleanshutdown`
  // `daruma recover` (recovery/clean_shutdown_marker_rule.h): a dir that
  // started clean and that this run changed nothing in gets its input
  // marker's broker epoch back instead of `broker_epoch`. Off for the broker,
  // whose own epoch is the one to write.
  bool keep_clean_broker_epoch = false;
  // `daruma recover --full`: every partition is recovered from its first
  // segment as after an unclean shutdown with recovery point 0, whatever the
  // marker and the recovery-point checkpoint say (so a dir handed back to
  // Kafka holds only valid batches). The dir's clean/unclean state is still
  // read, reported and used by the marker rule.
  bool full_rescan = false;
  LogManagerJobsConfig jobs{};
  // daruma.max.open.files: the manager runs over a CachingFileSystem on top
  // of `fs` holding at most this many descriptors for segments and indexes
  // (common/caching_file_system.h); 0 = no cache, every File keeps its own.
  // Layered over `fs`, so a fault-injecting `fs` still sees every real open,
  // write, sync and rename.
  size_t max_open_files = DefaultMaxOpenFiles();
  // Each partition's load is all or nothing (load_transaction.h). Off only to
  // measure what that costs (bench/load_undo_bench.cc).
  bool load_undo_log = true;
  // Start-up loads and shutdown flushes defer their fsyncs and make each log
  // dir durable with one SyncFileSystem (syncfs) instead
  // (common/deferred_sync_file_system.h); the undo records a load needs in
  // advance are written for all partitions first and made durable the same
  // way. Falls back to per-file fsyncs by itself where `fs` has no syncfs.
  // Off only to measure what it saves.
  bool batch_syncs = true;
};

// What the log cleaner (compaction) plugs into the log manager. Every hook is
// optional and may block until the cleaner is done with the partition.
//   stop: first thing in Shutdown.
//   abort_and_forget(tp, log_dir): in AsyncDelete before the rename (Kafka:
//     abortCleaning, then drop tp from cleaner-offset-checkpoint).
//   abort_and_pause(tp) / resume_after_truncation(tp, log_dir, offset): around
//     TruncateTo / TruncateFullyAndStartAt (Kafka: abortAndPauseCleaning, then
//     maybeTruncateCheckpoint to `offset` and resumeCleaning).
// The retention job skips compacted logs (Kafka's cleanupLogs): the cleaner
// calls LogManager::RunRetention for each compacted log after a cleaning pass
// (log-start-offset breach always; size and time too with compact,delete).
struct CleanerHooks {
  std::function<void()> stop;
  std::function<void(const TopicPartition& tp, const std::string& log_dir)> abort_and_forget;
  std::function<void(const TopicPartition& tp)> abort_and_pause;
  std::function<void(const TopicPartition& tp, const std::string& log_dir, int64_t offset)>
      resume_after_truncation;
};

// KIP-831 recovery counters of one log dir.
struct LogDirRecoveryCounters {
  explicit LogDirRecoveryCounters(std::string d) : dir(std::move(d)) {}
  std::string dir;
  std::atomic<int64_t> remaining_logs{0};  // remainingLogsToRecover
  // remainingSegmentsToRecover, one per recovery thread ("threadNum" tag).
  std::deque<std::atomic<int64_t>> remaining_segments;
};

// One log dir's KIP-831 values at one moment.
struct RecoveryGauges {
  std::string dir;
  int64_t remaining_logs = 0;               // remainingLogsToRecover{dir}
  std::vector<int64_t> remaining_segments;  // remainingSegmentsToRecover{dir, threadNum}
};

class LogManager {
 public:
  explicit LogManager(LogManagerOptions options = {});
  ~LogManager();
  LogManager(const LogManager&) = delete;
  LogManager& operator=(const LogManager&) = delete;

  // Non-OK only for fatal errors (see above); per-dir and per-partition
  // failures are in report() and HasFailures().
  Status Startup(const std::vector<std::string>& log_dirs, const LogConfig& config,
                 int threads_per_dir);
  // Non-OK when a dir failed during shutdown (it then gets no marker).
  Status Shutdown();

  const RecoveryReport& report() const { return report_; }
  // report().ToJson() plus logDirs[].warnings from dir_warnings().
  nlohmann::json ReportJson() const;
  // Warnings about a log dir itself (unreadable checkpoint, marker epoch...).
  const std::map<std::string, std::vector<std::string>>& dir_warnings() const {
    return dir_warnings_;
  }
  bool HasFailures() const;
  // Loaded logs of online dirs, by partition directory path.
  std::vector<Log*> AllLogs() const;
  Log* GetLog(const TopicPartition& tp) const;  // the live (current) replica
  LogDirFailureChannel& failure_channel() { return failure_channel_; }
  // The descriptor cache (daruma.max.open.files); null when it is off.
  const CachingFileSystem* caching_file_system() const { return caching_fs_.get(); }

  // ---- Runtime ----------------------------------------------------------------

  // The live log of tp, created if missing (idempotent). A new log uses
  // `config`, goes to the online dir with the fewest partitions and gets
  // `partition.metadata` (unless topic_id is zero) before it is returned. An
  // existing log whose partition.metadata names another topic id is
  // kInvalidArgument. kIoError when no dir is online or the dir fails.
  Result<Log*> GetOrCreateLog(const TopicPartition& tp, const Uuid& topic_id,
                              const LogConfig& config);
  // Kafka's asyncDelete (see the top of this file). kNotFound when tp has no
  // live log.
  Status AsyncDelete(const TopicPartition& tp);
  // Kafka's LogManager.truncateTo / truncateFullyAndStartAt for replication:
  // the log is truncated (Log::TruncateTo / TruncateFullyAndStartAt) and its
  // dir's recovery-point checkpoint is rewritten at once, before returning (a
  // checkpointed recovery point above data appended after the truncation
  // would let an unclean start skip that data). kNotFound without a live log.
  Result<bool> TruncateTo(const TopicPartition& tp, int64_t offset);
  Status TruncateFullyAndStartAt(const TopicPartition& tp, int64_t offset);
  // Topic overrides resolved into a full LogConfig (the broker defaults are
  // Startup's config). Applied at once to the topic's live logs.
  // Persists DiffTopicConfig(defaults, config) as the topic's overrides.
  void SetTopicConfig(const std::string& topic, const LogConfig& config);
  // Same, persisting `overrides` (the client's names and values, which
  // resolved into `config`) as given.
  void SetTopicConfig(const std::string& topic, const LogConfig& config,
                      const TopicConfigOverrides& overrides);
  LogConfig ConfigFor(const std::string& topic) const;
  // The persisted overrides of `topic` (empty when it has none), e.g. for
  // DescribeConfigs after a restart.
  TopicConfigOverrides TopicOverridesOf(const std::string& topic) const;

  // Rewrites recovery-point-offset-checkpoint of every online dir a flush
  // marked dirty (all online dirs if `all`). For the broker after an fsync'd
  // produce; the dirty-checkpoint job calls it too.
  Status CheckpointRecoveryPoints(bool all = false);
  Status CheckpointLogStartOffsets();
  // Retention of one log now (the cleaner calls it for compact,delete logs).
  // Removed files are deleted after file.delete.delay.ms. Returns the number
  // of segments removed.
  Result<int> RunRetention(Log* log);

  // Replaces the hooks (Startup installs the built-in cleaner's, if any).
  void SetCleanerHooks(CleanerHooks hooks);
  // The built-in log cleaner; null before Startup or when it is disabled.
  LogCleaner* log_cleaner() { return log_cleaner_.get(); }
  // Errors of background jobs other than I/O errors (which take the dir
  // offline, see failure_channel()), oldest first.
  std::vector<std::string> JobErrors() const;
  // Null before Startup.
  Scheduler* scheduler() { return scheduler_.get(); }
  // jobs.mode kManual: runs every job due at the clock's now. Returns the
  // number of jobs run.
  int RunDueJobsForTest();

  // The KIP-831 gauges now, one entry per log dir. Thread-safe (a metrics
  // endpoint may poll it while Startup runs).
  std::vector<RecoveryGauges> RecoveryGaugesSnapshot() const;
  ProgressSnapshot Progress() const;

 private:
  struct PartitionDir;
  struct LogDirState;

  Status Prepare(const std::vector<std::string>& log_dirs);
  Status PrepareDir(LogDirState& d);
  Status CheckMetaProperties();
  Status CheckDuplicatePartitions() const;
  void ReadDirState(LogDirState& d);
  OffsetMap ReadCheckpoint(LogDirState& d, const char* name);
  void EstimateBytesToScan(LogDirState& d);
  void LoadDirs();
  void LoadPartition(LogDirState& d, const PartitionDir& p, int thread_index);
  // Batched syncs (LogManagerOptions::batch_syncs): whether every online
  // dir's file system can sync as a whole; the undo records of an unclean
  // dir's loads written ahead (PresaveDir); after a dir's loads, its one
  // syncfs, the undo logs' removal, and a second syncfs (FinishBatchedLoads).
  bool CanBatchSyncs();
  void PresaveDir(LogDirState& d);
  void FinishBatchedLoads(LogDirState& d);
  struct PresaveList {
    std::vector<DirEntry> listing;       // the partition dir's entries
    std::vector<std::string> saved;      // rewritten in place
    std::vector<std::string> removable;  // may be removed (and written again)
  };
  Result<PresaveList> PresavePaths(const LogDirState& d, const PartitionDir& p);
  void FinishDir(LogDirState& d);
  Status WriteCheckpoints(LogDirState& d);
  Status ShutdownDir(LogDirState& d);
  // The marker ShutdownDir writes for a fully loaded dir (epoch and why).
  void DecideDirMarker(LogDirState& d);
  void MarkOffline(LogDirState& d, const Status& error);
  void FillDirReports();
  void SortPartitionReports();
  // Topic overrides (log_manager_topic_configs.cc).
  void LoadTopicConfigs();
  void PersistTopicConfigs();
  // Drops the overrides of `topic` when none of its logs is left.
  void ForgetTopicConfigIfUnused(const std::string& topic);
  // Runtime helpers.
  // Fails only if the jobs' scheduler cannot get descriptors even after the
  // handle cache released what it could.
  Status StartJobs();
  // Deletes `dir` (a renamed `-delete` dir) and destroys `log` after delay_ms.
  void ScheduleDirDeletion(std::unique_ptr<Log> log, std::string dir, int64_t delay_ms);
  void ScheduleFileDeletion(Log::RetentionResult removed, int64_t delay_ms);
  void RetentionJob();
  // The built-in cleaner (log_manager_cleaner.cc).
  void StartCleaner();
  void StopCleaner();
  void CleanerJob();  // kManual: what one cleaner thread does, until no log qualifies
  void AfterClean(Log* log);
  // Registers `log` with the cleaner if its config includes compact, else
  // unregisters it. No-op without a cleaner.
  void UpdateCleanerRegistration(Log* log, const LogConfig& config);
  bool IsLiveLog(Log* log) const;
  void FlushJob();
  Result<int> RetainLocked(Log* log);  // jobs_mu_ held
  // Logs of online, loaded dirs that get jobs (live and future kinds).
  std::vector<Log*> JobLogs() const;
  // kIoError: `log_dir` goes offline; anything else is kept in job_errors_.
  void OnJobError(const std::string& log_dir, const Status& st);
  Status CheckIdentity(LogDirState& d, const std::string& path, const Uuid& topic_id);
  // The checkpoint entries of a dir: `carried` values of partitions that
  // failed to load, then value(log) of each live or future log that has one.
  OffsetMap CollectOffsets(LogDirState& d, const OffsetMap& carried,
                           const std::function<std::optional<int64_t>(Log&)>& value) const;
  Status WriteCheckpointFile(LogDirState& d, const char* name, const OffsetMap& offsets);
  Status CheckpointRecoveryPointsOf(LogDirState& d);
  Status CheckpointLogStartOffsetsOf(LogDirState& d);
  void WatchFlushes(LogDirState& d, Log* log);
  void RollFlushJob(Log* log, int64_t offset);
  LogDirState* PickDirForNewLog() const;
  // The live log of tp and its dir, or {nullptr, nullptr}.
  std::pair<Log*, LogDirState*> FindLive(const TopicPartition& tp) const;
  // Runs `truncate` on tp's live log between the cleaner hooks, then
  // checkpoints the dir's recovery points.
  Result<bool> Truncate(const TopicPartition& tp, int64_t new_end,
                        const std::function<Result<bool>(Log&)>& truncate);
  bool IsServing(const LogDirState& d) const;

  // Declared first so it outlives every Log and job using it; options_.fs
  // points to it when options.max_open_files > 0.
  std::unique_ptr<CachingFileSystem> caching_fs_;
  // With batch_syncs, options_.fs is this decorator over durable_fs_ (the
  // caching or the caller's file system): every Log's file operations go
  // through it, and it defers their syncs during LoadDirs and ShutdownDir's
  // flushes only. Undo logs, checkpoints and the marker sync on durable_fs_.
  std::unique_ptr<DeferredSyncFileSystem> deferred_fs_;
  FileSystem* durable_fs_ = nullptr;
  bool batching_ = false;  // this start-up's loads defer their syncs
  LogManagerOptions options_;
  LogConfig config_;
  int threads_per_dir_ = 1;
  bool started_ = false;
  std::vector<std::unique_ptr<LogDirState>> dirs_;
  std::deque<LogDirRecoveryCounters> counters_;
  LogDirFailureChannel failure_channel_;
  std::atomic<int64_t> scanned_bytes_{0};
  std::atomic<int64_t> total_bytes_{0};
  std::atomic<int64_t> total_logs_{0};
  std::atomic<int64_t> remaining_logs_{0};  // sum over dirs, for Progress()
  mutable std::mutex mu_;  // guards report_ partitions and the logs of dirs_ while loading
  RecoveryReport report_;
  std::map<std::string, std::vector<std::string>> dir_warnings_;
  // Runtime state. Lock order: jobs_mu_ -> create_mu_ -> checkpoint_mu_ ->
  // mu_ -> a Log's own mutex.
  std::map<std::string, LogConfig> topic_configs_;               // guarded by mu_
  std::map<std::string, TopicConfigOverrides> topic_overrides_;  // guarded by mu_
  int64_t topic_configs_generation_ = 0;                         // guarded by checkpoint_mu_
  std::mutex create_mu_;      // GetOrCreateLog / AsyncDelete, one at a time
  std::mutex jobs_mu_;        // jobs touching logs, and AsyncDelete
  std::mutex checkpoint_mu_;  // writers of the offset checkpoints
  CleanerHooks cleaner_;
  std::vector<std::string> job_errors_;  // guarded by mu_
  // Before scheduler_: its dispose hook schedules on scheduler_, so it is
  // stopped explicitly (StopCleaner) before either is destroyed.
  std::unique_ptr<LogCleaner> log_cleaner_;
  std::unique_ptr<Scheduler> scheduler_;  // last member: stopped first
};

}  // namespace daruma
