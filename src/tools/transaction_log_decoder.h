// `daruma dump --transaction-log-decoder`: the key and payload text
// kafka-dump-log prints for a `__transaction_state` record
// (TransactionLog.formatRecordKeyAndValue, unchanged from 0.11 to 4.0):
//
//   key:     transaction_metadata::transactionalId=<id>
//   payload: producerId:<p>,producerEpoch:<e>,state=<State>,
//            partitions=[<topic>-<partition>,...],
//            txnLastUpdateTimestamp=<ms>,txnTimeoutMs=<ms>
//
// Key: int16 version (0), transactionalId STRING. Value: int16 version (0,
// or 1 = flexible: compact strings/arrays and tagged fields, which hold
// previous/next producer id and client transaction version and are skipped):
//   producerId INT64, producerEpoch INT16, transactionTimeoutMs INT32,
//   transactionStatus INT8, transactionPartitions [topic STRING,
//   partitionIds [INT32]]? , transactionLastUpdateTimestampMs INT64,
//   transactionStartTimestampMs INT64.
// States: 0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort,
// 4 CompleteCommit, 5 CompleteAbort, 6 Dead, 7 PrepareEpochFence. An Empty
// transaction prints "partitions=[]". Kafka collects the partitions in a hash
// set (print order unspecified); Daruma prints them in record order.
// A null value prints "<DELETE>". Where Kafka's tool dies (unknown key or
// value version, malformed bytes), Daruma prints "unknown::version=<v>" as the
// key or "Error at offset <o>, skipping. <reason>" as the payload (best
// effort; Kafka's own wording for these cases differs between versions).
#pragma once

#include "tools/dump_record_decoder.h"

namespace daruma::tools {

DecodedKeyValue DecodeTransactionLogRecord(const Record& record);

}  // namespace daruma::tools
