// Quarantine: "nothing destroyed silently". Every byte that Kafka's log loader
// would truncate or delete (torn or corrupt tails, segments dropped after a
// corruption, .deleted/.cleaned/.swap leftovers, files replaced by an
// interrupted swap, orphan indexes, corrupt producer snapshots) is first set
// aside here, with one manifest line per range.
//
// Location: `<partition dir>/daruma-quarantine/`, a SUB-directory of the
// partition directory, not of the log directory. Why (spec §8.1, §10.3):
//  * Kafka parses every sub-directory of a log directory as a partition name
//    (only `remote-log-index-cache` and `__cluster_metadata-0` are skipped), and
//    a name that does not parse aborts broker start-up. Every name that does
//    parse is either loaded as a log, deleted (`-delete`), or needs KRaft >= 3.7
//    (`-stray`). So no directory directly under the log dir is safe.
//  * Inside a partition directory Kafka's loader only ever looks at regular
//    files (passes 1, 2 and 4 and the snapshot listing all filter on regular
//    files), so a sub-directory there is ignored by every Kafka version, and
//    it lives on the same file system as the data: moving a file aside is an
//    atomic rename, never a cross-device copy.
//  * It goes away only with the partition itself (topic deletion, replica
//    movement), i.e. when an operator removes the data on purpose.
// Daruma's own loaders skip it the same way (regular files only).
//
// Layout:
//   daruma-quarantine/MANIFEST.jsonl           one JSON object per line:
//     {"partition","file","fromPosition","bytes","firstOffset"?,"lastOffset"?,
//      "kind","reason","quarantinePath"}  (quarantinePath null: zeros, not copied;
//      kind: common/damage_kind.h, what is wrong with the range's first byte or
//      the file, "after_damage" for what follows damage)
//   daruma-quarantine/<file name>@<fromPosition>[.<n>]   the bytes themselves
//
// Durability: the copy (or moved file) and the directory are fsynced, then the
// manifest line is appended and fsynced, all before the caller destroys
// anything. A crash in between leaves an extra copy, never a lost byte.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "common/damage_kind.h"
#include "common/file_system.h"
#include "common/status.h"
#include "recovery/recovery_report.h"

namespace daruma {

inline constexpr char kQuarantineDirName[] = "daruma-quarantine";
inline constexpr char kQuarantineManifestName[] = "MANIFEST.jsonl";

class Quarantine {
 public:
  // `partition` names the partition in the manifest (e.g. "orders-7"). When
  // `enabled` is false every method is a no-op returning Ok (Kafka's plain
  // behaviour); the caller still performs the deletion or truncation.
  // `report` (may be null) receives one QuarantinedRange per range set aside.
  Quarantine(FileSystem* fs, std::string partition_dir, std::string partition, bool enabled,
             PartitionRecoveryReport* report);

  bool enabled() const { return enabled_; }
  std::string dir() const;

  // kind comes first so that no caller can leave it out.
  struct Range {
    DamageKind kind;
    std::optional<int64_t> first_offset;
    std::optional<int64_t> last_offset;
    std::string reason;
  };

  // Copies bytes [from, end) of `path` aside; the caller truncates afterwards.
  // A range of 4 KiB or more holding zero bytes only (a preallocated tail)
  // gets a manifest line and a report entry with an empty quarantine path,
  // and no copy.
  Status CopyRange(const std::string& path, int64_t from, int64_t end, const Range& range);
  // Sets aside `bytes`, the former content of `path` (which the caller has
  // already rewritten, e.g. a rebuilt .txnindex that lost entries).
  Status SaveBytes(const std::string& path, std::span<const uint8_t> bytes, const Range& range);
  // Moves the whole file `path` aside (it no longer exists afterwards). A
  // missing file is not an error and is not recorded.
  Status MoveFile(const std::string& path, const Range& range);

 private:
  Status EnsureDir();
  std::string UniqueTarget(const std::string& path, int64_t from);
  Status Record(const std::string& path, int64_t from, int64_t bytes, const Range& range,
                const std::string& target);

  FileSystem* fs_;
  std::string partition_dir_;
  std::string partition_;
  bool enabled_;
  PartitionRecoveryReport* report_;
  bool dir_ready_ = false;
};

}  // namespace daruma
