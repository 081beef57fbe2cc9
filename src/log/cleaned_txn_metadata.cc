#include "log/cleaned_txn_metadata.h"

#include "record/control_record.h"

namespace daruma {

void CleanedTransactionMetadata::AddAbortedTransactions(const std::vector<AbortedTxn>& aborted) {
  for (const AbortedTxn& txn : aborted) aborted_by_first_offset_.emplace(txn.first_offset, txn);
}

void CleanedTransactionMetadata::ConsumeAbortedTxnsUpTo(int64_t offset) {
  while (!aborted_by_first_offset_.empty() && aborted_by_first_offset_.begin()->first <= offset) {
    const AbortedTxn txn = aborted_by_first_offset_.begin()->second;
    aborted_by_first_offset_.erase(aborted_by_first_offset_.begin());
    ongoing_aborted_.try_emplace(txn.producer_id, OngoingAborted{txn, std::nullopt});
  }
}

Result<bool> CleanedTransactionMetadata::OnControlBatchRead(const RecordBatchView& batch) {
  ConsumeAbortedTxnsUpTo(batch.last_offset());
  if (batch.records_count() == 0) return true;  // emptied by an earlier pass
  DARUMA_ASSIGN_OR_RETURN(auto records, batch.DecodeRecords());
  if (records.empty() || !records[0].key) return true;
  DARUMA_ASSIGN_OR_RETURN(ControlRecordType type, ParseControlRecordKey(AsBytes(*records[0].key)));
  const int64_t pid = batch.producer_id();
  if (type == ControlRecordType::kAbort) {
    auto it = ongoing_aborted_.find(pid);
    if (it == ongoing_aborted_.end()) return true;
    const bool seen_data = it->second.last_observed_batch_offset.has_value();
    const AbortedTxn txn = it->second.txn;
    ongoing_aborted_.erase(it);
    if (!seen_data) return true;
    // Retain the marker until every batch of the transaction is gone.
    if (cleaned_index_ != nullptr) DARUMA_RETURN_IF_ERROR(cleaned_index_->Append(txn));
    return false;
  }
  if (type == ControlRecordType::kCommit) return ongoing_committed_.erase(pid) == 0;
  return false;
}

bool CleanedTransactionMetadata::OnBatchRead(const RecordBatchView& batch) {
  ConsumeAbortedTxnsUpTo(batch.last_offset());
  if (!batch.is_transactional()) return false;
  auto it = ongoing_aborted_.find(batch.producer_id());
  if (it != ongoing_aborted_.end()) {
    it->second.last_observed_batch_offset = batch.last_offset();
    return true;
  }
  ongoing_committed_.insert(batch.producer_id());
  return false;
}

}  // namespace daruma
