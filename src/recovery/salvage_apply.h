// ApplySalvage: the writing half of `daruma repair --salvage` (issue 22,
// rule 6); the plan comes from PlanSalvage (salvage_plan.h), made on the same
// file system just before.
//
// For each segment the plan changes, in order:
//  1. every dropped range is copied into the quarantine (quarantine.h), with
//     a manifest line naming the file, the byte range, the offset gap it
//     leaves and "<kind>: <the failed check>";
//  2. the `.log` is replaced by its kept bytes:
//     * nothing kept, not the first segment: the file is removed (its bytes
//       are all in the quarantine by then);
//     * only a tail dropped: truncated there (what recovery does);
//     * otherwise the kept runs are written to `<segment>.log.cleaned`,
//       fsynced, and renamed over the `.log` (Kafka's name for a segment
//       being rewritten: a Kafka broker deletes it at start-up);
//  3. its `.index`, `.timeindex` and `.txnindex` are removed: derived files,
//     which the load that follows rebuilds from the kept batches.
// Then the leader-epoch-checkpoint is moved into the quarantine, so that the
// load assigns every epoch from the kept batches again; the caller's load
// (recovery point 0) rebuilds producer state and snapshots from them too.
//
// Crash safety: `fs` must be the file system of the caller's
// LoadTransaction (load_transaction.h). Every write, truncation, rename and
// removal above is then recorded in its undo journal first, so a crash at
// any step leaves, after the next load's rollback, the partition as it was;
// once the transaction commits, the salvaged one. The quarantine copies
// are made through it too: a rolled-back salvage leaves no manifest line for
// bytes that were not dropped.
#pragma once

#include <string>

#include "common/file_system.h"
#include "common/status.h"
#include "recovery/quarantine.h"
#include "recovery/salvage_plan.h"

namespace daruma {

Status ApplySalvage(const PartitionSalvage& plan, FileSystem* fs, Quarantine* quarantine);

}  // namespace daruma
