// The Kafka-written fixtures (fixtures/kafka-generated) as the tools' compat
// and crash tests compare them: each scenario, what a load of a partition
// dir leaves visible (View), Kafka's own view from expected-load.txt, and a
// load of a dir as a broker would load it. Shared by repair_compat_test.cc,
// recover_kafka_compat_test.cc and recover_crash_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "log/clean_shutdown_file.h"
#include "log/log.h"
#include "recovery/log_loader.h"
#include "support/test_support.h"

namespace daruma::tools::testlog {

// Kafka ran the fixture loads with the real clock (2024), a day after the
// fixture timestamps (2023).
inline constexpr int64_t kFixtureNowMs = 1733000000000;
// Kafka's writer settings for every scenario: rebuilt indexes equal Kafka's
// byte for byte only with these.
inline const std::vector<std::string> kFixtureSettings = {"log.index.interval.bytes=1024",
                                                          "log.index.size.max.bytes=65536"};

struct Scenario {
  std::string name;
  std::string topic;
};

// The CTest name shows the parameter: the scenario, not the struct's bytes.
inline void PrintTo(const Scenario& s, std::ostream* os) {
  *os << s.name;
}

inline const Scenario kIdem{"multi-segment-idempotent", "fixture-idem"};
inline const Scenario kTxn{"transactional", "fixture-txn"};
inline const Scenario kCompressed{"compressed", "fixture-compressed"};
inline const Scenario kTorn{"unclean-torn-tail", "fixture-crash"};

inline std::string ScenarioDir(const Scenario& s) {
  return daruma::testing::FixturesDir() + "/kafka-generated/" + s.name;
}

// For INSTANTIATE_TEST_SUITE_P names.
inline std::string ScenarioTestName(const Scenario& s) {
  std::string n = s.name;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

// What a load leaves visible: the fields expected-load.txt prints, except
// the recovery point (recovery and repair move it to the LEO) and the
// producer count (clock-dependent, see the fixtures' README).
struct View {
  std::map<std::string, std::string> fields;
  std::vector<std::string> leader_epochs;
  std::vector<std::string> aborted;
  bool operator==(const View&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const View& v) {
  for (const auto& [k, val] : v.fields) os << k << "=" << val << " ";
  os << "epochs";
  for (const auto& e : v.leader_epochs) os << " " << e;
  os << " aborted " << v.aborted.size();
  return os;
}

// The first block of expected-load.txt ("as a broker would").
inline View KafkaView(const Scenario& s) {
  std::istringstream in(daruma::testing::ReadFileToString(ScenarioDir(s) + "/expected-load.txt"));
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

inline View ViewOf(const Log& log) {
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

// The offset of the one entry of a Kafka offset checkpoint file.
inline int64_t CheckpointedOffset(FileSystem* fs, const std::string& path) {
  auto bytes = fs->ReadFile(path);
  EXPECT_TRUE(bytes.ok()) << path;
  if (!bytes.ok()) return 0;
  std::istringstream in(std::string(bytes->begin(), bytes->end()));
  std::string line, topic;
  std::getline(in, line);
  std::getline(in, line);
  int partition = 0;
  int64_t offset = 0;
  in >> topic >> partition >> offset;
  return offset;
}

// LoadLog's parameters for partition 0 of `s` in `log_dir` with the
// fixtures' settings: as a broker would (marker, recovery-point checkpoint),
// or (`from_zero`) as after an unclean shutdown from offset 0.
inline LoadLogParams FixtureLoadParams(FileSystem* fs, const std::string& log_dir,
                                       const Scenario& s, bool from_zero, Clock* clock) {
  LoadLogParams p;
  p.fs = fs;
  p.log_dir = log_dir;
  p.tp = TopicPartition{s.topic, 0};
  p.partition_dir = log_dir + "/" + p.tp.ToString();
  p.config.segment_index_bytes = 65536;
  p.config.index_interval_bytes = 1024;
  p.clock = clock;
  p.had_clean_shutdown = !from_zero && fs->Exists(log_dir + "/.kafka_cleanshutdown");
  p.recovery_point_checkpoint =
      from_zero ? 0 : CheckpointedOffset(fs, log_dir + "/recovery-point-offset-checkpoint");
  p.quarantine = true;
  return p;
}

// Loads `log_dir` with FixtureLoadParams and expects the load to repair
// nothing (whatever wrote the dir left nothing to recover).
inline View Load(const std::string& log_dir, const Scenario& s, bool from_zero,
                 FileSystem* fs = FileSystem::Default()) {
  ManualClock clock(kFixtureNowMs);
  const LoadLogParams p = FixtureLoadParams(fs, log_dir, s, from_zero, &clock);
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

// Daruma's recovery of every segment of a copy of `log_dir` (the copy is
// changed; `log_dir` is not): the reference where Kafka's view is not known.
inline View FullRecoveryView(const std::string& log_dir, const Scenario& s,
                             PartitionRecoveryReport* report) {
  daruma::testing::TempDir tmp;
  const std::string copy = tmp.Join("logdir");
  daruma::testing::CopyTree(log_dir, copy);
  ManualClock clock(kFixtureNowMs);
  const LoadLogParams p = FixtureLoadParams(FileSystem::Default(), copy, s, true, &clock);
  auto log = LoadLog(p, report);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  if (!log.ok()) return {};
  View v = ViewOf(**log);
  EXPECT_TRUE((*log)->Close().ok());
  return v;
}

// A bit flip in the middle of the middle segment of `partition_dir`: below
// the recovery point of a clean shutdown, where Kafka's clean start never
// reads.
inline void FlipMiddleSegment(const std::string& partition_dir) {
  std::vector<std::string> logs;
  for (const auto& e : std::filesystem::directory_iterator(partition_dir)) {
    if (e.path().string().ends_with(".log")) logs.push_back(e.path());
  }
  std::sort(logs.begin(), logs.end());
  const std::string victim = logs[logs.size() / 2];
  std::string data = daruma::testing::ReadFileToString(victim);
  data[data.size() / 2] ^= 0x20;
  daruma::testing::WriteStringToFile(victim, data);
}

}  // namespace daruma::tools::testlog
