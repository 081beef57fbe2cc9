// `daruma recover` on copies of the Kafka-written fixtures: exit codes, the
// JSON report, quarantine on/off, idempotence, configuration errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "common/file_system.h"
#include "recovery/dir_lock.h"
#include "support/damaged_fixture.h"
#include "support/test_support.h"
#include "tools/recover_command.h"

namespace daruma::tools {
namespace {

using daruma::testing::CopyTree;
using daruma::testing::FixturesDir;
using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;
using daruma::testing::WriteStringToFile;

struct RunResult {
  int rc = -1;
  std::string out, err;
  nlohmann::json report;
};

RunResult Recover(RecoverOptions o, const std::string& report_path) {
  o.report_file = report_path;
  o.progress = ProgressMode::kQuiet;
  std::ostringstream out, err;
  RunResult run;
  run.rc = RunRecover(o, out, err);
  run.out = out.str();
  run.err = err.str();
  if (FileSystem::Default()->Exists(report_path)) {
    run.report = nlohmann::json::parse(ReadFileToString(report_path));
    FileSystem::Default()->Remove(report_path).ok();
  }
  return run;
}

RecoverOptions Dirs(std::vector<std::string> dirs) {
  RecoverOptions o;
  o.log_dirs = std::move(dirs);
  return o;
}

template <typename Edit>
RecoverOptions Dirs(std::vector<std::string> dirs, Edit edit) {
  RecoverOptions o = Dirs(std::move(dirs));
  edit(o);
  return o;
}

// A copy of one scenario's log dir under `tmp`.
std::string CopyScenario(const TempDir& tmp, const std::string& scenario) {
  const std::string dir = tmp.Join(scenario);
  CopyTree(FixturesDir() + "/kafka-generated/" + scenario + "/logdir", dir);
  return dir;
}

int64_t QuarantinedBytes(const nlohmann::json& partition) {
  int64_t sum = 0;
  for (const auto& q : partition["quarantined"]) sum += q["bytes"].get<int64_t>();
  return sum;
}

TEST(RecoverTest, TornTailIsTruncatedAndQuarantined) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const std::string dir = CopyScenario(tmp, "unclean-torn-tail");
  const RunResult run = Recover(Dirs({dir}), tmp.Join("report.json"));
  ASSERT_EQ(run.rc, 0) << run.out << run.err;

  const auto& r = run.report;
  ASSERT_EQ(r["logDirs"].size(), 1u);
  EXPECT_EQ(r["logDirs"][0]["path"], dir);
  EXPECT_EQ(r["logDirs"][0]["cleanShutdown"], false);
  EXPECT_EQ(r["logDirs"][0]["offline"], false);
  ASSERT_EQ(r["partitions"].size(), 1u);
  const auto& p = r["partitions"][0];
  EXPECT_EQ(p["topic"], "fixture-crash");
  EXPECT_EQ(p["partition"], 0);
  EXPECT_EQ(p["dir"], dir + "/fixture-crash-0");
  EXPECT_EQ(p["logStartOffset"], 0);
  EXPECT_EQ(p["logEndOffset"], 1045);
  EXPECT_EQ(p["highWatermark"], 1045);       // replication checkpoint clamped to the LEO
  EXPECT_EQ(p["recoveryPoint"], 1045);       // fsynced to the LEO after the load
  EXPECT_EQ(p["loadedRecoveryPoint"], 975);  // Kafka's LogLoader: min(checkpoint, LEO)
  EXPECT_EQ(p["segments"].size(), 7u);
  EXPECT_EQ(p["segments"][6]["baseOffset"], 975);
  EXPECT_EQ(p["segments"][6]["sizeBytes"], 6416);
  EXPECT_EQ(p["truncatedBytes"], 235);
  EXPECT_EQ(QuarantinedBytes(p), 235);
  EXPECT_EQ(p["quarantined"][0]["fromPosition"], 6416);
  EXPECT_EQ(p["errors"].size(), 0u);
  EXPECT_EQ(r["totals"]["partitions"], 1);
  EXPECT_EQ(r["totals"]["segments"], 7);
  EXPECT_EQ(r["totals"]["truncatedBytes"], 235);
  EXPECT_EQ(r["totals"]["quarantinedBytes"], 235);

  // The clean shutdown that follows: marker, checkpoints at the LEO.
  EXPECT_EQ(ReadFileToString(dir + "/.kafka_cleanshutdown"), "{\"version\":0,\"brokerEpoch\":-1}");
  EXPECT_EQ(ReadFileToString(dir + "/recovery-point-offset-checkpoint"),
            "0\n1\nfixture-crash 0 1045\n");
  EXPECT_EQ(ReadFileToString(dir + "/replication-offset-checkpoint"),
            "0\n1\nfixture-crash 0 1045\n");
  EXPECT_EQ(*FileSystem::Default()->FileSize(dir + "/fixture-crash-0/00000000000000000975.log"),
            6416u);
  // The summary a user reads.
  EXPECT_NE(run.out.find("Recovered 1 partition (7 segments) in 1 log dir"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("fixture-crash-0  LEO 1045, truncated 235 B at offset 1045"),
            std::string::npos)
      << run.out;
  // The dir line says what happened, never "nothing to repair" beside rebuilt indexes.
  EXPECT_NE(run.out.find(dir + "  unclean shutdown: 1 partition recovered, "), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("rebuilt, 235 B truncated, 235 B quarantined"), std::string::npos)
      << run.out;
  EXPECT_EQ(run.out.find("Nothing"), std::string::npos) << run.out;
}

TEST(RecoverTest, NoQuarantineTruncatesLikeKafka) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const std::string dir = CopyScenario(tmp, "unclean-torn-tail");
  const RunResult run =
      Recover(Dirs({dir}, [](auto& o) { o.no_quarantine = true; }), tmp.Join("report.json"));
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  const auto& p = run.report["partitions"][0];
  EXPECT_EQ(p["logEndOffset"], 1045);
  EXPECT_EQ(p["truncatedBytes"], 235);
  EXPECT_EQ(p["quarantined"].size(), 0u);
  EXPECT_EQ(run.report["totals"]["quarantinedBytes"], 0);
  EXPECT_FALSE(FileSystem::Default()->Exists(dir + "/fixture-crash-0/daruma-quarantine"));
}

TEST(RecoverTest, SecondRunIsANoOp) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const std::string dir = CopyScenario(tmp, "unclean-torn-tail");
  ASSERT_EQ(Recover(Dirs({dir}), tmp.Join("first.json")).rc, 0);
  const RunResult run = Recover(Dirs({dir}), tmp.Join("second.json"));
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(run.report["logDirs"][0]["cleanShutdown"], true);
  EXPECT_EQ(run.report["logDirs"][0]["brokerEpoch"], -1);
  const auto& p = run.report["partitions"][0];
  EXPECT_EQ(p["logEndOffset"], 1045);
  EXPECT_EQ(p["truncatedBytes"], 0);
  EXPECT_EQ(p["scannedBytes"], 0);
  EXPECT_EQ(p["quarantined"].size(), 0u);
  EXPECT_EQ(p["deletedFiles"].size(), 0u);
  EXPECT_EQ(run.out.find("Repairs and problems"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(dir + "  clean shutdown: 1 partition loaded, nothing changed"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("Nothing changed; scanned 0 B."), std::string::npos) << run.out;
}

TEST(RecoverTest, CleanKafkaDirsLoadWithoutRepairs) {
  DARUMA_REQUIRE_FIXTURES();
  struct Case {
    const char* scenario;
    int64_t leo;
    int64_t lso;
    size_t segments;
  };
  for (const Case& c : {Case{"multi-segment-idempotent", 1800, 1800, 10},
                        Case{"transactional", 476, 470, 7}, Case{"compressed", 1619, 1619, 6}}) {
    SCOPED_TRACE(c.scenario);
    TempDir tmp;
    const std::string dir = CopyScenario(tmp, c.scenario);
    const RunResult run = Recover(Dirs({dir}), tmp.Join("report.json"));
    ASSERT_EQ(run.rc, 0) << run.out << run.err;
    EXPECT_EQ(run.report["logDirs"][0]["cleanShutdown"], true);
    EXPECT_EQ(run.report["logDirs"][0]["brokerEpoch"], 7);
    const auto& p = run.report["partitions"][0];
    EXPECT_EQ(p["logEndOffset"], c.leo);
    EXPECT_EQ(p["lastStableOffset"], c.lso);
    EXPECT_EQ(p["segments"].size(), c.segments);
    EXPECT_EQ(p["truncatedBytes"], 0);
    EXPECT_EQ(run.report["totals"]["quarantinedBytes"], 0);
  }
}

// A clean copy of multi-segment-idempotent with the file `name` added to its
// partition dir (a copy of `copy_of` there), recovered once: that file is one
// every start removes, Kafka's too. The report lists its removal; it is no
// repair, and the broker epoch of the clean shutdown stays.
struct LeftoverRun {
  std::string dir;
  RunResult run;
};

LeftoverRun RecoverWithLeftover(const TempDir& tmp, const std::string& name,
                                const std::string& copy_of) {
  LeftoverRun r;
  r.dir = CopyScenario(tmp, "multi-segment-idempotent");
  const std::string partition = r.dir + "/fixture-idem-0";
  WriteStringToFile(partition + "/" + name, ReadFileToString(partition + "/" + copy_of));
  r.run = Recover(Dirs({r.dir}), tmp.Join("report.json"));
  EXPECT_EQ(r.run.rc, 0) << r.run.out << r.run.err;
  const auto& p = r.run.report["partitions"][0];
  EXPECT_EQ(p["deletedFiles"], nlohmann::json::array({partition + "/" + name}));
  EXPECT_FALSE(FileSystem::Default()->Exists(partition + "/" + name));
  EXPECT_EQ(r.run.report["logDirs"][0]["brokerEpoch"], 7);
  EXPECT_EQ(r.run.out.find("Repairs and problems"), std::string::npos) << r.run.out;
  return r;
}

// After any restart a partition may hold an older producer snapshot at no
// segment base (Kafka's removeStraySnapshots removes it).
TEST(RecoverTest, AStraySnapshotRemovedAtACleanStartIsALeftoverNotARepair) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const LeftoverRun r =
      RecoverWithLeftover(tmp, "00000000000000000001.snapshot", "00000000000000000186.snapshot");
  EXPECT_NE(r.run.out.find(r.dir + "  clean shutdown: 1 partition loaded, 1 leftover file removed"),
            std::string::npos)
      << r.run.out;
  EXPECT_NE(r.run.out.find("Totals: scanned 0 B, truncated 0 B"), std::string::npos) << r.run.out;
}

// A `.deleted` segment above the last live one is what a truncation left
// (Kafka's start-up cut damage there): it may be the only copy of those
// records, so it goes to the quarantine. No repair either.
TEST(RecoverTest, ADeletedSegmentAboveTheLogIsQuarantined) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const LeftoverRun r =
      RecoverWithLeftover(tmp, "00000000000000009999.log.deleted", "00000000000000000000.log");
  EXPECT_EQ(r.run.report["partitions"][0]["quarantined"].size(), 1u);
  EXPECT_NE(r.run.out.find("quarantined, 1 leftover file removed"), std::string::npos) << r.run.out;
}

// A `.deleted` segment below the last live one, left by a deletion
// (retention, DeleteRecords, a finished compaction) that a crash
// interrupted, is removed as Kafka removes it, even with quarantine on: the
// records were deleted by the topic's policy or a user, and keeping them in
// the quarantine would keep them for good. No repair.
TEST(RecoverTest, ADeletedSegmentLeftByACrashIsRemovedNotQuarantined) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const LeftoverRun r =
      RecoverWithLeftover(tmp, "00000000000000000100.log.deleted", "00000000000000000000.log");
  EXPECT_TRUE(r.run.report["partitions"][0]["quarantined"].empty()) << r.run.report.dump(2);
  EXPECT_NE(r.run.out.find(r.dir + "  clean shutdown: 1 partition loaded, 1 leftover file removed"),
            std::string::npos)
      << r.run.out;
  EXPECT_NE(r.run.out.find("quarantined 0 B"), std::string::npos) << r.run.out;
}

TEST(RecoverTest, SeveralDirsInOneRun) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const std::string a = CopyScenario(tmp, "unclean-torn-tail");
  const std::string b = CopyScenario(tmp, "transactional");
  const RunResult run =
      Recover(Dirs({a, b}, [](auto& o) { o.threads = 2; }), tmp.Join("report.json"));
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(run.report["logDirs"].size(), 2u);
  EXPECT_EQ(run.report["totals"]["partitions"], 2);
  EXPECT_EQ(run.report["totals"]["segments"], 14);
}

TEST(RecoverTest, ConfigFileAndOverridesAreUsed) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const std::string dir = CopyScenario(tmp, "unclean-torn-tail");
  WriteStringToFile(tmp.Join("server.properties"),
                    "log.dirs=" + dir + "\nlog.index.interval.bytes=4096\n");
  const RunResult run = Recover(Dirs({},
                                     [&](auto& o) {
                                       o.config_file = tmp.Join("server.properties");
                                       o.overrides = {"log.index.interval.bytes=1024"};
                                     }),
                                tmp.Join("report.json"));
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(run.report["partitions"][0]["logEndOffset"], 1045);
  // The override wins over the file: interval 1024 (Kafka's writer setting for
  // this fixture) indexes the rebuilt active segment 4 times; 4096 would give 1.
  EXPECT_EQ(*FileSystem::Default()->FileSize(dir + "/fixture-crash-0/00000000000000000975.index"),
            32u);
}

TEST(RecoverTest, UsageAndConfigErrorsExitTwo) {
  TempDir tmp;
  RunResult run = Recover(Dirs({}), tmp.Join("r.json"));
  EXPECT_EQ(run.rc, 2);
  EXPECT_NE(run.err.find("no log directory"), std::string::npos) << run.err;

  run = Recover(Dirs({tmp.path()}, [](auto& o) { o.overrides = {"log.segment.bytes=big"}; }),
                tmp.Join("r.json"));
  EXPECT_EQ(run.rc, 2);
  EXPECT_NE(run.err.find("invalid value \"big\" for log.segment.bytes"), std::string::npos)
      << run.err;

  run = Recover(Dirs({tmp.path()}, [](auto& o) { o.overrides = {"novalue"}; }), tmp.Join("r.json"));
  EXPECT_EQ(run.rc, 2);
  run =
      Recover(Dirs({tmp.path()}, [&](auto& o) { o.config_file = tmp.Join("missing.properties"); }),
              tmp.Join("r.json"));
  EXPECT_EQ(run.rc, 2);
  EXPECT_NE(run.err.find("missing.properties"), std::string::npos) << run.err;
  EXPECT_FALSE(FileSystem::Default()->Exists(tmp.Join(".lock")));  // nothing was touched
}

TEST(RecoverTest, LockedDirExitsTwoAndNamesTheDir) {
  // A broker holds the dir: recovery could not run and nothing was changed.
  TempDir tmp;
  auto lock = DirLock::Acquire(tmp.path());
  ASSERT_TRUE(lock.ok());
  const RunResult run = Recover(Dirs({tmp.path()}), tmp.Join("r.json"));
  EXPECT_EQ(run.rc, 2);
  EXPECT_NE(run.err.find("log dir " + tmp.path() + " is locked by another process"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.report["logDirs"][0]["offline"], true);
}

TEST(RecoverTest, EmptyDirSaysSo) {
  TempDir tmp;
  const std::string dir = tmp.Join("data");
  ASSERT_TRUE(FileSystem::Default()->CreateDir(dir).ok());
  const RunResult run = Recover(Dirs({dir}), tmp.Join("r.json"));
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_NE(run.out.find(dir + "  empty log dir: nothing to recover\n"), std::string::npos)
      << run.out;
  EXPECT_EQ(run.out.find("unclean"), std::string::npos) << run.out;
}

TEST(RecoverTest, MissingDirIsNotCreated) {
  TempDir tmp;
  const std::string dir = tmp.Join("typo");
  const RunResult run = Recover(Dirs({dir}), tmp.Join("r.json"));
  EXPECT_EQ(run.rc, 2);
  EXPECT_EQ(run.err, "daruma recover: log dir " + dir + ": no such directory\n");
  EXPECT_EQ(run.out, "");
  EXPECT_FALSE(FileSystem::Default()->Exists(dir));
}

TEST(RecoverTest, CleanShutdownClearsTheCrashLoopGuard) {
  // The broker removes .daruma_unclean_starts after each clean shutdown;
  // recover ends with one, so the count a crashed broker left goes too.
  TempDir tmp;
  const std::string dir = tmp.Join("data");
  ASSERT_TRUE(FileSystem::Default()->CreateDir(dir).ok());
  const std::string guard = dir + "/.daruma_unclean_starts";
  WriteStringToFile(guard, "unclean.starts=3\n");
  const RunResult run = Recover(Dirs({dir}), tmp.Join("r.json"));
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_FALSE(FileSystem::Default()->Exists(guard));
  EXPECT_NE(run.out.find("Cleared the crash-loop guard's count of unclean starts (" + guard + ")"),
            std::string::npos)
      << run.out;
}

TEST(RecoverTest, QuietPrintsNothingOnSuccess) {
  TempDir tmp;
  RecoverOptions o = Dirs({tmp.path()});
  o.quiet = true;
  o.progress = ProgressMode::kTty;
  std::ostringstream out, err;
  EXPECT_EQ(RunRecover(o, out, err), 0);
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(err.str(), "");
}

// Issue 25: a partition recover cannot load is left byte for byte as it was,
// every aborted transaction of its .txnindex files included, and the dir's
// clean-shutdown marker stays (the partition is as clean as before).
TEST(RecoverTest, RefusedPartitionIsLeftExactlyAsFound) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const std::string dir = CopyScenario(tmp, "transactional");
  const std::string partition = dir + "/fixture-txn-0";
  daruma::testing::MakeSegmentZeroUnloadable(partition);
  const auto before = daruma::testing::ReadTree(partition);
  RunResult run = Recover(Dirs({dir}), tmp.Join("report.json"));
  EXPECT_EQ(run.rc, 1) << run.out << run.err;
  ASSERT_EQ(run.report["partitions"].size(), 1u);
  EXPECT_EQ(run.report["partitions"][0]["leftUnchanged"], true);
  EXPECT_NE(run.out.find("left exactly as it was found"), std::string::npos) << run.out;
  EXPECT_EQ(daruma::testing::ReadTree(partition), before);
  EXPECT_TRUE(FileSystem::Default()->Exists(dir + "/.kafka_cleanshutdown"));
}

}  // namespace
}  // namespace daruma::tools
