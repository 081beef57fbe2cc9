#include "tools/dump_message_reader.h"

#include <fmt/format.h>

#include <array>
#include <cstring>

#include "common/varint.h"
#include "log/uuid.h"

namespace daruma::tools {

Status MessageReader::Need(size_t n, const char* field) const {
  if (remaining() >= n) return Status::Ok();
  return Status::Corruption(fmt::format("field {} at byte {}: expected {} more bytes, found {}",
                                        field, pos_, n, remaining()));
}

Result<int8_t> MessageReader::Int8(const char* field) {
  DARUMA_RETURN_IF_ERROR(Need(1, field));
  return int8_t(data_[pos_++]);
}

Result<int16_t> MessageReader::Int16(const char* field) {
  DARUMA_RETURN_IF_ERROR(Need(2, field));
  int16_t v = int16_t(LoadBe16(reinterpret_cast<const uint8_t*>(data_.data() + pos_)));
  pos_ += 2;
  return v;
}

Result<int32_t> MessageReader::Int32(const char* field) {
  DARUMA_RETURN_IF_ERROR(Need(4, field));
  int32_t v = int32_t(LoadBe32(reinterpret_cast<const uint8_t*>(data_.data() + pos_)));
  pos_ += 4;
  return v;
}

Result<int64_t> MessageReader::Int64(const char* field) {
  DARUMA_RETURN_IF_ERROR(Need(8, field));
  int64_t v = int64_t(LoadBe64(reinterpret_cast<const uint8_t*>(data_.data() + pos_)));
  pos_ += 8;
  return v;
}

Result<uint32_t> MessageReader::UnsignedVarint(const char* field) {
  const auto* begin = reinterpret_cast<const uint8_t*>(data_.data());
  uint32_t v = 0;
  size_t n = DecodeUnsignedVarint32(begin + pos_, begin + data_.size(), &v);
  if (n == 0) {
    return Status::Corruption(
        fmt::format("field {} at byte {}: expected an unsigned varint", field, pos_));
  }
  pos_ += n;
  return v;
}

Result<std::string> MessageReader::Uuid(const char* field) {
  DARUMA_RETURN_IF_ERROR(Need(16, field));
  std::array<uint8_t, 16> bytes{};
  std::memcpy(bytes.data(), data_.data() + pos_, bytes.size());
  pos_ += bytes.size();
  return daruma::Uuid(bytes).ToString();
}

Result<std::string_view> MessageReader::Raw(size_t n, const char* field) {
  DARUMA_RETURN_IF_ERROR(Need(n, field));
  std::string_view out = data_.substr(pos_, n);
  pos_ += n;
  return out;
}

Result<std::optional<std::string>> MessageReader::Blob(int64_t length, const char* field) {
  if (length < 0) return std::optional<std::string>();
  DARUMA_RETURN_IF_ERROR(Need(size_t(length), field));
  std::string out(data_.substr(pos_, size_t(length)));
  pos_ += size_t(length);
  return std::optional<std::string>(std::move(out));
}

Result<std::optional<std::string>> MessageReader::NullableString(const char* field) {
  int64_t length;
  if (flexible_) {
    DARUMA_ASSIGN_OR_RETURN(uint32_t n, UnsignedVarint(field));
    length = int64_t(n) - 1;
  } else {
    DARUMA_ASSIGN_OR_RETURN(int16_t n, Int16(field));
    length = n;
  }
  return Blob(length, field);
}

Result<std::string> MessageReader::String(const char* field) {
  const size_t at = pos_;
  DARUMA_ASSIGN_OR_RETURN(auto s, NullableString(field));
  if (!s) {
    return Status::Corruption(
        fmt::format("field {} at byte {}: expected a non-null string, found null", field, at));
  }
  return std::move(*s);
}

Result<std::optional<std::string>> MessageReader::NullableBytes(const char* field) {
  int64_t length;
  if (flexible_) {
    DARUMA_ASSIGN_OR_RETURN(uint32_t n, UnsignedVarint(field));
    length = int64_t(n) - 1;
  } else {
    DARUMA_ASSIGN_OR_RETURN(int32_t n, Int32(field));
    length = n;
  }
  return Blob(length, field);
}

Result<int32_t> MessageReader::ArrayLength(const char* field) {
  if (!flexible_) return Int32(field);
  DARUMA_ASSIGN_OR_RETURN(uint32_t n, UnsignedVarint(field));
  return int32_t(int64_t(n) - 1);
}

Status MessageReader::SkipTaggedFields(const char* field) {
  if (!flexible_) return Status::Ok();
  DARUMA_ASSIGN_OR_RETURN(uint32_t count, UnsignedVarint(field));
  for (uint32_t i = 0; i < count; ++i) {
    DARUMA_RETURN_IF_ERROR(UnsignedVarint(field).status());
    DARUMA_ASSIGN_OR_RETURN(uint32_t size, UnsignedVarint(field));
    DARUMA_RETURN_IF_ERROR(Need(size, field));
    pos_ += size;
  }
  return Status::Ok();
}

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 |
                 uint8_t(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(v >> shift) & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (rest == 2) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace daruma::tools
