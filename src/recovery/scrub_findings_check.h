// What `daruma check` and `daruma repair` make of the broker's scrub findings
// (recovery/scrub_findings.h): each finding of a log dir becomes a note of
// the dir's check, saying whether this check sees the same damage; a findings
// file that cannot be read is a dir problem. Repair clears the findings of
// the partitions it repaired (the broker stops serving a damaged range only
// while a finding names it).
#pragma once

#include <string>

#include "common/file_system.h"
#include "common/status.h"
#include "recovery/log_checker.h"

namespace daruma {

// Adds a note per scrub finding of `d.path` (after its partitions were
// checked), or a problem when the findings file is unreadable.
void CheckScrubFindings(FileSystem* fs, LogDirCheck* d);

// After `plan` was applied: removes the findings of every partition of it that
// had a problem repair fixes. Returns how many findings it removed.
Result<int64_t> ClearRepairedScrubFindings(FileSystem* fs, const LogDirCheck& plan);

}  // namespace daruma
