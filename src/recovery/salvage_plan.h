// SalvagePlan: the read-only half of `daruma repair --salvage` (issue 22,
// rule 6). Kafka's recovery, and Daruma's by default, truncates a partition
// at its first untrusted batch; salvage instead keeps every trustworthy
// batch after a damaged region, leaving an offset gap (as compaction does),
// and drops only the damaged bytes. salvage_apply.h performs the plan.
//
// Algorithm, over the partition's segments in offset order, one chain of
// kept batches across all of them:
//  1. At position p of a segment, read one entry. It is trusted when it
//     passes every per-batch check: whole in the file, magic 0/1/2, length
//     >= the format's minimum, the CRC (Kafka's ensureValid), lastOffsetDelta
//     >= 0 and >= recordsCount - 1, partitionLeaderEpoch >= -1, and offsets
//     in the segment's range (>= its base offset, below the next segment's
//     base, within base + 2^31-1 as its index needs).
//  2. A trusted entry must also continue the chain: baseOffset above the
//     last kept offset, and a leader epoch (>= 0) not below the highest kept.
//     Those fields are outside the CRC, so when entry C breaks the order
//     against the last kept batch B, either C's field was flipped down or
//     B's was flipped up. B is dropped instead of C when C continues the
//     chain as it was before B and B looks like the outlier: for offsets,
//     B does not start right after the batch before it (or C does); for
//     epochs, always (a flipped-down epoch also sits below the batch before
//     B, so C would not continue that chain). B may be the last batch of an
//     earlier segment. Only one batch is taken back this way (the chain
//     before the one before B is not kept). Otherwise C is dropped, as one
//     whole entry: the framing around it is intact.
//  3. An untrusted entry starts a damaged region. Resynchronise: first at
//     the end the entry's length field claims, then byte by byte, find the
//     next position where a v2 batch passes every check of step 1 (legacy
//     v0/v1 entries are not searched for: their framing is too weak to find
//     by scanning). The region [p, that position) is dropped; the walk goes
//     on there. No such position: the region runs to the end of the segment.
//  4. A segment after the first that keeps no batch is dropped whole (its
//     file set aside; offsets of a later segment never collide with it). The
//     first segment is kept, possibly empty, so that damage with nothing
//     valid after it leaves exactly what truncation leaves.
// Offsets are never renumbered. Each dropped range is reported with its kind
// and the offset gap it leaves: (last kept offset before it, first kept
// offset after it), exclusive; at the end of the log, the gap is open (the
// range is what truncation would drop).
//
// Cost: one sequential read of every segment; the byte-by-byte search reads
// a damaged region once more and computes a CRC only where a 61-byte header
// already passes the cheap checks. Memory: one entry per run of consecutive
// kept batches and per dropped range, not per batch.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/damage_kind.h"
#include "common/file_system.h"
#include "common/status.h"

namespace daruma {

// Why a range was dropped (common/damage_kind.h): the first check its first
// byte fails. Salvage uses kTornTail, kBadSize, kBadMagic, kBadCrc,
// kBadHeader, kOffsetOutsideSegment, kNonMonotonicOffset, kLeaderEpochOrder,
// kZeroedRange and kZeroTail.

// A run of consecutive kept batches, [from, to) of the segment's `.log`.
struct KeptRun {
  int64_t from = 0;
  int64_t to = 0;
  int64_t first_offset = 0;  // base offset of the run's first batch
  int64_t last_offset = 0;   // last offset of its last batch
  int64_t batches = 0;
};

struct DroppedRange {
  int64_t from = 0;  // bytes [from, to) of the segment's `.log`
  int64_t to = 0;
  DamageKind kind = DamageKind::kBadCrc;
  // The failed check: "<file>: at byte <p>: <field>: expected ..., found ...".
  std::string what;
  // Offsets no kept batch holds around the range: (gap_first .. gap_last);
  // gap_last is nullopt when nothing is kept after it (the log ends there).
  int64_t gap_first = 0;
  std::optional<int64_t> gap_last;

  int64_t bytes() const { return to - from; }
};

struct SegmentSalvage {
  std::string path;  // the `.log`
  int64_t base_offset = 0;
  int64_t size = 0;
  std::vector<KeptRun> kept;          // in file order
  std::vector<DroppedRange> dropped;  // in file order, disjoint from `kept`
  bool drop_whole = false;            // step 4: the file is set aside

  bool changed() const { return !dropped.empty(); }
};

// An offset range no batch holds any more, [first, last].
struct OffsetGap {
  int64_t first = 0;
  int64_t last = 0;
};

struct PartitionSalvage {
  std::string dir;
  std::vector<SegmentSalvage> segments;  // every segment, in offset order
  int64_t dropped_bytes = 0;
  // Kept after the first dropped range, in log order: what salvage keeps
  // beyond what truncation would.
  int64_t kept_bytes_after_damage = 0;
  int64_t kept_batches_after_damage = 0;
  std::vector<OffsetGap> gaps;  // gaps the dropped ranges leave between kept batches
  int64_t log_end_offset = 0;   // after salvage
  // Set by the repair after its load: what the operator must still act on
  // (a transaction left open by a dropped marker).
  std::vector<std::string> warnings;

  bool changed() const { return dropped_bytes > 0; }
};

// Plans salvage of the partition in `partition_dir` (its `.log` files with
// offset names). Reads only. kIoError when a file cannot be read.
Result<PartitionSalvage> PlanSalvage(FileSystem* fs, const std::string& partition_dir);

nlohmann::json ToJson(const PartitionSalvage& s);
// One line per dropped range and one for the gaps, each indented by
// `indent`, for repair's text output.
std::string DescribeSalvage(const PartitionSalvage& s, const std::string& indent);

}  // namespace daruma
