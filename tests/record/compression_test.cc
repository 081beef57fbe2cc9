#include "record/compression.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <lz4.h>
#include <lz4frame.h>
#include <snappy.h>
#include <zstd.h>

#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/xxhash32.h"
#include "record/lz4_codec.h"

namespace daruma {

// The CTest name shows the codec ("gzip"), not the enum's byte. In namespace
// daruma itself so that argument-dependent lookup finds it.
static void PrintTo(CompressionType type, std::ostream* os) {
  *os << CompressionName(type);
}

namespace {

using ::testing::HasSubstr;

constexpr CompressionType kCodecs[] = {CompressionType::kGzip, CompressionType::kSnappy,
                                       CompressionType::kLz4, CompressionType::kZstd};

Bytes FromString(std::string_view s) {
  return Bytes(s.begin(), s.end());
}

// Compressible but not trivial: words from a small vocabulary plus noise.
Bytes SampleData(size_t n, uint32_t seed = 7) {
  static const char* kWords[] = {"kafka ", "segment ", "offset ", "batch ", "record "};
  std::mt19937 rng(seed);
  Bytes out;
  out.reserve(n);
  while (out.size() < n) {
    const std::string_view w = kWords[rng() % 5];
    out.insert(out.end(), w.begin(), w.end());
    out.push_back(uint8_t(rng()));
  }
  out.resize(n);
  return out;
}

Bytes RandomData(size_t n, uint32_t seed = 11) {
  std::mt19937 rng(seed);
  Bytes out(n);
  for (auto& b : out) b = uint8_t(rng());
  return out;
}

Bytes MustCompress(CompressionType type, const Bytes& input, int8_t magic = 2, int level = -1) {
  auto r = Compress(type, input, magic, level);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : Bytes();
}

Bytes Concat(const Bytes& a, const Bytes& b) {
  Bytes out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// ---- names and ids ----

TEST(CompressionNamesTest, NamesMatchKafkaDumpLog) {
  EXPECT_EQ(CompressionName(CompressionType::kNone), "none");
  EXPECT_EQ(CompressionName(CompressionType::kGzip), "gzip");
  EXPECT_EQ(CompressionName(CompressionType::kSnappy), "snappy");
  EXPECT_EQ(CompressionName(CompressionType::kLz4), "lz4");
  EXPECT_EQ(CompressionName(CompressionType::kZstd), "zstd");
  EXPECT_EQ(CompressionName(static_cast<CompressionType>(5)), "unknown(5)");
  EXPECT_EQ(CompressionName(static_cast<CompressionType>(7)), "unknown(7)");
}

TEST(CompressionNamesTest, FromNameRoundTripsAndRejectsUnknown) {
  for (int id = 0; id <= 4; ++id) {
    const auto type = static_cast<CompressionType>(id);
    EXPECT_EQ(CompressionFromName(CompressionName(type)), type);
  }
  EXPECT_EQ(CompressionFromName("GZIP"), std::nullopt);
  EXPECT_EQ(CompressionFromName("unknown(5)"), std::nullopt);
  EXPECT_EQ(CompressionFromName(""), std::nullopt);
}

TEST(CompressionNamesTest, FromId) {
  EXPECT_EQ(CompressionFromId(0), CompressionType::kNone);
  EXPECT_EQ(CompressionFromId(4), CompressionType::kZstd);
  for (int id : {5, 6, 7, -1, 8}) EXPECT_EQ(CompressionFromId(id), std::nullopt) << id;
}

// ---- round trips ----

class CodecRoundTripTest : public ::testing::TestWithParam<CompressionType> {};

TEST_P(CodecRoundTripTest, Empty) {
  const Bytes compressed = MustCompress(GetParam(), {});
  auto r = Decompress(GetParam(), compressed, kDefaultMaxDecompressedBytes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->empty());
}

TEST_P(CodecRoundTripTest, Small) {
  const Bytes input = FromString("hello, kafka");
  auto r = Decompress(GetParam(), MustCompress(GetParam(), input), kDefaultMaxDecompressedBytes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, input);
}

TEST_P(CodecRoundTripTest, UnboundedLimitDoesNotOverflow) {
  const Bytes input = SampleData(200000);
  auto r = Decompress(GetParam(), MustCompress(GetParam(), input), SIZE_MAX);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, input);
}

TEST_P(CodecRoundTripTest, OneMebibyteCompressible) {
  const Bytes input = SampleData(1 << 20);
  const Bytes compressed = MustCompress(GetParam(), input);
  EXPECT_LT(compressed.size(), input.size());
  auto r = Decompress(GetParam(), compressed, kDefaultMaxDecompressedBytes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, input);
}

TEST_P(CodecRoundTripTest, OneMebibyteIncompressible) {
  const Bytes input = RandomData(1 << 20);
  auto r = Decompress(GetParam(), MustCompress(GetParam(), input), kDefaultMaxDecompressedBytes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, input);
}

TEST_P(CodecRoundTripTest, OutputExactlyAtLimitIsAccepted) {
  const Bytes input = SampleData(100000);
  auto r = Decompress(GetParam(), MustCompress(GetParam(), input), input.size());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, input);
}

TEST_P(CodecRoundTripTest, OneByteOverLimitIsTooLarge) {
  const Bytes input = SampleData(100000);
  auto r = Decompress(GetParam(), MustCompress(GetParam(), input), input.size() - 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTooLarge) << r.status().ToString();
  EXPECT_THAT(r.status().message(), HasSubstr(std::string(CompressionName(GetParam())) + ":"));
  EXPECT_THAT(r.status().message(), HasSubstr("99999"));
}

// A few hundred bytes that inflate to 16 MiB must stop at the limit.
TEST_P(CodecRoundTripTest, BombStopsAtLimit) {
  const Bytes input(16 << 20, 0);
  const Bytes compressed = MustCompress(GetParam(), input);
  EXPECT_LT(compressed.size(), size_t(1) << 20);
  auto r = Decompress(GetParam(), compressed, kDefaultMaxDecompressedBytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTooLarge) << r.status().ToString();
}

TEST_P(CodecRoundTripTest, GarbageIsCorruption) {
  const Bytes garbage = FromString("this is certainly not compressed data, not in any codec");
  auto r = Decompress(GetParam(), garbage, kDefaultMaxDecompressedBytes);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_THAT(r.status().message(), HasSubstr(std::string(CompressionName(GetParam())) + ":"));
}

TEST_P(CodecRoundTripTest, TruncationIsCorruption) {
  const Bytes compressed = MustCompress(GetParam(), SampleData(200000));
  for (size_t keep : {compressed.size() / 2, compressed.size() - 1}) {
    Bytes cut(compressed.begin(), compressed.begin() + ptrdiff_t(keep));
    auto r = Decompress(GetParam(), cut, kDefaultMaxDecompressedBytes);
    ASSERT_FALSE(r.ok()) << "kept " << keep;
    EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  }
}

// Single-byte mutations of a valid stream either decode within the limit or
// fail as Corruption/TooLarge; never anything else (and never out of bounds
// under the sanitizers).
TEST_P(CodecRoundTripTest, MutatedInputsFailCleanly) {
  const Bytes valid = MustCompress(GetParam(), SampleData(3000));
  std::mt19937 rng(3);
  constexpr size_t kLimit = 4096;
  for (int i = 0; i < 2000; ++i) {
    Bytes mutated = valid;
    mutated[rng() % mutated.size()] ^= uint8_t(1 + rng() % 255);
    auto r = Decompress(GetParam(), mutated, kLimit);
    if (r.ok()) {
      EXPECT_LE(r->size(), kLimit);
    } else {
      EXPECT_TRUE(r.status().IsCorruption() || r.status().code() == StatusCode::kTooLarge)
          << r.status().ToString();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllCodecs, CodecRoundTripTest, ::testing::ValuesIn(kCodecs),
                         [](const auto& info) { return std::string(CompressionName(info.param)); });

TEST(CompressionTest, NoneCopiesAndEnforcesLimit) {
  const Bytes input = FromString("plain");
  EXPECT_EQ(*Decompress(CompressionType::kNone, input, 5), input);
  EXPECT_EQ(Decompress(CompressionType::kNone, input, 4).status().code(), StatusCode::kTooLarge);
}

TEST(CompressionTest, LevelsRoundTrip) {
  const Bytes input = SampleData(300000);
  for (auto [type, level] : {std::pair{CompressionType::kGzip, 1},
                             {CompressionType::kGzip, 9},
                             {CompressionType::kLz4, 1},
                             {CompressionType::kLz4, 12},
                             {CompressionType::kZstd, 1},
                             {CompressionType::kZstd, 19}}) {
    auto r = Decompress(type, MustCompress(type, input, 2, level), kDefaultMaxDecompressedBytes);
    ASSERT_TRUE(r.ok()) << CompressionName(type) << " " << level << ": " << r.status().ToString();
    EXPECT_EQ(*r, input);
  }
}

// ---- gzip ----

TEST(GzipTest, DecodesPythonGzipBytes) {
  // gzip.compress(b"hello world", mtime=0) from CPython (XFL 2, OS 3).
  const Bytes known = {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xcb,
                       0x48, 0xcd, 0xc9, 0xc9, 0x57, 0x28, 0xcf, 0x2f, 0xca, 0x49, 0x01,
                       0x00, 0x85, 0x11, 0x4a, 0x0d, 0x0b, 0x00, 0x00, 0x00};
  auto r = Decompress(CompressionType::kGzip, known, 100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, FromString("hello world"));
}

TEST(GzipTest, WritesTheJdkHeader) {
  const Bytes out = MustCompress(CompressionType::kGzip, FromString("abc"));
  ASSERT_GE(out.size(), 18u);
  const Bytes header(out.begin(), out.begin() + 10);
  EXPECT_EQ(header, (Bytes{0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff}));
  // Trailer: CRC-32("abc") = 0x352441C2 and ISIZE 3, little-endian.
  const Bytes trailer(out.end() - 8, out.end());
  EXPECT_EQ(trailer, (Bytes{0xc2, 0x41, 0x24, 0x35, 0x03, 0x00, 0x00, 0x00}));
}

TEST(GzipTest, ConcatenatedMembersAreOneStream) {
  const Bytes a = MustCompress(CompressionType::kGzip, FromString("first "));
  const Bytes b = MustCompress(CompressionType::kGzip, FromString("second"));
  auto r = Decompress(CompressionType::kGzip, Concat(a, b), 100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, FromString("first second"));
}

TEST(GzipTest, TrailingNonGzipBytesAreIgnoredLikeTheJdk) {
  const Bytes a = MustCompress(CompressionType::kGzip, FromString("payload"));
  auto r = Decompress(CompressionType::kGzip, Concat(a, Bytes{0, 0, 0}), 100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, FromString("payload"));
}

TEST(GzipTest, BadCrcIsCorruption) {
  Bytes out = MustCompress(CompressionType::kGzip, FromString("payload"));
  out[out.size() - 8] ^= 0xff;
  auto r = Decompress(CompressionType::kGzip, out, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption());
  EXPECT_THAT(r.status().message(), HasSubstr("gzip: incorrect data check"));
}

// ---- snappy ----

TEST(SnappyTest, WritesXerialHeaderAnd32KiBChunks) {
  const Bytes input = SampleData(70000);
  const Bytes out = MustCompress(CompressionType::kSnappy, input);
  const Bytes header(out.begin(), out.begin() + 16);
  EXPECT_EQ(header, (Bytes{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}));
  // 70000 bytes = 32768 + 32768 + 4464: three chunks.
  std::vector<size_t> chunk_sizes;
  for (size_t pos = 16; pos < out.size();) {
    const uint32_t n = LoadBe32(out.data() + pos);
    size_t raw = 0;
    ASSERT_TRUE(snappy::GetUncompressedLength(reinterpret_cast<const char*>(out.data() + pos + 4),
                                              n, &raw));
    chunk_sizes.push_back(raw);
    pos += 4 + n;
  }
  EXPECT_EQ(chunk_sizes, (std::vector<size_t>{32768, 32768, 4464}));
}

TEST(SnappyTest, RawBlockWithoutMagicIsAccepted) {
  const std::string input = "a raw snappy block, as very old clients may have written";
  std::string raw;
  snappy::Compress(input.data(), input.size(), &raw);
  auto r = Decompress(CompressionType::kSnappy, AsBytes(raw), 1000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(AsStringView(*r), input);
}

TEST(SnappyTest, RawBlockClaimingTooMuchIsTooLargeBeforeAllocating) {
  // Varint preamble claiming 0x7fffffff bytes, no data.
  const Bytes claim = {0xff, 0xff, 0xff, 0xff, 0x07};
  auto r = Decompress(CompressionType::kSnappy, claim, 1000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTooLarge);
}

TEST(SnappyTest, RepeatedHeaderBetweenChunksIsAccepted) {
  const Bytes a = MustCompress(CompressionType::kSnappy, FromString("one "));
  const Bytes b = MustCompress(CompressionType::kSnappy, FromString("two"));
  auto r = Decompress(CompressionType::kSnappy, Concat(a, b), 100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, FromString("one two"));
}

TEST(SnappyTest, ChunkLengthPastEndNamesPosition) {
  Bytes out = MustCompress(CompressionType::kSnappy, FromString("abcdef"));
  StoreBe32(out.data() + 16, 1000);
  auto r = Decompress(CompressionType::kSnappy, out, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption());
  EXPECT_THAT(r.status().message(), HasSubstr("snappy: chunk length 1000 at byte 16"));
}

// ---- lz4 ----

// Builds a Kafka-style frame by hand: FLG 0x60, BD 0x40, the HC over the
// given descriptor range, one compressed block, the end mark.
Bytes HandBuiltLz4Frame(const Bytes& payload, bool broken_checksum) {
  Bytes frame = {0x04, 0x22, 0x4D, 0x18, 0x60, 0x40};
  const size_t from = broken_checksum ? 0 : 4;
  frame.push_back(uint8_t((XxHash32(frame.data() + from, 6 - from) >> 8) & 0xFF));
  std::string block(size_t(LZ4_compressBound(int(payload.size()))), '\0');
  const int n = LZ4_compress_default(reinterpret_cast<const char*>(payload.data()), block.data(),
                                     int(payload.size()), int(block.size()));
  for (int i = 0; i < 4; ++i) frame.push_back(uint8_t(uint32_t(n) >> (8 * i)));
  frame.insert(frame.end(), block.begin(), block.begin() + n);
  frame.insert(frame.end(), 4, 0);
  return frame;
}

TEST(Lz4Test, WritesKafkaHeader) {
  const Bytes v2 = MustCompress(CompressionType::kLz4, FromString("x"), 2);
  EXPECT_EQ(Bytes(v2.begin(), v2.begin() + 7), (Bytes{0x04, 0x22, 0x4D, 0x18, 0x60, 0x40, 0x82}));
  const Bytes v0 = MustCompress(CompressionType::kLz4, FromString("x"), 0);
  const uint8_t broken = uint8_t((XxHash32(v0.data(), 6) >> 8) & 0xFF);
  EXPECT_NE(broken, 0x82);
  EXPECT_EQ(v0[6], broken);
}

TEST(Lz4Test, BrokenHeaderChecksumAcceptedForMagic0RejectedForMagic2) {
  const Bytes payload = SampleData(5000);
  const Bytes broken = HandBuiltLz4Frame(payload, /*broken_checksum=*/true);
  const Bytes correct = HandBuiltLz4Frame(payload, /*broken_checksum=*/false);

  auto v0 = Decompress(CompressionType::kLz4, broken, 10000, /*magic=*/0);
  ASSERT_TRUE(v0.ok()) << v0.status().ToString();
  EXPECT_EQ(*v0, payload);
  // Magic 0 skips the check entirely, so the correct form reads too.
  EXPECT_TRUE(Decompress(CompressionType::kLz4, correct, 10000, 0).ok());

  auto v2 = Decompress(CompressionType::kLz4, broken, 10000, /*magic=*/2);
  ASSERT_FALSE(v2.ok());
  EXPECT_TRUE(v2.status().IsCorruption());
  EXPECT_THAT(v2.status().message(),
              HasSubstr("lz4: header checksum mismatch: expected 0x82, found 0x"));
  EXPECT_THAT(v2.status().message(), HasSubstr("at byte 6"));
  auto v2_ok = Decompress(CompressionType::kLz4, correct, 10000, 2);
  ASSERT_TRUE(v2_ok.ok()) << v2_ok.status().ToString();
  EXPECT_EQ(*v2_ok, payload);
}

TEST(Lz4Test, UncompressedBlock) {
  Bytes frame = {0x04, 0x22, 0x4D, 0x18, 0x60, 0x40, 0x82};
  const Bytes payload = FromString("stored as is");
  for (int i = 0; i < 4; ++i) frame.push_back(uint8_t((payload.size() | 0x80000000u) >> (8 * i)));
  frame.insert(frame.end(), payload.begin(), payload.end());
  frame.insert(frame.end(), 4, 0);
  auto r = Decompress(CompressionType::kLz4, frame, 100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, payload);
  EXPECT_EQ(Decompress(CompressionType::kLz4, frame, payload.size() - 1).status().code(),
            StatusCode::kTooLarge);
}

TEST(Lz4Test, IncompressibleInputIsStoredUncompressed) {
  const Bytes input = RandomData(1000);
  const Bytes out = MustCompress(CompressionType::kLz4, input);
  ASSERT_EQ(out.size(), 7 + 4 + input.size() + 4);
  EXPECT_EQ(LoadLe32(out.data() + 7), 1000u | 0x80000000u);
}

TEST(Lz4Test, BlockLargerThanMaxBlockSize) {
  Bytes frame = {0x04, 0x22, 0x4D, 0x18, 0x60, 0x40, 0x82, 0x9f, 0x86, 0x01, 0x00};  // 99999
  frame.resize(frame.size() + 100000, 0);
  auto r = Decompress(CompressionType::kLz4, frame, kDefaultMaxDecompressedBytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "lz4: block size 99999 exceeds max block size 65536 at byte 7");
}

TEST(Lz4Test, DescriptorValidation) {
  struct Case {
    uint8_t flg, bd;
    const char* message;
  };
  const Case cases[] = {
      {0xA0, 0x40, "lz4: unsupported frame version 2 at byte 4"},
      {0x61, 0x40, "lz4: FLG reserved bits set at byte 4"},
      {0x40, 0x40, "lz4: dependent blocks are not supported at byte 4"},
      {0x60, 0x41, "lz4: BD reserved bits set at byte 5"},
      {0x60, 0x30, "lz4: invalid block max size code 3 at byte 5"},
  };
  for (const Case& c : cases) {
    Bytes frame = {0x04, 0x22, 0x4D, 0x18, c.flg, c.bd};
    frame.push_back(Lz4HeaderChecksum(ByteSpan(frame.data() + 4, 2)));
    frame.insert(frame.end(), 4, 0);
    auto r = Decompress(CompressionType::kLz4, frame, 100);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(), c.message);
  }
  auto r = Decompress(CompressionType::kLz4, Bytes{0x04, 0x22, 0x4D, 0x19, 0x60, 0x40, 0x82}, 100);
  EXPECT_EQ(r.status().message(),
            "lz4: expected frame magic 0x184D2204, found 0x194D2204 at byte 0");
}

// The output of a block is sized by the most it can decode to (255 bytes per
// input byte), not by the frame's block size: blocks at LZ4's highest ratio
// (runs of one byte, HC level 12) must still decode whole, in 64 KiB and
// 4 MiB blocks, and one byte short of the limit must still be refused.
TEST(Lz4Test, BlocksAtTheHighestRatioDecodeWhole) {
  for (LZ4F_blockSizeID_t block : {LZ4F_max64KB, LZ4F_max4MB}) {
    const Bytes input(block == LZ4F_max64KB ? 65536 : 4 << 20, 0x61);
    LZ4F_preferences_t prefs{};
    prefs.frameInfo.blockSizeID = block;
    prefs.frameInfo.blockMode = LZ4F_blockIndependent;
    prefs.compressionLevel = 12;
    Bytes frame(LZ4F_compressFrameBound(input.size(), &prefs));
    const size_t n =
        LZ4F_compressFrame(frame.data(), frame.size(), input.data(), input.size(), &prefs);
    ASSERT_FALSE(LZ4F_isError(n));
    frame.resize(n);
    ASSERT_LT(frame.size() * 200, input.size()) << "not a high-ratio block";
    auto r = Decompress(CompressionType::kLz4, frame, input.size());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, input);
    auto over = Decompress(CompressionType::kLz4, frame, input.size() - 1);
    ASSERT_FALSE(over.ok());
    EXPECT_EQ(over.status().code(), StatusCode::kTooLarge) << over.status().ToString();
  }
}

// Blocks are decoded into exactly the size their sequence lengths give, then
// checked against it: every size from 1 byte to past one 64 KiB block, from
// runs to random bytes, with fast and HC compression, must round-trip, take a
// limit equal to its size and refuse one byte less.
TEST(Lz4Test, EveryBlockShapeDecodesToItsExactSize) {
  std::mt19937 rng(11);
  int cases = 0;
  for (size_t size : {size_t(1), size_t(5), size_t(12), size_t(13), size_t(300), size_t(4096),
                      size_t(65535), size_t(65536), size_t(65537), size_t(200000)}) {
    for (int shape = 0; shape < 3; ++shape) {
      Bytes input(size);
      for (size_t i = 0; i < size; ++i) {
        input[i] = shape == 0 ? uint8_t(0x61) : shape == 1 ? uint8_t((i / 7) % 5) : uint8_t(rng());
      }
      for (int level : {-1, 12}) {
        const Bytes frame = MustCompress(CompressionType::kLz4, input, 2, level);
        auto r = Decompress(CompressionType::kLz4, frame, input.size());
        ASSERT_TRUE(r.ok()) << size << "/" << shape << "/" << level << ": "
                            << r.status().ToString();
        ASSERT_EQ(*r, input) << size << "/" << shape << "/" << level;
        auto over = Decompress(CompressionType::kLz4, frame, input.size() - 1);
        ASSERT_EQ(over.status().code(), StatusCode::kTooLarge) << size << "/" << shape;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 60);
}

// liblz4's frame writer with every optional field (content size, block and
// content checksums, 4 MiB blocks) must read; and its reader must accept ours.
TEST(Lz4Test, InteroperatesWithLiblz4FrameApi) {
  const Bytes input = SampleData(300000);
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max4MB;
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
  prefs.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled;
  prefs.frameInfo.contentSize = input.size();
  Bytes frame(LZ4F_compressFrameBound(input.size(), &prefs));
  const size_t n =
      LZ4F_compressFrame(frame.data(), frame.size(), input.data(), input.size(), &prefs);
  ASSERT_FALSE(LZ4F_isError(n));
  frame.resize(n);
  auto r = Decompress(CompressionType::kLz4, frame, kDefaultMaxDecompressedBytes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, input);

  // A flipped byte in the first block's data fails its checksum.
  Bytes bad = frame;
  bad[15 + 4 + 10] ^= 0x01;
  auto rb = Decompress(CompressionType::kLz4, bad, kDefaultMaxDecompressedBytes);
  ASSERT_FALSE(rb.ok());
  EXPECT_THAT(rb.status().message(), HasSubstr("lz4: block checksum mismatch at byte"));

  const Bytes ours = MustCompress(CompressionType::kLz4, input);
  LZ4F_dctx* dctx = nullptr;
  ASSERT_FALSE(LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)));
  Bytes decoded(input.size() + 16);
  size_t dst_size = decoded.size();
  size_t src_size = ours.size();
  const size_t rc =
      LZ4F_decompress(dctx, decoded.data(), &dst_size, ours.data(), &src_size, nullptr);
  LZ4F_freeDecompressionContext(dctx);
  ASSERT_FALSE(LZ4F_isError(rc)) << LZ4F_getErrorName(rc);
  EXPECT_EQ(rc, 0u);
  decoded.resize(dst_size);
  EXPECT_EQ(decoded, input);
}

// ---- zstd ----

TEST(ZstdTest, TwoConcatenatedFrames) {
  const Bytes a = MustCompress(CompressionType::kZstd, FromString("frame one, "));
  const Bytes b = MustCompress(CompressionType::kZstd, FromString("frame two"));
  auto r = Decompress(CompressionType::kZstd, Concat(a, b), 100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, FromString("frame one, frame two"));
}

TEST(ZstdTest, NotAllowedBeforeMagic2) {
  const Bytes frame = MustCompress(CompressionType::kZstd, FromString("abc"));
  for (int8_t magic : {0, 1}) {
    auto r = Decompress(CompressionType::kZstd, frame, 100, magic);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("zstd: compression is not allowed with magic"));
    EXPECT_FALSE(Compress(CompressionType::kZstd, FromString("abc"), magic).ok());
  }
}

// A frame whose header claims 1 GiB of content (but holds 300000) must
// not make the reader allocate the claim: it stops at the limit, or fails as
// corrupt when the frame ends short of its claim.
TEST(ZstdTest, ContentSizeClaimIsNotTrusted) {
  const Bytes input = SampleData(300000);
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
  Bytes frame(ZSTD_compressBound(input.size()));
  const size_t n = ZSTD_compress2(cctx, frame.data(), frame.size(), input.data(), input.size());
  ZSTD_freeCCtx(cctx);
  ASSERT_FALSE(ZSTD_isError(n));
  frame.resize(n);
  ASSERT_EQ(frame[4], 0x00);                     // FHD: no content size, not single-segment
  frame[4] = 0x80;                               // FHD: 4-byte content size field
  const Bytes claim = {0x00, 0x00, 0x00, 0x40};  // 1 GiB, little-endian
  frame.insert(frame.begin() + 6, claim.begin(), claim.end());

  auto small = Decompress(CompressionType::kZstd, frame, 1000);
  EXPECT_EQ(small.status().code(), StatusCode::kTooLarge) << small.status().ToString();
  auto lie = Decompress(CompressionType::kZstd, frame, kDefaultMaxDecompressedBytes);
  ASSERT_FALSE(lie.ok());
  EXPECT_TRUE(lie.status().IsCorruption()) << lie.status().ToString();
  EXPECT_THAT(lie.status().message(), HasSubstr("zstd: "));
}

TEST(ZstdTest, TrailingGarbageAfterFrameIsCorruption) {
  const Bytes a = MustCompress(CompressionType::kZstd, FromString("abc"));
  auto r = Decompress(CompressionType::kZstd, Concat(a, FromString("junk")), 100);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption());
  EXPECT_THAT(r.status().message(), HasSubstr("zstd: "));
}

// Each thread reuses one decompression stream (zstd_codec.cc). A call that
// stops anywhere (corrupt bytes, a truncated frame, the output limit, a
// frame left half-read) must leave nothing behind for the next call on the
// same thread, and a frame with a large window must not poison the streams
// of later, small ones.
TEST(ZstdTest, ACallAfterAnyFailureDecodesFromAFreshState) {
  const Bytes good_input = SampleData(200000, 3);
  const Bytes good = MustCompress(CompressionType::kZstd, good_input);
  const Bytes big_input = SampleData(size_t(12) << 20, 5);
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, 25);  // a 32 MiB window
  Bytes big(ZSTD_compressBound(big_input.size()));
  const size_t n = ZSTD_compress2(cctx, big.data(), big.size(), big_input.data(), big_input.size());
  ZSTD_freeCCtx(cctx);
  ASSERT_FALSE(ZSTD_isError(n));
  big.resize(n);

  Bytes garbage = good;
  for (size_t i = 8; i < garbage.size(); i += 97) garbage[i] ^= 0x5a;
  const Bytes truncated(good.begin(), good.begin() + std::ptrdiff_t(good.size() / 2));
  const std::vector<std::pair<Bytes, size_t>> failing = {
      {garbage, kDefaultMaxDecompressedBytes},
      {truncated, kDefaultMaxDecompressedBytes},
      {good, 1000},  // stops at the limit with most of the frame unread
      {Concat(good, FromString("junk")), kDefaultMaxDecompressedBytes},
  };
  for (int round = 0; round < 3; ++round) {
    for (const auto& [input, limit] : failing) {
      EXPECT_FALSE(Decompress(CompressionType::kZstd, input, limit).ok());
      auto r = Decompress(CompressionType::kZstd, good, kDefaultMaxDecompressedBytes);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, good_input);
    }
    auto large = Decompress(CompressionType::kZstd, big, size_t(64) << 20);
    ASSERT_TRUE(large.ok()) << large.status().ToString();
    EXPECT_EQ(*large, big_input);
    auto r = Decompress(CompressionType::kZstd, good, kDefaultMaxDecompressedBytes);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, good_input);
  }
}

// The same stream per thread, not per process: threads decoding at once each
// get their own.
TEST(ZstdTest, ThreadsDecodingAtOnceEachGetTheirOwnStream) {
  std::vector<Bytes> inputs;
  std::vector<Bytes> frames;
  for (uint32_t t = 0; t < 4; ++t) {
    inputs.push_back(SampleData(100000 + t * 1000, 20 + t));
    frames.push_back(MustCompress(CompressionType::kZstd, inputs.back()));
  }
  std::vector<int> failures(inputs.size(), 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < inputs.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        auto r = Decompress(CompressionType::kZstd, frames[t], kDefaultMaxDecompressedBytes);
        if (!r.ok() || *r != inputs[t]) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_THAT(failures, ::testing::Each(0));
}

}  // namespace
}  // namespace daruma
