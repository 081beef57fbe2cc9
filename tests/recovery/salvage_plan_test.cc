// PlanSalvage (recovery/salvage_plan.h): one case per kind of damage, each
// asserting exactly which bytes are dropped, which offsets are kept and the
// offset gaps left. Segments of 10 batches of 3 records, all the same size S,
// so batch i of a segment based at b holds offsets b+3i .. b+3i+2 at bytes
// [i*S, (i+1)*S).
#include "recovery/salvage_plan.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "log/log_file_names.h"
#include "record/record_batch_builder.h"
#include "support/mem_file_system.h"

namespace daruma::testing {
namespace {

constexpr char kSalvageDir[] = "/data/t-0";
constexpr int kBatches = 10;
constexpr int kRecords = 3;

std::vector<uint8_t> Batch(int64_t base, int32_t epoch) {
  BatchBuilderOptions o;
  o.base_offset = base;
  o.partition_leader_epoch = epoch;
  std::vector<RecordInput> records;
  for (int r = 0; r < kRecords; ++r) records.push_back({1700000000000, "k", "value-bytes", {}});
  auto bytes = BuildRecordBatch(o, records);
  EXPECT_TRUE(bytes.ok());
  return std::vector<uint8_t>(bytes->begin(), bytes->end());
}

int64_t BatchSize() {
  static const int64_t size = int64_t(Batch(0, 0).size());
  return size;
}

struct Kept {
  int64_t first, last;
  bool operator==(const Kept&) const = default;
};

class SalvagePlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs_.CreateDir("/data").ok());
    ASSERT_TRUE(fs_.CreateDir(kSalvageDir).ok());
  }

  const int64_t S = BatchSize();

  // Writes a segment of kBatches batches based at `base`, epoch `epoch`.
  std::string Segment(int64_t base, int32_t epoch = 0) {
    std::vector<uint8_t> data;
    for (int i = 0; i < kBatches; ++i) {
      auto b = Batch(base + i * kRecords, epoch);
      data.insert(data.end(), b.begin(), b.end());
    }
    const std::string path = LogFileName(kSalvageDir, base);
    Write(path, data);
    return path;
  }

  void Write(const std::string& path, const std::vector<uint8_t>& data) {
    auto f = fs_.Open(path, OpenMode::kTruncate);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->WriteAt(0, data).ok());
  }
  std::vector<uint8_t> Read(const std::string& path) { return *fs_.ReadFile(path); }
  void Edit(const std::string& path, const std::function<void(std::vector<uint8_t>&)>& edit) {
    auto data = Read(path);
    edit(data);
    Write(path, data);
  }

  PartitionSalvage Plan() {
    auto plan = PlanSalvage(&fs_, kSalvageDir);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    return plan.ok() ? *plan : PartitionSalvage{};
  }

  static std::vector<Kept> KeptOffsets(const SegmentSalvage& s) {
    std::vector<Kept> out;
    for (const KeptRun& k : s.kept) out.push_back({k.first_offset, k.last_offset});
    return out;
  }

  MemFileSystem fs_;
};

void ExpectRange(const DroppedRange& r, int64_t from, int64_t to, DamageKind kind,
                 int64_t gap_first, std::optional<int64_t> gap_last) {
  EXPECT_EQ(r.from, from);
  EXPECT_EQ(r.to, to);
  EXPECT_EQ(DamageKindName(r.kind), std::string(DamageKindName(kind))) << r.what;
  EXPECT_EQ(r.gap_first, gap_first);
  EXPECT_EQ(r.gap_last, gap_last);
}

TEST_F(SalvagePlanTest, IntactLogChangesNothing) {
  Segment(0);
  Segment(30);
  const PartitionSalvage plan = Plan();
  EXPECT_FALSE(plan.changed());
  EXPECT_EQ(plan.log_end_offset, 60);
  EXPECT_EQ(KeptOffsets(plan.segments[0]), (std::vector<Kept>{{0, 29}}));
}

TEST_F(SalvagePlanTest, FlippedCrcByteDropsThatBatchOnly) {
  const std::string seg = Segment(0);
  Edit(seg, [&](auto& d) { d[size_t(4 * S + 17)] ^= 0x01; });  // the CRC field of batch 4
  const PartitionSalvage plan = Plan();
  ASSERT_EQ(plan.segments[0].dropped.size(), 1u);
  ExpectRange(plan.segments[0].dropped[0], 4 * S, 5 * S, DamageKind::kBadCrc, 12, 14);
  EXPECT_NE(plan.segments[0].dropped[0].what.find("at position " + std::to_string(4 * S)),
            std::string::npos)
      << plan.segments[0].dropped[0].what;
  EXPECT_EQ(KeptOffsets(plan.segments[0]), (std::vector<Kept>{{0, 11}, {15, 29}}));
  EXPECT_EQ(plan.dropped_bytes, S);
  EXPECT_EQ(plan.kept_batches_after_damage, 5);
  EXPECT_EQ(plan.kept_bytes_after_damage, 5 * S);
  ASSERT_EQ(plan.gaps.size(), 1u);
  EXPECT_EQ(plan.gaps[0].first, 12);
  EXPECT_EQ(plan.gaps[0].last, 14);
  EXPECT_EQ(plan.log_end_offset, 30);
}

TEST_F(SalvagePlanTest, FlippedRecordByteIsACrcMismatch) {
  const std::string seg = Segment(0);
  Edit(seg, [&](auto& d) { d[size_t(6 * S - 3)] ^= 0x40; });  // inside batch 5's records
  const PartitionSalvage plan = Plan();
  ASSERT_EQ(plan.segments[0].dropped.size(), 1u);
  ExpectRange(plan.segments[0].dropped[0], 5 * S, 6 * S, DamageKind::kBadCrc, 15, 17);
  EXPECT_EQ(KeptOffsets(plan.segments[0]), (std::vector<Kept>{{0, 14}, {18, 29}}));
}

TEST_F(SalvagePlanTest, BaseOffsetFlippedUpDropsThatBatchNotTheRest) {
  const std::string seg = Segment(0);
  Edit(seg, [&](auto& d) { d[size_t(4 * S + 5)] ^= 0x10; });  // baseOffset 12 -> 12 + 2^20
  const PartitionSalvage plan = Plan();
  ASSERT_EQ(plan.segments[0].dropped.size(), 1u);
  ExpectRange(plan.segments[0].dropped[0], 4 * S, 5 * S, DamageKind::kNonMonotonicOffset, 12, 14);
  EXPECT_EQ(KeptOffsets(plan.segments[0]), (std::vector<Kept>{{0, 11}, {15, 29}}));
}

TEST_F(SalvagePlanTest, BaseOffsetFlippedDownDropsThatBatch) {
  const std::string seg = Segment(0);
  Edit(seg, [&](auto& d) { d[size_t(4 * S + 7)] = 10; });  // baseOffset 12 -> 10
  const PartitionSalvage plan = Plan();
  ASSERT_EQ(plan.segments[0].dropped.size(), 1u);
  ExpectRange(plan.segments[0].dropped[0], 4 * S, 5 * S, DamageKind::kNonMonotonicOffset, 12, 14);
  EXPECT_EQ(KeptOffsets(plan.segments[0]), (std::vector<Kept>{{0, 11}, {15, 29}}));
}

TEST_F(SalvagePlanTest, EpochFlippedUpDropsThatBatchNotTheRest) {
  const std::string seg = Segment(0, 3);
  Edit(seg, [&](auto& d) { d[size_t(4 * S + 13)] = 0x40; });  // epoch 3 -> 2^22 + 3
  const PartitionSalvage plan = Plan();
  ASSERT_EQ(plan.segments[0].dropped.size(), 1u);
  ExpectRange(plan.segments[0].dropped[0], 4 * S, 5 * S, DamageKind::kLeaderEpochOrder, 12, 14);
  EXPECT_EQ(KeptOffsets(plan.segments[0]), (std::vector<Kept>{{0, 11}, {15, 29}}));
}

TEST_F(SalvagePlanTest, EpochFlippedUpInTheLastBatchOfASegmentDropsOnlyThatBatch) {
  const std::string seg0 = Segment(0, 0);
  Segment(30, 1);
  Edit(seg0, [&](auto& d) { d[size_t(9 * S + 13)] = 0x40; });  // epoch 0 -> 2^22
  const PartitionSalvage plan = Plan();
  ASSERT_EQ(plan.segments[0].dropped.size(), 1u);
  ExpectRange(plan.segments[0].dropped[0], 9 * S, 10 * S, DamageKind::kLeaderEpochOrder, 27, 29);
  EXPECT_NE(plan.segments[0].dropped[0].what.find(plan.segments[1].path), std::string::npos)
      << plan.segments[0].dropped[0].what;
  EXPECT_FALSE(plan.segments[1].changed());
  EXPECT_EQ(KeptOffsets(plan.segments[0]), (std::vector<Kept>{{0, 26}}));
  EXPECT_EQ(plan.kept_batches_after_damage, 10);
}

TEST_F(SalvagePlanTest, ConsecutiveOutOfOrderBatchesAreOneRange) {
  const std::string seg = Segment(0);
  Edit(seg, [&](auto& d) {
    for (int i = 4; i < 7; ++i) d[size_t(i * S + 7)] = 1;  // baseOffsets 12, 15, 18 -> 1
  });
  const PartitionSalvage plan = Plan();
  ASSERT_EQ(plan.segments[0].dropped.size(), 1u);
  ExpectRange(plan.segments[0].dropped[0], 4 * S, 7 * S, DamageKind::kNonMonotonicOffset, 12, 20);
  EXPECT_EQ(KeptOffsets(plan.segments[0]), (std::vector<Kept>{{0, 11}, {21, 29}}));
}

TEST_F(SalvagePlanTest, GarbageRunIsDroppedUpToTheNextValidBatch) {
  const std::string seg = Segment(0);
  Edit(seg, [&](auto& d) {
    for (int64_t i = 4 * S + 9; i < 6 * S + 20; ++i) d[size_t(i)] = uint8_t(0x5a + i * 7);
  });
  const PartitionSalvage plan = Plan();
  ASSERT_EQ(plan.segments[0].dropped.size(), 1u);
  const DroppedRange& r = plan.segments[0].dropped[0];
  EXPECT_EQ(r.from, 4 * S);
  EXPECT_EQ(r.to, 7 * S);
  EXPECT_EQ(r.gap_first, 12);
  EXPECT_EQ(r.gap_last, 20);
  EXPECT_EQ(KeptOffsets(plan.segments[0]), (std::vector<Kept>{{0, 11}, {21, 29}}));
  EXPECT_EQ(plan.dropped_bytes, 3 * S);
}

TEST_F(SalvagePlanTest, ZeroedRunBetweenBatchesIsAZeroedRange) {
  const std::string seg = Segment(0);
  Edit(seg, [&](auto& d) { std::fill(d.begin() + 4 * S, d.begin() + 6 * S, 0); });
  const PartitionSalvage plan = Plan();
  ASSERT_EQ(plan.segments[0].dropped.size(), 1u);
  ExpectRange(plan.segments[0].dropped[0], 4 * S, 6 * S, DamageKind::kZeroedRange, 12, 17);
  EXPECT_EQ(KeptOffsets(plan.segments[0]), (std::vector<Kept>{{0, 11}, {18, 29}}));
}

TEST_F(SalvagePlanTest, TwoDamagedRegionsLeaveTwoGaps) {
  const std::string seg = Segment(0);
  Edit(seg, [&](auto& d) {
    d[size_t(2 * S + 30)] ^= 0x01;
    d[size_t(7 * S + 30)] ^= 0x01;
  });
  const PartitionSalvage plan = Plan();
  ASSERT_EQ(plan.segments[0].dropped.size(), 2u);
  ExpectRange(plan.segments[0].dropped[0], 2 * S, 3 * S, DamageKind::kBadCrc, 6, 8);
  ExpectRange(plan.segments[0].dropped[1], 7 * S, 8 * S, DamageKind::kBadCrc, 21, 23);
  EXPECT_EQ(KeptOffsets(plan.segments[0]), (std::vector<Kept>{{0, 5}, {9, 20}, {24, 29}}));
  ASSERT_EQ(plan.gaps.size(), 2u);
  EXPECT_EQ(plan.gaps[1].first, 21);
  EXPECT_EQ(plan.kept_batches_after_damage, 6);  // batches 3-6 and 8-9
}

TEST_F(SalvagePlanTest, TornTailIsWhatTruncationDrops) {
  const std::string seg = Segment(0);
  Edit(seg, [&](auto& d) { d.resize(d.size() - 5); });
  const PartitionSalvage plan = Plan();
  ASSERT_EQ(plan.segments[0].dropped.size(), 1u);
  ExpectRange(plan.segments[0].dropped[0], 9 * S, 10 * S - 5, DamageKind::kTornTail, 27,
              std::nullopt);
  EXPECT_TRUE(plan.gaps.empty());
  EXPECT_EQ(plan.kept_batches_after_damage, 0);
  EXPECT_EQ(plan.log_end_offset, 27);
}

TEST_F(SalvagePlanTest, DamagedLastBatchOfNonLastSegmentKeepsLaterSegments) {
  const std::string seg0 = Segment(0);
  Segment(30, 1);
  Edit(seg0, [&](auto& d) { d[size_t(9 * S + 40)] ^= 0x01; });
  const PartitionSalvage plan = Plan();
  ASSERT_EQ(plan.segments[0].dropped.size(), 1u);
  ExpectRange(plan.segments[0].dropped[0], 9 * S, 10 * S, DamageKind::kBadCrc, 27, 29);
  EXPECT_FALSE(plan.segments[1].changed());
  EXPECT_EQ(plan.kept_batches_after_damage, 10);
  EXPECT_EQ(plan.log_end_offset, 60);
}

TEST_F(SalvagePlanTest, WhollyDamagedMiddleSegmentIsDroppedWhole) {
  Segment(0);
  const std::string seg1 = Segment(30);
  Segment(60);
  Edit(seg1, [&](auto& d) { std::fill(d.begin(), d.end(), 0xee); });
  const PartitionSalvage plan = Plan();
  EXPECT_TRUE(plan.segments[1].drop_whole);
  ASSERT_EQ(plan.segments[1].dropped.size(), 1u);
  ExpectRange(plan.segments[1].dropped[0], 0, 10 * S, DamageKind::kBadMagic, 30, 59);
  ASSERT_EQ(plan.gaps.size(), 1u);
  EXPECT_EQ(plan.gaps[0].first, 30);
  EXPECT_EQ(plan.gaps[0].last, 59);
  EXPECT_EQ(plan.log_end_offset, 90);
}

TEST_F(SalvagePlanTest, BatchOutsideItsSegmentsRangeIsDropped) {
  const std::string seg0 = Segment(0);
  Segment(30);
  // Batch 9 of segment 0 claims offsets 57..59, which belong to segment 1.
  Edit(seg0, [&](auto& d) { d[size_t(9 * S + 7)] = 57; });
  const PartitionSalvage plan = Plan();
  ASSERT_EQ(plan.segments[0].dropped.size(), 1u);
  ExpectRange(plan.segments[0].dropped[0], 9 * S, 10 * S, DamageKind::kOffsetOutsideSegment, 27,
              29);
}

TEST_F(SalvagePlanTest, JsonNamesEveryRange) {
  const std::string seg = Segment(0);
  Edit(seg, [&](auto& d) { d[size_t(4 * S + 17)] ^= 0x01; });
  const nlohmann::json j = ToJson(Plan());
  EXPECT_EQ(j["droppedBytes"], S);
  EXPECT_EQ(j["keptBatchesAfterDamage"], 5);
  ASSERT_EQ(j["ranges"].size(), 1u);
  EXPECT_EQ(j["ranges"][0]["kind"], "bad_crc");
  EXPECT_EQ(j["ranges"][0]["file"], seg);
  EXPECT_EQ(j["ranges"][0]["fromPosition"], 4 * S);
  EXPECT_EQ(j["offsetGaps"], nlohmann::json::parse("[[12, 14]]"));
}

}  // namespace
}  // namespace daruma::testing
