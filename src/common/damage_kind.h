// DamageKind: the one taxonomy of damage Daruma finds in a partition's files
// (issue 22 rule 4). The batch reader and the batch validators name the kind
// where they find it; recovery, `check`, `repair`, `repair --salvage`, the
// scrubber, the quarantine manifest and every JSON output carry it unchanged
// as "kind" beside their text, so an operator's script (or a test) can branch
// on the kind and never has to parse a message.
//
// A kind says what is wrong with the first byte of a range (or with a whole
// file), not what was done about it: a torn tail is a torn tail whether
// recovery truncated it, check reported it or salvage resynchronised after it.
// The range dropped only because it follows damage (Kafka's truncation of the
// rest of a log) is kAfterDamage; its cause is reported with its own kind.
//
// The names ("torn_tail", ...) are stable: they are written to files
// (MANIFEST.jsonl, daruma-scrub-findings.json) that later versions read back.
// Add new kinds at the end; never rename one.
//
// A Status of code kCorruption may carry a kind in its detail
// (WithDamageKind / DamageKindOf), which is how a validator deep in the
// record layer hands the kind to recovery without a message being parsed.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/status.h"

namespace daruma {

enum class DamageKind : uint8_t {
  // A `.log` entry or batch (the batch reader, the batch validators, the
  // recovery scan's order checks).
  kTornTail = 1,          // fewer bytes remain than the last entry needs (a partial write)
  kZeroTail,              // zero bytes where an entry should start (a preallocated or zeroed tail)
  kBadSize,               // a size field below the minimum, or a batch length past its bounds
  kBadCrc,                // the CRC-32C (v2) or CRC-32 (v0/v1) does not match the bytes
  kBadMagic,              // magic other than 0, 1, 2 (outside the v2 CRC)
  kBadHeader,             // a CRC-valid header with impossible values (lastOffsetDelta, epoch)
  kNonMonotonicOffset,    // a baseOffset at or below an earlier batch's offsets
  kOffsetOutsideSegment,  // offsets below the segment's base or at/above the next one's
  kOffsetOverflow,        // offsets past the segment's 2^31 relative range (Kafka splits it)
  kLeaderEpochOrder,      // a partitionLeaderEpoch below an earlier batch's
  kInvalidRecord,         // a record or control record inside a CRC-valid batch does not parse
  kZeroedRange,           // a run of zero bytes between valid batches (salvage)
  kAfterDamage,           // valid bytes dropped only because they follow damage
  kOffsetGap,             // offsets skip in a topic that is not compacted (kept, reported)
  kLostRecords,           // a producer snapshot proves records past the log end were lost
  // Whole files beside the segments.
  kMissingIndex,       // a segment without its `.index` or `.timeindex`
  kOrphanIndex,        // an index file without its `.log`
  kCorruptIndex,       // an index (offset, time, transaction) that disagrees with its log
  kCorruptSnapshot,    // a producer or KRaft snapshot that is unreadable or contradicts
  kStraySnapshot,      // a producer snapshot outside the log's offsets (Kafka deletes it)
  kCorruptCheckpoint,  // a checkpoint file that does not parse, or names impossible offsets
  kCorruptMetadata,    // meta.properties, partition.metadata or a Daruma JSON file
  kLeftoverTempFile,   // `.tmp`, `.deleted`, `.cleaned`: an interrupted write or deletion
  kInterruptedSwap,    // `.swap` files of an interrupted compaction or split
  kStrayFile,          // a file in a partition dir that is not Kafka's (left untouched)
  kStrayDir,           // a directory Kafka would delete, refuse or cannot name
  kDirConflict,        // log dirs that disagree (a partition in two, different brokers)
  kIoError,            // the bytes could not be read (EIO: a bad sector)
  kUnloadable,         // the partition cannot be loaded at all; the text says why
};

// The stable snake_case name: "torn_tail", "bad_crc", ...
const char* DamageKindName(DamageKind kind);
// The kind a name (or an earlier version's alias of it) stands for.
std::optional<DamageKind> ParseDamageKind(std::string_view name);

// `status` (a kCorruption, normally) carrying `kind` in its detail.
Status WithDamageKind(const Status& status, DamageKind kind);
// The kind a non-OK status carries, if any was set.
std::optional<DamageKind> DamageKindOf(const Status& status);
// The kind to report for a failed load, repair or check of a whole partition:
// the kind `status` carries, else kIoError for an I/O error, else kUnloadable.
DamageKind DamageKindOfFailure(const Status& status);

}  // namespace daruma
