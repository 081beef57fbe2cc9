// TopicRegistry (topic ids from partition.metadata, partition counts,
// creation and deletion through LogManager), ResolveBrokerSettings, and
// produce durability/timestamp settings seen through the handler.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "broker/broker_context.h"
#include "broker/handler_harness.h"
#include "broker/topic_config.h"
#include "broker/topic_registry.h"
#include "log/partition_metadata_file.h"
#include "record/record_batch_builder.h"
#include "support/test_support.h"

namespace daruma::broker::testing {
namespace {

// A last partition that start-up found but could not load still counts: a
// shrunk __consumer_offsets would map every group to another partition.
TEST(HandlerTopicRegistry, UnloadedPartitionsKeepTheTopicsPartitionCount) {
  daruma::testing::TempDir dir;
  LogManager manager;
  ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
  for (int32_t p : {0, 1}) {
    ASSERT_TRUE(
        manager.GetOrCreateLog({"__consumer_offsets", p}, Uuid::Random(), LogConfig{}).ok());
  }
  TopicRegistry registry(&manager, LogConfig{});
  ASSERT_TRUE(registry.Load({{"__consumer_offsets", 2}, {"gone", 0}}).ok());
  std::optional<TopicInfo> offsets = registry.Find("__consumer_offsets");
  ASSERT_TRUE(offsets.has_value());
  EXPECT_EQ(offsets->partitions, 3);
  EXPECT_TRUE(registry.IsUnloaded({"__consumer_offsets", 2}));
  EXPECT_FALSE(registry.IsUnloaded({"__consumer_offsets", 1}));
  EXPECT_EQ(registry.GetLog({"__consumer_offsets", 2}), nullptr);
  // A topic none of whose partitions loaded is not invented.
  EXPECT_FALSE(registry.Find("gone").has_value());
}

// The dirs of one broker of a larger cluster hold only its replicas: the
// partitions below the highest one that no dir holds are created empty with
// the topic's id, so that every partition Metadata advertises is served.
TEST(HandlerTopicRegistry, PartitionsMissingBelowTheHighestAreCreatedEmpty) {
  daruma::testing::TempDir dir;
  LogManager manager;
  ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
  const Uuid id = Uuid::Random();
  for (int32_t p : {1, 4}) ASSERT_TRUE(manager.GetOrCreateLog({"orders", p}, id, LogConfig{}).ok());
  ASSERT_TRUE(manager.GetLog({"orders", 4})->AppendAsLeader(ClientBatch({"a"}), 0).ok());
  TopicRegistry registry(&manager, LogConfig{});
  std::vector<std::string> notes;
  // Partition 2 failed to load: its dir is there, so it is not created over.
  ASSERT_TRUE(registry.Load({{"orders", 2}}, &notes).ok());
  std::optional<TopicInfo> orders = registry.Find("orders");
  ASSERT_TRUE(orders.has_value());
  EXPECT_EQ(orders->partitions, 5);
  EXPECT_EQ(orders->id, id);
  for (int32_t p : {0, 3}) {
    Log* log = registry.GetLog({"orders", p});
    ASSERT_NE(log, nullptr) << p;
    EXPECT_EQ(log->log_end_offset(), 0);
    auto written =
        PartitionMetadataFile(dir.Join(fmt::format("orders-{}/partition.metadata", p))).Read();
    ASSERT_TRUE(written.ok()) << written.status().ToString();
    EXPECT_EQ(written->topic_id, id);
  }
  EXPECT_EQ(registry.GetLog({"orders", 2}), nullptr);
  EXPECT_FALSE(std::filesystem::exists(dir.Join("orders-2")));
  EXPECT_EQ(registry.GetLog({"orders", 4})->log_end_offset(), 1);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("topic 'orders': partitions 0, 3 had no directory"), std::string::npos)
      << notes[0];
  EXPECT_TRUE(manager.Shutdown().ok());
}

TEST(HandlerTopicRegistry, ReloadKeepsIdsAndPartitionCountsAndWritesMissingIds) {
  daruma::testing::TempDir dir;
  Uuid id;
  {
    LogManager manager;
    ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
    TopicRegistry registry(&manager, LogConfig{});
    ASSERT_TRUE(registry.Load().ok());
    Result<TopicInfo> created = registry.Create("orders", 3, {});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    id = created->id;
    EXPECT_FALSE(id.IsZero());
    // An old (Kafka < 2.8) partition: no partition.metadata.
    ASSERT_TRUE(manager.GetOrCreateLog({"legacy", 0}, Uuid::Zero(), LogConfig{}).ok());
    Log* log = manager.GetLog({"orders", 1});
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->AppendAsLeader(ClientBatch({"a", "b"}), 0).ok());
    ASSERT_TRUE(manager.Shutdown().ok());
  }
  EXPECT_FALSE(PartitionMetadataFile(dir.Join("legacy-0/partition.metadata")).Exists());
  LogManager manager;
  ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
  TopicRegistry registry(&manager, LogConfig{});
  ASSERT_TRUE(registry.Load().ok());
  std::optional<TopicInfo> orders = registry.Find("orders");
  ASSERT_TRUE(orders.has_value());
  EXPECT_EQ(orders->id, id);
  EXPECT_EQ(orders->partitions, 3);
  // Leader on one node: everything loaded is committed.
  EXPECT_EQ(registry.GetLog({"orders", 1})->high_watermark(), 2);
  EXPECT_EQ(registry.GetLog({"orders", 3}), nullptr);
  std::optional<TopicInfo> legacy = registry.Find("legacy");
  ASSERT_TRUE(legacy.has_value());
  auto written = PartitionMetadataFile(dir.Join("legacy-0/partition.metadata")).Read();
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written->topic_id, legacy->id);
  std::vector<TopicInfo> all = registry.All();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "legacy");
  EXPECT_EQ(all[1].name, "orders");
  EXPECT_TRUE(manager.Shutdown().ok());
}

// A KRaft metadata record (frame version 1, api key, version 0) naming a
// topic and its id: TopicRecord.
std::string KraftTopicRecord(const std::string& name, const Uuid& id) {
  std::string out = {1, 2, 0, char(name.size() + 1)};
  out += name;
  out.append(reinterpret_cast<const char*>(id.bytes().data()), id.bytes().size());
  out.push_back(0);  // no tagged fields
  return out;
}

// A KRaft metadata log in `dir` with one TopicRecord per (name, id).
void WriteKraftMetadataLog(const daruma::testing::TempDir& dir,
                           const std::vector<std::pair<std::string, Uuid>>& topics) {
  std::vector<RecordInput> records;
  for (const auto& [name, id] : topics) {
    records.push_back({0, std::nullopt, KraftTopicRecord(name, id), {}});
  }
  Result<Bytes> batch = BuildRecordBatch(BatchBuilderOptions{}, records);
  ASSERT_TRUE(batch.ok());
  std::filesystem::create_directories(dir.Join("__cluster_metadata-0"));
  std::ofstream(dir.Join("__cluster_metadata-0/00000000000000000000.log"), std::ios::binary)
      .write(reinterpret_cast<const char*>(batch->data()), std::streamsize(batch->size()));
}

// Dirs a Kafka broker wrote, where a crash came before Kafka flushed a new
// topic's partition.metadata: the partitions get the id the metadata log
// holds, which Kafka checks them against, not a new one. A partition.metadata
// that names another id is served as it says, with a warning.
TEST(HandlerTopicRegistry, PartitionsWithoutMetadataTakeTheKafkaMetadataLogsTopicId) {
  daruma::testing::TempDir dir;
  const Uuid own = Uuid::Random();
  {
    LogManager manager;
    ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
    for (int32_t p : {0, 1})
      ASSERT_TRUE(manager.GetOrCreateLog({"orders", p}, Uuid::Zero(), LogConfig{}).ok());
    ASSERT_TRUE(manager.GetOrCreateLog({"other", 0}, own, LogConfig{}).ok());
    ASSERT_TRUE(manager.Shutdown().ok());
  }
  std::filesystem::remove(dir.Join("daruma-topic-configs.json"));
  const Uuid orders_id = Uuid::Random();
  const Uuid other_id = Uuid::Random();
  WriteKraftMetadataLog(dir, {{"orders", orders_id}, {"other", other_id}});

  LogManagerOptions options;
  options.import_kafka_topic_configs = true;
  LogManager manager(options);
  ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
  TopicRegistry registry(&manager, LogConfig{});
  std::vector<std::string> notes;
  ASSERT_TRUE(registry.Load({}, &notes).ok());
  EXPECT_EQ(registry.Find("orders")->id, orders_id);
  for (int32_t p : {0, 1}) {
    auto written =
        PartitionMetadataFile(dir.Join(fmt::format("orders-{}/partition.metadata", p))).Read();
    ASSERT_TRUE(written.ok()) << written.status().ToString();
    EXPECT_EQ(written->topic_id, orders_id);
  }
  EXPECT_EQ(registry.Find("other")->id, own);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("topic orders: 2 partition dir(s) without partition.metadata get topic "
                          "id " +
                          orders_id.ToString()),
            std::string::npos)
      << notes[0];
  EXPECT_NE(notes[1].find("topic other: partition.metadata names topic id " + own.ToString() +
                          ", the Kafka metadata log " + other_id.ToString()),
            std::string::npos)
      << notes[1];
  EXPECT_TRUE(manager.Shutdown().ok());
}

// The ids are recorded with the import: a crash after the import was
// recorded but before a partition.metadata was written leaves a later start
// (which never imports again) to find the id there. A topic deleted here
// loses it, so one created again under the name cannot take it.
TEST(HandlerTopicRegistry, ALaterStartStillKnowsTheImportedTopicIdsUntilTheTopicIsDeleted) {
  daruma::testing::TempDir dir;
  {
    LogManager manager;
    ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
    ASSERT_TRUE(manager.GetOrCreateLog({"orders", 0}, Uuid::Zero(), LogConfig{}).ok());
    ASSERT_TRUE(manager.Shutdown().ok());
  }
  std::filesystem::remove(dir.Join("daruma-topic-configs.json"));
  std::filesystem::remove(dir.Join("orders-0/partition.metadata"));
  const Uuid orders_id = Uuid::Random();
  WriteKraftMetadataLog(dir, {{"orders", orders_id}});
  LogManagerOptions options;
  options.import_kafka_topic_configs = true;
  {
    // The importing start records the import and stops before the broker's
    // topics are loaded (the crash's window).
    LogManager manager(options);
    ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
    ASSERT_TRUE(manager.Shutdown().ok());
  }
  ASSERT_FALSE(std::filesystem::exists(dir.Join("orders-0/partition.metadata")));
  // Not read again: the id comes from the recorded import.
  std::filesystem::remove_all(dir.Join("__cluster_metadata-0"));
  {
    LogManager manager(options);
    ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
    EXPECT_FALSE(manager.kafka_config_import().has_value());
    TopicRegistry registry(&manager, LogConfig{});
    std::vector<std::string> notes;
    ASSERT_TRUE(registry.Load({}, &notes).ok());
    EXPECT_EQ(registry.Find("orders")->id, orders_id);
    auto written = PartitionMetadataFile(dir.Join("orders-0/partition.metadata")).Read();
    ASSERT_TRUE(written.ok()) << written.status().ToString();
    EXPECT_EQ(written->topic_id, orders_id);
    ASSERT_TRUE(registry.Delete("orders").ok());
    EXPECT_FALSE(manager.KafkaTopicIdOf("orders").has_value());
    ASSERT_TRUE(manager.Shutdown().ok());
  }
  const std::string file = daruma::testing::ReadFileToString(dir.Join("daruma-topic-configs.json"));
  EXPECT_EQ(file.find(orders_id.ToString()), file.rfind(orders_id.ToString()))
      << "only the deletion record names the id: " << file;
}

TEST(HandlerTopicRegistry, OverridesGivenAtCreateSurviveARestart) {
  daruma::testing::TempDir dir;
  {
    LogManager manager;
    ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
    TopicRegistry registry(&manager, LogConfig{});
    ASSERT_TRUE(registry.Load().ok());
    Result<TopicInfo> created = registry.Create(
        "profiles", 1, {{"cleanup.policy", "compact"}, {"segment.bytes", "1048576"}});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    ASSERT_TRUE(registry.Create("plain", 1, {}).ok());
    ASSERT_TRUE(manager.Shutdown().ok());
  }
  LogManager manager;
  ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
  TopicRegistry registry(&manager, LogConfig{});
  ASSERT_TRUE(registry.Load().ok());
  std::optional<TopicInfo> profiles = registry.Find("profiles");
  ASSERT_TRUE(profiles.has_value());
  const TopicOverrides want = {{"cleanup.policy", "compact"}, {"segment.bytes", "1048576"}};
  EXPECT_EQ(profiles->overrides, want);
  EXPECT_TRUE(profiles->config.compact);
  EXPECT_EQ(profiles->config.segment_bytes, 1048576);
  EXPECT_EQ(registry.GetLog({"profiles", 0})->config_snapshot().segment_bytes, 1048576);
  std::optional<TopicInfo> plain = registry.Find("plain");
  ASSERT_TRUE(plain.has_value());
  EXPECT_TRUE(plain->overrides.empty());
  EXPECT_EQ(plain->config.segment_bytes, LogConfig{}.segment_bytes);
  EXPECT_TRUE(manager.Shutdown().ok());
}

// A crash part-way through CreateTopics: the creation and the overrides were
// recorded before the first partition dir, so the next start completes the
// topic with its id and configs (as Kafka's one metadata record would), also
// when no partition dir was made yet.
TEST(HandlerTopicRegistry, ACreationACrashInterruptedIsCompletedWithItsConfigs) {
  daruma::testing::TempDir dir;
  const Uuid big = Uuid::Random();
  const Uuid empty = Uuid::Random();
  const TopicOverrides overrides = {{"retention.ms", "12345678"}};
  {
    LogManager manager;
    ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
    Result<LogConfig> config = ApplyTopicOverrides(LogConfig{}, overrides);
    ASSERT_TRUE(config.ok());
    ASSERT_TRUE(manager.BeginTopicCreation("big", {big, 4}, *config, overrides).ok());
    for (int32_t p : {0, 1}) ASSERT_TRUE(manager.GetOrCreateLog({"big", p}, big, *config).ok());
    ASSERT_TRUE(manager.BeginTopicCreation("empty", {empty, 2}, LogConfig{}, {}).ok());
    // Destroyed without Shutdown: a crash.
  }
  for (int round = 0; round < 2; ++round) {  // and it stays whole after a restart
    LogManager manager;
    ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
    TopicRegistry registry(&manager, LogConfig{});
    ASSERT_TRUE(registry.Load().ok());
    std::optional<TopicInfo> t = registry.Find("big");
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->id, big);
    EXPECT_EQ(t->partitions, 4);
    EXPECT_EQ(t->overrides, overrides);
    EXPECT_EQ(t->config.retention_ms, 12345678);
    for (int32_t p = 0; p < 4; ++p) {
      Log* log = registry.GetLog({"big", p});
      ASSERT_NE(log, nullptr) << p;
      EXPECT_EQ(log->config_snapshot().retention_ms, 12345678) << p;
      auto meta =
          PartitionMetadataFile(dir.Join("big-" + std::to_string(p) + "/partition.metadata"))
              .Read();
      ASSERT_TRUE(meta.ok()) << p;
      EXPECT_EQ(meta->topic_id, big) << p;
    }
    std::optional<TopicInfo> e = registry.Find("empty");
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->id, empty);
    EXPECT_EQ(e->partitions, 2);
    EXPECT_TRUE(manager.PendingTopicCreations().empty());
    ASSERT_TRUE(manager.Shutdown().ok());
  }
}

// A crash part-way through DeleteTopics: the deletion was recorded before the
// first rename, so the partition dir left behind is deleted at the next
// start, never served again; the record goes once no dir is offline.
TEST(HandlerTopicRegistry, APartitionDirOfADeletedTopicIsDeletedNotServed) {
  daruma::testing::TempDir dir;
  Uuid id;
  {
    LogManager manager;
    ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
    TopicRegistry registry(&manager, LogConfig{});
    ASSERT_TRUE(registry.Load().ok());
    Result<TopicInfo> created = registry.Create("gone", 2, {{"retention.ms", "1000"}});
    ASSERT_TRUE(created.ok());
    id = created->id;
    ASSERT_TRUE(registry.Create("kept", 1, {}).ok());
    ASSERT_TRUE(manager.RecordTopicDeletion("gone", id).ok());
    ASSERT_TRUE(manager.AsyncDelete({"gone", 0}).ok());
    // Destroyed before gone-1 was renamed: a crash.
  }
  LogManager manager;
  ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
  ASSERT_TRUE(manager.IsDeletedTopic(id));
  TopicRegistry registry(&manager, LogConfig{});
  const Status loaded = registry.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.ToString();
  EXPECT_FALSE(registry.Find("gone").has_value());
  EXPECT_EQ(manager.GetLog({"gone", 1}), nullptr);
  EXPECT_FALSE(std::filesystem::exists(dir.Join("gone-1")));
  EXPECT_TRUE(registry.Find("kept").has_value());
  EXPECT_FALSE(manager.IsDeletedTopic(id));  // nothing of it can be left
  ASSERT_TRUE(manager.Shutdown().ok());
}

// An intent no dir could record is forgotten at once, so the next write for
// another topic cannot carry it to disk (the client was told it failed).
TEST(HandlerTopicRegistry, AnIntentNoDirTookIsNotKept) {
  daruma::testing::TempDir dir;
  LogManager manager;
  ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
  manager.failure_channel().MaybeAddOfflineLogDir(dir.path(), Status::IoError("disk gone"));
  EXPECT_FALSE(manager.BeginTopicCreation("t", {Uuid::Random(), 2}, LogConfig{}, {}).ok());
  EXPECT_TRUE(manager.PendingTopicCreations().empty());
  const Uuid id = Uuid::Random();
  EXPECT_FALSE(manager.RecordTopicDeletion("u", id).ok());
  EXPECT_FALSE(manager.IsDeletedTopic(id));
}

// A crash after the first partition's dir but before its partition.metadata:
// the recorded creation gives the id, so the creation is still completed.
TEST(HandlerTopicRegistry, ACreationCrashedBeforeItsFirstPartitionMetadataIsCompleted) {
  daruma::testing::TempDir dir;
  const Uuid id = Uuid::Random();
  {
    LogManager manager;
    ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
    ASSERT_TRUE(manager.BeginTopicCreation("t", {id, 3}, LogConfig{}, {}).ok());
    ASSERT_TRUE(manager.GetOrCreateLog({"t", 0}, Uuid::Zero(), LogConfig{}).ok());
  }
  LogManager manager;
  ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
  TopicRegistry registry(&manager, LogConfig{});
  ASSERT_TRUE(registry.Load().ok());
  std::optional<TopicInfo> t = registry.Find("t");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->id, id);
  EXPECT_EQ(t->partitions, 3);
  for (int32_t p = 0; p < 3; ++p) EXPECT_NE(registry.GetLog({"t", p}), nullptr) << p;
  EXPECT_TRUE(manager.PendingTopicCreations().empty());
  ASSERT_TRUE(manager.Shutdown().ok());
}

// DeleteTopics with a partition in a dir that went offline: every other
// partition goes, the offline one is left alone (as Kafka never touches an
// offline dir) and its deletion stays recorded for the start that finds it.
TEST(HandlerTopicRegistry, DeleteLeavesAPartitionInAnOfflineDirToItsRecordedDeletion) {
  daruma::testing::TempDir a, b;
  LogManager manager;
  ASSERT_TRUE(manager.Startup({a.path(), b.path()}, LogConfig{}, 1).ok());
  TopicRegistry registry(&manager, LogConfig{});
  ASSERT_TRUE(registry.Load().ok());
  Result<TopicInfo> created = registry.Create("t", 2, {});
  ASSERT_TRUE(created.ok());
  Log* in_a = manager.GetLog({"t", 0});
  ASSERT_NE(in_a, nullptr);
  const std::string offline = ParentDir(in_a->dir());
  manager.failure_channel().MaybeAddOfflineLogDir(offline, Status::IoError("disk gone"));
  EXPECT_TRUE(registry.Delete("t").ok());
  EXPECT_FALSE(registry.Find("t").has_value());
  EXPECT_EQ(manager.GetLog({"t", 1}), nullptr);  // the online one went
  EXPECT_TRUE(std::filesystem::exists(JoinPath(offline, "t-0")));
  EXPECT_TRUE(manager.IsDeletedTopic(created->id));
  ASSERT_TRUE(manager.Shutdown().ok());
}

// __consumer_offsets from a Kafka dir comes without its configs (Kafka keeps
// them in its metadata): it is compacted, as Kafka always has it, or time
// retention would delete committed offsets older than retention.ms. A policy
// recorded here is kept.
TEST(HandlerTopicRegistry, AnInternalTopicFoundWithoutItsPolicyIsCompacted) {
  HandlerHarness h;
  ASSERT_TRUE(
      h.manager().GetOrCreateLog({"__consumer_offsets", 0}, Uuid::Random(), LogConfig{}).ok());
  ASSERT_TRUE(
      h.manager().GetOrCreateLog({"__transaction_state", 0}, Uuid::Random(), LogConfig{}).ok());
  h.manager().SetTopicConfig("__transaction_state", LogConfig{},
                             {{"cleanup.policy", "compact,delete"}});
  h.Restart();
  std::optional<TopicInfo> offsets = h.handler().topics().Find("__consumer_offsets");
  ASSERT_TRUE(offsets.has_value());
  EXPECT_TRUE(offsets->config.compact);
  EXPECT_FALSE(offsets->config.delete_policy);
  EXPECT_TRUE(h.manager().GetLog({"__consumer_offsets", 0})->config_snapshot().compact);
  std::optional<TopicInfo> txns = h.handler().topics().Find("__transaction_state");
  ASSERT_TRUE(txns.has_value());
  EXPECT_EQ(txns->overrides.at("cleanup.policy"), "compact,delete");
}

// One unreadable partition.metadata once stopped every start of the broker.
TEST(HandlerTopicRegistry, AnUnreadablePartitionMetadataIsSetAsideAndWrittenAgain) {
  HandlerHarness h;
  h.CreateTopic("t", 2);
  const Uuid id = h.handler().topics().Find("t")->id;
  const std::string path = h.dir() + "/t-1/partition.metadata";
  // Nothing rewrites the file before the next start reads it.
  for (const char* bad : {"", "version: 0\ntopic_id: not-a-uuid\n"}) {
    daruma::testing::WriteStringToFile(path, bad);
    h.Restart();
    std::optional<TopicInfo> t = h.handler().topics().Find("t");
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->id, id);
    EXPECT_EQ(t->partitions, 2);
    auto written = PartitionMetadataFile(path).Read();
    ASSERT_TRUE(written.ok()) << written.status().ToString();
    EXPECT_EQ(written->topic_id, id);
    EXPECT_TRUE(std::filesystem::exists(h.dir() + "/t-1/daruma-quarantine/MANIFEST.jsonl"));
  }
}

TEST(HandlerTopicRegistry, CreateValidatesBeforeTouchingDisk) {
  daruma::testing::TempDir dir;
  LogManager manager;
  ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
  TopicRegistry registry(&manager, LogConfig{});
  ASSERT_TRUE(registry.Load().ok());
  EXPECT_EQ(registry.Create("..", 1, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Create("__consumer_offsets", 1, {}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Create("t", 0, {}).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(registry.Create("t", 1, {{"segment.bytes", "1"}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(manager.AllLogs().empty());
  ASSERT_TRUE(registry.Create("t", 1, {{"cleanup.policy", "compact"}}).ok());
  EXPECT_TRUE(registry.Find("t")->config.compact);
  EXPECT_FALSE(registry.Find("t")->config.delete_policy);
  EXPECT_EQ(registry.Create("t", 1, {}).status().code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(registry.Delete("t").ok());
  EXPECT_TRUE(registry.Delete("t").IsNotFound());
  EXPECT_TRUE(manager.Shutdown().ok());
}

TEST(HandlerTopicConfig, ParsesKafkaNamesStrictly) {
  auto config = ApplyTopicOverrides(LogConfig{}, {{"retention.ms", "-1"},
                                                  {"message.timestamp.type", "LogAppendTime"},
                                                  {"cleanup.policy", "compact,delete"}});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->retention_ms, -1);
  EXPECT_TRUE(config->log_append_time);
  EXPECT_TRUE(config->compact && config->delete_policy);
  Status bad = ApplyTopicOverrides(LogConfig{}, {{"segment.ms", "12x"}}).status();
  EXPECT_EQ(bad.message(), "invalid value \"12x\" for config segment.ms: expected an integer");
  EXPECT_FALSE(ApplyTopicOverrides(LogConfig{}, {{"min.insync.replicas", "2"}}).ok());
  EXPECT_FALSE(ApplyTopicOverrides(LogConfig{}, {{"cleanup.policy", "forever"}}).ok());
  EXPECT_TRUE(IsKnownTopicConfig("max.message.bytes"));
  EXPECT_FALSE(IsKnownTopicConfig("log.retention.ms"));  // a broker name, not a topic one
}

TEST(HandlerBrokerContext, ResolvesKafkaPropertiesWithDefaults) {
  BrokerContext ctx;
  ASSERT_TRUE(ResolveBrokerSettings(&ctx).ok());
  EXPECT_EQ(ctx.node_id, 0);
  EXPECT_TRUE(ctx.auto_create_topics_enable);
  EXPECT_EQ(ctx.num_partitions, 1);
  EXPECT_TRUE(ctx.delete_topic_enable);
  EXPECT_EQ(ctx.fetch_max_bytes, 57671680);
  ctx.config.other = {{"broker.id", "3"},
                      {"node.id", "7"},
                      {"auto.create.topics.enable", "false"},
                      {"num.partitions", " 4 "},
                      {"delete.topic.enable", "false"}};
  ASSERT_TRUE(ResolveBrokerSettings(&ctx).ok());
  EXPECT_EQ(ctx.node_id, 7);
  EXPECT_FALSE(ctx.auto_create_topics_enable);
  EXPECT_EQ(ctx.num_partitions, 4);
  EXPECT_FALSE(ctx.delete_topic_enable);
  ctx.config.other = {{"num.partitions", "0"}};
  EXPECT_EQ(ResolveBrokerSettings(&ctx).message(),
            "invalid value \"0\" for num.partitions: expected at least 1");
}

TEST(HandlerProduceSettings, FsyncModeAcksAllIsDurableBeforeTheResponse) {
  HandlerHarness h;
  h.CreateTopic("durable", 1, {{"flush.messages", "1"}});
  EXPECT_EQ(h.Produce("durable", 0, ClientBatch({"a", "b"})).error_code, ErrorCode::kNone);
  Log* log = h.manager().GetLog({"durable", 0});
  EXPECT_EQ(log->recovery_point(), 2);
  EXPECT_EQ(log->high_watermark(), 2);
}

TEST(HandlerProduceSettings, LogAppendTimeTopicsReportTheAppendTime) {
  HandlerHarness h;
  h.CreateTopic("stamped", 1, {{"message.timestamp.type", "LogAppendTime"}});
  const int64_t before = Clock::System()->NowMs();
  ProduceResponse::Partition p = h.Produce("stamped", 0, ClientBatch({"a"}, 5));
  EXPECT_EQ(p.error_code, ErrorCode::kNone);
  EXPECT_GE(p.log_append_time_ms, before);
  FetchResponse::Partition f = h.Fetch("stamped", 0, 0);
  RecordBatchView view(*f.records);
  EXPECT_EQ(view.timestamp_type(), TimestampType::kLogAppendTime);
  EXPECT_EQ(view.max_timestamp(), p.log_append_time_ms);
  EXPECT_TRUE(view.crc_valid());
}

// Request threads auto-creating one topic at once (Metadata from several
// clients): exactly one creates it, the others see it exists, and every
// partition carries the one id.
TEST(HandlerTopicRegistry, ConcurrentCreatesOfOneNameCreateItOnce) {
  daruma::testing::TempDir dir;
  LogManager manager;
  ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
  TopicRegistry registry(&manager, LogConfig{});
  ASSERT_TRUE(registry.Load().ok());
  std::atomic<int> created{0}, exists{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      Result<TopicInfo> r = registry.Create("events", 3, {});
      if (r.ok()) {
        ++created;
      } else if (r.status().code() == StatusCode::kAlreadyExists) {
        ++exists;
      } else {
        ++other;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(created.load(), 1);
  EXPECT_EQ(exists.load(), 5);
  EXPECT_EQ(other.load(), 0);
  std::optional<TopicInfo> info = registry.Find("events");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->partitions, 3);
  EXPECT_EQ(manager.AllLogs().size(), 3u);
  for (int p = 0; p < 3; ++p) {
    auto meta =
        PartitionMetadataFile(dir.Join("events-" + std::to_string(p) + "/partition.metadata"))
            .Read();
    ASSERT_TRUE(meta.ok()) << meta.status().ToString();
    EXPECT_EQ(meta->topic_id, info->id);
  }
  EXPECT_TRUE(manager.Shutdown().ok());
}

}  // namespace
}  // namespace daruma::broker::testing
