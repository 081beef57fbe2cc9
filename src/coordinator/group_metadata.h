// GroupMetadata: one classic consumer group in memory (Kafka's GroupMetadata
// and MemberMetadata): its state, generation, members with their protocols,
// the pending joins and syncs, and its committed offsets.
//
// States and transitions (Kafka's, GroupMetadata.scala):
//   Empty               -> PreparingRebalance (a member joins), Dead (deleted)
//   PreparingRebalance  -> CompletingRebalance (join phase done, members left),
//                          Empty (join phase done, no member left), Dead
//   CompletingRebalance -> Stable (the leader's assignment is stored),
//                          PreparingRebalance (a member joins, leaves or
//                          changes its protocols), Dead
//   Stable              -> PreparingRebalance, Dead
//   Dead                -> (nothing; the group is removed)
//
// Not thread-safe: GroupCoordinator guards every group with its own mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "coordinator/offsets_records.h"
#include "protocol/error_codes.h"

namespace daruma {

enum class GroupState { kEmpty, kPreparingRebalance, kCompletingRebalance, kStable, kDead };

// Kafka's names ("Empty", "PreparingRebalance", ...), as DescribeGroups and
// ListGroups report them.
const char* GroupStateName(GroupState state);
std::optional<GroupState> ParseGroupState(std::string_view name);

struct GroupProtocol {
  std::string name;
  Bytes metadata;
};

// What a JoinGroup answers (Kafka's JoinGroupResult).
struct JoinGroupResult {
  ErrorCode error = ErrorCode::kNone;
  int32_t generation_id = -1;
  std::optional<std::string> protocol_type;
  std::optional<std::string> protocol_name;
  std::string leader_id;
  std::string member_id;
  bool skip_assignment = false;
  struct Member {
    std::string member_id;
    std::optional<std::string> group_instance_id;
    Bytes metadata;
  };
  std::vector<Member> members;  // the leader's answer only
};

// What a SyncGroup answers.
struct SyncGroupResult {
  ErrorCode error = ErrorCode::kNone;
  std::optional<std::string> protocol_type;
  std::optional<std::string> protocol_name;
  Bytes assignment;
};

using JoinCallback = std::function<void(JoinGroupResult)>;
using SyncCallback = std::function<void(SyncGroupResult)>;

struct MemberMetadata {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string client_id;
  std::string client_host;
  int32_t rebalance_timeout_ms = 0;
  int32_t session_timeout_ms = 0;
  std::string protocol_type;
  std::vector<GroupProtocol> protocols;  // in the member's order of preference
  Bytes assignment;
  // Set while the member waits for the join phase / the leader's assignment.
  JoinCallback awaiting_join;
  SyncCallback awaiting_sync;
  // A member that joined and has not yet received a join response: its
  // heartbeat deadline is the new-member timeout instead of its session.
  bool is_new = false;
  // True only while a heartbeat completes the member's DelayedHeartbeat
  // (GroupCoordinator::ScheduleHeartbeat), Kafka's heartbeatSatisfied.
  bool heartbeat_satisfied = false;

  // The metadata of `protocol`, empty if the member does not support it.
  const Bytes* MetadataFor(const std::string& protocol) const;
  bool SameProtocols(const std::vector<GroupProtocol>& other) const;
};

struct CommittedOffset {
  int64_t offset = -1;
  int32_t leader_epoch = -1;
  std::string metadata;
  int64_t commit_timestamp = 0;
  int64_t expire_timestamp = -1;
  // Where its record is in `__consumer_offsets` (-1: not written), so a
  // transaction's offset committed later replaces it only if it was written
  // after it (Kafka's recordOffset).
  int64_t record_offset = -1;
};

// Offsets by topic and partition.
using GroupOffsetMap = std::map<std::pair<std::string, int32_t>, CommittedOffset>;

// Kafka's rule when a transaction that committed offsets commits
// (OffsetMetadataManager.replayEndTransactionMarker): each of `pending`
// replaces the offset in `committed` only if its record was written later,
// so a plain commit made after the transaction's offset stays (compaction
// keeps the latest record of a key; the load must agree with it).
void ApplyCommittedTxnOffsets(GroupOffsetMap& committed, const GroupOffsetMap& pending);

class GroupMetadata {
 public:
  GroupMetadata(std::string group_id, int64_t now_ms)
      : id_(std::move(group_id)), state_timestamp_(now_ms) {}

  const std::string& id() const { return id_; }
  GroupState state() const { return state_; }
  bool Is(GroupState s) const { return state_ == s; }
  // Moves to `to`; returns false (and stays) when the transition is not
  // one of the table's above.
  bool TransitionTo(GroupState to, int64_t now_ms);

  int32_t generation_id() const { return generation_id_; }
  const std::optional<std::string>& protocol_type() const { return protocol_type_; }
  const std::optional<std::string>& protocol_name() const { return protocol_name_; }
  const std::optional<std::string>& leader_id() const { return leader_id_; }
  int64_t state_timestamp() const { return state_timestamp_; }

  std::map<std::string, MemberMetadata>& members() { return members_; }
  const std::map<std::string, MemberMetadata>& members() const { return members_; }
  MemberMetadata* FindMember(const std::string& member_id);
  bool Has(const std::string& member_id) const { return members_.count(member_id) != 0; }
  // The member id of a static member, or nullptr.
  const std::string* StaticMemberId(const std::string& instance_id) const;
  bool IsLeader(const std::string& member_id) const {
    return leader_id_ && *leader_id_ == member_id;
  }

  // Member ids handed out with MEMBER_ID_REQUIRED, not yet joined; each has
  // its expiry in the coordinator's purgatory.
  std::set<std::string>& pending_members() { return pending_members_; }

  // Adds `member` (the first one becomes leader and fixes the protocol type).
  void AddMember(MemberMetadata member);
  // Removes `member_id`; a new leader is picked among the rest if it led.
  void RemoveMember(const std::string& member_id);
  // Replaces the member id of a static member (KIP-345 rejoin with a new id).
  MemberMetadata& ReplaceStaticMember(const std::string& old_id, const std::string& new_id);

  // Kafka's supportsProtocols: an empty group takes any non-empty protocol
  // type and list; otherwise the type must match and one of `protocols` must
  // be supported by every member.
  bool SupportsProtocols(const std::string& protocol_type,
                         const std::vector<GroupProtocol>& protocols) const;
  // The protocol every member supports with the most first-choice votes.
  std::string SelectProtocol() const;

  // Every member answered the join phase and none waits for its id.
  bool HasAllMembersJoined() const;
  int32_t MaxRebalanceTimeoutMs() const;

  // Kafka's initNextGeneration: a new generation; with members the protocol
  // is selected and the group completes the rebalance, without it is Empty.
  void InitNextGeneration(int64_t now_ms);

  // The group's metadata record value (members with their assignment).
  GroupMetadataValue ToRecordValue(int64_t now_ms) const;
  // Restores a group read back from `__consumer_offsets`: Empty without
  // members, else Stable with them (the coordinator restarts their sessions).
  void LoadFrom(const GroupMetadataValue& value, int64_t now_ms);

  // Committed offsets by topic and partition.
  GroupOffsetMap& offsets() { return offsets_; }
  const GroupOffsetMap& offsets() const { return offsets_; }

  // Offsets of transactions that have not ended (TxnOffsetCommit), by
  // producer id. Invisible to OffsetFetch; the producer's COMMIT moves them
  // into offsets() (ApplyCommittedTxnOffsets), its ABORT drops them. A
  // producer stays here, possibly with no offsets left (a tombstone removed
  // them), until its transaction ends: the group has an open transaction
  // (Kafka's openTransactionsByGroup), which keeps retention from removing it.
  std::map<int64_t, GroupOffsetMap>& pending_txn_offsets() { return pending_txn_offsets_; }
  const std::map<int64_t, GroupOffsetMap>& pending_txn_offsets() const {
    return pending_txn_offsets_;
  }
  // Some open transaction holds an offset for the partition.
  bool HasPendingTxnOffset(const std::pair<std::string, int32_t>& tp) const;
  // What an offset tombstone means (Kafka's replay of one): the committed
  // offset and every pending transactional one of the partition are gone.
  void RemoveOffset(const std::pair<std::string, int32_t>& tp);
  // The producer's transaction ended: on commit its pending offsets are
  // applied, on abort dropped. False if the group had no open transaction of it.
  bool CompleteTxn(int64_t producer_id, bool commit);

  // The topics some member's consumer-protocol subscription names (for
  // OffsetDelete); empty unless the protocol type is "consumer".
  std::set<std::string> SubscribedTopics() const;

  // Members of the current generation that have not sent SyncGroup yet.
  std::set<std::string>& pending_sync() { return pending_sync_; }
  void SetLeader(const std::string& member_id) { leader_id_ = member_id; }

  // Join-phase bookkeeping; the deadlines themselves are the coordinator's
  // delayed operations (DelayedJoin, InitialDelayedJoin, DelayedSync).
  bool initial_delay = false;     // the join phase is an initial delayed join (empty group)
  bool new_member_added = false;  // a member joined during the initial delay

 private:
  std::string id_;
  GroupState state_ = GroupState::kEmpty;
  int32_t generation_id_ = 0;
  std::optional<std::string> protocol_type_;
  std::optional<std::string> protocol_name_;
  std::optional<std::string> leader_id_;
  int64_t state_timestamp_ = -1;
  std::map<std::string, MemberMetadata> members_;
  std::map<std::string, std::string> static_members_;  // instance id -> member id
  std::set<std::string> pending_members_;              // member ids handed out (MEMBER_ID_REQUIRED)
  std::set<std::string> pending_sync_;
  GroupOffsetMap offsets_;
  std::map<int64_t, GroupOffsetMap> pending_txn_offsets_;
};

}  // namespace daruma
