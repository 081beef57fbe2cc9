// Every request and response of the eight APIs round-trips at every
// advertised version: encode -> decode consumes every byte and yields an equal
// struct -> re-encode yields the same bytes. Sample values set only the fields
// that exist in the version (absent fields keep their schema defaults).
#include <gtest/gtest.h>

#include "protocol/api_keys.h"
#include "protocol/messages.h"
#include "protocol_test_util.h"

namespace daruma {
namespace {

using testing::ExpectRoundTrip;

// Runs `body(version)` for every advertised version of `key`.
template <typename Body>
void ForEachVersion(ApiKey key, Body body) {
  const ApiVersionRange* range = FindAdvertisedApi(key);
  ASSERT_NE(range, nullptr);
  for (int16_t v = range->min; v <= range->max; ++v) body(v);
}

TEST(ProtocolRoundTripTest, ApiVersions) {
  ForEachVersion(ApiKey::kApiVersions, [](int16_t v) {
    ApiVersionsRequest req;
    if (v >= 3) {
      req.client_software_name = "librdkafka";
      req.client_software_version = "2.0.2";
    }
    ExpectRoundTrip(req, v, EncodeApiVersionsRequest, DecodeApiVersionsRequest);

    ApiVersionsResponse resp;
    resp.api_keys = AdvertisedApiKeys();
    if (v >= 1) resp.throttle_time_ms = 17;
    ExpectRoundTrip(resp, v, EncodeApiVersionsResponse, DecodeApiVersionsResponse);
    resp.error_code = ErrorCode::kUnsupportedVersion;
    resp.api_keys.clear();
    ExpectRoundTrip(resp, v, EncodeApiVersionsResponse, DecodeApiVersionsResponse);
  });
}

TEST(ProtocolRoundTripTest, Metadata) {
  ForEachVersion(ApiKey::kMetadata, [](int16_t v) {
    MetadataRequest req;
    req.topics = std::vector<MetadataRequest::Topic>{{.name = "orders"}, {.name = "a"}};
    if (v >= 4) req.allow_auto_topic_creation = false;
    ExpectRoundTrip(req, v, EncodeMetadataRequest, DecodeMetadataRequest);
    ExpectRoundTrip(MetadataRequest{}, v, EncodeMetadataRequest, DecodeMetadataRequest);
    if (v >= 1) {
      req.topics = std::vector<MetadataRequest::Topic>{};  // "no topics" only exists from v1
      ExpectRoundTrip(req, v, EncodeMetadataRequest, DecodeMetadataRequest);
    }

    MetadataResponse resp;
    if (v >= 3) resp.throttle_time_ms = 3;
    resp.brokers.push_back({1, "localhost", 9092, std::nullopt});
    if (v >= 1) resp.brokers.push_back({2, "h2", 9093, std::string("rack-a")});
    if (v >= 2) resp.cluster_id = "AAAAAAAAAAAAAAAAAAAAAA";
    if (v >= 1) resp.controller_id = 1;
    MetadataResponse::Topic t;
    t.name = "orders";
    t.is_internal = v >= 1;
    t.partitions.push_back({.error_code = ErrorCode::kNone,
                            .partition_index = 0,
                            .leader_id = 1,
                            .replica_nodes = {1},
                            .isr_nodes = {1}});
    t.partitions.push_back(
        {.error_code = ErrorCode::kLeaderNotAvailable, .partition_index = 1, .leader_id = -1});
    resp.topics.push_back(t);
    resp.topics.push_back({.error_code = ErrorCode::kUnknownTopicOrPartition, .name = "gone"});
    ExpectRoundTrip(resp, v, EncodeMetadataResponse, DecodeMetadataResponse);
  });
}

TEST(ProtocolRoundTripTest, Produce) {
  const Bytes batch = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  ForEachVersion(ApiKey::kProduce, [&](int16_t v) {
    ProduceRequest req;
    if (v >= 3) req.transactional_id = "txn-1";
    req.acks = -1;
    req.timeout_ms = 30000;
    req.topic_data.push_back({"t", {{0, ByteSpan(batch)}, {1, std::nullopt}, {2, ByteSpan()}}});
    req.topic_data.push_back({"u", {}});
    ExpectRoundTrip(req, v, EncodeProduceRequest, DecodeProduceRequest);

    ProduceResponse resp;
    ProduceResponse::Partition ok{0, ErrorCode::kNone, 42, -1, -1};
    if (v >= 2) ok.log_append_time_ms = 1700000000000;
    if (v >= 5) ok.log_start_offset = 3;
    resp.responses.push_back({"t", {ok, {1, ErrorCode::kCorruptMessage, -1, -1, -1}}});
    if (v >= 1) resp.throttle_time_ms = 0;
    ExpectRoundTrip(resp, v, EncodeProduceResponse, DecodeProduceResponse);
  });
}

TEST(ProtocolRoundTripTest, Fetch) {
  ForEachVersion(ApiKey::kFetch, [](int16_t v) {
    FetchRequest req;
    req.max_wait_ms = 500;
    req.min_bytes = 1;
    req.max_bytes = 52428800;
    req.isolation_level = 1;
    if (v >= 7) {
      req.session_id = 0;
      req.session_epoch = -1;
    }
    FetchRequest::Partition p{.partition = 0,
                              .current_leader_epoch = -1,
                              .fetch_offset = 100,
                              .log_start_offset = -1,
                              .partition_max_bytes = 1048576};
    if (v >= 9) p.current_leader_epoch = 0;
    if (v >= 5) p.log_start_offset = 7;
    req.topics.push_back({.topic = "t",
                          .partitions = {p,
                                         {.partition = 1,
                                          .current_leader_epoch = -1,
                                          .fetch_offset = 0,
                                          .log_start_offset = -1,
                                          .partition_max_bytes = 10}}});
    if (v >= 7) req.forgotten_topics_data.push_back({.topic = "old", .partitions = {0, 2}});
    if (v >= 11) req.rack_id = "rack-a";
    if (v >= 13) {  // topics by id, no names
      req.topics[0].topic.clear();
      req.topics[0].topic_id = WireUuid{1, 2, 3};
      req.forgotten_topics_data[0].topic.clear();
      req.forgotten_topics_data[0].topic_id = WireUuid{4, 5, 6};
    }
    ExpectRoundTrip(req, v, EncodeFetchRequest, DecodeFetchRequest);

    FetchResponse resp;
    resp.throttle_time_ms = 0;
    if (v >= 7) {
      resp.error_code = ErrorCode::kNone;
      resp.session_id = 0;
    }
    FetchResponse::Partition data;
    data.partition_index = 0;
    data.high_watermark = 10;
    data.last_stable_offset = 9;
    if (v >= 5) data.log_start_offset = 0;
    data.aborted_transactions = std::vector<FetchResponse::AbortedTransaction>{{5, 3}, {6, 4}};
    if (v >= 11) data.preferred_read_replica = -1;
    data.records = Bytes{1, 2, 3};
    FetchResponse::Partition empty;
    empty.partition_index = 1;
    empty.error_code = ErrorCode::kOffsetOutOfRange;
    FetchResponse::Partition null_records;
    null_records.partition_index = 2;
    null_records.records = std::nullopt;
    resp.responses.push_back({.topic = "t", .partitions = {data, empty, null_records}});
    if (v >= 13) {
      resp.responses[0].topic.clear();
      resp.responses[0].topic_id = WireUuid{1, 2, 3};
    }
    ExpectRoundTrip(resp, v, EncodeFetchResponse, DecodeFetchResponse);
  });
}

TEST(ProtocolRoundTripTest, ListOffsets) {
  ForEachVersion(ApiKey::kListOffsets, [](int16_t v) {
    ListOffsetsRequest req;
    if (v >= 2) req.isolation_level = 1;
    req.topics.push_back({"t",
                          {{.partition_index = 0, .timestamp = kListOffsetsEarliest},
                           {.partition_index = 1, .timestamp = kListOffsetsLatest},
                           {.partition_index = 2, .timestamp = 1234}}});
    ExpectRoundTrip(req, v, EncodeListOffsetsRequest, DecodeListOffsetsRequest);

    ListOffsetsResponse resp;
    if (v >= 2) resp.throttle_time_ms = 1;
    resp.topics.push_back(
        {"t",
         {{.partition_index = 0, .error_code = ErrorCode::kNone, .timestamp = -1, .offset = 0},
          {.partition_index = 1, .error_code = ErrorCode::kNone, .timestamp = 1234, .offset = 17},
          {.partition_index = 9,
           .error_code = ErrorCode::kUnknownTopicOrPartition,
           .timestamp = -1,
           .offset = -1}}});
    ExpectRoundTrip(resp, v, EncodeListOffsetsResponse, DecodeListOffsetsResponse);
  });
}

TEST(ProtocolRoundTripTest, CreateTopics) {
  ForEachVersion(ApiKey::kCreateTopics, [](int16_t v) {
    CreateTopicsRequest req;
    CreateTopicsRequest::Topic t;
    t.name = "new";
    t.num_partitions = 3;
    t.replication_factor = 1;
    t.configs = {{"cleanup.policy", std::string("compact")}, {"retention.ms", std::nullopt}};
    CreateTopicsRequest::Topic manual;
    manual.name = "manual";
    manual.assignments = {{0, {1}}, {1, {1}}};
    req.topics = {t, manual};
    req.timeout_ms = 5000;
    if (v >= 1) req.validate_only = true;
    ExpectRoundTrip(req, v, EncodeCreateTopicsRequest, DecodeCreateTopicsRequest);

    CreateTopicsResponse resp;
    if (v >= 2) resp.throttle_time_ms = 2;
    CreateTopicsResponse::Topic failed{.name = "dup", .error_code = ErrorCode::kTopicAlreadyExists};
    if (v >= 1) failed.error_message = "Topic 'dup' already exists.";
    resp.topics = {{.name = "new", .error_code = ErrorCode::kNone}, failed};
    ExpectRoundTrip(resp, v, EncodeCreateTopicsResponse, DecodeCreateTopicsResponse);
  });
}

TEST(ProtocolRoundTripTest, DeleteTopics) {
  ForEachVersion(ApiKey::kDeleteTopics, [](int16_t v) {
    DeleteTopicsRequest req{.topic_names = {"a", "bb"}, .timeout_ms = 30000};
    if (v >= 6) {  // by name or by id
      req.topic_names.clear();
      req.topics = {{.name = "a", .topic_id = WireUuid{}},
                    {.name = std::nullopt, .topic_id = WireUuid{7, 7}}};
    }
    ExpectRoundTrip(req, v, EncodeDeleteTopicsRequest, DecodeDeleteTopicsRequest);

    DeleteTopicsResponse resp;
    if (v >= 1) resp.throttle_time_ms = 4;
    resp.responses = {{.name = "a", .error_code = ErrorCode::kNone},
                      {.name = "bb", .error_code = ErrorCode::kUnknownTopicOrPartition}};
    ExpectRoundTrip(resp, v, EncodeDeleteTopicsResponse, DecodeDeleteTopicsResponse);
  });
}

TEST(ProtocolRoundTripTest, DescribeConfigs) {
  ForEachVersion(ApiKey::kDescribeConfigs, [](int16_t v) {
    DescribeConfigsRequest req;
    req.resources.push_back({kResourceTypeTopic, "t", std::nullopt});
    req.resources.push_back(
        {kResourceTypeBroker, "1", std::vector<std::string>{"log.retention.ms"}});
    if (v >= 1) req.include_synonyms = true;
    ExpectRoundTrip(req, v, EncodeDescribeConfigsRequest, DecodeDescribeConfigsRequest);

    DescribeConfigsResponse resp;
    resp.throttle_time_ms = 0;
    DescribeConfigsResponse::Config c;
    c.name = "cleanup.policy";
    c.value = "delete";
    c.read_only = false;
    if (v == 0) c.is_default = true;
    if (v >= 1) {
      c.config_source = int8_t(ConfigSource::kDefaultConfig);
      c.synonyms = {
          {"log.cleanup.policy", std::string("delete"), int8_t(ConfigSource::kDefaultConfig)}};
    }
    DescribeConfigsResponse::Config secret;
    secret.name = "password";
    secret.is_sensitive = true;
    resp.results.push_back({ErrorCode::kNone, std::nullopt, kResourceTypeTopic, "t", {c, secret}});
    resp.results.push_back({ErrorCode::kUnknownTopicOrPartition,
                            std::string("no such topic"),
                            kResourceTypeTopic,
                            "gone",
                            {}});
    ExpectRoundTrip(resp, v, EncodeDescribeConfigsResponse, DecodeDescribeConfigsResponse);
  });
}

}  // namespace
}  // namespace daruma
