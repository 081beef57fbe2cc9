// The coordinator's private per-id state (transaction_coordinator.h); only
// its .cc files include this.
#pragma once

#include <memory>
#include <mutex>
#include <set>

#include "coordinator/transaction_coordinator.h"

namespace daruma {

struct TransactionCoordinator::Entry {
  // Held for a whole transition of this id and for a verified write.
  std::mutex mu;
  // As stored in `__transaction_state` (or, for an id just created and not
  // yet stored, Empty at epoch -1).
  TransactionMetadata txn;
  // Expired and tombstoned: a later request looks the id up again.
  bool removed = false;
  // In PrepareCommit/PrepareAbort: the partitions whose marker is written.
  std::set<TopicPartition> marked;
  // In PrepareCommit/PrepareAbort with a marker or the final record not
  // written: the periodic check retries (the id answers
  // CONCURRENT_TRANSACTIONS until then).
  bool markers_pending = false;
};

struct TransactionCoordinator::LockedProducer {
  std::shared_ptr<Entry> entry;  // null unless error is kNone
  std::unique_lock<std::mutex> lock;
  ErrorCode error = ErrorCode::kNone;
};

// The periodic jobs' way back to the coordinator: the destructor clears
// `coordinator` under `mu`, so a job that runs later does nothing and one in
// progress is waited for.
struct TransactionCoordinator::JobAnchor {
  explicit JobAnchor(TransactionCoordinator* c) : coordinator(c) {}
  std::mutex mu;
  TransactionCoordinator* coordinator;
};

}  // namespace daruma
