// LogRepairer: the applying half of `daruma repair` (issue 5), on any
// FileSystem so that the corruption matrix can run it on its in-memory
// images. The plan comes from LogChecker (recovery/log_checker.h).
//
// RepairRefusal: why a plan may not be applied, "" when it may: a partition
// that cannot be loaded at all, or one that would drop more segment-data
// bytes than `max_corrupt_bytes` (-1 = no limit), or an unparsable
// daruma-topic-configs.json larger than that limit. Problems marked
// operator_only are never repaired (and never cause a refusal).
//
// ApplyRepair, per log dir:
//  1. take the dir lock (DirLock, on the real path; refuse when a broker
//     holds it);
//  2. remove `.kafka_cleanshutdown` (a crash during repair counts as
//     unclean);
//  3. move a leader-epoch-checkpoint the plan found wrong into the
//     quarantine; cut the log at the plan's `cut` (a batch whose baseOffset
//     or partitionLeaderEpoch, outside the CRC, contradicts the batches
//     around it: its segment's tail and every later segment go into the
//     quarantine, as recovery does after a CRC failure); then run LoadLog for real with recovery
//     point 0 and quarantine on, on `threads` threads: every segment re-scanned, indexes, .txnindex
//     and producer state rebuilt, every dropped byte kept in quarantine; then flush and close each
//     log (indexes trimmed, producer snapshot at the LEO);
//  4. rewrite the three checkpoints atomically (recovery point = LEO, log
//     start and high watermark clamped to [log start, LEO]); entries of
//     partitions not in the dir are carried over;
//     a cleaner-offset-checkpoint the plan reported is rewritten with its
//     readable entries clamped to the LEO;
//  5. rename an unparsable daruma-topic-configs.json to
//     daruma-topic-configs.json.corrupt (never rewritten; the refusal above
//     counts its bytes against the limit);
//  6. write the marker again, with its old contents, only if the dir had one.
// With `salvage` (`daruma repair --salvage`, issue 22 rule 6), step 3 does
// not cut: each partition's damaged byte ranges are dropped and the valid
// batches after them kept (recovery/salvage_plan.h, salvage_apply.h), inside
// the same LoadTransaction, before the load that rebuilds indexes, producer
// state and leader epochs from what is kept.
// Invariant: after a successful ApplyRepair, LogChecker finds nothing and a
// start-up recovery changes nothing (the corruption matrix proves both).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/status.h"
#include "log/log_config.h"
#include "recovery/log_checker.h"
#include "recovery/recovery_report.h"
#include "recovery/salvage_plan.h"

namespace daruma {

struct RepairApplyOptions {
  FileSystem* fs = FileSystem::Default();
  Clock* clock = Clock::System();
  LogConfig config;
  int threads = 1;
  bool salvage = false;  // keep valid batches after damage instead of truncating
};

// What one ApplyRepair did.
struct AppliedRepair {
  std::string path;
  std::vector<PartitionRecoveryReport> partitions;
  bool had_marker = false;
  std::vector<std::string> set_aside;  // files renamed aside (an unparsable topic-config file)
  // With salvage: what it did, per entry of `partitions` (nullopt: the
  // partition had no damage, or its repair was rolled back).
  std::vector<std::optional<PartitionSalvage>> salvaged;
  // Scrub findings of the repaired partitions removed from the dir's
  // daruma-scrub-findings.json (recovery/scrub_findings_check.h).
  int64_t cleared_scrub_findings = 0;
};

std::string RepairRefusal(const std::vector<LogDirCheck>& dirs, int64_t max_corrupt_bytes);

// kInvalidArgument when a running broker holds the dir's lock; else the
// first I/O or load error (with the partition dir).
Status ApplyRepair(const LogDirCheck& plan, const RepairApplyOptions& options,
                   AppliedRepair* applied);

}  // namespace daruma
