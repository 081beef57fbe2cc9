// DeferredSyncFileSystem's sync barrier: once deferring is off, it runs
// before the first sync passed down (a file's Sync, SyncFile, SyncDir, and
// so WriteFileAtomically), until it succeeds; while deferring, nothing syncs
// and the barrier waits.
#include "common/deferred_sync_file_system.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/forwarding_file_system.h"
#include "support/mem_file_system.h"

namespace daruma {
namespace {

// Records the syncs that reach the file system below, in order.
class SyncLog final : public ForwardingFileSystem {
 public:
  using ForwardingFileSystem::ForwardingFileSystem;
  Status SyncDir(const std::string& path) override {
    ops.push_back("sync-dir " + path);
    return ForwardingFileSystem::SyncDir(path);
  }
  Status SyncFile(const std::string& path) override {
    ops.push_back("sync " + path);
    return ForwardingFileSystem::SyncFile(path);
  }
  std::vector<std::string> ops;
};

TEST(DeferredSyncFileSystemTest, TheBarrierRunsOnceBeforeTheFirstSyncPassedDown) {
  testing::MemFileSystem mem;
  ASSERT_TRUE(mem.CreateDir("/d").ok());
  SyncLog below(&mem);
  DeferredSyncFileSystem deferred(&below);
  std::vector<std::string> barrier_runs;
  Status barrier_result = Status::IoError("the log dir's fsync failed");
  deferred.SetSyncBarrier([&] {
    barrier_runs.push_back("barrier");
    return barrier_result;
  });

  deferred.set_deferring(true);
  ASSERT_TRUE(deferred.SyncDir("/d").ok());
  ASSERT_TRUE(deferred.SyncFile("/d/a").ok());
  EXPECT_TRUE(barrier_runs.empty()) << "deferred syncs promise nothing: no barrier";
  EXPECT_TRUE(below.ops.empty());

  deferred.set_deferring(false);
  auto file = deferred.Open("/d/a", OpenMode::kCreate);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  Status failed = (*file)->Sync();
  EXPECT_TRUE(failed.IsIoError()) << "a failed barrier fails the sync that ran it";
  EXPECT_TRUE(below.ops.empty());

  barrier_result = Status::Ok();
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE(deferred.WriteFileAtomically("/d/b", std::vector<uint8_t>{1, 2}).ok());
  ASSERT_TRUE(deferred.SyncDir("/d").ok());
  EXPECT_EQ(barrier_runs.size(), 2u) << "run again after failing, then never";
  EXPECT_EQ(below.ops, (std::vector<std::string>{"sync-dir /d", "sync-dir /d"}))
      << "file syncs go to the files themselves; the two dir syncs are "
         "WriteFileAtomically's and the call's";
}

}  // namespace
}  // namespace daruma
