// Every offset index (`.index`) and time index (`.timeindex`) of
// fixtures/kafka-real, opened read-only as recovery opens them, has exactly the
// entries inventory.py recorded in expected.json: entry count, first and last
// entry, monotonicity, and how many entries point outside the segment's .log
// (checked against our own batch scan of that .log).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "log/log_file_names.h"
#include "log/offset_index.h"
#include "log/time_index.h"
#include "record/file_batch_reader.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using nlohmann::json;

std::string KafkaRealDir() {
  return testing::FixturesDir() + "/kafka-real";
}

// The complete batches of a .log: start position -> (first offset or nullopt
// for legacy entries, last offset).
struct LogBatches {
  std::map<int64_t, std::pair<std::optional<int64_t>, int64_t>> by_position;
  std::optional<int64_t> max_last_offset;
};

std::optional<LogBatches> ScanLog(const std::string& path) {
  if (!FileSystem::Default()->Exists(path)) return std::nullopt;
  auto file = FileSystem::Default()->Open(path, OpenMode::kRead);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return std::nullopt;
  LogBatches out;
  FileBatchReader reader(file->get());
  while (auto entry = reader.Next()) {
    std::optional<int64_t> first;
    if (entry->is_v2()) first = entry->batch().base_offset();
    out.by_position[entry->position] = {first, entry->last_offset()};
    if (!out.max_last_offset || entry->last_offset() > *out.max_last_offset) {
      out.max_last_offset = entry->last_offset();
    }
  }
  return out;
}

// An index entry points into the log if a batch starts at its position, the
// batch does not start after the entry's offset, and the offset is in the log.
bool OffsetEntryConsistent(const OffsetPosition& e, const LogBatches& log) {
  auto it = log.by_position.find(e.position);
  if (it == log.by_position.end()) return false;
  if (it->second.first && e.offset < *it->second.first) return false;
  return !log.max_last_offset || e.offset <= *log.max_last_offset;
}

bool TimeEntryConsistent(const TimestampOffset& e, int64_t base, const LogBatches& log) {
  return log.max_last_offset && e.offset >= base && e.offset <= *log.max_last_offset;
}

std::string SiblingLog(const std::string& path) {
  return path.substr(0, path.rfind('.')) + ".log";
}

void CheckOffsetIndex(const std::string& path, int64_t base, const json& want) {
  auto index = OffsetIndex::Open(path, base, 10 * 1024 * 1024, FileSystem::Default(),
                                 /*writable=*/false);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  const OffsetIndex& idx = **index;
  EXPECT_EQ(idx.length(), want["file_bytes"].get<uint64_t>());
  EXPECT_EQ(idx.entries(), want["raw_slots"].get<size_t>());
  EXPECT_EQ(idx.entries(),
            want["entries"].get<size_t>() + want["zero_slots_trimmed"].get<size_t>());
  EXPECT_TRUE(idx.SanityCheck().ok()) << idx.SanityCheck().ToString();
  std::vector<OffsetPosition> entries;
  for (size_t i = 0; i < idx.entries(); ++i) entries.push_back(idx.Entry(i));
  if (want["entries"].get<size_t>() == 0) {
    EXPECT_TRUE(want["first_entry"].is_null());
    EXPECT_EQ(idx.LastOffset(), base);
    return;
  }
  auto pair = [](const OffsetPosition& e) { return std::vector<int64_t>{e.offset, e.position}; };
  EXPECT_EQ(pair(entries.front()), want["first_entry"].get<std::vector<int64_t>>());
  EXPECT_EQ(pair(entries.back()), want["last_entry"].get<std::vector<int64_t>>());
  EXPECT_EQ(pair(idx.LastEntry()), want["last_entry"].get<std::vector<int64_t>>());
  bool monotonic = true;
  for (size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].offset <= entries[i - 1].offset) monotonic = false;
    if (entries[i].position <= entries[i - 1].position) monotonic = false;
  }
  EXPECT_EQ(monotonic, want["monotonic"].get<bool>());
  // A lookup of each entry's offset finds that entry (the index is sorted).
  for (const OffsetPosition& e : entries) EXPECT_EQ(idx.Lookup(e.offset), e);
  auto log = ScanLog(SiblingLog(path));
  EXPECT_EQ(log.has_value(), want["log_present"].get<bool>());
  if (!log) return;
  int64_t inconsistent = 0;
  for (const OffsetPosition& e : entries) inconsistent += OffsetEntryConsistent(e, *log) ? 0 : 1;
  EXPECT_EQ(inconsistent, want["entries_inconsistent_with_log"].get<int64_t>());
}

void CheckTimeIndex(const std::string& path, int64_t base, const json& want) {
  auto index = TimeIndex::Open(path, base, 10 * 1024 * 1024, FileSystem::Default(),
                               /*writable=*/false);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  const TimeIndex& idx = **index;
  EXPECT_EQ(idx.length(), want["file_bytes"].get<uint64_t>());
  EXPECT_EQ(idx.entries(), want["raw_slots"].get<size_t>());
  EXPECT_EQ(idx.entries(),
            want["entries"].get<size_t>() + want["zero_slots_trimmed"].get<size_t>());
  EXPECT_TRUE(idx.SanityCheck().ok()) << idx.SanityCheck().ToString();
  std::vector<TimestampOffset> entries;
  for (size_t i = 0; i < idx.entries(); ++i) entries.push_back(idx.Entry(i));
  if (want["entries"].get<size_t>() == 0) {
    EXPECT_TRUE(want["first_entry"].is_null());
    EXPECT_EQ(idx.LastEntry(), (TimestampOffset{-1, base}));
    return;
  }
  auto pair = [](const TimestampOffset& e) { return std::vector<int64_t>{e.timestamp, e.offset}; };
  EXPECT_EQ(pair(entries.front()), want["first_entry"].get<std::vector<int64_t>>());
  EXPECT_EQ(pair(entries.back()), want["last_entry"].get<std::vector<int64_t>>());
  EXPECT_EQ(pair(idx.LastEntry()), want["last_entry"].get<std::vector<int64_t>>());
  bool monotonic = true;
  for (size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].timestamp < entries[i - 1].timestamp) monotonic = false;
    if (entries[i].offset < entries[i - 1].offset) monotonic = false;
  }
  EXPECT_EQ(monotonic, want["monotonic"].get<bool>());
  for (const TimestampOffset& e : entries) EXPECT_EQ(idx.Lookup(e.timestamp), e);
  auto log = ScanLog(SiblingLog(path));
  EXPECT_EQ(log.has_value(), want["log_present"].get<bool>());
  if (!log) return;
  int64_t inconsistent = 0;
  for (const TimestampOffset& e : entries)
    inconsistent += TimeEntryConsistent(e, base, *log) ? 0 : 1;
  EXPECT_EQ(inconsistent, want["entries_inconsistent_with_log"].get<int64_t>());
}

TEST(KafkaRealIndexCompat, EveryIndexMatchesExpectedJson) {
  DARUMA_REQUIRE_FIXTURES();
  json expected = json::parse(testing::ReadFileToString(KafkaRealDir() + "/expected.json"));
  int offset_indexes = 0, time_indexes = 0, non_empty = 0;
  for (const auto& [name, want] : expected["files"].items()) {
    const std::string kind = want["kind"].get<std::string>();
    if (kind != "index" && kind != "timeindex") continue;
    SCOPED_TRACE(name);
    const std::string path = KafkaRealDir() + "/" + name;
    auto base = OffsetFromFileName(BaseName(path));
    ASSERT_TRUE(base.ok()) << base.status().ToString();
    if (kind == "index") {
      CheckOffsetIndex(path, *base, want);
      ++offset_indexes;
    } else {
      CheckTimeIndex(path, *base, want);
      ++time_indexes;
    }
    if (want["entries"].get<int64_t>() > 0) ++non_empty;
  }
  // INVENTORY.md: 1143 offset/time index files, 103 of them non-empty.
  EXPECT_EQ(offset_indexes, 572);
  EXPECT_EQ(time_indexes, 571);
  EXPECT_EQ(non_empty, 103);
}

}  // namespace
}  // namespace daruma
