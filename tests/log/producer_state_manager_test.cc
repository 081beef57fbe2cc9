// ProducerStateManager (spec §10.6, §7.4, §11.1): replication apply,
// transactions and the LSO, leader-side checks, expiry and snapshot files.
#include "log/producer_state_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "common/bytes.h"
#include "common/clock.h"
#include "log/log_file_names.h"
#include "log/producer_append_info.h"
#include "record/control_record.h"
#include "record/record_batch_builder.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

using testing::kT0;

struct ProducerBatchSpec {
  int64_t base_offset = 0;
  int64_t producer_id = 1;
  int16_t epoch = 0;
  int32_t base_sequence = 0;
  int records = 1;
  bool transactional = false;
  int64_t timestamp = kT0;
};

Bytes DataBatch(const ProducerBatchSpec& spec) {
  BatchBuilderOptions options;
  options.base_offset = spec.base_offset;
  options.producer_id = spec.producer_id;
  options.producer_epoch = spec.epoch;
  options.base_sequence = spec.base_sequence;
  options.is_transactional = spec.transactional;
  std::vector<RecordInput> records(size_t(spec.records));
  for (int i = 0; i < spec.records; ++i) {
    records[size_t(i)].timestamp = spec.timestamp + i;
    records[size_t(i)].value = "v" + std::to_string(i);
  }
  auto built = BuildRecordBatch(options, records);
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  return *built;
}

Bytes Marker(int64_t offset, int64_t pid, int16_t epoch, ControlRecordType type,
             int32_t coordinator_epoch = 5, int64_t timestamp = kT0 + 500) {
  return BuildEndTxnMarkerBatch(offset, 0, pid, epoch, type, coordinator_epoch, timestamp);
}

class ProducerStateManagerTest : public ::testing::Test {
 protected:
  void SetUp() override { manager_ = OpenManager(); }

  std::unique_ptr<ProducerStateManager> OpenManager(int64_t expiration_ms = 86400000) {
    auto opened =
        ProducerStateManager::Open("topic-0", dir_.path(), FileSystem::Default(), expiration_ms);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    return std::move(opened).value();
  }

  // Applies with replication semantics, as the loader does, completing
  // transactions and advancing the map end offset.
  std::optional<CompletedTxn> Apply(const Bytes& bytes, int64_t* lso = nullptr) {
    RecordBatchView batch(bytes);
    auto completed = manager_->ApplyBatch(batch);
    EXPECT_TRUE(completed.ok()) << completed.status().ToString();
    if (completed.ok() && *completed) {
      if (lso) *lso = manager_->LastStableOffset(**completed);
      EXPECT_TRUE(manager_->CompleteTxn(**completed).ok());
    }
    manager_->UpdateMapEndOffset(batch.next_offset());
    return completed.ok() ? *completed : std::nullopt;
  }

  bool FileExists(int64_t offset) {
    return std::filesystem::exists(ProducerSnapshotFileName(dir_.path(), offset));
  }

  TempDir dir_;
  std::unique_ptr<ProducerStateManager> manager_;
};

// ---- Replication apply --------------------------------------------------------

TEST_F(ProducerStateManagerTest, IdempotentBatchesKeepTheLastFive) {
  int64_t offset = 0;
  int32_t seq = 0;
  for (int i = 0; i < 7; ++i) {
    Apply(DataBatch({.base_offset = offset,
                     .producer_id = 1000,
                     .base_sequence = seq,
                     .records = 2,
                     .timestamp = kT0 + i * 10}));
    offset += 2;
    seq += 2;
  }
  const ProducerStateEntry* entry = manager_->LastEntry(1000);
  ASSERT_NE(entry, nullptr);
  ASSERT_EQ(entry->batches().size(), 5u);
  EXPECT_EQ(entry->batches().front(), (BatchMetadata{5, 5, 1, kT0 + 21}));  // batch 2
  EXPECT_EQ(entry->batches().back(), (BatchMetadata{13, 13, 1, kT0 + 61}));
  EXPECT_EQ(entry->FirstSeq(), 4);
  EXPECT_EQ(entry->LastSeq(), 13);
  EXPECT_EQ(entry->last_timestamp(), kT0 + 61);
  EXPECT_EQ(manager_->MapEndOffset(), 14);
  EXPECT_FALSE(manager_->FirstUnstableOffset());
}

TEST_F(ProducerStateManagerTest, NewEpochReplacesCachedBatches) {
  Apply(DataBatch({.base_offset = 0, .producer_id = 7, .epoch = 0, .base_sequence = 0}));
  Apply(DataBatch({.base_offset = 1, .producer_id = 7, .epoch = 0, .base_sequence = 1}));
  Apply(DataBatch({.base_offset = 2, .producer_id = 7, .epoch = 1, .base_sequence = 0}));
  const ProducerStateEntry* entry = manager_->LastEntry(7);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->producer_epoch(), 1);
  ASSERT_EQ(entry->batches().size(), 1u);
  EXPECT_EQ(entry->batches().front().last_offset, 2);
}

TEST_F(ProducerStateManagerTest, ReplicationAcceptsAnOlderEpochAndGaps) {
  Apply(DataBatch({.base_offset = 0, .producer_id = 7, .epoch = 3, .base_sequence = 0}));
  Apply(DataBatch({.base_offset = 1, .producer_id = 7, .epoch = 2, .base_sequence = 40}));
  EXPECT_EQ(manager_->LastEntry(7)->producer_epoch(), 2);
  EXPECT_EQ(manager_->LastEntry(7)->LastSeq(), 40);
}

TEST_F(ProducerStateManagerTest, BatchWithoutProducerIdOnlyMovesTheMapEnd) {
  Apply(DataBatch(
      {.base_offset = 0, .producer_id = -1, .epoch = -1, .base_sequence = -1, .records = 3}));
  EXPECT_TRUE(manager_->ActiveProducers().empty());
  EXPECT_EQ(manager_->MapEndOffset(), 3);
}

// ---- Transactions and the LSO ---------------------------------------------------

TEST_F(ProducerStateManagerTest, CommitCompletesTheTransaction) {
  Apply(DataBatch({.base_offset = 10, .producer_id = 2000, .records = 2, .transactional = true}));
  EXPECT_EQ(manager_->FirstUnstableOffset(), 10);
  EXPECT_EQ(manager_->LastEntry(2000)->current_txn_first_offset(), 10);
  int64_t lso = -1;
  auto completed = Apply(Marker(12, 2000, 0, ControlRecordType::kCommit, 5, kT0 + 777), &lso);
  ASSERT_TRUE(completed);
  EXPECT_EQ(*completed, (CompletedTxn{2000, 10, 12, false}));
  EXPECT_EQ(lso, 13);
  const ProducerStateEntry* entry = manager_->LastEntry(2000);
  EXPECT_FALSE(entry->current_txn_first_offset());
  EXPECT_EQ(entry->coordinator_epoch(), 5);
  EXPECT_EQ(entry->last_timestamp(), kT0 + 777);
  EXPECT_EQ(entry->LastDataOffset(), 11);  // the marker is not a data batch
  // Completed but not yet below the high watermark: still unstable.
  EXPECT_EQ(manager_->FirstUnstableOffset(), 10);
  EXPECT_FALSE(manager_->FirstUndecidedOffset());
  manager_->OnHighWatermarkUpdated(12);
  EXPECT_EQ(manager_->FirstUnstableOffset(), 10);
  manager_->OnHighWatermarkUpdated(13);
  EXPECT_FALSE(manager_->FirstUnstableOffset());
}

TEST_F(ProducerStateManagerTest, AbortLsoIsTheOtherProducersOpenTransaction) {
  // First two aborted transactions of the transactional fixture's .txnindex:
  // (pid=2000,first=9,last=19,lso=11) and (pid=3000,first=11,last=20,lso=21).
  Apply(DataBatch({.base_offset = 9, .producer_id = 2000, .records = 2, .transactional = true}));
  Apply(DataBatch({.base_offset = 11, .producer_id = 3000, .transactional = true}));
  Apply(DataBatch({.base_offset = 12,
                   .producer_id = 2000,
                   .base_sequence = 2,
                   .records = 2,
                   .transactional = true}));
  manager_->UpdateMapEndOffset(19);
  int64_t lso = -1;
  auto first = Apply(Marker(19, 2000, 0, ControlRecordType::kAbort), &lso);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, (CompletedTxn{2000, 9, 19, true}));
  EXPECT_EQ(lso, 11);
  auto second = Apply(Marker(20, 3000, 0, ControlRecordType::kAbort), &lso);
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, (CompletedTxn{3000, 11, 20, true}));
  EXPECT_EQ(lso, 21);
  // Both completed, neither below the high watermark yet.
  EXPECT_EQ(manager_->UnreplicatedTxnsThatCanBeFirst().size(), 2u);
  EXPECT_EQ(manager_->FirstUnstableOffset(), 9);
  manager_->OnHighWatermarkUpdated(20);
  EXPECT_EQ(manager_->FirstUnstableOffset(), 11);
  manager_->OnHighWatermarkUpdated(21);
  EXPECT_FALSE(manager_->FirstUnstableOffset());
  EXPECT_TRUE(manager_->UnreplicatedTxnsThatCanBeFirst().empty());
}

// Kafka keeps every completed transaction until the high watermark passes its
// marker; only those that can still be the first unstable offset are kept
// here, and the answers are Kafka's at every high watermark.
TEST_F(ProducerStateManagerTest, UnstableOffsetMatchesKafkasFullSetAtEveryHighWatermark) {
  // Three producers; transactions complete in marker order:
  //   A [10, 30], B [12, 20], C [25, 40], A [31, 45], B [41, 50].
  struct Txn {
    int64_t pid, first, last;
  };
  const std::vector<Txn> txns = {{1, 10, 30}, {2, 12, 20}, {3, 25, 40}, {1, 31, 45}, {2, 41, 50}};
  std::map<int64_t, int64_t> kafka;  // first -> last: Kafka's unreplicatedTxns
  std::vector<Txn> open = txns;
  std::sort(open.begin(), open.end(), [](const Txn& a, const Txn& b) { return a.first < b.first; });
  size_t opened = 0;
  for (const Txn& t : std::vector<Txn>{txns[1], txns[0], txns[2], txns[3], txns[4]}) {
    // Open every transaction that starts below this marker, in offset order.
    for (; opened < open.size() && open[opened].first < t.last; ++opened) {
      const Txn& o = open[opened];
      Apply(DataBatch({.base_offset = o.first,
                       .producer_id = o.pid,
                       .base_sequence = int32_t(o.first),
                       .transactional = true}));
    }
    manager_->UpdateMapEndOffset(t.last);
    ASSERT_TRUE(Apply(Marker(t.last, t.pid, 0, ControlRecordType::kCommit)));
    kafka[t.first] = t.last;
  }
  for (int64_t hw = 0; hw <= 51; ++hw) {
    manager_->OnHighWatermarkUpdated(hw);
    std::erase_if(kafka, [hw](const auto& e) { return e.second < hw; });
    const std::optional<int64_t> expected =
        kafka.empty() ? std::nullopt : std::optional<int64_t>(kafka.begin()->first);
    EXPECT_EQ(manager_->FirstUnstableOffset(), expected) << "high watermark " << hw;
    EXPECT_EQ(manager_->IsEmpty(), false);  // the producers stay
  }
}

// A marker is read the same however its batch is laid out: the usual shape
// (uncompressed, one record) is read in place, any other through the
// general record decoder, and a malformed one fails either way.
TEST_F(ProducerStateManagerTest, MarkersOfEveryLayoutReadAsTheGeneralDecoderReadsThem) {
  const int64_t pid = 7;
  auto marker = [&](int64_t offset, std::vector<RecordInput> records, CompressionType compression,
                    TimestampType timestamp_type) {
    BatchBuilderOptions options;
    options.base_offset = offset;
    options.producer_id = pid;
    options.is_transactional = true;
    options.is_control = true;
    options.compression = compression;
    options.timestamp_type = timestamp_type;
    auto built = BuildRecordBatch(options, records);
    EXPECT_TRUE(built.ok()) << built.status().ToString();
    return *built;
  };
  auto abort_record = [](int64_t timestamp) {
    const Bytes key = EncodeControlRecordKey(ControlRecordType::kAbort);
    const Bytes value = EncodeEndTxnMarkerValue(3);
    return RecordInput{timestamp,
                       std::string(key.begin(), key.end()),
                       std::string(value.begin(), value.end()),
                       {},
                       -1};
  };
  int64_t offset = 0;
  int64_t sequence = 0;
  auto open_txn = [&] {
    ProducerBatchSpec spec{offset++, pid, 0, int32_t(sequence++), 1, true, kT0};
    Apply(DataBatch(spec));
  };
  // Usual, with a header, with LogAppendTime, two records, compressed.
  RecordInput with_header = abort_record(kT0 + 10);
  with_header.headers.push_back(RecordHeader{"h", std::string("v")});
  const std::vector<std::pair<Bytes, int64_t>> cases = {
      {marker(0, {abort_record(kT0 + 10)}, CompressionType::kNone, TimestampType::kCreateTime),
       kT0 + 10},
      {marker(0, {with_header}, CompressionType::kNone, TimestampType::kCreateTime), kT0 + 10},
      {marker(0, {abort_record(kT0 + 20)}, CompressionType::kNone, TimestampType::kLogAppendTime),
       -2},
      {marker(0, {abort_record(kT0 + 30), abort_record(kT0 + 31)}, CompressionType::kNone,
              TimestampType::kCreateTime),
       kT0 + 30},
      {marker(0, {abort_record(kT0 + 40)}, CompressionType::kGzip, TimestampType::kCreateTime),
       kT0 + 40},
  };
  for (const auto& [shape, expected_timestamp] : cases) {
    open_txn();
    Bytes bytes = shape;
    StoreBe64(bytes.data(), uint64_t(offset++));
    RecordBatchView view(bytes);
    EXPECT_EQ(EffectOfControlBatch(view), ControlBatchEffect::kAbort);
    auto completed = Apply(bytes);
    ASSERT_TRUE(completed.has_value());
    EXPECT_TRUE(completed->is_aborted);
    const int64_t want = expected_timestamp == -2 ? view.max_timestamp() : expected_timestamp;
    EXPECT_EQ(manager_->LastEntry(pid)->last_timestamp(), want);
  }
  // Damaged: a byte after the only record, a cut key, a value that is not a
  // marker's. Each fails as a record error, with or without the in-place read.
  Bytes trailing =
      marker(0, {abort_record(kT0)}, CompressionType::kNone, TimestampType::kCreateTime);
  trailing.push_back(0);
  StoreBe32(trailing.data() + 8, uint32_t(trailing.size() - 12));
  RecordInput bad_value = abort_record(kT0);
  bad_value.value = "x";
  RecordInput no_key = abort_record(kT0);
  no_key.key.reset();
  for (const Bytes& damaged :
       {trailing, marker(0, {bad_value}, CompressionType::kNone, TimestampType::kCreateTime),
        marker(0, {no_key}, CompressionType::kNone, TimestampType::kCreateTime)}) {
    EXPECT_EQ(EffectOfControlBatch(RecordBatchView(damaged)), ControlBatchEffect::kUnreadable);
    EXPECT_FALSE(manager_->ApplyBatch(RecordBatchView(damaged)).ok());
  }
}

// Kafka's own marker layout is read straight from its bytes; every change of
// one byte of its record must read as the general decoder reads it: the same
// effect and, for a readable marker, the same coordinator epoch and time.
TEST_F(ProducerStateManagerTest, EveryOneByteChangeOfTheUsualMarkerReadsAsTheGeneralDecoder) {
  struct Read {
    ControlRecordType type;
    int32_t coordinator_epoch;
    int64_t timestamp;
  };
  auto general = [](const RecordBatchView& batch) -> std::optional<Read> {
    auto records = batch.DecodeRecords();
    if (!records.ok() || records->empty()) return std::nullopt;
    const Record& record = records->front();
    if (!record.key || !record.value) return std::nullopt;
    auto type = ParseControlRecordKey(AsBytes(*record.key));
    if (!type.ok() || (*type != ControlRecordType::kAbort && *type != ControlRecordType::kCommit)) {
      return std::nullopt;
    }
    auto coordinator_epoch = ParseEndTxnMarkerCoordinatorEpoch(AsBytes(*record.value));
    if (!coordinator_epoch.ok()) return std::nullopt;
    return Read{*type, *coordinator_epoch, record.timestamp};
  };
  const int64_t pid = 11;
  const Bytes usual = Marker(0, pid, 0, ControlRecordType::kCommit, 0x01020304, kT0 + 7);
  ASSERT_EQ(usual.size(), batch_layout::kRecords + 17);
  int64_t offset = 0;
  int readable = 0;
  for (size_t at = batch_layout::kRecords; at < usual.size(); ++at) {
    for (const uint8_t value : {0x00, 0x01, 0x02, 0x08, 0x0C, 0x20, 0x7F, 0x80, 0x81, 0xFF}) {
      Bytes bytes = usual;
      bytes[at] = value;
      StoreBe64(bytes.data(), uint64_t(offset + 1));
      const RecordBatchView view(bytes);
      const std::optional<Read> want = general(view);
      const ControlBatchEffect effect = EffectOfControlBatch(view);
      SCOPED_TRACE(::testing::Message() << "byte " << at << " = " << int(value));
      if (!want) {
        EXPECT_EQ(effect, ControlBatchEffect::kUnreadable);
        continue;
      }
      EXPECT_EQ(effect, want->type == ControlRecordType::kAbort ? ControlBatchEffect::kAbort
                                                                : ControlBatchEffect::kCommit);
      Apply(DataBatch({.base_offset = offset,
                       .producer_id = pid,
                       .base_sequence = int32_t(offset / 2),
                       .transactional = true}));
      offset += 2;
      ASSERT_TRUE(manager_->ApplyBatch(view).ok());
      const ProducerStateEntry* entry = manager_->LastEntry(pid);
      EXPECT_EQ(entry->coordinator_epoch(), want->coordinator_epoch);
      EXPECT_EQ(entry->last_timestamp(), want->timestamp);
      ++readable;
    }
  }
  EXPECT_GT(readable, 40);  // timestamp deltas, attributes, versions, epochs
}

TEST_F(ProducerStateManagerTest, MarkerWithoutOpenTransactionCompletesNothing) {
  Apply(DataBatch({.base_offset = 0, .producer_id = 9, .epoch = 1}));
  auto completed = Apply(Marker(1, 9, 2, ControlRecordType::kAbort, 8, kT0 + 9));
  EXPECT_FALSE(completed);
  const ProducerStateEntry* entry = manager_->LastEntry(9);
  EXPECT_EQ(entry->producer_epoch(), 2);  // epoch bump clears the cache
  EXPECT_TRUE(entry->IsEmpty());
  EXPECT_EQ(entry->coordinator_epoch(), 8);
  EXPECT_EQ(entry->last_timestamp(), kT0 + 9);
}

TEST_F(ProducerStateManagerTest, EmptyControlBatchIsIgnored) {
  Bytes marker = Marker(5, 9, 0, ControlRecordType::kCommit);
  marker.resize(kRecordBatchOverhead);
  StoreBe32(marker.data() + batch_layout::kLength, kRecordBatchOverhead - kLogOverhead);
  StoreBe32(marker.data() + batch_layout::kRecordsCount, 0);
  RewriteBatchCrc(marker);
  Apply(DataBatch({.base_offset = 0, .producer_id = 9, .transactional = true}));
  EXPECT_FALSE(Apply(marker));
  EXPECT_EQ(manager_->LastEntry(9)->current_txn_first_offset(), 0);
}

TEST_F(ProducerStateManagerTest, PlainDataInsideAnOpenTransactionIsInvalidTxnState) {
  Apply(DataBatch({.base_offset = 0, .producer_id = 9, .transactional = true}));
  const Bytes plain = DataBatch({.base_offset = 1, .producer_id = 9, .base_sequence = 1});
  auto result = manager_->ApplyBatch(RecordBatchView(plain));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidTxnState);
  EXPECT_NE(result.status().message().find("INVALID_TXN_STATE: producer 9 at offset 1 in topic-0"),
            std::string::npos)
      << result.status().message();
  EXPECT_EQ(manager_->LastEntry(9)->LastDataOffset(), 0);  // unchanged
}

TEST_F(ProducerStateManagerTest, CompletingAnUnknownTransactionFails) {
  EXPECT_EQ(manager_->CompleteTxn({1, 5, 9, false}).code(), StatusCode::kInvalidArgument);
}

// ---- Leader-side checks -----------------------------------------------------------

TEST_F(ProducerStateManagerTest, RetriedBatchIsFoundAsDuplicate) {
  for (int i = 0; i < 6; ++i) {
    Apply(
        DataBatch({.base_offset = i * 3, .producer_id = 1, .base_sequence = i * 3, .records = 3}));
  }
  const Bytes retry =
      DataBatch({.base_offset = 99, .producer_id = 1, .base_sequence = 6, .records = 3});
  auto dup = manager_->FindDuplicateBatch(RecordBatchView(retry));
  ASSERT_TRUE(dup);
  EXPECT_EQ(dup->FirstOffset(), 6);
  EXPECT_EQ(dup->last_offset, 8);
  // Batch 0 was evicted from the 5-batch cache; another epoch never matches.
  EXPECT_FALSE(manager_->FindDuplicateBatch(RecordBatchView(
      DataBatch({.base_offset = 99, .producer_id = 1, .base_sequence = 0, .records = 3}))));
  EXPECT_FALSE(manager_->FindDuplicateBatch(RecordBatchView(DataBatch(
      {.base_offset = 99, .producer_id = 1, .epoch = 1, .base_sequence = 6, .records = 3}))));
}

TEST_F(ProducerStateManagerTest, ClientSequenceMustContinue) {
  Apply(DataBatch({.base_offset = 0, .producer_id = 1, .base_sequence = 0, .records = 2}));
  ProducerAppendInfo info = manager_->PrepareUpdate(1, AppendOrigin::kClient);
  const Bytes gap = DataBatch({.base_offset = 2, .producer_id = 1, .base_sequence = 3});
  auto rejected = info.Append(RecordBatchView(gap));
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(info.rejection(), ProducerAppendError::kOutOfOrderSequence);
  EXPECT_NE(rejected.status().message().find("sequence: expected 2, found 3"), std::string::npos)
      << rejected.status().message();
  const Bytes next = DataBatch({.base_offset = 2, .producer_id = 1, .base_sequence = 2});
  EXPECT_TRUE(info.Append(RecordBatchView(next)).ok());
  // Several batches of one request validate against each other.
  const Bytes after = DataBatch({.base_offset = 3, .producer_id = 1, .base_sequence = 3});
  EXPECT_TRUE(info.Append(RecordBatchView(after)).ok());
  ASSERT_TRUE(manager_->Update(info).ok());
  EXPECT_EQ(manager_->LastEntry(1)->LastSeq(), 3);
}

TEST_F(ProducerStateManagerTest, ClientSequenceWrapsFromIntMaxToZero) {
  Apply(DataBatch(
      {.base_offset = 0, .producer_id = 1, .base_sequence = INT32_MAX - 1, .records = 2}));
  EXPECT_EQ(manager_->LastEntry(1)->LastSeq(), INT32_MAX);
  ProducerAppendInfo info = manager_->PrepareUpdate(1, AppendOrigin::kClient);
  const Bytes next = DataBatch({.base_offset = 2, .producer_id = 1, .base_sequence = 0});
  EXPECT_TRUE(info.Append(RecordBatchView(next)).ok());
}

TEST_F(ProducerStateManagerTest, NewEpochMustStartAtSequenceZero) {
  Apply(DataBatch({.base_offset = 0, .producer_id = 1, .epoch = 0, .base_sequence = 0}));
  ProducerAppendInfo info = manager_->PrepareUpdate(1, AppendOrigin::kClient);
  const Bytes bad = DataBatch({.base_offset = 1, .producer_id = 1, .epoch = 1, .base_sequence = 4});
  EXPECT_FALSE(info.Append(RecordBatchView(bad)).ok());
  EXPECT_EQ(info.rejection(), ProducerAppendError::kOutOfOrderSequence);
  // An unknown producer may start anywhere (its state may have been deleted).
  ProducerAppendInfo fresh = manager_->PrepareUpdate(55, AppendOrigin::kClient);
  const Bytes any = DataBatch({.base_offset = 1, .producer_id = 55, .base_sequence = 17});
  EXPECT_TRUE(fresh.Append(RecordBatchView(any)).ok());
}

TEST_F(ProducerStateManagerTest, OlderEpochIsFencedForClientsAndCoordinators) {
  Apply(DataBatch({.base_offset = 0, .producer_id = 1, .epoch = 4, .base_sequence = 0}));
  ProducerAppendInfo client = manager_->PrepareUpdate(1, AppendOrigin::kClient);
  const Bytes zombie = DataBatch({.base_offset = 1, .producer_id = 1, .epoch = 3});
  auto st = client.Append(RecordBatchView(zombie));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(client.rejection(), ProducerAppendError::kInvalidProducerEpoch);
  EXPECT_NE(st.status().message().find("epoch 3 is older than the last seen 4"), std::string::npos)
      << st.status().message();
  ProducerAppendInfo coordinator = manager_->PrepareUpdate(1, AppendOrigin::kCoordinator);
  EXPECT_FALSE(
      coordinator.Append(RecordBatchView(Marker(1, 1, 3, ControlRecordType::kAbort))).ok());
  EXPECT_EQ(coordinator.rejection(), ProducerAppendError::kInvalidProducerEpoch);
}

TEST_F(ProducerStateManagerTest, OlderCoordinatorEpochIsFenced) {
  Apply(DataBatch({.base_offset = 0, .producer_id = 1, .transactional = true}));
  Apply(Marker(1, 1, 0, ControlRecordType::kCommit, /*coordinator_epoch=*/7));
  ProducerAppendInfo coordinator = manager_->PrepareUpdate(1, AppendOrigin::kCoordinator);
  EXPECT_FALSE(
      coordinator.Append(RecordBatchView(Marker(2, 1, 0, ControlRecordType::kCommit, 6))).ok());
  EXPECT_EQ(coordinator.rejection(), ProducerAppendError::kTransactionCoordinatorFenced);
  // Replication only logs it.
  EXPECT_TRUE(
      manager_->ApplyBatch(RecordBatchView(Marker(2, 1, 0, ControlRecordType::kCommit, 6))).ok());
  EXPECT_EQ(manager_->LastEntry(1)->coordinator_epoch(), 6);
}

// ---- Expiry -----------------------------------------------------------------------

TEST_F(ProducerStateManagerTest, IdleProducersExpireButOpenTransactionsDoNot) {
  ManualClock clock(kT0);
  manager_ = OpenManager(/*expiration_ms=*/1000);
  Apply(DataBatch({.base_offset = 0, .producer_id = 1, .timestamp = clock.NowMs()}));
  Apply(DataBatch(
      {.base_offset = 1, .producer_id = 2, .transactional = true, .timestamp = clock.NowMs()}));
  clock.Advance(999);
  manager_->RemoveExpiredProducers(clock.NowMs());
  EXPECT_EQ(manager_->ActiveProducers().size(), 2u);
  clock.Advance(1);
  manager_->RemoveExpiredProducers(clock.NowMs());
  ASSERT_EQ(manager_->ActiveProducers().size(), 1u);
  EXPECT_EQ(manager_->ActiveProducers().begin()->first, 2);
}

// ---- Snapshots ------------------------------------------------------------------

TEST_F(ProducerStateManagerTest, TakeSnapshotWritesMapEndOffsetOnce) {
  Apply(DataBatch({.base_offset = 0, .producer_id = 4000}));
  Apply(DataBatch({.base_offset = 1, .producer_id = 3000, .transactional = true}));
  Apply(DataBatch({.base_offset = 2, .producer_id = 2000}));
  auto path = manager_->TakeSnapshot();
  ASSERT_TRUE(path.ok() && *path);
  EXPECT_EQ(**path, ProducerSnapshotFileName(dir_.path(), 3));
  const Bytes expected = EncodeProducerSnapshot(manager_->SnapshotEntries());
  EXPECT_EQ(ReadFileToString(**path), std::string(expected.begin(), expected.end()));
  // Kafka's HashMap order: bucket 0 (4000 then 2000, by insertion), bucket 8.
  std::vector<int64_t> pids;
  for (const auto& e : manager_->SnapshotEntries()) pids.push_back(e.producer_id);
  EXPECT_EQ(pids, (std::vector<int64_t>{4000, 2000, 3000}));
  EXPECT_EQ(manager_->SnapshotEntries()[2].current_txn_first_offset, 1);

  auto again = manager_->TakeSnapshot();
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  EXPECT_EQ(manager_->LatestSnapshotOffset(), 3);
}

TEST_F(ProducerStateManagerTest, OpenListsExistingSnapshotsOnly) {
  WriteStringToFile(ProducerSnapshotFileName(dir_.path(), 5), "");
  WriteStringToFile(ProducerSnapshotFileName(dir_.path(), 9), "");
  WriteStringToFile(ProducerSnapshotFileName(dir_.path(), 12, ".deleted"), "");
  WriteStringToFile(dir_.Join("00000000000000000005.log"), "");
  manager_ = OpenManager();
  EXPECT_EQ(manager_->SnapshotOffsets(), (std::vector<int64_t>{5, 9}));
  EXPECT_EQ(manager_->OldestSnapshotOffset(), 5);
  EXPECT_EQ(manager_->LatestSnapshotOffset(), 9);
}

// Writes snapshots at 10 (producer 1), 20 (producers 1, 2) and 30 (1, 2, 3).
void WriteThreeSnapshots(ProducerStateManager* m) {
  for (int64_t pid = 1; pid <= 3; ++pid) {
    ProducerAppendInfo info = m->PrepareUpdate(pid, AppendOrigin::kReplication);
    ASSERT_TRUE(info.AppendDataBatch(0, 0, 0, kT0, pid * 10 - 1, pid * 10 - 1, false).ok());
    ASSERT_TRUE(m->Update(info).ok());
    m->UpdateMapEndOffset(pid * 10);
    ASSERT_TRUE(m->TakeSnapshot().ok());
  }
}

TEST_F(ProducerStateManagerTest, TruncateAndReloadLoadsLatestSnapshotInRange) {
  WriteThreeSnapshots(manager_.get());
  ASSERT_TRUE(manager_->TruncateAndReload(0, 25, kT0).ok());
  EXPECT_FALSE(FileExists(30));  // above the end
  EXPECT_EQ(manager_->SnapshotOffsets(), (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(manager_->MapEndOffset(), 20);
  EXPECT_EQ(manager_->LastSnapshotOffsetTaken(), 20);
  EXPECT_EQ(manager_->ActiveProducers().size(), 2u);
  EXPECT_EQ(manager_->LastEntry(2)->LastDataOffset(), 19);
}

TEST_F(ProducerStateManagerTest, TruncateAndReloadDeletesCorruptSnapshotsAndTriesOlder) {
  WriteThreeSnapshots(manager_.get());
  std::string bytes = ReadFileToString(ProducerSnapshotFileName(dir_.path(), 30));
  bytes[20] ^= 1;
  WriteStringToFile(ProducerSnapshotFileName(dir_.path(), 30), bytes);
  WriteStringToFile(ProducerSnapshotFileName(dir_.path(), 20), "garbage");
  ASSERT_TRUE(manager_->TruncateAndReload(0, 35, kT0).ok());
  EXPECT_FALSE(FileExists(30));
  EXPECT_FALSE(FileExists(20));
  EXPECT_TRUE(FileExists(10));
  EXPECT_EQ(manager_->MapEndOffset(), 10);
  EXPECT_EQ(manager_->ActiveProducers().size(), 1u);
}

TEST_F(ProducerStateManagerTest, TruncateAndReloadDropsSnapshotsAtOrBelowLogStart) {
  WriteThreeSnapshots(manager_.get());
  ASSERT_TRUE(manager_->TruncateAndReload(30, 35, kT0).ok());
  EXPECT_FALSE(FileExists(10));
  EXPECT_FALSE(FileExists(20));
  EXPECT_FALSE(FileExists(30));
  EXPECT_TRUE(manager_->ActiveProducers().empty());
  EXPECT_EQ(manager_->MapEndOffset(), 30);  // no snapshot left: start at log start
  EXPECT_EQ(manager_->LastSnapshotOffsetTaken(), 30);
}

TEST_F(ProducerStateManagerTest, TruncateAndReloadSkipsExpiredProducers) {
  WriteThreeSnapshots(manager_.get());
  ProducerAppendInfo info = manager_->PrepareUpdate(4, AppendOrigin::kReplication);
  ASSERT_TRUE(info.AppendDataBatch(0, 0, 0, kT0, 30, 30, /*is_transactional=*/true).ok());
  ASSERT_TRUE(manager_->Update(info).ok());
  manager_->UpdateMapEndOffset(31);
  ASSERT_TRUE(manager_->TakeSnapshot().ok());
  manager_->UpdateMapEndOffset(40);
  ASSERT_TRUE(manager_->TruncateAndReload(0, 31, kT0 + 86400000).ok());
  ASSERT_EQ(manager_->ActiveProducers().size(), 1u);  // only the open transaction
  EXPECT_EQ(manager_->ActiveProducers().begin()->first, 4);
  EXPECT_EQ(manager_->FirstUnstableOffset(), 30);
}

TEST_F(ProducerStateManagerTest, TruncateAndReloadAtMapEndKeepsState) {
  WriteThreeSnapshots(manager_.get());
  ASSERT_TRUE(manager_->TruncateAndReload(15, 30, kT0).ok());
  EXPECT_EQ(manager_->ActiveProducers().size(), 3u);  // not reloaded
  EXPECT_EQ(manager_->SnapshotOffsets(), (std::vector<int64_t>{20, 30}));
  EXPECT_EQ(manager_->MapEndOffset(), 30);
}

TEST_F(ProducerStateManagerTest, TruncateFullyAndStartAtDeletesEverything) {
  WriteThreeSnapshots(manager_.get());
  ASSERT_TRUE(manager_->TruncateFullyAndStartAt(100).ok());
  EXPECT_TRUE(manager_->IsEmpty());
  EXPECT_TRUE(manager_->SnapshotOffsets().empty());
  EXPECT_FALSE(FileExists(10));
  EXPECT_EQ(manager_->MapEndOffset(), 100);
  auto path = manager_->TakeSnapshot();
  ASSERT_TRUE(path.ok() && *path);  // last snapshot offset was reset to 0
  EXPECT_TRUE(FileExists(100));
}

TEST_F(ProducerStateManagerTest, DeleteAndMarkSnapshots) {
  WriteThreeSnapshots(manager_.get());
  ASSERT_TRUE(manager_->DeleteSnapshotsBefore(20).ok());
  EXPECT_FALSE(FileExists(10));
  EXPECT_EQ(manager_->SnapshotOffsets(), (std::vector<int64_t>{20, 30}));
  auto marked = manager_->RemoveAndMarkSnapshotForDeletion(20);
  ASSERT_TRUE(marked.ok() && *marked);
  EXPECT_EQ(**marked, ProducerSnapshotFileName(dir_.path(), 20, ".deleted"));
  EXPECT_TRUE(std::filesystem::exists(**marked));
  EXPECT_FALSE(FileExists(20));
  EXPECT_EQ(manager_->SnapshotOffsets(), (std::vector<int64_t>{30}));
  auto none = manager_->RemoveAndMarkSnapshotForDeletion(20);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
}

TEST_F(ProducerStateManagerTest, RemoveStraySnapshotsKeepsSegmentBasesAndTheCleanShutdownOne) {
  for (int64_t offset : {100, 150, 200, 250, 300}) {
    WriteStringToFile(ProducerSnapshotFileName(dir_.path(), offset), "");
  }
  ASSERT_TRUE(manager_->RemoveStraySnapshots({100, 200}).ok());
  EXPECT_EQ(manager_->SnapshotOffsets(), (std::vector<int64_t>{100, 200, 300}));
  EXPECT_FALSE(FileExists(150));
  EXPECT_FALSE(FileExists(250));
  EXPECT_TRUE(FileExists(300));
}

TEST_F(ProducerStateManagerTest, RemoveStraySnapshotsDropsStrayBelowTheLastSegment) {
  for (int64_t offset : {100, 150, 180, 200}) {
    WriteStringToFile(ProducerSnapshotFileName(dir_.path(), offset), "");
  }
  ASSERT_TRUE(manager_->RemoveStraySnapshots({100, 200}).ok());
  EXPECT_EQ(manager_->SnapshotOffsets(), (std::vector<int64_t>{100, 200}));
  EXPECT_FALSE(FileExists(150));
  EXPECT_FALSE(FileExists(180));
}

}  // namespace
}  // namespace daruma
