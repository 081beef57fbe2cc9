// LoadTransaction (issue 25): a load that fails, or a crash at any step of a
// load, leaves the partition dir byte for byte as it was; only a load that
// succeeds changes it.
//  * every kind of change (writes, truncations, truncating opens, new files,
//    renames over files, removals, new directories) is undone, and undone
//    again after a crash at every step (power loss with and without a torn
//    write, and process kill);
//  * Kafka's transactional fixture with an offset overflow no split can fix
//    in segment 0 and its index deleted (support/damaged_fixture.h): the
//    load is refused and every file, including the 36 aborted transactions
//    of the .txnindex files, is unchanged;
//  * crash points inside that failing load, and inside a succeeding unclean
//    load: the next load finds the old state or the fully recovered one.
#include "recovery/load_transaction.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <vector>

#include "common/bytes.h"
#include "common/clock.h"
#include "common/forwarding_file_system.h"
#include "log/log_file_names.h"
#include "recovery/log_loader.h"
#include "support/damaged_fixture.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma::testing {
namespace {

using Image = std::map<std::string, std::vector<uint8_t>>;

constexpr char kDir[] = "/p/t-0";

std::vector<uint8_t> Bytes(std::initializer_list<int> v) {
  return std::vector<uint8_t>(v.begin(), v.end());
}

// "" when equal, else which paths differ and how (gtest would print every
// byte of every file).
std::string Diff(const Image& want, const Image& got) {
  std::string out;
  for (const auto& [path, bytes] : want) {
    auto it = got.find(path);
    if (it == got.end()) {
      out += " missing " + path + ";";
    } else if (it->second != bytes) {
      size_t i = 0;
      while (i < bytes.size() && i < it->second.size() && bytes[i] == it->second[i]) ++i;
      out += " changed " + path + " (size " + std::to_string(bytes.size()) + " -> " +
             std::to_string(it->second.size()) + ", first difference at " + std::to_string(i) +
             ");";
    }
  }
  for (const auto& [path, bytes] : got) {
    if (!want.count(path)) out += " extra " + path + ";";
  }
  return out;
}

void Put(FileSystem* fs, const std::string& path, const std::vector<uint8_t>& data) {
  auto f = fs->Open(path, OpenMode::kTruncate);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*f)->WriteAt(0, data).ok());
  ASSERT_TRUE((*f)->Sync().ok());
}

// The original dir: a file with content, a small one, a mostly-zero
// preallocated one, and one that stays untouched.
void Seed(MemFileSystem* fs) {
  ASSERT_TRUE(fs->CreateDir(kDir).ok());
  std::vector<uint8_t> a(300);
  for (size_t i = 0; i < a.size(); ++i) a[i] = uint8_t(i * 7 + 1);
  Put(fs, JoinPath(kDir, "a.log"), a);
  Put(fs, JoinPath(kDir, "b.snapshot"), Bytes({1, 2, 3, 4, 5}));
  // Its odd size and the bytes at unaligned positions exercise every way a
  // saved chunk's trailing zeros are cut.
  std::vector<uint8_t> c(200005, 0);
  c[8] = 9;
  c[150000] = 4;
  c[200001] = 3;
  Put(fs, JoinPath(kDir, "c.index"), c);
  Put(fs, JoinPath(kDir, "d.timeindex"), Bytes({7, 7}));
}

// One of every kind of change, through `fs`. Stops at the first error (a
// crash injected below).
Status Mutate(FileSystem* fs) {
  const std::string a = JoinPath(kDir, "a.log");
  const std::string b = JoinPath(kDir, "b.snapshot");
  const std::string c = JoinPath(kDir, "c.index");
  const std::string d = JoinPath(kDir, "d.timeindex");
  const std::vector<uint8_t> junk = Bytes({0xee, 0xee, 0xee});
  {
    DARUMA_ASSIGN_OR_RETURN(auto f, fs->Open(a, OpenMode::kReadWrite));
    DARUMA_RETURN_IF_ERROR(f->WriteAt(10, junk));
    DARUMA_RETURN_IF_ERROR(f->Truncate(50));
    DARUMA_RETURN_IF_ERROR(f->WriteAt(400, junk));
    DARUMA_RETURN_IF_ERROR(f->WriteAt(20, junk));
    DARUMA_RETURN_IF_ERROR(f->Sync());
  }
  {
    DARUMA_ASSIGN_OR_RETURN(auto f, fs->Open(c, OpenMode::kReadWrite));
    DARUMA_RETURN_IF_ERROR(f->Truncate(0));
    DARUMA_RETURN_IF_ERROR(f->Truncate(65536));
    DARUMA_RETURN_IF_ERROR(f->WriteAt(0, junk));
  }
  {
    DARUMA_ASSIGN_OR_RETURN(auto f, fs->Open(b, OpenMode::kTruncate));
    DARUMA_RETURN_IF_ERROR(f->WriteAt(0, junk));
  }
  const std::string fresh = JoinPath(kDir, "new.tmp");
  {
    DARUMA_ASSIGN_OR_RETURN(auto f, fs->Open(fresh, OpenMode::kCreate));
    DARUMA_RETURN_IF_ERROR(f->WriteAt(0, junk));
    DARUMA_RETURN_IF_ERROR(f->Sync());
  }
  DARUMA_RETURN_IF_ERROR(fs->SyncDir(kDir));
  DARUMA_RETURN_IF_ERROR(fs->Rename(fresh, b));  // over a file already changed
  {
    DARUMA_ASSIGN_OR_RETURN(auto f, fs->Open(fresh, OpenMode::kCreateExclusive));
    DARUMA_RETURN_IF_ERROR(f->WriteAt(0, junk));
  }
  DARUMA_RETURN_IF_ERROR(fs->Rename(fresh, d));  // over an untouched file
  DARUMA_RETURN_IF_ERROR(fs->Remove(d));
  const std::string q = JoinPath(kDir, "daruma-quarantine");
  DARUMA_RETURN_IF_ERROR(fs->CreateDir(q));
  DARUMA_RETURN_IF_ERROR(fs->Rename(a, JoinPath(q, "a.log@0")));
  {
    DARUMA_ASSIGN_OR_RETURN(auto f, fs->Open(JoinPath(q, "MANIFEST.jsonl"), OpenMode::kCreate));
    DARUMA_RETURN_IF_ERROR(f->WriteAt(0, junk));
    DARUMA_RETURN_IF_ERROR(f->Sync());
  }
  DARUMA_RETURN_IF_ERROR(fs->SetModifiedTimeMs(c, 5));
  DARUMA_RETURN_IF_ERROR(fs->SyncDir(q));
  return fs->SyncDir(kDir);
}

TEST(LoadTransactionTest, RollbackRestoresEveryKindOfChange) {
  MemFileSystem mem;
  Seed(&mem);
  const Image before = mem.Files("/p");
  auto txn = LoadTransaction::Begin(&mem, kDir);
  ASSERT_TRUE(Mutate(txn->fs()).ok());
  EXPECT_TRUE(txn->changed());
  EXPECT_NE(mem.Files("/p"), before);
  ASSERT_TRUE(txn->Rollback().ok());
  EXPECT_EQ(Diff(before, mem.Files("/p")), "");
  EXPECT_EQ(mem.Dirs("/p"), (std::vector<std::string>{"/p", kDir}));
}

// A preallocated index is sparse; its rollback leaves it so (helper-54: a
// rollback after ENOSPC wrote its megabytes of zeros out, failed on the
// full disk again, and every later start refilled what the operator freed).
TEST(LoadTransactionTest, RollbackLeavesAPreallocatedIndexSparse) {
  TempDir dir;
  const std::string index = dir.Join("00000000000000000000.index");
  constexpr uint64_t kPreallocated = 10 << 20;
  {
    auto f = FileSystem::Default()->Open(index, OpenMode::kCreate);
    ASSERT_TRUE(f.ok() && (*f)->WriteAt(0, Bytes({1, 2, 3, 4, 5, 6, 7, 8})).ok());
    ASSERT_TRUE((*f)->Truncate(kPreallocated).ok());
  }
  auto txn = LoadTransaction::Begin(FileSystem::Default(), dir.path());
  {
    // A rebuild that fills the whole file, saved in one record as the
    // presave of a crashed start, or an index mapped for append, saves it.
    auto f = txn->fs()->Open(index, OpenMode::kReadWrite);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_TRUE((*f)->WriteAt(0, std::vector<uint8_t>(kPreallocated, 0xab)).ok());
  }
  ASSERT_TRUE(txn->Rollback().ok());
  const std::string content = ReadFileToString(index);
  ASSERT_EQ(content.size(), kPreallocated);
  EXPECT_EQ(content.substr(0, 8), std::string("\x01\x02\x03\x04\x05\x06\x07\x08"));
  EXPECT_EQ(content.find_first_not_of('\0', 8), std::string::npos);
  struct stat st {};
  ASSERT_EQ(::stat(index.c_str(), &st), 0);
  EXPECT_LT(uint64_t(st.st_blocks) * 512, uint64_t(1) << 20) << "the zeros were written out";
}

// Names in a listing, sorted, but for the undo log's own.
std::vector<std::string> NamesOf(const Result<std::vector<DirEntry>>& listing) {
  std::vector<std::string> names;
  EXPECT_TRUE(listing.ok()) << listing.status().ToString();
  if (!listing.ok()) return names;
  for (const DirEntry& e : *listing) {
    if (e.name == kLoadJournalFileName || e.name == kLoadUndoDirName) continue;
    names.push_back(e.name + (e.is_directory ? "/" : ""));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The load lists its dir once and keeps the listing up to date through
// every kind of change (load_dir_listing.h): what it serves is what the dir
// holds.
TEST(LoadTransactionTest, TheLoadsListingFollowsEveryChange) {
  MemFileSystem mem;
  Seed(&mem);
  auto txn = LoadTransaction::Begin(&mem, kDir);
  EXPECT_EQ(NamesOf(txn->fs()->ListDir(kDir)), NamesOf(mem.ListDir(kDir)));
  ASSERT_TRUE(Mutate(txn->fs()).ok());
  {
    auto f = txn->fs()->Open(JoinPath(kDir, "e.index"), OpenMode::kCreateExclusive);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
  }
  ASSERT_TRUE(txn->fs()->Rename(JoinPath(kDir, "c.index"), JoinPath(kDir, "c.index.deleted")).ok());
  const std::vector<std::string> served = NamesOf(txn->fs()->ListDir(kDir));
  EXPECT_EQ(served, NamesOf(mem.ListDir(kDir)));
  EXPECT_NE(std::find(served.begin(), served.end(), "daruma-quarantine/"), served.end());
  EXPECT_EQ(std::find(served.begin(), served.end(), "a.log"), served.end());
  ASSERT_TRUE(txn->Rollback().ok());
  EXPECT_EQ(NamesOf(txn->fs()->ListDir(kDir)), NamesOf(mem.ListDir(kDir)))
      << "after the transaction, listings go to the dir";
}

// Counts the opens for reading under each path (a whole-file read is one).
class ReadCounter final : public ForwardingFileSystem {
 public:
  using ForwardingFileSystem::ForwardingFileSystem;
  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    if (mode == OpenMode::kRead) ++reads[path];
    return ForwardingFileSystem::Open(path, mode);
  }
  std::map<std::string, int> reads;
};

std::string Text(const Result<std::vector<uint8_t>>& bytes) {
  return bytes.ok() ? std::string(bytes->begin(), bytes->end()) : bytes.status().ToString();
}

Status WriteText(FileSystem* fs, const std::string& path, OpenMode mode, uint64_t at,
                 const std::string& text) {
  DARUMA_ASSIGN_OR_RETURN(auto f, fs->Open(path, mode));
  return f->WriteAt(at, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

// Counts existence checks.
class ExistsCounter final : public ForwardingFileSystem {
 public:
  using ForwardingFileSystem::ForwardingFileSystem;
  bool Exists(const std::string& path) override {
    ++checks;
    return ForwardingFileSystem::Exists(path);
  }
  Result<std::unique_ptr<File>> OpenWithSize(const std::string& path, OpenMode mode,
                                             uint64_t* size) override {
    ++checks;
    return ForwardingFileSystem::OpenWithSize(path, mode, size);
  }
  int checks = 0;
};

// A transaction over the seeded dir that holds its listing, counting from 0.
auto BeginWithTheListingHeld(MemFileSystem* mem, ExistsCounter* counter) {
  Seed(mem);
  auto txn = LoadTransaction::Begin(counter, kDir);
  EXPECT_TRUE(txn->fs()->ListDir(kDir).ok());  // held from now on
  counter->checks = 0;
  return txn;
}

// Opening with kTruncate saves the old bytes of a file that exists and
// records the creation of one that does not; with the load's listing held,
// the listing says which (no existence check), and a rollback still undoes
// both.
TEST(LoadTransactionTest, TheHeldListingSaysWhetherAFileOpenedToTruncateExists) {
  MemFileSystem mem;
  ExistsCounter counter(&mem);
  auto txn = BeginWithTheListingHeld(&mem, &counter);
  const std::string fresh = JoinPath(kDir, "00000000000000000042.snapshot");
  const std::string existing = JoinPath(kDir, "b.snapshot");
  ASSERT_TRUE(WriteText(txn->fs(), fresh, OpenMode::kTruncate, 0, "new").ok());
  ASSERT_TRUE(WriteText(txn->fs(), existing, OpenMode::kTruncate, 0, "x").ok());
  EXPECT_EQ(counter.checks, 0);
  EXPECT_EQ(Text(mem.ReadFile(existing)), "x");
  // A name this load created and removed again is absent from the listing too.
  ASSERT_TRUE(txn->fs()->Remove(fresh).ok());
  ASSERT_TRUE(WriteText(txn->fs(), fresh, OpenMode::kTruncate, 0, "again").ok());
  EXPECT_EQ(Text(mem.ReadFile(fresh)), "again");
  ASSERT_TRUE(txn->Rollback().ok());
  EXPECT_FALSE(mem.Exists(fresh));
  auto restored = mem.ReadFile(existing);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(*restored, Bytes({1, 2, 3, 4, 5}));
}

// An index a crashed start finds missing: opening it to read and write
// (IndexFile::Open) is answered NotFound by the held listing, with no stat;
// one the listing names still opens, and so does one the load created.
TEST(LoadTransactionTest, TheHeldListingSaysAFileToOpenForWritingIsMissing) {
  MemFileSystem mem;
  ExistsCounter counter(&mem);
  auto txn = BeginWithTheListingHeld(&mem, &counter);
  const std::string missing = JoinPath(kDir, "00000000000000000042.index");
  uint64_t size = 0;
  auto opened = txn->fs()->OpenWithSize(missing, OpenMode::kReadWrite, &size);
  EXPECT_TRUE(opened.status().IsNotFound()) << opened.status().ToString();
  EXPECT_EQ(counter.checks, 0);
  const std::string existing = JoinPath(kDir, "b.snapshot");
  auto found = txn->fs()->OpenWithSize(existing, OpenMode::kReadWrite, &size);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(size, 5u);
  ASSERT_TRUE(WriteText(txn->fs(), missing, OpenMode::kCreateExclusive, 0, "idx").ok());
  auto created = txn->fs()->OpenWithSize(missing, OpenMode::kReadWrite, &size);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(size, 3u);
  ASSERT_TRUE(txn->Rollback().ok());
  EXPECT_FALSE(mem.Exists(missing));
}

// A load reads each producer snapshot from disk at most once
// (load_snapshot_cache.h), and what it reads back is always what the file
// holds: after a whole write, a write in place, a rename over it, a removal,
// and after the transaction.
TEST(LoadTransactionTest, ASnapshotIsReadOnceAndAlwaysAsTheFileHoldsIt) {
  MemFileSystem mem;
  Seed(&mem);
  ReadCounter counter(&mem);
  auto txn = LoadTransaction::Begin(&counter, kDir);
  FileSystem* fs = txn->fs();
  const std::string s = JoinPath(kDir, "00000000000000000064.snapshot");
  const std::string t = JoinPath(kDir, "00000000000000000128.snapshot");
  ASSERT_TRUE(WriteText(fs, s, OpenMode::kTruncate, 0, "written").ok());
  EXPECT_EQ(Text(fs->ReadFile(s)), "written");
  EXPECT_EQ(counter.reads[s], 0) << "a snapshot written whole is not read back";
  ASSERT_TRUE(WriteText(fs, s, OpenMode::kReadWrite, 0, "W").ok());
  EXPECT_EQ(Text(fs->ReadFile(s)), "Written");
  EXPECT_EQ(Text(fs->ReadFile(s)), "Written");
  EXPECT_EQ(counter.reads[s], 1) << "changed in place: read once, then kept";
  ASSERT_TRUE(WriteText(fs, t, OpenMode::kTruncate, 0, "other").ok());
  ASSERT_TRUE(fs->Rename(t, s).ok());
  EXPECT_EQ(Text(fs->ReadFile(s)), "other");
  EXPECT_FALSE(fs->ReadFile(t).ok());
  ASSERT_TRUE(WriteText(fs, t, OpenMode::kTruncate, 3, "gap").ok());
  EXPECT_EQ(Text(fs->ReadFile(t)), Text(mem.ReadFile(t))) << "written with a hole";
  ASSERT_TRUE(fs->Remove(s).ok());
  EXPECT_TRUE(fs->ReadFile(s).status().IsNotFound());
  ASSERT_TRUE(WriteText(fs, s, OpenMode::kCreateExclusive, 0, "again").ok());
  ASSERT_TRUE(txn->Commit().ok());
  const int before = counter.reads[s];
  EXPECT_EQ(Text(fs->ReadFile(s)), "again");
  EXPECT_EQ(counter.reads[s], before + 1) << "after the transaction, reads go to the file";
}

TEST(LoadTransactionTest, CommitKeepsTheNewStateAndRemovesTheUndoDir) {
  MemFileSystem mem;
  Seed(&mem);
  auto txn = LoadTransaction::Begin(&mem, kDir);
  ASSERT_TRUE(Mutate(txn->fs()).ok());
  const Image after = mem.Files(std::string(kDir) + "/daruma-quarantine");
  ASSERT_TRUE(txn->Commit().ok());
  EXPECT_FALSE(mem.Exists(JoinPath(kDir, kLoadUndoDirName)));
  EXPECT_FALSE(mem.Exists(JoinPath(kDir, kLoadJournalFileName)));
  EXPECT_EQ(mem.Files(std::string(kDir) + "/daruma-quarantine"), after);
  EXPECT_FALSE(mem.Exists(JoinPath(kDir, "a.log")));
  EXPECT_EQ(*mem.ReadFile(JoinPath(kDir, "b.snapshot")), Bytes({0xee, 0xee, 0xee}));
  // After the commit the file system passes everything straight through.
  auto f = txn->fs()->Open(JoinPath(kDir, "b.snapshot"), OpenMode::kReadWrite);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Truncate(0).ok());
  EXPECT_FALSE(mem.Exists(JoinPath(kDir, kLoadUndoDirName)));
}

// The journal is a file beside the segments; the undo dir appears only once
// a file is moved aside (a removal), which most loads never do.
TEST(LoadTransactionTest, AWriteNeedsAJournalButNoUndoDir) {
  MemFileSystem mem;
  Seed(&mem);
  const Image before = mem.Files("/p");
  auto txn = LoadTransaction::Begin(&mem, kDir);
  auto f = txn->fs()->Open(JoinPath(kDir, "a.log"), OpenMode::kReadWrite);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->WriteAt(0, Bytes({9, 9})).ok());
  EXPECT_TRUE(mem.Exists(JoinPath(kDir, kLoadJournalFileName)));
  EXPECT_FALSE(mem.Exists(JoinPath(kDir, kLoadUndoDirName)));
  ASSERT_TRUE(txn->fs()->Remove(JoinPath(kDir, "b.snapshot")).ok());
  EXPECT_TRUE(mem.Exists(JoinPath(kDir, kLoadUndoDirName)));
  // Interrupted here: the next load rolls both back from the journal.
  txn.reset();
  auto rolled = LoadTransaction::RollBackInterrupted(&mem, kDir);
  ASSERT_TRUE(rolled.ok()) << rolled.status().ToString();
  EXPECT_TRUE(*rolled);
  EXPECT_EQ(Diff(before, mem.Files("/p")), "");
  EXPECT_EQ(mem.Dirs("/p"), (std::vector<std::string>{"/p", kDir}));
}

// The seeded dir with an empty undo dir, as an interrupted load leaves it;
// returns the undo dir.
std::string SeedWithUndoDir(MemFileSystem* mem) {
  Seed(mem);
  const std::string undo_dir = JoinPath(kDir, kLoadUndoDirName);
  EXPECT_TRUE(mem->CreateDir(undo_dir).ok());
  return undo_dir;
}

// A load interrupted under an older Daruma left its journal inside the undo
// dir (daruma-load-undo/JOURNAL): it is still rolled back.
TEST(LoadTransactionTest, AJournalInsideTheUndoDirIsRolledBack) {
  MemFileSystem mem;
  const std::string undo_dir = SeedWithUndoDir(&mem);
  const Image before = mem.Files("/p");
  const std::string created = JoinPath(kDir, "new.log");
  Put(&mem, created, Bytes({1, 2, 3}));
  Put(&mem, JoinPath(undo_dir, "JOURNAL"),
      EncodeUndoRecord({UndoRecord::Kind::kCreate, created, "", "", 0, {}}));
  auto rolled = LoadTransaction::RollBackInterrupted(&mem, kDir);
  ASSERT_TRUE(rolled.ok()) << rolled.status().ToString();
  EXPECT_TRUE(*rolled);
  EXPECT_EQ(Diff(before, mem.Files("/p")), "");
  EXPECT_FALSE(mem.Exists(undo_dir));
}

// Committing removes the journal first: an undo dir without one holds only
// originals a committed load had moved aside, and goes.
TEST(LoadTransactionTest, AnUndoDirWithoutAJournalIsACommittedLoadsLeftovers) {
  MemFileSystem mem;
  const std::string undo_dir = SeedWithUndoDir(&mem);
  const Image before = mem.Files("/p");
  Put(&mem, JoinPath(undo_dir, "0"), Bytes({7}));
  auto rolled = LoadTransaction::RollBackInterrupted(&mem, kDir);
  ASSERT_TRUE(rolled.ok()) << rolled.status().ToString();
  EXPECT_FALSE(*rolled);
  EXPECT_FALSE(mem.Exists(undo_dir));
  EXPECT_EQ(Diff(before, mem.Files("/p")), "");
}

TEST(LoadTransactionTest, NothingChangedWritesNoUndoDir) {
  MemFileSystem mem;
  Seed(&mem);
  auto txn = LoadTransaction::Begin(&mem, kDir);
  auto f = txn->fs()->Open(JoinPath(kDir, "a.log"), OpenMode::kReadWrite);
  ASSERT_TRUE(f.ok());
  std::vector<uint8_t> buf(10);
  ASSERT_TRUE((*f)->ReadAt(0, buf).ok());
  EXPECT_FALSE(txn->changed());
  EXPECT_FALSE(mem.Exists(JoinPath(kDir, kLoadUndoDirName)));
  ASSERT_TRUE(txn->Commit().ok());
}

// Power loss (with and without a torn last write) and process kill at every
// mutating step of Mutate: rolling back the image restores the original.
TEST(LoadTransactionTest, CrashAtEveryStepRollsBackToTheOriginal) {
  uint64_t total = 0;
  {
    MemFileSystem mem;
    Seed(&mem);
    FaultInjectionFileSystem fault(&mem);
    auto txn = LoadTransaction::Begin(&fault, kDir);
    ASSERT_TRUE(Mutate(txn->fs()).ok());
    total = fault.op_count();
  }
  ASSERT_GT(total, 20u);
  for (uint64_t n = 1; n <= total; ++n) {
    for (int mode = 0; mode < 3; ++mode) {
      SCOPED_TRACE("crash at op " + std::to_string(n) + " mode " + std::to_string(mode));
      MemFileSystem mem;
      Seed(&mem);
      const Image before = mem.Files("/p");
      MemFileSystem image;
      {
        FaultInjectionFileSystem fault(&mem, n);
        fault.CrashAt(n);
        {
          auto txn = LoadTransaction::Begin(&fault, kDir);
          EXPECT_FALSE(Mutate(txn->fs()).ok());
        }
        if (mode < 2) {
          ASSERT_TRUE(fault.MaterializeDurableState(&image, "/p", mode == 1).ok());
        }
      }
      MemFileSystem* after = mode < 2 ? &image : &mem;
      auto rolled = LoadTransaction::RollBackInterrupted(after, kDir);
      ASSERT_TRUE(rolled.ok()) << rolled.status().ToString();
      EXPECT_EQ(Diff(before, after->Files("/p")), "");
      EXPECT_FALSE(after->Exists(JoinPath(kDir, kLoadUndoDirName)));
    }
  }
}

// ---- LoadLog on Kafka's transactional fixture --------------------------------

constexpr char kTopic[] = "fixture-txn";

std::string FixtureLogDir() {
  return FixturesDir() + "/kafka-generated/transactional/logdir";
}

LoadLogParams FixtureParams(FileSystem* fs, const std::string& log_dir, bool clean,
                            ManualClock* clock) {
  LoadLogParams params;
  params.fs = fs;
  params.log_dir = log_dir;
  params.tp = TopicPartition{kTopic, 0};
  params.partition_dir = log_dir + "/" + params.tp.ToString();
  params.config.segment_index_bytes = 65536;
  params.config.index_interval_bytes = 1024;
  params.clock = clock;
  params.had_clean_shutdown = clean;
  params.recovery_point_checkpoint = clean ? 476 : 0;
  params.quarantine = true;
  return params;
}

int64_t AbortedTxnEntries(const Image& files) {
  int64_t bytes = 0;
  for (const auto& [path, data] : files) {
    if (HasSuffix(path, ".txnindex")) bytes += int64_t(data.size());
  }
  return bytes / 34;  // version(2) pid(8) first(8) last(8) lso(8)
}

TEST(LoadTransactionTest, RefusedTransactionalPartitionIsLeftExactlyAsFound) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const std::string log_dir = tmp.Join("logdir");
  CopyTree(FixtureLogDir(), log_dir);
  const std::string partition_dir = log_dir + "/" + kTopic + "-0";
  MakeSegmentZeroUnloadable(partition_dir);
  const Image before = ReadTree(partition_dir);
  ASSERT_EQ(AbortedTxnEntries(before), 36);

  ManualClock clock(1700000000000);
  PartitionRecoveryReport report;
  auto log = LoadLog(FixtureParams(FileSystem::Default(), log_dir, true, &clock), &report);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), StatusCode::kCorruption) << log.status().ToString();
  EXPECT_TRUE(report.left_unchanged);
  EXPECT_TRUE(report.quarantined.empty());
  const Image after = ReadTree(partition_dir);
  EXPECT_EQ(Diff(before, after), "");
  EXPECT_EQ(AbortedTxnEntries(after), 36);
  EXPECT_FALSE(std::filesystem::exists(partition_dir + "/" + kLoadUndoDirName));

  // Without the undo log the same refused load damages the dir (the bug of
  // issue 25): the check above would see it.
  LoadLogParams plain = FixtureParams(FileSystem::Default(), log_dir, true, &clock);
  plain.transactional = false;
  PartitionRecoveryReport plain_report;
  ASSERT_FALSE(LoadLog(plain, &plain_report).ok());
  EXPECT_FALSE(plain_report.left_unchanged);
  EXPECT_NE(Diff(before, ReadTree(partition_dir)), "");
}

// ---- A .txnindex is never shortened without a quarantine copy ----------------

std::vector<uint8_t> QuarantinedCopyOf(const PartitionRecoveryReport& report,
                                       const std::string& file) {
  for (const QuarantinedRange& q : report.quarantined) {
    if (BaseName(q.file) == file && !q.quarantine_path.empty()) {
      const std::string s = ReadFileToString(q.quarantine_path);
      return std::vector<uint8_t>(s.begin(), s.end());
    }
  }
  return {};
}

// A rebuild from the .log that finds fewer entries than the old .txnindex
// had (here one that names no ABORT marker: damage) never shortens it
// without a copy of the old bytes in quarantine. (An entry whose producer's
// ABORT marker is still at its last offset would be kept instead.)
TEST(LoadTransactionTest, RebuiltTxnIndexThatLostEntriesIsQuarantinedFirst) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const std::string log_dir = tmp.Join("logdir");
  CopyTree(FixtureLogDir(), log_dir);
  const std::string partition_dir = log_dir + "/" + kTopic + "-0";
  const std::string txn = partition_dir + "/00000000000000000000.txnindex";
  std::string bytes = ReadFileToString(txn);
  ASSERT_EQ(bytes.size(), 6 * 34u);
  uint8_t extra[34] = {};
  StoreBe64(extra + 2, 5000);  // producer
  StoreBe64(extra + 10, 72);   // first offset
  StoreBe64(extra + 18, 75);   // last offset: after every real entry, inside the segment
  StoreBe64(extra + 26, 76);
  bytes.append(reinterpret_cast<const char*>(extra), sizeof extra);
  WriteStringToFile(txn, bytes);
  std::filesystem::remove(partition_dir + "/00000000000000000000.index");

  ManualClock clock(1700000000000);
  PartitionRecoveryReport report;
  auto log = LoadLog(FixtureParams(FileSystem::Default(), log_dir, true, &clock), &report);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  for (const AbortedTxn& t : (*log)->AllAbortedTransactions()) EXPECT_NE(t.producer_id, 5000);
  EXPECT_EQ((*log)->AllAbortedTransactions().size(), 36u);
  EXPECT_EQ(QuarantinedCopyOf(report, "00000000000000000000.txnindex"),
            std::vector<uint8_t>(bytes.begin(), bytes.end()));
  ASSERT_TRUE((*log)->Close().ok());
  EXPECT_EQ(ReadFileToString(txn).size(), 6 * 34u);
}

// Entries whose markers are cut off with a torn .log tail go with it, and the
// old .txnindex is in quarantine.
TEST(LoadTransactionTest, TxnIndexEntriesCutWithTheLogAreQuarantined) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  const std::string log_dir = tmp.Join("logdir");
  CopyTree(FixtureLogDir(), log_dir);
  const std::string partition_dir = log_dir + "/" + kTopic + "-0";
  const std::string txn = partition_dir + "/00000000000000000000.txnindex";
  const std::string old = ReadFileToString(txn);
  const std::string log_path = partition_dir + "/00000000000000000000.log";
  std::string data = ReadFileToString(log_path);
  size_t cut = 0;  // 20 bytes into the first batch past the middle: torn
  for (size_t pos = 0; pos + 12 <= data.size() && cut == 0;) {
    if (pos >= data.size() / 2) cut = pos + 20;
    pos += 12 + LoadBe32(reinterpret_cast<const uint8_t*>(data.data()) + pos + 8);
  }
  ASSERT_GT(cut, 0u);
  data.resize(cut);
  WriteStringToFile(log_path, data);

  ManualClock clock(1700000000000);
  PartitionRecoveryReport report;
  auto log = LoadLog(FixtureParams(FileSystem::Default(), log_dir, false, &clock), &report);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  const int64_t leo = (*log)->log_end_offset();
  ASSERT_LT(leo, 80);
  for (const AbortedTxn& t : (*log)->AllAbortedTransactions()) EXPECT_LT(t.last_offset, leo);
  EXPECT_LT((*log)->AllAbortedTransactions().size(), 6u);
  EXPECT_EQ(QuarantinedCopyOf(report, "00000000000000000000.txnindex"),
            std::vector<uint8_t>(old.begin(), old.end()));
}

// Loads the fixture in `mem` (damaged or not) through a fault layer that
// crashes at op `n` (0: never); returns the number of ops of the load.
uint64_t LoadWithCrash(MemFileSystem* mem, bool clean, uint64_t n, MemFileSystem* image) {
  FaultInjectionFileSystem fault(mem, n + 1);
  if (n > 0) fault.CrashAt(n);
  ManualClock clock(1700000000000);
  {
    auto log = LoadLog(FixtureParams(&fault, "/logdir", clean, &clock), nullptr);
    if (log.ok() && n == 0) {
      EXPECT_TRUE((*log)->Close().ok());
    }
  }
  if (image != nullptr) {
    EXPECT_TRUE(fault.MaterializeDurableState(image, "/logdir", false).ok());
  }
  return fault.op_count();
}

void CrashEveryStepOfLoad(bool damaged) {
  DARUMA_REQUIRE_FIXTURES();
  TempDir tmp;
  CopyTree(FixtureLogDir(), tmp.Join("logdir"));
  if (damaged) MakeSegmentZeroUnloadable(tmp.Join("logdir") + "/" + kTopic + "-0");
  const std::string partition_dir = std::string("/logdir/") + kTopic + "-0";
  auto fresh = [&](MemFileSystem* mem) {
    ASSERT_TRUE(mem->CreateDir("/logdir").ok());
    for (const auto& [path, data] : ReadTree(tmp.Join("logdir"))) {
      const std::string rel = path.substr(tmp.path().size());
      ASSERT_TRUE(mem->CreateDir(ParentDir(rel)).ok());
      Put(mem, rel, data);
    }
  };
  MemFileSystem original;
  fresh(&original);
  const Image before = original.Files(partition_dir);
  // The reference: the same load, uninterrupted (unclean, so it recovers
  // segment 0 on; a damaged dir is refused).
  MemFileSystem reference;
  fresh(&reference);
  const uint64_t total = LoadWithCrash(&reference, false, 0, nullptr);
  const Image recovered = reference.Files(partition_dir);
  if (damaged) {
    EXPECT_EQ(Diff(before, recovered), "");
  }
  ASSERT_GT(total, 5u);
  for (uint64_t n = 1; n <= total; ++n) {
    // Power loss (only what was synced survives), then process kill (the
    // page cache survives).
    for (int kill = 0; kill < 2; ++kill) {
      SCOPED_TRACE("crash at op " + std::to_string(n) + (kill ? " (kill)" : " (power loss)"));
      MemFileSystem mem;
      fresh(&mem);
      MemFileSystem image;
      LoadWithCrash(&mem, false, n, kill ? nullptr : &image);
      MemFileSystem& after = kill ? mem : image;
      auto rolled = LoadTransaction::RollBackInterrupted(&after, partition_dir);
      ASSERT_TRUE(rolled.ok()) << rolled.status().ToString();
      const Image now = after.Files(partition_dir);
      if (damaged) {
        EXPECT_EQ(Diff(before, now), "");
        continue;
      }
      // Old state, or the new one past the commit; either way the next load
      // ends where an uninterrupted one did.
      if (now != before) {
        EXPECT_EQ(AbortedTxnEntries(now), 36);
      }
      LoadWithCrash(&after, false, 0, nullptr);
      EXPECT_EQ(Diff(recovered, after.Files(partition_dir)), "");
    }
  }
}

TEST(LoadTransactionTest, CrashInsideARefusedLoadLeavesTheOldState) {
  CrashEveryStepOfLoad(true);
}

TEST(LoadTransactionTest, CrashInsideASucceedingLoadLeavesOldOrNewState) {
  CrashEveryStepOfLoad(false);
}

}  // namespace
}  // namespace daruma::testing
