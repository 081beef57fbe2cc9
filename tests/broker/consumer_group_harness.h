// The harness of the consumer-group compat tests (consumer_group_*_compat_test.cc):
// `daruma serve` as a child process (DarumaProcess) and real clients as child
// processes (ChildProcess, both of daruma_process.h) running the Python
// programs of consumer_group_scripts.h, with what each group member did read
// back from its event log (MemberLog).
//
// ConsumerGroupCompatTest is the fixture: a TempDir holding the broker's data
// and the scripts, and helpers to produce, run members, read the committed
// offsets and describe what the clients saw when an assertion fails.
//
// Broker settings (kBrokerProperties): group.initial.rebalance.delay.ms=0, so
// that the first join of a group completes at once (Kafka's default delays it
// 3 s); group.min.session.timeout.ms=6000, the session timeout the members
// use, and the rest of Kafka's group defaults (50 partitions of
// __consumer_offsets; session timeouts up to at least 30 s).
//
// Clients: confluent-kafka 1.7.0 (librdkafka 2.0.2), kafka-python 2.0.2 and
// kcat 1.7.1. kafka-python autodetects the broker's version
// (kKafkaPythonApiVersion "auto"); should that break, "2.5.0" pins it. Its
// group requests do not depend on the version it infers beyond 0.11:
// FindCoordinator v0, JoinGroup v2, SyncGroup v1, Heartbeat v1, LeaveGroup
// v1, OffsetCommit v2, OffsetFetch v1. librdkafka 2.0.2 sends FindCoordinator
// v2, JoinGroup v5 (so the first join is answered MEMBER_ID_REQUIRED),
// SyncGroup v3, Heartbeat v3, LeaveGroup v1, OffsetCommit v7 and OffsetFetch
// v7 with require_stable.
//
// Header-only, in daruma::broker::testing: every function and constant
// defined here is inline, so each test file may include it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "consumer_group_scripts.h"
#include "daruma_process.h"
#include "support/test_support.h"

namespace daruma::broker::testing {

using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;
using daruma::testing::WriteStringToFile;

inline constexpr char kPython[] = "/usr/bin/python3";
inline constexpr int kPartitions = 6;
// "auto": kafka-python probes ApiVersions and infers a broker version; a
// dotted version ("2.5.0") pins it instead.
inline constexpr char kKafkaPythonApiVersion[] = "auto";

inline constexpr char kBrokerProperties[] =
    "group.initial.rebalance.delay.ms=0\n"
    "group.min.session.timeout.ms=6000\n"
    "offsets.topic.num.partitions=50\n"
    "offsets.topic.replication.factor=1\n";

// Why a test needing `clients` ("confluent", "kafka-python", "kcat") cannot
// run here, "" when it can.
inline std::string Missing(std::initializer_list<std::string> clients) {
  if (::access(DarumaBinary().c_str(), X_OK) != 0) {
    return DarumaBinary() + " not built (ninja daruma in the same build dir)";
  }
  for (const std::string& client : clients) {
    if (client == "kcat") {
      if (FindOnPath("kcat").empty()) return "kcat not installed (apt-get install kcat)";
      continue;
    }
    const std::string module = client == "confluent" ? "confluent_kafka" : "kafka";
    if (::access(kPython, X_OK) != 0 ||
        Shell(std::string(kPython) + " -c 'import " + module + "' 2>/dev/null") != 0) {
      return std::string(kPython) + " has no " + module + " module (apt-get install python3-" +
             (client == "confluent" ? "confluent-kafka" : "kafka") + ")";
    }
  }
  return "";
}

#define DARUMA_REQUIRE_CLIENTS(...)                                             \
  do {                                                                          \
    if (const std::string missing = Missing({__VA_ARGS__}); !missing.empty()) { \
      GTEST_SKIP() << "SKIPPED: " << missing;                                   \
    }                                                                           \
  } while (0)

// Polls `done` every `poll_ms` milliseconds for up to `timeout_s` seconds:
// whether it came true.
inline bool WaitFor(int timeout_s, const std::function<bool()>& done, int poll_ms = 100) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
}

// `text` up to its last newline: the lines a writer that may still be
// writing (or was killed) has completed.
inline std::string CompleteLines(const std::string& text) {
  const size_t end = text.rfind('\n');
  return text.substr(0, end == std::string::npos ? 0 : end + 1);
}

struct Consumed {
  int partition = -1;
  int64_t offset = -1;
  std::string value;
};

// One member's consume.py output, complete lines only (it may still be
// writing).
struct MemberLog {
  std::vector<std::set<int>> assignments;  // each "assigned", in order
  int revocations = 0;                     // "revoked" lines naming partitions
  std::set<int> current;                   // the assignment after the last event
  std::vector<Consumed> records;           // consumed, in order
  std::map<int, int64_t> committed;        // the last acknowledged commit per partition
  std::vector<std::string> errors;
  bool closed = false;
};

inline MemberLog ParseMemberLog(const std::string& text) {
  MemberLog log;
  std::istringstream in(CompleteLines(text));
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "assigned" || kind == "revoked") {
      std::set<int> partitions;
      for (int p; words >> p;) partitions.insert(p);
      if (kind == "assigned") {
        log.assignments.push_back(partitions);
        log.current = partitions;
      } else {
        if (!partitions.empty()) ++log.revocations;
        for (int p : partitions) log.current.erase(p);
      }
    } else if (kind == "value") {
      Consumed r;
      words >> r.partition >> r.offset >> r.value;
      log.records.push_back(r);
    } else if (kind == "committed") {
      int p = -1;
      int64_t offset = -1;
      words >> p >> offset;
      log.committed[p] = offset;
    } else if (kind == "error") {
      log.errors.push_back(line);
    } else if (kind == "closed") {
      log.closed = true;
    }
  }
  return log;
}

inline std::set<int> AllPartitions() {
  std::set<int> all;
  for (int p = 0; p < kPartitions; ++p) all.insert(p);
  return all;
}

inline std::set<int> Union(const std::set<int>& a, const std::set<int>& b) {
  std::set<int> out = a;
  out.insert(b.begin(), b.end());
  return out;
}

// Whether the two members' current assignments split the topic: each has a
// share, no partition is in both, and together they have every one.
inline bool SplitBetween(const MemberLog& a, const MemberLog& b) {
  if (a.current.empty() || b.current.empty()) return false;
  if (a.current.size() + b.current.size() != size_t(kPartitions)) return false;
  return Union(a.current, b.current) == AllPartitions();
}

inline std::set<int> PartitionsOf(const std::vector<Consumed>& records) {
  std::set<int> out;
  for (const Consumed& r : records) out.insert(r.partition);
  return out;
}

// The offset of each partition's first record.
inline std::map<int, int64_t> FirstOffsets(const std::vector<Consumed>& records) {
  std::map<int, int64_t> out;
  for (const Consumed& r : records) out.emplace(r.partition, r.offset);
  return out;
}

// The offset after each partition's last record: what a commit of them stores.
inline std::map<int, int64_t> NextOffsets(const std::vector<Consumed>& records) {
  std::map<int, int64_t> out;
  for (const Consumed& r : records) out[r.partition] = std::max(out[r.partition], r.offset + 1);
  return out;
}

inline std::map<int, int64_t> EveryPartitionAt(int64_t offset) {
  std::map<int, int64_t> out;
  for (int p = 0; p < kPartitions; ++p) out[p] = offset;
  return out;
}

// Each partition's highest commit of either member.
inline std::map<int, int64_t> MergedCommits(const MemberLog& a, const MemberLog& b) {
  std::map<int, int64_t> out = a.committed;
  for (const auto& [p, offset] : b.committed) out[p] = std::max(out.count(p) ? out[p] : -1, offset);
  return out;
}

// The values of `logs`' records, sorted.
inline std::vector<std::string> SortedValues(std::initializer_list<const MemberLog*> logs) {
  std::vector<std::string> values;
  for (const MemberLog* log : logs) {
    for (const Consumed& r : log->records) values.push_back(r.value);
  }
  std::sort(values.begin(), values.end());
  return values;
}

// m<first>..m<first+count-1>, as produce.py writes them.
inline std::vector<std::string> Expected(int count, int first = 0) {
  std::vector<std::string> values;
  for (int i = first; i < first + count; ++i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "m%06d", i);
    values.push_back(buf);
  }
  return values;
}

inline std::string Tail(const std::string& text, size_t bytes) {
  return text.size() <= bytes ? text : "..." + text.substr(text.size() - bytes);
}

inline std::string Describe(const std::set<int>& partitions) {
  std::string out = "{";
  for (int p : partitions) out += (out.size() > 1 ? "," : "") + std::to_string(p);
  return out + "}";
}

class ConsumerGroupCompatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daruma_ = std::make_unique<DarumaProcess>(dir_.path(), kBrokerProperties);
    WriteStringToFile(dir_.Join("produce.py"), kProduceScript);
    WriteStringToFile(dir_.Join("consume.py"), kConsumeScript);
    WriteStringToFile(dir_.Join("committed.py"), kCommittedScript);
    WriteStringToFile(dir_.Join("admin_view.py"), kAdminViewScript);
  }

  ::testing::AssertionResult StartBroker() {
    if (!daruma_->Start()) return ::testing::AssertionFailure() << "cannot spawn daruma";
    if (!daruma_->WaitServing()) {
      return ::testing::AssertionFailure() << "not serving" << BrokerLog();
    }
    return ::testing::AssertionSuccess();
  }

  std::string BrokerLog() const {
    return "\n--- daruma.log (tail) ---\n" + Tail(daruma_->Log(), 8000);
  }

  std::string Script(const std::string& name) const {
    return std::string(kPython) + " " + dir_.Join(name);
  }

  // A script's exit code, stdout (its verdict or data) and stderr (kept
  // apart: the clients log there on their own, e.g. librdkafka's "Purging 1
  // unserved events" at close, which must not become part of the verdict).
  struct ScriptRun {
    int rc = -1;
    std::string out;
    std::string err;
  };
  ScriptRun RunScript(const std::string& name, const std::string& command) {
    const std::string out = dir_.Join(name + ".out");
    const std::string err = dir_.Join(name + ".err");
    ScriptRun run;
    run.rc = Shell(command + " >" + out + " 2>" + err);
    run.out = ReadFileToString(out);
    run.err = ReadFileToString(err);
    return run;
  }

  // produce.py through `client` ("confluent" or "kafka-python"); COUNT 0
  // only creates the topic (with `partitions` partitions).
  void Produce(const std::string& client, const std::string& topic, int first, int count,
               int partitions = kPartitions) {
    ScriptRun run = RunScript("produce", "timeout 90 " + Script("produce.py") + " " + client + " " +
                                             daruma_->bootstrap() + " " + topic + " " +
                                             std::to_string(partitions) + " " +
                                             std::to_string(first) + " " + std::to_string(count));
    ASSERT_EQ(run.rc, 0) << run.out << run.err << BrokerLog();
    ASSERT_EQ(run.out, "ok\n") << run.err;
  }

  // consume.py as member `name` (its events in <name>.log, its stderr in
  // <name>.err); `until` is a message count or StopFile(name).
  std::unique_ptr<ChildProcess> StartMember(const std::string& name, const std::string& client,
                                            const std::string& group, const std::string& topic,
                                            const std::string& until, int session_ms = 6000) {
    auto member = std::make_unique<ChildProcess>(
        std::vector<std::string>{kPython, dir_.Join("consume.py"), client, daruma_->bootstrap(),
                                 group, topic, dir_.Join(name + ".log"), until,
                                 std::to_string(session_ms), kKafkaPythonApiVersion},
        dir_.Join(name + ".err"));
    EXPECT_TRUE(member->started()) << name;
    return member;
  }
  std::string StopFile(const std::string& name) const { return dir_.Join(name + ".stop"); }
  void RequestStop(const std::string& name) { WriteStringToFile(StopFile(name), "stop\n"); }

  MemberLog Member(const std::string& name) const {
    return ParseMemberLog(ReadFileToString(dir_.Join(name + ".log")));
  }

  // A member's output for a failure message: its events (all but the value
  // and committed lines, which are summed up) and the tail of its stderr.
  std::string Diag(const std::string& name) const {
    std::string events;
    std::istringstream in(ReadFileToString(dir_.Join(name + ".log")));
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("value ", 0) != 0 && line.rfind("committed ", 0) != 0) events += line + "\n";
    }
    const MemberLog log = Member(name);
    std::string commits;
    for (const auto& [p, offset] : log.committed) {
      commits += " " + std::to_string(p) + ":" + std::to_string(offset);
    }
    return "\n--- " + name + ".log: " + std::to_string(log.records.size()) +
           " values, last commits" + commits + "; events:\n" + Tail(events, 3000) + "--- " + name +
           ".err (tail) ---\n" + Tail(ReadFileToString(dir_.Join(name + ".err")), 3000);
  }

  // committed.py: partition -> committed offset (-1001: none) of each of
  // the first `partitions` partitions of `topic`.
  std::map<int, int64_t> Committed(const std::string& group, const std::string& topic,
                                   int partitions = kPartitions) {
    ScriptRun run =
        RunScript("committed", "timeout 60 " + Script("committed.py") + " " + daruma_->bootstrap() +
                                   " " + group + " " + topic + " " + std::to_string(partitions));
    std::map<int, int64_t> offsets;
    EXPECT_EQ(run.rc, 0) << run.out << run.err << BrokerLog();
    std::istringstream in(run.out);
    int p = -1;
    for (int64_t offset = 0; in >> p >> offset;) offsets[p] = offset;
    return offsets;
  }

  // admin_view.py STAGE for `group` (PER_PARTITION committed in each
  // partition of `topic`).
  void AdminView(const std::string& stage, const std::string& group, const std::string& topic,
                 int per_partition) {
    ScriptRun run = RunScript(
        "admin-" + stage, "timeout 90 " + Script("admin_view.py") + " " + stage + " " +
                              daruma_->bootstrap() + " " + group + " " + topic + " " +
                              std::to_string(kPartitions) + " " + std::to_string(per_partition));
    EXPECT_TRUE(run.rc == 0 && run.out == "ok\n")
        << "admin_view.py " << stage << " exited " << run.rc << ":\n"
        << run.out << run.err << BrokerLog();
  }

  // Members "a" and "b" of `group` (confluent-kafka, stopped by their stop
  // files, with session timeout `session_ms`) on `topic`, which holds
  // `per_partition` messages in each partition: returns once they split the
  // topic and have consumed and committed all of it.
  void RunTwoMembersToTheEnd(const std::string& group, const std::string& topic, int per_partition,
                             std::unique_ptr<ChildProcess>* a, std::unique_ptr<ChildProcess>* b,
                             int session_ms = 6000) {
    *a = StartMember("a", "confluent", group, topic, StopFile("a"), session_ms);
    *b = StartMember("b", "confluent", group, topic, StopFile("b"), session_ms);
    auto split_and_all_committed = [&] {
      const MemberLog la = Member("a");
      const MemberLog lb = Member("b");
      return SplitBetween(la, lb) && MergedCommits(la, lb) == EveryPartitionAt(per_partition);
    };
    ASSERT_TRUE(WaitFor(60, split_and_all_committed)) << Diag("a") << Diag("b") << BrokerLog();
  }

  // The first two tests of consumer_group_compat_test.cc: two members of one
  // group through `client`, started before the messages exist; once their
  // assignments split the topic, 3,000 messages are produced and the two
  // consume them exactly once between them, each only from its own share,
  // committing after every batch.
  void TwoMembersConsumeEveryMessageOnce(const std::string& client) {
    constexpr int kMessages = 3000;
    const std::string topic = "split-" + client;
    const std::string group = "g-" + client;
    ASSERT_TRUE(StartBroker());
    ASSERT_NO_FATAL_FAILURE(Produce(client, topic, 0, 0));
    auto a = StartMember("a", client, group, topic, StopFile("a"));
    auto b = StartMember("b", client, group, topic, StopFile("b"));
    ASSERT_TRUE(WaitFor(60, [&] { return SplitBetween(Member("a"), Member("b")); }))
        << Diag("a") << Diag("b") << BrokerLog();
    const std::set<int> a_share = Member("a").current;
    const std::set<int> b_share = Member("b").current;
    ASSERT_NO_FATAL_FAILURE(Produce(client, topic, 0, kMessages));
    auto all_consumed = [&] {
      return Member("a").records.size() + Member("b").records.size() >= size_t(kMessages);
    };
    EXPECT_TRUE(WaitFor(60, all_consumed)) << Diag("a") << Diag("b") << BrokerLog();
    RequestStop("a");
    RequestStop("b");
    EXPECT_EQ(a->Wait(30), 0) << Diag("a");
    EXPECT_EQ(b->Wait(30), 0) << Diag("b");
    const MemberLog la = Member("a");
    const MemberLog lb = Member("b");
    EXPECT_TRUE(la.errors.empty()) << Diag("a");
    EXPECT_TRUE(lb.errors.empty()) << Diag("b");
    EXPECT_TRUE(la.closed && lb.closed) << Diag("a") << Diag("b");
    // Each read only its own share, so no partition was read by both.
    const std::set<int> a_read = PartitionsOf(la.records);
    const std::set<int> b_read = PartitionsOf(lb.records);
    EXPECT_TRUE(std::includes(a_share.begin(), a_share.end(), a_read.begin(), a_read.end()))
        << "a owned " << Describe(a_share) << " but read " << Describe(a_read);
    EXPECT_TRUE(std::includes(b_share.begin(), b_share.end(), b_read.begin(), b_read.end()))
        << "b owned " << Describe(b_share) << " but read " << Describe(b_read);
    // Every value once: none lost, none read twice (by one member or both).
    EXPECT_EQ(SortedValues({&la, &lb}), Expected(kMessages));
    // And the group's commits reached the end of every partition.
    EXPECT_EQ(MergedCommits(la, lb), EveryPartitionAt(kMessages / kPartitions));
    EXPECT_EQ(daruma_->Stop(), 0) << BrokerLog();
  }

  TempDir dir_;
  std::unique_ptr<DarumaProcess> daruma_;
};

}  // namespace daruma::broker::testing
