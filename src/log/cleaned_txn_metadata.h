// CleanedTransactionMetadata: the transaction bookkeeping of one cleaning
// pass (Kafka's CleanedTransactionMetadata, spec §11.6).
//
// The cleaner feeds it the aborted transactions of each segment it reads
// (from the .txnindex files) and then every batch in offset order. It answers
// whether a batch may be discarded:
//  * a transactional data batch of an aborted transaction: yes (and the
//    transaction is remembered as "seen");
//  * an ABORT marker: only if no data batch of its transaction was seen in
//    this pass; otherwise it is kept and its aborted-transaction entry is
//    re-recorded in the cleaned segment's .txnindex (when one is attached);
//  * a COMMIT marker: only if no data batch of its transaction was seen;
//  * an empty control batch (already cleaned): yes.
// Not thread-safe; one instance per cleaning pass.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "common/status.h"
#include "log/transaction_index.h"
#include "record/record_batch.h"

namespace daruma {

class CleanedTransactionMetadata {
 public:
  void AddAbortedTransactions(const std::vector<AbortedTxn>& aborted);
  // Where retained ABORT markers' entries go (the cleaned segment's index).
  void set_cleaned_index(TransactionIndex* index) { cleaned_index_ = index; }

  // Whether a control batch can be discarded (see the header comment).
  Result<bool> OnControlBatchRead(const RecordBatchView& batch);
  // Whether a data batch belongs to an aborted transaction.
  bool OnBatchRead(const RecordBatchView& batch);

 private:
  struct OngoingAborted {
    AbortedTxn txn;
    std::optional<int64_t> last_observed_batch_offset;
  };
  void ConsumeAbortedTxnsUpTo(int64_t offset);

  std::multimap<int64_t, AbortedTxn> aborted_by_first_offset_;
  std::map<int64_t, OngoingAborted> ongoing_aborted_;  // by producer id
  std::set<int64_t> ongoing_committed_;                // producer ids
  TransactionIndex* cleaned_index_ = nullptr;
};

}  // namespace daruma
