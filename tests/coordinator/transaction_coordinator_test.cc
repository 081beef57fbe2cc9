// TransactionCoordinator over an in-memory `__transaction_state` (real
// record batches, so every record goes through Kafka's encoding and the
// loader) and a marker writer that records what it was asked to write.
#include "coordinator/transaction_coordinator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "common/clock.h"
#include "common/scheduler.h"
#include "coordinator/transaction_log_records.h"
#include "record/record_batch.h"
#include "record/record_batch_builder.h"

namespace daruma {
namespace {

// Batches per partition, as a log would hold them.
class MemoryStorage final : public GroupStorage {
 public:
  Result<int64_t> Append(int32_t partition, const std::vector<RecordInput>& records,
                         const std::optional<ProducerBatchInfo>&) override {
    if (fail) return Status::IoError("injected: __transaction_state append failed");
    const int64_t first = next_offset[partition];
    BatchBuilderOptions options;
    options.base_offset = next_offset[partition];
    Result<Bytes> batch = BuildRecordBatch(options, records);
    if (!batch.ok()) return batch.status();
    next_offset[partition] += int64_t(records.size());
    batches[partition].push_back(std::move(*batch));
    ++appends;
    return first;
  }
  Status ReadBatches(int32_t partition,
                     const std::function<Status(const RecordBatchView&)>& visit) override {
    if (unreadable.count(partition) > 0) return Status::IoError("injected: unreadable");
    for (const Bytes& b : batches[partition]) {
      Result<RecordBatchView> view = RecordBatchView::Parse(ByteSpan(b));
      if (!view.ok()) return view.status();
      if (Status s = visit(*view); !s.ok()) return s;
    }
    return Status::Ok();
  }
  bool SyncsEveryAppend(int32_t) override { return syncs; }
  std::map<int32_t, std::vector<Bytes>> batches;
  std::map<int32_t, int64_t> next_offset;
  bool syncs = false;
  std::set<int32_t> unreadable;
  bool fail = false;
  int appends = 0;
};

struct Marker {
  TopicPartition tp;
  int64_t producer_id;
  int16_t epoch;
  bool commit;
  bool operator==(const Marker&) const = default;
};

class RecordingMarkers final : public TxnMarkerWriter {
 public:
  Status WriteMarker(const TopicPartition& tp, int64_t producer_id, int16_t producer_epoch,
                     bool commit) override {
    if (failing.count(tp) > 0) return Status::IoError("injected: marker append failed");
    if (deleted.count(tp) > 0) return Status::NotFound("deleted");
    written.push_back({tp, producer_id, producer_epoch, commit});
    return Status::Ok();
  }
  Status SyncMarkers(const std::set<TopicPartition>& partitions) override {
    if (sync_fails) return Status::IoError("injected: fsync failed");
    synced.push_back(partitions);
    return Status::Ok();
  }
  std::vector<Marker> written;
  std::vector<std::set<TopicPartition>> synced;
  bool sync_fails = false;
  std::set<TopicPartition> failing;
  std::set<TopicPartition> deleted;
};

const TopicPartition kA{"orders", 0};
const TopicPartition kB{"orders", 1};
const TopicPartition kC{"audit", 3};

class TransactionCoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(); }

  // A coordinator on the same storage, loaded: a restart.
  void Start() {
    coordinator.reset();
    coordinator = std::make_unique<TransactionCoordinator>(
        config, &storage, &markers, [this]() -> Result<int64_t> { return next_id++; }, &scheduler);
    Result<TxnLoadReport> report = coordinator->Load();
    ASSERT_TRUE(report.ok());
    last_load = *report;
  }
  void Advance(int64_t ms) {
    clock.Advance(ms);
    for (int i = 0; i < 100 && scheduler.RunDueJobs() > 0; ++i) {
    }
  }
  InitProducerIdResult Init(const std::string& id,
                            std::optional<std::pair<int64_t, int16_t>> expected = std::nullopt) {
    return coordinator->InitProducerId(id, 60000, expected);
  }

  TransactionCoordinatorConfig config;
  ManualClock clock{1'700'000'000'000};
  Scheduler scheduler{&clock, 1, Scheduler::Mode::kManual};
  MemoryStorage storage;
  RecordingMarkers markers;
  int64_t next_id = 1000;
  TxnLoadReport last_load;
  std::unique_ptr<TransactionCoordinator> coordinator;
};

TEST_F(TransactionCoordinatorTest, InitProducerIdBumpsTheEpochOfAKnownId) {
  InitProducerIdResult first = Init("t1");
  ASSERT_EQ(first.error, ErrorCode::kNone);
  EXPECT_EQ(first.producer_id, 1000);
  EXPECT_EQ(first.producer_epoch, 0);
  InitProducerIdResult second = Init("t1");
  EXPECT_EQ(second.producer_id, 1000);
  EXPECT_EQ(second.producer_epoch, 1);
  // KIP-360: the producer names its id and epoch; a retry with the epoch it
  // had before gets the same epoch again, any other epoch is fenced.
  InitProducerIdResult bumped = Init("t1", std::pair<int64_t, int16_t>{1000, 1});
  EXPECT_EQ(bumped.producer_epoch, 2);
  EXPECT_EQ(Init("t1", std::pair<int64_t, int16_t>{1000, 1}).producer_epoch, 2);
  EXPECT_EQ(Init("t1", std::pair<int64_t, int16_t>{1000, 0}).error, ErrorCode::kProducerFenced);
  EXPECT_EQ(Init("t1", std::pair<int64_t, int16_t>{7, 0}).error, ErrorCode::kProducerFenced);
  EXPECT_EQ(Init("t2").producer_id, 1001);
  EXPECT_EQ(coordinator->InitProducerId("t1", 0, std::nullopt).error,
            ErrorCode::kInvalidTransactionTimeout);
  EXPECT_EQ(coordinator->InitProducerId("t1", config.max_timeout_ms + 1, std::nullopt).error,
            ErrorCode::kInvalidTransactionTimeout);
  EXPECT_EQ(Init("").error, ErrorCode::kInvalidRequest);
}

TEST_F(TransactionCoordinatorTest, CommitWritesAMarkerToEveryPartitionThenCompletes) {
  InitProducerIdResult p = Init("t1");
  ASSERT_EQ(coordinator->AddPartitions("t1", p.producer_id, p.producer_epoch, {kA, kB}),
            ErrorCode::kNone);
  ASSERT_EQ(coordinator->AddPartitions("t1", p.producer_id, p.producer_epoch, {kC}),
            ErrorCode::kNone);
  EXPECT_EQ(coordinator->Describe("t1").state, "Ongoing");
  EXPECT_EQ(coordinator->Describe("t1").partitions.size(), 3u);
  ASSERT_EQ(coordinator->EndTransaction("t1", p.producer_id, p.producer_epoch, true),
            ErrorCode::kNone);
  std::vector<Marker> expected = {{kC, 1000, 0, true}, {kA, 1000, 0, true}, {kB, 1000, 0, true}};
  EXPECT_EQ(markers.written, expected);
  TransactionDescription d = coordinator->Describe("t1");
  EXPECT_EQ(d.state, "CompleteCommit");
  EXPECT_TRUE(d.partitions.empty());
  // A retry of the same decision succeeds; the opposite one does not.
  EXPECT_EQ(coordinator->EndTransaction("t1", p.producer_id, p.producer_epoch, true),
            ErrorCode::kNone);
  EXPECT_EQ(coordinator->EndTransaction("t1", p.producer_id, p.producer_epoch, false),
            ErrorCode::kInvalidTxnState);
  EXPECT_EQ(markers.written.size(), 3u);
  // The next transaction starts from CompleteCommit with only its partitions.
  ASSERT_EQ(coordinator->AddPartitions("t1", p.producer_id, p.producer_epoch, {kB}),
            ErrorCode::kNone);
  ASSERT_EQ(coordinator->EndTransaction("t1", p.producer_id, p.producer_epoch, false),
            ErrorCode::kNone);
  EXPECT_EQ(markers.written.back(), (Marker{kB, 1000, 0, false}));
  EXPECT_EQ(markers.written.size(), 4u);
}

TEST_F(TransactionCoordinatorTest, RequestsFromTheWrongProducerAreRefused) {
  InitProducerIdResult p = Init("t1");
  EXPECT_EQ(coordinator->AddPartitions("nobody", p.producer_id, 0, {kA}),
            ErrorCode::kInvalidProducerIdMapping);
  EXPECT_EQ(coordinator->AddPartitions("t1", p.producer_id + 1, 0, {kA}),
            ErrorCode::kInvalidProducerIdMapping);
  EXPECT_EQ(coordinator->AddPartitions("t1", p.producer_id, 5, {kA}), ErrorCode::kProducerFenced);
  EXPECT_EQ(coordinator->EndTransaction("t1", p.producer_id, 0, true),
            ErrorCode::kInvalidTxnState);  // Empty: nothing to end
  EXPECT_EQ(coordinator->EndTransaction("nobody", 1, 0, true),
            ErrorCode::kInvalidProducerIdMapping);
  EXPECT_TRUE(markers.written.empty());
}

TEST_F(TransactionCoordinatorTest, ANewInstanceFencesTheOngoingTransactionAndAbortsIt) {
  InitProducerIdResult old = Init("t1");
  ASSERT_EQ(coordinator->AddPartitions("t1", old.producer_id, old.producer_epoch, {kA}),
            ErrorCode::kNone);
  EXPECT_EQ(Init("t1").error, ErrorCode::kConcurrentTransactions);
  ASSERT_EQ(markers.written.size(), 1u);
  EXPECT_EQ(markers.written[0], (Marker{kA, 1000, 1, false}));
  InitProducerIdResult fresh = Init("t1");
  ASSERT_EQ(fresh.error, ErrorCode::kNone);
  EXPECT_EQ(fresh.producer_epoch, 2);
  EXPECT_EQ(coordinator->EndTransaction("t1", old.producer_id, old.producer_epoch, true),
            ErrorCode::kProducerFenced);
}

TEST_F(TransactionCoordinatorTest, ATimedOutTransactionIsAbortedAndItsProducerFenced) {
  InitProducerIdResult p = Init("t1");
  ASSERT_EQ(coordinator->AddPartitions("t1", p.producer_id, p.producer_epoch, {kA, kB}),
            ErrorCode::kNone);
  Advance(59000);
  EXPECT_TRUE(markers.written.empty());
  Advance(config.abort_check_interval_ms);
  ASSERT_EQ(markers.written.size(), 2u);
  EXPECT_EQ(markers.written[0], (Marker{kA, 1000, 1, false}));
  EXPECT_EQ(coordinator->Describe("t1").state, "CompleteAbort");
  EXPECT_EQ(coordinator->AddPartitions("t1", p.producer_id, p.producer_epoch, {kA}),
            ErrorCode::kProducerFenced);
}

TEST_F(TransactionCoordinatorTest, WritesAreVerifiedAgainstTheOngoingTransaction) {
  InitProducerIdResult p = Init("t1");
  int writes = 0;
  auto write = [&] { ++writes; };
  EXPECT_EQ(coordinator->WithOngoingTransaction("t1", p.producer_id, 0, kA, write),
            ErrorCode::kInvalidTxnState);
  ASSERT_EQ(coordinator->AddPartitions("t1", p.producer_id, 0, {kA}), ErrorCode::kNone);
  EXPECT_EQ(coordinator->WithOngoingTransaction("t1", p.producer_id, 0, kA, write),
            ErrorCode::kNone);
  EXPECT_EQ(coordinator->WithOngoingTransaction("t1", p.producer_id, 0, kB, write),
            ErrorCode::kInvalidTxnState);
  EXPECT_EQ(coordinator->WithOngoingTransaction("t1", p.producer_id, 3, kA, write),
            ErrorCode::kInvalidProducerEpoch);
  EXPECT_EQ(coordinator->WithOngoingTransaction("t1", 42, 0, kA, write),
            ErrorCode::kInvalidProducerIdMapping);
  EXPECT_EQ(coordinator->WithOngoingTransaction("unknown", 42, 0, kA, write),
            ErrorCode::kInvalidProducerIdMapping);
  ASSERT_EQ(coordinator->EndTransaction("t1", p.producer_id, 0, true), ErrorCode::kNone);
  // After the marker, nothing more may join the transaction.
  EXPECT_EQ(coordinator->WithOngoingTransaction("t1", p.producer_id, 0, kA, write),
            ErrorCode::kInvalidTxnState);
  EXPECT_EQ(writes, 1);
  std::map<TopicPartition, ErrorCode> verified =
      coordinator->VerifyPartitions("t1", p.producer_id, 0, {kA});
  EXPECT_EQ(verified[kA], ErrorCode::kTransactionAbortable);
}

TEST_F(TransactionCoordinatorTest, AMarkerThatCannotBeWrittenIsRetried) {
  InitProducerIdResult p = Init("t1");
  ASSERT_EQ(coordinator->AddPartitions("t1", p.producer_id, 0, {kA, kB}), ErrorCode::kNone);
  markers.failing = {kB};
  // The decision is durable, so the client is told NONE.
  EXPECT_EQ(coordinator->EndTransaction("t1", p.producer_id, 0, true), ErrorCode::kNone);
  EXPECT_EQ(coordinator->Describe("t1").state, "PrepareCommit");
  EXPECT_EQ(coordinator->PendingMarkerCount(), 1u);
  EXPECT_EQ(Init("t1").error, ErrorCode::kConcurrentTransactions);
  EXPECT_EQ(coordinator->EndTransaction("t1", p.producer_id, 0, true),
            ErrorCode::kConcurrentTransactions);
  markers.failing.clear();
  Advance(config.abort_check_interval_ms);
  EXPECT_EQ(coordinator->Describe("t1").state, "CompleteCommit");
  // kA's marker was written once, kB's once, after the retry.
  std::vector<Marker> expected = {{kA, 1000, 0, true}, {kB, 1000, 0, true}};
  EXPECT_EQ(markers.written, expected);
  EXPECT_EQ(coordinator->PendingMarkerCount(), 0u);
}

TEST_F(TransactionCoordinatorTest, MarkersAreMadeDurableBeforeAFsyncedCompleteRecord) {
  InitProducerIdResult p = Init("t1");
  ASSERT_EQ(coordinator->AddPartitions("t1", p.producer_id, 0, {kA, kB}), ErrorCode::kNone);
  ASSERT_EQ(coordinator->EndTransaction("t1", p.producer_id, 0, true), ErrorCode::kNone);
  // A state log without fsync per append: markers follow their own topics.
  EXPECT_TRUE(markers.synced.empty());
  storage.syncs = true;
  ASSERT_EQ(coordinator->AddPartitions("t1", p.producer_id, 0, {kA, kB}), ErrorCode::kNone);
  markers.sync_fails = true;
  ASSERT_EQ(coordinator->EndTransaction("t1", p.producer_id, 0, false), ErrorCode::kNone);
  // Complete is not recorded over markers that may not survive a power loss.
  EXPECT_EQ(coordinator->Describe("t1").state, "PrepareAbort");
  EXPECT_EQ(coordinator->PendingMarkerCount(), 1u);
  markers.sync_fails = false;
  Advance(config.abort_check_interval_ms);
  EXPECT_EQ(coordinator->Describe("t1").state, "CompleteAbort");
  EXPECT_EQ(markers.synced, (std::vector<std::set<TopicPartition>>{{kA, kB}}));
}

TEST_F(TransactionCoordinatorTest, ADeletedPartitionGetsNoMarker) {
  InitProducerIdResult p = Init("t1");
  ASSERT_EQ(coordinator->AddPartitions("t1", p.producer_id, 0, {kA, kB}), ErrorCode::kNone);
  markers.deleted = {kA};
  EXPECT_EQ(coordinator->EndTransaction("t1", p.producer_id, 0, false), ErrorCode::kNone);
  EXPECT_EQ(coordinator->Describe("t1").state, "CompleteAbort");
  EXPECT_EQ(markers.written, (std::vector<Marker>{{kB, 1000, 0, false}}));
}

TEST_F(TransactionCoordinatorTest, AFailedStateAppendChangesNothing) {
  InitProducerIdResult p = Init("t1");
  storage.fail = true;
  EXPECT_EQ(coordinator->AddPartitions("t1", p.producer_id, 0, {kA}),
            ErrorCode::kCoordinatorNotAvailable);
  EXPECT_EQ(coordinator->Describe("t1").state, "Empty");
  storage.fail = false;
  ASSERT_EQ(coordinator->AddPartitions("t1", p.producer_id, 0, {kA}), ErrorCode::kNone);
  storage.fail = true;
  EXPECT_EQ(coordinator->EndTransaction("t1", p.producer_id, 0, true),
            ErrorCode::kCoordinatorNotAvailable);
  EXPECT_EQ(coordinator->Describe("t1").state, "Ongoing");
  EXPECT_TRUE(markers.written.empty());
}

TEST_F(TransactionCoordinatorTest, RestartFinishesADecisionWhoseMarkersWereCutShort) {
  InitProducerIdResult p = Init("t1");
  ASSERT_EQ(coordinator->AddPartitions("t1", p.producer_id, 0, {kA, kB}), ErrorCode::kNone);
  // A crash after PrepareCommit was stored and kA's marker written: the
  // marker writer dies before kB.
  markers.failing = {kB};
  ASSERT_EQ(coordinator->EndTransaction("t1", p.producer_id, 0, true), ErrorCode::kNone);
  markers.failing.clear();
  markers.written.clear();
  Start();
  EXPECT_EQ(last_load.completed, 1);
  EXPECT_EQ(coordinator->Describe("t1").state, "CompleteCommit");
  // Every marker is written again: a marker twice is harmless, one missing is not.
  std::vector<Marker> expected = {{kA, 1000, 0, true}, {kB, 1000, 0, true}};
  EXPECT_EQ(markers.written, expected);
  Start();
  EXPECT_EQ(last_load.completed, 0);
  EXPECT_EQ(coordinator->Describe("t1").state, "CompleteCommit");
  EXPECT_EQ(coordinator->Describe("t1").producer_epoch, 0);
}

TEST_F(TransactionCoordinatorTest, RestartAbortsAnOngoingTransactionWhenItsTimeoutPasses) {
  InitProducerIdResult p = Init("t1");
  ASSERT_EQ(coordinator->AddPartitions("t1", p.producer_id, 0, {kA}), ErrorCode::kNone);
  Advance(20000);
  Start();
  EXPECT_EQ(last_load.ongoing, 1);
  EXPECT_EQ(coordinator->Describe("t1").state, "Ongoing");
  // The load scheduled the abort at the transaction's own deadline (60 s
  // after it began), not a check interval later.
  Advance(39999);
  EXPECT_TRUE(markers.written.empty());
  Advance(1);
  ASSERT_EQ(markers.written.size(), 1u);
  EXPECT_EQ(markers.written[0], (Marker{kA, 1000, 1, false}));
  EXPECT_EQ(coordinator->Describe("t1").state, "CompleteAbort");
}

TEST_F(TransactionCoordinatorTest, IdleIdsExpireWithATombstone) {
  config.id_expiration_ms = 3600000;
  config.id_expiration_check_interval_ms = 600000;
  Start();
  InitProducerIdResult p = Init("idle");
  InitProducerIdResult busy = Init("busy");
  ASSERT_EQ(coordinator->AddPartitions("busy", busy.producer_id, 0, {kA}), ErrorCode::kNone);
  Advance(3600000);
  EXPECT_EQ(coordinator->Describe("idle").error, ErrorCode::kTransactionalIdNotFound);
  // "busy" timed out and was aborted after a minute: idle for less than the
  // expiration since.
  EXPECT_EQ(coordinator->Describe("busy").state, "CompleteAbort");
  EXPECT_EQ(coordinator->AddPartitions("idle", p.producer_id, 0, {kA}),
            ErrorCode::kInvalidProducerIdMapping);
  Start();
  EXPECT_EQ(coordinator->Describe("idle").error, ErrorCode::kTransactionalIdNotFound);
  // A new producer under the same id gets a new producer id.
  EXPECT_NE(Init("idle").producer_id, p.producer_id);
}

TEST_F(TransactionCoordinatorTest, AnExhaustedEpochRotatesTheProducerId) {
  InitProducerIdResult p = Init("t1");
  // Bump until the epoch is exhausted, through the stored records.
  for (int i = 0; i < INT16_MAX - 1; ++i) ASSERT_EQ(Init("t1").error, ErrorCode::kNone);
  InitProducerIdResult last = Init("t1");
  EXPECT_NE(last.producer_id, p.producer_id);
  EXPECT_EQ(last.producer_epoch, 0);
}

TEST_F(TransactionCoordinatorTest, UnreadablePartitionsAndDamagedRecords) {
  ASSERT_EQ(Init("t1").error, ErrorCode::kNone);
  const int32_t partition = coordinator->PartitionFor("t1");
  RecordInput bad;
  const Bytes key = EncodeTransactionLogKey("t2");
  bad.key = std::string(key.begin(), key.end());
  bad.value = std::string("\x00\x00\x01", 3);  // a value cut short
  ASSERT_TRUE(storage.Append(coordinator->PartitionFor("t2"), {bad}, std::nullopt).ok());
  Start();
  EXPECT_EQ(last_load.skipped, 1);
  ASSERT_EQ(last_load.skipped_reasons.size(), 1u);
  EXPECT_NE(last_load.skipped_reasons[0].find("__transaction_state-"), std::string::npos);
  EXPECT_EQ(coordinator->Describe("t1").state, "Empty");
  storage.unreadable = {partition};
  Start();
  EXPECT_EQ(last_load.failed_partitions.size(), 1u);
  EXPECT_EQ(Init("t1").error, ErrorCode::kCoordinatorNotAvailable);
}

TEST_F(TransactionCoordinatorTest, TheLargestProducerIdTheLogNamesIsFoundTombstonedOrNot) {
  // As a Kafka cluster leaves it: ids its controller handed out, one of them
  // (the larger) for an id since tombstoned.
  auto put = [&](const std::string& id, int64_t producer_id, bool tombstone) {
    TransactionMetadata txn;
    txn.transactional_id = id;
    txn.producer_id = producer_id;
    txn.producer_epoch = 0;
    txn.timeout_ms = 60000;
    RecordInput record;
    const Bytes key = EncodeTransactionLogKey(id);
    record.key = std::string(key.begin(), key.end());
    const Bytes value = EncodeTransactionLogValue(txn);
    record.value = std::string(value.begin(), value.end());
    ASSERT_TRUE(storage.Append(coordinator->PartitionFor(id), {record}, std::nullopt).ok());
    if (tombstone) {
      record.value.reset();
      ASSERT_TRUE(storage.Append(coordinator->PartitionFor(id), {record}, std::nullopt).ok());
    }
  };
  std::vector<std::string> unread;
  EXPECT_EQ(MaxProducerIdInTransactionLog(&storage, config.state_log_partitions, &unread), -1);
  put("kept", 70000, false);
  put("expired", 91000, true);
  EXPECT_EQ(MaxProducerIdInTransactionLog(&storage, config.state_log_partitions, &unread), 91000);
  EXPECT_TRUE(unread.empty());
  storage.unreadable = {coordinator->PartitionFor("expired")};
  EXPECT_EQ(MaxProducerIdInTransactionLog(&storage, config.state_log_partitions, &unread),
            coordinator->PartitionFor("kept") == coordinator->PartitionFor("expired") ? -1 : 70000);
  ASSERT_EQ(unread.size(), 1u);
  EXPECT_NE(unread[0].find("__transaction_state-"), std::string::npos) << unread[0];
}

TEST_F(TransactionCoordinatorTest, ListFiltersByStateProducerAndDuration) {
  InitProducerIdResult a = Init("a");
  Init("b");
  ASSERT_EQ(coordinator->AddPartitions("a", a.producer_id, 0, {kA}), ErrorCode::kNone);
  Advance(5000);
  TransactionListResult all = coordinator->List({}, {}, -1);
  EXPECT_EQ(all.transactions.size(), 2u);
  TransactionListResult ongoing = coordinator->List({}, {"Ongoing", "Nonsense"}, -1);
  ASSERT_EQ(ongoing.transactions.size(), 1u);
  EXPECT_EQ(ongoing.transactions[0].transactional_id, "a");
  EXPECT_EQ(ongoing.unknown_state_filters, std::vector<std::string>{"Nonsense"});
  EXPECT_EQ(coordinator->List({a.producer_id}, {}, -1).transactions.size(), 1u);
  EXPECT_EQ(coordinator->List({}, {"Ongoing"}, 4000).transactions.size(), 1u);
  EXPECT_EQ(coordinator->List({}, {"Ongoing"}, 6000).transactions.size(), 0u);
}

TEST(TransactionLogRecordsTest, RoundTripAndKafkasLayout) {
  TransactionMetadata txn;
  txn.producer_id = 5;
  txn.producer_epoch = 3;
  txn.timeout_ms = 60000;
  txn.state = TransactionState::kOngoing;
  txn.partitions = {kA, kB, kC};
  txn.start_timestamp_ms = 10;
  txn.last_update_timestamp_ms = 20;
  Bytes value = EncodeTransactionLogValue(txn);
  // version 0, pid, epoch, timeout, state, 2 topics ("audit" then "orders").
  ASSERT_GE(value.size(), 17u);
  EXPECT_EQ(value[0], 0);
  EXPECT_EQ(value[1], 0);
  EXPECT_EQ(value[16], 1);  // Ongoing
  Result<TransactionMetadata> back = DecodeTransactionLogValue(ByteSpan(value));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->partitions, txn.partitions);
  EXPECT_EQ(back->producer_epoch, 3);
  EXPECT_EQ(back->start_timestamp_ms, 10);
  EXPECT_EQ(back->last_update_timestamp_ms, 20);

  // Empty writes null partitions (-1), as Kafka does.
  txn.state = TransactionState::kEmpty;
  txn.partitions.clear();
  value = EncodeTransactionLogValue(txn);
  EXPECT_EQ(value.size(), 2u + 8 + 2 + 4 + 1 + 4 + 8 + 8);
  EXPECT_EQ(int32_t(LoadBe32(value.data() + 17)), -1);

  Bytes key = EncodeTransactionLogKey("tx");
  EXPECT_EQ(key, (Bytes{0, 0, 0, 2, 't', 'x'}));
  EXPECT_EQ(*DecodeTransactionLogKey(ByteSpan(key)), "tx");
  Bytes other{0, 1, 0, 2, 't', 'x'};
  EXPECT_EQ(DecodeTransactionLogKey(ByteSpan(other)).status().code(), StatusCode::kUnsupported);
  value.push_back(0);
  EXPECT_EQ(DecodeTransactionLogValue(ByteSpan(value)).status().code(), StatusCode::kCorruption);
}

TEST(TransactionLogRecordsTest, ReadsAFlexibleVersionOneValue) {
  // Version 1 (Kafka 4.0 with transaction version 2): compact arrays and
  // strings, tagged fields (tag 0 = previous producer id) at the end.
  Bytes v{0, 1};
  auto put64 = [&](int64_t x) {
    for (int i = 7; i >= 0; --i) v.push_back(uint8_t(uint64_t(x) >> (8 * i)));
  };
  put64(9);                               // producer id
  v.insert(v.end(), {0, 4});              // epoch
  v.insert(v.end(), {0, 0, 0x27, 0x10});  // timeout 10000
  v.push_back(2);                         // PrepareCommit
  v.push_back(2);                         // one topic (compact count + 1)
  v.insert(v.end(), {4, 'a', 'b', 'c'});  // compact string "abc"
  v.insert(v.end(), {2, 0, 0, 0, 7});     // partitions [7]
  v.push_back(0);                         // the topic's tagged fields
  put64(30);                              // last update
  put64(25);                              // start
  v.insert(v.end(), {1, 0, 8});           // one tagged field: tag 0, 8 bytes
  put64(8);                               // previous producer id
  Result<TransactionMetadata> txn = DecodeTransactionLogValue(ByteSpan(v));
  ASSERT_TRUE(txn.ok()) << txn.status().ToString();
  EXPECT_EQ(txn->producer_id, 9);
  EXPECT_EQ(txn->producer_epoch, 4);
  EXPECT_EQ(txn->state, TransactionState::kPrepareCommit);
  EXPECT_EQ(txn->partitions, (std::set<TopicPartition>{{"abc", 7}}));
  EXPECT_EQ(txn->previous_producer_id, 8);
}

}  // namespace
}  // namespace daruma
