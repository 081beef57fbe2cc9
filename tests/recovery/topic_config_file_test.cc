// daruma-topic-configs.json: the fields a reader must keep across a rewrite,
// here the mark of an import of a Kafka broker's topic configs and the topic
// ids it recorded.
#include "recovery/topic_config_file.h"

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace daruma::testing {
namespace {

TEST(TopicConfigFileTest, TheKafkaImportMarkIsKeptAndAMalformedOneStillCounts) {
  TempDir dir;
  TopicConfigs configs;
  configs.generation = 4;
  configs.topics["_schemas"] = {{"cleanup.policy", "compact"}};
  configs.kafka_import = KafkaConfigImportMark{"/data/__cluster_metadata-0", 60500};
  ASSERT_TRUE(WriteTopicConfigsFile(FileSystem::Default(), dir.path(), configs).ok());
  std::vector<std::string> warnings;
  auto read = ReadTopicConfigsFile(FileSystem::Default(), dir.path(), &warnings);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_TRUE(read->has_value());
  ASSERT_TRUE((*read)->kafka_import.has_value());
  EXPECT_EQ((*read)->kafka_import->metadata_log, "/data/__cluster_metadata-0");
  EXPECT_EQ((*read)->kafka_import->end_offset, 60500);
  EXPECT_TRUE(warnings.empty());

  // Whatever its shape, the field says an import happened.
  WriteStringToFile(dir.Join(kTopicConfigsFileName),
                    R"({"version": 1, "generation": 5, "topics": {}, "kafkaImport": 7})");
  read = ReadTopicConfigsFile(FileSystem::Default(), dir.path(), &warnings);
  ASSERT_TRUE(read.ok() && read->has_value());
  EXPECT_TRUE((*read)->kafka_import.has_value());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("field kafkaImport"), std::string::npos) << warnings[0];
}

TEST(TopicConfigFileTest, TheImportedTopicIdsAreKeptAndAMalformedOneIsDropped) {
  TempDir dir;
  TopicConfigs configs;
  configs.kafka_import = KafkaConfigImportMark{"/data/__cluster_metadata-0", 12};
  const Uuid orders = Uuid::Random();
  configs.kafka_import->topic_ids["orders"] = orders;
  ASSERT_TRUE(WriteTopicConfigsFile(FileSystem::Default(), dir.path(), configs).ok());
  std::vector<std::string> warnings;
  auto read = ReadTopicConfigsFile(FileSystem::Default(), dir.path(), &warnings);
  ASSERT_TRUE(read.ok() && read->has_value() && (*read)->kafka_import.has_value());
  EXPECT_EQ((*read)->kafka_import->topic_ids, (std::map<std::string, Uuid>{{"orders", orders}}));
  EXPECT_TRUE(warnings.empty());

  WriteStringToFile(dir.Join(kTopicConfigsFileName),
                    R"({"version": 1, "generation": 5, "topics": {}, "kafkaImport": )"
                    R"({"metadataLog": "/m", "endOffset": 3, "topicIds": )"
                    R"({"orders": ")" +
                        orders.ToString() + R"(", "bad": "not-an-id"}}})");
  read = ReadTopicConfigsFile(FileSystem::Default(), dir.path(), &warnings);
  ASSERT_TRUE(read.ok() && read->has_value() && (*read)->kafka_import.has_value());
  EXPECT_EQ((*read)->kafka_import->topic_ids, (std::map<std::string, Uuid>{{"orders", orders}}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("field kafkaImport.topicIds.bad"), std::string::npos) << warnings[0];
}

}  // namespace
}  // namespace daruma::testing
