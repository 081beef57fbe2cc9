#include "log/producer_snapshot_order.h"

#include <algorithm>
#include <tuple>

namespace daruma {

uint32_t JavaHashMapBucket(int64_t key, size_t capacity) {
  const uint64_t v = uint64_t(key);
  const uint32_t h = uint32_t(v ^ (v >> 32));
  const uint32_t spread = h ^ (h >> 16);
  return spread & uint32_t(capacity - 1);
}

size_t JavaHashMapCapacity(size_t max_size) {
  size_t capacity = 16;
  while (max_size > capacity / 4 * 3) capacity *= 2;
  return capacity;
}

std::vector<int64_t> JavaHashMapIterationOrder(std::vector<InsertedKey> keys, size_t capacity) {
  std::sort(keys.begin(), keys.end(), [capacity](const InsertedKey& a, const InsertedKey& b) {
    return std::make_tuple(JavaHashMapBucket(a.key, capacity), a.insertion_seq) <
           std::make_tuple(JavaHashMapBucket(b.key, capacity), b.insertion_seq);
  });
  std::vector<int64_t> order;
  order.reserve(keys.size());
  for (const InsertedKey& k : keys) order.push_back(k.key);
  return order;
}

}  // namespace daruma
