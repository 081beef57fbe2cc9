// FetchSliceReader (fetch_slice_reader.h): the file ranges it returns hold
// exactly the bytes Log::Read returns for the same fetch, at every offset and
// byte limit, across segments; it declines (nullopt) wherever Log::Read must
// answer; and a zero-copy Fetch through the RequestHandler sends the same
// response as a copying one.
#include "broker/fetch_slice_reader.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "broker/handler_harness.h"
#include "broker/protocol/fetch.h"
#include "common/clock.h"
#include "common/no_sync_file_system.h"
#include "log/log.h"
#include "log/log_file_names.h"
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
  void MakeLog(int batches, FileSystem* fs = FileSystem::Default()) {
    LogConfig config;
    config.segment_bytes = 600;
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
