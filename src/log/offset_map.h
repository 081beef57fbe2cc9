// SkimpyOffsetMap: the log cleaner's key -> latest offset map (Kafka's
// SkimpyOffsetMap, spec §11.6).
//
// Layout: one flat array of `slots` entries of 24 bytes, each the 16-byte MD5
// digest of a record key followed by the 8-byte offset. An all-zero digest
// marks an empty slot. Open addressing: attempt i probes the big-endian int
// at digest byte min(i, 12), plus max(0, i - 12), modulo `slots` (Kafka's
// positionOf), so two keys collide only if their MD5 digests are equal.
//
// Contract: Put requires size() < slots() (the cleaner stops at
// MaxDesiredSize(), slots x io.buffer.load.factor, well before). Keys are
// hashed, never stored, so Get may report an offset for a different key only
// on an MD5 collision (as in Kafka). Not thread-safe: each cleaner thread owns
// its map.
#pragma once

#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "log/md5.h"

namespace daruma {

class SkimpyOffsetMap {
 public:
  static constexpr int64_t kBytesPerEntry = 24;  // 16-byte digest + 8-byte offset

  // A map using `memory_bytes` of memory (floor(memory / 24) slots, at least 1).
  explicit SkimpyOffsetMap(int64_t memory_bytes);
  SkimpyOffsetMap(const SkimpyOffsetMap&) = delete;
  SkimpyOffsetMap& operator=(const SkimpyOffsetMap&) = delete;

  // Records `offset` as the latest offset of `key` and as latest_offset().
  void Put(ByteSpan key, int64_t offset);
  // The offset stored for `key`, or -1.
  int64_t Get(ByteSpan key) const;
  // Forgets every entry; latest_offset() becomes -1.
  void Clear();

  // The last offset the map covers: set by Put and UpdateLatestOffset.
  int64_t latest_offset() const { return latest_offset_; }
  void UpdateLatestOffset(int64_t offset) { latest_offset_ = offset; }

  int64_t slots() const { return slots_; }
  int64_t size() const { return entries_; }
  double Utilization() const { return double(entries_) / double(slots_); }
  // The fill limit for a load factor (Kafka: slots * io.buffer.load.factor).
  int64_t MaxDesiredSize(double load_factor) const { return int64_t(double(slots_) * load_factor); }

 private:
  // Byte position of the slot probed by `attempt` for `digest`.
  size_t PositionOf(const Md5Digest& digest, int attempt) const;
  bool IsEmpty(size_t pos) const;

  int64_t slots_;
  std::vector<uint8_t> bytes_;
  int64_t entries_ = 0;
  int64_t latest_offset_ = -1;
};

}  // namespace daruma
