// The order in which Kafka writes producer snapshot entries.
//
// Kafka keeps producers in a java.util.HashMap<Long, ProducerStateEntry> and
// writes a snapshot in that map's iteration order. Reproducing the order lets
// Daruma write snapshots byte-identical to Kafka's for the same state. The
// format does not require it (spec §15.1); it only makes comparisons with
// Kafka-written directories exact.
//
// HashMap iteration visits buckets 0..capacity-1; a key's bucket is
// spread(Long.hashCode(key)) & (capacity - 1) with spread(h) = h ^ (h >>> 16)
// and Long.hashCode(v) = (int)(v ^ (v >>> 32)). Within a bucket keys appear in
// insertion order (resizing preserves it). The table starts at 16 buckets and
// doubles whenever the size exceeds 3/4 of the capacity; it never shrinks, not
// even on clear(). Not modelled: buckets of 8+ colliding keys in a table of 64+
// buckets become trees whose order depends on the tree shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace daruma {

// The bucket index of a long key in a Java HashMap of `capacity` buckets.
uint32_t JavaHashMapBucket(int64_t key, size_t capacity);

// The table capacity of a Java HashMap whose size has peaked at `max_size`.
size_t JavaHashMapCapacity(size_t max_size);

struct InsertedKey {
  int64_t key;
  uint64_t insertion_seq;  // larger = inserted later
};

// Returns the keys in the iteration order of a Java HashMap of `capacity`
// buckets into which they were inserted in insertion_seq order.
std::vector<int64_t> JavaHashMapIterationOrder(std::vector<InsertedKey> keys, size_t capacity);

}  // namespace daruma
