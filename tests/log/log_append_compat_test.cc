// Leader appends reproduce Kafka's files byte for byte (shared fixtures,
// kafka-generated): every batch of a scenario is re-appended, one batch per
// append, into an empty Daruma log with the scenario's LogConfig. After a
// clean Close() the partition directory must hold exactly Kafka's files with
// Kafka's bytes: segments, indexes, transaction indexes, producer snapshots
// and leader-epoch-checkpoint. The crashed scenario is compared without a
// close: rolled segments fully, the active segment up to the torn batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <set>

#include "common/clock.h"
#include "common/file_system.h"
#include "log/log.h"
#include "support/batches_csv.h"
#include "support/test_support.h"

namespace daruma {
namespace {

namespace fs = std::filesystem;
using testing::FixturesDir;
using testing::ReadFileToString;
using testing::TempDir;

constexpr int64_t kAppendFixtureTime = 1700000000000;

struct AppendScenario {
  std::string name;
  std::string topic;
  int32_t segment_bytes;
  // Kafka's `preallocate`: appends go through the mapped append window, and
  // the closed files must still be Kafka's bytes exactly.
  bool preallocate = false;
};

// The CTest name shows the parameter: the scenario, not the struct's bytes.
void PrintTo(const AppendScenario& s, std::ostream* os) {
  *os << s.name << (s.preallocate ? " preallocate" : "");
}

using AppendCsvBatch = testing::BatchesCsvRow;
using testing::ReadBatchesCsv;

LogConfig ScenarioConfig(const AppendScenario& s) {
  LogConfig config;
  config.segment_bytes = s.segment_bytes;
  config.segment_index_bytes = 65536;
  config.index_interval_bytes = 1024;
  config.preallocate = s.preallocate;
  return config;
}

std::set<std::string> ListFiles(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

std::string SegmentName(int64_t base, const std::string& ext) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%020lld", static_cast<long long>(base));
  return std::string(buf) + ext;
}

// The batches of every segment, re-appended one per AppendAsLeader call.
// Returns the log (still open) in `out_dir`.
std::unique_ptr<Log> ReplayScenario(const AppendScenario& s,
                                    const std::vector<AppendCsvBatch>& batches,
                                    const std::string& kafka_dir, const std::string& out_dir,
                                    Clock* clock) {
  auto log = Log::CreateEmpty(FileSystem::Default(), out_dir, TopicPartition{s.topic, 0},
                              ScenarioConfig(s), clock);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  if (!log.ok()) return nullptr;
  std::map<int64_t, std::string> segment_bytes;
  for (const AppendCsvBatch& b : batches) {
    auto [it, inserted] = segment_bytes.try_emplace(b.segment_base);
    if (inserted)
      it->second = ReadFileToString(kafka_dir + "/" + SegmentName(b.segment_base, ".log"));
    const std::string& file = it->second;
    if (b.position + b.size > int64_t(file.size())) continue;  // the torn batch
    ByteSpan bytes(reinterpret_cast<const uint8_t*>(file.data()) + b.position, size_t(b.size));
    auto info = (*log)->AppendAsLeader(
        bytes, b.leader_epoch, b.is_control ? AppendOrigin::kCoordinator : AppendOrigin::kClient);
    EXPECT_TRUE(info.ok()) << "batch at offset " << b.base_offset << ": "
                           << info.status().ToString();
    if (!info.ok()) return nullptr;
    EXPECT_EQ(info->first_offset, b.base_offset);
    EXPECT_FALSE(info->duplicate) << "offset " << b.base_offset;
  }
  return std::move(*log);
}

std::string BigEndian32(int32_t v) {
  const uint32_t u = uint32_t(v);
  return std::string{char(u >> 24), char(u >> 16), char(u >> 8), char(u)};
}

void ExpectSameBytes(const std::string& kafka_path, const std::string& ours_path) {
  const std::string kafka = ReadFileToString(kafka_path);
  const std::string ours = ReadFileToString(ours_path);
  EXPECT_EQ(ours.size(), kafka.size()) << ours_path;
  if (ours == kafka) return;
  size_t i = 0;
  while (i < std::min(ours.size(), kafka.size()) && ours[i] == kafka[i]) ++i;
  ADD_FAILURE() << ours_path << ": differs from Kafka's " << kafka_path << " at byte " << i;
}

class LogAppendCompatTest : public ::testing::TestWithParam<AppendScenario> {};

TEST_P(LogAppendCompatTest, CleanShutdownReproducesKafkaFiles) {
  DARUMA_REQUIRE_FIXTURES();
  const AppendScenario& s = GetParam();
  const std::string root = FixturesDir() + "/kafka-generated/" + s.name;
  const std::string kafka_dir = root + "/logdir/" + s.topic + "-0";
  const auto batches = ReadBatchesCsv(root + "/batches.csv");
  ASSERT_FALSE(batches.empty());
  TempDir tmp;
  const std::string dir = tmp.Join(s.topic + "-0");
  ManualClock clock(kAppendFixtureTime);
  auto log = ReplayScenario(s, batches, kafka_dir, dir, &clock);
  ASSERT_NE(log, nullptr);

  std::vector<int64_t> kafka_bases;
  for (const AppendCsvBatch& b : batches) {
    if (kafka_bases.empty() || kafka_bases.back() != b.segment_base)
      kafka_bases.push_back(b.segment_base);
  }
  EXPECT_EQ(log->segment_base_offsets(), kafka_bases);
  ASSERT_TRUE(log->Close().ok());
  EXPECT_EQ(log->recovery_point(), log->log_end_offset());

  std::set<std::string> kafka_files = ListFiles(kafka_dir);
  kafka_files.erase("partition.metadata");  // written by the partition layer, not the log
  EXPECT_EQ(ListFiles(dir), kafka_files);
  for (const std::string& name : kafka_files) {
    if (fs::exists(dir + "/" + name)) ExpectSameBytes(kafka_dir + "/" + name, dir + "/" + name);
  }
}

// unclean-torn-tail: the "broker" crashed with the active segment open.
TEST(LogAppendCompatTest, CrashedLogMatchesKafkaUpToTheTornBatch) {
  DARUMA_REQUIRE_FIXTURES();
  const AppendScenario s{"unclean-torn-tail", "fixture-crash", 16384};
  const std::string root = FixturesDir() + "/kafka-generated/" + s.name;
  const std::string kafka_dir = root + "/logdir/" + s.topic + "-0";
  const auto batches = ReadBatchesCsv(root + "/batches.csv");
  ASSERT_FALSE(batches.empty());
  const AppendCsvBatch torn = batches.back();
  TempDir tmp;
  const std::string dir = tmp.Join(s.topic + "-0");
  ManualClock clock(kAppendFixtureTime);
  auto log = ReplayScenario(s, batches, kafka_dir, dir, &clock);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->log_end_offset(), torn.base_offset);
  const int64_t active = log->active_segment_base();
  EXPECT_EQ(active, torn.segment_base);

  // Every file of a rolled segment, every snapshot and the epoch checkpoint.
  std::set<std::string> kafka_files = ListFiles(kafka_dir);
  kafka_files.erase("partition.metadata");
  EXPECT_EQ(ListFiles(dir), kafka_files);
  const std::string active_prefix = SegmentName(active, "");
  for (const std::string& name : kafka_files) {
    const bool is_active =
        name.rfind(active_prefix, 0) == 0 && name.find(".snapshot") == std::string::npos;
    if (!is_active) ExpectSameBytes(kafka_dir + "/" + name, dir + "/" + name);
  }

  // The active segment: the .log up to the torn batch, and the preallocated
  // indexes with the same size and bytes. Kafka had appended the torn batch
  // whole before the crash cut the file, and indexed it: that one entry (and
  // only that one) is not ours, so it is zeroed in the expected bytes.
  const std::string kafka_log = ReadFileToString(kafka_dir + "/" + SegmentName(active, ".log"));
  const std::string our_log = ReadFileToString(dir + "/" + SegmentName(active, ".log"));
  EXPECT_EQ(int64_t(our_log.size()), torn.position);
  EXPECT_EQ(our_log, kafka_log.substr(0, size_t(torn.position)));

  std::string kafka_index = ReadFileToString(kafka_dir + "/" + SegmentName(active, ".index"));
  const std::string torn_index_entry =
      BigEndian32(int32_t(torn.last_offset - active)) + BigEndian32(int32_t(torn.position));
  const size_t index_slot = kafka_index.find(torn_index_entry);
  ASSERT_NE(index_slot, std::string::npos) << "Kafka indexed the torn append";
  ASSERT_EQ(index_slot % 8, 0u);
  kafka_index.replace(index_slot, 8, std::string(8, '\0'));
  EXPECT_EQ(ReadFileToString(dir + "/" + SegmentName(active, ".index")), kafka_index);

  std::string kafka_time = ReadFileToString(kafka_dir + "/" + SegmentName(active, ".timeindex"));
  size_t time_slot = std::string::npos;
  for (size_t pos = 0; pos + 12 <= kafka_time.size(); pos += 12) {
    if (kafka_time.compare(pos + 8, 4, BigEndian32(int32_t(torn.last_offset - active))) == 0) {
      time_slot = pos;
    }
  }
  ASSERT_NE(time_slot, std::string::npos) << "Kafka time-indexed the torn append";
  kafka_time.replace(time_slot, 12, std::string(12, '\0'));
  EXPECT_EQ(ReadFileToString(dir + "/" + SegmentName(active, ".timeindex")), kafka_time);
  EXPECT_EQ(fs::file_size(dir + "/" + SegmentName(active, ".index")), 65536u);
  EXPECT_EQ(fs::file_size(dir + "/" + SegmentName(active, ".timeindex")), 65532u);
}

INSTANTIATE_TEST_SUITE_P(
    KafkaGenerated, LogAppendCompatTest,
    ::testing::Values(AppendScenario{"multi-segment-idempotent", "fixture-idem", 16384},
                      AppendScenario{"transactional", "fixture-txn", 8192},
                      AppendScenario{"compressed", "fixture-compressed", 16384},
                      AppendScenario{"multi-segment-idempotent", "fixture-idem", 16384, true},
                      AppendScenario{"transactional", "fixture-txn", 8192, true},
                      AppendScenario{"compressed", "fixture-compressed", 16384, true}),
    [](const ::testing::TestParamInfo<AppendScenario>& info) {
      std::string name = info.param.name;
      std::replace(name.begin(), name.end(), '-', '_');
      return info.param.preallocate ? name + "_preallocate" : name;
    });

}  // namespace
}  // namespace daruma
