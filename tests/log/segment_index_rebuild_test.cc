// Segment recovery rebuilds both indexes (LogSegment::ApplyRecovery). Kafka
// resets them first; Daruma only empties an index in memory when its file
// already has a slot for every entry the rebuild may add (no file size
// changes). Whatever the old files held, the rebuilt files must be byte for
// byte those of a rebuild from no index at all, and an index too small for
// Kafka's reset must fail the same way.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/clock.h"
#include "common/file_system.h"
#include "log/log.h"
#include "log/log_file_names.h"
#include "log/log_segment.h"
#include "record/record_batch_builder.h"
#include "support/test_support.h"

namespace daruma {
namespace {

namespace fs = std::filesystem;
using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

using testing::kT0;
constexpr int kRebuildBatches = 200;

class SegmentIndexRebuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.index_interval_bytes = 256;
    ManualClock clock(kT0);
    auto log = Log::CreateEmpty(FileSystem::Default(), source_.Join("t-0"), TopicPartition{"t", 0},
                                config_, &clock);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    for (int b = 0; b < kRebuildBatches; ++b) {
      // Timestamps rise every fourth batch, so the time index gets entries too.
      RecordInput record{kT0 + b / 4, "k", std::string(100, char('a' + b % 26)), {}};
      auto batch = BuildRecordBatch(BatchBuilderOptions{}, {record});
      ASSERT_TRUE(batch.ok());
      ASSERT_TRUE((*log)->AppendAsLeader(*batch, 0).ok());
    }
    ASSERT_TRUE((*log)->Close().ok());
    expected_index_ = RecoverCopy("expected", [](const std::string& dir) {
      fs::remove(OffsetIndexFileName(dir, 0));
      fs::remove(TimeIndexFileName(dir, 0));
    });
    ASSERT_GT(expected_index_.first.size(), 8u * 20);
    ASSERT_GT(expected_index_.second.size(), 12u * 20);
  }

  // Copies the partition, lets `damage` change its index files, recovers the
  // segment and returns the (.index, .timeindex) bytes left.
  template <typename Damage>
  std::pair<std::string, std::string> RecoverCopy(const std::string& name, Damage damage,
                                                  Status* status = nullptr) {
    const std::string dir = copies_.Join(name);
    fs::copy(source_.Join("t-0"), dir, fs::copy_options::recursive);
    damage(dir);
    auto seg = LogSegment::Open(FileSystem::Default(), dir, 0, config_, true);
    EXPECT_TRUE(seg.ok()) << seg.status().ToString();
    auto recovered = (*seg)->Recover(nullptr);
    if (status != nullptr) {
      *status = recovered.status();
    } else {
      EXPECT_TRUE(recovered.ok()) << recovered.status().ToString();
      if (recovered.ok()) {
        EXPECT_EQ(recovered->batches, kRebuildBatches);
      }
    }
    EXPECT_TRUE((*seg)->Close().ok());
    return {ReadFileToString(OffsetIndexFileName(dir, 0)),
            ReadFileToString(TimeIndexFileName(dir, 0))};
  }

  LogConfig config_;
  TempDir source_;
  TempDir copies_;
  std::pair<std::string, std::string> expected_index_;
};

TEST_F(SegmentIndexRebuildTest, ExactlySizedIndexesAreRewrittenToTheSameBytes) {
  EXPECT_EQ(RecoverCopy("same", [](const std::string&) {}), expected_index_);
}

TEST_F(SegmentIndexRebuildTest, GarbageEntriesOfTheSameLengthAreReplaced) {
  const auto rebuilt = RecoverCopy("garbage", [this](const std::string& dir) {
    WriteStringToFile(OffsetIndexFileName(dir, 0),
                      std::string(expected_index_.first.size(), '\xff'));
    WriteStringToFile(TimeIndexFileName(dir, 0),
                      std::string(expected_index_.second.size(), '\x7f'));
  });
  EXPECT_EQ(rebuilt, expected_index_);
}

TEST_F(SegmentIndexRebuildTest, LongerFilesWithStaleTailsAreTrimmed) {
  const auto rebuilt = RecoverCopy("longer", [this](const std::string& dir) {
    WriteStringToFile(OffsetIndexFileName(dir, 0),
                      expected_index_.first + std::string(8 * 100, '\x11'));
    WriteStringToFile(TimeIndexFileName(dir, 0),
                      expected_index_.second + std::string(12 * 100, '\x22'));
  });
  EXPECT_EQ(rebuilt, expected_index_);
}

TEST_F(SegmentIndexRebuildTest, PreallocatedZeroFilesAreTrimmed) {
  const auto rebuilt = RecoverCopy("preallocated", [this](const std::string& dir) {
    fs::resize_file(OffsetIndexFileName(dir, 0), size_t(config_.segment_index_bytes));
    fs::resize_file(TimeIndexFileName(dir, 0), size_t(config_.segment_index_bytes) / 12 * 12);
  });
  EXPECT_EQ(rebuilt, expected_index_);
}

TEST_F(SegmentIndexRebuildTest, FilesTooShortForTheRebuildAreResetFirst) {
  const auto rebuilt = RecoverCopy("short", [this](const std::string& dir) {
    WriteStringToFile(OffsetIndexFileName(dir, 0), expected_index_.first.substr(0, 8));
    WriteStringToFile(TimeIndexFileName(dir, 0), expected_index_.second.substr(0, 12));
  });
  EXPECT_EQ(rebuilt, expected_index_);
}

TEST_F(SegmentIndexRebuildTest, AnIndexTooSmallForKafkasResetFailsEvenWithRoomInTheFile) {
  // segment.index.bytes below what the rebuild needs: Kafka's reset index
  // fills up. A long old file must not hide that.
  config_.segment_index_bytes = int32_t(expected_index_.first.size()) - 8;
  Status from_nothing, from_long_file;
  RecoverCopy(
      "none",
      [](const std::string& dir) {
        fs::remove(OffsetIndexFileName(dir, 0));
        fs::remove(TimeIndexFileName(dir, 0));
      },
      &from_nothing);
  RecoverCopy(
      "long",
      [this](const std::string& dir) {
        WriteStringToFile(OffsetIndexFileName(dir, 0),
                          std::string(expected_index_.first.size() * 4, '\0'));
      },
      &from_long_file);
  EXPECT_EQ(from_nothing.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(from_nothing.message().find("full index"), std::string::npos)
      << from_nothing.ToString();
  // The same failure at the same entry (messages differ only in the path).
  auto at = [](const Status& s) {
    const size_t pos = s.message().find("(size = ");
    return pos == std::string::npos ? std::string() : s.message().substr(pos);
  };
  EXPECT_EQ(from_long_file.code(), from_nothing.code());
  EXPECT_EQ(at(from_long_file), at(from_nothing));
}

}  // namespace
}  // namespace daruma
