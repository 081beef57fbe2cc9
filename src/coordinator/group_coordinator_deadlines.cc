// Deadlines of the classic group protocol as delayed operations (Kafka's
// DelayedHeartbeat, DelayedJoin, InitialDelayedJoin and DelayedSync), each
// watched in the coordinator's purgatory under a typed key:
//
//   DelayedHeartbeat    member_heartbeat(group, member)  a member's session: a
//                       heartbeat (or a commit, a sync, a join answer)
//                       completes it and watches the next; at its deadline a
//                       member that is not waiting for a join or sync answer
//                       is removed (a new member is removed even then: its
//                       join may never complete).
//                       pending_member(group, member)    a member id handed
//                       out with MEMBER_ID_REQUIRED: it completes when the id
//                       joins or leaves, and at its deadline the id is
//                       forgotten.
//   DelayedJoin         group_join(group)  the join phase: completes once
//                       every known member has rejoined (CheckAndComplete
//                       after each join, leave and removal), or at the
//                       members' largest rebalance timeout.
//   InitialDelayedJoin  group_join(group)  the join phase of an empty group:
//                       only its deadline ends it (group.initial.rebalance.
//                       delay.ms), extended by another delay while members
//                       keep arriving, up to the rebalance timeout.
//   DelayedSync         group_sync(group)  the pending SyncGroups of a
//                       generation: completes once every member synced (or
//                       the generation or state moved on); at the rebalance
//                       timeout the members that did not sync are removed.
//
// Every operation's callbacks run with the coordinator's mutex held: the
// coordinator calls into the purgatory only under it, and the purgatory's
// expiries go through RunExpiry, which takes it. An operation holds its group
// weakly: a group removed meanwhile (and maybe created again under its id)
// completes it with nothing to do.
#include <algorithm>

#include "coordinator/group_coordinator.h"

namespace daruma {

class GroupCoordinator::DelayedHeartbeat final : public DelayedOperation {
 public:
  DelayedHeartbeat(GroupCoordinator* coordinator, std::weak_ptr<GroupMetadata> group,
                   std::string member_id, bool pending, int64_t timeout_ms)
      : DelayedOperation(timeout_ms),
        coordinator_(coordinator),
        group_(std::move(group)),
        member_id_(std::move(member_id)),
        pending_(pending) {}

 protected:
  // Kafka's tryCompleteHeartbeat: done when the group or member is gone, a
  // pending id is no longer pending, or a heartbeat satisfied the member.
  bool TryComplete() override {
    std::shared_ptr<GroupMetadata> group = group_.lock();
    if (group == nullptr || group->Is(GroupState::kDead)) return ForceComplete();
    if (pending_) {
      return group->pending_members().count(member_id_) ? false : ForceComplete();
    }
    const MemberMetadata* member = group->FindMember(member_id_);
    if (member == nullptr || member->heartbeat_satisfied) return ForceComplete();
    return false;
  }
  void OnComplete() override {}
  void OnExpiration() override {
    std::shared_ptr<GroupMetadata> group = group_.lock();
    if (group == nullptr || group->Is(GroupState::kDead)) return;
    if (pending_) {
      if (!group->pending_members().count(member_id_)) return;
      coordinator_->RemovePendingMember(*group, member_id_);
      coordinator_->TryCompleteJoin(*group);
      return;
    }
    coordinator_->ExpireHeartbeat(*group, member_id_);
  }

 private:
  GroupCoordinator* coordinator_;
  std::weak_ptr<GroupMetadata> group_;
  std::string member_id_;
  bool pending_;
};

class GroupCoordinator::DelayedJoin : public DelayedOperation {
 public:
  DelayedJoin(GroupCoordinator* coordinator, std::weak_ptr<GroupMetadata> group, int64_t delay_ms)
      : DelayedOperation(delay_ms), coordinator_(coordinator), group_(std::move(group)) {}

 protected:
  bool TryComplete() override {
    std::shared_ptr<GroupMetadata> group = group_.lock();
    if (group == nullptr || !group->Is(GroupState::kPreparingRebalance)) return ForceComplete();
    return group->HasAllMembersJoined() ? ForceComplete() : false;
  }
  void OnComplete() override {
    std::shared_ptr<GroupMetadata> group = group_.lock();
    if (group != nullptr && group->Is(GroupState::kPreparingRebalance)) {
      coordinator_->CompleteJoin(*group);
    }
  }

  GroupCoordinator* coordinator_;
  std::weak_ptr<GroupMetadata> group_;
};

class GroupCoordinator::InitialDelayedJoin final : public DelayedJoin {
 public:
  // `remaining_ms`: how much longer the delay may still grow.
  InitialDelayedJoin(GroupCoordinator* coordinator, std::weak_ptr<GroupMetadata> group,
                     int64_t delay_ms, int64_t remaining_ms)
      : DelayedJoin(coordinator, std::move(group), delay_ms), remaining_ms_(remaining_ms) {}

 protected:
  // Only the deadline ends the initial delay (or its group going away).
  bool TryComplete() override { return group_.expired() ? ForceComplete() : false; }
  void OnComplete() override {
    std::shared_ptr<GroupMetadata> group = group_.lock();
    if (group == nullptr || !group->Is(GroupState::kPreparingRebalance)) return;
    const int64_t configured = coordinator_->config_.initial_rebalance_delay_ms;
    // With a zero delay there is nothing to wait for again.
    if (group->new_member_added && remaining_ms_ > 0 && configured > 0) {
      const int64_t extra = std::min(configured, remaining_ms_);
      group->new_member_added = false;
      coordinator_->purgatory_.TryCompleteElseWatch(
          std::make_shared<InitialDelayedJoin>(coordinator_, group_, extra, remaining_ms_ - extra),
          {DelayedOperationKey::GroupJoin(group->id())});
      return;
    }
    coordinator_->CompleteJoin(*group);
  }

 private:
  int64_t remaining_ms_;
};

class GroupCoordinator::DelayedSync final : public DelayedOperation {
 public:
  DelayedSync(GroupCoordinator* coordinator, std::weak_ptr<GroupMetadata> group,
              int32_t generation_id, int64_t timeout_ms)
      : DelayedOperation(timeout_ms),
        coordinator_(coordinator),
        group_(std::move(group)),
        generation_id_(generation_id) {}

 protected:
  // Kafka's tryCompletePendingSync.
  bool TryComplete() override {
    std::shared_ptr<GroupMetadata> group = group_.lock();
    if (group == nullptr || group->generation_id() != generation_id_ ||
        !(group->Is(GroupState::kCompletingRebalance) || group->Is(GroupState::kStable)) ||
        group->pending_sync().empty()) {
      return ForceComplete();
    }
    return false;
  }
  void OnComplete() override {}
  void OnExpiration() override {
    if (std::shared_ptr<GroupMetadata> group = group_.lock()) {
      coordinator_->ExpirePendingSyncs(*group, generation_id_);
    }
  }

 private:
  GroupCoordinator* coordinator_;
  std::weak_ptr<GroupMetadata> group_;
  int32_t generation_id_;
};

std::weak_ptr<GroupMetadata> GroupCoordinator::WeakGroup(const GroupMetadata& group) const {
  auto it = groups_.find(group.id());
  if (it == groups_.end() || it->second.get() != &group) return {};
  return it->second;
}

void GroupCoordinator::RunExpiry(const std::function<void()>& expire) {
  Locked locked(*this);
  // After Shutdown nothing fires: an expiry taken off the queue just before
  // it finds the coordinator unloaded here.
  if (loaded_) expire();
}

void GroupCoordinator::ScheduleHeartbeat(GroupMetadata& group, MemberMetadata& member) {
  const DelayedOperationKey key =
      DelayedOperationKey::MemberHeartbeat(group.id(), member.member_id);
  member.heartbeat_satisfied = true;
  purgatory_.CheckAndComplete(key);
  member.heartbeat_satisfied = false;
  const int64_t timeout =
      member.is_new ? config_.new_member_join_timeout_ms : member.session_timeout_ms;
  purgatory_.TryCompleteElseWatch(
      std::make_shared<DelayedHeartbeat>(this, WeakGroup(group), member.member_id, false, timeout),
      {key});
}

void GroupCoordinator::ForgetHeartbeat(GroupMetadata& group, const std::string& member_id) {
  purgatory_.CheckAndComplete(DelayedOperationKey::MemberHeartbeat(group.id(), member_id));
}

void GroupCoordinator::SchedulePendingMemberExpiry(GroupMetadata& group,
                                                   const std::string& member_id,
                                                   int32_t timeout_ms) {
  purgatory_.TryCompleteElseWatch(
      std::make_shared<DelayedHeartbeat>(this, WeakGroup(group), member_id, true, timeout_ms),
      {DelayedOperationKey::PendingMember(group.id(), member_id)});
}

void GroupCoordinator::RemovePendingMember(GroupMetadata& group, const std::string& member_id) {
  group.pending_members().erase(member_id);
  purgatory_.CheckAndComplete(DelayedOperationKey::PendingMember(group.id(), member_id));
}

// Sessions: a member waiting for its join or sync answer is not expected to
// heartbeat (Kafka's hasSatisfiedHeartbeat), unless it is new and its join
// never completes. A waiting member's session restarts with its answer.
void GroupCoordinator::ExpireHeartbeat(GroupMetadata& group, const std::string& member_id) {
  const MemberMetadata* m = group.FindMember(member_id);
  if (m == nullptr) return;
  const bool waiting = !m->is_new && (m->awaiting_join || m->awaiting_sync);
  if (!waiting) RemoveMemberAndUpdateGroup(group, member_id);
}

void GroupCoordinator::MaybePrepareRebalance(GroupMetadata& group) {
  if (group.Is(GroupState::kStable) || group.Is(GroupState::kCompletingRebalance) ||
      group.Is(GroupState::kEmpty)) {
    PrepareRebalance(group);
  }
}

// Kafka's resetAndPropagateAssignmentError: the answered members' sessions
// restart with the answer, as in SyncGroup.
void GroupCoordinator::FailPendingSyncs(GroupMetadata& group, ErrorCode error) {
  for (auto& [id, m] : group.members()) {
    m.assignment.clear();
    if (m.awaiting_sync) {
      SyncGroupResult r;
      r.error = error;
      answers_.push_back([cb = std::move(m.awaiting_sync), r]() mutable { cb(r); });
      m.awaiting_sync = nullptr;
      ScheduleHeartbeat(group, m);
    }
  }
}

void GroupCoordinator::ClearPendingSyncs(GroupMetadata& group) {
  group.pending_sync().clear();
  purgatory_.CheckAndComplete(DelayedOperationKey::GroupSync(group.id()));
}

void GroupCoordinator::PrepareRebalance(GroupMetadata& group) {
  if (group.Is(GroupState::kCompletingRebalance)) {
    FailPendingSyncs(group, ErrorCode::kRebalanceInProgress);
  }
  ClearPendingSyncs(group);
  std::shared_ptr<DelayedOperation> join;
  if (group.Is(GroupState::kEmpty)) {
    // The first members of an empty group wait group.initial.rebalance.delay.ms
    // for others, so a group starting up rebalances once, not per member.
    group.initial_delay = true;
    group.new_member_added = false;
    join = std::make_shared<InitialDelayedJoin>(
        this, WeakGroup(group), config_.initial_rebalance_delay_ms,
        std::max<int64_t>(group.MaxRebalanceTimeoutMs() - config_.initial_rebalance_delay_ms, 0));
  } else {
    group.initial_delay = false;
    join = std::make_shared<DelayedJoin>(this, WeakGroup(group), group.MaxRebalanceTimeoutMs());
  }
  group.TransitionTo(GroupState::kPreparingRebalance, clock_->NowMs());
  purgatory_.TryCompleteElseWatch(std::move(join), {DelayedOperationKey::GroupJoin(group.id())});
}

void GroupCoordinator::TryCompleteJoin(GroupMetadata& group) {
  purgatory_.CheckAndComplete(DelayedOperationKey::GroupJoin(group.id()));
}

void GroupCoordinator::CompleteJoin(GroupMetadata& group) {
  group.initial_delay = false;
  // Dynamic members that did not rejoin in time are out; static ones keep
  // their place until their session expires (KIP-345).
  std::vector<std::string> gone;
  for (const auto& [id, m] : group.members()) {
    if (!m.awaiting_join && !m.group_instance_id) gone.push_back(id);
  }
  for (const std::string& id : gone) {
    group.RemoveMember(id);
    ForgetHeartbeat(group, id);
  }
  if (group.Is(GroupState::kDead)) return;
  // The leader must be a member that rejoined.
  if (group.leader_id()) {
    const MemberMetadata* leader = group.FindMember(*group.leader_id());
    if (leader == nullptr || !leader->awaiting_join) {
      for (const auto& [id, m] : group.members()) {
        if (m.awaiting_join) {
          group.SetLeader(id);
          break;
        }
      }
    }
  }
  bool anyone_joined = false;
  for (const auto& [id, m] : group.members())
    anyone_joined = anyone_joined || bool(m.awaiting_join);
  if (!group.members().empty() && !anyone_joined) {
    // Only static members that did not rejoin are left: wait for them again.
    PrepareRebalance(group);
    return;
  }
  group.InitNextGeneration(clock_->NowMs());
  if (group.Is(GroupState::kEmpty)) {
    // Kafka stores the empty generation; a failure is only logged there too
    // (the offsets stay valid either way).
    (void)StoreGroup(group);
    return;
  }
  for (auto& [id, m] : group.members()) {
    if (!m.awaiting_join) continue;
    JoinGroupResult r = CurrentJoinResult(group, id, group.IsLeader(id));
    answers_.push_back(
        [cb = std::move(m.awaiting_join), r = std::move(r)]() mutable { cb(std::move(r)); });
    m.awaiting_join = nullptr;
    m.is_new = false;
    ScheduleHeartbeat(group, m);
    group.pending_sync().insert(id);
  }
  // Members that do not send SyncGroup within the rebalance timeout are
  // removed (Kafka's pending-sync expiry), so a lost member cannot keep the
  // others waiting for an assignment forever.
  purgatory_.TryCompleteElseWatch(
      std::make_shared<DelayedSync>(this, WeakGroup(group), group.generation_id(),
                                    group.MaxRebalanceTimeoutMs()),
      {DelayedOperationKey::GroupSync(group.id())});
}

void GroupCoordinator::ExpirePendingSyncs(GroupMetadata& group, int32_t generation_id) {
  if (group.generation_id() != generation_id) return;
  if (!group.Is(GroupState::kCompletingRebalance) && !group.Is(GroupState::kStable)) return;
  std::vector<std::string> lagging(group.pending_sync().begin(), group.pending_sync().end());
  group.pending_sync().clear();
  for (const std::string& id : lagging) RemoveMemberAndUpdateGroup(group, id);
}

}  // namespace daruma
