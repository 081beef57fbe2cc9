// Zig-zag and unsigned LEB128 varints as Kafka encodes them (spec §1.2).
#pragma once

#include <cstddef>
#include <cstdint>

namespace daruma {

inline uint32_t ZigZagEncode32(int32_t v) {
  return (uint32_t(v) << 1) ^ uint32_t(v >> 31);
}
inline uint64_t ZigZagEncode64(int64_t v) {
  return (uint64_t(v) << 1) ^ uint64_t(v >> 63);
}
inline int32_t ZigZagDecode32(uint32_t u) {
  return int32_t((u >> 1) ^ (~(u & 1) + 1));
}
inline int64_t ZigZagDecode64(uint64_t u) {
  return int64_t((u >> 1) ^ (~(u & 1) + 1));
}

// Decodes an unsigned varint of at most 5 bytes from [p, end). Returns the
// number of bytes consumed, or 0 if the input ends early or the 5th byte still
// has its continuation bit set ("illegal varint").
size_t DecodeUnsignedVarint32(const uint8_t* p, const uint8_t* end, uint32_t* out);
// As above for up to 10 bytes.
size_t DecodeUnsignedVarint64(const uint8_t* p, const uint8_t* end, uint64_t* out);

// Encodes into buf (at least 5 / 10 bytes); returns the length written.
size_t EncodeUnsignedVarint32(uint32_t v, uint8_t* buf);
size_t EncodeUnsignedVarint64(uint64_t v, uint8_t* buf);

inline size_t VarintSize(int32_t v) {
  uint32_t u = ZigZagEncode32(v);
  size_t n = 1;
  while (u >= 0x80) {
    u >>= 7;
    ++n;
  }
  return n;
}
inline size_t VarlongSize(int64_t v) {
  uint64_t u = ZigZagEncode64(v);
  size_t n = 1;
  while (u >= 0x80) {
    u >>= 7;
    ++n;
  }
  return n;
}

}  // namespace daruma
