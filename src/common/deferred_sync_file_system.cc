#include "common/deferred_sync_file_system.h"

namespace daruma {

namespace {

class DeferredSyncFile final : public ForwardingFile {
 public:
  DeferredSyncFile(const DeferredSyncFileSystem* owner, std::unique_ptr<File> base)
      : ForwardingFile(std::move(base)), owner_(owner) {}

  Status Sync() override { return owner_->deferring() ? Status::Ok() : base()->Sync(); }
  int fd() const override { return base()->fd(); }
  Result<std::unique_ptr<WritableMappedRegion>> MapForAppend(uint64_t pos, size_t len,
                                                             AppendFaults faults) override {
    return base()->MapForAppend(pos, len, faults);
  }

 private:
  const DeferredSyncFileSystem* owner_;
};

}  // namespace

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
