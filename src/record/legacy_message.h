// Legacy message sets, magic v0 and v1 (spec §3), including compressed
// wrapper messages and v1 relative inner offsets.
//
// Entry layout: offset i64 | messageSize i32 | crc u32 (CRC-32 of magic..end)
//   | magic i8 | attributes i8 | [v1: timestamp i64] | keyLen i32 | key
//   | valueLen i32 | value
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

 private:
  ByteSpan bytes_;
};

// Builds an uncompressed legacy message entry (for tests and fuzz seeds).
Bytes BuildLegacyMessage(int8_t magic, int64_t offset, int64_t timestamp,
                         const std::optional<std::string>& key,
                         const std::optional<std::string>& value, int8_t attributes = 0);

}  // namespace daruma
