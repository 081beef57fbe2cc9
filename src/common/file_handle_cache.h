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
// The budget: every descriptor the cache's users take through it counts
// against `capacity`: the handles it holds, and a Room for each open under
// way or one-shot use of a descriptor (a ReadFile, a directory listing or
// fsync). Reserve() makes that Room first, in this order, until one more
// descriptor fits:
//  1. it closes the least recently used clean handles that no operation has
//     borrowed;
//  2. when only unsynced (pinned) handles are left, it syncs the least
//     recently written one nobody has borrowed and closes it ("sync and
//     release instead of opening more"): a broker appending to more
//     partitions than the budget allows files between two flushes (each
//     append pins the .log, each index entry or mapped index window the
//     index) stays within it.
//  A borrowed handle is never closed by either step (that would not free its
//  descriptor); a sync that a borrower overlapped only marks it clean.
// Invariant: the descriptors open through the cache (handles held, Rooms)
// stay within `capacity`, except that an open goes ahead when nothing can be
// released (every handle borrowed by an operation in flight, orphaned, or
// whose release sync failed): one descriptor over per such open while it
// lasts. Orphaned handles count but are never released. kTransientSlack is
// the margin that allows for kTransientSlack threads doing so at once;
// tests and callers sizing a descriptor limit use it.
//
// Pinning (handles never closed by step 1):
//  * A handle with writes not yet Sync()ed is pinned, because closing it
//    could drop a writeback error the next Sync must report. Step 2 syncs it
//    first; a failure there is kept and returned by the Slot's next
//    MarkSynced, so the owner's own Sync still reports it. A successful
//    MarkSynced unpins. Creating, truncating or extending a file leaves no
//    dirty data pages (its errors are reported at once), so it does not pin.
//  * A handle whose path was removed (or replaced by a rename) is "orphaned":
//    it stays pinned while its Slot lives, so the unlinked file remains
//    readable exactly as a POSIX descriptor would. An orphaned Slot whose
//    handle was already evicted fails with kNotFound.
//
// Running out of descriptors: an open that fails with EMFILE/ENFILE
// (IsTooManyOpenFiles) is the process's shortage, not the disk's: the
// descriptor limit is below the budget, or other descriptors (sockets) use
// the rest. ReleaseForRetry() then closes up to half of the handles held
// (at least one; steps 1 and 2) and the caller tries again; only when nothing
// is left to release does the error reach the caller, for that one file.
//
// Other rules:
//  * Reopening never creates or truncates: kRead stays kRead, every other
//    mode reopens as kReadWrite.
//  * Renames update the path of every live Slot at or below the old path
//    (files and whole directories), so a segment renamed to `.deleted` or a
//    partition directory renamed to `-delete` keeps working.
//
// Thread safety: every method may be called from any thread; one mutex guards
// the lists and the Slots' fields. Opens, closes and syncs of real handles
// happen outside the mutex.
#pragma once

#include <condition_variable>
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

  // The margin over `capacity` (see the invariant above) that callers size
  // a descriptor limit with and tests assert: up to this many threads
  // opening while nothing can be released. The dir's `.lock`, sockets and
  // the scheduler's descriptors are not the cache's and come on top.
  static constexpr size_t kTransientSlack = 8;

  // Room for one descriptor, held from before a real open (or a one-shot use
  // of a descriptor) until the handle is installed (Register/Acquire) or the
  // use is over (destruction).
  class Room {
   public:
    Room() = default;
    ~Room() { Return(); }
    Room(Room&& other) noexcept : cache_(other.cache_) { other.cache_ = nullptr; }
    Room& operator=(Room&& other) noexcept;
    Room(const Room&) = delete;
    Room& operator=(const Room&) = delete;

   private:
    friend class FileHandleCache;
    explicit Room(FileHandleCache* cache) : cache_(cache) {}
    void Return();
    FileHandleCache* cache_ = nullptr;
  };

  // Handles are opened through `inner`, which must outlive the cache.
  FileHandleCache(FileSystem* inner, size_t capacity);
  ~FileHandleCache();
  FileHandleCache(const FileHandleCache&) = delete;
  FileHandleCache& operator=(const FileHandleCache&) = delete;

  // Releases handles (steps 1 and 2 above) until one more descriptor fits,
  // and holds room for it.
  Room Reserve();
  // After an open failed with IsTooManyOpenFiles: releases half of the
  // handles it can (at least one). False when none could be released: then
  // retrying is pointless.
  bool ReleaseForRetry();
  // Runs `use` (a Status or Result<T> call that holds one descriptor while
  // it runs) within a Room, and again after each ReleaseForRetry while it
  // fails with IsTooManyOpenFiles.
  template <typename Use>
  auto WithDescriptor(Use&& use) -> decltype(use());

  // Adopts `opened` (just opened with `mode` under `path`, within `room`) as
  // a new Slot; a null `opened` registers the Slot evicted (opened on first
  // use) and needs no room.
  Slot* Register(std::unique_ptr<File> opened, Room room, const std::string& path, OpenMode mode);
  // Forgets the Slot and closes its handle (if this was its last borrower).
  void Unregister(Slot* slot);

  // The Slot's open handle, reopened if it was evicted. With `dirtying` the
  // handle is pinned before it is returned (a write follows).
  Result<std::shared_ptr<File>> Acquire(Slot* slot, bool dirtying);
  // The Slot's handle if it is open now; null otherwise (never reopens).
  std::shared_ptr<File> AcquireIfOpen(Slot* slot);
  // After a successful Sync through `slot`: unpins its handle, or returns
  // the error of a sync the cache made of it meanwhile (step 2), which
  // the caller's Sync must report as its own.
  Status MarkSynced(Slot* slot);
  // After a sync of the whole file system (FileSystem::SyncFileSystem) that
  // began when WriteStamp() returned `stamp`: unpins the handles of files at
  // or below `dir` whose last write came before it. Only for a caller that
  // knows no write to those files was under way then (LogManager syncs a
  // log dir once its loads or its shutdown flushes are done).
  uint64_t WriteStamp() const;
  void MarkSyncedBelow(const std::string& dir, uint64_t stamp);

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
  // Real opens so far (registrations and reopens) and evictions (synced
  // releases included).
  uint64_t opens() const;
  uint64_t evictions() const;
  // Pinned handles synced and closed to make room (step 2).
  uint64_t synced_releases() const;
  // Opens refused with EMFILE/ENFILE and tried again after releasing.
  uint64_t descriptor_shortages() const;

 private:
  static const Status& StatusOf(const Status& status) { return status; }
  template <typename T>
  static const Status& StatusOf(const Result<T>& result) {
    return result.status();
  }
  // Requires mu_ held.
  void InstallLocked(Slot* slot, std::shared_ptr<File> handle, bool dirtying);
  // Puts an open Slot at the front of the list its state belongs to: lru_
  // (clean), dirty_ (unsynced, not orphaned) or none (orphaned).
  void RelinkLocked(Slot* slot);
  void UnlinkLocked(Slot* slot);
  void DropHandleLocked(Slot* slot, std::vector<std::shared_ptr<File>>* closed);
  // Step 1 only (never unlocks): closes the least recently used clean
  // handles nobody borrowed while more than `limit` descriptors are counted,
  // at most `max_releases`. Returns how many it closed.
  size_t EvictCleanLocked(size_t limit, size_t max_releases,
                          std::vector<std::shared_ptr<File>>* closed);
  // Releases handles until at most `limit` descriptors (held + rooms) are
  // counted or nothing more can go; at most `max_releases` of them. Unlocks
  // `lock` while it syncs (step 2). The handles it drops go to `closed`, for
  // the caller to close after unlocking. Returns how many it released.
  size_t ReleaseDownToLocked(std::unique_lock<std::mutex>& lock, size_t limit, size_t max_releases,
                             std::vector<std::shared_ptr<File>>* closed);
  size_t counted() const { return open_ + rooms_; }
  // Calls fn(slot) for every Slot whose path is `path` or, with `tree`, below it.
  template <typename Fn>
  void ForEachAtOrBelowLocked(const std::string& path, bool tree, Fn&& fn);
  void SetPathLocked(Slot* slot, std::string path);
  void ForgetPathLocked(Slot* slot);
  void ReturnRoom();

  FileSystem* inner_;
  const size_t capacity_;
  mutable std::mutex mu_;
  // Signalled when a step-2 sync ends (Unregister waits for its Slot's).
  std::condition_variable sync_done_;
  // Open handles by state, most recently used (or written) first: clean
  // ones, and unsynced ones that are not orphaned.
  std::list<Slot*> lru_;
  std::list<Slot*> dirty_;
  size_t open_ = 0;
  size_t rooms_ = 0;
  uint64_t opens_ = 0;
  uint64_t evictions_ = 0;
  uint64_t synced_releases_ = 0;
  uint64_t shortages_ = 0;
  uint64_t stamp_ = 0;  // bumped by every dirtying Acquire
  // Every live Slot by its current path (several Slots may share a path).
  std::multimap<std::string, Slot*> by_path_;
};

template <typename Use>
auto FileHandleCache::WithDescriptor(Use&& use) -> decltype(use()) {
  for (;;) {
    Room room = Reserve();
    auto result = use();
    if (!IsTooManyOpenFiles(StatusOf(result))) return result;
    room = Room();  // given back before releasing more
    if (!ReleaseForRetry()) return result;
  }
}

}  // namespace daruma
