// Topic config overrides persisted in daruma-topic-configs.json at the root of
// every log dir: written on SetTopicConfig and on a topic's last AsyncDelete,
// read at Startup before the logs open.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "log/topic_config_overrides.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"
#include "recovery/topic_config_file.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

const Uuid kId = *Uuid::FromString("vDb5Vgm5RpaVW8EvFvzDfg");

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

class LogManagerTopicConfigsTest : public ::testing::Test {
 protected:
  void Start(std::vector<std::string> dirs = {}) {
    if (dirs.empty()) dirs = {a_.path()};
    manager_ = std::make_unique<LogManager>();
    ASSERT_TRUE(manager_->Startup(dirs, defaults_, 1).ok());
  }

  void Restart(std::vector<std::string> dirs = {}) {
    ASSERT_TRUE(manager_->Shutdown().ok());
    Start(std::move(dirs));
  }

  Log* Create(const TopicPartition& tp) {
    auto log = manager_->GetOrCreateLog(tp, kId, manager_->ConfigFor(tp.topic));
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    return log.ok() ? *log : nullptr;
  }

  void SetOverrides(const std::string& topic, const TopicConfigOverrides& overrides) {
    auto config = ApplyTopicConfigOverrides(defaults_, overrides);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    manager_->SetTopicConfig(topic, *config, overrides);
  }

  std::string Warnings(const std::string& dir) const {
    auto it = manager_->dir_warnings().find(dir);
    return it == manager_->dir_warnings().end() ? "" : Joined(it->second);
  }

  TempDir a_, b_;
  LogConfig defaults_;
  std::unique_ptr<LogManager> manager_;
};

TEST_F(LogManagerTopicConfigsTest, OverridesAreWrittenAndAppliedToLogsAfterARestart) {
  Start();
  Create({"orders", 0});
  Create({"orders", 1});
  SetOverrides("orders", {{"segment.bytes", "1024"},
                          {"cleanup.policy", "compact,delete"},
                          {"retention.ms", "5000"},
                          {"compression.type", "lz4"}});
  EXPECT_EQ(ReadFileToString(a_.Join(kTopicConfigsFileName)),
            "{\"generation\":1,\"topics\":{\"orders\":{\"cleanup.policy\":\"compact,delete\","
            "\"compression.type\":\"lz4\",\"retention.ms\":\"5000\",\"segment.bytes\":\"1024\"}},"
            "\"version\":1}\n");

  Restart();
  for (int p : {0, 1}) {
    Log* log = manager_->GetLog({"orders", p});
    ASSERT_NE(log, nullptr);
    const LogConfig c = log->config_snapshot();
    EXPECT_EQ(c.segment_bytes, 1024) << p;
    EXPECT_TRUE(c.compact);
    EXPECT_TRUE(c.delete_policy);
    EXPECT_EQ(c.retention_ms, 5000);
    EXPECT_EQ(c.max_message_bytes, defaults_.max_message_bytes);  // not overridden
  }
  EXPECT_EQ(manager_->ConfigFor("orders").segment_bytes, 1024);
  EXPECT_EQ(manager_->ConfigFor("payments").segment_bytes, defaults_.segment_bytes);
  // The client's text is kept as given (for DescribeConfigs).
  EXPECT_EQ(manager_->TopicOverridesOf("orders"),
            (TopicConfigOverrides{{"segment.bytes", "1024"},
                                  {"cleanup.policy", "compact,delete"},
                                  {"retention.ms", "5000"},
                                  {"compression.type", "lz4"}}));
  EXPECT_TRUE(Warnings(a_.path()).empty()) << Warnings(a_.path());
  // The overrides are used by the log: 1024-byte segments roll.
  Log* log = manager_->GetLog({"orders", 0});
  RecordInput r;
  r.timestamp = 1700000000000;
  r.value = std::string(400, 'v');
  for (int i = 0; i < 4; ++i) {
    auto batch = BuildRecordBatch({}, {r});
    ASSERT_TRUE(batch.ok());
    ASSERT_TRUE(log->AppendAsLeader(*batch, 0).ok());
  }
  EXPECT_EQ(log->segment_base_offsets().size(), 2u);
}

TEST_F(LogManagerTopicConfigsTest, ResolvedConfigIsPersistedAsItsDifferenceFromTheDefaults) {
  Start();
  Create({"orders", 0});
  LogConfig c = defaults_;
  c.retention_ms = 5;
  c.compact = true;
  c.delete_policy = false;
  c.log_append_time = true;
  manager_->SetTopicConfig("orders", c);
  EXPECT_EQ(manager_->TopicOverridesOf("orders"),
            (TopicConfigOverrides{{"cleanup.policy", "compact"},
                                  {"message.timestamp.type", "LogAppendTime"},
                                  {"retention.ms", "5"}}));
  Restart();
  const LogConfig after = manager_->GetLog({"orders", 0})->config_snapshot();
  EXPECT_EQ(after.retention_ms, 5);
  EXPECT_TRUE(after.compact);
  EXPECT_FALSE(after.delete_policy);
  EXPECT_TRUE(after.log_append_time);
}

TEST_F(LogManagerTopicConfigsTest, DeletingATopicsLastPartitionForgetsItsOverrides) {
  Start();
  Create({"orders", 0});
  Create({"orders", 1});
  Create({"payments", 0});
  SetOverrides("orders", {{"retention.ms", "7"}});
  SetOverrides("payments", {{"retention.ms", "9"}});

  ASSERT_TRUE(manager_->AsyncDelete({"orders", 0}).ok());
  EXPECT_EQ(manager_->TopicOverridesOf("orders"), (TopicConfigOverrides{{"retention.ms", "7"}}));
  ASSERT_TRUE(manager_->AsyncDelete({"orders", 1}).ok());
  EXPECT_TRUE(manager_->TopicOverridesOf("orders").empty());
  EXPECT_EQ(manager_->ConfigFor("orders").retention_ms, defaults_.retention_ms);
  EXPECT_EQ(
      ReadFileToString(a_.Join(kTopicConfigsFileName)),
      "{\"generation\":3,\"topics\":{\"payments\":{\"retention.ms\":\"9\"}},\"version\":1}\n");

  Restart();
  EXPECT_EQ(manager_->ConfigFor("orders").retention_ms, defaults_.retention_ms);
  EXPECT_EQ(manager_->ConfigFor("payments").retention_ms, 9);
  // A recreated topic starts from the defaults.
  EXPECT_EQ(Create({"orders", 0})->config_snapshot().retention_ms, defaults_.retention_ms);
}

TEST_F(LogManagerTopicConfigsTest, UnparsableFileIsAWarningNamingItAndTheDirLoadsWithDefaults) {
  Start();
  Create({"orders", 0});
  ASSERT_TRUE(manager_->Shutdown().ok());
  const std::string file = a_.Join(kTopicConfigsFileName);
  // 58 bytes, cut inside a key: the error is at the end of the file.
  WriteStringToFile(file, "{\"version\":1,\"generation\":2,\"topics\":{\"orders\":{\"retention");
  Start();
  ASSERT_NE(manager_->GetLog({"orders", 0}), nullptr);
  EXPECT_FALSE(manager_->HasFailures());
  EXPECT_EQ(manager_->GetLog({"orders", 0})->config_snapshot().retention_ms,
            defaults_.retention_ms);
  const std::string w = Warnings(a_.path());
  EXPECT_NE(w.find(file + ": not valid JSON at byte 58"), std::string::npos) << w;
  EXPECT_NE(w.find("topic overrides of this dir ignored"), std::string::npos) << w;
  EXPECT_NE(manager_->ReportJson().dump().find("not valid JSON"), std::string::npos);
}

TEST_F(LogManagerTopicConfigsTest, BadFieldsAreWarningsAndOnlyThoseFallBackToDefaults) {
  Start();
  Create({"orders", 0});
  Create({"payments", 0});
  ASSERT_TRUE(manager_->Shutdown().ok());
  const std::string file = a_.Join(kTopicConfigsFileName);
  WriteStringToFile(file,
                    "{\"version\":1,\"generation\":4,\"topics\":{"
                    "\"orders\":{\"segment.bytes\":\"abc\",\"retention.ms\":\"5\","
                    "\"flush.ms\":12,\"no.such\":\"1\"},\"payments\":[1]}}");
  Start();
  const LogConfig orders = manager_->GetLog({"orders", 0})->config_snapshot();
  EXPECT_EQ(orders.retention_ms, 5);
  EXPECT_EQ(orders.segment_bytes, defaults_.segment_bytes);
  EXPECT_EQ(orders.flush_ms, defaults_.flush_ms);
  EXPECT_EQ(manager_->TopicOverridesOf("orders"), (TopicConfigOverrides{{"retention.ms", "5"}}));
  EXPECT_TRUE(manager_->TopicOverridesOf("payments").empty());
  const std::string w = Warnings(a_.path());
  EXPECT_NE(w.find(file + ": field topics.orders.segment.bytes: invalid value \"abc\" for config "
                          "segment.bytes: expected an integer"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find(file + ": field topics.orders.flush.ms: expected a string, found number"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find(file + ": field topics.orders.no.such: unknown topic config no.such"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find(file + ": field topics.payments: expected an object, found array"),
            std::string::npos)
      << w;
  // The next change rewrites a clean file above the old generation.
  SetOverrides("payments", {{"retention.ms", "9"}});
  EXPECT_EQ(ReadFileToString(file),
            "{\"generation\":5,\"topics\":{\"orders\":{\"retention.ms\":\"5\"},"
            "\"payments\":{\"retention.ms\":\"9\"}},\"version\":1}\n");
}

// The topic intents ride in the same file: written with the overrides, read
// back at start-up, absent when empty; a malformed entry is a warning and
// only that entry is dropped.
TEST_F(LogManagerTopicConfigsTest, CreationsAndDeletionsAreKeptAcrossARestart) {
  Start();
  const Uuid gone = *Uuid::FromString("AAAAAAAAAAAAAAAAAAAAAQ");
  ASSERT_TRUE(manager_->BeginTopicCreation("new", {kId, 3}, defaults_, {}).ok());
  ASSERT_TRUE(manager_->RecordTopicDeletion("old", gone).ok());
  const std::string file = a_.Join(kTopicConfigsFileName);
  EXPECT_EQ(ReadFileToString(file),
            "{\"creating\":{\"new\":{\"id\":\"vDb5Vgm5RpaVW8EvFvzDfg\",\"partitions\":3}},"
            "\"deleted\":{\"AAAAAAAAAAAAAAAAAAAAAQ\":\"old\"},\"generation\":2,\"topics\":{},"
            "\"version\":1}\n");
  Restart();
  EXPECT_EQ(manager_->PendingTopicCreations(),
            (std::map<std::string, PendingTopicCreation>{{"new", {kId, 3}}}));
  EXPECT_TRUE(manager_->IsDeletedTopic(gone));
  EXPECT_FALSE(manager_->IsDeletedTopic(kId));
  manager_->EndTopicCreation("new");
  manager_->ForgetTopicDeletion(gone);  // no dir is offline
  EXPECT_EQ(ReadFileToString(file), "{\"generation\":4,\"topics\":{},\"version\":1}\n");

  ASSERT_TRUE(manager_->Shutdown().ok());
  WriteStringToFile(file,
                    "{\"version\":1,\"generation\":7,\"topics\":{},"
                    "\"creating\":{\"a\":{\"id\":\"vDb5Vgm5RpaVW8EvFvzDfg\",\"partitions\":0},"
                    "\"b\":{\"id\":\"vDb5Vgm5RpaVW8EvFvzDfg\",\"partitions\":2}},"
                    "\"deleted\":{\"not-an-id\":\"x\"}}");
  Start();
  EXPECT_EQ(manager_->PendingTopicCreations(),
            (std::map<std::string, PendingTopicCreation>{{"b", {kId, 2}}}));
  const std::string w = Warnings(a_.path());
  EXPECT_NE(w.find(file + ": field creating.a: expected"), std::string::npos) << w;
  EXPECT_NE(w.find(file + ": field deleted.not-an-id: expected a topic id"), std::string::npos)
      << w;
}

TEST_F(LogManagerTopicConfigsTest, WrongVersionNamesTheField) {
  Start();
  ASSERT_TRUE(manager_->Shutdown().ok());
  const std::string file = a_.Join(kTopicConfigsFileName);
  WriteStringToFile(file, "{\"version\":2,\"generation\":1,\"topics\":{}}");
  Start();
  const std::string w = Warnings(a_.path());
  EXPECT_NE(w.find("Corruption: " + file + ": field version: expected 1, found 2"),
            std::string::npos)
      << w;
}

TEST_F(LogManagerTopicConfigsTest, EveryDirGetsTheFileAndTheHighestGenerationWins) {
  Start({a_.path(), b_.path()});
  Create({"orders", 0});
  SetOverrides("orders", {{"retention.ms", "7"}});
  EXPECT_EQ(ReadFileToString(a_.Join(kTopicConfigsFileName)),
            ReadFileToString(b_.Join(kTopicConfigsFileName)));
  ASSERT_TRUE(manager_->Shutdown().ok());
  // As if a was offline during a later write: b is newer.
  WriteStringToFile(b_.Join(kTopicConfigsFileName),
                    "{\"version\":1,\"generation\":9,\"topics\":{\"orders\":{\"retention.ms\":"
                    "\"11\"}}}");
  Start({a_.path(), b_.path()});
  EXPECT_EQ(manager_->ConfigFor("orders").retention_ms, 11);
  SetOverrides("orders", {{"retention.ms", "12"}});
  EXPECT_NE(ReadFileToString(a_.Join(kTopicConfigsFileName)).find("\"generation\":10"),
            std::string::npos);
}

TEST_F(LogManagerTopicConfigsTest, NoFileIsWrittenWithoutOverrides) {
  Start();
  Create({"orders", 0});
  Restart();
  EXPECT_FALSE(FileSystem::Default()->Exists(a_.Join(kTopicConfigsFileName)));
  EXPECT_TRUE(manager_->TopicOverridesOf("orders").empty());
}

}  // namespace
}  // namespace daruma
