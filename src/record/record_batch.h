// Magic v2 record batches (spec §2): a read-only view over the bytes of one
// batch, validation, and record iteration.
//
// Layout (all big-endian), 61-byte header then records:
//   0 baseOffset i64 | 8 length i32 | 12 partitionLeaderEpoch i32 | 16 magic i8
//  17 crc u32 (CRC-32C of [21, end)) | 21 attributes i16 | 23 lastOffsetDelta i32
//  27 baseTimestamp i64 | 35 maxTimestamp i64 | 43 producerId i64
//  51 producerEpoch i16 | 53 baseSequence i32 | 57 recordsCount i32 | 61 records
//
// Contract: a RecordBatchView does not own its bytes; it stays valid as long
// as the span it was built from. Header accessors require size() >= 61, which
// Parse() guarantees; they do not check the CRC (call Validate()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "record/compression.h"

namespace daruma {

inline constexpr int kLogOverhead = 12;  // offset + size prefix of every entry
inline constexpr int kRecordBatchOverhead = 61;
inline constexpr int kMagicV2 = 2;
inline constexpr int64_t kNoTimestamp = -1;
inline constexpr int64_t kNoProducerId = -1;
inline constexpr int16_t kNoProducerEpoch = -1;
inline constexpr int32_t kNoSequence = -1;
inline constexpr int32_t kNoPartitionLeaderEpoch = -1;

namespace batch_layout {
inline constexpr size_t kBaseOffset = 0;
inline constexpr size_t kLength = 8;
inline constexpr size_t kPartitionLeaderEpoch = 12;
inline constexpr size_t kMagic = 16;
inline constexpr size_t kCrc = 17;
inline constexpr size_t kAttributes = 21;
inline constexpr size_t kLastOffsetDelta = 23;
inline constexpr size_t kBaseTimestamp = 27;
inline constexpr size_t kMaxTimestamp = 35;
inline constexpr size_t kProducerId = 43;
inline constexpr size_t kProducerEpoch = 51;
inline constexpr size_t kBaseSequence = 53;
inline constexpr size_t kRecordsCount = 57;
inline constexpr size_t kRecords = 61;
}  // namespace batch_layout

namespace batch_attributes {
inline constexpr uint8_t kCompressionMask = 0x07;
inline constexpr uint8_t kLogAppendTime = 0x08;
inline constexpr uint8_t kTransactional = 0x10;
inline constexpr uint8_t kControl = 0x20;
inline constexpr uint8_t kDeleteHorizon = 0x40;
}  // namespace batch_attributes

enum class TimestampType { kNoTimestamp, kCreateTime, kLogAppendTime };
const char* TimestampTypeName(TimestampType t);  // "NoTimestampType", "CreateTime", ...

struct RecordHeader {
  std::string key;
  std::optional<std::string> value;
};

// One decoded record. Key/value are copies (records may come from a
// decompressed buffer that does not outlive the iterator).
struct Record {
  int64_t offset = 0;
  int64_t timestamp = kNoTimestamp;
  int32_t sequence = kNoSequence;
  int8_t attributes = 0;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<RecordHeader> headers;
};

// Adds `delta` to a sequence with Kafka's wrap-around (2^31-1 -> 0); -1 stays -1.
int32_t IncrementSequence(int32_t sequence, int32_t delta);

class RecordBatchView {
 public:
  RecordBatchView() = default;
  // `bytes` must hold exactly one batch (12 + length bytes).
  explicit RecordBatchView(ByteSpan bytes) : bytes_(bytes) {}

  // Checks the structure needed for the accessors: at least 61 bytes, magic 2,
  // length field consistent with bytes.size(). Does not check the CRC.
  static Result<RecordBatchView> Parse(ByteSpan bytes);

  ByteSpan bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

  int64_t base_offset() const { return int64_t(LoadBe64(p() + batch_layout::kBaseOffset)); }
  int32_t length() const { return int32_t(LoadBe32(p() + batch_layout::kLength)); }
  int32_t partition_leader_epoch() const {
    return int32_t(LoadBe32(p() + batch_layout::kPartitionLeaderEpoch));
  }
  int8_t magic() const { return int8_t(p()[batch_layout::kMagic]); }
  uint32_t stored_crc() const { return LoadBe32(p() + batch_layout::kCrc); }
  uint32_t ComputeCrc() const;
  int16_t attributes() const { return int16_t(LoadBe16(p() + batch_layout::kAttributes)); }
  int32_t last_offset_delta() const {
    return int32_t(LoadBe32(p() + batch_layout::kLastOffsetDelta));
  }
  int64_t base_timestamp() const { return int64_t(LoadBe64(p() + batch_layout::kBaseTimestamp)); }
  int64_t max_timestamp() const { return int64_t(LoadBe64(p() + batch_layout::kMaxTimestamp)); }
  int64_t producer_id() const { return int64_t(LoadBe64(p() + batch_layout::kProducerId)); }
  int16_t producer_epoch() const { return int16_t(LoadBe16(p() + batch_layout::kProducerEpoch)); }
  int32_t base_sequence() const { return int32_t(LoadBe32(p() + batch_layout::kBaseSequence)); }
  int32_t records_count() const { return int32_t(LoadBe32(p() + batch_layout::kRecordsCount)); }

  // Java's long arithmetic, as Kafka computes them: wraps instead of
  // overflowing (baseOffset and lastOffsetDelta are outside the CRC, so a
  // damaged batch can put them anywhere; the recovery scan rejects a batch
  // whose offsets wrap or leave no next offset).
  int64_t last_offset() const {
    return int64_t(uint64_t(base_offset()) + uint64_t(int64_t(last_offset_delta())));
  }
  int64_t next_offset() const { return int64_t(uint64_t(last_offset()) + 1u); }
  int32_t last_sequence() const { return IncrementSequence(base_sequence(), last_offset_delta()); }
  uint8_t attribute_byte() const { return p()[batch_layout::kAttributes + 1]; }
  int compression_id() const { return attribute_byte() & batch_attributes::kCompressionMask; }
  CompressionType compression() const { return CompressionType(compression_id()); }
  TimestampType timestamp_type() const {
    return (attribute_byte() & batch_attributes::kLogAppendTime) ? TimestampType::kLogAppendTime
                                                                 : TimestampType::kCreateTime;
  }
  bool is_transactional() const { return attribute_byte() & batch_attributes::kTransactional; }
  bool is_control() const { return attribute_byte() & batch_attributes::kControl; }
  bool has_delete_horizon() const { return attribute_byte() & batch_attributes::kDeleteHorizon; }
  std::optional<int64_t> delete_horizon_ms() const {
    if (!has_delete_horizon()) return std::nullopt;
    return base_timestamp();
  }
  bool has_producer_id() const { return producer_id() > kNoProducerId; }
  bool crc_valid() const { return stored_crc() == ComputeCrc(); }

  // Batch-level validity as Kafka's ensureValid: size >= 61 and CRC match.
  // The message names the field, expected and found values.
  Status Validate() const;

  // Decodes every record (decompressing if needed), checking record count,
  // lengths and that the records region is exactly consumed (spec §2.3).
  Result<std::vector<Record>> DecodeRecords(
      size_t max_decompressed = kDefaultMaxDecompressedBytes) const;

 private:
  const uint8_t* p() const { return bytes_.data(); }
  ByteSpan bytes_;
};

// Decodes `count` v2 records from an uncompressed records region.
Status DecodeRecordsRegion(ByteSpan region, const RecordBatchView& batch, int32_t count,
                           std::vector<Record>* out);

}  // namespace daruma
