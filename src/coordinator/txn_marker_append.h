// AppendTxnMarker: one COMMIT or ABORT marker appended to a partition's log
// as the transaction coordinator's markers are (Kafka's WriteTxnMarkers on
// the partition leader), shared by the broker's marker writer and tests.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "log/log.h"

namespace daruma {

// Appends the marker as a coordinator append (the producer's epoch is
// checked, its sequence is not) with leader epoch 0 and flushes it when the
// topic flushes every message. The caller raises the high watermark. Errors
// name the marker, the producer and the partition.
Status AppendTxnMarker(Log* log, int64_t producer_id, int16_t producer_epoch, bool commit,
                       int64_t now_ms);

}  // namespace daruma
