// ProtocolWriter: appends Kafka wire-protocol primitives to an owned buffer
// (spec kafka-protocol-subset.md §1.2–1.3); the mirror of ProtocolReader.
//
// Contract: writes never fail. Callers respect the format's limits (classic
// strings <= 32767 bytes, arrays and bytes <= INT32_MAX); violating them is a
// programming error caught by assert. The finished buffer is taken with
// Release() and is exactly the bytes written (no frame size prefix).
// SpliceFile() inserts a file range at the current position instead of its
// bytes (response_frame.h); a writer with splices is taken with
// ReleaseFrame(), never Release().
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "protocol/protocol_reader.h"
#include "protocol/response_frame.h"

namespace daruma {

class ProtocolWriter {
 public:
  ProtocolWriter() = default;

  void WriteInt8(int8_t v) { out_.push_back(uint8_t(v)); }
  void WriteInt16(int16_t v);
  void WriteInt32(int32_t v);
  void WriteInt64(int64_t v);
  void WriteUint16(uint16_t v) { WriteInt16(int16_t(v)); }
  void WriteUint32(uint32_t v) { WriteInt32(int32_t(v)); }
  void WriteFloat64(double v) { WriteInt64(int64_t(std::bit_cast<uint64_t>(v))); }
  void WriteBool(bool v) { out_.push_back(v ? 1 : 0); }
  void WriteVarint(int32_t v);
  void WriteVarlong(int64_t v);
  void WriteUnsignedVarint(uint32_t v);
  void WriteUuid(const WireUuid& v) { WriteRaw(v); }

  void WriteString(std::string_view s, Encoding encoding);
  void WriteNullableString(const std::optional<std::string>& s, Encoding encoding);
  void WriteBytes(ByteSpan b, Encoding encoding);
  void WriteNullableBytes(std::optional<ByteSpan> b, Encoding encoding);

  void WriteArrayCount(size_t count, Encoding encoding);
  void WriteNullArray(Encoding encoding);
  template <typename T, typename WriteElement>
  void WriteArray(const std::vector<T>& items, Encoding encoding, WriteElement write_element) {
    WriteArrayCount(items.size(), encoding);
    for (const T& item : items) write_element(item, *this);
  }
  // nullopt is written as a null array.
  template <typename T, typename WriteElement>
  void WriteNullableArray(const std::optional<std::vector<T>>& items, Encoding encoding,
                          WriteElement write_element) {
    if (!items) return WriteNullArray(encoding);
    WriteArray(*items, encoding, write_element);
  }
  void WriteInt32Array(const std::vector<int32_t>& items, Encoding encoding);
  void WriteStringArray(const std::vector<std::string>& items, Encoding encoding);

  // An empty tagged-field section: the single byte 0x00.
  void WriteEmptyTaggedFields() { out_.push_back(0); }
  // Entries must be sorted by strictly ascending tag (§1.2).
  void WriteTaggedFields(std::span<const TaggedField> fields);

  void WriteRaw(ByteSpan b) { out_.insert(out_.end(), b.begin(), b.end()); }
  // The slice's bytes go here on the wire; only its length is counted now.
  void SpliceFile(FileSlice slice);
  void Reserve(size_t n) { out_.reserve(n); }
  // Bytes written inline (spliced file ranges excluded).
  size_t size() const { return out_.size(); }
  const Bytes& bytes() const { return out_; }
  Bytes Release();
  ResponseFrame ReleaseFrame();

 private:
  Bytes out_;
  std::vector<ResponseFrame::Splice> splices_;
};

}  // namespace daruma
