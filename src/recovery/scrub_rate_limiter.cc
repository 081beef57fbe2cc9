#include "recovery/scrub_rate_limiter.h"

#include <algorithm>

namespace daruma {

ScrubRateLimiter::ScrubRateLimiter(Clock* clock, int64_t bytes_per_second, int64_t burst_bytes,
                                   Sleep sleep)
    : clock_(clock),
      rate_(std::max<int64_t>(bytes_per_second, 1)),
      burst_(std::max<int64_t>(burst_bytes, 1)),
      sleep_(std::move(sleep)),
      tokens_(burst_),
      last_nanos_(clock->NowNanos()) {}

void ScrubRateLimiter::Refill() {
  const int64_t now = clock_->NowNanos();
  const int64_t elapsed = std::max<int64_t>(now - last_nanos_, 0);
  // Whole bytes only; the remainder of the interval stays unconsumed (last_
  // moves by the time those bytes took), so no rate is lost to rounding.
  const __int128 earned = __int128(elapsed) * rate_ / 1000000000;
  if (earned <= 0) return;
  const __int128 used_nanos = earned * 1000000000 / rate_;
  last_nanos_ += int64_t(used_nanos);
  tokens_ = int64_t(std::min<__int128>(__int128(tokens_) + earned, burst_));
  if (tokens_ == burst_) last_nanos_ = now;  // a full bucket earns nothing more
}

bool ScrubRateLimiter::Admit(int64_t bytes) {
  Refill();
  tokens_ -= bytes;
  admitted_ += bytes;
  while (tokens_ < 0) {
    // Round up: waking early would only loop once more.
    const int64_t ms = std::max<int64_t>(1, (-tokens_ * 1000 + rate_ - 1) / rate_);
    throttled_ms_ += ms;
    if (!sleep_(ms)) return false;
    Refill();
  }
  return true;
}

}  // namespace daruma
