#include "protocol/protocol_reader.h"

#include <fmt/format.h>

#include <bit>
#include <limits>

#include "common/varint.h"

namespace daruma {

void ProtocolReader::FailAt(size_t position, std::string_view field, std::string_view message) {
  if (!ok()) return;
  status_ = Status::InvalidArgument(
      fmt::format("field {} at byte {}: {}", field, base_ + position, message));
}

void ProtocolReader::Absorb(const ProtocolReader& sub, std::string_view field) {
  if (!ok()) return;
  if (!sub.ok()) {
    status_ = sub.status();
    return;
  }
  if (!sub.AtEnd()) {
    status_ =
        Status::InvalidArgument(fmt::format("field {} at byte {}: {} bytes left after the field",
                                            field, sub.base_ + sub.pos_, sub.remaining()));
  }
}

bool ProtocolReader::Need(size_t start, std::string_view field, size_t n) {
  if (!ok()) return false;
  if (data_.size() - pos_ >= n) return true;
  FailAt(start, field,
         fmt::format("truncated: expected {} more bytes, found {}", n, data_.size() - pos_));
  return false;
}

ByteSpan ProtocolReader::Take(size_t n) {
  ByteSpan out = data_.subspan(pos_, n);
  pos_ += n;
  return out;
}

int8_t ProtocolReader::ReadInt8(std::string_view field) {
  if (!Need(pos_, field, 1)) return 0;
  return int8_t(Take(1)[0]);
}

int16_t ProtocolReader::ReadInt16(std::string_view field) {
  if (!Need(pos_, field, 2)) return 0;
  return int16_t(LoadBe16(Take(2).data()));
}

int32_t ProtocolReader::ReadInt32(std::string_view field) {
  if (!Need(pos_, field, 4)) return 0;
  return int32_t(LoadBe32(Take(4).data()));
}

int64_t ProtocolReader::ReadInt64(std::string_view field) {
  if (!Need(pos_, field, 8)) return 0;
  return int64_t(LoadBe64(Take(8).data()));
}

uint16_t ProtocolReader::ReadUint16(std::string_view field) {
  return uint16_t(ReadInt16(field));
}

double ProtocolReader::ReadFloat64(std::string_view field) {
  return std::bit_cast<double>(uint64_t(ReadInt64(field)));
}

uint32_t ProtocolReader::ReadUint32(std::string_view field) {
  return uint32_t(ReadInt32(field));
}

bool ProtocolReader::ReadBool(std::string_view field) {
  return ReadInt8(field) != 0;
}

uint32_t ProtocolReader::ReadUnsignedVarint(std::string_view field) {
  if (!ok()) return 0;
  uint32_t v = 0;
  size_t n = DecodeUnsignedVarint32(data_.data() + pos_, data_.data() + data_.size(), &v);
  if (n == 0) {
    FailAt(pos_, field,
           remaining() >= 5 ? "malformed varint: more than 5 bytes"
                            : "truncated varint: input ends inside the varint");
    return 0;
  }
  pos_ += n;
  return v;
}

int32_t ProtocolReader::ReadVarint(std::string_view field) {
  return ZigZagDecode32(ReadUnsignedVarint(field));
}

int64_t ProtocolReader::ReadVarlong(std::string_view field) {
  if (!ok()) return 0;
  uint64_t v = 0;
  size_t n = DecodeUnsignedVarint64(data_.data() + pos_, data_.data() + data_.size(), &v);
  if (n == 0) {
    FailAt(pos_, field,
           remaining() >= 10 ? "malformed varlong: more than 10 bytes"
                             : "truncated varlong: input ends inside the varlong");
    return 0;
  }
  pos_ += n;
  return ZigZagDecode64(v);
}

WireUuid ProtocolReader::ReadUuid(std::string_view field) {
  WireUuid out{};
  if (!Need(pos_, field, out.size())) return out;
  ByteSpan b = Take(out.size());
  std::copy(b.begin(), b.end(), out.begin());
  return out;
}

// Reads a length prefix: classic int16/int32 (`width` 2 or 4) with -1 = null,
// or compact unsigned varint N+1 with 0 = null. Validates that the declared
// payload (length * min_element_size bytes) fits in the remaining input.
int64_t ProtocolReader::ReadLength(std::string_view field, Encoding encoding, int width,
                                   bool nullable, size_t min_element_size) {
  if (!ok()) return -2;
  size_t start = pos_;
  int64_t length;
  if (encoding == Encoding::kCompact) {
    length = int64_t(ReadUnsignedVarint(field)) - 1;
  } else {
    length = width == 2 ? ReadInt16(field) : ReadInt32(field);
  }
  if (!ok()) return -2;
  if (length == -1 && nullable) return -1;
  if (length < 0) {
    FailAt(start, field,
           length == -1 ? "expected a non-null value, found null"
                        : fmt::format("expected a length >= -1, found {}", length));
    return -2;
  }
  if (uint64_t(length) * min_element_size > remaining()) {
    FailAt(start, field,
           fmt::format("length {} exceeds the {} remaining bytes", length, remaining()));
    return -2;
  }
  return length;
}

std::optional<std::string> ProtocolReader::ReadNullableString(std::string_view field,
                                                              Encoding encoding) {
  int64_t n = ReadLength(field, encoding, 2, /*nullable=*/true, 1);
  if (n < 0) return std::nullopt;
  ByteSpan b = Take(size_t(n));
  return std::string(AsStringView(b));
}

std::string ProtocolReader::ReadString(std::string_view field, Encoding encoding) {
  int64_t n = ReadLength(field, encoding, 2, /*nullable=*/false, 1);
  if (n < 0) return {};
  return std::string(AsStringView(Take(size_t(n))));
}

std::optional<ByteSpan> ProtocolReader::ReadNullableBytes(std::string_view field,
                                                          Encoding encoding) {
  int64_t n = ReadLength(field, encoding, 4, /*nullable=*/true, 1);
  if (n < 0) return std::nullopt;
  return Take(size_t(n));
}

ByteSpan ProtocolReader::ReadBytes(std::string_view field, Encoding encoding) {
  int64_t n = ReadLength(field, encoding, 4, /*nullable=*/false, 1);
  if (n < 0) return {};
  return Take(size_t(n));
}

size_t ProtocolReader::ReadArrayCount(std::string_view field, Encoding encoding) {
  int64_t n = ReadLength(field, encoding, 4, /*nullable=*/false, 1);
  return n < 0 ? 0 : size_t(n);
}

std::optional<size_t> ProtocolReader::ReadNullableArrayCount(std::string_view field,
                                                             Encoding encoding) {
  int64_t n = ReadLength(field, encoding, 4, /*nullable=*/true, 1);
  if (n == -1) return std::nullopt;
  return n < 0 ? 0 : size_t(n);
}

std::vector<int32_t> ProtocolReader::ReadInt32Array(std::string_view field, Encoding encoding) {
  int64_t n = ReadLength(field, encoding, 4, /*nullable=*/false, 4);
  std::vector<int32_t> out;
  if (n <= 0) return out;
  out.reserve(size_t(n));  // bounded: n * 4 <= remaining()
  for (int64_t i = 0; i < n; ++i) out.push_back(int32_t(LoadBe32(Take(4).data())));
  return out;
}

std::vector<std::string> ProtocolReader::ReadStringArray(std::string_view field,
                                                         Encoding encoding) {
  return ReadArray<std::string>(field, encoding,
                                [&](ProtocolReader& r) { return r.ReadString(field, encoding); });
}

std::vector<TaggedField> ProtocolReader::ReadTaggedFields(std::string_view field) {
  std::vector<TaggedField> out;
  size_t start = pos_;
  uint32_t count = ReadUnsignedVarint(field);
  if (ok() && count > remaining()) {
    FailAt(start, field,
           fmt::format("tagged-field count {} exceeds the {} remaining bytes", count, remaining()));
  }
  for (uint32_t i = 0; i < count && ok(); ++i) {
    TaggedField f;
    f.tag = ReadUnsignedVarint(field);
    size_t size_pos = pos_;
    uint32_t size = ReadUnsignedVarint(field);
    if (!ok()) break;
    if (size > remaining()) {
      FailAt(
          size_pos, field,
          fmt::format("tag {} size {} exceeds the {} remaining bytes", f.tag, size, remaining()));
      break;
    }
    f.data = Take(size);
    out.push_back(f);
  }
  if (!ok()) out.clear();
  return out;
}

void ProtocolReader::SkipTaggedFields(std::string_view field) {
  (void)ReadTaggedFields(field);
}

}  // namespace daruma
