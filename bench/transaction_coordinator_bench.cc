// The transaction coordinator (issue 20, coordinator/transaction_coordinator.h)
// in process, on real logs: a LogManager in a temp dir hosting
// `__transaction_state` created as the broker creates it (TopicRegistry::
// GetOrCreateInternal with RequestHandler::StartCoordinators' overrides:
// compact, uncompressed, 100 MiB segments), the broker's storage
// (LogGroupStorage) and marker writer (broker::LogTxnMarkerWriter). Each
// figure beside a baseline measured in the same run:
//
//   BM_Load            a fresh coordinator loading $DARUMA_BENCH_TXN_IDS
//                      (default 100,000) transactional ids after the
//                      LogManager was shut down and started again. The log
//                      holds what a real one holds before compaction: every
//                      id initialised, then two transactions (two
//                      AddPartitions each, committed, every tenth aborted),
//                      1 % with a third left Ongoing; ~9 records per id,
//                      all written through the coordinator. Issue 20's
//                      target: <= 1 s for 100,000 ids. Baseline (same
//                      benchmark, interleaved): a read-only pass over the
//                      same logs (batches read, CRC checked, records
//                      decoded; no keys or values parsed, no map built).
//                      Counters: load_ms and read_only_ms (median, min,
//                      max), ids_per_s at the median, load_vs_read_only, and
//                      for context the LogManager restart and the setup.
//   BM_Transactions    one producer, transactions of AddPartitions (3
//                      partitions) + EndTxn(commit) one after another: per
//                      transaction 3 `__transaction_state` records (Ongoing,
//                      PrepareCommit, CompleteCommit) and 3 markers (to a
//                      3-partition topic holding no data: the coordinator's
//                      share of a transaction, without the producer's).
//                      Baseline BM_RawTransactionAppends: the same 3
//                      records and 3 marker batches appended directly.
//
// Appends go to the page cache (Kafka's default flush settings, as the
// broker's); the reload reads from the page cache too.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <asio.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "bench_data.h"
#include "broker/delayed_fetch.h"
#include "broker/post_runner.h"
#include "broker/topic_registry.h"
#include "broker/txn_marker_writer.h"
#include "common/clock.h"
#include "common/scheduler.h"
#include "coordinator/offsets_records.h"
#include "coordinator/transaction_coordinator.h"
#include "coordinator/transaction_log_records.h"
#include "recovery/log_manager.h"

namespace daruma {
namespace {

namespace fs = std::filesystem;
using namespace daruma::bench;  // NOLINT: shared helpers (bench_data.h)
using SteadyClock = std::chrono::steady_clock;

constexpr int32_t kStatePartitions = 50;
constexpr int32_t kDataPartitions = 3;
constexpr char kDataTopic[] = "txn-data";
constexpr int32_t kTimeoutMs = 60000;

int64_t IdsToLoad() {
  const char* env = std::getenv("DARUMA_BENCH_TXN_IDS");
  return env != nullptr && *env != '\0' ? std::atoll(env) : 100'000;
}

double MsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty()      ? 0
         : v.size() % 2 ? v[v.size() / 2]
                        : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// A broker's worth of logs in `dir`: a LogManager, the topic registry, the
// `__transaction_state` storage and the marker writer wired as
// RequestHandler::StartCoordinators wires them, and a 3-partition data topic
// for the markers. Shut down cleanly on destruction (marker, checkpoints,
// producer snapshots), so a second TxnLogs on the same dir is a clean restart.
class TxnLogs {
 public:
  explicit TxnLogs(const std::string& dir)
      : purgatory_(&scheduler_, broker::PostRunner(io_.get_executor())),
        markers_(topics_, hw_mu_, purgatory_, nullptr, &clock_) {
    fs::create_directories(dir);
    const auto start = SteadyClock::now();
    if (Status s = manager_.Startup({dir}, BenchConfig(), 1); !s.ok()) Die("startup", s);
    if (Status s = topics_.Load(); !s.ok()) Die("topics", s);
    startup_ms_ = MsSince(start);
    if (!topics_.Find(kDataTopic)) {
      if (auto t = topics_.Create(kDataTopic, kDataPartitions, {}); !t.ok()) {
        Die("creating the data topic", t.status());
      }
    }
    storage_ = std::make_unique<LogGroupStorage>(
        [this](int32_t partition, bool create) -> Result<Log*> {
          const std::string topic = broker::kTransactionStateTopic;
          if (create) {
            Result<broker::TopicInfo> info =
                topics_.GetOrCreateInternal(topic, kStatePartitions,
                                            {{"cleanup.policy", "compact"},
                                             {"compression.type", "uncompressed"},
                                             {"segment.bytes", "104857600"}});
            if (!info.ok()) return info.status();
          }
          return topics_.GetLog(TopicPartition{topic, partition});
        },
        &clock_);
  }
  ~TxnLogs() {
    if (Status s = manager_.Shutdown(); !s.ok()) Die("shutdown", s);
  }

  std::unique_ptr<TransactionCoordinator> Coordinator() {
    TransactionCoordinatorConfig config;
    config.state_log_partitions = kStatePartitions;
    return std::make_unique<TransactionCoordinator>(
        config, storage_.get(), &markers_,
        [this]() -> Result<int64_t> { return next_producer_id_++; }, &scheduler_);
  }
  LogGroupStorage* storage() { return storage_.get(); }
  TxnMarkerWriter* markers() { return &markers_; }
  Log* DataLog(int32_t p) { return topics_.GetLog(TopicPartition{kDataTopic, p}); }
  Clock* clock() { return &clock_; }
  double startup_ms() const { return startup_ms_; }
  int64_t StateBytes() const {
    int64_t total = 0;
    for (int32_t p = 0; p < kStatePartitions; ++p) {
      if (Log* log = topics_.GetLog(TopicPartition{broker::kTransactionStateTopic, p})) {
        total += log->size_in_bytes();
      }
    }
    return total;
  }

 private:
  // A clock the bench does not move: no transaction times out and no
  // periodic job runs (the scheduler only runs jobs when told to).
  ManualClock clock_{Clock::System()->NowMs()};
  Scheduler scheduler_{&clock_, 1, Scheduler::Mode::kManual};
  asio::io_context io_;
  LogManager manager_;
  broker::TopicRegistry topics_{&manager_, BenchConfig()};
  std::mutex hw_mu_;
  broker::DelayedFetchPurgatory purgatory_;
  broker::LogTxnMarkerWriter markers_;
  std::unique_ptr<LogGroupStorage> storage_;
  int64_t next_producer_id_ = 1000;
  double startup_ms_ = 0;
};

std::string FreshDir(const std::string& name) {
  const std::string dir = TmpRoot() + "/daruma-txn-bench-" + name;
  fs::remove_all(dir);
  return dir;
}

// Removes `dir` when it goes out of scope (declared before the TxnLogs on it,
// so the logs are shut down first).
struct RemoveOnExit {
  std::string dir;
  ~RemoveOnExit() { fs::remove_all(dir); }
};

TopicPartition DataPartition(int64_t i) {
  return TopicPartition{kDataTopic, int32_t(i % kDataPartitions)};
}

void Expect(ErrorCode e, const char* what) {
  if (e != ErrorCode::kNone) Die(what, Status::InvalidArgument(ErrorCodeName(e)));
}

// ---- load -------------------------------------------------------------------

struct LoadData {
  std::string dir;
  int64_t ids = 0;
  int64_t ongoing = 0;
  int64_t records = 0;  // `__transaction_state` records written
  double write_s = 0;
};

// Writes IdsToLoad() ids through a coordinator and shuts the logs down.
LoadData WriteIds() {
  LoadData d;
  d.dir = FreshDir("load");
  d.ids = IdsToLoad();
  TxnLogs logs(d.dir);
  std::unique_ptr<TransactionCoordinator> c = logs.Coordinator();
  if (!c->Load().ok()) Die("load", Status::InvalidArgument("empty load"));
  const auto start = SteadyClock::now();
  for (int64_t i = 0; i < d.ids; ++i) {
    const std::string id = "txn-app-" + std::to_string(i);
    InitProducerIdResult init = c->InitProducerId(id, kTimeoutMs, std::nullopt);
    Expect(init.error, "InitProducerId");
    ++d.records;
    const int transactions = i % 100 == 0 ? 3 : 2;
    for (int t = 0; t < transactions; ++t) {
      Expect(c->AddPartitions(id, init.producer_id, init.producer_epoch, {DataPartition(i + t)}),
             "AddPartitions");
      Expect(
          c->AddPartitions(id, init.producer_id, init.producer_epoch, {DataPartition(i + t + 1)}),
          "AddPartitions");
      d.records += 2;
      if (t == 2) {
        ++d.ongoing;  // left open, as by a producer that crashed
        break;
      }
      const bool commit = (i + t) % 10 != 0;
      Expect(c->EndTransaction(id, init.producer_id, init.producer_epoch, commit), "EndTxn");
      d.records += 2;  // Prepare*, Complete*
    }
  }
  d.write_s = MsSince(start) / 1000;
  return d;
}

const LoadData& Data() {
  static const LoadData data = WriteIds();
  return data;
}

// The plain read: every batch of every partition, CRC checked, records
// decoded (what the load cannot avoid).
int64_t ReadOnlyPass(TxnLogs& logs) {
  int64_t seen = 0;
  for (int32_t p = 0; p < kStatePartitions; ++p) {
    Status s = logs.storage()->ReadBatches(p, [&](const RecordBatchView& batch) -> Status {
      if (!batch.crc_valid()) return Status::Corruption("crc");
      Result<std::vector<Record>> decoded = batch.DecodeRecords();
      if (!decoded.ok()) return decoded.status();
      seen += int64_t(decoded->size());
      return Status::Ok();
    });
    if (!s.ok()) Die("read", s);
  }
  return seen;
}

// $DARUMA_BENCH_TXN_LOAD_REPS (default 5) loads, each interleaved with a
// read-only pass; the iteration time is the median load.
void BM_Load(benchmark::State& state) {
  const LoadData& d = Data();
  RemoveOnExit remove{d.dir};  // the data set serves this benchmark only
  const char* reps_env = std::getenv("DARUMA_BENCH_TXN_LOAD_REPS");
  const int reps = reps_env != nullptr && *reps_env != '\0' ? std::atoi(reps_env) : 5;
  TxnLogs logs(d.dir);  // the restart: a clean start of the same dir
  std::vector<double> load_ms;
  std::vector<double> read_ms;
  for (auto _ : state) {
    for (int r = 0; r < reps; ++r) {
      auto start = SteadyClock::now();
      if (ReadOnlyPass(logs) != d.records) Die("read", Status::InvalidArgument("record count"));
      read_ms.push_back(MsSince(start));
      std::unique_ptr<TransactionCoordinator> c = logs.Coordinator();
      start = SteadyClock::now();
      Result<TxnLoadReport> report = c->Load();
      load_ms.push_back(MsSince(start));
      if (!report.ok() || report->transactions != d.ids || report->ongoing != d.ongoing ||
          report->records != d.records || report->skipped != 0) {
        Die("load", Status::InvalidArgument("wrong load"));
      }
    }
    state.SetIterationTime(Median(load_ms) / 1000);
  }
  const double load = Median(load_ms);
  const double read = Median(read_ms);
  state.counters["ids"] = double(d.ids);
  state.counters["records"] = double(d.records);
  state.counters["MiB"] = double(logs.StateBytes()) / (1 << 20);
  state.counters["load_ms_median"] = load;
  state.counters["load_ms_min"] = *std::min_element(load_ms.begin(), load_ms.end());
  state.counters["load_ms_max"] = *std::max_element(load_ms.begin(), load_ms.end());
  state.counters["ids_per_s"] = double(d.ids) / (load / 1000);
  state.counters["read_only_ms_median"] = read;
  state.counters["read_only_ms_min"] = *std::min_element(read_ms.begin(), read_ms.end());
  state.counters["read_only_ms_max"] = *std::max_element(read_ms.begin(), read_ms.end());
  state.counters["load_vs_read_only"] = load / read;
  state.counters["log_manager_startup_ms"] = logs.startup_ms();
  state.counters["setup_write_s"] = d.write_s;
  state.SetLabel("target <= 1000 ms for 100,000 ids");
}
BENCHMARK(BM_Load)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

// ---- transactions/s -----------------------------------------------------------

const std::set<TopicPartition>& AllDataPartitions() {
  static const std::set<TopicPartition> all = [] {
    std::set<TopicPartition> s;
    for (int32_t p = 0; p < kDataPartitions; ++p) s.insert(TopicPartition{kDataTopic, p});
    return s;
  }();
  return all;
}

void TransactionRates(benchmark::State& state, int64_t transactions) {
  state.counters["txns_per_s"] =
      benchmark::Counter(double(transactions), benchmark::Counter::kIsRate);
}

void BM_Transactions(benchmark::State& state) {
  RemoveOnExit remove{FreshDir("txns")};
  TxnLogs logs(remove.dir);
  std::unique_ptr<TransactionCoordinator> c = logs.Coordinator();
  if (!c->Load().ok()) Die("load", Status::InvalidArgument("empty load"));
  InitProducerIdResult init = c->InitProducerId("bench-producer", kTimeoutMs, std::nullopt);
  Expect(init.error, "InitProducerId");
  int64_t transactions = 0;
  for (auto _ : state) {
    Expect(c->AddPartitions("bench-producer", init.producer_id, init.producer_epoch,
                            AllDataPartitions()),
           "AddPartitions");
    Expect(c->EndTransaction("bench-producer", init.producer_id, init.producer_epoch, true),
           "EndTxn");
    ++transactions;
  }
  TransactionRates(state, transactions);
  state.SetLabel("AddPartitions(3) + EndTxn(commit)");
}
BENCHMARK(BM_Transactions)->MinTime(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

// The baseline: what the transaction writes, appended directly (the 3
// `__transaction_state` records one at a time, as the coordinator stores
// them, and the 3 markers with the broker's marker writer).
void BM_RawTransactionAppends(benchmark::State& state) {
  RemoveOnExit remove{FreshDir("raw")};
  TxnLogs logs(remove.dir);
  TransactionMetadata txn;
  txn.transactional_id = "bench-producer";
  txn.producer_id = 7;
  txn.producer_epoch = 0;
  txn.timeout_ms = kTimeoutMs;
  txn.partitions = AllDataPartitions();
  const Bytes key = EncodeTransactionLogKey(txn.transactional_id);
  const int32_t partition = OffsetsPartitionFor(txn.transactional_id, kStatePartitions);
  int64_t transactions = 0;
  for (auto _ : state) {
    for (TransactionState s : {TransactionState::kOngoing, TransactionState::kPrepareCommit,
                               TransactionState::kCompleteCommit}) {
      txn.state = s;
      if (s == TransactionState::kCompleteCommit) txn.partitions.clear();
      RecordInput r;
      r.key = std::string(key.begin(), key.end());
      const Bytes value = EncodeTransactionLogValue(txn);
      r.value = std::string(value.begin(), value.end());
      if (!logs.storage()->Append(partition, {r}, std::nullopt).ok()) {
        Die("append", Status::InvalidArgument("state append"));
      }
      if (s == TransactionState::kPrepareCommit) {
        for (const TopicPartition& tp : AllDataPartitions()) {
          if (Status m = logs.markers()->WriteMarker(tp, txn.producer_id, txn.producer_epoch, true);
              !m.ok()) {
            Die("marker", m);
          }
        }
      }
    }
    txn.partitions = AllDataPartitions();
    ++transactions;
  }
  TransactionRates(state, transactions);
  state.SetLabel("3 state records + 3 markers, no coordinator");
}
BENCHMARK(BM_RawTransactionAppends)->MinTime(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace daruma

BENCHMARK_MAIN();
