// LogChecker: read-only verification of log directories for `daruma check`
// and the planning half of `daruma repair` (issue 5).
//
// Per partition, two halves:
//  1. The plan: the SAME loader as start-up recovery (LoadLog) runs on an
//     OverlayFileSystem over the real directory, as after an unclean shutdown
//     with recovery point 0 (every segment scanned, CRC-checked, indexes and
//     .txnindex rebuilt) and quarantine on. What it would quarantine, truncate
//     or delete are problems; its report (LEO, aborted transactions) is the
//     reference for the checks below. Nothing reaches the disk.
//  2. Checks LoadLog does not make (it rebuilds rather than verifies), on the
//     real files opened read-only:
//     * every segment has its `.index` and `.timeindex`;
//     * every `.index` entry (offset o, position p): a batch starts at p and
//       holds o; offsets strictly increase;
//     * index sizes are multiples of the entry size (8, 12);
//     * every `.timeindex` entry (t, o): timestamps strictly increase, offsets
//       never decrease, o lies in the batch where the segment's running
//       maximum timestamp first reached t (Kafka appends maxTimestampSoFar
//       with the offset of that maximum);
//     * `.txnindex` entries equal the aborted transactions rebuilt from the
//       control batches;
//     * `leader-epoch-checkpoint` maps every batch's base offset to the
//       batch's partition leader epoch;
//     * every producer snapshot equals a replay of the log's batches up to
//       its offset (recovery/producer_snapshot_check.h);
//     * left-over temporary files (`*.tmp`).
//     Zero-filled index slots after the last entry of the LAST segment are the
//     preallocation of an unclean shutdown and are not reported (non-zero
//     bytes among them are). Fewer index entries than Kafka would write are
//     not a problem: lookups start earlier and scan, and a broker restart
//     legitimately resets Kafka's bytes-since-last-entry count.
// Per log dir: recovery-point, log-start-offset, replication-offset and
// cleaner-offset checkpoints parse, and their entries are <= the partition's
// LEO; `-delete`/`-stray` directories
// and names Kafka cannot parse.
//
// Every problem names the file, the byte position (-1 when the whole file is
// meant), the offset where known, what is wrong and what to do. Pages read
// from the real files are dropped from the page cache (File::DropCache) when
// `drop_cache` is set: a segment's pages after the second half's pass over
// it, so the disk is read once; until then the partition being checked (per
// thread) stays cached. Never writes, renames, removes or locks anything.
#pragma once

#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/overlay_file_system.h"
#include "common/status.h"
#include "log/log_config.h"
#include "log/offset_checkpoint_file.h"
#include "log/topic_partition.h"
#include "recovery/recovery_report.h"

namespace daruma {

struct CheckProblem {
  std::string file;
  int64_t position = -1;
  std::optional<int64_t> offset;
  std::string what;
  std::string action;

  std::string ToString() const;  // "<file> at byte <p>, offset <o>: <what> -- <action>"
};

struct PartitionCheck {
  TopicPartition tp;
  std::string dir;
  PartitionRecoveryReport plan;        // LoadLog's report on the overlay
  std::vector<PlannedChange> changes;  // what that load would write, in order
  std::vector<CheckProblem> problems;
  // Bytes of segment data (`.log` files) the load would quarantine.
  int64_t data_bytes_dropped = 0;
  bool load_failed = false;  // plan.errors says why
};

struct LogDirCheck {
  std::string path;
  bool clean_shutdown = false;
  std::vector<CheckProblem> problems;  // dir-level: checkpoints, stray dirs
  std::vector<PartitionCheck> partitions;
  OffsetMap recovery_points, log_start_offsets, high_watermarks, cleaner_offsets;

  bool HasProblems() const;
};

struct CheckOptions {
  FileSystem* fs = FileSystem::Default();
  Clock* clock = Clock::System();
  LogConfig config;
  int threads = 1;
  bool drop_cache = true;
  std::atomic<int64_t>* scanned_bytes = nullptr;         // progress (may be null)
  std::atomic<int64_t>* remaining_partitions = nullptr;  // decremented per partition
};

struct CheckPartitionParams {
  std::string log_dir;
  std::string partition_dir;
  TopicPartition tp;
  int64_t log_start_offset_checkpoint = 0;
};

PartitionCheck CheckPartition(const CheckPartitionParams& p, const CheckOptions& options);

// Lists the partitions, reads the checkpoints, checks every partition on
// options.threads threads, then the dir-level checks. kIoError/kNotFound when
// the directory itself cannot be listed.
Result<LogDirCheck> CheckLogDir(const std::string& log_dir, const CheckOptions& options);

// What a check of the dirs will read (stat only), for the progress bar:
// bytes of `.log` data and directories (an upper bound of the partitions,
// so a count of partitions left never goes below zero).
struct CheckWork {
  int64_t bytes = 0;
  int64_t partitions = 0;
};
CheckWork EstimateCheckWork(FileSystem* fs, const std::vector<std::string>& log_dirs);

nlohmann::json ToJson(const CheckProblem& p);
nlohmann::json ToJson(const PartitionCheck& p);
nlohmann::json ToJson(const LogDirCheck& d);

}  // namespace daruma
