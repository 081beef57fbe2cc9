#include "common/varint.h"

namespace daruma {

size_t DecodeUnsignedVarint32(const uint8_t* p, const uint8_t* end, uint32_t* out) {
  uint32_t value = 0;
  for (size_t i = 0; i < 5; ++i) {
    if (p + i >= end) return 0;
    uint8_t b = p[i];
    value |= uint32_t(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      *out = value;
      return i + 1;
    }
  }
  return 0;  // 5th byte had the continuation bit: illegal varint
}

size_t DecodeUnsignedVarint64(const uint8_t* p, const uint8_t* end, uint64_t* out) {
  uint64_t value = 0;
  for (size_t i = 0; i < 10; ++i) {
    if (p + i >= end) return 0;
    uint8_t b = p[i];
    value |= uint64_t(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      *out = value;
      return i + 1;
    }
  }
  return 0;
}

size_t EncodeUnsignedVarint32(uint32_t v, uint8_t* buf) {
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = uint8_t(v) | 0x80;
    v >>= 7;
  }
  buf[n++] = uint8_t(v);
  return n;
}

size_t EncodeUnsignedVarint64(uint64_t v, uint8_t* buf) {
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = uint8_t(v) | 0x80;
    v >>= 7;
  }
  buf[n++] = uint8_t(v);
  return n;
}

}  // namespace daruma
