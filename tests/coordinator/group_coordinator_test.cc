// GroupCoordinator on a manual clock with an in-memory `__consumer_offsets`
// (deadlines run only when the test advances the clock and runs the
// scheduler's due jobs):
// the classic protocol's joins, syncs, heartbeats, leaves and deadlines as
// Kafka's coordinator runs them, committed offsets that survive a reload
// only when their append succeeded, and a load that skips what it cannot
// parse.
#include "coordinator/group_coordinator.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "record/record_batch_builder.h"

namespace daruma {
namespace {

// Keeps every appended batch per partition, with offsets assigned as a log
// would; `fail_appends` makes Append fail with an I/O error.
class MemGroupStorage final : public GroupStorage {
 public:
  Result<int64_t> Append(int32_t partition, const std::vector<RecordInput>& records,
                         const std::optional<ProducerBatchInfo>& producer) override {
    ++appends;
    if (fail_appends) return Status::IoError("injected append failure");
    BatchBuilderOptions options;
    options.base_offset = next_[partition];
    if (producer) {
      options.producer_id = producer->producer_id;
      options.producer_epoch = producer->producer_epoch;
      options.base_sequence = 0;
      options.is_transactional = true;
    }
    Result<Bytes> batch = BuildRecordBatch(options, records);
    if (!batch.ok()) return batch.status();
    const int64_t base = next_[partition];
    next_[partition] += int64_t(records.size());
    batches_[partition].push_back(std::move(*batch));
    return base;
  }
  Status ReadBatches(int32_t partition,
                     const std::function<Status(const RecordBatchView&)>& visit) override {
    if (partition == unreadable_partition) return Status::IoError("injected read failure");
    for (const Bytes& b : batches_[partition]) {
      Result<RecordBatchView> view = RecordBatchView::Parse(b);
      if (!view.ok()) return view.status();
      if (Status s = visit(*view); !s.ok()) return s;
    }
    return Status::Ok();
  }
  // Flips a byte inside the last batch of `partition` (its CRC no longer matches).
  void CorruptLastBatch(int32_t partition) { batches_[partition].back().back() ^= 0x5a; }
  // Adds a raw record (for corrupt-record tests).
  void AppendRaw(int32_t partition, std::optional<std::string> key,
                 std::optional<std::string> value) {
    RecordInput r;
    r.key = std::move(key);
    r.value = std::move(value);
    ASSERT_TRUE(Append(partition, {r}, std::nullopt).ok());
  }
  size_t RecordCount(int32_t partition) { return size_t(next_[partition]); }

  bool fail_appends = false;
  int appends = 0;
  int32_t unreadable_partition = -1;

 private:
  std::map<int32_t, std::vector<Bytes>> batches_;
  std::map<int32_t, int64_t> next_;
};

constexpr char kGroup[] = "g1";

Bytes Meta(const std::string& s) {
  return Bytes(s.begin(), s.end());
}

class GroupCoordinatorTest : public ::testing::Test {
 protected:
  GroupCoordinatorTest() : clock_(1'000'000) {
    config_.initial_rebalance_delay_ms = 3000;
    Reopen();
  }

  void Reopen() {
    coordinator_ = std::make_unique<GroupCoordinator>(config_, &storage_, &scheduler_);
    Result<GroupLoadReport> report = coordinator_->Load();
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    report_ = *report;
  }

  JoinGroupArgs Join(const std::string& member_id, std::vector<std::string> protocols = {"range"}) {
    JoinGroupArgs a;
    a.group_id = kGroup;
    a.member_id = member_id;
    a.protocol_type = "consumer";
    for (const std::string& p : protocols) a.protocols.push_back({p, Meta("meta-" + p)});
    a.session_timeout_ms = 10000;
    a.rebalance_timeout_ms = 30000;
    a.client_id = "client";
    a.client_host = "/127.0.0.1";
    a.require_known_member_id = true;
    return a;
  }

  // Joins and returns where the answer lands (empty until answered).
  std::shared_ptr<std::optional<JoinGroupResult>> StartJoin(JoinGroupArgs args) {
    auto slot = std::make_shared<std::optional<JoinGroupResult>>();
    coordinator_->JoinGroup(std::move(args), [slot](JoinGroupResult r) { *slot = std::move(r); });
    return slot;
  }

  std::shared_ptr<std::optional<SyncGroupResult>> StartSync(
      const std::string& member_id, int32_t generation,
      std::vector<std::pair<std::string, Bytes>> assignments = {}) {
    SyncGroupArgs a;
    a.group_id = kGroup;
    a.member_id = member_id;
    a.generation_id = generation;
    a.assignments = std::move(assignments);
    auto slot = std::make_shared<std::optional<SyncGroupResult>>();
    coordinator_->SyncGroup(std::move(a), [slot](SyncGroupResult r) { *slot = std::move(r); });
    return slot;
  }

  // A new dynamic member: MEMBER_ID_REQUIRED first, then the real join.
  std::string NewMemberId() {
    auto first = StartJoin(Join(""));
    EXPECT_TRUE(first->has_value());
    EXPECT_EQ((*first)->error, ErrorCode::kMemberIdRequired);
    return (*first)->member_id;
  }

  void Advance(int64_t ms) {
    clock_.Advance(ms);
    scheduler_.RunDueJobs();
  }

  // Two members through a full rebalance; returns {leader, follower}.
  std::pair<std::string, std::string> StableGroupOfTwo() {
    const std::string a = NewMemberId();
    const std::string b = NewMemberId();
    auto ja = StartJoin(Join(a));
    auto jb = StartJoin(Join(b));
    EXPECT_FALSE(ja->has_value());  // the initial delay holds the join
    // The second member arrived during the delay: it is extended once.
    Advance(config_.initial_rebalance_delay_ms);
    Advance(config_.initial_rebalance_delay_ms);
    EXPECT_TRUE(ja->has_value() && jb->has_value());
    const std::string leader = (*ja)->leader_id;
    const std::string follower = leader == a ? b : a;
    auto sf = StartSync(follower, (*ja)->generation_id);
    EXPECT_FALSE(sf->has_value());
    auto sl = StartSync(leader, (*ja)->generation_id,
                        {{leader, Meta("to-leader")}, {follower, Meta("to-follower")}});
    EXPECT_TRUE(sl->has_value() && sf->has_value());
    EXPECT_EQ((*sf)->assignment, Meta("to-follower"));
    return {leader, follower};
  }

  GroupCoordinatorConfig config_;
  ManualClock clock_;
  Scheduler scheduler_{&clock_, 1, Scheduler::Mode::kManual};
  MemGroupStorage storage_;
  std::unique_ptr<GroupCoordinator> coordinator_;
  GroupLoadReport report_;
};

TEST_F(GroupCoordinatorTest, TwoMembersJoinAfterTheInitialDelayAndSyncTheLeadersAssignment) {
  const std::string a = NewMemberId();
  const std::string b = NewMemberId();
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("client-", 0), 0u);
  auto ja = StartJoin(Join(a, {"range", "roundrobin"}));
  auto jb = StartJoin(Join(b, {"roundrobin", "range"}));
  Advance(config_.initial_rebalance_delay_ms - 1);
  EXPECT_FALSE(ja->has_value());
  // Kafka's InitialDelayedJoin: a member that joined during the delay
  // extends it by another delay (up to the rebalance timeout).
  Advance(1);
  EXPECT_FALSE(ja->has_value());
  Advance(config_.initial_rebalance_delay_ms);
  ASSERT_TRUE(ja->has_value());
  ASSERT_TRUE(jb->has_value());
  EXPECT_EQ((*ja)->error, ErrorCode::kNone);
  EXPECT_EQ((*ja)->generation_id, 1);
  EXPECT_EQ((*ja)->generation_id, (*jb)->generation_id);
  EXPECT_EQ((*ja)->leader_id, (*jb)->leader_id);
  // One vote each: the tie goes to the first candidate in the first member's order.
  EXPECT_TRUE((*ja)->protocol_name == "range" || (*ja)->protocol_name == "roundrobin");
  EXPECT_EQ((*ja)->protocol_name, (*jb)->protocol_name);
  const auto& leader = (*ja)->leader_id == a ? *ja : *jb;
  const auto& follower = (*ja)->leader_id == a ? *jb : *ja;
  EXPECT_EQ(leader->members.size(), 2u);
  EXPECT_TRUE(follower->members.empty());
  auto sf = StartSync(follower->member_id, 1);
  EXPECT_FALSE(sf->has_value());
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).state, "CompletingRebalance");
  const int appends_before = storage_.appends;
  auto sl = StartSync(leader->member_id, 1, {{follower->member_id, Meta("f")}});
  ASSERT_TRUE(sl->has_value() && sf->has_value());
  EXPECT_EQ((*sl)->error, ErrorCode::kNone);
  EXPECT_TRUE((*sl)->assignment.empty());  // the leader left itself out
  EXPECT_EQ((*sf)->assignment, Meta("f"));
  EXPECT_EQ(storage_.appends, appends_before + 1);  // the group's metadata
  GroupDescription d = coordinator_->DescribeGroup(kGroup);
  EXPECT_EQ(d.state, "Stable");
  EXPECT_EQ(d.members.size(), 2u);
  // A later sync of a Stable group answers at once with the stored assignment.
  auto again = StartSync(follower->member_id, 1);
  ASSERT_TRUE(again->has_value());
  EXPECT_EQ((*again)->assignment, Meta("f"));
}

TEST_F(GroupCoordinatorTest, HeartbeatsAnswerByStateAndFenceStaleMembers) {
  auto [leader, follower] = StableGroupOfTwo();
  EXPECT_EQ(coordinator_->Heartbeat(kGroup, follower, std::nullopt, 1), ErrorCode::kNone);
  EXPECT_EQ(coordinator_->Heartbeat(kGroup, follower, std::nullopt, 0),
            ErrorCode::kIllegalGeneration);
  EXPECT_EQ(coordinator_->Heartbeat(kGroup, "nobody", std::nullopt, 1),
            ErrorCode::kUnknownMemberId);
  EXPECT_EQ(coordinator_->Heartbeat("other", follower, std::nullopt, 1),
            ErrorCode::kUnknownMemberId);
  // A third member joining starts a rebalance: the others are told to rejoin.
  const std::string c = NewMemberId();
  auto jc = StartJoin(Join(c));
  EXPECT_FALSE(jc->has_value());
  EXPECT_EQ(coordinator_->Heartbeat(kGroup, follower, std::nullopt, 1),
            ErrorCode::kRebalanceInProgress);
}

TEST_F(GroupCoordinatorTest, AMemberThatStopsHeartbeatingIsRemovedAndTheOthersRebalance) {
  auto [leader, follower] = StableGroupOfTwo();
  // The leader keeps heartbeating; the follower goes silent.
  for (int i = 0; i < 3; ++i) {
    Advance(2500);
    EXPECT_EQ(coordinator_->Heartbeat(kGroup, leader, std::nullopt, 1), ErrorCode::kNone);
  }
  Advance(2499);  // 9,999 ms of silence: still a member
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).members.size(), 2u);
  Advance(1);
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).state, "PreparingRebalance");
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).members.size(), 1u);
  EXPECT_EQ(coordinator_->Heartbeat(kGroup, leader, std::nullopt, 1),
            ErrorCode::kRebalanceInProgress);
  // The leader rejoins alone: generation 2 completes at once (everyone joined).
  auto j = StartJoin(Join(leader));
  ASSERT_TRUE(j->has_value());
  EXPECT_EQ((*j)->generation_id, 2);
  EXPECT_EQ((*j)->members.size(), 1u);
  EXPECT_EQ(coordinator_->Heartbeat(kGroup, follower, std::nullopt, 1),
            ErrorCode::kUnknownMemberId);
}

TEST_F(GroupCoordinatorTest, LeaveGroupRebalancesAndTheLastLeaveEmptiesTheGroup) {
  auto [leader, follower] = StableGroupOfTwo();
  LeaveGroupResult left =
      coordinator_->LeaveGroup(kGroup, {{follower, std::nullopt}, {"ghost", std::nullopt}});
  EXPECT_EQ(left.error, ErrorCode::kNone);
  ASSERT_EQ(left.member_errors.size(), 2u);
  EXPECT_EQ(left.member_errors[0], ErrorCode::kNone);
  EXPECT_EQ(left.member_errors[1], ErrorCode::kUnknownMemberId);
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).state, "PreparingRebalance");
  left = coordinator_->LeaveGroup(kGroup, {{leader, std::nullopt}});
  EXPECT_EQ(left.member_errors[0], ErrorCode::kNone);
  // The join phase completes with nobody: a new, empty generation is stored.
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).state, "Empty");
  Reopen();
  GroupDescription d = coordinator_->DescribeGroup(kGroup);
  EXPECT_EQ(d.state, "Empty");
  EXPECT_TRUE(d.members.empty());
}

TEST_F(GroupCoordinatorTest, JoinValidatesSessionTimeoutProtocolsAndMemberIds) {
  JoinGroupArgs tiny = Join("");
  tiny.session_timeout_ms = config_.min_session_timeout_ms - 1;
  EXPECT_EQ((*StartJoin(tiny))->error, ErrorCode::kInvalidSessionTimeout);
  EXPECT_EQ((*StartJoin(Join("made-up")))->error, ErrorCode::kUnknownMemberId);
  auto [leader, follower] = StableGroupOfTwo();
  JoinGroupArgs other = Join("");
  other.protocol_type = "connect";
  EXPECT_EQ((*StartJoin(other))->error, ErrorCode::kInconsistentGroupProtocol);
  EXPECT_EQ((*StartJoin(Join("", {"sticky"})))->error, ErrorCode::kInconsistentGroupProtocol);
  JoinGroupArgs no_group = Join("");
  no_group.group_id = "";
  EXPECT_EQ((*StartJoin(no_group))->error, ErrorCode::kInvalidGroupId);
  // A follower rejoining a Stable group with the same protocols is answered
  // at once with the current generation (no rebalance).
  auto same = StartJoin(Join(follower));
  ASSERT_TRUE(same->has_value());
  EXPECT_EQ((*same)->generation_id, 1);
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).state, "Stable");
}

// Each heartbeat completes the member's session deadline and watches the
// next, so a member that keeps heartbeating is never expired, while the
// silent member of the same group is, at exactly its session timeout.
TEST_F(GroupCoordinatorTest, AMemberWhoseHeartbeatsKeepArrivingIsNeverExpired) {
  auto [leader, follower] = StableGroupOfTwo();
  int32_t generation = 1;
  for (int elapsed = 0; elapsed < 60'000; elapsed += 2'000) {
    Advance(2'000);
    ErrorCode e = coordinator_->Heartbeat(kGroup, leader, std::nullopt, generation);
    if (e == ErrorCode::kRebalanceInProgress) {
      // The follower expired: the leader rejoins and syncs, as a client does.
      EXPECT_EQ(elapsed + 2'000, 10'000);
      auto j = StartJoin(Join(leader));
      ASSERT_TRUE(j->has_value());
      generation = (*j)->generation_id;
      auto s = StartSync(leader, generation, {{leader, Meta("all")}});
      ASSERT_TRUE(s->has_value());
      EXPECT_EQ((*s)->error, ErrorCode::kNone);
    } else {
      EXPECT_EQ(e, ErrorCode::kNone) << "at " << elapsed + 2'000 << " ms";
    }
  }
  GroupDescription d = coordinator_->DescribeGroup(kGroup);
  EXPECT_EQ(d.state, "Stable");
  ASSERT_EQ(d.members.size(), 1u);
  EXPECT_EQ(d.members[0].member_id, leader);
  EXPECT_EQ(generation, 2);
  EXPECT_EQ(coordinator_->DeadlineStats(DelayedOperationKind::kMemberHeartbeat).expired, 1);
  EXPECT_EQ(coordinator_->DeadlineStats(DelayedOperationKind::kMemberHeartbeat).delayed, 1);
}

// 1,000 Stable groups whose members heartbeat, beside one whose follower
// goes silent: over 30 s in 100 ms steps the expiry looks at exactly one
// operation (the silent member's) and the scheduler runs a handful of jobs,
// not one scan of every group per step.
TEST_F(GroupCoordinatorTest, AThousandIdleGroupsCostNoWorkPerStep) {
  config_.initial_rebalance_delay_ms = 0;
  Reopen();
  constexpr int kIdle = 1000;
  std::vector<std::string> ids(kIdle);
  std::vector<std::shared_ptr<std::optional<JoinGroupResult>>> joins;
  for (int i = 0; i < kIdle; ++i) {
    JoinGroupArgs a = Join("");
    a.group_id = "idle-" + std::to_string(i);
    a.require_known_member_id = false;
    joins.push_back(StartJoin(a));
  }
  scheduler_.RunDueJobs();  // every initial delay (0 ms) ends
  for (int i = 0; i < kIdle; ++i) {
    ASSERT_TRUE(joins[size_t(i)]->has_value());
    ids[size_t(i)] = (*joins[size_t(i)])->member_id;
    SyncGroupArgs sync;
    sync.group_id = "idle-" + std::to_string(i);
    sync.member_id = ids[size_t(i)];
    sync.generation_id = 1;
    sync.assignments = {{ids[size_t(i)], Meta("p")}};
    bool synced = false;
    coordinator_->SyncGroup(std::move(sync),
                            [&](SyncGroupResult r) { synced = r.error == ErrorCode::kNone; });
    ASSERT_TRUE(synced);
  }
  auto [leader, follower] = StableGroupOfTwo();
  // Only the members' sessions wait: the joins and syncs completed.
  EXPECT_EQ(coordinator_->DeadlinesWaiting(), size_t(kIdle + 2));
  const int64_t examined_before = coordinator_->DeadlinesExamined();
  int jobs = 0;
  for (int step = 1; step <= 300; ++step) {
    jobs += [&] {
      clock_.Advance(100);
      return scheduler_.RunDueJobs();
    }();
    if (step % 30 == 0) {  // every 3 s
      for (int i = 0; i < kIdle; ++i) {
        ASSERT_EQ(
            coordinator_->Heartbeat("idle-" + std::to_string(i), ids[size_t(i)], std::nullopt, 1),
            ErrorCode::kNone);
      }
      coordinator_->Heartbeat(kGroup, leader, std::nullopt, 1);
    }
  }
  EXPECT_EQ(coordinator_->DeadlinesExamined() - examined_before, 1);
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).members.size(), 1u);
  EXPECT_EQ(coordinator_->ListGroups({"Stable"}).second.size(), size_t(kIdle));
  EXPECT_LE(jobs, 15);
}

// A member id handed out with MEMBER_ID_REQUIRED that does not come back
// within the session timeout is forgotten.
TEST_F(GroupCoordinatorTest, AMemberIdThatNeverJoinsExpiresAfterTheSessionTimeout) {
  const std::string kept = NewMemberId();
  const std::string lost = NewMemberId();
  Advance(9'999);
  auto j = StartJoin(Join(kept));
  EXPECT_FALSE(j->has_value());  // accepted: the initial delay holds it
  Advance(1);
  EXPECT_EQ(coordinator_->DeadlineStats(DelayedOperationKind::kPendingMember).expired, 1);
  auto again = StartJoin(Join(lost));
  ASSERT_TRUE(again->has_value());
  EXPECT_EQ((*again)->error, ErrorCode::kUnknownMemberId);
  Advance(config_.initial_rebalance_delay_ms);
  ASSERT_TRUE(j->has_value());
  EXPECT_EQ((*j)->error, ErrorCode::kNone);
  EXPECT_EQ((*j)->members.size(), 1u);
}

// The join phase ends at the largest rebalance timeout without the dynamic
// members that did not rejoin, even though they kept heartbeating.
TEST_F(GroupCoordinatorTest, TheJoinPhaseEndsAtTheRebalanceTimeoutWithoutMembersThatDidNotRejoin) {
  auto [leader, follower] = StableGroupOfTwo();
  // Two so far: the initial delay, extended once.
  EXPECT_EQ(coordinator_->DeadlineStats(DelayedOperationKind::kGroupJoin).expired, 2);
  auto j = StartJoin(Join(leader));  // the leader asks for a new assignment
  EXPECT_FALSE(j->has_value());
  for (int elapsed = 0; elapsed < 27'000; elapsed += 3'000) {
    Advance(3'000);
    EXPECT_EQ(coordinator_->Heartbeat(kGroup, follower, std::nullopt, 1),
              ErrorCode::kRebalanceInProgress);
  }
  Advance(2'999);
  EXPECT_FALSE(j->has_value());
  Advance(1);
  ASSERT_TRUE(j->has_value());
  EXPECT_EQ((*j)->generation_id, 2);
  EXPECT_EQ((*j)->members.size(), 1u);
  EXPECT_EQ(coordinator_->Heartbeat(kGroup, follower, std::nullopt, 1),
            ErrorCode::kUnknownMemberId);
  EXPECT_EQ(coordinator_->DeadlineStats(DelayedOperationKind::kGroupJoin).expired, 3);
}

// A member that got its join answer but never sends SyncGroup is removed at
// the rebalance timeout (the pending-sync deadline), heartbeats or not.
TEST_F(GroupCoordinatorTest, AMemberThatNeverSyncsIsRemovedAtTheRebalanceTimeout) {
  const std::string a = NewMemberId();
  const std::string b = NewMemberId();
  auto ja = StartJoin(Join(a));
  auto jb = StartJoin(Join(b));
  Advance(config_.initial_rebalance_delay_ms);
  Advance(config_.initial_rebalance_delay_ms);
  ASSERT_TRUE(ja->has_value() && jb->has_value());
  const std::string leader = (*ja)->leader_id;
  const std::string follower = leader == a ? b : a;
  auto sl = StartSync(leader, 1, {{leader, Meta("l")}, {follower, Meta("f")}});
  ASSERT_TRUE(sl->has_value());
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).state, "Stable");
  for (int elapsed = 0; elapsed < 27'000; elapsed += 3'000) {
    Advance(3'000);
    EXPECT_EQ(coordinator_->Heartbeat(kGroup, leader, std::nullopt, 1), ErrorCode::kNone);
    EXPECT_EQ(coordinator_->Heartbeat(kGroup, follower, std::nullopt, 1), ErrorCode::kNone);
  }
  Advance(2'999);
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).members.size(), 2u);
  Advance(1);
  GroupDescription d = coordinator_->DescribeGroup(kGroup);
  EXPECT_EQ(d.state, "PreparingRebalance");
  ASSERT_EQ(d.members.size(), 1u);
  EXPECT_EQ(d.members[0].member_id, leader);
  EXPECT_EQ(coordinator_->DeadlineStats(DelayedOperationKind::kGroupSync).expired, 1);
}

TEST_F(GroupCoordinatorTest, GroupMaxSizeRefusesTheExtraMember) {
  config_.max_size = 1;
  Reopen();
  const std::string a = NewMemberId();
  auto ja = StartJoin(Join(a));
  Advance(config_.initial_rebalance_delay_ms);
  ASSERT_TRUE(ja->has_value());
  EXPECT_EQ((*StartJoin(Join("")))->error, ErrorCode::kGroupMaxSizeReached);
}

TEST_F(GroupCoordinatorTest, AStaticMemberRejoinsWithoutARebalance) {
  JoinGroupArgs s = Join("");
  s.group_instance_id = "instance-1";
  s.require_known_member_id = false;
  auto j1 = StartJoin(s);
  Advance(config_.initial_rebalance_delay_ms);
  ASSERT_TRUE(j1->has_value());
  const std::string first_id = (*j1)->member_id;
  EXPECT_EQ(first_id.rfind("instance-1-", 0), 0u);
  auto sync = StartSync(first_id, 1, {{first_id, Meta("mine")}});
  ASSERT_TRUE(sync->has_value());
  // Restarted with no member id: a new id, same generation, no rebalance.
  auto j2 = StartJoin(s);
  ASSERT_TRUE(j2->has_value());
  EXPECT_EQ((*j2)->error, ErrorCode::kNone);
  EXPECT_EQ((*j2)->generation_id, 1);
  EXPECT_NE((*j2)->member_id, first_id);
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).state, "Stable");
  auto sync2 = StartSync((*j2)->member_id, 1);
  ASSERT_TRUE(sync2->has_value());
  EXPECT_EQ((*sync2)->assignment, Meta("mine"));
  // The old id is fenced.
  EXPECT_EQ(coordinator_->Heartbeat(kGroup, first_id, std::string("instance-1"), 1),
            ErrorCode::kFencedInstanceId);
}

// A static member that rejoins under a new id keeps one session, under the
// new id: the old id's deadline no longer counts, the new one's does.
TEST_F(GroupCoordinatorTest, AStaticMembersSessionFollowsItsNewId) {
  JoinGroupArgs s = Join("");
  s.group_instance_id = "instance-1";
  s.require_known_member_id = false;
  auto j1 = StartJoin(s);
  Advance(config_.initial_rebalance_delay_ms);
  ASSERT_TRUE(j1->has_value());
  ASSERT_TRUE(StartSync((*j1)->member_id, 1, {{(*j1)->member_id, Meta("mine")}})->has_value());
  Advance(5'000);
  auto j2 = StartJoin(s);  // restarted: a new id, no rebalance
  ASSERT_TRUE(j2->has_value());
  const std::string id = (*j2)->member_id;
  Advance(5'000);  // the first id's session would have ended here
  EXPECT_EQ(coordinator_->Heartbeat(kGroup, id, std::string("instance-1"), 1), ErrorCode::kNone);
  Advance(9'999);
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).members.size(), 1u);
  Advance(1);
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).members.size(), 0u);
  EXPECT_EQ(coordinator_->DeadlinesWaiting(), 0u);
}

OffsetCommitArgs Commit(const std::string& member, int32_t generation, int64_t offset) {
  OffsetCommitArgs c;
  c.group_id = kGroup;
  c.member_id = member;
  c.generation_id = generation;
  c.partitions.push_back({"t", 0, offset, 5, std::string("meta"), -1});
  c.partitions.push_back({"t", 1, offset + 1, -1, std::nullopt, -1});
  return c;
}

TEST_F(GroupCoordinatorTest, CommittedOffsetsSurviveAReloadAndAFailedAppendChangesNothing) {
  auto [leader, follower] = StableGroupOfTwo();
  std::vector<ErrorCode> errors = coordinator_->CommitOffsets(Commit(follower, 1, 10));
  EXPECT_EQ(errors, std::vector<ErrorCode>(2, ErrorCode::kNone));
  EXPECT_EQ(coordinator_->CommitOffsets(Commit(follower, 0, 11))[0], ErrorCode::kIllegalGeneration);
  EXPECT_EQ(coordinator_->CommitOffsets(Commit("", -1, 11))[0], ErrorCode::kUnknownMemberId);
  storage_.fail_appends = true;
  EXPECT_EQ(coordinator_->CommitOffsets(Commit(follower, 1, 99))[0], ErrorCode::kNotCoordinator);
  storage_.fail_appends = false;
  OffsetFetchResult fetched = coordinator_->FetchOffsets(kGroup, std::nullopt);
  ASSERT_EQ(fetched.partitions.size(), 2u);
  EXPECT_EQ(fetched.partitions[0].offset, 10);
  EXPECT_EQ(fetched.partitions[0].leader_epoch, 5);
  EXPECT_EQ(fetched.partitions[0].metadata, "meta");
  EXPECT_EQ(fetched.partitions[1].offset, 11);

  Reopen();
  EXPECT_EQ(report_.groups, 1);
  EXPECT_EQ(report_.offsets, 2);
  fetched = coordinator_->FetchOffsets(
      kGroup, std::vector<std::pair<std::string, int32_t>>{{"t", 0}, {"t", 7}});
  ASSERT_EQ(fetched.partitions.size(), 2u);
  EXPECT_EQ(fetched.partitions[0].offset, 10);
  EXPECT_EQ(fetched.partitions[1].offset, -1);  // never committed: no error
  // The group comes back Stable with its members, who go on heartbeating.
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).state, "Stable");
  EXPECT_EQ(coordinator_->Heartbeat(kGroup, follower, std::nullopt, 1), ErrorCode::kNone);
  // Members that never come back expire and the group empties.
  Advance(10001);
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).members.size(), 0u);
}

TEST_F(GroupCoordinatorTest, SimpleCommitsCreateAnEmptyGroupAndOversizedMetadataIsRefused) {
  OffsetCommitArgs c = Commit("", -1, 3);
  c.partitions[1].metadata = std::string(size_t(config_.offset_metadata_max_bytes) + 1, 'x');
  std::vector<ErrorCode> errors = coordinator_->CommitOffsets(c);
  EXPECT_EQ(errors[0], ErrorCode::kNone);
  EXPECT_EQ(errors[1], ErrorCode::kOffsetMetadataTooLarge);
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).state, "Empty");
  EXPECT_EQ(coordinator_->CommitOffsets(Commit("x", 3, 3))[0], ErrorCode::kUnknownMemberId);
  OffsetCommitArgs other = Commit("", 2, 3);
  other.group_id = "never-seen";
  EXPECT_EQ(coordinator_->CommitOffsets(other)[0], ErrorCode::kIllegalGeneration);
}

TEST_F(GroupCoordinatorTest, DeleteGroupNeedsAnEmptyGroupAndLeavesTombstones) {
  auto [leader, follower] = StableGroupOfTwo();
  ASSERT_EQ(coordinator_->CommitOffsets(Commit(leader, 1, 4))[0], ErrorCode::kNone);
  EXPECT_EQ(coordinator_->DeleteGroup(kGroup), ErrorCode::kNonEmptyGroup);
  EXPECT_EQ(coordinator_->DeleteGroup("unknown"), ErrorCode::kGroupIdNotFound);
  coordinator_->LeaveGroup(kGroup, {{leader, std::nullopt}, {follower, std::nullopt}});
  EXPECT_EQ(coordinator_->DeleteGroup(kGroup), ErrorCode::kNone);
  EXPECT_EQ(coordinator_->DescribeGroup(kGroup).state, "Dead");
  Reopen();
  EXPECT_EQ(coordinator_->GroupCount(), 0u);
  EXPECT_EQ(coordinator_->FetchOffsets(kGroup, std::nullopt).partitions.size(), 0u);
}

TEST_F(GroupCoordinatorTest, OffsetDeleteKeepsSubscribedTopicsOfAConsumerGroup) {
  auto [leader, follower] = StableGroupOfTwo();
  ASSERT_EQ(coordinator_->CommitOffsets(Commit(leader, 1, 4))[0], ErrorCode::kNone);
  // The members' metadata here is not a consumer subscription, so no topic
  // counts as subscribed: deleting is allowed.
  auto [error, errors] = coordinator_->DeleteOffsets(kGroup, {{"t", 0}});
  EXPECT_EQ(error, ErrorCode::kNone);
  EXPECT_EQ(errors, std::vector<ErrorCode>{ErrorCode::kNone});
  EXPECT_EQ(coordinator_->FetchOffsets(kGroup, std::nullopt).partitions.size(), 1u);
  EXPECT_EQ(coordinator_->DeleteOffsets("nope", {{"t", 0}}).first, ErrorCode::kGroupIdNotFound);
}

// Kafka's onPartitionsDeleted: a topic created again under a deleted one's
// name must not inherit its offsets, or its consumers skip its first
// messages. Other topics' offsets and other groups stay.
TEST_F(GroupCoordinatorTest, ADeletedTopicsOffsetsLeaveEveryGroupDurably) {
  ASSERT_EQ(coordinator_->CommitOffsets(Commit("", -1, 7))[0], ErrorCode::kNone);
  OffsetCommitArgs other = Commit("", -1, 3);
  other.group_id = "other-group";
  other.partitions.push_back({"kept", 0, 40, -1, std::nullopt, -1});
  ASSERT_EQ(coordinator_->CommitOffsets(other), std::vector<ErrorCode>(3, ErrorCode::kNone));
  ASSERT_TRUE(coordinator_->OnTopicDeleted("t").ok());
  ASSERT_TRUE(coordinator_->OnTopicDeleted("never-committed").ok());
  EXPECT_EQ(coordinator_->FetchOffsets(kGroup, std::nullopt).partitions.size(), 0u);
  auto kept = coordinator_->FetchOffsets("other-group", std::nullopt).partitions;
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].topic, "kept");
  EXPECT_EQ(kept[0].offset, 40);
  Reopen();  // the tombstones were stored
  EXPECT_EQ(coordinator_->FetchOffsets(kGroup, std::nullopt).partitions.size(), 0u);
  EXPECT_EQ(coordinator_->FetchOffsets("other-group", std::nullopt).partitions.size(), 1u);
}

// A deletion the broker answers while the coordinator still loads is
// applied once the load is done.
TEST_F(GroupCoordinatorTest, ATopicDeletedDuringTheLoadLosesItsOffsetsWhenTheLoadEnds) {
  ASSERT_EQ(coordinator_->CommitOffsets(Commit("", -1, 7))[0], ErrorCode::kNone);
  coordinator_ = std::make_unique<GroupCoordinator>(config_, &storage_, &scheduler_);
  ASSERT_TRUE(coordinator_->OnTopicDeleted("t").ok());
  ASSERT_TRUE(coordinator_->Load().ok());
  EXPECT_EQ(coordinator_->FetchOffsets(kGroup, std::nullopt).partitions.size(), 0u);
  Reopen();
  EXPECT_EQ(coordinator_->FetchOffsets(kGroup, std::nullopt).partitions.size(), 0u);
}

TEST_F(GroupCoordinatorTest, OffsetsOfAnEmptyGroupExpireAfterTheRetention) {
  config_.offsets_retention_ms = 60'000;
  config_.retention_check_interval_ms = 1000;
  Reopen();
  ASSERT_EQ(coordinator_->CommitOffsets(Commit("", -1, 3))[0], ErrorCode::kNone);
  Advance(30'000);
  EXPECT_EQ(coordinator_->FetchOffsets(kGroup, std::nullopt).partitions.size(), 2u);
  Advance(31'000);
  EXPECT_EQ(coordinator_->FetchOffsets(kGroup, std::nullopt).partitions.size(), 0u);
  EXPECT_EQ(coordinator_->GroupCount(), 0u);
  Reopen();  // the tombstones were stored
  EXPECT_EQ(coordinator_->GroupCount(), 0u);
}

TEST_F(GroupCoordinatorTest, LoadSkipsRecordsItCannotParseAndKeepsTheRest) {
  ASSERT_EQ(coordinator_->CommitOffsets(Commit("", -1, 8))[0], ErrorCode::kNone);
  const int32_t p = coordinator_->PartitionFor(kGroup);
  storage_.AppendRaw(p, std::string("\x00\x01\xff", 3), std::string("junk"));
  storage_.AppendRaw(p, std::nullopt, std::string("no key"));
  const Bytes key = EncodeOffsetCommitKey({kGroup, "t", 0});
  storage_.AppendRaw(p, std::string(key.begin(), key.end()), std::string("\x00\x09", 2));
  ASSERT_EQ(coordinator_->CommitOffsets(Commit("", -1, 9))[0], ErrorCode::kNone);
  storage_.CorruptLastBatch(p);  // the commit of 9 is damaged: 8 stays
  Reopen();
  EXPECT_EQ(report_.skipped, 4);
  ASSERT_EQ(report_.skipped_reasons.size(), 4u);
  EXPECT_NE(report_.skipped_reasons[3].find("CRC"), std::string::npos);
  EXPECT_NE(report_.skipped_reasons[0].find("__consumer_offsets-"), std::string::npos);
  OffsetFetchResult fetched = coordinator_->FetchOffsets(kGroup, std::nullopt);
  ASSERT_EQ(fetched.partitions.size(), 2u);
  EXPECT_EQ(fetched.partitions[0].offset, 8);
}

TEST_F(GroupCoordinatorTest, AnUnreadablePartitionKeepsOnlyItsGroupsUnserved) {
  ASSERT_EQ(coordinator_->CommitOffsets(Commit("", -1, 8))[0], ErrorCode::kNone);
  OffsetCommitArgs other = Commit("", -1, 4);
  other.group_id = "test-group";  // partition 12, not g1's 42
  ASSERT_NE(coordinator_->PartitionFor("test-group"), coordinator_->PartitionFor(kGroup));
  ASSERT_EQ(coordinator_->CommitOffsets(other)[0], ErrorCode::kNone);
  storage_.unreadable_partition = coordinator_->PartitionFor(kGroup);
  Reopen();
  ASSERT_EQ(report_.failed_partitions.size(), 1u);
  EXPECT_NE(report_.failed_partitions[0].find("__consumer_offsets-42"), std::string::npos);
  EXPECT_EQ(coordinator_->FetchOffsets(kGroup, std::nullopt).error,
            ErrorCode::kCoordinatorNotAvailable);
  EXPECT_EQ(coordinator_->CommitOffsets(Commit("", -1, 9))[0], ErrorCode::kCoordinatorNotAvailable);
  EXPECT_EQ((*StartJoin(Join("")))->error, ErrorCode::kCoordinatorNotAvailable);
  OffsetFetchResult served = coordinator_->FetchOffsets("test-group", std::nullopt);
  EXPECT_EQ(served.error, ErrorCode::kNone);
  ASSERT_EQ(served.partitions.size(), 2u);
  EXPECT_EQ(served.partitions[0].offset, 4);
}

TEST_F(GroupCoordinatorTest, NothingIsServedBeforeTheLoad) {
  GroupCoordinator fresh(config_, &storage_, &scheduler_);
  auto slot = std::make_shared<std::optional<JoinGroupResult>>();
  fresh.JoinGroup(Join(""), [slot](JoinGroupResult r) { *slot = r; });
  ASSERT_TRUE(slot->has_value());
  EXPECT_EQ((*slot)->error, ErrorCode::kCoordinatorLoadInProgress);
  EXPECT_EQ(fresh.FetchOffsets(kGroup, std::nullopt).error, ErrorCode::kCoordinatorLoadInProgress);
  EXPECT_EQ(fresh.ListGroups({}).first, ErrorCode::kCoordinatorLoadInProgress);
}

TEST_F(GroupCoordinatorTest, ShutdownAnswersParkedJoins) {
  const std::string a = NewMemberId();
  auto ja = StartJoin(Join(a));
  EXPECT_FALSE(ja->has_value());
  coordinator_->Shutdown();
  ASSERT_TRUE(ja->has_value());
  EXPECT_EQ((*ja)->error, ErrorCode::kNotCoordinator);
}

TEST_F(GroupCoordinatorTest, ListGroupsFiltersByState) {
  auto [leader, follower] = StableGroupOfTwo();
  OffsetCommitArgs c = Commit("", -1, 1);
  c.group_id = "offsets-only";
  ASSERT_EQ(coordinator_->CommitOffsets(c)[0], ErrorCode::kNone);
  EXPECT_EQ(coordinator_->ListGroups({}).second.size(), 2u);
  auto stable = coordinator_->ListGroups({"stable"}).second;
  ASSERT_EQ(stable.size(), 1u);
  EXPECT_EQ(stable[0].group_id, kGroup);
  EXPECT_EQ(stable[0].protocol_type, "consumer");
  EXPECT_TRUE(coordinator_->ListGroups({"NoSuchState"}).second.empty());
}

TEST(OffsetsRecordsTest, PartitionForMatchesJavasStringHashCode) {
  // Values from Java: abs("...".hashCode()) % 50, with Utils.abs(MIN_VALUE) = 0.
  EXPECT_EQ(OffsetsPartitionFor("g1", 50), 42);
  EXPECT_EQ(OffsetsPartitionFor("test-group", 50), 12);
  EXPECT_EQ(OffsetsPartitionFor("my-consumer-group", 50), 13);
  EXPECT_EQ(OffsetsPartitionFor("gr\xc3\xbcppe", 50), 12);      // one UTF-16 unit
  EXPECT_EQ(OffsetsPartitionFor("g\xf0\x9f\x98\x80", 50), 32);  // a surrogate pair
  EXPECT_EQ(OffsetsPartitionFor("polygenelubricants", 50), 0);  // hashCode is MIN_VALUE
}

TEST(OffsetsRecordsTest, ValuesRoundTripAndOlderVersionsDecode) {
  OffsetCommitValue v{42, 7, "m", 1000, -1};
  Result<OffsetCommitValue> back = DecodeOffsetCommitValue(EncodeOffsetCommitValue(v));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->offset, 42);
  EXPECT_EQ(back->leader_epoch, 7);
  EXPECT_EQ(EncodeOffsetCommitValue(v)[1], 3);  // version 3
  v.expire_timestamp = 5000;
  const Bytes v1 = EncodeOffsetCommitValue(v);
  EXPECT_EQ(v1[1], 1);
  back = DecodeOffsetCommitValue(v1);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->expire_timestamp, 5000);
  EXPECT_EQ(back->leader_epoch, -1);  // v1 has none
  // Version 0: offset, metadata, commit timestamp.
  const Bytes v0 = {0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1, 'x', 0, 0, 0, 0, 0, 0, 0, 1};
  back = DecodeOffsetCommitValue(v0);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->offset, 9);
  EXPECT_EQ(back->metadata, "x");
  EXPECT_FALSE(DecodeOffsetCommitValue(Bytes{0, 9}).ok());
  Bytes trailing = EncodeOffsetCommitValue({1, -1, "", 0, -1});
  trailing.push_back(0);
  EXPECT_FALSE(DecodeOffsetCommitValue(trailing).ok());

  GroupMetadataValue g;
  g.protocol_type = "consumer";
  g.generation = 3;
  g.protocol = "range";
  g.leader = "m1";
  g.current_state_timestamp = 77;
  g.members.push_back({"m1", std::string("i1"), "c", "/h", 100, 50, Meta("s"), Meta("a")});
  Result<GroupMetadataValue> gb = DecodeGroupMetadataValue(EncodeGroupMetadataValue(g));
  ASSERT_TRUE(gb.ok()) << gb.status().ToString();
  EXPECT_EQ(gb->generation, 3);
  ASSERT_EQ(gb->members.size(), 1u);
  EXPECT_EQ(gb->members[0].group_instance_id, std::optional<std::string>("i1"));
  EXPECT_EQ(gb->members[0].assignment, Meta("a"));

  Result<OffsetsRecordKey> k = DecodeOffsetsRecordKey(EncodeGroupMetadataKey({"grp"}));
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(std::get<GroupMetadataKey>(*k).group, "grp");
  k = DecodeOffsetsRecordKey(EncodeOffsetCommitKey({"grp", "t", 4}));
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(std::get<OffsetCommitKey>(*k).partition, 4);
  k = DecodeOffsetsRecordKey(Bytes{0, 11, 1, 2});
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE(std::holds_alternative<OtherRecordKey>(*k));
}

}  // namespace
}  // namespace daruma
