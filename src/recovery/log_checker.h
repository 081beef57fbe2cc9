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
//     * left-over temporary files (`*.tmp`);
//     * base offsets increase and leader epochs never decrease along the
//       batches (recovery/batch_order_check.h): baseOffset and
//       partitionLeaderEpoch are outside the batch CRC. Recovery's scan (and
//       so the plan) cuts a batch that breaks either order within its
//       segment (log/segment_recovery_scan.h); what only the batches of two
//       segments show (an epoch that decreases from one segment to the next)
//       it keeps, and this check finds it. The first suspect batch is the `cut`:
//       repair drops from there to the end of the log, as recovery does
//       after a CRC failure, and counts it against --max-corrupt-bytes.
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
// meant), the offset where known, what is wrong and what to do.
// I/O: the two halves run side by side on two threads per partition. The
// plan reads the files through a ReadAheadFileSystem
// (recovery/read_ahead_file_system.h), which tracks how far it got (and can
// keep WillNeed up to `read_ahead_bytes` ahead of it); the second half takes
// each segment as soon as the plan has read it, from the page cache,
// validating every batch itself. If the plan
// then ends any segment's valid data elsewhere (damage), the second half runs
// again behind the finished plan. Pages read from the real files are dropped
// from the page cache (File::DropCache) when `drop_cache` is set, a segment's
// pages after the second half's pass over it, so the disk is read once.
// Never writes, renames, removes or locks anything.
#pragma once

#include <atomic>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/damage_kind.h"
#include "common/file_system.h"
#include "common/overlay_file_system.h"
#include "common/status.h"
#include "log/log_config.h"
#include "log/offset_checkpoint_file.h"
#include "log/topic_partition.h"
#include "log/uuid.h"
#include "recovery/recovery_report.h"

namespace daruma {

struct CheckProblem {
  // What is wrong (common/damage_kind.h); first so that no problem is made
  // without one. JSON "kind" beside "problem".
  DamageKind kind;
  std::string file;
  int64_t position = -1;
  std::optional<int64_t> offset;
  std::string what;
  std::string action;
  // Repair leaves it alone: only an operator can fix it (e.g. an unknown key
  // in daruma-topic-configs.json).
  bool operator_only = false;
  // The partition a dir-level problem is about (a checkpoint entry above its
  // log end offset), so a plan that keeps more of the log can drop it.
  std::optional<TopicPartition> partition = std::nullopt;

  // "<file> at byte <p>, offset <o>: <kind>: <what> -- <action>"
  std::string ToString() const;
};

// Where repair cuts a log whose batch header fields outside the CRC
// contradict each other (recovery/batch_order_check.h): from `position` of
// `file` to the end of the log.
struct LogCut {
  std::string file;  // the segment's `.log`
  int64_t segment_base = 0;
  int64_t position = 0;
  int64_t offset = 0;  // the first cut batch's base offset, as found
  int64_t bytes = 0;   // `.log` bytes from the cut to the end of the log
  DamageKind kind = DamageKind::kNonMonotonicOffset;  // of the first cut batch
};

struct PartitionCheck {
  TopicPartition tp;
  std::string dir;
  PartitionRecoveryReport plan;        // LoadLog's report on the overlay
  std::vector<PlannedChange> changes;  // what that load would write, in order
  std::vector<CheckProblem> problems;
  // What the load would also do that is no damage (the LogDirCheck's notes
  // get them).
  std::vector<std::string> notes;
  // Bytes of segment data (`.log` files) the load and the cut would quarantine.
  int64_t data_bytes_dropped = 0;
  std::optional<LogCut> cut;
  bool load_failed = false;  // plan.errors says why
  // The partition's segments (`.log` files with offset names) as found,
  // before the load's plan keeps or drops any: what the check read.
  int64_t segment_files = 0;
  // The topic id its partition.metadata holds (none: missing or unreadable,
  // the latter a problem).
  std::optional<Uuid> topic_id;
};

// A topic's entry in daruma-topic-configs.json (recovery/topic_config_check.h).
struct TopicConfigEntry {
  std::string topic;
  int64_t position = -1;  // of its key in the file
  int64_t line = -1;
};

struct LogDirCheck {
  std::string path;
  bool clean_shutdown = false;
  std::vector<CheckProblem> problems;  // dir-level: checkpoints, stray dirs, topic configs
  // What the check saw but does not count as a problem (the KRaft metadata
  // log it verified read-only, say).
  std::vector<std::string> notes;
  std::vector<PartitionCheck> partitions;
  OffsetMap recovery_points, log_start_offsets, high_watermarks, cleaner_offsets;
  std::vector<TopicConfigEntry> topic_config_topics;
  // Size of a daruma-topic-configs.json that does not parse (0: none, or it
  // parses); repair sets it aside only within --max-corrupt-bytes.
  int64_t unreadable_topic_configs_bytes = 0;

  bool HasProblems() const;
  // Whether any problem is one repair fixes (not operator_only).
  bool HasRepairableProblems() const;
};

struct CheckOptions {
  FileSystem* fs = FileSystem::Default();
  Clock* clock = Clock::System();
  LogConfig config;
  int threads = 1;
  bool drop_cache = true;
  // WillNeed this many bytes ahead of the plan (ReadAheadFileSystem); 0 =
  // none, only the kernel's own sequential readahead. Off by default: on the
  // benchmark VM (virtio disk, read_ahead_kb 8192) WillNeed-driven reads ran
  // at 1.1 GB/s where plain sequential preads ran at 1.7 GB/s. Worth trying
  // on high-latency storage.
  int64_t read_ahead_bytes = 0;
  std::atomic<int64_t>* scanned_bytes = nullptr;         // progress (may be null)
  std::atomic<int64_t>* remaining_partitions = nullptr;  // decremented per partition
};

struct CheckPartitionParams {
  std::string log_dir;
  std::string partition_dir;
  TopicPartition tp;
  int64_t log_start_offset_checkpoint = 0;
  // The dir has `.kafka_cleanshutdown`: a start would trust the producer
  // snapshots instead of rebuilding the state from the log.
  bool clean_shutdown = true;
  // recovery-point-offset-checkpoint's entry (0 if none): without the
  // marker, a start rescans the segments from the one holding it on.
  int64_t recovery_point_checkpoint = 0;
};

PartitionCheck CheckPartition(const CheckPartitionParams& p, const CheckOptions& options);

// Lists the partitions, reads the checkpoints, checks every partition on
// options.threads threads, then the dir-level checks (checkpoints,
// daruma-topic-configs.json). The cross-dir check of topic config entries is
// CheckTopicConfigTopics (recovery/topic_config_check.h), run by the caller
// once every dir is checked. kIoError/kNotFound when
// the directory itself cannot be listed.
Result<LogDirCheck> CheckLogDir(const std::string& log_dir, const CheckOptions& options);

// What start-up refuses across dirs, as operator-only problems of the later
// dir: a partition live in two dirs, meta.properties files that disagree on
// cluster.id / node.id (the dirs belong to different brokers) or share a
// directory.id, and a reserved directory.id (FindDirectoryIdProblems, a
// dir_conflict too though one dir has it: the check that finds it is this
// one across all of a broker's meta.properties). Run once every dir is
// checked, like CheckTopicConfigTopics.
void CheckDirsAgree(std::vector<LogDirCheck>* dirs, FileSystem* fs = FileSystem::Default());

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
