// `daruma dump` prints exactly kafka-dump-log's lines (spec §12.2) for small
// generated .log files: v2 batch lines, deep-iteration record lines, control
// markers, keys and payloads, legacy v0/v1 entries and wrappers, torn tails
// and CRC failures (with their exit codes), and the --json form.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "record/legacy_message.h"
#include "record/record_batch_builder.h"
#include "support/test_support.h"
#include "tools/dump_command.h"

namespace daruma::tools {
namespace {

using ::daruma::testing::TempDir;

constexpr char kSegmentName[] = "00000000000000000000.log";

struct DumpRun {
  int rc = -1;
  std::string out;
  std::string err;
};

DumpRun Dump(DumpOptions options) {
  std::ostringstream out, err;
  DumpRun run;
  run.rc = RunDump(options, out, err);
  run.out = out.str();
  run.err = err.str();
  return run;
}

DumpRun DumpFile(const std::string& path, bool deep = false, bool print_data = false,
                 bool skip_metadata = false) {
  DumpOptions o;
  o.files = {path};
  o.deep_iteration = deep || print_data || skip_metadata;
  o.print_data_log = print_data;
  o.skip_record_metadata = skip_metadata;
  return Dump(o);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string Concat(const std::vector<Bytes>& entries) {
  std::string out;
  for (const Bytes& e : entries) out += AsStringView(e);
  return out;
}

std::string WriteLog(const TempDir& dir, const std::vector<Bytes>& entries,
                     const std::string& name = kSegmentName) {
  std::string path = dir.Join(name);
  testing::WriteStringToFile(path, Concat(entries));
  return path;
}

uint32_t V2Crc(const Bytes& batch) {
  return LoadBe32(batch.data() + 17);
}
uint32_t LegacyCrc(const Bytes& entry) {
  return LoadBe32(entry.data() + 12);
}

// Two records, the first with two headers, the second with a null key;
// idempotent producer 7/1 from sequence 3, leader epoch 4.
Bytes DataBatch(int64_t base_offset = 0) {
  BatchBuilderOptions o;
  o.base_offset = base_offset;
  o.partition_leader_epoch = 4;
  o.producer_id = 7;
  o.producer_epoch = 1;
  o.base_sequence = 3;
  std::vector<RecordInput> records(2);
  records[0].timestamp = 1000;
  records[0].key = "k";
  records[0].value = "hello";
  records[0].headers = {{"h1", "x"}, {"h2", std::nullopt}};
  records[1].timestamp = 1005;
  records[1].value = "abc";
  auto batch = BuildRecordBatch(o, records);
  EXPECT_TRUE(batch.ok()) << batch.status().ToString();
  return *batch;
}

Bytes CommitMarker(int64_t offset) {
  return BuildEndTxnMarkerBatch(offset, /*partition_leader_epoch=*/0, /*producer_id=*/7,
                                /*producer_epoch=*/1, ControlRecordType::kCommit,
                                /*coordinator_epoch=*/5, /*timestamp=*/2000);
}

std::string DataBatchLine(const Bytes& b, int64_t base, int64_t position) {
  return fmt::format(
      "baseOffset: {} lastOffset: {} count: 2 baseSequence: 3 lastSequence: 4 producerId: 7 "
      "producerEpoch: 1 partitionLeaderEpoch: 4 isTransactional: false isControl: false "
      "deleteHorizonMs: OptionalLong.empty position: {} CreateTime: 1005 size: {} magic: 2 "
      "compresscodec: none crc: {} isvalid: true",
      base, base + 1, position, b.size(), V2Crc(b));
}

TEST(DumpTest, PrintsHeaderAndOneLinePerV2Batch) {
  TempDir dir;
  Bytes a = DataBatch(0), b = DataBatch(2);
  std::string path = WriteLog(dir, {a, b});
  DumpRun run = DumpFile(path);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.out, "Dumping " + path + "\nLog starting offset: 0\n" + DataBatchLine(a, 0, 0) +
                         "\n" + DataBatchLine(b, 2, int64_t(a.size())) + "\n");
  EXPECT_EQ(run.err, "");
}

TEST(DumpTest, LogStartingOffsetComesFromTheFileName) {
  TempDir dir;
  Bytes a = DataBatch(42);
  std::string path = WriteLog(dir, {a}, "00000000000000000042.log");
  DumpRun run = DumpFile(path);
  EXPECT_EQ(run.rc, 0);
  EXPECT_EQ(Lines(run.out).at(1), "Log starting offset: 42");
  EXPECT_EQ(Lines(run.out).at(2), DataBatchLine(a, 42, 0));
}

TEST(DumpTest, DeepIterationPrintsRecordLinesWithHeaderKeys) {
  TempDir dir;
  Bytes a = DataBatch(0);
  DumpRun run = DumpFile(WriteLog(dir, {a}), /*deep=*/true);
  EXPECT_EQ(run.rc, 0) << run.err;
  auto lines = Lines(run.out);
  ASSERT_EQ(lines.size(), 5u) << run.out;
  EXPECT_EQ(lines[2], DataBatchLine(a, 0, 0));
  EXPECT_EQ(lines[3],
            "| offset: 0 CreateTime: 1000 keySize: 1 valueSize: 5 sequence: 3 headerKeys: [h1,h2]");
  EXPECT_EQ(lines[4],
            "| offset: 1 CreateTime: 1005 keySize: -1 valueSize: 3 sequence: 4 headerKeys: []");
}

TEST(DumpTest, ControlMarkerLines) {
  TempDir dir;
  Bytes a = DataBatch(0), m = CommitMarker(2);
  ASSERT_EQ(m.size(), 78u);
  DumpRun run = DumpFile(WriteLog(dir, {a, m}), /*deep=*/true, /*print_data=*/true);
  EXPECT_EQ(run.rc, 0) << run.err;
  auto lines = Lines(run.out);
  ASSERT_EQ(lines.size(), 7u) << run.out;
  EXPECT_EQ(lines[5],
            fmt::format("baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 "
                        "lastSequence: -1 producerId: 7 producerEpoch: 1 "
                        "partitionLeaderEpoch: 0 isTransactional: true isControl: true "
                        "deleteHorizonMs: OptionalLong.empty position: {} CreateTime: "
                        "2000 size: 78 magic: 2 compresscodec: none crc: {} isvalid: true",
                        a.size(), V2Crc(m)));
  // Control records never print key/payload, even with --print-data-log.
  EXPECT_EQ(lines[6],
            "| offset: 2 CreateTime: 2000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
            "endTxnMarker: COMMIT coordinatorEpoch: 5");
}

TEST(DumpTest, PrintDataLogAppendsKeyAndPayload) {
  TempDir dir;
  DumpRun run = DumpFile(WriteLog(dir, {DataBatch(0)}), false, /*print_data=*/true);
  EXPECT_EQ(run.rc, 0) << run.err;
  auto lines = Lines(run.out);
  ASSERT_EQ(lines.size(), 5u) << run.out;
  EXPECT_EQ(lines[3],
            "| offset: 0 CreateTime: 1000 keySize: 1 valueSize: 5 sequence: 3 headerKeys: [h1,h2] "
            "key: k payload: hello");
  // A null key prints no `key:` field (Kafka's parser returns no key).
  EXPECT_EQ(lines[4],
            "| offset: 1 CreateTime: 1005 keySize: -1 valueSize: 3 sequence: 4 headerKeys: [] "
            "payload: abc");
}

// Kafka decodes keys, values and header keys as Java Strings: bytes that are
// not UTF-8 print as U+FFFD, one per ill-formed sequence.
TEST(DumpTest, BytesThatAreNotUtf8PrintAsReplacementCharacters) {
  TempDir dir;
  std::vector<RecordInput> records(1);
  records[0].timestamp = 5;
  records[0].key = std::string("k\xff", 2);
  records[0].value = std::string("\x00\xc3\xa9\xe2\x82!", 6);
  records[0].headers = {{std::string("h\x80", 2), std::nullopt}};
  auto batch = BuildRecordBatch(BatchBuilderOptions{}, records);
  ASSERT_TRUE(batch.ok());
  DumpRun run = DumpFile(WriteLog(dir, {*batch}), false, /*print_data=*/true);
  EXPECT_EQ(Lines(run.out).at(3), std::string("| offset: 0 CreateTime: 5 keySize: 2 valueSize: 6 "
                                              "sequence: -1 headerKeys: [h\xEF\xBF\xBD] key: "
                                              "k\xEF\xBF\xBD payload: ") +
                                      std::string("\x00\xC3\xA9\xEF\xBF\xBD!", 7));
}

TEST(DumpTest, NullValuePrintsNoPayload) {
  TempDir dir;
  BatchBuilderOptions o;
  std::vector<RecordInput> records(1);
  records[0].timestamp = 5;
  records[0].key = "gone";
  auto batch = BuildRecordBatch(o, records);
  ASSERT_TRUE(batch.ok());
  DumpRun run = DumpFile(WriteLog(dir, {*batch}), false, /*print_data=*/true);
  EXPECT_EQ(Lines(run.out).at(3),
            "| offset: 0 CreateTime: 5 keySize: 4 valueSize: -1 sequence: -1 headerKeys: [] "
            "key: gone");
}

TEST(DumpTest, SkipRecordMetadataPrintsOnlyKeyAndPayload) {
  TempDir dir;
  Bytes a = DataBatch(0), m = CommitMarker(2);
  DumpRun run = DumpFile(WriteLog(dir, {a, m}), false, /*print_data=*/true, /*skip=*/true);
  EXPECT_EQ(run.rc, 0) << run.err;
  auto lines = Lines(run.out);
  ASSERT_EQ(lines.size(), 7u) << run.out;
  EXPECT_EQ(lines[3], "| key: k payload: hello");
  // Kafka prints the "| " prefix only in front of a key; a null key leaves
  // just the payload.
  EXPECT_EQ(lines[4], " payload: abc");
  // The control record's line is empty (no metadata, no data), as in Kafka.
  EXPECT_EQ(lines[6], "");
}

Bytes V0Message() {
  return BuildLegacyMessage(0, 0, -1, "k", "v0value");
}
Bytes V1Message() {
  return BuildLegacyMessage(1, 1, 1234, std::nullopt, "v1");
}

TEST(DumpTest, LegacyV0AndV1EntryLines) {
  TempDir dir;
  Bytes v0 = V0Message(), v1 = V1Message();
  DumpRun run = DumpFile(WriteLog(dir, {v0, v1}), /*deep=*/true);
  EXPECT_EQ(run.rc, 0) << run.err;
  auto lines = Lines(run.out);
  ASSERT_EQ(lines.size(), 6u) << run.out;
  EXPECT_EQ(lines[2], fmt::format("offset: 0 position: 0 NoTimestampType: -1 size: {} magic: 0 "
                                  "compresscodec: none crc: {} isvalid: true",
                                  v0.size(), LegacyCrc(v0)));
  // Legacy record lines end with Kafka's stray `}`.
  EXPECT_EQ(lines[3], fmt::format("| offset: 0 NoTimestampType: -1 keySize: 1 valueSize: 7 "
                                  "isValid: true crc: {}}}",
                                  LegacyCrc(v0)));
  EXPECT_EQ(lines[4], fmt::format("offset: 1 position: {} CreateTime: 1234 size: {} magic: 1 "
                                  "compresscodec: none crc: {} isvalid: true",
                                  v0.size(), v1.size(), LegacyCrc(v1)));
  EXPECT_EQ(lines[5], fmt::format("| offset: 1 CreateTime: 1234 keySize: -1 valueSize: 2 "
                                  "isValid: true crc: {}}}",
                                  LegacyCrc(v1)));
}

TEST(DumpTest, LegacyWrapperRecordsReportTheirOwnCrc) {
  TempDir dir;
  // v1 wrapper at offset 3 with relative inner offsets 0, 1 -> absolute 2, 3.
  Bytes inner0 = BuildLegacyMessage(1, 0, 100, "a", "first");
  Bytes inner1 = BuildLegacyMessage(1, 1, 200, "b", "second");
  const uint32_t good_crc = LegacyCrc(inner1);
  StoreBe32(inner1.data() + 12, good_crc ^ 1);  // inner CRCs are reported, not enforced
  std::string inner = Concat({inner0, inner1});
  auto wrapper = BuildLegacyWrapper(1, 3, 200, CompressionType::kGzip, AsBytes(inner));
  ASSERT_TRUE(wrapper.ok()) << wrapper.status().ToString();
  DumpRun run = DumpFile(WriteLog(dir, {*wrapper}), /*deep=*/true, /*print_data=*/true);
  EXPECT_EQ(run.rc, 0) << run.err;
  auto lines = Lines(run.out);
  ASSERT_EQ(lines.size(), 5u) << run.out;
  EXPECT_EQ(lines[2], fmt::format("offset: 3 position: 0 CreateTime: 200 size: {} magic: 1 "
                                  "compresscodec: gzip crc: {} isvalid: true",
                                  wrapper->size(), LegacyCrc(*wrapper)));
  EXPECT_EQ(lines[3], fmt::format("| offset: 2 CreateTime: 100 keySize: 1 valueSize: 5 "
                                  "isValid: true crc: {}}} key: a payload: first",
                                  LegacyCrc(inner0)));
  EXPECT_EQ(lines[4], fmt::format("| offset: 3 CreateTime: 200 keySize: 1 valueSize: 6 "
                                  "isValid: false crc: {}}} key: b payload: second",
                                  good_crc ^ 1));
}

TEST(DumpTest, TornTailIsReportedAsInvalidBytes) {
  TempDir dir;
  Bytes a = DataBatch(0), b = DataBatch(2);
  b.resize(30);
  DumpRun run = DumpFile(WriteLog(dir, {a, b}));
  EXPECT_EQ(run.rc, 1);
  auto lines = Lines(run.out);
  ASSERT_EQ(lines.size(), 4u) << run.out;
  EXPECT_EQ(lines[2], DataBatchLine(a, 0, 0));
  EXPECT_EQ(lines[3], std::string("Found 30 invalid bytes at the end of ") + kSegmentName);
  EXPECT_NE(run.err, "");
}

TEST(DumpTest, CrcCorruptBatchIsInvalid) {
  TempDir dir;
  Bytes a = DataBatch(0), b = DataBatch(2);
  b[b.size() - 3] ^= 0x40;  // inside the last record's value: covered by the CRC
  DumpRun run = DumpFile(WriteLog(dir, {a, b}));
  EXPECT_EQ(run.rc, 1);
  auto lines = Lines(run.out);
  ASSERT_EQ(lines.size(), 4u) << run.out;
  EXPECT_EQ(lines[2], DataBatchLine(a, 0, 0));
  std::string want = DataBatchLine(b, 2, int64_t(a.size()));
  want.replace(want.rfind("isvalid: true"), 13, "isvalid: false");
  EXPECT_EQ(lines[3], want);
  EXPECT_NE(run.err.find("crc"), std::string::npos) << run.err;
}

TEST(DumpTest, MissingFileIsAnIoError) {
  TempDir dir;
  std::string path = dir.Join("00000000000000000007.log");
  DumpRun run = DumpFile(path);
  EXPECT_EQ(run.rc, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find(path), std::string::npos) << run.err;
}

TEST(DumpTest, NonConsecutiveOffsetsGoToStderr) {
  TempDir dir;
  std::string path = WriteLog(dir, {DataBatch(0), DataBatch(5)});
  DumpRun run = DumpFile(path, /*deep=*/true);
  EXPECT_EQ(run.rc, 0);
  EXPECT_EQ(run.err, "Non-consecutive offsets in " + path + "\n  1 is followed by 5\n");
}

TEST(DumpTest, JsonHasOneParsableObjectPerBatchAndRecord) {
  TempDir dir;
  Bytes a = DataBatch(0), m = CommitMarker(2);
  DumpOptions o;
  o.files = {WriteLog(dir, {a, m})};
  o.json = true;
  o.deep_iteration = true;
  DumpRun run = Dump(o);
  EXPECT_EQ(run.rc, 0) << run.err;
  auto lines = Lines(run.out);
  ASSERT_EQ(lines.size(), 5u) << run.out;
  auto first = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(first["type"], "batch");
  EXPECT_EQ(first["position"], 0);
  EXPECT_EQ(first["size"], a.size());
  EXPECT_EQ(first["crcValid"], true);
  EXPECT_EQ(first["compression"], "none");
  EXPECT_EQ(first["isTransactional"], false);
  EXPECT_EQ(first["isControl"], false);
  auto record = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(record["type"], "record");
  EXPECT_EQ(record["offset"], 0);
  EXPECT_EQ(record["headerKeys"], nlohmann::json::array({"h1", "h2"}));
  auto marker = nlohmann::json::parse(lines[3]);
  EXPECT_EQ(marker["position"], a.size());
  EXPECT_EQ(marker["size"], 78);
  EXPECT_EQ(marker["isTransactional"], true);
  EXPECT_EQ(marker["isControl"], true);
  EXPECT_EQ(marker["crc"], V2Crc(m));
  auto marker_record = nlohmann::json::parse(lines[4]);
  EXPECT_EQ(marker_record["control"], "endTxnMarker: COMMIT coordinatorEpoch: 5");
}

TEST(DumpTest, JsonReportsTornTail) {
  TempDir dir;
  Bytes a = DataBatch(0), b = DataBatch(2);
  b.resize(20);
  DumpOptions o;
  o.files = {WriteLog(dir, {a, b})};
  o.json = true;
  DumpRun run = Dump(o);
  EXPECT_EQ(run.rc, 1);
  auto lines = Lines(run.out);
  ASSERT_EQ(lines.size(), 2u) << run.out;
  auto tail = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(tail["type"], "invalidBytes");
  EXPECT_EQ(tail["position"], a.size());
  EXPECT_EQ(tail["bytes"], 20);
}

}  // namespace
}  // namespace daruma::tools
