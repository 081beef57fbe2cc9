// LogChecker's checks beyond the loader, one damage each, on a log written by
// Daruma's Log: .txnindex vs control batches, leader epochs vs batch epochs,
// temporary files; and the plan (LoadLog on an overlay) leaves disk alone.
#include "recovery/log_checker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "log/clean_shutdown_file.h"
#include "log/meta_properties.h"
#include "log/partition_metadata_file.h"
#include "log/transaction_index.h"
#include "record/control_record.h"
#include "record/record_batch_builder.h"
#include "recovery/kraft_metadata_file.h"
#include "support/test_support.h"
#include "tools/generated_log_dir.h"

namespace daruma {
namespace {

using namespace tools::testlog;  // NOLINT: test helpers
using testing::kT0;
using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

class LogCheckerTest : public ::testing::Test {
 protected:
  void SetUp() override { WriteLogDir(dir_); }

  LogDirCheck Check() {
    const TreeState before = SnapshotTree(dir_);
    CheckOptions o;
    o.threads = 2;
    auto d = CheckLogDir(dir_, o);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(SnapshotTree(dir_), before);
    return d.ok() ? std::move(*d) : LogDirCheck{};
  }

  // Writes `text` to `path` and checks: the one problem found, about `path`.
  CheckProblem OnlyProblemAfterWriting(const std::string& path, const std::string& text) {
    WriteStringToFile(path, text);
    const LogDirCheck d = Check();
    const std::vector<CheckProblem>& problems = d.partitions.at(0).problems;
    EXPECT_EQ(problems.size(), 1u);
    if (problems.empty())
      return CheckProblem{DamageKind::kUnloadable, "", -1, std::nullopt, "", ""};
    EXPECT_EQ(problems[0].file, path);
    return problems[0];
  }

  TempDir tmp_;
  std::string dir_ = tmp_.Join("data");
};

TEST_F(LogCheckerTest, CleanLogHasNoProblemsButAPlan) {
  const LogDirCheck d = Check();
  EXPECT_FALSE(d.HasProblems());
  ASSERT_EQ(d.partitions.size(), 1u);
  const PartitionCheck& p = d.partitions[0];
  EXPECT_EQ(p.plan.log_end_offset, kLeo);
  EXPECT_EQ(p.plan.recovered_segments, kSegments);  // every segment scanned
  EXPECT_EQ(p.data_bytes_dropped, 0);
  EXPECT_FALSE(p.changes.empty());  // the rebuilt indexes, in the overlay only
  EXPECT_TRUE(d.clean_shutdown);
}

TEST_F(LogCheckerTest, TxnIndexDisagreeingWithControlBatches) {
  const std::string path = SegmentFile(dir_, SegmentBase(1), ".txnindex");
  TransactionIndex index(path, SegmentBase(1));
  ASSERT_TRUE(index.Append({7, 31, 35, 31}).ok());
  ASSERT_TRUE(index.Close().ok());
  const LogDirCheck d = Check();
  const auto& problems = d.partitions[0].problems;
  // The entry itself, and (since a rebuild would drop it) the old file's
  // bytes that repair keeps in quarantine.
  ASSERT_EQ(problems.size(), 2u);
  for (const auto& problem : problems) EXPECT_EQ(problem.file, path);
  auto entry = std::find_if(problems.begin(), problems.end(), [](const auto& problem) {
    return problem.what.find("expected no entry") != std::string::npos;
  });
  ASSERT_NE(entry, problems.end());
  EXPECT_EQ(entry->position, 0);
  EXPECT_EQ(entry->offset, 35);
}

// A crash between an ABORT marker and its .txnindex entry leaves the file
// short; a start without the marker rescans the segments from the recovery
// point on and rebuilds it (Kafka's recoverLog), so that is no problem. The
// same file after a clean shutdown is one.
TEST_F(LogCheckerTest, AShortTxnIndexThatAnUncleanStartRebuildsIsNoProblem) {
  const std::string dir = tmp_.Join("txn");
  std::filesystem::create_directories(dir);
  const int64_t now = kT0;
  {
    ManualClock clock(now);
    auto log = Log::CreateEmpty(FileSystem::Default(), JoinPath(dir, "t-0"), TopicPartition{"t", 0},
                                tools::testlog::TestConfig(), &clock);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    BatchBuilderOptions o;
    o.producer_id = 11;
    o.producer_epoch = 0;
    o.base_sequence = 0;
    o.is_transactional = true;
    auto data = BuildRecordBatch(o, {{now, "k", "v", {}}, {now, "k", "v", {}}});
    ASSERT_TRUE(data.ok());
    ASSERT_TRUE((*log)->AppendAsLeader(*data, 0).ok());
    const Bytes marker = BuildEndTxnMarkerBatch(0, 0, 11, 0, ControlRecordType::kAbort, 0, now);
    ASSERT_TRUE((*log)->AppendAsLeader(marker, 0, AppendOrigin::kCoordinator).ok());
    // A second segment, so that the first can lie below the recovery point.
    ASSERT_TRUE((*log)->Roll().ok());
    BatchBuilderOptions plain;
    auto more = BuildRecordBatch(plain, {{now, "k", "v", {}}});
    ASSERT_TRUE(more.ok());
    ASSERT_TRUE((*log)->AppendAsLeader(*more, 0).ok());
    (*log)->UpdateHighWatermark(4);
    ASSERT_TRUE((*log)->FlushAll().ok());
    ASSERT_TRUE((*log)->Close().ok());
  }
  const std::string txnindex = JoinPath(dir, "t-0/00000000000000000000.txnindex");
  ASSERT_EQ(std::filesystem::file_size(txnindex), 34u);
  std::filesystem::resize_file(txnindex, 0);
  auto check = [&] {
    CheckOptions o;
    auto d = CheckLogDir(dir, o);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    std::vector<CheckProblem> txn;
    for (const CheckProblem& p : d->partitions.at(0).problems) {
      if (p.file == txnindex) txn.push_back(p);
    }
    return txn;
  };
  auto expect_missing_entry = [](const std::vector<CheckProblem>& problems) {
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_EQ(problems[0].kind, DamageKind::kCorruptIndex);
    EXPECT_NE(problems[0].what.find("missing aborted transaction (pid 11"), std::string::npos)
        << problems[0].what;
  };
  // Crashed (no marker), recovery point inside the first segment: the start
  // rescans it and rebuilds the file.
  WriteCheckpoints(dir, 2, 4);
  EXPECT_TRUE(check().empty());
  // Recovery point at the second segment: the first is trusted as it is, and
  // a read_committed consumer would get the aborted records.
  WriteCheckpoints(dir, 3, 4);
  expect_missing_entry(check());
  // A clean shutdown trusts every segment.
  WriteCheckpoints(dir, 0, 4);
  ASSERT_TRUE(CleanShutdownFile(dir).Write(7).ok());
  expect_missing_entry(check());
}

// What a kill -9 routinely leaves, which the next start handles without
// being asked (helper-53's crash loops): the active segment's index not yet
// created, a producer snapshot cut short at its base, temp files of atomic
// writes. None is a problem; an index missing below the recovery point is.
TEST_F(LogCheckerTest, WhatACrashRoutinelyLeavesIsNoProblem) {
  std::filesystem::remove(JoinPath(dir_, kCleanShutdownFileName));
  WriteCheckpoints(dir_, SegmentBase(2), kLeo);
  std::filesystem::remove(SegmentFile(dir_, SegmentBase(2), ".index"));
  std::filesystem::remove(SegmentFile(dir_, SegmentBase(2), ".timeindex"));
  const std::string snapshot = SegmentFile(dir_, SegmentBase(2), ".snapshot");
  ASSERT_TRUE(std::filesystem::exists(snapshot));
  std::filesystem::resize_file(snapshot, 0);
  const std::string epoch_tmp = JoinPath(dir_, "t-0/leader-epoch-checkpoint.tmp");
  const std::string root_tmp = JoinPath(dir_, "recovery-point-offset-checkpoint.tmp");
  WriteStringToFile(epoch_tmp, "0\n1\n0 0\n");
  WriteStringToFile(root_tmp, "0\n");
  LogDirCheck d = Check();
  for (const CheckProblem& p : d.problems) ADD_FAILURE() << p.ToString();
  for (const CheckProblem& p : d.partitions.at(0).problems) ADD_FAILURE() << p.ToString();
  for (const std::string& tmp : {epoch_tmp, root_tmp}) {
    EXPECT_TRUE(std::any_of(d.notes.begin(), d.notes.end(), [&](const std::string& n) {
      return n.rfind(tmp + ": left-over temporary file of an interrupted write", 0) == 0;
    })) << tmp;
  }

  // The segment below the one holding the recovery point is trusted as it is.
  const std::string index = SegmentFile(dir_, SegmentBase(1), ".index");
  std::filesystem::remove(index);
  d = Check();
  ASSERT_EQ(d.partitions.at(0).problems.size(), 1u);
  EXPECT_EQ(d.partitions[0].problems[0].file, index);
  EXPECT_EQ(d.partitions[0].problems[0].kind, DamageKind::kMissingIndex);
}

TEST_F(LogCheckerTest, LeaderEpochCheckpointDisagreeingWithBatches) {
  // Epoch 1 (offsets 30..59) missing.
  const CheckProblem p =
      OnlyProblemAfterWriting(JoinPath(dir_, "t-0/leader-epoch-checkpoint"), "0\n2\n0 0\n2 60\n");
  EXPECT_EQ(p.offset, SegmentBase(1));
  EXPECT_NE(p.what.find("expected epoch 1"), std::string::npos) << p.what;
  EXPECT_NE(p.what.find("found 0"), std::string::npos) << p.what;
  // A start keeps a parsable checkpoint, as Kafka does; only repair rebuilds it.
  EXPECT_EQ(p.action,
            "run `daruma repair`, which rebuilds it from the batches (`daruma recover` and "
            "`daruma serve` keep it, as Kafka does)");
}

// DeleteRecords may leave the log start offset inside a batch; start-up
// then writes the first epoch entry at it, as Kafka's truncateFromStart does.
// Check once reported that very file as damage, and repair could not mend it.
TEST_F(LogCheckerTest, AnEpochEntryAtALogStartOffsetInsideTheFirstBatchIsNoProblem) {
  WriteStringToFile(JoinPath(dir_, "log-start-offset-checkpoint"), "0\n1\nt 0 1\n");
  WriteStringToFile(JoinPath(dir_, "t-0/leader-epoch-checkpoint"), "0\n3\n0 1\n1 30\n2 60\n");
  const LogDirCheck d = Check();
  for (const CheckProblem& p : d.partitions.at(0).problems)
    ADD_FAILURE() << p.file << ": " << p.what;
}

// A checkpoint that does not parse is one finding, not two (the plan's
// quarantine of it and the epoch check's own reading), and it names what is
// wrong with it.
TEST_F(LogCheckerTest, AnUnparsableLeaderEpochCheckpointIsReportedOnce) {
  const CheckProblem p =
      OnlyProblemAfterWriting(JoinPath(dir_, "t-0/leader-epoch-checkpoint"), "garbage\n");
  EXPECT_EQ(p.kind, DamageKind::kCorruptCheckpoint);
  EXPECT_NE(p.what.find("'garbage'"), std::string::npos) << p.what;
  EXPECT_NE(p.what.find("8 bytes would be dropped"), std::string::npos) << p.what;
}

// Temp files of interrupted atomic writes are notes (nothing needs doing);
// a directory that is no partition is a problem (Kafka refuses to start).
TEST_F(LogCheckerTest, TemporaryFilesAndUnparsableDirs) {
  WriteStringToFile(JoinPath(dir_, "t-0/leader-epoch-checkpoint.tmp"), "x");
  WriteStringToFile(JoinPath(dir_, "recovery-point-offset-checkpoint.tmp"), "x");
  std::filesystem::create_directories(JoinPath(dir_, "not a partition"));
  const LogDirCheck d = Check();
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].file, JoinPath(dir_, "not a partition"));
  EXPECT_TRUE(d.partitions[0].problems.empty());
  EXPECT_EQ(d.notes.size(), 2u);
}

// What a crash soon after a retention pass or a compaction leaves, and every
// start deletes, is said in a note, not counted as a problem (exit 0).
TEST_F(LogCheckerTest, DeletedAndCleanedLeftoversAreNotesNotProblems) {
  const std::string deleted = JoinPath(dir_, "t-0/00000000000000000000.log.deleted");
  const std::string deleted_index = JoinPath(dir_, "t-0/00000000000000000000.index.deleted");
  const std::string cleaned = JoinPath(dir_, "t-0/00000000000000000000.log.cleaned");
  WriteStringToFile(deleted, std::string(100, 'x'));
  WriteStringToFile(deleted_index, "");
  WriteStringToFile(cleaned, std::string(10, 'y'));
  const LogDirCheck d = Check();
  EXPECT_FALSE(d.HasProblems());
  for (const CheckProblem& p : d.partitions.at(0).problems) ADD_FAILURE() << p.ToString();
  for (const std::string& file : {deleted, deleted_index, cleaned}) {
    EXPECT_EQ(std::count_if(d.notes.begin(), d.notes.end(),
                            [&](const std::string& n) { return n.find(file + ": left by ") == 0; }),
              1)
        << file;
  }
}

// No producer snapshot at all: a problem after a clean shutdown (the start
// would trust the snapshots and begin with empty producer state), normal
// after an unclean one (the start rebuilds the state from the log).
TEST_F(LogCheckerTest, MissingProducerSnapshotsMatterOnlyAfterACleanShutdown) {
  for (const auto& e : std::filesystem::directory_iterator(JoinPath(dir_, "t-0"))) {
    if (e.path().extension() == ".snapshot") std::filesystem::remove(e.path());
  }
  auto missing = [](const LogDirCheck& d) {
    for (const CheckProblem& p : d.partitions[0].problems) {
      if (p.what.find("no producer snapshot at all") != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(missing(Check()));
  std::filesystem::remove(JoinPath(dir_, kCleanShutdownFileName));
  const LogDirCheck unclean = Check();
  EXPECT_FALSE(unclean.clean_shutdown);
  EXPECT_FALSE(missing(unclean));
}

// A broker killed while its active segments were short leaves their indexes
// preallocated and all zero: an empty segment, and one under
// index.interval.bytes (no entry yet, so entry 0 reads as offset 0 at
// position 0, which Kafka never writes: its first entry lies past the
// interval). That is the normal state after a crash, which recovery rebuilds
// without a word: check must not call it damage.
TEST_F(LogCheckerTest, ZeroIndexesOfShortActiveSegmentsAfterACrashAreNoDamage) {
  std::filesystem::remove(JoinPath(dir_, kCleanShutdownFileName));
  BatchBuilderOptions o;
  o.base_offset = 0;
  auto batch = BuildRecordBatch(o, {{kT0, "k", "v", {}}, {kT0 + 5, "k", "w", {}}});
  ASSERT_TRUE(batch.ok());
  for (const char* partition : {"empty-0", "short-0"}) {
    const std::string d = JoinPath(dir_, partition);
    std::filesystem::create_directories(d);
    const std::string log(reinterpret_cast<const char*>(batch->data()), batch->size());
    WriteStringToFile(JoinPath(d, "00000000000000000000.log"),
                      std::string(partition) == "short-0" ? log : "");
    WriteStringToFile(JoinPath(d, "00000000000000000000.index"), std::string(4096, '\0'));
    WriteStringToFile(JoinPath(d, "00000000000000000000.timeindex"), std::string(4092, '\0'));
  }
  const LogDirCheck d = Check();
  int checked = 0;
  for (const PartitionCheck& p : d.partitions) {
    if (p.tp.topic != "empty" && p.tp.topic != "short") continue;
    ++checked;
    for (const CheckProblem& problem : p.problems) {
      EXPECT_NE(problem.kind, DamageKind::kCorruptIndex) << problem.what;
    }
  }
  EXPECT_EQ(checked, 2);
}

// Recovery skips a stray file and loads the partition (partition_dir_heal.h);
// check names it, for the operator only: Kafka refuses such a partition.
TEST_F(LogCheckerTest, StrayFileWithAKafkaSuffixIsAnOperatorProblem) {
  const std::string stray = JoinPath(dir_, "t-0/backup.log");
  WriteStringToFile(stray, "old copy");
  const LogDirCheck d = Check();
  const auto& problems = d.partitions[0].problems;
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].file, stray);
  EXPECT_TRUE(problems[0].operator_only);
  EXPECT_NE(problems[0].what.find("not a Kafka file"), std::string::npos) << problems[0].what;
  EXPECT_FALSE(d.partitions[0].load_failed);
  EXPECT_EQ(ReadFileToString(stray), "old copy");
}

// What `daruma recover` refuses across dirs, check reports too (issue 22).
TEST_F(LogCheckerTest, APartitionLiveInTwoDirsAndDisagreeingMetaPropertiesAreReported) {
  const std::string other = tmp_.Join("other");
  std::filesystem::create_directories(other);
  std::filesystem::copy(JoinPath(dir_, "t-0"), JoinPath(other, "t-0"),
                        std::filesystem::copy_options::recursive);
  WriteStringToFile(JoinPath(dir_, kMetaPropertiesFileName),
                    "version=1\ncluster.id=aaaaaaaaaaaaaaaaaaaaaa\nnode.id=1\n");
  WriteStringToFile(JoinPath(other, kMetaPropertiesFileName),
                    "version=1\ncluster.id=bbbbbbbbbbbbbbbbbbbbbb\nnode.id=1\n");
  std::vector<LogDirCheck> dirs;
  for (const std::string& d : {dir_, other}) {
    auto checked = CheckLogDir(d, CheckOptions{});
    ASSERT_TRUE(checked.ok()) << checked.status().ToString();
    dirs.push_back(std::move(*checked));
  }
  CheckDirsAgree(&dirs);
  EXPECT_TRUE(dirs[0].problems.empty());
  ASSERT_EQ(dirs[1].problems.size(), 2u);
  EXPECT_NE(dirs[1].problems[0].what.find("is also live in " + JoinPath(dir_, "t-0")),
            std::string::npos)
      << dirs[1].problems[0].what;
  EXPECT_EQ(dirs[1].problems[1].file, JoinPath(other, kMetaPropertiesFileName));
  for (const CheckProblem& p : dirs[1].problems) EXPECT_TRUE(p.operator_only);
}

// Log dirs that share a directory.id (one copied whole), or one naming an id
// Kafka reserves, stop Kafka and every start of Daruma's (LogDirs); check
// names each file at fault, for the operator.
TEST_F(LogCheckerTest, SharedAndReservedDirectoryIdsAreReported) {
  const std::string other = tmp_.Join("other");
  const std::string third = tmp_.Join("third");
  std::filesystem::create_directories(other);
  std::filesystem::create_directories(third);
  const std::string ids = "version=1\ncluster.id=aaaaaaaaaaaaaaaaaaaaaa\nnode.id=1\n";
  WriteStringToFile(JoinPath(dir_, kMetaPropertiesFileName),
                    ids + "directory.id=WvVzx-Xl3swcqvxXsPbjww\n");
  WriteStringToFile(JoinPath(other, kMetaPropertiesFileName),
                    ids + "directory.id=AAAAAAAAAAAAAAAAAAAAAg\n");
  WriteStringToFile(JoinPath(third, kMetaPropertiesFileName),
                    ids + "directory.id=WvVzx-Xl3swcqvxXsPbjww\n");
  std::vector<LogDirCheck> dirs;
  for (const std::string& d : {dir_, other, third}) {
    auto checked = CheckLogDir(d, CheckOptions{});
    ASSERT_TRUE(checked.ok()) << checked.status().ToString();
    EXPECT_FALSE(checked->HasProblems());  // each file alone is fine
    dirs.push_back(std::move(*checked));
  }
  CheckDirsAgree(&dirs);
  EXPECT_TRUE(dirs[0].problems.empty());
  ASSERT_EQ(dirs[1].problems.size(), 1u);
  ASSERT_EQ(dirs[2].problems.size(), 1u);
  const CheckProblem& reserved = dirs[1].problems[0];
  EXPECT_EQ(reserved.file, JoinPath(other, kMetaPropertiesFileName));
  EXPECT_EQ(reserved.what,
            "directory.id AAAAAAAAAAAAAAAAAAAAAg is an id Kafka reserves (LOST), never a log "
            "dir's (Kafka, `daruma serve` and `daruma recover` refuse to start)");
  const CheckProblem& shared = dirs[2].problems[0];
  EXPECT_EQ(shared.file, JoinPath(third, kMetaPropertiesFileName));
  EXPECT_EQ(shared.what, "directory.id WvVzx-Xl3swcqvxXsPbjww is also the directory.id of " +
                             JoinPath(dir_, kMetaPropertiesFileName) +
                             ": each log dir needs its own (Kafka, `daruma serve` and `daruma "
                             "recover` refuse to start)");
  for (const CheckProblem* p : {&reserved, &shared}) {
    EXPECT_EQ(p->kind, DamageKind::kDirConflict);
    EXPECT_TRUE(p->operator_only);
    EXPECT_NE(p->action.find("delete that directory.id line"), std::string::npos) << p->action;
  }
}

// What stops a start, or that `daruma serve` sets aside, check reports
// before: an unreadable partition.metadata or meta.properties, and
// partitions of one topic whose partition.metadata name different topics.
TEST_F(LogCheckerTest, UnreadablePartitionMetadataAndMetaPropertiesAreOperatorProblems) {
  const std::string metadata = JoinPath(dir_, "t-0/partition.metadata");
  const CheckProblem p = OnlyProblemAfterWriting(metadata, "garbage");
  EXPECT_EQ(p.kind, DamageKind::kCorruptMetadata);
  EXPECT_TRUE(p.operator_only);
  EXPECT_NE(p.action.find("daruma-quarantine"), std::string::npos) << p.action;

  WriteStringToFile(metadata, PartitionMetadataFile::Serialize(Uuid::Random()));
  const std::string meta = JoinPath(dir_, kMetaPropertiesFileName);
  WriteStringToFile(meta, "version=1\ncluster.id=\n");
  const LogDirCheck d = Check();
  EXPECT_TRUE(d.partitions.at(0).problems.empty());
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].file, meta);
  EXPECT_EQ(d.problems[0].kind, DamageKind::kCorruptMetadata);
  EXPECT_TRUE(d.problems[0].operator_only);
  EXPECT_NE(d.problems[0].what.find("refuse to start"), std::string::npos) << d.problems[0].what;
}

TEST_F(LogCheckerTest, PartitionsOfOneTopicWithDifferentTopicIdsAreReported) {
  std::filesystem::copy(JoinPath(dir_, "t-0"), JoinPath(dir_, "t-1"),
                        std::filesystem::copy_options::recursive);
  const Uuid a = Uuid::Random();
  WriteStringToFile(JoinPath(dir_, "t-0/partition.metadata"), PartitionMetadataFile::Serialize(a));
  WriteStringToFile(JoinPath(dir_, "t-1/partition.metadata"), PartitionMetadataFile::Serialize(a));
  EXPECT_FALSE(Check().HasProblems());

  const Uuid b = Uuid::Random();
  WriteStringToFile(JoinPath(dir_, "t-1/partition.metadata"), PartitionMetadataFile::Serialize(b));
  const LogDirCheck d = Check();
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].file, JoinPath(dir_, "t-1/partition.metadata"));
  EXPECT_EQ(d.problems[0].kind, DamageKind::kDirConflict);
  EXPECT_TRUE(d.problems[0].operator_only);
  EXPECT_NE(d.problems[0].what.find(b.ToString()), std::string::npos) << d.problems[0].what;
  EXPECT_NE(d.problems[0].what.find(a.ToString()), std::string::npos) << d.problems[0].what;
}

// KRaft's metadata log is not loaded, but named and verified read-only.
TEST_F(LogCheckerTest, TheMetadataLogIsNamedAndVerifiedReadOnly) {
  const std::string meta = JoinPath(dir_, "__cluster_metadata-0");
  std::filesystem::create_directories(meta);
  const std::string segment = JoinPath(meta, "00000000000000000000.log");
  std::filesystem::copy_file(SegmentFile(dir_, 0, ".log"), segment);
  LogDirCheck d = Check();
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_NE(d.notes[0].find(meta + ": KRaft's metadata log"), std::string::npos) << d.notes[0];
  EXPECT_NE(d.notes[0].find("1 segment(s)"), std::string::npos) << d.notes[0];
  EXPECT_NE(d.notes[0].find("no damage"), std::string::npos) << d.notes[0];
  EXPECT_FALSE(d.HasProblems());
  EXPECT_EQ(d.partitions.size(), 1u);  // still not a partition

  const std::string whole = ReadFileToString(segment);
  WriteStringToFile(segment, whole + std::string(100, '\x7f'));
  d = Check();
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].file, segment);
  EXPECT_EQ(d.problems[0].position, int64_t(whole.size()));
  EXPECT_TRUE(d.problems[0].operator_only);
  EXPECT_EQ(ReadFileToString(segment), whole + std::string(100, '\x7f'));  // read-only
}

// What a Kafka broker stops at when it starts, beside the segments: a
// newest snapshot that is not a whole snapshot, a quorum-state it cannot read.
TEST_F(LogCheckerTest, ADamagedKraftSnapshotAndQuorumStateAreOperatorProblems) {
  const std::string meta = JoinPath(dir_, "__cluster_metadata-0");
  std::filesystem::create_directories(meta);
  std::filesystem::copy_file(SegmentFile(dir_, 0, ".log"),
                             JoinPath(meta, "00000000000000000000.log"));
  const std::string quorum = JoinPath(meta, "quorum-state");
  WriteStringToFile(quorum,
                    R"({"clusterId":"","leaderId":1,"leaderEpoch":1,"votedId":-1,)"
                    R"("appliedOffset":0,"currentVoters":[{"voterId":1}],"data_version":0})");
  EXPECT_FALSE(Check().HasProblems());

  // Batches without the SnapshotHeader and SnapshotFooter control records.
  const std::string snapshot = JoinPath(meta, "00000000000000000003-0000000001.checkpoint");
  std::filesystem::copy_file(SegmentFile(dir_, 0, ".log"), snapshot);
  WriteStringToFile(quorum, R"({"leaderId":1,"leaderEpoch":1})");
  LogDirCheck d = Check();
  ASSERT_EQ(d.problems.size(), 2u);
  EXPECT_EQ(d.problems[0].kind, DamageKind::kCorruptMetadata);
  EXPECT_EQ(d.problems[0].file, quorum);
  EXPECT_NE(d.problems[0].what.find("no data_version field"), std::string::npos)
      << d.problems[0].what;
  EXPECT_EQ(d.problems[1].kind, DamageKind::kCorruptSnapshot);
  EXPECT_EQ(d.problems[1].file, snapshot);
  EXPECT_NE(d.problems[1].what.find("not a whole snapshot"), std::string::npos)
      << d.problems[1].what;
  EXPECT_NE(d.problems[1].what.find("the newest"), std::string::npos) << d.problems[1].what;
  for (const CheckProblem& p : d.problems) EXPECT_TRUE(p.operator_only);
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_NE(d.notes[0].find("no whole snapshot"), std::string::npos) << d.notes[0];

  WriteStringToFile(quorum, "not json");
  d = Check();
  ASSERT_EQ(d.problems.size(), 2u);
  EXPECT_NE(d.problems[0].what.find("not valid JSON"), std::string::npos) << d.problems[0].what;

  // A whole snapshot beside a snapshot being written (`.checkpoint.part`,
  // which Kafka removes at start) and a version 1 quorum-state: healthy.
  std::filesystem::remove(snapshot);
  // A KRaft snapshot as Kafka writes one: SnapshotHeader, SnapshotFooter.
  testing::MetadataFile()
      .Control(ControlRecordType::kSnapshotHeader)
      .Control(ControlRecordType::kSnapshotFooter)
      .WriteTo(JoinPath(meta, "00000000000000000002-0000000001.checkpoint"));
  WriteStringToFile(JoinPath(meta, "00000000000000000009-0000000001.checkpoint.part"), "partial");
  WriteStringToFile(quorum, R"({"leaderId":1,"leaderEpoch":2,"votedId":-1,)"
                            R"("votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1})");
  d = Check();
  EXPECT_FALSE(d.HasProblems()) << d.problems.at(0).ToString();
  EXPECT_NE(d.notes.at(0).find("newest whole snapshot 00000000000000000002-0000000001.checkpoint"),
            std::string::npos)
      << d.notes[0];
}

TEST_F(LogCheckerTest, ProblemToStringNamesFilePositionOffset) {
  CheckProblem p{DamageKind::kTornTail,         "/d/t-0/0.log",       12, 34,
                 "the last batch is cut short", "run `daruma repair`"};
  EXPECT_EQ(p.ToString(),
            "/d/t-0/0.log at byte 12, offset 34: torn_tail: the last batch is cut short -- run "
            "`daruma repair`");
}

}  // namespace
}  // namespace daruma
