#include "common/caching_file_system.h"

#include <sys/resource.h>

#include <algorithm>

namespace daruma {
namespace {

// A File that owns a Slot of the shared cache and borrows a real handle for
// each operation.
class CachedFile final : public File {
 public:
  CachedFile(std::shared_ptr<FileHandleCache> cache, FileHandleCache::Slot* slot)
      : cache_(std::move(cache)), slot_(slot) {}
  ~CachedFile() override { cache_->Unregister(slot_); }

  Result<size_t> ReadAt(uint64_t pos, std::span<uint8_t> out) const override {
    DARUMA_ASSIGN_OR_RETURN(std::shared_ptr<File> file, cache_->Acquire(slot_, false));
    return file->ReadAt(pos, out);
  }

  Status WriteAt(uint64_t pos, std::span<const uint8_t> data) override {
    DARUMA_ASSIGN_OR_RETURN(std::shared_ptr<File> file, cache_->Acquire(slot_, true));
    return file->WriteAt(pos, data);
  }

  // Also reports the failure of a sync the cache made to release the handle.
  Status Sync() override {
    DARUMA_ASSIGN_OR_RETURN(std::shared_ptr<File> file, cache_->Acquire(slot_, false));
    DARUMA_RETURN_IF_ERROR(file->Sync());
    return cache_->MarkSynced(slot_);
  }

  // No pin: a size change leaves no dirty pages behind (see the cache).
  Status Truncate(uint64_t size) override {
    DARUMA_ASSIGN_OR_RETURN(std::shared_ptr<File> file, cache_->Acquire(slot_, false));
    return file->Truncate(size);
  }

  Result<uint64_t> Size() const override {
    if (std::shared_ptr<File> file = cache_->AcquireIfOpen(slot_)) return file->Size();
    // Evicted: nothing unsynced is pending on it, and a stat needs no descriptor.
    return cache_->inner()->FileSize(path());
  }

  Result<uint64_t> DataEnd() const override {
    DARUMA_ASSIGN_OR_RETURN(std::shared_ptr<File> file, cache_->Acquire(slot_, false));
    return file->DataEnd();
  }

  Result<uint64_t> DataFrom(uint64_t pos) const override {
    DARUMA_ASSIGN_OR_RETURN(std::shared_ptr<File> file, cache_->Acquire(slot_, false));
    return file->DataFrom(pos);
  }

  // Advisory: an evicted file is not reopened just to drop its cache.
  void DropCache(uint64_t pos, uint64_t len) override {
    if (std::shared_ptr<File> file = cache_->AcquireIfOpen(slot_)) file->DropCache(pos, len);
  }

  std::unique_ptr<MappedRegion> MapForRead(uint64_t pos, size_t len) const override {
    auto file = cache_->Acquire(slot_, false);
    if (!file.ok()) return nullptr;  // the caller falls back to ReadAt, which reports it
    return (*file)->MapForRead(pos, len);
  }

  // Pins the handle like a write until the next Sync (or until the cache
  // syncs and releases it for room). The region outlives an eviction of the
  // handle (an mmap survives close, and holds no descriptor): stores through
  // it after that Sync are unknown to the cache, so the handle may be evicted
  // with dirty pages, as 10,000 active segments could not otherwise stay
  // within the capacity. That loses no error: a later Sync reopens the file,
  // and Linux (>= 4.16) reports a writeback error that no descriptor has seen
  // yet to a new opener's fsync.
  Result<std::unique_ptr<WritableMappedRegion>> MapForAppend(uint64_t pos, size_t len,
                                                             AppendFaults faults) override {
    DARUMA_ASSIGN_OR_RETURN(std::shared_ptr<File> file, cache_->Acquire(slot_, true));
    return file->MapForAppend(pos, len, faults);
  }

  const std::string& path() const override { return cache_->PathOf(slot_); }

 private:
  std::shared_ptr<FileHandleCache> cache_;
  FileHandleCache::Slot* slot_;
};

}  // namespace

CachingFileSystem::CachingFileSystem(FileSystem* inner, size_t max_open_files, bool defer_opens)
    : inner_(inner),
      cache_(std::make_shared<FileHandleCache>(inner, max_open_files)),
      defer_opens_(defer_opens) {}

CachingFileSystem::~CachingFileSystem() = default;

Result<std::unique_ptr<File>> CachingFileSystem::Open(const std::string& path, OpenMode mode) {
  std::unique_ptr<File> opened;
  // An existing file is only stat'ed here and opened on first use: a clean
  // start opens 40,000 segments of which it reads a few, and a stat costs a
  // third of an open + close. Anything else (a missing file included, so the
  // caller gets the inner system's own error) is opened now.
  const bool existing = mode == OpenMode::kRead || mode == OpenMode::kReadWrite;
  FileHandleCache::Room room;
  if (!defer_opens_ || !existing || !inner_->FileSize(path).ok()) {
    // An open refused for lack of descriptors has no side effect (no file
    // created or truncated), so it is simply tried again after releasing.
    for (;;) {
      room = cache_->Reserve();
      Result<std::unique_ptr<File>> result = inner_->Open(path, mode);
      if (result.ok()) {
        opened = std::move(*result);
        break;
      }
      room = FileHandleCache::Room();
      if (!IsTooManyOpenFiles(result.status()) || !cache_->ReleaseForRetry()) {
        return result.status();
      }
    }
  }
  FileHandleCache::Slot* slot = cache_->Register(std::move(opened), std::move(room), path, mode);
  return std::unique_ptr<File>(new CachedFile(cache_, slot));
}

Result<std::unique_ptr<File>> CachingFileSystem::OpenWithSize(const std::string& path,
                                                              OpenMode mode, uint64_t* size) {
  const bool existing = mode == OpenMode::kRead || mode == OpenMode::kReadWrite;
  if (!defer_opens_ || !existing) return FileSystem::OpenWithSize(path, mode, size);
  // The stat that decides to defer the open is also the size.
  Result<uint64_t> stat_size = inner_->FileSize(path);
  // A missing file is the usual answer (an index a load is about to
  // rebuild): the stat's NotFound is the answer, without stat and open again.
  if (stat_size.status().IsNotFound()) return stat_size.status();
  if (!stat_size.ok()) return FileSystem::OpenWithSize(path, mode, size);  // the inner error
  *size = *stat_size;
  FileHandleCache::Slot* slot = cache_->Register(nullptr, FileHandleCache::Room(), path, mode);
  return std::unique_ptr<File>(new CachedFile(cache_, slot));
}

// A one-shot use of a descriptor (ReadFile, ListDir, SyncDir) counts against
// the budget while it runs, and is retried after releasing on EMFILE.
Result<std::vector<uint8_t>> CachingFileSystem::ReadFile(const std::string& path) {
  return cache_->WithDescriptor([&] { return inner_->ReadFile(path); });
}

Status CachingFileSystem::Rename(const std::string& from, const std::string& to) {
  DARUMA_RETURN_IF_ERROR(inner_->Rename(from, to));
  cache_->AfterRename(from, to);
  return Status::Ok();
}

Status CachingFileSystem::Remove(const std::string& path) {
  cache_->BeforeRemove(path, /*tree=*/false);
  Status st = inner_->Remove(path);
  cache_->AfterRemove(path, false, st.ok());
  return st;
}

Status CachingFileSystem::RemoveAll(const std::string& path) {
  cache_->BeforeRemove(path, /*tree=*/true);
  // The walk holds a descriptor per directory level; it counts as one, and
  // an EMFILE (the walk stops where it was) is retried after releasing.
  Status st = cache_->WithDescriptor([&] { return inner_->RemoveAll(path); });
  cache_->AfterRemove(path, true, st.ok());
  return st;
}

Status CachingFileSystem::CreateDir(const std::string& path) {
  return inner_->CreateDir(path);
}
Status CachingFileSystem::SyncDir(const std::string& path) {
  return cache_->WithDescriptor([&] { return inner_->SyncDir(path); });
}
// Handles of files under `path` written before the sync are durable after
// it: they need not stay pinned (nor be synced again to make room).
Status CachingFileSystem::SyncFileSystem(const std::string& path) {
  const uint64_t stamp = cache_->WriteStamp();
  DARUMA_RETURN_IF_ERROR(cache_->WithDescriptor([&] { return inner_->SyncFileSystem(path); }));
  cache_->MarkSyncedBelow(path, stamp);
  return Status::Ok();
}
Result<std::vector<DirEntry>> CachingFileSystem::ListDir(const std::string& path) {
  return cache_->WithDescriptor([&] { return inner_->ListDir(path); });
}
bool CachingFileSystem::Exists(const std::string& path) {
  return inner_->Exists(path);
}
Result<uint64_t> CachingFileSystem::FileSize(const std::string& path) {
  return inner_->FileSize(path);
}
Result<int64_t> CachingFileSystem::ModifiedTimeMs(const std::string& path) {
  return inner_->ModifiedTimeMs(path);
}
Status CachingFileSystem::SetModifiedTimeMs(const std::string& path, int64_t ms) {
  return inner_->SetModifiedTimeMs(path, ms);
}

size_t DefaultMaxOpenFiles() {
  constexpr size_t kMinimum = 64;
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return std::max<size_t>(kMinimum, 4096);
  }
  return std::max<size_t>(kMinimum, size_t(limit.rlim_cur / 2));
}

}  // namespace daruma
