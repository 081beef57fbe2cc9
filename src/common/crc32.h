// CRC-32 (IEEE, as zlib computes it) for legacy v0/v1 messages (spec §3).
#pragma once

#include <cstddef>
#include <cstdint>

namespace daruma {

uint32_t Crc32(const void* data, size_t n);

}  // namespace daruma
