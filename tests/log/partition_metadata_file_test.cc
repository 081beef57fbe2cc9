// PartitionMetadataFile and Uuid (spec §9.6).
#include "log/partition_metadata_file.h"

#include <gtest/gtest.h>

#include <set>

#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

TEST(UuidTest, Base64UrlRoundTrip) {
  std::array<uint8_t, 16> b{};
  b[15] = 3;
  EXPECT_EQ(Uuid(b).ToString(), "AAAAAAAAAAAAAAAAAAAAAw");
  for (int i = 0; i < 16; ++i) b[i] = uint8_t(0xf0 + i);
  const Uuid id(b);
  EXPECT_EQ(id.ToString(), "8PHy8_T19vf4-fr7_P3-_w");
  EXPECT_EQ(*Uuid::FromString("8PHy8_T19vf4-fr7_P3-_w"), id);
  EXPECT_EQ(*Uuid::FromString("8PHy8_T19vf4-fr7_P3-_w=="), id);  // Java accepts padding
  EXPECT_EQ(id.ToHex(), "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
  EXPECT_TRUE(Uuid::Zero().IsZero());
  for (const char* bad : {"", "AAAA", "8PHy8_T19vf4-fr7_P3-_w=", "8PHy8+T19vf4-fr7_P3-_w",
                          "AAAAAAAAAAAAAAAAAAAAAAAA"}) {
    auto r = Uuid::FromString(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(UuidTest, RandomFollowsKafkaRules) {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    const Uuid id = Uuid::Random();
    const std::string s = id.ToString();
    EXPECT_EQ(s.size(), 22u);
    EXPECT_NE(s[0], '-');
    EXPECT_FALSE(id.IsZero());
    EXPECT_EQ(id.bytes()[6] >> 4, 4);
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), 200u);
}

TEST(PartitionMetadataFileTest, ParsesKafkaFormat) {
  auto r = PartitionMetadataFile::Parse("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAw", "pm");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->version, 0);
  EXPECT_EQ(r->topic_id.ToString(), "AAAAAAAAAAAAAAAAAAAAAw");
  // `:\s+` accepts any whitespace run; the key text is not checked; version >= 0 accepted.
  r = PartitionMetadataFile::Parse("v:\t 3\r\nid:  AAAAAAAAAAAAAAAAAAAABA\n", "pm");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->version, 3);
}

TEST(PartitionMetadataFileTest, RejectsMalformedContentNamingFileAndLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "malformed line 1 in partition metadata file /p/pm"},
      {"version:0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAw", "malformed line 1"},
      {"version: x\ntopic_id: AAAAAAAAAAAAAAAAAAAAAw", "malformed line 1"},
      {"version: 0: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAw", "malformed line 1"},
      {"version: -1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAw", "unrecognized version -1"},
      {"version: 0", "malformed line 2"},
      {"version: 0\ntopic_id:AAAAAAAAAAAAAAAAAAAAAw", "malformed line 2"},
      {"version: 0\ntopic_id: AAAA", "line 2: invalid uuid 'AAAA'"},
      {"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "zero uuid"},
  };
  for (const auto& [text, expect] : cases) {
    auto r = PartitionMetadataFile::Parse(text, "/p/pm");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_TRUE(r.status().IsCorruption());
    EXPECT_NE(r.status().message().find(expect), std::string::npos)
        << text << " -> " << r.status().message();
    EXPECT_NE(r.status().message().find("/p/pm"), std::string::npos);
  }
}

TEST(PartitionMetadataFileTest, WriteHasNoTrailingNewlineAndReadsBack) {
  TempDir dir;
  const std::string path = dir.Join(kPartitionMetadataFileName);
  PartitionMetadataFile file(path);
  EXPECT_FALSE(file.Exists());
  EXPECT_TRUE(file.Read().status().IsNotFound());
  const Uuid id = *Uuid::FromString("AAAAAAAAAAAAAAAAAAAABQ");
  ASSERT_TRUE(file.Write(id).ok());
  EXPECT_EQ(ReadFileToString(path), "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAABQ");
  EXPECT_FALSE(FileSystem::Default()->Exists(path + ".tmp"));
  EXPECT_EQ(file.Read()->topic_id, id);
}

}  // namespace
}  // namespace daruma
