// RequestHandler at the versions a Kafka 3.9 / 4.0 broker advertises: topic
// ids (Metadata v10+, Fetch v13+, CreateTopics v7, DeleteTopics v6), batched
// FindCoordinator (v4+), the special ListOffsets timestamps (v7+), the
// CreateTopics v5+ description and DescribeConfigs' config types (v3+).
#include <gtest/gtest.h>

#include "broker/api_handlers.h"
#include "broker/handler_harness.h"
#include "log/partition_metadata_file.h"
#include "protocol/messages.h"

namespace daruma::broker::testing {
namespace {

// The id in the topic's partition.metadata, as the wire carries it.
WireUuid TopicIdOnDisk(HandlerHarness& h, const std::string& topic) {
  PartitionMetadataFile file(h.dir() + "/" + topic + "-0/" + kPartitionMetadataFileName);
  Result<PartitionMetadata> meta = file.Read();
  EXPECT_TRUE(meta.ok()) << meta.status().ToString();
  return meta.ok() ? meta->topic_id.bytes() : WireUuid{};
}

MetadataResponse MetadataOf(HandlerHarness& h, int16_t version,
                            std::vector<MetadataRequest::Topic> topics) {
  MetadataRequest request;
  request.topics = std::move(topics);
  request.allow_auto_topic_creation = false;
  return h.Call(ApiKey::kMetadata, version, request, EncodeMetadataRequest, DecodeMetadataResponse);
}

constexpr WireUuid kUnknownId = {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};

TEST(HandlerVersions, AdvertisesKafkasCurrentRanges) {
  struct Expect {
    ApiKey key;
    int16_t min, max;
  };
  for (Expect e : {Expect{ApiKey::kProduce, 0, 11}, Expect{ApiKey::kFetch, 4, 17},
                   Expect{ApiKey::kListOffsets, 1, 10}, Expect{ApiKey::kMetadata, 0, 12},
                   Expect{ApiKey::kFindCoordinator, 0, 6}, Expect{ApiKey::kApiVersions, 0, 4},
                   Expect{ApiKey::kCreateTopics, 0, 7}, Expect{ApiKey::kDeleteTopics, 0, 6},
                   Expect{ApiKey::kDescribeConfigs, 0, 4}}) {
    const ApiVersionRange* range = HandledVersions(e.key);
    ASSERT_NE(range, nullptr) << int(e.key);
    EXPECT_EQ(range->min, e.min) << int(e.key);
    EXPECT_EQ(range->max, e.max) << int(e.key);
  }
}

TEST(HandlerVersions, MetadataV10CarriesTheTopicIdOfPartitionMetadata) {
  HandlerHarness h;
  h.CreateTopic("t", 2);
  const WireUuid id = TopicIdOnDisk(h, "t");
  ASSERT_NE(id, WireUuid{});
  for (int16_t version : {10, 11, 12}) {
    MetadataResponse r = MetadataOf(h, version, {{.name = "t"}});
    ASSERT_EQ(r.topics.size(), 1u);
    EXPECT_EQ(r.topics[0].error_code, ErrorCode::kNone);
    EXPECT_EQ(r.topics[0].topic_id, id) << version;
    EXPECT_EQ(r.topics[0].partitions.size(), 2u);
  }
  // All topics carry their ids too.
  MetadataRequest all;
  MetadataResponse r =
      h.Call(ApiKey::kMetadata, 12, all, EncodeMetadataRequest, DecodeMetadataResponse);
  ASSERT_EQ(r.topics.size(), 1u);
  EXPECT_EQ(r.topics[0].topic_id, id);
}

TEST(HandlerVersions, MetadataV12LooksTopicsUpById) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  const WireUuid id = TopicIdOnDisk(h, "t");
  MetadataResponse r = MetadataOf(
      h, 12,
      {{.topic_id = id, .name = std::nullopt}, {.topic_id = kUnknownId, .name = std::nullopt}});
  ASSERT_EQ(r.topics.size(), 2u);
  EXPECT_EQ(r.topics[0].error_code, ErrorCode::kNone);
  EXPECT_EQ(r.topics[0].name, "t");
  EXPECT_EQ(r.topics[0].topic_id, id);
  EXPECT_EQ(r.topics[1].error_code, ErrorCode::kUnknownTopicId);
  EXPECT_EQ(r.topics[1].name, std::nullopt);
  EXPECT_EQ(r.topics[1].topic_id, kUnknownId);
}

TEST(HandlerVersions, MetadataBeforeV12RefusesIdsAndNullNames) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  for (int16_t version : {10, 11}) {
    MetadataResponse r = MetadataOf(h, version, {{.name = "t"}, {.name = std::nullopt}});
    EXPECT_TRUE(r.brokers.empty());
    ASSERT_EQ(r.topics.size(), 2u);
    EXPECT_EQ(r.topics[0].error_code, ErrorCode::kInvalidRequest);
    EXPECT_EQ(r.topics[1].error_code, ErrorCode::kInvalidRequest);
    EXPECT_EQ(r.topics[1].name, "");
  }
}

TEST(HandlerVersions, FetchV13ReadsByTopicId) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  const WireUuid id = TopicIdOnDisk(h, "t");
  ASSERT_EQ(h.Produce("t", 0, ClientBatch({"a", "b"}), 11).error_code, ErrorCode::kNone);
  for (int16_t version : {13, 15, 16, 17}) {
    FetchRequest request = HandlerHarness::FetchOne("", 0, 0);
    request.topics[0].topic_id = id;
    request.topics.push_back(request.topics[0]);
    request.topics[1].topic_id = kUnknownId;
    FetchResponse r =
        h.Call(ApiKey::kFetch, version, request, EncodeFetchRequest, DecodeFetchResponse);
    ASSERT_EQ(r.responses.size(), 2u);
    EXPECT_EQ(r.responses[0].topic_id, id);
    const FetchResponse::Partition& p = r.responses[0].partitions.at(0);
    EXPECT_EQ(p.error_code, ErrorCode::kNone) << version;
    EXPECT_EQ(p.high_watermark, 2);
    EXPECT_TRUE(p.records.has_value() && !p.records->empty());
    EXPECT_EQ(r.responses[1].topic_id, kUnknownId);
    EXPECT_EQ(r.responses[1].partitions.at(0).error_code, ErrorCode::kUnknownTopicId);
  }
}

TEST(HandlerVersions, FetchV15FromAReplicaIsRefusedLikeV14) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  FetchRequest request = HandlerHarness::FetchOne("", 0, 0);
  request.topics[0].topic_id = TopicIdOnDisk(h, "t");
  request.replica_state.replica_id = 2;
  FetchResponse r = h.Call(ApiKey::kFetch, 15, request, EncodeFetchRequest, DecodeFetchResponse);
  EXPECT_EQ(r.responses.at(0).partitions.at(0).error_code, ErrorCode::kNotLeaderOrFollower);
}

TEST(HandlerVersions, FindCoordinatorV4AnswersEveryKey) {
  HandlerHarness h;
  for (int16_t version : {4, 5, 6}) {
    FindCoordinatorRequest request;
    request.key_type = kCoordinatorKeyTypeGroup;
    request.coordinator_keys = {"g1", "g2"};
    FindCoordinatorResponse r = h.Call(ApiKey::kFindCoordinator, version, request,
                                       EncodeFindCoordinatorRequest, DecodeFindCoordinatorResponse);
    ASSERT_EQ(r.coordinators.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(r.coordinators[i].key, request.coordinator_keys[i]);
      EXPECT_EQ(r.coordinators[i].error_code, ErrorCode::kNone);
      EXPECT_EQ(r.coordinators[i].node_id, kNodeId);
      EXPECT_EQ(r.coordinators[i].host, "broker.test");
      EXPECT_EQ(r.coordinators[i].port, 19092);
    }
  }
  FindCoordinatorRequest share;
  share.key_type = 2;
  share.coordinator_keys = {"s"};
  FindCoordinatorResponse r = h.Call(ApiKey::kFindCoordinator, 6, share,
                                     EncodeFindCoordinatorRequest, DecodeFindCoordinatorResponse);
  ASSERT_EQ(r.coordinators.size(), 1u);
  EXPECT_EQ(r.coordinators[0].error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(r.coordinators[0].node_id, -1);
}

TEST(HandlerVersions, CreateTopicsV7DescribesWhatItCreated) {
  HandlerHarness h;
  CreateTopicsRequest request;
  request.topics.push_back({"t", 3, 1, {}, {{"retention.ms", "1000"}}});
  CreateTopicsResponse r = h.Call(ApiKey::kCreateTopics, 7, request, EncodeCreateTopicsRequest,
                                  DecodeCreateTopicsResponse);
  ASSERT_EQ(r.topics.size(), 1u);
  const CreateTopicsResponse::Topic& t = r.topics[0];
  EXPECT_EQ(t.error_code, ErrorCode::kNone);
  EXPECT_EQ(t.topic_id, TopicIdOnDisk(h, "t"));
  EXPECT_EQ(t.num_partitions, 3);
  EXPECT_EQ(t.replication_factor, 1);
  ASSERT_TRUE(t.configs.has_value());
  bool retention = false;
  for (const auto& c : *t.configs) {
    if (c.name != "retention.ms") continue;
    retention = true;
    EXPECT_EQ(c.value, "1000");
    EXPECT_EQ(c.config_source, int8_t(ConfigSource::kTopicConfig));
  }
  EXPECT_TRUE(retention);

  // validateOnly: described, no id (nothing was created).
  request.topics[0].name = "u";
  request.validate_only = true;
  r = h.Call(ApiKey::kCreateTopics, 5, request, EncodeCreateTopicsRequest,
             DecodeCreateTopicsResponse);
  EXPECT_EQ(r.topics.at(0).error_code, ErrorCode::kNone);
  EXPECT_EQ(r.topics.at(0).num_partitions, 3);
  EXPECT_TRUE(r.topics.at(0).configs.has_value());

  // A failure is not described.
  request.validate_only = false;
  request.topics[0].name = "t";
  r = h.Call(ApiKey::kCreateTopics, 7, request, EncodeCreateTopicsRequest,
             DecodeCreateTopicsResponse);
  EXPECT_EQ(r.topics.at(0).error_code, ErrorCode::kTopicAlreadyExists);
  EXPECT_EQ(r.topics.at(0).num_partitions, -1);
  EXPECT_EQ(r.topics.at(0).topic_id, WireUuid{});
}

TEST(HandlerVersions, DeleteTopicsV6ByIdOrName) {
  HandlerHarness h;
  h.CreateTopic("a", 1);
  h.CreateTopic("b", 1);
  const WireUuid a = TopicIdOnDisk(h, "a");
  const WireUuid b = TopicIdOnDisk(h, "b");
  DeleteTopicsRequest request;
  request.topics = {{.name = std::nullopt, .topic_id = a},
                    {.name = "b", .topic_id = WireUuid{}},
                    {.name = std::nullopt, .topic_id = kUnknownId},
                    {.name = "x", .topic_id = kUnknownId}};
  DeleteTopicsResponse r = h.Call(ApiKey::kDeleteTopics, 6, request, EncodeDeleteTopicsRequest,
                                  DecodeDeleteTopicsResponse);
  ASSERT_EQ(r.responses.size(), 4u);
  EXPECT_EQ(r.responses[0].error_code, ErrorCode::kNone);
  EXPECT_EQ(r.responses[0].name, "a");
  EXPECT_EQ(r.responses[1].error_code, ErrorCode::kNone);
  EXPECT_EQ(r.responses[1].topic_id, b);
  EXPECT_EQ(r.responses[2].error_code, ErrorCode::kUnknownTopicId);
  EXPECT_EQ(r.responses[3].error_code, ErrorCode::kInvalidRequest);
  MetadataRequest all;
  MetadataResponse m =
      h.Call(ApiKey::kMetadata, 12, all, EncodeMetadataRequest, DecodeMetadataResponse);
  EXPECT_TRUE(m.topics.empty());
}

ListOffsetsResponse::Partition ListPartitionOffset(HandlerHarness& h, int64_t timestamp,
                                                   int16_t version) {
  ListOffsetsRequest request;
  request.topics.push_back({"t", {{.partition_index = 0, .timestamp = timestamp}}});
  ListOffsetsResponse r = h.Call(ApiKey::kListOffsets, version, request, EncodeListOffsetsRequest,
                                 DecodeListOffsetsResponse);
  return r.topics.at(0).partitions.at(0);
}

TEST(HandlerVersions, ListOffsetsSpecialTimestamps) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  EXPECT_EQ(ListPartitionOffset(h, kListOffsetsMaxTimestamp, 7).offset, -1);  // empty log
  ASSERT_EQ(h.Produce("t", 0, ClientBatch({"a", "b"}, 5000)).error_code, ErrorCode::kNone);
  ASSERT_EQ(h.Produce("t", 0, ClientBatch({"c", "d"}, 9000)).error_code, ErrorCode::kNone);
  ASSERT_EQ(h.Produce("t", 0, ClientBatch({"e"}, 7000)).error_code, ErrorCode::kNone);
  for (int16_t version : {7, 8, 9, 10}) {
    // The first record with the largest timestamp: offset 2 (c, 9000).
    ListOffsetsResponse::Partition max = ListPartitionOffset(h, kListOffsetsMaxTimestamp, version);
    EXPECT_EQ(max.error_code, ErrorCode::kNone);
    EXPECT_EQ(max.offset, 2) << version;
    EXPECT_EQ(max.timestamp, 9000);
  }
  EXPECT_EQ(ListPartitionOffset(h, kListOffsetsEarliestLocal, 8).offset, 0);
  EXPECT_EQ(ListPartitionOffset(h, kListOffsetsLatestTiered, 9).offset, -1);
  EXPECT_EQ(ListPartitionOffset(h, kListOffsetsLatestTiered, 9).error_code, ErrorCode::kNone);
  // Below the version that knows it, or known by none: UNSUPPORTED_VERSION
  // for that partition, as Kafka answers (ReplicaManager).
  EXPECT_EQ(ListPartitionOffset(h, -7, 10).error_code, ErrorCode::kUnsupportedVersion);
  EXPECT_EQ(ListPartitionOffset(h, kListOffsetsMaxTimestamp, 6).error_code,
            ErrorCode::kUnsupportedVersion);
  EXPECT_EQ(ListPartitionOffset(h, kListOffsetsEarliestLocal, 7).error_code,
            ErrorCode::kUnsupportedVersion);
  ListOffsetsResponse::Partition tiered = ListPartitionOffset(h, kListOffsetsLatestTiered, 8);
  EXPECT_EQ(tiered.error_code, ErrorCode::kUnsupportedVersion);
  EXPECT_EQ(tiered.offset, -1);
  EXPECT_EQ(ListPartitionOffset(h, kListOffsetsEarliest, 1).error_code, ErrorCode::kNone);
}

TEST(HandlerVersions, DescribeConfigsV3ReportsConfigTypes) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  DescribeConfigsRequest request;
  DescribeConfigsRequest::Resource resource;
  resource.resource_type = kResourceTypeTopic;
  resource.resource_name = "t";
  resource.configuration_keys =
      std::vector<std::string>{"retention.ms", "cleanup.policy", "preallocate",
                               "min.cleanable.dirty.ratio", "compression.type"};
  request.resources.push_back(std::move(resource));
  DescribeConfigsResponse r = h.Call(ApiKey::kDescribeConfigs, 4, request,
                                     EncodeDescribeConfigsRequest, DecodeDescribeConfigsResponse);
  std::map<std::string, int8_t> types;
  for (const auto& c : r.results.at(0).configs) types[c.name] = c.config_type;
  EXPECT_EQ(types["retention.ms"], int8_t(ConfigType::kLong));
  EXPECT_EQ(types["cleanup.policy"], int8_t(ConfigType::kList));
  EXPECT_EQ(types["preallocate"], int8_t(ConfigType::kBoolean));
  EXPECT_EQ(types["min.cleanable.dirty.ratio"], int8_t(ConfigType::kDouble));
  EXPECT_EQ(types["compression.type"], int8_t(ConfigType::kString));
}

}  // namespace
}  // namespace daruma::broker::testing
