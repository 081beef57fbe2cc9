// The load undo pack (load_undo_pack.h): a batched start's presaved undo
// records for all of a dir's partitions in one file.
//  * a packed presave creates no journal file until the load needs a record
//    the presave did not foresee; that journal then starts with the packed
//    records, so it alone undoes the load;
//  * the pack rolls back every partition it names, with or without a
//    journal of its own (also a torn one), then goes;
//  * `check` applies one partition's packed records, leaving the pack;
//  * a rollback in the loading process reads its packed records back.
// The crash matrix of the batched start is batched_sync_crash_test.cc.
#include "recovery/load_undo_pack.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "recovery/load_transaction.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma::testing {
namespace {

using Image = std::map<std::string, std::vector<uint8_t>>;

constexpr char kLogDir[] = "/logs";

std::string PartitionPath(int p) {
  return JoinPath(kLogDir, "t-" + std::to_string(p));
}

void WriteWhole(FileSystem* fs, const std::string& path, const std::vector<uint8_t>& data) {
  auto f = fs->Open(path, OpenMode::kTruncate);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*f)->WriteAt(0, data).ok());
  ASSERT_TRUE((*f)->Sync().ok());
}

// A crashed partition as the presave finds it: a segment, its preallocated
// index and a snapshot.
void SeedPartition(MemFileSystem* fs, int p) {
  const std::string dir = PartitionPath(p);
  ASSERT_TRUE(fs->CreateDir(dir).ok());
  WriteWhole(fs, JoinPath(dir, "00000000000000000000.log"),
             std::vector<uint8_t>(100, uint8_t(p + 1)));
  std::vector<uint8_t> index(4096, 0);
  index[3] = uint8_t(p + 7);
  WriteWhole(fs, JoinPath(dir, "00000000000000000000.index"), index);
  WriteWhole(fs, JoinPath(dir, "00000000000000000000.snapshot"), {1, 2, uint8_t(p)});
}

// The pack of kLogDir, created as the batched start's presave creates it.
std::shared_ptr<LoadUndoPackWriter> NewPack(MemFileSystem* fs) {
  auto pack = LoadUndoPackWriter::Create(fs, kLogDir);
  EXPECT_TRUE(pack.ok()) << pack.status().ToString();
  return pack.ok() ? *pack : nullptr;
}

// Begins partition p's transaction and presaves it into `pack`, as the
// batched start's presave does.
std::shared_ptr<LoadTransaction> PackedPresave(MemFileSystem* fs, int p,
                                               std::shared_ptr<LoadUndoPackWriter> pack) {
  const std::string dir = PartitionPath(p);
  auto txn = LoadTransaction::Begin(fs, dir);
  auto listing = fs->ListDir(dir);
  EXPECT_TRUE(listing.ok());
  Status st = txn->Presave(*listing, {JoinPath(dir, "00000000000000000000.index")},
                           {JoinPath(dir, "00000000000000000000.snapshot")}, pack);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return txn;
}

// What the presave foresees: the index rewritten, the snapshot replaced, a
// new snapshot.
void ForeseenChanges(FileSystem* fs, int p) {
  const std::string dir = PartitionPath(p);
  auto index = fs->Open(JoinPath(dir, "00000000000000000000.index"), OpenMode::kReadWrite);
  ASSERT_TRUE(index.ok());
  const std::vector<uint8_t> entry(8, 9);
  ASSERT_TRUE((*index)->WriteAt(0, entry).ok());
  ASSERT_TRUE((*index)->Truncate(8).ok());
  ASSERT_TRUE(fs->Remove(JoinPath(dir, "00000000000000000000.snapshot")).ok());
  WriteWhole(fs, JoinPath(dir, "00000000000000000000.snapshot"), {5, 5});
  WriteWhole(fs, JoinPath(dir, "00000000000000000064.snapshot"), {6});
}

// One the presave does not foresee: the .log's tail cut.
void UnforeseenChange(FileSystem* fs, int p) {
  auto log = fs->Open(JoinPath(PartitionPath(p), "00000000000000000000.log"), OpenMode::kReadWrite);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE((*log)->Truncate(40).ok());
}

TEST(LoadUndoPackTest, APackedPresaveBeginsAJournalOnlyForAChangeItDidNotForesee) {
  MemFileSystem mem;
  ASSERT_TRUE(mem.CreateDir(kLogDir).ok());
  SeedPartition(&mem, 0);
  const std::string journal = JoinPath(PartitionPath(0), kLoadJournalFileName);
  auto txn = PackedPresave(&mem, 0, NewPack(&mem));
  EXPECT_GT(txn->packed_size(), 0u);
  EXPECT_TRUE(txn->changed());
  EXPECT_FALSE(mem.Exists(journal));
  ForeseenChanges(txn->fs(), 0);
  EXPECT_FALSE(mem.Exists(journal));
  UnforeseenChange(txn->fs(), 0);
  ASSERT_TRUE(mem.Exists(journal));
  EXPECT_TRUE(txn->HasFilesOfItsOwn());
  auto bytes = mem.ReadFile(journal);
  auto packed = mem.ReadFile(JoinPath(kLogDir, kLoadUndoPackFileName));
  ASSERT_TRUE(bytes.ok() && packed.ok());
  ASSERT_EQ(packed->size(), txn->packed_size());
  ASSERT_GT(bytes->size(), packed->size());
  EXPECT_TRUE(std::equal(packed->begin(), packed->end(), bytes->begin()))
      << "the journal starts with the packed records";
}

TEST(LoadUndoPackTest, ThePackRollsBackEveryPartitionItNamesThenGoes) {
  MemFileSystem mem;
  ASSERT_TRUE(mem.CreateDir(kLogDir).ok());
  for (int p = 0; p < 3; ++p) SeedPartition(&mem, p);
  const Image before = mem.Files(kLogDir);
  std::vector<std::shared_ptr<LoadTransaction>> txns;
  auto pack = NewPack(&mem);
  for (int p = 0; p < 3; ++p) txns.push_back(PackedPresave(&mem, p, pack));
  // Partition 0 only foreseen changes; 1 also one of its own (a journal);
  // 2 also one, but its journal is torn after the packed records' copy.
  for (int p = 0; p < 3; ++p) ForeseenChanges(txns[size_t(p)]->fs(), p);
  UnforeseenChange(txns[1]->fs(), 1);
  UnforeseenChange(txns[2]->fs(), 2);
  const std::string journal2 = JoinPath(PartitionPath(2), kLoadJournalFileName);
  {
    auto f = mem.Open(journal2, OpenMode::kReadWrite);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Truncate(txns[2]->packed_size() / 2).ok());
  }
  txns.clear();  // a crash: nothing is committed
  pack.reset();
  auto rolled = RollBackLoadUndoPack(&mem, kLogDir);
  ASSERT_TRUE(rolled.ok()) << rolled.status().ToString();
  EXPECT_EQ(*rolled,
            (std::vector<std::string>{PartitionPath(0), PartitionPath(1), PartitionPath(2)}));
  // Partition 2's torn journal undid only part of its truncation's record,
  // so the cut .log stays cut: that change was never recorded durably, so a
  // real crash could not have made it. Everything the pack covers is back.
  Image after = mem.Files(kLogDir);
  const std::string log2 = JoinPath(PartitionPath(2), "00000000000000000000.log");
  after.erase(log2);
  Image want = before;
  want.erase(log2);
  EXPECT_EQ(after, want);
  EXPECT_FALSE(mem.Exists(JoinPath(kLogDir, kLoadUndoPackFileName)));
  for (int p = 0; p < 3; ++p) {
    EXPECT_FALSE(mem.Exists(JoinPath(PartitionPath(p), kLoadJournalFileName)));
    EXPECT_FALSE(mem.Exists(JoinPath(PartitionPath(p), kLoadUndoDirName)));
  }
  // Without a pack, nothing to do.
  rolled = RollBackLoadUndoPack(&mem, kLogDir);
  ASSERT_TRUE(rolled.ok());
  EXPECT_TRUE(rolled->empty());
}

TEST(LoadUndoPackTest, CheckAppliesOnePartitionsPackedRecordsAndLeavesThePack) {
  MemFileSystem mem;
  ASSERT_TRUE(mem.CreateDir(kLogDir).ok());
  for (int p = 0; p < 2; ++p) SeedPartition(&mem, p);
  const Image p0 = mem.Files(PartitionPath(0));
  auto pack = NewPack(&mem);
  std::vector<std::shared_ptr<LoadTransaction>> txns = {PackedPresave(&mem, 0, pack),
                                                        PackedPresave(&mem, 1, pack)};
  ForeseenChanges(txns[0]->fs(), 0);
  ForeseenChanges(txns[1]->fs(), 1);
  txns.clear();
  auto records = PackedUndoRecordsOf(&mem, kLogDir, PartitionPath(0));
  ASSERT_TRUE(records.ok());
  ASSERT_FALSE(records->empty());
  for (const UndoRecord& r : *records) {
    EXPECT_EQ(r.kind == UndoRecord::Kind::kCreateAny ? r.path : ParentDir(r.path),
              PartitionPath(0));
  }
  PartitionRecoveryReport report;
  ASSERT_TRUE(
      LoadTransaction::RollBackInterruptedWithPack(&mem, kLogDir, PartitionPath(0), &report).ok());
  EXPECT_EQ(mem.Files(PartitionPath(0)), p0);
  ASSERT_EQ(report.warnings.size(), 1u);
  EXPECT_NE(report.warnings[0].find(kLoadUndoPackFileName), std::string::npos);
  EXPECT_TRUE(mem.Exists(JoinPath(kLogDir, kLoadUndoPackFileName)));
}

TEST(LoadUndoPackTest, ARollbackInTheLoadingProcessReadsItsPackedRecordsBack) {
  MemFileSystem mem;
  ASSERT_TRUE(mem.CreateDir(kLogDir).ok());
  SeedPartition(&mem, 0);
  const Image before = mem.Files(PartitionPath(0));
  auto txn = PackedPresave(&mem, 0, NewPack(&mem));
  ForeseenChanges(txn->fs(), 0);
  EXPECT_FALSE(mem.Exists(JoinPath(PartitionPath(0), kLoadJournalFileName)));
  ASSERT_TRUE(txn->Rollback().ok());
  EXPECT_EQ(mem.Files(PartitionPath(0)), before);
}

// A rebuilt index is created exclusively. Under a name the presaved listing
// lacks, that takes no existence check and no record (the kCreateAny record
// removes it); under a listed name it is refused or recorded as before.
TEST(LoadUndoPackTest, AnExclusiveCreateOfAnUnlistedNameIsUndoneByTheListing) {
  MemFileSystem mem;
  ASSERT_TRUE(mem.CreateDir(kLogDir).ok());
  SeedPartition(&mem, 0);
  const std::string dir = PartitionPath(0);
  const Image before = mem.Files(dir);
  auto txn = PackedPresave(&mem, 0, NewPack(&mem));
  {
    auto f = txn->fs()->Open(JoinPath(dir, "00000000000000000000.timeindex"),
                             OpenMode::kCreateExclusive);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_TRUE((*f)->WriteAt(0, std::vector<uint8_t>(12, 3)).ok());
  }
  auto again =
      txn->fs()->Open(JoinPath(dir, "00000000000000000000.index"), OpenMode::kCreateExclusive);
  EXPECT_FALSE(again.ok()) << "a listed name that exists is not created over";
  EXPECT_FALSE(mem.Exists(JoinPath(dir, kLoadJournalFileName))) << "no record of its own";
  EXPECT_EQ(mem.Files(dir).size(), before.size() + 1);
  ASSERT_TRUE(txn->Rollback().ok());
  EXPECT_EQ(mem.Files(dir), before);
}

}  // namespace
}  // namespace daruma::testing
