// DescribeConfigs (spec §3.9): topic configs with Kafka's names, values and
// sources (TOPIC_CONFIG for an override, STATIC_BROKER_CONFIG where
// server.properties sets a broker synonym or changed the broker default,
// DEFAULT_CONFIG otherwise) and, from v1, their synonyms down to Kafka's
// default; and every broker config as Kafka lists it (broker_configs.h).
#include "broker/api_handlers.h"
#include "broker/broker_configs.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

using Config = DescribeConfigsResponse::Config;
using ResourceResult = DescribeConfigsResponse::ResourceResult;

Config MakeConfig(std::string name, std::optional<std::string> value, ConfigSource source,
                  ConfigType type, bool read_only) {
  Config c;
  c.config_type = int8_t(type);
  c.name = std::move(name);
  c.value = std::move(value);
  c.read_only = read_only;
  c.is_default = source == ConfigSource::kDefaultConfig;
  c.config_source = int8_t(source);
  return c;
}

bool Wanted(const DescribeConfigsRequest::Resource& r, const std::string& name) {
  if (!r.configuration_keys) return true;
  for (const std::string& k : *r.configuration_keys) {
    if (k == name) return true;
  }
  return false;
}

void DescribeTopic(HandlerEnv& env, const DescribeConfigsRequest::Resource& r, bool synonyms,
                   ResourceResult* out) {
  std::optional<TopicInfo> info = env.topics.Find(r.resource_name);
  if (!info) {
    out->error_code = ErrorCode::kUnknownTopicOrPartition;
    out->error_message = "unknown topic " + r.resource_name;
    return;
  }
  const PropertyMap& given = env.ctx.config.given;
  for (SourcedTopicConfig& e :
       DescribeTopicConfigSources(env.ctx.config.log, info->overrides, given)) {
    if (!Wanted(r, e.name)) continue;
    Config c = MakeConfig(e.name, e.value, e.source, e.type, false);
    if (synonyms) c.synonyms = TopicConfigSynonyms(e.name, e.value, e.source, given);
    out->configs.push_back(std::move(c));
  }
}

void DescribeBroker(HandlerEnv& env, const DescribeConfigsRequest::Resource& r, bool synonyms,
                    ResourceResult* out) {
  if (!r.resource_name.empty() && r.resource_name != std::to_string(env.ctx.node_id)) {
    out->error_code = ErrorCode::kInvalidRequest;
    out->error_message = "unexpected broker id " + r.resource_name;
    return;
  }
  for (DescribedBrokerConfig& e : DescribeBrokerConfigs(env.ctx.config.given)) {
    if (!Wanted(r, e.name)) continue;
    // The id this node runs as (meta.properties' or the default's), not
    // Kafka's -1 for an unset key.
    if ((e.name == "node.id" || e.name == "broker.id") &&
        e.source == ConfigSource::kDefaultConfig) {
      e.value = std::to_string(env.ctx.node_id);
    }
    // No broker config changes at runtime: every one is read-only.
    Config c = MakeConfig(std::move(e.name), std::move(e.value), e.source, e.type, true);
    c.is_sensitive = e.sensitive;
    if (synonyms) c.synonyms.push_back({c.name, c.value, c.config_source});
    out->configs.push_back(std::move(c));
  }
}

}  // namespace

void HandleDescribeConfigs(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                           const Respond& respond) {
  Result<DescribeConfigsRequest> request = DecodeDescribeConfigsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  const bool synonyms = header.api_version >= 1 && request->include_synonyms;
  DescribeConfigsResponse response;
  for (const auto& r : request->resources) {
    ResourceResult out;
    out.resource_type = r.resource_type;
    out.resource_name = r.resource_name;
    if (r.resource_type == kResourceTypeTopic) {
      DescribeTopic(env, r, synonyms, &out);
    } else if (r.resource_type == kResourceTypeBroker) {
      DescribeBroker(env, r, synonyms, &out);
    } else {
      out.error_code = ErrorCode::kInvalidRequest;
      out.error_message = "unsupported resource type " + std::to_string(r.resource_type);
    }
    response.results.push_back(std::move(out));
  }
  respond(EncodeResponseFrame(env, header, response, EncodeDescribeConfigsResponse), false);
}

}  // namespace daruma::broker
