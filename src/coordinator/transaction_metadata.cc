#include "coordinator/transaction_metadata.h"

namespace daruma {
namespace {

constexpr const char* kStateNames[] = {"Empty",        "Ongoing",          "PrepareCommit",
                                       "PrepareAbort", "CompleteCommit",   "CompleteAbort",
                                       "Dead",         "PrepareEpochFence"};

// The metadata with a new state and update time; everything else kept.
TransactionMetadata Next(const TransactionMetadata& txn, TransactionState state, int64_t now_ms) {
  TransactionMetadata next = txn;
  next.state = state;
  next.last_update_timestamp_ms = now_ms;
  return next;
}

}  // namespace

const char* TransactionStateName(TransactionState state) {
  const int id = int(state);
  return id >= 0 && id < 8 ? kStateNames[id] : nullptr;
}

std::optional<TransactionState> TransactionStateFromId(int8_t id) {
  if (id < 0 || id > 7) return std::nullopt;
  return TransactionState(id);
}

TransitionResult PrepareIncrementEpoch(const TransactionMetadata& txn, int32_t timeout_ms,
                                       std::optional<int16_t> expected_epoch, int64_t now_ms) {
  const int16_t bumped = int16_t(txn.producer_epoch + 1);
  int16_t epoch = bumped;
  int16_t last_epoch = -1;
  if (expected_epoch) {
    if (txn.producer_epoch == -1 || *expected_epoch == txn.producer_epoch) {
      last_epoch = txn.producer_epoch;
    } else if (*expected_epoch == txn.last_producer_epoch) {
      // A retry of the bump whose answer was lost: the same epoch again.
      epoch = txn.producer_epoch;
      last_epoch = txn.last_producer_epoch;
    } else {
      return ErrorCode::kProducerFenced;
    }
  }
  TransactionMetadata next = Next(txn, TransactionState::kEmpty, now_ms);
  next.producer_epoch = epoch;
  next.last_producer_epoch = last_epoch;
  next.timeout_ms = timeout_ms;
  next.partitions.clear();
  next.start_timestamp_ms = -1;
  return next;
}

TransactionMetadata PrepareProducerIdRotation(const TransactionMetadata& txn,
                                              int64_t new_producer_id, int32_t timeout_ms,
                                              bool record_last_epoch, int64_t now_ms) {
  TransactionMetadata next = Next(txn, TransactionState::kEmpty, now_ms);
  next.previous_producer_id = txn.producer_id;
  next.producer_id = new_producer_id;
  next.producer_epoch = 0;
  next.last_producer_epoch = record_last_epoch ? txn.producer_epoch : int16_t(-1);
  next.timeout_ms = timeout_ms;
  next.partitions.clear();
  next.start_timestamp_ms = -1;
  return next;
}

TransactionMetadata PrepareFenceAndAbort(const TransactionMetadata& txn, int64_t now_ms) {
  TransactionMetadata next = Next(txn, TransactionState::kPrepareAbort, now_ms);
  // An exhausted epoch cannot be bumped: the abort then keeps it, and the
  // next InitProducerId rotates the producer id (Kafka does the same).
  if (!txn.IsEpochExhausted()) next.producer_epoch = int16_t(txn.producer_epoch + 1);
  next.last_producer_epoch = -1;
  return next;
}

TransactionMetadata PrepareAddPartitions(const TransactionMetadata& txn,
                                         const std::set<TopicPartition>& added, int64_t now_ms) {
  TransactionMetadata next = Next(txn, TransactionState::kOngoing, now_ms);
  if (txn.state != TransactionState::kOngoing) {
    next.partitions.clear();
    next.start_timestamp_ms = now_ms;
  }
  next.partitions.insert(added.begin(), added.end());
  return next;
}

TransactionMetadata PrepareEnd(const TransactionMetadata& txn, bool commit, int64_t now_ms) {
  return Next(txn, commit ? TransactionState::kPrepareCommit : TransactionState::kPrepareAbort,
              now_ms);
}

TransactionMetadata PrepareComplete(const TransactionMetadata& txn, int64_t now_ms) {
  TransactionMetadata next =
      Next(txn,
           txn.state == TransactionState::kPrepareCommit ? TransactionState::kCompleteCommit
                                                         : TransactionState::kCompleteAbort,
           now_ms);
  next.partitions.clear();
  return next;
}

}  // namespace daruma
