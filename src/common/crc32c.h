// CRC-32C (Castagnoli), as used by v2 record batches and producer snapshots
// (spec §1.1). On x86-64 with SSE4.2 the hardware `crc32` instruction runs on
// three interleaved streams whose partial CRCs are merged with precomputed
// shift tables, or, with PCLMULQDQ too, by carry-less multiplication, which
// lets the streams split any length in three (a 1 KiB batch included);
// elsewhere a slicing-by-8 table loop is used. The choice is made once at
// start-up.
#pragma once

#include <cstddef>
#include <cstdint>

namespace daruma {

// Standard CRC-32C of [data, data+n): init 0xFFFFFFFF, final xor 0xFFFFFFFF.
uint32_t Crc32c(const void* data, size_t n);

// Continues a CRC: Crc32cExtend(Crc32c(a), b) == Crc32c(a || b).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);

namespace crc32c_internal {
// Exposed for tests and benchmarks: each implementation on its own.
uint32_t ExtendPortable(uint32_t crc, const uint8_t* data, size_t n);
uint32_t ExtendHardwareSingleStream(uint32_t crc, const uint8_t* data, size_t n);
uint32_t ExtendHardwareInterleaved(uint32_t crc, const uint8_t* data, size_t n);
// Three streams of n/3 bytes merged by carry-less multiplication (PCLMULQDQ).
uint32_t ExtendHardwareClmul(uint32_t crc, const uint8_t* data, size_t n);
bool HardwareAvailable();
bool ClmulAvailable();
const char* ImplementationName();
}  // namespace crc32c_internal

}  // namespace daruma
