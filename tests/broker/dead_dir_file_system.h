// DeadDirFileSystem: the POSIX file system, except that every call on a path
// at or below one of the dead dirs fails with kIoError (EIO) and Exists is
// false there: a log dir whose disk died. Unlike FaultInjectionFileSystem it
// models nothing in memory, so it runs on real dirs. Files opened before a
// dir is added keep working.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/forwarding_file_system.h"

namespace daruma::broker::testing {

class DeadDirFileSystem final : public ForwardingFileSystem {
 public:
  explicit DeadDirFileSystem(std::vector<std::string> dead = {}) : dead_(std::move(dead)) {}

  void Kill(const std::string& dir) {
    std::lock_guard<std::mutex> lock(mu_);
    dead_.push_back(dir);
  }

  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    DARUMA_RETURN_IF_ERROR(Check(path));
    return ForwardingFileSystem::Open(path, mode);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    DARUMA_RETURN_IF_ERROR(Check(from));
    DARUMA_RETURN_IF_ERROR(Check(to));
    return ForwardingFileSystem::Rename(from, to);
  }
  Status Remove(const std::string& path) override {
    DARUMA_RETURN_IF_ERROR(Check(path));
    return ForwardingFileSystem::Remove(path);
  }
  Status RemoveAll(const std::string& path) override {
    DARUMA_RETURN_IF_ERROR(Check(path));
    return ForwardingFileSystem::RemoveAll(path);
  }
  Status CreateDir(const std::string& path) override {
    DARUMA_RETURN_IF_ERROR(Check(path));
    return ForwardingFileSystem::CreateDir(path);
  }
  Status SyncDir(const std::string& path) override {
    DARUMA_RETURN_IF_ERROR(Check(path));
    return ForwardingFileSystem::SyncDir(path);
  }
  Status SyncFileSystem(const std::string& path) override {
    DARUMA_RETURN_IF_ERROR(Check(path));
    return ForwardingFileSystem::SyncFileSystem(path);
  }
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    DARUMA_RETURN_IF_ERROR(Check(path));
    return ForwardingFileSystem::ListDir(path);
  }
  bool Exists(const std::string& path) override {
    return Check(path).ok() && ForwardingFileSystem::Exists(path);
  }
  Result<uint64_t> FileSize(const std::string& path) override {
    DARUMA_RETURN_IF_ERROR(Check(path));
    return ForwardingFileSystem::FileSize(path);
  }
  Result<int64_t> ModifiedTimeMs(const std::string& path) override {
    DARUMA_RETURN_IF_ERROR(Check(path));
    return ForwardingFileSystem::ModifiedTimeMs(path);
  }
  Status SetModifiedTimeMs(const std::string& path, int64_t ms) override {
    DARUMA_RETURN_IF_ERROR(Check(path));
    return ForwardingFileSystem::SetModifiedTimeMs(path, ms);
  }

 private:
  Status Check(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& dir : dead_) {
      if (path == dir || (path.starts_with(dir) && path[dir.size()] == '/')) {
        return Status::IoError("injected EIO on " + path);
      }
    }
    return Status::Ok();
  }

  std::mutex mu_;
  std::vector<std::string> dead_;
};

}  // namespace daruma::broker::testing
