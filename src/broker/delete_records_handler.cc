// DeleteRecords (Kafka's ReplicaManager.deleteRecords on the leader): raises
// each partition's log start offset through Log::MaybeIncrementLogStartOffset
// (the epoch cache and producer state follow; retention removes the segments
// wholly below it later) and answers the new low watermark, which on one node
// is the log start offset. Offset -1 means the high watermark. Per partition:
//   internal topic                 INVALID_TOPIC_EXCEPTION
//   unknown topic or partition     UNKNOWN_TOPIC_OR_PARTITION
//   cleanup.policy without delete  POLICY_VIOLATION
//   offset < 0 (not -1) or > HW    OFFSET_OUT_OF_RANGE
// An offset at or below the current start changes nothing and succeeds.
//
// Durability: Kafka writes log-start-offset-checkpoint only every
// log.flush.start.offset.checkpoint.interval.ms, so a crash can bring deleted
// records back; Daruma checkpoints before answering, so an acknowledged
// deletion survives any restart. A failed checkpoint is KAFKA_STORAGE_ERROR
// (the dir goes offline).
#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

constexpr int64_t kHighWatermarkOffset = -1;

using DeleteRecordsResult = DeleteRecordsResponse::Partition;

// Raises the start of one partition; *moved says whether it changed.
DeleteRecordsResult DeleteOne(HandlerEnv& env, const std::string& topic,
                              const DeleteRecordsRequest::Partition& p, bool* moved) {
  DeleteRecordsResult out;
  out.partition_index = p.partition_index;
  if (IsInternalTopic(topic)) {
    out.error_code = ErrorCode::kInvalidTopicException;
    return out;
  }
  const TopicPartition tp{topic, p.partition_index};
  Log* log = env.topics.ServedLog(tp, &out.error_code);
  if (log == nullptr) return out;
  if (!log->config_snapshot().delete_policy) {
    out.error_code = ErrorCode::kPolicyViolation;
    return out;
  }
  const int64_t offset = p.offset == kHighWatermarkOffset ? log->high_watermark() : p.offset;
  if (offset < 0) {
    out.error_code = ErrorCode::kOffsetOutOfRange;
    return out;
  }
  const int64_t before = log->log_start_offset();
  if (Status st = log->MaybeIncrementLogStartOffset(offset); !st.ok()) {
    out.error_code = ErrorCodeForLogStatus(env.topics, tp, log, st);  // kOutOfRange: above the HW
    return out;
  }
  out.low_watermark = log->log_start_offset();
  *moved = *moved || out.low_watermark != before;
  return out;
}

}  // namespace

void HandleDeleteRecords(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                         const Respond& respond) {
  Result<DeleteRecordsRequest> request = DecodeDeleteRecordsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  DeleteRecordsResponse response;
  bool moved = false;
  for (const auto& t : request->topics) {
    DeleteRecordsResponse::Topic out;
    out.name = t.name;
    for (const auto& p : t.partitions) out.partitions.push_back(DeleteOne(env, t.name, p, &moved));
    response.topics.push_back(std::move(out));
  }
  if (moved) {
    if (Status st = env.ctx.log_manager->CheckpointLogStartOffsets(); !st.ok()) {
      for (auto& t : response.topics) {
        for (auto& p : t.partitions) {
          if (p.error_code != ErrorCode::kNone) continue;
          p.error_code = ErrorCode::kKafkaStorageError;
          p.low_watermark = -1;
        }
      }
    }
  }
  respond(EncodeResponseFrame(env, header, response, EncodeDeleteRecordsResponse), false);
}

}  // namespace daruma::broker
