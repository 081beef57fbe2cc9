// The scrub findings file (recovery/scrub_findings.h): round trip, a missing
// file, every way the file can be wrong, and a write crashed at every file
// operation leaves the old or the new findings.
#include "recovery/scrub_findings.h"

#include <gtest/gtest.h>

#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::FaultInjectionFileSystem;
using testing::MemFileSystem;

ScrubFinding Finding(int64_t position) {
  ScrubFinding f;
  f.tp = {"orders", 3};
  f.segment_base = 1000;
  f.file = "orders-3/00000000000000001000.log";
  f.damage = {position,
              position + 700,
              1040,
              1050,
              DamageKind::kBadCrc,
              "batch at position " + std::to_string(position) + ": field crc"};
  f.found_ms = 1700000000123;
  return f;
}

TEST(ScrubFindingsTest, RoundTrip) {
  ScrubFindingsFile file;
  file.last_pass_completed_ms = 1700000000000;
  file.findings = {Finding(4096), Finding(9000)};
  file.findings[1].damage.kind = DamageKind::kNonMonotonicOffset;
  file.findings[1].segment_size = 1 << 30;
  file.findings[1].segment_modified_ms = 1700000000456;
  auto decoded = DecodeScrubFindings("f", EncodeScrubFindings(file));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, file);
}

TEST(ScrubFindingsTest, MissingFileIsNoFindings) {
  MemFileSystem fs;
  ASSERT_TRUE(fs.CreateDir("/d").ok());
  auto read = ReadScrubFindings(&fs, "/d");
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->findings.empty());
  EXPECT_FALSE(read->last_pass_completed_ms.has_value());
}

TEST(ScrubFindingsTest, WriteThenRead) {
  MemFileSystem fs;
  ASSERT_TRUE(fs.CreateDir("/d").ok());
  ScrubFindingsFile file;
  file.findings = {Finding(0)};
  ASSERT_TRUE(WriteScrubFindings(&fs, "/d", file).ok());
  EXPECT_TRUE(fs.Exists(std::string("/d/") + kScrubFindingsFileName));
  auto read = ReadScrubFindings(&fs, "/d");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, file);
}

TEST(ScrubFindingsTest, RemoveDropsOnlyTheMatchingFindings) {
  MemFileSystem fs;
  ASSERT_TRUE(fs.CreateDir("/d").ok());
  ScrubFindingsFile file;
  file.findings = {Finding(0), Finding(100), Finding(200)};
  file.findings[1].segment_base = 2000;
  file.findings[2].tp = {"other", 0};
  ASSERT_TRUE(WriteScrubFindings(&fs, "/d", file).ok());
  ASSERT_TRUE(RemoveScrubFindings(&fs, "/d", {"orders", 3}, 1000).ok());
  auto read = ReadScrubFindings(&fs, "/d");
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->findings.size(), 2u);
  EXPECT_EQ(read->findings[0].segment_base, 2000);
  ASSERT_TRUE(RemoveScrubFindings(&fs, "/d", {"orders", 3}).ok());
  read = ReadScrubFindings(&fs, "/d");
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->findings.size(), 1u);
  EXPECT_EQ(read->findings[0].tp.topic, "other");
  // No findings file, nothing to remove: nothing is written.
  ASSERT_TRUE(fs.CreateDir("/e").ok());
  EXPECT_TRUE(RemoveScrubFindings(&fs, "/e", {"orders", 3}).ok());
  EXPECT_FALSE(fs.Exists(std::string("/e/") + kScrubFindingsFileName));
}

TEST(ScrubFindingsTest, NotJsonNamesTheBytePosition) {
  auto r = DecodeScrubFindings("/d/f.json", "{\"version\": 1,, }");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption());
  EXPECT_NE(r.status().message().find("/d/f.json: not valid JSON at byte 14"), std::string::npos)
      << r.status().ToString();
}

TEST(ScrubFindingsTest, WrongFieldsNameTheField) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"version": 2, "findings": []})", "field version: expected 1, found 2"},
      {R"({"version": 1})", "field findings: expected an array"},
      {R"({"version": 1, "findings": [3]})", "field findings[0]: expected an object"},
      {R"({"version": 1, "findings": [{"topic": "t"}]})", "field findings[0].partition"},
  };
  for (const auto& [text, expected] : cases) {
    auto r = DecodeScrubFindings("f", text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(expected), std::string::npos) << r.status().ToString();
  }
  std::string unknown_kind = EncodeScrubFindings({std::nullopt, {Finding(0)}});
  unknown_kind.replace(unknown_kind.find("bad_crc"), 7, "bad_xyz");
  auto r = DecodeScrubFindings("f", unknown_kind);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown kind \"bad_xyz\""), std::string::npos);
  std::string bad_range = EncodeScrubFindings({std::nullopt, {Finding(0)}});
  bad_range.replace(bad_range.find("\"endPosition\": 700"), 18, "\"endPosition\": 0");
  EXPECT_FALSE(DecodeScrubFindings("f", bad_range).ok());
}

// A crash (or power loss) at any operation of a rewrite leaves the old
// findings or the new ones, never neither or a mix.
TEST(ScrubFindingsTest, CrashedWriteLeavesOldOrNew) {
  ScrubFindingsFile old_file, new_file;
  old_file.findings = {Finding(0)};
  new_file.findings = {Finding(0), Finding(5000)};
  new_file.last_pass_completed_ms = 1700000001000;
  uint64_t total = 0;
  {
    MemFileSystem mem;
    ASSERT_TRUE(mem.CreateDir("/d").ok());
    ASSERT_TRUE(WriteScrubFindings(&mem, "/d", old_file).ok());
    FaultInjectionFileSystem fault(&mem);
    ASSERT_TRUE(WriteScrubFindings(&fault, "/d", new_file).ok());
    total = fault.op_count();
  }
  ASSERT_GT(total, 2u);
  for (uint64_t n = 1; n <= total; ++n) {
    for (bool power : {false, true}) {
      SCOPED_TRACE("crash at op " + std::to_string(n) + (power ? " (power loss)" : " (kill)"));
      MemFileSystem mem;
      ASSERT_TRUE(mem.CreateDir("/d").ok());
      ASSERT_TRUE(WriteScrubFindings(&mem, "/d", old_file).ok());
      MemFileSystem image;
      {
        FaultInjectionFileSystem fault(&mem, n);
        fault.CrashAt(n);
        EXPECT_FALSE(WriteScrubFindings(&fault, "/d", new_file).ok());
        if (power) {
          ASSERT_TRUE(fault.MaterializeDurableState(&image, "/d", false).ok());
        }
      }
      auto read = ReadScrubFindings(power ? &image : &mem, "/d");
      ASSERT_TRUE(read.ok()) << read.status().ToString();
      EXPECT_TRUE(*read == old_file || *read == new_file);
    }
  }
}

}  // namespace
}  // namespace daruma
