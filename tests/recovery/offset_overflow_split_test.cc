// Offset-overflow split during load (spec §10.5, KAFKA-6264): a segment
// whose offsets exceed base + 2^31-1 is split into segments that each satisfy
// the relative-offset rule, swapped in, and loading continues.
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/clock.h"
#include "log/log_file_names.h"
#include "record/legacy_message.h"
#include "recovery/log_loader.h"
#include "recovery/overflow_segment.h"
#include "support/test_support.h"

namespace daruma::testing {
namespace {

namespace fs = std::filesystem;

// Big-endian entry bytes as the index files store them.
std::string OffsetEntry(int32_t relative, int32_t position) {
  std::string s(8, '\0');
  StoreBe32(reinterpret_cast<uint8_t*>(s.data()), uint32_t(relative));
  StoreBe32(reinterpret_cast<uint8_t*>(s.data()) + 4, uint32_t(position));
  return s;
}
std::string TimeEntry(int64_t timestamp, int32_t relative) {
  std::string s(12, '\0');
  StoreBe64(reinterpret_cast<uint8_t*>(s.data()), uint64_t(timestamp));
  StoreBe32(reinterpret_cast<uint8_t*>(s.data()) + 8, uint32_t(relative));
  return s;
}

class OffsetOverflowSplitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    part_ = tmp_.Join("t-0");
    fs::create_directories(part_);
    // Every batch after a segment's first gets an index entry on recovery.
    config_.index_interval_bytes = 0;
    WriteStringToFile(File(0, ".log"), OverflowSegmentBytes());
    // As Kafka leaves it beside every partition (a missing one would make the
    // load rebuild the epochs from every batch).
    WriteStringToFile(part_ + "/leader-epoch-checkpoint", "0\n0\n");
  }

  std::string File(int64_t base, const std::string& ext) const {
    return part_ + "/" + FilenamePrefixFromOffset(base) + ext;
  }

  Result<std::unique_ptr<Log>> Load(bool clean, int64_t recovery_point, int threads = 1,
                                    bool quarantine = true) {
    LoadLogParams p;
    p.log_dir = tmp_.path();
    p.partition_dir = part_;
    p.tp = TopicPartition{"t", 0};
    p.config = config_;
    p.clock = &clock_;
    p.had_clean_shutdown = clean;
    p.recovery_point_checkpoint = recovery_point;
    p.recovery_threads = threads;
    p.quarantine = quarantine;
    report_ = PartitionRecoveryReport{};
    return LoadLog(p, &report_);
  }

  std::vector<std::string> FileNames() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(part_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

  // Whether a warning of the last load contains `text`.
  bool Warned(const std::string& text) const {
    for (const std::string& w : report_.warnings) {
      if (w.find(text) != std::string::npos) return true;
    }
    return false;
  }

  // The base offsets of `log`'s segments, in order.
  static std::vector<int64_t> Bases(Log& log) {
    std::vector<int64_t> bases;
    for (LogSegment* s : log.segments_for_inspection()) bases.push_back(s->base_offset());
    return bases;
  }

  void ExpectSplitLogFiles(Log& log, bool quarantine = true) {
    EXPECT_EQ(Bases(log), (std::vector<int64_t>{0, kSplitBase1, kSplitBase2}));
    for (const ExpectedSplit& e : ExpectedSplitSegments()) {
      EXPECT_EQ(ReadFileToString(File(e.base, ".log")), e.bytes) << "segment " << e.base;
    }
    EXPECT_EQ(log.log_end_offset(), kOverflowNextOffset);
    for (const std::string& name : FileNames()) {
      EXPECT_FALSE(HasSuffix(name, ".cleaned")) << name;
      EXPECT_FALSE(HasSuffix(name, ".swap")) << name;
    }
    // The overflowed segment's files were renamed, as Kafka's async delete
    // does, or moved to the quarantine.
    const std::string old_log =
        quarantine ? part_ + "/daruma-quarantine/" + FilenamePrefixFromOffset(0) + ".log@0"
                   : File(0, ".log.deleted");
    EXPECT_EQ(ReadFileToString(old_log), OverflowSegmentBytes());
  }

  // Byte position of batch i within its split segment.
  static int32_t PositionInSplit(size_t first, size_t i) {
    return int32_t(OverflowBytes(first, i).size());
  }

  TempDir tmp_;
  std::string part_;
  LogConfig config_;
  ManualClock clock_{kOverflowT0 + 1000};
  PartitionRecoveryReport report_;
};

TEST_F(OffsetOverflowSplitTest, CleanLoadSplitsInPass4AndKeepsAppendBuiltIndexes) {
  auto log = Load(/*clean=*/true, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ExpectSplitLogFiles(**log);
  // Pass 4 is retried from scratch: the split segments have indexes now, so
  // after a clean shutdown none is recovered. Each was one <1 MiB chunk: no
  // offset-index entry; the time index holds the final entry written when
  // the segment was finalised (max timestamp of batch 1 at its last offset).
  EXPECT_EQ(ReadFileToString(File(0, ".index")), "");
  EXPECT_EQ(ReadFileToString(File(0, ".timeindex")), TimeEntry(kOverflowT0 + 11, 6));
  EXPECT_EQ(ReadFileToString(File(kSplitBase1, ".index")), "");
  EXPECT_EQ(ReadFileToString(File(kSplitBase1, ".timeindex")), TimeEntry(kOverflowT0 + 30, 2));
  // Only the batches before the overflowing one were recovered (epoch 0).
  EXPECT_EQ((*log)->leader_epochs(), (std::vector<EpochEntry>{{0, 0}}));
}

TEST_F(OffsetOverflowSplitTest, UncleanLoadSplitsInPass5AndRecoversEveryNewSegment) {
  auto log = Load(/*clean=*/false, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ExpectSplitLogFiles(**log);
  EXPECT_EQ(ReadFileToString(File(0, ".index")), OffsetEntry(6, PositionInSplit(0, 1)));
  EXPECT_EQ(ReadFileToString(File(0, ".timeindex")), TimeEntry(kOverflowT0 + 11, 6));
  EXPECT_EQ(ReadFileToString(File(kSplitBase1, ".index")), OffsetEntry(2, PositionInSplit(2, 3)));
  EXPECT_EQ(ReadFileToString(File(kSplitBase1, ".timeindex")), TimeEntry(kOverflowT0 + 30, 2));
  EXPECT_EQ((*log)->leader_epochs(),
            (std::vector<EpochEntry>{{0, 0}, {1, kSplitBase1}, {2, kSplitBase2}}));
  EXPECT_EQ((*log)->recovery_point(), 0);
  EXPECT_TRUE(
      Warned("Replaced overflowed segment 0 with split segments [0, 2147483648, "
             "6442450944]"));
}

TEST_F(OffsetOverflowSplitTest, RecoveryRestartsAtTheSegmentHoldingTheRecoveryPoint) {
  // Kafka retries pass 5 after the split; the recovery point now lies in the
  // second new segment, so the first keeps the split's (append-built) indexes.
  auto log = Load(/*clean=*/false, kSplitBase1 + 1);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ExpectSplitLogFiles(**log);
  EXPECT_EQ(ReadFileToString(File(0, ".index")), "");
  EXPECT_EQ(ReadFileToString(File(kSplitBase1, ".index")), OffsetEntry(2, PositionInSplit(2, 3)));
  EXPECT_EQ((*log)->leader_epochs(),
            (std::vector<EpochEntry>{{0, 0}, {1, kSplitBase1}, {2, kSplitBase2}}));
}

TEST_F(OffsetOverflowSplitTest, TwoThreadsGiveTheSameFiles) {
  auto log = Load(/*clean=*/false, 0, /*threads=*/2);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ExpectSplitLogFiles(**log);
  EXPECT_EQ(ReadFileToString(File(kSplitBase1, ".index")), OffsetEntry(2, PositionInSplit(2, 3)));
}

TEST_F(OffsetOverflowSplitTest, WithoutQuarantineTheOldSegmentIsRenamedDeleted) {
  auto log = Load(/*clean=*/false, 0, /*threads=*/1, /*quarantine=*/false);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ExpectSplitLogFiles(**log, /*quarantine=*/false);
  EXPECT_FALSE(fs::exists(part_ + "/daruma-quarantine"));
}

TEST_F(OffsetOverflowSplitTest, OffsetBelowTheBaseIsCutNotSplit) {
  // A batch below its segment's base offset also fails the relative-offset
  // rule, but splitting cannot fix it (Kafka refuses to load). Its baseOffset
  // is outside the CRC and contradicts the file name: recovery cuts it there
  // (issue 22 rule 1), keeping the bytes in quarantine.
  fs::remove(File(0, ".log"));
  WriteStringToFile(File(100, ".log"), OverflowBytes(0, 1));
  auto log = Load(/*clean=*/true, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), 100);
  EXPECT_EQ((*log)->active_segment_size(), 0);
  for (const std::string& name : FileNames()) EXPECT_FALSE(HasSuffix(name, ".cleaned")) << name;
}

// A gzip magic-1 wrapper of three messages ending at offset `last` (inner
// offsets relative, spec §3.2): its offset field is `last`, its first
// message's offset last - 2.
std::string LegacyGzipWrapper(int64_t last) {
  Bytes inner;
  for (int i = 0; i < 3; ++i) {
    Bytes m = BuildLegacyMessage(1, i, kOverflowT0, "k" + std::to_string(i), "v");
    inner.insert(inner.end(), m.begin(), m.end());
  }
  auto wrapper = BuildLegacyWrapper(1, last, kOverflowT0, CompressionType::kGzip, inner);
  EXPECT_TRUE(wrapper.ok()) << wrapper.status().ToString();
  return wrapper.ok() ? std::string(wrapper->begin(), wrapper->end()) : std::string();
}

TEST_F(OffsetOverflowSplitTest, ASplitAtACompressedLegacyWrapperIsBasedAtItsFirstMessage) {
  // Kafka names a new segment after its first batch's baseOffset, which for
  // a compressed legacy wrapper is the first inner offset (2^31 here), not
  // the wrapper's offset field (its last offset, 2^31 + 2).
  const std::string wrapper = LegacyGzipWrapper(kSplitBase1 + 2);
  WriteStringToFile(File(0, ".log"), OverflowBytes(0, 2) + wrapper);
  auto log = Load(/*clean=*/true, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(Bases(**log), (std::vector<int64_t>{0, kSplitBase1}));
  EXPECT_EQ(ReadFileToString(File(0, ".log")), OverflowBytes(0, 2));
  EXPECT_EQ(ReadFileToString(File(kSplitBase1, ".log")), wrapper);
  EXPECT_FALSE(fs::exists(File(kSplitBase1 + 2, ".log")));
  EXPECT_EQ((*log)->log_end_offset(), kSplitBase1 + 3);
}

// One v2 batch of one record at `base`.
std::string OneBatch(int64_t base) {
  BatchBuilderOptions o;
  o.base_offset = base;
  auto bytes = BuildRecordBatch(o, {{kOverflowT0, "k", "v", {}}});
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? std::string(bytes->begin(), bytes->end()) : std::string();
}

// Found by recovery_fuzz: an overflowing first batch, then a batch whose
// baseOffset went backwards (and whose CRC fails). Kafka's split starts a
// segment for each, the second below the first; recovery used to go on from
// the first new segment only, keeping the lower one, and its invalid batch,
// unvalidated. It now goes on from the lowest: the bad batch is cut there and
// the segments after it are dropped, as Kafka's retried pass 5 does.
TEST_F(OffsetOverflowSplitTest, RecoveryResumesAtTheLowestSplitSegment) {
  const int64_t high = int64_t(5) << 31;
  std::string bad = OneBatch(1);
  bad.back() ^= 0x01;  // a value byte: the CRC no longer matches
  WriteStringToFile(File(0, ".log"), OneBatch(high) + bad + OneBatch(high + 1));
  auto log = Load(/*clean=*/false, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(Bases(**log), (std::vector<int64_t>{1}));
  EXPECT_EQ((*log)->log_end_offset(), 1);
  EXPECT_EQ(ReadFileToString(File(1, ".log")), "");
  EXPECT_FALSE(fs::exists(File(high, ".log")));
  EXPECT_FALSE(fs::exists(File(high + 1, ".log")));
}

// The same shape with a valid second batch: the two batches disagree on
// their order before any split (issue 22 rule 1), so the earlier one is
// suspect too and recovery cuts at the first; nothing is split.
TEST_F(OffsetOverflowSplitTest, AValidBatchGoingBackwardsAfterAnOverflowIsCutNotSplit) {
  const int64_t high = int64_t(5) << 31;
  const std::string bytes = OneBatch(high) + OneBatch(1) + OneBatch(high + 1);
  WriteStringToFile(File(0, ".log"), bytes);
  auto log = Load(/*clean=*/false, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(Bases(**log), (std::vector<int64_t>{0}));
  EXPECT_EQ((*log)->log_end_offset(), 0);
  EXPECT_EQ(
      ReadFileToString(part_ + "/daruma-quarantine/" + FilenamePrefixFromOffset(0) + ".log@0"),
      bytes);
}

// Found by recovery_fuzz: past a corrupt batch, Kafka's split also copies
// batches whose damaged baseOffset lies below the old segment's base, even
// below zero, and names segments after them ("-00000260584255782901.log"),
// below data already in the log, where recovery never reaches. Such a
// segment is not kept; its bytes stay in the quarantined old segment.
TEST_F(OffsetOverflowSplitTest, ASplitSegmentBelowTheOldBaseIsNotKept) {
  const int64_t high = int64_t(5) << 31;
  std::string bad = OneBatch(-260584255782901);
  bad.back() ^= 0x01;
  const std::string bytes = OneBatch(0) + OneBatch(high) + bad + OneBatch(high + 1);
  WriteStringToFile(File(0, ".log"), bytes);
  auto log = Load(/*clean=*/false, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(Bases(**log), (std::vector<int64_t>{0, high, high + 1}));
  EXPECT_EQ((*log)->log_end_offset(), high + 2);
  for (const std::string& name : FileNames()) EXPECT_NE(name[0], '-') << name;
  EXPECT_EQ(
      ReadFileToString(part_ + "/daruma-quarantine/" + FilenamePrefixFromOffset(0) + ".log@0"),
      bytes);
  EXPECT_TRUE(Warned("found a batch at offset -260584255782901 (position"));
  EXPECT_TRUE(Warned("below the segment's base offset: not kept"));
  // Structured for `daruma check`: where in the old segment, how many bytes.
  ASSERT_EQ(report_.not_kept.size(), 1u);
  const QuarantinedRange& q = report_.not_kept[0];
  EXPECT_EQ(q.file, File(0, ".log"));
  EXPECT_EQ(q.from_position, int64_t(OneBatch(0).size() + OneBatch(high).size()));
  EXPECT_EQ(q.bytes, int64_t(bad.size()));
  EXPECT_EQ(q.first_offset, -260584255782901);
  EXPECT_EQ(q.kind, DamageKind::kOffsetOutsideSegment);
}

// Beyond Kafka, whose split reads every entry and fails the whole load on
// one it cannot read: past two overflowing batches (a corroborated overflow),
// a corrupt batch whose offsets end at 2^63 - 1 (no next offset), or a torn
// tail. Recovery of the split segments would cut either, so it is set aside
// and cut before the split, which then succeeds.
TEST_F(OffsetOverflowSplitTest, WhatTheSplitCannotCopyIsCutBeforeIt) {
  const int64_t high = int64_t(1) << 40;
  std::string bad = OneBatch(std::numeric_limits<int64_t>::max());
  bad.back() ^= 0x01;
  const std::string head = OneBatch(high) + OneBatch(high + 1);
  const std::string tail = bad + OneBatch(high + 2);
  WriteStringToFile(File(0, ".log"), head + tail);
  auto log = Load(/*clean=*/false, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(Bases(**log), (std::vector<int64_t>{high}));
  EXPECT_EQ((*log)->log_end_offset(), high + 2);
  EXPECT_EQ(ReadFileToString(File(high, ".log")), head);
  const std::string quarantine = part_ + "/daruma-quarantine/" + FilenamePrefixFromOffset(0);
  EXPECT_EQ(ReadFileToString(quarantine + ".log@" + std::to_string(head.size())), tail);
  EXPECT_EQ(ReadFileToString(quarantine + ".log@0"), head);
  EXPECT_TRUE(Warned("the offset-overflow split cannot copy the"));
  EXPECT_EQ(report_.truncated_bytes, int64_t(tail.size()));
}

// A single overflowing batch right before the damage may be a flipped bit in
// its baseOffset: splitting would keep it 2^40 offsets away from where it
// was written. The load is refused, as Kafka's is, and nothing is changed.
TEST_F(OffsetOverflowSplitTest, ALoneOverflowBeforeDamageIsRefused) {
  const int64_t high = int64_t(1) << 40;
  std::string bad = OneBatch(std::numeric_limits<int64_t>::max());
  bad.back() ^= 0x01;
  const std::string bytes = OneBatch(high) + bad + OneBatch(high + 1);
  WriteStringToFile(File(0, ".log"), bytes);
  auto log = Load(/*clean=*/false, 0);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(ReadFileToString(File(0, ".log")), bytes);
  EXPECT_FALSE(fs::exists(File(high, ".log")));
}

TEST_F(OffsetOverflowSplitTest, ATornTailIsCutBeforeTheSplit) {
  const int64_t high = int64_t(1) << 40;
  const std::string whole = OneBatch(high) + OneBatch(high + 1);
  const std::string torn = OneBatch(high + 2).substr(0, 30);
  WriteStringToFile(File(0, ".log"), whole + torn);
  auto log = Load(/*clean=*/false, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(Bases(**log), (std::vector<int64_t>{high}));
  EXPECT_EQ((*log)->log_end_offset(), high + 2);
  EXPECT_EQ(ReadFileToString(File(high, ".log")), whole);
  EXPECT_EQ(ReadFileToString(part_ + "/daruma-quarantine/" + FilenamePrefixFromOffset(0) + ".log@" +
                             std::to_string(whole.size())),
            torn);
}

// Found by recovery_fuzz under UBSan: relative offsets between a damaged
// baseOffset near -2^63 and one near 2^63 overflowed a signed subtraction in
// the split. Under the sanitizers this test shows that it no longer does.
TEST_F(OffsetOverflowSplitTest, OffsetsAtBothEndsOfTheRangeSplitWithoutOverflow) {
  std::string low = OneBatch(-7461687227832074238);
  low.back() ^= 0x01;
  WriteStringToFile(File(0, ".log"),
                    OneBatch(int64_t(1) << 40) + low + OneBatch(7290492167875723267));
  auto log = Load(/*clean=*/false, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(Bases(**log), (std::vector<int64_t>{int64_t(1) << 40, 7290492167875723267}));
  EXPECT_EQ((*log)->log_end_offset(), 7290492167875723268);
}

}  // namespace
}  // namespace daruma::testing
