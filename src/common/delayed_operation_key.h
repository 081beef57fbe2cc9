// DelayedOperationKey: what a delayed operation waits for (Kafka's
// DelayedOperationKey: TopicPartitionOperationKey, GroupJoinKey, GroupSyncKey,
// MemberKey), one typed value instead of a string label, so the purgatory's
// watch lists are keyed by exactly the identity that wakes them and its
// counts can be read per kind.
//
// Invariant: two keys are equal iff their kind and every identifying field
// are; the fields a kind does not use stay empty (or 0), so a key built by its
// factory always compares equal to another built from the same identity.
// Keys are ordered (operator<=>) and hashable (DelayedOperationKeyHash).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>

namespace daruma {

enum class DelayedOperationKind : uint8_t {
  kFetchPartition,   // a fetch waiting for data on (topic, partition)
  kFetchClient,      // a fetch's connection (forced when the client goes)
  kGroupJoin,        // a group's join phase (DelayedJoin, InitialDelayedJoin)
  kGroupSync,        // a group's pending SyncGroups (DelayedSync)
  kMemberHeartbeat,  // a member's session (DelayedHeartbeat)
  kPendingMember,    // a member id handed out with MEMBER_ID_REQUIRED
};
inline constexpr size_t kDelayedOperationKinds = 6;

// "fetch_partition", "group_join", ...: the label metrics use.
const char* DelayedOperationKindName(DelayedOperationKind kind);

struct DelayedOperationKey {
  DelayedOperationKind kind = DelayedOperationKind::kFetchPartition;
  std::string name;    // topic or group id
  std::string member;  // member id (kMemberHeartbeat, kPendingMember)
  int64_t number = 0;  // partition (kFetchPartition) or client id (kFetchClient)

  static DelayedOperationKey FetchPartition(std::string topic, int32_t partition);
  // `client_id` identifies a connection for as long as an operation watching
  // it holds that connection (the broker uses its scope's address).
  static DelayedOperationKey FetchClient(uint64_t client_id);
  static DelayedOperationKey GroupJoin(std::string group_id);
  static DelayedOperationKey GroupSync(std::string group_id);
  static DelayedOperationKey MemberHeartbeat(std::string group_id, std::string member_id);
  static DelayedOperationKey PendingMember(std::string group_id, std::string member_id);

  friend auto operator<=>(const DelayedOperationKey&, const DelayedOperationKey&) = default;
  friend bool operator==(const DelayedOperationKey&, const DelayedOperationKey&) = default;

  // Kafka's keyLabel with the kind in front: "fetch_partition:t-0",
  // "group_join:g1", "member_heartbeat:g1-m1".
  std::string ToString() const;
};

struct DelayedOperationKeyHash {
  size_t operator()(const DelayedOperationKey& key) const;
};

}  // namespace daruma
