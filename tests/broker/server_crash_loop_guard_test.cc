// CrashLoopGuard: counting, refusing with instructions, clearing.
#include <gtest/gtest.h>

#include "broker/crash_loop_guard.h"
#include "broker/dead_dir_file_system.h"
#include "support/test_support.h"

namespace daruma::broker {
namespace {

using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;
using daruma::testing::WriteStringToFile;
using testing::DeadDirFileSystem;

TEST(ServerCrashLoopGuardTest, EachStartCountsUntilACleanShutdown) {
  TempDir dir;
  CrashLoopGuard guard(FileSystem::Default(), dir.path(), 5);
  EXPECT_EQ(*guard.UncleanStarts(), 0);
  ASSERT_TRUE(guard.RecordStart().ok());
  ASSERT_TRUE(guard.RecordStart().ok());
  EXPECT_EQ(*guard.UncleanStarts(), 2);
  EXPECT_EQ(ReadFileToString(dir.Join(kCrashLoopFileName)),
            "# Daruma crash-loop guard: starts without a clean shutdown since the last one.\n"
            "unclean.starts=2\n");
  ASSERT_TRUE(guard.RecordCleanShutdown().ok());
  EXPECT_FALSE(FileSystem::Default()->Exists(dir.Join(kCrashLoopFileName)));
  EXPECT_EQ(*guard.UncleanStarts(), 0);
}

TEST(ServerCrashLoopGuardTest, RefusesAfterMaxUncleanStartsAndSaysHowToClear) {
  TempDir dir;
  CrashLoopGuard guard(FileSystem::Default(), dir.path(), 3);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(guard.RecordStart().ok()) << i;
  Status refused = guard.RecordStart();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), StatusCode::kOutOfRange);
  EXPECT_NE(refused.message().find("the last 3 starts did not end in a clean shutdown"),
            std::string::npos)
      << refused.message();
  EXPECT_NE(refused.message().find("daruma.crash.loop.max.unclean.starts=3"), std::string::npos);
  EXPECT_NE(refused.message().find("daruma serve --clear-crash-loop"), std::string::npos);
  EXPECT_NE(refused.message().find("deleting " + dir.Join(kCrashLoopFileName)), std::string::npos);
  // A refused start does not count again.
  EXPECT_EQ(*guard.UncleanStarts(), 3);
  ASSERT_TRUE(guard.Clear().ok());
  EXPECT_TRUE(guard.RecordStart().ok());
  EXPECT_EQ(*guard.UncleanStarts(), 1);
}

TEST(ServerCrashLoopGuardTest, ZeroDisablesTheRefusal) {
  TempDir dir;
  CrashLoopGuard guard(FileSystem::Default(), dir.path(), 0);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(guard.RecordStart().ok()) << i;
  EXPECT_EQ(*guard.UncleanStarts(), 10);
}

TEST(ServerCrashLoopGuardTest, CreatesAMissingLogDir) {
  TempDir dir;
  CrashLoopGuard guard(FileSystem::Default(), dir.Join("data"), 5);
  ASSERT_TRUE(guard.RecordStart().ok());
  EXPECT_EQ(*guard.UncleanStarts(), 1);
}

TEST(ServerCrashLoopGuardTest, ClearWithoutAFileIsFine) {
  TempDir dir;
  CrashLoopGuard guard(FileSystem::Default(), dir.path(), 5);
  EXPECT_TRUE(guard.Clear().ok());
}

TEST(ServerCrashLoopGuardTest, GarbageCountIsCorruptionNamingFileAndPosition) {
  TempDir dir;
  WriteStringToFile(dir.Join(kCrashLoopFileName), "# comment\nunclean.starts=x7\n");
  CrashLoopGuard guard(FileSystem::Default(), dir.path(), 5);
  Status st = guard.RecordStart();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kCorruption);
  EXPECT_EQ(st.message(), dir.Join(kCrashLoopFileName) +
                              ": byte 25: expected a non-negative integer after "
                              "'unclean.starts=', found 'x7'; delete the file to reset the "
                              "crash-loop guard");
}

TEST(ServerCrashLoopGuardTest, MissingKeyIsCorruption) {
  TempDir dir;
  WriteStringToFile(dir.Join(kCrashLoopFileName), "hello\n");
  CrashLoopGuard guard(FileSystem::Default(), dir.path(), 5);
  Result<int> n = guard.UncleanStarts();
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("expected a line 'unclean.starts=<n>', found none"),
            std::string::npos);
}

// The first dir is dead (or read-only, or full): the count goes to the next
// one that takes it, and the broker keeps its guard.
TEST(ServerCrashLoopGuardTest, CountsInTheFirstDirThatCanHoldIt) {
  TempDir a, b;
  DeadDirFileSystem fs({a.path()});
  CrashLoopGuard guard(&fs, std::vector<std::string>{a.path(), b.path()}, 5);
  ASSERT_TRUE(guard.RecordStart().ok());
  ASSERT_TRUE(guard.RecordStart().ok());
  EXPECT_EQ(guard.path(), b.Join(kCrashLoopFileName));
  EXPECT_EQ(*guard.UncleanStarts(), 2);
  EXPECT_TRUE(FileSystem::Default()->Exists(b.Join(kCrashLoopFileName)));
  ASSERT_TRUE(guard.RecordCleanShutdown().ok());
  EXPECT_FALSE(FileSystem::Default()->Exists(b.Join(kCrashLoopFileName)));
}

// A count kept in a later dir while the first was failed still counts once
// the first is back; the file moves back there and the old copy goes.
TEST(ServerCrashLoopGuardTest, ACountInALaterDirIsReadAndMovesBackToTheFirst) {
  TempDir a, b;
  WriteStringToFile(b.Join(kCrashLoopFileName), "unclean.starts=2\n");
  CrashLoopGuard guard(FileSystem::Default(), std::vector<std::string>{a.path(), b.path()}, 5);
  EXPECT_EQ(guard.path(), b.Join(kCrashLoopFileName));
  ASSERT_TRUE(guard.RecordStart().ok());
  EXPECT_EQ(guard.path(), a.Join(kCrashLoopFileName));
  EXPECT_EQ(*guard.UncleanStarts(), 3);
  EXPECT_FALSE(FileSystem::Default()->Exists(b.Join(kCrashLoopFileName)));

  WriteStringToFile(b.Join(kCrashLoopFileName), "unclean.starts=5\n");  // a stale copy
  CrashLoopGuard refusing(FileSystem::Default(), std::vector<std::string>{a.path(), b.path()}, 5);
  Status st = refusing.RecordStart();
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange) << st.ToString();
}

// No dir takes the count: kIoError, which the broker answers by running
// without the guard (start-up decides whether any dir is usable).
TEST(ServerCrashLoopGuardTest, NoDirThatCanHoldItIsAnIoError) {
  TempDir a, b;
  DeadDirFileSystem fs({a.path(), b.path()});
  CrashLoopGuard guard(&fs, std::vector<std::string>{a.path(), b.path()}, 5);
  Status st = guard.RecordStart();
  EXPECT_TRUE(st.IsIoError()) << st.ToString();
  EXPECT_NE(st.message().find("no log dir can hold the crash-loop guard"), std::string::npos);
}

}  // namespace
}  // namespace daruma::broker
