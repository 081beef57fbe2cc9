// The transaction coordinator's load of `__transaction_state`, its markers
// and its periodic jobs (Kafka's TransactionStateManager loading and expiry,
// TransactionMarkerChannelManager, and abortTimedOutTransactions).
#include <fmt/format.h>

#include <algorithm>

#include "coordinator/transaction_coordinator.h"
#include "coordinator/transaction_coordinator_entry.h"
#include "coordinator/transaction_log_records.h"
#include "record/record_batch.h"

namespace daruma {
namespace {

constexpr size_t kMaxReportedTxnSkips = 20;

bool IsPrepare(TransactionState state) {
  return state == TransactionState::kPrepareCommit || state == TransactionState::kPrepareAbort;
}

}  // namespace

int64_t MaxProducerIdInTransactionLog(GroupStorage* storage, int32_t partitions,
                                      std::vector<std::string>* unread) {
  int64_t max = -1;
  for (int32_t partition = 0; partition < partitions; ++partition) {
    Status read = storage->ReadBatches(partition, [&](const RecordBatchView& batch) -> Status {
      if (batch.magic() != 2 || batch.is_control()) return Status::Ok();
      if (!batch.crc_valid()) {
        unread->push_back(fmt::format("__transaction_state-{} offset {}: batch CRC mismatch",
                                      partition, batch.base_offset()));
        return Status::Ok();
      }
      Result<std::vector<Record>> records = batch.DecodeRecords();
      if (!records.ok()) return Status::Ok();  // Load reports it
      for (const Record& r : *records) {
        if (!r.value) continue;
        Result<TransactionMetadata> txn = DecodeTransactionLogValue(AsBytes(*r.value));
        if (txn.ok()) max = std::max({max, txn->producer_id, txn->previous_producer_id});
      }
      return Status::Ok();
    });
    if (!read.ok()) {
      unread->push_back(fmt::format("__transaction_state-{}: {}", partition, read.ToString()));
    }
  }
  return max;
}

Result<TxnLoadReport> TransactionCoordinator::Load() {
  TxnLoadReport report;
  auto skip = [&](int32_t partition, int64_t offset, const std::string& why) {
    ++report.skipped;
    if (report.skipped_reasons.size() < kMaxReportedTxnSkips) {
      report.skipped_reasons.push_back(
          fmt::format("__transaction_state-{} offset {}: {}", partition, offset, why));
    }
  };
  std::map<std::string, TransactionMetadata> found;
  std::set<int32_t> failed;
  for (int32_t partition = 0; partition < config_.state_log_partitions; ++partition) {
    // Merged only if the whole partition was read: every id lives in one.
    std::map<std::string, std::optional<TransactionMetadata>> latest;
    Status read = storage_->ReadBatches(partition, [&](const RecordBatchView& batch) -> Status {
      if (batch.magic() != 2) {
        skip(partition, batch.base_offset(), "a legacy (magic 0/1) message is not replayed");
        return Status::Ok();
      }
      // Below the recovery point nothing re-checked these bytes since they
      // were written; a damaged batch is skipped, not trusted.
      if (!batch.crc_valid()) {
        skip(partition, batch.base_offset(), "batch CRC mismatch");
        return Status::Ok();
      }
      if (batch.is_control()) return Status::Ok();
      Result<std::vector<Record>> records = batch.DecodeRecords();
      if (!records.ok()) {
        skip(partition, batch.base_offset(), records.status().ToString());
        return Status::Ok();
      }
      for (const Record& r : *records) {
        ++report.records;
        if (!r.key) {
          skip(partition, r.offset, "a record without a key");
          continue;
        }
        Result<std::string> id = DecodeTransactionLogKey(AsBytes(*r.key));
        if (!id.ok()) {
          // Kafka skips a key version it does not know; anything else is damage.
          if (id.status().code() != StatusCode::kUnsupported) {
            skip(partition, r.offset, id.status().ToString());
          }
          continue;
        }
        if (!r.value) {
          latest[*id] = std::nullopt;
          continue;
        }
        Result<TransactionMetadata> txn = DecodeTransactionLogValue(AsBytes(*r.value));
        if (!txn.ok()) {
          skip(partition, r.offset, txn.status().ToString());
          continue;
        }
        txn->transactional_id = *id;
        latest[*id] = std::move(*txn);
      }
      return Status::Ok();
    });
    if (!read.ok()) {
      failed.insert(partition);
      report.failed_partitions.push_back(
          fmt::format("__transaction_state-{}: {}", partition, read.ToString()));
      continue;
    }
    for (auto& [id, txn] : latest) {
      if (txn) found[id] = std::move(*txn);
    }
  }

  std::vector<std::shared_ptr<Entry>> to_finish;
  std::vector<int64_t> deadlines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failed_partitions_ = failed;
    for (auto& [id, txn] : found) {
      auto entry = std::make_shared<Entry>();
      entry->txn = std::move(txn);
      if (IsPrepare(entry->txn.state)) to_finish.push_back(entry);
      if (entry->txn.state == TransactionState::kOngoing) {
        ++report.ongoing;
        deadlines.push_back(entry->txn.start_timestamp_ms + entry->txn.timeout_ms);
      }
      txns_[id] = std::move(entry);
    }
    report.transactions = int64_t(txns_.size());
  }
  // A decision found without all its markers (a crash between EndTxn's
  // records) is finished before anything is answered, so no reader waits on
  // it and no producer sees the id half done.
  for (const std::shared_ptr<Entry>& entry : to_finish) {
    std::lock_guard<std::mutex> lock(entry->mu);
    if (FinishMarkers(*entry)) {
      ++report.completed;
    } else {
      ++report.incomplete;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    loaded_ = true;
  }
  auto run = [anchor = std::weak_ptr<JobAnchor>(anchor_)](void (TransactionCoordinator::*job)()) {
    std::shared_ptr<JobAnchor> a = anchor.lock();
    if (a == nullptr) return;
    std::lock_guard<std::mutex> lock(a->mu);
    if (a->coordinator != nullptr) (a->coordinator->*job)();
  };
  scheduler_->SchedulePeriodic("transaction-abort-check", config_.abort_check_interval_ms,
                               config_.abort_check_interval_ms,
                               [run] { run(&TransactionCoordinator::CheckTransactions); });
  scheduler_->SchedulePeriodic("transactional-id-expiration",
                               config_.id_expiration_check_interval_ms,
                               config_.id_expiration_check_interval_ms,
                               [run] { run(&TransactionCoordinator::ExpireTransactionalIds); });
  // An Ongoing transaction left by a crash is aborted as soon as its timeout
  // passes, not up to a check interval later: that bounds how long a
  // partition's last stable offset stays behind after a restart.
  const int64_t now = NowMs();
  for (int64_t deadline : deadlines) {
    scheduler_->ScheduleOnce("transaction-timeout", std::max<int64_t>(0, deadline - now),
                             [run] { run(&TransactionCoordinator::CheckTransactions); });
  }
  return report;
}

bool TransactionCoordinator::FinishMarkers(Entry& entry) {
  const TransactionMetadata& txn = entry.txn;
  const bool commit = txn.state == TransactionState::kPrepareCommit;
  for (const TopicPartition& tp : txn.partitions) {
    if (entry.marked.count(tp) > 0) continue;
    Status s = markers_->WriteMarker(tp, txn.producer_id, txn.producer_epoch, commit);
    // A partition deleted since it joined the transaction has nothing to
    // mark (Kafka drops such markers too).
    if (!s.ok() && s.code() != StatusCode::kNotFound) {
      entry.markers_pending = true;
      return false;
    }
    entry.marked.insert(tp);
  }
  // As durable as the record that will say they are all written.
  if (storage_->SyncsEveryAppend(PartitionFor(txn.transactional_id)) &&
      !markers_->SyncMarkers(txn.partitions).ok()) {
    entry.markers_pending = true;
    return false;
  }
  const TransactionMetadata next = PrepareComplete(txn, NowMs());
  if (Store(entry, &next) != ErrorCode::kNone) {
    entry.markers_pending = true;
    return false;
  }
  entry.marked.clear();
  entry.markers_pending = false;
  return true;
}

ErrorCode TransactionCoordinator::FenceAndAbort(Entry& entry) {
  const TransactionMetadata next = PrepareFenceAndAbort(entry.txn, NowMs());
  if (ErrorCode stored = Store(entry, &next); stored != ErrorCode::kNone) return stored;
  FinishMarkers(entry);
  return ErrorCode::kNone;
}

void TransactionCoordinator::CheckTransactions() {
  const int64_t now = NowMs();
  for (const std::shared_ptr<Entry>& entry : Snapshot()) {
    std::lock_guard<std::mutex> lock(entry->mu);
    if (entry->removed) continue;
    if (IsPrepare(entry->txn.state)) {
      if (entry->markers_pending) FinishMarkers(*entry);
    } else if (entry->txn.TimedOut(now)) {
      FenceAndAbort(*entry);
    }
  }
}

void TransactionCoordinator::ExpireTransactionalIds() {
  const int64_t now = NowMs();
  for (const std::shared_ptr<Entry>& entry : Snapshot()) {
    std::lock_guard<std::mutex> lock(entry->mu);
    const TransactionMetadata& txn = entry->txn;
    const bool idle = txn.state == TransactionState::kEmpty ||
                      txn.state == TransactionState::kCompleteCommit ||
                      txn.state == TransactionState::kCompleteAbort;
    if (entry->removed || !idle || txn.last_update_timestamp_ms + config_.id_expiration_ms > now) {
      continue;
    }
    if (Store(*entry, nullptr) != ErrorCode::kNone) continue;  // tried again next time
    entry->removed = true;
    std::lock_guard<std::mutex> map_lock(mu_);
    auto it = txns_.find(txn.transactional_id);
    if (it != txns_.end() && it->second == entry) txns_.erase(it);
  }
}

std::set<std::pair<int64_t, TopicPartition>> TransactionCoordinator::OpenTransactionPartitions()
    const {
  std::set<std::pair<int64_t, TopicPartition>> open;
  for (const std::shared_ptr<Entry>& entry : Snapshot()) {
    std::lock_guard<std::mutex> lock(entry->mu);
    const TransactionMetadata& txn = entry->txn;
    if (entry->removed || (txn.state != TransactionState::kOngoing && !IsPrepare(txn.state))) {
      continue;
    }
    for (const TopicPartition& tp : txn.partitions) open.emplace(txn.producer_id, tp);
  }
  return open;
}

size_t TransactionCoordinator::PendingMarkerCount() const {
  size_t pending = 0;
  for (const std::shared_ptr<Entry>& entry : Snapshot()) {
    std::lock_guard<std::mutex> lock(entry->mu);
    if (entry->markers_pending) ++pending;
  }
  return pending;
}

}  // namespace daruma
