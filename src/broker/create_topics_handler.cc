// CreateTopics (spec §3.7): validated per topic, created synchronously (or
// only validated with validateOnly); this node is the controller.
#include <map>

#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

struct Outcome {
  ErrorCode error = ErrorCode::kNone;
  std::string message;
};

Outcome Fail(ErrorCode error, std::string message) {
  return {error, std::move(message)};
}

// Partition count from NumPartitions / Assignments, or an error (§3.7).
Outcome ResolvePartitions(const HandlerEnv& env, const CreateTopicsRequest::Topic& topic,
                          int32_t* partitions) {
  if (!topic.assignments.empty()) {
    if (topic.num_partitions != -1 || topic.replication_factor != -1) {
      return Fail(ErrorCode::kInvalidRequest,
                  "both numPartitions or replicationFactor and replicasAssignments were set");
    }
    for (const auto& a : topic.assignments) {
      for (int32_t id : a.broker_ids) {
        if (id != env.ctx.node_id) {
          return Fail(ErrorCode::kInvalidReplicaAssignment,
                      "partition " + std::to_string(a.partition_index) +
                          " is assigned to unknown broker " + std::to_string(id));
        }
      }
    }
    *partitions = int32_t(topic.assignments.size());
    return {};
  }
  if (topic.replication_factor != -1 && topic.replication_factor != 1) {
    return Fail(ErrorCode::kInvalidReplicationFactor, "replication factor " +
                                                          std::to_string(topic.replication_factor) +
                                                          " is larger than the 1 available broker");
  }
  if (topic.num_partitions == -1) {
    *partitions = env.ctx.num_partitions;
  } else if (topic.num_partitions <= 0) {
    return Fail(ErrorCode::kInvalidPartitions, "number of partitions must be larger than 0");
  } else {
    *partitions = topic.num_partitions;
  }
  return {};
}

Outcome CreateOne(HandlerEnv& env, const CreateTopicsRequest::Topic& topic, bool validate_only) {
  if (Status name = ValidateTopicName(topic.name); !name.ok()) {
    return Fail(ErrorCode::kInvalidTopicException, name.message());
  }
  if (IsInternalTopic(topic.name)) {
    return Fail(ErrorCode::kInvalidRequest, "topic " + topic.name + " is reserved");
  }
  if (env.topics.Find(topic.name)) {
    return Fail(ErrorCode::kTopicAlreadyExists, "topic '" + topic.name + "' already exists");
  }
  int32_t partitions = 0;
  Outcome resolved = ResolvePartitions(env, topic, &partitions);
  if (resolved.error != ErrorCode::kNone) return resolved;
  TopicOverrides overrides;
  for (const auto& c : topic.configs) {
    if (!c.value) return Fail(ErrorCode::kInvalidConfig, "null value for config " + c.name);
    overrides[c.name] = *c.value;
  }
  Result<LogConfig> valid = env.topics.ValidateCreate(topic.name, partitions, overrides);
  if (!valid.ok()) {
    const StatusCode code = valid.status().code();
    return Fail(code == StatusCode::kAlreadyExists ? ErrorCode::kTopicAlreadyExists
                                                   : ErrorCode::kInvalidConfig,
                valid.status().message());
  }
  if (validate_only) return {};
  Result<TopicInfo> created = env.topics.Create(topic.name, partitions, overrides);
  if (!created.ok()) {
    return Fail(created.status().IsIoError() ? ErrorCode::kKafkaStorageError
                                             : ErrorCode::kUnknownServerError,
                created.status().message());
  }
  return {};
}

}  // namespace

void HandleCreateTopics(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                        const Respond& respond) {
  Result<CreateTopicsRequest> request = DecodeCreateTopicsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  std::map<std::string, int> count;
  for (const auto& topic : request->topics) count[topic.name]++;
  CreateTopicsResponse response;
  for (const auto& topic : request->topics) {
    Outcome outcome = count[topic.name] > 1 ? Fail(ErrorCode::kInvalidRequest,
                                                   "topic " + topic.name + " is named twice")
                                            : CreateOne(env, topic, request->validate_only);
    CreateTopicsResponse::Topic t;
    t.name = topic.name;
    t.error_code = outcome.error;
    if (outcome.error != ErrorCode::kNone) t.error_message = outcome.message;
    response.topics.push_back(std::move(t));
  }
  respond(EncodeResponseFrame(env, header, response, EncodeCreateTopicsResponse), false);
}

}  // namespace daruma::broker
