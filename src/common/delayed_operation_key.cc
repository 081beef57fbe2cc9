#include "common/delayed_operation_key.h"

#include <fmt/format.h>

#include <functional>

namespace daruma {

const char* DelayedOperationKindName(DelayedOperationKind kind) {
  switch (kind) {
    case DelayedOperationKind::kFetchPartition:
      return "fetch_partition";
    case DelayedOperationKind::kFetchClient:
      return "fetch_client";
    case DelayedOperationKind::kGroupJoin:
      return "group_join";
    case DelayedOperationKind::kGroupSync:
      return "group_sync";
    case DelayedOperationKind::kMemberHeartbeat:
      return "member_heartbeat";
    case DelayedOperationKind::kPendingMember:
      return "pending_member";
  }
  return "unknown";
}

DelayedOperationKey DelayedOperationKey::FetchPartition(std::string topic, int32_t partition) {
  return {DelayedOperationKind::kFetchPartition, std::move(topic), "", partition};
}

DelayedOperationKey DelayedOperationKey::FetchClient(uint64_t client_id) {
  return {DelayedOperationKind::kFetchClient, "", "", int64_t(client_id)};
}

DelayedOperationKey DelayedOperationKey::GroupJoin(std::string group_id) {
  return {DelayedOperationKind::kGroupJoin, std::move(group_id), "", 0};
}

DelayedOperationKey DelayedOperationKey::GroupSync(std::string group_id) {
  return {DelayedOperationKind::kGroupSync, std::move(group_id), "", 0};
}

DelayedOperationKey DelayedOperationKey::MemberHeartbeat(std::string group_id,
                                                         std::string member_id) {
  return {DelayedOperationKind::kMemberHeartbeat, std::move(group_id), std::move(member_id), 0};
}

DelayedOperationKey DelayedOperationKey::PendingMember(std::string group_id,
                                                       std::string member_id) {
  return {DelayedOperationKind::kPendingMember, std::move(group_id), std::move(member_id), 0};
}

std::string DelayedOperationKey::ToString() const {
  const char* kind_name = DelayedOperationKindName(kind);
  switch (kind) {
    case DelayedOperationKind::kFetchPartition:
      return fmt::format("{}:{}-{}", kind_name, name, number);
    case DelayedOperationKind::kFetchClient:
      return fmt::format("{}:{}", kind_name, number);
    case DelayedOperationKind::kGroupJoin:
    case DelayedOperationKind::kGroupSync:
      return fmt::format("{}:{}", kind_name, name);
    case DelayedOperationKind::kMemberHeartbeat:
    case DelayedOperationKind::kPendingMember:
      return fmt::format("{}:{}-{}", kind_name, name, member);
  }
  return kind_name;
}

size_t DelayedOperationKeyHash::operator()(const DelayedOperationKey& key) const {
  // boost::hash_combine's mixing step over the four fields.
  size_t h = std::hash<int>()(int(key.kind));
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(std::hash<std::string>()(key.name));
  mix(std::hash<std::string>()(key.member));
  mix(std::hash<int64_t>()(key.number));
  return h;
}

}  // namespace daruma
