#include "recovery/load_undo_pack.h"

#include <fmt/format.h>

#include <map>
#include <utility>

namespace daruma {

namespace {

// The partition dir a record belongs to.
std::string PartitionOf(const UndoRecord& r) {
  return r.kind == UndoRecord::Kind::kCreateAny ? r.path : ParentDir(r.path);
}

// The pack's records by partition dir, in the order the dirs first appear.
Result<std::vector<std::pair<std::string, std::vector<UndoRecord>>>> ReadPack(
    FileSystem* fs, const std::string& log_dir, bool* found) {
  std::vector<std::pair<std::string, std::vector<UndoRecord>>> out;
  const std::string path = LoadUndoPackPath(log_dir);
  Result<std::vector<uint8_t>> bytes = fs->ReadFile(path);
  if (!bytes.ok()) {
    *found = false;
    if (bytes.status().IsNotFound()) return out;
    return bytes.status();
  }
  *found = true;
  std::map<std::string, size_t> index;
  for (UndoRecord& r : DecodeUndoRecords(*bytes)) {
    const std::string dir = PartitionOf(r);
    auto [it, inserted] = index.emplace(dir, out.size());
    if (inserted) out.emplace_back(dir, std::vector<UndoRecord>());
    out[it->second].second.push_back(std::move(r));
  }
  return out;
}

}  // namespace

Result<std::shared_ptr<LoadUndoPackWriter>> LoadUndoPackWriter::Create(FileSystem* fs,
                                                                       const std::string& log_dir) {
  const std::string path = LoadUndoPackPath(log_dir);
  DARUMA_ASSIGN_OR_RETURN(auto file, fs->Open(path, OpenMode::kTruncate));
  return std::shared_ptr<LoadUndoPackWriter>(new LoadUndoPackWriter(path, std::move(file)));
}

Result<uint64_t> LoadUndoPackWriter::Append(std::span<const uint8_t> bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t at = size_;
  DARUMA_RETURN_IF_ERROR(file_->WriteAt(at, bytes).WithContext(path_));
  size_ += bytes.size();
  return at;
}

Status LoadUndoPackWriter::Read(uint64_t offset, std::span<uint8_t> out) const {
  std::lock_guard<std::mutex> lock(mu_);
  DARUMA_ASSIGN_OR_RETURN(size_t n, file_->ReadAt(offset, out));
  if (n != out.size()) {
    return Status::IoError(fmt::format("{}: short read at position {}: expected {} bytes, got {}",
                                       path_, offset, out.size(), n));
  }
  return Status::Ok();
}

Result<std::vector<UndoRecord>> PackedUndoRecordsOf(FileSystem* fs, const std::string& log_dir,
                                                    const std::string& partition_dir) {
  bool found = false;
  DARUMA_ASSIGN_OR_RETURN(auto sections, ReadPack(fs, log_dir, &found));
  for (auto& [dir, records] : sections) {
    if (dir == partition_dir) return std::move(records);
  }
  return std::vector<UndoRecord>();
}

Result<std::vector<std::string>> RollBackLoadUndoPack(FileSystem* fs, const std::string& log_dir) {
  bool found = false;
  DARUMA_ASSIGN_OR_RETURN(auto sections, ReadPack(fs, log_dir, &found));
  std::vector<std::string> rolled;
  if (!found) return rolled;
  for (const auto& [dir, records] : sections) {
    // A partition dir that is gone (deleted since) has nothing to restore.
    if (!fs->Exists(dir)) continue;
    DARUMA_RETURN_IF_ERROR(RollBackUndoDir(fs, dir, records).status());
    rolled.push_back(dir);
  }
  // Only once every partition is back: a crash before this removal is
  // durable rolls them back again, which changes nothing.
  DARUMA_RETURN_IF_ERROR(fs->Remove(LoadUndoPackPath(log_dir)));
  DARUMA_RETURN_IF_ERROR(fs->SyncDir(log_dir));
  return rolled;
}

}  // namespace daruma
