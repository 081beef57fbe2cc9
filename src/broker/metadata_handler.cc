// Metadata (spec §3.2): one broker (this node), leader = replicas = ISR = us,
// and auto-creation of explicitly requested topics.
#include <set>

#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

MetadataResponse::Topic DescribeTopic(const HandlerEnv& env, const TopicInfo& info) {
  MetadataResponse::Topic t;
  t.name = info.name;
  t.is_internal = IsInternalTopic(info.name);
  for (int32_t p = 0; p < info.partitions; ++p) {
    MetadataResponse::Partition part;
    part.partition_index = p;
    part.leader_id = env.ctx.node_id;
    part.replica_nodes = {env.ctx.node_id};
    part.isr_nodes = {env.ctx.node_id};
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
  t.error_code = ErrorCode::kLeaderNotAvailable;
  return t;
}

}  // namespace

void HandleMetadata(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                    const Respond& respond) {
  Result<MetadataRequest> request = DecodeMetadataRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  MetadataResponse response;
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
    for (const MetadataRequest::Topic& topic : *request->topics) {
      // Named in every advertised version (null names need topic ids, v10+).
      const std::string name = topic.name.value_or("");
      if (!seen.insert(name).second) continue;
      response.topics.push_back(LookUpTopic(env, name, may_create));
    }
  }
  respond(EncodeResponseFrame(env, header, response, EncodeMetadataResponse), false);
}

}  // namespace daruma::broker
