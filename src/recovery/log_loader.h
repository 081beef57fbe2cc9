// LoadLog: opens one partition directory at start-up exactly as Kafka's
// LogLoader does (spec §10.2-§10.8), optionally setting aside every byte Kafka
// would destroy (quarantine.h).
//
// Algorithm (spec §10.3; each pass is one function in log_loader.cc):
//  1. Temporary files: delete `*.deleted` (not `.checkpoint.deleted`) and all
//     `*.cleaned`; delete `*.swap` at or above the smallest `.cleaned` offset.
//  2. For the surviving `.log.swap` segments: delete every non-swap file whose
//     offset lies in [min swap base, max swap next offset).
//  3. Rename `*.swap` to their final names.
//  4. Load segments in name order: delete orphan indexes; recover segments
//     without `.index` or with a bad `.txnindex`; create a missing
//     `.timeindex` empty.
//  5. Unclean shutdown: recover every segment from the one holding the
//     recovery point; after the first truncation delete all later segments.
//     Then LEO = next offset of the last segment (all segments deleted if it
//     is below the log-start checkpoint), an empty segment if none is left,
//     recovery point = LEO after a clean shutdown else min(checkpoint, LEO),
//     and the active segment's indexes get their full size back.
//  6. Leader epochs truncated to [log start, LEO], log start offset =
//     max(checkpoint, first base), stray snapshots removed, producer state
//     rebuilt up to the LEO (§10.6).
// The Log built from the result starts with high watermark = log start offset
// (§10.8); the caller clamps the replication checkpoint in later.
//
// "Deleting" follows Kafka: files of segments removed by recovery are renamed
// `.deleted` (a later load removes them) -- unless quarantine is on, in which
// case they (and every other file Kafka removes, and every truncated tail)
// are moved/copied to the quarantine directory first.
//
// Offset overflow (§10.5, KAFKA-6264, data written by brokers before 2.0): a
// segment whose offsets exceed base + 2^31-1 is split into segments that each
// satisfy the relative-offset rule (segment_splitter.h), swapped in with the
// crash-safe `.cleaned`/`.swap` protocol, and the interrupted pass is retried
// (pass 4 from scratch; pass 5 from the first new segment or the segment
// holding the recovery point, whichever is later).
//
// Parallel recovery: with recovery_threads > 1, pass 5 scans (reads and
// CRC-checks) the unflushed segments on that many threads ahead of a
// sequential fold that applies each scan in segment order
// (segment_scan_pipeline.h); the files written are those of one thread. The
// fold's fsyncs (each recovered segment's rebuilt indexes and the producer
// snapshot Kafka takes after it) then run in the background
// (background_syncs.h), overlapping later scans, and pass 5 returns only
// after all of them: what a load returns is as durable as with one thread,
// where the same fsyncs run in line. (The caller's Log::FlushAll then syncs
// the .log files before the recovery point may move to the LEO.)
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/status.h"
#include "log/log.h"
#include "log/log_config.h"
#include "log/topic_partition.h"
#include "recovery/load_transaction.h"
#include "recovery/recovery_report.h"
#include "recovery/scan_help_pool.h"

namespace daruma {

struct LoadLogParams {
  FileSystem* fs = nullptr;
  std::string log_dir;
  std::string partition_dir;  // full path
  TopicPartition tp;
  LogConfig config;
  Clock* clock = nullptr;
  bool had_clean_shutdown = false;
  int64_t recovery_point_checkpoint = 0;
  int64_t log_start_offset_checkpoint = 0;
  bool quarantine = true;  // false = Kafka's plain behaviour (--no-quarantine)
  // KIP-831 remainingSegmentsToRecover for this log (may be null).
  std::atomic<int64_t>* remaining_segments = nullptr;
  // The partition dir's entries as the caller listed them after rolling back
  // any interrupted load and before anything changed the dir since (null:
  // the loader lists it). A batched start's presave lists every partition
  // dir anyway; taking its listing saves one listing per partition.
  const std::vector<DirEntry>* listing = nullptr;
  // Bytes scanned so far (recovery and producer-state rebuild; may be null).
  std::atomic<int64_t>* scanned_bytes_progress = nullptr;
  // Threads scanning this partition's segments ahead of recovery (pass 5;
  // 1 = scan on the loading thread). Only speed depends on it.
  int recovery_threads = 1;
  // With recovery_threads 1: the dir's loading threads that have no
  // partition left to claim, which scan this partition's segments ahead
  // (pass 4's and pass 5's) and the second part of its last segment, split
  // for them (scan_help_pool.h). Null: none. The files a load leaves do not
  // depend on it; its speed and memory (the split's marks, two segments'
  // scans waiting) do.
  ScanHelpPool* scan_help = nullptr;
  // All or nothing (load_transaction.h): every change goes through an undo
  // log, rolled back if the load fails, so a refused partition's dir is left
  // byte for byte as it was. `transaction` set: the caller's transaction
  // (repair's steps before the load belong to it), which the caller commits
  // or rolls back; null: LoadLog runs its own. `transactional` false: no undo
  // log (a load on an overlay that is thrown away anyway, `check`).
  std::shared_ptr<LoadTransaction> transaction = nullptr;
  bool transactional = true;
  // The caller rolled back the pack of log_dir (load_undo_pack.h) already
  // (a start does, once per dir); false: the rollback before the load also
  // applies this partition's packed records, leaving the pack (`check`).
  bool pack_rolled_back = false;
};

// Loads the partition and fills every field of *report (may be null). First
// rolls back an interrupted earlier load or repair of the partition (unless
// the caller passes its own transaction). On failure the partition dir is as
// it was found (report->left_unchanged), unless undoing failed too (an I/O
// error, which the error names).
Result<std::unique_ptr<Log>> LoadLog(const LoadLogParams& params, PartitionRecoveryReport* report);

}  // namespace daruma
