// The deterministic consumer-group workload of the group crash matrix
// (group_crash_matrix_crash_test.cc). Header-only like group_crash_model.h.
//
// A LogManager in one log dir hosts `__consumer_offsets` (3 partitions,
// compacted, 2 KiB segments, fsync per append as with
// log.flush.interval.messages=1); a GroupCoordinator on a ManualClock writes
// to it through a RecordingGroupStorage (group_crash_model.h), and simulated
// clients drive it. Four groups, spread over the three partitions:
//   orders-app   a consumer group: two members, a third joins (rebalance),
//                one leaves in phase B (rebalance); commits of 2-3 partitions
//                each round, some with metadata; a commit with a stale
//                generation and one from an unknown member (refused, nothing
//                stored);
//   reports      two members; one stops heartbeating and is expired after
//                its session timeout (rebalance), then the other (the group
//                becomes Empty and that generation is stored); then
//                DeleteGroups in phase B;
//   billing      simple commits (generation -1, no members) of 4 partitions
//                with metadata; OffsetDelete of two, one committed again;
//   audit-trail  one member, commits, leaves (Empty), DeleteGroups, then
//                simple commits bring the group back with offsets only.
// Phase A: a fresh manager (no background jobs), the groups above, then the
// coordinator's Shutdown and a clean LogManager::Shutdown. Phase B: Startup
// (clean), a new coordinator Load, the members go on with their generations,
// more rebalances and commits, and one compaction step: the clock passes the
// cleaner backoff and every due job runs (the log cleaner compacts the
// offsets partitions, checkpoints, the roll flushes). Then the manager is
// dropped without Shutdown.
//
// After a fault every later call is still made (each fails fast on a dead
// file system, or goes on after a single failed operation, as the broker
// does), except phase B, which needs a successful Startup.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/group_crash_model.h"
#include "log/log_file_names.h"

namespace daruma::testing {

inline constexpr char kOrders[] = "orders-app";  // partition 1
inline constexpr char kReports[] = "reports";    // partition 0
inline constexpr char kBilling[] = "billing";    // partition 1
inline constexpr char kAudit[] = "audit-trail";  // partition 2
inline constexpr int32_t kMemberSessionMs = 10000;
inline constexpr int32_t kMemberRebalanceMs = 15000;
inline constexpr int64_t kGroupCleanerBackoffMs = 1000;

// Op ranges [first, end) of the compaction step, as the fault file system
// counts them (filled when the workload has an op counter).
struct GroupWorkloadSteps {
  std::vector<std::pair<uint64_t, uint64_t>> compaction;
};

class GroupCrashWorkload {
 public:
  // `op_counter` (optional) reads the fault file system's op count.
  GroupCrashWorkload(FileSystem* fs, std::string log_dir, GroupTime* time, GroupHistory* history,
                     std::function<uint64_t()> op_counter = {})
      : fs_(fs),
        log_dir_(std::move(log_dir)),
        time_(time),
        history_(history),
        op_counter_(std::move(op_counter)) {}

  // OK when the whole workload ran (a fault shows in the history and acks).
  Status Run() {
    DARUMA_RETURN_IF_ERROR(StartPhase(0));
    PhaseA();
    coordinator_->Shutdown();
    const Status shutdown = manager_->Shutdown();
    StopPhase();
    DARUMA_RETURN_IF_ERROR(StartPhase(1));
    PhaseB();
    StopPhase();  // without Shutdown: the image a crash would leave
    return shutdown;
  }

  const GroupWorkloadSteps& steps() const { return steps_; }

 private:
  struct Member {
    std::string group;
    std::string id;  // "" until the coordinator hands one out
    int32_t generation = -1;
    std::vector<std::string> topics;
  };

  // ---- phases ----

  void PhaseA() {
    Member o1 = NewMember(kOrders, {"clicks"}), o2 = NewMember(kOrders, {"clicks"});
    Member r1 = NewMember(kReports, {"daily"}), r2 = NewMember(kReports, {"daily"});
    Member a1 = NewMember(kAudit, {"audit"});
    Rebalance({&o1, &o2});
    Rebalance({&r1, &r2});
    Rebalance({&a1});
    for (int round = 0; round < 6; ++round) {
      Commit(&o1, {{"clicks", 0}, {"clicks", 1}, {"clicks", 2}}, round % 2 == 0);
      Commit(&o2, {{"clicks", 3}, {"clicks", 4}, {"clicks", 5}}, round % 3 == 0);
      Commit(&r1, {{"daily", 0}, {"daily", 1}}, false);
      Commit(&r2, {{"daily", 2}}, true);
      SimpleCommit(kBilling, {{"invoices", 0}, {"invoices", 1}, {"invoices", 2}, {"invoices", 3}});
      Commit(&a1, {{"audit", 0}}, round == 1);
      Heartbeats({&o1, &o2, &r1, &r2, &a1});
      Advance(1000);
    }
    // A third member joins; the others rejoin (a client does on the
    // REBALANCE_IN_PROGRESS its next heartbeat gets).
    Member o3 = NewMember(kOrders, {"clicks"});
    Rebalance({&o1, &o2, &o3});
    for (int round = 0; round < 3; ++round) {
      Commit(&o1, {{"clicks", 0}, {"clicks", 1}}, round == 0);
      Commit(&o2, {{"clicks", 2}, {"clicks", 3}}, false);
      Commit(&o3, {{"clicks", 4}, {"clicks", 5}}, true);
      Heartbeats({&o1, &o2, &o3, &r1, &r2, &a1});
      Advance(1000);
    }
    // Refused before anything is stored.
    Member stale = o1;
    stale.generation = o1.generation - 1;
    Commit(&stale, {{"clicks", 0}}, false);
    Member ghost = o1;
    ghost.id = "ghost-member";
    Commit(&ghost, {{"clicks", 1}}, false);

    DeleteOffsets(kBilling, {{"invoices", 1}, {"invoices", 2}});
    SimpleCommit(kBilling, {{"invoices", 2}});

    Leave(&a1);  // the group becomes Empty; that generation is stored
    Advance(1000);
    DeleteGroup(kAudit);
    SimpleCommit(kAudit, {{"audit", 1}});  // back with offsets only

    // r2 goes silent and is expired; r1 rejoins alone.
    for (int i = 0; i < 3; ++i) {
      Heartbeats({&o1, &o2, &o3, &r1});
      Advance(4000);
    }
    Heartbeats({&o1, &o2, &o3});
    Rebalance({&r1});
    Commit(&r1, {{"daily", 0}, {"daily", 1}, {"daily", 2}}, true);
    o1_ = o1, o2_ = o2, o3_ = o3, r1_ = r1;
  }

  void PhaseB() {
    Member o1 = o1_, o2 = o2_, o3 = o3_, r1 = r1_;
    // The loaded group is Stable with the stored generation: members go on.
    Heartbeats({&o1, &o2, &o3, &r1});
    Commit(&o1, {{"clicks", 0}, {"clicks", 1}}, false);
    Leave(&o2);
    Rebalance({&o1, &o3});
    for (int round = 0; round < 3; ++round) {
      Commit(&o1, {{"clicks", 0}, {"clicks", 1}, {"clicks", 2}}, round == 2);
      Commit(&o3, {{"clicks", 3}, {"clicks", 4}, {"clicks", 5}}, false);
      SimpleCommit(kBilling, {{"invoices", 0}, {"invoices", 2}, {"invoices", 3}});
      Heartbeats({&o1, &o3, &r1});
      Advance(1000);
    }
    const uint64_t first = Ops() + 1;
    Advance(kGroupCleanerBackoffMs);
    manager_->RunDueJobsForTest();
    steps_.compaction.emplace_back(first, Ops() + 1);
    // r1 stops too: its expiry empties the group, which is then deleted.
    for (int i = 0; i < 3; ++i) {
      Heartbeats({&o1, &o3});
      Advance(4000);
    }
    Heartbeats({&o1, &o3});
    Advance(1000);
    DeleteGroup(kReports);
    for (int round = 0; round < 2; ++round) {
      Commit(&o1, {{"clicks", 0}, {"clicks", 1}, {"clicks", 2}}, round == 1);
      Commit(&o3, {{"clicks", 3}, {"clicks", 4}, {"clicks", 5}}, true);
      Heartbeats({&o1, &o3});
      Advance(1000);
    }
    DeleteOffsets(kBilling, {{"invoices", 0}});
  }

  // ---- setup ----

  Status StartPhase(int phase) {
    LogManagerOptions options;
    options.fs = fs_;
    options.clock = &time_->clock;
    options.broker_epoch = 3 + phase;
    options.jobs.mode = Scheduler::Mode::kManual;
    if (phase == 1) {
      options.jobs.enabled = true;
      options.jobs.initial_delay_ms = kGroupCleanerBackoffMs;
      options.jobs.cleaner_enabled = true;
      options.jobs.cleaner.backoff_ms = kGroupCleanerBackoffMs;
      options.jobs.cleaner.dedupe_buffer_size = 24 * 4096;
      options.jobs.cleaner.io_buffer_size = 8192;
    }
    manager_ = std::make_unique<LogManager>(options);
    DARUMA_RETURN_IF_ERROR(manager_->Startup({log_dir_}, GroupBrokerDefaults(), 1));
    if (manager_->HasFailures()) return Status::IoError("workload: start-up left the dir offline");
    log_storage_ =
        std::make_unique<LogGroupStorage>(CrashOffsetsLogFor(manager_.get()), &time_->clock);
    recording_ = std::make_unique<RecordingGroupStorage>(log_storage_.get(), history_);
    coordinator_ = std::make_unique<GroupCoordinator>(GroupCrashCoordinatorConfig(),
                                                      recording_.get(), &time_->scheduler);
    Result<GroupLoadReport> loaded = coordinator_->Load();
    return loaded.status();
  }

  void StopPhase() {
    coordinator_.reset();
    recording_.reset();
    log_storage_.reset();
    manager_.reset();
  }

  uint64_t Ops() const { return op_counter_ ? op_counter_() : 0; }

  void Advance(int64_t ms) { time_->Advance(ms); }

  // ---- clients ----

  static Member NewMember(const std::string& group, std::vector<std::string> topics) {
    return Member{group, "", -1, std::move(topics)};
  }

  // ConsumerProtocolSubscription v0 (so OffsetDelete sees the topics).
  static Bytes Subscription(const std::vector<std::string>& topics) {
    Bytes b = {0, 0, 0, 0, 0, uint8_t(topics.size())};
    for (const std::string& t : topics) {
      b.push_back(0);
      b.push_back(uint8_t(t.size()));
      b.insert(b.end(), t.begin(), t.end());
    }
    for (int i = 0; i < 4; ++i) b.push_back(0xff);  // null user data
    return b;
  }

  JoinGroupArgs JoinArgs(const Member& m) const {
    JoinGroupArgs a;
    a.group_id = m.group;
    a.member_id = m.id;
    a.protocol_type = "consumer";
    a.protocols = {{"range", Subscription(m.topics)}, {"roundrobin", Subscription(m.topics)}};
    a.session_timeout_ms = kMemberSessionMs;
    a.rebalance_timeout_ms = kMemberRebalanceMs;
    a.client_id = "client-" + m.group;
    a.client_host = "/10.0.0.1";
    a.require_known_member_id = true;
    return a;
  }

  // Every member (re)joins, the join phase completes (the clock moves until
  // it does), the leader's assignment is synced. A member that fails along
  // the way stays out of this generation, as a client would until it retried.
  void Rebalance(std::vector<Member*> members) {
    // New members first: their join starts the rebalance that the known
    // members' joins then wait in (a known follower joining a Stable group
    // would be answered at once with the current generation).
    std::stable_partition(members.begin(), members.end(),
                          [](const Member* m) { return m->id.empty(); });
    std::vector<std::shared_ptr<std::optional<JoinGroupResult>>> joins;
    for (Member* m : members) {
      if (m->id.empty()) {
        auto first = std::make_shared<std::optional<JoinGroupResult>>();
        coordinator_->JoinGroup(JoinArgs(*m), [first](JoinGroupResult r) { *first = r; });
        if (first->has_value() && (*first)->error == ErrorCode::kMemberIdRequired) {
          m->id = (*first)->member_id;
        }
      }
      auto slot = std::make_shared<std::optional<JoinGroupResult>>();
      coordinator_->JoinGroup(JoinArgs(*m), [slot](JoinGroupResult r) { *slot = std::move(r); });
      joins.push_back(slot);
    }
    for (int i = 0; i < 40; ++i) {
      bool all = true;
      for (const auto& j : joins) all = all && j->has_value();
      if (all) break;
      Advance(500);
    }
    Member* leader = nullptr;
    std::vector<std::pair<std::string, Bytes>> assignment;
    for (size_t i = 0; i < members.size(); ++i) {
      Member* m = members[i];
      const auto& j = *joins[i];
      if (!j.has_value() || j->error != ErrorCode::kNone) {
        if (j.has_value() && j->error == ErrorCode::kUnknownMemberId) m->id.clear();
        m->generation = -1;
        continue;
      }
      m->generation = j->generation_id;
      if (j->leader_id == m->id) {
        leader = m;
        for (const auto& member : j->members) {
          const std::string text =
              "assigned:" + member.member_id + ":" + std::to_string(j->generation_id);
          assignment.emplace_back(member.member_id, Bytes(text.begin(), text.end()));
        }
      }
    }
    for (Member* m : members) {
      if (m != leader && m->generation >= 0) Sync(*m, {});
    }
    if (leader != nullptr) {
      const size_t before = history_->OpsOf(leader->group);
      if (Sync(*leader, std::move(assignment)) == ErrorCode::kNone) {
        history_->AckGroup(leader->group, before, /*tombstone=*/false);
      }
    }
  }

  ErrorCode Sync(const Member& m, std::vector<std::pair<std::string, Bytes>> assignment) {
    SyncGroupArgs a;
    a.group_id = m.group;
    a.member_id = m.id;
    a.generation_id = m.generation;
    a.assignments = std::move(assignment);
    auto slot = std::make_shared<std::optional<SyncGroupResult>>();
    coordinator_->SyncGroup(std::move(a), [slot](SyncGroupResult r) { *slot = std::move(r); });
    return slot->has_value() ? (*slot)->error : ErrorCode::kRequestTimedOut;  // still parked
  }

  void Heartbeats(const std::vector<Member*>& members) {
    for (Member* m : members) {
      if (m->id.empty()) continue;
      (void)coordinator_->Heartbeat(m->group, m->id, std::nullopt, m->generation);
    }
  }

  void Leave(Member* m) {
    (void)coordinator_->LeaveGroup(m->group, {{m->id, std::nullopt}});
    m->id.clear();
  }

  // Commits a new offset to each partition: as `m` of its generation, or as
  // a simple (generation -1) client when m is null.
  void CommitAs(const std::string& group, const Member* m,
                const std::vector<std::pair<std::string, int32_t>>& partitions,
                bool with_metadata) {
    OffsetCommitArgs args;
    args.group_id = group;
    if (m != nullptr) {
      args.member_id = m->id;
      args.generation_id = m->generation;
    }
    std::vector<std::pair<OffsetKey, StoredOffset>> sent;
    std::vector<size_t> before;
    for (const auto& [topic, partition] : partitions) {
      const int64_t offset = 100 + next_offset_++;
      StoredOffset value{offset, int32_t(next_offset_ % 4), ""};
      if (with_metadata) value.metadata = "checkpoint-" + std::to_string(offset);
      args.partitions.push_back({topic, partition, value.offset, value.leader_epoch,
                                 with_metadata ? std::optional(value.metadata) : std::nullopt, -1});
      const OffsetKey key{group, topic, partition};
      history_->sent[key].push_back(value);
      before.push_back(history_->OpsOf(key));
      sent.emplace_back(key, value);
    }
    const std::vector<ErrorCode> errors = coordinator_->CommitOffsets(args);
    for (size_t i = 0; i < sent.size() && i < errors.size(); ++i) {
      if (errors[i] == ErrorCode::kNone)
        history_->AckOffset(sent[i].first, before[i], sent[i].second);
    }
  }
  void Commit(const Member* m, const std::vector<std::pair<std::string, int32_t>>& partitions,
              bool with_metadata) {
    if (m->id.empty()) return;  // not in the group (a failed join)
    CommitAs(m->group, m, partitions, with_metadata);
  }
  void SimpleCommit(const std::string& group,
                    const std::vector<std::pair<std::string, int32_t>>& partitions) {
    CommitAs(group, nullptr, partitions, true);
  }

  void DeleteOffsets(const std::string& group,
                     const std::vector<std::pair<std::string, int32_t>>& partitions) {
    std::vector<size_t> before;
    for (const auto& [topic, partition] : partitions) {
      before.push_back(history_->OpsOf(OffsetKey{group, topic, partition}));
    }
    auto [error, errors] = coordinator_->DeleteOffsets(group, partitions);
    if (error != ErrorCode::kNone) return;
    for (size_t i = 0; i < partitions.size() && i < errors.size(); ++i) {
      if (errors[i] != ErrorCode::kNone) continue;
      history_->AckOffset({group, partitions[i].first, partitions[i].second}, before[i],
                          std::nullopt);
    }
  }

  void DeleteGroup(const std::string& group) {
    std::map<OffsetKey, size_t> before;
    for (const auto& [key, h] : history_->offsets) {
      if (std::get<0>(key) == group) before[key] = h.ops.size();
    }
    const size_t group_before = history_->OpsOf(group);
    if (coordinator_->DeleteGroup(group) != ErrorCode::kNone) return;
    for (const auto& [key, n] : before) {
      if (history_->OpsOf(key) > n) history_->AckOffset(key, n, std::nullopt);
    }
    history_->AckGroup(group, group_before, /*tombstone=*/true);
  }

  FileSystem* fs_;
  std::string log_dir_;
  GroupTime* time_;
  GroupHistory* history_;
  std::function<uint64_t()> op_counter_;
  GroupWorkloadSteps steps_;
  std::unique_ptr<LogManager> manager_;
  std::unique_ptr<LogGroupStorage> log_storage_;
  std::unique_ptr<RecordingGroupStorage> recording_;
  std::unique_ptr<GroupCoordinator> coordinator_;
  Member o1_, o2_, o3_, r1_;  // carried from phase A to phase B
  int64_t next_offset_ = 0;
};

}  // namespace daruma::testing
