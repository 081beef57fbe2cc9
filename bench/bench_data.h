// Data sets shared by the benchmarks (recovery_bench, check_bench): one
// partition `bench-0` of ~1 KiB uncompressed, non-transactional batches
// (eight ~118-byte records each, as in scan_bench and Kafka's baseline) in
// 128 MiB segments, shut down cleanly by a LogManager (marker, checkpoints,
// producer snapshots), as a broker leaves it. Generated once under $TMPDIR
// and reused between runs; a dir without its clean-shutdown marker is
// regenerated.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "log/log.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"

namespace daruma::bench {

inline constexpr int64_t kT0 = 1700000000000;
inline constexpr int32_t kSegmentBytes = 128 << 20;

inline std::string TmpRoot() {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp");
}

[[noreturn]] inline void Die(const std::string& what, const Status& status) {
  std::fprintf(stderr, "bench: %s: %s\n", what.c_str(), status.ToString().c_str());
  std::abort();
}

inline Bytes KiBBatch() {
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

inline LogConfig BenchConfig() {
  LogConfig config;
  config.segment_bytes = kSegmentBytes;
  return config;
}

// Appends `bytes` of batches to a new log in `log_dir`/bench-0 and shuts the
// manager down cleanly (marker, checkpoints, snapshots), as a broker would.
inline void GenerateBigPartition(const std::string& log_dir, int64_t bytes) {
  namespace fs = std::filesystem;
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

// The dir of a `bytes`-sized partition under $TMPDIR, generated if needed.
inline std::string BigPartitionDir(int64_t bytes) {
  const std::string d = TmpRoot() + "/daruma-bench-recovery-" + std::to_string(bytes >> 20) + "m";
  if (!std::filesystem::exists(d + "/.kafka_cleanshutdown")) {
    std::fprintf(stderr, "bench: generating %s\n", d.c_str());
    GenerateBigPartition(d, bytes);
  }
  return d;
}

inline std::vector<std::string> FilesWithSuffix(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > suffix.size() && name.ends_with(suffix)) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace daruma::bench
