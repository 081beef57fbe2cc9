// ServerConfig: Kafka property names resolved into LogConfig and the log
// manager's settings; overrides; strict values.
#include "recovery/server_config.h"

#include <gtest/gtest.h>

#include <limits>

#include "log/meta_properties.h"
#include "support/test_support.h"

namespace daruma {
namespace {

ServerConfig Resolve(const PropertyMap& props) {
  auto config = ServerConfig::FromProperties(props);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  return config.ok() ? *config : ServerConfig{};
}

std::string ErrorOf(const PropertyMap& props) {
  auto config = ServerConfig::FromProperties(props);
  EXPECT_FALSE(config.ok());
  if (config.ok()) return "";
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  return config.status().message();
}

TEST(ServerConfigTest, DefaultsAreKafkas) {
  const ServerConfig c = Resolve({});
  EXPECT_TRUE(c.log_dirs.empty());
  EXPECT_EQ(c.log.segment_bytes, 1073741824);
  EXPECT_EQ(c.log.index_interval_bytes, 4096);
  EXPECT_EQ(c.log.segment_index_bytes, 10485760);
  EXPECT_FALSE(c.log.preallocate);
  EXPECT_EQ(c.log.retention_ms, 604800000);
  EXPECT_EQ(c.log.flush_ms, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(c.num_recovery_threads_per_data_dir, 1);
  EXPECT_EQ(c.log_flush_offset_checkpoint_interval_ms, 60000);
  EXPECT_TRUE(c.other.empty());
}

TEST(ServerConfigTest, ReadsAServerPropertiesFile) {
  testing::TempDir dir;
  testing::WriteStringToFile(dir.Join("server.properties"),
                             "# broker 1\n"
                             "broker.id=1\n"
                             "log.dirs=/data/a, /data/b\n"
                             "log.segment.bytes = 16384\n"
                             "log.index.interval.bytes:1024\n"
                             "log.index.size.max.bytes=65536\n"
                             "log.preallocate=TRUE\n"
                             "num.recovery.threads.per.data.dir=4\n"
                             "message.max.bytes=2000000\n"
                             "producer.id.expiration.ms=3600000\n"
                             "log.cleanup.policy=compact,delete\n"
                             "log.message.timestamp.type=LogAppendTime\n");
  auto props = ReadPropertiesFile(dir.Join("server.properties"));
  ASSERT_TRUE(props.ok()) << props.status().ToString();
  const ServerConfig c = Resolve(*props);
  EXPECT_EQ(c.log_dirs, (std::vector<std::string>{"/data/a", "/data/b"}));
  EXPECT_EQ(c.log.segment_bytes, 16384);
  EXPECT_EQ(c.log.index_interval_bytes, 1024);
  EXPECT_EQ(c.log.segment_index_bytes, 65536);
  EXPECT_TRUE(c.log.preallocate);
  EXPECT_EQ(c.log.InitFileSize(), 16384);
  EXPECT_EQ(c.num_recovery_threads_per_data_dir, 4);
  EXPECT_EQ(c.log.max_message_bytes, 2000000);
  EXPECT_EQ(c.log.producer_id_expiration_ms, 3600000);
  EXPECT_TRUE(c.log.compact);
  EXPECT_TRUE(c.log.delete_policy);
  EXPECT_TRUE(c.log.log_append_time);
  EXPECT_EQ(c.other, (PropertyMap{{"broker.id", "1"}}));
}

TEST(ServerConfigTest, MissingFileIsNotFoundNamingIt) {
  auto props = ReadPropertiesFile("/nonexistent/server.properties");
  ASSERT_FALSE(props.ok());
  EXPECT_NE(props.status().message().find("/nonexistent/server.properties"), std::string::npos);
}

TEST(ServerConfigTest, LogDirsWinsOverLogDir) {
  EXPECT_EQ(Resolve({{"log.dir", "/x"}}).log_dirs, (std::vector<std::string>{"/x"}));
  EXPECT_EQ(Resolve({{"log.dir", "/x"}, {"log.dirs", "/y,/z"}}).log_dirs,
            (std::vector<std::string>{"/y", "/z"}));
}

TEST(ServerConfigTest, TimeSynonymsTakeTheFinestUnit) {
  EXPECT_EQ(Resolve({{"log.retention.hours", "2"}}).log.retention_ms, 7200000);
  EXPECT_EQ(
      Resolve({{"log.retention.hours", "2"}, {"log.retention.minutes", "3"}}).log.retention_ms,
      180000);
  EXPECT_EQ(Resolve({{"log.retention.minutes", "3"}, {"log.retention.ms", "5"}}).log.retention_ms,
            5);
  EXPECT_EQ(Resolve({{"log.retention.ms", "-1"}}).log.retention_ms, -1);
  EXPECT_EQ(Resolve({{"log.roll.hours", "1"}}).log.segment_ms, 3600000);
  EXPECT_EQ(Resolve({{"log.roll.jitter.ms", "7"}}).log.segment_jitter_ms, 7);
  EXPECT_EQ(Resolve({{"log.retention.bytes", "1000"}}).log.retention_bytes, 1000);
}

TEST(ServerConfigTest, FlushIntervalFallsBackToTheSchedulerInterval) {
  const ServerConfig c = Resolve({{"log.flush.scheduler.interval.ms", "500"}});
  EXPECT_EQ(c.log_flush_scheduler_interval_ms, 500);
  EXPECT_EQ(c.log.flush_ms, 500);
  EXPECT_EQ(Resolve({{"log.flush.scheduler.interval.ms", "500"}, {"log.flush.interval.ms", "9"}})
                .log.flush_ms,
            9);
  EXPECT_EQ(Resolve({{"log.flush.interval.messages", "10"}}).log.flush_messages, 10);
}

TEST(ServerConfigTest, BadValuesNameTheKeyAndTheValue) {
  EXPECT_EQ(ErrorOf({{"log.segment.bytes", "16k"}}),
            "invalid value \"16k\" for log.segment.bytes: expected an integer");
  EXPECT_EQ(ErrorOf({{"log.segment.bytes", "10"}}),
            "invalid value \"10\" for log.segment.bytes: expected a value in [14, 2147483647]");
  EXPECT_EQ(ErrorOf({{"log.segment.bytes", "4294967296"}}),
            "invalid value \"4294967296\" for log.segment.bytes: expected a value in [14, "
            "2147483647]");
  EXPECT_EQ(ErrorOf({{"log.preallocate", "yes"}}),
            "invalid value \"yes\" for log.preallocate: expected true or false");
  EXPECT_EQ(ErrorOf({{"num.recovery.threads.per.data.dir", "0"}}),
            "invalid value \"0\" for num.recovery.threads.per.data.dir: expected a value in [1, "
            "2147483647]");
  EXPECT_NE(ErrorOf({{"log.cleanup.policy", "forever"}}).find("log.cleanup.policy"),
            std::string::npos);
  EXPECT_NE(ErrorOf({{"log.message.timestamp.type", "Now"}}).find("log.message.timestamp.type"),
            std::string::npos);
  EXPECT_NE(ErrorOf({{"log.retention.hours", "-5"}}).find("log.retention.hours"),
            std::string::npos);
  EXPECT_NE(ErrorOf({{"log.dirs", " , "}}).find("log.dirs"), std::string::npos);
}

TEST(ServerConfigTest, OverridesReplaceFileValuesInOrder) {
  PropertyMap props = {{"log.segment.bytes", "16384"}};
  ASSERT_TRUE(ApplyPropertyOverride("log.segment.bytes=8192", &props).ok());
  ASSERT_TRUE(ApplyPropertyOverride(" custom.key = a=b", &props).ok());
  EXPECT_EQ(props.at("log.segment.bytes"), "8192");
  EXPECT_EQ(props.at("custom.key"), " a=b");
  const ServerConfig c = Resolve(props);
  EXPECT_EQ(c.log.segment_bytes, 8192);
  EXPECT_EQ(c.other.at("custom.key"), " a=b");  // unknown keys kept verbatim
}

TEST(ServerConfigTest, MalformedOverrideIsInvalidArgument) {
  PropertyMap props;
  Status st = ApplyPropertyOverride("log.segment.bytes", &props);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "expected key=value, found \"log.segment.bytes\"");
  EXPECT_FALSE(ApplyPropertyOverride("=5", &props).ok());
  EXPECT_TRUE(props.empty());
}

}  // namespace
}  // namespace daruma
