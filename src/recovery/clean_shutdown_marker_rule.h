// The clean-shutdown marker rule of `daruma recover` (issue 24): which broker
// epoch a log dir's `.kafka_cleanshutdown` gets back after recovery, and why.
//
// Kafka (KIP-966) sends the epoch it finds in the marker to its controller
// when it registers, as proof of a clean shutdown; -1 makes the broker
// unclean for eligible-leader purposes. So recovery keeps the input's epoch
// only when the dir started clean AND this run changed nothing Kafka would
// read differently, and writes -1 otherwise (never claiming a clean shutdown
// Kafka did not have):
//   * no marker on input (an unclean shutdown, or a dir never used): -1;
//   * a marker without a readable epoch (Kafka before 3.7 wrote it empty): -1;
//   * a partition truncated, or bytes quarantined or files removed other than
//     the leftovers every start deletes (`.deleted`, `.cleaned`, `.swap`):
//     -1;
//   * a normal start that recovered a segment or rebuilt an index (missing or
//     corrupt on input): -1;
//   * a --full rescan recovers every segment by design; it counts as a change
//     only when it found damage (above) or an index file it rebuilt differs
//     from the one on input (index_files_changed);
//   * otherwise the input's epoch.
// Partitions whose load failed and was undone (left_unchanged) changed
// nothing. Whether a dir gets a marker at all is LogManager's decision.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "recovery/recovery_report.h"

namespace daruma {

struct MarkerRuleInput {
  bool had_marker = false;          // `.kafka_cleanshutdown` existed on input
  std::optional<int64_t> epoch_in;  // its broker epoch, when readable
  bool full_rescan = false;         // --full: every segment was recovered
  int64_t index_files_changed = 0;  // --full: index files whose bytes changed
  int64_t unclean_epoch = -1;       // written when the epoch cannot be kept
  std::vector<const PartitionRecoveryReport*> partitions;  // the dir's
};

struct MarkerDecision {
  int64_t epoch = -1;
  bool kept = false;  // epoch is the input's
  std::string why;
};

MarkerDecision DecideMarker(const MarkerRuleInput& input);

// What recovery changed in one partition that the rule counts, as short
// phrases ("235 B truncated", "2 files removed"); empty when nothing.
std::vector<std::string> MarkerChanges(const PartitionRecoveryReport& p, bool full_rescan);

// Whether a file is a leftover of interrupted work that every start removes
// (or quarantines), Kafka's too: a .deleted, .cleaned or .swap file. It holds
// no live data, so its removal leaves a clean dir clean.
bool IsLeftoverFile(const std::string& path);

// Whether a file a load removed (PartitionRecoveryReport::deleted_files) is
// one a start removes as routine, Kafka's too: a leftover (IsLeftoverFile)
// or a producer snapshot. The loader removes snapshots that lie at no
// segment base (Kafka's removeStraySnapshots) and those past a truncation,
// which the truncation itself reports; a corrupt snapshot counts through
// its quarantined copy. Decided by the file name alone.
bool IsRoutineRemoval(const std::string& path);

// CRC-32C of each `.index`, `.timeindex` and `.txnindex` file directly in
// `partition_dir`, by path (for index_files_changed). Unreadable files are
// left out, so they count as changed when compared.
std::map<std::string, uint32_t> IndexFileDigests(FileSystem* fs, const std::string& partition_dir);

// Paths present in only one of the maps or with different digests.
int64_t CountChangedFiles(const std::map<std::string, uint32_t>& before,
                          const std::map<std::string, uint32_t>& after);

}  // namespace daruma
