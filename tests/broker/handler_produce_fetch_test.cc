// RequestHandler: Produce and Fetch end to end on a real LogManager (spec
// §3.3, §3.4, §5.2, §5.4, §5.5), including the delayed-fetch purgatory.
#include <gtest/gtest.h>

#include "broker/handler_harness.h"
#include "common/bytes.h"
#include "protocol/messages.h"
#include "record/record_batch.h"
#include "record/record_batch_builder.h"

namespace daruma::broker::testing {
namespace {

using std::chrono::milliseconds;

TEST(HandlerProduceFetch, ProducedBatchesComeBackWithAssignedOffsets) {
  HandlerHarness h;
  ASSERT_EQ(h.CreateTopic("events", 1).topics.at(0).error_code, ErrorCode::kNone);
  const Bytes a = ClientBatch({"a0", "a1", "a2"});
  const Bytes b = ClientBatch({"b0", "b1"}, 2000, CompressionType::kGzip);

  ProduceResponse::Partition first = h.Produce("events", 0, a);
  EXPECT_EQ(first.error_code, ErrorCode::kNone);
  EXPECT_EQ(first.base_offset, 0);
  EXPECT_EQ(first.log_append_time_ms, -1);
  EXPECT_EQ(first.log_start_offset, 0);
  ProduceResponse::Partition second = h.Produce("events", 0, b);
  EXPECT_EQ(second.error_code, ErrorCode::kNone);
  EXPECT_EQ(second.base_offset, 3);

  FetchResponse::Partition all = h.Fetch("events", 0, 0);
  EXPECT_EQ(all.error_code, ErrorCode::kNone);
  EXPECT_EQ(all.high_watermark, 5);
  EXPECT_EQ(all.last_stable_offset, 5);
  EXPECT_EQ(all.log_start_offset, 0);
  EXPECT_FALSE(all.aborted_transactions.has_value());  // READ_UNCOMMITTED: null
  EXPECT_EQ(all.preferred_read_replica, -1);
  ASSERT_TRUE(all.records.has_value());
  EXPECT_EQ(*all.records, Concat(AsStored(a, 0), AsStored(b, 3)));

  // kafka-python's Fetch v4: the whole batch holding offset 4 (base 3).
  FetchResponse::Partition tail = h.Fetch("events", 0, 4, /*version=*/4);
  EXPECT_EQ(tail.error_code, ErrorCode::kNone);
  EXPECT_EQ(*tail.records, AsStored(b, 3));
}

// A partition from a Kafka cluster keeps the epoch its last leader wrote:
// new batches carry it (never a lower one, which recovery and check take for
// damage), Metadata and ListOffsets report it, Fetch checks it.
TEST(HandlerProduceFetch, APartitionKeepsTheLeaderEpochItsKafkaLeaderWrote) {
  HandlerHarness h;
  h.CreateTopic("moved", 1);
  Log* log = h.manager().GetLog({"moved", 0});
  ASSERT_TRUE(log->AppendAsLeader(ClientBatch({"from kafka"}), 3).ok());
  ASSERT_EQ(h.Produce("moved", 0, ClientBatch({"from daruma"})).error_code, ErrorCode::kNone);
  FetchResponse::Partition all = h.Fetch("moved", 0, 0);
  ASSERT_TRUE(all.records.has_value());
  size_t pos = 0;
  int batches = 0;
  while (pos < all.records->size()) {
    const size_t size = kLogOverhead + LoadBe32(all.records->data() + pos + batch_layout::kLength);
    RecordBatchView batch(ByteSpan(*all.records).subspan(pos, size));
    EXPECT_EQ(batch.partition_leader_epoch(), 3) << "batch at offset " << batch.base_offset();
    pos += batch.size();
    ++batches;
  }
  EXPECT_EQ(batches, 2);
  EXPECT_EQ(log->leader_epochs(), (std::vector<EpochEntry>{{3, 0}}));

  MetadataRequest metadata;
  metadata.topics.emplace();
  metadata.topics->push_back({.name = "moved"});
  MetadataResponse m =
      h.Call(ApiKey::kMetadata, 9, metadata, EncodeMetadataRequest, DecodeMetadataResponse);
  EXPECT_EQ(m.topics.at(0).partitions.at(0).leader_epoch, 3);

  ListOffsetsRequest latest;
  latest.topics.push_back({"moved", {{.partition_index = 0, .timestamp = -1}}});
  ListOffsetsResponse l =
      h.Call(ApiKey::kListOffsets, 4, latest, EncodeListOffsetsRequest, DecodeListOffsetsResponse);
  EXPECT_EQ(l.topics.at(0).partitions.at(0).offset, 2);
  EXPECT_EQ(l.topics.at(0).partitions.at(0).leader_epoch, 3);

  for (const auto& [current, want] :
       std::vector<std::pair<int32_t, ErrorCode>>{{3, ErrorCode::kNone},
                                                  {2, ErrorCode::kFencedLeaderEpoch},
                                                  {4, ErrorCode::kUnknownLeaderEpoch},
                                                  {-1, ErrorCode::kNone}}) {
    FetchRequest request = HandlerHarness::FetchOne("moved", 0, 0);
    request.topics[0].partitions[0].current_leader_epoch = current;
    FetchResponse r = h.Call(ApiKey::kFetch, 11, request, EncodeFetchRequest, DecodeFetchResponse);
    EXPECT_EQ(r.responses.at(0).partitions.at(0).error_code, want) << current;
  }
}

// A record a per-record rule refuses is named as Kafka names it (Produce v8+):
// in record_errors with its index and reason, a summary beside the code, and
// the log start offset (LogValidator.processRecordErrors).
TEST(HandlerProduceFetch, ARefusedRecordIsNamedInRecordErrors) {
  HandlerHarness h;
  h.CreateTopic("bounded", 1, {{"message.timestamp.before.max.ms", "1000"}});
  ProduceResponse::Partition r = h.Produce("bounded", 0, ClientBatch({"old"}, 1000), 8);
  EXPECT_EQ(r.error_code, ErrorCode::kInvalidTimestamp);
  EXPECT_EQ(r.error_message,
            std::optional<std::string>(
                "One or more records have been rejected due to invalid timestamp"));
  ASSERT_EQ(r.record_errors.size(), 1u);
  EXPECT_EQ(r.record_errors[0].batch_index, 0);
  ASSERT_TRUE(r.record_errors[0].batch_index_error_message.has_value());
  EXPECT_NE(r.record_errors[0].batch_index_error_message->find(
                "Timestamp 1000 of message with offset 0 is out of range"),
            std::string::npos);
  EXPECT_EQ(r.log_start_offset, 0);
}

TEST(HandlerProduceFetch, FetchAtLogEndIsEmptyNotNullAndBeyondIsOutOfRange) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  h.Produce("t", 0, ClientBatch({"x"}));
  FetchResponse::Partition at_end = h.Fetch("t", 0, 1);
  EXPECT_EQ(at_end.error_code, ErrorCode::kNone);
  ASSERT_TRUE(at_end.records.has_value());
  EXPECT_TRUE(at_end.records->empty());
  EXPECT_EQ(at_end.high_watermark, 1);

  FetchResponse::Partition beyond = h.Fetch("t", 0, 2);
  EXPECT_EQ(beyond.error_code, ErrorCode::kOffsetOutOfRange);
  EXPECT_EQ(beyond.high_watermark, -1);
  EXPECT_EQ(beyond.last_stable_offset, -1);
  EXPECT_EQ(beyond.log_start_offset, -1);
  ASSERT_TRUE(beyond.records.has_value());
  EXPECT_TRUE(beyond.records->empty());
}

TEST(HandlerProduceFetch, ReadCommittedSendsAnAbortedTransactionsArray) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  h.Produce("t", 0, ClientBatch({"x"}));
  FetchResponse::Partition p = h.Fetch("t", 0, 0, 11, /*isolation=*/1);
  EXPECT_EQ(p.error_code, ErrorCode::kNone);
  ASSERT_TRUE(p.aborted_transactions.has_value());
  EXPECT_TRUE(p.aborted_transactions->empty());
  EXPECT_EQ(p.last_stable_offset, 1);
}

TEST(HandlerProduceFetch, UnknownTopicErrorsAndProduceNeverAutoCreates) {
  HandlerHarness h;
  ProduceResponse::Partition produced = h.Produce("nope", 0, ClientBatch({"x"}));
  EXPECT_EQ(produced.error_code, ErrorCode::kUnknownTopicOrPartition);
  EXPECT_EQ(produced.base_offset, -1);
  EXPECT_EQ(produced.log_start_offset, -1);
  EXPECT_EQ(h.Fetch("nope", 0, 0).error_code, ErrorCode::kUnknownTopicOrPartition);
  h.CreateTopic("one", 1);
  EXPECT_EQ(h.Produce("one", 1, ClientBatch({"x"})).error_code,
            ErrorCode::kUnknownTopicOrPartition);
  EXPECT_EQ(h.Fetch("one", 1, 0).error_code, ErrorCode::kUnknownTopicOrPartition);
  EXPECT_EQ(h.manager().GetLog({"nope", 0}), nullptr);
}

TEST(HandlerProduceFetch, AcksZeroSendsNothingAndClosesOnlyOnFailure) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  auto ok = h.Submit(ApiKey::kProduce, 7, HandlerHarness::OneBatch("t", 0, ClientBatch({"x"}), 0),
                     EncodeProduceRequest);
  ASSERT_TRUE(ok->done);
  EXPECT_FALSE(ok->frame.has_value());
  EXPECT_FALSE(ok->close);
  EXPECT_EQ(h.manager().GetLog({"t", 0})->log_end_offset(), 1);

  auto failed =
      h.Submit(ApiKey::kProduce, 7, HandlerHarness::OneBatch("missing", 0, ClientBatch({"x"}), 0),
               EncodeProduceRequest);
  ASSERT_TRUE(failed->done);
  EXPECT_FALSE(failed->frame.has_value());
  EXPECT_TRUE(failed->close);
}

TEST(HandlerProduceFetch, InvalidAcksFailEveryPartition) {
  HandlerHarness h;
  h.CreateTopic("t", 2);
  const Bytes batch = ClientBatch({"x"});
  ProduceRequest request = HandlerHarness::OneBatch("t", 0, batch, 2);
  request.topic_data[0].partition_data.push_back({1, ByteSpan(batch)});
  ProduceResponse r =
      h.Call(ApiKey::kProduce, 7, request, EncodeProduceRequest, DecodeProduceResponse);
  ASSERT_EQ(r.responses.at(0).partition_responses.size(), 2u);
  for (const auto& p : r.responses[0].partition_responses) {
    EXPECT_EQ(p.error_code, ErrorCode::kInvalidRequiredAcks);
  }
  EXPECT_EQ(h.manager().GetLog({"t", 0})->log_end_offset(), 0);
}

TEST(HandlerProduceFetch, InvalidBatchesAreRejectedPerPartition) {
  HandlerHarness h;
  h.CreateTopic("t", 2);
  Bytes corrupt = ClientBatch({"x"});
  corrupt.back() ^= 0x01;  // the CRC covers the records
  const Bytes good = ClientBatch({"y"});
  ProduceRequest request = HandlerHarness::OneBatch("t", 0, corrupt);
  request.topic_data[0].partition_data.push_back({1, ByteSpan(good)});
  ProduceResponse r =
      h.Call(ApiKey::kProduce, 7, request, EncodeProduceRequest, DecodeProduceResponse);
  ASSERT_EQ(r.responses.at(0).partition_responses.size(), 2u);
  EXPECT_EQ(r.responses[0].partition_responses[0].error_code, ErrorCode::kCorruptMessage);
  EXPECT_EQ(r.responses[0].partition_responses[1].error_code, ErrorCode::kNone);
  EXPECT_EQ(r.responses[0].partition_responses[1].base_offset, 0);

  const Bytes two = Concat(ClientBatch({"a"}), ClientBatch({"b"}));
  EXPECT_EQ(h.Produce("t", 0, two).error_code, ErrorCode::kInvalidRecord);
  Bytes truncated = ClientBatch({"a"});
  truncated.resize(truncated.size() - 3);
  EXPECT_EQ(h.Produce("t", 0, truncated).error_code, ErrorCode::kCorruptMessage);
  EXPECT_EQ(h.Produce("t", 0, Bytes{}).error_code, ErrorCode::kInvalidRecord);
  Bytes legacy = ClientBatch({"a"});
  legacy[16] = 1;  // magic 1
  EXPECT_EQ(h.Produce("t", 0, legacy, /*version=*/2).error_code,
            ErrorCode::kUnsupportedForMessageFormat);
  EXPECT_EQ(h.Produce("t", 0, legacy).error_code, ErrorCode::kInvalidRecord);
  EXPECT_EQ(h.Produce("t", 0, ClientBatch({"z"}, 1, CompressionType::kZstd), 6).error_code,
            ErrorCode::kUnsupportedCompressionType);
  EXPECT_EQ(h.manager().GetLog({"t", 0})->log_end_offset(), 0);
}

TEST(HandlerProduceFetch, RecordLargerThanMaxMessageBytesIsTooLarge) {
  HandlerHarness h;
  h.CreateTopic("small", 1, {{"max.message.bytes", "100"}});
  EXPECT_EQ(h.Produce("small", 0, ClientBatch({std::string(200, 'v')})).error_code,
            ErrorCode::kMessageTooLarge);
  EXPECT_EQ(h.Produce("small", 0, ClientBatch({"tiny"})).error_code, ErrorCode::kNone);
}

// Kafka's LogValidator writes a CreateTime batch's maxTimestamp from its
// records, CRC included: a header the producer got wrong (here an hour low,
// or far in the future) would send retention, rolls and ListOffsets by
// timestamp astray (helper-55 saw a 4-second-old record deleted).
TEST(HandlerProduceFetch, TheHeaderMaxTimestampIsTheRecordsLargest) {
  HandlerHarness h;
  ASSERT_EQ(h.CreateTopic("events", 1).topics.at(0).error_code, ErrorCode::kNone);
  int64_t next = 0;
  for (const auto& [compression, header] :
       std::vector<std::pair<CompressionType, int64_t>>{{CompressionType::kNone, 1000 - 3600000},
                                                        {CompressionType::kGzip, int64_t(1) << 62},
                                                        {CompressionType::kNone, 2000}}) {
    Bytes batch = ClientBatch({"a", "b"}, 1000, compression);  // both records at 1000
    StoreBe64(batch.data() + batch_layout::kMaxTimestamp, uint64_t(header));
    RewriteBatchCrc(batch);
    ASSERT_EQ(h.Produce("events", 0, batch).error_code, ErrorCode::kNone);
    FetchResponse::Partition f = h.Fetch("events", 0, next);
    ASSERT_TRUE(f.records.has_value());
    RecordBatchView stored(*f.records);
    EXPECT_EQ(stored.max_timestamp(), 1000) << "header " << header;
    EXPECT_TRUE(stored.Validate().ok()) << "the CRC covers the rewritten field";
    next += 2;
  }
}

// A batch the topic's compression.type rebuilds is checked again, with
// Kafka's codes: above segment.bytes RECORD_LIST_TOO_LARGE.
TEST(HandlerProduceFetch, ARebuiltBatchAboveSegmentBytesIsARecordListTooLarge) {
  HandlerHarness h;
  h.CreateTopic("raw", 1, {{"compression.type", "uncompressed"}, {"segment.bytes", "200"}});
  const Bytes batch = ClientBatch({std::string(400, 'x')}, 1000, CompressionType::kGzip);
  ASSERT_LT(batch.size(), 200u);
  ProduceResponse::Partition r = h.Produce("raw", 0, batch, 8);
  EXPECT_EQ(r.error_code, ErrorCode::kRecordListTooLarge);
  ASSERT_TRUE(r.error_message.has_value());
  EXPECT_NE(r.error_message->find("above segment.bytes 200"), std::string::npos)
      << *r.error_message;
}

TEST(HandlerProduceFetch, ParkedFetchIsWokenByAProduce) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  auto parked = h.Submit(ApiKey::kFetch, 11, HandlerHarness::FetchOne("t", 0, 0, 10000, 1),
                         EncodeFetchRequest);
  EXPECT_FALSE(parked->done);
  const auto start = std::chrono::steady_clock::now();
  const Bytes batch = ClientBatch({"wake"});
  EXPECT_EQ(h.Produce("t", 0, batch).error_code, ErrorCode::kNone);
  ASSERT_TRUE(h.Await(*parked, milliseconds(2000)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  FetchResponse r = HandlerHarness::DecodeReply(*parked, ApiKey::kFetch, 11, DecodeFetchResponse);
  ASSERT_EQ(r.responses.at(0).partitions.size(), 1u);
  EXPECT_EQ(*r.responses[0].partitions[0].records, AsStored(batch, 0));
  EXPECT_EQ(r.responses[0].partitions[0].high_watermark, 1);
}

TEST(HandlerProduceFetch, ParkedFetchWaitsForMinBytes) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  const Bytes small = ClientBatch({"s"});
  auto parked = h.Submit(ApiKey::kFetch, 11,
                         HandlerHarness::FetchOne("t", 0, 0, 10000, int32_t(small.size() + 1)),
                         EncodeFetchRequest);
  h.Produce("t", 0, small);
  h.Poll();
  EXPECT_FALSE(parked->done) << "one small batch is below min_bytes";
  h.Produce("t", 0, ClientBatch({"more"}));
  ASSERT_TRUE(h.Await(*parked, milliseconds(2000)));
  FetchResponse r = HandlerHarness::DecodeReply(*parked, ApiKey::kFetch, 11, DecodeFetchResponse);
  EXPECT_GT(r.responses.at(0).partitions.at(0).records->size(), small.size());
}

TEST(HandlerProduceFetch, ParkedFetchTimesOutAtMaxWaitWithNothing) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  const auto start = std::chrono::steady_clock::now();
  auto parked =
      h.Submit(ApiKey::kFetch, 11, HandlerHarness::FetchOne("t", 0, 0, 150, 1), EncodeFetchRequest);
  EXPECT_FALSE(parked->done);
  ASSERT_TRUE(h.Await(*parked, milliseconds(3000)));
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(140));
  FetchResponse r = HandlerHarness::DecodeReply(*parked, ApiKey::kFetch, 11, DecodeFetchResponse);
  const auto& p = r.responses.at(0).partitions.at(0);
  EXPECT_EQ(p.error_code, ErrorCode::kNone);
  ASSERT_TRUE(p.records.has_value());
  EXPECT_TRUE(p.records->empty());
  EXPECT_EQ(p.high_watermark, 0);
}

TEST(HandlerProduceFetch, ShutdownCompletesParkedFetchesAndRefusesNewWork) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  auto parked = h.Submit(ApiKey::kFetch, 11, HandlerHarness::FetchOne("t", 0, 0, 60000, 1),
                         EncodeFetchRequest);
  EXPECT_FALSE(parked->done);
  h.handler().Shutdown();
  h.Poll();
  ASSERT_TRUE(parked->done);
  FetchResponse r = HandlerHarness::DecodeReply(*parked, ApiKey::kFetch, 11, DecodeFetchResponse);
  EXPECT_TRUE(r.responses.at(0).partitions.at(0).records->empty());
  auto late = h.Submit(ApiKey::kFetch, 11, HandlerHarness::FetchOne("t", 0, 0), EncodeFetchRequest);
  ASSERT_TRUE(late->done);
  EXPECT_FALSE(late->frame.has_value());
  EXPECT_TRUE(late->close);
}

TEST(HandlerProduceFetch, FetchSessionsAreRefused) {
  HandlerHarness h;
  FetchRequest request = HandlerHarness::FetchOne("t", 0, 0);
  request.session_id = 5;
  FetchResponse r = h.Call(ApiKey::kFetch, 11, request, EncodeFetchRequest, DecodeFetchResponse);
  EXPECT_EQ(r.error_code, ErrorCode::kFetchSessionIdNotFound);
  request.session_id = 0;
  request.session_epoch = 3;
  r = h.Call(ApiKey::kFetch, 11, request, EncodeFetchRequest, DecodeFetchResponse);
  EXPECT_EQ(r.error_code, ErrorCode::kInvalidFetchSessionEpoch);
}

TEST(HandlerProduceFetch, FirstBatchIsReturnedEvenAbovePartitionMaxBytes) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  const Bytes a = ClientBatch({std::string(300, 'a')});
  const Bytes b = ClientBatch({std::string(300, 'b')});
  h.Produce("t", 0, a);
  h.Produce("t", 0, b);
  FetchRequest request = HandlerHarness::FetchOne("t", 0, 0);
  request.topics[0].partitions[0].partition_max_bytes = 10;
  FetchResponse r = h.Call(ApiKey::kFetch, 11, request, EncodeFetchRequest, DecodeFetchResponse);
  EXPECT_EQ(*r.responses.at(0).partitions.at(0).records, AsStored(a, 0));
}

TEST(HandlerProduceFetch, ResponseMaxBytesLeavesLaterPartitionsEmpty) {
  HandlerHarness h;
  h.CreateTopic("t", 2);
  const Bytes a = ClientBatch({std::string(300, 'a')});
  const Bytes b = ClientBatch({std::string(300, 'b')});
  h.Produce("t", 0, a);
  h.Produce("t", 1, b);
  FetchRequest request = HandlerHarness::FetchOne("t", 0, 0);
  FetchRequest::Partition second = request.topics[0].partitions[0];
  second.partition = 1;
  request.topics[0].partitions.push_back(second);
  request.max_bytes = int32_t(a.size() + 10);
  FetchResponse r = h.Call(ApiKey::kFetch, 11, request, EncodeFetchRequest, DecodeFetchResponse);
  ASSERT_EQ(r.responses.at(0).partitions.size(), 2u);
  EXPECT_EQ(*r.responses[0].partitions[0].records, AsStored(a, 0));
  EXPECT_EQ(r.responses[0].partitions[1].partition_index, 1);
  EXPECT_EQ(r.responses[0].partitions[1].error_code, ErrorCode::kNone);
  EXPECT_TRUE(r.responses[0].partitions[1].records->empty());
  EXPECT_EQ(r.responses[0].partitions[1].high_watermark, 1);
}

TEST(HandlerProduceFetch, FollowerFetchesAndNewerLeaderEpochsAreRefused) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  FetchRequest follower = HandlerHarness::FetchOne("t", 0, 0);
  follower.replica_id = 2;
  FetchResponse r = h.Call(ApiKey::kFetch, 11, follower, EncodeFetchRequest, DecodeFetchResponse);
  EXPECT_EQ(r.responses.at(0).partitions.at(0).error_code, ErrorCode::kNotLeaderOrFollower);
  FetchRequest epoch = HandlerHarness::FetchOne("t", 0, 0);
  epoch.topics[0].partitions[0].current_leader_epoch = 5;
  r = h.Call(ApiKey::kFetch, 11, epoch, EncodeFetchRequest, DecodeFetchResponse);
  EXPECT_EQ(r.responses.at(0).partitions.at(0).error_code, ErrorCode::kUnknownLeaderEpoch);
  epoch.topics[0].partitions[0].current_leader_epoch = 0;
  r = h.Call(ApiKey::kFetch, 11, epoch, EncodeFetchRequest, DecodeFetchResponse);
  EXPECT_EQ(r.responses.at(0).partitions.at(0).error_code, ErrorCode::kNone);
}

}  // namespace
}  // namespace daruma::broker::testing
