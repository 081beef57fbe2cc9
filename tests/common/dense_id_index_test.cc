#include "common/dense_id_index.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <unordered_map>

namespace daruma {
namespace {

TEST(DenseIdIndexTest, NumbersIdsInTheOrderTheyAreFirstSeen) {
  DenseIdIndex index;
  bool inserted = false;
  EXPECT_EQ(index.FindOrInsert(1000, &inserted), 0u);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(index.FindOrInsert(0, &inserted), 1u);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(index.FindOrInsert(1000, &inserted), 0u);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(index.FindOrInsert(INT64_MAX, &inserted), 2u);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(index.FindOrInsert(0, &inserted), 1u);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(index.size(), 3u);
}

// Many ids, consecutive (as a broker allocates them) and scattered, across
// several growths: every id keeps the number it was given first.
TEST(DenseIdIndexTest, KeepsEveryNumberAcrossGrowth) {
  DenseIdIndex index;
  std::unordered_map<int64_t, uint32_t> expected;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 50000; ++i) {
    int64_t id = i;
    if (i % 2 == 1) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      id = int64_t(x >> 1);
    }
    bool inserted = false;
    const uint32_t got = index.FindOrInsert(id, &inserted);
    auto [it, is_new] = expected.try_emplace(id, uint32_t(expected.size()));
    EXPECT_EQ(inserted, is_new) << id;
    EXPECT_EQ(got, it->second) << id;
  }
  for (const auto& [id, number] : expected) {
    bool inserted = true;
    EXPECT_EQ(index.FindOrInsert(id, &inserted), number) << id;
    EXPECT_FALSE(inserted) << id;
  }
  EXPECT_EQ(index.size(), expected.size());
}

}  // namespace
}  // namespace daruma
