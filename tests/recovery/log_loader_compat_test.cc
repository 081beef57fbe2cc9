// LoadLog against Kafka's own LogLoader results on the Kafka-written fixtures
// (fixtures/kafka-generated/*/expected-load.txt): both blocks of every
// scenario, offsets, epochs, aborted transactions, producers and the exact
// files left with their sizes; plus byte-identical index rebuilds.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "recovery/log_loader.h"
#include "recovery/quarantine.h"
#include "support/test_support.h"

namespace daruma {
namespace {

namespace fsys = std::filesystem;
using testing::CopyTree;
using testing::FixturesDir;
using testing::ReadFileToString;
using testing::TempDir;

// Kafka ran the fixture loads with the real clock (2024), a day after the
// fixture timestamps (2023): producers loaded from snapshots expire there.
constexpr int64_t kNowMs = 1733000000000;

struct ExpectedLoad {
  std::vector<std::string> warnings;
  std::map<std::string, std::string> fields;  // logStartOffset=..., etc.
  std::vector<std::string> leader_epochs;     // "(epoch,start)"
  std::vector<std::string> aborted;           // "(pid=..,first=..,last=..,lso=..)"
  std::vector<std::pair<std::string, int64_t>> files;
};

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(' ');
  size_t e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<ExpectedLoad> ParseExpected(const std::string& path) {
  std::istringstream in(ReadFileToString(path));
  std::vector<ExpectedLoad> blocks;
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.rfind("## LogLoader.load()", 0) == 0) {
      blocks.emplace_back();
      section.clear();
      continue;
    }
    if (blocks.empty() || Trim(line).empty()) continue;
    ExpectedLoad& b = blocks.back();
    if (line.rfind("WARN ", 0) == 0) {
      b.warnings.push_back(line.substr(line.find(" - ") + 3));
    } else if (line.rfind("logStartOffset=", 0) == 0) {
      std::istringstream words(line);
      std::string w;
      while (words >> w) b.fields[w.substr(0, w.find('='))] = w.substr(w.find('=') + 1);
    } else if (line.rfind("leaderEpochs=", 0) == 0) {
      section = "epochs";
      std::string rest = line.substr(13);
      if (!rest.empty()) b.leader_epochs.push_back(rest);
    } else if (line.rfind("abortedTxns=", 0) == 0) {
      section = "aborted";
    } else if (line.rfind("# files after load", 0) == 0) {
      section = "files";
    } else if (section == "epochs") {
      b.leader_epochs.push_back(Trim(line));
    } else if (section == "aborted") {
      b.aborted.push_back(Trim(line));
    } else if (section == "files") {
      std::istringstream words(line);
      std::string name;
      int64_t size = 0;
      words >> name >> size;
      b.files.emplace_back(name, size);
    }
  }
  return blocks;
}

std::vector<std::pair<std::string, int64_t>> ListFiles(const std::string& dir) {
  std::vector<std::pair<std::string, int64_t>> files;
  for (const auto& e : fsys::directory_iterator(dir)) {
    if (e.is_regular_file()) {
      files.emplace_back(e.path().filename().string(), int64_t(e.file_size()));
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

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

int64_t CheckpointedRecoveryPoint(const std::string& log_dir) {
  std::istringstream in(ReadFileToString(log_dir + "/recovery-point-offset-checkpoint"));
  std::string line;
  std::getline(in, line);
  std::getline(in, line);
  std::string topic;
  int partition = 0;
  int64_t offset = 0;
  in >> topic >> partition >> offset;
  return offset;
}

LogConfig FixtureConfig(int32_t index_interval_bytes) {
  LogConfig config;
  config.segment_index_bytes = 65536;
  config.index_interval_bytes = index_interval_bytes;
  return config;
}

struct Loaded {
  std::unique_ptr<Log> log;
  PartitionRecoveryReport report;
};

Loaded Load(const std::string& log_dir, const Scenario& s, bool clean, int64_t recovery_point,
            bool quarantine, ManualClock* clock, int32_t index_interval_bytes = 4096) {
  LoadLogParams params;
  params.fs = FileSystem::Default();
  params.log_dir = log_dir;
  params.tp = TopicPartition{s.topic, 0};
  params.partition_dir = log_dir + "/" + params.tp.ToString();
  params.config = FixtureConfig(index_interval_bytes);
  params.clock = clock;
  params.had_clean_shutdown = clean;
  params.recovery_point_checkpoint = recovery_point;
  params.log_start_offset_checkpoint = 0;
  params.quarantine = quarantine;
  Loaded loaded;
  auto log = LoadLog(params, &loaded.report);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  if (log.ok()) loaded.log = std::move(*log);
  return loaded;
}

void CheckBlock(const Scenario& s, const ExpectedLoad& expected, bool as_broker, bool quarantine) {
  SCOPED_TRACE(s.name + (as_broker ? " as-is" : " unclean-from-0") +
               (quarantine ? " quarantine" : " no-quarantine"));
  TempDir tmp;
  const std::string log_dir = tmp.Join("logdir");
  CopyTree(ScenarioDir(s) + "/logdir", log_dir);
  const bool clean = as_broker && fsys::exists(log_dir + "/.kafka_cleanshutdown");
  const int64_t rp = as_broker ? CheckpointedRecoveryPoint(log_dir) : 0;
  ManualClock clock(kNowMs);
  Loaded loaded = Load(log_dir, s, clean, rp, quarantine, &clock);
  ASSERT_NE(loaded.log, nullptr);
  Log& log = *loaded.log;
  ASSERT_GE(expected.files.size(), 20u);
  const auto& f = expected.fields;
  EXPECT_EQ(std::to_string(log.log_start_offset()), f.at("logStartOffset"));
  EXPECT_EQ(std::to_string(log.recovery_point()), f.at("recoveryPoint"));
  EXPECT_EQ(std::to_string(log.log_end_offset()), f.at("nextOffset"));
  EXPECT_EQ(std::to_string(log.active_segment_base()), f.at("activeSegmentBase"));
  EXPECT_EQ(std::to_string(log.active_segment_size()), f.at("activeSegmentSize"));
  EXPECT_EQ(std::to_string(log.num_segments()), f.at("segments"));
  EXPECT_EQ(std::to_string(log.active_producer_count()), f.at("activeProducers"));
  auto fuo = log.first_unstable_offset();
  EXPECT_EQ(fuo ? std::to_string(*fuo) : "none", f.at("firstUnstableOffset"));

  std::vector<std::string> epochs;
  for (const auto& [epoch, start] : log.leader_epochs()) {
    epochs.push_back("(" + std::to_string(epoch) + "," + std::to_string(start) + ")");
  }
  EXPECT_EQ(epochs, expected.leader_epochs);
  std::vector<std::string> aborted;
  for (const AbortedTxn& t : log.AllAbortedTransactions()) {
    aborted.push_back("(pid=" + std::to_string(t.producer_id) + ",first=" +
                      std::to_string(t.first_offset) + ",last=" + std::to_string(t.last_offset) +
                      ",lso=" + std::to_string(t.last_stable_offset) + ")");
  }
  EXPECT_EQ(aborted, expected.aborted);
  EXPECT_EQ(loaded.report.warnings, expected.warnings);
  EXPECT_EQ(loaded.report.log_end_offset, log.log_end_offset());
  EXPECT_EQ(loaded.report.aborted_transactions.size(), expected.aborted.size());

  // Kafka's listing was taken with the log closed (indexes trimmed).
  ASSERT_TRUE(log.Close().ok());
  EXPECT_EQ(ListFiles(log_dir + "/" + s.topic + "-0"), expected.files);

  // Quarantine: exactly the truncated bytes are set aside.
  int64_t quarantined = 0;
  for (const auto& q : loaded.report.quarantined) quarantined += q.bytes;
  if (quarantine) {
    EXPECT_EQ(quarantined, loaded.report.truncated_bytes);
  } else {
    EXPECT_EQ(quarantined, 0);
    EXPECT_FALSE(fsys::exists(log_dir + "/" + s.topic + "-0/" + kQuarantineDirName));
  }
}

class LogLoaderCompatTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(LogLoaderCompatTest, BothBlocksMatchKafka) {
  DARUMA_REQUIRE_FIXTURES();
  const Scenario& s = GetParam();
  auto blocks = ParseExpected(ScenarioDir(s) + "/expected-load.txt");
  ASSERT_EQ(blocks.size(), 2u);
  for (bool quarantine : {true, false}) {
    CheckBlock(s, blocks[0], /*as_broker=*/true, quarantine);
    CheckBlock(s, blocks[1], /*as_broker=*/false, quarantine);
  }
}

// With index.interval.bytes=1024 (the value the fixtures were written with),
// indexes rebuilt from scratch equal Kafka's byte for byte.
TEST_P(LogLoaderCompatTest, RebuiltIndexesAreByteIdentical) {
  DARUMA_REQUIRE_FIXTURES();
  const Scenario& s = GetParam();
  if (!fsys::exists(ScenarioDir(s) + "/logdir/.kafka_cleanshutdown")) {
    GTEST_SKIP() << s.name
                 << " is a crash scenario (no .kafka_cleanshutdown): its indexes are what the "
                    "crash left, not what a clean rebuild writes, so there is nothing to compare";
  }
  TempDir tmp;
  const std::string log_dir = tmp.Join("logdir");
  CopyTree(ScenarioDir(s) + "/logdir", log_dir);
  const std::string part = log_dir + "/" + s.topic + "-0";
  const std::string original = ScenarioDir(s) + "/logdir/" + s.topic + "-0";
  std::vector<std::string> removed;
  for (const auto& [name, size] : ListFiles(part)) {
    if (name.ends_with(".index") || name.ends_with(".timeindex")) {
      fsys::remove(part + "/" + name);
      removed.push_back(name);
    }
  }
  ASSERT_FALSE(removed.empty());
  ManualClock clock(kNowMs);
  Loaded loaded = Load(log_dir, s, true, CheckpointedRecoveryPoint(log_dir), false, &clock, 1024);
  ASSERT_NE(loaded.log, nullptr);
  EXPECT_EQ(loaded.report.rebuilt_indexes.size(), removed.size());
  ASSERT_TRUE(loaded.log->Close().ok());
  for (const std::string& name : removed) {
    EXPECT_EQ(ReadFileToString(part + "/" + name), ReadFileToString(original + "/" + name)) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LogLoaderCompatTest,
                         ::testing::Values(Scenario{"multi-segment-idempotent", "fixture-idem"},
                                           Scenario{"transactional", "fixture-txn"},
                                           Scenario{"compressed", "fixture-compressed"},
                                           Scenario{"unclean-torn-tail", "fixture-crash"}),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace daruma
