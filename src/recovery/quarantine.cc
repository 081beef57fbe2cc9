#include "recovery/quarantine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

namespace daruma {

namespace {
constexpr size_t kCopyChunk = 1 << 20;
}  // namespace

Quarantine::Quarantine(FileSystem* fs, std::string partition_dir, std::string partition,
                       bool enabled, PartitionRecoveryReport* report)
    : fs_(fs),
      partition_dir_(std::move(partition_dir)),
      partition_(std::move(partition)),
      enabled_(enabled),
      report_(report) {}

std::string Quarantine::dir() const {
  return JoinPath(partition_dir_, kQuarantineDirName);
}

Status Quarantine::EnsureDir() {
  if (dir_ready_) return Status::Ok();
  if (!fs_->Exists(dir())) {
    DARUMA_RETURN_IF_ERROR(fs_->CreateDir(dir()));
    DARUMA_RETURN_IF_ERROR(fs_->SyncDir(partition_dir_));
  }
  dir_ready_ = true;
  return Status::Ok();
}

std::string Quarantine::UniqueTarget(const std::string& path, int64_t from) {
  const std::string base = JoinPath(dir(), fmt::format("{}@{}", BaseName(path), from));
  if (!fs_->Exists(base)) return base;
  for (int n = 1;; ++n) {
    std::string candidate = fmt::format("{}.{}", base, n);
    if (!fs_->Exists(candidate)) return candidate;
  }
}

// True when [from, end) of `in` holds only zero bytes, like the unused tail
// of a preallocated segment after a crash: no data, so nothing is copied (a
// 1 GiB segment.bytes would otherwise put 1 GiB of zeros in quarantine).
// Stops reading at the first non-zero byte, so real data costs one chunk.
static Result<bool> AllZeros(const File& in, int64_t from, int64_t end) {
  std::vector<uint8_t> buffer(std::min<size_t>(kCopyChunk, size_t(end - from)));
  for (int64_t pos = from; pos < end;) {
    DARUMA_ASSIGN_OR_RETURN(uint64_t data, in.DataFrom(uint64_t(pos)));
    pos = std::max(pos, int64_t(std::min<uint64_t>(data, uint64_t(end))));  // skip a hole
    if (pos >= end) break;
    const size_t want = std::min<size_t>(buffer.size(), size_t(end - pos));
    DARUMA_ASSIGN_OR_RETURN(size_t n,
                            in.ReadAt(uint64_t(pos), std::span<uint8_t>(buffer.data(), want)));
    if (n == 0) return false;  // shorter than claimed: CopyRange reports it
    // buffer[0] == 0 and buffer[0, n-1) == buffer[1, n): all n bytes are 0.
    if (buffer[0] != 0 || std::memcmp(buffer.data(), buffer.data() + 1, n - 1) != 0) return false;
    pos += int64_t(n);
  }
  return true;
}

Status Quarantine::CopyRange(const std::string& path, int64_t from, int64_t end,
                             const Range& range) {
  if (!enabled_ || end <= from) return Status::Ok();
  DARUMA_RETURN_IF_ERROR(EnsureDir());
  DARUMA_ASSIGN_OR_RETURN(auto in, fs_->Open(path, OpenMode::kRead));
  // Short ranges are copied whatever they hold: a torn header's first bytes
  // are often zeros, and the copy costs nothing.
  constexpr int64_t kMinUncopiedZeros = 4096;
  bool zeros = false;
  if (end - from >= kMinUncopiedZeros) {
    DARUMA_ASSIGN_OR_RETURN(zeros, AllZeros(*in, from, end));
  }
  if (zeros) {
    Range noted = range;
    noted.reason += "; all zero bytes (unused preallocated space), nothing to keep";
    return Record(path, from, end - from, noted, "");
  }
  const std::string target = UniqueTarget(path, from);
  DARUMA_ASSIGN_OR_RETURN(auto out, fs_->Open(target, OpenMode::kCreateExclusive));
  std::vector<uint8_t> buffer(std::min<size_t>(kCopyChunk, size_t(end - from)));
  int64_t copied = 0;
  while (from + copied < end) {
    const size_t want = std::min<size_t>(buffer.size(), size_t(end - from - copied));
    DARUMA_ASSIGN_OR_RETURN(
        size_t n, in->ReadAt(uint64_t(from + copied), std::span<uint8_t>(buffer.data(), want)));
    if (n == 0) {
      return Status::IoError(fmt::format("{}: file ended at {} while quarantining [{}, {})", path,
                                         from + copied, from, end));
    }
    DARUMA_RETURN_IF_ERROR(
        out->WriteAt(uint64_t(copied), std::span<const uint8_t>(buffer.data(), n)));
    copied += int64_t(n);
  }
  DARUMA_RETURN_IF_ERROR(out->Sync());
  DARUMA_RETURN_IF_ERROR(fs_->SyncDir(dir()));
  return Record(path, from, copied, range, target);
}

Status Quarantine::SaveBytes(const std::string& path, std::span<const uint8_t> bytes,
                             const Range& range) {
  if (!enabled_ || bytes.empty()) return Status::Ok();
  DARUMA_RETURN_IF_ERROR(EnsureDir());
  const std::string target = UniqueTarget(path, 0);
  DARUMA_ASSIGN_OR_RETURN(auto out, fs_->Open(target, OpenMode::kCreateExclusive));
  DARUMA_RETURN_IF_ERROR(out->WriteAt(0, bytes));
  DARUMA_RETURN_IF_ERROR(out->Sync());
  DARUMA_RETURN_IF_ERROR(fs_->SyncDir(dir()));
  return Record(path, 0, int64_t(bytes.size()), range, target);
}

Status Quarantine::MoveFile(const std::string& path, const Range& range) {
  if (!enabled_ || !fs_->Exists(path)) return Status::Ok();
  DARUMA_RETURN_IF_ERROR(EnsureDir());
  DARUMA_ASSIGN_OR_RETURN(uint64_t size, fs_->FileSize(path));
  const std::string target = UniqueTarget(path, 0);
  DARUMA_RETURN_IF_ERROR(fs_->Rename(path, target));
  DARUMA_RETURN_IF_ERROR(fs_->SyncDir(dir()));
  DARUMA_RETURN_IF_ERROR(fs_->SyncDir(partition_dir_));
  return Record(path, 0, int64_t(size), range, target);
}

Status Quarantine::Record(const std::string& path, int64_t from, int64_t bytes, const Range& range,
                          const std::string& target) {
  nlohmann::json line = {{"partition", partition_},
                         {"file", BaseName(path)},
                         {"fromPosition", from},
                         {"bytes", bytes},
                         {"kind", DamageKindName(range.kind)},
                         {"reason", range.reason},
                         {"quarantinePath", target}};
  if (target.empty()) line["quarantinePath"] = nullptr;
  if (range.first_offset) line["firstOffset"] = *range.first_offset;
  if (range.last_offset) line["lastOffset"] = *range.last_offset;
  // `reason` may quote bytes of the damaged file: invalid UTF-8 is replaced,
  // not thrown on.
  const std::string text =
      line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const std::string manifest = JoinPath(dir(), kQuarantineManifestName);
  DARUMA_ASSIGN_OR_RETURN(auto file, fs_->Open(manifest, OpenMode::kCreate));
  DARUMA_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  DARUMA_RETURN_IF_ERROR(file->WriteAt(
      size, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
  DARUMA_RETURN_IF_ERROR(file->Sync());
  if (size == 0) DARUMA_RETURN_IF_ERROR(fs_->SyncDir(dir()));
  if (report_ != nullptr) {
    report_->quarantined.push_back(QuarantinedRange{path, from, bytes, range.first_offset,
                                                    range.last_offset, range.kind, range.reason,
                                                    target});
  }
  return Status::Ok();
}

}  // namespace daruma
