// FaultInjectionFileSystem and MemFileSystem: op counting, crash/EIO/ENOSPC
// injection and the durable image after a power loss (LazyFS model).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/bytes.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"

namespace daruma::testing {
namespace {

std::vector<uint8_t> B(const std::string& s) {
  return {s.begin(), s.end()};
}
std::string S(const std::vector<uint8_t>& v) {
  return {v.begin(), v.end()};
}

// A fresh in-memory base with /data existing (adopted as durable).
struct Rig {
  MemFileSystem base;
  std::unique_ptr<FaultInjectionFileSystem> fs;
  explicit Rig(uint64_t seed = 1) {
    EXPECT_TRUE(base.CreateDir("/data").ok());
    fs = std::make_unique<FaultInjectionFileSystem>(&base, seed);
  }
  std::map<std::string, std::vector<uint8_t>> Durable(bool tear = false) {
    MemFileSystem image;
    Status st = fs->MaterializeDurableState(&image, "/data", tear);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return image.Files("/data");
  }
};

TEST(MemFileSystemTest, BasicOperationsFollowPosix) {
  MemFileSystem fs;
  ASSERT_TRUE(fs.CreateDir("/a/b").ok());
  EXPECT_TRUE(fs.Exists("/a"));
  EXPECT_EQ(fs.Open("/a/missing", OpenMode::kRead).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(fs.Open("/nodir/x", OpenMode::kCreate).status().code(), StatusCode::kNotFound);
  auto f = fs.Open("/a/b/f", OpenMode::kCreate);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->WriteAt(3, B("xyz")).ok());
  EXPECT_EQ(*fs.FileSize("/a/b/f"), 6u);
  EXPECT_EQ(*fs.ReadFile("/a/b/f"), (std::vector<uint8_t>{0, 0, 0, 'x', 'y', 'z'}));
  EXPECT_FALSE(fs.Open("/a/b/f", OpenMode::kCreateExclusive).ok());
  ASSERT_TRUE(fs.Rename("/a/b", "/a/c").ok());
  EXPECT_FALSE(fs.Exists("/a/b/f"));
  EXPECT_EQ(*fs.FileSize("/a/c/f"), 6u);
  // The open handle survives the rename, like an fd.
  ASSERT_TRUE((*f)->Truncate(1).ok());
  EXPECT_EQ(*fs.FileSize("/a/c/f"), 1u);
  auto list = fs.ListDir("/a");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].name, "c");
  EXPECT_TRUE((*list)[0].is_directory);
  EXPECT_FALSE(fs.Remove("/a/c").ok());  // a directory
  ASSERT_TRUE(fs.Remove("/a/c/f").ok());
  EXPECT_EQ(fs.Remove("/a/c/f").code(), StatusCode::kNotFound);
  ASSERT_TRUE(fs.RemoveAll("/a").ok());
  EXPECT_FALSE(fs.Exists("/a/c"));
}

TEST(FaultInjectionFileSystemTest, CountsEveryMutatingOpInOrder) {
  Rig rig;
  auto& fs = *rig.fs;
  auto f = fs.Open("/data/x", OpenMode::kCreate);  // 1 create
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->WriteAt(0, B("hello")).ok());     // 2 write
  ASSERT_TRUE((*f)->Sync().ok());                     // 3 sync
  ASSERT_TRUE(fs.ReadFile("/data/x").ok());           // reads are not counted
  ASSERT_TRUE(fs.Rename("/data/x", "/data/y").ok());  // 4
  ASSERT_TRUE(fs.CreateDir("/data/d").ok());          // 5
  ASSERT_TRUE(fs.SyncDir("/data").ok());              // 6
  ASSERT_TRUE(fs.Remove("/data/y").ok());             // 7
  ASSERT_TRUE((*f)->Truncate(0).ok());                // 8
  EXPECT_EQ(fs.op_count(), 8u);
  const auto log = fs.op_log();
  ASSERT_EQ(log.size(), 8u);
  EXPECT_EQ(log[1], "2 write /data/x @0+5");
  EXPECT_EQ(log[3], "4 rename /data/x -> /data/y");
  EXPECT_EQ(log[5], "6 sync-dir /data");
}

TEST(FaultInjectionFileSystemTest, CrashFailsTheOpAndEverythingAfter) {
  Rig rig;
  auto& fs = *rig.fs;
  fs.CrashAt(3);
  auto f = fs.Open("/data/x", OpenMode::kCreate);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->WriteAt(0, B("abc")).ok());
  Status st = (*f)->WriteAt(3, B("def"));  // op 3
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.IsIoError());
  EXPECT_NE(st.message().find("injected crash at op 3 write /data/x @3+3"), std::string::npos)
      << st.message();
  EXPECT_TRUE(fs.crashed());
  EXPECT_EQ(S(*rig.base.ReadFile("/data/x")), "abc");  // op 3 did not happen
  std::vector<uint8_t> buf(3);
  EXPECT_FALSE((*f)->ReadAt(0, buf).ok());  // the process is dead: reads fail too
  EXPECT_FALSE(fs.ListDir("/data").ok());
  EXPECT_FALSE(fs.Exists("/data/x"));
}

TEST(FaultInjectionFileSystemTest, PowerLossKeepsOnlySyncedDataAndSyncedNames) {
  Rig rig;
  auto& fs = *rig.fs;
  {
    auto f = fs.Open("/data/synced", OpenMode::kCreate);
    ASSERT_TRUE((*f)->WriteAt(0, B("durable")).ok());
    ASSERT_TRUE((*f)->Sync().ok());
    ASSERT_TRUE((*f)->WriteAt(7, B(" volatile")).ok());
  }
  ASSERT_TRUE(fs.SyncDir("/data").ok());
  {
    // Synced contents, but its name was never made durable.
    auto f = fs.Open("/data/unnamed", OpenMode::kCreate);
    ASSERT_TRUE((*f)->WriteAt(0, B("lost")).ok());
    ASSERT_TRUE((*f)->Sync().ok());
  }
  fs.CrashAt(fs.op_count() + 1);
  EXPECT_FALSE(fs.SyncDir("/data").ok());
  auto files = rig.Durable();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(S(files["/data/synced"]), "durable");
  // The process-kill image (the base) still has everything.
  EXPECT_EQ(S(*rig.base.ReadFile("/data/synced")), "durable volatile");
  EXPECT_TRUE(rig.base.Exists("/data/unnamed"));
}

TEST(FaultInjectionFileSystemTest, RenameIsDurableOnlyAfterSyncDir) {
  Rig rig;
  auto& fs = *rig.fs;
  ASSERT_TRUE(fs.WriteFileAtomically("/data/cp", B("v1")).ok());
  {
    auto tmp = fs.Open("/data/cp.tmp", OpenMode::kTruncate);
    ASSERT_TRUE((*tmp)->WriteAt(0, B("v2")).ok());
    ASSERT_TRUE((*tmp)->Sync().ok());
  }
  ASSERT_TRUE(fs.Rename("/data/cp.tmp", "/data/cp").ok());
  auto before = rig.Durable();
  EXPECT_EQ(S(before["/data/cp"]), "v1");  // the rename is not durable yet
  ASSERT_TRUE(fs.SyncDir("/data").ok());
  auto after = rig.Durable();
  EXPECT_EQ(after.size(), 1u);
  EXPECT_EQ(S(after["/data/cp"]), "v2");
}

TEST(FaultInjectionFileSystemTest, AdoptsPreexistingTreeAsDurable) {
  MemFileSystem base;
  ASSERT_TRUE(base.CreateDir("/data/p-0").ok());
  {
    auto f = base.Open("/data/p-0/old.log", OpenMode::kCreate);
    ASSERT_TRUE((*f)->WriteAt(0, B("old bytes")).ok());
  }
  FaultInjectionFileSystem fs(&base);
  ASSERT_TRUE(fs.Remove("/data/p-0/old.log").ok());  // not durable without SyncDir
  MemFileSystem image;
  ASSERT_TRUE(fs.MaterializeDurableState(&image, "/data", false).ok());
  EXPECT_EQ(S(*image.ReadFile("/data/p-0/old.log")), "old bytes");
  ASSERT_TRUE(fs.SyncDir("/data/p-0").ok());
  MemFileSystem image2;
  ASSERT_TRUE(fs.MaterializeDurableState(&image2, "/data", false).ok());
  EXPECT_FALSE(image2.Exists("/data/p-0/old.log"));
  EXPECT_TRUE(image2.Exists("/data/p-0"));
}

TEST(FaultInjectionFileSystemTest, NewDirectoryNeedsParentSyncDir) {
  Rig rig;
  auto& fs = *rig.fs;
  ASSERT_TRUE(fs.CreateDir("/data/p-0").ok());
  {
    auto f = fs.Open("/data/p-0/a", OpenMode::kCreate);
    ASSERT_TRUE((*f)->WriteAt(0, B("a")).ok());
    ASSERT_TRUE((*f)->Sync().ok());
  }
  ASSERT_TRUE(fs.SyncDir("/data/p-0").ok());
  EXPECT_TRUE(rig.Durable().empty());  // /data never learnt about p-0
  ASSERT_TRUE(fs.SyncDir("/data").ok());
  EXPECT_EQ(S(rig.Durable()["/data/p-0/a"]), "a");
}

TEST(FaultInjectionFileSystemTest, TornWriteKeepsARandomPrefixOfTheLastUnsyncedWrite) {
  std::set<size_t> sizes;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Rig rig(seed);
    auto& fs = *rig.fs;
    auto f = fs.Open("/data/seg", OpenMode::kCreate);
    ASSERT_TRUE((*f)->WriteAt(0, B("0123")).ok());
    ASSERT_TRUE((*f)->Sync().ok());
    ASSERT_TRUE(fs.SyncDir("/data").ok());
    ASSERT_TRUE((*f)->WriteAt(4, B("456789")).ok());
    EXPECT_EQ(S(rig.Durable(false)["/data/seg"]), "0123");
    const std::string torn = S(rig.Durable(true)["/data/seg"]);
    ASSERT_GE(torn.size(), 4u);
    ASSERT_LE(torn.size(), 10u);
    EXPECT_EQ(torn, std::string("0123456789").substr(0, torn.size()));
    sizes.insert(torn.size());
  }
  EXPECT_GT(sizes.size(), 3u);  // the tear point varies with the seed
}

TEST(FaultInjectionFileSystemTest, InjectedErrorsFailOneOpAndContinue) {
  Rig rig;
  auto& fs = *rig.fs;
  fs.FailAt(2, InjectedError::kEnospc);
  auto f = fs.Open("/data/x", OpenMode::kCreate);
  ASSERT_TRUE(f.ok());
  Status st = (*f)->WriteAt(0, B("abc"));
  ASSERT_TRUE(st.IsIoError());
  EXPECT_NE(st.message().find("No space left on device"), std::string::npos) << st.message();
  EXPECT_EQ(*rig.base.FileSize("/data/x"), 0u);
  ASSERT_TRUE((*f)->WriteAt(0, B("abc")).ok());
  EXPECT_FALSE(fs.crashed());

  fs.FailPathsUnder("/data/bad");
  ASSERT_TRUE(rig.base.CreateDir("/data/bad").ok());
  Status eio = fs.Open("/data/bad/f", OpenMode::kCreate).status();
  EXPECT_TRUE(eio.IsIoError());
  EXPECT_NE(eio.message().find("injected EIO on /data/bad/f"), std::string::npos);
  EXPECT_FALSE(fs.ListDir("/data/bad").ok());
  EXPECT_TRUE(fs.ListDir("/data").ok());
  EXPECT_FALSE(fs.ListDir("/data/badge").status().message().find("EIO") != std::string::npos);
}

}  // namespace
}  // namespace daruma::testing
