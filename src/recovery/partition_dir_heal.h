// Two heals of the start-up load (issue 22, rule 2) where Kafka refuses the
// whole partition although a safe outcome exists:
//
//   * A file in the partition dir that carries a segment or snapshot suffix
//     but no offset name (`backup.log`, `old.index`, `x.snapshot`): Kafka's
//     offsetFromFile throws and the broker stops. It is not Kafka's, so the
//     load leaves it exactly as found, warns once, and goes on without it.
//     Files without such a suffix (`x.index.bak`, editor swap files) were
//     never read and stay untouched as before.
//   * An unparsable `leader-epoch-checkpoint`: the file goes to quarantine
//     and the cache is rebuilt from the partition leader epochs the batches
//     carry, which is what the checkpoint records (§10.7): every batch's
//     epoch, assigned in offset order, as recovery assigns them.
//   * After a clean shutdown Kafka trusts the active segment and reads only
//     its last entries for the log end offset: a zero-filled tail there fails
//     the load, and a garbage tail that parses as a torn entry is kept, so
//     the next append lands after it. Daruma checks those same entries end
//     exactly at the segment's end and otherwise recovers the segment as
//     after a crash (truncating into quarantine).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "log/leader_epoch_file_cache.h"
#include "log/log.h"
#include "recovery/recovery_report.h"

namespace daruma {

// True for a name with a segment or snapshot suffix (optionally followed by
// .deleted, .cleaned or .swap) whose part before the first '.' is not an
// offset.
bool IsStrayPartitionFileName(std::string_view name);

// Assigns to `cache` the leader epoch of every v2 batch of the segments with
// a base below `below_base` (all segments when nullopt), in offset order,
// where it is newer than the cache's latest (as recovery does). Reads batch
// headers only, up to the first entry that does not parse (the rest is
// recovery's business). Adds the bytes read to *scanned.
Status RebuildLeaderEpochs(const SegmentMap& segments, std::optional<int64_t> below_base,
                           LeaderEpochFileCache* cache, int64_t* scanned);

// Reads the entries of `segment` from its last offset-index entry to its
// size, as LogSegment::ReadNextOffset does for the log end offset: nullopt
// when they fail to end exactly there (a torn or zero tail, an entry too
// short for a batch header) or their offsets go back (a damaged baseOffset);
// *why then gives the kind and names the file, position and field;
// else the segment's next offset, so a clean start reads its tail once.
Result<std::optional<int64_t>> ReadNextOffsetOfWholeTail(LogSegment* segment, ReportedDamage* why);

}  // namespace daruma
