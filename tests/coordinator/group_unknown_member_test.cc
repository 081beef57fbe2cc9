// Requests naming a member or a generation the coordinator does not know, on
// real `__consumer_offsets` logs. group_coordinator_test.cc covers Heartbeat,
// OffsetCommit, LeaveGroup and a JoinGroup with a made-up id; here, one case
// each:
//  * SyncGroup: an unknown member, a group that does not exist
//    (UNKNOWN_MEMBER_ID, Kafka's doSyncGroup), a generation that is older or
//    newer than the group's (ILLEGAL_GENERATION);
//  * after a restart that lost a generation (it completed its join phase but
//    its assignment was never stored), the members of that generation: one
//    the stored generation does not have is UNKNOWN_MEMBER_ID everywhere,
//    one it has is ILLEGAL_GENERATION; nothing they send is stored, and
//    rejoining (with the old id, or as a new member) brings the group back.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coordinator/group_test_support.h"

namespace daruma::testing {
namespace {

constexpr char kUnknownMemberGroup[] = "orders-app";

class GroupUnknownMemberTest : public ::testing::Test {
 protected:
  GroupCoordinator& coordinator() { return h_.coordinator(); }

  ErrorCode SyncError(const std::string& group, const std::string& member, int32_t generation) {
    SyncSlot s = SyncAs(coordinator(), group, member, generation);
    EXPECT_TRUE(s->has_value()) << "parked";
    return s->has_value() ? (*s)->error : ErrorCode::kRequestTimedOut;
  }

  ErrorCode CommitError(const std::string& member, int32_t generation, int64_t offset) {
    OffsetCommitArgs c;
    c.group_id = kUnknownMemberGroup;
    c.member_id = member;
    c.generation_id = generation;
    c.partitions.push_back({"clicks", 0, offset, -1, std::nullopt, -1});
    return coordinator().CommitOffsets(c)[0];
  }

  // Two members through generation 1 (stored); returns their ids.
  std::pair<std::string, std::string> StableGroupOfTwo() {
    JoinSlot a = JoinAs(coordinator(), kUnknownMemberGroup, "");
    JoinSlot b = JoinAs(coordinator(), kUnknownMemberGroup, "");
    for (const auto& [id, sync] :
         CompleteRebalance(coordinator(), h_.time(), kUnknownMemberGroup, {a, b})) {
      EXPECT_TRUE(sync.has_value() && sync->error == ErrorCode::kNone) << id;
    }
    return {(*a)->member_id, (*b)->member_id};
  }

  OffsetsLogHarness h_;
};

TEST_F(GroupUnknownMemberTest, SyncGroupRefusesUnknownMembersAndOtherGenerations) {
  const auto [a, b] = StableGroupOfTwo();
  EXPECT_EQ(SyncError(kUnknownMemberGroup, "ghost-member", 1), ErrorCode::kUnknownMemberId);
  EXPECT_EQ(SyncError("no-such-group", a, 1), ErrorCode::kUnknownMemberId);
  EXPECT_EQ(SyncError(kUnknownMemberGroup, a, 0), ErrorCode::kIllegalGeneration);
  EXPECT_EQ(SyncError(kUnknownMemberGroup, a, 2), ErrorCode::kIllegalGeneration);
  EXPECT_EQ((*JoinAs(coordinator(), kUnknownMemberGroup, "ghost-member"))->error,
            ErrorCode::kUnknownMemberId);
  // None of it disturbed the group: the right generation gets its assignment.
  SyncSlot ok = SyncAs(coordinator(), kUnknownMemberGroup, b, 1);
  ASSERT_TRUE(ok->has_value());
  EXPECT_EQ((*ok)->error, ErrorCode::kNone);
  EXPECT_FALSE((*ok)->assignment.empty());
  EXPECT_EQ(coordinator().DescribeGroup(kUnknownMemberGroup).state, "Stable");
}

TEST_F(GroupUnknownMemberTest, MembersOfAGenerationLostInARestartAreToldToRejoin) {
  const auto [a, b] = StableGroupOfTwo();
  ASSERT_EQ(CommitError(a, 1, 10), ErrorCode::kNone);
  // Generation 2 (a third member) completes its join phase; the broker stops
  // before the leader's SyncGroup, so generation 1 is the last one stored.
  JoinSlot c = JoinAs(coordinator(), kUnknownMemberGroup, "");
  JoinSlot ja = JoinAs(coordinator(), kUnknownMemberGroup, a);
  JoinSlot jb = JoinAs(coordinator(), kUnknownMemberGroup, b);
  ASSERT_TRUE(c->has_value() && ja->has_value() && jb->has_value());
  ASSERT_EQ((*c)->generation_id, 2);
  const std::string c_id = (*c)->member_id;
  h_.Restart();

  EXPECT_EQ(coordinator().Heartbeat(kUnknownMemberGroup, c_id, std::nullopt, 2),
            ErrorCode::kUnknownMemberId);
  EXPECT_EQ(SyncError(kUnknownMemberGroup, c_id, 2), ErrorCode::kUnknownMemberId);
  EXPECT_EQ(CommitError(c_id, 2, 99), ErrorCode::kUnknownMemberId);
  EXPECT_EQ(coordinator().Heartbeat(kUnknownMemberGroup, a, std::nullopt, 2),
            ErrorCode::kIllegalGeneration);
  EXPECT_EQ(SyncError(kUnknownMemberGroup, a, 2), ErrorCode::kIllegalGeneration);
  EXPECT_EQ(CommitError(a, 2, 99), ErrorCode::kIllegalGeneration);
  // Nothing of theirs was stored: the offset is still generation 1's.
  OffsetFetchResult fetched = coordinator().FetchOffsets(kUnknownMemberGroup, std::nullopt);
  ASSERT_EQ(fetched.partitions.size(), 1u);
  EXPECT_EQ(fetched.partitions[0].offset, 10);

  // What clients do next: c's old id is refused, so it joins as a new member;
  // a and b rejoin with theirs. The group settles on a new generation 2.
  EXPECT_EQ((*JoinAs(coordinator(), kUnknownMemberGroup, c_id))->error,
            ErrorCode::kUnknownMemberId);
  JoinSlot c2 = JoinAs(coordinator(), kUnknownMemberGroup, "");
  JoinSlot a2 = JoinAs(coordinator(), kUnknownMemberGroup, a);
  JoinSlot b2 = JoinAs(coordinator(), kUnknownMemberGroup, b);
  for (const auto& [id, sync] :
       CompleteRebalance(coordinator(), h_.time(), kUnknownMemberGroup, {c2, a2, b2})) {
    ASSERT_TRUE(sync.has_value()) << id;
    EXPECT_EQ(sync->error, ErrorCode::kNone) << id;
  }
  EXPECT_EQ((*a2)->generation_id, 2);
  EXPECT_EQ(CommitError((*c2)->member_id, 2, 11), ErrorCode::kNone);
  h_.Restart();
  EXPECT_EQ(coordinator().DescribeGroup(kUnknownMemberGroup).members.size(), 3u);
  EXPECT_EQ(coordinator().Heartbeat(kUnknownMemberGroup, (*c2)->member_id, std::nullopt, 2),
            ErrorCode::kNone);
}

}  // namespace
}  // namespace daruma::testing
