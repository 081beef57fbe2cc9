// The load's heals (recovery/partition_dir_heal.h, issue 22 rule 2), where
// Kafka refuses the partition: stray files with Kafka suffixes, an
// unparsable leader-epoch-checkpoint, and a damaged active-segment tail
// after a clean shutdown. Each is reported, loses nothing, and loads.
#include "recovery/partition_dir_heal.h"

#include "common/bytes.h"
#include "recovery/log_loader_fixture.h"

namespace daruma {
namespace {

// Its own suite: gtest wants one fixture class per suite name, and the
// fixture's anonymous namespace makes this TU's LogLoaderTest another class.
class PartitionDirHealTest : public LogLoaderTest {};

bool HasWarningContaining(const PartitionRecoveryReport& report, const std::string& text) {
  for (const std::string& w : report.warnings) {
    if (w.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(StrayPartitionFileNameTest, KafkaSuffixWithoutAnOffsetIsStray) {
  EXPECT_TRUE(IsStrayPartitionFileName("backup.log"));
  EXPECT_TRUE(IsStrayPartitionFileName("old.index"));
  EXPECT_TRUE(IsStrayPartitionFileName("x.snapshot"));
  EXPECT_TRUE(IsStrayPartitionFileName("copy.timeindex.deleted"));
  EXPECT_TRUE(IsStrayPartitionFileName("a.b.txnindex.swap"));
  EXPECT_FALSE(IsStrayPartitionFileName("00000000000000000000.log"));
  EXPECT_FALSE(IsStrayPartitionFileName("00000000000000000100.index.deleted"));
  EXPECT_FALSE(IsStrayPartitionFileName("00000000000000000000.index.bak"));
  EXPECT_FALSE(IsStrayPartitionFileName(".00000000000000000000.log.swp"));
  EXPECT_FALSE(IsStrayPartitionFileName("leader-epoch-checkpoint"));
  EXPECT_FALSE(IsStrayPartitionFileName("partition.metadata"));
}

TEST_F(PartitionDirHealTest, StrayFilesAreLeftAsFoundAndThePartitionLoads) {
  WriteLog(3, 10);
  const std::map<std::string, std::string> strays = {{"backup.log", "not a segment"},
                                                     {"old.index", "not an index"},
                                                     {"x.snapshot", "not a snapshot"},
                                                     {"00000000000000000000.index.bak", "bak"},
                                                     {".00000000000000000000.log.swp", "swp"}};
  for (const auto& [name, content] : strays) WriteStringToFile(part_ + "/" + name, content);
  for (bool clean : {true, false}) {
    SCOPED_TRACE(clean ? "clean" : "unclean");
    auto log = Load(clean, clean ? 90 : 0);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    EXPECT_EQ((*log)->log_end_offset(), 90);
    EXPECT_EQ((*log)->num_segments(), 3u);
    ASSERT_TRUE((*log)->Close().ok());
    for (const auto& [name, content] : strays) {
      EXPECT_EQ(ReadFileToString(part_ + "/" + name), content) << name;
    }
    EXPECT_TRUE(HasWarningContaining(report_, part_ + "/backup.log: not a Kafka file"));
    EXPECT_TRUE(HasWarningContaining(report_, part_ + "/x.snapshot: not a Kafka file"));
    EXPECT_FALSE(HasWarningContaining(report_, ".bak"));
    EXPECT_TRUE(report_.deleted_files.empty());
  }
}

TEST_F(PartitionDirHealTest, UnparsableEpochCheckpointIsQuarantinedAndRebuiltFromTheBatches) {
  WriteLog(3, 10);
  const std::string checkpoint = part_ + "/" + kLeaderEpochCheckpointFileName;
  const std::string original = ReadFileToString(checkpoint);
  for (bool clean : {true, false}) {
    SCOPED_TRACE(clean ? "clean" : "unclean");
    // Unclean from the middle segment: the first segment's epoch comes from
    // the rebuild, the others from pass 5's recovery.
    WriteStringToFile(checkpoint, "0\n3\n0 0\n1 garbage\n");
    auto log = Load(clean, clean ? 90 : 45);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    EXPECT_EQ((*log)->leader_epochs(), (std::vector<EpochEntry>{{0, 0}, {1, 30}, {2, 60}}));
    EXPECT_EQ((*log)->log_end_offset(), 90);
    ASSERT_TRUE((*log)->Close().ok());
    EXPECT_EQ(ReadFileToString(checkpoint), original);
    EXPECT_TRUE(HasWarningContaining(report_, "leader epochs are rebuilt from the batches"));
    ASSERT_FALSE(report_.quarantined.empty());
    EXPECT_EQ(ReadFileToString(report_.quarantined.back().quarantine_path),
              "0\n3\n0 0\n1 garbage\n");
  }
}

TEST_F(PartitionDirHealTest, ZeroTailOnACleanStartIsRecoveredAsAfterACrash) {
  WriteLog(2, 10);
  const std::string active = File(30, ".log");
  const std::string whole = ReadFileToString(active);
  WriteStringToFile(active, whole + std::string(4096, '\0'));
  auto log = Load(/*clean=*/true, 60);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), 60);
  EXPECT_EQ(report_.recovered_segments, 1);
  EXPECT_TRUE(HasWarningContaining(report_, "active segment's tail is damaged"));
  ASSERT_TRUE((*log)->Close().ok());
  EXPECT_EQ(ReadFileToString(active), whole);
}

TEST_F(PartitionDirHealTest, GarbageTailOnACleanStartIsQuarantinedNotAppendedAfter) {
  WriteLog(2, 10);
  const std::string active = File(30, ".log");
  const std::string whole = ReadFileToString(active);
  // A size field claiming far more bytes than follow: a torn entry Kafka
  // would keep in the file and append after.
  std::string garbage(300, '\x5a');
  WriteStringToFile(active, whole + garbage);
  auto log = Load(/*clean=*/true, 60);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), 60);
  EXPECT_EQ(report_.recovered_segments, 1);
  ASSERT_EQ(report_.quarantined.size(), 1u);
  EXPECT_EQ(ReadFileToString(report_.quarantined[0].quarantine_path), garbage);
  ASSERT_TRUE((*log)->Close().ok());
  EXPECT_EQ(ReadFileToString(active), whole);
}

// An index rebuild (pass 4: the segment's .index is missing) that meets a
// baseOffset going backwards cuts there, at the earlier batch it disagrees
// with, and trusts nothing after: the later segments go to quarantine whole.
// Kafka stops the whole load there.
TEST_F(PartitionDirHealTest, AnIndexRebuildMeetingOffsetsGoingBackCutsThereAndDropsWhatFollows) {
  WriteLog(3, 10);
  fsys::remove(File(30, ".index"));
  const std::string log = File(30, ".log");
  const std::vector<BatchPos> batches = Batches(log);
  ASSERT_EQ(batches.size(), 10u);
  std::string data = ReadFileToString(log);
  StoreBe64(reinterpret_cast<uint8_t*>(data.data()) + batches[5].position,
            uint64_t(batches[2].base_offset));
  WriteStringToFile(log, data);
  const std::string later = ReadFileToString(File(60, ".log"));

  auto log_or = Load(/*clean=*/true, 90);
  ASSERT_TRUE(log_or.ok()) << log_or.status().ToString();
  // The batch at 36 (index 2) is where the two disagree: the cut is before it.
  EXPECT_EQ((*log_or)->log_end_offset(), 36);
  EXPECT_EQ((*log_or)->num_segments(), 2u);
  ASSERT_TRUE((*log_or)->Close().ok());
  EXPECT_FALSE(fsys::exists(File(60, ".log")));
  bool later_kept = false;
  for (const QuarantinedRange& q : report_.quarantined) {
    if (q.file == File(60, ".log")) later_kept = ReadFileToString(q.quarantine_path) == later;
  }
  EXPECT_TRUE(later_kept) << "the later segment is not in quarantine whole";
  EXPECT_TRUE(HasWarningContaining(report_, "goes to quarantine"));
}

// Kafka's removeStraySnapshots deletes a snapshot at no segment base on
// every start; the report lists it (issue 22: deletedFiles stayed empty).
TEST_F(PartitionDirHealTest, StraySnapshotsTheLoadDeletesAreReported) {
  WriteLog(3, 10);
  const std::string stray = File(45, ".snapshot");
  std::filesystem::copy_file(File(30, ".snapshot"), stray);
  auto log = Load(/*clean=*/true, 90);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(stray));
  EXPECT_EQ(report_.deleted_files, std::vector<std::string>{stray});
}

TEST_F(PartitionDirHealTest, AWholeActiveSegmentOnACleanStartIsNotRecovered) {
  WriteLog(2, 10);
  auto log = Load(/*clean=*/true, 60);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(report_.recovered_segments, 0);
  EXPECT_TRUE(report_.warnings.empty());
}

}  // namespace
}  // namespace daruma
