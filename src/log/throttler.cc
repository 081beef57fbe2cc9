#include "log/throttler.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>

namespace daruma {

Throttler::Throttler(double desired_bytes_per_second, int64_t check_interval_ms, Clock* clock)
    : desired_rate_(desired_bytes_per_second),
      check_interval_ns_(check_interval_ms * 1000000),
      clock_(clock),
      period_start_ns_(clock->NowNanos()) {}

void Throttler::MaybeThrottle(double observed_bytes, const std::atomic<bool>* abort) {
  if (desired_rate_ >= std::numeric_limits<double>::max()) return;  // unlimited
  std::unique_lock<std::mutex> lock(mu_);
  observed_so_far_ += observed_bytes;
  const int64_t now = clock_->NowNanos();
  const int64_t elapsed_ns = now - period_start_ns_;
  if (elapsed_ns <= check_interval_ns_ || observed_so_far_ <= 0) return;
  const double rate = observed_so_far_ * 1e9 / double(elapsed_ns);
  if (rate > desired_rate_) {
    // Sleep until the bytes observed this period average out to the target.
    const double needed_ms = observed_so_far_ / desired_rate_ * 1000.0;
    const int64_t sleep_ms = int64_t(needed_ms - double(elapsed_ns) / 1e6);
    // In slices, so that an aborted clean (a partition being deleted, a
    // shutdown) does not sleep out a long throttle first.
    for (int64_t left = sleep_ms; left > 0; left -= kAbortPollMs) {
      if (abort != nullptr && abort->load(std::memory_order_relaxed)) break;
      const int64_t slice = std::min(left, kAbortPollMs);
      std::this_thread::sleep_for(std::chrono::milliseconds(slice));
      total_sleep_ms_ += slice;
    }
  }
  period_start_ns_ = clock_->NowNanos();
  observed_so_far_ = 0;
}

int64_t Throttler::total_sleep_ms() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_sleep_ms_;
}

}  // namespace daruma
