#include "record/file_batch_reader.h"

#include <gtest/gtest.h>

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
  EXPECT_EQ(reader.position(), valid);
  EXPECT_NE(reader.stop_message().find("field size: expected >= 14, found 0"), std::string::npos);
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

TEST(FileBatchReaderTest, StartsAtAGivenPositionAndStopsAtEnd) {
  std::vector<int64_t> positions;
  Bytes log = MakeLog(6, &positions);
  testing::TempDir dir;
  auto file = WriteLog(dir, log);
  FileBatchReaderOptions o;
  o.start_position = uint64_t(positions[2]);
  o.end_position = uint64_t(positions[4]);
  FileBatchReader reader(file.get(), o);
  auto a = reader.Next();
  auto b = reader.Next();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->position, positions[2]);
  EXPECT_EQ(b->position, positions[3]);
  EXPECT_FALSE(reader.Next());
  EXPECT_EQ(reader.stop_reason(), StopReason::kEndOfFile);
}

}  // namespace
}  // namespace daruma
