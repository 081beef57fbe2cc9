// The recovery report: exactly what start-up recovery found and changed, per
// log dir and per partition. Serialised as JSON with the field names of the
// report schema in issue 4 (extra fields are allowed).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/damage_kind.h"

namespace daruma {

struct QuarantinedRange {
  std::string file;           // original file path
  int64_t from_position = 0;  // first byte moved aside
  int64_t bytes = 0;
  std::optional<int64_t> first_offset;
  std::optional<int64_t> last_offset;
  DamageKind kind = DamageKind::kUnloadable;  // JSON "kind" beside "reason"
  std::string reason;
  std::string quarantine_path;  // where the bytes now are
};

struct ReportedDamage {
  DamageKind kind;
  std::string text;

  bool operator==(const ReportedDamage&) const = default;
};

struct SegmentInfo {
  int64_t base_offset = 0;
  int64_t size_bytes = 0;
};

struct PartitionRecoveryReport {
  std::string topic;
  int32_t partition = 0;
  std::string dir;
  int64_t log_start_offset = 0;
  int64_t log_end_offset = 0;
  int64_t high_watermark = 0;
  // After the load (LogManager): the log end offset once the load has
  // synced what it kept; for a load that only rebuilt files the next
  // unclean start rebuilds again, left unsynced, what Kafka's loader
  // leaves: min(checkpoint, LEO), or lower, down to the lowest segment
  // whose missing or corrupt indexes it rebuilt (Log::LeaveUnsyncedUntilFlush).
  int64_t recovery_point = 0;
  // What Kafka's LogLoader returns (spec §10.3 pass 5 step 4): the LEO after
  // a clean shutdown, else min(checkpoint, LEO); for comparing with Kafka.
  int64_t loaded_recovery_point = 0;
  int64_t last_stable_offset = 0;
  std::vector<SegmentInfo> segments;
  int64_t scanned_bytes = 0;
  int64_t truncated_bytes = 0;
  std::vector<QuarantinedRange> quarantined;
  // Ranges of a segment replaced by its offset-overflow split that no split
  // segment keeps (offsets below the old base; log_loader.cc SplitAndSwap):
  // file, position and size within the old segment, first_offset the base
  // such a segment would have had. Their bytes are in the old segment's
  // quarantine copy (quarantine_path empty), so they are not counted again.
  // JSON "notKept".
  std::vector<QuarantinedRange> not_kept;
  std::vector<std::string> rebuilt_indexes;
  std::vector<std::string> deleted_files;
  // Files with a segment or snapshot suffix but no offset name, which the
  // load left as found and skipped (recovery/partition_dir_heal.h).
  std::vector<std::string> stray_files;
  std::vector<std::array<int64_t, 2>> leader_epochs;         // [epoch, startOffset]
  std::vector<std::array<int64_t, 4>> aborted_transactions;  // [pid, first, last, lso]
  int64_t active_producers = 0;
  std::vector<std::string> errors;
  std::vector<std::string>
      warnings;  // e.g. "Corruption found in segment 975, truncating to offset 1045"
  // The warnings and errors that report damage, each with its kind (JSON
  // "damage": [{"kind", "text"}]); the text is also in warnings or errors.
  std::vector<ReportedDamage> damage;
  int64_t recovered_segments = 0;
  int64_t duration_ms = 0;
  // The load failed and every change it had made was undone: the partition
  // dir is byte for byte what it was before.
  bool left_unchanged = false;
};

struct LogDirReport {
  std::string path;
  bool clean_shutdown = false;
  std::optional<int64_t> broker_epoch;  // the input marker's, when readable
  bool offline = false;
  std::string error;
  // The marker Shutdown wrote (recovery/clean_shutdown_marker_rule.h):
  // its broker epoch, nullopt when it wrote none, and why. JSON "marker":
  // {"in": input epoch (null: a marker without one; absent: no marker),
  //  "out": epoch written (null: none), "why": ...}, only once `marker_why`
  // is set.
  std::optional<int64_t> marker_out;
  std::string marker_why;
};

struct RecoveryReport {
  std::vector<LogDirReport> log_dirs;
  std::vector<PartitionRecoveryReport> partitions;
  int64_t duration_ms = 0;

  nlohmann::json ToJson() const;
};

nlohmann::json ToJson(const PartitionRecoveryReport& p);

}  // namespace daruma
