// ScrubSegment (recovery/segment_scrubber.h): the catalogue of damage one
// scrub of an old segment finds, one case each, with the damaged byte range
// and the trusted offsets around it; then what is not damage (a file gone,
// a file removed mid-scan, a stop) and the rate limit on a fake clock.
#include "recovery/segment_scrubber.h"

#include <gtest/gtest.h>

#include "common/bytes.h"
#include "common/clock.h"
#include "log/log_file_names.h"
#include "record/record_batch_builder.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::TempDir;

constexpr int64_t kBase = 100;
constexpr int kScrubBatches = 5;
constexpr int kRecordsPerBatch = 3;
constexpr int64_t kNextBase = kBase + kScrubBatches * kRecordsPerBatch;  // 115

Bytes ScrubBatch(int64_t base, int32_t epoch = 0) {
  BatchBuilderOptions o;
  o.base_offset = base;
  o.partition_leader_epoch = epoch;
  std::vector<RecordInput> records;
  for (int i = 0; i < kRecordsPerBatch; ++i) {
    RecordInput r;
    r.timestamp = 1700000000000 + i;
    r.key = "k" + std::to_string(i);
    r.value = std::string(200, 'v');
    records.push_back(std::move(r));
  }
  auto b = BuildRecordBatch(o, records);
  EXPECT_TRUE(b.ok());
  return *b;
}

// A segment of kScrubBatches batches at base kBase, and where each batch starts.
struct Segment {
  std::string path;
  Bytes bytes;
  std::vector<int64_t> positions;  // plus the end
};

class SegmentScrubberTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seg_.path = LogFileName(dir_.path(), kBase);
    for (int i = 0; i < kScrubBatches; ++i) {
      seg_.positions.push_back(int64_t(seg_.bytes.size()));
      Bytes b = ScrubBatch(kBase + i * kRecordsPerBatch);
      seg_.bytes.insert(seg_.bytes.end(), b.begin(), b.end());
    }
    seg_.positions.push_back(int64_t(seg_.bytes.size()));
    Write();
  }
  void Write() {
    testing::WriteStringToFile(seg_.path, std::string(seg_.bytes.begin(), seg_.bytes.end()));
  }
  SegmentScrubParams Params() const {
    SegmentScrubParams p;
    p.path = seg_.path;
    p.base_offset = kBase;
    p.next_base = kNextBase;
    p.size = int64_t(seg_.bytes.size());
    p.chunk_bytes = 4096;
    return p;
  }
  SegmentScrubResult Scrub(const SegmentScrubParams& p) {
    auto r = ScrubSegment(FileSystem::Default(), p);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : SegmentScrubResult{};
  }
  SegmentScrubResult Scrub() { return Scrub(Params()); }
  int64_t Pos(int batch) const { return seg_.positions[size_t(batch)]; }

  TempDir dir_;
  Segment seg_;
};

TEST_F(SegmentScrubberTest, ValidSegmentHasNoDamage) {
  SegmentScrubResult r = Scrub();
  EXPECT_TRUE(r.completed);
  EXPECT_EQ(r.batches, kScrubBatches);
  EXPECT_EQ(r.bytes, int64_t(seg_.bytes.size()));
  EXPECT_TRUE(r.damage.empty());
}

TEST_F(SegmentScrubberTest, FlippedPayloadBitIsThatBatchOnly) {
  seg_.bytes[size_t(Pos(2) + 100)] ^= 0x10;
  Write();
  SegmentScrubResult r = Scrub();
  EXPECT_TRUE(r.completed);
  EXPECT_EQ(r.batches, kScrubBatches - 1);
  ASSERT_EQ(r.damage.size(), 1u);
  const ScrubDamage& d = r.damage[0];
  EXPECT_EQ(d.kind, DamageKind::kBadCrc);
  EXPECT_EQ(d.position, Pos(2));
  EXPECT_EQ(d.end_position, Pos(3));
  EXPECT_EQ(d.first_offset, kBase + 6);
  EXPECT_EQ(d.end_offset, kBase + 9);
  EXPECT_NE(d.what.find(seg_.path), std::string::npos) << d.what;
}

TEST_F(SegmentScrubberTest, TwoDamagedBatchesApartAreTwoRanges) {
  seg_.bytes[size_t(Pos(0) + 90)] ^= 0x01;
  seg_.bytes[size_t(Pos(3) + 90)] ^= 0x01;
  Write();
  SegmentScrubResult r = Scrub();
  ASSERT_EQ(r.damage.size(), 2u);
  EXPECT_EQ(r.damage[0].position, 0);
  EXPECT_EQ(r.damage[0].first_offset, kBase);
  EXPECT_EQ(r.damage[0].end_offset, kBase + 3);
  EXPECT_EQ(r.damage[1].position, Pos(3));
  EXPECT_EQ(r.damage[1].end_position, Pos(4));
}

TEST_F(SegmentScrubberTest, AdjacentDamagedBatchesMergeIntoOneRange) {
  seg_.bytes[size_t(Pos(1) + 90)] ^= 0x01;
  seg_.bytes[size_t(Pos(2) + 90)] ^= 0x01;
  Write();
  SegmentScrubResult r = Scrub();
  ASSERT_EQ(r.damage.size(), 1u);
  EXPECT_EQ(r.damage[0].position, Pos(1));
  EXPECT_EQ(r.damage[0].end_position, Pos(3));
  EXPECT_EQ(r.damage[0].first_offset, kBase + 3);
  EXPECT_EQ(r.damage[0].end_offset, kBase + 9);
}

TEST_F(SegmentScrubberTest, BadMagicIsThatBatch) {
  seg_.bytes[size_t(Pos(1) + 16)] = 7;
  Write();
  SegmentScrubResult r = Scrub();
  ASSERT_EQ(r.damage.size(), 1u);
  EXPECT_EQ(r.damage[0].kind, DamageKind::kBadMagic);
  EXPECT_EQ(r.damage[0].position, Pos(1));
  EXPECT_EQ(r.damage[0].end_position, Pos(2));
}

TEST_F(SegmentScrubberTest, ZeroedSizeIsDamageToTheEndOfTheSegment) {
  StoreBe32(&seg_.bytes[size_t(Pos(3) + 8)], 0);
  Write();
  SegmentScrubResult r = Scrub();
  ASSERT_EQ(r.damage.size(), 1u);
  EXPECT_EQ(r.damage[0].kind, DamageKind::kBadSize);
  EXPECT_EQ(r.damage[0].position, Pos(3));
  EXPECT_EQ(r.damage[0].end_position, Pos(kScrubBatches));
  EXPECT_EQ(r.damage[0].first_offset, kBase + 9);
  EXPECT_EQ(r.damage[0].end_offset, kNextBase);
}

TEST_F(SegmentScrubberTest, BaseOffsetFlippedDownCoversItAndTheBatchBefore) {
  // baseOffset is outside the CRC: the batch still validates.
  SetBatchBaseOffset(std::span<uint8_t>(&seg_.bytes[size_t(Pos(3))], size_t(Pos(4) - Pos(3))),
                     kBase + 1);
  Write();
  SegmentScrubResult r = Scrub();
  ASSERT_EQ(r.damage.size(), 1u) << r.damage[0].what;
  EXPECT_EQ(r.damage[0].kind, DamageKind::kNonMonotonicOffset);
  EXPECT_EQ(r.damage[0].position, Pos(2));
  EXPECT_EQ(r.damage[0].end_position, Pos(4));
  EXPECT_EQ(r.damage[0].first_offset, kBase + 6);
  EXPECT_EQ(r.damage[0].end_offset, kBase + 12);
}

TEST_F(SegmentScrubberTest, OffsetsReachingTheNextSegmentAreOutsideIt) {
  SetBatchBaseOffset(std::span<uint8_t>(&seg_.bytes[size_t(Pos(4))], size_t(Pos(5) - Pos(4))),
                     kNextBase);
  Write();
  SegmentScrubResult r = Scrub();
  ASSERT_EQ(r.damage.size(), 1u);
  EXPECT_EQ(r.damage[0].kind, DamageKind::kOffsetOutsideSegment);
  EXPECT_EQ(r.damage[0].position, Pos(4));
  EXPECT_EQ(r.damage[0].end_offset, kNextBase);
}

TEST_F(SegmentScrubberTest, LeaderEpochGoingDownCoversItAndTheBatchBefore) {
  SetBatchPartitionLeaderEpoch(
      std::span<uint8_t>(&seg_.bytes[size_t(Pos(1))], size_t(Pos(2) - Pos(1))), 5);
  Write();
  SegmentScrubResult r = Scrub();
  ASSERT_EQ(r.damage.size(), 1u);
  EXPECT_EQ(r.damage[0].kind, DamageKind::kLeaderEpochOrder);
  EXPECT_EQ(r.damage[0].position, Pos(1));
  EXPECT_EQ(r.damage[0].end_position, Pos(3));
}

TEST_F(SegmentScrubberTest, FileShorterThanTheSegmentIsDamageFromItsEnd) {
  SegmentScrubParams p = Params();
  seg_.bytes.resize(size_t(Pos(4)));
  Write();
  SegmentScrubResult r = Scrub(p);
  ASSERT_EQ(r.damage.size(), 1u);
  EXPECT_EQ(r.damage[0].kind, DamageKind::kBadSize);
  EXPECT_EQ(r.damage[0].position, Pos(4));
  EXPECT_EQ(r.damage[0].end_position, p.size);
}

TEST_F(SegmentScrubberTest, VanishedFileIsNotFoundNotDamage) {
  ASSERT_TRUE(FileSystem::Default()->Remove(seg_.path).ok());
  auto r = ScrubSegment(FileSystem::Default(), Params());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsNotFound()) << r.status().ToString();
}

TEST_F(SegmentScrubberTest, FileRemovedMidScanIsReadToTheEndThroughItsHandle) {
  ManualClock clock;
  bool removed = false;
  ScrubRateLimiter limiter(&clock, 1000, 512, [&](int64_t ms) {
    if (!removed) removed = FileSystem::Default()->Remove(seg_.path).ok();
    clock.Advance(ms);
    return true;
  });
  SegmentScrubParams p = Params();
  p.chunk_bytes = 512;
  p.limiter = &limiter;
  SegmentScrubResult r = Scrub(p);
  EXPECT_TRUE(removed);
  EXPECT_TRUE(r.completed);
  EXPECT_TRUE(r.damage.empty());
  EXPECT_EQ(r.batches, kScrubBatches);
}

TEST_F(SegmentScrubberTest, StopEndsTheScanWithoutFindings) {
  std::atomic<bool> stop{false};
  ManualClock clock;
  ScrubRateLimiter limiter(&clock, 1000, 1, [&](int64_t ms) {
    clock.Advance(ms);
    stop = true;
    return true;
  });
  SegmentScrubParams p = Params();
  p.chunk_bytes = 512;
  p.limiter = &limiter;
  p.stop = &stop;
  SegmentScrubResult r = Scrub(p);
  EXPECT_FALSE(r.completed);
  EXPECT_TRUE(r.damage.empty());
  EXPECT_LT(r.bytes, int64_t(seg_.bytes.size()));
}

TEST_F(SegmentScrubberTest, ReadsAreBoundedByTheRateOnTheInjectedClock) {
  ManualClock clock(1000);
  const int64_t rate = 1000, burst = 600;
  ScrubRateLimiter limiter(&clock, rate, burst, [&](int64_t ms) {
    clock.Advance(ms);
    return true;
  });
  std::atomic<int64_t> read{0};
  SegmentScrubParams p = Params();
  p.chunk_bytes = 512;
  p.limiter = &limiter;
  p.bytes_read = &read;
  SegmentScrubResult r = Scrub(p);
  ASSERT_TRUE(r.completed);
  // Progress counts every byte once; the limiter is charged for every read,
  // including a batch straddling two blocks read again with the second.
  EXPECT_EQ(read.load(), int64_t(seg_.bytes.size()));
  EXPECT_EQ(r.bytes, int64_t(seg_.bytes.size()));
  const int64_t charged = limiter.admitted_bytes();
  EXPECT_GE(charged, int64_t(seg_.bytes.size()));
  // charged <= burst + rate x elapsed, and no more waiting than one block's worth beyond that.
  const int64_t elapsed_ms = clock.NowMs() - 1000;
  EXPECT_GE(elapsed_ms, (charged - burst) * 1000 / rate);
  EXPECT_LE(elapsed_ms, (charged - burst + 512) * 1000 / rate + 1);
  EXPECT_EQ(limiter.throttled_ms(), elapsed_ms);
}

}  // namespace
}  // namespace daruma
