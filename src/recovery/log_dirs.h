// LogDirs: the log directories of a broker and what is known about each
// (Kafka's LogManager bookkeeping): the exclusive `.lock`, meta.properties,
// the partition directories found, the clean-shutdown marker and the three
// offset checkpoints read at start-up, the loaded logs, and the
// LogDirFailureChannel that takes a dir offline. The start-up loader
// (log_dir_loader.h), the jobs (log_jobs.h), the topic configs
// (topic_config_store.h) and the runtime registry (live_logs.h) all work on
// these dirs; this class owns them and their locks.
//
// Locks: `mu()` guards every dir's `logs`, `kinds`, `failed_*` once loading
// has begun, and dir_warnings; `checkpoint_mu()` serializes the writers of
// the checkpoint files (and of daruma-topic-configs.json). Lock order (the
// manager's): jobs -> create -> checkpoint_mu -> mu -> a Log's own mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"
#include "log/log.h"
#include "log/log_file_names.h"
#include "log/meta_properties.h"
#include "log/offset_checkpoint_file.h"
#include "log/topic_partition.h"
#include "log/uuid.h"
#include "recovery/dir_lock.h"
#include "recovery/load_transaction.h"
#include "recovery/log_dir_failure_channel.h"

namespace daruma {

inline constexpr char kRecoveryPointCheckpointFile[] = "recovery-point-offset-checkpoint";
inline constexpr char kLogStartOffsetCheckpointFile[] = "log-start-offset-checkpoint";
inline constexpr char kReplicationOffsetCheckpointFile[] = "replication-offset-checkpoint";

// KRaft's metadata log: in a log dir, but the controller quorum's, never a
// partition the log manager loads (`check` verifies it read-only,
// metadata_log_check.h).
inline constexpr char kMetadataLogDirName[] = "__cluster_metadata-0";

// Sub-directories of a log dir that are not partition logs (Kafka skips the
// same two). The quarantine lives inside partition dirs (quarantine.h), so it
// never shows up here.
inline bool IsIgnoredLogDirEntry(const std::string& name) {
  return name == "remote-log-index-cache" || name == kMetadataLogDirName;
}

// KIP-831 recovery counters of one log dir.
struct LogDirRecoveryCounters {
  explicit LogDirRecoveryCounters(std::string d) : dir(std::move(d)) {}
  std::string dir;
  std::atomic<int64_t> remaining_logs{0};  // remainingLogsToRecover
  // remainingSegmentsToRecover, one per recovery thread ("threadNum" tag).
  std::deque<std::atomic<int64_t>> remaining_segments;
};

struct PartitionDir {
  std::string path;
  PartitionDirName name;
};

// One log dir. Written by start-up only, except what the file comment says
// mu() guards and `topic_ids` (the registry's create lock).
struct LogDir {
  std::string path;
  LogDirRecoveryCounters* counters = nullptr;
  std::unique_ptr<DirLock> lock;
  std::optional<MetaProperties> meta;
  std::vector<PartitionDir> partitions;
  bool had_clean_shutdown = false;
  std::optional<int64_t> broker_epoch;
  OffsetMap recovery_points;
  OffsetMap log_start_offsets;
  OffsetMap high_watermarks;
  bool all_loaded = false;  // every partition job ran (loaded or failed)
  bool dropped = false;     // MarkOffline dropped its logs
  int64_t failed_partitions = 0;
  // Every partition that failed to load was left byte for byte as found.
  bool failed_all_unchanged = true;
  std::set<TopicPartition> failed_tps;
  std::map<std::string, std::unique_ptr<Log>> logs;  // by partition directory path
  std::map<std::string, DirKind> kinds;              // same keys
  std::map<std::string, Uuid> topic_ids;             // verified partition.metadata, by path
  std::atomic<bool> recovery_points_dirty{false};    // a flush moved a recovery point
  // full_rescan of a clean dir: each partition's index files before its load,
  // by partition path (guarded by mu() while loading).
  std::map<std::string, std::map<std::string, uint32_t>> index_digests;
  // Batched syncs (LogDirLoader::PresaveDir): each partition's load
  // transaction begun, rolled back or presaved ahead of its load, by path,
  // and the transactions of loads that succeeded, sealed until the dir's
  // syncfs (guarded by mu() while loading).
  struct Prepared {
    std::shared_ptr<LoadTransaction> txn;
    Status status;
    // The partition dir as the presave listed it, after the rollback: the
    // load's first listing (LoadLogParams::listing).
    std::vector<DirEntry> listing;
    std::vector<std::string> warnings;
  };
  std::map<std::string, Prepared> prepared;
  std::vector<std::shared_ptr<LoadTransaction>> sealed;
  // The presave wrote the dir's load undo pack (load_undo_pack.h), which
  // FinishBatchedLoads removes; and the partitions an interrupted start's
  // pack rolled back before this start read the dir.
  bool pack_written = false;
  std::set<std::string> pack_rolled_back;
  // Some load of the dir made a change that must be durable before the
  // pack goes (anything but rebuilt derived files), or failed: then
  // FinishBatchedLoads syncs the whole dir first (guarded by mu()).
  bool loads_need_sync = false;
  // A load lowered its log's recovery point below the checkpoint's
  // (Log::LeaveUnsyncedUntilFlush; guarded by mu() while loading).
  bool points_lowered = false;
  // The text of each checkpoint file ReadState could read, by name, then as
  // last written: a start whose checkpoint would say the same leaves the
  // file as found, and a periodic job writes only what changed
  // (WriteCheckpoints, CheckpointHighWatermarksOf with keep_found).
  std::map<std::string, std::string> checkpoints_found;
  std::optional<int64_t> marker_out;  // the epoch Shutdown wrote; nullopt: none
  std::string marker_why;
  int64_t duration_ms = 0;

  // Of the log at `path` (mu() held): live, the replica served now; current,
  // live or a future replica moving here, not one pending deletion or stray.
  bool IsLive(const std::string& path) const {
    auto kind = kinds.find(path);
    return kind == kinds.end() || kind->second == DirKind::kLive;
  }
  bool IsCurrent(const std::string& path) const {
    auto kind = kinds.find(path);
    return kind == kinds.end() || kind->second == DirKind::kLive ||
           kind->second == DirKind::kFuture;
  }
};

class LogDirs {
 public:
  // `fs` is what logs and checkpoints are written through.
  explicit LogDirs(FileSystem* fs) : fs_(fs) {}
  LogDirs(const LogDirs&) = delete;
  LogDirs& operator=(const LogDirs&) = delete;

  // One LogDir per path, in order (trailing slashes dropped); a path listed
  // twice is kInvalidArgument. Nothing on disk is touched.
  Status Add(const std::vector<std::string>& paths);
  // Per dir: create it if missing, take its `.lock`, read meta.properties and
  // list its partition directories; then the dirs must agree on cluster.id /
  // node.id, share no directory.id and name no reserved one (what Kafka's
  // MetaPropertiesEnsemble.verify refuses), and no partition may be live
  // twice. An I/O error takes only its dir offline; a lock held elsewhere, a
  // bad meta.properties, a bad partition directory name or a duplicate
  // partition is fatal (returned, with every fatal problem named). kIoError
  // when no dir is usable.
  Status Prepare();
  // Reads and DELETES the clean-shutdown marker (fsyncing the dir, so a
  // crash while loading counts as unclean) and reads the three checkpoints
  // (an unreadable one is a dir warning and read as empty). False when the
  // dir went offline.
  bool ReadState(LogDir& d);

  // Writes the three checkpoints of `d` from its loaded logs; entries of
  // partitions that failed to load are carried over so nothing is forgotten.
  // With `keep_found` (a start whose syncfs ran after ReadState, so what it
  // found is durable), a checkpoint whose text would be the one found (or
  // written since with keep_found) is not written again: a crashed start's
  // loads that only rebuilt derived files then need no fsync at all after
  // them. `via`: the file system to write through instead of the dirs' own.
  Status WriteCheckpoints(LogDir& d, bool keep_found = false);
  Status CheckpointRecoveryPointsOf(LogDir& d, bool keep_found = false, FileSystem* via = nullptr);
  Status CheckpointLogStartOffsetsOf(LogDir& d, bool keep_found = false);
  // replication-offset-checkpoint. Kafka's ReplicaManager writes it every
  // replica.high.watermark.checkpoint.interval.ms, so a crash loses at most
  // that much of the high watermarks' progress.
  Status CheckpointHighWatermarksOf(LogDir& d, bool keep_found = false);

  // Takes `d` offline and drops its logs without flushing (their files may
  // be unwritable); even for a lack of descriptors, since callers found the
  // dir itself unusable.
  void MarkOffline(LogDir& d, const Status& error);
  // Loaded and online: gets jobs, new logs and checkpoints.
  bool IsServing(const LogDir& d) const;
  bool HasFailures() const;

  std::vector<Log*> AllLogs() const;
  // The live log of tp and its dir, or {nullptr, nullptr}.
  std::pair<Log*, LogDir*> FindLive(const TopicPartition& tp) const;
  // Logs of serving dirs that get jobs (live and future kinds).
  std::vector<Log*> JobLogs() const;
  // Whether `log` (compared by pointer only: a deleted log may already be
  // destroyed) is a live log of a serving dir.
  bool IsLiveLog(const Log* log) const;
  // Kafka's nextLogDirs: the serving dir with the fewest current and future
  // logs, the first in order on a tie; nullptr when none serves.
  LogDir* PickDirForNewLog() const;

  const std::vector<std::unique_ptr<LogDir>>& dirs() const { return dirs_; }
  LogDirFailureChannel& failure_channel() { return failure_channel_; }
  const LogDirFailureChannel& failure_channel() const { return failure_channel_; }
  bool IsOffline(const LogDir& d) const { return failure_channel_.IsOffline(d.path); }
  // Warnings about a dir itself (unreadable checkpoint, topic configs...).
  // Written during start-up only.
  std::map<std::string, std::vector<std::string>>& warnings() { return warnings_; }
  const std::map<std::string, std::vector<std::string>>& warnings() const { return warnings_; }
  std::mutex& mu() const { return mu_; }
  std::mutex& checkpoint_mu() const { return checkpoint_mu_; }

 private:
  Status PrepareDir(LogDir& d);
  Status CheckMetaProperties() const;
  Status CheckDuplicatePartitions() const;
  OffsetMap ReadCheckpoint(LogDir& d, const char* name);
  // The checkpoint entries of a dir: `carried` values of partitions that
  // failed to load, then value(log) of each live or future log that has one.
  OffsetMap CollectOffsets(LogDir& d, const OffsetMap& carried,
                           const std::function<std::optional<int64_t>(Log&)>& value) const;
  Status WriteCheckpointFile(LogDir& d, const char* name, const OffsetMap& offsets, bool keep_found,
                             FileSystem* via = nullptr);

  FileSystem* fs_;
  std::vector<std::unique_ptr<LogDir>> dirs_;
  LogDirFailureChannel failure_channel_;
  std::map<std::string, std::vector<std::string>> warnings_;
  mutable std::mutex mu_;
  mutable std::mutex checkpoint_mu_;
};

}  // namespace daruma
