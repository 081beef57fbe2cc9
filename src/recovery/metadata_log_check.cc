#include "recovery/metadata_log_check.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <string_view>

#include "log/log_file_names.h"
#include "log/segment_recovery_scan.h"
#include "recovery/json_document.h"
#include "recovery/kraft_topic_configs.h"

namespace daruma {
namespace {

constexpr char kQuorumStateFileName[] = "quorum-state";

// Why Kafka's FileQuorumStateStore would refuse `text`, "" if it would not:
// its first line is one JSON object with a data_version of 0 or 1 and the
// fields QuorumStateData makes mandatory in that version, of their types.
std::string QuorumStateFault(const std::string& path, std::string_view text) {
  const std::string_view line = text.substr(0, text.find('\n'));
  if (line.empty()) return "the file is empty (Kafka: \"File ended prematurely\")";
  Result<nlohmann::json> doc = ParseJsonDocument(path, line);
  if (!doc.ok()) return doc.status().message();
  if (!doc->is_object()) return "its first line is not a JSON object";
  auto version = doc->find("data_version");
  if (version == doc->end() || !version->is_number_integer()) return "no data_version field";
  const int64_t v = version->get<int64_t>();
  if (v < 0 || v > 1) return fmt::format("data_version {} is not 0 or 1", v);
  auto has = [&](const char* name, auto is_type) {
    auto it = doc->find(name);
    return it != doc->end() && is_type(*it);
  };
  auto integer = [](const nlohmann::json& j) { return j.is_number_integer(); };
  auto string = [](const nlohmann::json& j) { return j.is_string(); };
  auto voters = [](const nlohmann::json& j) { return j.is_array() || j.is_null(); };
  for (const char* name : {"leaderId", "leaderEpoch", "votedId"}) {
    if (!has(name, integer)) return fmt::format("no integer {} (mandatory in version {})", name, v);
  }
  if (v == 0 && (!has("clusterId", string) || !has("appliedOffset", integer) ||
                 !has("currentVoters", voters))) {
    return "version 0 needs clusterId, appliedOffset and currentVoters";
  }
  if (v == 1 && !has("votedDirectoryId", string)) return "version 1 needs votedDirectoryId";
  return "";
}

// Kafka's raft client reads `quorum-state` before anything else at start,
// and stops when it cannot; a missing file is a new replica's, and fine.
void CheckQuorumState(FileSystem* fs, const std::string& path, MetadataLogCheck* out) {
  if (!fs->Exists(path)) return;
  constexpr char kAction[] =
      "restore it from a backup, or stop this node and let the quorum's other voters bring it "
      "back; Daruma never changes it";
  Result<std::vector<uint8_t>> bytes = fs->ReadFile(path);
  if (!bytes.ok()) {
    out->problems.push_back(
        {DamageKind::kIoError, path, -1, std::nullopt, bytes.status().message(), kAction, true});
    return;
  }
  const std::string fault = QuorumStateFault(
      path, std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  if (fault.empty()) return;
  out->problems.push_back(
      {DamageKind::kCorruptMetadata, path, -1, std::nullopt,
       fmt::format("KRaft quorum-state: {}; Kafka does not start with it", fault), kAction, true});
}

}  // namespace

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
  // What a Kafka broker reads at start besides the segments: the newest
  // snapshot, and the replay must reach the log's end.
  const bool segments_damaged = !out.problems.empty();
  CheckQuorumState(fs, JoinPath(dir, kQuorumStateFileName), &out);
  Result<KraftTopicConfigs> image = ReadKraftTopicConfigs(fs, dir);
  if (!image.ok()) {
    out.problems.push_back(
        {DamageKind::kIoError, dir, -1, std::nullopt, image.status().message(), kAction, true});
    return out;
  }
  out.snapshot = image->snapshot;
  for (size_t i = 0; i < image->damaged_snapshots.size(); ++i) {
    const KraftTopicConfigs::DamagedSnapshot& d = image->damaged_snapshots[i];
    out.problems.push_back(
        {DamageKind::kCorruptSnapshot, d.path, -1, std::nullopt,
         fmt::format(
             "KRaft metadata snapshot: {}{}", d.why,
             i == 0 ? " (the newest: Kafka loads it at start and stops at the damage)" : ""),
         kAction, true});
  }
  // Damage a segment scan or a snapshot already names is not told twice.
  if (!image->complete && !segments_damaged && image->damaged_snapshots.empty()) {
    out.problems.push_back({DamageKind::kCorruptMetadata, dir, -1, std::nullopt,
                            fmt::format("KRaft metadata log: {}", image->incomplete_reason),
                            kAction, true});
  }
  return out;
}

}  // namespace daruma
