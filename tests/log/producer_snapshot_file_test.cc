// Producer snapshot codec (spec §9.7): exact bytes, round trips, and one case
// per kind of corruption.
#include "log/producer_snapshot_file.h"

#include <gtest/gtest.h>

#include <limits>

#include "common/crc32c.h"
#include "common/file_system.h"
#include "log/producer_snapshot_order.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

ProducerSnapshotEntry SampleEntry() {
  ProducerSnapshotEntry e;
  e.producer_id = 0x0102030405060708;
  e.epoch = 0x090A;
  e.last_sequence = 0x0B0C0D0E;
  e.last_offset = 0x0F10111213141516;
  e.offset_delta = 0x1718191A;
  e.timestamp = 0x1B1C1D1E1F202122;
  e.coordinator_epoch = 0x23242526;
  e.current_txn_first_offset = 0x2728292A2B2C2D2E;
  return e;
}

std::string AsString(const Bytes& b) {
  return std::string(b.begin(), b.end());
}

// Re-stores a valid CRC over [6, end) after a test edited the bytes.
void FixCrc(std::string* s) {
  const uint32_t crc = Crc32c(s->data() + 6, s->size() - 6);
  StoreBe32(reinterpret_cast<uint8_t*>(s->data()) + 2, crc);
}

TEST(ProducerSnapshotFileTest, EmptySnapshotIsTenHandComputedBytes) {
  const Bytes bytes = EncodeProducerSnapshot({});
  // version 1, CRC-32C of the four zero count bytes (0x48674BC7), count 0.
  const Bytes expected = {0x00, 0x01, 0x48, 0x67, 0x4B, 0xC7, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(bytes, expected);
}

TEST(ProducerSnapshotFileTest, EntryFieldsAreBigEndianAtSpecPositions) {
  const Bytes bytes = EncodeProducerSnapshot({SampleEntry()});
  ASSERT_EQ(bytes.size(), 10u + 46u);
  EXPECT_EQ(bytes[0], 0x00);
  EXPECT_EQ(bytes[1], 0x01);
  EXPECT_EQ(LoadBe32(bytes.data() + 2), Crc32c(bytes.data() + 6, bytes.size() - 6));
  EXPECT_EQ(LoadBe32(bytes.data() + 6), 1u);
  // The sample's bytes count up from 0x01 through the 46 entry bytes.
  for (size_t i = 0; i < 46; ++i) {
    EXPECT_EQ(bytes[10 + i], uint8_t(i + 1)) << "entry byte " << i;
  }
}

TEST(ProducerSnapshotFileTest, DecodeRoundTripsSeveralEntriesInOrder) {
  ProducerSnapshotEntry a = SampleEntry();
  ProducerSnapshotEntry b;
  b.producer_id = 7;
  b.epoch = 3;
  const std::vector<ProducerSnapshotEntry> entries = {a, b, a};
  const Bytes bytes = EncodeProducerSnapshot(entries);
  auto decoded = DecodeProducerSnapshot(bytes, "x.snapshot");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, entries);
}

TEST(ProducerSnapshotFileTest, WriteThenReadThroughFileSystem) {
  TempDir dir;
  const std::string path = dir.Join("00000000000000000042.snapshot");
  // A longer pre-existing file must not leave trailing bytes behind.
  WriteStringToFile(path, std::string(500, 'x'));
  ASSERT_TRUE(WriteProducerSnapshot(FileSystem::Default(), path, {SampleEntry()}).ok());
  EXPECT_EQ(ReadFileToString(path), AsString(EncodeProducerSnapshot({SampleEntry()})));
  auto read = ReadProducerSnapshot(FileSystem::Default(), path);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ(read->front(), SampleEntry());
}

TEST(ProducerSnapshotFileTest, MissingFileIsNotCorruption) {
  TempDir dir;
  auto read = ReadProducerSnapshot(FileSystem::Default(), dir.Join("1.snapshot"));
  ASSERT_FALSE(read.ok());
  EXPECT_FALSE(read.status().IsCorruption());
}

// ---- Corruption catalogue -------------------------------------------------

Status DecodeString(const std::string& s) {
  return DecodeProducerSnapshot(AsBytes(s), "/d/00000000000000000009.snapshot").status();
}

TEST(ProducerSnapshotFileTest, ShorterThanHeaderIsCorrupt) {
  const Status st = DecodeString(std::string("\x00\x01\x00", 3));
  ASSERT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("/d/00000000000000000009.snapshot"), std::string::npos);
  EXPECT_NE(st.message().find("file is 3 bytes, shorter than the 10-byte header"),
            std::string::npos)
      << st.message();
}

TEST(ProducerSnapshotFileTest, UnknownVersionIsCorrupt) {
  std::string s = AsString(EncodeProducerSnapshot({SampleEntry()}));
  s[1] = 2;
  const Status st = DecodeString(s);
  ASSERT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("byte 0: version: expected 1, found 2"), std::string::npos)
      << st.message();
}

TEST(ProducerSnapshotFileTest, FlippedEntryByteIsCrcMismatch) {
  const Bytes good = EncodeProducerSnapshot({SampleEntry()});
  std::string s = AsString(good);
  s[30] ^= 0x40;
  const Status st = DecodeString(s);
  ASSERT_TRUE(st.IsCorruption());
  char stored[16];
  std::snprintf(stored, sizeof(stored), "0x%08x", LoadBe32(good.data() + 2));
  EXPECT_NE(st.message().find("byte 2: CRC: stored " + std::string(stored)), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("over bytes [6, 56)"), std::string::npos) << st.message();
}

TEST(ProducerSnapshotFileTest, TrailingBytesBreakTheCrc) {
  std::string s = AsString(EncodeProducerSnapshot({SampleEntry()}));
  s += "junk";
  const Status st = DecodeString(s);
  ASSERT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("CRC"), std::string::npos);
  EXPECT_NE(st.message().find("[6, 60)"), std::string::npos) << st.message();
}

TEST(ProducerSnapshotFileTest, TrailingBytesUnderAValidCrcAreIgnoredLikeKafka) {
  std::string s = AsString(EncodeProducerSnapshot({SampleEntry()}));
  s += "junk";
  FixCrc(&s);
  auto decoded = DecodeProducerSnapshot(AsBytes(s), "t.snapshot");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, std::vector<ProducerSnapshotEntry>{SampleEntry()});
}

TEST(ProducerSnapshotFileTest, CountBeyondFileIsCorrupt) {
  std::string s = AsString(EncodeProducerSnapshot({SampleEntry()}));
  s[9] = 2;  // two entries declared, one present
  FixCrc(&s);
  const Status st = DecodeString(s);
  ASSERT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("byte 6: entry count 2 needs 92 bytes of entries, file has 46"),
            std::string::npos)
      << st.message();
}

TEST(ProducerSnapshotFileTest, NegativeCountIsCorrupt) {
  std::string s = AsString(EncodeProducerSnapshot({}));
  StoreBe32(reinterpret_cast<uint8_t*>(s.data()) + 6, uint32_t(-1));
  FixCrc(&s);
  const Status st = DecodeString(s);
  ASSERT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("entry count -1"), std::string::npos) << st.message();
}

// ---- Conversions ------------------------------------------------------------

TEST(ProducerSnapshotFileTest, EntryWithoutLastOffsetRestoresNoBatch) {
  ProducerSnapshotEntry e;
  e.producer_id = 5;
  e.epoch = 2;
  e.timestamp = 1000;
  e.coordinator_epoch = 7;
  const ProducerStateEntry entry = FromSnapshotEntry(e);
  EXPECT_TRUE(entry.IsEmpty());
  EXPECT_EQ(entry.producer_epoch(), 2);
  EXPECT_EQ(entry.coordinator_epoch(), 7);
  EXPECT_EQ(entry.last_timestamp(), 1000);
  EXPECT_FALSE(entry.current_txn_first_offset());
  EXPECT_EQ(ToSnapshotEntry(entry), e);  // lastSeq -1, lastOffset -1, delta 0
}

TEST(ProducerSnapshotFileTest, CachedBatchFirstSequenceWrapsAround) {
  ProducerSnapshotEntry e;
  e.producer_id = 5;
  e.epoch = 0;
  e.last_sequence = 2;
  e.last_offset = 105;
  e.offset_delta = 5;
  e.timestamp = 99;
  e.current_txn_first_offset = 100;
  const ProducerStateEntry entry = FromSnapshotEntry(e);
  ASSERT_EQ(entry.batches().size(), 1u);
  // Sequences INT32_MAX-2 .. INT32_MAX, 0, 1, 2.
  EXPECT_EQ(entry.FirstSeq(), std::numeric_limits<int32_t>::max() - 2);
  EXPECT_EQ(entry.FirstDataOffset(), 100);
  EXPECT_EQ(entry.current_txn_first_offset(), 100);
  EXPECT_EQ(ToSnapshotEntry(entry), e);
}

// ---- Kafka's HashMap order --------------------------------------------------

TEST(ProducerSnapshotOrderTest, BucketsThenInsertionOrderAsInTheTransactionalFixture) {
  // 2000 and 4000 share bucket 0 of 16, 3000 is in bucket 8: Kafka wrote
  // 2000, 4000, 3000.
  EXPECT_EQ(JavaHashMapBucket(2000, 16), 0u);
  EXPECT_EQ(JavaHashMapBucket(4000, 16), 0u);
  EXPECT_EQ(JavaHashMapBucket(3000, 16), 8u);
  EXPECT_EQ(JavaHashMapIterationOrder({{2000, 0}, {3000, 1}, {4000, 2}}, 16),
            (std::vector<int64_t>{2000, 4000, 3000}));
  EXPECT_EQ(JavaHashMapIterationOrder({{4000, 0}, {3000, 1}, {2000, 2}}, 16),
            (std::vector<int64_t>{4000, 2000, 3000}));
}

TEST(ProducerSnapshotOrderTest, HashFoldsHighBitsLikeJava) {
  // Long.hashCode(2^32) = 1; spread(1) = 1.
  EXPECT_EQ(JavaHashMapBucket(int64_t(1) << 32, 16), 1u);
  // Long.hashCode(0x10000) = 0x10000; spread = 0x10001 -> bucket 1.
  EXPECT_EQ(JavaHashMapBucket(0x10000, 16), 1u);
  // -1: hashCode 0 -> bucket 0.
  EXPECT_EQ(JavaHashMapBucket(-1, 16), 0u);
}

TEST(ProducerSnapshotOrderTest, CapacityDoublesPastThreeQuarters) {
  EXPECT_EQ(JavaHashMapCapacity(0), 16u);
  EXPECT_EQ(JavaHashMapCapacity(12), 16u);
  EXPECT_EQ(JavaHashMapCapacity(13), 32u);
  EXPECT_EQ(JavaHashMapCapacity(24), 32u);
  EXPECT_EQ(JavaHashMapCapacity(25), 64u);
}

}  // namespace
}  // namespace daruma
