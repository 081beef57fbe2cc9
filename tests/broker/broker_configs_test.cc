// broker_configs: the table DescribeConfigs lists for the broker, its
// defaults against the ones Daruma applies, and the topic configs' synonyms.
#include "broker/broker_configs.h"

#include <gtest/gtest.h>

#include <map>

#include "broker/topic_config.h"
#include "recovery/config_keys.h"
#include "recovery/server_config.h"

namespace daruma::broker {
namespace {

TEST(BrokerConfigsTest, EveryListedDefaultIsFoundByName) {
  const std::vector<DescribedBrokerConfig> all = DescribeBrokerConfigs({});
  ASSERT_GT(all.size(), 100u);
  for (size_t i = 0; i < all.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(all[i - 1].name, all[i].name);
    }
    EXPECT_EQ(all[i].source, ConfigSource::kDefaultConfig) << all[i].name;
    // The lookup the synonyms use finds each entry (the table is sorted).
    std::optional<std::string_view> found = BrokerConfigDefault(all[i].name);
    ASSERT_EQ(found.has_value(), all[i].value.has_value()) << all[i].name;
    if (found) {
      EXPECT_EQ(std::string(*found), *all[i].value);
    }
  }
  EXPECT_EQ(BrokerConfigDefault("no.such.config"), std::nullopt);
}

// Setting a key to the default the table lists changes nothing in what
// Daruma applies: the table describes Daruma's behaviour, not only Kafka's.
TEST(BrokerConfigsTest, TheListedDefaultsAreTheOnesDarumaApplies) {
  Result<ServerConfig> plain = ServerConfig::FromProperties({});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  const std::vector<TopicConfigEntry> expected = DescribeTopicConfigs(plain->log, {});
  int checked = 0;
  for (const DescribedBrokerConfig& c : DescribeBrokerConfigs({})) {
    if (!c.value || !IsDarumaConfigKey(c.name) || c.name == "listeners" || c.name == "log.dir") {
      continue;
    }
    Result<ServerConfig> set = ServerConfig::FromProperties({{c.name, *c.value}});
    ASSERT_TRUE(set.ok()) << c.name << "=" << *c.value << ": " << set.status().ToString();
    std::vector<TopicConfigEntry> got = DescribeTopicConfigs(set->log, {});
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].value, expected[i].value) << c.name << " -> " << got[i].name;
    }
    EXPECT_EQ(set->num_recovery_threads_per_data_dir, plain->num_recovery_threads_per_data_dir);
    EXPECT_EQ(set->log_retention_check_interval_ms, plain->log_retention_check_interval_ms);
    EXPECT_EQ(set->replica_high_watermark_checkpoint_interval_ms,
              plain->replica_high_watermark_checkpoint_interval_ms);
    ++checked;
  }
  EXPECT_GT(checked, 40);
}

TEST(BrokerConfigsTest, GivenKeysAreStaticAndSecretsAreHidden) {
  const PropertyMap given = {
      {"log.segment.bytes", "1048576"},        {"sasl.jaas.config", "org.example.Login required;"},
      {"daruma.max.open.files", "4096"},       {"rsm.config.storage.account.key", "abc"},
      {"password.encoder.iterations", "4096"}, {"not.a.kafka.key", "x"}};
  std::map<std::string, DescribedBrokerConfig> by_name;
  for (DescribedBrokerConfig& c : DescribeBrokerConfigs(given)) by_name[c.name] = c;
  EXPECT_EQ(by_name.at("log.segment.bytes").value, "1048576");
  EXPECT_EQ(by_name.at("log.segment.bytes").source, ConfigSource::kStaticBrokerConfig);
  EXPECT_EQ(by_name.at("sasl.jaas.config").value, std::nullopt);
  EXPECT_TRUE(by_name.at("sasl.jaas.config").sensitive);
  EXPECT_EQ(by_name.at("sasl.jaas.config").type, ConfigType::kPassword);
  EXPECT_EQ(by_name.at("daruma.max.open.files").value, "4096");
  // A plug-in's setting has no known type: sensitive, as Kafka treats it.
  EXPECT_EQ(by_name.at("rsm.config.storage.account.key").value, std::nullopt);
  EXPECT_TRUE(by_name.at("rsm.config.storage.account.key").sensitive);
  EXPECT_EQ(by_name.at("password.encoder.iterations").value, "4096");
  // An unknown key was already warned about at start; it is not a config.
  EXPECT_EQ(by_name.count("not.a.kafka.key"), 0u);
}

TEST(BrokerConfigsTest, SynonymsListTheTopicThenTheSetBrokerKeysThenTheDefault) {
  using Synonym = DescribeConfigsResponse::Synonym;
  auto synonym = [](std::string name, std::string value, ConfigSource source) {
    return Synonym{.name = std::move(name), .value = std::move(value), .source = int8_t(source)};
  };
  const PropertyMap given = {{"log.retention.minutes", "30"}, {"log.retention.hours", "2"}};
  EXPECT_EQ(TopicConfigSynonyms("retention.ms", "5", ConfigSource::kTopicConfig, given),
            (std::vector<Synonym>{
                synonym("retention.ms", "5", ConfigSource::kTopicConfig),
                synonym("log.retention.minutes", "30", ConfigSource::kStaticBrokerConfig),
                synonym("log.retention.hours", "2", ConfigSource::kStaticBrokerConfig),
                synonym("log.retention.hours", "168", ConfigSource::kDefaultConfig)}));
  EXPECT_TRUE(BrokerSetsSynonymOf("retention.ms", given));
  EXPECT_FALSE(BrokerSetsSynonymOf("segment.ms", given));
  EXPECT_EQ(
      TopicConfigSynonyms("flush.ms", "9223372036854775807", ConfigSource::kDefaultConfig, {}),
      (std::vector<Synonym>{synonym("log.flush.scheduler.interval.ms", "9223372036854775807",
                                    ConfigSource::kDefaultConfig)}));
  // No broker synonym: the config's own entry.
  EXPECT_EQ(TopicConfigSynonyms("remote.storage.enable", "false", ConfigSource::kDefaultConfig, {}),
            (std::vector<Synonym>{
                synonym("remote.storage.enable", "false", ConfigSource::kDefaultConfig)}));
}

}  // namespace
}  // namespace daruma::broker
