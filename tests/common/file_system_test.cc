// FileSystem::ReadFile: a whole file, empty, small, or larger than a page.
#include "common/file_system.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_support.h"

namespace daruma {
namespace {

TEST(FileSystemTest, ReadFileReturnsEveryByteOfEmptySmallAndLargeFiles) {
  testing::TempDir dir;
  FileSystem* fs = FileSystem::Default();
  for (size_t size :
       {size_t(0), size_t(1), size_t(8191), size_t(8192), size_t(8193), size_t(100'000)}) {
    std::string text(size, '\0');
    for (size_t i = 0; i < size; ++i) text[i] = char('a' + i * 7 % 26);
    const std::string path = dir.Join("file-" + std::to_string(size));
    testing::WriteStringToFile(path, text);
    Result<std::vector<uint8_t>> read = fs->ReadFile(path);
    ASSERT_TRUE(read.ok()) << path << ": " << read.status().ToString();
    EXPECT_EQ(std::string(read->begin(), read->end()), text) << "size " << size;
  }
  Result<std::vector<uint8_t>> missing = fs->ReadFile(dir.Join("missing"));
  EXPECT_TRUE(missing.status().IsNotFound()) << missing.status().ToString();
}

}  // namespace
}  // namespace daruma
