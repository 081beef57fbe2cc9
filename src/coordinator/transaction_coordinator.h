// TransactionCoordinator: Kafka's transaction coordinator on one node
// (Kafka's TransactionCoordinator + TransactionStateManager +
// TransactionMarkerChannelManager): transactional producer ids and epochs
// (InitProducerId with a transactional id), the partitions of each
// transaction (AddPartitionsToTxn, AddOffsetsToTxn), commit and abort
// (EndTxn) with their markers written to every partition, timeouts, expiry
// of idle transactional ids, and the verification a transactional write
// needs (Kafka's KIP-890 part 1). State lives in `__transaction_state`
// (transaction_log_records.h) through a GroupStorage.
//
// Durability contract: a transition is answered only after its record was
// appended to `__transaction_state` (as durable as that topic's flush
// settings ask); the in-memory metadata changes only then. EndTxn writes
// PrepareCommit/PrepareAbort first, then every marker, then
// CompleteCommit/CompleteAbort; a crash anywhere in between leaves
// PrepareCommit/PrepareAbort (or Ongoing) in the log, and Load finishes the
// markers before it answers anything, so a transaction is all or nothing for
// read_committed readers. An Ongoing transaction found by Load is aborted
// once its timeout has passed, so no partition's last stable offset stays
// behind for longer than that after a restart.
//
// Threading: each transactional id has its own mutex, held for the whole of
// a transition (its log append and its markers) and while a verified
// transactional write is appended (WithOngoingTransaction), so no write of a
// transaction can land after its marker. `mu_` guards only the map of ids
// and is never held while an id's mutex is taken. Lock order: an id's mutex,
// then the logs (and the group coordinator, for markers in
// `__consumer_offsets`).
//
// Before Load() has finished every API answers COORDINATOR_LOAD_IN_PROGRESS.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/scheduler.h"
#include "common/status.h"
#include "coordinator/group_storage.h"
#include "coordinator/transaction_metadata.h"
#include "protocol/error_codes.h"

namespace daruma {

// The `transaction.*` broker settings, with Kafka's defaults.
struct TransactionCoordinatorConfig {
  int32_t max_timeout_ms = 900000;    // transaction.max.timeout.ms
  int32_t state_log_partitions = 50;  // transaction.state.log.num.partitions
  // transaction.abort.timed.out.transaction.cleanup.interval.ms
  int64_t abort_check_interval_ms = 10000;
  int64_t id_expiration_ms = 7LL * 24 * 3600 * 1000;  // transactional.id.expiration.ms
  // transaction.remove.expired.transaction.cleanup.interval.ms
  int64_t id_expiration_check_interval_ms = 3600000;
};

// Writes the COMMIT or ABORT marker of a transaction to one partition
// (Kafka's WriteTxnMarkers, on one node a local append).
class TxnMarkerWriter {
 public:
  virtual ~TxnMarkerWriter() = default;
  // Appends one control batch for (producer_id, producer_epoch) to `tp` and
  // makes it visible to readers. kNotFound: the partition no longer exists
  // (the marker is dropped, as Kafka drops markers of a deleted topic); any
  // other error: the coordinator retries it later.
  virtual Status WriteMarker(const TopicPartition& tp, int64_t producer_id, int16_t producer_epoch,
                             bool commit) = 0;
  // Makes the markers written to `partitions` durable (fsync). Called before
  // a transaction is recorded complete in a state log that fsyncs every
  // append: otherwise a power loss could keep "complete" and lose a marker,
  // leaving that partition's part of the transaction open while the others
  // are decided. A writer whose markers are durable once written does
  // nothing.
  virtual Status SyncMarkers(const std::set<TopicPartition>& partitions) {
    (void)partitions;
    return Status::Ok();
  }
};

struct InitProducerIdResult {
  ErrorCode error = ErrorCode::kNone;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
};

struct TransactionDescription {
  ErrorCode error = ErrorCode::kNone;
  std::string transactional_id;
  std::string state;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t timeout_ms = 0;
  int64_t start_timestamp_ms = -1;
  std::vector<TopicPartition> partitions;
};

struct TransactionListing {
  std::string transactional_id;
  int64_t producer_id = -1;
  std::string state;
};

struct TransactionListResult {
  ErrorCode error = ErrorCode::kNone;
  std::vector<std::string> unknown_state_filters;  // names that are no state
  std::vector<TransactionListing> transactions;
};

// What Load found; a record that does not parse is skipped and counted.
struct TxnLoadReport {
  int64_t records = 0;
  int64_t transactions = 0;
  int64_t skipped = 0;
  std::vector<std::string> skipped_reasons;  // the first few, naming partition and offset
  // Partitions that could not be read: their ids answer COORDINATOR_NOT_AVAILABLE.
  std::vector<std::string> failed_partitions;
  int64_t completed = 0;   // PrepareCommit/PrepareAbort finished by the load
  int64_t incomplete = 0;  // ... whose markers could not all be written yet
  int64_t ongoing = 0;     // Ongoing: aborted once their timeout passes
};

// The largest producer id any `__transaction_state` record names (current or
// previous, tombstoned ids included), -1 when none does; a partition that
// cannot be read, or a batch that fails its CRC, adds nothing and is named in
// *unread. A log a Kafka cluster wrote holds ids its controller handed out
// that no partition's producer state may show (a transactional id that never
// wrote, or whose data retention deleted): the broker's new producer ids
// start above this (ProducerIdManager::RaiseFloor), before it answers any
// InitProducerId.
int64_t MaxProducerIdInTransactionLog(GroupStorage* storage, int32_t partitions,
                                      std::vector<std::string>* unread);

class TransactionCoordinator {
 public:
  // A new producer id, each at most once (ProducerIdManager::Generate).
  using NextProducerId = std::function<Result<int64_t>()>;
  // `storage`, `markers` and `scheduler` outlive the coordinator.
  TransactionCoordinator(TransactionCoordinatorConfig config, GroupStorage* storage,
                         TxnMarkerWriter* markers, NextProducerId next_producer_id,
                         Scheduler* scheduler);
  // Waits for a periodic job in progress; later ones do nothing.
  ~TransactionCoordinator();
  TransactionCoordinator(const TransactionCoordinator&) = delete;
  TransactionCoordinator& operator=(const TransactionCoordinator&) = delete;

  // Reads every `__transaction_state` partition, finishes the transactions
  // found in PrepareCommit/PrepareAbort and schedules the abort of the
  // Ongoing ones; until it returns the APIs answer
  // COORDINATOR_LOAD_IN_PROGRESS.
  Result<TxnLoadReport> Load();
  bool loaded() const;

  const TransactionCoordinatorConfig& config() const { return config_; }
  int32_t PartitionFor(const std::string& transactional_id) const;
  // What the transaction APIs answer for `transactional_id` before looking
  // at its state: COORDINATOR_LOAD_IN_PROGRESS before Load,
  // COORDINATOR_NOT_AVAILABLE for a partition Load could not read,
  // NOT_COORDINATOR for one whose storage is unavailable now
  // (GroupStorage::CheckAvailable), else NONE.
  ErrorCode Availability(const std::string& transactional_id) const;

  // InitProducerId with a transactional id (non-empty). `expected`: the id
  // and epoch the producer has (v3+, KIP-360), if any.
  InitProducerIdResult InitProducerId(const std::string& transactional_id, int32_t timeout_ms,
                                      std::optional<std::pair<int64_t, int16_t>> expected);
  // AddPartitionsToTxn / AddOffsetsToTxn: one error for all the partitions.
  ErrorCode AddPartitions(const std::string& transactional_id, int64_t producer_id,
                          int16_t producer_epoch, const std::set<TopicPartition>& partitions);
  // AddPartitionsToTxn v4+ with VerifyOnly: an error per partition
  // (TRANSACTION_ABORTABLE for one not in the transaction), or one for all.
  std::map<TopicPartition, ErrorCode> VerifyPartitions(const std::string& transactional_id,
                                                       int64_t producer_id, int16_t producer_epoch,
                                                       const std::set<TopicPartition>& partitions);
  // EndTxn. Answered once the markers are written (or, for one that cannot
  // be written now, once the decision is durable: it is retried).
  ErrorCode EndTransaction(const std::string& transactional_id, int64_t producer_id,
                           int16_t producer_epoch, bool commit);
  // A transactional write (Produce, TxnOffsetCommit) to `tp`: runs `write`
  // with the transaction locked if (producer_id, producer_epoch) is the
  // current producer of `transactional_id`, its transaction is Ongoing and
  // contains `tp`; else returns the error and runs nothing
  // (INVALID_PRODUCER_ID_MAPPING for an unknown id or another producer,
  // INVALID_PRODUCER_EPOCH for another epoch, INVALID_TXN_STATE for a
  // partition not added or a transaction that is not Ongoing).
  ErrorCode WithOngoingTransaction(const std::string& transactional_id, int64_t producer_id,
                                   int16_t producer_epoch, const TopicPartition& tp,
                                   const std::function<void()>& write);
  TransactionDescription Describe(const std::string& transactional_id);
  // `producer_ids`, `states` empty = all; `min_duration_ms` >= 0: only
  // transactions running at least that long (ListTransactions v1).
  TransactionListResult List(const std::set<int64_t>& producer_ids,
                             const std::set<std::string>& states, int64_t min_duration_ms);

  // The broker is stopping: no job runs any more and later requests get
  // COORDINATOR_LOAD_IN_PROGRESS.
  void Shutdown();

  // (producer id, partition) of every transaction this coordinator still has
  // to end (Ongoing, PrepareCommit, PrepareAbort). A partition with an open
  // transaction of a producer not in this set has a transaction nothing will
  // ever end (a hanging transaction: data from elsewhere, or a state log
  // lost); the broker aborts those (RequestHandler::AbortHangingTransactions).
  std::set<std::pair<int64_t, TopicPartition>> OpenTransactionPartitions() const;

  size_t TransactionCount() const;
  // PrepareCommit/PrepareAbort transactions whose markers are not all written.
  size_t PendingMarkerCount() const;

 private:
  // transaction_coordinator_entry.h
  struct Entry;
  struct JobAnchor;
  struct LockedProducer;

  // The id's entry, or null; with the availability error when not served.
  std::pair<std::shared_ptr<Entry>, ErrorCode> Find(const std::string& transactional_id) const;
  // The id's entry with its mutex held when (producer_id, producer_epoch)
  // is its current producer; else the error: the coordinator's
  // availability, INVALID_PRODUCER_ID_MAPPING for an unknown id or another
  // producer, `epoch_error` for another epoch.
  LockedProducer LockProducer(const std::string& transactional_id, int64_t producer_id,
                              int16_t producer_epoch, ErrorCode epoch_error);
  // Appends `next` (or a tombstone when null) to the id's partition; OK
  // means it is stored, and then `entry.txn` becomes it. entry.mu held.
  ErrorCode Store(Entry& entry, const TransactionMetadata* next);
  // Writes every marker still missing, then CompleteCommit/CompleteAbort.
  // False when a marker or the final record could not be written (retried
  // by the periodic check). entry.mu held, the entry in Prepare*.
  bool FinishMarkers(Entry& entry);
  // Fences the producer of an Ongoing transaction and aborts it. entry.mu held.
  ErrorCode FenceAndAbort(Entry& entry);
  // The periodic check: aborts timed-out transactions, retries markers.
  void CheckTransactions();
  // The periodic expiry of idle transactional ids.
  void ExpireTransactionalIds();
  std::vector<std::shared_ptr<Entry>> Snapshot() const;
  int64_t NowMs() const;

  TransactionCoordinatorConfig config_;
  GroupStorage* storage_;
  TxnMarkerWriter* markers_;
  NextProducerId next_producer_id_;
  Scheduler* scheduler_;
  mutable std::mutex mu_;
  bool loaded_ = false;
  bool stopped_ = false;
  std::set<int32_t> failed_partitions_;
  std::map<std::string, std::shared_ptr<Entry>> txns_;
  std::shared_ptr<JobAnchor> anchor_;
};

}  // namespace daruma
