// DeferredSyncFileSystem: a decorator whose File::Sync and SyncDir do nothing
// while deferring is on, so that a phase touching thousands of files (a
// start-up's partition loads, a shutdown's flushes) pays for durability with
// one SyncFileSystem (syncfs) per log dir instead of an fsync per file.
//
// Contract (the caller's, LogManager's):
//  * While deferring, a Sync or SyncDir that returned Ok promises nothing:
//    the caller must not write anything that relies on those files being
//    durable (a recovery-point checkpoint, the clean-shutdown marker, the
//    removal of a load's undo log) until SyncFileSystem on the log dir
//    returned Ok after the last write of the phase.
//  * Only writes through this object are deferred. Whatever needs ordering
//    inside the phase (an undo record durable before the change it undoes)
//    syncs through the file system below it.
//  * Files opened while deferring keep this decorator for their lifetime;
//    once deferring is off their Sync is a plain fsync again.
//  * A sync barrier (SetSyncBarrier), once deferring is off, runs before
//    the first sync passed down (File::Sync, SyncFile, SyncDir; a
//    WriteFileAtomically syncs through these) until it succeeds: for a
//    change left unsynced that must be durable before anything written
//    through this object is (LogDirLoader: the removal of a load's undo
//    pack, which would otherwise roll back files a flush made durable).
// Everything else passes straight through, including the descriptor (so
// Fetch still uses sendfile) and writable maps (appends still memcpy).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/forwarding_file_system.h"

namespace daruma {

class DeferredSyncFileSystem final : public ForwardingFileSystem {
 public:
  explicit DeferredSyncFileSystem(FileSystem* base) : ForwardingFileSystem(base) {}

  void set_deferring(bool on) { deferring_.store(on, std::memory_order_release); }
  bool deferring() const { return deferring_.load(std::memory_order_acquire); }

  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override;
  Result<std::unique_ptr<File>> OpenWithSize(const std::string& path, OpenMode mode,
                                             uint64_t* size) override;
  Result<std::vector<uint8_t>> ReadFile(const std::string& path) override {
    return base()->ReadFile(path);
  }
  Status SyncDir(const std::string& path) override;
  Status SyncFile(const std::string& path) override;

  // Replaces the barrier (see the contract). It must not sync through this
  // object. A failed barrier fails the sync that ran it and runs again
  // before the next one.
  void SetSyncBarrier(std::function<Status()> barrier);
  // Runs the barrier if one is set; Ok when none is.
  Status PassSyncBarrier() const;

 private:
  std::atomic<bool> deferring_{false};
  mutable std::atomic<bool> barrier_set_{false};
  mutable std::mutex barrier_mu_;
  mutable std::function<Status()> barrier_;  // guarded by barrier_mu_
};

}  // namespace daruma
