#include "log/offset_map.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace daruma {

SkimpyOffsetMap::SkimpyOffsetMap(int64_t memory_bytes)
    : slots_(std::max<int64_t>(1, memory_bytes / kBytesPerEntry)),
      bytes_(size_t(slots_ * kBytesPerEntry), 0) {}

size_t SkimpyOffsetMap::PositionOf(const Md5Digest& digest, int attempt) const {
  const size_t at = size_t(std::min(attempt, int(digest.size()) - 4));
  const uint32_t word = LoadBe32(digest.data() + at);
  // Java int arithmetic: wraps, then Utils.abs (MIN_VALUE -> 0).
  const int32_t probe = int32_t(word + uint32_t(std::max(0, attempt - int(digest.size()) + 4)));
  const int64_t positive = probe == INT32_MIN ? 0 : (probe < 0 ? -int64_t(probe) : probe);
  return size_t(positive % slots_) * size_t(kBytesPerEntry);
}

bool SkimpyOffsetMap::IsEmpty(size_t pos) const {
  static constexpr uint8_t kZero[16] = {};
  return std::memcmp(bytes_.data() + pos, kZero, sizeof(kZero)) == 0;
}

void SkimpyOffsetMap::Put(ByteSpan key, int64_t offset) {
  assert(entries_ < slots_ && "Put into a full offset map");
  const Md5Digest digest = Md5(key.data(), key.size());
  int attempt = 0;
  size_t pos = PositionOf(digest, attempt);
  while (!IsEmpty(pos)) {
    if (std::memcmp(bytes_.data() + pos, digest.data(), digest.size()) == 0) {
      StoreBe64(bytes_.data() + pos + digest.size(), uint64_t(offset));
      latest_offset_ = offset;
      return;
    }
    pos = PositionOf(digest, ++attempt);
  }
  std::memcpy(bytes_.data() + pos, digest.data(), digest.size());
  StoreBe64(bytes_.data() + pos + digest.size(), uint64_t(offset));
  latest_offset_ = offset;
  ++entries_;
}

int64_t SkimpyOffsetMap::Get(ByteSpan key) const {
  const Md5Digest digest = Md5(key.data(), key.size());
  // Bounded like Kafka's loop: the map is never full, so an empty slot ends it.
  for (int attempt = 0; attempt <= slots_ + int(digest.size()); ++attempt) {
    const size_t pos = PositionOf(digest, attempt);
    if (IsEmpty(pos)) return -1;
    if (std::memcmp(bytes_.data() + pos, digest.data(), digest.size()) == 0) {
      return int64_t(LoadBe64(bytes_.data() + pos + digest.size()));
    }
  }
  return -1;
}

void SkimpyOffsetMap::Clear() {
  std::fill(bytes_.begin(), bytes_.end(), uint8_t{0});
  entries_ = 0;
  latest_offset_ = -1;
}

}  // namespace daruma
