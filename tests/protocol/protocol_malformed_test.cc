// Malformed request bodies: every failure is a Status naming the message,
// version, field and byte position — never a crash, never an allocation
// driven by a hostile length.
#include <gtest/gtest.h>

#include "protocol/any_request.h"
#include "protocol/messages.h"
#include "protocol_test_util.h"

namespace daruma {
namespace {

using testing::EncodeToBytes;
using testing::Hex;

ProduceRequest SampleProduce(const Bytes& records) {
  ProduceRequest req;
  req.transactional_id = "tx";
  req.acks = 1;
  req.timeout_ms = 1000;
  req.topic_data.push_back({"topic", {{0, ByteSpan(records)}, {1, std::nullopt}}});
  return req;
}

TEST(ProtocolMalformedTest, EveryTruncationOfAProduceRequestFailsWithPosition) {
  const Bytes records(40, 0xab);
  const Bytes full = EncodeToBytes(SampleProduce(records), 7, EncodeProduceRequest);
  for (size_t len = 0; len < full.size(); ++len) {
    Bytes cut(full.begin(), full.begin() + len);
    ProtocolReader r(cut);
    Result<ProduceRequest> req = DecodeProduceRequest(r, 7);
    ASSERT_FALSE(req.ok()) << "prefix of " << len << " bytes decoded";
    EXPECT_EQ(req.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(req.status().message().rfind("Produce v7 request: field ", 0), 0u)
        << req.status().message();
    EXPECT_NE(req.status().message().find(" at byte "), std::string::npos);
  }
}

TEST(ProtocolMalformedTest, EveryTruncationOfAFetchRequestFails) {
  FetchRequest req;
  req.topics.push_back({.topic = "t",
                        .partitions = {{.partition = 0,
                                        .current_leader_epoch = -1,
                                        .fetch_offset = 5,
                                        .log_start_offset = -1,
                                        .partition_max_bytes = 100}}});
  req.forgotten_topics_data.push_back({.topic = "f", .partitions = {1, 2}});
  req.rack_id = "r";
  const Bytes full = EncodeToBytes(req, 11, EncodeFetchRequest);
  for (size_t len = 0; len < full.size(); ++len) {
    Bytes cut(full.begin(), full.begin() + len);
    ProtocolReader r(cut);
    EXPECT_FALSE(DecodeFetchRequest(r, 11).ok()) << len;
  }
}

TEST(ProtocolMalformedTest, RecordsLengthBeyondFrameNamesFieldAndByte) {
  Bytes body = Hex("ffff 0001 00000000 00000001 0001 74 00000001 00000000 000003e8 aabbcc");
  ProtocolReader r(body);
  Result<ProduceRequest> req = DecodeProduceRequest(r, 7);
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(req.status().message(),
            "Produce v7 request: field TopicData.PartitionData.Records at byte 23: "
            "length 1000 exceeds the 3 remaining bytes");
}

TEST(ProtocolMalformedTest, NegativeRecordsLengthIsRejected) {
  Bytes body = Hex("ffff 0001 00000000 00000001 0001 74 00000001 00000000 fffffffe");
  ProtocolReader r(body);
  Result<ProduceRequest> req = DecodeProduceRequest(r, 7);
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(req.status().message(),
            "Produce v7 request: field TopicData.PartitionData.Records at byte 23: "
            "expected a length >= -1, found -2");
}

TEST(ProtocolMalformedTest, NegativeArrayCountIsRejected) {
  Bytes body = Hex("ffff 0001 00000000 fffffff0");
  ProtocolReader r(body);
  Result<ProduceRequest> req = DecodeProduceRequest(r, 7);
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(req.status().message(),
            "Produce v7 request: field TopicData at byte 8: expected a length >= -1, found -16");
}

TEST(ProtocolMalformedTest, NullNonNullableArrayIsRejected) {
  // Fetch Topics is not nullable.
  Bytes body = Hex("ffffffff 00000000 00000000 00000000 00 ffffffff");
  ProtocolReader r(body);
  Result<FetchRequest> req = DecodeFetchRequest(r, 4);
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(req.status().message(),
            "Fetch v4 request: field Topics at byte 17: expected a non-null value, found null");
}

TEST(ProtocolMalformedTest, HugeArrayCountDoesNotAllocate) {
  // 2^31-1 topics announced, 4 bytes present.
  Bytes body = Hex("7fffffff 0001 74 00");
  ProtocolReader r(body);
  Result<MetadataRequest> req = DecodeMetadataRequest(r, 1);
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(req.status().message(),
            "Metadata v1 request: field Topics at byte 0: length 2147483647 exceeds the 4 "
            "remaining bytes");
}

TEST(ProtocolMalformedTest, NegativeStringLengthInNestedStruct) {
  // CreateTopics v0: one topic whose Configs[0].Value has length -7.
  Bytes body =
      Hex("00000001 0001 74 00000001 0001 00000000"  // Topics [Name NumPartitions Replication []
          "00000001 0001 61 fff9");                  //  Configs [Name "a" Value len -7]
  ProtocolReader r(body);
  Result<CreateTopicsRequest> req = DecodeCreateTopicsRequest(r, 0);
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(req.status().message(),
            "CreateTopics v0 request: field Topics.Configs.Value at byte 24: expected a length "
            ">= -1, found -7");
}

TEST(ProtocolMalformedTest, UnsupportedVersionsAreRejectedBeforeReading) {
  Bytes body;
  ProtocolReader r(body);
  Result<ProduceRequest> produce = DecodeProduceRequest(r, 12);
  ASSERT_FALSE(produce.ok());
  EXPECT_EQ(produce.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(produce.status().message(),
            "Produce request: version 12 is not supported (advertised 0-11)");
  EXPECT_FALSE(DecodeFetchRequest(r, 3).ok());
  EXPECT_FALSE(DecodeApiVersionsRequest(r, 5).ok());
  EXPECT_FALSE(DecodeMetadataRequest(r, -1).ok());
  EXPECT_FALSE(DecodeDescribeConfigsRequest(r, 5).ok());
  EXPECT_EQ(r.position(), 0u);
}

TEST(ProtocolMalformedTest, ApiVersionsV3MalformedCompactString) {
  // Compact length 0x10 (15 bytes) but only 2 present.
  Bytes body = Hex("10 6162");
  ProtocolReader r(body);
  Result<ApiVersionsRequest> req = DecodeApiVersionsRequest(r, 3);
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(req.status().message(),
            "ApiVersions v3 request: field ClientSoftwareName at byte 0: length 15 exceeds the "
            "2 remaining bytes");
}

TEST(ProtocolMalformedTest, ApiVersionsV3NullSoftwareNameIsRejected) {
  Bytes body = Hex("00 01 00");
  ProtocolReader r(body);
  Result<ApiVersionsRequest> req = DecodeApiVersionsRequest(r, 3);
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(req.status().message(),
            "ApiVersions v3 request: field ClientSoftwareName at byte 0: expected a non-null "
            "value, found null");
}

TEST(ProtocolMalformedTest, GarbageEitherFailsWithPositionOrRoundTrips) {
  // Deterministic pseudo-random bodies through every request decoder at every
  // advertised version: a failure names a byte; a success re-encodes to bytes
  // that decode to an equal request (the fuzzer's invariant).
  uint32_t seed = 12345;
  int decoded = 0;
  int failed = 0;
  for (int i = 0; i < 3000; ++i) {
    seed = seed * 1103515245 + 12345;
    Bytes body(size_t(seed >> 16) % 48);
    for (auto& b : body) {
      seed = seed * 1103515245 + 12345;
      // Mostly small bytes so that lengths and counts are often plausible.
      b = (seed >> 16) % 4 == 0 ? uint8_t(seed >> 8) : uint8_t((seed >> 16) % 3);
    }
    for (const ApiVersionRange& range : AdvertisedApis()) {
      for (int16_t v = range.min; v <= range.max; ++v) {
        ProtocolReader r(body);
        Result<AnyRequest> req = DecodeAnyRequest(r, range.key, v);
        if (!req.ok()) {
          ++failed;
          ASSERT_NE(req.status().message().find(" at byte "), std::string::npos)
              << req.status().message();
          continue;
        }
        ++decoded;
        ProtocolWriter w;
        EncodeAnyRequest(*req, v, w);
        ProtocolReader again(w.bytes());
        Result<AnyRequest> back = DecodeAnyRequest(again, range.key, v);
        ASSERT_TRUE(back.ok()) << ApiKeyName(range.key) << " v" << v << ": "
                               << back.status().ToString();
        EXPECT_TRUE(*back == *req) << ApiKeyName(range.key) << " v" << v;
        EXPECT_TRUE(again.AtEnd());
      }
    }
  }
  // Both paths were exercised.
  EXPECT_GT(decoded, 100);
  EXPECT_GT(failed, 100);
}

}  // namespace
}  // namespace daruma
