// What the group crash matrix (group_crash_matrix_crash_test.cc) knows about a
// run, and the recover-and-check step it runs on every crash image.
// Header-only, like tests/recovery/crash_workload.h, because tests link per
// layer and only this directory's crash test uses it.
//
// The model has two sources, kept apart on purpose:
//  * what reached the storage: RecordingGroupStorage sits between the
//    coordinator and the `__consumer_offsets` logs and records, per offset
//    key and per group, every record the coordinator appended and whether
//    the append returned OK. A record whose append failed may still be on
//    disk (a kill after the write, before the fsync), so it counts as
//    attempted;
//  * what clients were told: the workload marks an op acknowledged only when
//    the API answered NONE (OffsetCommit per partition, OffsetDelete,
//    DeleteGroups, the leader's SyncGroup). An acknowledgement must match a
//    stored record (else `acked_without_store`), and every stored offset must
//    be one a client sent (else `stored_unsent`).
// After recovery, each key's state must be the state after its last
// acknowledged op (or a later one whose append returned OK, which promises
// an fsync) or after any later attempted one (a later commit may or may not
// have made it); a key never acknowledged may also be absent.
//
// Group metadata is checked the same way: the loaded group (DescribeGroups,
// plus its generation: a Heartbeat that matches for a Stable group, a probe
// JoinGroup for an Empty one) must be the last acknowledged stored generation
// or a later attempted one. With no metadata record (or a tombstone) the
// group is Dead, or Empty at generation 0 when offsets keep it alive.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/group_storage.h"
#include "coordinator/group_test_support.h"
#include "coordinator/offsets_records.h"
#include "recovery/log_manager.h"
#include "support/mem_file_system.h"

namespace daruma::testing {

inline constexpr int32_t kGroupOffsetsPartitions = 3;
inline constexpr int64_t kGroupWorkloadStartMs = 1700000000000;

// The broker's defaults for every log, as with log.flush.interval.messages=1:
// LogGroupStorage then fsyncs each append before the coordinator answers (the
// broker's own topic overrides do not set flush.messages). Small index
// intervals so appends also write index entries.
inline LogConfig GroupBrokerDefaults() {
  LogConfig c;
  c.flush_messages = 1;
  c.index_interval_bytes = 512;
  c.segment_index_bytes = 4096;  // a multiple of 8 and 12
  return c;
}

// `__consumer_offsets` with 3 partitions and the broker's overrides, with
// 2 KiB segments (offsets.topic.segment.bytes) so the logs roll often.
inline LogGroupStorage::LogFor CrashOffsetsLogFor(LogManager* manager) {
  return OffsetsLogFor(manager, kGroupOffsetsPartitions, GroupBrokerDefaults(),
                       OffsetsTopicOverrides(2048));
}

struct StoredOffset {
  int64_t offset = 0;
  int32_t leader_epoch = -1;
  std::string metadata;
  bool operator==(const StoredOffset&) const = default;
};

// A group's metadata record as the loaded group shows it.
struct StoredGroup {
  std::string protocol_type;
  int32_t generation = 0;
  std::string protocol;                     // "" when none
  std::map<std::string, Bytes> assignment;  // member id -> assignment
  bool operator==(const StoredGroup&) const = default;
};

// (group, topic, partition)
using OffsetKey = std::tuple<std::string, std::string, int32_t>;

inline std::string KeyName(const OffsetKey& k) {
  return std::get<0>(k) + "/" + std::get<1>(k) + "-" + std::to_string(std::get<2>(k));
}

// Every record appended under one key, in append order (nullopt: tombstone).
template <typename V>
struct KeyHistory {
  struct Op {
    std::optional<V> value;
    bool stored = false;  // the append returned OK
  };
  std::vector<Op> ops;
  int64_t last_acked = -1;  // index of the last op a client was told NONE for

  // The state after op i (-1: before any op).
  std::optional<V> StateAfter(int64_t i) const {
    return i < 0 ? std::nullopt : ops[size_t(i)].value;
  }
  // The last op that must survive: the last one a client was told NONE for,
  // or a later one whose append returned OK (LogGroupStorage returns OK only
  // once the append is fsynced, so an empty generation stored when the last
  // member left counts although no client hears of it).
  int64_t Floor() const {
    int64_t floor = last_acked;
    for (int64_t i = floor + 1; i < int64_t(ops.size()); ++i) {
      if (ops[size_t(i)].stored) floor = i;
    }
    return floor;
  }
  // Whether `state` is the state after the floor op or after a later one.
  bool Allows(const std::optional<V>& state) const {
    for (int64_t i = Floor(); i < int64_t(ops.size()); ++i) {
      if (StateAfter(i) == state) return true;
    }
    return false;
  }
  bool EverHeld(const V& value) const {
    for (const Op& op : ops) {
      if (op.value == value) return true;
    }
    return false;
  }
};

// The model of one run (see the top of this file).
struct GroupHistory {
  std::map<OffsetKey, KeyHistory<StoredOffset>> offsets;
  std::map<std::string, KeyHistory<StoredGroup>> groups;
  std::map<OffsetKey, std::vector<StoredOffset>> sent;  // what clients committed
  std::vector<std::string> problems;                    // found while running

  void Record(const RecordInput& r, bool stored) {
    auto bytes = [](const std::optional<std::string>& s) {
      return ByteSpan(reinterpret_cast<const uint8_t*>(s->data()), s->size());
    };
    Result<OffsetsRecordKey> key = DecodeOffsetsRecordKey(bytes(r.key));
    if (!key.ok()) {
      problems.push_back("stored an undecodable key: " + key.status().ToString());
      return;
    }
    if (const auto* k = std::get_if<OffsetCommitKey>(&*key)) {
      const OffsetKey ok{k->group, k->topic, k->partition};
      std::optional<StoredOffset> value;
      if (r.value) {
        Result<OffsetCommitValue> v = DecodeOffsetCommitValue(bytes(r.value));
        if (!v.ok()) {
          problems.push_back("stored an undecodable offset of " + KeyName(ok));
          return;
        }
        value = StoredOffset{v->offset, v->leader_epoch, v->metadata};
        const auto& mine = sent[ok];
        if (std::find(mine.begin(), mine.end(), *value) == mine.end()) {
          problems.push_back("stored_unsent: " + KeyName(ok) + " offset " +
                             std::to_string(value->offset) + " that no client committed");
        }
      }
      offsets[ok].ops.push_back({value, stored});
    } else if (const auto* k = std::get_if<GroupMetadataKey>(&*key)) {
      std::optional<StoredGroup> value;
      if (r.value) {
        Result<GroupMetadataValue> v = DecodeGroupMetadataValue(bytes(r.value));
        if (!v.ok()) {
          problems.push_back("stored undecodable metadata of " + k->group);
          return;
        }
        StoredGroup g{v->protocol_type, v->generation, v->protocol.value_or(""), {}};
        for (const GroupMemberValue& m : v->members) g.assignment[m.member_id] = m.assignment;
        value = std::move(g);
      }
      groups[k->group].ops.push_back({value, stored});
    }
  }

  size_t OpsOf(const OffsetKey& k) const {
    auto it = offsets.find(k);
    return it == offsets.end() ? 0 : it->second.ops.size();
  }
  size_t OpsOf(const std::string& group) const {
    auto it = groups.find(group);
    return it == groups.end() ? 0 : it->second.ops.size();
  }

  // A client was told NONE for the op appended under `k` since it had
  // `ops_before` ops; `want` is what that op must hold.
  template <typename V>
  void Ack(KeyHistory<V>& h, size_t ops_before, const std::optional<V>& want,
           const std::string& what) {
    if (h.ops.size() <= ops_before) {
      // Nothing was appended (OffsetDelete of an offset the group does not
      // hold): nothing to acknowledge.
      if (want) problems.push_back("acked_without_store: " + what + " appended nothing");
      return;
    }
    const auto& op = h.ops.back();
    if (!op.stored || op.value != want) {
      problems.push_back("acked_without_store: " + what + " answered NONE but its append " +
                         (op.stored ? "holds another value" : "failed"));
      return;
    }
    h.last_acked = int64_t(h.ops.size()) - 1;
  }
  void AckOffset(const OffsetKey& k, size_t ops_before, const std::optional<StoredOffset>& want) {
    Ack(offsets[k], ops_before, want, KeyName(k));
  }
  // The leader's SyncGroup (or DeleteGroups, want = nullopt) answered NONE.
  void AckGroup(const std::string& group, size_t ops_before, bool tombstone) {
    KeyHistory<StoredGroup>& h = groups[group];
    if (h.ops.size() <= ops_before) {
      problems.push_back("acked_without_store: group " + group + " appended no metadata");
      return;
    }
    if (!h.ops.back().stored || h.ops.back().value.has_value() == tombstone) {
      problems.push_back("acked_without_store: group " + group + " metadata append failed");
      return;
    }
    h.last_acked = int64_t(h.ops.size()) - 1;
  }
};

// Forwards to the real storage and records every append in a GroupHistory.
class RecordingGroupStorage final : public GroupStorage {
 public:
  RecordingGroupStorage(GroupStorage* inner, GroupHistory* history)
      : inner_(inner), history_(history) {}
  // Transactional batches are not recorded: their offsets count only after
  // a marker, which the model does not know (the workload writes none).
  Result<int64_t> Append(int32_t partition, const std::vector<RecordInput>& records,
                         const std::optional<ProducerBatchInfo>& producer) override {
    Result<int64_t> s = inner_->Append(partition, records, producer);
    if (!producer) {
      for (const RecordInput& r : records) history_->Record(r, s.ok());
    }
    return s;
  }
  Status ReadBatches(int32_t partition,
                     const std::function<Status(const RecordBatchView&)>& visit) override {
    return inner_->ReadBatches(partition, visit);
  }

 private:
  GroupStorage* inner_;
  GroupHistory* history_;
};

// The coordinator settings of the workload and of the recovery check.
inline GroupCoordinatorConfig GroupCrashCoordinatorConfig() {
  GroupCoordinatorConfig c;
  c.offsets_partitions = kGroupOffsetsPartitions;
  c.initial_rebalance_delay_ms = 500;
  return c;
}

// Counts across a matrix run (printed by the test, summed by the script).
struct GroupCrashTally {
  int64_t points = 0;
  int64_t recoveries = 0;
  int64_t offsets_checked = 0;
  int64_t groups_checked = 0;
  int64_t recovery_failures = 0;      // Startup failed, or Load skipped or failed
  int64_t workload_problems = 0;      // acked_without_store, stored_unsent
  int64_t acked_lost = 0;             // an acknowledged offset is older or missing
  int64_t phantom = 0;                // an offset no client committed under that key
  int64_t resurrected = 0;            // an acknowledged delete came undone
  int64_t group_mismatch = 0;         // loaded metadata is neither acked nor later
  std::vector<std::string> examples;  // at most 3 per category
  std::map<std::string, int> noted;

  void Note(const std::string& category, const std::string& what) {
    if (noted[category]++ < 3) examples.push_back(category + ": " + what);
  }
  int64_t Violations() const {
    return recovery_failures + workload_problems + acked_lost + phantom + resurrected +
           group_mismatch;
  }
  std::string Summary() const {
    return "points=" + std::to_string(points) + " recoveries=" + std::to_string(recoveries) +
           " offsets_checked=" + std::to_string(offsets_checked) +
           " groups_checked=" + std::to_string(groups_checked) +
           " violations=" + std::to_string(Violations()) +
           " recovery_failures=" + std::to_string(recovery_failures) +
           " workload_problems=" + std::to_string(workload_problems) +
           " acked_lost=" + std::to_string(acked_lost) + " phantom=" + std::to_string(phantom) +
           " resurrected=" + std::to_string(resurrected) +
           " group_mismatch=" + std::to_string(group_mismatch);
  }
};

// A loaded group as the APIs show it; exists=false for a Dead (unknown) one.
struct ObservedGroup {
  bool exists = false;
  std::string state;
  StoredGroup stored;  // generation -1 when it could not be found
};

inline bool GroupMatches(const std::optional<StoredGroup>& want, const ObservedGroup& got) {
  if (!want) {
    return !got.exists || (got.state == "Empty" && got.stored == StoredGroup{});
  }
  if (!got.exists) return false;
  const bool stable = !want->assignment.empty();
  if (got.state != (stable ? "Stable" : "Empty")) return false;
  if (stable) return got.stored == *want;
  return got.stored.protocol_type == want->protocol_type &&
         got.stored.generation == want->generation;
}

inline std::string Describe(const std::optional<StoredGroup>& g) {
  if (!g) return "none";
  return g->protocol_type + " gen " + std::to_string(g->generation) + " " + g->protocol + " " +
         std::to_string(g->assignment.size()) + " members";
}

// Observes every group `names` lists: DescribeGroups, then the generation
// (Heartbeat for Stable groups, before any time passes; then one probe
// JoinGroup per Empty group, answered once the join phase ends).
inline std::map<std::string, ObservedGroup> ObserveGroups(GroupCoordinator& coordinator,
                                                          GroupTime* time,
                                                          const std::set<std::string>& names) {
  std::map<std::string, ObservedGroup> out;
  std::map<std::string, std::shared_ptr<std::optional<JoinGroupResult>>> probes;
  for (const std::string& name : names) {
    GroupDescription d = coordinator.DescribeGroup(name);
    ObservedGroup& o = out[name];
    o.exists = d.error == ErrorCode::kNone && d.state != "Dead";
    if (!o.exists) continue;
    o.state = d.state;
    o.stored.protocol_type = d.protocol_type;
    o.stored.protocol = d.protocol_data;
    o.stored.generation = -1;
    for (const auto& m : d.members) o.stored.assignment[m.member_id] = m.assignment;
    if (d.state == "Stable" && !d.members.empty()) {
      for (int32_t g = 0; g < 1000 && o.stored.generation < 0; ++g) {
        if (coordinator.Heartbeat(name, d.members[0].member_id, d.members[0].group_instance_id,
                                  g) == ErrorCode::kNone) {
          o.stored.generation = g;
        }
      }
    }
  }
  for (auto& [name, o] : out) {
    if (!o.exists || o.state != "Empty") continue;
    JoinGroupArgs probe;
    probe.group_id = name;
    probe.protocol_type = o.stored.protocol_type.empty() ? "consumer" : o.stored.protocol_type;
    probe.protocols = {{"range", Bytes{0, 0}}};
    probe.session_timeout_ms = 10000;
    probe.rebalance_timeout_ms = 10000;
    probe.client_id = "probe";
    auto slot = std::make_shared<std::optional<JoinGroupResult>>();
    coordinator.JoinGroup(probe, [slot](JoinGroupResult r) { *slot = std::move(r); });
    probes[name] = slot;
  }
  for (int i = 0; i < 100; ++i) {
    bool all = true;
    for (const auto& [name, slot] : probes) all = all && slot->has_value();
    if (all) break;
    time->Advance(1000);
  }
  for (const auto& [name, slot] : probes) {
    if (slot->has_value() && (*slot)->error == ErrorCode::kNone) {
      out[name].stored.generation = (*slot)->generation_id - 1;
    }
  }
  return out;
}

// Recovers `image` (LogManager::Startup, a fresh coordinator, Load) and
// checks it against `history` (see the top of this file).
inline void RecoverGroupsAndCheck(MemFileSystem* image, const std::string& log_dir,
                                  const GroupHistory& history, const std::string& label,
                                  GroupCrashTally* tally) {
  for (const std::string& p : history.problems) {
    ++tally->workload_problems;
    tally->Note("workload", label + ": " + p);
  }
  GroupTime time(kGroupWorkloadStartMs + 24 * 3600 * 1000);
  LogManagerOptions options;
  options.fs = image;
  options.clock = &time.clock;
  LogManager manager(options);
  Status st = manager.Startup({log_dir}, GroupBrokerDefaults(), 1);
  if (!st.ok() || manager.HasFailures()) {
    ++tally->recovery_failures;
    tally->Note("recovery_failure",
                label + ": " + st.ToString() + " " + manager.ReportJson().dump());
    return;
  }
  LogGroupStorage storage(CrashOffsetsLogFor(&manager), &time.clock);
  GroupCoordinator coordinator(GroupCrashCoordinatorConfig(), &storage, &time.scheduler);
  Result<GroupLoadReport> report = coordinator.Load();
  if (!report.ok() || report->skipped > 0 || !report->failed_partitions.empty()) {
    ++tally->recovery_failures;
    tally->Note(
        "recovery_failure",
        label + ": load " +
            (report.ok() ? std::to_string(report->skipped) + " skipped " +
                               (report->skipped_reasons.empty() ? std::string()
                                                                : report->skipped_reasons[0]) +
                               (report->failed_partitions.empty()
                                    ? std::string()
                                    : " failed " + report->failed_partitions[0])
                         : report.status().ToString()));
    if (!report.ok()) return;
  }
  ++tally->recoveries;

  std::set<std::string> names;
  for (const auto& [k, h] : history.offsets) names.insert(std::get<0>(k));
  for (const auto& [g, h] : history.groups) names.insert(g);
  auto [list_error, listed] = coordinator.ListGroups({});
  for (const GroupListing& g : listed) {
    if (!names.count(g.group_id)) {
      ++tally->phantom;
      tally->Note("phantom", label + ": group " + g.group_id + " was never written");
    }
  }

  // Offsets: every key written, and every key the groups hold.
  std::map<OffsetKey, std::optional<StoredOffset>> found;
  for (const std::string& name : names) {
    OffsetFetchResult fetched = coordinator.FetchOffsets(name, std::nullopt);
    for (const auto& p : fetched.partitions) {
      found[{name, p.topic, p.partition}] = StoredOffset{p.offset, p.leader_epoch, p.metadata};
    }
  }
  std::set<OffsetKey> keys;
  for (const auto& [k, h] : history.offsets) keys.insert(k);
  for (const auto& [k, v] : found) keys.insert(k);
  static const KeyHistory<StoredOffset> kNever;
  for (const OffsetKey& k : keys) {
    ++tally->offsets_checked;
    auto h = history.offsets.find(k);
    const KeyHistory<StoredOffset>& hist = h == history.offsets.end() ? kNever : h->second;
    auto f = found.find(k);
    const std::optional<StoredOffset> got = f == found.end() ? std::nullopt : f->second;
    if (hist.Allows(got)) continue;
    const std::string what =
        label + ": " + KeyName(k) + " holds " +
        (got ? std::to_string(got->offset) + " '" + got->metadata + "'" : std::string("nothing"));
    if (got && !hist.EverHeld(*got)) {
      ++tally->phantom;
      tally->Note("phantom", what + ", never written there");
    } else if (got && !hist.StateAfter(hist.Floor())) {
      ++tally->resurrected;
      tally->Note("resurrected", what + " after an acknowledged delete");
    } else {
      ++tally->acked_lost;
      const auto acked = hist.StateAfter(hist.Floor());
      tally->Note("acked_lost", what + ", acknowledged " +
                                    (acked ? std::to_string(acked->offset) : std::string("-")));
    }
  }

  // Group metadata.
  const std::map<std::string, ObservedGroup> observed = ObserveGroups(coordinator, &time, names);
  static const KeyHistory<StoredGroup> kNoGroup;
  for (const std::string& name : names) {
    ++tally->groups_checked;
    auto h = history.groups.find(name);
    const KeyHistory<StoredGroup>& hist = h == history.groups.end() ? kNoGroup : h->second;
    const ObservedGroup& got = observed.at(name);
    bool ok = false;
    const int64_t floor = hist.Floor();
    for (int64_t i = floor; i < int64_t(hist.ops.size()) && !ok; ++i) {
      ok = GroupMatches(hist.StateAfter(i), got);
    }
    if (!ok) {
      ++tally->group_mismatch;
      tally->Note("group_mismatch",
                  label + ": " + name + " loaded " +
                      (got.exists ? got.state + " " + Describe(got.stored) : std::string("Dead")) +
                      ", acknowledged " + Describe(hist.StateAfter(floor)) + " (" +
                      std::to_string(hist.ops.size() - size_t(floor + 1)) + " later attempts)");
    }
  }
}

}  // namespace daruma::testing
