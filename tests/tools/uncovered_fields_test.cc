// `daruma check` and `daruma repair` on bit flips in the batch header fields
// the batch CRC does not cover (baseOffset, partitionLeaderEpoch): recovery's
// scan cuts the log at the earliest suspect batch (issue 22 rule 1), and
// check, which plans with the same loader, names that batch (file, byte
// position) and the order it breaks; repair cuts the log there only within
// --max-corrupt-bytes, keeps the bytes in quarantine, and leaves a dir check
// finds clean.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "recovery/quarantine.h"
#include "support/test_support.h"
#include "tools/check_command.h"
#include "tools/generated_log_dir.h"
#include "tools/repair_command.h"
#include "tools/tool_run.h"

namespace daruma::tools {
namespace {

using namespace testlog;  // NOLINT: test helpers
using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;

class UncoveredFieldsTest : public ::testing::Test {
 protected:
  void SetUp() override { WriteLogDir(dir_); }

  ToolRun Check() {
    CheckCommandOptions o;
    o.log_dirs = {dir_};
    o.json_file = tmp_.Join("check.json");
    return RunCheckQuietly(o);
  }

  ToolRun Repair(int64_t limit) {
    RepairCommandOptions o;
    o.log_dirs = {dir_};
    o.max_corrupt_bytes = limit;
    return RunRepairQuietly(o);
  }

  const nlohmann::json& Partition(const ToolRun& run) {
    return run.json["logDirs"][0]["partitions"][0];
  }

  std::vector<nlohmann::json> Manifest() { return ReadQuarantineManifest(JoinPath(dir_, "t-0")); }

  // Check reports that recovery cuts `log` at `position` (naming `field`)
  // and what that drops; repair refuses below that and then cuts; check is
  // clean after, and the log ends at `leo`.
  void ExpectCutAndRepair(const std::string& log, int64_t position, const std::string& field,
                          int64_t leo) {
    ToolRun run = Check();
    EXPECT_EQ(run.rc, 1);
    const auto& part = Partition(run);
    int64_t bytes = int64_t(std::filesystem::file_size(log)) - position;
    for (int s = 0; s < kSegments; ++s) {
      const std::string later = SegmentFile(dir_, SegmentBase(s), ".log");
      if (later > log) bytes += int64_t(std::filesystem::file_size(later));
    }
    EXPECT_EQ(part["dataBytesDropped"], bytes) << part.dump(2);
    bool named = false;
    for (const auto& p : part["problems"]) {
      if (p["file"] != log || p["position"] != position) continue;
      named = true;
      EXPECT_EQ(p["offset"], leo) << p.dump();
      EXPECT_NE(p["problem"].get<std::string>().find(field), std::string::npos) << p.dump();
    }
    EXPECT_TRUE(named) << part.dump(2);

    const std::string before = ReadFileToString(log);
    ToolRun refused = Repair(bytes - 1);
    EXPECT_EQ(refused.rc, 1);
    EXPECT_NE(refused.err.find(std::to_string(bytes)), std::string::npos) << refused.err;
    EXPECT_EQ(ReadFileToString(log), before);

    ToolRun repaired = Repair(bytes);
    ASSERT_EQ(repaired.rc, 0) << repaired.out << repaired.err;
    EXPECT_EQ(int64_t(std::filesystem::file_size(log)), position);
    int64_t kept = 0;
    for (const auto& m : Manifest()) {
      if (m["file"].get<std::string>().ends_with(".log")) kept += m["bytes"].get<int64_t>();
    }
    EXPECT_EQ(kept, bytes);
    const auto manifest = Manifest();
    ASSERT_FALSE(manifest.empty());
    EXPECT_EQ(manifest[0]["file"], BaseName(log));
    EXPECT_EQ(manifest[0]["fromPosition"], position);
    EXPECT_EQ(ReadFileToString(manifest[0]["quarantinePath"].get<std::string>()),
              before.substr(size_t(position)));

    ToolRun after = Check();
    EXPECT_EQ(after.rc, 0) << after.out;
    EXPECT_EQ(Partition(after)["logEndOffset"], leo);
    EXPECT_EQ(Repair(0).out, "Nothing to repair.\n");
  }

  TempDir tmp_;
  std::string dir_ = tmp_.Join("data");
};

TEST_F(UncoveredFieldsTest, BaseOffsetFlippedUp) {
  // Past the next segment's base offset: that batch is cut.
  const std::string log = SegmentFile(dir_, SegmentBase(1), ".log");
  const BatchPos b = Batches(log)[4];
  WriteBe64At(log, b.position, uint64_t(b.base_offset + 65536));
  ExpectCutAndRepair(log, b.position, "baseOffset", b.base_offset);
}

TEST_F(UncoveredFieldsTest, BaseOffsetFlippedDownCutsFromTheEarliestBatchAboveIt) {
  const std::string log = SegmentFile(dir_, SegmentBase(2), ".log");
  const auto batches = Batches(log);
  WriteBe64At(log, batches[5].position, uint64_t(batches[5].base_offset - 4));  // 75 -> 71
  // 71 lies in the batch at 69..71, the earliest batch that is above it.
  ExpectCutAndRepair(log, batches[3].position, "baseOffset", batches[3].base_offset);
}

TEST_F(UncoveredFieldsTest, BaseOffsetBelowTheSegmentBaseIsCutThere) {
  // Kafka takes a batch below its segment's base offset for an offset
  // overflow and refuses to load; the file name says the batch is wrong.
  const std::string log = SegmentFile(dir_, SegmentBase(2), ".log");
  const BatchPos b = Batches(log)[0];
  WriteBe64At(log, b.position, uint64_t(b.base_offset - 4));  // 60 -> 56
  ExpectCutAndRepair(log, 0, "segment's base offset", SegmentBase(2));
}

TEST_F(UncoveredFieldsTest, OffsetPastTheSegmentRangeInTheLastSegmentIsCut) {
  // Outside the segment's relative range, as an old segment's offset
  // overflow would be, but the batch after it goes back into the range: the
  // two disagree, so the out-of-range baseOffset is damage (issue 22), cut
  // like any other; it used to look like an overflow no split could fix.
  const std::string log = SegmentFile(dir_, SegmentBase(kSegments - 1), ".log");
  const auto batches = Batches(log);
  const BatchPos b = batches[batches.size() - 2];
  WriteBe64At(log, b.position, uint64_t(b.base_offset) + (uint64_t(1) << 32));
  ExpectCutAndRepair(log, b.position, "baseOffset", b.base_offset);
}

TEST_F(UncoveredFieldsTest, UnloadablePartitionGetsOneRecommendation) {
  // Check must not advise `daruma repair --max-corrupt-bytes N` for a
  // partition it also reports repair cannot load (issue 18). Unloadable: an
  // offset overflow in the last segment followed by a torn batch, which the
  // split cannot copy.
  const std::string log = SegmentFile(dir_, SegmentBase(kSegments - 1), ".log");
  const auto batches = Batches(log);
  const BatchPos b = batches[batches.size() - 2];
  WriteBe64At(log, b.position, uint64_t(b.base_offset) + (uint64_t(1) << 32));
  const BatchPos last = batches.back();
  WriteBe32At(log, last.position + 8,
              uint32_t(std::filesystem::file_size(log) - uint64_t(last.position)));
  const ToolRun check = Check();
  EXPECT_EQ(check.rc, 1);
  bool cannot_load = false;
  for (const auto& p : Partition(check)["problems"]) {
    const std::string what = p["problem"];
    const std::string action = p["action"];
    if (what.starts_with("the log cannot be loaded")) {
      cannot_load = true;
      continue;
    }
    EXPECT_EQ(action.find("daruma repair --max-corrupt-bytes"), std::string::npos) << p.dump();
    EXPECT_EQ(action.rfind("run `daruma repair", 0), std::string::npos) << p.dump();
  }
  EXPECT_TRUE(cannot_load) << Partition(check).dump(2);
}

TEST_F(UncoveredFieldsTest, LeaderEpochFlippedUp) {
  const std::string log = SegmentFile(dir_, SegmentBase(0), ".log");
  const BatchPos b = Batches(log)[3];
  WriteBe32At(log, b.position + 12, 1u << 23);  // epoch 0 -> 8388608
  ExpectCutAndRepair(log, b.position, "partitionLeaderEpoch", b.base_offset);
}

TEST_F(UncoveredFieldsTest, LeaderEpochFlippedDownCutsFromTheFirstBatchOfAHigherEpoch) {
  const std::string log = SegmentFile(dir_, SegmentBase(2), ".log");
  const BatchPos b = Batches(log)[5];
  WriteBe32At(log, b.position + 12, 0);  // epoch 2 -> 0
  // Within the segment the first batch of a higher epoch is its first batch.
  ExpectCutAndRepair(log, 0, "partitionLeaderEpoch", SegmentBase(2));
}

}  // namespace
}  // namespace daruma::tools
