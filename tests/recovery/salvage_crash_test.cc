// `repair --salvage` is all or nothing per partition (issue 22 rule 6, issue
// 25): a crash at any file operation of ApplyRepair with salvage, by power
// loss or a process kill, leaves the partition dir, once the next load has
// rolled back an interrupted repair, either as it was or as an
// uninterrupted salvage leaves it; and a rerun from the old state completes
// the salvage exactly.
//
// Data: tools/generated_log_dir.h (3 segments of 10 batches) with a flipped
// CRC byte in segment 0 (rewritten through `.cleaned` and a rename), segment
// 1 zeroed whole (removed: no batch in it is kept) and a torn tail in
// segment 2 (truncated), so every kind of salvage write is crashed.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/clock.h"
#include "log/log_file_names.h"
#include "recovery/load_transaction.h"
#include "recovery/log_checker.h"
#include "recovery/log_repairer.h"
#include "recovery/quarantine.h"
#include "support/damaged_fixture.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"
#include "tools/generated_log_dir.h"

namespace daruma::testing {
namespace {

using Image = std::map<std::string, std::vector<uint8_t>>;
namespace testlog = tools::testlog;

class SalvageCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // DirLock works on the real path, so the log dir exists on disk too; the
    // data lives in memory under the same path.
    log_dir_ = tmp_.Join("logdir");
    testlog::WriteLogDir(log_dir_);
    partition_dir_ = JoinPath(log_dir_, "t-0");
    const std::string seg0 = testlog::SegmentFile(log_dir_, 0, ".log");
    const std::string seg1 = testlog::SegmentFile(log_dir_, testlog::SegmentBase(1), ".log");
    const std::string seg2 = testlog::SegmentFile(log_dir_, testlog::SegmentBase(2), ".log");
    testlog::FlipByte(seg0, testlog::Batches(seg0)[3].position + 17);
    std::string data = ReadFileToString(seg1);
    std::fill(data.begin(), data.end(), '\0');
    WriteStringToFile(seg1, data);
    data = ReadFileToString(seg2);
    data.resize(data.size() - 7);
    WriteStringToFile(seg2, data);
    files_ = ReadTree(log_dir_);
  }

  // Plans on `mem`, then applies with salvage through a fault layer crashing
  // at op `n` (0: never). Returns the fault layer's op count; `image` (if
  // set) gets the durable state.
  uint64_t SalvageWithCrash(MemFileSystem* mem, uint64_t n, MemFileSystem* image) {
    ManualClock clock(testlog::kNow);
    CheckOptions co;
    co.fs = mem;
    co.clock = &clock;
    co.config = testlog::TestConfig();
    co.drop_cache = false;
    auto plan = CheckLogDir(log_dir_, co);
    EXPECT_TRUE(plan.ok());
    if (!plan.ok()) return 0;
    FaultInjectionFileSystem fault(mem, n + 11);
    if (n > 0) fault.CrashAt(n);
    RepairApplyOptions ro;
    ro.fs = &fault;
    ro.clock = &clock;
    ro.config = testlog::TestConfig();
    ro.salvage = true;
    AppliedRepair applied;
    Status st = ApplyRepair(*plan, ro, &applied);
    if (n == 0) {
      EXPECT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(applied.salvaged.size(), 1u);
      EXPECT_TRUE(!applied.salvaged.empty() && applied.salvaged[0].has_value());
    }
    if (image != nullptr) {
      EXPECT_TRUE(fault.MaterializeDurableState(image, log_dir_, false).ok());
    }
    return fault.op_count();
  }

  // The base offsets of the batches in the `.log` files of `files`.
  static std::vector<int64_t> Offsets(const Image& files) {
    std::vector<int64_t> out;
    for (const auto& [path, bytes] : files) {
      if (!HasSuffix(path, ".log") || path.find(kQuarantineDirName) != std::string::npos) continue;
      for (size_t pos = 0; pos + 12 <= bytes.size();) {
        out.push_back(int64_t(LoadBe64(bytes.data() + pos)));
        pos += 12 + LoadBe32(bytes.data() + pos + 8);
      }
    }
    return out;
  }

  TempDir tmp_;
  std::string log_dir_, partition_dir_;
  Image files_;
};

TEST_F(SalvageCrashTest, CrashAtEveryStepLeavesTheOldOrTheSalvagedPartitionAndARerunCompletes) {
  MemFileSystem original;
  WriteTree(files_, &original);
  const Image before = original.Files(partition_dir_);
  MemFileSystem reference;
  WriteTree(files_, &reference);
  const uint64_t total = SalvageWithCrash(&reference, 0, nullptr);
  const Image salvaged = reference.Files(partition_dir_);
  ASSERT_NE(salvaged, before);
  // Segment 0 without batch 3 (offsets 9..11), segment 1 gone, segment 2
  // without its torn last batch.
  std::vector<int64_t> expected;
  for (int64_t o = 0; o < 30; o += 3) {
    if (o != 9) expected.push_back(o);
  }
  for (int64_t o = 60; o < 87; o += 3) expected.push_back(o);
  EXPECT_EQ(Offsets(salvaged), expected);
  EXPECT_FALSE(reference.Exists(testlog::SegmentFile(log_dir_, testlog::SegmentBase(1), ".log")));
  ASSERT_GT(total, 30u);

  int64_t old_states = 0, new_states = 0;
  for (uint64_t n = 1; n <= total; ++n) {
    for (int kill = 0; kill < 2; ++kill) {
      SCOPED_TRACE("crash at op " + std::to_string(n) + (kill ? " (kill)" : " (power loss)"));
      MemFileSystem mem;
      WriteTree(files_, &mem);
      MemFileSystem image;
      SalvageWithCrash(&mem, n, kill ? nullptr : &image);
      MemFileSystem& after = kill ? mem : image;
      auto rolled = LoadTransaction::RollBackInterrupted(&after, partition_dir_);
      ASSERT_TRUE(rolled.ok()) << rolled.status().ToString();
      const Image now = after.Files(partition_dir_);
      if (now == before) {
        ++old_states;
        // The rerun completes the salvage exactly.
        SalvageWithCrash(&after, 0, nullptr);
        EXPECT_TRUE(after.Files(partition_dir_) == salvaged);
        continue;
      }
      ++new_states;
      if (now == salvaged) continue;
      // The committed salvage, before its logs were closed (indexes not yet
      // trimmed, no snapshot at the LEO): only then may files differ from
      // the reference, and never a .log, .txnindex or quarantined byte.
      for (const auto& [path, bytes] : now) {
        if (HasSuffix(path, ".log") || HasSuffix(path, ".txnindex") ||
            path.find(kQuarantineDirName) != std::string::npos) {
          auto it = salvaged.find(path);
          EXPECT_TRUE(it != salvaged.end() && it->second == bytes) << path;
        }
      }
      EXPECT_EQ(Offsets(now), expected);
      EXPECT_FALSE(after.Exists(JoinPath(partition_dir_, kLoadUndoDirName)));
    }
  }
  EXPECT_GT(old_states, 0);
  EXPECT_GT(new_states, 0);
}

}  // namespace
}  // namespace daruma::testing
