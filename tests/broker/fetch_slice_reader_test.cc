// FetchSliceReader (fetch_slice_reader.h): the file ranges it returns hold
// exactly the bytes Log::Read returns for the same fetch, at every offset and
// byte limit, across segments; it declines (nullopt) wherever Log::Read must
// answer; and a zero-copy Fetch through the RequestHandler sends the same
// response as a copying one.
#include "broker/fetch_slice_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "broker/handler_harness.h"
#include "common/clock.h"
#include "common/no_sync_file_system.h"
#include "log/log.h"
#include "log/log_file_names.h"
#include "protocol/messages.h"
#include "support/test_support.h"

namespace daruma::broker::testing {
namespace {

// The slices' bytes, read back through their files.
Bytes ReadSlices(const std::vector<FileSlice>& slices) {
  ResponseFrame frame;
  for (const FileSlice& s : slices) frame.splices.push_back({0, s});
  Result<Bytes> flat = frame.Flatten();
  EXPECT_TRUE(flat.ok()) << flat.status().ToString();
  return flat.ok() ? *flat : Bytes{};
}

class FetchSliceReaderTest : public ::testing::Test {
 protected:
  // A log of `batches` batches of 1–4 records, rolled every ~600 bytes, with
  // the high watermark at the log end.
  void MakeLog(int batches, FileSystem* fs = FileSystem::Default(), int32_t segment_bytes = 600) {
    LogConfig config;
    config.segment_bytes = segment_bytes;
    config.index_interval_bytes = 100;
    Result<std::unique_ptr<Log>> log =
        Log::CreateEmpty(fs, dir_.Join("t-0"), {"t", 0}, config, Clock::System());
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log_ = std::move(*log);
    for (int i = 0; i < batches; ++i) {
      std::vector<std::string> values;
      for (int r = 0; r <= i % 4; ++r) values.push_back("v" + std::to_string(i) + "-" + "xyz");
      ASSERT_TRUE(log_->AppendAsLeader(ClientBatch(values), 0).ok());
    }
    log_->UpdateHighWatermark(log_->log_end_offset());
  }
  Bytes LogRead(int64_t offset, int32_t max_bytes, bool min_one) {
    Result<FetchDataInfo> data =
        log_->Read(offset, max_bytes, FetchIsolation::kHighWatermark, min_one);
    EXPECT_TRUE(data.ok()) << data.status().ToString();
    return data.ok() ? data->records : Bytes{};
  }

  daruma::testing::TempDir dir_;
  std::unique_ptr<Log> log_;
};

TEST_F(FetchSliceReaderTest, EveryOffsetAndLimitMatchesLogRead) {
  MakeLog(40);
  ASSERT_GT(log_->num_segments(), 3u);
  FetchSliceReader reader(FileSystem::Default());
  const int64_t end = log_->log_end_offset();
  for (int64_t offset = 0; offset < end; ++offset) {
    for (int32_t max_bytes : {1, 90, 200, 1 << 20}) {
      for (bool min_one : {true, false}) {
        const Bytes want = LogRead(offset, max_bytes, min_one);
        std::optional<std::vector<FileSlice>> got = reader.Read(*log_, offset, max_bytes, min_one);
        if (want.empty()) {
          EXPECT_FALSE(got.has_value()) << "offset " << offset << " max " << max_bytes;
          continue;
        }
        ASSERT_TRUE(got.has_value()) << "offset " << offset << " max " << max_bytes;
        EXPECT_EQ(got->size(), 1u) << "one contiguous range of one segment";
        EXPECT_EQ(ReadSlices(*got), want)
            << "offset " << offset << " max " << max_bytes << (min_one ? " min_one" : "");
      }
    }
  }
}

// A consumer's loop: each fetch starts where the last one ended (a cursor),
// crossing every segment boundary; the whole log comes back once, in order.
TEST_F(FetchSliceReaderTest, SequentialFetchesReturnTheWholeLogInOrder) {
  MakeLog(40);
  FetchSliceReader reader(FileSystem::Default());
  Bytes all;
  Bytes got;
  for (int64_t base : log_->segment_base_offsets()) {
    const std::string path = dir_.Join("t-0/" + FilenamePrefixFromOffset(base) + ".log");
    const std::string text = daruma::testing::ReadFileToString(path);
    all.insert(all.end(), text.begin(), text.end());
  }
  int64_t offset = 0;
  int fetches = 0;
  while (offset < log_->log_end_offset() && fetches < 1000) {
    const Bytes want = LogRead(offset, 250, true);
    std::optional<std::vector<FileSlice>> slices = reader.Read(*log_, offset, 250, true);
    ASSERT_TRUE(slices.has_value()) << "offset " << offset;
    const Bytes bytes = ReadSlices(*slices);
    ASSERT_EQ(bytes, want) << "offset " << offset;
    got.insert(got.end(), bytes.begin(), bytes.end());
    // The next offset: after the last batch returned (v2: base + delta + 1).
    size_t pos = 0;
    while (pos < bytes.size()) {
      const int64_t base = int64_t(LoadBe64(bytes.data() + pos));
      offset = base + int32_t(LoadBe32(bytes.data() + pos + 23)) + 1;
      pos += 12 + LoadBe32(bytes.data() + pos + 8);
    }
    ++fetches;
  }
  EXPECT_EQ(got, all);
  EXPECT_GT(fetches, int(log_->num_segments()));
  EXPECT_GE(reader.cursors(), 1u);
}

// One segment with an index entry every ~100 bytes: a fetch takes the bytes
// up to the last indexed batch that fits without reading their headers. With
// the high watermark anywhere, every fetch still equals Log::Read.
TEST_F(FetchSliceReaderTest, IndexSkipMatchesLogReadWithTheHighWatermarkAnywhere) {
  MakeLog(60, FileSystem::Default(), 1 << 20);
  ASSERT_EQ(log_->num_segments(), 1u);
  FetchSliceReader reader(FileSystem::Default());
  const int64_t end = log_->log_end_offset();
  int compared = 0;
  for (int64_t hw = 1; hw <= end; hw += 7) {
    log_->UpdateHighWatermark(hw);
    for (int64_t offset = 0; offset < hw; offset += 3) {
      for (int32_t max_bytes : {90, 200, 700, 1 << 20}) {
        for (bool min_one : {true, false}) {
          const Bytes want = LogRead(offset, max_bytes, min_one);
          std::optional<std::vector<FileSlice>> got =
              reader.Read(*log_, offset, max_bytes, min_one);
          if (want.empty()) {
            EXPECT_FALSE(got.has_value()) << "hw " << hw << " offset " << offset;
            continue;
          }
          ASSERT_TRUE(got.has_value()) << "hw " << hw << " offset " << offset;
          ASSERT_EQ(ReadSlices(*got), want) << "hw " << hw << " offset " << offset << " max "
                                            << max_bytes << (min_one ? " min_one" : "");
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

// An index that does not describe the file (stale or damaged: every position
// moved by a few bytes) is only a hint: a fetch either declines (Log::Read
// answers) or returns exactly the bytes the intact log gave.
TEST_F(FetchSliceReaderTest, AnIndexThatDoesNotMatchTheFileIsNeverTrusted) {
  MakeLog(60, FileSystem::Default(), 1 << 20);
  const int64_t end = log_->log_end_offset();
  std::map<std::pair<int64_t, int32_t>, Bytes> want;
  for (int64_t offset = 0; offset < end; ++offset) {
    for (int32_t max_bytes : {200, 1 << 20})
      want[{offset, max_bytes}] = LogRead(offset, max_bytes, true);
  }
  const std::string index_path = dir_.Join("t-0/" + FilenamePrefixFromOffset(0) + ".index");
  std::string index = daruma::testing::ReadFileToString(index_path);
  for (size_t at = 0; at + 8 <= index.size(); at += 8) {
    const uint32_t position = LoadBe32(reinterpret_cast<const uint8_t*>(index.data()) + at + 4);
    if (position == 0) continue;
    const uint32_t moved = position + 5;
    for (int i = 0; i < 4; ++i) index[at + 4 + size_t(i)] = char(uint8_t(moved >> (24 - 8 * i)));
  }
  daruma::testing::WriteStringToFile(index_path, index);
  FetchSliceReader reader(FileSystem::Default());
  int served = 0;
  for (int64_t offset = 0; offset < end; ++offset) {
    for (int32_t max_bytes : {200, 1 << 20}) {
      std::optional<std::vector<FileSlice>> got = reader.Read(*log_, offset, max_bytes, true);
      if (!got) continue;
      EXPECT_EQ(ReadSlices(*got), (want[{offset, max_bytes}])) << "offset " << offset;
      ++served;
    }
  }
  EXPECT_GT(served, 0) << "offsets before the first indexed batch need no index";
}

TEST_F(FetchSliceReaderTest, DeclinesWhatOnlyLogReadCanAnswer) {
  MakeLog(6);
  FetchSliceReader reader(FileSystem::Default());
  const int64_t end = log_->log_end_offset();
  EXPECT_FALSE(reader.Read(*log_, end, 1 << 20, true));      // at the end: empty
  EXPECT_FALSE(reader.Read(*log_, end + 1, 1 << 20, true));  // out of range
  EXPECT_FALSE(reader.Read(*log_, -1, 1 << 20, true));
  // Below the high watermark only.
  log_->UpdateHighWatermark(1);
  std::optional<std::vector<FileSlice>> first = reader.Read(*log_, 0, 1 << 20, true);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(ReadSlices(*first), LogRead(0, 1 << 20, true));
  EXPECT_FALSE(reader.Read(*log_, 1, 1 << 20, true));
  // Zero copy off.
  FetchSliceReader off(nullptr);
  EXPECT_FALSE(off.Read(*log_, 0, 1 << 20, true));
}

// A segment whose .index is not on disk (a load left the index it rebuilt
// in memory, IndexFile's deferred files) is declined, so that Log::Read
// finds the offset through that index instead of a scan of every header;
// a fetch from a segment with its .index is still spliced, and a cursor
// never moves on into a segment without one.
TEST_F(FetchSliceReaderTest, ASegmentWithoutItsIndexFileIsLeftToLogRead) {
  MakeLog(40);
  const std::vector<int64_t> bases = log_->segment_base_offsets();
  ASSERT_GE(bases.size(), 3u);
  std::filesystem::remove(dir_.Join("t-0/" + FilenamePrefixFromOffset(bases[1]) + ".index"));
  FetchSliceReader reader(FileSystem::Default());
  EXPECT_FALSE(reader.Read(*log_, bases[1], 1 << 20, true));
  EXPECT_FALSE(reader.Read(*log_, bases[2] - 1, 1 << 20, true));
  std::optional<std::vector<FileSlice>> first = reader.Read(*log_, 0, 1 << 20, true);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(ReadSlices(*first), LogRead(0, 1 << 20, true));
  // The cursor now sits at the end of the first segment.
  EXPECT_FALSE(reader.Read(*log_, bases[1], 1 << 20, true));
  std::optional<std::vector<FileSlice>> third = reader.Read(*log_, bases[2], 1 << 20, true);
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ(ReadSlices(*third), LogRead(bases[2], 1 << 20, true));
}

// Files without a descriptor (decorated file systems) are never spliced.
TEST_F(FetchSliceReaderTest, FilesWithoutDescriptorFallBack) {
  NoSyncFileSystem fs;
  MakeLog(3, &fs);
  FetchSliceReader reader(&fs);
  EXPECT_FALSE(reader.Read(*log_, 0, 1 << 20, true));
  FetchSliceReader posix(FileSystem::Default());
  EXPECT_TRUE(posix.Read(*log_, 0, 1 << 20, true).has_value());
}

TEST_F(FetchSliceReaderTest, CursorsAreBoundedAndForgottenWithTheirTopic) {
  MakeLog(10);
  FetchSliceReader reader(FileSystem::Default(), /*max_cursors=*/3);
  for (int64_t offset = 0; offset < 8; ++offset) {
    ASSERT_TRUE(reader.Read(*log_, offset, 1, true).has_value());
  }
  EXPECT_EQ(reader.cursors(), 3u);
  reader.ForgetTopic("other");
  EXPECT_EQ(reader.cursors(), 3u);
  reader.ForgetTopic("t");
  EXPECT_EQ(reader.cursors(), 0u);
}

// Through the RequestHandler: the zero-copy response is the copying one, and
// it really carries a file range.
TEST(HandlerZeroCopyFetch, ResponseMatchesTheCopyingHandler) {
  HandlerHarness copying;
  HandlerHarness zero_copy([](BrokerContext& ctx) { ctx.zero_copy_fs = FileSystem::Default(); });
  for (HandlerHarness* h : {&copying, &zero_copy}) {
    ASSERT_EQ(h->CreateTopic("z", 1).topics.at(0).error_code, ErrorCode::kNone);
    h->Produce("z", 0, ClientBatch({"a0", "a1", "a2"}));
    h->Produce("z", 0, ClientBatch({"b0", "b1"}, 2000, CompressionType::kGzip));
    h->Produce("z", 0, ClientBatch({"c0"}));
  }
  // READ_UNCOMMITTED and READ_COMMITTED (librdkafka's default).
  for (int8_t isolation : {0, 1}) {
    for (int64_t offset : {0, 4, 5, 6}) {
      const FetchRequest request = HandlerHarness::FetchOne("z", 0, offset, 0, 1, isolation);
      auto a = copying.Submit(ApiKey::kFetch, 11, request, EncodeFetchRequest);
      auto b = zero_copy.Submit(ApiKey::kFetch, 11, request, EncodeFetchRequest);
      ASSERT_TRUE(a->done && b->done);
      ASSERT_TRUE(a->frame && b->frame);
      EXPECT_EQ(*b->frame, *a->frame) << "offset " << offset << " isolation " << int(isolation);
      EXPECT_EQ(a->splices, 0u);
      EXPECT_EQ(b->splices, offset < 6 ? 1u : 0u) << "offset " << offset;
    }
  }
  FetchResponse::Partition p = zero_copy.Fetch("z", 0, 4);
  ASSERT_TRUE(p.records.has_value());
  EXPECT_EQ(p.high_watermark, 6);
  EXPECT_EQ(*p.records, Concat(AsStored(ClientBatch({"b0", "b1"}, 2000, CompressionType::kGzip), 3),
                               AsStored(ClientBatch({"c0"}), 5)));
}

}  // namespace
}  // namespace daruma::broker::testing
