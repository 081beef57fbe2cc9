#include "broker/frame_pool.h"

#include <algorithm>
#include <utility>

namespace daruma::broker {

FramePool& FramePool::Default() {
  static FramePool* pool = new FramePool();  // never destroyed: used until exit
  return *pool;
}

std::vector<uint8_t> FramePool::TakeLargest(size_t size) {
  std::vector<uint8_t> buffer;
  if (size >= kMinBytes) {
    std::lock_guard<std::mutex> lock(mu_);
    // The largest buffer: the one whose resize writes least.
    auto largest =
        std::max_element(buffers_.begin(), buffers_.end(),
                         [](const auto& a, const auto& b) { return a.size() < b.size(); });
    if (largest != buffers_.end()) {
      buffer = std::move(*largest);
      buffers_.erase(largest);
      bytes_ -= buffer.capacity();
    }
  }
  return buffer;
}

std::vector<uint8_t> FramePool::Take(size_t size) {
  std::vector<uint8_t> buffer = TakeLargest(size);
  buffer.resize(size);
  return buffer;
}

std::vector<uint8_t> FramePool::TakeWindow(size_t size, size_t first_window) {
  std::vector<uint8_t> buffer = TakeLargest(size);
  buffer.resize(std::min(size, std::max(first_window, buffer.size())));
  return buffer;
}

void FramePool::Give(std::vector<uint8_t> buffer) {
  if (buffer.size() < kMinBytes) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes_ + buffer.capacity() > kMaxBytes) return;
  bytes_ += buffer.capacity();
  buffers_.push_back(std::move(buffer));
}

size_t FramePool::pooled_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace daruma::broker
