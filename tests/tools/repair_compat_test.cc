// `daruma repair`, then recovery, on damaged copies of the Kafka-written
// fixtures: the repaired dir loads (as a broker would load it) to the view
// Kafka's recovery gives on the damaged copy, and a second repair finds
// nothing to do. Where Kafka's view is known (expected-load.txt, first block)
// it is the reference: the torn tail as the crash left it, and the clean
// scenarios without their indexes (Kafka rebuilds them and ends at the same
// offsets). Without any producer snapshot the reference is Kafka's view of
// the undamaged dir, which Kafka itself does NOT reach on the damaged copy:
// its clean start then takes the upgrade path (empty snapshots, no scan) and
// forgets the transactional scenario's open transaction (first unstable
// offset 470); `check` reports that and repair rebuilds the state. Elsewhere (a bit flip below the
// recovery point, which Kafka's clean start never reads) the reference is
// Daruma's own LoadLog on an untouched damaged copy, recovering every segment.
// Repair runs with the fixtures' index.interval.bytes (1024, given by --set),
// so rebuilt indexes must equal Kafka's byte for byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_support.h"
#include "tools/kafka_fixture_view.h"
#include "tools/repair_command.h"

namespace daruma::tools {
namespace {

namespace fsys = std::filesystem;
using daruma::testing::CopyTree;
using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;
using testlog::FlipMiddleSegment;
using testlog::FullRecoveryView;
using testlog::KafkaView;
using testlog::kCompressed;
using testlog::kFixtureSettings;
using testlog::kIdem;
using testlog::kTorn;
using testlog::kTxn;
using testlog::Load;
using testlog::Scenario;
using testlog::ScenarioDir;
using testlog::View;

struct Run {
  int rc = -1;
  std::string out;
};

Run Repair(const std::string& log_dir) {
  RepairCommandOptions o;
  o.log_dirs = {log_dir};
  o.overrides = kFixtureSettings;
  o.max_corrupt_bytes = -1;
  o.progress = ProgressMode::kQuiet;
  std::ostringstream out, err;
  Run r;
  r.rc = RunRepair(o, out, err);
  r.out = out.str() + err.str();
  return r;
}

// Damages a copy of the scenario with `damage`, repairs it, loads it, and
// checks the view and that a second repair has nothing to do; `verify`, if
// given, then looks at the repaired partition dir.
void RepairThenLoad(const Scenario& s, const std::function<void(const std::string&)>& damage,
                    const View& expected,
                    const std::function<void(const std::string&)>& verify = nullptr) {
  TempDir tmp;
  const std::string dir = tmp.Join("logdir");
  CopyTree(ScenarioDir(s) + "/logdir", dir);
  damage(dir + "/" + s.topic + "-0");
  const Run first = Repair(dir);
  ASSERT_EQ(first.rc, 0) << first.out;
  EXPECT_NE(first.out.find("Repair plan:"), std::string::npos) << first.out;
  EXPECT_EQ(Load(dir, s, /*from_zero=*/false), expected);
  const Run second = Repair(dir);
  EXPECT_EQ(second.rc, 0) << second.out;
  EXPECT_EQ(second.out, "Nothing to repair.\n");
  if (verify) verify(dir + "/" + s.topic + "-0");
}

void RemoveWithSuffix(const std::string& part, const std::string& suffix) {
  for (const auto& e : fsys::directory_iterator(part)) {
    if (e.path().string().ends_with(suffix)) fsys::remove(e.path());
  }
}

TEST(RepairCompatTest, TornTailRepairedToKafkasView) {
  DARUMA_REQUIRE_FIXTURES();
  RepairThenLoad(
      kTorn, [](const std::string&) {}, KafkaView(kTorn));
}

class CleanScenarioRepairTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(CleanScenarioRepairTest, MissingIndexesRebuiltAsKafkaWritesThem) {
  DARUMA_REQUIRE_FIXTURES();
  const Scenario& s = GetParam();
  // Byte for byte what Kafka wrote (repair closed them trimmed).
  auto same_as_kafka = [&](const std::string& part) {
    const std::string original = ScenarioDir(s) + "/logdir/" + s.topic + "-0";
    int compared = 0;
    for (const auto& e : fsys::directory_iterator(original)) {
      const std::string name = e.path().filename().string();
      if (!name.ends_with(".index") && !name.ends_with(".timeindex")) continue;
      SCOPED_TRACE(name);
      EXPECT_EQ(ReadFileToString(part + "/" + name), ReadFileToString(e.path()));
      ++compared;
    }
    EXPECT_GT(compared, 10);
  };
  RepairThenLoad(
      s,
      [](const std::string& part) {
        RemoveWithSuffix(part, ".index");
        RemoveWithSuffix(part, ".timeindex");
      },
      KafkaView(s), same_as_kafka);
}

TEST_P(CleanScenarioRepairTest, MissingSnapshotsRebuilt) {
  DARUMA_REQUIRE_FIXTURES();
  const Scenario& s = GetParam();
  RepairThenLoad(
      s, [](const std::string& part) { RemoveWithSuffix(part, ".snapshot"); }, KafkaView(s));
}

// A bit flip inside a batch of the middle segment, below the recovery point
// of a clean shutdown: the reference is a full recovery of the damaged copy.
TEST_P(CleanScenarioRepairTest, BitFlipBelowTheRecoveryPoint) {
  DARUMA_REQUIRE_FIXTURES();
  const Scenario& s = GetParam();
  PartitionRecoveryReport report;  // Daruma's recovery of every segment, untouched by repair
  TempDir ref_tmp;
  const std::string ref = ref_tmp.Join("logdir");
  CopyTree(ScenarioDir(s) + "/logdir", ref);
  FlipMiddleSegment(ref + "/" + s.topic + "-0");
  const View expected = FullRecoveryView(ref, s, &report);
  ASSERT_FALSE(report.quarantined.empty()) << "the flip was not seen";
  EXPECT_LT(std::stoll(expected.fields.at("nextOffset")),
            std::stoll(KafkaView(s).fields["nextOffset"]));
  RepairThenLoad(s, FlipMiddleSegment, expected);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CleanScenarioRepairTest,
                         ::testing::Values(kIdem, kTxn, kCompressed),
                         [](const auto& info) { return testlog::ScenarioTestName(info.param); });

}  // namespace
}  // namespace daruma::tools
