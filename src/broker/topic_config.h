// Topic configs: Kafka's topic-level config names (the `Configs` of
// CreateTopics, the entries of DescribeConfigs) mapped onto LogConfig.
//
// A topic's effective LogConfig is the broker default (ServerConfig::log, from
// the broker's `log.*` properties) with the topic's overrides applied. Values
// are parsed strictly, as Kafka's ConfigDef does: the whole value must parse
// and lie in Kafka's range; otherwise kInvalidArgument naming the config and
// the value (CreateTopics answers INVALID_CONFIG with that message).
//
// Accepted but not acted on by the log engine (kept and described, so a
// client that sets them sees them back): compression.type (Daruma stores the
// producer's batches as received, i.e. `producer`), min.insync.replicas (only
// 1 is accepted: one node can never have more in-sync replicas).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "log/log_config.h"
#include "protocol/messages.h"
#include "recovery/server_config.h"

namespace daruma::broker {

// Topic config name -> value as given by the client.
using TopicOverrides = std::map<std::string, std::string>;

// One config as DescribeConfigs reports it.
struct TopicConfigEntry {
  std::string name;
  std::string value;
  bool is_default = true;  // false when the topic overrides it (source TOPIC_CONFIG)
};

// Applies `overrides` to `defaults`. kInvalidArgument for an unknown name or a
// bad value, naming both.
Result<LogConfig> ApplyTopicOverrides(const LogConfig& defaults, const TopicOverrides& overrides);

// Every known topic config, sorted by name, with the effective value: the
// override text where there is one, else the default rendered as Kafka does.
std::vector<TopicConfigEntry> DescribeTopicConfigs(const LogConfig& defaults,
                                                   const TopicOverrides& overrides);

bool IsKnownTopicConfig(std::string_view name);

// A topic config as DescribeConfigs and CreateTopics v5+ report it.
struct SourcedTopicConfig {
  std::string name;
  std::string value;
  // TOPIC_CONFIG for an override, STATIC_BROKER_CONFIG where the broker's
  // default (server.properties) differs from Kafka's, else DEFAULT_CONFIG.
  ConfigSource source = ConfigSource::kDefaultConfig;
  ConfigType type = ConfigType::kString;  // Kafka's ConfigDef type of the name
};
// Every known topic config, sorted by name, with its source and type;
// `broker_defaults` is the broker's configured LogConfig, `given` the keys
// its server.properties sets (ServerConfig::given): a config whose broker
// synonym is set there is STATIC_BROKER_CONFIG even at Kafka's default
// value, as Kafka names it.
std::vector<SourcedTopicConfig> DescribeTopicConfigSources(const LogConfig& broker_defaults,
                                                           const TopicOverrides& overrides,
                                                           const PropertyMap& given = {});

}  // namespace daruma::broker
