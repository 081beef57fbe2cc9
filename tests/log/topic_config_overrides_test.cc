// Topic config names <-> LogConfig (log/topic_config_overrides.h).
#include "log/topic_config_overrides.h"

#include <gtest/gtest.h>

namespace daruma {
namespace {

TEST(TopicConfigOverridesTest, AppliesKafkaNamesOntoTheDefaults) {
  LogConfig defaults;
  auto c = ApplyTopicConfigOverrides(defaults, {{"segment.bytes", "2048"},
                                                {"cleanup.policy", "delete, compact"},
                                                {"min.cleanable.dirty.ratio", "0.25"},
                                                {"retention.bytes", "-1"},
                                                {"preallocate", "true"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->segment_bytes, 2048);
  EXPECT_TRUE(c->compact);
  EXPECT_TRUE(c->delete_policy);
  EXPECT_DOUBLE_EQ(c->min_cleanable_dirty_ratio, 0.25);
  EXPECT_EQ(c->retention_bytes, -1);
  EXPECT_TRUE(c->preallocate);
  EXPECT_EQ(c->retention_ms, defaults.retention_ms);
}

TEST(TopicConfigOverridesTest, BadValuesNameTheConfigAndTheValueAndChangeNothing) {
  LogConfig c;
  Status st = ApplyTopicConfigOverride("segment.bytes", "13", &c);
  EXPECT_EQ(st.message(), "invalid value \"13\" for config segment.bytes: expected at least 14");
  EXPECT_EQ(c.segment_bytes, LogConfig{}.segment_bytes);
  EXPECT_EQ(ApplyTopicConfigOverride("retention.ms", "12x", &c).message(),
            "invalid value \"12x\" for config retention.ms: expected an integer");
  EXPECT_EQ(ApplyTopicConfigOverride("cleanup.policy", "compact,nope", &c).message(),
            "invalid value \"compact,nope\" for config cleanup.policy: expected a list of "
            "delete, compact");
  EXPECT_FALSE(c.compact);
  EXPECT_EQ(ApplyTopicConfigOverride("min.insync.replicas", "2", &c).message(),
            "invalid value \"2\" for config min.insync.replicas: a single node has one in-sync "
            "replica");
  EXPECT_EQ(ApplyTopicConfigOverride("bogus", "1", &c).message(), "unknown topic config bogus");
  EXPECT_FALSE(IsKnownTopicConfigName("bogus"));
  EXPECT_TRUE(IsKnownTopicConfigName("segment.jitter.ms"));
}

// Kafka's LIST type and LogConfig.validateValues: an empty cleanup.policy
// is an empty list (neither deletion nor compaction); a minimum compaction
// lag above the maximum is refused, whichever of the two comes from the
// defaults.
TEST(TopicConfigOverridesTest, EmptyCleanupPolicyAndCompactionLagsInConflict) {
  LogConfig c;
  ASSERT_TRUE(ApplyTopicConfigOverride("cleanup.policy", " ", &c).ok());
  EXPECT_FALSE(c.compact);
  EXPECT_FALSE(c.delete_policy);
  EXPECT_EQ(DiffTopicConfig(LogConfig{}, c), (TopicConfigOverrides{{"cleanup.policy", ""}}));
  EXPECT_FALSE(ApplyTopicConfigOverride("cleanup.policy", "compact,", &c).ok());

  Result<LogConfig> conflict = ApplyTopicConfigOverrides(
      LogConfig{}, {{"min.compaction.lag.ms", "10000"}, {"max.compaction.lag.ms", "5000"}});
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.status().message(),
            "conflict topic config setting min.compaction.lag.ms (10000) > max.compaction.lag.ms "
            "(5000)");
  LogConfig defaults;
  defaults.min_compaction_lag_ms = 10000;
  EXPECT_FALSE(ApplyTopicConfigOverrides(defaults, {{"max.compaction.lag.ms", "5000"}}).ok());
  EXPECT_TRUE(ApplyTopicConfigOverrides(defaults, {{"max.compaction.lag.ms", "10000"}}).ok());
}

// Every topic config of Kafka 3.x is known, so tools that set them work:
// those that mean nothing here (one node, no tiered storage, no
// down-conversion) are validated as Kafka validates them and described back.
TEST(TopicConfigOverridesTest, KafkasOtherTopicConfigsAreAcceptedAndValidated) {
  auto c =
      ApplyTopicConfigOverrides(LogConfig{}, {{"unclean.leader.election.enable", "false"},
                                              {"message.downconversion.enable", "false"},
                                              {"message.format.version", "2.8-IV1"},
                                              {"leader.replication.throttled.replicas", "0:1, 1:1"},
                                              {"follower.replication.throttled.replicas", "*"},
                                              {"local.retention.ms", "-2"},
                                              {"local.retention.bytes", "1000"},
                                              {"remote.storage.enable", "false"},
                                              {"message.timestamp.before.max.ms", "3600000"},
                                              {"message.timestamp.difference.max.ms", "60000"},
                                              {"compression.type", "zstd"},
                                              {"compression.zstd.level", "-5"},
                                              {"compression.gzip.level", "-1"},
                                              {"compression.lz4.level", "17"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->message_downconversion_enable);
  EXPECT_EQ(c->message_format_version, "2.8-IV1");
  EXPECT_EQ(c->leader_replication_throttled_replicas, "0:1, 1:1");
  EXPECT_EQ(c->local_retention_bytes, 1000);
  EXPECT_EQ(c->compression_type, CompressionType::kZstd);
  EXPECT_EQ(c->compression_zstd_level, -5);
  EXPECT_EQ(c->compression_lz4_level, 17);
  // The newer bound wins where set; the older name bounds the other side.
  EXPECT_EQ(c->TimestampBeforeMaxMs(), 3600000);
  EXPECT_EQ(c->TimestampAfterMaxMs(), 60000);
  for (const auto& [name, value] : RenderTopicConfigs(*c)) {
    if (name == "compression.type") {
      EXPECT_EQ(value, "zstd");
    }
    if (name == "message.format.version") {
      EXPECT_EQ(value, "2.8-IV1");
    }
  }
  LogConfig d;
  EXPECT_EQ(ApplyTopicConfigOverride("remote.storage.enable", "true", &d).message(),
            "invalid value \"true\" for config remote.storage.enable: Tiered Storage "
            "functionality is disabled in the broker. Topic cannot be configured with remote log "
            "storage.");
  EXPECT_FALSE(ApplyTopicConfigOverride("message.format.version", "three", &d).ok());
  EXPECT_FALSE(ApplyTopicConfigOverride("leader.replication.throttled.replicas", "0-1", &d).ok());
  EXPECT_FALSE(ApplyTopicConfigOverride("compression.gzip.level", "10", &d).ok());
  EXPECT_FALSE(ApplyTopicConfigOverride("unclean.leader.election.enable", "yes", &d).ok());
  EXPECT_FALSE(ApplyTopicConfigOverride("local.retention.ms", "-3", &d).ok());
  ASSERT_TRUE(ApplyTopicConfigOverride("compression.type", "uncompressed", &d).ok());
  EXPECT_EQ(d.compression_type, CompressionType::kNone);
  ASSERT_TRUE(ApplyTopicConfigOverride("compression.type", "producer", &d).ok());
  EXPECT_EQ(d.compression_type, std::nullopt);
}

TEST(TopicConfigOverridesTest, DiffRoundTripsEveryCoveredField) {
  LogConfig defaults;
  LogConfig c = defaults;
  c.segment_bytes = 999;
  c.segment_ms = 5;
  c.segment_jitter_ms = 6;
  c.segment_index_bytes = 4096;
  c.index_interval_bytes = 1;
  c.preallocate = true;
  c.max_message_bytes = 77;
  c.file_delete_delay_ms = 0;
  c.retention_ms = -1;
  c.retention_bytes = 123;
  c.flush_messages = 3;
  c.flush_ms = 4;
  c.compact = true;
  c.delete_policy = true;
  c.log_append_time = true;
  c.delete_retention_ms = 8;
  c.min_cleanable_dirty_ratio = 0.1;
  c.min_compaction_lag_ms = 9;
  c.max_compaction_lag_ms = 10;
  const TopicConfigOverrides diff = DiffTopicConfig(defaults, c);
  // All but min.insync.replicas and the configs of the test above.
  EXPECT_EQ(diff.size(), 18u);
  EXPECT_EQ(diff.at("cleanup.policy"), "compact,delete");
  EXPECT_EQ(diff.at("min.cleanable.dirty.ratio"), "0.1");
  auto back = ApplyTopicConfigOverrides(defaults, diff);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(DiffTopicConfig(c, *back), TopicConfigOverrides{});
  EXPECT_DOUBLE_EQ(back->min_cleanable_dirty_ratio, 0.1);
  EXPECT_EQ(back->segment_jitter_ms, 6);
  EXPECT_TRUE(DiffTopicConfig(defaults, defaults).empty());
}

}  // namespace
}  // namespace daruma
