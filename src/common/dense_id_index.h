// DenseIdIndex: numbers non-negative 64-bit ids (producer ids) 0, 1, 2, ... in
// the order they are first seen, so that per-id state can live in plain
// vectors indexed by that number.
//
// Why not std::unordered_map<int64_t, State>: libstdc++'s lookup loads the
// bucket, then the node *before* the bucket's first node, then the node: three
// dependent loads, the last two into nodes scattered over the heap. With
// 10,000 producers none of them is in cache, and in recovery's scan of
// ~100-byte batches those loads were 70 % of the scan's time (perf,
// producers_10k, 2026-12-05). Here the ids sit in one flat array probed
// linearly: one load, usually one cache line, and the per-id state, kept
// separately by the caller, is as compact as the caller makes it.
//
// Invariants: slots_.size() is a power of two (or 0) and at most 3/4 full;
// an empty slot holds kEmpty; the indices are exactly 0 .. size() - 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace daruma {

class DenseIdIndex {
 public:
  // The number of `id` (>= 0), giving it the next free one, size() before
  // the call, when it is new; `*inserted` says whether it was.
  uint32_t FindOrInsert(int64_t id, bool* inserted) {
    if ((size_ + 1) * 4 > slots_.size() * 3) Grow();
    for (size_t at = Home(id);; at = (at + 1) & mask_) {
      Slot& slot = slots_[at];
      if (slot.id == id) {
        *inserted = false;
        return slot.index;
      }
      if (slot.id == kEmpty) {
        slot = {id, uint32_t(size_++)};
        *inserted = true;
        return slot.index;
      }
    }
  }

  // Starts loading the slot FindOrInsert(id) looks at first.
  void Prefetch(int64_t id) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[Home(id)]);
  }

  size_t size() const { return size_; }

 private:
  static constexpr int64_t kEmpty = -1;
  struct Slot {
    int64_t id = kEmpty;
    uint32_t index = 0;
  };

  // Fibonacci hashing: consecutive ids (a broker hands producer ids out in
  // blocks) land far apart, and the top bits are the well-mixed ones.
  size_t Home(int64_t id) const { return size_t((uint64_t(id) * 0x9E3779B97F4A7C15ull) >> shift_); }

  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    const size_t capacity = old.empty() ? 64 : old.size() * 2;
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) shift_--;
    for (const Slot& slot : old) {
      if (slot.id == kEmpty) continue;
      size_t at = Home(slot.id);
      while (slots_[at].id != kEmpty) at = (at + 1) & mask_;
      slots_[at] = slot;
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace daruma
