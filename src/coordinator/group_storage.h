// GroupStorage: where the group coordinator keeps its records, the
// partitions of `__consumer_offsets` (an interface so tests can fail or
// inspect appends), and LogGroupStorage, the one the broker uses.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/status.h"
#include "log/log.h"
#include "record/record_batch.h"
#include "record/record_batch_builder.h"

namespace daruma {

class GroupStorage {
 public:
  virtual ~GroupStorage() = default;
  // Appends `records` as one batch to `partition`, creating the partition if
  // needed. OK only once the batch is in the log and as durable as the
  // topic's flush settings ask; on an error nothing may be assumed stored.
  virtual Status Append(int32_t partition, const std::vector<RecordInput>& records) = 0;
  // Calls `visit` for every batch of `partition` from its log start to its
  // end, in offset order; a partition that does not exist has none. The
  // first error (a read, or one `visit` returns) stops and is returned.
  virtual Status ReadBatches(int32_t partition,
                             const std::function<Status(const RecordBatchView&)>& visit) = 0;
};

// The `__consumer_offsets` logs. `log_for(partition, create)` returns the
// partition's log, creating the topic when `create` is true; nullptr (not an
// error) when it does not exist and `create` is false.
class LogGroupStorage final : public GroupStorage {
 public:
  using LogFor = std::function<Result<Log*>(int32_t partition, bool create)>;
  LogGroupStorage(LogFor log_for, Clock* clock) : log_for_(std::move(log_for)), clock_(clock) {}

  // Builds an uncompressed magic 2 batch (no producer id, CreateTime now),
  // appends it as leader with epoch 0, flushes it when the topic asks for a
  // flush per message (`flush.messages` <= 1) and raises the high watermark:
  // only the coordinator writes these logs, so no other append races it.
  Status Append(int32_t partition, const std::vector<RecordInput>& records) override;
  Status ReadBatches(int32_t partition,
                     const std::function<Status(const RecordBatchView&)>& visit) override;

 private:
  LogFor log_for_;
  Clock* clock_;
};

}  // namespace daruma
