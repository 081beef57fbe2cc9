// ForwardingFileSystem / ForwardingFile: decorators that pass every call to
// another FileSystem / File, so a decorator (fault injection, counting, a
// slow disk in tests, skipping fsync in benchmarks) overrides only the calls
// it changes. Like LevelDB's EnvWrapper.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/file_system.h"

namespace daruma {

class ForwardingFile : public File {
 public:
  explicit ForwardingFile(std::unique_ptr<File> base) : base_(std::move(base)) {}

  Result<size_t> ReadAt(uint64_t pos, std::span<uint8_t> out) const override {
    return base_->ReadAt(pos, out);
  }
  Status WriteAt(uint64_t pos, std::span<const uint8_t> data) override {
    return base_->WriteAt(pos, data);
  }
  Status Sync() override { return base_->Sync(); }
  Status Truncate(uint64_t size) override { return base_->Truncate(size); }
  Result<uint64_t> Size() const override { return base_->Size(); }
  Result<uint64_t> DataEnd() const override { return base_->DataEnd(); }
  Result<uint64_t> DataFrom(uint64_t pos) const override { return base_->DataFrom(pos); }
  void DropCache(uint64_t pos, uint64_t len) override { base_->DropCache(pos, len); }
  void WillNeed(uint64_t pos, uint64_t len) override { base_->WillNeed(pos, len); }
  std::unique_ptr<MappedRegion> MapForRead(uint64_t pos, size_t len) const override {
    return base_->MapForRead(pos, len);
  }
  const std::string& path() const override { return base_->path(); }

 protected:
  File* base() const { return base_.get(); }

 private:
  std::unique_ptr<File> base_;
};

class ForwardingFileSystem : public FileSystem {
 public:
  explicit ForwardingFileSystem(FileSystem* base = FileSystem::Default()) : base_(base) {}

  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    return base_->Open(path, mode);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    return base_->Rename(from, to);
  }
  Status Remove(const std::string& path) override { return base_->Remove(path); }
  Status RemoveAll(const std::string& path) override { return base_->RemoveAll(path); }
  Status CreateDir(const std::string& path) override { return base_->CreateDir(path); }
  Status SyncDir(const std::string& path) override { return base_->SyncDir(path); }
  Status SyncFileSystem(const std::string& path) override { return base_->SyncFileSystem(path); }
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

 protected:
  FileSystem* base() const { return base_; }

 private:
  FileSystem* base_;
};

}  // namespace daruma
