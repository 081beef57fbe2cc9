// Produce validation: the per-partition checks of spec §5.2 steps 5–10 on the
// `Records` of one partition, before anything is appended (Kafka's
// ProduceRequest.validateRecords + LogValidator).
//
// Order and outcome (first failure wins):
//   null/empty records, not exactly one batch ........ INVALID_RECORD
//   fewer than 61 bytes, batchLength inconsistent .... CORRUPT_MESSAGE
//   magic < 2 (legacy) ............................... UNSUPPORTED_FOR_MESSAGE_FORMAT (v0–2)
//                                                      INVALID_RECORD (v3+)
//   codec 5–7, or zstd (4) below Produce v7 .......... UNSUPPORTED_COMPRESSION_TYPE
//   batch size > max.message.bytes ................... MESSAGE_TOO_LARGE
//   CRC-32C mismatch ................................. CORRUPT_MESSAGE
//   lastOffsetDelta+1 != recordsCount or count <= 0,
//   control bit, producer id without a sequence ...... INVALID_RECORD
//   LogAppendTime bit set by the producer ............ INVALID_TIMESTAMP
//   records do not parse (count, lengths, codec) ..... CORRUPT_MESSAGE
//   offset delta != record index, null key on a
//   compacted topic .................................. INVALID_RECORD
//   a CreateTime record's timestamp outside
//   [now - message.timestamp.before.max.ms,
//    now + message.timestamp.after.max.ms] ........... INVALID_TIMESTAMP
//   batch size > segment.bytes ....................... RECORD_LIST_TOO_LARGE
// The message names the field, the byte position in the record set and the
// expected and found values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/bytes.h"
#include "log/log_config.h"
#include "protocol/error_codes.h"

namespace daruma::broker {

struct ProduceCheck {
  ErrorCode error = ErrorCode::kNone;
  std::string message;
  // The record (index in the batch) a per-record rule refused: Kafka answers
  // those with record_errors (Produce v8+) and a summary error_message.
  std::optional<int32_t> record_index;
  // Accepted: the largest timestamp of the batch's records (-1 when none is
  // larger), which Kafka's LogValidator writes into the batch header's
  // maxTimestamp on a CreateTime topic, whatever the producer put there.
  int64_t max_timestamp = -1;
  bool ok() const { return error == ErrorCode::kNone; }
};

// `now_ms`: the broker's clock, for the timestamp bounds.
ProduceCheck ValidateProduceRecords(std::optional<ByteSpan> records, int16_t produce_version,
                                    const LogConfig& config, int64_t now_ms = 0);

}  // namespace daruma::broker
