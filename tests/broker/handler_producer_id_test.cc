// InitProducerId and the produce path of idempotent producers (issue 20):
// ids unique across restarts, Kafka's answers for a transactional id and bad
// id/epoch pairs, duplicate and sequence checks with Kafka's errors, and no
// transactional batch appended without a transaction that can end.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "broker/handler_harness.h"
#include "common/file_system.h"
#include "coordinator/producer_id_manager.h"
#include "protocol/messages.h"

namespace daruma::broker::testing {
namespace {

InitProducerIdResponse InitProducerId(HandlerHarness& h, int16_t version,
                                      std::optional<std::string> transactional_id = std::nullopt,
                                      int64_t producer_id = -1, int16_t producer_epoch = -1) {
  InitProducerIdRequest request;
  request.transactional_id = std::move(transactional_id);
  request.transaction_timeout_ms = 60000;
  request.producer_id = producer_id;
  request.producer_epoch = producer_epoch;
  return h.Call(ApiKey::kInitProducerId, version, request, EncodeInitProducerIdRequest,
                DecodeInitProducerIdResponse);
}

Bytes IdempotentBatch(int64_t producer_id, int16_t epoch, int32_t sequence,
                      const std::vector<std::string>& values, bool transactional = false) {
  return ProducerBatch(producer_id, epoch, sequence, values, transactional);
}

TEST(HandlerProducerId, IdempotentProducersGetDistinctIdsWithEpochZeroAcrossRestarts) {
  HandlerHarness h;
  std::set<int64_t> seen;
  for (int16_t version = 0; version <= 5; ++version) {
    InitProducerIdResponse r = InitProducerId(h, version);
    EXPECT_EQ(r.error_code, ErrorCode::kNone) << "v" << version;
    EXPECT_EQ(r.producer_epoch, 0);
    EXPECT_GE(r.producer_id, 0);
    EXPECT_TRUE(seen.insert(r.producer_id).second) << "id " << r.producer_id << " handed out twice";
  }
  const int64_t largest = *seen.rbegin();
  h.Restart();
  InitProducerIdResponse after = InitProducerId(h, 4);
  EXPECT_EQ(after.error_code, ErrorCode::kNone);
  EXPECT_GT(after.producer_id, largest);
  // KIP-360: an idempotent producer naming its old id and epoch starts over
  // under a new id, as with Kafka.
  InitProducerIdResponse bumped = InitProducerId(h, 3, std::nullopt, after.producer_id, 0);
  EXPECT_EQ(bumped.error_code, ErrorCode::kNone);
  EXPECT_GT(bumped.producer_id, after.producer_id);
  EXPECT_EQ(bumped.producer_epoch, 0);
}

TEST(HandlerProducerId, RequestsKafkaRefusesAreRefusedAndTransactionalIdsGoToTheCoordinator) {
  HandlerHarness h;
  InitProducerIdResponse no_epoch = InitProducerId(h, 3, std::nullopt, 5, -1);
  EXPECT_EQ(no_epoch.error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(no_epoch.producer_id, -1);
  EXPECT_EQ(no_epoch.producer_epoch, -1);
  EXPECT_EQ(InitProducerId(h, 3, std::nullopt, -1, 2).error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(InitProducerId(h, 1, std::string()).error_code, ErrorCode::kInvalidRequest);
  InitProducerIdResponse txn = InitProducerId(h, 4, std::string("orders-tx"));
  // Served by the transaction coordinator once it has loaded.
  for (int i = 0; i < 500 && txn.error_code == ErrorCode::kCoordinatorLoadInProgress; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    txn = InitProducerId(h, 4, std::string("orders-tx"));
  }
  EXPECT_EQ(txn.error_code, ErrorCode::kNone);
  EXPECT_GE(txn.producer_id, 0);
  EXPECT_EQ(txn.producer_epoch, 0);
  EXPECT_EQ(InitProducerId(h, 4, std::string("orders-tx")).producer_epoch, 1);
}

TEST(HandlerProducerId, RetriesAreAcknowledgedWithTheirOffsetsAndGapsAreOutOfOrder) {
  HandlerHarness h;
  ASSERT_EQ(h.CreateTopic("t", 1).topics.at(0).error_code, ErrorCode::kNone);
  const int64_t pid = InitProducerId(h, 4).producer_id;
  std::vector<Bytes> batches;
  for (int32_t seq = 0; seq < 6; ++seq) {
    batches.push_back(IdempotentBatch(pid, 0, seq, {"v" + std::to_string(seq)}));
    ProduceResponse::Partition p = h.Produce("t", 0, batches.back());
    ASSERT_EQ(p.error_code, ErrorCode::kNone) << "seq " << seq;
    EXPECT_EQ(p.base_offset, seq);
  }
  Log* log = h.manager().GetLog({"t", 0});
  ASSERT_NE(log, nullptr);
  ASSERT_EQ(log->log_end_offset(), 6);
  // Kafka keeps the last five batches of a producer: a retry of any of them
  // is acknowledged with its original offset and appends nothing.
  ProduceResponse::Partition retry = h.Produce("t", 0, batches[1]);
  EXPECT_EQ(retry.error_code, ErrorCode::kNone);
  EXPECT_EQ(retry.base_offset, 1);
  EXPECT_EQ(log->log_end_offset(), 6);
  // Older than the five is out of order, as is a gap.
  EXPECT_EQ(h.Produce("t", 0, batches[0]).error_code, ErrorCode::kOutOfOrderSequenceNumber);
  EXPECT_EQ(h.Produce("t", 0, IdempotentBatch(pid, 0, 9, {"gap"})).error_code,
            ErrorCode::kOutOfOrderSequenceNumber);
  EXPECT_EQ(log->log_end_offset(), 6);
  // A new epoch starts at sequence 0; the old epoch is then fenced.
  EXPECT_EQ(h.Produce("t", 0, IdempotentBatch(pid, 1, 0, {"e1"})).error_code, ErrorCode::kNone);
  EXPECT_EQ(h.Produce("t", 0, IdempotentBatch(pid, 0, 6, {"stale"})).error_code,
            ErrorCode::kInvalidProducerEpoch);
  EXPECT_EQ(log->log_end_offset(), 7);
}

TEST(HandlerProducerId, TransactionalBatchesAreNotAppendedWithoutATransaction) {
  HandlerHarness h;
  ASSERT_EQ(h.CreateTopic("t", 1).topics.at(0).error_code, ErrorCode::kNone);
  const Bytes txn_batch = IdempotentBatch(4242, 0, 0, {"tx"}, /*transactional=*/true);
  // With a transactional id: KIP-890's verification fails, nothing appended.
  ProduceRequest request = HandlerHarness::OneBatch("t", 0, txn_batch);
  request.transactional_id = "orders-tx";
  ProduceResponse r =
      h.Call(ApiKey::kProduce, 9, request, EncodeProduceRequest, DecodeProduceResponse);
  const ProduceResponse::Partition& p = r.responses.at(0).partition_responses.at(0);
  EXPECT_EQ(p.error_code, ErrorCode::kInvalidProducerIdMapping);
  ASSERT_TRUE(p.error_message.has_value());
  EXPECT_NE(p.error_message->find("producer id 4242 epoch 0"), std::string::npos)
      << *p.error_message;
  // Without one: Kafka's request-level TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
  EXPECT_EQ(h.Produce("t", 0, txn_batch).error_code,
            ErrorCode::kTransactionalIdAuthorizationFailed);
  Log* log = h.manager().GetLog({"t", 0});
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->log_end_offset(), 0);
  // The partition stays readable to read_committed consumers.
  EXPECT_EQ(h.Produce("t", 0, ClientBatch({"plain"})).error_code, ErrorCode::kNone);
  FetchResponse::Partition committed = h.Fetch("t", 0, 0, 11, /*isolation=*/1);
  EXPECT_EQ(committed.error_code, ErrorCode::kNone);
  EXPECT_EQ(committed.last_stable_offset, 1);
}

TEST(HandlerProducerId, NewIdsStartAboveTheLargestProducerIdTheLogsHold) {
  HandlerHarness h;
  ASSERT_EQ(h.CreateTopic("t", 1).topics.at(0).error_code, ErrorCode::kNone);
  // A producer id from elsewhere (data written by Kafka, or copied in).
  ASSERT_EQ(h.Produce("t", 0, IdempotentBatch(90000, 3, 0, {"kafka"})).error_code,
            ErrorCode::kNone);
  h.Restart();
  InitProducerIdResponse r = InitProducerId(h, 4);
  EXPECT_EQ(r.error_code, ErrorCode::kNone);
  EXPECT_GT(r.producer_id, 90000);
}

TEST(HandlerProducerId, NewIdsStartAboveEveryIdTheTransactionLogNames) {
  HandlerHarness h;
  // A transactional id that never wrote: its producer id is in
  // `__transaction_state` only, as a Kafka broker's dir holds ids its
  // controller handed out; the dir comes without Daruma's id file.
  InitProducerIdResponse txn = InitProducerId(h, 4, std::string("migrated-tx"));
  ASSERT_EQ(txn.error_code, ErrorCode::kNone);
  std::filesystem::remove(JoinPath(h.dir(), ProducerIdManager::kFileName));
  h.Restart();
  std::set<int64_t> ids;
  for (int i = 0; i < 3; ++i) {
    InitProducerIdResponse r = InitProducerId(h, 4);
    ASSERT_EQ(r.error_code, ErrorCode::kNone);
    EXPECT_GT(r.producer_id, txn.producer_id) << "an id the transaction log names, handed out";
    ids.insert(r.producer_id);
  }
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(InitProducerId(h, 4, std::string("migrated-tx")).producer_id, txn.producer_id);
}

}  // namespace
}  // namespace daruma::broker::testing
