#include "recovery/load_snapshot_cache.h"

#include <utility>

#include "common/forwarding_file_system.h"
#include "log/log_file_names.h"

namespace daruma {

// Passes everything on, noting what is written: only appends from an empty
// start leave the bytes (`whole_`); anything else (a write elsewhere, a
// truncation, a mapping, a failed write) leaves nothing.
class LoadSnapshotCache::CapturingFile final : public ForwardingFile {
 public:
  CapturingFile(std::unique_ptr<File> base, LoadSnapshotCache* cache, std::string path,
                uint64_t generation, bool starts_empty)
      : ForwardingFile(std::move(base)),
        cache_(cache),
        path_(std::move(path)),
        generation_(generation),
        whole_(starts_empty) {}
  ~CapturingFile() override { cache_->EndWrite(path_, generation_, whole_ ? &written_ : nullptr); }

  Status WriteAt(uint64_t pos, std::span<const uint8_t> data) override {
    Status st = ForwardingFile::WriteAt(pos, data);
    if (!st.ok() || pos != written_.size()) {
      whole_ = false;
    } else if (whole_) {
      written_.insert(written_.end(), data.begin(), data.end());
    }
    return st;
  }
  Status Truncate(uint64_t size) override {
    whole_ = false;
    return ForwardingFile::Truncate(size);
  }
  int fd() const override { return base()->fd(); }
  Result<std::unique_ptr<WritableMappedRegion>> MapForAppend(uint64_t pos, size_t len,
                                                             AppendFaults faults) override {
    whole_ = false;
    return base()->MapForAppend(pos, len, faults);
  }

 private:
  LoadSnapshotCache* cache_;
  const std::string path_;
  const uint64_t generation_;
  bool whole_;
  std::vector<uint8_t> written_;
};

bool LoadSnapshotCache::Keeps(const std::string& path) {
  return HasSuffix(path, kProducerSnapshotFileSuffix);
}

std::optional<std::vector<uint8_t>> LoadSnapshotCache::Get(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = bytes_.find(path);
  if (it == bytes_.end()) return std::nullopt;
  return it->second;
}

Result<std::vector<uint8_t>> LoadSnapshotCache::Read(FileSystem* fs, const std::string& path) {
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation = generation_;
  }
  Result<std::vector<uint8_t>> read = fs->ReadFile(path);
  if (!read.ok()) return read;
  std::lock_guard<std::mutex> lock(mu_);
  if (generation == generation_ && writers_[path] == 0) bytes_[path] = *read;
  return read;
}

void LoadSnapshotCache::Forget(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  ++generation_;
  if (path.empty()) {
    bytes_.clear();
  } else {
    bytes_.erase(path);
  }
}

std::unique_ptr<File> LoadSnapshotCache::Writing(const std::string& path, OpenMode mode,
                                                 std::unique_ptr<File> file) {
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    bytes_.erase(path);
    generation = ++generation_;
    ++writers_[path];
  }
  const bool starts_empty = mode == OpenMode::kTruncate || mode == OpenMode::kCreateExclusive;
  return std::make_unique<CapturingFile>(std::move(file), this, path, generation, starts_empty);
}

void LoadSnapshotCache::EndWrite(const std::string& path, uint64_t generation,
                                 const std::vector<uint8_t>* written) {
  std::lock_guard<std::mutex> lock(mu_);
  const int left = --writers_[path];
  if (left == 0) writers_.erase(path);
  if (written != nullptr && left == 0 && generation == generation_) bytes_[path] = *written;
}

}  // namespace daruma
