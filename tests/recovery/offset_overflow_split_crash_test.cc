// Crash at every step of an offset-overflow split (spec §10.5 crash safety):
// for each mutating operation n of a load that splits, the load crashes at n,
// and a second load, on the durable image (power loss) and on the files as
// they are (process kill), must end with exactly the split segments.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "log/log_file_names.h"
#include "recovery/log_loader.h"
#include "recovery/overflow_segment.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"

namespace daruma::testing {
namespace {

constexpr char kRoot[] = "/data";
constexpr char kPart[] = "/data/t-0";

std::string SegmentPath(int64_t base, const std::string& ext) {
  return std::string(kPart) + "/" + FilenamePrefixFromOffset(base) + ext;
}

void WriteOverflowSegment(MemFileSystem* fs) {
  ASSERT_TRUE(fs->CreateDir(kPart).ok());
  auto f = fs->Open(SegmentPath(0, ".log"), OpenMode::kCreate);
  ASSERT_TRUE(f.ok());
  const std::string bytes = OverflowSegmentBytes();
  ASSERT_TRUE((*f)->WriteAt(0, AsBytes(bytes)).ok());
  ASSERT_TRUE((*f)->Sync().ok());
}

Result<std::unique_ptr<Log>> Load(FileSystem* fs, bool clean, Clock* clock) {
  LoadLogParams p;
  p.fs = fs;
  p.log_dir = kRoot;
  p.partition_dir = kPart;
  p.tp = TopicPartition{"t", 0};
  p.clock = clock;
  p.had_clean_shutdown = clean;
  p.recovery_point_checkpoint = 0;
  return LoadLog(p, nullptr);
}

// Loads `fs` again (unclean: Kafka's restart after a crash) and checks the
// segments are exactly the split ones.
void ExpectRecoversToSplit(MemFileSystem* fs, const std::string& what) {
  ManualClock clock(kOverflowT0 + 1000);
  auto log = Load(fs, /*clean=*/false, &clock);
  ASSERT_TRUE(log.ok()) << what << ": " << log.status().ToString();
  std::vector<int64_t> bases;
  for (LogSegment* s : (*log)->segments_for_inspection()) bases.push_back(s->base_offset());
  EXPECT_EQ(bases, (std::vector<int64_t>{0, kSplitBase1, kSplitBase2})) << what;
  EXPECT_EQ((*log)->log_end_offset(), kOverflowNextOffset) << what;
  ASSERT_TRUE((*log)->Close().ok());
  const auto files = fs->Files(kPart);
  for (const ExpectedSplit& e : ExpectedSplitSegments()) {
    auto it = files.find(SegmentPath(e.base, ".log"));
    ASSERT_NE(it, files.end()) << what << ": no segment " << e.base;
    EXPECT_EQ(std::string(it->second.begin(), it->second.end()), e.bytes)
        << what << ": segment " << e.base;
  }
  for (const auto& [path, bytes] : files) {
    EXPECT_FALSE(HasSuffix(path, ".cleaned")) << what << ": " << path;
    EXPECT_FALSE(HasSuffix(path, ".swap")) << what << ": " << path;
  }
}

// The number of mutating operations of an uninterrupted load.
uint64_t OpsOfLoad(bool clean) {
  MemFileSystem base;
  WriteOverflowSegment(&base);
  FaultInjectionFileSystem fault(&base);
  ManualClock clock(kOverflowT0 + 1000);
  auto log = Load(&fault, clean, &clock);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return fault.op_count();
}

class OffsetOverflowSplitCrashTest : public ::testing::TestWithParam<bool> {};

TEST_P(OffsetOverflowSplitCrashTest, CrashAtEveryOperationStillRecoversTheSplitSegments) {
  const bool clean = GetParam();
  const uint64_t ops = OpsOfLoad(clean);
  ASSERT_GT(ops, 10u);
  for (uint64_t n = 1; n <= ops; ++n) {
    MemFileSystem base;
    WriteOverflowSegment(&base);
    MemFileSystem image;
    {
      FaultInjectionFileSystem fault(&base);
      fault.CrashAt(n);
      ManualClock clock(kOverflowT0 + 1000);
      auto log = Load(&fault, clean, &clock);
      ASSERT_FALSE(log.ok()) << "op " << n << " of " << ops;
      log = Result<std::unique_ptr<Log>>(Status::IoError("dropped"));  // the process died
      ASSERT_TRUE(fault.MaterializeDurableState(&image, kRoot, /*tear=*/false).ok());
    }
    ExpectRecoversToSplit(&image, "power loss at op " + std::to_string(n));
    ExpectRecoversToSplit(&base, "process kill at op " + std::to_string(n));
  }
}

INSTANTIATE_TEST_SUITE_P(CleanAndUnclean, OffsetOverflowSplitCrashTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Clean" : "Unclean"; });

}  // namespace
}  // namespace daruma::testing
