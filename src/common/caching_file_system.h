// CachingFileSystem: a FileSystem decorator that bounds the open file
// descriptors of everything opened through it (`daruma.max.open.files`).
//
// Every File it hands out keeps only its path and open mode; each operation
// borrows a real File of the inner FileSystem from a FileHandleCache of at
// most `max_open_files` handles (see file_handle_cache.h for the pinning,
// eviction and rename rules). Consequences callers may rely on:
//  * Open() opens the inner file at once, so errors (kNotFound, kCreate,
//    kTruncate, kCreateExclusive side effects) happen exactly as without the
//    decorator. Reopens after an eviction use kRead/kReadWrite only.
//  * Data written and not yet synced keeps its handle open until Sync()
//    succeeds, or until the cache needs its descriptor: then it syncs the file
//    itself and closes it, and a failure of that sync is returned by the
//    file's next Sync(). Sync() on an evicted file reopens it and fsyncs (it
//    may hold bytes written by an earlier process).
//  * Directory listings, directory fsyncs, RemoveAll and ReadFile count
//    against the budget (one descriptor) while they run.
//  * EMFILE/ENFILE (IsTooManyOpenFiles) from an open, a listing, a directory
//    fsync, RemoveAll or ReadFile makes the cache release handles and try
//    again; the caller sees it only when nothing is left to release.
//  * Size() of an evicted file is a stat of its path (no reopen).
//  * ReadAt stays safe concurrently; an eviction never closes a descriptor
//    under an in-flight operation.
//  * MapForRead regions outlive the handle's eviction (an mmap survives close).
//  * Rename/Remove/RemoveAll through this decorator keep live Files working
//    (renamed paths are followed; removed files stay readable through a
//    handle that was open). Changes made behind its back are not seen.
//  * Everything else forwards to the inner FileSystem unchanged.
// Files may outlive the CachingFileSystem (they share the cache), but not the
// inner FileSystem.
//
// Installed by LogManager over its configured FileSystem, so a
// fault-injecting FileSystem underneath still sees every real operation.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/file_handle_cache.h"
#include "common/file_system.h"

namespace daruma {

class CachingFileSystem final : public FileSystem {
 public:
  // With `defer_opens`, Open(kRead / kReadWrite) of an existing file only
  // stats it; the real open happens on first use (a clean start opens every
  // segment and reads a few). The price: a file removed before its first use
  // can no longer be read through that File, as it could through an open
  // descriptor.
  CachingFileSystem(FileSystem* inner, size_t max_open_files, bool defer_opens = false);
  ~CachingFileSystem() override;

  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override;
  Result<std::unique_ptr<File>> OpenWithSize(const std::string& path, OpenMode mode,
                                             uint64_t* size) override;
  // Reads through the inner file system: a one-shot read needs no slot.
  Result<std::vector<uint8_t>> ReadFile(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  Status RemoveAll(const std::string& path) override;
  Status CreateDir(const std::string& path) override;
  Status SyncDir(const std::string& path) override;
  Status SyncFileSystem(const std::string& path) override;
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override;
  bool Exists(const std::string& path) override;
  Result<uint64_t> FileSize(const std::string& path) override;
  Result<int64_t> ModifiedTimeMs(const std::string& path) override;
  Status SetModifiedTimeMs(const std::string& path, int64_t ms) override;

  FileSystem* inner() const { return inner_; }
  const FileHandleCache& cache() const { return *cache_; }
  // Runs `use`, which opens descriptors the cache does not hold (an event
  // loop's, say), again after releasing handles while it fails with
  // IsTooManyOpenFiles (FileHandleCache::WithDescriptor).
  Status WithDescriptors(const std::function<Status()>& use) { return cache_->WithDescriptor(use); }

 private:
  FileSystem* inner_;
  std::shared_ptr<FileHandleCache> cache_;
  bool defer_opens_;
};

// The default for daruma.max.open.files: half of the RLIMIT_NOFILE soft limit
// (the rest is left to sockets, checkpoints and snapshots), at least 64.
size_t DefaultMaxOpenFiles();

}  // namespace daruma
