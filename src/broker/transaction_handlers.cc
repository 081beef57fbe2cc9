// AddPartitionsToTxn, AddOffsetsToTxn and EndTxn: a transactional producer's
// calls to its transaction coordinator (coordinator/transaction_coordinator.h),
// with the checks Kafka's KafkaApis makes before the coordinator sees them.
#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

// PRODUCER_FENCED exists from AddPartitionsToTxn, AddOffsetsToTxn and EndTxn
// v2 (Kafka 2.7); an older client is told INVALID_PRODUCER_EPOCH, as Kafka does.
ErrorCode ForVersion(ErrorCode error, int16_t version) {
  return error == ErrorCode::kProducerFenced && version < 2 ? ErrorCode::kInvalidProducerEpoch
                                                            : error;
}

using TopicResult = AddPartitionsToTxnResponse::TopicResult;

// One transaction's answer: `error` for every partition, except that a
// partition of a topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION and
// then every other one OPERATION_NOT_ATTEMPTED (Kafka checks the topics first
// and sends nothing to the coordinator if one is missing).
std::vector<TopicResult> AddPartitionsOfOne(
    HandlerEnv& env, const std::string& transactional_id, int64_t producer_id,
    int16_t producer_epoch, bool verify_only,
    const std::vector<AddPartitionsToTxnRequest::Topic>& topics, int16_t version) {
  std::set<TopicPartition> partitions;
  std::set<TopicPartition> unknown;
  for (const auto& topic : topics) {
    for (int32_t p : topic.partitions) {
      TopicPartition tp{topic.name, p};
      if (env.topics.GetLog(tp) == nullptr) unknown.insert(tp);
      partitions.insert(std::move(tp));
    }
  }
  std::map<TopicPartition, ErrorCode> errors;
  if (!unknown.empty()) {
    for (const TopicPartition& tp : partitions) {
      errors[tp] = unknown.count(tp) > 0 ? ErrorCode::kUnknownTopicOrPartition
                                         : ErrorCode::kOperationNotAttempted;
    }
  } else if (env.txns == nullptr) {
    for (const TopicPartition& tp : partitions) errors[tp] = ErrorCode::kCoordinatorNotAvailable;
  } else if (verify_only) {
    errors = env.txns->VerifyPartitions(transactional_id, producer_id, producer_epoch, partitions);
  } else {
    const ErrorCode error = ForVersion(
        env.txns->AddPartitions(transactional_id, producer_id, producer_epoch, partitions),
        version);
    for (const TopicPartition& tp : partitions) errors[tp] = error;
  }
  std::vector<TopicResult> results;
  for (const auto& [tp, error] : errors) {
    if (results.empty() || results.back().name != tp.topic) {
      results.emplace_back();
      results.back().name = tp.topic;
    }
    AddPartitionsToTxnResponse::PartitionResult r;
    r.partition_index = tp.partition;
    r.partition_error_code = error;
    results.back().results_by_partition.push_back(r);
  }
  return results;
}

}  // namespace

void HandleAddPartitionsToTxn(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                              const Respond& respond) {
  const int16_t version = header.api_version;
  Result<AddPartitionsToTxnRequest> request = DecodeAddPartitionsToTxnRequest(body, version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  AddPartitionsToTxnResponse response;
  if (version < 4) {
    response.results_by_topic_v3_and_below = AddPartitionsOfOne(
        env, request->v3_and_below_transactional_id, request->v3_and_below_producer_id,
        request->v3_and_below_producer_epoch, false, request->v3_and_below_topics, version);
  } else {
    // v4+: the batched form Kafka's brokers send each other (KIP-890),
    // answered per transaction.
    for (const auto& txn : request->transactions) {
      AddPartitionsToTxnResponse::TransactionResult r;
      r.transactional_id = txn.transactional_id;
      r.topic_results =
          AddPartitionsOfOne(env, txn.transactional_id, txn.producer_id, txn.producer_epoch,
                             txn.verify_only, txn.topics, version);
      response.results_by_transaction.push_back(std::move(r));
    }
  }
  respond(EncodeResponseFrame(env, header, response, EncodeAddPartitionsToTxnResponse), false);
}

void HandleAddOffsetsToTxn(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                           const Respond& respond) {
  Result<AddOffsetsToTxnRequest> request = DecodeAddOffsetsToTxnRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  AddOffsetsToTxnResponse response;
  if (env.txns == nullptr || env.groups == nullptr) {
    response.error_code = ErrorCode::kCoordinatorNotAvailable;
  } else {
    // The group's offsets will be written to its `__consumer_offsets`
    // partition, which joins the transaction like any other partition.
    const TopicPartition offsets{std::string(kConsumerOffsetsTopic),
                                 env.groups->PartitionFor(request->group_id)};
    response.error_code =
        ForVersion(env.txns->AddPartitions(request->transactional_id, request->producer_id,
                                           request->producer_epoch, {offsets}),
                   header.api_version);
  }
  respond(EncodeResponseFrame(env, header, response, EncodeAddOffsetsToTxnResponse), false);
}

void HandleEndTxn(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                  const Respond& respond) {
  Result<EndTxnRequest> request = DecodeEndTxnRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  EndTxnResponse response;
  if (env.txns == nullptr) {
    response.error_code = ErrorCode::kCoordinatorNotAvailable;
  } else {
    response.error_code =
        ForVersion(env.txns->EndTransaction(request->transactional_id, request->producer_id,
                                            request->producer_epoch, request->committed),
                   header.api_version);
  }
  respond(EncodeResponseFrame(env, header, response, EncodeEndTxnResponse), false);
}

}  // namespace daruma::broker
