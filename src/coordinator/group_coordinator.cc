// Membership: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the deadlines
// that drive them, following Kafka's GroupCoordinator (classic protocol).
// Offsets, loading and administration are in group_coordinator_offsets.cc.
#include "coordinator/group_coordinator.h"

#include <algorithm>

#include "log/uuid.h"

namespace daruma {

GroupCoordinator::GroupCoordinator(GroupCoordinatorConfig config, GroupStorage* storage,
                                   Clock* clock)
    : config_(config), storage_(storage), clock_(clock) {}

GroupCoordinator::~GroupCoordinator() = default;

bool GroupCoordinator::loaded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return loaded_;
}

size_t GroupCoordinator::GroupCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return groups_.size();
}

ErrorCode GroupCoordinator::AvailabilityLocked(const std::string& group_id) const {
  if (!loaded_) return ErrorCode::kCoordinatorLoadInProgress;
  if (!failed_partitions_.empty() && failed_partitions_.count(PartitionFor(group_id))) {
    return ErrorCode::kCoordinatorNotAvailable;
  }
  return ErrorCode::kNone;
}

GroupMetadata* GroupCoordinator::FindGroup(const std::string& group_id) {
  auto it = groups_.find(group_id);
  return it == groups_.end() ? nullptr : it->second.get();
}

// Kafka's member ids: the client id (or the static instance id) and a
// random UUID in Java's text form.
std::string GroupCoordinator::NewMemberId(const std::string& prefix) {
  const std::string hex = Uuid::Random().ToHex();
  return prefix + "-" + hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

// Kafka's validateCurrentMember: a static member's instance id must still
// map to this member id (otherwise it was replaced: FENCED_INSTANCE_ID).
ErrorCode GroupCoordinator::CheckMember(GroupMetadata& group, const std::string& member_id,
                                        const std::optional<std::string>& instance_id) {
  if (instance_id) {
    const std::string* current = group.StaticMemberId(*instance_id);
    if (current != nullptr && *current != member_id) return ErrorCode::kFencedInstanceId;
  }
  if (!group.Has(member_id)) return ErrorCode::kUnknownMemberId;
  return ErrorCode::kNone;
}

void GroupCoordinator::FailWaitingCalls(MemberMetadata& member, ErrorCode error, Completions& out) {
  if (member.awaiting_join) {
    JoinGroupResult r;
    r.error = error;
    r.member_id = member.member_id;
    out.push_back([cb = std::move(member.awaiting_join), r]() mutable { cb(r); });
    member.awaiting_join = nullptr;
  }
  if (member.awaiting_sync) {
    SyncGroupResult r;
    r.error = error;
    out.push_back([cb = std::move(member.awaiting_sync), r]() mutable { cb(r); });
    member.awaiting_sync = nullptr;
  }
}

void GroupCoordinator::ApplyJoinSettings(const JoinGroupArgs& args, MemberMetadata& member) {
  member.client_id = args.client_id;
  member.client_host = args.client_host;
  member.session_timeout_ms = args.session_timeout_ms;
  member.rebalance_timeout_ms = args.rebalance_timeout_ms;
}

GroupMetadata& GroupCoordinator::CreateGroupLocked(const std::string& group_id) {
  auto created = std::make_unique<GroupMetadata>(group_id, clock_->NowMs());
  GroupMetadata& group = *created;
  groups_.emplace(group_id, std::move(created));
  return group;
}

void GroupCoordinator::ScheduleHeartbeat(MemberMetadata& member) {
  const int64_t timeout =
      member.is_new ? config_.new_member_join_timeout_ms : member.session_timeout_ms;
  member.heartbeat_deadline_ms = clock_->NowMs() + timeout;
}

void GroupCoordinator::JoinGroup(JoinGroupArgs args, JoinCallback done) {
  Completions out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto fail = [&](ErrorCode error) {
      JoinGroupResult r;
      r.error = error;
      r.member_id = args.member_id;
      out.push_back([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
    };
    if (args.rebalance_timeout_ms < 0) args.rebalance_timeout_ms = args.session_timeout_ms;
    GroupMetadata* group = FindGroup(args.group_id);
    if (ErrorCode e = AvailabilityLocked(args.group_id); e != ErrorCode::kNone) {
      fail(e);
    } else if (args.group_id.empty()) {
      fail(ErrorCode::kInvalidGroupId);
    } else if (args.session_timeout_ms < config_.min_session_timeout_ms ||
               args.session_timeout_ms > config_.max_session_timeout_ms) {
      fail(ErrorCode::kInvalidSessionTimeout);
    } else if (group == nullptr && !args.member_id.empty()) {
      fail(ErrorCode::kUnknownMemberId);
    } else {
      if (group == nullptr) group = &CreateGroupLocked(args.group_id);
      const bool known =
          !args.member_id.empty() &&
          (group->Has(args.member_id) || group->pending_members().count(args.member_id));
      if (!known && !group->Is(GroupState::kEmpty) &&
          int64_t(group->members().size()) >= config_.max_size) {
        fail(ErrorCode::kGroupMaxSizeReached);
      } else if (args.member_id.empty()) {
        JoinNewMember(*group, args, done, out);
      } else {
        JoinKnownMember(*group, args, done, out);
      }
      // A group created by this request that took nobody in goes away again.
      if (group->members().empty() && group->pending_members().empty() &&
          group->Is(GroupState::kEmpty) && group->offsets().empty() &&
          group->generation_id() == 0) {
        groups_.erase(args.group_id);
      }
    }
  }
  for (auto& f : out) f();
}

void GroupCoordinator::JoinNewMember(GroupMetadata& group, JoinGroupArgs& args, JoinCallback& done,
                                     Completions& out) {
  auto fail = [&](ErrorCode error) {
    JoinGroupResult r;
    r.error = error;
    out.push_back([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
  };
  if (group.Is(GroupState::kDead)) return fail(ErrorCode::kCoordinatorNotAvailable);
  if (!group.SupportsProtocols(args.protocol_type, args.protocols)) {
    return fail(ErrorCode::kInconsistentGroupProtocol);
  }
  if (args.group_instance_id) {
    if (const std::string* existing = group.StaticMemberId(*args.group_instance_id)) {
      args.member_id = *existing;
      return JoinStaticMember(group, args, done, out);
    }
    std::string id = NewMemberId(*args.group_instance_id);
    return AddMemberAndRebalance(group, args, std::move(id), std::move(done), out);
  }
  std::string id = NewMemberId(args.client_id);
  if (args.require_known_member_id) {
    // KIP-394: the member must come back with the id it is given, so a
    // client that never does leaves no member behind; the id expires after
    // the session timeout.
    group.pending_members().insert(id);
    group.pending_deadlines()[id] = clock_->NowMs() + args.session_timeout_ms;
    JoinGroupResult r;
    r.error = ErrorCode::kMemberIdRequired;
    r.member_id = id;
    out.push_back([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
    return;
  }
  AddMemberAndRebalance(group, args, std::move(id), std::move(done), out);
}

// A static member (KIP-345) rejoining under its instance id gets a new member
// id; the old id is fenced. A Stable group whose member kept its protocols
// answers at once with the current generation, without a rebalance.
void GroupCoordinator::JoinStaticMember(GroupMetadata& group, JoinGroupArgs& args,
                                        JoinCallback& done, Completions& out) {
  const std::string old_id = args.member_id;
  const std::string new_id = NewMemberId(*args.group_instance_id);
  FailWaitingCalls(*group.FindMember(old_id), ErrorCode::kFencedInstanceId, out);
  MemberMetadata& member = group.ReplaceStaticMember(old_id, new_id);
  ApplyJoinSettings(args, member);
  args.member_id = new_id;
  const bool unchanged = group.protocol_name() && member.protocol_type == args.protocol_type &&
                         member.SameProtocols(args.protocols);
  if (group.Is(GroupState::kStable) && unchanged) {
    ScheduleHeartbeat(member);
    const bool leader = group.IsLeader(new_id);
    JoinGroupResult r = CurrentJoinResult(group, new_id, leader && args.supports_skip_assignment);
    r.skip_assignment = leader && args.supports_skip_assignment;
    if (Status s = StoreGroup(group); !s.ok()) {
      // Kafka reverts the replacement when the new id cannot be stored.
      group.ReplaceStaticMember(new_id, old_id);
      r = JoinGroupResult{};
      r.error = ErrorCode::kUnknownServerError;
      r.member_id = new_id;
    }
    out.push_back([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
    return;
  }
  UpdateMemberAndRebalance(group, member, args, std::move(done), out);
}

void GroupCoordinator::JoinKnownMember(GroupMetadata& group, JoinGroupArgs& args,
                                       JoinCallback& done, Completions& out) {
  auto answer = [&](JoinGroupResult r) {
    out.push_back([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
  };
  auto fail = [&](ErrorCode error) {
    JoinGroupResult r;
    r.error = error;
    r.member_id = args.member_id;
    answer(std::move(r));
  };
  if (group.Is(GroupState::kDead)) return fail(ErrorCode::kCoordinatorNotAvailable);
  if (!group.SupportsProtocols(args.protocol_type, args.protocols)) {
    return fail(ErrorCode::kInconsistentGroupProtocol);
  }
  if (group.pending_members().count(args.member_id)) {
    group.pending_members().erase(args.member_id);
    group.pending_deadlines().erase(args.member_id);
    std::string id = args.member_id;
    return AddMemberAndRebalance(group, args, std::move(id), std::move(done), out);
  }
  if (ErrorCode e = CheckMember(group, args.member_id, args.group_instance_id);
      e != ErrorCode::kNone) {
    return fail(e);
  }
  MemberMetadata& member = *group.FindMember(args.member_id);
  const bool same = member.SameProtocols(args.protocols);
  switch (group.state()) {
    case GroupState::kPreparingRebalance:
      return UpdateMemberAndRebalance(group, member, args, std::move(done), out);
    case GroupState::kCompletingRebalance:
      if (same) {
        // A retried JoinGroup whose answer was lost: the same answer again.
        return answer(CurrentJoinResult(group, args.member_id, group.IsLeader(args.member_id)));
      }
      return UpdateMemberAndRebalance(group, member, args, std::move(done), out);
    case GroupState::kStable:
      if (group.IsLeader(args.member_id) || !same) {
        // The leader rejoining asks for a new assignment (e.g. new topics).
        return UpdateMemberAndRebalance(group, member, args, std::move(done), out);
      }
      return answer(CurrentJoinResult(group, args.member_id, false));
    case GroupState::kEmpty:
    case GroupState::kDead:
      return fail(ErrorCode::kUnknownMemberId);
  }
}

JoinGroupResult GroupCoordinator::CurrentJoinResult(GroupMetadata& group,
                                                    const std::string& member_id,
                                                    bool with_members) {
  JoinGroupResult r;
  r.generation_id = group.generation_id();
  r.protocol_type = group.protocol_type();
  r.protocol_name = group.protocol_name();
  r.leader_id = group.leader_id().value_or("");
  r.member_id = member_id;
  if (with_members && group.protocol_name()) {
    for (const auto& [id, m] : group.members()) {
      const Bytes* meta = m.MetadataFor(*group.protocol_name());
      r.members.push_back({id, m.group_instance_id, meta != nullptr ? *meta : Bytes{}});
    }
  }
  return r;
}

void GroupCoordinator::AddMemberAndRebalance(GroupMetadata& group, JoinGroupArgs& args,
                                             std::string member_id, JoinCallback done,
                                             Completions& out) {
  MemberMetadata m;
  m.member_id = member_id;
  m.group_instance_id = args.group_instance_id;
  ApplyJoinSettings(args, m);
  m.protocol_type = args.protocol_type;
  m.protocols = std::move(args.protocols);
  m.awaiting_join = std::move(done);
  m.is_new = true;
  ScheduleHeartbeat(m);
  group.AddMember(std::move(m));
  // The initial delayed join waits a little longer for each member that
  // arrives during it (Kafka's InitialDelayedJoin).
  if (group.Is(GroupState::kPreparingRebalance) && group.initial_delay)
    group.new_member_added = true;
  MaybePrepareRebalance(group, out);
  TryCompleteJoin(group, out);
}

void GroupCoordinator::UpdateMemberAndRebalance(GroupMetadata& group, MemberMetadata& member,
                                                JoinGroupArgs& args, JoinCallback done,
                                                Completions& out) {
  member.protocols = std::move(args.protocols);
  member.protocol_type = args.protocol_type;
  ApplyJoinSettings(args, member);
  if (member.awaiting_join) {
    // A duplicate join replaces the earlier one, which Kafka answers with
    // the same result later; the client only reads the newest.
    JoinGroupResult superseded;
    superseded.error = ErrorCode::kRebalanceInProgress;
    superseded.member_id = member.member_id;
    out.push_back([cb = std::move(member.awaiting_join), superseded]() mutable { cb(superseded); });
  }
  member.awaiting_join = std::move(done);
  MaybePrepareRebalance(group, out);
  TryCompleteJoin(group, out);
}

void GroupCoordinator::MaybePrepareRebalance(GroupMetadata& group, Completions& out) {
  if (group.Is(GroupState::kStable) || group.Is(GroupState::kCompletingRebalance) ||
      group.Is(GroupState::kEmpty)) {
    PrepareRebalance(group, out);
  }
}

void GroupCoordinator::FailPendingSyncs(GroupMetadata& group, ErrorCode error, Completions& out) {
  for (auto& [id, m] : group.members()) {
    m.assignment.clear();
    if (m.awaiting_sync) {
      SyncGroupResult r;
      r.error = error;
      out.push_back([cb = std::move(m.awaiting_sync), r]() mutable { cb(r); });
      m.awaiting_sync = nullptr;
    }
  }
}

void GroupCoordinator::PrepareRebalance(GroupMetadata& group, Completions& out) {
  if (group.Is(GroupState::kCompletingRebalance)) {
    FailPendingSyncs(group, ErrorCode::kRebalanceInProgress, out);
  }
  group.sync_deadline_ms = -1;
  group.pending_sync().clear();
  const int64_t now = clock_->NowMs();
  if (group.Is(GroupState::kEmpty)) {
    // The first members of an empty group wait group.initial.rebalance.delay.ms
    // for others, so a group starting up rebalances once, not per member.
    group.initial_delay = true;
    group.new_member_added = false;
    group.join_deadline_ms = now + config_.initial_rebalance_delay_ms;
    group.initial_delay_remaining_ms =
        std::max<int64_t>(group.MaxRebalanceTimeoutMs() - config_.initial_rebalance_delay_ms, 0);
  } else {
    group.initial_delay = false;
    group.join_deadline_ms = now + group.MaxRebalanceTimeoutMs();
  }
  group.TransitionTo(GroupState::kPreparingRebalance, now);
}

void GroupCoordinator::TryCompleteJoin(GroupMetadata& group, Completions& out) {
  if (group.Is(GroupState::kPreparingRebalance) && !group.initial_delay &&
      group.HasAllMembersJoined()) {
    CompleteJoin(group, out);
  }
}

void GroupCoordinator::CompleteJoin(GroupMetadata& group, Completions& out) {
  group.join_deadline_ms = -1;
  group.initial_delay = false;
  // Dynamic members that did not rejoin in time are out; static ones keep
  // their place until their session expires (KIP-345).
  std::vector<std::string> gone;
  for (const auto& [id, m] : group.members()) {
    if (!m.awaiting_join && !m.group_instance_id) gone.push_back(id);
  }
  for (const std::string& id : gone) group.RemoveMember(id);
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
    PrepareRebalance(group, out);
    group.TransitionTo(GroupState::kPreparingRebalance, clock_->NowMs());
    return;
  }
  group.InitNextGeneration(clock_->NowMs());
  if (group.Is(GroupState::kEmpty)) {
    // Kafka stores the empty generation; a failure is only logged there too
    // (the offsets stay valid either way).
    (void)StoreGroup(group);
    return;
  }
  const int64_t now = clock_->NowMs();
  for (auto& [id, m] : group.members()) {
    if (!m.awaiting_join) continue;
    JoinGroupResult r = CurrentJoinResult(group, id, group.IsLeader(id));
    out.push_back(
        [cb = std::move(m.awaiting_join), r = std::move(r)]() mutable { cb(std::move(r)); });
    m.awaiting_join = nullptr;
    m.is_new = false;
    ScheduleHeartbeat(m);
    group.pending_sync().insert(id);
  }
  // Members that do not send SyncGroup within the rebalance timeout are
  // removed (Kafka's pending-sync expiry), so a lost member cannot keep the
  // others waiting for an assignment forever.
  group.sync_deadline_ms = now + group.MaxRebalanceTimeoutMs();
}

void GroupCoordinator::SyncGroup(SyncGroupArgs args, SyncCallback done) {
  Completions out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto fail = [&](ErrorCode error) {
      SyncGroupResult r;
      r.error = error;
      out.push_back([done = std::move(done), r]() mutable { done(r); });
    };
    GroupMetadata* group = FindGroup(args.group_id);
    ErrorCode check = ErrorCode::kNone;
    if ((check = AvailabilityLocked(args.group_id)) != ErrorCode::kNone) {
      fail(check);
    } else if (group == nullptr) {
      fail(ErrorCode::kUnknownMemberId);
    } else if (group->Is(GroupState::kDead)) {
      fail(ErrorCode::kCoordinatorNotAvailable);
    } else if ((check = CheckMember(*group, args.member_id, args.group_instance_id)) !=
               ErrorCode::kNone) {
      fail(check);
    } else if (args.generation_id != group->generation_id()) {
      fail(ErrorCode::kIllegalGeneration);
    } else if ((args.protocol_type && args.protocol_type != group->protocol_type()) ||
               (args.protocol_name && args.protocol_name != group->protocol_name())) {
      fail(ErrorCode::kInconsistentGroupProtocol);
    } else if (group->Is(GroupState::kEmpty)) {
      fail(ErrorCode::kUnknownMemberId);
    } else if (group->Is(GroupState::kPreparingRebalance)) {
      fail(ErrorCode::kRebalanceInProgress);
    } else {
      MemberMetadata& member = *group->FindMember(args.member_id);
      group->pending_sync().erase(args.member_id);
      if (group->Is(GroupState::kStable)) {
        SyncGroupResult r;
        r.protocol_type = group->protocol_type();
        r.protocol_name = group->protocol_name();
        r.assignment = member.assignment;
        out.push_back([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
      } else {
        member.awaiting_sync = std::move(done);
        ScheduleHeartbeat(member);
        if (group->IsLeader(args.member_id)) {
          // The leader's assignment: members it left out get an empty one.
          for (auto& [id, m] : group->members()) m.assignment.clear();
          for (auto& [id, bytes] : args.assignments) {
            if (MemberMetadata* m = group->FindMember(id)) m->assignment = std::move(bytes);
          }
          if (Status s = StoreGroup(*group); !s.ok()) {
            // Nothing stored: every waiting member fails and the group
            // rebalances, as Kafka does when its append fails.
            FailPendingSyncs(*group, ErrorCode::kCoordinatorNotAvailable, out);
            PrepareRebalance(*group, out);
          } else {
            group->TransitionTo(GroupState::kStable, clock_->NowMs());
            for (auto& [id, m] : group->members()) {
              if (!m.awaiting_sync) continue;
              SyncGroupResult r;
              r.protocol_type = group->protocol_type();
              r.protocol_name = group->protocol_name();
              r.assignment = m.assignment;
              out.push_back([cb = std::move(m.awaiting_sync), r = std::move(r)]() mutable {
                cb(std::move(r));
              });
              m.awaiting_sync = nullptr;
            }
          }
        }
      }
    }
  }
  for (auto& f : out) f();
}

ErrorCode GroupCoordinator::Heartbeat(const std::string& group_id, const std::string& member_id,
                                      const std::optional<std::string>& group_instance_id,
                                      int32_t generation_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ErrorCode e = AvailabilityLocked(group_id); e != ErrorCode::kNone) return e;
  GroupMetadata* group = FindGroup(group_id);
  if (group == nullptr) return ErrorCode::kUnknownMemberId;
  if (group->Is(GroupState::kDead)) return ErrorCode::kCoordinatorNotAvailable;
  if (ErrorCode e = CheckMember(*group, member_id, group_instance_id); e != ErrorCode::kNone)
    return e;
  if (group->Is(GroupState::kEmpty)) return ErrorCode::kUnknownMemberId;
  if (generation_id != group->generation_id()) return ErrorCode::kIllegalGeneration;
  ScheduleHeartbeat(*group->FindMember(member_id));
  // During the join phase the answer tells the member to rejoin.
  return group->Is(GroupState::kPreparingRebalance) ? ErrorCode::kRebalanceInProgress
                                                    : ErrorCode::kNone;
}

LeaveGroupResult GroupCoordinator::LeaveGroup(const std::string& group_id,
                                              const std::vector<MemberIdentity>& members) {
  Completions out;
  LeaveGroupResult result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    GroupMetadata* group = FindGroup(group_id);
    if (ErrorCode e = AvailabilityLocked(group_id); e != ErrorCode::kNone) {
      result.error = e;
    } else if (group == nullptr) {
      result.error = ErrorCode::kUnknownMemberId;
    } else if (group->Is(GroupState::kDead)) {
      result.error = ErrorCode::kCoordinatorNotAvailable;
    } else {
      for (const MemberIdentity& who : members) {
        std::string id = who.member_id;
        // A static member may leave by its instance id alone (KIP-345).
        if (id.empty() && who.group_instance_id) {
          const std::string* found = group->StaticMemberId(*who.group_instance_id);
          id = found != nullptr ? *found : "";
        }
        if (group->pending_members().count(id)) {
          group->pending_members().erase(id);
          group->pending_deadlines().erase(id);
          result.member_errors.push_back(ErrorCode::kNone);
          TryCompleteJoin(*group, out);
          continue;
        }
        ErrorCode e = CheckMember(*group, id, who.group_instance_id);
        result.member_errors.push_back(e);
        if (e == ErrorCode::kNone) RemoveMemberAndUpdateGroup(*group, id, out);
      }
    }
  }
  for (auto& f : out) f();
  return result;
}

void GroupCoordinator::RemoveMemberAndUpdateGroup(GroupMetadata& group,
                                                  const std::string& member_id, Completions& out) {
  MemberMetadata* member = group.FindMember(member_id);
  if (member == nullptr) return;
  FailWaitingCalls(*member, ErrorCode::kUnknownMemberId, out);
  group.RemoveMember(member_id);
  group.pending_sync().erase(member_id);
  switch (group.state()) {
    case GroupState::kStable:
    case GroupState::kCompletingRebalance:
      PrepareRebalance(group, out);
      break;
    case GroupState::kPreparingRebalance:
      TryCompleteJoin(group, out);
      break;
    case GroupState::kEmpty:
    case GroupState::kDead:
      break;
  }
}

void GroupCoordinator::Shutdown() {
  Completions out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    loaded_ = false;
    for (auto& [gid, group] : groups_) {
      for (auto& [id, m] : group->members()) FailWaitingCalls(m, ErrorCode::kNotCoordinator, out);
    }
  }
  for (auto& f : out) f();
}

void GroupCoordinator::Tick() {
  Completions out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!loaded_) return;
    const int64_t now = clock_->NowMs();
    for (auto& [gid, owned] : groups_) {
      GroupMetadata& group = *owned;
      // Member ids handed out with MEMBER_ID_REQUIRED that never came back.
      for (auto it = group.pending_deadlines().begin(); it != group.pending_deadlines().end();) {
        if (it->second <= now) {
          group.pending_members().erase(it->first);
          it = group.pending_deadlines().erase(it);
          TryCompleteJoin(group, out);
        } else {
          ++it;
        }
      }
      // Sessions: a member waiting for its join or sync answer is not
      // expected to heartbeat (Kafka's hasSatisfiedHeartbeat), unless it is
      // new and its join never completes.
      std::vector<std::string> expired;
      for (const auto& [id, m] : group.members()) {
        const bool waiting = !m.is_new && (m.awaiting_join || m.awaiting_sync);
        if (!waiting && m.heartbeat_deadline_ms <= now) expired.push_back(id);
      }
      for (const std::string& id : expired) RemoveMemberAndUpdateGroup(group, id, out);
      if (group.Is(GroupState::kPreparingRebalance) && group.join_deadline_ms >= 0 &&
          group.join_deadline_ms <= now) {
        // With a zero delay there is nothing to wait for again.
        if (group.initial_delay && group.new_member_added && group.initial_delay_remaining_ms > 0 &&
            config_.initial_rebalance_delay_ms > 0) {
          const int64_t extra = std::min<int64_t>(config_.initial_rebalance_delay_ms,
                                                  group.initial_delay_remaining_ms);
          group.initial_delay_remaining_ms -= extra;
          group.new_member_added = false;
          group.join_deadline_ms = now + extra;
        } else {
          CompleteJoin(group, out);
        }
      }
      if ((group.Is(GroupState::kCompletingRebalance) || group.Is(GroupState::kStable)) &&
          group.sync_deadline_ms >= 0 && group.sync_deadline_ms <= now) {
        group.sync_deadline_ms = -1;
        std::vector<std::string> lagging(group.pending_sync().begin(), group.pending_sync().end());
        group.pending_sync().clear();
        for (const std::string& id : lagging) RemoveMemberAndUpdateGroup(group, id, out);
      }
    }
    if (now >= next_retention_check_ms_) {
      next_retention_check_ms_ = now + config_.retention_check_interval_ms;
      ExpireOffsetsLocked(out);
    }
  }
  for (auto& f : out) f();
}

}  // namespace daruma
