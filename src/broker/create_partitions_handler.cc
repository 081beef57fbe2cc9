// CreatePartitions (Kafka's ReplicationControlManager.createPartitions on one
// node): grows a topic to Count partitions through TopicRegistry (new
// partition directories with the topic id in partition.metadata, kept across
// restarts). Errors as Kafka:
//   a topic named twice           INVALID_REQUEST (every entry for it)
//   unknown topic                 UNKNOWN_TOPIC_OR_PARTITION
//   Count not above the current   INVALID_PARTITIONS
//   more than kMaxNewPartitionsPerRequest new partitions in the request,
//   all topics together           POLICY_VIOLATION
//   Assignments not one per new partition, or naming any broker but this
//   one (or this one twice)       INVALID_REPLICA_ASSIGNMENT
// ValidateOnly checks all of it and creates nothing.
#include <map>
#include <set>

#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

struct Outcome {
  ErrorCode error = ErrorCode::kNone;
  std::optional<std::string> message;
};

Outcome Fail(ErrorCode error, std::string message) {
  return {error, std::move(message)};
}

Outcome CheckAssignments(const HandlerEnv& env, const CreatePartitionsRequest::Topic& topic,
                         int32_t current) {
  if (!topic.assignments) return {};
  const int32_t additional = topic.count - current;
  if (int32_t(topic.assignments->size()) != additional) {
    return Fail(ErrorCode::kInvalidReplicaAssignment,
                "Attempted to add " + std::to_string(additional) +
                    " additional partition(s), but " + "only " +
                    std::to_string(topic.assignments->size()) + " assignment(s) were specified.");
  }
  for (const auto& a : *topic.assignments) {
    if (a.broker_ids.empty()) {
      return Fail(ErrorCode::kInvalidReplicaAssignment,
                  "The manual partition assignment includes an empty replica list.");
    }
    std::set<int32_t> seen;
    for (int32_t id : a.broker_ids) {
      if (id != env.ctx.node_id) {
        return Fail(ErrorCode::kInvalidReplicaAssignment,
                    "The manual partition assignment includes broker " + std::to_string(id) +
                        ", but no broker with that ID exists.");
      }
      if (!seen.insert(id).second) {
        return Fail(ErrorCode::kInvalidReplicaAssignment,
                    "The manual partition assignment includes the broker " + std::to_string(id) +
                        " more than once.");
      }
    }
  }
  return {};
}

// `budget`: the new partitions the request may still make, less this
// topic's when they are made.
Outcome CreateOne(HandlerEnv& env, const CreatePartitionsRequest::Topic& topic, bool validate_only,
                  int64_t* budget) {
  std::optional<TopicInfo> info = env.topics.Find(topic.name);
  if (!info) {
    return Fail(ErrorCode::kUnknownTopicOrPartition,
                "This server does not host this topic-partition.");
  }
  if (Status grow = env.topics.ValidateAddPartitions(topic.name, topic.count); !grow.ok()) {
    return Fail(
        grow.IsNotFound() ? ErrorCode::kUnknownTopicOrPartition : ErrorCode::kInvalidPartitions,
        grow.message());
  }
  const int64_t additional = int64_t(topic.count) - info->partitions;
  if (additional > *budget) return Fail(ErrorCode::kPolicyViolation, kExcessiveBatchMessage);
  Outcome assigned = CheckAssignments(env, topic, info->partitions);
  if (assigned.error != ErrorCode::kNone) return assigned;
  *budget -= additional;
  if (validate_only) return assigned;
  Result<TopicInfo> grown = env.topics.AddPartitions(topic.name, topic.count);
  if (!grown.ok()) {
    const Status& st = grown.status();
    if (st.IsNotFound()) return Fail(ErrorCode::kUnknownTopicOrPartition, st.message());
    if (st.code() == StatusCode::kOutOfRange) {
      return Fail(ErrorCode::kInvalidPartitions, st.message());
    }
    return Fail(st.IsIoError() ? ErrorCode::kKafkaStorageError : ErrorCode::kUnknownServerError,
                st.message());
  }
  return {};
}

}  // namespace

void HandleCreatePartitions(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                            const Respond& respond) {
  Result<CreatePartitionsRequest> request = DecodeCreatePartitionsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  std::map<std::string, int> count;
  for (const auto& topic : request->topics) count[topic.name]++;
  CreatePartitionsResponse response;
  int64_t budget = kMaxNewPartitionsPerRequest;
  for (const auto& topic : request->topics) {
    Outcome outcome = count[topic.name] > 1
                          ? Fail(ErrorCode::kInvalidRequest, "Duplicate topic in request.")
                          : CreateOne(env, topic, request->validate_only, &budget);
    response.results.push_back(
        {.name = topic.name, .error_code = outcome.error, .error_message = outcome.message});
  }
  respond(EncodeResponseFrame(env, header, response, EncodeCreatePartitionsResponse), false);
}

}  // namespace daruma::broker
