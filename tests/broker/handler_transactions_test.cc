// The transaction APIs through the request handler (issue 20): a
// transaction's batches are invisible to read_committed fetches until its
// COMMIT marker, aborted ones come with their aborted-transaction ranges,
// transactional writes outside a transaction are refused with nothing
// appended (KIP-890 part 1), and the errors and version mappings Kafka's
// KafkaApis gives.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "broker/event_log.h"
#include "broker/handler_harness.h"
#include "coordinator/offsets_records.h"
#include "coordinator/transaction_log_records.h"
#include "protocol/messages.h"

namespace daruma::broker::testing {
namespace {

constexpr char kTid[] = "orders-tx";

Bytes TxnBatch(int64_t producer_id, int16_t epoch, int32_t sequence,
               const std::vector<std::string>& values) {
  return ProducerBatch(producer_id, epoch, sequence, values, /*transactional=*/true);
}

class HandlerTransactions : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(h.CreateTopic("t", 2).topics.at(0).error_code, ErrorCode::kNone);
  }

  InitProducerIdResponse Init(int16_t version = 4) {
    InitProducerIdRequest request;
    request.transactional_id = kTid;
    request.transaction_timeout_ms = 60000;
    return h.Call(ApiKey::kInitProducerId, version, request, EncodeInitProducerIdRequest,
                  DecodeInitProducerIdResponse);
  }
  AddPartitionsToTxnResponse Add(int64_t pid, int16_t epoch,
                                 const std::vector<std::pair<std::string, int32_t>>& partitions,
                                 int16_t version = 3) {
    AddPartitionsToTxnRequest request;
    request.v3_and_below_transactional_id = kTid;
    request.v3_and_below_producer_id = pid;
    request.v3_and_below_producer_epoch = epoch;
    for (const auto& [topic, partition] : partitions) {
      if (request.v3_and_below_topics.empty() || request.v3_and_below_topics.back().name != topic) {
        request.v3_and_below_topics.emplace_back();
        request.v3_and_below_topics.back().name = topic;
      }
      request.v3_and_below_topics.back().partitions.push_back(partition);
    }
    return h.Call(ApiKey::kAddPartitionsToTxn, version, request, EncodeAddPartitionsToTxnRequest,
                  DecodeAddPartitionsToTxnResponse);
  }
  ErrorCode End(int64_t pid, int16_t epoch, bool commit, int16_t version = 3) {
    EndTxnRequest request;
    request.transactional_id = kTid;
    request.producer_id = pid;
    request.producer_epoch = epoch;
    request.committed = commit;
    return h.Call(ApiKey::kEndTxn, version, request, EncodeEndTxnRequest, DecodeEndTxnResponse)
        .error_code;
  }
  ProduceResponse::Partition Produce(int32_t partition, const Bytes& batch) {
    ProduceRequest request = HandlerHarness::OneBatch("t", partition, batch);
    request.transactional_id = kTid;
    request.acks = -1;
    ProduceResponse r =
        h.Call(ApiKey::kProduce, 9, request, EncodeProduceRequest, DecodeProduceResponse);
    return r.responses.at(0).partition_responses.at(0);
  }
  int64_t LogEnd(int32_t partition) {
    return h.manager().GetLog({"t", partition})->log_end_offset();
  }

  HandlerHarness h;
};

TEST_F(HandlerTransactions, ACommittedTransactionBecomesVisibleToReadCommittedWithItsMarker) {
  InitProducerIdResponse p = Init();
  ASSERT_EQ(p.error_code, ErrorCode::kNone);
  AddPartitionsToTxnResponse added = Add(p.producer_id, p.producer_epoch, {{"t", 0}, {"t", 1}});
  ASSERT_EQ(added.results_by_topic_v3_and_below.size(), 1u);
  for (const auto& r : added.results_by_topic_v3_and_below[0].results_by_partition) {
    EXPECT_EQ(r.partition_error_code, ErrorCode::kNone);
  }
  ASSERT_EQ(Produce(0, TxnBatch(p.producer_id, 0, 0, {"a", "b"})).error_code, ErrorCode::kNone);
  ASSERT_EQ(Produce(1, TxnBatch(p.producer_id, 0, 0, {"c"})).error_code, ErrorCode::kNone);
  FetchResponse::Partition before = h.Fetch("t", 0, 0, 11, /*isolation=*/1);
  EXPECT_EQ(before.last_stable_offset, 0);
  EXPECT_EQ(before.high_watermark, 2);
  EXPECT_TRUE(!before.records || before.records->empty());
  ASSERT_EQ(End(p.producer_id, p.producer_epoch, true), ErrorCode::kNone);
  // The two records and the marker.
  EXPECT_EQ(LogEnd(0), 3);
  EXPECT_EQ(LogEnd(1), 2);
  FetchResponse::Partition after = h.Fetch("t", 0, 0, 11, /*isolation=*/1);
  EXPECT_EQ(after.last_stable_offset, 3);
  EXPECT_TRUE(after.records && !after.records->empty());
  ASSERT_TRUE(after.aborted_transactions.has_value());
  EXPECT_TRUE(after.aborted_transactions->empty());
}

TEST_F(HandlerTransactions, AnAbortedTransactionIsReportedWithItsRange) {
  InitProducerIdResponse p = Init();
  ASSERT_EQ(Add(p.producer_id, 0, {{"t", 0}}).results_by_topic_v3_and_below.size(), 1u);
  ASSERT_EQ(Produce(0, TxnBatch(p.producer_id, 0, 0, {"x", "y"})).error_code, ErrorCode::kNone);
  ASSERT_EQ(End(p.producer_id, 0, false), ErrorCode::kNone);
  FetchResponse::Partition f = h.Fetch("t", 0, 0, 11, /*isolation=*/1);
  EXPECT_EQ(f.last_stable_offset, 3);
  ASSERT_TRUE(f.aborted_transactions.has_value());
  ASSERT_EQ(f.aborted_transactions->size(), 1u);
  EXPECT_EQ(f.aborted_transactions->at(0).producer_id, p.producer_id);
  EXPECT_EQ(f.aborted_transactions->at(0).first_offset, 0);
}

TEST_F(HandlerTransactions, WritesOutsideTheTransactionAreRefusedWithNothingAppended) {
  InitProducerIdResponse p = Init();
  // Not added yet.
  EXPECT_EQ(Produce(0, TxnBatch(p.producer_id, 0, 0, {"early"})).error_code,
            ErrorCode::kInvalidTxnState);
  ASSERT_EQ(Add(p.producer_id, 0, {{"t", 0}}).results_by_topic_v3_and_below.size(), 1u);
  // Another partition, a forged producer id, a future epoch.
  EXPECT_EQ(Produce(1, TxnBatch(p.producer_id, 0, 0, {"elsewhere"})).error_code,
            ErrorCode::kInvalidTxnState);
  EXPECT_EQ(Produce(0, TxnBatch(p.producer_id + 77, 0, 0, {"forged"})).error_code,
            ErrorCode::kInvalidProducerIdMapping);
  EXPECT_EQ(Produce(0, TxnBatch(p.producer_id, 5, 0, {"future"})).error_code,
            ErrorCode::kInvalidProducerEpoch);
  EXPECT_EQ(LogEnd(0), 0);
  EXPECT_EQ(LogEnd(1), 0);
  ASSERT_EQ(End(p.producer_id, 0, true), ErrorCode::kNone);
  // After the marker the transaction is over: a late batch would open a
  // transaction nothing could end.
  EXPECT_EQ(Produce(0, TxnBatch(p.producer_id, 0, 0, {"late"})).error_code,
            ErrorCode::kInvalidTxnState);
  EXPECT_EQ(LogEnd(0), 1);  // the marker only
  EXPECT_EQ(h.Fetch("t", 0, 0, 11, /*isolation=*/1).last_stable_offset, 1);
}

TEST_F(HandlerTransactions, ANewInstanceFencesTheOldOneWhoseWritesAreThenRefused) {
  InitProducerIdResponse old = Init();
  ASSERT_EQ(Add(old.producer_id, 0, {{"t", 0}}).results_by_topic_v3_and_below.size(), 1u);
  ASSERT_EQ(Produce(0, TxnBatch(old.producer_id, 0, 0, {"old"})).error_code, ErrorCode::kNone);
  // The first try aborts the old instance's transaction and asks to retry.
  EXPECT_EQ(Init().error_code, ErrorCode::kConcurrentTransactions);
  InitProducerIdResponse fresh = Init();
  ASSERT_EQ(fresh.error_code, ErrorCode::kNone);
  EXPECT_EQ(fresh.producer_id, old.producer_id);
  EXPECT_EQ(fresh.producer_epoch, 2);
  EXPECT_EQ(Produce(0, TxnBatch(old.producer_id, 0, 1, {"zombie"})).error_code,
            ErrorCode::kInvalidProducerEpoch);
  EXPECT_EQ(End(old.producer_id, 0, true, /*version=*/3), ErrorCode::kProducerFenced);
  // Before PRODUCER_FENCED existed (v0-1) the same is INVALID_PRODUCER_EPOCH.
  EXPECT_EQ(End(old.producer_id, 0, true, /*version=*/1), ErrorCode::kInvalidProducerEpoch);
  FetchResponse::Partition f = h.Fetch("t", 0, 0, 11, /*isolation=*/1);
  EXPECT_EQ(f.last_stable_offset, LogEnd(0));
  ASSERT_TRUE(f.aborted_transactions.has_value());
  EXPECT_EQ(f.aborted_transactions->size(), 1u);
}

TEST_F(HandlerTransactions, AnUnknownTopicFailsTheWholeAddWithoutTouchingTheCoordinator) {
  InitProducerIdResponse p = Init();
  AddPartitionsToTxnResponse r = Add(p.producer_id, 0, {{"t", 0}, {"missing", 0}});
  std::map<std::string, ErrorCode> errors;
  for (const auto& topic : r.results_by_topic_v3_and_below) {
    for (const auto& part : topic.results_by_partition) {
      errors[topic.name + "-" + std::to_string(part.partition_index)] = part.partition_error_code;
    }
  }
  EXPECT_EQ(errors["missing-0"], ErrorCode::kUnknownTopicOrPartition);
  EXPECT_EQ(errors["t-0"], ErrorCode::kOperationNotAttempted);
  EXPECT_EQ(Produce(0, TxnBatch(p.producer_id, 0, 0, {"x"})).error_code,
            ErrorCode::kInvalidTxnState);
}

TEST_F(HandlerTransactions, DescribeAndListSurviveARestart) {
  InitProducerIdResponse p = Init();
  ASSERT_EQ(Add(p.producer_id, 0, {{"t", 1}}).results_by_topic_v3_and_below.size(), 1u);
  h.Restart();
  DescribeTransactionsRequest describe;
  describe.transactional_ids = {kTid, "nobody"};
  DescribeTransactionsResponse d =
      h.Call(ApiKey::kDescribeTransactions, 0, describe, EncodeDescribeTransactionsRequest,
             DecodeDescribeTransactionsResponse);
  ASSERT_EQ(d.transaction_states.size(), 2u);
  EXPECT_EQ(d.transaction_states[0].error_code, ErrorCode::kNone);
  EXPECT_EQ(d.transaction_states[0].transaction_state, "Ongoing");
  EXPECT_EQ(d.transaction_states[0].producer_id, p.producer_id);
  ASSERT_EQ(d.transaction_states[0].topics.size(), 1u);
  EXPECT_EQ(d.transaction_states[0].topics[0].partitions, std::vector<int32_t>{1});
  EXPECT_EQ(d.transaction_states[1].error_code, ErrorCode::kTransactionalIdNotFound);
  ListTransactionsRequest list;
  list.state_filters = {"Ongoing", "Bogus"};
  ListTransactionsResponse l =
      h.Call(ApiKey::kListTransactions, 1, list, EncodeListTransactionsRequest,
             DecodeListTransactionsResponse);
  EXPECT_EQ(l.error_code, ErrorCode::kNone);
  EXPECT_EQ(l.unknown_state_filters, std::vector<std::string>{"Bogus"});
  ASSERT_EQ(l.transaction_states.size(), 1u);
  EXPECT_EQ(l.transaction_states[0].transactional_id, kTid);
  // The producer carries on after the restart.
  ASSERT_EQ(Produce(1, TxnBatch(p.producer_id, 0, 0, {"after"})).error_code, ErrorCode::kNone);
  EXPECT_EQ(End(p.producer_id, 0, true), ErrorCode::kNone);
  EXPECT_EQ(h.Fetch("t", 1, 0, 11, /*isolation=*/1).last_stable_offset, 2);
}

// A transaction in the logs that no coordinator knows (data another broker
// wrote, or a lost `__transaction_state`) would hold its partition's last
// stable offset back for good: after a restart it is aborted once
// transaction.max.timeout.ms has passed since its last batch.
TEST(HandlerHangingTransactions, AnOpenTransactionNoCoordinatorKnowsIsAbortedAfterTheMaxTimeout) {
  HandlerHarness h([](BrokerContext& ctx) { ctx.transactions.max_timeout_ms = 1; });
  ASSERT_EQ(h.CreateTopic("t", 1).topics.at(0).error_code, ErrorCode::kNone);
  Log* log = h.manager().GetLog({"t", 0});
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(log->AppendAsLeader(TxnBatch(9000, 3, 0, {"orphan", "orphan"}), 0).ok());
  log->UpdateHighWatermark(log->log_end_offset());
  EXPECT_EQ(h.Fetch("t", 0, 0, 11, /*isolation=*/1).last_stable_offset, 0);
  h.Restart();
  FetchResponse::Partition f;
  for (int i = 0; i < 500; ++i) {
    f = h.Fetch("t", 0, 0, 11, /*isolation=*/1);
    if (f.last_stable_offset == 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(f.last_stable_offset, 3);  // two records and the ABORT marker
  ASSERT_TRUE(f.aborted_transactions.has_value());
  ASSERT_EQ(f.aborted_transactions->size(), 1u);
  EXPECT_EQ(f.aborted_transactions->at(0).producer_id, 9000);
}

// A transaction the coordinator had decided when the broker stopped, but
// whose markers it had not written: its load writes them, then records
// CompleteAbort. The broker's sweep for hanging transactions works from the
// open transactions the logs held before that load, and must not take this
// one, ended meanwhile and no longer the coordinator's, for one nobody owns:
// it used to warn, then write a second ABORT marker, or fail with
// INVALID_PRODUCER_EPOCH where the coordinator had bumped the epoch (an
// Ongoing transaction whose timeout passed while the broker was down).
TEST(HandlerHangingTransactions, ATransactionTheCoordinatorEndsAtLoadIsNotReportedHanging) {
  std::ostringstream out;
  EventLog events{{&out, LogLevel::kInfo, 1000, "", {}}};
  {
    HandlerHarness h([&](BrokerContext& ctx) {
      ctx.log = &events;
      ctx.transactions.max_timeout_ms = 100;
    });
    ASSERT_EQ(h.CreateTopic("t", 1).topics.at(0).error_code, ErrorCode::kNone);
    InitProducerIdRequest init;
    init.transactional_id = kTid;
    init.transaction_timeout_ms = 100;
    InitProducerIdResponse p = h.Call(ApiKey::kInitProducerId, 4, init, EncodeInitProducerIdRequest,
                                      DecodeInitProducerIdResponse);
    ASSERT_EQ(p.error_code, ErrorCode::kNone);
    AddPartitionsToTxnRequest add;
    add.v3_and_below_transactional_id = kTid;
    add.v3_and_below_producer_id = p.producer_id;
    add.v3_and_below_producer_epoch = p.producer_epoch;
    add.v3_and_below_topics.emplace_back();
    add.v3_and_below_topics.back().name = "t";
    add.v3_and_below_topics.back().partitions = {0};
    h.Call(ApiKey::kAddPartitionsToTxn, 3, add, EncodeAddPartitionsToTxnRequest,
           DecodeAddPartitionsToTxnResponse);
    // OneBatch refers to the batch's bytes: they must outlive the call.
    const Bytes batch = TxnBatch(p.producer_id, p.producer_epoch, 0, {"open", "at", "stop"});
    ProduceRequest produce = HandlerHarness::OneBatch("t", 0, batch);
    produce.transactional_id = kTid;
    produce.acks = -1;
    ProduceResponse produced =
        h.Call(ApiKey::kProduce, 9, produce, EncodeProduceRequest, DecodeProduceResponse);
    ASSERT_EQ(produced.responses.at(0).partition_responses.at(0).error_code, ErrorCode::kNone);
    // EndTxn(abort)'s first record, without its markers: a crash in between.
    TransactionMetadata prepare;
    prepare.transactional_id = kTid;
    prepare.producer_id = p.producer_id;
    prepare.producer_epoch = p.producer_epoch;
    prepare.timeout_ms = 100;
    prepare.state = TransactionState::kPrepareAbort;
    prepare.partitions = {TopicPartition{"t", 0}};
    prepare.start_timestamp_ms = prepare.last_update_timestamp_ms = 1;
    RecordInput record;
    record.key = std::string(AsStringView(EncodeTransactionLogKey(kTid)));
    record.value = std::string(AsStringView(EncodeTransactionLogValue(prepare)));
    Result<Bytes> state = BuildRecordBatch({}, {record});
    ASSERT_TRUE(state.ok());
    Log* state_log = h.manager().GetLog({kTransactionStateTopic, OffsetsPartitionFor(kTid, 50)});
    ASSERT_NE(state_log, nullptr);
    ASSERT_TRUE(state_log->AppendAsLeader(*state, 0).ok());
    const int64_t end_with_marker = h.manager().GetLog({"t", 0})->log_end_offset() + 1;
    h.Restart();
    EXPECT_EQ(h.Fetch("t", 0, 0, 11, /*isolation=*/1).last_stable_offset, end_with_marker);
    // Past any abort the sweep would have scheduled (max timeout 100 ms).
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(h.manager().GetLog({"t", 0})->log_end_offset(), end_with_marker);
  }
  EXPECT_EQ(out.str().find("hanging_transaction"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace daruma::broker::testing
