// DescribeConfigs (spec §3.9): topic configs with Kafka's names, values and
// sources (TOPIC_CONFIG for an override, STATIC_BROKER_CONFIG where
// server.properties changed the broker default, DEFAULT_CONFIG otherwise),
// and the handful of broker settings this node honours.
#include <set>

#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

using Config = DescribeConfigsResponse::Config;
using ResourceResult = DescribeConfigsResponse::ResourceResult;

Config MakeConfig(std::string name, std::string value, ConfigSource source, ConfigType type,
                  bool read_only, bool synonyms) {
  Config c;
  c.config_type = int8_t(type);
  c.name = std::move(name);
  c.value = std::move(value);
  c.read_only = read_only;
  c.is_default = source == ConfigSource::kDefaultConfig;
  c.config_source = int8_t(source);
  if (synonyms) c.synonyms.push_back({c.name, c.value, c.config_source});
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
  for (SourcedTopicConfig& e : DescribeTopicConfigSources(env.ctx.config.log, info->overrides)) {
    if (!Wanted(r, e.name)) continue;
    out->configs.push_back(
        MakeConfig(std::move(e.name), std::move(e.value), e.source, e.type, false, synonyms));
  }
}

void DescribeBroker(HandlerEnv& env, const DescribeConfigsRequest::Resource& r, bool synonyms,
                    ResourceResult* out) {
  if (!r.resource_name.empty() && r.resource_name != std::to_string(env.ctx.node_id)) {
    out->error_code = ErrorCode::kInvalidRequest;
    out->error_message = "unexpected broker id " + r.resource_name;
    return;
  }
  const BrokerContext& c = env.ctx;
  const BrokerContext kafka;  // Kafka's defaults
  auto add = [&](const std::string& name, const std::string& value, const std::string& def,
                 ConfigType type) {
    if (!Wanted(r, name)) return;
    ConfigSource source =
        value == def ? ConfigSource::kDefaultConfig : ConfigSource::kStaticBrokerConfig;
    out->configs.push_back(MakeConfig(name, value, source, type, true, synonyms));
  };
  auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  add("auto.create.topics.enable", flag(c.auto_create_topics_enable),
      flag(kafka.auto_create_topics_enable), ConfigType::kBoolean);
  add("delete.topic.enable", flag(c.delete_topic_enable), flag(kafka.delete_topic_enable),
      ConfigType::kBoolean);
  add("fetch.max.bytes", std::to_string(c.fetch_max_bytes), std::to_string(kafka.fetch_max_bytes),
      ConfigType::kInt);
  add("message.max.bytes", std::to_string(c.config.log.max_message_bytes),
      std::to_string(LogConfig{}.max_message_bytes), ConfigType::kInt);
  add("num.partitions", std::to_string(c.num_partitions), std::to_string(kafka.num_partitions),
      ConfigType::kInt);
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
