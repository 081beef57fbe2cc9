// ReadKraftTopicConfigs: Kafka's replay of a metadata log reduced to topic
// configs, over metadata dirs built here record by record (the real brokers'
// dirs are in kraft_topic_configs_compat_test.cc).
#include "recovery/kraft_topic_configs.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/clock.h"
#include "common/file_system.h"
#include "common/scheduler.h"
#include "log/log_file_names.h"
#include "record/control_record.h"
#include "record/record_batch_builder.h"
#include "recovery/kraft_metadata_file.h"
#include "recovery/log_manager.h"
#include "recovery/topic_config_file.h"
#include "support/test_support.h"

namespace daruma::testing {
namespace {

void PutUvarint(std::string* out, uint32_t v) {
  while (v >= 0x80) {
    out->push_back(char((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(char(v));
}

void PutCompact(std::string* out, const std::optional<std::string>& s) {
  if (!s) return PutUvarint(out, 0);
  PutUvarint(out, uint32_t(s->size() + 1));
  *out += *s;
}

std::string Header(uint32_t api, uint32_t frame = 1) {
  std::string out;
  PutUvarint(&out, frame);
  PutUvarint(&out, api);
  PutUvarint(&out, 0);  // version
  return out;
}

std::string TopicId(char c) {
  return std::string(16, c);
}

std::string TopicRecord(const std::string& name, char id) {
  std::string out = Header(2);
  PutCompact(&out, name);
  out += TopicId(id);
  out.push_back(0);  // no tagged fields
  return out;
}

std::string ConfigRecord(int8_t type, const std::string& resource, const std::string& name,
                         std::optional<std::string> value) {
  std::string out = Header(4);
  out.push_back(char(type));
  PutCompact(&out, resource);
  PutCompact(&out, name);
  PutCompact(&out, value);
  out.push_back(0);
  return out;
}

std::string ProducerIdsRecord(int64_t next) {
  std::string out = Header(15);
  Bytes fixed;
  ByteWriter w(&fixed);
  w.WriteInt32(1);   // broker id
  w.WriteInt64(42);  // broker epoch
  w.WriteInt64(next);
  out += std::string(AsStringView(fixed));
  out.push_back(0);
  return out;
}

std::string RemoveTopicRecord(char id) {
  std::string out = Header(9);
  out += TopicId(id);
  out.push_back(0);
  return out;
}

bool HasNote(const KraftTopicConfigs& image, const std::string& text) {
  for (const std::string& note : image.notes) {
    if (note.find(text) != std::string::npos) return true;
  }
  ADD_FAILURE() << "no note has \"" << text << "\"";
  return false;
}

std::string SnapshotName(int64_t end, int32_t epoch) {
  return fmt::format("{:020d}-{:010d}.checkpoint", end, epoch);
}

class KraftTopicConfigsTest : public ::testing::Test {
 protected:
  KraftTopicConfigsTest() : dir_(tmp_.Join("__cluster_metadata-0")) {
    std::filesystem::create_directories(dir_);
  }
  // `<end>-<epoch>.checkpoint` holding `values` between its SnapshotHeader
  // and SnapshotFooter, as Kafka writes one.
  void WriteSnapshot(int64_t end, int32_t epoch, const std::vector<std::string>& values) {
    MetadataFile snapshot;
    snapshot.Control(ControlRecordType::kSnapshotHeader)
        .Batch(values)
        .Control(ControlRecordType::kSnapshotFooter);
    snapshot.WriteTo(JoinPath(dir_, SnapshotName(end, epoch)));
  }
  KraftTopicConfigs Read() {
    Result<KraftTopicConfigs> r = ReadKraftTopicConfigs(FileSystem::Default(), dir_);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : KraftTopicConfigs{};
  }
  TempDir tmp_;
  std::string dir_;
};

TEST_F(KraftTopicConfigsTest, ALogReplayedFromZeroGivesTheLiveTopicsConfigs) {
  MetadataFile log(0);
  log.Batch(
         {TopicRecord("_schemas", 'a'), ConfigRecord(2, "_schemas", "cleanup.policy", "compact")})
      .Batch({TopicRecord("events", 'b'), ConfigRecord(2, "events", "retention.ms", "-1"),
              ConfigRecord(2, "events", "segment.bytes", "1048576")})
      // A config deleted, a broker and a cluster default config, a topic removed.
      .Batch({ConfigRecord(2, "events", "segment.bytes", std::nullopt),
              ConfigRecord(4, "", "log.retention.ms", "1000"),
              ConfigRecord(4, "", "log.roll.hours", "2"),
              ConfigRecord(4, "1", "log.cleaner.threads", "2"), TopicRecord("gone", 'c'),
              ConfigRecord(2, "gone", "retention.ms", "5"), RemoveTopicRecord('c')})
      // A topic without configs of its own; producer id blocks.
      .Batch({TopicRecord("plain", 'd'), ProducerIdsRecord(2000), ProducerIdsRecord(3000)});
  log.WriteTo(LogFileName(dir_, 0));
  const KraftTopicConfigs image = Read();
  EXPECT_TRUE(image.complete);
  EXPECT_EQ(image.snapshot, "");
  EXPECT_EQ(image.end_offset, log.next());
  // The cluster defaults, as the topic configs they stand for, under each
  // topic's own; log.roll.hours is no dynamic config for Kafka (only the
  // first synonym is), so it never took effect and is not taken.
  EXPECT_EQ(image.topics,
            (std::map<std::string, TopicConfigOverrides>{
                {"_schemas", {{"cleanup.policy", "compact"}, {"retention.ms", "1000"}}},
                {"events", {{"retention.ms", "-1"}}},
                {"plain", {{"retention.ms", "1000"}}}}));
  EXPECT_EQ(image.cluster_defaults,
            (std::vector<std::string>{"cluster default log.retention.ms=1000 (as retention.ms)"}));
  EXPECT_EQ(image.broker_configs, (std::vector<std::string>{"cluster default log.roll.hours=2",
                                                            "broker 1 log.cleaner.threads=2"}));
  EXPECT_EQ(image.next_producer_id, 3000);
  EXPECT_EQ(image.skipped_records, 0);
  auto id = [](char c) {
    std::array<uint8_t, 16> bytes;
    bytes.fill(uint8_t(c));
    return Uuid(bytes);
  };
  EXPECT_EQ(image.topic_ids, (std::map<std::string, Uuid>{
                                 {"_schemas", id('a')}, {"events", id('b')}, {"plain", id('d')}}));
}

// The writing broker's own dynamic configs apply over the cluster defaults
// (Kafka's DynamicBrokerConfig), another broker's do not.
TEST_F(KraftTopicConfigsTest, TheWritingBrokersConfigsGoOverTheClusterDefaults) {
  MetadataFile log(0);
  log.Batch({TopicRecord("t", 'a'), TopicRecord("own", 'b'),
             ConfigRecord(2, "own", "retention.ms", "5"),
             ConfigRecord(4, "", "log.retention.ms", "1000"),
             ConfigRecord(4, "", "log.cleanup.policy", "compact"),
             ConfigRecord(4, "1", "log.retention.ms", "-1"),
             ConfigRecord(4, "2", "log.retention.bytes", "10")});
  log.WriteTo(LogFileName(dir_, 0));
  Result<KraftTopicConfigs> image = ReadKraftTopicConfigs(FileSystem::Default(), dir_, 1);
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(image->topics, (std::map<std::string, TopicConfigOverrides>{
                               {"t", {{"cleanup.policy", "compact"}, {"retention.ms", "-1"}}},
                               {"own", {{"cleanup.policy", "compact"}, {"retention.ms", "5"}}}}));
  EXPECT_EQ(image->broker_configs, (std::vector<std::string>{"broker 2 log.retention.bytes=10"}));
}

TEST_F(KraftTopicConfigsTest, TheNewestWholeSnapshotIsTheStartAndTheLogGoesOnFromItsEnd) {
  // The log before the snapshot is gone (Kafka deletes what a snapshot
  // replaced); records at and after its end offset still apply.
  WriteSnapshot(10, 1,
                {TopicRecord("orders", 'a'), ConfigRecord(2, "orders", "retention.ms", "100")});
  MetadataFile log(8);  // a segment straddling the snapshot's end
  // Offsets 8 and 9 lie below the snapshot's end: its state has them
  // already, and they are not replayed again.
  log.Batch({ConfigRecord(2, "orders", "retention.ms", "7"),
             ConfigRecord(2, "orders", "cleanup.policy", "compact")})
      .Batch({ConfigRecord(2, "orders", "retention.ms", "200")});  // offset 10
  log.WriteTo(LogFileName(dir_, 8));
  // A newer snapshot cut short: passed over, with a note.
  MetadataFile damaged(0);
  damaged.Control(ControlRecordType::kSnapshotHeader).Batch({TopicRecord("orders", 'a')});
  damaged.bytes().resize(damaged.bytes().size() - 3);
  // And one emptied, as a failed copy leaves it.
  MetadataFile().WriteTo(JoinPath(dir_, SnapshotName(12, 1)));
  damaged.WriteTo(JoinPath(dir_, SnapshotName(11, 1)));

  const KraftTopicConfigs image = Read();
  EXPECT_TRUE(image.complete);
  EXPECT_EQ(image.snapshot, JoinPath(dir_, SnapshotName(10, 1)));
  EXPECT_EQ(image.end_offset, 11);
  EXPECT_EQ(image.topics,
            (std::map<std::string, TopicConfigOverrides>{{"orders", {{"retention.ms", "200"}}}}));
  EXPECT_TRUE(HasNote(image, "snapshot " + JoinPath(dir_, SnapshotName(11, 1)) + " not used"));
  EXPECT_TRUE(HasNote(image, "not a whole snapshot"));
}

TEST_F(KraftTopicConfigsTest, ACrashedTailEndsTheReplayAndOddRecordsAreSkipped) {
  MetadataFile log(0);
  log.Batch({TopicRecord("t", 'a'), ConfigRecord(2, "t", "retention.ms", "1"),
             Header(4, /*frame=*/7) + "junk",
             Header(2) + "\x05"
                         "ab"})
      .Batch({ConfigRecord(2, "t", "retention.ms", "2")});
  Bytes& bytes = log.bytes();
  bytes.back() ^= 0x40;  // the last batch fails its CRC: a torn write
  log.WriteTo(LogFileName(dir_, 0));
  const KraftTopicConfigs image = Read();
  EXPECT_TRUE(image.complete);
  EXPECT_EQ(image.topics,
            (std::map<std::string, TopicConfigOverrides>{{"t", {{"retention.ms", "1"}}}}));
  EXPECT_EQ(image.skipped_records, 2);
  ASSERT_EQ(image.notes.size(), 3u);
  EXPECT_TRUE(HasNote(image, "frame version 7"));
  EXPECT_TRUE(HasNote(image, "TopicRecord v0 does not parse"));
  EXPECT_TRUE(HasNote(image, "replay stopped at " + LogFileName(dir_, 0)));
}

// The metadata log is never compacted: offsets missing after the snapshot,
// or damage before the last segment, leave changes unseen, so nothing is
// imported; an empty dir has nothing to import.
TEST_F(KraftTopicConfigsTest, GapsAndDamageBeforeTheLastSegmentMakeTheImageIncomplete) {
  WriteSnapshot(10, 1, {TopicRecord("t", 'a')});
  MetadataFile log(12);  // offsets 10 and 11 missing
  log.Batch({ConfigRecord(2, "t", "retention.ms", "1")});
  log.WriteTo(LogFileName(dir_, 12));
  KraftTopicConfigs image = Read();
  EXPECT_FALSE(image.complete);
  EXPECT_TRUE(image.topics.empty());
  EXPECT_TRUE(HasNote(image, "offsets 10 to 11 are missing"));

  std::filesystem::remove(LogFileName(dir_, 12));
  MetadataFile first(10);
  first.Batch({ConfigRecord(2, "t", "retention.ms", "1")});
  first.bytes().back() ^= 1;  // damage in a segment that is not the last
  first.WriteTo(LogFileName(dir_, 10));
  MetadataFile second(11);
  second.Batch({ConfigRecord(2, "t", "retention.ms", "2")});
  second.WriteTo(LogFileName(dir_, 11));
  image = Read();
  EXPECT_FALSE(image.complete);
  EXPECT_TRUE(HasNote(image, "the metadata cannot be replayed"));

  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  image = Read();
  EXPECT_FALSE(image.complete);
  EXPECT_TRUE(HasNote(image, "the metadata is missing"));
}

// A damaged batch with whole batches after it is not a torn end: the
// records after it are unknown, so the image is incomplete.
TEST_F(KraftTopicConfigsTest, DamageInsideTheLastSegmentIsNotACrashedTail) {
  MetadataFile log(0);
  log.Batch({TopicRecord("t", 'a')});
  const size_t first_end = log.bytes().size();
  log.Batch({ConfigRecord(2, "t", "retention.ms", "1")})
      .Batch({ConfigRecord(2, "t", "cleanup.policy", "compact")});
  log.bytes()[first_end + 70] ^= 1;  // inside the second batch's records
  log.WriteTo(LogFileName(dir_, 0));
  const KraftTopicConfigs image = Read();
  EXPECT_FALSE(image.complete);
  EXPECT_TRUE(image.topics.empty());
  EXPECT_TRUE(HasNote(image, "the metadata cannot be replayed"));
}

TEST_F(KraftTopicConfigsTest, ALogThatStartsAfterZeroWithoutASnapshotCannotBeReplayed) {
  MetadataFile log(500);
  log.Batch({ConfigRecord(2, "t", "retention.ms", "1")});
  log.WriteTo(LogFileName(dir_, 500));
  const KraftTopicConfigs image = Read();
  EXPECT_FALSE(image.complete);
  EXPECT_TRUE(image.topics.empty());
  ASSERT_EQ(image.notes.size(), 1u);
  EXPECT_NE(image.notes[0].find("offset 500"), std::string::npos) << image.notes[0];
}

// Batches below the snapshot's end are never read, as by Kafka: damage
// there does not stop the replay.
TEST_F(KraftTopicConfigsTest, DamageBelowTheSnapshotsEndDoesNotMatter) {
  WriteSnapshot(2, 1, {TopicRecord("t", 'a')});
  MetadataFile log(0);
  log.Batch({TopicRecord("t", 'a')});
  log.bytes().back() ^= 1;  // offset 0, below the snapshot's end: damaged
  log.Batch({ConfigRecord(2, "t", "retention.ms", "7")})    // offset 1, below it too
      .Batch({ConfigRecord(2, "t", "retention.ms", "9")});  // offset 2
  log.WriteTo(LogFileName(dir_, 0));
  const KraftTopicConfigs image = Read();
  EXPECT_TRUE(image.complete);
  EXPECT_EQ(image.topics,
            (std::map<std::string, TopicConfigOverrides>{{"t", {{"retention.ms", "9"}}}}));
}

// metadata.log.dir, when set, is the only place looked at: a stale copy in
// a log dir is not taken instead, and the import stays pending.
TEST_F(KraftTopicConfigsTest, AMissingMetadataLogDirIsAnErrorNotAFallback) {
  MetadataFile log(0);
  log.Batch({TopicRecord("t", 'a'), ConfigRecord(2, "t", "retention.ms", "5")});
  log.WriteTo(LogFileName(dir_, 0));
  LogManagerOptions options;
  options.import_kafka_topic_configs = true;
  options.kafka_metadata_log_dir = tmp_.Join("elsewhere");
  LogManager manager(options);
  ASSERT_TRUE(manager.Startup({tmp_.path()}, LogConfig{}, 1).ok());
  ASSERT_TRUE(manager.kafka_config_import().has_value());
  EXPECT_FALSE(manager.kafka_config_import()->complete);
  EXPECT_NE(manager.kafka_config_import()->error.find(tmp_.Join("elsewhere")), std::string::npos)
      << manager.kafka_config_import()->error;
  EXPECT_TRUE(manager.TopicOverridesOf("t").empty());
  ASSERT_TRUE(manager.Shutdown().ok());
}

// The store's side (TopicConfigStore through LogManager): an import that
// cannot be done whole is recorded as pending and tried again at the next
// start, even after the file was written for another reason; once done, the
// controller's next producer id stays known at every start.
TEST_F(KraftTopicConfigsTest, APendingImportIsTriedAgainAndTheProducerIdFloorIsKept) {
  MetadataFile log(500);  // no snapshot covers offsets below 500
  log.Batch({ConfigRecord(2, "t", "retention.ms", "5"), ProducerIdsRecord(4000)});
  log.WriteTo(LogFileName(dir_, 500));
  LogManagerOptions options;
  options.import_kafka_topic_configs = true;
  LogConfig defaults;
  auto start = [&] {
    auto manager = std::make_unique<LogManager>(options);
    EXPECT_TRUE(manager->Startup({tmp_.path()}, defaults, 1).ok());
    return manager;
  };
  auto manager = start();
  ASSERT_TRUE(manager->kafka_config_import().has_value());
  EXPECT_FALSE(manager->kafka_config_import()->complete);
  EXPECT_TRUE(manager->TopicOverridesOf("t").empty());
  // Written for another reason (an operator's change, the broker compacting
  // __consumer_offsets): the import stays pending.
  LogConfig other = defaults;
  other.retention_ms = 77;
  manager->SetTopicConfig("other", other, {{"retention.ms", "77"}});
  ASSERT_TRUE(manager->Shutdown().ok());

  // The operator puts the snapshot back.
  WriteSnapshot(500, 3,
                {TopicRecord("t", 'a'), TopicRecord("other", 'b'),
                 ConfigRecord(2, "other", "retention.ms", "1")});
  manager = start();
  ASSERT_TRUE(manager->kafka_config_import().has_value());
  EXPECT_TRUE(manager->kafka_config_import()->complete);
  EXPECT_EQ(manager->TopicOverridesOf("t"), (TopicConfigOverrides{{"retention.ms", "5"}}));
  EXPECT_EQ(manager->TopicOverridesOf("other"), (TopicConfigOverrides{{"retention.ms", "77"}}));
  EXPECT_EQ(manager->kafka_next_producer_id(), std::optional<int64_t>(4000));
  ASSERT_TRUE(manager->Shutdown().ok());

  manager = start();
  EXPECT_FALSE(manager->kafka_config_import().has_value());
  EXPECT_EQ(manager->kafka_next_producer_id(), std::optional<int64_t>(4000));
  EXPECT_EQ(manager->TopicOverridesOf("t"), (TopicConfigOverrides{{"retention.ms", "5"}}));
  ASSERT_TRUE(manager->Shutdown().ok());
}

// While the import waits, retention deletes nothing: the topics run as
// delete on the defaults, and what it deleted could not come back once the
// configs are imported. A pending import with no metadata left is given up.
TEST_F(KraftTopicConfigsTest, RetentionHoldsWhileAnImportIsPending) {
  MetadataFile log(500);  // incomplete: no snapshot covers offsets below 500
  log.Batch({ConfigRecord(2, "t", "cleanup.policy", "compact")});
  log.WriteTo(LogFileName(dir_, 500));
  ManualClock clock(kT0);
  LogManagerOptions options;
  options.import_kafka_topic_configs = true;
  options.clock = &clock;
  options.jobs.enabled = true;
  options.jobs.mode = Scheduler::Mode::kManual;
  options.jobs.initial_delay_ms = 1000;
  options.jobs.retention_check_interval_ms = 1000;
  LogConfig defaults;
  defaults.segment_bytes = 100;  // a segment per batch
  defaults.retention_ms = 3600000;
  auto manager = std::make_unique<LogManager>(options);
  ASSERT_TRUE(manager->Startup({tmp_.path()}, defaults, 1).ok());
  Result<Log*> t = manager->GetOrCreateLog({"t", 0}, Uuid::Random(), defaults);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  for (int i = 0; i < 3; ++i) {
    Result<Bytes> batch = BuildRecordBatch({}, {{kT0 - 10 * 3600000LL, "k", "v", {}}});
    ASSERT_TRUE(batch.ok());
    ASSERT_TRUE((*t)->AppendAsLeader(*batch, 0).ok());
  }
  (*t)->UpdateHighWatermark((*t)->log_end_offset());
  clock.Advance(5000);
  manager->RunDueJobsForTest();
  EXPECT_EQ((*t)->num_segments(), 3u) << "retention ran while the import was pending";
  ASSERT_TRUE(manager->Shutdown().ok());

  // The metadata is gone for good: the wait ends, and retention runs again.
  std::filesystem::remove_all(dir_);
  manager = std::make_unique<LogManager>(options);
  ASSERT_TRUE(manager->Startup({tmp_.path()}, defaults, 1).ok());
  ASSERT_TRUE(manager->kafka_config_import().has_value());
  EXPECT_NE(manager->kafka_config_import()->notes.at(0).find("given up"), std::string::npos);
  clock.Advance(5000);
  manager->RunDueJobsForTest();
  Log* again = manager->GetLog({"t", 0});
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->num_segments(), 1u);
  ASSERT_TRUE(manager->Shutdown().ok());
}

// A daruma-topic-configs.json that cannot be read may be Daruma's all the
// same: nothing is imported over it.
TEST_F(KraftTopicConfigsTest, NothingIsImportedOverAnUnreadableConfigFile) {
  MetadataFile log(0);
  log.Batch({TopicRecord("t", 'a'), ConfigRecord(2, "t", "retention.ms", "5")});
  log.WriteTo(LogFileName(dir_, 0));
  WriteStringToFile(tmp_.Join(kTopicConfigsFileName), "{not json");
  LogManagerOptions options;
  options.import_kafka_topic_configs = true;
  LogManager manager(options);
  ASSERT_TRUE(manager.Startup({tmp_.path()}, LogConfig{}, 1).ok());
  EXPECT_FALSE(manager.kafka_config_import().has_value());
  EXPECT_TRUE(manager.TopicOverridesOf("t").empty());
  EXPECT_EQ(ReadFileToString(tmp_.Join(kTopicConfigsFileName)), "{not json");
  ASSERT_TRUE(manager.Shutdown().ok());
}

}  // namespace
}  // namespace daruma::testing
