// `daruma check` on copies of the Kafka-written fixtures: the cleanly shut
// down scenarios are clean; unclean-torn-tail reports the torn batch at the
// position Kafka truncates to (6416 in 975.log, offset 1045) and the high
// watermark checkpoint above it, and nothing in the copies changes.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_support.h"
#include "tools/check_command.h"
#include "tools/generated_log_dir.h"

namespace daruma::tools {
namespace {

using daruma::testing::CopyTree;
using daruma::testing::FixturesDir;
using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;

struct Result {
  int rc = -1;
  std::string out;
  nlohmann::json json;
};

// `damage`, if given, changes the copy before the check.
Result CheckScenario(const TempDir& tmp, const std::string& scenario,
                     const std::function<void(const std::string& dir)>& damage = nullptr) {
  const std::string dir = tmp.Join(scenario);
  CopyTree(FixturesDir() + "/kafka-generated/" + scenario + "/logdir", dir);
  if (damage) damage(dir);
  const testlog::TreeState before = testlog::SnapshotTree(dir);
  CheckCommandOptions o;
  o.log_dirs = {dir};
  o.threads = 2;
  o.json_file = tmp.Join(scenario + ".json");
  o.progress = ProgressMode::kQuiet;
  std::ostringstream out, err;
  Result r;
  r.rc = RunCheck(o, out, err);
  r.out = out.str() + err.str();
  r.json = nlohmann::json::parse(ReadFileToString(o.json_file));
  EXPECT_EQ(testlog::SnapshotTree(dir), before) << "check changed " << scenario;
  return r;
}

class CleanScenarioTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CleanScenarioTest, IsClean) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const Result r = CheckScenario(tmp, GetParam());
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.json["problems"], 0) << r.json.dump(2);
  ASSERT_EQ(r.json["logDirs"][0]["partitions"].size(), 1u);
  EXPECT_EQ(r.json["logDirs"][0]["cleanShutdown"], true);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CleanScenarioTest,
                         ::testing::Values("multi-segment-idempotent", "transactional",
                                           "compressed"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(CheckCompatTest, TornTailReportedWhereKafkaTruncates) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const Result r = CheckScenario(tmp, "unclean-torn-tail");
  EXPECT_EQ(r.rc, 1) << r.out;
  const auto& part = r.json["logDirs"][0]["partitions"][0];
  const std::string log = tmp.Join("unclean-torn-tail/fixture-crash-0/00000000000000000975.log");
  ASSERT_EQ(part["problems"].size(), 1u) << r.json.dump(2);
  EXPECT_EQ(part["problems"][0]["file"], log);
  EXPECT_EQ(part["problems"][0]["position"], 6416);
  EXPECT_EQ(part["problems"][0]["offset"], 1045);
  EXPECT_EQ(part["problems"][0]["kind"], "torn_tail");
  EXPECT_EQ(part["quarantined"][0]["kind"], "torn_tail");
  EXPECT_EQ(part["dataBytesDropped"], 6651 - 6416);
  EXPECT_EQ(part["logEndOffset"], 1045);
  // The crash left a high watermark (1050) above what survives (1045).
  const auto& dir_problems = r.json["logDirs"][0]["problems"];
  ASSERT_EQ(dir_problems.size(), 1u) << r.json.dump(2);
  EXPECT_EQ(dir_problems[0]["file"], tmp.Join("unclean-torn-tail/replication-offset-checkpoint"));
  EXPECT_EQ(dir_problems[0]["offset"], 1050);
  EXPECT_EQ(dir_problems[0]["kind"], "corrupt_checkpoint");
  EXPECT_EQ(r.json["logDirs"][0]["cleanShutdown"], false);
}

// Kafka lists an aborted transaction in the .txnindex of the segment with its
// ABORT marker: a missing or cut file is the one named, not the next file,
// whose entries only look shifted against one list for the whole log.
TEST(CheckCompatTest, AMissingOrCutTxnIndexIsTheOneNamed) {
  DARUMA_REQUIRE_FIXTURES();
  const std::string part = "transactional/fixture-txn-0/";
  TempDir missing_tmp;
  const Result missing = CheckScenario(missing_tmp, "transactional", [&](const std::string& dir) {
    std::filesystem::remove(dir + "/fixture-txn-0/00000000000000000080.txnindex");
  });
  EXPECT_EQ(missing.rc, 1) << missing.out;
  const auto& m = missing.json["logDirs"][0]["partitions"][0]["problems"];
  ASSERT_EQ(m.size(), 1u) << missing.json.dump(2);
  EXPECT_EQ(m[0]["file"], missing_tmp.Join(part + "00000000000000000080.txnindex"));
  EXPECT_EQ(m[0]["kind"], "missing_index");

  TempDir cut_tmp;
  const Result cut = CheckScenario(cut_tmp, "transactional", [&](const std::string& dir) {
    std::filesystem::resize_file(dir + "/fixture-txn-0/00000000000000000159.txnindex", 100);
  });
  EXPECT_EQ(cut.rc, 1) << cut.out;
  const auto& c = cut.json["logDirs"][0]["partitions"][0]["problems"];
  ASSERT_EQ(c.size(), 1u) << cut.json.dump(2);
  EXPECT_EQ(c[0]["file"], cut_tmp.Join(part + "00000000000000000159.txnindex"));
  EXPECT_EQ(c[0]["kind"], "corrupt_index");
  EXPECT_EQ(c[0]["position"], 68);  // after two whole 34-byte entries
}

}  // namespace
}  // namespace daruma::tools
