// The broker's configs as DescribeConfigs reports them (resource type
// BROKER), and the broker configs behind each topic config (its synonyms).
//
// Kafka lists every broker config with its value and where that value comes
// from: STATIC_BROKER_CONFIG when server.properties sets it, DEFAULT_CONFIG
// otherwise (with the value null where Kafka's default is none, say
// log.retention.ms). Daruma changes no broker config at runtime, so there
// are no dynamic sources and every entry is read-only. Secrets (passwords,
// JAAS configs, keys) are listed with a null value and is_sensitive set, as
// Kafka does, so they never leave the process.
//
// The values are what server.properties (and `--set`) gave, else Kafka's
// default: Daruma's own defaults are Kafka's for every key it reads, which
// broker_configs_test checks for the log-level ones against LogConfig.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/messages.h"
#include "recovery/server_config.h"

namespace daruma::broker {

// One broker config as DescribeConfigs lists it.
struct DescribedBrokerConfig {
  std::string name;
  std::optional<std::string> value;  // null: no value (or a secret)
  ConfigSource source = ConfigSource::kDefaultConfig;
  ConfigType type = ConfigType::kString;
  bool sensitive = false;
};

// Every broker config Kafka describes by default, plus any other key
// `given` sets (a Kafka key outside the table, a daruma.* key), sorted by
// name. `given` is the server config's keys as given (ServerConfig::given).
std::vector<DescribedBrokerConfig> DescribeBrokerConfigs(const PropertyMap& given);

// Kafka's default of broker config `name` (nullopt: none, or not in the
// table).
std::optional<std::string_view> BrokerConfigDefault(std::string_view name);

// The broker configs topic config `name` falls back to, in Kafka's order of
// precedence (retention.ms: log.retention.ms, log.retention.minutes,
// log.retention.hours); empty for a name with none.
std::vector<std::string_view> BrokerSynonymsOf(std::string_view topic_config);

// A topic config's synonyms as DescribeConfigs v1+ lists them, most
// precedent first: the topic's own override (if `source` is TOPIC_CONFIG),
// each broker synonym server.properties sets, then the default of the first
// synonym that has one.
std::vector<DescribeConfigsResponse::Synonym> TopicConfigSynonyms(const std::string& name,
                                                                  const std::string& value,
                                                                  ConfigSource source,
                                                                  const PropertyMap& given);

// Whether server.properties sets any broker synonym of topic config `name`
// (its source is then STATIC_BROKER_CONFIG, whatever the value).
bool BrokerSetsSynonymOf(std::string_view topic_config, const PropertyMap& given);

}  // namespace daruma::broker
