#include "recovery/scrub_findings_check.h"

#include <fmt/format.h>

#include <algorithm>

#include "recovery/scrub_findings.h"

namespace daruma {
namespace {

const PartitionCheck* FindPartition(const LogDirCheck& d, const TopicPartition& tp) {
  for (const PartitionCheck& p : d.partitions) {
    if (p.tp == tp) return &p;
  }
  return nullptr;
}

bool Repairable(const PartitionCheck& p) {
  return std::any_of(p.problems.begin(), p.problems.end(),
                     [](const CheckProblem& q) { return !q.operator_only; });
}

}  // namespace

void CheckScrubFindings(FileSystem* fs, LogDirCheck* d) {
  Result<ScrubFindingsFile> file = ReadScrubFindings(fs, d->path);
  if (!file.ok()) {
    // The broker rewrites the file after its next pass; until then it
    // cannot tell which ranges it found damaged.
    d->problems.push_back({DamageKind::kCorruptMetadata, JoinPath(d->path, kScrubFindingsFileName),
                           -1, std::nullopt,
                           "the broker's scrub findings cannot be read: " + file.status().message(),
                           "move it out of the log dir; the broker's next scrub pass writes a "
                           "new one",
                           /*operator_only=*/true});
    return;
  }
  for (const ScrubFinding& f : file->findings) {
    const std::string path = JoinPath(d->path, f.file);
    const PartitionCheck* p = FindPartition(*d, f.tp);
    // The same damage: this check has a problem in that segment's `.log`.
    const bool seen =
        p != nullptr &&
        (p->load_failed || std::any_of(p->problems.begin(), p->problems.end(),
                                       [&](const CheckProblem& q) { return q.file == path; }));
    d->notes.push_back(fmt::format(
        "{}: the broker's scrub found {} at bytes [{}, {}), offsets [{}, {}) ({}); {}", path,
        DamageKindName(f.damage.kind), f.damage.position, f.damage.end_position,
        f.damage.first_offset, f.damage.end_offset, f.damage.what,
        seen ? "this check reports the same segment below, and repairing it clears the finding"
             : "this check does not see it now (the segment was rewritten or removed since, or "
               "the read failed only then); the broker's next pass verifies it again"));
  }
}

Result<int64_t> ClearRepairedScrubFindings(FileSystem* fs, const LogDirCheck& plan) {
  Result<ScrubFindingsFile> read = ReadScrubFindings(fs, plan.path);
  // An unreadable file is the check's operator-only problem, left as found.
  if (!read.ok() && read.status().code() == StatusCode::kCorruption) return int64_t{0};
  DARUMA_ASSIGN_OR_RETURN(ScrubFindingsFile file, std::move(read));
  int64_t cleared = 0;
  for (const PartitionCheck& p : plan.partitions) {
    if (!Repairable(p)) continue;
    const auto n = std::count_if(file.findings.begin(), file.findings.end(),
                                 [&](const ScrubFinding& f) { return f.tp == p.tp; });
    if (n == 0) continue;
    DARUMA_RETURN_IF_ERROR(RemoveScrubFindings(fs, plan.path, p.tp));
    cleared += n;
  }
  return cleared;
}

}  // namespace daruma
