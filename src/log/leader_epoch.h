// LeaderEpochOf: the leader epoch this node leads a partition at (Kafka: the partition's
// epoch in the metadata image, which every batch the leader appends carries).
//
// One node leads every partition for good, so the epoch never has to grow:
// it is the newest epoch the partition's own leader-epoch cache knows, 0 for
// a partition without one. A partition that came from a Kafka cluster keeps
// the epoch its last leader wrote (say 3); appending at 0 there would put
// batches whose partitionLeaderEpoch goes backwards in the log, which
// recovery and `daruma check` rightly take for damage. Produce stamps it,
// Metadata reports it, and Fetch and OffsetForLeaderEpoch check a client's
// CurrentLeaderEpoch against it.
#pragma once

#include <cstdint>

#include "log/log.h"

namespace daruma {

int32_t LeaderEpochOf(const Log& log);

// The epoch of the batch holding `offset` as the cache says (Kafka's
// epochForOffset: the last epoch starting at or below it), -1 when none does.
int32_t EpochAtOffset(const Log& log, int64_t offset);

}  // namespace daruma
