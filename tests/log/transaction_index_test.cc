// TransactionIndex (spec §7.4, §7.5, §15.11): lazy creation, exact bytes,
// ordering, search, truncation and the reader quirks.
#include "log/transaction_index.h"

#include <gtest/gtest.h>

#include "common/bytes.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

std::string Be64(uint64_t v) {
  std::string s;
  for (int i = 7; i >= 0; --i) s.push_back(char(v >> (8 * i)));
  return s;
}
std::string Encoded(const AbortedTxn& t) {
  return std::string("\0\0", 2) + Be64(uint64_t(t.producer_id)) + Be64(uint64_t(t.first_offset)) +
         Be64(uint64_t(t.last_offset)) + Be64(uint64_t(t.last_stable_offset));
}

// The file's bytes, or "<none>" when it cannot be read (absent).
std::string FileContents(testing::MemFileSystem& mem, const std::string& path) {
  auto bytes = mem.ReadFile(path);
  return bytes.ok() ? std::string(bytes->begin(), bytes->end()) : std::string("<none>");
}

const AbortedTxn kA{2000, 9, 19, 11};
const AbortedTxn kB{3000, 11, 20, 21};
const AbortedTxn kC{3000, 23, 35, 36};

TEST(TransactionIndexTest, FileIsCreatedLazilyByFirstAppend) {
  TempDir dir;
  const std::string path = dir.Join("0.txnindex");
  TransactionIndex index(path, 0);
  ASSERT_TRUE(index.Reset().ok());
  ASSERT_TRUE(index.TruncateTo(0).ok());
  ASSERT_TRUE(index.Flush().ok());
  EXPECT_FALSE(index.FileExists());
  EXPECT_TRUE(index.AllAbortedTxns()->empty());
  ASSERT_TRUE(index.Append(kA).ok());
  ASSERT_TRUE(index.Append(kB).ok());
  ASSERT_TRUE(index.Flush().ok());
  EXPECT_EQ(ReadFileToString(path), Encoded(kA) + Encoded(kB));
  EXPECT_EQ(ReadFileToString(path).size(), 68u);
  EXPECT_EQ(*index.AllAbortedTxns(), (std::vector<AbortedTxn>{kA, kB}));
}

TEST(TransactionIndexTest, AppendRequiresStrictlyIncreasingLastOffsetAcrossReopen) {
  TempDir dir;
  const std::string path = dir.Join("0.txnindex");
  {
    TransactionIndex index(path, 0);
    ASSERT_TRUE(index.Append(kB).ok());
    Status st = index.Append(AbortedTxn{1, 1, 20, 21});
    EXPECT_EQ(st.code(), StatusCode::kInvalidOffset);
    EXPECT_NE(st.message().find("20 is not greater than current last offset 20"), std::string::npos)
        << st.message();
  }
  TransactionIndex reopened(path, 0);
  EXPECT_EQ(reopened.Append(kA).code(), StatusCode::kInvalidOffset);
  ASSERT_TRUE(reopened.Append(kC).ok());
  EXPECT_EQ(ReadFileToString(path), Encoded(kB) + Encoded(kC));
}

TEST(TransactionIndexTest, CollectAbortedTxnsFiltersAndStopsAtUpperBound) {
  TempDir dir;
  TransactionIndex index(dir.Join("0.txnindex"), 0);
  for (const auto& t : {kA, kB, kC}) ASSERT_TRUE(index.Append(t).ok());
  auto r = index.CollectAbortedTxns(20, 100);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->aborted, (std::vector<AbortedTxn>{kB, kC}));  // kA ends at 19 < 20
  EXPECT_FALSE(r->is_complete);
  r = index.CollectAbortedTxns(0, 21);  // kB's LSO 21 >= 21 completes the search
  EXPECT_EQ(r->aborted, (std::vector<AbortedTxn>{kA, kB}));
  EXPECT_TRUE(r->is_complete);
  r = index.CollectAbortedTxns(0, 10);  // kA first 9 < 10, LSO 11 >= 10
  EXPECT_EQ(r->aborted, (std::vector<AbortedTxn>{kA}));
  EXPECT_TRUE(r->is_complete);
}

TEST(TransactionIndexTest, TruncateToDropsFirstEntryReachingOffsetAndAfter) {
  TempDir dir;
  const std::string path = dir.Join("0.txnindex");
  TransactionIndex index(path, 0);
  for (const auto& t : {kA, kB, kC}) ASSERT_TRUE(index.Append(t).ok());
  ASSERT_TRUE(index.TruncateTo(36).ok());
  EXPECT_EQ(ReadFileToString(path).size(), 102u);
  ASSERT_TRUE(index.TruncateTo(20).ok());
  EXPECT_EQ(ReadFileToString(path), Encoded(kA));
  ASSERT_TRUE(index.Append(kB).ok());  // last offset is 19 again
  ASSERT_TRUE(index.Reset().ok());
  EXPECT_TRUE(index.FileExists());
  EXPECT_EQ(ReadFileToString(path), "");
  ASSERT_TRUE(index.Append(kA).ok());
}

// The index keeps the file's end instead of asking the file before every
// append: each way the end moves must leave the next entry right after it.
TEST(TransactionIndexTest, AppendsLandAtTheFileEndAfterTruncateResetCloseAndAFailedWrite) {
  testing::MemFileSystem mem;
  testing::FaultInjectionFileSystem fs(&mem);
  const std::string path = "/0.txnindex";
  auto contents = [&] { return FileContents(mem, path); };
  {
    TransactionIndex index(path, 0, &fs);
    for (const auto& t : {kA, kB, kC}) ASSERT_TRUE(index.Append(t).ok());
    ASSERT_TRUE(index.TruncateTo(20).ok());
    ASSERT_TRUE(index.Append(kB).ok());
    EXPECT_EQ(contents(), Encoded(kA) + Encoded(kB));
    ASSERT_TRUE(index.Reset().ok());
    ASSERT_TRUE(index.Append(kA).ok());
    EXPECT_EQ(contents(), Encoded(kA));
    ASSERT_TRUE(index.Close().ok());
    ASSERT_TRUE(index.Append(kB).ok());  // a new handle: the end is read again
    EXPECT_EQ(contents(), Encoded(kA) + Encoded(kB));
    fs.FailAt(fs.op_count() + 1, testing::InjectedError::kEio);
    EXPECT_FALSE(index.Append(kC).ok());
    ASSERT_TRUE(index.Append(kC).ok());
    EXPECT_EQ(contents(), Encoded(kA) + Encoded(kB) + Encoded(kC));
  }
  // A file whose end is not a whole entry (a torn append): the next entry
  // goes after those bytes, as Kafka's FileChannel append does.
  const std::string torn = Encoded(kA) + std::string(10, '\x7f');
  {
    auto file = mem.Open(path, OpenMode::kTruncate);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE(
        (*file)
            ->WriteAt(0, ByteSpan(reinterpret_cast<const uint8_t*>(torn.data()), torn.size()))
            .ok());
  }
  TransactionIndex index(path, 0, &fs);
  ASSERT_TRUE(index.Append(kB).ok());
  ASSERT_TRUE(index.Append(kC).ok());
  EXPECT_EQ(contents(), torn + Encoded(kB) + Encoded(kC));
}

// Recovery buffers a segment's aborted transactions (AppendBuffered) and
// writes them at once (WritePending): in between, reads see them, ordering
// is checked as for Append, and any other change writes them first, so the
// file ends up as after one Append each.
TEST(TransactionIndexTest, BufferedEntriesReadAndLandAsIfAppendedOneByOne) {
  testing::MemFileSystem mem;
  testing::FaultInjectionFileSystem fs(&mem);
  const std::string path = "/0.txnindex";
  auto contents = [&] { return FileContents(mem, path); };
  TransactionIndex index(path, 0, &fs);
  ASSERT_TRUE(index.AppendBuffered(kA).ok());
  ASSERT_TRUE(index.AppendBuffered(kB).ok());
  EXPECT_EQ(index.AppendBuffered(kA).code(), StatusCode::kInvalidOffset);  // not after kB
  EXPECT_EQ(contents(), "<none>");                                         // nothing written yet
  auto all = index.AllAbortedTxns();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, (std::vector<AbortedTxn>{kA, kB}));
  const int64_t ops = fs.op_count();
  ASSERT_TRUE(index.WritePending().ok());
  EXPECT_EQ(fs.op_count() - ops, 2);  // the create and one write
  EXPECT_EQ(contents(), Encoded(kA) + Encoded(kB));
  ASSERT_TRUE(index.WritePending().ok());  // nothing left
  EXPECT_EQ(contents(), Encoded(kA) + Encoded(kB));

  // A live append, a truncation and a close each write what is buffered first.
  ASSERT_TRUE(index.AppendBuffered(kC).ok());
  ASSERT_TRUE(index.TruncateTo(35).ok());
  EXPECT_EQ(contents(), Encoded(kA) + Encoded(kB));
  ASSERT_TRUE(index.AppendBuffered(kC).ok());
  ASSERT_TRUE(index.Close().ok());
  EXPECT_EQ(contents(), Encoded(kA) + Encoded(kB) + Encoded(kC));
  ASSERT_TRUE(index.Reset().ok());
  ASSERT_TRUE(index.AppendBuffered(kA).ok());
  ASSERT_TRUE(index.Append(kB).ok());
  EXPECT_EQ(contents(), Encoded(kA) + Encoded(kB));

  // A failed write keeps the entries; the next write asks the file for its end.
  ASSERT_TRUE(index.AppendBuffered(kC).ok());
  fs.FailAt(fs.op_count() + 1, testing::InjectedError::kEio);
  EXPECT_FALSE(index.WritePending().ok());
  ASSERT_TRUE(index.WritePending().ok());
  EXPECT_EQ(contents(), Encoded(kA) + Encoded(kB) + Encoded(kC));

  // Deleting an index whose only entries are buffered finds the file they
  // would have created.
  TransactionIndex fresh("/1.txnindex", 1, &fs);
  ASSERT_TRUE(fresh.AppendBuffered(kC).ok());
  bool existed = false;
  ASSERT_TRUE(fresh.DeleteIfExists(&existed).ok());
  EXPECT_TRUE(existed);
  EXPECT_FALSE(mem.Exists("/1.txnindex"));
}

TEST(TransactionIndexTest, ReaderTakesVersionFromFirstByteAndIgnoresPartialTail) {
  TempDir dir;
  const std::string path = dir.Join("0.txnindex");
  std::string b = Encoded(kB);
  b[1] = 7;  // low byte of the int16 version: ignored by Kafka's reader
  std::string c = Encoded(kC);
  c[0] = char(0xff);  // first byte -1: not > 0, accepted
  WriteStringToFile(path, Encoded(kA) + b + c + std::string(33, 'z'));
  TransactionIndex index(path, 0);
  EXPECT_EQ(*index.AllAbortedTxns(), (std::vector<AbortedTxn>{kA, kB, kC}));
  std::string bad = Encoded(kA) + Encoded(kB);
  bad[34] = 1;
  WriteStringToFile(path, bad);
  auto r = index.AllAbortedTxns();
  ASSERT_TRUE(r.status().IsCorruption());
  EXPECT_NE(r.status().message().find("version 1"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("byte 34"), std::string::npos);
  EXPECT_NE(r.status().message().find(path), std::string::npos);
}

TEST(TransactionIndexTest, SanityCheckRequiresLastOffsetsAtOrAboveBase) {
  TempDir dir;
  const std::string path = dir.Join("20.txnindex");
  WriteStringToFile(path, Encoded(kB) + Encoded(kA));
  TransactionIndex index(path, 20);
  Status st = index.SanityCheck();
  ASSERT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("lastOffset=19"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("byte 34"), std::string::npos) << st.message();
  EXPECT_TRUE(TransactionIndex(dir.Join("none.txnindex"), 20).SanityCheck().ok());
  WriteStringToFile(path, Encoded(kB));
  EXPECT_TRUE(index.SanityCheck().ok());
}

TEST(TransactionIndexTest, RenameAndDeleteWorkWithAndWithoutFile) {
  TempDir dir;
  TransactionIndex index(dir.Join("0.txnindex"), 0);
  ASSERT_TRUE(index.RenameTo(dir.Join("0.txnindex.swap")).ok());  // no file yet
  ASSERT_TRUE(index.Append(kA).ok());
  EXPECT_EQ(ReadFileToString(dir.Join("0.txnindex.swap")), Encoded(kA));
  ASSERT_TRUE(index.RenameTo(dir.Join("0.txnindex")).ok());
  EXPECT_EQ(ReadFileToString(dir.Join("0.txnindex")), Encoded(kA));
  bool existed = false;
  ASSERT_TRUE(index.DeleteIfExists(&existed).ok());
  EXPECT_TRUE(existed);
  EXPECT_FALSE(index.FileExists());
}

TEST(TransactionIndexTest, AnIndexAssumedAbsentReadsEmptyUntilItsFirstAppend) {
  TempDir dir;
  const std::string path = dir.Join("0.txnindex");
  TransactionIndex index(path, 0);
  index.AssumeAbsent();
  EXPECT_FALSE(index.FileExists());
  EXPECT_TRUE(index.AllAbortedTxns()->empty());
  ASSERT_TRUE(index.Reset().ok());
  EXPECT_FALSE(FileSystem::Default()->Exists(path));  // Reset creates nothing
  ASSERT_TRUE(index.Append(kA).ok());
  EXPECT_TRUE(index.FileExists());
  EXPECT_EQ(*index.AllAbortedTxns(), (std::vector<AbortedTxn>{kA}));
  EXPECT_EQ(ReadFileToString(path), Encoded(kA));
}

}  // namespace
}  // namespace daruma
