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
//   * Any other error loading a partition is recorded in that partition's
//     report `errors`; the partition is not loaded. Its old checkpoint entries
//     are carried over unchanged, and the dir gets no clean-shutdown marker at
//     Shutdown, so its next start is unclean and the partition is scanned again
//     (Kafka aborts start-up instead).
//   HasFailures() is true after either.
//
// Shutdown (dirs that are online and fully loaded): per log FlushAll + Close
// (producer snapshot at the LEO, indexes trimmed), then the checkpoints, then
// `.kafka_cleanshutdown` LAST ({"version":0,"brokerEpoch":<broker_epoch>}).
// Locks of every dir are released. Destroying a started manager without
// Shutdown releases the locks only, exactly like a crash.
//
// Progress: KIP-831 counters (remainingLogsToRecover per dir,
// remainingSegmentsToRecover per dir per recovery thread) and bytes scanned /
// bytes to scan, all atomics readable from any thread while Startup runs.
//
// Thread safety: Startup and Shutdown are called by one thread; the counters
// and Progress() may be read concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/status.h"
#include "log/log.h"
#include "log/log_config.h"
#include "log/offset_checkpoint_file.h"
#include "log/topic_partition.h"
#include "recovery/dir_lock.h"
#include "recovery/log_dir_failure_channel.h"
#include "recovery/progress_reporter.h"
#include "recovery/recovery_report.h"

namespace daruma {

inline constexpr char kRecoveryPointCheckpointFile[] = "recovery-point-offset-checkpoint";
inline constexpr char kLogStartOffsetCheckpointFile[] = "log-start-offset-checkpoint";
inline constexpr char kReplicationOffsetCheckpointFile[] = "replication-offset-checkpoint";

struct LogManagerOptions {
  FileSystem* fs = FileSystem::Default();
  Clock* clock = Clock::System();
  bool quarantine = true;     // false: Kafka's plain truncate/delete (--no-quarantine)
  int64_t broker_epoch = -1;  // written into `.kafka_cleanshutdown`
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
  void FinishDir(LogDirState& d);
  Status WriteCheckpoints(LogDirState& d);
  Status ShutdownDir(LogDirState& d);
  void MarkOffline(LogDirState& d, const Status& error);
  void FillDirReports();
  void SortPartitionReports();

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
};

}  // namespace daruma
