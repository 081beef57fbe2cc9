#include "broker/txn_marker_writer.h"

#include <fmt/format.h>

#include "coordinator/txn_marker_append.h"

namespace daruma::broker {

Status LogTxnMarkerWriter::WriteMarker(const TopicPartition& tp, int64_t producer_id,
                                       int16_t producer_epoch, bool commit) {
  Log* log = topics_.GetLog(tp);
  if (log == nullptr) return Status::NotFound(fmt::format("{} does not exist", tp.ToString()));
  DARUMA_RETURN_IF_ERROR(
      AppendTxnMarker(log, producer_id, producer_epoch, commit, clock_->NowMs()));
  const int64_t end = log->log_end_offset();
  {
    std::lock_guard<std::mutex> lock(hw_mu_);
    if (end > log->high_watermark()) log->UpdateHighWatermark(end);
  }
  purgatory_.Wake(tp);
  if (groups_ != nullptr && tp.topic == kConsumerOffsetsTopic) {
    groups_->CompleteTransaction(producer_id, tp.partition, commit);
  }
  return Status::Ok();
}

Status LogTxnMarkerWriter::SyncMarkers(const std::set<TopicPartition>& partitions) {
  for (const TopicPartition& tp : partitions) {
    Log* log = topics_.GetLog(tp);
    if (log == nullptr) continue;
    const int64_t end = log->log_end_offset();
    if (log->recovery_point() < end) DARUMA_RETURN_IF_ERROR(log->Flush(end));
  }
  return Status::Ok();
}

}  // namespace daruma::broker
