// MetaProperties and the Java properties reader (spec §9.8).
#include "log/meta_properties.h"

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;
using Props = std::map<std::string, std::string>;

TEST(JavaPropertiesTest, CommentsBlankLinesSeparatorsAndEscapes) {
  const char* text =
      "#\n"
      "#Thu Nov 30 19:58:00 UTC 2023\n"
      "! bang comment\n"
      "\n"
      "   \t\n"
      "a=1\n"
      "  b : two words \n"
      "c 3\n"
      "d\n"
      "e=x\\\n"
      "    y\n"
      "k\\ ey\\=x=v\\tw\\u0041\\:\n"
      "f=\\u00e9\r\n"
      "g=last";
  auto r = ParseJavaProperties(text, "mp");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, (Props{{"a", "1"},
                       {"b", "two words "},
                       {"c", "3"},
                       {"d", ""},
                       {"e", "xy"},
                       {"k ey=x", "v\twA:"},
                       {"f", "\xc3\xa9"},
                       {"g", "last"}}));
}

TEST(JavaPropertiesTest, MalformedUnicodeEscapeNamesLine) {
  auto r = ParseJavaProperties("a=1\nb=\\u12\n", "/d/meta.properties");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 2 of properties file /d/meta.properties"),
            std::string::npos)
      << r.status().message();
}

TEST(MetaPropertiesTest, VersionOneKraft) {
  auto r = MetaProperties::Parse(
      "#\n#Thu Nov 30 19:58:00 UTC 2023\nnode.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAABQ\n"
      "version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n",
      "mp");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->version, 1);
  EXPECT_EQ(r->node_id, 1);
  EXPECT_EQ(r->cluster_id, "MkU3OEVBNTcwNTJENDM2Qk");
  EXPECT_EQ(r->directory_id->ToString(), "AAAAAAAAAAAAAAAAAAAABQ");
}

TEST(MetaPropertiesTest, VersionZeroDefaultsAndBrokerId) {
  auto r = MetaProperties::Parse("broker.id=5\nnode.id=9\n", "mp");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->version, 0);
  EXPECT_EQ(r->node_id, 5);  // v0 reads broker.id, ignores node.id
  EXPECT_EQ(r->cluster_id, std::nullopt);
  r = MetaProperties::Parse("version=0\n", "mp");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->node_id, std::nullopt);
}

TEST(MetaPropertiesTest, InvalidContentIsRejectedNamingFile) {
  const std::pair<const char*, const char*> cases[] = {
      {"version=2\n", "unknown meta.properties version number 2"},
      {"version=x\n", "invalid version 'x'"},
      {"version=1\ncluster.id=c\n", "failed to find required property node.id"},
      {"version=1\nnode.id=1\n", "cluster.id was not found"},
      {"version=1\nnode.id=one\ncluster.id=c\n", "failed to parse node.id property as an int"},
      {"broker.id=\n", "failed to parse broker.id"},
      {"directory.id=zz\n", "directory.id: invalid uuid 'zz'"},
  };
  for (const auto& [text, expect] : cases) {
    auto r = MetaProperties::Parse(text, "/d/meta.properties");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(expect), std::string::npos)
        << text << " -> " << r.status().message();
    EXPECT_NE(r.status().message().find("/d/meta.properties"), std::string::npos);
  }
}

TEST(MetaPropertiesTest, SerializeLikeJavaStoreAndWriteReadsBack) {
  MetaProperties meta;
  meta.version = 1;
  meta.node_id = 3;
  meta.cluster_id = "a:b c";
  meta.directory_id = *Uuid::FromString("AAAAAAAAAAAAAAAAAAAABQ");
  EXPECT_EQ(meta.Serialize("Thu Nov 30 19:58:00 UTC 2023"),
            "#\n#Thu Nov 30 19:58:00 UTC 2023\nversion=1\nnode.id=3\ncluster.id=a\\:b c\n"
            "directory.id=AAAAAAAAAAAAAAAAAAAABQ\n");
  MetaProperties v0;
  v0.node_id = 7;
  EXPECT_EQ(v0.Serialize("D"), "#\n#D\nversion=0\nbroker.id=7\n");
  TempDir dir;
  const std::string path = dir.Join(kMetaPropertiesFileName);
  ASSERT_TRUE(meta.Write(path).ok());
  EXPECT_EQ(ReadFileToString(path).substr(0, 3), "#\n#");
  auto back = MetaProperties::Read(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, meta);
}

// Kafka's DirectoryId.reserved: the first 100 ids, the high half zero and the
// low half compared as a signed long.
TEST(DirectoryIdTest, KafkasFirstHundredIdsAreReserved) {
  for (const char* id : {"AAAAAAAAAAAAAAAAAAAAAA",     // MIGRATING (Uuid.ZERO_UUID)
                         "AAAAAAAAAAAAAAAAAAAAAQ",     // UNASSIGNED
                         "AAAAAAAAAAAAAAAAAAAAAg",     // LOST
                         "AAAAAAAAAAAAAAAAAAAAYw",     // 99
                         "AAAAAAAAAAD__________w"}) {  // low half -1 to Java
    EXPECT_TRUE(IsReservedDirectoryId(*Uuid::FromString(id))) << id;
  }
  for (const char* id : {"AAAAAAAAAAAAAAAAAAAAZA",  // 100
                         "AAAAAAAAAAEAAAAAAAAAAA",  // high half 1
                         "WvVzx-Xl3swcqvxXsPbjww"}) {
    EXPECT_FALSE(IsReservedDirectoryId(*Uuid::FromString(id))) << id;
  }
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(IsReservedDirectoryId(Uuid::Random()));
}

// What MetaPropertiesEnsemble.verify refuses: one finding per file at fault,
// naming the id and, for a shared one, the file it was first seen in.
TEST(DirectoryIdTest, SharedAndReservedIdsAreFoundPerFile) {
  auto meta = [](std::optional<std::string> id) {
    MetaProperties m;
    m.version = 1;
    m.node_id = 1;
    m.cluster_id = "c";
    if (id) m.directory_id = *Uuid::FromString(*id);
    return m;
  };
  const std::string shared = "WvVzx-Xl3swcqvxXsPbjww";
  const std::vector<DirectoryIdProblem> found = FindDirectoryIdProblems({
      {"/a/meta.properties", meta(shared)},
      {"/b/meta.properties", meta(std::nullopt)},
      {"/c/meta.properties", meta("AAAAAAAAAAAAAAAAAAAAAQ")},
      {"/d/meta.properties", meta(shared)},
      {"/e/meta.properties", meta("ROP8qUaSlk7r55i85yz4Cg")},
  });
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].path, "/c/meta.properties");
  EXPECT_EQ(found[0].what,
            "directory.id AAAAAAAAAAAAAAAAAAAAAQ is an id Kafka reserves (UNASSIGNED), never a "
            "log dir's");
  EXPECT_EQ(found[1].path, "/d/meta.properties");
  EXPECT_EQ(found[1].what, "directory.id " + shared +
                               " is also the directory.id of /a/meta.properties: each log dir "
                               "needs its own");
  EXPECT_TRUE(FindDirectoryIdProblems({{"/a/meta.properties", meta(shared)},
                                       {"/b/meta.properties", meta("ROP8qUaSlk7r55i85yz4Cg")}})
                  .empty());
}

}  // namespace
}  // namespace daruma
