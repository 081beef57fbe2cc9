// LogTxnMarkerWriter: the transaction coordinator's markers written to the
// local logs (Kafka's WriteTxnMarkers handled by the partition leader, which
// on one node is this broker).
#pragma once

#include <mutex>

#include "broker/delayed_fetch.h"
#include "broker/topic_registry.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/transaction_coordinator.h"

namespace daruma::broker {

class LogTxnMarkerWriter final : public TxnMarkerWriter {
 public:
  // `hw_mu` is the produce path's high-watermark lock; `groups` may be null
  // (no group serves transactional offsets then).
  LogTxnMarkerWriter(TopicRegistry& topics, std::mutex& hw_mu, DelayedFetchPurgatory& purgatory,
                     GroupCoordinator* groups, Clock* clock)
      : topics_(topics), hw_mu_(hw_mu), purgatory_(purgatory), groups_(groups), clock_(clock) {}

  // Appends the marker (coordinator/txn_marker_append.h), raises the high
  // watermark (so read_committed readers move past the transaction) and
  // wakes parked fetches. In `__consumer_offsets` the
  // group coordinator then applies or drops the producer's pending offsets.
  Status WriteMarker(const TopicPartition& tp, int64_t producer_id, int16_t producer_epoch,
                     bool commit) override;
  // Flushes each partition's log to its end (a partition deleted since is
  // skipped).
  Status SyncMarkers(const std::set<TopicPartition>& partitions) override;

 private:
  TopicRegistry& topics_;
  std::mutex& hw_mu_;
  DelayedFetchPurgatory& purgatory_;
  GroupCoordinator* groups_;
  Clock* clock_;
};

}  // namespace daruma::broker
