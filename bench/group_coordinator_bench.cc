// The group coordinator (issue 21, coordinator/group_coordinator.h) on real
// `__consumer_offsets` logs in a temp dir, each figure beside a baseline
// measured in the same run:
//
//   BM_OffsetCommit/P    one committer (one connection's worth: requests one
//                        after another) sending OffsetCommit requests of P
//                        partitions to a Stable group's member: requests/s
//                        and partition commits/s. Baseline BM_RawAppend/P:
//                        the same records appended to the log directly.
//   BM_Rebalance/N       N members join an empty group (initial delay 0) and
//                        sync the leader's assignment: coordinator time for
//                        one whole rebalance, in-process (a client adds its
//                        own round trips and the configured delay).
//   BM_Load              a fresh coordinator loading $DARUMA_BENCH_GROUP_OFFSETS
//                        (default 1,000,000) committed offsets (1,000 groups,
//                        each committing its partitions 1.5 times, so a third
//                        of the records are replaced). Baseline
//                        BM_ReadOnlyPass: the same logs read batch by batch
//                        (CRC checked, records decoded) without building
//                        groups.
//
// Appends go to the page cache (Kafka's default flush settings, as the
// broker's): what is measured is the coordinator, not the disk.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_data.h"
#include "common/clock.h"
#include "common/scheduler.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/group_storage.h"
#include "log/log.h"

namespace daruma {
namespace {

namespace fs = std::filesystem;
using namespace daruma::bench;  // NOLINT: shared helpers (bench_data.h)

constexpr int32_t kOffsetsPartitions = 50;

int64_t OffsetsToLoad() {
  const char* env = std::getenv("DARUMA_BENCH_GROUP_OFFSETS");
  return env != nullptr && *env != '\0' ? std::atoll(env) : 1'000'000;
}

// Fifty `__consumer_offsets` logs in a fresh temp dir.
class OffsetsLogs {
 public:
  explicit OffsetsLogs(const std::string& name) : dir_(TmpRoot() + "/daruma-group-bench-" + name) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    LogConfig config = BenchConfig();
    config.segment_bytes = 100 << 20;
    for (int32_t p = 0; p < kOffsetsPartitions; ++p) {
      const TopicPartition tp{"__consumer_offsets", p};
      auto log = Log::CreateEmpty(FileSystem::Default(), dir_ + "/" + tp.ToString(), tp, config,
                                  Clock::System());
      if (!log.ok()) Die("creating a log", log.status());
      logs_.push_back(std::move(*log));
    }
    storage_ = std::make_unique<LogGroupStorage>(
        [this](int32_t p, bool) -> Result<Log*> { return logs_[size_t(p)].get(); },
        Clock::System());
  }
  ~OffsetsLogs() {
    for (auto& log : logs_) (void)log->Close();
    fs::remove_all(dir_);
  }
  LogGroupStorage* storage() { return storage_.get(); }
  Log* log(int32_t p) { return logs_[size_t(p)].get(); }
  int64_t bytes() const {
    int64_t total = 0;
    for (const auto& log : logs_) total += log->size_in_bytes();
    return total;
  }

 private:
  std::string dir_;
  std::vector<std::unique_ptr<Log>> logs_;
  std::unique_ptr<LogGroupStorage> storage_;
};

GroupCoordinatorConfig BenchGroupConfig() {
  GroupCoordinatorConfig c;
  c.initial_rebalance_delay_ms = 0;
  c.offsets_partitions = kOffsetsPartitions;
  return c;
}

JoinGroupArgs JoinArgs(const std::string& group, const std::string& member_id) {
  JoinGroupArgs a;
  a.group_id = group;
  a.member_id = member_id;
  a.protocol_type = "consumer";
  a.protocols.push_back({"range", Bytes(40, 1)});
  a.session_timeout_ms = 45000;
  a.rebalance_timeout_ms = 300000;
  a.client_id = "bench";
  return a;
}

// A clock the bench moves and the coordinator's scheduler on it: deadlines
// run only inside RunDueJobs.
struct ManualTime {
  ManualClock clock{kT0};
  Scheduler scheduler{&clock, 1, Scheduler::Mode::kManual};
};

// Joins `n` members to `group` and completes the rebalance; returns the
// member ids (the leader first) and the generation.
std::pair<std::vector<std::string>, int32_t> Rebalance(GroupCoordinator& c, ManualTime& time,
                                                       const std::string& group, int n) {
  std::vector<std::optional<JoinGroupResult>> joined(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    c.JoinGroup(JoinArgs(group, ""), [&joined, i](JoinGroupResult r) { joined[size_t(i)] = r; });
  }
  time.clock.Advance(1);
  time.scheduler.RunDueJobs();
  std::vector<std::string> ids;
  std::string leader;
  int32_t generation = -1;
  for (auto& j : joined) {
    if (!j || j->error != ErrorCode::kNone)
      Die("join", Status::InvalidArgument("join not answered"));
    ids.push_back(j->member_id);
    leader = j->leader_id;
    generation = j->generation_id;
  }
  std::vector<std::optional<SyncGroupResult>> synced(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    SyncGroupArgs s;
    s.group_id = group;
    s.member_id = ids[size_t(i)];
    s.generation_id = generation;
    if (ids[size_t(i)] == leader) {
      for (const std::string& id : ids) s.assignments.emplace_back(id, Bytes(60, 2));
    }
    c.SyncGroup(std::move(s), [&synced, i](SyncGroupResult r) { synced[size_t(i)] = r; });
  }
  for (auto& s : synced) {
    if (!s || s->error != ErrorCode::kNone)
      Die("sync", Status::InvalidArgument("sync not answered"));
  }
  std::stable_partition(ids.begin(), ids.end(),
                        [&](const std::string& id) { return id == leader; });
  return {ids, generation};
}

OffsetCommitArgs CommitArgs(const std::string& group, const std::string& member, int32_t generation,
                            int partitions, int64_t offset) {
  OffsetCommitArgs a;
  a.group_id = group;
  a.member_id = member;
  a.generation_id = generation;
  for (int p = 0; p < partitions; ++p) {
    a.partitions.push_back({"orders-" + std::to_string(p % 10), p, offset, 3, std::string(), -1});
  }
  return a;
}

// `requests` commit requests of `partitions` partitions each: per second.
void CommitRates(benchmark::State& state, int64_t requests, int partitions) {
  state.counters["requests_per_s"] =
      benchmark::Counter(double(requests), benchmark::Counter::kIsRate);
  state.counters["partition_commits_per_s"] =
      benchmark::Counter(double(requests * partitions), benchmark::Counter::kIsRate);
}

void BM_OffsetCommit(benchmark::State& state) {
  const int partitions = int(state.range(0));
  OffsetsLogs logs("commit");
  ManualTime time;
  GroupCoordinator c(BenchGroupConfig(), logs.storage(), &time.scheduler);
  if (!c.Load().ok()) Die("load", Status::InvalidArgument("load"));
  auto [members, generation] = Rebalance(c, time, "bench-group", 1);
  int64_t offset = 0;
  int64_t requests = 0;
  for (auto _ : state) {
    std::vector<ErrorCode> errors =
        c.CommitOffsets(CommitArgs("bench-group", members[0], generation, partitions, ++offset));
    if (errors[0] != ErrorCode::kNone)
      Die("commit", Status::InvalidArgument(ErrorCodeName(errors[0])));
    ++requests;
  }
  CommitRates(state, requests, partitions);
}
BENCHMARK(BM_OffsetCommit)->Arg(1)->Arg(10)->Arg(100)->UseRealTime()->Unit(benchmark::kMicrosecond);

// The baseline: the records one commit writes, built and appended straight
// to the partition's log (what any append of that size costs).
void BM_RawAppend(benchmark::State& state) {
  const int partitions = int(state.range(0));
  OffsetsLogs logs("raw");
  int64_t offset = 0;
  int64_t requests = 0;
  for (auto _ : state) {
    ++offset;
    std::vector<RecordInput> records;
    for (int p = 0; p < partitions; ++p) {
      const Bytes key =
          EncodeOffsetCommitKey({"bench-group", "orders-" + std::to_string(p % 10), p});
      const Bytes value = EncodeOffsetCommitValue({offset, 3, "", kT0, -1});
      RecordInput r;
      r.key = std::string(key.begin(), key.end());
      r.value = std::string(value.begin(), value.end());
      records.push_back(std::move(r));
    }
    if (!logs.storage()
             ->Append(OffsetsPartitionFor("bench-group", kOffsetsPartitions), records, std::nullopt)
             .ok()) {
      Die("append", Status::InvalidArgument("append"));
    }
    ++requests;
  }
  CommitRates(state, requests, partitions);
}
BENCHMARK(BM_RawAppend)->Arg(1)->Arg(10)->Arg(100)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_Rebalance(benchmark::State& state) {
  const int members = int(state.range(0));
  OffsetsLogs logs("rebalance");
  ManualTime time;
  GroupCoordinator c(BenchGroupConfig(), logs.storage(), &time.scheduler);
  if (!c.Load().ok()) Die("load", Status::InvalidArgument("load"));
  int round = 0;
  for (auto _ : state) Rebalance(c, time, "group-" + std::to_string(++round), members);
}
BENCHMARK(BM_Rebalance)->Arg(10)->Arg(100)->UseRealTime()->Unit(benchmark::kMicrosecond);

// 1,000 groups, each committing its partitions once and then half of them
// again: OffsetsToLoad() live offsets, half as many replaced records.
std::unique_ptr<OffsetsLogs> WriteOffsets(int64_t* live, int64_t* records) {
  auto logs = std::make_unique<OffsetsLogs>("load");
  ManualTime time;
  GroupCoordinator c(BenchGroupConfig(), logs->storage(), &time.scheduler);
  if (!c.Load().ok()) Die("load", Status::InvalidArgument("load"));
  constexpr int kGroups = 1000;
  const int per_group = int(OffsetsToLoad() / kGroups);
  constexpr int kPerRequest = 100;
  *live = 0;
  *records = 0;
  for (int g = 0; g < kGroups; ++g) {
    const std::string group = "group-" + std::to_string(g);
    for (int pass = 0; pass < 2; ++pass) {
      const int upto = pass == 0 ? per_group : per_group / 2;
      for (int first = 0; first < upto; first += kPerRequest) {
        OffsetCommitArgs a = CommitArgs(group, "", -1, 0, 0);
        for (int p = first; p < std::min(upto, first + kPerRequest); ++p) {
          a.partitions.push_back(
              {"topic-" + std::to_string(p / 100), p % 100, 1000 + pass, 0, std::string(), -1});
        }
        *records += int64_t(a.partitions.size());
        if (c.CommitOffsets(a)[0] != ErrorCode::kNone)
          Die("commit", Status::InvalidArgument("commit"));
      }
    }
    *live += per_group;
  }
  return logs;
}

void BM_Load(benchmark::State& state) {
  int64_t live = 0;
  int64_t records = 0;
  std::unique_ptr<OffsetsLogs> logs = WriteOffsets(&live, &records);
  ManualTime time;
  for (auto _ : state) {
    GroupCoordinator c(BenchGroupConfig(), logs->storage(), &time.scheduler);
    Result<GroupLoadReport> report = c.Load();
    if (!report.ok() || report->offsets != live) Die("load", Status::InvalidArgument("wrong load"));
  }
  state.counters["offsets"] = double(live);
  state.counters["records"] = double(records);
  state.counters["MiB"] = double(logs->bytes()) / (1 << 20);
}
BENCHMARK(BM_Load)->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_ReadOnlyPass(benchmark::State& state) {
  int64_t live = 0;
  int64_t records = 0;
  std::unique_ptr<OffsetsLogs> logs = WriteOffsets(&live, &records);
  for (auto _ : state) {
    int64_t seen = 0;
    for (int32_t p = 0; p < kOffsetsPartitions; ++p) {
      Status s = logs->storage()->ReadBatches(p, [&](const RecordBatchView& batch) -> Status {
        if (!batch.crc_valid()) return Status::Corruption("crc");
        Result<std::vector<Record>> decoded = batch.DecodeRecords();
        if (!decoded.ok()) return decoded.status();
        seen += int64_t(decoded->size());
        return Status::Ok();
      });
      if (!s.ok()) Die("read", s);
    }
    if (seen != records) Die("read", Status::InvalidArgument("wrong record count"));
  }
  state.counters["records"] = double(records);
}
BENCHMARK(BM_ReadOnlyPass)->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace daruma

BENCHMARK_MAIN();
