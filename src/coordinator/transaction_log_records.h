// The records of `__transaction_state`, byte for byte as Kafka's transaction
// coordinator writes and reads them (Kafka's TransactionLogKey and
// TransactionLogValue message definitions), so Kafka's own tools and
// `daruma dump --transaction-log-decoder` read what Daruma writes, and
// Daruma loads what a Kafka broker left.
//
// Key: int16 version (0), transactionalId STRING.
// Value: int16 version, then producerId INT64, producerEpoch INT16,
// transactionTimeoutMs INT32, transactionStatus INT8, transactionPartitions
// [topic STRING, partitionIds [INT32]] (nullable), lastUpdateTimestampMs
// INT64, startTimestampMs INT64; version 1 is flexible (compact strings and
// arrays, tagged fields: previous/next producer id, client transaction
// version). A null value is a tombstone: the transactional id expired.
//
// Writing follows Kafka 3.x without transaction version 2: value version 0,
// partitions null in Empty, grouped by topic otherwise.
#pragma once

#include <cstdint>
#include <string>

#include "common/bytes.h"
#include "common/status.h"
#include "coordinator/transaction_metadata.h"

namespace daruma {

Bytes EncodeTransactionLogKey(const std::string& transactional_id);
Bytes EncodeTransactionLogValue(const TransactionMetadata& txn);

// The transactional id of a key; kCorruption naming the field and byte
// position when the bytes do not parse, kUnsupported for a key version
// other than 0 (Kafka's loader skips such a record).
Result<std::string> DecodeTransactionLogKey(ByteSpan key);
// The metadata of a value (transactional_id left empty); kCorruption when it
// does not parse, has bytes left over or names an unknown state.
Result<TransactionMetadata> DecodeTransactionLogValue(ByteSpan value);

}  // namespace daruma
