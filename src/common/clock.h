// Clock: an injectable source of time, so expiry, retention and rolling are
// deterministic in tests.
#pragma once

#include <atomic>
#include <cstdint>

namespace daruma {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowMs() const = 0;
  // Monotonic nanoseconds, for measuring durations.
  virtual int64_t NowNanos() const = 0;
  static Clock* System();
};

// A clock that only moves when told to.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t now_ms = 0) : now_ms_(now_ms) {}
  int64_t NowMs() const override { return now_ms_.load(); }
  int64_t NowNanos() const override { return now_ms_.load() * 1000000; }
  void Set(int64_t ms) { now_ms_.store(ms); }
  void Advance(int64_t ms) { now_ms_.fetch_add(ms); }

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace daruma
