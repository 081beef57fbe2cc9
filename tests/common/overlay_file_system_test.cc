// OverlayFileSystem: copy-on-write semantics, recorded plan, Diff, and the
// base directory left byte-for-byte (and mtime) unchanged.
#include "common/overlay_file_system.h"

#include <gtest/gtest.h>

#include <string>

#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

std::string ReadWhole(FileSystem* fs, const std::string& path) {
  auto bytes = fs->ReadFile(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  if (!bytes.ok()) return "";
  return std::string(bytes->begin(), bytes->end());
}

std::span<const uint8_t> SpanOf(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

class OverlayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteStringToFile(tmp_.Join("a"), "0123456789");
    WriteStringToFile(tmp_.Join("b"), "bbbb");
    base_mtime_ = *FileSystem::Default()->ModifiedTimeMs(tmp_.Join("a"));
  }
  void ExpectBaseUntouched() {
    EXPECT_EQ(ReadFileToString(tmp_.Join("a")), "0123456789");
    EXPECT_EQ(ReadFileToString(tmp_.Join("b")), "bbbb");
    EXPECT_EQ(*FileSystem::Default()->ModifiedTimeMs(tmp_.Join("a")), base_mtime_);
    auto entries = FileSystem::Default()->ListDir(tmp_.path());
    ASSERT_TRUE(entries.ok());
    EXPECT_EQ(entries->size(), 2u);
  }

  TempDir tmp_;
  int64_t base_mtime_ = 0;
  OverlayFileSystem fs_{FileSystem::Default()};
};

TEST_F(OverlayTest, ReadsFallThroughUntilWritten) {
  EXPECT_EQ(ReadWhole(&fs_, tmp_.Join("a")), "0123456789");
  EXPECT_TRUE(fs_.changes().empty());
  auto diff = fs_.Diff();
  ASSERT_TRUE(diff.ok());
  EXPECT_TRUE(diff->empty());
}

TEST_F(OverlayTest, WritesAndTruncationsStayInTheOverlay) {
  auto f = fs_.Open(tmp_.Join("a"), OpenMode::kReadWrite);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->WriteAt(2, SpanOf("xy")).ok());
  ASSERT_TRUE((*f)->WriteAt(4, SpanOf("z")).ok());  // merged with the previous write
  EXPECT_EQ(ReadWhole(&fs_, tmp_.Join("a")), "01xyz56789");
  ASSERT_TRUE((*f)->Truncate(3).ok());
  EXPECT_EQ(ReadWhole(&fs_, tmp_.Join("a")), "01x");
  // Growing after a truncation reads zeros, not the old base bytes.
  ASSERT_TRUE((*f)->WriteAt(5, SpanOf("q")).ok());
  EXPECT_EQ(ReadWhole(&fs_, tmp_.Join("a")), std::string("01x\0\0q", 6));
  EXPECT_EQ(*fs_.FileSize(tmp_.Join("a")), 6u);

  const auto changes = fs_.changes();
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].kind, PlannedChange::Kind::kWrite);
  EXPECT_EQ(changes[0].position, 2u);
  EXPECT_EQ(changes[0].length, 3u);
  EXPECT_EQ(changes[1].kind, PlannedChange::Kind::kTruncate);
  EXPECT_EQ(changes[1].size, 3u);
  EXPECT_EQ(changes[2].ToString(), "write " + tmp_.Join("a") + " bytes [5, 6)");

  auto diff = fs_.Diff();
  ASSERT_TRUE(diff.ok());
  ASSERT_EQ(diff->size(), 1u);
  EXPECT_EQ((*diff)[0].kind, FileDiff::Kind::kModified);
  EXPECT_EQ((*diff)[0].first_difference, 2u);
  EXPECT_EQ((*diff)[0].base_size, 10u);
  EXPECT_EQ((*diff)[0].new_size, 6u);
  ExpectBaseUntouched();
}

TEST_F(OverlayTest, RenameRemoveCreateAndList) {
  auto open = fs_.Open(tmp_.Join("a"), OpenMode::kRead);
  ASSERT_TRUE(open.ok());
  ASSERT_TRUE(fs_.Rename(tmp_.Join("a"), tmp_.Join("a.deleted")).ok());
  EXPECT_FALSE(fs_.Exists(tmp_.Join("a")));
  EXPECT_TRUE(fs_.Exists(tmp_.Join("a.deleted")));
  // The open handle follows the file.
  std::string buf(3, ' ');
  auto n = (*open)->ReadAt(0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(buf.data()), 3));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(buf, "012");
  EXPECT_EQ(ReadWhole(&fs_, tmp_.Join("a.deleted")), "0123456789");

  ASSERT_TRUE(fs_.Remove(tmp_.Join("b")).ok());
  EXPECT_TRUE(fs_.Remove(tmp_.Join("b")).IsNotFound());
  ASSERT_TRUE(fs_.CreateDir(tmp_.Join("q")).ok());
  auto c = fs_.Open(tmp_.Join("q/c"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->WriteAt(0, SpanOf("new")).ok());
  EXPECT_EQ(fs_.Open(tmp_.Join("q/c"), OpenMode::kCreateExclusive).status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_TRUE(fs_.Open(tmp_.Join("nope/c"), OpenMode::kCreate).status().IsNotFound());

  auto entries = fs_.ListDir(tmp_.path());
  ASSERT_TRUE(entries.ok());
  std::vector<std::string> names;
  for (const auto& e : *entries) names.push_back(e.name + (e.is_directory ? "/" : ""));
  EXPECT_EQ(names, (std::vector<std::string>{"a.deleted", "q/"}));

  auto diff = fs_.Diff();
  ASSERT_TRUE(diff.ok());
  ASSERT_EQ(diff->size(), 4u);
  EXPECT_EQ((*diff)[0].path, tmp_.Join("a"));
  EXPECT_EQ((*diff)[0].kind, FileDiff::Kind::kRemoved);
  EXPECT_EQ((*diff)[1].path, tmp_.Join("a.deleted"));
  EXPECT_EQ((*diff)[1].kind, FileDiff::Kind::kAdded);
  EXPECT_EQ((*diff)[2].path, tmp_.Join("b"));
  EXPECT_EQ((*diff)[2].kind, FileDiff::Kind::kRemoved);
  EXPECT_EQ((*diff)[3].path, tmp_.Join("q/c"));
  EXPECT_EQ((*diff)[3].new_size, 3u);
  ExpectBaseUntouched();
  EXPECT_FALSE(FileSystem::Default()->Exists(tmp_.Join("q")));
}

TEST_F(OverlayTest, RewritingIdenticalBytesIsNoDiff) {
  auto f = fs_.Open(tmp_.Join("a"), OpenMode::kTruncate);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*fs_.FileSize(tmp_.Join("a")), 0u);
  ASSERT_TRUE((*f)->WriteAt(0, SpanOf("0123456789")).ok());
  auto diff = fs_.Diff();
  ASSERT_TRUE(diff.ok());
  EXPECT_TRUE(diff->empty());
  EXPECT_FALSE(fs_.changes().empty());
  ExpectBaseUntouched();
}

TEST_F(OverlayTest, ReadOnlyHandleRefusesWrites) {
  auto f = fs_.Open(tmp_.Join("a"), OpenMode::kRead);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE((*f)->WriteAt(0, SpanOf("x")).IsIoError());
  EXPECT_TRUE((*f)->Truncate(0).IsIoError());
  EXPECT_TRUE(fs_.changes().empty());
}

TEST_F(OverlayTest, RemoveAllHidesTheTree) {
  ASSERT_TRUE(fs_.RemoveAll(tmp_.path()).ok());
  EXPECT_FALSE(fs_.Exists(tmp_.Join("a")));
  EXPECT_TRUE(fs_.Open(tmp_.Join("a"), OpenMode::kRead).status().IsNotFound());
  ExpectBaseUntouched();
}

}  // namespace
}  // namespace daruma
