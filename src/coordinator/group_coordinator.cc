// Membership: JoinGroup, SyncGroup, Heartbeat and LeaveGroup, following
// Kafka's GroupCoordinator (classic protocol). The deadlines that drive them
// are in group_coordinator_deadlines.cc; offsets, loading and administration
// in group_coordinator_offsets.cc.
#include "coordinator/group_coordinator.h"

#include <algorithm>

#include "log/uuid.h"

namespace daruma {

GroupCoordinator::Locked::~Locked() {
  Completions answers;
  answers.swap(coordinator_.answers_);
  lock_.unlock();
  for (auto& answer : answers) answer();
}

GroupCoordinator::GroupCoordinator(GroupCoordinatorConfig config, GroupStorage* storage,
                                   Scheduler* scheduler)
    : config_(config),
      storage_(storage),
      scheduler_(scheduler),
      clock_(scheduler->clock()),
      anchor_(std::make_shared<JobAnchor>(this)),
      purgatory_("group-deadlines", scheduler,
                 [this](std::function<void()> expire) { RunExpiry(expire); }) {}

GroupCoordinator::~GroupCoordinator() {
  std::lock_guard<std::mutex> lock(anchor_->mu);
  anchor_->coordinator = nullptr;
}

bool GroupCoordinator::loaded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return loaded_;
}

size_t GroupCoordinator::GroupCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return groups_.size();
}

// Kafka's mapping of a failed group-metadata append (GroupMetadataManager.
// storeGroup): a missing partition is COORDINATOR_NOT_AVAILABLE, a storage
// error moves the coordinator (NOT_COORDINATOR), a record above
// max.message.bytes and anything else is UNKNOWN_SERVER_ERROR.
namespace {

ErrorCode StoreGroupErrorFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kNotFound:
      return ErrorCode::kCoordinatorNotAvailable;
    case StatusCode::kIoError:
      return ErrorCode::kNotCoordinator;
    default:
      return ErrorCode::kUnknownServerError;
  }
}

}  // namespace

ErrorCode GroupCoordinator::AvailabilityLocked(const std::string& group_id) const {
  if (!loaded_) return ErrorCode::kCoordinatorLoadInProgress;
  const int32_t partition = PartitionFor(group_id);
  if (!failed_partitions_.empty() && failed_partitions_.count(partition)) {
    return ErrorCode::kCoordinatorNotAvailable;
  }
  // Its log dir went offline since Load: Kafka's coordinator resigns the
  // partition (KAFKA_STORAGE_ERROR is NOT_COORDINATOR to the client, which
  // looks the coordinator up again), so neither the offsets held in memory
  // nor new commits are served from a log that may have lost them.
  if (!storage_->CheckAvailable(partition).ok()) return ErrorCode::kNotCoordinator;
  return ErrorCode::kNone;
}

ErrorCode GroupCoordinator::Availability(const std::string& group_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return AvailabilityLocked(group_id);
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

void GroupCoordinator::FailWaitingCalls(MemberMetadata& member, ErrorCode error) {
  if (member.awaiting_join) {
    JoinGroupResult r;
    r.error = error;
    r.member_id = member.member_id;
    answers_.push_back([cb = std::move(member.awaiting_join), r]() mutable { cb(r); });
    member.awaiting_join = nullptr;
  }
  if (member.awaiting_sync) {
    SyncGroupResult r;
    r.error = error;
    answers_.push_back([cb = std::move(member.awaiting_sync), r]() mutable { cb(r); });
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
  auto created = std::make_shared<GroupMetadata>(group_id, clock_->NowMs());
  GroupMetadata& group = *created;
  groups_.emplace(group_id, std::move(created));
  return group;
}

void GroupCoordinator::JoinGroup(JoinGroupArgs args, JoinCallback done) {
  Locked locked(*this);
  auto fail = [&](ErrorCode error) {
    JoinGroupResult r;
    r.error = error;
    r.member_id = args.member_id;
    answers_.push_back(
        [done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
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
    const bool known = !args.member_id.empty() && (group->Has(args.member_id) ||
                                                   group->pending_members().count(args.member_id));
    if (!known && !group->Is(GroupState::kEmpty) &&
        int64_t(group->members().size()) >= config_.max_size) {
      fail(ErrorCode::kGroupMaxSizeReached);
    } else if (args.member_id.empty()) {
      JoinNewMember(*group, args, done);
    } else {
      JoinKnownMember(*group, args, done);
    }
    // A group created by this request that took nobody in goes away again.
    if (group->members().empty() && group->pending_members().empty() &&
        group->Is(GroupState::kEmpty) && group->offsets().empty() &&
        group->pending_txn_offsets().empty() && group->generation_id() == 0) {
      groups_.erase(args.group_id);
    }
  }
}

void GroupCoordinator::JoinNewMember(GroupMetadata& group, JoinGroupArgs& args,
                                     JoinCallback& done) {
  auto fail = [&](ErrorCode error) {
    JoinGroupResult r;
    r.error = error;
    answers_.push_back(
        [done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
  };
  if (group.Is(GroupState::kDead)) return fail(ErrorCode::kCoordinatorNotAvailable);
  if (!group.SupportsProtocols(args.protocol_type, args.protocols)) {
    return fail(ErrorCode::kInconsistentGroupProtocol);
  }
  if (args.group_instance_id) {
    if (const std::string* existing = group.StaticMemberId(*args.group_instance_id)) {
      args.member_id = *existing;
      return JoinStaticMember(group, args, done);
    }
    std::string id = NewMemberId(*args.group_instance_id);
    return AddMemberAndRebalance(group, args, std::move(id), std::move(done));
  }
  std::string id = NewMemberId(args.client_id);
  if (args.require_known_member_id) {
    // KIP-394: the member must come back with the id it is given, so a
    // client that never does leaves no member behind; the id expires after
    // the session timeout.
    group.pending_members().insert(id);
    SchedulePendingMemberExpiry(group, id, args.session_timeout_ms);
    JoinGroupResult r;
    r.error = ErrorCode::kMemberIdRequired;
    r.member_id = id;
    answers_.push_back(
        [done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
    return;
  }
  AddMemberAndRebalance(group, args, std::move(id), std::move(done));
}

// A static member (KIP-345) rejoining under its instance id gets a new member
// id; the old id is fenced. A Stable group whose member kept its protocols
// answers at once with the current generation, without a rebalance.
void GroupCoordinator::JoinStaticMember(GroupMetadata& group, JoinGroupArgs& args,
                                        JoinCallback& done) {
  const std::string old_id = args.member_id;
  const std::string new_id = NewMemberId(*args.group_instance_id);
  FailWaitingCalls(*group.FindMember(old_id), ErrorCode::kFencedInstanceId);
  MemberMetadata& member = group.ReplaceStaticMember(old_id, new_id);
  ApplyJoinSettings(args, member);
  // The session goes on under the new id (Kafka's
  // updateStaticMemberAndRebalance); the old id's deadline is done.
  ScheduleHeartbeat(group, member);
  ForgetHeartbeat(group, old_id);
  args.member_id = new_id;
  const bool unchanged = group.protocol_name() && member.protocol_type == args.protocol_type &&
                         member.SameProtocols(args.protocols);
  if (group.Is(GroupState::kStable) && unchanged) {
    const bool leader = group.IsLeader(new_id);
    JoinGroupResult r = CurrentJoinResult(group, new_id, leader && args.supports_skip_assignment);
    r.skip_assignment = leader && args.supports_skip_assignment;
    if (Status s = StoreGroup(group); !s.ok()) {
      // Kafka reverts the replacement when the new id cannot be stored.
      ScheduleHeartbeat(group, group.ReplaceStaticMember(new_id, old_id));
      ForgetHeartbeat(group, new_id);
      r = JoinGroupResult{};
      r.error = ErrorCode::kUnknownServerError;
      r.member_id = new_id;
    }
    answers_.push_back(
        [done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
    return;
  }
  UpdateMemberAndRebalance(group, member, args, std::move(done));
}

void GroupCoordinator::JoinKnownMember(GroupMetadata& group, JoinGroupArgs& args,
                                       JoinCallback& done) {
  auto answer = [&](JoinGroupResult r) {
    answers_.push_back(
        [done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
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
    RemovePendingMember(group, args.member_id);
    std::string id = args.member_id;
    return AddMemberAndRebalance(group, args, std::move(id), std::move(done));
  }
  if (ErrorCode e = CheckMember(group, args.member_id, args.group_instance_id);
      e != ErrorCode::kNone) {
    return fail(e);
  }
  MemberMetadata& member = *group.FindMember(args.member_id);
  const bool same = member.SameProtocols(args.protocols);
  switch (group.state()) {
    case GroupState::kPreparingRebalance:
      return UpdateMemberAndRebalance(group, member, args, std::move(done));
    case GroupState::kCompletingRebalance:
      if (same) {
        // A retried JoinGroup whose answer was lost: the same answer again.
        return answer(CurrentJoinResult(group, args.member_id, group.IsLeader(args.member_id)));
      }
      return UpdateMemberAndRebalance(group, member, args, std::move(done));
    case GroupState::kStable:
      if (group.IsLeader(args.member_id) || !same) {
        // The leader rejoining asks for a new assignment (e.g. new topics).
        return UpdateMemberAndRebalance(group, member, args, std::move(done));
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
                                             std::string member_id, JoinCallback done) {
  MemberMetadata m;
  m.member_id = member_id;
  m.group_instance_id = args.group_instance_id;
  ApplyJoinSettings(args, m);
  m.protocol_type = args.protocol_type;
  m.protocols = std::move(args.protocols);
  m.awaiting_join = std::move(done);
  m.is_new = true;
  group.AddMember(std::move(m));
  ScheduleHeartbeat(group, *group.FindMember(member_id));
  // The initial delayed join waits a little longer for each member that
  // arrives during it (Kafka's InitialDelayedJoin).
  if (group.Is(GroupState::kPreparingRebalance) && group.initial_delay)
    group.new_member_added = true;
  MaybePrepareRebalance(group);
  TryCompleteJoin(group);
}

void GroupCoordinator::UpdateMemberAndRebalance(GroupMetadata& group, MemberMetadata& member,
                                                JoinGroupArgs& args, JoinCallback done) {
  member.protocols = std::move(args.protocols);
  member.protocol_type = args.protocol_type;
  ApplyJoinSettings(args, member);
  if (member.awaiting_join) {
    // A duplicate join replaces the earlier one, which Kafka answers with
    // the same result later; the client only reads the newest.
    JoinGroupResult superseded;
    superseded.error = ErrorCode::kRebalanceInProgress;
    superseded.member_id = member.member_id;
    answers_.push_back(
        [cb = std::move(member.awaiting_join), superseded]() mutable { cb(superseded); });
  }
  member.awaiting_join = std::move(done);
  MaybePrepareRebalance(group);
  TryCompleteJoin(group);
}

void GroupCoordinator::SyncGroup(SyncGroupArgs args, SyncCallback done) {
  Locked locked(*this);
  auto fail = [&](ErrorCode error) {
    SyncGroupResult r;
    r.error = error;
    answers_.push_back([done = std::move(done), r]() mutable { done(r); });
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
    purgatory_.CheckAndComplete(DelayedOperationKey::GroupSync(group->id()));
    if (group->Is(GroupState::kStable)) {
      SyncGroupResult r;
      r.protocol_type = group->protocol_type();
      r.protocol_name = group->protocol_name();
      r.assignment = member.assignment;
      answers_.push_back(
          [done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
    } else {
      member.awaiting_sync = std::move(done);
      ScheduleHeartbeat(*group, member);
      if (group->IsLeader(args.member_id)) {
        // The leader's assignment: members it left out get an empty one.
        for (auto& [id, m] : group->members()) m.assignment.clear();
        for (auto& [id, bytes] : args.assignments) {
          if (MemberMetadata* m = group->FindMember(id)) m->assignment = std::move(bytes);
        }
        if (Status s = StoreGroup(*group); !s.ok()) {
          // Nothing stored: every waiting member fails and the group
          // rebalances, as Kafka does when its append fails (and with
          // Kafka's error: an oversized group record is not a coordinator
          // move, which would have the members rejoin and fail for ever).
          FailPendingSyncs(*group, StoreGroupErrorFor(s));
          PrepareRebalance(*group);
        } else {
          group->TransitionTo(GroupState::kStable, clock_->NowMs());
          for (auto& [id, m] : group->members()) {
            if (!m.awaiting_sync) continue;
            SyncGroupResult r;
            r.protocol_type = group->protocol_type();
            r.protocol_name = group->protocol_name();
            r.assignment = m.assignment;
            answers_.push_back([cb = std::move(m.awaiting_sync), r = std::move(r)]() mutable {
              cb(std::move(r));
            });
            m.awaiting_sync = nullptr;
            // Kafka's propagateAssignment: the session restarts with the
            // answer, as a deadline that passed while the member waited
            // was not held against it.
            ScheduleHeartbeat(*group, m);
          }
        }
      }
    }
  }
}

ErrorCode GroupCoordinator::Heartbeat(const std::string& group_id, const std::string& member_id,
                                      const std::optional<std::string>& group_instance_id,
                                      int32_t generation_id) {
  Locked locked(*this);
  if (ErrorCode e = AvailabilityLocked(group_id); e != ErrorCode::kNone) return e;
  GroupMetadata* group = FindGroup(group_id);
  if (group == nullptr) return ErrorCode::kUnknownMemberId;
  if (group->Is(GroupState::kDead)) return ErrorCode::kCoordinatorNotAvailable;
  if (ErrorCode e = CheckMember(*group, member_id, group_instance_id); e != ErrorCode::kNone)
    return e;
  if (group->Is(GroupState::kEmpty)) return ErrorCode::kUnknownMemberId;
  if (generation_id != group->generation_id()) return ErrorCode::kIllegalGeneration;
  ScheduleHeartbeat(*group, *group->FindMember(member_id));
  // During the join phase the answer tells the member to rejoin.
  return group->Is(GroupState::kPreparingRebalance) ? ErrorCode::kRebalanceInProgress
                                                    : ErrorCode::kNone;
}

LeaveGroupResult GroupCoordinator::LeaveGroup(const std::string& group_id,
                                              const std::vector<MemberIdentity>& members) {
  LeaveGroupResult result;
  {
    Locked locked(*this);
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
          RemovePendingMember(*group, id);
          result.member_errors.push_back(ErrorCode::kNone);
          TryCompleteJoin(*group);
          continue;
        }
        ErrorCode e = CheckMember(*group, id, who.group_instance_id);
        result.member_errors.push_back(e);
        if (e == ErrorCode::kNone) RemoveMemberAndUpdateGroup(*group, id);
      }
    }
  }
  return result;
}

void GroupCoordinator::RemoveMemberAndUpdateGroup(GroupMetadata& group,
                                                  const std::string& member_id) {
  MemberMetadata* member = group.FindMember(member_id);
  if (member == nullptr) return;
  FailWaitingCalls(*member, ErrorCode::kUnknownMemberId);
  group.RemoveMember(member_id);
  ForgetHeartbeat(group, member_id);
  if (group.pending_sync().erase(member_id)) {
    purgatory_.CheckAndComplete(DelayedOperationKey::GroupSync(group.id()));
  }
  switch (group.state()) {
    case GroupState::kStable:
    case GroupState::kCompletingRebalance:
      PrepareRebalance(group);
      break;
    case GroupState::kPreparingRebalance:
      TryCompleteJoin(group);
      break;
    case GroupState::kEmpty:
    case GroupState::kDead:
      break;
  }
}

void GroupCoordinator::Shutdown() {
  Locked locked(*this);
  loaded_ = false;
  shut_down_ = true;
  early_completions_.clear();
  early_deleted_topics_.clear();
  for (auto& [gid, group] : groups_) {
    for (auto& [id, m] : group->members()) FailWaitingCalls(m, ErrorCode::kNotCoordinator);
  }
  purgatory_.Shutdown();
}

}  // namespace daruma
