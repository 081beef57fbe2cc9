// The clean-shutdown marker rule of `daruma recover`
// (recovery/clean_shutdown_marker_rule.h): one case per rule.
#include "recovery/clean_shutdown_marker_rule.h"

#include <gtest/gtest.h>

#include "common/bytes.h"
#include "support/mem_file_system.h"

namespace daruma {
namespace {

PartitionRecoveryReport Untouched() {
  PartitionRecoveryReport p;
  p.topic = "t";
  p.partition = 0;
  p.dir = "/d/t-0";
  return p;
}

QuarantinedRange RangeOf(const std::string& file) {
  QuarantinedRange q;
  q.file = file;
  q.bytes = 10;
  return q;
}

MarkerRuleInput CleanWithEpoch(int64_t epoch, const PartitionRecoveryReport* p) {
  MarkerRuleInput in;
  in.had_marker = true;
  in.epoch_in = epoch;
  in.partitions = {p};
  return in;
}

TEST(CleanShutdownMarkerRuleTest, CleanAndUntouchedKeepsTheEpoch) {
  const PartitionRecoveryReport p = Untouched();
  const MarkerDecision d = DecideMarker(CleanWithEpoch(7, &p));
  EXPECT_EQ(d.epoch, 7);
  EXPECT_TRUE(d.kept);
  EXPECT_EQ(d.why, "clean shutdown and nothing changed: broker epoch kept");
}

TEST(CleanShutdownMarkerRuleTest, UncleanWritesMinusOne) {
  const PartitionRecoveryReport p = Untouched();
  MarkerRuleInput in = CleanWithEpoch(7, &p);
  in.had_marker = false;
  in.epoch_in.reset();
  const MarkerDecision d = DecideMarker(in);
  EXPECT_EQ(d.epoch, -1);
  EXPECT_FALSE(d.kept);
  EXPECT_NE(d.why.find("unclean shutdown"), std::string::npos) << d.why;
}

TEST(CleanShutdownMarkerRuleTest, EmptyDirWithoutMarkerIsNotCalledUnclean) {
  MarkerRuleInput in;
  const MarkerDecision d = DecideMarker(in);
  EXPECT_EQ(d.epoch, -1);
  EXPECT_EQ(d.why, "empty log dir without a marker on input: no broker epoch to keep");
}

TEST(CleanShutdownMarkerRuleTest, MarkerWithoutEpochWritesMinusOne) {
  const PartitionRecoveryReport p = Untouched();
  MarkerRuleInput in = CleanWithEpoch(7, &p);
  in.epoch_in.reset();
  const MarkerDecision d = DecideMarker(in);
  EXPECT_EQ(d.epoch, -1);
  EXPECT_NE(d.why.find("carried no broker epoch"), std::string::npos) << d.why;
}

TEST(CleanShutdownMarkerRuleTest, TruncationWritesMinusOne) {
  PartitionRecoveryReport p = Untouched();
  p.truncated_bytes = 235;
  const MarkerDecision d = DecideMarker(CleanWithEpoch(7, &p));
  EXPECT_EQ(d.epoch, -1);
  EXPECT_NE(d.why.find("t-0: 235 B truncated"), std::string::npos) << d.why;
}

TEST(CleanShutdownMarkerRuleTest, RebuiltIndexWritesMinusOne) {
  PartitionRecoveryReport p = Untouched();
  p.recovered_segments = 1;
  p.rebuilt_indexes = {"/d/t-0/00000000000000000000.index"};
  const MarkerDecision d = DecideMarker(CleanWithEpoch(7, &p));
  EXPECT_EQ(d.epoch, -1);
  EXPECT_NE(d.why.find("1 segment recovered"), std::string::npos) << d.why;
}

TEST(CleanShutdownMarkerRuleTest, QuarantinedSnapshotWritesMinusOne) {
  PartitionRecoveryReport p = Untouched();
  p.quarantined.push_back(RangeOf("/d/t-0/00000000000000000090.snapshot"));
  EXPECT_EQ(DecideMarker(CleanWithEpoch(7, &p)).epoch, -1);
}

TEST(CleanShutdownMarkerRuleTest, LeftoverTemporaryFilesDoNotCount) {
  // Kafka's own clean start deletes these too.
  PartitionRecoveryReport p = Untouched();
  p.deleted_files = {"/d/t-0/00000000000000000000.log.deleted",
                     "/d/t-0/00000000000000000000.log.cleaned",
                     "/d/t-0/00000000000000000030.log.swap"};
  p.quarantined.push_back(RangeOf("/d/t-0/00000000000000000000.log.deleted"));
  EXPECT_EQ(DecideMarker(CleanWithEpoch(7, &p)).epoch, 7);
}

TEST(CleanShutdownMarkerRuleTest, FullRescanThatChangedNothingKeepsTheEpoch) {
  // --full recovers every segment by design: not a change by itself.
  PartitionRecoveryReport p = Untouched();
  p.recovered_segments = 3;
  p.rebuilt_indexes = {"a.index", "a.timeindex"};
  MarkerRuleInput in = CleanWithEpoch(7, &p);
  in.full_rescan = true;
  const MarkerDecision d = DecideMarker(in);
  EXPECT_EQ(d.epoch, 7);
  EXPECT_EQ(d.why,
            "clean shutdown; --full rescanned every segment and changed nothing: "
            "broker epoch kept");
}

TEST(CleanShutdownMarkerRuleTest, FullRescanWithOtherIndexBytesWritesMinusOne) {
  PartitionRecoveryReport p = Untouched();
  MarkerRuleInput in = CleanWithEpoch(7, &p);
  in.full_rescan = true;
  in.index_files_changed = 2;
  const MarkerDecision d = DecideMarker(in);
  EXPECT_EQ(d.epoch, -1);
  EXPECT_NE(d.why.find("2 index files rewritten with other bytes"), std::string::npos) << d.why;
}

TEST(CleanShutdownMarkerRuleTest, FullRescanThatTruncatedWritesMinusOne) {
  PartitionRecoveryReport p = Untouched();
  p.truncated_bytes = 100;
  MarkerRuleInput in = CleanWithEpoch(7, &p);
  in.full_rescan = true;
  EXPECT_EQ(DecideMarker(in).epoch, -1);
}

TEST(CleanShutdownMarkerRuleTest, RefusedPartitionLeftUnchangedDoesNotCount) {
  PartitionRecoveryReport p = Untouched();
  p.recovered_segments = 2;  // counted before its load was undone
  p.errors = {"cannot load"};
  p.left_unchanged = true;
  EXPECT_EQ(DecideMarker(CleanWithEpoch(7, &p)).epoch, 7);
}

TEST(CleanShutdownMarkerRuleTest, SeveralChangedPartitionsAreCounted) {
  PartitionRecoveryReport a = Untouched();
  a.truncated_bytes = 1;
  PartitionRecoveryReport b = Untouched();
  b.partition = 1;
  b.deleted_files = {"/d/t-1/00000000000000000000.log"};
  MarkerRuleInput in = CleanWithEpoch(7, &a);
  in.partitions.push_back(&b);
  const MarkerDecision d = DecideMarker(in);
  EXPECT_EQ(d.epoch, -1);
  EXPECT_NE(d.why.find("t-0: 1 B truncated, 1 more partitions"), std::string::npos) << d.why;
}

TEST(CleanShutdownMarkerRuleTest, IndexDigestsSeeEveryChange) {
  testing::MemFileSystem fs;
  ASSERT_TRUE(fs.CreateDir("/d").ok());
  ASSERT_TRUE(fs.CreateDir("/d/t-0").ok());
  auto write = [&](const std::string& path, const std::string& text) {
    auto f = fs.Open(path, OpenMode::kTruncate);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->WriteAt(0, AsBytes(text)).ok());
  };
  write("/d/t-0/00000000000000000000.index", "abcd");
  write("/d/t-0/00000000000000000000.timeindex", "efgh");
  write("/d/t-0/00000000000000000000.log", "log bytes are not compared");
  const auto before = IndexFileDigests(&fs, "/d/t-0");
  EXPECT_EQ(before.size(), 2u);
  EXPECT_EQ(CountChangedFiles(before, IndexFileDigests(&fs, "/d/t-0")), 0);
  write("/d/t-0/00000000000000000000.log", "other");
  EXPECT_EQ(CountChangedFiles(before, IndexFileDigests(&fs, "/d/t-0")), 0);
  write("/d/t-0/00000000000000000000.index", "abcx");
  write("/d/t-0/00000000000000000000.txnindex", "new");
  EXPECT_EQ(CountChangedFiles(before, IndexFileDigests(&fs, "/d/t-0")), 2);
}

}  // namespace
}  // namespace daruma
