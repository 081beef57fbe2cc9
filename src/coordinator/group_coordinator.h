// GroupCoordinator: Kafka's classic consumer-group protocol on one node
// (Kafka's GroupCoordinator + GroupMetadataManager): membership (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup), committed offsets (OffsetCommit,
// OffsetFetch, OffsetDelete) and administration (DescribeGroups, ListGroups,
// DeleteGroups), with every group's offsets and metadata stored in
// `__consumer_offsets` (offsets_records.h) through a GroupStorage.
//
// Durability contract: an OffsetCommit is answered NONE only after its batch
// was appended and made as durable as the offsets topic's flush settings ask
// (GroupStorage::Append); the in-memory offsets change only then, so a fetch
// never returns an offset that a crash could take back. A group's metadata
// (members, assignment) is stored when its leader's assignment arrives and
// when it becomes empty, as Kafka does; a crash in between leaves the last
// stored generation, which Load brings back as Stable (or Empty), and members
// that do not come back expire by their session timeout.
//
// Time: every deadline (join phase, initial rebalance delay, heartbeats,
// member ids handed out with MEMBER_ID_REQUIRED, pending syncs, offset
// retention) is checked by Tick() against the injected Clock. The broker calls
// Tick on a timer; tests advance a ManualClock and call it, without sleeping.
//
// Threading: every method may be called from any thread; one mutex guards all
// groups. Callbacks (join and sync answers, commit results) are invoked after
// the mutex is released, on the calling thread, possibly a later call's (a
// JoinGroup is answered when the last member joins or by Tick).
//
// Before Load() has finished every API answers COORDINATOR_LOAD_IN_PROGRESS.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/clock.h"
#include "common/status.h"
#include "coordinator/group_metadata.h"
#include "coordinator/group_storage.h"
#include "protocol/error_codes.h"

namespace daruma {

// The `group.*` and `offsets.*` broker settings, with Kafka's defaults.
struct GroupCoordinatorConfig {
  int32_t min_session_timeout_ms = 6000;                  // group.min.session.timeout.ms
  int32_t max_session_timeout_ms = 1800000;               // group.max.session.timeout.ms
  int32_t initial_rebalance_delay_ms = 3000;              // group.initial.rebalance.delay.ms
  int32_t max_size = INT32_MAX;                           // group.max.size
  int32_t offsets_partitions = 50;                        // offsets.topic.num.partitions
  int32_t offset_metadata_max_bytes = 4096;               // offset.metadata.max.bytes
  int64_t offsets_retention_ms = 7LL * 24 * 3600 * 1000;  // offsets.retention.minutes
  int64_t retention_check_interval_ms = 600000;           // offsets.retention.check.interval.ms
  int32_t new_member_join_timeout_ms = 300000;            // Kafka's GroupCoordinator constant
};

struct JoinGroupArgs {
  std::string group_id;
  std::string member_id;  // "" = a new member
  std::optional<std::string> group_instance_id;
  std::string protocol_type;
  std::vector<GroupProtocol> protocols;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = -1;  // -1: the session timeout (JoinGroup v0)
  std::string client_id;
  std::string client_host;
  bool require_known_member_id = false;   // JoinGroup v4+ without an instance id
  bool supports_skip_assignment = false;  // JoinGroup v9+
};

struct SyncGroupArgs {
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::optional<std::string> protocol_type;                // v5+
  std::optional<std::string> protocol_name;                // v5+
  std::vector<std::pair<std::string, Bytes>> assignments;  // the leader's
};

struct MemberIdentity {
  std::string member_id;
  std::optional<std::string> group_instance_id;
};

struct LeaveGroupResult {
  ErrorCode error = ErrorCode::kNone;    // the group's
  std::vector<ErrorCode> member_errors;  // in request order
};

struct OffsetCommitArgs {
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;
  int64_t retention_time_ms = -1;  // OffsetCommit v2-v4; -1 = the broker's
  struct Partition {
    std::string topic;
    int32_t partition = 0;
    int64_t offset = 0;
    int32_t leader_epoch = -1;
    std::optional<std::string> metadata;
    int64_t commit_timestamp = -1;  // v1 only; -1 = now
  };
  std::vector<Partition> partitions;
};

struct OffsetFetchResult {
  ErrorCode error = ErrorCode::kNone;
  struct Partition {
    std::string topic;
    int32_t partition = 0;
    int64_t offset = -1;
    int32_t leader_epoch = -1;
    std::string metadata;
    ErrorCode error = ErrorCode::kNone;
  };
  std::vector<Partition> partitions;
};

struct GroupDescription {
  ErrorCode error = ErrorCode::kNone;
  std::string group_id;
  std::string state;
  std::string protocol_type;
  std::string protocol_data;  // the selected protocol, when Stable
  struct Member {
    std::string member_id;
    std::optional<std::string> group_instance_id;
    std::string client_id;
    std::string client_host;
    Bytes metadata;    // when Stable
    Bytes assignment;  // when Stable
  };
  std::vector<Member> members;
};

struct GroupListing {
  std::string group_id;
  std::string protocol_type;
  std::string state;
};

// What Load found; a record that does not parse is skipped and counted.
struct GroupLoadReport {
  int64_t records = 0;
  int64_t offsets = 0;
  int64_t groups = 0;
  int64_t skipped = 0;
  std::vector<std::string> skipped_reasons;  // the first few, each naming partition and offset
  // Partitions that could not be read, with why: their groups answer
  // COORDINATOR_NOT_AVAILABLE; every other group is served.
  std::vector<std::string> failed_partitions;
};

class GroupCoordinator {
 public:
  GroupCoordinator(GroupCoordinatorConfig config, GroupStorage* storage, Clock* clock);
  ~GroupCoordinator();
  GroupCoordinator(const GroupCoordinator&) = delete;
  GroupCoordinator& operator=(const GroupCoordinator&) = delete;

  // Reads every `__consumer_offsets` partition and builds the groups; until
  // it returns the APIs answer COORDINATOR_LOAD_IN_PROGRESS. A partition that
  // cannot be read is reported (GroupLoadReport::failed_partitions) and its
  // groups are not served; the others are.
  Result<GroupLoadReport> Load();
  bool loaded() const;

  const GroupCoordinatorConfig& config() const { return config_; }
  int32_t PartitionFor(const std::string& group_id) const {
    return OffsetsPartitionFor(group_id, config_.offsets_partitions);
  }

  void JoinGroup(JoinGroupArgs args, JoinCallback done);
  void SyncGroup(SyncGroupArgs args, SyncCallback done);
  ErrorCode Heartbeat(const std::string& group_id, const std::string& member_id,
                      const std::optional<std::string>& group_instance_id, int32_t generation_id);
  LeaveGroupResult LeaveGroup(const std::string& group_id,
                              const std::vector<MemberIdentity>& members);

  // One error per partition, in order.
  std::vector<ErrorCode> CommitOffsets(const OffsetCommitArgs& args);
  // `partitions` null = every committed offset of the group.
  OffsetFetchResult FetchOffsets(
      const std::string& group_id,
      const std::optional<std::vector<std::pair<std::string, int32_t>>>& partitions);
  GroupDescription DescribeGroup(const std::string& group_id);
  // `states` empty = all; names compared as Kafka's ListGroups does.
  std::pair<ErrorCode, std::vector<GroupListing>> ListGroups(
      const std::vector<std::string>& states);
  ErrorCode DeleteGroup(const std::string& group_id);
  // The group's error and one per partition.
  std::pair<ErrorCode, std::vector<ErrorCode>> DeleteOffsets(
      const std::string& group_id, const std::vector<std::pair<std::string, int32_t>>& partitions);

  // Runs every deadline that has passed (see the file comment).
  void Tick();
  // The broker is stopping: every parked JoinGroup and SyncGroup is answered
  // NOT_COORDINATOR now (so no connection waits for an answer that cannot
  // come) and later requests get COORDINATOR_LOAD_IN_PROGRESS.
  void Shutdown();

  size_t GroupCount() const;

 private:
  using Completions = std::vector<std::function<void()>>;

  // kCoordinatorLoadInProgress before Load, kCoordinatorNotAvailable for a
  // group of a partition Load could not read, else kNone. mu_ held.
  ErrorCode AvailabilityLocked(const std::string& group_id) const;
  GroupMetadata* FindGroup(const std::string& group_id);
  std::string NewMemberId(const std::string& prefix);
  ErrorCode CheckMember(GroupMetadata& group, const std::string& member_id,
                        const std::optional<std::string>& instance_id);

  void JoinNewMember(GroupMetadata& group, JoinGroupArgs& args, JoinCallback& done,
                     Completions& out);
  void JoinKnownMember(GroupMetadata& group, JoinGroupArgs& args, JoinCallback& done,
                       Completions& out);
  void JoinStaticMember(GroupMetadata& group, JoinGroupArgs& args, JoinCallback& done,
                        Completions& out);
  void AddMemberAndRebalance(GroupMetadata& group, JoinGroupArgs& args, std::string member_id,
                             JoinCallback done, Completions& out);
  void UpdateMemberAndRebalance(GroupMetadata& group, MemberMetadata& member, JoinGroupArgs& args,
                                JoinCallback done, Completions& out);
  JoinGroupResult CurrentJoinResult(GroupMetadata& group, const std::string& member_id,
                                    bool with_members);
  void MaybePrepareRebalance(GroupMetadata& group, Completions& out);
  void PrepareRebalance(GroupMetadata& group, Completions& out);
  void TryCompleteJoin(GroupMetadata& group, Completions& out);
  void CompleteJoin(GroupMetadata& group, Completions& out);
  void RemoveMemberAndUpdateGroup(GroupMetadata& group, const std::string& member_id,
                                  Completions& out);
  void FailPendingSyncs(GroupMetadata& group, ErrorCode error, Completions& out);
  // Answers the member's parked JoinGroup and SyncGroup, if any, with `error`.
  void FailWaitingCalls(MemberMetadata& member, ErrorCode error, Completions& out);
  // The settings every JoinGroup carries (client, host, timeouts).
  static void ApplyJoinSettings(const JoinGroupArgs& args, MemberMetadata& member);
  // A new, empty group registered under `group_id` (absent before). mu_ held.
  GroupMetadata& CreateGroupLocked(const std::string& group_id);
  void ScheduleHeartbeat(MemberMetadata& member);
  // Appends the group's metadata record; kIoError etc. from the storage.
  Status StoreGroup(GroupMetadata& group);
  void ExpireOffsetsLocked(Completions& out);
  void RemoveGroupLocked(const std::string& group_id);

  GroupCoordinatorConfig config_;
  GroupStorage* storage_;
  Clock* clock_;
  mutable std::mutex mu_;
  bool loaded_ = false;
  std::set<int32_t> failed_partitions_;
  std::map<std::string, std::unique_ptr<GroupMetadata>> groups_;
  int64_t next_retention_check_ms_ = 0;
};

}  // namespace daruma
