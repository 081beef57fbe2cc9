// ProtocolReader: bounds-checked decoding of Kafka wire-protocol primitives
// (spec kafka-protocol-subset.md §1.2–1.3).
//
// Contract:
// - The reader is a cursor over a borrowed span (normally one request frame
//   without its 4-byte size prefix). Views it returns (ReadBytes, records,
//   tagged-field payloads) point into that span and stay valid exactly as long
//   as the caller keeps the frame alive.
// - Errors are sticky: the first failure records a Status naming the field and
//   the byte position (relative to the start of the span) where that field
//   began; every later read returns a zero value and consumes nothing. Codecs
//   therefore read a whole struct and check ok()/status() once at the end.
// - No length field can make the reader allocate beyond what is on the wire:
//   string/bytes lengths and array counts larger than the remaining bytes are
//   rejected before any allocation (every array element occupies >= 1 byte).
// - Malformed input is StatusCode::kInvalidArgument; it never crashes.
//
// Encodings: `Encoding::kClassic` is the int16/int32-length form used by
// non-flexible versions; `Encoding::kCompact` is the unsigned-varint (N+1)
// form used by flexible versions (§1.2).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"

namespace daruma {

enum class Encoding : uint8_t { kClassic, kCompact };

inline Encoding EncodingFor(bool flexible) {
  return flexible ? Encoding::kCompact : Encoding::kClassic;
}

// One entry of a tagged-field section; `data` is a view into the frame.
struct TaggedField {
  uint32_t tag = 0;
  ByteSpan data;
};

using WireUuid = std::array<uint8_t, 16>;

class ProtocolReader {
 public:
  explicit ProtocolReader(ByteSpan data) : data_(data) {}

  // A reader over `inner`, a span inside this reader's data (a tagged
  // field's payload), whose errors name positions of THIS reader's span.
  ProtocolReader SubReader(ByteSpan inner) const {
    ProtocolReader sub(inner);
    sub.base_ = base_ + size_t(inner.data() - data_.data());
    return sub;
  }
  // Takes `sub`'s error, or fails `field` when `sub` left bytes unread (a
  // tagged field longer than its schema says).
  void Absorb(const ProtocolReader& sub, std::string_view field);

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  size_t position() const { return pos_; }  // relative to this reader's span
  size_t remaining() const { return data_.size() - pos_; }
  bool AtEnd() const { return pos_ == data_.size(); }

  int8_t ReadInt8(std::string_view field);
  int16_t ReadInt16(std::string_view field);
  int32_t ReadInt32(std::string_view field);
  int64_t ReadInt64(std::string_view field);
  uint16_t ReadUint16(std::string_view field);
  uint32_t ReadUint32(std::string_view field);
  // IEEE 754 binary64, big-endian.
  double ReadFloat64(std::string_view field);
  // 0 is false, any other byte is true (§1.2).
  bool ReadBool(std::string_view field);
  // Zig-zag varint (<= 5 bytes) / varlong (<= 10 bytes).
  int32_t ReadVarint(std::string_view field);
  int64_t ReadVarlong(std::string_view field);
  // LEB128, at most 5 bytes.
  uint32_t ReadUnsignedVarint(std::string_view field);
  WireUuid ReadUuid(std::string_view field);

  // Non-nullable string: a null length is an error naming the field.
  std::string ReadString(std::string_view field, Encoding encoding);
  std::optional<std::string> ReadNullableString(std::string_view field, Encoding encoding);
  // Views into the frame.
  ByteSpan ReadBytes(std::string_view field, Encoding encoding);
  std::optional<ByteSpan> ReadNullableBytes(std::string_view field, Encoding encoding);

  // Element count of a non-nullable array; guaranteed <= remaining().
  size_t ReadArrayCount(std::string_view field, Encoding encoding);
  // As above; nullopt for a null array.
  std::optional<size_t> ReadNullableArrayCount(std::string_view field, Encoding encoding);

  // Reads `count` elements with `read_element(ProtocolReader&) -> T`, stopping
  // at the first error. Memory grows with the bytes actually consumed.
  template <typename T, typename ReadElement>
  std::vector<T> ReadArray(std::string_view field, Encoding encoding, ReadElement read_element) {
    return ReadElements<T>(ReadArrayCount(field, encoding), read_element);
  }
  template <typename T, typename ReadElement>
  std::optional<std::vector<T>> ReadNullableArray(std::string_view field, Encoding encoding,
                                                  ReadElement read_element) {
    std::optional<size_t> count = ReadNullableArrayCount(field, encoding);
    if (!count) return std::nullopt;
    return ReadElements<T>(*count, read_element);
  }
  std::vector<int32_t> ReadInt32Array(std::string_view field, Encoding encoding);
  std::vector<std::string> ReadStringArray(std::string_view field, Encoding encoding);

  // Tagged-field section (flexible versions): count, then (tag, size, bytes).
  // Every entry is returned as a view; unknown tags are simply ignored by
  // callers. SkipTaggedFields is the common "we know no tags here" case.
  std::vector<TaggedField> ReadTaggedFields(std::string_view field);
  void SkipTaggedFields(std::string_view field);

  // Records `message` for `field` at byte `position` unless an error is
  // already recorded. Codecs use it for semantic checks (e.g. version).
  void FailAt(size_t position, std::string_view field, std::string_view message);

 private:
  template <typename T, typename ReadElement>
  std::vector<T> ReadElements(size_t count, ReadElement& read_element) {
    std::vector<T> out;
    for (size_t i = 0; i < count && ok(); ++i) out.push_back(read_element(*this));
    if (!ok()) out.clear();
    return out;
  }
  // True when `n` more bytes exist; otherwise records a truncation error for
  // the field that started at `start`.
  bool Need(size_t start, std::string_view field, size_t n);
  // Length prefix of a string/bytes/array: -1 for null, else >= 0. Records an
  // error (and returns -2) for negative or oversized lengths.
  int64_t ReadLength(std::string_view field, Encoding encoding, int width, bool nullable,
                     size_t min_element_size);
  ByteSpan Take(size_t n);

  ByteSpan data_;
  size_t base_ = 0;  // position of data_[0] in the outermost reader's span
  size_t pos_ = 0;
  Status status_;
};

}  // namespace daruma
