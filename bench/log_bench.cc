// Log throughput: leader appends of 1 KiB batches into the page cache, and
// sequential fetches through Log::Read, in a log under $TMPDIR (default /tmp).
// Targets: append >= 2 GB/s, read >= 5 GB/s. Nothing is fsynced (the default
// flush.messages / flush.ms never flush), as with Kafka's defaults. Appends
// run with Kafka's default `preallocate=false` (one write(2) per append) and
// with `preallocate=true` (stores into a mapped append window, see LogSegment).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "log/log.h"
#include "log/log_segment.h"
#include "record/record_batch_builder.h"

namespace daruma {
namespace {

constexpr int64_t kT0 = 1700000000000;
constexpr size_t kBatchBytes = 1024;
// Bytes written per benchmark run: $DARUMA_BENCH_LOG_MIB MiB (default 256;
// smaller for valgrind runs).
int64_t LogBytes() {
  const char* mib = std::getenv("DARUMA_BENCH_LOG_MIB");
  return int64_t(mib && *mib ? std::atoi(mib) : 256) << 20;
}
const int64_t kLogBytes = LogBytes();

// A fresh directory under $TMPDIR, removed on destruction.
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

// One uncompressed, non-idempotent batch of exactly kBatchBytes bytes.
Bytes OneKiBBatch() {
  BatchBuilderOptions options;
  RecordInput record;
  record.timestamp = kT0;
  record.key = "key";
  for (size_t value = kBatchBytes - 80;; ++value) {
    record.value = std::string(value, 'v');
    auto batch = BuildRecordBatch(options, {record});
    if (!batch.ok()) std::abort();
    if (batch->size() >= kBatchBytes) return *batch;
  }
}

std::unique_ptr<Log> OpenLog(const std::string& dir, Clock* clock, bool preallocate = false) {
  LogConfig config;  // Kafka's defaults: 1 GiB segments, 4 KiB index interval
  config.preallocate = preallocate;
  auto log = Log::CreateEmpty(FileSystem::Default(), dir + "/bench-0", TopicPartition{"bench", 0},
                              config, clock);
  if (!log.ok()) std::abort();
  return std::move(*log);
}

// Appends 1 KiB batches, range(1) of them per call: one per call is the
// worst case (one write(2) per KiB, as Kafka's FileChannel.write per append);
// 64 per call is a producer request carrying 64 KiB of 1 KiB batches for the
// partition, which Kafka and Daruma append with one call and one write.
void BM_LogAppend1KiB(benchmark::State& state) {
  ManualClock clock(kT0);
  const bool in_place = state.range(0) == 1;
  const int batches_per_append = int(state.range(1));
  const bool preallocate = state.range(2) == 1;
  Bytes batch = OneKiBBatch();
  Bytes request;
  for (int i = 0; i < batches_per_append; ++i)
    request.insert(request.end(), batch.begin(), batch.end());
  int64_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto dir = std::make_unique<ScratchDir>();
    auto log = OpenLog(dir->path(), &clock, preallocate);
    state.ResumeTiming();
    for (int64_t written = 0; written < kLogBytes; written += int64_t(request.size())) {
      auto info =
          in_place ? log->AppendAsLeaderInPlace(request, 0) : log->AppendAsLeader(request, 0);
      if (!info.ok()) state.SkipWithError(info.status().ToString().c_str());
    }
    bytes += kLogBytes;
    state.PauseTiming();
    log.reset();
    dir.reset();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(bytes);
  state.SetLabel(fmt::format("{}, {} x 1 KiB batches per append, preallocate={}",
                             in_place ? "AppendAsLeaderInPlace" : "AppendAsLeader (copies)",
                             batches_per_append, preallocate));
}
// Args: {in place, batches per append, preallocate}.
BENCHMARK(BM_LogAppend1KiB)
    ->Args({1, 1, 0})
    ->Args({0, 1, 0})
    ->Args({1, 16, 0})
    ->Args({1, 64, 0})
    ->Args({1, 1, 1})
    ->Args({0, 1, 1})
    ->Args({1, 64, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// kLogBytes of 1 KiB batches appended to a new log in `dir`.
std::unique_ptr<Log> WriteReadBenchLog(const std::string& dir, Clock* clock) {
  auto log = OpenLog(dir, clock);
  Bytes batch = OneKiBBatch();
  for (int64_t written = 0; written < kLogBytes; written += int64_t(batch.size())) {
    if (!log->AppendAsLeaderInPlace(batch, 0).ok()) std::abort();
  }
  return log;
}

// The ceiling of a copying read path: pread() of the same .log files (written
// the same way, so their page cache looks the same) into one reused buffer.
void BM_PreadBaseline(benchmark::State& state) {
  ManualClock clock(kT0);
  ScratchDir dir;
  auto log = WriteReadBenchLog(dir.path(), &clock);
  std::vector<std::string> paths;
  for (LogSegment* s : log->segments_for_inspection()) paths.push_back(s->log_path());
  Bytes buffer(size_t(state.range(0)));
  int64_t bytes = 0;
  for (auto _ : state) {
    for (const std::string& path : paths) {
      const int fd = ::open(path.c_str(), O_RDONLY);
      if (fd < 0) std::abort();
      off_t at = 0;
      for (ssize_t n; (n = ::pread(fd, buffer.data(), buffer.size(), at)) > 0; at += n) bytes += n;
      ::close(fd);
    }
  }
  state.SetBytesProcessed(bytes);
  state.SetLabel("pread() of the same .log files (the copy's ceiling)");
}
BENCHMARK(BM_PreadBaseline)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LogSequentialRead(benchmark::State& state) {
  ManualClock clock(kT0);
  ScratchDir dir;
  auto log = WriteReadBenchLog(dir.path(), &clock);
  Bytes batch = OneKiBBatch();
  const int32_t fetch_bytes = int32_t(state.range(0));
  const bool reuse_buffer = state.range(1) == 1;
  FetchDataInfo fetched;
  int64_t bytes = 0;
  for (auto _ : state) {
    // One pass over the whole log, fetch by fetch as a consumer does.
    int64_t offset = 0;
    while (offset < log->log_end_offset()) {
      Status st = Status::Ok();
      if (reuse_buffer) {
        st = log->ReadInto(offset, fetch_bytes, FetchIsolation::kLogEnd, true, &fetched);
      } else {
        auto read = log->Read(offset, fetch_bytes, FetchIsolation::kLogEnd, true);
        st = read.status();
        if (read.ok()) fetched = std::move(*read);
      }
      if (!st.ok() || fetched.records.empty()) {
        state.SkipWithError(st.ok() ? "empty fetch" : st.ToString().c_str());
        break;
      }
      bytes += int64_t(fetched.records.size());
      const uint8_t* last = fetched.records.data() + fetched.records.size() - batch.size();
      offset = RecordBatchView(ByteSpan(last, batch.size())).next_offset();
    }
  }
  state.SetBytesProcessed(bytes);
  state.SetLabel(reuse_buffer ? "Log::ReadInto (buffer reused)" : "Log::Read (new buffer)");
}
BENCHMARK(BM_LogSequentialRead)
    ->Args({1 << 20, 1})
    ->Args({1 << 20, 0})
    ->Args({64 << 10, 1})
    ->Args({64 << 10, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace daruma

BENCHMARK_MAIN();
