// Offset-overflow split, steps 1-3 (spec §10.5; Kafka's
// LogLoader.splitSegmentOnOffsetOverflow, bug KAFKA-6264).
//
// Brokers before 2.0 could write a segment holding offsets above
// base + 2^31-1, which an offset index cannot address. Such a segment S is
// copied, byte for byte and in file order, into new segments that each
// satisfy the relative-offset rule:
//  1. S must actually overflow: its next offset - 1 is not representable
//     relative to its base (else kInvalidArgument: e.g. an offset below the
//     base cannot be fixed by splitting).
//  2. From position 0: the first batch at the current position names a new
//     segment `<its base offset>.log.cleaned` (stale `.cleaned` files of that
//     name removed first); consecutive batches are appended to it while their
//     last offset fits its relative range, in chunks of less than 1 MiB (or a
//     single larger batch), each chunk one LogSegment::Append, so the indexes
//     are those of normal appends. Copying zero bytes is an error.
//  3. Each new segment is finalised (final time-index entry, indexes and log
//     trimmed), flushed, and given S's mtime; their sizes must add up to S's.
// On error every new segment is closed and its files are removed.
//
// The caller swaps the result in (step 4: `.cleaned` -> `.swap` in descending
// base order, S -> `.deleted`, `.swap` -> final names, directory fsync).
// No transaction-index entries are copied (Kafka's split copies none either:
// recovery at or after the recovery point rebuilds them).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/damage_kind.h"
#include "common/file_system.h"
#include "common/status.h"
#include "log/log_config.h"
#include "log/log_segment.h"

namespace daruma {

// Where a split of `segment` would have to copy bytes that no recovery keeps:
// the first entry (in file order) that fails Kafka's ensureValid, whose
// offsets leave no next offset below 2^63, whose first offset cannot be read
// (a legacy wrapper that does not decompress), or where the file stops
// holding whole entries (torn tail, bad size, zeros). Kafka's split copies
// such bytes regardless and fails on the last three; recovery of the split
// segments would cut every byte from there on. nullopt if there is none.
struct UnsplittableTail {
  int64_t position = 0;
  DamageKind kind = DamageKind::kBadCrc;
  std::string reason;
  // Before `position`, a whole valid entry follows the first one that does
  // not fit the segment's relative range, with offsets above it: the overflow
  // is corroborated, as in a real pre-2.0 segment. A lone overflowing entry
  // right before damage may instead be one damaged baseOffset (bit 32
  // flipped); a split would keep it at offsets it never had.
  bool overflow_corroborated = false;
};
Result<std::optional<UnsplittableTail>> FindUnsplittableTail(const LogSegment& segment);

Result<std::vector<std::unique_ptr<LogSegment>>> SplitOverflowedSegment(FileSystem* fs,
                                                                        LogSegment* segment,
                                                                        const LogConfig& config,
                                                                        Clock* clock);

}  // namespace daruma
