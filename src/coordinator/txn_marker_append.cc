#include "coordinator/txn_marker_append.h"

#include <fmt/format.h>

#include "log/leader_epoch.h"
#include "log/producer_append_info.h"
#include "record/record_batch_builder.h"

namespace daruma {
namespace {

// The coordinator epoch of Daruma's markers: Kafka uses the leader epoch of
// the transaction's `__transaction_state` partition, which on this one node
// is always 0.
constexpr int32_t kCoordinatorEpoch = 0;

Result<LogAppendInfo> Append(Log* log, int64_t producer_id, int16_t producer_epoch, bool commit,
                             int32_t coordinator_epoch, int64_t now_ms) {
  // The partition's own leader epoch (log/leader_epoch.h), never below it.
  const int32_t leader_epoch = LeaderEpochOf(*log);
  const Bytes batch = BuildEndTxnMarkerBatch(
      0, leader_epoch, producer_id, producer_epoch,
      commit ? ControlRecordType::kCommit : ControlRecordType::kAbort, coordinator_epoch, now_ms);
  return log->AppendAsLeader(batch, leader_epoch, AppendOrigin::kCoordinator);
}

}  // namespace

Status AppendTxnMarker(Log* log, int64_t producer_id, int16_t producer_epoch, bool commit,
                       int64_t now_ms) {
  Result<LogAppendInfo> info =
      Append(log, producer_id, producer_epoch, commit, kCoordinatorEpoch, now_ms);
  if (!info.ok() &&
      ProducerAppendErrorOf(info.status()) == ProducerAppendError::kTransactionCoordinatorFenced) {
    // Files a Kafka cluster wrote carry its coordinator epochs, which may be
    // above 0. No other coordinator exists here, so the marker takes the
    // producer's own epoch rather than leaving its transaction open forever.
    for (const ProducerSnapshotEntry& e : log->ActiveProducerEntries()) {
      if (e.producer_id == producer_id) {
        info = Append(log, producer_id, producer_epoch, commit, e.coordinator_epoch, now_ms);
        break;
      }
    }
  }
  if (!info.ok()) {
    return info.status().WithContext(
        fmt::format("{} marker for producer {} epoch {} in {}", commit ? "COMMIT" : "ABORT",
                    producer_id, producer_epoch, log->topic_partition().ToString()));
  }
  const int64_t end = log->log_end_offset();
  if (log->config_snapshot().flush_messages <= 1 && log->recovery_point() < end) {
    return log->Flush(end);
  }
  return Status::Ok();
}

}  // namespace daruma
