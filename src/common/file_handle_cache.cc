#include "common/file_handle_cache.h"

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
  // Its entry in by_path_; none once a removal or rename took its path.
  std::optional<std::multimap<std::string, Slot*>::iterator> path_entry;
  // In lru_ while the handle is open and unpinned.
  std::optional<std::list<Slot*>::iterator> lru_entry;

  bool pinned() const { return dirty || orphaned; }
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

FileHandleCache::FileHandleCache(FileSystem* inner, size_t capacity)
    : inner_(inner), capacity_(capacity == 0 ? 1 : capacity) {}

FileHandleCache::~FileHandleCache() = default;

FileHandleCache::Slot* FileHandleCache::Register(std::unique_ptr<File> opened,
                                                 const std::string& path, OpenMode mode) {
  auto* slot = new Slot;
  slot->path = path;
  slot->reopen_mode = ReopenMode(mode);
  std::vector<std::shared_ptr<File>> closed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    slot->path_entry = by_path_.emplace(path, slot);
    if (opened) {
      ++opens_;
      InstallLocked(slot, std::shared_ptr<File>(std::move(opened)), /*pin=*/false);
      EvictExcessLocked(&closed);
    }
  }
  return slot;
}

void FileHandleCache::Unregister(Slot* slot) {
  std::vector<std::shared_ptr<File>> closed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    DropHandleLocked(slot, &closed);
    ForgetPathLocked(slot);
  }
  delete slot;
}

void FileHandleCache::InstallLocked(Slot* slot, std::shared_ptr<File> handle, bool pin) {
  slot->handle = std::move(handle);
  ++open_;
  slot->dirty = slot->dirty || pin;
  if (slot->pinned()) {
    ++pinned_;
  } else {
    lru_.push_front(slot);
    slot->lru_entry = lru_.begin();
  }
}

void FileHandleCache::DropHandleLocked(Slot* slot, std::vector<std::shared_ptr<File>>* closed) {
  if (!slot->handle) return;
  if (slot->lru_entry) {
    lru_.erase(*slot->lru_entry);
    slot->lru_entry.reset();
  } else {
    --pinned_;
  }
  --open_;
  closed->push_back(std::move(slot->handle));
  slot->handle.reset();
}

void FileHandleCache::MakeRoomForOne() {
  std::vector<std::shared_ptr<File>> closed;
  std::lock_guard<std::mutex> lock(mu_);
  EvictDownToLocked(capacity_ - 1, &closed);
}

void FileHandleCache::EvictDownToLocked(size_t limit, std::vector<std::shared_ptr<File>>* closed) {
  while (open_ > limit && !lru_.empty()) {
    DropHandleLocked(lru_.back(), closed);
    ++evictions_;
  }
}

void FileHandleCache::PinLocked(Slot* slot) {
  if (!slot->handle || !slot->lru_entry) return;
  lru_.erase(*slot->lru_entry);
  slot->lru_entry.reset();
  ++pinned_;
}

void FileHandleCache::UnpinLocked(Slot* slot) {
  if (!slot->handle || slot->lru_entry || slot->pinned()) return;
  --pinned_;
  lru_.push_front(slot);
  slot->lru_entry = lru_.begin();
}

Result<std::shared_ptr<File>> FileHandleCache::Acquire(Slot* slot, bool dirtying) {
  std::string path;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (slot->handle) {
        if (dirtying) {
          slot->dirty = true;
          PinLocked(slot);
        } else if (slot->lru_entry) {
          lru_.splice(lru_.begin(), lru_, *slot->lru_entry);
        }
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
    MakeRoomForOne();
    Result<std::unique_ptr<File>> opened = inner_->Open(path, slot->reopen_mode);
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
    std::shared_ptr<File> handle = slot->handle;
    EvictExcessLocked(&closed);
    return handle;
  }
}

std::shared_ptr<File> FileHandleCache::AcquireIfOpen(Slot* slot) {
  std::lock_guard<std::mutex> lock(mu_);
  return slot->handle;
}

void FileHandleCache::MarkSynced(Slot* slot) {
  std::vector<std::shared_ptr<File>> closed;
  std::lock_guard<std::mutex> lock(mu_);
  if (!slot->dirty) return;
  slot->dirty = false;
  UnpinLocked(slot);
  EvictExcessLocked(&closed);
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
    PinLocked(slot);
  });
}

void FileHandleCache::AfterRemove(const std::string& path, bool tree, bool removed) {
  std::lock_guard<std::mutex> lock(mu_);
  ForEachAtOrBelowLocked(path, tree, [&](Slot* slot) {
    if (removed) return ForgetPathLocked(slot);
    slot->orphaned = false;
    UnpinLocked(slot);
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
    PinLocked(slot);
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
  return pinned_;
}

uint64_t FileHandleCache::opens() const {
  std::lock_guard<std::mutex> lock(mu_);
  return opens_;
}

uint64_t FileHandleCache::evictions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evictions_;
}

}  // namespace daruma
