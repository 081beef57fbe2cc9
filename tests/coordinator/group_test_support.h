// Shared by the coordinator tests that run a GroupCoordinator over real
// `__consumer_offsets` logs: the coordinator's time (a ManualClock and a
// kManual Scheduler whose due jobs are its deadlines), the logs' creation as
// the broker does it, and OffsetsLogHarness (a LogManager in a TempDir with a
// coordinator on it, restartable).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/scheduler.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/group_storage.h"
#include "log/topic_config_overrides.h"
#include "log/uuid.h"
#include "recovery/log_manager.h"
#include "support/test_support.h"

namespace daruma::testing {

inline constexpr char kOffsetsTopic[] = "__consumer_offsets";

// Time for a coordinator: nothing expires until Advance.
struct GroupTime {
  explicit GroupTime(int64_t now_ms) : clock(now_ms) {}
  // Moves the clock and runs every deadline that is due by then (including
  // ones an expiry scheduled for the same moment).
  void Advance(int64_t ms) {
    clock.Advance(ms);
    for (int i = 0; i < 100 && scheduler.RunDueJobs() > 0; ++i) {
    }
  }
  ManualClock clock;
  Scheduler scheduler{&clock, 1, Scheduler::Mode::kManual};
};

// The overrides the broker gives `__consumer_offsets`
// (RequestHandler::StartGroupCoordinator), with `segment_bytes` for
// offsets.topic.segment.bytes.
inline TopicConfigOverrides OffsetsTopicOverrides(int32_t segment_bytes) {
  return {{"cleanup.policy", "compact"},
          {"compression.type", "producer"},
          {"segment.bytes", std::to_string(segment_bytes)}};
}

// LogGroupStorage's view of the logs as the broker's TopicRegistry gives it:
// `create` creates every partition of the topic (on `defaults`, the broker's
// log config, plus `overrides`) and persists the overrides; otherwise a
// partition that does not exist is nullptr.
inline LogGroupStorage::LogFor OffsetsLogFor(LogManager* manager, int32_t partitions,
                                             LogConfig defaults, TopicConfigOverrides overrides) {
  return [=](int32_t partition, bool create) -> Result<Log*> {
    const TopicPartition tp{kOffsetsTopic, partition};
    if (create && manager->GetLog(tp) == nullptr) {
      DARUMA_ASSIGN_OR_RETURN(LogConfig config, ApplyTopicConfigOverrides(defaults, overrides));
      const Uuid id(std::array<uint8_t, 16>{0x0f, 0xf5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
      for (int32_t p = 0; p < partitions; ++p) {
        DARUMA_ASSIGN_OR_RETURN(Log * log, manager->GetOrCreateLog({kOffsetsTopic, p}, id, config));
        log->UpdateHighWatermark(log->log_end_offset());
      }
      manager->SetTopicConfig(kOffsetsTopic, config, overrides);
    }
    return manager->GetLog(tp);
  };
}

// A client's calls, answered into slots (empty while parked).
using JoinSlot = std::shared_ptr<std::optional<JoinGroupResult>>;
using SyncSlot = std::shared_ptr<std::optional<SyncGroupResult>>;

// A "consumer" JoinGroup of `group` with one protocol ("range", `metadata`).
inline JoinSlot JoinAs(GroupCoordinator& coordinator, const std::string& group,
                       const std::string& member_id, Bytes metadata = Bytes(16, 'm')) {
  JoinGroupArgs a;
  a.group_id = group;
  a.member_id = member_id;
  a.protocol_type = "consumer";
  a.protocols = {{"range", std::move(metadata)}};
  a.session_timeout_ms = 10000;
  a.rebalance_timeout_ms = 10000;
  a.client_id = "client";
  a.client_host = "/127.0.0.1";
  auto slot = std::make_shared<std::optional<JoinGroupResult>>();
  coordinator.JoinGroup(std::move(a), [slot](JoinGroupResult r) { *slot = std::move(r); });
  return slot;
}

inline SyncSlot SyncAs(GroupCoordinator& coordinator, const std::string& group,
                       const std::string& member_id, int32_t generation,
                       std::vector<std::pair<std::string, Bytes>> assignments = {}) {
  SyncGroupArgs a;
  a.group_id = group;
  a.member_id = member_id;
  a.generation_id = generation;
  a.assignments = std::move(assignments);
  auto slot = std::make_shared<std::optional<SyncGroupResult>>();
  coordinator.SyncGroup(std::move(a), [slot](SyncGroupResult r) { *slot = std::move(r); });
  return slot;
}

// Lets the join phase of `joins` end (advancing `time`), then syncs every
// joined member, the leader last with an assignment for everyone. Returns
// the syncs' answers by member id (nothing if a join was not answered).
inline std::map<std::string, std::optional<SyncGroupResult>> CompleteRebalance(
    GroupCoordinator& coordinator, GroupTime& time, const std::string& group,
    const std::vector<JoinSlot>& joins) {
  for (int i = 0; i < 200; ++i) {
    bool all = true;
    for (const JoinSlot& j : joins) all = all && j->has_value();
    if (all) break;
    time.Advance(100);
  }
  std::string leader;
  int32_t generation = -1;
  std::vector<std::pair<std::string, Bytes>> assignments;
  for (const JoinSlot& j : joins) {
    EXPECT_TRUE(j->has_value()) << "a join was not answered";
    if (!j->has_value()) return {};
    EXPECT_EQ((*j)->error, ErrorCode::kNone);
    generation = (*j)->generation_id;
    if ((*j)->leader_id == (*j)->member_id) {
      leader = (*j)->member_id;
      for (const auto& m : (*j)->members) {
        assignments.emplace_back(m.member_id, Bytes{'a', uint8_t(assignments.size())});
      }
    }
  }
  std::map<std::string, SyncSlot> syncs;
  for (const JoinSlot& j : joins) {
    if ((*j)->member_id != leader) {
      syncs[(*j)->member_id] = SyncAs(coordinator, group, (*j)->member_id, generation);
    }
  }
  syncs[leader] = SyncAs(coordinator, group, leader, generation, std::move(assignments));
  std::map<std::string, std::optional<SyncGroupResult>> out;
  for (const auto& [id, slot] : syncs) out[id] = *slot;
  return out;
}

// A LogManager on the real file system in a TempDir, hosting
// `__consumer_offsets` (`partitions` partitions, the broker's overrides) on
// `defaults` (the broker's log config), and a GroupCoordinator loaded from
// it. Restart() is a clean shutdown and a new start; Crash() drops everything
// without a shutdown (the next start is unclean).
class OffsetsLogHarness {
 public:
  explicit OffsetsLogHarness(LogConfig defaults = {}, int32_t partitions = 3)
      : defaults_(defaults), partitions_(partitions) {
    Start();
  }
  ~OffsetsLogHarness() { Stop(/*clean=*/true); }

  GroupCoordinator& coordinator() { return *coordinator_; }
  LogManager& manager() { return *manager_; }
  GroupTime& time() { return time_; }
  const GroupLoadReport& load_report() const { return report_; }
  const std::string& dir() const { return dir_.path(); }
  int32_t PartitionFor(const std::string& group) const {
    return OffsetsPartitionFor(group, partitions_);
  }
  // The live log of one partition (nullptr before the first append).
  Log* log(int32_t partition) { return manager_->GetLog({kOffsetsTopic, partition}); }
  std::string PartitionDir(int32_t partition) const {
    return dir_.path() + "/" + kOffsetsTopic + "-" + std::to_string(partition);
  }

  void Restart() {
    Stop(/*clean=*/true);
    Start();
  }
  void Crash() {
    Stop(/*clean=*/false);
    Start();
  }
  // Stops, lets `edit` change the files, starts again (clean or not).
  template <typename Edit>
  void RestartAfter(bool clean, Edit edit) {
    Stop(clean);
    edit();
    Start();
  }

 private:
  void Start() {
    LogManagerOptions options;
    options.clock = &time_.clock;
    manager_ = std::make_unique<LogManager>(options);
    Status started = manager_->Startup({dir_.path()}, defaults_, 1);
    ASSERT_TRUE(started.ok()) << started.ToString();
    storage_ = std::make_unique<LogGroupStorage>(
        OffsetsLogFor(manager_.get(), partitions_, defaults_, OffsetsTopicOverrides(104857600)),
        &time_.clock);
    GroupCoordinatorConfig config;
    config.offsets_partitions = partitions_;
    config.initial_rebalance_delay_ms = 100;
    coordinator_ = std::make_unique<GroupCoordinator>(config, storage_.get(), &time_.scheduler);
    Result<GroupLoadReport> report = coordinator_->Load();
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    report_ = *report;
  }
  void Stop(bool clean) {
    if (manager_ == nullptr) return;
    coordinator_.reset();
    storage_.reset();
    if (clean) {
      EXPECT_TRUE(manager_->Shutdown().ok());
    }
    manager_.reset();
  }

  LogConfig defaults_;
  int32_t partitions_;
  TempDir dir_;
  GroupTime time_{1700000000000};
  std::unique_ptr<LogManager> manager_;
  std::unique_ptr<LogGroupStorage> storage_;
  std::unique_ptr<GroupCoordinator> coordinator_;
  GroupLoadReport report_;
};

}  // namespace daruma::testing
