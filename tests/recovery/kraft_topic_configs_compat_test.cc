// The topic configs of real KRaft brokers' metadata logs (fixtures/kafka-real):
// every one replays whole, and the first `daruma serve` start on such a dir
// (LogManagerOptions::import_kafka_topic_configs) runs each topic with the
// configs Kafka had for it, once.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "log/topic_config_overrides.h"
#include "recovery/kraft_topic_configs.h"
#include "recovery/log_manager.h"
#include "recovery/topic_config_file.h"
#include "support/test_support.h"

namespace daruma::testing {
namespace {

namespace fs = std::filesystem;

std::string PatientAdmissions() {
  return FixturesDir() +
         "/kafka-real/ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data";
}

TEST(KraftTopicConfigsCompat, EveryRealMetadataLogReplaysWhole) {
  DARUMA_REQUIRE_FIXTURES();
  int found = 0;
  for (const auto& entry : fs::recursive_directory_iterator(FixturesDir() + "/kafka-real")) {
    if (!entry.is_directory() || entry.path().filename() != "__cluster_metadata-0") continue;
    ++found;
    Result<KraftTopicConfigs> image =
        ReadKraftTopicConfigs(FileSystem::Default(), entry.path().string());
    ASSERT_TRUE(image.ok()) << image.status().ToString();
    EXPECT_TRUE(image->complete) << entry.path();
    EXPECT_EQ(image->skipped_records, 0) << entry.path();
    EXPECT_GT(image->end_offset, 0) << entry.path();
    // Every KRaft broker has __consumer_offsets compacted in its metadata.
    if (image->topics.count("__consumer_offsets") > 0) {
      EXPECT_EQ(image->topics.at("__consumer_offsets").at("cleanup.policy"), "compact");
    }
  }
  EXPECT_GE(found, 5);
}

TEST(KraftTopicConfigsCompat, ASnapshotOnlyMetadataDirGivesTheCompactedAndKeptForeverTopics) {
  DARUMA_REQUIRE_FIXTURES();
  Result<KraftTopicConfigs> image =
      ReadKraftTopicConfigs(FileSystem::Default(), PatientAdmissions() + "/__cluster_metadata-0");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  // Its `.log` is not in the fixture: the newest snapshot is the image.
  EXPECT_NE(image->snapshot.find("00000000000000060500-0000000025.checkpoint"), std::string::npos)
      << image->snapshot;
  EXPECT_EQ(image->end_offset, 60500);
  for (const char* topic : {"_schemas", "docker-connect-configs", "docker-connect-offsets",
                            "docker-connect-status", "__consumer_offsets", "__transaction_state"}) {
    ASSERT_EQ(image->topics.count(topic), 1u) << topic;
    EXPECT_EQ(image->topics.at(topic).at("cleanup.policy"), "compact") << topic;
  }
  EXPECT_EQ(image->topics.at("_confluent-ksql-default__command_topic").at("retention.ms"), "-1");
  EXPECT_EQ(image->topics.count("patient_admissions"), 0u);  // no configs of its own
}

class KafkaConfigImportTest : public ::testing::Test {
 protected:
  void Start(bool import = true) {
    LogManagerOptions options;
    options.import_kafka_topic_configs = import;
    manager_ = std::make_unique<LogManager>(options);
    ASSERT_TRUE(manager_->Startup({dir_}, defaults_, 1).ok());
  }
  void Restart() {
    ASSERT_TRUE(manager_->Shutdown().ok());
    Start();
  }
  TempDir tmp_;
  std::string dir_ = tmp_.Join("kafka-data");
  LogConfig defaults_;
  std::unique_ptr<LogManager> manager_;
};

TEST_F(KafkaConfigImportTest, TheFirstStartTakesKafkasTopicConfigsAndLaterStartsKeepTheirs) {
  DARUMA_REQUIRE_FIXTURES();
  CopyTree(PatientAdmissions(), dir_);
  Start();
  EXPECT_EQ(manager_->TopicOverridesOf("_schemas"),
            (TopicConfigOverrides{{"cleanup.policy", "compact"}}));
  EXPECT_TRUE(manager_->ConfigFor("_schemas").compact);
  EXPECT_EQ(manager_->ConfigFor("_confluent-ksql-default__command_topic").retention_ms, -1);
  EXPECT_TRUE(manager_->TopicOverridesOf("patient_admissions").empty());
  std::optional<KafkaConfigImportReport> report = manager_->kafka_config_import();
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE(report->complete);
  EXPECT_TRUE(report->error.empty()) << report->error;
  EXPECT_TRUE(report->not_recorded.empty()) << report->not_recorded;
  EXPECT_EQ(report->imported.size(), 7u);
  EXPECT_TRUE(report->refused.empty());
  // The fixture's metadata dir lacks its `.log`: said, not hidden.
  ASSERT_EQ(report->notes.size(), 1u);
  EXPECT_NE(report->notes[0].find("no .log segment"), std::string::npos) << report->notes[0];

  // Recorded with the import's mark, so a change made since is kept: the
  // operator drops the policy of a connect topic, and a restart does not
  // bring it back.
  const nlohmann::json file =
      nlohmann::json::parse(ReadFileToString(JoinPath(dir_, kTopicConfigsFileName)));
  EXPECT_EQ(file["kafkaImport"]["endOffset"], 60500);
  EXPECT_EQ(file["topics"]["_schemas"]["cleanup.policy"], "compact");
  manager_->SetTopicConfig("docker-connect-status", defaults_, {});
  Restart();
  EXPECT_FALSE(manager_->ConfigFor("docker-connect-status").compact);
  EXPECT_FALSE(manager_->kafka_config_import().has_value());
  EXPECT_TRUE(manager_->ConfigFor("_schemas").compact);
}

// Dirs an older Daruma served (its file without the mark) are not imported
// into: their topics' configs have been Daruma's since.
TEST_F(KafkaConfigImportTest, DirsDarumaAlreadyServedAreNotImportedInto) {
  DARUMA_REQUIRE_FIXTURES();
  CopyTree(PatientAdmissions(), dir_);
  WriteStringToFile(JoinPath(dir_, kTopicConfigsFileName),
                    R"({"version": 1, "generation": 3, "topics": {}})");
  Start();
  EXPECT_FALSE(manager_->kafka_config_import().has_value());
  EXPECT_TRUE(manager_->TopicOverridesOf("_schemas").empty());
}

TEST_F(KafkaConfigImportTest, RecoverAndTheToolsLeaveTheMetadataAlone) {
  DARUMA_REQUIRE_FIXTURES();
  CopyTree(PatientAdmissions(), dir_);
  Start(/*import=*/false);
  EXPECT_TRUE(manager_->TopicOverridesOf("_schemas").empty());
  EXPECT_FALSE(manager_->kafka_config_import().has_value());
  EXPECT_FALSE(fs::exists(JoinPath(dir_, kTopicConfigsFileName)));
}

}  // namespace
}  // namespace daruma::testing
