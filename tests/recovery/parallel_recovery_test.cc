// Intra-partition parallel recovery (LoadLogParams::recovery_threads): the
// segments of one partition are scanned on several threads ahead of the
// sequential fold, each also in two parts when split, and the files left
// behind must be byte for byte those of
// the one-thread load, including after a corrupt batch in a middle segment
// (later segments discarded, tail quarantined) and with producer state,
// aborted transactions and leader-epoch changes spread over the segments.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "log/log.h"
#include "log/log_file_names.h"
#include "log/segment_scan_split.h"
#include "record/control_record.h"
#include "record/record_batch_builder.h"
#include "recovery/log_loader.h"
#include "support/test_support.h"

namespace daruma::testing {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kParallelNow = 1700000000000;
constexpr int kSegments = 8;
constexpr int kBatchesPerSegment = 12;

std::string ToString(const Bytes& b) {
  return std::string(b.begin(), b.end());
}

// Batch `b` of segment `s`: every third transactional for producer 9 (an
// ABORT marker closes each such transaction at the segment's end), the rest
// alternate idempotent producer 7 and no producer. Epoch = segment / 2.
Bytes MakeBatch(int s, int b, int64_t offset, int32_t* seq7) {
  BatchBuilderOptions o;
  o.base_offset = offset;
  o.partition_leader_epoch = s / 2;
  std::vector<RecordInput> records;
  if (b == kBatchesPerSegment - 1) {
    o.producer_id = 9;
    o.producer_epoch = 0;
    o.is_control = true;
    o.is_transactional = true;
    records.push_back({kParallelNow + offset,
                       ToString(EncodeControlRecordKey(ControlRecordType::kAbort)),
                       ToString(EncodeEndTxnMarkerValue(3)),
                       {}});
  } else {
    if (b % 3 == 0) {
      o.producer_id = 9;
      o.producer_epoch = 0;
      o.base_sequence = 0;
      o.is_transactional = true;
    } else if (b % 2 == 0) {
      o.producer_id = 7;
      o.producer_epoch = 0;
      o.base_sequence = *seq7;
      *seq7 += 2;
    }
    for (int r = 0; r < 2; ++r) {
      records.push_back(
          {kParallelNow + offset + r, "k" + std::to_string(r), std::string(90, 'v'), {}});
    }
  }
  auto bytes = BuildRecordBatch(o, records);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return *bytes;
}

// Every file under `root` (relative name -> bytes, with `root` replaced in
// contents, as the quarantine manifest names absolute paths).
std::map<std::string, std::string> Snapshot(const std::string& root) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    std::string data = ReadFileToString(e.path());
    for (size_t at = data.find(root); at != std::string::npos; at = data.find(root, at)) {
      data.replace(at, root.size(), "<root>");
    }
    out[fs::relative(e.path(), root)] = data;
  }
  return out;
}

// (recovery threads, the last segment's scan split in two even when tiny:
// SplitSegmentScan splits only segments of 8 MiB and more unless told).
// Threads 0: one recovery thread, and a loading thread with no partition
// left lends itself through a ScanHelpPool (a dir with more partitions than
// threads).
class ParallelRecoveryTest : public ::testing::TestWithParam<std::tuple<int, bool>> {
 protected:
  void SetUp() override {
    if (std::get<1>(GetParam())) SplitSegmentScan::set_min_split_bytes_for_testing(1);
    config_.segment_index_bytes = 4096;
    config_.index_interval_bytes = 300;
    const std::string part = tmp_.Join("source/t-0");
    fs::create_directories(part);
    ManualClock clock(kParallelNow);
    auto log = Log::CreateEmpty(FileSystem::Default(), part, {"t", 0}, config_, &clock);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    int64_t offset = 0;
    int32_t seq7 = 0;
    for (int s = 0; s < kSegments; ++s) {
      if (s > 0) {
        ASSERT_TRUE((*log)->Roll().ok());
      }
      for (int b = 0; b < kBatchesPerSegment; ++b) {
        Bytes batch = MakeBatch(s, b, offset, &seq7);
        offset += RecordBatchView(batch).last_offset_delta() + 1;
        auto appended = (*log)->AppendAsFollower(batch);
        ASSERT_TRUE(appended.ok()) << appended.status().ToString();
      }
    }
    ASSERT_TRUE((*log)->Close().ok());
    segment_bases_.clear();
    for (const auto& e : fs::directory_iterator(part)) {
      const std::string name = e.path().filename();
      if (HasSuffix(name, ".log")) segment_bases_.push_back(*OffsetFromFileName(name));
    }
    std::sort(segment_bases_.begin(), segment_bases_.end());
    ASSERT_EQ(segment_bases_.size(), size_t(kSegments));
  }

  void TearDown() override {
    SplitSegmentScan::set_min_split_bytes_for_testing(SplitSegmentScan::kMinSplitBytes);
  }

  std::string SourceSegment(size_t i) const {
    return tmp_.Join("source/t-0/") + FilenamePrefixFromOffset(segment_bases_[i]) + ".log";
  }

  // Copies the source dir and loads it uncleanly from `recovery_point`, or
  // as after a clean shutdown.
  std::map<std::string, std::string> LoadCopy(const std::string& name, int threads,
                                              int64_t recovery_point,
                                              PartitionRecoveryReport* report, bool clean = false) {
    const std::string root = tmp_.Join(name);
    CopyTree(tmp_.Join("source"), root);
    ManualClock clock(kParallelNow + 1000);
    LoadLogParams p;
    p.log_dir = root;
    p.partition_dir = root + "/t-0";
    p.tp = TopicPartition{"t", 0};
    p.config = config_;
    p.clock = &clock;
    p.recovery_point_checkpoint = recovery_point;
    p.had_clean_shutdown = clean;
    p.recovery_threads = std::max(1, threads);
    ScanHelpPool pool;
    std::thread helper;
    if (threads == 0) {
      p.scan_help = &pool;
      helper = std::thread([&pool] { pool.Serve(); });
    }
    auto log = LoadLog(p, report);
    pool.Close();
    if (helper.joinable()) helper.join();
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    if (log.ok()) {
      EXPECT_TRUE((*log)->Close().ok());
    }
    return Snapshot(root);
  }

  void ExpectSameAsOneThread(int64_t recovery_point, bool clean = false) {
    PartitionRecoveryReport one, many;
    const auto expected = LoadCopy("one", 1, recovery_point, &one, clean);
    const auto actual = LoadCopy("many", std::get<0>(GetParam()), recovery_point, &many, clean);
    ASSERT_EQ(expected.size(), actual.size());
    for (const auto& [name, bytes] : expected) {
      auto it = actual.find(name);
      ASSERT_NE(it, actual.end()) << name;
      EXPECT_EQ(it->second, bytes) << name;
    }
    EXPECT_EQ(many.truncated_bytes, one.truncated_bytes);
    EXPECT_EQ(many.recovered_segments, one.recovered_segments);
    EXPECT_EQ(many.log_end_offset, one.log_end_offset);
    EXPECT_EQ(many.leader_epochs, one.leader_epochs);
    EXPECT_EQ(many.aborted_transactions.size(), one.aborted_transactions.size());
    EXPECT_EQ(many.warnings.size(), one.warnings.size());
    // The workload reaches every kind of state the fold applies.
    EXPECT_GT(one.recovered_segments, 1);
    EXPECT_GT(one.leader_epochs.size(), 1u);
    EXPECT_FALSE(one.aborted_transactions.empty());
  }

  TempDir tmp_;
  LogConfig config_;
  std::vector<int64_t> segment_bases_;
};

TEST_P(ParallelRecoveryTest, IntactLogGivesTheSameFiles) {
  const int64_t joins = SplitSegmentScan::joins();
  ExpectSameAsOneThread(0);
  // Split, the last segment's parts were joined, not scanned again.
  if (std::get<1>(GetParam())) {
    EXPECT_GT(SplitSegmentScan::joins(), joins);
  }
}

TEST_P(ParallelRecoveryTest, CorruptBatchInAMiddleSegmentGivesTheSameFiles) {
  // A flipped byte in the 5th batch of segment 3 fails its CRC: segment 3 is
  // cut there and segments 4-7 (scanned ahead) are discarded unchanged.
  std::string bytes = ReadFileToString(SourceSegment(3));
  const size_t at = bytes.size() / 2;
  bytes[at] = char(bytes[at] ^ 0x5a);
  WriteStringToFile(SourceSegment(3), bytes);
  ExpectSameAsOneThread(0);
  const auto files = Snapshot(tmp_.Join("many"));
  EXPECT_EQ(files.count("t-0/" + FilenamePrefixFromOffset(segment_bases_[4]) + ".log"), 0u);
  EXPECT_EQ(files.count("t-0/" + FilenamePrefixFromOffset(segment_bases_[3]) + ".log"), 1u);
}

TEST_P(ParallelRecoveryTest, RecoveryPointInAMiddleSegmentGivesTheSameFiles) {
  ExpectSameAsOneThread(segment_bases_[5] + 3);
}

TEST_P(ParallelRecoveryTest, MissingIndexesGiveTheSameFiles) {
  for (size_t i : {size_t(2), size_t(6)}) {
    fs::remove(tmp_.Join("source/t-0/") + FilenamePrefixFromOffset(segment_bases_[i]) + ".index");
  }
  ExpectSameAsOneThread(segment_bases_[1]);
}

void RemoveIndex(const TempDir& tmp, int64_t base) {
  ASSERT_TRUE(fs::remove(tmp.Join("source/t-0/") + FilenamePrefixFromOffset(base) + ".index"));
}

// Pass 4 (Kafka rebuilds a segment whose offset index is missing at load):
// the scans of those segments run ahead on the spare threads.
TEST_P(ParallelRecoveryTest, CleanStartWithMissingIndexesGivesTheSameFiles) {
  for (size_t i : {size_t(0), size_t(1), size_t(2), size_t(5), size_t(7)}) {
    RemoveIndex(tmp_, segment_bases_[i]);
  }
  ExpectSameAsOneThread(segment_bases_.back(), /*clean=*/true);
}

// Both passes at once: indexes missing below the recovery point (pass 4,
// scanned ahead) and above it (deferred to pass 5's one scan), with a corrupt
// batch in a pass-4 segment (cut there; later segments stay, as in Kafka).
TEST_P(ParallelRecoveryTest, MissingIndexesOnBothSidesOfTheRecoveryPointGiveTheSameFiles) {
  for (size_t i : {size_t(0), size_t(1), size_t(2), size_t(3), size_t(6)}) {
    RemoveIndex(tmp_, segment_bases_[i]);
  }
  std::string bytes = ReadFileToString(SourceSegment(2));
  const size_t at = bytes.size() / 2;
  bytes[at] = char(bytes[at] ^ 0x5a);
  WriteStringToFile(SourceSegment(2), bytes);
  ExpectSameAsOneThread(segment_bases_[5] + 3);
  const auto files = Snapshot(tmp_.Join("many"));
  EXPECT_EQ(files.count("t-0/" + FilenamePrefixFromOffset(segment_bases_[3]) + ".log"), 1u);
  EXPECT_LT(files.at("t-0/" + FilenamePrefixFromOffset(segment_bases_[2]) + ".log").size(),
            bytes.size());
}

INSTANTIATE_TEST_SUITE_P(Threads, ParallelRecoveryTest,
                         ::testing::Combine(::testing::Values(0, 2, 3), ::testing::Bool()));

}  // namespace
}  // namespace daruma::testing
