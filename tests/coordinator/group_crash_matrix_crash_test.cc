// The group crash matrix (issue 21): the consumer-group workload of
// group_crash_workload.h on a FaultInjectionFileSystem, crashed or failed at
// operation N, then recovered (LogManager::Startup on the image, a fresh
// GroupCoordinator, Load) and checked against what clients were told
// (group_crash_model.h): every acknowledged commit is there with exactly its
// offset, epoch and metadata unless a later commit to the same partition was
// attempted, no offset appears that was never committed there, acknowledged
// deletes stay deleted, and each group is back at its last acknowledged
// stored generation or a later attempted one.
//
// Modes per crash point N (as tests/recovery/crash_matrix_crash_test.cc):
//   kill        op N and everything after fail; recovery on the file system
//               as it is (the page cache survived: process death).
//   power       only fsynced data and dir-synced names survive.
//   torn        power, plus a random prefix of the last unsynced write.
//   eio/enospc  op N alone fails (alternating) and the workload goes on, as
//               the broker does: the log whose write failed stops writing
//               (Log::write_failure) and its dir goes offline; the
//               coordinator answers errors for what it could not store.
//               With DARUMA_GROUP_CRASH_EIO=offline every later op fails
//               too (the whole process loses the dir at once).
//
// The default was `offline` until the log layer stopped writing after a
// failed write: an append whose records were written but whose index entry
// failed used to leave the segment's size ahead of the log end offset, the
// next appends reused the same offsets, and the next unclean start truncated
// at the first duplicate, losing acknowledged commits and deletes after it
// (enospc@178, eio@179).
//
// Environment (scripts/crash-matrix.sh):
//   DARUMA_CRASH_POINTS=all|<count>  every point 1..ops+1 (the default: the
//                                    whole matrix takes well under a minute),
//                                    or an evenly spread sample; the first,
//                                    middle and last op of the compaction
//                                    step are always added.
//   DARUMA_GROUP_CRASH_EIO=continue|offline  eio/enospc semantics (above;
//                                            default continue).
// Prints "CRASH-MATRIX-GROUPS ops=.. points=.. ... violations=.." and the
// first examples of each kind of violation.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "coordinator/group_crash_workload.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma::testing {
namespace {

using Mode = CrashMode;

// Every point 1..total, or DARUMA_CRASH_POINTS of them spread evenly, plus
// the first, middle and last op of the compaction step.
std::vector<uint64_t> CrashPoints(uint64_t total, const GroupWorkloadSteps& steps) {
  std::vector<uint64_t> out;
  const char* env = std::getenv("DARUMA_CRASH_POINTS");
  if (env == nullptr || *env == '\0' || std::string(env) == "all") {
    for (uint64_t i = 1; i <= total; ++i) out.push_back(i);
  } else {
    const uint64_t count = std::clamp<uint64_t>(std::strtoull(env, nullptr, 10), 1, total);
    for (uint64_t i = 0; i < count; ++i) {
      out.push_back(1 + (count == 1 ? 0 : i * (total - 1) / (count - 1)));
    }
  }
  for (const auto& [first, end] : steps.compaction) {
    if (end > first) out.insert(out.end(), {first, first + (end - first) / 2, end - 1});
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool ContinueAfterEio() {
  const char* env = std::getenv("DARUMA_GROUP_CRASH_EIO");
  return env == nullptr || std::string(env) != "offline";
}

class GroupCrashMatrixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // DirLock uses the real file system: the log dir must exist on disk too.
    log_dir_ = tmp_.Join("logs");
    std::filesystem::create_directories(log_dir_);
  }

  std::unique_ptr<MemFileSystem> FreshBase() const {
    auto base = std::make_unique<MemFileSystem>();
    EXPECT_TRUE(base->CreateDir(log_dir_).ok());
    return base;
  }

  // Runs the workload with one fault into *history; returns the image to
  // recover.
  std::unique_ptr<MemFileSystem> RunWithFault(uint64_t point, Mode mode, GroupHistory* history,
                                              std::string* last_op) {
    auto base = FreshBase();
    GroupTime time(kGroupWorkloadStartMs);
    FaultInjectionFileSystem fs(base.get(), point);
    if (mode == Mode::kEio || mode == Mode::kEnospc) {
      fs.FailAt(point, mode == Mode::kEio ? InjectedError::kEio : InjectedError::kEnospc);
      if (!ContinueAfterEio()) fs.CrashAt(point + 1);  // the dir goes offline
    } else {
      fs.CrashAt(point);
    }
    {
      GroupCrashWorkload workload(&fs, log_dir_, &time, history);
      (void)workload.Run();  // fails at a crash, or completes
    }
    const auto log = fs.op_log();
    *last_op = log.size() >= point ? log[point - 1] : "";
    if (mode != Mode::kPower && mode != Mode::kTorn) return base;
    auto image = std::make_unique<MemFileSystem>();
    Status m = fs.MaterializeDurableState(image.get(), log_dir_, mode == Mode::kTorn);
    EXPECT_TRUE(m.ok()) << m.ToString();
    if (!image->Exists(log_dir_)) {
      EXPECT_TRUE(image->CreateDir(log_dir_).ok());
    }
    return image;
  }

  TempDir tmp_;
  std::string log_dir_;
};

// Records the compaction removed from the logs: appended minus left.
int64_t CompactedAway(MemFileSystem* base, const std::string& log_dir,
                      const GroupHistory& history) {
  int64_t appended = 0;
  for (const auto& [k, h] : history.offsets) appended += int64_t(h.ops.size());
  for (const auto& [g, h] : history.groups) appended += int64_t(h.ops.size());
  ManualClock clock(kGroupWorkloadStartMs);
  LogManagerOptions options;
  options.fs = base;
  options.clock = &clock;
  LogManager manager(options);
  EXPECT_TRUE(manager.Startup({log_dir}, GroupBrokerDefaults(), 1).ok());
  LogGroupStorage storage(CrashOffsetsLogFor(&manager), &clock);
  int64_t left = 0;
  for (int32_t p = 0; p < kGroupOffsetsPartitions; ++p) {
    EXPECT_TRUE(storage
                    .ReadBatches(p,
                                 [&](const RecordBatchView& b) {
                                   left += b.records_count();
                                   return Status::Ok();
                                 })
                    .ok());
  }
  return appended - left;
}

TEST_F(GroupCrashMatrixTest, EveryAcknowledgedCommitSurvivesEveryCrashPoint) {
  const auto started = std::chrono::steady_clock::now();
  // A fault-free run counts the operations and checks the workload itself.
  uint64_t total = 0;
  GroupWorkloadSteps steps;
  int64_t acked = 0;
  int64_t compacted_away = 0;
  {
    auto base = FreshBase();
    GroupTime time(kGroupWorkloadStartMs);
    FaultInjectionFileSystem fs(base.get());
    GroupHistory history;
    GroupCrashWorkload workload(&fs, log_dir_, &time, &history, [&fs] { return fs.op_count(); });
    Status st = workload.Run();
    ASSERT_TRUE(st.ok()) << st.ToString();
    total = fs.op_count();
    steps = workload.steps();
    ASSERT_GT(total, 200u);
    ASSERT_EQ(steps.compaction.size(), 1u);
    EXPECT_GT(steps.compaction[0].second, steps.compaction[0].first);
    EXPECT_TRUE(history.problems.empty()) << history.problems[0];
    // Every group's partition is used, every group stored metadata, and
    // every key but the deleted ones ends acknowledged.
    std::set<int32_t> partitions;
    for (const auto& [k, h] : history.offsets) {
      partitions.insert(OffsetsPartitionFor(std::get<0>(k), kGroupOffsetsPartitions));
      acked += h.last_acked >= 0;
      EXPECT_EQ(h.last_acked, int64_t(h.ops.size()) - 1) << KeyName(k);
    }
    EXPECT_EQ(partitions.size(), size_t(kGroupOffsetsPartitions));
    // The rebalances happened: orders-app ends acknowledged at generation 3
    // (two members, then three, then two after the restart); reports and
    // audit-trail end with an acknowledged delete after an Empty generation.
    for (const char* g : {kOrders, kReports, kAudit}) {
      ASSERT_TRUE(history.groups.count(g)) << g;
      const KeyHistory<StoredGroup>& h = history.groups.at(g);
      EXPECT_EQ(h.last_acked, int64_t(h.ops.size()) - 1) << g;
      EXPECT_EQ(h.StateAfter(h.last_acked).has_value(), g == std::string(kOrders)) << g;
    }
    EXPECT_EQ(history.groups.at(kOrders).ops.back().value->generation, 3);
    EXPECT_EQ(history.groups.at(kReports).ops.size(), 4u);
    GroupCrashTally clean;
    RecoverGroupsAndCheck(base.get(), log_dir_, history, "no fault", &clean);
    EXPECT_EQ(clean.Violations(), 0) << clean.Summary() << "\n"
                                     << (clean.examples.empty() ? "" : clean.examples[0]);
    compacted_away = CompactedAway(base.get(), log_dir_, history);
    EXPECT_GT(compacted_away, 0);  // the cleaner ran over the offsets logs
  }

  GroupCrashTally tally;
  int64_t compaction_points = 0;
  for (uint64_t point : CrashPoints(total + 1, steps)) {
    for (Mode mode :
         {Mode::kKill, Mode::kPower, Mode::kTorn, point % 2 ? Mode::kEio : Mode::kEnospc}) {
      GroupHistory history;
      std::string last_op;
      std::unique_ptr<MemFileSystem> image = RunWithFault(point, mode, &history, &last_op);
      ++tally.points;
      for (const auto& [first, end] : steps.compaction) {
        compaction_points += point >= first && point < end;
      }
      const std::string label =
          std::string(CrashModeName(mode)) + "@" + std::to_string(point) + " [" + last_op + "]";
      RecoverGroupsAndCheck(image.get(), log_dir_, history, label, &tally);
    }
  }
  const auto seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "CRASH-MATRIX-GROUPS ops=" << total << " " << tally.Summary()
            << " eio=" << (ContinueAfterEio() ? "continue" : "offline")
            << " compaction_points=" << compaction_points << " acked_keys=" << acked
            << " compacted_away=" << compacted_away << " seconds=" << int64_t(seconds) << std::endl;
  for (const auto& e : tally.examples) std::cout << "  " << e << "\n";
  EXPECT_EQ(tally.Violations(), 0) << tally.Summary();
  EXPECT_EQ(tally.recoveries, tally.points);
  EXPECT_GT(compaction_points, 0);
}

}  // namespace
}  // namespace daruma::testing
