// Throttler: limits the cleaner's I/O rate to `log.cleaner.io.max.bytes.per.second`
// (Kafka's Throttler). Callers report bytes read and written; once at least
// `check_interval_ms` has elapsed since the last check, a caller whose
// observed rate is above the target sleeps long enough to bring it back down.
//
// Thread-safe: all cleaner threads share one throttler, so the limit is for
// the whole cleaner, as in Kafka.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "common/clock.h"

namespace daruma {

class Throttler {
 public:
  // `clock` measures elapsed time (NowNanos); sleeping uses the real clock.
  Throttler(double desired_bytes_per_second, int64_t check_interval_ms, Clock* clock);

  // Sleeps while the rate is above the target; a sleep ends early, within
  // kAbortPollMs, once `abort` (if given) is set. The sleeper holds the
  // throttler (as Kafka's synchronized one), so with several cleaner
  // threads an aborted caller may first wait for another's sleep.
  void MaybeThrottle(double observed_bytes, const std::atomic<bool>* abort = nullptr);
  static constexpr int64_t kAbortPollMs = 20;
  // Total time slept, for stats and tests.
  int64_t total_sleep_ms() const;

 private:
  const double desired_rate_;
  const int64_t check_interval_ns_;
  Clock* clock_;
  mutable std::mutex mu_;
  int64_t period_start_ns_;
  double observed_so_far_ = 0;
  int64_t total_sleep_ms_ = 0;
};

}  // namespace daruma
