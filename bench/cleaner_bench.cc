// Log cleaner throughput: MB/s of dirty log compacted by one round
// (LogCleaner::CleanOnce), for 1 KiB records of which 10 % of keys are unique,
// written 16 records per uncompressed batch into 16 MiB segments under
// $TMPDIR (default /tmp). The figure covers clearing and building the offset
// map (Kafka's 128 MiB default), rewriting every dirty segment, flushing and
// swapping them in, and deleting the replaced files; the log is rebuilt
// outside the timed region before each round.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/file_system.h"
#include "log/log.h"
#include "log/log_cleaner.h"
#include "record/record_batch_builder.h"

namespace daruma {
namespace {

constexpr int64_t kT0 = 1700000000000;
constexpr size_t kValueBytes = 1000;  // ~1 KiB per record with key and framing
constexpr int kRecordsPerBatch = 16;

// Dirty bytes per round: $DARUMA_BENCH_CLEAN_MIB MiB (default 64).
int64_t DirtyBytes() {
  const char* mib = std::getenv("DARUMA_BENCH_CLEAN_MIB");
  return int64_t(mib && *mib ? std::atoi(mib) : 64) << 20;
}

class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/daruma-bench-XXXXXX";
    path_ = ::mkdtemp(pattern.data()) ? pattern : "";
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes `bytes` of 1 KiB records whose keys are drawn (pseudo-randomly) from
// records / 10 distinct keys, then rolls so all of it is dirty and cleanable.
std::unique_ptr<Log> BuildDirtyLog(const std::string& dir, Clock* clock, int64_t bytes) {
  LogConfig config;
  config.segment_bytes = 16 << 20;
  config.compact = true;
  auto log = Log::CreateEmpty(FileSystem::Default(), dir + "/bench-0", TopicPartition{"bench", 0},
                              config, clock);
  if (!log.ok()) std::abort();
  const int64_t records = bytes / 1024;
  const int64_t unique_keys = records / 10;
  uint64_t rng = 88172645463325252ull;
  const std::string value(kValueBytes, 'v');
  for (int64_t written = 0; written < records; written += kRecordsPerBatch) {
    std::vector<RecordInput> batch;
    for (int i = 0; i < kRecordsPerBatch; ++i) {
      rng ^= rng << 13;
      rng ^= rng >> 7;
      rng ^= rng << 17;
      RecordInput r;
      r.timestamp = kT0;
      r.key = "key-" + std::to_string(rng % uint64_t(unique_keys));
      r.value = value;
      batch.push_back(std::move(r));
    }
    auto built = BuildRecordBatch({}, batch);
    if (!built.ok() || !(*log)->AppendAsLeaderInPlace(*built, 0).ok()) std::abort();
  }
  if (!(*log)->Roll().ok()) std::abort();
  (*log)->UpdateHighWatermark((*log)->log_end_offset());
  return std::move(*log);
}

void BM_CleanDirtyLog(benchmark::State& state) {
  ManualClock clock(kT0);
  const int64_t dirty = DirtyBytes();
  int64_t bytes = 0;
  int64_t written = 0;
  // One cleaner for all rounds, as a broker has: its offset map is allocated
  // once (the first round also pays for faulting its pages in).
  CleanerConfig config;  // Kafka's defaults: 128 MiB offset map, no throttle
  LogCleaner cleaner(FileSystem::Default(), config, &clock);
  for (auto _ : state) {
    state.PauseTiming();
    auto dir = std::make_unique<ScratchDir>();
    auto log = BuildDirtyLog(dir->path(), &clock, dirty);
    cleaner.AddLog(log.get());
    const int64_t size = log->size_in_bytes();
    state.ResumeTiming();
    auto stats = cleaner.CleanOnce(log.get(), kT0);
    if (!stats.ok() || !stats->cleaned) {
      state.SkipWithError(stats.ok() ? "nothing cleaned" : stats.status().ToString().c_str());
      break;
    }
    bytes += size;
    written += stats->bytes_written;
    state.PauseTiming();
    cleaner.RemoveLog(log.get());
    log.reset();
    dir.reset();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(bytes);
  state.counters["kept_ratio"] = bytes ? double(written) / double(bytes) : 0;
}
BENCHMARK(BM_CleanDirtyLog)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

}  // namespace
}  // namespace daruma

BENCHMARK_MAIN();
