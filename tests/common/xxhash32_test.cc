#include "common/xxhash32.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace daruma {
namespace {

uint32_t Hash(std::string_view s, uint32_t seed = 0) {
  return XxHash32(s.data(), s.size(), seed);
}

TEST(XxHash32Test, EmptyInput) {
  EXPECT_EQ(Hash(""), 0x02CC5D05u);
  EXPECT_EQ(XxHash32(nullptr, 0), 0x02CC5D05u);
}

TEST(XxHash32Test, ShortInputsUseTheTailPath) {
  EXPECT_EQ(Hash("a"), 0x550D7456u);
  EXPECT_EQ(Hash("abc"), 0x32D153FFu);
}

// 39 bytes: two full stripes, one 4-byte lane and three tail bytes
// (python-xxhash's documented example).
TEST(XxHash32Test, LongInputUsesStripes) {
  EXPECT_EQ(Hash("Nobody inspects the spammish repetition"), 0xE2293B2Fu);
}

// The LZ4 frame header checksum byte Kafka writes for FLG=0x60, BD=0x40 is
// 0x82 (seen in Kafka-written frames): (XXH32(60 40) >> 8) & 0xFF.
TEST(XxHash32Test, Lz4DescriptorOfKafkaFrames) {
  const uint8_t desc[] = {0x60, 0x40};
  EXPECT_EQ((XxHash32(desc, 2) >> 8) & 0xFF, 0x82u);
}

TEST(XxHash32Test, SeedChangesTheHash) {
  EXPECT_NE(Hash("abc", 1), Hash("abc", 0));
  EXPECT_EQ(Hash("abc", 1), Hash("abc", 1));
}

TEST(XxHash32Test, EveryByteMatters) {
  std::string base(100, 'x');
  const uint32_t h = Hash(base);
  for (size_t i = 0; i < base.size(); ++i) {
    std::string changed = base;
    changed[i] = 'y';
    EXPECT_NE(Hash(changed), h) << "position " << i;
  }
}

}  // namespace
}  // namespace daruma
