// FileHandleCache: a bounded LRU of open file handles shared by many logical
// files (RocksDB's table cache / max_open_files), so 10,000 partitions of
// several segments each can stay "open" with a few thousand descriptors.
//
// Model: every logical file is a Slot (its current path, the mode to reopen
// it with, and its real File handle while one is open). A caller borrows the
// handle for one operation with Acquire(); a Slot whose handle was evicted is
// reopened transparently. The borrowed handle is a shared_ptr: an eviction
// while another thread is inside ReadAt only drops the cache's reference, and
// the descriptor closes when that read returns.
//
// Invariants:
//  * At most `capacity` handles are open, except for pinned ones (below) and
//    handles still borrowed by an in-flight operation after their eviction
//    (at most one per concurrent operation).
//  * A handle with writes not yet Sync()ed is pinned: it is never evicted,
//    because closing it could drop a writeback error the next Sync must
//    report. It is unpinned by a successful MarkSynced. Creating, truncating
//    or extending a file leaves no dirty data pages (its errors are reported
//    at once), so it does not pin: a clean start that resizes every active
//    segment's indexes stays within the capacity. Pinned handles count
//    towards the capacity but may exceed it (a broker writing to more
//    partitions than `capacity` between flushes keeps them all open).
//  * A handle whose path was removed (or replaced by a rename) is "orphaned":
//    it stays pinned while its Slot lives, so the unlinked file remains
//    readable exactly as a POSIX descriptor would. An orphaned Slot whose
//    handle was already evicted fails with kNotFound.
//  * Reopening never creates or truncates: kRead stays kRead, every other
//    mode reopens as kReadWrite.
//  * Renames update the path of every live Slot at or below the old path
//    (files and whole directories), so a segment renamed to `.deleted` or a
//    partition directory renamed to `-delete` keeps working.
//
// Thread safety: every method may be called from any thread; one mutex guards
// the LRU and the Slots' fields. Opens and closes of real handles happen
// outside the mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"

namespace daruma {

class FileHandleCache {
 public:
  struct Slot;

  // Handles are opened through `inner`, which must outlive the cache.
  FileHandleCache(FileSystem* inner, size_t capacity);
  ~FileHandleCache();
  FileHandleCache(const FileHandleCache&) = delete;
  FileHandleCache& operator=(const FileHandleCache&) = delete;

  // Evicts so that one more handle fits within the capacity; called before
  // every real open, so the bound holds during the open too.
  void MakeRoomForOne();
  // Adopts `opened` (just opened with `mode` under `path`) as a new Slot; a
  // null `opened` registers the Slot evicted (opened on first use).
  Slot* Register(std::unique_ptr<File> opened, const std::string& path, OpenMode mode);
  // Forgets the Slot and closes its handle (if this was its last borrower).
  void Unregister(Slot* slot);

  // The Slot's open handle, reopened if it was evicted. With `dirtying` the
  // handle is pinned before it is returned (a write follows).
  Result<std::shared_ptr<File>> Acquire(Slot* slot, bool dirtying);
  // The Slot's handle if it is open now; null otherwise (never reopens).
  std::shared_ptr<File> AcquireIfOpen(Slot* slot);
  // After a successful Sync through `slot`: unpins its handle.
  void MarkSynced(Slot* slot);

  // The Slot's current path. The reference stays valid while the Slot lives;
  // it changes only on a rename, which must not race with the caller.
  const std::string& PathOf(const Slot* slot) const;

  // Bookkeeping for FileSystem::Rename/Remove/RemoveAll through the cache
  // (a removal or rename must not race with an Open of the same path).
  // BeforeRemove orphans (pins) the Slots at `path` (and below it with
  // `tree`) so their open handles survive the unlink; AfterRemove forgets
  // their paths when `removed`, or undoes BeforeRemove when the removal
  // failed. AfterRename moves the Slots at or below `from` to `to` and orphans
  // those that were at or below `to`.
  void BeforeRemove(const std::string& path, bool tree);
  void AfterRemove(const std::string& path, bool tree, bool removed);
  void AfterRename(const std::string& from, const std::string& to);

  FileSystem* inner() const { return inner_; }
  size_t capacity() const { return capacity_; }
  // Real handles held by the cache now (pinned ones included).
  size_t open_handles() const;
  size_t pinned_handles() const;
  // Real opens so far (registrations and reopens) and evictions.
  uint64_t opens() const;
  uint64_t evictions() const;

 private:
  // Requires mu_ held. Each collects the handles it drops into `closed`, so
  // the caller closes them after unlocking.
  void PinLocked(Slot* slot);
  void UnpinLocked(Slot* slot);
  void InstallLocked(Slot* slot, std::shared_ptr<File> handle, bool pin);
  // Evicts least recently used handles until at most `limit` are open.
  void EvictDownToLocked(size_t limit, std::vector<std::shared_ptr<File>>* closed);
  void EvictExcessLocked(std::vector<std::shared_ptr<File>>* closed) {
    EvictDownToLocked(capacity_, closed);
  }
  void DropHandleLocked(Slot* slot, std::vector<std::shared_ptr<File>>* closed);
  // Calls fn(slot) for every Slot whose path is `path` or, with `tree`, below it.
  template <typename Fn>
  void ForEachAtOrBelowLocked(const std::string& path, bool tree, Fn&& fn);
  void SetPathLocked(Slot* slot, std::string path);
  void ForgetPathLocked(Slot* slot);

  FileSystem* inner_;
  const size_t capacity_;
  mutable std::mutex mu_;
  // Open, unpinned handles, most recently used first.
  std::list<Slot*> lru_;
  size_t open_ = 0;
  size_t pinned_ = 0;
  uint64_t opens_ = 0;
  uint64_t evictions_ = 0;
  // Every live Slot by its current path (several Slots may share a path).
  std::multimap<std::string, Slot*> by_path_;
};

}  // namespace daruma
