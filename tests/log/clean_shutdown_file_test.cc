// CleanShutdownFile (spec §9.4).
#include "log/clean_shutdown_file.h"

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

TEST(CleanShutdownFileTest, WritesKafkaJsonExactly) {
  TempDir dir;
  CleanShutdownFile marker(dir.path());
  EXPECT_EQ(marker.path(), dir.Join(".kafka_cleanshutdown"));
  EXPECT_FALSE(marker.Exists());
  EXPECT_TRUE(marker.ReadBrokerEpoch().status().IsNotFound());
  ASSERT_TRUE(marker.Write(7).ok());
  EXPECT_EQ(ReadFileToString(marker.path()), "{\"version\":0,\"brokerEpoch\":7}");
  EXPECT_EQ(*marker.ReadBrokerEpoch(), std::optional<int64_t>(7));
  ASSERT_TRUE(marker.Write(-1).ok());  // shorter content: the file is replaced, not overlaid
  EXPECT_EQ(ReadFileToString(marker.path()), "{\"version\":0,\"brokerEpoch\":-1}");
  ASSERT_TRUE(marker.Remove().ok());
  EXPECT_FALSE(marker.Exists());
  ASSERT_TRUE(marker.Remove().ok());  // missing is fine
}

TEST(CleanShutdownFileTest, UnreadableContentMeansCleanButEpochUnknown) {
  TempDir dir;
  CleanShutdownFile marker(dir.path());
  const std::pair<const char*, std::optional<int64_t>> cases[] = {
      {"", std::nullopt},  // Kafka < 3.7
      {"garbage", std::nullopt},
      {"{\"version\":0}", std::nullopt},
      {"{\"version\":0,\"brokerEpoch\":\"7\"}", std::nullopt},
      {"[1,2]", std::nullopt},
      {"{\"brokerEpoch\":12,\"version\":0,\"extra\":{\"a\":1}}", 12},
      {" {\"version\":1,\"brokerEpoch\":9223372036854775807}\n", INT64_MAX},
  };
  for (const auto& [text, epoch] : cases) {
    WriteStringToFile(marker.path(), text);
    EXPECT_TRUE(marker.Exists());
    auto r = marker.ReadBrokerEpoch();
    ASSERT_TRUE(r.ok()) << text;
    EXPECT_EQ(*r, epoch) << text;
  }
}

}  // namespace
}  // namespace daruma
