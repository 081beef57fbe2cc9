// SkimpyOffsetMap and MD5: digests against RFC 1321 vectors, then the map's
// put/get/overwrite/clear semantics, probing under heavy load, and the
// latest-offset bookkeeping the cleaner relies on.
#include "log/offset_map.h"

#include <gtest/gtest.h>

#include <string>

#include "log/md5.h"

namespace daruma {
namespace {

std::string Hex(const Md5Digest& d) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::string Md5Hex(const std::string& s) {
  return Hex(Md5(s.data(), s.size()));
}

TEST(Md5Test, Rfc1321Vectors) {
  EXPECT_EQ(Md5Hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(Md5Hex("a"), "0cc175b9c0f1b6a831c399e269772661");
  EXPECT_EQ(Md5Hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(Md5Hex("message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
  EXPECT_EQ(Md5Hex("abcdefghijklmnopqrstuvwxyz"), "c3fcd3d76192e4007dfb496cca67e13b");
  EXPECT_EQ(Md5Hex("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"),
            "d174ab98d277d9f5a5611c2c9f419d9f");
  EXPECT_EQ(Md5Hex("1234567890123456789012345678901234567890123456789012345678901234567890123456"
                   "7890"),
            "57edf4a22be3c955ac49da2e2107b67a");
}

TEST(Md5Test, PaddingBoundaries) {
  // 55, 56 and 64 bytes: the length field fits, just misses, or needs a block.
  EXPECT_EQ(Md5Hex(std::string(55, 'a')), "ef1772b6dff9a122358552954ad0df65");
  EXPECT_EQ(Md5Hex(std::string(56, 'a')), "3b0c8ac703f828b04c6c197006d17218");
  EXPECT_EQ(Md5Hex(std::string(64, 'a')), "014842d480b571495a4a0363793f7367");
}

ByteSpan Key(const std::string& s) {
  return AsBytes(s);
}

TEST(SkimpyOffsetMapTest, SlotsFromMemory) {
  SkimpyOffsetMap map(24 * 100 + 23);
  EXPECT_EQ(map.slots(), 100);
  EXPECT_EQ(map.MaxDesiredSize(0.9), 90);
  EXPECT_EQ(map.size(), 0);
  EXPECT_EQ(map.latest_offset(), -1);
}

TEST(SkimpyOffsetMapTest, PutGetAndOverwrite) {
  SkimpyOffsetMap map(24 * 64);
  map.Put(Key("a"), 5);
  map.Put(Key("b"), 6);
  EXPECT_EQ(map.Get(Key("a")), 5);
  EXPECT_EQ(map.Get(Key("b")), 6);
  EXPECT_EQ(map.Get(Key("c")), -1);
  EXPECT_EQ(map.size(), 2);
  map.Put(Key("a"), 9);  // same key: overwritten, size unchanged
  EXPECT_EQ(map.Get(Key("a")), 9);
  EXPECT_EQ(map.size(), 2);
  EXPECT_EQ(map.latest_offset(), 9);
  EXPECT_DOUBLE_EQ(map.Utilization(), 2.0 / 64.0);
}

TEST(SkimpyOffsetMapTest, EmptyKeyIsAKey) {
  SkimpyOffsetMap map(24 * 8);
  map.Put(Key(""), 3);
  EXPECT_EQ(map.Get(Key("")), 3);
}

TEST(SkimpyOffsetMapTest, ProbingKeepsEveryKeyNearlyFull) {
  // 1000 slots filled to 90 %: many collisions on the first probe word.
  SkimpyOffsetMap map(24 * 1000);
  for (int i = 0; i < 900; ++i) map.Put(Key("key-" + std::to_string(i)), i * 10);
  EXPECT_EQ(map.size(), 900);
  for (int i = 0; i < 900; ++i) {
    ASSERT_EQ(map.Get(Key("key-" + std::to_string(i))), i * 10) << i;
  }
  EXPECT_EQ(map.Get(Key("key-900")), -1);
}

TEST(SkimpyOffsetMapTest, ClearForgetsEverything) {
  SkimpyOffsetMap map(24 * 16);
  map.Put(Key("x"), 1);
  map.Clear();
  EXPECT_EQ(map.size(), 0);
  EXPECT_EQ(map.Get(Key("x")), -1);
  EXPECT_EQ(map.latest_offset(), -1);
}

TEST(SkimpyOffsetMapTest, UpdateLatestOffsetWithoutPut) {
  SkimpyOffsetMap map(24 * 16);
  map.Put(Key("x"), 4);
  map.UpdateLatestOffset(11);  // a batch ending at 11 without keyed records
  EXPECT_EQ(map.latest_offset(), 11);
  EXPECT_EQ(map.Get(Key("x")), 4);
}

}  // namespace
}  // namespace daruma
