// Kafka's classic consumer-group protocol against `daruma serve` with real
// clients (issue 21, label compat), membership and consumption: FindCoordinator
// for groups, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit and
// OffsetFetch from the group members of confluent-kafka 1.7.0 (librdkafka
// 2.0.2), kafka-python 2.0.2 and kcat 1.7.1 (`-G`). Committed offsets live in
// `__consumer_offsets` and must outlive a clean stop and a SIGKILL. The
// harness (scripts, member processes, broker settings, the client versions'
// requests) is consumer_group_harness.h; the admin views are in
// consumer_group_admin_compat_test.cc, SIGKILLs in the middle of commits and
// of a rebalance in consumer_group_crash_compat_test.cc.
//
// What is proven, each by the outcome the clients observe (no timing asserts):
//   * two members of one group, as two processes, split a 6-partition topic
//     (each owns a non-empty share, the shares are disjoint and cover it) and
//     together consume 3,000 messages exactly once, committing synchronously
//     after every batch: confluent-kafka, then kafka-python;
//   * a new member resumes at the committed offset (its first message of each
//     partition is the one after the last committed) after SIGTERM and after
//     SIGKILL of the broker, with every commit that was acknowledged intact;
//   * a member that joins shrinks the first member's assignment (revoke, then
//     assign) and one that closes gives it back through LeaveGroup, well
//     within its 30 s session timeout;
//   * a member killed with SIGKILL (no LeaveGroup, no more heartbeats) is
//     expelled after its 6 s session timeout and the survivor takes and
//     consumes all partitions;
//   * kcat's balanced consumer commits what it consumed (librdkafka commits
//     on close) and the next run in the group starts there.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "consumer_group_harness.h"

namespace daruma::broker::testing {
namespace {

TEST_F(ConsumerGroupCompatTest, ConfluentKafkaMembersSplitTheTopicAndConsumeEveryMessageOnce) {
  DARUMA_REQUIRE_CLIENTS("confluent");
  TwoMembersConsumeEveryMessageOnce("confluent");
}

TEST_F(ConsumerGroupCompatTest, KafkaPythonMembersSplitTheTopicAndConsumeEveryMessageOnce) {
  DARUMA_REQUIRE_CLIENTS("kafka-python");
  TwoMembersConsumeEveryMessageOnce("kafka-python");
}

// Scenario 3: one member at a time takes part of the topic and commits what
// it took; the next member of the group starts each partition exactly at the
// committed offset, after a SIGTERM of the broker and after a SIGKILL right
// after an acknowledged commit, and the three together read every message
// once.
TEST_F(ConsumerGroupCompatTest, ANewMemberResumesAtTheCommittedOffsetAfterStopAndAfterKill) {
  DARUMA_REQUIRE_CLIENTS("confluent");
  constexpr int kMessages = 3000;
  const std::string topic = "resume";
  const std::string group = "g-resume";
  ASSERT_TRUE(StartBroker());
  ASSERT_NO_FATAL_FAILURE(Produce("confluent", topic, 0, kMessages));
  // The group's committed offsets as OffsetFetch should answer them.
  auto as_fetched = [](const std::map<int, int64_t>& commits) {
    std::map<int, int64_t> out = EveryPartitionAt(-1001);  // OFFSET_INVALID: none
    for (const auto& [p, offset] : commits) out[p] = offset;
    return out;
  };
  // Where a member must start: at the commit, or (none) at offset 0.
  auto expected_starts = [](const std::map<int, int64_t>& commits, const MemberLog& log) {
    std::map<int, int64_t> out;
    for (const auto& entry : FirstOffsets(log.records)) {
      const int p = entry.first;
      out[p] = commits.count(p) != 0 ? commits.at(p) : 0;
    }
    return out;
  };
  auto take = [&](const std::string& name, int count) {
    auto member = StartMember(name, "confluent", group, topic, std::to_string(count));
    EXPECT_EQ(member->Wait(60), 0) << Diag(name) << BrokerLog();
    const MemberLog log = Member(name);
    EXPECT_EQ(log.records.size(), size_t(count)) << Diag(name);
    EXPECT_TRUE(log.errors.empty()) << Diag(name);
    // It committed, and the coordinator acknowledged, exactly what it took.
    EXPECT_EQ(log.committed, NextOffsets(log.records)) << Diag(name);
    return log;
  };

  const MemberLog first = take("first", 1500);
  std::map<int, int64_t> commits = first.committed;

  ASSERT_EQ(daruma_->Stop(), 0) << BrokerLog();  // SIGTERM: a clean stop
  ASSERT_TRUE(StartBroker());
  EXPECT_EQ(Committed(group, topic), as_fetched(commits)) << BrokerLog();
  const MemberLog second = take("second", 1000);
  EXPECT_EQ(FirstOffsets(second.records), expected_starts(commits, second)) << Diag("second");
  for (const auto& [p, offset] : second.committed) commits[p] = offset;

  ASSERT_TRUE(daruma_->Kill());  // SIGKILL right after the acknowledged commits
  ASSERT_TRUE(StartBroker());
  EXPECT_EQ(Committed(group, topic), as_fetched(commits)) << BrokerLog();
  const MemberLog third = take("third", kMessages - 2500);
  EXPECT_EQ(FirstOffsets(third.records), expected_starts(commits, third)) << Diag("third");
  for (const auto& [p, offset] : third.committed) commits[p] = offset;

  EXPECT_EQ(SortedValues({&first, &second, &third}), Expected(kMessages));
  EXPECT_EQ(commits, EveryPartitionAt(kMessages / kPartitions));
  EXPECT_EQ(Committed(group, topic), commits);
  EXPECT_EQ(daruma_->Stop(), 0) << BrokerLog();
}

// Scenario 4: A alone owns all six partitions; B joins and A's assignment
// shrinks (revoked, then assigned its share); B closes, and its LeaveGroup,
// not its 30 s session timeout, gives A all six back (within 20 s).
TEST_F(ConsumerGroupCompatTest, AMemberThatLeavesGivesItsPartitionsBack) {
  DARUMA_REQUIRE_CLIENTS("confluent");
  constexpr int kSessionMs = 30000;
  const std::string topic = "leave";
  const std::string group = "g-leave";
  ASSERT_TRUE(StartBroker());
  ASSERT_NO_FATAL_FAILURE(Produce("confluent", topic, 0, 0));
  auto a = StartMember("a", "confluent", group, topic, StopFile("a"), kSessionMs);
  ASSERT_TRUE(WaitFor(30, [&] { return Member("a").current == AllPartitions(); }))
      << Diag("a") << BrokerLog();
  auto b = StartMember("b", "confluent", group, topic, StopFile("b"), kSessionMs);
  ASSERT_TRUE(WaitFor(30, [&] { return SplitBetween(Member("a"), Member("b")); }))
      << Diag("a") << Diag("b") << BrokerLog();
  const std::set<int> a_share = Member("a").current;
  const std::set<int> b_share = Member("b").current;
  RequestStop("b");
  EXPECT_EQ(b->Wait(30), 0) << Diag("b");
  EXPECT_TRUE(Member("b").closed) << Diag("b");
  EXPECT_TRUE(WaitFor(20, [&] { return Member("a").current == AllPartitions(); }))
      << "A did not get B's partitions back before B's session could expire" << Diag("a")
      << BrokerLog();
  RequestStop("a");
  EXPECT_EQ(a->Wait(30), 0) << Diag("a");

  // A's assignments, repeats of the same one folded: all, its share, all.
  const MemberLog la = Member("a");
  std::vector<std::set<int>> seen;
  for (const std::set<int>& assignment : la.assignments) {
    if (!assignment.empty() && (seen.empty() || seen.back() != assignment)) {
      seen.push_back(assignment);
    }
  }
  EXPECT_EQ(seen, (std::vector<std::set<int>>{AllPartitions(), a_share, AllPartitions()}))
      << Diag("a");
  // Revoked before shrinking, before growing back, and at close.
  EXPECT_GE(la.revocations, 3) << Diag("a");
  const MemberLog lb = Member("b");
  ASSERT_FALSE(lb.assignments.empty()) << Diag("b");
  EXPECT_EQ(lb.assignments.front(), b_share) << Diag("b");
  EXPECT_TRUE(la.errors.empty() && lb.errors.empty()) << Diag("a") << Diag("b");
  EXPECT_EQ(daruma_->Stop(), 0) << BrokerLog();
}

// Scenario 5: B is killed with SIGKILL: no LeaveGroup, no more heartbeats.
// The coordinator expels it after its session timeout (6 s) and A, the
// survivor, is assigned all six partitions and consumes from every one.
TEST_F(ConsumerGroupCompatTest, AMemberThatStopsHeartbeatingIsExpelled) {
  DARUMA_REQUIRE_CLIENTS("confluent");
  constexpr int kMessages = 600;
  const std::string topic = "expel";
  const std::string group = "g-expel";
  ASSERT_TRUE(StartBroker());
  ASSERT_NO_FATAL_FAILURE(Produce("confluent", topic, 0, 0));
  auto a = StartMember("a", "confluent", group, topic, StopFile("a"));
  auto b = StartMember("b", "confluent", group, topic, StopFile("b"));
  ASSERT_TRUE(WaitFor(60, [&] { return SplitBetween(Member("a"), Member("b")); }))
      << Diag("a") << Diag("b") << BrokerLog();
  ASSERT_TRUE(b->Kill());
  EXPECT_FALSE(Member("b").closed);
  ASSERT_TRUE(WaitFor(40, [&] { return Member("a").current == AllPartitions(); }))
      << "B was not expelled" << Diag("a") << BrokerLog();
  ASSERT_NO_FATAL_FAILURE(Produce("confluent", topic, 0, kMessages));
  EXPECT_TRUE(WaitFor(40, [&] { return Member("a").records.size() >= size_t(kMessages); }))
      << Diag("a") << BrokerLog();
  RequestStop("a");
  EXPECT_EQ(a->Wait(30), 0) << Diag("a");
  const MemberLog la = Member("a");
  EXPECT_EQ(SortedValues({&la}), Expected(kMessages));
  EXPECT_EQ(la.committed, EveryPartitionAt(kMessages / kPartitions)) << Diag("a");
  EXPECT_TRUE(la.errors.empty()) << Diag("a");
  EXPECT_EQ(daruma_->Stop(), 0) << BrokerLog();
}

// Scenario 6: kcat's balanced consumer (-G) reads a topic to its end (-e)
// from the beginning; librdkafka commits the offsets it stored when kcat
// closes. The committed offsets are then the end of each partition, a second
// run in the group (no -o: the committed offsets) reads nothing, and a third,
// after more messages, reads exactly the new ones.
TEST_F(ConsumerGroupCompatTest, KcatBalancedConsumerCommitsAndResumes) {
  DARUMA_REQUIRE_CLIENTS("kcat", "confluent");
  constexpr int kMessages = 600;
  constexpr int kMore = 60;
  const std::string kcat = FindOnPath("kcat");
  const std::string topic = "kcat-group";
  const std::string group = "g-kcat";
  ASSERT_TRUE(StartBroker());
  ASSERT_NO_FATAL_FAILURE(Produce("confluent", topic, 0, kMessages));
  // One kcat -G run: its records ("<partition> <offset> <value>" lines).
  auto run = [&](const std::string& name, const std::string& offset_flag) {
    const std::string out = dir_.Join(name + ".out");
    const std::string err = dir_.Join(name + ".err");
    const std::string cmd = "timeout 60 " + kcat + " -b " + daruma_->bootstrap() + " -G " + group +
                            " " + offset_flag +
                            " -e -q -f '%p %o %s\\n' -X session.timeout.ms=6000"
                            " -X heartbeat.interval.ms=500 " +
                            topic + " >" + out + " 2>" + err;
    EXPECT_EQ(Shell(cmd), 0) << ReadFileToString(err) << BrokerLog();
    std::vector<Consumed> records;
    std::istringstream in(ReadFileToString(out));
    for (Consumed r; in >> r.partition >> r.offset >> r.value;) records.push_back(r);
    return records;
  };
  auto values = [](const std::vector<Consumed>& records) {
    std::vector<std::string> out;
    for (const Consumed& r : records) out.push_back(r.value);
    std::sort(out.begin(), out.end());
    return out;
  };

  const std::vector<Consumed> first = run("kcat-1", "-o beginning");
  EXPECT_EQ(values(first), Expected(kMessages));
  EXPECT_EQ(FirstOffsets(first), EveryPartitionAt(0));
  EXPECT_EQ(NextOffsets(first), EveryPartitionAt(kMessages / kPartitions));
  EXPECT_EQ(Committed(group, topic), EveryPartitionAt(kMessages / kPartitions));

  EXPECT_TRUE(run("kcat-2", "").empty()) << "read again what the group had committed";
  EXPECT_EQ(Committed(group, topic), EveryPartitionAt(kMessages / kPartitions));

  ASSERT_NO_FATAL_FAILURE(Produce("confluent", topic, kMessages, kMore));
  const std::vector<Consumed> third = run("kcat-3", "");
  EXPECT_EQ(values(third), Expected(kMore, kMessages));
  EXPECT_EQ(FirstOffsets(third), EveryPartitionAt(kMessages / kPartitions));
  EXPECT_EQ(Committed(group, topic), EveryPartitionAt((kMessages + kMore) / kPartitions));
  EXPECT_EQ(daruma_->Stop(), 0) << BrokerLog();
}

}  // namespace
}  // namespace daruma::broker::testing
