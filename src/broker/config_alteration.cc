#include "broker/config_alteration.h"

#include <charconv>
#include <set>

namespace daruma::broker {

AlterOutcome AlterFailure(ErrorCode error, std::string message) {
  return {error, std::move(message)};
}

std::optional<AlterOutcome> CheckConfigKeys(const std::vector<std::string>& keys,
                                            const std::vector<std::string>& null_values) {
  std::set<std::string> seen;
  for (const std::string& k : keys) {
    if (!seen.insert(k).second) {
      return AlterFailure(ErrorCode::kInvalidRequest, "Error due to duplicate config keys");
    }
  }
  if (!null_values.empty()) {
    std::string names;
    for (const std::string& k : null_values) names += (names.empty() ? "" : ", ") + k;
    return AlterFailure(ErrorCode::kInvalidRequest, "Null value not supported for : " + names);
  }
  return std::nullopt;
}

AlterOutcome AlterBrokerConfigs(const HandlerEnv& env, const std::string& name,
                                const std::vector<std::string>& keys) {
  if (!name.empty()) {
    int32_t id = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
    if (ec != std::errc() || end != name.data() + name.size()) {
      return AlterFailure(ErrorCode::kInvalidRequest,
                          "Node id must be an integer, but it is: " + name);
    }
    if (id != env.ctx.node_id) {
      return AlterFailure(ErrorCode::kInvalidRequest, "Unexpected broker id, expected " +
                                                          std::to_string(env.ctx.node_id) +
                                                          ", but received " + name);
    }
  }
  if (keys.empty()) return {};
  std::string names;
  for (const std::string& k : keys) names += (names.empty() ? "" : ", ") + k;
  return AlterFailure(ErrorCode::kInvalidRequest,
                      "Cannot update these configs dynamically: Set(" + names + ")");
}

AlterOutcome EditTopicOverrides(HandlerEnv& env, const std::string& topic,
                                const TopicRegistry::OverridesEdit& edit, bool validate_only) {
  Result<TopicInfo> edited = env.topics.EditOverrides(topic, edit, validate_only);
  if (edited.ok()) return {};
  const Status& st = edited.status();
  if (st.IsNotFound()) {
    return AlterFailure(ErrorCode::kUnknownTopicOrPartition,
                        "The topic '" + topic + "' does not exist.");
  }
  return AlterFailure(st.code() == StatusCode::kInvalidArgument ? ErrorCode::kInvalidConfig
                                                                : ErrorCode::kUnknownServerError,
                      st.message());
}

AlterOutcome UnknownResourceType(int8_t type) {
  return AlterFailure(ErrorCode::kInvalidRequest,
                      "Unknown resource type " + std::to_string(int(type)));
}

}  // namespace daruma::broker
