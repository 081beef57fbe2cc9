#include "broker/produce_validator.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "record/record_batch.h"

namespace daruma::broker {
namespace {

ProduceCheck Reject(ErrorCode error, std::string message) {
  return {error, std::move(message)};
}

// A per-record rule refused the record at `index` of the batch.
ProduceCheck RejectRecord(ErrorCode error, size_t index, std::string message) {
  return {error, std::move(message), int32_t(index)};
}

// Steps 5–6: framing, magic, codec, size. On success `*batch` views the batch.
ProduceCheck CheckStructure(ByteSpan records, int16_t version, const LogConfig& config,
                            RecordBatchView* batch) {
  if (records.size() < size_t(kRecordBatchOverhead)) {
    // A legacy message set can be shorter than a v2 header; its magic says so.
    if (records.size() > batch_layout::kMagic && records[batch_layout::kMagic] < kMagicV2) {
      return Reject(
          version < 3 ? ErrorCode::kUnsupportedForMessageFormat : ErrorCode::kInvalidRecord,
          fmt::format("field magic at byte {}: expected 2, found {}", batch_layout::kMagic,
                      records[batch_layout::kMagic]));
    }
    return Reject(ErrorCode::kCorruptMessage,
                  fmt::format("record set of {} bytes is shorter than a batch header ({} bytes)",
                              records.size(), kRecordBatchOverhead));
  }
  const int8_t magic = int8_t(records[batch_layout::kMagic]);
  if (magic != kMagicV2) {
    return Reject(
        magic < kMagicV2 && version < 3 ? ErrorCode::kUnsupportedForMessageFormat
                                        : ErrorCode::kInvalidRecord,
        fmt::format("field magic at byte {}: expected 2, found {}", batch_layout::kMagic, magic));
  }
  const int32_t length = int32_t(LoadBe32(records.data() + batch_layout::kLength));
  const int64_t size = int64_t(length) + kLogOverhead;
  if (length < kRecordBatchOverhead - kLogOverhead || size_t(size) > records.size()) {
    return Reject(ErrorCode::kCorruptMessage,
                  fmt::format("field batchLength at byte {}: {} does not fit the {} bytes present",
                              batch_layout::kLength, length, records.size()));
  }
  if (size_t(size) != records.size()) {
    return Reject(ErrorCode::kInvalidRecord,
                  fmt::format("Produce v{} must carry exactly one record batch, found {} more "
                              "bytes at byte {}",
                              version, records.size() - size_t(size), size));
  }
  *batch = RecordBatchView(records);
  const int codec = batch->compression_id();
  if (codec > 4 || (codec == 4 && version < 7)) {
    return Reject(ErrorCode::kUnsupportedCompressionType,
                  fmt::format("field attributes at byte {}: compression codec {} is not allowed "
                              "in Produce v{}",
                              batch_layout::kAttributes, codec, version));
  }
  if (size > config.max_message_bytes) {
    return Reject(ErrorCode::kMessageTooLarge,
                  fmt::format("batch of {} bytes is larger than max.message.bytes {}", size,
                              config.max_message_bytes));
  }
  return {};
}

// Steps 7–8: CRC and header consistency.
ProduceCheck CheckHeader(const RecordBatchView& batch) {
  if (!batch.crc_valid()) {
    return Reject(ErrorCode::kCorruptMessage,
                  fmt::format("field crc at byte {}: expected {:#010x}, found {:#010x}",
                              batch_layout::kCrc, batch.ComputeCrc(), batch.stored_crc()));
  }
  const int32_t count = batch.records_count();
  if (count <= 0 || int64_t(batch.last_offset_delta()) + 1 != count) {
    return Reject(
        ErrorCode::kInvalidRecord,
        fmt::format("field recordsCount at byte {}: expected lastOffsetDelta + 1 = {} "
                    "(and > 0), found {}",
                    batch_layout::kRecordsCount, int64_t(batch.last_offset_delta()) + 1, count));
  }
  if (batch.is_control()) {
    return Reject(ErrorCode::kInvalidRecord,
                  fmt::format("field attributes at byte {}: clients may not send control batches",
                              batch_layout::kAttributes));
  }
  if (batch.producer_id() >= 0 && batch.base_sequence() < 0) {
    return Reject(
        ErrorCode::kInvalidRecord,
        fmt::format("field baseSequence at byte {}: expected >= 0 with producer id {}, "
                    "found {}",
                    batch_layout::kBaseSequence, batch.producer_id(), batch.base_sequence()));
  }
  if (batch.timestamp_type() == TimestampType::kLogAppendTime) {
    return Reject(ErrorCode::kInvalidTimestamp,
                  fmt::format("field attributes at byte {}: producers may not set LogAppendTime",
                              batch_layout::kAttributes));
  }
  return {};
}

// A nullable bytes field (varint length, -1 = null) skipped; `null` set when
// it was null.
bool SkipNullableBytes(ByteReader& r, bool* null) {
  int32_t len;
  if (!r.ReadVarint(&len)) return false;
  *null = len < 0;
  return len < 0 || r.Skip(size_t(len));
}

// Step 9 for an uncompressed batch without materialising its records (no
// copy of keys and values, no allocation): exactly the structure checks of
// RecordBatchView::DecodeRecords plus the offset-delta and compacted-key
// rules below. False means "look closer": CheckRecords then decodes fully and
// names the failure, so both paths give the same outcome.
bool UncompressedRecordsPass(const RecordBatchView& batch, const LogConfig& config,
                             int64_t* max_timestamp) {
  if (batch.compression() != CompressionType::kNone || batch.records_count() < 0) return false;
  ByteReader r(batch.bytes().subspan(batch_layout::kRecords));
  int64_t max = kNoTimestamp;
  for (int32_t i = 0; i < batch.records_count(); ++i) {
    int32_t len;
    ByteSpan body;
    if (!r.ReadVarint(&len) || len < 0 || !r.ReadBytes(size_t(len), &body)) return false;
    ByteReader b(body);
    int8_t attributes;
    int64_t timestamp_delta;
    int32_t offset_delta;
    bool null_key = false;
    bool null_value = false;
    int32_t header_count;
    if (!b.ReadInt8(&attributes) || !b.ReadVarlong(&timestamp_delta) ||
        !b.ReadVarint(&offset_delta) || offset_delta != i || !SkipNullableBytes(b, &null_key) ||
        (config.compact && null_key) || !SkipNullableBytes(b, &null_value) ||
        !b.ReadVarint(&header_count) || header_count < 0 || size_t(header_count) > b.remaining()) {
      return false;
    }
    for (int32_t h = 0; h < header_count; ++h) {
      int32_t key_len;
      bool null_header_value = false;
      if (!b.ReadVarint(&key_len) || key_len < 0 || !b.Skip(size_t(key_len)) ||
          !SkipNullableBytes(b, &null_header_value)) {
        return false;
      }
    }
    if (!b.AtEnd()) return false;
    // As Java adds them (wrapping), for a delta no client sends.
    max = std::max(max, int64_t(uint64_t(batch.base_timestamp()) + uint64_t(timestamp_delta)));
  }
  if (!r.AtEnd()) return false;
  *max_timestamp = max;
  return true;
}

// Kafka's LogValidator.validateTimestamp, on a CreateTime topic when a bound
// is set: every record's timestamp (but -1, none) within the bounds.
ProduceCheck CheckTimestamps(const std::vector<Record>& records, const LogConfig& config,
                             int64_t now_ms) {
  constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
  const int64_t before = config.TimestampBeforeMaxMs();
  const int64_t after = config.TimestampAfterMaxMs();
  // now - before cannot overflow (now >= 0); now + after can.
  const int64_t low = before == kUnbounded ? std::numeric_limits<int64_t>::min() : now_ms - before;
  const int64_t high = after > kUnbounded - now_ms ? kUnbounded : now_ms + after;
  for (size_t i = 0; i < records.size(); ++i) {
    const int64_t ts = records[i].timestamp;
    if (ts == kNoTimestamp || (ts >= low && ts <= high)) continue;
    return RejectRecord(ErrorCode::kInvalidTimestamp, i,
                        fmt::format("Timestamp {} of message with offset {} is out of "
                                    "range. The timestamp should be within [{}, {}]",
                                    ts, records[i].offset, low, high));
  }
  return {};
}

bool HasTimestampBounds(const LogConfig& config) {
  return !config.log_append_time &&
         (config.TimestampBeforeMaxMs() != std::numeric_limits<int64_t>::max() ||
          config.TimestampAfterMaxMs() != std::numeric_limits<int64_t>::max());
}

// Step 9: the records themselves; *max_timestamp gets the largest record
// timestamp (kNoTimestamp when none is larger), Kafka's maxBatchTimestamp.
ProduceCheck CheckRecords(const RecordBatchView& batch, const LogConfig& config, int64_t now_ms,
                          int64_t* max_timestamp) {
  const bool bounded = HasTimestampBounds(config);
  if (!bounded && UncompressedRecordsPass(batch, config, max_timestamp)) return {};
  auto records = batch.DecodeRecords(MaxDecompressedBytesFor(config.max_message_bytes));
  if (!records.ok() && records.status().code() == StatusCode::kTooLarge) {
    // Not CORRUPT_MESSAGE, which clients retry until their delivery timeout.
    return Reject(
        ErrorCode::kMessageTooLarge,
        fmt::format("{}: the records decompress to more than {} bytes (64 x "
                    "max.message.bytes {}), beyond what the broker decodes",
                    records.status().message(), MaxDecompressedBytesFor(config.max_message_bytes),
                    config.max_message_bytes));
  }
  if (!records.ok()) {
    return Reject(ErrorCode::kCorruptMessage, records.status().message());
  }
  for (size_t i = 0; i < records->size(); ++i) {
    const Record& r = (*records)[i];
    const int64_t delta = r.offset - batch.base_offset();
    if (delta != int64_t(i)) {
      return RejectRecord(
          ErrorCode::kInvalidRecord, i,
          fmt::format("record {}: field offsetDelta: expected {}, found {}", i, i, delta));
    }
    if (config.compact && !r.key) {
      return RejectRecord(ErrorCode::kInvalidRecord, i,
                          fmt::format("record {}: a compacted topic needs a non-null key", i));
    }
    *max_timestamp = std::max(*max_timestamp, r.timestamp);
  }
  if (bounded) return CheckTimestamps(*records, config, now_ms);
  return {};
}

}  // namespace

ProduceCheck ValidateProduceRecords(std::optional<ByteSpan> records, int16_t produce_version,
                                    const LogConfig& config, int64_t now_ms) {
  if (!records || records->empty()) {
    return Reject(ErrorCode::kInvalidRecord,
                  fmt::format("Produce v{} must carry exactly one record batch, found {}",
                              produce_version, records ? "an empty record set" : "null records"));
  }
  RecordBatchView batch;
  ProduceCheck check = CheckStructure(*records, produce_version, config, &batch);
  if (!check.ok()) return check;
  check = CheckHeader(batch);
  if (!check.ok()) return check;
  int64_t max_timestamp = kNoTimestamp;
  check = CheckRecords(batch, config, now_ms, &max_timestamp);
  if (!check.ok()) return check;
  check.max_timestamp = max_timestamp;
  if (int64_t(batch.size()) > config.segment_bytes) {
    return Reject(ErrorCode::kRecordListTooLarge,
                  fmt::format("batch of {} bytes is larger than segment.bytes {}", batch.size(),
                              config.segment_bytes));
  }
  return check;
}

}  // namespace daruma::broker
