// `repair` is all or nothing per partition too (issue 25): a crash at any
// step of ApplyRepair, with power loss or a process kill, leaves each
// partition dir either as it was before the repair or as an uninterrupted
// repair leaves it, once the next load has rolled back an interrupted one.
//
// Data: Kafka's transactional fixture (7 segments, 36 aborted transactions)
// with a torn tail in its last segment; repair plans a truncation there and
// re-scans, re-indexes and re-snapshots the whole partition.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/clock.h"
#include "log/log_file_names.h"
#include "recovery/load_transaction.h"
#include "recovery/log_checker.h"
#include "recovery/log_repairer.h"
#include "support/damaged_fixture.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma::testing {
namespace {

using Image = std::map<std::string, std::vector<uint8_t>>;

constexpr int64_t kNowMs = 1700000000000;

LogConfig FixtureConfig() {
  LogConfig config;
  config.segment_index_bytes = 65536;
  config.index_interval_bytes = 1024;
  return config;
}

class RepairTransactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DARUMA_REQUIRE_FIXTURES();
    // DirLock works on the real path, so the log dir exists on disk too; the
    // data lives in memory under the same path.
    log_dir_ = tmp_.Join("logdir");
    CopyTree(FixturesDir() + "/kafka-generated/transactional/logdir", log_dir_);
    partition_dir_ = log_dir_ + "/fixture-txn-0";
    const std::string last = partition_dir_ + "/00000000000000000472.log";
    std::string data = ReadFileToString(last);
    data.resize(data.size() - 5);  // torn tail
    WriteStringToFile(last, data);
    files_ = ReadTree(log_dir_);
  }

  // Plans on `fs`, then applies through a fault layer crashing at op `n`
  // (0: never). Returns the fault layer's op count; `image` (if set) gets
  // the durable state.
  uint64_t RepairWithCrash(MemFileSystem* mem, uint64_t n, MemFileSystem* image) {
    ManualClock clock(kNowMs);
    CheckOptions co;
    co.fs = mem;
    co.clock = &clock;
    co.config = FixtureConfig();
    co.drop_cache = false;
    auto plan = CheckLogDir(log_dir_, co);
    EXPECT_TRUE(plan.ok());
    if (!plan.ok()) return 0;
    EXPECT_TRUE(plan->HasProblems());
    FaultInjectionFileSystem fault(mem, n + 7);
    if (n > 0) fault.CrashAt(n);
    RepairApplyOptions ro;
    ro.fs = &fault;
    ro.clock = &clock;
    ro.config = FixtureConfig();
    AppliedRepair applied;
    Status st = ApplyRepair(*plan, ro, &applied);
    if (n == 0) {
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
    if (image != nullptr) {
      EXPECT_TRUE(fault.MaterializeDurableState(image, log_dir_, false).ok());
    }
    return fault.op_count();
  }

  TempDir tmp_;
  std::string log_dir_, partition_dir_;
  Image files_;
};

TEST_F(RepairTransactionTest, CrashAtEveryStepLeavesTheOldOrTheRepairedPartition) {
  MemFileSystem original;
  WriteTree(files_, &original);
  const Image before = original.Files(partition_dir_);
  MemFileSystem reference;
  WriteTree(files_, &reference);
  const uint64_t total = RepairWithCrash(&reference, 0, nullptr);
  const Image repaired = reference.Files(partition_dir_);
  ASSERT_NE(repaired, before);
  ASSERT_GT(total, 20u);
  int64_t old_states = 0, new_states = 0;
  for (uint64_t n = 1; n <= total; ++n) {
    for (int kill = 0; kill < 2; ++kill) {
      SCOPED_TRACE("crash at op " + std::to_string(n) + (kill ? " (kill)" : " (power loss)"));
      MemFileSystem mem;
      WriteTree(files_, &mem);
      MemFileSystem image;
      RepairWithCrash(&mem, n, kill ? nullptr : &image);
      MemFileSystem& after = kill ? mem : image;
      auto rolled = LoadTransaction::RollBackInterrupted(&after, partition_dir_);
      ASSERT_TRUE(rolled.ok()) << rolled.status().ToString();
      const Image now = after.Files(partition_dir_);
      if (now == before) {
        ++old_states;
      } else if (now == repaired) {
        ++new_states;
      } else {
        // The committed repair, before its logs were closed (indexes not yet
        // trimmed, no snapshot at the LEO): only then may the files differ
        // from the reference, and never in a .log or .txnindex.
        for (const auto& [path, bytes] : now) {
          if (HasSuffix(path, ".log") || HasSuffix(path, ".txnindex")) {
            auto it = repaired.find(path);
            EXPECT_TRUE(it != repaired.end() && it->second == bytes) << path;
          }
        }
        EXPECT_FALSE(after.Exists(partition_dir_ + "/" + kLoadUndoDirName));
        ++new_states;
      }
    }
  }
  EXPECT_GT(old_states, 0);
  EXPECT_GT(new_states, 0);
}

}  // namespace
}  // namespace daruma::testing
