// ProtocolReader / ProtocolWriter: every primitive of spec §1.2–1.3, its edge
// values and exact bytes, and how the reader reports malformed input.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "protocol/protocol_reader.h"
#include "protocol/protocol_writer.h"
#include "protocol_test_util.h"

namespace daruma {
namespace {

using testing::Hex;

TEST(ProtocolPrimitivesTest, FixedWidthIntegersAreBigEndian) {
  ProtocolWriter w;
  w.WriteInt8(-2);
  w.WriteInt16(0x0102);
  w.WriteInt32(-2);
  w.WriteInt64(0x0102030405060708);
  w.WriteUint32(0xfffffffe);
  w.WriteBool(true);
  w.WriteBool(false);
  EXPECT_EQ(w.bytes(), Hex("fe 0102 fffffffe 0102030405060708 fffffffe 01 00"));

  ProtocolReader r(w.bytes());
  EXPECT_EQ(r.ReadInt8("a"), -2);
  EXPECT_EQ(r.ReadInt16("b"), 0x0102);
  EXPECT_EQ(r.ReadInt32("c"), -2);
  EXPECT_EQ(r.ReadInt64("d"), 0x0102030405060708);
  EXPECT_EQ(r.ReadUint32("e"), 0xfffffffeu);
  EXPECT_TRUE(r.ReadBool("f"));
  EXPECT_FALSE(r.ReadBool("g"));
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.AtEnd());
}

TEST(ProtocolPrimitivesTest, AnyNonZeroByteIsTrue) {
  Bytes b = Hex("02 ff");
  ProtocolReader r(b);
  EXPECT_TRUE(r.ReadBool("x"));
  EXPECT_TRUE(r.ReadBool("y"));
}

struct UnsignedVarintCase {
  uint32_t value;
  const char* hex;
};

TEST(ProtocolPrimitivesTest, UnsignedVarintEdgeValues) {
  const UnsignedVarintCase cases[] = {
      {0, "00"},
      {1, "01"},
      {127, "7f"},
      {128, "80 01"},
      {16383, "ff 7f"},
      {16384, "80 80 01"},
      {2097151, "ff ff 7f"},
      {2097152, "80 80 80 01"},
      {268435455, "ff ff ff 7f"},
      {268435456, "80 80 80 80 01"},
      {0xffffffff, "ff ff ff ff 0f"},
  };
  for (const auto& c : cases) {
    ProtocolWriter w;
    w.WriteUnsignedVarint(c.value);
    EXPECT_EQ(w.bytes(), Hex(c.hex)) << c.value;
    ProtocolReader r(w.bytes());
    EXPECT_EQ(r.ReadUnsignedVarint("v"), c.value);
    EXPECT_TRUE(r.ok() && r.AtEnd()) << c.value;
  }
}

TEST(ProtocolPrimitivesTest, ZigZagVarintEdgeValues) {
  const std::pair<int32_t, const char*> cases[] = {
      {0, "00"},
      {-1, "01"},
      {1, "02"},
      {-2, "03"},
      {63, "7e"},
      {-64, "7f"},
      {64, "80 01"},
      {std::numeric_limits<int32_t>::max(), "fe ff ff ff 0f"},
      {std::numeric_limits<int32_t>::min(), "ff ff ff ff 0f"},
  };
  for (const auto& [value, hex] : cases) {
    ProtocolWriter w;
    w.WriteVarint(value);
    EXPECT_EQ(w.bytes(), Hex(hex)) << value;
    ProtocolReader r(w.bytes());
    EXPECT_EQ(r.ReadVarint("v"), value);
    EXPECT_TRUE(r.ok() && r.AtEnd());
  }
}

TEST(ProtocolPrimitivesTest, ZigZagVarlongEdgeValues) {
  const std::pair<int64_t, const char*> cases[] = {
      {0, "00"},
      {-1, "01"},
      {1, "02"},
      {std::numeric_limits<int64_t>::max(), "fe ff ff ff ff ff ff ff ff 01"},
      {std::numeric_limits<int64_t>::min(), "ff ff ff ff ff ff ff ff ff 01"},
  };
  for (const auto& [value, hex] : cases) {
    ProtocolWriter w;
    w.WriteVarlong(value);
    EXPECT_EQ(w.bytes(), Hex(hex)) << value;
    ProtocolReader r(w.bytes());
    EXPECT_EQ(r.ReadVarlong("v"), value);
    EXPECT_TRUE(r.ok() && r.AtEnd());
  }
}

TEST(ProtocolPrimitivesTest, OverlongVarintIsRejectedWithPosition) {
  Bytes b = Hex("00 80 80 80 80 80 01");
  ProtocolReader r(b);
  r.ReadInt8("lead");
  EXPECT_EQ(r.ReadUnsignedVarint("Count"), 0u);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "field Count at byte 1: malformed varint: more than 5 bytes");
}

TEST(ProtocolPrimitivesTest, TruncatedVarintIsRejected) {
  Bytes b = Hex("80 80");
  ProtocolReader r(b);
  r.ReadUnsignedVarint("Len");
  EXPECT_EQ(r.status().message(),
            "field Len at byte 0: truncated varint: input ends inside the varint");
}

TEST(ProtocolPrimitivesTest, ClassicAndCompactStrings) {
  ProtocolWriter w;
  w.WriteString("abc", Encoding::kClassic);
  w.WriteString("abc", Encoding::kCompact);
  w.WriteString("", Encoding::kClassic);
  w.WriteString("", Encoding::kCompact);
  w.WriteNullableString(std::nullopt, Encoding::kClassic);
  w.WriteNullableString(std::nullopt, Encoding::kCompact);
  w.WriteNullableString(std::string("x"), Encoding::kCompact);
  EXPECT_EQ(w.bytes(), Hex("0003 616263  04 616263  0000  01  ffff  00  02 78"));

  ProtocolReader r(w.bytes());
  EXPECT_EQ(r.ReadString("a", Encoding::kClassic), "abc");
  EXPECT_EQ(r.ReadString("b", Encoding::kCompact), "abc");
  EXPECT_EQ(r.ReadNullableString("c", Encoding::kClassic), std::optional<std::string>(""));
  EXPECT_EQ(r.ReadNullableString("d", Encoding::kCompact), std::optional<std::string>(""));
  EXPECT_EQ(r.ReadNullableString("e", Encoding::kClassic), std::nullopt);
  EXPECT_EQ(r.ReadNullableString("f", Encoding::kCompact), std::nullopt);
  EXPECT_EQ(r.ReadNullableString("g", Encoding::kCompact), std::optional<std::string>("x"));
  EXPECT_TRUE(r.ok() && r.AtEnd());
}

TEST(ProtocolPrimitivesTest, NullForNonNullableStringNamesField) {
  Bytes b = Hex("00 ffff");
  ProtocolReader r(b);
  r.ReadInt8("lead");
  EXPECT_EQ(r.ReadString("Topics.Name", Encoding::kClassic), "");
  EXPECT_EQ(r.status().message(),
            "field Topics.Name at byte 1: expected a non-null value, found null");
}

TEST(ProtocolPrimitivesTest, ClassicAndCompactBytesKeepNullDistinctFromEmpty) {
  const Bytes payload = Hex("de ad");
  ProtocolWriter w;
  w.WriteBytes(payload, Encoding::kClassic);
  w.WriteBytes(payload, Encoding::kCompact);
  w.WriteNullableBytes(std::nullopt, Encoding::kClassic);
  w.WriteNullableBytes(std::nullopt, Encoding::kCompact);
  w.WriteNullableBytes(ByteSpan(), Encoding::kClassic);
  w.WriteNullableBytes(ByteSpan(), Encoding::kCompact);
  EXPECT_EQ(w.bytes(), Hex("00000002 dead  03 dead  ffffffff  00  00000000  01"));

  ProtocolReader r(w.bytes());
  ByteSpan a = r.ReadBytes("a", Encoding::kClassic);
  EXPECT_EQ(Bytes(a.begin(), a.end()), payload);
  // Views point into the reader's buffer, not into copies.
  EXPECT_EQ(a.data(), w.bytes().data() + 4);
  ByteSpan b = r.ReadBytes("b", Encoding::kCompact);
  EXPECT_EQ(Bytes(b.begin(), b.end()), payload);
  EXPECT_FALSE(r.ReadNullableBytes("c", Encoding::kClassic).has_value());
  EXPECT_FALSE(r.ReadNullableBytes("d", Encoding::kCompact).has_value());
  std::optional<ByteSpan> e = r.ReadNullableBytes("e", Encoding::kClassic);
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->empty());
  std::optional<ByteSpan> f = r.ReadNullableBytes("f", Encoding::kCompact);
  ASSERT_TRUE(f.has_value());
  EXPECT_TRUE(f->empty());
  EXPECT_TRUE(r.ok() && r.AtEnd());
}

TEST(ProtocolPrimitivesTest, ArraysClassicCompactAndNull) {
  ProtocolWriter w;
  w.WriteInt32Array({1, -1}, Encoding::kClassic);
  w.WriteInt32Array({7}, Encoding::kCompact);
  w.WriteNullArray(Encoding::kClassic);
  w.WriteNullArray(Encoding::kCompact);
  w.WriteStringArray({"a", "bc"}, Encoding::kCompact);
  EXPECT_EQ(w.bytes(),
            Hex("00000002 00000001 ffffffff  02 00000007  ffffffff  00  03 02 61 03 6263"));

  ProtocolReader r(w.bytes());
  EXPECT_EQ(r.ReadInt32Array("a", Encoding::kClassic), (std::vector<int32_t>{1, -1}));
  EXPECT_EQ(r.ReadInt32Array("b", Encoding::kCompact), (std::vector<int32_t>{7}));
  EXPECT_EQ(r.ReadNullableArrayCount("c", Encoding::kClassic), std::nullopt);
  EXPECT_EQ(r.ReadNullableArrayCount("d", Encoding::kCompact), std::nullopt);
  EXPECT_EQ(r.ReadStringArray("e", Encoding::kCompact), (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(r.ok() && r.AtEnd());
}

TEST(ProtocolPrimitivesTest, UuidIsSixteenRawBytes) {
  WireUuid id{};
  for (size_t i = 0; i < id.size(); ++i) id[i] = uint8_t(i);
  ProtocolWriter w;
  w.WriteUuid(id);
  EXPECT_EQ(w.bytes(), Hex("000102030405060708090a0b0c0d0e0f"));
  ProtocolReader r(w.bytes());
  EXPECT_EQ(r.ReadUuid("TopicId"), id);
}

TEST(ProtocolPrimitivesTest, TaggedFieldsRoundTripAndEmptySectionIsOneZeroByte) {
  const Bytes one = Hex("aa");
  const Bytes three = Hex("01 02 03");
  const TaggedField fields[] = {{0, one}, {300, three}};
  ProtocolWriter w;
  w.WriteEmptyTaggedFields();
  w.WriteTaggedFields(fields);
  EXPECT_EQ(w.bytes(), Hex("00  02  00 01 aa  ac02 03 010203"));

  ProtocolReader r(w.bytes());
  EXPECT_TRUE(r.ReadTaggedFields("empty").empty());
  std::vector<TaggedField> read = r.ReadTaggedFields("tags");
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].tag, 0u);
  EXPECT_EQ(Bytes(read[0].data.begin(), read[0].data.end()), one);
  EXPECT_EQ(read[1].tag, 300u);
  EXPECT_EQ(Bytes(read[1].data.begin(), read[1].data.end()), three);
  EXPECT_TRUE(r.ok() && r.AtEnd());
}

TEST(ProtocolPrimitivesTest, UnknownTaggedFieldsAreSkippedByLength) {
  // Two unknown tags, then an int16 that must still be read correctly.
  Bytes b = Hex("02  05 03 ffffff  09 00  1234");
  ProtocolReader r(b);
  r.SkipTaggedFields("_tagged_fields");
  EXPECT_EQ(r.ReadInt16("After"), 0x1234);
  EXPECT_TRUE(r.ok() && r.AtEnd());
}

TEST(ProtocolPrimitivesTest, TaggedFieldSizeBeyondInputIsRejected) {
  Bytes b = Hex("01 00 10 aabb");
  ProtocolReader r(b);
  r.SkipTaggedFields("_tagged_fields");
  EXPECT_EQ(r.status().message(),
            "field _tagged_fields at byte 2: tag 0 size 16 exceeds the 2 remaining bytes");
}

TEST(ProtocolPrimitivesTest, TruncatedFixedWidthFieldNamesFieldAndPosition) {
  Bytes b = Hex("0001 02");
  ProtocolReader r(b);
  r.ReadInt16("Acks");
  EXPECT_EQ(r.ReadInt32("TimeoutMs"), 0);
  EXPECT_EQ(r.status().message(),
            "field TimeoutMs at byte 2: truncated: expected 4 more bytes, found 1");
  EXPECT_EQ(r.position(), 2u);
}

TEST(ProtocolPrimitivesTest, ErrorsAreStickyAndFirstErrorWins) {
  Bytes b = Hex("01");
  ProtocolReader r(b);
  r.ReadInt16("First");
  EXPECT_EQ(r.ReadInt8("Second"), 0);  // would succeed on a healthy reader
  EXPECT_EQ(r.status().message(),
            "field First at byte 0: truncated: expected 2 more bytes, found 1");
  EXPECT_EQ(r.position(), 0u);
}

TEST(ProtocolPrimitivesTest, NegativeLengthsAreRejected) {
  Bytes b = Hex("fffe  ");
  ProtocolReader r(b);
  r.ReadNullableString("ClientId", Encoding::kClassic);
  EXPECT_EQ(r.status().message(), "field ClientId at byte 0: expected a length >= -1, found -2");

  Bytes c = Hex("80000000");
  ProtocolReader rc(c);
  rc.ReadNullableBytes("Records", Encoding::kClassic);
  EXPECT_EQ(rc.status().message(),
            "field Records at byte 0: expected a length >= -1, found -2147483648");
}

TEST(ProtocolPrimitivesTest, LengthBeyondInputIsRejectedBeforeAllocating) {
  Bytes b = Hex("7fffffff 00");
  ProtocolReader r(b);
  EXPECT_EQ(r.ReadArrayCount("Topics", Encoding::kClassic), 0u);
  EXPECT_EQ(r.status().message(),
            "field Topics at byte 0: length 2147483647 exceeds the 1 remaining bytes");

  // []int32 needs four bytes per element.
  Bytes c = Hex("00000002 00000001");
  ProtocolReader rc(c);
  EXPECT_TRUE(rc.ReadInt32Array("ReplicaNodes", Encoding::kClassic).empty());
  EXPECT_EQ(rc.status().message(),
            "field ReplicaNodes at byte 0: length 2 exceeds the 4 remaining bytes");

  Bytes d = Hex("ffffffff 0f");  // compact: 2^32-1 => length 2^32-2
  ProtocolReader rd(d);
  rd.ReadString("Name", Encoding::kCompact);
  EXPECT_EQ(rd.status().message(),
            "field Name at byte 0: length 4294967294 exceeds the 0 remaining bytes");
}

TEST(ProtocolPrimitivesTest, FailAtKeepsFirstError) {
  Bytes b;
  ProtocolReader r(b);
  r.FailAt(3, "X", "first");
  r.FailAt(5, "Y", "second");
  EXPECT_EQ(r.status().message(), "field X at byte 3: first");
}

}  // namespace
}  // namespace daruma
