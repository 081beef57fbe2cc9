#include "coordinator/group_storage.h"

#include <fmt/format.h>

#include "log/leader_epoch.h"

namespace daruma {
namespace {

constexpr int32_t kReadChunk = 4 << 20;

}  // namespace

Result<int64_t> LogGroupStorage::Append(int32_t partition, const std::vector<RecordInput>& records,
                                        const std::optional<ProducerBatchInfo>& producer) {
  Result<Log*> log = log_for_(partition, true);
  if (!log.ok()) return log.status();
  if (*log == nullptr) {
    return Status::NotFound(fmt::format("{}-{} does not exist", topic_, partition));
  }
  // The partition's own leader epoch (log/leader_epoch.h): a
  // __consumer_offsets partition from a Kafka cluster may be at epoch 5.
  const int32_t leader_epoch = LeaderEpochOf(**log);
  BatchBuilderOptions options;
  options.partition_leader_epoch = leader_epoch;
  if (producer) {
    // Kafka's GroupMetadataManager (and 4.0's CoordinatorRuntime) build
    // transactional offset batches with base sequence 0; the coordinator
    // origin means the log does not check it.
    options.producer_id = producer->producer_id;
    options.producer_epoch = producer->producer_epoch;
    options.base_sequence = 0;
    options.is_transactional = true;
  }
  std::vector<RecordInput> stamped = records;
  const int64_t now = clock_->NowMs();
  for (RecordInput& r : stamped) r.timestamp = now;
  Result<Bytes> batch = BuildRecordBatch(options, stamped);
  if (!batch.ok()) return batch.status();
  Result<LogAppendInfo> info =
      (*log)->AppendAsLeader(*batch, leader_epoch, AppendOrigin::kCoordinator);
  if (!info.ok()) return info.status();
  const int64_t end = (*log)->log_end_offset();
  if ((*log)->config_snapshot().flush_messages <= 1 && (*log)->recovery_point() < end) {
    if (Status s = (*log)->Flush(end); !s.ok()) return s;
  }
  if (end > (*log)->high_watermark()) (*log)->UpdateHighWatermark(end);
  return info->first_offset;
}

bool LogGroupStorage::SyncsEveryAppend(int32_t partition) {
  Result<Log*> log = log_for_(partition, false);
  return log.ok() && *log != nullptr && (*log)->config_snapshot().flush_messages <= 1;
}

Status LogGroupStorage::CheckAvailable(int32_t partition) {
  return log_for_(partition, false).status();
}

Status LogGroupStorage::ReadBatches(int32_t partition,
                                    const std::function<Status(const RecordBatchView&)>& visit) {
  Result<Log*> log = log_for_(partition, false);
  if (!log.ok()) return log.status();
  if (*log == nullptr) return Status::Ok();
  int64_t next = (*log)->log_start_offset();
  const int64_t end = (*log)->log_end_offset();
  FetchDataInfo chunk;
  while (next < end) {
    if (Status s = (*log)->ReadInto(next, kReadChunk, FetchIsolation::kLogEnd, true, &chunk);
        !s.ok()) {
      return s;
    }
    if (chunk.records.empty()) break;
    ByteSpan rest(chunk.records);
    while (rest.size() >= size_t(kLogOverhead)) {
      // Log::Read returns whole batches; each is its length field + 12 bytes.
      const size_t size =
          size_t(LoadBe32(rest.data() + batch_layout::kLength)) + size_t(kLogOverhead);
      if (size > rest.size()) break;
      const RecordBatchView view(rest.subspan(0, size));
      if (view.magic() == 2) {
        Result<RecordBatchView> batch = RecordBatchView::Parse(view.bytes());
        if (!batch.ok()) {
          return batch.status().WithContext(
              fmt::format("{}-{} at offset {}", topic_, partition, next));
        }
      }
      // Legacy (magic 0/1) entries are passed on for the caller to skip.
      if (Status s = visit(view); !s.ok()) return s;
      next = view.magic() == 2 ? view.next_offset() : int64_t(LoadBe64(rest.data())) + 1;
      rest = rest.subspan(size);
    }
  }
  return Status::Ok();
}

}  // namespace daruma
