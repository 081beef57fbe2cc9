// segment.jitter.ms: each segment draws its own roll jitter (Kafka's
// randomSegmentJitter), bounded by min(segment.jitter.ms, segment.ms).
#include <gtest/gtest.h>

#include <set>

#include "log/log_segment.h"

namespace daruma {
namespace {

TEST(SegmentJitterTest, ZeroWhenJitterIsOff) {
  LogConfig config;
  config.segment_jitter_ms = 0;
  for (int i = 0; i < 100; ++i) EXPECT_EQ(RandomSegmentJitterMs(config), 0);
}

TEST(SegmentJitterTest, DrawnBelowTheSmallerOfJitterAndSegmentMs) {
  LogConfig config;
  config.segment_jitter_ms = 10000;
  config.segment_ms = 50;
  std::set<int64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    const int64_t jitter = RandomSegmentJitterMs(config);
    ASSERT_GE(jitter, 0);
    ASSERT_LT(jitter, 50);
    seen.insert(jitter);
  }
  // 2,000 uniform draws over 50 values miss one with probability ~1e-16.
  EXPECT_EQ(seen.size(), 50u);
}

}  // namespace
}  // namespace daruma
