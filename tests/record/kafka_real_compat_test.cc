// Every batch file of fixtures/kafka-real (segments `.log` and KRaft snapshot
// `.checkpoint` files, copied from real brokers) scans and decodes to exactly
// the facts inventory.py recorded in expected.json with an independent decoder
// (python-kafka): batch and record counts, offsets, magics, codecs, control
// batches and their types, CRC results, valid bytes and the tail, producer
// ids, transactional batches, null values and records with headers.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "record/control_record.h"
#include "record/file_batch_reader.h"
#include "record/legacy_message.h"
#include "record/log_entry.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using nlohmann::json;

// What our reader finds in one file, in expected.json's vocabulary.
struct FileFacts {
  int64_t batches = 0;
  int64_t records = 0;
  std::optional<int64_t> first_offset;
  std::optional<int64_t> last_offset;
  std::set<int> magics;
  std::set<std::string> codecs;
  int64_t control_batches = 0;
  std::map<std::string, int64_t> control_types;
  std::vector<int64_t> crc_failures;  // prefix offsets of invalid entries
  std::vector<std::string> decode_errors;
  uint64_t file_bytes = 0;
  uint64_t valid_bytes = 0;
  std::string tail = "clean";
  uint64_t tail_bytes = 0;
  int64_t idempotent_batches = 0;
  std::set<int64_t> producer_ids;
  int64_t transactional_batches = 0;
  int64_t null_values = 0;
  int64_t records_with_headers = 0;
  std::set<int> timestamp_types;  // 0 CreateTime, 1 LogAppendTime
  bool offsets_monotonic = true;
};

std::string CodecName(int id) {
  auto codec = CompressionFromId(id);
  return codec ? std::string(CompressionName(*codec)) : std::to_string(id);
}

void ScanV2(const LogEntry& entry, FileFacts* facts, int64_t* first, int64_t* last) {
  RecordBatchView b = entry.batch();
  *first = b.base_offset();
  *last = b.last_offset();
  facts->codecs.insert(CodecName(b.compression_id()));
  facts->timestamp_types.insert(b.timestamp_type() == TimestampType::kLogAppendTime ? 1 : 0);
  if (b.is_transactional()) ++facts->transactional_batches;
  if (b.is_control()) ++facts->control_batches;
  if (b.has_producer_id()) {
    ++facts->idempotent_batches;
    facts->producer_ids.insert(b.producer_id());
  }
  auto records = b.DecodeRecords();
  if (!records.ok()) {
    facts->decode_errors.push_back(records.status().ToString());
    return;
  }
  facts->records += int64_t(records->size());
  for (const Record& r : *records) {
    if (!r.headers.empty()) ++facts->records_with_headers;
    if (!r.value) ++facts->null_values;
    if (b.is_control() && r.key && r.key->size() >= 4) {
      auto type = ParseControlRecordKey(AsBytes(*r.key));
      ASSERT_TRUE(type.ok()) << type.status().ToString();
      ++facts->control_types[ControlRecordTypeName(*type)];
    }
  }
}

void ScanLegacy(const LogEntry& entry, FileFacts* facts, int64_t* first, int64_t* last) {
  auto view = LegacyMessageView::Parse(entry.bytes);
  if (!view.ok()) {
    facts->decode_errors.push_back(view.status().ToString());
    return;
  }
  facts->codecs.insert(CodecName(view->compression_id()));
  if (view->magic() == 1) {
    facts->timestamp_types.insert(view->timestamp_type() == TimestampType::kLogAppendTime ? 1 : 0);
  }
  auto records = view->DecodeRecords();
  if (!records.ok()) {
    facts->decode_errors.push_back(records.status().ToString());
    return;
  }
  facts->records += int64_t(records->size());
  *first = records->empty() ? view->offset() : records->front().offset;
  *last = records->empty() ? view->offset() : records->back().offset;
  for (const Record& r : *records) {
    if (!r.value) ++facts->null_values;
  }
}

FileFacts ScanFile(const std::string& path) {
  FileFacts facts;
  auto file = FileSystem::Default()->Open(path, OpenMode::kRead);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return facts;
  facts.file_bytes = (*file)->Size().value();
  FileBatchReader reader(file->get());
  std::optional<int64_t> previous_last;
  while (auto entry = reader.Next()) {
    if (!entry->Validate().ok()) facts.crc_failures.push_back(entry->prefix_offset());
    int64_t first = entry->prefix_offset();
    int64_t last = entry->prefix_offset();
    if (entry->is_v2()) {
      ScanV2(*entry, &facts, &first, &last);
    } else {
      ScanLegacy(*entry, &facts, &first, &last);
    }
    facts.magics.insert(entry->magic);
    ++facts.batches;
    if (!facts.first_offset) facts.first_offset = first;
    if (previous_last && first <= *previous_last) facts.offsets_monotonic = false;
    previous_last = last;
    facts.last_offset = last;
  }
  EXPECT_NE(reader.stop_reason(), StopReason::kIoError) << reader.stop_message();
  facts.valid_bytes = reader.position();
  facts.tail_bytes = facts.file_bytes - facts.valid_bytes;
  if (facts.tail_bytes > 0) {
    std::string rest = testing::ReadFileToString(path).substr(facts.valid_bytes);
    facts.tail =
        rest.find_first_not_of('\0') == std::string::npos ? "zero_padding" : "partial_or_garbage";
  }
  return facts;
}

std::optional<int64_t> OptionalInt(const json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<int64_t>();
}

void ExpectFactsMatch(const json& want, const FileFacts& got) {
  EXPECT_EQ(got.batches, want["batches"].get<int64_t>());
  EXPECT_EQ(got.records, want["records"].get<int64_t>());
  EXPECT_EQ(got.first_offset, OptionalInt(want["first_offset"]));
  EXPECT_EQ(got.last_offset, OptionalInt(want["last_offset"]));
  EXPECT_EQ(got.magics, want["magics"].get<std::set<int>>());
  EXPECT_EQ(got.codecs, want["codecs"].get<std::set<std::string>>());
  EXPECT_EQ(got.control_batches, want["control_batches"].get<int64_t>());
  EXPECT_EQ(got.control_types, (want["control_types"].get<std::map<std::string, int64_t>>()));
  EXPECT_EQ(got.crc_failures, want["crc_failures"].get<std::vector<int64_t>>());
  EXPECT_EQ(got.crc_failures.empty(), want["crc_ok"].get<bool>());
  EXPECT_EQ(got.decode_errors.size(), want["decode_errors"].size())
      << (got.decode_errors.empty() ? "" : got.decode_errors.front());
  EXPECT_EQ(got.file_bytes, want["file_bytes"].get<uint64_t>());
  EXPECT_EQ(got.valid_bytes, want["valid_bytes"].get<uint64_t>());
  EXPECT_EQ(got.tail, want["tail"].get<std::string>());
  EXPECT_EQ(got.tail_bytes, want["tail_bytes"].get<uint64_t>());
  EXPECT_EQ(got.idempotent_batches, want["idempotent_batches"].get<int64_t>());
  EXPECT_EQ(int64_t(got.producer_ids.size()), want["producer_ids"].get<int64_t>());
  EXPECT_EQ(got.transactional_batches, want["transactional_batches"].get<int64_t>());
  EXPECT_EQ(got.null_values, want["null_values"].get<int64_t>());
  EXPECT_EQ(got.records_with_headers, want["records_with_headers"].get<int64_t>());
  EXPECT_EQ(got.timestamp_types, want["timestamp_types"].get<std::set<int>>());
  EXPECT_EQ(got.offsets_monotonic, want["offsets_monotonic"].get<bool>());
}

std::string KafkaRealDir() {
  return testing::FixturesDir() + "/kafka-real";
}

json LoadExpected() {
  return json::parse(testing::ReadFileToString(KafkaRealDir() + "/expected.json"));
}

// Checks every file of the given kinds and returns how many were checked.
struct Totals {
  int64_t files = 0, non_empty = 0, batches = 0, records = 0;
};

Totals CheckKinds(const std::set<std::string>& kinds) {
  json expected = LoadExpected();
  Totals totals;
  for (const auto& [name, want] : expected["files"].items()) {
    if (!kinds.count(want["kind"].get<std::string>())) continue;
    SCOPED_TRACE(name);
    FileFacts got = ScanFile(KafkaRealDir() + "/" + name);
    ExpectFactsMatch(want, got);
    ++totals.files;
    if (got.file_bytes > 0) ++totals.non_empty;
    totals.batches += got.batches;
    totals.records += got.records;
  }
  return totals;
}

TEST(KafkaRealCompat, EverySegmentMatchesExpectedJson) {
  DARUMA_REQUIRE_FIXTURES();
  Totals totals = CheckKinds({"log"});
  // INVENTORY.md: 705 segment files, 83 of them non-empty.
  EXPECT_EQ(totals.files, 705);
  EXPECT_EQ(totals.non_empty, 83);
  EXPECT_EQ(totals.batches, 82996);
  EXPECT_EQ(totals.records, 98822);
}

TEST(KafkaRealCompat, EveryKraftSnapshotMatchesExpectedJson) {
  DARUMA_REQUIRE_FIXTURES();
  Totals totals = CheckKinds({"kraft_snapshot", "kraft_bootstrap"});
  // INVENTORY.md: 11 KRaft snapshot .checkpoint files and 5 bootstrap.checkpoint.
  EXPECT_EQ(totals.files, 16);
  EXPECT_EQ(totals.non_empty, 16);
}

}  // namespace
}  // namespace daruma
