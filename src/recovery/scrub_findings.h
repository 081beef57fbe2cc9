// Scrub findings: what the broker's background scrubber (broker/scrubber.h)
// found damaged in old segments, and the file that keeps them across restarts
// for `daruma repair` and the next broker.
//
// A finding is one damaged byte range [position, end_position) of one
// segment's `.log`. Its offsets [first_offset, end_offset) are the TRUSTED
// bounds around the damage, taken from the valid batches before and after it
// (the offsets written inside damaged bytes are never trusted): first_offset
// is one past the last valid batch before the range (the segment's base
// offset when the range starts at byte 0), end_offset is the base offset of
// the first valid batch after it, or the next segment's base offset when the
// range runs to the end of the segment. Every offset a consumer could have
// been given from the damaged bytes lies in [first_offset, end_offset).
//
// File: `<log dir>/daruma-scrub-findings.json`, one per log dir, a regular
// file at the dir's root (Kafka's LogManager.loadLogs loads only
// sub-directories, so Kafka ignores it, as it ignores
// daruma-topic-configs.json). Format (UTF-8 JSON, one object):
//   {"version": 1,
//    "lastPassCompletedMs": <ms since the epoch> | null,
//    "findings": [{"topic": "t", "partition": 0,
//                  "segment": <base offset>,
//                  "file": "t-0/00000000000000000000.log",   // relative to the dir
//                  "position": <first damaged byte>, "endPosition": <one past>,
//                  "firstOffset": n, "endOffset": n,
//                  "kind": "bad_crc", "what": "<file, position, field, expected, found>",
//                  "foundMs": <ms since the epoch>,
//                  "segmentSize": n, "segmentModifiedMs": n}, ...]}
// segmentSize and segmentModifiedMs describe the `.log` as it was when the
// damage was found (absent: unknown). A file that differs from them was
// rewritten since (repair, the cleaner's swap): the finding no longer
// describes it.
// Written with FileSystem::WriteFileAtomically (temp file, fsync, rename, dir
// fsync): a crash leaves the old or the new file, never a mix. Reading is
// strict: a file that is not this format is kCorruption naming the file and
// the field (or byte position); a missing file is no findings.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/damage_kind.h"
#include "common/file_system.h"
#include "common/status.h"
#include "log/topic_partition.h"

namespace daruma {

inline constexpr char kScrubFindingsFileName[] = "daruma-scrub-findings.json";

// A damaged range of one segment, as the segment scan reports it.
struct ScrubDamage {
  int64_t position = 0;
  int64_t end_position = 0;
  int64_t first_offset = 0;
  int64_t end_offset = 0;
  DamageKind kind = DamageKind::kBadCrc;  // common/damage_kind.h
  std::string what;  // names the file, the byte position, the field, expected and found

  bool operator==(const ScrubDamage&) const = default;
};

struct ScrubFinding {
  TopicPartition tp;
  int64_t segment_base = 0;
  std::string file;  // the segment's `.log`, relative to the log dir
  ScrubDamage damage;
  int64_t found_ms = 0;
  int64_t segment_size = -1;         // -1: unknown
  int64_t segment_modified_ms = -1;  // -1: unknown

  bool operator==(const ScrubFinding&) const = default;
};

struct ScrubFindingsFile {
  std::optional<int64_t> last_pass_completed_ms;
  std::vector<ScrubFinding> findings;

  bool operator==(const ScrubFindingsFile&) const = default;
};

// The findings of `log_dir` (empty when it has no findings file).
Result<ScrubFindingsFile> ReadScrubFindings(FileSystem* fs, const std::string& log_dir);

// Replaces the findings file of `log_dir`, durably (see above).
Status WriteScrubFindings(FileSystem* fs, const std::string& log_dir,
                          const ScrubFindingsFile& findings);

// For `daruma repair` once it has rewritten or dropped a segment: removes the
// findings of `tp` (of its segment `segment_base` only, when given) from the
// file, durably; nothing is written when none matches. (A broker also stops
// applying a finding to a segment file rewritten since, by its size and
// modification time, and drops it at its next pass.)
Status RemoveScrubFindings(FileSystem* fs, const std::string& log_dir, const TopicPartition& tp,
                           std::optional<int64_t> segment_base = std::nullopt);

// The file's bytes, and their parse (for tests and tools reading a copy).
std::string EncodeScrubFindings(const ScrubFindingsFile& findings);
// One finding as the file stores it (the broker's /health shows the same).
nlohmann::json ScrubFindingToJson(const ScrubFinding& finding);
Result<ScrubFindingsFile> DecodeScrubFindings(const std::string& path, std::string_view bytes);

}  // namespace daruma
