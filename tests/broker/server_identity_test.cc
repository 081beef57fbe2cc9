// BrokerIdentity (broker_identity.h): which node id and cluster id the broker
// answers with, and the meta.properties written into fresh log dirs.
#include <gtest/gtest.h>

#include "broker/broker_context.h"
#include "broker/broker_identity.h"
#include "log/meta_properties.h"
#include "support/test_support.h"

namespace daruma::broker {
namespace {

using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;
using daruma::testing::WriteStringToFile;

// A Kafka 3.7 ZooKeeper-mode file, as found in the shared fixtures.
constexpr char kStoredV0[] =
    "#\n#Thu Jul 18 18:09:58 IST 2024\nbroker.id=1\ncluster.id=XB4QhweWTe-kZwMNW25y1A\nversion=0\n";

class IdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = dir_.Join("a");
    b_ = dir_.Join("b");
    ASSERT_TRUE(FileSystem::Default()->CreateDir(a_).ok());
    ASSERT_TRUE(FileSystem::Default()->CreateDir(b_).ok());
    config_.log_dirs = {a_, b_ + "/"};
  }
  std::string Meta(const std::string& dir) { return dir + "/meta.properties"; }
  // The paths WriteMissingMetaProperties wrote.
  static std::vector<std::string> Paths(const std::vector<WrittenMetaProperties>& written) {
    std::vector<std::string> out;
    for (const WrittenMetaProperties& w : written) out.push_back(w.path);
    return out;
  }

  TempDir dir_;
  std::string a_, b_;
  ServerConfig config_;
};

TEST_F(IdentityTest, FreshDirsGetVersion1FilesWithOneClusterIdAndOwnDirectoryIds) {
  config_.other = {{"node.id", "3"}};
  auto identity = ResolveBrokerIdentity(config_);
  ASSERT_TRUE(identity.ok()) << identity.status().ToString();
  EXPECT_EQ(identity->node_id, 3);
  ASSERT_EQ(identity->cluster_id.size(), 22u);
  EXPECT_NE(identity->cluster_id, kDefaultClusterId);
  auto written = WriteMissingMetaProperties(config_.log_dirs, *identity);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(Paths(*written), (std::vector<std::string>{Meta(a_), Meta(b_)}));

  const std::string text = ReadFileToString(Meta(a_));
  EXPECT_EQ(text.substr(0, 3), "#\n#");
  const std::string keys =
      "\nversion=1\nnode.id=3\ncluster.id=" + identity->cluster_id + "\ndirectory.id=";
  EXPECT_NE(text.find(keys), std::string::npos) << text;
  auto ma = MetaProperties::Read(Meta(a_));
  auto mb = MetaProperties::Read(Meta(b_));
  ASSERT_TRUE(ma.ok() && mb.ok());
  EXPECT_EQ(ma->version, 1);
  EXPECT_EQ(ma->node_id, 3);
  EXPECT_EQ(mb->cluster_id, identity->cluster_id);
  ASSERT_TRUE(ma->directory_id && mb->directory_id);
  EXPECT_FALSE(ma->directory_id->IsZero());
  EXPECT_NE(*ma->directory_id, *mb->directory_id);
  EXPECT_FALSE(FileSystem::Default()->Exists(Meta(a_) + ".tmp"));

  // The next start reads the same identity back and writes nothing.
  auto again = ResolveBrokerIdentity(config_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->cluster_id, identity->cluster_id);
  EXPECT_EQ(again->node_id, 3);
  EXPECT_TRUE(WriteMissingMetaProperties(config_.log_dirs, *again)->empty());
  EXPECT_EQ(ReadFileToString(Meta(a_)), text);
}

TEST_F(IdentityTest, StoredIdsAreAdoptedAndTheFileIsNeverRewritten) {
  WriteStringToFile(Meta(a_), kStoredV0);
  auto identity = ResolveBrokerIdentity(config_);
  ASSERT_TRUE(identity.ok()) << identity.status().ToString();
  EXPECT_EQ(identity->node_id, 1);
  EXPECT_EQ(identity->cluster_id, "XB4QhweWTe-kZwMNW25y1A");
  auto written = WriteMissingMetaProperties(config_.log_dirs, *identity);
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(Paths(*written), std::vector<std::string>{Meta(b_)});
  EXPECT_EQ(ReadFileToString(Meta(a_)), kStoredV0);
  auto mb = MetaProperties::Read(Meta(b_));
  ASSERT_TRUE(mb.ok());
  EXPECT_EQ(mb->node_id, 1);
  EXPECT_EQ(mb->cluster_id, "XB4QhweWTe-kZwMNW25y1A");
}

// Beside a ZooKeeper-mode broker's v0 files, a new dir gets what KafkaServer
// writes into an empty dir: version=0, broker.id and the cluster.id, and no
// directory.id. A v1 file there would stop that broker ("Found unexpected
// version in .../meta.properties", MetaPropertiesEnsemble.verify REQUIRE_V0).
TEST_F(IdentityTest, ADirBesideVersion0FilesGetsAVersion0File) {
  const std::string c = dir_.Join("c");
  ASSERT_TRUE(FileSystem::Default()->CreateDir(c).ok());
  config_.log_dirs.push_back(c);
  WriteStringToFile(Meta(b_), kStoredV0);
  auto identity = ResolveBrokerIdentity(config_);
  ASSERT_TRUE(identity.ok()) << identity.status().ToString();
  auto written = WriteMissingMetaProperties(config_.log_dirs, *identity);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(Paths(*written), (std::vector<std::string>{Meta(a_), Meta(c)}));
  for (const std::string& dir : {a_, c}) {
    const std::string text = ReadFileToString(Meta(dir));
    EXPECT_NE(text.find("\nversion=0\nbroker.id=1\ncluster.id=XB4QhweWTe-kZwMNW25y1A\n"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("directory.id"), std::string::npos) << text;
    EXPECT_EQ(text.find("node.id"), std::string::npos) << text;
  }
  EXPECT_EQ(written->at(0).meta.version, 0);
  EXPECT_EQ(written->at(0).meta, *MetaProperties::Read(Meta(a_)));
  EXPECT_EQ(ReadFileToString(Meta(b_)), kStoredV0);
}

// A v0 file without cluster.id (written before Kafka 0.10.1, or by hand):
// the new file has none either. Kafka takes ZooKeeper's at its next start,
// and any id Daruma invented would clash with it.
TEST_F(IdentityTest, AVersion0FileWithoutClusterIdGetsASiblingWithout) {
  WriteStringToFile(Meta(a_), "version=0\nbroker.id=2\n");
  auto identity = ResolveBrokerIdentity(config_);
  ASSERT_TRUE(identity.ok()) << identity.status().ToString();
  EXPECT_EQ(identity->cluster_id, kDefaultClusterId);  // what Daruma answers with
  auto written = WriteMissingMetaProperties(config_.log_dirs, *identity);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(Paths(*written), std::vector<std::string>{Meta(b_)});
  auto mb = MetaProperties::Read(Meta(b_));
  ASSERT_TRUE(mb.ok()) << mb.status().ToString();
  MetaProperties expected;
  expected.version = 0;
  expected.node_id = 2;
  EXPECT_EQ(*mb, expected);
}

// Beside KRaft's v1 files a new dir gets a v1 file with its own directory.id.
TEST_F(IdentityTest, ADirBesideVersion1FilesGetsAVersion1File) {
  WriteStringToFile(Meta(a_),
                    "version=1\nnode.id=4\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n"
                    "directory.id=WvVzx-Xl3swcqvxXsPbjww\n");
  auto identity = ResolveBrokerIdentity(config_);
  ASSERT_TRUE(identity.ok()) << identity.status().ToString();
  auto written = WriteMissingMetaProperties(config_.log_dirs, *identity);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  auto mb = MetaProperties::Read(Meta(b_));
  ASSERT_TRUE(mb.ok()) << mb.status().ToString();
  EXPECT_EQ(mb->version, 1);
  EXPECT_EQ(mb->node_id, 4);
  EXPECT_EQ(mb->cluster_id, "MkU3OEVBNTcwNTJENDM2Qk");
  ASSERT_TRUE(mb->directory_id.has_value());
  EXPECT_NE(mb->directory_id->ToString(), "WvVzx-Xl3swcqvxXsPbjww");
}

TEST_F(IdentityTest, MatchingConfiguredBrokerIdIsAccepted) {
  WriteStringToFile(Meta(a_), kStoredV0);
  config_.other = {{"broker.id", "1"}};
  auto identity = ResolveBrokerIdentity(config_);
  ASSERT_TRUE(identity.ok()) << identity.status().ToString();
  EXPECT_EQ(identity->node_id, 1);
}

TEST_F(IdentityTest, ConfiguredNodeIdThatDiffersFromTheStoredOneIsFatal) {
  WriteStringToFile(Meta(b_), kStoredV0);
  config_.other = {{"node.id", "2"}, {"broker.id", "1"}};  // node.id wins
  auto identity = ResolveBrokerIdentity(config_);
  ASSERT_FALSE(identity.ok());
  EXPECT_EQ(identity.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(identity.status().message(),
            Meta(b_) +
                ": stored node id 1 does not match the configured node.id/broker.id 2 (this log "
                "dir belongs to another broker)");
  EXPECT_FALSE(FileSystem::Default()->Exists(Meta(a_)));
}

TEST_F(IdentityTest, VersionZeroFileWithoutClusterIdKeepsTheFixedDefault) {
  WriteStringToFile(Meta(a_), "version=0\nbroker.id=0\n");
  auto identity = ResolveBrokerIdentity(config_);
  ASSERT_TRUE(identity.ok());
  EXPECT_EQ(identity->node_id, 0);
  EXPECT_EQ(identity->cluster_id, kDefaultClusterId);
}

TEST_F(IdentityTest, UnparsableNodeIdNamesTheKey) {
  config_.other = {{"broker.id", "one"}};
  auto identity = ResolveBrokerIdentity(config_);
  ASSERT_FALSE(identity.ok());
  EXPECT_EQ(identity.status().message(),
            "invalid value \"one\" for broker.id: expected an integer of at least 0");
}

}  // namespace
}  // namespace daruma::broker
