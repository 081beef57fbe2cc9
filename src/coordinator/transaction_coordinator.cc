// The request side of the transaction coordinator (Kafka's
// TransactionCoordinator.handle*); the load, the markers and the periodic
// jobs are in transaction_coordinator_jobs.cc.
#include "coordinator/transaction_coordinator.h"

#include <algorithm>

#include "coordinator/offsets_records.h"
#include "coordinator/transaction_coordinator_entry.h"
#include "coordinator/transaction_log_records.h"

namespace daruma {

TransactionCoordinator::TransactionCoordinator(TransactionCoordinatorConfig config,
                                               GroupStorage* storage, TxnMarkerWriter* markers,
                                               NextProducerId next_producer_id,
                                               Scheduler* scheduler)
    : config_(config),
      storage_(storage),
      markers_(markers),
      next_producer_id_(std::move(next_producer_id)),
      scheduler_(scheduler),
      anchor_(std::make_shared<JobAnchor>(this)) {}

TransactionCoordinator::~TransactionCoordinator() {
  std::lock_guard<std::mutex> lock(anchor_->mu);
  anchor_->coordinator = nullptr;
}

bool TransactionCoordinator::loaded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return loaded_ && !stopped_;
}

int32_t TransactionCoordinator::PartitionFor(const std::string& transactional_id) const {
  // Kafka's Utils.abs(transactionalId.hashCode) % partitions: the same rule
  // as for group ids.
  return OffsetsPartitionFor(transactional_id, config_.state_log_partitions);
}

int64_t TransactionCoordinator::NowMs() const {
  return scheduler_->clock()->NowMs();
}

std::pair<std::shared_ptr<TransactionCoordinator::Entry>, ErrorCode> TransactionCoordinator::Find(
    const std::string& transactional_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!loaded_ || stopped_) return {nullptr, ErrorCode::kCoordinatorLoadInProgress};
  const int32_t partition = PartitionFor(transactional_id);
  if (failed_partitions_.count(partition) > 0) {
    return {nullptr, ErrorCode::kCoordinatorNotAvailable};
  }
  // Its log dir went offline since Load: Kafka's coordinator resigns the
  // partition and answers NOT_COORDINATOR, so no state is served or changed
  // from a log whose writes may never reach the disk.
  if (!storage_->CheckAvailable(partition).ok()) return {nullptr, ErrorCode::kNotCoordinator};
  auto it = txns_.find(transactional_id);
  if (it == txns_.end()) return {nullptr, ErrorCode::kNone};
  return {it->second, ErrorCode::kNone};
}

ErrorCode TransactionCoordinator::Availability(const std::string& transactional_id) const {
  return Find(transactional_id).second;
}

TransactionCoordinator::LockedProducer TransactionCoordinator::LockProducer(
    const std::string& transactional_id, int64_t producer_id, int16_t producer_epoch,
    ErrorCode epoch_error) {
  LockedProducer p;
  auto [entry, error] = Find(transactional_id);
  if (error != ErrorCode::kNone || entry == nullptr) {
    p.error = error != ErrorCode::kNone ? error : ErrorCode::kInvalidProducerIdMapping;
    return p;
  }
  std::unique_lock<std::mutex> lock(entry->mu);
  if (entry->removed || entry->txn.producer_id != producer_id) {
    p.error = ErrorCode::kInvalidProducerIdMapping;
  } else if (entry->txn.producer_epoch != producer_epoch) {
    p.error = epoch_error;
  } else {
    p.entry = std::move(entry);
    p.lock = std::move(lock);
  }
  return p;
}

std::vector<std::shared_ptr<TransactionCoordinator::Entry>> TransactionCoordinator::Snapshot()
    const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Entry>> entries;
  if (!loaded_ || stopped_) return entries;
  entries.reserve(txns_.size());
  for (const auto& [id, entry] : txns_) entries.push_back(entry);
  return entries;
}

ErrorCode TransactionCoordinator::Store(Entry& entry, const TransactionMetadata* next) {
  RecordInput record;
  const Bytes key = EncodeTransactionLogKey(entry.txn.transactional_id);
  record.key = std::string(key.begin(), key.end());
  if (next != nullptr) {
    const Bytes value = EncodeTransactionLogValue(*next);
    record.value = std::string(value.begin(), value.end());
  }
  Result<int64_t> stored =
      storage_->Append(PartitionFor(entry.txn.transactional_id), {record}, std::nullopt);
  // Kafka answers a failed append to its state log with a coordinator error
  // the client retries; nothing changed in memory.
  if (!stored.ok()) return ErrorCode::kCoordinatorNotAvailable;
  if (next != nullptr) entry.txn = *next;
  return ErrorCode::kNone;
}

InitProducerIdResult TransactionCoordinator::InitProducerId(
    const std::string& transactional_id, int32_t timeout_ms,
    std::optional<std::pair<int64_t, int16_t>> expected) {
  InitProducerIdResult result;
  auto fail = [&](ErrorCode error) {
    result.error = error;
    return result;
  };
  if (transactional_id.empty()) return fail(ErrorCode::kInvalidRequest);
  if (timeout_ms <= 0 || timeout_ms > config_.max_timeout_ms) {
    return fail(ErrorCode::kInvalidTransactionTimeout);
  }
  for (;;) {
    auto [entry, error] = Find(transactional_id);
    if (error != ErrorCode::kNone) return fail(error);
    if (entry == nullptr) {
      // A new id: Kafka creates it Empty at epoch -1 with a new producer id;
      // the bump below makes that epoch 0 and stores it.
      Result<int64_t> id = next_producer_id_();
      if (!id.ok()) return fail(ErrorCode::kCoordinatorNotAvailable);
      auto created = std::make_shared<Entry>();
      created->txn.transactional_id = transactional_id;
      created->txn.producer_id = *id;
      created->txn.timeout_ms = timeout_ms;
      created->txn.last_update_timestamp_ms = NowMs();
      std::lock_guard<std::mutex> lock(mu_);
      entry = txns_.emplace(transactional_id, created).first->second;
    }
    std::lock_guard<std::mutex> lock(entry->mu);
    if (entry->removed) continue;  // expired meanwhile: look it up again
    const TransactionMetadata& txn = entry->txn;
    if (expected) {
      // Kafka's isValidProducerId: a new id, the current producer id, or the
      // previous one after a rotation whose answer was lost.
      const bool valid =
          txn.producer_epoch == -1 || expected->first == txn.producer_id ||
          (expected->first == txn.previous_producer_id && expected->second >= INT16_MAX - 1);
      if (!valid) return fail(ErrorCode::kProducerFenced);
    }
    if (entry->markers_pending) return fail(ErrorCode::kConcurrentTransactions);
    switch (txn.state) {
      case TransactionState::kPrepareCommit:
      case TransactionState::kPrepareAbort:
        return fail(ErrorCode::kConcurrentTransactions);
      case TransactionState::kOngoing: {
        // A new instance of the producer: fence the old one and abort its
        // transaction; the client retries and gets the next epoch.
        const ErrorCode fenced = FenceAndAbort(*entry);
        return fail(fenced != ErrorCode::kNone ? fenced : ErrorCode::kConcurrentTransactions);
      }
      case TransactionState::kEmpty:
      case TransactionState::kCompleteCommit:
      case TransactionState::kCompleteAbort:
        break;
      default:
        return fail(ErrorCode::kUnknownServerError);  // never stored
    }
    TransactionMetadata next;
    if (txn.IsEpochExhausted() && (!expected || expected->second == txn.producer_epoch)) {
      Result<int64_t> id = next_producer_id_();
      if (!id.ok()) return fail(ErrorCode::kCoordinatorNotAvailable);
      next = PrepareProducerIdRotation(txn, *id, timeout_ms, expected.has_value(), NowMs());
    } else {
      TransitionResult bumped = PrepareIncrementEpoch(
          txn, timeout_ms, expected ? std::optional<int16_t>(expected->second) : std::nullopt,
          NowMs());
      if (const ErrorCode* e = std::get_if<ErrorCode>(&bumped)) return fail(*e);
      next = std::get<TransactionMetadata>(std::move(bumped));
    }
    if (ErrorCode stored = Store(*entry, &next); stored != ErrorCode::kNone) return fail(stored);
    result.producer_id = entry->txn.producer_id;
    result.producer_epoch = entry->txn.producer_epoch;
    return result;
  }
}

ErrorCode TransactionCoordinator::AddPartitions(const std::string& transactional_id,
                                                int64_t producer_id, int16_t producer_epoch,
                                                const std::set<TopicPartition>& partitions) {
  if (transactional_id.empty()) return ErrorCode::kInvalidRequest;
  LockedProducer p =
      LockProducer(transactional_id, producer_id, producer_epoch, ErrorCode::kProducerFenced);
  if (p.error != ErrorCode::kNone) return p.error;
  Entry* entry = p.entry.get();
  const TransactionMetadata& txn = entry->txn;
  if (entry->markers_pending || txn.state == TransactionState::kPrepareCommit ||
      txn.state == TransactionState::kPrepareAbort) {
    return ErrorCode::kConcurrentTransactions;
  }
  if (txn.state == TransactionState::kOngoing &&
      std::includes(txn.partitions.begin(), txn.partitions.end(), partitions.begin(),
                    partitions.end())) {
    return ErrorCode::kNone;  // nothing new to store
  }
  const TransactionMetadata next = PrepareAddPartitions(txn, partitions, NowMs());
  return Store(*entry, &next);
}

std::map<TopicPartition, ErrorCode> TransactionCoordinator::VerifyPartitions(
    const std::string& transactional_id, int64_t producer_id, int16_t producer_epoch,
    const std::set<TopicPartition>& partitions) {
  auto all = [&](ErrorCode e) {
    std::map<TopicPartition, ErrorCode> out;
    for (const TopicPartition& tp : partitions) out[tp] = e;
    return out;
  };
  if (transactional_id.empty()) return all(ErrorCode::kInvalidRequest);
  LockedProducer p =
      LockProducer(transactional_id, producer_id, producer_epoch, ErrorCode::kProducerFenced);
  if (p.error != ErrorCode::kNone) return all(p.error);
  const TransactionMetadata& txn = p.entry->txn;
  if (txn.state == TransactionState::kPrepareCommit ||
      txn.state == TransactionState::kPrepareAbort) {
    return all(ErrorCode::kConcurrentTransactions);
  }
  std::map<TopicPartition, ErrorCode> out;
  for (const TopicPartition& tp : partitions) {
    out[tp] = txn.partitions.count(tp) > 0 ? ErrorCode::kNone : ErrorCode::kTransactionAbortable;
  }
  return out;
}

ErrorCode TransactionCoordinator::EndTransaction(const std::string& transactional_id,
                                                 int64_t producer_id, int16_t producer_epoch,
                                                 bool commit) {
  if (transactional_id.empty()) return ErrorCode::kInvalidRequest;
  LockedProducer p =
      LockProducer(transactional_id, producer_id, producer_epoch, ErrorCode::kProducerFenced);
  if (p.error != ErrorCode::kNone) return p.error;
  Entry* entry = p.entry.get();
  const TransactionMetadata& txn = entry->txn;
  // A retry of a request already decided is answered as Kafka answers it:
  // NONE once complete, CONCURRENT_TRANSACTIONS while the markers are being
  // written, INVALID_TXN_STATE for the opposite decision.
  switch (txn.state) {
    case TransactionState::kOngoing:
      break;
    case TransactionState::kCompleteCommit:
      return commit ? ErrorCode::kNone : ErrorCode::kInvalidTxnState;
    case TransactionState::kCompleteAbort:
      return commit ? ErrorCode::kInvalidTxnState : ErrorCode::kNone;
    case TransactionState::kPrepareCommit:
      return commit ? ErrorCode::kConcurrentTransactions : ErrorCode::kInvalidTxnState;
    case TransactionState::kPrepareAbort:
      return commit ? ErrorCode::kInvalidTxnState : ErrorCode::kConcurrentTransactions;
    default:
      return ErrorCode::kInvalidTxnState;
  }
  const TransactionMetadata next = PrepareEnd(txn, commit, NowMs());
  if (ErrorCode stored = Store(*entry, &next); stored != ErrorCode::kNone) return stored;
  // The decision is durable: the client is answered NONE even when a marker
  // cannot be written now; the periodic check writes it later, and until
  // then the id answers CONCURRENT_TRANSACTIONS.
  FinishMarkers(*entry);
  return ErrorCode::kNone;
}

ErrorCode TransactionCoordinator::WithOngoingTransaction(const std::string& transactional_id,
                                                         int64_t producer_id,
                                                         int16_t producer_epoch,
                                                         const TopicPartition& tp,
                                                         const std::function<void()>& write) {
  LockedProducer p =
      LockProducer(transactional_id, producer_id, producer_epoch, ErrorCode::kInvalidProducerEpoch);
  if (p.error != ErrorCode::kNone) return p.error;
  const TransactionMetadata& txn = p.entry->txn;
  if (txn.state != TransactionState::kOngoing || txn.partitions.count(tp) == 0) {
    return ErrorCode::kInvalidTxnState;
  }
  write();
  return ErrorCode::kNone;
}

TransactionDescription TransactionCoordinator::Describe(const std::string& transactional_id) {
  TransactionDescription d;
  d.transactional_id = transactional_id;
  if (transactional_id.empty()) {
    d.error = ErrorCode::kInvalidRequest;
    return d;
  }
  auto [entry, error] = Find(transactional_id);
  if (error != ErrorCode::kNone || entry == nullptr) {
    d.error = error != ErrorCode::kNone ? error : ErrorCode::kTransactionalIdNotFound;
    return d;
  }
  std::lock_guard<std::mutex> lock(entry->mu);
  if (entry->removed) {
    d.error = ErrorCode::kTransactionalIdNotFound;
    return d;
  }
  const TransactionMetadata& txn = entry->txn;
  d.state = TransactionStateName(txn.state);
  d.producer_id = txn.producer_id;
  d.producer_epoch = txn.producer_epoch;
  d.timeout_ms = txn.timeout_ms;
  d.start_timestamp_ms = txn.start_timestamp_ms;
  d.partitions.assign(txn.partitions.begin(), txn.partitions.end());
  return d;
}

TransactionListResult TransactionCoordinator::List(const std::set<int64_t>& producer_ids,
                                                   const std::set<std::string>& states,
                                                   int64_t min_duration_ms) {
  TransactionListResult out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!loaded_ || stopped_) {
      out.error = ErrorCode::kCoordinatorLoadInProgress;
      return out;
    }
  }
  std::set<TransactionState> wanted;
  for (const std::string& name : states) {
    bool known = false;
    for (int8_t id = 0; id < 8; ++id) {
      if (name == TransactionStateName(TransactionState(id))) {
        wanted.insert(TransactionState(id));
        known = true;
      }
    }
    if (!known) out.unknown_state_filters.push_back(name);
  }
  const int64_t now = NowMs();
  for (const std::shared_ptr<Entry>& entry : Snapshot()) {
    std::lock_guard<std::mutex> lock(entry->mu);
    const TransactionMetadata& txn = entry->txn;
    if (entry->removed || txn.state == TransactionState::kDead) continue;
    if (!producer_ids.empty() && producer_ids.count(txn.producer_id) == 0) continue;
    if (!states.empty() && wanted.count(txn.state) == 0) continue;
    if (min_duration_ms >= 0 && now - txn.start_timestamp_ms < min_duration_ms) continue;
    out.transactions.push_back(
        {txn.transactional_id, txn.producer_id, TransactionStateName(txn.state)});
  }
  return out;
}

void TransactionCoordinator::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
}

size_t TransactionCoordinator::TransactionCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return txns_.size();
}

}  // namespace daruma
