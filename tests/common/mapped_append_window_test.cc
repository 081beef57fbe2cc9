// MappedAppendWindow (mapped_append_window.h): stores land in the file as
// WriteAt would put them, across window boundaries; bytes past the limit and
// files that cannot be mapped are left to WriteAt (false); Release lets the
// file shrink and a later store maps again; a kOnePage window caches only
// the pages it stores into, not the kernel's readahead window.
#include "common/mapped_append_window.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/no_sync_file_system.h"
#include "support/test_support.h"

namespace daruma {
namespace {

std::unique_ptr<File> OpenNew(FileSystem* fs, const std::string& path) {
  auto file = fs->Open(path, OpenMode::kTruncate);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  return std::move(file).value();
}

// A preallocated index as Kafka leaves it: segment.index.bytes, sparse.
constexpr uint64_t kIndexBytes = 10 << 20;
std::unique_ptr<File> OpenPreallocatedIndex(const std::string& path) {
  auto file = OpenNew(FileSystem::Default(), path);
  EXPECT_TRUE(file->Truncate(kIndexBytes).ok());
  return file;
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

// Pages of the file at `path` (of `size` bytes) in the page cache.
size_t CachedPages(const std::string& path, size_t size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return size_t(-1);
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);  // the mapping keeps the file
  if (addr == MAP_FAILED) return size_t(-1);
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((size + page - 1) / page);
  size_t cached = size_t(-1);
  if (::mincore(addr, size, resident.data()) == 0) {
    cached = 0;
    for (unsigned char r : resident) cached += r & 1;
  }
  ::munmap(addr, size);
  return cached;
}

// An index is preallocated to segment.index.bytes and its first entry is 12
// bytes: the kernel's fault readahead (read_ahead_kb, 8 MiB on the disk
// this was measured on) would zero thousands of pages of the sparse file for
// it, milliseconds per index.
TEST(MappedAppendWindowTest, AOnePageWindowCachesOnlyThePagesItStores) {
  testing::TempDir dir;
  const std::string path = dir.Join("a.timeindex");
  auto file = OpenPreallocatedIndex(path);
  MappedAppendWindow window(64 << 10, AppendFaults::kOnePage);
  const std::string entry(12, 'e');
  auto stored = window.Store(*file, 0, AsBytes(entry), kIndexBytes);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  if (!*stored) GTEST_SKIP() << "this file system cannot map files for appends";
  const size_t cached = CachedPages(path, kIndexBytes);
  window.Release();
  EXPECT_GE(cached, 1u);
  EXPECT_LE(cached, 16u) << "no more than the 64 KiB window, let alone the readahead window";
  EXPECT_EQ(testing::ReadFileToString(path).substr(0, 12), entry);
}

// Bytes of disk blocks the file at `path` holds.
uint64_t AllocatedBytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_blocks) * 512 : 0;
}

// A window reserves its blocks; trimming the file past a window frees them,
// which waits for the device where the file system discards freed blocks.
// An index that gets one entry reserves one block with a one-page first
// window, and later windows double up to the full size.
TEST(MappedAppendWindowTest, AOnePageFirstWindowReservesOneBlockAndLaterWindowsGrow) {
  testing::TempDir dir;
  const std::string path = dir.Join("a.index");
  auto file = OpenPreallocatedIndex(path);
  MappedAppendWindow window(64 << 10, AppendFaults::kOnePage, 4096);
  const std::string entry(8, 'e');
  auto stored = window.Store(*file, 0, AsBytes(entry), kIndexBytes);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  if (!*stored) GTEST_SKIP() << "this file system cannot map files for appends";
  EXPECT_LE(AllocatedBytes(path), 4096u);
  // The next windows: 8 KiB from 4096, then 16 KiB from 12288.
  for (uint64_t position : {4096, 12288}) {
    stored = window.Store(*file, position, AsBytes(entry), kIndexBytes);
    ASSERT_TRUE(stored.ok() && *stored);
  }
  EXPECT_LE(AllocatedBytes(path), uint64_t(4 + 8 + 16) << 10);
  EXPECT_GE(AllocatedBytes(path), uint64_t(4 + 8) << 10);
  window.Release();
  const std::string bytes = testing::ReadFileToString(path);
  EXPECT_EQ(bytes.substr(0, 8), entry);
  EXPECT_EQ(bytes.substr(4096, 8), entry);
  EXPECT_EQ(bytes.substr(12288, 8), entry);
}

}  // namespace
}  // namespace daruma
