// The LogLoaderTest fixture: logs written by Log::AppendAsLeader, damaged by
// hand, then loaded with LoadLog; shared by the loader's rule tests
// (log_loader_test.cc) and its heals (partition_dir_heal_test.cc).
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/clock.h"
#include "common/file_system.h"
#include "common/forwarding_file_system.h"
#include "log/log_file_names.h"
#include "record/file_batch_reader.h"
#include "record/record_batch_builder.h"
#include "recovery/log_loader.h"
#include "recovery/quarantine.h"
#include "support/test_support.h"

namespace daruma {
namespace {

namespace fsys = std::filesystem;
using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

constexpr int64_t kNow = 1700000400000;
constexpr int kRecordsPerBatch = 3;

struct BatchPos {
  int64_t position;
  int64_t size;
  int64_t base_offset;
};

inline std::vector<BatchPos> Batches(const std::string& path) {
  auto file = FileSystem::Default()->Open(path, OpenMode::kRead);
  EXPECT_TRUE(file.ok());
  std::vector<BatchPos> out;
  FileBatchReader reader(file->get());
  while (auto e = reader.Next())
    out.push_back({e->position, int64_t(e->size()), e->prefix_offset()});
  return out;
}

inline void Resize(const std::string& path, int64_t size) {
  fsys::resize_file(path, uint64_t(size));
}

inline void FlipByte(const std::string& path, int64_t pos) {
  std::string data = ReadFileToString(path);
  data[size_t(pos)] ^= 0x20;
  WriteStringToFile(path, data);
}

inline std::vector<nlohmann::json> Manifest(const std::string& part) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(part + "/" + kQuarantineDirName + "/" + kQuarantineManifestName);
  std::string line;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// Forwards to the POSIX file system and counts the bytes read from `.log`
// files, to prove how many times recovery reads each segment.
class LogReadCountingFileSystem : public ForwardingFileSystem {
 public:
  int64_t log_bytes_read() const { return log_bytes_read_; }

  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    DARUMA_ASSIGN_OR_RETURN(auto file, base()->Open(path, mode));
    if (!path.ends_with(".log")) return file;
    return std::unique_ptr<File>(std::make_unique<CountingFile>(std::move(file), &log_bytes_read_));
  }

 private:
  class CountingFile : public ForwardingFile {
   public:
    CountingFile(std::unique_ptr<File> file, int64_t* counter)
        : ForwardingFile(std::move(file)), counter_(counter) {}
    Result<size_t> ReadAt(uint64_t pos, std::span<uint8_t> out) const override {
      DARUMA_ASSIGN_OR_RETURN(size_t n, ForwardingFile::ReadAt(pos, out));
      *counter_ += int64_t(n);
      return n;
    }
    // No mapping: every byte recovery reads then goes through ReadAt, counted.
    std::unique_ptr<MappedRegion> MapForRead(uint64_t, size_t) const override { return nullptr; }

   private:
    int64_t* counter_;
  };

  int64_t log_bytes_read_ = 0;
};

class LogLoaderTest : public ::testing::Test {
 protected:
  LogLoaderTest() : log_dir_(tmp_.Join("data")), part_(log_dir_ + "/t-0"), clock_(kNow) {
    fsys::create_directories(log_dir_);
    config_.segment_index_bytes = 4096;
    config_.index_interval_bytes = 256;
  }

  // `segments` segments of `batches` batches (3 records each), epoch = segment
  // index, idempotent producer 7; closed cleanly.
  void WriteLog(int segments, int batches) {
    auto log = Log::CreateEmpty(FileSystem::Default(), part_, tp_, config_, &clock_);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    int32_t seq = 0;
    for (int s = 0; s < segments; ++s) {
      if (s > 0) {
        ASSERT_TRUE((*log)->Roll().ok());
      }
      for (int b = 0; b < batches; ++b) {
        BatchBuilderOptions o;
        o.producer_id = 7;
        o.producer_epoch = 0;
        o.base_sequence = seq;
        seq += kRecordsPerBatch;
        std::vector<RecordInput> records;
        for (int r = 0; r < kRecordsPerBatch; ++r) {
          records.push_back({kNow - 1000 + b, "k" + std::to_string(r), std::string(60, 'v'), {}});
        }
        auto bytes = BuildRecordBatch(o, records);
        ASSERT_TRUE(bytes.ok());
        auto info = (*log)->AppendAsLeader(*bytes, s);
        ASSERT_TRUE(info.ok()) << info.status().ToString();
      }
    }
    ASSERT_TRUE((*log)->Close().ok());
  }

  std::string File(int64_t base, std::string_view ext) {
    return part_ + "/" + FilenamePrefixFromOffset(base) + std::string(ext);
  }

  Result<std::unique_ptr<Log>> Load(bool clean, int64_t recovery_point, bool quarantine = true,
                                    int64_t log_start = 0, FileSystem* fs = FileSystem::Default()) {
    report_ = PartitionRecoveryReport{};
    return LoadLog(Params(clean, recovery_point, quarantine, log_start, fs), &report_);
  }

  // What Load passes to LoadLog.
  LoadLogParams Params(bool clean, int64_t recovery_point, bool quarantine = true,
                       int64_t log_start = 0, FileSystem* fs = FileSystem::Default()) {
    LoadLogParams p;
    p.fs = fs;
    p.log_dir = log_dir_;
    p.partition_dir = part_;
    p.tp = tp_;
    p.config = config_;
    p.clock = &clock_;
    p.had_clean_shutdown = clean;
    p.recovery_point_checkpoint = recovery_point;
    p.log_start_offset_checkpoint = log_start;
    p.quarantine = quarantine;
    p.remaining_segments = &remaining_;
    p.transactional = transactional_;
    return p;
  }

  TempDir tmp_;
  std::string log_dir_, part_;
  TopicPartition tp_{"t", 0};
  LogConfig config_;
  ManualClock clock_;
  PartitionRecoveryReport report_;
  std::atomic<int64_t> remaining_{-1};
  bool transactional_ = true;  // LoadLogParams::transactional
};

}  // namespace
}  // namespace daruma
