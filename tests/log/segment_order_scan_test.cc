// The recovery scan's checks of the header fields the batch CRC does not
// cover (issue 22 rule 1; segment_recovery_scan.h): a flipped baseOffset,
// partitionLeaderEpoch or magic ends the valid region before the damaged
// batch, also where the damage shows only at a later batch; an undamaged
// segment scans exactly as before (all its bytes valid).
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "log/segment_recovery_scan.h"
#include "record/record_batch_builder.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::MemFileSystem;

using testing::kT0;
constexpr int64_t kBase = 1000;
constexpr char kPath[] = "/d/00000000000000001000.log";

struct Segment {
  Bytes bytes;
  std::vector<int64_t> positions;  // of each batch
};

// `n` batches of `records` records each, consecutive offsets from kBase,
// leader epoch 3 for the first half and 4 after, every third one idempotent.
Segment Build(int n, int records = 2) {
  Segment s;
  int64_t offset = kBase;
  for (int i = 0; i < n; ++i) {
    BatchBuilderOptions o;
    o.base_offset = offset;
    o.partition_leader_epoch = i < n / 2 ? 3 : 4;
    if (i % 3 == 0) {
      o.producer_id = 7;
      o.producer_epoch = 0;
      o.base_sequence = i;
    }
    std::vector<RecordInput> rs;
    for (int r = 0; r < records; ++r)
      rs.push_back({kT0 + i, "k", "value-" + std::to_string(i), {}});
    auto b = BuildRecordBatch(o, rs);
    EXPECT_TRUE(b.ok());
    s.positions.push_back(int64_t(s.bytes.size()));
    s.bytes.insert(s.bytes.end(), b->begin(), b->end());
    offset += records;
  }
  return s;
}

SegmentRecoveryScan ScanBytes(const Bytes& bytes, std::optional<int64_t> next_base = std::nullopt) {
  MemFileSystem fs;
  EXPECT_TRUE(fs.CreateDir("/d").ok());
  auto f = fs.Open(kPath, OpenMode::kCreate);
  EXPECT_TRUE(f.ok());
  EXPECT_TRUE((*f)->WriteAt(0, bytes).ok());
  return ScanSegmentForRecovery(f->get(), kPath, kBase, int64_t(bytes.size()), 4096, next_base);
}

void SetBe64(Bytes& b, size_t at, int64_t v) {
  for (int i = 0; i < 8; ++i) b[at + size_t(i)] = uint8_t(uint64_t(v) >> (56 - 8 * i));
}
void SetBe32(Bytes& b, size_t at, int32_t v) {
  for (int i = 0; i < 4; ++i) b[at + size_t(i)] = uint8_t(uint32_t(v) >> (24 - 8 * i));
}

TEST(SegmentOrderScanTest, AnUndamagedSegmentIsAllValid) {
  const Segment s = Build(40);
  const SegmentRecoveryScan scan = ScanBytes(s.bytes, kBase + 80);
  EXPECT_FALSE(scan.corrupt_batch);
  EXPECT_EQ(scan.valid_bytes, int64_t(s.bytes.size()));
  EXPECT_EQ(scan.batch_count, 40);
  EXPECT_EQ(scan.next_offset, kBase + 80);
  EXPECT_EQ(scan.stop_kind, std::nullopt);
}

TEST(SegmentOrderScanTest, ABaseOffsetFlippedUpCutsAtThatBatch) {
  Segment s = Build(40);
  // Batch 10's baseOffset jumps by 2^23: batch 11 then seems to go backwards.
  SetBe64(s.bytes, size_t(s.positions[10]), kBase + 20 + (int64_t(1) << 23));
  const SegmentRecoveryScan scan = ScanBytes(s.bytes);
  EXPECT_TRUE(scan.corrupt_batch);
  EXPECT_TRUE(scan.uncovered_field_damage);
  EXPECT_EQ(scan.valid_bytes, s.positions[10]);
  EXPECT_EQ(scan.batch_count, 10);
  EXPECT_EQ(scan.next_offset, kBase + 20);
  EXPECT_NE(scan.stop_reason.find("baseOffset"), std::string::npos) << scan.stop_reason;
  EXPECT_NE(scan.stop_reason.find(kPath), std::string::npos) << scan.stop_reason;
  EXPECT_EQ(scan.stop_kind, DamageKind::kNonMonotonicOffset);
}

TEST(SegmentOrderScanTest, ABaseOffsetFlippedDownCutsAtTheFirstBatchItOverlaps) {
  Segment s = Build(40);
  // Batch 30 now claims offsets batch 25 holds: 25 is as suspect as 30.
  SetBe64(s.bytes, size_t(s.positions[30]), kBase + 50);
  const SegmentRecoveryScan scan = ScanBytes(s.bytes);
  EXPECT_TRUE(scan.uncovered_field_damage);
  EXPECT_EQ(scan.valid_bytes, s.positions[25]);
  EXPECT_EQ(scan.stop_kind, DamageKind::kNonMonotonicOffset);
  // Below the segment's base: that batch itself.
  s = Build(40);
  SetBe64(s.bytes, size_t(s.positions[5]), kBase - 100);
  EXPECT_EQ(ScanBytes(s.bytes).valid_bytes, s.positions[5]);
  EXPECT_EQ(ScanBytes(s.bytes).stop_kind, DamageKind::kOffsetOutsideSegment);
}

TEST(SegmentOrderScanTest, OffsetsReachingTheNextSegmentAreCut) {
  Segment s = Build(40);
  SetBe64(s.bytes, size_t(s.positions[39]), kBase + 5000);  // the last batch: no later evidence
  EXPECT_FALSE(ScanBytes(s.bytes).corrupt_batch);           // the active segment keeps it
  const SegmentRecoveryScan scan = ScanBytes(s.bytes, kBase + 80);
  EXPECT_TRUE(scan.uncovered_field_damage);
  EXPECT_EQ(scan.valid_bytes, s.positions[39]);
  EXPECT_EQ(scan.stop_kind, DamageKind::kOffsetOutsideSegment);
}

// Found by recovery_fuzz (a legacy message at offset 2^63 - 1): offsets that
// reach Long.MAX_VALUE leave no next offset, and a baseOffset + lastOffsetDelta
// past it wraps (Java arithmetic); either is cut, even at the last batch.
TEST(SegmentOrderScanTest, OffsetsThatLeaveNoNextOffsetAreCut) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (const int64_t base : {kMax - 1, kMax}) {  // 2 records: last offset kMax, or wrapped
    Segment s = Build(40);
    SetBe64(s.bytes, size_t(s.positions[39]), base);
    const SegmentRecoveryScan scan = ScanBytes(s.bytes);
    EXPECT_TRUE(scan.corrupt_batch) << base;
    EXPECT_EQ(scan.valid_bytes, s.positions[39]) << base;
    EXPECT_EQ(scan.next_offset, kBase + 78) << base;
    EXPECT_EQ(scan.stop_kind, DamageKind::kOffsetOverflow) << base;
    EXPECT_NE(scan.stop_reason.find("no next offset"), std::string::npos) << scan.stop_reason;
  }
}

TEST(SegmentOrderScanTest, LeaderEpochsThatDecreaseOrGoBelowMinusOneAreCut) {
  Segment s = Build(40);
  SetBe32(s.bytes, size_t(s.positions[8]) + 12, 9);  // flipped up; batch 9 has 3 again
  SegmentRecoveryScan scan = ScanBytes(s.bytes);
  EXPECT_TRUE(scan.uncovered_field_damage);
  EXPECT_EQ(scan.valid_bytes, s.positions[8]);
  EXPECT_NE(scan.stop_reason.find("partitionLeaderEpoch"), std::string::npos);
  EXPECT_EQ(scan.stop_kind, DamageKind::kLeaderEpochOrder);
  s = Build(40);
  SetBe32(s.bytes, size_t(s.positions[30]) + 12, 3);           // flipped down below 4
  EXPECT_EQ(ScanBytes(s.bytes).valid_bytes, s.positions[20]);  // the first batch of epoch 4
  s = Build(40);
  SetBe32(s.bytes, size_t(s.positions[30]) + 12, 2);  // below every epoch of the segment
  EXPECT_EQ(ScanBytes(s.bytes).valid_bytes, 0);
  s = Build(40);
  SetBe32(s.bytes, size_t(s.positions[12]) + 12, int32_t(0x80000003));  // sign bit
  EXPECT_EQ(ScanBytes(s.bytes).valid_bytes, s.positions[12]);
  EXPECT_EQ(ScanBytes(s.bytes).stop_kind, DamageKind::kBadHeader);
}

TEST(SegmentOrderScanTest, AMagicOtherThanTwoOnAV2BatchIsCut) {
  for (uint8_t magic : {3, 6, 10, 18}) {
    Segment s = Build(10);
    s.bytes[size_t(s.positions[4]) + 16] = magic;
    const SegmentRecoveryScan scan = ScanBytes(s.bytes);
    EXPECT_TRUE(scan.corrupt_batch) << int(magic);
    EXPECT_EQ(scan.valid_bytes, s.positions[4]) << int(magic);
    EXPECT_NE(scan.stop_reason.find("magic"), std::string::npos) << scan.stop_reason;
    EXPECT_EQ(scan.stop_kind, DamageKind::kBadMagic);
  }
}

// Over many seeds, one random bit of one CRC-uncovered header field
// (baseOffset, partitionLeaderEpoch, magic, batchLength) of one batch is
// flipped. Whatever the scan keeps is a prefix of the undamaged batches
// (never the damaged one), except where nothing in the segment can
// contradict the flip: the last batch (with no next segment), or the first
// batch's epoch lowered to a smaller valid epoch (only an earlier segment
// could show that).
TEST(SegmentOrderScanTest, NoDamagedBatchIsKeptOverManySeeds) {
  const Segment clean = Build(24, 1);
  int cut_before_damage = 0;
  int undetectable = 0;
  for (uint32_t seed = 0; seed < 2000; ++seed) {
    std::mt19937 rng(seed);
    Segment s = clean;
    const size_t victim = rng() % s.positions.size();
    const size_t field_starts[] = {0, 8, 12, 16};  // baseOffset, batchLength, epoch, magic
    const size_t field_bits[] = {64, 32, 32, 8};
    const size_t f = rng() % 4;
    const size_t bit = rng() % field_bits[f];
    s.bytes[size_t(s.positions[victim]) + field_starts[f] + bit / 8] ^= uint8_t(1u << (bit % 8));
    const bool last = victim + 1 == s.positions.size();
    const SegmentRecoveryScan scan =
        ScanBytes(s.bytes, last ? std::optional<int64_t>() : kBase + 24);
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " batch " << victim << " field " << f
                                      << " bit " << bit << ": " << scan.stop_reason);
    if (scan.valid_bytes <= s.positions[victim]) {
      ++cut_before_damage;
      // What is kept is whole undamaged batches.
      EXPECT_TRUE(std::find(s.positions.begin(), s.positions.end(), scan.valid_bytes) !=
                  s.positions.end());
      continue;
    }
    // Kept: only a flip nothing in the segment can contradict.
    const bool first_epoch_lowered =
        victim == 0 && f == 2 && RecordBatchView(ByteSpan(s.bytes)).partition_leader_epoch() >= 0 &&
        RecordBatchView(ByteSpan(s.bytes)).partition_leader_epoch() < 3;
    EXPECT_TRUE(last || first_epoch_lowered) << "a damaged batch was kept";
    ++undetectable;
  }
  EXPECT_GT(cut_before_damage, 1900);
  EXPECT_LT(undetectable, 100);
}

}  // namespace
}  // namespace daruma
