#include "record/record_batch.h"

#include <gtest/gtest.h>

#include "common/crc32c.h"
#include "common/damage_kind.h"
#include "record/control_record.h"
#include "record/record_batch_builder.h"

namespace daruma {
namespace {

Bytes SimpleBatch(BatchBuilderOptions o = {}, int n = 3) {
  std::vector<RecordInput> records;
  for (int i = 0; i < n; ++i) {
    RecordInput r;
    r.timestamp = 1000 + i * 10;
    r.key = "k" + std::to_string(i);
    r.value = "value-" + std::to_string(i);
    records.push_back(r);
  }
  records[0].headers.push_back({"h1", std::string("v1")});
  records[0].headers.push_back({"h2", std::nullopt});
  records[n - 1].key.reset();
  return std::move(BuildRecordBatch(o, records)).value();
}

TEST(RecordBatchTest, HeaderFieldsAtSpecPositions) {
  BatchBuilderOptions o;
  o.base_offset = 0x0102030405060708;
  o.partition_leader_epoch = 7;
  o.producer_id = 42;
  o.producer_epoch = 3;
  o.base_sequence = 100;
  o.is_transactional = true;
  Bytes b = SimpleBatch(o);
  auto view = RecordBatchView::Parse(b);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(b[0], 0x01);
  EXPECT_EQ(b[7], 0x08);
  EXPECT_EQ(view->base_offset(), 0x0102030405060708);
  EXPECT_EQ(view->length(), int32_t(b.size() - 12));
  EXPECT_EQ(view->partition_leader_epoch(), 7);
  EXPECT_EQ(view->magic(), 2);
  EXPECT_EQ(view->attribute_byte(), 0x10);
  EXPECT_EQ(b[21], 0) << "attribute high byte is written as 0";
  EXPECT_EQ(view->last_offset_delta(), 2);
  EXPECT_EQ(view->base_timestamp(), 1000);
  EXPECT_EQ(view->max_timestamp(), 1020);
  EXPECT_EQ(view->producer_id(), 42);
  EXPECT_EQ(view->producer_epoch(), 3);
  EXPECT_EQ(view->base_sequence(), 100);
  EXPECT_EQ(view->last_sequence(), 102);
  EXPECT_EQ(view->records_count(), 3);
  EXPECT_TRUE(view->is_transactional());
  EXPECT_FALSE(view->is_control());
  EXPECT_EQ(view->stored_crc(), Crc32c(b.data() + 21, b.size() - 21));
  EXPECT_TRUE(view->Validate().ok());
}

TEST(RecordBatchTest, RecordsRoundTripWithHeadersAndNulls) {
  Bytes b = SimpleBatch();
  auto records = RecordBatchView(b).DecodeRecords();
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0].offset, 0);
  EXPECT_EQ((*records)[1].offset, 1);
  EXPECT_EQ((*records)[1].timestamp, 1010);
  EXPECT_EQ(*(*records)[0].key, "k0");
  EXPECT_EQ(*(*records)[2].value, "value-2");
  EXPECT_FALSE((*records)[2].key.has_value());
  ASSERT_EQ((*records)[0].headers.size(), 2u);
  EXPECT_EQ((*records)[0].headers[0].key, "h1");
  EXPECT_EQ(*(*records)[0].headers[0].value, "v1");
  EXPECT_FALSE((*records)[0].headers[1].value.has_value());
}

TEST(RecordBatchTest, SequenceWrapsAroundInt32Max) {
  EXPECT_EQ(IncrementSequence(2147483646, 3), 1);
  EXPECT_EQ(IncrementSequence(2147483647, 1), 0);
  EXPECT_EQ(IncrementSequence(-1, 5), -1);
  EXPECT_EQ(IncrementSequence(10, 5), 15);
}

TEST(RecordBatchTest, LogAppendTimeOverridesRecordTimestamps) {
  BatchBuilderOptions o;
  o.timestamp_type = TimestampType::kLogAppendTime;
  o.log_append_time = 5555;
  Bytes b = SimpleBatch(o);
  RecordBatchView v(b);
  EXPECT_EQ(v.timestamp_type(), TimestampType::kLogAppendTime);
  EXPECT_EQ(v.max_timestamp(), 5555);
  auto records = v.DecodeRecords();
  ASSERT_TRUE(records.ok());
  for (const auto& r : *records) EXPECT_EQ(r.timestamp, 5555);
}

// A topic's compression.type rebuilds a batch: every header field a producer
// set and every record stay; only the codec and the CRC change.
TEST(RecordBatchTest, RecompressKeepsTheHeaderAndTheRecords) {
  BatchBuilderOptions o;
  o.partition_leader_epoch = 3;
  o.producer_id = 42;
  o.producer_epoch = 2;
  o.base_sequence = 7;
  o.is_transactional = true;
  o.compression = CompressionType::kSnappy;
  std::vector<RecordInput> in(3);
  for (int i = 0; i < 3; ++i) {
    in[i].timestamp = 1000 - i;  // deltas may be negative
    in[i].key = "k" + std::to_string(i);
    in[i].value = std::string(100, char('a' + i));
  }
  in[1].value = std::nullopt;
  in[2].headers = {{"h", "v"}, {"n", std::nullopt}};
  Result<Bytes> sent = BuildRecordBatch(o, in);
  ASSERT_TRUE(sent.ok());
  for (CompressionType target : {CompressionType::kNone, CompressionType::kGzip,
                                 CompressionType::kLz4, CompressionType::kZstd}) {
    Result<Bytes> again = RecompressRecordBatch(RecordBatchView(*sent), target, -1, 1 << 20);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    RecordBatchView a(*sent), b(*again);
    EXPECT_TRUE(b.Validate().ok());
    EXPECT_EQ(b.compression(), target);
    EXPECT_EQ(b.partition_leader_epoch(), 3);
    EXPECT_EQ(b.producer_id(), 42);
    EXPECT_EQ(b.producer_epoch(), 2);
    EXPECT_EQ(b.base_sequence(), 7);
    EXPECT_TRUE(b.is_transactional());
    EXPECT_EQ(b.last_offset_delta(), 2);
    EXPECT_EQ(b.max_timestamp(), a.max_timestamp());
    auto ra = a.DecodeRecords();
    auto rb = b.DecodeRecords();
    ASSERT_TRUE(ra.ok() && rb.ok());
    ASSERT_EQ(rb->size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ((*rb)[i].offset, (*ra)[i].offset);
      EXPECT_EQ((*rb)[i].timestamp, (*ra)[i].timestamp);
      EXPECT_EQ((*rb)[i].key, (*ra)[i].key);
      EXPECT_EQ((*rb)[i].value, (*ra)[i].value);
      EXPECT_EQ((*rb)[i].headers.size(), (*ra)[i].headers.size());
    }
  }
}

TEST(RecordBatchTest, DeleteHorizonIsBaseTimestamp) {
  BatchBuilderOptions o;
  o.delete_horizon_ms = 99999;
  Bytes b = SimpleBatch(o);
  RecordBatchView v(b);
  ASSERT_TRUE(v.delete_horizon_ms().has_value());
  EXPECT_EQ(*v.delete_horizon_ms(), 99999);
  EXPECT_EQ(v.attribute_byte() & 0x40, 0x40);
}

TEST(RecordBatchTest, EndTxnMarkerIs78BytesWithControlAttributes) {
  Bytes b = BuildEndTxnMarkerBatch(10, 1, 2000, 0, ControlRecordType::kAbort, 5, 123);
  ASSERT_EQ(b.size(), 78u);
  RecordBatchView v(b);
  EXPECT_EQ(v.attribute_byte(), 0x30);
  EXPECT_EQ(v.base_sequence(), -1);
  EXPECT_EQ(v.base_timestamp(), 123);
  EXPECT_EQ(v.max_timestamp(), 123);
  auto records = v.DecodeRecords();
  ASSERT_TRUE(records.ok());
  auto type = ParseControlRecordKey(AsBytes(*(*records)[0].key));
  ASSERT_TRUE(type.ok());
  EXPECT_EQ(*type, ControlRecordType::kAbort);
  auto epoch = ParseEndTxnMarkerCoordinatorEpoch(AsBytes(*(*records)[0].value));
  ASSERT_TRUE(epoch.ok());
  EXPECT_EQ(*epoch, 5);
}

// One test per validation failure; each asserts that the message names the field.
TEST(RecordBatchValidationTest, TooSmall) {
  Bytes b = SimpleBatch();
  b.resize(60);
  auto v = RecordBatchView::Parse(b);
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(v.status().IsCorruption());
  EXPECT_NE(v.status().message().find("minimum batch size 61"), std::string::npos);
  EXPECT_EQ(DamageKindOf(v.status()), DamageKind::kBadSize);
}

TEST(RecordBatchValidationTest, WrongMagic) {
  Bytes b = SimpleBatch();
  b[16] = 3;
  auto v = RecordBatchView::Parse(b);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("field magic: expected 2, found 3"), std::string::npos);
  EXPECT_EQ(DamageKindOf(v.status()), DamageKind::kBadMagic);
}

TEST(RecordBatchValidationTest, LengthDisagreesWithBytes) {
  Bytes b = SimpleBatch();
  b.push_back(0);
  auto v = RecordBatchView::Parse(b);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("field length"), std::string::npos);
}

TEST(RecordBatchValidationTest, CrcMismatchNamesExpectedAndFound) {
  Bytes b = SimpleBatch();
  b[40] ^= 0x01;  // inside maxTimestamp, covered by the CRC
  Status st = RecordBatchView(b).Validate();
  ASSERT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("field crc"), std::string::npos);
  EXPECT_NE(st.message().find("expected 0x"), std::string::npos);
  EXPECT_EQ(DamageKindOf(st), DamageKind::kBadCrc);
}

TEST(RecordBatchValidationTest, PartitionLeaderEpochIsNotCovered) {
  Bytes b = SimpleBatch();
  SetBatchPartitionLeaderEpoch(b, 12345);
  EXPECT_TRUE(RecordBatchView(b).Validate().ok());
}

TEST(RecordBatchValidationTest, RecordCountLargerThanRecordsPresent) {
  Bytes b = SimpleBatch();
  StoreBe32(b.data() + batch_layout::kRecordsCount, 4);
  RewriteBatchCrc(b);
  auto r = RecordBatchView(b).DecodeRecords();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidRecord);
  EXPECT_NE(r.status().message().find("premature EOF"), std::string::npos);
}

TEST(RecordBatchValidationTest, AHugeRecordCountReservesOnlyWhatTheBytesCanHold) {
  Bytes b = SimpleBatch();
  StoreBe32(b.data() + batch_layout::kRecordsCount, 1 << 30);
  RewriteBatchCrc(b);
  const RecordBatchView view(b);
  const ByteSpan region(b.data() + kRecordBatchOverhead, b.size() - kRecordBatchOverhead);
  std::vector<Record> out;
  Status st = DecodeRecordsRegion(region, view, view.records_count(), &out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidRecord);
  // A record takes at least 7 bytes, so no more can be in the region.
  EXPECT_LE(out.capacity(), region.size() / 7 + 1);
}

TEST(RecordBatchValidationTest, RecordCountSmallerThanRecordsPresent) {
  Bytes b = SimpleBatch();
  StoreBe32(b.data() + batch_layout::kRecordsCount, 2);
  RewriteBatchCrc(b);
  auto r = RecordBatchView(b).DecodeRecords();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("still remaining"), std::string::npos);
}

TEST(RecordBatchValidationTest, NegativeRecordCount) {
  Bytes b = SimpleBatch();
  StoreBe32(b.data() + batch_layout::kRecordsCount, uint32_t(-1));
  RewriteBatchCrc(b);
  auto r = RecordBatchView(b).DecodeRecords();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("field recordsCount"), std::string::npos);
}

TEST(RecordBatchValidationTest, RecordLengthPastEndNamesRecordAndPosition) {
  Bytes b = SimpleBatch({}, 1);
  b[61] = 0x7E;  // record length varint 63, more than present
  RewriteBatchCrc(b);
  auto r = RecordBatchView(b).DecodeRecords();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("record 0 at byte 0"), std::string::npos);
}

TEST(RecordBatchValidationTest, UnknownCodecId) {
  Bytes b = SimpleBatch();
  b[22] = (b[22] & ~0x07) | 0x06;
  RewriteBatchCrc(b);
  auto r = RecordBatchView(b).DecodeRecords();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown compression codec id 6"), std::string::npos);
}

TEST(RecordBatchTest, CompressedBatchesRoundTripForEveryCodec) {
  for (auto codec : {CompressionType::kGzip, CompressionType::kSnappy, CompressionType::kLz4,
                     CompressionType::kZstd}) {
    BatchBuilderOptions o;
    o.compression = codec;
    Bytes b = SimpleBatch(o, 50);
    RecordBatchView v(b);
    EXPECT_EQ(v.compression(), codec);
    EXPECT_TRUE(v.Validate().ok());
    auto records = v.DecodeRecords();
    ASSERT_TRUE(records.ok()) << CompressionName(codec) << ": " << records.status().ToString();
    ASSERT_EQ(records->size(), 50u);
    EXPECT_EQ(*(*records)[49].value, "value-49");
  }
}

}  // namespace
}  // namespace daruma
