// LeaderEpochFileCache (spec §9.5, §10.7): assign, end offsets, truncation and
// the checkpoint bytes.
#include "log/leader_epoch_file_cache.h"

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;
using Entries = std::vector<EpochEntry>;

LeaderEpochFileCache OpenCache(const std::string& path) {
  auto cache = LeaderEpochFileCache::Open(path);
  EXPECT_TRUE(cache.ok()) << cache.status().ToString();
  return std::move(cache).value();
}

TEST(LeaderEpochFileCacheTest, OpenCreatesEmptyCheckpoint) {
  TempDir dir;
  const std::string path = dir.Join(kLeaderEpochCheckpointFileName);
  auto cache = OpenCache(path);
  EXPECT_TRUE(FileSystem::Default()->Exists(path));
  EXPECT_EQ(ReadFileToString(path), "");
  EXPECT_EQ(cache.LatestEpoch(), std::nullopt);
  EXPECT_TRUE(cache.entries().empty());
}

TEST(LeaderEpochFileCacheTest, AssignAppendsAndRewritesSynchronously) {
  TempDir dir;
  const std::string path = dir.Join("lec");
  auto cache = OpenCache(path);
  ASSERT_TRUE(cache.Assign(0, 0).ok());
  ASSERT_TRUE(cache.Assign(1, 600).ok());
  ASSERT_TRUE(cache.Assign(3, 1350).ok());
  EXPECT_EQ(ReadFileToString(path), "0\n3\n0 0\n1 600\n3 1350\n");
  EXPECT_EQ(cache.LatestEpoch(), 3);
  EXPECT_EQ(OpenCache(path).entries(), (Entries{{0, 0}, {1, 600}, {3, 1350}}));
}

TEST(LeaderEpochFileCacheTest, AssignSameEpochWithLargerOffsetIsNoOp) {
  TempDir dir;
  const std::string path = dir.Join("lec");
  auto cache = OpenCache(path);
  ASSERT_TRUE(cache.Assign(2, 100).ok());
  WriteStringToFile(path, "sentinel");  // a no-op must not rewrite the file
  ASSERT_TRUE(cache.Assign(2, 150).ok());
  ASSERT_TRUE(cache.Assign(2, 100).ok());
  EXPECT_EQ(ReadFileToString(path), "sentinel");
  ASSERT_TRUE(cache.Assign(2, 90).ok());  // same epoch, smaller offset: replaces
  EXPECT_EQ(cache.entries(), (Entries{{2, 90}}));
  EXPECT_EQ(ReadFileToString(path), "0\n1\n2 90\n");
}

TEST(LeaderEpochFileCacheTest, AssignRemovesNonMonotonicEntriesFromTheEnd) {
  TempDir dir;
  auto cache = OpenCache(dir.Join("lec"));
  for (auto [e, o] : Entries{{1, 10}, {3, 30}, {5, 50}}) ASSERT_TRUE(cache.Assign(e, o).ok());
  ASSERT_TRUE(cache.Assign(4, 60).ok());  // epoch 5 >= 4 is removed
  EXPECT_EQ(cache.entries(), (Entries{{1, 10}, {3, 30}, {4, 60}}));
  ASSERT_TRUE(cache.Assign(6, 20).ok());  // offsets 30, 60 >= 20 removed
  EXPECT_EQ(cache.entries(), (Entries{{1, 10}, {6, 20}}));
  ASSERT_TRUE(cache.Assign(0, 0).ok());  // removes everything
  EXPECT_EQ(cache.entries(), (Entries{{0, 0}}));
  EXPECT_EQ(cache.Assign(-1, 5).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.Assign(1, -5).code(), StatusCode::kInvalidArgument);
}

TEST(LeaderEpochFileCacheTest, LoadAppliesAssignRuleToFileEntries) {
  TempDir dir;
  const std::string path = dir.Join("lec");
  WriteStringToFile(path, "0\n4\n1 10\n3 30\n2 40\n5 35\n");
  auto cache = OpenCache(path);
  // (2,40) removes (3,30); (5,35) removes (2,40) whose offset 40 >= 35.
  EXPECT_EQ(cache.entries(), (Entries{{1, 10}, {5, 35}}));
  EXPECT_EQ(ReadFileToString(path), "0\n4\n1 10\n3 30\n2 40\n5 35\n");  // not rewritten
  WriteStringToFile(path, "0\n1\n-1 10\n");
  EXPECT_TRUE(LeaderEpochFileCache::Open(path).status().IsCorruption());
  WriteStringToFile(path, "0\n1\n1 10 3\n");
  auto bad = LeaderEpochFileCache::Open(path);
  EXPECT_NE(bad.status().message().find("malformed line 3 in checkpoint file " + path),
            std::string::npos)
      << bad.status().message();
}

TEST(LeaderEpochFileCacheTest, EndOffsetFor) {
  TempDir dir;
  auto cache = OpenCache(dir.Join("lec"));
  EXPECT_EQ(cache.EndOffsetFor(0, 100), (EpochEntry{-1, -1}));  // empty cache
  for (auto [e, o] : Entries{{2, 10}, {4, 30}, {7, 50}}) ASSERT_TRUE(cache.Assign(e, o).ok());
  EXPECT_EQ(cache.EndOffsetFor(7, 99), (EpochEntry{7, 99}));  // latest: log end offset
  EXPECT_EQ(cache.EndOffsetFor(4, 99), (EpochEntry{4, 50}));  // next epoch's start
  EXPECT_EQ(cache.EndOffsetFor(5, 99), (EpochEntry{4, 50}));  // unknown: floor epoch
  EXPECT_EQ(cache.EndOffsetFor(2, 99), (EpochEntry{2, 30}));
  EXPECT_EQ(cache.EndOffsetFor(1, 99), (EpochEntry{1, 10}));    // below the first epoch
  EXPECT_EQ(cache.EndOffsetFor(8, 99), (EpochEntry{-1, -1}));   // above the latest
  EXPECT_EQ(cache.EndOffsetFor(-1, 99), (EpochEntry{-1, -1}));  // undefined epoch
}

TEST(LeaderEpochFileCacheTest, TruncateFromEndIsLazyUntilFlush) {
  TempDir dir;
  const std::string path = dir.Join("lec");
  auto cache = OpenCache(path);
  for (auto [e, o] : Entries{{0, 0}, {1, 600}, {3, 1350}}) ASSERT_TRUE(cache.Assign(e, o).ok());
  EXPECT_FALSE(cache.TruncateFromEnd(1351));  // latest start < end offset: nothing
  EXPECT_FALSE(cache.TruncateFromEnd(-1));
  EXPECT_TRUE(cache.TruncateFromEnd(600));
  EXPECT_EQ(cache.entries(), (Entries{{0, 0}}));
  EXPECT_TRUE(cache.dirty());
  EXPECT_EQ(ReadFileToString(path), "0\n3\n0 0\n1 600\n3 1350\n");
  ASSERT_TRUE(cache.Flush().ok());
  EXPECT_FALSE(cache.dirty());
  EXPECT_EQ(ReadFileToString(path), "0\n1\n0 0\n");
}

TEST(LeaderEpochFileCacheTest, TruncateFromStartReinsertsLastRemovedEpoch) {
  TempDir dir;
  const std::string path = dir.Join("lec");
  auto cache = OpenCache(path);
  for (auto [e, o] : Entries{{0, 0}, {1, 600}, {3, 1350}}) ASSERT_TRUE(cache.Assign(e, o).ok());
  EXPECT_TRUE(cache.TruncateFromStart(700));
  EXPECT_EQ(cache.entries(), (Entries{{1, 700}, {3, 1350}}));
  EXPECT_TRUE(cache.TruncateFromStart(1350));
  EXPECT_EQ(cache.entries(), (Entries{{3, 1350}}));
  EXPECT_FALSE(cache.TruncateFromStart(1000));
  ASSERT_TRUE(cache.Flush().ok());
  EXPECT_EQ(ReadFileToString(path), "0\n1\n3 1350\n");
  ASSERT_TRUE(cache.ClearAndFlush().ok());
  EXPECT_EQ(ReadFileToString(path), "0\n0\n");
}

TEST(LeaderEpochFileCacheTest, TruncateFromStartRewritesAFileWhoseLoadDroppedLines) {
  TempDir dir;
  const std::string path = dir.Join("lec");
  // The usual start: removing (0,0) only to put it back leaves the file alone.
  WriteStringToFile(path, "0\n2\n0 0\n1 10\n");
  auto intact = OpenCache(path);
  EXPECT_FALSE(intact.TruncateFromStart(0));
  EXPECT_FALSE(intact.dirty());
  // A duplicated line is dropped by the load; Kafka rewrites the file from
  // memory whenever truncation removed an entry, so the stale line goes.
  WriteStringToFile(path, "0\n3\n0 0\n1 10\n1 12\n");
  auto stale = OpenCache(path);
  EXPECT_EQ(stale.entries(), (Entries{{0, 0}, {1, 10}}));
  EXPECT_TRUE(stale.TruncateFromStart(0));
  ASSERT_TRUE(stale.Flush().ok());
  EXPECT_EQ(ReadFileToString(path), "0\n2\n0 0\n1 10\n");
  // Nothing removed (the first epoch starts after the log start): Kafka
  // schedules no rewrite either.
  WriteStringToFile(path, "0\n2\n1 10\n1 12\n");
  auto later = OpenCache(path);
  EXPECT_FALSE(later.TruncateFromStart(5));
  EXPECT_FALSE(later.dirty());
}

}  // namespace
}  // namespace daruma
