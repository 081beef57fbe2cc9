// Metadata (spec §3.2): one broker (this node), leader = replicas = ISR = us
// (a partition that is not served, its log dir offline: no leader, this node
// an offline replica, LEADER_NOT_AVAILABLE), and auto-creation of explicitly requested topics. From
// v10 every topic carries its id (partition.metadata); from v12 a topic may be asked for by id
// alone (an unknown id: UNKNOWN_TOPIC_ID, as Kafka answers).
#include <set>

#include "broker/api_handlers.h"
#include "log/leader_epoch.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

MetadataResponse::Topic DescribeTopic(const HandlerEnv& env, const TopicInfo& info) {
  MetadataResponse::Topic t;
  t.name = info.name;
  t.topic_id = info.id.bytes();
  t.is_internal = IsInternalTopic(info.name);
  for (int32_t p = 0; p < info.partitions; ++p) {
    MetadataResponse::Partition part;
    part.partition_index = p;
    part.replica_nodes = {env.ctx.node_id};
    ErrorCode served = ErrorCode::kNone;
    Log* log = env.topics.ServedLog({info.name, p}, &served);
    if (served == ErrorCode::kKafkaStorageError) {
      // Its only replica is offline (not loaded, or its log dir failed): as
      // Kafka describes a partition whose leader is gone, so clients wait and
      // retry rather than send it requests.
      part.error_code = ErrorCode::kLeaderNotAvailable;
      part.leader_id = -1;
      part.offline_replicas = {env.ctx.node_id};
    } else {
      part.leader_id = env.ctx.node_id;
      part.isr_nodes = {env.ctx.node_id};
      if (log != nullptr) part.leader_epoch = LeaderEpochOf(*log);
    }
    t.partitions.push_back(std::move(part));
  }
  return t;
}

// A requested topic: described, auto-created, or an error entry.
MetadataResponse::Topic LookUpTopic(HandlerEnv& env, const std::string& name, bool may_create) {
  if (auto info = env.topics.Find(name)) return DescribeTopic(env, *info);
  MetadataResponse::Topic t;
  t.name = name;
  if (!ValidateTopicName(name).ok()) {
    t.error_code = ErrorCode::kInvalidTopicException;
    return t;
  }
  t.error_code = ErrorCode::kUnknownTopicOrPartition;
  if (!may_create || IsInternalTopic(name)) return t;
  // Created synchronously, so the client gets partitions at once (§3.2).
  Result<TopicInfo> created = env.topics.Create(name, env.ctx.num_partitions, {});
  if (created.ok()) return DescribeTopic(env, *created);
  if (auto info = env.topics.Find(name)) return DescribeTopic(env, *info);
  t.error_code = env.topics.CollidingTopic(name) ? ErrorCode::kInvalidTopicException
                                                 : ErrorCode::kLeaderNotAvailable;
  return t;
}

// Kafka refuses names left null and ids given before v12 (topic ids in
// requests came with v12): every requested topic gets INVALID_REQUEST and the
// response lists no broker, as Kafka's error response for the request does.
bool RefuseIds(const MetadataRequest& request, int16_t version, MetadataResponse* response) {
  if (version >= 12 || !request.topics) return false;
  bool refused = false;
  for (const MetadataRequest::Topic& topic : *request.topics) {
    refused = refused || !topic.name || topic.topic_id != WireUuid{};
  }
  if (!refused) return false;
  for (const MetadataRequest::Topic& topic : *request.topics) {
    MetadataResponse::Topic t;
    t.name = topic.name.value_or("");
    t.topic_id = topic.topic_id;
    t.error_code = ErrorCode::kInvalidRequest;
    response->topics.push_back(std::move(t));
  }
  return true;
}

MetadataResponse::Topic LookUpTopicId(HandlerEnv& env, const WireUuid& id) {
  if (auto info = env.topics.FindById(Uuid(id))) return DescribeTopic(env, *info);
  MetadataResponse::Topic t;
  t.name = std::nullopt;
  t.topic_id = id;
  t.error_code = ErrorCode::kUnknownTopicId;
  return t;
}

}  // namespace

void HandleMetadata(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                    const Respond& respond) {
  Result<MetadataRequest> request = DecodeMetadataRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  MetadataResponse response;
  if (RefuseIds(*request, header.api_version, &response)) {
    return respond(EncodeResponseFrame(env, header, response, EncodeMetadataResponse), false);
  }
  response.brokers.push_back({env.ctx.node_id, env.ctx.host, env.ctx.port, std::nullopt});
  response.cluster_id = env.ctx.cluster_id;
  response.controller_id = env.ctx.node_id;
  if (!request->topics) {
    for (const TopicInfo& info : env.topics.All()) {
      response.topics.push_back(DescribeTopic(env, info));
    }
  } else {
    const bool may_create = env.ctx.auto_create_topics_enable &&
                            (header.api_version < 4 || request->allow_auto_topic_creation);
    std::set<std::string> seen;
    std::set<WireUuid> seen_ids;
    for (const MetadataRequest::Topic& topic : *request->topics) {
      if (!topic.name) {  // by id (v12+; RefuseIds turned earlier versions away)
        if (seen_ids.insert(topic.topic_id).second) {
          response.topics.push_back(LookUpTopicId(env, topic.topic_id));
        }
        continue;
      }
      if (!seen.insert(*topic.name).second) continue;
      response.topics.push_back(LookUpTopic(env, *topic.name, may_create));
    }
  }
  respond(EncodeResponseFrame(env, header, response, EncodeMetadataResponse), false);
}

}  // namespace daruma::broker
