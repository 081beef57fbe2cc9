// GroupStorage: where the group coordinator keeps its records, the
// partitions of `__consumer_offsets` (an interface so tests can fail or
// inspect appends), and LogGroupStorage, the one the broker uses.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "log/log.h"
#include "record/record_batch.h"
#include "record/record_batch_builder.h"

namespace daruma {

// The producer of a transactional batch (TxnOffsetCommit, KIP-98): the batch
// carries its id and epoch and the transactional attribute, and is part of
// that producer's open transaction on the partition until the transaction
// coordinator appends its COMMIT or ABORT marker there.
struct ProducerBatchInfo {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
};

class GroupStorage {
 public:
  virtual ~GroupStorage() = default;
  // Appends `records` as one batch to `partition`, creating the partition if
  // needed; with `producer` as a transactional batch of that producer.
  // Returns the offset of the batch's first record (record i is at that +
  // i), only once the batch is in the log and as durable as the topic's
  // flush settings ask; on an error nothing may be assumed stored. A
  // producer whose epoch is older than the one the partition knows is
  // rejected with the log's producer error (ProducerAppendErrorOf).
  virtual Result<int64_t> Append(int32_t partition, const std::vector<RecordInput>& records,
                                 const std::optional<ProducerBatchInfo>& producer) = 0;
  // Calls `visit` for every batch of `partition` from its log start to its
  // end, in offset order; a partition that does not exist has none. The
  // first error (a read, or one `visit` returns) stops and is returned.
  virtual Status ReadBatches(int32_t partition,
                             const std::function<Status(const RecordBatchView&)>& visit) = 0;
  // True when every append to `partition` is fsynced before Append returns
  // (the topic flushes every message). The transaction coordinator then
  // makes its markers as durable before it records a transaction complete.
  virtual bool SyncsEveryAppend(int32_t partition) {
    (void)partition;
    return false;
  }
  // Ok while `partition` can be read and appended; an error when it cannot
  // now (its log dir went offline, or it was not loaded): the coordinators
  // then answer its keys as Kafka does for a partition this broker does not
  // lead, instead of serving what memory holds or appending in vain.
  virtual Status CheckAvailable(int32_t partition) {
    (void)partition;
    return Status::Ok();
  }
};

// The `__consumer_offsets` logs. `log_for(partition, create)` returns the
// partition's log, creating the topic when `create` is true; nullptr (not an
// error) when it does not exist and `create` is false.
class LogGroupStorage final : public GroupStorage {
 public:
  using LogFor = std::function<Result<Log*>(int32_t partition, bool create)>;
  // `topic` names the logs in errors: the transaction coordinator keeps
  // `__transaction_state` through the same storage.
  LogGroupStorage(LogFor log_for, Clock* clock, std::string topic = "__consumer_offsets")
      : log_for_(std::move(log_for)), clock_(clock), topic_(std::move(topic)) {}

  // Builds an uncompressed magic 2 batch (CreateTime now; without a producer
  // no producer id; with one its id and epoch, base sequence 0 and the
  // transactional attribute, as Kafka's coordinator writes them), appends it
  // as leader with epoch 0 and origin kCoordinator (the producer's epoch is
  // checked, its sequence is not), flushes it when the topic asks for a flush
  // per message (`flush.messages` <= 1) and raises the high watermark. Only
  // the coordinators write these logs: the group coordinator's data batches
  // and the transaction coordinator's markers.
  Result<int64_t> Append(int32_t partition, const std::vector<RecordInput>& records,
                         const std::optional<ProducerBatchInfo>& producer) override;
  Status ReadBatches(int32_t partition,
                     const std::function<Status(const RecordBatchView&)>& visit) override;
  bool SyncsEveryAppend(int32_t partition) override;
  // The error log_for gives the partition, if any.
  Status CheckAvailable(int32_t partition) override;

 private:
  LogFor log_for_;
  Clock* clock_;
  std::string topic_;
};

}  // namespace daruma
