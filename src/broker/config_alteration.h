// What AlterConfigs and IncrementalAlterConfigs share (Kafka's
// ConfigAdminManager.preprocess on the broker, then the controller's
// ConfigurationControlManager): the checks every resource gets, the answer
// for a BROKER resource, and replacing a topic's overrides.
//
// Errors, per resource (Kafka's codes and wording):
//   the same (type, name) twice       INVALID_REQUEST "Each resource must appear at most once."
//   a config key twice                INVALID_REQUEST "Error due to duplicate config keys"
//   a null value (but DELETE)         INVALID_REQUEST "Null value not supported for : k"
//   a resource type not TOPIC/BROKER  INVALID_REQUEST "Unknown resource type N"
//   TOPIC: unknown                    UNKNOWN_TOPIC_OR_PARTITION
//   TOPIC: unknown key or bad value   INVALID_CONFIG naming key and value (the
//                                     CreateTopics validation, topic_config.h)
//   BROKER: a name not this node id   INVALID_REQUEST
//   BROKER: any key                   INVALID_REQUEST "Cannot update these configs
//                                     dynamically: Set(k, ...)"
// The last is Kafka's answer for a key that is not dynamically alterable:
// DynamicBrokerConfig.validate throws a ConfigException, which
// ConfigAdminManager turns into InvalidRequestException (KAFKA-13609 keeps it
// so for compatibility, not INVALID_CONFIG). Daruma changes no broker setting
// at runtime, so every key is such a key; an empty set is a no-op (NONE).
//
// Topic overrides are replaced as a whole (TopicRegistry::EditOverrides):
// persisted in daruma-topic-configs.json like CreateTopics overrides, applied
// to the live logs, reported by DescribeConfigs. ValidateOnly checks the same
// and changes nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "broker/api_handlers.h"
#include "broker/topic_config.h"

namespace daruma::broker {

struct AlterOutcome {
  ErrorCode error = ErrorCode::kNone;
  std::optional<std::string> message;  // null on success, as Kafka sends it
};

AlterOutcome AlterFailure(ErrorCode error, std::string message);

// The per-resource answers of AlterConfigs or IncrementalAlterConfigs (both
// answer with a `responses` array of the same fields): INVALID_REQUEST for
// every (type, name) named more than once, else alter_one(resource).
template <typename Response, typename Resource, typename AlterOne>
void AnswerEachResource(const std::vector<Resource>& resources, AlterOne alter_one,
                        Response* response) {
  std::vector<bool> duplicate(resources.size(), false);
  for (size_t i = 0; i < resources.size(); ++i) {
    for (size_t j = i + 1; j < resources.size(); ++j) {
      if (resources[i].resource_type == resources[j].resource_type &&
          resources[i].resource_name == resources[j].resource_name) {
        duplicate[i] = duplicate[j] = true;
      }
    }
  }
  for (size_t i = 0; i < resources.size(); ++i) {
    const Resource& r = resources[i];
    AlterOutcome outcome = duplicate[i] ? AlterFailure(ErrorCode::kInvalidRequest,
                                                       "Each resource must appear at most once.")
                                        : alter_one(r);
    response->responses.push_back({.error_code = outcome.error,
                                   .error_message = outcome.message,
                                   .resource_type = r.resource_type,
                                   .resource_name = r.resource_name});
  }
}

// INVALID_REQUEST when a key repeats or a key in `null_values` has a null
// value; nullopt when both are fine.
std::optional<AlterOutcome> CheckConfigKeys(const std::vector<std::string>& keys,
                                            const std::vector<std::string>& null_values);

// A BROKER resource named `name` with these keys (see above).
AlterOutcome AlterBrokerConfigs(const HandlerEnv& env, const std::string& name,
                                const std::vector<std::string>& keys);

// A TOPIC resource: its overrides become edit(current overrides), validated
// and applied unless validate_only. An edit's kInvalidArgument is
// INVALID_CONFIG with its message.
AlterOutcome EditTopicOverrides(HandlerEnv& env, const std::string& topic,
                                const TopicRegistry::OverridesEdit& edit, bool validate_only);

AlterOutcome UnknownResourceType(int8_t type);

}  // namespace daruma::broker
