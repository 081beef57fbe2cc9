#include "common/xxhash32.h"

#include <cstring>

namespace daruma {
namespace {

constexpr uint32_t kPrime1 = 0x9E3779B1u;
constexpr uint32_t kPrime2 = 0x85EBCA77u;
constexpr uint32_t kPrime3 = 0xC2B2AE3Du;
constexpr uint32_t kPrime4 = 0x27D4EB2Fu;
constexpr uint32_t kPrime5 = 0x165667B1u;

inline uint32_t Rotl(uint32_t v, int r) {
  return (v << r) | (v >> (32 - r));
}

// Lanes are little-endian by definition of the algorithm.
inline uint32_t ReadLane(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

inline uint32_t Round(uint32_t acc, uint32_t lane) {
  return Rotl(acc + lane * kPrime2, 13) * kPrime1;
}

// Consumes whole 16-byte stripes with four accumulators; returns their merge.
uint32_t ConsumeStripes(const uint8_t* p, size_t stripes, uint32_t seed) {
  uint32_t v1 = seed + kPrime1 + kPrime2;
  uint32_t v2 = seed + kPrime2;
  uint32_t v3 = seed;
  uint32_t v4 = seed - kPrime1;
  for (size_t i = 0; i < stripes; ++i, p += 16) {
    v1 = Round(v1, ReadLane(p));
    v2 = Round(v2, ReadLane(p + 4));
    v3 = Round(v3, ReadLane(p + 8));
    v4 = Round(v4, ReadLane(p + 12));
  }
  return Rotl(v1, 1) + Rotl(v2, 7) + Rotl(v3, 12) + Rotl(v4, 18);
}

uint32_t Avalanche(uint32_t h) {
  h ^= h >> 15;
  h *= kPrime2;
  h ^= h >> 13;
  h *= kPrime3;
  h ^= h >> 16;
  return h;
}

}  // namespace

uint32_t XxHash32(const void* data, size_t n, uint32_t seed) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  const size_t stripes = n / 16;
  uint32_t h = stripes > 0 ? ConsumeStripes(p, stripes, seed) : seed + kPrime5;
  p += stripes * 16;
  size_t rest = n - stripes * 16;
  // The length is mixed in modulo 2^32, as in the reference implementation.
  h += uint32_t(n);
  for (; rest >= 4; rest -= 4, p += 4) {
    h = Rotl(h + ReadLane(p) * kPrime3, 17) * kPrime4;
  }
  for (; rest > 0; --rest, ++p) {
    h = Rotl(h + uint32_t(*p) * kPrime5, 11) * kPrime1;
  }
  return Avalanche(h);
}

}  // namespace daruma
