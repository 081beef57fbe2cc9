// Start-up recovery throughput (issue 4's benchmark list), through the same
// LogManager::Startup a broker and `daruma recover` run:
//
//   BM_ReadCrcBaseline/T        read() + one CRC-32C pass over the partition's .log files,
//                               T threads sharing the files: what the machine allows
//   BM_RecoverUnclean/T         no clean-shutdown marker, recovery point 0: every batch
//                               validated and every index rebuilt, T recovery threads
//   BM_RecoverMissingIndexes/T  clean shutdown, but every .index/.timeindex deleted
//   BM_RecoverUncleanMissingIndexes/T  both (Kafka scans such segments twice; Daruma once)
//   BM_CleanStart10k            clean start of 10,000 partitions x 4 segments
//
// With T = 2 the one partition gets both recovery threads (its segments are
// scanned two at a time ahead of the sequential fold, log_loader.h); the T = 2
// runs report `speedup_vs_1_thread` against 1-thread runs interleaved with
// theirs (also printed to stderr). The baseline's own 2-thread speedup is the
// ceiling for recovery's: both are bound by the same copy and CRC work.
//
// Data: one partition of $DARUMA_BENCH_RECOVERY_MIB MiB (default 1024) of ~1 KiB
// uncompressed non-transactional batches in 128 MiB segments (bench_data.h,
// shared with check_bench), and the 10k-partition
// dir; both generated once under $TMPDIR and reused. Everything runs from the page
// cache (each data set is read once before measuring). Each recovery benchmark
// also reports the peak RSS of a child process that ran the same recovery once
// (counter `peak_rss_mib`), since this process's own peak mixes every benchmark,
// and `cpu_ms`, the CPU time (all threads, user + system) of one Startup: on a
// busy machine the wall time also counts waiting for other processes, and the
// 1- and 2-thread runs should cost the same CPU.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench_data.h"
#include "common/clock.h"
#include "common/crc32c.h"
#include "common/file_system.h"
#include "common/no_sync_file_system.h"
#include "log/log.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"
#include "recovery_support.h"

namespace daruma {
namespace {

namespace fs = std::filesystem;

using namespace daruma::bench;  // NOLINT: the shared data set (bench_data.h)

constexpr int kCleanStartPartitions = 10000;
constexpr int kCleanStartSegments = 4;

int64_t RecoveryBytes() {
  const char* mib = std::getenv("DARUMA_BENCH_RECOVERY_MIB");
  return int64_t(mib && *mib ? std::atoi(mib) : 1024) << 20;
}

const std::string& BigLogDir() {
  static const std::string dir = [] {
    const std::string d = BigPartitionDir(RecoveryBytes());
    ReadAndCrc(FilesWithSuffix(d + "/bench-0", ".log"));  // warm the page cache
    return d;
  }();
  return dir;
}

// The state a scenario starts from. Recovery writes the marker and the
// checkpoints back, so each iteration re-creates its starting state.
struct Scenario {
  bool unclean = false;
  bool missing_indexes = false;
};

void Prepare(const std::string& log_dir, const Scenario& scenario) {
  if (scenario.unclean) {
    fs::remove(log_dir + "/.kafka_cleanshutdown");
    fs::remove(log_dir + "/" + kRecoveryPointCheckpointFile);
  } else if (!fs::exists(log_dir + "/.kafka_cleanshutdown")) {
    Die("preparing", Status::Corruption("no clean-shutdown marker in " + log_dir));
  }
  if (scenario.missing_indexes) {
    for (const char* suffix : {".index", ".timeindex"}) {
      for (const std::string& path : FilesWithSuffix(log_dir + "/bench-0", suffix)) {
        fs::remove(path);
      }
    }
  }
}

// One timed Startup; adds its CPU seconds (all threads) to *cpu_seconds.
int64_t Recover(const std::string& log_dir, int threads, double* cpu_seconds = nullptr) {
  LogManager manager;
  const double cpu_before = ProcessCpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  if (Status s = manager.Startup({log_dir}, BenchConfig(), threads); !s.ok()) Die("startup", s);
  if (cpu_seconds != nullptr) *cpu_seconds += ProcessCpuSeconds() - cpu_before;
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  if (manager.HasFailures()) Die("recovery", Status::Corruption(manager.ReportJson().dump()));
  if (Status s = manager.Shutdown(); !s.ok()) Die("shutdown", s);
  return ns;
}

// The T = 2 runs report `speedup_vs_1_thread` from pairs: each iteration
// first runs the same scenario on one thread (not counted in the benchmark's
// time), then on T. This VM's speed drifts from minute to minute, so a
// 1-thread benchmark run a minute earlier says less about the ratio than a
// 1-thread run a second earlier.
double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void ReportSpeedup(benchmark::State& state, const std::string& name, double one_thread_seconds,
                   double seconds) {
  if (seconds <= 0 || one_thread_seconds <= 0) return;
  const double speedup = one_thread_seconds / seconds;
  state.counters["speedup_vs_1_thread"] = speedup;
  const double iterations = double(std::max<int64_t>(1, state.iterations()));
  std::fprintf(stderr,
               "recovery_bench: %s, one partition of %lld MiB: %d threads %.2f GB/s, "
               "1 thread %.2f GB/s in the same iterations, speedup %.2fx\n",
               name.c_str(), static_cast<long long>(RecoveryBytes() >> 20), int(state.range(0)),
               double(RecoveryBytes()) * iterations / seconds / 1e9,
               double(RecoveryBytes()) * iterations / one_thread_seconds / 1e9, speedup);
}

void RunRecoveryBenchmark(benchmark::State& state, const Scenario& scenario,
                          const std::string& name) {
  const std::string& dir = BigLogDir();
  const int threads = int(state.range(0));
  int64_t bytes = 0;
  double seconds = 0;
  double one_thread_seconds = 0;
  double cpu_seconds = 0;
  for (auto _ : state) {
    if (threads > 1) {
      Prepare(dir, scenario);
      one_thread_seconds += double(Recover(dir, 1)) / 1e9;
    }
    Prepare(dir, scenario);
    const int64_t ns = Recover(dir, threads, &cpu_seconds);
    state.SetIterationTime(double(ns) / 1e9);
    seconds += double(ns) / 1e9;
    bytes += RecoveryBytes();
  }
  state.SetBytesProcessed(bytes);
  // CPU time (all threads) per recovery: on a shared machine the wall time
  // also counts waiting for other processes' CPU use; this does not.
  state.counters["cpu_ms"] = cpu_seconds * 1e3 / double(std::max<int64_t>(1, state.iterations()));
  if (threads > 1) ReportSpeedup(state, name, one_thread_seconds, seconds);
  Prepare(dir, scenario);
  state.counters["peak_rss_mib"] = PeakRssMiBOfChild([&] { Recover(dir, threads); });
}

// T threads, each reading every T-th .log file: the ceiling the machine
// puts on a T-thread recovery of the same files (memory bandwidth, the
// page-cache copy, and whatever else the two cores share).
void BM_ReadCrcBaseline(benchmark::State& state) {
  const std::vector<std::string> files = FilesWithSuffix(BigLogDir() + "/bench-0", ".log");
  const size_t threads = size_t(state.range(0));
  int64_t bytes = 0;
  double seconds = 0;
  double one_thread_seconds = 0;
  for (auto _ : state) {
    if (threads > 1) {
      const auto one = std::chrono::steady_clock::now();
      ReadAndCrc(files);
      one_thread_seconds += Seconds(one);
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<uint64_t> read(threads);
    std::vector<std::thread> workers;
    for (size_t t = 1; t < threads; ++t) {
      workers.emplace_back([&, t] { read[t] = ReadAndCrc(files, t, threads); });
    }
    read[0] = ReadAndCrc(files, 0, threads);
    for (auto& w : workers) w.join();
    const double s = Seconds(start);
    state.SetIterationTime(s);
    seconds += s;
    for (uint64_t n : read) bytes += int64_t(n);
  }
  state.SetBytesProcessed(bytes);
  if (threads > 1) ReportSpeedup(state, "BM_ReadCrcBaseline", one_thread_seconds, seconds);
}

void BM_RecoverUnclean(benchmark::State& state) {
  RunRecoveryBenchmark(state, {true, false}, "BM_RecoverUnclean");
}
void BM_RecoverMissingIndexes(benchmark::State& state) {
  RunRecoveryBenchmark(state, {false, true}, "BM_RecoverMissingIndexes");
}
void BM_RecoverUncleanMissingIndexes(benchmark::State& state) {
  RunRecoveryBenchmark(state, {true, true}, "BM_RecoverUncleanMissingIndexes");
}

// ---- BM_CleanStart10k (issues #3, #4) ----------------------------------------
//
// 10,000 partitions x 4 segments of one ~1 KiB batch each, with their indexes,
// producer snapshots, checkpoints and the clean-shutdown marker: 40,000 .log
// and 80,000 index files, more than `ulimit -n` (20,000 here). Generated once
// without fsync (common/no_sync_file_system.h). Measured: LogManager::Startup to
// "ready" (every log open) with the default daruma.max.open.files, through
// the real file system. Counters: seconds, descriptors held after the start
// (beyond those before), the manager's max_open_files, and the peak RSS of a
// forked child that ran one start (with the peak reset at the fork, so only
// what the start adds to the parent's small resident set counts; the parent
// returns its freed heap first).
const std::string& ManyPartitionsDir() {
  static const std::string dir = [] {
    const std::string d = TmpRoot() + "/daruma-bench-clean-start-10k";
    // Partitions are written in order, then a LogManager start and clean
    // shutdown adds checkpoints and the marker: an interrupted generation
    // resumes at the manager pass once the last partition exists.
    const std::string last = d + "/many-" + std::to_string(kCleanStartPartitions - 1);
    FileSystem* no_sync = NoSyncFileSystem::Instance();
    if (!fs::exists(last)) {
      std::fprintf(stderr, "recovery_bench: generating %s (40,000 segments)\n", d.c_str());
      fs::remove_all(d);
      fs::create_directories(d);
      ManualClock clock(kT0);
      Bytes batch = KiBBatch();
      for (int p = 0; p < kCleanStartPartitions; ++p) {
        auto log = Log::CreateEmpty(no_sync, d + "/many-" + std::to_string(p),
                                    TopicPartition{"many", p}, LogConfig{}, &clock);
        if (!log.ok()) Die("creating a log", log.status());
        for (int s = 0; s < kCleanStartSegments; ++s) {
          if (s > 0) {
            if (Status st = (*log)->Roll(); !st.ok()) Die("rolling", st);
          }
          if (auto a = (*log)->AppendAsLeader(batch, 0); !a.ok()) Die("appending", a.status());
        }
        if (Status st = (*log)->FlushAll(); !st.ok()) Die("flushing", st);
        if (Status st = (*log)->Close(); !st.ok()) Die("closing", st);
      }
    }
    if (!fs::exists(d + "/.kafka_cleanshutdown")) {
      LogManagerOptions options;
      options.fs = no_sync;
      LogManager manager(options);
      if (Status s = manager.Startup({d}, LogConfig{}, 2); !s.ok()) Die("startup", s);
      if (Status s = manager.Shutdown(); !s.ok()) Die("shutdown", s);
      ::sync();  // the data set reaches the disk once, outside any measurement
    }
    return d;
  }();
  return dir;
}

int OpenDescriptors() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

struct CleanStartResult {
  double seconds = 0;
  int fds_after_start = 0;  // beyond those open before
  size_t max_open_files = 0;
};

// One clean start to "ready", then a clean shutdown (not timed) so the next
// start is clean again.
CleanStartResult CleanStart(const std::string& dir, int threads) {
  NoSyncFileSystem fs;
  fs.set_syncs(true);  // the start is measured with its real fsyncs
  LogManagerOptions options;
  options.fs = &fs;
  LogManager manager(options);
  CleanStartResult result;
  result.max_open_files = options.max_open_files;
  const int before = OpenDescriptors();
  const auto start = std::chrono::steady_clock::now();
  if (Status s = manager.Startup({dir}, LogConfig{}, threads); !s.ok()) Die("startup", s);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.fds_after_start = OpenDescriptors() - before;
  if (manager.HasFailures()) Die("clean start", Status::Corruption(manager.ReportJson().dump()));
  if (manager.report().partitions.size() != size_t(kCleanStartPartitions)) {
    Die("clean start", Status::Corruption("not every partition was loaded"));
  }
  fs.set_syncs(false);  // the data is on disk already; see common/no_sync_file_system.h
  if (Status s = manager.Shutdown(); !s.ok()) Die("shutdown", s);
  return result;
}

// A /proc/self/status field in KiB ("VmRSS", "VmHWM").
double ProcStatusMiB(const std::string& field) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  double kib = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::string(line).starts_with(field + ":")) kib = std::atof(line + field.size() + 1);
  }
  std::fclose(f);
  return kib / 1024.0;
}

// Runs one clean start in a forked child; returns {peak RSS, RSS at the fork}
// of the child in MiB, the peak reset at the fork (Linux clear_refs 5).
std::pair<double, double> CleanStartPeakRssMiB(const std::string& dir, int threads) {
  ::malloc_trim(0);
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {-1, -1};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    if (FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
      std::fputs("5", f);
      std::fclose(f);
    }
    double values[2] = {0, ProcStatusMiB("VmRSS")};
    CleanStart(dir, threads);
    values[0] = ProcStatusMiB("VmHWM");
    if (::write(pipe_fds[1], values, sizeof values) != ssize_t(sizeof values)) std::_Exit(1);
    std::_Exit(0);
  }
  ::close(pipe_fds[1]);
  double values[2] = {-1, -1};
  const bool got = ::read(pipe_fds[0], values, sizeof values) == ssize_t(sizeof values);
  ::close(pipe_fds[0]);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !got) {
    return {-1, -1};
  }
  return {values[0], values[1]};
}

void BM_CleanStart10k(benchmark::State& state) {
  const std::string& dir = ManyPartitionsDir();
  const int threads = int(state.range(0));
  CleanStart(dir, threads);  // warm the page cache (directory entries, inodes)
  CleanStartResult last;
  double seconds = 0;
  for (auto _ : state) {
    last = CleanStart(dir, threads);
    state.SetIterationTime(last.seconds);
    seconds += last.seconds;
  }
  const auto [peak_rss, base_rss] = CleanStartPeakRssMiB(dir, threads);
  state.counters["partitions"] = kCleanStartPartitions;
  state.counters["segments"] = kCleanStartPartitions * kCleanStartSegments;
  state.counters["seconds"] = seconds / double(std::max<int64_t>(1, state.iterations()));
  state.counters["fds_after_start"] = last.fds_after_start;
  state.counters["max_open_files"] = double(last.max_open_files);
  state.counters["peak_rss_mib"] = peak_rss;
  state.counters["rss_at_fork_mib"] = base_rss;
  std::fprintf(stderr,
               "recovery_bench: clean start of %d partitions x %d segments, %d thread(s): "
               "%.3f s, %d descriptors after start (max.open.files %zu), peak RSS %.1f MiB "
               "(%.1f MiB at fork)\n",
               kCleanStartPartitions, kCleanStartSegments, threads,
               seconds / double(std::max<int64_t>(1, state.iterations())), last.fds_after_start,
               last.max_open_files, peak_rss, base_rss);
}

BENCHMARK(BM_ReadCrcBaseline)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_RecoverUnclean)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_RecoverMissingIndexes)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_RecoverUncleanMissingIndexes)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();
BENCHMARK(BM_CleanStart10k)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(3);

}  // namespace
}  // namespace daruma

BENCHMARK_MAIN();
