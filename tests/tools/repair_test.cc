// `daruma repair` on generated log dirs: the plan, the byte limit, --dry-run
// and refusals change nothing; a repair fixes, quarantines what it drops,
// leaves a dir `daruma check` finds clean, and a second run has nothing to do.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "log/clean_shutdown_file.h"
#include "recovery/dir_lock.h"
#include "recovery/quarantine.h"
#include "support/test_support.h"
#include "tools/check_command.h"
#include "tools/generated_log_dir.h"
#include "tools/repair_command.h"
#include "tools/tool_run.h"

namespace daruma::tools {
namespace {

using namespace testlog;  // NOLINT: test helpers
using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;

using RepairRun = ToolRun;

class RepairTest : public ::testing::Test {
 protected:
  void SetUp() override { WriteLogDir(dir_); }

  RepairRun Repair(int64_t limit, bool dry_run = false) {
    RepairCommandOptions o;
    o.log_dirs = {dir_};
    o.max_corrupt_bytes = limit;
    o.dry_run = dry_run;
    o.threads = 2;
    o.report_file = tmp_.Join("repair.json");
    return RunRepairQuietly(o);
  }

  // Repair that must not change anything under the log dir.
  RepairRun RepairUnchanged(int64_t limit, bool dry_run) {
    const TreeState before = SnapshotTree(dir_);
    RepairRun run = Repair(limit, dry_run);
    EXPECT_EQ(SnapshotTree(dir_), before) << "the log dir changed\n" << run.out << run.err;
    return run;
  }

  int CheckRc() {
    CheckCommandOptions o;
    o.log_dirs = {dir_};
    o.progress = ProgressMode::kQuiet;
    std::ostringstream out, err;
    const int rc = RunCheck(o, out, err);
    EXPECT_EQ(rc, 0) << out.str() << err.str();
    return rc;
  }

  void MakeUnclean() {
    std::filesystem::remove(JoinPath(dir_, kCleanShutdownFileName));
    WriteCheckpoints(dir_, SegmentBase(2), SegmentBase(2));
  }

  std::vector<nlohmann::json> Manifest() { return ReadQuarantineManifest(JoinPath(dir_, "t-0")); }

  TempDir tmp_;
  std::string dir_ = tmp_.Join("data");
};

TEST_F(RepairTest, CleanDirHasNothingToDo) {
  const RepairRun run = RepairUnchanged(0, false);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.out, "Nothing to repair.\n");
  EXPECT_FALSE(run.json.contains("applied"));
}

// --quiet (as `check` and `recover` take it): silence on success, the plan
// and the reason on stderr when something is refused.
TEST_F(RepairTest, QuietPrintsOnlyWhenSomethingIsRefused) {
  RepairCommandOptions o;
  o.log_dirs = {dir_};
  o.quiet = true;
  RepairRun run = RunRepairQuietly(o);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, "");

  const std::string log = SegmentFile(dir_, SegmentBase(2), ".log");
  const BatchPos last = Batches(log).back();
  std::filesystem::resize_file(log, uint64_t(last.position + last.size / 2));
  MakeUnclean();
  run = RunRepairQuietly(o);  // --max-corrupt-bytes 0: refused
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find("refused, nothing was changed"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("Repair plan:"), std::string::npos) << run.err;
}

TEST_F(RepairTest, TornTailLimitDryRunRepairAndIdempotence) {
  const std::string log = SegmentFile(dir_, SegmentBase(2), ".log");
  const BatchPos last = Batches(log).back();
  const int64_t cut = last.position + last.size / 2;
  std::filesystem::resize_file(log, uint64_t(cut));
  MakeUnclean();
  const std::string torn_bytes = ReadFileToString(log).substr(size_t(last.position));

  // Default limit 0: refused, nothing changed, the flag is named.
  RepairRun run = RepairUnchanged(0, false);
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.err.find("would drop " + std::to_string(cut - last.position) +
                         " bytes of segment data, more than --max-corrupt-bytes 0"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.json["refused"].get<std::string>().empty(), false);
  // A smaller limit refuses too.
  EXPECT_EQ(RepairUnchanged(cut - last.position - 1, false).rc, 1);

  // Dry run: prints the plan with file and position, changes nothing.
  run = RepairUnchanged(-1, true);
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.out.find("t-0: drop " + std::to_string(cut - last.position) + " bytes"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find(log + " at byte " + std::to_string(last.position)), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("Dry run: nothing was changed."), std::string::npos);

  // The repair itself.
  run = Repair(cut - last.position);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(std::filesystem::file_size(log), uint64_t(last.position));
  const auto manifest = Manifest();
  // The torn bytes, and a copy of the producer snapshot the test's clean
  // close left at the old end (lost_records evidence).
  ASSERT_EQ(manifest.size(), 2u);
  EXPECT_EQ(manifest[1]["kind"], "lost_records");
  EXPECT_EQ(manifest[0]["file"], BaseName(log));
  EXPECT_EQ(manifest[0]["fromPosition"], last.position);
  EXPECT_EQ(ReadFileToString(manifest[0]["quarantinePath"].get<std::string>()), torn_bytes);
  const auto& applied = run.json["applied"]["partitions"][0];
  EXPECT_EQ(applied["logEndOffset"], last.base_offset);
  EXPECT_EQ(ReadFileToString(JoinPath(dir_, kRecoveryPointCheckpointFile)),
            "0\n1\nt 0 " + std::to_string(last.base_offset) + "\n");
  // No marker before, none after.
  EXPECT_FALSE(std::filesystem::exists(JoinPath(dir_, kCleanShutdownFileName)));

  CheckRc();
  const RepairRun again = RepairUnchanged(0, false);
  EXPECT_EQ(again.rc, 0);
  EXPECT_EQ(again.out, "Nothing to repair.\n");
}

TEST_F(RepairTest, BadIndexRebuiltWithoutDroppingData) {
  const std::string index = SegmentFile(dir_, SegmentBase(0), ".index");
  WriteBe32At(index, 8 + 4, 5);
  const std::string marker = ReadFileToString(JoinPath(dir_, kCleanShutdownFileName));
  const RepairRun run = Repair(0);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("t-0: drop 0 bytes"), std::string::npos) << run.out;
  EXPECT_TRUE(Manifest().empty());
  // The dir had a marker: it gets it back, unchanged.
  EXPECT_EQ(ReadFileToString(JoinPath(dir_, kCleanShutdownFileName)), marker);
  CheckRc();
  EXPECT_EQ(RepairUnchanged(0, false).out, "Nothing to repair.\n");
}

TEST_F(RepairTest, CheckpointAboveTheLogEndRewritten) {
  WriteCheckpoints(dir_, kLeo + 10, kLeo + 10);
  const RepairRun run = Repair(0);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(ReadFileToString(JoinPath(dir_, kRecoveryPointCheckpointFile)), "0\n1\nt 0 90\n");
  EXPECT_EQ(ReadFileToString(JoinPath(dir_, kReplicationOffsetCheckpointFile)), "0\n1\nt 0 90\n");
  CheckRc();
}

TEST_F(RepairTest, CleanerCheckpointAboveTheLogEndFoundAndClamped) {
  const std::string cleaner = JoinPath(dir_, "cleaner-offset-checkpoint");
  testing::WriteStringToFile(cleaner, "0\n1\nt 0 500\n");
  CheckCommandOptions co;
  co.log_dirs = {dir_};
  co.progress = ProgressMode::kQuiet;
  std::ostringstream cout_, cerr_;
  EXPECT_EQ(RunCheck(co, cout_, cerr_), 1);
  EXPECT_NE(cout_.str().find(cleaner +
                             " at byte 4, offset 500: corrupt_checkpoint: cleaner offset of t-0 "
                             "is 500, above the log end offset 90"),
            std::string::npos)
      << cout_.str();
  const RepairRun run = Repair(0);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(ReadFileToString(cleaner), "0\n1\nt 0 90\n");
  CheckRc();
}

TEST_F(RepairTest, BitFlipDropsTheRestOfTheLogIntoQuarantine) {
  const std::string log = SegmentFile(dir_, SegmentBase(1), ".log");
  const BatchPos b = Batches(log)[4];
  FlipByte(log, b.position + b.size - 5);
  const int64_t later_size =
      int64_t(std::filesystem::file_size(SegmentFile(dir_, SegmentBase(2), ".log")));
  const int64_t dropped = int64_t(std::filesystem::file_size(log)) - b.position + later_size;
  EXPECT_EQ(RepairUnchanged(dropped - 1, false).rc, 1);
  const RepairRun run = Repair(-1);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("drop " + std::to_string(dropped) + " bytes"), std::string::npos)
      << run.out;
  EXPECT_EQ(std::filesystem::file_size(log), uint64_t(b.position));
  EXPECT_FALSE(std::filesystem::exists(SegmentFile(dir_, SegmentBase(2), ".log")));
  int64_t quarantined = 0;
  for (const auto& m : Manifest()) {
    if (m["file"].get<std::string>().ends_with(".log")) quarantined += m["bytes"].get<int64_t>();
  }
  EXPECT_EQ(quarantined, dropped);
  CheckRc();
  EXPECT_EQ(RepairUnchanged(0, false).out, "Nothing to repair.\n");
}

TEST_F(RepairTest, MissingIndexRebuiltWithTheConfiguredInterval) {
  const std::string index = SegmentFile(dir_, SegmentBase(1), ".index");
  const std::string original = ReadFileToString(index);
  std::filesystem::remove(index);
  RepairCommandOptions o;
  o.config_file = tmp_.Join("server.properties");
  testing::WriteStringToFile(o.config_file, "log.dirs=" + dir_ + "\n");
  o.overrides = {"log.index.interval.bytes=256"};  // what TestConfig() wrote with
  o.progress = ProgressMode::kQuiet;
  std::ostringstream out, err;
  ASSERT_EQ(RunRepair(o, out, err), 0) << out.str() << err.str();
  EXPECT_NE(out.str().find(index), std::string::npos) << out.str();
  EXPECT_EQ(ReadFileToString(index), original);
  CheckRc();
}

TEST_F(RepairTest, RefusesADirLockedByABroker) {
  WriteBe32At(SegmentFile(dir_, SegmentBase(0), ".index"), 8 + 4, 5);
  auto lock = DirLock::Acquire(dir_);
  ASSERT_TRUE(lock.ok());
  const TreeState before = SnapshotTree(dir_);
  const RepairRun run = Repair(0);
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.err.find("locked by a running broker"), std::string::npos) << run.err;
  EXPECT_EQ(SnapshotTree(dir_), before);
}

}  // namespace
}  // namespace daruma::tools
