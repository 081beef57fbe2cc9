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
// Time: every deadline is a delayed operation in the coordinator's purgatory
// (common/delayed_operation.h), watched under a typed key as Kafka's
// coordinator does (group_coordinator_deadlines.cc): a member's session
// (DelayedHeartbeat, key group+member; each heartbeat completes it and
// watches the next), a member id handed out with MEMBER_ID_REQUIRED (key
// group+pending member), the join phase (DelayedJoin, InitialDelayedJoin; key
// group: completes when every known member has rejoined, or at the rebalance
// timeout) and the pending syncs (DelayedSync, key group). Their expiry runs
// on the injected Scheduler and is judged on its Clock, so nothing scans the
// groups: work happens only for a deadline that is due. Offset retention is a
// periodic Scheduler job (offsets.retention.check.interval.ms). The broker
// passes a kTimers scheduler; tests a kManual one on a ManualClock, advancing
// the clock and calling RunDueJobs, without sleeping.
//
// Threading: every method may be called from any thread; one mutex guards all
// groups, and every delayed operation's callbacks run with it held (the
// purgatory's expiries take it first). Callbacks (join and sync answers,
// commit results) are invoked after the mutex is released, on the calling
// thread, possibly a later call's (a JoinGroup is answered when the last
// member joins, or by the scheduler's thread when its join phase expires).
//
// Transactions (KIP-98, KIP-447; group_coordinator_txn_offsets.cc): a
// TxnOffsetCommit writes its offsets as one transactional batch of the
// producer into the group's partition, where they stay pending (invisible to
// OffsetFetch; OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT
// for them) until the transaction coordinator has written the producer's
// COMMIT or ABORT marker there and calls CompleteTransaction. Load replays
// the same: a transactional batch's offsets are pending until the marker of
// its producer that follows it, and stay pending if none does.
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
#include "common/delayed_operation.h"
#include "common/scheduler.h"
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

// A TxnOffsetCommit (Kafka's GroupCoordinator.handleTxnCommitOffsets). The
// caller has checked that the producer's transaction contains the group's
// `__consumer_offsets` partition (AddOffsetsToTxn); the coordinator does not.
struct TxnOffsetCommitArgs {
  std::string transactional_id;
  std::string group_id;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t generation_id = -1;                    // v3+; -1 = not given
  std::string member_id;                         // v3+; "" = not given
  std::optional<std::string> group_instance_id;  // v3+
  // Each partition's commit_timestamp is ignored: Kafka stamps these with
  // the time of the commit and sets no expire timestamp.
  std::vector<OffsetCommitArgs::Partition> partitions;
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
  // (group, producer) pairs whose transaction has offsets in the log and no
  // marker after them yet: pending until CompleteTransaction.
  int64_t open_transactions = 0;
  std::vector<std::string> skipped_reasons;  // the first few, each naming partition and offset
  // Partitions that could not be read, with why: their groups answer
  // COORDINATOR_NOT_AVAILABLE; every other group is served.
  std::vector<std::string> failed_partitions;
};

class GroupCoordinator {
 public:
  // `scheduler` (and its clock) outlive the coordinator; its expiries and
  // retention checks run there.
  GroupCoordinator(GroupCoordinatorConfig config, GroupStorage* storage, Scheduler* scheduler);
  // Waits for an expiry or retention check in progress; later ones do nothing.
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
  // What the group APIs answer for `group_id` before looking at the group:
  // COORDINATOR_LOAD_IN_PROGRESS before Load, COORDINATOR_NOT_AVAILABLE for a
  // partition Load could not read, NOT_COORDINATOR for one whose storage is
  // unavailable now (GroupStorage::CheckAvailable), else NONE.
  ErrorCode Availability(const std::string& group_id) const;

  void JoinGroup(JoinGroupArgs args, JoinCallback done);
  void SyncGroup(SyncGroupArgs args, SyncCallback done);
  ErrorCode Heartbeat(const std::string& group_id, const std::string& member_id,
                      const std::optional<std::string>& group_instance_id, int32_t generation_id);
  LeaveGroupResult LeaveGroup(const std::string& group_id,
                              const std::vector<MemberIdentity>& members);

  // One error per partition, in order.
  std::vector<ErrorCode> CommitOffsets(const OffsetCommitArgs& args);
  // `partitions` null = every committed offset of the group. With
  // `require_stable` (OffsetFetch v7+, KIP-447) a partition some open
  // transaction holds an offset for answers UNSTABLE_OFFSET_COMMIT (offset
  // -1) instead of its committed offset; without, pending offsets are not seen.
  OffsetFetchResult FetchOffsets(
      const std::string& group_id,
      const std::optional<std::vector<std::pair<std::string, int32_t>>>& partitions,
      bool require_stable = false);

  // One error per partition, in order. The accepted offsets are stored as
  // ONE transactional batch of the producer (its id and epoch, base sequence
  // 0, the transactional attribute) in the group's `__consumer_offsets`
  // partition and stay pending until CompleteTransaction. An epoch older
  // than the partition knows for the producer is INVALID_PRODUCER_EPOCH.
  std::vector<ErrorCode> CommitTransactionalOffsets(const TxnOffsetCommitArgs& args);
  // The transaction coordinator has written a COMMIT (`commit`) or ABORT
  // marker of `producer_id` into `__consumer_offsets` partition
  // `offsets_partition`: the producer's pending offsets in the groups of that
  // partition are applied (each only if written after the committed offset
  // it would replace) or dropped. The caller must call it before the
  // producer can start its next transaction (before the transaction
  // completes), since it ends whatever the producer has pending there. A
  // call before Load has finished is kept and applied once Load is done
  // (when Load read the marker it finds nothing pending any more: no
  // transactional offsets can be written before Load has finished).
  void CompleteTransaction(int64_t producer_id, int32_t offsets_partition, bool commit);
  GroupDescription DescribeGroup(const std::string& group_id);
  // `states` empty = all; names compared as Kafka's ListGroups does.
  std::pair<ErrorCode, std::vector<GroupListing>> ListGroups(
      const std::vector<std::string>& states);
  ErrorCode DeleteGroup(const std::string& group_id);
  // `topic` was deleted: its offsets leave every group, committed and
  // pending in a transaction alike, with their tombstones written (Kafka's
  // onPartitionsDeleted), so that a topic created again under the name
  // starts from auto.offset.reset rather than from the old topic's offsets.
  // Before Load has finished the topic is kept and removed once Load is
  // done. A failed tombstone append is returned; the offsets are gone from
  // memory anyway, and come back only at the next load.
  Status OnTopicDeleted(const std::string& topic);
  // The group's error and one per partition.
  std::pair<ErrorCode, std::vector<ErrorCode>> DeleteOffsets(
      const std::string& group_id, const std::vector<std::pair<std::string, int32_t>>& partitions);

  // The broker is stopping: every parked JoinGroup and SyncGroup is answered
  // NOT_COORDINATOR now (so no connection waits for an answer that cannot
  // come), no deadline fires any more and later requests get
  // COORDINATOR_LOAD_IN_PROGRESS.
  void Shutdown();

  size_t GroupCount() const;
  // The deadlines waiting now, and how many the expiry has looked at so far
  // (only ever due ones): for /metrics and tests.
  DelayedOperationStats DeadlineStats(DelayedOperationKind kind) const {
    return purgatory_.Stats(kind);
  }
  size_t DeadlinesWaiting() const { return purgatory_.Delayed(); }
  int64_t DeadlinesExamined() const { return purgatory_.ExpiryChecks(); }

 private:
  using Completions = std::vector<std::function<void()>>;
  class Locked;
  class DelayedHeartbeat;
  class DelayedJoin;
  class InitialDelayedJoin;
  class DelayedSync;
  struct JobAnchor;

  // Availability with mu_ held.
  ErrorCode AvailabilityLocked(const std::string& group_id) const;
  GroupMetadata* FindGroup(const std::string& group_id);
  std::string NewMemberId(const std::string& prefix);
  ErrorCode CheckMember(GroupMetadata& group, const std::string& member_id,
                        const std::optional<std::string>& instance_id);

  void JoinNewMember(GroupMetadata& group, JoinGroupArgs& args, JoinCallback& done);
  void JoinKnownMember(GroupMetadata& group, JoinGroupArgs& args, JoinCallback& done);
  void JoinStaticMember(GroupMetadata& group, JoinGroupArgs& args, JoinCallback& done);
  void AddMemberAndRebalance(GroupMetadata& group, JoinGroupArgs& args, std::string member_id,
                             JoinCallback done);
  void UpdateMemberAndRebalance(GroupMetadata& group, MemberMetadata& member, JoinGroupArgs& args,
                                JoinCallback done);
  JoinGroupResult CurrentJoinResult(GroupMetadata& group, const std::string& member_id,
                                    bool with_members);
  void RemoveMemberAndUpdateGroup(GroupMetadata& group, const std::string& member_id);
  // Answers every parked SyncGroup with `error` and clears the assignments.
  void FailPendingSyncs(GroupMetadata& group, ErrorCode error);
  // Answers the member's parked JoinGroup and SyncGroup, if any, with `error`.
  void FailWaitingCalls(MemberMetadata& member, ErrorCode error);
  // The settings every JoinGroup carries (client, host, timeouts).
  static void ApplyJoinSettings(const JoinGroupArgs& args, MemberMetadata& member);
  // A new, empty group registered under `group_id` (absent before). mu_ held.
  GroupMetadata& CreateGroupLocked(const std::string& group_id);
  // Appends the group's metadata record; kIoError etc. from the storage.
  Status StoreGroup(GroupMetadata& group);
  // The retention check (offsets.retention.check.interval.ms).
  void ExpireOffsets();
  void ExpireOffsetsLocked();
  Status RemoveTopicOffsetsLocked(const std::string& topic);
  void RemoveGroupLocked(const std::string& group_id);
  // Kafka's validateOffsetCommit for a transactional commit. mu_ held.
  ErrorCode ValidateTxnOffsetCommit(GroupMetadata& group, const TxnOffsetCommitArgs& args);
  void CompleteTransactionLocked(int64_t producer_id, int32_t offsets_partition, bool commit);

  // Deadlines (group_coordinator_deadlines.cc); all with mu_ held.
  // Completes the member's session deadline and watches the next one
  // (Kafka's completeAndScheduleNextHeartbeatExpiration).
  void ScheduleHeartbeat(GroupMetadata& group, MemberMetadata& member);
  // Completes the deadline of a member that left or was replaced.
  void ForgetHeartbeat(GroupMetadata& group, const std::string& member_id);
  // Watches the expiry of a member id handed out with MEMBER_ID_REQUIRED.
  void SchedulePendingMemberExpiry(GroupMetadata& group, const std::string& member_id,
                                   int32_t timeout_ms);
  // Removes a pending member id (it joined, left or expired).
  void RemovePendingMember(GroupMetadata& group, const std::string& member_id);
  void MaybePrepareRebalance(GroupMetadata& group);
  // Starts the join phase: an initial delayed join for an empty group, else
  // a delayed join bounded by the members' largest rebalance timeout.
  void PrepareRebalance(GroupMetadata& group);
  // Completes the join phase if every known member has rejoined.
  void TryCompleteJoin(GroupMetadata& group);
  // The join phase ends (Kafka's onCompleteJoin).
  void CompleteJoin(GroupMetadata& group);
  // Clears the pending syncs, which completes their deadline.
  void ClearPendingSyncs(GroupMetadata& group);
  // The pending-sync deadline passed (Kafka's onExpirePendingSync).
  void ExpirePendingSyncs(GroupMetadata& group, int32_t generation_id);
  // A member's session deadline passed (Kafka's onExpireHeartbeat).
  void ExpireHeartbeat(GroupMetadata& group, const std::string& member_id);
  std::weak_ptr<GroupMetadata> WeakGroup(const GroupMetadata& group) const;
  // Runs an expiry of the purgatory: with mu_ held, and only while loaded.
  void RunExpiry(const std::function<void()>& expire);

  GroupCoordinatorConfig config_;
  GroupStorage* storage_;
  Scheduler* scheduler_;
  Clock* clock_;
  mutable std::mutex mu_;
  // Answers produced under mu_; the Locked section that holds mu_ sends them
  // once it has released it.
  Completions answers_;
  bool loaded_ = false;
  bool shut_down_ = false;
  std::set<int32_t> failed_partitions_;
  // For each producer with pending transactional offsets, the groups they
  // are in (Kafka's openGroupsForProducer), so a marker does not scan every
  // group. May name a group that was deleted since; the group's own
  // pending_txn_offsets() are what counts.
  std::map<int64_t, std::set<std::string>> txn_groups_;
  // CompleteTransaction calls that came before Load finished, in order.
  struct TxnCompletion {
    int64_t producer_id;
    int32_t offsets_partition;
    bool commit;
  };
  std::vector<TxnCompletion> early_completions_;
  // OnTopicDeleted calls that came before Load finished.
  std::vector<std::string> early_deleted_topics_;
  // Shared so that a delayed operation can hold a group weakly: a group that
  // was removed (and maybe created again under its id) is not the one its
  // deadlines were for.
  std::map<std::string, std::shared_ptr<GroupMetadata>> groups_;
  // The retention job's way back here; reset by the destructor.
  std::shared_ptr<JobAnchor> anchor_;
  // Last: destroyed first, waiting for an expiry in progress, while the
  // state its operations use still exists.
  DelayedOperationPurgatory purgatory_;
};

// Holds the coordinator's mutex for one call and sends the answers queued in
// the meantime after releasing it, so no callback runs under the lock.
class GroupCoordinator::Locked {
 public:
  explicit Locked(GroupCoordinator& coordinator)
      : coordinator_(coordinator), lock_(coordinator.mu_) {}
  ~Locked();
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

 private:
  GroupCoordinator& coordinator_;
  std::unique_lock<std::mutex> lock_;
};

// The retention job's way back to the coordinator: the destructor clears
// `coordinator` under `mu`, so a job that runs later does nothing and one in
// progress is waited for.
struct GroupCoordinator::JobAnchor {
  explicit JobAnchor(GroupCoordinator* c) : coordinator(c) {}
  std::mutex mu;
  GroupCoordinator* coordinator;
};

}  // namespace daruma
