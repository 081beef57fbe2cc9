// `daruma dump` of the non-index metadata files: `.txnindex` and `.snapshot`
// (kafka-dump-log's exact lines, spec §12.2), the offset checkpoints,
// `leader-epoch-checkpoint` and `partition.metadata` (Daruma's additions),
// unknown files, and the JSON form of each. Files are generated in a TempDir.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "log/producer_snapshot_file.h"
#include "record/record_batch_builder.h"
#include "support/test_support.h"
#include "tools/dump_command.h"

namespace daruma::tools {
namespace {

using ::daruma::testing::TempDir;
using ::daruma::testing::WriteStringToFile;

struct FilesDumpRun {
  int rc = -1;
  std::string out;
  std::string err;
};

FilesDumpRun DumpPath(const std::string& path, bool json = false) {
  DumpOptions o;
  o.files = {path};
  o.json = json;
  std::ostringstream out, err;
  FilesDumpRun run;
  run.rc = RunDump(o, out, err);
  run.out = out.str();
  run.err = err.str();
  return run;
}

std::string TxnEntry(int16_t version, int64_t pid, int64_t first, int64_t last, int64_t lso) {
  Bytes b;
  ByteWriter w(&b);
  w.WriteInt16(version);
  w.WriteInt64(pid);
  w.WriteInt64(first);
  w.WriteInt64(last);
  w.WriteInt64(lso);
  return std::string(b.begin(), b.end());
}

TEST(DumpFilesTest, TxnIndexEntriesIgnoringATrailingPartialEntry) {
  TempDir tmp;
  const std::string path = tmp.Join("00000000000000000080.txnindex");
  testing::WriteStringToFile(
      path, TxnEntry(0, 2000, 70, 85, 86) + TxnEntry(0, 3000, 75, 90, 80) + "partial");
  FilesDumpRun run = DumpPath(path);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.out, "Dumping " + path +
                         "\nversion: 0 producerId: 2000 firstOffset: 70 lastOffset: 85 "
                         "lastStableOffset: 86\n"
                         "version: 0 producerId: 3000 firstOffset: 75 lastOffset: 90 "
                         "lastStableOffset: 80\n");
}

TEST(DumpFilesTest, TxnIndexWithUnknownVersionIsCorrupt) {
  TempDir tmp;
  const std::string path = tmp.Join("00000000000000000080.txnindex");
  testing::WriteStringToFile(path, TxnEntry(0x0100, 2000, 70, 85, 86));
  FilesDumpRun run = DumpPath(path);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.out, "Dumping " + path + "\n");
  EXPECT_NE(run.err.find(path), std::string::npos) << run.err;
}

TEST(DumpFilesTest, TxnIndexJson) {
  TempDir tmp;
  const std::string path = tmp.Join("00000000000000000080.txnindex");
  testing::WriteStringToFile(path, TxnEntry(0, 2000, 70, 85, 86));
  FilesDumpRun run = DumpPath(path, /*json=*/true);
  EXPECT_EQ(run.out, R"({"type":"abortedTxn","file":")" + path +
                         R"(","version":0,"producerId":2000,"firstOffset":70,"lastOffset":85,)"
                         R"("lastStableOffset":86})"
                         "\n");
}

std::vector<ProducerSnapshotEntry> SnapshotEntries() {
  ProducerSnapshotEntry with_batch;
  with_batch.producer_id = 1000;
  with_batch.epoch = 2;
  with_batch.last_sequence = 9;
  with_batch.last_offset = 45;
  with_batch.offset_delta = 4;
  with_batch.timestamp = 1700000000123;
  with_batch.coordinator_epoch = -1;
  with_batch.current_txn_first_offset = -1;
  ProducerSnapshotEntry open_txn;
  open_txn.producer_id = 3000;
  open_txn.epoch = 1;
  open_txn.last_sequence = -1;
  open_txn.last_offset = -1;
  open_txn.offset_delta = 0;
  open_txn.timestamp = 1700000000999;
  open_txn.coordinator_epoch = 5;
  open_txn.current_txn_first_offset = 470;
  ProducerSnapshotEntry wrapped = with_batch;  // first sequence wraps below 0
  wrapped.producer_id = 4000;
  wrapped.last_sequence = 1;
  wrapped.offset_delta = 3;
  return {with_batch, open_txn, wrapped};
}

TEST(DumpFilesTest, ProducerSnapshotLinesKeepKafkasTrailingSpace) {
  TempDir tmp;
  const std::string path = tmp.Join("00000000000000000476.snapshot");
  ASSERT_TRUE(WriteProducerSnapshot(FileSystem::Default(), path, SnapshotEntries()).ok());
  FilesDumpRun run = DumpPath(path);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.out,
            "Dumping " + path +
                "\nproducerId: 1000 producerEpoch: 2 coordinatorEpoch: -1 currentTxnFirstOffset: "
                "OptionalLong.empty lastTimestamp: 1700000000123 firstSequence: 5 lastSequence: 9 "
                "lastOffset: 45 offsetDelta: 4 timestamp: 1700000000123\n"
                "producerId: 3000 producerEpoch: 1 coordinatorEpoch: 5 currentTxnFirstOffset: "
                "OptionalLong[470] lastTimestamp: 1700000000999 \n"
                "producerId: 4000 producerEpoch: 2 coordinatorEpoch: -1 currentTxnFirstOffset: "
                "OptionalLong.empty lastTimestamp: 1700000000123 firstSequence: 2147483646 "
                "lastSequence: 1 lastOffset: 45 offsetDelta: 3 timestamp: 1700000000123\n");
}

TEST(DumpFilesTest, CorruptSnapshotGoesToStderr) {
  TempDir tmp;
  const std::string path = tmp.Join("00000000000000000476.snapshot");
  ASSERT_TRUE(WriteProducerSnapshot(FileSystem::Default(), path, SnapshotEntries()).ok());
  std::string bytes = testing::ReadFileToString(path);
  bytes[20] ^= 1;
  testing::WriteStringToFile(path, bytes);
  FilesDumpRun run = DumpPath(path);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.out, "Dumping " + path + "\n");
  EXPECT_NE(run.err.find(path), std::string::npos) << run.err;
}

TEST(DumpFilesTest, ProducerSnapshotJson) {
  TempDir tmp;
  const std::string path = tmp.Join("00000000000000000476.snapshot");
  ASSERT_TRUE(WriteProducerSnapshot(FileSystem::Default(), path, SnapshotEntries()).ok());
  FilesDumpRun run = DumpPath(path, /*json=*/true);
  std::istringstream lines(run.out);
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  auto a = nlohmann::json::parse(first);
  EXPECT_EQ(a["producerId"], 1000);
  EXPECT_EQ(a["firstSequence"], 5);
  EXPECT_TRUE(a["currentTxnFirstOffset"].is_null());
  auto b = nlohmann::json::parse(second);
  EXPECT_EQ(b["currentTxnFirstOffset"], 470);
  EXPECT_FALSE(b.contains("firstSequence"));
}

TEST(DumpFilesTest, OffsetCheckpointSortedByTopicAndPartition) {
  TempDir tmp;
  const std::string path = tmp.Join("recovery-point-offset-checkpoint");
  testing::WriteStringToFile(path, "0\n3\norders 1 877\norders 0 1523\nclicks 0 5\n");
  FilesDumpRun run = DumpPath(path);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.out, "Dumping " + path +
                         "\ntopic: clicks partition: 0 offset: 5\n"
                         "topic: orders partition: 0 offset: 1523\n"
                         "topic: orders partition: 1 offset: 877\n");
}

TEST(DumpFilesTest, MalformedCheckpointNamesTheLine) {
  TempDir tmp;
  const std::string path = tmp.Join("replication-offset-checkpoint");
  testing::WriteStringToFile(path, "0\n1\norders zero 5\n");
  FilesDumpRun run = DumpPath(path);
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.err.find(path), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("3"), std::string::npos) << run.err;
}

TEST(DumpFilesTest, LeaderEpochCheckpoint) {
  TempDir tmp;
  const std::string path = tmp.Join("leader-epoch-checkpoint");
  testing::WriteStringToFile(path, "0\n3\n0 0\n1 600\n3 1350\n");
  FilesDumpRun run = DumpPath(path);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.out, "Dumping " + path +
                         "\nepoch: 0 startOffset: 0\nepoch: 1 startOffset: 600\n"
                         "epoch: 3 startOffset: 1350\n");
  FilesDumpRun json = DumpPath(path, /*json=*/true);
  EXPECT_EQ(json.out.substr(0, json.out.find('\n')),
            R"({"type":"leaderEpochEntry","file":")" + path + R"(","epoch":0,"startOffset":0})");
}

TEST(DumpFilesTest, PartitionMetadata) {
  TempDir tmp;
  const std::string path = tmp.Join("partition.metadata");
  testing::WriteStringToFile(path, "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ");
  FilesDumpRun run = DumpPath(path);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.out, "Dumping " + path + "\nversion: 0 topicId: AAAAAAAAAAAAAAAAAAAAAQ\n");
}

TEST(DumpFilesTest, UnknownFileIsAnErrorNamingTheKindsDumpReads) {
  // Kafka prints "Ignoring unknown file" and exits 0; a script could not tell.
  TempDir tmp;
  const std::string path = tmp.Join("00000000000000000000.log.deleted");
  testing::WriteStringToFile(path, "x");
  FilesDumpRun run = DumpPath(path);
  EXPECT_EQ(run.rc, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_TRUE(run.err.starts_with("daruma dump: " + path + ": not a file dump can read (it reads "))
      << run.err;
}

TEST(DumpFilesTest, DirectoryIsAnError) {
  TempDir tmp;
  FilesDumpRun run = DumpPath(tmp.path());
  EXPECT_EQ(run.rc, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_TRUE(run.err.starts_with("daruma dump: " + tmp.path() + ": is a directory")) << run.err;
  // Given a log dir, the hint names a segment that is there, one level down.
  WriteStringToFile(tmp.Join("recovery-point-offset-checkpoint"), "0\n0\n");
  ASSERT_TRUE(FileSystem::Default()->CreateDir(tmp.Join("orders-0")).ok());
  WriteStringToFile(tmp.Join("orders-0/00000000000000000042.log"), "");
  run = DumpPath(tmp.path());
  EXPECT_EQ(run.rc, 2);
  EXPECT_NE(run.err.find("e.g. " + tmp.Join("orders-0/00000000000000000042.log")),
            std::string::npos)
      << run.err;
}

TEST(DumpFilesTest, MissingFileIsAnIoError) {
  TempDir tmp;
  const std::string path = tmp.Join("00000000000000000000.snapshot");
  FilesDumpRun run = DumpPath(path);
  EXPECT_EQ(run.rc, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find(path), std::string::npos);
}

std::string OneRecordBatch(int64_t base_offset) {
  BatchBuilderOptions o;
  o.base_offset = base_offset;
  std::vector<RecordInput> records(1);
  records[0].timestamp = 1000;
  records[0].value = "v";
  auto batch = BuildRecordBatch(o, records);
  EXPECT_TRUE(batch.ok());
  return std::string(batch->begin(), batch->end());
}

TEST(DumpFilesTest, MaxBytesReadsWholeBatchesWithinTheLimitAndReportsNoTail) {
  TempDir tmp;
  const std::string path = tmp.Join("00000000000000000000.log");
  const std::string a = OneRecordBatch(0), b = OneRecordBatch(1);
  testing::WriteStringToFile(path, a + b);
  DumpOptions o;
  o.files = {path};
  o.max_bytes = int64_t(a.size() + 10);
  std::ostringstream out, err;
  EXPECT_EQ(RunDump(o, out, err), 0) << err.str();
  const std::string text = out.str();
  EXPECT_NE(text.find("baseOffset: 0 "), std::string::npos) << text;
  EXPECT_EQ(text.find("baseOffset: 1 "), std::string::npos) << text;
  EXPECT_EQ(text.find("invalid bytes"), std::string::npos) << text;
}

TEST(DumpFilesTest, KraftSnapshotHeaders) {
  TempDir tmp;
  const std::string snapshot = tmp.Join("00000000000000007364-0000000001.checkpoint");
  const std::string bootstrap = tmp.Join("bootstrap.checkpoint");
  testing::WriteStringToFile(snapshot, OneRecordBatch(0));
  testing::WriteStringToFile(bootstrap, OneRecordBatch(0));
  FilesDumpRun a = DumpPath(snapshot);
  EXPECT_EQ(a.rc, 0) << a.err;
  EXPECT_TRUE(a.out.starts_with("Dumping " + snapshot +
                                "\nSnapshot end offset: 7364, epoch: 1\nbaseOffset: 0 "))
      << a.out;
  FilesDumpRun b = DumpPath(bootstrap);
  EXPECT_TRUE(
      b.out.starts_with("Dumping " + bootstrap + "\nKRaft bootstrap snapshot\nbaseOffset: 0 "))
      << b.out;
}

}  // namespace
}  // namespace daruma::tools
