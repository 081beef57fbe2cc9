// CachingFileSystem / FileHandleCache: a bounded number of real handles behind
// any number of Files, with eviction, transparent reopen, pinning of unsynced
// handles (synced and released when the budget needs them), renames followed,
// removed files kept readable, concurrent reads, EMFILE released and retried.
#include "common/caching_file_system.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/forwarding_file_system.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::ReadFileToString;
using testing::TempDir;
using testing::WriteStringToFile;

std::span<const uint8_t> AsSpan(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// Forwards to the POSIX file system and counts the real handles alive, by path.
class CountingFileSystem final : public ForwardingFileSystem {
 public:
  class CountedFile final : public ForwardingFile {
   public:
    CountedFile(CountingFileSystem* owner, std::unique_ptr<File> f, OpenMode mode)
        : ForwardingFile(std::move(f)), owner_(owner) {
      owner_->Opened(path(), mode);
    }
    ~CountedFile() override { owner_->Closed(path()); }

   private:
    CountingFileSystem* owner_;
  };

  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++open_attempts_;
    }
    DARUMA_ASSIGN_OR_RETURN(auto f, base()->Open(path, mode));
    return std::unique_ptr<File>(new CountedFile(this, std::move(f), mode));
  }
  // Opens tried, also those that failed.
  int open_attempts() {
    std::lock_guard<std::mutex> lock(mu_);
    return open_attempts_;
  }

  int open_now() {
    std::lock_guard<std::mutex> lock(mu_);
    return open_now_;
  }
  int max_open() {
    std::lock_guard<std::mutex> lock(mu_);
    return max_open_;
  }
  // Real handles alive for `path` (opened under that name).
  int open_for(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    return by_path_[path];
  }
  std::vector<OpenMode> modes() {
    std::lock_guard<std::mutex> lock(mu_);
    return modes_;
  }

 private:
  void Opened(const std::string& path, OpenMode mode) {
    std::lock_guard<std::mutex> lock(mu_);
    max_open_ = std::max(max_open_, ++open_now_);
    ++by_path_[path];
    modes_.push_back(mode);
  }
  void Closed(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    --open_now_;
    --by_path_[path];
  }

  std::mutex mu_;
  int open_now_ = 0;
  int max_open_ = 0;
  std::map<std::string, int> by_path_;
  std::vector<OpenMode> modes_;
  int open_attempts_ = 0;
};

std::string ReadAll(const File& f) {
  auto size = f.Size();
  EXPECT_TRUE(size.ok()) << size.status().ToString();
  if (!size.ok()) return "";
  std::string out(*size, '\0');
  auto n = f.ReadAt(0, {reinterpret_cast<uint8_t*>(out.data()), out.size()});
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  if (!n.ok()) return "";
  out.resize(*n);
  return out;
}

class CachingFileSystemTest : public ::testing::Test {
 protected:
  std::unique_ptr<File> OpenOrDie(const std::string& name, OpenMode mode) {
    auto f = fs_.Open(tmp_.Join(name), mode);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    return f.ok() ? std::move(*f) : nullptr;
  }

  TempDir tmp_;
  CountingFileSystem inner_;
  CachingFileSystem fs_{&inner_, 2};
};

TEST_F(CachingFileSystemTest, EvictionBoundsOpenHandles) {
  std::vector<std::unique_ptr<File>> files;
  for (int i = 0; i < 5; ++i) {
    WriteStringToFile(tmp_.Join("f" + std::to_string(i)), "file " + std::to_string(i));
    files.push_back(OpenOrDie("f" + std::to_string(i), OpenMode::kRead));
    EXPECT_LE(inner_.open_now(), 2) << "after opening file " << i;
  }
  EXPECT_EQ(inner_.max_open(), 2);
  EXPECT_EQ(fs_.cache().open_handles(), 2u);
  // Reading all five in turn reopens the evicted ones, still within 2 handles.
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(ReadAll(*files[size_t(i)]), "file " + std::to_string(i));
      EXPECT_LE(inner_.open_now(), 2);
    }
  }
  EXPECT_EQ(inner_.max_open(), 2);
  EXPECT_GE(fs_.cache().evictions(), 13u);  // 3 at open, then every read misses (LRU of 2, 5 files)
  files.clear();
  EXPECT_EQ(inner_.open_now(), 0);
  EXPECT_EQ(fs_.cache().open_handles(), 0u);
}

TEST_F(CachingFileSystemTest, DeferredOpensStatOnlyUntilFirstUse) {
  CachingFileSystem deferring(&inner_, 2, /*defer_opens=*/true);
  WriteStringToFile(tmp_.Join("a"), "alpha");
  auto a = deferring.Open(tmp_.Join("a"), OpenMode::kReadWrite);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(inner_.open_now(), 0);
  auto size = (*a)->Size();  // a stat, still no descriptor
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 5u);
  EXPECT_EQ(inner_.open_now(), 0);
  EXPECT_EQ(ReadAll(**a), "alpha");
  EXPECT_EQ(inner_.open_now(), 1);
  EXPECT_EQ(inner_.modes().back(), OpenMode::kReadWrite);
  // A missing file fails at Open with the inner system's NotFound, and a new
  // file (kCreate) is opened at once.
  auto missing = deferring.Open(tmp_.Join("missing"), OpenMode::kRead);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound()) << missing.status().ToString();
  auto created = deferring.Open(tmp_.Join("new"), OpenMode::kCreate);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(inner_.open_now(), 2);
}

TEST_F(CachingFileSystemTest, OpenWithSizeOfADeferredOpenIsOneStatAndReadFileTakesNoSlot) {
  CachingFileSystem deferring(&inner_, 2, /*defer_opens=*/true);
  WriteStringToFile(tmp_.Join("a"), "alpha");
  uint64_t size = 0;
  auto a = deferring.OpenWithSize(tmp_.Join("a"), OpenMode::kReadWrite, &size);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(size, 5u);
  EXPECT_EQ(inner_.open_now(), 0);
  EXPECT_EQ(ReadAll(**a), "alpha");
  EXPECT_EQ(inner_.modes().back(), OpenMode::kReadWrite);
  uint64_t untouched = 7;
  const int attempts = inner_.open_attempts();
  auto missing = deferring.OpenWithSize(tmp_.Join("missing"), OpenMode::kRead, &untouched);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound()) << missing.status().ToString();
  EXPECT_EQ(untouched, 7u);
  EXPECT_EQ(inner_.open_attempts(), attempts) << "the stat's NotFound is the answer";
  // A whole-file read opens through the inner system and closes at once.
  WriteStringToFile(tmp_.Join("b"), "bravo");
  const int before = inner_.open_now();
  auto bytes = deferring.ReadFile(tmp_.Join("b"));
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(std::string(bytes->begin(), bytes->end()), "bravo");
  EXPECT_EQ(inner_.open_now(), before);
  EXPECT_EQ(deferring.cache().open_handles(), size_t(before));
  EXPECT_TRUE(deferring.ReadFile(tmp_.Join("missing")).status().IsNotFound());
}

TEST_F(CachingFileSystemTest, MostRecentlyUsedHandleSurvives) {
  WriteStringToFile(tmp_.Join("a"), "a");
  WriteStringToFile(tmp_.Join("b"), "b");
  WriteStringToFile(tmp_.Join("c"), "c");
  auto a = OpenOrDie("a", OpenMode::kRead);
  auto b = OpenOrDie("b", OpenMode::kRead);
  EXPECT_EQ(ReadAll(*a), "a");  // a is now more recent than b
  auto c = OpenOrDie("c", OpenMode::kRead);
  EXPECT_EQ(inner_.open_for(tmp_.Join("a")), 1);
  EXPECT_EQ(inner_.open_for(tmp_.Join("b")), 0);
  EXPECT_EQ(inner_.open_for(tmp_.Join("c")), 1);
}

TEST_F(CachingFileSystemTest, WrittenThenEvictedDataReadsBackAndReopensWithoutTruncating) {
  auto w = OpenOrDie("data", OpenMode::kTruncate);
  ASSERT_TRUE(w->WriteAt(0, AsSpan("hello, world")).ok());
  ASSERT_TRUE(w->Sync().ok());
  WriteStringToFile(tmp_.Join("x"), "x");
  WriteStringToFile(tmp_.Join("y"), "y");
  auto x = OpenOrDie("x", OpenMode::kRead);
  auto y = OpenOrDie("y", OpenMode::kRead);
  ASSERT_EQ(inner_.open_for(tmp_.Join("data")), 0) << "the synced handle was evicted";
  // Size of an evicted file needs no handle; the read reopens it.
  EXPECT_EQ(*w->Size(), 12u);
  EXPECT_EQ(inner_.open_for(tmp_.Join("data")), 0);
  EXPECT_EQ(ReadAll(*w), "hello, world");
  EXPECT_EQ(inner_.open_for(tmp_.Join("data")), 1);
  // The reopen was kReadWrite, not kTruncate: the data is still there, and
  // the reopened handle is writable.
  EXPECT_EQ(inner_.modes().back(), OpenMode::kReadWrite);
  ASSERT_TRUE(w->WriteAt(7, AsSpan("there")).ok());
  ASSERT_TRUE(w->Sync().ok());
  EXPECT_EQ(ReadFileToString(tmp_.Join("data")), "hello, there");
}

TEST_F(CachingFileSystemTest, ReadOnlyFilesReopenReadOnly) {
  WriteStringToFile(tmp_.Join("r"), "ro");
  auto r = OpenOrDie("r", OpenMode::kRead);
  WriteStringToFile(tmp_.Join("x"), "x");
  WriteStringToFile(tmp_.Join("y"), "y");
  auto x = OpenOrDie("x", OpenMode::kRead);
  auto y = OpenOrDie("y", OpenMode::kRead);
  EXPECT_EQ(ReadAll(*r), "ro");
  EXPECT_EQ(inner_.modes().back(), OpenMode::kRead);
}

TEST_F(CachingFileSystemTest, UnsyncedHandleIsPinnedUntilSync) {
  auto dirty = OpenOrDie("dirty", OpenMode::kCreate);
  ASSERT_TRUE(dirty->WriteAt(0, AsSpan("unsynced")).ok());
  std::vector<std::unique_ptr<File>> others;
  for (int i = 0; i < 4; ++i) {
    WriteStringToFile(tmp_.Join("o" + std::to_string(i)), "o");
    others.push_back(OpenOrDie("o" + std::to_string(i), OpenMode::kRead));
  }
  // Capacity 2: the dirty handle plus one more; the dirty one never left.
  EXPECT_EQ(inner_.open_for(tmp_.Join("dirty")), 1);
  EXPECT_EQ(inner_.open_now(), 2);
  EXPECT_EQ(fs_.cache().pinned_handles(), 1u);
  ASSERT_TRUE(dirty->Sync().ok());
  EXPECT_EQ(fs_.cache().pinned_handles(), 0u);
  // Now it is an ordinary LRU entry and goes at the next two opens.
  for (int i = 0; i < 2; ++i) EXPECT_EQ(ReadAll(*others[size_t(i)]), "o");
  EXPECT_EQ(inner_.open_for(tmp_.Join("dirty")), 0);
  EXPECT_EQ(ReadAll(*dirty), "unsynced");
}

// A sync of the whole file system (LogManager's batched syncs) unpins the
// handles written before it under the synced dir, and only those.
TEST_F(CachingFileSystemTest, SyncFileSystemUnpinsWhatItCoveredUnderTheDir) {
  std::filesystem::create_directories(tmp_.Join("a"));
  std::filesystem::create_directories(tmp_.Join("b"));
  auto in_a = OpenOrDie("a/f", OpenMode::kCreate);
  auto in_b = OpenOrDie("b/f", OpenMode::kCreate);
  ASSERT_TRUE(in_a->WriteAt(0, AsSpan("a")).ok());
  ASSERT_TRUE(in_b->WriteAt(0, AsSpan("b")).ok());
  EXPECT_EQ(fs_.cache().pinned_handles(), 2u);
  ASSERT_TRUE(fs_.SyncFileSystem(tmp_.Join("a")).ok());
  EXPECT_EQ(fs_.cache().pinned_handles(), 1u);  // b/f is not under a/
  // A write after the sync pins again; the owner's own Sync unpins as usual.
  ASSERT_TRUE(in_a->WriteAt(1, AsSpan("x")).ok());
  EXPECT_EQ(fs_.cache().pinned_handles(), 2u);
  ASSERT_TRUE(in_a->Sync().ok());
  ASSERT_TRUE(in_b->Sync().ok());
  EXPECT_EQ(fs_.cache().pinned_handles(), 0u);
}

TEST_F(CachingFileSystemTest, CreationAndTruncationDoNotPin) {
  // A size change leaves no dirty pages (and no writeback error to lose).
  auto created = OpenOrDie("new", OpenMode::kTruncate);
  WriteStringToFile(tmp_.Join("t"), "truncate me");
  auto t = OpenOrDie("t", OpenMode::kReadWrite);
  ASSERT_TRUE(t->Truncate(8).ok());
  ASSERT_TRUE(created->Truncate(4096).ok());  // extended: a sparse hole
  EXPECT_EQ(fs_.cache().pinned_handles(), 0u);
  std::vector<std::unique_ptr<File>> others;
  for (int i = 0; i < 2; ++i) {
    WriteStringToFile(tmp_.Join("o" + std::to_string(i)), "o");
    others.push_back(OpenOrDie("o" + std::to_string(i), OpenMode::kRead));
  }
  EXPECT_EQ(inner_.open_for(tmp_.Join("new")), 0);
  EXPECT_EQ(inner_.open_for(tmp_.Join("t")), 0);
  EXPECT_EQ(*t->Size(), 8u);
  EXPECT_EQ(*created->Size(), 4096u);
  EXPECT_EQ(ReadAll(*t), "truncate");
}

TEST_F(CachingFileSystemTest, RenameWhileEvictedFollowsTheFile) {
  auto seg = OpenOrDie("00000000000000000000.log", OpenMode::kCreate);
  ASSERT_TRUE(seg->WriteAt(0, AsSpan("segment bytes")).ok());
  ASSERT_TRUE(seg->Sync().ok());
  WriteStringToFile(tmp_.Join("x"), "x");
  WriteStringToFile(tmp_.Join("y"), "y");
  auto x = OpenOrDie("x", OpenMode::kRead);
  auto y = OpenOrDie("y", OpenMode::kRead);
  ASSERT_EQ(inner_.open_for(tmp_.Join("00000000000000000000.log")), 0);
  ASSERT_TRUE(fs_.Rename(tmp_.Join("00000000000000000000.log"),
                         tmp_.Join("00000000000000000000.log.deleted"))
                  .ok());
  EXPECT_EQ(seg->path(), tmp_.Join("00000000000000000000.log.deleted"));
  EXPECT_EQ(ReadAll(*seg), "segment bytes");
  EXPECT_EQ(inner_.open_for(tmp_.Join("00000000000000000000.log.deleted")), 1);
  ASSERT_TRUE(seg->WriteAt(13, AsSpan("!")).ok());
  ASSERT_TRUE(seg->Sync().ok());
  EXPECT_EQ(ReadFileToString(tmp_.Join("00000000000000000000.log.deleted")), "segment bytes!");
}

TEST_F(CachingFileSystemTest, DirectoryRenameMovesEveryFileBelowIt) {
  ASSERT_TRUE(fs_.CreateDir(tmp_.Join("topic-0")).ok());
  WriteStringToFile(tmp_.Join("topic-0/a.log"), "in the partition");
  WriteStringToFile(tmp_.Join("topic-00"), "a sibling with the same prefix");
  auto a = OpenOrDie("topic-0/a.log", OpenMode::kReadWrite);
  auto sibling = OpenOrDie("topic-00", OpenMode::kRead);
  ASSERT_TRUE(fs_.Rename(tmp_.Join("topic-0"), tmp_.Join("topic-0.abc-delete")).ok());
  EXPECT_EQ(a->path(), tmp_.Join("topic-0.abc-delete/a.log"));
  EXPECT_EQ(sibling->path(), tmp_.Join("topic-00"));
  WriteStringToFile(tmp_.Join("x"), "x");
  auto x = OpenOrDie("x", OpenMode::kRead);
  ASSERT_EQ(inner_.open_for(tmp_.Join("topic-0/a.log")), 0) << "evicted";
  EXPECT_EQ(ReadAll(*a), "in the partition");
}

TEST_F(CachingFileSystemTest, RemovedFileStaysReadableThroughItsOpenHandle) {
  WriteStringToFile(tmp_.Join("gone"), "still here");
  auto gone = OpenOrDie("gone", OpenMode::kRead);
  ASSERT_TRUE(fs_.Remove(tmp_.Join("gone")).ok());
  std::vector<std::unique_ptr<File>> others;
  for (int i = 0; i < 3; ++i) {
    WriteStringToFile(tmp_.Join("o" + std::to_string(i)), "o");
    others.push_back(OpenOrDie("o" + std::to_string(i), OpenMode::kRead));
  }
  EXPECT_EQ(ReadAll(*gone), "still here");  // as a POSIX descriptor would
  gone.reset();
  EXPECT_EQ(inner_.open_for(tmp_.Join("gone")), 0);
}

TEST_F(CachingFileSystemTest, RemovedWhileEvictedIsNotFoundNotAnotherFile) {
  WriteStringToFile(tmp_.Join("gone"), "old");
  auto gone = OpenOrDie("gone", OpenMode::kRead);
  WriteStringToFile(tmp_.Join("x"), "x");
  WriteStringToFile(tmp_.Join("y"), "y");
  auto x = OpenOrDie("x", OpenMode::kRead);
  auto y = OpenOrDie("y", OpenMode::kRead);
  ASSERT_TRUE(fs_.Remove(tmp_.Join("gone")).ok());
  WriteStringToFile(tmp_.Join("gone"), "a new file under the old name");
  uint8_t byte = 0;
  auto n = gone->ReadAt(0, {&byte, 1});
  ASSERT_FALSE(n.ok());
  EXPECT_TRUE(n.status().IsNotFound()) << n.status().ToString();
  EXPECT_NE(n.status().message().find(tmp_.Join("gone")), std::string::npos);
}

TEST_F(CachingFileSystemTest, MappedRegionOutlivesEviction) {
  WriteStringToFile(tmp_.Join("m"), "mapped contents");
  auto m = OpenOrDie("m", OpenMode::kRead);
  auto region = m->MapForRead(0, 15);
  ASSERT_NE(region, nullptr);
  WriteStringToFile(tmp_.Join("x"), "x");
  WriteStringToFile(tmp_.Join("y"), "y");
  auto x = OpenOrDie("x", OpenMode::kRead);
  auto y = OpenOrDie("y", OpenMode::kRead);
  ASSERT_EQ(inner_.open_for(tmp_.Join("m")), 0);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(region->data), region->size),
            "mapped contents");
}

TEST_F(CachingFileSystemTest, OpenErrorsAreTheInnerOnes) {
  auto missing = fs_.Open(tmp_.Join("missing"), OpenMode::kRead);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound());
  WriteStringToFile(tmp_.Join("exists"), "x");
  EXPECT_FALSE(fs_.Open(tmp_.Join("exists"), OpenMode::kCreateExclusive).ok());
  EXPECT_EQ(inner_.open_now(), 0);
}

TEST_F(CachingFileSystemTest, ConcurrentReadsFromTwoThreadsWhileEvicting) {
  // Two files, each read by its own thread, plus a third file read in
  // between so the handles keep getting evicted under the readers.
  std::vector<std::unique_ptr<File>> files;
  for (int i = 0; i < 3; ++i) {
    WriteStringToFile(tmp_.Join("c" + std::to_string(i)), std::string(4096, char('a' + i)));
    files.push_back(OpenOrDie("c" + std::to_string(i), OpenMode::kRead));
  }
  std::atomic<int> bad{0};
  auto reader = [&](int which) {
    std::vector<uint8_t> buffer(4096);
    for (int round = 0; round < 2000; ++round) {
      for (int f : {which, 2}) {
        auto n = files[size_t(f)]->ReadAt(0, buffer);
        if (!n.ok() || *n != 4096 || buffer[0] != uint8_t('a' + f) ||
            buffer[4095] != uint8_t('a' + f)) {
          ++bad;
        }
      }
    }
  };
  std::thread t0(reader, 0);
  std::thread t1(reader, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(bad.load(), 0);
  // Two cached handles plus at most one borrowed per reader after eviction.
  EXPECT_LE(inner_.max_open(), 4);
  EXPECT_EQ(fs_.cache().open_handles(), 2u);
  EXPECT_GT(fs_.cache().evictions(), 0u);
}

TEST_F(CachingFileSystemTest, FilesOutliveTheFileSystem) {
  WriteStringToFile(tmp_.Join("late"), "late read");
  std::unique_ptr<File> f;
  {
    CachingFileSystem short_lived(&inner_, 1);
    auto opened = short_lived.Open(tmp_.Join("late"), OpenMode::kRead);
    ASSERT_TRUE(opened.ok());
    f = std::move(*opened);
  }
  EXPECT_EQ(ReadAll(*f), "late read");
}

TEST_F(CachingFileSystemTest, UnsyncedHandlesBeyondTheCapacityAreSyncedAndReleased) {
  // Capacity 2, four files written and never synced by their owners: the
  // cache syncs the least recently written one and closes it instead of
  // holding a third descriptor.
  std::vector<std::unique_ptr<File>> files;
  for (int i = 0; i < 4; ++i) {
    files.push_back(OpenOrDie("w" + std::to_string(i), OpenMode::kCreate));
    ASSERT_TRUE(files.back()->WriteAt(0, AsSpan("written " + std::to_string(i))).ok());
    EXPECT_LE(inner_.open_now(), 2) << "after writing file " << i;
  }
  EXPECT_EQ(inner_.max_open(), 2);
  EXPECT_EQ(fs_.cache().synced_releases(), 2u);
  EXPECT_EQ(inner_.open_for(tmp_.Join("w0")), 0);
  EXPECT_EQ(inner_.open_for(tmp_.Join("w3")), 1);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(ReadAll(*files[size_t(i)]), "written " + std::to_string(i));
    ASSERT_TRUE(files[size_t(i)]->Sync().ok());
    EXPECT_LE(inner_.open_now(), 2);
  }
  EXPECT_EQ(fs_.cache().pinned_handles(), 0u);
}

// Fails every Sync while `fail_syncs` is set.
class FailingSyncFileSystem final : public ForwardingFileSystem {
 public:
  explicit FailingSyncFileSystem(FileSystem* base) : ForwardingFileSystem(base) {}
  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    DARUMA_ASSIGN_OR_RETURN(auto f, base()->Open(path, mode));
    return std::unique_ptr<File>(new FailingSyncFile(this, std::move(f)));
  }
  std::atomic<bool> fail_syncs{false};

 private:
  class FailingSyncFile final : public ForwardingFile {
   public:
    FailingSyncFile(FailingSyncFileSystem* owner, std::unique_ptr<File> f)
        : ForwardingFile(std::move(f)), owner_(owner) {}
    Status Sync() override {
      if (owner_->fail_syncs.load()) return Status::IoError("fsync " + path() + ": EIO");
      return ForwardingFile::Sync();
    }

   private:
    FailingSyncFileSystem* owner_;
  };
};

TEST_F(CachingFileSystemTest, FailedSyncOfAReleaseIsReportedByTheOwnersNextSync) {
  FailingSyncFileSystem failing(&inner_);
  CachingFileSystem fs(&failing, 1);
  auto dirty = fs.Open(tmp_.Join("dirty"), OpenMode::kCreate);
  ASSERT_TRUE(dirty.ok());
  ASSERT_TRUE((*dirty)->WriteAt(0, AsSpan("unsynced")).ok());
  failing.fail_syncs = true;
  WriteStringToFile(tmp_.Join("other"), "other");
  auto other = fs.Open(tmp_.Join("other"), OpenMode::kRead);
  ASSERT_TRUE(other.ok());
  // The release failed: the dirty handle stays open (over the capacity
  // rather than losing the error) and its owner's Sync reports it once.
  EXPECT_EQ(inner_.open_for(tmp_.Join("dirty")), 1);
  EXPECT_EQ(fs.cache().synced_releases(), 0u);
  failing.fail_syncs = false;
  Status first = (*dirty)->Sync();
  EXPECT_TRUE(first.IsIoError()) << first.ToString();
  EXPECT_NE(first.message().find("EIO"), std::string::npos) << first.ToString();
  EXPECT_TRUE((*dirty)->Sync().ok());
  EXPECT_EQ(fs.cache().pinned_handles(), 0u);
}

// Refuses opens and listings with EMFILE while `limit` real handles are open.
class DescriptorLimitedFileSystem final : public ForwardingFileSystem {
 public:
  DescriptorLimitedFileSystem(CountingFileSystem* base, int limit)
      : ForwardingFileSystem(base), counting_(base), limit_(limit) {}
  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    DARUMA_RETURN_IF_ERROR(Check("open " + path));
    return base()->Open(path, mode);
  }
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    DARUMA_RETURN_IF_ERROR(Check("list " + path));
    return base()->ListDir(path);
  }
  int refusals() const { return refusals_.load(); }

 private:
  Status Check(const std::string& what) {
    if (counting_->open_now() < limit_) return Status::Ok();
    ++refusals_;
    return Status::IoError(what + ": Too many open files").WithDetail(kTooManyOpenFilesDetail);
  }
  CountingFileSystem* counting_;
  int limit_;
  std::atomic<int> refusals_{0};
};

TEST_F(CachingFileSystemTest, TooManyOpenFilesReleasesHandlesAndRetries) {
  // A budget of 10 over a process that can open only 3.
  DescriptorLimitedFileSystem limited(&inner_, 3);
  CachingFileSystem fs(&limited, 10);
  std::vector<std::unique_ptr<File>> files;
  for (int i = 0; i < 6; ++i) {
    WriteStringToFile(tmp_.Join("f" + std::to_string(i)), "file " + std::to_string(i));
    auto f = fs.Open(tmp_.Join("f" + std::to_string(i)), OpenMode::kRead);
    ASSERT_TRUE(f.ok()) << i << ": " << f.status().ToString();
    files.push_back(std::move(*f));
  }
  EXPECT_EQ(inner_.max_open(), 3);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(ReadAll(*files[size_t(i)]), "file " + std::to_string(i));
  EXPECT_TRUE(fs.ListDir(tmp_.path()).ok());
  EXPECT_GT(limited.refusals(), 0);
  EXPECT_EQ(fs.cache().descriptor_shortages(), uint64_t(limited.refusals()));
  EXPECT_LE(inner_.max_open(), 3);
}

TEST_F(CachingFileSystemTest, TooManyOpenFilesWithNothingToReleaseIsTheCallersError) {
  DescriptorLimitedFileSystem limited(&inner_, 0);
  CachingFileSystem fs(&limited, 10);
  WriteStringToFile(tmp_.Join("f"), "f");
  auto f = fs.Open(tmp_.Join("f"), OpenMode::kRead);
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(IsTooManyOpenFiles(f.status())) << f.status().ToString();
  EXPECT_TRUE(IsTooManyOpenFiles(fs.ListDir(tmp_.path()).status()));
  EXPECT_EQ(fs.cache().open_handles(), 0u);
}

TEST(TooManyOpenFilesTest, PosixOpenPastTheLimitCarriesTheDetail) {
  TempDir tmp;
  WriteStringToFile(tmp.Join("f"), "f");
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  struct rlimit none = saved;
  none.rlim_cur = 0;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &none), 0);
  auto f = FileSystem::Default()->Open(tmp.Join("f"), OpenMode::kRead);
  auto listed = FileSystem::Default()->ListDir(tmp.path());
  ::setrlimit(RLIMIT_NOFILE, &saved);
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(IsTooManyOpenFiles(f.status())) << f.status().ToString();
  EXPECT_TRUE(IsTooManyOpenFiles(listed.status())) << listed.status().ToString();
  EXPECT_FALSE(IsTooManyOpenFiles(Status::IoError("fsync: Input/output error")));
}

TEST(DefaultMaxOpenFilesTest, IsHalfTheSoftLimitAndAtLeast64) {
  const size_t n = DefaultMaxOpenFiles();
  EXPECT_GE(n, 64u);
  struct rlimit limit {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur >= 128) {
    EXPECT_EQ(n, size_t(limit.rlim_cur / 2));
  }
}

}  // namespace
}  // namespace daruma
