// NoSyncFileSystem: the POSIX file system whose File::Sync and SyncDir can be
// switched off (they are off unless set_syncs(true)), for what a benchmark
// does not measure: generating data sets (creating 40,000 segments with real
// fsyncs takes most of an hour on a slow disk; the bytes are the same) and
// the clean shutdown between two measured start-ups (Kafka-style, it fsyncs
// every segment: minutes for 40,000). Measured phases run with syncs on.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "common/file_system.h"

namespace daruma::bench {

class NoSyncFileSystem final : public FileSystem {
 public:
  class NoSyncFile final : public File {
   public:
    NoSyncFile(const NoSyncFileSystem* owner, std::unique_ptr<File> f)
        : owner_(owner), f_(std::move(f)) {}
    Result<size_t> ReadAt(uint64_t pos, std::span<uint8_t> out) const override {
      return f_->ReadAt(pos, out);
    }
    Status WriteAt(uint64_t pos, std::span<const uint8_t> data) override {
      return f_->WriteAt(pos, data);
    }
    Status Sync() override { return owner_->syncs() ? f_->Sync() : Status::Ok(); }
    Status Truncate(uint64_t size) override { return f_->Truncate(size); }
    Result<uint64_t> Size() const override { return f_->Size(); }
    Result<uint64_t> DataEnd() const override { return f_->DataEnd(); }
    const std::string& path() const override { return f_->path(); }

   private:
    const NoSyncFileSystem* owner_;
    std::unique_ptr<File> f_;
  };

  void set_syncs(bool on) { syncs_.store(on); }
  bool syncs() const { return syncs_.load(); }

  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    DARUMA_ASSIGN_OR_RETURN(auto f, base_->Open(path, mode));
    return std::unique_ptr<File>(new NoSyncFile(this, std::move(f)));
  }
  Status Rename(const std::string& from, const std::string& to) override {
    return base_->Rename(from, to);
  }
  Status Remove(const std::string& path) override { return base_->Remove(path); }
  Status RemoveAll(const std::string& path) override { return base_->RemoveAll(path); }
  Status CreateDir(const std::string& path) override { return base_->CreateDir(path); }
  Status SyncDir(const std::string& path) override {
    return syncs() ? base_->SyncDir(path) : Status::Ok();
  }
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    return base_->ListDir(path);
  }
  bool Exists(const std::string& path) override { return base_->Exists(path); }
  Result<uint64_t> FileSize(const std::string& path) override { return base_->FileSize(path); }
  Result<int64_t> ModifiedTimeMs(const std::string& path) override {
    return base_->ModifiedTimeMs(path);
  }
  Status SetModifiedTimeMs(const std::string& path, int64_t ms) override {
    return base_->SetModifiedTimeMs(path, ms);
  }

  // Syncs off, for generating data sets.
  static NoSyncFileSystem* Instance() {
    static NoSyncFileSystem fs;
    return &fs;
  }

 private:
  FileSystem* base_ = FileSystem::Default();
  std::atomic<bool> syncs_{false};
};

}  // namespace daruma::bench
