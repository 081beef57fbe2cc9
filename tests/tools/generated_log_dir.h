// A small log dir written by Daruma's own Log for the check/repair tests:
// partition t-0 with 3 segments of 10 batches (3 records each, idempotent
// producer 7, leader epoch = segment number), closed cleanly, with the three
// checkpoints and a clean-shutdown marker, as a broker's shutdown leaves it.
// Plus helpers to damage it and to prove that a command changed nothing.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "common/bytes.h"
#include "common/clock.h"
#include "common/file_system.h"
#include "log/clean_shutdown_file.h"
#include "log/log.h"
#include "log/log_file_names.h"
#include "log/offset_checkpoint_file.h"
#include "record/file_batch_reader.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"
#include "support/test_support.h"

namespace daruma::tools::testlog {

inline constexpr int64_t kNow = 1700000400000;
inline constexpr int kSegments = 3;
inline constexpr int kBatchesPerSegment = 10;
inline constexpr int kRecordsPerBatch = 3;
inline constexpr int64_t kLeo = kSegments * kBatchesPerSegment * kRecordsPerBatch;  // 90

inline LogConfig TestConfig() {
  LogConfig c;
  c.segment_index_bytes = 4096;
  c.index_interval_bytes = 256;
  return c;
}

inline void WriteCheckpoints(const std::string& log_dir, int64_t recovery_point, int64_t hw) {
  const TopicPartition tp{"t", 0};
  auto write = [&](const char* name, int64_t offset) {
    auto f = OffsetCheckpointFile::Open(JoinPath(log_dir, name));
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(f->Write({{tp, offset}}).ok());
  };
  write(kRecoveryPointCheckpointFile, recovery_point);
  write(kLogStartOffsetCheckpointFile, 0);
  write(kReplicationOffsetCheckpointFile, hw);
}

// Writes the log dir `log_dir` (created) with partition t-0.
inline void WriteLogDir(const std::string& log_dir) {
  std::filesystem::create_directories(log_dir);
  ManualClock clock(kNow);
  const TopicPartition tp{"t", 0};
  auto log =
      Log::CreateEmpty(FileSystem::Default(), JoinPath(log_dir, "t-0"), tp, TestConfig(), &clock);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  int32_t seq = 0;
  for (int s = 0; s < kSegments; ++s) {
    if (s > 0) {
      ASSERT_TRUE((*log)->Roll().ok());
    }
    for (int b = 0; b < kBatchesPerSegment; ++b) {
      BatchBuilderOptions o;
      o.producer_id = 7;
      o.producer_epoch = 0;
      o.base_sequence = seq;
      seq += kRecordsPerBatch;
      std::vector<RecordInput> records;
      for (int r = 0; r < kRecordsPerBatch; ++r) {
        // Appended, not `"k" + std::to_string(r)`: g++ 12 at -O3 misreads that
        // as an overlapping memcpy (-Wrestrict, GCC bug 105329).
        std::string key = "k";
        key += std::to_string(r);
        records.push_back({kNow - 1000 + s * 100 + b, key, std::string(60, 'v'), {}});
      }
      auto bytes = BuildRecordBatch(o, records);
      ASSERT_TRUE(bytes.ok());
      auto info = (*log)->AppendAsLeader(*bytes, s);
      ASSERT_TRUE(info.ok()) << info.status().ToString();
    }
  }
  ASSERT_TRUE((*log)->FlushAll().ok());
  ASSERT_TRUE((*log)->Close().ok());
  WriteCheckpoints(log_dir, kLeo, kLeo);
  ASSERT_TRUE(CleanShutdownFile(log_dir).Write(7).ok());
}

inline std::string SegmentFile(const std::string& log_dir, int64_t base, std::string_view ext) {
  return JoinPath(log_dir, "t-0/" + FilenamePrefixFromOffset(base) + std::string(ext));
}

inline int64_t SegmentBase(int s) {
  return int64_t(s) * kBatchesPerSegment * kRecordsPerBatch;
}

struct BatchPos {
  int64_t position;
  int64_t size;
  int64_t base_offset;
};

inline std::vector<BatchPos> Batches(const std::string& path) {
  auto file = FileSystem::Default()->Open(path, OpenMode::kRead);
  EXPECT_TRUE(file.ok());
  std::vector<BatchPos> out;
  if (!file.ok()) return out;
  FileBatchReader reader(file->get());
  while (auto e = reader.Next())
    out.push_back({e->position, int64_t(e->size()), e->prefix_offset()});
  return out;
}

inline void FlipByte(const std::string& path, int64_t pos) {
  std::string data = testing::ReadFileToString(path);
  data[size_t(pos)] ^= 0x20;
  testing::WriteStringToFile(path, data);
}

inline void WriteBe32At(const std::string& path, int64_t pos, uint32_t v) {
  std::string data = testing::ReadFileToString(path);
  uint8_t b[4];
  StoreBe32(b, v);
  data.replace(size_t(pos), 4, reinterpret_cast<const char*>(b), 4);
  testing::WriteStringToFile(path, data);
}

inline void WriteBe64At(const std::string& path, int64_t pos, uint64_t v) {
  std::string data = testing::ReadFileToString(path);
  uint8_t b[8];
  StoreBe64(b, v);
  data.replace(size_t(pos), 8, reinterpret_cast<const char*>(b), 8);
  testing::WriteStringToFile(path, data);
}

// Every file and directory under `root`: size, mtime (ns) and contents.
using TreeState = std::map<std::string, std::tuple<bool, uint64_t, int64_t, std::string>>;

inline TreeState SnapshotTree(const std::string& root) {
  TreeState state;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    const std::string p = e.path().string();
    const int64_t mtime = e.last_write_time().time_since_epoch().count();
    if (e.is_directory()) {
      state[p] = {true, 0, mtime, ""};
    } else {
      state[p] = {false, e.file_size(), mtime, testing::ReadFileToString(p)};
    }
  }
  return state;
}

}  // namespace daruma::tools::testlog
