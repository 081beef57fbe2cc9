#include "broker/broker_context.h"

#include <charconv>
#include <limits>
#include <string_view>

namespace daruma::broker {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Status Bad(const std::string& key, const std::string& value, const std::string& why) {
  return Status::InvalidArgument("invalid value \"" + value + "\" for " + key + ": " + why);
}

Status ReadInt(const PropertyMap& props, const std::string& key, int32_t min, int32_t* out) {
  auto it = props.find(key);
  if (it == props.end()) return Status::Ok();
  std::string_view v = Trim(it->second);
  int32_t parsed = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
  if (ec != std::errc() || end != v.data() + v.size()) {
    return Bad(key, it->second, "expected an integer");
  }
  if (parsed < min) return Bad(key, it->second, "expected at least " + std::to_string(min));
  *out = parsed;
  return Status::Ok();
}

Status ReadBool(const PropertyMap& props, const std::string& key, bool* out) {
  auto it = props.find(key);
  if (it == props.end()) return Status::Ok();
  std::string_view v = Trim(it->second);
  if (v != "true" && v != "false") return Bad(key, it->second, "expected true or false");
  *out = v == "true";
  return Status::Ok();
}

}  // namespace

Status ResolveBrokerSettings(BrokerContext* ctx) {
  const PropertyMap& props = ctx->config.other;
  // Kafka: node.id (KRaft) wins over broker.id (ZooKeeper mode).
  DARUMA_RETURN_IF_ERROR(ReadInt(props, "broker.id", 0, &ctx->node_id));
  DARUMA_RETURN_IF_ERROR(ReadInt(props, "node.id", 0, &ctx->node_id));
  if (auto rack = props.find("broker.rack"); rack != props.end()) {
    ctx->rack = std::string(Trim(rack->second));
  }
  DARUMA_RETURN_IF_ERROR(
      ReadBool(props, "auto.create.topics.enable", &ctx->auto_create_topics_enable));
  DARUMA_RETURN_IF_ERROR(ReadInt(props, "num.partitions", 1, &ctx->num_partitions));
  DARUMA_RETURN_IF_ERROR(ReadBool(props, "delete.topic.enable", &ctx->delete_topic_enable));
  return ReadInt(props, "fetch.max.bytes", 0, &ctx->fetch_max_bytes);
}

}  // namespace daruma::broker
