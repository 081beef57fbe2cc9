#include "common/crc32.h"

#include <zlib.h>

namespace daruma {

uint32_t Crc32(const void* data, size_t n) {
  // zlib takes uInt lengths; feed large inputs in pieces.
  uLong crc = crc32(0L, Z_NULL, 0);
  const Bytef* p = static_cast<const Bytef*>(data);
  while (n > 0) {
    uInt chunk = n > (1u << 30) ? (1u << 30) : uInt(n);
    crc = crc32(crc, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return uint32_t(crc);
}

}  // namespace daruma
