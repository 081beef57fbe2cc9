// NoSyncFileSystem: the POSIX file system whose File::Sync and SyncDir can be
// switched off (they are off unless set_syncs(true)), for what a test or a
// benchmark does not measure: generating data sets (creating 40,000 segments
// with real fsyncs takes most of an hour on a slow disk; the bytes are the
// same) and the clean shutdown between two measured start-ups. Never for data
// anyone keeps: with syncs off nothing is durable.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "common/forwarding_file_system.h"

namespace daruma {

class NoSyncFileSystem final : public ForwardingFileSystem {
 public:
  void set_syncs(bool on) { syncs_.store(on); }
  bool syncs() const { return syncs_.load(); }

  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    DARUMA_ASSIGN_OR_RETURN(auto f, base()->Open(path, mode));
    return std::unique_ptr<File>(new NoSyncFile(this, std::move(f)));
  }
  Status SyncDir(const std::string& path) override {
    return syncs() ? ForwardingFileSystem::SyncDir(path) : Status::Ok();
  }
  Status SyncFileSystem(const std::string& path) override {
    return syncs() ? ForwardingFileSystem::SyncFileSystem(path) : Status::Ok();
  }

  // A process-wide instance, syncs off.
  static NoSyncFileSystem* Instance() {
    static NoSyncFileSystem fs;
    return &fs;
  }

 private:
  class NoSyncFile final : public ForwardingFile {
   public:
    NoSyncFile(const NoSyncFileSystem* owner, std::unique_ptr<File> f)
        : ForwardingFile(std::move(f)), owner_(owner) {}
    Status Sync() override { return owner_->syncs() ? ForwardingFile::Sync() : Status::Ok(); }

   private:
    const NoSyncFileSystem* owner_;
  };

  std::atomic<bool> syncs_{false};
};

}  // namespace daruma
