// `daruma check` and `daruma repair` on the broker's scrub findings (issue 22
// rule 3, recovery/scrub_findings_check.h): check notes each finding and
// whether it sees the same damage; repair clears the findings of the
// partitions it repaired, so the broker serves the range again, and leaves
// the others; an unreadable findings file is an operator's problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "recovery/scrub_findings.h"
#include "support/test_support.h"
#include "tools/check_command.h"
#include "tools/generated_log_dir.h"
#include "tools/repair_command.h"
#include "tools/tool_run.h"

namespace daruma::tools {
namespace {

using namespace testlog;  // NOLINT: test helpers
using daruma::testing::TempDir;
using daruma::testing::WriteStringToFile;

class ScrubFindingsRepairTest : public ::testing::Test {
 protected:
  void SetUp() override { WriteLogDir(dir_); }

  ToolRun Check() {
    CheckCommandOptions o;
    o.log_dirs = {dir_};
    o.json_file = tmp_.Join("check.json");
    return RunCheckQuietly(o);
  }

  ToolRun Repair() {
    RepairCommandOptions o;
    o.log_dirs = {dir_};
    o.max_corrupt_bytes = -1;
    return RunRepairQuietly(o);
  }

  // A finding of the first segment's batch `batch`, as the scrubber records it.
  ScrubFinding FindingOf(int batch) {
    const std::string log = SegmentFile(dir_, SegmentBase(0), ".log");
    const auto batches = Batches(log);
    ScrubFinding f;
    f.tp = TopicPartition{"t", 0};
    f.segment_base = SegmentBase(0);
    f.file = "t-0/" + std::filesystem::path(log).filename().string();
    f.damage.position = batches[size_t(batch)].position;
    f.damage.end_position = batches[size_t(batch) + 1].position;
    f.damage.first_offset = batches[size_t(batch)].base_offset;
    f.damage.end_offset = batches[size_t(batch) + 1].base_offset;
    f.damage.kind = DamageKind::kBadCrc;
    f.damage.what = "CRC-32C mismatch";
    f.found_ms = kNow;
    return f;
  }

  void WriteFindings(const std::vector<ScrubFinding>& findings) {
    ScrubFindingsFile file;
    file.last_pass_completed_ms = kNow;
    file.findings = findings;
    ASSERT_TRUE(WriteScrubFindings(FileSystem::Default(), dir_, file).ok());
  }

  std::vector<std::string> Notes(const ToolRun& run) {
    std::vector<std::string> out;
    for (const auto& n : run.json["logDirs"][0]["notes"]) out.push_back(n.get<std::string>());
    return out;
  }

  TempDir tmp_;
  std::string dir_ = tmp_.Join("data");
};

TEST_F(ScrubFindingsRepairTest, ConfirmedFindingIsNotedAndClearedByTheRepair) {
  const std::string log = SegmentFile(dir_, SegmentBase(0), ".log");
  const ScrubFinding f = FindingOf(4);
  FlipByte(log, f.damage.position + 70);  // inside the records: the CRC fails
  WriteFindings({f});

  const ToolRun check = Check();
  EXPECT_EQ(check.rc, 1);
  const auto notes = Notes(check);
  ASSERT_EQ(notes.size(), 1u) << check.json.dump(2);
  EXPECT_NE(notes[0].find("the broker's scrub found bad_crc at bytes [" +
                          std::to_string(f.damage.position)),
            std::string::npos)
      << notes[0];
  EXPECT_NE(notes[0].find("this check reports the same segment"), std::string::npos) << notes[0];

  const ToolRun repair = Repair();
  ASSERT_EQ(repair.rc, 0) << repair.out << repair.err;
  EXPECT_NE(repair.out.find("cleared 1 scrub finding(s)"), std::string::npos) << repair.out;
  auto after = ReadScrubFindings(FileSystem::Default(), dir_);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_TRUE(after->findings.empty());
  EXPECT_EQ(after->last_pass_completed_ms, kNow);
  EXPECT_EQ(Check().rc, 0);
}

TEST_F(ScrubFindingsRepairTest, FindingThisCheckDoesNotSeeIsNotedAndKept) {
  // The damage is gone (a transient read error, say): check is clean but
  // says so, and repair has nothing to do and leaves the finding to the
  // broker's next pass.
  WriteFindings({FindingOf(2)});
  const ToolRun check = Check();
  EXPECT_EQ(check.rc, 0) << check.out;
  const auto notes = Notes(check);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("this check does not see it now"), std::string::npos) << notes[0];
  EXPECT_EQ(Repair().out, "Nothing to repair.\n");
  auto after = ReadScrubFindings(FileSystem::Default(), dir_);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->findings.size(), 1u);
}

TEST_F(ScrubFindingsRepairTest, UnreadableFindingsFileIsAnOperatorProblemLeftAsFound) {
  const std::string path = JoinPath(dir_, kScrubFindingsFileName);
  WriteStringToFile(path, "{\"version\": 1, \"findings\": [");
  const ToolRun check = Check();
  EXPECT_EQ(check.rc, 1);
  bool named = false;
  for (const auto& p : check.json["logDirs"][0]["problems"]) {
    if (p["file"] != path) continue;
    named = true;
    EXPECT_EQ(p["operatorOnly"], true) << p.dump();
  }
  EXPECT_TRUE(named) << check.json.dump(2);
  const ToolRun repair = Repair();
  EXPECT_EQ(repair.rc, 1);  // only an operator problem: repair changes nothing
  EXPECT_EQ(daruma::testing::ReadFileToString(path), "{\"version\": 1, \"findings\": [");
}

}  // namespace
}  // namespace daruma::tools
