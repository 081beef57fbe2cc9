// Start-up recovery throughput (issue 4's benchmark list), through the same
// LogManager::Startup a broker and `daruma recover` run:
//
//   BM_ReadCrcBaseline          read() + one CRC-32C pass over the partition's .log files
//   BM_RecoverUnclean/T         no clean-shutdown marker, recovery point 0: every batch
//                               validated and every index rebuilt, T recovery threads
//   BM_RecoverMissingIndexes/T  clean shutdown, but every .index/.timeindex deleted
//   BM_RecoverUncleanMissingIndexes/T  both (Kafka scans such segments twice; Daruma once)
//   BM_CleanStart10k            clean start of 10,000 partitions x 4 segments
//
// Data: one partition of $DARUMA_BENCH_RECOVERY_MIB MiB (default 1024) of ~1 KiB
// uncompressed non-transactional batches in 128 MiB segments, and the 10k-partition
// dir; both generated once under $TMPDIR and reused. Everything runs from the page
// cache (each data set is read once before measuring). Each recovery benchmark
// also reports the peak RSS of a child process that ran the same recovery once
// (counter `peak_rss_mib`), since this process's own peak mixes every benchmark.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/crc32c.h"
#include "common/file_system.h"
#include "log/log.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"

namespace daruma {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kT0 = 1700000000000;
constexpr int32_t kSegmentBytes = 128 << 20;
constexpr int kCleanStartPartitions = 10000;
constexpr int kCleanStartSegments = 4;

int64_t RecoveryBytes() {
  const char* mib = std::getenv("DARUMA_BENCH_RECOVERY_MIB");
  return int64_t(mib && *mib ? std::atoi(mib) : 1024) << 20;
}

std::string TmpRoot() {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp");
}

[[noreturn]] void Die(const std::string& what, const Status& status) {
  std::fprintf(stderr, "recovery_bench: %s: %s\n", what.c_str(), status.ToString().c_str());
  std::abort();
}

// Eight ~118-byte records: a ~1 KiB batch, as in scan_bench and Kafka's baseline.
Bytes KiBBatch() {
  std::vector<RecordInput> records(8);
  for (int i = 0; i < 8; ++i) {
    records[i].timestamp = kT0 + i;
    records[i].key = "key-" + std::to_string(i);
    records[i].value = std::string(100, char('a' + i));
  }
  auto batch = BuildRecordBatch(BatchBuilderOptions{}, records);
  if (!batch.ok()) Die("building a batch", batch.status());
  return *batch;
}

LogConfig BenchConfig() {
  LogConfig config;
  config.segment_bytes = kSegmentBytes;
  return config;
}

// Appends `bytes` of batches to a new log in `log_dir`/bench-0 and shuts the
// manager down cleanly (marker, checkpoints, snapshots), as a broker would.
void GenerateBigPartition(const std::string& log_dir, int64_t bytes) {
  fs::remove_all(log_dir);
  fs::create_directories(log_dir);
  ManualClock clock(kT0);
  auto log = Log::CreateEmpty(FileSystem::Default(), log_dir + "/bench-0",
                              TopicPartition{"bench", 0}, BenchConfig(), &clock);
  if (!log.ok()) Die("creating the log", log.status());
  Bytes batch = KiBBatch();
  for (int64_t written = 0; written < bytes; written += int64_t(batch.size())) {
    auto appended = (*log)->AppendAsLeader(batch, 0);
    if (!appended.ok()) Die("appending", appended.status());
  }
  if (Status s = (*log)->FlushAll(); !s.ok()) Die("flushing", s);
  if (Status s = (*log)->Close(); !s.ok()) Die("closing", s);
  // Let a LogManager write the checkpoints and the marker.
  LogManager manager;
  if (Status s = manager.Startup({log_dir}, BenchConfig(), 1); !s.ok()) Die("startup", s);
  if (Status s = manager.Shutdown(); !s.ok()) Die("shutdown", s);
}

std::vector<std::string> FilesWithSuffix(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > suffix.size() && name.ends_with(suffix)) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

uint64_t ReadAndCrc(const std::vector<std::string>& files) {
  static std::vector<uint8_t> buffer(1 << 20);
  uint64_t bytes = 0;
  uint32_t acc = 0;
  for (const std::string& path : files) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) std::abort();
    for (;;) {
      ssize_t n = ::read(fd, buffer.data(), buffer.size());
      if (n <= 0) break;
      acc ^= Crc32c(buffer.data(), size_t(n));
      bytes += uint64_t(n);
    }
    ::close(fd);
  }
  benchmark::DoNotOptimize(acc);
  return bytes;
}

const std::string& BigLogDir() {
  static const std::string dir = [] {
    const std::string d =
        TmpRoot() + "/daruma-bench-recovery-" + std::to_string(RecoveryBytes() >> 20) + "m";
    if (!fs::exists(d + "/.kafka_cleanshutdown")) {
      std::fprintf(stderr, "recovery_bench: generating %s\n", d.c_str());
      GenerateBigPartition(d, RecoveryBytes());
    }
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

int64_t Recover(const std::string& log_dir, int threads) {
  LogManager manager;
  const auto start = std::chrono::steady_clock::now();
  if (Status s = manager.Startup({log_dir}, BenchConfig(), threads); !s.ok()) Die("startup", s);
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  if (manager.HasFailures()) Die("recovery", Status::Corruption(manager.ReportJson().dump()));
  if (Status s = manager.Shutdown(); !s.ok()) Die("shutdown", s);
  return ns;
}

// Runs `fn` in a child process and returns the child's peak RSS in MiB.
double PeakRssMiBOfChild(const std::function<void()>& fn) {
  pid_t pid = ::fork();
  if (pid == 0) {
    fn();
    std::_Exit(0);
  }
  int status = 0;
  struct rusage usage {};
  if (::wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return -1;
  }
  return double(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

void RunRecoveryBenchmark(benchmark::State& state, const Scenario& scenario) {
  const std::string& dir = BigLogDir();
  const int threads = int(state.range(0));
  int64_t bytes = 0;
  for (auto _ : state) {
    Prepare(dir, scenario);
    const int64_t ns = Recover(dir, threads);
    state.SetIterationTime(double(ns) / 1e9);
    bytes += RecoveryBytes();
  }
  state.SetBytesProcessed(bytes);
  Prepare(dir, scenario);
  state.counters["peak_rss_mib"] = PeakRssMiBOfChild([&] { Recover(dir, threads); });
}

void BM_ReadCrcBaseline(benchmark::State& state) {
  const std::vector<std::string> files = FilesWithSuffix(BigLogDir() + "/bench-0", ".log");
  int64_t bytes = 0;
  for (auto _ : state) bytes += int64_t(ReadAndCrc(files));
  state.SetBytesProcessed(bytes);
}

void BM_RecoverUnclean(benchmark::State& state) {
  RunRecoveryBenchmark(state, {true, false});
}
void BM_RecoverMissingIndexes(benchmark::State& state) {
  RunRecoveryBenchmark(state, {false, true});
}
void BM_RecoverUncleanMissingIndexes(benchmark::State& state) {
  RunRecoveryBenchmark(state, {true, true});
}

// 10,000 partitions x 4 segments of one small batch each, shut down cleanly.
const std::string& ManyPartitionsDir() {
  static const std::string dir = [] {
    const std::string d = TmpRoot() + "/daruma-bench-clean-start-10k";
    if (!fs::exists(d + "/.kafka_cleanshutdown")) {
      std::fprintf(stderr, "recovery_bench: generating %s (40,000 segments)\n", d.c_str());
      fs::remove_all(d);
      fs::create_directories(d);
      ManualClock clock(kT0);
      Bytes batch = KiBBatch();
      for (int p = 0; p < kCleanStartPartitions; ++p) {
        auto log = Log::CreateEmpty(FileSystem::Default(), d + "/many-" + std::to_string(p),
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
      LogManager manager;
      if (Status s = manager.Startup({d}, LogConfig{}, 2); !s.ok()) Die("startup", s);
      if (Status s = manager.Shutdown(); !s.ok()) Die("shutdown", s);
    }
    return d;
  }();
  return dir;
}

void BM_CleanStart10k(benchmark::State& state) {
  const std::string& dir = ManyPartitionsDir();
  const int threads = int(state.range(0));
  Recover(dir, threads);  // warm the page cache (directory entries, index files)
  for (auto _ : state) {
    const int64_t ns = Recover(dir, threads);
    state.SetIterationTime(double(ns) / 1e9);
  }
  state.counters["segments"] = kCleanStartPartitions * kCleanStartSegments;
  state.counters["peak_rss_mib"] = PeakRssMiBOfChild([&] { Recover(dir, threads); });
}

BENCHMARK(BM_ReadCrcBaseline)->Unit(benchmark::kMillisecond)->UseRealTime();
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
