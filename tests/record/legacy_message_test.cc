// Legacy v0/v1 messages (spec §3): a catalogue of layouts, round trips,
// compressed wrappers and every validation failure, one case each.
#include "record/legacy_message.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace daruma {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int64_t kTs = 1700000000000;

Bytes ConcatAll(const std::vector<Bytes>& parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Three uncompressed inner entries with offsets first, first+1, first+2 and
// timestamps kTs+1.. (v1).
Bytes InnerEntries(int8_t magic, int64_t first) {
  return ConcatAll({BuildLegacyMessage(magic, first, kTs + 1, std::nullopt, "a"),
                    BuildLegacyMessage(magic, first + 1, kTs + 2, "k1", std::nullopt),
                    BuildLegacyMessage(magic, first + 2, kTs + 3, "k2", "ccc")});
}

Bytes MustWrap(int8_t magic, int64_t offset, int64_t timestamp, CompressionType codec,
               const Bytes& inner, bool log_append_time = false) {
  auto r = BuildLegacyWrapper(magic, offset, timestamp, codec, inner, log_append_time);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : Bytes();
}

std::vector<int64_t> Offsets(const std::vector<Record>& records) {
  std::vector<int64_t> out;
  for (const Record& r : records) out.push_back(r.offset);
  return out;
}

std::vector<int64_t> Timestamps(const std::vector<Record>& records) {
  std::vector<int64_t> out;
  for (const Record& r : records) out.push_back(r.timestamp);
  return out;
}

Status DecodeStatus(const Bytes& entry) {
  auto view = LegacyMessageView::Parse(entry);
  if (!view.ok()) return view.status();
  auto records = view->DecodeRecords();
  return records.ok() ? Status::Ok() : records.status();
}

// ---- Layout and round trips -------------------------------------------------

TEST(LegacyMessageTest, BuildsExactV0Bytes) {
  Bytes expected = {0,    0,    0,    0,    0,   0,   0,  7,  // offset 7
                    0,    0,    0,    18,                     // messageSize
                    0x31, 0x6a, 0x1d, 0xf0,                   // CRC-32 of magic..end
                    0,    0,                                  // magic 0, attributes 0
                    0,    0,    0,    1,    'k',              // key
                    0,    0,    0,    3,    'v', 'a', 'l'};   // value
  EXPECT_EQ(BuildLegacyMessage(0, 7, 12345, "k", "val"), expected);
}

TEST(LegacyMessageTest, BuildsExactV1Bytes) {
  Bytes expected = {0,    0,    0,    0,    0,    0,    0,    9,     // offset 9
                    0,    0,    0,    24,                            // messageSize
                    0x0f, 0x06, 0x2e, 0xd0,                          // CRC-32
                    1,    8,                                         // magic 1, LogAppendTime
                    0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x7b,  // timestamp
                    0xff, 0xff, 0xff, 0xff,                          // null key
                    0,    0,    0,    2,    'h',  'i'};              // value
  EXPECT_EQ(BuildLegacyMessage(1, 9, 1700000000123, std::nullopt, "hi", 8), expected);
}

TEST(LegacyMessageTest, RoundTripV0) {
  Bytes entry = BuildLegacyMessage(0, 42, kTs, "key", "value");
  auto view = LegacyMessageView::Parse(entry);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->offset(), 42);
  EXPECT_EQ(view->message_size(), int32_t(entry.size()) - 12);
  EXPECT_EQ(view->magic(), 0);
  EXPECT_EQ(view->attributes(), 0);
  EXPECT_EQ(view->compression_id(), 0);
  EXPECT_EQ(view->timestamp(), -1);  // v0 carries no timestamp
  EXPECT_EQ(view->timestamp_type(), TimestampType::kNoTimestamp);
  EXPECT_EQ(AsStringView(*view->key()), "key");
  EXPECT_EQ(AsStringView(*view->value()), "value");
  EXPECT_TRUE(view->crc_valid());
  EXPECT_TRUE(view->Validate().ok());

  auto records = view->DecodeRecords();
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 1u);
  const Record& r = (*records)[0];
  EXPECT_EQ(r.offset, 42);
  EXPECT_EQ(r.timestamp, -1);
  EXPECT_EQ(r.sequence, -1);
  EXPECT_EQ(r.key, "key");
  EXPECT_EQ(r.value, "value");
  EXPECT_TRUE(r.headers.empty());
}

TEST(LegacyMessageTest, RoundTripV1NullsAndEmpty) {
  Bytes entry = BuildLegacyMessage(1, 5, kTs, std::nullopt, "", 0);
  auto view = LegacyMessageView::Parse(entry);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->magic(), 1);
  EXPECT_EQ(view->timestamp(), kTs);
  EXPECT_EQ(view->timestamp_type(), TimestampType::kCreateTime);
  EXPECT_FALSE(view->key().has_value());
  ASSERT_TRUE(view->value().has_value());
  EXPECT_TRUE(view->value()->empty());
  EXPECT_EQ(view->message_size(), kLegacyMinMessageSizeV1);

  auto records = view->DecodeRecords();
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ((*records)[0].offset, 5);
  EXPECT_EQ((*records)[0].timestamp, kTs);
  EXPECT_EQ((*records)[0].key, std::nullopt);
  EXPECT_EQ((*records)[0].value, std::string());
}

TEST(LegacyMessageTest, V1LogAppendTimeBit) {
  Bytes entry = BuildLegacyMessage(1, 0, kTs, "k", std::nullopt, 0x08);
  auto view = LegacyMessageView::Parse(entry);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->timestamp_type(), TimestampType::kLogAppendTime);
  EXPECT_FALSE(view->value().has_value());
}

TEST(LegacyMessageTest, DeepRecordReportsCrcAndSizes) {
  Bytes entry = BuildLegacyMessage(1, 3, kTs, "kk", std::nullopt);
  auto view = LegacyMessageView::Parse(entry);
  ASSERT_TRUE(view.ok());
  auto deep = view->DecodeDeep();
  ASSERT_TRUE(deep.ok());
  ASSERT_EQ(deep->size(), 1u);
  EXPECT_EQ((*deep)[0].crc, view->stored_crc());
  EXPECT_TRUE((*deep)[0].crc_valid);
  EXPECT_EQ((*deep)[0].key_size, 2);
  EXPECT_EQ((*deep)[0].value_size, -1);
  EXPECT_EQ((*deep)[0].magic, 1);
  EXPECT_EQ((*deep)[0].timestamp_type, TimestampType::kCreateTime);
}

// ---- Structural validation failures ----------------------------------------

TEST(LegacyMessageTest, RejectsEntryShorterThanPrefix) {
  Bytes entry = BuildLegacyMessage(0, 1, -1, "k", "v");
  entry.resize(10);
  auto view = LegacyMessageView::Parse(entry);
  ASSERT_FALSE(view.ok());
  EXPECT_TRUE(view.status().IsCorruption());
  EXPECT_THAT(view.status().message(),
              AllOf(HasSubstr("expected at least 12"), HasSubstr("found 10")));
  EXPECT_FALSE(LegacyMessageView(entry).Validate().ok());
}

TEST(LegacyMessageTest, RejectsShortMessageSize) {
  Bytes entry = BuildLegacyMessage(0, 77, -1, std::nullopt, std::nullopt);
  StoreBe32(entry.data() + 8, 9);
  entry.resize(12 + 9);
  auto view = LegacyMessageView::Parse(entry);
  ASSERT_FALSE(view.ok());
  EXPECT_TRUE(view.status().IsCorruption());
  EXPECT_THAT(view.status().message(),
              AllOf(HasSubstr("offset 77"), HasSubstr("messageSize at byte 8"),
                    HasSubstr("expected >= 14"), HasSubstr("found 9")));
  Status st = LegacyMessageView(entry).Validate();
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), AllOf(HasSubstr("messageSize at byte 8"), HasSubstr("found 9")));
}

TEST(LegacyMessageTest, RejectsMessageSizeNotMatchingEntry) {
  Bytes entry = BuildLegacyMessage(0, 3, -1, "k", "v");
  entry.push_back(0);
  auto view = LegacyMessageView::Parse(entry);
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(view.status().message(),
              AllOf(HasSubstr("messageSize at byte 8"),
                    HasSubstr("expected " + std::to_string(entry.size() - 12)),
                    HasSubstr("found " + std::to_string(entry.size() - 13))));
}

TEST(LegacyMessageTest, RejectsBadCrc) {
  Bytes entry = BuildLegacyMessage(1, 11, kTs, "k", "value");
  uint32_t good = LoadBe32(entry.data() + 12);
  entry.back() ^= 0x01;
  auto view = LegacyMessageView::Parse(entry);
  ASSERT_TRUE(view.ok());  // Parse checks structure only
  EXPECT_FALSE(view->crc_valid());
  Status st = view->Validate();
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.IsCorruption());
  char found[16];
  snprintf(found, sizeof(found), "0x%08x", good);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("offset 11"), HasSubstr("field crc at byte 12"),
                                  HasSubstr(std::string("found ") + found)));
  char computed[16];
  snprintf(computed, sizeof(computed), "0x%08x", view->ComputeCrc());
  EXPECT_THAT(st.message(), HasSubstr(std::string("expected ") + computed));
}

TEST(LegacyMessageTest, RejectsKeyLengthPastEnd) {
  Bytes entry = BuildLegacyMessage(1, 4, kTs, "key", "v");
  StoreBe32(entry.data() + 26, 100);
  auto view = LegacyMessageView::Parse(entry);
  ASSERT_FALSE(view.ok());
  EXPECT_TRUE(view.status().IsCorruption());
  EXPECT_THAT(
      view.status().message(),
      AllOf(HasSubstr("offset 4"), HasSubstr("keyLength at byte 26"), HasSubstr("found 100")));
}

TEST(LegacyMessageTest, RejectsNegativeKeyLength) {
  Bytes entry = BuildLegacyMessage(0, 4, -1, "key", "v");
  StoreBe32(entry.data() + 18, uint32_t(-2));
  auto view = LegacyMessageView::Parse(entry);
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(view.status().message(),
              AllOf(HasSubstr("keyLength at byte 18"), HasSubstr("found -2")));
}

TEST(LegacyMessageTest, RejectsValueLengthPastEnd) {
  Bytes entry = BuildLegacyMessage(0, 4, -1, "key", "v");
  // keyLength at 18, key 3 bytes, valueLength at 25.
  StoreBe32(entry.data() + 25, 2);
  auto view = LegacyMessageView::Parse(entry);
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(view.status().message(), AllOf(HasSubstr("valueLength at byte 25"),
                                             HasSubstr("expected -1..1"), HasSubstr("found 2")));
}

TEST(LegacyMessageTest, RejectsMagicTwo) {
  Bytes entry = BuildLegacyMessage(0, 4, -1, "key", "v");
  entry[16] = 2;
  auto view = LegacyMessageView::Parse(entry);
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(view.status().message(), AllOf(HasSubstr("magic at byte 16"),
                                             HasSubstr("expected 0 or 1"), HasSubstr("found 2")));
}

TEST(LegacyMessageTest, RejectsV1ShorterThanV1Minimum) {
  Bytes entry = BuildLegacyMessage(0, 4, -1, std::nullopt, std::nullopt);  // 14-byte message
  entry[16] = 1;
  auto view = LegacyMessageView::Parse(entry);
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(view.status().message(),
              AllOf(HasSubstr("magic 1"), HasSubstr("messageSize at byte 8"),
                    HasSubstr("expected >= 22"), HasSubstr("found 14")));
}

TEST(LegacyMessageTest, ToleratesBytesAfterValueCoveredByCrc) {
  Bytes entry = BuildLegacyMessage(0, 4, -1, "k", "v");
  entry.push_back(0xAB);
  StoreBe32(entry.data() + 8, uint32_t(entry.size() - 12));
  auto view = LegacyMessageView::Parse(entry);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(AsStringView(*view->value()), "v");
}

// ---- Compressed wrappers ------------------------------------------------------

struct CodecCase {
  int8_t magic;
  CompressionType codec;
};

// The CTest name shows the parameter ("v1_gzip"), not the struct's bytes.
void PrintTo(const CodecCase& c, std::ostream* os) {
  *os << "v" << int(c.magic) << "_" << CompressionName(c.codec);
}

class LegacyWrapperTest : public ::testing::TestWithParam<CodecCase> {};

TEST_P(LegacyWrapperTest, RoundTripsInnerMessages) {
  const CodecCase& c = GetParam();
  // v0 inner offsets are absolute; v1 inner offsets are relative 0..2.
  Bytes inner = InnerEntries(c.magic, c.magic == 0 ? 20 : 0);
  Bytes wrapper = MustWrap(c.magic, 22, kTs + 3, c.codec, inner);
  auto view = LegacyMessageView::Parse(wrapper);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->compression_id(), int(c.codec));
  EXPECT_TRUE(view->Validate().ok());
  auto records = view->DecodeRecords();
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  EXPECT_EQ(Offsets(*records), (std::vector<int64_t>{20, 21, 22}));
  if (c.magic == 0) {
    EXPECT_EQ(Timestamps(*records), (std::vector<int64_t>{-1, -1, -1}));
  } else {
    EXPECT_EQ(Timestamps(*records), (std::vector<int64_t>{kTs + 1, kTs + 2, kTs + 3}));
  }
  EXPECT_EQ((*records)[0].key, std::nullopt);
  EXPECT_EQ((*records)[0].value, "a");
  EXPECT_EQ((*records)[1].key, "k1");
  EXPECT_EQ((*records)[1].value, std::nullopt);
  EXPECT_EQ((*records)[2].key, "k2");
  EXPECT_EQ((*records)[2].value, "ccc");
  for (const Record& r : *records) {
    EXPECT_EQ(r.sequence, -1);
    EXPECT_TRUE(r.headers.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, LegacyWrapperTest,
    ::testing::Values(CodecCase{0, CompressionType::kGzip}, CodecCase{0, CompressionType::kSnappy},
                      CodecCase{0, CompressionType::kLz4}, CodecCase{1, CompressionType::kGzip},
                      CodecCase{1, CompressionType::kSnappy}, CodecCase{1, CompressionType::kLz4}),
    [](const ::testing::TestParamInfo<CodecCase>& info) {
      return "v" + std::to_string(info.param.magic) + "_" +
             std::string(CompressionName(info.param.codec));
    });

TEST(LegacyWrapperRulesTest, V1WrapperOffsetZeroMeansBaseZero) {
  Bytes wrapper = MustWrap(1, 0, kTs, CompressionType::kGzip, InnerEntries(1, 0));
  auto view = LegacyMessageView::Parse(wrapper);
  ASSERT_TRUE(view.ok());
  auto records = view->DecodeRecords();
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  EXPECT_EQ(Offsets(*records), (std::vector<int64_t>{0, 1, 2}));
}

TEST(LegacyWrapperRulesTest, V1RelativeOffsetsNeedNotStartAtZero) {
  // Relative 5,6,7 under wrapper offset 107: base = 107 - 7 = 100.
  Bytes wrapper = MustWrap(1, 107, kTs, CompressionType::kGzip, InnerEntries(1, 5));
  auto records = LegacyMessageView(wrapper).DecodeRecords();
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  EXPECT_EQ(Offsets(*records), (std::vector<int64_t>{105, 106, 107}));
}

TEST(LegacyWrapperRulesTest, RejectsV1WrapperOffsetBelowLastRelative) {
  Bytes wrapper = MustWrap(1, 1, kTs, CompressionType::kGzip, InnerEntries(1, 0));
  Status st = DecodeStatus(wrapper);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidRecord);
  EXPECT_THAT(st.message(),
              AllOf(HasSubstr("offset 1 (magic 1)"), HasSubstr("field offset at byte 0"),
                    HasSubstr("last inner relative offset 2"), HasSubstr("found 1")));
}

TEST(LegacyWrapperRulesTest, V0InnerOffsetsAreAbsolute) {
  // The wrapper offset does not shift v0 inner offsets, even when it disagrees.
  Bytes wrapper = MustWrap(0, 1, -1, CompressionType::kGzip, InnerEntries(0, 50));
  auto records = LegacyMessageView(wrapper).DecodeRecords();
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  EXPECT_EQ(Offsets(*records), (std::vector<int64_t>{50, 51, 52}));
}

TEST(LegacyWrapperRulesTest, LogAppendTimeWrapperOverridesInnerTimestamps) {
  Bytes wrapper = MustWrap(1, 2, 999, CompressionType::kGzip, InnerEntries(1, 0),
                           /*log_append_time=*/true);
  auto view = LegacyMessageView::Parse(wrapper);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->timestamp_type(), TimestampType::kLogAppendTime);
  auto deep = view->DecodeDeep();
  ASSERT_TRUE(deep.ok()) << deep.status().ToString();
  ASSERT_EQ(deep->size(), 3u);
  for (const LegacyDeepRecord& d : *deep) {
    EXPECT_EQ(d.record.timestamp, 999);
    EXPECT_EQ(d.timestamp_type, TimestampType::kLogAppendTime);
    EXPECT_EQ(d.record.attributes & 0x08, 0x08);
  }
}

TEST(LegacyWrapperRulesTest, CreateTimeWrapperKeepsInnerTimestamps) {
  Bytes wrapper = MustWrap(1, 2, 999, CompressionType::kGzip, InnerEntries(1, 0));
  auto records = LegacyMessageView(wrapper).DecodeRecords();
  ASSERT_TRUE(records.ok());
  EXPECT_EQ(Timestamps(*records), (std::vector<int64_t>{kTs + 1, kTs + 2, kTs + 3}));
}

TEST(LegacyWrapperRulesTest, ToleratesInnerMagicMismatch) {
  // A v1 wrapper holding v0 messages (a historical broker bug): offsets are
  // still relative to the wrapper; v0 inner messages have no timestamp.
  Bytes wrapper = MustWrap(1, 12, kTs, CompressionType::kGzip, InnerEntries(0, 0));
  auto deep = LegacyMessageView(wrapper).DecodeDeep();
  ASSERT_TRUE(deep.ok()) << deep.status().ToString();
  ASSERT_EQ(deep->size(), 3u);
  EXPECT_EQ((*deep)[0].record.offset, 10);
  EXPECT_EQ((*deep)[2].record.offset, 12);
  EXPECT_EQ((*deep)[0].magic, 0);
  EXPECT_EQ((*deep)[0].record.timestamp, -1);
}

TEST(LegacyWrapperRulesTest, InnerCrcIsReportedNotEnforced) {
  Bytes inner = InnerEntries(1, 0);
  inner.back() ^= 0x01;  // corrupt the last inner message's value
  Bytes wrapper = MustWrap(1, 2, kTs, CompressionType::kGzip, inner);
  auto view = LegacyMessageView::Parse(wrapper);
  ASSERT_TRUE(view.ok());
  EXPECT_TRUE(view->Validate().ok());  // the outer CRC covers the compressed bytes
  auto deep = view->DecodeDeep();
  ASSERT_TRUE(deep.ok()) << deep.status().ToString();
  EXPECT_TRUE((*deep)[0].crc_valid);
  EXPECT_FALSE((*deep)[2].crc_valid);
}

TEST(LegacyWrapperRulesTest, RejectsCompressedInnerMessage) {
  Bytes nested = MustWrap(1, 0, kTs, CompressionType::kGzip, InnerEntries(1, 0));
  Bytes inner = ConcatAll({BuildLegacyMessage(1, 0, kTs, "k", "v"), nested});
  Bytes wrapper = MustWrap(1, 1, kTs, CompressionType::kGzip, inner);
  Status st = DecodeStatus(wrapper);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidRecord);
  std::string first_size = std::to_string(BuildLegacyMessage(1, 0, kTs, "k", "v").size());
  EXPECT_THAT(st.message(),
              AllOf(HasSubstr("inner entry 1 at byte " + first_size), HasSubstr("field attributes"),
                    HasSubstr("must not be compressed"), HasSubstr("found codec id 1")));
}

TEST(LegacyWrapperRulesTest, RejectsZstdInV1) {
  Bytes wrapper = BuildLegacyMessage(1, 5, kTs, std::nullopt, "not-really-zstd",
                                     int8_t(CompressionType::kZstd));
  Status st = DecodeStatus(wrapper);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidRecord);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("offset 5 (magic 1)"),
                                  HasSubstr("attributes at byte 17"), HasSubstr("found zstd (4)")));
}

TEST(LegacyWrapperRulesTest, RejectsUnknownCodecId) {
  Bytes wrapper = BuildLegacyMessage(0, 5, -1, std::nullopt, "x", 6);
  Status st = DecodeStatus(wrapper);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(),
              AllOf(HasSubstr("attributes at byte 17"), HasSubstr("unknown codec id 6")));
}

TEST(LegacyWrapperRulesTest, RejectsNullWrapperValue) {
  Bytes wrapper =
      BuildLegacyMessage(1, 5, kTs, std::nullopt, std::nullopt, int8_t(CompressionType::kGzip));
  Status st = DecodeStatus(wrapper);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidRecord);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("offset 5"), HasSubstr("field valueLength"),
                                  HasSubstr("found null (-1)")));
}

TEST(LegacyWrapperRulesTest, RejectsZeroInnerMessages) {
  Bytes wrapper = MustWrap(0, 5, -1, CompressionType::kGzip, Bytes());
  Status st = DecodeStatus(wrapper);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidRecord);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("offset 5"), HasSubstr("zero inner messages")));
}

TEST(LegacyWrapperRulesTest, RejectsTruncatedInnerEntry) {
  Bytes inner = InnerEntries(1, 0);
  size_t last = inner.size() - BuildLegacyMessage(1, 2, kTs + 3, "k2", "ccc").size();
  inner.pop_back();
  Bytes wrapper = MustWrap(1, 2, kTs, CompressionType::kGzip, inner);
  Status st = DecodeStatus(wrapper);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_THAT(st.message(), AllOf(HasSubstr("inner entry 2 at byte " + std::to_string(last)),
                                  HasSubstr("field messageSize")));
}

TEST(LegacyWrapperRulesTest, RejectsTrailingPartialPrefix) {
  Bytes inner = InnerEntries(0, 0);
  size_t end = inner.size();
  inner.insert(inner.end(), {0, 0, 0});
  Bytes wrapper = MustWrap(0, 2, -1, CompressionType::kGzip, inner);
  Status st = DecodeStatus(wrapper);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), AllOf(HasSubstr("inner entry 3 at byte " + std::to_string(end)),
                                  HasSubstr("expected at least 12 bytes"), HasSubstr("found 3")));
}

TEST(LegacyWrapperRulesTest, DecompressionIsBounded) {
  Bytes inner;
  for (int i = 0; i < 50; ++i) {
    Bytes m = BuildLegacyMessage(1, i, kTs, std::nullopt, std::string(1000, 'z'));
    inner.insert(inner.end(), m.begin(), m.end());
  }
  Bytes wrapper = MustWrap(1, 49, kTs, CompressionType::kGzip, inner);
  auto records = LegacyMessageView(wrapper).DecodeRecords(/*max_decompressed=*/4096);
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(records.status().code(), StatusCode::kTooLarge);
  EXPECT_THAT(records.status().message(), HasSubstr("offset 49 (magic 1): decompressing the gzip"));
  auto ok = LegacyMessageView(wrapper).DecodeRecords(inner.size());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->size(), 50u);
}

}  // namespace
}  // namespace daruma
