// FramePool: request frame buffers recycled between the network threads
// (which read frames into them) and the request threads (which give them back
// once a request is handled), so a steady stream of large produce requests
// neither allocates nor zero-fills a buffer per request: std::vector::resize
// to a size the buffer already had (or less) writes nothing.
//
// Contract: Take(n) returns a buffer of exactly n bytes with unspecified
// contents. TakeWindow(n, first) is for a frame read as its bytes arrive: the
// buffer holds min(n, max(first, a pooled buffer's size)) bytes, so a pooled
// buffer is used whole (its memory is resident already) while a fresh one
// starts small and the reader grows it. Only frames of at least kMinBytes are pooled (small
// requests allocate as before, and never shrink a large pooled buffer); at most kMaxBytes are kept
// in total, beyond that Give() frees. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace daruma::broker {

class FramePool {
 public:
  static constexpr size_t kMinBytes = 64 << 10;
  static constexpr size_t kMaxBytes = 64 << 20;

  // The process-wide pool (connections and the request handler share it).
  static FramePool& Default();

  std::vector<uint8_t> Take(size_t size);
  std::vector<uint8_t> TakeWindow(size_t size, size_t first_window);
  void Give(std::vector<uint8_t> buffer);

  size_t pooled_bytes() const;

 private:
  // The largest pooled buffer (empty when none) when size >= kMinBytes.
  std::vector<uint8_t> TakeLargest(size_t size);

  mutable std::mutex mu_;
  std::vector<std::vector<uint8_t>> buffers_;
  size_t bytes_ = 0;  // sum of the pooled buffers' capacities
};

}  // namespace daruma::broker
