#include "log/producer_append_info.h"

#include <limits>
#include <utility>

#include "record/record_body.h"

namespace daruma {

namespace {

bool InSequence(int32_t last_seq, int32_t next_seq) {
  return int64_t(next_seq) == int64_t(last_seq) + 1 ||
         (next_seq == 0 && last_seq == std::numeric_limits<int32_t>::max());
}

struct MarkerRecord {
  EndTxnMarker marker;
  int64_t timestamp;
};

// The marker as Kafka writes it, by its bytes: one uncompressed record of 17
// bytes after the batch header. A record of this layout passes every check of
// OnlyRecordInPlace and ParseRecordBody (length 16 and nothing after it;
// one-byte attributes, timestamp delta and offset delta; a 4-byte key and a
// 6-byte value; no headers), so only the fields' values are left to check, as
// the general path checks them. Recovery reads every marker of a segment in
// the scan: with short transactions, walking the record with ByteReader was
// a tenth of it. nullopt for any other layout, which the general path reads.
std::optional<MarkerRecord> ReadExactEndTxnMarker(const RecordBatchView& batch) {
  constexpr size_t kSize = 17;
  const ByteSpan bytes = batch.bytes();
  if (bytes.size() != batch_layout::kRecords + kSize ||
      batch.compression() != CompressionType::kNone || batch.records_count() != 1) {
    return std::nullopt;
  }
  const uint8_t* r = bytes.data() + batch_layout::kRecords;
  // length 16, timestamp delta and offset delta one byte each, key length 4,
  // value length 6, header count 0 (zigzag varints).
  if (r[0] != 0x20 || (r[2] & 0x80) != 0 || (r[3] & 0x80) != 0 || r[4] != 0x08 || r[9] != 0x0C ||
      r[16] != 0x00) {
    return std::nullopt;
  }
  const int16_t key_version = int16_t(LoadBe16(r + 5));
  const int16_t type = int16_t(LoadBe16(r + 7));
  const int16_t value_version = int16_t(LoadBe16(r + 10));
  if (key_version < 0 || value_version < 0 ||
      (type != int16_t(ControlRecordType::kAbort) && type != int16_t(ControlRecordType::kCommit))) {
    return std::nullopt;
  }
  RecordBodyView view;
  view.timestamp_delta = int64_t(r[2] >> 1) ^ -int64_t(r[2] & 1);
  return MarkerRecord{EndTxnMarker{ControlRecordType(type), int32_t(LoadBe32(r + 12))},
                      view.Timestamp(batch)};
}

// The marker of the usual control batch (uncompressed, one record), read in
// place (OnlyRecordInPlace makes every check DecodeRecords makes); nullopt
// for any other batch or a record that is not a marker, which
// ReadEndTxnMarker then decodes the general way, to the same result or error.
std::optional<MarkerRecord> ReadUsualEndTxnMarker(const RecordBatchView& batch) {
  if (std::optional<MarkerRecord> exact = ReadExactEndTxnMarker(batch)) return exact;
  std::optional<RecordBodyView> record = OnlyRecordInPlace(batch);
  if (!record || !record->key || !record->value) return std::nullopt;
  auto type = ParseControlRecordKey(*record->key);
  if (!type.ok() || (*type != ControlRecordType::kAbort && *type != ControlRecordType::kCommit)) {
    return std::nullopt;
  }
  auto coordinator_epoch = ParseEndTxnMarkerCoordinatorEpoch(*record->value);
  if (!coordinator_epoch.ok()) return std::nullopt;
  return MarkerRecord{EndTxnMarker{*type, *coordinator_epoch}, record->Timestamp(batch)};
}

// Reads the first record of a non-empty marker batch as COMMIT/ABORT. Runs
// twice per marker in recovery (the scan's barrier check, then the replay):
// the usual marker is read in place, and the message prefix is built only
// for an error.
Result<MarkerRecord> ReadEndTxnMarker(const RecordBatchView& batch) {
  if (std::optional<MarkerRecord> usual = ReadUsualEndTxnMarker(batch)) return *usual;
  auto where = [&batch] {
    return "control batch at offset " + std::to_string(batch.base_offset());
  };
  DARUMA_ASSIGN_OR_RETURN(std::vector<Record> records, batch.DecodeRecords());
  if (records.empty()) return Status::InvalidRecord(where() + ": no records");
  const Record& record = records.front();
  if (!record.key || !record.value) {
    return Status::InvalidRecord(where() + ": end-transaction marker needs a key and a value");
  }
  auto type = ParseControlRecordKey(AsBytes(*record.key));
  if (!type.ok()) return type.status().WithContext(where());
  if (*type != ControlRecordType::kAbort && *type != ControlRecordType::kCommit) {
    return Status::InvalidRecord(where() +
                                 ": control record type: expected ABORT or COMMIT, found " +
                                 ControlRecordTypeName(*type));
  }
  auto coordinator_epoch = ParseEndTxnMarkerCoordinatorEpoch(AsBytes(*record.value));
  if (!coordinator_epoch.ok()) return coordinator_epoch.status().WithContext(where());
  return MarkerRecord{EndTxnMarker{*type, *coordinator_epoch}, record.timestamp};
}

}  // namespace

ControlBatchEffect EffectOfControlBatch(const RecordBatchView& batch) {
  if (batch.records_count() == 0) return ControlBatchEffect::kNone;
  Result<MarkerRecord> record = ReadEndTxnMarker(batch);
  if (!record.ok()) return ControlBatchEffect::kUnreadable;
  return record->marker.type == ControlRecordType::kAbort ? ControlBatchEffect::kAbort
                                                          : ControlBatchEffect::kCommit;
}

const char* ProducerAppendErrorName(ProducerAppendError error) {
  switch (error) {
    case ProducerAppendError::kInvalidProducerEpoch:
      return "INVALID_PRODUCER_EPOCH";
    case ProducerAppendError::kOutOfOrderSequence:
      return "OUT_OF_ORDER_SEQUENCE_NUMBER";
    case ProducerAppendError::kInvalidTxnState:
      return "INVALID_TXN_STATE";
    case ProducerAppendError::kTransactionCoordinatorFenced:
      return "TRANSACTION_COORDINATOR_FENCED";
  }
  return "UNKNOWN";
}

ProducerAppendInfo::ProducerAppendInfo(std::string partition, int64_t producer_id,
                                       const ProducerStateEntry& current_entry, AppendOrigin origin)
    : partition_(std::move(partition)),
      producer_id_(producer_id),
      current_(current_entry),
      updated_(current_entry),
      origin_(origin) {}

std::string ProducerAppendInfo::Where(int64_t offset) const {
  return "producer " + std::to_string(producer_id_) + " at offset " + std::to_string(offset) +
         " in " + partition_;
}

namespace {

Status Rejection(ProducerAppendError error, const std::string& detail) {
  return Status::InvalidTxnState(std::string(ProducerAppendErrorName(error)) + ": " + detail)
      .WithDetail(int(error));
}

}  // namespace

std::optional<ProducerAppendError> ProducerAppendErrorOf(const Status& status) {
  if (status.code() != StatusCode::kInvalidTxnState) return std::nullopt;
  switch (status.detail()) {
    case int(ProducerAppendError::kInvalidProducerEpoch):
    case int(ProducerAppendError::kOutOfOrderSequence):
    case int(ProducerAppendError::kInvalidTxnState):
    case int(ProducerAppendError::kTransactionCoordinatorFenced):
      return ProducerAppendError(status.detail());
    default:
      return std::nullopt;
  }
}

Status ProducerAppendInfo::Reject(ProducerAppendError error, const std::string& detail) {
  rejection_ = error;
  return Rejection(error, detail);
}

Status ProducerAppendInfo::CheckProducerEpoch(int16_t epoch, int64_t offset) {
  if (epoch >= updated_.producer_epoch()) return Status::Ok();
  // Replicated data was validated by the leader; Kafka only logs a warning.
  if (origin_ == AppendOrigin::kReplication) return Status::Ok();
  return Reject(ProducerAppendError::kInvalidProducerEpoch,
                Where(offset) + ": epoch " + std::to_string(epoch) +
                    " is older than the last seen " + std::to_string(updated_.producer_epoch()));
}

Status ProducerAppendInfo::CheckSequence(int16_t epoch, int32_t first_seq, int64_t offset) const {
  if (epoch != updated_.producer_epoch()) {
    // A new epoch must start at sequence 0, unless the producer is unknown.
    if (first_seq != 0 && updated_.producer_epoch() != kNoProducerEpoch) {
      return Rejection(ProducerAppendError::kOutOfOrderSequence,
                       Where(offset) + ": new epoch " + std::to_string(epoch) +
                           " must start at sequence 0, found " + std::to_string(first_seq));
    }
    return Status::Ok();
  }
  int32_t last_seq = kNoSequence;
  if (!updated_.IsEmpty()) {
    last_seq = updated_.LastSeq();
  } else if (epoch == current_.producer_epoch()) {
    last_seq = current_.LastSeq();
  }
  // With no known epoch (all state deleted by retention) any sequence goes.
  if (current_.producer_epoch() == kNoProducerEpoch || InSequence(last_seq, first_seq)) {
    return Status::Ok();
  }
  return Rejection(ProducerAppendError::kOutOfOrderSequence,
                   Where(offset) + ": sequence: expected " +
                       std::to_string(IncrementSequence(last_seq, 1)) + ", found " +
                       std::to_string(first_seq));
}

Result<std::optional<CompletedTxn>> ProducerAppendInfo::Append(const RecordBatchView& batch) {
  if (batch.is_control()) {
    // An emptied control batch: the cleaner removed the whole transaction.
    if (batch.records_count() == 0) return std::optional<CompletedTxn>();
    DARUMA_ASSIGN_OR_RETURN(MarkerRecord record, ReadEndTxnMarker(batch));
    return AppendEndTxnMarker(record.marker, batch.producer_epoch(), batch.base_offset(),
                              record.timestamp);
  }
  DARUMA_RETURN_IF_ERROR(AppendDataBatch(
      batch.producer_epoch(), batch.base_sequence(), batch.last_sequence(), batch.max_timestamp(),
      batch.base_offset(), batch.last_offset(), batch.is_transactional()));
  return std::optional<CompletedTxn>();
}

Status ProducerAppendInfo::AppendDataBatch(int16_t epoch, int32_t first_seq, int32_t last_seq,
                                           int64_t max_timestamp, int64_t first_offset,
                                           int64_t last_offset, bool is_transactional) {
  DARUMA_RETURN_IF_ERROR(CheckProducerEpoch(epoch, first_offset));
  if (origin_ == AppendOrigin::kClient) {
    Status st = CheckSequence(epoch, first_seq, first_offset);
    if (!st.ok()) {
      rejection_ = ProducerAppendError::kOutOfOrderSequence;
      return st;
    }
  }
  const bool txn_open = updated_.current_txn_first_offset().has_value();
  if (txn_open && !is_transactional) {
    return Reject(ProducerAppendError::kInvalidTxnState,
                  Where(first_offset) + ": non-transactional data while transaction from offset " +
                      std::to_string(*updated_.current_txn_first_offset()) + " is open");
  }
  updated_.AddBatch(epoch, last_seq, last_offset, int32_t(last_offset - first_offset),
                    max_timestamp);
  if (!txn_open && is_transactional) {
    updated_.SetCurrentTxnFirstOffset(first_offset);
    started_.push_back(TxnMetadata{producer_id_, first_offset, std::nullopt});
  }
  return Status::Ok();
}

Result<std::optional<CompletedTxn>> ProducerAppendInfo::AppendEndTxnMarker(
    const EndTxnMarker& marker, int16_t epoch, int64_t offset, int64_t timestamp) {
  DARUMA_RETURN_IF_ERROR(CheckProducerEpoch(epoch, offset));
  if (updated_.coordinator_epoch() > marker.coordinator_epoch &&
      origin_ != AppendOrigin::kReplication) {
    return Reject(ProducerAppendError::kTransactionCoordinatorFenced,
                  Where(offset) + ": coordinator epoch " +
                      std::to_string(marker.coordinator_epoch) + " is older than the current " +
                      std::to_string(updated_.coordinator_epoch()));
  }
  std::optional<CompletedTxn> completed;
  if (auto first = updated_.current_txn_first_offset()) {
    completed =
        CompletedTxn{producer_id_, *first, offset, marker.type == ControlRecordType::kAbort};
  }
  updated_.EndTransaction(epoch, marker.coordinator_epoch, timestamp);
  return completed;
}

}  // namespace daruma
