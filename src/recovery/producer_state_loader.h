// Rebuilding producer state from a partition's segments (spec §10.6 "Rebuild
// up to lastOffset"; Kafka's UnifiedLog.rebuildProducerState).
//
// Algorithm:
//  1. offsetsToSnapshot = {base of the second-to-last segment, base of the
//     last segment, last_offset}.
//  2. Upgrade shortcut: no snapshot file at all and reload_from_clean_shutdown
//     -> for each of those offsets set the map end offset and write an (empty)
//     snapshot; nothing is scanned. (Pre-v2 message formats, the other trigger
//     in Kafka, cannot be configured in Daruma.)
//  3. Otherwise TruncateAndReload(log_start, last_offset); if last_offset is
//     still past the map end offset (and the manager was not already empty
//     and at/after last_offset), read every segment overlapping
//     [map end, last_offset) from max(base, map end, log start) up to the
//     batch holding last_offset, applying each batch with a producer id
//     (replication semantics, no sequence checks, no .txnindex writes) and
//     snapshotting at segment bases in offsetsToSnapshot.
//  4. Map end offset = last_offset, then a snapshot (written only if past the
//     last snapshot offset).
#pragma once

#include <cstdint>

#include "common/status.h"
#include "log/log.h"
#include "log/producer_state_manager.h"

namespace daruma {

struct ProducerStateRebuild {
  int64_t log_start_offset = 0;
  int64_t last_offset = 0;
  bool reload_from_clean_shutdown = false;
  int64_t now_ms = 0;  // for producer expiry while loading a snapshot
};

// Rebuilds `psm` from `segments` (all or only those loaded so far). Adds the
// bytes it read to *scanned_bytes (may be null). Errors: I/O, corruption of a
// batch header on the way (Kafka aborts the load there too), and the
// producer-state errors of ApplyBatch (kInvalidTxnState aborts the load).
Status RebuildProducerState(ProducerStateManager* psm, const SegmentMap& segments,
                            const ProducerStateRebuild& params, int64_t* scanned_bytes);

}  // namespace daruma
