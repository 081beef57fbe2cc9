// AlterConfigs (the legacy, non-incremental form): each resource's configs
// REPLACE its whole override set, so a topic key left out returns to the
// broker default. Checks, errors and persistence: config_alteration.h.
#include "broker/api_handlers.h"
#include "broker/config_alteration.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

AlterOutcome AlterOne(HandlerEnv& env, const AlterConfigsRequest::Resource& r, bool validate_only) {
  std::vector<std::string> keys;
  std::vector<std::string> null_values;
  TopicOverrides overrides;
  for (const auto& c : r.configs) {
    keys.push_back(c.name);
    if (!c.value) {
      null_values.push_back(c.name);
    } else {
      overrides[c.name] = *c.value;
    }
  }
  if (auto bad = CheckConfigKeys(keys, null_values)) return *bad;
  if (r.resource_type == kResourceTypeBroker) return AlterBrokerConfigs(env, r.resource_name, keys);
  if (r.resource_type != kResourceTypeTopic) return UnknownResourceType(r.resource_type);
  return EditTopicOverrides(
      env, r.resource_name, [&](const TopicOverrides&) { return overrides; }, validate_only);
}

}  // namespace

void HandleAlterConfigs(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                        const Respond& respond) {
  Result<AlterConfigsRequest> request = DecodeAlterConfigsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  AlterConfigsResponse response;
  AnswerEachResource(
      request->resources, [&](const auto& r) { return AlterOne(env, r, request->validate_only); },
      &response);
  respond(EncodeResponseFrame(env, header, response, EncodeAlterConfigsResponse), false);
}

}  // namespace daruma::broker
