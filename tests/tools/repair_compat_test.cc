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

#include "recovery/log_loader.h"
#include "support/test_support.h"
#include "tools/generated_log_dir.h"
#include "tools/repair_command.h"

namespace daruma::tools {
namespace {

namespace fsys = std::filesystem;
using daruma::testing::CopyTree;
using daruma::testing::FixturesDir;
using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;

constexpr int64_t kNowMs = 1733000000000;
const std::vector<std::string> kFixtureSettings = {"log.index.interval.bytes=1024",
                                                   "log.index.size.max.bytes=65536"};

struct Scenario {
  std::string name;
  std::string topic;
};

// The CTest name shows the parameter: the scenario, not the struct's bytes.
void PrintTo(const Scenario& s, std::ostream* os) {
  *os << s.name;
}

std::string ScenarioDir(const Scenario& s) {
  return FixturesDir() + "/kafka-generated/" + s.name;
}

// What a load leaves visible: the fields expected-load.txt prints, except
// the recovery point (repair moves it to the LEO) and the producer count
// (clock-dependent, see the fixtures' README).
struct View {
  std::map<std::string, std::string> fields;
  std::vector<std::string> leader_epochs;
  std::vector<std::string> aborted;
  bool operator==(const View&) const = default;
};

std::ostream& operator<<(std::ostream& os, const View& v) {
  for (const auto& [k, val] : v.fields) os << k << "=" << val << " ";
  os << "epochs";
  for (const auto& e : v.leader_epochs) os << " " << e;
  os << " aborted " << v.aborted.size();
  return os;
}

// The first block of expected-load.txt ("as a broker would").
View KafkaView(const Scenario& s) {
  std::istringstream in(ReadFileToString(ScenarioDir(s) + "/expected-load.txt"));
  View v;
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.rfind("# files after load", 0) == 0) break;
    if (line.rfind("logStartOffset=", 0) == 0) {
      std::istringstream words(line);
      for (std::string w; words >> w;) {
        const std::string key = w.substr(0, w.find('='));
        if (key != "recoveryPoint" && key != "activeProducers") {
          v.fields[key] = w.substr(w.find('=') + 1);
        }
      }
    } else if (line.rfind("leaderEpochs=", 0) == 0) {
      section = "epochs";
      if (line.size() > 13) v.leader_epochs.push_back(line.substr(13));
    } else if (line.rfind("abortedTxns=", 0) == 0) {
      section = "aborted";
    } else if (!line.empty() && line[0] == ' ') {
      const std::string item = line.substr(line.find_first_not_of(' '));
      (section == "epochs" ? v.leader_epochs : v.aborted).push_back(item);
    }
  }
  return v;
}

View ViewOf(const Log& log) {
  View v;
  auto fuo = log.first_unstable_offset();
  v.fields = {{"logStartOffset", std::to_string(log.log_start_offset())},
              {"nextOffset", std::to_string(log.log_end_offset())},
              {"activeSegmentBase", std::to_string(log.active_segment_base())},
              {"activeSegmentSize", std::to_string(log.active_segment_size())},
              {"segments", std::to_string(log.num_segments())},
              {"firstUnstableOffset", fuo ? std::to_string(*fuo) : "none"}};
  for (const auto& [epoch, start] : log.leader_epochs()) {
    v.leader_epochs.push_back("(" + std::to_string(epoch) + "," + std::to_string(start) + ")");
  }
  for (const AbortedTxn& t : log.AllAbortedTransactions()) {
    v.aborted.push_back("(pid=" + std::to_string(t.producer_id) + ",first=" +
                        std::to_string(t.first_offset) + ",last=" + std::to_string(t.last_offset) +
                        ",lso=" + std::to_string(t.last_stable_offset) + ")");
  }
  return v;
}

int64_t CheckpointedOffset(const std::string& path) {
  std::istringstream in(ReadFileToString(path));
  std::string line, topic;
  std::getline(in, line);
  std::getline(in, line);
  int partition = 0;
  int64_t offset = 0;
  in >> topic >> partition >> offset;
  return offset;
}

// Loads `log_dir` as a broker would (marker, recovery point checkpoint), or
// (`from_zero`) as after an unclean shutdown from offset 0.
View Load(const std::string& log_dir, const Scenario& s, bool from_zero) {
  LoadLogParams p;
  p.fs = FileSystem::Default();
  p.log_dir = log_dir;
  p.tp = TopicPartition{s.topic, 0};
  p.partition_dir = log_dir + "/" + p.tp.ToString();
  p.config.segment_index_bytes = 65536;
  p.config.index_interval_bytes = 1024;
  ManualClock clock(kNowMs);
  p.clock = &clock;
  p.had_clean_shutdown = !from_zero && fsys::exists(log_dir + "/.kafka_cleanshutdown");
  p.recovery_point_checkpoint =
      from_zero ? 0 : CheckpointedOffset(log_dir + "/recovery-point-offset-checkpoint");
  p.quarantine = true;
  PartitionRecoveryReport report;
  auto log = LoadLog(p, &report);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  if (!log.ok()) return {};
  EXPECT_TRUE(report.warnings.empty() && report.quarantined.empty() && report.truncated_bytes == 0)
      << "the load had to repair again: " << ToJson(report).dump();
  View v = ViewOf(**log);
  EXPECT_TRUE((*log)->Close().ok());
  return v;
}

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

const Scenario kIdem{"multi-segment-idempotent", "fixture-idem"};
const Scenario kTxn{"transactional", "fixture-txn"};
const Scenario kCompressed{"compressed", "fixture-compressed"};
const Scenario kTorn{"unclean-torn-tail", "fixture-crash"};

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
  auto flip = [](const std::string& part) {
    std::vector<std::string> logs;
    for (const auto& e : fsys::directory_iterator(part)) {
      if (e.path().string().ends_with(".log")) logs.push_back(e.path());
    }
    std::sort(logs.begin(), logs.end());
    const std::string victim = logs[logs.size() / 2];
    testlog::FlipByte(victim, int64_t(fsys::file_size(victim)) / 2);
  };
  TempDir ref_tmp;
  const std::string ref = ref_tmp.Join("logdir");
  CopyTree(ScenarioDir(s) + "/logdir", ref);
  flip(ref + "/" + s.topic + "-0");
  View expected;
  {
    LoadLogParams p;  // Daruma's recovery of every segment, untouched by repair
    p.fs = FileSystem::Default();
    p.log_dir = ref;
    p.tp = TopicPartition{s.topic, 0};
    p.partition_dir = ref + "/" + p.tp.ToString();
    p.config.segment_index_bytes = 65536;
    p.config.index_interval_bytes = 1024;
    ManualClock clock(kNowMs);
    p.clock = &clock;
    p.had_clean_shutdown = false;
    p.recovery_point_checkpoint = 0;
    p.quarantine = true;
    PartitionRecoveryReport report;
    auto log = LoadLog(p, &report);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    ASSERT_FALSE(report.quarantined.empty()) << "the flip was not seen";
    expected = ViewOf(**log);
    ASSERT_TRUE((*log)->Close().ok());
  }
  EXPECT_LT(std::stoll(expected.fields["nextOffset"]),
            std::stoll(KafkaView(s).fields["nextOffset"]));
  RepairThenLoad(s, flip, expected);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CleanScenarioRepairTest,
                         ::testing::Values(kIdem, kTxn, kCompressed), [](const auto& info) {
                           std::string n = info.param.name;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace daruma::tools
