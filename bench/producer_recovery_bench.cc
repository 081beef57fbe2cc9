// Unclean recovery from offset 0 of partitions that look like Kafka's since
// 3.0, when the Java producer became idempotent by default (issue 23): every
// batch carries a producer id and sequence, and recovery rebuilds producer
// state from them.
//
//   BM_RecoverShape/<shape>/T   LogManager::Startup of one partition with no
//                               clean-shutdown marker and no recovery point, T
//                               recovery threads (as `daruma recover` runs it)
//
// Shapes (each $DARUMA_BENCH_PRODUCER_MIB MiB, default 1024, 128 MiB segments):
//   plain_1k          ~1 KiB batches (8 records), no producer id: the old row
//   idempotent_1k     ~1 KiB batches, one idempotent producer
//   idempotent_100b   ~100-byte batches (one record), one idempotent producer
//   producers_10k     ~100-byte batches from 10,000 idempotent producers
//   txn_aborts        ~1 KiB transactional batches, 100 producers, 1-10
//                     batches per transaction, one in ten aborted
//   txn_aborts_100b   the same transactions in ~100-byte batches (one
//                     record): the per-batch cost of transactions, which the
//                     CRC of 1 KiB batches hides (issue 23's "≤ 100 ns per
//                     batch whatever the producers")
//   lz4_1k            lz4-compressed batches of 8 ~118-byte records, one
//                     idempotent producer
//   txn_aborts_1seg   txn_aborts in one segment (Kafka's default
//                     log.segment.bytes is 1 GiB): with 2 threads the
//                     segment is scanned in two parts (segment_scan_split.h)
//   txn_aborts_1seg_offsets  txn_aborts_1seg beside __consumer_offsets' 50
//                     partitions (1 MiB each: the first batches of bench-0),
//                     as every broker's dir holds them: with more partitions
//                     than threads each partition has one thread, and a
//                     thread done with the small ones scans the big
//                     segment's second part (recovery/scan_help_pool.h).
//                     ns_per_batch counts bench-0's batches only.
//
// Each iteration first reads the same .log files with read() + CRC-32C on one
// thread (counter read_crc_gbps, and vs_read_crc = recovery / that pass), so
// every recovery figure stands beside the machine's ceiling measured seconds
// earlier. A T = 2 iteration also recovers the same files on one thread
// (before the T-thread run in odd iterations, after it in even ones):
// counter speedup_vs_1_thread, issue 23's "2 threads >= 1.8x one thread". Counters also give
// ns_per_batch (wall time / batches), cpu_ms, peak_rss_mib of a forked child running one recovery,
// and, when the `daruma` binary sits beside this one, the same recovery end to end through `daruma
// recover`, three times, each after a read+CRC pass of its own: the median
// run's e2e_seconds, e2e_gbps, e2e_peak_rss_mib and e2e_vs_read_crc (issue
// 23's "≥ 0.6 of the read+CRC pass", measured as its table measures it), with
// the other two runs' ratios as e2e_vs_read_crc_min / _max. The floors of
// any scan, per batch, once per benchmark: read_crc_ns_per_batch,
// read_only_ns_per_batch (the kernel's copy alone) and mapped_crc_ns_per_batch
// (CRC over a populated mapping).
//
// $DARUMA_BENCH_PAGE_CACHE=appended|reloaded first puts the shape's .log
// files in the page cache as a crash leaves them (small folios) or as a
// reboot does (large folios where the kernel has them): the read+CRC floor
// differs by 2-4x between the two on the benchmark VM (recovery_support.h).
//
// Data: written once under $TMPDIR as raw segments (template batches with
// offsets, producer ids and sequences patched, CRCs recomputed), then brought
// to a clean shutdown by one LogManager start; timestamps are those of the
// generation and producer expiration is off, so every producer stays live.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "bench_data.h"
#include "common/allocator_tuning.h"
#include "common/bytes.h"
#include "log/log_file_names.h"
#include "record/record_batch.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"
#include "recovery_support.h"

namespace daruma {
namespace {

namespace fs = std::filesystem;
using namespace daruma::bench;  // NOLINT: shared data and measurement helpers

struct Shape {
  const char* name;
  int records = 8;        // per batch
  int value_bytes = 100;  // per record
  int producers = 1;      // 0: no producer id
  bool transactional = false;
  CompressionType compression = CompressionType::kNone;
  int64_t segment_bytes = kSegmentBytes;
  int offsets_partitions = 0;  // __consumer_offsets-N beside bench-0
};

const Shape kShapes[] = {
    {"plain_1k", 8, 100, 0, false, CompressionType::kNone},
    {"idempotent_1k", 8, 100, 1, false, CompressionType::kNone},
    {"idempotent_100b", 1, 27, 1, false, CompressionType::kNone},
    {"producers_10k", 1, 27, 10000, false, CompressionType::kNone},
    {"txn_aborts", 8, 100, 100, true, CompressionType::kNone},
    {"txn_aborts_100b", 1, 27, 100, true, CompressionType::kNone},
    {"lz4_1k", 8, 100, 1, false, CompressionType::kLz4},
    {"txn_aborts_1seg", 8, 100, 100, true, CompressionType::kNone, int64_t{1} << 31},
    {"txn_aborts_1seg_offsets", 8, 100, 100, true, CompressionType::kNone, int64_t{1} << 31, 50},
};

int64_t ShapeBytes() {
  const char* mib = std::getenv("DARUMA_BENCH_PRODUCER_MIB");
  return int64_t(mib && *mib ? std::atoi(mib) : 1024) << 20;
}

LogConfig ShapeConfig() {
  LogConfig config = BenchConfig();
  config.producer_id_expiration_ms = std::numeric_limits<int32_t>::max();
  return config;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Writes raw segments; rolls at `segment_bytes` as a log would.
class SegmentWriter {
 public:
  SegmentWriter(std::string dir, int64_t segment_bytes)
      : dir_(std::move(dir)), segment_bytes_(segment_bytes) {}
  ~SegmentWriter() { Close(); }

  void Write(ByteSpan batch, int64_t base_offset) {
    if (!out_.is_open() || size_ + int64_t(batch.size()) > segment_bytes_) {
      Close();
      out_.open(LogFileName(dir_, base_offset), std::ios::binary | std::ios::trunc);
      if (!out_) Die("creating a segment", Status::IoError(dir_));
      size_ = 0;
    }
    out_.write(reinterpret_cast<const char*>(batch.data()), std::streamsize(batch.size()));
    size_ += int64_t(batch.size());
    written_ += int64_t(batch.size());
  }
  int64_t written() const { return written_; }

 private:
  void Close() {
    if (out_.is_open()) out_.close();
  }
  std::string dir_;
  int64_t segment_bytes_;
  std::ofstream out_;
  int64_t size_ = 0;
  int64_t written_ = 0;
};

Bytes TemplateBatch(const Shape& shape, int64_t now_ms) {
  BatchBuilderOptions o;
  o.partition_leader_epoch = 0;
  o.compression = shape.compression;
  if (shape.producers > 0) {
    o.producer_id = 0;
    o.producer_epoch = 0;
    o.base_sequence = 0;
    o.is_transactional = shape.transactional;
  }
  std::vector<RecordInput> records(size_t(shape.records));
  for (int i = 0; i < shape.records; ++i) {
    records[size_t(i)].timestamp = now_ms;
    records[size_t(i)].key = "k-" + std::to_string(i % 10) + std::to_string(i / 10);
    records[size_t(i)].value = std::string(size_t(shape.value_bytes), char('a' + i % 26));
  }
  auto batch = BuildRecordBatch(o, records);
  if (!batch.ok()) Die("building a batch", batch.status());
  return *batch;
}

// xorshift64: a cheap reproducible producer choice.
uint64_t NextRandom(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

// The first whole batches of `from`'s first segment, 1 MiB or just over,
// as the one segment of each __consumer_offsets partition.
void WriteSmallPartitions(const Shape& shape, const std::string& log_dir, const std::string& from) {
  std::ifstream in(LogFileName(from, 0), std::ios::binary);
  std::string head(size_t(4) << 20, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));
  size_t end = 0;
  while (end < (size_t(1) << 20) && end + size_t(kLogOverhead) <= head.size()) {
    const size_t next =
        end + size_t(kLogOverhead) +
        LoadBe32(reinterpret_cast<const uint8_t*>(head.data()) + end + batch_layout::kLength);
    if (next > head.size()) break;
    end = next;
  }
  for (int p = 0; p < shape.offsets_partitions; ++p) {
    const std::string dir = log_dir + "/__consumer_offsets-" + std::to_string(p);
    fs::create_directories(dir);
    std::ofstream(LogFileName(dir, 0), std::ios::binary).write(head.data(), std::streamsize(end));
  }
}

void GenerateShape(const Shape& shape, const std::string& log_dir) {
  fs::remove_all(log_dir);
  const std::string dir = log_dir + "/bench-0";
  fs::create_directories(dir);
  const int64_t now_ms = NowMs();
  Bytes batch = TemplateBatch(shape, now_ms);
  const int64_t first_producer = 1000;
  std::vector<int32_t> sequence(size_t(std::max(shape.producers, 1)), 0);
  std::vector<int> txn_left(sequence.size(), 0);
  uint64_t random = 0x9E3779B97F4A7C15ull;
  SegmentWriter writer(dir, shape.segment_bytes);
  int64_t offset = 0;
  int64_t batches = 0;
  for (; writer.written() < ShapeBytes(); ++batches) {
    if (shape.producers == 0) {
      SetBatchBaseOffset(batch, offset);
      writer.Write(batch, offset);
      offset += shape.records;
      continue;
    }
    const size_t p =
        shape.producers == 1 ? 0 : size_t(NextRandom(&random) % uint64_t(shape.producers));
    const int64_t pid = first_producer + int64_t(p);
    if (shape.transactional && txn_left[p] == 0 && sequence[p] > 0) {
      // The transaction's last batch was written: its marker, one in ten an abort.
      const bool abort = NextRandom(&random) % 10 == 0;
      Bytes marker = BuildEndTxnMarkerBatch(
          offset, 0, pid, 0, abort ? ControlRecordType::kAbort : ControlRecordType::kCommit, 0,
          now_ms);
      writer.Write(marker, offset);
      offset += 1;
      txn_left[p] = -1;  // the next batch starts a new transaction
      continue;
    }
    if (shape.transactional && txn_left[p] <= 0) txn_left[p] = 1 + int(NextRandom(&random) % 10);
    StoreBe64(batch.data() + batch_layout::kProducerId, uint64_t(pid));
    StoreBe32(batch.data() + batch_layout::kBaseSequence, uint32_t(sequence[p]));
    RewriteBatchCrc(batch);
    SetBatchBaseOffset(batch, offset);
    writer.Write(batch, offset);
    offset += shape.records;
    sequence[p] += shape.records;
    if (shape.transactional) txn_left[p]--;
  }
  std::ofstream(log_dir + ".batches") << batches << "\n";
}

// The shape's log dir under $TMPDIR, generated and cleanly shut down once.
std::string ShapeDir(const Shape& shape) {
  const std::string d = TmpRoot() + "/daruma-bench-shape-" + shape.name + "-" +
                        std::to_string(ShapeBytes() >> 20) + "m";
  if (!fs::exists(d + "/.kafka_cleanshutdown")) {
    std::fprintf(stderr, "producer_recovery_bench: generating %s\n", d.c_str());
    GenerateShape(shape, d);
    if (shape.offsets_partitions > 0) WriteSmallPartitions(shape, d, d + "/bench-0");
    LogManager manager;
    if (Status s = manager.Startup({d}, ShapeConfig(), 2); !s.ok()) Die("startup", s);
    if (manager.HasFailures()) Die("generation", Status::Corruption(manager.ReportJson().dump()));
    if (Status s = manager.Shutdown(); !s.ok()) Die("shutdown", s);
  }
  return d;
}

// No marker, no recovery point: every segment is recovered from offset 0.
void PrepareUnclean(const std::string& log_dir) {
  fs::remove(log_dir + "/.kafka_cleanshutdown");
  fs::remove(log_dir + "/" + kRecoveryPointCheckpointFile);
}

int64_t RecoverNs(const std::string& log_dir, int threads, double* cpu_seconds) {
  LogManager manager;
  const double cpu_before = ProcessCpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  if (Status s = manager.Startup({log_dir}, ShapeConfig(), threads); !s.ok()) Die("startup", s);
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  if (cpu_seconds != nullptr) *cpu_seconds += ProcessCpuSeconds() - cpu_before;
  if (manager.HasFailures()) Die("recovery", Status::Corruption(manager.ReportJson().dump()));
  if (Status s = manager.Shutdown(); !s.ok()) Die("shutdown", s);
  return ns;
}

// `daruma recover` beside this binary, or "" if there is none.
std::string DarumaBinary() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  // Beside the benchmark, or in the build dir above bench/.
  for (const fs::path& dir : {self.parent_path(), self.parent_path().parent_path()}) {
    if (fs::exists(dir / "daruma")) return (dir / "daruma").string();
  }
  return "";
}

struct EndToEnd {
  double seconds = -1;
  double peak_rss_mib = -1;
};

// One `daruma recover` of the prepared dir, timed from fork to exit
// (process start, recovery, clean shutdown with its syncs).
EndToEnd RecoverEndToEnd(const std::string& binary, const std::string& log_dir, int threads) {
  const std::string threads_arg = std::to_string(threads);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execl(binary.c_str(), binary.c_str(), "recover", "--log-dirs", log_dir.c_str(), "--threads",
            threads_arg.c_str(), "--quiet", "--set", "producer.id.expiration.ms=2147483647",
            static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (::wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "producer_recovery_bench: %s recover failed (status %d)\n", binary.c_str(),
                 status);
    return {};
  }
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
          double(usage.ru_maxrss) / 1024.0};
}

// The batch count GenerateShape wrote beside the log dir.
int64_t CountBatches(const std::string& log_dir) {
  std::ifstream in(log_dir + ".batches");
  int64_t batches = 0;
  in >> batches;
  return batches;
}

// One read+CRC pass over `files`: the bytes read and the seconds it took.
struct ReadCrcPass {
  uint64_t bytes = 0;
  double seconds = 0;
};
ReadCrcPass TimedReadAndCrc(const std::vector<std::string>& files) {
  const auto start = std::chrono::steady_clock::now();
  const uint64_t bytes = ReadAndCrc(files);
  return {bytes, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

void BM_RecoverShape(benchmark::State& state, const Shape& shape) {
  const std::string dir = ShapeDir(shape);
  const std::vector<std::string> files = FilesWithSuffix(dir + "/bench-0", ".log");
  const int threads = int(state.range(0));
  const PageCacheMode page_cache = PageCacheModeFromEnv();
  PreparePageCache(files, page_cache);
  ReadAndCrc(files);  // warm the page cache
  PrepareUnclean(dir);
  const int64_t batches = CountBatches(dir);
  double seconds = 0;
  double crc_seconds = 0;
  double cpu_seconds = 0;
  int64_t bytes = 0;
  double one_thread_seconds = 0;  // the paired 1-thread runs of a T > 1 benchmark
  int64_t iteration = 0;
  for (auto _ : state) {
    const ReadCrcPass pass = TimedReadAndCrc(files);
    crc_seconds += pass.seconds;
    // With T > 1, each iteration also runs one thread on the same files, first
    // in odd iterations and last in even ones, so that neither side always
    // follows the read+CRC pass or the other's writes (not counted in the
    // benchmark's time; a 1-thread benchmark run a minute earlier says less
    // about the ratio on this VM, whose speed drifts).
    const bool pair = threads > 1;
    const bool one_first = iteration++ % 2 == 0;
    if (pair && one_first) {
      PrepareUnclean(dir);
      one_thread_seconds += double(RecoverNs(dir, 1, nullptr)) / 1e9;
    }
    PrepareUnclean(dir);
    const int64_t ns = RecoverNs(dir, threads, &cpu_seconds);
    state.SetIterationTime(double(ns) / 1e9);
    seconds += double(ns) / 1e9;
    bytes += int64_t(pass.bytes);
    if (pair && !one_first) {
      PrepareUnclean(dir);
      one_thread_seconds += double(RecoverNs(dir, 1, nullptr)) / 1e9;
    }
  }
  if (one_thread_seconds > 0 && seconds > 0) {
    state.counters["speedup_vs_1_thread"] = one_thread_seconds / seconds;
    std::fprintf(stderr,
                 "producer_recovery_bench: %s, %d threads against 1 in the same iterations: "
                 "%.1f ms against %.1f ms, speedup %.2fx\n",
                 shape.name, threads, seconds * 1e3 / double(iteration),
                 one_thread_seconds * 1e3 / double(iteration), one_thread_seconds / seconds);
  }
  const double iterations = double(std::max<int64_t>(1, state.iterations()));
  state.SetBytesProcessed(bytes);
  state.counters["batches"] = double(batches);
  state.counters["ns_per_batch"] =
      seconds / iterations * 1e9 / double(std::max<int64_t>(1, batches));
  state.counters["read_crc_gbps"] = double(bytes) / crc_seconds / 1e9;
  state.counters["vs_read_crc"] = crc_seconds / seconds;
  state.counters["cpu_ms"] = cpu_seconds * 1e3 / iterations;
  state.counters["page_cache_mode"] = double(int(page_cache));
  // Per batch, what reading the bytes costs at all (issue 23's "<= 100 ns
  // per batch" beside it): with ~1 KiB batches the kernel's copy alone can
  // exceed it, and a mapping costs more than the copy on some VMs.
  const ScanFloors floors = MeasureScanFloors(files);
  const double per_batch = 1e9 / double(std::max<int64_t>(1, batches));
  state.counters["read_crc_ns_per_batch"] = crc_seconds / iterations * per_batch;
  state.counters["read_only_ns_per_batch"] = floors.read_only_seconds * per_batch;
  state.counters["mapped_crc_ns_per_batch"] = floors.mapped_crc_seconds * per_batch;
  PrepareUnclean(dir);
  state.counters["peak_rss_mib"] = PeakRssMiBOfChild([&] { RecoverNs(dir, threads, nullptr); });
  if (const std::string binary = DarumaBinary(); !binary.empty()) {
    // Three runs, each right after its own read+CRC pass over the same files;
    // the median run by ratio is reported (one run moved by 10 % or more
    // when anything else woke up on the machine).
    std::vector<std::pair<double, EndToEnd>> runs;  // (e2e GB/s / read+CRC GB/s, run)
    for (int run = 0; run < 3; ++run) {
      const ReadCrcPass pass = TimedReadAndCrc(files);
      PrepareUnclean(dir);
      const EndToEnd e2e = RecoverEndToEnd(binary, dir, threads);
      if (e2e.seconds <= 0) break;
      // Same bytes both ways: the ratio of GB/s is the ratio of times.
      runs.emplace_back(pass.seconds / e2e.seconds, e2e);
    }
    if (runs.size() == 3) {
      std::sort(runs.begin(), runs.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      const EndToEnd& e2e = runs[1].second;
      state.counters["e2e_seconds"] = e2e.seconds;
      state.counters["e2e_gbps"] = double(bytes) / iterations / e2e.seconds / 1e9;
      state.counters["e2e_vs_read_crc"] = runs[1].first;
      state.counters["e2e_vs_read_crc_min"] = runs[0].first;
      state.counters["e2e_vs_read_crc_max"] = runs[2].first;
      state.counters["e2e_peak_rss_mib"] = e2e.peak_rss_mib;
    }
  }
  std::fprintf(stderr,
               "producer_recovery_bench: %s, %lld MiB, %lld batches, %d thread(s), page cache "
               "%s: %.2f GB/s (%.0f ns/batch), read+CRC %.2f GB/s in the same iterations; "
               "floors per batch: read+CRC %.0f ns, read alone %.0f ns, mapped+CRC %.0f ns\n",
               shape.name, static_cast<long long>(ShapeBytes() >> 20),
               static_cast<long long>(batches), threads, PageCacheModeName(page_cache),
               double(bytes) / seconds / 1e9,
               seconds / iterations * 1e9 / double(std::max<int64_t>(1, batches)),
               double(bytes) / crc_seconds / 1e9, crc_seconds / iterations * per_batch,
               floors.read_only_seconds * per_batch, floors.mapped_crc_seconds * per_batch);
}

}  // namespace
}  // namespace daruma

int main(int argc, char** argv) {
  daruma::TuneAllocator();  // as the daruma binary does (common/allocator_tuning.h)
  for (const daruma::Shape& shape : daruma::kShapes) {
    benchmark::RegisterBenchmark((std::string("BM_RecoverShape/") + shape.name).c_str(),
                                 daruma::BM_RecoverShape, shape)
        ->Arg(1)
        ->Arg(2)
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(4);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
