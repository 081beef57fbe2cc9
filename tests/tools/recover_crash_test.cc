// Crash points inside `daruma recover` itself on a Kafka-written dir (issue
// 24): a crash at any mutating file operation of a recover run, as a power
// loss (only fsynced bytes and dir-synced names survive) or a process kill
// (the page cache survives), leaves a dir that a second recover loads, and
// that then loads as a broker would load it to Kafka's own view
// (expected-load.txt).
//
// Runs: the unclean torn-tail scenario (recovery truncates and quarantines),
// and a --full rescan of the clean transactional scenario (every segment
// recovered, indexes and snapshots rewritten, the marker rewritten last).
// Every operation is a crash point; DARUMA_CRASH_POINTS=<n> samples n of
// them evenly instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "support/damaged_fixture.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"
#include "tools/kafka_fixture_view.h"
#include "tools/recover_command.h"

namespace daruma::tools {
namespace {

using daruma::testing::FaultInjectionFileSystem;
using daruma::testing::MemFileSystem;
using testlog::Scenario;

struct Case {
  Scenario scenario;
  bool full = false;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.scenario.name << (c.full ? " --full" : "");
}

class RecoverCrashTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    DARUMA_REQUIRE_FIXTURES();
    // DirLock and the tool's dir check work on the real path, so the log dir
    // exists on disk too; recovery runs on the copy in memory.
    log_dir_ = tmp_.Join("logdir");
    daruma::testing::CopyTree(testlog::ScenarioDir(GetParam().scenario) + "/logdir", log_dir_);
    files_ = daruma::testing::ReadTree(log_dir_);
  }

  int Recover(FileSystem* fs) const {
    RecoverOptions o;
    o.log_dirs = {log_dir_};
    o.overrides = testlog::kFixtureSettings;
    o.full = GetParam().full;
    o.quiet = true;
    o.progress = ProgressMode::kQuiet;
    o.fs = fs;
    std::ostringstream out, err;
    return RunRecover(o, out, err);
  }

  // Recovers `mem` through a fault layer crashing at op `n` (0: never).
  // Returns the fault layer's op count; `image` (if set) gets the durable
  // state.
  uint64_t RecoverWithCrash(MemFileSystem* mem, uint64_t n, MemFileSystem* image) const {
    FaultInjectionFileSystem fault(mem, n + 11);
    if (n > 0) fault.CrashAt(n);
    const int rc = Recover(&fault);
    // Every operation is needed for a clean finish: a crash at any of them
    // is a failed run (the dir went offline), never a silent success.
    if (n == 0) {
      EXPECT_EQ(rc, 0);
    } else {
      EXPECT_EQ(rc, 1) << "crash at op " << n << " went unnoticed";
    }
    if (image != nullptr) {
      EXPECT_TRUE(fault.MaterializeDurableState(image, log_dir_, false).ok());
    }
    return fault.op_count();
  }

  daruma::testing::TempDir tmp_;
  std::string log_dir_;
  std::map<std::string, std::vector<uint8_t>> files_;
};

std::vector<uint64_t> CrashPoints(uint64_t total) {
  const char* env = std::getenv("DARUMA_CRASH_POINTS");
  const uint64_t wanted = env == nullptr || *env == '\0' ? total : std::strtoull(env, nullptr, 10);
  std::vector<uint64_t> points;
  if (wanted == 0) return points;
  for (uint64_t i = 0; i < std::min(wanted, total); ++i) {
    points.push_back(1 + i * total / std::min(wanted, total));
  }
  return points;
}

TEST_P(RecoverCrashTest, EveryCrashPointLeavesADirASecondRecoverLoads) {
  const Scenario& s = GetParam().scenario;
  const testlog::View expected = testlog::KafkaView(s);
  MemFileSystem reference;
  daruma::testing::WriteTree(files_, &reference);
  const uint64_t total = RecoverWithCrash(&reference, 0, nullptr);
  ASSERT_GT(total, 10u);
  EXPECT_EQ(testlog::Load(log_dir_, s, /*from_zero=*/false, &reference), expected);
  int64_t points = 0;
  for (uint64_t n : CrashPoints(total)) {
    for (int kill = 0; kill < 2; ++kill) {
      SCOPED_TRACE("crash at op " + std::to_string(n) + " of " + std::to_string(total) +
                   (kill ? " (kill)" : " (power loss)"));
      MemFileSystem mem;
      daruma::testing::WriteTree(files_, &mem);
      MemFileSystem image;
      RecoverWithCrash(&mem, n, kill ? nullptr : &image);
      MemFileSystem& after = kill ? mem : image;
      ASSERT_EQ(Recover(&after), 0);
      ASSERT_EQ(testlog::Load(log_dir_, s, /*from_zero=*/false, &after), expected);
      ++points;
    }
  }
  std::cout << "RECOVER-CRASH " << s.name << (GetParam().full ? " --full" : "") << " ops=" << total
            << " points=" << points << "\n";
}

INSTANTIATE_TEST_SUITE_P(KafkaDirs, RecoverCrashTest,
                         ::testing::Values(Case{testlog::kTorn, false}, Case{testlog::kTxn, true}),
                         [](const auto& info) {
                           return testlog::ScenarioTestName(info.param.scenario) +
                                  (info.param.full ? "_full" : "");
                         });

}  // namespace
}  // namespace daruma::tools
