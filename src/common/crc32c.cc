// CRC-32C implementation notes.
//
// All internal functions work on the "raw" register value (no pre/post
// inversion). The raw update f(s, D) is affine in s:
//     f(s, D) = f(s, 0^|D|) xor f(0, D)
// and f(s, 0^L) is linear in s, so "shift the register over L zero bytes" is a
// 32x32 GF(2) matrix, stored here as four 256-entry byte tables. Three streams
// over adjacent blocks A, B, C of length L each are merged as
//     f(s, A||B||C) = shift_L(shift_L(f(s,A)) xor f(0,B)) xor f(0,C).
//
// With PCLMULQDQ the shift is a multiplication instead: shift_L(s) is
// s * x^(8L) mod P, and one carry-less multiply by K_L = x^(8L-33) mod P
// followed by a `crc32` of the 64-bit product reduces to exactly that (the
// product of two bit-reflected 32-bit values lands one bit low, hence 33,
// and `crc32` from a zero register multiplies its operand by x^32 mod P).
// One constant per L (8 bytes each) instead of 4 KiB of tables lets the
// three streams take L = n/3 for any n, so a ~1 KiB batch runs entirely on
// three streams instead of 768 bytes on three and the rest on one.
#include "common/crc32c.h"

#include <array>
#include <cstring>
#include <string>

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <wmmintrin.h>
#endif

namespace daruma {
namespace crc32c_internal {
namespace {

constexpr uint32_t kPoly = 0x82F63B78;  // reflected 0x1EDC6F41

struct PortableTables {
  uint32_t t[8][256];
  PortableTables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};

const PortableTables& Tables() {
  static const PortableTables tables;
  return tables;
}

uint32_t RawPortable(uint32_t c, const uint8_t* p, size_t n) {
  const auto& t = Tables().t;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    uint32_t lo = uint32_t(w) ^ c;
    uint32_t hi = uint32_t(w >> 32);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
        t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
  return c;
}

// Shift-by-L-zero-bytes operator as four byte tables.
struct ShiftTable {
  uint32_t t[4][256];
  explicit ShiftTable(size_t len) {
    // Column j = f(1 << j, 0^len), computed with the portable code.
    std::array<uint32_t, 32> col{};
    std::string zeros(len, '\0');
    for (int j = 0; j < 32; ++j) {
      col[j] = RawPortable(uint32_t(1) << j, reinterpret_cast<const uint8_t*>(zeros.data()), len);
    }
    for (int i = 0; i < 4; ++i) {
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t v = 0;
        for (int k = 0; k < 8; ++k) {
          if (b & (1u << k)) v ^= col[i * 8 + k];
        }
        t[i][b] = v;
      }
    }
  }
  uint32_t Apply(uint32_t c) const {
    return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
  }
};

// Block lengths of the interleaved loop: a long one for bulk data and a short
// one so that buffers of a few hundred bytes still use three streams.
constexpr size_t kLongBlock = 4096;
constexpr size_t kShortBlock = 256;

const ShiftTable& LongShift() {
  static const ShiftTable table(kLongBlock);
  return table;
}
const ShiftTable& ShortShift() {
  static const ShiftTable table(kShortBlock);
  return table;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t RawHwSingle(uint32_t c, const uint8_t* p, size_t n) {
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c64 = _mm_crc32_u64(c64, w);
    p += 8;
    n -= 8;
  }
  c = uint32_t(c64);
  // The tail in at most three steps, not up to seven byte steps: each waits
  // 3 cycles for the last, and a recovery scan of 100-byte batches runs this
  // once per batch.
  if (n >= 4) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    c = _mm_crc32_u32(c, w);
    p += 4;
    n -= 4;
  }
  if (n >= 2) {
    uint16_t w;
    std::memcpy(&w, p, 2);
    c = _mm_crc32_u16(c, w);
    p += 2;
    n -= 2;
  }
  if (n > 0) c = _mm_crc32_u8(c, *p);
  return c;
}

// Raw CRCs of three adjacent blocks of `len` bytes (len a multiple of 8):
// the first continues register c, the others start from zero. Three
// independent streams hide the 3-cycle latency of `crc32`.
struct StreamCrcs {
  uint32_t first, second, third;
};
__attribute__((target("sse4.2"))) inline StreamCrcs ThreeStreams(uint32_t c, const uint8_t* p,
                                                                 size_t len) {
  uint64_t c0 = c, c1 = 0, c2 = 0;
  const uint8_t* p1 = p + len;
  const uint8_t* p2 = p + 2 * len;
  for (size_t i = 0; i < len; i += 8) {
    uint64_t w0, w1, w2;
    std::memcpy(&w0, p + i, 8);
    std::memcpy(&w1, p1 + i, 8);
    std::memcpy(&w2, p2 + i, 8);
    c0 = _mm_crc32_u64(c0, w0);
    c1 = _mm_crc32_u64(c1, w1);
    c2 = _mm_crc32_u64(c2, w2);
  }
  return {uint32_t(c0), uint32_t(c1), uint32_t(c2)};
}

template <size_t kBlock>
__attribute__((target("sse4.2"))) inline uint32_t RawHwTriple(uint32_t c, const uint8_t* p,
                                                              const ShiftTable& shift) {
  const StreamCrcs s = ThreeStreams(c, p, kBlock);
  return shift.Apply(shift.Apply(s.first) ^ s.second) ^ s.third;
}

// Consumes the whole groups of three long blocks at *p, advancing *p and *n.
__attribute__((target("sse4.2"))) inline uint32_t RawHwLongBlocks(uint32_t c, const uint8_t** p,
                                                                  size_t* n) {
  const ShiftTable& long_shift = LongShift();
  while (*n >= 3 * kLongBlock) {
    c = RawHwTriple<kLongBlock>(c, *p, long_shift);
    *p += 3 * kLongBlock;
    *n -= 3 * kLongBlock;
  }
  return c;
}

__attribute__((target("sse4.2"))) uint32_t RawHwInterleaved(uint32_t c, const uint8_t* p,
                                                            size_t n) {
  c = RawHwLongBlocks(c, &p, &n);
  const ShiftTable& short_shift = ShortShift();
  while (n >= 3 * kShortBlock) {
    c = RawHwTriple<kShortBlock>(c, p, short_shift);
    p += 3 * kShortBlock;
    n -= 3 * kShortBlock;
  }
  return RawHwSingle(c, p, n);
}

// K_L = x^(8L-33) mod P, bit-reflected like the register (bit i holds the
// coefficient of x^(31-i)), for L = 8, 16, ..., 8 * (kClmulShifts - 1): the
// shifts by L and 2L of the three streams below, L < kLongBlock.
constexpr size_t kClmulShifts = 2 * kLongBlock / 8;

struct ClmulShifts {
  uint64_t k[kClmulShifts] = {};
  ClmulShifts() {
    // Multiplying by x in the reflected form is one step of the bitwise CRC.
    auto times_x = [](uint32_t v) { return (v >> 1) ^ ((v & 1) ? kPoly : 0); };
    uint32_t v = 0x80000000u;  // x^0
    for (int i = 0; i < 8 * 8 - 33; ++i) v = times_x(v);
    for (size_t l = 1; l < kClmulShifts; ++l) {
      k[l] = v;  // x^(64l - 33)
      for (int i = 0; i < 64; ++i) v = times_x(v);
    }
  }
};

const ClmulShifts& Shifts() {
  static const ClmulShifts shifts;
  return shifts;
}

// shift_L(c) given K_L.
__attribute__((target("sse4.2,pclmul"))) inline uint32_t ShiftClmul(uint32_t c, uint64_t k) {
  const __m128i product =
      _mm_clmulepi64_si128(_mm_cvtsi32_si128(int(c)), _mm_cvtsi64_si128(int64_t(k)), 0x00);
  return uint32_t(_mm_crc32_u64(0, uint64_t(_mm_cvtsi128_si64(product))));
}

// Below this many bytes one stream is faster than three plus two merges.
constexpr size_t kMinClmulTriple = 96;

__attribute__((target("sse4.2,pclmul"))) uint32_t RawHwClmul(uint32_t c, const uint8_t* p,
                                                             size_t n) {
  if (n < kMinClmulTriple) return RawHwSingle(c, p, n);  // a small batch, say
  c = RawHwLongBlocks(c, &p, &n);
  if (n >= kMinClmulTriple) {
    // Three streams of L bytes each, L a multiple of 8 with 3L <= n < 3L + 24.
    const size_t words = n / 24;
    const size_t len = words * 8;
    const StreamCrcs s = ThreeStreams(c, p, len);
    const ClmulShifts& shifts = Shifts();
    // f(c, A||B||C) = shift_2L(f(c, A)) xor shift_L(f(0, B)) xor f(0, C).
    c = ShiftClmul(s.first, shifts.k[2 * words]) ^ ShiftClmul(s.second, shifts.k[words]) ^ s.third;
    p += 3 * len;
    n -= 3 * len;
  }
  return RawHwSingle(c, p, n);
}

bool DetectHardware() {
  return __builtin_cpu_supports("sse4.2");
}
bool DetectClmul() {
  return DetectHardware() && __builtin_cpu_supports("pclmul");
}
#else
uint32_t RawHwSingle(uint32_t c, const uint8_t* p, size_t n) {
  return RawPortable(c, p, n);
}
uint32_t RawHwInterleaved(uint32_t c, const uint8_t* p, size_t n) {
  return RawPortable(c, p, n);
}
uint32_t RawHwClmul(uint32_t c, const uint8_t* p, size_t n) {
  return RawPortable(c, p, n);
}
bool DetectHardware() {
  return false;
}
bool DetectClmul() {
  return false;
}
#endif

using RawFn = uint32_t (*)(uint32_t, const uint8_t*, size_t);

RawFn SelectImplementation() {
  if (DetectClmul()) {
    // Build the shift tables now rather than inside a hot call.
    (void)LongShift();
    (void)Shifts();
    return RawHwClmul;
  }
  if (DetectHardware()) {
    (void)LongShift();
    (void)ShortShift();
    return RawHwInterleaved;
  }
  return RawPortable;
}

RawFn Selected() {
  static const RawFn fn = SelectImplementation();
  return fn;
}

}  // namespace

uint32_t ExtendPortable(uint32_t crc, const uint8_t* data, size_t n) {
  return ~RawPortable(~crc, data, n);
}
uint32_t ExtendHardwareSingleStream(uint32_t crc, const uint8_t* data, size_t n) {
  return ~RawHwSingle(~crc, data, n);
}
uint32_t ExtendHardwareInterleaved(uint32_t crc, const uint8_t* data, size_t n) {
  return ~RawHwInterleaved(~crc, data, n);
}
uint32_t ExtendHardwareClmul(uint32_t crc, const uint8_t* data, size_t n) {
  return ~RawHwClmul(~crc, data, n);
}
bool HardwareAvailable() {
  return DetectHardware();
}
bool ClmulAvailable() {
  return DetectClmul();
}
const char* ImplementationName() {
  if (DetectClmul()) return "sse4.2-3way-pclmul-merge";
  return DetectHardware() ? "sse4.2-3way" : "portable-slicing8";
}

}  // namespace crc32c_internal

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n) {
  return ~crc32c_internal::Selected()(~crc, static_cast<const uint8_t*>(data), n);
}

uint32_t Crc32c(const void* data, size_t n) {
  return Crc32cExtend(0, data, n);
}

}  // namespace daruma
