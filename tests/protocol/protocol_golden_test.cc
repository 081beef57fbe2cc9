// Hand-built byte vectors from the spec's field tables (§1.4, §3.1–3.5):
// the codecs must produce and accept exactly these bytes.
#include <gtest/gtest.h>

#include "protocol/messages.h"
#include "protocol/request_header.h"
#include "protocol_test_util.h"

namespace daruma {
namespace {

using testing::EncodeToBytes;
using testing::Hex;

ApiVersionsResponse TwoKeys() {
  ApiVersionsResponse resp;
  resp.api_keys = {{ApiKey::kProduce, 0, 7}, {ApiKey::kFetch, 4, 11}};
  return resp;
}

TEST(ProtocolGoldenTest, ApiVersionsV0RequestAndResponse) {
  // Header v1 (key 18, v0, correlation 1, client "kcat"), empty body.
  Bytes frame = Hex("0012 0000 00000001 0004 6b636174");
  ProtocolReader r(frame);
  Result<RequestHeader> h = DecodeRequestHeader(r);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->client_id, std::optional<std::string>("kcat"));
  Result<ApiVersionsRequest> req = DecodeApiVersionsRequest(r, 0);
  ASSERT_TRUE(req.ok());
  EXPECT_TRUE(r.AtEnd());

  ProtocolWriter w;
  EncodeResponseHeader(1, ApiKey::kApiVersions, 0, w);
  EncodeApiVersionsResponse(TwoKeys(), 0, w);
  // CorrelationId | ErrorCode | [ApiKey Min Max] x2 (no ThrottleTimeMs in v0).
  EXPECT_EQ(w.bytes(), Hex("00000001 | 0000 | 00000002 0000 0000 0007 0001 0004 000b"));
}

TEST(ProtocolGoldenTest, ApiVersionsV3FlexibleBodyWithHeaderV0Response) {
  // Header v2: classic ClientId "librdkafka" + empty tags; body: compact strings + tags.
  Bytes frame =
      Hex("0012 0003 00000002 000a 6c696272646b61666b61 00"
          "0b 6c696272646b61666b61  06 322e302e32  00");
  ProtocolReader r(frame);
  Result<RequestHeader> h = DecodeRequestHeader(r);
  ASSERT_TRUE(h.ok());
  Result<ApiVersionsRequest> req = DecodeApiVersionsRequest(r, 3);
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  EXPECT_EQ(req->client_software_name, "librdkafka");
  EXPECT_EQ(req->client_software_version, "2.0.2");
  EXPECT_TRUE(r.AtEnd());
  EXPECT_EQ(EncodeToBytes(*req, 3, EncodeApiVersionsRequest),
            Hex("0b 6c696272646b61666b61  06 322e302e32  00"));

  ProtocolWriter w;
  EncodeResponseHeader(2, ApiKey::kApiVersions, 3, w);
  EncodeApiVersionsResponse(TwoKeys(), 3, w);
  // Header v0 (no tags) | ErrorCode | compact array (2+1) of entries each with
  // an empty tag section | ThrottleTimeMs | empty body tags.
  EXPECT_EQ(w.bytes(),
            Hex("00000002 | 0000 | 03 0000 0000 0007 00  0001 0004 000b 00 | 00000000 | 00"));
}

TEST(ProtocolGoldenTest, ApiVersionsV3ResponseSkipsFeatureTags) {
  // A Kafka 3.9 style body: FinalizedFeaturesEpoch (tag 1, 8 bytes) and
  // ZkMigrationReady (tag 3, 1 byte) must be skipped.
  Bytes body = Hex("0000 02 0012 0000 0003 00 00000000 02 01 08 0000000000000005 03 01 01");
  ProtocolReader r(body);
  Result<ApiVersionsResponse> resp = DecodeApiVersionsResponse(r, 3);
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  ASSERT_EQ(resp->api_keys.size(), 1u);
  EXPECT_EQ(resp->api_keys[0].api_key, ApiKey::kApiVersions);
  EXPECT_EQ(resp->api_keys[0].max_version, 3);
  EXPECT_TRUE(r.AtEnd());
}

TEST(ProtocolGoldenTest, MetadataV1Request) {
  MetadataRequest named;
  named.topics = std::vector<MetadataRequest::Topic>{{.name = "t"}};
  EXPECT_EQ(EncodeToBytes(named, 1, EncodeMetadataRequest), Hex("00000001 0001 74"));
  EXPECT_EQ(EncodeToBytes(MetadataRequest{}, 1, EncodeMetadataRequest), Hex("ffffffff"));

  Bytes null_topics = Hex("ffffffff");
  ProtocolReader r(null_topics);
  Result<MetadataRequest> all = DecodeMetadataRequest(r, 1);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->topics, std::nullopt);

  Bytes empty = Hex("00000000");
  ProtocolReader r1(empty);
  Result<MetadataRequest> none = DecodeMetadataRequest(r1, 1);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->topics, std::vector<MetadataRequest::Topic>{});  // v1: no topics

  ProtocolReader r0(empty);
  Result<MetadataRequest> v0 = DecodeMetadataRequest(r0, 0);
  ASSERT_TRUE(v0.ok());
  EXPECT_EQ(v0->topics, std::nullopt);  // v0: empty means all topics
}

TEST(ProtocolGoldenTest, MetadataV1Response) {
  MetadataResponse resp;
  resp.brokers.push_back({1, "h", 9092, std::nullopt});
  resp.controller_id = 1;
  MetadataResponse::Topic t;
  t.name = "t";
  t.partitions.push_back({.error_code = ErrorCode::kNone,
                          .partition_index = 0,
                          .leader_id = 1,
                          .replica_nodes = {1},
                          .isr_nodes = {1}});
  resp.topics.push_back(t);
  EXPECT_EQ(EncodeToBytes(resp, 1, EncodeMetadataResponse),
            Hex("00000001 00000001 0001 68 00002384 ffff"  // Brokers [NodeId Host Port Rack]
                "00000001"                                 // ControllerId
                "00000001 0000 0001 74 00"                 // Topics [ErrorCode Name IsInternal
                "00000001 0000 00000000 00000001"          //  Partitions [Err Index Leader
                "00000001 00000001 00000001 00000001"));   //   Replicas Isr]]
}

TEST(ProtocolGoldenTest, ProduceV7Request) {
  Bytes frame =
      Hex("ffff"               // TransactionalId null
          "ffff"               // Acks -1
          "00007530"           // TimeoutMs 30000
          "00000001 0001 74"   // TopicData [Name "t"
          "00000001 00000000"  //  PartitionData [Index 0
          "00000003 aabbcc");  //   Records (3 bytes)]]
  ProtocolReader r(frame);
  Result<ProduceRequest> req = DecodeProduceRequest(r, 7);
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  EXPECT_TRUE(r.AtEnd());
  EXPECT_EQ(req->transactional_id, std::nullopt);
  EXPECT_EQ(req->acks, -1);
  EXPECT_EQ(req->timeout_ms, 30000);
  ASSERT_EQ(req->topic_data.size(), 1u);
  EXPECT_EQ(req->topic_data[0].name, "t");
  ASSERT_EQ(req->topic_data[0].partition_data.size(), 1u);
  const ProduceRequest::Partition& p = req->topic_data[0].partition_data[0];
  EXPECT_EQ(p.index, 0);
  ASSERT_TRUE(p.records.has_value());
  EXPECT_EQ(p.records->size(), 3u);
  EXPECT_EQ(p.records->data(), frame.data() + 27);  // a view, not a copy
  EXPECT_EQ(EncodeToBytes(*req, 7, EncodeProduceRequest), frame);
}

TEST(ProtocolGoldenTest, ProduceV7Response) {
  ProduceResponse resp;
  resp.responses.push_back({"t", {{0, ErrorCode::kNone, 42, -1, 0}}});
  EXPECT_EQ(EncodeToBytes(resp, 7, EncodeProduceResponse),
            Hex("00000001 0001 74 00000001"  // Responses [Name PartitionResponses [
                "00000000 0000"              //  Index ErrorCode
                "000000000000002a"           //  BaseOffset 42
                "ffffffffffffffff"           //  LogAppendTimeMs -1
                "0000000000000000"           //  LogStartOffset 0 ]]
                "00000000"));                // ThrottleTimeMs
}

TEST(ProtocolGoldenTest, FetchV11Request) {
  Bytes body =
      Hex("ffffffff 000001f4 00000001 03200000 01"  // ReplicaId MaxWait MinBytes MaxBytes Isolation
          "00000000 ffffffff"                       // SessionId SessionEpoch
          "00000001 0001 74 00000001"               // Topics [Topic Partitions [
          "00000000 ffffffff"                       //  Partition CurrentLeaderEpoch
          "0000000000000005 ffffffffffffffff"       //  FetchOffset LogStartOffset
          "00100000"                                //  PartitionMaxBytes ]]
          "00000000"                                // ForgottenTopicsData []
          "0000");                                  // RackId ""
  ProtocolReader r(body);
  Result<FetchRequest> req = DecodeFetchRequest(r, 11);
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  EXPECT_TRUE(r.AtEnd());
  EXPECT_EQ(req->replica_id, -1);
  EXPECT_EQ(req->max_wait_ms, 500);
  EXPECT_EQ(req->min_bytes, 1);
  EXPECT_EQ(req->max_bytes, 52428800);
  EXPECT_EQ(req->isolation_level, 1);
  EXPECT_EQ(req->session_id, 0);
  EXPECT_EQ(req->session_epoch, -1);
  ASSERT_EQ(req->topics.size(), 1u);
  ASSERT_EQ(req->topics[0].partitions.size(), 1u);
  const FetchRequest::Partition& p = req->topics[0].partitions[0];
  EXPECT_EQ(p.current_leader_epoch, -1);
  EXPECT_EQ(p.fetch_offset, 5);
  EXPECT_EQ(p.log_start_offset, -1);
  EXPECT_EQ(p.partition_max_bytes, 1048576);
  EXPECT_TRUE(req->forgotten_topics_data.empty());
  EXPECT_EQ(req->rack_id, "");
  EXPECT_EQ(EncodeToBytes(*req, 11, EncodeFetchRequest), body);
}

TEST(ProtocolGoldenTest, FetchV11ResponseNeverSendsNullRecordsByDefault) {
  FetchResponse resp;
  FetchResponse::Partition p;  // records default to an EMPTY set
  p.partition_index = 0;
  p.high_watermark = 10;
  p.last_stable_offset = 10;
  p.log_start_offset = 0;
  resp.responses.push_back({.topic = "t", .partitions = {p}});
  EXPECT_EQ(EncodeToBytes(resp, 11, EncodeFetchResponse),
            Hex("00000000 0000 00000000"             // ThrottleTimeMs ErrorCode SessionId
                "00000001 0001 74 00000001"          // Responses [Topic Partitions [
                "00000000 0000"                      //  PartitionIndex ErrorCode
                "000000000000000a 000000000000000a"  //  HighWatermark LastStableOffset
                "0000000000000000"                   //  LogStartOffset
                "ffffffff"                           //  AbortedTransactions null
                "ffffffff"                           //  PreferredReadReplica -1
                "00000000"));                        //  Records: empty, not null ]]
}

TEST(ProtocolGoldenTest, FetchV4ResponseOmitsLaterFields) {
  FetchResponse resp;
  FetchResponse::Partition p;
  p.records = Bytes{0xee};
  p.aborted_transactions = std::vector<FetchResponse::AbortedTransaction>{};
  resp.responses.push_back({.topic = "t", .partitions = {p}});
  EXPECT_EQ(EncodeToBytes(resp, 4, EncodeFetchResponse),
            Hex("00000000 00000001 0001 74 00000001 00000000 0000"
                "ffffffffffffffff ffffffffffffffff"  // HighWatermark LastStableOffset
                "00000000"                           // AbortedTransactions [] (not null)
                "00000001 ee"));
}

TEST(ProtocolGoldenTest, ListOffsetsV1RequestAndResponse) {
  Bytes body = Hex("ffffffff 00000001 0001 74 00000001 00000000 fffffffffffffffe");
  ProtocolReader r(body);
  Result<ListOffsetsRequest> req = DecodeListOffsetsRequest(r, 1);
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  EXPECT_TRUE(r.AtEnd());
  EXPECT_EQ(req->replica_id, -1);
  EXPECT_EQ(req->isolation_level, 0);  // not on the wire in v1
  ASSERT_EQ(req->topics.size(), 1u);
  ASSERT_EQ(req->topics[0].partitions.size(), 1u);
  EXPECT_EQ(req->topics[0].partitions[0].timestamp, kListOffsetsEarliest);
  EXPECT_EQ(EncodeToBytes(*req, 1, EncodeListOffsetsRequest), body);

  ListOffsetsResponse resp;
  resp.topics.push_back(
      {.name = "t",
       .partitions = {
           {.partition_index = 0, .error_code = ErrorCode::kNone, .timestamp = -1, .offset = 3}}});
  EXPECT_EQ(EncodeToBytes(resp, 1, EncodeListOffsetsResponse),
            Hex("00000001 0001 74 00000001 00000000 0000 ffffffffffffffff 0000000000000003"));
  EXPECT_EQ(EncodeToBytes(resp, 2, EncodeListOffsetsResponse),
            Hex("00000000 00000001 0001 74 00000001 00000000 0000 ffffffffffffffff "
                "0000000000000003"));
}

// AddPartitionsToTxn: v0-3 carry one transaction in the V3AndBelow* fields,
// v4+ a list of them; both hold the same Topic struct.
TEST(ProtocolGoldenTest, AddPartitionsToTxnV3AndV4Requests) {
  Bytes v3 =
      Hex("03 7478"               // V3AndBelowTransactionalId "tx" (compact)
          "0000000000000007"      // V3AndBelowProducerId
          "0001"                  // V3AndBelowProducerEpoch
          "02 02 74"              // V3AndBelowTopics [Name "t"
          "03 00000000 00000002"  //  Partitions [0, 2]
          "00"                    //  tagged fields ]
          "00");                  // tagged fields
  ProtocolReader r3(v3);
  Result<AddPartitionsToTxnRequest> req3 = DecodeAddPartitionsToTxnRequest(r3, 3);
  ASSERT_TRUE(req3.ok()) << req3.status().ToString();
  EXPECT_TRUE(r3.AtEnd());
  EXPECT_TRUE(req3->transactions.empty());
  EXPECT_EQ(req3->v3_and_below_transactional_id, "tx");
  EXPECT_EQ(req3->v3_and_below_producer_id, 7);
  EXPECT_EQ(req3->v3_and_below_producer_epoch, 1);
  ASSERT_EQ(req3->v3_and_below_topics.size(), 1u);
  EXPECT_EQ(req3->v3_and_below_topics[0].name, "t");
  EXPECT_EQ(req3->v3_and_below_topics[0].partitions, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(EncodeToBytes(*req3, 3, EncodeAddPartitionsToTxnRequest), v3);

  // The same transaction in the broker's batched form, verify only.
  AddPartitionsToTxnRequest req4;
  req4.transactions.push_back({.transactional_id = "tx",
                               .producer_id = 7,
                               .producer_epoch = 1,
                               .verify_only = true,
                               .topics = req3->v3_and_below_topics});
  EXPECT_EQ(EncodeToBytes(req4, 4, EncodeAddPartitionsToTxnRequest),
            Hex("02 03 7478"                        // Transactions [TransactionalId "tx"
                "0000000000000007 0001"             //  ProducerId ProducerEpoch
                "01"                                //  VerifyOnly
                "02 02 74 03 00000000 00000002 00"  //  Topics [...]
                "00"                                //  tagged fields ]
                "00"));                             // tagged fields
}

TEST(ProtocolGoldenTest, AddPartitionsToTxnV2AndV4Responses) {
  AddPartitionsToTxnResponse::TopicResult topic;
  topic.name = "t";
  topic.results_by_partition.push_back(
      {.partition_index = 0, .partition_error_code = ErrorCode::kConcurrentTransactions});
  AddPartitionsToTxnResponse resp;
  resp.results_by_topic_v3_and_below = {topic};
  EXPECT_EQ(EncodeToBytes(resp, 2, EncodeAddPartitionsToTxnResponse),
            Hex("00000000"                   // ThrottleTimeMs
                "00000001 0001 74"           // ResultsByTopicV3AndBelow [Name
                "00000001 00000000 0033"));  //  ResultsByPartition [0 CONCURRENT_TRANSACTIONS]]
  AddPartitionsToTxnResponse batched;
  batched.results_by_transaction.push_back({.transactional_id = "tx", .topic_results = {topic}});
  EXPECT_EQ(EncodeToBytes(batched, 4, EncodeAddPartitionsToTxnResponse),
            Hex("00000000 0000"                    // ThrottleTimeMs ErrorCode
                "02 03 7478"                       // ResultsByTransaction [TransactionalId
                "02 02 74 02 00000000 0033 00 00"  //  TopicResults [...]
                "00"                               //  tagged fields ]
                "00"));                            // tagged fields
}

TEST(ProtocolGoldenTest, EndTxnV3AndTxnOffsetCommitV2Requests) {
  Bytes end = Hex("03 7478 0000000000000007 0001 01 00");  // "tx" pid epoch Committed tagged
  ProtocolReader re(end);
  Result<EndTxnRequest> end_req = DecodeEndTxnRequest(re, 3);
  ASSERT_TRUE(end_req.ok()) << end_req.status().ToString();
  EXPECT_TRUE(re.AtEnd());
  EXPECT_EQ(end_req->transactional_id, "tx");
  EXPECT_EQ(end_req->producer_id, 7);
  EXPECT_EQ(end_req->producer_epoch, 1);
  EXPECT_TRUE(end_req->committed);
  EXPECT_EQ(EncodeToBytes(*end_req, 3, EncodeEndTxnRequest), end);

  Bytes commit =
      Hex("0002 7478 0001 67"          // TransactionalId "tx" GroupId "g"
          "0000000000000007 0001"      // ProducerId ProducerEpoch
          "00000001 0001 74"           // Topics [Name "t"
          "00000001 00000000"          //  Partitions [PartitionIndex
          "000000000000000a ffffffff"  //   CommittedOffset CommittedLeaderEpoch
          "ffff");                     //   CommittedMetadata null ]]
  ProtocolReader rc(commit);
  Result<TxnOffsetCommitRequest> commit_req = DecodeTxnOffsetCommitRequest(rc, 2);
  ASSERT_TRUE(commit_req.ok()) << commit_req.status().ToString();
  EXPECT_TRUE(rc.AtEnd());
  EXPECT_EQ(commit_req->group_id, "g");
  EXPECT_EQ(commit_req->generation_id, -1);  // v3+ only: the default
  EXPECT_EQ(commit_req->group_instance_id, std::nullopt);
  ASSERT_EQ(commit_req->topics.size(), 1u);
  ASSERT_EQ(commit_req->topics[0].partitions.size(), 1u);
  EXPECT_EQ(commit_req->topics[0].partitions[0].committed_offset, 10);
  EXPECT_EQ(commit_req->topics[0].partitions[0].committed_leader_epoch, -1);
  EXPECT_EQ(commit_req->topics[0].partitions[0].committed_metadata, std::nullopt);
  EXPECT_EQ(EncodeToBytes(*commit_req, 2, EncodeTxnOffsetCommitRequest), commit);
}

}  // namespace
}  // namespace daruma
