#include "recovery/clean_shutdown_marker_rule.h"

#include <fmt/format.h>

#include "common/bytes.h"
#include "common/crc32c.h"
#include "log/log_file_names.h"
#include "recovery/progress_reporter.h"

namespace daruma {
namespace {

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string Count(int64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

}  // namespace

std::vector<std::string> MarkerChanges(const PartitionRecoveryReport& p, bool full_rescan) {
  std::vector<std::string> out;
  if (p.left_unchanged) return out;
  if (p.truncated_bytes > 0) out.push_back(HumanBytes(p.truncated_bytes) + " truncated");
  int64_t quarantined = 0;
  for (const auto& q : p.quarantined) quarantined += IsLeftoverFile(q.file) ? 0 : 1;
  if (quarantined > 0) out.push_back(Count(quarantined, "range quarantined", "ranges quarantined"));
  int64_t removed = 0;
  for (const auto& f : p.deleted_files) removed += IsRoutineRemoval(f) ? 0 : 1;
  if (removed > 0) out.push_back(Count(removed, "file removed", "files removed"));
  if (!full_rescan && p.recovered_segments > 0) {
    out.push_back(Count(p.recovered_segments, "segment recovered", "segments recovered"));
  } else if (!full_rescan && !p.rebuilt_indexes.empty()) {
    out.push_back(Count(int64_t(p.rebuilt_indexes.size()), "index rebuilt", "indexes rebuilt"));
  }
  return out;
}

bool IsLeftoverFile(const std::string& path) {
  return HasSuffix(path, kDeletedFileSuffix) || HasSuffix(path, kCleanedFileSuffix) ||
         HasSuffix(path, kSwapFileSuffix);
}

bool IsRoutineRemoval(const std::string& path) {
  return IsLeftoverFile(path) || HasSuffix(path, kProducerSnapshotFileSuffix);
}

MarkerDecision DecideMarker(const MarkerRuleInput& in) {
  MarkerDecision d;
  d.epoch = in.unclean_epoch;
  if (!in.had_marker) {
    d.why = in.partitions.empty()
                ? "empty log dir without a marker on input: no broker epoch to keep"
                : "unclean shutdown (no .kafka_cleanshutdown on input): no broker epoch to keep";
    return d;
  }
  std::vector<std::string> changes;
  int64_t partitions_changed = 0;
  for (const PartitionRecoveryReport* p : in.partitions) {
    std::vector<std::string> c = MarkerChanges(*p, in.full_rescan);
    if (c.empty()) continue;
    ++partitions_changed;
    if (changes.empty()) changes = {fmt::format("{}-{}: {}", p->topic, p->partition, Join(c))};
  }
  if (partitions_changed > 1) {
    changes.push_back(fmt::format("{} more partitions", partitions_changed - 1));
  }
  if (in.index_files_changed > 0) {
    changes.push_back(Count(in.index_files_changed, "index file rewritten with other bytes",
                            "index files rewritten with other bytes"));
  }
  if (!changes.empty()) {
    d.why = "clean shutdown, but recovery changed the dir (" + Join(changes) +
            "): no broker epoch, the next start is not a clean one for Kafka";
    return d;
  }
  const char* what = in.full_rescan
                         ? "clean shutdown; --full rescanned every segment and changed nothing"
                         : "clean shutdown and nothing changed";
  if (!in.epoch_in) {
    d.why = std::string(what) + ", but the input marker carried no broker epoch (Kafka < 3.7)";
    return d;
  }
  d.epoch = *in.epoch_in;
  d.kept = true;
  d.why = std::string(what) + ": broker epoch kept";
  return d;
}

std::map<std::string, uint32_t> IndexFileDigests(FileSystem* fs, const std::string& partition_dir) {
  std::map<std::string, uint32_t> out;
  auto entries = fs->ListDir(partition_dir);
  if (!entries.ok()) return out;
  for (const DirEntry& e : *entries) {
    if (!e.is_regular || !IsIndexFileName(e.name)) continue;
    const std::string path = JoinPath(partition_dir, e.name);
    auto bytes = fs->ReadFile(path);
    if (bytes.ok()) out[path] = Crc32c(bytes->data(), bytes->size());
  }
  return out;
}

int64_t CountChangedFiles(const std::map<std::string, uint32_t>& before,
                          const std::map<std::string, uint32_t>& after) {
  int64_t changed = 0;
  for (const auto& [path, crc] : before) {
    auto it = after.find(path);
    changed += it == after.end() || it->second != crc ? 1 : 0;
  }
  for (const auto& [path, crc] : after) changed += before.count(path) == 0 ? 1 : 0;
  return changed;
}

}  // namespace daruma
