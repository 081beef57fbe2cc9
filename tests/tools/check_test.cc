// `daruma check` on generated log dirs with one kind of damage each: the
// problem is found with its file and byte position, and nothing under the
// log dir changes (contents, sizes, mtimes, no new files).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "log/producer_snapshot_file.h"
#include "recovery/log_checker.h"
#include "recovery/quarantine.h"
#include "support/test_support.h"
#include "tools/check_command.h"
#include "tools/generated_log_dir.h"
#include "tools/tool_run.h"

namespace daruma::tools {
namespace {

using namespace testlog;  // NOLINT: test helpers
using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;
using daruma::testing::WriteStringToFile;

using CheckRun = ToolRun;

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
    CheckRun run = RunCheckQuietly(o);
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
  EXPECT_NE(problems[0]["problem"].get<std::string>().find("expected timestamp "),
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

// An orphan index is a problem. A deleted partition's dir is only a note:
// it waits the broker's log.segment.delete.delay.ms (Kafka's deleteLogs
// takes the broker's value, not the topic's file.delete.delay.ms), which a
// shutdown may come before (found so after a clean shutdown that followed a
// DeleteTopics).
TEST_F(CheckTest, OrphanIndexIsAProblemAndADeletedPartitionANote) {
  const std::string orphan = SegmentFile(dir_, 500, ".index");
  WriteStringToFile(orphan, std::string(16, '\0'));
  const std::string deleted = JoinPath(dir_, "t-1.0123456789abcdef0123456789abcdef-delete");
  std::filesystem::create_directories(deleted);
  const CheckRun run = Check();
  EXPECT_EQ(run.rc, 1);
  const auto problems = Problems(run);
  ASSERT_EQ(problems.size(), 1u) << run.json.dump(2);
  EXPECT_EQ(problems[0]["file"], orphan);
  EXPECT_NE(problems[0]["problem"].get<std::string>().find("orphan"), std::string::npos);
  const auto& notes = run.json["logDirs"][0]["notes"];
  ASSERT_EQ(notes.size(), 1u) << run.json.dump(2);
  EXPECT_EQ(notes[0].get<std::string>(),
            deleted +
                ": a deleted partition's directory, awaiting removal (the broker removes it "
                "log.segment.delete.delay.ms after it starts, 60 s by default; the broker-wide "
                "setting applies, not the topic's file.delete.delay.ms)");
  std::filesystem::remove(orphan);
  EXPECT_EQ(Check().rc, 0);
}

// The snapshot at the last segment's base, its entries and a rewrite helper.
class CheckSnapshotTest : public CheckTest {
 protected:
  std::string Snapshot() { return SegmentFile(dir_, SegmentBase(2), ".snapshot"); }
  std::vector<ProducerSnapshotEntry> Entries() {
    auto entries = ReadProducerSnapshot(FileSystem::Default(), Snapshot());
    EXPECT_TRUE(entries.ok());
    return entries.ok() ? *entries : std::vector<ProducerSnapshotEntry>{};
  }
  // Rewrites the snapshot (valid CRC) with `entries`, written at `mtime_ms`.
  void Rewrite(const std::vector<ProducerSnapshotEntry>& entries, int64_t mtime_ms) {
    ASSERT_TRUE(WriteProducerSnapshot(FileSystem::Default(), Snapshot(), entries).ok());
    ASSERT_TRUE(FileSystem::Default()->SetModifiedTimeMs(Snapshot(), mtime_ms).ok());
  }
  nlohmann::json OnlyProblem(const CheckRun& run) {
    const auto problems = Problems(run);
    EXPECT_EQ(problems.size(), 1u) << run.json.dump(2);
    return problems.empty() ? nlohmann::json() : problems[0];
  }
};

TEST_F(CheckSnapshotTest, EntryThatDisagreesWithTheReplayFound) {
  std::vector<ProducerSnapshotEntry> entries = Entries();
  ASSERT_EQ(entries.size(), 1u);
  ASSERT_EQ(entries[0].producer_id, 7);
  // Producer 7's last batch below offset 60 ends at sequence 59.
  EXPECT_EQ(entries[0].last_sequence, 59);
  entries[0].last_sequence = 41;
  Rewrite(entries, kNow);
  const CheckRun run = Check();
  EXPECT_EQ(run.rc, 1);
  const nlohmann::json p = OnlyProblem(run);
  EXPECT_EQ(p["file"], Snapshot());
  EXPECT_EQ(p["position"], 10);  // the first 46-byte entry, after the 10-byte header
  EXPECT_EQ(p["offset"], SegmentBase(2));
  const std::string what = p["problem"];
  EXPECT_NE(what.find("producer id 7: expected (epoch 0, last sequence 59,"), std::string::npos)
      << what;
  EXPECT_NE(what.find("found (epoch 0, last sequence 41,"), std::string::npos) << what;
  EXPECT_EQ(p["kind"], "corrupt_snapshot");
  EXPECT_NE(run.out.find(Snapshot() + " at byte 10, offset 60: corrupt_snapshot: producer id 7"),
            std::string::npos)
      << run.out;
}

TEST_F(CheckSnapshotTest, MissingProducerFoundUnlessItCouldHaveExpired) {
  Rewrite({}, kNow);  // written while producer 7 was active
  CheckRun run = Check();
  EXPECT_EQ(run.rc, 1);
  const nlohmann::json p = OnlyProblem(run);
  EXPECT_EQ(p["file"], Snapshot());
  EXPECT_EQ(p["position"], -1);
  EXPECT_NE(p["problem"].get<std::string>().find(
                "producer id 7: expected (epoch 0, last sequence 59, last offset 59,"),
            std::string::npos)
      << p.dump();
  EXPECT_NE(p["problem"].get<std::string>().find("found no entry"), std::string::npos);
  // Written more than producer.id.expiration.ms after its last batch: Kafka
  // may have expired it, so the same file is fine.
  Rewrite({}, kNow + 2 * kDefaultProducerIdExpirationMs);
  run = Check();
  EXPECT_EQ(run.rc, 0) << run.json.dump(2);
}

TEST_F(CheckSnapshotTest, ProducerTheLogNeverSawFound) {
  std::vector<ProducerSnapshotEntry> entries = Entries();
  ProducerSnapshotEntry ghost = entries[0];
  ghost.producer_id = 99;
  entries.push_back(ghost);
  Rewrite(entries, kNow);
  const CheckRun run = Check();
  EXPECT_EQ(run.rc, 1);
  const nlohmann::json p = OnlyProblem(run);
  EXPECT_EQ(p["file"], Snapshot());
  EXPECT_EQ(p["position"], 10 + 46);
  EXPECT_NE(p["problem"].get<std::string>().find(
                "producer id 99: expected no entry (no batch of it below offset 60)"),
            std::string::npos)
      << p.dump();
}

TEST_F(CheckTest, MissingIndexFound) {
  const std::string index = SegmentFile(dir_, SegmentBase(1), ".index");
  std::filesystem::remove(index);
  const CheckRun run = Check();
  EXPECT_EQ(run.rc, 1);
  const auto problems = Problems(run);
  ASSERT_EQ(problems.size(), 1u) << run.json.dump(2);
  EXPECT_EQ(problems[0]["file"], index);
  EXPECT_EQ(problems[0]["position"], -1);
  EXPECT_NE(problems[0]["problem"].get<std::string>().find("missing"), std::string::npos);
}

TEST_F(CheckTest, NoSnapshotAtAllFound) {
  for (int s = 0; s <= kSegments; ++s) {
    std::filesystem::remove(SegmentFile(dir_, SegmentBase(s), ".snapshot"));
  }
  const CheckRun run = Check();
  EXPECT_EQ(run.rc, 1);
  const auto problems = Problems(run);
  ASSERT_EQ(problems.size(), 1u) << run.json.dump(2);
  EXPECT_EQ(problems[0]["file"], SegmentFile(dir_, kLeo, ".snapshot"));
  EXPECT_EQ(problems[0]["offset"], kLeo);
  EXPECT_NE(problems[0]["problem"].get<std::string>().find("empty producer state"),
            std::string::npos);
}

// --config: log.dirs (and the log settings) come from a server.properties.
TEST_F(CheckTest, ConfigFileNamesTheLogDirs) {
  const std::string props = tmp_.Join("server.properties");
  WriteStringToFile(props, "log.dirs=" + dir_ + "\nlog.index.interval.bytes=256\n");
  CheckCommandOptions o;
  o.config_file = props;
  o.progress = ProgressMode::kQuiet;
  std::ostringstream out, err;
  EXPECT_EQ(RunCheck(o, out, err), 0) << out.str() << err.str();
  EXPECT_NE(out.str().find("Checked 1 partitions (3 segments"), std::string::npos) << out.str();
  // --log-dirs wins over log.dirs.
  o.log_dirs = {tmp_.Join("nope")};
  std::ostringstream out2, err2;
  EXPECT_EQ(RunCheck(o, out2, err2), 2);
  EXPECT_NE(err2.str().find(tmp_.Join("nope")), std::string::npos) << err2.str();
}

TEST_F(CheckTest, BadOrMissingConfigIsAUsageError) {
  const std::string props = tmp_.Join("server.properties");
  WriteStringToFile(props, "log.dirs=" + dir_ + "\nlog.index.interval.bytes=lots\n");
  CheckCommandOptions o;
  o.config_file = props;
  o.progress = ProgressMode::kQuiet;
  std::ostringstream out, err;
  EXPECT_EQ(RunCheck(o, out, err), 2);
  EXPECT_NE(err.str().find("log.index.interval.bytes"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("lots"), std::string::npos) << err.str();
  CheckCommandOptions none;
  none.progress = ProgressMode::kQuiet;
  std::ostringstream out2, err2;
  EXPECT_EQ(RunCheck(none, out2, err2), 2);
  EXPECT_NE(err2.str().find("no log directory: pass --log-dirs"), std::string::npos) << err2.str();
}

// The progress bar's numbers are bytes: what the estimate promises is what
// the check scans, and every partition is counted down.
TEST_F(CheckTest, ProgressCountsBytesAndPartitions) {
  int64_t log_bytes = 0;
  for (int s = 0; s < kSegments; ++s) {
    log_bytes += int64_t(std::filesystem::file_size(SegmentFile(dir_, SegmentBase(s), ".log")));
  }
  const CheckWork work = EstimateCheckWork(FileSystem::Default(), {dir_});
  EXPECT_EQ(work.bytes, log_bytes);
  EXPECT_EQ(work.partitions, 1);
  std::atomic<int64_t> scanned{0}, remaining{work.partitions};
  CheckOptions o;
  o.scanned_bytes = &scanned;
  o.remaining_partitions = &remaining;
  ASSERT_TRUE(CheckLogDir(dir_, o).ok());
  EXPECT_EQ(scanned.load(), log_bytes);
  EXPECT_EQ(remaining.load(), 0);
  // Half way at 1 MB/s: the line shows bytes, the rate and the ETA.
  const std::string line =
      FormatProgressLine({log_bytes / 2, log_bytes, 1, 1}, double(log_bytes / 2) / 1e6, false);
  EXPECT_NE(line.find(HumanBytes(log_bytes / 2) + " / " + HumanBytes(log_bytes)), std::string::npos)
      << line;
  EXPECT_NE(line.find("1.0 MB/s"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 0s"), std::string::npos) << line;
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
