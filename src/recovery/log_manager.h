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
// Parts (one class each; this class composes them and keeps their order):
//   LogDirs (log_dirs.h)            the dirs: locks, meta.properties, markers,
//                                   checkpoints, the failure channel;
//   LogDirLoader (log_dir_loader.h) start-up recovery of every partition;
//   TopicConfigStore                topic overrides, persisted in every dir;
//     (topic_config_store.h)
//   LogJobs (log_jobs.h)            retention, flushes, checkpoints, deletions
//                                   and the log cleaner on one Scheduler;
//   LiveLogs (live_logs.h)          the runtime LogRegistry: get or create,
//                                   delete and truncate a partition's log.
// The coordinators and the broker's topic registry see only LogRegistry
// (log/log_registry.h), which this class implements by delegating to
// LiveLogs; registry() hands out LiveLogs itself.
//
// Thread safety: Startup and Shutdown are called by one thread; the counters
// and Progress() may be read concurrently; the runtime methods above are
// thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/caching_file_system.h"
#include "common/clock.h"
#include "common/deferred_sync_file_system.h"
#include "common/file_system.h"
#include "common/status.h"
#include "log/log.h"
#include "log/log_cleaner.h"
#include "log/log_config.h"
#include "log/log_registry.h"
#include "log/topic_config_overrides.h"
#include "log/topic_partition.h"
#include "log/uuid.h"
#include "recovery/live_logs.h"
#include "recovery/log_dir_failure_channel.h"
#include "recovery/log_dir_loader.h"
#include "recovery/log_dirs.h"
#include "recovery/log_jobs.h"
#include "recovery/progress_reporter.h"
#include "recovery/recovery_report.h"
#include "recovery/server_config.h"
#include "recovery/topic_config_store.h"

namespace daruma {

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
  // The process exits right after Shutdown (`daruma recover`): the closed
  // logs are left to the kernel instead of freed one object at a time (a
  // twentieth of a clean recover of 10,000 partitions). Callers leave it off
  // under AddressSanitizer, whose leak check must stay exact.
  bool exits_after_shutdown = false;
  // `daruma serve`: the first start on dirs a KRaft broker wrote imports the
  // topic configs of its metadata log (TopicConfigStore). Off for `recover`
  // and the tools, which leave a Kafka broker's dirs for Kafka.
  bool import_kafka_topic_configs = false;
  // Kafka's metadata.log.dir, when set: where that metadata log lives if not
  // in a log dir.
  std::string kafka_metadata_log_dir = {};
};

class LogManager final : public LogRegistry {
 public:
  explicit LogManager(LogManagerOptions options = {});
  ~LogManager() override;
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
  // What the import of a Kafka broker's topic configs did, when it ran.
  std::optional<KafkaConfigImportReport> kafka_config_import() const {
    return configs_.kafka_import_report();
  }
  // Every producer id a Kafka cluster's controller handed out lies below
  // this (TopicConfigStore::kafka_next_producer_id).
  std::optional<int64_t> kafka_next_producer_id() const {
    return configs_.kafka_next_producer_id();
  }
  const std::map<std::string, std::vector<std::string>>& dir_warnings() const {
    return dirs_.warnings();
  }
  bool HasFailures() const { return dirs_.HasFailures(); }
  LogDirFailureChannel& failure_channel() { return dirs_.failure_channel(); }
  const LogDirFailureChannel& failure_channel() const { return dirs_.failure_channel(); }
  // The descriptor cache (daruma.max.open.files); null when it is off.
  const CachingFileSystem* caching_file_system() const { return caching_fs_.get(); }

  // ---- Runtime (LogRegistry, see live_logs.h), after Startup -----------------
  LogRegistry& registry() { return live_; }
  Log* GetLog(const TopicPartition& tp) const override { return live_.GetLog(tp); }
  // Loaded logs of online dirs.
  std::vector<Log*> AllLogs() const override { return live_.AllLogs(); }
  bool IsInOfflineDir(const Log& log) const override {
    return dirs_.failure_channel().IsOffline(ParentDir(log.dir()));
  }
  Result<Log*> GetOrCreateLog(const TopicPartition& tp, const Uuid& topic_id,
                              const LogConfig& config) override {
    return live_.GetOrCreateLog(tp, topic_id, config);
  }
  Status AsyncDelete(const TopicPartition& tp) override { return live_.AsyncDelete(tp); }
  Result<bool> TruncateTo(const TopicPartition& tp, int64_t offset) override {
    return live_.TruncateTo(tp, offset);
  }
  Status TruncateFullyAndStartAt(const TopicPartition& tp, int64_t offset) override {
    return live_.TruncateFullyAndStartAt(tp, offset);
  }
  void SetTopicConfig(const std::string& topic, const LogConfig& config,
                      const TopicConfigOverrides& overrides) override {
    live_.SetTopicConfig(topic, config, overrides);
  }
  // Persists DiffTopicConfig(defaults, config) as the topic's overrides.
  void SetTopicConfig(const std::string& topic, const LogConfig& config) {
    SetTopicConfig(topic, config, DiffTopicConfig(configs_.defaults(), config));
  }
  LogConfig ConfigFor(const std::string& topic) const override { return live_.ConfigFor(topic); }
  TopicConfigOverrides TopicOverridesOf(const std::string& topic) const override {
    return live_.TopicOverridesOf(topic);
  }
  Status BeginTopicCreation(const std::string& topic, const PendingTopicCreation& creation,
                            const LogConfig& config,
                            const TopicConfigOverrides& overrides) override {
    return live_.BeginTopicCreation(topic, creation, config, overrides);
  }
  void EndTopicCreation(const std::string& topic) override { live_.EndTopicCreation(topic); }
  std::map<std::string, PendingTopicCreation> PendingTopicCreations() const override {
    return live_.PendingTopicCreations();
  }
  Status RecordTopicDeletion(const std::string& topic, const Uuid& id) override {
    return live_.RecordTopicDeletion(topic, id);
  }
  bool IsDeletedTopic(const Uuid& id) const override { return live_.IsDeletedTopic(id); }
  void ForgetTopicDeletion(const Uuid& id) override { live_.ForgetTopicDeletion(id); }
  void ForgetTopicDeletions() override { live_.ForgetTopicDeletions(); }
  bool HasOfflineLogDir() const override { return live_.HasOfflineLogDir(); }
  std::optional<Uuid> KafkaTopicIdOf(const std::string& topic) const override {
    return live_.KafkaTopicIdOf(topic);
  }

  // ---- Jobs (log_jobs.h) ---------------------------------------------------------
  // Rewrites recovery-point-offset-checkpoint of every serving dir a flush
  // marked dirty (all if `all`): for the broker after an fsync'd produce.
  Status CheckpointRecoveryPoints(bool all = false) { return jobs_.CheckpointRecoveryPoints(all); }
  Status CheckpointLogStartOffsets() { return jobs_.CheckpointLogStartOffsets(); }
  // Retention of one log now (the cleaner calls it for compact,delete logs).
  Result<int> RunRetention(Log* log) { return jobs_.RunRetention(log); }
  // Replaces the cleaner hooks (Startup installs the built-in cleaner's).
  void SetCleanerHooks(CleanerHooks hooks) { jobs_.SetCleanerHooks(std::move(hooks)); }
  // Before Startup (LogJobs::SetRetentionListener).
  void SetRetentionListener(LogJobs::RetentionListener listener) {
    jobs_.SetRetentionListener(std::move(listener));
  }
  // The built-in log cleaner; null before Startup or when it is disabled.
  LogCleaner* log_cleaner() { return jobs_.log_cleaner(); }
  // Errors of background jobs other than I/O errors (which take the dir
  // offline, see failure_channel()), oldest first.
  std::vector<std::string> JobErrors() const { return jobs_.JobErrors(); }
  // Null before Startup.
  Scheduler* scheduler() { return jobs_.scheduler(); }
  // jobs.mode kManual: runs every job due at the clock's now. Returns the
  // number of jobs run.
  int RunDueJobsForTest() { return jobs_.RunDueJobs(); }

  // The KIP-831 gauges now, one entry per log dir. Thread-safe (a metrics
  // endpoint may poll it while Startup runs).
  std::vector<RecoveryGauges> RecoveryGaugesSnapshot() const { return loader_.GaugesSnapshot(); }
  ProgressSnapshot Progress() const { return loader_.Progress(); }

 private:
  static LogManagerOptions WrapFileSystems(LogManagerOptions options,
                                           std::unique_ptr<CachingFileSystem>* caching,
                                           std::unique_ptr<DeferredSyncFileSystem>* deferred,
                                           FileSystem** durable);
  LogDirLoaderOptions LoaderOptions(int threads_per_dir);
  Status ShutdownDir(LogDir& d);
  // The marker ShutdownDir writes for a fully loaded dir (epoch and why).
  void DecideDirMarker(LogDir& d);
  void FillDirReports();
  void SortPartitionReports();

  // Declared first so it outlives every Log and job using it; options_.fs
  // points to it when options.max_open_files > 0.
  std::unique_ptr<CachingFileSystem> caching_fs_;
  // With batch_syncs, options_.fs is this decorator over durable_fs_ (the
  // caching or the caller's file system): every Log's file operations go
  // through it, and it defers their syncs during the loads and the
  // shutdown's flushes only. Undo logs, checkpoints and the marker sync on
  // durable_fs_.
  std::unique_ptr<DeferredSyncFileSystem> deferred_fs_;
  FileSystem* durable_fs_ = nullptr;
  LogManagerOptions options_;
  int threads_per_dir_ = 1;
  bool started_ = false;
  RecoveryReport report_;
  // Construction order is dependency order; destruction runs backwards, so
  // the jobs (scheduler, cleaner) stop before the dirs' logs are destroyed.
  LogDirs dirs_;
  LogDirLoader loader_;
  LogJobs jobs_;
  TopicConfigStore configs_;
  LiveLogs live_;
};

}  // namespace daruma
