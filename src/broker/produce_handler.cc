// Produce (spec §3.3, §5.2, §5.4): validate, append as leader with epoch 0,
// advance the high watermark to the log end (one node = the whole ISR), wake
// parked fetches, answer per partition in request order.
#include <fmt/format.h>

#include <optional>

#include "broker/api_handlers.h"
#include "broker/produce_validator.h"
#include "common/bytes.h"
#include "log/leader_epoch.h"
#include "protocol/messages.h"
#include "record/record_batch.h"
#include "record/record_batch_builder.h"

namespace daruma::broker {
namespace {

// The transactional bit of the first batch in `records` (the low byte of the
// big-endian attributes), false when the bytes are too short to say.
bool IsTransactional(const std::optional<ByteSpan>& records) {
  const size_t attr = batch_layout::kAttributes + 1;
  return records && records->size() > attr &&
         ((*records)[attr] & batch_attributes::kTransactional) != 0;
}

bool HasTransactionalBatch(const ProduceRequest& request) {
  for (const auto& topic : request.topic_data) {
    for (const auto& p : topic.partition_data) {
      if (IsTransactional(p.records)) return true;
    }
  }
  return false;
}

// Kafka's maybeIncrementLeaderHW for a one-node ISR: raises the high
// watermark to the log end, never lowers it. Two produces to one partition
// may finish their appends in either order; without hw_mu the one that read
// the older end could set it after the newer one.
void AdvanceHighWatermark(HandlerEnv& env, Log* log, int64_t end) {
  std::lock_guard<std::mutex> lock(env.hw_mu);
  if (end > log->high_watermark()) log->UpdateHighWatermark(end);
}

// The records' bytes in the request frame, writable: the log stamps offsets,
// epoch and LogAppendTime into them and appends them as they are (no copy).
std::span<uint8_t> Writable(HandlerEnv& env, ByteSpan records) {
  const size_t at = size_t(records.data() - env.frame.data());
  return env.frame.subspan(at, records.size());
}

// Kafka's LogValidator: a topic whose compression.type names a codec stores
// every batch in it, rebuilt when the producer sent another (nullopt: kept as
// sent). The rebuilt batch must still fit max.message.bytes and segment.bytes
// (RebuiltBatchTooLarge).
Result<std::optional<Bytes>> RecompressForTopic(const RecordBatchView& batch,
                                                const LogConfig& config) {
  const CompressionType target = *config.compression_type;
  if (batch.compression() == target) return std::optional<Bytes>();
  const int level = target == CompressionType::kGzip   ? config.compression_gzip_level
                    : target == CompressionType::kLz4  ? config.compression_lz4_level
                    : target == CompressionType::kZstd ? config.compression_zstd_level
                                                       : -1;
  DARUMA_ASSIGN_OR_RETURN(Bytes rebuilt,
                          RecompressRecordBatch(batch, target, level,
                                                MaxDecompressedBytesFor(config.max_message_bytes)));
  return std::optional<Bytes>(std::move(rebuilt));
}

// The limits a rebuilt batch must still meet, with Kafka's codes: above
// max.message.bytes MESSAGE_TOO_LARGE, above segment.bytes
// RECORD_LIST_TOO_LARGE (UnifiedLog.append's checks after validation).
ProduceCheck RebuiltBatchTooLarge(const Bytes& rebuilt, const LogConfig& config) {
  const std::string_view codec = CompressionName(*config.compression_type);
  if (int64_t(rebuilt.size()) > config.max_message_bytes) {
    return {ErrorCode::kMessageTooLarge,
            fmt::format("the batch recompressed with the topic's compression.type {} is {} bytes, "
                        "above max.message.bytes {}",
                        codec, rebuilt.size(), config.max_message_bytes)};
  }
  if (int64_t(rebuilt.size()) > config.segment_bytes) {
    return {ErrorCode::kRecordListTooLarge,
            fmt::format("the batch recompressed with the topic's compression.type {} is {} bytes, "
                        "above segment.bytes {}",
                        codec, rebuilt.size(), config.segment_bytes)};
  }
  return {};
}

ProduceResponse::Partition Append(HandlerEnv& env, const std::string& topic,
                                  const ProduceRequest::Partition& p, int16_t acks, int16_t version,
                                  const std::string& transactional_id) {
  ProduceResponse::Partition out;
  out.index = p.index;
  TopicPartition tp{topic, p.index};
  Log* log = env.topics.ServedLog(tp, &out.error_code);
  if (log == nullptr) return out;
  if (IsInternalTopic(topic)) {
    out.error_code = ErrorCode::kInvalidTopicException;
    return out;
  }
  // A copy: LogManager::SetTopicConfig may replace the log's config meanwhile.
  const LogConfig config = log->config_snapshot();
  ProduceCheck check = ValidateProduceRecords(p.records, version, config, env.ctx.clock->NowMs());
  if (!check.ok()) {
    out.error_code = check.error;
    // v8+: the reason beside the code (written only from v8, as Kafka's).
    if (!check.message.empty()) out.error_message = check.message;
    if (check.record_index) {
      // Kafka's LogValidator.processRecordErrors: the record and its reason
      // in record_errors, a summary beside the code, and the log start.
      out.record_errors.push_back({*check.record_index, check.message, {}});
      out.error_message =
          check.error == ErrorCode::kInvalidTimestamp
              ? "One or more records have been rejected due to invalid timestamp"
              : fmt::format(
                    "One or more records have been rejected due to 1 record errors in "
                    "total, and only showing the first three errors at most: "
                    "[RecordError(batchIndex={}, message='{}')]",
                    *check.record_index, check.message);
      out.log_start_offset = log->log_start_offset();
    }
    return out;
  }
  // The topic's compression.type, when not "producer" and not the batch's.
  std::optional<Bytes> recompressed;
  if (config.compression_type) {
    Result<std::optional<Bytes>> r = RecompressForTopic(RecordBatchView(*p.records), config);
    if (!r.ok()) {
      out.error_code = ErrorCodeForStorageStatus(r.status());
      out.error_message = r.status().message();
      return out;
    }
    recompressed = std::move(*r);
    if (recompressed) {
      if (ProduceCheck too_large = RebuiltBatchTooLarge(*recompressed, config); !too_large.ok()) {
        out.error_code = too_large.error;
        out.error_message = too_large.message;
        return out;
      }
    }
  }
  std::span<uint8_t> records =
      recompressed ? std::span<uint8_t>(*recompressed) : Writable(env, *p.records);
  // Kafka's LogValidator sets a CreateTime batch's maxTimestamp to its
  // records' largest (CRC recomputed): retention, time-index lookups and
  // rolls go by it, so a header the producer got wrong must not be stored.
  // (A rebuilt batch has it from its records already; LogAppendTime is the
  // log's to stamp.)
  if (!recompressed && !config.log_append_time &&
      RecordBatchView(records).max_timestamp() != check.max_timestamp) {
    StoreBe64(records.data() + batch_layout::kMaxTimestamp, uint64_t(check.max_timestamp));
    RewriteBatchCrc(records);
  }
  auto append = [&] {
    Result<LogAppendInfo> info = log->AppendAsLeaderInPlace(records, LeaderEpochOf(*log));
    if (!info.ok()) {
      out.error_code = ErrorCodeForLogStatus(env.topics, tp, log, info.status());
      return;
    }
    // At or above this append's last offset; other producers' appends below
    // it are covered by the flush too.
    const int64_t end = log->log_end_offset();
    // fsync mode: an acks=-1 produce is acknowledged only once durable. The
    // Log already flushes every `flush.messages` messages; this covers a
    // flush that could not complete inside the append.
    if (acks == -1 && config.flush_messages <= 1 && log->recovery_point() < end) {
      Status flushed = log->Flush(end);
      if (!flushed.ok()) {
        out.error_code = ErrorCodeForLogStatus(env.topics, tp, log, flushed);
        return;
      }
    }
    AdvanceHighWatermark(env, log, end);
    env.purgatory.Wake(tp);
    out.base_offset = info->first_offset;
    out.log_append_time_ms = info->log_append_time;
    out.log_start_offset = info->log_start_offset;
  };
  if (!IsTransactional(p.records)) {
    append();
    return out;
  }
  // Kafka's verification before a transactional write (KIP-890 part 1): only
  // the current producer of an Ongoing transaction that holds this partition
  // may write to it, and the append happens with that transaction locked, so
  // no batch can land after the transaction's marker. Otherwise the
  // partition's last stable offset would stop at a batch nothing can ever
  // commit or abort, stalling every read_committed consumer.
  const int64_t producer_id = int64_t(LoadBe64(p.records->data() + batch_layout::kProducerId));
  const int16_t producer_epoch =
      int16_t(LoadBe16(p.records->data() + batch_layout::kProducerEpoch));
  ErrorCode verified = env.txns == nullptr
                           ? ErrorCode::kCoordinatorNotAvailable
                           : env.txns->WithOngoingTransaction(transactional_id, producer_id,
                                                              producer_epoch, tp, append);
  if (verified == ErrorCode::kNone) return out;
  // The coordinator being unavailable (loading, or its partition's dir
  // offline) is retriable for the producer as NOT_ENOUGH_REPLICAS, which
  // older clients retry without a metadata refresh (Kafka's
  // ReplicaManager.postVerificationCallback).
  if (verified == ErrorCode::kCoordinatorLoadInProgress ||
      verified == ErrorCode::kCoordinatorNotAvailable || verified == ErrorCode::kNotCoordinator ||
      verified == ErrorCode::kConcurrentTransactions) {
    verified = ErrorCode::kNotEnoughReplicas;
  }
  out.error_code = verified;
  out.error_message = fmt::format(
      "producer id {} epoch {} of transactional id '{}' has no ongoing transaction with {}-{} "
      "({}); nothing was appended",
      producer_id, producer_epoch, transactional_id, topic, p.index, ErrorCodeName(verified));
  return out;
}

}  // namespace

void HandleProduce(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                   const Respond& respond) {
  Result<ProduceRequest> request = DecodeProduceRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  // Request-level failures apply to every partition (§5.2 steps 1–2).
  ErrorCode all = ErrorCode::kNone;
  const int16_t acks = request->acks;
  if (acks != 0 && acks != 1 && acks != -1) {
    all = ErrorCode::kInvalidRequiredAcks;
  } else if (!request->transactional_id && HasTransactionalBatch(*request)) {
    all = ErrorCode::kTransactionalIdAuthorizationFailed;
  }
  ProduceResponse response;
  bool any_failed = false;
  for (const auto& topic : request->topic_data) {
    ProduceResponse::Topic t;
    t.name = topic.name;
    for (const auto& p : topic.partition_data) {
      ProduceResponse::Partition out;
      if (all != ErrorCode::kNone) {
        out.index = p.index;
        out.error_code = all;
      } else {
        out = Append(env, topic.name, p, acks, header.api_version,
                     request->transactional_id.value_or(""));
      }
      any_failed = any_failed || out.error_code != ErrorCode::kNone;
      t.partition_responses.push_back(out);
    }
    response.responses.push_back(std::move(t));
  }
  // acks=0: no response; a failure closes the connection so the client notices
  // (and is logged like any error response).
  if (acks == 0) {
    LogErrorResponse(env.ctx.log, header, ErrorsOf(response));
    return respond(std::nullopt, any_failed);
  }
  respond(EncodeResponseFrame(env, header, response, EncodeProduceResponse), false);
}

}  // namespace daruma::broker
