// CreateTopics (spec §3.7): validated per topic, created synchronously (or
// only validated with validateOnly); this node is the controller. From v5 a
// topic that was (or would be) created is answered with its partition count,
// replication factor and configs as DescribeConfigs reports them, from v7
// with its id, as Kafka's controller answers.
#include <map>
#include <optional>

#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

struct TopicOutcome {
  ErrorCode error = ErrorCode::kNone;
  std::string message;
  // On success: what was (or would be) created.
  int32_t partitions = -1;
  TopicOverrides overrides;
  Uuid id;  // zero when only validated
};

TopicOutcome FailTopic(ErrorCode error, std::string message) {
  return {error, std::move(message)};
}

// Kafka's validateNewTopicNames: a name that differs from an existing one
// only by '.' against '_' is INVALID_TOPIC_EXCEPTION. Asked before anything
// else about the topic, and again when validating or creating it failed (a
// colliding topic another request created meanwhile).
std::optional<TopicOutcome> Collision(const HandlerEnv& env, const std::string& name) {
  std::optional<std::string> other = env.topics.CollidingTopic(name);
  if (!other) return std::nullopt;
  return FailTopic(ErrorCode::kInvalidTopicException,
                   TopicRegistry::CollisionMessage(name, *other));
}

// Partition count from NumPartitions / Assignments, or an error (§3.7).
TopicOutcome ResolvePartitions(const HandlerEnv& env, const CreateTopicsRequest::Topic& topic,
                               int32_t* partitions) {
  if (!topic.assignments.empty()) {
    if (topic.num_partitions != -1 || topic.replication_factor != -1) {
      return FailTopic(ErrorCode::kInvalidRequest,
                       "both numPartitions or replicationFactor and replicasAssignments were set");
    }
    // Kafka's ReplicationControlManager.validateManualPartitionAssignment.
    for (const auto& a : topic.assignments) {
      if (a.broker_ids.empty()) {
        return FailTopic(ErrorCode::kInvalidReplicaAssignment,
                         "The manual partition assignment includes an empty replica list.");
      }
      for (int32_t id : a.broker_ids) {
        if (id != env.ctx.node_id) {
          return FailTopic(ErrorCode::kInvalidReplicaAssignment,
                           "The manual partition assignment includes broker " + std::to_string(id) +
                               ", but no such broker is registered.");
        }
      }
      if (a.broker_ids.size() > 1) {
        return FailTopic(ErrorCode::kInvalidReplicaAssignment,
                         "The manual partition assignment includes the broker " +
                             std::to_string(env.ctx.node_id) + " more than once.");
      }
    }
    *partitions = int32_t(topic.assignments.size());
    return {};
  }
  if (topic.replication_factor != -1 && topic.replication_factor != 1) {
    return FailTopic(ErrorCode::kInvalidReplicationFactor,
                     "replication factor " + std::to_string(topic.replication_factor) +
                         " is larger than the 1 available broker");
  }
  if (topic.num_partitions == -1) {
    *partitions = env.ctx.num_partitions;
  } else if (topic.num_partitions <= 0) {
    return FailTopic(ErrorCode::kInvalidPartitions,
                     "Number of partitions was set to an invalid non-positive value.");
  } else {
    *partitions = topic.num_partitions;
  }
  return {};
}

// `budget`: the new partitions the request may still make
// (kMaxNewPartitionsPerRequest), less this topic's when it is made.
TopicOutcome CreateOne(HandlerEnv& env, const CreateTopicsRequest::Topic& topic, bool validate_only,
                       int64_t* budget) {
  if (Status name = ValidateTopicName(topic.name); !name.ok()) {
    return FailTopic(ErrorCode::kInvalidTopicException, name.message());
  }
  if (IsInternalTopic(topic.name)) {
    return FailTopic(ErrorCode::kInvalidRequest, "topic " + topic.name + " is reserved");
  }
  if (env.topics.Find(topic.name)) {
    return FailTopic(ErrorCode::kTopicAlreadyExists, "topic '" + topic.name + "' already exists");
  }
  if (std::optional<TopicOutcome> collision = Collision(env, topic.name)) return *collision;
  int32_t partitions = 0;
  TopicOutcome resolved = ResolvePartitions(env, topic, &partitions);
  if (resolved.error != ErrorCode::kNone) return resolved;
  if (partitions > *budget) return FailTopic(ErrorCode::kPolicyViolation, kExcessiveBatchMessage);
  TopicOutcome done;
  done.partitions = partitions;
  TopicOverrides overrides;
  for (const auto& c : topic.configs) {
    if (!c.value) return FailTopic(ErrorCode::kInvalidConfig, "null value for config " + c.name);
    overrides[c.name] = *c.value;
  }
  done.overrides = overrides;
  Result<LogConfig> valid = env.topics.ValidateCreate(topic.name, partitions, overrides);
  if (!valid.ok()) {
    if (std::optional<TopicOutcome> collision = Collision(env, topic.name)) return *collision;
    const StatusCode code = valid.status().code();
    return FailTopic(code == StatusCode::kAlreadyExists ? ErrorCode::kTopicAlreadyExists
                                                        : ErrorCode::kInvalidConfig,
                     valid.status().message());
  }
  *budget -= partitions;
  if (validate_only) return done;
  Result<TopicInfo> created = env.topics.Create(topic.name, partitions, overrides);
  if (!created.ok()) {
    if (std::optional<TopicOutcome> collision = Collision(env, topic.name)) return *collision;
    return FailTopic(created.status().IsIoError() ? ErrorCode::kKafkaStorageError
                                                  : ErrorCode::kUnknownServerError,
                     created.status().message());
  }
  done.id = created->id;
  return done;
}

void Describe(const HandlerEnv& env, const TopicOutcome& outcome, CreateTopicsResponse::Topic* t) {
  t->topic_id = outcome.id.bytes();
  t->num_partitions = outcome.partitions;
  t->replication_factor = 1;
  t->configs.emplace();
  for (SourcedTopicConfig& c :
       DescribeTopicConfigSources(env.ctx.config.log, outcome.overrides, env.ctx.config.given)) {
    CreateTopicsResponse::Config config;
    config.name = std::move(c.name);
    config.value = std::move(c.value);
    config.config_source = int8_t(c.source);
    t->configs->push_back(std::move(config));
  }
}

}  // namespace

void HandleCreateTopics(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                        const Respond& respond) {
  Result<CreateTopicsRequest> request = DecodeCreateTopicsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  std::map<std::string, int> count;
  for (const auto& topic : request->topics) count[topic.name]++;
  CreateTopicsResponse response;
  int64_t budget = kMaxNewPartitionsPerRequest;
  for (const auto& topic : request->topics) {
    // A name given twice gets one answer, as Kafka's ControllerApis gives.
    if (count[topic.name] > 1) {
      count[topic.name] = -1;
      CreateTopicsResponse::Topic t;
      t.name = topic.name;
      t.error_code = ErrorCode::kInvalidRequest;
      t.error_message = "Duplicate topic name.";
      response.topics.push_back(std::move(t));
      continue;
    }
    if (count[topic.name] < 0) continue;
    TopicOutcome outcome = CreateOne(env, topic, request->validate_only, &budget);
    CreateTopicsResponse::Topic t;
    t.name = topic.name;
    t.error_code = outcome.error;
    if (outcome.error != ErrorCode::kNone) {
      t.error_message = outcome.message;
    } else if (header.api_version >= 5) {
      Describe(env, outcome, &t);
    }
    response.topics.push_back(std::move(t));
  }
  respond(EncodeResponseFrame(env, header, response, EncodeCreateTopicsResponse), false);
}

}  // namespace daruma::broker
