// The built-in cleaner on a partition holding legacy (magic 0/1) entries, as
// a directory written by an old Kafka holds them: legacy records are mapped by
// key like v2 records, uncompressed entries that are superseded are dropped,
// compressed wrappers are kept whole while any inner record is retained and
// dropped once every inner record is superseded (src/log/cleaner.cc).
#include <gtest/gtest.h>

#include "log/log_file_names.h"
#include "record/file_batch_reader.h"
#include "record/legacy_message.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::TempDir;
using testing::WriteStringToFile;

constexpr int64_t kLegacyNow = 1700000000000;
constexpr int64_t kLegacyBackoff = 1000;

std::string Str(const Bytes& b) {
  return std::string(b.begin(), b.end());
}

Bytes V1(int64_t offset, const std::string& key, const std::optional<std::string>& value) {
  return BuildLegacyMessage(1, offset, kLegacyNow, key, value);
}

// A gzip magic-1 wrapper holding `kvs` at offsets last - n + 1 .. last
// (inner offsets relative, spec §3.2).
Bytes Wrapper(int64_t last, const std::vector<std::pair<std::string, std::string>>& kvs) {
  Bytes inner;
  for (size_t i = 0; i < kvs.size(); ++i) {
    Bytes m = BuildLegacyMessage(1, int64_t(i), kLegacyNow, kvs[i].first, kvs[i].second);
    inner.insert(inner.end(), m.begin(), m.end());
  }
  auto wrapper = BuildLegacyWrapper(1, last, kLegacyNow, CompressionType::kGzip, inner);
  EXPECT_TRUE(wrapper.ok()) << wrapper.status().ToString();
  return wrapper.ok() ? *wrapper : Bytes{};
}

Bytes V2(int64_t base, const std::string& key, const std::string& value) {
  BatchBuilderOptions o;
  o.base_offset = base;
  RecordInput r;
  r.timestamp = kLegacyNow;
  r.key = key;
  r.value = value;
  auto batch = BuildRecordBatch(o, {r});
  EXPECT_TRUE(batch.ok());
  return batch.ok() ? *batch : Bytes{};
}

struct Entry {
  int8_t magic;
  int64_t prefix_offset;
  std::string bytes;
  bool operator==(const Entry&) const = default;
};

std::vector<Entry> Entries(Log* log) {
  std::vector<Entry> out;
  for (LogSegment* seg : log->segments_for_inspection()) {
    FileBatchReaderOptions ro;
    ro.end_position = uint64_t(seg->size());
    FileBatchReader reader(seg->log_file(), ro);
    while (auto e = reader.Next()) {
      out.push_back({e->magic, e->prefix_offset(), std::string(e->bytes.begin(), e->bytes.end())});
    }
  }
  return out;
}

TEST(LogManagerCleanerLegacyTest, CompactsLegacyEntriesAndKeepsWrappersWithRetainedRecords) {
  TempDir tmp;
  const std::string part = tmp.Join("t-0");
  ASSERT_TRUE(FileSystem::Default()->CreateDir(part).ok());
  // Segment 0: uncompressed v1 messages 0-5 (a tombstone for k2 at 4), a
  // wrapper 6-8 whose k3 is still latest, a wrapper 9-10 superseded by 12.
  const Bytes kept_tombstone = V1(4, "k2", std::nullopt);
  const Bytes kept_k0 = V1(5, "k0", "v5");
  const Bytes partial = Wrapper(8, {{"k1", "v6"}, {"k3", "v7"}, {"k3", "v8"}});
  const Bytes superseded = Wrapper(10, {{"k5", "v9"}, {"k5", "v10"}});
  WriteStringToFile(LogFileName(part, 0, ""), Str(V1(0, "k0", "v0")) + Str(V1(1, "k1", "v1")) +
                                                  Str(V1(2, "k0", "v2")) + Str(V1(3, "k1", "v3")) +
                                                  Str(kept_tombstone) + Str(kept_k0) +
                                                  Str(partial) + Str(superseded));
  // Segment 11: v2 batches (after an upgrade); then the empty active segment.
  const Bytes k1 = V2(11, "k1", "v11");
  const Bytes k5 = V2(12, "k5", "v12");
  WriteStringToFile(LogFileName(part, 11, ""), Str(k1) + Str(k5));
  WriteStringToFile(LogFileName(part, 13, ""), "");
  WriteStringToFile(tmp.Join(kReplicationOffsetCheckpointFile), "0\n1\nt 0 13\n");

  ManualClock clock(kLegacyNow);
  LogManagerOptions o;
  o.clock = &clock;
  o.jobs.enabled = true;
  o.jobs.mode = Scheduler::Mode::kManual;
  o.jobs.initial_delay_ms = kLegacyBackoff;
  o.jobs.cleaner_enabled = true;
  o.jobs.cleaner.backoff_ms = kLegacyBackoff;
  o.jobs.cleaner.dedupe_buffer_size = 24 * 4096;
  LogConfig config;
  config.compact = true;
  config.delete_policy = false;
  LogManager manager(o);
  ASSERT_TRUE(manager.Startup({tmp.path()}, config, 1).ok());
  Log* log = manager.GetLog({"t", 0});
  ASSERT_NE(log, nullptr);
  ASSERT_EQ(log->log_end_offset(), 13);
  ASSERT_EQ(log->high_watermark(), 13);
  ASSERT_EQ(Entries(log).size(), 10u);

  clock.Set(kLegacyNow + kLegacyBackoff);
  manager.RunDueJobsForTest();

  EXPECT_TRUE(manager.JobErrors().empty());
  // Byte for byte: dropped 0-3 (superseded) and the wrapper 9-10; the
  // tombstone stays (its segment is newer than the legacy delete horizon).
  const std::vector<Entry> expected = {{1, 4, Str(kept_tombstone)},
                                       {1, 5, Str(kept_k0)},
                                       {1, 8, Str(partial)},
                                       {2, 11, Str(k1)},
                                       {2, 12, Str(k5)}};
  EXPECT_EQ(Entries(log), expected);
  EXPECT_EQ(log->segment_base_offsets(), (std::vector<int64_t>{0, 13}));
  EXPECT_EQ(log->log_end_offset(), 13);
  // Reads from the start still work across the gaps.
  auto read = log->Read(0, 1 << 20, FetchIsolation::kLogEnd, true);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(Str(read->records).substr(0, kept_tombstone.size()), Str(kept_tombstone));
  ASSERT_TRUE(manager.Shutdown().ok());
}

}  // namespace
}  // namespace daruma
