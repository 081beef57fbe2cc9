// ScrubRateLimiter: the token bucket that bounds how fast a scrub reads
// (daruma.scrub.bytes.per.second), so a scrub of terabytes of old segments
// never competes with produce and fetch for the disk.
//
// Tokens are bytes. They accrue at `bytes_per_second` on the injected Clock,
// up to `burst_bytes` (so a scrub that was idle between passes does not read
// a pass's worth at once). Admit(n) takes n tokens, letting the balance go
// negative (a chunk may be larger than the burst), and then waits until the
// balance is back at zero: over any run, bytes admitted <= burst +
// rate x elapsed time. The wait goes through `sleep`, which production makes
// an interruptible wait (the scrubber's stop) and tests make a ManualClock
// advance, so rate tests never sleep on real time.
//
// Not thread-safe: one scrub thread uses it.
#pragma once

#include <cstdint>
#include <functional>

#include "common/clock.h"

namespace daruma {

class ScrubRateLimiter {
 public:
  // Waits `ms` milliseconds; false when the scrub must stop instead.
  using Sleep = std::function<bool(int64_t ms)>;

  // bytes_per_second and burst_bytes >= 1.
  ScrubRateLimiter(Clock* clock, int64_t bytes_per_second, int64_t burst_bytes, Sleep sleep);

  // Blocks until `bytes` may be read. False when `sleep` said stop (the bytes
  // are then still charged).
  bool Admit(int64_t bytes);

  int64_t bytes_per_second() const { return rate_; }
  // Total milliseconds asked of `sleep` (for tests and /metrics).
  int64_t throttled_ms() const { return throttled_ms_; }
  // Total bytes admitted.
  int64_t admitted_bytes() const { return admitted_; }

 private:
  void Refill();

  Clock* clock_;
  int64_t rate_;
  int64_t burst_;
  Sleep sleep_;
  int64_t tokens_;  // may be negative: a debt paid by waiting
  int64_t last_nanos_;
  int64_t throttled_ms_ = 0;
  int64_t admitted_ = 0;
};

}  // namespace daruma
