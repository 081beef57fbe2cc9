// ValidateProduceRecords' record checks (step 9) on uncompressed batches,
// which take a walk without decoding when everything is valid: valid batches
// with null keys/values and headers pass, and each broken record still gets
// the error (and message) of the full decode.
#include "broker/produce_validator.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "record/record_batch.h"
#include "record/record_batch_builder.h"

namespace daruma::broker {
namespace {

Bytes Batch(const std::vector<RecordInput>& records,
            CompressionType compression = CompressionType::kNone) {
  BatchBuilderOptions options;
  options.compression = compression;
  Result<Bytes> batch = BuildRecordBatch(options, records);
  EXPECT_TRUE(batch.ok()) << batch.status().ToString();
  return batch.ok() ? *batch : Bytes{};
}

RecordInput Rec(std::optional<std::string> key, std::optional<std::string> value,
                std::vector<RecordHeader> headers = {}) {
  RecordInput r;
  r.timestamp = 1000;
  r.key = std::move(key);
  r.value = std::move(value);
  r.headers = std::move(headers);
  return r;
}

// The CRC recomputed after editing a batch, so the record checks are reached.
void FixCrc(Bytes& batch) {
  const uint32_t crc = RecordBatchView(batch).ComputeCrc();
  StoreBe32(batch.data() + batch_layout::kCrc, crc);
}

TEST(ProduceValidator, ValidUncompressedBatchesPass) {
  LogConfig config;
  const Bytes batch = Batch({Rec("k", "v", {{"h", "x"}, {"n", std::nullopt}}),
                             Rec(std::nullopt, std::nullopt), Rec("", std::string(3000, 'z'))});
  EXPECT_TRUE(ValidateProduceRecords(ByteSpan(batch), 7, config).ok());
}

TEST(ProduceValidator, NullKeyOnCompactedTopicIsInvalidRecord) {
  LogConfig config;
  config.compact = true;
  const Bytes keyed = Batch({Rec("k", "v")});
  EXPECT_TRUE(ValidateProduceRecords(ByteSpan(keyed), 7, config).ok());
  for (CompressionType c : {CompressionType::kNone, CompressionType::kGzip}) {
    const Bytes unkeyed = Batch({Rec("k", "v"), Rec(std::nullopt, "v")}, c);
    ProduceCheck check = ValidateProduceRecords(ByteSpan(unkeyed), 7, config);
    EXPECT_EQ(check.error, ErrorCode::kInvalidRecord);
    EXPECT_EQ(check.message, "record 1: a compacted topic needs a non-null key");
  }
}

// Kafka checks max.message.bytes on the batch as sent (compressed) and has
// no bound on what it decompresses to: a 2 MiB record of zeros, ~2 KiB
// compressed, is accepted on a default topic by every codec. Daruma bounds it
// at 64 x max.message.bytes, and beyond that answers MESSAGE_TOO_LARGE, which
// clients do not retry (not CORRUPT_MESSAGE, which they retry until their
// delivery timeout).
TEST(ProduceValidator, ACompressedBatchMayDecompressBeyondMaxMessageBytes) {
  const RecordInput zeros = Rec("k", std::string(2 << 20, '\0'));
  for (CompressionType c : {CompressionType::kGzip, CompressionType::kSnappy, CompressionType::kLz4,
                            CompressionType::kZstd}) {
    const Bytes batch = Batch({zeros}, c);
    ASSERT_LT(batch.size(), size_t(LogConfig{}.max_message_bytes)) << int(c);
    ProduceCheck check = ValidateProduceRecords(ByteSpan(batch), 7, LogConfig{});
    EXPECT_TRUE(check.ok()) << int(c) << ": " << check.message;
  }
  LogConfig small;
  small.max_message_bytes = 1000;  // bound: the default 1048588
  const Bytes batch = Batch({zeros}, CompressionType::kZstd);
  ProduceCheck check = ValidateProduceRecords(ByteSpan(batch), 7, small);
  EXPECT_EQ(check.error, ErrorCode::kMessageTooLarge);
  EXPECT_NE(check.message.find("decompress to more than 1048588 bytes (64 x max.message.bytes "
                               "1000)"),
            std::string::npos)
      << check.message;
  EXPECT_EQ(MaxDecompressedBytesFor(20 << 20), size_t(64) * (20 << 20));
  EXPECT_EQ(MaxDecompressedBytesFor(int64_t(1) << 40), kToolMaxDecompressedBytes);
}

// Kafka's message.timestamp.{before,after}.max.ms on a CreateTime topic: a
// record's timestamp (not the batch's) outside the bounds is INVALID_TIMESTAMP
// with Kafka's words; -1 (none) passes; a LogAppendTime topic is not bounded.
TEST(ProduceValidator, TimestampsOutsideTheTopicsBoundsAreInvalid) {
  constexpr int64_t kNow = 1700000000000;
  LogConfig config;
  config.message_timestamp_before_max_ms = 1000;
  config.message_timestamp_after_max_ms = 10;
  RecordInput ok = Rec("a", "1");
  ok.timestamp = kNow - 1000;
  RecordInput late = Rec("b", "2");
  late.timestamp = kNow + 11;
  for (CompressionType c : {CompressionType::kNone, CompressionType::kLz4}) {
    EXPECT_TRUE(ValidateProduceRecords(ByteSpan(Batch({ok}, c)), 7, config, kNow).ok());
    const Bytes batch = Batch({ok, late}, c);
    ProduceCheck check = ValidateProduceRecords(ByteSpan(batch), 7, config, kNow);
    EXPECT_EQ(check.error, ErrorCode::kInvalidTimestamp);
    EXPECT_EQ(check.message,
              "Timestamp 1700000000011 of message with offset 1 is out of range. The timestamp "
              "should be within [1699999999000, 1700000000010]");
  }
  RecordInput early = Rec("c", "3");
  early.timestamp = kNow - 1001;
  EXPECT_EQ(ValidateProduceRecords(ByteSpan(Batch({early})), 7, config, kNow).error,
            ErrorCode::kInvalidTimestamp);
  RecordInput none = Rec("d", "4");
  none.timestamp = -1;
  EXPECT_TRUE(ValidateProduceRecords(ByteSpan(Batch({none})), 7, config, kNow).ok());
  config.log_append_time = true;
  EXPECT_TRUE(ValidateProduceRecords(ByteSpan(Batch({early})), 7, config, kNow).ok());
  // The older name bounds both sides where the newer ones are unset.
  LogConfig old;
  old.message_timestamp_difference_max_ms = 5;
  EXPECT_EQ(ValidateProduceRecords(ByteSpan(Batch({late})), 7, old, kNow).error,
            ErrorCode::kInvalidTimestamp);
}

TEST(ProduceValidator, OffsetDeltaOutOfOrderIsInvalidRecord) {
  RecordInput a = Rec("a", "1");
  RecordInput b = Rec("b", "2");
  b.offset_delta = 5;
  Bytes batch = Batch({a, b});
  // lastOffsetDelta + 1 must still equal the count to reach the records.
  StoreBe32(batch.data() + batch_layout::kLastOffsetDelta, 1);
  FixCrc(batch);
  ProduceCheck check = ValidateProduceRecords(ByteSpan(batch), 7, LogConfig{});
  EXPECT_EQ(check.error, ErrorCode::kInvalidRecord);
  EXPECT_EQ(check.message, "record 1: field offsetDelta: expected 1, found 5");
}

TEST(ProduceValidator, MalformedRecordIsCorruptMessageAsTheFullDecodeSays) {
  Bytes batch = Batch({Rec("k", "value")});
  // The record's length varint (first byte of the records region): 1 byte
  // too long for the region.
  batch[batch_layout::kRecords] = uint8_t(batch[batch_layout::kRecords] + 2);
  FixCrc(batch);
  ProduceCheck check = ValidateProduceRecords(ByteSpan(batch), 7, LogConfig{});
  EXPECT_EQ(check.error, ErrorCode::kCorruptMessage);
  Result<std::vector<Record>> decoded = RecordBatchView(batch).DecodeRecords();
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(check.message, decoded.status().message());
}

}  // namespace
}  // namespace daruma::broker
