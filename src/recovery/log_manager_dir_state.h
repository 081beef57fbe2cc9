// LogManager's private per-directory state, shared by log_manager.cc (start-up,
// shutdown), log_manager_partitions.cc (create/delete) and log_manager_jobs.cc
// (background jobs). Not for use outside LogManager.
//
// Guarded by LogManager::mu_: `logs`, `kinds`, `failed_*` after start-up.
// `topic_ids` by create_mu_. Everything else is written during Startup only.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "log/log.h"
#include "log/meta_properties.h"
#include "log/offset_checkpoint_file.h"
#include "log/topic_partition.h"
#include "log/uuid.h"
#include "recovery/dir_lock.h"
#include "recovery/load_transaction.h"
#include "recovery/log_manager.h"

namespace daruma {

struct LogManager::PartitionDir {
  std::string path;
  PartitionDirName name;
};

struct LogManager::LogDirState {
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
  int64_t failed_partitions = 0;
  // Every partition that failed to load was left byte for byte as found.
  bool failed_all_unchanged = true;
  std::set<TopicPartition> failed_tps;
  std::map<std::string, std::unique_ptr<Log>> logs;  // by partition directory path
  std::map<std::string, DirKind> kinds;              // same keys
  std::map<std::string, Uuid> topic_ids;  // verified partition.metadata, by path (create_mu_)
  std::atomic<bool> recovery_points_dirty{false};  // a flush moved a recovery point
  // full_rescan of a clean dir: each partition's index files before its load,
  // by partition path (guarded by mu_ while loading).
  std::map<std::string, std::map<std::string, uint32_t>> index_digests;
  // Batched syncs (LogManager::PresaveDir): each partition's load
  // transaction begun, rolled back or presaved ahead of its load, by path,
  // and the transactions of loads that succeeded, sealed until the dir's
  // syncfs (guarded by mu_ while loading).
  struct Prepared {
    std::shared_ptr<LoadTransaction> txn;
    Status status;
    std::vector<std::string> warnings;
  };
  std::map<std::string, Prepared> prepared;
  std::vector<std::shared_ptr<LoadTransaction>> sealed;
  std::optional<int64_t> marker_out;  // the epoch Shutdown wrote; nullopt: none
  std::string marker_why;
  int64_t duration_ms = 0;
};

}  // namespace daruma
