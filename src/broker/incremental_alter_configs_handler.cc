// IncrementalAlterConfigs (KIP-339): each config is an operation on the
// resource's current overrides:
//   SET (0)       the key's override becomes the value
//   DELETE (1)    the key's override is dropped (back to the broker default);
//                 its value may be null
//   APPEND (2)    list configs only: the value's comma-separated items not
//                 yet in the current list are added at its end
//   SUBTRACT (3)  list configs only: the value's items are removed
// The current list is the override, else the topic's effective value (the
// broker default). APPEND or SUBTRACT on a key that is not a list is
// INVALID_CONFIG ("Can't APPEND to key k because its type is not LIST."), as
// Kafka's controller answers; an unknown operation is INVALID_REQUEST. The
// result is validated and persisted as a whole (config_alteration.h, which
// also lists the other errors). BROKER_LOGGER (8) resources name log4j
// loggers, which Daruma does not have: every named logger is INVALID_CONFIG
// ("Logger x does not exist!"); an empty one is a no-op.
#include <algorithm>
#include <array>
#include <sstream>

#include "broker/api_handlers.h"
#include "broker/config_alteration.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

constexpr int8_t kOpSet = 0;
constexpr int8_t kOpDelete = 1;
constexpr int8_t kOpAppend = 2;
constexpr int8_t kOpSubtract = 3;
constexpr int8_t kResourceTypeBrokerLogger = 8;

// Kafka's topic configs of type LIST.
constexpr std::array<std::string_view, 3> kListTopicConfigs = {
    "cleanup.policy", "follower.replication.throttled.replicas",
    "leader.replication.throttled.replicas"};

std::vector<std::string> SplitList(const std::string& value) {
  std::vector<std::string> items;
  std::stringstream in(value);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

std::string JoinList(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

// The current value of `key` for the list operations: the override, else
// the effective (default) value.
std::string CurrentValue(const HandlerEnv& env, const TopicOverrides& overrides,
                         const std::string& key) {
  if (auto it = overrides.find(key); it != overrides.end()) return it->second;
  for (const TopicConfigEntry& e : DescribeTopicConfigs(env.ctx.config.log, overrides)) {
    if (e.name == key) return e.value;
  }
  return "";
}

// One operation on *overrides. kInvalidArgument (INVALID_CONFIG) for a list
// operation on a key that is not a list.
Status Apply(const HandlerEnv& env, const IncrementalAlterConfigsRequest::Config& c,
             TopicOverrides* overrides) {
  switch (c.config_operation) {
    case kOpSet:
      (*overrides)[c.name] = *c.value;
      return Status::Ok();
    case kOpDelete:
      overrides->erase(c.name);
      return Status::Ok();
    case kOpAppend:
    case kOpSubtract: {
      const bool append = c.config_operation == kOpAppend;
      if (std::find(kListTopicConfigs.begin(), kListTopicConfigs.end(), c.name) ==
          kListTopicConfigs.end()) {
        return Status::InvalidArgument(std::string("Can't ") + (append ? "APPEND" : "SUBTRACT") +
                                       " to key " + c.name + " because its type is not LIST.");
      }
      std::vector<std::string> items = SplitList(CurrentValue(env, *overrides, c.name));
      for (const std::string& item : SplitList(*c.value)) {
        auto at = std::find(items.begin(), items.end(), item);
        if (append && at == items.end()) items.push_back(item);
        if (!append && at != items.end()) items.erase(at);
      }
      (*overrides)[c.name] = JoinList(items);
      return Status::Ok();
    }
    default:  // AlterOne refuses unknown operations first
      return Status::InvalidArgument("Unknown operations type " +
                                     std::to_string(int(c.config_operation)));
  }
}

AlterOutcome AlterOne(HandlerEnv& env, const IncrementalAlterConfigsRequest::Resource& r,
                      bool validate_only) {
  std::vector<std::string> keys;
  std::vector<std::string> null_values;
  for (const auto& c : r.configs) {
    keys.push_back(c.name);
    if (!c.value && c.config_operation != kOpDelete) null_values.push_back(c.name);
  }
  if (auto bad = CheckConfigKeys(keys, null_values)) return *bad;
  for (const auto& c : r.configs) {
    if (c.config_operation < kOpSet || c.config_operation > kOpSubtract) {
      return AlterFailure(ErrorCode::kInvalidRequest,
                          "Unknown operations type " + std::to_string(int(c.config_operation)));
    }
  }
  if (r.resource_type == kResourceTypeBroker) return AlterBrokerConfigs(env, r.resource_name, keys);
  if (r.resource_type == kResourceTypeBrokerLogger) {
    if (keys.empty()) return {};
    return AlterFailure(ErrorCode::kInvalidConfig, "Logger " + keys.front() + " does not exist!");
  }
  if (r.resource_type != kResourceTypeTopic) return UnknownResourceType(r.resource_type);
  auto edit = [&](const TopicOverrides& current) -> Result<TopicOverrides> {
    TopicOverrides overrides = current;
    for (const auto& c : r.configs) DARUMA_RETURN_IF_ERROR(Apply(env, c, &overrides));
    return overrides;
  };
  return EditTopicOverrides(env, r.resource_name, edit, validate_only);
}

}  // namespace

void HandleIncrementalAlterConfigs(HandlerEnv& env, const RequestHeader& header,
                                   ProtocolReader& body, const Respond& respond) {
  Result<IncrementalAlterConfigsRequest> request =
      DecodeIncrementalAlterConfigsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  IncrementalAlterConfigsResponse response;
  AnswerEachResource(
      request->resources, [&](const auto& r) { return AlterOne(env, r, request->validate_only); },
      &response);
  respond(EncodeResponseFrame(env, header, response, EncodeIncrementalAlterConfigsResponse), false);
}

}  // namespace daruma::broker
