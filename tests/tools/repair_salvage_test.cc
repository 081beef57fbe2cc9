// `daruma repair --salvage` (issue 22, rule 6) end to end on generated log
// dirs (tools/generated_log_dir.h: t-0, 3 segments of 10 batches of 3
// records, idempotent producer 7, leader epoch = segment number): only the
// damaged bytes go to the quarantine, every valid batch after them stays
// with its offsets, `check` finds the result clean, a second run has nothing
// to do, and without --salvage repair still truncates.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "log/clean_shutdown_file.h"
#include "record/control_record.h"
#include "recovery/log_loader.h"
#include "recovery/quarantine.h"
#include "support/test_support.h"
#include "tools/generated_log_dir.h"
#include "tools/repair_command.h"
#include "tools/tool_run.h"

namespace daruma::tools {
namespace {

using namespace testlog;  // NOLINT: test helpers
using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;

class RepairSalvageTest : public ::testing::Test {
 protected:
  void SetUp() override { WriteLogDir(dir_); }

  ToolRun Repair(bool salvage, bool dry_run = false, const std::string& dir = "") {
    RepairCommandOptions o;
    o.log_dirs = {dir.empty() ? dir_ : dir};
    o.max_corrupt_bytes = -1;
    o.dry_run = dry_run;
    o.salvage = salvage;
    o.report_file = tmp_.Join("repair.json");
    return RunRepairQuietly(o);
  }

  int CheckRc(const std::string& dir = "") {
    CheckCommandOptions o;
    o.log_dirs = {dir.empty() ? dir_ : dir};
    const ToolRun run = RunCheckQuietly(o);
    EXPECT_EQ(run.rc, 0) << run.out << run.err;
    return run.rc;
  }

  std::string LogFile(int segment) const { return SegmentFile(dir_, SegmentBase(segment), ".log"); }

  // The base offsets of every batch left in the partition, in order.
  std::vector<int64_t> Offsets(const std::string& dir = "") {
    std::vector<int64_t> out;
    for (int s = 0; s < kSegments; ++s) {
      const std::string path = SegmentFile(dir.empty() ? dir_ : dir, SegmentBase(s), ".log");
      if (!std::filesystem::exists(path)) continue;
      for (const BatchPos& b : Batches(path)) out.push_back(b.base_offset);
    }
    return out;
  }

  // Every batch's base offset but those in `dropped`.
  static std::vector<int64_t> AllBut(const std::vector<int64_t>& dropped, int64_t leo = kLeo) {
    std::vector<int64_t> out;
    for (int64_t o = 0; o < leo; o += kRecordsPerBatch) {
      if (std::find(dropped.begin(), dropped.end(), o) == dropped.end()) out.push_back(o);
    }
    return out;
  }

  std::vector<nlohmann::json> SalvageManifest() {
    std::vector<nlohmann::json> out;
    for (const auto& line : ReadQuarantineManifest(JoinPath(dir_, "t-0"))) {
      if (line["file"] != "leader-epoch-checkpoint") out.push_back(line);
    }
    return out;
  }

  TempDir tmp_;
  std::string dir_ = tmp_.Join("data");
};

TEST_F(RepairSalvageTest, FlippedCrcByteInTheMiddleKeepsEverythingElse) {
  const BatchPos damaged = Batches(LogFile(1))[4];  // offsets 42..44
  const std::string original = ReadFileToString(LogFile(1));
  FlipByte(LogFile(1), damaged.position + 17);  // the CRC field
  const ToolRun run = Repair(true);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(Offsets(), AllBut({42}));
  EXPECT_NE(run.out.find("bytes [" + std::to_string(damaged.position) + ", " +
                         std::to_string(damaged.position + damaged.size) + ")"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("bad_crc"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("offsets 42..44 become a gap"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("t-0: salvaged: dropped " + std::to_string(damaged.size) +
                         " bytes, kept 15 batches"),
            std::string::npos)
      << run.out;

  // Exactly the damaged batch is in the quarantine, byte for byte.
  const auto manifest = SalvageManifest();
  ASSERT_EQ(manifest.size(), 1u);
  EXPECT_EQ(manifest[0]["file"], BaseName(LogFile(1)));
  EXPECT_EQ(manifest[0]["fromPosition"], damaged.position);
  EXPECT_EQ(manifest[0]["bytes"], damaged.size);
  EXPECT_EQ(manifest[0]["firstOffset"], 42);
  EXPECT_EQ(manifest[0]["lastOffset"], 44);
  EXPECT_EQ(manifest[0]["kind"], "bad_crc");
  std::string expected = original.substr(size_t(damaged.position), size_t(damaged.size));
  expected[17] ^= 0x20;
  EXPECT_EQ(ReadFileToString(manifest[0]["quarantinePath"]), expected);

  // The report: the range, what is kept after it, the gap; the load's report.
  const nlohmann::json& s = run.json["salvage"];
  EXPECT_TRUE(s["applied"].get<bool>());
  ASSERT_EQ(s["partitions"].size(), 1u);
  const nlohmann::json& p = s["partitions"][0];
  EXPECT_EQ(p["topic"], "t");
  EXPECT_EQ(p["droppedBytes"], damaged.size);
  EXPECT_EQ(p["keptBatchesAfterDamage"], 15);
  EXPECT_EQ(p["logEndOffset"], kLeo);
  EXPECT_EQ(p["offsetGaps"], nlohmann::json::parse("[[42, 44]]"));
  EXPECT_EQ(p["ranges"][0]["kind"], "bad_crc");
  EXPECT_EQ(run.json["applied"]["partitions"][0]["logEndOffset"], kLeo);

  EXPECT_EQ(CheckRc(), 0);
  const ToolRun again = Repair(true);
  EXPECT_EQ(again.rc, 0) << again.err;
  EXPECT_EQ(again.out, "Nothing to repair.\n");
}

TEST_F(RepairSalvageTest, DryRunShowsTheSalvageAndChangesNothing) {
  FlipByte(LogFile(1), Batches(LogFile(1))[4].position + 17);
  const TreeState before = SnapshotTree(dir_);
  const ToolRun run = Repair(true, true);
  EXPECT_EQ(SnapshotTree(dir_), before);
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.out.find("LEO 90 after repair"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("salvage: drops"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("offsets 42..44 become a gap"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("Dry run: nothing was changed."), std::string::npos);
  EXPECT_FALSE(run.json["salvage"]["applied"].get<bool>());
  EXPECT_EQ(run.json["salvage"]["partitions"][0]["keptBatchesAfterDamage"], 15);
}

TEST_F(RepairSalvageTest, WithoutSalvageRepairStillTruncates) {
  FlipByte(LogFile(1), Batches(LogFile(1))[4].position + 17);
  const ToolRun run = Repair(false);
  ASSERT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(Offsets(), AllBut({}, 42));
  EXPECT_FALSE(run.json.contains("salvage"));
}

TEST_F(RepairSalvageTest, FlippedBaseOffsetDropsOnlyThatBatch) {
  // In the last segment, so that 72 + 2^21 is inside the segment's range.
  const BatchPos b = Batches(LogFile(2))[4];
  FlipByte(LogFile(2), b.position + 5);  // baseOffset 72 -> 72 + 2^21
  const ToolRun run = Repair(true);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(Offsets(), AllBut({72}));
  const auto manifest = SalvageManifest();
  ASSERT_EQ(manifest.size(), 1u);
  EXPECT_EQ(manifest[0]["fromPosition"], b.position);
  EXPECT_EQ(manifest[0]["bytes"], b.size);
  EXPECT_EQ(manifest[0]["kind"], "non_monotonic_offset");
  EXPECT_EQ(CheckRc(), 0);
}

TEST_F(RepairSalvageTest, GarbageAndZeroedRunsInANonLastSegmentKeepLaterSegments) {
  const std::vector<BatchPos> b0 = Batches(LogFile(0));
  const std::vector<BatchPos> b1 = Batches(LogFile(1));
  {
    std::string data = ReadFileToString(LogFile(0));
    for (int64_t i = b0[2].position + 20; i < b0[4].position + 30; ++i) {
      data[size_t(i)] = char(0x5a + i * 13);
    }
    testing::WriteStringToFile(LogFile(0), data);
    data = ReadFileToString(LogFile(1));
    std::fill(data.begin() + b1[6].position, data.begin() + b1[8].position, '\0');
    testing::WriteStringToFile(LogFile(1), data);
  }
  const ToolRun run = Repair(true);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(Offsets(), AllBut({6, 9, 12, 48, 51}));
  const auto manifest = SalvageManifest();
  ASSERT_EQ(manifest.size(), 2u);
  EXPECT_EQ(manifest[0]["fromPosition"], b0[2].position);
  EXPECT_EQ(manifest[0]["bytes"], b0[5].position - b0[2].position);
  EXPECT_EQ(manifest[0]["firstOffset"], 6);
  EXPECT_EQ(manifest[0]["lastOffset"], 14);
  EXPECT_EQ(manifest[1]["file"], BaseName(LogFile(1)));
  EXPECT_EQ(manifest[1]["fromPosition"], b1[6].position);
  EXPECT_EQ(manifest[1]["bytes"], b1[8].position - b1[6].position);
  EXPECT_EQ(manifest[1]["kind"], "zeroed_range");
  EXPECT_EQ(run.json["salvage"]["partitions"][0]["offsetGaps"],
            nlohmann::json::parse("[[6, 14], [48, 53]]"));
  EXPECT_EQ(CheckRc(), 0);
}

TEST_F(RepairSalvageTest, DamageAtTheVeryEndIsExactlyTruncation) {
  const std::string truncated_dir = tmp_.Join("truncated");
  const BatchPos last = Batches(LogFile(2)).back();
  std::filesystem::resize_file(LogFile(2), uint64_t(last.position + last.size / 2));
  FlipByte(LogFile(2), last.position - 30);  // and the CRC of the batch before it
  std::filesystem::copy(dir_, truncated_dir, std::filesystem::copy_options::recursive);
  const ToolRun salvaged = Repair(true);
  ASSERT_EQ(salvaged.rc, 0) << salvaged.out << salvaged.err;
  const ToolRun truncated = Repair(false, false, truncated_dir);
  ASSERT_EQ(truncated.rc, 0) << truncated.err;
  EXPECT_EQ(Offsets(), AllBut({}, 84));
  for (int s = 0; s < kSegments; ++s) {
    EXPECT_EQ(ReadFileToString(LogFile(s)),
              ReadFileToString(SegmentFile(truncated_dir, SegmentBase(s), ".log")));
  }
  EXPECT_EQ(salvaged.json["applied"]["partitions"][0]["logEndOffset"], 84);
  EXPECT_EQ(salvaged.json["salvage"]["partitions"][0]["offsetGaps"], nlohmann::json::array());
  EXPECT_EQ(salvaged.json["salvage"]["partitions"][0]["keptBatchesAfterDamage"], 0);
  EXPECT_NE(salvaged.out.find("the log ends at offset 84 (as truncation)"), std::string::npos)
      << salvaged.out;
  EXPECT_EQ(CheckRc(), 0);
}

TEST_F(RepairSalvageTest, LimitCountsOnlyTheBytesSalvageDrops) {
  const BatchPos b = Batches(LogFile(1))[4];
  FlipByte(LogFile(1), b.position + 17);
  RepairCommandOptions o;
  o.log_dirs = {dir_};
  o.salvage = true;
  o.max_corrupt_bytes = b.size - 1;
  const TreeState before = SnapshotTree(dir_);
  ToolRun run = RunRepairQuietly(o);
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.err.find("would drop " + std::to_string(b.size) + " bytes"), std::string::npos)
      << run.err;
  EXPECT_EQ(SnapshotTree(dir_), before);
  o.max_corrupt_bytes = b.size;  // truncation would drop far more
  run = RunRepairQuietly(o);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(Offsets(), AllBut({42}));
}

// A partition whose damage is followed by idempotent and transactional
// batches and their markers: all kept, producer state and the aborted
// transaction rebuilt from them.
class RepairSalvageTxnTest : public RepairSalvageTest {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_);
    // Now, not kNow: producers older than producer.id.expiration.ms (7 days)
    // would not count as active after the load.
    ManualClock clock(now_);
    auto log = daruma::Log::CreateEmpty(FileSystem::Default(), JoinPath(dir_, "t-0"),
                                        TopicPartition{"t", 0}, TestConfig(), &clock);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    int32_t seq7 = 0;
    auto data = [&](int64_t pid, bool txn) {
      BatchBuilderOptions o;
      o.producer_id = pid;
      o.producer_epoch = 0;
      o.base_sequence = pid == 7 ? seq7 : 0;
      o.is_transactional = txn;
      if (pid == 7) seq7 += 3;
      std::vector<RecordInput> records;
      for (int r = 0; r < 3; ++r) records.push_back({now_, "k", std::string(40, 'v'), {}});
      auto bytes = BuildRecordBatch(o, records);
      ASSERT_TRUE(bytes.ok());
      auto info = (*log)->AppendAsLeader(*bytes, 0);
      ASSERT_TRUE(info.ok()) << info.status().ToString();
    };
    auto marker = [&](int64_t pid, ControlRecordType type) {
      const Bytes bytes = BuildEndTxnMarkerBatch(0, 0, pid, 0, type, 0, now_);
      auto info = (*log)->AppendAsLeader(bytes, 0, AppendOrigin::kCoordinator);
      ASSERT_TRUE(info.ok()) << info.status().ToString();
    };
    data(7, false);                         // 0..2
    data(7, false);                         // 3..5
    data(7, false);                         // 6..8, damaged below
    data(9, true);                          // 9..11
    marker(9, ControlRecordType::kCommit);  // 12
    data(11, true);                         // 13..15
    marker(11, ControlRecordType::kAbort);  // 16
    data(7, false);                         // 17..19
    (*log)->UpdateHighWatermark(20);
    ASSERT_TRUE((*log)->FlushAll().ok());
    ASSERT_TRUE((*log)->Close().ok());
    WriteCheckpoints(dir_, 20, 20);
    ASSERT_TRUE(CleanShutdownFile(dir_).Write(7).ok());
  }

  // Loads t-0 as a broker would and appends producer 7's batch with
  // `base_sequence`.
  Status AppendSequence7(int32_t base_sequence) {
    LoadLogParams params;
    params.fs = FileSystem::Default();
    params.log_dir = dir_;
    params.partition_dir = JoinPath(dir_, "t-0");
    params.tp = TopicPartition{"t", 0};
    params.config = TestConfig();
    params.clock = Clock::System();
    params.had_clean_shutdown = true;
    params.recovery_point_checkpoint = 20;
    auto log = LoadLog(params, nullptr);
    if (!log.ok()) return log.status();
    BatchBuilderOptions o;
    o.producer_id = 7;
    o.producer_epoch = 0;
    o.base_sequence = base_sequence;
    auto bytes = BuildRecordBatch(o, {{now_, "k", "v", {}}});
    if (!bytes.ok()) return bytes.status();
    auto info = (*log)->AppendAsLeader(*bytes, 0);
    Status closed = (*log)->Close();
    return info.ok() ? closed : info.status();
  }

  const int64_t now_ = Clock::System()->NowMs();
};

TEST_F(RepairSalvageTxnTest, ProducerStateAndMarkersAreRebuiltFromTheKeptBatches) {
  const BatchPos damaged = Batches(LogFile(0))[2];
  FlipByte(LogFile(0), damaged.position + 40);
  const ToolRun run = Repair(true);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(Offsets(), (std::vector<int64_t>{0, 3, 9, 12, 13, 16, 17}));
  const nlohmann::json& p = run.json["applied"]["partitions"][0];
  EXPECT_EQ(p["logEndOffset"], 20);
  EXPECT_EQ(p["activeProducers"], 3);
  EXPECT_EQ(p["abortedTransactions"], nlohmann::json::parse("[[11, 13, 16, 17]]"));
  EXPECT_EQ(run.json["salvage"]["partitions"][0]["keptBatchesAfterDamage"], 5);
  EXPECT_EQ(run.json["salvage"]["partitions"][0]["offsetGaps"], nlohmann::json::parse("[[6, 8]]"));
  // check replays the kept batches and compares the rebuilt producer
  // snapshot, .txnindex and leader-epoch-checkpoint with them.
  EXPECT_EQ(CheckRc(), 0);
  // Producer 7's last kept batch holds sequences 9..11 (6..8 was dropped):
  // the rebuilt state takes 12 next and refuses a gap.
  EXPECT_FALSE(AppendSequence7(15).ok());
  EXPECT_TRUE(AppendSequence7(12).ok());
}

// A dropped COMMIT marker leaves its transaction open: the coordinator will
// not write it again, so repair says where read_committed consumers stop.
TEST_F(RepairSalvageTxnTest, ADroppedMarkerIsReportedAsAnOpenTransaction) {
  const BatchPos marker = Batches(LogFile(0))[4];  // COMMIT of producer 9, offset 12
  ASSERT_EQ(marker.base_offset, 12);
  FlipByte(LogFile(0), marker.position + 30);
  const ToolRun run = Repair(true);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(Offsets(), (std::vector<int64_t>{0, 3, 6, 9, 13, 16, 17}));
  EXPECT_NE(run.err.find("t-0: a transaction is open from offset 9, before the offset gap [12, "
                         "12]"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.json["salvage"]["partitions"][0]["warnings"].size(), 1u);
  EXPECT_EQ(run.json["applied"]["partitions"][0]["lastStableOffset"], 9);
}

}  // namespace
}  // namespace daruma::tools
