// TransactionMetadata: the state of one transactional id (Kafka's
// TransactionMetadata), and the transitions Kafka's transaction coordinator
// allows, as pure functions that return the next metadata or the error the
// client gets. The coordinator (transaction_coordinator.h) stores the result
// in `__transaction_state` before it becomes the current metadata.
//
//   Empty ──AddPartitions──▶ Ongoing ──EndTxn──▶ PrepareCommit ─markers─▶ CompleteCommit
//     ▲                        │ │                PrepareAbort  ─markers─▶ CompleteAbort
//     └──InitProducerId────────┘ └─timeout / InitProducerId (epoch fence)─▶ PrepareAbort
//
// Invariants: `partitions` is empty in Empty, CompleteCommit and
// CompleteAbort (Kafka writes them as null or clears them); the epoch only
// grows for a producer id; a new producer id (epoch exhausted) starts at 0.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <variant>

#include "log/topic_partition.h"
#include "protocol/error_codes.h"

namespace daruma {

// Kafka's TransactionState ids, as stored in TransactionLogValue.
enum class TransactionState : int8_t {
  kEmpty = 0,
  kOngoing = 1,
  kPrepareCommit = 2,
  kPrepareAbort = 3,
  kCompleteCommit = 4,
  kCompleteAbort = 5,
  kDead = 6,
  kPrepareEpochFence = 7,
};

// "Empty", "Ongoing", ... (Kafka's names, as DescribeTransactions and
// ListTransactions report them); nullptr for an id outside 0..7.
const char* TransactionStateName(TransactionState state);
std::optional<TransactionState> TransactionStateFromId(int8_t id);

struct TransactionMetadata {
  std::string transactional_id;
  int64_t producer_id = -1;
  int64_t previous_producer_id = -1;  // set by a producer id rotation
  int16_t producer_epoch = -1;
  // The epoch before the last bump, so a producer retrying an
  // InitProducerId whose answer it lost gets the same epoch again (KIP-360).
  int16_t last_producer_epoch = -1;
  int32_t timeout_ms = 0;
  TransactionState state = TransactionState::kEmpty;
  std::set<TopicPartition> partitions;
  int64_t start_timestamp_ms = -1;  // when the ongoing transaction began
  int64_t last_update_timestamp_ms = -1;

  bool IsEpochExhausted() const { return producer_epoch >= INT16_MAX - 1; }
  // Ongoing and past its timeout at `now_ms` (the coordinator aborts it).
  bool TimedOut(int64_t now_ms) const {
    return state == TransactionState::kOngoing && start_timestamp_ms + timeout_ms <= now_ms;
  }
};

// The next metadata, or the error code the request gets instead.
using TransitionResult = std::variant<TransactionMetadata, ErrorCode>;

// InitProducerId on an id in Empty, CompleteCommit or CompleteAbort (Kafka's
// prepareIncrementProducerEpoch): epoch + 1, Empty, no partitions. With an
// expected epoch (v3+): the current epoch bumps; the last one (a retry)
// returns the current epoch unchanged; any other is PRODUCER_FENCED.
TransitionResult PrepareIncrementEpoch(const TransactionMetadata& txn, int32_t timeout_ms,
                                       std::optional<int16_t> expected_epoch, int64_t now_ms);
// The same when the epoch is exhausted: a new producer id at epoch 0.
TransactionMetadata PrepareProducerIdRotation(const TransactionMetadata& txn,
                                              int64_t new_producer_id, int32_t timeout_ms,
                                              bool record_last_epoch, int64_t now_ms);
// Fences the current producer of an Ongoing transaction before aborting it
// (InitProducerId from a new instance, or the transaction timed out): the
// epoch is bumped and the result is PrepareAbort with it.
TransactionMetadata PrepareFenceAndAbort(const TransactionMetadata& txn, int64_t now_ms);
// Ongoing with `added` included; a new transaction (from Empty or Complete*)
// starts now.
TransactionMetadata PrepareAddPartitions(const TransactionMetadata& txn,
                                         const std::set<TopicPartition>& added, int64_t now_ms);
// Ongoing → PrepareCommit / PrepareAbort.
TransactionMetadata PrepareEnd(const TransactionMetadata& txn, bool commit, int64_t now_ms);
// PrepareCommit / PrepareAbort → CompleteCommit / CompleteAbort, partitions
// cleared: every marker is written.
TransactionMetadata PrepareComplete(const TransactionMetadata& txn, int64_t now_ms);

}  // namespace daruma
