// ProducerAppendInfo: validates and records the batches one producer appends,
// on a private copy of that producer's state, before the result is committed
// to the ProducerStateManager (spec §10.6; Kafka's class of the same name).
//
// Validation depends on where the append comes from:
//   * kReplication (followers, log recovery, rebuild): nothing is rejected
//     except non-transactional data while the producer has an open transaction
//     (INVALID_TXN_STATE, which aborts a log load). Epoch and coordinator-epoch
//     regressions are accepted.
//   * kCoordinator (transaction markers, offset commits): epoch and
//     coordinator-epoch regressions are rejected, sequences are not checked.
//   * kClient (produce requests on the leader): additionally sequence numbers
//     must continue the producer's last batch.
// Duplicate detection (a retried batch matching a cached one) is done by the
// caller before appending, with ProducerStateEntry::FindDuplicateBatch.
//
// A rejected batch leaves the copy unchanged. Rejections return Status code
// kInvalidTxnState ("producer state forbids the operation") whose message starts
// with Kafka's error name and whose detail is the ProducerAppendError
// (ProducerAppendErrorOf reads it back); rejection() gives the same kind.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "log/producer_state_entry.h"
#include "record/control_record.h"
#include "record/record_batch.h"

namespace daruma {

enum class AppendOrigin { kReplication, kCoordinator, kClient };

// A transaction closed by a COMMIT/ABORT marker at `last_offset`.
struct CompletedTxn {
  int64_t producer_id = -1;
  int64_t first_offset = -1;
  int64_t last_offset = -1;  // the marker's offset
  bool is_aborted = false;
  bool operator==(const CompletedTxn&) const = default;
};

// An open (or completed but unreplicated) transaction on the partition.
struct TxnMetadata {
  int64_t producer_id = -1;
  int64_t first_offset = -1;
  std::optional<int64_t> last_offset;  // set once a marker completed it
  bool operator==(const TxnMetadata&) const = default;
};

// Kafka error a leader returns for a rejected append. The values are the
// Status detail of a rejection (never 0, which means "no detail").
enum class ProducerAppendError {
  kInvalidProducerEpoch = 1,     // INVALID_PRODUCER_EPOCH: epoch below the known one
  kOutOfOrderSequence,           // OUT_OF_ORDER_SEQUENCE_NUMBER
  kInvalidTxnState,              // INVALID_TXN_STATE: plain data inside an open transaction
  kTransactionCoordinatorFenced  // TRANSACTION_COORDINATOR_FENCED: older coordinator epoch
};
const char* ProducerAppendErrorName(ProducerAppendError error);
// The producer rejection a Status carries (from any append of the log layer,
// with context added or not), or nullopt for every other status.
std::optional<ProducerAppendError> ProducerAppendErrorOf(const Status& status);

// What a replicated Append of the control batch `batch` does: nothing for an
// emptied control batch (the cleaner's: no transaction is closed), complete
// the producer's transaction for a COMMIT or ABORT marker, or fail for a
// record it cannot read as one (kUnreadable). That failure is the only way a
// replicated append fails other than INVALID_TXN_STATE.
enum class ControlBatchEffect { kUnreadable, kNone, kCommit, kAbort };
ControlBatchEffect EffectOfControlBatch(const RecordBatchView& batch);

class ProducerAppendInfo {
 public:
  ProducerAppendInfo(std::string partition, int64_t producer_id,
                     const ProducerStateEntry& current_entry, AppendOrigin origin);

  // Appends one batch of this producer: a control batch is read as an
  // end-transaction marker (an empty one is ignored), anything else as data.
  // Returns the transaction the marker completed, if it had one open.
  // A malformed marker record is kInvalidRecord.
  Result<std::optional<CompletedTxn>> Append(const RecordBatchView& batch);

  Status AppendDataBatch(int16_t epoch, int32_t first_seq, int32_t last_seq, int64_t max_timestamp,
                         int64_t first_offset, int64_t last_offset, bool is_transactional);
  Result<std::optional<CompletedTxn>> AppendEndTxnMarker(const EndTxnMarker& marker, int16_t epoch,
                                                         int64_t offset, int64_t timestamp);

  int64_t producer_id() const { return producer_id_; }
  const ProducerStateEntry& updated_entry() const { return updated_; }
  const std::vector<TxnMetadata>& started_transactions() const { return started_; }
  // The kind of the last rejection, if an append was rejected.
  std::optional<ProducerAppendError> rejection() const { return rejection_; }

 private:
  Status Reject(ProducerAppendError error, const std::string& detail);
  Status CheckProducerEpoch(int16_t epoch, int64_t offset);
  Status CheckSequence(int16_t epoch, int32_t first_seq, int64_t offset) const;
  std::string Where(int64_t offset) const;

  std::string partition_;
  int64_t producer_id_;
  ProducerStateEntry current_;  // state before this append info's batches
  ProducerStateEntry updated_;
  AppendOrigin origin_;
  std::vector<TxnMetadata> started_;
  std::optional<ProducerAppendError> rejection_;
};

}  // namespace daruma
