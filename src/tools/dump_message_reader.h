// A reader for Kafka's generated-message wire types, used by the
// `__consumer_offsets` and `__transaction_state` decoders of `daruma dump`.
//
// Types (big-endian): int8/16/32/64; STRING = int16 length + UTF-8 (length -1
// = null where nullable); BYTES = int32 length + bytes; ARRAY = int32 count;
// in flexible versions COMPACT_* use an unsigned varint of length + 1 (0 =
// null), and every struct ends with a tagged-field section (unsigned varint
// count, then per field: unsigned varint tag, unsigned varint size, bytes),
// which these decoders skip. Every read checks the remaining bytes; an error
// names the field and the byte position.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"

namespace daruma::tools {

class MessageReader {
 public:
  MessageReader(std::string_view data, bool flexible) : data_(data), flexible_(flexible) {}

  bool flexible() const { return flexible_; }
  size_t position() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }

  Result<int8_t> Int8(const char* field);
  Result<int16_t> Int16(const char* field);
  Result<int32_t> Int32(const char* field);
  Result<int64_t> Int64(const char* field);
  // STRING / COMPACT_STRING by the flexible flag; null is an error.
  Result<std::string> String(const char* field);
  Result<std::optional<std::string>> NullableString(const char* field);
  // BYTES / COMPACT_BYTES, nullable.
  Result<std::optional<std::string>> NullableBytes(const char* field);
  // A UUID (16 bytes) as Kafka prints one: 22 characters of base64url.
  Result<std::string> Uuid(const char* field);
  // An array's element count (-1 = null).
  Result<int32_t> ArrayLength(const char* field);
  // Skips the tagged-field section of a flexible struct (no-op otherwise).
  Status SkipTaggedFields(const char* field);
  // For a decoder that reads a tagged-field section itself: its count, tags
  // and sizes, and the next `n` bytes (a tagged field's data).
  Result<uint32_t> UnsignedVarint(const char* field);
  Result<std::string_view> Raw(size_t n, const char* field);

 private:
  Status Need(size_t n, const char* field) const;
  // A length-prefixed blob; `length` < 0 means null.
  Result<std::optional<std::string>> Blob(int64_t length, const char* field);

  std::string_view data_;
  bool flexible_;
  size_t pos_ = 0;
};

// Standard Base64 with padding, as Jackson renders a binary JSON node.
std::string Base64(std::string_view bytes);

}  // namespace daruma::tools
