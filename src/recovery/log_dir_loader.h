// LogDirLoader: start-up recovery of every partition of a set of log dirs
// (Kafka's LogManager.loadLogs; spec §10.1, §10.10). All dirs load
// concurrently, each on `threads_per_dir` threads; each partition goes
// through LoadLog (recovery/log_loader.h) inside its load transaction, gets
// its high watermark from replication-offset-checkpoint (clamped to
// [log start, LEO]) and is fsynced fully before the dir's checkpoints can
// move its recovery point to the LEO (FinishDir).
//
// Failure policy (the manager's, see log_manager.h): an I/O error takes the
// dir offline (LogDirs::MarkOffline) and its other partitions are skipped;
// any other error, and running out of descriptors, fails only its
// partition, which is reported and carried over in the checkpoints.
//
// Batched syncs (`deferred_fs` given and every online dir's file system can
// sync as a whole): loads defer their fsyncs and each dir is made durable
// with one syncfs; the undo records the loads need in advance are written
// for all partitions first and made durable the same way (PresaveDir,
// FinishBatchedLoads).
//
// Progress: KIP-831 counters per dir and bytes scanned / to scan, atomics
// readable from any thread while LoadDirs runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/deferred_sync_file_system.h"
#include "common/file_system.h"
#include "log/log_config.h"
#include "recovery/log_dirs.h"
#include "recovery/progress_reporter.h"
#include "recovery/recovery_report.h"
#include "recovery/scan_help_pool.h"

namespace daruma {

// One log dir's KIP-831 values at one moment.
struct RecoveryGauges {
  std::string dir;
  int64_t remaining_logs = 0;               // remainingLogsToRecover{dir}
  std::vector<int64_t> remaining_segments;  // remainingSegmentsToRecover{dir, threadNum}
};

struct LogDirLoaderOptions {
  FileSystem* fs = nullptr;                       // what the logs use (may defer syncs)
  FileSystem* durable_fs = nullptr;               // syncs for real: undo logs, syncfs
  DeferredSyncFileSystem* deferred_fs = nullptr;  // null: no batched syncs
  Clock* clock = nullptr;
  int threads_per_dir = 1;
  bool quarantine = true;
  bool full_rescan = false;
  // Records each clean dir's index digests before its loads (for the marker
  // rule of `daruma recover --full`).
  bool keep_clean_broker_epoch = false;
  bool load_undo_log = true;
  // The config a partition of `topic` loads with.
  std::function<LogConfig(const std::string& topic)> config_for;
  // Called for every log loaded, before it is published in its dir.
  std::function<void(LogDir&, Log*)> on_loaded;
};

class LogDirLoader {
 public:
  LogDirLoader(LogDirs* dirs, LogDirLoaderOptions options);
  // Clears the sync barrier it may have set (SyncPackRemovals): a pack whose
  // removal is still unsynced then rolls back at the next start, as after a
  // crash.
  ~LogDirLoader();
  LogDirLoader(const LogDirLoader&) = delete;
  LogDirLoader& operator=(const LogDirLoader&) = delete;

  // Before any AddCounters (Startup knows it, not the constructor).
  void set_threads_per_dir(int threads) { options_.threads_per_dir = threads < 1 ? 1 : threads; }
  // The KIP-831 counters of `d` (every dir added, so the gauges list them
  // all, even one that fails to prepare).
  void AddCounters(LogDir& d);
  // After LogDirs::ReadState: counts the dir's partitions and, for an
  // unclean start, the bytes the scan will read (stat only).
  void Plan(LogDir& d);
  // Loads every partition of every online dir.
  void LoadDirs();
  // The dir's checkpoints from its loaded logs; all_loaded once written (a
  // lack of descriptors leaves them to the checkpoint jobs, a warning).
  void FinishDir(LogDir& d);

  // Whether this start-up's loads deferred their syncs (the shutdown uses
  // the same switch).
  bool batching() const { return batching_; }
  // The partition reports, in the order the loads finished.
  std::vector<PartitionRecoveryReport> TakeReports();
  std::vector<RecoveryGauges> GaugesSnapshot() const;
  ProgressSnapshot Progress() const;

 private:
  struct PresaveList {
    std::vector<DirEntry> listing;       // the partition dir's entries
    std::vector<std::string> saved;      // rewritten in place
    std::vector<std::string> removable;  // may be removed (and written again)
    int64_t bytes_to_scan = 0;           // EstimateBytesToScan's share of it
  };
  int64_t RecoveryPointOf(const LogDir& d, const PartitionDir& p) const;
  // Without a presave (which estimates as it lists): the bytes to scan.
  void EstimateBytesToScan(LogDir& d);
  bool CanBatchSyncs();
  void RollBackPack(LogDir& d);
  // The presave's reads: each partition's PresavePaths, in d.partitions'
  // order, on the dir's threads.
  std::vector<Result<PresaveList>> ListForPresave(const LogDir& d);
  // `lists`: ListForPresave's (any partition beyond them is listed here).
  void PresaveDir(LogDir& d, std::vector<Result<PresaveList>> lists);
  void FinishBatchedLoads(LogDir& d);
  void FinishDerivedOnlyLoads(LogDir& d,
                              const std::vector<std::shared_ptr<LoadTransaction>>& sealed);
  Status FinishSealedInParallel(const std::vector<std::shared_ptr<LoadTransaction>>& sealed);
  // The deferred file system's sync barrier: fsyncs each log dir whose pack
  // FinishDerivedOnlyLoads removed without one.
  Status SyncPackRemovals();
  Result<PresaveList> PresavePaths(const LogDir& d, const PartitionDir& p);
  void LoadPartition(LogDir& d, const PartitionDir& p, int thread_index, ScanHelpPool* help);
  int RecoveryThreadsPerPartition(const LogDir& d) const;

  LogDirs* dirs_;
  LogDirLoaderOptions options_;
  bool batching_ = false;
  mutable std::mutex counters_mu_;  // counters_ grows while gauges are read
  std::deque<LogDirRecoveryCounters> counters_;
  std::mutex reports_mu_;
  std::vector<PartitionRecoveryReport> reports_;
  std::atomic<int64_t> scanned_bytes_{0};
  std::atomic<int64_t> total_bytes_{0};
  std::atomic<int64_t> total_logs_{0};
  std::atomic<int64_t> remaining_logs_{0};  // sum over dirs, for Progress()
  std::mutex unsynced_removals_mu_;
  std::vector<std::string> unsynced_removals_;  // log dirs, for SyncPackRemovals
};

}  // namespace daruma
