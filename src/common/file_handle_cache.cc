#include "common/file_handle_cache.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

namespace daruma {

struct FileHandleCache::Slot {
  std::string path;
  OpenMode reopen_mode = OpenMode::kReadWrite;
  // Null while evicted.
  std::shared_ptr<File> handle;
  // Writes since the last successful Sync.
  bool dirty = false;
  // The path was removed or replaced: no reopen is possible.
  bool orphaned = false;
  // Bumped by every dirtying Acquire: a step-2 sync that started before it
  // did not cover that write, so it must not unpin the handle.
  uint64_t dirty_generation = 0;
  // The cache-wide write stamp (FileHandleCache::stamp_) of its last
  // dirtying Acquire.
  uint64_t dirtied_stamp = 0;
  // A step-2 sync of the handle is under way (outside the mutex).
  bool syncing = false;
  // A step-2 sync failed: the handle stays pinned and the next MarkSynced
  // returns this.
  Status sync_error;
  // Its entry in by_path_; none once a removal or rename took its path.
  std::optional<std::multimap<std::string, Slot*>::iterator> path_entry;
  // Its entry in lru_ or dirty_ (`list`) while the handle is open and not
  // orphaned.
  std::list<Slot*>* list = nullptr;
  std::list<Slot*>::iterator list_entry;

  bool pinned() const { return dirty || orphaned; }
  // No operation holds the handle now. Exact under the mutex: copies are
  // only made under it, so the count can only fall outside it.
  bool unborrowed() const { return handle.use_count() == 1; }
};

namespace {

OpenMode ReopenMode(OpenMode mode) {
  return mode == OpenMode::kRead ? OpenMode::kRead : OpenMode::kReadWrite;
}

bool IsAtOrBelow(const std::string& candidate, const std::string& path) {
  if (candidate == path) return true;
  return candidate.size() > path.size() && candidate.compare(0, path.size(), path) == 0 &&
         candidate[path.size()] == '/';
}

}  // namespace

FileHandleCache::Room& FileHandleCache::Room::operator=(Room&& other) noexcept {
  if (this != &other) {
    Return();
    cache_ = other.cache_;
    other.cache_ = nullptr;
  }
  return *this;
}

void FileHandleCache::Room::Return() {
  if (cache_ != nullptr) cache_->ReturnRoom();
  cache_ = nullptr;
}

FileHandleCache::FileHandleCache(FileSystem* inner, size_t capacity)
    : inner_(inner), capacity_(capacity == 0 ? 1 : capacity) {}

FileHandleCache::~FileHandleCache() = default;

void FileHandleCache::ReturnRoom() {
  std::lock_guard<std::mutex> lock(mu_);
  --rooms_;
}

FileHandleCache::Room FileHandleCache::Reserve() {
  std::vector<std::shared_ptr<File>> closed;  // closed after the unlock
  std::unique_lock<std::mutex> lock(mu_);
  ReleaseDownToLocked(lock, capacity_ - 1, SIZE_MAX, &closed);
  ++rooms_;
  return Room(this);
}

bool FileHandleCache::ReleaseForRetry() {
  std::vector<std::shared_ptr<File>> closed;
  std::unique_lock<std::mutex> lock(mu_);
  ++shortages_;
  return ReleaseDownToLocked(lock, 0, std::max<size_t>(1, open_ / 2), &closed) > 0;
}

size_t FileHandleCache::EvictCleanLocked(size_t limit, size_t max_releases,
                                         std::vector<std::shared_ptr<File>>* closed) {
  size_t released = 0;
  // From the least recently used end; `it` is one past the next candidate.
  auto it = lru_.end();
  while (counted() > limit && released < max_releases && it != lru_.begin()) {
    --it;
    Slot* slot = *it;
    if (!slot->unborrowed()) continue;
    ++it;  // stays valid when `slot` leaves the list
    DropHandleLocked(slot, closed);
    ++evictions_;
    ++released;
  }
  return released;
}

size_t FileHandleCache::ReleaseDownToLocked(std::unique_lock<std::mutex>& lock, size_t limit,
                                            size_t max_releases,
                                            std::vector<std::shared_ptr<File>>* closed) {
  size_t released = 0;
  for (;;) {
    // Step 1: the least recently used clean handles nobody borrowed (again
    // after each sync: a borrower may have returned one meanwhile).
    released += EvictCleanLocked(limit, max_releases - released, closed);
    if (counted() <= limit || released >= max_releases) break;
    // Step 2: sync the least recently written unsynced handle and close it.
    Slot* victim = nullptr;
    for (auto it = dirty_.rbegin(); it != dirty_.rend(); ++it) {
      Slot* s = *it;
      if (!s->syncing && s->sync_error.ok() && s->unborrowed()) {
        victim = s;
        break;
      }
    }
    if (victim == nullptr) break;  // everything left is borrowed, failed or orphaned
    victim->syncing = true;
    std::shared_ptr<File> handle = victim->handle;
    const uint64_t generation = victim->dirty_generation;
    lock.unlock();
    Status synced = handle->Sync();
    lock.lock();
    victim->syncing = false;
    sync_done_.notify_all();
    if (!synced.ok()) {
      victim->sync_error = synced;  // reported by the owner's next Sync
      continue;
    }
    // A write that began after the snapshot (a dirtying Acquire) may not be
    // covered by this sync: the handle stays pinned then.
    if (victim->handle != handle || victim->orphaned || victim->dirty_generation != generation) {
      continue;
    }
    handle.reset();
    victim->dirty = false;
    if (!victim->unborrowed()) {
      // A reader took it during the sync: clean now, step 1 closes it once
      // returned (closing it now would not free its descriptor).
      RelinkLocked(victim);
      continue;
    }
    DropHandleLocked(victim, closed);
    ++evictions_;
    ++synced_releases_;
    ++released;
  }
  return released;
}

FileHandleCache::Slot* FileHandleCache::Register(std::unique_ptr<File> opened, Room room,
                                                 const std::string& path, OpenMode mode) {
  auto* slot = new Slot;
  slot->path = path;
  slot->reopen_mode = ReopenMode(mode);
  std::vector<std::shared_ptr<File>> closed;
  std::lock_guard<std::mutex> lock(mu_);
  slot->path_entry = by_path_.emplace(path, slot);
  if (opened) {
    ++opens_;
    InstallLocked(slot, std::shared_ptr<File>(std::move(opened)), /*dirtying=*/false);
    if (room.cache_ != nullptr) {
      room.cache_ = nullptr;  // the handle takes its place
      --rooms_;
    }
    EvictCleanLocked(capacity_, SIZE_MAX, &closed);  // if it was opened without room
  }
  return slot;
}

void FileHandleCache::Unregister(Slot* slot) {
  std::vector<std::shared_ptr<File>> closed;
  {
    std::unique_lock<std::mutex> lock(mu_);
    sync_done_.wait(lock, [slot] { return !slot->syncing; });
    DropHandleLocked(slot, &closed);
    ForgetPathLocked(slot);
  }
  delete slot;
}

void FileHandleCache::InstallLocked(Slot* slot, std::shared_ptr<File> handle, bool dirtying) {
  slot->handle = std::move(handle);
  ++open_;
  if (dirtying) {
    slot->dirty = true;
    ++slot->dirty_generation;
    slot->dirtied_stamp = ++stamp_;
  }
  RelinkLocked(slot);
}

void FileHandleCache::UnlinkLocked(Slot* slot) {
  if (slot->list == nullptr) return;
  slot->list->erase(slot->list_entry);
  slot->list = nullptr;
}

void FileHandleCache::RelinkLocked(Slot* slot) {
  std::list<Slot*>* target = nullptr;
  if (slot->handle && !slot->orphaned) target = slot->dirty ? &dirty_ : &lru_;
  if (target == nullptr) return UnlinkLocked(slot);
  if (slot->list != nullptr) {
    // Moves the node (no allocation on every Acquire); list_entry stays valid.
    target->splice(target->begin(), *slot->list, slot->list_entry);
  } else {
    target->push_front(slot);
    slot->list_entry = target->begin();
  }
  slot->list = target;
}

void FileHandleCache::DropHandleLocked(Slot* slot, std::vector<std::shared_ptr<File>>* closed) {
  if (!slot->handle) return;
  UnlinkLocked(slot);
  --open_;
  closed->push_back(std::move(slot->handle));
  slot->handle.reset();
}

Result<std::shared_ptr<File>> FileHandleCache::Acquire(Slot* slot, bool dirtying) {
  std::string path;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (slot->handle) {
        if (dirtying) {
          slot->dirty = true;
          ++slot->dirty_generation;
          slot->dirtied_stamp = ++stamp_;
        }
        RelinkLocked(slot);  // most recently used (or written) now
        return slot->handle;
      }
      if (slot->orphaned) {
        return Status::NotFound("reopen " + slot->path +
                                ": the file was removed or replaced while its handle was closed");
      }
      path = slot->path;
    }
    // Reopen outside the lock; another thread may reopen the same Slot
    // meanwhile (the first one installed wins) or rename it (then retry).
    Room room = Reserve();
    Result<std::unique_ptr<File>> opened = inner_->Open(path, slot->reopen_mode);
    if (!opened.ok() && IsTooManyOpenFiles(opened.status())) {
      room = Room();
      if (ReleaseForRetry()) continue;
      return opened.status();
    }
    std::shared_ptr<File> loser;
    std::vector<std::shared_ptr<File>> closed;
    std::lock_guard<std::mutex> lock(mu_);
    if (!opened.ok()) {
      if (!slot->handle && !slot->orphaned && slot->path == path) return opened.status();
      continue;  // renamed or reopened by another thread meanwhile: look again
    }
    if (slot->handle || slot->path != path) {
      loser = std::shared_ptr<File>(std::move(*opened));
      continue;
    }
    ++opens_;
    InstallLocked(slot, std::shared_ptr<File>(std::move(*opened)), dirtying);
    room.cache_ = nullptr;  // the handle takes its place
    --rooms_;
    // Borrowed first, so the eviction of an excess (a room given up after a
    // race) spares it.
    std::shared_ptr<File> handle = slot->handle;
    EvictCleanLocked(capacity_, SIZE_MAX, &closed);
    return handle;
  }
}

std::shared_ptr<File> FileHandleCache::AcquireIfOpen(Slot* slot) {
  std::lock_guard<std::mutex> lock(mu_);
  return slot->handle;
}

Status FileHandleCache::MarkSynced(Slot* slot) {
  std::vector<std::shared_ptr<File>> closed;
  std::lock_guard<std::mutex> lock(mu_);
  Status earlier = std::move(slot->sync_error);
  slot->sync_error = Status::Ok();
  if (!slot->dirty) return earlier;
  slot->dirty = false;
  RelinkLocked(slot);
  // Pinned handles beyond the capacity (see the invariant) go once clean.
  EvictCleanLocked(capacity_, SIZE_MAX, &closed);
  return earlier;
}

uint64_t FileHandleCache::WriteStamp() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stamp_;
}

void FileHandleCache::MarkSyncedBelow(const std::string& dir, uint64_t stamp) {
  std::vector<std::shared_ptr<File>> closed;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Slot*> synced;
  for (Slot* slot : dirty_) {
    if (slot->dirtied_stamp <= stamp && !slot->syncing && slot->sync_error.ok() &&
        IsAtOrBelow(slot->path, dir)) {
      synced.push_back(slot);
    }
  }
  for (Slot* slot : synced) {
    slot->dirty = false;
    RelinkLocked(slot);
  }
  EvictCleanLocked(capacity_, SIZE_MAX, &closed);
}

const std::string& FileHandleCache::PathOf(const Slot* slot) const {
  return slot->path;
}

template <typename Fn>
void FileHandleCache::ForEachAtOrBelowLocked(const std::string& path, bool tree, Fn&& fn) {
  std::vector<Slot*> matches;
  for (auto it = by_path_.lower_bound(path); it != by_path_.end(); ++it) {
    if (it->first != path && (!tree || !IsAtOrBelow(it->first, path))) {
      // Paths below `path` sort right after "path/" prefixes; anything else
      // sorting between them (e.g. "path-x") is skipped, not a stop.
      if (it->first.compare(0, path.size(), path) != 0) break;
      continue;
    }
    matches.push_back(it->second);
  }
  for (Slot* slot : matches) fn(slot);
}

void FileHandleCache::BeforeRemove(const std::string& path, bool tree) {
  std::lock_guard<std::mutex> lock(mu_);
  ForEachAtOrBelowLocked(path, tree, [this](Slot* slot) {
    slot->orphaned = true;
    RelinkLocked(slot);
  });
}

void FileHandleCache::AfterRemove(const std::string& path, bool tree, bool removed) {
  std::lock_guard<std::mutex> lock(mu_);
  ForEachAtOrBelowLocked(path, tree, [&](Slot* slot) {
    if (removed) return ForgetPathLocked(slot);
    slot->orphaned = false;
    RelinkLocked(slot);
  });
}

void FileHandleCache::ForgetPathLocked(Slot* slot) {
  if (!slot->path_entry) return;
  by_path_.erase(*slot->path_entry);
  slot->path_entry.reset();
}

void FileHandleCache::SetPathLocked(Slot* slot, std::string path) {
  auto node = by_path_.extract(*slot->path_entry);
  node.key() = path;
  slot->path = std::move(path);
  slot->path_entry = by_path_.insert(std::move(node));
}

void FileHandleCache::AfterRename(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  // Slots at `to` (or below it, for a directory) lost their file, unless they
  // are the ones being renamed (`to` inside `from` cannot happen on POSIX).
  std::vector<Slot*> replaced;
  ForEachAtOrBelowLocked(to, true, [&](Slot* slot) {
    if (!IsAtOrBelow(slot->path, from)) replaced.push_back(slot);
  });
  for (Slot* slot : replaced) {
    ForgetPathLocked(slot);
    slot->orphaned = true;
    RelinkLocked(slot);
  }
  std::vector<Slot*> moved;
  ForEachAtOrBelowLocked(from, true, [&](Slot* slot) { moved.push_back(slot); });
  for (Slot* slot : moved) SetPathLocked(slot, to + slot->path.substr(from.size()));
}

size_t FileHandleCache::open_handles() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_;
}

size_t FileHandleCache::pinned_handles() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_ - lru_.size();
}

uint64_t FileHandleCache::opens() const {
  std::lock_guard<std::mutex> lock(mu_);
  return opens_;
}

uint64_t FileHandleCache::evictions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evictions_;
}

uint64_t FileHandleCache::synced_releases() const {
  std::lock_guard<std::mutex> lock(mu_);
  return synced_releases_;
}

uint64_t FileHandleCache::descriptor_shortages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shortages_;
}

}  // namespace daruma
