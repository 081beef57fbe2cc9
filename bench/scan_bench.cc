// Segment scan throughput: FileBatchReader + LogEntry::Validate (CRC-32C of
// every batch) over a file of ~1 KiB uncompressed v2 batches, the work
// recovery and `daruma check` do per segment; and, as the baseline, plain
// read() of the same file with one Crc32c pass over each buffer.
//
// The file is generated once into $TMPDIR (size from DARUMA_BENCH_SCAN_BYTES,
// default 1 GiB) and reused while its size matches; it is read twice before
// measuring so both passes run from the page cache.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/crc32c.h"
#include "common/file_system.h"
#include "record/file_batch_reader.h"
#include "record/record_batch_builder.h"

namespace daruma {
namespace {

constexpr int kRecordsPerBatch = 8;
constexpr size_t kValueBytes = 100;  // 8 records of ~118 bytes: ~1 KiB batches
constexpr size_t kReadBuffer = 1 << 20;

uint64_t TargetBytes() {
  const char* env = std::getenv("DARUMA_BENCH_SCAN_BYTES");
  return env ? std::strtoull(env, nullptr, 10) : (uint64_t{1} << 30);
}

std::string ScanFilePath() {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/daruma-bench-scan-" +
         std::to_string(TargetBytes()) + ".log";
}

Bytes TemplateBatch() {
  BatchBuilderOptions options;
  options.producer_id = 1000;
  options.producer_epoch = 0;
  options.base_sequence = 0;
  std::vector<RecordInput> records(kRecordsPerBatch);
  for (int i = 0; i < kRecordsPerBatch; ++i) {
    records[i].timestamp = 1700000000000 + i;
    records[i].key = "key-" + std::to_string(i);
    records[i].value = std::string(kValueBytes, char('a' + i));
  }
  auto batch = BuildRecordBatch(options, records);
  if (!batch.ok()) {
    std::fprintf(stderr, "scan_bench: %s\n", batch.status().ToString().c_str());
    std::abort();
  }
  return *batch;
}

// Writes whole batches (offsets consecutive) until the target size is reached.
Status Generate(const std::string& path, uint64_t target) {
  FileSystem* fs = FileSystem::Default();
  const std::string tmp = path + ".tmp";
  DARUMA_ASSIGN_OR_RETURN(auto file, fs->Open(tmp, OpenMode::kTruncate));
  Bytes batch = TemplateBatch();
  Bytes chunk;
  uint64_t written = 0;
  int64_t offset = 0;
  while (written < target) {
    chunk.clear();
    while (chunk.size() + batch.size() <= (4u << 20) && written + chunk.size() < target) {
      SetBatchBaseOffset(batch, offset);  // not covered by the CRC
      offset += kRecordsPerBatch;
      chunk.insert(chunk.end(), batch.begin(), batch.end());
    }
    DARUMA_RETURN_IF_ERROR(file->WriteAt(written, chunk));
    written += chunk.size();
  }
  DARUMA_RETURN_IF_ERROR(file->Sync());
  return fs->Rename(tmp, path);
}

// Reads the whole file with read(); returns the CRC of every buffer xor-ed.
uint32_t ReadAndCrc(const std::string& path, uint64_t* bytes) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    std::perror(path.c_str());
    std::abort();
  }
  static std::vector<uint8_t> buffer(kReadBuffer);
  uint32_t acc = 0;
  *bytes = 0;
  for (;;) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n <= 0) break;
    acc ^= Crc32c(buffer.data(), size_t(n));
    *bytes += uint64_t(n);
  }
  ::close(fd);
  return acc;
}

// The scan file, generated on first use and warmed into the page cache.
const std::string& ScanFile() {
  static const std::string path = [] {
    std::string p = ScanFilePath();
    FileSystem* fs = FileSystem::Default();
    auto size = fs->FileSize(p);
    if (!size.ok() || *size < TargetBytes()) {
      std::fprintf(stderr, "scan_bench: generating %s\n", p.c_str());
      Status s = Generate(p, TargetBytes());
      if (!s.ok()) {
        std::fprintf(stderr, "scan_bench: %s\n", s.ToString().c_str());
        std::abort();
      }
    }
    uint64_t bytes = 0;
    for (int i = 0; i < 2; ++i) benchmark::DoNotOptimize(ReadAndCrc(p, &bytes));
    return p;
  }();
  return path;
}

void BM_ScanValidate(benchmark::State& state) {
  const std::string& path = ScanFile();
  auto file = FileSystem::Default()->Open(path, OpenMode::kRead);
  if (!file.ok()) {
    state.SkipWithError(file.status().ToString().c_str());
    return;
  }
  uint64_t bytes = 0, batches = 0;
  for (auto _ : state) {
    FileBatchReader reader(file->get());
    while (auto entry = reader.Next()) {
      if (!entry->Validate().ok()) {
        state.SkipWithError("invalid batch in the scan file");
        return;
      }
      ++batches;
    }
    if (reader.stop_reason() != StopReason::kEndOfFile) {
      state.SkipWithError(reader.stop_message().c_str());
      return;
    }
    bytes += reader.position();
  }
  state.SetBytesProcessed(int64_t(bytes));
  state.counters["batches"] = benchmark::Counter(double(batches) / double(state.iterations()));
}

void BM_ReadCrcBaseline(benchmark::State& state) {
  const std::string& path = ScanFile();
  uint64_t total = 0;
  for (auto _ : state) {
    uint64_t bytes = 0;
    benchmark::DoNotOptimize(ReadAndCrc(path, &bytes));
    total += bytes;
  }
  state.SetBytesProcessed(int64_t(total));
}

BENCHMARK(BM_ScanValidate)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ReadCrcBaseline)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace daruma

BENCHMARK_MAIN();
