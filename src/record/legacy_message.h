// Legacy message sets, magic v0 and v1 (spec §3), including compressed
// wrapper messages and v1 relative inner offsets.
//
// Entry layout: offset i64 | messageSize i32 | crc u32 (CRC-32 of magic..end)
//   | magic i8 | attributes i8 | [v1: timestamp i64] | keyLen i32 | key
//   | valueLen i32 | value
//
// Contract: a LegacyMessageView does not own its bytes. Accessors require a
// view produced by Parse() (structure checked); Validate() is Kafka's
// ensureValid and is safe on any view. Error messages name the field, its
// byte position inside the entry (or inside the decompressed wrapper value)
// and the expected/found values; callers add the file and file position.
// Bytes after the value and inside messageSize are tolerated (covered by the
// CRC), as Kafka's reader does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "record/compression.h"
#include "record/record_batch.h"

namespace daruma {

inline constexpr int kLegacyMinMessageSizeV0 = 14;
inline constexpr int kLegacyMinMessageSizeV1 = 22;

namespace legacy_layout {
inline constexpr size_t kOffset = 0;
inline constexpr size_t kMessageSize = 8;
inline constexpr size_t kCrc = 12;
inline constexpr size_t kMagic = 16;
inline constexpr size_t kAttributes = 17;
inline constexpr size_t kTimestampV1 = 18;
inline constexpr size_t kKeyLengthV0 = 18;
inline constexpr size_t kKeyLengthV1 = 26;
}  // namespace legacy_layout

namespace legacy_attributes {
inline constexpr uint8_t kCompressionMask = 0x07;
inline constexpr uint8_t kLogAppendTime = 0x08;  // v1 only
}  // namespace legacy_attributes

// One record of a legacy entry plus the per-message facts kafka-dump-log's
// deep iteration prints (`isValid`, `crc`, timestamp type).
struct LegacyDeepRecord {
  Record record;
  int8_t magic = 0;  // of the (inner) message itself
  TimestampType timestamp_type = TimestampType::kNoTimestamp;
  uint32_t crc = 0;  // stored CRC of the (inner) message
  bool crc_valid = false;
  int32_t key_size = -1;    // -1 for null
  int32_t value_size = -1;  // -1 for null
};

// A read-only view over one legacy log entry (12-byte prefix + message).
class LegacyMessageView {
 public:
  LegacyMessageView() = default;
  explicit LegacyMessageView(ByteSpan bytes) : bytes_(bytes) {}

  // Checks that the header fields and key/value lengths fit in the bytes.
  static Result<LegacyMessageView> Parse(ByteSpan bytes);

  ByteSpan bytes() const { return bytes_; }
  int64_t offset() const;
  int32_t message_size() const;
  uint32_t stored_crc() const;
  uint32_t ComputeCrc() const;
  bool crc_valid() const { return stored_crc() == ComputeCrc(); }
  int8_t magic() const;
  int8_t attributes() const;
  int compression_id() const { return attributes() & 0x07; }
  TimestampType timestamp_type() const;
  int64_t timestamp() const;  // -1 for v0
  std::optional<ByteSpan> key() const;
  std::optional<ByteSpan> value() const;

  // size >= 14 and CRC-32 matches (outer message only).
  Status Validate() const;

  // Shallow entry's records: itself if uncompressed, else the decompressed
  // inner messages with absolute offsets and timestamps per spec §3.2.
  Result<std::vector<Record>> DecodeRecords(
      size_t max_decompressed = kDefaultMaxDecompressedBytes) const;

  // As DecodeRecords, with each message's CRC state and sizes (for dump).
  // Inner CRCs are reported, never enforced (spec §5: only the outer message
  // is checked).
  Result<std::vector<LegacyDeepRecord>> DecodeDeep(
      size_t max_decompressed = kDefaultMaxDecompressedBytes) const;

 private:
  ByteSpan bytes_;
};

// Builds an uncompressed legacy message entry (for tests and fuzz seeds).
Bytes BuildLegacyMessage(int8_t magic, int64_t offset, int64_t timestamp,
                         const std::optional<std::string>& key,
                         const std::optional<std::string>& value, int8_t attributes = 0);

// Builds a compressed wrapper entry (for tests): compresses `inner_entries`
// (concatenated entries, e.g. from BuildLegacyMessage) with `codec` and stores
// them as the value of a wrapper with offset `offset`. `log_append_time` sets
// the v1 timestamp-type bit.
Result<Bytes> BuildLegacyWrapper(int8_t magic, int64_t offset, int64_t timestamp,
                                 CompressionType codec, ByteSpan inner_entries,
                                 bool log_append_time = false);

}  // namespace daruma
