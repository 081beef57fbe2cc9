#include "common/deferred_sync_file_system.h"

namespace daruma {

namespace {

class DeferredSyncFile final : public ForwardingFile {
 public:
  DeferredSyncFile(const DeferredSyncFileSystem* owner, std::unique_ptr<File> base)
      : ForwardingFile(std::move(base)), owner_(owner) {}

  Status Sync() override {
    if (owner_->deferring()) return Status::Ok();
    DARUMA_RETURN_IF_ERROR(owner_->PassSyncBarrier());
    return base()->Sync();
  }
  int fd() const override { return base()->fd(); }
  Result<std::unique_ptr<WritableMappedRegion>> MapForAppend(uint64_t pos, size_t len,
                                                             AppendFaults faults) override {
    return base()->MapForAppend(pos, len, faults);
  }

 private:
  const DeferredSyncFileSystem* owner_;
};

}  // namespace

Status DeferredSyncFileSystem::SyncDir(const std::string& path) {
  if (deferring()) return Status::Ok();
  DARUMA_RETURN_IF_ERROR(PassSyncBarrier());
  return base()->SyncDir(path);
}

Status DeferredSyncFileSystem::SyncFile(const std::string& path) {
  if (deferring()) return Status::Ok();
  DARUMA_RETURN_IF_ERROR(PassSyncBarrier());
  return base()->SyncFile(path);
}

void DeferredSyncFileSystem::SetSyncBarrier(std::function<Status()> barrier) {
  std::lock_guard<std::mutex> lock(barrier_mu_);
  barrier_ = std::move(barrier);
  barrier_set_.store(barrier_ != nullptr, std::memory_order_release);
}

// One atomic load per sync once the barrier passed.
Status DeferredSyncFileSystem::PassSyncBarrier() const {
  if (!barrier_set_.load(std::memory_order_acquire)) return Status::Ok();
  std::lock_guard<std::mutex> lock(barrier_mu_);
  if (!barrier_) return Status::Ok();
  DARUMA_RETURN_IF_ERROR(barrier_());
  barrier_ = nullptr;
  barrier_set_.store(false, std::memory_order_release);
  return Status::Ok();
}

Result<std::unique_ptr<File>> DeferredSyncFileSystem::Open(const std::string& path, OpenMode mode) {
  DARUMA_ASSIGN_OR_RETURN(auto file, base()->Open(path, mode));
  return std::unique_ptr<File>(new DeferredSyncFile(this, std::move(file)));
}

Result<std::unique_ptr<File>> DeferredSyncFileSystem::OpenWithSize(const std::string& path,
                                                                   OpenMode mode, uint64_t* size) {
  DARUMA_ASSIGN_OR_RETURN(auto file, base()->OpenWithSize(path, mode, size));
  return std::unique_ptr<File>(new DeferredSyncFile(this, std::move(file)));
}

}  // namespace daruma
