#include "record/file_batch_reader.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "record/record_batch_builder.h"
#include "support/test_support.h"

namespace daruma {
namespace {

Bytes MakeLog(int batches, std::vector<int64_t>* positions) {
  Bytes log;
  int64_t next = 0;
  for (int i = 0; i < batches; ++i) {
    BatchBuilderOptions o;
    o.base_offset = next;
    std::vector<RecordInput> recs(2 + i % 3);
    for (auto& r : recs) {
      r.timestamp = 100 + i;
      r.value = std::string(50 + i, 'x');
    }
    Bytes b = std::move(BuildRecordBatch(o, recs)).value();
    positions->push_back(int64_t(log.size()));
    next = RecordBatchView(b).next_offset();
    log.insert(log.end(), b.begin(), b.end());
  }
  return log;
}

std::unique_ptr<File> WriteLog(const testing::TempDir& dir, const Bytes& log) {
  std::string path = dir.Join("00000000000000000000.log");
  auto f = FileSystem::Default()->Open(path, OpenMode::kTruncate);
  EXPECT_TRUE((*f)->WriteAt(0, log).ok());
  return std::move(f).value();
}

TEST(FileBatchReaderTest, YieldsEveryBatchWithPositionAndEndsCleanly) {
  testing::TempDir dir;
  std::vector<int64_t> positions;
  Bytes log = MakeLog(20, &positions);
  auto file = WriteLog(dir, log);
  FileBatchReaderOptions o;
  o.block_size = 100;  // smaller than a batch: exercises refills
  FileBatchReader reader(file.get(), o);
  size_t i = 0;
  while (auto e = reader.Next()) {
    ASSERT_LT(i, positions.size());
    EXPECT_EQ(e->position, positions[i]);
    EXPECT_TRUE(e->Validate().ok());
    ++i;
  }
  EXPECT_EQ(i, positions.size());
  EXPECT_EQ(reader.stop_reason(), StopReason::kEndOfFile);
  EXPECT_EQ(reader.position(), log.size());
}

TEST(FileBatchReaderTest, TornTailAtEveryByteOfTheLastBatch) {
  std::vector<int64_t> positions;
  Bytes log = MakeLog(5, &positions);
  const int64_t last = positions.back();
  for (size_t cut = size_t(last) + 1; cut < log.size(); ++cut) {
    testing::TempDir dir;
    auto file = WriteLog(dir, Bytes(log.begin(), log.begin() + cut));
    FileBatchReader reader(file.get());
    int n = 0;
    while (reader.Next()) ++n;
    ASSERT_EQ(n, 4) << "cut at " << cut;
    EXPECT_EQ(reader.stop_reason(), StopReason::kTornTail) << "cut at " << cut;
    EXPECT_EQ(reader.damage(), DamageKind::kTornTail) << "cut at " << cut;
    EXPECT_EQ(reader.position(), uint64_t(last));
    EXPECT_NE(reader.stop_message().find("position " + std::to_string(last)), std::string::npos)
        << reader.stop_message();
  }
}

TEST(FileBatchReaderTest, ZeroFilledPreallocatedTailIsCorruptSize) {
  std::vector<int64_t> positions;
  Bytes log = MakeLog(3, &positions);
  size_t valid = log.size();
  log.resize(log.size() + 4096, 0);
  testing::TempDir dir;
  auto file = WriteLog(dir, log);
  FileBatchReader reader(file.get());
  int n = 0;
  while (reader.Next()) ++n;
  EXPECT_EQ(n, 3);
  EXPECT_EQ(reader.stop_reason(), StopReason::kCorruptSize);
  EXPECT_EQ(reader.damage(), DamageKind::kZeroTail);
  EXPECT_EQ(DamageKindOf(reader.ScanStatus()), DamageKind::kZeroTail);
  EXPECT_EQ(reader.position(), valid);
  EXPECT_NE(reader.stop_message().find("field size: expected >= 14, found 0"), std::string::npos);
}

// How a whole read of `log` ends: entries yielded and the stop's kind.
struct ReadToStop {
  int entries = 0;
  std::optional<DamageKind> damage;
  std::optional<DamageKind> scan_status_kind;
};

ReadToStop ReadAll(const Bytes& log) {
  testing::TempDir dir;
  auto file = WriteLog(dir, log);
  FileBatchReader reader(file.get());
  ReadToStop out;
  while (reader.Next()) ++out.entries;
  out.damage = reader.damage();
  out.scan_status_kind = DamageKindOf(reader.ScanStatus());
  return out;
}

TEST(FileBatchReaderTest, SmallSizeFieldIsBadSizeAndACleanEndIsNoDamage) {
  std::vector<int64_t> positions;
  Bytes log = MakeLog(3, &positions);
  const ReadToStop clean = ReadAll(log);
  EXPECT_EQ(clean.entries, 3);
  EXPECT_EQ(clean.damage, std::nullopt);
  StoreBe32(log.data() + positions[2] + 8, 7);  // a size field below 14, offset field kept
  const ReadToStop bad = ReadAll(log);
  EXPECT_EQ(bad.entries, 2);
  EXPECT_EQ(bad.damage, DamageKind::kBadSize);
  EXPECT_EQ(bad.scan_status_kind, DamageKind::kBadSize);
}

TEST(FileBatchReaderTest, HugeSizeFieldIsTornTailNotAnAllocation) {
  std::vector<int64_t> positions;
  Bytes log = MakeLog(2, &positions);
  StoreBe32(log.data() + positions[1] + 8, 0x7fffffff);
  testing::TempDir dir;
  auto file = WriteLog(dir, log);
  FileBatchReader reader(file.get());
  int n = 0;
  while (reader.Next()) ++n;
  EXPECT_EQ(n, 1);
  EXPECT_EQ(reader.stop_reason(), StopReason::kTornTail);
}

// Six batches in a file of their own (members in initialization order).
struct SixBatchLog {
  std::vector<int64_t> positions;
  Bytes log = MakeLog(6, &positions);
  testing::TempDir dir;
  std::unique_ptr<File> file = WriteLog(dir, log);
};

TEST(FileBatchReaderTest, StartsAtAGivenPositionAndStopsAtEnd) {
  SixBatchLog six;
  const std::vector<int64_t>& positions = six.positions;
  FileBatchReaderOptions o;
  o.start_position = uint64_t(positions[2]);
  o.end_position = uint64_t(positions[4]);
  FileBatchReader reader(six.file.get(), o);
  auto a = reader.Next();
  auto b = reader.Next();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->position, positions[2]);
  EXPECT_EQ(b->position, positions[3]);
  EXPECT_FALSE(reader.Next());
  EXPECT_EQ(reader.stop_reason(), StopReason::kEndOfFile);
}

// A size the caller knows replaces the file's own (no stat): the batches
// before it are read as usual, and a file found shorter than that size is an
// I/O error naming the file and position, not a clean end.
TEST(FileBatchReaderTest, AKnownFileSizeIsTrustedAndAShorterFileIsAnIoError) {
  SixBatchLog six;
  FileBatchReaderOptions o;
  o.file_size = uint64_t(six.positions[3]);  // as if the file ended there
  FileBatchReader reader(six.file.get(), o);
  int n = 0;
  while (reader.Next()) ++n;
  EXPECT_EQ(n, 3);
  EXPECT_EQ(reader.stop_reason(), StopReason::kEndOfFile);

  o.file_size = uint64_t(six.log.size()) + 100;  // the file is shorter
  FileBatchReader beyond(six.file.get(), o);
  n = 0;
  while (beyond.Next()) ++n;
  EXPECT_EQ(n, 6);
  EXPECT_EQ(beyond.stop_reason(), StopReason::kIoError);
  EXPECT_NE(beyond.ScanStatus().message().find("short read"), std::string::npos)
      << beyond.ScanStatus().ToString();
}

// The mapped reader (recovery's): the whole range is mapped once, blocks are
// populated ahead and released behind. Over many blocks, from a start
// position inside the file, with a torn tail, it yields exactly what the
// copying reader yields, byte for byte, and stops the same way.
TEST(FileBatchReaderTest, MappedReadsMatchCopiedReads) {
  std::vector<int64_t> positions;
  Bytes log = MakeLog(200, &positions);
  log.resize(log.size() - 7);  // torn last batch
  testing::TempDir dir;
  auto file = WriteLog(dir, log);
  for (uint64_t start : {uint64_t(0), uint64_t(positions[37])}) {
    for (size_t block : {size_t(100), size_t(4096), size_t(5000)}) {
      FileBatchReaderOptions o;
      o.start_position = start;
      o.block_size = block;
      FileBatchReader copied(file.get(), o);
      o.map = true;
      FileBatchReader mapped(file.get(), o);
      size_t n = 0;
      while (auto want = copied.Next()) {
        auto got = mapped.Next();
        ASSERT_TRUE(got.has_value()) << "start " << start << " block " << block << " #" << n;
        EXPECT_EQ(got->position, want->position);
        ASSERT_TRUE(std::equal(got->bytes.begin(), got->bytes.end(), want->bytes.begin(),
                               want->bytes.end()))
            << "position " << want->position;
        ++n;
      }
      EXPECT_FALSE(mapped.Next().has_value());
      EXPECT_EQ(mapped.stop_reason(), StopReason::kTornTail);
      EXPECT_EQ(mapped.position(), copied.position());
      EXPECT_GT(n, 150u);
    }
  }
}

// Released pages refault from the page cache unchanged.
TEST(FileBatchReaderTest, ReleasedMappedPagesReadBackTheSameBytes) {
  std::vector<int64_t> positions;
  Bytes log = MakeLog(100, &positions);
  testing::TempDir dir;
  auto file = WriteLog(dir, log);
  std::unique_ptr<MappedRegion> region = file->MapForRead(0, log.size());
  ASSERT_NE(region, nullptr);
  region->Populate(0, log.size());
  region->Release(0, log.size());
  EXPECT_TRUE(std::equal(region->data, region->data + region->size, log.begin(), log.end()));
}

}  // namespace
}  // namespace daruma
