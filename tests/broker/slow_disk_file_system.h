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

#include "common/forwarding_file_system.h"

namespace daruma::broker::testing {

class SlowDiskFileSystem final : public ForwardingFileSystem {
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
    DARUMA_ASSIGN_OR_RETURN(std::unique_ptr<File> file, base()->Open(path, mode));
    if (path.find(marker_) == std::string::npos) return file;
    return std::unique_ptr<File>(std::make_unique<GatedFile>(this, std::move(file)));
  }

 private:
  class GatedFile final : public ForwardingFile {
   public:
    GatedFile(SlowDiskFileSystem* fs, std::unique_ptr<File> base)
        : ForwardingFile(std::move(base)), fs_(fs) {}
    Status WriteAt(uint64_t pos, std::span<const uint8_t> data) override {
      fs_->WaitAtGate();
      return ForwardingFile::WriteAt(pos, data);
    }

   private:
    SlowDiskFileSystem* fs_;
  };

  void WaitAtGate() {
    std::unique_lock<std::mutex> lock(mu_);
    ++blocked_;
    cv_.wait(lock, [this] { return !closed_; });
    --blocked_;
  }

  std::string marker_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
  int blocked_ = 0;
};

}  // namespace daruma::broker::testing
