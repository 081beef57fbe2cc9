// SlowDiskFileSystem: the POSIX file system, except that while the gate is
// closed every File::WriteAt to a file whose path contains `marker` blocks
// until the gate opens: a disk that stalls for one partition only. Tests use
// it to hold a request on a request handler thread for as long as they want.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/file_system.h"

namespace daruma::broker::testing {

class SlowDiskFileSystem final : public FileSystem {
 public:
  explicit SlowDiskFileSystem(std::string marker) : marker_(std::move(marker)) {}

  void CloseGate() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  void OpenGate() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = false;
    cv_.notify_all();
  }
  // Writers waiting at the gate now.
  int blocked() {
    std::lock_guard<std::mutex> lock(mu_);
    return blocked_;
  }

  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    DARUMA_ASSIGN_OR_RETURN(std::unique_ptr<File> file, base_->Open(path, mode));
    if (path.find(marker_) == std::string::npos) return file;
    return std::unique_ptr<File>(std::make_unique<GatedFile>(this, std::move(file)));
  }
  Status Rename(const std::string& from, const std::string& to) override {
    return base_->Rename(from, to);
  }
  Status Remove(const std::string& path) override { return base_->Remove(path); }
  Status RemoveAll(const std::string& path) override { return base_->RemoveAll(path); }
  Status CreateDir(const std::string& path) override { return base_->CreateDir(path); }
  Status SyncDir(const std::string& path) override { return base_->SyncDir(path); }
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

 private:
  class GatedFile final : public File {
   public:
    GatedFile(SlowDiskFileSystem* fs, std::unique_ptr<File> base)
        : fs_(fs), base_(std::move(base)) {}
    Result<size_t> ReadAt(uint64_t pos, std::span<uint8_t> out) const override {
      return base_->ReadAt(pos, out);
    }
    Status WriteAt(uint64_t pos, std::span<const uint8_t> data) override {
      fs_->WaitAtGate();
      return base_->WriteAt(pos, data);
    }
    Status Sync() override { return base_->Sync(); }
    Status Truncate(uint64_t size) override { return base_->Truncate(size); }
    Result<uint64_t> Size() const override { return base_->Size(); }
    Result<uint64_t> DataEnd() const override { return base_->DataEnd(); }
    const std::string& path() const override { return base_->path(); }

   private:
    SlowDiskFileSystem* fs_;
    std::unique_ptr<File> base_;
  };

  void WaitAtGate() {
    std::unique_lock<std::mutex> lock(mu_);
    ++blocked_;
    cv_.wait(lock, [this] { return !closed_; });
    --blocked_;
  }

  FileSystem* base_ = FileSystem::Default();
  std::string marker_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
  int blocked_ = 0;
};

}  // namespace daruma::broker::testing
