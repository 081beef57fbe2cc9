// Batch order: the check of the batch header fields that no CRC covers.
//
// A v2 batch's CRC covers attributes onwards; baseOffset, batchLength,
// partitionLeaderEpoch and magic are outside it (spec §3). A flipped
// batchLength or magic breaks the framing or the CRC, which recovery detects.
// A flipped baseOffset or partitionLeaderEpoch leaves a batch that passes
// every per-batch check, and Kafka's recovery keeps it. It shows only against
// the batches around it, because in a valid log, in segment order:
//  * offsets strictly increase: every batch's baseOffset is above the last
//    offset of every earlier batch, and not below its segment's base offset
//    (the file name);
//  * leader epochs never decrease (batches without an epoch, < 0, are
//    skipped).
// When a batch breaks an order, the culprit is either that batch (a field
// flipped down) or the earliest earlier batch that is above it (a field
// flipped up); the check cannot tell which, so the suspect range starts at
// the earlier one. FindBatchOrderCut returns the earliest suspect batch over
// all violations: everything from it on is what `daruma repair` cuts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/damage_kind.h"

namespace daruma {

// One valid batch as the checks need it.
struct CheckedBatch {
  int64_t position = 0;
  int64_t base_offset = 0;
  int64_t last_offset = 0;
  int64_t max_timestamp_so_far = 0;  // over this and every earlier batch of the segment
  int32_t leader_epoch = -1;
};

struct CheckedSegment {
  int64_t base_offset = 0;  // from the file name
  std::vector<CheckedBatch> batches;
};

struct BatchOrderCut {
  size_t segment = 0;  // index into the segments given
  size_t batch = 0;    // index into that segment's batches
  DamageKind kind = DamageKind::kNonMonotonicOffset;
  // Why, naming the violating batch ("expected ..., found ...").
  std::string what;
};

// `segments` in offset order; nullopt when both orders hold.
std::optional<BatchOrderCut> FindBatchOrderCut(const std::vector<CheckedSegment>& segments);

}  // namespace daruma
