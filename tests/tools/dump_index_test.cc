// `daruma dump` of `.index` and `.timeindex` files prints kafka-dump-log's
// exact lines (spec §12.2) and verifies every entry against the `.log`
// beside it: entry lines, "is empty.", the zero-slot stop, sanity checks,
// --verify-index-only, the stderr summaries for each kind of mismatch, and
// the JSON form. All files are generated in a TempDir.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "record/record_batch_builder.h"
#include "support/test_support.h"
#include "tools/dump_command.h"

namespace daruma::tools {
namespace {

using ::daruma::testing::TempDir;

struct IndexDumpRun {
  int rc = -1;
  std::string out;
  std::string err;
};

IndexDumpRun DumpIndex(DumpOptions o) {
  std::ostringstream out, err;
  IndexDumpRun run;
  run.rc = RunDump(o, out, err);
  run.out = out.str();
  run.err = err.str();
  return run;
}

IndexDumpRun DumpIndexFile(const std::string& path) {
  DumpOptions o;
  o.files = {path};
  return DumpIndex(o);
}

// Two records with timestamps ts and ts + 5: offsets base, base + 1.
Bytes Batch(int64_t base, int64_t ts) {
  BatchBuilderOptions o;
  o.base_offset = base;
  std::vector<RecordInput> records(2);
  records[0].timestamp = ts;
  records[0].value = "v1";
  records[1].timestamp = ts + 5;
  records[1].value = "v2";
  auto batch = BuildRecordBatch(o, records);
  EXPECT_TRUE(batch.ok()) << batch.status().ToString();
  return *batch;
}

// A segment with base offset 100: batches at offsets 100-101 (ts 1000-1005),
// 102-103 (ts 2000-2005) and 104-105 (ts 3000-3005).
struct Segment {
  std::string dir;
  std::vector<int32_t> positions;
  std::string Path(const std::string& suffix) const {
    return dir + "/00000000000000000100" + suffix;
  }
};

Segment WriteSegment(const TempDir& tmp) {
  Segment s{tmp.path(), {}};
  std::string log;
  for (int i = 0; i < 3; ++i) {
    s.positions.push_back(int32_t(log.size()));
    Bytes b = Batch(100 + 2 * i, 1000 * (i + 1));
    log.append(b.begin(), b.end());
  }
  testing::WriteStringToFile(s.Path(".log"), log);
  return s;
}

std::string OffsetIndexBytes(const std::vector<std::pair<int32_t, int32_t>>& entries) {
  Bytes out;
  ByteWriter w(&out);
  for (auto [relative, position] : entries) {
    w.WriteInt32(relative);
    w.WriteInt32(position);
  }
  return std::string(out.begin(), out.end());
}

std::string TimeIndexBytes(const std::vector<std::pair<int64_t, int32_t>>& entries) {
  Bytes out;
  ByteWriter w(&out);
  for (auto [ts, relative] : entries) {
    w.WriteInt64(ts);
    w.WriteInt32(relative);
  }
  return std::string(out.begin(), out.end());
}

TEST(DumpIndexTest, PrintsEveryOffsetIndexEntry) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".index");
  testing::WriteStringToFile(path,
                             OffsetIndexBytes({{1, 0}, {3, s.positions[1]}, {5, s.positions[2]}}));
  IndexDumpRun run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.out, "Dumping " + path + "\noffset: 101 position: 0\noffset: 103 position: " +
                         std::to_string(s.positions[1]) +
                         "\noffset: 105 position: " + std::to_string(s.positions[2]) + "\n");
  EXPECT_EQ(run.err, "");
}

TEST(DumpIndexTest, FirstOffsetKeysAreMismatchesListedNewestFirst) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".index");
  // Kafka <= 1.1 keyed entries by the batch's first offset.
  testing::WriteStringToFile(path, OffsetIndexBytes({{0, 0}, {2, s.positions[1]}}));
  IndexDumpRun run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.err, "Mismatches in :" + path +
                         "\n  Index offset: 102, log offset: 103\n  Index offset: 100, log "
                         "offset: 101\n");
}

TEST(DumpIndexTest, EntryPointingPastTheLogHasLogOffsetMinusOne) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".index");
  testing::WriteStringToFile(path, OffsetIndexBytes({{1, 0}, {9, 100000}}));
  IndexDumpRun run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.err, "Mismatches in :" + path + "\n  Index offset: 109, log offset: -1\n");
}

TEST(DumpIndexTest, MaxMessageSizeSmallerThanTheBatchMeansNoBatch) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".index");
  testing::WriteStringToFile(path, OffsetIndexBytes({{1, 0}}));
  DumpOptions o;
  o.files = {path};
  o.max_message_size = 20;
  IndexDumpRun run = DumpIndex(o);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.err, "Mismatches in :" + path + "\n  Index offset: 101, log offset: -1\n");
}

TEST(DumpIndexTest, StopsAtTheFirstZeroSlotOfAPreallocatedIndex) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".index");
  testing::WriteStringToFile(path, OffsetIndexBytes({{1, 0}, {0, 0}, {0, 0}, {0, 0}}));
  IndexDumpRun run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.out, "Dumping " + path + "\noffset: 101 position: 0\n");
}

TEST(DumpIndexTest, EmptyOffsetIndex) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".index");
  testing::WriteStringToFile(path, "");
  IndexDumpRun run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 0);
  EXPECT_EQ(run.out, "Dumping " + path + "\n" + path + " is empty.\n");
}

TEST(DumpIndexTest, IndexShorterThanOneEntryIsInvalid) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".index");
  testing::WriteStringToFile(path, "abc");
  IndexDumpRun run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.out, "Dumping " + path + "\n");
  EXPECT_EQ(run.err, "daruma dump: " + path +
                         " at byte 0: the size, 3 bytes, is not a multiple of the 8-byte entry; "
                         "not a valid offset index, stopped here\n");
}

TEST(DumpIndexTest, RandomBytesStopAtTheFirstImpossibleEntry) {
  // Not an index at all: no pages of garbage entries, one error with the byte.
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".index");
  testing::WriteStringToFile(path, OffsetIndexBytes({{1, 0}, {7, 9}, {3, 90000}, {-77, 5}}));
  IndexDumpRun run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.out, "Dumping " + path + "\noffset: 101 position: 0\noffset: 107 position: 9\n");
  EXPECT_NE(run.err.find("daruma dump: " + path +
                         " at byte 16: entry 2 (offset 103, position 90000): offset 103 does not "
                         "follow the previous entry's 107; not a valid offset index, stopped here"),
            std::string::npos)
      << run.err;

  testing::WriteStringToFile(path, OffsetIndexBytes({{-1234567, 5}}));
  run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.out, "Dumping " + path + "\n");
  EXPECT_NE(run.err.find("at byte 0: entry 0 (offset -1234467, position 5): relative offset "
                         "-1234567 is negative"),
            std::string::npos)
      << run.err;
}

TEST(DumpIndexTest, TimeIndexWithImpossibleEntriesIsInvalid) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".timeindex");
  testing::WriteStringToFile(path, TimeIndexBytes({{1005, 1}}) + "xy");
  IndexDumpRun run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.err, "daruma dump: " + path +
                         " at byte 12: the size, 14 bytes, is not a multiple of the 12-byte entry; "
                         "not a valid time index, stopped here\n");

  testing::WriteStringToFile(path, TimeIndexBytes({{1005, 1}, {-9, 3}}));
  run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.out, "Dumping " + path + "\ntimestamp: 1005 offset: 101\n");
  EXPECT_NE(run.err.find(" at byte 12: entry 1 (timestamp -9, offset 103): timestamp -9 is "
                         "negative; not a valid time index, stopped here"),
            std::string::npos)
      << run.err;
}

TEST(DumpIndexTest, VerifyIndexOnlyPrintsNoEntries) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".index");
  testing::WriteStringToFile(path, OffsetIndexBytes({{1, 0}, {2, s.positions[1]}}));
  DumpOptions o;
  o.files = {path};
  o.verify_index_only = true;
  IndexDumpRun run = DumpIndex(o);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.out, "Dumping " + path + "\n");
  EXPECT_EQ(run.err, "Mismatches in :" + path + "\n  Index offset: 102, log offset: 103\n");
}

TEST(DumpIndexTest, SanityCheckPassesAndFails) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".index");
  DumpOptions o;
  o.files = {path};
  o.index_sanity_check = true;
  testing::WriteStringToFile(path, OffsetIndexBytes({{1, 0}, {3, s.positions[1]}}));
  IndexDumpRun good = DumpIndex(o);
  EXPECT_EQ(good.rc, 0);
  EXPECT_EQ(good.out, "Dumping " + path + "\n" + path + " passed sanity check.\n");

  testing::WriteStringToFile(path, OffsetIndexBytes({{1, 0}}) + "1234");  // 12 bytes
  IndexDumpRun bad = DumpIndex(o);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_EQ(bad.out, "Dumping " + path + "\n");
  EXPECT_NE(bad.err.find("12 bytes, which is not a multiple of 8"), std::string::npos) << bad.err;

  testing::WriteStringToFile(path, OffsetIndexBytes({{-5, 0}}));  // last offset < base
  IndexDumpRun negative = DumpIndex(o);
  EXPECT_EQ(negative.rc, 1);
  EXPECT_NE(negative.err.find("last offset is 95 which is less than the base offset 100"),
            std::string::npos)
      << negative.err;
}

TEST(DumpIndexTest, OffsetIndexJson) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".index");
  testing::WriteStringToFile(path, OffsetIndexBytes({{1, 0}, {2, s.positions[1]}}));
  DumpOptions o;
  o.files = {path};
  o.json = true;
  IndexDumpRun run = DumpIndex(o);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.out, R"({"type":"offsetIndexEntry","file":")" + path +
                         R"(","offset":101,"position":0})" + "\n" +
                         R"({"type":"offsetIndexMismatch","file":")" + path +
                         R"(","indexOffset":102,"logOffset":103})" + "\n" +
                         R"({"type":"offsetIndexEntry","file":")" + path +
                         R"(","offset":102,"position":)" + std::to_string(s.positions[1]) + "}\n");
}

TEST(DumpIndexTest, PrintsEveryTimeIndexEntry) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  testing::WriteStringToFile(s.Path(".index"), OffsetIndexBytes({{3, s.positions[1]}}));
  const std::string path = s.Path(".timeindex");
  testing::WriteStringToFile(path, TimeIndexBytes({{1005, 1}, {2005, 3}, {3005, 5}}));
  IndexDumpRun run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.out, "Dumping " + path +
                         "\ntimestamp: 1005 offset: 101\ntimestamp: 2005 offset: 103\n"
                         "timestamp: 3005 offset: 105\n");
  EXPECT_EQ(run.err, "");
}

TEST(DumpIndexTest, TimeIndexStopsAtZeroSlotAndHasNoEmptyLine) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".timeindex");
  testing::WriteStringToFile(path, TimeIndexBytes({{1005, 1}, {0, 0}, {0, 0}}));
  IndexDumpRun run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.out, "Dumping " + path + "\ntimestamp: 1005 offset: 101\n");
  testing::WriteStringToFile(path, "");
  EXPECT_EQ(DumpIndexFile(path).out, "Dumping " + path + "\n");
}

TEST(DumpIndexTest, TimeIndexTimestampMismatch) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".timeindex");
  testing::WriteStringToFile(path, TimeIndexBytes({{1006, 1}, {2005, 3}}));
  IndexDumpRun run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.err, "Found timestamp mismatch in :" + path +
                         "\n  Index timestamp: 1006, log timestamp: 1005\n");
}

TEST(DumpIndexTest, TimeIndexOutOfOrderTimestamp) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".timeindex");
  testing::WriteStringToFile(path, TimeIndexBytes({{2005, 3}, {1005, 1}}));
  IndexDumpRun run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.err, "Found out of order timestamp in :" + path +
                         "\n  Index timestamp: 1005, Previously indexed timestamp: 2005\n");
}

TEST(DumpIndexTest, TimeIndexOffsetsNotFound) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".timeindex");
  testing::WriteStringToFile(path, TimeIndexBytes({{1005, 2}, {9999, 50}}));
  IndexDumpRun run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.err,
            "The following indexed offsets are not found in the log.\n"
            "Indexed offset: 102, found log offset: 103\n"
            "Indexed offset: 150, found log offset: -1\n");
}

// A time index entry at the record holding the batch's largest timestamp,
// inside the batch, as some Kafka versions (3.1) write it: reported with
// kafka-dump-log's line, but not damage (exit 0). The same offset with
// another timestamp still is.
TEST(DumpIndexTest, TimeIndexEntryInsideABatchAtItsLargestTimestampIsNotDamage) {
  TempDir tmp;
  const std::string log = tmp.Join("00000000000000000100.log");
  BatchBuilderOptions o;
  o.base_offset = 100;
  std::vector<RecordInput> records(2);
  records[0].timestamp = 1005;  // the largest, at offset 100 (not the last)
  records[0].value = "v1";
  records[1].timestamp = 1000;
  records[1].value = "v2";
  auto batch = BuildRecordBatch(o, records);
  ASSERT_TRUE(batch.ok());
  testing::WriteStringToFile(log, std::string(batch->begin(), batch->end()));
  const std::string path = tmp.Join("00000000000000000100.timeindex");
  testing::WriteStringToFile(path, TimeIndexBytes({{1005, 0}}));
  DumpOptions verify;
  verify.files = {path};
  verify.verify_index_only = true;
  IndexDumpRun run = DumpIndex(verify);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.err,
            "The following indexed offsets are not found in the log.\n"
            "Indexed offset: 100, found log offset: 101\n");

  testing::WriteStringToFile(path, TimeIndexBytes({{1000, 0}}));
  EXPECT_EQ(DumpIndex(verify).rc, 1);
}

TEST(DumpIndexTest, TimeIndexSanityCheck) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string path = s.Path(".timeindex");
  DumpOptions o;
  o.files = {path};
  o.index_sanity_check = true;
  testing::WriteStringToFile(path, TimeIndexBytes({{1005, 1}, {2005, 3}}));
  EXPECT_EQ(DumpIndex(o).out, "Dumping " + path + "\n" + path + " passed sanity check.\n");
  testing::WriteStringToFile(path, TimeIndexBytes({{2005, 1}, {1005, 3}}));
  IndexDumpRun bad = DumpIndex(o);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find(path), std::string::npos) << bad.err;
}

TEST(DumpIndexTest, SummariesComeAfterAllFilesInKafkasOrder) {
  TempDir tmp;
  Segment s = WriteSegment(tmp);
  const std::string index = s.Path(".index");
  const std::string time = s.Path(".timeindex");
  testing::WriteStringToFile(time, TimeIndexBytes({{1006, 1}}));
  testing::WriteStringToFile(index, OffsetIndexBytes({{0, 0}}));
  DumpOptions o;
  o.files = {time, index};
  IndexDumpRun run = DumpIndex(o);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.out, "Dumping " + time + "\ntimestamp: 1006 offset: 101\nDumping " + index +
                         "\noffset: 100 position: 0\n");
  EXPECT_EQ(run.err, "Mismatches in :" + index + "\n  Index offset: 100, log offset: 101\n" +
                         "Found timestamp mismatch in :" + time +
                         "\n  Index timestamp: 1006, log timestamp: 1005\n");
}

TEST(DumpIndexTest, MissingLogPrintsEntriesUnverified) {
  TempDir tmp;
  const std::string path = tmp.Join("00000000000000000000.index");
  testing::WriteStringToFile(path, OffsetIndexBytes({{7, 0}}));
  IndexDumpRun run = DumpIndexFile(path);
  EXPECT_EQ(run.rc, 2);
  EXPECT_EQ(run.out, "Dumping " + path + "\noffset: 7 position: 0\n");
  EXPECT_NE(run.err.find("00000000000000000000.log"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace daruma::tools
