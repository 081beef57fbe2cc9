// Decompresses the records region of every compressed batch Kafka wrote in the
// "compressed" fixture, one batch per codec at a time, and checks that the
// result holds exactly RecordsCount length-prefixed records.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/bytes.h"
#include "record/compression.h"
#include "support/test_support.h"

namespace daruma {
namespace {

constexpr size_t kHeaderBytes = 61;
constexpr size_t kLengthAt = 8;
constexpr size_t kMagicAt = 16;
constexpr size_t kAttributesLowByteAt = 22;
constexpr size_t kRecordsCountAt = 57;

std::string SegmentPath() {
  return testing::FixturesDir() +
         "/kafka-generated/compressed/logdir/fixture-compressed-0/00000000000000000000.log";
}

// Walks `count` records (varint Length, then Length bytes) and reports
// whether they end exactly at the end of `records`.
bool HoldsExactlyRecords(ByteSpan records, int32_t count) {
  ByteReader reader(records);
  for (int32_t i = 0; i < count; ++i) {
    int32_t length = 0;
    if (!reader.ReadVarint(&length) || length < 0 || !reader.Skip(size_t(length))) return false;
  }
  return reader.AtEnd();
}

TEST(CodecCompatTest, DecompressesEveryKafkaWrittenBatch) {
  DARUMA_REQUIRE_FIXTURES();
  const std::string file = testing::ReadFileToString(SegmentPath());
  const ByteSpan data = AsBytes(file);
  ASSERT_FALSE(data.empty());

  std::map<std::string, int> batches_per_codec;
  size_t pos = 0;
  while (pos < data.size()) {
    ASSERT_GE(data.size() - pos, kHeaderBytes) << "at byte " << pos;
    const size_t entry = 12 + LoadBe32(data.data() + pos + kLengthAt);
    ASSERT_LE(entry, data.size() - pos) << "at byte " << pos;
    ASSERT_EQ(data[pos + kMagicAt], 2) << "at byte " << pos;
    const auto codec = CompressionFromId(data[pos + kAttributesLowByteAt] & 0x07);
    ASSERT_TRUE(codec.has_value()) << "at byte " << pos;
    const int32_t count = int32_t(LoadBe32(data.data() + pos + kRecordsCountAt));
    const ByteSpan records = data.subspan(pos + kHeaderBytes, entry - kHeaderBytes);
    if (*codec != CompressionType::kNone) {
      auto out = Decompress(*codec, records, kDefaultMaxDecompressedBytes, 2);
      ASSERT_TRUE(out.ok()) << CompressionName(*codec) << " batch at byte " << pos << ": "
                            << out.status().ToString();
      EXPECT_FALSE(out->empty());
      EXPECT_GT(count, 0);
      EXPECT_TRUE(HoldsExactlyRecords(*out, count))
          << CompressionName(*codec) << " batch at byte " << pos << " (" << count << " records)";
    }
    ++batches_per_codec[std::string(CompressionName(*codec))];
    pos += entry;
  }
  // batches.csv: segment 0 holds 10 uncompressed and 9 batches of each codec.
  EXPECT_EQ(batches_per_codec,
            (std::map<std::string, int>{
                {"none", 10}, {"gzip", 9}, {"snappy", 9}, {"lz4", 9}, {"zstd", 9}}));
}

// Kafka's batches re-encoded by our compressors decode to the same records.
TEST(CodecCompatTest, RecompressedKafkaRecordsRoundTrip) {
  DARUMA_REQUIRE_FIXTURES();
  const std::string file = testing::ReadFileToString(SegmentPath());
  const ByteSpan data = AsBytes(file);
  int checked = 0;
  for (size_t pos = 0; pos + kHeaderBytes <= data.size();) {
    const size_t entry = 12 + LoadBe32(data.data() + pos + kLengthAt);
    const auto codec = CompressionFromId(data[pos + kAttributesLowByteAt] & 0x07);
    ASSERT_TRUE(codec.has_value());
    if (*codec != CompressionType::kNone) {
      const ByteSpan records = data.subspan(pos + kHeaderBytes, entry - kHeaderBytes);
      auto plain = Decompress(*codec, records, kDefaultMaxDecompressedBytes);
      ASSERT_TRUE(plain.ok()) << plain.status().ToString();
      auto ours = Compress(*codec, *plain);
      ASSERT_TRUE(ours.ok()) << ours.status().ToString();
      auto again = Decompress(*codec, *ours, kDefaultMaxDecompressedBytes);
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      EXPECT_EQ(*again, *plain) << CompressionName(*codec) << " batch at byte " << pos;
      ++checked;
    }
    pos += entry;
  }
  EXPECT_EQ(checked, 36);
}

}  // namespace
}  // namespace daruma
