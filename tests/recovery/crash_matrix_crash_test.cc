// The crash matrix (issue 8): runs the deterministic workload of
// crash_workload.h on a FaultInjectionFileSystem, crashes or fails it at
// operation N, recovers the resulting image with LogManager::Startup and
// checks every invariant (crash_workload.h, log_invariants.h).
//
// Modes per crash point N:
//   kill      op N and everything after fail; recovery runs on the file
//             system as it is (the page cache survived: process death).
//   power     only fsynced data and dir-synced names survive (LazyFS).
//   torn      power, plus a random prefix of the last unsynced write.
//   eio/enospc  op N alone fails; the workload stops at the first failed
//             step (the dir would go offline); recovery on the volatile state.
//
// Environment (for scripts/crash-matrix.sh):
//   DARUMA_CRASH_POINTS=all|<count>  all points 1..ops+1, or an evenly spread
//                                    sample (default 24, the CI sample; the
//                                    first, middle and last op of every
//                                    background step are always added)
//   DARUMA_CRASH_SEED=<n>            workload and tear seed (default 1)
// Prints one line "CRASH-MATRIX seed=.. ops=.. points=.. ..." with the counts,
// including how many crash points fell inside the workload's background steps
// (retention_points, compaction_points, delayed_delete_points; see
// crash_workload.h) and what the fault-free run's steps did
// (retained_from: orders-0's log start after recovery; compacted_away:
// profiles-2 records the cleaner removed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "recovery/crash_workload.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma::testing {
namespace {

using Mode = CrashMode;

// The crash points to run: every point, or `count` spread evenly (always
// including the first and the last).
std::vector<uint64_t> CrashPoints(uint64_t total) {
  const char* env = std::getenv("DARUMA_CRASH_POINTS");
  if (env != nullptr && std::string(env) == "all") {
    std::vector<uint64_t> all(total);
    for (uint64_t i = 0; i < total; ++i) all[i] = i + 1;
    return all;
  }
  const uint64_t count = std::min<uint64_t>(EnvU64("DARUMA_CRASH_POINTS", 24), total);
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < count; ++i) {
    out.push_back(1 + (count == 1 ? 0 : i * (total - 1) / (count - 1)));
  }
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The sample plus the first, middle and last op of every background step, so
// the CTest sample always crashes inside retention, compaction and the delayed
// delete. Sorted, without duplicates.
std::vector<uint64_t> WithStepPoints(std::vector<uint64_t> points, const WorkloadSteps& steps) {
  for (const auto* ranges : {&steps.retention, &steps.compaction, &steps.delayed_delete}) {
    for (const auto& [first, end] : *ranges) {
      if (end <= first) continue;
      points.insert(points.end(), {first, first + (end - first) / 2, end - 1});
    }
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  return points;
}

class CrashMatrixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // DirLock uses the real file system: the log dir must exist on disk too.
    log_dir_ = tmp_.Join("logs");
    std::filesystem::create_directories(log_dir_);
  }

  // A base file system holding just the (durable) empty log dir.
  static std::unique_ptr<MemFileSystem> FreshBase(const std::string& log_dir) {
    auto base = std::make_unique<MemFileSystem>();
    EXPECT_TRUE(base->CreateDir(log_dir).ok());
    return base;
  }

  // Runs the workload with one fault; returns the model of what was written
  // and acknowledged and leaves the image to recover in *image.
  WorkloadModel RunWithFault(uint64_t seed, uint64_t point, Mode mode,
                             std::unique_ptr<MemFileSystem>* image, uint64_t* ops_seen,
                             std::string* last_op) {
    auto base = FreshBase(log_dir_);
    WorkloadModel model;
    ManualClock clock(kWorkloadNowMs);
    {
      FaultInjectionFileSystem fs(base.get(), seed * 7919 + point);
      if (mode == Mode::kEio || mode == Mode::kEnospc) {
        fs.FailAt(point, mode == Mode::kEio ? InjectedError::kEio : InjectedError::kEnospc);
      } else {
        fs.CrashAt(point);
      }
      CrashWorkload workload(&fs, log_dir_, seed, &clock, /*background_steps=*/true);
      Status st = workload.Run();  // fails at the fault (or completes)
      model = workload.model();
      *ops_seen = fs.op_count();
      const auto log = fs.op_log();
      *last_op = log.empty() ? "" : log.back();
      if (mode == Mode::kPower || mode == Mode::kTorn) {
        *image = std::make_unique<MemFileSystem>();
        Status m = fs.MaterializeDurableState(image->get(), log_dir_, mode == Mode::kTorn);
        EXPECT_TRUE(m.ok()) << m.ToString();
        if (!(*image)->Exists(log_dir_)) {
          EXPECT_TRUE((*image)->CreateDir(log_dir_).ok());
        }
        return model;
      }
    }
    *image = std::move(base);
    return model;
  }

  TempDir tmp_;
  std::string log_dir_;
};

TEST_F(CrashMatrixTest, EveryCrashPointRecoversWithEveryInvariant) {
  const uint64_t seed = EnvU64("DARUMA_CRASH_SEED", 1);
  // A dry run counts the operations of the whole workload.
  uint64_t total = 0;
  WorkloadSteps steps;
  int64_t retained_from = 0;
  int64_t compacted_away = 0;
  {
    auto base = FreshBase(log_dir_);
    ManualClock clock(kWorkloadNowMs);
    FaultInjectionFileSystem fs(base.get(), seed);
    CrashWorkload workload(&fs, log_dir_, seed, &clock, /*background_steps=*/true,
                           [&fs] { return fs.op_count(); });
    Status st = workload.Run();
    ASSERT_TRUE(st.ok()) << st.ToString();
    total = fs.op_count();
    steps = workload.steps();
    ASSERT_GT(total, 100u);
    // Sanity: the fault-free run acknowledged everything it wrote, and its
    // background steps did something.
    for (const auto& [tp, part] : workload.model()) {
      EXPECT_EQ(part.acked_end, int64_t(part.written.size())) << tp.ToString();
    }
    ASSERT_EQ(steps.retention.size(), 1u);
    ASSERT_EQ(steps.compaction.size(), 1u);
    ASSERT_EQ(steps.delayed_delete.size(), 1u);
    LogManagerOptions options;
    options.fs = base.get();
    options.clock = &clock;
    LogManager recovered(options);
    ASSERT_TRUE(recovered.Startup({log_dir_}, CrashMatrixConfig(seed), 1).ok());
    retained_from = recovered.GetLog(kPlainTp)->log_start_offset();
    EXPECT_GE(retained_from, workload.model().at(kPlainTp).deletable_below);
    EXPECT_GT(retained_from, 0);
    Log* compacted = recovered.GetLog(kCompactTp);
    ASSERT_NE(compacted, nullptr);
    EXPECT_TRUE(compacted->config_snapshot().compact);  // from daruma-topic-configs.json
    compacted_away =
        workload.model().at(kCompactTp).acked_end - int64_t(ScanLog(compacted).records.size());
    EXPECT_GT(compacted_away, 0);
  }
  CrashTally tally;
  int64_t retention_points = 0;
  int64_t compaction_points = 0;
  int64_t delayed_delete_points = 0;
  const LogConfig config = CrashMatrixConfig(seed);
  for (uint64_t point : WithStepPoints(CrashPoints(total + 1), steps)) {
    for (Mode mode :
         {Mode::kKill, Mode::kPower, Mode::kTorn, point % 2 ? Mode::kEio : Mode::kEnospc}) {
      std::unique_ptr<MemFileSystem> image;
      uint64_t ops = 0;
      std::string last_op;
      WorkloadModel model = RunWithFault(seed, point, mode, &image, &ops, &last_op);
      ++tally.points;
      retention_points += WorkloadSteps::In(steps.retention, point);
      compaction_points += WorkloadSteps::In(steps.compaction, point);
      delayed_delete_points += WorkloadSteps::In(steps.delayed_delete, point);
      const std::string label =
          std::string(CrashModeName(mode)) + "@" + std::to_string(point) + " [" + last_op + "]";
      RecoverAndCheck(image.get(), log_dir_, model, config, label, &tally);
    }
  }
  std::cout << "CRASH-MATRIX seed=" << seed << " ops=" << total << " " << tally.Summary()
            << " retention_points=" << retention_points
            << " compaction_points=" << compaction_points
            << " delayed_delete_points=" << delayed_delete_points
            << " retained_from=" << retained_from << " compacted_away=" << compacted_away
            << std::endl;
  for (const auto& e : tally.examples) std::cout << "  " << e << "\n";
  EXPECT_TRUE(tally.Clean()) << tally.Summary();
  EXPECT_EQ(tally.recoveries, 2 * tally.points);
}

}  // namespace
}  // namespace daruma::testing
