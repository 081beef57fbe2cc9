// SplitSegmentScan (segment_scan_split.h): a segment scanned in two parts and
// joined must give what ScanSegmentForRecovery gives for the whole segment:
// the same valid bytes, offsets, index points, maximum timestamp and offset
// gap, retained batches whose positions, ordinals and running values are
// those of the whole file, and a replay that leaves the state replaying every
// batch leaves. Where the parts cannot be joined (P inside a batch, damage,
// an order broken across P) Join's result is the whole scan's.
#include "log/segment_scan_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "log/scan_test_streams.h"
#include "record/record_batch.h"
#include "record/record_batch_builder.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::Describe;
using testing::kScanBase;
using testing::kT0;
using testing::MemFileSystem;
using testing::Outcome;
using testing::Replay;
using testing::ShortTransactions;
using testing::StreamGenerator;

constexpr char kSplitPath[] = "/d/00000000000000001000.log";

class SegmentScanSplitTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fs_.CreateDir("/d").ok()); }
  // The knobs some tests lower, back to their defaults whatever failed.
  void TearDown() override {
    SplitSegmentScan::set_min_split_bytes_for_testing(SplitSegmentScan::kMinSplitBytes);
    SplitSegmentScan::set_max_marks_for_testing(SplitSegmentScan::kMaxMarks);
  }

  // Writes `batches` as the segment; starts_ gets each batch's position.
  void Write(const std::vector<Bytes>& batches) {
    batches_ = batches;
    Bytes file;
    starts_.clear();
    for (const Bytes& b : batches) {
      starts_.push_back(int64_t(file.size()));
      file.insert(file.end(), b.begin(), b.end());
    }
    size_ = int64_t(file.size());
    auto f = fs_.Open(kSplitPath, OpenMode::kCreate);
    ASSERT_TRUE(f.ok());
    file_ = std::move(*f);
    ASSERT_TRUE(file_->WriteAt(0, file).ok());
  }

  SegmentRecoveryScan Whole(int32_t interval) const {
    return ScanSegmentForRecovery(file_.get(), kSplitPath, kScanBase, size_, interval);
  }

  // What a SplitSegmentScan's two parts and join gave.
  struct Parts {
    std::optional<int64_t> point;  // P, if the segment was split
    int64_t second_batches = 0;    // the second part's
    SegmentRecoveryScan joined;
    bool rescanned = false;  // Join fell back to a whole scan
  };
  // Scans in two parts at `split_at`, or where SplitSegmentScan finds P
  // when nullopt, and joins them.
  Parts ScanParts(std::optional<int64_t> split_at, int32_t interval) const {
    SplitSegmentScan split(file_.get(), kSplitPath, kScanBase, size_, interval, std::nullopt,
                           split_at);
    SegmentScanPart first = split.ScanFirst();
    SegmentScanPart second = split.ScanSecond();
    Parts out;
    out.point = split.split_point();
    out.second_batches = second.scan.batch_count;
    out.joined = split.Join(std::move(first), std::move(second));
    out.rescanned = split.rescanned();
    return out;
  }

  SegmentRecoveryScan Split(int64_t p, int32_t interval, bool* rescanned) const {
    Parts parts = ScanParts(p, interval);
    *rescanned = parts.rescanned;
    return std::move(parts.joined);
  }

  void Flip(size_t batch, size_t byte) {
    Bytes b(1);
    const uint64_t at = uint64_t(starts_[batch]) + byte;
    ASSERT_TRUE(file_->ReadAt(at, b).ok());
    b[0] ^= 0x5a;
    ASSERT_TRUE(file_->WriteAt(at, b).ok());
  }

  MemFileSystem fs_;
  std::unique_ptr<File> file_;
  std::vector<Bytes> batches_;
  std::vector<int64_t> starts_;
  int64_t size_ = 0;
};

void ExpectSameScan(const SegmentRecoveryScan& want, const SegmentRecoveryScan& got) {
  EXPECT_EQ(got.valid_bytes, want.valid_bytes);
  EXPECT_EQ(got.batch_count, want.batch_count);
  EXPECT_EQ(got.next_offset, want.next_offset);
  EXPECT_EQ(got.v2_next_offset, want.v2_next_offset);
  EXPECT_EQ(got.max_timestamp, want.max_timestamp);
  EXPECT_EQ(got.shallow_offset_of_max, want.shallow_offset_of_max);
  EXPECT_EQ(got.stop_reason, want.stop_reason);
  EXPECT_EQ(got.stop_kind, want.stop_kind);
  EXPECT_EQ(got.reader_stop, want.reader_stop);
  EXPECT_EQ(got.corrupt_batch, want.corrupt_batch);
  EXPECT_EQ(got.uncovered_field_damage, want.uncovered_field_damage);
  EXPECT_EQ(got.error.code(), want.error.code());
  ASSERT_EQ(got.first_gap.has_value(), want.first_gap.has_value());
  if (want.first_gap) {
    EXPECT_EQ(got.first_gap->position, want.first_gap->position);
    EXPECT_EQ(got.first_gap->previous_last, want.first_gap->previous_last);
    EXPECT_EQ(got.first_gap->base_offset, want.first_gap->base_offset);
  }
  ASSERT_EQ(got.index_points.size(), want.index_points.size());
  for (size_t i = 0; i < want.index_points.size(); ++i) {
    const auto& w = want.index_points[i];
    const auto& g = got.index_points[i];
    EXPECT_EQ(g.offset, w.offset) << "point " << i;
    EXPECT_EQ(g.position, w.position) << "point " << i;
    EXPECT_EQ(g.max_timestamp, w.max_timestamp) << "point " << i;
    EXPECT_EQ(g.shallow_offset_of_max, w.shallow_offset_of_max) << "point " << i;
  }
}

Outcome ReplayRetained(const SegmentRecoveryScan& scan) {
  std::vector<ByteSpan> spans;
  std::vector<int64_t> local_lsos;
  for (const SegmentRecoveryScan::Batch& b : scan.batches) {
    spans.push_back(scan.BytesOf(b));
    local_lsos.push_back(b.local_lso);
  }
  return Replay(spans, &local_lsos);
}

// Each retained batch of `scan` carries the whole file's values for its
// ordinal: position, end, the running maximum timestamp (moved only by a
// strictly larger one) and the v2 next offset before it.
void ExpectRetainedValuesOfTheFile(const std::vector<Bytes>& batches,
                                   const SegmentRecoveryScan& scan) {
  std::vector<int64_t> position, max_ts, shallow, prev_next;
  int64_t at = 0;
  int64_t ts = -1;
  int64_t sh = -1;
  int64_t next = kScanBase;
  for (const Bytes& b : batches) {
    RecordBatchView v(b);
    prev_next.push_back(next);
    if (v.max_timestamp() > ts) {
      ts = v.max_timestamp();
      sh = v.last_offset();
    }
    position.push_back(at);
    max_ts.push_back(ts);
    shallow.push_back(sh);
    at += int64_t(b.size());
    next = v.last_offset() + 1;
  }
  for (size_t i = 0; i < scan.batches.size(); ++i) {
    const SegmentRecoveryScan::Batch& r = scan.batches[i];
    const size_t k = size_t(r.ordinal);
    ASSERT_LT(k, batches.size());
    if (i > 0) {
      ASSERT_LT(scan.batches[i - 1].ordinal, r.ordinal);
    }
    EXPECT_EQ(r.position, position[k]) << "ordinal " << k;
    EXPECT_EQ(r.end, position[k] + int64_t(batches[k].size())) << "ordinal " << k;
    EXPECT_EQ(r.max_timestamp, max_ts[k]) << "ordinal " << k;
    EXPECT_EQ(r.shallow_offset_of_max, shallow[k]) << "ordinal " << k;
    EXPECT_EQ(r.prev_v2_next_offset, prev_next[k]) << "ordinal " << k;
    EXPECT_TRUE(std::equal(scan.BytesOf(r).begin(), scan.BytesOf(r).end(), batches[k].begin()))
        << "ordinal " << k;
  }
}

TEST_F(SegmentScanSplitTest, JoinedPartsGiveTheWholeScanAtAnyBatchBoundary) {
  int joins = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::vector<Bytes> batches;
    if (seed % 4 == 0) {
      batches = ShortTransactions(seed, 1 + int(seed % 9), 500, /*rare_events=*/true);
    } else {
      StreamGenerator gen(seed, 1 + int(seed % 7) * int(seed % 5));
      for (int i = 0; i < 500; ++i) batches.push_back(gen.Next());
    }
    ASSERT_NO_FATAL_FAILURE(Write(batches));
    const int32_t interval = seed % 3 == 0 ? 0 : (seed % 3 == 1 ? 300 : 4096);
    const SegmentRecoveryScan whole = Whole(interval);
    ASSERT_TRUE(whole.stop_reason.empty()) << whole.stop_reason;
    const Outcome want = ReplayRetained(whole);
    ASSERT_EQ(want, Replay(std::vector<ByteSpan>(batches.begin(), batches.end())));
    for (size_t k = 1; k < batches.size(); k += 1 + (seed * 7 + k) % 61) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << " split before batch " << k);
      bool rescanned = true;
      const SegmentRecoveryScan joined = Split(starts_[k], interval, &rescanned);
      ASSERT_FALSE(rescanned);
      joins++;
      ASSERT_NO_FATAL_FAILURE(ExpectSameScan(whole, joined));
      ASSERT_NO_FATAL_FAILURE(ExpectRetainedValuesOfTheFile(batches, joined));
      const Outcome got = ReplayRetained(joined);
      ASSERT_EQ(got, want) << "want " << Describe(want) << "\ngot  " << Describe(got);
    }
  }
  EXPECT_GT(joins, 500);
}

std::vector<Bytes> PlainBatches(int n, int64_t first_offset, int32_t epoch) {
  std::vector<Bytes> out;
  for (int i = 0; i < n; ++i) {
    BatchBuilderOptions o;
    o.base_offset = first_offset + 2 * i;
    o.partition_leader_epoch = epoch;
    // Values full of 0x02, the v2 magic, for FindBatchBoundary to skip.
    auto b = BuildRecordBatch(o, {{kT0 + i, "k", std::string(40, '\x02'), {}},
                                  {kT0 + i, "k", std::string(3, '\x02'), {}}});
    EXPECT_TRUE(b.ok());
    out.push_back(*b);
  }
  return out;
}

TEST_F(SegmentScanSplitTest, APointInsideABatchIsScannedWhole) {
  ASSERT_NO_FATAL_FAILURE(Write(PlainBatches(50, kScanBase, 0)));
  bool rescanned = false;
  const SegmentRecoveryScan got = Split(starts_[20] + 7, 300, &rescanned);
  EXPECT_TRUE(rescanned);
  ExpectSameScan(Whole(300), got);
}

// Damage in the first part: the segment is scanned whole. In the second
// part (from its first batch on): the join keeps the second part's stop,
// which is the whole scan's.
TEST_F(SegmentScanSplitTest, DamageInEitherPartIsFoundAsByTheWholeScan) {
  for (size_t damaged : {size_t(5), size_t(20), size_t(35)}) {
    SCOPED_TRACE(::testing::Message() << "damaged batch " << damaged);
    ASSERT_NO_FATAL_FAILURE(Write(PlainBatches(50, kScanBase, 0)));
    ASSERT_NO_FATAL_FAILURE(Flip(damaged, 70));  // inside the records: a CRC failure
    bool rescanned = false;
    const SegmentRecoveryScan got = Split(starts_[20], 300, &rescanned);
    EXPECT_EQ(rescanned, damaged < 20);
    const SegmentRecoveryScan want = Whole(300);
    EXPECT_TRUE(want.corrupt_batch);
    EXPECT_EQ(want.valid_bytes, starts_[damaged]);
    ExpectSameScan(want, got);
  }
}

// A crash's torn tail (a partial last batch, or zeros where the file was
// extended) in the second part joins without a second scan.
TEST_F(SegmentScanSplitTest, ATornTailInTheSecondPartJoins) {
  std::vector<Bytes> batches = PlainBatches(50, kScanBase, 0);
  for (int tail : {0, 1}) {
    SCOPED_TRACE(::testing::Message() << (tail == 0 ? "partial batch" : "zeros"));
    std::vector<Bytes> written = batches;
    if (tail == 0) {
      written.back().resize(written.back().size() / 2);
    } else {
      written.push_back(Bytes(4096, 0));
    }
    ASSERT_NO_FATAL_FAILURE(Write(written));
    bool rescanned = true;
    const SegmentRecoveryScan got = Split(starts_[20], 300, &rescanned);
    EXPECT_FALSE(rescanned);
    const SegmentRecoveryScan want = Whole(300);
    EXPECT_FALSE(want.stop_reason.empty());
    ExpectSameScan(want, got);
  }
}

TEST_F(SegmentScanSplitTest, OrdersBrokenAcrossThePointAreFoundAsByTheWholeScan) {
  // The second part starts below the first part's last offset.
  std::vector<Bytes> batches = PlainBatches(20, kScanBase, 3);
  std::vector<Bytes> below = PlainBatches(20, kScanBase + 30, 3);
  batches.insert(batches.end(), below.begin(), below.end());
  ASSERT_NO_FATAL_FAILURE(Write(batches));
  bool rescanned = false;
  SegmentRecoveryScan got = Split(starts_[20], 300, &rescanned);
  EXPECT_TRUE(rescanned);
  SegmentRecoveryScan want = Whole(300);
  EXPECT_TRUE(want.uncovered_field_damage);
  ExpectSameScan(want, got);

  // The second part's first leader epoch is below the first part's.
  batches = PlainBatches(20, kScanBase, 5);
  std::vector<Bytes> none = PlainBatches(1, kScanBase + 40, -1);
  std::vector<Bytes> lower = PlainBatches(10, kScanBase + 42, 4);
  batches.insert(batches.end(), none.begin(), none.end());
  batches.insert(batches.end(), lower.begin(), lower.end());
  ASSERT_NO_FATAL_FAILURE(Write(batches));
  got = Split(starts_[20], 300, &rescanned);
  EXPECT_TRUE(rescanned);
  want = Whole(300);
  EXPECT_TRUE(want.uncovered_field_damage);
  ExpectSameScan(want, got);
}

TEST_F(SegmentScanSplitTest, AnOffsetGapAtThePointIsTheWholeScansGap) {
  std::vector<Bytes> batches = PlainBatches(20, kScanBase, 0);
  std::vector<Bytes> after = PlainBatches(20, kScanBase + 100, 0);
  batches.insert(batches.end(), after.begin(), after.end());
  ASSERT_NO_FATAL_FAILURE(Write(batches));
  bool rescanned = true;
  const SegmentRecoveryScan got = Split(starts_[20], 300, &rescanned);
  EXPECT_FALSE(rescanned);
  const SegmentRecoveryScan want = Whole(300);
  ASSERT_TRUE(want.first_gap.has_value());
  EXPECT_EQ(want.first_gap->position, starts_[20]);
  ExpectSameScan(want, got);
}

// Timestamps need not increase: where the second part's stay at or below the
// first part's maximum, the running maximum (and its offset) stays the first
// part's, in the retained batches as in the index points.
TEST_F(SegmentScanSplitTest, TheFirstPartsMaximumTimestampCarriesAcrossThePoint) {
  std::vector<Bytes> batches;
  for (int i = 0; i < 40; ++i) {
    BatchBuilderOptions o;
    o.base_offset = kScanBase + i;
    o.partition_leader_epoch = 0;
    o.producer_id = 7 + i % 3;  // three producers: each keeps its last five
    o.producer_epoch = 0;
    o.base_sequence = i / 3;
    const int64_t ts = i < 20 ? kT0 + 500 + i : kT0 + (i % 4 == 0 ? 519 : i == 39 ? 600 : i);
    auto b = BuildRecordBatch(o, {{ts, "k", std::string(50, 'v'), {}}});
    ASSERT_TRUE(b.ok());
    batches.push_back(*b);
  }
  ASSERT_NO_FATAL_FAILURE(Write(batches));
  bool rescanned = true;
  const SegmentRecoveryScan joined = Split(starts_[20], 200, &rescanned);
  EXPECT_FALSE(rescanned);
  ExpectSameScan(Whole(200), joined);
  ExpectRetainedValuesOfTheFile(batches, joined);
  EXPECT_GT(joined.batches.size(), 10u);
}

TEST_F(SegmentScanSplitTest, FindBatchBoundaryTakesTheNextWholeBatch) {
  ASSERT_NO_FATAL_FAILURE(Write(PlainBatches(50, kScanBase, 0)));
  // From inside batch 20 (whose values are full of the magic byte): 21.
  EXPECT_EQ(FindBatchBoundary(file_.get(), starts_[20] + 1, size_, 64 << 10, kScanBase),
            starts_[21]);
  EXPECT_EQ(FindBatchBoundary(file_.get(), starts_[20], size_, 64 << 10, kScanBase), starts_[20]);
  // The last batch, with nothing after it to check.
  EXPECT_EQ(FindBatchBoundary(file_.get(), starts_[49] - 3, size_, 64 << 10, kScanBase),
            starts_[49]);
  // A window smaller than a batch holds none whole.
  EXPECT_EQ(FindBatchBoundary(file_.get(), starts_[20] + 1, size_, 40, kScanBase), std::nullopt);
  // A batch below the segment's base offset is not one of its batches.
  EXPECT_EQ(FindBatchBoundary(file_.get(), starts_[20], size_, 64 << 10, kScanBase + 1000),
            std::nullopt);
}

TEST_F(SegmentScanSplitTest, TheSplitPointIsABoundaryNearTheMiddleOfALargeSegment) {
  std::vector<Bytes> batches = PlainBatches(2000, kScanBase, 0);
  ASSERT_NO_FATAL_FAILURE(Write(batches));
  SplitSegmentScan::set_min_split_bytes_for_testing(1);
  const Parts parts = ScanParts(std::nullopt, 300);
  ASSERT_TRUE(parts.point.has_value());
  const int64_t p = *parts.point;
  EXPECT_TRUE(std::binary_search(starts_.begin(), starts_.end(), p));
  EXPECT_GE(p, size_ / 2);
  EXPECT_LT(p - size_ / 2, int64_t(batches[0].size()));
  EXPECT_FALSE(parts.rescanned);
  ExpectSameScan(Whole(300), parts.joined);
}

// Batches larger than the first search window (256 KiB): the second, larger
// window finds the boundary.
TEST_F(SegmentScanSplitTest, LargeBatchesAreSplitBetween) {
  std::vector<Bytes> batches;
  for (int i = 0; i < 12; ++i) {
    BatchBuilderOptions o;
    o.base_offset = kScanBase + i;
    o.partition_leader_epoch = 0;
    auto b = BuildRecordBatch(o, {{kT0 + i, "k", std::string(300 << 10, char('a' + i)), {}}});
    ASSERT_TRUE(b.ok());
    batches.push_back(*b);
  }
  ASSERT_NO_FATAL_FAILURE(Write(batches));
  SplitSegmentScan::set_min_split_bytes_for_testing(1);
  const Parts parts = ScanParts(std::nullopt, 4096);
  ASSERT_TRUE(parts.point.has_value());
  EXPECT_TRUE(std::binary_search(starts_.begin(), starts_.end(), *parts.point));
  ExpectSameScan(Whole(4096), parts.joined);
  EXPECT_FALSE(parts.rescanned);
}

// The second part's marks are bounded: a segment predicted to need more is
// not split, and a second part that meets more anyway is given up.
TEST_F(SegmentScanSplitTest, MarksAreBounded) {
  ASSERT_NO_FATAL_FAILURE(Write(PlainBatches(400, kScanBase, 0)));
  SplitSegmentScan::set_min_split_bytes_for_testing(1);
  SplitSegmentScan::set_max_marks_for_testing(100);  // ~200 batches after P
  const Parts predicted = ScanParts(std::nullopt, 300);
  EXPECT_FALSE(predicted.point.has_value());
  ExpectSameScan(Whole(300), predicted.joined);
  // Split at batch 300 (100 batches after it: predicted within the bound)
  // but allowed only 2 x 40 marks.
  SplitSegmentScan::set_max_marks_for_testing(40);
  bool rescanned = false;
  const SegmentRecoveryScan got = Split(starts_[300], 300, &rescanned);
  EXPECT_TRUE(rescanned);
  ExpectSameScan(Whole(300), got);
}

TEST_F(SegmentScanSplitTest, SmallSegmentsAreNotSplit) {
  ASSERT_NO_FATAL_FAILURE(Write(PlainBatches(50, kScanBase, 0)));
  const Parts parts = ScanParts(std::nullopt, 300);
  EXPECT_FALSE(parts.point.has_value());
  EXPECT_EQ(parts.second_batches, 0);
  ExpectSameScan(Whole(300), parts.joined);
}

}  // namespace
}  // namespace daruma
