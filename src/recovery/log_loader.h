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
// Not supported: splitting a segment with offset overflow (§10.5, KAFKA-6264,
// data written by brokers older than 2.0). Such a segment fails the load with
// kUnsupported naming the segment; nothing is modified past that point.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/status.h"
#include "log/log.h"
#include "log/log_config.h"
#include "log/topic_partition.h"
#include "recovery/recovery_report.h"

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
  // Bytes scanned so far (recovery and producer-state rebuild; may be null).
  std::atomic<int64_t>* scanned_bytes_progress = nullptr;
};

// Loads the partition and fills every field of *report (may be null).
Result<std::unique_ptr<Log>> LoadLog(const LoadLogParams& params, PartitionRecoveryReport* report);

}  // namespace daruma
