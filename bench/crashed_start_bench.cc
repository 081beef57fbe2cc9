// Start-ups of many partitions, the shapes of issue 23, each measured with
// batched syncs (LogManagerOptions::batch_syncs: one syncfs per log dir at
// start-up and shutdown, undo records written ahead) beside the per-file
// fsyncs of before as the baseline, in the same run, through the real file
// system with real fsyncs.
//
//   BM_CrashedStart/T/M/B  LogManager::Startup to "ready" of
//        $DARUMA_BENCH_CRASHED_PARTITIONS (default 1,000) crashed partitions
//        x 4 segments with T load threads. M=0: the active segment's .index
//        and .timeindex preallocated (sparse 10 MiB) as a killed broker
//        leaves them, recovery point at the active segment, no snapshot at
//        the log end; M=1: the same with every .index and .timeindex
//        missing. B=1 batched, B=0 the baseline. Counters: seconds, ms per
//        partition, file fsyncs, directory fsyncs and syncfs calls per start,
//        peak descriptors of the start.
//   BM_CleanRestart/T/B   one clean start to ready and its clean shutdown
//        (what `daruma recover` does on a clean dir) of
//        $DARUMA_BENCH_CLEAN_PARTITIONS (default 10,000) partitions x 4
//        segments. Counters: start, shutdown and total seconds, fsyncs.
//
// $DARUMA_BENCH_NO_UNDO=1 turns the load's undo log off (LogManagerOptions::
// load_undo_log), to measure what it costs; never so in production.
// $DARUMA_BENCH_PERF_CTL=FIFO profiles only the starts: run the bench under
// `perf record --control fifo:FIFO -D -1`.
//
// Each partition's segments hold 8 batches of ~1 KiB from one idempotent
// producer. Data sets are generated once under $TMPDIR without fsync; every
// round of BM_CrashedStart restores the crashed shape outside the timing.
// The restore deletes files (snapshots at the log end, indexes for M=1): on
// an ext4 without a journal, the kernel then skips each freed inode for 60 s
// when it allocates one (recently_deleted()), which the next start pays for
// as it creates files; an ext4 with its default journal does not.
// The allocator is tuned as the daruma binary tunes it.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "bench_data.h"
#include "common/allocator_tuning.h"
#include "common/forwarding_file_system.h"
#include "common/no_sync_file_system.h"
#include "log/log_file_names.h"
#include "log/offset_checkpoint_file.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"

namespace daruma {
namespace {

namespace fs = std::filesystem;
using namespace daruma::bench;  // NOLINT: shared helpers (bench_data.h)

constexpr int kSegments = 4;
constexpr int kBatchesPerSegment = 8;
constexpr uint64_t kPreallocatedIndexBytes = 10 * 1024 * 1024;

int EnvInt(const char* name, int fallback) {
  const char* env = std::getenv(name);
  return env != nullptr && *env != '\0' ? std::atoi(env) : fallback;
}

int CrashedPartitions() {
  return EnvInt("DARUMA_BENCH_CRASHED_PARTITIONS", 1000);
}
int CleanPartitions() {
  return EnvInt("DARUMA_BENCH_CLEAN_PARTITIONS", 10000);
}

Bytes IdempotentKiBBatch(int32_t sequence) {
  BatchBuilderOptions options;
  options.producer_id = 4242;
  options.producer_epoch = 0;
  options.base_sequence = sequence;
  std::vector<RecordInput> records(8);
  for (int i = 0; i < 8; ++i) {
    records[size_t(i)].timestamp = kT0 + sequence + i;
    records[size_t(i)].key = "key-" + std::to_string(i);
    records[size_t(i)].value = std::string(100, char('a' + i));
  }
  auto batch = BuildRecordBatch(options, records);
  if (!batch.ok()) Die("building a batch", batch.status());
  return *batch;
}

// What the start-up asks of the file system: syncs of each kind, and the
// files open at once (each one descriptor), below the manager's cache.
class CountingFileSystem final : public ForwardingFileSystem {
 public:
  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    DARUMA_ASSIGN_OR_RETURN(auto file, base()->Open(path, mode));
    return std::unique_ptr<File>(new CountedFile(this, std::move(file)));
  }
  Result<std::vector<uint8_t>> ReadFile(const std::string& path) override {
    return FileSystem::ReadFile(path);  // through Open: counted
  }
  Status SyncDir(const std::string& path) override {
    ++dir_syncs;
    return base()->SyncDir(path);
  }
  Status SyncFileSystem(const std::string& path) override {
    ++fs_syncs;
    return base()->SyncFileSystem(path);
  }
  void Reset() {
    file_syncs = dir_syncs = fs_syncs = 0;
    peak.store(live.load());
  }

  std::atomic<int64_t> file_syncs{0}, dir_syncs{0}, fs_syncs{0};
  std::atomic<int> live{0}, peak{0};

 private:
  class CountedFile final : public ForwardingFile {
   public:
    CountedFile(CountingFileSystem* owner, std::unique_ptr<File> file)
        : ForwardingFile(std::move(file)), owner_(owner) {
      const int now = ++owner_->live;
      int p = owner_->peak.load();
      while (now > p && !owner_->peak.compare_exchange_weak(p, now)) {
      }
    }
    ~CountedFile() override { --owner_->live; }
    Status Sync() override {
      ++owner_->file_syncs;
      return base()->Sync();
    }
    int fd() const override { return base()->fd(); }
    Result<std::unique_ptr<WritableMappedRegion>> MapForAppend(uint64_t pos, size_t len,
                                                               AppendFaults faults) override {
      return base()->MapForAppend(pos, len, faults);
    }

   private:
    CountingFileSystem* owner_;
  };
};

std::string PartitionName(int p) {
  return "shape-" + std::to_string(p);
}

// `partitions` x 4 segments, written without fsync; the logs are closed
// (trimmed indexes, snapshots at each roll), no marker, no checkpoints.
void GeneratePartitions(const std::string& dir, int partitions) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  ManualClock clock(kT0);
  FileSystem* no_sync = NoSyncFileSystem::Instance();
  std::vector<Bytes> batches;
  for (int b = 0; b < kSegments * kBatchesPerSegment; ++b)
    batches.push_back(IdempotentKiBBatch(b * 8));
  for (int p = 0; p < partitions; ++p) {
    auto log = Log::CreateEmpty(no_sync, dir + "/" + PartitionName(p), TopicPartition{"shape", p},
                                LogConfig{}, &clock);
    if (!log.ok()) Die("creating a log", log.status());
    for (int s = 0; s < kSegments; ++s) {
      if (s > 0) {
        if (Status st = (*log)->Roll(); !st.ok()) Die("rolling", st);
      }
      for (int b = 0; b < kBatchesPerSegment; ++b) {
        auto a = (*log)->AppendAsLeader(batches[size_t(s * kBatchesPerSegment + b)], 0);
        if (!a.ok()) Die("appending", a.status());
      }
    }
    if (Status st = (*log)->Close(); !st.ok()) Die("closing", st);
  }
}

const std::string& CrashedDir() {
  static const std::string dir = [] {
    const int partitions = CrashedPartitions();
    const std::string d = TmpRoot() + "/daruma-bench-crashed4-" + std::to_string(partitions);
    const std::string done = d + ".generated";  // beside the log dir, not in it
    if (!fs::exists(done)) {
      std::fprintf(stderr, "crashed_start_bench: generating %s\n", d.c_str());
      GeneratePartitions(d, partitions);
      std::FILE* f = std::fopen(done.c_str(), "w");
      if (f != nullptr) std::fclose(f);
      ::sync();
    }
    return d;
  }();
  return dir;
}

// Puts the crashed shape back (see the file comment): the active segment's
// indexes preallocated and empty (or all indexes gone), no snapshot at the
// log end, recovery point at the active segment, no marker.
void RestoreCrashedShape(const std::string& dir, int partitions, bool missing_indexes) {
  fs::remove(dir + "/.kafka_cleanshutdown");
  OffsetMap recovery_points;
  constexpr int64_t kActiveBase = int64_t(kBatchesPerSegment) * 8 * (kSegments - 1);
  constexpr int64_t kLogEnd = int64_t(kBatchesPerSegment) * 8 * kSegments;
  for (int p = 0; p < partitions; ++p) {
    const std::string part = dir + "/" + PartitionName(p);
    fs::remove(ProducerSnapshotFileName(part, kLogEnd));
    for (int s = 0; s < kSegments; ++s) {
      const int64_t base = int64_t(kBatchesPerSegment) * 8 * s;
      // Preallocated as Kafka does: segment.index.bytes rounded down to
      // whole entries (8 bytes for .index, 12 for .timeindex).
      for (const auto& [index, preallocated] :
           {std::pair{OffsetIndexFileName(part, base), kPreallocatedIndexBytes / 8 * 8},
            std::pair{TimeIndexFileName(part, base), kPreallocatedIndexBytes / 12 * 12}}) {
        if (missing_indexes) {
          fs::remove(index);
        } else if (base == kActiveBase) {
          if (::truncate(index.c_str(), 0) != 0 ||
              ::truncate(index.c_str(), off_t(preallocated)) != 0) {
            std::FILE* f = std::fopen(index.c_str(), "w");  // recreate a missing one
            if (f != nullptr) std::fclose(f);
            if (::truncate(index.c_str(), off_t(preallocated)) != 0) {
              Die("truncating " + index, Status::IoError("truncate failed"));
            }
          }
        }
      }
    }
    recovery_points[TopicPartition{"shape", p}] = kActiveBase;
  }
  auto cp = OffsetCheckpointFile::Open(dir + "/" + kRecoveryPointCheckpointFile,
                                       NoSyncFileSystem::Instance());
  if (!cp.ok()) Die("opening the checkpoint", cp.status());
  if (Status s = cp->Write(recovery_points); !s.ok()) Die("writing the checkpoint", s);
  ::sync();  // the restored shape reaches the disk outside the measurement
}

struct StartResult {
  double start_s = 0;
  double shutdown_s = 0;
  int64_t file_syncs = 0, dir_syncs = 0, fs_syncs = 0;
  int peak_files = 0;
};

// With $DARUMA_BENCH_PERF_CTL naming the control fifo of `perf record
// --control fifo:CTL -D -1`, only the starts are profiled.
void PerfControl(const char* command) {
  static std::FILE* ctl = [] {
    const char* path = std::getenv("DARUMA_BENCH_PERF_CTL");
    return path != nullptr && *path != '\0' ? std::fopen(path, "w") : nullptr;
  }();
  if (ctl == nullptr) return;
  std::fprintf(ctl, "%s\n", command);
  std::fflush(ctl);
}

StartResult StartAndShutDown(const std::string& dir, int threads, bool batch, int partitions) {
  CountingFileSystem counting;
  LogManagerOptions options;
  options.fs = &counting;
  options.batch_syncs = batch;
  if (std::getenv("DARUMA_BENCH_NO_UNDO")) options.load_undo_log = false;
  LogManager manager(options);
  StartResult r;
  counting.Reset();
  PerfControl("enable");
  auto t0 = std::chrono::steady_clock::now();
  if (Status s = manager.Startup({dir}, LogConfig{}, threads); !s.ok()) Die("startup", s);
  auto t1 = std::chrono::steady_clock::now();
  PerfControl("disable");
  r.start_s = std::chrono::duration<double>(t1 - t0).count();
  r.file_syncs = counting.file_syncs;
  r.dir_syncs = counting.dir_syncs;
  r.fs_syncs = counting.fs_syncs;
  r.peak_files = counting.peak;
  if (manager.HasFailures()) Die("start", Status::Corruption(manager.ReportJson().dump()));
  if (manager.report().partitions.size() != size_t(partitions)) {
    Die("start", Status::Corruption("not every partition was loaded"));
  }
  counting.Reset();
  t0 = std::chrono::steady_clock::now();
  if (Status s = manager.Shutdown(); !s.ok()) Die("shutdown", s);
  r.shutdown_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void Report(benchmark::State& state, const char* what, int partitions, const StartResult& sum,
            int rounds) {
  const double n = std::max(1, rounds);
  state.counters["partitions"] = partitions;
  state.counters["start_s"] = sum.start_s / n;
  state.counters["ms_per_partition"] = sum.start_s / n * 1000.0 / partitions;
  state.counters["shutdown_s"] = sum.shutdown_s / n;
  state.counters["file_fsyncs"] = double(sum.file_syncs) / n;
  state.counters["dir_fsyncs"] = double(sum.dir_syncs) / n;
  state.counters["syncfs"] = double(sum.fs_syncs) / n;
  state.counters["peak_files"] = sum.peak_files;
  std::fprintf(stderr,
               "crashed_start_bench: %s, %d partitions: start %.3f s (%.3f ms/partition), "
               "shutdown %.3f s, %.0f file fsyncs, %.0f dir fsyncs, %.0f syncfs, peak %d files\n",
               what, partitions, sum.start_s / n, sum.start_s / n * 1000.0 / partitions,
               sum.shutdown_s / n, double(sum.file_syncs) / n, double(sum.dir_syncs) / n,
               double(sum.fs_syncs) / n, sum.peak_files);
}

void Accumulate(StartResult* sum, const StartResult& r) {
  sum->start_s += r.start_s;
  sum->shutdown_s += r.shutdown_s;
  sum->file_syncs += r.file_syncs;
  sum->dir_syncs += r.dir_syncs;
  sum->fs_syncs += r.fs_syncs;
  sum->peak_files = std::max(sum->peak_files, r.peak_files);
}

void BM_CrashedStart(benchmark::State& state) {
  const std::string& dir = CrashedDir();
  const int partitions = CrashedPartitions();
  const int threads = int(state.range(0));
  const bool missing = state.range(1) != 0;
  const bool batch = state.range(2) != 0;
  StartResult sum;
  int rounds = 0;
  for (auto _ : state) {
    RestoreCrashedShape(dir, partitions, missing);
    const StartResult r = StartAndShutDown(dir, threads, batch, partitions);
    state.SetIterationTime(r.start_s);
    Accumulate(&sum, r);
    ++rounds;
  }
  const std::string what = std::string(batch ? "batched" : "per-file fsyncs (baseline)") +
                           ", crashed x4 segments" + (missing ? ", indexes missing" : "") + ", " +
                           std::to_string(threads) + " thread(s)";
  Report(state, what.c_str(), partitions, sum, rounds);
}

const std::string& CleanDir() {
  static const std::string dir = [] {
    const int partitions = CleanPartitions();
    const std::string d = TmpRoot() + "/daruma-bench-clean4-" + std::to_string(partitions);
    if (!fs::exists(d + "/.kafka_cleanshutdown")) {
      std::fprintf(stderr, "crashed_start_bench: generating %s\n", d.c_str());
      GeneratePartitions(d, partitions);
      LogManagerOptions options;
      options.fs = NoSyncFileSystem::Instance();
      LogManager manager(options);
      if (Status s = manager.Startup({d}, LogConfig{}, 2); !s.ok()) Die("startup", s);
      if (Status s = manager.Shutdown(); !s.ok()) Die("shutdown", s);
      ::sync();
    }
    return d;
  }();
  return dir;
}

void BM_CleanRestart(benchmark::State& state) {
  const std::string& dir = CleanDir();
  const int partitions = CleanPartitions();
  const int threads = int(state.range(0));
  const bool batch = state.range(1) != 0;
  StartAndShutDown(dir, threads, batch, partitions);  // warm the page cache
  StartResult sum;
  int rounds = 0;
  for (auto _ : state) {
    const StartResult r = StartAndShutDown(dir, threads, batch, partitions);
    state.SetIterationTime(r.start_s + r.shutdown_s);
    Accumulate(&sum, r);
    ++rounds;
  }
  const std::string what = std::string(batch ? "batched" : "per-file fsyncs (baseline)") +
                           ", clean start + shutdown, " + std::to_string(threads) + " thread(s)";
  Report(state, what.c_str(), partitions, sum, rounds);
}

BENCHMARK(BM_CrashedStart)
    ->ArgsProduct({{1, 2}, {0, 1}, {1, 0}})
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();
BENCHMARK(BM_CleanRestart)
    ->ArgsProduct({{2}, {1, 0}})
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

}  // namespace
}  // namespace daruma

int main(int argc, char** argv) {
  daruma::TuneAllocator();  // as the daruma binary does (common/allocator_tuning.h)
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
