// ApiKey table, flexibility, header version selection (spec §1.4, §2.4) and
// request/response header bytes.
#include <gtest/gtest.h>

#include "protocol/api_keys.h"
#include "protocol/error_codes.h"
#include "protocol/request_header.h"
#include "protocol_test_util.h"

namespace daruma {
namespace {

using testing::Hex;

TEST(ApiKeysTest, AdvertisedTableMatchesSpecSortedByKey) {
  struct Expected {
    ApiKey key;
    int16_t min, max;
  };
  const Expected expected[] = {
      {ApiKey::kProduce, 0, 11},
      {ApiKey::kFetch, 4, 17},
      {ApiKey::kListOffsets, 1, 10},
      {ApiKey::kMetadata, 0, 12},
      // Consumer groups: Kafka 3.9's ranges (issue 21).
      {ApiKey::kOffsetCommit, 0, 9},
      {ApiKey::kOffsetFetch, 0, 9},
      {ApiKey::kFindCoordinator, 0, 6},
      {ApiKey::kJoinGroup, 0, 9},
      {ApiKey::kHeartbeat, 0, 4},
      {ApiKey::kLeaveGroup, 0, 5},
      {ApiKey::kSyncGroup, 0, 5},
      {ApiKey::kDescribeGroups, 0, 5},
      {ApiKey::kListGroups, 0, 5},
      {ApiKey::kApiVersions, 0, 4},
      {ApiKey::kCreateTopics, 0, 7},
      {ApiKey::kDeleteTopics, 0, 6},
      // The admin APIs: Kafka 3.9's ranges (issue 19).
      {ApiKey::kDeleteRecords, 0, 2},
      // Idempotent producers (issue 20).
      {ApiKey::kInitProducerId, 0, 5},
      {ApiKey::kOffsetForLeaderEpoch, 0, 4},
      // Transactions: Kafka 3.9's ranges (4.0's EndTxn v5 and TxnOffsetCommit
      // v5 need transaction version 2); WriteTxnMarkers only decodes.
      {ApiKey::kAddPartitionsToTxn, 0, 5},
      {ApiKey::kAddOffsetsToTxn, 0, 4},
      {ApiKey::kEndTxn, 0, 4},
      {ApiKey::kWriteTxnMarkers, 0, 1},
      {ApiKey::kTxnOffsetCommit, 0, 4},
      {ApiKey::kDescribeConfigs, 0, 4},
      {ApiKey::kAlterConfigs, 0, 2},
      {ApiKey::kDescribeLogDirs, 0, 4},
      {ApiKey::kCreatePartitions, 0, 3},
      {ApiKey::kDeleteGroups, 0, 2},
      {ApiKey::kElectLeaders, 0, 2},
      {ApiKey::kIncrementalAlterConfigs, 0, 1},
      {ApiKey::kAlterPartitionReassignments, 0, 0},
      {ApiKey::kListPartitionReassignments, 0, 0},
      {ApiKey::kOffsetDelete, 0, 0},
      {ApiKey::kDescribeCluster, 0, 1},
      {ApiKey::kDescribeProducers, 0, 0},
      {ApiKey::kDescribeTransactions, 0, 0},
      {ApiKey::kListTransactions, 0, 1},
  };
  auto table = AdvertisedApis();
  ASSERT_EQ(table.size(), std::size(expected));
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(table[i].key, expected[i].key) << i;
    EXPECT_EQ(table[i].min, expected[i].min) << ApiKeyName(table[i].key);
    EXPECT_EQ(table[i].max, expected[i].max) << ApiKeyName(table[i].key);
    if (i > 0) {
      EXPECT_LT(int16_t(table[i - 1].key), int16_t(table[i].key));
    }
  }
}

TEST(ApiKeysTest, SupportedVersionsAndUnknownKeys) {
  EXPECT_TRUE(IsSupportedVersion(ApiKey::kProduce, 0));
  EXPECT_TRUE(IsSupportedVersion(ApiKey::kProduce, 11));
  EXPECT_FALSE(IsSupportedVersion(ApiKey::kProduce, 12));
  EXPECT_FALSE(IsSupportedVersion(ApiKey::kFetch, 3));
  EXPECT_FALSE(IsSupportedVersion(ApiKey::kListOffsets, 0));
  // A codec range is not a handler: the broker's table decides (api_table.cc).
  EXPECT_TRUE(IsSupportedVersion(ApiKey::kAddPartitionsToTxn, 0));
  EXPECT_FALSE(IsSupportedVersion(ApiKey::kAddPartitionsToTxn, 6));
  EXPECT_FALSE(IsSupportedVersion(ApiKey::kEndTxn, 5));  // Kafka 4.0, transaction version 2
  EXPECT_FALSE(IsSupportedVersion(ApiKey::kTxnOffsetCommit, 5));
  EXPECT_FALSE(IsSupportedVersion(ApiKey(999), 0));
  EXPECT_EQ(FindAdvertisedApi(ApiKey(999)), nullptr);
  EXPECT_FALSE(IsKnownApiKey(ApiKey(999)));
  EXPECT_STREQ(ApiKeyName(ApiKey::kDescribeConfigs), "DescribeConfigs");
  EXPECT_STREQ(ApiKeyName(ApiKey(999)), "Unknown");
  EXPECT_EQ(CheckSupportedVersion(ApiKey::kFetch, 18).message(),
            "Fetch version 18 is not supported (advertised 4-17)");
  EXPECT_EQ(CheckSupportedVersion(ApiKey(-5), 0).message(),
            "API key -5 (Unknown) is not supported");
  EXPECT_TRUE(CheckSupportedVersion(ApiKey::kMetadata, 4).ok());
}

TEST(ApiKeysTest, FlexibilityAndHeaderVersions) {
  EXPECT_FALSE(IsFlexible(ApiKey::kApiVersions, 2));
  EXPECT_TRUE(IsFlexible(ApiKey::kApiVersions, 3));
  EXPECT_FALSE(IsFlexible(ApiKey::kProduce, 7));
  EXPECT_TRUE(IsFlexible(ApiKey::kProduce, 9));
  EXPECT_FALSE(IsFlexible(ApiKey::kFetch, 11));
  EXPECT_TRUE(IsFlexible(ApiKey::kOffsetFetch, 6));
  EXPECT_FALSE(IsFlexible(ApiKey::kSaslHandshake, 1));
  EXPECT_FALSE(IsFlexible(ApiKey(999), 100));
  // Admin APIs: flexible from their schemas' first flexible version.
  EXPECT_TRUE(IsFlexible(ApiKey::kDescribeCluster, 0));
  EXPECT_FALSE(IsFlexible(ApiKey::kCreatePartitions, 1));
  EXPECT_TRUE(IsFlexible(ApiKey::kCreatePartitions, 2));
  EXPECT_FALSE(IsFlexible(ApiKey::kIncrementalAlterConfigs, 0));
  EXPECT_TRUE(IsFlexible(ApiKey::kIncrementalAlterConfigs, 1));
  EXPECT_FALSE(IsFlexible(ApiKey::kOffsetForLeaderEpoch, 3));
  EXPECT_TRUE(IsFlexible(ApiKey::kOffsetForLeaderEpoch, 4));
  EXPECT_STREQ(ApiKeyName(ApiKey::kDescribeProducers), "DescribeProducers");
  // Transaction APIs.
  EXPECT_FALSE(IsFlexible(ApiKey::kAddPartitionsToTxn, 2));
  EXPECT_TRUE(IsFlexible(ApiKey::kAddPartitionsToTxn, 3));
  EXPECT_TRUE(IsFlexible(ApiKey::kEndTxn, 3));
  EXPECT_FALSE(IsFlexible(ApiKey::kWriteTxnMarkers, 0));
  EXPECT_TRUE(IsFlexible(ApiKey::kWriteTxnMarkers, 1));
  EXPECT_TRUE(IsFlexible(ApiKey::kDescribeTransactions, 0));
  EXPECT_TRUE(IsFlexible(ApiKey::kListTransactions, 0));
  EXPECT_STREQ(ApiKeyName(ApiKey::kWriteTxnMarkers), "WriteTxnMarkers");
  EXPECT_STREQ(ApiKeyName(ApiKey::kListTransactions), "ListTransactions");
  EXPECT_EQ(RequestHeaderVersion(ApiKey::kTxnOffsetCommit, 2), 1);
  EXPECT_EQ(ResponseHeaderVersion(ApiKey::kTxnOffsetCommit, 3), 1);

  EXPECT_EQ(RequestHeaderVersion(ApiKey::kProduce, 7), 1);
  EXPECT_EQ(RequestHeaderVersion(ApiKey::kApiVersions, 3), 2);
  EXPECT_EQ(RequestHeaderVersion(ApiKey::kApiVersions, 4), 2);
  EXPECT_EQ(ResponseHeaderVersion(ApiKey::kProduce, 7), 0);
  EXPECT_EQ(ResponseHeaderVersion(ApiKey::kApiVersions, 3), 0);  // always v0
  EXPECT_EQ(ResponseHeaderVersion(ApiKey::kInitProducerId, 4), 1);
}

TEST(ErrorCodesTest, NamesAndRetriability) {
  EXPECT_EQ(int16_t(ErrorCode::kUnsupportedVersion), 35);
  EXPECT_STREQ(ErrorCodeName(ErrorCode::kUnknownTopicOrPartition), "UNKNOWN_TOPIC_OR_PARTITION");
  EXPECT_STREQ(ErrorCodeName(ErrorCode::kNone), "NONE");
  EXPECT_STREQ(ErrorCodeName(ErrorCode(12345)), "UNKNOWN_ERROR_CODE");
  EXPECT_TRUE(IsRetriable(ErrorCode::kUnknownTopicOrPartition));
  EXPECT_TRUE(IsRetriable(ErrorCode::kKafkaStorageError));
  EXPECT_FALSE(IsRetriable(ErrorCode::kOffsetOutOfRange));
  EXPECT_FALSE(IsRetriable(ErrorCode::kNone));
  // Transaction error codes, with Kafka's numbers.
  EXPECT_EQ(int16_t(ErrorCode::kTransactionalIdNotFound), 105);
  EXPECT_STREQ(ErrorCodeName(ErrorCode::kTransactionalIdNotFound), "TRANSACTIONAL_ID_NOT_FOUND");
  EXPECT_EQ(int16_t(ErrorCode::kTransactionAbortable), 120);
  EXPECT_STREQ(ErrorCodeName(ErrorCode::kTransactionAbortable), "TRANSACTION_ABORTABLE");
  EXPECT_FALSE(IsRetriable(ErrorCode::kTransactionAbortable));
  EXPECT_TRUE(IsRetriable(ErrorCode::kConcurrentTransactions));
}

TEST(RequestHeaderTest, DecodesHeaderV1AndLeavesReaderAtBody) {
  // Produce v7, correlation 7, client id "ab", then a body byte.
  Bytes b = Hex("0000 0007 00000007 0002 6162  99");
  ProtocolReader r(b);
  Result<RequestHeader> h = DecodeRequestHeader(r);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->api_key, ApiKey::kProduce);
  EXPECT_EQ(h->api_version, 7);
  EXPECT_EQ(h->correlation_id, 7);
  EXPECT_EQ(h->client_id, std::optional<std::string>("ab"));
  EXPECT_EQ(r.position(), 12u);
}

TEST(RequestHeaderTest, DecodesHeaderV2WithClassicClientIdAndSkipsTags) {
  // ApiVersions v3: ClientId stays int16-length; the tagged section has one
  // unknown tag that must be skipped.
  Bytes b = Hex("0012 0003 0000002a ffff  01 05 02 abcd  99");
  ProtocolReader r(b);
  Result<RequestHeader> h = DecodeRequestHeader(r);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->api_key, ApiKey::kApiVersions);
  EXPECT_EQ(h->api_version, 3);
  EXPECT_EQ(h->correlation_id, 42);
  EXPECT_EQ(h->client_id, std::nullopt);
  EXPECT_EQ(r.position(), 15u);
}

TEST(RequestHeaderTest, UnknownKeyIsReadAsHeaderV1) {
  Bytes b = Hex("03e7 0000 00000001 0000");
  ProtocolReader r(b);
  Result<RequestHeader> h = DecodeRequestHeader(r);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(int16_t(h->api_key), 999);
  EXPECT_TRUE(r.AtEnd());
}

TEST(RequestHeaderTest, TruncatedHeaderNamesField) {
  Bytes b = Hex("0000 0007 0000");
  ProtocolReader r(b);
  Result<RequestHeader> h = DecodeRequestHeader(r);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().message(),
            "request header: field CorrelationId at byte 4: truncated: expected 4 more bytes, "
            "found 2");
}

TEST(RequestHeaderTest, EncodeDecodeRoundTrip) {
  for (RequestHeader h : {RequestHeader{ApiKey::kFetch, 11, -3, std::string("kcat")},
                          RequestHeader{ApiKey::kApiVersions, 3, 9, std::nullopt}}) {
    ProtocolWriter w;
    EncodeRequestHeader(h, w);
    ProtocolReader r(w.bytes());
    Result<RequestHeader> back = DecodeRequestHeader(r);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, h);
    EXPECT_TRUE(r.AtEnd());
  }
}

TEST(ResponseHeaderTest, ApiVersionsAlwaysV0OthersByFlexibility) {
  ProtocolWriter w;
  EncodeResponseHeader(7, ApiKey::kApiVersions, 3, w);
  EXPECT_EQ(w.bytes(), Hex("00000007"));
  ProtocolWriter w2;
  EncodeResponseHeader(7, ApiKey::kProduce, 7, w2);
  EXPECT_EQ(w2.bytes(), Hex("00000007"));
  ProtocolWriter w3;
  EncodeResponseHeader(-1, ApiKey::kInitProducerId, 4, w3);
  EXPECT_EQ(w3.bytes(), Hex("ffffffff 00"));
  ProtocolReader r(w3.bytes());
  Result<int32_t> cid = DecodeResponseHeader(r, ApiKey::kInitProducerId, 4);
  ASSERT_TRUE(cid.ok());
  EXPECT_EQ(*cid, -1);
  EXPECT_TRUE(r.AtEnd());
}

}  // namespace
}  // namespace daruma
