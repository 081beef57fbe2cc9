// ServerConfig: Kafka property names resolved into LogConfig and the log
// manager's settings; overrides; strict values.
#include "recovery/server_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

#include "log/meta_properties.h"
#include "recovery/config_keys.h"
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

// Kafka refuses to start with them (validateBrokerLogConfigValues): every
// topic created would fail on them.
TEST(ServerConfigTest, MinCompactionLagAboveTheMaxIsRefused) {
  EXPECT_EQ(ErrorOf({{"log.cleaner.min.compaction.lag.ms", "10000"},
                     {"log.cleaner.max.compaction.lag.ms", "5000"}}),
            "conflicting settings: log.cleaner.min.compaction.lag.ms (10000) > "
            "log.cleaner.max.compaction.lag.ms (5000)");
  EXPECT_EQ(Resolve({{"log.cleaner.min.compaction.lag.ms", "5000"},
                     {"log.cleaner.max.compaction.lag.ms", "5000"}})
                .log.min_compaction_lag_ms,
            5000);
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
            "invalid value \"10\" for log.segment.bytes: expected a whole number from 14 to "
            "2147483647");
  EXPECT_EQ(ErrorOf({{"log.segment.bytes", "4294967296"}}),
            "invalid value \"4294967296\" for log.segment.bytes: expected a whole number from 14 "
            "to 2147483647");
  // An open upper end is not printed as a 19-digit number.
  EXPECT_EQ(ErrorOf({{"log.retention.check.interval.ms", "0"}}),
            "invalid value \"0\" for log.retention.check.interval.ms: expected a whole number of "
            "at least 1");
  EXPECT_EQ(ErrorOf({{"log.preallocate", "yes"}}),
            "invalid value \"yes\" for log.preallocate: expected true or false");
  EXPECT_EQ(ErrorOf({{"num.recovery.threads.per.data.dir", "0"}}),
            "invalid value \"0\" for num.recovery.threads.per.data.dir: expected a whole number "
            "from 1 to 2147483647");
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

TEST(ServerConfigTest, EveryKeyReadIsAKnownDarumaKey) {
  // A key FromProperties reads but config_keys.cc does not list would be
  // refused by --set and warned about in a file.
  for (const std::string& key : ServerConfig::KeysRead()) {
    EXPECT_TRUE(IsDarumaConfigKey(key)) << key;
  }
  EXPECT_GT(ServerConfig::KeysRead().size(), 30u);
}

TEST(ServerConfigTest, UnknownSetKeyIsAnErrorNamingTheNearestKey) {
  auto config = LoadServerConfig("", {"log.segment.byte=1024"});
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(),
            "--set log.segment.byte=1024: unknown key \"log.segment.byte\" (did you mean "
            "\"log.segment.bytes\"?)");
  EXPECT_NE(LoadServerConfig("", {"daruma.max.open.file=5"})
                .status()
                .message()
                .find("did you mean \"daruma.max.open.files\"?"),
            std::string::npos);
  // Kafka's keys Daruma ignores, and Kafka's open-ended prefixes, are fine.
  auto kafka = LoadServerConfig("", {"zookeeper.connect=zk:2181", "num.network.threads=3",
                                     "listener.name.internal.ssl.keystore.location=/k"});
  ASSERT_TRUE(kafka.ok()) << kafka.status().ToString();
  EXPECT_TRUE(kafka->warnings.empty());
}

TEST(ServerConfigTest, UnknownFileKeyIsAWarningNamingFileAndLine) {
  testing::TempDir dir;
  const std::string path = dir.Join("server.properties");
  testing::WriteStringToFile(path,
                             "# Kafka's sample\n"
                             "broker.id=0\n"
                             "num.network.threads=3\n"
                             "  log.retention.hour = 168\n"
                             "zookeeper.connect=localhost:2181\n");
  auto config = LoadServerConfig(path, {});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->warnings,
            (std::vector<std::string>{path + ":4: unknown key \"log.retention.hour\" (did you mean "
                                             "\"log.retention.hours\"?); ignored"}));
  EXPECT_EQ(config->other.at("log.retention.hour"), "168");  // kept, not used
}

TEST(ServerConfigTest, KafkasSampleServerPropertiesLoadsWithoutWarnings) {
  // The keys of Kafka's config/server.properties and config/kraft/server.properties.
  testing::TempDir dir;
  const std::string path = dir.Join("server.properties");
  testing::WriteStringToFile(
      path,
      "process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@localhost:9093\n"
      "listeners=PLAINTEXT://:9092,CONTROLLER://:9093\ninter.broker.listener.name=PLAINTEXT\n"
      "advertised.listeners=PLAINTEXT://localhost:9092\ncontroller.listener.names=CONTROLLER\n"
      "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
      "num.network.threads=3\nnum.io.threads=8\nsocket.send.buffer.bytes=102400\n"
      "socket.receive.buffer.bytes=102400\nsocket.request.max.bytes=104857600\n"
      "log.dirs=/tmp/kraft-combined-logs\nnum.partitions=1\n"
      "num.recovery.threads.per.data.dir=1\noffsets.topic.replication.factor=1\n"
      "transaction.state.log.replication.factor=1\ntransaction.state.log.min.isr=1\n"
      "log.retention.hours=168\nlog.segment.bytes=1073741824\n"
      "log.retention.check.interval.ms=300000\nzookeeper.connect=localhost:2181\n"
      "zookeeper.connection.timeout.ms=18000\ngroup.initial.rebalance.delay.ms=0\n"
      "broker.id=0\nmetadata.log.dir=/tmp/meta\n");
  auto config = LoadServerConfig(path, {});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(config->warnings.empty()) << config->warnings[0];
}

TEST(ServerConfigTest, TheRepositorysServerPropertiesLoadsWithoutWarnings) {
  // tests/recovery/ -> the repository root (CMake passes absolute paths).
  const auto root = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
  auto config = LoadServerConfig((root / "config/server.properties").string(), {});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(config->warnings.empty()) << config->warnings[0];
}

}  // namespace
}  // namespace daruma
