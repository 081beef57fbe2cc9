// `daruma check` throughput (issue 5's benchmark targets), through the same
// CheckLogDir the command runs, with --threads 1 (one partition at a time;
// its plan and segment pass run side by side on two threads, and a third
// issues the read-ahead, see recovery/log_checker.h):
//
//   BM_DiskReadCold    plain read() loop over every file of the partition after
//                      posix_fadvise(DONTNEED) on each: the disk's sequential
//                      read rate, the baseline of the cold check
//   BM_CheckCold/N     check after the same DONTNEED, dropping pages as it
//                      reads (as the CLI does); counter `of_disk` = its rate /
//                      BM_DiskReadCold's (target >= 0.9); N = MiB of WillNeed
//                      read-ahead (0, the default, or 256)
//   BM_CheckWarm       check with every page cached and kept (target >= 2 GB/s)
//
// Data: bench_data.h's partition of $DARUMA_BENCH_CHECK_MIB MiB (default
// 1024) of ~1 KiB batches in 128 MiB segments, shared with recovery_bench.
// Bytes processed = the `.log` bytes. Every run must find the dir clean.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "bench_data.h"
#include "recovery/log_checker.h"

namespace daruma {
namespace {

using namespace daruma::bench;  // NOLINT: bench helpers

int64_t CheckBytes() {
  const char* mib = std::getenv("DARUMA_BENCH_CHECK_MIB");
  return int64_t(mib && *mib ? std::atoi(mib) : 1024) << 20;
}

const std::string& Dir() {
  static const std::string dir = BigPartitionDir(CheckBytes());
  return dir;
}

std::vector<std::string> AllFiles() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(Dir())) {
    if (e.is_regular_file()) out.push_back(e.path());
  }
  return out;
}

int64_t LogBytes() {
  int64_t total = 0;
  for (const std::string& p : FilesWithSuffix(Dir() + "/bench-0", ".log")) {
    total += int64_t(std::filesystem::file_size(p));
  }
  return total;
}

// Writes back and drops every cached page of every file of the dir.
void DropCaches() {
  for (const std::string& path : AllFiles()) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

// Reads every file of the dir with 1 MiB read() calls; returns the bytes.
int64_t ReadAll() {
  static std::vector<char> buffer(1 << 20);
  int64_t bytes = 0;
  for (const std::string& path : AllFiles()) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) std::abort();
    for (ssize_t n; (n = ::read(fd, buffer.data(), buffer.size())) > 0;) bytes += n;
    ::close(fd);
  }
  return bytes;
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Check(bool drop_cache, int64_t read_ahead_bytes = 0) {
  CheckOptions o;
  o.threads = 1;
  o.drop_cache = drop_cache;
  o.read_ahead_bytes = read_ahead_bytes;
  o.config = BenchConfig();
  auto result = CheckLogDir(Dir(), o);
  if (!result.ok()) Die("check", result.status());
  if (result->HasProblems()) {
    Die("check", Status::Corruption("the bench dir is not clean: " + ToJson(*result).dump()));
  }
}

double g_disk_bytes_per_second = 0;

void BM_DiskReadCold(benchmark::State& state) {
  int64_t bytes = 0;
  double seconds = 0;
  for (auto _ : state) {
    DropCaches();
    const auto start = std::chrono::steady_clock::now();
    bytes += ReadAll();
    const double s = Seconds(start);
    seconds += s;
    state.SetIterationTime(s);
  }
  g_disk_bytes_per_second = double(bytes) / seconds;
  state.SetBytesProcessed(bytes);
}

void BM_CheckCold(benchmark::State& state) {
  const int64_t log_bytes = LogBytes();
  double seconds = 0;
  for (auto _ : state) {
    DropCaches();
    const auto start = std::chrono::steady_clock::now();
    Check(/*drop_cache=*/true, /*read_ahead_bytes=*/state.range(0) << 20);
    const double s = Seconds(start);
    seconds += s;
    state.SetIterationTime(s);
  }
  // The baseline read every file (indexes and snapshots too): compare rates
  // over the same bytes.
  const double all_bytes = double(ReadAll()) * double(state.iterations());
  if (g_disk_bytes_per_second > 0) {
    state.counters["of_disk"] = (all_bytes / seconds) / g_disk_bytes_per_second;
  }
  state.SetBytesProcessed(log_bytes * int64_t(state.iterations()));
}

void BM_CheckWarm(benchmark::State& state) {
  const int64_t log_bytes = LogBytes();
  ReadAll();  // cache every page
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    Check(/*drop_cache=*/false);
    state.SetIterationTime(Seconds(start));
  }
  state.SetBytesProcessed(log_bytes * int64_t(state.iterations()));
}

BENCHMARK(BM_DiskReadCold)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(2);
// Arg: CheckOptions::read_ahead_bytes in MiB (0 = the kernel's readahead only).
BENCHMARK(BM_CheckCold)
    ->Arg(0)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(2);
BENCHMARK(BM_CheckWarm)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(3);

}  // namespace
}  // namespace daruma

BENCHMARK_MAIN();
