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
  DARUMA_RETURN_IF_ERROR(ReadInt(props, "fetch.max.bytes", 0, &ctx->fetch_max_bytes));
  GroupCoordinatorConfig& g = ctx->groups;
  DARUMA_RETURN_IF_ERROR(
      ReadInt(props, "group.min.session.timeout.ms", 0, &g.min_session_timeout_ms));
  DARUMA_RETURN_IF_ERROR(
      ReadInt(props, "group.max.session.timeout.ms", 0, &g.max_session_timeout_ms));
  DARUMA_RETURN_IF_ERROR(
      ReadInt(props, "group.initial.rebalance.delay.ms", 0, &g.initial_rebalance_delay_ms));
  DARUMA_RETURN_IF_ERROR(ReadInt(props, "group.max.size", 1, &g.max_size));
  DARUMA_RETURN_IF_ERROR(ReadInt(props, "offsets.topic.num.partitions", 1, &g.offsets_partitions));
  DARUMA_RETURN_IF_ERROR(
      ReadInt(props, "offsets.topic.segment.bytes", 1, &ctx->offsets_topic_segment_bytes));
  DARUMA_RETURN_IF_ERROR(
      ReadInt(props, "offset.metadata.max.bytes", 0, &g.offset_metadata_max_bytes));
  int32_t retention_minutes = int32_t(g.offsets_retention_ms / 60000);
  DARUMA_RETURN_IF_ERROR(ReadInt(props, "offsets.retention.minutes", 1, &retention_minutes));
  g.offsets_retention_ms = int64_t(retention_minutes) * 60000;
  int32_t check_ms = int32_t(g.retention_check_interval_ms);
  DARUMA_RETURN_IF_ERROR(ReadInt(props, "offsets.retention.check.interval.ms", 1, &check_ms));
  g.retention_check_interval_ms = check_ms;
  TransactionCoordinatorConfig& t = ctx->transactions;
  DARUMA_RETURN_IF_ERROR(ReadInt(props, "transaction.max.timeout.ms", 1, &t.max_timeout_ms));
  DARUMA_RETURN_IF_ERROR(
      ReadInt(props, "transaction.state.log.num.partitions", 1, &t.state_log_partitions));
  DARUMA_RETURN_IF_ERROR(ReadInt(props, "transaction.state.log.segment.bytes", 1,
                                 &ctx->transaction_state_segment_bytes));
  int32_t abort_ms = int32_t(t.abort_check_interval_ms);
  DARUMA_RETURN_IF_ERROR(
      ReadInt(props, "transaction.abort.timed.out.transaction.cleanup.interval.ms", 1, &abort_ms));
  t.abort_check_interval_ms = abort_ms;
  int32_t expiration_ms = int32_t(t.id_expiration_ms);
  DARUMA_RETURN_IF_ERROR(ReadInt(props, "transactional.id.expiration.ms", 1, &expiration_ms));
  t.id_expiration_ms = expiration_ms;
  int32_t expiration_check_ms = int32_t(t.id_expiration_check_interval_ms);
  DARUMA_RETURN_IF_ERROR(ReadInt(props,
                                 "transaction.remove.expired.transaction.cleanup.interval.ms", 1,
                                 &expiration_check_ms));
  t.id_expiration_check_interval_ms = expiration_check_ms;
  if (g.min_session_timeout_ms > g.max_session_timeout_ms) {
    return Bad("group.min.session.timeout.ms", std::to_string(g.min_session_timeout_ms),
               "larger than group.max.session.timeout.ms");
  }
  return Status::Ok();
}

}  // namespace daruma::broker
