// RequestHandler: ApiVersions, Metadata, ListOffsets, CreateTopics,
// DeleteTopics, DescribeConfigs and the dispatch rules (spec §1.1, §3.1–3.9).
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <map>

#include "broker/api_handlers.h"
#include "broker/handler_harness.h"
#include "log/partition_metadata_file.h"
#include "protocol/messages.h"

namespace daruma::broker::testing {
namespace {

MetadataResponse Metadata(HandlerHarness& h, std::optional<std::vector<std::string>> topics,
                          int16_t version = 4, bool allow_auto = true) {
  MetadataRequest request;
  if (topics) {
    request.topics.emplace();
    for (std::string& name : *topics) request.topics->push_back({.name = std::move(name)});
  }
  request.allow_auto_topic_creation = allow_auto;
  return h.Call(ApiKey::kMetadata, version, request, EncodeMetadataRequest, DecodeMetadataResponse);
}

ListOffsetsResponse::Partition ListOffset(HandlerHarness& h, const std::string& topic,
                                          int64_t timestamp, int16_t version = 2) {
  ListOffsetsRequest request;
  request.topics.push_back({topic, {{.partition_index = 0, .timestamp = timestamp}}});
  ListOffsetsResponse r = h.Call(ApiKey::kListOffsets, version, request, EncodeListOffsetsRequest,
                                 DecodeListOffsetsResponse);
  return r.topics.at(0).partitions.at(0);
}

std::vector<std::string> DirNames(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_directory()) out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(HandlerDispatch, ApiVersionsAdvertisesTheTable) {
  HandlerHarness h;
  ApiVersionsResponse r = h.Call(ApiKey::kApiVersions, 3, ApiVersionsRequest{"kcat", "1.7.1"},
                                 EncodeApiVersionsRequest, DecodeApiVersionsResponse);
  EXPECT_EQ(r.error_code, ErrorCode::kNone);
  EXPECT_EQ(r.api_keys, HandledApiKeys());
  bool produce = false;
  for (const auto& k : r.api_keys) {
    if (k.api_key == ApiKey::kProduce) {
      produce = true;
      EXPECT_EQ(k.min_version, 0);
      EXPECT_EQ(k.max_version, 11);
    }
  }
  EXPECT_TRUE(produce);
}

TEST(HandlerDispatch, TooNewApiVersionsGetsUnsupportedVersionInV0Form) {
  HandlerHarness h;
  ProtocolWriter w;
  EncodeRequestHeader({ApiKey::kApiVersions, 9, 77, std::string("new")}, w);
  w.WriteRaw(AsBytes("body we must not parse"));
  auto reply = h.SubmitFrame(w.Release());
  ASSERT_TRUE(reply->done);
  EXPECT_FALSE(reply->close);
  ApiVersionsResponse r =
      HandlerHarness::DecodeReply(*reply, ApiKey::kApiVersions, 0, DecodeApiVersionsResponse, 77);
  EXPECT_EQ(r.error_code, ErrorCode::kUnsupportedVersion);
  EXPECT_EQ(r.api_keys, HandledApiKeys());
}

TEST(HandlerDispatch, UnsupportedVersionUnknownKeyAndGarbageClose) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  const Bytes batch = ClientBatch({"x"});
  // v12 (Kafka 4.1's) is above the advertised range: its body is never read.
  ProtocolWriter v12_frame;
  EncodeRequestHeader({ApiKey::kProduce, 12, 1, std::string("x")}, v12_frame);
  v12_frame.WriteRaw(batch);
  auto v12 = h.SubmitFrame(v12_frame.Release());
  ASSERT_TRUE(v12->done);
  EXPECT_FALSE(v12->frame.has_value());
  EXPECT_TRUE(v12->close);
  EXPECT_EQ(h.manager().GetLog({"t", 0})->log_end_offset(), 0);

  auto fetch3 =
      h.Submit(ApiKey::kFetch, 3, HandlerHarness::FetchOne("t", 0, 0), EncodeFetchRequest);
  EXPECT_TRUE(fetch3->done && fetch3->close && !fetch3->frame);

  ProtocolWriter unknown;
  EncodeRequestHeader({ApiKey(99), 0, 1, std::string("x")}, unknown);
  auto r99 = h.SubmitFrame(unknown.Release());
  EXPECT_TRUE(r99->done && r99->close && !r99->frame);

  auto garbage = h.SubmitFrame(Bytes{0x00, 0x03});
  EXPECT_TRUE(garbage->done && garbage->close && !garbage->frame);

  // A known request whose body is cut short: Kafka closes as well.
  ProtocolWriter cut;
  EncodeRequestHeader({ApiKey::kMetadata, 4, 1, std::string("x")}, cut);
  cut.WriteInt32(3);  // three topic names follow... but none do
  auto truncated = h.SubmitFrame(cut.Release());
  EXPECT_TRUE(truncated->done && truncated->close && !truncated->frame);
}

TEST(HandlerMetadata, DescribesThisNodeAsLeaderOfEveryPartition) {
  HandlerHarness h;
  h.CreateTopic("orders", 3);
  MetadataResponse r = Metadata(h, std::nullopt);
  ASSERT_EQ(r.brokers.size(), 1u);
  EXPECT_EQ(r.brokers[0].node_id, kNodeId);
  EXPECT_EQ(r.brokers[0].host, "broker.test");
  EXPECT_EQ(r.brokers[0].port, 19092);
  EXPECT_EQ(r.controller_id, kNodeId);
  EXPECT_EQ(r.cluster_id, std::string(kDefaultClusterId));
  ASSERT_EQ(r.topics.size(), 1u);
  EXPECT_EQ(r.topics[0].name, "orders");
  EXPECT_EQ(r.topics[0].error_code, ErrorCode::kNone);
  ASSERT_EQ(r.topics[0].partitions.size(), 3u);
  for (int32_t p = 0; p < 3; ++p) {
    const auto& part = r.topics[0].partitions[p];
    EXPECT_EQ(part.partition_index, p);
    EXPECT_EQ(part.leader_id, kNodeId);
    EXPECT_EQ(part.replica_nodes, std::vector<int32_t>{kNodeId});
    EXPECT_EQ(part.isr_nodes, std::vector<int32_t>{kNodeId});
  }
  EXPECT_TRUE(Metadata(h, std::vector<std::string>{}).topics.empty());  // v1+: no topics
  EXPECT_EQ(Metadata(h, std::nullopt, 0).topics.size(), 1u);            // v0 probe: all
}

// A partition whose log dir went offline is not served: Kafka's
// ReplicaManager answers KAFKA_STORAGE_ERROR for it, and Metadata shows it
// without a leader, its replica offline, so clients wait instead of writing.
TEST(HandlerMetadata, APartitionInAnOfflineDirHasNoLeaderAndAnswersStorageErrors) {
  HandlerHarness h;
  h.CreateTopic("orders", 1);
  ASSERT_EQ(h.Produce("orders", 0, ClientBatch({"before"})).error_code, ErrorCode::kNone);
  h.manager().failure_channel().MaybeAddOfflineLogDir(h.dir(), Status::IoError("disk gone"));

  MetadataResponse r = Metadata(h, std::vector<std::string>{"orders"}, 9);
  ASSERT_EQ(r.topics.size(), 1u);
  EXPECT_EQ(r.topics[0].error_code, ErrorCode::kNone);
  ASSERT_EQ(r.topics[0].partitions.size(), 1u);
  const MetadataResponse::Partition& part = r.topics[0].partitions[0];
  EXPECT_EQ(part.error_code, ErrorCode::kLeaderNotAvailable);
  EXPECT_EQ(part.leader_id, -1);
  EXPECT_EQ(part.replica_nodes, std::vector<int32_t>{kNodeId});
  EXPECT_TRUE(part.isr_nodes.empty());
  EXPECT_EQ(part.offline_replicas, std::vector<int32_t>{kNodeId});

  EXPECT_EQ(h.Produce("orders", 0, ClientBatch({"after"})).error_code,
            ErrorCode::kKafkaStorageError);
  EXPECT_EQ(h.Fetch("orders", 0, 0).error_code, ErrorCode::kKafkaStorageError);
  EXPECT_EQ(ListOffset(h, "orders", -1).error_code, ErrorCode::kKafkaStorageError);
  // A partition the topic does not have is still unknown.
  EXPECT_EQ(h.Produce("orders", 1, ClientBatch({"x"})).error_code,
            ErrorCode::kUnknownTopicOrPartition);
}

TEST(HandlerMetadata, AutoCreatesRequestedTopicsWithNumPartitions) {
  HandlerHarness h([](BrokerContext& ctx) { ctx.num_partitions = 2; });
  MetadataResponse consumer = Metadata(h, std::vector<std::string>{"fresh"}, 4, false);
  ASSERT_EQ(consumer.topics.size(), 1u);
  EXPECT_EQ(consumer.topics[0].error_code, ErrorCode::kUnknownTopicOrPartition);
  EXPECT_TRUE(consumer.topics[0].partitions.empty());

  MetadataResponse producer = Metadata(h, std::vector<std::string>{"fresh"}, 4, true);
  EXPECT_EQ(producer.topics.at(0).error_code, ErrorCode::kNone);
  EXPECT_EQ(producer.topics[0].partitions.size(), 2u);
  EXPECT_NE(h.manager().GetLog({"fresh", 1}), nullptr);
  auto meta = PartitionMetadataFile(h.dir() + "/fresh-0/partition.metadata").Read();
  ASSERT_TRUE(meta.ok()) << meta.status().ToString();
  EXPECT_EQ(meta->topic_id, h.handler().topics().Find("fresh")->id);

  MetadataResponse bad = Metadata(h, std::vector<std::string>{"bad/name"}, 1);
  EXPECT_EQ(bad.topics.at(0).error_code, ErrorCode::kInvalidTopicException);
}

TEST(HandlerMetadata, NoAutoCreationWhenDisabled) {
  HandlerHarness h([](BrokerContext& ctx) { ctx.auto_create_topics_enable = false; });
  MetadataResponse r = Metadata(h, std::vector<std::string>{"fresh"}, 1);
  EXPECT_EQ(r.topics.at(0).error_code, ErrorCode::kUnknownTopicOrPartition);
  EXPECT_EQ(h.manager().GetLog({"fresh", 0}), nullptr);
}

TEST(HandlerListOffsets, EarliestLatestAndByTimestamp) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  h.Produce("t", 0, ClientBatch({"a"}, 1000));
  h.Produce("t", 0, ClientBatch({"b", "c"}, 2000));
  h.Produce("t", 0, ClientBatch({"d"}, 3000));

  auto earliest = ListOffset(h, "t", kListOffsetsEarliest);
  EXPECT_EQ(earliest.error_code, ErrorCode::kNone);
  EXPECT_EQ(earliest.offset, 0);
  EXPECT_EQ(earliest.timestamp, -1);
  auto latest = ListOffset(h, "t", kListOffsetsLatest, 1);
  EXPECT_EQ(latest.offset, 4);
  EXPECT_EQ(latest.timestamp, -1);
  auto by_time = ListOffset(h, "t", 1500);
  EXPECT_EQ(by_time.offset, 1);
  EXPECT_EQ(by_time.timestamp, 2000);
  auto exact = ListOffset(h, "t", 3000);
  EXPECT_EQ(exact.offset, 3);
  auto none = ListOffset(h, "t", 5000);
  EXPECT_EQ(none.error_code, ErrorCode::kNone);
  EXPECT_EQ(none.offset, -1);
  EXPECT_EQ(none.timestamp, -1);
  EXPECT_EQ(ListOffset(h, "missing", kListOffsetsLatest).error_code,
            ErrorCode::kUnknownTopicOrPartition);
}

TEST(HandlerCreateTopics, CreatesValidatesAndRejects) {
  HandlerHarness h;
  CreateTopicsRequest request;
  request.topics.push_back({"orders", 3, 1, {}, {{"retention.ms", "1000"}}});
  request.topics.push_back({"bad name", 1, 1, {}, {}});
  request.topics.push_back({"rf", 1, 3, {}, {}});
  request.topics.push_back({"zero", 0, 1, {}, {}});
  request.topics.push_back({"conf", 1, 1, {}, {{"retention.ms", "soon"}}});
  request.topics.push_back({"unknownconf", 1, 1, {}, {{"no.such.config", "1"}}});
  request.topics.push_back({"assigned", -1, -1, {{0, {kNodeId + 1}}}, {}});
  request.topics.push_back({"default", -1, -1, {}, {}});
  CreateTopicsResponse r = h.Call(ApiKey::kCreateTopics, 4, request, EncodeCreateTopicsRequest,
                                  DecodeCreateTopicsResponse);
  ASSERT_EQ(r.topics.size(), 8u);
  EXPECT_EQ(r.topics[0].error_code, ErrorCode::kNone);
  EXPECT_FALSE(r.topics[0].error_message.has_value());
  EXPECT_EQ(r.topics[1].error_code, ErrorCode::kInvalidTopicException);
  EXPECT_EQ(r.topics[2].error_code, ErrorCode::kInvalidReplicationFactor);
  EXPECT_EQ(r.topics[3].error_code, ErrorCode::kInvalidPartitions);
  EXPECT_EQ(r.topics[4].error_code, ErrorCode::kInvalidConfig);
  EXPECT_NE(r.topics[4].error_message->find("retention.ms"), std::string::npos);
  EXPECT_EQ(r.topics[5].error_code, ErrorCode::kInvalidConfig);
  EXPECT_EQ(r.topics[6].error_code, ErrorCode::kInvalidReplicaAssignment);
  EXPECT_EQ(r.topics[7].error_code, ErrorCode::kNone);
  EXPECT_EQ(h.handler().topics().Find("orders")->partitions, 3);
  EXPECT_EQ(h.handler().topics().Find("orders")->config.retention_ms, 1000);
  EXPECT_EQ(h.handler().topics().Find("default")->partitions, 1);
  EXPECT_EQ(DirNames(h.dir()),
            (std::vector<std::string>{"default-0", "orders-0", "orders-1", "orders-2"}));

  EXPECT_EQ(h.CreateTopic("orders", 1).topics.at(0).error_code, ErrorCode::kTopicAlreadyExists);
}

// Kafka's words and shapes (KRaft's ControllerApis and
// ReplicationControlManager): a name given twice gets one answer; a manual
// assignment naming this broker twice, or nobody, is refused.
TEST(HandlerCreateTopics, DuplicatesAndAssignmentsAreRefusedAsKafkaRefusesThem) {
  HandlerHarness h;
  CreateTopicsRequest request;
  request.topics.push_back({"twice", 1, 1, {}, {}});
  request.topics.push_back({"twice", 2, 1, {}, {}});
  request.topics.push_back({"doubled", -1, -1, {{0, {kNodeId, kNodeId}}}, {}});
  request.topics.push_back({"nobody", -1, -1, {{0, {}}}, {}});
  request.topics.push_back({"zero", 0, 1, {}, {}});
  CreateTopicsResponse r = h.Call(ApiKey::kCreateTopics, 4, request, EncodeCreateTopicsRequest,
                                  DecodeCreateTopicsResponse);
  ASSERT_EQ(r.topics.size(), 4u);
  EXPECT_EQ(r.topics[0].name, "twice");
  EXPECT_EQ(r.topics[0].error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(r.topics[0].error_message, std::optional<std::string>("Duplicate topic name."));
  EXPECT_EQ(r.topics[1].error_code, ErrorCode::kInvalidReplicaAssignment);
  EXPECT_EQ(r.topics[1].error_message,
            std::optional<std::string>("The manual partition assignment includes the broker " +
                                       std::to_string(kNodeId) + " more than once."));
  EXPECT_EQ(r.topics[2].error_code, ErrorCode::kInvalidReplicaAssignment);
  EXPECT_EQ(r.topics[3].error_code, ErrorCode::kInvalidPartitions);
  EXPECT_EQ(
      r.topics[3].error_message,
      std::optional<std::string>("Number of partitions was set to an invalid non-positive value."));
  EXPECT_TRUE(DirNames(h.dir()).empty());
}

// Kafka's Topic.hasCollision: two names that differ only by '.' against '_'
// share their metric names, so the second one is refused, by CreateTopics
// and by auto-creation alike.
TEST(HandlerCreateTopics, ANameCollidingByDotOrUnderscoreIsRefused) {
  HandlerHarness h;
  ASSERT_EQ(h.CreateTopic("coll.ide", 1).topics.at(0).error_code, ErrorCode::kNone);
  CreateTopicsResponse r = h.CreateTopic("coll_ide", 1);
  EXPECT_EQ(r.topics.at(0).error_code, ErrorCode::kInvalidTopicException);
  EXPECT_EQ(r.topics[0].error_message.value_or(""),
            "Topic 'coll_ide' collides with existing topic: coll.ide");
  EXPECT_EQ(Metadata(h, std::vector<std::string>{"coll_ide"}, 4, true).topics.at(0).error_code,
            ErrorCode::kInvalidTopicException);
  EXPECT_FALSE(h.handler().topics().Find("coll_ide").has_value());
  EXPECT_EQ(h.CreateTopic("collide", 1).topics.at(0).error_code, ErrorCode::kNone);
  EXPECT_EQ(h.CreateTopic("coll.ide", 1).topics.at(0).error_code, ErrorCode::kTopicAlreadyExists);
}

TEST(HandlerCreateTopics, ValidateOnlyCreatesNothing) {
  HandlerHarness h;
  CreateTopicsRequest request;
  request.topics.push_back({"dry", 2, 1, {}, {}});
  request.validate_only = true;
  CreateTopicsResponse r = h.Call(ApiKey::kCreateTopics, 1, request, EncodeCreateTopicsRequest,
                                  DecodeCreateTopicsResponse);
  EXPECT_EQ(r.topics.at(0).error_code, ErrorCode::kNone);
  EXPECT_FALSE(h.handler().topics().Find("dry").has_value());
  EXPECT_TRUE(DirNames(h.dir()).empty());
}

TEST(HandlerDeleteTopics, DeletesRenamesAndReportsUnknown) {
  HandlerHarness h;
  h.CreateTopic("doomed", 2);
  h.Produce("doomed", 0, ClientBatch({"x"}));
  DeleteTopicsRequest request{.topic_names = {"doomed", "never"}, .timeout_ms = 1000};
  DeleteTopicsResponse r = h.Call(ApiKey::kDeleteTopics, 1, request, EncodeDeleteTopicsRequest,
                                  DecodeDeleteTopicsResponse);
  ASSERT_EQ(r.responses.size(), 2u);
  EXPECT_EQ(r.responses[0].name, "doomed");
  EXPECT_EQ(r.responses[0].error_code, ErrorCode::kNone);
  EXPECT_EQ(r.responses[1].error_code, ErrorCode::kUnknownTopicOrPartition);
  EXPECT_FALSE(h.handler().topics().Find("doomed").has_value());
  EXPECT_EQ(h.manager().GetLog({"doomed", 0}), nullptr);
  for (const std::string& name : DirNames(h.dir())) {
    EXPECT_NE(name, "doomed-0");
    EXPECT_TRUE(name.size() > 7 && name.substr(name.size() - 7) == "-delete") << name;
  }
  EXPECT_EQ(Metadata(h, std::vector<std::string>{"doomed"}, 4, false).topics.at(0).error_code,
            ErrorCode::kUnknownTopicOrPartition);
  EXPECT_EQ(h.Produce("doomed", 0, ClientBatch({"y"})).error_code,
            ErrorCode::kUnknownTopicOrPartition);
}

// A topic created again under a deleted one's name starts without the old
// topic's committed offsets (Kafka's onPartitionsDeleted), or a consumer
// group would skip the new topic's first messages.
TEST(HandlerDeleteTopics, TheTopicsCommittedOffsetsGoWithIt) {
  HandlerHarness h;
  h.CreateTopic("reborn", 1);
  h.CreateTopic("other", 1);
  OffsetCommitRequest commit;
  commit.group_id = "g";
  for (const std::string topic : {"reborn", "other"}) {
    OffsetCommitRequest::Topic t;
    t.name = topic;
    t.partitions.push_back({.partition_index = 0, .committed_offset = 7});
    commit.topics.push_back(t);
  }
  OffsetCommitResponse committed = h.Call(ApiKey::kOffsetCommit, 2, commit,
                                          EncodeOffsetCommitRequest, DecodeOffsetCommitResponse);
  ASSERT_EQ(committed.topics.size(), 2u);
  ASSERT_EQ(committed.topics[0].partitions.at(0).error_code, ErrorCode::kNone);
  DeleteTopicsResponse deleted =
      h.Call(ApiKey::kDeleteTopics, 1, DeleteTopicsRequest{.topic_names = {"reborn"}},
             EncodeDeleteTopicsRequest, DecodeDeleteTopicsResponse);
  ASSERT_EQ(deleted.responses.at(0).error_code, ErrorCode::kNone);
  h.CreateTopic("reborn", 1);
  OffsetFetchRequest fetch;
  fetch.group_id = "g";
  fetch.topics = std::vector<OffsetFetchRequest::Topic>{
      {.name = "reborn", .partition_indexes = {0}}, {.name = "other", .partition_indexes = {0}}};
  OffsetFetchResponse fetched =
      h.Call(ApiKey::kOffsetFetch, 1, fetch, EncodeOffsetFetchRequest, DecodeOffsetFetchResponse);
  ASSERT_EQ(fetched.topics.size(), 2u);
  EXPECT_EQ(fetched.topics[0].name, "reborn");
  EXPECT_EQ(fetched.topics[0].partitions.at(0).committed_offset, -1);
  EXPECT_EQ(fetched.topics[1].partitions.at(0).committed_offset, 7);
}

TEST(HandlerDeleteTopics, DisabledByConfig) {
  HandlerHarness h([](BrokerContext& ctx) { ctx.delete_topic_enable = false; });
  h.CreateTopic("kept", 1);
  DeleteTopicsResponse r = h.Call(ApiKey::kDeleteTopics, 0,
                                  DeleteTopicsRequest{.topic_names = {"kept"}, .timeout_ms = 1000},
                                  EncodeDeleteTopicsRequest, DecodeDeleteTopicsResponse);
  EXPECT_EQ(r.responses.at(0).error_code, ErrorCode::kTopicDeletionDisabled);
  EXPECT_TRUE(h.handler().topics().Find("kept").has_value());
}

TEST(HandlerDescribeConfigs, TopicConfigsWithSources) {
  HandlerHarness h;
  h.CreateTopic("t", 1, {{"retention.ms", "1000"}});
  DescribeConfigsRequest request;
  request.resources.push_back({kResourceTypeTopic, "t", std::nullopt});
  request.resources.push_back({kResourceTypeTopic, "missing", std::nullopt});
  request.resources.push_back({kResourceTypeTopic, "t", std::vector<std::string>{"segment.bytes"}});
  request.resources.push_back({8, "x", std::nullopt});
  DescribeConfigsResponse r = h.Call(ApiKey::kDescribeConfigs, 1, request,
                                     EncodeDescribeConfigsRequest, DecodeDescribeConfigsResponse);
  ASSERT_EQ(r.results.size(), 4u);
  EXPECT_EQ(r.results[0].error_code, ErrorCode::kNone);
  std::map<std::string, DescribeConfigsResponse::Config> by_name;
  for (const auto& c : r.results[0].configs) by_name[c.name] = c;
  ASSERT_TRUE(by_name.count("retention.ms"));
  EXPECT_EQ(by_name["retention.ms"].value, "1000");
  EXPECT_EQ(by_name["retention.ms"].config_source, int8_t(ConfigSource::kTopicConfig));
  EXPECT_FALSE(by_name["retention.ms"].read_only);
  EXPECT_EQ(by_name["segment.bytes"].value, "1073741824");
  EXPECT_EQ(by_name["segment.bytes"].config_source, int8_t(ConfigSource::kDefaultConfig));
  EXPECT_EQ(by_name["cleanup.policy"].value, "delete");
  EXPECT_EQ(by_name["max.message.bytes"].value, "1048588");
  EXPECT_EQ(by_name["message.timestamp.type"].value, "CreateTime");
  EXPECT_EQ(r.results[1].error_code, ErrorCode::kUnknownTopicOrPartition);
  ASSERT_EQ(r.results[2].configs.size(), 1u);
  EXPECT_EQ(r.results[2].configs[0].name, "segment.bytes");
  EXPECT_EQ(r.results[3].error_code, ErrorCode::kInvalidRequest);

  DescribeConfigsResponse v0 = h.Call(ApiKey::kDescribeConfigs, 0, request,
                                      EncodeDescribeConfigsRequest, DecodeDescribeConfigsResponse);
  for (const auto& c : v0.results.at(0).configs) {
    EXPECT_EQ(c.is_default, c.name != "retention.ms") << c.name;
  }
}

TEST(HandlerDescribeConfigs, BrokerConfigsAreAllListedWithTheirSources) {
  HandlerHarness h([](BrokerContext& ctx) {
    ctx.config.given = {{"log.retention.hours", "100"},
                        {"num.network.threads", "8"},
                        {"ssl.keystore.password", "hunter2"},
                        {"num.replica.alter.log.dirs.threads", "2"}};
  });
  DescribeConfigsRequest request;
  request.resources.push_back({kResourceTypeBroker, std::to_string(kNodeId), std::nullopt});
  request.resources.push_back(
      {kResourceTypeBroker, "", std::vector<std::string>{"log.segment.bytes"}});
  request.include_synonyms = true;
  DescribeConfigsResponse r = h.Call(ApiKey::kDescribeConfigs, 4, request,
                                     EncodeDescribeConfigsRequest, DecodeDescribeConfigsResponse);
  ASSERT_EQ(r.results.size(), 2u);
  ASSERT_EQ(r.results[0].error_code, ErrorCode::kNone);
  std::map<std::string, DescribeConfigsResponse::Config> by_name;
  for (const auto& c : r.results[0].configs) by_name[c.name] = c;
  EXPECT_GT(by_name.size(), 100u);
  auto source = [&](const std::string& name) { return by_name.at(name).config_source; };
  EXPECT_EQ(by_name.at("log.retention.hours").value, "100");
  EXPECT_EQ(source("log.retention.hours"), int8_t(ConfigSource::kStaticBrokerConfig));
  EXPECT_EQ(by_name.at("log.segment.bytes").value, "1073741824");
  EXPECT_EQ(source("log.segment.bytes"), int8_t(ConfigSource::kDefaultConfig));
  EXPECT_EQ(by_name.at("log.segment.bytes").config_type, int8_t(ConfigType::kInt));
  // No default: null, as Kafka describes log.retention.ms when unset.
  EXPECT_EQ(by_name.at("log.retention.ms").value, std::nullopt);
  EXPECT_EQ(by_name.at("num.network.threads").value, "8");
  // A secret is never returned.
  EXPECT_EQ(by_name.at("ssl.keystore.password").value, std::nullopt);
  EXPECT_TRUE(by_name.at("ssl.keystore.password").is_sensitive);
  // A Kafka key outside the table, set in server.properties.
  EXPECT_EQ(by_name.at("num.replica.alter.log.dirs.threads").value, "2");
  for (const auto& [name, c] : by_name) {
    EXPECT_TRUE(c.read_only) << name;
    ASSERT_EQ(c.synonyms.size(), 1u) << name;
  }
  ASSERT_EQ(r.results[1].configs.size(), 1u);
  EXPECT_EQ(r.results[1].configs[0].name, "log.segment.bytes");
}

TEST(HandlerDescribeConfigs, TopicConfigSynonymsFollowKafkasPrecedence) {
  HandlerHarness h([](BrokerContext& ctx) {
    ctx.config.given = {{"log.retention.hours", "100"}, {"log.segment.bytes", "1073741824"}};
    ctx.config.log.retention_ms = 100 * 3600000LL;
  });
  h.CreateTopic("t", 1, {{"cleanup.policy", "compact"}});
  DescribeConfigsRequest request;
  request.resources.push_back({kResourceTypeTopic, "t", std::nullopt});
  request.include_synonyms = true;
  DescribeConfigsResponse r = h.Call(ApiKey::kDescribeConfigs, 1, request,
                                     EncodeDescribeConfigsRequest, DecodeDescribeConfigsResponse);
  std::map<std::string, DescribeConfigsResponse::Config> by_name;
  for (const auto& c : r.results.at(0).configs) by_name[c.name] = c;
  using Synonym = DescribeConfigsResponse::Synonym;
  auto synonym = [](std::string name, std::string value, ConfigSource source) {
    return Synonym{.name = std::move(name), .value = std::move(value), .source = int8_t(source)};
  };
  const DescribeConfigsResponse::Config& retention = by_name.at("retention.ms");
  EXPECT_EQ(retention.value, "360000000");
  EXPECT_EQ(retention.config_source, int8_t(ConfigSource::kStaticBrokerConfig));
  EXPECT_EQ(retention.synonyms,
            (std::vector<Synonym>{
                synonym("log.retention.hours", "100", ConfigSource::kStaticBrokerConfig),
                synonym("log.retention.hours", "168", ConfigSource::kDefaultConfig)}));
  // Set in server.properties to Kafka's default: still its source.
  EXPECT_EQ(by_name.at("segment.bytes").config_source, int8_t(ConfigSource::kStaticBrokerConfig));
  const DescribeConfigsResponse::Config& policy = by_name.at("cleanup.policy");
  EXPECT_EQ(policy.synonyms,
            (std::vector<Synonym>{
                synonym("cleanup.policy", "compact", ConfigSource::kTopicConfig),
                synonym("log.cleanup.policy", "delete", ConfigSource::kDefaultConfig)}));
  EXPECT_EQ(by_name.at("segment.ms").synonyms,
            (std::vector<Synonym>{synonym("log.roll.hours", "168", ConfigSource::kDefaultConfig)}));
}

TEST(HandlerCreateTopics, MoreThanTenThousandNewPartitionsIsAPolicyViolation) {
  HandlerHarness h;
  CreateTopicsRequest request;
  request.topics.push_back({"huge", std::numeric_limits<int32_t>::max(), 1, {}, {}});
  request.topics.push_back({"small", 2, 1, {}, {}});
  request.topics.push_back({"rest", 9999, 1, {}, {}});  // 2 + 9,999 > 10,000
  CreateTopicsResponse r = h.Call(ApiKey::kCreateTopics, 4, request, EncodeCreateTopicsRequest,
                                  DecodeCreateTopicsResponse);
  ASSERT_EQ(r.topics.size(), 3u);
  EXPECT_EQ(r.topics[0].error_code, ErrorCode::kPolicyViolation);
  EXPECT_EQ(r.topics[0].error_message,
            std::optional<std::string>("Unable to perform excessively large batch operation."));
  EXPECT_EQ(r.topics[1].error_code, ErrorCode::kNone);
  EXPECT_EQ(r.topics[2].error_code, ErrorCode::kPolicyViolation);
  EXPECT_EQ(DirNames(h.dir()), (std::vector<std::string>{"small-0", "small-1"}));
  // The limit is per request: a validate-only request of 10,000 passes.
  CreateTopicsRequest dry;
  dry.topics.push_back({"dry", 10000, 1, {}, {}});
  dry.validate_only = true;
  EXPECT_EQ(
      h.Call(ApiKey::kCreateTopics, 4, dry, EncodeCreateTopicsRequest, DecodeCreateTopicsResponse)
          .topics.at(0)
          .error_code,
      ErrorCode::kNone);
}

TEST(HandlerListOffsets, PartitionNamedTwiceIsAnInvalidRequest) {
  HandlerHarness h;
  h.CreateTopic("t", 2);
  ListOffsetsRequest request;
  request.topics.push_back({"t", {{0, kListOffsetsLatest}, {1, kListOffsetsLatest}}});
  request.topics.push_back({"t", {{0, kListOffsetsEarliest}}});
  ListOffsetsResponse r =
      h.Call(ApiKey::kListOffsets, 2, request, EncodeListOffsetsRequest, DecodeListOffsetsResponse);
  ASSERT_EQ(r.topics.size(), 2u);
  EXPECT_EQ(r.topics[0].partitions.at(0).error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(r.topics[0].partitions.at(1).error_code, ErrorCode::kNone);
  EXPECT_EQ(r.topics[0].partitions.at(1).offset, 0);
  EXPECT_EQ(r.topics[1].partitions.at(0).error_code, ErrorCode::kInvalidRequest);
}

TEST(HandlerDispatch, FindCoordinatorNamesThisNodeForGroupsAndTransactions) {
  HandlerHarness h;
  for (int8_t type : {kCoordinatorKeyTypeGroup, kCoordinatorKeyTypeTransaction}) {
    FindCoordinatorResponse r =
        h.Call(ApiKey::kFindCoordinator, 2, FindCoordinatorRequest{"g", type},
               EncodeFindCoordinatorRequest, DecodeFindCoordinatorResponse);
    EXPECT_EQ(r.error_code, ErrorCode::kNone);
    EXPECT_FALSE(r.error_message.has_value());
    EXPECT_EQ(r.node_id, kNodeId);
    EXPECT_EQ(r.host, "broker.test");
    EXPECT_EQ(r.port, 19092);
  }
  FindCoordinatorResponse bad = h.Call(ApiKey::kFindCoordinator, 1, FindCoordinatorRequest{"g", 7},
                                       EncodeFindCoordinatorRequest, DecodeFindCoordinatorResponse);
  EXPECT_EQ(bad.error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(bad.node_id, -1);
  FindCoordinatorResponse v0 = h.Call(ApiKey::kFindCoordinator, 0, FindCoordinatorRequest{"g", 0},
                                      EncodeFindCoordinatorRequest, DecodeFindCoordinatorResponse);
  EXPECT_EQ(v0.node_id, kNodeId);
}

}  // namespace
}  // namespace daruma::broker::testing
