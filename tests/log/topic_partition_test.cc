// TopicPartition, topic names and partition-directory names (spec §8.1, §15.13).
#include "log/topic_partition.h"

#include <gtest/gtest.h>

#include <unordered_set>

namespace daruma {
namespace {

constexpr char kHex[] = "0123456789abcdef0123456789abcdef";

TEST(TopicPartitionTest, ToStringEqualityOrderAndHash) {
  TopicPartition a{"orders", 7};
  EXPECT_EQ(a.ToString(), "orders-7");
  EXPECT_EQ(a, (TopicPartition{"orders", 7}));
  EXPECT_LT((TopicPartition{"a", 9}), (TopicPartition{"b", 0}));
  EXPECT_LT((TopicPartition{"a", 1}), (TopicPartition{"a", 2}));
  std::unordered_set<TopicPartition, TopicPartitionHash> set{a, {"orders", 8}, a};
  EXPECT_EQ(set.size(), 2u);
}

TEST(TopicPartitionTest, LegalTopicNames) {
  EXPECT_TRUE(ValidateTopicName("a").ok());
  EXPECT_TRUE(ValidateTopicName("Orders_v1.x-y").ok());
  EXPECT_TRUE(ValidateTopicName(std::string(249, 'x')).ok());
  EXPECT_FALSE(ValidateTopicName(std::string(250, 'x')).ok());
  EXPECT_FALSE(ValidateTopicName("").ok());
  EXPECT_FALSE(ValidateTopicName(".").ok());
  EXPECT_FALSE(ValidateTopicName("..").ok());
  Status st = ValidateTopicName("a/b");
  EXPECT_NE(st.message().find("position 1"), std::string::npos) << st.message();
  EXPECT_FALSE(ValidateTopicName("a b").ok());
  EXPECT_FALSE(ValidateTopicName("lost+found").ok());
}

struct DirCase {
  const char* name;
  const char* topic;  // nullptr: must be rejected
  int32_t partition;
  DirKind kind;
};

TEST(TopicPartitionTest, ParseDirNameTable) {
  const std::string del = std::string("t-0.") + kHex + "-delete";
  const std::string fut = std::string("my.topic-12.") + kHex + "-future";
  const std::string stray = std::string("a-b-3.") + kHex + "-stray";
  const DirCase cases[] = {
      {"orders-7", "orders", 7, DirKind::kLive},
      {"a-b-3", "a-b", 3, DirKind::kLive},
      {"fixture-txn-0", "fixture-txn", 0, DirKind::kLive},
      {"__consumer_offsets-49", "__consumer_offsets", 49, DirKind::kLive},
      {"t-007", "t", 7, DirKind::kLive},  // Kafka's toInt accepts leading zeros
      {"t-2147483647", "t", 2147483647, DirKind::kLive},
      {del.c_str(), "t", 0, DirKind::kDelete},
      {fut.c_str(), "my.topic", 12, DirKind::kFuture},
      {stray.c_str(), "a-b", 3, DirKind::kStray},
      {"", nullptr, 0, DirKind::kLive},
      {"orders", nullptr, 0, DirKind::kLive},
      {"lost+found", nullptr, 0, DirKind::kLive},
      {"../x-0", nullptr, 0, DirKind::kLive},
      {"x/y-0", nullptr, 0, DirKind::kLive},
      {"..-0", nullptr, 0, DirKind::kLive},
      {".-0", nullptr, 0, DirKind::kLive},
      {"-0", nullptr, 0, DirKind::kLive},
      {"t-", nullptr, 0, DirKind::kLive},
      {"t-x", nullptr, 0, DirKind::kLive},
      {"t-+1", nullptr, 0, DirKind::kLive},
      {"t-2147483648", nullptr, 0, DirKind::kLive},
      {"t-1.5", nullptr, 0, DirKind::kLive},
      {"t-0-delete", nullptr, 0, DirKind::kLive},        // no .uuid
      {"t-0.-delete", nullptr, 0, DirKind::kLive},       // empty uuid
      {"t-x.abc-delete", nullptr, 0, DirKind::kLive},    // bad partition
      {"t 1-0.abc-delete", nullptr, 0, DirKind::kLive},  // whitespace
      {"t-0.a/b-delete", nullptr, 0, DirKind::kLive},
      {"a b-0", nullptr, 0, DirKind::kLive},
  };
  for (const DirCase& c : cases) {
    auto r = ParseTopicPartitionDirName(c.name);
    if (c.topic == nullptr) {
      ASSERT_FALSE(r.ok()) << "accepted '" << c.name << "'";
      EXPECT_NE(r.status().message().find("'" + std::string(c.name) + "'"), std::string::npos)
          << r.status().message();
      continue;
    }
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
    EXPECT_EQ(r->tp, (TopicPartition{c.topic, c.partition})) << c.name;
    EXPECT_EQ(r->kind, c.kind) << c.name;
    EXPECT_EQ(r->unique_id, c.kind == DirKind::kLive ? "" : kHex) << c.name;
  }
}

TEST(TopicPartitionTest, SuffixedDirNamesRoundTripAndAreCapped) {
  TopicPartition tp{"orders", 3};
  EXPECT_EQ(LogDirName(tp), "orders-3");
  EXPECT_EQ(DeleteDirName(tp, kHex), std::string("orders-3.") + kHex + "-delete");
  EXPECT_EQ(FutureDirName(tp, kHex), std::string("orders-3.") + kHex + "-future");
  EXPECT_EQ(StrayDirName(tp, kHex), std::string("orders-3.") + kHex + "-stray");
  TopicPartition long_tp{std::string(249, 'x'), 12345};
  const std::string del = DeleteDirName(long_tp, kHex);
  EXPECT_EQ(del.size(), 255u);
  auto parsed = ParseTopicPartitionDirName(del);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->tp.partition, 12345);
  EXPECT_EQ(parsed->tp.topic, std::string(255 - 7 - 33 - 6, 'x'));
  EXPECT_EQ(StrayDirName(long_tp, kHex).size(), 255u);
  EXPECT_EQ(FutureDirName(long_tp, kHex).size(), 249u + 6 + 33 + 7);
}

}  // namespace
}  // namespace daruma
