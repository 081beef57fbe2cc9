#include "recovery/salvage_apply.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "log/leader_epoch_file_cache.h"
#include "log/log_file_names.h"

namespace daruma {
namespace {

constexpr size_t kSalvageCopyChunk = size_t(1) << 20;

std::string Reason(const DroppedRange& r) {
  std::string gap;
  if (!r.gap_last) {
    gap = fmt::format("nothing is kept after it; the log ends at offset {}", r.gap_first);
  } else if (*r.gap_last < r.gap_first) {
    gap = "no offset is lost";
  } else {
    gap = fmt::format("offsets {}..{} are a gap now", r.gap_first, *r.gap_last);
  }
  return fmt::format("{}; repair --salvage keeps the valid batches around it; {}", r.what, gap);
}

Status RemoveIfPresent(FileSystem* fs, const std::string& path) {
  return fs->Exists(path) ? fs->Remove(path) : Status::Ok();
}

// Writes the kept runs of `seg` to `to` and fsyncs it.
Status WriteKept(FileSystem* fs, const SegmentSalvage& seg, const std::string& to) {
  DARUMA_ASSIGN_OR_RETURN(auto in, fs->Open(seg.path, OpenMode::kRead));
  DARUMA_ASSIGN_OR_RETURN(auto out, fs->Open(to, OpenMode::kCreateExclusive));
  std::vector<uint8_t> buffer;
  uint64_t written = 0;
  for (const KeptRun& run : seg.kept) {
    for (int64_t pos = run.from; pos < run.to;) {
      buffer.resize(std::min<size_t>(kSalvageCopyChunk, size_t(run.to - pos)));
      DARUMA_ASSIGN_OR_RETURN(size_t n, in->ReadAt(uint64_t(pos), buffer));
      if (n == 0) {
        return Status::IoError(fmt::format("{}: file ended at byte {} while copying [{}, {})",
                                           seg.path, pos, run.from, run.to));
      }
      DARUMA_RETURN_IF_ERROR(out->WriteAt(written, std::span<const uint8_t>(buffer.data(), n)));
      written += n;
      pos += int64_t(n);
    }
  }
  return out->Sync();
}

Status ApplySegment(const SegmentSalvage& seg, FileSystem* fs, Quarantine* quarantine) {
  for (const DroppedRange& r : seg.dropped) {
    DARUMA_RETURN_IF_ERROR(quarantine->CopyRange(seg.path, r.from, r.to,
                                                 {r.kind, r.gap_first, r.gap_last, Reason(r)}));
  }
  const std::string dir = ParentDir(seg.path);
  if (seg.drop_whole) {
    DARUMA_RETURN_IF_ERROR(fs->Remove(seg.path));
  } else if (seg.dropped.size() == 1 && seg.dropped.front().to == seg.size) {
    DARUMA_ASSIGN_OR_RETURN(auto file, fs->Open(seg.path, OpenMode::kReadWrite));
    DARUMA_RETURN_IF_ERROR(file->Truncate(uint64_t(seg.dropped.front().from)));
    DARUMA_RETURN_IF_ERROR(file->Sync());
  } else {
    const std::string cleaned = seg.path + std::string(kCleanedFileSuffix);
    // A `.cleaned` left by an interrupted Kafka cleaner: kept, as recovery
    // would keep it (MoveFile does nothing when there is none).
    DARUMA_RETURN_IF_ERROR(quarantine->MoveFile(
        cleaned, {DamageKind::kLeftoverTempFile, std::nullopt, std::nullopt,
                  "leftover .cleaned file, set aside before repair --salvage rewrote the "
                  "segment under that name"}));
    DARUMA_RETURN_IF_ERROR(WriteKept(fs, seg, cleaned));
    // The `.cleaned` name must be durable before the rename: the undo of a
    // rename takes "`.log` there, `.cleaned` not" to mean the rename
    // happened, which after a power loss that lost an unsynced `.cleaned`
    // entry would move the original `.log` away (the crash test finds it).
    DARUMA_RETURN_IF_ERROR(fs->SyncDir(dir));
    DARUMA_RETURN_IF_ERROR(fs->Rename(cleaned, seg.path));
  }
  for (const std::string& index :
       {OffsetIndexFileName(dir, seg.base_offset), TimeIndexFileName(dir, seg.base_offset),
        TxnIndexFileName(dir, seg.base_offset)}) {
    DARUMA_RETURN_IF_ERROR(RemoveIfPresent(fs, index));
  }
  return fs->SyncDir(dir);
}

}  // namespace

Status ApplySalvage(const PartitionSalvage& plan, FileSystem* fs, Quarantine* quarantine) {
  if (!plan.changed()) return Status::Ok();
  for (const SegmentSalvage& seg : plan.segments) {
    if (seg.changed()) DARUMA_RETURN_IF_ERROR(ApplySegment(seg, fs, quarantine));
  }
  return quarantine->MoveFile(
      JoinPath(plan.dir, kLeaderEpochCheckpointFileName),
      {DamageKind::kCorruptCheckpoint, std::nullopt, std::nullopt,
       "leader-epoch-checkpoint set aside by repair --salvage, which rebuilds it from the kept "
       "batches"});
}

}  // namespace daruma
