#include "recovery/metadata_log_check.h"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "log/log_file_names.h"
#include "log/segment_recovery_scan.h"

namespace daruma {

MetadataLogCheck CheckMetadataLog(FileSystem* fs, const std::string& dir,
                                  int32_t index_interval_bytes) {
  MetadataLogCheck out;
  constexpr char kAction[] =
      "Daruma never changes the metadata log: Kafka truncates it at its next start, or "
      "restore this controller's replica from the others";
  Result<std::vector<DirEntry>> entries = fs->ListDir(dir);
  if (!entries.ok()) {
    out.problems.push_back(
        {DamageKind::kIoError, dir, -1, std::nullopt, entries.status().message(), kAction, true});
    return out;
  }
  std::map<int64_t, std::string> logs;  // base offset -> path
  for (const DirEntry& e : *entries) {
    if (!e.is_regular || !HasSuffix(e.name, kLogFileSuffix)) continue;
    if (Result<int64_t> base = OffsetFromFileName(e.name); base.ok()) {
      logs.emplace(*base, JoinPath(dir, e.name));
    }
  }
  for (auto it = logs.begin(); it != logs.end(); ++it) {
    const auto& [base, path] = *it;
    const auto next = std::next(it);
    Result<std::unique_ptr<File>> file = fs->Open(path, OpenMode::kRead);
    Result<uint64_t> size = file.ok() ? (*file)->Size() : Result<uint64_t>(file.status());
    if (!size.ok()) {
      out.problems.push_back(
          {DamageKind::kIoError, path, -1, std::nullopt, size.status().message(), kAction, true});
      continue;
    }
    const SegmentRecoveryScan scan = ScanSegmentForRecovery(
        file->get(), path, base, int64_t(*size), index_interval_bytes,
        next == logs.end() ? std::nullopt : std::optional<int64_t>(next->first));
    ++out.segments;
    out.bytes += int64_t(*size);
    if (scan.valid_bytes < int64_t(*size) || !scan.error.ok()) {
      const DamageKind kind = scan.stop_kind.value_or(
          DamageKindOf(scan.error)
              .value_or(scan.error.IsIoError() ? DamageKind::kIoError : DamageKind::kTornTail));
      out.problems.push_back(
          {kind, path, scan.valid_bytes, scan.next_offset,
           fmt::format("KRaft metadata log: {} ({} bytes after the last valid batch)",
                       scan.stop_reason.empty() ? scan.error.ToString() : scan.stop_reason,
                       int64_t(*size) - scan.valid_bytes),
           kAction, true});
    }
  }
  return out;
}

}  // namespace daruma
