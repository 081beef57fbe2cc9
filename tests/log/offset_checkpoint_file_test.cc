// OffsetCheckpointFile and the text checkpoint format (spec §9.2, §9.3).
#include "log/offset_checkpoint_file.h"

#include <gtest/gtest.h>

#include "log/checkpoint_text.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

TEST(OffsetCheckpointFileTest, ParsesSpecExample) {
  auto r = OffsetCheckpointFile::Parse("0\n2\norders 0 1523\norders 1 877\n", "cp");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, (OffsetMap{{{"orders", 0}, 1523}, {{"orders", 1}, 877}}));
}

TEST(OffsetCheckpointFileTest, EmptyAndTruncatedHeadersReadAsNoEntries) {
  for (const char* text : {"", "0", "0\n", "0\r\n"}) {
    auto r = OffsetCheckpointFile::Parse(text, "cp");
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().ToString();
    EXPECT_TRUE(r->empty());
  }
  auto zero = OffsetCheckpointFile::Parse("0\n0\n", "cp");
  ASSERT_TRUE(zero.ok());
  EXPECT_TRUE(zero->empty());
}

TEST(OffsetCheckpointFileTest, AcceptsJavaLineEndingsAndWhitespaceRuns) {
  auto r = OffsetCheckpointFile::Parse("0\r\n2\rt 0 \t 5  \r\nu +1 -7", "cp");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, (OffsetMap{{{"t", 0}, 5}, {{"u", 1}, -7}}));
}

TEST(OffsetCheckpointFileTest, LaterDuplicateWins) {
  auto r = OffsetCheckpointFile::Parse("0\n2\nt 0 5\nt 0 9\n", "cp");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (OffsetMap{{{"t", 0}, 9}}));
}

struct BadCase {
  const char* text;
  const char* expect;  // must appear in the message
};

TEST(OffsetCheckpointFileTest, ErrorsNameFileAndLine) {
  const BadCase cases[] = {
      {"1\n0\n", "unrecognised version 1 in checkpoint file /x/cp (line 1)"},
      {"zero\n", "malformed line 1 in checkpoint file /x/cp: 'zero'"},
      {"0 \n1\nt 0 1\n", "malformed line 1"},
      {"0\nx\n", "malformed line 2 in checkpoint file /x/cp: 'x'"},
      {"0\n-1\n", "malformed line 2"},
      {"0\n2\nt 0 1\nt 1\n", "malformed line 4 in checkpoint file /x/cp: 't 1'"},
      {"0\n1\nt 0 1 2\n", "malformed line 3"},
      {"0\n1\n t 0 1\n", "malformed line 3"},  // leading whitespace: empty first field
      {"0\n1\nt 0 1\n\n", "malformed line 4"},
      {"0\n1\nt x 1\n", "malformed line 3"},
      {"0\n1\nt 2147483648 1\n", "malformed line 3"},
      {"0\n1\nt 0 9223372036854775808\n", "malformed line 3"},
      {"0\n3\nt 0 1\nt 1 1\n", "expected 3 entries in checkpoint file /x/cp (line 2), but found 2"},
      {"0\n1\nt 0 1\nt 1 1\n", "expected 1 entries"},
  };
  for (const BadCase& c : cases) {
    auto r = OffsetCheckpointFile::Parse(c.text, "/x/cp");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_TRUE(r.status().IsCorruption());
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos)
        << "text: " << c.text << "\nmessage: " << r.status().message();
  }
}

TEST(OffsetCheckpointFileTest, OpenCreatesEmptyFileAndWriteIsSortedAndAtomic) {
  TempDir dir;
  const std::string path = dir.Join("recovery-point-offset-checkpoint");
  auto cp = OffsetCheckpointFile::Open(path);
  ASSERT_TRUE(cp.ok());
  EXPECT_EQ(ReadFileToString(path), "");
  EXPECT_TRUE(cp->Read()->empty());
  OffsetMap offsets{{{"b", 0}, 3}, {{"a", 10}, 1}, {{"a", 2}, 2}};
  ASSERT_TRUE(cp->Write(offsets).ok());
  EXPECT_EQ(ReadFileToString(path), "0\n3\na 2 2\na 10 1\nb 0 3\n");
  EXPECT_FALSE(FileSystem::Default()->Exists(path + ".tmp"));
  EXPECT_EQ(*cp->Read(), offsets);
  ASSERT_TRUE(cp->Write({}).ok());
  EXPECT_EQ(ReadFileToString(path), "0\n0\n");
}

TEST(OffsetCheckpointFileTest, ReadErrorNamesThePath) {
  TempDir dir;
  const std::string path = dir.Join("cp");
  WriteStringToFile(path, "0\n1\nbroken\n");
  auto cp = OffsetCheckpointFile::Open(path);
  ASSERT_TRUE(cp.ok());
  auto r = cp->Read();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("malformed line 3 in checkpoint file " + path),
            std::string::npos)
      << r.status().message();
}

TEST(CheckpointTextTest, JavaIntegerParsing) {
  EXPECT_EQ(ParseJavaInt("2147483647"), 2147483647);
  EXPECT_EQ(ParseJavaInt("-2147483648"), INT32_MIN);
  EXPECT_EQ(ParseJavaInt("+0"), 0);
  EXPECT_EQ(ParseJavaInt("2147483648"), std::nullopt);
  EXPECT_EQ(ParseJavaInt("-"), std::nullopt);
  EXPECT_EQ(ParseJavaInt(""), std::nullopt);
  EXPECT_EQ(ParseJavaInt(" 1"), std::nullopt);
  EXPECT_EQ(ParseJavaLong("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(ParseJavaLong("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(ParseJavaLong("9223372036854775808"), std::nullopt);
}

TEST(CheckpointTextTest, SplitLikeJava) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(SplitOnWhitespace("a b  c"), (V{"a", "b", "c"}));
  EXPECT_EQ(SplitOnWhitespace(" a"), (V{"", "a"}));
  EXPECT_EQ(SplitOnWhitespace("a \t"), (V{"a"}));
  EXPECT_EQ(SplitOnWhitespace(""), (V{""}));
  EXPECT_EQ(SplitOnWhitespace("  "), V{});
}

}  // namespace
}  // namespace daruma
