#include "common/varint.h"

#include <gtest/gtest.h>

#include <limits>

#include "common/bytes.h"

namespace daruma {
namespace {

Bytes EncodeVarint(int32_t v) {
  Bytes out;
  ByteWriter(&out).WriteVarint(v);
  return out;
}

TEST(VarintTest, SpecExamples) {
  EXPECT_EQ(EncodeVarint(0), Bytes({0x00}));
  EXPECT_EQ(EncodeVarint(-1), Bytes({0x01}));
  EXPECT_EQ(EncodeVarint(1), Bytes({0x02}));
  EXPECT_EQ(EncodeVarint(-2), Bytes({0x03}));
  EXPECT_EQ(EncodeVarint(63), Bytes({0x7E}));
  EXPECT_EQ(EncodeVarint(-64), Bytes({0x7F}));
  EXPECT_EQ(EncodeVarint(64), Bytes({0x80, 0x01}));
}

TEST(VarintTest, RoundTripsExtremes) {
  for (int32_t v : {0, 1, -1, 300, -300, std::numeric_limits<int32_t>::max(),
                    std::numeric_limits<int32_t>::min()}) {
    Bytes b = EncodeVarint(v);
    EXPECT_EQ(b.size(), VarintSize(v));
    ByteReader r(b);
    int32_t out;
    ASSERT_TRUE(r.ReadVarint(&out));
    EXPECT_EQ(out, v);
    EXPECT_TRUE(r.AtEnd());
  }
  for (int64_t v : {int64_t(0), int64_t(-1), int64_t(1) << 40, std::numeric_limits<int64_t>::max(),
                    std::numeric_limits<int64_t>::min()}) {
    Bytes b;
    ByteWriter(&b).WriteVarlong(v);
    EXPECT_EQ(b.size(), VarlongSize(v));
    ByteReader r(b);
    int64_t out;
    ASSERT_TRUE(r.ReadVarlong(&out));
    EXPECT_EQ(out, v);
  }
}

TEST(VarintTest, RejectsFiveByteVarintWithContinuationBit) {
  Bytes b = {0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  ByteReader r(b);
  int32_t out;
  EXPECT_FALSE(r.ReadVarint(&out));
  EXPECT_FALSE(r.ok());
}

TEST(VarintTest, RejectsVarlongLongerThanTenBytes) {
  Bytes b(11, 0x80);
  ByteReader r(b);
  int64_t out;
  EXPECT_FALSE(r.ReadVarlong(&out));
}

TEST(VarintTest, TruncatedInputFails) {
  Bytes b = {0x80};
  ByteReader r(b);
  int32_t out;
  EXPECT_FALSE(r.ReadVarint(&out));
}

TEST(ByteReaderTest, BoundsCheckedAndSticky) {
  Bytes b = {0, 0, 0, 5, 1};
  ByteReader r(b);
  int32_t v;
  ASSERT_TRUE(r.ReadInt32(&v));
  EXPECT_EQ(v, 5);
  int64_t w;
  EXPECT_FALSE(r.ReadInt64(&w));
  int8_t x;
  EXPECT_FALSE(r.ReadInt8(&x)) << "a failed reader stays failed";
}

}  // namespace
}  // namespace daruma
