// Member metadata too large to store: a JoinGroup whose protocol metadata is
// larger than `__consumer_offsets`' max.message.bytes is accepted (Kafka has
// no limit at join either), but the group metadata record the leader's
// SyncGroup must store then cannot be appended (the log refuses a batch above
// max.message.bytes). As in Kafka's GroupCoordinator.doSyncGroup, nothing is
// stored, every parked SyncGroup fails, the group goes back to
// PreparingRebalance and the last stored generation stays what a restart
// loads; the group recovers once the member shrinks its metadata or leaves.
//
// The error is Kafka's: the append's MESSAGE_TOO_LARGE / RECORD_LIST_TOO_LARGE
// becomes UNKNOWN_SERVER_ERROR (GroupMetadataManager.storeGroup), which a
// Java consumer raises from poll() as "Unexpected error from SyncGroup",
// rather than COORDINATOR_NOT_AVAILABLE, which clients would retry silently
// for ever (rediscover the coordinator, rejoin, fail again).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/group_test_support.h"

namespace daruma::testing {
namespace {

constexpr char kOversizedGroup[] = "orders-app";

Bytes Metadata(size_t size, uint8_t fill = 'm') {
  return Bytes(size, fill);
}

class GroupOversizedMetadataTest : public ::testing::Test {
 protected:
  GroupCoordinator& coordinator() { return h_.coordinator(); }

  JoinSlot Join(const std::string& member_id, Bytes metadata) {
    return JoinAs(coordinator(), kOversizedGroup, member_id, std::move(metadata));
  }
  std::map<std::string, std::optional<SyncGroupResult>> CompleteRebalance(
      const std::vector<JoinSlot>& joins) {
    return daruma::testing::CompleteRebalance(coordinator(), h_.time(), kOversizedGroup, joins);
  }

  // A stable generation 1 of two members with small metadata; returns their ids.
  std::pair<std::string, std::string> StableGroupOfTwo() {
    auto a = Join("", Metadata(64));
    auto b = Join("", Metadata(64));
    for (const auto& [id, sync] : CompleteRebalance({a, b})) {
      EXPECT_TRUE(sync.has_value() && sync->error == ErrorCode::kNone) << id;
    }
    EXPECT_EQ(coordinator().DescribeGroup(kOversizedGroup).state, "Stable");
    return {(*a)->member_id, (*b)->member_id};
  }

  // A third member joins with metadata above max.message.bytes and the others
  // rejoin; every sync of generation 2 fails. Returns the big member's id.
  std::string FailedGenerationTwo(const std::string& a, const std::string& b) {
    const size_t too_large = size_t(LogConfig{}.max_message_bytes) + 64 * 1024;
    auto c = Join("", Metadata(too_large, 'x'));  // starts the rebalance
    auto ja = Join(a, Metadata(64));
    auto jb = Join(b, Metadata(64));
    EXPECT_TRUE(c->has_value() && ja->has_value() && jb->has_value());  // everyone rejoined
    EXPECT_EQ((*c)->error, ErrorCode::kNone);
    EXPECT_EQ((*c)->generation_id, 2);
    const auto syncs = CompleteRebalance({c, ja, jb});
    EXPECT_EQ(syncs.size(), 3u);
    for (const auto& [id, sync] : syncs) {
      EXPECT_TRUE(sync.has_value()) << id << ": a parked sync was left unanswered";
      if (!sync) continue;
      EXPECT_EQ(sync->error, ErrorCode::kUnknownServerError) << id;
      EXPECT_TRUE(sync->assignment.empty()) << id;
    }
    return (*c)->member_id;
  }

  OffsetsLogHarness h_;
};

TEST_F(GroupOversizedMetadataTest, TheSyncFailsNothingIsStoredAndTheGroupRebalances) {
  const auto [a, b] = StableGroupOfTwo();
  OffsetCommitArgs commit;
  commit.group_id = kOversizedGroup;
  commit.member_id = a;
  commit.generation_id = 1;
  commit.partitions.push_back({"clicks", 0, 42, -1, std::string("before"), -1});
  ASSERT_EQ(coordinator().CommitOffsets(commit)[0], ErrorCode::kNone);
  Log* log = h_.log(h_.PartitionFor(kOversizedGroup));
  ASSERT_NE(log, nullptr);
  const int64_t end = log->log_end_offset();

  const std::string c = FailedGenerationTwo(a, b);
  EXPECT_EQ(log->log_end_offset(), end);  // no record, not even a part of one
  GroupDescription d = coordinator().DescribeGroup(kOversizedGroup);
  EXPECT_EQ(d.state, "PreparingRebalance");
  EXPECT_EQ(d.members.size(), 3u);
  EXPECT_EQ(coordinator().Heartbeat(kOversizedGroup, a, std::nullopt, 2),
            ErrorCode::kRebalanceInProgress);
  // Offsets are not held up by the group's metadata.
  commit.generation_id = 2;
  commit.partitions[0].offset = 43;
  EXPECT_EQ(coordinator().CommitOffsets(commit)[0], ErrorCode::kNone);

  // The big member goes away; the others rejoin and generation 3 is stored.
  EXPECT_EQ(coordinator().LeaveGroup(kOversizedGroup, {{c, std::nullopt}}).member_errors,
            std::vector<ErrorCode>{ErrorCode::kNone});
  const auto syncs = CompleteRebalance({Join(a, Metadata(64)), Join(b, Metadata(64))});
  for (const auto& [id, sync] : syncs) {
    ASSERT_TRUE(sync.has_value()) << id;
    EXPECT_EQ(sync->error, ErrorCode::kNone) << id;
  }
  EXPECT_GT(log->log_end_offset(), end);
  h_.Restart();
  d = coordinator().DescribeGroup(kOversizedGroup);
  EXPECT_EQ(d.state, "Stable");
  EXPECT_EQ(d.members.size(), 2u);
  EXPECT_EQ(coordinator().Heartbeat(kOversizedGroup, a, std::nullopt, 3), ErrorCode::kNone);
  OffsetFetchResult fetched = coordinator().FetchOffsets(kOversizedGroup, std::nullopt);
  ASSERT_EQ(fetched.partitions.size(), 1u);
  EXPECT_EQ(fetched.partitions[0].offset, 43);
}

TEST_F(GroupOversizedMetadataTest, ARestartAfterTheFailedSyncLoadsTheLastStoredGeneration) {
  const auto [a, b] = StableGroupOfTwo();
  const std::string c = FailedGenerationTwo(a, b);
  h_.Restart();
  EXPECT_EQ(h_.load_report().skipped, 0);
  GroupDescription d = coordinator().DescribeGroup(kOversizedGroup);
  EXPECT_EQ(d.state, "Stable");
  ASSERT_EQ(d.members.size(), 2u);
  EXPECT_EQ(coordinator().Heartbeat(kOversizedGroup, a, std::nullopt, 1), ErrorCode::kNone);
  EXPECT_EQ(coordinator().Heartbeat(kOversizedGroup, b, std::nullopt, 2),
            ErrorCode::kIllegalGeneration);
  EXPECT_EQ(coordinator().Heartbeat(kOversizedGroup, c, std::nullopt, 2),
            ErrorCode::kUnknownMemberId);
}

TEST_F(GroupOversizedMetadataTest, ALoneMemberWithOversizedMetadataNeverGetsAGenerationStored) {
  // An empty group: every attempt fails the same way and leaves nothing.
  auto first = Join("", Metadata(size_t(LogConfig{}.max_message_bytes) + 1, 'y'));
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto syncs = CompleteRebalance({first});
    ASSERT_EQ(syncs.size(), 1u);
    const auto& [id, sync] = *syncs.begin();
    ASSERT_TRUE(sync.has_value());
    EXPECT_EQ(sync->error, ErrorCode::kUnknownServerError);
    EXPECT_EQ(coordinator().DescribeGroup(kOversizedGroup).state, "PreparingRebalance");
    first = Join(id, Metadata(size_t(LogConfig{}.max_message_bytes) + 1, 'y'));  // the retry
  }
  Log* log = h_.log(h_.PartitionFor(kOversizedGroup));
  EXPECT_TRUE(log == nullptr || log->log_end_offset() == 0);
  h_.Restart();
  EXPECT_EQ(coordinator().DescribeGroup(kOversizedGroup).state, "Dead");  // nothing was ever stored
}

}  // namespace
}  // namespace daruma::testing
