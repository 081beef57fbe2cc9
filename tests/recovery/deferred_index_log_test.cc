// A log whose load left indexes deferred (IndexFile::Options::defer_new_file:
// rebuilt because their files were missing, kept in memory until a flush or
// close needs their bytes on disk) must answer and change exactly as the same
// log with those files present: every lookup, truncation, retention and the
// files a close leaves.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "recovery/log_loader_fixture.h"

namespace daruma {
namespace {

// Every regular file under `dir` (names relative to it) with its bytes.
std::map<std::string, std::string> FilesOf(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fsys::directory_iterator(dir)) {
    if (e.is_regular_file()) out[e.path().filename().string()] = ReadFileToString(e.path());
  }
  return out;
}

class DeferredIndexLogTest : public LogLoaderTest {
 protected:
  // Loads the partition dir of `log_dir` (a copy of part_) as Load does,
  // unclean, recovery point 60, without its own undo log: with one, LoadLog
  // creates the deferred files before it commits.
  Result<std::unique_ptr<Log>> LoadCopy(const std::string& log_dir) {
    transactional_ = false;
    LoadLogParams p = Params(false, 60);
    p.log_dir = log_dir;
    p.partition_dir = log_dir + "/t-0";
    PartitionRecoveryReport report;
    return LoadLog(p, &report);
  }

  // A batch of producer 9 (not the fixture's 7, whose sequences a truncation
  // moves), `records` records at timestamp `ts`.
  static Bytes NewBatch(int32_t base_sequence, int64_t ts, int records = 3) {
    BatchBuilderOptions o;
    o.producer_id = 9;
    o.producer_epoch = 0;
    o.base_sequence = base_sequence;
    std::vector<RecordInput> in;
    for (int r = 0; r < records; ++r) in.push_back({ts, "n", std::string(80, 'w'), {}});
    auto bytes = BuildRecordBatch(o, in);
    EXPECT_TRUE(bytes.ok());
    return bytes.ok() ? *bytes : Bytes{};
  }
};

// Two copies of one log, one with every index of the segments below the
// recovery point removed (their indexes stay deferred after the load), the
// other intact, go through the same operations; each answer and, after the
// close, every file must be the same, but for the renamed index files of a
// deleted segment, which the copy without them never had.
TEST_F(DeferredIndexLogTest, AnswersAndLeavesTheSameFilesAsTheLogWithItsIndexes) {
  WriteLog(3, 10);  // segments 0, 30 and 60; log end 90
  const std::string with = tmp_.Join("with");
  const std::string without = tmp_.Join("without");
  for (const std::string& d : {with, without}) {
    fsys::create_directories(d);
    fsys::copy(part_, d + "/t-0", fsys::copy_options::recursive);
  }
  for (int64_t base : {0, 30}) {
    for (const char* ext : {".index", ".timeindex"}) {
      fsys::remove(without + "/t-0/" + FilenamePrefixFromOffset(base) + ext);
    }
  }
  auto a = LoadCopy(with);
  auto b = LoadCopy(without);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  Log& la = **a;
  Log& lb = **b;
  ASSERT_FALSE(fsys::exists(without + "/t-0/" + FilenamePrefixFromOffset(0) + ".index"))
      << "the load was to leave the index deferred";

  auto same_reads = [&](const char* when) {
    SCOPED_TRACE(when);
    ASSERT_EQ(la.log_end_offset(), lb.log_end_offset());
    for (int64_t offset = la.log_start_offset(); offset < la.log_end_offset(); offset += 7) {
      for (int32_t max_bytes : {1, 300, 1 << 20}) {
        auto ra = la.Read(offset, max_bytes, FetchIsolation::kLogEnd, true);
        auto rb = lb.Read(offset, max_bytes, FetchIsolation::kLogEnd, true);
        ASSERT_EQ(ra.ok(), rb.ok()) << offset;
        if (!ra.ok()) continue;
        EXPECT_EQ(ra->records, rb->records) << "offset " << offset << ", max " << max_bytes;
      }
    }
    for (int64_t ts :
         {int64_t(0), kNow - 1000, kNow - 995, kNow - 991, kNow - 990, kNow + 5, kNow + 1000000}) {
      auto ta = la.FetchOffsetByTimestamp(ts);
      auto tb = lb.FetchOffsetByTimestamp(ts);
      ASSERT_TRUE(ta.ok() && tb.ok()) << ts;
      EXPECT_EQ(*ta, *tb) << "timestamp " << ts;
    }
    auto ma = la.FetchMaxTimestampOffset();
    auto mb = lb.FetchMaxTimestampOffset();
    ASSERT_TRUE(ma.ok() && mb.ok());
    EXPECT_EQ(*ma, *mb);
  };
  same_reads("after the load");

  // A truncation into a segment whose index is deferred, and past the next.
  for (Log* log : {&la, &lb}) {
    auto truncated = log->TruncateTo(45);
    ASSERT_TRUE(truncated.ok()) << truncated.status().ToString();
  }
  same_reads("after truncating to 45");
  auto on_disk = [&](int64_t base) {
    return fsys::exists(without + "/t-0/" + FilenamePrefixFromOffset(base) + ".index");
  };
  EXPECT_FALSE(on_disk(0));
  EXPECT_FALSE(on_disk(30));

  // Retention past the first segment, whose index never reached the disk.
  for (Log* log : {&la, &lb}) {
    log->UpdateHighWatermark(log->log_end_offset());
    ASSERT_TRUE(log->MaybeIncrementLogStartOffset(31).ok());
    auto deleted = log->DeleteOldSegments();
    ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  }
  EXPECT_EQ(la.segment_base_offsets(), lb.segment_base_offsets());
  same_reads("after retention");
  // Renamed to .deleted for the asynchronous delete; a deferred index had no
  // file to rename.
  EXPECT_TRUE(fsys::exists(with + "/t-0/" + FilenamePrefixFromOffset(0) + ".index.deleted"));
  EXPECT_FALSE(fsys::exists(without + "/t-0/" + FilenamePrefixFromOffset(0) + ".index.deleted"));
  EXPECT_FALSE(on_disk(30)) << "retention created the deferred index of a segment it kept";

  // New data at later timestamps, a roll, and more.
  int32_t seq = 0;
  for (int step = 0; step < 12; ++step) {
    if (step == 6) {
      ASSERT_TRUE(la.Roll().ok());
      ASSERT_TRUE(lb.Roll().ok());
    }
    const Bytes batch = NewBatch(seq, kNow + step);
    seq += 3;
    for (Log* log : {&la, &lb}) {
      auto info = log->AppendAsLeader(batch, 3);
      ASSERT_TRUE(info.ok()) << info.status().ToString();
    }
  }
  same_reads("after appends and a roll");

  ASSERT_TRUE(la.Close().ok());
  ASSERT_TRUE(lb.Close().ok());
  const auto files_a = FilesOf(with + "/t-0");
  const auto files_b = FilesOf(without + "/t-0");
  std::vector<std::string> names_a, names_b;
  for (const auto& [name, bytes] : files_a) {
    if (!name.ends_with("index.deleted")) names_a.push_back(name);
  }
  for (const auto& [name, bytes] : files_b) names_b.push_back(name);
  ASSERT_EQ(names_a, names_b);
  for (const std::string& name : names_a) {
    EXPECT_EQ(files_b.at(name), files_a.at(name)) << name;
  }
}

}  // namespace
}  // namespace daruma
