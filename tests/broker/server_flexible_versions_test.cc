// Every flexible version of the nine APIs the broker answers, over a real
// socket to a running Broker. The requests are built here byte by byte from
// Kafka's message definitions (compact strings and arrays as unsigned varints
// of length + 1, a tagged-field section after every struct, request header
// v2), not with the generated encoders, so a generator bug that is symmetric
// in Read and Write cannot hide: the broker must understand these bytes. The
// answers are checked for response header v1 (v0 for ApiVersions), decoded,
// consumed to the last byte and asserted on.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "broker/api_handlers.h"
#include "broker/broker.h"
#include "chaos_client.h"
#include "handler_harness.h"
#include "protocol/messages.h"
#include "server_test_util.h"
#include "support/test_support.h"

namespace daruma::broker {
namespace {

using testing::ChaosSocket;
using testing::Eventually;

// Kafka's wire primitives, written by hand.
class Wire {
 public:
  Wire& I8(int8_t v) { return Raw({uint8_t(v)}); }
  Wire& I16(int16_t v) { return Raw({uint8_t(uint16_t(v) >> 8), uint8_t(v)}); }
  Wire& I32(int32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes_.push_back(uint8_t(uint32_t(v) >> shift));
    return *this;
  }
  Wire& I64(int64_t v) {
    for (int shift = 56; shift >= 0; shift -= 8) bytes_.push_back(uint8_t(uint64_t(v) >> shift));
    return *this;
  }
  Wire& Uvarint(uint32_t v) {
    while (v >= 0x80) {
      bytes_.push_back(uint8_t(v | 0x80));
      v >>= 7;
    }
    bytes_.push_back(uint8_t(v));
    return *this;
  }
  Wire& CompactString(const std::string& s) {
    Uvarint(uint32_t(s.size() + 1));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  Wire& CompactNull() { return Uvarint(0); }
  Wire& CompactArray(uint32_t count) { return Uvarint(count + 1); }
  Wire& CompactBytes(const Bytes& b) {
    Uvarint(uint32_t(b.size() + 1));
    bytes_.insert(bytes_.end(), b.begin(), b.end());
    return *this;
  }
  Wire& Uuid16(const WireUuid& id) {
    bytes_.insert(bytes_.end(), id.begin(), id.end());
    return *this;
  }
  Wire& NoTags() { return Uvarint(0); }
  Wire& Raw(std::initializer_list<uint8_t> b) {
    bytes_.insert(bytes_.end(), b);
    return *this;
  }
  const Bytes& bytes() const { return bytes_; }

 private:
  Bytes bytes_;
};

// Size prefix, request header v2 (key, version, correlation id, nullable
// int16-length client id, tags), then the body.
Bytes Frame(ApiKey key, int16_t version, int32_t correlation_id, const Wire& body) {
  Wire header;
  header.I16(int16_t(key)).I16(version).I32(correlation_id).I16(4).Raw({'r', 'a', 'w', '!'});
  header.NoTags();
  Wire frame;
  frame.I32(int32_t(header.bytes().size() + body.bytes().size()));
  Bytes out = frame.bytes();
  out.insert(out.end(), header.bytes().begin(), header.bytes().end());
  out.insert(out.end(), body.bytes().begin(), body.bytes().end());
  return out;
}

class ServerFlexibleVersions : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new daruma::testing::TempDir();
    BrokerOptions o;
    o.config.log_dirs = {dir_->path() + "/data"};
    o.settings.kafka_listener = {"127.0.0.1", 0};
    o.settings.http_listener = {"127.0.0.1", 0};
    o.handle_signals = false;
    broker_ = new Broker(std::move(o));
    run_ = new std::future<Status>(std::async(std::launch::async, [] { return broker_->Run(); }));
    ASSERT_TRUE(Eventually([] { return broker_->state() == BrokerState::kServing; }, 20000));
  }
  static void TearDownTestSuite() {
    broker_->RequestStop();
    EXPECT_EQ(run_->wait_for(std::chrono::seconds(20)), std::future_status::ready);
    EXPECT_TRUE(run_->get().ok());
    delete run_;
    delete broker_;
    delete dir_;
  }

  // Sends the frame and decodes the answer with `decode`: the header must be
  // v1 (a correlation id and an empty tag section; v0 for ApiVersions) and
  // the body must be consumed exactly.
  template <typename Decode>
  auto Exchange(ApiKey key, int16_t version, const Wire& body, Decode decode) {
    ChaosSocket socket(broker_->kafka_port());
    const int32_t correlation_id = 1000 + version;
    EXPECT_TRUE(socket.Send(Frame(key, version, correlation_id, body)));
    std::optional<Bytes> frame = socket.ReceiveFrame();
    EXPECT_TRUE(frame.has_value()) << ApiKeyName(key) << " v" << version << ": no answer";
    Bytes bytes = frame.value_or(Bytes(5, 0));
    ProtocolReader reader{ByteSpan(bytes)};
    EXPECT_EQ(reader.ReadInt32("correlation_id"), correlation_id);
    if (key != ApiKey::kApiVersions) {
      EXPECT_EQ(reader.ReadUnsignedVarint("header tags"), 0u) << ApiKeyName(key);
    }
    auto decoded = decode(reader, version);
    EXPECT_TRUE(decoded.ok()) << ApiKeyName(key) << " v" << version << ": "
                              << decoded.status().ToString();
    EXPECT_EQ(reader.remaining(), 0u) << ApiKeyName(key) << " v" << version;
    return std::move(decoded).value();
  }

  void CreateTopic(const std::string& name, int16_t version = 5) {
    Wire body;
    body.CompactArray(1).CompactString(name).I32(1).I16(1);
    body.CompactArray(0).CompactArray(0).NoTags();  // assignments, configs
    body.I32(30000).I8(0).NoTags();                 // timeout, validate only
    CreateTopicsResponse r =
        Exchange(ApiKey::kCreateTopics, version, body, DecodeCreateTopicsResponse);
    ASSERT_EQ(r.topics.size(), 1u);
    EXPECT_EQ(r.topics[0].error_code, ErrorCode::kNone) << name;
  }

  // The topic id as Metadata v12 reports it.
  WireUuid TopicId(const std::string& name) {
    Wire body;
    body.CompactArray(1).Uuid16({}).CompactString(name).NoTags();
    body.I8(0).I8(0).NoTags();
    MetadataResponse r = Exchange(ApiKey::kMetadata, 12, body, DecodeMetadataResponse);
    return r.topics.at(0).topic_id;
  }

  static daruma::testing::TempDir* dir_;
  static Broker* broker_;
  static std::future<Status>* run_;
};

daruma::testing::TempDir* ServerFlexibleVersions::dir_ = nullptr;
Broker* ServerFlexibleVersions::broker_ = nullptr;
std::future<Status>* ServerFlexibleVersions::run_ = nullptr;

TEST_F(ServerFlexibleVersions, ApiVersionsV3AndV4) {
  for (int16_t version : {3, 4}) {
    Wire body;
    body.CompactString("raw-test").CompactString("1.0").NoTags();
    ApiVersionsResponse r =
        Exchange(ApiKey::kApiVersions, version, body, DecodeApiVersionsResponse);
    EXPECT_EQ(r.error_code, ErrorCode::kNone);
    EXPECT_EQ(r.api_keys, HandledApiKeys());
  }
}

TEST_F(ServerFlexibleVersions, CreateTopicsV5ToV7) {
  for (int16_t version : {5, 6, 7}) {
    const std::string name = "create-v" + std::to_string(version);
    Wire body;
    body.CompactArray(1).CompactString(name).I32(2).I16(1).CompactArray(0);
    body.CompactArray(1).CompactString("retention.ms").CompactString("60000").NoTags();
    body.NoTags().I32(30000).I8(0).NoTags();
    CreateTopicsResponse r =
        Exchange(ApiKey::kCreateTopics, version, body, DecodeCreateTopicsResponse);
    ASSERT_EQ(r.topics.size(), 1u);
    EXPECT_EQ(r.topics[0].name, name);
    EXPECT_EQ(r.topics[0].error_code, ErrorCode::kNone);
    EXPECT_EQ(r.topics[0].num_partitions, 2);
    EXPECT_EQ(r.topics[0].replication_factor, 1);
    ASSERT_TRUE(r.topics[0].configs.has_value());
    EXPECT_EQ(r.topics[0].topic_id != WireUuid{}, version >= 7);
  }
}

TEST_F(ServerFlexibleVersions, MetadataV9ToV12) {
  CreateTopic("meta");
  for (int16_t version : {9, 10, 11, 12}) {
    Wire body;
    body.CompactArray(1);
    if (version >= 10) body.Uuid16({});
    body.CompactString("meta").NoTags();
    body.I8(0);                     // allow auto-creation
    if (version <= 10) body.I8(0);  // cluster authorized operations
    body.I8(0).NoTags();            // topic authorized operations
    MetadataResponse r = Exchange(ApiKey::kMetadata, version, body, DecodeMetadataResponse);
    ASSERT_EQ(r.brokers.size(), 1u);
    EXPECT_EQ(r.brokers[0].port, broker_->kafka_port());
    ASSERT_EQ(r.topics.size(), 1u);
    EXPECT_EQ(r.topics[0].error_code, ErrorCode::kNone);
    EXPECT_EQ(r.topics[0].partitions.size(), 1u);
    EXPECT_EQ(r.topics[0].topic_id != WireUuid{}, version >= 10);
  }
}

TEST_F(ServerFlexibleVersions, ProduceV9ToV11FetchV12ToV17) {
  CreateTopic("pf");
  const WireUuid id = TopicId("pf");
  const Bytes batch = testing::ClientBatch({"one", "two"});
  int64_t expected_base = 0;
  for (int16_t version : {9, 10, 11}) {
    Wire body;
    body.CompactNull().I16(-1).I32(30000);  // transactional id, acks, timeout
    body.CompactArray(1).CompactString("pf");
    body.CompactArray(1).I32(0).CompactBytes(batch).NoTags();
    body.NoTags().NoTags();
    ProduceResponse r = Exchange(ApiKey::kProduce, version, body, DecodeProduceResponse);
    const ProduceResponse::Partition& p = r.responses.at(0).partition_responses.at(0);
    EXPECT_EQ(p.error_code, ErrorCode::kNone) << version;
    EXPECT_EQ(p.base_offset, expected_base);
    expected_base += 2;
  }
  for (int16_t version : {12, 13, 14, 15, 16, 17}) {
    Wire body;
    if (version <= 14) body.I32(-1);        // replica id
    body.I32(0).I32(1).I32(1 << 20).I8(0);  // max wait, min/max bytes, isolation
    body.I32(0).I32(-1);                    // session id, epoch
    body.CompactArray(1);
    if (version <= 12) {
      body.CompactString("pf");
    } else {
      body.Uuid16(id);
    }
    body.CompactArray(1).I32(0).I32(-1).I64(2).I32(-1).I64(-1).I32(1 << 20).NoTags();
    body.NoTags();
    body.CompactArray(0).CompactString("").NoTags();  // forgotten topics, rack
    FetchResponse r = Exchange(ApiKey::kFetch, version, body, DecodeFetchResponse);
    EXPECT_EQ(r.error_code, ErrorCode::kNone);
    ASSERT_EQ(r.responses.size(), 1u);
    EXPECT_EQ(r.responses[0].topic_id, version >= 13 ? id : WireUuid{});
    const FetchResponse::Partition& p = r.responses[0].partitions.at(0);
    EXPECT_EQ(p.error_code, ErrorCode::kNone) << version;
    EXPECT_EQ(p.high_watermark, 6);
    ASSERT_TRUE(p.records.has_value());
    ASSERT_GT(p.records->size(), size_t(batch_layout::kBaseOffset + 8));
    EXPECT_EQ(LoadBe64(p.records->data()), 2) << "the batch at offset 2 first";
  }
}

TEST_F(ServerFlexibleVersions, ListOffsetsV6ToV10) {
  CreateTopic("lo");
  for (int16_t version : {6, 7, 8, 9, 10}) {
    Wire body;
    body.I32(-1).I8(0).CompactArray(1).CompactString("lo");
    body.CompactArray(1).I32(0).I32(-1).I64(kListOffsetsLatest).NoTags();
    body.NoTags();
    if (version >= 10) body.I32(30000);
    body.NoTags();
    ListOffsetsResponse r =
        Exchange(ApiKey::kListOffsets, version, body, DecodeListOffsetsResponse);
    const ListOffsetsResponse::Partition& p = r.topics.at(0).partitions.at(0);
    EXPECT_EQ(p.error_code, ErrorCode::kNone) << version;
    EXPECT_EQ(p.offset, 0);
  }
}

TEST_F(ServerFlexibleVersions, FindCoordinatorV3ToV6) {
  for (int16_t version : {3, 4, 5, 6}) {
    Wire body;
    if (version == 3) {
      body.CompactString("group").I8(kCoordinatorKeyTypeGroup).NoTags();
    } else {
      body.I8(kCoordinatorKeyTypeGroup).CompactArray(2).CompactString("g1").CompactString("g2");
      body.NoTags();
    }
    FindCoordinatorResponse r =
        Exchange(ApiKey::kFindCoordinator, version, body, DecodeFindCoordinatorResponse);
    if (version == 3) {
      EXPECT_EQ(r.error_code, ErrorCode::kNone);
      EXPECT_EQ(r.port, broker_->kafka_port());
    } else {
      ASSERT_EQ(r.coordinators.size(), 2u);
      EXPECT_EQ(r.coordinators[1].key, "g2");
      EXPECT_EQ(r.coordinators[1].port, broker_->kafka_port());
    }
  }
}

TEST_F(ServerFlexibleVersions, DescribeConfigsV4) {
  CreateTopic("dc");
  Wire body;
  body.CompactArray(1).I8(kResourceTypeTopic).CompactString("dc");
  body.CompactArray(1).CompactString("retention.ms").NoTags();
  body.I8(1).I8(0).NoTags();  // synonyms, documentation
  DescribeConfigsResponse r =
      Exchange(ApiKey::kDescribeConfigs, 4, body, DecodeDescribeConfigsResponse);
  ASSERT_EQ(r.results.size(), 1u);
  ASSERT_EQ(r.results[0].configs.size(), 1u);
  EXPECT_EQ(r.results[0].configs[0].name, "retention.ms");
  EXPECT_EQ(r.results[0].configs[0].config_type, int8_t(ConfigType::kLong));
  EXPECT_EQ(r.results[0].configs[0].synonyms.size(), 1u);
}

TEST_F(ServerFlexibleVersions, DeleteTopicsV4ToV6) {
  for (int16_t version : {4, 5, 6}) {
    const std::string name = "del-v" + std::to_string(version);
    CreateTopic(name);
    Wire body;
    if (version <= 5) {
      body.CompactArray(1).CompactString(name);
    } else {
      body.CompactArray(1).CompactNull().Uuid16(TopicId(name)).NoTags();
    }
    body.I32(30000).NoTags();
    DeleteTopicsResponse r =
        Exchange(ApiKey::kDeleteTopics, version, body, DecodeDeleteTopicsResponse);
    ASSERT_EQ(r.responses.size(), 1u);
    EXPECT_EQ(r.responses[0].error_code, ErrorCode::kNone) << version;
    EXPECT_EQ(r.responses[0].name, name);
  }
}

}  // namespace
}  // namespace daruma::broker
