// MappedAppendWindow (mapped_append_window.h): stores land in the file as
// WriteAt would put them, across window boundaries; bytes past the limit and
// files that cannot be mapped are left to WriteAt (false); Release lets the
// file shrink and a later store maps again.
#include "common/mapped_append_window.h"

#include <gtest/gtest.h>

#include <string>

#include "common/no_sync_file_system.h"
#include "support/test_support.h"

namespace daruma {
namespace {

std::unique_ptr<File> OpenNew(FileSystem* fs, const std::string& path) {
  auto file = fs->Open(path, OpenMode::kTruncate);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  return std::move(file).value();
}

TEST(MappedAppendWindowTest, StoresAcrossWindowsAsWriteAtWould) {
  testing::TempDir dir;
  auto file = OpenNew(FileSystem::Default(), dir.Join("a.log"));
  MappedAppendWindow window(8192);
  std::string expected;
  for (int i = 0; i < 100; ++i) {
    const std::string chunk(300 + i, char('a' + i % 26));
    auto stored = window.Store(*file, expected.size(), AsBytes(chunk), 1 << 20);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    EXPECT_TRUE(*stored) << "append " << i;
    expected += chunk;
  }
  window.Release();
  ASSERT_TRUE(file->Truncate(expected.size()).ok());
  EXPECT_EQ(testing::ReadFileToString(dir.Join("a.log")), expected);
}

TEST(MappedAppendWindowTest, BytesPastTheLimitAreLeftToWriteAt) {
  testing::TempDir dir;
  auto file = OpenNew(FileSystem::Default(), dir.Join("a.log"));
  MappedAppendWindow window(4096);
  const std::string chunk(100, 'x');
  auto inside = window.Store(*file, 0, AsBytes(chunk), 150);
  ASSERT_TRUE(inside.ok());
  EXPECT_TRUE(*inside);
  auto past = window.Store(*file, 100, AsBytes(chunk), 150);
  ASSERT_TRUE(past.ok());
  EXPECT_FALSE(*past);
  auto size = file->Size();
  ASSERT_TRUE(size.ok());
  EXPECT_LE(*size, 4096u) << "the window never maps past the limit's page";
  // Not a permanent refusal: a store within a larger limit maps again.
  auto later = window.Store(*file, 100, AsBytes(chunk), 1 << 20);
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(*later);
}

TEST(MappedAppendWindowTest, AFileThatCannotBeMappedAlwaysFallsBack) {
  testing::TempDir dir;
  NoSyncFileSystem fs;  // a decorator: does not forward MapForAppend
  auto file = OpenNew(&fs, dir.Join("a.log"));
  MappedAppendWindow window(4096);
  const std::string chunk(10, 'y');
  for (int i = 0; i < 3; ++i) {
    auto stored = window.Store(*file, uint64_t(i) * 10, AsBytes(chunk), 1 << 20);
    ASSERT_TRUE(stored.ok());
    EXPECT_FALSE(*stored);
  }
}

}  // namespace
}  // namespace daruma
