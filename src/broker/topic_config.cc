#include "broker/topic_config.h"

#include <map>

#include "broker/broker_configs.h"
#include "log/topic_config_overrides.h"

namespace daruma::broker {

// The table of names, parsers and renderings lives in the log layer
// (log/topic_config_overrides.h), shared with the log manager that persists
// overrides; the broker adds only the DescribeConfigs view.

bool IsKnownTopicConfig(std::string_view name) {
  return IsKnownTopicConfigName(name);
}

Result<LogConfig> ApplyTopicOverrides(const LogConfig& defaults, const TopicOverrides& overrides) {
  return ApplyTopicConfigOverrides(defaults, overrides);
}

std::vector<TopicConfigEntry> DescribeTopicConfigs(const LogConfig& defaults,
                                                   const TopicOverrides& overrides) {
  std::vector<TopicConfigEntry> out;
  for (auto& [name, rendered] : RenderTopicConfigs(defaults)) {
    auto it = overrides.find(name);
    if (it != overrides.end()) {
      out.push_back({name, it->second, false});
    } else {
      out.push_back({name, std::move(rendered), true});
    }
  }
  return out;
}

namespace {

// Kafka's ConfigDef types of the topic configs (LogConfig's definitions);
// any name not listed is a string.
ConfigType TopicConfigType(std::string_view name) {
  static const std::map<std::string_view, ConfigType> kTypes = {
      {"cleanup.policy", ConfigType::kList},
      {"delete.retention.ms", ConfigType::kLong},
      {"file.delete.delay.ms", ConfigType::kLong},
      {"flush.messages", ConfigType::kLong},
      {"flush.ms", ConfigType::kLong},
      {"index.interval.bytes", ConfigType::kInt},
      {"max.compaction.lag.ms", ConfigType::kLong},
      {"max.message.bytes", ConfigType::kInt},
      {"min.cleanable.dirty.ratio", ConfigType::kDouble},
      {"min.compaction.lag.ms", ConfigType::kLong},
      {"min.insync.replicas", ConfigType::kInt},
      {"preallocate", ConfigType::kBoolean},
      {"retention.bytes", ConfigType::kLong},
      {"retention.ms", ConfigType::kLong},
      {"segment.bytes", ConfigType::kInt},
      {"segment.index.bytes", ConfigType::kInt},
      {"segment.jitter.ms", ConfigType::kLong},
      {"segment.ms", ConfigType::kLong},
  };
  auto it = kTypes.find(name);
  return it == kTypes.end() ? ConfigType::kString : it->second;
}

}  // namespace

std::vector<SourcedTopicConfig> DescribeTopicConfigSources(const LogConfig& broker_defaults,
                                                           const TopicOverrides& overrides,
                                                           const PropertyMap& given) {
  // Kafka's own defaults, to tell a server.properties value from a default.
  const std::vector<TopicConfigEntry> kafka_defaults = DescribeTopicConfigs(LogConfig{}, {});
  const std::vector<TopicConfigEntry> entries = DescribeTopicConfigs(broker_defaults, overrides);
  std::vector<SourcedTopicConfig> out;
  for (size_t i = 0; i < entries.size(); ++i) {
    const TopicConfigEntry& e = entries[i];
    ConfigSource source = ConfigSource::kTopicConfig;
    if (e.is_default) {
      source = e.value == kafka_defaults[i].value && !BrokerSetsSynonymOf(e.name, given)
                   ? ConfigSource::kDefaultConfig
                   : ConfigSource::kStaticBrokerConfig;
    }
    out.push_back({e.name, e.value, source, TopicConfigType(e.name)});
  }
  return out;
}

}  // namespace daruma::broker
