// The index and metadata files Kafka wrote in fixtures/kafka-generated, read
// with Daruma's codecs (spec §7, §9). Every file is opened read-only; nothing
// in the fixtures is ever written.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/file_system.h"
#include "log/clean_shutdown_file.h"
#include "log/leader_epoch_file_cache.h"
#include "log/log_file_names.h"
#include "log/offset_checkpoint_file.h"
#include "log/offset_index.h"
#include "log/partition_metadata_file.h"
#include "log/time_index.h"
#include "log/topic_partition.h"
#include "log/transaction_index.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;

struct Scenario {
  std::string name;
  std::string topic;
  std::vector<EpochEntry> epochs;
  int64_t recovery_point;
  int64_t high_watermark;
  std::string topic_id;
  bool clean;
};

const Scenario kScenarios[] = {
    {"multi-segment-idempotent",
     "fixture-idem",
     {{0, 0}, {1, 600}, {3, 1350}},
     1800,
     1800,
     "AAAAAAAAAAAAAAAAAAAAAg",
     true},
    {"transactional", "fixture-txn", {{0, 0}}, 476, 476, "AAAAAAAAAAAAAAAAAAAAAw", true},
    {"compressed",
     "fixture-compressed",
     {{2, 0}, {4, 805}},
     1619,
     1619,
     "AAAAAAAAAAAAAAAAAAAABA",
     true},
    {"unclean-torn-tail", "fixture-crash", {{0, 0}}, 975, 1050, "AAAAAAAAAAAAAAAAAAAABQ", false},
};

std::string LogDir(const Scenario& s) {
  return testing::FixturesDir() + "/kafka-generated/" + s.name + "/logdir";
}
std::string PartitionDir(const Scenario& s) {
  return LogDir(s) + "/" + s.topic + "-0";
}

// Segment files of one kind, sorted by name (= by base offset).
std::vector<std::string> FilesWithSuffix(const std::string& dir, std::string_view suffix) {
  auto entries = FileSystem::Default()->ListDir(dir);
  EXPECT_TRUE(entries.ok()) << entries.status().ToString();
  std::vector<std::string> names;
  for (const DirEntry& e : *entries) {
    if (e.is_regular && HasSuffix(e.name, suffix)) names.push_back(e.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

uint64_t SizeOf(const std::string& path) {
  return *FileSystem::Default()->FileSize(path);
}

TEST(IndexCompatTest, OffsetIndexesHaveWholeEntriesAndPassSanityChecks) {
  DARUMA_REQUIRE_FIXTURES();
  int files = 0;
  for (const Scenario& s : kScenarios) {
    const std::string dir = PartitionDir(s);
    for (const std::string& name : FilesWithSuffix(dir, kIndexFileSuffix)) {
      SCOPED_TRACE(s.name + "/" + name);
      const std::string path = JoinPath(dir, name);
      const int64_t base = *OffsetFromFileName(name);
      auto index = OffsetIndex::Open(path, base, 65536, FileSystem::Default(), /*writable=*/false);
      ASSERT_TRUE(index.ok()) << index.status().ToString();
      OffsetIndex& oi = **index;
      EXPECT_EQ(SizeOf(path) % 8, 0u);
      EXPECT_EQ(oi.entries(), SizeOf(path) / 8);
      EXPECT_TRUE(oi.SanityCheck().ok()) << oi.SanityCheck().ToString();
      const bool untrimmed = s.name == "unclean-torn-tail" && base == 975;
      if (untrimmed) {
        EXPECT_EQ(SizeOf(path), 65536u);  // preallocated, never closed
        EXPECT_EQ(oi.entries(), 8192u);
        EXPECT_EQ(oi.Entry(8191), (OffsetPosition{975, 0}));  // a zero slot
      } else {
        for (size_t i = 0; i < oi.entries(); ++i) {
          const OffsetPosition e = oi.Entry(i);
          if (i > 0) {
            EXPECT_GT(e.offset, oi.Entry(i - 1).offset);
          }
          EXPECT_EQ(oi.Lookup(e.offset), e);
        }
      }
      ASSERT_TRUE(oi.Close().ok());
      ++files;
    }
  }
  EXPECT_EQ(files, 10 + 7 + 6 + 7);
}

TEST(IndexCompatTest, TimeIndexesHaveWholeEntriesAndPassSanityChecks) {
  DARUMA_REQUIRE_FIXTURES();
  int files = 0;
  for (const Scenario& s : kScenarios) {
    const std::string dir = PartitionDir(s);
    for (const std::string& name : FilesWithSuffix(dir, kTimeIndexFileSuffix)) {
      SCOPED_TRACE(s.name + "/" + name);
      const std::string path = JoinPath(dir, name);
      const int64_t base = *OffsetFromFileName(name);
      auto index = TimeIndex::Open(path, base, 65536, FileSystem::Default(), /*writable=*/false);
      ASSERT_TRUE(index.ok()) << index.status().ToString();
      TimeIndex& ti = **index;
      EXPECT_EQ(SizeOf(path) % 12, 0u);
      EXPECT_EQ(ti.entries(), SizeOf(path) / 12);
      if (s.name == "unclean-torn-tail" && base == 975) {
        // Never trimmed: 5461 slots, the last one zero. Kafka's check fails the
        // same way ("last timestamp 0 < first timestamp"); recovery rebuilds it.
        EXPECT_EQ(SizeOf(path), 65532u);
        Status st = ti.SanityCheck();
        EXPECT_TRUE(st.IsCorruption());
        EXPECT_NE(st.message().find("last timestamp is 0"), std::string::npos) << st.message();
      } else {
        EXPECT_TRUE(ti.SanityCheck().ok()) << ti.SanityCheck().ToString();
        ASSERT_GT(ti.entries(), 0u);  // every fixture batch has a 2023 timestamp
        for (size_t i = 1; i < ti.entries(); ++i) {
          EXPECT_GT(ti.Entry(i).timestamp, ti.Entry(i - 1).timestamp);
          EXPECT_GE(ti.Entry(i).offset, ti.Entry(i - 1).offset);
        }
        EXPECT_GE(ti.Entry(0).timestamp, 1700000000000);
        EXPECT_EQ(ti.Lookup(ti.LastEntry().timestamp), ti.LastEntry());
      }
      ++files;
    }
  }
  EXPECT_EQ(files, 10 + 7 + 6 + 7);
}

// The first abortedTxns block of expected-load.txt.
std::vector<AbortedTxn> ExpectedAbortedTxns(const std::string& path) {
  const std::string text = ReadFileToString(path);
  const size_t begin = text.find("abortedTxns=");
  const size_t end = text.find("\n\n", begin);
  const std::regex re(R"(\(pid=(\d+),first=(\d+),last=(\d+),lso=(\d+)\))");
  std::vector<AbortedTxn> out;
  const std::string block = text.substr(begin, end - begin);
  for (auto it = std::sregex_iterator(block.begin(), block.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back(
        {std::stoll((*it)[1]), std::stoll((*it)[2]), std::stoll((*it)[3]), std::stoll((*it)[4])});
  }
  return out;
}

TEST(IndexCompatTest, TransactionalFixtureAbortedTxnsMatchKafka) {
  DARUMA_REQUIRE_FIXTURES();
  const Scenario& s = kScenarios[1];
  const std::string dir = PartitionDir(s);
  std::vector<AbortedTxn> all;
  std::vector<std::string> names = FilesWithSuffix(dir, kTxnIndexFileSuffix);
  EXPECT_EQ(names.size(), 6u);  // 472 has none: Kafka creates .txnindex lazily
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const std::string path = JoinPath(dir, name);
    TransactionIndex index(path, *OffsetFromFileName(name), FileSystem::Default(), false);
    EXPECT_EQ(SizeOf(path) % AbortedTxn::kSize, 0u);
    EXPECT_TRUE(index.SanityCheck().ok()) << index.SanityCheck().ToString();
    auto txns = index.AllAbortedTxns();
    ASSERT_TRUE(txns.ok()) << txns.status().ToString();
    EXPECT_EQ(txns->size(), SizeOf(path) / AbortedTxn::kSize);
    all.insert(all.end(), txns->begin(), txns->end());
  }
  EXPECT_FALSE(FileSystem::Default()->Exists(TxnIndexFileName(dir, 472)));
  const std::vector<AbortedTxn> expected = ExpectedAbortedTxns(
      testing::FixturesDir() + "/kafka-generated/transactional/expected-load.txt");
  ASSERT_EQ(expected.size(), 36u);
  EXPECT_EQ(all.front(), (AbortedTxn{2000, 9, 19, 11}));
  EXPECT_EQ(all.back(), (AbortedTxn{3000, 455, 467, 468}));
  EXPECT_EQ(all, expected);
  // Fetch-time search in segment 0 stops at the first LSO reaching the bound.
  TransactionIndex first(TxnIndexFileName(dir, 0), 0, FileSystem::Default(), false);
  auto r = first.CollectAbortedTxns(0, 21);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->aborted, (std::vector<AbortedTxn>{{2000, 9, 19, 11}, {3000, 11, 20, 21}}));
  EXPECT_TRUE(r->is_complete);
}

TEST(IndexCompatTest, NoOtherScenarioHasTxnIndexes) {
  DARUMA_REQUIRE_FIXTURES();
  for (const Scenario& s : kScenarios) {
    if (s.name == "transactional") continue;
    EXPECT_TRUE(FilesWithSuffix(PartitionDir(s), kTxnIndexFileSuffix).empty()) << s.name;
  }
}

TEST(IndexCompatTest, LeaderEpochCheckpointsParseAndReserializeByteForByte) {
  DARUMA_REQUIRE_FIXTURES();
  for (const Scenario& s : kScenarios) {
    SCOPED_TRACE(s.name);
    const std::string path = PartitionDir(s) + "/" + kLeaderEpochCheckpointFileName;
    const std::string bytes = ReadFileToString(path);
    auto parsed = LeaderEpochFileCache::Parse(bytes, path);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(*parsed, s.epochs);
    EXPECT_EQ(LeaderEpochFileCache::Serialize(*parsed), bytes);
    auto cache = LeaderEpochFileCache::Open(path);  // exists: read only
    ASSERT_TRUE(cache.ok()) << cache.status().ToString();
    EXPECT_EQ(cache->entries(), s.epochs);
    EXPECT_EQ(cache->LatestEpoch(), s.epochs.back().first);
  }
}

TEST(IndexCompatTest, OffsetCheckpointsParseAndReserializeByteForByte) {
  DARUMA_REQUIRE_FIXTURES();
  for (const Scenario& s : kScenarios) {
    SCOPED_TRACE(s.name);
    const TopicPartition tp{s.topic, 0};
    const std::pair<const char*, int64_t> files[] = {
        {"recovery-point-offset-checkpoint", s.recovery_point},
        {"log-start-offset-checkpoint", 0},
        {"replication-offset-checkpoint", s.high_watermark},
    };
    for (const auto& [file, offset] : files) {
      const std::string path = LogDir(s) + "/" + file;
      const std::string bytes = ReadFileToString(path);
      auto parsed = OffsetCheckpointFile::Parse(bytes, path);
      ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
      EXPECT_EQ(*parsed, (OffsetMap{{tp, offset}})) << file;
      EXPECT_EQ(OffsetCheckpointFile::Serialize(*parsed), bytes) << file;
    }
  }
}

TEST(IndexCompatTest, PartitionMetadataAndDirNamesParse) {
  DARUMA_REQUIRE_FIXTURES();
  for (const Scenario& s : kScenarios) {
    SCOPED_TRACE(s.name);
    const std::string path = PartitionDir(s) + "/" + kPartitionMetadataFileName;
    auto meta = PartitionMetadataFile(path).Read();
    ASSERT_TRUE(meta.ok()) << meta.status().ToString();
    EXPECT_EQ(meta->version, 0);
    EXPECT_EQ(meta->topic_id.ToString(), s.topic_id);
    EXPECT_EQ(PartitionMetadataFile::Serialize(meta->topic_id), ReadFileToString(path));
    auto dir = ParseTopicPartitionDirName(s.topic + "-0");
    ASSERT_TRUE(dir.ok());
    EXPECT_EQ(dir->tp, (TopicPartition{s.topic, 0}));
  }
}

TEST(IndexCompatTest, CleanShutdownMarkers) {
  DARUMA_REQUIRE_FIXTURES();
  for (const Scenario& s : kScenarios) {
    SCOPED_TRACE(s.name);
    CleanShutdownFile marker(LogDir(s));
    EXPECT_EQ(marker.Exists(), s.clean);
    if (!s.clean) continue;
    EXPECT_EQ(*marker.ReadBrokerEpoch(), std::optional<int64_t>(7));
    EXPECT_EQ(CleanShutdownFile::Serialize(7), ReadFileToString(marker.path()));
  }
}

}  // namespace
}  // namespace daruma
