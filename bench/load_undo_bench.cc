// What all-or-nothing partition loads cost (issue 25, recovery/load_transaction.h)
// on the start-up that pays for them: many crashed partitions.
//
//   BM_CrashedStart/T   LogManager::Startup of $DARUMA_BENCH_UNDO_PARTITIONS
//                       (default 2,000) crashed partitions with T load threads,
//                       each round once with the undo log and once without
//                       (LogManagerOptions::load_undo_log), alternating, real
//                       fsyncs. Counters: seconds of each, and their ratio.
//
// Crashed shape, as a broker killed mid-write leaves it: one segment per
// partition of 100-byte idempotent batches (two producers, one record each),
// its .index and .timeindex preallocated to 10 MiB (sparse), recovery point
// 0 (at the active segment), no producer snapshot, no clean-shutdown marker.
// Generated once under $TMPDIR without fsync; every round restores the shape
// (truncating the indexes back to their preallocated size, removing the
// snapshots and the marker, zeroing the recovery points), outside the timing.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_data.h"
#include "common/no_sync_file_system.h"
#include "log/log_file_names.h"
#include "log/offset_checkpoint_file.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"

namespace daruma {
namespace {

namespace fs = std::filesystem;
using namespace daruma::bench;  // NOLINT: shared helpers (bench_data.h)

constexpr int kBatchesPerPartition = 200;
constexpr uint64_t kPreallocatedIndexBytes = 10 * 1024 * 1024;

int Partitions() {
  const char* env = std::getenv("DARUMA_BENCH_UNDO_PARTITIONS");
  return env != nullptr && *env != '\0' ? std::atoi(env) : 2000;
}

Bytes IdempotentBatch(int64_t producer_id, int32_t sequence) {
  BatchBuilderOptions options;
  options.producer_id = producer_id;
  options.producer_epoch = 0;
  options.base_sequence = sequence;
  std::vector<RecordInput> records(1);
  records[0].timestamp = kT0 + sequence;
  records[0].key = "k" + std::to_string(sequence % 100);
  records[0].value = std::string(30, 'v');
  auto batch = BuildRecordBatch(options, records);
  if (!batch.ok()) Die("building a batch", batch.status());
  return *batch;
}

std::string PartitionName(int p) {
  return "crashed-" + std::to_string(p);
}

// Puts the crashed shape back (see the file comment).
void RestoreCrashedShape(const std::string& dir, int partitions) {
  fs::remove(dir + "/.kafka_cleanshutdown");
  OffsetMap zeros;
  for (int p = 0; p < partitions; ++p) {
    const std::string part = dir + "/" + PartitionName(p);
    for (const auto& e : fs::directory_iterator(part)) {
      if (e.path().extension() == ".snapshot") fs::remove(e.path());
    }
    for (const std::string& index : {OffsetIndexFileName(part, 0), TimeIndexFileName(part, 0)}) {
      if (::truncate(index.c_str(), 0) != 0 ||
          ::truncate(index.c_str(), off_t(kPreallocatedIndexBytes)) != 0) {
        Die("truncating " + index, Status::IoError("truncate failed"));
      }
    }
    zeros[TopicPartition{"crashed", p}] = 0;
  }
  auto cp = OffsetCheckpointFile::Open(dir + "/" + kRecoveryPointCheckpointFile,
                                       NoSyncFileSystem::Instance());
  if (!cp.ok()) Die("opening the checkpoint", cp.status());
  if (Status s = cp->Write(zeros); !s.ok()) Die("writing the checkpoint", s);
}

const std::string& CrashedDir() {
  static const std::string dir = [] {
    const int partitions = Partitions();
    const std::string d = TmpRoot() + "/daruma-bench-crashed-" + std::to_string(partitions);
    const std::string last = d + "/" + PartitionName(partitions - 1);
    if (!fs::exists(last)) {
      std::fprintf(stderr, "load_undo_bench: generating %s\n", d.c_str());
      fs::remove_all(d);
      fs::create_directories(d);
      ManualClock clock(kT0);
      FileSystem* no_sync = NoSyncFileSystem::Instance();
      for (int p = 0; p < partitions; ++p) {
        auto log = Log::CreateEmpty(no_sync, d + "/" + PartitionName(p),
                                    TopicPartition{"crashed", p}, LogConfig{}, &clock);
        if (!log.ok()) Die("creating a log", log.status());
        for (int b = 0; b < kBatchesPerPartition; ++b) {
          const Bytes batch = IdempotentBatch(1000 + b % 2, b / 2);
          if (auto a = (*log)->AppendAsLeader(batch, 0); !a.ok()) Die("appending", a.status());
        }
        if (Status st = (*log)->Close(); !st.ok()) Die("closing", st);
      }
      ::sync();
    }
    return d;
  }();
  return dir;
}

double TimedStart(const std::string& dir, int threads, bool undo) {
  RestoreCrashedShape(dir, Partitions());
  NoSyncFileSystem fs;
  fs.set_syncs(true);  // the start is measured with its real fsyncs
  LogManagerOptions options;
  options.fs = &fs;
  options.load_undo_log = undo;
  LogManager manager(options);
  const auto start = std::chrono::steady_clock::now();
  if (Status s = manager.Startup({dir}, LogConfig{}, threads); !s.ok()) Die("startup", s);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (manager.HasFailures()) Die("crashed start", Status::Corruption(manager.ReportJson().dump()));
  fs.set_syncs(false);
  if (Status s = manager.Shutdown(); !s.ok()) Die("shutdown", s);
  return seconds;
}

void BM_CrashedStart(benchmark::State& state) {
  const std::string& dir = CrashedDir();
  const int threads = int(state.range(0));
  double with_undo = 0, without = 0;
  int rounds = 0;
  for (auto _ : state) {
    const double plain = TimedStart(dir, threads, false);
    const double undo = TimedStart(dir, threads, true);
    without += plain;
    with_undo += undo;
    ++rounds;
    state.SetIterationTime(undo);
  }
  state.counters["partitions"] = Partitions();
  state.counters["undo_log_s"] = with_undo / rounds;
  state.counters["no_undo_log_s"] = without / rounds;
  state.counters["undo_over_plain"] = with_undo / without;
  std::fprintf(stderr,
               "load_undo_bench: %d crashed partitions, %d thread(s), %d rounds: %.3f s with the "
               "undo log, %.3f s without (x%.2f)\n",
               Partitions(), threads, rounds, with_undo / rounds, without / rounds,
               with_undo / without);
}

BENCHMARK(BM_CrashedStart)->Arg(2)->Iterations(5)->Unit(benchmark::kMillisecond)->UseManualTime();

}  // namespace
}  // namespace daruma

BENCHMARK_MAIN();
