// XXH32 (xxHash, 32-bit), as used by the LZ4 frame format for its header
// checksum and optional block checksums (spec §1.1, §4.3).
//
// Contract: XxHash32(data, n, seed) is the reference xxHash32 of the n bytes at
// `data`, reading lanes little-endian regardless of host byte order. Pure and
// thread-safe; `data` may be null when n == 0.
#pragma once

#include <cstddef>
#include <cstdint>

namespace daruma {

uint32_t XxHash32(const void* data, size_t n, uint32_t seed = 0);

}  // namespace daruma
