// FramePool: large buffers come back (same storage, no zero fill of bytes it
// already had), small ones are never pooled, and the pool is bounded.
#include "broker/frame_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace daruma::broker {
namespace {

TEST(FramePool, LargeBuffersAreReusedWithTheirContents) {
  FramePool pool;
  std::vector<uint8_t> a = pool.Take(1 << 20);
  ASSERT_EQ(a.size(), 1u << 20);
  a[100] = 7;
  const uint8_t* storage = a.data();
  pool.Give(std::move(a));
  EXPECT_EQ(pool.pooled_bytes(), 1u << 20);
  std::vector<uint8_t> b = pool.Take((1 << 20) - 10);
  EXPECT_EQ(b.data(), storage);
  EXPECT_EQ(b.size(), (1u << 20) - 10);
  EXPECT_EQ(b[100], 7) << "a shrinking resize writes nothing";
  EXPECT_EQ(pool.pooled_bytes(), 0u);
}

TEST(FramePool, SmallFramesAreNeitherTakenFromNorGivenToThePool) {
  FramePool pool;
  pool.Give(std::vector<uint8_t>(FramePool::kMinBytes));
  const size_t pooled = pool.pooled_bytes();
  EXPECT_GE(pooled, FramePool::kMinBytes);
  std::vector<uint8_t> small = pool.Take(100);
  EXPECT_EQ(small.size(), 100u);
  EXPECT_EQ(pool.pooled_bytes(), pooled) << "a small frame must not shrink a pooled buffer";
  pool.Give(std::move(small));
  EXPECT_EQ(pool.pooled_bytes(), pooled);
}

TEST(FramePool, AWindowStartsSmallUnlessAPooledBufferIsThere) {
  FramePool pool;
  EXPECT_EQ(pool.TakeWindow(100 << 20, 64 << 10).size(), 64u << 10) << "fresh: the first window";
  EXPECT_EQ(pool.TakeWindow(1000, 64 << 10).size(), 1000u) << "never beyond the frame";
  pool.Give(std::vector<uint8_t>(4 << 20));
  EXPECT_EQ(pool.TakeWindow(100 << 20, 64 << 10).size(), 4u << 20) << "pooled: used whole";
  pool.Give(std::vector<uint8_t>(4 << 20));
  EXPECT_EQ(pool.TakeWindow(1 << 20, 64 << 10).size(), 1u << 20);
}

TEST(FramePool, KeepsAtMostMaxBytes) {
  FramePool pool;
  const size_t each = 16 << 20;
  for (size_t i = 0; i < FramePool::kMaxBytes / each + 2; ++i) {
    pool.Give(std::vector<uint8_t>(each));
  }
  EXPECT_LE(pool.pooled_bytes(), FramePool::kMaxBytes);
  EXPECT_GE(pool.pooled_bytes(), FramePool::kMaxBytes - each);
}

}  // namespace
}  // namespace daruma::broker
