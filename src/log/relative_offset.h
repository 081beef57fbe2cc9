// Whether `offset` can be stored relative to `base_offset` as the indexes and
// segment files do (an int32 in [0, 2^31 - 1]): Kafka's
// LogSegment.canConvertToRelativeOffset. Offsets may be damaged (baseOffset is
// outside the batch CRC), so the difference is taken in unsigned arithmetic
// only once the order is known: it cannot overflow.
#pragma once

#include <cstdint>
#include <limits>

namespace daruma {

inline bool FitsRelativeOffset(int64_t base_offset, int64_t offset) {
  return offset >= base_offset &&
         uint64_t(offset) - uint64_t(base_offset) <= uint64_t(std::numeric_limits<int32_t>::max());
}

// Whether a batch spanning offsets [first, last] leaves a next offset below
// 2^63: not when its (CRC-uncovered) offsets run backwards or end at
// Long.MAX_VALUE, where Kafka's arithmetic would wrap.
inline bool HasNextOffset(int64_t first, int64_t last) {
  return first <= last && last < std::numeric_limits<int64_t>::max();
}

}  // namespace daruma
