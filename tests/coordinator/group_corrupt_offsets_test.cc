// A damaged `__consumer_offsets` on real logs (LogManager + LogGroupStorage,
// as the broker runs them): what the coordinator's load does with a batch
// whose CRC is bad in the middle of a partition and with records that pass
// the CRC but do not decode. One case each:
//  * after a clean shutdown nothing re-reads the batches below the recovery
//    point, so the load meets the bad batch: it is skipped and reported
//    (GroupLoadReport::skipped_reasons names partition and offset; the broker
//    logs each as group_record_skipped), and every later batch of that
//    partition and every other partition still load;
//  * after an unclean shutdown recovery finds the bad CRC first and cuts the
//    partition there, moving the batch and everything after it to
//    daruma-quarantine (Kafka truncates the same bytes away); the load then
//    has nothing to skip, and the other partitions are untouched;
//  * a record with a garbage key, an offset key with a garbage value, a
//    record without a key, and a batch whose CRC is right but whose records
//    do not parse are each skipped and reported; the records around them load.
// (Kafka's own loader, for comparison, does not check batch CRCs at load and
// fails the whole partition's load on a record it cannot deserialize.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "coordinator/group_test_support.h"
#include "record/record_batch.h"
#include "record/record_batch_builder.h"

namespace daruma::testing {
namespace {

constexpr char kCorruptGroup[] = "orders-app";  // partition 1 of 3
constexpr char kOther[] = "reports";            // partition 0 of 3

class GroupCorruptOffsetsTest : public ::testing::Test {
 protected:
  GroupCorruptOffsetsTest() { EXPECT_NE(h_.PartitionFor(kCorruptGroup), h_.PartitionFor(kOther)); }

  GroupCoordinator& coordinator() { return h_.coordinator(); }

  // A simple commit (no generation): one batch of one record per partition.
  void Commit(const std::string& group,
              const std::vector<std::tuple<std::string, int32_t, int64_t>>& offsets) {
    OffsetCommitArgs c;
    c.group_id = group;
    for (const auto& [topic, partition, offset] : offsets) {
      c.partitions.push_back({topic, partition, offset, -1, "m" + std::to_string(offset), -1});
    }
    for (ErrorCode e : coordinator().CommitOffsets(c)) ASSERT_EQ(e, ErrorCode::kNone);
  }

  // offset per "topic-partition" of `group` (absent: not committed).
  std::map<std::string, int64_t> Offsets(const std::string& group) {
    OffsetFetchResult fetched = coordinator().FetchOffsets(group, std::nullopt);
    EXPECT_EQ(fetched.error, ErrorCode::kNone);
    std::map<std::string, int64_t> out;
    for (const auto& p : fetched.partitions) {
      out[p.topic + "-" + std::to_string(p.partition)] = p.offset;
    }
    return out;
  }

  // Three commits of kCorruptGroup (batches at offsets 0-1, 2-3 and 4) and one of
  // kOther in its own partition.
  void ThreeBatches() {
    Commit(kCorruptGroup, {{"clicks", 0, 10}, {"clicks", 1, 11}});
    Commit(kCorruptGroup, {{"clicks", 0, 20}, {"clicks", 2, 22}});
    Commit(kCorruptGroup, {{"clicks", 1, 31}});
    Commit(kOther, {{"daily", 0, 5}});
  }

  // Flips the last byte of the `index`-th batch of the partition's first
  // segment (inside its records, so only the CRC notices).
  void DamageBatch(int32_t partition, int index) {
    const std::string path = h_.PartitionDir(partition) + "/00000000000000000000.log";
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good()) << path;
    int64_t pos = 0;
    for (int i = 0;; ++i) {
      uint8_t header[12];
      f.seekg(pos);
      ASSERT_TRUE(f.read(reinterpret_cast<char*>(header), 12)) << "batch " << i << " not found";
      const int64_t end = pos + 12 + int64_t(LoadBe32(header + 8));
      if (i == index) {
        char last;
        f.seekg(end - 1);
        f.read(&last, 1);
        last = char(last ^ 0x5a);
        f.seekp(end - 1);
        f.write(&last, 1);
        return;
      }
      pos = end;
    }
  }

  // Appends `batch` to the group's partition as the coordinator would (an
  // offset assigned by the log).
  void AppendRaw(Bytes batch) {
    Log* log = h_.log(h_.PartitionFor(kCorruptGroup));
    ASSERT_NE(log, nullptr);
    Result<LogAppendInfo> info = log->AppendAsLeader(batch, 0);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    log->UpdateHighWatermark(log->log_end_offset());
  }

  OffsetsLogHarness h_;
};

TEST_F(GroupCorruptOffsetsTest, ABadCrcInTheMiddleIsSkippedAtLoadAndTheRestLoads) {
  ThreeBatches();
  const int32_t p = h_.PartitionFor(kCorruptGroup);
  h_.RestartAfter(/*clean=*/true, [&] { DamageBatch(p, 1); });
  const GroupLoadReport& report = h_.load_report();
  EXPECT_EQ(report.skipped, 1);
  ASSERT_EQ(report.skipped_reasons.size(), 1u);
  EXPECT_NE(report.skipped_reasons[0].find("__consumer_offsets-" + std::to_string(p) + " offset 2"),
            std::string::npos)
      << report.skipped_reasons[0];
  EXPECT_NE(report.skipped_reasons[0].find("CRC"), std::string::npos);
  EXPECT_TRUE(report.failed_partitions.empty());
  // The damaged commit (clicks-0 at 20, clicks-2 at 22) is not applied; the
  // ones before and after it are.
  EXPECT_EQ(Offsets(kCorruptGroup),
            (std::map<std::string, int64_t>{{"clicks-0", 10}, {"clicks-1", 31}}));
  EXPECT_EQ(Offsets(kOther), (std::map<std::string, int64_t>{{"daily-0", 5}}));
  // The group is served: a new commit is stored and loads after the bad batch.
  Commit(kCorruptGroup, {{"clicks", 2, 40}});
  h_.Restart();
  EXPECT_EQ(Offsets(kCorruptGroup)["clicks-2"], 40);
}

TEST_F(GroupCorruptOffsetsTest, AnUncleanStartQuarantinesTheBadBatchAndWhatFollows) {
  ThreeBatches();
  const int32_t p = h_.PartitionFor(kCorruptGroup);
  h_.RestartAfter(/*clean=*/false, [&] { DamageBatch(p, 1); });
  EXPECT_EQ(h_.load_report().skipped, 0);
  EXPECT_EQ(Offsets(kCorruptGroup),
            (std::map<std::string, int64_t>{{"clicks-0", 10}, {"clicks-1", 11}}));
  EXPECT_EQ(Offsets(kOther), (std::map<std::string, int64_t>{{"daily-0", 5}}));
  bool quarantined = false;
  for (const PartitionRecoveryReport& r : h_.manager().report().partitions) {
    if (r.topic != kOffsetsTopic || r.partition != p) continue;
    ASSERT_EQ(r.quarantined.size(), 1u);
    EXPECT_EQ(r.quarantined[0].first_offset.value_or(-1), 2);
    EXPECT_FALSE(r.quarantined[0].quarantine_path.empty());
    EXPECT_TRUE(std::filesystem::exists(r.quarantined[0].quarantine_path));
    EXPECT_EQ(r.log_end_offset, 2);
    quarantined = true;
  }
  EXPECT_TRUE(quarantined);
}

TEST_F(GroupCorruptOffsetsTest, RecordsThatPassTheCrcButDoNotDecodeAreSkippedAndReported) {
  Commit(kCorruptGroup, {{"clicks", 0, 10}});  // offset 0
  Commit(kOther, {{"daily", 0, 5}});
  // Offsets 1-3: a garbage key, a valid offset key with a garbage value, no key.
  std::vector<RecordInput> bad(3);
  bad[0].key = std::string("\x00\x01\xff\xfe", 4);
  bad[0].value = "junk";
  const Bytes key = EncodeOffsetCommitKey({kCorruptGroup, "clicks", 5});
  bad[1].key = std::string(key.begin(), key.end());
  bad[1].value = std::string("\x00\x03\x01", 3);
  bad[2].value = "no key";
  Result<Bytes> records = BuildRecordBatch({}, bad);
  ASSERT_TRUE(records.ok());
  AppendRaw(*records);
  // Offset 4: a batch whose records do not parse (the first record's length
  // points past the batch), with a CRC computed over those bytes.
  RecordInput one;
  one.key = std::string(key.begin(), key.end());
  one.value = "v";
  Result<Bytes> undecodable = BuildRecordBatch({}, {one});
  ASSERT_TRUE(undecodable.ok());
  (*undecodable)[batch_layout::kRecords] = 0x7e;  // zigzag varint 63
  RewriteBatchCrc(*undecodable);
  AppendRaw(*undecodable);
  Commit(kCorruptGroup, {{"clicks", 1, 11}});  // offset 5, after the damage

  // Unclean first: recovery then scans the damage (nothing is below a
  // checkpointed recovery point yet); then a clean restart.
  for (bool clean : {false, true}) {
    SCOPED_TRACE(clean ? "clean restart" : "unclean restart");
    if (clean) {
      h_.Restart();
    } else {
      h_.Crash();
    }
    const GroupLoadReport& report = h_.load_report();
    EXPECT_EQ(report.skipped, 4);
    const std::string where =
        "__consumer_offsets-" + std::to_string(h_.PartitionFor(kCorruptGroup));
    ASSERT_EQ(report.skipped_reasons.size(), 4u);
    for (int i = 0; i < 4; ++i) {
      EXPECT_NE(report.skipped_reasons[size_t(i)].find(where + " offset " + std::to_string(i + 1)),
                std::string::npos)
          << report.skipped_reasons[size_t(i)];
    }
    EXPECT_NE(report.skipped_reasons[2].find("without a key"), std::string::npos);
    EXPECT_TRUE(report.failed_partitions.empty());
    EXPECT_EQ(Offsets(kCorruptGroup),
              (std::map<std::string, int64_t>{{"clicks-0", 10}, {"clicks-1", 11}}));
    EXPECT_EQ(Offsets(kOther), (std::map<std::string, int64_t>{{"daily-0", 5}}));
  }
}

}  // namespace
}  // namespace daruma::testing
