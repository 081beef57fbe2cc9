// Malformed transactional input on real logs (txn_test_support.h's TxnNode
// in a TempDir): transactional batches from producer ids and epochs the
// coordinator never issued or has fenced, sequence gaps, batches for a
// partition outside the transaction (each refused with Kafka's error and
// nothing appended, the last stable offset untouched), and damaged
// `__transaction_state` records: a record whose value does not parse inside
// a batch with a valid CRC is skipped and reported with its partition and
// offset while every other id loads; a batch whose bytes no longer match
// its CRC is cut by log recovery after an unclean stop, and skipped by the
// load (not trusted) after a clean one.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "coordinator/transaction_log_records.h"
#include "coordinator/txn_test_support.h"

namespace daruma::testing {
namespace {

constexpr char kOrders[] = "orders";
const TopicPartition kOrders0{kOrders, 0};
const TopicPartition kOrders1{kOrders, 1};
// "damaged" and "neighbour" share `__transaction_state` partition 2,
// "elsewhere" is in partition 0.
constexpr char kDamaged[] = "damaged";
constexpr char kNeighbour[] = "neighbour";
constexpr char kElsewhere[] = "elsewhere";
constexpr int32_t kTimeoutMs = 60000;

class TxnMalformedInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TxnNodeConfig c;
    c.log_dir = dir_.path();
    c.defaults.flush_messages = 1;
    c.data_topics = {{kOrders, 2}};
    c.txn.state_log_partitions = 3;
    node_ = std::make_unique<TxnNode>(c, &time_);
    Start();
  }

  void Start() {
    LogManagerOptions options;
    options.fs = FileSystem::Default();
    options.clock = &time_.clock;
    Status st = node_->Start(options);
    ASSERT_TRUE(st.ok()) << st.ToString();
    Result<TxnLoadReport> report = node_->Load();
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    load_ = *report;
  }
  // Stops (cleanly or as a crash), lets `edit` change the files, starts.
  template <typename Edit>
  void RestartAfter(bool clean, Edit edit) {
    if (clean) {
      ASSERT_TRUE(node_->Shutdown().ok());
    } else {
      node_->Drop();
    }
    edit();
    Start();
  }

  TransactionCoordinator& txns() { return node_->txns(); }
  Log* log(const TopicPartition& tp) { return node_->log(tp); }

  TxnClient Init(const std::string& id) {
    TxnClient c{id};
    for (int i = 0; i < 3; ++i) {
      const InitProducerIdResult r = txns().InitProducerId(id, kTimeoutMs, std::nullopt);
      if (r.error == ErrorCode::kConcurrentTransactions) continue;  // a fence: retry
      EXPECT_EQ(r.error, ErrorCode::kNone) << id;
      c.Adopt(r);
      break;
    }
    return c;
  }
  TxnProduceResult Send(const std::string& id, int64_t pid, int16_t epoch, int32_t seq,
                        const TopicPartition& tp, int records = 1) {
    // "<id>@<epoch>:<sequence>": which producer wrote it, and in which place.
    std::vector<std::string> values;
    for (int i = 0; i < records; ++i) {
      values.push_back(id + "@" + std::to_string(epoch) + ":" + std::to_string(seq + i));
    }
    return ProduceTxnBatch(txns(), log(tp), id,
                           TxnBatch(pid, epoch, seq, "k", values, time_.clock.NowMs()));
  }
  std::vector<std::string> Committed(const TopicPartition& tp) {
    Result<std::vector<Record>> records = ReadCommitted(log(tp));
    EXPECT_TRUE(records.ok()) << records.status().ToString();
    std::vector<std::string> out;
    for (const Record& r : records.ok() ? *records : std::vector<Record>{}) {
      out.push_back(r.value.value_or(""));
    }
    return out;
  }
  std::string SegmentOf(int32_t state_partition) const {
    return dir_.path() + "/" + kTxnStateTopic + "-" + std::to_string(state_partition) +
           "/00000000000000000000.log";
  }

  TempDir dir_;
  GroupTime time_{1700000000000};
  std::unique_ptr<TxnNode> node_;
  TxnLoadReport load_;
};

// What a refusal must leave: the partition's log end and last stable offset.
struct Untouched {
  explicit Untouched(Log* log)
      : log(log), end(log->log_end_offset()), stable(log->last_stable_offset()) {}
  void Check(const std::string& what) const {
    EXPECT_EQ(log->log_end_offset(), end) << what << ": something was appended";
    EXPECT_EQ(log->last_stable_offset(), stable) << what;
  }
  Log* log;
  int64_t end;
  int64_t stable;
};

TEST_F(TxnMalformedInputTest, ForgedProducerIdsAndEpochsAreRefusedBeforeTheLog) {
  TxnClient t1 = Init("t1");
  TxnClient t2 = Init("t2");
  ASSERT_EQ(txns().AddPartitions("t1", t1.producer_id, t1.epoch, {kOrders0}), ErrorCode::kNone);
  ASSERT_TRUE(Send("t1", t1.producer_id, t1.epoch, 0, kOrders0).ok());
  const Untouched before(log(kOrders0));

  // A producer id the coordinator never issued, under a known and an
  // unknown transactional id; another id's producer id.
  const int64_t forged = std::max(t1.producer_id, t2.producer_id) + 1000;
  EXPECT_EQ(Send("t1", forged, 0, 0, kOrders0).verified, ErrorCode::kInvalidProducerIdMapping);
  EXPECT_EQ(Send("nobody", forged, 0, 0, kOrders0).verified, ErrorCode::kInvalidProducerIdMapping);
  EXPECT_EQ(Send("t1", t2.producer_id, t2.epoch, 0, kOrders0).verified,
            ErrorCode::kInvalidProducerIdMapping);
  // An epoch from the future (never handed out) and a negative one.
  EXPECT_EQ(Send("t1", t1.producer_id, int16_t(t1.epoch + 5), 0, kOrders0).verified,
            ErrorCode::kInvalidProducerEpoch);
  EXPECT_EQ(Send("t1", t1.producer_id, -1, 0, kOrders0).verified, ErrorCode::kInvalidProducerEpoch);
  before.Check("forged producer");

  // A second instance fences the first: its epoch is now old, in every state
  // the id goes through (the abort, the new instance's own transaction).
  TxnClient fresh = Init("t1");
  ASSERT_EQ(fresh.producer_id, t1.producer_id);
  ASSERT_EQ(fresh.epoch, t1.epoch + 2);
  EXPECT_EQ(Send("t1", t1.producer_id, t1.epoch, 1, kOrders0).verified,
            ErrorCode::kInvalidProducerEpoch);
  ASSERT_EQ(txns().AddPartitions("t1", fresh.producer_id, fresh.epoch, {kOrders0}),
            ErrorCode::kNone);
  const Untouched fenced(log(kOrders0));
  EXPECT_EQ(Send("t1", t1.producer_id, t1.epoch, 1, kOrders0).verified,
            ErrorCode::kInvalidProducerEpoch);
  // The fencing abort's epoch (between the two) is no producer's either.
  EXPECT_EQ(Send("t1", t1.producer_id, int16_t(t1.epoch + 1), 0, kOrders0).verified,
            ErrorCode::kInvalidProducerEpoch);
  EXPECT_EQ(txns().EndTransaction("t1", t1.producer_id, t1.epoch, true),
            ErrorCode::kProducerFenced);
  fenced.Check("fenced producer");

  // A TxnOffsetCommit from the fenced producer is refused the same way.
  const TopicPartition offsets = node_->OffsetsPartitionOf("app");
  ASSERT_EQ(txns().AddPartitions("t1", fresh.producer_id, fresh.epoch, {offsets}),
            ErrorCode::kNone);
  bool ran = false;
  EXPECT_EQ(
      txns().WithOngoingTransaction("t1", t1.producer_id, t1.epoch, offsets, [&] { ran = true; }),
      ErrorCode::kInvalidProducerEpoch);
  EXPECT_FALSE(ran);

  // The current producer still writes, and its commit shows only its record;
  // the first instance's record was aborted by the fence.
  ASSERT_TRUE(Send("t1", fresh.producer_id, fresh.epoch, 0, kOrders0).ok());
  ASSERT_EQ(txns().EndTransaction("t1", fresh.producer_id, fresh.epoch, true), ErrorCode::kNone);
  EXPECT_EQ(Committed(kOrders0), std::vector<std::string>{"t1@2:0"});
  EXPECT_EQ(log(kOrders0)->last_stable_offset(), log(kOrders0)->log_end_offset());
}

TEST_F(TxnMalformedInputTest, ASequenceGapIsOutOfOrderAndAppendsNothing) {
  TxnClient t = Init("t1");
  ASSERT_EQ(txns().AddPartitions("t1", t.producer_id, t.epoch, {kOrders0}), ErrorCode::kNone);
  ASSERT_TRUE(Send("t1", t.producer_id, t.epoch, 0, kOrders0, 3).ok());  // sequences 0-2
  const Untouched before(log(kOrders0));

  // The verification passes (the producer is right); the log refuses the gap.
  TxnProduceResult gap = Send("t1", t.producer_id, t.epoch, 5, kOrders0);
  EXPECT_EQ(gap.verified, ErrorCode::kNone);
  ASSERT_FALSE(gap.append.ok());
  EXPECT_EQ(ProducerAppendErrorOf(gap.append), ProducerAppendError::kOutOfOrderSequence)
      << gap.append.ToString();
  // Behind the last sequence but not the last batch: also out of order.
  TxnProduceResult behind = Send("t1", t.producer_id, t.epoch, 1, kOrders0);
  EXPECT_EQ(ProducerAppendErrorOf(behind.append), ProducerAppendError::kOutOfOrderSequence)
      << behind.append.ToString();
  before.Check("sequence gap");

  // The next sequence goes in; the commit shows exactly the accepted records.
  ASSERT_TRUE(Send("t1", t.producer_id, t.epoch, 3, kOrders0).ok());
  ASSERT_EQ(txns().EndTransaction("t1", t.producer_id, t.epoch, true), ErrorCode::kNone);
  EXPECT_EQ(Committed(kOrders0),
            (std::vector<std::string>{"t1@0:0", "t1@0:1", "t1@0:2", "t1@0:3"}));

  // A new epoch must start at sequence 0 on a partition that knows the producer.
  TxnClient bumped = Init("t1");
  ASSERT_EQ(txns().AddPartitions("t1", bumped.producer_id, bumped.epoch, {kOrders0}),
            ErrorCode::kNone);
  const Untouched committed(log(kOrders0));
  TxnProduceResult restart = Send("t1", bumped.producer_id, bumped.epoch, 4, kOrders0);
  EXPECT_EQ(ProducerAppendErrorOf(restart.append), ProducerAppendError::kOutOfOrderSequence)
      << restart.append.ToString();
  committed.Check("new epoch at sequence 4");
}

TEST_F(TxnMalformedInputTest, ABatchForAPartitionOutsideTheTransactionIsInvalidTxnState) {
  TxnClient t = Init("t1");
  const Untouched empty(log(kOrders1));
  // No transaction yet (Empty).
  EXPECT_EQ(Send("t1", t.producer_id, t.epoch, 0, kOrders1).verified, ErrorCode::kInvalidTxnState);
  ASSERT_EQ(txns().AddPartitions("t1", t.producer_id, t.epoch, {kOrders0}), ErrorCode::kNone);
  ASSERT_TRUE(Send("t1", t.producer_id, t.epoch, 0, kOrders0).ok());
  // Ongoing, but orders-1 was never added.
  EXPECT_EQ(Send("t1", t.producer_id, t.epoch, 0, kOrders1).verified, ErrorCode::kInvalidTxnState);
  empty.Check("partition not in the transaction");
  EXPECT_EQ(log(kOrders1)->last_stable_offset(), 0);

  // After the commit's marker nothing more joins the finished transaction.
  ASSERT_EQ(txns().EndTransaction("t1", t.producer_id, t.epoch, true), ErrorCode::kNone);
  const Untouched done(log(kOrders0));
  EXPECT_EQ(done.stable, done.end);
  EXPECT_EQ(Send("t1", t.producer_id, t.epoch, 1, kOrders0).verified, ErrorCode::kInvalidTxnState);
  done.Check("write after the marker");
  EXPECT_EQ(Committed(kOrders0), std::vector<std::string>{"t1@0:0"});
}

// The batch positions of a segment file.
struct FileBatch {
  size_t position;
  size_t size;
};
std::vector<FileBatch> BatchesOf(const Bytes& file) {
  std::vector<FileBatch> out;
  size_t pos = 0;
  while (pos + size_t(kLogOverhead) <= file.size()) {
    const size_t size = size_t(LoadBe32(file.data() + pos + batch_layout::kLength)) + kLogOverhead;
    if (size < size_t(kLogOverhead) || pos + size > file.size()) break;
    out.push_back({pos, size});
    pos += size;
  }
  return out;
}
Bytes ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void WriteWhole(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// The last batch of `file` holding a record of `id`, with its base offset and
// the position of that record's value in the file.
struct Located {
  FileBatch batch{};
  int64_t offset = -1;
  size_t value_position = 0;
};
Located LastRecordOf(const Bytes& file, const std::string& id) {
  Located found;
  for (const FileBatch& b : BatchesOf(file)) {
    const RecordBatchView view(ByteSpan(file.data() + b.position, b.size));
    Result<std::vector<Record>> records = view.DecodeRecords();
    if (!records.ok() || records->size() != 1 || !(*records)[0].key || !(*records)[0].value) {
      continue;
    }
    const Record& r = (*records)[0];
    Result<std::string> key = DecodeTransactionLogKey(AsBytes(*r.key));
    if (!key.ok() || *key != id) continue;
    const auto at = std::search(file.begin() + long(b.position),
                                file.begin() + long(b.position + b.size), r.value->begin(),
                                r.value->end(), [](uint8_t a, char c) { return a == uint8_t(c); });
    found = {b, r.offset, size_t(at - file.begin())};
  }
  return found;
}

class TxnDamagedStateTest : public TxnMalformedInputTest {
 protected:
  // "damaged": Empty, Ongoing, PrepareCommit, CompleteCommit (last in its
  // partition); "neighbour" Empty in the same partition; "elsewhere"
  // Ongoing with orders-1 in another.
  void SetUp() override {
    TxnMalformedInputTest::SetUp();
    ASSERT_EQ(txns().PartitionFor(kDamaged), 2);
    ASSERT_EQ(txns().PartitionFor(kNeighbour), 2);
    ASSERT_EQ(txns().PartitionFor(kElsewhere), 0);
    neighbour_ = Init(kNeighbour);
    elsewhere_ = Init(kElsewhere);
    ASSERT_EQ(
        txns().AddPartitions(kElsewhere, elsewhere_.producer_id, elsewhere_.epoch, {kOrders1}),
        ErrorCode::kNone);
    damaged_ = Init(kDamaged);
    ASSERT_EQ(txns().AddPartitions(kDamaged, damaged_.producer_id, damaged_.epoch, {kOrders0}),
              ErrorCode::kNone);
    ASSERT_TRUE(Send(kDamaged, damaged_.producer_id, damaged_.epoch, 0, kOrders0).ok());
    ASSERT_EQ(txns().EndTransaction(kDamaged, damaged_.producer_id, damaged_.epoch, true),
              ErrorCode::kNone);
    ASSERT_EQ(txns().Describe(kDamaged).state, "CompleteCommit");
  }

  // The other ids load as they were stored.
  void ExpectOthersLoaded() {
    EXPECT_EQ(txns().Describe(kNeighbour).state, "Empty");
    EXPECT_EQ(txns().Describe(kNeighbour).producer_id, neighbour_.producer_id);
    const TransactionDescription e = txns().Describe(kElsewhere);
    EXPECT_EQ(e.state, "Ongoing");
    EXPECT_EQ(e.partitions, std::vector<TopicPartition>{kOrders1});
    EXPECT_EQ(load_.ongoing, 1);
  }

  TxnClient neighbour_, elsewhere_, damaged_;
};

TEST_F(TxnDamagedStateTest, AValueThatDoesNotParseUnderAValidCrcIsSkippedAndReported) {
  const std::string segment = SegmentOf(2);
  int64_t damaged_offset = -1;
  RestartAfter(/*clean=*/true, [&] {
    Bytes file = ReadWhole(segment);
    const Located last = LastRecordOf(file, kDamaged);
    ASSERT_GT(last.value_position, 0u);
    damaged_offset = last.offset;
    // The state byte (after version, producer id, epoch and timeout) names
    // no state; the CRC is made right again, so only the parse can tell.
    file[last.value_position + 16] = 99;
    RewriteBatchCrc(std::span<uint8_t>(file.data() + last.batch.position, last.batch.size));
    WriteWhole(segment, file);
  });
  EXPECT_EQ(load_.skipped, 1);
  ASSERT_EQ(load_.skipped_reasons.size(), 1u);
  EXPECT_NE(load_.skipped_reasons[0].find("__transaction_state-2 offset " +
                                          std::to_string(damaged_offset)),
            std::string::npos)
      << load_.skipped_reasons[0];
  EXPECT_NE(load_.skipped_reasons[0].find("state id 99"), std::string::npos)
      << load_.skipped_reasons[0];
  EXPECT_TRUE(load_.failed_partitions.empty());
  // "damaged" falls back to its record before (PrepareCommit), which the
  // load finishes again: a COMMIT marker twice is harmless, none is not.
  EXPECT_EQ(load_.completed, 1);
  EXPECT_EQ(txns().Describe(kDamaged).state, "CompleteCommit");
  EXPECT_EQ(txns().Describe(kDamaged).producer_id, damaged_.producer_id);
  ExpectOthersLoaded();
  EXPECT_EQ(Committed(kOrders0), std::vector<std::string>{"damaged@0:0"});
}

TEST_F(TxnDamagedStateTest, AByteFlippedUnderTheCrcIsCutByRecoveryAfterACrash) {
  const std::string segment = SegmentOf(2);
  Located last;
  RestartAfter(/*clean=*/false, [&] {
    Bytes file = ReadWhole(segment);
    last = LastRecordOf(file, kDamaged);
    ASSERT_EQ(last.batch.position + last.batch.size, file.size()) << "not the last batch";
    file[last.value_position + 3] ^= 0x5a;  // inside the producer id, under the CRC
    WriteWhole(segment, file);
  });
  // The unclean start's recovery scan finds the CRC mismatch and cuts the
  // partition there (the bytes are quarantined): the load never sees them.
  int64_t cut = 0;
  for (const PartitionRecoveryReport& p : node_->manager().report().partitions) {
    if (p.topic == kTxnStateTopic && p.partition == 2) {
      cut = p.truncated_bytes;
      for (const QuarantinedRange& q : p.quarantined) cut += q.bytes;
      EXPECT_EQ(p.log_end_offset, last.offset);
    }
  }
  EXPECT_GT(cut, 0);
  EXPECT_EQ(load_.skipped, 0) << (load_.skipped_reasons.empty() ? "" : load_.skipped_reasons[0]);
  EXPECT_TRUE(load_.failed_partitions.empty());
  EXPECT_EQ(load_.completed, 1);  // PrepareCommit, finished again
  EXPECT_EQ(txns().Describe(kDamaged).state, "CompleteCommit");
  ExpectOthersLoaded();
  EXPECT_EQ(Committed(kOrders0), std::vector<std::string>{"damaged@0:0"});
}

TEST_F(TxnDamagedStateTest, AByteFlippedUnderTheCrcAfterACleanStopIsNotTrusted) {
  const std::string segment = SegmentOf(2);
  Located last;
  RestartAfter(/*clean=*/true, [&] {
    Bytes file = ReadWhole(segment);
    last = LastRecordOf(file, kDamaged);
    file[last.value_position + 3] ^= 0x5a;
    WriteWhole(segment, file);
  });
  // A clean start does not scan below the recovery point: the load checks
  // the CRC itself and skips the batch.
  EXPECT_EQ(load_.skipped, 1);
  ASSERT_EQ(load_.skipped_reasons.size(), 1u);
  EXPECT_NE(load_.skipped_reasons[0].find("__transaction_state-2 offset " +
                                          std::to_string(last.offset) + ": batch CRC mismatch"),
            std::string::npos)
      << load_.skipped_reasons[0];
  EXPECT_EQ(txns().Describe(kDamaged).state, "CompleteCommit");
  ExpectOthersLoaded();
}

TEST_F(TxnDamagedStateTest, RecordsWithoutAKeyOrWithAShortValueAreSkippedOthersLoad) {
  RecordInput keyless;
  keyless.value = "no key";
  RecordInput cut;
  const Bytes key = EncodeTransactionLogKey("t-cut");
  cut.key = std::string(key.begin(), key.end());
  cut.value = std::string("\x00\x00\x01", 3);
  Result<int64_t> first = node_->state_storage().Append(2, {keyless, cut}, std::nullopt);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  RestartAfter(/*clean=*/true, [] {});
  EXPECT_EQ(load_.skipped, 2);
  ASSERT_EQ(load_.skipped_reasons.size(), 2u);
  EXPECT_NE(load_.skipped_reasons[0].find("offset " + std::to_string(*first) +
                                          ": a record without a key"),
            std::string::npos)
      << load_.skipped_reasons[0];
  EXPECT_NE(load_.skipped_reasons[1].find("offset " + std::to_string(*first + 1)),
            std::string::npos)
      << load_.skipped_reasons[1];
  EXPECT_EQ(txns().Describe("t-cut").error, ErrorCode::kTransactionalIdNotFound);
  EXPECT_EQ(txns().Describe(kDamaged).state, "CompleteCommit");
  ExpectOthersLoaded();
}

}  // namespace
}  // namespace daruma::testing
