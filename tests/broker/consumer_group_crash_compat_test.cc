// Kafka's classic consumer-group protocol against `daruma serve` with real
// clients (issue 21, label compat), crashes: the broker is killed with
// SIGKILL during OffsetCommit and during a rebalance, and every commit it
// acknowledged survives while nothing that was never committed appears.
// The harness (scripts, member processes, broker settings) is
// consumer_group_harness.h.
//
// What is proven, each by the outcome the clients observe:
//   * a confluent-kafka committer commits 1, 2, 3, ... synchronously, one
//     OffsetCommit at a time (to every partition of the topic at once), as a
//     standalone consumer (assign(), generation -1) or as the one member of
//     its group (subscribe()); the broker is SIGKILLed while it commits,
//     after 50, 300 and 1,000 acknowledged commits. The committer is frozen
//     (SIGSTOP) 0.2 s after the kill, before the restart, so every "acked"
//     line it wrote came from the killed broker and nothing it did not write
//     "attempt" for was ever sent. After the restart each partition's
//     committed offset is at least the last acknowledged value and at most
//     the last attempted one, and all partitions of one commit hold the same
//     value. Thawed, the same committer reconnects and goes on committing;
//     once it closes, the committed offsets are again between its last ack
//     and its last attempt;
//   * two confluent-kafka members own and have committed a 6-partition
//     topic; B is frozen (so the rebalance cannot complete without it) and
//     a third member C joins; the broker is SIGKILLed once A has heard of
//     the rebalance (it revoked its partitions) and before C was assigned
//     anything. After the restart the offsets committed before the kill are
//     intact; B is thawed, and the same three processes end up with
//     disjoint, non-empty shares covering the topic, then consume the
//     messages produced afterwards exactly once among them (and nothing
//     consumed before the kill a second time).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "consumer_group_harness.h"

namespace daruma::broker::testing {
namespace {

// committer.py MODE BOOTSTRAP GROUP TOPIC PARTITIONS OUT STOP: a
// confluent-kafka Consumer of GROUP, on TOPIC's PARTITIONS partitions by
// assign() (MODE "assign") or as the group's member (MODE "subscribe": it
// starts once it is assigned), that commits i = 1, 2, 3, ... synchronously,
// offset i in every partition in one commit() call, until the file STOP
// exists. Appends to OUT, flushed at once:
//   assigned P..    (subscribe) the new assignment
//   attempt I       before commit I is handed to the client
//   acked I         commit I acknowledged for every partition
//   failed I WHY..  commit I failed (the next value is tried next)
//   closed          after close()
// Exits 0 when it stopped as asked, 3 after its own 90 s deadline.
constexpr char kCommitterScript[] = R"PY(
import os, sys, time
mode, bootstrap, group, topic = sys.argv[1:5]
partitions, out_path, stop = int(sys.argv[5]), sys.argv[6], sys.argv[7]
from confluent_kafka import Consumer, KafkaException, TopicPartition
out = open(out_path, 'a')
def emit(*words):
    out.write(' '.join(str(w) for w in words) + '\n')
    out.flush()
c = Consumer({'bootstrap.servers': bootstrap, 'group.id': group, 'enable.auto.commit': False,
              'session.timeout.ms': 6000, 'heartbeat.interval.ms': 500,
              'reconnect.backoff.ms': 50, 'reconnect.backoff.max.ms': 500})
deadline = time.time() + 90
if mode == 'subscribe':
    assigned = []
    def on_assign(consumer, tps):
        assigned[:] = [tp.partition for tp in tps]
        emit('assigned', *sorted(assigned))
    c.subscribe([topic], on_assign=on_assign)
    while not assigned and time.time() < deadline:
        c.poll(0.1)
else:
    c.assign([TopicPartition(topic, p) for p in range(partitions)])
i = 0
while not os.path.exists(stop) and time.time() < deadline:
    i += 1
    emit('attempt', i)
    try:
        result = c.commit(offsets=[TopicPartition(topic, p, i) for p in range(partitions)],
                          asynchronous=False)
        errors = ['%d:%s' % (tp.partition, tp.error.name()) for tp in result if tp.error is not None]
        if errors:
            emit('failed', i, *errors)
        else:
            emit('acked', i)
    except KafkaException as e:
        emit('failed', i, e.args[0].name())
        time.sleep(0.05)
    if mode == 'subscribe':
        c.poll(0)  # serves rebalances (the topic has no messages)
c.close()
emit('closed')
sys.exit(0 if os.path.exists(stop) else 3)
)PY";

// committer.py's output, complete lines only.
struct CommitterLog {
  int64_t last_attempt = 0;
  int64_t last_acked = 0;
  int acked = 0;  // "acked" lines
  std::vector<std::string> failures;
  bool closed = false;
};

CommitterLog ParseCommitterLog(const std::string& text) {
  CommitterLog log;
  std::istringstream in(CompleteLines(text));
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string kind;
    int64_t i = 0;
    words >> kind >> i;
    if (kind == "attempt") {
      log.last_attempt = i;
    } else if (kind == "acked") {
      log.last_acked = i;
      ++log.acked;
    } else if (kind == "failed") {
      log.failures.push_back(line);
    } else if (kind == "closed") {
      log.closed = true;
    }
  }
  return log;
}

// Whether the three members' current assignments split the topic: each has a
// share, no partition is in two, and together they have every one.
bool SplitAmong(const MemberLog& a, const MemberLog& b, const MemberLog& c) {
  if (a.current.empty() || b.current.empty() || c.current.empty()) return false;
  if (a.current.size() + b.current.size() + c.current.size() != size_t(kPartitions)) return false;
  return Union(Union(a.current, b.current), c.current) == AllPartitions();
}

class ConsumerGroupCrashCompatTest : public ConsumerGroupCompatTest {
 protected:
  void SetUp() override {
    ConsumerGroupCompatTest::SetUp();
    WriteStringToFile(dir_.Join("committer.py"), kCommitterScript);
  }

  // committer.py (its events in committer.log, its stderr in committer.err,
  // stopped by StopFile("committer")).
  std::unique_ptr<ChildProcess> StartCommitter(const std::string& mode, const std::string& group,
                                               const std::string& topic, int partitions) {
    auto committer = std::make_unique<ChildProcess>(
        std::vector<std::string>{kPython, dir_.Join("committer.py"), mode, daruma_->bootstrap(),
                                 group, topic, std::to_string(partitions),
                                 dir_.Join("committer.log"), StopFile("committer")},
        dir_.Join("committer.err"));
    EXPECT_TRUE(committer->started());
    return committer;
  }

  CommitterLog Committer() const {
    return ParseCommitterLog(ReadFileToString(dir_.Join("committer.log")));
  }

  std::string CommitterDiag() const {
    const CommitterLog log = Committer();
    std::string failures;
    for (const std::string& f : log.failures) failures += f + "\n";
    return "\n--- committer: last attempt " + std::to_string(log.last_attempt) + ", last acked " +
           std::to_string(log.last_acked) + ", " + std::to_string(log.acked) + " acked, " +
           std::to_string(log.failures.size()) + " failed:\n" + Tail(failures, 2000) +
           "--- committer.err (tail) ---\n" +
           Tail(ReadFileToString(dir_.Join("committer.err")), 3000);
  }
};

struct CommitCrash {
  const char* name;
  int acks_before_kill;  // the kill comes once at least this many were acknowledged
  const char* mode;      // committer.py MODE
  int partitions;
};

void PrintTo(const CommitCrash& param, std::ostream* os) {
  *os << param.name;
}

class ConsumerGroupCommitCrashCompatTest : public ConsumerGroupCrashCompatTest,
                                           public ::testing::WithParamInterface<CommitCrash> {};

// SIGKILL in the middle of a stream of synchronous commits; see the file
// comment. Every partition's offset is checked against the committer's
// output: after the restart against what it wrote before it was frozen,
// at the end against all of it.
TEST_P(ConsumerGroupCommitCrashCompatTest, EveryAcknowledgedCommitSurvivesASigkill) {
  DARUMA_REQUIRE_CLIENTS("confluent");
  const CommitCrash& param = GetParam();
  const std::string topic = "commits";
  const std::string group = "g-commits";
  ASSERT_TRUE(StartBroker());
  ASSERT_NO_FATAL_FAILURE(Produce("confluent", topic, 0, 0, param.partitions));
  auto committer = StartCommitter(param.mode, group, topic, param.partitions);
  // Polled every millisecond: the committer is acknowledged about that often.
  ASSERT_TRUE(WaitFor(
      45, [&] { return Committer().acked >= param.acks_before_kill; }, /*poll_ms=*/1))
      << CommitterDiag() << BrokerLog();

  ASSERT_TRUE(daruma_->Kill());  // while a commit is in flight or about to be
  // The client takes in the lost connections first: frozen half-way through
  // that, librdkafka 2.0.2 may, once thawed, send its FindCoordinator over
  // the coordinator connection it is about to close (the old address) and
  // then wait for the answer forever.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(committer->Freeze());  // nothing more is sent or written
  const CommitterLog at_kill = Committer();
  // Every "acked" in it came from the killed broker, the only one there was.
  ASSERT_GE(at_kill.acked, param.acks_before_kill) << CommitterDiag();
  ASSERT_TRUE(StartBroker());
  const std::map<int, int64_t> after_crash = Committed(group, topic, param.partitions);
  ASSERT_EQ(after_crash.size(), size_t(param.partitions)) << BrokerLog();
  // Where the kill landed (in --gtest_output=xml).
  RecordProperty("acked_at_kill", std::to_string(at_kill.last_acked));
  RecordProperty("attempted_at_kill", std::to_string(at_kill.last_attempt));
  RecordProperty("committed_after_restart", std::to_string(after_crash.begin()->second));
  for (const auto& [p, offset] : after_crash) {
    EXPECT_GE(offset, at_kill.last_acked)
        << "partition " << p << ": an acknowledged commit was lost" << CommitterDiag()
        << BrokerLog();
    EXPECT_LE(offset, at_kill.last_attempt)
        << "partition " << p << ": an offset that was never committed" << CommitterDiag();
    // One OffsetCommit is stored as one batch: all of it or none of it.
    EXPECT_EQ(offset, after_crash.begin()->second) << "partition " << p;
  }

  ASSERT_TRUE(committer->Thaw());
  // The same client reconnects to the restarted broker and goes on.
  EXPECT_TRUE(WaitFor(30, [&] { return Committer().acked >= at_kill.acked + 20; }))
      << CommitterDiag() << BrokerLog();
  RequestStop("committer");
  EXPECT_EQ(committer->Wait(30), 0) << CommitterDiag();
  const CommitterLog final_log = Committer();
  EXPECT_TRUE(final_log.closed) << CommitterDiag();
  EXPECT_GT(final_log.last_acked, at_kill.last_attempt) << CommitterDiag();
  for (const auto& [p, offset] : Committed(group, topic, param.partitions)) {
    EXPECT_GE(offset, final_log.last_acked) << "partition " << p << CommitterDiag();
    EXPECT_LE(offset, final_log.last_attempt) << "partition " << p << CommitterDiag();
  }
  EXPECT_EQ(daruma_->Stop(), 0) << BrokerLog();
}

INSTANTIATE_TEST_SUITE_P(
    KillPoints, ConsumerGroupCommitCrashCompatTest,
    ::testing::Values(CommitCrash{"After50AssignedOnePartition", 50, "assign", 1},
                      CommitCrash{"After300SubscribedThreePartitions", 300, "subscribe", 3},
                      CommitCrash{"After1000AssignedThreePartitions", 1000, "assign", 3}),
    [](const ::testing::TestParamInfo<CommitCrash>& info) { return info.param.name; });

// SIGKILL while a rebalance is under way; see the file comment. B stays
// frozen through the kill, so the coordinator was still waiting for its
// JoinGroup (A's and C's were parked) when it died.
TEST_F(ConsumerGroupCrashCompatTest, MembersRecoverFromASigkillDuringARebalance) {
  DARUMA_REQUIRE_CLIENTS("confluent");
  // B's session must outlast its freeze: were it expelled, the rebalance
  // would complete without it before the kill.
  constexpr int kSessionMs = 20000;
  constexpr int kPerPartition = 100;
  constexpr int kBefore = kPerPartition * kPartitions;
  constexpr int kAfter = 600;
  const std::string topic = "rebalance-crash";
  const std::string group = "g-rebalance-crash";
  ASSERT_TRUE(StartBroker());
  ASSERT_NO_FATAL_FAILURE(Produce("confluent", topic, 0, kBefore));
  std::unique_ptr<ChildProcess> a;
  std::unique_ptr<ChildProcess> b;
  ASSERT_NO_FATAL_FAILURE(RunTwoMembersToTheEnd(group, topic, kPerPartition, &a, &b, kSessionMs));
  ASSERT_EQ(Committed(group, topic), EveryPartitionAt(kPerPartition)) << BrokerLog();

  const int a_revocations = Member("a").revocations;
  ASSERT_TRUE(b->Freeze());
  auto c = StartMember("c", "confluent", group, topic, StopFile("c"), kSessionMs);
  // C's JoinGroup started a rebalance: A heard REBALANCE_IN_PROGRESS and
  // revoked its partitions; a moment later its own JoinGroup is parked.
  ASSERT_TRUE(WaitFor(30, [&] { return Member("a").revocations > a_revocations; }))
      << Diag("a") << Diag("c") << BrokerLog();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(daruma_->Kill());
  // The kill came before the rebalance could assign anything.
  ASSERT_TRUE(Member("c").assignments.empty()) << Diag("c");
  ASSERT_TRUE(Member("a").current.empty()) << Diag("a");

  ASSERT_TRUE(StartBroker());
  EXPECT_EQ(Committed(group, topic), EveryPartitionAt(kPerPartition))
      << "commits acknowledged before the kill" << BrokerLog();
  ASSERT_TRUE(b->Thaw());
  ASSERT_TRUE(WaitFor(45, [&] { return SplitAmong(Member("a"), Member("b"), Member("c")); }))
      << Diag("a") << Diag("b") << Diag("c") << BrokerLog();
  ASSERT_NO_FATAL_FAILURE(Produce("confluent", topic, kBefore, kAfter));
  auto all_consumed = [&] {
    return Member("a").records.size() + Member("b").records.size() + Member("c").records.size() >=
           size_t(kBefore + kAfter);
  };
  EXPECT_TRUE(WaitFor(45, all_consumed)) << Diag("a") << Diag("b") << Diag("c") << BrokerLog();
  for (const std::string name : {"a", "b", "c"}) RequestStop(name);
  EXPECT_EQ(a->Wait(30), 0) << Diag("a");
  EXPECT_EQ(b->Wait(30), 0) << Diag("b");
  EXPECT_EQ(c->Wait(30), 0) << Diag("c");
  const MemberLog la = Member("a");
  const MemberLog lb = Member("b");
  const MemberLog lc = Member("c");
  // Every value once: the new messages among the three, and none of those
  // consumed (and committed) before the kill again.
  EXPECT_EQ(SortedValues({&la, &lb, &lc}), Expected(kBefore + kAfter))
      << Diag("a") << Diag("b") << Diag("c");
  for (const MemberLog* log : {&la, &lb, &lc}) {
    for (const std::string& error : log->errors) {
      EXPECT_EQ(error.rfind("error commit", 0), std::string::npos) << error;
    }
  }
  EXPECT_EQ(Committed(group, topic), EveryPartitionAt((kBefore + kAfter) / kPartitions))
      << BrokerLog();
  EXPECT_EQ(daruma_->Stop(), 0) << BrokerLog();
}

}  // namespace
}  // namespace daruma::broker::testing
