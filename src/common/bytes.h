// Big-endian loads/stores and a bounds-checked reader/writer.
//
// Kafka stores every fixed-width integer big-endian (spec §0). ByteReader never
// reads past its span: each Read* returns false (and leaves the reader
// "failed") instead of touching memory it does not own, so a hostile length
// field can never cause an out-of-bounds access.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace daruma {

using ByteSpan = std::span<const uint8_t>;
using Bytes = std::vector<uint8_t>;

inline uint16_t LoadBe16(const uint8_t* p) {
  return uint16_t(p[0]) << 8 | p[1];
}
inline uint32_t LoadBe32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return __builtin_bswap32(v);
}
inline uint64_t LoadBe64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}
inline void StoreBe16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
inline void StoreBe32(uint8_t* p, uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}
inline void StoreBe64(uint8_t* p, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}
inline uint32_t LoadLe32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline ByteSpan AsBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
inline std::string_view AsStringView(ByteSpan s) {
  return {reinterpret_cast<const char*>(s.data()), s.size()};
}

// Sequential bounds-checked reader. After the first failed read, every later
// read fails too, so callers may check ok() once at the end of a block.
class ByteReader {
 public:
  explicit ByteReader(ByteSpan data) : data_(data) {}

  size_t position() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  bool ok() const { return ok_; }
  bool AtEnd() const { return pos_ == data_.size(); }

  bool ReadInt8(int8_t* v);
  bool ReadInt16(int16_t* v);
  bool ReadInt32(int32_t* v);
  bool ReadInt64(int64_t* v);
  bool ReadUint32(uint32_t* v);
  // Zig-zag varint/varlong (spec §1.2). Fails on overlong encodings.
  bool ReadVarint(int32_t* v);
  bool ReadVarlong(int64_t* v);
  bool ReadUnsignedVarint(uint32_t* v);
  // Returns a view of the next n bytes (valid as long as the underlying data).
  bool ReadBytes(size_t n, ByteSpan* out);
  bool Skip(size_t n);

 private:
  bool Need(size_t n) {
    if (!ok_ || remaining() < n) {
      ok_ = false;
      return false;
    }
    return true;
  }
  ByteSpan data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Appends big-endian integers and varints to a byte vector.
class ByteWriter {
 public:
  explicit ByteWriter(Bytes* out) : out_(out) {}
  void WriteInt8(int8_t v) { out_->push_back(uint8_t(v)); }
  void WriteInt16(int16_t v);
  void WriteInt32(int32_t v);
  void WriteInt64(int64_t v);
  void WriteUint32(uint32_t v) { WriteInt32(int32_t(v)); }
  void WriteVarint(int32_t v);
  void WriteVarlong(int64_t v);
  void WriteUnsignedVarint(uint32_t v);
  void WriteBytes(ByteSpan b) { out_->insert(out_->end(), b.begin(), b.end()); }
  size_t size() const { return out_->size(); }

 private:
  Bytes* out_;
};

}  // namespace daruma
