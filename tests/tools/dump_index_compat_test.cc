// `daruma dump` on Kafka's own files (shared fixtures, kafka-generated): for
// every `.index`, `.timeindex`, `.txnindex` and `.snapshot` of every
// scenario, the number of lines and the first/last entries match what the
// raw bytes say (entry size, zero-slot stop for the crashed scenario's
// preallocated indexes, the snapshot's entry count), and verifying each index
// against its `.log` finds zero mismatches on Kafka's data -- except the one
// the crash scenario really has: its active segment 975 was indexed up to the
// torn batch 1045-1049 (position 6416), whose bytes were then cut off.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "support/test_support.h"
#include "tools/dump_command.h"

namespace daruma::tools {
namespace {

namespace fs = std::filesystem;

struct DumpRun {
  int rc = -1;
  std::vector<std::string> lines;  // stdout without the "Dumping" line
  std::string err;
};

DumpRun Dump(const std::string& path, bool verify_only = false) {
  DumpOptions o;
  o.files = {path};
  o.verify_index_only = verify_only;
  std::ostringstream out, err;
  DumpRun run;
  run.rc = RunDump(o, out, err);
  run.err = err.str();
  std::istringstream in(out.str());
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "Dumping " + path);
  while (std::getline(in, line)) run.lines.push_back(line);
  return run;
}

std::vector<std::string> FilesWithSuffix(const std::string& suffix) {
  std::vector<std::string> out;
  const fs::path root = fs::path(testing::FixturesDir()) / "kafka-generated";
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file() && e.path().extension() == suffix) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool IsTornSegment(const std::string& path) {
  return path.find("unclean-torn-tail") != std::string::npos &&
         fs::path(path).filename().string().starts_with("00000000000000000975.");
}

int64_t BaseOf(const std::string& path) {
  return std::stoll(fs::path(path).filename().string().substr(0, 20));
}

const uint8_t* Data(const std::string& bytes) {
  return reinterpret_cast<const uint8_t*>(bytes.data());
}

// Entries Kafka's tool prints: whole entries up to the first slot after 0
// whose relative offset is 0 (a zeroed preallocated slot).
size_t PrintedEntries(const std::string& bytes, size_t entry_size, size_t offset_at) {
  const size_t n = bytes.size() / entry_size;
  for (size_t i = 1; i < n; ++i) {
    if (LoadBe32(Data(bytes) + i * entry_size + offset_at) == 0) return i;
  }
  return n;
}

std::string OffsetLine(const std::string& bytes, size_t slot, int64_t base) {
  const uint8_t* p = Data(bytes) + slot * 8;
  return "offset: " + std::to_string(base + int32_t(LoadBe32(p))) +
         " position: " + std::to_string(int32_t(LoadBe32(p + 4)));
}

std::string TimeLine(const std::string& bytes, size_t slot, int64_t base) {
  const uint8_t* p = Data(bytes) + slot * 12;
  return "timestamp: " + std::to_string(int64_t(LoadBe64(p))) +
         " offset: " + std::to_string(base + int32_t(LoadBe32(p + 8)));
}

TEST(DumpIndexCompatTest, OffsetIndexesMatchTheirBytesAndTheLog) {
  DARUMA_REQUIRE_FIXTURES();
  const auto files = FilesWithSuffix(".index");
  ASSERT_GE(files.size(), 30u);
  size_t total = 0, preallocated = 0;
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    const std::string bytes = testing::ReadFileToString(path);
    const size_t expected = PrintedEntries(bytes, 8, 0);
    if (expected * 8 != bytes.size()) ++preallocated;
    const std::string torn_mismatch =
        IsTornSegment(path) ? "Mismatches in :" + path + "\n  Index offset: 1049, log offset: -1\n"
                            : "";
    DumpRun run = Dump(path);
    EXPECT_EQ(run.rc, torn_mismatch.empty() ? 0 : 1);
    EXPECT_EQ(run.err, torn_mismatch);
    if (bytes.size() < 8) {
      EXPECT_EQ(run.lines, std::vector<std::string>{path + " is empty."});
      continue;
    }
    ASSERT_EQ(run.lines.size(), expected);
    if (IsTornSegment(path)) {
      EXPECT_EQ(run.lines.back(), "offset: 1049 position: 6416");
    }
    EXPECT_EQ(run.lines.front(), OffsetLine(bytes, 0, BaseOf(path)));
    EXPECT_EQ(run.lines.back(), OffsetLine(bytes, expected - 1, BaseOf(path)));
    total += expected;
    DumpRun verify = Dump(path, /*verify_only=*/true);
    EXPECT_EQ(verify.rc, run.rc);
    EXPECT_TRUE(verify.lines.empty());
    EXPECT_EQ(verify.err, torn_mismatch);
  }
  EXPECT_GT(total, 100u);
  EXPECT_EQ(preallocated, 1u);  // unclean-torn-tail's active segment 975
}

TEST(DumpIndexCompatTest, TimeIndexesMatchTheirBytesAndTheLog) {
  DARUMA_REQUIRE_FIXTURES();
  const auto files = FilesWithSuffix(".timeindex");
  ASSERT_GE(files.size(), 30u);
  size_t total = 0;
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    const std::string bytes = testing::ReadFileToString(path);
    const size_t expected = bytes.size() < 12 ? 0 : PrintedEntries(bytes, 12, 8);
    const std::string torn_missing = IsTornSegment(path)
                                         ? "The following indexed offsets are not found in the "
                                           "log.\nIndexed offset: 1049, found log offset: -1\n"
                                         : "";
    DumpRun run = Dump(path);
    EXPECT_EQ(run.rc, torn_missing.empty() ? 0 : 1);
    EXPECT_EQ(run.err, torn_missing);
    ASSERT_EQ(run.lines.size(), expected);
    if (expected == 0) continue;
    EXPECT_EQ(run.lines.front(), TimeLine(bytes, 0, BaseOf(path)));
    EXPECT_EQ(run.lines.back(), TimeLine(bytes, expected - 1, BaseOf(path)));
    total += expected;
  }
  EXPECT_GT(total, 100u);
}

TEST(DumpIndexCompatTest, TxnIndexesListEveryAbortedTransaction) {
  DARUMA_REQUIRE_FIXTURES();
  const auto files = FilesWithSuffix(".txnindex");
  ASSERT_FALSE(files.empty());
  size_t total = 0;
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    const std::string bytes = testing::ReadFileToString(path);
    DumpRun run = Dump(path);
    EXPECT_EQ(run.rc, 0);
    ASSERT_EQ(run.lines.size(), bytes.size() / 34);
    for (size_t i = 0; i < run.lines.size(); ++i) {
      const uint8_t* p = Data(bytes) + i * 34;
      EXPECT_EQ(run.lines[i], "version: 0 producerId: " + std::to_string(LoadBe64(p + 2)) +
                                  " firstOffset: " + std::to_string(LoadBe64(p + 10)) +
                                  " lastOffset: " + std::to_string(LoadBe64(p + 18)) +
                                  " lastStableOffset: " + std::to_string(LoadBe64(p + 26)));
    }
    total += run.lines.size();
  }
  EXPECT_EQ(total, 36u);  // the transactional scenario's 36 aborts (fixtures README)
}

TEST(DumpIndexCompatTest, SnapshotsPrintOneLinePerProducer) {
  DARUMA_REQUIRE_FIXTURES();
  const auto files = FilesWithSuffix(".snapshot");
  ASSERT_GE(files.size(), 20u);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    const std::string bytes = testing::ReadFileToString(path);
    const int32_t count = int32_t(LoadBe32(Data(bytes) + 6));
    DumpRun run = Dump(path);
    EXPECT_EQ(run.rc, 0);
    EXPECT_EQ(run.err, "");
    ASSERT_EQ(run.lines.size(), size_t(count));
    for (int32_t i = 0; i < count; ++i) {
      const uint8_t* e = Data(bytes) + 10 + 46 * i;
      EXPECT_TRUE(
          run.lines[i].starts_with("producerId: " + std::to_string(int64_t(LoadBe64(e))) +
                                   " producerEpoch: " + std::to_string(int16_t(LoadBe16(e + 8)))))
          << run.lines[i];
    }
  }
}

}  // namespace
}  // namespace daruma::tools
