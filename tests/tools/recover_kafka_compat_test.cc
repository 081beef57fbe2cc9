// `daruma recover` as a tool for Kafka operators (issue 24), on copies of the
// Kafka-written fixtures: after recover every file Kafka reads parses with
// Daruma's Kafka-format readers (`check` finds no problem, the marker and
// checkpoints read back) and a load gives Kafka's own view
// (expected-load.txt); the clean-shutdown marker rule in every case; the
// --full rescan; --kafka-config with the KRaft metadata log left untouched
// and a dir a Kafka broker still holds refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "log/clean_shutdown_file.h"
#include "log/offset_checkpoint_file.h"
#include "support/record_lock_holder.h"
#include "support/test_support.h"
#include "tools/generated_log_dir.h"
#include "tools/kafka_fixture_view.h"
#include "tools/tool_run.h"

namespace daruma::tools {
namespace {

namespace fsys = std::filesystem;
using daruma::testing::CopyTree;
using daruma::testing::ReadFileToString;
using daruma::testing::RecordLockHolder;
using daruma::testing::TempDir;
using daruma::testing::WriteStringToFile;
using testlog::KafkaView;
using testlog::kCompressed;
using testlog::kFixtureSettings;
using testlog::kIdem;
using testlog::kTorn;
using testlog::kTxn;
using testlog::Load;
using testlog::RunRecoverQuietly;
using testlog::Scenario;
using testlog::ScenarioDir;
using testlog::ToolRun;
using testlog::View;

std::string CopyScenario(const TempDir& tmp, const Scenario& s) {
  const std::string dir = tmp.Join(s.name);
  CopyTree(ScenarioDir(s) + "/logdir", dir);
  return dir;
}

std::string PartitionDir(const std::string& log_dir, const Scenario& s) {
  return log_dir + "/" + s.topic + "-0";
}

ToolRun Recover(const TempDir& tmp, const std::string& dir, bool full) {
  RecoverOptions o;
  o.log_dirs = {dir};
  o.overrides = kFixtureSettings;
  o.full = full;
  o.report_file = tmp.Join("report.json");
  return RunRecoverQuietly(o);
}

// The marker on disk, read with Daruma's reader.
std::optional<int64_t> MarkerEpoch(const std::string& dir) {
  auto epoch = CleanShutdownFile(dir).ReadBrokerEpoch();
  EXPECT_TRUE(epoch.ok()) << epoch.status().ToString();
  return epoch.ok() ? *epoch : std::nullopt;
}

// Every file Kafka reads at start-up parses with Daruma's readers: `check`
// verifies every segment, index, snapshot, checkpoint and the epoch cache,
// and the three offset checkpoints name the partition at its LEO.
void ExpectKafkaReadable(const TempDir& tmp, const std::string& dir, const Scenario& s,
                         int64_t leo) {
  CheckCommandOptions o;
  o.log_dirs = {dir};
  o.overrides = kFixtureSettings;
  o.json_file = tmp.Join("check.json");
  const ToolRun check = testlog::RunCheckQuietly(o);
  EXPECT_EQ(check.rc, 0) << check.out << check.err;
  EXPECT_EQ(check.json["problems"], 0) << check.json.dump(2);
  for (const char* name : {"recovery-point-offset-checkpoint", "replication-offset-checkpoint"}) {
    auto file = OffsetCheckpointFile::Open(dir + "/" + name);
    ASSERT_TRUE(file.ok());
    auto offsets = file->Read();
    ASSERT_TRUE(offsets.ok()) << name << ": " << offsets.status().ToString();
    EXPECT_EQ(*offsets, (OffsetMap{{TopicPartition{s.topic, 0}, leo}})) << name;
  }
  auto starts = OffsetCheckpointFile::Open(dir + "/log-start-offset-checkpoint");
  ASSERT_TRUE(starts.ok());
  EXPECT_TRUE(starts->Read().ok());
}

int64_t Leo(const View& v) {
  return std::stoll(v.fields.at("nextOffset"));
}

// ---- The marker rule ----------------------------------------------------------

class CleanKafkaDirTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(CleanKafkaDirTest, UntouchedKeepsTheBrokerEpoch) {
  DARUMA_REQUIRE_FIXTURES();
  const Scenario& s = GetParam();
  TempDir tmp;
  const std::string dir = CopyScenario(tmp, s);
  const ToolRun run = Recover(tmp, dir, /*full=*/false);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  const auto& marker = run.json["logDirs"][0]["marker"];
  EXPECT_EQ(marker["in"], 7);
  EXPECT_EQ(marker["out"], 7);
  EXPECT_EQ(marker["why"], "clean shutdown and nothing changed: broker epoch kept");
  EXPECT_EQ(ReadFileToString(dir + "/.kafka_cleanshutdown"), "{\"version\":0,\"brokerEpoch\":7}");
  EXPECT_NE(run.out.find(".kafka_cleanshutdown: brokerEpoch 7 (clean shutdown and nothing "
                         "changed: broker epoch kept)"),
            std::string::npos)
      << run.out;
  EXPECT_EQ(Load(dir, s, /*from_zero=*/false), KafkaView(s));
  ExpectKafkaReadable(tmp, dir, s, Leo(KafkaView(s)));
}

TEST_P(CleanKafkaDirTest, FullRescanThatFindsNothingKeepsTheEpochAndKafkasIndexes) {
  DARUMA_REQUIRE_FIXTURES();
  const Scenario& s = GetParam();
  TempDir tmp;
  const std::string dir = CopyScenario(tmp, s);
  const ToolRun run = Recover(tmp, dir, /*full=*/true);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  const auto& p = run.json["partitions"][0];
  EXPECT_EQ(p["recoveredSegments"], p["segments"].size()) << "--full recovers every segment";
  EXPECT_EQ(p["truncatedBytes"], 0);
  EXPECT_EQ(run.json["logDirs"][0]["cleanShutdown"], true);
  EXPECT_EQ(run.json["logDirs"][0]["marker"]["out"], 7) << run.json["logDirs"][0].dump(2);
  EXPECT_EQ(MarkerEpoch(dir), 7);
  EXPECT_NE(run.out.find("Full rescan"), std::string::npos) << run.out;
  // Rebuilt at Kafka's interval: byte for byte what Kafka wrote.
  int compared = 0;
  for (const auto& e : fsys::directory_iterator(PartitionDir(ScenarioDir(s) + "/logdir", s))) {
    const std::string name = e.path().filename().string();
    if (!name.ends_with(".index") && !name.ends_with(".timeindex") &&
        !name.ends_with(".txnindex")) {
      continue;
    }
    SCOPED_TRACE(name);
    EXPECT_EQ(ReadFileToString(PartitionDir(dir, s) + "/" + name), ReadFileToString(e.path()));
    ++compared;
  }
  EXPECT_GT(compared, 10);
  EXPECT_EQ(Load(dir, s, /*from_zero=*/false), KafkaView(s));
  ExpectKafkaReadable(tmp, dir, s, Leo(KafkaView(s)));
}

// A bit flip below the recovery point of a clean shutdown: Kafka's clean
// start, and recover without --full, trust the segment (the marker keeps its
// epoch, the damage stays); --full finds it, truncates there, and the marker
// says -1.
TEST_P(CleanKafkaDirTest, FullRescanFindsDamageBelowTheRecoveryPoint) {
  DARUMA_REQUIRE_FIXTURES();
  const Scenario& s = GetParam();
  TempDir tmp;
  const std::string dir = CopyScenario(tmp, s);
  testlog::FlipMiddleSegment(PartitionDir(dir, s));
  PartitionRecoveryReport reference;
  const View expected = testlog::FullRecoveryView(dir, s, &reference);
  ASSERT_GT(reference.truncated_bytes, 0);

  const ToolRun trusting = Recover(tmp, dir, /*full=*/false);
  ASSERT_EQ(trusting.rc, 0) << trusting.out << trusting.err;
  EXPECT_EQ(trusting.json["logDirs"][0]["marker"]["out"], 7);
  EXPECT_EQ(trusting.json["partitions"][0]["truncatedBytes"], 0);

  const ToolRun full = Recover(tmp, dir, /*full=*/true);
  ASSERT_EQ(full.rc, 0) << full.out << full.err;
  const auto& marker = full.json["logDirs"][0]["marker"];
  EXPECT_EQ(marker["in"], 7);
  EXPECT_EQ(marker["out"], -1);
  EXPECT_NE(marker["why"].get<std::string>().find("clean shutdown, but recovery changed the dir"),
            std::string::npos)
      << marker.dump();
  EXPECT_EQ(full.json["partitions"][0]["truncatedBytes"], reference.truncated_bytes);
  EXPECT_EQ(MarkerEpoch(dir), -1);
  EXPECT_LT(Leo(expected), Leo(KafkaView(s)));
  EXPECT_EQ(Load(dir, s, /*from_zero=*/false), expected);
  ExpectKafkaReadable(tmp, dir, s, Leo(expected));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CleanKafkaDirTest, ::testing::Values(kIdem, kTxn, kCompressed),
                         [](const auto& info) { return testlog::ScenarioTestName(info.param); });

TEST(RecoverKafkaCompatTest, UncleanShutdownWritesMinusOne) {
  DARUMA_REQUIRE_FIXTURES();
  for (bool full : {false, true}) {
    SCOPED_TRACE(full ? "--full" : "default");
    TempDir run_tmp;
    const std::string copy = CopyScenario(run_tmp, kTorn);
    const ToolRun run = Recover(run_tmp, copy, full);
    ASSERT_EQ(run.rc, 0) << run.out << run.err;
    const auto& marker = run.json["logDirs"][0]["marker"];
    EXPECT_FALSE(marker.contains("in")) << marker.dump();  // no marker on input
    EXPECT_EQ(marker["out"], -1);
    EXPECT_NE(marker["why"].get<std::string>().find("unclean shutdown"), std::string::npos);
    EXPECT_EQ(MarkerEpoch(copy), -1);
    EXPECT_EQ(Load(copy, kTorn, /*from_zero=*/false), KafkaView(kTorn));
    ExpectKafkaReadable(run_tmp, copy, kTorn, Leo(KafkaView(kTorn)));
  }
}

// ---- --kafka-config -----------------------------------------------------------

// A KRaft broker's server.properties for `log_dirs`, with the fixtures'
// index settings, and `extra` lines.
std::string KafkaProperties(const std::string& log_dirs, const std::string& extra) {
  return "process.roles=broker,controller\nnode.id=1\n"
         "controller.quorum.voters=1@localhost:9093\n"
         "listeners=PLAINTEXT://:9092,CONTROLLER://:9093\n"
         "controller.listener.names=CONTROLLER\n"
         "log.dirs=" +
         log_dirs +
         "\nnum.recovery.threads.per.data.dir=3\n"
         "log.index.interval.bytes=1024\nlog.index.size.max.bytes=65536\n"
         "log.segment.bytes=1073741824\n" +
         extra;
}

// A KRaft metadata partition with bytes no recovery may touch.
void WriteMetadataLog(const std::string& partition_dir) {
  fsys::create_directories(partition_dir);
  WriteStringToFile(partition_dir + "/00000000000000000000.log", std::string(100, '\x7f'));
  WriteStringToFile(partition_dir + "/quorum-state", "{\"leaderId\":1}");
}

ToolRun RecoverWithKafkaConfig(const TempDir& tmp, const std::string& properties, bool full) {
  WriteStringToFile(tmp.Join("server.properties"), properties);
  RecoverOptions o;
  o.kafka_config_file = tmp.Join("server.properties");
  o.full = full;
  o.report_file = tmp.Join("report.json");
  return RunRecoverQuietly(o);
}

TEST(RecoverKafkaCompatTest, KafkaConfigRecoversTheBrokersDirsAndLeavesMetadataLogDir) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const std::string dir = CopyScenario(tmp, kTxn);
  const std::string metadata = tmp.Join("kraft");
  WriteMetadataLog(metadata + "/__cluster_metadata-0");
  const testlog::TreeState metadata_before = testlog::SnapshotTree(metadata);
  const ToolRun run = RecoverWithKafkaConfig(
      tmp, KafkaProperties(dir, "metadata.log.dir=" + metadata + "\n"), /*full=*/true);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(run.err, "") << "a KRaft broker's keys are all known";
  EXPECT_EQ(testlog::SnapshotTree(metadata), metadata_before);
  EXPECT_FALSE(fsys::exists(metadata + "/.lock"));
  const auto& kafka = run.json["kafkaConfig"];
  EXPECT_EQ(kafka["file"], tmp.Join("server.properties"));
  EXPECT_EQ(kafka["metadataLog"]["path"], metadata);
  EXPECT_EQ(kafka["metadataLog"]["untouched"], true);
  EXPECT_NE(run.out.find(metadata + "  KRaft metadata.log.dir: not recovered, left untouched"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("1 log dir, 3 recovery thread(s) per dir, log.index.interval.bytes=1024"),
            std::string::npos)
      << run.out;
  // The file's index settings rebuilt Kafka's indexes exactly: epoch kept.
  EXPECT_EQ(run.json["logDirs"][0]["marker"]["out"], 7) << run.json["logDirs"][0].dump(2);
  EXPECT_EQ(Load(dir, kTxn, /*from_zero=*/false), KafkaView(kTxn));
  ExpectKafkaReadable(tmp, dir, kTxn, Leo(KafkaView(kTxn)));
}

TEST(RecoverKafkaCompatTest, KafkaConfigSkipsTheMetadataLogInTheFirstLogDir) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const std::string dir = CopyScenario(tmp, kIdem);
  const std::string metadata = dir + "/__cluster_metadata-0";
  WriteMetadataLog(metadata);
  const testlog::TreeState metadata_before = testlog::SnapshotTree(metadata);
  const ToolRun run = RecoverWithKafkaConfig(tmp, KafkaProperties(dir, ""), /*full=*/false);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(testlog::SnapshotTree(metadata), metadata_before);
  EXPECT_EQ(run.json["kafkaConfig"]["metadataLog"]["path"], metadata);
  EXPECT_EQ(run.json["partitions"].size(), 1u);
  EXPECT_NE(run.out.find(metadata + "  KRaft metadata log"), std::string::npos) << run.out;
  EXPECT_EQ(run.json["logDirs"][0]["marker"]["out"], 7);
}

TEST(RecoverKafkaCompatTest, KafkaConfigRefusesWhileKafkaHoldsALogDir) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const std::string dir = CopyScenario(tmp, kTorn);
  RecordLockHolder kafka(dir + "/.lock");
  ASSERT_TRUE(kafka.holding());
  const testlog::TreeState before = testlog::SnapshotTree(dir);
  const ToolRun run = RecoverWithKafkaConfig(tmp, KafkaProperties(dir, ""), /*full=*/false);
  EXPECT_EQ(run.rc, 2);
  EXPECT_NE(run.err.find(dir + "/.lock is held by process " + std::to_string(kafka.pid())),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("nothing was changed"), std::string::npos) << run.err;
  EXPECT_EQ(testlog::SnapshotTree(dir), before);
}

TEST(RecoverKafkaCompatTest, KafkaConfigRefusesWhileKafkaHoldsTheMetadataLogDir) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const std::string dir = CopyScenario(tmp, kTorn);
  const std::string metadata = tmp.Join("kraft");
  WriteMetadataLog(metadata + "/__cluster_metadata-0");
  RecordLockHolder kafka(metadata + "/.lock");
  ASSERT_TRUE(kafka.holding());
  const testlog::TreeState before = testlog::SnapshotTree(dir);
  const ToolRun run = RecoverWithKafkaConfig(
      tmp, KafkaProperties(dir, "metadata.log.dir=" + metadata + "\n"), /*full=*/false);
  EXPECT_EQ(run.rc, 2);
  EXPECT_NE(run.err.find(metadata + "/.lock is held by process"), std::string::npos) << run.err;
  EXPECT_EQ(testlog::SnapshotTree(dir), before);
}

TEST(RecoverKafkaCompatTest, PlainRecoverRefusesAKafkaLockToo) {
  // The log dirs' own lock (LogManager's DirLock) sees Kafka's record lock
  // whichever option named the dirs.
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const std::string dir = CopyScenario(tmp, kTorn);
  RecordLockHolder kafka(dir + "/.lock");
  ASSERT_TRUE(kafka.holding());
  const testlog::TreeState before = testlog::SnapshotTree(dir);
  const ToolRun run = Recover(tmp, dir, /*full=*/false);
  EXPECT_EQ(run.rc, 2);
  EXPECT_NE(run.err.find(dir + "/.lock is held by process"), std::string::npos) << run.err;
  EXPECT_EQ(testlog::SnapshotTree(dir), before);
}

TEST(RecoverKafkaCompatTest, ConfigAndKafkaConfigTogetherIsUsage) {
  TempDir tmp;
  WriteStringToFile(tmp.Join("a.properties"), "log.dirs=" + tmp.path() + "\n");
  RecoverOptions o;
  o.config_file = tmp.Join("a.properties");
  o.kafka_config_file = tmp.Join("a.properties");
  const ToolRun run = RunRecoverQuietly(o);
  EXPECT_EQ(run.rc, 2);
  EXPECT_NE(run.err.find("--config and --kafka-config"), std::string::npos) << run.err;
  EXPECT_FALSE(fsys::exists(tmp.Join(".lock")));
}

}  // namespace
}  // namespace daruma::tools
