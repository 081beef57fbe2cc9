#include "broker/topic_config.h"

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

}  // namespace daruma::broker
