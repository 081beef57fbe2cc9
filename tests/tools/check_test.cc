// `daruma check` on generated log dirs with one kind of damage each: the
// problem is found with its file and byte position, and nothing under the
// log dir changes (contents, sizes, mtimes, no new files).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "recovery/quarantine.h"
#include "support/test_support.h"
#include "tools/check_command.h"
#include "tools/generated_log_dir.h"

namespace daruma::tools {
namespace {

using namespace testlog;  // NOLINT: test helpers
using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;
using daruma::testing::WriteStringToFile;

struct CheckRun {
  int rc = -1;
  std::string out, err;
  nlohmann::json json;
};

class CheckTest : public ::testing::Test {
 protected:
  void SetUp() override { WriteLogDir(dir_); }

  // Runs check and asserts that it changed nothing under the log dir.
  CheckRun Check(int threads = 1) {
    const TreeState before = SnapshotTree(dir_);
    CheckCommandOptions o;
    o.log_dirs = {dir_};
    o.threads = threads;
    o.json_file = tmp_.Join("check.json");
    o.progress = ProgressMode::kQuiet;
    std::ostringstream out, err;
    CheckRun run;
    run.rc = RunCheck(o, out, err);
    run.out = out.str();
    run.err = err.str();
    if (std::filesystem::exists(o.json_file)) {
      run.json = nlohmann::json::parse(ReadFileToString(o.json_file));
      std::filesystem::remove(o.json_file);
    }
    EXPECT_EQ(SnapshotTree(dir_), before) << "check changed the log dir";
    return run;
  }

  // The problems of partition t-0 and of the dir, from the JSON report.
  std::vector<nlohmann::json> Problems(const CheckRun& run) {
    std::vector<nlohmann::json> all;
    for (const auto& d : run.json["logDirs"]) {
      for (const auto& p : d["problems"]) all.push_back(p);
      for (const auto& part : d["partitions"]) {
        for (const auto& p : part["problems"]) all.push_back(p);
      }
    }
    return all;
  }

  // The problems about `file`.
  std::vector<nlohmann::json> ProblemsOf(const CheckRun& run, const std::string& file) {
    std::vector<nlohmann::json> out;
    for (const auto& p : Problems(run)) {
      if (p["file"] == file) out.push_back(p);
    }
    return out;
  }

  // What a crash leaves: no marker, checkpoints from the last roll.
  void MakeUnclean() {
    std::filesystem::remove(JoinPath(dir_, kCleanShutdownFileName));
    WriteCheckpoints(dir_, SegmentBase(2), SegmentBase(2));
  }

  TempDir tmp_;
  std::string dir_ = tmp_.Join("data");
};

TEST_F(CheckTest, CleanDirIsClean) {
  const CheckRun run = Check();
  EXPECT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_TRUE(Problems(run).empty()) << run.json.dump(2);
  EXPECT_NE(run.out.find("Checked 1 partitions (3 segments"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("no problems"), std::string::npos);
  EXPECT_EQ(run.json["logDirs"][0]["partitions"][0]["logEndOffset"], kLeo);
}

TEST_F(CheckTest, TornTailFoundAtTheBatchPosition) {
  const std::string log = SegmentFile(dir_, SegmentBase(2), ".log");
  const BatchPos last = Batches(log).back();
  std::filesystem::resize_file(log, uint64_t(last.position + last.size / 2));
  MakeUnclean();
  const CheckRun run = Check();
  EXPECT_EQ(run.rc, 1);
  const auto problems = Problems(run);
  ASSERT_EQ(problems.size(), 1u) << run.json.dump(2);
  EXPECT_EQ(problems[0]["file"], log);
  EXPECT_EQ(problems[0]["position"], last.position);
  EXPECT_EQ(problems[0]["offset"], last.base_offset);
  EXPECT_NE(problems[0]["problem"].get<std::string>().find("torn tail"), std::string::npos);
  EXPECT_EQ(run.json["logDirs"][0]["partitions"][0]["dataBytesDropped"], last.size / 2);
  EXPECT_NE(run.out.find(log + " at byte " + std::to_string(last.position)), std::string::npos)
      << run.out;
}

TEST_F(CheckTest, BitFlipInAnOldSegmentFound) {
  // Below the recovery point of a cleanly shut down dir: Kafka never looks.
  const std::string log = SegmentFile(dir_, SegmentBase(1), ".log");
  const BatchPos b = Batches(log)[4];
  FlipByte(log, b.position + b.size - 5);  // inside the records: CRC mismatch
  const CheckRun run = Check();
  EXPECT_EQ(run.rc, 1);
  const auto problems = ProblemsOf(run, log);
  ASSERT_EQ(problems.size(), 1u) << run.json.dump(2);
  EXPECT_EQ(problems[0]["file"], log);
  EXPECT_EQ(problems[0]["position"], b.position);
  EXPECT_EQ(problems[0]["offset"], b.base_offset);
  // Everything after it goes too (Kafka deletes the later segments), and the
  // checkpoints of the clean shutdown now point past the end.
  const std::string later = SegmentFile(dir_, SegmentBase(2), ".log");
  ASSERT_EQ(ProblemsOf(run, later).size(), 1u);
  EXPECT_EQ(ProblemsOf(run, later)[0]["position"], 0);
  EXPECT_EQ(ProblemsOf(run, JoinPath(dir_, kRecoveryPointCheckpointFile)).size(), 1u);
}

TEST_F(CheckTest, BadIndexEntryFound) {
  const std::string index = SegmentFile(dir_, SegmentBase(0), ".index");
  ASSERT_GE(std::filesystem::file_size(index), 16u);
  WriteBe32At(index, 8 + 4, 5);  // entry 1's position: not a batch start
  const CheckRun run = Check();
  EXPECT_EQ(run.rc, 1);
  const auto problems = Problems(run);
  ASSERT_EQ(problems.size(), 1u) << run.json.dump(2);
  EXPECT_EQ(problems[0]["file"], index);
  EXPECT_EQ(problems[0]["position"], 8);
  EXPECT_NE(problems[0]["problem"].get<std::string>().find("position 5 is not the start"),
            std::string::npos);
}

TEST_F(CheckTest, BadTimeIndexEntryFound) {
  const std::string index = SegmentFile(dir_, SegmentBase(1), ".timeindex");
  ASSERT_GE(std::filesystem::file_size(index), 12u);
  WriteBe64At(index, 0, uint64_t(kNow + 1000000));  // later than every batch
  const CheckRun run = Check();
  EXPECT_EQ(run.rc, 1);
  const auto problems = Problems(run);
  ASSERT_EQ(problems.size(), 1u) << run.json.dump(2);
  EXPECT_EQ(problems[0]["file"], index);
  EXPECT_EQ(problems[0]["position"], 0);
  EXPECT_NE(problems[0]["problem"].get<std::string>().find("expected a timestamp <="),
            std::string::npos);
}

TEST_F(CheckTest, CheckpointAboveTheLogEndFound) {
  WriteCheckpoints(dir_, kLeo + 10, kLeo);
  const CheckRun run = Check();
  EXPECT_EQ(run.rc, 1);
  const auto problems = Problems(run);
  ASSERT_EQ(problems.size(), 1u) << run.json.dump(2);
  EXPECT_EQ(problems[0]["file"], JoinPath(dir_, kRecoveryPointCheckpointFile));
  EXPECT_EQ(problems[0]["position"], 4);  // after "0\n1\n"
  EXPECT_EQ(problems[0]["offset"], kLeo + 10);
}

TEST_F(CheckTest, OrphanIndexAndStrayDirsFound) {
  const std::string orphan = SegmentFile(dir_, 500, ".index");
  WriteStringToFile(orphan, std::string(16, '\0'));
  std::filesystem::create_directories(
      JoinPath(dir_, "t-1.0123456789abcdef0123456789abcdef-delete"));
  const CheckRun run = Check();
  EXPECT_EQ(run.rc, 1);
  const auto problems = Problems(run);
  ASSERT_EQ(problems.size(), 2u) << run.json.dump(2);
  EXPECT_EQ(problems[0]["file"], JoinPath(dir_, "t-1.0123456789abcdef0123456789abcdef-delete"));
  EXPECT_EQ(problems[1]["file"], orphan);
  EXPECT_NE(problems[1]["problem"].get<std::string>().find("orphan"), std::string::npos);
}

TEST_F(CheckTest, ManyProblemsInParallel) {
  const std::string log = SegmentFile(dir_, SegmentBase(2), ".log");
  std::filesystem::resize_file(log, std::filesystem::file_size(log) - 3);
  MakeUnclean();
  std::filesystem::copy(JoinPath(dir_, "t-0"), JoinPath(dir_, "t-1"),
                        std::filesystem::copy_options::recursive);
  const CheckRun run = Check(4);
  EXPECT_EQ(run.rc, 1);
  ASSERT_EQ(run.json["logDirs"][0]["partitions"].size(), 2u);
  EXPECT_EQ(Problems(run).size(), 2u) << run.json.dump(2);
}

TEST_F(CheckTest, MissingDirIsAnError) {
  CheckCommandOptions o;
  o.log_dirs = {tmp_.Join("nope")};
  o.progress = ProgressMode::kQuiet;
  std::ostringstream out, err;
  EXPECT_EQ(RunCheck(o, out, err), 2);
  EXPECT_NE(err.str().find(tmp_.Join("nope")), std::string::npos);
}

}  // namespace
}  // namespace daruma::tools
