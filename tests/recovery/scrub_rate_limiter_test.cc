// ScrubRateLimiter (recovery/scrub_rate_limiter.h) on a ManualClock: the
// burst passes at once, then bytes are admitted at the rate, idle time
// refills at most the burst, and a stop ends the wait.
#include "recovery/scrub_rate_limiter.h"

#include <gtest/gtest.h>

namespace daruma {
namespace {

struct FakeSleep {
  ManualClock* clock;
  int64_t slept = 0;
  bool Sleep(int64_t ms) {
    clock->Advance(ms);
    slept += ms;
    return true;
  }
};

TEST(ScrubRateLimiterTest, BurstPassesAtOnce) {
  ManualClock clock;
  FakeSleep s{&clock};
  ScrubRateLimiter limiter(&clock, 1000, 500, [&](int64_t ms) { return s.Sleep(ms); });
  EXPECT_TRUE(limiter.Admit(500));
  EXPECT_EQ(s.slept, 0);
}

TEST(ScrubRateLimiterTest, BeyondTheBurstBytesFlowAtTheRate) {
  ManualClock clock;
  FakeSleep s{&clock};
  ScrubRateLimiter limiter(&clock, 1000, 100, [&](int64_t ms) { return s.Sleep(ms); });
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(limiter.Admit(250));  // 5,000 bytes
  // 100 bytes of burst, then 4,900 bytes at 1,000 B/s.
  EXPECT_GE(clock.NowMs(), 4900);
  EXPECT_LE(clock.NowMs(), 4900 + 250);
  EXPECT_EQ(limiter.throttled_ms(), s.slept);
}

TEST(ScrubRateLimiterTest, IdleTimeRefillsOnlyTheBurst) {
  ManualClock clock;
  FakeSleep s{&clock};
  ScrubRateLimiter limiter(&clock, 1000, 100, [&](int64_t ms) { return s.Sleep(ms); });
  ASSERT_TRUE(limiter.Admit(100));
  clock.Advance(60000);  // a minute idle: still only 100 bytes banked
  s.slept = 0;
  ASSERT_TRUE(limiter.Admit(1100));
  EXPECT_GE(s.slept, 1000);
}

TEST(ScrubRateLimiterTest, ChunkLargerThanTheBurstIsAdmittedAfterItsTime) {
  ManualClock clock;
  FakeSleep s{&clock};
  ScrubRateLimiter limiter(&clock, 1 << 20, 1, [&](int64_t ms) { return s.Sleep(ms); });
  ASSERT_TRUE(limiter.Admit(8 << 20));  // 8 MiB at 1 MiB/s
  EXPECT_GE(s.slept, 7999);
  EXPECT_LE(s.slept, 8001);
}

TEST(ScrubRateLimiterTest, StopEndsTheWait) {
  ManualClock clock;
  ScrubRateLimiter limiter(&clock, 10, 1, [](int64_t) { return false; });
  EXPECT_FALSE(limiter.Admit(1000));
}

}  // namespace
}  // namespace daruma
